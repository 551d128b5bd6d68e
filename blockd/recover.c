/*
 * recover.c - the recovery pass: after each epoch change, work out what
 * this node must now hold, fetch it, and drop what placement moved away.
 *
 * One thread runs passes; a pass fetches with opts.threads helper
 * threads. A pass at epoch E:
 *   1. lists every up node's objects with their tags (a peer still on an
 *      older epoch makes it wait, and a peer answers only once its older
 *      mutations in flight have ended, recover_quiesce: no write tagged
 *      older than E may land after the listing);
 *   2. for each object this node holds in E, applies the rule of
 *      recover.h to the listed copies and fetches the newest if needed;
 *   3. removes local copies of objects it no longer holds once every
 *      holder in E is up and has a copy at least as new;
 *   4. if nothing was left undone, records E as its clean epoch.
 * Leftovers (unreachable holders, copies not yet safe to drop) make the
 * pass run again later (unavailable objects: after PASS_RETRY_MIN_MS,
 * doubling up to PASS_RETRY_MAX_MS while it keeps failing; copies not
 * yet safe to drop: after PASS_RETRY_MS); a new epoch starts a new pass.
 *
 * Every request to a peer is bounded by opts.peer_timeout_ms (a listing
 * page: that, then twice and four times as long while the map keeps
 * the peer up): a peer that does not answer in time (a hung process)
 * counts as unreachable for this pass, like a down one. That can leave
 * objects unavailable here, never stale (the rule), and the pass runs
 * again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blockd/datadir.h"
#include "blockd/recover_int.h"
#include "common/log.h"
#include "common/net.h"
#include "common/oid.h"
#include "common/proto.h"

#define PASS_RETRY_MIN_MS 500
#define PASS_RETRY_MS 3000
#define PASS_RETRY_MAX_MS 5000
#define PASS_TOMB_RETRY_MS 10000
#define PASS_TOMB_FRESH_MS 3000 /* a pass after a removal made a tombstone */
#define LIST_PAGE 8192
#define PAGE_TRIES 3            /* waiting peer_timeout_ms, twice, 4 times */

struct listed {
	uint64_t oid, tag, size;
	uint32_t node_id;
};

struct pass {
	struct recover *r;
	const struct cmap *m;
	struct listed *ents;
	size_t n, cap;
	size_t nresp;
	uint32_t resp_id[REC_MAX_PEERS + 1];
	uint64_t resp_clean[REC_MAX_PEERS + 1];
	uint64_t resp_full[REC_MAX_PEERS + 1];
	atomic_size_t tomb_pending;     /* tombstones not collectable yet */
	size_t newer;                   /* objects listed newer elsewhere */
	/* objects to settle, as indexes of their first entry in ents */
	size_t *work, nwork;
	atomic_size_t next;
	atomic_int failed;
	atomic_size_t fetched;
	int aborted;
	size_t left_out;                /* up peers whose list did not come */
};

static uint64_t next_req_id(void *arg)
{
	static atomic_uint_fast64_t id = 1ull << 40;

	(void)arg;
	return atomic_fetch_add(&id, 1);
}

static int pass_add(struct pass *p, uint64_t oid, uint64_t tag, uint64_t size,
		    uint32_t node_id)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 4096;
		struct listed *e = realloc(p->ents, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		p->ents = e;
		p->cap = cap;
	}
	p->ents[p->n++] = (struct listed){ oid, tag, size, node_id };
	return 0;
}

