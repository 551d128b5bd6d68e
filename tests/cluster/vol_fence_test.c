/*
 * vol_fence_test.c - volume fences on real block daemons: a mutation of
 * a volume object (index or data) whose token is below its vid's fence
 * is refused with -EPERM, one of a frozen vid with -EROFS unless it
 * carries SDFS_TOKEN_FROZEN; fences are per vid; a node that was down
 * while a fence went up in ZooKeeper loads it before it takes a volume
 * write again. Also: VOL_FENCE's checks, and per-volume copies (the
 * copies nibble of the oid kind) in placement and recovery.
 *
 * Three blockd, three copies: every node holds every cluster-copies
 * object, so every node's fence is exercised by every write.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/coord_vol.h"
#include "common/oid.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"

#define NBLOCKD 3
#define REPLY_MS 5000
#define SETTLE_MS 15000         /* deadline for transient refusals to pass */
#define LEN 4096

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = NBLOCKD, .copies = NBLOCKD });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(vol_fence, .init = up, .fini = down, .timeout = 180);

static const char *node_name(unsigned i)
{
	static char names[8][16];

	snprintf(names[i], sizeof(names[i]), "blockd.%u", i);
	return names[i];
}

/* @h to @node on a fresh connection, until a result that is not "not
 * now" (starting, between epochs, fences not loaded yet). */
static struct sdfs_hdr call_settled(const char *node, struct sdfs_hdr h,
				    const void *payload)
{
	static uint64_t req_id = 1;
	struct sdfs_hdr r = { 0 };
	char addr[80];

	for (int64_t end = tnow_ms() + SETTLE_MS; tnow_ms() < end; tsleep_ms(50)) {
		int fd;

		tcluster_node_addr(tc, node, addr, sizeof(addr));
		fd = wire_connect(addr);
		h.req_id = req_id++;
		if (h.opcode != SDFS_OP_VOL_FENCE)
			h.epoch = (uint32_t)tcluster_epoch(tc);
		cr_assert_eq(wire_send_req(fd, &h, payload), 0);
		cr_assert_eq(wire_recv_hdr(fd, &r, REPLY_MS), 0, "no reply from %s", node);
		cr_assert_eq(r.req_id, h.req_id);
		cr_assert_eq(wire_skip(fd, r.payload_len, REPLY_MS), 0);
		close(fd);
		if (r.result != SDFS_RES_SHUTDOWN && r.result != SDFS_RES_OLD_EPOCH &&
		    r.result != SDFS_RES_NEW_EPOCH && r.result != SDFS_RES_UNAVAIL)
			return r;
	}
	cr_assert_fail("%s: still refused for now (result %u)", node, r.result);
	return r;
}

/* A WRITE of @byte to @oid with @token straight to @node: its result. */
static uint32_t raw_write(const char *node, uint64_t oid, uint32_t token, int byte)
{
	static char buf[LEN];
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_WRITE, .flags = SDFS_F_CREATE,
			      .oid = oid, .token = token, .payload_len = LEN };

	memset(buf, byte, sizeof(buf));
	return call_settled(node, h, buf).result;
}

/* VOL_FENCE(@vid, @token) to @node: the reply (result, offset = fence). */
static struct sdfs_hdr raw_vol_fence(const char *node, uint64_t vid, uint64_t token)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_VOL_FENCE, .oid = vid, .offset = token };

	return call_settled(node, h, NULL);
}

/* @node's fence of @vid: a token-0 VOL_FENCE is refused but says it. */
static uint64_t node_fence(const char *node, uint64_t vid)
{
	struct sdfs_hdr r = raw_vol_fence(node, vid, 0);

	cr_assert_eq(r.result, SDFS_RES_INVALID, "%s: token 0 must be refused", node);
	return r.offset;
}

