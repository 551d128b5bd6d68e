/*
 * backing.c - backed objects: read-through to the source, the filler,
 * OBJ_FILL (backing.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blockd/backing.h"
#include "blockd/blockd.h"
#include "blockd/history.h"
#include "blockd/strip_recover.h"
#include "common/csum.h"
#include "common/log.h"
#include "common/net.h"
#include "common/oid.h"
#include "common/proto.h"
#include "common/rpc.h"

#define BLK CSUM_BLOCK_SIZE
#define FILL_CHUNK (256u << 10)         /* filled per step */
#define REMOTE_THREADS 4                /* deferred reads, OBJ_FILL */
#define PEER_TIMEOUT_MS 3000            /* the filler's source reads */
#define FILL_WAIT_MS 20000              /* OBJ_FILL answers within this */
#define RETRY_MS 1000                   /* a failed fill waits this long */
#define IDLE_WAIT_MS 50                 /* at most, for busy I/O workers */
#define SCAN_PAGE 1024
#define MAX_DEPTH 8                     /* sources backed by sources */

struct entry {
	uint64_t oid;
	uint64_t tag;
	int busy;                       /* the filler works on it */
	int64_t retry_ms;               /* not before (net_now_ms) */
};

struct backing {
	struct blockd *bd;
	struct pool *pool;
	atomic_uint_fast64_t req_id;
	atomic_uint_fast64_t filled;
	int paused;                     /* test hook: no_fill */

	pthread_mutex_t mu;             /* everything below */
	pthread_cond_t cv;
	struct entry *ents;
	size_t n, cap;
	int scanned, stop;
	struct work *dq_head, *dq_tail; /* backing_defer's queue */
	pthread_t filler;
	pthread_t remote[REMOTE_THREADS];
	int nremote, filler_on;
};

static _Thread_local int depth;         /* backing_read nesting */

/* A client waits replica_timeout_ms for us: a source read for one of
 * its requests keeps within 3/4 of it (as copy.c). */
static int client_timeout_ms(const struct blockd *bd)
{
	int t = bd->conf.replica_timeout_ms > 0 ? bd->conf.replica_timeout_ms : 1500;

	return t * 3 / 4;
}

static uint64_t next_req_id(void *arg)
{
	struct backing *b = arg;

	return atomic_fetch_add(&b->req_id, 1) + 1;
}

uint64_t backing_src(uint64_t dst, uint64_t tag)
{
	if (tag & BACKING_STRIPE)
		return oid_vstripe(backing_tag_vid(tag), oid_chunk(dst));
	return oid_make(oid_kind(dst), backing_tag_vid(tag), oid_chunk(dst));
}

/* ---- the registry of backed objects here ---- */

static void reg_add(struct backing *b, uint64_t oid, uint64_t tag)
{
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->n; i++)
		if (b->ents[i].oid == oid) {
			b->ents[i].tag = tag;
			b->ents[i].retry_ms = 0;
			goto out;
		}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct entry *e = realloc(b->ents, cap * sizeof(*e));

		if (!e) {
			log_err("oid=%016" PRIx64 ": no memory to note a backed object "
				"(filled after a restart, or by OBJ_FILL)", oid);
			goto out;
		}
		b->ents = e;
		b->cap = cap;
	}
	b->ents[b->n++] = (struct entry){ oid, tag, 0, 0 };
out:
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

/* With b->mu held. */
static void reg_del_locked(struct backing *b, uint64_t oid)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->ents[i].oid == oid) {
			b->ents[i] = b->ents[--b->n];
			return;
		}
}

void backing_note(struct backing *b, uint64_t oid, uint64_t tag)
{
	reg_add(b, oid, tag);
}

void backing_counts(struct backing *b, uint64_t *filled, uint64_t *backed)
{
	*filled = atomic_load(&b->filled);
	pthread_mutex_lock(&b->mu);
	*backed = b->n;
	pthread_mutex_unlock(&b->mu);
}

