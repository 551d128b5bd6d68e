/*
 * full_test.c - a block daemon whose disk fills up (docs/operations.md
 * "Space"): health says so by name (near full: a warning, full: an
 * error), a full node refuses data writes with ENOSPC, and deleting
 * files gives the space back within seconds: a write that failed with
 * ENOSPC succeeds again.
 *
 * Runs on the volume tests' cluster (vt.h: 3 blockd, copies 3, 2 mds, a
 * mount). blockd.1's data dir is moved onto a tmpfs of TMPFS_MB (stopped,
 * copied, restarted: the same node), unmounted at teardown. Files are
 * written and removed through the mount with plain syscalls; health is
 * read with `sdfs cluster status --json` and the node list (libsdfs).
 * Needs root (mount(2)); skipped without. A watchdog process unmounts
 * the tmpfs if the test process dies before its fini.
 *
 * A write refused for a full node is applied nowhere (issue 14): once
 * the map says the node is full, a data write that would go to it
 * fails with ENOSPC before any replica applies it; every replica of an
 * object a refused write was for keeps its old bytes (read on each node
 * with sdfs_obj_locate's checksum). Raw objects through libsdfs and a
 * file through the mount, both through the object's primary; then the
 * space freed, the map drops the flag and writes go through again.
 */
#include "tests/vol/vt.h"
#include "tests/cluster/tjson.h"
#include "common/coord.h"
#include "common/oid.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((uint64_t)1 << 20)
#define TMPFS_MB 128
#define FILE_MB 2
#define MAX_FILES (2 * TMPFS_MB / FILE_MB)
#define VICTIM "blockd.1"
#define FREE_WAIT_MS 60000      /* generous: the space should be back in ~2 s */

static struct tcluster *tc;
static char small_dir[PATH_MAX];
static int small_mounted;
static pid_t wd_pid;            /* unmounts the tmpfs if this process dies */
static int wd_fd = -1;

/* A process that lazily unmounts small_dir on EOF of its pipe (a test
 * killed by its timeout: no fini runs); told to exit quietly by fini. */
static void watchdog_start(void)
{
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	wd_pid = fork();
	cr_assert(wd_pid >= 0, "fork: %s", strerror(errno));
	if (wd_pid == 0) {
		char c;
		ssize_t n;

		setsid();
		close(p[1]);
		while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			umount2(small_dir, MNT_DETACH);
		_exit(0);
	}
	close(p[0]);
	wd_fd = p[1];
}

static void up(void)
{
	tc = vt_start();
}

static void down(void)
{
	tcluster_stop(tc);
	if (small_mounted && umount2(small_dir, MNT_DETACH) < 0)
		cr_log_warn("umount %s: %s", small_dir, strerror(errno));
	small_mounted = 0;
	if (wd_pid > 0) {
		if (write(wd_fd, "x", 1) != 1)
			kill(wd_pid, SIGKILL);
		close(wd_fd);
		waitpid(wd_pid, NULL, 0);
		wd_pid = 0;
	}
}

TestSuite(full, .init = up, .fini = down, .timeout = 400);

/* Put @name's data dir on a tmpfs of TMPFS_MB: stop it, copy its data
 * over, start it again (same node id, same objects). */
static void move_to_small_disk(const char *name)
{
	char disk[PATH_MAX + 16], src[PATH_MAX + 32], opts[64];
	int ret;

	snprintf(small_dir, sizeof(small_dir), "%s/%s", tcluster_dir(tc), name);
	snprintf(disk, sizeof(disk), "%s.disk", small_dir);
	snprintf(src, sizeof(src), "%s/.", disk);
	ret = tcluster_term(tc, name);
	cr_assert_eq(ret, 0, "stop %s: %s", name, strerror(-ret));
	cr_assert_eq(rename(small_dir, disk), 0, "rename %s: %s", small_dir,
		     strerror(errno));
	cr_assert_eq(mkdir(small_dir, 0700), 0, "mkdir %s: %s", small_dir, strerror(errno));
	snprintf(opts, sizeof(opts), "size=%um,mode=0700", TMPFS_MB);
	if (mount("tmpfs", small_dir, "tmpfs", 0, opts) < 0) {
		int e = errno;

		rmdir(small_dir);
		rename(disk, small_dir);
		tcluster_restart(tc, name);
		cr_skip_test("cannot mount a tmpfs (%s): needs root", strerror(e));
	}
	small_mounted = 1;
	watchdog_start();
	char *argv[] = { "/bin/cp", "-a", src, small_dir, NULL }, *out = NULL;
	ret = vt_run(argv, &out, 60000);
	cr_assert_eq(ret, 0, "cp -a %s %s: %d: %s", src, small_dir, ret, out ? out : "");
	free(out);
	ret = tcluster_restart(tc, name);
	cr_assert_eq(ret, 0, "restart %s on the tmpfs: %s", name, strerror(-ret));
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0, "healthy after the move");
	cr_log_info("%s's data dir is a %u MiB tmpfs now", name, TMPFS_MB);
}

