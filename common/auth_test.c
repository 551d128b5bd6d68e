/*
 * auth_test.c - the handshake and the frame tags of common/auth.h over
 * socketpairs: a right key gets in both ways, a wrong, unknown or
 * expired one does not, a server without the key cannot pass as one,
 * and a frame altered, replayed, reordered or injected fails its tag,
 * under each frame MAC algorithm; the algorithm is agreed (a peer
 * without AES-NI gets ChaCha20-Poly1305, a pick not offered or an offer
 * altered on the way fails). Also prints what a tag costs for 4 KiB
 * and 1 MiB frames under each (no assertion on it).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/auth.h"
#include "common/net.h"
#include "common/proto.h"

static uint8_t key_a[AUTH_KEY_BYTES], key_b[AUTH_KEY_BYTES];
static struct keydb *db;

static int64_t wall_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put_key(const char *name, const uint8_t *key, const uint8_t *prev,
		    int64_t prev_until_ms, const char *caps)
{
	struct keydb_ent e = { 0 };
	char err[128];

	snprintf(e.name, sizeof(e.name), "%s", name);
	memcpy(e.key, key, AUTH_KEY_BYTES);
	if (prev)
		memcpy(e.prev_key, prev, AUTH_KEY_BYTES);
	e.prev_until_ms = prev_until_ms;
	cr_assert_eq(auth_caps_parse(caps, &e.caps, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(keydb_put(db, &e), 0);
}

static void setup(void)
{
	cr_assert(sodium_init() >= 0);
	randombytes_buf(key_a, sizeof(key_a));
	randombytes_buf(key_b, sizeof(key_b));
	cr_assert_eq(keydb_new(&db), 0);
	put_key("client.alice", key_a, NULL, 0, "rw,path=/a");
}

static void teardown(void)
{
	auth_algs_limit(~0u);
	keydb_free(db);
}

/* The algorithm a session between two ends of this machine gets. */
static unsigned best_alg(void)
{
	return crypto_aead_aes256gcm_is_available() ? AUTH_ALG_AES256_GCM
						    : AUTH_ALG_CHACHA20_POLY1305;
}

TestSuite(auth, .init = setup, .fini = teardown, .timeout = 60);

struct srv {
	int fd;
	int ret;
	struct auth_sess s;
	struct auth_ident who;
	uint8_t key_used[AUTH_KEY_BYTES];
	char why[256];
};

static void *srv_main(void *arg)
{
	struct srv *sv = arg;

	sv->ret = auth_server_run(sv->fd, db, 5000, &sv->s, &sv->who, sv->key_used,
				  sv->why, sizeof(sv->why));
	return NULL;
}

/* The caps the last shake's client was told. */
static char shake_caps[AUTH_CAPS_STR_MAX];

/* A handshake over a socketpair: the client's result; *@sv the server's. */
static int shake(const char *name, const uint8_t *key, struct srv *sv,
		 struct auth_sess *cs, int *cfd, char *err, size_t errlen)
{
	struct auth_cred cred = { 0 };
	pthread_t t;
	int sp[2], ret;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	memset(sv, 0, sizeof(*sv));
	sv->fd = sp[1];
	snprintf(cred.name, sizeof(cred.name), "%s", name);
	memcpy(cred.key, key, AUTH_KEY_BYTES);
	cr_assert_eq(pthread_create(&t, NULL, srv_main, sv), 0);
	memset(cs, 0, sizeof(*cs));
	ret = auth_client_run(sp[0], &cred, 5000, cs, shake_caps, sizeof(shake_caps),
			      err, errlen);
	if (ret)
		shutdown(sp[0], SHUT_RDWR);     /* the server may wait for more */
	pthread_join(t, NULL);
	*cfd = sp[0];
	close(sp[1]);
	return ret;
}

