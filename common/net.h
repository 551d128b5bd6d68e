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
#include <sys/uio.h>
#include <time.h>

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
/* @clock's time @ms from now, as pthread_cond_timedwait takes it (the
 * condition's clock: CLOCK_REALTIME by default). */
void net_time_in(clockid_t clock, int64_t ms, struct timespec *ts);

/*
 * Full reads and writes on a socket @fd, blocking or not: all @len
 * bytes, through EINTR and short transfers, waiting in poll() while the
 * socket would block, until @deadline_ms (net_now_ms() time; 0: none).
 * 0, or -ETIMEDOUT (the deadline came first), -ECONNRESET (a read met
 * the peer's close before the last byte), -errno (a write to a closed
 * peer: -EPIPE, never SIGPIPE). After an error an unknown part has
 * moved: the connection is good for nothing but close().
 */
int net_read_full(int fd, void *buf, size_t len, int64_t deadline_ms);
int net_write_full(int fd, const void *buf, size_t len, int64_t deadline_ms);
/* net_write_full of @cnt buffers, gathered (one sendmsg a try); @iov
 * is used up: changed as it goes. */
int net_writev_full(int fd, struct iovec *iov, int cnt, int64_t deadline_ms);

/*
 * Wait until @fd is ready for @events (POLLIN, POLLOUT), at most until
 * @deadline_ms (0: none) and, with @slice_ms >= 0, at most that long.
 * -ETIMEDOUT if the deadline has passed already; else 0 once poll()
 * returns (ready, an error the next I/O tells, the slice over, a
 * signal), or -errno if poll() failed.
 */
int net_poll(int fd, short events, int64_t deadline_ms, int slice_ms);

/*
 * The loop of the full reads and writes with the waiting left to the
 * caller, for one that must notice something else meanwhile (a deposed
 * mds, a stop): all of @iov (@cnt buffers; used up as it goes) read
 * (@writing 0) or written. When @fd would block, @wait(@arg, @fd,
 * @events, @done) runs, @done the bytes moved so far: 0 to try again
 * (net_poll's answers), or a -errno that net_io_full returns. Errors as
 * net_read_full's.
 */
typedef int (*net_wait_fn)(void *arg, int fd, short events, size_t done);
int net_io_full(int fd, struct iovec *iov, int cnt, int writing, net_wait_fn wait,
		void *arg);
#endif