/* ---- reading through ---- */

/* @src's bytes from its up holders other than this node: a raw stat for
 * its size when asked, then an ordinary read (the peer vouches for its
 * copy, checks it, and reads through its own backing). -ENOENT only
 * when every one said it has none; -EAGAIN when the map moves; else
 * the last other error (unreachable, corrupt: try later). */
static int read_peers(struct blockd *bd, const struct cmap *m, const uint32_t *ids,
		      int n, uint64_t src, uint64_t epoch, uint64_t off, void *buf,
		      size_t len, uint64_t *size, int timeout_ms)
{
	struct backing *b = bd->backing;
	int failed = 0, again = 0;

	for (int i = 0; i < n; i++) {
		const struct cmap_node *nd = cmap_find(m, ids[i]);
		struct rpc_call call = { 0 };
		struct cmap_node peer;
		int r = 0;

		if (!nd || nd->node_id == bd->node_id)
			continue;
		call.node = cmap_node_peer(nd, &peer);  /* the cluster net */
		call.req.oid = src;
		call.req.epoch = (uint32_t)epoch;
		if (size) {
			struct sdfs_obj_stat st = { 0 };

			call.req.opcode = SDFS_OP_OBJ_STAT;
			call.req.flags = SDFS_F_RAW;
			rpc_run(b->pool, &call, 1, timeout_ms, next_req_id, b);
			r = rpc_result(&call);
			if (r == 0 && (!call.rpayload || proto_obj_stat_decode(call.rpayload,
					call.reply.payload_len, &st)))
				r = -EPROTO;
			if (r == 0 && st.size == SDFS_SIZE_TOMBSTONE)
				r = -ENOENT;
			if (r == 0)
				*size = st.size;
			rpc_calls_free(&call, 1);
			memset(&call, 0, sizeof(call));
			call.node = &peer;
			call.req.oid = src;
			call.req.epoch = (uint32_t)epoch;
		}
		if (r == 0) {
			call.req.opcode = SDFS_OP_OBJ_READ;
			call.req.offset = off;
			call.req.length = (uint32_t)len;
			call.rbuf = buf;
			call.rbuf_len = len;
			rpc_run(b->pool, &call, 1, timeout_ms, next_req_id, b);
			r = rpc_result(&call);
			if (r == 0 && call.reply.payload_len < len)
				memset((uint8_t *)buf + call.reply.payload_len, 0,
				       len - call.reply.payload_len);
			rpc_calls_free(&call, 1);
		}
		if (r == 0)
			return 0;
		if (r == -ESTALE || r == -EAGAIN)
			again = 1;
		else if (r != -ENOENT) {
			failed = r == -EBADMSG ? -EIO : r;
			log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 ": reading it "
				  "from node %" PRIu32 " through a backed object: %s", src,
				  nd->node_id, strerror(-r));
		}
	}
	return again ? -EAGAIN : failed ? failed : -ENOENT;
}

int backing_src_read(struct blockd *bd, uint64_t src, uint64_t epoch, uint64_t off,
		     void *buf, size_t len, uint64_t *size, int remote, int timeout_ms)
{
	uint32_t ids[RING_MAX_COPIES];
	const struct cmap *m;
	int n, self = 0, others = 0, ret = -ENOENT;

	if (recover_map(bd->recover, epoch, &m))
		return -EAGAIN;
	n = history_up_holders(m, src, bd->cfg.copies, ids);
	for (int i = 0; i < n; i++) {
		if (ids[i] == bd->node_id)
			self = 1;
		else
			others = 1;
	}
	if (self && depth < MAX_DEPTH) {
		size_t got = 0;
		uint64_t tag;

		ret = recover_ensure(bd->recover, src, epoch);
		if (!ret && size)
			ret = objstore_backing(bd->store, src, &tag, size);
		if (!ret) {
			depth++;
			ret = backing_read(bd, src, epoch, off, buf, len, &got, 0);
			depth--;
		}
		if (!ret) {
			memset((uint8_t *)buf + got, 0, len - got);
			return 0;
		}
		if (ret == -EBADMSG)
			log_err("node=%" PRIu32 " oid=%016" PRIx64 ": checksum mismatch in "
				"local replica; reading a backed object's source from a "
				"peer instead", bd->node_id, src);
		if (ret == -EREMOTE && !remote)
			return ret;
	}
	if (!others)
		return ret == -EREMOTE ? -ENOENT : ret;
	if (!remote)
		return -EREMOTE;
	int pr = read_peers(bd, m, ids, n, src, epoch, off, buf, len, size, timeout_ms);

	/* gone only if gone here too */
	return pr == -ENOENT && self && ret != -ENOENT && ret != -EREMOTE ? ret : pr;
}

