/*
 * tools_test.c - everyday tools on a mount, next to a local directory,
 * while other processes list and stat the same directories.
 *
 * Each case names what it checks. The "lister" is a second process
 * that reads the directory (readdir, which the kernel turns into
 * READDIRPLUS, and stat of every entry) in a loop for the whole case:
 * the attributes those listings carry must never undo what a writer of
 * this mount has not yet pushed to the mds (its size, its write time).
 *
 * - O_APPEND writes, fstat and a MAP_SHARED mapping past the size the
 *   mds still has, and a file unlinked while open, all while listed.
 * - An explicit mtime set on a file with unflushed writes (futimens,
 *   utimensat by path) survives close, on this mount and another.
 * - cp -a, tar c|x and rsync -a of a tree with set times, modes,
 *   symlinks and a hard link: into the mount and into a local
 *   directory, compared entry by entry, seen the same on a second
 *   mount, and copied back out equal to the source.
 * - git: clone, commit, gc and fsck --strict on the mount, and a clone
 *   of that repository from the second mount.
 * - SQLite with several processes writing one database in WAL and in
 *   rollback-journal mode, with readers and the lister running: every
 *   writer succeeds, every row is there, integrity_check says ok.
 * - du of a thin file counts its data (at most one object for 4 KiB
 *   written), cp --sparse and tar -S copy it out sparse; df's avail is
 *   no more than free, nor than the daemons' disk has.
 * - setfacl/getfacl: the same ACLs as on a local directory (inherited
 *   defaults, masks, chmod), seen by the second mount, and carried by
 *   cp -a, tar --acls and rsync -A.
 *
 * Local directories live under the fixture's dir (same disk).
 */
#include "tests/cluster/fixture.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1024 * 1024)
#define CMD_TIMEOUT_S 300       /* any one tool run; the case fails after */

static struct tcluster *tc;
static pid_t lister = -1;
static volatile unsigned long *lister_passes;  /* shared with the lister */

static void setup(void)
{
	struct tcluster_opts o = { .blockd = 3, .copies = 3, .mds = 1, .mounts = 2 };

	tc = tcluster_start(&o);
	cr_assert(tcluster_mnt_n(tc, 0) && tcluster_mnt_n(tc, 1));
}

static void stop_lister(void);

static void teardown(void)
{
	stop_lister();
	tcluster_stop(tc);
	tc = NULL;
}

TestSuite(tools, .init = setup, .fini = teardown, .timeout = 600);

/* @dir's entries, each stat'ed, in a loop until killed. */
static void start_lister(const char *dir)
{
	if (!lister_passes) {
		lister_passes = mmap(NULL, sizeof(*lister_passes), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		cr_assert(lister_passes != MAP_FAILED);
	}
	*lister_passes = 0;
	lister = fork();
	cr_assert(lister >= 0);
	if (lister > 0)
		return;
	for (;;) {
		DIR *d = opendir(dir);
		struct dirent *e;
		struct stat st;

		if (!d) {
			usleep(1000);
			continue;
		}
		while ((e = readdir(d)))
			fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW);
		closedir(d);
		__atomic_add_fetch(lister_passes, 1, __ATOMIC_RELEASE);
	}
}

/* Until the lister has listed the directory @n more times. */
static void wait_listed(unsigned long n)
{
	unsigned long want = __atomic_load_n(lister_passes, __ATOMIC_ACQUIRE) + n;

	for (int64_t end = tnow_ms() + 30000; tnow_ms() < end; tsleep_ms(5))
		if (__atomic_load_n(lister_passes, __ATOMIC_ACQUIRE) >= want)
			return;
	cr_assert_fail("the lister did not list %lu times in 30 s", n);
}

static void stop_lister(void)
{
	int status;

	if (lister <= 0)
		return;
	kill(lister, SIGKILL);
	waitpid(lister, &status, 0);
	lister = -1;
}

