/*
 * vol_ec_fault_test.c - erasure-coded volumes under the faults the
 * replicated ones are tested with (docs/ec.md "EC volumes", issue 19):
 * 4 block daemons, ec=2+1, 1 MiB chunks, one mds, a mount at DIR/mnt,
 * sdfs.conf `ec_seal_after_s=1` (every writer's background sealer runs,
 * the mount's too). Every test checks every acknowledged byte against a
 * model and first asserts that the chunks the fault aims at really were
 * sealed (index bit, strip files on disk, replicated object gone).
 *
 *   hung_holder     (suite vol_ec_fault_hung: out grace 60 s, so the
 *                   node stays in every placement) a strip holder
 *                   SIGSTOPped while a thread overwrites
 *                   the first half (sealed chunks unseal) and the main
 *                   thread reads the sealed second half: every call
 *                   completes (a generous deadline, no duration goal),
 *                   bytes exact, degraded reads rebuild; SIGCONT, exact
 *                   again, sealed again.
 *   reads_across_out  (suite vol_ec_fault_out: recovery at 1 MB/s) a
 *                   strip holder SIGKILLed and gone out, strip recovery
 *                   moving strips for seconds: every read of a sealed
 *                   chunk meanwhile exact.
 *   reads_across_map_changes  three readers of sealed chunks while the
 *                   map changes 16 times; no read may fail (it failed
 *                   before ec_io.c retried a read that met a holder on
 *                   a newer map: see the test).
 *   writer_fenced   a writer in another process (libsdfs) SIGSTOPped
 *                   until its session expires, a new writer takes the
 *                   volume, writes into sealed and replicated chunks and
 *                   seals; the old one resumed: its writes (into a
 *                   sealed, a replicated and a new chunk), flush and
 *                   seal are refused with -EPERM and none shows up.
 *   stale_sealer    the old writer stopped (SDFS_VOL_FAULT=
 *                   stop_seal_before_put) inside a seal, between reading
 *                   chunk 6 and its strip put; the new writer
 *                   rewrites and seals that chunk; the old one resumed
 *                   puts its stale stripe. The chunk must read as the
 *                   new writer wrote it, its stripe one version (K + M
 *                   files). Needs the block daemons' volume fence on
 *                   strip puts (protocol 2.5, 286ef3f): without it the
 *                   stale put lands and chunk 6 reads the old bytes.
 *   crash_all       every block daemon SIGKILLed while a writer and a
 *                   sealing loop run (half the volume sealed at that
 *                   moment), restarted: every acknowledged byte reads
 *                   back; then a snapshot taken while sealing runs:
 *                   live state and snapshot read back exactly.
 *   fsx             sdfs-fsx --fixed-size on an EC volume file through the
 *                   mount, the volume written and sealed whole first (so
 *                   fsx reads stripes and its writes unseal), a block
 *                   daemon SIGKILLed while chunks are still sealed (vol
 *                   info) and restarted in the middle. (The mount's own
 *                   sealer does not run here: mount.sdfs does not take
 *                   ec_seal_after_s from sdfs.conf, fs/main.c.)
 *   corrupt         one strip file of every sealed chunk damaged on
 *                   disk: the volume reads exact (through the mount,
 *                   O_DIRECT, and libsdfs); those reads rebuild the data
 *                   strips they met (read-repair), one scrub pass the
 *                   rest: exactly those strips, found and rebuilt once
 *                   each (the nodes' totals).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/oid.h"
#include "common/policy.h"
#include "tests/vol/vt.h"

#define K 2
#define M 1
#define NODES 4
#define OSZ (1u << 20)
#define CHUNKS 12
#define SIZE ((uint64_t)CHUNKS * OSZ)
#define OP_DEADLINE_MS 60000    /* a call that takes longer hangs */

static struct tcluster *tc;
static pid_t child;

static void up(void)
{
	child = 0;
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NODES, .mds = 1, .mount = 1,
						     .out_grace_s = 3,
						     .set = "ec_seal_after_s=1" });
}

static void down(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
	tcluster_stop(tc);
}

TestSuite(vol_ec_fault, .init = up, .fini = down, .timeout = 240);

static struct sdfs *cl(void)
{
	return tcluster_client(tc);
}

static uint64_t mkvol(const char *name, uint64_t size)
{
	struct sdfs_stat st;
	int ret = sdfs_vol_create(cl(), 1, name, 0600, 0, 0, size, policy_ec(K, M), OSZ, &st);

	cr_assert_eq(ret, 0, "vol create %s: %s", name, strerror(-ret));
	return st.ino;
}

static struct sdfs_vol *wopen(uint64_t ino)
{
	struct sdfs_vol *v;
	int ret = sdfs_vol_open(cl(), ino, SDFS_VOL_WRITE | SDFS_VOL_WAIT, "ec_fault", &v);

	cr_assert_eq(ret, 0, "open for writing: %s", strerror(-ret));
	return v;
}

static void put(struct sdfs_vol *v, uint8_t *model, uint64_t off, size_t len, uint64_t tag)
{
	vt_vol_put(v, model, off, len, tag);
}

/* [off, off+len) of @v reads as @model there. */
static void check_range(struct sdfs_vol *v, const uint8_t *model, uint64_t off, size_t len,
			const char *what)
{
	vt_vol_check(v, model, off, len, OSZ, what);
}

static void check(struct sdfs_vol *v, const uint8_t *model, const char *what)
{
	check_range(v, model, 0, SIZE, what);
}

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

/* Strip files of @oid with data, on every disk (tombstones returned). */
static size_t strips(uint64_t oid, size_t *data)
{
	return vt_strips(tc, oid, data, NULL);
}

static int repl_exists(uint64_t vid, uint64_t chunk)
{
	struct sdfs_obj_info oi;
	int ret = sdfs_obj_stat(cl(), oid_vdata(vid, chunk, M + 1), &oi);

	cr_assert(ret == 0 || ret == -ENOENT, "stat: %s", strerror(-ret));
	return ret == 0;
}

