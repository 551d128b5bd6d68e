/*
 * coherence_test.c - two mounts of one cluster (A at DIR/mnt, B at
 * DIR/mnt2: two mount.sdfs processes, dev up --mounts 2) and what one
 * sees of the other's changes: the contract of docs/consistency.md.
 *
 * - Names and attributes: a create, rename, unlink, chmod, mkdir, rmdir,
 *   symlink or truncate on A is seen by B within the entry/attribute
 *   timeout (1 s). B looks first, so that it holds the old state in its
 *   caches (negative entries too); then it polls with a deadline of a
 *   few seconds. The delays seen are logged, never asserted. And the
 *   same at once: the mds pushed B an invalidation before it
 *   acknowledged A's change, so B's first look must see it.
 * - Close-to-open: A writes and closes (or fsyncs), B opens afterwards
 *   and reads exactly that, at once, no polling; also when B had the
 *   file open and in its page cache before A overwrote, appended to or
 *   truncated it.
 * - Two writers: A and B write disjoint ranges of one file at the same
 *   time (and both a shared range), then both close, in either order:
 *   every byte of both is there, read through A, B and libsdfs, and
 *   every data object's replicas are identical (sdfs_obj_locate).
 */
#include "tests/cluster/fixture.h"
#include "common/oid.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEEN_WAIT_MS 5000       /* a change must show within this (timeout: 1 s) */
#define POLL_MS 5
#define KiB 1024
#define MiB (1024 * 1024)

static struct tcluster *tc;

static void setup(void)
{
	struct tcluster_opts o = { .blockd = 3, .copies = 3, .mds = 1, .mounts = 2 };

	tc = tcluster_start(&o);
	cr_assert(tcluster_mnt_n(tc, 0) && tcluster_mnt_n(tc, 1));
	cr_assert(!tcluster_mnt_n(tc, 2));
}

static void teardown(void)
{
	tcluster_stop(tc);
	tc = NULL;
}

TestSuite(coherence, .init = setup, .fini = teardown, .timeout = 300);

/* @name on mount @m (0: A, 1: B), into a static ring of buffers. */
static const char *on(unsigned m, const char *name)
{
	static char bufs[8][PATH_MAX];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, PATH_MAX, "%s/%s", tcluster_mnt_n(tc, m), name);
	return b;
}

static void put_file(const char *path, const void *buf, size_t len, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);

	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		cr_assert(n > 0, "write %s: %s", path, strerror(errno));
		done += (size_t)n;
	}
	cr_assert_eq(close(fd), 0, "close %s: %s", path, strerror(errno));
}

