/*
 * smb_test.c - re-exporting an sdfs mount with Samba (smbd), checked
 * with smbclient: put/get, mkdir, rename, delete, a 20,000-entry
 * listing, DOS attributes in user.DOSATTRIB on the mount, and an SMB
 * read refused while a POSIX lock on another mount covers it.
 * docs/reexport.md has the smb.conf and why. Skipped when smbd or
 * smbclient is missing.
 */
#include "tests/reexport/rx.h"

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
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static struct tcluster *tc;
static struct rx_gw gw;

static void setup(void)
{
	if (!rx_have("smbd") || !rx_have("smbclient"))
		cr_skip_test("needs smbd (samba) and smbclient");
	tc = rx_start();
	rx_smb_start(tc, &gw);
}

static void teardown(void)
{
	rx_gw_stop(&gw);
	tcluster_stop(tc);
	tc = NULL;
}

TestSuite(smb, .init = setup, .fini = teardown, .timeout = 900);

/* smbclient //127.0.0.1/sdfs -N -c @cmds, from the cluster dir (local
 * names are relative to it); its status, output into *@out. */
static int smb(const char *cmds, char **out)
{
	char port[16], dir[PATH_MAX];
	int st;

	snprintf(port, sizeof(port), "%d", gw.port);
	cr_assert(getcwd(dir, sizeof(dir)));
	cr_assert_eq(chdir(tcluster_dir(tc)), 0);
	st = rx_run(out, "smbclient", "//127.0.0.1/sdfs", "-p", port, "-N", "-c", cmds,
		    NULL);
	cr_assert_eq(chdir(dir), 0);
	return st;
}

static void smb_ok(const char *cmds)
{
	char *out;
	int st = smb(cmds, &out);

	cr_assert_eq(st, 0, "smbclient -c '%s': status %d: %s", cmds, st, out);
	cr_assert(!strstr(out, "NT_STATUS_"), "smbclient -c '%s': %s", cmds, out);
	free(out);
}

Test(smb, put_get_rename_delete)
{
	char local[PATH_MAX], mnt[PATH_MAX + 64], attr[256];
	uint64_t seed = tseed("smb put_get");
	size_t len = (3u << 20) + 4321;
	struct stat st;
	ssize_t n;

	snprintf(local, sizeof(local), "%s/local.in", tcluster_dir(tc));
	rx_write_file(local, len, seed);
	smb_ok("put local.in viaSMB; mkdir sub; get viaSMB local.back");
	snprintf(local, sizeof(local), "%s/local.back", tcluster_dir(tc));
	rx_check_file(local, len, seed, "smbclient put, get");
	rx_check_file(vt_path(tc, "viaSMB", mnt), len, seed, "smbclient put, read on the mount");
	/* store dos attributes = yes: the DOS attributes live in user.DOSATTRIB */
	n = getxattr(vt_path(tc, "viaSMB", mnt), "user.DOSATTRIB", attr, sizeof(attr));
	cr_assert(n > 0, "no user.DOSATTRIB on the mount's viaSMB: %s",
		  n < 0 ? strerror(errno) : "empty");
	cr_assert_eq(stat(vt_path(tc, "sub", mnt), &st), 0, "smbclient mkdir sub: %s",
		     strerror(errno));
	cr_assert(S_ISDIR(st.st_mode));

	/* written on the mount, read through SMB */
	rx_write_file(vt_path(tc, "viaMount", mnt), len - 99, seed + 1);
	smb_ok("get viaMount local.back2");
	snprintf(local, sizeof(local), "%s/local.back2", tcluster_dir(tc));
	rx_check_file(local, len - 99, seed + 1, "written on the mount, smbclient get");

	/* rename into the directory, delete, rmdir */
	smb_ok("rename viaSMB sub\\renamed");
	rx_check_file(vt_path(tc, "sub/renamed", mnt), len, seed, "renamed through SMB");
	cr_assert(stat(vt_path(tc, "viaSMB", mnt), &st) < 0 && errno == ENOENT);
	smb_ok("del sub\\renamed; rmdir sub; del viaMount");
	cr_assert(stat(vt_path(tc, "sub", mnt), &st) < 0 && errno == ENOENT,
		  "sub still on the mount after smbclient rmdir");
	cr_assert(stat(vt_path(tc, "viaMount", mnt), &st) < 0 && errno == ENOENT,
		  "viaMount still on the mount after smbclient del");
}

