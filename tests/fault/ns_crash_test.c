/*
 * ns_crash_test.c - the crash half of the durability contract for
 * namespace changes (docs/consistency.md "What is durable when"): an
 * acknowledged change survives the crash of any process and the loss
 * of copies-1 nodes, across mds failovers, exactly once.
 *
 * Three writers, each in its own directory: one through each of two
 * mounts (mount.sdfs, the kernel's path) and one through a libsdfs
 * handle, stream creates, mkdirs, renames (of files, over files, of
 * directories with their contents), unlinks and rmdirs, paced, and keep
 * a model of every acknowledged change (nsmodel.h). Meanwhile:
 *   1. SIGKILL of the active mds (the standby takes over; the killed
 *      one restarts as a standby);
 *   2. SIGKILL of each blockd in turn, restarted, the cluster healthy
 *      again before the next (copies 3: two copies always up);
 *   3. SIGSTOP of the active mds until the other takes over, then
 *      SIGCONT (it must step down, changing nothing).
 * A call that fails with an error that a crash can explain (EIO,
 * ETIMEDOUT, ...) is resolved by looking: the change must be wholly
 * done or wholly not (a rename: the source gone and the target there,
 * or the source there and the target as it was), and the model follows
 * what is there; any other error fails the test (a resent create that
 * answers EEXIST would be a change applied twice). At the end the
 * active mds is killed once more, and each writer's tree, read through
 * a fresh libsdfs handle from the mds that took over (from the
 * database, no cache), must be exactly its model.
 *
 * Printed, not asserted: each writer's changes, errors and its longest
 * stall; each failover's time.
 *
 * 3 blockd (copies 3), 2 mds, 2 mounts; needs root and /dev/fuse.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/fault/nsmodel.h"

#define NBLOCKD 3
#define NWRITERS 3
#define MAX_OPS 1500            /* per writer */
#define PACE_MS 15              /* between a writer's changes */
#define STALL_MS 1000           /* a change slower than this is a stall */
#define RESOLVE_MS 30000        /* looking at an uncertain change */
#define TAKEOVER_MS 15000
#define ROOT_INO 1

static struct tcluster *tc;
static int64_t t0_all;          /* the writers' start, tnow_ms */

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NBLOCKD,
		.copies = NBLOCKD, .mds = 2, .mounts = 2 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(ns_crash, .init = up, .fini = down, .timeout = 240);

struct writer {
	char name[16];
	struct sdfs *s;         /* libsdfs writer; NULL: through root */
	struct sdfs *probe;     /* its own handle for looking */
	char root[PATH_MAX];
	uint64_t root_ino;
	uint64_t rng;
	struct nsm m;
	atomic_int *stop;
	pthread_t thread;
	/* results */
	atomic_size_t ops;      /* changes tried */
	size_t errors, uncertain_done, uncertain_not;
	int64_t max_ms;
	size_t stalls;
	int64_t stall_at[16], stall_ms[16];     /* the first 16, from t0_all */
	int failed;
	char why[512];
};

static bool crash_errno(int e)
{
	switch (e) {
	case EIO: case ETIMEDOUT: case ENOTCONN: case EAGAIN: case EINTR:
	case ECONNREFUSED: case ECONNRESET: case EHOSTUNREACH: case ESHUTDOWN:
	case EPIPE:
		return true;
	}
	return false;
}

/* 1 or 0 (is @path there), retried while the cluster cannot say. */
static int exists(struct writer *w, const char *path)
{
	int ret = -ETIMEDOUT;

	for (int64_t end = tnow_ms() + RESOLVE_MS; tnow_ms() < end; tsleep_ms(200)) {
		ret = nsm_exists(w->probe, w->root_ino, path);
		if (ret >= 0)
			return ret;
	}
	return ret;
}

/*
 * @op failed with -@err: was it done? Applies it to the model if so;
 * 0, or -1 with w->why set (half done, or the cluster never said).
 */
