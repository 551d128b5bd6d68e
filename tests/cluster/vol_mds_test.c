/*
 * vol_mds_test.c - the mds side of volume files (docs/volumes.md): the
 * catalog calls (create, info, snapshots, clone, rollback, tree), their
 * errors, snapshot of thin volumes of any size, reclaim by mark and sweep
 * with hand-made index entries and data objects, and the roll-forward of
 * a snapshot whose mds died right after the freeze (SDFS_MDS_FAULT).
 *
 * 3 blockd, 2 mds.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/oid.h"
#include "common/volidx.h"
#include "tests/cluster/fixture.h"

#define ROOT 1
#define GiB ((uint64_t)1 << 30)
#define RECLAIM_WAIT_MS 60000

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .mds = 2,
						      .set = "reclaim_interval_s=1" });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(vol_mds, .init = up, .fini = down, .timeout = 180);

static uint64_t mkvol(struct sdfs *s, uint64_t dir, const char *name, uint64_t size)
{
	struct sdfs_stat st;
	int ret = sdfs_vol_create(s, dir, name, 0644, 0, 0, size, 0, 0, &st);

	cr_assert_eq(ret, 0, "vol_create %s: %s", name, strerror(-ret));
	return st.ino;
}

Test(vol_mds, create_info_and_errors)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_stat st;
	struct sdfs_vol_info vi;
	uint64_t ino;
	int ret;

	ret = sdfs_vol_create(s, ROOT, "v1", 0640, 7, 8, GiB, 0, 0, &st);
	cr_assert_eq(ret, 0, "%s", strerror(-ret));
	ino = st.ino;
	cr_assert(S_ISREG(st.mode));
	cr_assert_eq(st.mode & 07777, 0640);
	cr_assert_eq(st.layout, SDFS_LAYOUT_VOLUME);
	cr_assert_eq(st.size, GiB);
	cr_assert_eq(st.uid, 7);
	cr_assert_eq(st.obj_size, sdfs_obj_size(s));
	cr_assert_eq(sdfs_ns_lookup(s, ROOT, "v1", &st), 0);
	cr_assert_eq(st.ino, ino);
	cr_assert_eq(st.layout, SDFS_LAYOUT_VOLUME);

	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &vi), 0);
	cr_assert_eq(vi.state, SDFS_VOL_LIVE);
	cr_assert_neq(vi.vid, 0);
	cr_assert_eq(vi.family, vi.vid);
	cr_assert_eq(vi.parent, 0);
	cr_assert_eq(vi.ino, ino);
	cr_assert_eq(vi.size, GiB);
	cr_assert_eq(vi.obj_size, sdfs_obj_size(s));
	cr_assert_eq(vi.copies, 0);
	cr_assert_str_eq(vi.name, "");
	/* its empty index is there: a header naming it */
	uint8_t hdr[VOLIDX_HDR_SIZE];
	struct volidx_hdr h;
	cr_assert_eq(sdfs_obj_read(s, oid_vindex(vi.vid, 0), hdr, sizeof(hdr), 0),
		     (ssize_t)sizeof(hdr));
	cr_assert_eq(volidx_hdr_decode(hdr, sizeof(hdr), &h), 0);
	cr_assert_eq(h.vid, vi.vid);

	/* size 0, copies and object size of its own */
	ret = sdfs_vol_create(s, ROOT, "v0", 0600, 0, 0, 0, 2, 1 << 20, &st);
	cr_assert_eq(ret, 0, "%s", strerror(-ret));
	cr_assert_eq(st.size, 0);
	cr_assert_eq(st.copies, 2);
	cr_assert_eq(st.obj_size, 1u << 20);
	cr_assert_eq(sdfs_vol_info(s, st.ino, NULL, &vi), 0);
	cr_assert_eq(vi.copies, 2);
	cr_assert_neq(vi.family, 0);

	cr_assert_eq(sdfs_vol_create(s, ROOT, "v1", 0644, 0, 0, GiB, 0, 0, NULL), -EEXIST);
	cr_assert_eq(sdfs_vol_create(s, ROOT, "bad", 0644, 0, 0, GiB, OID_COPIES_MAX + 1,
				     0, NULL), -EINVAL);
	cr_assert_eq(sdfs_vol_create(s, ROOT, "huge", 0644, 0, 0, UINT64_MAX / 2, 0, 0,
				     NULL), -EINVAL);
	cr_assert_eq(sdfs_vol_create(s, 999999, "x", 0644, 0, 0, GiB, 0, 0, NULL), -ENOENT);
	cr_assert_eq(sdfs_vol_info(s, 999999, NULL, &vi), -ENOENT);
	cr_assert_eq(sdfs_vol_info(s, ino, "nosuch", &vi), -ENOENT);
	cr_assert_eq(sdfs_ns_mknod(s, ROOT, "plain", S_IFREG | 0644, 0, 0, 0, &st), 0);
	cr_assert_eq(sdfs_vol_info(s, st.ino, NULL, &vi), -EMEDIUMTYPE);
	cr_assert_eq(sdfs_vol_snap_create(s, st.ino, "a", &vi), -EMEDIUMTYPE);
	cr_assert_eq(sdfs_vol_info(s, ROOT, NULL, &vi), -EMEDIUMTYPE);

	const char *bad[] = { "", ".", "..", "a/b", "a b", "é",
		"0123456789012345678901234567890123456789012345678901234567890123456789" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(sdfs_vol_snap_create(s, ino, bad[i], &vi), -EINVAL,
			     "name '%s'", bad[i]);
	cr_assert_eq(sdfs_vol_snap_create(s, ino,
		"a123456789012345678901234567890123456789012345678901234567890._-", &vi), 0);
	cr_assert_eq(strlen(vi.name), 64);

	/* setattr SIZE of a volume file: the size only */
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_SIZE, .size = 2 * GiB };
	cr_assert_eq(sdfs_ns_setattr(s, ino, &sa, &st), 0);
	cr_assert_eq(st.size, 2 * GiB);
	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &vi), 0);
	cr_assert_eq(vi.size, 2 * GiB);
}

