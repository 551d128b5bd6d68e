/*
 * hung_read_test.c - reads never wait long on a hung block daemon
 * (issue 14): one blockd holding a copy of every object is SIGSTOPped
 * for STOP_MS (longer than the client's 10 s operation timeout) while
 * reader threads read and stat objects through one libsdfs handle and
 * a writer rewrites other objects.
 *
 * Asserted: every read returns the bytes last written and none fails
 * (a replica that does not answer within read_timeout_ms is passed
 * over for the next one; before, a read waited the whole 10 s on it
 * and then failed with EIO); every stat succeeds; after SIGCONT the
 * cluster gets healthy (recovery catches the stopped node up) within a
 * generous deadline, and then every object the writer rewrote reads
 * back as its last acknowledged write (or, if its last write failed,
 * as that one: a failed write may have happened). The same for reads of
 * a volume file (sdfs_vol_pread through its writer's handle, which
 * needs no mds once open). The longest single read and stat and how
 * long until healthy are printed, never asserted.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"

#define STOP_MS 15000           /* > the client's 10 s timeout */
#define HEALTHY_S 120           /* a bound, not a benchmark */
#define NREAD 400               /* objects the readers read */
#define NWRITE 100              /* objects the writer rewrites */
#define OBJ_LEN 4096
#define READERS 4
#define OID_READ 0x7100000000ull
#define OID_WRITE 0x7200000000ull

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .copies = 3 });
}

/* Volumes live in the namespace: the mds too. Criterion runs the
 * suite's init (up) before a test's own, so that cluster goes first:
 * it was left behind in /tmp with every run. */
static void up_mds(void)
{
	tcluster_stop(tc);
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .copies = 3, .mds = 2 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(hung_read, .init = up, .fini = down, .timeout = 400);

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Object @i's bytes in round @round: every 8 bytes say which. */
static void fill(char *buf, uint64_t oid, uint64_t round)
{
	for (size_t k = 0; k < OBJ_LEN; k += 16) {
		memcpy(buf + k, &oid, 8);
		memcpy(buf + k + 8, &round, 8);
	}
}

struct shared {
	struct sdfs *s;
	atomic_int stop;
	atomic_long reads, stats;
	atomic_long max_read_ms, max_stat_ms;
	atomic_int failed;              /* first failure: errno, or EILSEQ */
	atomic_ulong failed_oid;
	/* the writer's */
	uint64_t ok_round[NWRITE];      /* last acknowledged round, 0: none */
	uint64_t try_round[NWRITE];     /* last round tried */
	long writes, write_errors;
};

struct reader {
	struct shared *sh;
	unsigned id;
};

static void note_max(atomic_long *max, long v)
{
	long cur = atomic_load(max);

	while (v > cur && !atomic_compare_exchange_weak(max, &cur, v))
		;
}

static void note_fail(struct shared *sh, int err, uint64_t oid)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&sh->failed, &zero, err))
		atomic_store(&sh->failed_oid, oid);
}

static void *reader_run(void *arg)
{
	struct reader *rd = arg;
	struct shared *sh = rd->sh;
	char want[OBJ_LEN], got[OBJ_LEN];

	for (unsigned i = rd->id; !atomic_load(&sh->stop); i += 7) {
		uint64_t oid = OID_READ + i % NREAD;
		int64_t t0 = now_ms();

		if (i % 5 == 0) {
			struct sdfs_obj_info info;
			int ret = sdfs_obj_stat(sh->s, oid, &info);

			note_max(&sh->max_stat_ms, (long)(now_ms() - t0));
			atomic_fetch_add(&sh->stats, 1);
			if (ret)
				note_fail(sh, -ret, oid);
			else if (info.size != OBJ_LEN)
				note_fail(sh, EILSEQ, oid);
			continue;
		}
		ssize_t n = sdfs_obj_read(sh->s, oid, got, sizeof(got), 0);

		note_max(&sh->max_read_ms, (long)(now_ms() - t0));
		atomic_fetch_add(&sh->reads, 1);
		fill(want, oid, 1);
		if (n < 0)
			note_fail(sh, (int)-n, oid);
		else if (n != OBJ_LEN || memcmp(want, got, OBJ_LEN))
			note_fail(sh, EILSEQ, oid);
	}
	return NULL;
}

