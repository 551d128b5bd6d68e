/*
 * vol_writer_test.c - one writer per volume file across mounts
 * (docs/volumes.md "One writer: lock and token"), with two mounts of one
 * cluster: the fixture's at DIR/mnt (A, dev name "mnt") and one this
 * test starts at DIR/mnt2 (B).
 *
 * - While A has the file open for writing, B's open for writing fails
 *   with EBUSY, B's read-only open works; A's daemon SIGKILLed, B can
 *   open it for writing once A's ZooKeeper session expired.
 * - A zombie: A's daemon SIGSTOPped with a write of a process on A about
 *   to go; B takes the volume and writes; A resumed: its pending and
 *   later writes fail with EIO, and nothing A wrote after the takeover
 *   is in the volume.
 * - Migration with vol_lazy: B opens while A writes, B's first write
 *   waits until A closes.
 * - vol_wait: B's open(O_RDWR) waits while A writes, and returns once A
 *   closes.
 *
 * B is always unmounted at teardown (and by a watchdog if the test
 * process dies); the writer process on A is killed by its pid.
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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define OBJ (1u << 20)
#define SIZE (8u << 20)
#define MiB (1u << 20)
#define KiB 1024u
#define TAKEOVER_MS 30000       /* B gets the lock this soon after A stops */

static struct tcluster *tc;
static struct vt_mount2 m2;
static pid_t child;

enum { W_PENDING, W_AFTER_SAME, W_AFTER_NEW_CHUNK, W_AFTER_OLD_CHUNK, W_FSYNC, W_N };
static const char *const w_name[W_N] = {
	"the write pending at SIGSTOP ([0, 64K))", "a later write ([1M, 1M+64K))",
	"a later write into a new chunk ([3M, 3M+64K))",
	"a later write ([512K, 576K), a chunk A wrote before)", "fsync",
};
static const uint64_t w_off[W_N] = { 0, MiB, 3 * MiB, 512 * KiB, 0 };

struct shared {
	_Atomic int ready, go, done;
	int result[W_N];        /* 0 or errno */
	char msg[256];
};
static struct shared *sh;

static void up(void)
{
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	cr_assert(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	memset(&m2, 0, sizeof(m2));
	child = 0;
	tc = vt_start();
}

static void down(void)
{
	if (tc)
		tcluster_signal(tc, "mnt", SIGCONT);    /* harmless if not stopped */
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	vt_mount2_stop(&m2);
	tcluster_stop(tc);
}

TestSuite(vol_writer, .init = up, .fini = down, .timeout = 600);

/* B's path of @name. */
static const char *b_path(const char *name, char *buf)
{
	snprintf(buf, PATH_MAX + 64, "%s/%s", m2.path, name);
	return buf;
}

static int b_open(const char *name, int flags)
{
	char path[PATH_MAX + 64];

	return open(b_path(name, path), flags | O_CLOEXEC);
}

static void start_b(void)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/mnt2", tcluster_dir(tc));
	vt_mount2_start(tc, &m2, path, NULL);
}

/* B opens @name for writing (O_RDWR) as soon as the lock is free: every
 * failure meanwhile must be EBUSY. The descriptor. */
static int b_open_write_when_free(const char *name, const char *why)
{
	int64_t t0 = tnow_ms(), end = t0 + TAKEOVER_MS;
	int fd;

	while ((fd = b_open(name, O_RDWR | O_DIRECT)) < 0) {
		cr_assert_eq(errno, EBUSY, "B: open(O_RDWR) of %s %s: %s, expected EBUSY until "
			     "the lock is free", name, why, strerror(errno));
		cr_assert(tnow_ms() < end, "B: %s still EBUSY %d ms %s", name, TAKEOVER_MS, why);
		tsleep_ms(100);
	}
	cr_log_info("B opened %s for writing %" PRId64 " ms %s", name, tnow_ms() - t0, why);
	return fd;
}

/* Pattern @tag at [off, off+len) through @fd (O_DIRECT: aligned), and
 * into @model. */
static void put(int fd, uint8_t *model, uint64_t off, size_t len, uint64_t tag,
		const char *what)
{
	uint8_t *buf = vt_alloc(len);

	vt_fill(buf, len, off, tag);
	vt_pwrite(fd, buf, len, off, what);
	memcpy(model + off, buf, len);
	free(buf);
}

