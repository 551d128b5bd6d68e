/*
 * fence_test.c - the MDS fence on real block daemons: once a new
 * writer raised it (sdfs_mds_fence, or the MDS epoch in ZooKeeper), a
 * mutation of an MDS-database object carrying an older token is refused
 * with -EPERM and changes nothing, on every node, across restarts, and
 * on a node that was down while the fence went up. Other objects are
 * never fenced. Also: SDFS_WRITE_SYNC writes.
 *
 * Three blockd, three copies: every node holds every object, so every
 * node's fence is exercised by every write.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/coord_mds.h"
#include "common/oid.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"

#define NBLOCKD 3
#define REPLY_MS 5000
#define SETTLE_MS 15000         /* deadline for transient refusals to pass */
#define MDS_OID(n) oid_make(OID_KIND_MDS, 0x77, (n))
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

TestSuite(fence, .init = up, .fini = down, .timeout = 180);

static uint64_t req_ids = 1;

/* Send @h (+@payload) on a fresh connection to @node; the reply header
 * (its payload is skipped). */
static struct sdfs_hdr raw_call(const char *node, struct sdfs_hdr h, const void *payload)
{
	char addr[80];
	struct sdfs_hdr r;
	int fd;

	tcluster_node_addr(tc, node, addr, sizeof(addr));
	fd = wire_connect(addr);
	h.req_id = req_ids++;
	cr_assert_eq(wire_send_req(fd, &h, payload), 0);
	cr_assert_eq(wire_recv_hdr(fd, &r, REPLY_MS), 0, "no reply from %s", node);
	cr_assert_eq(r.req_id, h.req_id);
	cr_assert(r.flags & SDFS_F_REPLY);
	cr_assert_eq(wire_skip(fd, r.payload_len, REPLY_MS), 0);
	close(fd);
	return r;
}

/* MDS_FENCE(@epoch) to @node: the fence it reports (0 asks without raising). */
static uint64_t node_fence_raise(const char *node, uint64_t epoch)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_MDS_FENCE, .offset = epoch };
	struct sdfs_hdr r = raw_call(node, h, NULL);

	cr_assert_eq(r.result, SDFS_RES_OK, "%s: MDS_FENCE result %u", node, r.result);
	return r.offset;
}

static uint64_t node_fence(const char *node)
{
	return node_fence_raise(node, 0);
}

/* Poll until @node's fence is @want. */
static void wait_node_fence(const char *node, uint64_t want)
{
	uint64_t f = 0;

	for (int64_t end = tnow_ms() + SETTLE_MS; tnow_ms() < end; tsleep_ms(50)) {
		f = node_fence(node);
		if (f == want)
			return;
	}
	cr_assert_fail("%s: mds fence %" PRIu64 ", want %" PRIu64, node, f, want);
}

/* DIR/@node/mds_fence as a number; 0 if absent. */
static uint64_t fence_file(const char *node)
{
	char path[1024], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/mds_fence", tcluster_dir(tc), node);
	f = fopen(path, "r");
	if (!f)
		return 0;
	cr_assert(fgets(buf, sizeof(buf), f), "%s: empty", path);
	fclose(f);
	cr_assert(strchr(buf, '\n'), "%s: '%s' has no newline", path, buf);
	return strtoull(buf, NULL, 10);
}

/*
 * A WRITE of @byte to @oid with @token straight to @node, past the
 * refusals that only say "not now" (between epochs, fence not yet in
 * step with ZooKeeper after a start): the first lasting result.
 */
static uint32_t raw_write(const char *node, uint64_t oid, uint32_t token, int byte)
{
	static char buf[LEN];
	struct sdfs_hdr r = { 0 };

	memset(buf, byte, sizeof(buf));
	for (int64_t end = tnow_ms() + SETTLE_MS; tnow_ms() < end; tsleep_ms(50)) {
		struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_WRITE, .flags = SDFS_F_CREATE,
				      .oid = oid, .token = token, .payload_len = LEN,
				      .epoch = (uint32_t)tcluster_epoch(tc) };

		r = raw_call(node, h, buf);
		if (r.result != SDFS_RES_SHUTDOWN && r.result != SDFS_RES_OLD_EPOCH &&
		    r.result != SDFS_RES_NEW_EPOCH && r.result != SDFS_RES_UNAVAIL)
			return r.result;
	}
	cr_assert_fail("%s: write still refused for now (result %u)", node, r.result);
	return 0;
}

