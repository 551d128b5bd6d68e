/*
 * vol_ec_test.c - erasure-coded volumes end to end (docs/ec.md "EC
 * volumes"): 4 block daemons, volumes of policy ec=2+1 (chunks being
 * written: 2 copies; sealed chunks: 2+1 stripes), 1 MiB objects, I/O
 * through libsdfs.
 *
 *   seal_read       a pattern written (full, partial and unwritten
 *                   chunks), sealed: every written chunk's entry says
 *                   sealed, its replicated object is gone, its 3 strip
 *                   files are on disk; read back byte-exact by the
 *                   writer, a reader and a reopened writer; a write into
 *                   a sealed chunk and a punch of one leave no stripe
 *                   (tombstones only) and read back right. Logs the
 *                   seal rate and the bytes stored per byte.
 *   policy_cli      `vol create --policy ec=3+2` refused in one line;
 *                   `fs setpolicy DIR ec=2+1`: fs stat says so, a volume
 *                   made in DIR is ec=2+1 (vol info, vol tree), a file
 *                   made in DIR has 2 copies; `vol seal --json`; 4+2 on
 *                   4 nodes: writes work, seals fail (ENODEV), clearly.
 *   holders_killed  a sealed volume overwritten at random while a strip
 *                   holder (m = 1) is SIGKILLed: every acknowledged
 *                   write reads back, sealed chunks degraded-read; the
 *                   rest sealed with the node out, read back again.
 *   writer_crash    `sdfs vol seal` killed (SDFS_VOL_FAULT) between its
 *                   first sdfs_ec_put and the index update: the chunk
 *                   still reads from its replicated object; a later seal
 *                   seals everything, one version of each stripe.
 *   seal_races      writes into random chunks while another thread
 *                   seals every chunk in a loop and the background
 *                   sealer (ec_seal_after_s 1) runs: every acknowledged
 *                   write reads back; left alone, the sealer seals all.
 *   vol_ec42::two_holders_killed  4+2 on 7 nodes: sealed (6 strip files
 *                   per chunk, no replicated object), two holders of
 *                   data strips SIGKILLed: every chunk reads back
 *                   (degraded, strips rebuilt), writes into sealed
 *                   chunks unseal from the degraded stripes. Logs the
 *                   seal rate and bytes per byte.
 *   vol_ec_backed::unseal  (the filler stopped) a 4 KiB write into every sealed
 *                   chunk: each new replica is backed by the chunk's
 *                   stripe (header flags), the stripe stays; the volume
 *                   reads back byte-exact while backed (fails if absent
 *                   blocks read as zeros: the sealed data is nowhere
 *                   zero), with a strip holder SIGKILLed (degraded
 *                   read-through), after its restart; the filler on:
 *                   nothing backed, the own stripes then removed (only
 *                   tombstones). SDFS_VOL_UNSEAL=client: the whole-chunk
 *                   unseal (not backed, the stripe gone at once).
 *   snapshot        sealed chunks frozen in a snapshot; writes into them
 *                   from the live state (the snapshot's stripes stay),
 *                   sealed again and written again (its own stripe
 *                   goes); both states read right; deleting the
 *                   snapshot, then the volume: reclaim tombstones the
 *                   stripes nothing refers to, only them.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/oid.h"
#include "tests/cluster/objfile.h"
#include "common/policy.h"
#include "tests/vol/vt.h"
#include "libclient/vol_int.h"

#define K 2
#define M 1
#define NODES 4
#define OSZ (1u << 20)
#define CHUNKS 12
#define SIZE ((uint64_t)CHUNKS * OSZ)

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NODES, .mds = 1,
						     .out_grace_s = 3 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(vol_ec, .init = up, .fini = down, .timeout = 240);

static struct sdfs *cl(void)
{
	return tcluster_client(tc);
}

static uint64_t mkvol(const char *name, uint64_t size)
{
	struct sdfs_stat st;
	int ret = sdfs_vol_create(cl(), 1, name, 0600, 0, 0, size, policy_ec(K, M), OSZ, &st);

	cr_assert_eq(ret, 0, "vol create %s: %s", name, strerror(-ret));
	cr_assert_eq(st.copies, policy_ec(K, M));
	return st.ino;
}

static struct sdfs_vol *wopen(uint64_t ino)
{
	struct sdfs_vol *v;
	int ret = sdfs_vol_open(cl(), ino, SDFS_VOL_WRITE | SDFS_VOL_WAIT, "vol_ec", &v);

	cr_assert_eq(ret, 0, "open for writing: %s", strerror(-ret));
	return v;
}

/* Write pattern @tag at [off, off+len) through @v and into @model. */
static void put(struct sdfs_vol *v, uint8_t *model, uint64_t off, size_t len, uint64_t tag)
{
	vt_vol_put(v, model, off, len, tag);
}

/* All of @v reads as @model. */
static void check(struct sdfs_vol *v, const uint8_t *model, const char *what)
{
	vt_vol_check(v, model, 0, SIZE, OSZ, what);
}

/* A new read-only handle of the live state (@snap NULL) or a snapshot
 * reads as @model. */
static void check_fresh(uint64_t ino, const char *snap, const uint8_t *model,
			const char *what)
{
	struct sdfs_vol *v;
	int ret = snap ? sdfs_vol_open_snap(cl(), ino, snap, &v) :
		  sdfs_vol_open(cl(), ino, 0, NULL, &v);

	cr_assert_eq(ret, 0, "%s: open: %s", what, strerror(-ret));
	check(v, model, what);
	sdfs_vol_close(v);
}

