/*
 * fsx_test.c - sdfs-fsx on a mount.sdfs mount of a fixture cluster (3
 * blockd, copies 3, 1 mds): every read of random writes, truncates,
 * fallocates, mmap and O_DIRECT I/O must match the model, with all
 * nodes up (random_ops) and with a blockd SIGKILLed in the middle and
 * restarted later (blockd_killed_and_restarted): writes during the
 * outage go to the surviving copies, and reads, before and after the
 * node is back with its stale copies, return what was written last.
 *
 * FSX_FILES instances run in parallel, each on its own file, seeded
 * from one logged seed (instance i gets seed + i): rerun with
 * SDFS_TEST_SEED=... for the same operations, or replay one instance
 * by hand with the --seed its log prints. Each instance's output is in
 * DIR/fsx.I.log (kept when the test fails) and printed on a failure.
 *
 * Sizes, measured on the 2-core development machine: one instance
 * alone does ~330 ops/s, two ~240 each, three ~205 each (~620 in all;
 * the cluster's daemons use both cores). random_ops runs 3 x 20,000
 * ops (~1.7 min; 3 x 34,000 took 3.1 min in CI and 3 x 25,000 2.1 min,
 * cut as the VM, NBD and copy-on-write tests joined the suite, to keep
 * the CI run under 30 min), the kill test 3 x 8,000 (40 s): 84,000
 * verified operations in all. The
 * deadlines allow for a machine about half as fast.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/cluster/fixture.h"
#include "tests/fsx/tproc.h"

#define FSX_FILES       3
#define FSX_MAX_SIZE    "32M"           /* 8 objects of 4 MiB: boundaries get hit */
#define RANDOM_OPS      20000           /* per instance */
#define RANDOM_DEADLINE_S 420
#define KILL_OPS        8000            /* per instance */
#define KILL_AT_OPS     1500            /* instance 0's progress at the kill */
#define RESTART_AT_OPS  5000            /* ... and at the restart */
#define KILL_DEADLINE_S 180
#define PROGRESS_EVERY  "500"

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .copies = 3, .mds = 1,
						     .mount = 1 });
	cr_assert(tcluster_mnt(tc), "the fixture gave no mount");
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(fsx, .init = up, .fini = down);

struct fsx_run {
	pid_t pid;
	int status;             /* -1: still running */
	uint64_t seed;
	char log[4200];
};

static const char *fsx_bin(void)
{
	const char *bin = getenv("FSX_BIN");

	cr_assert(bin && *bin, "FSX_BIN is not set (run through meson test)");
	return bin;
}

static void start_all(struct fsx_run *r, unsigned ops)
{
	uint64_t seed = tseed("sdfs-fsx") % 1000000000000ull;
	uint32_t osz = sdfs_obj_size(tcluster_client(tc));
	char s_ops[32], s_seed[32], s_osz[32];

	cr_assert_gt(osz, 0);
	snprintf(s_ops, sizeof(s_ops), "%u", ops);
	snprintf(s_osz, sizeof(s_osz), "%" PRIu32, osz);
	for (unsigned i = 0; i < FSX_FILES; i++) {
		r[i].seed = seed + i;
		r[i].status = -1;
		snprintf(s_seed, sizeof(s_seed), "%" PRIu64, r[i].seed);
		snprintf(r[i].log, sizeof(r[i].log), "%s/fsx.%u.log", tcluster_dir(tc), i);
		char *argv[] = { (char *)fsx_bin(), "--dir", (char *)tcluster_mnt(tc),
				 "--ops", s_ops, "--seed", s_seed, "--max-size", FSX_MAX_SIZE,
				 "--obj-size", s_osz, "--progress", PROGRESS_EVERY, NULL };
		r[i].pid = tproc_start(argv, NULL, r[i].log);
		cr_log_info("fsx.%u: seed %" PRIu64 ", %u ops on %s, log %s", i, r[i].seed,
			    ops, tcluster_mnt(tc), r[i].log);
	}
}

/* Reap the instances that ended; a failed one fails the test at once
 * (its log printed), so a kill schedule never waits on a dead run. */
static unsigned reap(struct fsx_run *r)
{
	unsigned running = 0;

	for (unsigned i = 0; i < FSX_FILES; i++) {
		if (r[i].status < 0 && !tproc_done(r[i].pid, &r[i].status)) {
			running++;
			continue;
		}
		if (r[i].status != 0) {
			tproc_dump(r[i].log, 12000);
			cr_assert_fail("fsx.%u (seed %" PRIu64 ") exited with %d: see its log "
				       "above or %s", i, r[i].seed, r[i].status, r[i].log);
		}
	}
	return running;
}

/* Instance @i's last progress line, in ops; 0 before the first. */
static uint64_t progress(const struct fsx_run *r)
{
	char *line = tproc_last_line(r->log, "sdfs-fsx: ");
	unsigned long long n = 0;

	if (line && sscanf(line, "sdfs-fsx: %llu ops,", &n) != 1)
		n = 0;
	free(line);
	return n;
}

static void wait_progress(struct fsx_run *r, uint64_t ops, int64_t deadline)
{
	while (progress(&r[0]) < ops) {
		cr_assert(reap(r) > 0, "every fsx ended before %" PRIu64 " ops", ops);
		cr_assert_lt(tnow_ms(), deadline, "fsx.0 did not reach %" PRIu64
			     " ops in time", ops);
		tsleep_ms(100);
	}
}

