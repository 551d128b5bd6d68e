/*
 * ns_test.c - the namespace through libsdfs against a real sdfs-mds:
 * POSIX error codes, link counts, times, attributes, truncate and the
 * freeing of file data, xattrs, readdir of a large directory, symlinks,
 * statfs, inode numbers, and that the mds keeps nothing on local disk.
 *
 * Each test gets its own cluster (3 blockd, 1 mds; 2 for the local-disk
 * check, which looks at the standby too) and works under the root.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/oid.h"
#include "tests/cluster/fixture.h"

#define ROOT 1
#define RENAME_NOREPLACE_ 1u    /* linux/fs.h values (sdfs.h) */
#define RENAME_EXCHANGE_  2u
#define XATTR_CREATE_  1
#define XATTR_REPLACE_ 2
#define FREE_WAIT_MS 15000      /* unlinked data freed by the purge thread */

static struct tcluster *tc;
static struct sdfs *s;

static void up_with(unsigned mds)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .mds = mds });
	s = tcluster_client(tc);
}

static void up1(void) { up_with(1); }
static void up2(void) { up_with(2); }
static void down(void) { tcluster_stop(tc); }

TestSuite(ns, .init = up1, .fini = down, .timeout = 120);
TestSuite(ns_local, .init = up2, .fini = down, .timeout = 120);

/* ---- helpers: each fails the test on an unexpected result ---- */

static struct sdfs_stat getattr(uint64_t ino)
{
	struct sdfs_stat st;
	int ret = sdfs_ns_getattr(s, ino, &st);

	cr_assert_eq(ret, 0, "getattr %" PRIu64 ": %s", ino, strerror(-ret));
	return st;
}

static struct sdfs_stat lookup(uint64_t dir, const char *name)
{
	struct sdfs_stat st;
	int ret = sdfs_ns_lookup(s, dir, name, &st);

	cr_assert_eq(ret, 0, "lookup %" PRIu64 "/%s: %s", dir, name, strerror(-ret));
	return st;
}

static uint64_t mkfile(uint64_t dir, const char *name)
{
	struct sdfs_stat st;
	int ret = sdfs_ns_mknod(s, dir, name, S_IFREG | 0644, 0, 1000, 1000, &st);

	cr_assert_eq(ret, 0, "create %" PRIu64 "/%s: %s", dir, name, strerror(-ret));
	cr_assert(S_ISREG(st.mode) && st.nlink == 1 && st.size == 0);
	return st.ino;
}

static uint64_t mkdir_(uint64_t dir, const char *name)
{
	struct sdfs_stat st;
	int ret = sdfs_ns_mkdir(s, dir, name, 0755, 1000, 1000, &st);

	cr_assert_eq(ret, 0, "mkdir %" PRIu64 "/%s: %s", dir, name, strerror(-ret));
	cr_assert(S_ISDIR(st.mode) && st.nlink == 2 && st.parent == dir);
	return st.ino;
}

static uint64_t symlink_(uint64_t dir, const char *name, const char *target)
{
	struct sdfs_stat st;
	int ret = sdfs_ns_symlink(s, dir, name, target, 1000, 1000, &st);

	cr_assert_eq(ret, 0, "symlink %" PRIu64 "/%s -> %s: %s", dir, name, target,
		     strerror(-ret));
	return st.ino;
}

/* @ret must be the error -@want; @what says which call it was. */
#define expect_err(ret, want, ...) do { \
	int r_ = (ret); \
	cr_assert_eq(r_, -(want), "%s: got %d (%s), want -%s", \
		     (snprintf(what_, sizeof(what_), __VA_ARGS__), what_), \
		     r_, r_ ? strerror(-r_) : "success", strerrorname_np(want)); \
} while (0)
static char what_[256];

/* An inode whose last link went: kept with nlink 0 for a grace (an
 * open file stays usable, docs/mds.md), then purged (ENOENT). */
static void expect_gone(uint64_t ino, const char *what)
{
	struct sdfs_stat st;
	int r = sdfs_ns_getattr(s, ino, &st);

	cr_assert(r == -ENOENT || (r == 0 && st.nlink == 0),
		  "%s: getattr gave %d (%s), nlink %u; want nlink 0 or ENOENT", what, r,
		  r ? strerror(-r) : "success", r ? 0 : st.nlink);
}

static void expect_absent(uint64_t dir, const char *name)
{
	struct sdfs_stat st;

	expect_err(sdfs_ns_lookup(s, dir, name, &st), ENOENT, "lookup %s after", name);
}

/* ---- error codes ---- */