/* Everything read(2) gives on @fd until EOF, as `cat` would. */
static char *read_fd(int fd, size_t *len, const char *what)
{
	size_t cap = 64 * KiB, got = 0;
	char *buf = malloc(cap);

	cr_assert(buf);
	for (;;) {
		if (got == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			cr_assert(buf);
		}
		ssize_t n = read(fd, buf + got, cap - got);

		cr_assert(n >= 0, "read %s: %s", what, strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*len = got;
	return buf;
}

static char *get_file_flags(const char *path, size_t *len, int flags)
{
	int fd = open(path, O_RDONLY | flags);

	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	char *buf = read_fd(fd, len, path);
	close(fd);
	return buf;
}

static char *get_file(const char *path, size_t *len)
{
	return get_file_flags(path, len, 0);
}

/* Equal, or fail saying where the first difference is. */
static void assert_same(const char *got, size_t got_len, const char *want,
			size_t want_len, const char *what)
{
	size_t i = 0;

	while (i < got_len && i < want_len && got[i] == want[i])
		i++;
	cr_assert(got_len == want_len && i == want_len,
		  "%s: read %zu bytes, expected %zu; first difference at byte %zu", what,
		  got_len, want_len, i);
}

/* ---- names and attributes ---- */

enum seen { S_EXISTS, S_GONE, S_MODE, S_SIZE, S_LINK, S_DIR, S_LISTED, S_UNLISTED };

struct expect {
	enum seen kind;
	const char *path;       /* on B; S_LISTED/UNLISTED: the dir */
	const char *name;       /* S_LISTED/UNLISTED: the entry; S_LINK: target */
	mode_t mode;
	off_t size;
};

/* B's view of a path: EX(kind, path, .name = ..., .mode = ...) */
#define EX(k, ...) (&(struct expect){ .kind = (k), .path = __VA_ARGS__ })

static int listed(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	cr_assert(d, "opendir %s: %s", dir, strerror(errno));
	while (!found && (e = readdir(d)))
		found = !strcmp(e->d_name, name);
	closedir(d);
	return found;
}

static int holds(const struct expect *x)
{
	struct stat st;
	char buf[PATH_MAX];
	ssize_t n;
	int r = lstat(x->path, &st);

	switch (x->kind) {
	case S_EXISTS:
		return r == 0;
	case S_GONE:
		cr_assert(r == 0 || errno == ENOENT, "lstat %s: %s", x->path, strerror(errno));
		return r < 0;
	case S_MODE:
		return r == 0 && (st.st_mode & 07777) == x->mode;
	case S_SIZE:
		return r == 0 && st.st_size == x->size;
	case S_DIR:
		return r == 0 && S_ISDIR(st.st_mode);
	case S_LINK:
		n = readlink(x->path, buf, sizeof(buf) - 1);
		if (n < 0)
			return 0;
		buf[n] = '\0';
		return !strcmp(buf, x->name);
	case S_LISTED:
		return listed(x->path, x->name);
	case S_UNLISTED:
		return !listed(x->path, x->name);
	}
	return 0;
}

struct delays {
	const char *what[32];
	int64_t max_ms[32];
	unsigned n;
	int immediate;          /* B must see each change on its first look */
};

/* Poll until B sees @x; the delay since the change (made at @t0) goes
 * into @d under @what. */
static void wait_seen(struct delays *d, const char *what, const struct expect *x,
		      int64_t t0)
{
	int64_t now;

	while (!holds(x)) {
		now = tnow_ms();
		cr_assert(!d->immediate, "B still saw the old state %" PRId64 " ms after "
			  "A's %s returned (%s): the mds acknowledged it without "
			  "invalidating B's cache", now - t0, what, x->path);
		cr_assert(now - t0 < SEEN_WAIT_MS, "B did not see %s within %d ms (%s)",
			  what, SEEN_WAIT_MS, x->path);
		tsleep_ms(POLL_MS);
	}
	now = tnow_ms() - t0;
	for (unsigned i = 0; i < d->n; i++)
		if (!strcmp(d->what[i], what)) {
			if (now > d->max_ms[i])
				d->max_ms[i] = now;
			return;
		}
	cr_assert(d->n < 32);
	d->what[d->n] = what;
	d->max_ms[d->n++] = now;
}

/* B's view before a change: primes its caches with the old state. */
static void prime(const struct expect *x, const char *what)
{
	cr_assert(holds(x), "B: before %s, %s is not as expected", what, x->path);
}

static void names_round(struct delays *d, unsigned round)
{
	char f[32], g[32], dir[32], link[32], t[32], data[100];
	int64_t t0;

	snprintf(f, sizeof(f), "f%u", round);
	snprintf(g, sizeof(g), "g%u", round);
	snprintf(dir, sizeof(dir), "d%u", round);
	snprintf(link, sizeof(link), "l%u", round);
	snprintf(t, sizeof(t), "t%u", round);
	memset(data, 'x', sizeof(data));

	/* create: B has a negative entry for the name (no readdir in
	 * between: a readdirplus would refresh it) */
	prime(EX(S_GONE, on(1, f)), "create");
	t0 = tnow_ms();
	put_file(on(0, f), data, sizeof(data), O_EXCL);
	wait_seen(d, "create (lookup after a negative one)", EX(S_EXISTS, on(1, f)), t0);

	/* create, seen by readdir */
	prime(EX(S_UNLISTED, on(1, "."), .name = t), "create");
	t0 = tnow_ms();
	put_file(on(0, t), data, sizeof(data), O_EXCL);
	wait_seen(d, "create (readdir)", EX(S_LISTED, on(1, "."), .name = t), t0);

	/* rename f -> g: B has f and a negative g */
	prime(EX(S_EXISTS, on(1, f)), "rename");
	prime(EX(S_GONE, on(1, g)), "rename");
	t0 = tnow_ms();
	cr_assert_eq(rename(on(0, f), on(0, g)), 0, "rename: %s", strerror(errno));
	wait_seen(d, "rename (new name)", EX(S_EXISTS, on(1, g)), t0);
	wait_seen(d, "rename (old name gone)", EX(S_GONE, on(1, f)), t0);

	/* chmod */
	prime(EX(S_MODE, on(1, g), .mode = 0644), "chmod");
	t0 = tnow_ms();
	cr_assert_eq(chmod(on(0, g), 0600), 0, "chmod: %s", strerror(errno));
	wait_seen(d, "chmod", EX(S_MODE, on(1, g), .mode = 0600), t0);

	/* truncate: size and the data B reads */
	prime(EX(S_SIZE, on(1, t), .size = 100), "truncate");
	t0 = tnow_ms();
	cr_assert_eq(truncate(on(0, t), 10), 0, "truncate: %s", strerror(errno));
	wait_seen(d, "truncate (size)", EX(S_SIZE, on(1, t), .size = 10),
		  t0);
	size_t len;
	char *got = get_file(on(1, t), &len);
	assert_same(got, len, data, 10, "B reads the truncated file");
	free(got);

	/* unlink */
	prime(EX(S_EXISTS, on(1, g)), "unlink");
	t0 = tnow_ms();
	cr_assert_eq(unlink(on(0, g)), 0, "unlink: %s", strerror(errno));
	wait_seen(d, "unlink", EX(S_GONE, on(1, g)), t0);

	/* mkdir, rmdir */
	prime(EX(S_GONE, on(1, dir)), "mkdir");
	t0 = tnow_ms();
	cr_assert_eq(mkdir(on(0, dir), 0755), 0, "mkdir: %s", strerror(errno));
	wait_seen(d, "mkdir", EX(S_DIR, on(1, dir)), t0);
	t0 = tnow_ms();
	cr_assert_eq(rmdir(on(0, dir)), 0, "rmdir: %s", strerror(errno));
	wait_seen(d, "rmdir", EX(S_GONE, on(1, dir)), t0);

	/* symlink */
	prime(EX(S_GONE, on(1, link)), "symlink");
	t0 = tnow_ms();
	cr_assert_eq(symlink("some/where/else", on(0, link)), 0, "symlink: %s",
		     strerror(errno));
	wait_seen(d, "symlink", EX(S_LINK, on(1, link), .name = "some/where/else"),
		  t0);
}

Test(coherence, names_and_attributes_seen_within_the_timeout)
{
	struct delays d = { .n = 0 };

	for (unsigned round = 0; round < 3; round++)
		names_round(&d, round);
	for (unsigned i = 0; i < d.n; i++)
		cr_log_info("B saw %-38s after at most %4" PRId64 " ms (3 rounds)",
			    d.what[i], d.max_ms[i]);
}

/* The same changes, but B must see each on its very first look after
 * A's call returned: B's kernel caches the old state for a second, so
 * only the invalidation the mds pushed before acknowledging A's change
 * can have dropped it (lease.h). */
Test(coherence, pushed_invalidation_is_immediate)
{
	struct delays d = { .n = 0, .immediate = 1 };

	for (unsigned round = 10; round < 15; round++)
		names_round(&d, round);
}

/*
 * A mount that cached a file and then stops answering (SIGSTOP: its
 * channel to the mds stays open, nothing reads it) cannot hold A's change
 * up for longer than its lease: the mds waits for its answer until B's
 * cache time has passed, then acknowledges. Once B runs again it sees
 * the change.
 */
Test(coherence, a_stopped_mount_delays_a_change_only_until_its_lease_ends)
{
	struct stat st;
	int64_t t0, took;

	put_file(on(0, "stopped"), "x", 1, O_EXCL);
	cr_assert_eq(chmod(on(0, "stopped"), 0644), 0);
	prime(EX(S_MODE, on(1, "stopped"), .mode = 0644), "chmod");
	cr_assert_eq(tcluster_signal(tc, "mnt2", SIGSTOP), 0);
	t0 = tnow_ms();
	cr_assert_eq(chmod(on(0, "stopped"), 0600), 0, "chmod on A: %s", strerror(errno));
	took = tnow_ms() - t0;
	cr_assert_eq(tcluster_signal(tc, "mnt2", SIGCONT), 0);
	cr_log_info("A's chmod took %" PRId64 " ms while B was stopped (B caches 1 s)",
		    took);
	cr_assert(took < SEEN_WAIT_MS, "A's chmod took %" PRId64 " ms: held up by a "
		  "mount that does not answer", took);
	cr_assert_eq(stat(on(1, "stopped"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600, "B, running again, sees mode %o",
		     st.st_mode & 07777);
}

/* ---- close-to-open ---- */

Test(coherence, close_to_open_data)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, 4097, 65537, MiB + 3,
					4 * MiB + 5 };
	uint64_t seed = tseed("close_to_open_data");

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char name[32], *want = malloc(sizes[i] + 1), *got;
		size_t len;

		cr_assert(want);
		tfill_random(want, sizes[i], seed + i);
		snprintf(name, sizeof(name), "c%zu", sizes[i]);
		put_file(on(0, name), want, sizes[i], O_EXCL);
		/* B opens after A's close: no waiting allowed */
		got = get_file(on(1, name), &len);
		assert_same(got, len, want, sizes[i], name);
		free(got);
		free(want);
	}

	/* fsync instead of close: A keeps the file open */
	size_t n = 3 * MiB + 17;
	char *want = malloc(n), *got;
	size_t len;
	int fd = open(on(0, "synced"), O_WRONLY | O_CREAT | O_EXCL, 0644);

	cr_assert(want && fd >= 0);
	tfill_random(want, n, seed ^ 0x5a5a);
	cr_assert_eq(write(fd, want, n), (ssize_t)n, "write: %s", strerror(errno));
	cr_assert_eq(fsync(fd), 0, "fsync: %s", strerror(errno));
	got = get_file(on(1, "synced"), &len);
	assert_same(got, len, want, n, "B after A's fsync (A still has it open)");
	cr_assert_eq(close(fd), 0);
	free(got);
	free(want);
}

static uint64_t mds_ops(void)
{
	struct sdfs_mds_status st;

	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &st), 0);
	free(st.list);
	return st.ops;
}

