/*
 * vol_discard_test.c - discard and zeroes on a volume file (docs/volumes.md,
 * "Discard and zeroes"), what a guest's TRIM and write-zeroes become on
 * the host: fallocate PUNCH_HOLE (`fallocate -p`) and ZERO_RANGE
 * (`fallocate -z`) through the mount. Whole chunks are freed (their
 * objects removed from every block daemon, st_blocks and du drop), a
 * never-written chunk stays unallocated, a partial chunk reads zeros
 * without growing its object; `qemu-img map` lists data exactly where
 * chunks are (SEEK_DATA/SEEK_HOLE) and `qemu-img info` shows st_blocks
 * as the disk size; punching a chunk a snapshot shares only drops it
 * from the live state (the snapshot keeps its bytes).
 *
 * Runs on the volume tests' cluster (vt.h), objects of 1 MiB. Skipped
 * without /usr/bin/qemu-img (qemu-utils).
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

#include "common/oid.h"

#define QEMU_IMG "/usr/bin/qemu-img"
#define FALLOCATE "/usr/bin/fallocate"
#define MiB (1ull << 20)
#define OBJ MiB                 /* this test's object size */
#define SIZE (16 * OBJ)

static struct tcluster *tc;

static void up(void)
{
	tc = NULL;
	if (access(QEMU_IMG, X_OK) || access(FALLOCATE, X_OK))
		return;
	tc = vt_start();
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(vol_discard, .init = up, .fini = down, .timeout = 300);

/* Run @argv; fail unless it exits 0; its output (malloc'd). */
static char *run_ok(char **argv)
{
	char *out = NULL, line[512];
	size_t off = 0;
	int st = vt_run(argv, &out, VT_CMD_MS);

	for (int i = 0; argv[i] && off + 2 < sizeof(line); i++)
		off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s", i ? " " : "",
					argv[i]);
	cr_log_info("%s: exit %d\n%.3000s", line, st, out);
	cr_assert_eq(st, 0, "%s: exit %d: %s", line, st, out);
	return out;
}

/* fallocate(1) -@how (p: punch hole, z: zero range) [off, off+len) of d.img. */
static void falloc(char how, uint64_t off, uint64_t len)
{
	char path[PATH_MAX + 64], o[32], l[32], opt[4] = { '-', how, 0, 0 };

	snprintf(o, sizeof(o), "%" PRIu64, off);
	snprintf(l, sizeof(l), "%" PRIu64, len);
	char *argv[] = { FALLOCATE, opt, "-o", o, "-l", l, (char *)vt_path(tc, "d.img", path),
			 NULL };

	free(run_ok(argv));
}

/* st_blocks of d.img in bytes, through the mount (a fresh stat). */
static uint64_t blocks_of(void)
{
	char path[PATH_MAX + 64];
	struct stat st;

	cr_assert_eq(stat(vt_path(tc, "d.img", path), &st), 0, "%s", strerror(errno));
	return (uint64_t)st.st_blocks * 512;
}

/* qemu-img info's "actual-size" (the disk size it prints) of d.img. */
static uint64_t qemu_disk_size(void)
{
	char path[PATH_MAX + 64];
	char *argv[] = { QEMU_IMG, "info", "--output=json", "-f", "raw",
			 (char *)vt_path(tc, "d.img", path), NULL };
	char *out = run_ok(argv), *p = strstr(out, "\"actual-size\":");
	unsigned long long n = 0;

	cr_assert(p && sscanf(p + 14, " %llu", &n) == 1, "qemu-img info: %s", out);
	free(out);
	return n;
}

/*
 * qemu-img map --output=json of d.img: a bitmap of the chunks it says
 * hold data (bit c: chunk c), failing the test if a data extent does
 * not start and end on chunk boundaries (the map is by chunk).
 */
static uint32_t qemu_map(void)
{
	char path[PATH_MAX + 64];
	char *argv[] = { QEMU_IMG, "map", "--output=json", "-f", "raw",
			 (char *)vt_path(tc, "d.img", path), NULL };
	char *out = run_ok(argv);
	uint32_t map = 0;
	uint64_t covered = 0;

	for (char *p = out; (p = strchr(p, '{')); p++) {
		unsigned long long start, len;
		char *s = strstr(p, "\"start\":"), *l = strstr(p, "\"length\":");
		char *d = strstr(p, "\"data\":"), *e = strchr(p, '}');

		cr_assert(s && l && d && e && s < e && l < e && d < e, "qemu-img map: %s", out);
		cr_assert_eq(sscanf(s + 8, " %llu", &start), 1);
		cr_assert_eq(sscanf(l + 9, " %llu", &len), 1);
		cr_assert_eq(start, covered, "qemu-img map: a gap before %llu: %s", start, out);
		covered = start + len;
		if (strncmp(d + 7, " true", 5) && strncmp(d + 7, "true", 4))
			continue;
		cr_assert(start % OBJ == 0 && (len % OBJ == 0 || start + len == SIZE),
			  "qemu-img map: data at [%llu, +%llu) not by chunk: %s", start, len, out);
		for (uint64_t c = start / OBJ; c < (start + len + OBJ - 1) / OBJ; c++)
			map |= 1u << c;
	}
	cr_assert_eq(covered, SIZE, "qemu-img map covers %" PRIu64 " bytes: %s", covered, out);
	free(out);
	return map;
}