static int write_tok(uint64_t oid, uint32_t token, int byte)
{
	char buf[LEN];

	memset(buf, byte, sizeof(buf));
	return sdfs_obj_write_tok(tcluster_client(tc), oid, buf, sizeof(buf), 0, 0, token);
}

static int put_tok(uint64_t oid, uint32_t token, int byte)
{
	char buf[LEN];

	memset(buf, byte, sizeof(buf));
	return sdfs_obj_put_tok(tcluster_client(tc), oid, buf, sizeof(buf), token);
}

/* @oid reads back as LEN bytes of @byte on every replica. */
static void assert_holds(uint64_t oid, int byte)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_replica r[NBLOCKD];
	char want[LEN], got[LEN + 1];
	size_t n;

	memset(want, byte, sizeof(want));
	cr_assert_eq(sdfs_obj_read(s, oid, got, sizeof(got), 0), LEN,
		     "oid %016" PRIx64, oid);
	cr_assert_arr_eq(got, want, LEN, "oid %016" PRIx64 ": not all '%c'", oid, byte);
	cr_assert_eq(sdfs_obj_locate(s, oid, r, NBLOCKD, &n), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(r[i].result, 0, "node %u: %s", r[i].node_id,
			     strerror(-r[i].result));
		cr_assert_eq(r[i].csum, r[0].csum, "node %u holds something else",
			     r[i].node_id);
	}
}

/* ---- tokens ---- */

Test(vol_fence, tokens_below_the_fence_are_refused_for_index_and_data)
{
	struct sdfs *s = tcluster_client(tc);
	const uint64_t vid = 11;
	const uint64_t oids[] = { oid_vdata(vid, 0, 0), oid_vdata(vid, 7, 0),
				  oid_vindex(vid, 0) };

	for (size_t i = 0; i < sizeof(oids) / sizeof(oids[0]); i++)
		cr_assert_eq(write_tok(oids[i], 1, 'a'), 0, "token 1, no fence yet");
	cr_assert_eq(sdfs_vol_fence(s, vid, 2), 0);
	for (unsigned i = 0; i < NBLOCKD; i++)
		cr_assert_eq(node_fence(node_name(i), vid), 2, "%s", node_name(i));

	for (size_t i = 0; i < sizeof(oids) / sizeof(oids[0]); i++) {
		uint64_t oid = oids[i];

		cr_assert_eq(write_tok(oid, 1, 'b'), -EPERM, "write, oid %016" PRIx64, oid);
		cr_assert_eq(put_tok(oid, 1, 'b'), -EPERM, "put");
		cr_assert_eq(sdfs_obj_remove_tok(s, oid, 1), -EPERM, "remove");
		cr_assert_eq(write_tok(oid, 0, 'b'), -EPERM, "no token at all");
		assert_holds(oid, 'a');
		cr_assert_eq(raw_write(node_name(1), oid, 1, 'b'), SDFS_RES_FENCED);
		assert_holds(oid, 'a');

		cr_assert_eq(write_tok(oid, 2, 'c'), 0, "token = fence");
		assert_holds(oid, 'c');
		cr_assert_eq(put_tok(oid, 3, 'd'), 0, "above the fence");
		assert_holds(oid, 'd');
	}
	/* A fence lower than the current changes nothing; a removal with
	 * the current token goes through. */
	cr_assert_eq(sdfs_vol_fence(s, vid, 1), 0);
	cr_assert_eq(node_fence(node_name(0), vid), 2);
	cr_assert_eq(sdfs_obj_remove_tok(s, oids[0], 2), 0);
	char buf[LEN];
	cr_assert_eq(sdfs_obj_read(s, oids[0], buf, sizeof(buf), 0), -ENOENT);
	/* Reads are never fenced; the handle's own token plays no part. */
	sdfs_set_fence_token(s, 1000);
	cr_assert_eq(write_tok(oids[1], 1, 'e'), -EPERM);
	sdfs_set_fence_token(s, 0);
}

