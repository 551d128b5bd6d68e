/*
 * auth_wire_test.c - authentication on the wire (common/auth.h) against
 * a real blockd and a real sdfs-mds: a request without the handshake
 * gets SDFS_RES_AUTH and changes nothing; a wrong or unknown key is
 * refused and logged with the peer's address; a replayed or altered
 * frame (its checksums recomputed) closes the connection and changes
 * nothing; the right key works; a libsdfs handle without a key gets
 * EACCES; and 10,000 random frames per daemon port from peers without
 * a key crash nothing.
 *
 * The cluster is `sdfs dev up`'s, with its keys (the cluster requires
 * authentication; each daemon has its own key); the test adds a key of
 * its own (admin caps) with the admin keyring dev up wrote, DIR/keyring. Random frames derive from a logged seed
 * (SDFS_TEST_SEED=... repeats them).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/cmap.h"
#include "common/conf.h"
#include "common/coord.h"
#include "common/coord_auth.h"
#include "common/keys.h"
#include "common/proto.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/tkeys.h"
#include "tests/cluster/wire.h"

#define ROOT 1
#define WAIT_MS 5000
#define NFUZZ 10000
#define CLIENT_KEY "client.t"   /* the test's own (admin caps) */

static struct tcluster *tc;
static struct sdfs *cl;         /* authenticated handle */
static char blockd_addr[80], mds_addr[80];
static char client_keyring[600];
static uint8_t secret[AUTH_KEY_BYTES], client_key[AUTH_KEY_BYTES];
static struct coord_cred admin_cred;    /* dev up's DIR/keyring */
static uint64_t req_ids = 9000;

/* An admin ZooKeeper session of the test's cluster (close it). */
static struct coord *admin_coord(void)
{
	struct sdfs_conf conf;
	struct coord *c;
	char err[256];

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(coord_open_cred(conf.zk, conf.cluster, &admin_cred, 5000, 10000, NULL,
				     NULL, &c), 0);
	return c;
}

/* The authenticated handle can make and remove a directory. */
static int serves(const char *name)
{
	struct sdfs_stat st;
	int ret = sdfs_ns_mkdir(cl, ROOT, name, 0755, 0, 0, &st);

	if (ret && ret != -EEXIST)
		return ret;
	return sdfs_ns_rmdir(cl, ROOT, name);
}

static void auth_up(unsigned nblockd, unsigned copies)
{
	struct sdfs_conf conf;
	struct sdfs_mds_status ms;
	struct keyring admin;
	struct coord *c;
	char path[600], err[256];
	int ret = -1;

	tc = tcluster_start(&(struct tcluster_opts){ .blockd = nblockd, .copies = copies,
						      .mds = 1 });
	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	snprintf(path, sizeof(path), "%s/keyring", tcluster_dir(tc));
	cr_assert_eq(keyring_load(path, &admin, err, sizeof(err)), 0, "%s", err);
	cr_assert(admin.has_secret, "dev up's admin keyring has no secret");
	memcpy(secret, admin.secret, AUTH_KEY_BYTES);
	cr_assert_eq(coord_cred_from_keyring(&admin, &admin_cred), 0);
	c = admin_coord();
	auth_random_key(client_key);
	tkeys_put(c, secret, CLIENT_KEY, client_key, "admin");
	coord_close(c);
	snprintf(client_keyring, sizeof(client_keyring), "%s/client.keyring",
		 tcluster_dir(tc));
	tkeys_save_client(client_keyring, secret, CLIENT_KEY, client_key);
	cr_assert_eq(sdfs_connect_keyring(conf.zk, conf.cluster, 10000, client_keyring,
					  &cl, err, sizeof(err)), 0, "%s", err);
	/* the daemons' key tables follow ZooKeeper: the new key shortly */
	for (int64_t end = tnow_ms() + 30000; ret && tnow_ms() < end; tsleep_ms(200))
		ret = serves("ready");
	cr_assert_eq(ret, 0, "the cluster does not serve the test's key: %s",
		     strerror(-ret));
	tcluster_node_addr(tc, "blockd.0", blockd_addr, sizeof(blockd_addr));
	cr_assert_eq(sdfs_mds_status(cl, &ms), 0);
	cr_assert(ms.has_active && ms.reachable);
	snprintf(mds_addr, sizeof(mds_addr), "%s", ms.addr);
	free(ms.list);
}

