/*
 * smb_test.c - re-exporting an sdfs mount with Samba (smbd), checked
 * with smbclient: put/get, mkdir, rename, delete, a 10,000-entry
 * listing, DOS attributes in user.DOSATTRIB on the mount, and locks
 * both ways between SMB and another sdfs mount: an SMB read refused
 * while a POSIX lock on another mount covers it, and a byte-range lock
 * held through SMB refusing F_SETLK on another mount.
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
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static struct tcluster *tc;
static struct rx_gw gw;
static struct vt_mount2 m2;
static pid_t holder;            /* hold_lock()'s child, 0 if none */

/*
 * An interactive smbclient over SMB1 with UNIX extensions: the only
 * way smbclient takes a byte-range lock (its `lock`, which smbd with
 * posix locking = yes turns into an fcntl lock on its mount) and keeps
 * it, because the fnum that `open` prints is random and a -c script
 * cannot use it. Commands go to its stdin, a pipe; at EOF it exits.
 *
 * smbclient reads that pipe with select() and a buffered fgets(), so a
 * line that arrived together with the one before waits for the next
 * write: session_do() writes a marker command until its "command not
 * found" comes back, which says every command before it is done.
 * stdbuf -oL: without it, its stdout (a pipe) reaches us only at exit.
 */
struct smb_session {
	pid_t pid;
	int in;                 /* its stdin */
	int out;                /* its stdout and stderr, O_NONBLOCK */
	char *text;             /* all it printed, NUL-terminated */
	size_t len;
	unsigned marks;         /* markers sent: rxmark1, rxmark2, ... */
};
static struct smb_session ses;

static void session_open(struct smb_session *s)
{
	char port[16];
	char *argv[] = { "stdbuf", "-oL", "smbclient", "//127.0.0.1/sdfs", "-p", port,
			 "-N", "-m", "NT1", "--option=client min protocol=NT1", NULL };
	int in[2], out[2];

	snprintf(port, sizeof(port), "%d", gw.port);
	signal(SIGPIPE, SIG_IGN);       /* a dead smbclient fails a write instead */
	cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
	memset(s, 0, sizeof(*s));
	s->pid = fork();
	cr_assert(s->pid >= 0, "fork: %s", strerror(errno));
	if (s->pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0)
			_exit(127);
		close_range(3, ~0u, 0);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->in = in[1];
	s->out = out[0];
	cr_assert_eq(fcntl(s->out, F_SETFL, O_NONBLOCK), 0);
	s->text = calloc(1, 1);
	cr_assert(s->text);
}

/* Append what smbclient printed within @timeout_ms: 1 if it printed
 * something, -1 if nothing, 0 at its EOF. */
static int session_read(struct smb_session *s, int timeout_ms)
{
	struct pollfd pfd = { .fd = s->out, .events = POLLIN };
	char buf[4096];
	ssize_t n;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return -1;
	while ((n = read(s->out, buf, sizeof(buf))) > 0) {
		s->text = realloc(s->text, s->len + n + 1);
		cr_assert(s->text);
		memcpy(s->text + s->len, buf, n);
		s->len += n;
		s->text[s->len] = '\0';
	}
	return n == 0 ? 0 : 1;
}

static void session_write(struct smb_session *s, const char *line)
{
	size_t len = strlen(line);

	cr_assert_eq(write(s->in, line, len), (ssize_t)len,
		     "writing to smbclient: %s; it printed:\n%s", strerror(errno), s->text);
}

/*
 * Send the command @fmt and wait until smbclient has run it; what it
 * printed since the command was sent (marker lines included), valid
 * until the next call.
 */
static const char *session_do(struct smb_session *s, const char *fmt, ...)
{
	char line[256], mark[64], want[96];
	size_t from = s->len;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	session_write(s, line);
	snprintf(mark, sizeof(mark), "rxmark%u\n", ++s->marks);
	snprintf(want, sizeof(want), "rxmark%u: command not found", s->marks);
	for (int64_t end = tnow_ms() + VT_WAIT_MS;;) {
		session_write(s, mark);
		int alive = session_read(s, 200) != 0;

		if (strstr(s->text + from, want))
			return s->text + from;
		cr_assert(alive, "smbclient exited after '%s'; it printed:\n%s", fmt, s->text);
		cr_assert(tnow_ms() < end, "smbclient has not run '%s' after %d ms; it "
			  "printed:\n%s", fmt, VT_WAIT_MS, s->text);
	}
}

/* Did a command print nothing but marker lines? */
static int only_marks(const char *out)
{
	unsigned n;
	int end;

	for (const char *p = out; *p; p += end) {
		end = 0;
		if (sscanf(p, "rxmark%u: command not found\n%n", &n, &end) != 1 || !end)
			return 0;
	}
	return 1;
}