Test(vol_mds, snapshots_in_order)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_vol_info vi, s1, s2, s3, live0, *list;
	size_t n;
	uint64_t ino = mkvol(s, ROOT, "vm", 8 * GiB);

	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &live0), 0);
	cr_assert_eq(sdfs_vol_snap_create(s, ino, "s1", &s1), 0);
	cr_assert_eq(s1.vid, live0.vid, "the live state becomes the snapshot");
	cr_assert_eq(s1.state, SDFS_VOL_SNAP);
	cr_assert_str_eq(s1.name, "s1");
	cr_assert_eq(s1.size, 8 * GiB);
	cr_assert_eq(sdfs_vol_snap_create(s, ino, "s2", &s2), 0);
	cr_assert_eq(sdfs_vol_snap_create(s, ino, "s3", &s3), 0);
	cr_assert_eq(sdfs_vol_snap_create(s, ino, "s2", &vi), -EEXIST);
	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &vi), 0);
	cr_assert_eq(vi.state, SDFS_VOL_LIVE);
	cr_assert_eq(vi.parent, s3.vid);
	cr_assert_eq(vi.family, live0.vid);
	cr_assert(vi.vid > s3.vid && s3.vid > s2.vid && s2.vid > s1.vid);
	cr_assert_eq(sdfs_vol_info(s, ino, "s2", &vi), 0);
	cr_assert_eq(vi.vid, s2.vid);
	cr_assert_eq(vi.state, SDFS_VOL_SNAP);

	cr_assert_eq(sdfs_vol_snap_list(s, ino, &list, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(list[0].name, "s1");
	cr_assert_str_eq(list[1].name, "s2");
	cr_assert_str_eq(list[2].name, "s3");
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(list[i].state, SDFS_VOL_SNAP);
		cr_assert_eq(list[i].ino, ino);
		cr_assert_eq(list[i].objects, 0);
		cr_assert_eq(list[i].family, live0.vid);
	}
	cr_assert(list[0].ctime_ns <= list[1].ctime_ns && list[1].ctime_ns <= list[2].ctime_ns);
	free(list);

	cr_assert_eq(sdfs_vol_snap_delete(s, ino, "s2"), 0);
	cr_assert_eq(sdfs_vol_snap_delete(s, ino, "s2"), -ENOENT);
	cr_assert_eq(sdfs_vol_snap_list(s, ino, &list, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(list[0].name, "s1");
	cr_assert_str_eq(list[1].name, "s3");
	free(list);
	/* the name is free again */
	cr_assert_eq(sdfs_vol_snap_create(s, ino, "s2", &vi), 0);
}

static int in_tree(const struct sdfs_vol_info *t, size_t n, uint64_t vid, int state)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].vid == vid)
			return state == 0 || t[i].state == state;
	return 0;
}

