/*
 * vol_reclaim_test.c - deleting snapshots and volume files frees
 * exactly the data objects no remaining member of the family references
 * (docs/volumes.md "Reclaim"): after every deletion, once reclaim has
 * run, the volume data objects in the cluster are exactly those named by
 * the remaining members' indexes, and every remaining member still reads
 * back what it should. At the end, with every volume file unlinked, no
 * volume object is left.
 *
 * The family: vm with data and three snapshots (overwrites, a new chunk
 * and a punched chunk between them), two clones (c1 of s1, c2 of s2)
 * with writes of their own, a snapshot t1 of c1 and a clone cc of that.
 * Four orders of deletion, one cluster each.
 *
 * Objects are counted by asking for each candidate oid
 * (oid_vdata(vid, chunk, copies) for every vid the family ever had and
 * every chunk) with sdfs_obj_stat; references by reading each remaining
 * member's index (sdfs_vol_chunk_owner on a read-only handle).
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
#include <unistd.h>

#include "common/oid.h"

#define OBJ (512u << 10)
#define SIZE (8u << 20)
#define NCHUNK (SIZE / OBJ)     /* 16 */
#define KiB 1024u
#define MAX_MEMBERS 16
#define MAX_VIDS 64
#define RECLAIM_MS 90000        /* deadline for one deletion's reclaim */

struct member {
	char file[32];          /* volume file */
	char snap[16];          /* "": the live state */
	uint64_t ino;
	uint8_t *model;         /* what it reads */
	int alive;
};

static struct tcluster *tc;
static struct member mem[MAX_MEMBERS];
static size_t nmem;
static uint64_t vids[MAX_VIDS];         /* every vid the family had */
static size_t nvids;
static unsigned copies;                 /* the volumes' copies (oid nibble) */

static void up(void)
{
	tc = vt_start();
	memset(mem, 0, sizeof(mem));
	nmem = nvids = 0;
}

static void down(void)
{
	for (size_t i = 0; i < nmem; i++)
		free(mem[i].model);
	tcluster_stop(tc);
}

TestSuite(vol_reclaim, .init = up, .fini = down, .timeout = 600);

static void note_vid(uint64_t vid)
{
	if (!vid)
		return;
	for (size_t i = 0; i < nvids; i++)
		if (vids[i] == vid)
			return;
	cr_assert(nvids < MAX_VIDS);
	vids[nvids++] = vid;
}

static struct member *add_member(const char *file, const char *snap, uint64_t ino,
				 const uint8_t *model_from)
{
	struct member *m = &mem[nmem++];

	cr_assert(nmem <= MAX_MEMBERS);
	snprintf(m->file, sizeof(m->file), "%s", file);
	snprintf(m->snap, sizeof(m->snap), "%s", snap ? snap : "");
	m->ino = ino;
	m->model = malloc(SIZE);
	cr_assert(m->model);
	if (model_from)
		memcpy(m->model, model_from, SIZE);
	else
		memset(m->model, 0, SIZE);
	m->alive = 1;
	return m;
}

static struct member *find(const char *file, const char *snap)
{
	for (size_t i = 0; i < nmem; i++)
		if (!strcmp(mem[i].file, file) && !strcmp(mem[i].snap, snap ? snap : ""))
			return &mem[i];
	cr_assert_fail("no member %s@%s", file, snap ? snap : "");
	return NULL;
}

/* Every vid sdfs_vol_tree lists for a living file of the family. */
static void note_tree(void)
{
	for (size_t i = 0; i < nmem; i++) {
		struct sdfs_vol_info *t = NULL;
		size_t n = 0;

		if (!mem[i].alive || mem[i].snap[0])
			continue;
		int ret = sdfs_vol_tree(tcluster_client(tc), mem[i].ino, &t, &n);
		cr_assert_eq(ret, 0, "sdfs_vol_tree %s: %s", mem[i].file, strerror(-ret));
		for (size_t j = 0; j < n; j++) {
			note_vid(t[j].vid);
			note_vid(t[j].parent);
		}
		free(t);
		return;
	}
}

/* Through the mount: pattern @tag at [off, off+len) of live file @m. */
static void put(struct member *m, uint64_t off, size_t len, uint64_t tag)
{
	uint8_t *buf = malloc(len);
	int fd = vt_xopen(tc, m->file, O_RDWR);

	cr_assert(buf);
	vt_fill(buf, len, off, tag);
	vt_pwrite(fd, buf, len, off, m->file);
	memcpy(m->model + off, buf, len);
	vt_fsync(fd, m->file);
	close(fd);
	free(buf);
}