/*
 * An open under a lease: B looked at the file, so the mds leases B its
 * attributes and would tell B before acknowledging any change to them;
 * B's opens within the attribute timeout then take the size and mtime
 * they check (close-to-open) from B's cache, with no mds request. The
 * reopen test below checks that they still see every change of A's.
 */
Test(coherence, opens_under_a_lease_ask_the_mds_nothing)
{
	enum { OPENS = 40 };
	struct stat st;
	uint64_t before, asked;
	char buf[8];

	put_file(on(0, "leased"), "leased!", 7, O_EXCL);
	/* first open and read on B: its relatime atime update goes now */
	free(get_file(on(1, "leased"), &(size_t){ 0 }));
	cr_assert_eq(stat(on(1, "leased"), &st), 0);
	before = mds_ops();
	for (int i = 0; i < OPENS; i++) {
		int fd = open(on(1, "leased"), O_RDONLY);

		cr_assert(fd >= 0, "open %d on B: %s", i, strerror(errno));
		cr_assert_eq(pread(fd, buf, 7, 0), 7);
		cr_assert_eq(memcmp(buf, "leased!", 7), 0);
		cr_assert_eq(close(fd), 0);
	}
	asked = mds_ops() - before;     /* may count the status call itself */
	cr_log_info("%d opens on B within its lease: %" PRIu64 " mds requests",
		    OPENS, asked);
	/* Without leases each open asks (a getattr); the kernel may
	 * revalidate the name once if its entry timeout ran out meanwhile. */
	cr_assert_lt(asked, OPENS / 4, "%" PRIu64 " mds requests for %d opens",
		     asked, OPENS);
}

/* The mds's view of @path (libsdfs, no mount in between). */
static struct sdfs_stat mds_stat(const char *path)
{
	struct sdfs_stat st;

	cr_assert_eq(sdfs_ns_resolve(tcluster_client(tc), path, 0, &st), 0, "%s", path);
	return st;
}

/* Wait (bounded) until the mds has @path's mtime past @than. */
static struct sdfs_stat mds_mtime_past(const char *path, int64_t than)
{
	struct sdfs_stat m = mds_stat(path);

	for (int i = 0; i < SEEN_WAIT_MS / POLL_MS && m.mtime_ns <= than; i++) {
		usleep(POLL_MS * 1000);
		m = mds_stat(path);
	}
	return m;
}

