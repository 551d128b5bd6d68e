/*
 * locks_test.c - cluster-wide locks (docs/locks.md) through two mounts of
 * one cluster: the fixture's at DIR/mnt ("A") and a second mount.sdfs
 * started here at DIR/mnt2 ("B"). Lockers are forked children that talk
 * to the test over pipes; nothing asserts a duration.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/vol/vt.h"

#define WAIT_MS 30000

static struct tcluster *tc;
static struct vt_mount2 m2;
static char pa[PATH_MAX + 16], pb[PATH_MAX + 16];        /* one file, seen on A and B */

static void up(void)
{
	char mnt2[PATH_MAX];
	int fd;

	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 2, .copies = 2, .mds = 2,
						      .mount = 1 });
	snprintf(mnt2, sizeof(mnt2), "%s/mnt2", tcluster_dir(tc));
	vt_mount2_start(tc, &m2, mnt2, NULL);
	snprintf(pa, sizeof(pa), "%s/lockfile", tcluster_mnt(tc));
	snprintf(pb, sizeof(pb), "%s/lockfile", mnt2);
	fd = open(pa, O_RDWR | O_CREAT, 0644);
	cr_assert(fd >= 0, "create %s: %s", pa, strerror(errno));
	cr_assert_eq(write(fd, "0123456789", 10), 10);
	close(fd);
}

static void down(void)
{
	vt_mount2_stop(&m2);
	tcluster_stop(tc);
}

TestSuite(locks, .init = up, .fini = down, .timeout = 240);

/* ---- a locker: a child process holding or waiting for a lock ---- */

enum lk_how { LK_POSIX, LK_POSIX_WAIT, LK_FLOCK, LK_FLOCK_WAIT, LK_OFD, LK_OFD_WAIT };

struct locker {
	pid_t pid;
	int to_child, from_child;
};

struct lk_step {
	enum lk_how how;
	short type;             /* F_RDLCK/F_WRLCK; flock: LOCK_SH/LOCK_EX */
	off_t start, len;
};

static int do_lock(int fd, const struct lk_step *s)
{
	struct flock fl = { .l_type = s->type, .l_whence = SEEK_SET,
			    .l_start = s->start, .l_len = s->len };

	switch (s->how) {
	case LK_POSIX: return fcntl(fd, F_SETLK, &fl) ? -errno : 0;
	case LK_POSIX_WAIT: return fcntl(fd, F_SETLKW, &fl) ? -errno : 0;
	case LK_FLOCK: return flock(fd, s->type | LOCK_NB) ? -errno : 0;
	case LK_FLOCK_WAIT: return flock(fd, s->type) ? -errno : 0;
	case LK_OFD: return fcntl(fd, F_OFD_SETLK, &fl) ? -errno : 0;
	case LK_OFD_WAIT: return fcntl(fd, F_OFD_SETLKW, &fl) ? -errno : 0;
	}
	return -EINVAL;
}

static void on_signal(int sig)
{
	(void)sig;
}

/*
 * Fork a child that opens @path and runs @n lock steps; after each it
 * writes its result (an int: 0 or -errno) to the pipe, and before each
 * step after the first it waits for a byte from the test. After the
 * last it waits for a byte (or EOF), then exits (closing: unlock).
 * SIGUSR1 runs a handler without SA_RESTART: it ends a blocked lock
 * step with EINTR (locker_interrupt) and is ignored otherwise.
 */
static void locker_start(struct locker *l, const char *path, const struct lk_step *steps,
			 int n)
{
	int down[2], upp[2];

	cr_assert(pipe(down) == 0 && pipe(upp) == 0);
	l->pid = fork();
	cr_assert(l->pid >= 0);
	if (l->pid == 0) {
		struct sigaction sa = { .sa_handler = on_signal };
		char c;
		int fd;

		sigaction(SIGUSR1, &sa, NULL);

		/* only our own pipe ends: another locker's, inherited, would
		 * keep its pipe open after the test closes it */
		for (int i = 3; i < 1024; i++)
			if (i != down[0] && i != upp[1])
				close(i);
		fd = open(path, O_RDWR);
		for (int i = 0; i < n; i++) {
			int r = fd < 0 ? -errno : do_lock(fd, &steps[i]);
			ssize_t got;

			if (write(upp[1], &r, sizeof(r)) != sizeof(r))
				_exit(2);
			while ((got = read(down[0], &c, 1)) < 0 && errno == EINTR)
				;
			if (got != 1)
				break;
		}
		_exit(0);
	}
	close(down[0]);
	close(upp[1]);
	l->to_child = down[1];
	l->from_child = upp[0];
}

/* The child's next result; -ETIME if none within @ms. */
static int locker_result(struct locker *l, int ms)
{
	struct pollfd p = { .fd = l->from_child, .events = POLLIN };
	int r;

	if (poll(&p, 1, ms) != 1)
		return -ETIME;
	cr_assert_eq(read(l->from_child, &r, sizeof(r)), (ssize_t)sizeof(r),
		     "locker %d died", (int)l->pid);
	return r;
}

/* Signal the locker until its blocked step returns, and that step's
 * result. A signal that comes before the child is in its wait only
 * runs the handler; the next one ends the wait. */
static int locker_interrupt(struct locker *l)
{
	int r = -ETIME;

	for (int64_t end = tnow_ms() + WAIT_MS; r == -ETIME && tnow_ms() < end;) {
		cr_assert_eq(kill(l->pid, SIGUSR1), 0);
		r = locker_result(l, 200);
	}
	return r;
}

