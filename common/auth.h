/*
 * auth.h - mutual authentication of a connection and a MAC on every
 * frame after it (docs/protocol.md "Authentication", docs/security.md).
 *
 * Handshake, in frames of the normal framing (sdfs_proto.h 2.0), untagged:
 *   client: AUTH_HELLO   payload nonce_c[32], offer[1], name[1..63]
 *   server: reply        payload nonce_s[32], alg[1]    (the challenge)
 *   client: AUTH_PROOF   payload MAC(K, "client" | T)[32]
 *   server: reply OK     payload MAC(K, "server" | T)[32], the client's
 *                        caps as text; or result SDFS_RES_AUTH with a
 *                        one-line reason as payload, then it closes.
 * offer: the frame MAC algorithms the client can run (AUTH_ALG_* bits;
 * it always offers ChaCha20-Poly1305); alg: the one the server picked
 * from them (AES-256-GCM when both ends have AES-NI and PCLMUL, else
 * ChaCha20-Poly1305; an offer with nothing the server runs is refused).
 * The client refuses a pick it did not offer.
 * T = BLAKE2b(name, nonce_c, nonce_s, offer, alg); MAC = BLAKE2b keyed
 * with K (the key both hold: the keyring's and the cluster's copy,
 * keydb.h; the server also accepts the previous key within its rotation
 * grace): a man in the middle that alters the offer or the pick fails
 * the proofs. Session keys, one per direction: BLAKE2b keyed with K
 * over "c2s" | T and "s2c" | T.
 *
 * Then every frame, both directions, is header | payload | tag[16]
 * (payload_len does not count the tag), keyed with the direction's key
 * and nonce = that direction's frame counter (8 bytes little-endian,
 * then 4 zero bytes):
 *   AUTH_ALG_CHACHA20_POLY1305: Poly1305 over the 64 wire header bytes
 *     and the payload, keyed with the first 32 bytes of
 *     ChaCha20(direction key, nonce);
 *   AUTH_ALG_AES256_GCM: the tag of AES-256-GCM (GMAC) with the
 *     direction key and nonce, the payload as additional data and the
 *     64 header bytes as the message (its ciphertext is not sent).
 * A frame altered, replayed, reordered, dropped or injected fails its
 * tag: the receiver closes the connection.
 *
 * libsodium only. The pure parts (frames, tags) are thread-safe on
 * their own state; a session's direction may be used by one thread at
 * a time (the caller's lock orders its frames as they go on the wire).
 */
#ifndef SDFS_COMMON_AUTH_H
#define SDFS_COMMON_AUTH_H
#include <stddef.h>
#include <stdint.h>

#include "common/keydb.h"
#include "common/keys.h"
#include "common/sdfs_proto.h"

#define AUTH_TAG_BYTES   16u
#define AUTH_NONCE_BYTES 32u
#define AUTH_PROOF_BYTES 32u
#define AUTH_REASON_MAX  200u
/* the largest handshake frame, header included */
#define AUTH_FRAME_MAX   (SDFS_HDR_SIZE + AUTH_PROOF_BYTES + AUTH_CAPS_STR_MAX)
#define AUTH_TIMEOUT_MS  5000   /* a whole handshake, blocking helpers */

/* Frame MAC algorithms: bits of the AUTH_HELLO offer, the server's pick. */
#define AUTH_ALG_CHACHA20_POLY1305 0x01u
#define AUTH_ALG_AES256_GCM        0x02u

/*
 * The algorithms this process offers and accepts: those libsodium runs
 * here (AES-256-GCM needs AES-NI and PCLMUL), within the environment's
 * SDFS_AUTH_ALGS if set ("chacha20-poly1305", "aes256-gcm" or both,
 * comma-separated; benchmarks compare them with it) and within @mask
 * set by auth_algs_limit (tests: a peer without AES-NI). ChaCha20-
 * Poly1305 is always among them.
 */
unsigned auth_algs(void);
/* Limit auth_algs() to @mask (~0u: no limit); returns the old limit. */
unsigned auth_algs_limit(unsigned mask);
/* "chacha20-poly1305", "aes256-gcm" or "none" (0). */
const char *auth_alg_name(unsigned alg);

/* What a process proves itself with: its key name and key. */
struct auth_cred {
	char name[AUTH_NAME_MAX + 1];
	uint8_t key[AUTH_KEY_BYTES];
};