Test(ns, create_remove_and_lookup_give_posix_errors)
{
	struct sdfs_stat st;
	char n255[256], n256[257];
	uint64_t d = mkdir_(ROOT, "d"), f = mkfile(ROOT, "f"), gone;

	mkfile(d, "inner");
	symlink_(ROOT, "l", "f");

	/* EEXIST: every way of making a name onto an existing one */
	expect_err(sdfs_ns_mknod(s, ROOT, "f", S_IFREG | 0644, 0, 0, 0, &st), EEXIST, "mknod f");
	expect_err(sdfs_ns_mknod(s, ROOT, "d", S_IFREG | 0644, 0, 0, 0, &st), EEXIST, "mknod d");
	expect_err(sdfs_ns_mkdir(s, ROOT, "f", 0755, 0, 0, &st), EEXIST, "mkdir f");
	expect_err(sdfs_ns_mkdir(s, ROOT, "d", 0755, 0, 0, &st), EEXIST, "mkdir d");
	expect_err(sdfs_ns_mkdir(s, ROOT, "l", 0755, 0, 0, &st), EEXIST, "mkdir l");
	expect_err(sdfs_ns_mkdir(s, d, ".", 0755, 0, 0, &st), EEXIST, "mkdir d/.");
	expect_err(sdfs_ns_mkdir(s, d, "..", 0755, 0, 0, &st), EEXIST, "mkdir d/..");
	expect_err(sdfs_ns_symlink(s, ROOT, "f", "x", 0, 0, &st), EEXIST, "symlink f");
	expect_err(sdfs_ns_symlink(s, ROOT, "l", "x", 0, 0, &st), EEXIST, "symlink l");
	expect_err(sdfs_ns_link(s, f, ROOT, "d", &st), EEXIST, "link onto d");
	expect_err(sdfs_ns_link(s, f, ROOT, "f", &st), EEXIST, "link onto itself");
	expect_err(sdfs_ns_link(s, f, d, "inner", &st), EEXIST, "link onto d/inner");
	cr_assert_eq(getattr(f).nlink, 1, "a failed link changed nlink");

	/* ENOENT: missing names and missing parents */
	expect_err(sdfs_ns_lookup(s, ROOT, "missing", &st), ENOENT, "lookup missing");
	expect_err(sdfs_ns_unlink(s, ROOT, "missing"), ENOENT, "unlink missing");
	expect_err(sdfs_ns_rmdir(s, ROOT, "missing"), ENOENT, "rmdir missing");
	gone = mkdir_(ROOT, "gone");
	cr_assert_eq(sdfs_ns_rmdir(s, ROOT, "gone"), 0);
	expect_err(sdfs_ns_lookup(s, gone, "x", &st), ENOENT, "lookup in a removed dir");
	expect_err(sdfs_ns_mknod(s, gone, "x", S_IFREG | 0644, 0, 0, 0, &st), ENOENT,
		   "mknod in a removed dir");
	expect_err(sdfs_ns_mkdir(s, gone, "x", 0755, 0, 0, &st), ENOENT, "mkdir in a removed dir");
	expect_err(sdfs_ns_symlink(s, gone, "x", "y", 0, 0, &st), ENOENT,
		   "symlink in a removed dir");
	expect_err(sdfs_ns_link(s, f, gone, "x", &st), ENOENT, "link into a removed dir");
	expect_err(sdfs_ns_unlink(s, gone, "x"), ENOENT, "unlink in a removed dir");
	expect_gone(gone, "getattr of a removed dir");
	expect_err(sdfs_ns_resolve(s, "/missing/f", 1, &st), ENOENT, "resolve /missing/f");
	expect_err(sdfs_ns_resolve(s, "/d/missing", 1, &st), ENOENT, "resolve /d/missing");
	expect_err(sdfs_ns_symlink(s, ROOT, "empty", "", 0, 0, &st), ENOENT,
		   "symlink to an empty target");

	/* ENOTDIR: a file used as a directory */
	expect_err(sdfs_ns_lookup(s, f, "x", &st), ENOTDIR, "lookup in a file");
	expect_err(sdfs_ns_mkdir(s, f, "x", 0755, 0, 0, &st), ENOTDIR, "mkdir under a file");
	expect_err(sdfs_ns_mknod(s, f, "x", S_IFREG | 0644, 0, 0, 0, &st), ENOTDIR,
		   "mknod under a file");
	expect_err(sdfs_ns_rmdir(s, ROOT, "f"), ENOTDIR, "rmdir of a file");
	expect_err(sdfs_ns_rmdir(s, ROOT, "l"), ENOTDIR, "rmdir of a symlink");
	expect_err(sdfs_ns_resolve(s, "/f/x", 1, &st), ENOTDIR, "resolve /f/x");
	expect_err(sdfs_ns_resolve(s, "/l/x", 1, &st), ENOTDIR, "resolve /l/x (l -> f)");

	/* EISDIR, ENOTEMPTY */
	expect_err(sdfs_ns_unlink(s, ROOT, "d"), EISDIR, "unlink of a dir");
	expect_err(sdfs_ns_rmdir(s, ROOT, "d"), ENOTEMPTY, "rmdir of a non-empty dir");
	cr_assert_eq(lookup(ROOT, "d").ino, d);

	/* ENAMETOOLONG: 255 bytes is a name, 256 is not */
	memset(n255, 'n', 255);
	n255[255] = '\0';
	memset(n256, 'm', 256);
	n256[256] = '\0';
	uint64_t longf = mkfile(ROOT, n255);
	cr_assert_eq(lookup(ROOT, n255).ino, longf);
	cr_assert_eq(sdfs_ns_unlink(s, ROOT, n255), 0);
	uint64_t longd = mkdir_(ROOT, n255);
	cr_assert_eq(lookup(ROOT, n255).ino, longd);
	cr_assert_eq(sdfs_ns_rmdir(s, ROOT, n255), 0);
	cr_assert_eq(sdfs_ns_rename(s, ROOT, "f", ROOT, n255, 0), 0);
	cr_assert_eq(sdfs_ns_rename(s, ROOT, n255, ROOT, "f", 0), 0);
	expect_err(sdfs_ns_mknod(s, ROOT, n256, S_IFREG | 0644, 0, 0, 0, &st), ENAMETOOLONG,
		   "mknod 256");
	expect_err(sdfs_ns_mkdir(s, ROOT, n256, 0755, 0, 0, &st), ENAMETOOLONG, "mkdir 256");
	expect_err(sdfs_ns_symlink(s, ROOT, n256, "x", 0, 0, &st), ENAMETOOLONG, "symlink 256");
	expect_err(sdfs_ns_link(s, f, ROOT, n256, &st), ENAMETOOLONG, "link 256");
	expect_err(sdfs_ns_lookup(s, ROOT, n256, &st), ENAMETOOLONG, "lookup 256");
	expect_err(sdfs_ns_unlink(s, ROOT, n256), ENAMETOOLONG, "unlink 256");
	expect_err(sdfs_ns_rename(s, ROOT, "f", ROOT, n256, 0), ENAMETOOLONG, "rename to 256");
	expect_absent(ROOT, n255);

	/* EINVAL: names that are not one component */
	expect_err(sdfs_ns_mknod(s, ROOT, "a/b", S_IFREG | 0644, 0, 0, 0, &st), EINVAL,
		   "mknod a/b");
	expect_err(sdfs_ns_mkdir(s, ROOT, "a/", 0755, 0, 0, &st), EINVAL, "mkdir a/");
	expect_err(sdfs_ns_mkdir(s, ROOT, "/", 0755, 0, 0, &st), EINVAL, "mkdir /");
	expect_err(sdfs_ns_symlink(s, ROOT, "d/x", "f", 0, 0, &st), EINVAL, "symlink d/x");
	expect_err(sdfs_ns_link(s, f, ROOT, "d/inner2", &st), EINVAL, "link d/inner2");
	expect_err(sdfs_ns_lookup(s, ROOT, "d/inner", &st), EINVAL, "lookup d/inner");
	expect_err(sdfs_ns_mknod(s, ROOT, "", S_IFREG | 0644, 0, 0, 0, &st), EINVAL, "mknod ''");
	expect_err(sdfs_ns_rename(s, ROOT, "f", ROOT, "d/f", 0), EINVAL, "rename to d/f");
	expect_err(sdfs_ns_rename(s, ROOT, "d/inner", ROOT, "x", 0), EINVAL,
		   "rename from d/inner");
	expect_absent(ROOT, "a");
	expect_absent(d, "x");
	expect_absent(d, "f");
	expect_absent(d, "inner2");
	cr_assert_eq(lookup(ROOT, "f").ino, f);
	cr_assert_eq(getattr(f).nlink, 1);
}

Test(ns, resolve_stops_symlink_loops_with_eloop)
{
	struct sdfs_stat st;
	uint64_t d = mkdir_(ROOT, "d"), f = mkfile(d, "f");

	symlink_(ROOT, "l1", "l2");
	symlink_(ROOT, "l2", "/l1");
	symlink_(ROOT, "self", "self");
	symlink_(d, "up", "../d/up");
	symlink_(ROOT, "ok", "d/../d/f");
	expect_err(sdfs_ns_resolve(s, "/l1", 1, &st), ELOOP, "resolve /l1 (l1 -> l2 -> /l1)");
	expect_err(sdfs_ns_resolve(s, "/l1/x", 0, &st), ELOOP, "resolve /l1/x");
	expect_err(sdfs_ns_resolve(s, "/self", 1, &st), ELOOP, "resolve /self");
	expect_err(sdfs_ns_resolve(s, "/d/up/x", 1, &st), ELOOP, "resolve /d/up/x");
	/* without follow, the last component is the link itself */
	cr_assert_eq(sdfs_ns_resolve(s, "/l1", 0, &st), 0);
	cr_assert(S_ISLNK(st.mode));
	cr_assert_eq(sdfs_ns_resolve(s, "/ok", 1, &st), 0);
	cr_assert_eq(st.ino, f, "/ok -> d/../d/f resolved to %" PRIu64, st.ino);
	cr_assert_eq(sdfs_ns_resolve(s, "//d/./f", 1, &st), 0);
	cr_assert_eq(st.ino, f);
	cr_assert_eq(sdfs_ns_resolve(s, "/../d/../../d", 1, &st), 0);
	cr_assert_eq(st.ino, d);
}

/* The number of entries of @dir (readdir). */
static int count_fn(void *arg, const char *name, uint64_t ino, uint32_t type,
		    uint64_t cookie, const struct sdfs_stat *st)
{
	(void)name, (void)ino, (void)type, (void)cookie, (void)st;
	++*(unsigned *)arg;
	return 0;
}

static unsigned count_entries(uint64_t dir)
{
	unsigned n = 0;

	cr_assert_eq(sdfs_ns_readdir(s, dir, 0, 0, count_fn, &n), 0);
	return n;
}