/* Strip files of EC object @oid on every disk: with data (*@data, and
 * their bytes *@bytes) and header only (returned: tombstones). */
static size_t strips(uint64_t oid, size_t *data, uint64_t *bytes)
{
	return vt_strips(tc, oid, data, bytes);
}

static int repl_exists_c(uint64_t vid, uint64_t chunk, unsigned copies)
{
	struct sdfs_obj_info oi;
	int ret = sdfs_obj_stat(cl(), oid_vdata(vid, chunk, copies), &oi);

	cr_assert(ret == 0 || ret == -ENOENT, "stat: %s", strerror(-ret));
	return ret == 0;
}

static int repl_exists(uint64_t vid, uint64_t chunk)
{
	return repl_exists_c(vid, chunk, M + 1);
}

/* Chunk @c of @v's live vid is sealed for real: entry, no replicated
 * object, K + M strip files with data. */
static void assert_sealed(struct sdfs_vol *v, uint64_t c)
{
	struct sdfs_vol_info vi;
	size_t data;

	sdfs_vol_get_info(v, &vi);
	cr_assert(sdfs_vol_chunk_sealed(v, c), "chunk %" PRIu64 " not sealed", c);
	cr_assert_eq(sdfs_vol_chunk_owner(v, c), vi.vid);
	cr_assert(!repl_exists(vi.vid, c), "chunk %" PRIu64 ": replicated object left", c);
	strips(oid_vstripe(vi.vid, c), &data, NULL);
	cr_assert_eq(data, K + M, "chunk %" PRIu64 ": %zu strip files", c, data);
}

/* Chunk @c of vid @vid has no stripe left: only tombstones, if any. */
static void assert_no_stripe(uint64_t vid, uint64_t c)
{
	size_t data;

	strips(oid_vstripe(vid, c), &data, NULL);
	cr_assert_eq(data, 0, "vid %" PRIu64 " chunk %" PRIu64 ": %zu strip files with data",
		     vid, c, data);
}

static void seal_all(struct sdfs_vol *v, uint64_t want, struct sdfs_vol_seal_stat *st)
{
	int ret = sdfs_vol_seal(v, NULL, NULL, st);

	cr_assert_eq(ret, 0, "seal: %s", strerror(-ret));
	cr_assert_eq(st->sealed, want, "sealed %" PRIu64 " of %" PRIu64 " (skipped %"
		     PRIu64 ")", st->sealed, want, st->skipped);
}

/* Chunks 0..9 but 7: full with tag 1, chunk 3 only partly. */
static uint64_t write_base(struct sdfs_vol *v, uint8_t *model)
{
	uint64_t n = 0;

	for (uint64_t c = 0; c < 10; c++) {
		if (c == 7)
			continue;
		if (c == 3)
			put(v, model, c * OSZ + 100, 5000, 1);
		else
			put(v, model, c * OSZ, OSZ, 1);
		n++;
	}
	return n;
}

Test(vol_ec, seal_read)
{
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino = mkvol("v", SIZE), n, disk = 0;
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol_info vi;
	struct sdfs_vol *v = wopen(ino);
	int64_t t0;

	sdfs_vol_get_info(v, &vi);
	n = write_base(v, model);
	cr_assert_eq(sdfs_vol_flush(v), 0);
	for (uint64_t c = 0; c < 10; c++) {
		cr_assert(!sdfs_vol_chunk_sealed(v, c));
		cr_assert_eq(repl_exists(vi.vid, c), c != 7, "chunk %" PRIu64, c);
	}
	check(v, model, "written, replicated");

	t0 = tnow_ms();
	seal_all(v, n, &st);
	t0 = tnow_ms() - t0;
	for (uint64_t c = 0; c < 10; c++) {
		size_t data;
		uint64_t bytes;

		if (c == 7) {
			cr_assert(!sdfs_vol_chunk_sealed(v, c));
			continue;
		}
		assert_sealed(v, c);
		strips(oid_vstripe(vi.vid, c), &data, &bytes);
		disk += bytes;
	}
	cr_log_info("sealed %" PRIu64 " chunks, %" PRIu64 " bytes in %" PRId64 " ms (%.1f "
		    "MB/s); strip files hold %" PRIu64 " bytes: %.2f bytes per byte "
		    "(replicated while written: %u; copies=3: 3)", st.sealed, st.bytes, t0,
		    t0 > 0 ? (double)st.bytes / 1e3 / (double)t0 : 0.0, disk,
		    (double)disk / (double)st.bytes, M + 1);
	cr_assert_lt(disk, st.bytes * 2, "stripes take %" PRIu64 " for %" PRIu64, disk,
		     st.bytes);
	check(v, model, "sealed, the writer");
	check_fresh(ino, NULL, model, "sealed, a reader");

	/* a write into a sealed chunk: replicated again, its stripe gone */
	t0 = tnow_ms();
	put(v, model, 2 * OSZ + 777, 10000, 2);
	t0 = tnow_ms() - t0;
	{
		int64_t t1 = tnow_ms();

		put(v, model, 2 * OSZ + 20000, 10000, 2);
		cr_log_info("a 10000-byte write into a sealed 1 MiB chunk took %" PRId64 " ms "
			    "(unseal), the next one %" PRId64 " ms", t0, tnow_ms() - t1);
	}
	cr_assert(!sdfs_vol_chunk_sealed(v, 2));
	cr_assert(repl_exists(vi.vid, 2));
	/* backed by its stripe until filled: the stripe goes after */
	cr_assert_eq(vol_stripe_gc(v, 0), 0);
	assert_no_stripe(vi.vid, 2);
	/* a write across two sealed chunks, partly past a short one */
	put(v, model, 4 * OSZ - 300, 600, 3);
	cr_assert(!sdfs_vol_chunk_sealed(v, 3) && !sdfs_vol_chunk_sealed(v, 4));
	/* a punch of a whole sealed chunk: a hole, its stripe gone */
	cr_assert_eq(sdfs_vol_punch(v, 5 * OSZ, OSZ), 0);
	memset(model + 5 * OSZ, 0, OSZ);
	cr_assert_eq(sdfs_vol_chunk_owner(v, 5), 0);
	assert_no_stripe(vi.vid, 5);
	/* zeroing part of a sealed chunk */
	cr_assert_eq(sdfs_vol_punch(v, 6 * OSZ + 4096, 8192), 0);
	memset(model + 6 * OSZ + 4096, 0, 8192);
	check(v, model, "written after the seal");
	sdfs_vol_close(v);
	check_fresh(ino, NULL, model, "reopened, a reader");

	/* the index keeps the sealed bits: a new writer sees them */
	v = wopen(ino);
	cr_assert(sdfs_vol_chunk_sealed(v, 0) && sdfs_vol_chunk_sealed(v, 9));
	cr_assert(!sdfs_vol_chunk_sealed(v, 2));
	check(v, model, "a new writer");
	seal_all(v, 4, &st);    /* 2, 3, 4, 6 */
	check(v, model, "sealed again");
	sdfs_vol_close(v);
	free(model);
}