int backing_tag_read(struct blockd *bd, uint64_t tag, uint64_t src, uint64_t epoch,
		     uint64_t off, void *buf, size_t len, uint64_t *size, int remote,
		     int timeout_ms)
{
	int ret;

	if (!(tag & BACKING_STRIPE))
		return backing_src_read(bd, src, epoch, off, buf, len, size, remote, timeout_ms);
	/* A stripe's strips are on k + m nodes: peers (or this node's I/O
	 * workers, over the network), so never from an I/O worker. */
	if (!remote)
		return -EREMOTE;
	ret = strip_recover_read(bd->strip_rec, src, (unsigned)(tag >> 40) & 0x1fu,
				 (unsigned)(tag >> 32) & 0x7u, epoch, off, buf, len, size,
				 timeout_ms);
	if (ret == -ENODATA) {
		log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 ": fewer than k "
			  "strips readable for a backed object's read-through", src);
		ret = -EIO;
	}
	return ret;
}

int backing_read(struct blockd *bd, uint64_t oid, uint64_t epoch, uint64_t off,
		 void *buf, size_t len, size_t *got, int remote)
{
	size_t nb = len ? (off + len - 1) / BLK - off / BLK + 1 : 0;
	uint8_t *absent = malloc(nb + 1);
	int ret = -ENOMEM;

	if (!absent)
		return ret;
	for (int attempt = 0; attempt < 2; attempt++) {
		uint64_t lo, hi, b0 = off / BLK;
		size_t fa = nb, la = 0;
		uint64_t tag = 0;
		uint8_t *tmp;

		*got = 0;
		ret = objstore_read_map(bd->store, oid, off, buf, len, got, &tag, absent);
		if (ret || !tag || !*got)
			break;
		for (size_t i = 0; i < (off + *got - 1) / BLK - b0 + 1; i++)
			if (absent[i]) {
				if (fa == nb)
					fa = i;
				la = i;
			}
		if (fa == nb)
			break;
		lo = (b0 + fa) * BLK;
		hi = (b0 + la + 1) * BLK;
		tmp = malloc(hi - lo);
		if (!tmp) {
			ret = -ENOMEM;
			break;
		}
		ret = backing_tag_read(bd, tag, backing_src(oid, tag), epoch, lo, tmp, hi - lo,
				       NULL, remote, client_timeout_ms(bd));
		if (ret == 0) {
			for (size_t i = fa; i <= la; i++) {
				uint64_t s = (b0 + i) * BLK, e = s + BLK;

				if (!absent[i])
					continue;
				if (s < off)
					s = off;
				if (e > off + *got)
					e = off + *got;
				memcpy((uint8_t *)buf + (s - off), tmp + (s - lo), e - s);
			}
		}
		free(tmp);
		if (ret != -ENOENT)
			break;
		/* Source gone: filled and unbacked meanwhile (look again),
		 * or this copy is bad. */
		if (attempt == 1) {
			log_err("node=%" PRIu32 " oid=%016" PRIx64 ": the source %016" PRIx64
				" of this backed copy is gone: the copy is bad", bd->node_id,
				oid, backing_src(oid, tag));
			ret = -EBADMSG;
		}
	}
	if (ret) {
		memset(buf, 0, len);
		*got = 0;
	}
	free(absent);
	return ret;
}