static void locker_next(struct locker *l)
{
	cr_assert_eq(write(l->to_child, "x", 1), 1);
}

/* Let the child exit (its close drops its locks) and reap it. */
static void locker_end(struct locker *l)
{
	int st;

	close(l->to_child);
	close(l->from_child);
	cr_assert_eq(waitpid(l->pid, &st, 0), l->pid);
}

static int try_posix(const char *path, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start,
			    .l_len = len };
	int fd = open(path, O_RDWR), r;

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	r = fcntl(fd, F_SETLK, &fl) ? -errno : 0;
	close(fd);
	return r;
}

/* What F_GETLK (@cmd; or F_OFD_GETLK) on @path says of a write lock on
 * [start, start + len). */
static struct flock get_lock(const char *path, int cmd, off_t start, off_t len)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start,
			    .l_len = len };
	int fd = open(path, O_RDWR);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(fcntl(fd, cmd, &fl), 0, "F_GETLK: %s", strerror(errno));
	close(fd);
	return fl;
}

/* Lock wake-ups the active mds has sent (sdfs mds status). */
static uint64_t lock_wakes(void)
{
	struct sdfs_mds_status st;

	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &st), 0);
	cr_assert(st.reachable, "the active mds did not answer");
	free(st.list);
	return st.lock_wakes;
}

Test(locks, posix_excludes_across_mounts)
{
	struct locker a, b;
	struct lk_step hold = { LK_POSIX, F_WRLCK, 0, 100 };
	struct lk_step wait = { LK_POSIX_WAIT, F_WRLCK, 0, 10 };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 5,
			    .l_len = 10 };
	int fd;

	locker_start(&a, pa, &hold, 1);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0, "A could not lock");
	/* B: a conflicting lock is refused, a disjoint one is not */
	cr_assert_eq(try_posix(pb, F_WRLCK, 0, 10), -EAGAIN);
	cr_assert_eq(try_posix(pb, F_RDLCK, 99, 1), -EAGAIN);
	cr_assert_eq(try_posix(pb, F_WRLCK, 100, 100), 0);
	/* F_GETLK on B names A's lock */
	fd = open(pb, O_RDWR);
	cr_assert(fd >= 0);
	cr_assert_eq(fcntl(fd, F_GETLK, &fl), 0, "F_GETLK: %s", strerror(errno));
	cr_assert_eq(fl.l_type, F_WRLCK);
	cr_assert_eq(fl.l_start, 0);
	cr_assert_eq(fl.l_len, 100);
	cr_assert(fl.l_pid == 0 || fl.l_pid == a.pid, "l_pid %d", (int)fl.l_pid);
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 100,
			     .l_len = 5 };
	cr_assert_eq(fcntl(fd, F_GETLK, &fl), 0);
	cr_assert_eq(fl.l_type, F_UNLCK);
	close(fd);
	/* F_SETLKW on B waits until A lets go; the mds wakes B's wait when
	 * A's lock goes (docs/locks.md), not just B's next poll */
	uint64_t wakes = lock_wakes();
	locker_start(&b, pb, &wait, 1);
	cr_assert_eq(locker_result(&b, 300), -ETIME, "B got a lock A holds");
	locker_end(&a);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0, "B never got the lock");
	cr_assert_gt(lock_wakes(), wakes, "the mds sent B no wake-up when A's lock went");
	cr_assert_eq(try_posix(pa, F_WRLCK, 0, 1), -EAGAIN, "B's lock not seen on A");
	locker_end(&b);
	cr_assert_eq(try_posix(pa, F_WRLCK, 0, 0), 0, "B's close did not unlock");
}

Test(locks, read_locks_share)
{
	struct locker a;
	struct lk_step hold = { LK_POSIX, F_RDLCK, 0, 0 };

	locker_start(&a, pa, &hold, 1);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	cr_assert_eq(try_posix(pb, F_RDLCK, 0, 0), 0);
	cr_assert_eq(try_posix(pb, F_WRLCK, 50, 1), -EAGAIN);
	locker_end(&a);
	cr_assert_eq(try_posix(pb, F_WRLCK, 50, 1), 0);
}

Test(locks, posix_split_and_upgrade)
{
	struct locker a;
	/* A: write-lock [0, 100), unlock [40, 60), then downgrade [0, 10) */
	struct lk_step steps[] = { { LK_POSIX, F_WRLCK, 0, 100 },
				   { LK_POSIX, F_UNLCK, 40, 20 },
				   { LK_POSIX, F_RDLCK, 0, 10 } };

	locker_start(&a, pa, steps, 3);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	locker_next(&a);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	cr_assert_eq(try_posix(pb, F_WRLCK, 45, 10), 0, "the hole is free");
	cr_assert_eq(try_posix(pb, F_WRLCK, 30, 20), -EAGAIN);
	cr_assert_eq(try_posix(pb, F_WRLCK, 55, 10), -EAGAIN);
	locker_next(&a);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	cr_assert_eq(try_posix(pb, F_RDLCK, 0, 10), 0, "downgraded part shares");
	cr_assert_eq(try_posix(pb, F_RDLCK, 10, 10), -EAGAIN);
	locker_end(&a);
	cr_assert_eq(try_posix(pb, F_WRLCK, 0, 0), 0);
}