/* Chunk @c of @v's live vid is sealed for real: entry, no replicated
 * object, at least K strip files with data (@all: all K + M). */
static void assert_sealed(struct sdfs_vol *v, uint64_t c, int all)
{
	struct sdfs_vol_info vi;
	size_t data;

	sdfs_vol_get_info(v, &vi);
	cr_assert(sdfs_vol_chunk_sealed(v, c), "chunk %" PRIu64 " not sealed", c);
	cr_assert_eq(sdfs_vol_chunk_owner(v, c), vi.vid);
	cr_assert(!repl_exists(vi.vid, c), "chunk %" PRIu64 ": replicated object left", c);
	strips(oid_vstripe(vi.vid, c), &data);
	if (all)
		cr_assert_eq(data, K + M, "chunk %" PRIu64 ": %zu strip files", c, data);
	else
		cr_assert_geq(data, K, "chunk %" PRIu64 ": %zu strip files", c, data);
}

static unsigned count_sealed(struct sdfs_vol *v, uint64_t from, uint64_t to)
{
	unsigned n = 0;

	for (uint64_t c = from; c < to; c++)
		n += sdfs_vol_chunk_sealed(v, c) > 0;
	return n;
}

static void seal_all(struct sdfs_vol *v, struct sdfs_vol_seal_stat *st)
{
	int ret = sdfs_vol_seal(v, NULL, NULL, st);

	cr_assert_eq(ret, 0, "seal: %s", strerror(-ret));
}

/* ---- a writer thread, a sealing thread ---- */

struct writer {
	struct sdfs_vol *v;
	uint8_t *model;
	uint8_t *unknown;       /* per byte: a failed write may have landed */
	atomic_int stop, pause, paused;
	int tolerate;           /* failures allowed (a crash); else fail */
	unsigned writes, failed;
	uint64_t seed, span;
	unsigned focus;         /* !0: this many writes into one chunk, then
				   the next (the others go cold and seal) */
	int64_t max_ms;         /* the longest write */
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t *b = malloc(65536);

	while (!atomic_load(&w->stop)) {
		uint64_t off = trand(&w->seed) % (w->span - 65536);
		size_t len = 1 + (size_t)(trand(&w->seed) % 65536);

		if (w->focus) {
			uint64_t c = (w->writes + w->failed) / w->focus % (w->span / OSZ);

			off = c * OSZ + trand(&w->seed) % OSZ;
			if (off + len > w->span)
				off = w->span - len;
		}
		uint64_t tag = 100 + w->writes + w->failed;
		int64_t t0;
		int ret;

		if (atomic_load(&w->pause)) {
			atomic_store(&w->paused, 1);
			tsleep_ms(5);
			continue;
		}
		atomic_store(&w->paused, 0);
		vt_fill(b, len, off, tag);
		t0 = tnow_ms();
		ret = sdfs_vol_pwrite(w->v, b, len, off);
		t0 = tnow_ms() - t0;
		if (t0 > w->max_ms)
			w->max_ms = t0;
		cr_assert_lt(t0, OP_DEADLINE_MS, "write %u took %" PRId64 " ms", w->writes, t0);
		if (ret) {
			cr_assert(w->tolerate, "write %u: %s", w->writes, strerror(-ret));
			memset(w->unknown + off, 1, len);
			w->failed++;
			tsleep_ms(50);
			continue;
		}
		memcpy(w->model + off, b, len);
		if (w->unknown)
			memset(w->unknown + off, 0, len);
		w->writes++;
	}
	free(b);
	return NULL;
}

struct sealer {
	struct sdfs_vol *v;
	atomic_int stop;
	int tolerate;
	uint64_t sealed, failed;
};

static void *sealer_main(void *arg)
{
	struct sealer *s = arg;
	struct sdfs_vol_seal_stat st;

	while (!atomic_load(&s->stop)) {
		int ret = sdfs_vol_seal(s->v, NULL, NULL, &st);

		if (ret) {
			cr_assert(s->tolerate, "seal: %s", strerror(-ret));
			s->failed++;
			tsleep_ms(100);
			continue;
		}
		s->sealed += st.sealed;
		tsleep_ms(20);
	}
	return NULL;
}

/* @v reads as @model except where @unknown says a failed write may have
 * landed; how many such bytes. */
static uint64_t check_known(struct sdfs_vol *v, const uint8_t *model, const uint8_t *unknown,
			    const char *what)
{
	uint8_t *b = malloc(SIZE), *want = malloc(SIZE);
	ssize_t got = sdfs_vol_pread(v, b, SIZE, 0);
	uint64_t n = 0;

	cr_assert_eq(got, (ssize_t)SIZE, "%s: read %zd: %s", what, got,
		     got < 0 ? strerror((int)-got) : "short");
	memcpy(want, model, SIZE);
	for (uint64_t i = 0; i < SIZE; i++) {
		if (unknown[i]) {
			want[i] = b[i];
			n++;
		}
	}
	vt_assert_same(b, want, SIZE, 0, OSZ, what);
	free(b);
	free(want);
	return n;
}

/* ---- 1. hung, not dead ---- */

/* A hang shorter than the out grace: the node stays in every placement
 * (down, then up), as a stall of a few seconds does. A node that goes
 * out meanwhile moves placements under the readers: out_transition. */
static void up_hung(void)
{
	child = 0;
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NODES, .mds = 1,
						     .out_grace_s = 60,
						     .set = "ec_seal_after_s=1" });
}

TestSuite(vol_ec_fault_hung, .init = up_hung, .fini = down, .timeout = 240);

