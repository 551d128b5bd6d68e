/*
 * stray_test.c - a file unlinked (or renamed over) while open stays
 * usable on every mount that holds it open until its last close there,
 * and is freed then (docs/mds.md "Strays"). Two mounts (A: DIR/mnt, B:
 * DIR/mnt2) and two mds (mds=2: one test kills the active).
 *
 * - The name goes at once: no .sdfs-hidden-* entry anywhere, and the
 *   emptied directory can be removed. Both mounts still read and write
 *   the file through their descriptors after the mds's orphan grace
 *   (5 s: the old mds freed unlinked files then), and `sdfs mds status`
 *   counts one stray. After both closed, the count drops to 0 and the
 *   file's data objects are gone.
 * - An mds failover with the file open: the new active keeps it (the
 *   mount claims its open files when it resubscribes).
 * - The mount holding it is SIGKILLed: once its ZooKeeper session ended,
 *   the stray is freed.
 * - Renaming over an open file, and a volume file (its live vid keeps
 *   taking writes until the last close, then the volume goes to reclaim).
 * Descriptors are opened with O_DIRECT (mount.sdfs then bypasses the page
 * cache) so every read asks the objects. Waits are polls with deadlines;
 * the one fixed sleep outlasts the grace the old behaviour freed after.
 */
#include "tests/cluster/fixture.h"
#include "common/oid.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GRACE_PAST_MS 8000      /* > the mds's ORPHAN_GRACE_MS (5 s) + a purge round */
#define WAIT_MS 60000
#define BLK 4096

static struct tcluster *tc;

static void setup(void)
{
	struct tcluster_opts o = { .blockd = 3, .copies = 3, .mds = 2, .mounts = 2 };

	tc = tcluster_start(&o);
	cr_assert(tcluster_mnt_n(tc, 0) && tcluster_mnt_n(tc, 1));
}

static void teardown(void)
{
	tcluster_stop(tc);
	tc = NULL;
}

TestSuite(stray, .init = setup, .fini = teardown, .timeout = 400);

static const char *on(unsigned m, const char *name)
{
	static char bufs[8][PATH_MAX];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, PATH_MAX, "%s/%s", tcluster_mnt_n(tc, m), name);
	return b;
}

static void *ablock(size_t len)
{
	void *p = NULL;

	cr_assert_eq(posix_memalign(&p, BLK, len), 0);
	return p;
}

/* @len bytes of seed @seed at @path (made), through mount A, closed. */
static void put_file(const char *path, size_t len, uint64_t seed)
{
	char *buf = ablock(len);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	tfill_random(buf, len, seed);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len, "write %s: %s", path,
		     strerror(errno));
	cr_assert_eq(close(fd), 0);
	free(buf);
}

/* Bytes [off, off+len) read through @fd equal @want. */
static void assert_reads(int fd, uint64_t off, const char *want, size_t len,
			 const char *what)
{
	char *got = ablock(len);
	ssize_t n = pread(fd, got, len, (off_t)off);

	cr_assert_eq(n, (ssize_t)len, "%s: read %zd of %zu bytes: %s", what, n, len,
		     n < 0 ? strerror(errno) : "short");
	cr_assert(memcmp(got, want, len) == 0, "%s: the bytes read differ", what);
	free(got);
}

static void pwrite_all(int fd, const char *buf, size_t len, uint64_t off, const char *what)
{
	cr_assert_eq(pwrite(fd, buf, len, (off_t)off), (ssize_t)len, "%s: write: %s", what,
		     strerror(errno));
	cr_assert_eq(fsync(fd), 0, "%s: fsync: %s", what, strerror(errno));
}

/* Names in @dir (without . and ..); fails on a hidden name. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert(d, "opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		cr_assert(strncmp(e->d_name, ".sdfs-hidden", 12) != 0,
			  "%s lists %s", dir, e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static uint64_t strays(void)
{
	struct sdfs_mds_status st;

	for (int64_t end = tnow_ms() + WAIT_MS;;) {
		memset(&st, 0, sizeof(st));
		cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &st), 0);
		free(st.list);
		if (st.reachable)
			return st.strays;
		cr_assert(tnow_ms() < end, "the active mds does not answer");
		tsleep_ms(100);
	}
}

/* Poll until the stray count is @want; fails after WAIT_MS. */
static void wait_strays(uint64_t want, const char *why)
{
	uint64_t n = 0;

	for (int64_t end = tnow_ms() + WAIT_MS; tnow_ms() < end; tsleep_ms(100)) {
		n = strays();
		if (n == want)
			return;
	}
	cr_assert_fail("%s: %" PRIu64 " strays, not %" PRIu64, why, n, want);
}

/* Each data object of inode @ino (chunks 0..@chunks-1) exists; or, with
 * !@exist, is gone (polled: the mds frees a stray's data right after its
 * last close, in the background). */
