/*
 * vol_cow_test.c - copy-on-write after a snapshot made by the block
 * daemons (docs/volumes.md "Copy-on-write", blockd/copy.h, OBJ_COPY):
 * on 4 block daemons with 2 copies, so that the replicas of a chunk's
 * new object are often not those of its source and must read it from
 * a peer. A volume with data in every chunk is snapshotted, then
 * written in pieces in every chunk; the live volume and the snapshot
 * must read back byte for byte, every replica of each new object must
 * be the same, and the daemons must have copied the chunks, not the
 * client (its counters, libclient/vol_int.h: every one normally, more
 * than half asserted), also where one replica of the source was
 * corrupted on disk. And the same
 * with a block daemon SIGKILLed in the middle of the copies and
 * restarted: every acknowledged byte is there. And with one daemon
 * answering OBJ_COPY as a 2.1 daemon (UNKNOWN_OP; blockd/copy.h's test
 * hook), the client copies the chunks itself, correctly.
 *
 * Since 2.4 the new objects are *backed* (blockd/backing.h): the piece
 * is written, the rest read through the snapshot's object until each
 * daemon's filler copies it. With the filler stopped (test hook
 * no_fill) every new replica must be backed, and the live volume must
 * read back byte for byte while it is (the snapshot's data is nowhere
 * zero: an absent block read as zeros fails it), after a daemon
 * restarted, after more writes, and once the daemons, restarted with
 * the filler on, filled everything (no replica backed any more). A
 * snapshot deleted while the objects are backed by it is freed by
 * reclaim only after every daemon filled them (OBJ_FILL), and not at
 * all while a daemon is down.
 *
 * Through libsdfs (no mount). SDFS_VOL_COW=client (the old path, the
 * client copies) makes the counter checks fail: that is how this test
 * was checked to fail without the change.
 */
#include "tests/vol/vt.h"
#include "tests/cluster/objfile.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/oid.h"
#include "libclient/vol_int.h"

#define OBJ (256u << 10)        /* small chunks: many first writes */
#define CHUNKS 24u
#define SIZE (OBJ * CHUNKS)
#define BLK 4096u

static struct tcluster *tc;

static void wait_filled(uint64_t vid, unsigned copies, const char *what);

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){
		.blockd = 4, .copies = 2, .mds = 1,
		/* a deferred reclaim is tried again within a second */
		.set = "reclaim_interval_s=1" });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(vol_cow, .init = up, .fini = down, .timeout = 300);

/* A volume @name with pattern @tag in every byte, snapshotted as
 * "snap"; its writer handle into *@v, the model into @model. */
static uint64_t make_snapped(const char *name, uint64_t tag, uint8_t *model,
			     struct sdfs_vol **v, struct sdfs_vol_info *old)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t ino = vt_create(tc, name, SIZE, OBJ, NULL);
	struct sdfs_vol_info vi;
	int ret;

	ret = sdfs_vol_open(s, ino, SDFS_VOL_WRITE, NULL, v);
	cr_assert_eq(ret, 0, "open %s: %s", name, strerror(-ret));
	vt_fill(model, SIZE, 0, tag);
	ret = sdfs_vol_pwrite(*v, model, SIZE, 0);
	cr_assert_eq(ret, 0, "fill %s: %s", name, strerror(-ret));
	cr_assert_eq(sdfs_vol_flush(*v), 0);
	sdfs_vol_get_info(*v, old);
	ret = sdfs_vol_snap_create(s, ino, "snap", &vi);
	cr_assert_eq(ret, 0, "snapshot %s: %s", name, strerror(-ret));
	return ino;
}

