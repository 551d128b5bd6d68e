/*
 * fixture.c - see fixture.h. Everything goes through the sdfs binary
 * named by $SDFS_BIN (`sdfs dev ...` starts and stops the daemons) and
 * through libsdfs for the cluster's state.
 */
#include "tests/cluster/fixture.h"
#include "tests/cluster/tjson.h"

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define RUN_TIMEOUT_MS 120000   /* no CLI call may take longer */
#define MAX_ARGS 64

struct tcluster {
	char dir[PATH_MAX];
	char conf[PATH_MAX + 16];
	char name[48];
	unsigned nblockd;
	unsigned nmds;
	int mount;              /* opts.mount or opts.mounts: mnt is DIR/mnt */
	char mnt[PATH_MAX + 8];
	unsigned nmounts;       /* mount points in use: mnts[0..nmounts) */
	char mnts[TCLUSTER_MOUNTS_MAX][PATH_MAX + 16];  /* DIR/mnt, DIR/mnt2... */
	pid_t stopped[8];       /* SIGSTOPped daemons: SIGCONT at teardown */
	struct sdfs *client;
	FILE *client_log;
	pid_t watchdog;
	int watchdog_fd;        /* write end: a byte = torn down; EOF = died */
	char *up_argv[28];      /* tcluster_start's dev up, for tcluster_up_again */
};

int64_t tnow_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tsleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

uint64_t trand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void tfill_random(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t st = seed, v;

	for (; len >= 8; p += 8, len -= 8) {
		v = trand(&st);
		memcpy(p, &v, 8);
	}
	v = trand(&st);
	memcpy(p, &v, len);
}

uint64_t tseed(const char *what)
{
	const char *env = getenv("SDFS_TEST_SEED");
	struct timespec ts;
	uint64_t seed;

	if (env && *env) {
		seed = strtoull(env, NULL, 0);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
		       ((uint64_t)getpid() << 40);
		seed = trand(&seed);
	}
	cr_log_info("%s: seed %" PRIu64 " (rerun with SDFS_TEST_SEED=%" PRIu64 ")",
		    what, seed, seed);
	return seed;
}

size_t tcount_lines(const char *s)
{
	size_t n = 0;

	if (!s)
		return 0;
	for (const char *p = s; *p; p++)
		n += *p == '\n';
	if (*s && s[strlen(s) - 1] != '\n')
		n++;
	return n;
}

static const char *sdfs_bin(void)
{
	const char *bin = getenv("SDFS_BIN");

	cr_assert(bin && *bin, "SDFS_BIN is not set (run through meson test)");
	return bin;
}

static char *slurp_fd(int fd)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t got = 0;

	if (fstat(fd, &st) < 0)
		st.st_size = 0;
	buf = malloc((size_t)st.st_size + 1);
	cr_assert(buf);
	while (got < (size_t)st.st_size &&
	       (n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	return buf;
}

static char *slurp_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *s;

	if (fd < 0)
		return NULL;
	s = slurp_fd(fd);
	close(fd);
	return s;
}

/*
 * Run @argv with stdin from /dev/null and stdout/stderr captured in
 * memory files. The child closes every other descriptor, so daemons it
 * starts inherit nothing of criterion's or meson's.
 */
