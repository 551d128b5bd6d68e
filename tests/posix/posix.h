/*
 * posix.h - what the POSIX conformance tests share: one mount for a
 * whole executable, a fresh directory per test, running a call as
 * another user, and asserting errno values and times.
 *
 * The mount: $SDFS_TEST_MNT if set (any filesystem: compare with a
 * local dir or passthrough_ll), else a cluster of 3 blockd, 1 mds and
 * mount.sdfs that posix_holder (holder.c) starts through the cluster
 * fixture and keeps up until this executable's last test ends. The
 * criterion runner starts it before the first test (a PRE_ALL hook) and
 * lets it go after the last (POST_ALL); each test runs in a process of
 * its own, so nothing else can hold it.
 *
 * Every test runs with its working directory set to its own new
 * directory, <mount>/<executable>.<runner pid>/<suite>.<test>, so paths
 * in tests are relative and no two tests see each other's files.
 *
 * Helpers fail the test (cr_assert) on anything unexpected.
 */
#ifndef SDFS_TESTS_POSIX_POSIX_H
#define SDFS_TESTS_POSIX_POSIX_H
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tests/cluster/fixture.h"

/* Unprivileged ids for the permission tests; no /etc/passwd entry is
 * needed. USER_UID and OTHER_UID never own anything the test did not
 * give them. */
#define USER_UID  12345
#define USER_GID  12345
#define OTHER_UID 23456
#define OTHER_GID 23456
#define SHARED_GID 4242          /* a group neither user is in */

#define POSIX_TIMEOUT_S 120

/* The .init of every posix TestSuite: make and enter the test's dir. */
void posix_enter(void);
/* The test's directory, absolute. */
const char *posix_dir(void);

#define POSIX_SUITE(name) TestSuite(name, .init = posix_enter, .timeout = POSIX_TIMEOUT_S)

/* errno's symbolic name ("ENOENT"; "0" for none). */
const char *errname(int e);

/* Assert that @call (an int or ssize_t returning syscall) fails with
 * errno @err. */
#define ASSERT_ERRNO(call, err) do {                                           \
	errno = 0;                                                             \
	long r_ = (long)(call);                                                \
	int e_ = errno;                                                        \
	cr_assert(r_ == -1 && e_ == (err), "%s: returned %ld, errno %s; expected -1 with %s", \
		  #call, r_, errname(e_), errname(err));                       \
} while (0)

/* Assert that @call succeeds (returns >= 0); evaluates to its result. */
#define ASSERT_OK(call) ({                                                     \
	errno = 0;                                                             \
	long r_ = (long)(call);                                                \
	cr_assert(r_ >= 0, "%s: failed with %s", #call, errname(errno));       \
	r_;                                                                    \
})

/*
 * Run @call in a child process as uid @uid, gid @gid (no supplementary
 * groups, no capabilities), with the test's cwd and umask. Evaluates to
 * 0 when the call returned >= 0, else to its errno. The child only
 * makes the call and exits; file descriptors it opens die with it.
 */
#define AS_USER(uid, gid, call) ({                                             \
	pid_t p_ = posix_fork_as((uid), (gid));                                \
	if (p_ == 0) {                                                         \
		errno = 0;                                                     \
		long r_ = (long)(call);                                        \
		posix_child_exit(r_ < 0 ? (errno ? errno : 255) : 0);          \
	}                                                                      \
	posix_child_wait(p_);                                                  \
})
pid_t posix_fork_as(uid_t uid, gid_t gid);      /* 0 in the child, as @uid */
void posix_child_exit(int code) __attribute__((noreturn));
int posix_child_wait(pid_t pid);                /* its exit code; fails on a signal */

/* Attributes straight from the filesystem, past the kernel's attribute
 * cache (statx AT_STATX_FORCE_SYNC), of @path itself (no follow). */
struct statx sx(const char *path);
struct statx sx_fd(int fd);
int64_t ts_ns(struct statx_timestamp t);
/* Let the clock move on before an operation whose time is checked, so
 * that a changed time differs from the old one even on a filesystem
 * with a coarse clock. */
void tick(void);

/* Files. */
void put(const char *path, const void *buf, size_t len);     /* create/replace */
void put_str(const char *path, const char *s);
/* The whole file, malloc'd and NUL terminated; its length in *@len. */
char *get(const char *path, size_t *len);
void xmkdir(const char *path, mode_t mode);
void xchmod(const char *path, mode_t mode);     /* exact bits, umask aside */
int exists(const char *path);                   /* lstat succeeds */
/* pread/pwrite of exactly @len bytes at @off, asserting. */
void pwrite_all(int fd, const void *buf, size_t len, off_t off);
void pread_all(int fd, void *buf, size_t len, off_t off);
/* A name of @len bytes of 'n' (len < 1024), into a static buffer. */
const char *long_name(size_t len);
#endif