Test(vol_ec, policy_cli)
{
	struct sdfs_stat d, f;
	char *out = NULL, *err = NULL;
	struct sdfs_vol *v;
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino;

	cr_assert_neq(tcluster_sdfs(tc, &out, &err, "vol create /bad 8M --policy ec=3+2"), 0);
	cr_assert(strstr(err, "codes are ec=2+1, ec=4+2 and ec=8+3"), "%s", err);
	cr_assert_eq(tcount_lines(err), 1, "%s", err);
	free(out);
	free(err);
	cr_assert_neq(tcluster_sdfs(tc, NULL, &err, "vol create /bad 8M --policy ec=8+3"), 0,
		      "8+3 on 4 nodes taken without --force");
	free(err);

	cr_assert_eq(sdfs_ns_mkdir(cl(), 1, "ecd", 0755, 0, 0, &d), 0);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "fs setpolicy /ecd ec=2+1"), 0);
	cr_assert(strstr(out, "ec=2+1 for volumes made in it"), "%s", out);
	free(out);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "fs stat /ecd --json"), 0);
	cr_assert(strstr(out, "\"policy\": \"ec=2+1\""), "%s", out);
	free(out);
	cr_assert_eq(tcluster_sdfs(tc, NULL, NULL, "vol create /ecd/v 12M --obj-size 1M"), 0);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "vol info /ecd/v --json"), 0);
	cr_assert(strstr(out, "\"copies\": 2") && strstr(out, "\"policy\": \"ec=2+1\""),
		  "%s", out);
	free(out);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "vol tree /ecd/v --json"), 0);
	cr_assert(strstr(out, "\"policy\": \"ec=2+1\""), "%s", out);
	free(out);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "vol tree /ecd/v"), 0);
	cr_assert(strstr(out, "policy ec=2+1"), "%s", out);
	free(out);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "vol info /ecd/v"), 0);
	cr_assert(strstr(out, "policy     ec=2+1"), "%s", out);
	free(out);
	cr_assert_eq(sdfs_ns_create(cl(), d.ino, "file", 0644, 0, 0, &f), 0);
	/* a file takes the code (docs/ec.md "EC files"): m + 1 copies while
	 * replicated, as the oid helpers see */
	cr_assert_eq(f.copies, policy_ec(K, M), "a file under ec=2+1: copies %#x", f.copies);
	cr_assert_eq(policy_copies(f.copies), M + 1);

	cr_assert_eq(sdfs_ns_lookup(cl(), d.ino, "v", &f), 0);
	ino = f.ino;
	cr_assert_eq(f.copies, policy_ec(K, M));
	v = wopen(ino);
	put(v, model, 0, 3 * OSZ + 5, 4);
	sdfs_vol_close(v);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "vol seal /ecd/v --json"), 0);
	cr_assert(strstr(out, "\"sealed\": 4"), "%s", out);
	free(out);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "vol info /ecd/v"), 0);
	cr_assert(strstr(out, "sealed     4 of 4 chunks with data"), "%s", out);
	free(out);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "vol info /ecd/v --json"), 0);
	cr_assert(strstr(out, "\"chunks_written\": 4, \"chunks_sealed\": 4"), "%s", out);
	free(out);
	cr_assert_neq(tcluster_sdfs(tc, NULL, &err, "vol seal /ecd/file"), 0);
	free(err);
	check_fresh(ino, NULL, model, "sealed by the CLI");

	/* 4+2 on 4 nodes (made through the API: the CLI wants --force):
	 * writes work (3 copies), seals fail clearly and change nothing */
	struct sdfs_vol_seal_stat st;

	cr_assert_eq(sdfs_vol_create(cl(), 1, "wide", 0600, 0, 0, SIZE, policy_ec(4, 2), OSZ,
				     &f), 0);
	v = wopen(f.ino);
	memset(model, 0, SIZE);
	put(v, model, 0, 2 * OSZ, 6);
	cr_assert_eq(sdfs_vol_seal(v, NULL, NULL, &st), -ENODEV);
	cr_assert(!sdfs_vol_chunk_sealed(v, 0));
	check(v, model, "4+2 on 4 nodes");
	sdfs_vol_close(v);
	cr_assert_eq(tcluster_sdfs(tc, NULL, &err, "vol seal /wide"), 1);
	cr_assert(strstr(err, "cannot place 4+2 strips"), "%s", err);
	free(err);
	check_fresh(f.ino, NULL, model, "4+2 on 4 nodes, a reader");
	free(model);
}