static void wait_all(struct fsx_run *r, int64_t deadline)
{
	while (reap(r) > 0) {
		if (tnow_ms() >= deadline) {
			for (unsigned i = 0; i < FSX_FILES; i++) {
				if (r[i].status >= 0)
					continue;
				tproc_wait(r[i].pid, 0);        /* SIGKILL */
				tproc_dump(r[i].log, 4000);
			}
			cr_assert_fail("fsx did not finish in time");
		}
		tsleep_ms(200);
	}
	for (unsigned i = 0; i < FSX_FILES; i++) {
		char *sum = tproc_last_line(r[i].log, "sdfs-fsx: seed");

		cr_log_info("fsx.%u: %s", i, sum ? sum : "(no summary)");
		free(sum);
	}
}

Test(fsx, random_ops, .timeout = RANDOM_DEADLINE_S + 60)
{
	struct fsx_run r[FSX_FILES];

	start_all(r, RANDOM_OPS);
	wait_all(r, tnow_ms() + RANDOM_DEADLINE_S * 1000);
}

Test(fsx, blockd_killed_and_restarted, .timeout = KILL_DEADLINE_S + 60)
{
	struct fsx_run r[FSX_FILES];
	int64_t deadline = tnow_ms() + KILL_DEADLINE_S * 1000;
	uint64_t pick = tseed("victim"), at;
	char victim[32];

	snprintf(victim, sizeof(victim), "blockd.%u", (unsigned)(pick % 3));
	start_all(r, KILL_OPS);

	wait_progress(r, KILL_AT_OPS, deadline);
	cr_assert_eq(tcluster_kill(tc, victim), 0, "dev kill %s", victim);
	cr_assert_not(tcluster_running(tc, victim));
	at = progress(&r[0]);
	cr_log_info("%s SIGKILLed at fsx.0's op ~%" PRIu64, victim, at);

	wait_progress(r, RESTART_AT_OPS, deadline);
	cr_log_info("restarting %s at fsx.0's op ~%" PRIu64 " (%" PRIu64 " ops without it)",
		    victim, progress(&r[0]), progress(&r[0]) - at);
	cr_assert_eq(tcluster_restart(tc, victim), 0, "restart %s", victim);
	cr_log_info("%s back at fsx.0's op ~%" PRIu64, victim, progress(&r[0]));

	wait_all(r, deadline);
}

/*
 * ec_dir_sealed_between: one sdfs-fsx on a file under an ec=2+1
 * directory (4 blockd, ec_seal_after_s=1): every 500 ops it closes the
 * file for 5 s, long enough for the hold to go and the mds to seal the
 * file (docs/ec.md "EC files"), then reopens it and reads it all back
 * (sealed: from its stripes); its next write unseals it. The mds log
 * must show a seal and an unseal for each pause but the last's unseal.
 * About 30 s.
 */
#define EC_OPS          "2500"
#define EC_PAUSE_EVERY  "500"
#define EC_DEADLINE_S   150

static void up_ec(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 4, .mds = 1, .mount = 1,
						     .set = "ec_seal_after_s=1" });
	cr_assert(tcluster_mnt(tc), "the fixture gave no mount");
}

TestSuite(fsx_ec, .init = up_ec, .fini = down);

static unsigned count_lines(const char *path, const char *what)
{
	char *all = tproc_slurp(path);
	unsigned n = 0;

	for (const char *p = all; p && (p = strstr(p, what)); p++)
		n++;
	free(all);
	return n;
}

Test(fsx_ec, ec_dir_sealed_between, .timeout = EC_DEADLINE_S + 60)
{
	uint64_t seed = tseed("sdfs-fsx") % 1000000000000ull;
	char dir[600], log[600], mlog[600], s_seed[32], s_osz[32];
	struct sdfs_stat st, out;
	int status;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/e", tcluster_mnt(tc));
	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_assert_eq(sdfs_ns_resolve(tcluster_client(tc), "/e", 1, &st), 0);
	cr_assert_eq(sdfs_ns_setpolicy(tcluster_client(tc), st.ino, 0x2202 /* ec=2+1 */,
				       &out), 0);
	snprintf(s_seed, sizeof(s_seed), "%" PRIu64, seed);
	snprintf(s_osz, sizeof(s_osz), "%" PRIu32, sdfs_obj_size(tcluster_client(tc)));
	snprintf(log, sizeof(log), "%s/fsx.ec.log", tcluster_dir(tc));
	char *argv[] = { (char *)fsx_bin(), "--dir", dir, "--ops", EC_OPS, "--seed", s_seed,
			 "--max-size", "16M", "--obj-size", s_osz, "--progress",
			 EC_PAUSE_EVERY, "--pause-every", EC_PAUSE_EVERY, NULL };
	pid = tproc_start(argv, NULL, log);
	cr_log_info("fsx.ec: seed %" PRIu64 ", log %s", seed, log);
	status = tproc_wait(pid, tnow_ms() + EC_DEADLINE_S * 1000);
	if (status != 0)
		tproc_dump(log, 4000);
	cr_assert_eq(status, 0, "sdfs-fsx on an ec=2+1 file: status %d", status);
	char *sum = tproc_last_line(log, "sdfs-fsx: seed");
	cr_log_info("fsx.ec: %s", sum ? sum : "(no summary)");
	free(sum);
	snprintf(mlog, sizeof(mlog), "%s/log/mds.0.log", tcluster_dir(tc));
	unsigned seals = count_lines(mlog, "sealed ec="), unseals = count_lines(mlog,
										 "unsealed (");
	cr_log_info("fsx.ec: %u seals, %u unseals", seals, unseals);
	cr_assert_geq(seals, 3, "the file was sealed %u times in 4 pauses", seals);
	cr_assert_geq(unseals, 2, "the file was unsealed %u times", unseals);
}