Test(vol_fence, a_frozen_vid_takes_only_the_frozen_token)
{
	struct sdfs *s = tcluster_client(tc);
	const uint64_t vid = 12;
	const uint64_t data = oid_vdata(vid, 3, 0), index = oid_vindex(vid, 0);

	cr_assert_eq(write_tok(data, 5, 'a'), 0);
	cr_assert_eq(write_tok(index, 5, 'a'), 0);
	cr_assert_eq(sdfs_vol_fence(s, vid, 5), 0);
	cr_assert_eq(sdfs_vol_fence(s, vid, SDFS_TOKEN_FROZEN), 0);
	for (unsigned i = 0; i < NBLOCKD; i++)
		cr_assert_eq(node_fence(node_name(i), vid), SDFS_TOKEN_FROZEN);

	cr_assert_eq(write_tok(data, 5, 'b'), -EROFS, "the writer: read-only now");
	cr_assert_eq(put_tok(index, 6, 'b'), -EROFS);
	cr_assert_eq(sdfs_obj_remove_tok(s, data, 5), -EROFS);
	cr_assert_eq(write_tok(data, 1, 'b'), -EROFS, "frozen, whatever the token");
	cr_assert_eq(raw_write(node_name(2), data, 5, 'b'), SDFS_RES_READONLY);
	assert_holds(data, 'a');
	assert_holds(index, 'a');

	/* The mds's own token: copying an index, reclaim removing. */
	cr_assert_eq(put_tok(index, SDFS_TOKEN_FROZEN, 'c'), 0);
	assert_holds(index, 'c');
	cr_assert_eq(write_tok(data, SDFS_TOKEN_FROZEN, 'c'), 0);
	assert_holds(data, 'c');
	cr_assert_eq(sdfs_obj_remove_tok(s, data, SDFS_TOKEN_FROZEN), 0);
	/* Frozen for good: a later fence cannot thaw it. */
	cr_assert_eq(sdfs_vol_fence(s, vid, 9), 0);
	cr_assert_eq(node_fence(node_name(1), vid), SDFS_TOKEN_FROZEN);
}

Test(vol_fence, fences_are_per_vid)
{
	struct sdfs *s = tcluster_client(tc);

	cr_assert_eq(sdfs_vol_fence(s, 13, 10), 0);
	cr_assert_eq(sdfs_vol_fence(s, 15, SDFS_TOKEN_FROZEN), 0);
	cr_assert_eq(write_tok(oid_vdata(13, 0, 0), 9, 'a'), -EPERM);
	cr_assert_eq(write_tok(oid_vdata(14, 0, 0), 1, 'a'), 0, "vid 14 has no fence");
	cr_assert_eq(write_tok(oid_vindex(14, 0), 1, 'a'), 0);
	cr_assert_eq(write_tok(oid_vdata(14, 0, 2), 1, 'a'), 0, "copies do not matter");
	cr_assert_eq(write_tok(oid_vdata(16, 0, 0), 1, 'a'), 0);
	/* Other kinds never see a volume fence. */
	cr_assert_eq(write_tok(oid_make(OID_KIND_RAW, 13, 0), 0, 'a'), 0);
	cr_assert_eq(write_tok(oid_make(OID_KIND_FILE, 13, 0), 0, 'a'), 0);
	cr_assert_eq(node_fence(node_name(0), 14), 0);
}

/* ---- VOL_FENCE's checks ---- */

