/*
 * invalbench.c - sdfs-invalbench: how long a second view B of a
 * filesystem takes to show a change made through a first view A (the
 * invalidation delay), and what the first call on B costs right after
 * the change. tools/bench/inval runs it on two sdfs mounts of one
 * cluster, on one local directory twice and on two passthrough_ll mounts
 * of one local directory.
 *
 *   sdfs-invalbench [--iterations N] [--timeout-ms T] [--kinds LIST]
 *                   [--json] A B
 *
 * For each kind of change, N times, in one thread: read A's current
 * state; poll B until it shows that state (untimed: this is what puts
 * the old state into B's caches, the state that must be invalidated);
 * make the change on A and take the time its last system call returned;
 * then ask B, once (the "first call", timed alone) and then in a tight
 * loop, until B shows the new state or T ms have passed (a timeout).
 * delay = the end of B's call that first showed the new state minus the
 * return of A's call; when the first call already shows it, the delay
 * is that call's own time.
 *
 *   kind      change on A                      B asks
 *   create    mknodat c.I                      fstatat c.I
 *   mkdir     mkdirat d.I                      fstatat d.I
 *   unlink    unlinkat u.I                     fstatat u.I
 *   rename    renameat r.I -> r.I.new          fstatat r.I, fstatat r.I.new
 *   chmod     fchmodat m 0600 <-> 0644         fstatat m
 *   append    open O_APPEND, write 100, close  open, fstat (size), close
 *   setxattr  lsetxattr x user.sdfs_inval=I    lgetxattr x user.sdfs_inval
 *   lock      F_SETLK F_UNLCK of its lock on k F_SETLKW F_WRLCK on k (waiting)
 *
 * append is close-to-open: A's close has returned, so B's next open must
 * see the new size. Each kind works in a directory of its own under
 * A/inval.PID (B/inval.PID on B); a kind whose first change fails with
 * EOPNOTSUPP/ENOTSUP/ENOSYS (setxattr without user xattrs) is reported
 * as unsupported. A kind stops early after INVAL_MAX_FAILS_IN_ROW
 * timeouts or errors in a row, so a run is bounded in time. Everything
 * made is removed at the end, also after Ctrl-C or SIGTERM.
 *
 * lock is not a cached state but a hand-off: A holds a write lock on
 * the whole of k; B, a child process (POSIX locks belong to a process,
 * and on the local target A and B are one directory), announces over a
 * pipe that it is about to call F_SETLKW and blocks in it; A waits
 * INVAL_LOCK_SETTLE_MS more (untimed), unlocks and takes the time its
 * fcntl returned; B takes the time its F_SETLKW returned (CLOCK_MONOTONIC
 * is one clock for both processes), unlocks and reports it. delay = B's
 * return minus A's; it can be slightly negative when the kernel runs B
 * before A's fcntl has returned. B has no "first call" after the change
 * (its one call began before it), so those columns are n/a. A B not
 * granted within T ms is a timeout and is killed; a B granted while A
 * still held the lock on the first iteration means the locks do not
 * exclude across A and B (two passthrough_ll mounts: it has no setlk,
 * so each mount's kernel keeps its own locks), reported as unsupported.
 *
 * Not here: mounting anything (tools/bench/inval). tools/bench/README.md
 * ("inval") explains the numbers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define INVAL_MAX_ITERATIONS    100000
#define INVAL_MAX_FAILS_IN_ROW  3
#define INVAL_APPEND_LEN        100
#define INVAL_XATTR             "user.sdfs_inval"
#define INVAL_LOCK_SETTLE_MS    20      /* B blocked this long before A unlocks */
#define INVAL_LOCK_MARGIN_MS    1000    /* the parent's grace beyond B's own bound */

static const char usage[] =
	"usage: sdfs-invalbench [--iterations N] [--timeout-ms T] [--kinds LIST]\n"
	"                       [--json] A B\n"
	"  A, B              two paths of one directory (two mounts of one filesystem)\n"
	"  --iterations N    changes per kind (default 50)\n"
	"  --timeout-ms T    give up waiting for B after T ms (default 5000)\n"
	"  --kinds LIST      any of create,mkdir,unlink,rename,chmod,append,setxattr,\n"
	"                    lock (default all)\n"
	"  --json            one JSON object (a line per kind) instead of the table\n";

static atomic_int interrupted;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&interrupted, 1);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* open(@path, @flags), waiting up to @timeout_ms for it to appear. */
static int open_wait(const char *path, int flags, unsigned long timeout_ms)
{
	int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
	int fd;

	while ((fd = open(path, flags)) < 0 && errno == ENOENT && now_ns() < deadline &&
	       !atomic_load(&interrupted))
		;
	return fd;
}

/* One kind's directory, seen through A and through B. */
struct inval_ctx {
	int fd[2];                      /* [0] A's, [1] B's */
	char path[2][PATH_MAX + 16];   /* root + "/" + kind name */
	unsigned long n;                /* iterations */
};

struct inval_result;