/* One direction of a session. */
struct auth_dir {
	/* AES-256-GCM: the expanded key (crypto_aead_aes256gcm_state) */
	_Alignas(16) uint8_t gcm[512];
	uint8_t key[AUTH_KEY_BYTES];
	uint64_t ctr;           /* frames so far: the next frame's nonce */
};

struct auth_sess {
	int on;                 /* 0: no tags (no handshake, or auth none) */
	unsigned alg;           /* AUTH_ALG_*, once on */
	struct auth_dir tx, rx;
};

/* Tag the frame @hdr (64 wire bytes) + @payload (@len bytes) for
 * sending on @s (s->on), and count it. */
void auth_tag(struct auth_sess *s, const uint8_t hdr[SDFS_HDR_SIZE],
	      const void *payload, size_t len, uint8_t tag[AUTH_TAG_BYTES]);
/* Check a received frame's tag and count it: 0, or -EBADMSG (close the
 * connection; the counter moved anyway, nothing after it can pass). */
int auth_check(struct auth_sess *s, const uint8_t hdr[SDFS_HDR_SIZE],
	       const void *payload, size_t len, const uint8_t tag[AUTH_TAG_BYTES]);

/*
 * The payload checksum on a tagged connection: the tag covers the
 * payload, so there a sender puts payload_csum 0 (and does not hash the
 * payload) and a receiver does not check it. auth_hdr_encode encodes
 * @h for sending on @s (NULL or off: proto_hdr_encode);
 * auth_payload_check checks a received payload as its connection
 * wants (off: proto_payload_check; on: 0, the tag was checked).
 */
void auth_hdr_encode(const struct auth_sess *s, const struct sdfs_hdr *h,
		     const void *payload, uint8_t out[SDFS_HDR_SIZE]);
int auth_payload_check(const struct auth_sess *s, const struct sdfs_hdr *h,
		       const void *payload);

/* ---- client side ---- */
struct auth_client {
	struct auth_cred cred;
	uint8_t nonce_c[AUTH_NONCE_BYTES];
	uint8_t th[32];         /* transcript hash, after the challenge */
	uint64_t req_id;
	uint8_t offer, alg;     /* AUTH_ALG_* offered, picked */
};

/* Start: the HELLO frame into @out (AUTH_FRAME_MAX bytes); returns its
 * length. */
size_t auth_client_hello(struct auth_client *ac, const struct auth_cred *cred,
			 uint64_t req_id, uint8_t *out);
/*
 * The server's answer to HELLO (@h, @payload): the PROOF frame into @out
 * (*@outlen). 0, or -EACCES (refused: @err says why),
 * -EPROTONOSUPPORT (an old peer: "peer speaks protocol 1.x"), -EPROTO.
 */
int auth_client_challenge(struct auth_client *ac, const struct sdfs_hdr *h,
			  const uint8_t *payload, uint8_t *out, size_t *outlen,
			  char *err, size_t errlen);
/* The server's answer to PROOF: 0 with @s on and the caps the cluster
 * gives us in @caps (NUL-terminated, may be NULL), or -EACCES /
 * -EPROTO with @err. */
int auth_client_done(struct auth_client *ac, const struct sdfs_hdr *h,
		     const uint8_t *payload, struct auth_sess *s,
		     char *caps, size_t capslen, char *err, size_t errlen);

/*
 * The whole client side on a connected socket @fd (blocking or not),
 * within @timeout_ms. 0 with @s on and the caps the cluster gives us in
 * @caps (as auth_client_done; may be NULL); -EACCES (refused),
 * -EPROTONOSUPPORT (an old peer), -ETIMEDOUT, -ECONNRESET, -EPROTO;
 * @err says which.
 */
int auth_client_run(int fd, const struct auth_cred *cred, int timeout_ms,
		    struct auth_sess *s, char *caps, size_t capslen, char *err,
		    size_t errlen);

/* ---- server side ---- */
enum { AUTH_S_HELLO, AUTH_S_PROOF, AUTH_S_DONE };