Test(vol_mds, clone_rollback_tree)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_vol_info s1, live, cl, rb, *t;
	struct sdfs_stat st, dir;
	size_t n;
	uint64_t ino = mkvol(s, ROOT, "base", 4 * GiB);

	cr_assert_eq(sdfs_vol_snap_create(s, ino, "s1", &s1), 0);
	cr_assert_eq(sdfs_ns_mkdir(s, ROOT, "clones", 0755, 0, 0, &dir), 0);
	int ret = sdfs_vol_clone(s, ino, "s1", dir.ino, "c1", 0600, 3, 4, &st);
	cr_assert_eq(ret, 0, "clone: %s", strerror(-ret));
	cr_assert_eq(st.layout, SDFS_LAYOUT_VOLUME);
	cr_assert_eq(st.size, 4 * GiB);
	cr_assert_eq(st.mode & 07777, 0600);
	cr_assert_eq(st.uid, 3);
	struct sdfs_stat looked;
	cr_assert_eq(sdfs_ns_lookup(s, dir.ino, "c1", &looked), 0);
	cr_assert_eq(looked.ino, st.ino);
	cr_assert_eq(looked.layout, SDFS_LAYOUT_VOLUME);
	cr_assert_eq(sdfs_vol_info(s, st.ino, NULL, &cl), 0);
	cr_assert_eq(cl.family, s1.family);
	cr_assert_eq(cl.parent, s1.vid);
	cr_assert_eq(cl.state, SDFS_VOL_LIVE);
	cr_assert_eq(sdfs_vol_clone(s, ino, "s1", dir.ino, "c1", 0600, 0, 0, NULL), -EEXIST);
	cr_assert_eq(sdfs_vol_clone(s, ino, "nosuch", dir.ino, "c2", 0600, 0, 0, NULL),
		     -ENOENT);

	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &live), 0);
	ret = sdfs_vol_rollback(s, ino, "s1", &rb);
	cr_assert_eq(ret, 0, "rollback: %s", strerror(-ret));
	cr_assert_eq(rb.state, SDFS_VOL_LIVE);
	cr_assert_neq(rb.vid, live.vid);
	cr_assert_eq(rb.parent, s1.vid);
	cr_assert_eq(rb.size, 4 * GiB);
	struct sdfs_vol_info now;
	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &now), 0);
	cr_assert_eq(now.vid, rb.vid);
	cr_assert_eq(sdfs_vol_rollback(s, ino, "nosuch", &rb), -ENOENT);

	cr_assert_eq(sdfs_vol_tree(s, ino, &t, &n), 0);
	cr_assert(in_tree(t, n, s1.vid, SDFS_VOL_SNAP));
	cr_assert(in_tree(t, n, cl.vid, SDFS_VOL_LIVE));
	cr_assert(in_tree(t, n, rb.vid, SDFS_VOL_LIVE));
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(t[i].family, s1.family);
		cr_assert_neq(t[i].state, SDFS_VOL_PENDING);
		cr_assert(i == 0 || t[i - 1].vid < t[i].vid);
	}
	/* the old live state: deleted, or already reclaimed (it had nothing) */
	cr_assert(!in_tree(t, n, live.vid, 0) || in_tree(t, n, live.vid, SDFS_VOL_DELETED));
	free(t);
	/* the clone's tree is the same family */
	cr_assert_eq(sdfs_vol_tree(s, st.ino, &t, &n), 0);
	cr_assert(in_tree(t, n, s1.vid, SDFS_VOL_SNAP));
	free(t);
}

