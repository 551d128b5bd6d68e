/*
 * mount_test.c - mount.sdfs as an administrator meets it: run directly,
 * through `mount -t fuse.sdfs` and an fstab line (both need the
 * installed helper /usr/sbin/mount.fuse.sdfs), its errors before
 * mounting (a second mount on one mount point among them), and a
 * cluster that goes away under a mount: operations fail with EIO after
 * the mount's timeout instead of hanging, umount still works, and a
 * mount that stayed serves again once the cluster is back.
 *
 * Every mount here is at DIR/mnt (the fixture mounts nothing itself:
 * no opts.mount), so `sdfs dev down` at teardown unmounts whatever a
 * failed test left there, and the watchdog does the same if the test
 * process dies. Every operation on a mount whose cluster is down runs
 * in a child with a deadline: a hang fails the test instead of
 * freezing it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* name_to_handle_at, open_by_handle_at */
#endif
#include "tests/cluster/fixture.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HELPER "/usr/sbin/mount.fuse.sdfs"
#define TIMEOUT_MS 3000         /* -o timeout_ms= of the mounts that lose the cluster */
#define SLACK_MS 3000           /* scheduling, a loaded machine */
#define MDS_TIMEOUT_MS 10000    /* the mds's own timeout_ms (the default) */
#define CMD_TIMEOUT_MS 60000    /* no mount or umount command may take longer */
#define GONE_MS 20000           /* a daemon exits this soon after its unmount */

static struct tcluster *tc;
static char mnt[PATH_MAX + 8], cluster[64];
static pid_t daemons[8];        /* mount.sdfs daemons this test started */

static const char *mount_sdfs(void)
{
	const char *bin = getenv("MOUNT_SDFS");

	cr_assert(bin && *bin, "MOUNT_SDFS is not set (run through meson test)");
	return bin;
}

/* The cluster name: `cluster = NAME` in DIR/sdfs.conf. */
static void read_cluster_name(void)
{
	FILE *f = fopen(tcluster_conf(tc), "r");
	char line[512];

	cr_assert(f, "%s: %s", tcluster_conf(tc), strerror(errno));
	cluster[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "cluster = %63s", cluster) == 1)
			break;
	fclose(f);
	cr_assert(cluster[0], "no cluster name in %s", tcluster_conf(tc));
}

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .mds = 1 });
	snprintf(mnt, sizeof(mnt), "%s/mnt", tcluster_dir(tc));
	cr_assert(mkdir(mnt, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", mnt,
		  strerror(errno));
	read_cluster_name();
	memset(daemons, 0, sizeof(daemons));
}

