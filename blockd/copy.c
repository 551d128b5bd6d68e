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

#include "blockd/backing.h"
#include "blockd/blockd.h"
#include "blockd/copy.h"
#include "blockd/history.h"
#include "common/log.h"
#include "common/net.h"
#include "common/oid.h"
#include "common/proto.h"
#include "common/ring.h"
#include "common/rpc.h"

struct copy {
	struct workq *q;
	int timeout_ms;                 /* the client's bound on a replica */
	atomic_uint_fast64_t local, fetched;
	int unknown;                    /* test hook: answer as a 2.1 daemon */
};

struct copyreq {
	struct work work;
	struct blockd *bd;
	struct conn *conn;
	struct sdfs_hdr h;
	uint8_t *payload;
	int self;                       /* an up holder of SRC here */
	int64_t arrived_ms;             /* net_now_ms() at dispatch */
	int ret;
};

/* Is @src a right source for @dst: volume data of one chunk and one
 * number of copies, another vid's; or (SDFS_COPY_STRIPE) that chunk's
 * stripe of any vid, of a code k + m with m + 1 = @dst's copies? */
static int pair_ok(uint64_t dst, uint64_t src, uint32_t flags)
{
	if (flags & SDFS_COPY_STRIPE)
		return oid_is_vdata(dst) && oid_is_vstripe(src) &&
		       oid_chunk(dst) == oid_chunk(src) && oid_owner(src) != 0 &&
		       oid_owner(src) <= SDFS_VID_MAX && SDFS_COPY_K(flags) >= 1 &&
		       SDFS_COPY_K(flags) <= 31 && SDFS_COPY_M(flags) >= 1 &&
		       SDFS_COPY_M(flags) <= 7 &&
		       (oid_kind(dst) & 0xfu) == SDFS_COPY_M(flags) + 1;
	return oid_is_vdata(dst) && oid_is_vdata(src) && oid_kind(dst) == oid_kind(src) &&
	       oid_chunk(dst) == oid_chunk(src) && oid_owner(dst) != oid_owner(src) &&
	       oid_owner(src) != 0;
}

/* What is left of the client's bound on us (replica_timeout_ms since the
 * request came), less a quarter for our own write. */
static int time_left(const struct copyreq *q)
{
	const struct copy *cp = q->bd->copy;

	return (int)(cp->timeout_ms * 3 / 4 - (net_now_ms() - q->arrived_ms));
}

/*
 * SRC's size and its first and last block under the piece [off, off +
 * len) (what a partly written block keeps of SRC): from this node's
 * copy when it is an up holder, else from SRC's other up holders
 * (backing_src_read), within time_left.
 */
static int src_get(struct copyreq *q, uint64_t tag, uint64_t src, uint64_t off, uint32_t len,
		   uint8_t *head, uint8_t *tail, uint64_t *size)
{
	uint64_t hb = off / OBJSTORE_BLOCK, tb = len ? (off + len - 1) / OBJSTORE_BLOCK : hb;
	int left = time_left(q), ret;

	if (left < q->bd->copy->timeout_ms / 8)
		return -ENOENT;
	ret = backing_tag_read(q->bd, tag, src, q->h.epoch, hb * OBJSTORE_BLOCK, head,
			       OBJSTORE_BLOCK, size, 1, left);
	if (ret || tb == hb)
		return ret;
	left = time_left(q);
	if (left < q->bd->copy->timeout_ms / 8)
		return -ENOENT;
	return backing_tag_read(q->bd, tag, src, q->h.epoch, tb * OBJSTORE_BLOCK, tail,
				OBJSTORE_BLOCK, NULL, 1, left);
}

static void copy_fn(struct work *w)
{
	struct copyreq *q = (struct copyreq *)w;
	struct blockd *bd = q->bd;
	uint32_t osz = bd->cfg.obj_size;
	uint8_t blk[2 * OBJSTORE_BLOCK], *zeros = NULL;
	struct objstore_src sb = { blk, blk + OBJSTORE_BLOCK };
	struct sdfs_obj_copy c;
	const uint8_t *piece;
	uint64_t size = 0, tag;
	struct sdfs_hdr h;
	int ret;

	if (proto_obj_copy_decode(q->payload, q->h.payload_len, osz, &c, &piece) ||
	    !pair_ok(q->h.oid, c.src, c.flags) || q->h.offset > osz ||
	    c.len > osz - q->h.offset) {
		q->ret = -EINVAL;
		return;
	}
	tag = c.flags & SDFS_COPY_STRIPE ?
	      backing_stripe_tag((uint32_t)oid_owner(c.src), SDFS_COPY_K(c.flags),
				 SDFS_COPY_M(c.flags)) : oid_owner(c.src);
	ret = src_get(q, tag, c.src, q->h.offset, c.len, blk, blk + OBJSTORE_BLOCK, &size);
	if (ret) {
		q->ret = ret == -EAGAIN || ret == -ESTALE || ret == -ENOMEM ? ret : -ENOENT;
		return;
	}
	atomic_fetch_add(q->self ? &bd->copy->local : &bd->copy->fetched, 1);
	if (c.flags & SDFS_COPY_ZERO) {
		zeros = calloc(1, c.len ? c.len : 1);
		if (!zeros) {
			q->ret = -ENOMEM;
			return;
		}
		piece = zeros;
	}
	if (size < q->h.offset + c.len)
		size = q->h.offset + c.len;
	/* DST backed by SRC with the piece's blocks in it, as an
	 * OBJ_REPLACE would make it: fences, recovery lock, space check
	 * and all (ops.c); the filler copies the rest (backing.h). */
	h = q->h;
	h.flags &= SDFS_F_SYNC;
	q->ret = ops_put_backed(bd, &h, tag, size, piece, c.len, &sb);
	free(zeros);
	if (q->ret == 0)
		backing_note(bd->backing, q->h.oid, tag);
	log_debug("oid=%016" PRIx64 ": backed by %016" PRIx64 " (%s), %" PRIu32
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
	if (!proto_obj_copy_decode(payload, h->payload_len, bd->cfg.obj_size, &oc, &piece) &&
	    !(oc.flags & SDFS_COPY_STRIPE))
		n = ring_place(bd->map->ring, oc.src,
			       oid_copies(oc.src, bd->cfg.copies), ids);
	for (int i = 0; i < n; i++) {
		const struct cmap_node *nd = cmap_find(bd->map, ids[i]);

		if (!nd || nd->state != CMAP_UP)
			continue;
		if (nd->node_id == bd->node_id)
			q->self = 1;
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
	/* Test hook: SDFS_BLOCKD_FAULT=no_copy answers OBJ_COPY as a 2.1
	 * daemon does (UNKNOWN_OP): tests/vol/vol_cow_test.c. */
	c->unknown = getenv("SDFS_BLOCKD_FAULT") &&
		     !strcmp(getenv("SDFS_BLOCKD_FAULT"), "no_copy");
	if (c->unknown)
		log_warn("fault injection: OBJ_COPY answered as unknown (a 2.1 daemon)");
	c->timeout_ms = bd->conf.replica_timeout_ms > 0 ? bd->conf.replica_timeout_ms : 1500;
	ret = workq_new(bd->loop, "copy", nthreads, &c->q);
	if (ret) {
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
	free(c);
}