/* Write the mount's @name, @mb MiB; 0 or the errno of the write, fsync
 * or close that failed (any but ENOSPC fails the test). */
static int write_file(const char *name, unsigned mb, uint64_t tag)
{
	char path[PATH_MAX + 64];
	uint8_t *buf = vt_alloc(MiB);
	int fd, err = 0;

	fd = open(vt_path(tc, name, path), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	for (unsigned i = 0; i < mb && !err; i++) {
		vt_fill(buf, MiB, i * MiB, tag);
		ssize_t n = pwrite(fd, buf, MiB, (off_t)(i * MiB));

		if (n < 0)
			err = errno;
		else
			cr_assert_eq(n, (ssize_t)MiB, "short write to %s", path);
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	free(buf);
	cr_assert(err == 0 || err == ENOSPC, "%s: %s (only ENOSPC may fail)", name,
		  strerror(err));
	return err;
}

static void node_of(uint32_t id, struct sdfs_node_status *st)
{
	int ret = tcluster_node_status(tc, VICTIM, st);

	cr_assert_eq(ret, 0, "node status of %s: %s", VICTIM, strerror(-ret));
	cr_assert(st->reachable, "%s answers", VICTIM);
	cr_assert_eq(st->node_id, id);
}

/* `sdfs cluster status --json`: its health word into @health, and the
 * whole output (malloc'd) returned. */
static char *status_json(char *health, size_t len)
{
	char *out = NULL;
	int st = tcluster_sdfs(tc, &out, NULL, "cluster status --json");

	cr_assert_eq(st, 0, "cluster status --json: exit %d: %s", st, out);
	cr_assert(tjson_valid(out), "status is JSON: %s", out);
	cr_assert_eq(tjson_str(out, "health", health, len, NULL), 0, "%s", out);
	return out;
}

Test(full, a_full_node_is_named_and_freed_space_is_usable_again_within_seconds)
{
	struct sdfs_node_status st;
	uint32_t id = tcluster_node_id(tc, VICTIM);
	char health[32], *out = NULL, name[32], want[64];
	int64_t v;
	unsigned files = 0, warned = 0;

	move_to_small_disk(VICTIM);
	node_of(id, &st);
	cr_assert(!st.nearfull && !st.full, "%s at %u%% to begin with", VICTIM,
		  st.used_pct);

	/* Fill it through the mount, checking health after each file. */
	for (;; files++) {
		cr_assert_lt(files, MAX_FILES, "%u MiB written and no ENOSPC yet",
			     files * FILE_MB);
		snprintf(name, sizeof(name), "fill.%u", files);
		if (write_file(name, FILE_MB, files + 1) == ENOSPC)
			break;
		node_of(id, &st);
		if (warned || !st.nearfull || st.full)
			continue;
		/* near full, not full: a warning naming it; still healthy */
		out = status_json(health, sizeof(health));
		cr_log_info("%s near full at %u%% used: health %s", VICTIM, st.used_pct,
			    health);
		cr_assert_str_eq(health, "warning", "%s", out);
		cr_assert_eq(tjson_int(out, "nearfull_node", &v, NULL), 0, "%s", out);
		cr_assert_eq(v, id);
		free(out);
		cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "cluster status"), 0);
		snprintf(want, sizeof(want), "health    warning: node %" PRIu32
			 " near full (", id);
		cr_assert(strstr(out, want), "status names the near full node: %s", out);
		free(out);
		cr_assert_eq(tcluster_wait_healthy(tc, 5), 0, "near full is healthy");
		warned = 1;
	}
	cr_assert(warned, "a near full warning before the disk was full");
	node_of(id, &st);
	cr_log_info("ENOSPC after %u files (%u MiB): %s at %u%% used, %" PRIu64
		    " bytes available, full %d, enospc %d", files, files * FILE_MB, VICTIM,
		    st.used_pct, st.avail_bytes, st.full, st.enospc);
	cr_assert(st.full, "%s full after ENOSPC (%u%% used)", VICTIM, st.used_pct);

	/* Full: an error naming the node, in JSON and in the table. */
	out = status_json(health, sizeof(health));
	cr_assert_str_eq(health, "error", "%s", out);
	cr_assert_eq(tjson_int(out, "full_node", &v, NULL), 0, "%s", out);
	cr_assert_eq(v, id);
	free(out);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "cluster status"), 0);
	snprintf(want, sizeof(want), "health    error: node %" PRIu32 " full (", id);
	cr_assert(strstr(out, want), "status names the full node: %s", out);
	free(out);
	/* wait-healthy fails as for any unhealthy state (tcluster_wait_healthy
	 * would log that as an error) */
	int rc = tcluster_sdfs(tc, &out, NULL, "cluster wait-healthy --timeout 1");
	cr_assert_eq(rc, 1, "wait-healthy with a full node: exit %d: %s", rc, out);
	free(out);
	cr_assert_eq(write_file("refused", FILE_MB, 999), ENOSPC, "still full");

	/* Delete half of what was written: it must come back, quickly. */
	uint64_t avail0 = st.avail_bytes, freed = 0;
	int64_t t0 = tnow_ms(), t_space = -1, t_write = -1;
	for (unsigned i = 0; i < files; i += 2) {
		char path[PATH_MAX + 64];

		snprintf(name, sizeof(name), "fill.%u", i);
		cr_assert_eq(unlink(vt_path(tc, name, path)), 0, "unlink %s: %s", path,
			     strerror(errno));
		freed += FILE_MB * MiB;
	}
	/* the refused file's blocks elsewhere went too */
	cr_assert_eq(unlink(vt_path(tc, "refused", (char[PATH_MAX + 64]){ 0 })), 0);
	int64_t t_unlinked = tnow_ms() - t0;
	while (tnow_ms() - t0 < FREE_WAIT_MS && (t_space < 0 || t_write < 0)) {
		if (t_space < 0) {
			node_of(id, &st);
			if (st.avail_bytes >= avail0 + freed * 9 / 10)
				t_space = tnow_ms() - t0;
		}
		if (t_write < 0 && write_file("after", FILE_MB, 1000) == 0)
			t_write = tnow_ms() - t0;
		if (t_space < 0 || t_write < 0)
			tsleep_ms(100);
	}
	node_of(id, &st);
	cr_log_info("deleted %" PRIu64 " MiB in %" PRId64 " ms; %s had %" PRIu64
		    " MiB more available after %.1f s, a write succeeded after %.1f s "
		    "(now %u%% used, %" PRIu64 " MiB more than at ENOSPC)",
		    freed / MiB, t_unlinked, VICTIM, freed * 9 / 10 / MiB, t_space / 1000.0,
		    t_write / 1000.0, st.used_pct, (st.avail_bytes - avail0) / MiB);
	printf("full_test: freed %" PRIu64 " MiB: space back on %s after %.1f s, "
	       "first write after %.1f s\n", freed / MiB, VICTIM, t_space / 1000.0,
	       t_write / 1000.0);
	cr_assert_geq(t_space, 0, "%" PRIu64 " MiB deleted, %s has only %" PRIu64
		      " MiB more available after %d s", freed / MiB, VICTIM,
		      (st.avail_bytes - avail0) / MiB, FREE_WAIT_MS / 1000);
	cr_assert_geq(t_write, 0, "a write still fails with ENOSPC %d s after "
		      "the delete", FREE_WAIT_MS / 1000);
	cr_assert(!st.full, "%s not full any more", VICTIM);

	/* What was written before the disk filled is all there. */
	uint8_t *buf = vt_alloc(FILE_MB * MiB), *want_buf = vt_alloc(FILE_MB * MiB);
	for (unsigned i = 1; i < files; i += 2) {
		snprintf(name, sizeof(name), "fill.%u", i);
		vt_read_file(tc, name, buf, FILE_MB * MiB, 0);
		vt_fill(want_buf, FILE_MB * MiB, 0, i + 1);
		vt_assert_same(buf, want_buf, FILE_MB * MiB, 0, 4 << 20, name);
	}
	vt_read_file(tc, "after", buf, FILE_MB * MiB, 0);
	vt_fill(want_buf, FILE_MB * MiB, 0, 1000);
	vt_assert_same(buf, want_buf, FILE_MB * MiB, 0, 4 << 20, "after");
	free(buf);
	free(want_buf);
}

