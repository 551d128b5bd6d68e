/*
 * vol_snap_test.c - a volume file's data through the mount, and its
 * snapshots, clones and rollback (docs/volumes.md "Snapshot, clone,
 * rollback"): a snapshot reads exactly what was written before it, the
 * live file what was written after (through a descriptor opened before
 * the snapshot too), a clone starts as the snapshot and diverges alone,
 * a rollback brings the snapshot back. Also the file operations a VM
 * disk needs: punch hole, SEEK_DATA/SEEK_HOLE, truncate down then up,
 * writes past the end.
 *
 * Every byte written is a pattern that depends on its tag and offset
 * (vt_fill), and every check compares whole volumes with an in-memory
 * model, so a difference names where it is and what was read.
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
#include <unistd.h>

#define OBJ (1u << 20)          /* chunk (object) size of the test volumes */
#define SIZE (16u << 20)        /* 16 chunks */
#define MiB (1u << 20)

static struct tcluster *tc;

static void up(void)
{
	tc = vt_start();
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(vol_snap, .init = up, .fini = down, .timeout = 600);

/* One write of pattern @tag at [@off, @off+@len) through @fd, and the
 * same into @model. */
static void put(int fd, uint8_t *model, uint64_t off, size_t len, uint64_t tag)
{
	uint8_t *buf = malloc(len);
	char what[96];

	cr_assert(buf);
	vt_fill(buf, len, off, tag);
	snprintf(what, sizeof(what), "pattern %" PRIu64, tag);
	vt_pwrite(fd, buf, len, off, what);
	memcpy(model + off, buf, len);
	free(buf);
}

/* The whole file through @fd equals @model[0, @len). */
static void check_fd(int fd, const uint8_t *model, size_t len, const char *what)
{
	uint8_t *got = malloc(len);

	cr_assert(got);
	vt_pread(fd, got, len, 0, what);
	vt_assert_same(got, model, len, 0, OBJ, what);
	free(got);
}

/* The mount's @name, through a new descriptor and through O_DIRECT,
 * equals @model[0, @len). */
static void check_file(const char *name, const uint8_t *model, size_t len)
{
	uint8_t *got = malloc(len);
	char what[128];

	cr_assert(got);
	snprintf(what, sizeof(what), "%s through the mount (new descriptor)", name);
	vt_read_file(tc, name, got, len, 0);
	vt_assert_same(got, model, len, 0, OBJ, what);
	snprintf(what, sizeof(what), "%s through the mount (O_DIRECT)", name);
	vt_read_file(tc, name, got, len, 1);
	vt_assert_same(got, model, len, 0, OBJ, what);
	free(got);
}

/* Live state (@snap NULL) or snapshot @snap of @ino through libsdfs. */
static void check_vol(uint64_t ino, const char *snap, const uint8_t *model, size_t len,
		      const char *what)
{
	uint8_t *got = malloc(len);

	cr_assert(got);
	vt_read_vol(tc, ino, snap, got, len);
	vt_assert_same(got, model, len, 0, OBJ, what);
	free(got);
}

/* Snapshot @snap of volume file @name through the mount's hidden
 * .snap directory (fs/snapdir.c): DIR/mnt/.snap/NAME@SNAP. */
static void check_snapdir(const char *name, const char *snap, const uint8_t *model,
			  size_t len)
{
	char file[256], what[300];
	uint8_t *got = malloc(len);
	struct stat st;

	cr_assert(got);
	snprintf(file, sizeof(file), ".snap/%s@%s", name, snap);
	snprintf(what, sizeof(what), "%s through the mount", file);
	int fd = vt_xopen(tc, file, O_RDONLY);
	cr_assert_eq(fstat(fd, &st), 0, "fstat %s: %s", file, strerror(errno));
	cr_assert_eq((uint64_t)st.st_size, (uint64_t)len, "%s: st_size %jd, want %zu", file,
		     (intmax_t)st.st_size, len);
	vt_pread(fd, got, len, 0, what);
	close(fd);
	vt_assert_same(got, model, len, 0, OBJ, what);
	/* a snapshot is read-only */
	errno = 0;
	fd = vt_open(tc, file, O_RDWR);
	cr_assert(fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM),
		  "open(O_RDWR) of snapshot %s: fd %d, %s; expected EROFS", file, fd,
		  strerror(errno));
	free(got);
}