/* @buf = @a/@b; fails the test if it does not fit. */
static void pjoin(char *buf, size_t len, const char *a, const char *b)
{
	cr_assert((size_t)snprintf(buf, len, "%s/%s", a, b) < len, "path too long");
}

static void path_of(char *buf, size_t len, unsigned mnt, const char *rel)
{
	pjoin(buf, len, tcluster_mnt_n(tc, mnt), rel);
}

/* sh -c @fmt, bounded by timeout(1), output into DIR/tools.log; its
 * exit status (the log's tail is shown when it is not 0). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192], line[9000], log[PATH_MAX];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(log, sizeof(log), "%s/tools.log", tcluster_dir(tc));
	FILE *f = fopen(log, "a");
	if (f) {
		fprintf(f, "$ %s\n", cmd);
		fclose(f);
	}
	cr_assert((size_t)snprintf(line, sizeof(line), "timeout -s KILL %d sh -c '%s' >>%s 2>&1",
				   CMD_TIMEOUT_S, cmd, log) < sizeof(line));
	st = system(line);
	st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (st) {
		snprintf(line, sizeof(line), "tail -n 30 %s >&2", log);
		cr_log_error("exit %d: %s (log: %s)", st, cmd, log);
		if (system(line)) { /* the log is still on disk */ }
	}
	return st;
}

/* ----- a writer's pending state under listings ----- */

Test(tools, append_while_listed_keeps_every_byte)
{
	char p[PATH_MAX], dir[PATH_MAX], line[64];
	struct stat st;
	int fd, lines = 2000;
	size_t want = 0;

	path_of(dir, sizeof(dir), 0, "logs");
	cr_assert_eq(mkdir(dir, 0755), 0);
	pjoin(p, sizeof(p), dir, "app.log");
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
	cr_assert(fd >= 0);
	start_lister(dir);
	for (int i = 0; i < lines; i++) {
		int n = snprintf(line, sizeof(line), "line %06d of the append test\n", i);

		cr_assert_eq(write(fd, line, (size_t)n), n);
		want += (size_t)n;
		cr_assert_eq(fstat(fd, &st), 0);
		cr_assert_eq((size_t)st.st_size, want,
			     "after write %d fstat says %lld bytes, %zu written (a listing "
			     "put the mds's older size back)", i, (long long)st.st_size, want);
	}
	stop_lister();
	cr_assert_eq(close(fd), 0);
	for (unsigned m = 0; m < 2; m++) {
		char q[PATH_MAX];

		path_of(q, sizeof(q), m, "logs/app.log");
		fd = open(q, O_RDONLY);
		cr_assert(fd >= 0);
		char *buf = malloc(want + 1);
		cr_assert_eq(read(fd, buf, want + 1), (ssize_t)want, "mount %u", m);
		close(fd);
		for (int i = 0, off = 0; i < lines; i++) {
			int n = snprintf(line, sizeof(line), "line %06d of the append test\n", i);

			cr_assert(memcmp(buf + off, line, (size_t)n) == 0,
				  "mount %u: line %d lost or overwritten", m, i);
			off += n;
		}
		free(buf);
	}
}

static sigjmp_buf bus_jmp;
static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

