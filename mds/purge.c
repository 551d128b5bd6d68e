/*
 * purge.c - the background thread that frees data: objects of files
 * whose last link went ('O' records, written in the unlink's batch), and
 * reply records past their age. Also purge_data, the truncate helper.
 * A volume file's data is not in FILE objects: its states are handed to
 * the volume reclaim instead (vol_file_gone).
 *
 * An orphan ("stray") some client holds open (mds/opens.h) waits for
 * its last close: its data and inode stay usable by inode number.
 *
 * Freeing is idempotent (removing a missing object is fine), so a crash
 * halfway simply redoes it at the next active.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"
#include "common/oid.h"
#include "common/policy.h"
#include "mds/ns_int.h"
#include "mds/opens.h"
#include "mds/vol.h"

#define PURGE_PERIOD_MS  1000   /* at most this long between rounds */
#define PURGE_MIN_WAIT_MS 10
#define PURGE_BATCH      64     /* orphans freed per round */
#define REPLY_MAX_AGE_MS (10 * 60 * 1000)
#define SWEEP_PERIOD_MS  (60 * 1000)

int purge_data(struct ns *ns, uint64_t ino, uint32_t obj_size, unsigned copies,
	       uint64_t old_size, uint64_t new_size)
{
	uint64_t first_whole, last;
	int ret;

	if (obj_size == 0 || new_size >= old_size)
		return 0;
	last = (old_size - 1) / obj_size;
	first_whole = (new_size + obj_size - 1) / obj_size;
	/* an EC file's stripes past it (ecfile.c; of a sealed file the
	 * chunks themselves, else garbage a crash may have left) */
	ret = ecfile_drop(ns, ino, copies, first_whole, last + 1);
	if (ret)
		return ret;
	/* the partial chunk's tail reads as zeros from now on (a sealed
	 * file is unsealed before a cut inside a chunk: ns_ops.c) */
	if (new_size % obj_size && !policy_is_sealed(copies)) {
		uint64_t chunk = new_size / obj_size, off = new_size % obj_size;
		uint64_t oid = oid_file(ino, chunk, copies);
		struct sdfs_obj_info info;

		ret = sdfs_obj_stat(ns->sdfs, oid, &info);
		if (ret == 0 && info.size > off) {
			size_t len = (size_t)(info.size - off);
			void *zero = calloc(1, len);

			if (!zero)
				return -ENOMEM;
			ret = sdfs_obj_write(ns->sdfs, oid, zero, len, off);
			free(zero);
		}
		if (ret && ret != -ENOENT)
			return ret;
	}
	for (uint64_t c = first_whole; c <= last; c++) {
		ret = sdfs_obj_remove(ns->sdfs, oid_file(ino, c, copies));
		if (ret && ret != -ENOENT)
			return ret;
	}
	return 0;
}

/* Delete what is left of an orphan: inode, symlink target, xattrs and
 * the orphan record, in one batch. */
static int drop_records(struct ns *ns, uint64_t ino)
{
	struct kvbatch *b = kvbatch_new();
	struct kviter *it = kvdb_iter(ns->db);
	uint8_t k[16], pfx[9];
	int ret;

	if (!b || !it) {
		kvbatch_free(b);
		kviter_free(it);
		return -ENOMEM;
	}
	kvbatch_del(b, k, key_inode(k, ino));
	kvbatch_del(b, k, key_link(k, ino));
	key_xattr(pfx, ino, "", 0);
	batch_del_prefix(it, b, pfx, 9);
	space_drop(it, b, ino);
	kviter_free(it);
	kvbatch_del(b, k, key_orphan(k, ino));
	ret = ns_commit(ns, b);
	kvbatch_free(b);
	return ret;
}

/*
 * Free up to PURGE_BATCH orphans whose grace passed and that no client
 * holds. Returns how many it freed (PURGE_BATCH: maybe more are due; an
 * orphan whose data could not be freed waits for the next round), and
 * in *@next_ms the ns_now ms at which the next one's grace ends (0:
 * none waiting).
 */