/* quit and EOF; fails the test unless smbclient exits 0 in time. */
static void session_close(struct smb_session *s)
{
	int st;

	session_write(s, "quit\n");
	close(s->in);
	s->in = -1;
	st = vt_wait_child(s->pid, VT_WAIT_MS);
	if (st < 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	s->pid = 0;
	while (session_read(s, 1000) > 0)
		;
	cr_assert_eq(st, 0, "smbclient after quit: status %d; it printed:\n%s", st, s->text);
	close(s->out);
	free(s->text);
	s->text = NULL;
}

/* teardown: kill it by its pid if a test failed while it ran */
static void session_kill(struct smb_session *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
}

/* Kill hold_lock()'s child by its pid, if there is one. */
static void drop_lock(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		*pid = 0;
	}
}

static void setup(void)
{
	if (!rx_have("smbd") || !rx_have("smbclient"))
		cr_skip_test("needs smbd (samba) and smbclient");
	tc = rx_start();
	rx_smb_start(tc, &gw);
}

static void teardown(void)
{
	session_kill(&ses);
	drop_lock(&holder);
	vt_mount2_stop(&m2);
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
 * and holds it until killed (drop_lock); 0 once it holds it, -errno if
 * it could not take it. *@pid: the child.
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

/*
 * F_SETLK of a write lock on [@start, @start + @len) of @path through a
 * new descriptor of this process, dropped again by its close: 0 if it
 * was granted, else -errno.
 */
static int try_lock(const char *path, off_t start, off_t len)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start,
			    .l_len = len };
	int fd = open(path, O_RDWR | O_CLOEXEC), ret = 0;

	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	if (fcntl(fd, F_SETLK, &fl) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int is_conflict(int ret)
{
	return ret == -EAGAIN || ret == -EACCES;
}

static const char *lock_str(int ret)
{
	return ret ? strerror(-ret) : "granted";
}

/*
 * An SMB client cannot read a range that a POSIX lock taken directly
 * on another sdfs mount covers (strict locking: smbd asks F_GETLK on
 * its mount, and the mds answers for every mount).
 */
Test(smb, lock_conflict_with_other_mount)
{
	char mnt[PATH_MAX + 64], mnt2[PATH_MAX + 64], path2[PATH_MAX + 80];
	char local[PATH_MAX], *out;
	int st, ret;

	rx_write_file(vt_path(tc, "locked", mnt), 4096, 7);
	snprintf(mnt2, sizeof(mnt2), "%s/mnt2", tcluster_dir(tc));
	vt_mount2_start(tc, &m2, mnt2, NULL);
	snprintf(path2, sizeof(path2), "%s/locked", mnt2);

	cr_assert_eq(hold_lock(path2, &holder), 0, "F_SETLK on mount 2");
	ret = try_lock(vt_path(tc, "locked", mnt), 0, 100);
	cr_assert(is_conflict(ret), "F_SETLK [0, 100) on the gateway's mount while mount 2 "
		  "holds it: %s, want EAGAIN or EACCES", lock_str(ret));

	/* held on mount 2: SMB read through the gateway on mount 1 fails */
	st = smb("get locked local.locked", &out);
	cr_assert(st != 0 && strstr(out, "NT_STATUS_FILE_LOCK_CONFLICT"),
		  "smbclient get of a range POSIX-locked on mount 2: status %d: %s", st, out);
	free(out);
	drop_lock(&holder);

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
	snprintf(local, sizeof(local), "%s/local.locked", tcluster_dir(tc));
	rx_check_file(local, 4096, 7, "smbclient get after the lock on mount 2 was dropped");
	vt_mount2_stop(&m2);
}

/* The lock the SMB client takes: [0, SMB_LOCK_LEN), in hex for smbclient. */
#define SMB_LOCK_LEN 0x40

/* posix, open @name, lock [0, SMB_LOCK_LEN) for writing; the fnum. */
static int session_lock(struct smb_session *s, const char *name)
{
	const char *out, *p;
	int fnum;

	out = session_do(s, "posix");
	cr_assert(strstr(out, "CIFS capabilities") && strstr(out, " locks "),
		  "smbd offers no SMB1 UNIX extensions with locks: %s", out);
	out = session_do(s, "open %s", name);
	p = strstr(out, "fnum ");
	cr_assert(p && sscanf(p, "fnum %d", &fnum) == 1, "smbclient open %s: %s", name, out);
	out = session_do(s, "lock %d w 0 %x", fnum, SMB_LOCK_LEN);
	cr_assert(only_marks(out), "smbclient lock %d w 0 %x: %s", fnum, SMB_LOCK_LEN, out);
	return fnum;
}

/*
 * The other direction: a byte-range lock held through SMB (smbclient's
 * `lock`, which smbd with posix locking = yes takes as an fcntl lock on
 * the gateway's mount) refuses F_SETLK of an overlapping range on
 * another sdfs mount, exactly on its range, until the SMB client
 * unlocks it or disconnects.
 */
Test(smb, smb_lock_conflict_with_other_mount)
{
	char mnt[PATH_MAX + 64], mnt2[PATH_MAX + 64], path2[PATH_MAX + 80];
	const char *out;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 4096 };
	int fnum, fd, ret;

	rx_write_file(vt_path(tc, "locked", mnt), 4096, 8);
	snprintf(mnt2, sizeof(mnt2), "%s/mnt2", tcluster_dir(tc));
	vt_mount2_start(tc, &m2, mnt2, NULL);
	snprintf(path2, sizeof(path2), "%s/locked", mnt2);
	ret = try_lock(path2, 0, SMB_LOCK_LEN);
	cr_assert_eq(ret, 0, "F_SETLK on mount 2 before any SMB lock: %s", lock_str(ret));

	session_open(&ses);
	fnum = session_lock(&ses, "locked");

	/* held through smbd on mount 1: refused on mount 2 where it overlaps */
	ret = try_lock(path2, 0, SMB_LOCK_LEN);
	cr_assert(is_conflict(ret), "F_SETLK [0, %d) on mount 2 while SMB holds [0, %d): "
		  "%s, want EAGAIN or EACCES", SMB_LOCK_LEN, SMB_LOCK_LEN, lock_str(ret));
	ret = try_lock(path2, SMB_LOCK_LEN - 1, 100);
	cr_assert(is_conflict(ret), "F_SETLK [%d, %d) on mount 2 while SMB holds [0, %d): "
		  "%s, want EAGAIN or EACCES", SMB_LOCK_LEN - 1, SMB_LOCK_LEN + 99,
		  SMB_LOCK_LEN, lock_str(ret));
	ret = try_lock(path2, SMB_LOCK_LEN, 100);
	cr_assert_eq(ret, 0, "F_SETLK [%d, %d) on mount 2, just past the SMB lock: %s",
		     SMB_LOCK_LEN, SMB_LOCK_LEN + 100, lock_str(ret));
	fd = open(path2, O_RDWR | O_CLOEXEC);
	cr_assert(fd >= 0, "open %s: %s", path2, strerror(errno));
	cr_assert_eq(fcntl(fd, F_GETLK, &fl), 0, "F_GETLK on mount 2: %s", strerror(errno));
	close(fd);
	cr_assert(fl.l_type == F_WRLCK && fl.l_start == 0 && fl.l_len == SMB_LOCK_LEN,
		  "F_GETLK on mount 2 while SMB holds a write lock on [0, %d): type %d "
		  "[%lld, +%lld)", SMB_LOCK_LEN, fl.l_type, (long long)fl.l_start,
		  (long long)fl.l_len);

	/* unlocked through SMB: smbd's F_UNLCK reached the mds before its reply */
	out = session_do(&ses, "unlock %d 0 %x", fnum, SMB_LOCK_LEN);
	cr_assert(only_marks(out), "smbclient unlock %d 0 %x: %s", fnum, SMB_LOCK_LEN, out);
	ret = try_lock(path2, 0, SMB_LOCK_LEN);
	cr_assert_eq(ret, 0, "F_SETLK on mount 2 after the SMB unlock: %s", lock_str(ret));

	/* locked again, then the client disconnects: smbd's process for it
	 * closes the file as it ends, which drops the lock */
	out = session_do(&ses, "lock %d w 0 %x", fnum, SMB_LOCK_LEN);
	cr_assert(only_marks(out), "smbclient lock %d w 0 %x again: %s", fnum,
		  SMB_LOCK_LEN, out);
	ret = try_lock(path2, 0, SMB_LOCK_LEN);
	cr_assert(is_conflict(ret), "F_SETLK on mount 2 while SMB holds the lock again: "
		  "%s, want EAGAIN or EACCES", lock_str(ret));
	session_close(&ses);
	for (int64_t end = tnow_ms() + VT_WAIT_MS;;) {
		ret = try_lock(path2, 0, SMB_LOCK_LEN);
		if (ret == 0)
			break;
		cr_assert(is_conflict(ret), "F_SETLK on mount 2 after the SMB client left: %s",
			  lock_str(ret));
		cr_assert(tnow_ms() < end, "F_SETLK on mount 2 still refused %d ms after the "
			  "SMB client holding the lock disconnected", VT_WAIT_MS);
		tsleep_ms(100);
	}
	vt_mount2_stop(&m2);
}