static void up(void)
{
	auth_up(1, 1);
}

static void down(void)
{
	sdfs_close(cl);
	tcluster_stop(tc);
}

TestSuite(auth_wire, .init = up, .fini = down, .timeout = 300);

/* ---- helpers ---- */

static int authed(const char *addr, struct auth_sess *s)
{
	char err[256];
	int fd = wire_connect(addr);
	int ret = wire_auth(fd, CLIENT_KEY, client_key, s, err, sizeof(err));

	cr_assert_eq(ret, 0, "handshake with %s: %s", addr, err);
	return fd;
}

static struct sdfs_hdr write_req(uint64_t oid, size_t len)
{
	return (struct sdfs_hdr){ .opcode = SDFS_OP_OBJ_WRITE, .flags = SDFS_F_CREATE,
				  .req_id = req_ids++, .oid = oid,
				  .epoch = (uint32_t)tcluster_epoch(tc),
				  .payload_len = (uint32_t)len };
}

/* What the authenticated handle reads of @oid: its bytes into @buf. */
static ssize_t obj_now(uint64_t oid, char *buf, size_t len)
{
	return sdfs_obj_read(cl, oid, buf, len, 0);
}

/* The refusal on @fd: SDFS_RES_AUTH with a reason, then closed. */
static void assert_refused(int fd, uint64_t req_id, const char *what)
{
	struct sdfs_hdr r;
	char reason[AUTH_REASON_MAX + 1] = "";

	cr_assert_eq(wire_recv_hdr(fd, &r, WAIT_MS), 0, "%s: no answer", what);
	cr_assert_eq(r.result, SDFS_RES_AUTH, "%s: result %u", what, r.result);
	cr_assert_eq(r.req_id, req_id, "%s", what);
	cr_assert_leq(r.payload_len, AUTH_REASON_MAX);
	cr_assert_eq(wire_recv(fd, reason, r.payload_len, WAIT_MS), 0);
	cr_log_info("%s: refused: %s", what, reason);
	cr_assert(strstr(reason, "authentication"), "%s: reason '%s'", what, reason);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0, "%s: still open", what);
}

/* The daemons log refusals at most every 3 s per line of code: pace
 * (never a check) so that the one a test looks for is written. The
 * suite runs one test at a time (meson.build). */
static void pace_logs(void)
{
	tsleep_ms(3500);
}

/* The daemon @name logged a refusal for the peer at @local. */
static void assert_logged(const char *name, int fd, const char *what)
{
	char local[64], needle[96];
	char *line;

	wire_local_addr(fd, local, sizeof(local));
	snprintf(needle, sizeof(needle), "peer=%s", local);
	line = tcluster_log_line(tc, name, needle, WAIT_MS);
	cr_assert(line, "%s: %s logged nothing for %s", what, name, needle);
	cr_log_info("%s: %s", what, line);
	free(line);
}

/* ---- blockd ---- */

Test(auth_wire, blockd_refuses_a_request_without_handshake_and_changes_nothing)
{
	char data[8192], back[16];
	struct sdfs_hdr h = write_req(0x5a0001, sizeof(data));
	int fd = wire_connect(blockd_addr);

	tfill_random(data, sizeof(data), 1);
	pace_logs();
	cr_assert_eq(wire_send_req(fd, &h, data), 0);
	assert_refused(fd, h.req_id, "blockd, unauthenticated OBJ_WRITE");
	assert_logged("blockd.0", fd, "blockd, unauthenticated");
	close(fd);
	cr_assert_eq(obj_now(0x5a0001, back, sizeof(back)), -ENOENT,
		     "the refused write happened");
}