static int write_byte(uint64_t oid, uint32_t token, int byte)
{
	struct sdfs *s = tcluster_client(tc);
	char buf[LEN];

	memset(buf, byte, sizeof(buf));
	sdfs_set_fence_token(s, token);
	return sdfs_obj_write(s, oid, buf, sizeof(buf), 0);
}

/* @oid reads back as LEN bytes of @byte, and every replica agrees. */
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
	cr_assert_eq(n, NBLOCKD);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(r[i].result, 0, "node %u: %s", r[i].node_id,
			     strerror(-r[i].result));
		cr_assert_eq(r[i].csum, r[0].csum, "node %u holds something else",
			     r[i].node_id);
		cr_assert_eq(r[i].size, LEN);
	}
}

static const char *node_name(unsigned i)
{
	static char names[NBLOCKD][16];

	snprintf(names[i], sizeof(names[i]), "blockd.%u", i);
	return names[i];
}

/* ---- (a) tokens ---- */

Test(fence, writes_below_the_fence_are_refused_and_change_nothing)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t oid = MDS_OID(1);

	cr_assert_eq(write_byte(oid, 1, 'a'), 0, "token 1, no fence yet");
	assert_holds(oid, 'a');

	cr_assert_eq(sdfs_mds_fence(s, 2), 0);
	for (unsigned i = 0; i < NBLOCKD; i++) {
		cr_assert_eq(node_fence(node_name(i)), 2, "%s", node_name(i));
		cr_assert_eq(fence_file(node_name(i)), 2, "%s: on disk", node_name(i));
	}

	cr_assert_eq(write_byte(oid, 1, 'b'), -EPERM, "token 1 below fence 2");
	assert_holds(oid, 'a');
	cr_assert_eq(write_byte(oid, 0, 'b'), -EPERM, "no token at all");
	assert_holds(oid, 'a');

	cr_assert_eq(write_byte(oid, 2, 'c'), 0, "token 2 = fence");
	assert_holds(oid, 'c');
	cr_assert_eq(write_byte(oid, 3, 'd'), 0, "token 3 above the fence");
	assert_holds(oid, 'd');
	/* A higher token does not move the fence: only a fence does. */
	cr_assert_eq(write_byte(oid, 2, 'e'), 0);
	assert_holds(oid, 'e');

	/* Fencing again lower or equal changes nothing. */
	cr_assert_eq(sdfs_mds_fence(s, 1), 0);
	cr_assert_eq(node_fence(node_name(0)), 2);
	cr_assert_eq(write_byte(oid, 1, 'f'), -EPERM);
	assert_holds(oid, 'e');
}

Test(fence, every_kind_of_mutation_is_fenced)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t oid = MDS_OID(2), fresh = MDS_OID(3);
	char buf[LEN];

	cr_assert_eq(write_byte(oid, 4, 'a'), 0);
	cr_assert_eq(sdfs_mds_fence(s, 5), 0);
	memset(buf, 'z', sizeof(buf));
	sdfs_set_fence_token(s, 4);
	cr_assert_eq(sdfs_obj_put(s, oid, buf, 100), -EPERM, "replace");
	cr_assert_eq(sdfs_obj_remove(s, oid), -EPERM, "remove");
	cr_assert_eq(sdfs_obj_write(s, fresh, buf, 10, 0), -EPERM, "create by write");
	assert_holds(oid, 'a');
	cr_assert_eq(sdfs_obj_read(s, fresh, buf, sizeof(buf), 0), -ENOENT,
		     "a fenced create made nothing");

	/* CREATE has no libsdfs call: straight to one node. */
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_CREATE, .oid = fresh, .token = 4,
			      .epoch = (uint32_t)tcluster_epoch(tc) };
	cr_assert_eq(raw_call(node_name(0), h, NULL).result, SDFS_RES_FENCED, "create");

	sdfs_set_fence_token(s, 5);
	cr_assert_eq(sdfs_obj_put(s, oid, buf, LEN), 0);
	assert_holds(oid, 'z');
	cr_assert_eq(sdfs_obj_remove(s, oid), 0);
	cr_assert_eq(sdfs_obj_read(s, oid, buf, sizeof(buf), 0), -ENOENT);
	/* Reads are never fenced. */
	sdfs_set_fence_token(s, 0);
	cr_assert_eq(sdfs_obj_read(s, oid, buf, sizeof(buf), 0), -ENOENT);
}

