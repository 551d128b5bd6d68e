/*
 * wire.h - raw protocol frames over TCP for the tests that talk to a
 * blockd without libsdfs: well-formed requests with chosen fields, and
 * deliberately malformed bytes. Blocking sockets, every wait bounded.
 *
 * Two modes: unauthenticated (wire_send_req and friends: what a peer
 * without a key sends, or a cluster formatted with auth none takes),
 * and authenticated (wire_auth, then the *_auth calls: tagged frames of
 * a session, common/auth.h), whose raw bytes a test may replay or
 * alter (wire_frame_auth).
 */
#ifndef SDFS_TESTS_CLUSTER_WIRE_H
#define SDFS_TESTS_CLUSTER_WIRE_H
#include <stddef.h>
#include <stdint.h>

#include "common/auth.h"
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

/* ---- authenticated mode ---- */
/* The handshake as key @name with @key: 0 with @s on, or -errno with
 * the reason in @err (-EACCES: refused). */
int wire_auth(int fd, const char *name, const uint8_t key[AUTH_KEY_BYTES],
	      struct auth_sess *s, char *err, size_t errlen);
/* The whole frame of @h + @payload tagged in @s (counted: it is the
 * next frame of the session) into @out (SDFS_HDR_SIZE + payload_len +
 * AUTH_TAG_BYTES bytes); returns its length. */
size_t wire_frame_auth(struct auth_sess *s, const struct sdfs_hdr *h,
		       const void *payload, uint8_t *out);
/* wire_frame_auth, then send it. 0 or -errno. */
int wire_send_req_auth(int fd, struct auth_sess *s, const struct sdfs_hdr *h,
		       const void *payload);
/* One reply in @s: header into @h, payload into @buf (at most @cap
 * bytes, else -EMSGSIZE), tag checked (-EBADMSG). 0 or -errno. */
int wire_recv_reply_auth(int fd, struct auth_sess *s, struct sdfs_hdr *h,
			 void *buf, size_t cap, int timeout_ms);
/* Recompute payload_csum and hdr_csum of a frame (@wire: header, then
 * the payload) after editing its payload. */
void wire_fix_csums(uint8_t *wire);

/* ---- a connection as a config's key ----
 * For tests whose point is not the handshake: frames to a daemon of the
 * test's cluster, authenticated as the key of the keyring the config
 * @conf names (dev up's DIR/sdfs.conf names its admin keyring,
 * DIR/keyring: client.admin), or unauthenticated if it names none (a
 * cluster formatted --auth none). */
struct wire_conn {
	int fd;
	int auth;               /* 1: frames tagged in s */
	struct auth_sess s;
};
/* Connect to @addr, and do the handshake if @conf names a keyring
 * (fails the test if refused). */
void wire_conn_open(struct wire_conn *c, const char *addr, const char *conf);
/* Send @h + @payload (tagged when authenticated). 0 or -errno. */
int wire_conn_send(struct wire_conn *c, const struct sdfs_hdr *h, const void *payload);
/* One reply: header into @h, payload into @buf (at most @cap bytes,
 * else -EMSGSIZE; tag checked when authenticated). 0 or -errno. */
int wire_conn_recv(struct wire_conn *c, struct sdfs_hdr *h, void *buf, size_t cap,
		   int timeout_ms);
void wire_conn_close(struct wire_conn *c);      /* safe twice */
#endif