static void wrong_keys(const char *addr, const char *name)
{
	uint8_t bad[AUTH_KEY_BYTES];
	struct auth_sess s;
	char err[256];
	int fd;

	auth_random_key(bad);
	fd = wire_connect(addr);
	pace_logs();
	cr_assert_eq(wire_auth(fd, CLIENT_KEY, bad, &s, err, sizeof(err)), -EACCES);
	cr_log_info("%s, wrong key: %s", name, err);
	cr_assert(strstr(err, CLIENT_KEY), "%s", err);
	cr_assert(!s.on);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0);
	assert_logged(name, fd, "wrong key");
	close(fd);
	fd = wire_connect(addr);
	cr_assert_eq(wire_auth(fd, "client.nobody", client_key, &s, err, sizeof(err)),
		     -EACCES);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0);
	close(fd);
}

Test(auth_wire, blockd_refuses_wrong_and_unknown_keys)
{
	wrong_keys(blockd_addr, "blockd.0");
}

/* Write @data to @oid on an authenticated connection; the reply OK. */
static void auth_write(int fd, struct auth_sess *s, uint64_t oid, const void *data,
		       size_t len, uint8_t *frame, size_t *flen)
{
	struct sdfs_hdr h = write_req(oid, len), r;
	uint8_t rb[64];

	*flen = wire_frame_auth(s, &h, data, frame);
	cr_assert_eq(wire_send(fd, frame, *flen), 0);
	cr_assert_eq(wire_recv_reply_auth(fd, s, &r, rb, sizeof(rb), WAIT_MS), 0);
	cr_assert_eq(r.result, SDFS_RES_OK, "write: result %u", r.result);
}

Test(auth_wire, blockd_replayed_frame_closes_the_connection_and_changes_nothing)
{
	char a[4096], b[4096], back[4096];
	uint8_t fa[SDFS_HDR_SIZE + 4096 + AUTH_TAG_BYTES], fb[sizeof(fa)];
	struct auth_sess s;
	size_t la, lb;
	int fd = authed(blockd_addr, &s);

	tfill_random(a, sizeof(a), 2);
	tfill_random(b, sizeof(b), 3);
	auth_write(fd, &s, 0x5a0002, a, sizeof(a), fa, &la);
	auth_write(fd, &s, 0x5a0002, b, sizeof(b), fb, &lb);
	/* the first write again, byte for byte: an old frame replayed */
	pace_logs();
	cr_assert_eq(wire_send(fd, fa, la), 0);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0, "a replayed frame was taken");
	assert_logged("blockd.0", fd, "blockd, replayed");
	close(fd);
	cr_assert_eq(obj_now(0x5a0002, back, sizeof(back)), (ssize_t)sizeof(b));
	cr_assert_arr_eq(back, b, sizeof(b), "the replayed write happened");
}

Test(auth_wire, blockd_altered_frame_closes_the_connection_and_changes_nothing)
{
	char a[4096], b[4096], back[4096];
	uint8_t fa[SDFS_HDR_SIZE + 4096 + AUTH_TAG_BYTES], fb[sizeof(fa)];
	struct sdfs_hdr h;
	struct auth_sess s;
	size_t la, lb;
	int fd = authed(blockd_addr, &s);

	tfill_random(a, sizeof(a), 4);
	tfill_random(b, sizeof(b), 5);
	auth_write(fd, &s, 0x5a0003, a, sizeof(a), fa, &la);
	/* a second write, one payload byte flipped on the way, its
	 * checksums made right again: only the tag can tell */
	h = write_req(0x5a0003, sizeof(b));
	lb = wire_frame_auth(&s, &h, b, fb);
	fb[SDFS_HDR_SIZE + 100] ^= 0x01;
	wire_fix_csums(fb);
	pace_logs();
	cr_assert_eq(wire_send(fd, fb, lb), 0);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0, "an altered frame was taken");
	assert_logged("blockd.0", fd, "blockd, altered");
	close(fd);
	cr_assert_eq(obj_now(0x5a0003, back, sizeof(back)), (ssize_t)sizeof(a));
	cr_assert_arr_eq(back, a, sizeof(a), "the altered write happened");
}

