/*
 * strip_ops.c - STRIP_PUT, STRIP_GET, STRIP_STAT, STRIP_COMMIT
 * (strip_ops.h) on the node's strip store.
 */
#include "blockd/strip_ops.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "blockd/blockd.h"
#include "blockd/strip_repair.h"
#include "blockd/stripstore.h"
#include "blockd/vfence.h"
#include "common/log.h"
#include "common/oid.h"
#include "common/proto.h"
#include "common/ring.h"

#define STAT_MAX 256u           /* strip versions listed per oid */

struct stripreq {
	struct work work;
	struct blockd *bd;
	struct conn *conn;
	struct sdfs_hdr h;
	uint8_t *payload;
	struct sdfs_strip st;
	uint8_t *out;
	uint32_t out_len;
	int ret;
};

int strip_is_op(unsigned opcode)
{
	return (opcode >= SDFS_OP_STRIP_PUT && opcode <= SDFS_OP_STRIP_COMMIT) ||
	       opcode == SDFS_OP_STRIP_REPAIR;
}

/* Is this request a volume writer's put or commit of a sealed chunk,
 * checked against the vid's fence? (strip_ops.h) */
static int vol_fenced(const struct stripreq *q)
{
	return q->h.token && oid_is_vstripe(q->h.oid) &&
	       (q->h.opcode == SDFS_OP_STRIP_PUT || q->h.opcode == SDFS_OP_STRIP_COMMIT);
}

static void strip_op(struct stripreq *q);

static void strip_fn(struct work *w)
{
	struct stripreq *q = (struct stripreq *)w;
	uint64_t vid = oid_owner(q->h.oid);

	if (!vol_fenced(q)) {
		strip_op(q);
		return;
	}
	q->ret = vfence_mutate_begin(q->bd->vfence, vid, q->h.token);
	if (q->ret)
		return;
	strip_op(q);
	vfence_mutate_end(q->bd->vfence, vid);
}

static void strip_op(struct stripreq *q)
{
	struct stripstore *ss = q->bd->strips;
	size_t got = 0, n = 0;

	switch (q->h.opcode) {
	case SDFS_OP_STRIP_PUT:
		q->ret = stripstore_put(ss, q->h.oid, &q->st, q->payload + SDFS_STRIP_SIZE);
		break;
	case SDFS_OP_STRIP_GET:
		if (q->h.length > q->bd->cfg.obj_size) {
			q->ret = -EINVAL;
			break;
		}
		q->out = malloc(q->h.length ? q->h.length : 1);
		if (!q->out) {
			q->ret = -ENOMEM;
			break;
		}
		q->ret = stripstore_read(ss, q->h.oid, q->st.s, q->st.version, q->st.tag,
					 q->h.offset, q->out, q->h.length, &got);
		q->out_len = (uint32_t)got;
		break;
	case SDFS_OP_STRIP_STAT: {
		struct sdfs_strip *e = calloc(STAT_MAX, sizeof(*e));

		q->out = malloc(STAT_MAX * SDFS_STRIP_SIZE);
		if (!e || !q->out) {
			free(e);
			q->ret = -ENOMEM;
			break;
		}
		q->ret = stripstore_list(ss, q->h.oid, e, STAT_MAX, &n);
		for (size_t i = 0; i < n; i++)
			proto_strip_encode(&e[i], q->out + i * SDFS_STRIP_SIZE);
		q->out_len = (uint32_t)(n * SDFS_STRIP_SIZE);
		free(e);
		break;
	}
	case SDFS_OP_STRIP_COMMIT: {
		unsigned dropped = 0;

		q->ret = stripstore_commit(ss, q->h.oid, q->st.s, q->st.version, &dropped);
		if (dropped)
			log_debug("oid=%016" PRIx64 " strip=%u: version %016" PRIx64
				  " committed, %u older dropped", q->h.oid, q->st.s,
				  q->st.version, dropped);
		break;
	}
	default:
		q->ret = -EINVAL;
	}
}