Test(vol_ec_fault_hung, hung_holder)
{
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino = mkvol("v", SIZE);
	struct sdfs_vol *v = wopen(ino);
	struct writer w = { .v = v, .model = model, .seed = tseed("ec_fault hung_holder"),
			    .span = SIZE / 2 };
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol_info vi;
	uint32_t ids[K + M];
	unsigned rebuilt = 0, reads = 0, holds = 0;
	int64_t max_read = 0, end;
	char name[32];
	pthread_t th;

	sdfs_vol_get_info(v, &vi);
	put(v, model, 0, SIZE, 1);
	seal_all(v, &st);
	for (uint64_t c = 0; c < CHUNKS; c++)
		assert_sealed(v, c, 1);
	/* the holder of a data strip of the last chunk: read degraded */
	cr_assert_eq(sdfs_ec_locate(cl(), oid_vstripe(vi.vid, CHUNKS - 1), K, M, ids, K + M),
		     K + M);
	cr_assert(tcluster_node_name(tc, ids[0], name, sizeof(name)));
	for (uint64_t c = CHUNKS / 2; c < CHUNKS; c++) {
		cr_assert_eq(sdfs_ec_locate(cl(), oid_vstripe(vi.vid, c), K, M, ids, K + M),
			     K + M);
		for (unsigned p = 0; p < K; p++)
			holds += ids[p] == tcluster_node_id(tc, name);
	}

	pthread_create(&th, NULL, writer_main, &w);
	tsleep_ms(200);
	cr_assert_eq(tcluster_signal(tc, name, SIGSTOP), 0);
	cr_log_info("%s (a data strip of %u sealed chunks) SIGSTOPped after %u writes", name,
		    holds, w.writes);
	/* reads of the sealed half while it is stopped and writes go on */
	end = tnow_ms() + 5000;
	while (tnow_ms() < end) {
		uint64_t c = CHUNKS / 2 + reads % (CHUNKS / 2);
		int64_t t0 = tnow_ms(), dt;

		struct sdfs_ec_rstat rs;
		uint8_t *b = malloc(OSZ);

		cr_assert(sdfs_vol_chunk_sealed(v, c), "chunk %" PRIu64 " unsealed", c);
		check_range(v, model, c * OSZ, OSZ, "a sealed chunk, a holder stopped");
		/* its stripe straight, to count the strips rebuilt */
		cr_assert_eq(sdfs_ec_read_ex(cl(), oid_vstripe(vi.vid, c), K, M, b, OSZ, 0, &rs),
			     (ssize_t)OSZ);
		cr_assert(!memcmp(b, model + c * OSZ, OSZ), "stripe of chunk %" PRIu64, c);
		rebuilt += rs.rebuilt;
		free(b);
		dt = tnow_ms() - t0;
		cr_assert_lt(dt, OP_DEADLINE_MS, "a read of a sealed chunk took %" PRId64 " ms",
			     dt);
		if (dt > max_read)
			max_read = dt;
		reads++;
	}
	atomic_store(&w.stop, 1);
	pthread_join(th, NULL);
	cr_log_info("while %s was stopped: %u writes (longest %" PRId64 " ms), %u chunk reads "
		    "(longest %" PRId64 " ms), %u data strips rebuilt", name, w.writes, w.max_ms,
		    reads, max_read, rebuilt);
	/* the first reads of its chunks ran while it was still their holder
	 * (the map takes it out 3 s after its session expired, and strip
	 * recovery then rebuilds its strips elsewhere) */
	cr_assert_geq(rebuilt, holds > 0 ? 1 : 0, "no degraded read");
	cr_assert_gt(w.writes, 10);
	check(v, model, "a holder stopped, the writer");
	check_fresh(ino, NULL, model, "a holder stopped, a reader");
	for (uint64_t c = CHUNKS / 2; c < CHUNKS; c++) {
		struct sdfs_ec_rstat rs;
		uint8_t *b = malloc(OSZ);

		cr_assert_eq(sdfs_ec_read_ex(cl(), oid_vstripe(vi.vid, c), K, M, b, OSZ, 0, &rs),
			     (ssize_t)OSZ);
		cr_assert(!memcmp(b, model + c * OSZ, OSZ), "chunk %" PRIu64, c);
		rebuilt += rs.rebuilt;
		free(b);
	}

	cr_assert_eq(tcluster_signal(tc, name, SIGCONT), 0);
	cr_assert_eq(tcluster_wait_nodes_up(tc, NODES, 30000), 0);
	check(v, model, "resumed");
	seal_all(v, &st);
	cr_log_info("resumed: %" PRIu64 " chunks sealed again", st.sealed);
	for (uint64_t c = 0; c < CHUNKS; c++)
		cr_assert(sdfs_vol_chunk_sealed(v, c), "chunk %" PRIu64, c);
	check(v, model, "resumed, sealed again");
	sdfs_vol_close(v);
	check_fresh(ino, NULL, model, "resumed, a reader");
	free(model);
}

/* ---- 1b. a holder going out under the readers ----
 * A strip holder SIGKILLed and left to go out: the map moves its
 * positions to the other nodes and strip recovery (at 1 MB/s here, so
 * the move takes seconds) copies and rebuilds strips there. Every read
 * meanwhile must return the bytes, never -EIO. */
static void up_slow(void)
{
	child = 0;
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NODES, .mds = 1,
						     .out_grace_s = 2, .recovery_mbps = 1 });
}

TestSuite(vol_ec_fault_out, .init = up_slow, .fini = down, .timeout = 240);

