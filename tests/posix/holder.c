/*
 * holder.c - posix_holder: the cluster one POSIX test executable runs
 * against, kept up for all of its tests (posix.c starts this program
 * and stops it; it is not a test of its own and not run alone).
 *
 * Its one test starts 3 blockd, 1 mds and mount.sdfs through the
 * cluster fixture, makes the directory /ec with the policy ec=2+1 and
 * writes its path on the mount into $SDFS_POSIX_HOLD_DIR/mnt: the tests
 * run there, on erasure-coded files (docs/ec.md "EC files": replicated
 * while written, sealed by the mds once closed everywhere and idle for a
 * second, ec_seal_after_s=1, unsealed by the next write), so POSIX
 * semantics are checked on both forms. Then it waits until the runner
 * writes .../done or goes away. It fails
 * when the runner reports failed tests, so the fixture keeps the
 * cluster's dir (logs, client.log) for a look.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"

#define FUSE_SUPER_MAGIC 0x65735546

static int runner_alive(pid_t runner, pid_t parent)
{
	return kill(runner, 0) == 0 && getppid() == parent;
}

Test(posix_holder, mounts_a_cluster_until_the_posix_tests_end, .timeout = 3600)
{
	const char *dir = getenv("SDFS_POSIX_HOLD_DIR");
	const char *runner_env = getenv("SDFS_POSIX_MAIN_PID");
	pid_t runner = runner_env ? (pid_t)atoi(runner_env) : 0, parent = getppid();
	char path[PATH_MAX], tmp[PATH_MAX], ecdir[PATH_MAX], verdict[32] = "";
	struct tcluster *tc;
	struct statfs sf;
	const char *mnt;
	FILE *f;

	cr_assert(dir && runner > 0, "posix_holder is started by the posix tests (posix.c)");
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .mds = 1, .mount = 1,
						     .set = "ec_seal_after_s=1" });
	mnt = tcluster_mnt(tc);
	cr_assert(mnt, "the fixture gave no mount point");
	cr_assert(statfs(mnt, &sf) == 0, "statfs %s: %s", mnt, strerror(errno));
	cr_assert_eq(sf.f_type, FUSE_SUPER_MAGIC, "%s is no FUSE mount", mnt);
	char *err = NULL;
	int ret = tcluster_sdfs(tc, NULL, &err, "fs mkdir /ec");

	cr_assert_eq(ret, 0, "fs mkdir /ec: %s", err ? err : "");
	free(err);
	err = NULL;
	ret = tcluster_sdfs(tc, NULL, &err, "fs setpolicy /ec ec=2+1");
	cr_assert_eq(ret, 0, "fs setpolicy /ec ec=2+1: %s", err ? err : "");
	free(err);
	snprintf(ecdir, sizeof(ecdir), "%s/ec", mnt);
	struct stat root;       /* /ec as the mount's root is, for the tests */

	cr_assert(stat(mnt, &root) == 0 && chmod(ecdir, root.st_mode & 07777) == 0,
		  "chmod %s: %s", ecdir, strerror(errno));

	snprintf(tmp, sizeof(tmp), "%s/mnt.tmp", dir);
	snprintf(path, sizeof(path), "%s/mnt", dir);
	f = fopen(tmp, "w");
	cr_assert(f, "%s: %s", tmp, strerror(errno));
	fprintf(f, "%s\n", ecdir);
	cr_assert(fclose(f) == 0 && rename(tmp, path) == 0, "%s: %s", path, strerror(errno));
	cr_log_info("posix tests of pid %d run on %s (ec=2+1)", (int)runner, ecdir);

	snprintf(path, sizeof(path), "%s/done", dir);
	while (!(f = fopen(path, "r")) && runner_alive(runner, parent))
		tsleep_ms(100);
	if (f) {
		if (!fgets(verdict, sizeof(verdict), f))
			verdict[0] = '\0';
		fclose(f);
	}
	tcluster_stop(tc);
	cr_assert(strcmp(verdict, "passed\n") == 0, "the posix tests %s; the cluster is kept",
		  f ? "failed" : "ended without a verdict (runner gone)");
}
