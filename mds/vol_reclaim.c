/*
 * vol_reclaim.c - freeing the data of deleted volume states: mark and
 * sweep per family (docs/volumes.md, "Reclaim"), on a thread of its own,
 * every VOL_RECLAIM_MS (sdfs.conf reclaim_interval_s: vol_reclaim_interval)
 * and at once after a delete (vol_reclaim_kick).
 *
 * Mark, under the family lock: the chunks of each deleted state D that
 * an existing (not deleted) member's index names as owned by D. Sweep,
 * without it: remove every other object of D (absent is fine), then
 * drop a D none of whose objects was marked (its index, fence and
 * records). A member made after the mark copies an existing member's
 * index, so it cannot name an object the sweep removes; a live writer
 * only ever names its own vid. Never frees a marked object; a member
 * index that cannot be read aborts the family's pass.
 *
 * The first sweep of a D by this mds covers every chunk below its size
 * (objects a crash left unreferenced too); later ones only the chunks
 * D's own index names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/coord_vol.h"
#include "common/log.h"
#include "common/oid.h"
#include "common/policy.h"
#include "common/volidx.h"
#include "mds/ns_int.h"
#include "mds/vol.h"

#define SWEEP_BATCH 256         /* removals handed to libsdfs at once */

struct dstate {
	struct vol_rec r;
	uint8_t *idx;                   /* its own index */
	size_t idx_len;
	uint8_t *marked;                /* bitmap of referenced chunks */
	uint64_t nbits;
	int keep;
};

/* Swept once by this mds (single reclaim thread: no lock). */
static int swept_before(struct vol *v, uint64_t vid);
static void swept_add(struct vol *v, uint64_t vid);

struct swept {
	uint64_t *vids;
	size_t n, cap;
};
static struct swept swept;      /* one reclaim thread per process */

static int swept_before(struct vol *v, uint64_t vid)
{
	(void)v;
	for (size_t i = 0; i < swept.n; i++)
		if (swept.vids[i] == vid)
			return 1;
	return 0;
}

static void swept_add(struct vol *v, uint64_t vid)
{
	(void)v;
	if (swept_before(v, vid))
		return;
	if (swept.n == swept.cap) {
		size_t cap = swept.cap ? swept.cap * 2 : 64;
		uint64_t *n = realloc(swept.vids, cap * sizeof(*n));

		if (!n)
			return;
		swept.vids = n;
		swept.cap = cap;
	}
	swept.vids[swept.n++] = vid;
}

static struct dstate *find_d(struct dstate *d, size_t n, uint64_t vid)
{
	for (size_t i = 0; i < n; i++)
		if (d[i].r.vid == vid)
			return &d[i];
	return NULL;
}