/* Gone, or a zombie nobody reaped yet? */
static int pid_gone(pid_t pid)
{
	char path[64], st[512];
	int fd, n;

	if (kill(pid, 0) != 0)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = (int)read(fd, st, sizeof(st) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	st[n] = '\0';
	char *paren = strrchr(st, ')');
	return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static void down(void)
{
	/* dev down unmounts DIR/mnt (lazily if busy); the daemons then exit.
	 * Any that did not get SIGTERM, by the pid found at its mount. */
	tcluster_stop(tc);
	for (size_t i = 0; i < sizeof(daemons) / sizeof(daemons[0]); i++) {
		if (daemons[i] <= 0)
			continue;
		for (int64_t end = tnow_ms() + 5000; tnow_ms() < end && !pid_gone(daemons[i]);)
			tsleep_ms(20);
		if (pid_gone(daemons[i]))
			continue;
		/* lazily unmounted while this process still held a file there */
		cr_log_error("mount.sdfs pid %d still running after teardown: SIGTERM",
			     (int)daemons[i]);
		kill(daemons[i], SIGTERM);
		for (int64_t end = tnow_ms() + 5000; tnow_ms() < end && !pid_gone(daemons[i]);)
			tsleep_ms(20);
		if (!pid_gone(daemons[i]))
			kill(daemons[i], SIGKILL);
	}
}

TestSuite(mount, .init = up, .fini = down, .timeout = 300);

/* What /proc/self/mountinfo says about DIR/mnt: its fstype and mount
 * options into @type / @opts (NULL ok); 0 if nothing is mounted there.
 * (The mount point has no escapes: /tmp/sdfs-t.XXXXXX/mnt.) */
static int mounted(char *type, size_t tlen, char *opts, size_t olen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[16384], point[PATH_MAX], mopts[1024], t[128];
	int found = 0;

	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (sscanf(line, "%*s %*s %*s %*s %4095s %1023s", point, mopts) != 2 ||
		    strcmp(point, mnt) || !sep || sscanf(sep + 3, "%127s", t) != 1)
			continue;
		found = 1;      /* the last one: a mount stacks on older ones */
		if (type)
			snprintf(type, tlen, "%s", t);
		if (opts)
			snprintf(opts, olen, "%s", mopts);
	}
	fclose(f);
	return found;
}

/* The mount.sdfs daemon serving DIR/mnt (argv[0] mount.sdfs or
 * mount.fuse.sdfs, DIR/mnt among its arguments); 0 if none. Found only
 * to watch it and to stop it by pid, never by name. */
static pid_t find_daemon(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	cr_assert(d);
	while (!found && (e = readdir(d))) {
		char path[300], cmd[8192];
		int fd, n;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = (int)read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		if (n <= 0)
			continue;
		cmd[n] = '\0';
		const char *base = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
		if (strcmp(base, "mount.sdfs") && strcmp(base, "mount.fuse.sdfs"))
			continue;
		for (int off = 0; off < n; off += (int)strlen(cmd + off) + 1)
			if (!strcmp(cmd + off, mnt))
				found = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return found;
}

static void note_daemon(pid_t pid)
{
	for (size_t i = 0; i < sizeof(daemons) / sizeof(daemons[0]); i++)
		if (daemons[i] <= 0 || daemons[i] == pid) {
			daemons[i] = pid;
			return;
		}
}

/*
 * Run @argv (stdin /dev/null, stdout and stderr into *@err, malloc'd;
 * NULL to discard) with every other descriptor closed, so a daemon it
 * leaves behind holds none of criterion's. Its exit status, 128 +
 * signal if killed; a command still running after CMD_TIMEOUT_MS fails
 * the test.
 */
static int run(char *const argv[], char **err)
{
	int efd = memfd_create("err", MFD_CLOEXEC), status = 0;
	pid_t pid;

	cr_assert(efd >= 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDONLY);

		if (nfd < 0 || dup2(nfd, 0) < 0 || dup2(efd, 1) < 0 || dup2(efd, 2) < 0)
			_exit(127);
		close_range(3, ~0u, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	int64_t end = tnow_ms() + CMD_TIMEOUT_MS;
	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (tnow_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			cr_assert_fail("%s %s: still running after %d ms", argv[0],
				       argv[1] ? argv[1] : "", CMD_TIMEOUT_MS);
		}
		tsleep_ms(10);
	}
	if (err) {
		off_t len = lseek(efd, 0, SEEK_END);

		*err = calloc(1, (size_t)len + 1);
		cr_assert(*err);
		cr_assert_eq(pread(efd, *err, (size_t)len, 0), (ssize_t)len);
	}
	close(efd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* mount.sdfs CLUSTER DIR/mnt -o conf=DIR/sdfs.conf[,@extra]: mounted,
 * and the daemon noted; returns its pid. */
static pid_t mount_direct(const char *extra)
{
	char opts[PATH_MAX + 256], type[128], *err = NULL;
	char *argv[] = { (char *)mount_sdfs(), cluster, mnt, "-o", opts, NULL };

	snprintf(opts, sizeof(opts), "conf=%s%s%s", tcluster_conf(tc), extra ? "," : "",
		 extra ? extra : "");
	int st = run(argv, &err);
	cr_assert_eq(st, 0, "mount.sdfs %s %s -o %s: exit %d: %s", cluster, mnt, opts, st,
		     err);
	free(err);
	cr_assert(mounted(type, sizeof(type), NULL, 0), "mount.sdfs exited 0 but %s is "
		  "not mounted", mnt);
	cr_assert_str_eq(type, "fuse.sdfs");
	pid_t pid = find_daemon();
	cr_assert(pid > 0, "no mount.sdfs daemon serving %s", mnt);
	note_daemon(pid);
	cr_log_info("mounted %s (-o %s), daemon pid %d", mnt, opts, (int)pid);
	return pid;
}

/* Not mounted any more, and the daemon @pid has exited. */
static void assert_unmounted(pid_t pid)
{
	cr_assert(!mounted(NULL, 0, NULL, 0), "%s is still mounted", mnt);
	for (int64_t end = tnow_ms() + GONE_MS; tnow_ms() < end && !pid_gone(pid);)
		tsleep_ms(20);
	cr_assert(pid_gone(pid), "mount.sdfs (pid %d) still runs %d ms after its unmount",
		  (int)pid, GONE_MS);
}

static void fusermount_u(void)
{
	char *err = NULL;
	char *argv[] = { "/usr/bin/fusermount3", "-u", mnt, NULL };
	int st = run(argv, &err);

	cr_assert_eq(st, 0, "fusermount3 -u %s: exit %d: %s", mnt, st, err);
	free(err);
}

static void umount_mnt(void)
{
	char *err = NULL;
	char *argv[] = { "/bin/umount", mnt, NULL };
	int st = run(argv, &err);

	cr_assert_eq(st, 0, "umount %s: exit %d: %s", mnt, st, err);
	free(err);
}

static void write_file(const char *name, const void *buf, size_t len)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", mnt, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, (const char *)buf + off, len - off);

		cr_assert(n > 0, "write %s: %s", path, strerror(errno));
		off += (size_t)n;
	}
	cr_assert_eq(fsync(fd), 0, "fsync %s: %s", path, strerror(errno));
	cr_assert_eq(close(fd), 0, "close %s: %s", path, strerror(errno));
}

/* @name through the mount equals @want[0, @len). */
static void check_file(const char *name, const void *want, size_t len)
{
	char path[PATH_MAX + 64], *got = malloc(len + 1);
	size_t off = 0;
	ssize_t n;
	int fd;

	cr_assert(got);
	snprintf(path, sizeof(path), "%s/%s", mnt, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	while (off <= len && (n = read(fd, got + off, len + 1 - off)) > 0)
		off += (size_t)n;
	cr_assert(off <= len && n == 0, "read %s: %s", path, n < 0 ? strerror(errno) : "");
	close(fd);
	cr_assert_eq(off, len, "%s: %zu bytes, wrote %zu", path, off, len);
	cr_assert(memcmp(got, want, len) == 0, "%s: the data read back differs", path);
	free(got);
}

/* (a) Run directly: a file across objects survives a remount, the CLI
 * sees what the mount wrote, and fusermount3 -u ends the daemon. */
Test(mount, direct_round_trip_and_fusermount)
{
	size_t len = (5u << 20) + 12345;        /* over the 4 MiB object size */
	char *buf = malloc(len), *out = NULL;

	cr_assert(buf);
	tfill_random(buf, len, tseed("file data"));
	pid_t pid = mount_direct(NULL);
	write_file("big", buf, len);
	write_file("hello", "hello sdfs\n", 11);
	check_file("big", buf, len);
	fusermount_u();
	assert_unmounted(pid);

	/* a fresh daemon: no cache of the first one's helps */
	pid = mount_direct(NULL);
	check_file("big", buf, len);
	check_file("hello", "hello sdfs\n", 11);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "fs cat /hello"), 0);
	cr_assert_str_eq(out, "hello sdfs\n");
	free(out);
	fusermount_u();
	assert_unmounted(pid);
	free(buf);
}

static void require_helper(void)
{
	char target[PATH_MAX];
	ssize_t n = readlink(HELPER, target, sizeof(target) - 1);

	cr_assert(access(HELPER, X_OK) == 0,
		  "%s is not installed, so mount(8) cannot mount fuse.sdfs: install sdfs "
		  "first (meson install -C build, as root; tools/quickstart and .ci/run do)",
		  HELPER);
	if (n > 0) {
		target[n] = '\0';
		cr_log_info("%s -> %s", HELPER, target);
	}
}

/* (b) mount -t fuse.sdfs CLUSTER MNT -o conf=..., then umount MNT. */
Test(mount, mount_t_fuse_sdfs_and_umount)
{
	char opts[PATH_MAX + 16], *err = NULL;
	char *argv[] = { "/bin/mount", "-t", "fuse.sdfs", cluster, mnt, "-o", opts, NULL };

	require_helper();
	snprintf(opts, sizeof(opts), "conf=%s", tcluster_conf(tc));
	int st = run(argv, &err);
	cr_assert_eq(st, 0, "mount -t fuse.sdfs %s %s -o %s: exit %d: %s", cluster, mnt,
		     opts, st, err);
	free(err);
	char type[128];
	cr_assert(mounted(type, sizeof(type), NULL, 0), "%s is not mounted", mnt);
	cr_assert_str_eq(type, "fuse.sdfs");
	pid_t pid = find_daemon();
	cr_assert(pid > 0, "no mount.sdfs daemon serving %s", mnt);
	note_daemon(pid);

	write_file("via-mount-t", "mount -t\n", 9);
	check_file("via-mount-t", "mount -t\n", 9);
	umount_mnt();
	assert_unmounted(pid);

	/* a bad cluster through mount(8): its failure, nothing mounted */
	char bad[] = "nosuchcluster";
	argv[3] = bad;
	st = run(argv, &err);
	cr_assert_neq(st, 0, "mount -t fuse.sdfs of an unknown cluster succeeded");
	cr_assert(strstr(err, "nosuchcluster"), "mount's error does not name the "
		  "cluster: %s", err);
	free(err);
	cr_assert(!mounted(NULL, 0, NULL, 0), "%s mounted after a failed mount", mnt);
}

/* (c) An fstab line, with mount(8)'s own options (_netdev, noatime). */
Test(mount, fstab_line)
{
	char fstab[PATH_MAX + 16], opts[1024], *err = NULL;
	FILE *f;

	require_helper();
	snprintf(fstab, sizeof(fstab), "%s/fstab", tcluster_dir(tc));
	f = fopen(fstab, "w");
	cr_assert(f);
	fprintf(f, "# written by mount_test\n%s %s fuse.sdfs conf=%s,_netdev,noatime 0 0\n",
		cluster, mnt, tcluster_conf(tc));
	cr_assert_eq(fclose(f), 0);

	char *argv[] = { "/bin/mount", "-T", fstab, mnt, NULL };
	int st = run(argv, &err);
	cr_assert_eq(st, 0, "mount -T %s %s: exit %d: %s", fstab, mnt, st, err);
	free(err);
	char type[128];
	cr_assert(mounted(type, sizeof(type), opts, sizeof(opts)), "%s is not mounted", mnt);
	cr_assert_str_eq(type, "fuse.sdfs");
	cr_assert(strstr(opts, "noatime"), "noatime from fstab did not reach the "
		  "kernel: %s", opts);
	pid_t pid = find_daemon();
	cr_assert(pid > 0, "no mount.sdfs daemon serving %s", mnt);
	note_daemon(pid);

	write_file("via-fstab", "fstab\n", 6);
	check_file("via-fstab", "fstab\n", 6);
	umount_mnt();
	assert_unmounted(pid);
}

/* mount.sdfs with @cluster_name and -o @opts must fail: non-zero, one
 * line on stderr containing @reason, nothing mounted, within @max_ms. */
static void mount_fails(const char *cluster_name, const char *opts, const char *reason,
			int max_ms)
{
	char *err = NULL;
	char *argv[] = { (char *)mount_sdfs(), (char *)cluster_name, mnt, "-o", (char *)opts,
			 NULL };
	int64_t t0 = tnow_ms();
	int st = run(argv, &err);
	int64_t took = tnow_ms() - t0;

	cr_log_info("mount.sdfs '%s' -o %s: exit %d after %" PRId64 " ms: %s", cluster_name,
		    opts, st, took, err);
	cr_assert_neq(st, 0, "mount.sdfs '%s' -o %s succeeded", cluster_name, opts);
	cr_assert_eq(tcount_lines(err), 1, "not one line of reason: '%s'", err);
	cr_assert(strstr(err, reason), "reason '%s' does not say '%s'", err, reason);
	cr_assert(!mounted(NULL, 0, NULL, 0), "%s is mounted after a failed mount.sdfs",
		  mnt);
	cr_assert(find_daemon() == 0, "a mount.sdfs daemon runs after a failed mount");
	cr_assert_leq(took, max_ms, "mount.sdfs took %" PRId64 " ms to fail", took);
	free(err);
}

/* (d) Errors are reported before mounting, in one line. */
Test(mount, bad_cluster_or_config_mounts_nothing)
{
	char opts[PATH_MAX + 64], bad_conf[PATH_MAX + 32];
	FILE *f;

	snprintf(opts, sizeof(opts), "conf=%s", tcluster_conf(tc));
	mount_fails("nosuchcluster", opts, "not formatted", 15000);
	mount_fails("bad/name", opts, "bad cluster name", 5000);
	mount_fails(cluster, "conf=/nonexistent/sdfs.conf", "/nonexistent/sdfs.conf", 5000);

	/* ZooKeeper unreachable: nothing listens on port 1 */
	snprintf(bad_conf, sizeof(bad_conf), "%s/unreachable.conf", tcluster_dir(tc));
	f = fopen(bad_conf, "w");
	cr_assert(f);
	fprintf(f, "zk = 127.0.0.1:1\ncluster = %s\n", cluster);
	cr_assert_eq(fclose(f), 0);
	snprintf(opts, sizeof(opts), "conf=%s,timeout_ms=%d", bad_conf, TIMEOUT_MS);
	mount_fails(cluster, opts, "ZooKeeper", TIMEOUT_MS + SLACK_MS);
	mount_fails(cluster, "conf=/dev/null/x,timeout_ms=nope", "timeout_ms", 5000);
}

/* mount.sdfs again on DIR/mnt while @first serves it: refused in one
 * line before anything is mounted; DIR/mnt is still the first mount. */
static void second_mount_fails(pid_t first, const char *reason)
{
	char opts[PATH_MAX + 16], *err = NULL;
	char *argv[] = { (char *)mount_sdfs(), cluster, mnt, "-o", opts, NULL };
	int st;

	snprintf(opts, sizeof(opts), "conf=%s", tcluster_conf(tc));
	st = run(argv, &err);
	cr_log_info("second mount.sdfs on %s: exit %d: %s", mnt, st, err);
	cr_assert_eq(st, 1, "a second mount.sdfs on %s: exit %d, not 1: %s", mnt, st, err);
	cr_assert_eq(tcount_lines(err), 1, "not one line of reason: '%s'", err);
	cr_assert(strstr(err, reason) && strstr(err, mnt), "reason '%s' does not say "
		  "'%s' and name %s", err, reason, mnt);
	cr_assert_eq(find_daemon(), first, "another mount.sdfs daemon serves %s", mnt);
	free(err);
}

/* (e) One mount point, one mount: a second mount.sdfs there would hide
 * the first one; refused, also when the first one's daemon is dead. */
Test(mount, second_mount_on_one_point_is_refused)
{
	pid_t pid = mount_direct(NULL);

	write_file("first", "first\n", 6);
	second_mount_fails(pid, "sdfs is mounted there already");
	check_file("first", "first\n", 6);

	/* the daemon killed: the mount stays, "not connected" */
	cr_assert_eq(kill(pid, SIGKILL), 0);
	for (int64_t end = tnow_ms() + GONE_MS; tnow_ms() < end && !pid_gone(pid);)
		tsleep_ms(20);
	cr_assert(pid_gone(pid), "mount.sdfs (pid %d) survived SIGKILL", (int)pid);
	cr_assert(mounted(NULL, 0, NULL, 0), "%s went with its daemon", mnt);
	second_mount_fails(0, "sdfs is mounted there already");
	fusermount_u();
	cr_assert(!mounted(NULL, 0, NULL, 0), "%s is still mounted", mnt);

	/* unmounted: mounting there works again */
	pid = mount_direct(NULL);
	check_file("first", "first\n", 6);
	fusermount_u();
	assert_unmounted(pid);
}

/*
 * One operation on the mount, in a child with a deadline: what the
 * child saw (0 or an errno) and how long it took. A child still inside
 * the kernel after @deadline_ms is SIGKILLed (FUSE waits are killable)
 * and the test fails: the mount hung.
 */
enum op { OP_STAT, OP_PREAD, OP_CAT, OP_READDIR };

static int timed_op(enum op op, const char *name, int fd, int deadline_ms,
		    int64_t *took_ms)
{
	int p[2], status, result = -1;
	char path[PATH_MAX + 64];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", mnt, name ? name : "");
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	int64_t t0 = tnow_ms();
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		static char dbuf[4096] __attribute__((aligned(4096)));
		char buf[4096];
		struct stat st;
		int r = 0;

		if (op == OP_STAT) {
			r = stat(path, &st) < 0 ? errno : 0;
		} else if (op == OP_PREAD) {
			r = pread(fd, dbuf, 4096, 0) < 0 ? errno : 0;
		} else if (op == OP_CAT) {
			int f = open(path, O_RDONLY);

			r = f < 0 ? errno : read(f, buf, sizeof(buf)) < 0 ? errno : 0;
		} else {
			DIR *d = opendir(path);

			if (!d) {
				r = errno;
			} else {
				errno = 0;
				while (readdir(d))
					;
				r = errno;
			}
		}
		_exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(p[1]);
	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (tnow_ms() - t0 > deadline_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(p[0]);
			cr_assert_fail("an operation on %s/%s still hangs after %d ms", mnt,
				       name ? name : "", deadline_ms);
		}
		tsleep_ms(5);
	}
	*took_ms = tnow_ms() - t0;
	cr_assert_eq(read(p[0], &result, sizeof(result)), (ssize_t)sizeof(result));
	close(p[0]);
	return result;
}

