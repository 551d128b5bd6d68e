/*
 * recovery_test.c - membership changes under load end with every
 * object on exactly the nodes placement names, current everywhere:
 *
 *  - a node SIGKILLed and another added while a writer keeps changing
 *    objects: once healthy, every object has its copies, all identical,
 *    reading back the last acknowledged write; the dead node is out and
 *    the map needs nothing of it;
 *  - a node drained with `sdfs node remove`: when it holds nothing any
 *    more, every object already has its full redundancy elsewhere, so
 *    stopping it loses nothing;
 *  - a write that passed its epoch check on the up holders just before
 *    a node came back, and landed there just after that node listed
 *    them, still reaches it (it used to be on no list the node read:
 *    two copies of three, and nothing to repair them);
 *  - a removal's tombstones go from every node within seconds, not at
 *    the next epoch (they used to stay on the nodes whose recovery pass
 *    did not happen to run again: object counts differed for good).
 *
 * Objects come from a logged seed (SDFS_TEST_SEED=... reruns the same
 * objects, changes and victim).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "common/oid.h"
#include "tests/cluster/objset.h"

#define NBLOCKD 4
#define COPIES 3
#define CHANGE_MS 30000         /* one change may take this long, retries included */

static struct tcluster *tc;

static void up_grace3(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NBLOCKD, .copies = COPIES,
						     .out_grace_s = 3 });
}