/* The chunks of @vid that the index points at (bit c: chunk c). */
static uint32_t index_map(uint64_t ino)
{
	struct sdfs_vol *v;
	uint32_t map = 0;
	int ret = sdfs_vol_open(tcluster_client(tc), ino, 0, NULL, &v);

	cr_assert_eq(ret, 0, "sdfs_vol_open: %s", strerror(-ret));
	for (uint64_t c = 0; c < SIZE / OBJ; c++)
		if (sdfs_vol_chunk_owner(v, c))
			map |= 1u << c;
	sdfs_vol_close(v);
	return map;
}

static uint64_t want_vid;
static int of_vid(uint64_t oid)
{
	return oid_is_vdata(oid) && oid_owner(oid) == want_vid;
}

/* The chunks of @vid's data objects the block daemons hold (bit c:
 * chunk c); every node holding each must agree on copies 3. */
static uint32_t objects_of(uint64_t vid)
{
	struct vt_node_objs no[VT_MAX_NODES];
	unsigned cnt[32] = { 0 };
	uint32_t map = 0;
	size_t nn;

	want_vid = vid;
	nn = vt_node_objects(tc, of_vid, no);
	for (size_t i = 0; i < nn; i++)
		for (size_t j = 0; j < no[i].n; j++) {
			uint64_t c = oid_chunk(no[i].oids[j]);

			cr_assert_lt(c, 32);
			cnt[c]++;
			map |= 1u << c;
		}
	vt_node_objs_free(no, nn);
	for (unsigned c = 0; c < 32; c++)
		cr_assert(cnt[c] == 0 || cnt[c] == 3, "chunk %u of vid %" PRIu64 ": %u copies", c,
			  vid, cnt[c]);
	return map;
}

/* The stored length of chunk @c's object of @vid (what a read of it
 * returns), 0 if absent. */
static uint64_t object_len(uint64_t vid, uint64_t c, unsigned copies)
{
	char *buf = vt_alloc(OBJ);
	ssize_t got = sdfs_obj_read(tcluster_client(tc), oid_vdata(vid, c, copies), buf, OBJ,
				    0);

	free(buf);
	cr_assert(got >= 0 || got == -ENOENT, "read of chunk %" PRIu64 ": %zd", c, got);
	return got < 0 ? 0 : (uint64_t)got;
}

/* Check the whole content of d.img against @model. */
static void check(const uint8_t *model, const char *what)
{
	uint8_t *got = vt_alloc(SIZE);

	vt_read_file(tc, "d.img", got, SIZE, 1);
	vt_assert_same(got, model, SIZE, 0, OBJ, what);
	free(got);
}

/* Write pattern @tag at [off, off+len) through the mount (O_DIRECT). */
static void put(uint8_t *model, uint64_t off, uint64_t len, uint64_t tag)
{
	int fd = vt_xopen(tc, "d.img", O_RDWR | O_DIRECT);
	uint8_t *buf = vt_alloc(len);

	vt_fill(buf, len, off, tag);
	vt_pwrite(fd, buf, len, off, "put");
	vt_fsync(fd, "put");
	close(fd);
	free(buf);
	vt_model_write(model, off, len, tag);
}

#define CH(c) (1u << (c))

static void state(const char *when, uint64_t vid, uint32_t idx, uint32_t objs)
{
	uint64_t b = blocks_of(), q = qemu_disk_size();
	uint32_t m = qemu_map(), i = index_map(vt_ino(tc, "d.img")), o = objects_of(vid);

	cr_log_info("%s: st_blocks %" PRIu64 " B, qemu-img disk size %" PRIu64
		    " B, chunks: qemu-img map %#x, index %#x, objects of vid %" PRIu64 " %#x",
		    when, b, q, m, i, vid, o);
	cr_assert_eq(i, idx, "%s: index chunks %#x, want %#x", when, i, idx);
	cr_assert_eq(m, idx, "%s: qemu-img map says data in chunks %#x, the index has %#x",
		     when, m, idx);
	cr_assert_eq(o, objs, "%s: objects of the live vid %#x, want %#x", when, o, objs);
	cr_assert_eq(b, (uint64_t)__builtin_popcount(objs) * OBJ,
		     "%s: st_blocks %" PRIu64 " B for %d objects", when, b,
		     __builtin_popcount(objs));
	cr_assert_eq(q, b, "%s: qemu-img disk size %" PRIu64 " B, st_blocks %" PRIu64 " B", when,
		     q, b);
}

