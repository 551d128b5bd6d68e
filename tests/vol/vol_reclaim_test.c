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
 * Four orders of deletion, and one with a rollback (the discarded live
 * state's objects are freed, exactly those), one cluster each. Apart
 * from the family: punching and shrinking a volume frees exactly its own
 * whole chunks, and the chunks it shares with a snapshot stay.
 *
 * Objects are counted two ways. By asking for each candidate oid
 * (oid_vdata(vid, chunk, copies) for every vid the family ever had and
 * every chunk) with sdfs_obj_stat; and, once that shows reclaim done,
 * from every block daemon's own object list (OBJ_LIST, vt_node_objects),
 * which also shows an object under a vid no member has. References by
 * reading each remaining member's index (sdfs_vol_chunk_owner on a
 * read-only handle).
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
	uint64_t size;          /* its size (SIZE unless shrunk) */
	int alive;
};

static struct tcluster *tc;
static struct member mem[MAX_MEMBERS];
static size_t nmem;
static uint64_t vids[MAX_VIDS];         /* every vid the family had */
static size_t nvids;
static unsigned copies;                 /* the volumes' copies (oid nibble) */
static unsigned ncopies;                /* ... as replicas (0: the cluster's) */

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
	m->size = SIZE;
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

/* The family's tree (sdfs_vol_tree) as seen from its first living
 * file, malloc'd into *@t; 0 states (and *@t NULL) when none lives. */
static size_t family_tree(struct sdfs_vol_info **t)
{
	size_t n = 0;

	*t = NULL;
	for (size_t i = 0; i < nmem; i++) {
		if (!mem[i].alive || mem[i].snap[0])
			continue;
		int ret = sdfs_vol_tree(tcluster_client(tc), mem[i].ino, t, &n);
		cr_assert_eq(ret, 0, "sdfs_vol_tree %s: %s", mem[i].file, strerror(-ret));
		return n;
	}
	return 0;
}