int backing_src_blocks(struct blockd *bd, uint64_t oid, uint64_t epoch, uint64_t off,
		       size_t len, uint8_t *head, uint8_t *tail, int remote)
{
	uint64_t hb = off / BLK, tb = len ? (off + len - 1) / BLK : hb, src;
	uint64_t tag = 0;
	int ret;

	ret = objstore_backing(bd->store, oid, &tag, NULL);
	if (ret || !tag)
		return ret == -ENOENT || !tag ? 1 : ret;
	src = backing_src(oid, tag);
	ret = backing_tag_read(bd, tag, src, epoch, hb * BLK, head, BLK, NULL, remote,
			       client_timeout_ms(bd));
	if (!ret && tb != hb)
		ret = backing_tag_read(bd, tag, src, epoch, tb * BLK, tail, BLK, NULL, remote,
				       client_timeout_ms(bd));
	else if (!ret)
		memcpy(tail, head, BLK);
	if (ret == -ENOENT) {
		log_err("node=%" PRIu32 " oid=%016" PRIx64 ": the source %016" PRIx64
			" of this backed copy is gone: the copy is bad", bd->node_id, oid, src);
		ret = -EBADMSG;
	}
	return ret;
}

/* ---- filling ---- */

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Client I/O first: wait (a little) while the I/O workers have work,
 * and keep to sdfs.conf's fill_mbps (default BACKING_FILL_MBPS). */
static void throttle(struct backing *b, size_t bytes)
{
	int64_t t0 = net_now_ms();

	int mbps = b->bd->conf.fill_mbps > 0 ? b->bd->conf.fill_mbps : BACKING_FILL_MBPS;

	sleep_ms((int64_t)bytes * 1000 / ((int64_t)mbps << 20));
	while (workq_depth(b->bd->io_q) > 0 && net_now_ms() - t0 < IDLE_WAIT_MS)
		sleep_ms(2);
}

/*
 * Backed copy @oid of @tag whose source is gone everywhere: a bad copy.
 * Rewrite it whole from another up holder's copy of the same version
 * (a raw read: its holder reads through its own backing, or has none),
 * as recovery would, under the object's lock, and only if this copy's
 * version is still that one. 0, or -errno (try later).
 */
static int repair(struct backing *b, uint64_t oid, uint64_t tag, uint64_t epoch)
{
	struct blockd *bd = b->bd;
	uint32_t ids[RING_MAX_COPIES];
	const struct cmap *m;
	int n, ret = -ENODATA;

	if (recover_map(bd->recover, epoch, &m))
		return -EAGAIN;
	n = history_up_holders(m, oid, bd->cfg.copies, ids);
	for (int i = 0; i < n && ret; i++) {
		const struct cmap_node *nd = cmap_find(m, ids[i]);
		struct sdfs_obj_stat st = { 0 };
		struct rpc_call call = { 0 };
		uint64_t size, version = 0;
		struct cmap_node peer;
		uint64_t now_tag = 0;
		int r;

		if (!nd || nd->node_id == bd->node_id)
			continue;
		call.node = cmap_node_peer(nd, &peer);
		call.req.opcode = SDFS_OP_OBJ_STAT;
		call.req.flags = SDFS_F_RAW;
		call.req.oid = oid;
		call.req.epoch = (uint32_t)epoch;
		rpc_run(b->pool, &call, 1, PEER_TIMEOUT_MS, next_req_id, b);
		r = rpc_result(&call);
		if (r == 0 && (!call.rpayload || proto_obj_stat_decode(call.rpayload,
				call.reply.payload_len, &st) || st.size == SDFS_SIZE_TOMBSTONE))
			r = -ENOENT;
		rpc_calls_free(&call, 1);
		if (r)
			continue;
		memset(&call, 0, sizeof(call));
		call.node = &peer;
		call.req.opcode = SDFS_OP_OBJ_READ;
		call.req.flags = SDFS_F_RAW;
		call.req.oid = oid;
		call.req.length = bd->cfg.obj_size;
		call.req.epoch = (uint32_t)epoch;
		rpc_run(b->pool, &call, 1, PEER_TIMEOUT_MS, next_req_id, b);
		r = rpc_result(&call);
		if (r == 0 && !recover_mutate_begin(bd->recover, oid, epoch, 0)) {
			if (objstore_head(bd->store, oid, &size, &version, NULL) == 0 &&
			    version == st.epoch &&
			    objstore_backing(bd->store, oid, &now_tag, NULL) == 0 && now_tag == tag)
				ret = objstore_replace(bd->store, oid, call.rpayload,
						       call.reply.payload_len, version);
			else
				ret = -EAGAIN;
			recover_mutate_end(bd->recover, oid, epoch, 0);
		}
		rpc_calls_free(&call, 1);
	}
	if (ret == 0)
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": backed copy whose source "
			 "is gone rewritten from a peer's copy", bd->node_id, oid);
	return ret;
}