static void up_grace30(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NBLOCKD, .copies = COPIES,
						     .out_grace_s = 30 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(recovery, .init = up_grace3, .fini = down, .timeout = 240);
TestSuite(drain, .init = up_grace30, .fini = down, .timeout = 180);

static void write_all(struct objset *os)
{
	int64_t t0 = tnow_ms();

	for (unsigned i = 0; i < objset_count(os); i++) {
		int ret = objset_change(os, i, tnow_ms() + CHANGE_MS, NULL);

		cr_assert_eq(ret, 0, "writing object #%u (oid %016" PRIx64 "): %s", i,
			     objset_oid(os, i), strerror(-ret));
	}
	cr_log_info("wrote %u objects in %" PRId64 " ms", objset_count(os), tnow_ms() - t0);
}

/*
 * Each up node ends up holding exactly the objects placement gives it
 * (@per_node, from locate): the copies that moved are dropped once safe.
 * Polled: dropping follows the pass that made the node clean.
 */
static void assert_nodes_hold_exactly(const uint64_t per_node[OBJSET_MAX_NODE + 1],
				      int timeout_ms)
{
	struct sdfs_node_status *nodes = NULL;
	size_t n = 0;
	int64_t end = tnow_ms() + timeout_ms;
	int ok = 0;

	while (!ok) {
		free(nodes);
		cr_assert_eq(sdfs_node_list(tcluster_client(tc), &nodes, &n), 0);
		ok = 1;
		for (size_t i = 0; i < n; i++) {
			uint32_t id = nodes[i].node_id;
			uint64_t want = id <= OBJSET_MAX_NODE ? per_node[id] : 0;

			if (!strcmp(nodes[i].state, "up"))
				ok &= nodes[i].reachable && nodes[i].objects == want;
		}
		if (ok || tnow_ms() > end)
			break;
		tsleep_ms(200);
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t id = nodes[i].node_id;

		cr_log_info("node %u: %s, %" PRIu64 " objects (placement gives it %" PRIu64
			    "), %" PRIu64 " extra, moved %" PRIu64, id, nodes[i].state,
			    nodes[i].objects, id <= OBJSET_MAX_NODE ? per_node[id] : 0,
			    nodes[i].rec_extra, nodes[i].moved_objs);
		if (!strcmp(nodes[i].state, "up"))
			cr_assert_eq(nodes[i].objects, id <= OBJSET_MAX_NODE ? per_node[id] : 0,
				     "node %u holds %" PRIu64 " objects after %d ms, but "
				     "placement gives it %" PRIu64 " (%" PRIu64 " extra)", id,
				     nodes[i].objects, timeout_ms,
				     id <= OBJSET_MAX_NODE ? per_node[id] : 0,
				     nodes[i].rec_extra);
	}
	free(nodes);
}

/* ---- kill one and add one while a writer changes objects ---- */

#define NOBJ 300
#define MAX_SIZE (1u << 20)
#define WRITER_MIN_CHANGES 20   /* before the kill, and after the last change */
#define WRITER_AFTER_MS 3000   /* writing on after the victim went out */
#define WRITER_MAX_MS 60000     /* the writer stalled */

struct writer {
	struct objset *os;
	uint64_t rng;
	atomic_int stop;
	atomic_uint changes;
	unsigned retries, failed;
	int first_err;
	unsigned first_err_obj;
	pthread_t th;
};

/* No asserts here (not the test's thread): the test checks the counts. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;

	while (!atomic_load(&w->stop)) {
		unsigned i = (unsigned)(trand(&w->rng) % objset_count(w->os));
		int ret = objset_change(w->os, i, tnow_ms() + CHANGE_MS, &w->retries);

		if (ret && !w->failed++) {
			w->first_err = ret;
			w->first_err_obj = i;
		}
		atomic_fetch_add(&w->changes, 1);
	}
	return NULL;
}

/* Let the writer go on for @more changes and at least @ms from now (the
 * load overlaps recovery); 0, or -ETIMEDOUT if it stalls. */
static int writer_wait(struct writer *w, unsigned more, int ms)
{
	unsigned want = atomic_load(&w->changes) + more;
	int64_t start = tnow_ms();

	for (; tnow_ms() < start + WRITER_MAX_MS; tsleep_ms(20))
		if (atomic_load(&w->changes) >= want && tnow_ms() >= start + ms)
			return 0;
	return -ETIMEDOUT;
}

Test(recovery, kill_one_and_add_one_while_writing_ends_with_every_copy_current)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t seed = tseed("objects and victim");
	uint64_t per_node[OBJSET_MAX_NODE + 1] = { 0 }, moved;
	struct writer w = { 0 };
	char victim[32], added[32];
	struct sdfs_node_status st;
	uint32_t victim_id;
	unsigned silent;
	int64_t t0 = tnow_ms();

	w.os = objset_new(s, NOBJ, MAX_SIZE, seed);
	w.rng = seed ^ 0x77;
	write_all(w.os);
	snprintf(victim, sizeof(victim), "blockd.%u", (unsigned)(seed % NBLOCKD));
	victim_id = tcluster_node_id(tc, victim);

	cr_assert_eq(pthread_create(&w.th, NULL, writer_main, &w), 0);
	int wret = writer_wait(&w, WRITER_MIN_CHANGES, 0);
	int kret = wret ? -1 : tcluster_kill(tc, victim);
	if (!wret && !kret) {
		tcluster_add(tc, added, sizeof(added));
		/* Down at once, out after the grace: both while writing. */
		wret = tcluster_wait_state(tc, victim, "out", TCLUSTER_WAIT_MS);
		cr_log_info("%s (node %u) out: %d, %u changes so far", victim, victim_id,
			    wret, atomic_load(&w.changes));
		if (!wret)
			wret = writer_wait(&w, WRITER_MIN_CHANGES, WRITER_AFTER_MS);
	}
	atomic_store(&w.stop, 1);
	pthread_join(w.th, NULL);
	cr_log_info("writer: %u changes, %u retried tries, %u failed, in %" PRId64 " ms",
		    atomic_load(&w.changes), w.retries, w.failed, tnow_ms() - t0);
	cr_assert_eq(kret, 0, "could not kill %s", victim);
	cr_assert_eq(wret, 0, "the writer stalled, or %s never went out", victim);
	cr_assert_eq(w.failed, 0, "%u changes failed for good; the first, of object #%u: "
		     "%s", w.failed, w.first_err_obj, strerror(-w.first_err));

	cr_assert_eq(tcluster_wait_healthy(tc, 120), 0, "the cluster never got healthy");
	moved = tcluster_moved_objs(tc, &silent);
	cr_assert_eq(silent, 0);
	cr_assert_eq(tcluster_node_status(tc, victim, &st), 0);
	cr_assert_str_eq(st.state, "out", "%s is %s", victim, st.state);
	cr_assert(!st.placed, "%s is out but still placed", victim);

	objset_check_replicas(w.os, COPIES, victim_id, per_node, "healthy");
	objset_check_reads(w.os, "healthy");
	/* The recovery pass had done it all: nothing was left to fetch on
	 * demand when the checks above touched every object. */
	cr_assert_eq(tcluster_moved_objs(tc, NULL), moved, "objects were fetched on "
		     "demand after the cluster said it was healthy");
	cr_assert_eq(per_node[victim_id], 0);
	assert_nodes_hold_exactly(per_node, 30000);
	cr_log_info("done in %" PRId64 " ms, %" PRIu64 " objects moved", tnow_ms() - t0, moved);
	objset_free(w.os);
}