/*
 * fsync and fdatasync of a rewrite inside a file (the size unchanged):
 * fdatasync asks the mds nothing (the chunk was told of once, the size
 * did not move, the mtime is not its business); fsync asks nothing per
 * call either: the first marks the mount's hold of the file (one
 * NS_OPEN with SDFS_NS_OPEN_WRITEBACK) and the mtime goes by the
 * write-back (fs/timesback.c, times_ms: one push a second, and perhaps
 * one sync after it), not with each fsync. The mtime reaches the mds
 * within about a second, and the close pushes it at once.
 */
Test(coherence, fsync_and_fdatasync_of_a_rewrite_ask_the_mds_nothing_per_call)
{
	enum { N = 20, BS = 4096 };
	char buf[BS];
	uint64_t before, dsync, fsyncs;
	struct stat st;
	int fd;

	memset(buf, 'r', sizeof(buf));
	fd = open(on(0, "rewritten"), O_CREAT | O_EXCL | O_RDWR, 0644);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	for (int i = 0; i < N; i++)
		cr_assert_eq(pwrite(fd, buf, BS, (off_t)i * BS), BS);
	cr_assert_eq(fsync(fd), 0);
	before = mds_ops();
	for (int i = 0; i < N; i++) {
		cr_assert_eq(pwrite(fd, buf, BS, (off_t)((i * 7) % N) * BS), BS);
		cr_assert_eq(fdatasync(fd), 0, "fdatasync: %s", strerror(errno));
	}
	dsync = mds_ops() - before;     /* may count the status call itself */
	int64_t m0 = mds_stat("/rewritten").mtime_ns;

	before = mds_ops();
	for (int i = 0; i < N; i++) {
		cr_assert_eq(pwrite(fd, buf, BS, (off_t)((i * 3) % N) * BS), BS);
		cr_assert_eq(fsync(fd), 0, "fsync: %s", strerror(errno));
	}
	fsyncs = mds_ops() - before;
	cr_log_info("%d rewrites: with fdatasync %" PRIu64 " mds requests, with fsync %"
		    PRIu64, N, dsync, fsyncs);
	cr_assert_lt(dsync, 3, "fdatasync of rewrites asked the mds %" PRIu64 " times",
		     dsync);
	/* the mark, the status call, a write-back push and a sync after it */
	cr_assert_leq(fsyncs, 5, "fsync of rewrites asked the mds %" PRIu64 " times for %d",
		      fsyncs, N);
	struct sdfs_stat m = mds_mtime_past("/rewritten", m0);

	cr_assert_gt(m.mtime_ns, m0, "the mtime never reached the mds");
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq((uint64_t)st.st_size, m.size);
	/* a close pushes what the write-back has not yet */
	cr_assert_eq(pwrite(fd, buf, BS, 0), BS);
	cr_assert_eq(fsync(fd), 0);
	m0 = mds_stat("/rewritten").mtime_ns;
	cr_assert_eq(close(fd), 0);
	cr_assert_gt(mds_stat("/rewritten").mtime_ns, m0, "the close did not push the mtime");
}

/*
 * Close-to-open after an fsync whose mtime the write-back still holds:
 * B has the file's pages cached from an earlier open (and a lease on
 * it), A rewrites bytes inside the file and fsyncs, keeping it open. B's
 * next open must read A's bytes although neither the size nor the mtime
 * at the mds moved yet: A's mark ended B's lease, and B's GETATTR says
 * SDFS_ATTR_F_WRITEBACK, so B drops its pages. Three rounds: the later
 * fsyncs ask the mds nothing, and B was leased the inode again
 * meanwhile, so its open asks nothing either and goes by the flag its
 * last GETATTR brought.
 */
Test(coherence, a_rewrite_fsynced_elsewhere_shows_at_the_next_open)
{
	enum { LEN = 3 * 4096 };
	char want[LEN], *got;
	size_t len;
	int fd;

	memset(want, 'a', sizeof(want));
	put_file(on(0, "rw-seen"), want, LEN, O_EXCL);
	for (int round = 0; round < 3; round++) {
		got = get_file_flags(on(1, "rw-seen"), &len, O_NOATIME); /* B caches */
		cr_assert_eq(len, (size_t)LEN);
		free(got);
		if (round == 0) {
			fd = open(on(0, "rw-seen"), O_RDWR);
			cr_assert_geq(fd, 0, "%s", strerror(errno));
		}
		memset(want + 4096, 'b' + round, 100);
		int64_t m0 = mds_stat("/rw-seen").mtime_ns, t0 = tnow_ms();

		cr_assert_eq(pwrite(fd, want + 4096, 100, 4096), 100);
		cr_assert_eq(fsync(fd), 0, "fsync: %s", strerror(errno));
		/* the case under test: the mtime stayed behind (unless the
		 * write-back came already, on a slow machine). Not in the
		 * first round: what B's first open changed (its hold, the
		 * lease) may make A report its chunk again, with the mtime.
		 * B reads O_NOATIME: a relatime update of B's is a change
		 * of the file that A would hear of, and then report its
		 * chunk again too (fs/space.c). */
		cr_assert(round == 0 || mds_stat("/rw-seen").mtime_ns == m0 ||
			  tnow_ms() - t0 > 500, "round %d: the fsync pushed the mtime", round);
		got = get_file_flags(on(1, "rw-seen"), &len, O_NOATIME);
		assert_same(got, len, want, LEN, "B after A's fsync of a rewrite");
		free(got);
	}
	cr_assert_eq(close(fd), 0);
}

/* Wait (bounded) until the mds has @path's atime past @than. */
static struct sdfs_stat mds_atime_past(const char *path, int64_t than)
{
	struct sdfs_stat m = mds_stat(path);

	for (int i = 0; i < SEEN_WAIT_MS / POLL_MS && m.atime_ns <= than; i++) {
		usleep(POLL_MS * 1000);
		m = mds_stat(path);
	}
	return m;
}