/* Does the map in ZooKeeper say node @id is full? -1: not in the map. */
static int map_says_full(uint32_t id, uint64_t *epoch)
{
	struct coord *c = vt_coord(tc);
	struct cmap *m;
	int full = -1;

	cr_assert_eq(coord_map_get(c, 0, &m), 0);
	const struct cmap_node *nd = cmap_find(m, id);
	if (nd)
		full = nd->full;
	*epoch = m->epoch;
	cmap_free(m);
	coord_close(c);
	return full;
}

/* Poll the map until it says @full of node @id, up to @ms; the epoch
 * it did in, or 0 if it never did. */
static uint64_t wait_map_full(uint32_t id, int full, int ms)
{
	int64_t t0 = tnow_ms();
	uint64_t epoch;

	do {
		if (map_says_full(id, &epoch) == full)
			return epoch;
		tsleep_ms(100);
	} while (tnow_ms() - t0 < ms);
	return 0;
}

#define NRAW 12
#define RAW_LEN (64 * 1024)

/* Each placed replica of @oid: present, its size and checksum. */
static size_t replicas_of(uint64_t oid, struct sdfs_replica r[3])
{
	size_t n = 0;
	int ret = sdfs_obj_locate(tcluster_client(tc), oid, r, 3, &n);

	cr_assert_eq(ret, 0, "locate %016" PRIx64 ": %s", oid, strerror(-ret));
	cr_assert_eq(n, 3, "copies 3 on 3 nodes");
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(r[i].result, 0, "oid %016" PRIx64 " on node %" PRIu32 ": %s",
			     oid, r[i].node_id, strerror(-r[i].result));
	return n;
}