Test(auth, right_key_gets_in_both_ways_with_caps)
{
	struct auth_sess cs;
	struct srv sv;
	char err[256] = "";
	int fd;

	cr_assert_eq(shake("client.alice", key_a, &sv, &cs, &fd, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(sv.ret, 0, "%s", sv.why);
	cr_assert_str_eq(sv.who.name, "client.alice");
	cr_assert_str_eq(sv.who.caps.path, "/a");
	cr_assert_str_eq(shake_caps, "rw,path=/a", "the client learns its caps");
	cr_assert(cs.on && sv.s.on);
	/* the directions' keys pair up, and differ from each other */
	cr_assert_arr_eq(cs.tx.key, sv.s.rx.key, AUTH_KEY_BYTES);
	cr_assert_arr_eq(cs.rx.key, sv.s.tx.key, AUTH_KEY_BYTES);
	cr_assert(memcmp(cs.tx.key, cs.rx.key, AUTH_KEY_BYTES));
	close(fd);
}

Test(auth, wrong_key_is_refused_with_a_reason)
{
	struct auth_sess cs;
	struct srv sv;
	char err[256] = "";
	int fd;

	cr_assert_eq(shake("client.alice", key_b, &sv, &cs, &fd, err, sizeof(err)),
		     -EACCES);
	cr_assert(strstr(err, "client.alice"), "%s", err);
	cr_assert_eq(sv.ret, -EACCES);
	cr_assert(strstr(sv.why, "wrong key"), "%s", sv.why);
	cr_assert(!cs.on && !sv.s.on);
	close(fd);
}

Test(auth, unknown_key_is_refused)
{
	struct auth_sess cs;
	struct srv sv;
	char err[256] = "";
	int fd;

	cr_assert_eq(shake("client.bob", key_a, &sv, &cs, &fd, err, sizeof(err)), -EACCES);
	cr_assert(strstr(sv.why, "unknown key"), "%s", sv.why);
	close(fd);
}

/* The miss hook (keydb_on_miss): what "ZooKeeper" holds, and whether a
 * reload (a keydb_replace) comes while it is read. */
static int hook_calls, hook_reload;

static int hook_bob(void *arg, const char *name, struct keydb_ent *out)
{
	(void)arg;
	hook_calls++;
	if (strcmp(name, "client.bob"))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	memcpy(out->key, key_b, AUTH_KEY_BYTES);
	if (hook_reload)        /* e.g. `sdfs auth rm` meanwhile */
		cr_assert_eq(keydb_replace(db, NULL, 0), 0);
	return 0;
}

Test(auth, a_key_added_before_the_reload_gets_in_through_the_miss_hook)
{
	struct auth_sess cs;
	struct keydb_ent e;
	struct srv sv;
	char err[256] = "";
	int fd;

	keydb_on_miss(db, hook_bob, NULL);
	cr_assert_eq(shake("client.bob", key_b, &sv, &cs, &fd, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(sv.ret, 0, "%s", sv.why);
	close(fd);
	cr_assert_eq(keydb_get(db, "client.bob", &e), 0);
	cr_assert_eq(hook_calls, 1, "kept: no second read");
	/* an unknown name is still refused, after its one read */
	cr_assert_eq(shake("client.eve", key_b, &sv, &cs, &fd, err, sizeof(err)), -EACCES);
	cr_assert(strstr(sv.why, "unknown key"), "%s", sv.why);
	cr_assert_eq(hook_calls, 2);
	close(fd);
	/* a removed key is not read again for a connection's re-check */
	cr_assert_eq(keydb_remove(db, "client.bob"), 0);
	cr_assert_eq(keydb_valid(db, "client.bob", key_b, wall_now_ms()), 0);
	cr_assert_eq(hook_calls, 2);
}

Test(auth, a_key_read_while_the_table_reloads_is_not_kept)
{
	struct keydb_ent e;

	keydb_on_miss(db, hook_bob, NULL);
	hook_reload = 1;
	/* this lookup gets what was read, the table keeps the reload's */
	cr_assert_eq(keydb_fetch(db, "client.bob", &e), 0);
	cr_assert_eq(keydb_count(db), 0);
	hook_reload = 0;
	cr_assert_eq(keydb_get(db, "client.bob", &e), -ENOENT);
}

Test(auth, previous_key_only_within_its_grace)
{
	struct auth_sess cs;
	struct srv sv;
	char err[256] = "";
	int fd;

	put_key("client.alice", key_b, key_a, wall_now_ms() + 60000, "rw");
	cr_assert_eq(shake("client.alice", key_a, &sv, &cs, &fd, err, sizeof(err)), 0,
		     "%s", err);
	close(fd);
	cr_assert_eq(shake("client.alice", key_b, &sv, &cs, &fd, err, sizeof(err)), 0,
		     "%s", err);
	close(fd);
	put_key("client.alice", key_b, key_a, wall_now_ms() - 1, "rw");
	cr_assert_eq(shake("client.alice", key_a, &sv, &cs, &fd, err, sizeof(err)),
		     -EACCES);
	close(fd);
}

/* A session's key is re-checked: removed, or rotated past the grace. */
Test(auth, a_session_key_stops_being_valid)
{
	struct auth_sess cs;
	struct srv sv;
	char err[256] = "";
	int fd;

	put_key("client.alice", key_a, key_b, wall_now_ms() + 60000, "rw");
	cr_assert_eq(shake("client.alice", key_b, &sv, &cs, &fd, err, sizeof(err)), 0,
		     "%s", err);
	close(fd);
	cr_assert_arr_eq(sv.key_used, key_b, AUTH_KEY_BYTES);
	cr_assert(auth_still_valid(db, "client.alice", sv.key_used));
	put_key("client.alice", key_a, key_b, wall_now_ms() - 1, "rw");
	cr_assert(!auth_still_valid(db, "client.alice", sv.key_used), "past its grace");
	cr_assert(auth_still_valid(db, "client.alice", key_a));
	cr_assert_eq(keydb_remove(db, "client.alice"), 0);
	cr_assert(!auth_still_valid(db, "client.alice", key_a), "removed");
}

/* Frames over an established session: @n of them, each checked. */
static void send_recv(struct auth_sess *tx, struct auth_sess *rx, int wfd, int rfd)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_NODE_INFO, .req_id = 7 }, got;
	uint8_t hb[SDFS_HDR_SIZE], pl[100], tag[AUTH_TAG_BYTES];
	const char *msg = "hello";

	h.payload_len = 5;
	cr_assert_eq(auth_send_frame(wfd, tx, &h, msg, 0), 0);
	cr_assert_eq(net_read_full(rfd, hb, sizeof(hb), net_now_ms() + 2000), 0);
	cr_assert_eq(proto_hdr_decode(hb, 100, &got), 0);
	cr_assert_eq(net_read_full(rfd, pl, got.payload_len, net_now_ms() + 2000), 0);
	cr_assert_eq(net_read_full(rfd, tag, sizeof(tag), net_now_ms() + 2000), 0);
	cr_assert_eq(auth_check(rx, hb, pl, got.payload_len, tag), 0);
	cr_assert_arr_eq(pl, msg, 5);
}

Test(auth, session_frames_pass_both_ways)
{
	struct auth_sess cs;
	struct srv sv;
	char err[256] = "";
	int sp[2], fd;

	cr_assert_eq(shake("client.alice", key_a, &sv, &cs, &fd, err, sizeof(err)), 0,
		     "%s", err);
	close(fd);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	for (int i = 0; i < 5; i++) {
		send_recv(&cs, &sv.s, sp[0], sp[1]);
		send_recv(&sv.s, &cs, sp[1], sp[0]);
	}
	close(sp[0]);
	close(sp[1]);
}

/* A session pair made by hand from the step functions. */
static void pair(struct auth_sess *c, struct auth_sess *s)
{
	struct auth_sess cs;
	struct srv sv;
	char err[256] = "";
	int fd;

	cr_assert_eq(shake("client.alice", key_a, &sv, &cs, &fd, err, sizeof(err)), 0,
		     "%s", err);
	close(fd);
	*c = cs;
	*s = sv.s;
}

/* The frames checks, on a session with algorithm @alg. */
static void altered_replayed_reordered_injected(unsigned alg)
{
	struct auth_sess c, s, s0;
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_WRITE, .oid = 42, .epoch = 3 };
	uint8_t hb1[SDFS_HDR_SIZE], hb2[SDFS_HDR_SIZE], pl[4096];
	uint8_t t1[AUTH_TAG_BYTES], t2[AUTH_TAG_BYTES], tx[AUTH_TAG_BYTES];

	randombytes_buf(pl, sizeof(pl));
	h.payload_len = sizeof(pl);
	auth_algs_limit(alg);
	pair(&c, &s);
	auth_algs_limit(~0u);
	cr_assert_eq(c.alg, alg, "%s", auth_alg_name(c.alg));
	cr_assert_eq(s.alg, alg);
	s0 = s;
	h.req_id = 1;
	proto_hdr_encode(&h, pl, hb1);
	auth_tag(&c, hb1, pl, sizeof(pl), t1);
	h.req_id = 2;
	proto_hdr_encode(&h, pl, hb2);
	auth_tag(&c, hb2, pl, sizeof(pl), t2);

	/* in order: both pass */
	cr_assert_eq(auth_check(&s, hb1, pl, sizeof(pl), t1), 0);
	cr_assert_eq(auth_check(&s, hb2, pl, sizeof(pl), t2), 0);
	/* replayed: the first again */
	cr_assert_eq(auth_check(&s, hb1, pl, sizeof(pl), t1), -EBADMSG);

	/* reordered */
	s = s0;
	cr_assert_eq(auth_check(&s, hb2, pl, sizeof(pl), t2), -EBADMSG);

	/* a payload byte flipped */
	s = s0;
	pl[100] ^= 1;
	cr_assert_eq(auth_check(&s, hb1, pl, sizeof(pl), t1), -EBADMSG);
	pl[100] ^= 1;

	/* a header field changed, its checksum fixed: still caught */
	s = s0;
	hb1[24] ^= 0x80;        /* oid */
	cr_assert_eq(auth_check(&s, hb1, pl, sizeof(pl), t1), -EBADMSG);
	hb1[24] ^= 0x80;

	/* injected: tagged by someone without the session key */
	s = s0;
	{
		struct auth_sess fake, other;

		/* another session's keys, at the same counter */
		auth_algs_limit(alg);
		pair(&fake, &other);
		auth_algs_limit(~0u);
		cr_assert_eq(fake.alg, alg);
		auth_tag(&fake, hb1, pl, sizeof(pl), tx);
		cr_assert_eq(auth_check(&s, hb1, pl, sizeof(pl), tx), -EBADMSG);
	}
	/* the server's own tags do not pass as the client's (directions) */
	s = s0;
	{
		struct auth_sess srv_tx = s0;

		auth_tag(&srv_tx, hb1, pl, sizeof(pl), tx);
		cr_assert_eq(auth_check(&s, hb1, pl, sizeof(pl), tx), -EBADMSG);
	}
}

Test(auth, altered_replayed_reordered_and_injected_frames_fail_chacha20_poly1305)
{
	altered_replayed_reordered_injected(AUTH_ALG_CHACHA20_POLY1305);
}

Test(auth, altered_replayed_reordered_and_injected_frames_fail_aes256_gcm)
{
	if (!crypto_aead_aes256gcm_is_available())
		cr_skip_test("no AES-NI/PCLMUL here");
	altered_replayed_reordered_injected(AUTH_ALG_AES256_GCM);
}

/* A GMAC tag and a Poly1305 one of the same frame differ (the
 * algorithm is really in use), and a frame tagged under one does not
 * pass a session of the other with the same keys. */
Test(auth, the_algorithms_do_not_mix)
{
	struct auth_sess c, s, c2;
	uint8_t hb[SDFS_HDR_SIZE] = { 1 }, pl[300], t1[AUTH_TAG_BYTES], t2[AUTH_TAG_BYTES];

	if (!crypto_aead_aes256gcm_is_available())
		cr_skip_test("no AES-NI/PCLMUL here");
	randombytes_buf(pl, sizeof(pl));
	pair(&c, &s);
	cr_assert_eq(c.alg, AUTH_ALG_AES256_GCM);
	c2 = c;
	c2.alg = AUTH_ALG_CHACHA20_POLY1305;
	auth_tag(&c, hb, pl, sizeof(pl), t1);
	auth_tag(&c2, hb, pl, sizeof(pl), t2);
	cr_assert(memcmp(t1, t2, sizeof(t1)));
	cr_assert_eq(auth_check(&s, hb, pl, sizeof(pl), t2), -EBADMSG);
}

/* The handshake by hand; @limit_c / @limit_s: the algorithms the client
 * offers / the server accepts. Returns the sessions' algorithm. */
static unsigned negotiate(unsigned limit_c, unsigned limit_s)
{
	struct auth_client ac;
	struct auth_server as;
	struct auth_cred cred = { .name = "client.alice" };
	struct auth_sess cs = { 0 }, ss = { 0 };
	struct auth_ident who;
	struct sdfs_hdr h;
	uint8_t buf[AUTH_FRAME_MAX], out[AUTH_FRAME_MAX];
	size_t len, olen;
	char err[256], why[256];

	memcpy(cred.key, key_a, AUTH_KEY_BYTES);
	auth_server_init(&as, db);
	auth_algs_limit(limit_c);
	len = auth_client_hello(&ac, &cred, 1, buf);
	auth_algs_limit(limit_s);
	cr_assert_eq(proto_hdr_decode(buf, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_server_step(&as, &h, buf + SDFS_HDR_SIZE, out, &olen, &ss, &who,
				      why, sizeof(why)), 0, "%s", why);
	auth_algs_limit(~0u);
	cr_assert_eq(proto_hdr_decode(out, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_client_challenge(&ac, &h, out + SDFS_HDR_SIZE, buf, &len, err,
					   sizeof(err)), 0, "%s", err);
	cr_assert_eq(proto_hdr_decode(buf, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_server_step(&as, &h, buf + SDFS_HDR_SIZE, out, &olen, &ss, &who,
				      why, sizeof(why)), 1, "%s", why);
	cr_assert_eq(proto_hdr_decode(out, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_client_done(&ac, &h, out + SDFS_HDR_SIZE, &cs, NULL, 0, err,
				      sizeof(err)), 0, "%s", err);
	cr_assert_eq(cs.alg, ss.alg);
	/* and frames pass both ways under it */
	{
		uint8_t hb[SDFS_HDR_SIZE] = { 7 }, pl[64] = { 9 }, tag[AUTH_TAG_BYTES];

		auth_tag(&cs, hb, pl, sizeof(pl), tag);
		cr_assert_eq(auth_check(&ss, hb, pl, sizeof(pl), tag), 0);
		auth_tag(&ss, hb, pl, sizeof(pl), tag);
		cr_assert_eq(auth_check(&cs, hb, pl, sizeof(pl), tag), 0);
	}
	return cs.alg;
}

Test(auth, both_ends_agree_on_the_best_algorithm_they_share)
{
	cr_assert_eq(negotiate(~0u, ~0u), best_alg());
	/* a client without AES-NI offers ChaCha20-Poly1305 only */
	cr_assert_eq(negotiate(AUTH_ALG_CHACHA20_POLY1305, ~0u),
		     AUTH_ALG_CHACHA20_POLY1305);
	/* a server without AES-NI picks it from a full offer */
	cr_assert_eq(negotiate(~0u, AUTH_ALG_CHACHA20_POLY1305),
		     AUTH_ALG_CHACHA20_POLY1305);
	/* ChaCha20-Poly1305 cannot be limited away: always the fallback */
	cr_assert_eq(negotiate(0, 0), AUTH_ALG_CHACHA20_POLY1305);
}

/* Rewrite the handshake frame @buf's payload byte @off (its header's
 * payload checksum fixed, as a man in the middle would). */
static void rewrite(uint8_t *buf, size_t off, uint8_t val)
{
	struct sdfs_hdr h;

	cr_assert_eq(proto_hdr_decode(buf, AUTH_FRAME_MAX, &h), 0);
	buf[SDFS_HDR_SIZE + off] = val;
	proto_hdr_encode(&h, buf + SDFS_HDR_SIZE, buf);
}

Test(auth, a_pick_not_offered_or_an_altered_offer_fails)
{
	struct auth_client ac;
	struct auth_server as;
	struct auth_cred cred = { .name = "client.alice" };
	struct auth_sess ss = { 0 };
	struct auth_ident who;
	struct sdfs_hdr h;
	uint8_t buf[AUTH_FRAME_MAX], out[AUTH_FRAME_MAX];
	size_t len, olen;
	char err[256], why[256];

	memcpy(cred.key, key_a, AUTH_KEY_BYTES);

	/* the server's pick rewritten to one the client did not offer */
	auth_server_init(&as, db);
	auth_algs_limit(AUTH_ALG_CHACHA20_POLY1305);
	len = auth_client_hello(&ac, &cred, 1, buf);
	auth_algs_limit(~0u);
	cr_assert_eq(proto_hdr_decode(buf, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_server_step(&as, &h, buf + SDFS_HDR_SIZE, out, &olen, &ss, &who,
				      why, sizeof(why)), 0, "%s", why);
	rewrite(out, AUTH_NONCE_BYTES, AUTH_ALG_AES256_GCM);
	cr_assert_eq(proto_hdr_decode(out, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_client_challenge(&ac, &h, out + SDFS_HDR_SIZE, buf, &len, err,
					   sizeof(err)), -EPROTO);
	cr_assert(strstr(err, "not one we offered"), "%s", err);

	/* the offer cut down on the way (a downgrade): the proofs fail */
	auth_server_init(&as, db);
	len = auth_client_hello(&ac, &cred, 1, buf);
	rewrite(buf, AUTH_NONCE_BYTES, AUTH_ALG_CHACHA20_POLY1305);
	cr_assert_eq(proto_hdr_decode(buf, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_server_step(&as, &h, buf + SDFS_HDR_SIZE, out, &olen, &ss, &who,
				      why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(proto_hdr_decode(out, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_client_challenge(&ac, &h, out + SDFS_HDR_SIZE, buf, &len, err,
					   sizeof(err)), 0, "%s", err);
	cr_assert_eq(proto_hdr_decode(buf, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_server_step(&as, &h, buf + SDFS_HDR_SIZE, out, &olen, &ss, &who,
				      why, sizeof(why)), -EACCES);
	cr_assert(strstr(why, "wrong key"), "%s", why);
	cr_assert(!ss.on);

	/* an offer of nothing we run: refused */
	auth_server_init(&as, db);
	len = auth_client_hello(&ac, &cred, 1, buf);
	rewrite(buf, AUTH_NONCE_BYTES, 0x80);
	cr_assert_eq(proto_hdr_decode(buf, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_server_step(&as, &h, buf + SDFS_HDR_SIZE, out, &olen, &ss, &who,
				      why, sizeof(why)), -EACCES);
	cr_assert(strstr(why, "no frame MAC algorithm in common"), "%s", why);
}

Test(auth, client_refuses_a_server_that_does_not_know_its_key)
{
	struct auth_client ac;
	struct auth_server as;
	struct auth_cred cred = { .name = "client.alice" };
	struct auth_sess cs = { 0 }, ss = { 0 };
	struct auth_ident who;
	struct sdfs_hdr h;
	uint8_t buf[AUTH_FRAME_MAX], out[AUTH_FRAME_MAX];
	size_t len, olen;
	char err[256], why[256];

	memcpy(cred.key, key_a, AUTH_KEY_BYTES);
	auth_server_init(&as, db);
	len = auth_client_hello(&ac, &cred, 1, buf);
	cr_assert_eq(proto_hdr_decode(buf, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_server_step(&as, &h, buf + SDFS_HDR_SIZE, out, &olen, &ss, &who,
				      why, sizeof(why)), 0);
	cr_assert_eq(proto_hdr_decode(out, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_client_challenge(&ac, &h, out + SDFS_HDR_SIZE, buf, &len, err,
					   sizeof(err)), 0, "%s", err);
	cr_assert_eq(proto_hdr_decode(buf, AUTH_FRAME_MAX, &h), 0);
	cr_assert_eq(auth_server_step(&as, &h, buf + SDFS_HDR_SIZE, out, &olen, &ss, &who,
				      why, sizeof(why)), 1, "%s", why);
	/* a man in the middle answers in its stead: its proof is wrong */
	cr_assert_eq(proto_hdr_decode(out, AUTH_FRAME_MAX, &h), 0);
	out[SDFS_HDR_SIZE] ^= 1;
	cr_assert_eq(auth_client_done(&ac, &h, out + SDFS_HDR_SIZE, &cs, NULL, 0, err,
				      sizeof(err)), -EACCES);
	cr_assert(!cs.on);
	cr_assert(strstr(err, "did not prove"), "%s", err);
}

Test(auth, unauthenticated_request_gets_res_auth)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_READ, .req_id = 9, .length = 10 }, r;
	struct auth_sess s = { 0 };
	struct auth_ident who;
	char why[256];
	int sp[2];
	uint8_t hb[SDFS_HDR_SIZE], pl[AUTH_REASON_MAX];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	cr_assert_eq(auth_send_frame(sp[0], NULL, &h, NULL, 0), 0);
	cr_assert_eq(auth_server_run(sp[1], db, 2000, &s, &who, NULL, why, sizeof(why)),
		     -EACCES);
	cr_assert(strstr(why, "unauthenticated OBJ_READ"), "%s", why);
	cr_assert_eq(net_read_full(sp[0], hb, sizeof(hb), net_now_ms() + 2000), 0);
	cr_assert_eq(proto_hdr_decode(hb, AUTH_REASON_MAX, &r), 0);
	cr_assert_eq(r.result, SDFS_RES_AUTH);
	cr_assert_eq(r.req_id, 9);
	cr_assert_eq(proto_res_to_errno(r.result), -EACCES);
	cr_assert_eq(net_read_full(sp[0], pl, r.payload_len, net_now_ms() + 2000), 0);
	close(sp[0]);
	close(sp[1]);
}

/* A 1.x peer: a header with major 1 either way. */
Test(auth, old_peers_get_a_clear_error)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_NODE_INFO, .req_id = 3 }, r;
	struct auth_cred cred = { .name = "client.alice" };
	struct auth_sess s = { 0 };
	struct auth_ident who;
	char why[256], err[256];
	uint8_t hb[SDFS_HDR_SIZE];
	int sp[2];

	/* a 1.x client to a 2.0 server: BAD_VERSION */
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	proto_hdr_encode(&h, NULL, hb);
	hb[4] = 1;
	hb[5] = 9;
	{
		uint64_t x = XXH3_64bits(hb, 60);
		uint32_t c = (uint32_t)x;

		memcpy(hb + 60, &c, 4);      /* little-endian host (x86, arm) */
	}
	cr_assert_eq(write(sp[0], hb, sizeof(hb)), (ssize_t)sizeof(hb));
	cr_assert_eq(auth_server_run(sp[1], db, 2000, &s, &who, NULL, why, sizeof(why)),
		     -EPROTONOSUPPORT);
	cr_assert(strstr(why, "1.x"), "%s", why);
	cr_assert_eq(net_read_full(sp[0], hb, sizeof(hb), net_now_ms() + 2000), 0);
	cr_assert_eq(proto_hdr_decode(hb, 0, &r), 0);
	cr_assert_eq(r.result, SDFS_RES_BAD_VERSION);
	close(sp[0]);
	close(sp[1]);

	/* a 2.0 client to a 1.x server, which answers BAD_VERSION as 1.x */
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	proto_reply_init(&r, &h, SDFS_RES_BAD_VERSION);
	proto_hdr_encode(&r, NULL, hb);
	hb[4] = 1;
	{
		uint64_t x = XXH3_64bits(hb, 60);
		uint32_t c = (uint32_t)x;

		memcpy(hb + 60, &c, 4);
	}
	cr_assert_eq(write(sp[1], hb, sizeof(hb)), (ssize_t)sizeof(hb));
	memcpy(cred.key, key_a, AUTH_KEY_BYTES);
	cr_assert_eq(auth_client_run(sp[0], &cred, 2000, &s, NULL, 0, err, sizeof(err)),
		     -EPROTONOSUPPORT);
	cr_assert(strstr(err, "peer speaks protocol 1.x"), "%s", err);
	close(sp[0]);
	close(sp[1]);
}

static double tag_ns(unsigned alg, size_t len, int iters)
{
	struct auth_sess c, s;
	struct timespec a, b;
	uint8_t hb[SDFS_HDR_SIZE] = { 0 }, tag[AUTH_TAG_BYTES];
	uint8_t *pl = malloc(len);

	cr_assert(pl);
	randombytes_buf(pl, len);
	auth_algs_limit(alg);
	pair(&c, &s);
	auth_algs_limit(~0u);
	cr_assert_eq(c.alg, alg);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < iters; i++)
		auth_tag(&c, hb, pl, len, tag);
	clock_gettime(CLOCK_MONOTONIC, &b);
	free(pl);
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / iters;
}

/* Not a check: what a tag costs here (docs/protocol.md quotes it). */
Test(auth, tag_speed_is_printed)
{
	unsigned algs[] = { AUTH_ALG_CHACHA20_POLY1305, AUTH_ALG_AES256_GCM };

	for (int i = 0; i < 2; i++) {
		if (algs[i] == AUTH_ALG_AES256_GCM && !crypto_aead_aes256gcm_is_available())
			continue;
		double t4k = tag_ns(algs[i], 4096, 20000), t1m = tag_ns(algs[i], 1 << 20, 200);

		cr_log_info("frame tag %s: 4 KiB %.2f us (%.0f MB/s), 1 MiB %.0f us (%.0f MB/s)",
			    auth_alg_name(algs[i]), t4k / 1e3, 4096 / t4k * 1e3, t1m / 1e3,
			    (1 << 20) / t1m * 1e3);
		fprintf(stderr, "frame tag %s: 4 KiB %.2f us (%.0f MB/s), 1 MiB %.0f us "
			"(%.0f MB/s)\n", auth_alg_name(algs[i]), t4k / 1e3, 4096 / t4k * 1e3,
			t1m / 1e3, (1 << 20) / t1m * 1e3);
	}
}

/* On a tagged connection the payload checksum is 0 and not checked (the
 * tag covers the payload); on a plain one it is sent and checked. */
Test(auth, tagged_frames_carry_no_payload_checksum)
{
	struct auth_sess c, s, plain = { 0 };
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_WRITE, .oid = 5 }, got;
	uint8_t hb[SDFS_HDR_SIZE], pl[1000], tag[AUTH_TAG_BYTES];

	randombytes_buf(pl, sizeof(pl));
	h.payload_len = sizeof(pl);
	pair(&c, &s);
	auth_hdr_encode(&c, &h, pl, hb);
	cr_assert_eq(proto_hdr_decode(hb, sizeof(pl), &got), 0);
	cr_assert_eq(got.payload_csum, 0);
	auth_tag(&c, hb, pl, sizeof(pl), tag);
	cr_assert_eq(auth_check(&s, hb, pl, sizeof(pl), tag), 0);
	cr_assert_eq(auth_payload_check(&s, &got, pl), 0);
	/* a payload byte changed: the tag catches it */
	pl[3] ^= 1;
	auth_tag(&c, hb, pl, sizeof(pl), tag);
	pl[3] ^= 1;
	cr_assert_eq(auth_check(&s, hb, pl, sizeof(pl), tag), -EBADMSG);

	/* untagged: the checksum is there and checked */
	auth_hdr_encode(&plain, &h, pl, hb);
	cr_assert_eq(proto_hdr_decode(hb, sizeof(pl), &got), 0);
	cr_assert_neq(got.payload_csum, 0);
	cr_assert_eq(auth_payload_check(&plain, &got, pl), 0);
	cr_assert_eq(auth_payload_check(NULL, &got, pl), 0);
	pl[3] ^= 1;
	cr_assert_eq(auth_payload_check(&plain, &got, pl), -EPROTO);
}