/*
 * A read on another mount does not cost the writer a push: B's reads
 * move the file's atime (relatime: the mtime is newer each round), and
 * the mds tells A, which held a lease on the file. The note says only
 * the atime moved (SDFS_NOTE_F_ATIME), so A keeps knowing that the mds
 * has its chunk, and its next fsync of a rewrite leaves the mtime to the
 * write-back as before the read. Without the flag A forgets its chunks
 * at each such note and its fsync reports the chunk again, with the
 * mtime, in a durable push.
 */
Test(coherence, a_read_elsewhere_makes_the_writer_push_nothing)
{
	enum { LEN = 3 * 4096 };
	char want[LEN], *got;
	size_t len;
	int fd;

	memset(want, 'a', sizeof(want));
	fd = open(on(0, "relat"), O_CREAT | O_EXCL | O_RDWR, 0644);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	cr_assert_eq(pwrite(fd, want, LEN, 0), LEN);
	cr_assert_eq(fsync(fd), 0, "fsync: %s", strerror(errno));
	for (int round = 0; round < 4; round++) {
		struct sdfs_stat m = mds_stat("/relat");

		/* relatime updates only an atime not newer than the mtime */
		m = mds_mtime_past("/relat", m.atime_ns);
		cr_assert_gt(m.mtime_ns, m.atime_ns, "round %d: the mtime stayed behind",
			     round);
		got = get_file(on(1, "relat"), &len);   /* B reads: atime moves */
		assert_same(got, len, want, LEN, "B's read");
		free(got);
		struct sdfs_stat a = mds_atime_past("/relat", m.atime_ns);

		cr_assert_gt(a.atime_ns, m.atime_ns, "round %d: B's read moved no atime",
			     round);
		memset(want + 4096, 'b' + round, 100);
		int64_t m0 = a.mtime_ns, t0 = tnow_ms();

		cr_assert_eq(pwrite(fd, want + 4096, 100, 4096), 100);
		cr_assert_eq(fsync(fd), 0, "fsync: %s", strerror(errno));
		/* Not in the first round: B's first open (its hold, the
		 * lease) may make A report its chunk again. */
		cr_assert(round == 0 || mds_stat("/relat").mtime_ns == m0 ||
			  tnow_ms() - t0 > 500,
			  "round %d: the fsync after B's read pushed the mtime", round);
	}
	cr_assert_eq(close(fd), 0);
	got = get_file(on(1, "relat"), &len);
	assert_same(got, len, want, LEN, "B after A's close");
	free(got);
}

/*
 * Creating, stat-ing and removing names through one mount: the kernel
 * sends a LOOKUP of the new name, the change, and (default_permissions)
 * a GETATTR of the directory whose attributes the change dropped. The
 * change's reply brings the directory's new attributes with a lease
 * (SDFS_NS_WANT_ATTRS), so the GETATTR is answered by the mount, and
 * the LOOKUP too in a directory the mount made (dnames.c; the test
 * below): 1 mds request per create + stat, rename, unlink (3, 3, 2
 * before; 2, 2, 1 when the mount does not know all of the directory's
 * names). What the mount showed must be what the mds has.
 */
Test(coherence, changes_ask_the_mds_no_getattr_of_the_directory)
{
	enum { N = 40 };
	char path[64];
	struct stat st, dst;
	uint64_t before, created, renamed, unlinked;

	cr_assert_eq(mkdir(on(0, "cd"), 0755), 0);
	cr_assert_eq(stat(on(0, "cd"), &dst), 0);
	before = mds_ops();
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "cd/f%d", i);
		cr_assert_eq(mknod(on(0, path), S_IFREG | 0644, 0), 0, "mknod %s: %s", path,
			     strerror(errno));
		cr_assert_eq(stat(on(0, path), &st), 0);
		cr_assert(S_ISREG(st.st_mode) && st.st_size == 0);
		cr_assert_eq(stat(on(0, "cd"), &dst), 0);
	}
	created = mds_ops() - before;
	struct sdfs_stat m = mds_stat("/cd");
	cr_assert_eq(dst.st_nlink, m.nlink);
	cr_assert_eq((int64_t)dst.st_mtim.tv_sec * 1000000000 + dst.st_mtim.tv_nsec,
		     m.mtime_ns, "the mount shows the directory's mtime the mds has");
	cr_assert_eq((int64_t)dst.st_ctim.tv_sec * 1000000000 + dst.st_ctim.tv_nsec,
		     m.ctime_ns);

	before = mds_ops();
	for (int i = 0; i < N; i++) {
		char to[64];

		snprintf(path, sizeof(path), "cd/f%d", i);
		snprintf(to, sizeof(to), "cd/r%d", i);
		cr_assert_eq(rename(on(0, path), on(0, to)), 0, "rename: %s", strerror(errno));
		cr_assert_eq(stat(on(0, "cd"), &dst), 0);
	}
	renamed = mds_ops() - before;
	/* every name fresh in the kernel, so that no LOOKUP revalidates one */
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "cd/r%d", i);
		cr_assert_eq(stat(on(0, path), &st), 0);
	}
	before = mds_ops();
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "cd/r%d", i);
		cr_assert_eq(unlink(on(0, path)), 0, "unlink %s: %s", path, strerror(errno));
		cr_assert_eq(stat(on(0, "cd"), &dst), 0);
	}
	unlinked = mds_ops() - before;
	m = mds_stat("/cd");
	cr_assert_eq(dst.st_nlink, m.nlink);
	cr_assert_eq((int64_t)dst.st_mtim.tv_sec * 1000000000 + dst.st_mtim.tv_nsec,
		     m.mtime_ns);
	cr_log_info("mds requests for %d files: %" PRIu64 " for mknod + stat + stat of the "
		    "directory, %" PRIu64 " for rename + stat of the directory, %" PRIu64
		    " for unlink + stat of the directory", N, created, renamed, unlinked);
	/* +2: the status calls themselves; a name whose entry ran out is
	 * looked up again now and then on a slow machine */
	cr_assert_leq(created, 2 * N + N / 2, "%" PRIu64 " for %d creates", created, N);
	cr_assert_leq(renamed, 2 * N + N / 2, "%" PRIu64 " for %d renames", renamed, N);
	cr_assert_leq(unlinked, N + N / 2, "%" PRIu64 " for %d unlinks", unlinked, N);
}