/* ---- (b) restart ---- */

Test(fence, survives_a_blockd_restart)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t oid = MDS_OID(4);
	const char *victim = node_name(0);

	cr_assert_eq(write_byte(oid, 1, 'a'), 0);
	cr_assert_eq(sdfs_mds_fence(s, 3), 0);
	cr_assert_eq(fence_file(victim), 3);

	cr_assert_eq(tcluster_kill(tc, victim), 0);
	cr_assert_eq(tcluster_restart(tc, victim), 0, "%s did not come back", victim);
	/* ZooKeeper has no MDS epoch here: only the data dir knows. */
	cr_assert_eq(node_fence(victim), 3, "the fence came back from the data dir");
	cr_assert_eq(raw_write(victim, oid, 2, 'b'), SDFS_RES_FENCED);
	cr_assert_eq(write_byte(oid, 2, 'b'), -EPERM);
	assert_holds(oid, 'a');
	cr_assert_eq(write_byte(oid, 3, 'c'), 0);
	assert_holds(oid, 'c');
}

/* ---- (c) ZooKeeper's MDS epoch ---- */

/* Bump /sdfs/<cluster>/mds/epoch up to @want as an mds does: from an
 * election node, in a transaction that checks it. */
static void zk_set_mds_epoch(uint64_t want)
{
	struct coord_mds_doc me = { .name = "mds.test", .addr = "127.0.0.1:1" };
	struct sdfs_conf conf;
	struct coord *c;
	char err[256], node[64];
	uint64_t e = 0;

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(coord_open(conf.zk, conf.cluster, conf.session_ms, 10000, NULL, NULL,
				&c), 0);
	cr_assert_eq(coord_mds_elect_join(c, &me, node, sizeof(node)), 0);
	cr_assert_eq(coord_mds_epoch_get(c, 0, &e), 0);
	while (e < want) {
		int ret = coord_mds_epoch_bump(c, node, &e);

		cr_assert(ret == 0 || ret == -EAGAIN, "bump: %s", strerror(-ret));
	}
	cr_assert_eq(e, want);
	coord_close(c);
	cr_log_info("mds epoch in ZooKeeper: %" PRIu64, e);
}

Test(fence, live_blockds_follow_the_zookeeper_epoch)
{
	uint64_t oid = MDS_OID(5);

	cr_assert_eq(write_byte(oid, 0, 'a'), 0, "no fence, no token");
	zk_set_mds_epoch(4);
	for (unsigned i = 0; i < NBLOCKD; i++) {
		wait_node_fence(node_name(i), 4);
		cr_assert_eq(fence_file(node_name(i)), 4, "%s: on disk", node_name(i));
	}
	cr_assert_eq(write_byte(oid, 3, 'b'), -EPERM);
	assert_holds(oid, 'a');
	/* The watch is re-armed: a second bump is followed too. */
	zk_set_mds_epoch(6);
	for (unsigned i = 0; i < NBLOCKD; i++)
		wait_node_fence(node_name(i), 6);
	cr_assert_eq(write_byte(oid, 5, 'b'), -EPERM);
	cr_assert_eq(write_byte(oid, 6, 'c'), 0);
	assert_holds(oid, 'c');
}

Test(fence, a_blockd_down_during_the_takeover_learns_it_from_zookeeper)
{
	uint64_t oid = MDS_OID(6);
	const char *victim = node_name(2);

	cr_assert_eq(write_byte(oid, 1, 'a'), 0);
	cr_assert_eq(tcluster_kill(tc, victim), 0);
	/* The new mds bumps the epoch and fences the nodes it can reach. */
	zk_set_mds_epoch(5);
	cr_assert_eq(sdfs_mds_fence(tcluster_client(tc), 5), 0,
		     "a dead node must not hold the fence up for ever");
	cr_assert_lt(fence_file(victim), 5, "%s was down: it never heard of 5", victim);

	cr_assert_eq(tcluster_restart(tc, victim), 0, "%s did not come back", victim);
	/* Its very first answer to an old writer is already a refusal
	 * (until the epoch is read it says "not now", never "done"). */
	cr_assert_eq(raw_write(victim, oid, 4, 'b'), SDFS_RES_FENCED);
	cr_assert_eq(node_fence(victim), 5);
	cr_assert_eq(fence_file(victim), 5);
	assert_holds(oid, 'a');
	cr_assert_eq(write_byte(oid, 5, 'c'), 0);
	assert_holds(oid, 'c');
}