/*
 * A kind of change. observe() reads the state through view @v (0 A, 1 B)
 * as one number, and the time the state was read into *@seen_ns; it
 * returns 0 or a negative errno for what is not a state (ENOENT is a
 * state for names, "absent"). next() is the state after change().
 * run() makes the iterations into @r: run_iterations with the three
 * above, or a kind's own loop (run_lock, which uses none of them).
 */
struct inval_kind {
	const char *name;
	const char *first_call;
	int (*setup)(struct inval_ctx *c);
	int (*observe)(const struct inval_ctx *c, int v, unsigned long i,
		       int64_t *val, int64_t *seen_ns);
	int64_t (*next)(int64_t old, unsigned long i);
	int (*change)(const struct inval_ctx *c, unsigned long i, int64_t want);
	void (*run)(const struct inval_kind *k, struct inval_ctx *c,
		    unsigned long timeout_ms, struct inval_result *r);
};

struct inval_result {
	int supported;
	const char *unsupported_why;    /* NULL: the change fails with EOPNOTSUPP/ENOSYS */
	unsigned long runs;             /* iterations made */
	unsigned long seen, timeouts, errors, unprimed, first_saw;
	int stopped;                    /* too many failures in a row */
	int first_na;                   /* B has no first call after the change */
	int last_err;
	double *delay_ms;               /* [seen] */
	double *first_ms;               /* [runs] */
};

static int state_of(int dir_fd, const char *name, int64_t *val)
{
	struct stat st;

	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return -errno;
		*val = 0;
		return 0;
	}
	*val = S_ISDIR(st.st_mode) ? 2 : 1;
	return 0;
}

static int make_file(int dir_fd, const char *name)
{
	return mknodat(dir_fd, name, S_IFREG | 0644, 0) < 0 ? -errno : 0;
}

static int obs_name(const struct inval_ctx *c, int v, const char *fmt, unsigned long i,
		    int64_t *val, int64_t *seen_ns)
{
	char name[64];
	int ret;

	snprintf(name, sizeof(name), fmt, i);
	ret = state_of(c->fd[v], name, val);
	*seen_ns = now_ns();
	return ret;
}

static int setup_none(struct inval_ctx *c)
{
	(void)c;
	return 0;
}

static int obs_create(const struct inval_ctx *c, int v, unsigned long i, int64_t *val,
		      int64_t *seen_ns)
{
	return obs_name(c, v, "c.%lu", i, val, seen_ns);
}

static int64_t next_file(int64_t old, unsigned long i)
{
	(void)old;
	(void)i;
	return 1;
}

static int change_create(const struct inval_ctx *c, unsigned long i, int64_t want)
{
	char name[64];

	(void)want;
	snprintf(name, sizeof(name), "c.%lu", i);
	return make_file(c->fd[0], name);
}

static int obs_mkdir(const struct inval_ctx *c, int v, unsigned long i, int64_t *val,
		     int64_t *seen_ns)
{
	return obs_name(c, v, "d.%lu", i, val, seen_ns);
}

static int64_t next_dir(int64_t old, unsigned long i)
{
	(void)old;
	(void)i;
	return 2;
}

static int change_mkdir(const struct inval_ctx *c, unsigned long i, int64_t want)
{
	char name[64];

	(void)want;
	snprintf(name, sizeof(name), "d.%lu", i);
	return mkdirat(c->fd[0], name, 0755) < 0 ? -errno : 0;
}

/* The files "PREFIX.I" of every iteration, made through A beforehand. */
static int make_files(struct inval_ctx *c, const char *prefix)
{
	char name[64];
	int ret = 0;

	for (unsigned long i = 0; i < c->n && !ret; i++) {
		snprintf(name, sizeof(name), "%s.%lu", prefix, i);
		ret = make_file(c->fd[0], name);
	}
	return ret;
}

static int setup_unlink(struct inval_ctx *c)
{
	return make_files(c, "u");
}

static int obs_unlink(const struct inval_ctx *c, int v, unsigned long i, int64_t *val,
		      int64_t *seen_ns)
{
	return obs_name(c, v, "u.%lu", i, val, seen_ns);
}

static int64_t next_gone(int64_t old, unsigned long i)
{
	(void)old;
	(void)i;
	return 0;
}

static int change_unlink(const struct inval_ctx *c, unsigned long i, int64_t want)
{
	char name[64];

	(void)want;
	snprintf(name, sizeof(name), "u.%lu", i);
	return unlinkat(c->fd[0], name, 0) < 0 ? -errno : 0;
}

static int setup_rename(struct inval_ctx *c)
{
	return make_files(c, "r");
}

/* 1: only the old name, 2: only the new one (0, 3: in between) */
static int obs_rename(const struct inval_ctx *c, int v, unsigned long i, int64_t *val,
		      int64_t *seen_ns)
{
	char name[64];
	int64_t a = 0, b = 0;
	int ret;

	snprintf(name, sizeof(name), "r.%lu", i);
	ret = state_of(c->fd[v], name, &a);
	if (!ret) {
		snprintf(name, sizeof(name), "r.%lu.new", i);
		ret = state_of(c->fd[v], name, &b);
	}
	*seen_ns = now_ns();
	if (!ret)
		*val = (a != 0) | (b != 0) << 1;
	return ret;
}

