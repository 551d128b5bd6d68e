/*
 * dbench_test.c - dbench (its client.txt load: file server traffic
 * from 4 clients for 20 s) on a mount.sdfs mount of a fixture cluster
 * (3 blockd, copies 3, 1 mds). It must exit 0 and print no error line:
 * dbench reports a failed or unexpected result of any call it replays
 * ("open ... failed", "ERROR: handle ... was not found", "unlink ...
 * failed (...) - expected ...") and goes on, so the exit code alone
 * would miss them. Its output is in DIR/dbench.log.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/fsx/tproc.h"

#define DBENCH          "/usr/bin/dbench"
#define DBENCH_LOAD     "/usr/share/dbench/client.txt"
#define DBENCH_SECS     "20"
#define DBENCH_CLIENTS  "4"
#define DBENCH_DEADLINE_S 120   /* warmup, 20 s, cleanup of what it made */

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

TestSuite(dbench, .init = up, .fini = down, .timeout = DBENCH_DEADLINE_S + 30);

/* A line of dbench's that reports a failed call. dbench 4.0 prints
 * "failed to create barrier semaphore" where SysV semaphores are not
 * available and then synchronizes its clients another way: not an
 * error of the filesystem. */
static int is_error_line(const char *line)
{
	static const char *const words[] = { "fail", "error", "expected", "not found",
					     "no such", "unable" };

	if (!strncmp(line, "failed to create barrier semaphore", 34))
		return 0;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		for (const char *p = line; *p; p++)
			if (!strncasecmp(p, words[i], strlen(words[i])))
				return 1;
	return 0;
}

Test(dbench, client_load_4_clients)
{
	char dir[4200], log[4200];
	char *argv[] = { DBENCH, "-c", DBENCH_LOAD, "-D", dir, "-t", DBENCH_SECS,
			 DBENCH_CLIENTS, NULL };
	int status, errors = 0;
	char *out;

	if (access(DBENCH, X_OK) || access(DBENCH_LOAD, R_OK))
		cr_assert_fail("%s or %s missing: install the dbench package "
			       "(tools/install-deps)", DBENCH, DBENCH_LOAD);
	snprintf(dir, sizeof(dir), "%s/dbench", tcluster_mnt(tc));
	snprintf(log, sizeof(log), "%s/dbench.log", tcluster_dir(tc));
	cr_assert_eq(mkdir(dir, 0755), 0, "mkdir %s: %s", dir, strerror(errno));

	/* its cwd: the cluster dir, so no stray file lands elsewhere */
	status = tproc_wait(tproc_start(argv, tcluster_dir(tc), log),
			    tnow_ms() + DBENCH_DEADLINE_S * 1000);
	out = tproc_slurp(log);
	cr_assert(out, "no output from dbench in %s", log);
	for (char *line = out, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (is_error_line(line) && errors++ < 20)
			cr_log_error("dbench: %s", line);
		if (!nl)
			break;
	}
	free(out);
	if (status || errors)
		tproc_dump(log, 6000);
	cr_assert_eq(status, 0, "dbench exited with %d (-110: killed after %d s)", status,
		     DBENCH_DEADLINE_S);
	cr_assert_eq(errors, 0, "dbench printed %d error lines (see above, %s)", errors, log);
	char *thr = tproc_last_line(log, "Throughput");
	cr_assert(thr, "dbench printed no Throughput line");
	cr_log_info("dbench on sdfs: %s", thr);
	free(thr);
}
