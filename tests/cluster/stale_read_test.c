/*
 * stale_read_test.c - nodes that come back with old copies: they must
 * never serve them while a newer copy may exist on nodes that are gone
 * (Sheepdog §4.4, Fig. 4), and must not throw them away when they are
 * the only copies there are.
 *
 * Four blockd, copies = 2, a long grace: nodes go out only when the test
 * says so (`sdfs node out`), so every map change is one the test made.
 * Each blockd has a zone of its own, so any two nodes can hold a pair.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cluster/fixture.h"
#include "tests/cluster/objfile.h"
#include "tests/cluster/objset.h"

#define NBLOCKD 4
#define COPIES 2
#define GRACE_S 60
#define OBJ_DELETED 0x2u        /* object file flag: a tombstone */

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NBLOCKD, .copies = COPIES,
						     .out_grace_s = GRACE_S });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(stale_read, .init = up, .fini = down, .timeout = 180);
TestSuite(holders_return, .init = up, .fini = down, .timeout = 180);

static void name_of(uint32_t id, char *buf, size_t len)
{
	cr_assert(tcluster_node_name(tc, id, buf, len), "node %u has no dev name", id);
}

/*
 * Kill @a and @b, wait until the map has both down, then make both out.
 * Both die before either goes out: while one of them was up, placement
 * would re-replicate the other's objects from it.
 */
static void kill_both_then_out(const char *a, const char *b)
{
	cr_assert_eq(tcluster_kill(tc, a), 0);
	cr_assert_eq(tcluster_kill(tc, b), 0);
	cr_assert_eq(tcluster_wait_state(tc, a, "down", TCLUSTER_WAIT_MS), 0,
		     "%s never went down in the map", a);
	cr_assert_eq(tcluster_wait_state(tc, b, "down", TCLUSTER_WAIT_MS), 0,
		     "%s never went down in the map", b);
	cr_assert_eq(tcluster_node_set(tc, "out", a), 0);
	cr_assert_eq(tcluster_node_set(tc, "out", b), 0);
	cr_assert_eq(tcluster_wait_state(tc, a, "out", TCLUSTER_WAIT_MS), 0);
	cr_assert_eq(tcluster_wait_state(tc, b, "out", TCLUSTER_WAIT_MS), 0);
}

/* Locate @oid: exactly COPIES placed replicas, on @a and @b in any order. */
static void locate_on(uint64_t oid, uint32_t a, uint32_t b, struct sdfs_replica r[COPIES],
		      const char *when)
{
	size_t n;

	cr_assert_eq(sdfs_obj_locate(tcluster_client(tc), oid, r, COPIES, &n), 0);
	cr_assert_eq(n, COPIES);
	cr_assert((r[0].node_id == a && r[1].node_id == b) ||
		  (r[0].node_id == b && r[1].node_id == a),
		  "%s: placement is nodes %u and %u, not %u and %u", when, r[0].node_id,
		  r[1].node_id, a, b);
}

/*
 * What a node's object file holds, read from its disk without asking
 * the node (it may be dead, or would settle the object first): a copy
 * of @size bytes equal to @want, written in epoch @epoch (0: any).
 */
static void assert_disk_copy(const char *path, uint64_t epoch, const unsigned char *want,
			     size_t size, const char *what)
{
	unsigned char blk[OBJFILE_BLOCK];
	struct objfile f;

	objfile_open(path, &f);
	cr_assert(!(f.flags & OBJ_DELETED), "%s: %s is a tombstone", what, path);
	if (epoch)
		cr_assert_eq(f.epoch >> 32, epoch, "%s: %s was written in epoch %" PRIu64
			     ", not %" PRIu64, what, path, f.epoch >> 32, epoch);
	cr_assert_eq(f.size, size, "%s: %s holds %" PRIu64 " bytes, not %zu", what, path,
		     f.size, size);
	for (uint64_t b = 0; b * OBJFILE_BLOCK < size; b++) {
		size_t len = size - b * OBJFILE_BLOCK < OBJFILE_BLOCK ?
			     size - b * OBJFILE_BLOCK : OBJFILE_BLOCK;

		objfile_read_block(&f, b, blk);
		cr_assert(memcmp(blk, want + b * OBJFILE_BLOCK, len) == 0,
			  "%s: %s differs in block %" PRIu64, what, path, b);
	}
	objfile_close(&f);
}