Test(vol_fence, vol_fence_refuses_what_could_lock_a_vid_for_nothing)
{
	const char *node = node_name(0);

	cr_assert_eq(raw_vol_fence(node, 20, 0).result, SDFS_RES_INVALID, "token 0");
	cr_assert_eq(raw_vol_fence(node, 20, 1ull << 32).result, SDFS_RES_INVALID,
		     "no 32-bit token could pass it");
	cr_assert_eq(raw_vol_fence(node, 0, 3).result, SDFS_RES_INVALID, "vid 0");
	cr_assert_eq(raw_vol_fence(node, SDFS_VID_MAX + 1, 3).result,
		     SDFS_RES_INVALID, "vid out of range");
	cr_assert_eq(node_fence(node, 20), 0, "nothing raised");

	struct sdfs_hdr r = raw_vol_fence(node, 20, 4);
	cr_assert_eq(r.result, SDFS_RES_OK);
	cr_assert_eq(r.offset, 4, "the reply says the fence after the raise");
	r = raw_vol_fence(node, 20, 3);
	cr_assert_eq(r.result, SDFS_RES_OK);
	cr_assert_eq(r.offset, 4, "never lowered");
	r = raw_vol_fence(node, 20, UINT32_MAX);
	cr_assert_eq(r.offset, UINT32_MAX);
	cr_assert_eq(sdfs_vol_fence(tcluster_client(tc), 20, 0), -EINVAL);
}

/* ---- a node that was down ---- */

static struct coord *zk_open(void)
{
	struct sdfs_conf conf;
	struct coord *c;
	char err[256];

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(coord_open(conf.zk, conf.cluster, conf.session_ms, 10000, NULL, NULL,
				&c), 0);
	return c;
}

/* Set fence/@vid to @token in ZooKeeper as a writer does (a transaction
 * on the version read). */
static void zk_set_fence(struct coord *c, uint64_t vid, uint32_t token)
{
	for (int tries = 0; tries < 10; tries++) {
		struct coord_vol_fset set = { .vid = vid, .token = token };
		int ret;

		cr_assert_eq(coord_vol_fence_get(c, vid, &(uint32_t){ 0 }, &set.version), 0);
		ret = coord_vol_fence_multi(c, &set, 1, NULL);
		if (ret == 0)
			return;
		cr_assert_eq(ret, -EAGAIN, "fence_multi: %s", strerror(-ret));
	}
	cr_assert_fail("vid %" PRIu64 ": fence never set", vid);
}

Test(vol_fence, a_blockd_down_while_the_fence_rose_loads_it_from_zookeeper)
{
	struct coord *c = zk_open();
	const char *victim = node_name(2);
	const uint64_t vid = 31;
	uint64_t oid = oid_vdata(vid, 1, 0);
	uint32_t token;
	int32_t version;

	cr_assert_eq(write_tok(oid, 1, 'a'), 0);
	cr_assert_eq(tcluster_kill(tc, victim), 0);
	zk_set_fence(c, vid, 7);
	cr_assert_eq(coord_vol_fence_get(c, vid, &token, &version), 0);
	cr_assert_eq(token, 7);
	cr_assert_geq(version, 0);
	/* A second set on an old version loses the race. */
	struct coord_vol_fset stale = { .vid = vid, .token = 8, .version = version - 1 };
	cr_assert_eq(coord_vol_fence_multi(c, &stale, 1, NULL), -EAGAIN);
	struct coord_vol_fset again = { .vid = vid, .token = 8, .version = -1 };
	cr_assert_eq(coord_vol_fence_multi(c, &again, 1, NULL), -EAGAIN, "exists already");
	cr_assert_eq(sdfs_vol_fence(tcluster_client(tc), vid, 7), 0,
		     "a dead node must not hold the fence round up");

	cr_assert_eq(tcluster_restart(tc, victim), 0, "%s did not come back", victim);
	/* Its first lasting answer to the old writer is a refusal. */
	cr_assert_eq(raw_write(victim, oid, 6, 'b'), SDFS_RES_FENCED);
	cr_assert_eq(node_fence(victim, vid), 7);
	cr_assert_eq(write_tok(oid, 6, 'b'), -EPERM);
	assert_holds(oid, 'a');
	cr_assert_eq(write_tok(oid, 7, 'c'), 0);
	assert_holds(oid, 'c');

	/* Frozen in ZooKeeper only, while every node is up: a restart is
	 * enough to learn it. */
	zk_set_fence(c, vid, SDFS_TOKEN_FROZEN);
	cr_assert_eq(tcluster_kill(tc, victim), 0);
	cr_assert_eq(tcluster_restart(tc, victim), 0);
	cr_assert_eq(raw_write(victim, oid, 7, 'd'), SDFS_RES_READONLY);
	cr_assert_eq(coord_vol_fence_delete(c, vid), 0);
	cr_assert_eq(coord_vol_fence_delete(c, vid), 0, "absent is fine");
	cr_assert_eq(coord_vol_fence_get(c, vid, &token, &version), 0);
	cr_assert_eq(token, 0);
	cr_assert_eq(version, -1);
	coord_close(c);
}