Test(locks, flock_excludes_across_mounts)
{
	struct locker a, b;
	struct lk_step hold = { LK_FLOCK, LOCK_EX, 0, 0 };
	struct lk_step wait = { LK_FLOCK_WAIT, LOCK_EX, 0, 0 };
	int fd;

	locker_start(&a, pa, &hold, 1);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	fd = open(pb, O_RDONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), -1);
	cr_assert_eq(errno, EWOULDBLOCK);
	cr_assert_eq(flock(fd, LOCK_SH | LOCK_NB), -1);
	close(fd);
	/* a POSIX lock does not conflict with a flock one (as on Linux) */
	cr_assert_eq(try_posix(pb, F_WRLCK, 0, 0), 0);
	locker_start(&b, pb, &wait, 1);
	cr_assert_eq(locker_result(&b, 300), -ETIME, "B got a flock A holds");
	locker_end(&a);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0, "B never got the flock");
	locker_end(&b);

	/* shared flocks share */
	struct lk_step sh = { LK_FLOCK_WAIT, LOCK_SH, 0, 0 };
	locker_start(&a, pa, &sh, 1);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	fd = open(pb, O_RDONLY);
	cr_assert_eq(flock(fd, LOCK_SH | LOCK_NB), 0);
	close(fd);
	locker_end(&a);
}

Test(locks, deadlock_is_refused)
{
	struct locker a, b;
	/* A holds byte 0 then waits for byte 1; B holds byte 1 then waits
	 * for byte 0: one of the two waits closes the cycle */
	struct lk_step sa[] = { { LK_POSIX, F_WRLCK, 0, 1 }, { LK_POSIX_WAIT, F_WRLCK, 1, 1 } };
	struct lk_step sb[] = { { LK_POSIX, F_WRLCK, 1, 1 }, { LK_POSIX_WAIT, F_WRLCK, 0, 1 } };
	int ra, rb;

	locker_start(&a, pa, sa, 2);
	locker_start(&b, pb, sb, 2);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0);
	locker_next(&a);
	cr_assert_eq(locker_result(&a, 300), -ETIME, "A got byte 1 that B holds");
	locker_next(&b);
	rb = locker_result(&b, WAIT_MS);
	if (rb == -EDEADLK) {
		locker_end(&b);         /* B gives up: A gets byte 1 */
		cr_assert_eq(locker_result(&a, WAIT_MS), 0);
		locker_end(&a);
		return;
	}
	/* B got in first as a waiter and A's retry saw the cycle */
	ra = rb == -ETIME ? locker_result(&a, WAIT_MS) : rb;
	cr_assert_eq(ra, -EDEADLK, "no EDEADLK (A %d, B %d)", ra, rb);
	locker_end(&a);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0);
	locker_end(&b);
}

/* An interrupted wait is no longer a waiter: A holds byte 1 and waits
 * for byte 0, which B holds; A's wait is interrupted (A keeps byte 1),
 * so B's wait for byte 1 closes no cycle and must wait, not fail
 * EDEADLK (the mds forgets A's wait when A's client withdraws it). */
Test(locks, interrupted_wait_leaves_no_false_deadlock)
{
	struct locker a, b;
	struct lk_step sa[] = { { LK_POSIX, F_WRLCK, 1, 1 }, { LK_POSIX_WAIT, F_WRLCK, 0, 1 } };
	struct lk_step sb[] = { { LK_POSIX, F_WRLCK, 0, 1 }, { LK_POSIX_WAIT, F_WRLCK, 1, 1 } };

	locker_start(&a, pa, sa, 2);
	locker_start(&b, pb, sb, 2);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0);
	locker_next(&a);
	cr_assert_eq(locker_result(&a, 300), -ETIME, "A got byte 0 that B holds");
	cr_assert_eq(locker_interrupt(&a), -EINTR, "A's wait was not interrupted");
	locker_next(&b);
	cr_assert_eq(locker_result(&b, 300), -ETIME,
		     "B's wait for byte 1 (A holds it, A waits for nothing) did not wait");
	locker_end(&a);         /* A's close drops byte 1: B gets it */
	cr_assert_eq(locker_result(&b, WAIT_MS), 0);
	locker_end(&b);
}

/* A signal ends B's F_SETLKW with EINTR, and the mds is left with no
 * trace of it: once A lets go, a lock on A gets the range while B
 * (alive) holds nothing, and B itself can lock it later. */
Test(locks, interrupted_posix_wait_takes_nothing)
{
	struct locker a, b, c;
	struct lk_step hold = { LK_POSIX, F_WRLCK, 0, 100 };
	struct lk_step sb[] = { { LK_POSIX_WAIT, F_WRLCK, 0, 10 }, { LK_POSIX, F_WRLCK, 0, 10 } };
	struct lk_step wait = { LK_POSIX_WAIT, F_WRLCK, 0, 0 };
	struct flock fl;

	locker_start(&a, pa, &hold, 1);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0, "A could not lock");
	locker_start(&b, pb, sb, 2);
	cr_assert_eq(locker_result(&b, 300), -ETIME, "B got a lock A holds");
	cr_assert_eq(locker_interrupt(&b), -EINTR, "B's wait was not interrupted");
	fl = get_lock(pb, F_GETLK, 0, 0);
	cr_assert_eq(fl.l_type, F_WRLCK);
	cr_assert_eq(fl.l_start, 0);
	cr_assert_eq(fl.l_len, 100, "not A's lock: l_start %lld l_len %lld",
		     (long long)fl.l_start, (long long)fl.l_len);
	locker_end(&a);
	locker_start(&c, pa, &wait, 1);
	cr_assert_eq(locker_result(&c, WAIT_MS), 0, "the interrupted wait on B took the lock");
	fl = get_lock(pb, F_GETLK, 0, 0);
	cr_assert_eq(fl.l_type, F_WRLCK);
	cr_assert_eq(fl.l_len, 0, "not C's whole-file lock");
	locker_end(&c);
	/* free now, and nobody asks for a while: a wait still going on
	 * somewhere for B would take it in that time */
	cr_assert_eq(locker_result(&b, 300), -ETIME, "B did a step by itself");
	fl = get_lock(pa, F_GETLK, 0, 0);
	cr_assert_eq(fl.l_type, F_UNLCK, "B holds [%lld, +%lld) after its interrupted wait",
		     (long long)fl.l_start, (long long)fl.l_len);
	locker_next(&b);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0, "B cannot lock after its interrupted wait");
	cr_assert_eq(try_posix(pa, F_WRLCK, 5, 1), -EAGAIN, "B's lock not seen on A");
	locker_end(&b);
	cr_assert_eq(try_posix(pa, F_WRLCK, 0, 0), 0);
}

