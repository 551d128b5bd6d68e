/*
 * copy.c - OBJ_COPY: a volume chunk's copy-on-write made by the block
 * daemons next to the data (copy.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blockd/blockd.h"
#include "blockd/copy.h"
#include "blockd/history.h"
#include "common/log.h"
#include "common/net.h"
#include "common/oid.h"
#include "common/proto.h"
#include "common/ring.h"
#include "common/rpc.h"

#define BUFS_KEEP 8
#define BUF_KEEP_MAX (8u << 20)

struct copy {
	struct workq *q;
	struct pool *pool;
	int timeout_ms;                 /* the client's bound on a replica */
	atomic_uint_fast64_t req_id;
	atomic_uint_fast64_t local, fetched;
	int unknown;                    /* test hook: answer as a 2.1 daemon */
	pthread_mutex_t mu;             /* the kept buffers */
	uint8_t *bufs[BUFS_KEEP];
	size_t nbufs;
};

struct copyreq {
	struct work work;
	struct blockd *bd;
	struct conn *conn;
	struct sdfs_hdr h;
	uint8_t *payload;
	int self;                       /* an up holder of SRC here */
	size_t n;                       /* SRC's other up holders */
	struct cmap_node node[RING_MAX_COPIES];
	int64_t arrived_ms;             /* net_now_ms() at dispatch */
	int ret;
};

/* A copy's object buffer comes from those kept: a fresh 4 MiB
 * allocation is an mmap whose 1024 pages fault in on every copy (a
 * millisecond or more of the copy's time). At most BUFS_KEEP are kept
 * (one per busy worker), and only for objects up to BUF_KEEP_MAX. */
static uint8_t *buf_get(struct copy *c, size_t size)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&c->mu);
	if (c->nbufs)
		b = c->bufs[--c->nbufs];
	pthread_mutex_unlock(&c->mu);
	return b ? b : malloc(size);
}

static void buf_put(struct copy *c, uint8_t *b, size_t size)
{
	pthread_mutex_lock(&c->mu);
	if (size <= BUF_KEEP_MAX && c->nbufs < BUFS_KEEP) {
		c->bufs[c->nbufs++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	free(b);
}

static uint64_t next_req_id(void *arg)
{
	struct copy *c = arg;

	return atomic_fetch_add(&c->req_id, 1) + 1;
}

/* Is @src a right source for @dst: volume data of one chunk and one
 * number of copies, another vid's? */
static int pair_ok(uint64_t dst, uint64_t src)
{
	return oid_is_vdata(dst) && oid_is_vdata(src) && oid_kind(dst) == oid_kind(src) &&
	       oid_chunk(dst) == oid_chunk(src) && oid_owner(dst) != oid_owner(src) &&
	       oid_owner(src) != 0;
}

/* SRC's bytes from this node's store: current, every block verified. */
static int read_local(struct copyreq *q, uint64_t src, uint8_t *buf, size_t *got)
{
	struct blockd *bd = q->bd;
	int ret = recover_ensure(bd->recover, src, q->h.epoch);

	if (!ret)
		ret = objstore_read(bd->store, src, 0, buf, bd->cfg.obj_size, got);
	if (ret == -EBADMSG)
		log_err("node=%" PRIu32 " oid=%016" PRIx64 ": checksum mismatch in local "
			"replica; copying it from a peer instead", bd->node_id, src);
	else if (ret && ret != -ENOENT)
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": local copy unusable (%s); "
			 "copying it from a peer instead", bd->node_id, src, strerror(-ret));
	return ret;
}

/* SRC's bytes from its other up holders, one after the other: an
 * ordinary read, so the peer vouches for its copy and checks it. Within
 * what is left of the client's bound on us (replica_timeout_ms since
 * the request came, less a quarter for our own write): a slow peer must
 * not make the client report this node unresponsive. Peers on another
 * epoch: -EAGAIN (the client retries); none gave it (absent, corrupt,
 * silent, unable to vouch): -ENOENT (the client copies it itself, its
 * own reads hedged across the holders). */
static int read_peers(struct copyreq *q, uint64_t src, uint8_t *buf, size_t *got)
{
	struct copy *cp = q->bd->copy;
	int ret = -ENOENT, again = 0;

	for (size_t i = 0; i < q->n; i++) {
		struct rpc_call call = { 0 };
		int64_t left = cp->timeout_ms * 3 / 4 - (net_now_ms() - q->arrived_ms);
		int r;

		if (left < cp->timeout_ms / 8)
			break;
		call.node = &q->node[i];
		call.req.opcode = SDFS_OP_OBJ_READ;
		call.req.oid = src;
		call.req.length = q->bd->cfg.obj_size;
		call.req.epoch = q->h.epoch;
		call.rbuf = buf;
		call.rbuf_len = q->bd->cfg.obj_size;
		rpc_run(cp->pool, &call, 1, (int)left, next_req_id, cp);
		r = rpc_result(&call);
		if (r == 0)
			*got = call.reply.payload_len;
		rpc_calls_free(&call, 1);
		if (r == 0)
			return 0;
		if (r == -ESTALE || r == -EAGAIN)
			again = 1;      /* the map moves: the client retries */
		else if (r != -ENOENT)
			log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 ": reading "
				  "it from node %" PRIu32 " for a copy: %s", src,
				  q->node[i].node_id, strerror(-r));
	}
	return again ? -EAGAIN : ret;
}