static int64_t next_renamed(int64_t old, unsigned long i)
{
	(void)old;
	(void)i;
	return 2;
}

static int change_rename(const struct inval_ctx *c, unsigned long i, int64_t want)
{
	char from[64], to[64];

	(void)want;
	snprintf(from, sizeof(from), "r.%lu", i);
	snprintf(to, sizeof(to), "r.%lu.new", i);
	return renameat(c->fd[0], from, c->fd[0], to) < 0 ? -errno : 0;
}

static int setup_chmod(struct inval_ctx *c)
{
	int ret = make_file(c->fd[0], "m");

	if (!ret && fchmodat(c->fd[0], "m", 0600, 0) < 0)
		ret = -errno;
	return ret;
}

static int obs_chmod(const struct inval_ctx *c, int v, unsigned long i, int64_t *val,
		     int64_t *seen_ns)
{
	struct stat st;
	int ret = fstatat(c->fd[v], "m", &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;

	(void)i;
	*seen_ns = now_ns();
	if (!ret)
		*val = st.st_mode & 07777;
	return ret;
}

static int64_t next_mode(int64_t old, unsigned long i)
{
	(void)i;
	return old == 0600 ? 0644 : 0600;
}

static int change_chmod(const struct inval_ctx *c, unsigned long i, int64_t want)
{
	(void)i;
	return fchmodat(c->fd[0], "m", (mode_t)want, 0) < 0 ? -errno : 0;
}

static int setup_append(struct inval_ctx *c)
{
	return make_file(c->fd[0], "a");
}

/* The size B's open shows (close-to-open); read before the close. */
static int obs_append(const struct inval_ctx *c, int v, unsigned long i, int64_t *val,
		      int64_t *seen_ns)
{
	struct stat st;
	int fd, ret = 0;

	(void)i;
	fd = openat(c->fd[v], "a", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*seen_ns = now_ns();
		return -errno;
	}
	if (fstat(fd, &st) < 0)
		ret = -errno;
	*seen_ns = now_ns();
	close(fd);
	if (!ret)
		*val = st.st_size;
	return ret;
}

static int64_t next_size(int64_t old, unsigned long i)
{
	(void)i;
	return old + INVAL_APPEND_LEN;
}

static int change_append(const struct inval_ctx *c, unsigned long i, int64_t want)
{
	char buf[INVAL_APPEND_LEN];
	ssize_t n;
	int fd, ret = 0;

	(void)want;
	memset(buf, 'a' + (int)(i % 26), sizeof(buf));
	fd = openat(c->fd[0], "a", O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, buf, sizeof(buf));
	if (n != (ssize_t)sizeof(buf))
		ret = n < 0 ? -errno : -EIO;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

static int setup_setxattr(struct inval_ctx *c)
{
	return make_file(c->fd[0], "x");
}

/* The value as a number; -1 while there is none. */
static int obs_setxattr(const struct inval_ctx *c, int v, unsigned long i, int64_t *val,
			int64_t *seen_ns)
{
	char path[PATH_MAX + 32], buf[32];
	ssize_t n;

	(void)i;
	snprintf(path, sizeof(path), "%s/x", c->path[v]);
	n = lgetxattr(path, INVAL_XATTR, buf, sizeof(buf) - 1);
	*seen_ns = now_ns();
	if (n < 0 && errno != ENODATA)
		return -errno;
	buf[n < 0 ? 0 : n] = '\0';
	*val = n < 0 ? -1 : strtoll(buf, NULL, 10);
	return 0;
}

static int64_t next_value(int64_t old, unsigned long i)
{
	(void)old;
	return (int64_t)i + 1;
}

static int change_setxattr(const struct inval_ctx *c, unsigned long i, int64_t want)
{
	char path[PATH_MAX + 32], buf[32];
	int len;

	(void)i;
	snprintf(path, sizeof(path), "%s/x", c->path[0]);
	len = snprintf(buf, sizeof(buf), "%" PRId64, want);
	return lsetxattr(path, INVAL_XATTR, buf, (size_t)len, 0) < 0 ? -errno : 0;
}

static int setup_lock(struct inval_ctx *c)
{
	return make_file(c->fd[0], "k");
}

static void run_iterations(const struct inval_kind *k, struct inval_ctx *c,
			   unsigned long timeout_ms, struct inval_result *r);
static void run_lock(const struct inval_kind *k, struct inval_ctx *c,
		     unsigned long timeout_ms, struct inval_result *r);

static const struct inval_kind kinds[] = {
	{ "create", "stat", setup_none, obs_create, next_file, change_create, run_iterations },
	{ "mkdir", "stat", setup_none, obs_mkdir, next_dir, change_mkdir, run_iterations },
	{ "unlink", "stat", setup_unlink, obs_unlink, next_gone, change_unlink, run_iterations },
	{ "rename", "stat x2", setup_rename, obs_rename, next_renamed, change_rename,
	  run_iterations },
	{ "chmod", "stat", setup_chmod, obs_chmod, next_mode, change_chmod, run_iterations },
	{ "append", "open+fstat", setup_append, obs_append, next_size, change_append,
	  run_iterations },
	{ "setxattr", "getxattr", setup_setxattr, obs_setxattr, next_value, change_setxattr,
	  run_iterations },
	{ "lock", "F_SETLKW", setup_lock, NULL, NULL, NULL, run_lock },
};
#define INVAL_NKINDS (sizeof(kinds) / sizeof(kinds[0]))

struct inval_opts {
	const char *dir[2];
	unsigned long iterations;
	unsigned long timeout_ms;
	int want[INVAL_NKINDS];
	int json;
};

/*
 * Ask B until it shows @want or @deadline_ns passes: 1 (*@seen_ns: when
 * it was read), 0 on timeout, or the negative errno of a failed call.
 */
static int poll_b(const struct inval_kind *k, const struct inval_ctx *c, unsigned long i,
		  int64_t want, int64_t deadline_ns, int64_t *seen_ns)
{
	int64_t val, t;
	int ret;

	do {
		ret = k->observe(c, 1, i, &val, &t);
		if (ret < 0)
			return ret;
		if (val == want) {
			*seen_ns = t;
			return 1;
		}
	} while (t < deadline_ns && !atomic_load(&interrupted));
	return 0;
}

static int is_unsupported(int err)
{
	return err == -EOPNOTSUPP || err == -ENOTSUP || err == -ENOSYS;
}

/* Fail one iteration: counted, said once per kind. 0, or 1 to stop. */
static int iter_fail(const struct inval_kind *k, struct inval_result *r, unsigned *in_row,
		     unsigned long i, const char *what, int err)
{
	if (err < 0) {
		r->errors++;
		if (!r->last_err)
			fprintf(stderr, "sdfs-invalbench: %s %lu: %s: %s\n", k->name, i, what,
				strerror(-err));
		r->last_err = -err;
	}
	if (++*in_row < INVAL_MAX_FAILS_IN_ROW)
		return 0;
	fprintf(stderr, "sdfs-invalbench: %s: %u failures in a row, stopping this kind\n",
		k->name, *in_row);
	r->stopped = 1;
	return 1;
}

static void run_iterations(const struct inval_kind *k, struct inval_ctx *c,
			   unsigned long timeout_ms, struct inval_result *r)
{
	int64_t timeout_ns = (int64_t)timeout_ms * 1000000, old, val, t, t_ret, t0;
	unsigned in_row = 0;
	int ret;

	for (unsigned long i = 0; i < c->n && !atomic_load(&interrupted); i++) {
		ret = k->observe(c, 0, i, &old, &t);
		if (ret < 0) {
			if (iter_fail(k, r, &in_row, i, "reading A", ret))
				return;
			continue;
		}
		ret = poll_b(k, c, i, old, now_ns() + timeout_ns, &t);
		if (ret <= 0) {
			r->unprimed += ret == 0;
			if (iter_fail(k, r, &in_row, i, "B showing the old state", ret))
				return;
			continue;
		}
		int64_t want = k->next(old, i);

		ret = k->change(c, i, want);
		t_ret = now_ns();
		if (ret < 0) {
			if (i == 0 && is_unsupported(ret)) {
				r->supported = 0;
				return;
			}
			if (iter_fail(k, r, &in_row, i, "the change on A", ret))
				return;
			continue;
		}
		r->runs++;
		t0 = now_ns();
		ret = k->observe(c, 1, i, &val, &t);
		r->first_ms[r->runs - 1] = (t - t0) / 1e6;
		if (!ret && val == want) {
			r->first_saw++;
			ret = 1;
		} else if (!ret) {
			ret = poll_b(k, c, i, want, t_ret + timeout_ns, &t);
		}
		if (ret < 0) {
			if (iter_fail(k, r, &in_row, i, "B after the change", ret))
				return;
			continue;
		}
		if (ret == 0) {
			r->timeouts++;
			if (iter_fail(k, r, &in_row, i, "timeout", 0))
				return;
			continue;
		}
		in_row = 0;
		r->delay_ms[r->seen++] = (t - t_ret) / 1e6;
	}
}

/*
 * The lock kind. B is a child process that talks to the parent over two
 * pipes: the parent writes 'l' (wait for the lock once), B answers with
 * lock_msg records. Everything B does is bounded by SIGALRM (lock_whole)
 * and everything the parent waits for by poll (lock_read_msg).
 */
struct lock_msg {
	char tag;               /* 'r' k opened, 'w' about to wait, 'g' granted, 'e' failed */
	int err;                /* a positive errno, with 'r' and 'e' */
	int64_t t_ns;           /* when B's F_SETLKW returned, with 'g' */
};

struct lock_b {
	pid_t pid;              /* -1: not running */
	int cmd_fd;             /* parent -> B */
	int rep_fd;             /* B -> parent */
};

static void on_alarm(int sig)
{
	(void)sig;              /* only to make a blocked fcntl return EINTR */
}

/*
 * F_SETLKW of @type on the whole of @fd, given up after @timeout_ms
 * (SIGALRM, installed without SA_RESTART). 0, or a negative errno
 * (-EINTR: timed out or interrupted); *@ret_ns is when fcntl returned.
 */
static int lock_whole(int fd, short type, unsigned long timeout_ms, int64_t *ret_ns)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET };
	struct itimerval it = { .it_value = { .tv_sec = (time_t)(timeout_ms / 1000),
					      .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000 } };
	struct itimerval off = { 0 };
	int ret;

	setitimer(ITIMER_REAL, &it, NULL);
	ret = fcntl(fd, F_SETLKW, &fl) < 0 ? -errno : 0;
	*ret_ns = now_ns();
	setitimer(ITIMER_REAL, &off, NULL);
	return ret;
}