Test(tools, fstat_and_mmap_past_the_pushed_size)
{
	char p[PATH_MAX], dir[PATH_MAX];
	size_t len = 3 * MiB;
	char *buf = malloc(len);
	struct stat st;
	int fd;

	tfill_random(buf, len, tseed("mmap"));
	path_of(dir, sizeof(dir), 0, "m");
	cr_assert_eq(mkdir(dir, 0755), 0);
	pjoin(p, sizeof(p), dir, "grow");
	fd = open(p, O_RDWR | O_CREAT, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, buf, 4096), 4096);
	cr_assert_eq(fsync(fd), 0);             /* the mds knows 4 KiB */
	cr_assert_eq(pwrite(fd, buf + 4096, len - 4096, 4096), (ssize_t)(len - 4096));
	start_lister(dir);
	wait_listed(3);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq((size_t)st.st_size, len, "fstat: %lld", (long long)st.st_size);
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert(m != MAP_FAILED);
	struct sigaction sa = { .sa_handler = on_bus }, old;
	sigaction(SIGBUS, &sa, &old);
	int bus = sigsetjmp(bus_jmp, 1);
	if (!bus) {
		cr_assert(memcmp(m + len - MiB, buf + len - MiB, MiB) == 0);
		m[len - 1] ^= 1;                /* a shared write past the old size */
	}
	sigaction(SIGBUS, &old, NULL);
	cr_assert_eq(bus, 0, "SIGBUS reading the mapping past the mds's size");
	cr_assert_eq(msync(m, len, MS_SYNC), 0);
	munmap(m, len);
	stop_lister();
	cr_assert_eq(close(fd), 0);
	buf[len - 1] ^= 1;
	path_of(p, sizeof(p), 1, "m/grow");
	fd = open(p, O_RDONLY);
	cr_assert(fd >= 0);
	char *back = malloc(len);
	cr_assert_eq(read(fd, back, len), (ssize_t)len);
	cr_assert(memcmp(back, buf, len) == 0, "mount 2 reads other bytes");
	close(fd);
	free(back);
	free(buf);
}