/* @op fails with EIO within @max_ms. */
static void expect_eio(enum op op, const char *name, int fd, int max_ms)
{
	static const char *const what[] = { "stat", "O_DIRECT pread", "open+read",
					     "readdir" };
	const char *n = name ? name : op == OP_PREAD ? "(an open fd)" : "/";
	int64_t took;
	int r = timed_op(op, name, fd, max_ms + 30000, &took);

	cr_log_info("%s %s: %s after %" PRId64 " ms", what[op], n,
		    r ? strerror(r) : "success", took);
	cr_assert_eq(r, EIO, "%s %s: %s, want EIO", what[op], n, r ? strerror(r) : "success");
	cr_assert_leq(took, max_ms, "%s %s took %" PRId64 " ms to fail (timeout_ms=%d)",
		      what[op], n, took, TIMEOUT_MS);
}

static void restart(const char *name)
{
	int ret = tcluster_restart(tc, name);

	cr_assert_eq(ret, 0, "restart %s: %d", name, ret);
}

/* (e) The whole cluster dies under a mount: EIO within the mount's
 * timeout, never a hang; umount works; after a restart, a new mount
 * reads what was written before. */
Test(mount, cluster_down_eio_then_umount_and_remount)
{
	char timeout[32], local[PATH_MAX + 32], *out = NULL;
	static const char data[] = "written before the cluster went away\n";
	int64_t took;
	FILE *f;

	/* "cold" reaches the cluster only through the CLI: no page of it is
	 * in the kernel's cache when it is read after the kill */
	snprintf(local, sizeof(local), "%s/cold.txt", tcluster_dir(tc));
	f = fopen(local, "w");
	cr_assert(f);
	fputs(data, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(tcluster_sdfs(tc, NULL, NULL, "fs put %s /cold", local), 0);
	cr_assert_eq(tcluster_sdfs(tc, NULL, NULL, "fs put %s /cold2", local), 0);
	cr_assert_eq(tcluster_sdfs(tc, NULL, NULL, "fs put %s /cold3", local), 0);

	snprintf(timeout, sizeof(timeout), "timeout_ms=%d", TIMEOUT_MS);
	pid_t pid = mount_direct(timeout);
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/cold", mnt);
	/* O_DIRECT: a read is one request to mount.sdfs (a buffered one is
	 * two when it fails: see OP_CAT below) */
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));

	for (unsigned i = 0; i < tcluster_nblockd(tc); i++) {
		char name[32];

		snprintf(name, sizeof(name), "blockd.%u", i);
		cr_assert_eq(tcluster_kill(tc, name), 0);
	}
	/* data: straight to the (dead) block daemons */
	expect_eio(OP_PREAD, NULL, fd, TIMEOUT_MS + SLACK_MS);
	/* a buffered read: the kernel retries a failed readahead once as a
	 * plain read, and each request waits up to the timeout. The read
	 * also sets the atime (relatime): the mds applies it and cannot
	 * write it anywhere, and whatever asks the mds about the file next
	 * waits for that write to time out (its own timeout_ms, 10 s) or
	 * to succeed: a reply never shows a change a crash could take back
	 * (docs/mds.md "Commit pipeline") */
	expect_eio(OP_CAT, "cold2", -1, 2 * TIMEOUT_MS + MDS_TIMEOUT_MS + SLACK_MS);
	cr_assert_eq(tcluster_kill(tc, "mds.0"), 0);
	/* names: the mds. A never-seen name cannot come from a cache. */
	expect_eio(OP_STAT, "never-seen", -1, TIMEOUT_MS + SLACK_MS);
	expect_eio(OP_READDIR, NULL, -1, TIMEOUT_MS + SLACK_MS);
	expect_eio(OP_CAT, "cold3", -1, TIMEOUT_MS + SLACK_MS);
	close(fd);

	umount_mnt();
	assert_unmounted(pid);

	for (unsigned i = 0; i < tcluster_nblockd(tc); i++) {
		char name[32];

		snprintf(name, sizeof(name), "blockd.%u", i);
		restart(name);
	}
	restart("mds.0");
	cr_assert_eq(tcluster_wait_active_mds(tc, NULL, NULL, 0, TCLUSTER_WAIT_MS), 0,
		     "no active mds after the restart");
	pid = mount_direct(timeout);
	check_file("cold", data, sizeof(data) - 1);
	write_file("after", "after the restart\n", 18);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "fs cat /after"), 0);
	cr_assert_str_eq(out, "after the restart\n");
	free(out);
	cr_assert_eq(timed_op(OP_STAT, "never-seen", -1, 30000, &took), ENOENT);
	fusermount_u();
	assert_unmounted(pid);
}