static int run_argv(char *const argv[], char **out, char **err)
{
	int ofd = memfd_create("out", MFD_CLOEXEC), efd = memfd_create("err", MFD_CLOEXEC);
	int status = 0;
	pid_t pid, w;

	cr_assert(ofd >= 0 && efd >= 0, "memfd_create: %s", strerror(errno));
	pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDONLY);

		if (nfd < 0 || dup2(nfd, 0) < 0 || dup2(ofd, 1) < 0 || dup2(efd, 2) < 0)
			_exit(127);
		close_range(3, ~0u, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	for (int64_t end = tnow_ms() + RUN_TIMEOUT_MS;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			cr_assert_fail("waitpid: %s", strerror(errno));
		if (tnow_ms() > end) {
			cr_log_error("%s %s: still running after %d ms; killing it",
				     argv[0], argv[1] ? argv[1] : "", RUN_TIMEOUT_MS);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		tsleep_ms(5);
	}
	if (out)
		*out = slurp_fd(ofd);
	if (err)
		*err = slurp_fd(efd);
	close(ofd);
	close(efd);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* argv = @prefix..., then the space-separated words of @fmt. */
static int run_words(char **out, char **err, const char *const *prefix,
		     const char *fmt, va_list ap)
{
	char line[8192], *argv[MAX_ARGS + 1], *save;
	int argc = 0;

	vsnprintf(line, sizeof(line), fmt, ap);
	for (; *prefix; prefix++)
		argv[argc++] = (char *)*prefix;
	for (char *w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		cr_assert(argc < MAX_ARGS, "too many arguments");
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	return run_argv(argv, out, err);
}

int tsdfs_run(char **out, char **err, const char *fmt, ...)
{
	const char *prefix[] = { sdfs_bin(), NULL };
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = run_words(out, err, prefix, fmt, ap);
	va_end(ap);
	return ret;
}

int tcluster_sdfs(struct tcluster *tc, char **out, char **err, const char *fmt, ...)
{
	const char *prefix[] = { sdfs_bin(), "-c", tc->conf, NULL };
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = run_words(out, err, prefix, fmt, ap);
	va_end(ap);
	return ret;
}

/* `sdfs dev ...` on this cluster's dir; logs what failed. */
static int dev(struct tcluster *tc, const char *sub, const char *name)
{
	char *argv[] = { (char *)sdfs_bin(), "dev", (char *)sub, "--dir", tc->dir,
			 (char *)name, NULL };
	char *out = NULL, *err = NULL;
	int ret = run_argv(argv, &out, &err);

	if (ret)
		cr_log_error("sdfs dev %s %s: exit %d: %s%s", sub, name ? name : "", ret,
			     out, err);
	free(out);
	free(err);
	return ret;
}

/* Is something mounted at @path (a realpath)? From /proc/self/mountinfo,
 * whose mount points escape space, tab, newline and backslash as \ooo. */
static int is_mounted(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[16384], point[PATH_MAX];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *o = point;

		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
			continue;
		for (const char *i = point; *i; i++, o++) {
			unsigned c;

			if (i[0] == '\\' && sscanf(i + 1, "%3o", &c) == 1 && c < 256) {
				*o = (char)c;
				i += 3;
			} else {
				*o = *i;
			}
		}
		*o = '\0';
		found = !strcmp(point, path);
	}
	fclose(f);
	return found;
}

/* The last resort after `dev down`: a lazy unmount of @mnt, so that no
 * mount outlives its test (nor the rm -rf of its dir reaches into it). */
static void unmount_left_over(const char *mnt)
{
	char *argv[] = { "/usr/bin/fusermount3", "-u", "-z", (char *)mnt, NULL };
	pid_t pid;

	if (!is_mounted(mnt))
		return;
	pid = fork();
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDWR);

		if (nfd >= 0) {
			dup2(nfd, 0);
			dup2(nfd, 1);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/*
 * A process that outlives a test killed by a timeout: it waits for EOF
 * on a pipe whose write end only the test process holds, then stops the
 * cluster by its recorded pids (the dir stays, for its logs). Its own
 * session, so a signal to the test's process group does not reach it.
 */
static void watchdog_start(struct tcluster *tc)
{
	int p[2];
	char *down[] = { (char *)sdfs_bin(), "dev", "down", "--dir", tc->dir, NULL };
	pid_t pid;

	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	tc->watchdog = fork();
	cr_assert(tc->watchdog >= 0, "fork: %s", strerror(errno));
	if (tc->watchdog == 0) {
		int nfd = open("/dev/null", O_RDWR);
		char c;
		ssize_t n;

		setsid();
		if (nfd < 0 || dup2(nfd, 0) < 0 || dup2(nfd, 1) < 0 || dup2(nfd, 2) < 0 ||
		    dup2(p[0], 3) < 0)
			_exit(1);
		close_range(4, ~0u, 0);
		while ((n = read(3, &c, 1)) < 0 && errno == EINTR)
			;
		if (n == 1)
			_exit(0);       /* torn down normally */
		pid = fork();
		if (pid == 0) {
			execv(down[0], down);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		for (unsigned i = 0; i < TCLUSTER_MOUNTS_MAX; i++)
			unmount_left_over(tc->mnts[i]);
		_exit(0);
	}
	close(p[0]);
	tc->watchdog_fd = p[1];
}

static void watchdog_stop(struct tcluster *tc)
{
	if (tc->watchdog <= 0)
		return;
	if (write(tc->watchdog_fd, "x", 1) != 1)
		cr_log_warn("watchdog: %s", strerror(errno));
	close(tc->watchdog_fd);
	waitpid(tc->watchdog, NULL, 0);
	tc->watchdog = 0;
}

/*
 * Sanitizer reports (a -Db_sanitize build run by tests/run, which sets
 * $SDFS_SAN_DIR: docs/testing.md). Every process the fixture starts
 * from now on (dev up's daemons, the CLI, sdfs-fsx) inherits
 * log_path=$SDFS_SAN_DIR/<cluster name>/report, which wins over the
 * run's own log_path earlier in the options; ASan and UBSan append the
 * pid. The reports stay there (the cluster's dir goes with a passing
 * test), and tests/run fails the run on them whatever the tests said;
 * tcluster_stop also logs them into the test's output and fails the
 * test (where criterion lets it: see there), and puts the options back,
 * so what outlives the cluster reports to the run's dir. Nothing
 * happens without $SDFS_SAN_DIR.
 */
static const char *const san_vars[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS" };
static char *san_saved[2];
static int san_have_saved;

static int san_dir(const struct tcluster *tc, char *out, size_t len)
{
	const char *top = getenv("SDFS_SAN_DIR");

	if (!top || !*top)
		return 0;
	snprintf(out, len, "%s/%s", top, tc->name);
	return 1;
}

static void san_point_at(const struct tcluster *tc)
{
	char path[PATH_MAX], val[2 * PATH_MAX];

	if (!san_dir(tc, path, sizeof(path)))
		return;
	cr_assert(mkdir(path, 0755) == 0, "mkdir %s: %s", path, strerror(errno));
	for (int i = 0; i < 2; i++) {
		const char *cur = getenv(san_vars[i]);

		if (!san_have_saved)
			san_saved[i] = cur ? strdup(cur) : NULL;
		snprintf(val, sizeof(val), "%s%slog_path=%s/report",
			 san_saved[i] ? san_saved[i] : "", san_saved[i] ? ":" : "", path);
		setenv(san_vars[i], val, 1);
	}
	san_have_saved = 1;
}

static void san_restore(void)
{
	for (int i = 0; san_have_saved && i < 2; i++) {
		if (san_saved[i])
			setenv(san_vars[i], san_saved[i], 1);
		else
			unsetenv(san_vars[i]);
	}
}

/* Each report of the cluster into the test's log; how many there are. */
static int san_reports(const struct tcluster *tc)
{
	char path[PATH_MAX], file[2 * PATH_MAX];
	struct dirent *de;
	int n = 0;
	DIR *d;

	if (!san_dir(tc, path, sizeof(path)) || !(d = opendir(path)))
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		char *rep = slurp_path(file);

		if (rep && strlen(rep) > 16384)
			rep[16384] = '\0';
		cr_log_error("sanitizer report %s:\n%s", file, rep ? rep : "(unreadable)");
		free(rep);
		n++;
	}
	closedir(d);
	return n;
}

static void client_log(int level, const char *msg, void *arg)
{
	FILE *f = arg;
	struct timespec ts;
	struct tm tm;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	fprintf(f, "%s.%03ld libsdfs[%d] %d: %s\n", when, ts.tv_nsec / 1000000,
		(int)getpid(), level, msg);
	fflush(f);
}

struct tcluster *tcluster_start(const struct tcluster_opts *o)
{
	struct tcluster *tc = calloc(1, sizeof(*tc));
	char tmpl[] = "/tmp/sdfs-t.XXXXXX", nb[16], nc[16], ng[16], nm[16], nn[16], nr[16];
	char path[PATH_MAX + 32];
	const char *zk = getenv("SDFS_TEST_ZK");
	static unsigned seq;
	char *out = NULL, *err = NULL;
	char err_buf[512] = "";
	int64_t t0 = tnow_ms();

	cr_assert(tc);
	cr_assert(mkdtemp(tmpl), "mkdtemp: %s", strerror(errno));
	cr_assert(realpath(tmpl, tc->dir));
	snprintf(tc->conf, sizeof(tc->conf), "%s/sdfs.conf", tc->dir);
	/* Unique on the shared server even if a pid comes round again. */
	snprintf(tc->name, sizeof(tc->name), "t%dx%u%s", (int)getpid(), seq++,
		 tmpl + sizeof("/tmp/sdfs-t.") - 1);
	tc->nblockd = o->blockd;
	tc->nmds = o->mds;
	cr_assert(o->mounts <= TCLUSTER_MOUNTS_MAX, "opts.mounts: %u > %d", o->mounts,
		  TCLUSTER_MOUNTS_MAX);
	tc->nmounts = o->mounts >= 2 ? o->mounts : o->mount ? 1 : 0;
	tc->mount = tc->nmounts > 0;
	snprintf(tc->mnt, sizeof(tc->mnt), "%s/mnt", tc->dir);
	/* all of them, used or not: the watchdog looks at every one */
	for (unsigned i = 0; i < TCLUSTER_MOUNTS_MAX; i++)
		snprintf(tc->mnts[i], sizeof(tc->mnts[i]), i ? "%s/mnt%u" : "%s/mnt",
			 tc->dir, i + 1);
	cr_assert(!tc->mount || o->mds, "opts.mount(s) needs opts.mds >= 1");
	watchdog_start(tc);
	san_point_at(tc);

	snprintf(nb, sizeof(nb), "%u", o->blockd);
	snprintf(nc, sizeof(nc), "%u", o->copies);
	snprintf(ng, sizeof(ng), "%u", o->out_grace_s);
	snprintf(nm, sizeof(nm), "%u", o->mds);
	char *argv[28] = { (char *)sdfs_bin(), "dev", "up", "--dir", tc->dir,
			   "--blockd", nb, "--cluster", tc->name };
	int argc = 9;
	if (o->copies) {
		argv[argc++] = "--copies";
		argv[argc++] = nc;
	}
	if (o->out_grace_s) {
		argv[argc++] = "--out-grace";
		argv[argc++] = ng;
	}
	/* Always explicit: dev up's default starts two, and mounts. */
	argv[argc++] = "--mds";
	argv[argc++] = nm;
	if (!tc->mount) {
		argv[argc++] = "--no-mount";
	} else if (tc->nmounts > 1) {
		snprintf(nn, sizeof(nn), "%u", tc->nmounts);
		argv[argc++] = "--mounts";
		argv[argc++] = nn;
	}
	if (o->auth_none) {
		argv[argc++] = "--auth";
		argv[argc++] = "none";
	}
	if (o->cluster_net)
		argv[argc++] = "--cluster-net";
	if (o->set) {
		argv[argc++] = "--set";
		argv[argc++] = (char *)o->set;
	}
	if (o->recovery_mbps) {
		snprintf(nr, sizeof(nr), "%u", o->recovery_mbps);
		argv[argc++] = "--recovery-mbps";
		argv[argc++] = nr;
	}
	if (o->netns)
		argv[argc++] = "--netns";
	else if (zk && *zk && !o->private_zk) {
		argv[argc++] = "--zk";
		argv[argc++] = (char *)zk;
	}
	argv[argc] = NULL;
	for (int i = 0; i < argc; i++)
		cr_assert((tc->up_argv[i] = strdup(argv[i])));
	int ret = run_argv(argv, &out, &err);
	if (ret) {
		cr_log_error("sdfs dev up: exit %d\n%s%s", ret, out, err);
		dev(tc, "down", NULL);
		san_restore();
		san_reports(tc);
		cr_assert_fail("sdfs dev up failed (exit %d): %s (see %s/log)", ret, err,
			       tc->dir);
	}
	free(out);
	free(err);

	snprintf(path, sizeof(path), "%s/client.log", tc->dir);
	tc->client_log = fopen(path, "a");
	cr_assert(tc->client_log, "%s: %s", path, strerror(errno));
	sdfs_set_log(client_log, tc->client_log, LOG_INFO);
	ret = sdfs_open(tc->conf, &tc->client, err_buf, sizeof(err_buf));
	cr_assert_eq(ret, 0, "sdfs_open(%s): %s", tc->conf, err_buf);
	if (o->mds)
		cr_assert_eq(tcluster_wait_mds(tc, o->mds, TCLUSTER_WAIT_MS), 0,
			     "%u mds with one active did not show up within %d ms (see %s/log)",
			     o->mds, TCLUSTER_WAIT_MS, tc->dir);
	cr_log_info("cluster %s: %u blockd, copies %u, out grace %u s, %u mds, %s, in %s "
		    "(up in %" PRId64 " ms)", tc->name, o->blockd, o->copies, o->out_grace_s,
		    o->mds, tc->nmounts > 1 ? "several mounts (mnt/, mnt2/...)" :
		    tc->mount ? "mounted at mnt/" : "no mount", tc->dir, tnow_ms() - t0);
	return tc;
}

/*
 * Which dirs a test leaves behind: the test process notes them in a
 * file named for the runner (its parent) and the test, and the runner,
 * which alone learns whether the test passed, removes them or says
 * where they are (post_fini below).
 */
static void note_path(char *buf, size_t len, pid_t runner, const char *suite,
		      const char *test)
{
	snprintf(buf, len, "/tmp/sdfs-t.%d.%s.%s.dirs", (int)runner, suite, test);
}

static void leave_to_runner(const char *dir)
{
	char path[PATH_MAX];
	FILE *f;

	note_path(path, sizeof(path), getppid(), criterion_current_suite->name,
		  criterion_current_test->name);
	f = fopen(path, "a");
	if (f && fprintf(f, "%s\n", dir) > 0 && fclose(f) == 0)
		return;
	if (f)
		fclose(f);
	char *rm[] = { "/bin/rm", "-rf", "--one-file-system", (char *)dir, NULL };
	run_argv(rm, NULL, NULL);
}

ReportHook(POST_FINI)(struct criterion_test_stats *st)
{
	char path[PATH_MAX], dir[PATH_MAX];
	int passed = st->test_status == CR_STATUS_PASSED && !st->crashed && !st->timed_out;
	FILE *f;

	note_path(path, sizeof(path), getpid(), st->test->category, st->test->name);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(dir, sizeof(dir), f)) {
		dir[strcspn(dir, "\n")] = '\0';
		if (strncmp(dir, "/tmp/sdfs-t.", 12))
			continue;
		if (passed) {
			char *rm[] = { "/bin/rm", "-rf", "--one-file-system", dir, NULL };
			pid_t pid = fork();

			if (pid == 0) {
				execv(rm[0], rm);
				_exit(127);
			}
			if (pid > 0)
				waitpid(pid, NULL, 0);
		} else {
			fprintf(stderr, "[----] %s::%s failed: its cluster is kept in %s "
				"(logs in log/, client.log)\n", st->test->category,
				st->test->name, dir);
		}
	}
	fclose(f);
	unlink(path);
}

void tcluster_stop(struct tcluster *tc)
{
	const char *keep = getenv("SDFS_TEST_KEEP");
	char name[sizeof(tc->name)];
	int nsan;

	if (!tc)
		return;
	/* A stopped daemon would sit on its SIGTERM until dev down's SIGKILL. */
	for (size_t i = 0; i < sizeof(tc->stopped) / sizeof(tc->stopped[0]); i++)
		if (tc->stopped[i] > 0)
			kill(tc->stopped[i], SIGCONT);
	sdfs_close(tc->client);
	tc->client = NULL;
	sdfs_set_log(NULL, NULL, LOG_INFO);
	if (tc->client_log)
		fclose(tc->client_log);
	dev(tc, "down", NULL);      /* unmounts DIR/mnt (and mnt2...) first */
	for (unsigned i = 0; i < TCLUSTER_MOUNTS_MAX; i++) {
		if (!is_mounted(tc->mnts[i]))
			continue;
		cr_log_error("%s still mounted after sdfs dev down: unmounting lazily",
			     tc->mnts[i]);
		unmount_left_over(tc->mnts[i]);
	}
	san_restore();
	nsan = san_reports(tc);
	if (keep && *keep)
		cr_log_info("SDFS_TEST_KEEP: kept %s", tc->dir);
	else
		leave_to_runner(tc->dir);
	watchdog_stop(tc);
	snprintf(name, sizeof(name), "%s", tc->name);
	for (size_t i = 0; i < sizeof(tc->up_argv) / sizeof(tc->up_argv[0]); i++)
		free(tc->up_argv[i]);
	free(tc);
	/* Last, after the cleanup. In a suite's .fini (where most tests stop
	 * their cluster) criterion prints this under the test but counts
	 * the test as passed: the run's check in tests/run is the gate. */
	cr_assert(nsan == 0, "%d sanitizer report(s) from cluster %s's processes "
		  "(in $SDFS_SAN_DIR/%s/)", nsan, name, name);
}

int tcluster_down(struct tcluster *tc)
{
	sdfs_close(tc->client);
	tc->client = NULL;
	return dev(tc, "down", NULL);
}

void tcluster_up_again(struct tcluster *tc)
{
	char *out = NULL, *err = NULL, err_buf[512] = "";
	int ret = run_argv(tc->up_argv, &out, &err);

	cr_assert_eq(ret, 0, "sdfs dev up again: exit %d\n%s%s", ret, out, err);
	cr_log_info("dev up again: %s", out);
	free(out);
	free(err);
	sdfs_close(tc->client);
	ret = sdfs_open(tc->conf, &tc->client, err_buf, sizeof(err_buf));
	cr_assert_eq(ret, 0, "sdfs_open(%s): %s", tc->conf, err_buf);
	if (tc->nmds)
		cr_assert_eq(tcluster_wait_mds(tc, tc->nmds, TCLUSTER_WAIT_MS), 0,
			     "%u mds with one active did not come back within %d ms",
			     tc->nmds, TCLUSTER_WAIT_MS);
}

struct sdfs *tcluster_client(struct tcluster *tc)
{
	return tc->client;
}

const char *tcluster_conf(struct tcluster *tc)
{
	return tc->conf;
}

const char *tcluster_dir(struct tcluster *tc)
{
	return tc->dir;
}

const char *tcluster_mnt(struct tcluster *tc)
{
	return tc->mount ? tc->mnt : NULL;
}

const char *tcluster_mnt_n(struct tcluster *tc, unsigned i)
{
	return i < tc->nmounts ? tc->mnts[i] : NULL;
}

unsigned tcluster_nblockd(struct tcluster *tc)
{
	return tc->nblockd;
}

unsigned tcluster_nmds(struct tcluster *tc)
{
	return tc->nmds;
}

pid_t tcluster_pid(struct tcluster *tc, const char *name)
{
	char path[PATH_MAX + 96], *s;
	long pid = 0;

	snprintf(path, sizeof(path), "%s/run/%s.pid", tc->dir, name);
	s = slurp_path(path);
	if (s)
		pid = strtol(s, NULL, 10);
	free(s);
	return pid > 0 ? (pid_t)pid : 0;
}

int tcluster_signal(struct tcluster *tc, const char *name, int sig)
{
	const size_t max = sizeof(tc->stopped) / sizeof(tc->stopped[0]);
	pid_t pid = tcluster_pid(tc, name);

	if (pid <= 0)
		return -ESRCH;
	if (kill(pid, sig) < 0)
		return -errno;
	for (size_t i = 0; i < max; i++) {
		if (sig == SIGCONT && tc->stopped[i] == pid)
			tc->stopped[i] = 0;
		if (sig == SIGSTOP && tc->stopped[i] <= 0) {
			tc->stopped[i] = pid;
			break;
		}
	}
	cr_log_info("sent %s to %s (pid %d)", strsignal(sig), name, (int)pid);
	return 0;
}

int tcluster_active_mds(struct tcluster *tc, char *name, size_t len)
{
	struct sdfs_mds_status st;
	int ret = sdfs_mds_status(tc->client, &st);

	if (ret)
		return ret;
	ret = st.has_active && st.reachable ? 0 : -ENOENT;
	if (!ret)
		snprintf(name, len, "%s", st.active);
	free(st.list);
	return ret;
}

int tcluster_wait_active_mds(struct tcluster *tc, const char *not_this_one, char *name,
			     size_t len, int timeout_ms)
{
	char active[32];

	for (int64_t end = tnow_ms() + timeout_ms; tnow_ms() < end; tsleep_ms(50))
		if (tcluster_active_mds(tc, active, sizeof(active)) == 0 &&
		    (!not_this_one || strcmp(active, not_this_one))) {
			if (name)
				snprintf(name, len, "%s", active);
			return 0;
		}
	return -ETIMEDOUT;
}

int tcluster_wait_mds(struct tcluster *tc, unsigned n, int timeout_ms)
{
	for (int64_t end = tnow_ms() + timeout_ms; tnow_ms() < end; tsleep_ms(50)) {
		struct sdfs_mds_status st;
		unsigned actives = 0;

		if (sdfs_mds_status(tc->client, &st))
			continue;
		for (size_t i = 0; i < st.n; i++)
			actives += st.list[i].active != 0;
		free(st.list);
		if (st.n == n && actives == 1 && st.reachable)
			return 0;
	}
	return -ETIMEDOUT;
}

/* Is @name among the running mds that sdfs_mds_status lists? */
static int mds_listed(struct tcluster *tc, const char *name)
{
	struct sdfs_mds_status st;
	int found = 0;

	if (sdfs_mds_status(tc->client, &st))
		return 0;
	for (size_t i = 0; i < st.n; i++)
		found |= !strcmp(st.list[i].name, name);
	free(st.list);
	return found;
}

int tcluster_kill(struct tcluster *tc, const char *name)
{
	int ret = dev(tc, "kill", name);

	if (!ret)
		cr_log_info("killed %s (SIGKILL)", name);
	return ret;
}

int tcluster_running(struct tcluster *tc, const char *name)
{
	char *argv[] = { (char *)sdfs_bin(), "dev", "status", "--json", "--dir", tc->dir,
			 NULL };
	char key[96], *out = NULL, *p, *end;
	int running = 0;

	cr_assert_eq(run_argv(argv, &out, NULL), 0, "sdfs dev status failed");
	snprintf(key, sizeof(key), "\"name\": \"%s\"", name);
	p = strstr(out, key);
	if (p) {
		end = strchr(p, '}');
		if (end)
			*end = '\0';
		running = strstr(p, "\"running\": true") != NULL;
	}
	free(out);
	return running;
}

uint32_t tcluster_node_id(struct tcluster *tc, const char *name)
{
	char path[PATH_MAX + 96], *s;
	unsigned long id = 0;

	snprintf(path, sizeof(path), "%s/%s/node_id", tc->dir, name);
	s = slurp_path(path);
	if (s)
		id = strtoul(s, NULL, 10);
	free(s);
	return (uint32_t)id;
}

const char *tcluster_node_name(struct tcluster *tc, uint32_t node_id, char *buf,
			       size_t len)
{
	for (unsigned i = 0; i < tc->nblockd; i++) {
		snprintf(buf, len, "blockd.%u", i);
		if (tcluster_node_id(tc, buf) == node_id)
			return buf;
	}
	return NULL;
}

const char *tcluster_name_of_path(struct tcluster *tc, const char *path, char *buf,
				  size_t len)
{
	size_t dl = strlen(tc->dir);
	const char *p, *slash;

	if (strncmp(path, tc->dir, dl) || path[dl] != '/')
		return NULL;
	p = path + dl + 1;
	slash = strchr(p, '/');
	if (!slash || strncmp(p, "blockd.", 7) || (size_t)(slash - p) >= len)
		return NULL;
	memcpy(buf, p, slash - p);
	buf[slash - p] = '\0';
	return buf;
}

void tcluster_node_addr(struct tcluster *tc, const char *name, char *addr, size_t len)
{
	uint32_t id = tcluster_node_id(tc, name);
	struct sdfs_node_status *nodes;
	size_t n;
	int found = 0;

	cr_assert_neq(id, 0, "%s has no node id", name);
	cr_assert_eq(sdfs_node_list(tc->client, &nodes, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (nodes[i].node_id == id) {
			snprintf(addr, len, "%s", nodes[i].addr);
			found = 1;
		}
	free(nodes);
	cr_assert(found, "node %u (%s) is not in the map", id, name);
}

uint64_t tcluster_epoch(struct tcluster *tc)
{
	struct sdfs_cluster_info info;

	cr_assert_eq(sdfs_cluster_info(tc->client, &info), 0);
	return info.epoch;
}

/*
 * Ready: with @id, that node is up in the map, answers, and knows the
 * map's epoch; without, @want nodes are up and every up node does so.
 */
static int nodes_ready(struct tcluster *tc, unsigned want, uint32_t id)
{
	struct sdfs_cluster_info info;
	struct sdfs_node_status *nodes;
	size_t n;
	int ok = 1, seen = 0;

	if (sdfs_cluster_info(tc->client, &info) || (!id && info.nodes_up != want))
		return 0;
	if (sdfs_node_list(tc->client, &nodes, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct sdfs_node_status *x = &nodes[i];

		if (id && x->node_id != id)
			continue;
		if (strcmp(x->state, "up")) {
			ok &= !id;
			continue;
		}
		seen++;
		ok &= x->reachable && x->epoch == info.epoch;
	}
	free(nodes);
	return ok && (id ? seen == 1 : 1);
}

int tcluster_wait_nodes_up(struct tcluster *tc, unsigned want, int timeout_ms)
{
	for (int64_t end = tnow_ms() + timeout_ms; tnow_ms() < end; tsleep_ms(50))
		if (nodes_ready(tc, want, 0))
			return 0;
	return -ETIMEDOUT;
}

int tcluster_restart(struct tcluster *tc, const char *name)
{
	uint32_t id = tcluster_node_id(tc, name);
	int ret = dev(tc, "start", name);

	if (ret)
		return ret;
	if (!strncmp(name, "mnt", 3))
		return 0;       /* dev start waited until the mount answers */
	if (!strcmp(name, "zk")) {
		for (int64_t end = tnow_ms() + TCLUSTER_WAIT_MS; tnow_ms() < end;
		     tsleep_ms(50)) {
			struct sdfs_mds_status st;

			if (sdfs_mds_status(tc->client, &st) == 0) {
				free(st.list);
				cr_log_info("restarted ZooKeeper (pid %d)",
					    (int)tcluster_pid(tc, name));
				return 0;
			}
		}
		return -ETIMEDOUT;
	}
	if (!strncmp(name, "mds.", 4)) {
		for (int64_t end = tnow_ms() + TCLUSTER_WAIT_MS; tnow_ms() < end;
		     tsleep_ms(50))
			if (mds_listed(tc, name)) {
				cr_log_info("restarted %s (pid %d)", name,
					    (int)tcluster_pid(tc, name));
				return 0;
			}
		return -ETIMEDOUT;
	}
	for (int64_t end = tnow_ms() + TCLUSTER_WAIT_MS; tnow_ms() < end; tsleep_ms(50))
		if (nodes_ready(tc, 0, id)) {
			cr_log_info("restarted %s (node %u), epoch %" PRIu64, name, id,
				    tcluster_epoch(tc));
			return 0;
		}
	return -ETIMEDOUT;
}

int tcluster_wait_state(struct tcluster *tc, const char *name, const char *state,
			int timeout_ms)
{
	uint32_t id = tcluster_node_id(tc, name);

	for (int64_t end = tnow_ms() + timeout_ms; tnow_ms() < end; tsleep_ms(50)) {
		struct sdfs_node_status *nodes;
		size_t n;
		int match = 0;

		if (sdfs_node_list(tc->client, &nodes, &n))
			continue;
		for (size_t i = 0; i < n; i++)
			match |= nodes[i].node_id == id && !strcmp(nodes[i].state, state);
		free(nodes);
		if (match)
			return 0;
	}
	return -ETIMEDOUT;
}

int tcluster_wait_epoch_above(struct tcluster *tc, uint64_t epoch, int timeout_ms)
{
	for (int64_t end = tnow_ms() + timeout_ms; tnow_ms() < end; tsleep_ms(50)) {
		struct sdfs_cluster_info info;

		if (sdfs_cluster_info(tc->client, &info) == 0 && info.epoch > epoch)
			return 0;
	}
	return -ETIMEDOUT;
}

char *tcluster_log_line(struct tcluster *tc, const char *name, const char *needle,
			int timeout_ms)
{
	char path[PATH_MAX + 96];

	snprintf(path, sizeof(path), "%s/log/%s.log", tc->dir, name);
	for (int64_t end = tnow_ms() + timeout_ms;; tsleep_ms(20)) {
		char *s = slurp_path(path), *hit = s ? strstr(s, needle) : NULL;

		if (hit) {
			char *start = hit, *stop = strchr(hit, '\n');

			while (start > s && start[-1] != '\n')
				start--;
			if (stop)
				*stop = '\0';
			char *line = strdup(start);
			free(s);
			cr_assert(line);
			return line;
		}
		free(s);
		if (tnow_ms() >= end)
			return NULL;
	}
}

/* Is @pid gone (or a zombie nobody reaped yet)? */
static int pid_gone(pid_t pid)
{
	char path[64], *st, *paren;
	int gone;

	if (kill(pid, 0) != 0)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	st = slurp_path(path);
	if (!st)
		return 1;
	paren = strrchr(st, ')');
	gone = paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
	free(st);
	return gone;
}

int tcluster_term(struct tcluster *tc, const char *name)
{
	char path[PATH_MAX + 96], *s;
	pid_t pid;

	if (!tcluster_running(tc, name))
		return -ESRCH;
	snprintf(path, sizeof(path), "%s/run/%s.pid", tc->dir, name);
	s = slurp_path(path);
	pid = s ? (pid_t)strtol(s, NULL, 10) : 0;
	free(s);
	if (pid <= 0)
		return -ESRCH;
	if (kill(pid, SIGTERM) < 0)
		return -errno;
	for (int64_t end = tnow_ms() + TCLUSTER_WAIT_MS; tnow_ms() < end; tsleep_ms(20))
		if (pid_gone(pid)) {
			cr_log_info("stopped %s (SIGTERM)", name);
			return 0;
		}
	return -ETIMEDOUT;
}

const char *tcluster_add(struct tcluster *tc, char *name, size_t len)
{
	char *out = NULL, *err = NULL;
	int st = tsdfs_run(&out, &err, "dev add --dir %s --json", tc->dir);
	unsigned idx;

	cr_assert_eq(st, 0, "sdfs dev add: exit %d: %s%s", st, out, err);
	cr_assert_eq(tjson_str(out, "name", name, len, NULL), 0,
		     "sdfs dev add --json printed no name: %s", out);
	cr_assert_eq(sscanf(name, "blockd.%u", &idx), 1, "dev add named it '%s'", name);
	if (idx + 1 > tc->nblockd)
		tc->nblockd = idx + 1;
	cr_log_info("added %s (node %u): %s", name, tcluster_node_id(tc, name), out);
	free(out);
	free(err);
	return name;
}

int tcluster_wait_healthy(struct tcluster *tc, unsigned timeout_s)
{
	char *out = NULL, *err = NULL;
	int64_t t0 = tnow_ms();
	int st = tcluster_sdfs(tc, &out, &err, "cluster wait-healthy --timeout %u", timeout_s);

	if (st) {
		char *sout = NULL;

		tcluster_sdfs(tc, &sout, NULL, "cluster status");
		cr_log_error("sdfs cluster wait-healthy --timeout %u: exit %d after %" PRId64
			     " ms: %s%s\n%s", timeout_s, st, tnow_ms() - t0, out, err,
			     sout ? sout : "");
		free(sout);
	} else {
		cr_log_info("healthy after %" PRId64 " ms", tnow_ms() - t0);
	}
	free(out);
	free(err);
	return st;
}

int tcluster_node_set(struct tcluster *tc, const char *action, const char *name)
{
	uint32_t id = tcluster_node_id(tc, name);
	char *out = NULL, *err = NULL;
	int st;

	cr_assert_neq(id, 0, "%s has no node id", name);
	st = tcluster_sdfs(tc, &out, &err, "node %s %u", action, id);
	if (st)
		cr_log_error("sdfs node %s %u (%s): exit %d: %s%s", action, id, name, st,
			     out, err);
	else
		cr_log_info("sdfs node %s %u (%s): %s", action, id, name, out);
	free(out);
	free(err);
	return st;
}

int tcluster_node_status(struct tcluster *tc, const char *name,
			 struct sdfs_node_status *st)
{
	uint32_t id = tcluster_node_id(tc, name);
	struct sdfs_node_status *nodes;
	size_t n;
	int ret = -ENOENT;

	if (!id)
		return -ENOENT;
	ret = sdfs_node_list(tc->client, &nodes, &n);
	if (ret)
		return ret;
	ret = -ENOENT;
	for (size_t i = 0; i < n; i++)
		if (nodes[i].node_id == id) {
			*st = nodes[i];
			ret = 0;
		}
	free(nodes);
	return ret;
}

int tcluster_wait_objects(struct tcluster *tc, const char *name, uint64_t objects,
			  int timeout_ms)
{
	struct sdfs_node_status st;

	for (int64_t end = tnow_ms() + timeout_ms; tnow_ms() < end; tsleep_ms(100))
		if (tcluster_node_status(tc, name, &st) == 0 && st.reachable &&
		    st.objects == objects)
			return 0;
	return -ETIMEDOUT;
}

uint64_t tcluster_moved_objs(struct tcluster *tc, unsigned *silent)
{
	struct sdfs_node_status *nodes;
	uint64_t sum = 0;
	unsigned quiet = 0;
	size_t n;

	cr_assert_eq(sdfs_node_list(tc->client, &nodes, &n), 0);
	for (size_t i = 0; i < n; i++) {
		if (nodes[i].reachable)
			sum += nodes[i].moved_objs;
		else if (!strcmp(nodes[i].state, "up"))
			quiet++;
	}
	free(nodes);
	if (silent)
		*silent = quiet;
	return sum;
}