/* Rewrite the writer's objects round after round: recovery has
 * something to fetch when the stopped node comes back. Its errors are
 * not this test's subject (writes have their own bound), only what
 * reads see afterwards. */
static void *writer_run(void *arg)
{
	struct shared *sh = arg;
	char buf[OBJ_LEN];

	for (uint64_t round = 2; !atomic_load(&sh->stop); round++) {
		for (unsigned i = 0; i < NWRITE && !atomic_load(&sh->stop); i++) {
			uint64_t oid = OID_WRITE + i;

			fill(buf, oid, round);
			sh->try_round[i] = round;
			if (sdfs_obj_put(sh->s, oid, buf, sizeof(buf)) == 0)
				sh->ok_round[i] = round;
			else
				sh->write_errors++;
			sh->writes++;
		}
	}
	return NULL;
}

static void put_all(struct sdfs *s, uint64_t base, unsigned n, uint64_t round,
		    uint64_t *ok)
{
	char buf[OBJ_LEN];

	for (unsigned i = 0; i < n; i++) {
		fill(buf, base + i, round);
		cr_assert_eq(sdfs_obj_put(s, base + i, buf, sizeof(buf)), 0,
			     "put %016" PRIx64, base + i);
		if (ok)
			ok[i] = round;
	}
}