/* The same for a blocking flock(LOCK_EX). */
Test(locks, interrupted_flock_wait_takes_nothing)
{
	struct locker a, b, c;
	struct lk_step hold = { LK_FLOCK, LOCK_EX, 0, 0 };
	struct lk_step sb[] = { { LK_FLOCK_WAIT, LOCK_EX, 0, 0 }, { LK_FLOCK, LOCK_EX, 0, 0 } };
	struct lk_step wait = { LK_FLOCK_WAIT, LOCK_EX, 0, 0 };
	int fd, r = -1;

	locker_start(&a, pa, &hold, 1);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0, "A could not flock");
	locker_start(&b, pb, sb, 2);
	cr_assert_eq(locker_result(&b, 300), -ETIME, "B got a flock A holds");
	cr_assert_eq(locker_interrupt(&b), -EINTR, "B's flock was not interrupted");
	locker_end(&a);
	locker_start(&c, pa, &wait, 1);
	cr_assert_eq(locker_result(&c, WAIT_MS), 0, "the interrupted flock on B took the lock");
	locker_end(&c);
	/* B is alive and holds nothing (C's flock goes at release, which
	 * the kernel may send after C's exit) */
	fd = open(pa, O_RDONLY);
	cr_assert(fd >= 0);
	for (int64_t end = tnow_ms() + WAIT_MS; r && tnow_ms() < end; tsleep_ms(20))
		r = flock(fd, LOCK_EX | LOCK_NB);
	cr_assert_eq(r, 0, "B holds the flock after its interrupted wait");
	cr_assert_eq(flock(fd, LOCK_UN), 0);
	/* free now, and nobody asks for a while: a wait still going on
	 * somewhere for B would take it in that time */
	cr_assert_eq(locker_result(&b, 300), -ETIME, "B did a step by itself");
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0, "B took the flock after its interrupted wait");
	cr_assert_eq(flock(fd, LOCK_UN), 0);
	locker_next(&b);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0, "B cannot flock after its interrupted wait");
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), -1, "B's flock not seen on A");
	cr_assert_eq(errno, EWOULDBLOCK);
	close(fd);
	locker_end(&b);
}

Test(locks, killed_mount_loses_its_locks)
{
	struct locker b, a;
	struct lk_step hold = { LK_POSIX, F_WRLCK, 0, 0 };
	struct lk_step wait = { LK_POSIX_WAIT, F_WRLCK, 0, 0 };
	struct lk_step fhold = { LK_FLOCK, LOCK_EX, 0, 0 };
	struct lk_step fwait = { LK_FLOCK_WAIT, LOCK_EX, 0, 0 };
	struct locker fb, fa;

	locker_start(&b, pb, &hold, 1);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0);
	locker_start(&fb, pb, &fhold, 1);
	cr_assert_eq(locker_result(&fb, WAIT_MS), 0);
	locker_start(&a, pa, &wait, 1);
	locker_start(&fa, pa, &fwait, 1);
	cr_assert_eq(locker_result(&a, 300), -ETIME);
	cr_assert_eq(locker_result(&fa, 10), -ETIME);
	cr_assert_eq(kill(m2.pid, SIGKILL), 0);
	/* ZooKeeper expires its session (~2 s), the mds drops its locks */
	cr_assert_eq(locker_result(&a, WAIT_MS), 0, "the dead mount's lock stayed");
	cr_assert_eq(locker_result(&fa, WAIT_MS), 0, "the dead mount's flock stayed");
	locker_end(&a);
	locker_end(&fa);
	kill(b.pid, SIGKILL);
	kill(fb.pid, SIGKILL);
	locker_end(&b);
	locker_end(&fb);
}

Test(locks, survive_mds_failover)
{
	struct locker a;
	struct lk_step steps[] = { { LK_POSIX, F_WRLCK, 0, 50 }, { LK_FLOCK, LOCK_EX, 0, 0 } };
	char active[64], next[64];
	int fd;

	locker_start(&a, pa, steps, 2);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	locker_next(&a);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	cr_assert_eq(tcluster_active_mds(tc, active, sizeof(active)), 0);
	cr_assert_eq(tcluster_kill(tc, active), 0);
	cr_assert_eq(tcluster_wait_active_mds(tc, active, next, sizeof(next),
					      WAIT_MS), 0);
	/* still held after the takeover */
	cr_assert_eq(try_posix(pb, F_WRLCK, 10, 1), -EAGAIN);
	cr_assert_eq(try_posix(pb, F_WRLCK, 50, 1), 0);
	fd = open(pb, O_RDONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), -1);
	cr_assert_eq(errno, EWOULDBLOCK);
	close(fd);
	/* and released by the new active (flock: at release, which the
	 * kernel may send after the holder's exit) */
	locker_end(&a);
	cr_assert_eq(try_posix(pb, F_WRLCK, 0, 0), 0);
	fd = open(pb, O_RDONLY);
	int r = -1;
	for (int64_t end = tnow_ms() + WAIT_MS; r && tnow_ms() < end; tsleep_ms(20))
		r = flock(fd, LOCK_EX | LOCK_NB);
	cr_assert_eq(r, 0, "the flock was not released");
	close(fd);
}