/* Fill backed object @oid of @tag and end its backing: 0 (or -ESTALE /
 * -ENOENT: not backed by it any more), else -errno (try later). */
static int fill_one(struct backing *b, uint64_t oid, uint64_t tag, int slow)
{
	struct blockd *bd = b->bd;
	uint64_t size = 0, epoch = member_epoch(bd), src = backing_src(oid, tag);
	uint64_t now_tag = 0;
	uint8_t *buf;
	int ret;

	ret = objstore_backing(bd->store, oid, &now_tag, &size);
	if (ret || now_tag != tag)
		return ret ? ret : -ESTALE;
	buf = malloc(FILL_CHUNK);
	if (!buf)
		return -ENOMEM;
	size = (size + BLK - 1) / BLK * BLK;
	for (uint64_t off = 0; off < size && !ret; off += FILL_CHUNK) {
		size_t n = size - off < FILL_CHUNK ? size - off : FILL_CHUNK;

		ret = backing_tag_read(bd, tag, src, epoch, off, buf, n, NULL, 1,
				       PEER_TIMEOUT_MS);
		if (ret == -ENOENT) {
			log_every(LOG_EVERY_MS, LOG_ERR, "node=%" PRIu32 " oid=%016" PRIx64
				  ": the source %016" PRIx64 " of this backed copy is gone: "
				  "the copy is bad; rewriting it from a peer's", bd->node_id,
				  oid, src);
			free(buf);
			ret = repair(b, oid, tag, epoch);
			return ret ? -EIO : 0;  /* not done: kept, tried again */
		}
		if (!ret)
			ret = objstore_fill(bd->store, oid, tag, off, buf, n);
		if (!ret && slow)
			throttle(b, n);
	}
	if (!ret)
		ret = objstore_unback(bd->store, oid, tag);
	free(buf);
	if (!ret) {
		atomic_fetch_add(&b->filled, 1);
		log_debug("oid=%016" PRIx64 ": filled from %016" PRIx64, oid, src);
	}
	return ret;
}

static int done_ret(int ret)
{
	return ret == 0 || ret == -ESTALE || ret == -ENOENT;
}

/* Every backed volume object of the store into the registry. */
static void scan(struct backing *b)
{
	uint64_t *oids = malloc(SCAN_PAGE * sizeof(*oids)), after = 0;
	size_t n = 0, found = 0;
	int first = 1;

	if (!oids)
		return;
	do {
		if (objstore_list(b->bd->store, after, first, oids, SCAN_PAGE, &n))
			break;
		for (size_t i = 0; i < n; i++) {
			uint64_t tag = 0;

			if (oid_is_vdata(oids[i]) &&
			    objstore_backing(b->bd->store, oids[i], &tag, NULL) == 0 && tag) {
				reg_add(b, oids[i], tag);
				found++;
			}
		}
		if (n)
			after = oids[n - 1];
		first = 0;
	} while (n == SCAN_PAGE && !b->stop);
	free(oids);
	if (found)
		log_info("node=%" PRIu32 ": %zu backed objects to fill (from before a "
			 "restart)", b->bd->node_id, found);
}