/* Mark: under the family lock. */
static int mark(struct ns *ns, uint64_t fam, struct dstate **out, size_t *nout,
		size_t *members)
{
	struct dstate *d = NULL;
	struct vol_rec *live = NULL;
	uint64_t *vids = NULL;
	size_t n = 0, nd = 0, nl = 0;
	int ret;

	ret = vol_roll_forward(ns, fam);
	if (!ret)
		ret = vol_members_of(ns, fam, &vids, &n);
	if (ret)
		return ret;
	d = calloc(n ? n : 1, sizeof(*d));
	live = calloc(n ? n : 1, sizeof(*live));
	if (!d || !live) {
		ret = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		struct vol_rec r;

		ret = vol_rec_get(ns, vids[i], &r);
		if (ret == -ENOENT)
			continue;
		if (ret)
			goto fail;
		if (r.state == SDFS_VS_DELETED)
			d[nd++].r = r;
		else
			live[nl++] = r;
	}
	for (size_t i = 0; i < nd; i++) {
		uint64_t bits = VOLIDX_MAX_CHUNKS(d[i].r.obj_size);

		if (bits > OID_CHUNK_MAX + 1)
			bits = OID_CHUNK_MAX + 1;
		d[i].nbits = bits;
		d[i].marked = calloc((bits + 7) / 8, 1);
		if (!d[i].marked) {
			ret = -ENOMEM;
			goto fail;
		}
		ret = vol_index_read(ns, &d[i].r, &d[i].idx, &d[i].idx_len);
		if (ret)
			goto fail;
	}
	for (size_t i = 0; i < nl && nd; i++) {
		uint8_t *idx;
		size_t len;

		ret = vol_index_read(ns, &live[i], &idx, &len);
		if (ret)
			goto fail;      /* never sweep without every reference */
		for (size_t off = VOLIDX_HDR_SIZE; off + VOLIDX_ENTRY_SIZE <= len;
		     off += VOLIDX_ENTRY_SIZE) {
			uint64_t chunk = (off - VOLIDX_HDR_SIZE) / VOLIDX_ENTRY_SIZE;
			uint32_t owner = volidx_owner(volidx_entry_get(idx + off),
						      policy_is_ec(live[i].copies));
			struct dstate *x = owner ? find_d(d, nd, owner) : NULL;

			if (x && chunk < x->nbits)
				x->marked[chunk / 8] |= (uint8_t)(1u << (chunk % 8));
		}
		free(idx);
	}
	free(vids);
	free(live);
	*out = d;
	*nout = nd;
	*members = n;
	return 0;
fail:
	for (size_t i = 0; d && i < nd; i++) {
		free(d[i].idx);
		free(d[i].marked);
	}
	free(d);
	free(live);
	free(vids);
	return ret;
}

static int is_marked(const struct dstate *x, uint64_t chunk)
{
	return chunk < x->nbits && (x->marked[chunk / 8] >> (chunk % 8) & 1);
}

/* The owner D's own index names for @chunk (sealed or not). */
static uint32_t own_entry(const struct dstate *x, uint64_t chunk)
{
	uint64_t off = VOLIDX_ENTRY_OFF(chunk);

	return off + VOLIDX_ENTRY_SIZE <= x->idx_len ?
	       volidx_owner(volidx_entry_get(x->idx + off), policy_is_ec(x->r.copies)) : 0;
}

/*
 * An EC volume's D: the stripe of chunk @chunk, if D's index names it as
 * its own (sealed, or replicated: a writer that crashed between its
 * sdfs_ec_put and the index update left a stripe behind). 0 or a
 * failure (counted in *@left). A holder that is down gets the tombstone
 * from strip recovery when it is back (docs/ec.md "Removing").
 */
static void sweep_stripe(struct ns *ns, struct dstate *x, uint64_t chunk, uint64_t *left)
{
	unsigned p = x->r.copies;
	int ret;

	if (!policy_is_ec(p) || own_entry(x, chunk) != x->r.vid)
		return;
	ret = sdfs_ec_remove(ns->sdfs, oid_vstripe(x->r.vid, chunk), policy_ec_k(p),
			     policy_ec_m(p));
	if (ret && ret != -ENOENT) {
		log_warn("vid=%" PRIu64 " chunk=%" PRIu64 ": cannot remove its stripe: %s",
			 x->r.vid, chunk, strerror(-ret));
		x->keep = 1;
		(*left)++;
	}
}

/* What a pass still has to free (shown by `sdfs cluster status`): the
 * objects a family's deleted states own that its mark found unreferenced,
 * added before its sweep and taken off as they go. */
static void pending_add(struct vol *v, uint64_t objs, uint64_t obj_size)
{
	atomic_fetch_add(&v->stats.objects_pending, objs);
	atomic_fetch_add(&v->stats.bytes_pending, objs * obj_size);
}

static void pending_sub(struct vol *v, uint64_t obj_size)
{
	if (atomic_load(&v->stats.objects_pending) > 0) {
		atomic_fetch_sub(&v->stats.objects_pending, 1);
		atomic_fetch_sub(&v->stats.bytes_pending, obj_size);
	}
}