Test(ns, rename_gives_posix_errors_and_keeps_both_names_on_failure)
{
	struct sdfs_stat st;
	uint64_t a = mkdir_(ROOT, "a"), b = mkdir_(a, "b"), c = mkdir_(b, "c");
	uint64_t e = mkdir_(c, "e"), full = mkdir_(ROOT, "full");
	uint64_t f = mkfile(ROOT, "f"), g = mkfile(ROOT, "g");
	uint64_t empty = mkdir_(ROOT, "empty");

	mkfile(full, "x");
	(void)g;
	/* ENOENT */
	expect_err(sdfs_ns_rename(s, ROOT, "missing", ROOT, "x", 0), ENOENT,
		   "rename of a missing source");
	expect_err(sdfs_ns_rename(s, ROOT, "missing", a, "x", 0), ENOENT,
		   "rename of a missing source across dirs");
	expect_err(sdfs_ns_rename(s, ROOT, "f", ROOT, "missing", RENAME_EXCHANGE_), ENOENT,
		   "RENAME_EXCHANGE with a missing target");
	expect_err(sdfs_ns_rename(s, ROOT, "f", a, "missing", RENAME_EXCHANGE_), ENOENT,
		   "RENAME_EXCHANGE with a missing target across dirs");
	/* ENOTDIR, EISDIR, ENOTEMPTY */
	expect_err(sdfs_ns_rename(s, ROOT, "empty", ROOT, "f", 0), ENOTDIR,
		   "rename of a dir over a file");
	expect_err(sdfs_ns_rename(s, a, "b", ROOT, "f", 0), ENOTDIR,
		   "rename of a dir over a file across dirs");
	expect_err(sdfs_ns_rename(s, ROOT, "f", ROOT, "empty", 0), EISDIR,
		   "rename of a file over a dir");
	expect_err(sdfs_ns_rename(s, ROOT, "f", a, "b", 0), EISDIR,
		   "rename of a file over a dir across dirs");
	expect_err(sdfs_ns_rename(s, ROOT, "empty", ROOT, "full", 0), ENOTEMPTY,
		   "rename over a non-empty dir");
	expect_err(sdfs_ns_rename(s, ROOT, "f", f, "x", 0), ENOTDIR,
		   "rename into a file");
	/* EINVAL: a directory into itself or below itself, at any depth */
	expect_err(sdfs_ns_rename(s, ROOT, "a", a, "x", 0), EINVAL, "rename /a /a/x");
	expect_err(sdfs_ns_rename(s, ROOT, "a", b, "x", 0), EINVAL, "rename /a /a/b/x");
	expect_err(sdfs_ns_rename(s, ROOT, "a", c, "x", 0), EINVAL, "rename /a /a/b/c/x");
	expect_err(sdfs_ns_rename(s, ROOT, "a", e, "x", 0), EINVAL, "rename /a /a/b/c/e/x");
	expect_err(sdfs_ns_rename(s, a, "b", e, "x", 0), EINVAL, "rename /a/b /a/b/c/e/x");
	expect_err(sdfs_ns_rename(s, ROOT, "a", e, "x", RENAME_NOREPLACE_), EINVAL,
		   "rename NOREPLACE /a /a/b/c/e/x");
	mkfile(e, "y");
	expect_err(sdfs_ns_rename(s, ROOT, "a", e, "y", RENAME_EXCHANGE_), EINVAL,
		   "EXCHANGE /a with /a/b/c/e/y");
	expect_err(sdfs_ns_rename(s, e, "y", ROOT, "a", RENAME_EXCHANGE_), EINVAL,
		   "EXCHANGE /a/b/c/e/y with /a");
	/* "." and ".." are never renamed nor replaced (which error is not
	 * specified: the kernel never sends them) */
	cr_assert_lt(sdfs_ns_rename(s, ROOT, ".", ROOT, "x", 0), 0, "rename of .");
	cr_assert_lt(sdfs_ns_rename(s, a, "..", ROOT, "x", 0), 0, "rename of ..");
	cr_assert_lt(sdfs_ns_rename(s, ROOT, "f", a, ".", 0), 0, "rename onto .");
	cr_assert_lt(sdfs_ns_rename(s, ROOT, "f", b, "..", 0), 0, "rename onto ..");
	expect_err(sdfs_ns_rename(s, ROOT, "f", ROOT, "x", 4), EINVAL, "rename flag 4");
	expect_err(sdfs_ns_rename(s, ROOT, "f", ROOT, "g", 3), EINVAL,
		   "NOREPLACE | EXCHANGE");
	/* NOREPLACE */
	expect_err(sdfs_ns_rename(s, ROOT, "f", ROOT, "g", RENAME_NOREPLACE_), EEXIST,
		   "RENAME_NOREPLACE onto a file");
	expect_err(sdfs_ns_rename(s, ROOT, "empty", ROOT, "a", RENAME_NOREPLACE_), EEXIST,
		   "RENAME_NOREPLACE onto a dir");

	/* Nothing moved. */
	cr_assert_eq(lookup(ROOT, "a").ino, a);
	cr_assert_eq(lookup(a, "b").ino, b);
	cr_assert_eq(lookup(b, "c").ino, c);
	cr_assert_eq(lookup(c, "e").ino, e);
	cr_assert_eq(lookup(ROOT, "f").ino, f);
	cr_assert_eq(lookup(ROOT, "empty").ino, empty);
	cr_assert_eq(getattr(e).parent, c);
	cr_assert_eq(getattr(a).parent, ROOT);
	cr_assert_eq(getattr(a).nlink, 3);
	cr_assert_eq(getattr(ROOT).nlink, 2 + 3, "root: a, full, empty");
	expect_absent(a, "x");
	expect_absent(e, "x");
	expect_absent(ROOT, "x");
	cr_assert_eq(count_entries(e), 1);

	/* What is allowed: NOREPLACE to a free name, over an empty dir, a
	 * file over a file (the replaced inode goes), onto a hard link of
	 * itself (nothing happens). */
	cr_assert_eq(sdfs_ns_rename(s, ROOT, "f", ROOT, "f2", RENAME_NOREPLACE_), 0);
	expect_absent(ROOT, "f");
	cr_assert_eq(lookup(ROOT, "f2").ino, f);
	cr_assert_eq(sdfs_ns_rename(s, a, "b", ROOT, "empty", 0), 0);
	expect_gone(empty, "the replaced empty dir");
	cr_assert_eq(lookup(ROOT, "empty").ino, b);
	cr_assert_eq(getattr(b).parent, ROOT);
	cr_assert_eq(getattr(a).nlink, 2, "a lost its subdir b");
	cr_assert_eq(getattr(ROOT).nlink, 2 + 3, "root: a, full, empty (now b)");
	cr_assert_eq(sdfs_ns_rename(s, ROOT, "f2", ROOT, "g", 0), 0);
	cr_assert_eq(lookup(ROOT, "g").ino, f);
	expect_gone(g, "the replaced file g");
	cr_assert_eq(sdfs_ns_link(s, f, ROOT, "g2", &st), 0);
	cr_assert_eq(sdfs_ns_rename(s, ROOT, "g", ROOT, "g2", 0), 0);
	cr_assert_eq(lookup(ROOT, "g").ino, f, "rename onto its own hard link removed a name");
	cr_assert_eq(lookup(ROOT, "g2").ino, f);
	cr_assert_eq(getattr(f).nlink, 2);
}

Test(ns, rename_exchange_swaps_a_file_and_a_dir_across_directories)
{
	uint64_t p1 = mkdir_(ROOT, "p1"), p2 = mkdir_(ROOT, "p2");
	uint64_t f = mkfile(p1, "x"), d = mkdir_(p2, "y");
	struct sdfs_stat st;

	mkfile(d, "inside");
	cr_assert_eq(getattr(p1).nlink, 2);
	cr_assert_eq(getattr(p2).nlink, 3);
	cr_assert_eq(sdfs_ns_rename(s, p1, "x", p2, "y", RENAME_EXCHANGE_), 0);
	/* p1/x is now the dir, p2/y the file */
	st = lookup(p1, "x");
	cr_assert_eq(st.ino, d);
	cr_assert(S_ISDIR(st.mode));
	cr_assert_eq(st.parent, p1, "the dir's parent is %" PRIu64 ", not p1", st.parent);
	st = lookup(p2, "y");
	cr_assert_eq(st.ino, f);
	cr_assert(S_ISREG(st.mode));
	cr_assert_eq(getattr(p1).nlink, 3, "p1 gained a subdirectory");
	cr_assert_eq(getattr(p2).nlink, 2, "p2 lost its subdirectory");
	cr_assert_eq(lookup(d, "..").ino, p1);
	cr_assert_eq(sdfs_ns_resolve(s, "/p1/x/inside", 1, &st), 0);
	/* and back, within one directory too */
	cr_assert_eq(sdfs_ns_rename(s, p2, "y", p1, "x", RENAME_EXCHANGE_), 0);
	cr_assert_eq(lookup(p1, "x").ino, f);
	cr_assert_eq(lookup(p2, "y").ino, d);
	cr_assert_eq(getattr(p1).nlink, 2);
	cr_assert_eq(getattr(p2).nlink, 3);
	cr_assert_eq(getattr(d).parent, p2);
	mkfile(p1, "z");
	cr_assert_eq(sdfs_ns_rename(s, p1, "x", p1, "z", RENAME_EXCHANGE_), 0);
	cr_assert_eq(lookup(p1, "z").ino, f);
	cr_assert_eq(count_entries(p1), 2);
	cr_assert_eq(count_entries(p2), 1);
}

/* ---- link counts ---- */

