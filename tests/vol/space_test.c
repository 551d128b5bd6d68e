/*
 * space_test.c - what du and df are told (docs/mount.md "Space"):
 * st_blocks of a regular file is the data objects it has, whatever its
 * size (a thin file is thin), kept up to date by writes, truncate and
 * punch hole; a volume file's is the objects its own state owns, so a
 * clone shows only what was written to it after the snapshot; df's
 * available space is what the block daemons' data filesystems have
 * available (their f_bavail, less than free where root keeps blocks)
 * divided by the copies, and its inode counts follow the space.
 *
 * Runs on the volume tests' cluster (vt.h: 3 blockd, copies 3, 2 mds, a
 * mount), through the mount with plain syscalls; the mds's own answer
 * is read through libsdfs too.
 */
#include "tests/vol/vt.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define OBJ (4ull << 20)        /* the cluster's object size (dev up) */
#define GiB (1ull << 30)
#define COPIES 3                /* vt_start's */

static struct tcluster *tc;

static void up(void)
{
	tc = vt_start();
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(space, .init = up, .fini = down, .timeout = 300);

static uint64_t bytes_of(const char *name)
{
	char path[PATH_MAX + 64];
	struct stat st;

	cr_assert_eq(stat(vt_path(tc, name, path), &st), 0, "stat %s: %s", path,
		     strerror(errno));
	return (uint64_t)st.st_blocks * 512;
}

/* du's answer for the mount's @name, in bytes (du -B1). */
static uint64_t du_of(const char *name)
{
	char path[PATH_MAX + 64], *out = NULL;
	unsigned long long n = 0;
	char *argv[] = { "/usr/bin/du", "-B1", path, NULL };
	int st;

	vt_path(tc, name, path);
	st = vt_run(argv, &out, 30000);
	cr_assert_eq(st, 0, "du %s: status %d: %s", path, st, out ? out : "");
	cr_assert_eq(sscanf(out, "%llu", &n), 1, "du said: %s", out);
	free(out);
	return n;
}

static void put(int fd, uint64_t off)
{
	char buf[4096];

	memset(buf, 0x5a, sizeof(buf));
	vt_pwrite(fd, buf, sizeof(buf), off, "4 KiB");
}

Test(space, a_thin_file_takes_the_objects_it_has)
{
	const uint64_t size = 5 * GiB;
	struct stat st;
	int fd = vt_xopen(tc, "thin", O_CREAT | O_RDWR);

	/* 4 KiB at the end of a 5 GiB file: one object */
	put(fd, size - 4096);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq((uint64_t)st.st_size, size);
	cr_assert_leq((uint64_t)st.st_blocks * 512, OBJ,
		      "written, not closed: %" PRIu64 " bytes for one object",
		      (uint64_t)st.st_blocks * 512);
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(bytes_of("thin"), OBJ, "closed: %" PRIu64 " bytes",
		     bytes_of("thin"));
	cr_assert_eq(du_of("thin"), OBJ);

	/* more writes: two more objects (and one more in an object it has) */
	fd = vt_xopen(tc, "thin", O_RDWR);
	put(fd, 0);
	put(fd, GiB + 4096);
	put(fd, GiB);
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(bytes_of("thin"), 3 * OBJ, "%" PRIu64 " bytes", bytes_of("thin"));
	cr_assert_eq(du_of("thin"), 3 * OBJ);

	/* truncate: the object past 2 GiB goes */
	char path[PATH_MAX + 64];

	cr_assert_eq(truncate(vt_path(tc, "thin", path), 2 * GiB), 0, "%s", strerror(errno));
	cr_assert_eq(bytes_of("thin"), 2 * OBJ, "%" PRIu64 " bytes", bytes_of("thin"));

	/* punch the whole object at 1 GiB */
	fd = vt_xopen(tc, "thin", O_RDWR);
	cr_assert_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (off_t)GiB, (off_t)OBJ), 0, "punch: %s", strerror(errno));
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(bytes_of("thin"), OBJ, "%" PRIu64 " bytes", bytes_of("thin"));

	/* a small file: its size, rounded to 512 */
	fd = vt_xopen(tc, "small", O_CREAT | O_RDWR);
	vt_pwrite(fd, "hello", 5, 0, "5 bytes");
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(bytes_of("small"), 512);
	/* truncated to 0: nothing */
	cr_assert_eq(truncate(vt_path(tc, "thin", path), 0), 0);
	cr_assert_eq(bytes_of("thin"), 0);
}

/* The mds's answer for volume file @ino (libsdfs, no cache between). */
static uint64_t mds_bytes(uint64_t ino)
{
	struct sdfs_stat st;
	int ret = sdfs_ns_getattr(tcluster_client(tc), ino, &st);

	cr_assert_eq(ret, 0, "getattr %" PRIu64 ": %s", ino, strerror(-ret));
	return st.blocks * 512;
}