Test(tools, unlinked_open_file_reads_back_while_listed)
{
	char p[PATH_MAX], dir[PATH_MAX];
	size_t len = MiB + 123;
	char *buf = malloc(len), *back = malloc(len);
	struct stat st;
	int fd;

	tfill_random(buf, len, tseed("unlinked"));
	path_of(dir, sizeof(dir), 0, "u");
	cr_assert_eq(mkdir(dir, 0755), 0);
	pjoin(p, sizeof(p), dir, "tmpfile");
	fd = open(p, O_RDWR | O_CREAT, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	cr_assert_eq(unlink(p), 0);
	start_lister(dir);
	wait_listed(3);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq((size_t)st.st_size, len, "fstat: %lld", (long long)st.st_size);
	cr_assert_eq(st.st_nlink, 0);
	cr_assert_eq(pread(fd, back, len, 0), (ssize_t)len);
	cr_assert(memcmp(back, buf, len) == 0);
	cr_assert_eq(pwrite(fd, "tail", 4, (off_t)len), 4);
	cr_assert_eq(pread(fd, back, 4, (off_t)len), 4);
	cr_assert(memcmp(back, "tail", 4) == 0);
	stop_lister();
	close(fd);
	free(buf);
	free(back);
}

/* ----- explicit times ----- */

static int64_t mtime_ns(const char *p)
{
	struct stat st;

	cr_assert_eq(lstat(p, &st), 0, "%s: %s", p, strerror(errno));
	return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

Test(tools, explicit_mtime_before_close_survives_it)
{
	struct timespec ts[2] = { { 1000000000, 123456789 }, { 981173106, 987654321 } };
	int64_t want = 981173106ll * 1000000000 + 987654321;
	char p[PATH_MAX], q[PATH_MAX], buf[8192];
	int fd;

	memset(buf, 'x', sizeof(buf));
	/* futimens on the descriptor that wrote (cp -a, tar) */
	path_of(p, sizeof(p), 0, "futimens");
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert_eq(futimens(fd, ts), 0);
	cr_assert_eq(write(fd, buf, 0), 0);
	cr_assert_eq(close(fd), 0);
	/* utimensat by path while another descriptor has unflushed writes */
	path_of(q, sizeof(q), 0, "bypath");
	fd = open(q, O_WRONLY | O_CREAT, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert_eq(utimensat(AT_FDCWD, q, ts, 0), 0);
	cr_assert_eq(close(fd), 0);
	for (unsigned m = 0; m < 2; m++) {
		char r[PATH_MAX];
		struct stat st;

		path_of(r, sizeof(r), m, "futimens");
		cr_assert_eq(mtime_ns(r), want, "mount %u: futimens lost at close", m);
		cr_assert_eq(stat(r, &st), 0);
		cr_assert_eq(st.st_size, (off_t)sizeof(buf));
		path_of(r, sizeof(r), m, "bypath");
		cr_assert_eq(mtime_ns(r), want, "mount %u: utimensat lost at close", m);
	}
}

/* ----- trees: cp -a, tar, rsync ----- */

/* A source tree with set times, modes, symlinks, a hard link, an empty
 * file, a sparse one and one larger than an object. */
static void make_tree(const char *src)
{
	cr_assert_eq(sh("set -e; mkdir -p %s/a/b/c %s/empty; cd %s;"
			"printf hello > a/hello; : > a/empty;"
			"head -c 5000000 /dev/urandom > a/b/big;"
			"head -c 70000 /dev/urandom > a/b/c/mid;"
			"truncate -s 9000000 a/sparse; printf end >> a/sparse;"
			"ln -s ../hello a/b/link; ln -s /nowhere dangling;"
			"ln a/hello a/hardlink; chmod 0640 a/b/big; chmod 0711 a/b;"
			"chmod 4755 a/b/c/mid;"
			"for f in a/hello a/b/big a/b/c/mid a/sparse a/empty; do"
			"  touch -m -d \"2011-03-0$((${#f} %% 9 + 1)) 10:11:12.123456789\" $f; done;"
			"touch -h -d \"2012-01-01 00:00:01\" a/b/link dangling;"
			"touch -d \"2013-05-06 07:08:09\" a/b/c a/b a empty",
			src, src, src), 0);
}

/* Compare @a and @b entry by entry: type, mode, size, mtime (ns), link
 * count, content, symlink target. @what names the pair in messages. */
static void tree_cmp(const char *a, const char *b, const char *what)
{
	struct stat sa, sb;

	cr_assert_eq(lstat(a, &sa), 0, "%s: %s: %s", what, a, strerror(errno));
	cr_assert_eq(lstat(b, &sb), 0, "%s: %s missing: %s", what, b, strerror(errno));
	cr_assert_eq(sa.st_mode, sb.st_mode, "%s: %s mode %o, %s %o", what, a, sa.st_mode,
		     b, sb.st_mode);
	cr_assert_eq(sa.st_nlink > 1, sb.st_nlink > 1, "%s: %s hard links", what, b);
	if (!S_ISDIR(sa.st_mode)) {
		cr_assert_eq(sa.st_size, sb.st_size, "%s: %s size %lld, %s %lld", what, a,
			     (long long)sa.st_size, b, (long long)sb.st_size);
		cr_assert_eq(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec, "%s: %s mtime %ld, %s %ld",
			     what, a, (long)sa.st_mtim.tv_sec, b, (long)sb.st_mtim.tv_sec);
		cr_assert_eq(sa.st_mtim.tv_nsec, sb.st_mtim.tv_nsec, "%s: %s mtime ns", what, b);
	} else {
		cr_assert_eq(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec, "%s: dir %s mtime %ld, %s %ld",
			     what, a, (long)sa.st_mtim.tv_sec, b, (long)sb.st_mtim.tv_sec);
	}
	if (S_ISLNK(sa.st_mode)) {
		char la[PATH_MAX], lb[PATH_MAX];
		ssize_t na = readlink(a, la, sizeof(la)), nb = readlink(b, lb, sizeof(lb));

		cr_assert(na == nb && na >= 0 && memcmp(la, lb, (size_t)na) == 0,
			  "%s: %s target", what, b);
	} else if (S_ISREG(sa.st_mode)) {
		char cmd[2 * PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
		cr_assert_eq(system(cmd), 0, "%s: %s content differs from %s", what, b, a);
	} else if (S_ISDIR(sa.st_mode)) {
		DIR *d = opendir(a);
		struct dirent *e;
		size_t na = 0, nb = 0;

		cr_assert(d);
		while ((e = readdir(d))) {
			char ca[PATH_MAX], cb[PATH_MAX];

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			na++;
			snprintf(ca, sizeof(ca), "%s/%s", a, e->d_name);
			snprintf(cb, sizeof(cb), "%s/%s", b, e->d_name);
			tree_cmp(ca, cb, what);
		}
		closedir(d);
		d = opendir(b);
		cr_assert(d);
		while ((e = readdir(d)))
			nb += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
		closedir(d);
		cr_assert_eq(na, nb, "%s: %s has %zu entries, %s %zu", what, a, na, b, nb);
	}
}

/* Run @tool's copy (a printf format with two %s: from, to) into the
 * mount and into a local dir, with the lister on the mount's target;
 * compare both with each other and through the second mount, then copy
 * back out of the mount and compare with the source. */
static void round_trip(const char *name, const char *copy)
{
	char src[PATH_MAX], loc[PATH_MAX], on[PATH_MAX], on2[PATH_MAX], back[PATH_MAX];
	char cmd[4096];
	const char *dir = tcluster_dir(tc);

	snprintf(src, sizeof(src), "%s/tree-src", dir);
	snprintf(loc, sizeof(loc), "%s/tree-%s-local", dir, name);
	snprintf(back, sizeof(back), "%s/tree-%s-back", dir, name);
	path_of(on, sizeof(on), 0, name);
	path_of(on2, sizeof(on2), 1, name);
	make_tree(src);
	cr_assert_eq(mkdir(on, 0755), 0);
	cr_assert_eq(mkdir(loc, 0755), 0);
	cr_assert_eq(mkdir(back, 0755), 0);
	start_lister(on);
	snprintf(cmd, sizeof(cmd), copy, src, on);
	cr_assert_eq(sh("%s", cmd), 0, "%s into the mount", name);
	stop_lister();
	snprintf(cmd, sizeof(cmd), copy, src, loc);
	cr_assert_eq(sh("%s", cmd), 0, "%s into a local dir", name);
	tree_cmp(loc, on, name);
	tree_cmp(loc, on2, name);
	snprintf(cmd, sizeof(cmd), copy, on, back);
	cr_assert_eq(sh("%s", cmd), 0, "%s out of the mount", name);
	tree_cmp(loc, back, name);
}

Test(tools, cp_a_round_trip)
{
	round_trip("cp", "cp -a %s/. %s/");
}

Test(tools, tar_round_trip)
{
	round_trip("tar", "tar -C %s -cSf - . | tar -C %s -xpf -");
}

Test(tools, rsync_a_round_trip)
{
	round_trip("rsync", "rsync -aHS %s/ %s/");
}

/* ----- git ----- */

Test(tools, git_clone_commit_gc_fsck)
{
	const char *dir = tcluster_dir(tc);
	char repo[PATH_MAX], on[PATH_MAX], on2[PATH_MAX], mnt[PATH_MAX];

	snprintf(repo, sizeof(repo), "%s/origin", dir);
	path_of(mnt, sizeof(mnt), 0, "");
	path_of(on, sizeof(on), 0, "work");
	path_of(on2, sizeof(on2), 1, "clone2");
	setenv("GIT_AUTHOR_NAME", "t", 1);
	setenv("GIT_AUTHOR_EMAIL", "t@example.org", 1);
	setenv("GIT_COMMITTER_NAME", "t", 1);
	setenv("GIT_COMMITTER_EMAIL", "t@example.org", 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("HOME", dir, 1);
	cr_assert_eq(sh("set -e; git init -q %s; cd %s; for i in $(seq 1 40); do"
			" seq $i 3000 > f$((i %% 7)); git add -A; git commit -qm c$i; done",
			repo, repo), 0);
	start_lister(mnt);
	cr_assert_eq(sh("set -e; git clone -q %s %s; cd %s;"
			"for i in $(seq 1 20); do seq $i 5000 > g$((i %% 5));"
			" git add -A; git commit -qm m$i; done;"
			"git gc -q --aggressive; git fsck --strict --no-progress;"
			"test $(git rev-list --count HEAD) = 60;"
			"test -z \"$(git status --porcelain)\" || { git status; exit 1; }",
			repo, on, on), 0);
	stop_lister();
	cr_assert_eq(sh("set -e; git clone -q %s %s; cd %s; git fsck --strict --no-progress;"
			"test $(git rev-list --count HEAD) = 60",
			on, on2, on2), 0);
}

/* ----- SQLite ----- */

/* @writers processes each committing @rows one-row transactions into
 * one database in @mode (wal, delete), two readers counting meanwhile,
 * the lister on its directory. */
static void sqlite_writers(const char *mode, int writers, int rows)
{
	char dir[PATH_MAX], db[PATH_MAX], script[PATH_MAX];
	pid_t pids[8];

	path_of(dir, sizeof(dir), 0, mode);
	cr_assert_eq(mkdir(dir, 0755), 0);
	pjoin(db, sizeof(db), dir, "t.db");
	cr_assert_eq(sh("sqlite3 %s \"PRAGMA journal_mode=%s; CREATE TABLE t(w INT, i INT, "
			"pad TEXT, PRIMARY KEY(w, i));\" >/dev/null", db, mode), 0);
	start_lister(dir);
	for (int w = 0; w < writers + 2; w++) {
		snprintf(script, sizeof(script), "%s/sql-%s-%d", tcluster_dir(tc), mode, w);
		FILE *f = fopen(script, "w");

		cr_assert(f);
		fprintf(f, ".bail on\n.timeout 60000\n");
		for (int i = 0; i < rows; i++)
			if (w < writers)
				fprintf(f, "BEGIN IMMEDIATE; INSERT INTO t VALUES(%d, %d, "
					"hex(randomblob(200))); COMMIT;\n", w, i);
			else
				fprintf(f, "SELECT count(*) FROM t;\n");
		fclose(f);
		pids[w] = fork();
		cr_assert(pids[w] >= 0);
		if (pids[w] == 0) {
			char out[PATH_MAX];

			if ((size_t)snprintf(out, sizeof(out), "%s.out", script) >= sizeof(out))
				_exit(126);
			int in = open(script, O_RDONLY), o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			dup2(in, 0);
			dup2(o, 1);
			dup2(o, 2);
			execlp("timeout", "timeout", "-s", "KILL", "300", "sqlite3", db, (char *)NULL);
			_exit(127);
		}
	}
	for (int w = 0; w < writers + 2; w++) {
		int st;
		char out[PATH_MAX];

		cr_assert_eq(waitpid(pids[w], &st, 0), pids[w]);
		snprintf(out, sizeof(out), "%s/sql-%s-%d.out", tcluster_dir(tc), mode, w);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			char cmd[PATH_MAX + 32];

			snprintf(cmd, sizeof(cmd), "tail -n 5 %s >&2", out);
			if (system(cmd)) { /* shown if it can be */ }
		}
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "%s: sqlite3 %s %d failed (status %d): see %s", mode,
			  w < writers ? "writer" : "reader", w, st, out);
	}
	stop_lister();
	cr_assert_eq(sh("set -e; test \"$(sqlite3 %s \"PRAGMA integrity_check;\")\" = ok;"
			"test $(sqlite3 %s \"SELECT count(*) FROM t;\") = %d;"
			"sqlite3 %s \"PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=delete;\" "
			">/dev/null", db, db, writers * rows, db), 0);
	/* the other mount reads the same database */
	path_of(db, sizeof(db), 1, mode);
	cr_assert_eq(sh("set -e; test \"$(sqlite3 %s/t.db \"PRAGMA integrity_check;\")\" = ok;"
			"test $(sqlite3 %s/t.db \"SELECT count(*) FROM t;\") = %d",
			db, db, writers * rows), 0);
}

Test(tools, sqlite_wal_several_processes_while_listed)
{
	sqlite_writers("wal", 3, 300);
}

Test(tools, sqlite_rollback_several_processes_while_listed)
{
	sqlite_writers("delete", 3, 150);
}

/* ----- du, sparse files, df ----- */

/* `du -B1` of @path, in bytes. */
static long long du_bytes(const char *path)
{
	char cmd[PATH_MAX + 32], out[64] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "du -B1 -s '%s'", path);
	p = popen(cmd, "r");
	cr_assert(p);
	cr_assert(fgets(out, sizeof(out), p), "du printed nothing for %s", path);
	pclose(p);
	return atoll(out);
}

Test(tools, du_and_sparse_copies_agree_with_local)
{
	const char *dir = tcluster_dir(tc);
	char loc[PATH_MAX], on[PATH_MAX], back[PATH_MAX], tarback[PATH_MAX];
	long long obj = 4ll * MiB;

	/* a thin 1 GiB file with 4 KiB at 768 MiB, and a full 6 MiB one
	 * (5 GiB with 4 KiB at 3 GiB before: comparing the copies read it
	 * whole four times, 42 s of CI) */
	pjoin(loc, sizeof(loc), dir, "du-local");
	path_of(on, sizeof(on), 0, "du");
	pjoin(back, sizeof(back), dir, "du-back");
	pjoin(tarback, sizeof(tarback), dir, "du-tar");
	for (int i = 0; i < 2; i++) {
		const char *d = i ? on : loc;

		cr_assert_eq(sh("set -e; mkdir %s; cd %s; truncate -s 1G thin;"
				"head -c 4096 /dev/urandom | dd of=thin bs=4096 seek=196608 "
				"conv=notrunc status=none; head -c 6291456 /dev/zero | tr "
				"\"\\\\0\" x > full", d, d), 0);
	}
	long long l_thin, m_thin;
	char p[PATH_MAX];

	pjoin(p, sizeof(p), loc, "thin");
	l_thin = du_bytes(p);
	pjoin(p, sizeof(p), on, "thin");
	m_thin = du_bytes(p);
	cr_assert(m_thin > 0 && m_thin <= obj,
		  "du of a 1 GiB file with 4 KiB written: %lld bytes on the mount "
		  "(local: %lld); at most one object (%lld) expected", m_thin, l_thin, obj);
	pjoin(p, sizeof(p), on, "full");
	cr_assert_geq(du_bytes(p), 6ll * MiB, "a written 6 MiB file counts its data");
	/* from a second mount too */
	path_of(p, sizeof(p), 1, "du/thin");
	cr_assert_eq(du_bytes(p), m_thin, "the second mount's du");
	/* tools that look for holes keep them when copying out */
	cr_assert_eq(sh("set -e; mkdir %s; cp -p --sparse=auto %s/thin %s/full %s/;"
			"mkdir %s; tar -C %s --format=posix -cSf - thin full | tar -C %s -xf -",
			back, on, on, back, tarback, on, tarback), 0);
	for (int i = 0; i < 2; i++) {
		char a[PATH_MAX], b[PATH_MAX];
		const char *to = i ? tarback : back;

		pjoin(a, sizeof(a), on, "full");
		pjoin(b, sizeof(b), to, "full");
		tree_cmp(a, b, i ? "tar -S" : "cp --sparse");
		pjoin(a, sizeof(a), on, "thin");
		pjoin(b, sizeof(b), to, "thin");
		tree_cmp(a, b, i ? "tar -S" : "cp --sparse");
		cr_assert_leq(du_bytes(b), obj, "%s: the copy out of the mount is not "
			      "sparse (%lld bytes)", b, du_bytes(b));
	}
}

Test(tools, df_tells_what_can_be_written)
{
	char mnt[PATH_MAX];
	struct statvfs v;

	path_of(mnt, sizeof(mnt), 0, "");
	cr_assert_eq(statvfs(mnt, &v), 0);
	cr_assert(v.f_blocks > 0 && v.f_bfree <= v.f_blocks);
	cr_assert_leq(v.f_bavail, v.f_bfree, "df shows more available (%llu) than free "
		      "(%llu) blocks", (unsigned long long)v.f_bavail,
		      (unsigned long long)v.f_bfree);
	cr_assert(v.f_files > 0 && v.f_ffree <= v.f_files);
	/* avail is what the daemons' filesystems let them write, over the
	 * copies (3): never more than one of those filesystems' avail (all
	 * three blockd share the fixture's disk here) */
	struct statvfs local;

	cr_assert_eq(statvfs(tcluster_dir(tc), &local), 0);
	unsigned long long m_avail = (unsigned long long)v.f_bavail * v.f_frsize;
	unsigned long long l_avail = (unsigned long long)local.f_bavail * local.f_frsize;
	cr_assert_leq(m_avail, l_avail + (1ull << 30), "df avail %llu bytes, the disk "
		      "under the daemons has %llu", m_avail, l_avail);
	cr_assert_eq(sh("df -h %s && df -i %s", mnt, mnt), 0);
}

/* ----- ACL tools ----- */

/* The same ACLs set with setfacl on a local dir and on the mount, read
 * back with getfacl and compared; then carried by cp -a, tar --acls
 * and rsync -A out of the mount and back into it. */
Test(tools, acl_tools_agree_with_local)
{
	const char *dir = tcluster_dir(tc);
	char loc[PATH_MAX], on[PATH_MAX];
	const char *set =
		"set -e; mkdir -p %s/p/q; cd %s; printf x > p/f; printf y > p/q/g;"
		"setfacl -m u:1234:rx,g:2345:r,m::rx p/f;"
		"setfacl -d -m u:1234:rwx,o::- p; setfacl -m u:4321:rwx p/q;"
		"printf z > p/new; mkdir p/newdir; chmod 0750 p/q/g;"
		"setfacl -m u:999:rw p/q/g; chmod g-w p/q/g";

	pjoin(loc, sizeof(loc), dir, "acl-local");
	path_of(on, sizeof(on), 0, "acl");
	cr_assert_eq(sh(set, loc, loc), 0);
	cr_assert_eq(sh(set, on, on), 0);
	cr_assert_eq(sh("set -e; cd %s; find . -print0 | LC_ALL=C sort -z | xargs -0 getfacl -p > %s/acl-local.txt;"
			"cd %s; find . -print0 | LC_ALL=C sort -z | xargs -0 getfacl -p > %s/acl-mount.txt;"
			"diff -u %s/acl-local.txt %s/acl-mount.txt",
			loc, dir, on, dir, dir, dir), 0, "getfacl differs (see the log)");
	/* the second mount sees the same */
	path_of(on, sizeof(on), 1, "acl");
	cr_assert_eq(sh("set -e; cd %s; find . -print0 | LC_ALL=C sort -z | xargs -0 getfacl -p > %s/acl-mount2.txt;"
			"diff -u %s/acl-local.txt %s/acl-mount2.txt", on, dir, dir, dir), 0);
	/* carried by the tools, both ways */
	path_of(on, sizeof(on), 0, "");
	cr_assert_eq(sh("set -e; cd %s; cp -a acl acl-cp; mkdir acl-tar acl-rsync;"
			"tar -C acl --acls -cf - . | tar -C acl-tar --acls -xpf -;"
			"rsync -aA acl/ acl-rsync/; cp -a acl %s/acl-out;"
			"for d in acl-cp acl-tar acl-rsync; do (cd $d && find . -print0 | LC_ALL=C sort -z | xargs -0 getfacl -p) > %s/$d.txt;"
			" diff -u %s/acl-local.txt %s/$d.txt; done;"
			"cd %s/acl-out && find . -print0 | LC_ALL=C sort -z | xargs -0 getfacl -p > %s/acl-out.txt;"
			"diff -u %s/acl-local.txt %s/acl-out.txt",
			on, dir, dir, dir, dir, dir, dir, dir, dir), 0);
}