static int purge_orphans(struct ns *ns, int64_t *next_ms)
{
	int64_t now = ns_now() / 1000000;
	struct kviter *it = kvdb_iter(ns->db);
	uint64_t inos[PURGE_BATCH], sizes[PURGE_BATCH];
	uint32_t osz[PURGE_BATCH];
	int n = 0, freed = 0;

	*next_ms = 0;
	if (!it)
		return 0;
	for (kviter_seek(it, "O", 1); kviter_valid(it) && n < PURGE_BATCH;
	     kviter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)kviter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)kviter_value(it, &vlen);

		if (k[0] != 'O' || klen != 9)
			break;
		if (vlen != ORPHAN_REC_SIZE)
			continue;
		int64_t due = (int64_t)le64_get(v + 12) + ORPHAN_GRACE_MS;
		if (now < due) {
			if (!*next_ms || due < *next_ms)
				*next_ms = due;
			continue;
		}
		if (opens_held(ns, be64_get(k + 1)))
			continue;
		inos[n] = be64_get(k + 1);
		sizes[n] = le64_get(v);
		osz[n] = le32_get(v + 8);
		n++;
	}
	kviter_free(it);
	/* It frees data for what it read: only settled records (commit.c). */
	if (n && ns_settle(ns))
		return 0;
	for (int i = 0; i < n; i++) {
		struct inode in;

		/* re-linked meanwhile? (a hidden open file renamed back) */
		int have = inode_get(ns, inos[i], &in) == 0;

		if (have && S_ISREG(in.a.mode) && in.a.size > sizes[i])
			sizes[i] = in.a.size;   /* written after the unlink */
		if (opens_held(ns, inos[i]))
			continue;       /* opened again meanwhile (by number) */
		if (have && in.a.nlink > 0) {
			struct kvbatch *b = kvbatch_new();
			uint8_t k[16];

			if (!b)
				return 0;
			kvbatch_del(b, k, key_orphan(k, inos[i]));
			ns_commit(ns, b);
			kvbatch_free(b);
			continue;
		}
		if (have && in.a.layout == SDFS_LAYOUT_VOL) {
			/* its data is a volume's: the states go to reclaim */
			if (vol_file_gone(ns, inos[i], sizes[i]))
				continue;       /* next round */
		} else if (purge_data(ns, inos[i], osz[i], have ? in.a.copies : 0,
				      sizes[i], 0)) {
			continue;       /* next round */
		}
		if (drop_records(ns, inos[i]))
			return 0;
		atomic_fetch_sub(&ns->inodes, 1);
		freed++;
		log_debug("freed inode %" PRIu64 " (%" PRIu64 " bytes of data)",
			  inos[i], sizes[i]);
	}
	return freed;
}

uint64_t purge_count_strays(struct ns *ns)
{
	struct kviter *it = kvdb_iter(ns->db);
	uint64_t n = 0;

	if (!it)
		return 0;
	for (kviter_seek(it, "O", 1); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const char *k = kviter_key(it, &klen);

		if (k[0] != 'O' || klen != 9)
			break;
		n += opens_has_holder(ns, be64_get((const uint8_t *)k + 1));
	}
	kviter_free(it);
	return n;
}

static void *purge_main(void *arg)
{
	struct ns *ns = arg;
	int64_t last_sweep = 0;

	pthread_mutex_lock(&ns->purge_lock);
	while (!ns->purge_stop) {
		int64_t wait_ms = PURGE_PERIOD_MS;
		struct timespec dl;

		pthread_mutex_unlock(&ns->purge_lock);
		if (!ns_failed(ns)) {
			int64_t now = ns_now() / 1000000, next = 0;

			opens_sweep(ns);
			/* A full batch freed: more may be due, go on at once.
			 * Else wake when the next grace ends (freed space is
			 * usable about ORPHAN_GRACE_MS after an unlink). */
			if (purge_orphans(ns, &next) == PURGE_BATCH)
				wait_ms = 0;
			else if (next && next - now < wait_ms)
				wait_ms = next - now > PURGE_MIN_WAIT_MS ? next - now
									 : PURGE_MIN_WAIT_MS;
			if (now - last_sweep > SWEEP_PERIOD_MS) {
				replycache_sweep(ns, REPLY_MAX_AGE_MS);
				last_sweep = now;
			}
		}
		pthread_mutex_lock(&ns->purge_lock);
		if (wait_ms == 0 || ns->purge_stop)
			continue;
		net_time_in(CLOCK_REALTIME, wait_ms, &dl);
		pthread_cond_timedwait(&ns->purge_cond, &ns->purge_lock, &dl);
	}
	pthread_mutex_unlock(&ns->purge_lock);
	return NULL;
}

int purge_start(struct ns *ns)
{
	int ret = pthread_create(&ns->purge_thread, NULL, purge_main, ns);

	if (ret)
		return -ret;
	ns->purge_started = 1;
	return 0;
}

void purge_stop(struct ns *ns)
{
	if (!ns->purge_started)
		return;
	pthread_mutex_lock(&ns->purge_lock);
	ns->purge_stop = 1;
	pthread_cond_broadcast(&ns->purge_cond);
	pthread_mutex_unlock(&ns->purge_lock);
	pthread_join(ns->purge_thread, NULL);
	ns->purge_started = 0;
}