/* Every vid sdfs_vol_tree lists for a living file of the family. */
static void note_tree(void)
{
	struct sdfs_vol_info *t;
	size_t n = family_tree(&t);

	for (size_t j = 0; j < n; j++) {
		note_vid(t[j].vid);
		note_vid(t[j].parent);
	}
	free(t);
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

/* The family's copies setting (0: the cluster's) and the replicas
 * each of its objects has, from the first volume's info. */
static void note_copies(const struct sdfs_vol_info *vi)
{
	copies = vi->copies;
	ncopies = copies;
	if (!ncopies) {
		struct sdfs_cluster_info ci;

		cr_assert_eq(sdfs_cluster_info(tcluster_client(tc), &ci), 0);
		ncopies = ci.copies;
	}
}

/* vm, s1..s3, c1 (of s1), c2 (of s2); written through the mount. */
static void build_family(void)
{
	struct sdfs_vol_info vi;
	uint64_t ino = vt_create(tc, "vm", SIZE, OBJ, NULL);
	struct member *vm = add_member("vm", NULL, ino, NULL), *c1, *c2, *cc;

	vt_info(tc, ino, NULL, &vi);
	note_copies(&vi);
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

/* ---- what the block daemons hold, listed (not probed by name) ---- */

#define SETTLE_MS 15000         /* a removal may reach replicas a bit apart */

static int is_vdata(uint64_t oid)
{
	return oid_is_vdata(oid);
}

static int is_vindex(uint64_t oid)
{
	return oid_is_vol(oid) && !oid_is_vdata(oid);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int has_oid(const uint64_t *v, size_t n, uint64_t oid)
{
	return n && bsearch(&oid, v, n, sizeof(*v), cmp_u64) != NULL;
}

/* The data objects of @r as oids, ascending, into @out (MAX_VIDS *
 * NCHUNK); their count. */
static size_t ref_oids(const struct oset *r, uint64_t *out)
{
	size_t n = 0;

	for (size_t i = 0; i < nvids; i++)
		for (size_t c = 0; c < NCHUNK; c++)
			if (r->has[i][c])
				out[n++] = oid_vdata(vids[i], c, copies);
	qsort(out, n, sizeof(*out), cmp_u64);
	return n;
}

/* The index objects the family has: one per state sdfs_vol_tree lists
 * (deleted states not yet dropped too), ascending; none without a
 * living volume file. */
static size_t tree_index_oids(uint64_t *out, size_t max)
{
	struct sdfs_vol_info *t;
	size_t n = family_tree(&t);

	cr_assert(n <= max);
	for (size_t j = 0; j < n; j++)
		out[j] = oid_vindex(t[j].vid, t[j].copies);
	free(t);
	qsort(out, n, sizeof(*out), cmp_u64);
	return n;
}

/* "vid 7 chunk 3, ..." of the oids in @a (ascending) not in @b; their count. */
static size_t minus_str(const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
			char *buf, size_t len)
{
	size_t n = 0, off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < na; i++) {
		if (has_oid(b, nb, a[i]))
			continue;
		n++;
		if (off + 64 < len)
			off += (size_t)snprintf(buf + off, len - off, "%svid %" PRIu64 " %s %" PRIu64,
						off ? ", " : "", oid_owner(a[i]),
						is_vdata(a[i]) ? "chunk" : "index", oid_chunk(a[i]));
	}
	return n;
}

/* One look at the nodes: NULL if they hold exactly @want (data) and
 * @want_idx (index objects), each object on `ncopies` nodes; else what
 * differs, into @why. */
static const char *nodes_differ(const uint64_t *want, size_t nwant, const uint64_t *want_idx,
				size_t nidx, char *why, size_t len)
{
	struct vt_node_objs d[VT_MAX_NODES], x[VT_MAX_NODES];
	size_t nn = vt_node_objects(tc, is_vdata, d), off = 0;
	char stray[1024], stray_idx[1024];
	uint64_t total = 0;
	int bad = 0;

	cr_assert_eq(vt_node_objects(tc, is_vindex, x), nn);
	why[0] = '\0';
	for (size_t i = 0; i < nn; i++) {
		size_t ns = minus_str(d[i].oids, d[i].n, want, nwant, stray, sizeof(stray));
		size_t nsi = minus_str(x[i].oids, x[i].n, want_idx, nidx, stray_idx,
				       sizeof(stray_idx));

		total += d[i].n;
		if (ns || nsi) {
			bad = 1;
			off += (size_t)snprintf(why + off, off < len ? len - off : 0,
						"node %u: %zu data objects, %zu of them stray (%s); "
						"%zu stray index objects (%s). ", d[i].node_id,
						d[i].n, ns, stray, nsi, stray_idx);
		}
	}
	/* every wanted object on exactly `ncopies` nodes */
	for (size_t k = 0; k < nwant + nidx; k++) {
		uint64_t oid = k < nwant ? want[k] : want_idx[k - nwant];
		unsigned on = 0;

		for (size_t i = 0; i < nn; i++)
			on += has_oid(is_vdata(oid) ? d[i].oids : x[i].oids,
				      is_vdata(oid) ? d[i].n : x[i].n, oid);
		if (on != ncopies && off + 128 < len) {
			bad = 1;
			off += (size_t)snprintf(why + off, len - off, "vid %" PRIu64 " %s %" PRIu64
						" is on %u nodes, not %u. ", oid_owner(oid),
						is_vdata(oid) ? "chunk" : "index", oid_chunk(oid),
						on, ncopies);
		}
	}
	if (!bad && total != (uint64_t)nwant * ncopies) {
		bad = 1;
		snprintf(why + off, off < len ? len - off : 0, "%" PRIu64 " data copies on the "
			 "nodes, want %zu objects x %u copies. ", total, nwant, ncopies);
	}
	vt_node_objs_free(d, nn);
	vt_node_objs_free(x, nn);
	return bad ? why : NULL;
}

/*
 * Every block daemon's own object list, all volume kinds of any vid:
 * the data objects present are exactly the @nwant that the remaining
 * members reference, and the index objects those of the family's
 * states, each on `ncopies` nodes. An object under a vid no member has
 * (which probing candidate names cannot see) fails. Polled until
 * SETTLE_MS for a removal still reaching its last replica.
 */
static void check_nodes(const char *after, const uint64_t *want, size_t nwant,
			const uint64_t *want_idx, size_t nidx)
{
	char why[8192];
	const char *d;

	for (int64_t end = tnow_ms() + SETTLE_MS;
	     (d = nodes_differ(want, nwant, want_idx, nidx, why, sizeof(why)));) {
		cr_assert(tnow_ms() < end, "after %s, the block daemons' volume objects are "
			  "not the %zu data objects the remaining members reference (and the "
			  "%zu index objects of the family's states): %s", after, nwant, nidx, d);
		tsleep_ms(200);
	}
	cr_log_info("after %s: every node holds exactly the %zu referenced data objects "
		    "and %zu index objects", after, nwant, nidx);
}

/* Volume data objects of vid @vid on any node (listed). */
static size_t node_objects_of(uint64_t vid)
{
	struct vt_node_objs d[VT_MAX_NODES];
	size_t nn = vt_node_objects(tc, oid_is_vol, d), n = 0;

	for (size_t i = 0; i < nn; i++)
		for (size_t j = 0; j < d[i].n; j++)
			n += oid_owner(d[i].oids[j]) == vid;
	vt_node_objs_free(d, nn);
	return n;
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
		vt_read_vol(tc, m->ino, m->snap[0] ? m->snap : NULL, got, m->size);
		vt_assert_same(got, m->model, m->size, 0, OBJ, what);
		if (!m->snap[0]) {
			vt_read_file(tc, m->file, got, m->size, 1);
			strcat(what, " (through the mount)");
			vt_assert_same(got, m->model, m->size, 0, OBJ, what);
		}
	}
	free(got);
}

/*
 * After a deletion: wait until reclaim is idle and the existing data
 * objects are exactly the referenced ones (twice in a row); a
 * referenced object missing fails at once (data lost).
 */
static size_t wait_reclaimed(const char *after)
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
	uint64_t *want = malloc(MAX_VIDS * NCHUNK * sizeof(*want)), idx[MAX_VIDS];
	cr_assert(want);
	size_t nwant = ref_oids(r, want), nidx = tree_index_oids(idx, MAX_VIDS);
	cr_assert_eq(nwant, ne);
	check_nodes(after, want, nwant, idx, nidx);
	check_members(after);
	free(want);
	free(r);
	free(e);
	return ne;
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
	check_nodes("unlinking every volume file", NULL, 0, NULL, 0);
	free(e);
	free(none);
}