Test(ns, link_counts_follow_mkdir_rmdir_link_and_unlink)
{
	struct sdfs_stat st;
	uint64_t d = mkdir_(ROOT, "d"), f;
	char buf[16];

	cr_assert_eq(getattr(ROOT).nlink, 3);
	cr_assert_eq(getattr(d).nlink, 2);
	for (int i = 0; i < 5; i++) {
		snprintf(buf, sizeof(buf), "sub%d", i);
		mkdir_(d, buf);
		cr_assert_eq(getattr(d).nlink, 3u + (unsigned)i, "after mkdir %s", buf);
	}
	mkfile(d, "file");
	cr_assert_eq(getattr(d).nlink, 7, "a file does not count");
	for (int i = 4; i >= 0; i--) {
		snprintf(buf, sizeof(buf), "sub%d", i);
		cr_assert_eq(sdfs_ns_rmdir(s, d, buf), 0);
		cr_assert_eq(getattr(d).nlink, 2u + (unsigned)i, "after rmdir %s", buf);
	}
	cr_assert_eq(getattr(ROOT).nlink, 3);

	/* hard links */
	f = mkfile(ROOT, "f");
	cr_assert_eq(sdfs_ns_link(s, f, d, "f2", &st), 0);
	cr_assert_eq(st.ino, f);
	cr_assert_eq(st.nlink, 2);
	cr_assert_eq(sdfs_ns_link(s, f, ROOT, "f3", &st), 0);
	cr_assert_eq(getattr(f).nlink, 3);
	cr_assert_eq(lookup(d, "f2").nlink, 3);
	cr_assert_eq(lookup(ROOT, "f3").ino, f);
	expect_err(sdfs_ns_link(s, d, ROOT, "dlink", &st), EPERM, "link of a directory");
	cr_assert_eq(getattr(ROOT).nlink, 3, "hard links to files do not count");

	/* unlinking one link keeps the others, and the data */
	struct sdfs_stat fs = getattr(f);
	char in[5000], out[5000];
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_SIZE, .size = sizeof(in) };

	tfill_random(in, sizeof(in), 42);
	cr_assert_eq(sdfs_file_pwrite(s, &fs, in, sizeof(in), 0, 0), 0);
	cr_assert_eq(sdfs_ns_setattr(s, f, &sa, &fs), 0);
	cr_assert_eq(sdfs_ns_unlink(s, ROOT, "f"), 0);
	expect_absent(ROOT, "f");
	cr_assert_eq(getattr(f).nlink, 2);
	cr_assert_eq(sdfs_ns_unlink(s, d, "f2"), 0);
	st = lookup(ROOT, "f3");
	cr_assert_eq(st.nlink, 1);
	cr_assert_eq(st.size, sizeof(in));
	cr_assert_eq(sdfs_file_pread(s, &st, out, sizeof(out), 0), (ssize_t)sizeof(out));
	cr_assert_arr_eq(in, out, sizeof(in), "data lost with a removed link");
	cr_assert_eq(sdfs_ns_unlink(s, ROOT, "f3"), 0);
	expect_gone(f, "getattr after the last unlink");
	expect_err(sdfs_ns_link(s, f, ROOT, "again", &st), ENOENT, "link of a removed inode");
}

/* ---- times and attributes ---- */

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

Test(ns, times_move_with_changes_and_utimes_are_kept_exactly)
{
	uint64_t d = mkdir_(ROOT, "d");
	struct sdfs_stat before = getattr(d), after, f, g;
	int64_t t0 = wall_ns();

	/* create moves the parent's mtime and ctime */
	uint64_t fi = mkfile(d, "f");
	after = getattr(d);
	cr_assert_gt(after.mtime_ns, before.mtime_ns, "create did not move the dir's mtime");
	cr_assert_gt(after.ctime_ns, before.ctime_ns, "create did not move the dir's ctime");
	f = getattr(fi);
	cr_assert_geq(f.mtime_ns, t0 - 2000000000ll, "a new file's mtime is far off");
	cr_assert_leq(f.mtime_ns, wall_ns() + 2000000000ll);
	cr_assert_eq(f.mtime_ns, f.ctime_ns);

	/* unlink, rename, mkdir, symlink and link move it too */
	before = after;
	cr_assert_eq(sdfs_ns_rename(s, d, "f", d, "f2", 0), 0);
	after = getattr(d);
	cr_assert_gt(after.mtime_ns, before.mtime_ns, "rename: dir mtime");
	cr_assert_gt(getattr(fi).ctime_ns, f.ctime_ns, "rename: the file's ctime");
	before = after;
	cr_assert_eq(sdfs_ns_link(s, fi, d, "f3", NULL), 0);
	after = getattr(d);
	cr_assert_gt(after.mtime_ns, before.mtime_ns, "link: dir mtime");
	before = after;
	cr_assert_eq(sdfs_ns_unlink(s, d, "f3"), 0);
	after = getattr(d);
	cr_assert_gt(after.mtime_ns, before.mtime_ns, "unlink: dir mtime");
	cr_assert_gt(after.ctime_ns, before.ctime_ns, "unlink: dir ctime");

	/* setattr moves ctime, and only ctime */
	f = getattr(fi);
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_MODE, .mode = 0600 };
	cr_assert_eq(sdfs_ns_setattr(s, fi, &sa, &g), 0);
	cr_assert_gt(g.ctime_ns, f.ctime_ns, "chmod did not move ctime");
	cr_assert_eq(g.mtime_ns, f.mtime_ns, "chmod moved mtime");
	cr_assert_eq(g.atime_ns, f.atime_ns, "chmod moved atime");
	cr_assert_eq(getattr(fi).ctime_ns, g.ctime_ns, "setattr's reply and getattr differ");
	f = g;
	cr_assert_eq(sdfs_ns_setxattr(s, fi, "user.t", "v", 1, 0), 0);
	g = getattr(fi);
	cr_assert_gt(g.ctime_ns, f.ctime_ns, "setxattr did not move ctime");
	cr_assert_eq(g.mtime_ns, f.mtime_ns, "setxattr moved mtime");

	/* utimes: set exactly, to the nanosecond, before 1970 too */
	static const int64_t times[][2] = {
		{ 1234567890123456789ll, 987654321000000001ll },
		{ 1ll, 999999999ll },
		{ -1500000000ll, -1ll },
		{ 4102444800000000007ll, 0 },
	};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		f = g;
		sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_ATIME | SDFS_SETATTR_MTIME,
					    .atime_ns = times[i][0], .mtime_ns = times[i][1] };
		cr_assert_eq(sdfs_ns_setattr(s, fi, &sa, &g), 0);
		g = getattr(fi);
		cr_assert_eq(g.atime_ns, times[i][0], "atime %" PRId64 " came back %" PRId64,
			     times[i][0], g.atime_ns);
		cr_assert_eq(g.mtime_ns, times[i][1], "mtime %" PRId64 " came back %" PRId64,
			     times[i][1], g.mtime_ns);
		cr_assert_gt(g.ctime_ns, f.ctime_ns, "utimes did not move ctime");
	}
	/* only one of them */
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_MTIME, .mtime_ns = 5 };
	cr_assert_eq(sdfs_ns_setattr(s, fi, &sa, &g), 0);
	cr_assert_eq(g.mtime_ns, 5);
	cr_assert_eq(g.atime_ns, times[3][0], "setting mtime changed atime");
	/* "now" */
	t0 = wall_ns();
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_ATIME_NOW | SDFS_SETATTR_MTIME_NOW };
	cr_assert_eq(sdfs_ns_setattr(s, fi, &sa, &g), 0);
	cr_assert_geq(g.mtime_ns, t0 - 2000000000ll, "MTIME_NOW gave %" PRId64, g.mtime_ns);
	cr_assert_leq(g.mtime_ns, wall_ns() + 2000000000ll);
	cr_assert_geq(g.atime_ns, t0 - 2000000000ll, "ATIME_NOW gave %" PRId64, g.atime_ns);
	/* truncate moves mtime and ctime */
	f = g;
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_SIZE, .size = 10 };
	cr_assert_eq(sdfs_ns_setattr(s, fi, &sa, &g), 0);
	cr_assert_gt(g.mtime_ns, f.mtime_ns, "truncate did not move mtime");
	cr_assert_gt(g.ctime_ns, f.ctime_ns, "truncate did not move ctime");
}

