/*
 * perm_test.c - the mds enforces permissions itself (docs/mds.md
 * "Permissions"): a caller that goes around the kernel (libsdfs here,
 * as the mount's would; the sdfs CLI run as an ordinary user) gets
 * EACCES / EPERM where the mode bits, the ownership, a sticky directory
 * or a POSIX ACL say so, and what they allow works.
 *
 * The libsdfs calls act as the ids set with sdfs_set_caller; root
 * (uid 0) makes the files first. Each test gets its own cluster (3
 * blockd, 1 mds), open (no keys): the mds trusts the ids a request
 * claims, and the checks are what is tested.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"

#define ROOT 1
#define ALICE 1000
#define BOB 1001

static struct tcluster *tc;
static struct sdfs *s;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .mds = 1 });
	s = tcluster_client(tc);
}

static void down(void)
{
	sdfs_clear_caller();
	tcluster_stop(tc);
}

TestSuite(perm, .init = up, .fini = down, .timeout = 180);

static void as_root(void)
{
	sdfs_set_caller(0, 0, NULL, 0);
}

static void as(uint32_t uid)
{
	sdfs_set_caller(uid, uid, NULL, 0);
}

static uint64_t mk(uint64_t dir, const char *name, uint32_t mode, uint32_t uid)
{
	struct sdfs_stat st;
	int ret = S_ISDIR(mode) ?
		  sdfs_ns_mkdir(s, dir, name, mode & 07777, uid, uid, &st) :
		  sdfs_ns_mknod(s, dir, name, mode, 0, uid, uid, &st);

	cr_assert_eq(ret, 0, "make %s: %s", name, strerror(-ret));
	cr_assert_eq(st.mode & 07777, mode & 07777, "%s: mode %o", name, st.mode);
	return st.ino;
}

static void expect(int got, int want, const char *what)
{
	cr_assert_eq(got, want, "%s: %d (%s), want %d (%s)", what, got,
		     got < 0 ? strerror(-got) : "ok", want,
		     want < 0 ? strerror(-want) : "ok");
}

static int count(void *arg, const char *name, uint64_t ino, uint32_t type,
		 uint64_t cookie, const struct sdfs_stat *st)
{
	(void)name, (void)ino, (void)type, (void)cookie, (void)st;
	++*(size_t *)arg;
	return 0;
}

/* A root 0600 file: its attributes may be read, its data not; nothing
 * may be made or removed in a root 0755 directory; someone else's file
 * cannot be chmod'ed, chown'ed, truncated or given times or xattrs. */