struct writer {
	struct sdfs_vol *v;
	uint8_t *model;
	atomic_int stop;
	unsigned writes;
	uint64_t seed;
	uint64_t span;          /* bytes written into: [0, span) */
	uint64_t sealed;        /* sealer_loop: chunks it sealed */
};

/* Overwrite random pieces of the first half until told to stop (the
 * second half stays sealed); the model has the acknowledged ones. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t *b = malloc(OSZ);

	while (!atomic_load(&w->stop)) {
		uint64_t r = trand(&w->seed), off = r % (w->span - 65536);
		size_t len = 1 + (size_t)(trand(&w->seed) % 65536);
		uint64_t tag = 100 + w->writes;
		int ret;

		vt_fill(b, len, off, tag);
		ret = sdfs_vol_pwrite(w->v, b, len, off);
		cr_assert_eq(ret, 0, "write %u: %s", w->writes, strerror(-ret));
		memcpy(w->model + off, b, len);
		w->writes++;
	}
	free(b);
	return NULL;
}

Test(vol_ec, holders_killed)
{
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino = mkvol("v", SIZE);
	struct sdfs_vol *v = wopen(ino);
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol_info vi;
	struct writer w = { .v = v, .model = model, .seed = tseed("vol_ec holders_killed"),
			    .span = SIZE / 2 };
	uint32_t ids[K + M];
	unsigned degraded = 0, rebuilt = 0;
	char name[32];
	pthread_t th;

	sdfs_vol_get_info(v, &vi);
	put(v, model, 0, SIZE, 1);
	seal_all(v, CHUNKS, &st);
	cr_assert_eq(sdfs_ec_locate(cl(), oid_vstripe(vi.vid, 0), K, M, ids, K + M), K + M);
	cr_assert(tcluster_node_name(tc, ids[0], name, sizeof(name)));

	for (uint64_t c = CHUNKS / 2; c < CHUNKS; c++) {
		uint32_t id = tcluster_node_id(tc, name);

		cr_assert_eq(sdfs_ec_locate(cl(), oid_vstripe(vi.vid, c), K, M, ids, K + M),
			     K + M);
		for (unsigned p = 0; p < K; p++)
			degraded += ids[p] == id;
	}
	pthread_create(&th, NULL, writer_main, &w);
	tsleep_ms(300);
	cr_log_info("killing %s (strip 0 of chunk 0) after %u writes", name, w.writes);
	cr_assert_eq(tcluster_kill(tc, name), 0);
	tsleep_ms(4000);       /* the node goes out after 3 s */
	atomic_store(&w.stop, 1);
	pthread_join(th, NULL);
	cr_log_info("%u writes acknowledged", w.writes);
	cr_assert_gt(w.writes, 10);
	check(v, model, "a holder killed");
	check_fresh(ino, NULL, model, "a holder killed, a reader");
	/* the second half is still sealed, read degraded where the node
	 * held a strip */
	for (uint64_t c = CHUNKS / 2; c < CHUNKS; c++) {
		struct sdfs_ec_rstat rs;
		uint8_t *b = malloc(OSZ);

		cr_assert(sdfs_vol_chunk_sealed(v, c));
		cr_assert_eq(sdfs_ec_read_ex(cl(), oid_vstripe(vi.vid, c), K, M, b, OSZ, 0, &rs),
			     (ssize_t)OSZ);
		cr_assert(!memcmp(b, model + c * OSZ, OSZ), "chunk %" PRIu64, c);
		rebuilt += rs.rebuilt;
		free(b);
	}
	cr_log_info("%u sealed chunks had a data strip on %s; %u strips rebuilt reading "
		    "them", degraded, name, rebuilt);

	/* with the node out, 3 nodes still place 2+1: seal what the
	 * writes made replicated */
	cr_assert_eq(tcluster_wait_state(tc, name, "down", 30000), 0);
	cr_assert_eq(sdfs_vol_seal(v, NULL, NULL, &st), 0);
	cr_log_info("resealed %" PRIu64 " chunks with %s down", st.sealed, name);
	check(v, model, "resealed with a node down");
	sdfs_vol_close(v);
	check_fresh(ino, NULL, model, "resealed, a reader");
	free(model);
}