/* Every up replica of each chunk object @vid owns holds the same bytes. */
static void replicas_agree(uint64_t vid, unsigned copies)
{
	struct sdfs *s = tcluster_client(tc);

	for (uint64_t c = 0; c < CHUNKS; c++) {
		struct sdfs_replica rep[4];
		uint64_t oid = oid_vdata(vid, c, copies);
		size_t n = 0;
		int ret = sdfs_obj_locate(s, oid, rep, 4, &n);

		cr_assert_eq(ret, 0, "locate chunk %" PRIu64 ": %s", c, strerror(-ret));
		cr_assert_eq(n, 2);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(rep[i].result, 0, "chunk %" PRIu64 " on node %u: %s", c,
				     rep[i].node_id, strerror(-rep[i].result));
		cr_assert_eq(rep[0].size, rep[1].size, "chunk %" PRIu64 ": sizes differ", c);
		cr_assert_eq(rep[0].csum, rep[1].csum, "chunk %" PRIu64 ": replicas "
			     "differ (nodes %u, %u)", c, rep[0].node_id, rep[1].node_id);
	}
}

/* The live state and the snapshot read back as @live and @snap. */
static void check(uint64_t ino, const uint8_t *live, const uint8_t *snap, const char *what)
{
	uint8_t *got = vt_alloc(SIZE);

	vt_read_vol(tc, ino, NULL, got, SIZE);
	vt_assert_same(got, live, SIZE, 0, OBJ, what);
	vt_read_vol(tc, ino, "snap", got, SIZE);
	vt_assert_same(got, snap, SIZE, 0, OBJ, "the snapshot");
	free(got);
}

Test(vol_cow, the_daemons_copy_every_chunk_even_from_a_corrupt_replica)
{
	struct sdfs *s = tcluster_client(tc);
	uint8_t *model = vt_alloc(SIZE), *snap = vt_alloc(SIZE), *buf = vt_alloc(2 * BLK);
	uint64_t seed = tseed("vol_cow"), ino;
	struct sdfs_vol_info old, vi;
	struct sdfs_vol *v;
	int ret;

	ino = make_snapped("cow", 1, model, &v, &old);
	memcpy(snap, model, SIZE);
	/* one replica of the first chunks' sources flipped on disk */
	for (uint64_t c = 0; c < 4; c++) {
		struct sdfs_replica rep[4];
		size_t n = 0;

		ret = sdfs_obj_locate(s, oid_vdata(old.vid, c, old.copies), rep, 4, &n);
		cr_assert_eq(ret, 0, "locate: %s", strerror(-ret));
		cr_assert_eq(rep[c % 2].result, 0);
		objfile_flip_data(rep[c % 2].path, 4 * BLK + 100 + c, 0x5a);
	}
	/* pieces into every chunk: the first touches make the copies (the
	 * last chunk's piece straddles nothing; a zeroing in chunk 5) */
	for (uint64_t c = 0; c < CHUNKS; c++) {
		uint64_t off = c * OBJ + (trand(&seed) % (OBJ / BLK - 1)) * BLK;
		size_t n = c % 3 ? BLK : 2 * BLK;

		if (c == 5) {
			ret = sdfs_vol_punch(v, off, n);
			memset(model + off, 0, n);
		} else {
			vt_fill(buf, n, off, 2);
			ret = sdfs_vol_pwrite(v, buf, n, off);
			memcpy(model + off, buf, n);
		}
		cr_assert_eq(ret, 0, "piece in chunk %" PRIu64 ": %s", c, strerror(-ret));
	}
	/* and a second piece into some: ours now, plain writes */
	for (uint64_t c = 0; c < CHUNKS; c += 5) {
		uint64_t off = c * OBJ + OBJ - BLK;

		vt_fill(buf, BLK, off, 3);
		cr_assert_eq(sdfs_vol_pwrite(v, buf, BLK, off), 0);
		memcpy(model + off, buf, BLK);
	}
	cr_assert_eq(sdfs_vol_flush(v), 0);
	cr_log_info("chunks copied by the daemons: %" PRIu64 ", by the client: %" PRIu64,
		    (uint64_t)atomic_load(&v->cow_daemon), (uint64_t)atomic_load(&v->cow_copied));
	/* Every one, normally; a daemon whose peer read ran out of the
	 * client's bound on a very loaded machine lets the client copy
	 * that chunk (blockd/copy.h), so not asserted as all. */
	cr_assert_gt(atomic_load(&v->cow_daemon), CHUNKS / 2, "the client copied %"
		     PRIu64 " chunks itself", (uint64_t)atomic_load(&v->cow_copied));
	cr_assert_eq(atomic_load(&v->cow_daemon) + atomic_load(&v->cow_copied), CHUNKS);
	sdfs_vol_get_info(v, &vi);
	cr_assert_neq(vi.vid, old.vid);
	replicas_agree(vi.vid, vi.copies);
	check(ino, model, snap, "the live volume");
	sdfs_vol_close(v);
	check(ino, model, snap, "the live volume after close");
	free(model);
	free(snap);
	free(buf);
}