Test(perm, a_user_gets_what_the_mode_bits_say)
{
	struct sdfs_setattr sa = { 0 };
	struct sdfs_stat st;
	uint64_t secret, pub, priv;
	size_t entries = 0;
	char buf[64];

	as_root();
	secret = mk(ROOT, "secret", S_IFREG | 0600, 0);
	pub = mk(ROOT, "pub", S_IFREG | 0644, 0);
	priv = mk(ROOT, "priv", S_IFDIR | 0700, 0);
	mk(priv, "inside", S_IFREG | 0644, 0);
	expect(sdfs_ns_access(s, secret, R_OK | W_OK, &st), 0, "root opens secret");

	as(ALICE);
	expect(sdfs_ns_lookup(s, ROOT, "secret", &st), 0, "lookup secret");
	expect(sdfs_ns_getattr(s, secret, &st), 0, "getattr secret");
	cr_assert_eq(st.uid, 0);
	expect(sdfs_ns_access(s, secret, R_OK, &st), -EACCES, "open secret to read");
	expect(sdfs_ns_access(s, secret, W_OK, &st), -EACCES, "open secret to write");
	expect(sdfs_ns_access(s, pub, R_OK, &st), 0, "open pub to read");
	expect(sdfs_ns_access(s, pub, W_OK, &st), -EACCES, "open pub to write");
	expect(sdfs_ns_access(s, pub, X_OK, &st), -EACCES, "exec pub");

	/* the root directory is root's, 0755 */
	expect(sdfs_ns_mknod(s, ROOT, "mine", S_IFREG | 0644, 0, ALICE, ALICE, &st),
	       -EACCES, "create in /");
	expect(sdfs_ns_mkdir(s, ROOT, "mine", 0755, ALICE, ALICE, &st), -EACCES, "mkdir in /");
	expect(sdfs_ns_symlink(s, ROOT, "mine", "secret", ALICE, ALICE, &st), -EACCES,
	       "symlink in /");
	expect(sdfs_ns_link(s, pub, ROOT, "mine", &st), -EACCES, "link in /");
	expect(sdfs_ns_unlink(s, ROOT, "secret"), -EACCES, "unlink /secret");
	expect(sdfs_ns_rmdir(s, ROOT, "priv"), -EACCES, "rmdir /priv");
	expect(sdfs_ns_rename(s, ROOT, "secret", ROOT, "mine", 0), -EACCES, "rename");
	expect(sdfs_vol_create(s, ROOT, "mine", 0644, ALICE, ALICE, 1 << 20, 0, 0, &st),
	       -EACCES, "volume in /");

	/* a 0700 directory of root's: no search, no listing */
	expect(sdfs_ns_lookup(s, priv, "inside", &st), -EACCES, "lookup in priv");
	expect(sdfs_ns_readdir(s, priv, 0, 0, count, &entries), -EACCES, "readdir priv");

	/* someone else's file */
	sa.mask = SDFS_SETATTR_MODE;
	sa.mode = 0666;
	expect(sdfs_ns_setattr(s, secret, &sa, &st), -EPERM, "chmod secret");
	sa.mask = SDFS_SETATTR_UID;
	sa.uid = ALICE;
	expect(sdfs_ns_setattr(s, secret, &sa, &st), -EPERM, "chown secret");
	sa.mask = SDFS_SETATTR_GID;
	sa.gid = ALICE;
	expect(sdfs_ns_setattr(s, secret, &sa, &st), -EPERM, "chgrp secret");
	sa.mask = SDFS_SETATTR_SIZE;
	sa.size = 0;
	expect(sdfs_ns_setattr(s, pub, &sa, &st), -EACCES, "truncate pub");
	sa.mask = SDFS_SETATTR_MTIME | SDFS_SETATTR_CTIME;
	sa.mtime_ns = 1;
	expect(sdfs_ns_setattr(s, pub, &sa, &st), -EPERM, "utimes pub");
	sa.mask = SDFS_SETATTR_MTIME_NOW | SDFS_SETATTR_CTIME;
	expect(sdfs_ns_setattr(s, pub, &sa, &st), -EACCES, "touch pub");
	expect(sdfs_ns_setxattr(s, pub, "user.x", "1", 1, 0), -EACCES, "setxattr user.x");
	expect(sdfs_ns_setxattr(s, pub, "trusted.x", "1", 1, 0), -EPERM, "setxattr trusted.x");
	expect((int)sdfs_ns_getxattr(s, pub, "user.x", buf, sizeof(buf)), -ENODATA,
	       "getxattr user.x");

	/* nothing of it happened */
	as_root();
	st = (struct sdfs_stat){ 0 };
	expect(sdfs_ns_getattr(s, secret, &st), 0, "getattr secret as root");
	cr_assert_eq(st.mode & 07777, 0600);
	cr_assert_eq(st.uid, 0);
	cr_assert_eq(st.gid, 0);
	expect(sdfs_ns_lookup(s, ROOT, "mine", &st), -ENOENT, "nothing made");
	expect(sdfs_ns_setxattr(s, pub, "trusted.x", "1", 1, 0), 0, "root sets trusted.x");
}

/* In a sticky 1777 directory anyone makes files, which are theirs
 * whatever the request says, and only they (or the directory's owner,
 * or root) remove or replace them. */
Test(perm, a_sticky_directory_keeps_others_files)
{
	struct sdfs_stat st;
	uint64_t tmp;

	as_root();
	tmp = mk(ROOT, "tmp", S_IFDIR | 01777, 0);
	as(BOB);
	/* asks for root's ids: gets its own */
	expect(sdfs_ns_mknod(s, tmp, "bobs", S_IFREG | 04755, 0, 0, 0, &st), 0, "bob creates");
	cr_assert_eq(st.uid, BOB);
	cr_assert_eq(st.gid, BOB);
	as(ALICE);
	mk(tmp, "alices", S_IFREG | 0644, ALICE);
	expect(sdfs_ns_unlink(s, tmp, "bobs"), -EPERM, "alice removes bob's file");
	expect(sdfs_ns_rename(s, tmp, "bobs", tmp, "taken", 0), -EPERM,
	       "alice renames bob's file");
	expect(sdfs_ns_rename(s, tmp, "alices", tmp, "bobs", 0), -EPERM,
	       "alice renames over bob's file");
	expect(sdfs_vol_create(s, tmp, "vol", 0644, 0, 0, 1 << 20, 0, 0, &st), -EPERM,
	       "alice makes a volume for root");
	expect(sdfs_vol_create(s, tmp, "vol", 0644, ALICE, ALICE, 1 << 20, 0, 0, &st), 0,
	       "alice makes her volume");
	expect(sdfs_ns_unlink(s, tmp, "alices"), 0, "alice removes her own");
	as(BOB);
	expect(sdfs_ns_unlink(s, tmp, "bobs"), 0, "bob removes his own");
}