Test(auth_wire, blockd_serves_the_right_key)
{
	char a[4096], back[4096];
	uint8_t fa[SDFS_HDR_SIZE + 4096 + AUTH_TAG_BYTES];
	struct sdfs_hdr h, r;
	struct auth_sess s;
	size_t la;
	int fd = authed(blockd_addr, &s);

	tfill_random(a, sizeof(a), 6);
	auth_write(fd, &s, 0x5a0004, a, sizeof(a), fa, &la);
	h = (struct sdfs_hdr){ .opcode = SDFS_OP_OBJ_READ, .req_id = req_ids++,
			       .oid = 0x5a0004, .length = sizeof(back) };
	for (int i = 0; i < 3; i++) {   /* the session goes on frame after frame */
		h.req_id = req_ids++;
		cr_assert_eq(wire_send_req_auth(fd, &s, &h, NULL), 0);
		cr_assert_eq(wire_recv_reply_auth(fd, &s, &r, back, sizeof(back), WAIT_MS), 0);
		cr_assert_eq(r.result, SDFS_RES_OK);
		cr_assert_eq(r.payload_len, sizeof(a));
		cr_assert_arr_eq(back, a, sizeof(a));
	}
	close(fd);
}

/* ---- mds ---- */

static size_t ns_frame(uint8_t *buf, unsigned op, uint64_t ino, const char *name,
		       struct sdfs_hdr *h)
{
	struct sdfs_ns_req r = { .client_id = 0xa17e, .seq = req_ids, .ino = ino,
				 .mode = S_IFDIR | 0755 };
	size_t nl = name ? strlen(name) : 0;

	r.name_len = (uint16_t)nl;
	proto_ns_req_encode(&r, buf);
	if (nl)
		memcpy(buf + SDFS_NS_REQ_SIZE, name, nl);
	*h = (struct sdfs_hdr){ .opcode = (uint8_t)op, .req_id = req_ids++, .oid = ino,
				.payload_len = (uint32_t)(SDFS_NS_REQ_SIZE + nl) };
	return SDFS_NS_REQ_SIZE + nl;
}

static int lookup(const char *name)
{
	struct sdfs_stat st;

	return sdfs_ns_lookup(cl, ROOT, name, &st);
}

Test(auth_wire, mds_refuses_a_request_without_handshake_and_changes_nothing)
{
	uint8_t pl[256];
	struct sdfs_hdr h;
	int fd = wire_connect(mds_addr);

	ns_frame(pl, SDFS_OP_NS_MKDIR, ROOT, "stranger", &h);
	pace_logs();
	cr_assert_eq(wire_send_req(fd, &h, pl), 0);
	assert_refused(fd, h.req_id, "mds, unauthenticated NS_MKDIR");
	assert_logged("mds.0", fd, "mds, unauthenticated");
	close(fd);
	cr_assert_eq(lookup("stranger"), -ENOENT, "the refused mkdir happened");
}

Test(auth_wire, mds_refuses_wrong_and_unknown_keys)
{
	wrong_keys(mds_addr, "mds.0");
}

/* An ns request on an authenticated connection; its result. */
static int auth_ns(int fd, struct auth_sess *s, unsigned op, const char *name,
		   uint8_t *frame, size_t *flen)
{
	uint8_t pl[256], rb[4096];
	struct sdfs_hdr h, r;

	ns_frame(pl, op, ROOT, name, &h);
	*flen = wire_frame_auth(s, &h, pl, frame);
	cr_assert_eq(wire_send(fd, frame, *flen), 0);
	cr_assert_eq(wire_recv_reply_auth(fd, s, &r, rb, sizeof(rb), WAIT_MS), 0);
	return proto_ns_result(&r);
}

