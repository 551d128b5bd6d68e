/*
 * acl_test.c - POSIX ACLs (docs/acl.md) through two mounts of one
 * cluster (A at DIR/mnt, B at DIR/mnt2: two mount.sdfs, the fixture's
 * opts.mounts = 2), with setfacl/getfacl (package acl) and direct
 * syscalls as unprivileged users in forked children:
 *
 * - a named-user entry grants what the mode denies, enforced on B at
 *   once (B looked first and cached the file without it) and taken
 *   away again by setfacl -b;
 * - a directory's default ACL is inherited by new files and
 *   subdirectories (masked by the create mode, umask not applied);
 *   without one, the creator's umask is applied;
 * - chmod moves the mask; an ACL that says no more than the mode is
 *   not kept (only the mode bits change); setting an access ACL as a
 *   user outside the file's group clears setgid;
 * - garbage ACL values get EINVAL, from the kernel through a mount and
 *   from the mds itself through libsdfs, and the mds keeps serving.
 */
#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "libclient/sdfs.h"
#include "tests/cluster/fixture.h"

#define USER_UID 12345          /* no passwd entries needed */
#define USER_GID 12345
#define OTHER_UID 23456
#define OTHER_GID 23456
#define SHARED_GID 4242         /* a group neither user is in */

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 2, .copies = 2, .mds = 1,
						      .mounts = 2 });
	cr_assert(tcluster_mnt_n(tc, 0) && tcluster_mnt_n(tc, 1));
	/* the users reach the mounts through the fixture's private dir */
	cr_assert_eq(chmod(tcluster_dir(tc), 0711), 0);
	umask(022);
}

static void down(void)
{
	tcluster_stop(tc);
	tc = NULL;
}

TestSuite(acl, .init = up, .fini = down, .timeout = 240);

/* @name on mount A / B, in one of a few rotating static buffers. */
static const char *on(unsigned m, const char *name)
{
	static char buf[8][PATH_MAX];
	static unsigned i;
	char *p = buf[i++ % 8];

	snprintf(p, PATH_MAX, "%s/%s", tcluster_mnt_n(tc, m), name);
	return p;
}
#define A(name) on(0, name)
#define B(name) on(1, name)

/* Run a shell command line; its exit status. */
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	cr_log_info("%s -> %d", cmd, st);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* What getfacl prints for @path (numeric ids, no header, no
 * "#effective" comments), malloc'd. */
static char *getfacl(const char *path)
{
	char cmd[PATH_MAX + 64], *buf = calloc(1, 4096);
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "getfacl -n -p -E --omit-header '%s' 2>&1", path);
	f = popen(cmd, "r");
	cr_assert(f && buf);
	while (n < 4095) {
		size_t got = fread(buf + n, 1, 4095 - n, f);
		if (!got)
			break;
		n += got;
	}
	pclose(f);
	cr_log_info("getfacl %s:\n%s", path, buf);
	return buf;
}

static void assert_acl_has(const char *path, const char *line)
{
	char *s = getfacl(path);

	cr_assert(strstr(s, line), "getfacl %s has no \"%s\":\n%s", path, line, s);
	free(s);
}

static void assert_acl_lacks(const char *path, const char *line)
{
	char *s = getfacl(path);

	cr_assert(!strstr(s, line), "getfacl %s has \"%s\":\n%s", path, line, s);
	free(s);
}

/*
 * Run @call in a child as @uid/@gid (no supplementary groups) with
 * umask @um: 0 if it returned >= 0, else its errno.
 */
#define AS(uid, gid, um, call) ({                                              \
	pid_t p_ = fork();                                                     \
	cr_assert(p_ >= 0);                                                    \
	if (p_ == 0) {                                                         \
		umask(um);                                                     \
		if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||          \
		    setresuid(uid, uid, uid))                                  \
			_exit(254);                                            \
		errno = 0;                                                     \
		long r_ = (long)(call);                                        \
		_exit(r_ < 0 ? (errno ? errno : 253) : 0);                     \
	}                                                                      \
	int st_;                                                               \
	cr_assert_eq(waitpid(p_, &st_, 0), p_);                                \
	cr_assert(WIFEXITED(st_));                                             \
	WEXITSTATUS(st_);                                                      \
})
#define U(call) AS(USER_UID, USER_GID, 022, call)
#define O(call) AS(OTHER_UID, OTHER_GID, 022, call)

static int read_ok(const char *path)
{
	char c;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	if (read(fd, &c, 1) != 1) {
		close(fd);
		errno = EIO;
		return -1;
	}
	close(fd);
	return 0;
}