struct writer {
	struct sdfs_vol *v;
	uint8_t *model;
	uint64_t seed;
	_Atomic uint64_t writes;
	atomic_int stop, err;
	pthread_t th;
};

/* 4 KiB pieces round the chunks, a new place each round: every first
 * write of a chunk is a copy. */
static void *write_loop(void *arg)
{
	struct writer *w = arg;
	uint8_t *buf = vt_alloc(BLK);

	for (uint64_t i = 0; !atomic_load(&w->stop); i++) {
		uint64_t c = i % CHUNKS, off = c * OBJ + (trand(&w->seed) % (OBJ / BLK)) * BLK;
		int ret;

		vt_fill(buf, BLK, off, 10 + i);
		ret = sdfs_vol_pwrite(w->v, buf, BLK, off);
		if (ret) {
			atomic_store(&w->err, ret);
			break;
		}
		memcpy(w->model + off, buf, BLK);
		atomic_fetch_add(&w->writes, 1);
	}
	free(buf);
	return NULL;
}

static void progress(struct writer *w, uint64_t n, const char *during)
{
	uint64_t from = atomic_load(&w->writes);
	int64_t end = tnow_ms() + 30000;

	while (atomic_load(&w->writes) < from + n && !atomic_load(&w->err) &&
	       tnow_ms() < end)
		tsleep_ms(5);
	cr_assert_eq(atomic_load(&w->err), 0, "a write failed %s: %s", during,
		     strerror(-atomic_load(&w->err)));
	cr_assert_geq(atomic_load(&w->writes), from + n, "no progress %s", during);
}

Test(vol_cow, a_blockd_killed_in_the_middle_of_the_copies)
{
	struct writer w = { .seed = tseed("vol_cow_kill") };
	uint8_t *snap = vt_alloc(SIZE);
	struct sdfs_vol_info old;
	uint64_t ino;

	w.model = vt_alloc(SIZE);
	ino = make_snapped("cowk", 4, w.model, &w.v, &old);
	memcpy(snap, w.model, SIZE);
	cr_assert_eq(pthread_create(&w.th, NULL, write_loop, &w), 0);
	progress(&w, CHUNKS / 3, "before the kill");
	cr_assert_eq(tcluster_kill(tc, "blockd.2"), 0);
	cr_log_info("blockd.2 killed after %" PRIu64 " writes", atomic_load(&w.writes));
	progress(&w, CHUNKS / 3, "with blockd.2 dead");
	cr_assert_eq(tcluster_restart(tc, "blockd.2"), 0);
	progress(&w, CHUNKS, "after blockd.2 came back");
	atomic_store(&w.stop, 1);
	pthread_join(w.th, NULL);
	cr_assert_eq(atomic_load(&w.err), 0, "a write failed: %s",
		     strerror(-atomic_load(&w.err)));
	cr_assert_eq(sdfs_vol_flush(w.v), 0);
	cr_log_info("%" PRIu64 " writes; chunks copied by the daemons: %" PRIu64
		    ", by the client: %" PRIu64, atomic_load(&w.writes),
		    (uint64_t)atomic_load(&w.v->cow_daemon),
		    (uint64_t)atomic_load(&w.v->cow_copied));
	cr_assert_gt(atomic_load(&w.v->cow_daemon), 0);
	check(ino, w.model, snap, "the live volume after the kill");
	sdfs_vol_close(w.v);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0, "healthy again");
	struct sdfs_vol_info vi;

	vt_info(tc, ino, NULL, &vi);
	replicas_agree(vi.vid, vi.copies);
	check(ino, w.model, snap, "the live volume, healthy again");
	/* the killed daemon's filler resumed: nothing stays backed */
	wait_filled(vi.vid, vi.copies, "after the kill");
	check(ino, w.model, snap, "the live volume, filled");
	free(snap);
	free(w.model);
}