static uint64_t to_free(const struct dstate *x)
{
	uint64_t n = 0, chunks = x->idx_len > VOLIDX_HDR_SIZE ?
		(x->idx_len - VOLIDX_HDR_SIZE) / VOLIDX_ENTRY_SIZE : 0;

	for (uint64_t i = 0; i < chunks; i++)
		n += own_entry(x, i) == x->r.vid && !is_marked(x, i);
	return n;
}

/* Remove chunks @chunk[0..n) of @x (their objects @oids) in one go and
 * count the outcomes; failures add to *@left. */
static void sweep_batch(struct ns *ns, struct dstate *x, const uint64_t *chunk,
			const uint64_t *oids, size_t n, uint64_t *left)
{
	struct vol *v = ns->vol;
	int res[SWEEP_BATCH];

	if (!n)
		return;
	sdfs_obj_remove_many_tok(ns->sdfs, oids, n, SDFS_TOKEN_FROZEN, res);
	for (size_t k = 0; k < n; k++) {
		if (res[k] == 0) {
			atomic_fetch_add(&v->stats.objects_freed, 1);
			atomic_fetch_add(&v->stats.bytes_freed, x->r.obj_size);
			if (own_entry(x, chunk[k]) == x->r.vid)
				pending_sub(v, x->r.obj_size);
		} else if (res[k] != -ENOENT) {
			log_warn("vid=%" PRIu64 " chunk=%" PRIu64 ": cannot free: %s",
				 x->r.vid, chunk[k], strerror(-res[k]));
			x->keep = 1;
			(*left)++;
		}
	}
}

/* Sweep one deleted state; returns objects left to free (failures).
 * The removals go out SWEEP_BATCH at a time (sdfs_obj_remove_many_tok:
 * the replicas of many objects in one round trip). */
static uint64_t sweep_one(struct ns *ns, struct dstate *x)
{
	struct vol *v = ns->vol;
	uint64_t limit = vol_chunks(x->r.size, x->r.obj_size), left = 0;
	uint64_t idx_chunks = x->idx_len > VOLIDX_HDR_SIZE ?
		(x->idx_len - VOLIDX_HDR_SIZE) / VOLIDX_ENTRY_SIZE : 0;
	int full = !swept_before(v, x->r.vid);
	uint64_t chunk[SWEEP_BATCH], oids[SWEEP_BATCH];
	size_t n = 0;

	if (idx_chunks > limit)
		limit = idx_chunks;
	if (limit > x->nbits)
		limit = x->nbits;
	/* Objects of other states may still read through D's (backed, their
	 * copy-on-write not filled yet): every node fills them first, and
	 * with a node down nothing of D's is freed this pass. */
	if (limit) {
		int ret = sdfs_vol_fill(ns->sdfs, x->r.vid);

		if (ret) {
			log_info("vid=%" PRIu64 ": reclaim deferred: objects backed by its "
				 "data are not all filled (%s); tried again next pass",
				 x->r.vid, strerror(-ret));
			x->keep = 1;
			return to_free(x) ? to_free(x) : 1;
		}
	}
	for (uint64_t i = 0; i < limit; i++) {
		if (is_marked(x, i)) {
			x->keep = 1;
			continue;
		}
		if (!full && own_entry(x, i) != x->r.vid)
			continue;
		sweep_stripe(ns, x, i, &left);
		chunk[n] = i;
		oids[n++] = oid_vdata(x->r.vid, i, x->r.copies);
		if (n == SWEEP_BATCH) {
			sweep_batch(ns, x, chunk, oids, n, &left);
			n = 0;
		}
	}
	sweep_batch(ns, x, chunk, oids, n, &left);
	if (!left)
		swept_add(v, x->r.vid);
	return left;
}