/*
 * "rollback file@snap": the live state of @file is discarded and a new
 * one starts as the snapshot (sdfs_vol_rollback). Once reclaim ran,
 * every object only the discarded state had is gone — the data objects
 * on the nodes dropped by exactly as many as it owned, its index too —
 * and nothing referenced was lost (wait_reclaimed). Then the new live
 * state takes a write (copy-on-write from the snapshot).
 */
static void rollback(const char *what, size_t before)
{
	char file[32], after[96];
	const char *at = strchr(what, '@');
	struct sdfs_vol_info old, vi;
	struct sdfs_vol *v = NULL;
	size_t owned = 0, now;
	int ret;

	cr_assert(at);
	snprintf(file, sizeof(file), "%.*s", (int)(at - what), what);
	struct member *live = find(file, NULL), *snap = find(file, at + 1);

	ret = sdfs_vol_open(tcluster_client(tc), live->ino, 0, NULL, &v);
	cr_assert_eq(ret, 0, "open %s: %s", file, strerror(-ret));
	sdfs_vol_get_info(v, &old);
	for (uint64_t c = 0; c < NCHUNK; c++)
		owned += sdfs_vol_chunk_owner(v, c) == old.vid;
	sdfs_vol_close(v);
	cr_assert(owned > 0, "%s's live state owns no chunk: nothing to show", file);
	cr_assert_eq(node_objects_of(old.vid), (size_t)ncopies * (owned + 1), "%s's live "
		     "state vid %" PRIu64 ": its %zu data objects and index on the nodes",
		     file, old.vid, owned);

	/* the mount drops its writer lock at the release after our last
	 * close, a moment after close returned */
	for (int64_t end = tnow_ms() + VT_WAIT_MS;
	     (ret = sdfs_vol_rollback(tcluster_client(tc), live->ino, at + 1, &vi)) == -EBUSY;) {
		cr_assert(tnow_ms() < end, "rollback %s: still EBUSY after %d ms", what,
			  VT_WAIT_MS);
		tsleep_ms(50);
	}
	cr_assert_eq(ret, 0, "rollback %s: %s", what, strerror(-ret));
	cr_assert_neq(vi.vid, old.vid, "rollback %s kept the live vid", what);
	memcpy(live->model, snap->model, SIZE);
	cr_log_info("rolled %s back: live vid %" PRIu64 " (owned %zu chunks) discarded, "
		    "new live vid %" PRIu64, what, old.vid, owned, vi.vid);

	snprintf(after, sizeof(after), "%s (vid %" PRIu64 " discarded)", what, old.vid);
	now = wait_reclaimed(after);
	cr_assert_eq(now, before - owned, "after %s: %zu data objects, want %zu - %zu "
		     "(the discarded state's)", after, now, before, owned);
	cr_assert_eq(node_objects_of(old.vid), 0, "after %s: objects of the discarded "
		     "vid %" PRIu64 " remain on the nodes", after, old.vid);

	put(live, 3 * OBJ + 10 * KiB, 8 * KiB, 31);     /* CoW 3 from the snapshot */
}