static void punch(struct member *m, uint64_t off, uint64_t len)
{
	int fd = vt_xopen(tc, m->file, O_RDWR);

	cr_assert_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			       (off_t)len), 0, "punch %s: %s", m->file, strerror(errno));
	memset(m->model + off, 0, len);
	vt_fsync(fd, m->file);
	close(fd);
}

static struct member *take_snap(struct member *live, const char *name)
{
	struct sdfs_vol_info vi;
	int ret = sdfs_vol_snap_create(tcluster_client(tc), live->ino, name, &vi);

	cr_assert_eq(ret, 0, "snapshot %s@%s: %s", live->file, name, strerror(-ret));
	return add_member(live->file, name, live->ino, live->model);
}

static struct member *make_clone(struct member *from, const char *file)
{
	struct sdfs_stat root, st;
	struct sdfs *s = tcluster_client(tc);
	int ret;

	cr_assert_eq(sdfs_ns_resolve(s, "/", 1, &root), 0);
	ret = sdfs_vol_clone(s, from->ino, from->snap, root.ino, file, 0644, getuid(),
			     getgid(), &st);
	cr_assert_eq(ret, 0, "clone %s@%s to %s: %s", from->file, from->snap, file,
		     strerror(-ret));
	return add_member(file, NULL, st.ino, from->model);
}

/* vm, s1..s3, c1 (of s1), c2 (of s2); written through the mount. */
static void build_family(void)
{
	struct sdfs_vol_info vi;
	uint64_t ino = vt_create(tc, "vm", SIZE, OBJ, NULL);
	struct member *vm = add_member("vm", NULL, ino, NULL), *c1, *c2, *cc;

	vt_info(tc, ino, NULL, &vi);
	copies = vi.copies;
	cr_log_info("vm: vid %" PRIu64 ", obj_size %u, copies %u", vi.vid, vi.obj_size,
		    vi.copies);
	cr_assert_eq(vi.obj_size, OBJ);
	put(vm, 0, 10 * OBJ - 3000, 11);                /* chunks 0..9 */
	take_snap(vm, "s1");
	put(vm, OBJ + 100 * KiB, OBJ, 12);              /* CoW 1, 2 */
	put(vm, 10 * OBJ, 20 * KiB, 12);                /* new chunk 10 */
	take_snap(vm, "s2");
	put(vm, 2 * OBJ + 5 * KiB, OBJ, 13);            /* CoW 2, 3 */
	punch(vm, 5 * OBJ, OBJ);                        /* chunk 5 (s1's) unmapped */
	take_snap(vm, "s3");
	put(vm, 0, 4 * KiB, 14);                        /* CoW 0 */
	put(vm, 9 * OBJ, OBJ, 14);                      /* CoW 9 (whole chunk) */
	put(vm, 15 * OBJ + 1, 1000, 14);                /* new chunk 15 */

	c1 = make_clone(find("vm", "s1"), "c1");
	put(c1, OBJ + 3 * KiB, 2 * KiB, 21);            /* CoW 1 from s1 */
	put(c1, 12 * OBJ, OBJ, 21);                     /* new 12 */
	take_snap(c1, "t1");
	put(c1, 12 * OBJ + 7 * KiB, 9 * KiB, 23);       /* CoW 12 from t1 */
	cc = make_clone(find("c1", "t1"), "cc");        /* a clone of a clone */
	put(cc, 0, 3 * KiB, 24);                        /* CoW 0 from s1 (via t1) */
	put(cc, 13 * OBJ, 2 * KiB, 24);                 /* new 13 */
	c2 = make_clone(find("vm", "s2"), "c2");
	put(c2, 2 * OBJ, 100, 22);                      /* CoW 2 from s2 */
	put(c2, 10 * OBJ + 30 * KiB, 4 * KiB, 22);      /* CoW 10 (vm's, in s2) */
	punch(c2, 7 * OBJ, OBJ);                        /* chunk 7 unmapped in c2 */
	note_tree();
	cr_log_info("family of %zu members, %zu vids", nmem, nvids);
}

/* One set of (vid, chunk) pairs, as a bitmap over vids[] x chunks. */
struct oset {
	uint8_t has[MAX_VIDS][NCHUNK];
};

static size_t vid_slot(uint64_t vid)
{
	note_vid(vid);
	for (size_t i = 0; i < nvids; i++)
		if (vids[i] == vid)
			return i;
	return 0;
}