Test(vol_cow, a_2_1_daemon_makes_the_client_copy)
{
	uint8_t *model = vt_alloc(SIZE), *snap = vt_alloc(SIZE), *buf = vt_alloc(BLK);
	struct sdfs_vol_info old;
	struct sdfs_vol *v;
	uint64_t ino;

	/* blockd.3 as a 2.1 daemon: it knows no OBJ_COPY */
	cr_assert_eq(tcluster_kill(tc, "blockd.3"), 0);
	setenv("SDFS_BLOCKD_FAULT", "no_copy", 1);
	cr_assert_eq(tcluster_restart(tc, "blockd.3"), 0);
	unsetenv("SDFS_BLOCKD_FAULT");
	ino = make_snapped("cow21", 7, model, &v, &old);
	memcpy(snap, model, SIZE);
	for (uint64_t c = 0; c < CHUNKS; c++) {
		uint64_t off = c * OBJ + (c % (OBJ / BLK)) * BLK;

		vt_fill(buf, BLK, off, 8);
		cr_assert_eq(sdfs_vol_pwrite(v, buf, BLK, off), 0, "chunk %" PRIu64, c);
		memcpy(model + off, buf, BLK);
	}
	cr_assert_eq(sdfs_vol_flush(v), 0);
	cr_log_info("chunks copied by the daemons: %" PRIu64 ", by the client: %" PRIu64,
		    (uint64_t)atomic_load(&v->cow_daemon), (uint64_t)atomic_load(&v->cow_copied));
	/* from the first chunk with a replica on blockd.3 on, the client */
	cr_assert_gt(atomic_load(&v->cow_copied), 0);
	cr_assert_eq(atomic_load(&v->cow_daemon) + atomic_load(&v->cow_copied), CHUNKS);
	check(ino, model, snap, "the live volume copied by the client");
	sdfs_vol_close(v);
	/* blockd.3 knows OBJ_COPY again, for the other tests */
	cr_assert_eq(tcluster_kill(tc, "blockd.3"), 0);
	cr_assert_eq(tcluster_restart(tc, "blockd.3"), 0);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0, "healthy again");
	free(model);
	free(snap);
	free(buf);
}

/* ---- backed objects (blockd/backing.h): the copy-on-write writes the
 * piece only, the rest reads through the snapshot's object until the
 * daemon's filler copied it ---- */

/* Restart every block daemon, with the filler stopped if @no_fill. */
static void restart_all(int no_fill)
{
	static const char *const names[] = { "blockd.0", "blockd.1", "blockd.2", "blockd.3" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cr_assert_eq(tcluster_kill(tc, names[i]), 0, "kill %s", names[i]);
		if (no_fill)
			setenv("SDFS_BLOCKD_FAULT", "no_fill", 1);
		cr_assert_eq(tcluster_restart(tc, names[i]), 0, "restart %s", names[i]);
		unsetenv("SDFS_BLOCKD_FAULT");
	}
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0, "healthy after the restarts");
}

/* How many replicas of @vid's chunk objects are backed now (their
 * files' headers); every replica must be there. */