static int resolve(struct writer *w, const struct nsm_op *op, int err)
{
	char buf[2 * NSM_PATH + 16];
	int ea = exists(w, op->a), eb = 0;
	bool done;

	nsm_op_str(op, buf, sizeof(buf));
	if (op->kind == NSM_RENAME)
		eb = exists(w, op->b);
	if (ea < 0 || eb < 0) {
		snprintf(w->why, sizeof(w->why), "%s: %s failed (%s), and looking "
			 "failed too: %s", w->name, buf, strerror(err),
			 strerror(-(ea < 0 ? ea : eb)));
		return -1;
	}
	switch (op->kind) {
	case NSM_CREATE:
	case NSM_MKDIR:
		done = ea;
		break;
	case NSM_UNLINK:
	case NSM_RMDIR:
		done = !ea;
		break;
	case NSM_RENAME:
		if (!ea && eb) {
			done = true;
		} else if (ea && eb == nsm_has(&w->m, op->b)) {
			done = false;
		} else {
			snprintf(w->why, sizeof(w->why), "%s: %s failed (%s) and is "
				 "half done: source %s, target %s", w->name, buf,
				 strerror(err), ea ? "there" : "gone",
				 eb ? "there" : "missing");
			return -1;
		}
		break;
	default:
		return -1;
	}
	if (done) {
		nsm_apply(&w->m, op);
		w->uncertain_done++;
	} else {
		w->uncertain_not++;
	}
	/* stderr: criterion's logging is not for other threads */
	fprintf(stderr, "%s: %s failed (%s): %s\n", w->name, buf, strerror(err),
		done ? "it was done" : "it was not done");
	return 0;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char buf[2 * NSM_PATH + 16];

	while (!atomic_load(w->stop) && w->ops < MAX_OPS) {
		struct nsm_op op;
		int64_t t0 = tnow_ms(), dt;
		int ret;

		nsm_next(&w->m, &w->rng, &op);
		ret = w->s ? nsm_do_sdfs(w->s, w->root_ino, &op)
			   : nsm_do_posix(w->root, &op);
		dt = tnow_ms() - t0;
		if (dt > w->max_ms)
			w->max_ms = dt;
		if (dt > STALL_MS && w->stalls < 16) {
			w->stall_at[w->stalls] = t0 - t0_all;
			w->stall_ms[w->stalls] = dt;
		}
		if (dt > STALL_MS)
			w->stalls++;
		w->ops++;
		if (ret == 0) {
			nsm_apply(&w->m, &op);
		} else if (crash_errno(-ret)) {
			w->errors++;
			if (resolve(w, &op, -ret) < 0) {
				w->failed = 1;
				return NULL;
			}
		} else {
			snprintf(w->why, sizeof(w->why), "%s: change %zu, %s: %s "
				 "(the model says it must succeed)", w->name,
				 atomic_load(&w->ops),
				 nsm_op_str(&op, buf, sizeof(buf)), strerror(-ret));
			w->failed = 1;
			return NULL;
		}
		tsleep_ms(PACE_MS);
	}
	return NULL;
}

/* Every writer makes @n more changes (or stopped failing): they are
 * not stuck after a fault. */
static void wait_progress(struct writer *w, size_t n, const char *after)
{
	size_t base[NWRITERS];
	int64_t t = tnow_ms();

	for (unsigned i = 0; i < NWRITERS; i++)
		base[i] = atomic_load(&w[i].ops);
	for (unsigned i = 0; i < NWRITERS; i++) {
		while (!w[i].failed && atomic_load(&w[i].ops) < base[i] + n &&
		       atomic_load(&w[i].ops) < MAX_OPS) {
			cr_assert_lt(tnow_ms() - t, TAKEOVER_MS * 2, "%s made no "
				     "%zu changes within %d ms after %s", w[i].name,
				     n, TAKEOVER_MS * 2, after);
			tsleep_ms(20);
		}
	}
}

static struct sdfs *open_handle(void)
{
	struct sdfs *s;
	char err[256];
	int ret = sdfs_open(tcluster_conf(tc), &s, err, sizeof(err));

	cr_assert_eq(ret, 0, "sdfs_open: %s", err);
	return s;
}

static void kill_active_mds(const char *why)
{
	char old[32], next[32];
	int64_t t0;
	int ret;

	cr_assert_eq(tcluster_wait_mds(tc, 2, TAKEOVER_MS), 0,
		     "two mds with one active did not come back");
	cr_assert_eq(tcluster_active_mds(tc, old, sizeof(old)), 0);
	cr_assert_eq(tcluster_kill(tc, old), 0);
	t0 = tnow_ms();
	ret = tcluster_wait_active_mds(tc, old, next, sizeof(next), TAKEOVER_MS);
	cr_assert_eq(ret, 0, "no mds took over within %d ms of killing %s",
		     TAKEOVER_MS, old);
	cr_log_info("+%" PRId64 " ms %s: SIGKILL of the active %s; %s active after "
		    "%" PRId64 " ms", t0 - t0_all, why, old, next, tnow_ms() - t0);
	cr_assert_eq(tcluster_restart(tc, old), 0, "%s did not restart", old);
}

static void crash_blockd(unsigned i)
{
	char name[16];
	int64_t t0;

	snprintf(name, sizeof(name), "blockd.%u", i);
	tsleep_ms(500);
	t0 = tnow_ms();
	cr_assert_eq(tcluster_kill(tc, name), 0);
	cr_log_info("+%" PRId64 " ms: SIGKILL of %s", t0 - t0_all, name);
	tsleep_ms(1000);        /* writers go on with two copies */
	t0 = tnow_ms();
	cr_assert_eq(tcluster_restart(tc, name), 0, "%s did not restart", name);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0,
		     "not healthy again after %s restarted", name);
	cr_log_info("SIGKILL of %s; back and the cluster healthy %" PRId64
		    " ms after its restart", name, tnow_ms() - t0);
}

