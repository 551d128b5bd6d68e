/*
 * vol_fault_test.c - a volume file under faults (docs/volumes.md): a
 * writer keeps writing through the mount with O_DIRECT while a block
 * daemon is SIGKILLed and restarted and the active mds is SIGKILLed
 * (volume I/O needs no mds: the VM keeps running), a snapshot is taken
 * meanwhile; every acknowledged write must read back, through the mount
 * and through libsdfs. And a corrupted replica of a volume object is
 * never returned.
 */
#include "tests/vol/vt.h"
#include "tests/cluster/objfile.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/oid.h"

#define MiB (1u << 20)
#define OBJ (1u << 20)          /* 64 chunks: many first writes */
#define SIZE (64u * MiB)
#define BLK 4096u

static struct tcluster *tc;

static void up(void)
{
	tc = vt_start();
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(vol_fault, .init = up, .fini = down, .timeout = 600);

struct writer {
	int fd;
	uint8_t *model;         /* what every acknowledged write left */
	uint64_t seed, failed_at;
	_Atomic uint64_t writes;        /* acknowledged so far */
	_Atomic int err;
	atomic_int stop;
	pthread_t th;
};

static void *write_loop(void *arg)
{
	struct writer *w = arg;
	uint8_t *buf = vt_alloc(16 * BLK);

	while (!atomic_load(&w->stop)) {
		uint64_t blk = trand(&w->seed) % (SIZE / BLK);
		size_t n = 1 + trand(&w->seed) % 16;

		if (blk + n > SIZE / BLK)
			n = SIZE / BLK - blk;
		vt_fill(buf, n * BLK, blk * BLK, w->writes + 1);
		ssize_t r = pwrite(w->fd, buf, n * BLK, (off_t)(blk * BLK));

		if (r != (ssize_t)(n * BLK)) {
			w->err = r < 0 ? errno : EIO;
			w->failed_at = w->writes;
			break;
		}
		memcpy(w->model + blk * BLK, buf, n * BLK);
		w->writes++;
	}
	free(buf);
	return NULL;
}

/* Wait until @n more writes are acknowledged (deadline @ms): the
 * writer goes on through whatever the test just did. */
static void progress(struct writer *w, uint64_t n, int ms, const char *during)
{
	uint64_t from = atomic_load(&w->writes);
	int64_t end = tnow_ms() + ms;

	while (atomic_load(&w->writes) < from + n && !atomic_load(&w->err) &&
	       tnow_ms() < end)
		tsleep_ms(10);
	cr_assert_eq(atomic_load(&w->err), 0, "write %" PRIu64 " failed %s: %s",
		     w->failed_at, during, strerror(atomic_load(&w->err)));
	cr_assert_geq(atomic_load(&w->writes), from + n, "fewer than %" PRIu64
		      " writes in %d ms %s", n, ms, during);
}

Test(vol_fault, writes_go_on_through_a_blockd_kill_and_an_mds_failover)
{
	struct writer w = { .seed = tseed("vol_fault") };
	char mds[32], path[PATH_MAX + 64];
	uint8_t *got = vt_alloc(SIZE);
	uint64_t ino, before;
	int ret;

	w.model = calloc(1, SIZE);
	cr_assert(w.model);
	ino = vt_create(tc, "vm", SIZE, OBJ, NULL);
	w.fd = vt_xopen(tc, "vm", O_RDWR | O_DIRECT);
	cr_assert_eq(pthread_create(&w.th, NULL, write_loop, &w), 0);

	progress(&w, 200, 30000, "at the start");
	before = atomic_load(&w.writes);
	cr_assert_eq(tcluster_kill(tc, "blockd.1"), 0);
	cr_log_info("blockd.1 killed after %" PRIu64 " writes", before);
	progress(&w, 200, 30000, "with blockd.1 dead");
	cr_assert_eq(tcluster_restart(tc, "blockd.1"), 0);
	progress(&w, 200, 30000, "after blockd.1 came back");

	cr_assert_eq(tcluster_active_mds(tc, mds, sizeof(mds)), 0);
	before = atomic_load(&w.writes);
	cr_assert_eq(tcluster_kill(tc, mds), 0);
	cr_log_info("%s (active) killed after %" PRIu64 " writes", mds, before);
	/* well inside the ~2 s before a standby takes over: no mds at all */
	progress(&w, 50, 1500, "while no mds was active");
	cr_assert_eq(tcluster_wait_active_mds(tc, mds, NULL, 0, 30000), 0);
	struct sdfs_vol_info vi;
	ret = sdfs_vol_snap_create(tcluster_client(tc), ino, "during", &vi);
	cr_assert_eq(ret, 0, "snapshot under writes after the failover: %s", strerror(-ret));
	progress(&w, 200, 30000, "after the snapshot");

	atomic_store(&w.stop, 1);
	pthread_join(w.th, NULL);
	cr_assert_eq(atomic_load(&w.err), 0, "write %" PRIu64 " failed: %s", w.failed_at,
		     strerror(atomic_load(&w.err)));
	vt_fsync(w.fd, "vm after the faults");
	cr_log_info("%" PRIu64 " writes, none failed", atomic_load(&w.writes));

	vt_pread(w.fd, got, SIZE, 0, "vm, same descriptor");
	vt_assert_same(got, w.model, SIZE, 0, OBJ, "vm, same descriptor");
	close(w.fd);
	vt_read_file(tc, "vm", got, SIZE, 1);
	vt_assert_same(got, w.model, SIZE, 0, OBJ, "vm, reopened O_DIRECT");
	vt_read_vol(tc, ino, NULL, got, SIZE);
	vt_assert_same(got, w.model, SIZE, 0, OBJ, "vm through libsdfs");
	/* the snapshot is readable whole */
	vt_read_vol(tc, ino, "during", got, SIZE);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0, "healthy again");
	(void)path;
	free(got);
	free(w.model);
}