/* `sdfs vol export @spec` (PATH or PATH@SNAP) equals @model[0, @len). */
static void check_export(const char *spec, const uint8_t *model, size_t len)
{
	char out[PATH_MAX + 64], what[256], *err = NULL;
	uint8_t *got = NULL;

	snprintf(out, sizeof(out), "%s/export.raw", tcluster_dir(tc));
	int st = vt_sdfs_to_file(tc, out, &err, (const char *[]){ "vol", "export", spec, NULL });
	cr_assert_eq(st, 0, "sdfs vol export %s: exit %d: %s", spec, st, err);
	size_t n = vt_slurp(out, &got);
	cr_assert_eq(n, len, "sdfs vol export %s: %zu bytes, want %zu", spec, n, len);
	snprintf(what, sizeof(what), "sdfs vol export %s", spec);
	vt_assert_same(got, model, len, 0, OBJ, what);
	unlink(out);
	free(got);
	free(err);
}

/* `sdfs @fmt...` must exit 0; its stdout (malloc'd). */
#define SDFS_OK(...) ({                                                        \
	char *o_ = NULL, *e_ = NULL;                                           \
	int st_ = tcluster_sdfs(tc, &o_, &e_, __VA_ARGS__);                    \
	cr_assert_eq(st_, 0, "sdfs %s: exit %d: %s", #__VA_ARGS__, st_, e_);  \
	free(e_);                                                              \
	o_;                                                                    \
})

/* The root's inode number (the mount shows /). */
static uint64_t root_ino(void)
{
	struct sdfs_stat st;

	cr_assert_eq(sdfs_ns_resolve(tcluster_client(tc), "/", 1, &st), 0);
	return st.ino;
}

/* sdfs_vol_rollback, retried while the mount's last close of the file
 * has not reached it yet (EBUSY: FUSE's release is asynchronous). */
static void rollback(uint64_t ino, const char *snap)
{
	struct sdfs_vol_info vi;
	int ret;

	for (int64_t end = tnow_ms() + VT_WAIT_MS;;) {
		ret = sdfs_vol_rollback(tcluster_client(tc), ino, snap, &vi);
		if (ret != -EBUSY || tnow_ms() > end)
			break;
		tsleep_ms(50);
	}
	cr_assert_eq(ret, 0, "sdfs_vol_rollback ino=%" PRIu64 " to %s (file closed): %s",
		     ino, snap, strerror(-ret));
}

