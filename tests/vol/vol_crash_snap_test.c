/*
 * vol_crash_snap_test.c - snapshots taken while a writer runs are crash
 * consistent (docs/volumes.md "Snapshot, clone, rollback": writes
 * acknowledged before the freeze are in the snapshot, writes after are
 * not, a write in flight lands in one or the other, whole).
 *
 * A child process writes 4 KiB blocks with O_DIRECT (and, in one test,
 * without) through the mount,
 * each stamped with (block, thread, sequence) and filled with a pattern
 * of those, one write only after the previous one was acknowledged; the
 * block of the thread's k-th write is a function of k, so the state
 * after any prefix of a thread's writes can be computed. The test takes
 * snapshots meanwhile, noting each thread's acknowledged count just
 * before the snapshot call and its issued count just after. For every
 * snapshot and thread there must be an N with acked <= N <= issued such
 * that each of the thread's blocks holds exactly its last write of
 * sequence <= N: the writes up to N are all there, none after, none torn.
 * The same with one thread and with 8 threads on disjoint blocks.
 */
#include "tests/vol/vt.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define OBJ (256u << 10)        /* small chunks: many copy-on-writes per snapshot */
#define SIZE (8u << 20)
#define BLK 4096u
#define NBLK (SIZE / BLK)
#define SNAPS 5
#define MAX_THREADS 8
#define STAMP_MAGIC 0x5344465343524153ull       /* "SARCSFDS" */

struct shared {
	_Atomic uint64_t acked[MAX_THREADS], issued[MAX_THREADS];
	_Atomic int stop, failed;
	char msg[512];
};

struct stamp {
	uint64_t magic, block, thread, seq;
};

static struct tcluster *tc;
static struct shared *sh;
static pid_t writer;

static void up(void)
{
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	cr_assert(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	writer = 0;
	tc = vt_start();
}

static void down(void)
{
	if (writer > 0) {
		kill(writer, SIGKILL);
		waitpid(writer, NULL, 0);
	}
	tcluster_stop(tc);
}

TestSuite(vol_crash_snap, .init = up, .fini = down, .timeout = 600);

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The block of thread @t's @seq-th write (of @nthreads; thread t owns
 * the blocks b with b % nthreads == t). */
static uint64_t block_of(unsigned t, unsigned nthreads, uint64_t seq)
{
	uint64_t count = NBLK / nthreads;

	return (mix((uint64_t)t << 48 ^ seq) % count) * nthreads + t;
}

static uint64_t tag_of(uint64_t block, unsigned t, uint64_t seq)
{
	return mix(block << 40 ^ (uint64_t)t << 32 ^ seq) | 1;
}

static void make_block(uint8_t *buf, uint64_t block, unsigned t, uint64_t seq)
{
	struct stamp st = { STAMP_MAGIC, block, t, seq };

	vt_fill(buf, BLK, block * BLK, tag_of(block, t, seq));
	memcpy(buf, &st, sizeof(st));
}

/* ---- the writer (a child process; no criterion calls in it) ---- */