Test(vol_ec, writer_crash)
{
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino = mkvol("v", SIZE), n;
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol_info vi;
	struct sdfs_vol *v = wopen(ino);
	size_t data;
	int ret;

	sdfs_vol_get_info(v, &vi);
	n = write_base(v, model);
	sdfs_vol_close(v);
	setenv("SDFS_VOL_FAULT", "seal_after_put", 1);
	ret = tcluster_sdfs(tc, NULL, NULL, "vol seal /v");
	unsetenv("SDFS_VOL_FAULT");
	cr_assert_eq(ret, 99, "vol seal with the fault: %d", ret);
	/* chunk 0's stripe was put, its entry not updated */
	strips(oid_vstripe(vi.vid, 0), &data, NULL);
	cr_assert_eq(data, K + M, "the stripe put before the crash: %zu files", data);
	check_fresh(ino, NULL, model, "after the crash, a reader");

	v = wopen(ino);
	cr_assert(!sdfs_vol_chunk_sealed(v, 0));
	cr_assert(repl_exists(vi.vid, 0));
	check(v, model, "after the crash, a writer");
	put(v, model, 100, 200, 5);     /* the replicated form is the one */
	seal_all(v, n, &st);
	for (uint64_t c = 0; c < 10; c++)
		if (c != 7)
			assert_sealed(v, c);
	check(v, model, "sealed after the crash");
	sdfs_vol_close(v);
	check_fresh(ino, NULL, model, "sealed after the crash, a reader");
	free(model);
}

/* Wait until the stripe of (@vid, @c) has no data file left. */
static void wait_no_stripe(uint64_t vid, uint64_t c)
{
	int64_t end = tnow_ms() + 60000;
	size_t data;

	for (;;) {
		strips(oid_vstripe(vid, c), &data, NULL);
		if (!data)
			return;
		cr_assert_lt(tnow_ms(), end, "vid %" PRIu64 " chunk %" PRIu64 ": %zu strip "
			     "files still hold data", vid, c, data);
		tsleep_ms(200);
	}
}

Test(vol_ec, snapshot)
{
	uint8_t *model = calloc(1, SIZE), *snap = malloc(SIZE);
	uint64_t ino = mkvol("v", SIZE);
	struct sdfs_vol *v = wopen(ino);
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol_info vi, v1, v2;
	size_t data, tomb;

	sdfs_vol_get_info(v, &v1);
	for (uint64_t c = 0; c < 6; c++)
		put(v, model, c * OSZ, OSZ, 1);
	seal_all(v, 6, &st);
	cr_assert_eq(sdfs_vol_snap_create(cl(), ino, "s1", &vi), 0);
	memcpy(snap, model, SIZE);

	/* into the snapshot's sealed chunk 1: ours, replicated; its
	 * stripe stays for the snapshot */
	put(v, model, OSZ + 4096, 8192, 2);
	sdfs_vol_get_info(v, &v2);
	cr_assert_neq(v2.vid, v1.vid);
	cr_assert_eq(sdfs_vol_chunk_owner(v, 1), v2.vid);
	cr_assert(!sdfs_vol_chunk_sealed(v, 1));
	cr_assert(sdfs_vol_chunk_sealed(v, 0) && sdfs_vol_chunk_owner(v, 0) == v1.vid);
	strips(oid_vstripe(v1.vid, 1), &data, NULL);
	cr_assert_eq(data, K + M);
	check(v, model, "live, written after the snapshot");
	check_fresh(ino, "s1", snap, "the snapshot");

	/* ours sealed (only chunk 1 is ours), then written again: its own
	 * stripe goes, the snapshot's stays */
	seal_all(v, 1, &st);
	assert_sealed(v, 1);
	put(v, model, OSZ + 100, 10, 3);
	cr_assert_eq(vol_stripe_gc(v, 0), 0);
	assert_no_stripe(v2.vid, 1);
	strips(oid_vstripe(v1.vid, 1), &data, NULL);
	cr_assert_eq(data, K + M);
	seal_all(v, 1, &st);
	check(v, model, "live, resealed");
	check_fresh(ino, "s1", snap, "the snapshot, again");
	sdfs_vol_close(v);

	/* the snapshot deleted: its chunk 1 is no one's any more, chunks
	 * 0 and 2..5 are the live state's */
	cr_assert_eq(sdfs_vol_snap_delete(cl(), ino, "s1"), 0);
	wait_no_stripe(v1.vid, 1);
	tomb = strips(oid_vstripe(v1.vid, 1), &data, NULL);
	cr_assert_gt(tomb, 0, "no tombstone for the removed stripe");
	for (uint64_t c = 0; c < 6; c++) {
		if (c == 1)
			continue;
		strips(oid_vstripe(v1.vid, c), &data, NULL);
		cr_assert_eq(data, K + M, "chunk %" PRIu64 " of the live state lost %zu strips",
			     c, K + M - data);
	}
	check_fresh(ino, NULL, model, "live, the snapshot reclaimed");

	/* the volume deleted: every stripe goes */
	cr_assert_eq(sdfs_ns_unlink(cl(), 1, "v"), 0);
	for (uint64_t c = 0; c < 6; c++)
		wait_no_stripe(v1.vid, c);
	wait_no_stripe(v2.vid, 1);
	free(model);
	free(snap);
}

static void *sealer_loop(void *arg)
{
	struct writer *w = arg;
	struct sdfs_vol_seal_stat st;

	while (!atomic_load(&w->stop)) {
		int ret = sdfs_vol_seal(w->v, NULL, NULL, &st);

		cr_assert_eq(ret, 0, "seal: %s", strerror(-ret));
		w->sealed += st.sealed;
	}
	return NULL;
}