Test(vol_snap, snapshot_clone_rollback)
{
	struct sdfs *s = tcluster_client(tc);
	uint8_t *m1 = calloc(1, SIZE), *m2, *m3, *m4;
	struct sdfs_vol_info vi, si;
	struct sdfs_stat cst;
	uint64_t ino = vt_create(tc, "vm1", SIZE, OBJ, NULL);
	int fd, fd2, ret;

	cr_assert(m1);
	/* P1: a whole chunk, partial chunks, a write across chunks, a
	 * hole (chunks 2, 3, 6, 8..14 never written), the last bytes. */
	fd = vt_xopen(tc, "vm1", O_RDWR);
	put(fd, m1, 0, OBJ, 1);
	put(fd, m1, MiB + 4096, 10000, 1);
	put(fd, m1, 4 * MiB + 512 * 1024, 2 * MiB - 512 * 1024 + 123, 1);
	put(fd, m1, 7 * MiB + 777, 100, 1);
	put(fd, m1, SIZE - 5000, 5000, 1);
	vt_fsync(fd, "vm1 after P1");
	fd2 = vt_xopen(tc, "vm1", O_RDONLY);    /* opened before the snapshot */

	ret = sdfs_vol_snap_create(s, ino, "S1", &vi);
	cr_assert_eq(ret, 0, "sdfs_vol_snap_create vm1 S1 (file open for write): %s",
		     strerror(-ret));
	vt_info(tc, ino, "S1", &si);
	cr_assert_eq(si.state, SDFS_VOL_SNAP, "S1: state %u", si.state);
	cr_assert_str_eq(si.name, "S1");
	cr_assert_eq(si.size, SIZE, "S1: size %" PRIu64, si.size);
	cr_log_info("S1 is vid %" PRIu64 ", obj_size %u, copies %u", si.vid, si.obj_size,
		    si.copies);

	/* P2 over part of it: a chunk shared with S1 partly (copy-on-write
	 * of chunks 0 and 1), a new chunk in the hole, inside chunk 5. */
	m2 = malloc(SIZE);
	cr_assert(m2);
	memcpy(m2, m1, SIZE);
	put(fd, m2, 512 * 1024, MiB - 512 * 1024 + 8192, 2);
	put(fd, m2, 2 * MiB + 100, 100, 2);
	put(fd, m2, 5 * MiB, 4096, 2);
	vt_fsync(fd, "vm1 after P2");

	check_vol(ino, "S1", m1, SIZE, "snapshot S1 through sdfs_vol_open_snap");
	check_snapdir("vm1", "S1", m1, SIZE);
	check_export("/vm1@S1", m1, SIZE);
	check_fd(fd2, m2, SIZE, "vm1 through a descriptor opened before the snapshot");
	check_fd(fd, m2, SIZE, "vm1 through the writing descriptor");
	close(fd2);
	close(fd);
	check_file("vm1", m2, SIZE);
	check_vol(ino, NULL, m2, SIZE, "vm1's live state through libsdfs");

	/* clone S1: reads P1; P3 into it leaves vm1 and S1 alone */
	ret = sdfs_vol_clone(s, ino, "S1", root_ino(), "vm1-clone", 0644, getuid(), getgid(),
			     &cst);
	cr_assert_eq(ret, 0, "sdfs_vol_clone vm1@S1 vm1-clone: %s", strerror(-ret));
	cr_assert_eq(cst.layout, SDFS_LAYOUT_VOLUME);
	cr_assert_eq(cst.size, SIZE, "clone: size %" PRIu64, cst.size);
	check_file("vm1-clone", m1, SIZE);
	m3 = malloc(SIZE);
	cr_assert(m3);
	memcpy(m3, m1, SIZE);
	fd = vt_xopen(tc, "vm1-clone", O_RDWR);
	put(fd, m3, 0, 100, 3);                         /* chunk 0: shared with S1 */
	put(fd, m3, 2 * MiB, OBJ, 3);                   /* chunk 2: a hole in S1 */
	put(fd, m3, 4 * MiB + 600 * 1024, 100 * 1024, 3);     /* chunk 4: shared */
	vt_fsync(fd, "vm1-clone after P3");
	check_fd(fd, m3, SIZE, "vm1-clone through its writing descriptor");
	close(fd);
	check_file("vm1-clone", m3, SIZE);
	check_file("vm1", m2, SIZE);
	check_vol(ino, "S1", m1, SIZE, "S1 after writes into its clone");
	check_vol(cst.ino, NULL, m3, SIZE, "vm1-clone's live state through libsdfs");

	/* no rollback under a writer */
	fd = vt_xopen(tc, "vm1", O_RDWR);
	ret = sdfs_vol_rollback(s, ino, "S1", &vi);
	cr_assert_eq(ret, -EBUSY, "sdfs_vol_rollback while the mount has vm1 open for "
		     "writing: %s, expected EBUSY", ret ? strerror(-ret) : "done");
	close(fd);
	check_file("vm1", m2, SIZE);

	/* rollback vm1 to S1 (closed): P1 again, S1 and the clone unchanged */
	rollback(ino, "S1");
	check_file("vm1", m1, SIZE);
	check_vol(ino, NULL, m1, SIZE, "vm1 after rollback to S1, through libsdfs");
	check_vol(ino, "S1", m1, SIZE, "S1 after the rollback");
	check_file("vm1-clone", m3, SIZE);

	/* and the rolled-back state diverges alone (copy-on-write from S1,
	 * whose chunk 4 the clone shares too) */
	m4 = malloc(SIZE);
	cr_assert(m4);
	memcpy(m4, m1, SIZE);
	fd = vt_xopen(tc, "vm1", O_RDWR);
	put(fd, m4, 4 * MiB + 520 * 1024, 8192, 4);
	put(fd, m4, 9 * MiB, 3 * MiB, 4);
	vt_fsync(fd, "vm1 after P4");
	close(fd);
	check_file("vm1", m4, SIZE);
	check_vol(ino, "S1", m1, SIZE, "S1 after writes into the rolled-back vm1");
	check_snapdir("vm1", "S1", m1, SIZE);
	check_file("vm1-clone", m3, SIZE);

	/* the same through the CLI: snap create, list, export, vol clone */
	free(SDFS_OK("snap create /vm1 cli1"));
	char *list = SDFS_OK("snap list /vm1");
	cr_assert(strstr(list, "S1") && strstr(list, "cli1"), "sdfs snap list /vm1:\n%s",
		  list);
	free(list);
	check_export("/vm1@cli1", m4, SIZE);
	check_export("/vm1", m4, SIZE);
	check_export("/vm1-clone", m3, SIZE);
	free(SDFS_OK("vol clone /vm1@cli1 /vm1-c2"));
	check_file("vm1-c2", m4, SIZE);
	check_snapdir("vm1", "cli1", m4, SIZE);
	free(m1);
	free(m2);
	free(m3);
	free(m4);
}