Test(vol_ec_fault_out, reads_across_out)
{
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino = mkvol("v", SIZE), epoch;
	struct sdfs_vol *v = wopen(ino), *r;
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol_info vi;
	uint32_t ids[K + M];
	unsigned reads = 0;
	char name[32];
	int64_t end;

	sdfs_vol_get_info(v, &vi);
	put(v, model, 0, SIZE, 1);
	seal_all(v, &st);
	for (uint64_t c = 0; c < CHUNKS; c++)
		assert_sealed(v, c, 1);
	sdfs_vol_close(v);
	cr_assert_eq(sdfs_ec_locate(cl(), oid_vstripe(vi.vid, 0), K, M, ids, K + M), K + M);
	cr_assert(tcluster_node_name(tc, ids[0], name, sizeof(name)));
	cr_assert_eq(sdfs_vol_open(cl(), ino, 0, NULL, &r), 0);
	cr_assert_eq(tcluster_kill(tc, name), 0);
	cr_assert_eq(tcluster_wait_state(tc, name, "down", 30000), 0);
	epoch = tcluster_epoch(tc);
	/* read every sealed chunk over and over: through "out" and the
	 * strips moving, until 5 s after it */
	end = 0;
	while (!end || tnow_ms() < end) {
		uint64_t c = reads % CHUNKS;
		uint8_t *b = malloc(OSZ);
		ssize_t got = sdfs_vol_pread(r, b, OSZ, c * OSZ);

		cr_assert_eq(got, (ssize_t)OSZ, "read %u (chunk %" PRIu64 ") %s: %zd: %s", reads,
			     c, end ? "after the node went out" : "before it went out", got,
			     got < 0 ? strerror((int)-got) : "short");
		vt_assert_same(b, model + c * OSZ, OSZ, c * OSZ, OSZ, "across out");
		free(b);
		reads++;
		if (!end && tcluster_epoch(tc) > epoch) {
			cr_log_info("the map changed after %u reads (%s out)", reads, name);
			end = tnow_ms() + 5000;
		}
		cr_assert_lt(reads, 1000000);
	}
	cr_log_info("%u reads of sealed chunks across %s going out", reads, name);
	sdfs_vol_close(r);
	free(model);
}

/* ---- 1c. map changes under the readers ----
 * Readers of sealed chunks while the map changes again and again (a
 * node reweighted back and forth: each change a new epoch, the block
 * daemons switching one after the other, placements moving a little).
 * A read that meets a node which switched between its STRIP_STAT and
 * its STRIP_GET (ESTALE) must try again on the new map, never fail. */
struct reader {
	struct sdfs_vol *v;
	const uint8_t *model;
	atomic_int stop;
	unsigned reads;
	int err;                /* the first failed read's */
	uint64_t err_chunk;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	uint8_t *b = malloc(OSZ);

	while (!atomic_load(&rd->stop) && !rd->err) {
		uint64_t c = (rd->reads * 7 + (uintptr_t)arg / 64) % CHUNKS;
		ssize_t got = sdfs_vol_pread(rd->v, b, OSZ, c * OSZ);

		if (got != (ssize_t)OSZ) {
			rd->err = got < 0 ? (int)got : -ENODATA;
			rd->err_chunk = c;
			break;
		}
		cr_assert(!memcmp(b, rd->model + c * OSZ, OSZ), "chunk %" PRIu64, c);
		rd->reads++;
	}
	free(b);
	return NULL;
}

/* Failed 4 runs of 4 before libclient/ec_io.c retried such a read
 * (-EIO within 16 map changes: "strip=2 node=1: Stale file handle
 * (degraded read)", then "ec read 2+1: no version with 2 good strips":
 * read_try took a group read_group could not read because of a
 * retryable answer as "every holder answered, nothing to wait for"). */
Test(vol_ec_fault, reads_across_map_changes)
{
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino = mkvol("v", SIZE), e0 = tcluster_epoch(tc);
	struct sdfs_vol *v = wopen(ino);
	struct sdfs_vol_seal_stat st;
	struct reader rd[3];
	pthread_t th[3];
	uint32_t id = tcluster_node_id(tc, "blockd.1");

	put(v, model, 0, SIZE, 1);
	seal_all(v, &st);
	for (uint64_t c = 0; c < CHUNKS; c++)
		assert_sealed(v, c, 1);
	sdfs_vol_close(v);
	for (unsigned i = 0; i < 3; i++) {
		memset(&rd[i], 0, sizeof(rd[i]));
		rd[i].model = model;
		cr_assert_eq(sdfs_vol_open(cl(), ino, 0, NULL, &rd[i].v), 0);
		pthread_create(&th[i], NULL, reader_main, &rd[i]);
	}
	for (unsigned i = 0; i < 16; i++) {
		cr_assert_eq(tcluster_sdfs(tc, NULL, NULL, "node reweight %u %u", id,
					   i % 2 ? 251u : 120u), 0);
		tsleep_ms(150);
	}
	for (unsigned i = 0; i < 3; i++) {
		atomic_store(&rd[i].stop, 1);
		pthread_join(th[i], NULL);
	}
	cr_log_info("map epochs %" PRIu64 " -> %" PRIu64 "; reads %u, %u, %u", e0,
		    tcluster_epoch(tc), rd[0].reads, rd[1].reads, rd[2].reads);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_eq(rd[i].err, 0, "reader %u: read of sealed chunk %" PRIu64 " after %u "
			     "reads: %s", i, rd[i].err_chunk, rd[i].reads, strerror(-rd[i].err));
		sdfs_vol_close(rd[i].v);
	}
	free(model);
}

/* ---- 2. writer fencing: the old writer in a process of its own ---- */

enum { R_SEAL, R_W_SEALED, R_W_REPL, R_W_NEW, R_FLUSH, R_SEAL2, R_N };
static const char *const r_name[R_N] = {
	"the seal it was in (stale_sealer) or 0", "a write into sealed chunk 1",
	"a write into replicated chunk 6", "a write into new chunk 9", "flush", "seal",
};

struct shared {
	_Atomic int stage;      /* child: 1 ready, 2 done */
	_Atomic int go;         /* parent: the child may go on */
	int err;                /* child: a setup step failed (-errno) */
	int r[R_N];
};

/* The old writer (ECF_CHILD=conf, ECF_SHM=file, ECF_INO, ECF_STALE):
 * chunks 0..5 tag 1, sealed; chunk 6 tag 2, replicated. Then (stale) a
 * seal that stops itself before its strip put, or a wait for "go";
 * then writes with tag 3 and a seal, each result recorded. */