static int unlock_whole(int fd)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };

	return fcntl(fd, F_SETLK, &fl) < 0 ? -errno : 0;
}

static void lock_send(int fd, char tag, int err, int64_t t_ns)
{
	struct lock_msg m = { .tag = tag, .err = err, .t_ns = t_ns };

	if (write(fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
		_exit(1);       /* the parent is gone */
}

/* B's process: open @path, then per 'l' one F_SETLKW and its unlock. */
static void lock_b_main(const char *path, int cmd_fd, int rep_fd, unsigned long timeout_ms)
{
	int fd = open_wait(path, O_RDWR | O_CLOEXEC, timeout_ms), ret;
	int64_t t;
	char cmd;

	lock_send(rep_fd, 'r', fd < 0 ? errno : 0, 0);
	if (fd < 0)
		_exit(1);
	while (read(cmd_fd, &cmd, 1) == 1 && cmd == 'l') {
		lock_send(rep_fd, 'w', 0, 0);
		/* The parent unlocks INVAL_LOCK_SETTLE_MS after 'w': T ms from there. */
		ret = lock_whole(fd, F_WRLCK, timeout_ms + INVAL_LOCK_SETTLE_MS, &t);
		if (!ret && unlock_whole(fd) < 0)
			_exit(1);
		lock_send(rep_fd, ret ? 'e' : 'g', -ret, t);
	}
	_exit(0);
}

/* Read B's next message by @deadline_ns: 1, 0 (timed out), or -errno
 * (-EPIPE: B is gone, -EINTR: interrupted). */
static int lock_read_msg(const struct lock_b *b, struct lock_msg *m, int64_t deadline_ns)
{
	struct pollfd p = { .fd = b->rep_fd, .events = POLLIN };
	ssize_t n;
	int64_t left;

	for (;;) {
		if (atomic_load(&interrupted))
			return -EINTR;
		left = deadline_ns - now_ns();
		if (left <= 0)
			return 0;
		int ret = poll(&p, 1, (int)(left / 1000000) + 1);

		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ret > 0)
			break;
	}
	/* One write of a few bytes into a pipe arrives whole. */
	n = read(b->rep_fd, m, sizeof(*m));
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*m) ? 1 : -EPIPE;
}