/* ---- (d) other objects ---- */

Test(fence, raw_objects_are_never_fenced)
{
	struct sdfs *s = tcluster_client(tc);
	const uint64_t oids[] = { 0x1234, oid_make(OID_KIND_RAW, 1, 1) };
	char buf[LEN];

	cr_assert_eq(sdfs_mds_fence(s, 10), 0);
	zk_set_mds_epoch(10);
	for (size_t i = 0; i < sizeof(oids) / sizeof(oids[0]); i++) {
		uint64_t oid = oids[i];

		cr_assert_eq(write_byte(oid, 0, 'a'), 0, "oid %016" PRIx64 ", no token", oid);
		assert_holds(oid, 'a');
		cr_assert_eq(write_byte(oid, 3, 'b'), 0, "oid %016" PRIx64 ", old token", oid);
		assert_holds(oid, 'b');
		memset(buf, 'c', sizeof(buf));
		cr_assert_eq(sdfs_obj_put(s, oid, buf, LEN), 0);
		assert_holds(oid, 'c');
		cr_assert_eq(sdfs_obj_remove(s, oid), 0);
		cr_assert_eq(raw_write(node_name(1), oid, 1, 'd'), SDFS_RES_OK);
	}
	/* ...while the MDS object next to them is. */
	cr_assert_eq(write_byte(MDS_OID(7), 3, 'a'), -EPERM);
	cr_assert_eq(raw_write(node_name(1), MDS_OID(7), 9, 'a'), SDFS_RES_FENCED);
}

/* File data: clients (no token) are never fenced; the mds freeing data
 * (its epoch as token) is, so a deposed mds cannot destroy what clients
 * wrote through its successor. */
Test(fence, file_data_is_fenced_only_with_a_token)
{
	const uint64_t oids[] = { oid_make(OID_KIND_FILE, 5, 0), oid_make(OID_KIND_FILE, 6, 3) };

	cr_assert_eq(sdfs_mds_fence(tcluster_client(tc), 10), 0);
	for (size_t i = 0; i < sizeof(oids) / sizeof(oids[0]); i++) {
		uint64_t oid = oids[i];

		cr_assert_eq(write_byte(oid, 0, 'a'), 0, "oid %016" PRIx64 ", no token", oid);
		assert_holds(oid, 'a');
		cr_assert_eq(write_byte(oid, 3, 'b'), -EPERM, "oid %016" PRIx64 ", old token", oid);
		assert_holds(oid, 'a');
		cr_assert_eq(write_byte(oid, 10, 'c'), 0, "oid %016" PRIx64 ", current token", oid);
		assert_holds(oid, 'c');
		cr_assert_eq(raw_write(node_name(1), oid, 9, 'd'), SDFS_RES_FENCED);
		cr_assert_eq(raw_write(node_name(1), oid, 0, 'd'), SDFS_RES_OK);
	}
}

/* ---- (e) SDFS_WRITE_SYNC ---- */

