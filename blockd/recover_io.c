/*
 * recover_io.c - settling one object: is the local copy current, and if
 * not, where is a current one; fetching it. See recover.h for the rule
 * and docs/recovery.md for why it is safe.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockd/datadir.h"
#include "blockd/recover_int.h"
#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"

int64_t rec_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

pthread_mutex_t *rec_stripe(struct recover *r, uint64_t oid)
{
	return &r->stripe[(oid ^ (oid >> 17) ^ (oid >> 41)) % REC_STRIPES];
}

static size_t vbucket(uint64_t oid)
{
	oid ^= oid >> 33;
	oid *= 0xff51afd7ed558ccdull;
	oid ^= oid >> 33;
	return oid & (REC_BUCKETS - 1);
}

uint64_t rec_verified_get(struct recover *r, uint64_t oid)
{
	uint64_t e = 0;

	pthread_mutex_lock(&r->vlock);
	for (struct verified *v = r->vtab[vbucket(oid)]; v; v = v->next)
		if (v->oid == oid) {
			e = v->epoch;
			break;
		}
	pthread_mutex_unlock(&r->vlock);
	return e;
}

void rec_verified_set(struct recover *r, uint64_t oid, uint64_t epoch)
{
	struct verified **head = &r->vtab[vbucket(oid)];

	pthread_mutex_lock(&r->vlock);
	for (struct verified *v = *head; v; v = v->next)
		if (v->oid == oid) {
			if (epoch > v->epoch)
				v->epoch = epoch;
			pthread_mutex_unlock(&r->vlock);
			return;
		}
	struct verified *v = malloc(sizeof(*v));
	if (v) {        /* without memory we only lose a shortcut */
		v->oid = oid;
		v->epoch = epoch;
		v->next = *head;
		*head = v;
	}
	pthread_mutex_unlock(&r->vlock);
}

void rec_verified_clear(struct recover *r)
{
	pthread_mutex_lock(&r->vlock);
	for (size_t i = 0; i < REC_BUCKETS; i++) {
		while (r->vtab[i]) {
			struct verified *v = r->vtab[i];

			r->vtab[i] = v->next;
			free(v);
		}
	}
	pthread_mutex_unlock(&r->vlock);
}

void rec_throttle(struct recover *r, uint64_t bytes)
{
	double rate = (double)r->opts.mbps * 1e6 / 1000.0;     /* bytes per ms */

	/* Client I/O first: while requests queue on the disk workers, wait. */
	for (int i = 0; i < 25 && workq_depth(r->bd->io_q) > 0; i++)
		usleep(2000);
	for (;;) {
		int64_t now = rec_now_ms(), wait_ms;

		pthread_mutex_lock(&r->tb_lock);
		r->tb_tokens += (double)(now - r->tb_last_ms) * rate;
		if (r->tb_tokens > rate * 100)
			r->tb_tokens = rate * 100;      /* a burst of 100 ms at most */
		r->tb_last_ms = now;
		if (r->tb_tokens >= 0) {
			r->tb_tokens -= (double)bytes;  /* may go negative: pay later */
			pthread_mutex_unlock(&r->tb_lock);
			return;
		}
		wait_ms = (int64_t)(-r->tb_tokens / rate) + 1;
		pthread_mutex_unlock(&r->tb_lock);
		usleep((useconds_t)(wait_ms > 200 ? 200 : wait_ms) * 1000);
	}
}

void recover_throttle(struct recover *r, uint64_t bytes)
{
	rec_throttle(r, bytes);
}

static uint64_t next_req_id(void *arg)
{
	static atomic_uint_fast64_t id = 1;

	(void)arg;
	return atomic_fetch_add(&id, 1);
}