static void check_all(const char *name, const uint8_t *model, const char *when)
{
	uint8_t *got = vt_alloc(SIZE);
	char what[256];
	int fd;

	/* through B, O_DIRECT */
	fd = b_open(name, O_RDONLY | O_DIRECT);
	cr_assert(fd >= 0, "B: open %s read-only: %s", name, strerror(errno));
	snprintf(what, sizeof(what), "%s through mount B %s", name, when);
	vt_pread(fd, got, SIZE, 0, what);
	close(fd);
	vt_assert_same(got, model, SIZE, 0, OBJ, what);
	/* through libsdfs */
	snprintf(what, sizeof(what), "%s through libsdfs %s", name, when);
	vt_read_vol(tc, vt_ino(tc, name), NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, what);
	free(got);
}

Test(vol_writer, ebusy_then_takeover_after_sigkill)
{
	uint8_t *model = vt_alloc(SIZE), *got = vt_alloc(2 * MiB);
	int fa, fa2, fb_ro, fd;

	vt_create(tc, "vf", SIZE, OBJ, NULL);
	start_b();

	fa = vt_xopen(tc, "vf", O_RDWR | O_DIRECT);
	put(fa, model, 0, 2 * MiB, 1, "A: vf");
	vt_fsync(fa, "A: vf");

	/* B may not write while A does; B may read */
	errno = 0;
	fd = b_open("vf", O_RDWR);
	cr_assert(fd < 0 && errno == EBUSY, "B: open(O_RDWR) while A writes: fd %d, %s; "
		  "expected EBUSY", fd, fd < 0 ? strerror(errno) : "opened");
	errno = 0;
	fd = b_open("vf", O_WRONLY);
	cr_assert(fd < 0 && errno == EBUSY, "B: open(O_WRONLY) while A writes: fd %d, %s; "
		  "expected EBUSY", fd, fd < 0 ? strerror(errno) : "opened");
	fb_ro = b_open("vf", O_RDONLY | O_DIRECT);
	cr_assert(fb_ro >= 0, "B: open(O_RDONLY) while A writes: %s", strerror(errno));
	vt_pread(fb_ro, got, 2 * MiB, 0, "B: vf read-only");
	vt_assert_same(got, model, 2 * MiB, 0, OBJ, "vf read through B while A writes");
	/* a reader elsewhere sees what the writer flushed (its handle
	 * reloads the live state: at most a second late) */
	put(fa, model, 4 * MiB, 64 * KiB, 5, "A: vf, while B reads");
	vt_fsync(fa, "A: vf, while B reads");
	for (int64_t end = tnow_ms() + 10000;;) {
		vt_pread(fb_ro, got, 64 * KiB, 4 * MiB, "B: vf read-only");
		if (!memcmp(got, model + 4 * MiB, 64 * KiB))
			break;
		if (tnow_ms() > end)
			vt_assert_same(got, model + 4 * MiB, 64 * KiB, 4 * MiB, OBJ, "B's "
				       "read-only descriptor 10 s after A wrote and fsynced");
		tsleep_ms(100);
	}
	/* inside A the lock is the mount's: a second writer there is fine */
	fa2 = vt_xopen(tc, "vf", O_RDWR);
	close(fa2);

	/* A dies; B takes over once A's session expired */
	cr_assert_eq(tcluster_kill(tc, "mnt"), 0, "sdfs dev kill mnt");
	close(fa);      /* its mount is gone: whatever close says */
	fd = b_open_write_when_free("vf", "after A's daemon was SIGKILLed");
	put(fd, model, MiB, 2 * MiB, 2, "B: vf");
	vt_fsync(fd, "B: vf");
	vt_pread(fb_ro, got, 2 * MiB, MiB, "B: vf read-only, after B wrote");
	vt_assert_same(got, model + MiB, 2 * MiB, MiB, OBJ, "vf through B's read-only "
		       "descriptor after B wrote");
	close(fb_ro);
	check_all("vf", model, "after the takeover");
	close(fd);

	/* A back: it reads B's data and, B having closed, can write again */
	cr_assert_eq(tcluster_restart(tc, "mnt"), 0, "sdfs dev start mnt");
	uint8_t *all = vt_alloc(SIZE);
	vt_read_file(tc, "vf", all, SIZE, 1);
	vt_assert_same(all, model, SIZE, 0, OBJ, "vf through a new mount A");
	for (int64_t end = tnow_ms() + VT_WAIT_MS; (fa = vt_open(tc, "vf", O_RDWR)) < 0;) {
		cr_assert_eq(errno, EBUSY, "A: open(O_RDWR) after B closed: %s", strerror(errno));
		cr_assert(tnow_ms() < end, "A: still EBUSY %d ms after B closed", VT_WAIT_MS);
		tsleep_ms(100);
	}
	put(fa, model, 6 * MiB, 4096, 3, "A again: vf");
	vt_fsync(fa, "A again: vf");
	close(fa);
	check_all("vf", model, "after A wrote again");
	free(all);
	free(model);
	free(got);
}

