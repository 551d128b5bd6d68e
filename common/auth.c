/*
 * auth.c - see auth.h. Every primitive is libsodium's: BLAKE2b
 * (crypto_generichash) for the transcript, the proofs and the session
 * keys; ChaCha20 + Poly1305 (crypto_stream_chacha20_ietf,
 * crypto_onetimeauth_poly1305) or AES-256-GCM (crypto_aead_aes256gcm_*,
 * AES-NI) for the frame tags; crypto_verify_* to compare;
 * randombytes_buf for nonces.
 *
 * AES-256-GCM's limits (libsodium 1.0.18): the message, our 64 header
 * bytes, is far below crypto_aead_aes256gcm_MESSAGEBYTES_MAX (~64 GiB);
 * the additional data (the payload, at most SDFS_MAX_PAYLOAD) has no
 * limit of its own there, and GCM's (2^61 bytes) is far off.
 */
#include "common/auth.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"

static_assert(crypto_onetimeauth_poly1305_BYTES == AUTH_TAG_BYTES, "tag size");
static_assert(crypto_onetimeauth_poly1305_KEYBYTES == 32, "otk size");
static_assert(crypto_stream_chacha20_ietf_NONCEBYTES == 12, "nonce size");
static_assert(crypto_aead_aes256gcm_NPUBBYTES == 12, "gcm nonce size");
static_assert(crypto_aead_aes256gcm_ABYTES == AUTH_TAG_BYTES, "gcm tag size");
static_assert(crypto_aead_aes256gcm_KEYBYTES == AUTH_KEY_BYTES, "gcm key size");
static_assert(sizeof(crypto_aead_aes256gcm_state) <=
	      sizeof(((struct auth_dir *)0)->gcm), "gcm state size");
static_assert(SDFS_HDR_SIZE <= crypto_aead_aes256gcm_MESSAGEBYTES_MAX, "gcm message");

#define AUTH_DOMAIN "sdfs-auth-2"

/* ---- algorithms ---- */

static _Atomic unsigned algs_limit = ~0u;

const char *auth_alg_name(unsigned alg)
{
	switch (alg) {
	case AUTH_ALG_CHACHA20_POLY1305:
		return "chacha20-poly1305";
	case AUTH_ALG_AES256_GCM:
		return "aes256-gcm";
	}
	return "none";
}

static unsigned env_algs(void)
{
	static _Atomic unsigned cached;         /* 0: not read yet */
	unsigned m = cached;
	const char *e;

	if (m)
		return m;
	e = getenv("SDFS_AUTH_ALGS");
	m = AUTH_ALG_CHACHA20_POLY1305 | AUTH_ALG_AES256_GCM;
	if (e && *e) {
		m = AUTH_ALG_CHACHA20_POLY1305;
		if (strstr(e, "aes256-gcm"))
			m |= AUTH_ALG_AES256_GCM;
	}
	cached = m;
	return m;
}

unsigned auth_algs(void)
{
	unsigned m = AUTH_ALG_CHACHA20_POLY1305;

	/* idempotent; crypto_aead_aes256gcm_is_available() needs it */
	if (sodium_init() >= 0 && crypto_aead_aes256gcm_is_available())
		m |= AUTH_ALG_AES256_GCM;
	return (m & env_algs() & algs_limit) | AUTH_ALG_CHACHA20_POLY1305;
}

unsigned auth_algs_limit(unsigned mask)
{
	return atomic_exchange(&algs_limit, mask);
}

/* ---- frame tags ---- */

static void nonce_of(const struct auth_dir *d, uint8_t nonce[12])
{
	/* the counter as 8 little-endian bytes; the rest zero */
	memset(nonce, 0, 12);
	for (int i = 0; i < 8; i++)
		nonce[i] = (uint8_t)(d->ctr >> (8 * i));
}