int rec_view_gather(struct recover *r, const struct cmap *m, uint64_t oid,
		    int csum, struct rec_view *v)
{
	struct rpc_call calls[REC_MAX_PEERS];
	struct cmap_node peers[REC_MAX_PEERS];
	size_t n = 0;
	int ret = 0;

	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < m->n && n < REC_MAX_PEERS; i++) {
		const struct cmap_node *nd = &m->nodes[i];

		if (nd->state != CMAP_UP || nd->node_id == r->self)
			continue;
		memset(&calls[n], 0, sizeof(calls[n]));
		calls[n].node = cmap_node_peer(nd, &peers[n]);  /* cluster net */
		calls[n].req.opcode = SDFS_OP_OBJ_STAT;
		calls[n].req.flags = SDFS_F_RAW;
		calls[n].req.oid = oid;
		calls[n].req.epoch = (uint32_t)m->epoch;
		calls[n].req.length = csum ? SDFS_STAT_CSUM : 0;
		n++;
	}
	rpc_run(r->pool, calls, n, r->opts.peer_timeout_ms, next_req_id, NULL);
	for (size_t i = 0; i < n; i++) {
		int res = rpc_result(&calls[i]);
		struct sdfs_obj_stat st;

		if (res == -ESTALE || res == -EAGAIN ||
		    (calls[i].ret == 0 && calls[i].reply.epoch != m->epoch)) {
			ret = -EAGAIN;  /* a peer is on another epoch: not yet */
			continue;
		}
		if (res && res != -ENOENT)
			continue;       /* did not answer: not in the view */
		v->resp_id[v->nresp] = calls[i].node->node_id;
		v->resp_full[v->nresp] = calls[i].reply.offset;
		v->resp_clean[v->nresp++] = calls[i].reply.length;
		if (res == -ENOENT)
			continue;
		if (!calls[i].rpayload || proto_obj_stat_decode(calls[i].rpayload,
				calls[i].reply.payload_len, &st))
			continue;
		int dead = st.size == SDFS_SIZE_TOMBSTONE;

		if (st.epoch == 0)
			continue;       /* an unreadable header: no copy to take */
		v->copy[v->n++] = (struct rec_copy){ calls[i].node->node_id, 1, dead,
						     st.epoch, dead ? 0 : st.size, st.csum };
	}
	rpc_calls_free(calls, n);
	return ret;
}

/* Was this node an up holder of @oid in every epoch of (@from, @to]? */
static int up_holder_throughout(struct recover *r, uint64_t oid, uint64_t from,
				uint64_t to)
{
	for (uint64_t t = from + 1; t <= to; t++) {
		const struct cmap *m;

		if (history_get(r->hist, t, &m) ||
		    !history_is_up_holder(m, oid, r->copies, r->self))
			return 0;
	}
	return 1;
}

static int responded(const struct rec_view *v, uint32_t id)
{
	for (size_t i = 0; i < v->nresp; i++)
		if (v->resp_id[i] == id)
			return 1;
	return 0;
}

int rec_fetch(struct recover *r, const struct cmap *m, uint64_t oid,
		 const struct rec_copy *c, uint64_t *bytes)
{
	const struct cmap_node *nd = cmap_find(m, c->node_id);
	struct rpc_call call = { 0 };
	struct cmap_node peer;
	int ret;

	if (!nd)
		return -ENOENT;
	if (c->deleted) {
		/* A removal is copied as a tombstone, no bytes to move. */
		*bytes = 0;
		return objstore_bury(r->bd->store, oid, c->tag);
	}
	call.node = cmap_node_peer(nd, &peer);  /* the cluster net */
	call.req.opcode = SDFS_OP_OBJ_READ;
	call.req.flags = SDFS_F_RAW;
	call.req.oid = oid;
	call.req.length = r->obj_size;
	call.req.epoch = (uint32_t)m->epoch;
	rpc_run(r->pool, &call, 1, r->opts.peer_timeout_ms, next_req_id, NULL);
	ret = rpc_result(&call);
	if (ret == 0 && call.reply.epoch != m->epoch)
		ret = -EAGAIN;
	if (ret == 0)
		ret = objstore_replace(r->bd->store, oid, call.rpayload,
				       call.reply.payload_len, c->tag);
	if (ret == 0) {
		*bytes = call.reply.payload_len;
		log_debug("oid=%016" PRIx64 ": fetched epoch %" PRIu64 " copy from "
			  "node %" PRIu32, oid, c->tag, c->node_id);
	} else {
		log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 ": fetch "
			  "from node %" PRIu32 " failed: %s", oid, c->node_id,
			  strerror(-ret));
	}
	rpc_calls_free(&call, 1);
	return ret;
}

int rec_full_forget(struct recover *r, uint64_t epoch)
{
	int ret = 0;

	pthread_mutex_lock(&r->tb_lock);
	if (atomic_load(&r->full_epoch) && atomic_load(&r->full_epoch) < epoch) {
		ret = datadir_write_u64(r->bd->dir, "full_epoch", 0);
		if (ret == 0)
			atomic_store(&r->full_epoch, 0);
	}
	pthread_mutex_unlock(&r->tb_lock);
	return ret;
}

/* The copy @id reported in @v, or NULL if it reported none. */
static const struct rec_copy *copy_of(const struct rec_view *v, uint32_t id)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->copy[i].node_id == id && v->copy[i].present)
			return &v->copy[i];
	return NULL;
}

/*
 * Up to which epoch is @id's state of @oid known to hold every change?
 * A copy (or tombstone) was settled in its clean epoch; knowing there is
 * none only counts from a full epoch (docs/recovery.md). Only if @id was
 * an up holder in that epoch; else 0.
 */
static uint64_t authority_epoch(struct recover *r, uint64_t oid, uint32_t id,
				int has_copy, uint64_t clean, uint64_t full)
{
	uint64_t e = has_copy ? clean : full;
	const struct cmap *m;

	if (!e || history_get(r->hist, e, &m) ||
	    !history_is_up_holder(m, oid, r->copies, id))
		return 0;
	return e;
}