static int superseded(struct recover *r, uint64_t epoch)
{
	int ret;

	pthread_mutex_lock(&r->lock);
	ret = r->stop || r->cur_epoch > epoch;
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* List one peer's objects; -EAGAIN while it is on an older epoch. */
/* A peer counts as having answered only once its whole list arrived. */
static int list_peer(struct pass *p, const struct cmap_node *nd)
{
	uint64_t after = 0, clean = 0, full = 0;
	int first = 1;

	for (;;) {
		struct rpc_call c = { 0 };
		struct cmap_node peer;
		int ret;

		c.node = cmap_node_peer(nd, &peer);     /* the cluster net */
		c.req.opcode = SDFS_OP_OBJ_LIST;
		c.req.flags = SDFS_F_RAW | SDFS_F_EPOCHS | (first ? SDFS_F_FIRST : 0);
		c.req.offset = after;
		c.req.length = LIST_PAGE;
		c.req.epoch = (uint32_t)p->m->epoch;
		/*
		 * A page is 8192 object headers read on the peer: on a cold
		 * disk under load that can take longer than the bound. A hung
		 * peer is marked down meanwhile (a new epoch supersedes this
		 * pass); one that is still in the map is asked again, waiting
		 * twice as long, up to PAGE_TRIES times.
		 */
		for (int tmo = p->r->opts.peer_timeout_ms, k = 0;; tmo *= 2) {
			rpc_run(p->r->pool, &c, 1, tmo, next_req_id, NULL);
			ret = rpc_result(&c);
			if (ret != -ETIMEDOUT || ++k == PAGE_TRIES ||
			    superseded(p->r, p->m->epoch))
				break;
			log_info("epoch=%" PRIu64 ": node %" PRIu32 " did not list %d "
				 "objects in %d ms; asking again", p->m->epoch,
				 nd->node_id, LIST_PAGE, tmo);
			rpc_calls_free(&c, 1);
		}
		if (ret == 0 && c.reply.epoch != p->m->epoch)
			ret = c.reply.epoch < p->m->epoch ? -EAGAIN : -ESTALE;
		if (ret == 0 && c.reply.payload_len % SDFS_LIST_ENT_SIZE)
			ret = -EPROTO;
		if (ret) {
			rpc_calls_free(&c, 1);
			return ret;
		}
		if (first) {
			full = c.reply.offset;
			clean = c.reply.length;
		}
		size_t cnt = c.reply.payload_len / SDFS_LIST_ENT_SIZE;
		struct sdfs_list_ent e[64];
		for (size_t i = 0; i < cnt && ret == 0; i += 64) {
			size_t k = cnt - i < 64 ? cnt - i : 64;

			proto_list_ent_decode(c.rpayload + i * SDFS_LIST_ENT_SIZE, k, e);
			for (size_t j = 0; j < k && ret == 0; j++)
				ret = pass_add(p, e[j].oid, e[j].epoch, e[j].size, nd->node_id);
			after = e[k - 1].oid;
		}
		int more = c.reply.flags & SDFS_F_MORE;
		rpc_calls_free(&c, 1);
		if (ret)
			return ret;
		if (!more || cnt == 0) {
			p->resp_id[p->nresp] = nd->node_id;
			p->resp_full[p->nresp] = full;
			p->resp_clean[p->nresp++] = clean;
			return 0;
		}
		first = 0;
	}
}

static int list_self(struct pass *p)
{
	struct objstore_ent *e = malloc(LIST_PAGE * sizeof(*e));
	uint64_t after = 0;
	int first = 1, ret = 0;
	size_t n;

	if (!e)
		return -ENOMEM;
	do {
		ret = objstore_list_ent(p->r->bd->store, after, first, e, LIST_PAGE, &n);
		for (size_t i = 0; ret == 0 && i < n; i++)
			ret = pass_add(p, e[i].oid, e[i].version, e[i].deleted ?
				       SDFS_SIZE_TOMBSTONE : e[i].size, p->r->self);
		if (n)
			after = e[n - 1].oid;
		first = 0;
	} while (ret == 0 && n == LIST_PAGE);
	free(e);
	return ret;
}

/*
 * Every up node's list. A peer still on an older epoch, or not serving
 * yet (SHUTDOWN: its lease not valid yet after a start, its ZooKeeper
 * connection back a moment ago), is asked again for up to
 * opts.peer_timeout_ms, then left out like one that does not answer:
 * the pass goes on with the others (what only that peer could vouch for
 * stays unavailable) and runs again later (p->left_out).
 */
static int list_all(struct pass *p)
{
	int ret = list_self(p);

	for (size_t i = 0; ret == 0 && i < p->m->n; i++) {
		const struct cmap_node *nd = &p->m->nodes[i];

		if (nd->state != CMAP_UP || nd->node_id == p->r->self)
			continue;
		if (p->nresp == REC_MAX_PEERS)
			break;
		size_t mark = p->n;
		int64_t deadline = rec_now_ms() + p->r->opts.peer_timeout_ms;

		for (;;) {
			ret = list_peer(p, nd);
			if (ret != -EAGAIN && ret != -ESHUTDOWN)
				break;
			p->n = mark;    /* drop a partial list, ask again */
			if (superseded(p->r, p->m->epoch))
				return -EAGAIN;
			if (rec_now_ms() > deadline)
				break;  /* left out below */
			usleep(100 * 1000);
		}
		if (ret == -ESTALE)
			return ret;     /* we are behind: a newer pass comes */
		if (ret) {
			p->n = mark;    /* a partial list would read as "no copy" */
			p->left_out++;
			log_info("epoch=%" PRIu64 ": node %" PRIu32 " did not list its "
				 "objects (%s); continuing without it", p->m->epoch,
				 nd->node_id, strerror(-ret));
			ret = 0;
		}
	}
	return ret;
}

static int cmp_listed(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;

	if (x->oid != y->oid)
		return x->oid < y->oid ? -1 : 1;
	return x->node_id < y->node_id ? -1 : x->node_id > y->node_id;
}

/* The view of the object whose entries start at ents[i]; returns the
 * index after its last entry. */
static size_t view_of(const struct pass *p, size_t i, struct rec_view *v)
{
	uint64_t oid = p->ents[i].oid;

	memset(v, 0, sizeof(*v));
	v->nresp = p->nresp;
	memcpy(v->resp_id, p->resp_id, p->nresp * sizeof(v->resp_id[0]));
	memcpy(v->resp_clean, p->resp_clean, p->nresp * sizeof(v->resp_clean[0]));
	memcpy(v->resp_full, p->resp_full, p->nresp * sizeof(v->resp_full[0]));
	for (; i < p->n && p->ents[i].oid == oid; i++) {
		const struct listed *e = &p->ents[i];

		int dead = e->size == SDFS_SIZE_TOMBSTONE;

		/* version 0: an unreadable header, no copy to take */
		if (e->node_id != p->r->self && e->tag && v->n < REC_MAX_PEERS)
			v->copy[v->n++] = (struct rec_copy){ e->node_id, 1, dead, e->tag,
							     dead ? 0 : e->size, 0 };
	}
	return i;
}

/* Will this object's copy have to come from a peer? (For progress.) */
static int needs_fetch(const struct pass *p, size_t i, uint64_t *size)
{
	uint64_t oid = p->ents[i].oid, mine = 0, best = 0;
	int have = 0;

	for (; i < p->n && p->ents[i].oid == oid; i++) {
		if (p->ents[i].node_id == p->r->self) {
			have = 1;
			mine = p->ents[i].tag;
		} else if (p->ents[i].tag > best) {
			best = p->ents[i].tag;
			*size = p->ents[i].size == SDFS_SIZE_TOMBSTONE ? 0 : p->ents[i].size;
		}
	}
	return have ? best > mine : best > 0;
}

static void *fetch_worker(void *arg)
{
	struct pass *p = arg;
	struct recover *r = p->r;

	for (;;) {
		size_t k = atomic_fetch_add(&p->next, 1);
		struct rec_view v;
		uint64_t bytes;
		int fetched, ret;

		if (k >= p->nwork || superseded(r, p->m->epoch))
			return NULL;
		uint64_t oid = p->ents[p->work[k]].oid, size = 0;
		view_of(p, p->work[k], &v);
		/*
		 * The bandwidth cap is for the pass, paid before taking the
		 * object's lock: a client request for the same object settles
		 * it at once (unthrottled: it is client I/O) instead of waiting
		 * behind the cap.
		 */
		if (needs_fetch(p, p->work[k], &size))
			rec_throttle(r, size);
		pthread_mutex_lock(rec_stripe(r, oid));
		ret = rec_settle_locked(r, p->m, oid, &v, &fetched, &bytes);
		if (ret == -EAGAIN || ret == -EIO || ret == -ETIMEDOUT ||
		    ret == -ECONNREFUSED || ret == -ECONNRESET)
			/* the listed source failed: ask everyone again */
			ret = rec_settle_locked(r, p->m, oid, NULL, &fetched, &bytes);
		pthread_mutex_unlock(rec_stripe(r, oid));
		if (fetched) {
			atomic_fetch_add(&r->moved, 1);
			atomic_fetch_add(&p->fetched, 1);
			atomic_fetch_add(&r->done_bytes, bytes);
		}
		atomic_fetch_add(&r->done_objs, 1);
		if (ret == -ENODATA)
			atomic_fetch_add(&r->unavail, 1);
		else if (ret)
			atomic_fetch_add(&p->failed, 1);
	}
}

/* May the local copy at ents[i..] go? Every holder up, listed, as new. */
static int safe_to_drop(const struct pass *p, size_t i, uint64_t mine)
{
	uint64_t oid = p->ents[i].oid;
	uint32_t ids[RING_MAX_COPIES];
	unsigned copies = oid_copies(oid, p->r->copies);
	int n = ring_place(p->m->ring, oid, copies, ids);

	if (n < (int)copies)
		return 0;       /* fewer nodes than copies: keep every copy */
	for (int k = 0; k < n; k++) {
		const struct cmap_node *nd = cmap_find(p->m, ids[k]);
		int ok = 0;

		if (!nd || nd->state != CMAP_UP)
			return 0;
		for (size_t j = i; j < p->n && p->ents[j].oid == oid; j++)
			if (p->ents[j].node_id == ids[k] && p->ents[j].tag >= mine)
				ok = 1;
		if (!ok)
			return 0;
	}
	return 1;
}

static void cleanup(struct pass *p, size_t i)
{
	struct recover *r = p->r;
	uint64_t oid = p->ents[i].oid, mine = 0, size, tag;
	int have = 0;

	for (size_t j = i; j < p->n && p->ents[j].oid == oid; j++)
		if (p->ents[j].node_id == r->self) {
			have = 1;
			mine = p->ents[j].tag;
		}
	if (!have)
		return;
	if (!safe_to_drop(p, i, mine)) {
		atomic_fetch_add(&r->extra, 1);
		return;
	}
	pthread_mutex_lock(rec_stripe(r, oid));
	/* Only the copy we judged: a write since makes it someone else's call. */
	if (objstore_head(r->bd->store, oid, &size, &tag, NULL) == 0 && tag == mine &&
	    !history_is_up_holder(p->m, oid, r->copies, r->self) &&
	    rec_full_forget(r, p->m->epoch) == 0)
		objstore_remove(r->bd->store, oid);
	pthread_mutex_unlock(rec_stripe(r, oid));
}

/*
 * A tombstone may go when it can no longer matter: every node of the map
 * is up and listed (no node away with an old copy), and every copy of
 * the object anywhere is a tombstone.
 */
static int all_nodes_listed(const struct pass *p)
{
	for (size_t i = 0; i < p->m->n; i++)
		if (p->m->nodes[i].state != CMAP_UP)
			return 0;
	return p->nresp + 1 == p->m->n;
}

/* Returns 1 if the local tombstone went (or there was none). */
static int gc_tombstone(struct pass *p, size_t i, int allowed)
{
	struct recover *r = p->r;
	uint64_t oid = p->ents[i].oid, mine = 0, size, tag;
	int have = 0, others_live = 0, dead;

	for (size_t j = i; j < p->n && p->ents[j].oid == oid; j++) {
		if (p->ents[j].node_id == r->self) {
			have = p->ents[j].size == SDFS_SIZE_TOMBSTONE;
			mine = p->ents[j].tag;
		} else if (p->ents[j].size != SDFS_SIZE_TOMBSTONE) {
			others_live = 1;
		}
	}
	if (!have)
		return 1;
	if (!allowed || others_live) {
		/* A node that came back may still turn its old copy into a
		 * tombstone, or one is away: look again later. */
		atomic_fetch_add(&p->tomb_pending, 1);
		return 0;
	}
	pthread_mutex_lock(rec_stripe(r, oid));
	if (objstore_head(r->bd->store, oid, &size, &tag, &dead) == 0 && dead &&
	    tag == mine)
		objstore_remove(r->bd->store, oid);
	pthread_mutex_unlock(rec_stripe(r, oid));
	return 1;
}

static void run_pass(struct recover *r, const struct cmap *m)
{
	struct pass p = { .r = r, .m = m };
	uint32_t ids[RING_MAX_COPIES];
	int64_t retry_ms = PASS_RETRY_MS;
	uint64_t moved = atomic_load(&r->moved);
	int ret;

	pthread_mutex_lock(&r->lock);
	if (r->backoff_epoch != m->epoch) {
		r->backoff_epoch = m->epoch;
		r->backoff_ms = PASS_RETRY_MIN_MS;
	}
	pthread_mutex_unlock(&r->lock);

	atomic_store(&r->todo_objs, 0);
	atomic_store(&r->done_objs, 0);
	atomic_store(&r->todo_bytes, 0);
	atomic_store(&r->done_bytes, 0);
	atomic_store(&r->unavail, 0);
	atomic_store(&r->extra, 0);
	atomic_store(&r->pass_start_ms, rec_now_ms());
	atomic_store(&r->pass_end_ms, 0);

	ret = list_all(&p);
	if (ret) {
		log_every(LOG_EVERY_MS, LOG_INFO, "epoch=%" PRIu64 ": recovery pass "
			  "deferred (%s)", m->epoch, strerror(-ret));
		goto out_backoff;
	}
	if (p.n)        /* nothing listed: ents is NULL, and qsort's nonnull */
		qsort(p.ents, p.n, sizeof(*p.ents), cmp_listed);
	p.work = malloc((p.n + 1) * sizeof(*p.work));
	if (!p.work)
		goto out_backoff;
	/* What must be here: settle it (most settle by the fast path). */
	for (size_t i = 0, next; i < p.n; i = next) {
		uint64_t oid = p.ents[i].oid, size = 0;
		int n = ring_place(m->ring, oid, oid_copies(oid, r->copies), ids), mine = 0;

		for (next = i; next < p.n && p.ents[next].oid == oid; next++)
			;
		for (int k = 0; k < n; k++)
			mine |= ids[k] == r->self;
		if (!mine)
			continue;
		p.work[p.nwork++] = i;
		atomic_fetch_add(&r->todo_objs, 1);
		if (needs_fetch(&p, i, &size)) {
			atomic_fetch_add(&r->todo_bytes, size);
			p.newer++;
		}
	}
	log_info("epoch=%" PRIu64 ": recovery pass: %zu objects listed on %zu "
		 "nodes, %zu held here", m->epoch, p.n, p.nresp + 1, p.nwork);

	int nthreads = r->opts.threads;
	pthread_t th[16];
	if (nthreads > 16)
		nthreads = 16;
	int started = 0;
	for (; started < nthreads; started++)
		if (pthread_create(&th[started], NULL, fetch_worker, &p))
			break;
	if (started == 0)
		fetch_worker(&p);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (superseded(r, m->epoch))
		goto out;

	atomic_store(&r->pass_end_ms, rec_now_ms());
	/*
	 * A peer left out may hold objects no listed node has (a change
	 * that reached only the holders of its epoch): nothing here knows
	 * to fetch them, so the pass is not done (no clean epoch) and runs
	 * again, as for objects left unavailable.
	 */
	if (atomic_load(&r->unavail) || atomic_load(&p.failed) || p.left_out) {
		log_every(LOG_EVERY_MS, LOG_WARNING, "epoch=%" PRIu64 ": recovery "
			  "left %" PRIu64 " objects unavailable, %d failed, %zu nodes "
			  "unlisted; retrying", m->epoch,
			  (uint64_t)atomic_load(&r->unavail), atomic_load(&p.failed),
			  p.left_out);
		goto out_backoff;
	}
	if (atomic_load(&r->clean_epoch) < m->epoch) {
		/*
		 * Kept on disk: after a restart this node's copies are still
		 * known current as of this epoch, so only later epochs' holders
		 * need asking (a node out for good does not block them).
		 */
		/* What the pass fetched must be on disk before it vouches. */
		ret = objstore_sync_all(r->bd->store);
		if (ret == 0)
			ret = datadir_write_u64(r->bd->dir, "clean_epoch", m->epoch);
		if (ret)
			log_warn("epoch=%" PRIu64 ": cannot record the clean epoch: %s",
				 m->epoch, strerror(-ret));
		atomic_store(&r->clean_epoch, m->epoch);
		log_info("epoch=%" PRIu64 ": recovery done: %zu objects fetched",
			 m->epoch, atomic_load(&p.fetched));
	}
	/* Seeing every node makes "no such object" a known fact too. */
	if (all_nodes_listed(&p) && atomic_load(&r->full_epoch) < m->epoch) {
		ret = datadir_write_u64(r->bd->dir, "full_epoch", m->epoch);
		if (ret)
			log_warn("epoch=%" PRIu64 ": cannot record the full epoch: %s",
				 m->epoch, strerror(-ret));
		else
			atomic_store(&r->full_epoch, m->epoch);
	}
	/*
	 * What placement moved away: drop it once it is safe. Only now that
	 * the clean epoch is E: before, this node would still count as the
	 * authority (recover_io.c) for objects it no longer holds.
	 */
	int gc = all_nodes_listed(&p);
	for (size_t i = 0, next; i < p.n; i = next) {
		uint64_t oid = p.ents[i].oid;
		int n = ring_place(m->ring, oid, oid_copies(oid, r->copies), ids), mine = 0;

		for (next = i; next < p.n && p.ents[next].oid == oid; next++)
			;
		for (int k = 0; k < n; k++)
			mine |= ids[k] == r->self;
		/* Tombstones first: placed or not, they go together once
		 * nothing can bring the object back. */
		if (gc_tombstone(&p, i, gc) && !mine)
			cleanup(&p, i);
	}
	/*
	 * What was fetched here during the pass (by it or on demand) is not
	 * in its lists: one more look lets copies and tombstones it made
	 * redundant go. A copy listed newer elsewhere that this node's own
	 * copy was current against (a retried write applied twice there)
	 * moved nothing: no reason to list every node again, which while
	 * a peer recovers meant every 3 s.
	 */
	int relist = atomic_load(&r->moved) != moved;
	if (atomic_load(&r->extra) == 0 && atomic_load(&p.tomb_pending) == 0 && !relist)
		goto out;
	/* Only tombstones waiting (maybe for a node that is away for
	 * good): no hurry. */
	if (atomic_load(&r->extra) == 0 && !relist)
		retry_ms = PASS_TOMB_RETRY_MS;
	/* (extra copies and tombstones can wait for a node for long: no log
	 * line every few seconds for those) */
	sdfs_log(relist ? LOG_INFO : LOG_DEBUG,
		 "epoch=%" PRIu64 ": recovery pass again in %" PRId64 " ms: %" PRIu64
		 " extra copies kept, %zu tombstones pending, %zu fetched here (%zu "
		 "listed newer elsewhere)", m->epoch, retry_ms,
		 (uint64_t)atomic_load(&r->extra), atomic_load(&p.tomb_pending),
		 (size_t)(atomic_load(&r->moved) - moved), p.newer);
	goto out_retry;
out_backoff:
	/* A peer did not answer or an object stayed unavailable: soon at
	 * first (a hung peer is usually marked down within a session
	 * timeout, which starts a new pass anyway), then less often. */
	pthread_mutex_lock(&r->lock);
	retry_ms = r->backoff_ms;
	r->backoff_ms = r->backoff_ms * 2 < PASS_RETRY_MAX_MS ? r->backoff_ms * 2
							      : PASS_RETRY_MAX_MS;
	pthread_mutex_unlock(&r->lock);
out_retry:
	pthread_mutex_lock(&r->lock);
	if (r->pass_epoch == m->epoch)
		r->retry_at_ms = rec_now_ms() + retry_ms;
	pthread_mutex_unlock(&r->lock);
out:
	free(p.work);
	free(p.ents);
}

static void *pass_thread(void *arg)
{
	struct recover *r = arg;

	pthread_mutex_lock(&r->lock);
	while (!r->stop) {
		int64_t now = rec_now_ms();
		int due = r->cur_epoch > r->pass_epoch ||
			  (r->retry_at_ms && now >= r->retry_at_ms);

		if (!due) {
			struct timespec ts;

			net_time_in(CLOCK_REALTIME, 200, &ts);
			pthread_cond_timedwait(&r->cond, &r->lock, &ts);
			continue;
		}
		uint64_t epoch = r->cur_epoch;
		r->pass_epoch = epoch;
		r->retry_at_ms = 0;
		pthread_mutex_unlock(&r->lock);

		const struct cmap *m;
		if (history_get(r->hist, epoch, &m) == 0)
			run_pass(r, m);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int recover_new(struct blockd *bd, const struct recover_opts *o, struct recover **out)
{
	struct recover *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	r->vtab = calloc(REC_BUCKETS, sizeof(*r->vtab));
	if (!r->vtab) {
		free(r);
		return -ENOMEM;
	}
	r->bd = bd;
	r->opts = *o;
	if (r->opts.threads <= 0)
		r->opts.threads = 2;
	if (!r->opts.mbps)
		r->opts.mbps = 200;
	if (r->opts.peer_timeout_ms <= 0)
		r->opts.peer_timeout_ms = 3000;
	r->self = bd->node_id;
	r->copies = bd->cfg.copies;
	static const char *const names[] = { "clean_epoch", "full_epoch" };
	atomic_uint_fast64_t *vals[] = { &r->clean_epoch, &r->full_epoch };
	for (int i = 0; i < 2; i++) {
		uint64_t e = 0;

		ret = datadir_read_u64(bd->dir, names[i], &e);
		if (ret && ret != -ENOENT)
			log_warn("%s/%s: %s; starting from none", bd->dir, names[i],
				 strerror(-ret));
		atomic_store(vals[i], ret ? 0 : e);
	}
	r->obj_size = bd->cfg.obj_size;
	r->tb_last_ms = rec_now_ms();
	for (int i = 0; i < REC_STRIPES; i++)
		pthread_mutex_init(&r->stripe[i], NULL);
	pthread_mutex_init(&r->vlock, NULL);
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->tb_lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	pthread_cond_init(&r->quiet, NULL);
	ret = history_new(bd->coord, &r->hist);
	if (!ret)
		ret = pool_new(&r->pool);
	if (!ret)
		ret = -pthread_create(&r->thread, NULL, pass_thread, r);
	if (ret) {
		history_free(r->hist);
		pool_free(r->pool);
		free(r->vtab);
		free(r);
		return ret;
	}
	*out = r;
	return 0;
}

void recover_free(struct recover *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = 1;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	rec_verified_clear(r);
	free(r->vtab);
	history_free(r->hist);
	pool_free(r->pool);
	free(r);
}

void recover_map_changed(struct recover *r, const struct cmap *m)
{
	if (history_add(r->hist, m))
		log_warn("epoch=%" PRIu64 ": cannot remember the map", m->epoch);
	pthread_mutex_lock(&r->lock);
	if (m->epoch > r->cur_epoch)
		r->cur_epoch = m->epoch;
	pthread_cond_broadcast(&r->cond);
	pthread_cond_broadcast(&r->quiet);
	pthread_mutex_unlock(&r->lock);
}

void recover_note_tombstone(struct recover *r)
{
	pthread_mutex_lock(&r->lock);
	if (!r->retry_at_ms)
		r->retry_at_ms = rec_now_ms() + PASS_TOMB_FRESH_MS;
	pthread_mutex_unlock(&r->lock);
}

uint64_t recover_clean_epoch(struct recover *r)
{
	return atomic_load(&r->clean_epoch);
}

uint64_t recover_full_epoch(struct recover *r)
{
	return atomic_load(&r->full_epoch);
}

void recover_fill_info(struct recover *r, struct sdfs_node_info *ni)
{
	int64_t start = atomic_load(&r->pass_start_ms);
	int64_t end = atomic_load(&r->pass_end_ms);

	pthread_mutex_lock(&r->lock);
	ni->rec_epoch = (uint32_t)r->pass_epoch;
	pthread_mutex_unlock(&r->lock);
	ni->clean_epoch = (uint32_t)atomic_load(&r->clean_epoch);
	ni->rec_todo_objs = atomic_load(&r->todo_objs);
	ni->rec_done_objs = atomic_load(&r->done_objs);
	ni->rec_todo_bytes = atomic_load(&r->todo_bytes);
	ni->rec_done_bytes = atomic_load(&r->done_bytes);
	ni->rec_unavail = atomic_load(&r->unavail);
	ni->rec_extra = atomic_load(&r->extra);
	ni->rec_elapsed_ms = start ? (uint64_t)((end ? end : rec_now_ms()) - start) : 0;
	ni->moved_objs = atomic_load(&r->moved);
}