/*
 * A's changes in a directory leave A holding its attributes under a
 * lease, answered by A's mount; B's change there must still show on A
 * at once (the mds pushes A an invalidation before it acknowledges B).
 */
Test(coherence, a_directory_kept_from_own_changes_sees_others_at_once)
{
	struct stat st;

	cr_assert_eq(mkdir(on(0, "kd"), 0755), 0);
	for (int round = 0; round < 5; round++) {
		char path[64];

		snprintf(path, sizeof(path), "kd/a%d", round);
		put_file(on(0, path), "", 0, O_EXCL);
		cr_assert_eq(stat(on(0, "kd"), &st), 0);
		cr_assert_eq(st.st_nlink, 2u + (unsigned)round);
		snprintf(path, sizeof(path), "kd/sub%d", round);
		cr_assert_eq(mkdir(on(1, path), 0755), 0);       /* on B */
		cr_assert_eq(stat(on(0, "kd"), &st), 0);
		cr_assert_eq(st.st_nlink, 3u + (unsigned)round,
			     "round %d: A shows nlink %ju after B's mkdir", round,
			     (uintmax_t)st.st_nlink);
		struct sdfs_stat m = mds_stat("/kd");
		cr_assert_eq((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
			     m.mtime_ns, "round %d: A shows the mtime of B's mkdir", round);
		cr_assert_eq(chmod(on(1, "kd"), round % 2 ? 0755 : 0700), 0);
		cr_assert_eq(stat(on(0, "kd"), &st), 0);
		cr_assert_eq(st.st_mode & 07777, round % 2 ? 0755u : 0700u,
			     "round %d: A shows B's chmod", round);
	}
}

/*
 * A directory B made and changes keeps all its names on B (dnames.c),
 * so B answers lookups of missing names itself: B's create there asks
 * the mds once (no LOOKUP), and a name B found missing that A then
 * makes must show on B at once (the mds pushes B the name before it
 * acknowledges A's create; B forgets the directory's names). Also when
 * A removes one of B's names, and through a rename by A.
 */
Test(coherence, a_negative_entry_answered_by_the_mount_sees_others_create_at_once)
{
	enum { N = 20 };
	char path[64], other[64], dir[32];
	struct stat st;
	uint64_t before, asked;

	cr_assert_eq(mkdir(on(1, "nd"), 0755), 0);      /* made on B */
	before = mds_ops();
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "nd/b%d", i);
		cr_assert_eq(mknod(on(1, path), S_IFREG | 0644, 0), 0);
	}
	asked = mds_ops() - before;
	cr_log_info("%d creates on B in a directory B made: %" PRIu64 " mds requests",
		    N, asked);
	/* 2 each before: the LOOKUP of the new name, and the MKNOD */
	cr_assert_leq(asked, N + N / 2, "%" PRIu64 " mds requests for %d creates", asked, N);
	for (int round = 0; round < 5; round++) {
		snprintf(dir, sizeof(dir), "nd/r%d", round);
		cr_assert_eq(mkdir(on(1, dir), 0755), 0);
		snprintf(path, sizeof(path), "%s/b", dir);
		cr_assert_eq(mknod(on(1, path), S_IFREG | 0644, 0), 0);
		/* a miss B answers itself, cached by B's kernel */
		snprintf(path, sizeof(path), "%s/a", dir);
		before = mds_ops();
		cr_assert_eq(stat(on(1, path), &st), -1);
		cr_assert_eq(errno, ENOENT);
		cr_log_info("round %d: B's lookup of a missing name: %" PRIu64
			    " mds requests", round, mds_ops() - before - 1);
		cr_assert_eq(mknod(on(0, path), S_IFREG | 0600, 0), 0);  /* on A */
		cr_assert_eq(stat(on(1, path), &st), 0, "round %d: B does not see A's "
			     "create of %s: %s", round, path, strerror(errno));
		cr_assert_eq(st.st_mode & 0777, 0600u);

		/* A removes a name B made */
		snprintf(dir, sizeof(dir), "nd/s%d", round);
		cr_assert_eq(mkdir(on(1, dir), 0755), 0);
		snprintf(path, sizeof(path), "%s/b", dir);
		cr_assert_eq(mknod(on(1, path), S_IFREG | 0644, 0), 0);
		cr_assert_eq(unlink(on(0, path)), 0);
		cr_assert_eq(stat(on(1, path), &st), -1, "round %d: B still sees %s", round,
			     path);
		cr_assert_eq(errno, ENOENT);
		/* ...and renames one into a name B found missing */
		snprintf(other, sizeof(other), "%s/m", dir);
		snprintf(path, sizeof(path), "%s/c", dir);
		cr_assert_eq(mknod(on(1, path), S_IFREG | 0644, 0), 0);
		cr_assert_eq(stat(on(1, other), &st), -1);
		cr_assert_eq(rename(on(0, path), on(0, other)), 0);
		cr_assert_eq(stat(on(1, other), &st), 0, "round %d: B does not see A's rename "
			     "to %s", round, other);
		cr_assert_eq(stat(on(1, path), &st), -1);
		/* B's own changes there still show on B */
		cr_assert_eq(mknod(on(1, path), S_IFREG | 0644, 0), 0);
		cr_assert_eq(stat(on(1, path), &st), 0);
	}
}