/* What the living members' indexes reference. */
static void referenced(struct oset *r)
{
	struct sdfs *s = tcluster_client(tc);

	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < nmem; i++) {
		struct member *m = &mem[i];
		struct sdfs_vol *v = NULL;
		struct sdfs_vol_info vi;
		int ret;

		if (!m->alive)
			continue;
		ret = m->snap[0] ? sdfs_vol_open_snap(s, m->ino, m->snap, &v) :
				   sdfs_vol_open(s, m->ino, 0, NULL, &v);
		cr_assert_eq(ret, 0, "open %s@%s: %s", m->file, m->snap, strerror(-ret));
		sdfs_vol_get_info(v, &vi);
		note_vid(vi.vid);
		for (uint64_t c = 0; c < NCHUNK; c++) {
			uint64_t owner = sdfs_vol_chunk_owner(v, c);

			if (owner)
				r->has[vid_slot(owner)][c] = 1;
		}
		sdfs_vol_close(v);
	}
}

/* Which candidate data objects exist; their count. */
static size_t existing(struct oset *e)
{
	struct sdfs *s = tcluster_client(tc);
	size_t n = 0;

	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < nvids; i++)
		for (uint64_t c = 0; c < NCHUNK; c++) {
			struct sdfs_obj_info oi;
			uint64_t oid = oid_vdata(vids[i], c, copies);
			int ret = sdfs_obj_stat(s, oid, &oi);

			cr_assert(ret == 0 || ret == -ENOENT, "stat %016" PRIx64 " (vid %" PRIu64
				  " chunk %" PRIu64 "): %s", oid, vids[i], c, strerror(-ret));
			e->has[i][c] = ret == 0;
			n += ret == 0;
		}
	return n;
}

static size_t count(const struct oset *o)
{
	size_t n = 0;

	for (size_t i = 0; i < nvids; i++)
		for (size_t c = 0; c < NCHUNK; c++)
			n += o->has[i][c];
	return n;
}

/* "vid 7 chunk 3, ..." of the pairs in @a and not in @b. */
static void diff_str(const struct oset *a, const struct oset *b, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nvids; i++)
		for (size_t c = 0; c < NCHUNK; c++)
			if (a->has[i][c] && !b->has[i][c] && off + 40 < len)
				off += (size_t)snprintf(buf + off, len - off, "%svid %" PRIu64
							" chunk %zu", off ? ", " : "", vids[i], c);
}

/* Every living member reads back its model. */
static void check_members(const char *after)
{
	uint8_t *got = malloc(SIZE);
	char what[256];

	cr_assert(got);
	for (size_t i = 0; i < nmem; i++) {
		struct member *m = &mem[i];

		if (!m->alive)
			continue;
		snprintf(what, sizeof(what), "%s%s%s after %s", m->file, m->snap[0] ? "@" : "",
			 m->snap, after);
		vt_read_vol(tc, m->ino, m->snap[0] ? m->snap : NULL, got, SIZE);
		vt_assert_same(got, m->model, SIZE, 0, OBJ, what);
		if (!m->snap[0]) {
			vt_read_file(tc, m->file, got, SIZE, 1);
			strcat(what, " (through the mount)");
			vt_assert_same(got, m->model, SIZE, 0, OBJ, what);
		}
	}
	free(got);
}

/*
 * After a deletion: wait until reclaim is idle and the existing data
 * objects are exactly the referenced ones (twice in a row); a
 * referenced object missing fails at once (data lost).
 */
static void wait_reclaimed(const char *after)
{
	struct oset *r = malloc(sizeof(*r)), *e = malloc(sizeof(*e));
	struct sdfs_reclaim_status rs = { 0 };
	char missing[2048], extra[2048];
	int settled = 0, ret = 0;
	size_t ne = 0;

	cr_assert(r && e);
	for (int64_t end = tnow_ms() + RECLAIM_MS;;) {
		note_tree();
		referenced(r);
		ne = existing(e);
		diff_str(r, e, missing, sizeof(missing));
		cr_assert(!missing[0], "after %s: referenced data objects are gone: %s", after,
			  missing);
		diff_str(e, r, extra, sizeof(extra));
		ret = sdfs_vol_reclaim_status(tcluster_client(tc), &rs);
		cr_assert_eq(ret, 0, "sdfs_vol_reclaim_status: %s", strerror(-ret));
		if (!extra[0] && rs.objects_pending == 0) {
			if (++settled >= 2)
				break;
		} else {
			settled = 0;
		}
		cr_assert(tnow_ms() < end, "after %s: %d ms on, unreferenced data objects "
			  "remain: %s (reclaim: vids_pending %" PRIu64 " objects_pending %" PRIu64
			  " sweeps %" PRIu64 " freed %" PRIu64 ")", after, RECLAIM_MS, extra,
			  rs.vids_pending, rs.objects_pending, rs.sweeps, rs.objects_freed);
		tsleep_ms(300);
	}
	cr_log_info("after %s: %zu data objects, all referenced (reclaim: vids_pending %"
		    PRIu64 ", freed %" PRIu64 ", sweeps %" PRIu64 ")", after, ne,
		    rs.vids_pending, rs.objects_freed, rs.sweeps);
	cr_assert_eq(ne, count(r));
	check_members(after);
	free(r);
	free(e);
}