Test(vol_ec, seal_races)
{
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino = mkvol("v", SIZE);
	struct sdfs_vol *v;
	struct writer w = { .model = model, .seed = tseed("vol_ec seal_races"), .span = SIZE };
	struct writer sw = { 0 };
	struct sdfs_vol_info vi;
	pthread_t th, th2;
	int64_t end;
	uint64_t left;

	sdfs_set_ec_seal_after(cl(), 1);
	v = wopen(ino);
	sdfs_vol_get_info(v, &vi);
	w.v = sw.v = v;
	put(v, model, 0, SIZE, 1);
	pthread_create(&th, NULL, writer_main, &w);
	pthread_create(&th2, NULL, sealer_loop, &sw);
	tsleep_ms(3000);
	atomic_store(&w.stop, 1);
	atomic_store(&sw.stop, 1);
	pthread_join(th, NULL);
	pthread_join(th2, NULL);
	cr_log_info("%u writes, %" PRIu64 " seals racing them", w.writes, sw.sealed);
	cr_assert_gt(w.writes, 50);
	cr_assert_gt(sw.sealed, 10);
	check(v, model, "writes racing seals");
	/* left alone: the background sealer seals every chunk */
	end = tnow_ms() + 20000;
	do {
		left = 0;
		for (uint64_t c = 0; c < CHUNKS; c++)
			left += !sdfs_vol_chunk_sealed(v, c);
		if (left)
			tsleep_ms(200);
	} while (left && tnow_ms() < end);
	cr_assert_eq(left, 0, "%" PRIu64 " chunks not sealed by the background sealer", left);
	for (uint64_t c = 0; c < CHUNKS; c++)
		assert_sealed(v, c);
	check(v, model, "sealed in the background");
	sdfs_vol_close(v);
	check_fresh(ino, NULL, model, "sealed in the background, a reader");
	sdfs_set_ec_seal_after(cl(), 0);
	free(model);
}

/* ---- 4+2 on 7 nodes: two holders lost ---- */

static void up7(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 7, .mds = 1,
						     .out_grace_s = 3 });
}

TestSuite(vol_ec42, .init = up7, .fini = down, .timeout = 240);

Test(vol_ec42, two_holders_killed)
{
	uint8_t *model = calloc(1, SIZE), *b = malloc(OSZ);
	struct sdfs_stat st;
	struct sdfs_vol_seal_stat ss;
	struct sdfs_vol_info vi;
	struct sdfs_vol *v;
	uint32_t ids[6];
	char n0[32], n1[32];
	uint64_t disk = 0, rebuilt = 0;
	int64_t t0;

	cr_assert_eq(sdfs_vol_create(cl(), 1, "v", 0600, 0, 0, SIZE, policy_ec(4, 2), OSZ, &st),
		     0);
	v = wopen(st.ino);
	sdfs_vol_get_info(v, &vi);
	put(v, model, 0, SIZE, 7);
	t0 = tnow_ms();
	cr_assert_eq(sdfs_vol_seal(v, NULL, NULL, &ss), 0);
	t0 = tnow_ms() - t0;
	cr_assert_eq(ss.sealed, CHUNKS);
	for (uint64_t c = 0; c < CHUNKS; c++) {
		size_t data;
		uint64_t bytes;

		cr_assert(sdfs_vol_chunk_sealed(v, c));
		cr_assert(!repl_exists_c(vi.vid, c, 3), "chunk %" PRIu64 ": replicated object "
			  "left", c);
		strips(oid_vstripe(vi.vid, c), &data, &bytes);
		cr_assert_eq(data, 6, "chunk %" PRIu64 ": %zu strip files", c, data);
		disk += bytes;
	}
	cr_log_info("4+2: sealed %" PRIu64 " bytes in %" PRId64 " ms (%.1f MB/s); strip files "
		    "hold %.3f bytes per byte (3 while written, copies=3: 3)", ss.bytes, t0,
		    t0 > 0 ? (double)ss.bytes / 1e3 / (double)t0 : 0.0,
		    (double)disk / (double)ss.bytes);
	cr_assert_lt(disk, ss.bytes * 16 / 10);

	/* two holders of chunk 0's data strips die */
	cr_assert_eq(sdfs_ec_locate(cl(), oid_vstripe(vi.vid, 0), 4, 2, ids, 6), 6);
	cr_assert(tcluster_node_name(tc, ids[0], n0, sizeof(n0)));
	cr_assert(tcluster_node_name(tc, ids[1], n1, sizeof(n1)));
	cr_assert_eq(tcluster_kill(tc, n0), 0);
	cr_assert_eq(tcluster_kill(tc, n1), 0);
	for (uint64_t c = 0; c < CHUNKS; c++) {
		struct sdfs_ec_rstat rs;

		cr_assert_eq(sdfs_ec_read_ex(cl(), oid_vstripe(vi.vid, c), 4, 2, b, OSZ, 0, &rs),
			     (ssize_t)OSZ, "chunk %" PRIu64, c);
		rebuilt += rs.rebuilt;
	}
	cr_log_info("%s and %s killed: %" PRIu64 " data strips rebuilt reading 12 chunks", n0,
		    n1, rebuilt);
	cr_assert_geq(rebuilt, 2);
	check(v, model, "4+2, two holders down");
	/* writes into sealed chunks unseal from the degraded stripe; the
	 * replicated objects (3 copies) go where the map lets them */
	put(v, model, 5, 1000, 8);
	put(v, model, 5 * OSZ + 4096, 70000, 9);
	cr_assert(!sdfs_vol_chunk_sealed(v, 0) && !sdfs_vol_chunk_sealed(v, 5));
	check(v, model, "4+2, written while degraded");
	sdfs_vol_close(v);
	check_fresh(st.ino, NULL, model, "4+2, a reader");
	free(b);
	free(model);
}