Test(vol_fence, the_lock_queue)
{
	struct coord *c = zk_open(), *c2 = zk_open();
	char a[COORD_VOL_NODE_MAX], b[COORD_VOL_NODE_MAX], who[COORD_VOL_HOLDER_MAX];
	const uint64_t ino = 4242;

	cr_assert_eq(coord_vol_lock_holder(c, ino, who, sizeof(who)), 0, "no one yet");
	cr_assert_eq(coord_vol_lock_join(c, ino, "host=a pid=1", a, sizeof(a)), 0);
	cr_assert_eq(coord_vol_lock_join(c2, ino, "host=b pid=2", b, sizeof(b)), 0);
	cr_assert(strstr(a, "/vols/locks/4242/w_"), "%s", a);
	cr_assert_eq(coord_vol_lock_first(c, ino, a, who, sizeof(who)), 0);
	cr_assert_eq(coord_vol_lock_first(c2, ino, b, who, sizeof(who)), -EBUSY);
	cr_assert_str_eq(who, "host=a pid=1");
	cr_assert_eq(coord_vol_lock_holder(c2, ino, who, sizeof(who)), 1);
	cr_assert_str_eq(who, "host=a pid=1");
	cr_assert_eq(coord_vol_lock_wait(c2, ino, b, 200), -ETIMEDOUT);

	/* The fence transaction checks the lock node. */
	struct coord_vol_fset set = { .vid = 77, .token = 1, .version = -1 };
	cr_assert_eq(coord_vol_fence_multi(c, &set, 1, a), 0);
	/* The first holder's session ends: the second gets the lock, and the
	 * first's transaction fails on its lock node. */
	coord_close(c);
	cr_assert_eq(coord_vol_lock_wait(c2, ino, b, 10000), 0);
	cr_assert_eq(coord_vol_lock_first(c2, ino, b, NULL, 0), 0);
	set.version = 0;
	set.token = 2;
	cr_assert_eq(coord_vol_fence_multi(c2, &set, 1, a), -ENOENT, "lock lost");
	cr_assert_eq(coord_vol_fence_multi(c2, &set, 1, b), 0);
	cr_assert_eq(coord_vol_lock_release(c2, ino, b), 0);
	cr_assert_eq(coord_vol_lock_release(c2, ino, b), 0, "absent is fine");
	cr_assert_eq(coord_vol_lock_holder(c2, ino, who, sizeof(who)), 0);
	cr_assert_eq(coord_vol_lock_first(c2, ino, b, NULL, 0), -ENOENT);
	coord_close(c2);
}

/* ---- per-volume copies ---- */

/* How many of the first @nodes nodes but @skip hold @oid (raw STAT; a
 * tombstone would count, but nothing here removes). */
static unsigned copies_held(uint64_t oid, unsigned nodes, const char *skip)
{
	unsigned held = 0;

	for (unsigned i = 0; i < nodes; i++) {
		struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_STAT, .flags = SDFS_F_RAW,
				      .oid = oid };

		if (skip && !strcmp(skip, node_name(i)))
			continue;
		struct sdfs_hdr r = call_settled(node_name(i), h, NULL);
		held += r.result == SDFS_RES_OK;
	}
	return held;
}

