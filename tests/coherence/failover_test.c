/*
 * failover_test.c - caches a mount took from one active mds, and a change
 * made through the next one (docs/consistency.md, "Failover"; mds/handover.c).
 *
 * Leases live in the active's memory only. Mount B caches names and
 * attributes for 6 s (longer than a failover takes); it looks a name up
 * (a negative entry) and a file's mode through the first active. That
 * active is SIGKILLed; through the next one, mount A creates the name
 * and changes the mode. When A's calls return, B must see both on its
 * first look: the new active holds changes back until the old active's
 * clients' caches ran out (it read their longest cache time from the
 * database), and B's resubscription drops the attributes it held.
 */
#include "tests/cluster/fixture.h"
#include "tests/vol/vt.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define B_CACHE "attr_timeout=6,entry_timeout=6"
#define WAIT_MS 30000

static struct tcluster *tc;
static struct vt_mount2 mb;

static void up(void)
{
	char p[PATH_MAX];

	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .copies = 3, .mds = 2,
						      .mount = 1 });
	snprintf(p, sizeof(p), "%s/mntb", tcluster_dir(tc));
	vt_mount2_start(tc, &mb, p, B_CACHE);
}

static void down(void)
{
	vt_mount2_stop(&mb);
	tcluster_stop(tc);
}

TestSuite(failover, .init = up, .fini = down, .timeout = 180);

#define PATH_BUF (sizeof(mb.path) + 64)

static const char *at(const char *dir, const char *name)
{
	static char buf[4][PATH_BUF];
	static int next;
	char *b = buf[next++ % 4];

	snprintf(b, PATH_BUF, "%s/%s", dir, name);
	return b;
}

static const char *on_a(const char *name)
{
	return at(tcluster_mnt(tc), name);
}

static const char *on_b(const char *name)
{
	return at(mb.path, name);
}

Test(failover, a_mount_caching_longer_than_the_failover_sees_changes_made_after_it)
{
	char old[64], now[64];
	struct stat st;
	int64_t t0;
	int fd;

	fd = open(on_a("f"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	cr_assert(fd >= 0, "create on A: %s", strerror(errno));
	close(fd);
	/* B caches: f's mode, and that "g" does not exist */
	cr_assert_eq(stat(on_b("f"), &st), 0, "B: %s", strerror(errno));
	cr_assert_eq(st.st_mode & 07777, 0644);
	cr_assert_eq(stat(on_b("g"), &st), -1);
	cr_assert_eq(errno, ENOENT);

	cr_assert_eq(tcluster_active_mds(tc, old, sizeof(old)), 0);
	cr_assert_eq(tcluster_kill(tc, old), 0);
	cr_assert_eq(tcluster_wait_active_mds(tc, old, now, sizeof(now), WAIT_MS), 0,
		     "no mds took over from %s", old);
	t0 = tnow_ms();
	fd = open(on_a("g"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	cr_assert(fd >= 0, "create g on A after the failover: %s", strerror(errno));
	close(fd);
	cr_assert_eq(chmod(on_a("f"), 0600), 0, "chmod on A: %s", strerror(errno));
	cr_log_info("%s took over from %s; A's create and chmod took %" PRId64 " ms",
		    now, old, tnow_ms() - t0);

	cr_assert_eq(stat(on_b("g"), &st), 0, "B still takes g for missing after A "
		     "created it through the new active: %s", strerror(errno));
	cr_assert_eq(stat(on_b("f"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600, "B still shows mode %o after A's chmod "
		     "through the new active", st.st_mode & 07777);
}

/*
 * The mtime write-back's mark (docs/consistency.md "What fsync
 * guarantees") outlives a failover: A holds a file whose fsyncs leave
 * the mtime behind (its hold marked SDFS_NS_OPEN_WRITEBACK); the active
 * is SIGKILLed, and A's claim to the next one carries the mark. Once
 * every client claimed, B caches the file's pages; A rewrites inside it
 * and fsyncs (no mds request: the mark is there already); B's next open
 * must read A's bytes, told by the flag on its GETATTR, not by an mtime
 * that did not move.
 */
Test(failover, a_write_back_mark_is_claimed_again_by_the_next_active)
{
	enum { LEN = 3 * 4096 };
	char want[LEN], got[LEN], old[64], now[64];
	int fd, fb;

	memset(want, 'a', sizeof(want));
	fd = open(on_a("wb"), O_CREAT | O_EXCL | O_RDWR, 0644);
	cr_assert(fd >= 0, "create on A: %s", strerror(errno));
	cr_assert_eq(pwrite(fd, want, LEN, 0), LEN);
	cr_assert_eq(fsync(fd), 0);
	for (int i = 0; i < 2; i++) {  /* the second one at least is marked */
		memset(want + 4096, 'b' + i, 100);
		cr_assert_eq(pwrite(fd, want + 4096, 100, 4096), 100);
		cr_assert_eq(fsync(fd), 0, "fsync: %s", strerror(errno));
	}

	cr_assert_eq(tcluster_active_mds(tc, old, sizeof(old)), 0);
	cr_assert_eq(tcluster_kill(tc, old), 0);
	cr_assert_eq(tcluster_wait_active_mds(tc, old, now, sizeof(now), WAIT_MS), 0,
		     "no mds took over from %s", old);
	char *line = tcluster_log_line(tc, now, "every client claimed its open files",
				       WAIT_MS);

	cr_assert(line, "%s never had every client's claim", now);
	free(line);

	fb = open(on_b("wb"), O_RDONLY | O_NOATIME);    /* B caches the pages */
	cr_assert(fb >= 0, "open on B: %s", strerror(errno));
	cr_assert_eq(pread(fb, got, LEN, 0), LEN);
	close(fb);
	cr_assert_eq(memcmp(got, want, LEN), 0, "B before A's rewrite");
	memset(want + 4096, 'z', 100);
	cr_assert_eq(pwrite(fd, want + 4096, 100, 4096), 100);
	cr_assert_eq(fsync(fd), 0, "fsync after the failover: %s", strerror(errno));
	fb = open(on_b("wb"), O_RDONLY | O_NOATIME);
	cr_assert(fb >= 0, "open on B: %s", strerror(errno));
	cr_assert_eq(pread(fb, got, LEN, 0), LEN);
	close(fb);
	cr_assert_eq(memcmp(got + 4096, want + 4096, 100), 0,
		     "B kept pages from before A's fsync: the mark was not claimed");
	cr_assert_eq(close(fd), 0);
}
