/*
 * order.c - the primary's side of ordered mutations (order.h).
 *
 * The primary answers within replica_timeout_ms (sdfs.conf) of a
 * request's arrival, the time it waited for a worker and for the
 * object's stripe (held by the mutation before it, which may be waiting
 * for a hung replica) included: the client waits only a second more
 * before it reports the primary itself. A request with less than a
 * quarter of that left answers UNAVAIL untouched (the client tries
 * again); the others wait what is left for the replicas. One that did
 * not answer by then (and had at least half the bound) is reported
 * unresponsive (coord_suspect.h), and the client is told to try again
 * (UNAVAIL): it does once the map has dropped that node
 * (docs/recovery.md). We never report ourselves (our own SDFS_F_SYNC
 * copy goes out with the others): the client does if we are the slow
 * one.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockd/blockd.h"
#include "blockd/order.h"
#include "common/coord_suspect.h"
#include "common/log.h"
#include "common/net.h"
#include "common/oid.h"
#include "common/proto.h"
#include "common/ring.h"
#include "common/rpc.h"

#define ORDER_STRIPES 1024      /* order locks; objects share one rarely */

struct order {
	struct workq *q;
	struct pool *pool;
	int timeout_ms;                 /* for the replicas' answers */
	atomic_uint_fast64_t req_id;
	pthread_mutex_t stripe[ORDER_STRIPES];
};

struct ordreq {
	struct work work;
	struct blockd *bd;
	struct conn *conn;
	struct sdfs_hdr h;
	uint8_t *payload;
	int proxy;                      /* not the primary: pass it on */
	size_t n;                       /* up holders (proxy: the primary) */
	struct cmap_node node[RING_MAX_COPIES];
	enum sdfs_res res;
	uint32_t applied;
	int64_t arrived_ms;             /* net_now_ms() at dispatch */
};

static const uint8_t repl_of[SDFS_OP_MAX] = {
	[SDFS_OP_OBJ_WRITE] = SDFS_OP_REPL_WRITE,
	[SDFS_OP_OBJ_CREATE] = SDFS_OP_REPL_CREATE,
	[SDFS_OP_OBJ_REMOVE] = SDFS_OP_REPL_REMOVE,
	[SDFS_OP_OBJ_REPLACE] = SDFS_OP_REPL_REPLACE,
};

unsigned order_repl_op(unsigned op)
{
	return op < SDFS_OP_MAX ? repl_of[op] : 0;
}

int order_wanted(const struct sdfs_hdr *h)
{
	return order_repl_op(h->opcode) && !(h->flags & SDFS_F_RAW) &&
	       oid_is_ordered(h->oid);
}

static uint64_t next_req_id(void *arg)
{
	struct order *o = arg;

	return atomic_fetch_add(&o->req_id, 1) + 1;
}

static pthread_mutex_t *stripe_of(struct order *o, uint64_t oid)
{
	return &o->stripe[(oid * 0x9e3779b97f4a7c15ull) >> 54];
}

/*
 * One answer for the client from the replicas' answers, most telling
 * first: a fence or freeze (never retried), a lasting error, then "try
 * again" (a replica on another epoch, unreachable or unable to vouch for
 * its copy: the client re-reads the map and redoes the whole mutation,
 * which is idempotent); else done. A removal all replicas found missing
 * is NO_OBJ.
 */
static enum sdfs_res combine(struct ordreq *q, const int *res)
{
	int fenced = 0, fatal = 0, stale = 0, retry = 0, noent = 0;

	for (size_t i = 0; i < q->n; i++) {
		int r = res[i];

		if (r == 0)
			q->applied++;
		else if (r == -EPERM || r == -EROFS)
			fenced = fenced ? fenced : r;
		else if (r == -ENOENT && q->h.opcode == SDFS_OP_OBJ_REMOVE)
			noent++;
		else if (r == -ESTALE)
			stale = 1;
		else if (r == -EAGAIN || r == -ENODATA || rpc_is_transport(r)) {
			if (rpc_is_transport(r))
				log_warn("node=%" PRIu32 " oid=%016" PRIx64 " op=%s: %s; the "
					 "client will retry", q->node[i].node_id, q->h.oid,
					 proto_op_name(q->h.opcode), strerror(-r));
			retry = 1;
		} else if (!fatal)
			fatal = r;
	}
	if (fenced)
		return proto_res_from_errno(fenced);
	if (fatal)
		return proto_res_from_errno(fatal);
	if (stale)
		return SDFS_RES_OLD_EPOCH;
	if (retry)
		return SDFS_RES_UNAVAIL;
	return noent && !q->applied ? SDFS_RES_NO_OBJ : SDFS_RES_OK;
}

