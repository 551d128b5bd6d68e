/*
 * vol_flush_test.c - sdfs_vol_flush from several threads of one handle
 * (the NBD plugin's connections, QEMU's I/O threads through libsdfs):
 * a flush may return only once every write acknowledged before it is
 * durable, including writes an earlier, still running flush took.
 *
 * The block daemons run with the test hook
 * SDFS_BLOCKD_FAULT=stall_flush:*:FILE (blockd/ops.c): every flush
 * request waits while FILE exists. A write, then flush A, stalled on
 * the daemons; then flush B: B must not return while A's objects are not
 * synced. Before the fix B found the dirty list empty (A had taken it)
 * and returned 0 at once.
 */
#include "tests/vol/vt.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OBJ (1u << 20)
#define SIZE (8u << 20)
#define WAIT_MS 500             /* B must still be waiting after this */

static struct tcluster *tc;
static char stall_file[PATH_MAX];

static void up(void)
{
	char f[PATH_MAX + 64];
	char tmpl[] = "/tmp/sdfs-stall.XXXXXX";
	int fd = mkstemp(tmpl);

	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	close(fd);
	unlink(tmpl);           /* made again while flushes must stall */
	snprintf(stall_file, sizeof(stall_file), "%s", tmpl);
	snprintf(f, sizeof(f), "stall_flush:*:%s", stall_file);
	setenv("SDFS_BLOCKD_FAULT", f, 1);
	tc = vt_start();
	unsetenv("SDFS_BLOCKD_FAULT");
}

static void down(void)
{
	unlink(stall_file);
	tcluster_stop(tc);
}

TestSuite(vol_flush, .init = up, .fini = down, .timeout = 120);

struct bg_flush {
	struct sdfs_vol *v;
	_Atomic int done;
	int ret;
};

static void *bg_flush_run(void *arg)
{
	struct bg_flush *f = arg;

	f->ret = sdfs_vol_flush(f->v);
	atomic_store(&f->done, 1);
	return NULL;
}

Test(vol_flush, a_flush_waits_for_one_already_running)
{
	struct sdfs *s = tcluster_client(tc);
	struct bg_flush a = { 0 }, b = { 0 };
	uint8_t *buf = vt_alloc(64 * 1024);
	pthread_t ta, tb;
	struct sdfs_vol *v;
	char *line = NULL;
	uint64_t ino;
	int ret, fd;

	ino = vt_create(tc, "v", SIZE, OBJ, NULL);
	ret = sdfs_vol_open(s, ino, SDFS_VOL_WRITE, "vol_flush_test", &v);
	cr_assert_eq(ret, 0, "sdfs_vol_open: %s", strerror(-ret));
	vt_fill(buf, 64 * 1024, 0, 1);
	ret = sdfs_vol_pwrite(v, buf, 64 * 1024, 0);
	cr_assert_eq(ret, 0, "sdfs_vol_pwrite: %s", strerror(-ret));

	/* flush A stalls on the daemons */
	fd = open(stall_file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert(fd >= 0, "%s: %s", stall_file, strerror(errno));
	close(fd);
	a.v = v;
	cr_assert_eq(pthread_create(&ta, NULL, bg_flush_run, &a), 0);
	for (unsigned i = 0; i < 3 && !line; i++) {
		char name[32];

		snprintf(name, sizeof(name), "blockd.%u", i);
		line = tcluster_log_line(tc, name, "flush stalled", i ? 100 : 10000);
	}
	cr_assert(line, "no block daemon logged a stalled flush");
	free(line);
	cr_assert_not(atomic_load(&a.done), "flush A returned (%d) while every flush "
		      "stalls", a.ret);

	/* flush B, after the write was acknowledged: it must wait for A */
	b.v = v;
	cr_assert_eq(pthread_create(&tb, NULL, bg_flush_run, &b), 0);
	for (int64_t end = tnow_ms() + WAIT_MS; tnow_ms() < end; tsleep_ms(20))
		cr_assert_not(atomic_load(&b.done), "flush B returned %d (%s) while the "
			      "write it covers was still being synced by flush A", b.ret,
			      strerror(-b.ret));
	unlink(stall_file);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_assert_eq(a.ret, 0, "flush A: %s", strerror(-a.ret));
	cr_assert_eq(b.ret, 0, "flush B: %s", strerror(-b.ret));
	sdfs_vol_close(v);
	free(buf);
}