static size_t backed_replicas(uint64_t vid, unsigned copies)
{
	struct sdfs *s = tcluster_client(tc);
	size_t backed = 0;

	for (uint64_t c = 0; c < CHUNKS; c++) {
		struct sdfs_replica rep[4];
		size_t n = 0;
		int ret = sdfs_obj_locate(s, oid_vdata(vid, c, copies), rep, 4, &n);

		cr_assert_eq(ret, 0, "locate chunk %" PRIu64 ": %s", c, strerror(-ret));
		for (size_t i = 0; i < n; i++) {
			struct objfile f;

			cr_assert_eq(rep[i].result, 0, "chunk %" PRIu64 " on node %u: %s", c,
				     rep[i].node_id, strerror(-rep[i].result));
			objfile_open(rep[i].path, &f);
			backed += !!(f.flags & OBJFILE_F_BACKED);
			objfile_close(&f);
		}
	}
	return backed;
}

/* Wait until no replica of @vid's chunks is backed (the filler done). */
static void wait_filled(uint64_t vid, unsigned copies, const char *what)
{
	int64_t end = tnow_ms() + 120000;
	size_t n;

	while ((n = backed_replicas(vid, copies)) && tnow_ms() < end)
		tsleep_ms(200);
	cr_assert_eq(n, 0, "%zu replicas still backed %s", n, what);
}

/* 4 KiB writes at random places of every chunk, and in every third
 * chunk a 512-byte one inside a block (its block's other bytes come
 * from the source): the model follows. */
static void scatter_writes(struct sdfs_vol *v, uint8_t *model, uint64_t *seed,
			   uint64_t tag)
{
	uint8_t *buf = vt_alloc(BLK);

	for (uint64_t c = 0; c < CHUNKS; c++) {
		for (int k = 0; k < 3; k++) {
			uint64_t off = c * OBJ + (trand(seed) % (OBJ / BLK)) * BLK;
			size_t n = BLK;
			int ret;

			if (k == 2 && c % 3 == 0) {
				off += 512 * (1 + trand(seed) % 6);
				n = 512;
			}
			vt_fill(buf, n, off, tag + (uint64_t)k);
			ret = sdfs_vol_pwrite(v, buf, n, off);
			cr_assert_eq(ret, 0, "write in chunk %" PRIu64 ": %s", c,
				     strerror(-ret));
			memcpy(model + off, buf, n);
		}
	}
	cr_assert_eq(sdfs_vol_flush(v), 0);
	free(buf);
}

/* Also the test that fails if an absent block read as zeros: the
 * snapshot's data is nowhere zero, and the live volume is read while
 * every new object is still backed. */
Test(vol_cow, backed_objects_read_through_until_filled_also_across_restarts)
{
	uint8_t *model = vt_alloc(SIZE), *snap = vt_alloc(SIZE);
	uint64_t seed = tseed("vol_cow_backed"), ino;
	struct sdfs_vol_info old, vi;
	struct sdfs_vol *v;
	size_t backed;

	restart_all(1);
	ino = make_snapped("cowb", 21, model, &v, &old);
	memcpy(snap, model, SIZE);
	scatter_writes(v, model, &seed, 30);
	sdfs_vol_get_info(v, &vi);
	cr_assert_eq(atomic_load(&v->cow_copied), 0, "the client copied chunks itself");
	backed = backed_replicas(vi.vid, vi.copies);
	cr_log_info("%zu of %u replicas backed after the writes", backed, CHUNKS * 2);
	cr_assert_eq(backed, CHUNKS * 2, "every new replica backed (the filler is stopped)");
	check(ino, model, snap, "the live volume, backed");
	replicas_agree(vi.vid, vi.copies);

	/* a daemon restarted while its objects are backed: still backed */
	cr_assert_eq(tcluster_kill(tc, "blockd.2"), 0);
	setenv("SDFS_BLOCKD_FAULT", "no_fill", 1);
	cr_assert_eq(tcluster_restart(tc, "blockd.2"), 0);
	unsetenv("SDFS_BLOCKD_FAULT");
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0, "healthy again");
	check(ino, model, snap, "the live volume, backed, after a restart");
	/* more writes into backed objects */
	scatter_writes(v, model, &seed, 40);
	check(ino, model, snap, "the live volume, written again while backed");

	/* the filler on again (restarted daemons resume from their store) */
	restart_all(0);
	wait_filled(vi.vid, vi.copies, "after the restarts with the filler on");
	check(ino, model, snap, "the live volume, filled");
	replicas_agree(vi.vid, vi.copies);
	sdfs_vol_close(v);
	free(model);
	free(snap);
}