/* Drop the unreferenced deleted states; the family lock is held. */
static int drop(struct ns *ns, uint64_t fam, struct dstate *d, size_t nd)
{
	struct kvbatch *b = kvbatch_new();
	uint8_t k[32];
	size_t kept = 0;
	uint64_t *vids = NULL;
	size_t n = 0;
	int ret;

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < nd; i++) {
		struct dstate *x = &d[i];

		if (x->keep) {
			kept++;
			continue;
		}
		ret = sdfs_obj_remove_tok(ns->sdfs, oid_vindex(x->r.vid, x->r.copies),
					  SDFS_TOKEN_FROZEN);
		if (ret == 0 || ret == -ENOENT)
			ret = coord_vol_fence_delete(ns->vol->coord, x->r.vid);
		if (ret) {
			log_warn("vid=%" PRIu64 ": cannot drop: %s", x->r.vid, strerror(-ret));
			x->keep = 1;
			kept++;
			continue;
		}
		kvbatch_del(b, k, vol_key_rec(k, x->r.vid));
		kvbatch_del(b, k, vol_key_member(k, fam, x->r.vid));
		log_debug("vid=%" PRIu64 ": reclaimed", x->r.vid);
	}
	/* Deleted states made since the mark keep the family marked. */
	ret = vol_members_of(ns, fam, &vids, &n);
	if (ret) {
		kvbatch_free(b);
		return ret;
	}
	for (size_t i = 0; i < n; i++) {
		struct vol_rec r;

		if (vol_rec_get(ns, vids[i], &r) == 0 && r.state == SDFS_VS_DELETED &&
		    !find_d(d, nd, r.vid))
			kept++;
	}
	free(vids);
	if (!kept)
		kvbatch_del(b, k, vol_key_deleted(k, fam));
	ret = ns_commit(ns, b);
	kvbatch_free(b);
	return ret;
}