/* ---- drain with sdfs node remove ---- */

#define DRAIN_NOBJ 150
#define DRAIN_MAX_SIZE (256u << 10)
#define DRAIN_MS 30000          /* 150 small objects move in a second or two */

/*
 * Drain a seed-chosen node after writing the objects and removing
 * @nremoved of them (their tombstones are files like any other), and
 * check what an operator relies on: the node comes to hold nothing, at
 * which point every object already has all its copies elsewhere; then
 * stopping it loses nothing.
 */
static void drain_one(unsigned nremoved)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t seed = tseed("objects and drained node");
	uint64_t moved;
	struct objset *os = objset_new(s, DRAIN_NOBJ, DRAIN_MAX_SIZE, seed);
	struct sdfs_node_status st;
	char node[32];
	uint32_t id;
	int64_t t0;

	write_all(os);
	for (unsigned i = 0; i < nremoved; i++)
		cr_assert_eq(objset_remove(os, i * 7, tnow_ms() + CHANGE_MS), 0);
	snprintf(node, sizeof(node), "blockd.%u", (unsigned)(seed % NBLOCKD));
	id = tcluster_node_id(tc, node);
	cr_assert_eq(tcluster_node_status(tc, node, &st), 0);
	cr_log_info("draining %s (node %u), which holds %" PRIu64 " objects (%u removed "
		    "in the set)", node, id, st.objects, nremoved);
	cr_assert_gt(st.objects, 0, "%s holds nothing: the test would prove nothing", node);

	t0 = tnow_ms();
	cr_assert_eq(tcluster_node_set(tc, "remove", node), 0);
	int ret = tcluster_wait_objects(tc, node, 0, DRAIN_MS);
	cr_assert_eq(tcluster_node_status(tc, node, &st), 0);
	cr_assert_eq(ret, 0, "%s still holds %" PRIu64 " objects (%" PRIu64 " extra) %d s "
		     "after node remove", node, st.objects, st.rec_extra, DRAIN_MS / 1000);
	cr_log_info("%s holds nothing after %" PRId64 " ms", node, tnow_ms() - t0);

	/* The operator's cue to stop it: by now every object must already
	 * have all its copies elsewhere, without any fetch on demand. */
	moved = tcluster_moved_objs(tc, NULL);
	objset_check_replicas(os, COPIES, id, NULL, "drained");
	cr_assert_eq(tcluster_moved_objs(tc, NULL), moved, "objects were still missing "
		     "copies when the drained node held nothing");
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	cr_assert_eq(tcluster_node_status(tc, node, &st), 0);
	cr_assert_str_eq(st.state, "up");
	cr_assert(st.drain && !st.placed, "%s: drain %d placed %d", node, st.drain, st.placed);
	cr_assert_eq(st.objects, 0, "%s got objects back", node);

	cr_assert_eq(tcluster_kill(tc, node), 0);
	objset_check_reads(os, "drained node killed");
	objset_check_replicas(os, COPIES, id, NULL, "drained node killed");
	objset_free(os);
}

Test(drain, removed_node_holds_nothing_only_once_every_object_has_its_copies_elsewhere)
{
	drain_one(0);
}