Test(ns, setattr_sets_mode_and_owner_and_chown_clears_setuid)
{
	struct sdfs_stat st;
	struct sdfs_setattr sa;
	uint64_t f, d;

	cr_assert_eq(sdfs_ns_mknod(s, ROOT, "f", S_IFREG | 04755, 0, 1000, 1000, &st), 0);
	f = st.ino;
	cr_assert_eq(st.mode, S_IFREG | 04755, "mode 0%o", st.mode);
	cr_assert_eq(st.uid, 1000);
	cr_assert_eq(st.gid, 1000);

	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_MODE, .mode = 0640 };
	cr_assert_eq(sdfs_ns_setattr(s, f, &sa, &st), 0);
	cr_assert_eq(getattr(f).mode, S_IFREG | 0640, "chmod 0640 gave 0%o", getattr(f).mode);
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_MODE, .mode = S_IFDIR | 07777 };
	cr_assert_eq(sdfs_ns_setattr(s, f, &sa, &st), 0);
	cr_assert_eq(getattr(f).mode, S_IFREG | 07777, "chmod may not change the type: 0%o",
		     getattr(f).mode);

	/* chown clears setuid, and setgid when group-executable */
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_MODE, .mode = 06755 };
	cr_assert_eq(sdfs_ns_setattr(s, f, &sa, &st), 0);
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_UID, .uid = 2000 };
	cr_assert_eq(sdfs_ns_setattr(s, f, &sa, &st), 0);
	st = getattr(f);
	cr_assert_eq(st.uid, 2000);
	cr_assert_eq(st.gid, 1000, "chown of the uid changed the gid");
	cr_assert_eq(st.mode, S_IFREG | 0755, "chown left mode 0%o", st.mode);
	/* setgid without group exec (mandatory locking) stays; setuid goes */
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_MODE, .mode = 06745 };
	cr_assert_eq(sdfs_ns_setattr(s, f, &sa, &st), 0);
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_GID, .gid = 3000 };
	cr_assert_eq(sdfs_ns_setattr(s, f, &sa, &st), 0);
	st = getattr(f);
	cr_assert_eq(st.gid, 3000);
	cr_assert_eq(st.uid, 2000);
	cr_assert_eq(st.mode, S_IFREG | 02745, "chgrp left mode 0%o", st.mode);
	/* chown and chmod in one call: the mode given wins */
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_UID | SDFS_SETATTR_GID |
					    SDFS_SETATTR_MODE,
				    .uid = 0, .gid = 0, .mode = 04711 };
	cr_assert_eq(sdfs_ns_setattr(s, f, &sa, &st), 0);
	st = getattr(f);
	cr_assert_eq(st.uid, 0);
	cr_assert_eq(st.gid, 0);
	cr_assert_eq(st.mode, S_IFREG | 04711, "chown+chmod gave 0%o", st.mode);

	/* directories: modes with setgid, owners */
	d = mkdir_(ROOT, "d");
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_MODE | SDFS_SETATTR_UID |
					    SDFS_SETATTR_GID,
				    .mode = 02775, .uid = 7, .gid = 8 };
	cr_assert_eq(sdfs_ns_setattr(s, d, &sa, &st), 0);
	st = getattr(d);
	cr_assert_eq(st.mode, S_IFDIR | 02775, "dir mode 0%o", st.mode);
	cr_assert_eq(st.uid, 7);
	cr_assert_eq(st.gid, 8);
	/* a setgid directory gives its group (and the bit, to subdirs) */
	cr_assert_eq(sdfs_ns_mknod(s, d, "in", S_IFREG | 0644, 0, 1, 1, &st), 0);
	cr_assert_eq(st.gid, 8, "a file in a setgid dir got gid %u", st.gid);
	cr_assert_eq(sdfs_ns_mkdir(s, d, "sub", 0755, 1, 1, &st), 0);
	cr_assert_eq(st.gid, 8);
	cr_assert(st.mode & S_ISGID, "a subdir of a setgid dir lost the bit: 0%o", st.mode);

	/* sizes: not for directories; other types keep their rdev */
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_SIZE, .size = 1 };
	expect_err(sdfs_ns_setattr(s, d, &sa, &st), EISDIR, "truncate of a dir");
	cr_assert_eq(sdfs_ns_mknod(s, ROOT, "dev", S_IFCHR | 0600, 0x0501, 0, 0, &st), 0);
	cr_assert_eq(getattr(st.ino).rdev, 0x0501);
	cr_assert_eq(getattr(st.ino).mode, S_IFCHR | 0600);
	cr_assert_eq(sdfs_ns_mknod(s, ROOT, "fifo", S_IFIFO | 0600, 0, 0, 0, &st), 0);
	cr_assert(S_ISFIFO(lookup(ROOT, "fifo").mode));
	cr_assert_eq(sdfs_ns_mknod(s, ROOT, "plain", 0600, 0, 0, 0, &st), 0);
	cr_assert(S_ISREG(st.mode), "mknod without type bits made 0%o", st.mode);
	expect_err(sdfs_ns_mknod(s, ROOT, "dir", S_IFDIR | 0755, 0, 0, 0, &st), EINVAL,
		   "mknod S_IFDIR");
	expect_err(sdfs_ns_setattr(s, 1ull << 40, &sa, &st), ENOENT, "setattr of no inode");
}

/* ---- file data: truncate and freeing ---- */

static int obj_exists(uint64_t oid)
{
	struct sdfs_obj_info info;
	int ret = sdfs_obj_stat(s, oid, &info);

	cr_assert(ret == 0 || ret == -ENOENT, "obj_stat %016" PRIx64 ": %s", oid,
		  strerror(-ret));
	return ret == 0;
}

/* Wait until data object @chunk of @ino is gone; 0 or -ETIMEDOUT. */
static int wait_chunk_freed(uint64_t ino, uint64_t chunk, int timeout_ms)
{
	for (int64_t end = tnow_ms() + timeout_ms;; tsleep_ms(50)) {
		if (!obj_exists(oid_make(OID_KIND_FILE, ino, chunk)))
			return 0;
		if (tnow_ms() > end)
			return -ETIMEDOUT;
	}
}

Test(ns, truncate_shrink_then_grow_reads_zeros_and_unlink_frees_the_data)
{
	struct sdfs_stat st;
	struct sdfs_setattr sa;
	uint64_t ino = mkfile(ROOT, "data");
	uint32_t osz;
	size_t len, cut = 3001;
	char *in, *out;
	int64_t t0;

	st = getattr(ino);
	osz = st.obj_size;
	cr_assert_gt(osz, 0);
	cr_assert_eq(st.layout, 1, "a regular file's layout is %u", st.layout);
	len = 2 * (size_t)osz + 100;    /* three data objects */
	in = malloc(len);
	out = malloc(len);
	cr_assert(in && out);
	tfill_random(in, len, 7);
	cr_assert_eq(sdfs_file_pwrite(s, &st, in, len, 0, 0), 0);
	sa = (struct sdfs_setattr){ .mask = SDFS_SETATTR_SIZE, .size = len };
	cr_assert_eq(sdfs_ns_setattr(s, ino, &sa, &st), 0);
	st = getattr(ino);
	cr_assert_eq(st.size, len);
	cr_assert_eq(st.blocks, (len + 511) / 512);
	cr_assert_eq(sdfs_file_pread(s, &st, out, len, 0), (ssize_t)len);
	cr_assert_arr_eq(in, out, len);
	for (unsigned c = 0; c < 3; c++)
		cr_assert(obj_exists(oid_make(OID_KIND_FILE, ino, c)), "chunk %u missing", c);

	/* shrink into the first object: the two others go */
	sa.size = cut;
	cr_assert_eq(sdfs_ns_setattr(s, ino, &sa, &st), 0);
	cr_assert_eq(st.size, cut);
	cr_assert_eq(getattr(ino).size, cut);
	cr_assert_eq(sdfs_file_pread(s, &st, out, len, 0), (ssize_t)cut,
		     "a read stops at the new size");
	cr_assert_arr_eq(in, out, cut);
	cr_assert_eq(wait_chunk_freed(ino, 1, FREE_WAIT_MS), 0, "truncate kept chunk 1");
	cr_assert_eq(wait_chunk_freed(ino, 2, FREE_WAIT_MS), 0, "truncate kept chunk 2");

	/* grow again: zeros past the old end, in every object */
	sa.size = len;
	cr_assert_eq(sdfs_ns_setattr(s, ino, &sa, &st), 0);
	memset(out, 0xee, len);
	cr_assert_eq(sdfs_file_pread(s, &st, out, len, 0), (ssize_t)len);
	cr_assert_arr_eq(in, out, cut);
	for (size_t i = cut; i < len; i++)
		cr_assert_eq(out[i], 0, "byte %zu after shrink and grow is 0x%02x", i,
			     (unsigned char)out[i]);
	/* a shrink to an object boundary and to zero */
	tfill_random(in, len, 8);
	cr_assert_eq(sdfs_file_pwrite(s, &st, in, len, 0, 0), 0);
	sa.size = osz;
	cr_assert_eq(sdfs_ns_setattr(s, ino, &sa, &st), 0);
	sa.size = (uint64_t)osz + 10;
	cr_assert_eq(sdfs_ns_setattr(s, ino, &sa, &st), 0);
	cr_assert_eq(sdfs_file_pread(s, &st, out, osz + 10, 0), (ssize_t)osz + 10);
	cr_assert_arr_eq(in, out, osz);
	for (size_t i = osz; i < (size_t)osz + 10; i++)
		cr_assert_eq(out[i], 0, "byte %zu past a boundary shrink is not 0", i);
	sa.size = 0;
	cr_assert_eq(sdfs_ns_setattr(s, ino, &sa, &st), 0);
	cr_assert_eq(getattr(ino).size, 0);
	cr_assert_eq(sdfs_file_pread(s, &st, out, len, 0), 0);
	cr_assert_eq(wait_chunk_freed(ino, 0, FREE_WAIT_MS), 0, "truncate to 0 kept chunk 0");

	/* unlink frees every object of the file */
	tfill_random(in, len, 9);
	cr_assert_eq(sdfs_file_pwrite(s, &st, in, len, 0, 0), 0);
	sa.size = len;
	cr_assert_eq(sdfs_ns_setattr(s, ino, &sa, &st), 0);
	cr_assert_eq(sdfs_ns_unlink(s, ROOT, "data"), 0);
	t0 = tnow_ms();
	for (unsigned c = 0; c < 3; c++)
		cr_assert_eq(wait_chunk_freed(ino, c, FREE_WAIT_MS), 0,
			     "chunk %u of an unlinked file still exists after %d ms", c,
			     FREE_WAIT_MS);
	cr_log_info("unlinked file's %zu bytes freed in %" PRId64 " ms", len, tnow_ms() - t0);
	free(in);
	free(out);
}