/* lseek(@fd, @off, @whence) returns @want (-1: fails with ENXIO). */
static void expect_seek(int fd, off_t off, int whence, off_t want)
{
	errno = 0;
	off_t got = lseek(fd, off, whence);

	if (want < 0)
		cr_assert(got < 0 && errno == ENXIO, "lseek(%jd, %s): %jd (%s), want ENXIO",
			  (intmax_t)off, whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE",
			  (intmax_t)got, strerror(errno));
	else
		cr_assert_eq(got, want, "lseek(%jd, %s): %jd (%s), want %jd", (intmax_t)off,
			     whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE", (intmax_t)got,
			     got < 0 ? strerror(errno) : "ok", (intmax_t)want);
}

static uint64_t fsize(int fd)
{
	struct stat st;

	cr_assert_eq(fstat(fd, &st), 0, "fstat: %s", strerror(errno));
	return (uint64_t)st.st_size;
}

Test(vol_snap, punch_seek_truncate_grow)
{
	const size_t big = 24 * MiB;
	uint8_t *m = calloc(1, big);
	uint64_t ino = vt_create(tc, "vm2", SIZE, OBJ, NULL);
	struct sdfs_vol_info vi;
	int fd;

	cr_assert(m);
	fd = vt_xopen(tc, "vm2", O_RDWR);
	cr_assert_eq(fsize(fd), SIZE);
	put(fd, m, 0, 8 * MiB, 5);
	vt_fsync(fd, "vm2");

	/* punch: whole chunks 1 and 2, and part of chunk 5 */
	cr_assert_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, MiB, 2 * MiB),
		     0, "punch [1 MiB, 3 MiB): %s", strerror(errno));
	memset(m + MiB, 0, 2 * MiB);
	cr_assert_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       5 * MiB + 1000, 50000), 0, "punch in chunk 5: %s",
		     strerror(errno));
	memset(m + 5 * MiB + 1000, 0, 50000);
	cr_assert_eq(fsize(fd), SIZE, "KEEP_SIZE punch changed the size");
	check_fd(fd, m, SIZE, "vm2 after punching (same descriptor)");
	check_file("vm2", m, SIZE);
	check_vol(ino, NULL, m, SIZE, "vm2 after punching, through libsdfs");

	/* data: chunks 0, 3..7; holes: 1, 2, 8..15 (a thin volume: an
	 * unallocated chunk is a hole, a partly punched one is data) */
	expect_seek(fd, 0, SEEK_DATA, 0);
	expect_seek(fd, 0, SEEK_HOLE, MiB);
	expect_seek(fd, MiB, SEEK_DATA, 3 * MiB);
	expect_seek(fd, MiB + 5, SEEK_DATA, 3 * MiB);
	expect_seek(fd, 2 * MiB + 7, SEEK_HOLE, 2 * MiB + 7);
	expect_seek(fd, 3 * MiB, SEEK_HOLE, 8 * MiB);
	expect_seek(fd, 5 * MiB + 2000, SEEK_HOLE, 8 * MiB);
	expect_seek(fd, 8 * MiB, SEEK_DATA, -1);
	expect_seek(fd, 9 * MiB, SEEK_HOLE, 9 * MiB);
	expect_seek(fd, SIZE, SEEK_DATA, -1);
	expect_seek(fd, SIZE, SEEK_HOLE, -1);

	/* truncate down into chunk 6, then up: zeros past the old end */
	const uint64_t cut = 6 * MiB + 12345;
	cr_assert_eq(ftruncate(fd, (off_t)cut), 0, "truncate to %" PRIu64 ": %s", cut,
		     strerror(errno));
	cr_assert_eq(fsize(fd), cut);
	memset(m + cut, 0, big - cut);
	check_fd(fd, m, cut, "vm2 after truncating down");
	cr_assert_eq(ftruncate(fd, 12 * MiB), 0, "truncate up to 12 MiB: %s", strerror(errno));
	cr_assert_eq(fsize(fd), 12 * MiB);
	check_fd(fd, m, 12 * MiB, "vm2 after truncating down then up (same descriptor)");
	check_file("vm2", m, 12 * MiB);
	check_vol(ino, NULL, m, 12 * MiB, "vm2 after truncating down then up, libsdfs");
	expect_seek(fd, 7 * MiB, SEEK_DATA, -1);
	expect_seek(fd, 6 * MiB, SEEK_HOLE, 7 * MiB);

	/* writes past the end grow it: inside the created size, and past it */
	put(fd, m, 14 * MiB + 100, 5000, 6);
	cr_assert_eq(fsize(fd), 14 * MiB + 5100, "st_size after a write past EOF: %" PRIu64,
		     fsize(fd));
	put(fd, m, 20 * MiB + 4096, 8192, 7);
	cr_assert_eq(fsize(fd), 20 * MiB + 12288, "st_size after a write past the created "
		     "size: %" PRIu64, fsize(fd));
	vt_fsync(fd, "vm2 after writes past EOF");
	check_fd(fd, m, 20 * MiB + 12288, "vm2 after writes past EOF (same descriptor)");
	close(fd);

	struct stat st;
	char path[PATH_MAX + 64];
	cr_assert_eq(stat(vt_path(tc, "vm2", path), &st), 0);
	cr_assert_eq((uint64_t)st.st_size, 20 * MiB + 12288, "stat after close: %jd",
		     (intmax_t)st.st_size);
	vt_info(tc, ino, NULL, &vi);
	cr_assert_eq(vi.size, 20 * MiB + 12288, "the catalog's size: %" PRIu64, vi.size);
	check_file("vm2", m, 20 * MiB + 12288);
	check_vol(ino, NULL, m, 20 * MiB + 12288, "vm2 after writes past EOF, libsdfs");
	free(m);
}