/* Delete "file@snap" (a snapshot) or "file" (unlink through the mount:
 * its live state and all its snapshots). */
static void del(const char *what)
{
	char file[32], path[PATH_MAX + 64];
	const char *at = strchr(what, '@');

	if (at) {
		snprintf(file, sizeof(file), "%.*s", (int)(at - what), what);
		struct member *m = find(file, at + 1);
		int ret = sdfs_vol_snap_delete(tcluster_client(tc), m->ino, at + 1);

		cr_assert_eq(ret, 0, "delete snapshot %s: %s", what, strerror(-ret));
		m->alive = 0;
	} else {
		cr_assert_eq(unlink(vt_path(tc, what, path)), 0, "unlink %s: %s", path,
			     strerror(errno));
		for (size_t i = 0; i < nmem; i++)
			if (!strcmp(mem[i].file, what))
				mem[i].alive = 0;
	}
	cr_log_info("deleted %s", what);
}

/* After the last file: no data or index object of any vid is left. */
static void wait_all_gone(void)
{
	struct sdfs *s = tcluster_client(tc);
	struct oset *e = malloc(sizeof(*e)), *none = calloc(1, sizeof(*none));
	char extra[2048], idx[1024];

	cr_assert(e && none);
	for (int64_t end = tnow_ms() + RECLAIM_MS;;) {
		size_t ne = existing(e), off = 0;

		idx[0] = '\0';
		for (size_t i = 0; i < nvids; i++) {
			struct sdfs_obj_info oi;

			if (sdfs_obj_stat(s, oid_vindex(vids[i], copies), &oi) == 0 &&
			    off + 32 < sizeof(idx))
				off += (size_t)snprintf(idx + off, sizeof(idx) - off, " %" PRIu64,
							vids[i]);
		}
		if (!ne && !idx[0])
			break;
		diff_str(e, none, extra, sizeof(extra));
		cr_assert(tnow_ms() < end, "%d ms after unlinking every volume file: %zu data "
			  "objects left (%s), index objects of vids:%s", RECLAIM_MS, ne, extra,
			  idx[0] ? idx : " none");
		tsleep_ms(300);
	}
	free(e);
	free(none);
}

static void run_order(const char *const *order)
{
	char after[64];

	build_family();
	wait_reclaimed("building the family");
	for (; *order; order++) {
		del(*order);
		snprintf(after, sizeof(after), "deleting %s", *order);
		wait_reclaimed(after);
	}
	/* every volume file still there goes too */
	for (size_t i = 0; i < nmem; i++) {
		char path[PATH_MAX + 64];

		if (mem[i].alive && !mem[i].snap[0] &&
		    access(vt_path(tc, mem[i].file, path), F_OK) == 0)
			del(mem[i].file);
	}
	wait_all_gone();
}

Test(vol_reclaim, snapshots_between_clones)
{
	const char *order[] = { "vm@s2", "c1@t1", "c1", "vm@s1", "vm@s3", "c2", NULL };

	run_order(order);
}

Test(vol_reclaim, origin_first)
{
	/* the clones keep s1's and s2's objects after vm and its snapshots go */
	const char *order[] = { "vm", "c2", NULL };

	run_order(order);
}

Test(vol_reclaim, clones_first_then_oldest_snapshot)
{
	const char *order[] = { "c1", "c2", "vm@s1", "vm@s3", "vm@s2", NULL };

	run_order(order);
}

Test(vol_reclaim, middle_of_the_tree_first)
{
	/* c1 (and t1) go while cc still shares their objects, then s1 that
	 * both came from, then vm; cc and c2 go last */
	const char *order[] = { "c1", "vm@s1", "vm", "cc", NULL };

	run_order(order);
}