/* How many copies of @vid's chunk objects the up nodes hold. */
static size_t copies_of(uint64_t vid, unsigned copies)
{
	struct sdfs *s = tcluster_client(tc);
	size_t left = 0;

	for (uint64_t c = 0; c < CHUNKS; c++) {
		struct sdfs_replica rep[4];
		size_t n = 0;
		int ret = sdfs_obj_locate(s, oid_vdata(vid, c, copies), rep, 4, &n);

		cr_assert_eq(ret, 0, "locate: %s", strerror(-ret));
		for (size_t i = 0; i < n; i++)
			left += rep[i].result == 0;
	}
	return left;
}

/* With a block daemon down, its backed objects cannot be filled: reclaim
 * frees nothing of the snapshot's until it is back. */
Test(vol_cow, a_snapshot_delete_waits_for_a_down_daemon)
{
	struct sdfs *s = tcluster_client(tc);
	uint8_t *model = vt_alloc(SIZE), *got = vt_alloc(SIZE);
	uint64_t seed = tseed("vol_cow_down"), ino;
	struct sdfs_reclaim_status rs;
	struct sdfs_vol_info old, vi;
	struct sdfs_vol *v;
	uint64_t sweeps;
	size_t before, left;
	int64_t end;
	int ret;

	restart_all(1);
	ino = make_snapped("cowdn", 71, model, &v, &old);
	scatter_writes(v, model, &seed, 80);
	sdfs_vol_get_info(v, &vi);
	sdfs_vol_close(v);
	cr_assert_eq(tcluster_kill(tc, "blockd.3"), 0);
	before = copies_of(old.vid, old.copies);
	cr_assert_gt(before, 0);
	cr_assert_eq(sdfs_vol_reclaim_status(s, &rs), 0);
	sweeps = rs.sweeps;
	ret = sdfs_vol_snap_delete(s, ino, "snap");
	cr_assert_eq(ret, 0, "delete the snapshot: %s", strerror(-ret));
	/* two passes of reclaim over the family since the delete */
	end = tnow_ms() + 120000;
	do {
		cr_assert_lt(tnow_ms(), end, "no reclaim pass");
		tsleep_ms(500);
		cr_assert_eq(sdfs_vol_reclaim_status(s, &rs), 0);
	} while (rs.sweeps < sweeps + 2);
	left = copies_of(old.vid, old.copies);
	cr_log_info("copies of the snapshot's objects on the up nodes: %zu before the "
		    "delete, %zu after %" PRIu64 " reclaim passes", before, left,
		    rs.sweeps - sweeps);
	cr_assert_eq(left, before, "reclaim freed objects with a daemon down");
	/* back: filled, then freed */
	cr_assert_eq(tcluster_restart(tc, "blockd.3"), 0);
	end = tnow_ms() + 120000;
	while ((left = copies_of(old.vid, old.copies)) != 0) {
		cr_assert_lt(tnow_ms(), end, "%zu objects of the deleted snapshot remain", left);
		tsleep_ms(500);
	}
	cr_assert_eq(backed_replicas(vi.vid, vi.copies), 0, "filled before the free");
	vt_read_vol(tc, ino, NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, "the live volume after the reclaim");
	replicas_agree(vi.vid, vi.copies);
	restart_all(0);
	free(model);
	free(got);
}