static int child_main(void)
{
	const char *conf = getenv("ECF_CHILD"), *shm = getenv("ECF_SHM");
	uint64_t ino = strtoull(getenv("ECF_INO"), NULL, 10);
	int stale = getenv("ECF_STALE") != NULL, fd = open(shm, O_RDWR);
	struct sdfs_vol_seal_stat st;
	struct shared *sh;
	struct sdfs_vol *v;
	struct sdfs *s;
	char err[256];
	uint8_t *b = malloc(OSZ);
	int ret;

	if (fd < 0)
		return 2;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (sh == MAP_FAILED)
		return 2;
#define STEP(x) do { if ((ret = (x))) { sh->err = ret; return 3; } } while (0)
	STEP(sdfs_open(conf, &s, err, sizeof(err)));
	sdfs_set_ec_seal_after(s, 0);
	STEP(sdfs_vol_open(s, ino, SDFS_VOL_WRITE | SDFS_VOL_WAIT, "old writer", &v));
	for (uint64_t c = 0; c < 6; c++) {
		vt_fill(b, OSZ, c * OSZ, 1);
		STEP(sdfs_vol_pwrite(v, b, OSZ, c * OSZ));
	}
	STEP(sdfs_vol_flush(v));
	STEP(sdfs_vol_seal(v, NULL, NULL, &st));
	if (st.sealed != 6) {
		sh->err = -EBADE;
		return 3;
	}
	vt_fill(b, OSZ, 6 * OSZ, 2);
	STEP(sdfs_vol_pwrite(v, b, OSZ, 6 * OSZ));
	STEP(sdfs_vol_flush(v));
	atomic_store(&sh->stage, 1);
	if (stale) {
		setenv("SDFS_VOL_FAULT", "stop_seal_before_put", 1);
		sh->r[R_SEAL] = sdfs_vol_seal(v, NULL, NULL, &st);
		unsetenv("SDFS_VOL_FAULT");
	} else {
		while (!atomic_load(&sh->go))
			usleep(10000);
	}
	vt_fill(b, 4096, OSZ + 8192, 3);
	sh->r[R_W_SEALED] = sdfs_vol_pwrite(v, b, 4096, OSZ + 8192);
	vt_fill(b, 4096, 6 * OSZ + 4096, 3);
	sh->r[R_W_REPL] = sdfs_vol_pwrite(v, b, 4096, 6 * OSZ + 4096);
	vt_fill(b, 4096, 9 * OSZ, 3);
	sh->r[R_W_NEW] = sdfs_vol_pwrite(v, b, 4096, 9 * OSZ);
	sh->r[R_FLUSH] = sdfs_vol_flush(v);
	sh->r[R_SEAL2] = sdfs_vol_seal(v, NULL, NULL, &st);
	atomic_store(&sh->stage, 2);
#undef STEP
	sdfs_vol_close(v);
	sdfs_close(s);
	free(b);
	return 0;
}

__attribute__((constructor)) static void maybe_child(void)
{
	if (getenv("ECF_CHILD"))
		_exit(child_main());
}

static struct shared *start_old_writer(uint64_t ino, int stale, pid_t *pid)
{
	char shm[PATH_MAX], log[PATH_MAX], sino[32], exe[PATH_MAX];
	struct shared *sh;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fd;

	cr_assert_gt(n, 0);
	exe[n] = 0;
	snprintf(shm, sizeof(shm), "%s/ecf.shm", tcluster_dir(tc));
	snprintf(log, sizeof(log), "%s/old_writer.log", tcluster_dir(tc));
	fd = open(shm, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, sizeof(*sh)), 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert(sh != MAP_FAILED);
	close(fd);
	snprintf(sino, sizeof(sino), "%" PRIu64, ino);
	setenv("ECF_CHILD", tcluster_conf(tc), 1);
	setenv("ECF_SHM", shm, 1);
	setenv("ECF_INO", sino, 1);
	if (stale)
		setenv("ECF_STALE", "1", 1);
	char *argv[] = { exe, NULL };
	*pid = vt_spawn(argv, log);
	unsetenv("ECF_CHILD");
	unsetenv("ECF_SHM");
	unsetenv("ECF_INO");
	unsetenv("ECF_STALE");
	return sh;
}

/* The model of what the old writer wrote before it was stopped. */
static void old_model(uint8_t *model)
{
	for (uint64_t c = 0; c < 6; c++)
		vt_fill(model + c * OSZ, OSZ, c * OSZ, 1);
	vt_fill(model + 6 * OSZ, OSZ, 6 * OSZ, 2);
}

/* The new writer: the lock as soon as the old one's session is gone. */
static struct sdfs_vol *take_over(uint64_t ino)
{
	int64_t t0 = tnow_ms();
	struct sdfs_vol *v;
	int ret;

	while ((ret = sdfs_vol_open(cl(), ino, SDFS_VOL_WRITE, "new writer", &v)) == -EBUSY) {
		cr_assert_lt(tnow_ms() - t0, 30000, "the lock still held");
		tsleep_ms(100);
	}
	cr_assert_eq(ret, 0, "take over: %s", strerror(-ret));
	cr_log_info("the new writer took the volume %" PRId64 " ms after the old one stopped",
		    tnow_ms() - t0);
	return v;
}

static void wait_stage(struct shared *sh, int stage, pid_t pid)
{
	int64_t end = tnow_ms() + 60000;

	while (atomic_load(&sh->stage) < stage) {
		int st;

		cr_assert_eq(sh->err, 0, "old writer: %s", strerror(-sh->err));
		cr_assert_eq(waitpid(pid, &st, WNOHANG), 0, "old writer exited (%d)", st);
		cr_assert_lt(tnow_ms(), end, "old writer: stage %d never came", stage);
		tsleep_ms(10);
	}
}

static void wait_stopped(pid_t pid)
{
	int64_t end = tnow_ms() + 60000;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WUNTRACED | WNOHANG);

		cr_assert_geq(r, 0);
		if (r == pid) {
			cr_assert(WIFSTOPPED(st), "old writer ended (%d) instead of stopping", st);
			return;
		}
		cr_assert_lt(tnow_ms(), end, "old writer never stopped itself");
		tsleep_ms(10);
	}
}

/* Resume the old writer, wait until it is done, and check that each of
 * its steps after the takeover was refused with -EPERM (from @first). */