Test(auth_wire, mds_replayed_frame_closes_the_connection_and_changes_nothing)
{
	uint8_t fa[512], fb[512];
	struct auth_sess s;
	size_t la, lb;
	int fd = authed(mds_addr, &s);

	cr_assert_eq(auth_ns(fd, &s, SDFS_OP_NS_MKDIR, "replayed", fa, &la), 0);
	cr_assert_eq(auth_ns(fd, &s, SDFS_OP_NS_RMDIR, "replayed", fb, &lb), 0);
	pace_logs();
	cr_assert_eq(wire_send(fd, fa, la), 0);         /* the mkdir again */
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0, "a replayed frame was taken");
	assert_logged("mds.0", fd, "mds, replayed");
	close(fd);
	cr_assert_eq(lookup("replayed"), -ENOENT, "the replayed mkdir happened");
}

Test(auth_wire, mds_altered_frame_closes_the_connection_and_changes_nothing)
{
	uint8_t pl[256], fb[512];
	struct sdfs_hdr h;
	struct auth_sess s;
	size_t lb;
	int fd = authed(mds_addr, &s);

	ns_frame(pl, SDFS_OP_NS_MKDIR, ROOT, "altered1", &h);
	lb = wire_frame_auth(&s, &h, pl, fb);
	fb[SDFS_HDR_SIZE + SDFS_NS_REQ_SIZE + 7] = '2';     /* "altered2" */
	wire_fix_csums(fb);
	pace_logs();
	cr_assert_eq(wire_send(fd, fb, lb), 0);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0, "an altered frame was taken");
	assert_logged("mds.0", fd, "mds, altered");
	close(fd);
	cr_assert_eq(lookup("altered1"), -ENOENT);
	cr_assert_eq(lookup("altered2"), -ENOENT, "the altered mkdir happened");
}

Test(auth_wire, mds_serves_the_right_key)
{
	uint8_t f[512];
	struct auth_sess s;
	size_t l;
	int fd = authed(mds_addr, &s);

	cr_assert_eq(auth_ns(fd, &s, SDFS_OP_NS_MKDIR, "rightkey", f, &l), 0);
	cr_assert_eq(auth_ns(fd, &s, SDFS_OP_NS_LOOKUP, "rightkey", f, &l), 0);
	cr_assert_eq(auth_ns(fd, &s, SDFS_OP_NS_RMDIR, "rightkey", f, &l), 0);
	close(fd);
	cr_assert_eq(lookup("rightkey"), -ENOENT);
}

/* A handle whose key the cluster does not know (it may still read
 * ZooKeeper) gets EACCES from both daemons, not garbage. */
Test(auth_wire, a_handle_with_a_wrong_key_gets_eacces)
{
	struct sdfs_conf conf;
	struct sdfs *s;
	struct sdfs_stat st;
	uint8_t bad[AUTH_KEY_BYTES];
	char err[256], buf[16], path[600];

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	auth_random_key(bad);
	snprintf(path, sizeof(path), "%s/bad.keyring", tcluster_dir(tc));
	tkeys_save_client(path, secret, CLIENT_KEY, bad);
	cr_assert_eq(sdfs_connect_keyring(conf.zk, conf.cluster, 5000, path, &s, err,
					  sizeof(err)), 0, "%s", err);
	cr_assert_eq(sdfs_obj_read(s, 0x5a0004, buf, sizeof(buf), 0), -EACCES);
	cr_assert_eq(sdfs_ns_mkdir(s, ROOT, "badkey", 0755, 0, 0, &st), -EACCES);
	sdfs_close(s);
	cr_assert_eq(lookup("badkey"), -ENOENT);
}

/* ---- the invalidation channel ---- */

struct seen {
	atomic_int subscribed;          /* SDFS_INVAL_ALL came */
	atomic_uint_fast64_t ino;       /* the last inode named */
};

static void on_inval(void *arg, const struct sdfs_inval *iv, size_t n)
{
	struct seen *sn = arg;

	for (size_t i = 0; i < n; i++) {
		if (iv[i].kind == SDFS_INVAL_ALL)
			atomic_store(&sn->subscribed, 1);
		else
			atomic_store(&sn->ino, iv[i].ino);
	}
}