/*
 * Our own copy: applied right here when that is quick (a page-cache
 * write, then the others in one round trip), else (SDFS_F_SYNC: an
 * fdatasync) sent to ourselves like the others, so the syncs run in
 * parallel. Returns the index of our copy in q->node, or q->n if it
 * goes out with the rest.
 */
static size_t local_copy(const struct ordreq *q)
{
	if (q->proxy || (q->h.flags & SDFS_F_SYNC))
		return q->n;
	for (size_t i = 0; i < q->n; i++)
		if (q->node[i].node_id == q->bd->node_id)
			return i;
	return q->n;
}

/* A replica did not answer within the bound: report it (once per
 * epoch and node is enough; a marker that exists already is fine; the
 * limit of coord_suspect_report may refuse it). */
static void report(const struct ordreq *q, uint32_t node_id)
{
	unsigned copies = oid_copies(q->h.oid, q->bd->cfg.copies);
	char who[32];
	int r;

	if (copies > q->bd->cfg.copies)
		copies = q->bd->cfg.copies;     /* the limit: docs/recovery.md */
	/* As a client: only while our map is still the try's (the node
	 * may be down, or back, in a newer one: the client retries). */
	if (member_epoch(q->bd) > q->h.epoch)
		return;
	snprintf(who, sizeof(who), "node:%" PRIu32, q->bd->node_id);
	r = coord_suspect_report(q->bd->coord, node_id, q->h.epoch, who, copies);
	if (r == 0)
		log_warn("node=%" PRIu32 " epoch=%" PRIu32 ": no answer within %d ms; "
			 "reported unresponsive", node_id, q->h.epoch,
			 q->bd->order->timeout_ms);
	else if (r == -EBUSY)
		log_every(LOG_EVERY_MS, LOG_WARNING, "node=%" PRIu32 ": no answer, but "
			  "copies - 1 nodes are reported or down already: not reported",
			  node_id);
	else if (r != -EEXIST)
		log_warn("node=%" PRIu32 ": cannot report it unresponsive: %s", node_id,
			 strerror(-r));
}

static void ordreq_fn(struct work *w)
{
	struct ordreq *q = (struct ordreq *)w;
	struct order *o = q->bd->order;
	struct rpc_call c[RING_MAX_COPIES];
	int res[RING_MAX_COPIES];
	size_t self = local_copy(q), nc = 0, at[RING_MAX_COPIES];
	struct sdfs_hdr h = q->h;
	pthread_mutex_t *mu = q->proxy ? NULL : stripe_of(o, q->h.oid);

	if (!q->proxy)
		h.opcode = (uint8_t)order_repl_op(q->h.opcode);
	memset(c, 0, sizeof(c));
	for (size_t i = 0; i < q->n; i++) {
		if (i == self)
			continue;
		c[nc].node = &q->node[i];
		c[nc].req = h;
		c[nc].payload = q->payload;
		at[nc++] = i;
	}
	if (mu)
		pthread_mutex_lock(mu);
	/* What is left of the bound since the request came (the client's
	 * runs meanwhile); too little: nothing done, the client retries. */
	int64_t waited = net_now_ms() - q->arrived_ms;
	int left = q->proxy ? o->timeout_ms : o->timeout_ms - (int)waited;
	if (left < o->timeout_ms / 4) {
		if (mu)
			pthread_mutex_unlock(mu);
		q->res = SDFS_RES_UNAVAIL;
		return;
	}
	if (self < q->n)        /* same answer as over the wire */
		res[self] = proto_res_to_errno(proto_res_from_errno(
			ops_apply(q->bd, &h, q->payload)));
	rpc_run(o->pool, c, nc, left, next_req_id, o);
	if (mu)
		pthread_mutex_unlock(mu);
	size_t nsilent = 0;

	for (size_t k = 0; k < nc; k++)
		nsilent += c[k].ret == -ETIMEDOUT;
	for (size_t k = 0; k < nc; k++) {
		res[at[k]] = rpc_result(&c[k]);
		/* silent for at least half the bound; never ourselves; not
		 * when no other replica answered (then we are the likely
		 * fault: cut off or overloaded) */
		if (c[k].ret == -ETIMEDOUT && !q->proxy && left >= o->timeout_ms / 2 &&
		    c[k].node->node_id != q->bd->node_id && !(nc > 1 && nsilent == nc))
			report(q, c[k].node->node_id);
	}
	if (!q->proxy && nc > 1 && nsilent == nc)
		log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 ": none of %zu "
			  "replicas answered; reporting none (the fault is likely ours)",
			  q->h.oid, nc);
	if (q->proxy) {
		int r = rpc_result(&c[0]);

		q->res = c[0].ret ? SDFS_RES_UNAVAIL : (enum sdfs_res)c[0].reply.result;
		q->applied = c[0].ret ? 0 : c[0].reply.length;
		if (c[0].ret)
			log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": primary unreachable: %s",
				 q->node[0].node_id, q->h.oid, strerror(-r));
	} else
		q->res = combine(q, res);
	rpc_calls_free(c, nc);
}