/* The xattr form of an ACL (docs/acl.md): entries of tag, perm, id. */
static size_t acl_xattr(uint8_t *out, const uint16_t (*e)[3], size_t n)
{
	uint32_t v = 2;

	memcpy(out, &v, 4);     /* little-endian hosts only, as the tests */
	for (size_t i = 0; i < n; i++) {
		uint32_t id = e[i][2] ? e[i][2] : 0xffffffffu;

		memcpy(out + 4 + 8 * i, &e[i][0], 2);
		memcpy(out + 6 + 8 * i, &e[i][1], 2);
		memcpy(out + 8 + 8 * i, &id, 4);
	}
	return 4 + 8 * n;
}

/* user::rwx user:ALICE:r-x group::--- mask::r-x other::--- on a root
 * 0700 directory, user:ALICE:r-- on a root 0600 file inside: alice gets
 * in and reads, bob does not; alice cannot change the ACL (not hers). */
Test(perm, a_posix_acl_grants_a_named_user)
{
	const uint16_t dir_acl[][3] = {
		{ 0x01, 7, 0 }, { 0x02, 5, ALICE }, { 0x04, 0, 0 }, { 0x10, 5, 0 },
		{ 0x20, 0, 0 },
	};
	const uint16_t file_acl[][3] = {
		{ 0x01, 6, 0 }, { 0x02, 4, ALICE }, { 0x04, 0, 0 }, { 0x10, 4, 0 },
		{ 0x20, 0, 0 },
	};
	uint8_t x[64];
	struct sdfs_stat st;
	uint64_t dir, f;
	size_t n;

	as_root();
	dir = mk(ROOT, "shared", S_IFDIR | 0700, 0);
	f = mk(dir, "f", S_IFREG | 0600, 0);
	as(ALICE);
	expect(sdfs_ns_lookup(s, dir, "f", &st), -EACCES, "alice: lookup before the ACL");
	as_root();
	n = acl_xattr(x, dir_acl, 5);
	expect(sdfs_ns_setxattr(s, dir, "system.posix_acl_access", x, n, 0), 0, "dir ACL");
	n = acl_xattr(x, file_acl, 5);
	expect(sdfs_ns_setxattr(s, f, "system.posix_acl_access", x, n, 0), 0, "file ACL");
	size_t xlen = n;

	as(ALICE);
	n = 0;
	expect(sdfs_ns_lookup(s, dir, "f", &st), 0, "alice: lookup");
	expect(sdfs_ns_readdir(s, dir, 0, 0, count, &n), 0, "alice: readdir");
	cr_assert_eq(n, 1);
	expect(sdfs_ns_access(s, f, R_OK, &st), 0, "alice: open to read");
	expect(sdfs_ns_access(s, f, W_OK, &st), -EACCES, "alice: open to write");
	expect(sdfs_ns_mknod(s, dir, "g", S_IFREG | 0644, 0, ALICE, ALICE, &st), -EACCES,
	       "alice: create (no w)");
	expect(sdfs_ns_setxattr(s, f, "system.posix_acl_access", x, xlen, 0), -EPERM,
	       "alice: set the ACL");
	as(BOB);
	expect(sdfs_ns_lookup(s, dir, "f", &st), -EACCES, "bob: lookup");
	expect(sdfs_ns_access(s, f, R_OK, &st), -EACCES, "bob: open to read");
	/* a supplementary group counts: chgrp by the owner to it */
	as_root();
	uint64_t tmp = mk(ROOT, "tmp", S_IFDIR | 01777, 0);
	uint32_t groups[] = { 4242 };
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_GID, .gid = 4242 };

	as(BOB);
	uint64_t g = mk(tmp, "g", S_IFREG | 0644, BOB);

	expect(sdfs_ns_setattr(s, g, &sa, &st), -EPERM, "bob: chgrp to a group he is not in");
	sdfs_set_caller(BOB, BOB, groups, 1);
	expect(sdfs_ns_setattr(s, g, &sa, &st), 0, "bob: chgrp to his group");
	cr_assert_eq(st.gid, 4242);
}

/* Run the sdfs CLI as uid/gid @id (no groups) with @args; its exit
 * status, its stderr in @err. */
