/*
 * zk_stall_test.c - every daemon and the mount outlive their ZooKeeper
 * server going away for longer than the session timeout (issue 13):
 *
 *   - stall: the server SIGSTOPped for STALL_MS (the sessions' timeout
 *     is 2 s), then continued: the sessions are lost and expire;
 *   - restart: the server SIGKILLed, kept down for STALL_MS, and started
 *     again on the same port and data directory.
 *
 * After each: every daemon still runs (the same pid: an mds that lost
 * its session re-executes itself, it does not die), the map shows the
 * three block daemons up and answering, two mds run and one is active,
 * and the FUSE mount writes, reads back, makes, renames and removes
 * within a bounded retry; a file opened before the outage is written
 * and read through its old descriptor.
 *
 * The cluster has a ZooKeeper server of its own (SDFS_TEST_ZK is
 * ignored: tests/run's server is shared by the whole run). Its daemons
 * run with MALLOC_PERTURB_ and without the tcache, so freed memory is
 * overwritten at once: a callback that still runs on a freed object
 * then fails loudly instead of by luck. The bug this was written for
 * (a standby's predecessor watch freed after two of the calls the
 * ZooKeeper library makes for every session event) aborted the standby
 * here with the assertion in pthread_mutex_lock every time.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"

#define STALL_MS 5000           /* > the 2 s session timeout */
#define RECOVER_MS 60000        /* a bound, not a benchmark */
#define FILE_LEN (256 * 1024)
#define NDAEMONS 6

static const char *const daemon_names[NDAEMONS] = {
	"blockd.0", "blockd.1", "blockd.2", "mds.0", "mds.1", "mnt",
};

static struct tcluster *tc;
static pid_t pids[NDAEMONS];

static void up(void)
{
	/* Our own server: stopping the run's shared one would hit every
	 * other cluster of the run. */
	unsetenv("SDFS_TEST_ZK");
	/* Inherited by every daemon dev up starts (not by this process:
	 * glibc reads them at startup). */
	setenv("MALLOC_PERTURB_", "176", 0);
	setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 0);
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .mds = 2, .mount = 1 });
	for (int i = 0; i < NDAEMONS; i++) {
		pids[i] = tcluster_pid(tc, daemon_names[i]);
		cr_assert(pids[i] > 0, "no pid recorded for %s", daemon_names[i]);
	}
	cr_assert(tcluster_pid(tc, "zk") > 0, "the cluster has no ZooKeeper of its own");
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(zk_stall, .init = up, .fini = down, .timeout = 300);

/* ---- the mount ---- */