/* ---- OFD locks (docs/locks.md, "OFD locks") ---- */

static int ofd_lock(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start,
			    .l_len = len };

	return fcntl(fd, cmd, &fl) ? -errno : 0;
}

/* An OFD lock's owner is its open file: it excludes OFD and POSIX locks
 * on the other mount and other open files of its own process, is split
 * like a POSIX lock, survives the close of another descriptor of its
 * process, and goes with an explicit F_UNLCK. */
Test(locks, ofd_locks_exclude_across_mounts)
{
	struct locker b;
	struct lk_step sb[] = { { LK_OFD_WAIT, F_WRLCK, 0, 10 }, { LK_OFD, F_UNLCK, 0, 10 } };
	int fa = open(pa, O_RDWR), fa2 = open(pa, O_RDWR), fb = open(pb, O_RDWR);
	struct flock fl;

	cr_assert(fa >= 0 && fa2 >= 0 && fb >= 0);
	cr_assert_eq(ofd_lock(fa, F_OFD_SETLK, F_WRLCK, 0, 100), 0);
	cr_assert_eq(ofd_lock(fb, F_OFD_SETLK, F_WRLCK, 50, 10), -EAGAIN);
	cr_assert_eq(ofd_lock(fb, F_OFD_SETLK, F_RDLCK, 99, 1), -EAGAIN);
	cr_assert_eq(try_posix(pb, F_WRLCK, 0, 10), -EAGAIN, "a POSIX lock on B ignores it");
	cr_assert_eq(try_posix(pb, F_RDLCK, 0, 10), -EAGAIN);
	cr_assert_eq(ofd_lock(fb, F_OFD_SETLK, F_WRLCK, 100, 10), 0);
	cr_assert_eq(ofd_lock(fb, F_OFD_SETLK, F_UNLCK, 100, 10), 0);
	cr_assert_eq(ofd_lock(fa2, F_OFD_SETLK, F_WRLCK, 0, 1), -EAGAIN,
		     "another open file of the holder's process is another owner");
	fl = get_lock(pb, F_OFD_GETLK, 0, 0);
	cr_assert_eq(fl.l_type, F_WRLCK);
	cr_assert_eq(fl.l_start, 0);
	cr_assert_eq(fl.l_len, 100, "not A's lock: l_start %lld l_len %lld",
		     (long long)fl.l_start, (long long)fl.l_len);
	fl = get_lock(pb, F_OFD_GETLK, 100, 5);
	cr_assert_eq(fl.l_type, F_UNLCK);
	/* split: a hole in the middle is free, the rest is not */
	cr_assert_eq(ofd_lock(fa, F_OFD_SETLK, F_UNLCK, 40, 20), 0);
	cr_assert_eq(ofd_lock(fb, F_OFD_SETLK, F_WRLCK, 45, 10), 0, "the hole is free");
	cr_assert_eq(ofd_lock(fb, F_OFD_SETLK, F_UNLCK, 45, 10), 0);
	cr_assert_eq(ofd_lock(fb, F_OFD_SETLK, F_WRLCK, 30, 20), -EAGAIN);
	/* closing a descriptor drops its process's POSIX locks, not this */
	close(fa2);
	cr_assert_eq(ofd_lock(fb, F_OFD_SETLK, F_WRLCK, 0, 10), -EAGAIN);
	/* F_OFD_SETLKW on B waits for A's explicit unlock */
	locker_start(&b, pb, sb, 2);
	cr_assert_eq(locker_result(&b, 300), -ETIME, "B got an OFD lock A holds");
	cr_assert_eq(ofd_lock(fa, F_OFD_SETLK, F_UNLCK, 0, 0), 0);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0, "B never got the OFD lock");
	cr_assert_eq(ofd_lock(fa, F_OFD_SETLK, F_WRLCK, 5, 1), -EAGAIN, "B's lock not seen on A");
	locker_next(&b);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0);
	cr_assert_eq(ofd_lock(fa, F_OFD_SETLK, F_WRLCK, 0, 0), 0, "B's F_UNLCK did not unlock");
	cr_assert_eq(ofd_lock(fa, F_OFD_SETLK, F_UNLCK, 0, 0), 0);
	locker_end(&b);
	close(fa);
	close(fb);
}

/* A new file /@name made through A; its paths on A and B. */
static void new_file(const char *name, char *on_a, char *on_b, size_t len)
{
	int fd;

	snprintf(on_a, len, "%s/%s", tcluster_mnt(tc), name);
	snprintf(on_b, len, "%s/%s", m2.path, name);
	fd = open(on_a, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0, "create %s: %s", on_a, strerror(errno));
	cr_assert_eq(write(fd, "0123456789", 10), 10);
	close(fd);
}