static void hang_active_mds(void)
{
	char old[32], next[32];
	int64_t t0;
	int ret;

	cr_assert_eq(tcluster_wait_mds(tc, 2, TAKEOVER_MS), 0,
		     "two mds with one active did not come back");
	cr_assert_eq(tcluster_active_mds(tc, old, sizeof(old)), 0);
	cr_assert_eq(tcluster_signal(tc, old, SIGSTOP), 0);
	t0 = tnow_ms();
	ret = tcluster_wait_active_mds(tc, old, next, sizeof(next), TAKEOVER_MS);
	cr_assert_eq(ret, 0, "no mds took over within %d ms of stopping %s",
		     TAKEOVER_MS, old);
	cr_log_info("+%" PRId64 " ms: SIGSTOP of the active %s; %s active after "
		    "%" PRId64 " ms", t0 - t0_all, old, next, tnow_ms() - t0);
	tsleep_ms(1000);        /* writers go on with the new one */
	cr_assert_eq(tcluster_signal(tc, old, SIGCONT), 0);
	char *line = tcluster_log_line(tc, old, "stepping down", TAKEOVER_MS);

	cr_log_info("SIGCONT of %s: %s", old, line ? line : "(no \"stepping down\" logged)");
	free(line);
}

Test(ns_crash, acknowledged_changes_survive_every_daemon_crash)
{
	static const char *dirs[NWRITERS] = { "m1", "m2", "lib" };
	struct writer *w = calloc(NWRITERS, sizeof(*w));
	atomic_int stop = 0;
	uint64_t seed = tseed("ns_crash");

	cr_assert(w);
	for (unsigned i = 0; i < NWRITERS; i++) {
		struct sdfs_stat st;
		int ret = sdfs_ns_mkdir(tcluster_client(tc), ROOT_INO, dirs[i],
					0755, 0, 0, &st);

		cr_assert_eq(ret, 0, "mkdir %s: %s", dirs[i], strerror(-ret));
		snprintf(w[i].name, sizeof(w[i].name), "%s", dirs[i]);
		w[i].root_ino = st.ino;
		w[i].rng = seed + i * 0x9e3779b97f4a7c15ull;
		w[i].stop = &stop;
		w[i].probe = open_handle();
		nsm_init(&w[i].m);
		if (i < 2)
			snprintf(w[i].root, sizeof(w[i].root), "%s/%s",
				 tcluster_mnt_n(tc, i), dirs[i]);
		else
			w[i].s = open_handle();
	}
	t0_all = tnow_ms();
	for (unsigned i = 0; i < NWRITERS; i++)
		cr_assert_eq(pthread_create(&w[i].thread, NULL, writer_main, &w[i]), 0);

	wait_progress(w, 20, "the start");
	kill_active_mds("mid-stream");
	wait_progress(w, 10, "the mds failover");
	for (unsigned i = 0; i < NBLOCKD; i++) {
		crash_blockd(i);
		wait_progress(w, 10, "a blockd restart");
	}
	hang_active_mds();
	wait_progress(w, 20, "the hung mds");

	atomic_store(&stop, 1);
	for (unsigned i = 0; i < NWRITERS; i++)
		pthread_join(w[i].thread, NULL);
	cr_log_info("writers stopped after %" PRId64 " ms", tnow_ms() - t0_all);
	for (unsigned i = 0; i < NWRITERS; i++) {
		cr_log_info("%s: %zu changes (%s), %zu failed with a crash's error "
			    "(%zu were done, %zu not), longest %" PRId64 " ms, "
			    "%zu stalls over %d ms; %zu entries now",
			    w[i].name, atomic_load(&w[i].ops), w[i].s ? "libsdfs" : "mount",
			    w[i].errors, w[i].uncertain_done, w[i].uncertain_not,
			    w[i].max_ms, w[i].stalls, STALL_MS, w[i].m.n);
		for (size_t k = 0; k < w[i].stalls && k < 16; k++)
			cr_log_info("%s: stall at +%" PRId64 " ms: %" PRId64 " ms",
				    w[i].name, w[i].stall_at[k], w[i].stall_ms[k]);
		cr_assert_not(w[i].failed, "%s", w[i].why);
	}

	/* What the database holds: read from the mds that takes over. */
	kill_active_mds("before the check");
	struct sdfs *s = open_handle();

	for (unsigned i = 0; i < NWRITERS; i++) {
		struct nsm got;
		char diff[1024];
		int ret;

		nsm_init(&got);
		ret = nsm_read(s, w[i].root_ino, &got);
		cr_assert_eq(ret, 0, "%s: reading its tree: %s", w[i].name,
			     strerror(-ret));
		nsm_diff(&w[i].m, &got, diff, sizeof(diff));
		cr_assert(nsm_equal(&w[i].m, &got), "%s: the namespace is not its "
			  "model of %zu acknowledged changes:%s", w[i].name,
			  atomic_load(&w[i].ops), diff);
		nsm_free(&got);
	}
	cr_log_info("every writer's tree is its model, read from the new active");
	sdfs_close(s);
	for (unsigned i = 0; i < NWRITERS; i++) {
		sdfs_close(w[i].probe);
		sdfs_close(w[i].s);
		nsm_free(&w[i].m);
	}
	free(w);
}