/* Kill B (a B blocked in F_SETLKW too) and reap it. */
static void lock_b_stop(struct lock_b *b)
{
	if (b->pid < 0)
		return;
	kill(b->pid, SIGKILL);
	while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR)
		;
	close(b->cmd_fd);
	close(b->rep_fd);
	b->pid = -1;
}

/* Start B on @path: 0 once it has opened it, or a negative errno. */
static int lock_b_start(struct lock_b *b, const char *path, unsigned long timeout_ms)
{
	struct lock_msg m;
	int cmd[2], rep[2], ret;

	if (pipe(cmd) < 0)
		return -errno;
	if (pipe(rep) < 0) {
		ret = -errno;
		goto out_close_cmd;
	}
	fflush(NULL);
	b->pid = fork();
	if (b->pid < 0) {
		ret = -errno;
		goto out_close_rep;
	}
	if (!b->pid) {
		close(cmd[1]);
		close(rep[0]);
		lock_b_main(path, cmd[0], rep[1], timeout_ms);
	}
	close(cmd[0]);
	close(rep[1]);
	b->cmd_fd = cmd[1];
	b->rep_fd = rep[0];
	ret = lock_read_msg(b, &m,
			    now_ns() + (int64_t)(timeout_ms + INVAL_LOCK_MARGIN_MS) * 1000000);
	if (ret == 1 && m.tag == 'r' && !m.err)
		return 0;
	lock_b_stop(b);
	return ret < 0 ? ret : ret == 0 ? -ETIMEDOUT : m.tag == 'r' && m.err ? -m.err : -EPROTO;
out_close_rep:
	close(rep[0]);
	close(rep[1]);
out_close_cmd:
	close(cmd[0]);
	close(cmd[1]);
	return ret;
}

enum lock_outcome {
	LOCK_TIMEOUT,           /* B not granted within T ms of A's unlock */
	LOCK_HANDED,            /* *delay_ms is set */
	LOCK_EARLY,             /* B granted while A held the lock */
};

/*
 * One hand-off of the lock on k from A (@a_fd) to B: an enum lock_outcome,
 * or a negative errno with *@what naming the call that failed. *@unlocked
 * says whether A's unlock returned (the iteration counts as run). B is
 * stopped after a timeout or a failure once it was asked to wait.
 */