Test(smb, big_dir)
{
	char *out;
	int64_t t0;
	size_t n = 0;

	t0 = tnow_ms();
	rx_make_files(tc, "big", RX_BIG_DIR);
	cr_log_info("created %d files on the mount in %" PRId64 " ms", RX_BIG_DIR,
		    tnow_ms() - t0);
	t0 = tnow_ms();
	cr_assert_eq(smb("ls big\\*", &out), 0, "smbclient ls: %s", out);
	cr_log_info("smbclient ls of %d entries: %" PRId64 " ms", RX_BIG_DIR,
		    tnow_ms() - t0);
	char *seen = calloc(RX_BIG_DIR, 1);
	cr_assert(seen);
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned i;

		/* "  f00042                              N        0  Sun ..." */
		if (sscanf(line, " f%5u ", &i) != 1)
			continue;
		cr_assert(i < RX_BIG_DIR && !seen[i], "bad or repeated entry: %s", line);
		seen[i] = 1;
		n++;
	}
	cr_assert_eq(n, RX_BIG_DIR, "smbclient listed %zu entries, want %d", n, RX_BIG_DIR);
	free(seen);
	free(out);
}

/*
 * A child process takes a write lock on [0, 100) of @path (F_SETLK)
 * and holds it until killed; 0 once it holds it, -errno if it could
 * not take it. *@pid: the child.
 */
static int hold_lock(const char *path, pid_t *pid)
{
	int p[2], err = 0;

	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	*pid = fork();
	cr_assert(*pid >= 0);
	if (*pid == 0) {
		int fd = open(path, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 100 };
		int e = 0;

		if (fd < 0 || fcntl(fd, F_SETLK, &fl) < 0)
			e = errno;
		if (write(p[1], &e, sizeof(e)) != sizeof(e))
			_exit(1);
		if (e)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &err, sizeof(err)), (ssize_t)sizeof(err));
	close(p[0]);
	return -err;
}

static void drop_lock(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * An SMB client cannot read a range that a POSIX lock taken directly
 * on another sdfs mount covers (strict locking: smbd asks F_GETLK on
 * its mount). Needs cluster-wide POSIX locks: skipped unless a lock
 * held through mount 2 makes F_SETLK on the gateway's mount fail.
 */
Test(smb, lock_conflict_with_other_mount)
{
	char mnt[PATH_MAX + 64], mnt2[PATH_MAX + 64], path2[PATH_MAX + 80], *out;
	struct vt_mount2 m2;
	pid_t holder;
	int fd, st;

	rx_write_file(vt_path(tc, "locked", mnt), 4096, 7);
	snprintf(mnt2, sizeof(mnt2), "%s/mnt2", tcluster_dir(tc));
	vt_mount2_start(tc, &m2, mnt2, NULL);
	snprintf(path2, sizeof(path2), "%s/locked", mnt2);

	/* are locks cluster-wide yet? */
	cr_assert_eq(hold_lock(path2, &holder), 0, "F_SETLK on mount 2");
	fd = open(vt_path(tc, "locked", mnt), O_RDWR | O_CLOEXEC);
	cr_assert(fd >= 0);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 100 };
	int conflict = fcntl(fd, F_SETLK, &fl) < 0 && (errno == EAGAIN || errno == EACCES);
	close(fd);      /* drops a lock it may have taken */
	if (!conflict) {
		drop_lock(holder);
		vt_mount2_stop(&m2);
		cr_skip_test("POSIX locks are not cluster-wide yet: a lock held on mount 2 "
			     "does not conflict with F_SETLK on mount 1");
	}

	/* held on mount 2: SMB read through the gateway on mount 1 fails */
	st = smb("get locked local.locked", &out);
	cr_assert(st != 0 && strstr(out, "LOCK_CONFLICT"),
		  "smbclient get of a range POSIX-locked on mount 2: status %d: %s", st, out);
	free(out);
	drop_lock(holder);

	/* released: the read works (the release reaches the gateway's mount) */
	for (int64_t end = tnow_ms() + VT_WAIT_MS;;) {
		st = smb("get locked local.locked", &out);
		if (st == 0 && !strstr(out, "NT_STATUS_")) {
			free(out);
			break;
		}
		cr_assert(tnow_ms() < end, "smbclient get after the unlock: %s", out);
		free(out);
		tsleep_ms(200);
	}
	vt_mount2_stop(&m2);
}