/* A volume writer's strip puts are fenced as its object writes are
 * (2.5, docs/ec.md "Fencing"): after a newer writer took the volume,
 * the old token's put of a stripe is refused (-EPERM) and stores
 * nothing; the current token's is taken; once the vid is frozen by a
 * snapshot, refused (-EROFS). Token-less puts (strip recovery,
 * reclaim) stay unfenced. */
Test(vol_ec, stale_writer_stripes_fenced)
{
	uint8_t *model = calloc(1, SIZE), *chunk = malloc(OSZ);
	uint64_t ino = mkvol("fence", SIZE);
	struct sdfs_vol_info vi;
	struct sdfs_vol *v = wopen(ino);
	uint32_t old, cur;
	size_t data;
	int ret;

	put(v, model, 0, 3 * OSZ, 7);
	cr_assert_eq(sdfs_vol_flush(v), 0);
	sdfs_vol_get_info(v, &vi);
	old = v->token;
	sdfs_vol_close(v);
	v = wopen(ino);                 /* a new token, every node fenced */
	cur = v->token;
	cr_assert_gt(cur, old);
	memcpy(chunk, model + OSZ, OSZ);

	ret = sdfs_ec_put_ex(cl(), oid_vstripe(vi.vid, 1), K, M, chunk, OSZ,
			     &(struct sdfs_ec_opts){ .token = old });
	cr_assert_eq(ret, -EPERM, "the old writer's stripe: %s", strerror(-ret));
	strips(oid_vstripe(vi.vid, 1), &data, NULL);
	cr_assert_eq(data, 0, "a fenced put stored %zu strip files", data);

	ret = sdfs_ec_put_ex(cl(), oid_vstripe(vi.vid, 1), K, M, chunk, OSZ,
			     &(struct sdfs_ec_opts){ .token = cur });
	cr_assert_eq(ret, 0, "the writer's stripe: %s", strerror(-ret));
	strips(oid_vstripe(vi.vid, 1), &data, NULL);
	cr_assert_eq(data, K + M);
	cr_assert_eq(sdfs_ec_remove(cl(), oid_vstripe(vi.vid, 1), K, M), 0);

	/* frozen by a snapshot: the writer's own token is refused too */
	ret = sdfs_vol_snap_create(cl(), ino, "s", NULL);
	cr_assert_eq(ret, 0, "snapshot: %s", strerror(-ret));
	ret = sdfs_ec_put_ex(cl(), oid_vstripe(vi.vid, 2), K, M, chunk, OSZ,
			     &(struct sdfs_ec_opts){ .token = cur });
	cr_assert_eq(ret, -EROFS, "a stripe of a frozen vid: %s", strerror(-ret));
	strips(oid_vstripe(vi.vid, 2), &data, NULL);
	cr_assert_eq(data, 0, "a put into a frozen vid stored %zu strip files", data);

	/* the writer itself seals the new state's chunks fine */
	put(v, model, 2 * OSZ, 4096, 8);
	check(v, model, "after the refusals");
	sdfs_vol_close(v);
	free(chunk);
	free(model);
}

/* Reads of sealed chunks go where the stripe was last read without
 * asking its holders first (vol_io.c stripe_read): never an old
 * version once the chunk was unsealed and sealed again, neither by the
 * writer nor by a reader handle opened before (after its reload). (The
 * new seal's commit also drops the old version on every holder it
 * reaches: a stale hint then finds nothing and asks the holders; this
 * checks the hinted path end to end, and that a hint never outlives
 * the version it names.) */
Test(vol_ec, a_resealed_chunk_reads_its_new_version)
{
	uint8_t *model = calloc(1, SIZE), *got = malloc(SIZE);
	uint64_t ino = mkvol("reseal", SIZE);
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol *v = wopen(ino), *r;
	int ret;

	put(v, model, 0, 2 * OSZ, 31);
	seal_all(v, 2, &st);
	ret = sdfs_vol_open(cl(), ino, 0, NULL, &r);
	cr_assert_eq(ret, 0, "a reader: %s", strerror(-ret));
	for (int round = 0; round < 3; round++) {
		check(v, model, "the writer, sealed");
		check(r, model, "the reader, sealed");
		put(v, model, OSZ + 8192 * (uint64_t)(round + 1), 4096, 40 + (uint64_t)round);
		seal_all(v, 1, &st);
		assert_sealed(v, 1);
		check(v, model, "the writer, resealed");
		tsleep_ms(VOL_RO_RELOAD_MS + 100);      /* the reader's reload */
		cr_assert_eq(sdfs_vol_pread(r, got, SIZE, 0), (ssize_t)SIZE);
		vt_assert_same(got, model, SIZE, 0, OSZ, "the reader, resealed");
	}
	sdfs_vol_close(r);
	sdfs_vol_close(v);
	free(got);
	free(model);
}

/* ---- the backed unseal (docs/ec.md "Backed unseal") ---- */

/* Restart every block daemon, the filler on. */
static void restart_all(void)
{
	static const char *const names[] = { "blockd.0", "blockd.1", "blockd.2", "blockd.3" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cr_assert_eq(tcluster_kill(tc, names[i]), 0, "kill %s", names[i]);
		cr_assert_eq(tcluster_restart(tc, names[i]), 0, "restart %s", names[i]);
	}
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0, "healthy after the restarts");
}

/* Replicas of chunk @c's replicated object of @vid on the up nodes that
 * are backed by a stripe (*@backed) and that exist (returned). */