static int lock_handoff(struct lock_b *b, int a_fd, unsigned long timeout_ms,
			double *delay_ms, const char **what, int *unlocked)
{
	struct timespec settle = { .tv_nsec = INVAL_LOCK_SETTLE_MS * 1000000L };
	struct lock_msg m;
	int64_t t_a0, t_a;
	int ret;

	*unlocked = 0;
	*what = "A taking the lock";
	ret = lock_whole(a_fd, F_WRLCK, timeout_ms, &t_a);
	if (ret < 0)
		return ret;
	*what = "B starting to wait";
	if (write(b->cmd_fd, "l", 1) != 1) {
		ret = -errno;
		goto out_stop;
	}
	ret = lock_read_msg(b, &m, now_ns() + (int64_t)timeout_ms * 1000000);
	if (ret == 0)
		ret = -ETIMEDOUT;
	else if (ret == 1 && m.tag != 'w')
		ret = -EPROTO;
	if (ret != 1)
		goto out_stop;
	/* Setup, not measured: B is inside F_SETLKW by now, refused and
	 * waiting (on sdfs: in its first naps between SETs to the mds). */
	nanosleep(&settle, NULL);
	*what = "A unlocking";
	t_a0 = now_ns();
	ret = unlock_whole(a_fd);
	t_a = now_ns();
	if (ret < 0)
		goto out_stop;
	*unlocked = 1;
	*what = "B waiting";
	ret = lock_read_msg(b, &m, t_a + (int64_t)(timeout_ms + INVAL_LOCK_MARGIN_MS) * 1000000);
	if (ret == 1 && m.tag == 'g') {
		if (m.t_ns < t_a0)
			return LOCK_EARLY;
		*delay_ms = (double)(m.t_ns - t_a) / 1e6;
		return LOCK_HANDED;
	}
	if (ret == 1)   /* 'e': EINTR is B's own alarm */
		ret = m.tag == 'e' ? (m.err == EINTR ? LOCK_TIMEOUT : -m.err) : -EPROTO;
	lock_b_stop(b);
	return ret;
out_stop:
	lock_b_stop(b);
	unlock_whole(a_fd);
	return ret;
}

static int is_lock_unsupported(int err)
{
	return is_unsupported(err) || err == -ENOLCK;
}

static void run_lock(const struct inval_kind *k, struct inval_ctx *c,
		     unsigned long timeout_ms, struct inval_result *r)
{
	char b_path[PATH_MAX + 32];
	struct lock_b b = { .pid = -1 };
	unsigned in_row = 0;
	const char *what;
	double delay = 0;
	int a_fd, ret, unlocked;

	r->first_na = 1;
	snprintf(b_path, sizeof(b_path), "%s/k", c->path[1]);
	a_fd = openat(c->fd[0], "k", O_RDWR | O_CLOEXEC);
	if (a_fd < 0) {
		iter_fail(k, r, &in_row, 0, "opening k on A", -errno);
		return;
	}
	for (unsigned long i = 0; i < c->n && !atomic_load(&interrupted); i++) {
		if (b.pid < 0) {
			ret = lock_b_start(&b, b_path, timeout_ms);
			if (ret < 0) {
				if (iter_fail(k, r, &in_row, i, "starting B (opening k on B)", ret))
					break;
				continue;
			}
		}
		ret = lock_handoff(&b, a_fd, timeout_ms, &delay, &what, &unlocked);
		if (atomic_load(&interrupted))
			break;
		if (i == 0 && (ret == LOCK_EARLY || (ret < 0 && is_lock_unsupported(ret)))) {
			r->supported = 0;
			r->unsupported_why = ret == LOCK_EARLY ?
				"B was granted the lock while A held it: "
				"locks do not exclude across A and B" :
				"fcntl locks fail with EOPNOTSUPP/ENOSYS/ENOLCK";
			break;
		}
		r->runs += unlocked;
		if (ret == LOCK_HANDED) {
			in_row = 0;
			r->delay_ms[r->seen++] = delay;
			continue;
		}
		if (ret == LOCK_EARLY) {
			r->errors++;
			fprintf(stderr, "sdfs-invalbench: %s %lu: B was granted the lock while A "
				"held it\n", k->name, i);
		} else if (ret == LOCK_TIMEOUT) {
			r->timeouts++;
		}
		if (iter_fail(k, r, &in_row, i, ret < 0 ? what : "timeout", ret < 0 ? ret : 0))
			break;
	}
	lock_b_stop(&b);
	close(a_fd);
}

/* Remove what @dir_fd's directory holds: files and empty directories. */
static void empty_dir(int dir_fd)
{
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			if (unlinkat(dir_fd, de->d_name, 0) < 0 && (errno == EISDIR || errno == EPERM))
				unlinkat(dir_fd, de->d_name, AT_REMOVEDIR);
	closedir(d);
}