static void tag_of(const struct auth_sess *s, const struct auth_dir *d,
		   const uint8_t *hdr, const void *payload, size_t len,
		   uint8_t tag[AUTH_TAG_BYTES])
{
	crypto_onetimeauth_poly1305_state st;
	uint8_t nonce[12], k[32], ct[SDFS_HDR_SIZE];

	nonce_of(d, nonce);
	if (s->alg == AUTH_ALG_AES256_GCM) {
		/* GMAC: the header as the message, the payload as AD */
		crypto_aead_aes256gcm_encrypt_detached_afternm(
			ct, tag, NULL, hdr, SDFS_HDR_SIZE, len ? payload : NULL, len,
			NULL, nonce, (const crypto_aead_aes256gcm_state *)(const void *)d->gcm);
		return;
	}
	crypto_stream_chacha20_ietf(k, 32, nonce, d->key);
	crypto_onetimeauth_poly1305_init(&st, k);
	crypto_onetimeauth_poly1305_update(&st, hdr, SDFS_HDR_SIZE);
	if (len)
		crypto_onetimeauth_poly1305_update(&st, payload, len);
	crypto_onetimeauth_poly1305_final(&st, tag);
	sodium_memzero(k, sizeof(k));
}

void auth_tag(struct auth_sess *s, const uint8_t hdr[SDFS_HDR_SIZE],
	      const void *payload, size_t len, uint8_t tag[AUTH_TAG_BYTES])
{
	tag_of(s, &s->tx, hdr, payload, len, tag);
	s->tx.ctr++;
}

int auth_check(struct auth_sess *s, const uint8_t hdr[SDFS_HDR_SIZE],
	       const void *payload, size_t len, const uint8_t tag[AUTH_TAG_BYTES])
{
	uint8_t want[AUTH_TAG_BYTES];
	int ret;

	tag_of(s, &s->rx, hdr, payload, len, want);
	s->rx.ctr++;
	ret = crypto_verify_16(want, tag) == 0 ? 0 : -EBADMSG;
	return ret;
}

void auth_hdr_encode(const struct auth_sess *s, const struct sdfs_hdr *h,
		     const void *payload, uint8_t out[SDFS_HDR_SIZE])
{
	if (s && s->on)
		proto_hdr_encode_nocsum(h, out);
	else
		proto_hdr_encode(h, payload, out);
}

int auth_payload_check(const struct auth_sess *s, const struct sdfs_hdr *h,
		       const void *payload)
{
	return s && s->on ? 0 : proto_payload_check(h, payload);
}

/* ---- the handshake's hashes ---- */

static void transcript(const char *name, const uint8_t *nc, const uint8_t *ns,
		       uint8_t offer, uint8_t alg, uint8_t th[32])
{
	crypto_generichash_state st;
	uint8_t nl = (uint8_t)strlen(name);

	crypto_generichash_init(&st, NULL, 0, 32);
	crypto_generichash_update(&st, (const uint8_t *)AUTH_DOMAIN, sizeof(AUTH_DOMAIN));
	crypto_generichash_update(&st, &nl, 1);
	crypto_generichash_update(&st, (const uint8_t *)name, nl);
	crypto_generichash_update(&st, nc, AUTH_NONCE_BYTES);
	crypto_generichash_update(&st, ns, AUTH_NONCE_BYTES);
	crypto_generichash_update(&st, &offer, 1);
	crypto_generichash_update(&st, &alg, 1);
	crypto_generichash_final(&st, th, 32);
}

/* BLAKE2b keyed with @key over @label (with its NUL) | @th. */
static void keyed(const uint8_t key[AUTH_KEY_BYTES], const char *label,
		  const uint8_t th[32], uint8_t out[32])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, key, AUTH_KEY_BYTES, 32);
	crypto_generichash_update(&st, (const uint8_t *)label, strlen(label) + 1);
	crypto_generichash_update(&st, th, 32);
	crypto_generichash_final(&st, out, 32);
}

static void session_keys(struct auth_sess *s, const uint8_t key[AUTH_KEY_BYTES],
			 const uint8_t th[32], unsigned alg, int client)
{
	keyed(key, "c2s", th, client ? s->tx.key : s->rx.key);
	keyed(key, "s2c", th, client ? s->rx.key : s->tx.key);
	s->alg = alg;
	if (alg == AUTH_ALG_AES256_GCM) {
		crypto_aead_aes256gcm_beforenm(
			(crypto_aead_aes256gcm_state *)(void *)s->tx.gcm, s->tx.key);
		crypto_aead_aes256gcm_beforenm(
			(crypto_aead_aes256gcm_state *)(void *)s->rx.gcm, s->rx.key);
	}
	s->tx.ctr = 0;
	s->rx.ctr = 0;
	s->on = 1;
}