static void put(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, "secret", 6), 6);
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(chmod(path, mode), 0);
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "stat %s: %s", path, strerror(errno));
	return st.st_mode & 07777;
}

static int has_xattr(const char *path, const char *name)
{
	ssize_t n = getxattr(path, name, NULL, 0);

	cr_assert(n >= 0 || errno == ENODATA, "getxattr %s %s: %s", path, name,
		  strerror(errno));
	return n >= 0;
}

/* An ACL in the kernel's xattr form. */
struct xacl {
	uint8_t b[4 + 16 * 8];
	size_t len;
};

static void xacl_add(struct xacl *x, uint16_t tag, uint16_t perm, uint32_t id)
{
	uint16_t t = htole16(tag), p = htole16(perm);
	uint32_t i = htole32(id);

	if (x->len == 0) {
		uint32_t v = htole32(2);

		memcpy(x->b, &v, 4);
		x->len = 4;
	}
	memcpy(x->b + x->len, &t, 2);
	memcpy(x->b + x->len + 2, &p, 2);
	memcpy(x->b + x->len + 4, &i, 4);
	x->len += 8;
}

#define T_USER_OBJ 1
#define T_USER 2
#define T_GROUP_OBJ 4
#define T_MASK 0x10
#define T_OTHER 0x20

/* ---- access ACLs ---- */

Test(acl, a_named_user_entry_grants_read_on_every_mount)
{
	put(A("f"), 0600);
	/* B looks first: it caches the file as it is, without an ACL */
	cr_assert_eq(U(read_ok(B("f"))), EACCES);
	cr_assert_eq(O(read_ok(B("f"))), EACCES);

	cr_assert_eq(sh("setfacl -m u:%d:r '%s'", USER_UID, A("f")), 0);
	assert_acl_has(A("f"), "user:12345:r--");
	assert_acl_has(B("f"), "user:12345:r--");
	assert_acl_has(B("f"), "mask::r--");
	cr_assert_eq(mode_of(B("f")), 0640, "the group bits show the mask: %o",
		     mode_of(B("f")));

	cr_assert_eq(U(read_ok(B("f"))), 0, "B enforces A's ACL at once");
	cr_assert_eq(U(read_ok(A("f"))), 0);
	cr_assert_eq(U(open(B("f"), O_WRONLY)), EACCES, "read only");
	cr_assert_eq(O(read_ok(B("f"))), EACCES, "only the named user");

	/* removing it takes the grant away everywhere; the mode stays */
	cr_assert_eq(sh("setfacl -b '%s'", B("f")), 0);
	cr_assert(!has_xattr(A("f"), "system.posix_acl_access"));
	cr_assert_eq(U(read_ok(A("f"))), EACCES);
	cr_assert_eq(U(read_ok(B("f"))), EACCES);
	assert_acl_lacks(A("f"), "user:12345");
}

Test(acl, a_named_group_entry_grants_write)
{
	put(A("f"), 0644);
	cr_assert_eq(sh("setfacl -m g:%d:rw '%s'", OTHER_GID, A("f")), 0);
	cr_assert_eq(O(open(B("f"), O_WRONLY)), 0);
	cr_assert_eq(U(open(B("f"), O_WRONLY)), EACCES);
	cr_assert_eq(mode_of(B("f")), 0664);
}

Test(acl, chmod_moves_the_mask)
{
	put(A("f"), 0644);
	cr_assert_eq(sh("setfacl -m u:%d:rw '%s'", USER_UID, A("f")), 0);
	assert_acl_has(B("f"), "mask::rw-");
	cr_assert_eq(U(open(B("f"), O_RDWR)), 0);

	cr_assert_eq(chmod(A("f"), 0640), 0);
	assert_acl_has(A("f"), "mask::r--");
	assert_acl_has(B("f"), "mask::r--");
	assert_acl_has(B("f"), "user:12345:rw-");
	assert_acl_has(B("f"), "other::---");
	cr_assert_eq(U(open(B("f"), O_WRONLY)), EACCES, "the mask denies what the entry grants");
	cr_assert_eq(U(read_ok(B("f"))), 0);
	cr_assert_eq(O(read_ok(B("f"))), EACCES);

	/* mask ---: as on Linux the ACL is not even consulted, other rules */
	cr_assert_eq(chmod(B("f"), 0701), 0);
	assert_acl_has(A("f"), "user::rwx");
	assert_acl_has(A("f"), "mask::---");
	assert_acl_has(A("f"), "other::--x");
	assert_acl_has(A("f"), "group::r--");
	cr_assert_eq(U(read_ok(A("f"))), EACCES);

	cr_assert_eq(chmod(B("f"), 0660), 0);
	assert_acl_has(A("f"), "mask::rw-");
	cr_assert_eq(U(open(A("f"), O_RDWR)), 0);
}