/* Snapshots taken one after the other while every new object is still
 * backed: each level's objects are backed by the level before's, which
 * are themselves backed (a chain three deep, across the nodes, since a
 * chunk's copies seldom sit on its source's). Every level reads back
 * byte for byte while backed, after the middle snapshot is deleted
 * (reclaim fills what its objects back first), and once filled. */
Test(vol_cow, a_chain_of_backed_objects_across_snapshots)
{
	struct sdfs *s = tcluster_client(tc);
	static const char *const names[] = { "snap", "snap2", "snap3" };
	uint8_t *model = vt_alloc(SIZE), *lv[3], *got = vt_alloc(SIZE);
	uint64_t seed = tseed("vol_cow_chain"), ino;
	struct sdfs_vol_info old, vi, mid = { 0 }, top = { 0 };
	struct sdfs_vol *v;
	int64_t end;
	size_t left;
	int ret;

	restart_all(1);
	ino = make_snapped("cowch", 81, model, &v, &old);
	for (int i = 0; i < 3; i++) {
		lv[i] = vt_alloc(SIZE);
		memcpy(lv[i], model, SIZE);     /* what names[i] holds */
		scatter_writes(v, model, &seed, 90 + 10 * (uint64_t)i);
		sdfs_vol_get_info(v, &vi);
		cr_assert_eq(backed_replicas(vi.vid, vi.copies), CHUNKS * 2,
			     "level %d: every new replica backed", i + 1);
		if (i == 0)
			mid = vi;               /* the state snap2 freezes */
		if (i == 1)
			top = vi;               /* snap3's, backed by snap2's */
		if (i < 2) {
			ret = sdfs_vol_snap_create(s, ino, names[i + 1], NULL);
			cr_assert_eq(ret, 0, "snapshot %s: %s", names[i + 1], strerror(-ret));
		}
	}
	cr_assert_eq(atomic_load(&v->cow_copied), 0, "the client copied chunks itself");
	for (int i = 0; i < 3; i++) {
		vt_read_vol(tc, ino, names[i], got, SIZE);
		vt_assert_same(got, lv[i], SIZE, 0, OBJ, names[i]);
	}
	vt_read_vol(tc, ino, NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, "the live volume, three deep");
	replicas_agree(vi.vid, vi.copies);

	/* the middle one (snap2: its objects back snap3's, and are backed
	 * by snap's) deleted: freed only after what it backs is filled */
	ret = sdfs_vol_snap_delete(s, ino, "snap2");
	cr_assert_eq(ret, 0, "delete snap2: %s", strerror(-ret));
	end = tnow_ms() + 120000;
	while ((left = copies_of(mid.vid, mid.copies)) != 0) {
		cr_assert_lt(tnow_ms(), end, "%zu objects of snap2 remain", left);
		tsleep_ms(300);
	}
	cr_assert_eq(copies_of(old.vid, old.copies), CHUNKS * 2, "snap's objects kept");
	cr_assert_eq(backed_replicas(top.vid, top.copies), 0,
		     "snap3's objects filled before snap2's were freed");
	for (int i = 0; i < 3; i += 2) {
		vt_read_vol(tc, ino, names[i], got, SIZE);
		vt_assert_same(got, lv[i], SIZE, 0, OBJ, names[i]);
	}
	vt_read_vol(tc, ino, NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, "the live volume, snap2 deleted");

	restart_all(0);
	wait_filled(vi.vid, vi.copies, "the live level, after the chain");
	vt_read_vol(tc, ino, NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, "the live volume, filled");
	vt_read_vol(tc, ino, "snap3", got, SIZE);
	vt_assert_same(got, lv[2], SIZE, 0, OBJ, "snap3, filled");
	replicas_agree(vi.vid, vi.copies);
	sdfs_vol_close(v);
	for (int i = 0; i < 3; i++)
		free(lv[i]);
	free(model);
	free(got);
}