#define V1_SIZE 20000
#define V2_SIZE 30000

/*
 * The construction (nodes A B C D; O's placement on the full map is
 * {A, B}; ids and names follow the seed's O):
 *
 *   epoch e1   all up; O = v1 on A and B.
 *   A, B killed, then both `node out`: O's placement moves to {C, D}.
 *              They have no copy and nothing to fetch it from.
 *   epoch e2   O = v2 (a whole-object put) on C and D: newer than v1.
 *   C killed; the map marks it down while D is still up: in that
 *              epoch D alone is an up holder, and could have taken
 *              writes C never saw. Then D killed: no node is up.
 *   A, B restarted; C, D marked down and then out: O's placement is
 *              {A, B} again, who hold v1 from e1 (checked on their disks).
 *
 * A and B were not holders in e2, C and D (who were) are gone: neither
 * may vouch for v1, so reading O must fail (EIO), never return v1. With
 * C back, still no: D may have changed O after C went down. With D back
 * (the last up holder), O reads v2.
 */
Test(stale_read, old_holders_refuse_while_the_holders_of_newer_data_are_gone)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t seed = tseed("object and its content");
	uint64_t oid = (trand(&seed) >> 8) | 1, e1, e2, csum2;
	static unsigned char v1[V1_SIZE], v2[V2_SIZE], buf[V2_SIZE + 4096];
	char pa[1024], pb[1024], pc[1024], pd[1024];
	char a[32], b[32], c[32] = "", d[32] = "";
	struct sdfs_replica r[COPIES];
	uint32_t ida, idb, idc = 0, idd = 0;
	ssize_t got;

	tfill_random(v1, sizeof(v1), trand(&seed));
	tfill_random(v2, sizeof(v2), trand(&seed));

	/* e1: v1 on its holders A and B. */
	cr_assert_eq(sdfs_obj_put(s, oid, v1, sizeof(v1)), 0);
	size_t n;
	cr_assert_eq(sdfs_obj_locate(s, oid, r, COPIES, &n), 0);
	cr_assert_eq(n, COPIES);
	for (int i = 0; i < COPIES; i++)
		cr_assert_eq(r[i].result, 0, "replica on node %u: %s", r[i].node_id,
			     strerror(-r[i].result));
	cr_assert_eq(r[0].csum, r[1].csum);
	cr_assert_eq(r[0].epoch, r[1].epoch);
	e1 = r[0].epoch;
	ida = r[0].node_id;
	idb = r[1].node_id;
	snprintf(pa, sizeof(pa), "%s", r[0].path);
	snprintf(pb, sizeof(pb), "%s", r[1].path);
	name_of(ida, a, sizeof(a));
	name_of(idb, b, sizeof(b));
	for (unsigned i = 0; i < NBLOCKD; i++) {
		char nm[32];
		uint32_t id;

		snprintf(nm, sizeof(nm), "blockd.%u", i);
		id = tcluster_node_id(tc, nm);
		if (id == ida || id == idb)
			continue;
		if (!idc) {
			idc = id;
			snprintf(c, sizeof(c), "%s", nm);
		} else {
			idd = id;
			snprintf(d, sizeof(d), "%s", nm);
		}
	}
	cr_assert(idc && idd);
	cr_log_info("oid %016" PRIx64 ": old holders %s (node %u) and %s (node %u), epoch %"
		    PRIu64 "; new holders will be %s (node %u) and %s (node %u)", oid, a, ida,
		    b, idb, e1, c, idc, d, idd);

	/* The holders change: A and B go, O is placed on C and D. */
	kill_both_then_out(a, b);
	locate_on(oid, idc, idd, r, "A and B out");

	/* e2: v2 on C and D. */
	cr_assert_eq(sdfs_obj_put(s, oid, v2, sizeof(v2)), 0);
	locate_on(oid, idc, idd, r, "v2 written");
	for (int i = 0; i < COPIES; i++)
		cr_assert_eq(r[i].result, 0, "v2 on node %u: %s", r[i].node_id,
			     strerror(-r[i].result));
	cr_assert_eq(r[0].csum, r[1].csum);
	e2 = r[0].epoch;
	csum2 = r[0].csum;
	cr_assert_gt(e2, e1, "v2 was written in epoch %" PRIu64 ", v1 in %" PRIu64, e2, e1);
	snprintf(r[0].node_id == idc ? pc : pd, sizeof(pc), "%s", r[0].path);
	snprintf(r[0].node_id == idc ? pd : pc, sizeof(pc), "%s", r[1].path);
	got = sdfs_obj_read(s, oid, buf, sizeof(buf), 0);
	cr_assert_eq(got, V2_SIZE, "read of v2: %zd", got);
	cr_assert_arr_eq(buf, v2, V2_SIZE);

	/* C goes first (D, still up, marks it down), then D. */
	cr_assert_eq(tcluster_kill(tc, c), 0);
	cr_assert_eq(tcluster_wait_state(tc, c, "down", TCLUSTER_WAIT_MS), 0);
	cr_assert_eq(tcluster_kill(tc, d), 0);

	/* A and B come back; C and D go out: O is placed on A and B again. */
	cr_assert_eq(tcluster_restart(tc, a), 0, "%s did not come back", a);
	cr_assert_eq(tcluster_restart(tc, b), 0, "%s did not come back", b);
	cr_assert_eq(tcluster_wait_state(tc, d, "down", TCLUSTER_WAIT_MS), 0,
		     "%s never went down in the map", d);
	cr_assert_eq(tcluster_node_set(tc, "out", c), 0);
	cr_assert_eq(tcluster_node_set(tc, "out", d), 0);
	cr_assert_eq(tcluster_wait_state(tc, c, "out", TCLUSTER_WAIT_MS), 0);
	cr_assert_eq(tcluster_wait_state(tc, d, "out", TCLUSTER_WAIT_MS), 0);
	cr_assert_eq(tcluster_wait_nodes_up(tc, 2, TCLUSTER_WAIT_MS), 0);

	/* The preconditions, so that this cannot pass for another reason:
	 * placement is A and B, whose disks hold v1 from e1; v2 from e2 is
	 * on C's and D's disks only. */
	locate_on(oid, ida, idb, r, "A and B back, C and D out");
	assert_disk_copy(pa, e1, v1, V1_SIZE, "old holder A");
	assert_disk_copy(pb, e1, v1, V1_SIZE, "old holder B");
	assert_disk_copy(pc, e2, v2, V2_SIZE, "new holder C");
	assert_disk_copy(pd, e2, v2, V2_SIZE, "new holder D");
	for (int i = 0; i < COPIES; i++)
		cr_log_info("locate: node %u says %d (%s)", r[i].node_id, r[i].result,
			    strerror(-r[i].result));

	/* Fig. 4: refuse, never v1. */
	got = sdfs_obj_read(s, oid, buf, sizeof(buf), 0);
	cr_assert(!(got == V1_SIZE && !memcmp(buf, v1, V1_SIZE)),
		  "STALE READ: the old holders served v1 (epoch %" PRIu64 ") while v2 "
		  "(epoch %" PRIu64 ") exists on nodes that are out", e1, e2);
	cr_assert_eq(got, -EIO, "read with the newer holders gone: %zd (%s), want EIO", got,
		     got < 0 ? strerror((int)-got) : "data");
	for (int i = 0; i < COPIES; i++)
		cr_assert_eq(r[i].result, -ENODATA, "node %u says %d (%s) of its copy (v1), "
			     "not ENODATA (cannot vouch for it)", r[i].node_id, r[i].result,
			     r[i].result ? strerror(-r[i].result) : "present");

	/* C back: its v2 may be older than what D took after C went down. */
	cr_assert_eq(tcluster_restart(tc, c), 0, "%s did not come back", c);
	got = sdfs_obj_read(s, oid, buf, sizeof(buf), 0);
	cr_assert(!(got == V1_SIZE && !memcmp(buf, v1, V1_SIZE)),
		  "STALE READ: v1 served with C back and D out");
	cr_assert_eq(got, -EIO, "read with C back, D (the last up holder) out: %zd (%s), "
		     "want EIO", got, got < 0 ? strerror((int)-got) : "data");
	assert_disk_copy(pd, e2, v2, V2_SIZE, "new holder D, before its restart");

	/* D back: every holder since e2 answers; v2 is the newest. */
	cr_assert_eq(tcluster_restart(tc, d), 0, "%s did not come back", d);
	got = sdfs_obj_read(s, oid, buf, sizeof(buf), 0);
	cr_assert_eq(got, V2_SIZE, "read with D back: %zd (%s)", got,
		     got < 0 ? strerror((int)-got) : "wrong size");
	cr_assert_arr_eq(buf, v2, V2_SIZE, "read with D back returned other bytes than v2");

	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	cr_assert_eq(sdfs_obj_locate(s, oid, r, COPIES, &n), 0);
	for (int i = 0; i < COPIES; i++) {
		cr_assert_eq(r[i].result, 0, "node %u: %s", r[i].node_id,
			     strerror(-r[i].result));
		cr_assert_eq(r[i].csum, csum2, "node %u holds another copy than v2",
			     r[i].node_id);
	}
}