static void strip_done(struct work *w)
{
	struct stripreq *q = (struct stripreq *)w;
	struct sdfs_hdr reply;

	if (q->ret == -EPERM || q->ret == -EROFS)
		log_info("oid=%016" PRIx64 " op=%s strip=%u token=%" PRIu32 ": refused, %s "
			 "of vid %" PRIu64, q->h.oid, proto_op_name(q->h.opcode), q->st.s,
			 q->h.token, q->ret == -EPERM ? "below the fence" : "frozen",
			 oid_owner(q->h.oid));
	else if (q->ret == -ESHUTDOWN)
		log_debug("oid=%016" PRIx64 " op=%s: volume fences not yet in step with "
			  "ZooKeeper", q->h.oid, proto_op_name(q->h.opcode));
	else if (q->ret && q->ret != -ENOENT && q->ret != -EBADMSG && q->ret != -EEXIST)
		log_warn("oid=%016" PRIx64 " op=%s strip=%u: %s", q->h.oid,
			 proto_op_name(q->h.opcode), q->st.s, strerror(-q->ret));
	proto_reply_init(&reply, &q->h, proto_res_from_errno(q->ret));
	if (q->ret == 0 && q->out && q->out_len) {
		reply.payload_len = q->out_len;
		client_conn_reply(q->conn, &reply, q->out);
	} else {
		free(q->out);
		client_conn_reply(q->conn, &reply, NULL);
	}
	client_conn_put(q->conn);
	free(q->payload);
	free(q);
}

/* The request's sdfs_strip, checked for its op; 0 or -EINVAL. */
static int strip_req_check(struct blockd *bd, const struct sdfs_hdr *h,
			   const uint8_t *payload, struct sdfs_strip *st)
{
	uint32_t ids[RING_MAX_PLACE];
	int n;

	if (h->opcode == SDFS_OP_STRIP_STAT)
		return h->payload_len ? -EINVAL : 0;
	if (proto_strip_decode(payload, h->payload_len, st))
		return -EINVAL;
	if (h->opcode != SDFS_OP_STRIP_PUT)
		return h->payload_len == SDFS_STRIP_SIZE && st->version ? 0 : -EINVAL;
	if (stripstore_check(bd->strips, st) ||
	    h->payload_len != SDFS_STRIP_SIZE + (uint64_t)st->strip_len)
		return -EINVAL;
	/* Strip s belongs on position s of the stripe's placement in the
	 * request's epoch, which ops_dispatch checked is this node's. */
	n = ring_place_strips(bd->map->ring, h->oid, st->k, st->m, ids);
	if (n != st->k + st->m || ids[st->s] != bd->node_id) {
		log_warn("oid=%016" PRIx64 " strip=%u of %u+%u: not this node's in epoch %"
			 PRIu32 "; refused", h->oid, st->s, st->k, st->m, h->epoch);
		return -EINVAL;
	}
	return 0;
}

void strip_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h,
		    uint8_t *payload)
{
	struct stripreq *q = calloc(1, sizeof(*q));
	struct sdfs_hdr reply;
	int ret = q ? 0 : -ENOMEM;

	if (!ret && !bd->strips)
		ret = -EOPNOTSUPP;
	if (!ret)
		ret = strip_req_check(bd, h, payload, &q->st);
	if (!ret && h->opcode == SDFS_OP_STRIP_REPAIR) {
		/* answered once queued: the rebuild may wait on peers */
		ret = strip_repair_queue(bd, h->oid, &q->st);
		free(q);
		free(payload);
		proto_reply_init(&reply, h, proto_res_from_errno(ret));
		client_conn_reply(c, &reply, NULL);
		return;
	}
	if (ret) {
		free(q);
		free(payload);
		proto_reply_init(&reply, h, proto_res_from_errno(ret));
		client_conn_reply(c, &reply, NULL);
		return;
	}
	q->bd = bd;
	q->conn = c;
	q->h = *h;
	q->payload = payload;
	q->work.fn = strip_fn;
	q->work.finish = strip_done;    /* replies from the worker */
	client_conn_get(c);
	workq_push(bd->io_q, &q->work);
}