static void assert_placed(uint64_t oid, size_t want)
{
	struct sdfs_replica r[NBLOCKD + 1];
	size_t n;

	cr_assert_eq(sdfs_obj_locate(tcluster_client(tc), oid, r, NBLOCKD + 1, &n), 0);
	cr_assert_eq(n, want, "oid %016" PRIx64 ": %zu placed, want %zu", oid, n, want);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(r[i].result, 0, "oid %016" PRIx64 " node %u: %s", oid,
			     r[i].node_id, strerror(-r[i].result));
}

Test(vol_fence, a_volume_has_its_own_copies)
{
	const uint64_t one = oid_vdata(40, 0, 1), two = oid_vdata(41, 0, 2);
	const uint64_t idx = oid_vindex(41, 2), dflt = oid_vdata(42, 0, 0);

	cr_assert_eq(write_tok(one, 0, 'a'), 0);
	cr_assert_eq(write_tok(two, 0, 'b'), 0);
	cr_assert_eq(write_tok(idx, 0, 'c'), 0);
	cr_assert_eq(write_tok(dflt, 0, 'd'), 0);
	assert_placed(one, 1);
	assert_placed(two, 2);
	assert_placed(idx, 2);
	assert_placed(dflt, NBLOCKD);
	cr_assert_eq(copies_held(one, NBLOCKD, NULL), 1);
	cr_assert_eq(copies_held(two, NBLOCKD, NULL), 2);
	cr_assert_eq(copies_held(dflt, NBLOCKD, NULL), NBLOCKD);
}

/* Four nodes, three copies, a short grace: a dead holder goes out and
 * recovery makes a new copy elsewhere, exactly as many as the oid says. */
static void up4(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = 4, .copies = 3,
						     .out_grace_s = 3 });
}

Test(vol_copies, recovery_keeps_the_volumes_copies, .init = up4, .fini = down,
     .timeout = 240)
{
	struct sdfs *s = tcluster_client(tc);
	const uint64_t two = oid_vdata(50, 0, 2), one = oid_vdata(51, 0, 1);
	struct sdfs_replica r[4];
	char victim[16], keep[16];
	size_t n;

	cr_assert_eq(write_tok(two, 0, 'a'), 0);
	cr_assert_eq(write_tok(one, 0, 'b'), 0);
	cr_assert_eq(copies_held(two, 4, NULL), 2);
	cr_assert_eq(copies_held(one, 4, NULL), 1);
	/* Kill a holder of the two-copy object that does not hold the
	 * one-copy object (that one would simply be lost). */
	cr_assert_eq(sdfs_obj_locate(s, one, r, 4, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_not_null(tcluster_node_name(tc, r[0].node_id, keep, sizeof(keep)));
	cr_assert_eq(sdfs_obj_locate(s, two, r, 4, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_not_null(tcluster_node_name(tc, r[0].node_id, victim, sizeof(victim)));
	if (!strcmp(victim, keep))
		cr_assert_not_null(tcluster_node_name(tc, r[1].node_id, victim,
						      sizeof(victim)));
	cr_log_info("killing %s (holds the two-copy object), %s holds the one-copy one",
		    victim, keep);
	cr_assert_eq(tcluster_kill(tc, victim), 0);
	cr_assert_eq(tcluster_wait_state(tc, victim, "out", 30000), 0);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);

	assert_placed(two, 2);
	assert_placed(one, 1);
	cr_assert_eq(copies_held(two, 4, victim), 2, "a new second copy, no third");
	cr_assert_eq(copies_held(one, 4, victim), 1, "still one copy");
	char buf[LEN];
	cr_assert_eq(sdfs_obj_read(s, two, buf, sizeof(buf), 0), LEN);
	cr_assert_eq(buf[0], 'a');
}
