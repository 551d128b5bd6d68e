/*
 * posix.c - the shared frame of the POSIX tests (posix.h): the mount
 * for the whole executable, each test's directory, child processes as
 * other users, small file and attribute helpers.
 *
 * The runner process (criterion's, which outlives every test) starts
 * posix_holder before the first test and tells it when the last one
 * ended. The two talk through files in a private dir: the holder
 * writes "mnt" once the cluster is mounted; the runner writes "done"
 * ("passed" or "failed": a holder told "failed" fails its own test, so
 * the cluster's dir and logs are kept). The holder also goes away if
 * the runner dies. Pipes would not do: criterion's test processes do
 * not keep inherited descriptors.
 */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/posix/posix.h"

#define HOLDER_START_MS 120000  /* cluster up and mounted */
#define HOLDER_STOP_MS  120000  /* cluster down */

/* ---- the runner's side ---- */

static pid_t holder;
static char hold_dir[PATH_MAX];
static char run_root[PATH_MAX + 300];
static int external;            /* $SDFS_TEST_MNT */

/* The holder's output, to stderr, each line marked as the holder's.
 * Its criterion summary is left out: tests/run counts test cases from
 * the summaries in the log, and the holder is not one. */
static void print_holder_log(const char *path)
{
	char line[4096];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strstr(line, "Synthesis:"))
			fprintf(stderr, "posix_holder| %s", line);
	fclose(f);
}

static void hold_dir_remove(void)
{
	static const char *const files[] = { "holder.log", "mnt", "mnt.tmp", "done", "done.tmp" };
	char path[PATH_MAX + 64];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", hold_dir, files[i]);
		unlink(path);
	}
	rmdir(hold_dir);
}

static int holder_exited(int *status)
{
	return holder > 0 && waitpid(holder, status, WNOHANG) == holder;
}

/* Start posix_holder (beside this executable) and wait for its mount.
 * The mount point into @mnt, or an explanation into @why. */