/* Requests the block daemons have served, summed. */
static uint64_t blockd_requests(void)
{
	struct sdfs_node_status *ns = NULL;
	uint64_t sum = 0;
	size_t n = 0;

	cr_assert_eq(sdfs_node_list(tcluster_client(tc), &ns, &n), 0);
	for (size_t i = 0; i < n; i++)
		sum += ns[i].requests;
	free(ns);
	return sum;
}

/* Reading never-written chunks costs no block daemon request: the index
 * says "nobody owns it" and the client returns zeros. */
Test(vol_snap, unwritten_chunks_read_as_zeros_without_io)
{
	const size_t len = 64 * MiB, piece = 1 * MiB;
	uint8_t *m = vt_alloc(len), *got = vt_alloc(piece);
	uint64_t before, after;
	int fd;

	memset(m, 0, len);
	vt_create(tc, "thin", 1024 * MiB, 0, NULL);
	fd = vt_xopen(tc, "thin", O_RDWR | O_DIRECT);
	put(fd, m, 8 * MiB + 4096, 4096, 9);   /* one chunk written */
	vt_fsync(fd, "thin");
	before = blockd_requests();
	for (uint64_t off = 0; off < len; off += piece) {
		vt_pread(fd, got, piece, off, "thin, direct");
		vt_assert_same(got, m + off, piece, off, OBJ, "thin, direct");
	}
	after = blockd_requests();
	/* 64 reads of 1 MiB: the written chunk's few, plus the NODE_INFO of
	 * the two counts (one per node each); 60 would have reached blockd
	 * for the unwritten ones if they were read. */
	cr_assert_lt(after - before, 20, "%" PRIu64 " block daemon requests for 64 MiB of "
		     "which 63 MiB were never written", after - before);
	close(fd);
	free(m);
	free(got);
}