Test(acl, an_acl_equal_to_the_mode_sets_the_mode_and_is_not_kept)
{
	put(A("f"), 0600);
	cr_assert_eq(sh("setfacl --set u::rwx,g::r-x,o::r-- '%s'", A("f")), 0);
	cr_assert_eq(mode_of(A("f")), 0754);
	cr_assert_eq(mode_of(B("f")), 0754);
	cr_assert(!has_xattr(A("f"), "system.posix_acl_access"));
	cr_assert(!has_xattr(B("f"), "system.posix_acl_access"));
	cr_assert_eq(U(read_ok(B("f"))), 0);
}

Test(acl, setting_an_acl_outside_the_files_group_clears_setgid)
{
	struct xacl x = { .len = 0 };

	put(A("f"), 0664);
	cr_assert_eq(chown(A("f"), USER_UID, SHARED_GID), 0);
	cr_assert_eq(chmod(A("f"), 02664), 0);
	cr_assert_eq(mode_of(B("f")), 02664);
	xacl_add(&x, T_USER_OBJ, 6, 0);
	xacl_add(&x, T_USER, 4, OTHER_UID);
	xacl_add(&x, T_GROUP_OBJ, 4, 0);
	xacl_add(&x, T_MASK, 4, 0);
	xacl_add(&x, T_OTHER, 4, 0);
	cr_assert_eq(U(setxattr(B("f"), "system.posix_acl_access", x.b, x.len, 0)), 0);
	cr_assert_eq(mode_of(A("f")), 0644, "got %o", mode_of(A("f")));
	cr_assert_eq(O(read_ok(A("f"))), 0);

	/* root is privileged: setgid stays */
	cr_assert_eq(chmod(A("f"), 02664), 0);
	cr_assert_eq(setxattr(A("f"), "system.posix_acl_access", x.b, x.len, 0), 0);
	cr_assert_eq(mode_of(B("f")), 02644, "got %o", mode_of(B("f")));
}

/* ---- default ACLs and the umask ---- */

Test(acl, new_files_and_dirs_inherit_the_default_acl)
{
	cr_assert_eq(mkdir(A("d"), 0755), 0);
	cr_assert_eq(sh("setfacl -d -m u::rwx,u:%d:rwx,g::r-x,m::rwx,o::--- '%s'",
			USER_UID, A("d")), 0);
	assert_acl_has(B("d"), "default:user:12345:rwx");

	/* on B, umask 022: the default ACL rules, the umask does not */
	int fd = open(B("d/f"), O_WRONLY | O_CREAT, 0666);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(mode_of(B("d/f")), 0660, "got %o", mode_of(B("d/f")));
	assert_acl_has(A("d/f"), "user:12345:rwx");
	assert_acl_has(A("d/f"), "mask::rw-");
	assert_acl_has(A("d/f"), "other::---");
	assert_acl_lacks(A("d/f"), "default:");
	cr_assert_eq(U(open(A("d/f"), O_RDWR)), 0, "the inherited entry, masked to rw");

	/* the create mode masks the inherited entries */
	fd = open(A("d/ro"), O_WRONLY | O_CREAT, 0640);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(mode_of(B("d/ro")), 0640);
	assert_acl_has(B("d/ro"), "mask::r--");
	cr_assert_eq(U(open(B("d/ro"), O_WRONLY)), EACCES);
	cr_assert_eq(U(open(B("d/ro"), O_RDONLY)), 0);

	/* a subdirectory gets it as its access ACL and as its default */
	cr_assert_eq(mkdir(B("d/sub"), 0777), 0);
	cr_assert_eq(mode_of(A("d/sub")), 0770, "got %o", mode_of(A("d/sub")));
	assert_acl_has(A("d/sub"), "default:user:12345:rwx");
	assert_acl_has(A("d/sub"), "mask::rwx");
	cr_assert_eq(U(mknod(A("d/sub/fifo"), S_IFIFO | 0666, 0)), 0,
		     "the user may create in it through the ACL");
	cr_assert_eq(mode_of(B("d/sub/fifo")), 0660);
	assert_acl_has(B("d/sub/fifo"), "user:12345:rwx");

	/* removing the default ACL: new files get the umask again */
	cr_assert_eq(sh("setfacl -k '%s'", A("d")), 0);
	fd = open(B("d/plain"), O_WRONLY | O_CREAT, 0666);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(mode_of(A("d/plain")), 0644);
	cr_assert(!has_xattr(A("d/plain"), "system.posix_acl_access"));
}