/* ---- xattrs ---- */

Test(ns, xattrs_set_get_list_remove_with_their_errors)
{
	uint64_t f = mkfile(ROOT, "f"), d = mkdir_(ROOT, "d");
	char buf[256], *big, *back;
	ssize_t n;

	cr_assert_eq(sdfs_ns_setxattr(s, f, "user.a", "one", 3, 0), 0);
	cr_assert_eq(sdfs_ns_setxattr(s, f, "trusted.b", "", 0, 0), 0);
	cr_assert_eq(sdfs_ns_setxattr(s, f, "security.c", "three", 5, 0), 0);
	cr_assert_eq(sdfs_ns_setxattr(s, d, "user.a", "dir", 3, 0), 0);
	n = sdfs_ns_getxattr(s, f, "user.a", buf, sizeof(buf));
	cr_assert_eq(n, 3);
	cr_assert_arr_eq(buf, "one", 3);
	cr_assert_eq(sdfs_ns_getxattr(s, f, "user.a", NULL, 0), 3, "len 0 returns the size");
	cr_assert_eq(sdfs_ns_getxattr(s, f, "trusted.b", buf, sizeof(buf)), 0);
	cr_assert_eq(sdfs_ns_getxattr(s, d, "user.a", buf, sizeof(buf)), 3);
	cr_assert_arr_eq(buf, "dir", 3);
	expect_err(sdfs_ns_getxattr(s, f, "security.c", buf, 2), ERANGE, "get into 2 bytes");

	/* list: every name once, NUL-terminated */
	static const char want[] = "user.a\0trusted.b\0security.c";
	n = sdfs_ns_listxattr(s, f, NULL, 0);
	cr_assert_eq(n, (ssize_t)sizeof(want), "listxattr len 0: %zd", n);
	n = sdfs_ns_listxattr(s, f, buf, sizeof(buf));
	cr_assert_eq(n, (ssize_t)sizeof(want));
	for (const char *p = want; p < want + sizeof(want); p += strlen(p) + 1) {
		int found = 0;

		for (const char *q = buf; q < buf + n; q += strlen(q) + 1)
			found += !strcmp(p, q);
		cr_assert_eq(found, 1, "%s listed %d times", p, found);
	}
	expect_err(sdfs_ns_listxattr(s, f, buf, 5), ERANGE, "list into 5 bytes");

	/* flags */
	expect_err(sdfs_ns_setxattr(s, f, "user.a", "x", 1, XATTR_CREATE_), EEXIST,
		   "XATTR_CREATE of an existing name");
	expect_err(sdfs_ns_setxattr(s, f, "user.new", "x", 1, XATTR_REPLACE_), ENODATA,
		   "XATTR_REPLACE of a missing name");
	cr_assert_eq(sdfs_ns_setxattr(s, f, "user.a", "uno", 3, XATTR_REPLACE_), 0);
	cr_assert_eq(sdfs_ns_setxattr(s, f, "user.new", "x", 1, XATTR_CREATE_), 0);
	cr_assert_eq(sdfs_ns_getxattr(s, f, "user.a", buf, sizeof(buf)), 3);
	cr_assert_arr_eq(buf, "uno", 3);

	/* sizes: 65536 bytes work, 65537 do not */
	big = malloc(65537);
	back = malloc(65537);
	cr_assert(big && back);
	tfill_random(big, 65537, 3);
	cr_assert_eq(sdfs_ns_setxattr(s, f, "user.big", big, 65536, 0), 0);
	cr_assert_eq(sdfs_ns_getxattr(s, f, "user.big", NULL, 0), 65536);
	cr_assert_eq(sdfs_ns_getxattr(s, f, "user.big", back, 65537), 65536);
	cr_assert_arr_eq(big, back, 65536);
	expect_err(sdfs_ns_setxattr(s, f, "user.big2", big, 65537, 0), E2BIG, "65537 bytes");
	expect_err(sdfs_ns_getxattr(s, f, "user.big2", back, 65537), ENODATA,
		   "get after a refused set");
	free(big);
	free(back);

	/* names */
	expect_err(sdfs_ns_setxattr(s, f, "foo.bar", "x", 1, 0), EOPNOTSUPP, "set foo.bar");
	expect_err(sdfs_ns_getxattr(s, f, "foo.bar", buf, sizeof(buf)), EOPNOTSUPP,
		   "get foo.bar");
	expect_err(sdfs_ns_removexattr(s, f, "foo.bar"), EOPNOTSUPP, "remove foo.bar");
	expect_err(sdfs_ns_getxattr(s, f, "user.missing", buf, sizeof(buf)), ENODATA,
		   "get missing");
	expect_err(sdfs_ns_getxattr(s, f, "user.missing", NULL, 0), ENODATA,
		   "get size of missing");
	expect_err(sdfs_ns_removexattr(s, f, "user.missing"), ENODATA, "remove missing");
	expect_err(sdfs_ns_getxattr(s, 1ull << 40, "user.a", buf, sizeof(buf)), ENOENT,
		   "get on no inode");

	/* remove */
	cr_assert_eq(sdfs_ns_removexattr(s, f, "user.a"), 0);
	expect_err(sdfs_ns_getxattr(s, f, "user.a", buf, sizeof(buf)), ENODATA,
		   "get after remove");
	cr_assert_eq(sdfs_ns_getxattr(s, d, "user.a", buf, sizeof(buf)), 3,
		     "removing f's user.a touched d's");
	n = sdfs_ns_listxattr(s, f, buf, sizeof(buf));
	cr_assert_eq(n, (ssize_t)sizeof("trusted.b\0security.c\0user.big\0user.new"),
		     "list after remove: %zd bytes", n);
	/* a new inode starts without any */
	uint64_t g = mkfile(ROOT, "g");
	cr_assert_eq(sdfs_ns_listxattr(s, g, NULL, 0), 0);
}

/* ---- readdir ---- */

#define NENT 3000
#define NTHREADS 8

struct maker {
	uint64_t dir;
	unsigned from, step;
	int unlink;             /* remove every third instead of creating */
	int err;
	unsigned err_i;
	pthread_t th;
};

static void ent_name(char *buf, size_t len, unsigned i)
{
	snprintf(buf, len, "entry-%04u", i);
}

/* No asserts: not the test's thread. */
static void *maker_main(void *arg)
{
	struct maker *m = arg;
	char name[32];

	for (unsigned i = m->from; i < NENT && !m->err; i += m->step) {
		int ret;

		if (m->unlink && i % 3)
			continue;
		ent_name(name, sizeof(name), i);
		ret = m->unlink ? sdfs_ns_unlink(s, m->dir, name)
				: sdfs_ns_mknod(s, m->dir, name, S_IFREG | 0644, 0, 0, 0, NULL);
		if (ret) {
			m->err = ret;
			m->err_i = i;
		}
	}
	return NULL;
}

static void make_or_unlink_all(uint64_t dir, int unlink)
{
	struct maker m[NTHREADS];

	for (unsigned t = 0; t < NTHREADS; t++) {
		m[t] = (struct maker){ .dir = dir, .from = t, .step = NTHREADS, .unlink = unlink };
		cr_assert_eq(pthread_create(&m[t].th, NULL, maker_main, &m[t]), 0);
	}
	for (unsigned t = 0; t < NTHREADS; t++)
		pthread_join(m[t].th, NULL);
	for (unsigned t = 0; t < NTHREADS; t++)
		cr_assert_eq(m[t].err, 0, "%s entry %u: %s", unlink ? "unlink" : "create",
			     m[t].err_i, strerror(-m[t].err));
}

struct listing {
	unsigned count;                 /* entries seen */
	unsigned seen[NENT + 8];        /* times each entry-NNNN was listed */
	unsigned order[NENT + 8];       /* entry numbers in listing order */
	uint64_t cookie[NENT + 8];
	unsigned other;                 /* names not entry-NNNN */
	unsigned bad_type;
	unsigned stop_after;            /* 0: never stop */
	int plus_mismatch;
	char mismatch[160];
};