Test(vol_discard, punch_and_zero_range_free_chunks_and_qemu_img_sees_it)
{
	uint8_t *model;
	struct sdfs_vol_info vi;
	uint64_t ino, vid;

	if (!tc)
		cr_skip_test("%s or %s missing (qemu-utils, util-linux)", QEMU_IMG, FALLOCATE);
	ino = vt_create(tc, "d.img", SIZE, OBJ, NULL);
	vt_info(tc, ino, NULL, &vi);
	vid = vi.vid;
	model = calloc(1, SIZE);
	cr_assert(model);
	state("new", vid, 0, 0);

	/* never written: punch and zero-range of all of it, and of parts,
	 * allocate nothing */
	falloc('p', 0, SIZE);
	falloc('z', 0, SIZE);
	falloc('p', OBJ / 2, 3 * OBJ);
	falloc('z', 5 * OBJ + 4096, 8192);
	state("punched and zeroed while empty", vid, 0, 0);
	check(model, "empty");

	/* chunks 2..7 and the first 64 KiB of chunk 9 */
	put(model, 2 * OBJ, 6 * OBJ, 1);
	put(model, 9 * OBJ, 64 << 10, 2);
	state("written", vid, 0x2fc, 0x2fc);
	cr_assert_eq(object_len(vid, 9, vi.copies), 64 << 10);

	/* whole chunks 3 and 4 by punch, 6 by zero range: freed */
	falloc('p', 3 * OBJ, 2 * OBJ);
	memset(model + 3 * OBJ, 0, 2 * OBJ);
	falloc('z', 6 * OBJ, OBJ);
	memset(model + 6 * OBJ, 0, OBJ);
	state("whole chunks punched", vid, 0x2a4, 0x2a4);
	check(model, "whole chunks punched");

	/* parts: the middle of chunk 2, chunk 5's head and 7's tail in one
	 * punch with whole chunks 8 (never written) and none else between */
	falloc('z', 2 * OBJ + 4096, 64 << 10);
	memset(model + 2 * OBJ + 4096, 0, 64 << 10);
	falloc('p', 7 * OBJ + OBJ / 2, OBJ);
	memset(model + 7 * OBJ + OBJ / 2, 0, OBJ);
	state("partial chunks punched", vid, 0x2a4, 0x2a4);
	check(model, "partial chunks punched");

	/* the tail of chunk 9's short object, past what it holds: the
	 * object does not grow with zeros */
	falloc('p', 9 * OBJ + (128 << 10), OBJ - (128 << 10));
	falloc('z', 9 * OBJ + (32 << 10), OBJ - (32 << 10));
	memset(model + 9 * OBJ + (32 << 10), 0, 32 << 10);
	check(model, "tail of a short object punched");
	cr_assert_leq(object_len(vid, 9, vi.copies), 64 << 10,
		      "chunk 9's object grew to %" PRIu64 " B by a punch past its end",
		      object_len(vid, 9, vi.copies));

	/* a snapshot shares chunks 2, 5, 7 and 9: punching whole chunk 5
	 * and zeroing all of chunk 9's data only drop them from the live
	 * state */
	char *out = NULL;
	int st = vt_sdfs_to_file(tc, "/dev/null", &out,
				 (const char *[]){ "snap", "create", "/d.img", "s1", NULL });

	cr_assert_eq(st, 0, "sdfs snap create: %s", out);
	free(out);
	vt_info(tc, ino, NULL, &vi);
	cr_assert_neq(vi.vid, vid);
	uint8_t *snap = vt_alloc(SIZE), *smodel = vt_alloc(SIZE);

	memcpy(smodel, model, SIZE);
	falloc('p', 5 * OBJ, OBJ);
	memset(model + 5 * OBJ, 0, OBJ);
	/* past what chunk 9's object of the snapshot holds: nothing to do */
	falloc('z', 9 * OBJ + OBJ / 2, 64 << 10);
	state("a shared chunk punched", vi.vid, 0x284, 0);
	/* all chunk 9's object holds: a hole, not a copy holding zeros */
	falloc('z', 9 * OBJ, 256 << 10);
	memset(model + 9 * OBJ, 0, OBJ);
	state("shared chunks punched", vi.vid, 0x84, 0);
	vt_read_vol(tc, ino, "s1", snap, SIZE);
	vt_assert_same(snap, smodel, SIZE, 0, OBJ, "snapshot s1 after punches of the live state");
	cr_assert_eq(objects_of(vid), 0x2a4, "the snapshot's objects went");
	check(model, "shared chunks punched");

	/* zeroing part of a chunk the snapshot has where it reads zeros
	 * already (zeroed above): nothing to copy */
	falloc('z', 2 * OBJ + 8192, 32 << 10);
	state("zeros of a snapshot's chunk zeroed", vi.vid, 0x84, 0);

	/* zeroing data of a chunk the snapshot has copies it (the rest of
	 * it is data): chunk 2 becomes the live state's */
	falloc('z', 2 * OBJ, 4096);
	memset(model + 2 * OBJ, 0, 4096);
	state("partial chunk of a snapshot zeroed", vi.vid, 0x84, 0x4);
	check(model, "partial chunk of a snapshot zeroed");
	free(snap);
	free(smodel);
	free(model);
}