Test(vol_mds, snapshot_of_thin_volumes_any_size)
{
	struct sdfs *s = tcluster_client(tc);
	const uint64_t sizes[] = { GiB, 64 * GiB };

	for (int i = 0; i < 2; i++) {
		char name[32];
		struct sdfs_vol_info vi;
		uint64_t ino;

		snprintf(name, sizeof(name), "thin%d", i);
		ino = mkvol(s, ROOT, name, sizes[i]);
		int64_t t0 = tnow_ms();
		int ret = sdfs_vol_snap_create(s, ino, "snap", &vi);
		int64_t t1 = tnow_ms();
		cr_assert_eq(ret, 0, "%s", strerror(-ret));
		cr_assert_eq(vi.size, sizes[i]);
		cr_log_info("snapshot of a thin %" PRIu64 " GiB volume: %" PRId64 " ms",
			    sizes[i] / GiB, t1 - t0);
		printf("snapshot of a thin %" PRIu64 " GiB volume: %" PRId64 " ms\n",
		       sizes[i] / GiB, t1 - t0);
		cr_assert_eq(sdfs_vol_info(s, ino, NULL, &vi), 0);
		cr_assert_eq(vi.size, sizes[i]);
	}
}

/* ---- reclaim with hand-made data ---- */

#define CHUNKS 8
#define MAXV 16

struct member {
	uint64_t vid;
	uint64_t idx[CHUNKS];           /* owners, as the test wrote them */
	int alive;                      /* not deleted */
};

struct model {
	struct member m[MAXV];
	int n;
	uint64_t vids[MAXV * 2];        /* every vid that ever owned data */
	int nvids;
};

static struct member *add_member(struct model *md, uint64_t vid, const struct member *copy)
{
	struct member *x = &md->m[md->n++];

	memset(x, 0, sizeof(*x));
	x->vid = vid;
	x->alive = 1;
	if (copy)
		memcpy(x->idx, copy->idx, sizeof(x->idx));
	md->vids[md->nvids++] = vid;
	return x;
}

static struct member *member_of(struct model *md, uint64_t vid)
{
	for (int i = 0; i < md->n; i++)
		if (md->m[i].vid == vid)
			return &md->m[i];
	cr_assert_fail("vid %" PRIu64 " not in the model", vid);
	return NULL;
}

/* As the client data path does: data object, then index entry. */
static void write_chunk(struct sdfs *s, uint64_t ino, struct member *x, unsigned chunk)
{
	struct sdfs_vol_info vi;
	char data[4096];
	uint8_t e[4];
	int ret;

	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &vi), 0);
	cr_assert_eq(vi.vid, x->vid);
	snprintf(data, sizeof(data), "vid %" PRIu64 " chunk %u", x->vid, chunk);
	ret = sdfs_obj_write_tok(s, oid_vdata(x->vid, chunk, vi.copies), data,
				 sizeof(data), 0, 0, vi.token);
	cr_assert_eq(ret, 0, "data write: %s", strerror(-ret));
	volidx_entry_put(e, (uint32_t)x->vid);
	ret = sdfs_obj_write_tok(s, oid_vindex(x->vid, vi.copies), e, 4,
				 VOLIDX_ENTRY_OFF(chunk), 0, vi.token);
	cr_assert_eq(ret, 0, "index write: %s", strerror(-ret));
	x->idx[chunk] = x->vid;
}

static int referenced(const struct model *md, uint64_t vid, unsigned chunk)
{
	for (int i = 0; i < md->n; i++)
		if (md->m[i].alive && md->m[i].idx[chunk] == vid)
			return 1;
	return 0;
}