static size_t frame(const struct sdfs_hdr *h, const void *payload, uint8_t *out)
{
	proto_hdr_encode(h, payload, out);
	if (h->payload_len && payload)
		memcpy(out + SDFS_HDR_SIZE, payload, h->payload_len);
	return SDFS_HDR_SIZE + h->payload_len;
}

/* A refusal's reason into @err: the payload, printable, one line. */
static void reason_of(const struct sdfs_hdr *h, const uint8_t *payload, char *err,
		      size_t errlen)
{
	size_t n = h->payload_len < AUTH_REASON_MAX ? h->payload_len : AUTH_REASON_MAX;
	char r[AUTH_REASON_MAX + 1];

	for (size_t i = 0; i < n; i++)
		r[i] = payload[i] >= 0x20 && payload[i] < 0x7f ? (char)payload[i] : '?';
	r[n] = '\0';
	snprintf(err, errlen, "refused by the peer: %s", n ? r : "authentication failed");
}

/* ---- client ---- */

size_t auth_client_hello(struct auth_client *ac, const struct auth_cred *cred,
			 uint64_t req_id, uint8_t *out)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_AUTH_HELLO };
	uint8_t pl[AUTH_NONCE_BYTES + 1 + AUTH_NAME_MAX];
	size_t nl = strnlen(cred->name, AUTH_NAME_MAX);

	ac->cred = *cred;
	ac->cred.name[nl] = '\0';
	ac->req_id = req_id;
	ac->offer = (uint8_t)auth_algs();
	randombytes_buf(ac->nonce_c, sizeof(ac->nonce_c));
	memcpy(pl, ac->nonce_c, AUTH_NONCE_BYTES);
	pl[AUTH_NONCE_BYTES] = ac->offer;
	memcpy(pl + AUTH_NONCE_BYTES + 1, ac->cred.name, nl);
	h.req_id = req_id;
	h.payload_len = (uint32_t)(AUTH_NONCE_BYTES + 1 + nl);
	return frame(&h, pl, out);
}

/* Common checks of an answer to our @op. */
static int answer_ok(const struct auth_client *ac, const struct sdfs_hdr *h,
		     unsigned op, const uint8_t *payload, char *err, size_t errlen)
{
	if (h->major != SDFS_PROTO_MAJOR) {
		snprintf(err, errlen, "peer speaks protocol %u.x, not %u.x", h->major,
			 SDFS_PROTO_MAJOR);
		return -EPROTONOSUPPORT;
	}
	if (!(h->flags & SDFS_F_REPLY) || h->req_id != ac->req_id || h->opcode != op) {
		snprintf(err, errlen, "unexpected frame during the handshake");
		return -EPROTO;
	}
	if (h->result == SDFS_RES_BAD_VERSION) {
		snprintf(err, errlen, "peer does not speak protocol %u.x", SDFS_PROTO_MAJOR);
		return -EPROTONOSUPPORT;
	}
	if (h->result == SDFS_RES_AUTH) {
		reason_of(h, payload, err, errlen);
		return -EACCES;
	}
	if (h->result != SDFS_RES_OK) {
		snprintf(err, errlen, "handshake answered with result %u", h->result);
		return -EPROTO;
	}
	return 0;
}

int auth_client_challenge(struct auth_client *ac, const struct sdfs_hdr *h,
			  const uint8_t *payload, uint8_t *out, size_t *outlen,
			  char *err, size_t errlen)
{
	struct sdfs_hdr p = { .opcode = SDFS_OP_AUTH_PROOF };
	uint8_t proof[AUTH_PROOF_BYTES];
	int ret = answer_ok(ac, h, SDFS_OP_AUTH_HELLO, payload, err, errlen);

	if (ret)
		return ret;
	if (h->payload_len != AUTH_NONCE_BYTES + 1) {
		snprintf(err, errlen, "bad challenge");
		return -EPROTO;
	}
	ac->alg = payload[AUTH_NONCE_BYTES];
	if ((ac->alg != AUTH_ALG_CHACHA20_POLY1305 && ac->alg != AUTH_ALG_AES256_GCM) ||
	    !(ac->alg & ac->offer)) {
		snprintf(err, errlen, "the peer picked frame MAC algorithm 0x%x, not "
			 "one we offered (0x%x)", ac->alg, ac->offer);
		return -EPROTO;
	}
	transcript(ac->cred.name, ac->nonce_c, payload, ac->offer, ac->alg, ac->th);
	keyed(ac->cred.key, "client", ac->th, proof);
	p.req_id = ++ac->req_id;
	p.payload_len = AUTH_PROOF_BYTES;
	*outlen = frame(&p, proof, out);
	return 0;
}