static void run_order(const char *const *order)
{
	char after[64];
	size_t n;

	build_family();
	n = wait_reclaimed("building the family");
	for (; *order; order++) {
		if (!strncmp(*order, "rollback ", 9)) {
			rollback(*order + 9, n);
			n = wait_reclaimed("a write after the rollback");
			continue;
		}
		del(*order);
		snprintf(after, sizeof(after), "deleting %s", *order);
		n = wait_reclaimed(after);
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

Test(vol_reclaim, rollback_frees_the_discarded_live_state)
{
	/* vm's live state (CoW 0, 9, new 15) goes at the rollback to s2; s3
	 * (rolled past) and s2 (now shared with the new live state) later */
	const char *order[] = { "rollback vm@s2", "vm@s3", "vm@s2", "c1", "vm", NULL };

	run_order(order);
}

/* ---- freeing a volume's own chunks: punch and shrink ---- */

/* The data objects the nodes must hold: @base's chunks (a snapshot's,
 * all kept) and the live state's own, ascending. */
static size_t own_oids(uint64_t base_vid, const uint8_t *base_has, uint64_t live_vid,
		       const uint8_t *live_owns, uint64_t *out)
{
	size_t n = 0;

	for (uint64_t c = 0; c < NCHUNK; c++) {
		if (base_has[c])
			out[n++] = oid_vdata(base_vid, c, copies);
		if (live_owns[c])
			out[n++] = oid_vdata(live_vid, c, copies);
	}
	qsort(out, n, sizeof(*out), cmp_u64);
	return n;
}

/* After @what: the nodes hold exactly the snapshot's objects and the
 * live state's own (count: @before less @freed), the indexes say so,
 * and both read back their models. */
static size_t check_owned(const char *what, uint64_t base_vid, const uint8_t *base_has,
			  uint64_t live_vid, const uint8_t *live_owns, size_t before,
			  size_t freed)
{
	uint64_t want[2 * NCHUNK], idx[MAX_VIDS];
	struct oset *r = malloc(sizeof(*r));
	size_t n = own_oids(base_vid, base_has, live_vid, live_owns, want), nidx, nr;

	cr_assert(r);
	cr_assert_eq(n, before - freed, "%s: the model has %zu objects, want %zu - %zu",
		     what, n, before, freed);
	referenced(r);
	uint64_t *ref = malloc(MAX_VIDS * NCHUNK * sizeof(*ref));
	cr_assert(ref);
	nr = ref_oids(r, ref);
	cr_assert(nr == n && !memcmp(ref, want, n * sizeof(*ref)), "%s: the indexes "
		  "reference %zu data objects, the model says %zu", what, nr, n);
	nidx = tree_index_oids(idx, MAX_VIDS);
	check_nodes(what, want, n, idx, nidx);
	check_members(what);
	cr_log_info("%s: %zu data objects (%zu freed)", what, n, freed);
	free(ref);
	free(r);
	return n;
}

/*
 * A volume's own chunks are freed at once by a punch (fallocate
 * PUNCH_HOLE through the mount) and by a shrink (ftruncate through the
 * mount, `sdfs vol resize --shrink`): the data objects on the nodes drop
 * by exactly the whole chunks punched or cut that the live state owned,
 * while the chunks it shares with its snapshot stay (their objects are
 * the snapshot's) and partial chunks are zeroed in place.
 */
Test(vol_reclaim, punch_and_shrink_free_only_unshared_chunks)
{
	uint8_t base_has[NCHUNK] = { 0 }, live_owns[NCHUNK] = { 0 };
	struct sdfs_vol_info vi, bi;
	uint64_t ino = vt_create(tc, "pv", SIZE, OBJ, NULL);
	struct member *pv = add_member("pv", NULL, ino, NULL);
	char path[PATH_MAX + 64], size_arg[32];
	size_t n;
	int fd;

	vt_info(tc, ino, NULL, &vi);
	note_copies(&vi);
	/* base: chunks 0..11; live after it: its own copies of 4..8 and 10
	 * (whole-chunk overwrites) and new chunks 12..15 */
	put(pv, 0, 12 * OBJ, 41);
	take_snap(pv, "base");
	put(pv, 4 * OBJ, 5 * OBJ, 42);
	put(pv, 10 * OBJ, OBJ, 42);
	put(pv, 12 * OBJ, 4 * OBJ, 42);
	vt_info(tc, ino, "base", &bi);
	vt_info(tc, ino, NULL, &vi);
	note_vid(bi.vid);
	note_vid(vi.vid);
	for (uint64_t c = 0; c < 12; c++)
		base_has[c] = 1;
	for (uint64_t c = 4; c < 16; c++)
		live_owns[c] = c != 9 && c != 11;
	n = check_owned("writing base and the live state", bi.vid, base_has, vi.vid,
			live_owns, 22, 0);

	fd = vt_xopen(tc, "pv", O_RDWR);
	/* chunks 2, 3 (base's: only unmapped), 4, 5 (own: freed) */
	cr_assert_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2 * OBJ,
			       4 * OBJ), 0, "punch [2, 6) chunks of pv: %s", strerror(errno));
	memset(pv->model + 2 * OBJ, 0, 4 * OBJ);
	live_owns[4] = live_owns[5] = 0;
	n = check_owned("punching chunks 2..5", bi.vid, base_has, vi.vid, live_owns, n, 2);
	/* the end of chunk 6 (zeroed in place) and chunk 7 (freed) */
	cr_assert_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       6 * OBJ + 1000, 2 * OBJ - 1000), 0, "punch [6 + 1000, 8) of pv: "
		     "%s", strerror(errno));
	memset(pv->model + 6 * OBJ + 1000, 0, 2 * OBJ - 1000);
	live_owns[7] = 0;
	n = check_owned("punching chunk 7 and the end of 6", bi.vid, base_has, vi.vid,
			live_owns, n, 1);
	/* cut 14, 15 (own); 13's tail zeroed */
	cr_assert_eq(ftruncate(fd, 13 * OBJ + 5000), 0, "ftruncate pv: %s", strerror(errno));
	memset(pv->model + 13 * OBJ + 5000, 0, SIZE - (13 * OBJ + 5000));
	pv->size = 13 * OBJ + 5000;
	live_owns[14] = live_owns[15] = 0;
	vt_fsync(fd, "pv");
	close(fd);
	n = check_owned("ftruncate to 13 chunks + 5000", bi.vid, base_has, vi.vid, live_owns,
			n, 2);

	/* cut 9, 11 (base's: only unmapped) and 10, 12, 13 (own: freed); the
	 * mount drops its writer lock a moment after our close */
	snprintf(size_arg, sizeof(size_arg), "%uK", 9 * OBJ / 1024);
	snprintf(path, sizeof(path), "/pv");
	for (int64_t end = tnow_ms() + VT_WAIT_MS;;) {
		char *err = NULL;
		const char *args[] = { "vol", "resize", path, size_arg, "--shrink", NULL };
		int st = vt_sdfs_to_file(tc, "/dev/null", &err, args);

		if (st == 0) {
			free(err);
			break;
		}
		cr_assert(strstr(err, "open for writing elsewhere") && tnow_ms() < end,
			  "sdfs vol resize %s %s --shrink: exit %d: %s", path, size_arg, st, err);
		free(err);
		tsleep_ms(50);
	}
	memset(pv->model + 9 * OBJ, 0, SIZE - 9 * OBJ);
	pv->size = 9 * OBJ;
	live_owns[10] = live_owns[12] = live_owns[13] = 0;
	n = check_owned("sdfs vol resize --shrink to 9 chunks", bi.vid, base_has, vi.vid,
			live_owns, n, 3);
	cr_assert_eq(n, 14);    /* base's 12, the live state's 6 and 8 */
}