/* A write of @what (to @oid) failed: every replica still holds what
 * @before says it held. Counts replicas that changed into *@changed. */
static void assert_unchanged(uint64_t oid, const struct sdfs_replica before[3],
			     const char *what, unsigned *changed)
{
	struct sdfs_replica now[3];

	replicas_of(oid, now);
	for (size_t i = 0; i < 3; i++)
		for (size_t k = 0; k < 3; k++) {
			if (now[k].node_id != before[i].node_id)
				continue;
			if (now[k].csum == before[i].csum && now[k].size == before[i].size)
				continue;
			(*changed)++;
			cr_log_error("%s failed with ENOSPC, but node %" PRIu32 " applied "
				     "it (oid %016" PRIx64 " size %" PRIu64 " -> %" PRIu64
				     ", checksum changed)", what, now[k].node_id, oid,
				     before[i].size, now[k].size);
		}
}

Test(full, a_write_refused_for_a_full_node_is_applied_on_no_replica)
{
	struct sdfs *s = tcluster_client(tc);
	uint32_t id = tcluster_node_id(tc, VICTIM);
	uint8_t *old = vt_alloc(RAW_LEN), *neu = vt_alloc(RAW_LEN);
	struct sdfs_replica before[NRAW][3], fbefore[16][3];
	uint64_t oids[NRAW], epoch, ino, foids[16];
	uint32_t obj_size = sdfs_obj_size(s);
	unsigned files = 0, refused = 0, changed = 0, nf;
	char name[32], path[PATH_MAX + 64];
	int ret;

	move_to_small_disk(VICTIM);
	cr_assert_eq(map_says_full(id, &epoch), 0, "not full to begin with");

	/* Old bytes everywhere: raw objects, and a file through the mount. */
	for (unsigned i = 0; i < NRAW; i++) {
		oids[i] = oid_make(OID_KIND_RAW, 0xf011, i);
		vt_fill(old, RAW_LEN, 0, 100 + i);
		ret = sdfs_obj_put(s, oids[i], old, RAW_LEN);
		cr_assert_eq(ret, 0, "put raw %u: %s", i, strerror(-ret));
	}
	cr_assert_eq(write_file("victim", FILE_MB, 7), 0);
	ino = vt_ino(tc, "victim");
	nf = (unsigned)((FILE_MB * MiB + obj_size - 1) / obj_size);
	cr_assert(nf >= 1 && nf <= 16, "obj_size %" PRIu32, obj_size);
	for (unsigned c = 0; c < nf; c++)
		foids[c] = oid_make(OID_KIND_FILE, ino, c);

	/* Fill the node until a write fails. */
	for (;; files++) {
		cr_assert_lt(files, MAX_FILES, "%u MiB written and no ENOSPC yet",
			     files * FILE_MB);
		snprintf(name, sizeof(name), "fill.%u", files);
		if (write_file(name, FILE_MB, files + 1) == ENOSPC)
			break;
	}
	int64_t t0 = tnow_ms();
	epoch = wait_map_full(id, 1, 30000);
	cr_log_info("ENOSPC after %u files; the map says node %" PRIu32 " full in "
		    "epoch %" PRIu64 " after %.1f s", files, id, epoch,
		    (tnow_ms() - t0) / 1000.0);
	printf("full_test: map says full after %.1f s (epoch %" PRIu64 ")\n",
	       (tnow_ms() - t0) / 1000.0, epoch);

	/* Writes of data now: each refused, and applied nowhere. */
	for (unsigned i = 0; i < NRAW; i++)
		replicas_of(oids[i], before[i]);
	for (unsigned c = 0; c < nf; c++)
		replicas_of(foids[c], fbefore[c]);
	for (unsigned i = 0; i < NRAW; i++) {
		char what[64];

		vt_fill(neu, RAW_LEN, 0, 200 + i);
		if (i % 2) {
			ret = sdfs_obj_put(s, oids[i], neu, RAW_LEN / 2);
			snprintf(what, sizeof(what), "put of raw object %u", i);
		} else {
			ret = sdfs_obj_write(s, oids[i], neu, 4096, 8192);
			snprintf(what, sizeof(what), "write of raw object %u", i);
		}
		cr_assert_eq(ret, -ENOSPC, "%s: %s (a full replica)", what, strerror(-ret));
		refused++;
		assert_unchanged(oids[i], before[i], what, &changed);
	}
	int fd = open(vt_path(tc, "victim", path), O_WRONLY);
	cr_assert(fd >= 0, "open victim: %s", strerror(errno));
	uint8_t *buf = vt_alloc(MiB);
	int err = 0;
	for (unsigned i = 0; i < FILE_MB && !err; i++) {
		vt_fill(buf, MiB, i * MiB, 8);
		if (pwrite(fd, buf, MiB, (off_t)(i * MiB)) < 0)
			err = errno;
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	cr_assert_eq(err, ENOSPC, "overwrite of victim: %s", strerror(err));
	refused++;
	for (unsigned c = 0; c < nf; c++)
		assert_unchanged(foids[c], fbefore[c], "overwrite of victim", &changed);
	printf("full_test: %u writes refused with ENOSPC, %u replicas applied one "
	       "anyway\n", refused, changed);
	cr_assert_eq(changed, 0, "%u replicas applied writes refused with ENOSPC "
		     "(see the log)", changed);
	cr_assert_neq(epoch, 0, "the map never said node %" PRIu32 " full", id);

	/* Space back: the flag goes, and writes go through again. */
	for (unsigned i = 0; i < files; i++) {
		snprintf(name, sizeof(name), "fill.%u", i);
		cr_assert_eq(unlink(vt_path(tc, name, path)), 0, "unlink %s: %s", path,
			     strerror(errno));
	}
	t0 = tnow_ms();
	epoch = wait_map_full(id, 0, FREE_WAIT_MS);
	cr_assert_neq(epoch, 0, "the map still says node %" PRIu32 " full %d s "
		      "after the delete", id, FREE_WAIT_MS / 1000);
	printf("full_test: map says not full %.1f s after the delete\n",
	       (tnow_ms() - t0) / 1000.0);
	vt_fill(neu, RAW_LEN, 0, 300);
	ret = sdfs_obj_put(s, oids[0], neu, RAW_LEN);
	cr_assert_eq(ret, 0, "put after the delete: %s", strerror(-ret));
	cr_assert_eq(write_file("victim", FILE_MB, 9), 0, "overwrite after the delete");
	free(buf);
	free(old);
	free(neu);
}