/* SIGKILL the locker (it holds what its steps took) and reap it. */
static void locker_kill(struct locker *l)
{
	int st;

	cr_assert_eq(kill(l->pid, SIGKILL), 0);
	cr_assert_eq(waitpid(l->pid, &st, 0), l->pid);
	close(l->to_child);
	close(l->from_child);
}

/* A child holding copies of our descriptors (and so our open files)
 * until we close *@wr, the pipe's end it waits on; its pid. */
static pid_t hold_in_child(int *wr)
{
	int p[2];
	pid_t child;

	cr_assert(pipe(p) == 0);
	child = fork();
	cr_assert(child >= 0);
	if (child == 0) {
		char c;

		close(p[1]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	*wr = p[1];
	return child;
}

/* An OFD lock belongs to its open file description: it stays while any
 * descriptor of it is open (a dup, a forked child's copy), whatever
 * else its process closes, and goes with the last one, on every mount
 * (the kernel sends no unlock for it: mount.sdfs drops it when the
 * RELEASE of the open file comes). */
Test(locks, ofd_lock_goes_with_the_last_close_of_its_open_file)
{
	char fa[PATH_MAX + 16], fb[PATH_MAX + 16];
	struct lk_step wait = { LK_OFD_WAIT, F_WRLCK, 0, 0 };
	struct locker b;
	int fd, dupfd, other, hold_wr, r = -1;
	pid_t child;

	new_file("ofd-close", fa, fb, sizeof(fa));
	fd = open(fa, O_RDWR);
	cr_assert(fd >= 0);
	cr_assert_eq(ofd_lock(fd, F_OFD_SETLK, F_WRLCK, 0, 0), 0);
	dupfd = dup(fd);
	other = open(fa, O_RDWR);
	cr_assert(dupfd >= 0 && other >= 0);
	close(fd);              /* the description stays: dupfd */
	close(other);           /* another open file of the process */
	child = hold_in_child(&hold_wr);        /* shares the description */
	close(dupfd);           /* the child's copy is still open */
	locker_start(&b, fb, &wait, 1);
	cr_assert_eq(locker_result(&b, 300), -ETIME,
		     "B got the OFD lock while its open file was still open on A");
	other = open(fa, O_RDWR);
	cr_assert(other >= 0);
	cr_assert_eq(ofd_lock(other, F_OFD_SETLK, F_WRLCK, 0, 1), -EAGAIN);
	close(other);
	close(hold_wr);         /* the child exits: the last descriptor goes */
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0,
		     "the OFD lock stayed after the last close of its open file");
	/* the same on B: its locker exits without unlocking */
	locker_end(&b);
	fd = open(fa, O_RDWR);
	cr_assert(fd >= 0);
	for (int64_t end = tnow_ms() + WAIT_MS; r && tnow_ms() < end; tsleep_ms(20))
		r = ofd_lock(fd, F_OFD_SETLK, F_WRLCK, 0, 0);
	cr_assert_eq(r, 0, "B's OFD lock stayed after its process exited");
	close(fd);
}

/* QEMU's locks (bytes 100-101 and 201, F_OFD_SETLK) of a process that
 * is SIGKILLed go with it: another mount waiting for them gets them. */
Test(locks, ofd_locks_of_a_killed_process_go)
{
	char fa[PATH_MAX + 16], fb[PATH_MAX + 16];
	struct lk_step qemu[] = { { LK_OFD, F_RDLCK, 100, 2 }, { LK_OFD, F_RDLCK, 201, 1 } };
	struct lk_step wait = { LK_OFD_WAIT, F_WRLCK, 100, 102 };
	struct locker a, b;

	new_file("ofd-kill", fa, fb, sizeof(fa));
	locker_start(&a, fa, qemu, 2);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	locker_next(&a);
	cr_assert_eq(locker_result(&a, WAIT_MS), 0);
	locker_start(&b, fb, &wait, 1);
	cr_assert_eq(locker_result(&b, 300), -ETIME, "B got a lock A holds");
	locker_kill(&a);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0,
		     "the OFD locks of a SIGKILLed process stayed");
	locker_end(&b);
}

/*
 * Dropping an open file's OFD locks at its RELEASE must not drop the
 * POSIX locks of a process that locked through it: those went when the
 * process closed it (flush), and the process may have locked again
 * through another open file before the RELEASE comes (here: a forked
 * child keeps the first open file until after the relock). The OFD lock
 * on byte 1000 tells when that RELEASE was handled.
 */
Test(locks, posix_relock_survives_the_release_of_a_closed_open_file)
{
	char fa[PATH_MAX + 16], fb[PATH_MAX + 16];
	struct lk_step wait = { LK_OFD_WAIT, F_WRLCK, 1000, 1 };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0,
			    .l_len = 10 };
	struct locker b;
	int fd1, fd2, hold_wr;
	pid_t child;

	new_file("ofd-relock", fa, fb, sizeof(fa));
	fd1 = open(fa, O_RDWR);
	cr_assert(fd1 >= 0);
	cr_assert_eq(ofd_lock(fd1, F_OFD_SETLK, F_WRLCK, 1000, 1), 0);
	cr_assert_eq(fcntl(fd1, F_SETLK, &fl), 0);
	child = hold_in_child(&hold_wr);        /* keeps the open file after our close */
	close(fd1);             /* our POSIX lock goes, the OFD lock stays */
	cr_assert_eq(try_posix(fb, F_WRLCK, 0, 10), 0, "the close kept the POSIX lock");
	cr_assert_eq(try_posix(fb, F_WRLCK, 1000, 1), -EAGAIN, "the OFD lock went early");
	fd2 = open(fa, O_RDWR);
	cr_assert(fd2 >= 0);
	cr_assert_eq(fcntl(fd2, F_SETLK, &fl), 0, "relock: %s", strerror(errno));
	close(hold_wr);         /* the child exits: the first open file's RELEASE */
	cr_assert_eq(waitpid(child, NULL, 0), child);
	locker_start(&b, fb, &wait, 1);
	cr_assert_eq(locker_result(&b, WAIT_MS), 0,
		     "the OFD lock stayed after the last close of its open file");
	cr_assert_eq(try_posix(fb, F_WRLCK, 0, 10), -EAGAIN,
		     "the RELEASE of the first open file dropped its process's new POSIX lock");
	locker_end(&b);
	close(fd2);
	cr_assert_eq(try_posix(fb, F_WRLCK, 0, 10), 0, "the close did not unlock");
}