int auth_client_done(struct auth_client *ac, const struct sdfs_hdr *h,
		     const uint8_t *payload, struct auth_sess *s,
		     char *caps, size_t capslen, char *err, size_t errlen)
{
	uint8_t want[AUTH_PROOF_BYTES];
	int ret = answer_ok(ac, h, SDFS_OP_AUTH_PROOF, payload, err, errlen);

	if (ret)
		return ret;
	if (h->payload_len < AUTH_PROOF_BYTES) {
		snprintf(err, errlen, "bad handshake answer");
		return -EPROTO;
	}
	keyed(ac->cred.key, "server", ac->th, want);
	if (crypto_verify_32(want, payload) != 0) {
		/* a server that does not know our key: not the cluster's */
		snprintf(err, errlen, "the peer did not prove it knows key %s",
			 ac->cred.name);
		return -EACCES;
	}
	if (caps && capslen) {
		size_t n = h->payload_len - AUTH_PROOF_BYTES;

		if (n >= capslen)
			n = capslen - 1;
		memcpy(caps, payload + AUTH_PROOF_BYTES, n);
		caps[n] = '\0';
	}
	session_keys(s, ac->cred.key, ac->th, ac->alg, 1);
	sodium_memzero(ac, sizeof(*ac));
	return 0;
}

int auth_send_raw(int fd, struct auth_sess *s, const uint8_t hdr[SDFS_HDR_SIZE],
		  const void *payload, size_t len, int64_t deadline_ms)
{
	uint8_t tag[AUTH_TAG_BYTES];
	struct iovec iov[3];
	int cnt = 0;

	iov[cnt++] = (struct iovec){ (void *)hdr, SDFS_HDR_SIZE };
	if (len)
		iov[cnt++] = (struct iovec){ (void *)payload, len };
	if (s && s->on) {
		auth_tag(s, hdr, payload, len, tag);
		iov[cnt++] = (struct iovec){ tag, sizeof(tag) };
	}
	return net_writev_full(fd, iov, cnt, deadline_ms);
}

int auth_send_frame(int fd, struct auth_sess *s, const struct sdfs_hdr *h,
		    const void *payload, int64_t deadline_ms)
{
	uint8_t hb[SDFS_HDR_SIZE];

	auth_hdr_encode(s, h, payload, hb);
	return auth_send_raw(fd, s, hb, payload, h->payload_len, deadline_ms);
}

/* One untagged handshake frame: header checked (a 1.x one: -EPROTONOSUPPORT
 * with @h filled), payload (at most AUTH_FRAME_MAX) checked. */
static int recv_plain(int fd, struct sdfs_hdr *h, uint8_t *payload, int64_t deadline)
{
	uint8_t hb[SDFS_HDR_SIZE];
	int ret = net_read_full(fd, hb, sizeof(hb), deadline);

	if (ret)
		return ret;
	ret = proto_hdr_decode(hb, AUTH_FRAME_MAX - SDFS_HDR_SIZE, h);
	if (ret)
		return ret == -EPROTONOSUPPORT ? ret : -EPROTO;
	ret = net_read_full(fd, payload, h->payload_len, deadline);
	if (!ret)
		ret = proto_payload_check(h, payload);
	return ret;
}

int auth_client_run(int fd, const struct auth_cred *cred, int timeout_ms,
		    struct auth_sess *s, char *caps, size_t capslen, char *err,
		    size_t errlen)
{
	int64_t deadline = net_now_ms() + timeout_ms;
	uint8_t buf[AUTH_FRAME_MAX], pl[AUTH_FRAME_MAX];
	struct auth_client ac;
	struct sdfs_hdr h;
	size_t len;
	int ret;

	len = auth_client_hello(&ac, cred, randombytes_random() | 1ull << 40, buf);
	ret = net_write_full(fd, buf, len, deadline);
	if (!ret)
		ret = recv_plain(fd, &h, pl, deadline);
	if (ret == -EPROTONOSUPPORT) {
		snprintf(err, errlen, "peer speaks protocol %u.x, not %u.x", h.major,
			 SDFS_PROTO_MAJOR);
		return ret;
	}
	if (ret)
		goto io_err;
	ret = auth_client_challenge(&ac, &h, pl, buf, &len, err, errlen);
	if (ret)
		return ret;
	ret = net_write_full(fd, buf, len, deadline);
	if (!ret)
		ret = recv_plain(fd, &h, pl, deadline);
	if (ret)
		goto io_err;
	return auth_client_done(&ac, &h, pl, s, caps, capslen, err, errlen);
io_err:
	snprintf(err, errlen, "handshake: %s", strerror(-ret));
	return ret == -EPROTONOSUPPORT ? -EPROTO : ret;
}