static int list_fn(void *arg, const char *name, uint64_t ino, uint32_t type,
		   uint64_t cookie, const struct sdfs_stat *st)
{
	struct listing *l = arg;
	unsigned i = NENT;
	char *end = NULL;

	if (!strncmp(name, "entry-", 6))
		i = (unsigned)strtoul(name + 6, &end, 10);
	if (i >= NENT || *end) {
		l->other++;
		return 0;
	}
	if (type != S_IFREG)
		l->bad_type++;
	l->seen[i]++;
	if (l->count < NENT + 8) {
		l->order[l->count] = i;
		l->cookie[l->count] = cookie;
	}
	l->count++;
	if (st) {
		struct sdfs_stat g;
		int ret = sdfs_ns_getattr(s, ino, &g);

		if (ret || g.ino != st->ino || st->ino != ino || g.mode != st->mode ||
		    g.nlink != st->nlink || g.size != st->size || g.uid != st->uid ||
		    g.gid != st->gid || g.mtime_ns != st->mtime_ns ||
		    g.ctime_ns != st->ctime_ns || g.atime_ns != st->atime_ns ||
		    g.gen != st->gen || g.obj_size != st->obj_size) {
			if (!l->plus_mismatch++)
				snprintf(l->mismatch, sizeof(l->mismatch),
					 "%s: readdirplus ino %" PRIu64 " mode 0%o nlink %u "
					 "mtime %" PRId64 " vs getattr (%d) ino %" PRIu64
					 " mode 0%o nlink %u mtime %" PRId64, name, st->ino,
					 st->mode, st->nlink, st->mtime_ns, ret, g.ino, g.mode,
					 g.nlink, g.mtime_ns);
		}
	}
	return l->stop_after && l->count >= l->stop_after;
}

Test(ns, readdir_lists_3000_entries_once_resumes_from_a_cookie_and_drops_removed)
{
	uint64_t dir = mkdir_(ROOT, "big");
	struct listing *l = calloc(1, sizeof(*l)), *r = calloc(1, sizeof(*r));
	int64_t t0 = tnow_ms();
	unsigned mid = NENT / 2;

	cr_assert(l && r);
	make_or_unlink_all(dir, 0);
	cr_log_info("%u creates in %" PRId64 " ms (%u threads)", NENT, tnow_ms() - t0,
		    NTHREADS);
	cr_assert_eq(getattr(dir).nlink, 2);

	/* every entry exactly once */
	cr_assert_eq(sdfs_ns_readdir(s, dir, 0, 0, list_fn, l), 0);
	cr_assert_eq(l->other, 0, "%u unexpected names (\".\" and \"..\" are not listed)",
		     l->other);
	cr_assert_eq(l->count, NENT, "listed %u entries, want %u", l->count, NENT);
	for (unsigned i = 0; i < NENT; i++)
		cr_assert_eq(l->seen[i], 1, "entry %u listed %u times", i, l->seen[i]);
	cr_assert_eq(l->bad_type, 0, "%u entries without S_IFREG", l->bad_type);

	/* resuming after entry #mid gives exactly the rest, in order */
	cr_assert_eq(sdfs_ns_readdir(s, dir, l->cookie[mid - 1], 0, list_fn, r), 0);
	cr_assert_eq(r->count, NENT - mid, "resumed listing has %u entries, want %u",
		     r->count, NENT - mid);
	for (unsigned k = 0; k < NENT - mid; k++)
		cr_assert_eq(r->order[k], l->order[mid + k],
			     "resumed entry %u is %u, want %u", k, r->order[k], l->order[mid + k]);
	/* a callback stopping early stops the listing */
	memset(r, 0, sizeof(*r));
	r->stop_after = 10;
	cr_assert_eq(sdfs_ns_readdir(s, dir, 0, 0, list_fn, r), 0);
	cr_assert_eq(r->count, 10);

	/* readdirplus: the attributes are getattr's */
	memset(r, 0, sizeof(*r));
	t0 = tnow_ms();
	cr_assert_eq(sdfs_ns_readdir(s, dir, 0, 1, list_fn, r), 0);
	cr_assert_eq(r->count, NENT);
	cr_assert_eq(r->plus_mismatch, 0, "%d entries differ, e.g. %s", r->plus_mismatch,
		     r->mismatch);
	cr_log_info("readdirplus of %u entries, each checked with getattr: %" PRId64 " ms",
		    NENT, tnow_ms() - t0);

	/* removed entries disappear; the rest stays exactly once */
	make_or_unlink_all(dir, 1);
	memset(l, 0, sizeof(*l));
	cr_assert_eq(sdfs_ns_readdir(s, dir, 0, 1, list_fn, l), 0);
	for (unsigned i = 0; i < NENT; i++)
		cr_assert_eq(l->seen[i], i % 3 ? 1u : 0u, "entry %u listed %u times", i,
			     l->seen[i]);
	cr_assert_eq(l->count, NENT - (NENT + 2) / 3);
	cr_assert_eq(l->plus_mismatch, 0, "%s", l->mismatch);

	/* other types are listed with theirs */
	unsigned n = 0;
	mkdir_(dir, "zdir");
	symlink_(dir, "zlink", "entry-0001");
	cr_assert_eq(sdfs_ns_readdir(s, dir, 0, 0, count_fn, &n), 0);
	cr_assert_eq(n, NENT - (NENT + 2) / 3 + 2);
	cr_assert_eq(getattr(dir).nlink, 3);
	free(l);
	free(r);
}

static int type_fn(void *arg, const char *name, uint64_t ino, uint32_t type,
		   uint64_t cookie, const struct sdfs_stat *st)
{
	uint32_t *types = arg;

	(void)ino, (void)cookie, (void)st;
	if (!strcmp(name, "d"))
		types[0] = type;
	else if (!strcmp(name, "l"))
		types[1] = type;
	else if (!strcmp(name, "p"))
		types[2] = type;
	return 0;
}

/* ---- the rest: symlinks, statfs, handles, dots, inode numbers ---- */

Test(ns, readlink_statfs_getattr_by_inode_dots_and_inodes_never_reused)
{
	static const char target[] = "a/b/../c";
	struct sdfs_stat st, st2;
	struct sdfs_statfs sf;
	uint64_t d = mkdir_(ROOT, "d"), sub = mkdir_(d, "sub"), f = mkfile(sub, "f");
	uint64_t l = symlink_(d, "l", target);
	char buf[64];
	uint32_t types[3] = { 0 };
	ssize_t n;

	/* readlink */
	st = getattr(l);
	cr_assert(S_ISLNK(st.mode));
	cr_assert_eq(st.size, strlen(target));
	n = sdfs_ns_readlink(s, l, buf, sizeof(buf));
	cr_assert_eq(n, (ssize_t)strlen(target));
	cr_assert_arr_eq(buf, target, strlen(target));
	memset(buf, 'Z', sizeof(buf));
	cr_assert_eq(sdfs_ns_readlink(s, l, buf, 3), (ssize_t)strlen(target),
		     "a short buffer still returns the whole length");
	cr_assert_arr_eq(buf, "a/bZ", 4, "readlink wrote past its buffer");
	expect_err(sdfs_ns_readlink(s, f, buf, sizeof(buf)), EINVAL, "readlink of a file");
	expect_err(sdfs_ns_readlink(s, d, buf, sizeof(buf)), EINVAL, "readlink of a dir");
	char longt[4096];
	memset(longt, 't', 4095);
	longt[4095] = '\0';
	cr_assert_eq(sdfs_ns_symlink(s, d, "long", longt, 0, 0, &st), 0);
	char *lb = malloc(5000);
	cr_assert(lb);
	cr_assert_eq(sdfs_ns_readlink(s, st.ino, lb, 5000), 4095);
	cr_assert_arr_eq(lb, longt, 4095);
	free(lb);
	cr_assert_eq(sdfs_ns_readdir(s, d, 0, 0, type_fn, types), 0);
	cr_assert_eq(types[1], S_IFLNK, "symlink listed as type 0%o", types[1]);

	/* statfs */
	cr_assert_eq(sdfs_ns_statfs(s, &sf), 0);
	cr_log_info("statfs: %" PRIu64 " of %" PRIu64 " bytes free, %" PRIu64 " files, %"
		    PRIu64 " free, bsize %u, name_max %u", sf.bytes_free, sf.bytes_total,
		    sf.files, sf.files_free, sf.bsize, sf.name_max);
	cr_assert_gt(sf.bytes_total, 0);
	cr_assert_gt(sf.bytes_free, 0);
	cr_assert_leq(sf.bytes_free, sf.bytes_total);
	cr_assert_geq(sf.files, 6, "root, d, sub, f, l, long: %" PRIu64, sf.files);
	cr_assert_gt(sf.files_free, 0);
	cr_assert_gt(sf.bsize, 0);
	cr_assert_eq(sf.name_max, 255);

	/* getattr by inode number (what an NFS handle holds), wherever the
	 * inode moved since */
	st = lookup(sub, "f");
	st2 = getattr(f);
	cr_assert_eq(st.ino, st2.ino);
	cr_assert_eq(st.gen, st2.gen);
	cr_assert_eq(st.mode, st2.mode);
	cr_assert_eq(st.mtime_ns, st2.mtime_ns);
	cr_assert_eq(sdfs_ns_rename(s, sub, "f", ROOT, "moved", 0), 0);
	st2 = getattr(f);
	cr_assert_eq(st2.ino, f);
	cr_assert_eq(st2.gen, st.gen, "gen changed with a rename");
	cr_assert_eq(getattr(ROOT).ino, ROOT);
	expect_err(sdfs_ns_getattr(s, 1ull << 40, &st), ENOENT, "getattr of no inode");
	expect_err(sdfs_ns_getattr(s, 0, &st), ENOENT, "getattr of inode 0");

	/* "." and ".." */
	cr_assert_eq(lookup(sub, ".").ino, sub);
	cr_assert_eq(lookup(sub, "..").ino, d);
	cr_assert_eq(lookup(d, "..").ino, ROOT);
	cr_assert_eq(lookup(ROOT, "..").ino, ROOT, "the root's parent is the root");
	cr_assert_eq(lookup(ROOT, ".").ino, ROOT);
	expect_err(sdfs_ns_lookup(s, f, ".", &st), ENOTDIR, "lookup . in a file");
	cr_assert_eq(sdfs_ns_resolve(s, "/d/sub/..", 1, &st), 0);
	cr_assert_eq(st.ino, d);

	/* other node types list with their type */
	cr_assert_eq(sdfs_ns_mknod(s, d, "p", S_IFIFO | 0644, 0, 0, 0, NULL), 0);
	memset(types, 0, sizeof(types));
	cr_assert_eq(sdfs_ns_readdir(s, d, 0, 0, type_fn, types), 0);
	cr_assert_eq(types[2], S_IFIFO);

	/* inode numbers are never reused */
	uint64_t inos[40];
	int k = 0;
	inos[k++] = f;
	for (int i = 0; i < 10; i++) {
		inos[k++] = mkfile(d, "again");
		cr_assert_eq(sdfs_ns_unlink(s, d, "again"), 0);
		inos[k++] = mkdir_(d, "againdir");
		cr_assert_eq(sdfs_ns_rmdir(s, d, "againdir"), 0);
	}
	for (int i = 0; i < k; i++)
		for (int j = 0; j < i; j++)
			cr_assert_neq(inos[i], inos[j], "inode %" PRIu64 " was used twice",
				      inos[i]);
}