Test(vol_fault, a_corrupted_replica_is_never_returned)
{
	struct sdfs *s = tcluster_client(tc);
	uint8_t *m = vt_alloc(4 * OBJ), *got = vt_alloc(4 * OBJ);
	struct sdfs_replica rep[4];
	struct sdfs_vol_info vi;
	uint64_t ino;
	size_t n = 0;
	int fd, ret;

	ino = vt_create(tc, "vc", 4 * OBJ, OBJ, NULL);
	fd = vt_xopen(tc, "vc", O_RDWR | O_DIRECT);
	vt_fill(m, 4 * OBJ, 0, 77);
	vt_pwrite(fd, m, 4 * OBJ, 0, "vc");
	vt_fsync(fd, "vc");
	close(fd);
	vt_info(tc, ino, NULL, &vi);
	/* flip a byte in chunk 2 on every replica but one */
	uint64_t oid = oid_vdata(vi.vid, 2, vi.copies);
	ret = sdfs_obj_locate(s, oid, rep, 4, &n);
	cr_assert_eq(ret, 0, "locate: %s", strerror(-ret));
	cr_assert_geq(n, 2);
	for (size_t i = 0; i + 1 < n; i++) {
		cr_assert_eq(rep[i].result, 0, "replica on node %u: %s", rep[i].node_id,
			     strerror(-rep[i].result));
		objfile_flip_data(rep[i].path, 1000 + i, 0x5a);
	}
	for (int round = 0; round < 3; round++) {
		vt_read_file(tc, "vc", got, 4 * OBJ, 1);
		vt_assert_same(got, m, 4 * OBJ, 0, OBJ, "vc with corrupted replicas");
		vt_read_vol(tc, ino, NULL, got, 4 * OBJ);
		vt_assert_same(got, m, 4 * OBJ, 0, OBJ, "vc through libsdfs");
	}
	free(m);
	free(got);
}