/* ---- server ---- */

void auth_server_init(struct auth_server *as, struct keydb *db)
{
	memset(as, 0, sizeof(*as));
	as->db = db;
	as->state = AUTH_S_HELLO;
}

size_t auth_refusal(const struct sdfs_hdr *req, const char *reason, uint8_t *out)
{
	struct sdfs_hdr r;
	size_t n = strnlen(reason, AUTH_REASON_MAX);

	proto_reply_init(&r, req, SDFS_RES_AUTH);
	r.payload_len = (uint32_t)n;
	return frame(&r, reason, out);
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int refuse(const struct sdfs_hdr *h, const char *reason, uint8_t *out,
		  size_t *outlen)
{
	*outlen = auth_refusal(h, reason, out);
	return -EACCES;
}

int auth_is_handshake(const struct sdfs_hdr *h)
{
	return !(h->flags & SDFS_F_REPLY) &&
	       (h->opcode == SDFS_OP_AUTH_HELLO || h->opcode == SDFS_OP_AUTH_PROOF) &&
	       h->payload_len <= AUTH_FRAME_MAX - SDFS_HDR_SIZE;
}

int auth_server_step(struct auth_server *as, const struct sdfs_hdr *h,
		     const uint8_t *payload, uint8_t *out, size_t *outlen,
		     struct auth_sess *s, struct auth_ident *who,
		     char *why, size_t whylen)
{
	struct sdfs_hdr r;
	struct keydb_ent e;
	uint8_t th[32], want[AUTH_PROOF_BYTES], pl[AUTH_FRAME_MAX];
	const uint8_t *key = NULL;

	if (!auth_is_handshake(h))
		goto unexpected;
	if (as->state == AUTH_S_HELLO && h->opcode == SDFS_OP_AUTH_HELLO) {
		size_t nl = h->payload_len > AUTH_NONCE_BYTES + 1
			? h->payload_len - AUTH_NONCE_BYTES - 1 : 0;
		uint8_t pick[AUTH_NONCE_BYTES + 1];
		unsigned both;

		if (nl == 0 || nl > AUTH_NAME_MAX) {
			snprintf(why, whylen, "malformed AUTH_HELLO");
			return refuse(h, "malformed AUTH_HELLO", out, outlen);
		}
		memcpy(as->nonce_c, payload, AUTH_NONCE_BYTES);
		as->offer = payload[AUTH_NONCE_BYTES];
		memcpy(as->name, payload + AUTH_NONCE_BYTES + 1, nl);
		as->name[nl] = '\0';
		if (!auth_name_ok(as->name)) {
			snprintf(why, whylen, "bad key name");
			return refuse(h, "bad key name", out, outlen);
		}
		both = as->offer & auth_algs();
		if (both & AUTH_ALG_AES256_GCM) {
			as->alg = AUTH_ALG_AES256_GCM;
		} else if (both & AUTH_ALG_CHACHA20_POLY1305) {
			as->alg = AUTH_ALG_CHACHA20_POLY1305;
		} else {
			snprintf(why, whylen, "key %s: no frame MAC algorithm in "
				 "common (offered 0x%x)", as->name, as->offer);
			return refuse(h, "no frame MAC algorithm in common", out, outlen);
		}
		/* a challenge also for names we do not know: the refusal
		 * comes after the proof and does not tell which was wrong */
		randombytes_buf(as->nonce_s, sizeof(as->nonce_s));
		memcpy(pick, as->nonce_s, AUTH_NONCE_BYTES);
		pick[AUTH_NONCE_BYTES] = as->alg;
		proto_reply_init(&r, h, SDFS_RES_OK);
		r.payload_len = AUTH_NONCE_BYTES + 1;
		*outlen = frame(&r, pick, out);
		as->state = AUTH_S_PROOF;
		return 0;
	}
	if (as->state == AUTH_S_PROOF && h->opcode == SDFS_OP_AUTH_PROOF) {
		as->state = AUTH_S_DONE;
		if (h->payload_len != AUTH_PROOF_BYTES) {
			snprintf(why, whylen, "key %s: malformed AUTH_PROOF", as->name);
			return refuse(h, "malformed AUTH_PROOF", out, outlen);
		}
		transcript(as->name, as->nonce_c, as->nonce_s, as->offer, as->alg, th);
		if (as->db && (as->fetch ? keydb_fetch : keydb_get)(as->db, as->name, &e) == 0) {
			keyed(e.key, "client", th, want);
			if (crypto_verify_32(want, payload) == 0) {
				key = e.key;
			} else if (e.prev_until_ms && wall_ms() < e.prev_until_ms) {
				keyed(e.prev_key, "client", th, want);
				if (crypto_verify_32(want, payload) == 0)
					key = e.prev_key;
			}
			if (!key)
				snprintf(why, whylen, "key %s: wrong key", as->name);
		} else {
			snprintf(why, whylen, "key %s: unknown key", as->name);
		}
		if (!key) {
			char msg[AUTH_REASON_MAX];

			snprintf(msg, sizeof(msg), "key %s is not known to this cluster, "
				 "or not this key", as->name);
			sodium_memzero(&e, sizeof(e));
			return refuse(h, msg, out, outlen);
		}
		keyed(key, "server", th, pl);
		if (auth_caps_format(&e.caps, (char *)pl + AUTH_PROOF_BYTES,
				     AUTH_CAPS_STR_MAX))
			pl[AUTH_PROOF_BYTES] = '\0';
		proto_reply_init(&r, h, SDFS_RES_OK);
		r.payload_len = (uint32_t)(AUTH_PROOF_BYTES +
					   strlen((char *)pl + AUTH_PROOF_BYTES));
		*outlen = frame(&r, pl, out);
		session_keys(s, key, th, as->alg, 0);
		memcpy(as->key_used, key, AUTH_KEY_BYTES);
		snprintf(who->name, sizeof(who->name), "%s", as->name);
		who->caps = e.caps;
		sodium_memzero(&e, sizeof(e));
		return 1;
	}
unexpected:
	if (as->state == AUTH_S_PROOF)
		snprintf(why, whylen, "key %s: %s before AUTH_PROOF", as->name,
			 proto_op_name(h->opcode));
	else
		snprintf(why, whylen, "unauthenticated %s", proto_op_name(h->opcode));
	as->state = AUTH_S_DONE;
	return refuse(h, "authentication required (protocol 2: AUTH_HELLO first)",
		      out, outlen);
}

int auth_still_valid(struct keydb *db, const char *name,
		     const uint8_t key_used[AUTH_KEY_BYTES])
{
	return keydb_valid(db, name, key_used, wall_ms());
}

int auth_server_run(int fd, struct keydb *db, int timeout_ms, struct auth_sess *s,
		    struct auth_ident *who, uint8_t key_used[AUTH_KEY_BYTES],
		    char *why, size_t whylen)
{
	int64_t deadline = net_now_ms() + timeout_ms;
	uint8_t pl[AUTH_FRAME_MAX], out[AUTH_FRAME_MAX];
	struct auth_server as;
	struct sdfs_hdr h;
	int ret;

	auth_server_init(&as, db);
	as.fetch = 1;           /* a thread of its own: it may wait */
	for (;;) {
		uint8_t hb[SDFS_HDR_SIZE];
		size_t len = 0;

		ret = net_read_full(fd, hb, sizeof(hb), deadline);
		if (!ret)
			ret = proto_hdr_decode(hb, SDFS_MAX_PAYLOAD, &h);
		if (!ret && !auth_is_handshake(&h)) {
			/* refused unread: no payload of a stranger is held */
			ret = auth_server_step(&as, &h, NULL, out, &len, s, who, why, whylen);
			net_write_full(fd, out, len, deadline);
			return ret;
		}
		if (!ret) {
			ret = net_read_full(fd, pl, h.payload_len, deadline);
			if (!ret && proto_payload_check(&h, pl))
				ret = -EPROTO;
		} else if (ret != -EPROTONOSUPPORT) {
			ret = -EPROTO;
		}
		if (ret == -EPROTONOSUPPORT) {
			struct sdfs_hdr r;

			proto_reply_init(&r, &h, SDFS_RES_BAD_VERSION);
			len = frame(&r, NULL, out);
			net_write_full(fd, out, len, deadline);
			snprintf(why, whylen, "peer speaks protocol %u.x", h.major);
			return ret;
		}
		if (ret) {
			snprintf(why, whylen, "handshake: %s", ret == -EPROTO
				 ? "malformed frame" : strerror(-ret));
			return ret;
		}
		ret = auth_server_step(&as, &h, pl, out, &len, s, who, why, whylen);
		int wret = net_write_full(fd, out, len, deadline);
		if (ret < 0)
			return ret;
		if (wret) {
			snprintf(why, whylen, "handshake: %s", strerror(-wret));
			return wret;
		}
		if (ret == 1) {
			if (key_used)
				memcpy(key_used, as.key_used, AUTH_KEY_BYTES);
			sodium_memzero(&as, sizeof(as));
			return 0;
		}
	}
}

int auth_keyring_open(const char *flag, const char *conf_keyring, int conf_set,
		      struct keyring *kr, char *err, size_t errlen)
{
	const char *path = flag && *flag ? flag : conf_keyring;
	int named = (flag && *flag) || conf_set;
	int ret;

	if (!path || !*path) {
		snprintf(err, errlen, "no keyring configured");
		return -ENOENT;
	}
	ret = keyring_load(path, kr, err, errlen);
	if (ret == -ENOENT && !named)
		snprintf(err, errlen, "no keyring (%s absent; keyring = in sdfs.conf "
			 "names another)", path);
	else if (ret == -ENOENT)
		ret = -EINVAL;          /* named, and missing: an error */
	return ret;
}

void auth_cred_of(const struct keyring *kr, struct auth_cred *cred)
{
	memset(cred, 0, sizeof(*cred));
	snprintf(cred->name, sizeof(cred->name), "%s", kr->name);
	memcpy(cred->key, kr->key, AUTH_KEY_BYTES);
}

struct auth_keyfile {
	pthread_mutex_t mu;
	char path[1024];
	struct stat st;                 /* as last read */
	struct auth_cred cred;
};

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	       a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int auth_keyfile_open(const char *path, struct auth_keyfile **out, char *err,
		      size_t errlen)
{
	struct auth_keyfile *kf;
	struct keyring kr;
	int ret;

	if (strlen(path) >= sizeof(kf->path)) {
		snprintf(err, errlen, "keyring path too long");
		return -ENAMETOOLONG;
	}
	kf = calloc(1, sizeof(*kf));
	if (!kf)
		return -ENOMEM;
	strcpy(kf->path, path);
	stat(path, &kf->st);            /* before the read: a change after it shows */
	ret = keyring_load(path, &kr, err, errlen);
	if (ret) {
		free(kf);
		return ret;
	}
	auth_cred_of(&kr, &kf->cred);
	sodium_memzero(&kr, sizeof(kr));
	pthread_mutex_init(&kf->mu, NULL);
	*out = kf;
	return 0;
}

void auth_keyfile_free(struct auth_keyfile *kf)
{
	if (!kf)
		return;
	pthread_mutex_destroy(&kf->mu);
	sodium_memzero(kf, sizeof(*kf));
	free(kf);
}

void auth_keyfile_cred(struct auth_keyfile *kf, struct auth_cred *out)
{
	struct stat st;
	struct keyring kr;
	char err[256];

	pthread_mutex_lock(&kf->mu);
	if (stat(kf->path, &st) == 0 && !same_file(&st, &kf->st)) {
		kf->st = st;
		if (keyring_load(kf->path, &kr, err, sizeof(err)) == 0) {
			if (strcmp(kr.name, kf->cred.name) ||
			    sodium_memcmp(kr.key, kf->cred.key, AUTH_KEY_BYTES))
				log_info("keyring %s changed: now key %s", kf->path, kr.name);
			auth_cred_of(&kr, &kf->cred);
			sodium_memzero(&kr, sizeof(kr));
		} else {
			log_warn("%s; keeping the key read before", err);
		}
	}
	*out = kf->cred;
	pthread_mutex_unlock(&kf->mu);
}