static void resume_refused(struct shared *sh, pid_t pid, int first)
{
	cr_assert_eq(kill(pid, SIGCONT), 0);
	atomic_store(&sh->go, 1);
	wait_stage(sh, 2, pid);
	cr_assert_eq(vt_wait_child(pid, 60000), 0, "old writer's exit");
	child = 0;
	for (int i = first; i < R_N; i++) {
		cr_log_info("old writer after the takeover: %s: %s", r_name[i],
			    sh->r[i] ? strerror(-sh->r[i]) : "ok");
		cr_assert_eq(sh->r[i], -EPERM, "old writer: %s: %s, not EPERM", r_name[i],
			     sh->r[i] ? strerror(-sh->r[i]) : "ok");
	}
}

Test(vol_ec_fault, writer_fenced)
{
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino = mkvol("v", SIZE);
	struct sdfs_vol_seal_stat st;
	struct shared *sh = start_old_writer(ino, 0, &child);
	struct sdfs_vol *v;

	wait_stage(sh, 1, child);
	cr_assert_eq(kill(child, SIGSTOP), 0);
	old_model(model);
	v = take_over(ino);
	/* sealed chunks the new writer reads are the old writer's, exact */
	for (uint64_t c = 0; c < 6; c++)
		assert_sealed(v, c, 1);
	cr_assert(!sdfs_vol_chunk_sealed(v, 6));
	check(v, model, "taken over");
	/* into a sealed chunk (unsealed), a replicated one, a new one; sealed */
	put(v, model, OSZ + 4096, 20000, 4);
	put(v, model, 6 * OSZ, 20000, 4);
	put(v, model, 9 * OSZ + 100, 100, 4);
	seal_all(v, &st);
	cr_assert_eq(st.sealed, 3, "sealed %" PRIu64, st.sealed);
	assert_sealed(v, 1, 1);
	assert_sealed(v, 6, 1);
	assert_sealed(v, 9, 1);
	resume_refused(sh, child, R_W_SEALED);
	check(v, model, "the old writer refused, the new writer");
	for (uint64_t c = 0; c < 10; c++)
		if (c < 7 || c == 9)
			assert_sealed(v, c, 1);
	sdfs_vol_close(v);
	check_fresh(ino, NULL, model, "the old writer refused, a reader");
	munmap(sh, sizeof(*sh));
	free(model);
}

/* Needs the volume fence on strip puts (blockd/strip_ops.c): without it
 * the old writer's stale stripe of chunk 6 is what chunk 6 reads. */
Test(vol_ec_fault, stale_sealer)
{
	uint8_t *model = calloc(1, SIZE);
	uint64_t ino = mkvol("v", SIZE);
	struct sdfs_vol_seal_stat st;
	struct shared *sh = start_old_writer(ino, 1, &child);
	struct sdfs_vol *v;

	wait_stage(sh, 1, child);
	wait_stopped(child);    /* in its seal of chunk 6, before the strip put */
	old_model(model);
	v = take_over(ino);
	cr_assert(!sdfs_vol_chunk_sealed(v, 6));
	check(v, model, "taken over");
	put(v, model, 6 * OSZ, OSZ, 5);
	seal_all(v, &st);
	cr_assert_eq(st.sealed, 1);
	assert_sealed(v, 6, 1);
	check(v, model, "the new writer sealed chunk 6");
	/* the old writer goes on: its strip put of chunk 6 (tag 2) */
	resume_refused(sh, child, R_SEAL);
	assert_sealed(v, 6, 1);         /* K + M strip files: no stale version stored */
	check(v, model, "the old sealer resumed, the new writer");
	check_fresh(ino, NULL, model, "the old sealer resumed, a reader");
	sdfs_vol_close(v);
	munmap(sh, sizeof(*sh));
	free(model);
}

/* ---- 3. every block daemon killed ---- */

static void kill_all(void)
{
	char name[32];

	for (unsigned i = 0; i < NODES; i++) {
		snprintf(name, sizeof(name), "blockd.%u", i);
		cr_assert_eq(tcluster_kill(tc, name), 0, "kill %s", name);
	}
}

static void restart_all(void)
{
	char name[32];

	for (unsigned i = 0; i < NODES; i++) {
		snprintf(name, sizeof(name), "blockd.%u", i);
		cr_assert_eq(tcluster_restart(tc, name), 0, "restart %s", name);
	}
	cr_assert_eq(tcluster_wait_nodes_up(tc, NODES, 30000), 0);
}