/* ---- the zombie writer: a process on mount A (no criterion in it) ---- */

static void zombie_main(const char *path)
{
	uint8_t *buf = NULL;
	int fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);

	if (fd < 0 || posix_memalign((void **)&buf, 4096, 2 * MiB)) {
		snprintf(sh->msg, sizeof(sh->msg), "open %s: %s", path, strerror(errno));
		_exit(1);
	}
	vt_fill(buf, 2 * MiB, 0, 1);
	if (pwrite(fd, buf, 2 * MiB, 0) != (ssize_t)(2 * MiB) || fsync(fd)) {
		snprintf(sh->msg, sizeof(sh->msg), "first write: %s", strerror(errno));
		_exit(1);
	}
	atomic_store(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		usleep(1000);
	for (int i = 0; i < W_N; i++) {
		int ok;

		vt_fill(buf, 64 * KiB, w_off[i], 9);
		errno = 0;
		if (i == W_FSYNC)
			ok = fsync(fd) == 0;
		else
			ok = pwrite(fd, buf, 64 * KiB, (off_t)w_off[i]) == (ssize_t)(64 * KiB);
		sh->result[i] = ok ? 0 : errno ? errno : EIO;
	}
	close(fd);
	atomic_store(&sh->done, 1);
	_exit(0);
}

Test(vol_writer, sigstopped_writer_is_fenced)
{
	uint8_t *model = vt_alloc(SIZE);
	char path[PATH_MAX + 64];
	int fd;

	vt_create(tc, "vf", SIZE, OBJ, NULL);
	start_b();
	close(vt_xopen(tc, "vf", O_RDONLY));    /* A knows the name */
	vt_fill(model, 2 * MiB, 0, 1);          /* what the zombie writes first */

	child = fork();
	cr_assert(child >= 0);
	if (child == 0)
		zombie_main(vt_path(tc, "vf", path));
	for (int64_t end = tnow_ms() + VT_WAIT_MS; !atomic_load(&sh->ready);) {
		int st = vt_wait_child(child, 0);

		if (st >= 0)
			child = 0;
		cr_assert(st < 0, "the writer on A exited (%d): %s", st, sh->msg);
		cr_assert(tnow_ms() < end, "the writer on A did not write within %d ms",
			  VT_WAIT_MS);
		tsleep_ms(10);
	}

	/* A stops with a write about to go (or gone into the kernel) */
	cr_assert_eq(tcluster_signal(tc, "mnt", SIGSTOP), 0);
	atomic_store(&sh->go, 1);
	fd = b_open_write_when_free("vf", "after A's daemon was SIGSTOPped");
	cr_assert(!atomic_load(&sh->done), "the writer on A finished its writes while its "
		  "mount was stopped");
	put(fd, model, 0, 2 * MiB, 4, "B: vf (Q)");
	vt_fsync(fd, "B: vf (Q)");

	/* A resumes: a zombie, fenced */
	cr_assert_eq(tcluster_signal(tc, "mnt", SIGCONT), 0);
	int st = vt_wait_child(child, 60000);
	cr_assert(st >= 0, "the writer on A still blocked 60 s after SIGCONT");
	child = 0;
	cr_assert_eq(st, 0, "the writer on A: exit %d: %s", st, sh->msg);
	for (int i = 0; i < W_N; i++)
		cr_log_info("A after the takeover: %s: %s", w_name[i],
			    sh->result[i] ? strerror(sh->result[i]) : "succeeded");
	for (int i = 0; i < W_N; i++)
		cr_expect_eq(sh->result[i], EIO, "A (fenced zombie): %s: %s, expected EIO",
			     w_name[i], sh->result[i] ? strerror(sh->result[i]) : "succeeded");

	/* only B's data, even where B did not write */
	check_all("vf", model, "after the zombie resumed");
	uint8_t *got = vt_alloc(SIZE);
	vt_read_file(tc, "vf", got, SIZE, 1);
	vt_assert_same(got, model, SIZE, 0, OBJ, "vf through mount A after the zombie "
		       "resumed");
	/* B still writes */
	put(fd, model, 5 * MiB, 64 * KiB, 5, "B: vf after the zombie resumed");
	vt_fsync(fd, "B: vf after the zombie resumed");
	close(fd);
	check_all("vf", model, "after B wrote again");
	free(got);
	free(model);
}