int rec_settle_locked(struct recover *r, const struct cmap *m, uint64_t oid,
		      const struct rec_view *given, int *fetched, uint64_t *bytes)
{
	uint64_t E = m->epoch, v = rec_verified_get(r, oid);
	uint64_t lsize = 0, ltag = 0, start, a, base = 0, from;  /* tags: versions */
	uint64_t clean = atomic_load(&r->clean_epoch), full = atomic_load(&r->full_epoch);
	const struct rec_copy *best = NULL;
	struct rec_view gathered;
	const struct rec_view *view = given;
	int have, ret;

	*fetched = 0;
	*bytes = 0;
	if (v >= E)
		return 0;
	ret = objstore_head(r->bd->store, oid, &lsize, &ltag, NULL);
	if (ret && ret != -ENOENT && ret != -EBADMSG)
		return ret;
	have = ret == 0;

	/* Fast path: an up holder since its state was known current got
	 * every change since, those of that epoch too if it was one then:
	 * so that epoch counts as well. A node alive but down in the map (a
	 * reported node, one whose session expired) settles and even runs a
	 * pass in an epoch whose later writes skip it. */
	start = have && (ltag >> 32) > v ? ltag >> 32 : v;
	a = authority_epoch(r, oid, r->self, have, clean, full);
	if (a > start)
		start = a;
	if (start > 0 && up_holder_throughout(r, oid, start - 1, E)) {
		rec_verified_set(r, oid, E);
		return 0;
	}

	/* Slow path: what do the others hold? */
	if (!view) {
		ret = rec_view_gather(r, m, oid, 0, &gathered);
		if (ret)
			return ret;
		view = &gathered;
	}
	/* The newest copy anywhere. */
	uint64_t best_tag = have ? ltag : 0;
	for (size_t i = 0; i < view->n; i++)
		if (view->copy[i].present && view->copy[i].tag > best_tag) {
			best = &view->copy[i];
			best_tag = best->tag;
		}
	uint64_t best_epoch = best_tag >> 32;
	/*
	 * The authority: the node whose state is known to hold every change
	 * up to the latest epoch (base). Unless a copy newer than base
	 * exists, its state is the truth (removals included).
	 */
	uint32_t auth = 0;
	if ((a = authority_epoch(r, oid, r->self, have, clean, full)) > base) {
		base = a;
		auth = r->self;
	}
	for (size_t i = 0; i < view->nresp; i++) {
		uint32_t id = view->resp_id[i];

		a = authority_epoch(r, oid, id, copy_of(view, id) != NULL,
				    view->resp_clean[i], view->resp_full[i]);
		if (a > base) {
			base = a;
			auth = id;
		}
	}
	const struct rec_copy *want = best;     /* NULL: the local copy */
	int absent = !have && !best;
	if (auth == r->self && best_epoch <= base) {
		want = NULL;            /* what is here is the truth */
		absent = !have;
	} else if (auth && best_epoch <= base) {
		const struct rec_copy *ac = copy_of(view, auth);

		want = ac && !(have && ltag == ac->tag) ? ac : NULL;
		absent = !ac;
	}
	from = best_epoch > base ? best_epoch : base;
	/*
	 * A change after @from, in epoch t, is on every up holder of t: one
	 * of them must have answered (or be this node), or we cannot know.
	 * An epoch without up holders took no changes.
	 */
	for (uint64_t t = from + 1; t <= E; t++) {
		const struct cmap *cm;
		uint32_t ids[RING_MAX_COPIES];
		int n, seen = 0;

		ret = history_get(r->hist, t, &cm);
		if (ret)
			return ret == -ENOENT ? -ENODATA : ret;
		n = history_up_holders(cm, oid, r->copies, ids);
		for (int k = 0; k < n && !seen; k++)
			seen = ids[k] == r->self || responded(view, ids[k]);
		if (n && !seen) {
			log_info("oid=%016" PRIx64 ": no holder of epoch %" PRIu64
				 " is reachable; cannot tell if the copy here is "
				 "current", oid, t);
			return -ENODATA;
		}
	}
	if (absent && have && (ret = rec_full_forget(r, E)) != 0)
		return ret;
	if (absent && have) {
		log_info("oid=%016" PRIx64 ": copy here (version %" PRIx64 ") was "
			 "removed elsewhere; dropping it", oid, ltag);
		ret = objstore_remove(r->bd->store, oid);
		if (ret && ret != -ENOENT)
			return ret;
	} else if (want) {
		ret = rec_fetch(r, m, oid, want, bytes);
		if (ret)
			return ret == -ENOENT ? -EAGAIN : ret;
		*fetched = 1;
	}
	/* Current now; for the rest of E only if E's writes come here too. */
	if (history_is_up_holder(m, oid, r->copies, r->self))
		rec_verified_set(r, oid, E);
	return 0;
}