/*
 * open(O_CREAT) + close through a mount: the MKNOD itself holds the new
 * file open at the mds (SDFS_NS_HOLD), and the releases that follow the
 * closes 2 s later go in one request: 1 mds request per file (3 before:
 * MKNOD, NS_OPEN hold, NS_OPEN release). And the hold is real: a file
 * created on A and unlinked by B at once stays, with A's data, while A
 * keeps it open, well past the mds's grace for strays (2 s).
 */
Test(coherence, a_create_holds_its_file_open_in_one_request)
{
	enum { N = 40 };
	char path[64], buf[16];
	uint64_t before, asked;
	int fd;

	cr_assert_eq(mkdir(on(0, "hd"), 0755), 0);
	before = mds_ops();
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "hd/c%d", i);
		fd = open(on(0, path), O_WRONLY | O_CREAT | O_EXCL, 0644);
		cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
		cr_assert_eq(close(fd), 0);
	}
	usleep(3500 * 1000);    /* the releases: HOLD_LINGER_MS and a tick */
	asked = mds_ops() - before;
	cr_log_info("%d creates + closes on A, releases included: %" PRIu64
		    " mds requests", N, asked);
	cr_assert_leq(asked, N + N / 4, "%" PRIu64 " mds requests for %d creates",
		      asked, N);

	fd = open(on(0, "hd/kept"), O_RDWR | O_CREAT | O_EXCL, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(unlink(on(1, "hd/kept")), 0, "unlink on B: %s", strerror(errno));
	cr_assert_eq(pwrite(fd, "still here", 10, 0), 10);
	usleep(3500 * 1000);    /* past the stray grace: freed unless held */
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(pread(fd, buf, 10, 0), 10, "read on A: %s", strerror(errno));
	cr_assert_str_eq(buf, "still here");
	cr_assert_eq(close(fd), 0);
}

/*
 * B holds the file open with its data in B's page cache; A overwrites,
 * appends, truncates and rewrites it; after each of A's closes a new
 * open on B reads exactly A's data, right away (well within the 1 s B
 * may keep the file's attributes).
 */
Test(coherence, reopen_sees_overwrites_appends_and_truncates)
{
	size_t len = 256 * KiB, glen;
	char *want = malloc(2 * MiB), *got;
	uint64_t seed = tseed("reopen");
	int hold, fd;

	cr_assert(want);
	tfill_random(want, len, seed);
	put_file(on(0, "r"), want, len, O_EXCL);
	hold = open(on(1, "r"), O_RDONLY);
	cr_assert(hold >= 0, "open on B: %s", strerror(errno));
	got = read_fd(hold, &glen, "B's first read");
	assert_same(got, glen, want, len, "B's first read");
	free(got);

	for (int round = 0; round < 3; round++) {
		char what[64];

		/* overwrite in the middle, same size */
		size_t off = 64 * KiB + (size_t)round * 1000, n = 100 * KiB;

		tfill_random(want + off, n, seed + 100 + (uint64_t)round);
		fd = open(on(0, "r"), O_WRONLY);
		cr_assert(fd >= 0);
		cr_assert_eq(pwrite(fd, want + off, n, (off_t)off), (ssize_t)n);
		cr_assert_eq(close(fd), 0);
		snprintf(what, sizeof(what), "round %d: B reopens after A's overwrite", round);
		got = get_file(on(1, "r"), &glen);
		assert_same(got, glen, want, len, what);
		free(got);

		/* append */
		n = 10000 + (size_t)round;
		tfill_random(want + len, n, seed + 200 + (uint64_t)round);
		put_file(on(0, "r"), want + len, n, O_APPEND);
		len += n;
		snprintf(what, sizeof(what), "round %d: B reopens after A's append", round);
		got = get_file(on(1, "r"), &glen);
		assert_same(got, glen, want, len, what);
		free(got);

		/* shrink */
		len -= 5000;
		cr_assert_eq(truncate(on(0, "r"), (off_t)len), 0);
		snprintf(what, sizeof(what), "round %d: B reopens after A's truncate", round);
		got = get_file(on(1, "r"), &glen);
		assert_same(got, glen, want, len, what);
		free(got);
	}

	/* rewritten from scratch (O_TRUNC), shorter */
	len = 3000;
	tfill_random(want, len, seed + 300);
	put_file(on(0, "r"), want, len, O_TRUNC);
	got = get_file(on(1, "r"), &glen);
	assert_same(got, glen, want, len, "B reopens after A's O_TRUNC rewrite");
	free(got);
	close(hold);
	free(want);
}

/* ---- two writers ---- */

#define BLK (64 * KiB)
#define NBLK 144                /* 9 MiB: three 4 MiB objects */
#define SHARED_FIRST 70         /* blocks both write: 70..73 */
#define SHARED_N 4
#define SHARED_ROUNDS 16

static int is_shared(unsigned b)
{
	return b >= SHARED_FIRST && b < SHARED_FIRST + SHARED_N;
}

/* Whose block @b is: 0 A (even), 1 B (odd); shared ones: -1. */
static int owner(unsigned b)
{
	return is_shared(b) ? -1 : (int)(b & 1);
}

static void fill_block(char *buf, unsigned who, unsigned b)
{
	tfill_random(buf, BLK, ((uint64_t)who << 32) ^ b ^ 0xc0ffee);
}

struct writer {
	int fd;
	unsigned who;
	int err;                /* first errno */
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char *buf = malloc(BLK);