/* Poll until the data objects that exist are exactly the referenced ones. */
static void wait_exactly_referenced(struct sdfs *s, const struct model *md,
				    const char *what)
{
	int64_t deadline = tnow_ms() + RECLAIM_WAIT_MS;
	char why[160] = "";

	for (;;) {
		int bad = 0;

		for (int v = 0; v < md->nvids && !bad; v++)
			for (unsigned c = 0; c < CHUNKS && !bad; c++) {
				struct sdfs_obj_info oi;
				int ret = sdfs_obj_stat(s, oid_vdata(md->vids[v], c, 0), &oi);
				int want = referenced(md, md->vids[v], c);

				cr_assert(ret == 0 || ret == -ENOENT, "stat: %s", strerror(-ret));
				if (want && ret)
					cr_assert_fail("%s: a referenced object is gone: "
						       "vid %" PRIu64 " chunk %u", what,
						       md->vids[v], c);
				if (!want && ret == 0) {
					bad = 1;
					snprintf(why, sizeof(why), "vid %" PRIu64 " chunk %u "
						 "still there", md->vids[v], c);
				}
			}
		if (!bad)
			return;
		cr_assert(tnow_ms() < deadline, "%s: not reclaimed in time: %s", what, why);
		tsleep_ms(300);
	}
}

Test(vol_mds, reclaim_frees_exactly_the_unreferenced, .timeout = 300)
{
	struct sdfs *s = tcluster_client(tc);
	struct model md = { 0 };
	struct sdfs_vol_info s1, s2, cl, vi;
	struct sdfs_stat cst;
	struct sdfs_reclaim_status rs;
	uint64_t ino = mkvol(s, ROOT, "data", (uint64_t)CHUNKS * sdfs_obj_size(s));
	struct member *l0, *l1, *l2, *c0;

	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &vi), 0);
	l0 = add_member(&md, vi.vid, NULL);
	for (unsigned c = 0; c < CHUNKS; c++)
		write_chunk(s, ino, l0, c);

	/* s1 = l0's state; the live l1 starts as a copy */
	cr_assert_eq(sdfs_vol_snap_create(s, ino, "s1", &s1), 0);
	cr_assert_eq(s1.vid, l0->vid);
	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &vi), 0);
	l1 = add_member(&md, vi.vid, l0);
	for (unsigned c = 0; c < 4; c++)
		write_chunk(s, ino, l1, c);
	struct sdfs_vol_info *list;
	size_t n;
	cr_assert_eq(sdfs_vol_snap_list(s, ino, &list, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(list[0].objects, CHUNKS);
	free(list);

	/* s2 = l1's state; the live l2 */
	cr_assert_eq(sdfs_vol_snap_create(s, ino, "s2", &s2), 0);
	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &vi), 0);
	l2 = add_member(&md, vi.vid, l1);

	/* a clone of s1 that overwrites chunk 5 */
	cr_assert_eq(sdfs_vol_clone(s, ino, "s1", ROOT, "clone", 0644, 0, 0, &cst), 0);
	cr_assert_eq(sdfs_vol_info(s, cst.ino, NULL, &cl), 0);
	c0 = add_member(&md, cl.vid, member_of(&md, s1.vid));
	write_chunk(s, cst.ino, c0, 5);

	struct sdfs_vol_info *t;
	cr_assert_eq(sdfs_vol_tree(s, ino, &t, &n), 0);
	cr_assert_eq(n, 4);
	for (size_t i = 0; i < n; i++) {
		uint64_t own = 0;
		struct member *x = member_of(&md, t[i].vid);

		for (unsigned c = 0; c < CHUNKS; c++)
			own += x->idx[c] == x->vid;
		cr_assert_eq(t[i].objects, own, "vid %" PRIu64, t[i].vid);
	}
	free(t);
	wait_exactly_referenced(s, &md, "start");

	/* delete s1: the clone and s2 still use all of its chunks */
	cr_assert_eq(sdfs_vol_snap_delete(s, ino, "s1"), 0);
	member_of(&md, s1.vid)->alive = 0;
	wait_exactly_referenced(s, &md, "s1 deleted");

	/* unlink the clone: its chunk 5 and s1's 0..3 go (after the grace) */
	cr_assert_eq(sdfs_ns_unlink(s, ROOT, "clone"), 0);
	c0->alive = 0;
	wait_exactly_referenced(s, &md, "clone unlinked");

	/* delete s2: the live l2 still points at all of it */
	cr_assert_eq(sdfs_vol_snap_delete(s, ino, "s2"), 0);
	member_of(&md, s2.vid)->alive = 0;
	wait_exactly_referenced(s, &md, "s2 deleted");

	/* the live writer overwrites chunks 0 and 4: (l1,0) and (s1,4) are
	 * unreferenced now; only the periodic pass notices */
	write_chunk(s, ino, l2, 0);
	write_chunk(s, ino, l2, 4);
	wait_exactly_referenced(s, &md, "live overwrote");

	cr_assert_eq(sdfs_vol_reclaim_status(s, &rs), 0);
	cr_assert(rs.sweeps > 0);
	cr_assert(rs.objects_freed >= 5, "freed %" PRIu64, rs.objects_freed);

	/* the volume file goes: everything */
	cr_assert_eq(sdfs_ns_unlink(s, ROOT, "data"), 0);
	l2->alive = 0;
	wait_exactly_referenced(s, &md, "volume unlinked");
	int64_t deadline = tnow_ms() + RECLAIM_WAIT_MS;
	for (;;) {
		int left = 0;

		for (int v = 0; v < md.nvids; v++) {
			struct sdfs_obj_info oi;

			left += sdfs_obj_stat(s, oid_vindex(md.vids[v], 0), &oi) == 0;
		}
		cr_assert_eq(sdfs_vol_reclaim_status(s, &rs), 0);
		if (!left && rs.vids_pending == 0)
			break;
		cr_assert(tnow_ms() < deadline, "%d index objects left, %" PRIu64
			  " deleted states", left, rs.vids_pending);
		tsleep_ms(300);
	}
}