struct auth_server {
	int state;
	struct keydb *db;       /* borrowed */
	char name[AUTH_NAME_MAX + 1];
	uint8_t nonce_c[AUTH_NONCE_BYTES], nonce_s[AUTH_NONCE_BYTES];
	uint8_t offer, alg;     /* AUTH_ALG_* the client offered, we picked */
	uint8_t key_used[AUTH_KEY_BYTES];       /* once done: the key the peer
						   proved (auth_still_valid) */
	int fetch;              /* a name the table misses: keydb_fetch (it may
				   block: set where waiting is allowed) */
};

void auth_server_init(struct auth_server *as, struct keydb *db);
/* Is @h a handshake frame (a request of AUTH_HELLO or AUTH_PROOF, its
 * payload within AUTH_FRAME_MAX)? Any other frame before the handshake
 * is done goes to auth_server_step unread (payload NULL): refused. */
int auth_is_handshake(const struct sdfs_hdr *h);
/*
 * One handshake frame from the client (@h checked, @payload its
 * payload). Writes the answer into @out (*@outlen bytes, untagged: send
 * it in any case). Returns 0 (go on), 1 (done: @s on, @who the peer's
 * key and caps), or -EACCES (refused: send @out, then close; @why says
 * why, for the log, with the key name when known).
 */
int auth_server_step(struct auth_server *as, const struct sdfs_hdr *h,
		     const uint8_t *payload, uint8_t *out, size_t *outlen,
		     struct auth_sess *s, struct auth_ident *who,
		     char *why, size_t whylen);
/* A refusal frame answering @req with @reason into @out; its length. */
size_t auth_refusal(const struct sdfs_hdr *req, const char *reason, uint8_t *out);

/*
 * The whole server side on a blocking socket @fd within @timeout_ms,
 * the first frame included (a 1.x peer gets SDFS_RES_BAD_VERSION).
 * 0 with @s on and @who; else -errno with @why (the caller logs it and
 * closes).
 */
int auth_server_run(int fd, struct keydb *db, int timeout_ms, struct auth_sess *s,
		    struct auth_ident *who, uint8_t key_used[AUTH_KEY_BYTES],
		    char *why, size_t whylen);
/* Is the key @name proved with (@key_used) still the cluster's: not
 * removed (`sdfs auth rm`), not replaced past its grace (`sdfs auth
 * rotate`)? 1 or 0. A daemon closes connections of keys that are not. */
int auth_still_valid(struct keydb *db, const char *name,
		     const uint8_t key_used[AUTH_KEY_BYTES]);

/* ---- a process's key ---- */
/*
 * The keyring a process proves itself with: @flag (a --keyring option)
 * if set, else @conf_keyring (sdfs.conf `keyring =`; @conf_set: the
 * file named it). 0 with @kr; -ENOENT when nothing named one and the
 * default file is absent (the process has no key: fine where the
 * cluster runs without authentication); else -errno with @err.
 */
int auth_keyring_open(const char *flag, const char *conf_keyring, int conf_set,
		      struct keyring *kr, char *err, size_t errlen);
void auth_cred_of(const struct keyring *kr, struct auth_cred *cred);

/*
 * A keyring file followed: a program with a long life (a mount) picks
 * up its rotated key (`sdfs auth rotate`, a new keyring written over
 * the old) without a restart. auth_keyfile_cred gives the key of the
 * file as it is now: re-read when its inode, size or mtime changed; a
 * file that went or does not parse leaves the last good key (logged).
 * Thread-safe.
 */
struct auth_keyfile;
/* Read @path: 0 with *@out, or -errno with @err (as keyring_load). */
int auth_keyfile_open(const char *path, struct auth_keyfile **out, char *err,
		      size_t errlen);
void auth_keyfile_free(struct auth_keyfile *kf);        /* NULL ok */
void auth_keyfile_cred(struct auth_keyfile *kf, struct auth_cred *out);

/* ---- blocking frame I/O with a session (s->on: tagged) ---- */
/* Send @h + @payload, tagged if @s is on. 0 or -errno. */
int auth_send_frame(int fd, struct auth_sess *s, const struct sdfs_hdr *h,
		    const void *payload, int64_t deadline_ms);
/* Write an encoded frame (@hdr wire bytes + @payload) and its tag. */
int auth_send_raw(int fd, struct auth_sess *s, const uint8_t hdr[SDFS_HDR_SIZE],
		  const void *payload, size_t len, int64_t deadline_ms);
/* Reading a frame's parts: net_read_full (common/net.h). */
#endif