/* ---- QEMU on a volume file (docs/locks.md, "OFD locks") ---- */

#define QEMU_IMG "/usr/bin/qemu-img"
#define QEMU_IO "/usr/bin/qemu-io"

/* Run @argv until it exits 0 (QEMU's lock may still be held for a
 * moment: the kernel's RELEASE of the last user's file is sent after
 * its exit), up to WAIT_MS; its last status, output logged. */
static int run_until_ok(char **argv)
{
	char *out = NULL, line[512];
	int st = -1, tries = 0;
	size_t off = 0;

	for (int i = 0; argv[i] && off + 2 < sizeof(line); i++)
		off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s", i ? " " : "",
					argv[i]);
	for (int64_t end = tnow_ms() + WAIT_MS; st && tnow_ms() < end; tries++) {
		if (tries)
			tsleep_ms(50);
		free(out);
		out = NULL;
		st = vt_run(argv, &out, VT_CMD_MS);
	}
	cr_log_info("%.400s: exit %d after %d tries\n%.2000s", line, st, tries,
		    out ? out : "");
	free(out);
	return st;
}

/* qemu-io -f qcow2 on @path, interactive: it opens the image, takes
 * its locks and waits for commands on a pipe that never sends one. */
static pid_t qemu_io_hold(const char *path, const char *log_path, int *keep)
{
	int in[2], log = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	pid_t pid;

	cr_assert(log >= 0 && pipe(in) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(log, 1);
		dup2(log, 2);
		close_range(3, ~0u, 0);
		execl(QEMU_IO, "qemu-io", "-f", "qcow2", path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(log);
	*keep = in[1];
	return pid;
}

/*
 * The case: once QEMU had a volume file open, nothing could
 * open it for writing again until its mount ended. A qcow2 image in a
 * volume file, held by qemu-io as a VM holds its disk (QEMU's OFD
 * locks, locking=auto: bytes 100-101 and 103 for what it does, 201 and
 * 203 for what it does not let others do, writing and resizing) and by
 * the mount's writer lock, is SIGKILLed; then qemu-io must open the
 * image for writing, on the other mount (round 0) and on the same one
 * (round 1), and qemu-img check it.
 */
Test(locks, qemu_reopens_a_volume_file_after_a_kill)
{
	char va[PATH_MAX + 16], vb[PATH_MAX + 16], log[PATH_MAX];
	struct flock fl;
	int keep, st, seen = 0;
	pid_t q;

	if (access(QEMU_IO, X_OK) || access(QEMU_IMG, X_OK))
		cr_skip_test("%s or %s missing (apt-get install qemu-utils)", QEMU_IMG, QEMU_IO);
	vt_create(tc, "vm.img", 64 << 20, 0, NULL);
	snprintf(va, sizeof(va), "%s/vm.img", tcluster_mnt(tc));
	snprintf(vb, sizeof(vb), "%s/vm.img", m2.path);
	snprintf(log, sizeof(log), "%s/qemu-io.log", tcluster_dir(tc));
	cr_assert_eq(run_until_ok((char *[]){ QEMU_IMG, "create", "-f", "qcow2", va, "32M",
					      NULL }), 0);
	cr_assert_eq(run_until_ok((char *[]){ QEMU_IO, "-f", "qcow2", va, "-c",
					      "write -P 1 0 4k", NULL }), 0);
	cr_assert_eq(run_until_ok((char *[]){ QEMU_IO, "-f", "qcow2", vb, "-c",
					      "read -P 1 0 4k", "-c", "write -P 2 4k 4k",
					      NULL }), 0);
	for (int round = 0; round < 2; round++) {
		/* a VM on A that dies holding its disk */
		q = qemu_io_hold(va, log, &keep);
		for (int64_t end = tnow_ms() + WAIT_MS; !seen && tnow_ms() < end;
		     tsleep_ms(20)) {
			/* read-only: B cannot open it for writing now */
			int fd = open(vb, O_RDONLY);

			cr_assert_eq(waitpid(q, &st, WNOHANG), 0, "qemu-io on A exited (%s)", log);
			fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET,
					     .l_start = 201, .l_len = 1 };
			cr_assert(fd >= 0, "%s: %s", vb, strerror(errno));
			cr_assert_eq(fcntl(fd, F_OFD_GETLK, &fl), 0, "F_OFD_GETLK: %s",
				     strerror(errno));
			close(fd);
			seen = fl.l_type != F_UNLCK;
		}
		cr_assert(seen, "qemu-io on A took no lock on byte 201 (%s)", log);
		seen = 0;
		cr_assert_eq(kill(q, SIGKILL), 0);
		cr_assert_eq(waitpid(q, &st, 0), q);
		close(keep);
		/* the next user opens it for writing */
		cr_assert_eq(run_until_ok((char *[]){ QEMU_IO, "-f", "qcow2",
						      round ? va : vb, "-c",
						      "write -P 3 0 4k", NULL }), 0,
			     "qemu-io cannot open the image SIGKILLed on A (round %d)", round);
	}
	st = run_until_ok((char *[]){ QEMU_IMG, "check", "-f", "qcow2", vb, NULL });
	cr_assert(st == 0 || st == 3, "qemu-img check: exit %d", st);      /* 3: leaks */
	cr_assert_eq(run_until_ok((char *[]){ QEMU_IO, "-f", "qcow2", vb, "-c",
					      "read -P 3 0 4k", "-c", "read -P 2 4k 4k",
					      NULL }), 0);
}

/* ---- SQLite from both mounts at once ---- */

#define SQL_TX 200

static pid_t sqlite_writer(const char *db, const char *tag, const char *script_path)
{
	FILE *f = fopen(script_path, "w");
	pid_t pid;

	cr_assert(f);
	fprintf(f, ".timeout 120000\nPRAGMA locking_mode=NORMAL;\nPRAGMA journal_mode=DELETE;\n");
	for (int i = 0; i < SQL_TX; i++)
		fprintf(f, "BEGIN IMMEDIATE;\nINSERT INTO t(who, n, pad) VALUES('%s', %d, "
			"randomblob(300));\nCOMMIT;\n", tag, i);
	cr_assert_eq(fclose(f), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int in = open(script_path, O_RDONLY);
		int out = open("/dev/null", O_WRONLY);

		dup2(in, 0);
		dup2(out, 1);
		execl("/usr/bin/sqlite3", "sqlite3", "-bail", db, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static char *sqlite_query(const char *db, const char *sql)
{
	char *argv[] = { "/usr/bin/sqlite3", (char *)db, (char *)sql, NULL };
	char *out = NULL;
	int ret = vt_run(argv, &out, WAIT_MS);

	cr_assert_eq(ret, 0, "sqlite3 %s '%s' failed (%d): %s", db, sql, ret, out ? out : "");
	return out;
}

/* Writers on @da and @db (one database seen through two mounts) at
 * once, then the database must be intact with every row. */
static void sqlite_two_writers(const char *da, const char *db)
{
	char sa[PATH_MAX + 32], sb[PATH_MAX + 32];
	pid_t wa, wb;
	int st;
	char *out;

	if (access("/usr/bin/sqlite3", X_OK))
		cr_skip_test("no /usr/bin/sqlite3");
	snprintf(sa, sizeof(sa), "%s/sql-a.txt", tcluster_dir(tc));
	snprintf(sb, sizeof(sb), "%s/sql-b.txt", tcluster_dir(tc));
	free(sqlite_query(da, "PRAGMA journal_mode=DELETE; CREATE TABLE t(id INTEGER "
			  "PRIMARY KEY, who TEXT, n INTEGER, pad BLOB);"));
	wa = sqlite_writer(da, "a", sa);
	wb = sqlite_writer(db, "b", sb);
	cr_assert_eq(waitpid(wa, &st, 0), wa);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer on A failed: %d", st);
	cr_assert_eq(waitpid(wb, &st, 0), wb);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer on B failed: %d", st);
	out = sqlite_query(db, "PRAGMA integrity_check;");
	cr_assert_str_eq(out, "ok\n");
	free(out);
	out = sqlite_query(da, "SELECT count(*), count(DISTINCT who || n) FROM t;");
	cr_assert_str_eq(out, "400|400\n");
	free(out);
	out = sqlite_query(da, "PRAGMA integrity_check;");
	cr_assert_str_eq(out, "ok\n");
	free(out);
}

/* Two more mounts without name and attribute caching: SQLite's journal
 * file is created and deleted by either side, and each must see the
 * other's at once (docs/locks.md, Limits). The lock handoff and the
 * cache drop at each grant do the rest. */
Test(locks, sqlite_from_two_mounts)
{
	struct vt_mount2 m3, m4;
	char p3[PATH_MAX], p4[PATH_MAX], da[PATH_MAX + 16], db[PATH_MAX + 16];

	snprintf(p3, sizeof(p3), "%s/mnt3", tcluster_dir(tc));
	snprintf(p4, sizeof(p4), "%s/mnt4", tcluster_dir(tc));
	vt_mount2_start(tc, &m3, p3, "entry_timeout=0,attr_timeout=0");
	vt_mount2_start(tc, &m4, p4, "entry_timeout=0,attr_timeout=0");
	snprintf(da, sizeof(da), "%s/test.db", m3.path);
	snprintf(db, sizeof(db), "%s/test.db", m4.path);
	sqlite_two_writers(da, db);
	vt_mount2_stop(&m3);
	vt_mount2_stop(&m4);
}

/* The two mounts of the cluster, with the default 1 s name and
 * attribute caches: one mount deletes the rollback journal and the other
 * must not go on seeing its name (it would take it for a hot journal:
 * "disk I/O error"). The mds's pushed invalidations see to it
 * (docs/consistency.md). */
Test(locks, sqlite_from_two_default_mounts)
{
	char da[PATH_MAX + 16], db[PATH_MAX + 16];

	snprintf(da, sizeof(da), "%s/test.db", tcluster_mnt(tc));
	snprintf(db, sizeof(db), "%s/test.db", m2.path);
	sqlite_two_writers(da, db);
}