static int write_all(int fd, const char *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int read_same(int fd, const char *want, size_t len, off_t off)
{
	char *got = malloc(len);
	size_t done = 0;
	int ret = 0;

	cr_assert(got);
	while (done < len) {
		ssize_t n = pread(fd, got + done, len - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -ENODATA;
			break;
		}
		done += (size_t)n;
	}
	if (!ret && memcmp(got, want, len))
		ret = -EILSEQ;
	free(got);
	return ret;
}

/* One try of: write a new file, fsync, read it back, mkdir, rename it
 * into the directory, stat it there, unlink, rmdir. 0 or -errno (what
 * failed goes to @what). Fresh names each try. */
static int mount_round(const char *tag, unsigned attempt, const char **what)
{
	const char *mnt = tcluster_mnt(tc);
	char file[PATH_MAX], dir[PATH_MAX], moved[PATH_MAX + 8];
	char *buf = malloc(FILE_LEN);
	struct stat st;
	int fd, ret = 0;

	cr_assert(buf);
	tfill_random(buf, FILE_LEN, attempt * 7919u + (unsigned)strlen(tag));
	snprintf(file, sizeof(file), "%s/%s.%u", mnt, tag, attempt);
	snprintf(dir, sizeof(dir), "%s/%s.%u.d", mnt, tag, attempt);
	snprintf(moved, sizeof(moved), "%s/f", dir);
	fd = open(file, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0) {
		*what = "create";
		ret = -errno;
		goto out;
	}
	ret = write_all(fd, buf, FILE_LEN, 0);
	*what = "write";
	if (!ret && fsync(fd)) {
		*what = "fsync";
		ret = -errno;
	}
	if (!ret) {
		*what = "read back";
		ret = read_same(fd, buf, FILE_LEN, 0);
	}
	if (close(fd) && !ret) {
		*what = "close";
		ret = -errno;
	}
	if (ret)
		goto out;
	*what = "mkdir";
	if (mkdir(dir, 0755))
		goto err;
	*what = "rename";
	if (rename(file, moved))
		goto err;
	*what = "stat";
	if (stat(moved, &st))
		goto err;
	if (st.st_size != FILE_LEN) {
		ret = -EILSEQ;
		goto out;
	}
	*what = "unlink";
	if (unlink(moved))
		goto err;
	*what = "rmdir";
	if (rmdir(dir))
		goto err;
	goto out;
err:
	ret = -errno;
out:
	free(buf);
	return ret;
}

static int mount_works(const char *tag, int timeout_ms)
{
	const char *what = "";
	unsigned attempt = 0;
	int ret = -ETIMEDOUT;

	for (int64_t end = tnow_ms() + timeout_ms; tnow_ms() < end; tsleep_ms(200)) {
		ret = mount_round(tag, attempt++, &what);
		if (ret == 0)
			return 0;
		if (attempt == 1 || attempt % 25 == 0)
			cr_log_info("%s: mount: %s failed: %s (try %u); retrying", tag, what,
				    strerror(-ret), attempt);
	}
	cr_log_error("%s: the mount did not work within %d ms: %s: %s", tag, timeout_ms,
		     what, strerror(-ret));
	return ret;
}

/* ---- the cluster ---- */

/* Each daemon still runs under the pid it had at the start. */
static void assert_all_alive(const char *when)
{
	for (int i = 0; i < NDAEMONS; i++) {
		pid_t pid = tcluster_pid(tc, daemon_names[i]);

		if (pid == pids[i] && tcluster_running(tc, daemon_names[i]))
			continue;
		char *line = tcluster_log_line(tc, daemon_names[i], "Assertion", 0);
		if (!line)
			line = tcluster_log_line(tc, daemon_names[i], "ERROR: AddressSanitizer", 0);
		cr_assert_fail("%s: %s (pid %d) is gone%s%s (see %s/log/%s.log)", when,
			       daemon_names[i], (int)pids[i], line ? ": " : "",
			       line ? line : "", tcluster_dir(tc), daemon_names[i]);
	}
}

/* After an outage: everything back, within bounds. */
static void assert_recovered(const char *tag, int fd, const char *data)
{
	int ret;

	ret = tcluster_wait_nodes_up(tc, 3, RECOVER_MS);
	assert_all_alive(tag);
	cr_assert_eq(ret, 0, "%s: the 3 block daemons were not up and answering within "
		     "%d ms", tag, RECOVER_MS);
	ret = tcluster_wait_mds(tc, 2, RECOVER_MS);
	assert_all_alive(tag);
	cr_assert_eq(ret, 0, "%s: not 2 mds with one active within %d ms", tag,
		     RECOVER_MS);
	ret = mount_works(tag, RECOVER_MS);
	assert_all_alive(tag);
	cr_assert_eq(ret, 0, "%s: the mount did not work again within %d ms: %s", tag,
		     RECOVER_MS, strerror(-ret));
	/* The descriptor opened before the outage: write, read back. */
	for (int64_t end = tnow_ms() + RECOVER_MS; tnow_ms() < end; tsleep_ms(200)) {
		ret = write_all(fd, data, FILE_LEN, FILE_LEN);
		if (!ret)
			ret = fsync(fd) ? -errno : 0;
		if (!ret)
			ret = read_same(fd, data, FILE_LEN, FILE_LEN);
		if (!ret)
			break;
	}
	cr_assert_eq(ret, 0, "%s: the file open since before the outage: %s", tag,
		     strerror(-ret));
	cr_assert_eq(read_same(fd, data, FILE_LEN, 0), 0,
		     "%s: what was written before the outage reads back wrong", tag);
	assert_all_alive(tag);
	char active[32] = "?";
	tcluster_active_mds(tc, active, sizeof(active));
	cr_log_info("%s: every daemon runs, %s is active, the mount works", tag, active);
}

/* A file on the mount, written before the outage and kept open. */
static int open_before(const char *tag, char *data)
{
	char path[PATH_MAX];
	int fd;

	tfill_random(data, FILE_LEN, tseed(tag));
	snprintf(path, sizeof(path), "%s/%s.open", tcluster_mnt(tc), tag);
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(write_all(fd, data, FILE_LEN, 0), 0, "write %s", path);
	cr_assert_eq(fsync(fd), 0, "fsync %s: %s", path, strerror(errno));
	return fd;
}

Test(zk_stall, stopped_past_the_session_timeout)
{
	char *data = malloc(FILE_LEN);
	int fd;

	cr_assert(data);
	cr_assert_eq(mount_works("before", RECOVER_MS), 0, "the mount does not work");
	fd = open_before("stall", data);
	cr_assert_eq(tcluster_signal(tc, "zk", SIGSTOP), 0);
	tsleep_ms(STALL_MS);
	cr_assert_eq(tcluster_signal(tc, "zk", SIGCONT), 0);
	assert_recovered("stall", fd, data);
	close(fd);
	free(data);
}

/* CPU time (user + system) @pid has used, in clock ticks; -1 if gone. */
static long long cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');          /* after the command name */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return (long long)(ut + st);
}

/*
 * While ZooKeeper is down, no daemon spins: each asks again at a pace,
 * not at once on every refused connection (a standby mds used a whole
 * core for as long as its ZooKeeper server was gone). Less than half
 * of the outage in CPU, per daemon; a spinning one uses all of it.
 */
Test(zk_stall, no_daemon_spins_while_zookeeper_is_down)
{
	long long before[NDAEMONS], used;
	long hz = sysconf(_SC_CLK_TCK);

	for (int i = 0; i < NDAEMONS; i++)
		before[i] = cpu_ticks(pids[i]);
	cr_assert_eq(tcluster_kill(tc, "zk"), 0);
	tsleep_ms(STALL_MS);
	for (int i = 0; i < NDAEMONS; i++) {
		used = cpu_ticks(pids[i]) - before[i];
		cr_log_info("%s: %lld ms of CPU in %d ms without ZooKeeper", daemon_names[i],
			    used * 1000 / hz, STALL_MS);
		cr_assert_lt(used * 1000 / hz, STALL_MS / 2, "%s spins without ZooKeeper: "
			     "%lld ms of CPU in %d ms", daemon_names[i], used * 1000 / hz,
			     STALL_MS);
	}
	cr_assert_eq(tcluster_restart(tc, "zk"), 0, "ZooKeeper did not come back");
}

Test(zk_stall, killed_and_restarted)
{
	char *data = malloc(FILE_LEN);
	int fd, ret;

	cr_assert(data);
	cr_assert_eq(mount_works("before", RECOVER_MS), 0, "the mount does not work");
	fd = open_before("restart", data);
	cr_assert_eq(tcluster_kill(tc, "zk"), 0);
	tsleep_ms(STALL_MS);
	ret = tcluster_restart(tc, "zk");
	cr_assert_eq(ret, 0, "ZooKeeper did not come back: %d", ret);
	assert_recovered("restart", fd, data);
	close(fd);
	free(data);
}