/* ---- nothing on local disk ---- */

/* A LevelDB file name: LOG, LOG.old, LOCK, CURRENT, MANIFEST-*, *.ldb,
 * *.sst, NNNNNN.log. */
static int is_leveldb_name(const char *n)
{
	static const char *const pats[] = { "LOG", "LOG.old", "LOCK", "CURRENT",
					    "MANIFEST-*", "*.ldb", "*.sst", "*.dbtmp",
					    "[0-9][0-9][0-9][0-9][0-9][0-9]*.log" };

	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
		if (!fnmatch(pats[i], n, 0))
			return 1;
	return 0;
}

/* Every regular file @pid holds open is @log (same inode). */
static void assert_only_log_open(const char *name, pid_t pid, const char *log)
{
	char fddir[64], path[PATH_MAX], link[PATH_MAX];
	struct stat lst, st;
	struct dirent *e;
	DIR *dir;
	unsigned regular = 0;

	cr_assert_eq(stat(log, &lst), 0, "%s: %s", log, strerror(errno));
	snprintf(fddir, sizeof(fddir), "/proc/%d/fd", (int)pid);
	dir = opendir(fddir);
	cr_assert(dir, "%s: %s", fddir, strerror(errno));
	while ((e = readdir(dir))) {
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", fddir, e->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;       /* closed meanwhile, socket, pipe, /dev/null */
		n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = '\0';
		cr_assert(st.st_dev == lst.st_dev && st.st_ino == lst.st_ino,
			  "%s (pid %d) has fd %s open on the regular file %s", name, (int)pid,
			  e->d_name, link);
		regular++;
	}
	closedir(dir);
	cr_log_info("%s (pid %d): %u fds on regular files, all its log", name, (int)pid,
		    regular);
}

static void assert_no_leveldb_files(const char *where, const char *path)
{
	struct dirent *e;
	DIR *dir = opendir(path);

	cr_assert(dir, "%s: %s", path, strerror(errno));
	while ((e = readdir(dir)))
		cr_assert(!is_leveldb_name(e->d_name), "%s (%s) holds a LevelDB file: %s",
			  where, path, e->d_name);
	closedir(dir);
}

/* The cluster dir, outside the block daemons' data, has no LevelDB
 * file at any depth. */
static void assert_no_leveldb_tree(const char *path, int depth)
{
	struct dirent *e;
	DIR *dir = opendir(path);
	char sub[PATH_MAX];

	if (!dir || depth > 6) {
		if (dir)
			closedir(dir);
		return;
	}
	while ((e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (depth == 0 && (!strncmp(e->d_name, "blockd.", 7) ||
				    !strcmp(e->d_name, "zk"))))
			continue;
		cr_assert(!is_leveldb_name(e->d_name), "%s/%s looks like a LevelDB file",
			  path, e->d_name);
		if (e->d_type == DT_DIR) {
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			assert_no_leveldb_tree(sub, depth + 1);
		}
	}
	closedir(dir);
}

Test(ns_local, mds_writes_nothing_locally_but_its_log)
{
	struct sdfs_mds_status ms;
	struct sdfs_stat st;
	char name[32], log[PATH_MAX], cwd[64];
	uint64_t d = mkdir_(ROOT, "work");
	unsigned ops = 0;

	/* a few hundred operations of every kind, file data included */
	for (unsigned i = 0; i < 60; i++) {
		char n[32], n2[32];
		struct sdfs_setattr sa = { .mask = SDFS_SETATTR_SIZE | SDFS_SETATTR_MODE,
					   .size = 100, .mode = 0600 };

		snprintf(n, sizeof(n), "f%u", i);
		snprintf(n2, sizeof(n2), "g%u", i);
		cr_assert_eq(sdfs_ns_mknod(s, d, n, S_IFREG | 0644, 0, 0, 0, &st), 0);
		cr_assert_eq(sdfs_file_pwrite(s, &st, "data", 4, 96, 0), 0);
		cr_assert_eq(sdfs_ns_setattr(s, st.ino, &sa, &st), 0);
		cr_assert_eq(sdfs_ns_setxattr(s, st.ino, "user.x", n, strlen(n), 0), 0);
		cr_assert_eq(sdfs_ns_rename(s, d, n, d, n2, 0), 0);
		ops += 5;
		if (i % 2) {
			cr_assert_eq(sdfs_ns_unlink(s, d, n2), 0);
			ops++;
		}
		if (i % 10 == 0) {
			cr_assert_eq(sdfs_ns_mkdir(s, d, n, 0755, 0, 0, NULL), 0);
			cr_assert_eq(sdfs_ns_symlink(s, d, "l", n2, 0, 0, NULL), 0);
			cr_assert_eq(sdfs_ns_unlink(s, d, "l"), 0);
			ops += 3;
		}
	}
	cr_assert_eq(count_entries(d), 30 + 6);
	cr_assert_eq(sdfs_mds_status(s, &ms), 0);
	cr_log_info("%u operations; the active %s has %" PRIu64 " database files, %" PRIu64
		    " bytes, %" PRIu64 " inodes", ops, ms.active, ms.db_files, ms.db_bytes,
		    ms.inodes);
	cr_assert_gt(ms.db_files, 0, "the database has no files at all?");
	cr_assert_eq(ms.n, 2);
	free(ms.list);
	cr_assert_eq(tcluster_active_mds(tc, name, sizeof(name)), 0);

	for (unsigned i = 0; i < tcluster_nmds(tc); i++) {
		char mds[16];
		pid_t pid;

		snprintf(mds, sizeof(mds), "mds.%u", i);
		pid = tcluster_pid(tc, mds);
		cr_assert_gt(pid, 0, "no pid recorded for %s", mds);
		cr_assert(tcluster_running(tc, mds), "%s is not running", mds);
		snprintf(log, sizeof(log), "%s/log/%s.log", tcluster_dir(tc), mds);
		assert_only_log_open(!strcmp(mds, name) ? "the active" : "the standby", pid,
				     log);
		snprintf(cwd, sizeof(cwd), "/proc/%d/cwd", (int)pid);
		assert_no_leveldb_files(mds, cwd);
	}
	assert_no_leveldb_tree(tcluster_dir(tc), 0);
}