Test(drain, removed_node_also_sheds_the_tombstones_of_removed_objects)
{
	drain_one(6);
}

/* ---- a change in flight while the map moves ---- */

/* An MDS-database object, written to every replica directly as the mds
 * writes its log (the case CI saw); no mds runs, so token 0 passes. */
#define INFLIGHT_OID oid_make(OID_KIND_MDS, 0x7e57, 0)
#define INFLIGHT_LEN (20 * 1024)

static char stall_file[PATH_MAX];

static void up_stalling(void)
{
	char f[PATH_MAX + 64];
	char tmpl[] = "/tmp/sdfs-stall.XXXXXX";
	int fd = mkstemp(tmpl);

	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	close(fd);
	unlink(tmpl);           /* made again when a write must stall */
	snprintf(stall_file, sizeof(stall_file), "%s", tmpl);
	/* Every node holds each mutation of the object after its epoch
	 * check while the file exists (blockd/ops.c fault_stall); a node
	 * restarted later has no such hook. */
	snprintf(f, sizeof(f), "stall_mutation:%" PRIx64 ":%s", INFLIGHT_OID,
		 stall_file);
	setenv("SDFS_BLOCKD_FAULT", f, 1);
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .copies = 3 });
	unsetenv("SDFS_BLOCKD_FAULT");
}

static void down_stalling(void)
{
	unlink(stall_file);
	tcluster_stop(tc);
}

TestSuite(inflight, .init = up_stalling, .fini = down_stalling, .timeout = 120);

struct inflight_write {
	struct sdfs *s;
	const uint8_t *buf;
	int ret;
	int64_t ms;
};

static void *inflight_main(void *arg)
{
	struct inflight_write *w = arg;
	int64_t t0 = tnow_ms();

	w->ret = sdfs_obj_write_ex(w->s, INFLIGHT_OID, w->buf, INFLIGHT_LEN, 0, 0);
	w->ms = tnow_ms() - t0;
	return NULL;
}

/*
 * blockd.2 is down while a write of the object goes to blockd.0 and .1
 * (the up holders in epoch e0) and stalls there past its epoch check;
 * blockd.2 comes back (e0 + 1) and its recovery pass lists the other
 * two. @release_after_pass: the write lands only once that pass has
 * given up on them (each answers "ask again" while an older mutation is
 * in flight there), else 2 s after the restart. Either way blockd.2
 * must end up with the object: every copy of it, and the bytes.
 */