/* A subscribed handle is told of another's change (NS_NOTIFY from the
 * mds's operation threads, its answer back: tagged both ways). */
Test(auth_wire, invalidations_pass_on_an_authenticated_channel)
{
	struct sdfs_conf conf;
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_MODE, .mode = 0700 };
	struct sdfs_stat st;
	struct seen sn = { 0 };
	struct sdfs *sub;
	char err[256];

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sdfs_ns_mkdir(cl, ROOT, "watched", 0755, 0, 0, &st), 0);
	cr_assert_eq(sdfs_connect_keyring(conf.zk, conf.cluster, 10000, client_keyring,
					  &sub, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sdfs_ns_subscribe(sub, 5000, on_inval, &sn), 0);
	for (int64_t end = tnow_ms() + 20000; !atomic_load(&sn.subscribed) &&
	     tnow_ms() < end; tsleep_ms(20))
		;
	cr_assert(atomic_load(&sn.subscribed), "no subscription");
	cr_assert_eq(sdfs_ns_getattr(sub, st.ino, &st), 0);
	cr_assert(st.flags & SDFS_STAT_LEASED, "no lease granted");
	cr_assert_eq(sdfs_ns_setattr(cl, st.ino, &sa, NULL), 0);
	/* acknowledged after the subscriber answered (or its lease ran out;
	 * then it was never told) */
	cr_assert_eq(atomic_load(&sn.ino), st.ino, "the subscriber was not told");
	sdfs_close(sub);
}

/* A long-lived handle takes its rotated key from its keyring file: the
 * old key is gone at once (no grace), every connection is new (both
 * daemons restarted), and the handle goes on. */
Test(auth_wire, a_rotated_key_is_taken_from_the_keyring_file)
{
	struct sdfs_conf conf;
	uint8_t newkey[AUTH_KEY_BYTES];
	char a[4096], back[4096], err[256];
	struct coord *c;
	int ret = -1;

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(serves("before"), 0);
	auth_random_key(newkey);
	c = admin_coord();
	tkeys_put(c, secret, CLIENT_KEY, newkey, "admin");
	coord_close(c);
	tkeys_save_client(client_keyring, secret, CLIENT_KEY, newkey);
	tkeys_dev_restart(tc, "blockd.0");
	tkeys_dev_restart(tc, "mds.0");
	for (int64_t end = tnow_ms() + 60000; ret && tnow_ms() < end; tsleep_ms(200))
		ret = serves("after");
	cr_assert_eq(ret, 0, "the handle did not take its new key: %s", strerror(-ret));
	tfill_random(a, sizeof(a), 8);
	cr_assert_eq(sdfs_obj_write(cl, 0x5a0006, a, sizeof(a), 0), 0);
	cr_assert_eq(sdfs_obj_read(cl, 0x5a0006, back, sizeof(back), 0), (ssize_t)sizeof(a));
	cr_assert_arr_eq(a, back, sizeof(a));
}

/* `sdfs auth rm`: connections already made with the key are closed
 * (blockd by its sweep, the mds at the next request), and new ones are
 * refused. */
Test(auth_wire, connections_of_a_removed_key_are_closed)
{
	struct sdfs_conf conf;
	struct auth_sess sb, sm;
	struct coord *c;
	char err[256];
	int fb = authed(blockd_addr, &sb), fm = authed(mds_addr, &sm), closed = 0;

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	c = admin_coord();
	cr_assert_eq(coord_auth_del(c, CLIENT_KEY), 0);
	coord_close(c);
	cr_assert_eq(wire_wait_closed(fb, 20000), 0, "blockd kept a removed key's "
		     "connection");
	close(fb);
	for (int64_t end = tnow_ms() + 20000; !closed && tnow_ms() < end; tsleep_ms(200)) {
		uint8_t pl[256], rb[4096];
		struct sdfs_hdr h, r;

		ns_frame(pl, SDFS_OP_NS_GETATTR, ROOT, NULL, &h);
		closed = wire_send_req_auth(fm, &sm, &h, pl) ||
			 wire_recv_reply_auth(fm, &sm, &r, rb, sizeof(rb), WAIT_MS);
	}
	cr_assert(closed, "the mds kept serving a removed key");
	close(fm);
	fb = wire_connect(blockd_addr);
	cr_assert_eq(wire_auth(fb, CLIENT_KEY, client_key, &sb, err, sizeof(err)), -EACCES);
	close(fb);
}