static int reclaim_family(struct ns *ns, uint64_t fam, uint64_t *pending)
{
	struct dstate *d = NULL;
	size_t nd = 0, members = 0;
	int ret;

	vol_fam_lock(ns, fam);
	ret = mark(ns, fam, &d, &nd, &members);
	vol_fam_unlock(ns, fam);
	/* It frees objects for what it read: only settled states (commit.c). */
	if (!ret && (ret = ns_settle(ns)) != 0) {
		free(d);
		return ret;
	}
	if (ret) {
		log_warn("family=%" PRIu64 ": reclaim skipped: %s", fam, strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < nd; i++)
		pending_add(ns->vol, to_free(&d[i]), d[i].r.obj_size);
	for (size_t i = 0; i < nd; i++)
		*pending += sweep_one(ns, &d[i]);
	vol_fam_lock(ns, fam);
	ret = drop(ns, fam, d, nd);
	vol_fam_unlock(ns, fam);
	for (size_t i = 0; i < nd; i++) {
		free(d[i].idx);
		free(d[i].marked);
	}
	free(d);
	atomic_fetch_add(&ns->vol->stats.sweeps, 1);
	return ret;
}

void vol_reclaim_pass(struct ns *ns)
{
	struct kviter *it;
	uint64_t *fams = NULL, pending = 0;
	size_t n = 0, cap = 0;

	vol_roll_forward(ns, 0);
	it = kvdb_iter(ns->db);
	if (!it)
		return;
	for (kviter_seek(it, "G", 1); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const uint8_t *k = (const uint8_t *)kviter_key(it, &klen);

		if (k[0] != 'G')
			break;
		if (klen != 9)
			continue;
		if (n == cap) {
			uint64_t *x;

			cap = cap ? cap * 2 : 16;
			x = realloc(fams, cap * sizeof(*x));
			if (!x)
				break;
			fams = x;
		}
		fams[n++] = be64_get(k + 1);
	}
	kviter_free(it);
	atomic_store(&ns->vol->stats.objects_pending, 0);
	atomic_store(&ns->vol->stats.bytes_pending, 0);
	for (size_t i = 0; i < n && !ns_failed(ns); i++)
		reclaim_family(ns, fams[i], &pending);
	free(fams);
	atomic_store(&ns->vol->stats.objects_pending, pending);
	atomic_store(&ns->vol->stats.bytes_pending, pending * ns->obj_size);
}

int vol_reclaim_stats(struct ns *ns, struct sdfs_ns_reclaim *out)
{
	struct vol *v = ns->vol;
	struct kviter *it = kvdb_iter(ns->db);
	uint64_t deleted = 0;

	memset(out, 0, sizeof(*out));
	if (it) {
		for (kviter_seek(it, "G", 1); kviter_valid(it); kviter_next(it)) {
			size_t klen;
			const uint8_t *k = (const uint8_t *)kviter_key(it, &klen);
			uint64_t *vids = NULL;
			size_t n = 0;

			if (k[0] != 'G')
				break;
			if (klen != 9 || vol_members_of(ns, be64_get(k + 1), &vids, &n))
				continue;
			for (size_t i = 0; i < n; i++) {
				struct vol_rec r;

				if (vol_rec_get(ns, vids[i], &r) == 0 &&
				    r.state == SDFS_VS_DELETED)
					deleted++;
			}
			free(vids);
		}
		kviter_free(it);
	}
	out->vids_pending = deleted;
	out->objects_pending = atomic_load(&v->stats.objects_pending);
	out->bytes_pending = atomic_load(&v->stats.bytes_pending);
	out->objects_freed = atomic_load(&v->stats.objects_freed);
	out->bytes_freed = atomic_load(&v->stats.bytes_freed);
	out->sweeps = atomic_load(&v->stats.sweeps);
	return 0;
}

static void *reclaim_main(void *arg)
{
	struct ns *ns = arg;
	struct vol *v = ns->vol;

	pthread_mutex_lock(&v->reclaim_lock);
	while (!v->reclaim_stop) {
		struct timespec dl;

		v->reclaim_kick = 0;
		pthread_mutex_unlock(&v->reclaim_lock);
		if (!ns_failed(ns))
			vol_reclaim_pass(ns);
		pthread_mutex_lock(&v->reclaim_lock);
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += v->reclaim_ms / 1000;
		dl.tv_nsec += (long)(v->reclaim_ms % 1000) * 1000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
		while (!v->reclaim_stop && !v->reclaim_kick)
			if (pthread_cond_timedwait(&v->reclaim_cond, &v->reclaim_lock, &dl))
				break;
	}
	pthread_mutex_unlock(&v->reclaim_lock);
	return NULL;
}

void vol_reclaim_interval(struct ns *ns, int ms)
{
	struct vol *v = ns->vol;

	if (!v || ms <= 0)
		return;
	pthread_mutex_lock(&v->reclaim_lock);
	v->reclaim_ms = ms;
	pthread_cond_broadcast(&v->reclaim_cond);
	pthread_mutex_unlock(&v->reclaim_lock);
}

void vol_reclaim_kick(struct ns *ns)
{
	struct vol *v = ns->vol;

	pthread_mutex_lock(&v->reclaim_lock);
	v->reclaim_kick = 1;
	pthread_cond_broadcast(&v->reclaim_cond);
	pthread_mutex_unlock(&v->reclaim_lock);
}

int vol_reclaim_start(struct ns *ns)
{
	struct vol *v = ns->vol;
	int ret = pthread_create(&v->reclaim_thread, NULL, reclaim_main, ns);

	if (ret)
		return -ret;
	v->reclaim_started = 1;
	return 0;
}

void vol_reclaim_stop(struct ns *ns)
{
	struct vol *v = ns->vol;

	if (!v->reclaim_started)
		return;
	pthread_mutex_lock(&v->reclaim_lock);
	v->reclaim_stop = 1;
	pthread_cond_broadcast(&v->reclaim_cond);
	pthread_mutex_unlock(&v->reclaim_lock);
	pthread_join(v->reclaim_thread, NULL);
	v->reclaim_started = 0;
}