static void inflight_case(int release_after_pass)
{
	static uint8_t buf[INFLIGHT_LEN], back[INFLIGHT_LEN];
	struct inflight_write w = { .s = tcluster_client(tc), .buf = buf };
	struct sdfs_node_status st;
	char pass[64], *line;
	uint64_t e0;
	pthread_t th;
	int fd;

	tfill_random(buf, sizeof(buf), 0x7e57);
	cr_assert_eq(tcluster_kill(tc, "blockd.2"), 0);
	cr_assert_eq(tcluster_wait_state(tc, "blockd.2", "down", 15000), 0);
	e0 = tcluster_epoch(tc);
	fd = open(stall_file, O_CREAT | O_WRONLY, 0600);
	cr_assert(fd >= 0, "%s: %s", stall_file, strerror(errno));
	close(fd);
	/* The write waits for the stalled holders: it must not give up on
	 * them (a retry in the next epoch would go to blockd.2 too, hiding
	 * the hole). */
	sdfs_set_replica_timeout(w.s, 60000);
	cr_assert_eq(pthread_create(&th, NULL, inflight_main, &w), 0);
	for (int i = 0; i < 2; i++) {
		char who[16];

		snprintf(who, sizeof(who), "blockd.%d", i);
		line = tcluster_log_line(tc, who, "mutation stalled", 10000);
		cr_assert(line, "%s never stalled the write", who);
		free(line);
	}
	cr_assert_eq(tcluster_restart(tc, "blockd.2"), 0);
	cr_assert_gt(tcluster_epoch(tc), e0);
	if (release_after_pass) {
		snprintf(pass, sizeof(pass), "epoch=%" PRIu64 ": recovery pass:",
			 tcluster_epoch(tc));
		line = tcluster_log_line(tc, "blockd.2", pass, 20000);
		cr_assert(line, "blockd.2 logged no '%s'", pass);
		cr_log_info("blockd.2: %s", line);
		free(line);
	} else {
		tsleep_ms(2000);
	}
	unlink(stall_file);
	pthread_join(th, NULL);
	cr_assert_eq(w.ret, 0, "the write: %s", strerror(-w.ret));
	cr_log_info("the write (epoch %" PRIu64 ") was acknowledged after %" PRId64
		    " ms; blockd.2 came back in epoch %" PRIu64, e0, w.ms,
		    tcluster_epoch(tc));
	/* Before the fix: healthy, and blockd.2 without the object for good
	 * (until some later epoch's pass). */
	cr_assert_eq(tcluster_wait_healthy(tc, 30), 0);
	int ret = tcluster_wait_objects(tc, "blockd.2", 1, 10000);
	cr_assert_eq(tcluster_node_status(tc, "blockd.2", &st), 0);
	cr_assert_eq(ret, 0, "blockd.2 holds %" PRIu64 " objects, not the one written "
		     "while it came back", st.objects);
	/* and its copy has the bytes: read with the other two gone */
	cr_assert_eq(tcluster_kill(tc, "blockd.0"), 0);
	cr_assert_eq(tcluster_kill(tc, "blockd.1"), 0);
	cr_assert_eq(tcluster_wait_state(tc, "blockd.0", "down", 15000), 0);
	cr_assert_eq(tcluster_wait_state(tc, "blockd.1", "down", 15000), 0);
	cr_assert_eq(sdfs_obj_read(w.s, INFLIGHT_OID, back, sizeof(back), 0),
		     (ssize_t)sizeof(back));
	cr_assert_arr_eq(buf, back, sizeof(buf));
}

/* The listing waits for the write, which lands within its bound. */
Test(inflight, a_write_in_flight_when_a_node_comes_back_reaches_it)
{
	inflight_case(0);
}

/* The write outlasts the listing's bound: the pass leaves both peers
 * out, and must run again (it used to record its epoch clean). */
Test(inflight, a_pass_that_could_not_list_a_peer_runs_again)
{
	inflight_case(1);
}

/* ---- tombstones ---- */

static void up3(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .copies = 3 });
}

TestSuite(tombstones, .init = up3, .fini = down, .timeout = 90);

Test(tombstones, a_removal_leaves_no_tombstone_behind_on_any_node)
{
	struct sdfs *s = tcluster_client(tc);
	const uint64_t oids[] = { 0x70b0001, oid_make(OID_KIND_MDS, 0x70b, 0) };
	uint8_t buf[4096];
	int64_t t0;

	cr_assert_eq(tcluster_wait_healthy(tc, 30), 0);
	tsleep_ms(3500);        /* a pass run again after the start is over */
	tfill_random(buf, sizeof(buf), 0x70b);
	/* a shared object (through its primary) and an mds one (direct) */
	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(sdfs_obj_write(s, oids[i], buf, sizeof(buf), 0), 0);
		cr_assert_eq(sdfs_obj_remove(s, oids[i]), 0);
	}
	t0 = tnow_ms();
	/* Before: three tombstones each, for good (no pass ran after). */
	for (int i = 0; i < 3; i++) {
		char name[16];
		struct sdfs_node_status st;
		int ret;

		snprintf(name, sizeof(name), "blockd.%d", i);
		ret = tcluster_wait_objects(tc, name, 0, 20000);
		cr_assert_eq(tcluster_node_status(tc, name, &st), 0);
		cr_assert_eq(ret, 0, "%s still holds %" PRIu64 " objects (tombstones) %"
			     PRId64 " ms after the removals", name, st.objects,
			     tnow_ms() - t0);
	}
	cr_log_info("tombstones gone from every node %" PRId64 " ms after the removals",
		    tnow_ms() - t0);
}