static void assert_objects(uint64_t ino, unsigned chunks, int exist)
{
	struct sdfs_obj_info info;
	int64_t end = tnow_ms() + WAIT_MS;

	for (unsigned c = 0; c < chunks; c++) {
		uint64_t oid = oid_make(OID_KIND_FILE, ino, c);
		int ret = sdfs_obj_stat(tcluster_client(tc), oid, &info);

		while (!exist && ret == 0 && tnow_ms() < end) {
			tsleep_ms(100);
			ret = sdfs_obj_stat(tcluster_client(tc), oid, &info);
		}
		if (exist)
			cr_assert_eq(ret, 0, "object %u of inode %" PRIu64 ": %s", c, ino,
				     strerror(-ret));
		else
			cr_assert_eq(ret, -ENOENT, "object %u of inode %" PRIu64 " still there "
				     "(%d)", c, ino, ret);
	}
}

static uint64_t ino_of(int fd)
{
	struct stat st;

	cr_assert_eq(fstat(fd, &st), 0);
	return (uint64_t)st.st_ino;
}

Test(stray, unlinked_while_open_on_two_mounts_stays_until_both_closed)
{
	uint32_t osz = sdfs_obj_size(tcluster_client(tc));
	size_t len = osz + 64 * 1024;      /* two data objects */
	char *want = ablock(len), *pa = ablock(BLK), *pb = ablock(BLK);
	struct sdfs_stat st;
	uint64_t ino;
	int fa, fb;

	cr_assert_eq(mkdir(on(0, "d"), 0755), 0);
	put_file(on(0, "d/f"), len, 1);
	tfill_random(want, len, 1);
	fa = open(on(0, "d/f"), O_RDWR | O_DIRECT);
	fb = open(on(1, "d/f"), O_RDWR | O_DIRECT);
	cr_assert(fa >= 0 && fb >= 0, "open: %s", strerror(errno));
	ino = ino_of(fa);
	cr_assert_eq(ino_of(fb), ino);

	cr_assert_eq(unlink(on(0, "d/f")), 0, "unlink: %s", strerror(errno));
	cr_assert_eq(entries(on(0, "d")), 0, "A still lists a name in d");
	cr_assert_eq(entries(on(1, "d")), 0, "B still lists a name in d");
	cr_assert_eq(rmdir(on(0, "d")), 0, "rmdir of the emptied directory: %s",
		     strerror(errno));
	cr_assert_eq(strays(), 1);

	tsleep_ms(GRACE_PAST_MS);
	assert_reads(fa, 0, want, len, "A after the grace");
	assert_reads(fb, 0, want, len, "B after the grace");
	tfill_random(pa, BLK, 2);
	tfill_random(pb, BLK, 3);
	pwrite_all(fa, pa, BLK, 0, "A");
	pwrite_all(fb, pb, BLK, osz, "B");      /* the second object */
	memcpy(want, pa, BLK);
	memcpy(want + osz, pb, BLK);
	assert_reads(fa, 0, want, len, "A after both wrote");
	assert_reads(fb, 0, want, len, "B after both wrote");
	cr_assert_eq(sdfs_ns_getattr(tcluster_client(tc), ino, &st), 0);
	cr_assert_eq(st.nlink, 0);
	cr_assert_eq(st.size, len);
	assert_objects(ino, 2, 1);

	/* A's close leaves B's hold */
	cr_assert_eq(close(fa), 0);
	tsleep_ms(2000);        /* a purge round or two */
	assert_reads(fb, 0, want, len, "B after A closed");
	cr_assert_eq(strays(), 1, "the stray went while B holds it");
	cr_assert_eq(close(fb), 0);
	wait_strays(0, "after the last close");
	assert_objects(ino, 2, 0);
	free(want);
	free(pa);
	free(pb);
}

Test(stray, renamed_over_while_open_on_the_other_mount_stays_until_closed)
{
	size_t len = 64 * 1024;
	char *old = ablock(len), *neu = ablock(len);
	uint64_t ino;
	int fb;

	put_file(on(0, "g"), len, 4);
	put_file(on(0, "h"), len, 5);
	tfill_random(old, len, 4);
	tfill_random(neu, len, 5);
	fb = open(on(1, "g"), O_RDONLY | O_DIRECT);
	cr_assert(fb >= 0, "open: %s", strerror(errno));
	ino = ino_of(fb);
	cr_assert_eq(rename(on(0, "h"), on(0, "g")), 0, "rename: %s", strerror(errno));
	cr_assert_eq(entries(tcluster_mnt_n(tc, 0)), 1);
	cr_assert_eq(strays(), 1);
	tsleep_ms(GRACE_PAST_MS);
	assert_reads(fb, 0, old, len, "B's replaced file after the grace");
	int fa = open(on(0, "g"), O_RDONLY | O_DIRECT);
	cr_assert(fa >= 0, "open the new g on A: %s", strerror(errno));
	assert_reads(fa, 0, neu, len, "the new g on A");
	close(fa);
	cr_assert_eq(close(fb), 0);
	wait_strays(0, "after B closed the replaced file");
	assert_objects(ino, 1, 0);
	free(old);
	free(neu);
}