Test(space, a_clone_counts_only_its_own_chunks)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_vol_info vi;
	struct sdfs_stat root, cl;
	uint64_t ino = vt_create(tc, "vol", 8 * GiB, 0, NULL);
	int fd, ret;

	cr_assert_eq(mds_bytes(ino), 0, "a new volume owns nothing");
	fd = vt_xopen(tc, "vol", O_RDWR);
	put(fd, 0);
	put(fd, 5 * OBJ);
	put(fd, 5 * OBJ + 8192);
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(mds_bytes(ino), 2 * OBJ, "%" PRIu64 " bytes", mds_bytes(ino));
	cr_assert_eq(bytes_of("vol"), 2 * OBJ, "mount: %" PRIu64 " bytes", bytes_of("vol"));

	ret = sdfs_vol_snap_create(s, ino, "s1", &vi);
	cr_assert_eq(ret, 0, "snapshot: %s", strerror(-ret));
	ret = sdfs_ns_resolve(s, "/", 1, &root);
	cr_assert_eq(ret, 0);
	ret = sdfs_vol_clone(s, ino, "s1", root.ino, "clone", 0644, getuid(), getgid(), &cl);
	cr_assert_eq(ret, 0, "clone: %s", strerror(-ret));
	/* the data is the snapshot's: counted there, once */
	cr_assert_eq(mds_bytes(cl.ino), 0, "clone: %" PRIu64 " bytes", mds_bytes(cl.ino));
	cr_assert_eq(mds_bytes(ino), 0, "live after the snapshot: %" PRIu64 " bytes",
		     mds_bytes(ino));
	cr_assert_eq(bytes_of("clone"), 0, "mount: %" PRIu64 " bytes", bytes_of("clone"));

	/* one new chunk, one copied on write: the clone's own two */
	fd = vt_xopen(tc, "clone", O_RDWR);
	put(fd, 3 * OBJ);
	put(fd, 0);
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(mds_bytes(cl.ino), 2 * OBJ, "%" PRIu64 " bytes", mds_bytes(cl.ino));
	cr_assert_eq(bytes_of("clone"), 2 * OBJ, "mount: %" PRIu64 " bytes",
		     bytes_of("clone"));
	cr_assert_eq(du_of("clone"), 2 * OBJ);
	cr_assert_eq(mds_bytes(ino), 0, "the source: %" PRIu64 " bytes", mds_bytes(ino));
}

/* The sum over the block daemons' data dirs of f_bavail and f_bfree. */
static void data_dirs(uint64_t *avail, uint64_t *bfree)
{
	*avail = *bfree = 0;
	for (unsigned i = 0; i < tcluster_nblockd(tc); i++) {
		char dir[PATH_MAX];
		struct statvfs v;

		snprintf(dir, sizeof(dir), "%s/blockd.%u", tcluster_dir(tc), i);
		cr_assert_eq(statvfs(dir, &v), 0, "statvfs %s: %s", dir, strerror(errno));
		*avail += (uint64_t)v.f_bavail * v.f_frsize;
		*bfree += (uint64_t)v.f_bfree * v.f_frsize;
	}
}

Test(space, df_shows_what_the_data_filesystems_have_available_over_copies)
{
	/* Other processes write on the same filesystem meanwhile: the
	 * mount's answer (cached up to 1 s by the mds) must lie between
	 * two samples, give or take this. */
	const uint64_t slack = 2 * GiB;
	uint64_t a0, f0, a1, f1, avail, bfree;
	struct statvfs v;

	data_dirs(&a0, &f0);
	cr_assert_eq(statvfs(tcluster_mnt(tc), &v), 0, "%s", strerror(errno));
	data_dirs(&a1, &f1);
	avail = (uint64_t)v.f_bavail * v.f_frsize;
	bfree = (uint64_t)v.f_bfree * v.f_frsize;
	cr_log_info("df: avail %" PRIu64 " free %" PRIu64 "; data dirs / %d: avail %"
		    PRIu64 "..%" PRIu64 ", free %" PRIu64 "..%" PRIu64, avail, bfree,
		    COPIES, a0 / COPIES, a1 / COPIES, f0 / COPIES, f1 / COPIES);
	cr_assert_leq(v.f_bavail, v.f_bfree);
	cr_assert_leq(v.f_bfree, v.f_blocks);
	uint64_t lo = (a0 < a1 ? a0 : a1) / COPIES, hi = (a0 > a1 ? a0 : a1) / COPIES;

	cr_assert(avail + slack >= lo && avail <= hi + slack,
		  "avail %" PRIu64 ", the data dirs' / copies %" PRIu64 "..%" PRIu64,
		  avail, lo, hi);
	lo = (f0 < f1 ? f0 : f1) / COPIES;
	hi = (f0 > f1 ? f0 : f1) / COPIES;
	cr_assert(bfree + slack >= lo && bfree <= hi + slack,
		  "free %" PRIu64 ", the data dirs' / copies %" PRIu64 "..%" PRIu64,
		  bfree, lo, hi);
	/* inodes: the files there are and as many more as fit in 4 KiB each */
	cr_assert_gt(v.f_ffree, 0);
	cr_assert_leq(v.f_ffree, avail / 4096 + slack / 4096, "ffree %" PRIu64 " for %"
		      PRIu64 " bytes available", (uint64_t)v.f_ffree, avail);
	cr_assert_geq(v.f_files, v.f_ffree);
}