/* ---- fuzz ---- */

/* One random frame from a peer without a key: a header with random
 * fields (its checksums right or not), a handshake frame with random
 * bytes, or plain noise, then a payload of what it announced or less. */
static size_t random_frame(uint64_t *rs, uint8_t *buf, size_t cap)
{
	uint64_t x = trand(rs);
	struct sdfs_hdr h = { .opcode = (uint8_t)trand(rs), .flags = (uint8_t)trand(rs),
			      .req_id = trand(rs), .epoch = (uint32_t)trand(rs),
			      .oid = trand(rs), .offset = trand(rs) % 65536,
			      .length = (uint32_t)trand(rs) % 65536 };
	size_t plen = trand(rs) % 512, len;

	switch (x % 6) {
	case 0:                 /* noise */
		len = 1 + trand(rs) % cap;
		tfill_random(buf, len, trand(rs));
		return len;
	case 1:                 /* a HELLO with random bytes */
		h.opcode = SDFS_OP_AUTH_HELLO;
		h.flags = 0;
		break;
	case 2:                 /* a PROOF out of turn */
		h.opcode = SDFS_OP_AUTH_PROOF;
		h.flags = 0;
		plen = AUTH_PROOF_BYTES;
		break;
	default:                /* any op */
		break;
	}
	h.payload_len = (uint32_t)plen;
	tfill_random(buf + SDFS_HDR_SIZE, plen, trand(rs));
	proto_hdr_encode(&h, buf + SDFS_HDR_SIZE, buf);
	len = SDFS_HDR_SIZE + plen;
	if (x % 11 == 0)        /* a flipped bit, checksums left as they were */
		buf[trand(rs) % len] ^= (uint8_t)(1u << (trand(rs) % 8));
	if (x % 13 == 0)        /* cut short */
		len = trand(rs) % len;
	return len;
}

static void fuzz(const char *addr, const char *name)
{
	uint64_t rs = tseed(name);
	uint8_t buf[SDFS_HDR_SIZE + 1024];
	pid_t pid = tcluster_pid(tc, name);
	unsigned answered = 0, refused = 0;

	for (int i = 0; i < NFUZZ; i++) {
		int fd = wire_connect(addr);
		int frames = 1 + (int)(trand(&rs) % 3);
		struct sdfs_hdr r;

		for (int k = 0; k < frames; k++) {
			size_t len = random_frame(&rs, buf, sizeof(buf));

			if (wire_send(fd, buf, len))
				break;
		}
		shutdown(fd, SHUT_WR);
		if (wire_recv_hdr(fd, &r, WAIT_MS) == 0) {
			answered++;
			refused += r.result == SDFS_RES_AUTH;
		}
		cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0, "%s kept frame %d's "
			     "connection open", name, i);
		/* a reset, not TIME_WAIT: 20,000 connections need no ports */
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){ 1, 0 },
			   sizeof(struct linger));
		close(fd);
	}
	cr_log_info("%s: %d connections of random frames: %u answered, %u of them "
		    "SDFS_RES_AUTH", name, NFUZZ, answered, refused);
	cr_assert_eq(tcluster_pid(tc, name), pid);
	cr_assert(tcluster_running(tc, name), "%s is gone", name);
}