Test(vol_ec_fault, crash_all)
{
	uint8_t *model = calloc(1, SIZE), *unknown = calloc(1, SIZE), *snap = malloc(SIZE);
	uint64_t ino = mkvol("v", SIZE), n;
	struct sdfs_vol *v = wopen(ino);
	struct writer w = { .v = v, .model = model, .unknown = unknown, .tolerate = 1,
			    .seed = tseed("ec_fault crash_all"), .span = SIZE / 2,
			    .focus = 100 };
	struct sealer s = { .v = v, .tolerate = 1 };
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol *sv;
	unsigned sealed_now;
	pthread_t wt, stt;

	put(v, model, 0, SIZE, 1);
	seal_all(v, &st);
	pthread_create(&wt, NULL, writer_main, &w);
	pthread_create(&stt, NULL, sealer_main, &s);
	tsleep_ms(1500);
	/* sealed at the moment of the crash: the untouched half, whole */
	for (uint64_t c = CHUNKS / 2; c < CHUNKS; c++)
		assert_sealed(v, c, 1);
	sealed_now = count_sealed(v, 0, CHUNKS / 2);
	cr_log_info("killing every block daemon after %u writes, %" PRIu64 " seals; %u of "
		    "the written half sealed now", w.writes, s.sealed, sealed_now);
	cr_assert_gt(s.sealed, 0, "no chunk sealed again while written");
	kill_all();
	tsleep_ms(500);
	restart_all();
	tsleep_ms(1500);
	atomic_store(&w.stop, 1);
	atomic_store(&s.stop, 1);
	pthread_join(wt, NULL);
	pthread_join(stt, NULL);
	cr_log_info("%u writes acknowledged, %u failed; %" PRIu64 " seals, %" PRIu64 " failed",
		    w.writes, w.failed, s.sealed, s.failed);
	cr_assert_eq(sdfs_vol_flush(v), 0);
	n = check_known(v, model, unknown, "every block daemon restarted, the writer");
	cr_log_info("%" PRIu64 " bytes of failed writes not checked", n);
	{
		struct sdfs_vol *r;

		cr_assert_eq(sdfs_vol_open(cl(), ino, 0, NULL, &r), 0);
		check_known(r, model, unknown, "every block daemon restarted, a reader");
		sdfs_vol_close(r);
	}
	/* what failed writes left is now a fact: the model takes it */
	{
		ssize_t got = sdfs_vol_pread(v, model, SIZE, 0);

		cr_assert_eq(got, (ssize_t)SIZE);
	}

	/* a snapshot while sealing runs (the writer paused for an exact
	 * model: acknowledged before the snapshot, nothing in flight) */
	w.tolerate = s.tolerate = 0;
	atomic_store(&w.stop, 0);
	atomic_store(&s.stop, 0);
	w.span = SIZE * 3 / 4;  /* the last quarter stays sealed from the start */
	pthread_create(&wt, NULL, writer_main, &w);
	pthread_create(&stt, NULL, sealer_main, &s);
	tsleep_ms(1000);
	atomic_store(&w.pause, 1);
	while (!atomic_load(&w.paused))
		tsleep_ms(5);
	memcpy(snap, model, SIZE);
	cr_assert_eq(sdfs_vol_snap_create(cl(), ino, "s1", NULL), 0);
	atomic_store(&w.pause, 0);
	tsleep_ms(1500);
	atomic_store(&w.stop, 1);
	atomic_store(&s.stop, 1);
	pthread_join(wt, NULL);
	pthread_join(stt, NULL);
	cr_assert_eq(sdfs_vol_open_snap(cl(), ino, "s1", &sv), 0);
	sealed_now = count_sealed(sv, 0, CHUNKS);
	cr_log_info("snapshot while sealing: %u of its chunks sealed; %u writes, %" PRIu64
		    " seals in all", sealed_now, w.writes, s.sealed);
	for (uint64_t c = CHUNKS * 3 / 4; c < CHUNKS; c++)
		cr_assert(sdfs_vol_chunk_sealed(sv, c), "the snapshot's chunk %" PRIu64, c);
	check(sv, snap, "the snapshot");
	sdfs_vol_close(sv);
	check(v, model, "live after the snapshot");
	sdfs_vol_close(v);
	check_fresh(ino, NULL, model, "live after the snapshot, a reader");
	free(model);
	free(unknown);
	free(snap);
}

/* ---- 4. fsx on a volume file through the mount ---- */

/* "chunks_sealed": N of `sdfs vol info /@name --json`; -1 if absent. */
static long vol_sealed(const char *name)
{
	char *out = NULL, *p;
	long n = -1;

	if (tcluster_sdfs(tc, &out, NULL, "vol info /%s --json", name) == 0 &&
	    (p = strstr(out, "\"chunks_sealed\": ")))
		n = strtol(p + 17, NULL, 10);
	free(out);
	return n;
}

#define FSX_CHUNKS 32

Test(vol_ec_fault, fsx)
{
	const char *bin = getenv("FSX_BIN");
	char path[PATH_MAX + 64], log[PATH_MAX], seed[32], *out = NULL;
	uint64_t sd = tseed("ec_fault fsx") % 1000000000000ull, size = FSX_CHUNKS * OSZ;
	uint64_t ino = mkvol("v", size);
	uint8_t *model = malloc(size);
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol *v = wopen(ino);
	long sealed = -1, at_kill = -1, at_restart = -1;
	int64_t end;
	pid_t pid;
	int ret = -1, killed = 0;

	cr_assert(bin && *bin, "FSX_BIN is not set (run through meson test)");
	/* the whole volume written and sealed: fsx starts on stripes */
	put(v, model, 0, size, 1);
	seal_all(v, &st);
	for (uint64_t c = 0; c < FSX_CHUNKS; c++)
		assert_sealed(v, c, 1);
	sdfs_vol_close(v);
	cr_assert_eq(vol_sealed("v"), FSX_CHUNKS);
	free(model);

	snprintf(seed, sizeof(seed), "%" PRIu64, sd);
	snprintf(log, sizeof(log), "%s/fsx.log", tcluster_dir(tc));
	vt_path(tc, "v", path);
	char *argv[] = { (char *)bin, "--file", path, "--fixed-size", "--ops", "3000",
			 "--seed", seed, "--obj-size", "1M", "--max-len", "256K",
			 "--progress", "500", NULL };
	pid = vt_spawn(argv, log);
	child = pid;
	end = tnow_ms() + 180000;
	for (unsigned i = 0; ret < 0; i++) {
		ret = vt_wait_child(pid, 250);
		if (ret >= 0)
			break;
		cr_assert_lt(tnow_ms(), end, "fsx did not finish in time");
		if (i == 0 && !killed) {
			/* chunks still sealed now: the kill hits stripes */
			at_kill = sealed = vol_sealed("v");
			cr_log_info("fsx: killing blockd.1 (%ld of %d chunks sealed now)", sealed,
				    FSX_CHUNKS);
			cr_assert_gt(sealed, 0, "fsx unsealed every chunk before the kill");
			cr_assert_eq(tcluster_kill(tc, "blockd.1"), 0);
			killed = 1;
		}
		if (i == 12 && killed == 1) {
			cr_assert_eq(tcluster_restart(tc, "blockd.1"), 0);
			at_restart = vol_sealed("v");
			cr_log_info("fsx: blockd.1 restarted (%ld chunks sealed now)", at_restart);
			killed = 2;
		}
	}
	child = 0;
	if (ret) {
		vt_slurp(log, (uint8_t **)&out);
		cr_assert_fail("fsx (seed %" PRIu64 ") exited with %d:\n%s", sd, ret,
			       out ? out : "");
	}
	out = NULL;
	vt_slurp(log, (uint8_t **)&out);
	{
		char *sum = out ? strstr(out, "ops verified") : NULL, *nl;

		if (sum && (nl = strchr(sum, '\n')))
			*nl = 0;
		cr_log_info("fsx seed %" PRIu64 ": %s", sd, sum ? sum : "(no summary)");
	}
	free(out);
	cr_log_info("chunks sealed: %d before fsx, %ld at the kill, %ld at the restart, %ld "
		    "after", FSX_CHUNKS, at_kill, at_restart, vol_sealed("v"));
	cr_assert_eq(killed, 2, "fsx ended before blockd.1 was restarted: make it longer");
}