/* B's write in the background: its result once done. */
struct bg_write {
	int fd;
	const uint8_t *buf;
	size_t len;
	uint64_t off;
	_Atomic int done;
	ssize_t ret;
	int err;
};

static void *bg_write_run(void *arg)
{
	struct bg_write *w = arg;

	w->ret = pwrite(w->fd, w->buf, w->len, (off_t)w->off);
	w->err = errno;
	atomic_store(&w->done, 1);
	return NULL;
}

/* QEMU live migration (docs/volumes.md "Migration"): the destination
 * mounts with vol_lazy, opens the image read-write while the source
 * still writes it, and its first write waits for the source's close. */
Test(vol_writer, migration_hands_the_lock_over_with_vol_lazy)
{
	char path[PATH_MAX + 16];
	uint8_t *model = vt_alloc(SIZE), *got = vt_alloc(SIZE), *bbuf = vt_alloc(MiB);
	struct bg_write w = { 0 };
	pthread_t th;
	int fa, fb;

	vt_create(tc, "vm", SIZE, OBJ, NULL);
	snprintf(path, sizeof(path), "%s/mnt2", tcluster_dir(tc));
	vt_mount2_start(tc, &m2, path, "vol_lazy");

	fa = vt_xopen(tc, "vm", O_RDWR | O_DIRECT);
	put(fa, model, 0, 2 * MiB, 1, "source: vm");
	vt_fsync(fa, "source: vm");

	/* the destination opens read-write while the source writes */
	fb = b_open("vm", O_RDWR | O_DIRECT);
	cr_assert(fb >= 0, "destination (vol_lazy): open(O_RDWR) while the source writes: "
		  "%s", strerror(errno));
	vt_pread(fb, got, 2 * MiB, 0, "destination: vm before the switch-over");
	vt_assert_same(got, model, 2 * MiB, 0, OBJ, "destination reads before switch-over");

	/* its first write waits for the lock... */
	vt_fill(bbuf, MiB, 3 * MiB, 2);
	w.fd = fb;
	w.buf = bbuf;
	w.len = MiB;
	w.off = 3 * MiB;
	cr_assert_eq(pthread_create(&th, NULL, bg_write_run, &w), 0);
	put(fa, model, 2 * MiB, MiB, 3, "source: vm, last writes");
	vt_fsync(fa, "source: vm, last writes");
	tsleep_ms(500);
	cr_assert_not(atomic_load(&w.done), "the destination wrote while the source "
		      "held the volume (ret %zd: %s)", w.ret, strerror(w.err));
	/* ...until the source closes (its QEMU quits after the migration) */
	close(fa);
	pthread_join(th, NULL);
	cr_assert_eq(w.ret, (ssize_t)MiB, "destination's first write after the source "
		     "closed: %zd, %s", w.ret, strerror(w.err));
	memcpy(model + 3 * MiB, bbuf, MiB);
	vt_fsync(fb, "destination: vm");

	/* the source may not write any more */
	errno = 0;
	int fa2 = vt_open(tc, "vm", O_RDWR);
	cr_assert(fa2 < 0 && errno == EBUSY, "source: open(O_RDWR) after the switch-over: "
		  "fd %d, %s; expected EBUSY", fa2, fa2 < 0 ? strerror(errno) : "opened");
	close(fb);
	vt_read_vol(tc, vt_ino(tc, "vm"), NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, "vm after the migration");
	vt_mount2_stop(&m2);
	free(model);
	free(got);
	free(bbuf);
}