Test(auth_wire, random_frames_without_a_key_crash_nothing, .timeout = 600)
{
	char a[4096], back[4096];

	fuzz(blockd_addr, "blockd.0");
	fuzz(mds_addr, "mds.0");
	/* both still serve the right key */
	cr_assert_eq(serves("after-fuzz"), 0);
	tfill_random(a, sizeof(a), 7);
	cr_assert_eq(sdfs_obj_write(cl, 0x5a0005, a, sizeof(a), 0), 0);
	cr_assert_eq(sdfs_obj_read(cl, 0x5a0005, back, sizeof(back), 0), (ssize_t)sizeof(a));
	cr_assert_arr_eq(a, back, sizeof(a));
	cr_assert_eq(lookup("stranger"), -ENOENT);
}

/* ---- between daemons ---- */

static void up3(void)
{
	auth_up(3, 3);
}

/* The node list's object count of @name, or -1 if it did not answer. */
static int64_t objects_of(const char *name)
{
	uint32_t id = tcluster_node_id(tc, name);
	struct sdfs_node_status *ns;
	int64_t n = -1;
	size_t cnt;

	if (sdfs_node_list(cl, &ns, &cnt))
		return -1;
	for (size_t i = 0; i < cnt; i++)
		if (ns[i].node_id == id && ns[i].reachable)
			n = (int64_t)ns[i].objects;
	free(ns);
	return n;
}

/*
 * Three blockds, three copies: shared objects' writes go to their
 * primary, which forwards them to the others (blockd -> blockd), the mds
 * writes its database (mds -> blockd), and a restarted node catches up
 * by recovery (blockd -> blockd): all over authenticated connections,
 * each daemon with its own key.
 */
TestSuite(auth_peers, .init = up3, .fini = down, .timeout = 300);

Test(auth_peers, replication_and_recovery_between_daemons_authenticate)
{
	char a[4096], back[4096];
	int64_t want = -2, n = -1;
	char *out = NULL, *err = NULL;

	for (uint64_t oid = 0x5b0000; oid < 0x5b0000 + 20; oid++) {
		tfill_random(a, sizeof(a), oid);
		cr_assert_eq(sdfs_obj_write(cl, oid, a, sizeof(a), 0), 0, "oid %" PRIx64, oid);
	}
	cr_assert_eq(serves("peers"), 0);
	/* every object on every node (both counts read anew: the mds may
	 * be writing its database meanwhile) */
	for (int64_t end = tnow_ms() + 10000; n != want && tnow_ms() < end; tsleep_ms(100)) {
		want = objects_of("blockd.0");
		n = objects_of("blockd.2");
	}
	cr_assert_geq(want, 20);
	cr_assert_eq(n, want, "not every object on every node");
	n = -1;

	cr_assert_eq(tcluster_kill(tc, "blockd.2"), 0);
	for (uint64_t oid = 0x5b1000; oid < 0x5b1000 + 20; oid++) {
		tfill_random(a, sizeof(a), oid);
		cr_assert_eq(sdfs_obj_write(cl, oid, a, sizeof(a), 0), 0, "oid %" PRIx64, oid);
	}
	want = objects_of("blockd.0");
	cr_assert_eq(tsdfs_run(&out, &err, "dev start --dir %s blockd.2", tcluster_dir(tc)),
		     0, "%s%s", out, err);
	free(out);
	free(err);
	/* as many as its peers hold (both read anew each time: the mds may
	 * write meanwhile) */
	for (int64_t end = tnow_ms() + 60000; n != want && tnow_ms() < end; tsleep_ms(200)) {
		n = objects_of("blockd.2");
		want = objects_of("blockd.0");
	}
	cr_assert_eq(n, want, "blockd.2 has %" PRId64 " of %" PRId64 " objects: no "
		     "recovery from its peers", n, want);
	for (uint64_t oid = 0x5b1000; oid < 0x5b1000 + 20; oid++) {
		tfill_random(a, sizeof(a), oid);
		cr_assert_eq(sdfs_obj_read(cl, oid, back, sizeof(back), 0), (ssize_t)sizeof(a));
		cr_assert_arr_eq(a, back, sizeof(a));
	}
}