/* (e) The same mount recovers by itself: the mds goes away (EIO), comes
 * back, and the mount that stayed serves again, old files and new. */
Test(mount, same_mount_serves_again_after_mds_restart)
{
	char timeout[32], name[64];
	int64_t took;
	int r = -1;

	snprintf(timeout, sizeof(timeout), "timeout_ms=%d", TIMEOUT_MS);
	pid_t pid = mount_direct(timeout);
	write_file("before", "before\n", 7);

	cr_assert_eq(tcluster_kill(tc, "mds.0"), 0);
	expect_eio(OP_STAT, "new-while-down", -1, TIMEOUT_MS + SLACK_MS);
	restart("mds.0");
	cr_assert_eq(tcluster_wait_active_mds(tc, NULL, NULL, 0, TCLUSTER_WAIT_MS), 0,
		     "no active mds after the restart");

	/* Each poll a name never looked up: ENOENT is the mds answering. */
	int64_t t0 = tnow_ms();
	for (int i = 0; tnow_ms() - t0 < TCLUSTER_WAIT_MS; i++) {
		snprintf(name, sizeof(name), "probe-%d", i);
		r = timed_op(OP_STAT, name, -1, TIMEOUT_MS + 30000, &took);
		if (r == ENOENT)
			break;
		tsleep_ms(100);
	}
	cr_assert_eq(r, ENOENT, "the mount does not serve again %d ms after the mds came "
		     "back: stat gives %s", TCLUSTER_WAIT_MS, strerror(r));
	cr_log_info("the mount serves again %" PRId64 " ms after the mds was active",
		    tnow_ms() - t0);
	check_file("before", "before\n", 7);
	write_file("after", "after\n", 6);
	check_file("after", "after\n", 6);
	fusermount_u();
	assert_unmounted(pid);
}

