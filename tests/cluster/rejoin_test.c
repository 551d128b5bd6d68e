/*
 * rejoin_test.c - a node that comes back within the grace: it is still
 * placed, so nothing was re-replicated meanwhile, and it catches up by
 * fetching exactly what changed while it was away; a removal made
 * while it was away stays a removal when it returns with its old copy.
 *
 * Four blockd, copies = 3, a grace long enough that the node never goes
 * out here. Objects and the victim come from a logged seed.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cluster/fixture.h"
#include "tests/cluster/objset.h"

#define NBLOCKD 4
#define COPIES 3
#define GRACE_S 60
#define CHANGE_MS 30000

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

TestSuite(rejoin, .init = up, .fini = down, .timeout = 180);

static int placed_on(struct objset *os, unsigned i, uint32_t id)
{
	uint32_t ids[COPIES];
	size_t n = objset_placement(os, i, ids, COPIES);

	cr_assert_eq(n, COPIES);
	for (size_t k = 0; k < n; k++)
		if (ids[k] == id)
			return 1;
	return 0;
}

static void write_range(struct objset *os, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		int ret = objset_change(os, i, tnow_ms() + CHANGE_MS, NULL);

		cr_assert_eq(ret, 0, "writing object #%u: %s", i, strerror(-ret));
	}
}

/* Kill @victim and wait until the map has it down (still placed). */
static void kill_to_down(const char *victim)
{
	struct sdfs_node_status st;

	cr_assert_eq(tcluster_kill(tc, victim), 0);
	cr_assert_eq(tcluster_wait_state(tc, victim, "down", TCLUSTER_WAIT_MS), 0,
		     "the map never marked %s down", victim);
	cr_assert_eq(tcluster_node_status(tc, victim, &st), 0);
	cr_assert(st.placed, "%s is down but no longer placed", victim);
}

/* Restart @victim, which must still be down, not out: within the grace. */
static void restart_within_grace(const char *victim)
{
	struct sdfs_node_status st;

	cr_assert_eq(tcluster_node_status(tc, victim, &st), 0);
	cr_assert_str_eq(st.state, "down", "%s is %s before its restart: the test took "
			 "longer than the grace", victim, st.state);
	cr_assert_eq(tcluster_restart(tc, victim), 0, "%s did not come back", victim);
}

#define NOBJ 200
#define NNEW 6          /* objects first written while the victim is down */
#define NCHANGED 12     /* existing objects changed while it is down */
#define MAX_SIZE (64u << 10)

/*
 * The victim misses exactly the changes made while it was down to the
 * objects it holds (placement is the same before, during and after:
 * down nodes stay placed). On its return, the version comparison finds
 * every other copy of it current; it fetches those and nothing else.
 * No other node fetches anything: they were up holders throughout.
 * So the moved_objs counters, summed over the nodes, must equal that
 * number exactly. (They count since each daemon started: the victim's
 * restarts from zero, the others' are zero before the kill, which the
 * test checks.)
 */
Test(rejoin, node_back_within_grace_fetches_only_what_changed_while_it_was_down)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t seed = tseed("objects, changes and victim"), rng = seed ^ 0x5a;
	struct objset *os = objset_new(s, NOBJ + NNEW, MAX_SIZE, seed);
	struct sdfs_node_status st;
	unsigned changed[NCHANGED + NNEW], nchanged = 0, expected = 0, silent;
	uint64_t moved;
	char victim[32];
	uint32_t id;

	write_range(os, 0, NOBJ);
	cr_assert_eq(tcluster_wait_healthy(tc, 30), 0);
	cr_assert_eq(tcluster_moved_objs(tc, &silent), 0, "objects moved before any "
		     "node went away");
	cr_assert_eq(silent, 0);
	snprintf(victim, sizeof(victim), "blockd.%u", (unsigned)(seed % NBLOCKD));
	id = tcluster_node_id(tc, victim);

	kill_to_down(victim);
	while (nchanged < NCHANGED) {
		unsigned i = (unsigned)(trand(&rng) % NOBJ), dup = 0;

		for (unsigned k = 0; k < nchanged; k++)
			dup |= changed[k] == i;
		if (!dup)
			changed[nchanged++] = i;
	}
	for (unsigned i = NOBJ; i < NOBJ + NNEW; i++)
		changed[nchanged++] = i;
	for (unsigned k = 0; k < nchanged; k++) {
		int ret = objset_change(os, changed[k], tnow_ms() + CHANGE_MS, NULL);

		cr_assert_eq(ret, 0, "changing object #%u with %s down: %s", changed[k],
			     victim, strerror(-ret));
		expected += placed_on(os, changed[k], id);
	}
	cr_log_info("%s (node %u) down: %u objects changed or created, %u of them "
		    "placed on it", victim, id, nchanged, expected);
	cr_assert_gt(expected, 0, "none of the changed objects is on %s: the test would "
		     "prove nothing (another seed)", victim);

	restart_within_grace(victim);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	moved = tcluster_moved_objs(tc, &silent);
	cr_assert_eq(silent, 0);
	cr_assert_eq(tcluster_node_status(tc, victim, &st), 0);
	cr_log_info("moved: %" PRIu64 " in all, %" PRIu64 " by %s; expected %u", moved,
		    st.moved_objs, victim, expected);
	cr_assert_eq(st.moved_objs, expected, "%s fetched %" PRIu64 " objects on its "
		     "return; %u changed on it while it was down", victim, st.moved_objs,
		     expected);
	cr_assert_eq(moved, expected, "%" PRIu64 " objects moved in all; only the %u "
		     "that %s missed should have", moved, expected, victim);

	objset_check_replicas(os, COPIES, 0, NULL, "victim back");
	objset_check_reads(os, "victim back");
	cr_assert_eq(tcluster_moved_objs(tc, NULL), moved, "objects were fetched on "
		     "demand after the cluster said it was healthy");
	objset_free(os);
}