/* ---- the only copies come back ---- */

#define RET_NOBJ 48
#define RET_MAX_SIZE (64u << 10)

/*
 * Both holders of some objects go out (killed, then `node out`): no
 * copy is left on an up node. When they return with their disks, those
 * objects must read back: out means "re-replicate what you can", not
 * "forget". Meanwhile the objects must not read as never written.
 */
Test(holders_return, objects_whose_holders_all_went_out_come_back_with_them)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t seed = tseed("objects");
	struct objset *os = objset_new(s, RET_NOBJ, RET_MAX_SIZE, seed);
	unsigned only[RET_NOBJ], nonly = 0, noent = 0;
	uint32_t pair[COPIES], ids[COPIES];
	struct sdfs_replica r[COPIES];
	static char paths[RET_NOBJ][COPIES][sizeof(r[0].path)];
	char a[32], b[32];
	size_t n;

	for (unsigned i = 0; i < RET_NOBJ; i++)
		cr_assert_eq(objset_change(os, i, tnow_ms() + 30000, NULL), 0);
	cr_assert_eq(objset_placement(os, 0, pair, COPIES), COPIES);
	for (unsigned i = 0; i < RET_NOBJ; i++) {
		cr_assert_eq(objset_placement(os, i, ids, COPIES), COPIES);
		if (!(ids[0] == pair[0] && ids[1] == pair[1]) &&
		    !(ids[0] == pair[1] && ids[1] == pair[0]))
			continue;
		cr_assert_eq(sdfs_obj_locate(s, objset_oid(os, i), r, COPIES, &n), 0);
		for (int k = 0; k < COPIES; k++)
			memcpy(paths[nonly][k], r[k].path, sizeof(paths[nonly][k]));
		only[nonly++] = i;
	}
	name_of(pair[0], a, sizeof(a));
	name_of(pair[1], b, sizeof(b));
	cr_log_info("%u of %u objects live on %s and %s only", nonly, RET_NOBJ, a, b);

	kill_both_then_out(a, b);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	for (unsigned k = 0; k < nonly; k++) {
		static unsigned char buf[RET_MAX_SIZE];
		ssize_t got = sdfs_obj_read(s, objset_oid(os, only[k]), buf, sizeof(buf), 0);

		cr_assert_lt(got, 0, "object #%u read with both its holders out", only[k]);
		noent += got == -ENOENT;
	}
	/* Unavailable, not "never written": EIO, as when holders are down. */
	cr_expect_eq(noent, 0, "%u of the %u objects whose only copies are on out nodes "
		     "read ENOENT (as if never written), not EIO", noent, nonly);

	/* Their disks still hold those objects, as written. */
	for (unsigned k = 0; k < nonly; k++) {
		size_t size;
		const unsigned char *want = objset_data(os, only[k], &size);

		for (int c = 0; c < COPIES; c++)
			assert_disk_copy(paths[k][c], 0, want, size, "out holder");
	}

	cr_assert_eq(tcluster_restart(tc, a), 0);
	cr_assert_eq(tcluster_restart(tc, b), 0);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	objset_check_reads(os, "the holders returned");
	objset_check_replicas(os, COPIES, 0, NULL, "the holders returned");
	objset_free(os);
}
