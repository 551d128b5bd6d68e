/*
 * restart_all_test.c - every block daemon stops, then all start again
 * in the reverse order: nodes keep their data and ids, the map and its
 * history are in ZooKeeper, and the cluster comes back healthy with
 * every object as last written, removed ones still removed, and nothing
 * fetched (every copy was current when the nodes stopped).
 *
 * Once with SIGKILL (a crash of every daemon), once with SIGTERM (a
 * clean stop: each leaves ZooKeeper at once). Objects from a logged seed.
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
#define NOBJ 120
#define NCHANGED 30
#define NREMOVED 10
#define MAX_SIZE (128u << 10)
#define CHANGE_MS 30000

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NBLOCKD, .copies = COPIES,
						     .out_grace_s = 60 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(restart_all, .init = up, .fini = down, .timeout = 180);

static void restart_all(int clean)
{
	uint64_t seed = tseed("objects"), rng = seed ^ 0xa11;
	struct objset *os = objset_new(tcluster_client(tc), NOBJ, MAX_SIZE, seed);
	unsigned silent;
	int64_t t0 = tnow_ms();

	for (unsigned i = 0; i < NOBJ; i++)
		cr_assert_eq(objset_change(os, i, tnow_ms() + CHANGE_MS, NULL), 0);
	for (unsigned k = 0; k < NCHANGED; k++)
		cr_assert_eq(objset_change(os, (unsigned)(trand(&rng) % NOBJ),
					   tnow_ms() + CHANGE_MS, NULL), 0);
	for (unsigned k = 0; k < NREMOVED; k++) {
		unsigned i;

		do
			i = (unsigned)(trand(&rng) % NOBJ);
		while (!objset_exists(os, i));
		cr_assert_eq(objset_remove(os, i, tnow_ms() + CHANGE_MS), 0);
	}
	cr_log_info("objects written, changed, removed in %" PRId64 " ms", tnow_ms() - t0);
	cr_assert_eq(tcluster_wait_healthy(tc, 30), 0);
	cr_assert_eq(tcluster_moved_objs(tc, NULL), 0);

	t0 = tnow_ms();
	for (unsigned i = 0; i < NBLOCKD; i++) {
		char name[32];

		snprintf(name, sizeof(name), "blockd.%u", i);
		if (clean)
			cr_assert_eq(tcluster_term(tc, name), 0, "%s did not stop", name);
		else
			cr_assert_eq(tcluster_kill(tc, name), 0);
	}
	for (unsigned i = NBLOCKD; i-- > 0;) {
		char name[32];

		snprintf(name, sizeof(name), "blockd.%u", i);
		cr_assert_eq(tcluster_restart(tc, name), 0, "%s did not come back", name);
	}
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	cr_log_info("all stopped and back, healthy, in %" PRId64 " ms", tnow_ms() - t0);
	cr_assert_eq(tcluster_moved_objs(tc, &silent), 0, "objects were fetched, but every "
		     "copy was current when the nodes stopped");
	cr_assert_eq(silent, 0);

	objset_check_replicas(os, COPIES, 0, NULL, "restarted");
	objset_check_reads(os, "restarted");
	cr_assert_eq(tcluster_moved_objs(tc, NULL), 0);
	objset_free(os);
}

Test(restart_all, all_killed_then_started_in_reverse_order_keep_all_data)
{
	restart_all(0);
}

Test(restart_all, all_stopped_cleanly_then_started_in_reverse_order_keep_all_data)
{
	restart_all(1);
}