Test(stray, an_mds_failover_keeps_a_stray_open_on_a_mount)
{
	size_t len = 64 * 1024;
	char *want = ablock(len), old[64], now[64];
	uint64_t ino;
	int fa;

	put_file(on(0, "f"), len, 6);
	tfill_random(want, len, 6);
	fa = open(on(0, "f"), O_RDWR | O_DIRECT);
	cr_assert(fa >= 0, "open: %s", strerror(errno));
	ino = ino_of(fa);
	cr_assert_eq(unlink(on(0, "f")), 0);
	cr_assert_eq(strays(), 1);

	cr_assert_eq(tcluster_active_mds(tc, old, sizeof(old)), 0);
	cr_assert_eq(tcluster_kill(tc, old), 0);
	cr_assert_eq(tcluster_wait_active_mds(tc, old, now, sizeof(now), WAIT_MS), 0,
		     "no mds took over from %s", old);
	cr_log_info("%s took over from %s", now, old);
	tsleep_ms(GRACE_PAST_MS);
	assert_reads(fa, 0, want, len, "A after the failover and the grace");
	cr_assert_eq(strays(), 1, "the new active dropped the stray A holds open");
	assert_objects(ino, 1, 1);
	cr_assert_eq(close(fa), 0);
	wait_strays(0, "after A closed it, with the new active");
	assert_objects(ino, 1, 0);
	free(want);
}

Test(stray, the_stray_of_a_killed_mount_is_freed_when_its_session_ends)
{
	size_t len = 64 * 1024;
	uint64_t ino;
	int fb;

	put_file(on(0, "k"), len, 7);
	fb = open(on(1, "k"), O_RDONLY | O_DIRECT);
	cr_assert(fb >= 0, "open: %s", strerror(errno));
	ino = ino_of(fb);
	cr_assert_eq(unlink(on(0, "k")), 0);
	cr_assert_eq(strays(), 1);
	tsleep_ms(GRACE_PAST_MS);
	cr_assert_eq(strays(), 1, "the stray went while B holds it");
	assert_objects(ino, 1, 1);

	cr_assert_eq(tcluster_kill(tc, "mnt2"), 0);
	wait_strays(0, "after B's mount process died");
	assert_objects(ino, 1, 0);
	close(fb);      /* its mount is gone: whatever close says */
}

Test(stray, a_volume_file_unlinked_while_open_stays_writable_until_closed)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_vol_info vi;
	struct sdfs_stat st;
	char *a = ablock(BLK), *b = ablock(BLK);
	int ret, fb;

	cr_assert_eq(sdfs_vol_create(s, 1 /* the root */, "v", 0644, getuid(), getgid(),
				     16u << 20, 0, 0, &st), 0);
	fb = open(on(1, "v"), O_RDWR | O_DIRECT);
	cr_assert(fb >= 0, "open the volume file on B: %s", strerror(errno));
	tfill_random(a, BLK, 8);
	tfill_random(b, BLK, 9);
	pwrite_all(fb, a, BLK, 0, "B before the unlink");
	cr_assert_eq(unlink(on(0, "v")), 0, "unlink on A: %s", strerror(errno));
	cr_assert_eq(entries(tcluster_mnt_n(tc, 0)), 0);
	cr_assert_eq(strays(), 1);
	tsleep_ms(GRACE_PAST_MS);
	/* without holds the mds handed the volume to reclaim after the
	 * grace: this write failed (ENOENT) */
	pwrite_all(fb, b, BLK, 1u << 20, "B after the unlink and the grace");
	assert_reads(fb, 0, a, BLK, "B's first block");
	assert_reads(fb, 1u << 20, b, BLK, "B's block written after the unlink");
	cr_assert_eq(sdfs_vol_info(s, st.ino, NULL, &vi), 0);
	cr_assert_eq(vi.state, SDFS_VOL_LIVE);
	cr_assert_eq(close(fb), 0);
	wait_strays(0, "after B closed the volume file");
	for (int64_t end = tnow_ms() + WAIT_MS;; tsleep_ms(100)) {
		ret = sdfs_vol_info(s, st.ino, NULL, &vi);
		if (ret == -ENOENT)
			break;
		cr_assert(tnow_ms() < end, "the unlinked volume file is still there after "
			  "its last close (%d)", ret);
	}
	free(a);
	free(b);
}