static void copy_fn(struct work *w)
{
	struct copyreq *q = (struct copyreq *)w;
	struct blockd *bd = q->bd;
	uint32_t osz = bd->cfg.obj_size;
	struct sdfs_obj_copy c;
	const uint8_t *piece;
	struct sdfs_hdr h;
	size_t got = 0, len;
	uint8_t *buf;
	int ret;

	if (proto_obj_copy_decode(q->payload, q->h.payload_len, osz, &c, &piece) ||
	    !pair_ok(q->h.oid, c.src) || q->h.offset > osz || c.len > osz - q->h.offset) {
		q->ret = -EINVAL;
		return;
	}
	buf = buf_get(bd->copy, osz);
	if (!buf) {
		q->ret = -ENOMEM;
		return;
	}
	ret = q->self ? read_local(q, c.src, buf, &got) : -ENOENT;
	if (ret == 0)
		atomic_fetch_add(&bd->copy->local, 1);
	else if ((ret = read_peers(q, c.src, buf, &got)) == 0)
		atomic_fetch_add(&bd->copy->fetched, 1);
	if (ret) {
		buf_put(bd->copy, buf, osz);
		q->ret = ret == -EAGAIN || ret == -ESTALE || ret == -ENOMEM ? ret : -ENOENT;
		return;
	}
	len = q->h.offset + c.len;
	if (got > len)
		len = got;
	else if (got < q->h.offset)
		memset(buf + got, 0, q->h.offset - got);
	if (c.flags & SDFS_COPY_ZERO)
		memset(buf + q->h.offset, 0, c.len);
	else
		memcpy(buf + q->h.offset, piece, c.len);
	/* DST as an OBJ_REPLACE of these bytes would make it, fences,
	 * recovery lock, space check and all (ops.c). */
	h = q->h;
	h.opcode = SDFS_OP_REPL_REPLACE;
	h.offset = 0;
	h.payload_len = (uint32_t)len;
	h.flags &= SDFS_F_SYNC;
	q->ret = ops_apply(bd, &h, buf);
	buf_put(bd->copy, buf, osz);
	log_debug("oid=%016" PRIx64 ": copied from %016" PRIx64 " (%s), %" PRIu32
		  " bytes at %" PRIu64 ": %d", q->h.oid, c.src, q->self ? "here" : "peer",
		  c.len, q->h.offset, q->ret);
}

static void copy_done(struct work *w)
{
	struct copyreq *q = (struct copyreq *)w;
	struct sdfs_hdr reply;

	proto_reply_init(&reply, &q->h, proto_res_from_errno(q->ret));
	client_conn_reply(q->conn, &reply, NULL);
	client_conn_put(q->conn);
	free(q->payload);
	free(q);
}

void copy_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h,
		   uint8_t *payload)
{
	struct copyreq *q = calloc(1, sizeof(*q));
	uint32_t ids[RING_MAX_COPIES];
	struct sdfs_obj_copy oc;
	const uint8_t *piece;
	int n = 0;

	if (!q) {
		struct sdfs_hdr reply;

		free(payload);
		proto_reply_init(&reply, h, SDFS_RES_NO_MEM);
		client_conn_reply(c, &reply, NULL);
		return;
	}
	if (bd->copy->unknown) {
		struct sdfs_hdr reply;

		free(q);
		free(payload);
		proto_reply_init(&reply, h, SDFS_RES_UNKNOWN_OP);
		client_conn_reply(c, &reply, NULL);
		return;
	}
	/* Where SRC is, in the map the request was checked against. */
	if (!proto_obj_copy_decode(payload, h->payload_len, bd->cfg.obj_size, &oc, &piece))
		n = ring_place(bd->map->ring, oc.src,
			       oid_copies(oc.src, bd->cfg.copies), ids);
	for (int i = 0; i < n; i++) {
		const struct cmap_node *nd = cmap_find(bd->map, ids[i]);

		if (!nd || nd->state != CMAP_UP)
			continue;
		if (nd->node_id == bd->node_id)
			q->self = 1;
		else
			cmap_node_peer(nd, &q->node[q->n++]);   /* cluster net */
	}
	q->bd = bd;
	q->conn = c;
	q->h = *h;
	q->payload = payload;
	q->arrived_ms = net_now_ms();
	q->work.fn = copy_fn;
	q->work.finish = copy_done;     /* replies from the copy worker */
	client_conn_get(c);
	workq_push(bd->copy->q, &q->work);
}

void copy_counts(struct copy *c, uint64_t *local, uint64_t *fetched)
{
	*local = atomic_load(&c->local);
	*fetched = atomic_load(&c->fetched);
}

int copy_new(struct blockd *bd, int nthreads, struct copy **out)
{
	struct copy *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	/* Test hook: SDFS_BLOCKD_FAULT=no_copy answers OBJ_COPY as a 2.1
	 * daemon does (UNKNOWN_OP): tests/vol/vol_cow_test.c. */
	c->unknown = getenv("SDFS_BLOCKD_FAULT") &&
		     !strcmp(getenv("SDFS_BLOCKD_FAULT"), "no_copy");
	if (c->unknown)
		log_warn("fault injection: OBJ_COPY answered as unknown (a 2.1 daemon)");
	c->timeout_ms = bd->conf.replica_timeout_ms > 0 ? bd->conf.replica_timeout_ms : 1500;
	ret = pool_new(&c->pool);
	if (!ret)
		ret = workq_new(bd->loop, "copy", nthreads, &c->q);
	if (ret) {
		pool_free(c->pool);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

void copy_free(struct copy *c)
{
	if (!c)
		return;
	workq_free(c->q);
	pool_free(c->pool);
	for (size_t i = 0; i < c->nbufs; i++)
		free(c->bufs[i]);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