	if (!buf) {
		w->err = ENOMEM;
		return NULL;
	}
	for (unsigned b = 0; b < NBLK && !w->err; b++) {
		if (owner(b) != (int)w->who)
			continue;
		fill_block(buf, w->who, b);
		if (pwrite(w->fd, buf, BLK, (off_t)b * BLK) != BLK)
			w->err = errno ? errno : EIO;
	}
	/* both write the shared blocks, many times, at once */
	memset(buf, w->who ? 0xbb : 0xaa, BLK);
	for (unsigned r = 0; r < SHARED_ROUNDS && !w->err; r++)
		for (unsigned b = SHARED_FIRST; b < SHARED_FIRST + SHARED_N && !w->err; b++)
			if (pwrite(w->fd, buf, BLK, (off_t)b * BLK) != BLK)
				w->err = errno ? errno : EIO;
	free(buf);
	return NULL;
}

static void check_content(const char *got, size_t len, const char *what)
{
	char *want = malloc(BLK);

	cr_assert(want);
	cr_assert_eq(len, (size_t)NBLK * BLK, "%s: %zu bytes, expected %zu (every block "
		     "of both writers)", what, len, (size_t)NBLK * BLK);
	for (unsigned b = 0; b < NBLK; b++) {
		const char *p = got + (size_t)b * BLK;

		if (is_shared(b)) {
			for (size_t i = 0; i < BLK; i++)
				cr_assert((unsigned char)p[i] == 0xaa ||
					  (unsigned char)p[i] == 0xbb,
					  "%s: shared block %u byte %zu is 0x%02x, from neither "
					  "writer", what, b, i, (unsigned char)p[i]);
			continue;
		}
		fill_block(want, (unsigned)owner(b), b);
		if (memcmp(p, want, BLK)) {
			size_t i = 0;

			while (p[i] == want[i])
				i++;
			cr_assert_fail("%s: block %u (written by %s) differs at byte %zu%s",
				       what, b, owner(b) ? "B" : "A", i,
				       p[i] == 0 ? " (zeros: the write was lost)" : "");
		}
	}
	free(want);
}

/* Every data object of the file: present on every replica, all with the
 * same size and checksum. */
static void check_replicas(const struct sdfs_stat *st, const char *what)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t chunks = (st->size + st->obj_size - 1) / st->obj_size;

	cr_assert(chunks >= 3, "%s: %" PRIu64 " objects", what, chunks);
	for (uint64_t c = 0; c < chunks; c++) {
		struct sdfs_replica r[8];
		size_t n = 0;
		int ret = sdfs_obj_locate(s, oid_make(OID_KIND_FILE, st->ino, c), r, 8, &n);

		cr_assert_eq(ret, 0, "%s: locate object %" PRIu64 ": %s", what, c,
			     strerror(-ret));
		cr_assert_eq(n, 3, "%s: object %" PRIu64 " placed on %zu nodes", what, c, n);
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(r[i].result, 0, "%s: object %" PRIu64 " on node %u: %s",
				     what, c, r[i].node_id, strerror(-r[i].result));
			cr_assert(r[i].size == r[0].size && r[i].csum == r[0].csum,
				  "%s: object %" PRIu64 " diverges: node %u has %" PRIu64
				  " bytes csum %" PRIx64 ", node %u %" PRIu64 " bytes csum %"
				  PRIx64, what, c, r[0].node_id, r[0].size, r[0].csum,
				  r[i].node_id, r[i].size, r[i].csum);
		}
	}
}

/*
 * @tail_first: B, which writes the last block, closes first; A, whose
 * own writes end one block earlier, closes last. Otherwise A first.
 */
static void two_writers(int tail_first)
{
	const char *name = tail_first ? "w_tail_first" : "w_tail_last";
	struct writer w[2] = { { .who = 0 }, { .who = 1 } };
	pthread_t th[2];
	struct sdfs_stat st;
	size_t len;
	char *got;

	put_file(on(0, name), "", 0, O_EXCL);
	w[0].fd = open(on(0, name), O_WRONLY);
	cr_assert(w[0].fd >= 0, "open on A: %s", strerror(errno));
	w[1].fd = open(on(1, name), O_WRONLY);       /* after A's close: exists */
	cr_assert(w[1].fd >= 0, "open on B: %s", strerror(errno));
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(w[0].err, 0, "A's writes: %s", strerror(w[0].err));
	cr_assert_eq(w[1].err, 0, "B's writes: %s", strerror(w[1].err));
	for (int i = 0; i < 2; i++) {
		int who = tail_first ? 1 - i : i;

		cr_assert_eq(close(w[who].fd), 0, "close on %s: %s", who ? "B" : "A",
			     strerror(errno));
	}

	got = get_file(on(0, name), &len);
	check_content(got, len, tail_first ? "read on A (B closed first)" :
		      "read on A (A closed first)");
	free(got);
	got = get_file(on(1, name), &len);
	check_content(got, len, tail_first ? "read on B (B closed first)" :
		      "read on B (A closed first)");
	free(got);

	char path[64];
	snprintf(path, sizeof(path), "/%s", name);
	int ret = sdfs_ns_resolve(tcluster_client(tc), path, 1, &st);
	cr_assert_eq(ret, 0, "resolve %s: %s", path, strerror(-ret));
	got = malloc(st.size + 1);
	cr_assert(got);
	ssize_t n = sdfs_file_pread(tcluster_client(tc), &st, got, st.size, 0);
	cr_assert(n >= 0, "sdfs_file_pread: %s", strerror((int)-n));
	check_content(got, (size_t)n, "read through libsdfs");
	free(got);
	check_replicas(&st, name);
}

Test(coherence, two_writers_tail_writer_closes_last)
{
	two_writers(0);
}

Test(coherence, two_writers_tail_writer_closes_first)
{
	two_writers(1);
}