/* One kind in @root/NAME on both views; 0, or -1 when it cannot run. */
static int run_kind(const struct inval_kind *k, const char *root[2],
		    const struct inval_opts *o, struct inval_result *r)
{
	struct inval_ctx c = { .fd = { -1, -1 }, .n = o->iterations };
	int ret = -1;

	*r = (struct inval_result){ .supported = 1 };
	r->delay_ms = calloc(c.n, sizeof(*r->delay_ms));
	r->first_ms = calloc(c.n, sizeof(*r->first_ms));
	if (!r->delay_ms || !r->first_ms) {
		fprintf(stderr, "sdfs-invalbench: out of memory\n");
		return -1;
	}
	for (int v = 0; v < 2; v++)
		snprintf(c.path[v], sizeof(c.path[v]), "%s/%s", root[v], k->name);
	if (mkdir(c.path[0], 0755) < 0 ||
	    (c.fd[0] = open(c.path[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "sdfs-invalbench: %s: %s\n", c.path[0], strerror(errno));
		goto out_rmdir;
	}
	c.fd[1] = open_wait(c.path[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC, o->timeout_ms);
	if (c.fd[1] < 0) {
		fprintf(stderr, "sdfs-invalbench: %s: %s (not the same filesystem as %s?)\n",
			c.path[1], strerror(errno), c.path[0]);
		goto out_empty;
	}
	ret = k->setup(&c);
	if (ret < 0) {
		fprintf(stderr, "sdfs-invalbench: %s: setting up in %s: %s\n", k->name,
			c.path[0], strerror(-ret));
		goto out_empty;
	}
	k->run(k, &c, o->timeout_ms, r);
	ret = 0;
out_empty:
	empty_dir(c.fd[0]);
	if (c.fd[1] >= 0)
		close(c.fd[1]);
	close(c.fd[0]);
out_rmdir:
	rmdir(c.path[0]);
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct inval_summary {
	double median, p90, max;
};

/* Sorts @v. The median, the nearest-rank 90th percentile and the max. */
static struct inval_summary summarize(double *v, size_t n)
{
	struct inval_summary s = { 0 };

	if (!n)
		return s;
	qsort(v, n, sizeof(*v), cmp_double);
	s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s.p90 = v[(n * 9 + 9) / 10 - 1];
	s.max = v[n - 1];
	return s;
}

static void print_json_num(const char *key, double v, int have)
{
	if (have)
		printf(", \"%s\": %.4f", key, v);
	else
		printf(", \"%s\": null", key);
}

static void print_json_kind(const struct inval_kind *k, const struct inval_result *r,
			    struct inval_summary d, struct inval_summary f, int first)
{
	int have_first = r->runs > 0 && !r->first_na;

	printf("%s\n  {\"kind\": \"%s\", \"first_call\": \"%s\", \"supported\": %s, "
	       "\"runs\": %lu, \"seen\": %lu, \"timeouts\": %lu, \"errors\": %lu, "
	       "\"unprimed\": %lu, \"stopped\": %s",
	       first ? "" : ",", k->name, k->first_call, r->supported ? "true" : "false",
	       r->runs, r->seen, r->timeouts, r->errors, r->unprimed,
	       r->stopped ? "true" : "false");
	if (r->unsupported_why)
		printf(", \"unsupported_why\": \"%s\"", r->unsupported_why);
	if (r->first_na)
		printf(", \"first_saw_new\": null");
	else
		printf(", \"first_saw_new\": %lu", r->first_saw);
	print_json_num("delay_median_ms", d.median, r->seen > 0);
	print_json_num("delay_p90_ms", d.p90, r->seen > 0);
	print_json_num("delay_max_ms", d.max, r->seen > 0);
	print_json_num("first_median_ms", f.median, have_first);
	print_json_num("first_p90_ms", f.p90, have_first);
	print_json_num("first_max_ms", f.max, have_first);
	printf(", \"delays_ms\": [");
	for (unsigned long j = 0; j < r->seen; j++)
		printf("%s%.4f", j ? ", " : "", r->delay_ms[j]);
	printf("]}");
}

static void print_table_kind(const struct inval_kind *k, const struct inval_result *r,
			     struct inval_summary d, struct inval_summary f)
{
	if (!r->supported) {
		printf("%-9s %-11s unsupported (%s)\n", k->name, k->first_call,
		       r->unsupported_why ? r->unsupported_why :
		       "the change fails with EOPNOTSUPP/ENOSYS");
		return;
	}
	printf("%-9s %-11s %5lu %5lu %4lu %4lu %4lu", k->name, k->first_call, r->runs,
	       r->seen, r->timeouts, r->unprimed, r->errors);
	if (r->seen)
		printf(" %9.4f %9.4f %9.4f", d.median, d.p90, d.max);
	else
		printf(" %9s %9s %9s", "-", "-", "-");
	if (r->first_na)
		printf(" %9s %9s %9s %8s", "n/a", "n/a", "n/a", "n/a");
	else if (r->runs)
		printf(" %9.4f %9.4f %9.4f %6lu/%lu", f.median, f.p90, f.max, r->first_saw,
		       r->runs);
	printf("%s\n", r->stopped ? "  (stopped: failures in a row)" : "");
}

/* 0, or 2 (the usage exit status) after saying what is wrong. */
static int parse_opts(int argc, char **argv, struct inval_opts *o)
{
	int ndirs = 0;

	*o = (struct inval_opts){ .iterations = 50, .timeout_ms = 5000 };
	for (size_t j = 0; j < INVAL_NKINDS; j++)
		o->want[j] = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *e, buf[256], *save;
		int bad = 0;

		if ((!strcmp(a, "--iterations") || !strcmp(a, "--timeout-ms")) && v) {
			unsigned long x;

			errno = 0;
			x = strtoul(v, &e, 10);
			bad = errno || e == v || *e || !x || *v == '-' ||
			      x > INVAL_MAX_ITERATIONS;
			if (a[2] == 'i')
				o->iterations = x;
			else
				o->timeout_ms = x;
			i++;
		} else if (!strcmp(a, "--kinds") && v && strlen(v) < sizeof(buf)) {
			strcpy(buf, v);
			memset(o->want, 0, sizeof(o->want));
			for (char *t = strtok_r(buf, ",", &save); t && !bad;
			     t = strtok_r(NULL, ",", &save)) {
				size_t j;

				for (j = 0; j < INVAL_NKINDS && strcmp(t, kinds[j].name); j++)
					;
				if (j == INVAL_NKINDS)
					bad = 1;
				else
					o->want[j] = 1;
			}
			i++;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			exit(0);
		} else if (a[0] != '-' && ndirs < 2 && strlen(a) < PATH_MAX - 32) {
			o->dir[ndirs++] = a;
		} else {
			bad = 1;
		}
		if (bad) {
			fprintf(stderr, "sdfs-invalbench: bad argument '%s%s%s'\n%s", a,
				v && a[0] == '-' ? " " : "", v && a[0] == '-' ? v : "", usage);
			return 2;
		}
	}
	if (ndirs != 2) {
		fputs(usage, stderr);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESETHAND };
	struct sigaction alarm_sa = { .sa_handler = on_alarm };     /* no SA_RESTART */
	struct inval_result res[INVAL_NKINDS] = { 0 };
	char root[2][PATH_MAX];
	const char *roots[2] = { root[0], root[1] };
	struct inval_opts o;
	int ret, bfd, first = 1;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret;
	/* Ctrl-C or SIGTERM ends the kind early but lets cleanup run; a
	 * second one kills. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&alarm_sa.sa_mask);
	sigaction(SIGALRM, &alarm_sa, NULL);
	/* lock's B may be gone when the parent writes to it: EPIPE, not death. */
	signal(SIGPIPE, SIG_IGN);

	for (int v = 0; v < 2; v++)
		snprintf(root[v], sizeof(root[v]), "%s/inval.%ld", o.dir[v], (long)getpid());
	if (mkdir(root[0], 0755) < 0) {
		fprintf(stderr, "sdfs-invalbench: %s: %s\n", root[0], strerror(errno));
		return 1;
	}
	bfd = open_wait(root[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC, o.timeout_ms);
	if (bfd < 0) {
		fprintf(stderr, "sdfs-invalbench: %s: %s (not the same filesystem as %s?)\n",
			root[1], strerror(errno), o.dir[0]);
		rmdir(root[0]);
		return 1;
	}
	close(bfd);

	ret = 0;
	for (size_t j = 0; j < INVAL_NKINDS && !ret && !atomic_load(&interrupted); j++) {
		if (!o.want[j])
			continue;
		fprintf(stderr, "sdfs-invalbench: %s...\n", kinds[j].name);
		ret = run_kind(&kinds[j], roots, &o, &res[j]);
	}
	rmdir(root[0]);

	if (o.json)
		printf("{\"a\": \"%s\", \"b\": \"%s\", \"iterations\": %lu, \"timeout_ms\": %lu, "
		       "\"kinds\": [", o.dir[0], o.dir[1], o.iterations, o.timeout_ms);
	else
		printf("A=%s B=%s: %lu changes per kind, timeout %lu ms; times in ms\n"
		       "%-9s %-11s %5s %5s %4s %4s %4s %9s %9s %9s %9s %9s %9s %s\n",
		       o.dir[0], o.dir[1], o.iterations, o.timeout_ms, "kind", "first call",
		       "runs", "seen", "t/o", "skip", "err", "delay p50", "p90", "max",
		       "first p50", "p90", "max", "first saw new");
	for (size_t j = 0; j < INVAL_NKINDS; j++) {
		struct inval_result *r = &res[j];
		struct inval_summary d, f;

		if (!o.want[j] || (!r->delay_ms && !r->runs))
			continue;
		d = summarize(r->delay_ms, r->seen);
		f = summarize(r->first_ms, r->runs);
		if (o.json)
			print_json_kind(&kinds[j], r, d, f, first);
		else
			print_table_kind(&kinds[j], r, d, f);
		first = 0;
		free(r->delay_ms);
		free(r->first_ms);
	}
	if (o.json)
		printf("\n]}\n");
	if (atomic_load(&interrupted)) {
		fprintf(stderr, "sdfs-invalbench: interrupted\n");
		return 130;
	}
	return ret ? 1 : 0;
}