static int make_all(void)
{
	int fd = open(tcluster_mnt_n(tc, 1), O_RDONLY | O_DIRECTORY);

	if (fd < 0 || mkdirat(fd, "um/d", 0777) || mknodat(fd, "um/p", S_IFIFO | 0666, 0))
		return -1;
	int f = openat(fd, "um/f", O_WRONLY | O_CREAT, 0666);
	return f < 0 ? -1 : 0;
}

Test(acl, without_a_default_acl_the_umask_applies)
{
	cr_assert_eq(mkdir(A("um"), 0777), 0);
	cr_assert_eq(chmod(A("um"), 0777), 0);
	cr_assert_eq(AS(USER_UID, USER_GID, 027, make_all()), 0);
	cr_assert_eq(mode_of(A("um/f")), 0640, "got %o", mode_of(A("um/f")));
	cr_assert_eq(mode_of(A("um/d")), 0750, "got %o", mode_of(A("um/d")));
	cr_assert_eq(mode_of(A("um/p")), 0640, "got %o", mode_of(A("um/p")));
	cr_assert(!has_xattr(A("um/f"), "system.posix_acl_access"));
}

/* ---- what is refused ---- */

Test(acl, garbage_acls_get_einval)
{
	static const uint8_t junk[] = "\2\0\0\0 not an acl";
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_stat st;
	struct xacl x = { .len = 0 };
	uint8_t buf[64];
	unsigned seed = 7;

	put(A("f"), 0644);
	cr_assert_eq(setxattr(A("f"), "system.posix_acl_access", junk, sizeof(junk), 0), -1);
	cr_assert_eq(errno, EINVAL);

	/* past the kernel: the mds checks what libsdfs sends */
	cr_assert_eq(sdfs_ns_resolve(s, "/f", 1, &st), 0);
	cr_assert_eq(sdfs_ns_setxattr(s, st.ino, "system.posix_acl_access", junk,
				      sizeof(junk), 0), -EINVAL);
	/* a named entry without a mask */
	xacl_add(&x, T_USER_OBJ, 6, 0);
	xacl_add(&x, T_USER, 4, USER_UID);
	xacl_add(&x, T_GROUP_OBJ, 4, 0);
	xacl_add(&x, T_OTHER, 4, 0);
	cr_assert_eq(sdfs_ns_setxattr(s, st.ino, "system.posix_acl_access", x.b, x.len, 0),
		     -EINVAL);
	cr_assert_eq(sdfs_ns_setxattr(s, st.ino, "system.posix_acl_default", x.b, x.len, 0),
		     -EINVAL);
	for (int i = 0; i < 300; i++) {
		/* not 4: a header alone is an empty ACL (removes it) */
		size_t len = 5 + (size_t)rand_r(&seed) % (sizeof(buf) - 5);

		for (size_t j = 0; j < len; j++)
			buf[j] = (uint8_t)rand_r(&seed);
		if (i % 2)
			memcpy(buf, "\2\0\0\0", 4);
		cr_assert_eq(sdfs_ns_setxattr(s, st.ino, "system.posix_acl_access", buf, len,
					      0), -EINVAL, "garbage %d (%zu bytes)", i, len);
	}
	/* a default ACL on a file, other system. names */
	x.len = 0;
	xacl_add(&x, T_USER_OBJ, 6, 0);
	xacl_add(&x, T_GROUP_OBJ, 4, 0);
	xacl_add(&x, T_OTHER, 4, 0);
	cr_assert_eq(sdfs_ns_setxattr(s, st.ino, "system.posix_acl_default", x.b, x.len, 0),
		     -EACCES);
	cr_assert_eq(sdfs_ns_setxattr(s, st.ino, "system.other", x.b, x.len, 0),
		     -EOPNOTSUPP);
	/* nothing was stored, the mds still serves */
	cr_assert(!has_xattr(B("f"), "system.posix_acl_access"));
	cr_assert_eq(mode_of(B("f")), 0644);
	cr_assert_eq(sdfs_ns_getattr(s, st.ino, &st), 0);
}