struct wthread {
	int fd;
	unsigned t, nthreads;
};

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	int expected = 0;

	if (!atomic_compare_exchange_strong(&sh->failed, &expected, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(sh->msg, sizeof(sh->msg), fmt, ap);
	va_end(ap);
}

static void *write_loop(void *arg)
{
	struct wthread *w = arg;
	uint8_t *buf = NULL;

	if (posix_memalign((void **)&buf, 4096, BLK)) {
		fail("thread %u: no memory", w->t);
		return NULL;
	}
	for (uint64_t seq = 1; !atomic_load(&sh->stop) && !atomic_load(&sh->failed); seq++) {
		uint64_t b = block_of(w->t, w->nthreads, seq);

		make_block(buf, b, w->t, seq);
		atomic_store(&sh->issued[w->t], seq);
		ssize_t n = pwrite(w->fd, buf, BLK, (off_t)(b * BLK));
		if (n != (ssize_t)BLK) {
			fail("thread %u: pwrite seq %" PRIu64 " block %" PRIu64 ": %s",
			     w->t, seq, b, n < 0 ? strerror(errno) : "short write");
			break;
		}
		atomic_store(&sh->acked[w->t], seq);
	}
	free(buf);
	return NULL;
}

static void writer_main(const char *path, unsigned nthreads, int direct)
{
	struct wthread w[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	int fd = open(path, O_RDWR | (direct ? O_DIRECT : 0) | O_CLOEXEC);

	if (fd < 0) {
		fail("open %s O_RDWR%s: %s", path, direct ? "|O_DIRECT" : "", strerror(errno));
		_exit(1);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		w[t] = (struct wthread){ fd, t, nthreads };
		if (pthread_create(&th[t], NULL, write_loop, &w[t])) {
			fail("pthread_create");
			_exit(1);
		}
	}
	for (unsigned t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	if (fsync(fd) < 0)
		fail("fsync: %s", strerror(errno));
	if (close(fd) < 0)
		fail("close: %s", strerror(errno));
	_exit(atomic_load(&sh->failed) ? 1 : 0);
}

/* ---- checking ---- */

/*
 * @vol (the whole volume) holds, for each thread t, exactly the state
 * after its writes 1..N for one N in [lo[t], hi[t]]. @what names it.
 */
static void check_prefix(const uint8_t *vol, unsigned nthreads, const uint64_t *lo,
			 const uint64_t *hi, const char *what)
{
	uint64_t *seq_at = calloc(NBLK, sizeof(*seq_at)), *want = calloc(NBLK, sizeof(*want));
	uint8_t *exp = vt_alloc(BLK);

	cr_assert(seq_at && want);
	/* what each block holds: a whole write (stamp and pattern) or zeros */
	for (uint64_t b = 0; b < NBLK; b++) {
		const uint8_t *p = vol + b * BLK;
		struct stamp st;
		int zero = 1;

		for (unsigned i = 0; i < BLK && zero; i++)
			zero = p[i] == 0;
		if (zero)
			continue;
		memcpy(&st, p, sizeof(st));
		cr_assert(st.magic == STAMP_MAGIC && st.block == b && st.thread == b % nthreads &&
			  st.seq > 0, "%s: block %" PRIu64 " holds neither zeros nor a write of "
			  "its own (magic %016" PRIx64 " block %" PRIu64 " thread %" PRIu64
			  " seq %" PRIu64 ")", what, b, st.magic, st.block, st.thread, st.seq);
		make_block(exp, b, (unsigned)st.thread, st.seq);
		cr_assert(!memcmp(p, exp, BLK), "%s: block %" PRIu64 " (seq %" PRIu64 ") is "
			  "torn: its stamp is whole but not all its bytes", what, b, st.seq);
		seq_at[b] = st.seq;
	}
	for (unsigned t = 0; t < nthreads; t++) {
		uint64_t n = 0;

		for (uint64_t b = t; b < NBLK; b += nthreads)
			if (seq_at[b] > n)
				n = seq_at[b];
		cr_assert(n >= lo[t], "%s: thread %u: the newest write in it is seq %" PRIu64
			  " but %" PRIu64 " were acknowledged before the snapshot was asked for",
			  what, t, n, lo[t]);
		cr_assert(n <= hi[t], "%s: thread %u: holds seq %" PRIu64 ", issued after the "
			  "snapshot returned (%" PRIu64 " issued by then)", what, t, n, hi[t]);
		memset(want, 0, NBLK * sizeof(*want));
		for (uint64_t k = 1; k <= n; k++)
			want[block_of(t, nthreads, k)] = k;
		for (uint64_t b = t; b < NBLK; b += nthreads)
			cr_assert_eq(seq_at[b], want[b], "%s: thread %u: not a prefix: with its "
				     "writes up to seq %" PRIu64 " present, block %" PRIu64 " should "
				     "hold seq %" PRIu64 " but holds %" PRIu64 "%s", what, t, n, b,
				     want[b], seq_at[b], seq_at[b] ? "" : " (zeros)");
	}
	cr_log_info("%s: a prefix of every thread's writes (%u threads)", what, nthreads);
	free(exp);
	free(seq_at);
	free(want);
}

static void run(unsigned nthreads, int direct)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t ino = vt_create(tc, "vm", SIZE, OBJ, NULL);
	uint64_t lo[SNAPS][MAX_THREADS], hi[SNAPS][MAX_THREADS], last[MAX_THREADS];
	char path[PATH_MAX + 64], name[16];
	uint8_t *vol = malloc(SIZE);

	cr_assert(vol);
	vt_path(tc, "vm", path);
	/* the mount must know the name before the child opens it */
	close(vt_xopen(tc, "vm", O_RDONLY));
	writer = fork();
	cr_assert(writer >= 0, "fork: %s", strerror(errno));
	if (writer == 0)
		writer_main(path, nthreads, direct);

	/* every thread has written before the first snapshot */
	for (int64_t end = tnow_ms() + VT_WAIT_MS;;) {
		unsigned ready = 0;

		for (unsigned t = 0; t < nthreads; t++)
			ready += atomic_load(&sh->acked[t]) >= 20;
		cr_assert(!atomic_load(&sh->failed), "writer: %s", sh->msg);
		if (ready == nthreads)
			break;
		cr_assert(tnow_ms() < end, "the writer did not get going within %d ms",
			  VT_WAIT_MS);
		tsleep_ms(20);
	}
	for (int i = 0; i < SNAPS; i++) {
		struct sdfs_vol_info vi;
		int ret;

		tsleep_ms(200 + 100 * i);       /* pacing: more writes between snapshots */
		for (unsigned t = 0; t < nthreads; t++)
			lo[i][t] = atomic_load(&sh->acked[t]);
		snprintf(name, sizeof(name), "c%d", i);
		ret = sdfs_vol_snap_create(s, ino, name, &vi);
		for (unsigned t = 0; t < nthreads; t++)
			hi[i][t] = atomic_load(&sh->issued[t]);
		cr_assert_eq(ret, 0, "sdfs_vol_snap_create %s under load: %s", name,
			     strerror(-ret));
		cr_assert(!atomic_load(&sh->failed), "writer, around snapshot %s: %s", name,
			  sh->msg);
		cr_log_info("snapshot %s: thread 0 acked %" PRIu64 " before, issued %" PRIu64
			    " after", name, lo[i][0], hi[i][0]);
	}
	/* it keeps writing after the last snapshot, then stops */
	for (uint64_t want = atomic_load(&sh->acked[0]) + 20, end = tnow_ms() + VT_WAIT_MS;
	     atomic_load(&sh->acked[0]) < want && !atomic_load(&sh->failed);) {
		cr_assert((uint64_t)tnow_ms() < end, "no writes after the last snapshot");
		tsleep_ms(10);
	}
	atomic_store(&sh->stop, 1);
	int st = vt_wait_child(writer, VT_WAIT_MS);
	cr_assert(st >= 0, "the writer did not stop within %d ms", VT_WAIT_MS);
	writer = 0;
	cr_assert(!atomic_load(&sh->failed), "writer: %s", sh->msg);
	cr_assert_eq(st, 0, "writer exit %d", st);

	for (int i = 0; i < SNAPS; i++) {
		char what[64];

		snprintf(name, sizeof(name), "c%d", i);
		snprintf(what, sizeof(what), "snapshot %s", name);
		vt_read_vol(tc, ino, name, vol, SIZE);
		check_prefix(vol, nthreads, lo[i], hi[i], what);
	}
	/* the live volume: every acknowledged write, through libsdfs and
	 * through the mount */
	for (unsigned t = 0; t < nthreads; t++)
		last[t] = atomic_load(&sh->acked[t]);
	vt_read_vol(tc, ino, NULL, vol, SIZE);
	check_prefix(vol, nthreads, last, last, "the live volume through libsdfs");
	vt_read_file(tc, "vm", vol, SIZE, 1);
	check_prefix(vol, nthreads, last, last, "the live volume through the mount");
	free(vol);
}

Test(vol_crash_snap, one_writer)
{
	run(1, 1);
}

Test(vol_crash_snap, eight_threads)
{
	run(8, 1);
}

/* Buffered writes: the mount has no writeback cache, so a write(2)
 * that returned is in the volume the same way. */
Test(vol_crash_snap, one_buffered_writer)
{
	run(1, 0);
}