static void *filler_main(void *arg)
{
	struct backing *b = arg;

	scan(b);
	pthread_mutex_lock(&b->mu);
	b->scanned = 1;
	pthread_cond_broadcast(&b->cv);
	while (!b->stop) {
		int64_t now = net_now_ms();
		struct entry *e = NULL;
		uint64_t oid, tag;
		int ret;

		for (size_t i = 0; !b->paused && i < b->n && !e; i++)
			if (!b->ents[i].busy && b->ents[i].retry_ms <= now)
				e = &b->ents[i];
		if (!e) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&b->cv, &b->mu, &ts);
			continue;
		}
		e->busy = 1;
		oid = e->oid;
		tag = e->tag;
		pthread_mutex_unlock(&b->mu);
		ret = fill_one(b, oid, tag, 1);
		pthread_mutex_lock(&b->mu);
		for (size_t i = 0; i < b->n; i++) {
			if (b->ents[i].oid != oid)
				continue;
			b->ents[i].busy = 0;
			if (done_ret(ret) && b->ents[i].tag == tag) {
				reg_del_locked(b, oid);
			} else if (!done_ret(ret)) {
				b->ents[i].retry_ms = net_now_ms() + RETRY_MS;
				log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 ": filling "
					  "the backed object: %s (tried again)", oid,
					  strerror(-ret));
			}
			break;
		}
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* ---- the remote threads: deferred requests and OBJ_FILL ---- */

void backing_defer(struct backing *b, struct work *w)
{
	w->next = NULL;
	pthread_mutex_lock(&b->mu);
	if (b->dq_tail)
		b->dq_tail->next = w;
	else
		b->dq_head = w;
	b->dq_tail = w;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

static void *remote_main(void *arg)
{
	struct backing *b = arg;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		struct work *w = b->dq_head;

		if (!w) {
			if (b->stop)
				break;
			pthread_cond_wait(&b->cv, &b->mu);
			continue;
		}
		b->dq_head = w->next;
		if (!b->dq_head)
			b->dq_tail = NULL;
		pthread_mutex_unlock(&b->mu);
		w->fn(w);
		w->finish(w);
		pthread_mutex_lock(&b->mu);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

struct fillreq {
	struct work work;
	struct blockd *bd;
	struct conn *conn;
	struct sdfs_hdr h;
	int ret;
};

/* Fill now everything here backed by an object or a stripe of vid
 * h.offset (h.oid nonzero, 2.6: only that object). */
static void fillreq_fn(struct work *w)
{
	struct fillreq *q = (struct fillreq *)w;
	struct backing *b = q->bd->backing;
	int64_t t0 = net_now_ms();
	uint64_t vid = q->h.offset;
	uint64_t *oids = NULL, *tags = NULL;
	size_t n = 0;

	if (vid == 0 || vid > SDFS_VID_MAX) {
		q->ret = -EINVAL;
		return;
	}
	pthread_mutex_lock(&b->mu);
	while (!b->scanned && !b->stop && net_now_ms() - t0 < FILL_WAIT_MS) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&b->cv, &b->mu, &ts);
	}
	if (!b->scanned) {
		pthread_mutex_unlock(&b->mu);
		q->ret = -EAGAIN;
		return;
	}
	/* backed by an object of that vid's or by one of its stripes */
	oids = malloc((b->n + 1) * sizeof(*oids));
	tags = malloc((b->n + 1) * sizeof(*tags));
	for (size_t i = 0; oids && tags && i < b->n; i++)
		if (backing_tag_vid(b->ents[i].tag) == vid &&
		    (!q->h.oid || b->ents[i].oid == q->h.oid)) {
			tags[n] = b->ents[i].tag;
			oids[n++] = b->ents[i].oid;
		}
	pthread_mutex_unlock(&b->mu);
	if (!oids || !tags) {
		free(oids);
		free(tags);
		q->ret = -ENOMEM;
		return;
	}
	q->ret = 0;
	for (size_t i = 0; i < n; i++) {
		int ret = net_now_ms() - t0 < FILL_WAIT_MS ?
			  fill_one(b, oids[i], tags[i], 0) : -EAGAIN;

		if (done_ret(ret)) {
			pthread_mutex_lock(&b->mu);
			for (size_t k = 0; k < b->n; k++)
				if (b->ents[k].oid == oids[i] && b->ents[k].tag == tags[i] &&
				    !b->ents[k].busy)
					reg_del_locked(b, oids[i]);
			pthread_mutex_unlock(&b->mu);
		} else {
			log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": OBJ_FILL of vid %"
				 PRIu64 ": %s", q->bd->node_id, oids[i], vid, strerror(-ret));
			q->ret = -EAGAIN;
		}
	}
	free(oids);
	free(tags);
	if (n)
		log_info("node=%" PRIu32 ": OBJ_FILL vid=%" PRIu64 ": %zu backed objects "
			 "filled in %" PRId64 " ms: %s", q->bd->node_id, vid, n,
			 net_now_ms() - t0, q->ret ? strerror(-q->ret) : "done");
}