/* A file handle of @name under DIR/mnt (malloc'd), as a kernel NFS
 * server or a user-space gateway gets it. */
static struct file_handle *handle_of(const char *name)
{
	struct file_handle *fh = calloc(1, sizeof(*fh) + MAX_HANDLE_SZ);
	char path[PATH_MAX + 64];
	int mount_id;

	cr_assert(fh);
	fh->handle_bytes = MAX_HANDLE_SZ;
	snprintf(path, sizeof(path), "%s/%s", mnt, name);
	cr_assert_eq(name_to_handle_at(AT_FDCWD, path, fh, &mount_id, 0), 0,
		     "name_to_handle_at %s: %s", path, strerror(errno));
	return fh;
}

/* (f) File handles outlive the mount: taken before an unmount, they
 * open the same file and directory on a new mount whose kernel has never
 * seen those inodes (FUSE asks mount.sdfs LOOKUP(nodeid, ".")), and the
 * handle of a file removed meanwhile is ESTALE at once, never another
 * file (docs/reexport.md: stable handles). */
Test(mount, file_handles_survive_a_remount)
{
	struct file_handle *hf, *hd, *hg;
	char path[PATH_MAX + 64], buf[64];
	int mfd, fd, r = 0;
	ssize_t n;

	pid_t pid = mount_direct(NULL);
	snprintf(path, sizeof(path), "%s/hd", mnt);
	cr_assert_eq(mkdir(path, 0755), 0, "mkdir %s: %s", path, strerror(errno));
	write_file("hd/file", "handle\n", 7);
	write_file("hd/gone", "gone\n", 5);
	hf = handle_of("hd/file");
	hd = handle_of("hd");
	hg = handle_of("hd/gone");
	snprintf(path, sizeof(path), "%s/hd/gone", mnt);
	cr_assert_eq(unlink(path), 0);
	fusermount_u();
	assert_unmounted(pid);

	pid = mount_direct(NULL);
	mfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(mfd >= 0);
	fd = open_by_handle_at(mfd, hf, O_RDONLY);
	cr_assert(fd >= 0, "the file's handle after a remount: %s", strerror(errno));
	n = read(fd, buf, sizeof(buf));
	cr_assert_eq(n, 7);
	cr_assert_arr_eq(buf, "handle\n", 7);
	close(fd);
	fd = open_by_handle_at(mfd, hd, O_RDONLY | O_DIRECTORY);
	cr_assert(fd >= 0, "the directory's handle after a remount: %s", strerror(errno));
	cr_assert_eq(fstatat(fd, "file", &(struct stat){ 0 }, 0), 0,
		     "hd/file through the directory's handle: %s", strerror(errno));
	close(fd);
	/* an inode without a name is stale at once, as on ext4 (not only
	 * after the mds's grace: opening it would hold it as a stray) */
	fd = open_by_handle_at(mfd, hg, O_RDONLY);
	r = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	cr_assert_eq(r, ESTALE, "the removed file's handle: %s", r ? strerror(r) : "opens");
	close(mfd);
	free(hf);
	free(hd);
	free(hg);
	fusermount_u();
	assert_unmounted(pid);
}