/* B's open in the background: its descriptor (or errno) once done. */
struct bg_open {
	char path[PATH_MAX + 64];
	int flags;
	_Atomic int done;
	int fd, err;
};

static void *bg_open_run(void *arg)
{
	struct bg_open *o = arg;

	o->fd = open(o->path, o->flags | O_CLOEXEC);
	o->err = errno;
	atomic_store(&o->done, 1);
	return NULL;
}

/* Mount option vol_wait (docs/volumes.md "One writer"): B's
 * open(O_RDWR) of a volume file A writes waits for A's lock instead of
 * failing with EBUSY, and returns, writable, once A closed. */
Test(vol_writer, vol_wait_open_waits_for_the_writer)
{
	char path[PATH_MAX + 16];
	uint8_t *model = vt_alloc(SIZE), *got = vt_alloc(SIZE);
	struct bg_open o = { .flags = O_RDWR | O_DIRECT };
	pthread_t th;
	int fa, fb;

	vt_create(tc, "vf", SIZE, OBJ, NULL);
	snprintf(path, sizeof(path), "%s/mnt2", tcluster_dir(tc));
	/* a wait far longer than this test may take: B's open must end
	 * because A closed, not because B gave up */
	vt_mount2_start(tc, &m2, path, "vol_wait,timeout_ms=300000");

	fa = vt_xopen(tc, "vf", O_RDWR | O_DIRECT);
	put(fa, model, 0, 2 * MiB, 1, "A: vf");
	vt_fsync(fa, "A: vf");

	b_path("vf", o.path);
	cr_assert_eq(pthread_create(&th, NULL, bg_open_run, &o), 0);
	/* B is blocked while A holds the volume, and A keeps writing */
	put(fa, model, 2 * MiB, MiB, 2, "A: vf while B waits");
	vt_fsync(fa, "A: vf while B waits");
	for (int64_t end = tnow_ms() + 1000; tnow_ms() < end;) {
		cr_assert_not(atomic_load(&o.done), "B (vol_wait): open(O_RDWR) while A "
			      "writes returned: fd %d, %s; expected it to wait", o.fd,
			      o.fd < 0 ? strerror(o.err) : "opened");
		tsleep_ms(50);
	}
	vt_read_vol(tc, vt_ino(tc, "vf"), NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, "vf while B waits");

	/* A closes: B's open returns with the volume */
	close(fa);
	for (int64_t end = tnow_ms() + VT_WAIT_MS; !atomic_load(&o.done);) {
		cr_assert(tnow_ms() < end, "B (vol_wait): open(O_RDWR) still waiting %d ms "
			  "after A closed", VT_WAIT_MS);
		tsleep_ms(20);
	}
	pthread_join(th, NULL);
	fb = o.fd;
	cr_assert(fb >= 0, "B (vol_wait): open(O_RDWR) after A closed: %s", strerror(o.err));
	vt_pread(fb, got, 3 * MiB, 0, "B: vf after the wait");
	vt_assert_same(got, model, 3 * MiB, 0, OBJ, "vf through B after the wait");
	put(fb, model, 5 * MiB, MiB, 3, "B: vf");
	vt_fsync(fb, "B: vf");

	/* now A is the one kept out (A's mount has no vol_wait) */
	errno = 0;
	fa = vt_open(tc, "vf", O_RDWR);
	cr_assert(fa < 0 && errno == EBUSY, "A: open(O_RDWR) while B writes: fd %d, %s; "
		  "expected EBUSY", fa, fa < 0 ? strerror(errno) : "opened");
	close(fb);
	vt_read_vol(tc, vt_ino(tc, "vf"), NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, "vf after B wrote");
	vt_mount2_stop(&m2);
	free(model);
	free(got);
}