#define RM_NOBJ 40
#define RM_MAX 8        /* removed while the victim is down */
#define GC_MS 20000     /* tombstones collected by then */

/*
 * Objects the victim holds are removed while it is down: the other
 * holders keep tombstones. The victim returns with its old copies; the
 * newer tombstone wins, right away (a read before any recovery pass
 * could finish) and for good.
 */
static struct objset *remove_while_down(char *victim, size_t len, unsigned *nremoved)
{
	uint64_t seed = tseed("objects and victim");
	struct objset *os = objset_new(tcluster_client(tc), RM_NOBJ, MAX_SIZE, seed);
	unsigned rm[RM_MAX], n = 0;
	uint32_t id;

	snprintf(victim, len, "blockd.%u", (unsigned)(seed % NBLOCKD));
	id = tcluster_node_id(tc, victim);

	write_range(os, 0, RM_NOBJ);
	for (unsigned i = 0; i < RM_NOBJ && n < RM_MAX; i++)
		if (placed_on(os, i, id))
			rm[n++] = i;
	cr_assert_gt(n, 0, "no object is placed on %s", victim);

	kill_to_down(victim);
	for (unsigned k = 0; k < n; k++)
		cr_assert_eq(objset_remove(os, rm[k], tnow_ms() + CHANGE_MS), 0,
			     "removing object #%u with %s down", rm[k], victim);
	/* And a change, so that not everything it missed is a removal. */
	cr_assert_eq(objset_change(os, RM_NOBJ - 1, tnow_ms() + CHANGE_MS, NULL), 0);
	cr_log_info("removed %u objects held by %s while it was down", n, victim);

	restart_within_grace(victim);
	for (unsigned k = 0; k < n; k++) {
		static unsigned char buf[MAX_SIZE];
		ssize_t got = sdfs_obj_read(tcluster_client(tc), objset_oid(os, rm[k]), buf,
					    sizeof(buf), 0);

		cr_assert_eq(got, -ENOENT, "removed object #%u reads %zd (%s) just after "
			     "%s came back with its old copy", rm[k], got,
			     got < 0 ? strerror((int)-got) : "its old bytes", victim);
	}
	*nremoved = n;
	return os;
}

Test(rejoin, removal_while_a_holder_is_down_is_not_undone_when_it_returns)
{
	char victim[32];
	unsigned n;
	struct objset *os;

	os = remove_while_down(victim, sizeof(victim), &n);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	objset_check_reads(os, "victim back, healthy");
	objset_check_replicas(os, COPIES, 0, NULL, "victim back, healthy");
	objset_free(os);
}

/*
 * Tombstones exist for nodes that were away; once every node of the
 * map is up and has settled them, they go (docs/recovery.md, the pass,
 * step 4): each node ends up with exactly the live objects placed on it.
 */
Test(rejoin, tombstones_are_collected_once_every_node_is_back)
{
	uint64_t per_node[OBJSET_MAX_NODE + 1] = { 0 };
	struct sdfs_node_status *nodes = NULL;
	char victim[32];
	unsigned n;
	size_t nn = 0;
	int done = 0;
	struct objset *os;

	os = remove_while_down(victim, sizeof(victim), &n);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	objset_check_replicas(os, COPIES, 0, per_node, "victim back, healthy");
	/* per_node counted the removed objects' placements too: take them off. */
	for (unsigned i = 0; i < objset_count(os); i++) {
		uint32_t ids[COPIES];

		if (objset_exists(os, i))
			continue;
		cr_assert_eq(objset_placement(os, i, ids, COPIES), COPIES);
		for (int k = 0; k < COPIES; k++)
			per_node[ids[k]]--;
	}
	for (int64_t end = tnow_ms() + GC_MS; !done && tnow_ms() < end; tsleep_ms(200)) {
		free(nodes);
		cr_assert_eq(sdfs_node_list(tcluster_client(tc), &nodes, &nn), 0);
		done = 1;
		for (size_t i = 0; i < nn; i++)
			done &= nodes[i].reachable && nodes[i].objects == per_node[nodes[i].node_id];
	}
	for (size_t i = 0; i < nn; i++)
		cr_assert_eq(nodes[i].objects, per_node[nodes[i].node_id], "node %u holds %"
			     PRIu64 " files %d s after every node was back; %" PRIu64 " live "
			     "objects are placed on it (%u were removed)", nodes[i].node_id,
			     nodes[i].objects, GC_MS / 1000, per_node[nodes[i].node_id], n);
	free(nodes);
	objset_free(os);
}