/* ---- 5. corruption ---- */

/* Strip @s of @oid: the one file, 16 bytes of its first data block
 * flipped. */
static void corrupt(uint64_t oid, unsigned s)
{
	char pat[1024];
	uint8_t b[16];
	glob_t g;
	int fd;

	snprintf(pat, sizeof(pat), "%s/blockd.*/strip/%02x/%016" PRIx64 ".%02x.*",
		 tcluster_dir(tc), (unsigned)(oid & 0xff), oid, s);
	memset(&g, 0, sizeof(g));
	cr_assert_eq(glob(pat, 0, NULL, &g), 0, "no file for %s", pat);
	cr_assert_eq(g.gl_pathc, 1, "%zu files for %s", g.gl_pathc, pat);
	fd = open(g.gl_pathv[0], O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, b, sizeof(b), 4096), (ssize_t)sizeof(b));
	for (size_t j = 0; j < sizeof(b); j++)
		b[j] ^= 0x5a;
	cr_assert_eq(pwrite(fd, b, sizeof(b), 4096), (ssize_t)sizeof(b));
	close(fd);
	globfree(&g);
}

static void scrub_pass(uint64_t *found, uint64_t *repaired, uint64_t *unrepaired)
{
	struct sdfs_scrub_status *st;
	int64_t end = tnow_ms() + 60000;
	size_t n;

	cr_assert_eq(sdfs_scrub(cl(), SDFS_SCRUB_ALL, SDFS_SCRUB_BEGIN, 0, &st, &n), 0);
	free(st);
	for (;;) {
		size_t done = 0;

		cr_assert_eq(sdfs_scrub(cl(), SDFS_SCRUB_ALL, SDFS_SCRUB_ASK, 0, &st, &n), 0);
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(st[i].result, 0, "node %u", st[i].node_id);
			done += st[i].passes >= 1 && !strcmp(st[i].state, "idle");
		}
		if (done == n)
			break;
		free(st);
		cr_assert_lt(tnow_ms(), end, "scrub pass did not end");
		tsleep_ms(100);
	}
	/* the totals: the pass's and the reads' repairs (docs/scrub.md) */
	*found = *repaired = *unrepaired = 0;
	for (size_t i = 0; i < n; i++) {
		*found += st[i].total_strips_found;
		*repaired += st[i].total_strips_repaired;
		*unrepaired += st[i].total_strips_unrepaired;
	}
	free(st);
}

Test(vol_ec_fault, corrupt)
{
	uint8_t *model = calloc(1, SIZE), *b = vt_alloc(SIZE);
	uint64_t ino = mkvol("v", SIZE), found, repaired, unrepaired;
	struct sdfs_vol *v = wopen(ino);
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol_info vi;
	char *out = NULL;

	sdfs_vol_get_info(v, &vi);
	put(v, model, 0, SIZE, 1);
	seal_all(v, &st);
	for (uint64_t c = 0; c < CHUNKS; c++) {
		assert_sealed(v, c, 1);
		corrupt(oid_vstripe(vi.vid, c), (unsigned)(c % (K + M)));
	}
	sdfs_vol_close(v);
	vt_read_file(tc, "v", b, SIZE, 1);
	vt_assert_same(b, model, SIZE, 0, OSZ, "one strip of each chunk corrupt, the mount");
	check_fresh(ino, NULL, model, "one strip of each chunk corrupt, libsdfs");
	/* the reads asked for their data strips' rebuild: wait for it */
	for (uint64_t c = 0, end = (uint64_t)tnow_ms() + 10000; c < CHUNKS; c++)
		for (;;) {
			struct sdfs_ec_rstat rs;

			cr_assert_eq(sdfs_ec_read_ex(cl(), oid_vstripe(vi.vid, c), K, M, b, OSZ,
						     0, &rs), (ssize_t)OSZ);
			if (!rs.rebuilt)
				break;
			cr_assert_lt((uint64_t)tnow_ms(), end, "chunk %" PRIu64 ": not "
				     "read-repaired", c);
			tsleep_ms(20);
		}
	scrub_pass(&found, &repaired, &unrepaired);
	cr_log_info("scrub and read-repair: %" PRIu64 " corrupt strips found, %" PRIu64
		    " rebuilt, %" PRIu64 " left", found, repaired, unrepaired);
	cr_assert_eq(found, CHUNKS);
	cr_assert_eq(repaired, CHUNKS);
	cr_assert_eq(unrepaired, 0);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "scrub status"), 0);
	cr_log_info("%s", out);
	free(out);
	for (uint64_t c = 0; c < CHUNKS; c++) {
		struct sdfs_ec_rstat rs;

		cr_assert_eq(sdfs_ec_read_ex(cl(), oid_vstripe(vi.vid, c), K, M, b, OSZ, 0, &rs),
			     (ssize_t)OSZ);
		cr_assert(!memcmp(b, model + c * OSZ, OSZ), "chunk %" PRIu64, c);
		cr_assert_eq(rs.rebuilt, 0, "chunk %" PRIu64 ": a strip still rebuilt", c);
	}
	check_fresh(ino, NULL, model, "after the scrub");
	free(model);
	free(b);
}