static size_t stripe_backed(uint64_t vid, uint64_t c, size_t *backed)
{
	struct sdfs_replica rep[4];
	size_t n = 0, have = 0;
	int ret = sdfs_obj_locate(cl(), oid_vdata(vid, c, M + 1), rep, 4, &n);

	cr_assert_eq(ret, 0, "locate chunk %" PRIu64 ": %s", c, strerror(-ret));
	*backed = 0;
	for (size_t i = 0; i < n; i++) {
		struct objfile f;

		if (rep[i].result)
			continue;
		objfile_open(rep[i].path, &f);
		have++;
		if (f.flags & OBJFILE_F_BACKED) {
			cr_assert(f.flags & OBJFILE_F_STRIPE, "chunk %" PRIu64 ": backed, not "
				  "by a stripe (flags %#x)", c, f.flags);
			(*backed)++;
		}
		objfile_close(&f);
	}
	return have;
}

/* The cluster of vol_ec, its block daemons' fillers stopped from the
 * start (SDFS_BLOCKD_FAULT=no_fill, blockd/backing.h). */
static void up_no_fill(void)
{
	setenv("SDFS_BLOCKD_FAULT", "no_fill", 1);
	up();
	unsetenv("SDFS_BLOCKD_FAULT");
}

TestSuite(vol_ec_backed, .init = up_no_fill, .fini = down, .timeout = 240);

Test(vol_ec_backed, unseal)
{
	uint8_t *model = calloc(1, SIZE);
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol_info vi;
	uint64_t ino, all = 0;
	struct sdfs_vol *v;
	uint32_t ids[K + M];
	char name[32];
	int64_t end;

	ino = mkvol("v", SIZE);
	v = wopen(ino);
	sdfs_vol_get_info(v, &vi);
	put(v, model, 0, SIZE, 1);
	seal_all(v, CHUNKS, &st);
	for (uint64_t c = 0; c < CHUNKS; c++)
		assert_sealed(v, c);

	/* a 4 KiB piece into every sealed chunk, one of them not aligned */
	for (uint64_t c = 0; c < CHUNKS; c++) {
		size_t backed, data;

		put(v, model, c * OSZ + (c * 37 % 256) * 4096 + (c == 5 ? 100 : 0), 4096, 2);
		cr_assert(!sdfs_vol_chunk_sealed(v, c));
		cr_assert_eq(sdfs_vol_chunk_owner(v, c), vi.vid);
		cr_assert_eq(stripe_backed(vi.vid, c, &backed), M + 1);
		cr_assert_eq(backed, M + 1, "chunk %" PRIu64 ": %zu of %u replicas backed", c,
			     backed, M + 1);
		strips(oid_vstripe(vi.vid, c), &data, NULL);
		cr_assert_eq(data, K + M, "chunk %" PRIu64 ": the stripe went while backed", c);
	}
	cr_assert_eq(sdfs_vol_flush(v), 0);
	check(v, model, "backed by the stripes");
	check_fresh(ino, NULL, model, "backed, a reader");

	/* a data strip's holder SIGKILLed: read through the other strips */
	cr_assert_eq(sdfs_ec_locate(cl(), oid_vstripe(vi.vid, 0), K, M, ids, K + M), K + M);
	cr_assert(tcluster_node_name(tc, ids[0], name, sizeof(name)));
	cr_assert_eq(tcluster_kill(tc, name), 0);
	check_fresh(ino, NULL, model, "backed, a strip holder killed");
	setenv("SDFS_BLOCKD_FAULT", "no_fill", 1);
	cr_assert_eq(tcluster_restart(tc, name), 0);
	unsetenv("SDFS_BLOCKD_FAULT");
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0, "healthy again");
	check(v, model, "backed, after a restart");
	for (uint64_t c = 0; c < CHUNKS; c++) {
		size_t backed;

		stripe_backed(vi.vid, c, &backed);
		all += backed;
	}
	cr_assert_gt(all, 0, "nothing backed after a restart with the filler stopped");

	/* the filler on: everything filled, then the own stripes go */
	restart_all();
	end = tnow_ms() + 60000;
	do {
		all = 0;
		for (uint64_t c = 0; c < CHUNKS; c++) {
			size_t backed;

			stripe_backed(vi.vid, c, &backed);
			all += backed;
		}
		if (all)
			tsleep_ms(200);
	} while (all && tnow_ms() < end);
	cr_assert_eq(all, 0, "%" PRIu64 " replicas still backed", all);
	check(v, model, "filled");
	cr_assert_eq(vol_stripe_gc(v, 0), 0);
	for (uint64_t c = 0; c < CHUNKS; c++)
		assert_no_stripe(vi.vid, c);
	check(v, model, "filled, the stripes removed");

	/* the fallback: the whole chunk unsealed by the client */
	seal_all(v, CHUNKS, &st);
	setenv("SDFS_VOL_UNSEAL", "client", 1);
	put(v, model, 3 * OSZ + 8192, 4096, 3);
	unsetenv("SDFS_VOL_UNSEAL");
	{
		size_t backed;

		cr_assert_eq(stripe_backed(vi.vid, 3, &backed), M + 1);
		cr_assert_eq(backed, 0, "the client's unseal made a backed object");
	}
	assert_no_stripe(vi.vid, 3);
	check(v, model, "unsealed by the client");
	sdfs_vol_close(v);
	check_fresh(ino, NULL, model, "closed");
	free(model);
}