Test(fence, sync_writes_read_back)
{
	struct sdfs *s = tcluster_client(tc);
	const uint64_t oids[] = { 0x5151, MDS_OID(8) };
	static char in[64 << 10], out[sizeof(in) + 1];

	sdfs_set_fence_token(s, 1);
	for (size_t i = 0; i < sizeof(oids) / sizeof(oids[0]); i++) {
		tfill_random(in, sizeof(in), oids[i]);
		cr_assert_eq(sdfs_obj_write_ex(s, oids[i], in, sizeof(in), 0, SDFS_WRITE_SYNC), 0);
		cr_assert_eq(sdfs_obj_read(s, oids[i], out, sizeof(out), 0), (ssize_t)sizeof(in));
		cr_assert_arr_eq(in, out, sizeof(in));
		/* in the middle, and past the end */
		cr_assert_eq(sdfs_obj_write_ex(s, oids[i], "sync", 4, 1000, SDFS_WRITE_SYNC), 0);
		cr_assert_eq(sdfs_obj_write_ex(s, oids[i], "end", 3, sizeof(in), SDFS_WRITE_SYNC), 0);
		memcpy(in + 1000, "sync", 4);
		cr_assert_eq(sdfs_obj_read(s, oids[i], out, sizeof(out), 0), (ssize_t)sizeof(in) + 1);
		cr_assert_arr_eq(in, out, sizeof(in));
		cr_assert_eq(out[sizeof(in)], 'e');
	}
	cr_assert_eq(sdfs_obj_write_ex(s, 0x5151, in, 1, 0, 0x80), -EINVAL, "unknown flag");

	/* on the wire: SYNC on each mutation a client may send */
	const char *node = node_name(0);
	uint32_t epoch = (uint32_t)tcluster_epoch(tc);
	struct sdfs_hdr put = { .opcode = SDFS_OP_OBJ_REPLACE, .flags = SDFS_F_SYNC,
				.oid = 0x5252, .epoch = epoch, .payload_len = 4 };
	cr_assert_eq(raw_call(node, put, "abcd").result, SDFS_RES_OK);
	struct sdfs_hdr rm = { .opcode = SDFS_OP_OBJ_REMOVE, .flags = SDFS_F_SYNC,
			       .oid = 0x5252, .epoch = epoch };
	cr_assert_eq(raw_call(node, rm, NULL).result, SDFS_RES_OK);
	cr_assert_eq(raw_call(node, rm, NULL).result, SDFS_RES_NO_OBJ,
		     "a second removal: gone, and synced anyway");
}

/* ---- racing writers ---- */

struct racer {
	pthread_t thread;
	struct sdfs *s;
	uint64_t oid;
	atomic_int stop;
	atomic_int fence_done;          /* set once sdfs_mds_fence returned */
	atomic_uint acked, fenced, late_acked;
	int err;
};

static void *racer_main(void *arg)
{
	struct racer *x = arg;
	char buf[LEN];

	for (uint32_t g = 1; !atomic_load(&x->stop); g++) {
		int after = atomic_load(&x->fence_done);

		memset(buf, 0, sizeof(buf));
		memcpy(buf, &g, sizeof(g));
		int ret = sdfs_obj_write(x->s, x->oid, buf, sizeof(buf), 0);
		if (ret == 0) {
			atomic_fetch_add(&x->acked, 1);
			if (after)
				atomic_fetch_add(&x->late_acked, 1);
		} else if (ret == -EPERM) {
			atomic_fetch_add(&x->fenced, 1);
		} else {
			x->err = ret;
			break;
		}
	}
	return NULL;
}

Test(fence, writes_racing_a_fence_stop_at_it)
{
	struct sdfs *s = tcluster_client(tc);
	struct racer x = { .s = s, .oid = MDS_OID(9) };
	struct sdfs_replica before[NBLOCKD], after[NBLOCKD];
	size_t n;

	sdfs_set_fence_token(s, 1);
	cr_assert_eq(pthread_create(&x.thread, NULL, racer_main, &x), 0);
	for (int64_t end = tnow_ms() + 10000; atomic_load(&x.acked) < 20; tsleep_ms(5))
		cr_assert_lt(tnow_ms(), end, "the writer does not get going");

	cr_assert_eq(sdfs_mds_fence(s, 2), 0);
	atomic_store(&x.fence_done, 1);
	cr_assert_eq(sdfs_obj_locate(s, x.oid, before, NBLOCKD, &n), 0);
	unsigned fenced = atomic_load(&x.fenced);
	for (int64_t end = tnow_ms() + 10000; atomic_load(&x.fenced) < fenced + 20;
	     tsleep_ms(5))
		cr_assert_lt(tnow_ms(), end, "the writer is not being refused");
	atomic_store(&x.stop, 1);
	pthread_join(x.thread, NULL);
	cr_assert_eq(x.err, 0, "a write failed otherwise: %s", strerror(-x.err));
	cr_log_info("%u writes acknowledged, %u fenced", atomic_load(&x.acked),
		    atomic_load(&x.fenced));
	cr_assert_eq(atomic_load(&x.late_acked), 0,
		     "a write started after the fence was acknowledged");

	/* No replica changed after the fence returned. */
	cr_assert_eq(sdfs_obj_locate(s, x.oid, after, NBLOCKD, &n), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(after[i].result, 0);
		cr_assert_eq(after[i].csum, before[i].csum, "node %u changed after the fence",
			     after[i].node_id);
	}
}