int rec_ensure_locked(struct recover *r, uint64_t oid, uint64_t epoch)
{
	const struct cmap *m;
	uint64_t bytes;
	int fetched, ret;

	if (rec_verified_get(r, oid) >= epoch)
		return 0;
	if (history_get(r->hist, epoch, &m))
		return -EAGAIN;
	ret = rec_settle_locked(r, m, oid, NULL, &fetched, &bytes);
	if (fetched)
		atomic_fetch_add(&r->moved, 1);
	return ret;
}

int recover_map(struct recover *r, uint64_t epoch, const struct cmap **out)
{
	return history_get(r->hist, epoch, out);
}

int recover_ensure(struct recover *r, uint64_t oid, uint64_t epoch)
{
	int ret;

	if (rec_verified_get(r, oid) >= epoch)
		return 0;
	pthread_mutex_lock(rec_stripe(r, oid));
	ret = rec_ensure_locked(r, oid, epoch);
	pthread_mutex_unlock(rec_stripe(r, oid));
	return ret;
}

/* Count a mutation of @epoch as in flight: -EAGAIN without a free slot
 * (never seen: epochs in flight at once are the installed one and the
 * few before it). With r->lock held. */
static int inflight_add(struct recover *r, uint64_t epoch)
{
	size_t fr = REC_INFLIGHT;

	for (size_t i = 0; i < REC_INFLIGHT; i++) {
		if (r->inflight[i].n && r->inflight[i].epoch == epoch) {
			r->inflight[i].n++;
			return 0;
		}
		if (!r->inflight[i].n && fr == REC_INFLIGHT)
			fr = i;
	}
	if (fr == REC_INFLIGHT)
		return -EAGAIN;
	r->inflight[fr].epoch = epoch;
	r->inflight[fr].n = 1;
	return 0;
}

static void inflight_drop(struct recover *r, uint64_t epoch)
{
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < REC_INFLIGHT; i++)
		if (r->inflight[i].n && r->inflight[i].epoch == epoch) {
			if (--r->inflight[i].n == 0)
				pthread_cond_broadcast(&r->quiet);
			break;
		}
	pthread_mutex_unlock(&r->lock);
}

/* Is a mutation of an epoch before @epoch in flight? With r->lock held. */
static int inflight_before(const struct recover *r, uint64_t epoch)
{
	for (size_t i = 0; i < REC_INFLIGHT; i++)
		if (r->inflight[i].n && r->inflight[i].epoch < epoch)
			return 1;
	return 0;
}

int recover_mutate_begin(struct recover *r, uint64_t oid, uint64_t epoch, int settle)
{
	uint64_t cur;
	int ret = 0;

	pthread_mutex_lock(rec_stripe(r, oid));
	pthread_mutex_lock(&r->lock);
	cur = r->cur_epoch;
	pthread_mutex_unlock(&r->lock);
	/* Checked again here, not only when the request was queued: once a
	 * newer map is installed, peers may already have listed this node. */
	if (cur > epoch)
		ret = -ESTALE;
	else if (settle)
		ret = rec_ensure_locked(r, oid, epoch);
	/*
	 * And once more after the settle (which talks to peers and may take
	 * a while), counting the mutation as in flight from this check to
	 * its end: a peer's listing for a newer epoch waits for it
	 * (recover_quiesce), so the change is on that list or refused here.
	 */
	if (ret == 0) {
		pthread_mutex_lock(&r->lock);
		ret = r->cur_epoch > epoch ? -ESTALE : inflight_add(r, epoch);
		pthread_mutex_unlock(&r->lock);
	}
	if (ret)
		pthread_mutex_unlock(rec_stripe(r, oid));
	return ret;
}

void recover_mutate_end(struct recover *r, uint64_t oid, uint64_t epoch, int current)
{
	if (current)
		rec_verified_set(r, oid, epoch);
	inflight_drop(r, epoch);
	pthread_mutex_unlock(rec_stripe(r, oid));
}

int recover_quiesce(struct recover *r, uint64_t epoch, int timeout_ms)
{
	int64_t end = rec_now_ms() + timeout_ms;
	int ret = 0;

	pthread_mutex_lock(&r->lock);
	while (r->cur_epoch < epoch || inflight_before(r, epoch)) {
		struct timespec ts;

		if (r->stop || rec_now_ms() >= end) {
			ret = -EAGAIN;
			break;
		}
		net_time_in(CLOCK_REALTIME, 50, &ts);
		pthread_cond_timedwait(&r->quiet, &r->lock, &ts);
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

void recover_note_current(struct recover *r, uint64_t oid, uint64_t epoch)
{
	rec_verified_set(r, oid, epoch);
}