static int cli_as(uint32_t id, const char *conf, char *err, size_t errlen,
		  const char *const *args)
{
	const char *bin = getenv("SDFS_BIN");
	char *argv[16];
	int pfd[2], st, n = 0;
	size_t got = 0;
	pid_t pid;

	cr_assert(bin, "SDFS_BIN unset");
	argv[n++] = (char *)bin;
	argv[n++] = "-c";
	argv[n++] = (char *)conf;
	for (int i = 0; args[i]; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	cr_assert_eq(pipe(pfd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		if (setgroups(0, NULL) || setresgid(id, id, id) || setresuid(id, id, id))
			_exit(126);
		execv(bin, argv);
		_exit(127);
	}
	close(pfd[1]);
	for (ssize_t r; got + 1 < errlen &&
	     (r = read(pfd[0], err + got, errlen - 1 - got)) > 0;)
		got += (size_t)r;
	err[got] = '\0';
	close(pfd[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The CLI as an ordinary user (the config readable, as installed) gets
 * "Permission denied" reading a root 0600 file, removing from root's
 * 0755 "/" and making a directory there; root does all three. */
Test(perm, the_cli_as_a_user_is_refused)
{
	char dir[] = "/tmp/sdfs-perm-XXXXXX", conf[64], err[4096];
	const char *cat[] = { "fs", "cat", "/secret", NULL };
	const char *rm[] = { "fs", "rm", "/secret", NULL };
	const char *mkd[] = { "fs", "mkdir", "/mine", NULL };
	struct sdfs_stat st;
	int in, out, st_;
	char buf[4096];
	ssize_t r;

	as_root();
	uint64_t secret = mk(ROOT, "secret", S_IFREG | 0600, 0);

	(void)secret;
	cr_assert(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(conf, sizeof(conf), "%s/sdfs.conf", dir);
	in = open(tcluster_conf(tc), O_RDONLY);
	out = open(conf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(in >= 0 && out >= 0);
	while ((r = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)r), r);
	close(in);
	close(out);

	st_ = cli_as(ALICE, conf, err, sizeof(err), cat);
	cr_log_info("fs cat as %d: exit %d: %s", ALICE, st_, err);
	cr_assert(st_ != 0 && strstr(err, "Permission denied"), "cat: %d %s", st_, err);
	st_ = cli_as(ALICE, conf, err, sizeof(err), rm);
	cr_log_info("fs rm as %d: exit %d: %s", ALICE, st_, err);
	cr_assert(st_ != 0 && strstr(err, "Permission denied"), "rm: %d %s", st_, err);
	st_ = cli_as(ALICE, conf, err, sizeof(err), mkd);
	cr_log_info("fs mkdir as %d: exit %d: %s", ALICE, st_, err);
	cr_assert(st_ != 0 && strstr(err, "Permission denied"), "mkdir: %d %s", st_, err);
	expect(sdfs_ns_lookup(s, ROOT, "secret", &st), 0, "secret still there");
	expect(sdfs_ns_lookup(s, ROOT, "mine", &st), -ENOENT, "no /mine");

	st_ = cli_as(0, conf, err, sizeof(err), cat);
	cr_assert_eq(st_, 0, "cat as root: %s", err);
	st_ = cli_as(0, conf, err, sizeof(err), mkd);
	cr_assert_eq(st_, 0, "mkdir as root: %s", err);
	st_ = cli_as(0, conf, err, sizeof(err), rm);
	cr_assert_eq(st_, 0, "rm as root: %s", err);
	unlink(conf);
	rmdir(dir);
}

static void up_mount(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .mds = 1, .mount = 1 });
	s = tcluster_client(tc);
}

TestSuite(perm_mount, .init = up_mount, .fini = down, .timeout = 180);

/* Through mount.sdfs (the kernel's default_permissions on): the mds
 * gets each request's caller, supplementary groups too, so access the
 * kernel grants through one is granted by the mds as well, and a new
 * file is its creator's. */
Test(perm_mount, the_mount_sends_the_callers_groups)
{
	char path[8192], sub[4096];
	const char *mnt = tcluster_mnt(tc);
	struct stat st;
	int fd, status;
	pid_t pid;

	cr_assert_eq(chmod(tcluster_dir(tc), 0755), 0);
	snprintf(path, sizeof(path), "%s/g", mnt);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0640);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, "data", 4), 4);
	close(fd);
	cr_assert_eq(chown(path, 0, 4242), 0);
	snprintf(sub, sizeof(sub), "%s/gd", mnt);
	cr_assert_eq(mkdir(sub, 0770), 0);
	cr_assert_eq(chown(sub, 0, 4242), 0);
	cr_assert_eq(chmod(sub, 0770), 0);

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		gid_t g = 4242;
		char buf[8], np[4200];

		if (setgroups(1, &g) || setresgid(ALICE, ALICE, ALICE) ||
		    setresuid(ALICE, ALICE, ALICE))
			_exit(10);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(11);
		if (read(fd, buf, sizeof(buf)) != 4)
			_exit(12);
		close(fd);
		snprintf(np, sizeof(np), "%s/new", sub);
		fd = open(np, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			_exit(errno == EACCES ? 13 : 14);
		close(fd);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "the member of group 4242 failed at step %d",
		     WEXITSTATUS(status));
	snprintf(path, sizeof(path), "%s/new", sub);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_uid, ALICE);
}