static int holder_start(char *mnt, size_t len, char *why, size_t why_len)
{
	char exe[PATH_MAX], path[PATH_MAX + 64], log[PATH_MAX + 64], pid[32];
	char tmpl[] = "/tmp/sdfs-posix.XXXXXX";
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int64_t deadline = tnow_ms() + HOLDER_START_MS;
	int status;

	if (n < 0 || !mkdtemp(tmpl)) {
		snprintf(why, why_len, "readlink/mkdtemp: %s", strerror(errno));
		return -1;
	}
	exe[n] = '\0';
	snprintf(hold_dir, sizeof(hold_dir), "%s", tmpl);
	snprintf(path, sizeof(path), "%s/posix_holder", dirname(exe));
	snprintf(log, sizeof(log), "%s/holder.log", hold_dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fflush(NULL);
	holder = fork();
	if (holder < 0) {
		snprintf(why, why_len, "fork: %s", strerror(errno));
		holder = 0;
		hold_dir_remove();
		return -1;
	}
	if (holder == 0) {
		int in = open("/dev/null", O_RDONLY);
		int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(127);
		setenv("SDFS_POSIX_HOLD_DIR", hold_dir, 1);
		setenv("SDFS_POSIX_MAIN_PID", pid, 1);
		execl(path, path, "--jobs", "1", "--short-filename", "--verbose", (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/mnt", hold_dir);
	while (tnow_ms() < deadline) {
		FILE *f = fopen(path, "r");

		if (f) {
			int ok = fgets(mnt, (int)len, f) != NULL;

			fclose(f);
			mnt[strcspn(mnt, "\n")] = '\0';
			if (ok && *mnt)
				return 0;
		}
		if (holder_exited(&status)) {
			holder = 0;
			snprintf(why, why_len, "posix_holder exited (%s %d) before mounting; "
				 "its output is above", WIFEXITED(status) ? "status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			print_holder_log(log);
			hold_dir_remove();
			return -1;
		}
		tsleep_ms(50);
	}
	snprintf(why, why_len, "no mount from posix_holder within %d ms; its output is above",
		 HOLDER_START_MS);
	/* its test process sees its parent go and tears the cluster down */
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	holder = 0;
	print_holder_log(log);
	hold_dir_remove();
	return -1;
}

static void holder_stop(int passed)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 64];
	int64_t deadline = tnow_ms() + HOLDER_STOP_MS;
	int status = -1, gone = 0;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/done.tmp", hold_dir);
	snprintf(path, sizeof(path), "%s/done", hold_dir);
	f = fopen(tmp, "w");
	if (f) {
		fputs(passed ? "passed\n" : "failed\n", f);
		fclose(f);
		rename(tmp, path);
	}
	while (!(gone = holder_exited(&status)) && tnow_ms() < deadline)
		tsleep_ms(50);
	if (!gone) {
		/* its test process sees its parent go and tears down */
		fprintf(stderr, "posix: posix_holder did not stop within %d ms; killing pid %d\n",
			HOLDER_STOP_MS, (int)holder);
		kill(holder, SIGKILL);
		waitpid(holder, &status, 0);
	}
	snprintf(path, sizeof(path), "%s/holder.log", hold_dir);
	if (!passed || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		print_holder_log(path);
	hold_dir_remove();
	holder = 0;
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	const char *env = getenv("SDFS_TEST_MNT");
	char mnt[PATH_MAX], why[2 * PATH_MAX + 1024];
	(void)set;

	if (env && *env) {
		external = 1;
		snprintf(mnt, sizeof(mnt), "%s", env);
	} else if (holder_start(mnt, sizeof(mnt), why, sizeof(why))) {
		setenv("SDFS_POSIX_ERROR", why, 1);
		return;
	}
	snprintf(run_root, sizeof(run_root), "%s/%s.%d", mnt, program_invocation_short_name,
		 (int)getpid());
	if (mkdir(run_root, 0755) || chmod(run_root, 0755)) {
		snprintf(why, sizeof(why), "mkdir %s: %s", run_root, strerror(errno));
		setenv("SDFS_POSIX_ERROR", why, 1);
		run_root[0] = '\0';
		return;
	}
	setenv("SDFS_POSIX_ROOT", run_root, 1);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

ReportHook(POST_ALL)(struct criterion_global_stats *st)
{
	int passed = st->tests_failed == 0 && st->tests_crashed == 0;

	if (external && run_root[0]) {
		if (passed)
			nftw(run_root, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		else
			fprintf(stderr, "posix: the failed tests' files are in %s\n", run_root);
	}
	if (holder > 0)
		holder_stop(passed);
}

/* ---- each test's side ---- */

static char test_dir[PATH_MAX + 600];

void posix_enter(void)
{
	const char *root = getenv("SDFS_POSIX_ROOT");
	const char *why = getenv("SDFS_POSIX_ERROR");

	cr_assert(root, "no mount to test: %s", why ? why : "the runner set none");
	snprintf(test_dir, sizeof(test_dir), "%s/%s.%s", root, criterion_current_suite->name,
		 criterion_current_test->name);
	cr_assert(mkdir(test_dir, 0755) == 0, "mkdir %s: %s", test_dir, strerror(errno));
	/* others must be able to search it: the permission tests' users */
	cr_assert(chmod(test_dir, 0755) == 0, "chmod %s: %s", test_dir, strerror(errno));
	cr_assert(chdir(test_dir) == 0, "chdir %s: %s", test_dir, strerror(errno));
	umask(022);
}

const char *posix_dir(void)
{
	return test_dir;
}

const char *errname(int e)
{
	static __thread char buf[32];
	const char *n = e ? strerrorname_np(e) : "0";

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

pid_t posix_fork_as(uid_t uid, gid_t gid)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0 && (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
			 setresuid(uid, uid, uid)))
		_exit(254);
	return pid;
}

void posix_child_exit(int code)
{
	_exit(code);
}

int posix_child_wait(pid_t pid)
{
	int status;

	cr_assert(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
	cr_assert(WIFEXITED(status), "child %d died of signal %d", (int)pid,
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	cr_assert(WEXITSTATUS(status) != 254, "child could not change its uid/gid");
	return WEXITSTATUS(status);
}

struct statx sx(const char *path)
{
	struct statx st;

	cr_assert(statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC,
			STATX_BASIC_STATS, &st) == 0, "statx %s: %s", path, errname(errno));
	return st;
}

struct statx sx_fd(int fd)
{
	struct statx st;

	cr_assert(statx(fd, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC, STATX_BASIC_STATS,
			&st) == 0, "statx fd %d: %s", fd, errname(errno));
	return st;
}

int64_t ts_ns(struct statx_timestamp t)
{
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

void tick(void)
{
	tsleep_ms(20);
}

void put(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert(fd >= 0, "create %s: %s", path, errname(errno));
	pwrite_all(fd, buf, len, 0);
	cr_assert(close(fd) == 0, "close %s: %s", path, errname(errno));
}

void put_str(const char *path, const char *s)
{
	put(path, s, strlen(s));
}

char *get(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	size_t cap = 4096, used = 0;
	char *buf = malloc(cap + 1);
	ssize_t n;

	cr_assert(fd >= 0, "open %s: %s", path, errname(errno));
	cr_assert(buf);
	while ((n = read(fd, buf + used, cap - used)) > 0) {
		used += (size_t)n;
		if (used == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			cr_assert(buf);
		}
	}
	cr_assert(n == 0, "read %s: %s", path, errname(errno));
	close(fd);
	buf[used] = '\0';
	if (len)
		*len = used;
	return buf;
}

void xmkdir(const char *path, mode_t mode)
{
	cr_assert(mkdir(path, mode) == 0, "mkdir %s: %s", path, errname(errno));
	xchmod(path, mode);
}

void xchmod(const char *path, mode_t mode)
{
	cr_assert(chmod(path, mode) == 0, "chmod %s %o: %s", path, mode, errname(errno));
}

int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

void pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);

		cr_assert(n > 0, "pwrite %zu at %lld: %s", len - done, (long long)off + (long long)done,
			  n < 0 ? errname(errno) : "wrote nothing");
		done += (size_t)n;
	}
}

void pread_all(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);

		cr_assert(n > 0, "pread %zu at %lld: %s", len - done, (long long)off + (long long)done,
			  n < 0 ? errname(errno) : "end of file");
		done += (size_t)n;
	}
}

const char *long_name(size_t len)
{
	static char buf[1024];

	cr_assert(len < sizeof(buf));
	memset(buf, 'n', len);
	buf[len] = '\0';
	return buf;
}