/* ---- roll-forward ---- */

static void up_fault(void)
{
	/* both mds get it; only a first run of a snapshot named crash1 dies */
	setenv("SDFS_MDS_FAULT", "snap_after_freeze:crash1", 1);
	up();
}

TestSuite(vol_mds_fault, .init = up_fault, .fini = down, .timeout = 180);

Test(vol_mds_fault, pending_snapshot_is_rolled_forward)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_vol_info ok, live0, snap, live, *list, *t;
	char first[32], second[32];
	size_t n;
	uint64_t ino = mkvol(s, ROOT, "vm", 16 * GiB);
	int ret;

	cr_assert_eq(sdfs_vol_snap_create(s, ino, "ok1", &ok), 0);
	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &live0), 0);
	cr_assert_eq(tcluster_active_mds(tc, first, sizeof(first)), 0);

	sdfs_set_timeout(s, 60000);
	ret = sdfs_vol_snap_create(s, ino, "crash1", &snap);
	cr_assert_eq(ret, 0, "snapshot across the crash: %s", strerror(-ret));
	cr_assert_str_eq(snap.name, "crash1");
	cr_assert_eq(snap.vid, live0.vid);
	cr_assert_eq(snap.state, SDFS_VOL_SNAP);
	cr_assert_eq(tcluster_wait_active_mds(tc, first, second, sizeof(second), 30000), 0);
	char *line = tcluster_log_line(tc, first, "fault injection", 5000);
	cr_assert(line, "the first active did not die at the fault point");
	free(line);
	line = tcluster_log_line(tc, second, "rolled forward the pending snapshot", 10000);
	cr_assert(line, "no roll-forward in %s's log", second);
	cr_log_info("%s", line);
	free(line);

	cr_assert_eq(sdfs_vol_info(s, ino, NULL, &live), 0);
	cr_assert_eq(live.parent, live0.vid);
	cr_assert_neq(live.vid, live0.vid);
	cr_assert_eq(sdfs_vol_snap_list(s, ino, &list, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(list[0].name, "ok1");
	cr_assert_str_eq(list[1].name, "crash1");
	free(list);
	cr_assert_eq(sdfs_vol_tree(s, ino, &t, &n), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_neq(t[i].state, SDFS_VOL_PENDING);
	free(t);
	/* and the new active takes snapshots as usual */
	cr_assert_eq(sdfs_vol_snap_create(s, ino, "after", &snap), 0);
	cr_assert_eq(snap.vid, live.vid);
}