static void fillreq_finish(struct work *w)
{
	struct fillreq *q = (struct fillreq *)w;
	struct sdfs_hdr reply;

	proto_reply_init(&reply, &q->h, proto_res_from_errno(q->ret));
	client_conn_reply(q->conn, &reply, NULL);
	client_conn_put(q->conn);
	free(q);
}

void backing_fill_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h)
{
	struct fillreq *q = calloc(1, sizeof(*q));

	if (!q) {
		struct sdfs_hdr reply;

		proto_reply_init(&reply, h, SDFS_RES_NO_MEM);
		client_conn_reply(c, &reply, NULL);
		return;
	}
	q->bd = bd;
	q->conn = c;
	q->h = *h;
	q->work.fn = fillreq_fn;
	q->work.finish = fillreq_finish;
	client_conn_get(c);
	backing_defer(bd->backing, &q->work);
}

/* ---- life ---- */

int backing_new(struct blockd *bd, struct backing **out)
{
	struct backing *b = calloc(1, sizeof(*b));
	const char *f = getenv("SDFS_BLOCKD_FAULT");
	int ret;

	if (!b)
		return -ENOMEM;
	b->bd = bd;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	/* Test hook: SDFS_BLOCKD_FAULT=no_fill keeps backed objects backed
	 * (tests/vol/vol_cow_test.c); OBJ_FILL still fills. */
	b->paused = f && !strcmp(f, "no_fill");
	if (b->paused)
		log_warn("fault injection: the filler of backed objects is stopped");
	ret = pool_new(&b->pool);
	if (ret)
		goto fail;
	bd->backing = b;
	for (int i = 0; i < REMOTE_THREADS; i++) {
		ret = -pthread_create(&b->remote[i], NULL, remote_main, b);
		if (ret)
			goto fail_threads;
		b->nremote++;
	}
	ret = -pthread_create(&b->filler, NULL, filler_main, b);
	if (ret)
		goto fail_threads;
	b->filler_on = 1;
	*out = b;
	return 0;
fail_threads:
	backing_free(b);
	bd->backing = NULL;
	return ret;
fail:
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
	return ret;
}

void backing_free(struct backing *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	b->stop = 1;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	if (b->filler_on)
		pthread_join(b->filler, NULL);
	for (int i = 0; i < b->nremote; i++)
		pthread_join(b->remote[i], NULL);
	pool_free(b->pool);
	free(b->ents);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
}
