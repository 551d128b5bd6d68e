/*
 * wire.h - raw protocol frames over TCP for the tests that talk to a
 * blockd without libsdfs: well-formed requests with chosen fields, and
 * deliberately malformed bytes. Blocking sockets, every wait bounded.
 */
#ifndef SDFS_TESTS_CLUSTER_WIRE_H
#define SDFS_TESTS_CLUSTER_WIRE_H
#include <stddef.h>
#include <stdint.h>

#include "common/sdfs_proto.h"

/* Connect to "host:port"; returns a blocking fd (fails the test if not). */
int wire_connect(const char *addr);
/* The local "ip:port" of @fd, as blockd logs it (peer=...). */
void wire_local_addr(int fd, char *buf, size_t len);

/* Send all of @buf; 0 or -errno (the peer may have closed already). */
int wire_send(int fd, const void *buf, size_t len);
/* Encode @h (magic, versions, checksums filled) + @payload and send. */
int wire_send_req(int fd, const struct sdfs_hdr *h, const void *payload);

/* Recompute hdr_csum of 64 wire bytes after editing them. */
void wire_fix_hdr_csum(uint8_t wire[SDFS_HDR_SIZE]);

/* Receive one reply header (decoded) within @timeout_ms; 0 or -errno. */
int wire_recv_hdr(int fd, struct sdfs_hdr *h, int timeout_ms);
/* Receive and drop @len payload bytes; 0 or -errno. */
int wire_skip(int fd, size_t len, int timeout_ms);
/* Receive exactly @len payload bytes into @buf; 0 or -errno. */
int wire_recv(int fd, void *buf, size_t len, int timeout_ms);

/*
 * Wait until the peer closes @fd (read returns 0 or ECONNRESET),
 * discarding whatever arrives first. 0 if closed, -ETIMEDOUT if still
 * open at the deadline, else -errno.
 */
int wire_wait_closed(int fd, int timeout_ms);
#endif
