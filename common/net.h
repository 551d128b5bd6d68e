/*
 * net.h - TCP sockets: listen, connect with a deadline, full reads and
 * writes with a deadline, "host:port" parsing.
 *
 * Blocking helpers for clients (libclient, tools); daemons use the
 * event loop with non-blocking sockets instead. Thread-safe.
 */
#ifndef SDFS_COMMON_NET_H
#define SDFS_COMMON_NET_H
#include <stddef.h>
#include <stdint.h>

/* Parse "host:port" (IPv4 literal or name). -EINVAL on bad input. */
int net_parse_addr(const char *s, char *host, size_t hostlen, uint16_t *port);

/* Listening socket bound to @host:@port (port 0: any; *@bound_port
 * tells which). Non-blocking, SO_REUSEADDR. Returns fd or -errno. */
int net_listen(const char *host, uint16_t port, uint16_t *bound_port);

/* Connect within @timeout_ms; returns a non-blocking fd, tuned,
 * or -ETIMEDOUT / -ECONNREFUSED / -errno. */
int net_connect(const char *host, uint16_t port, int timeout_ms);

int net_set_nonblock(int fd, int on);
void net_tune(int fd);  /* TCP_NODELAY and large socket buffers */

/* Is an idle pooled connection unusable: the peer closed it (a daemon's
 * idle_timeout_ms), it failed, or it holds bytes nobody asked for?
 * Does not block. 1: close it and take another; 0: use it. */
int net_idle_dead(int fd);

/* Monotonic milliseconds, for deadlines. */
int64_t net_now_ms(void);
#endif