Test(hung_read, reads_pass_over_a_stopped_blockd)
{
	static struct shared sh;
	struct reader rd[READERS];
	pthread_t th[READERS], wth;

	memset(&sh, 0, sizeof(sh));
	sh.s = tcluster_client(tc);
	put_all(sh.s, OID_READ, NREAD, 1, NULL);
	put_all(sh.s, OID_WRITE, NWRITE, 1, sh.ok_round);
	for (unsigned i = 0; i < NWRITE; i++)
		sh.try_round[i] = 1;

	for (unsigned i = 0; i < READERS; i++) {
		rd[i] = (struct reader){ &sh, i };
		cr_assert_eq(pthread_create(&th[i], NULL, reader_run, &rd[i]), 0);
	}
	cr_assert_eq(pthread_create(&wth, NULL, writer_run, &sh), 0);
	usleep(500 * 1000);

	cr_assert_eq(tcluster_signal(tc, "blockd.1", SIGSTOP), 0);
	usleep(STOP_MS * 1000);
	cr_assert_eq(tcluster_signal(tc, "blockd.1", SIGCONT), 0);
	int64_t cont = now_ms();
	usleep(1000 * 1000);    /* reads while it catches up, too */

	atomic_store(&sh.stop, 1);
	for (unsigned i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	pthread_join(wth, NULL);
	cr_log_info("%ld reads, %ld stats while blockd.1 was stopped %d s; longest "
		    "read %.1f s, longest stat %.1f s; writer: %ld puts, %ld failed",
		    atomic_load(&sh.reads), atomic_load(&sh.stats), STOP_MS / 1000,
		    atomic_load(&sh.max_read_ms) / 1000.0,
		    atomic_load(&sh.max_stat_ms) / 1000.0, sh.writes, sh.write_errors);
	printf("hung_read: longest read %.1f s, longest stat %.1f s (%ld reads)\n",
	       atomic_load(&sh.max_read_ms) / 1000.0,
	       atomic_load(&sh.max_stat_ms) / 1000.0, atomic_load(&sh.reads));
	cr_expect_eq(atomic_load(&sh.failed), 0, "a read or stat of %016lx failed: %s",
		     atomic_load(&sh.failed_oid), strerror(atomic_load(&sh.failed)));

	cr_assert_eq(tcluster_wait_healthy(tc, HEALTHY_S), 0,
		     "not healthy %d s after SIGCONT", HEALTHY_S);
	printf("hung_read: healthy %.1f s after SIGCONT\n", (now_ms() - cont) / 1000.0);

	/* Nothing acknowledged was lost: each object holds its last
	 * acknowledged round or a later one that failed (a failed write
	 * may still have happened). */
	for (unsigned i = 0; i < NWRITE; i++) {
		uint64_t oid = OID_WRITE + i, round;
		char want[OBJ_LEN], got[OBJ_LEN];
		ssize_t n = sdfs_obj_read(sh.s, oid, got, sizeof(got), 0);

		cr_assert_eq(n, OBJ_LEN, "read %016" PRIx64 ": %zd", oid, n);
		memcpy(&round, got + 8, 8);
		fill(want, oid, round);
		cr_assert(!memcmp(got, want, OBJ_LEN) && round >= sh.ok_round[i] &&
			  round <= sh.try_round[i],
			  "%016" PRIx64 ": round %" PRIu64 ", not its last acknowledged "
			  "write (round %" PRIu64 ", tried up to %" PRIu64 ")", oid, round,
			  sh.ok_round[i], sh.try_round[i]);
	}
}

#define VOL_SIZE (32ull << 20)
#define VOL_IO (64 * 1024)

struct vol_reader {
	struct sdfs_vol *v;
	unsigned id;
	atomic_int *stop, *failed;
	atomic_long *reads, *max_ms;
};

/* Byte @off of the volume: says where it came from. */
static uint8_t vol_byte(uint64_t off)
{
	return (uint8_t)(off * 131 + (off >> 12) * 7 + 1);
}

static void *vol_reader_run(void *arg)
{
	struct vol_reader *vr = arg;
	static uint8_t bufs[READERS][VOL_IO];
	uint8_t *got = bufs[vr->id];

	for (uint64_t k = vr->id; !atomic_load(vr->stop); k += 13) {
		uint64_t off = k * VOL_IO % VOL_SIZE;
		int64_t t0 = now_ms();
		ssize_t n = sdfs_vol_pread(vr->v, got, VOL_IO, off);

		note_max(vr->max_ms, (long)(now_ms() - t0));
		atomic_fetch_add(vr->reads, 1);
		int bad = n != VOL_IO;
		for (size_t i = 0; !bad && i < VOL_IO; i++)
			bad = got[i] != vol_byte(off + i);
		if (bad) {
			int zero = 0;

			atomic_compare_exchange_strong(vr->failed, &zero,
						       n < 0 ? (int)-n : EILSEQ);
		}
	}
	return NULL;
}

Test(hung_read, volume_reads_pass_over_a_stopped_blockd, .init = up_mds)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_stat root, st;
	struct sdfs_vol *v;
	static uint8_t buf[1 << 20];
	struct vol_reader vr[READERS];
	pthread_t th[READERS];
	atomic_int stop = 0, failed = 0;
	atomic_long reads = 0, max_ms = 0;

	cr_assert_eq(sdfs_ns_resolve(s, "/", 1, &root), 0);
	cr_assert_eq(sdfs_vol_create(s, root.ino, "vm.img", 0644, 0, 0, VOL_SIZE, 0, 0,
				     &st), 0);
	cr_assert_eq(sdfs_vol_open(s, st.ino, SDFS_VOL_WRITE, NULL, &v), 0);
	for (uint64_t off = 0; off < VOL_SIZE; off += sizeof(buf)) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = vol_byte(off + i);
		cr_assert_eq(sdfs_vol_pwrite(v, buf, sizeof(buf), off), 0);
	}
	cr_assert_eq(sdfs_vol_flush(v), 0);

	for (unsigned i = 0; i < READERS; i++) {
		vr[i] = (struct vol_reader){ v, i, &stop, &failed, &reads, &max_ms };
		cr_assert_eq(pthread_create(&th[i], NULL, vol_reader_run, &vr[i]), 0);
	}
	usleep(500 * 1000);
	cr_assert_eq(tcluster_signal(tc, "blockd.1", SIGSTOP), 0);
	usleep(STOP_MS * 1000);
	cr_assert_eq(tcluster_signal(tc, "blockd.1", SIGCONT), 0);
	usleep(1000 * 1000);
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	printf("hung_read: volume: longest read %.1f s (%ld reads of %d KiB)\n",
	       atomic_load(&max_ms) / 1000.0, atomic_load(&reads), VOL_IO / 1024);
	cr_expect_eq(atomic_load(&failed), 0, "a volume read failed: %s",
		     strerror(atomic_load(&failed)));
	sdfs_vol_close(v);
	cr_assert_eq(tcluster_wait_healthy(tc, HEALTHY_S), 0,
		     "not healthy %d s after SIGCONT", HEALTHY_S);
}