static void ordreq_done(struct work *w)
{
	struct ordreq *q = (struct ordreq *)w;
	struct sdfs_hdr reply;

	proto_reply_init(&reply, &q->h, q->res);
	reply.length = q->applied;
	client_conn_reply(q->conn, &reply, NULL);
	client_conn_put(q->conn);
	free(q->payload);
	free(q);
}

/*
 * Would a holder refuse this for space? A write of file or raw data
 * (not a removal, nor the mds's truncate carrying its token: ops.c's
 * space_refuses) when an up holder is full in our map, or our own disk
 * is: refused before any copy is applied (issue 14).
 */
static int holders_full(struct blockd *bd, const struct ordreq *q,
			const struct sdfs_hdr *h)
{
	if (h->opcode == SDFS_OP_OBJ_REMOVE ||
	    (oid_is_file(h->oid) && h->token))
		return 0;
	if (atomic_load(&bd->space) & SDFS_SPACE_FULL)
		return 1;
	for (size_t i = 0; i < q->n; i++)
		if (q->node[i].full)
			return 1;
	return 0;
}

static void reply_now(struct conn *c, const struct sdfs_hdr *h, enum sdfs_res res)
{
	struct sdfs_hdr reply;

	proto_reply_init(&reply, h, res);
	client_conn_reply(c, &reply, NULL);
}

void order_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h,
		    uint8_t *payload)
{
	uint32_t ids[RING_MAX_COPIES];
	struct ordreq *q = calloc(1, sizeof(*q));
	int n = q ? ring_place(bd->map->ring, h->oid, oid_copies(h->oid, bd->cfg.copies),
			       ids) : -ENOMEM;

	if (n <= 0) {
		free(q);
		free(payload);
		reply_now(c, h, n == -ENOMEM ? SDFS_RES_NO_MEM : SDFS_RES_NO_SPACE);
		return;
	}
	for (int i = 0; i < n; i++) {
		const struct cmap_node *nd = cmap_find(bd->map, ids[i]);

		if (nd && nd->state == CMAP_UP)
			cmap_node_peer(nd, &q->node[q->n++]);  /* cluster net */
	}
	if (q->n && q->node[0].node_id != bd->node_id) {
		q->proxy = 1;
		q->n = 1;
	}
	if (q->n && !q->proxy && holders_full(bd, q, h)) {
		free(q);
		free(payload);
		reply_now(c, h, SDFS_RES_NO_SPACE);
		return;
	}
	if (q->n == 0) {
		/* Every holder down: the map will move them out. */
		free(q);
		free(payload);
		reply_now(c, h, SDFS_RES_UNAVAIL);
		return;
	}
	q->bd = bd;
	q->conn = c;
	q->h = *h;
	q->payload = payload;
	q->arrived_ms = net_now_ms();
	q->work.fn = ordreq_fn;
	q->work.finish = ordreq_done;   /* replies from the order worker */
	client_conn_get(c);
	workq_push(bd->order->q, &q->work);
}

int order_new(struct blockd *bd, int nthreads, struct order **out)
{
	struct order *o = calloc(1, sizeof(*o));
	int ret;

	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < ORDER_STRIPES; i++)
		pthread_mutex_init(&o->stripe[i], NULL);
	o->timeout_ms = bd->conf.replica_timeout_ms;
	ret = pool_new(&o->pool);
	if (!ret)
		ret = workq_new(bd->loop, "order", nthreads, &o->q);
	if (ret) {
		pool_free(o->pool);
		free(o);
		return ret;
	}
	*out = o;
	return 0;
}

void order_free(struct order *o)
{
	if (!o)
		return;
	workq_free(o->q);
	pool_free(o->pool);
	for (size_t i = 0; i < ORDER_STRIPES; i++)
		pthread_mutex_destroy(&o->stripe[i]);
	free(o);
}
