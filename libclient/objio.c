/*
 * objio.c - replicated objects: writes to every up replica in
 * parallel (a volume's or the mds's objects: one fenced writer) or
 * through the object's primary (shared objects: file data, raw;
 * blockd/order.h), reads from one with failover, repair of a corrupt
 * replica. A read (or stat) asks the next replica as well when one has
 * not answered in read_timeout_ms, and keeps the first good answer.
 *
 * Every request carries the epoch of the map it was placed with. A
 * daemon that knows a newer map answers OLD_EPOCH, and the call re-reads
 * the map and starts over; so does a call that could not reach a
 * replica (the map will mark that node down within a session timeout).
 * Mutations are idempotent (same bytes at the same offset), so redoing
 * one is safe. Calls give up at the handle's timeout.
 *
 * One try of a mutation waits at most the replica timeout (1.5 s) for
 * its replicas: one that did not answer is reported unresponsive
 * (coord_suspect.h), and the call re-reads the map until it has moved
 * past the try's epoch (the node is then down, or answered OLD_EPOCH) or
 * a few seconds passed, and tries again. So a hung block daemon stalls a
 * write for about the bound plus a lease, never the handle's timeout
 * (docs/recovery.md, "Unresponsive nodes"). Replicas gone from the try
 * (refused, reset, not serving) count against the report limit, which
 * sees a dead node only once the map has it down; a try of several
 * replicas that none answered reports nobody.
 *
 * Every mutation carries the handle's fencing token (the *_tok calls: the
 * caller's, a volume writer's). A replica that answers FENCED (-EPERM)
 * has been told a newer writer took over, one that answers READONLY
 * (-EROFS) that the volume state was frozen: the call fails at once
 * with that error, never retried, whatever the other replicas said (those that applied it hold a change nobody will
 * acknowledge, which the new writer overwrites or ignores).
 *
 * Object capabilities (capcache.c, docs/security.md): once a block
 * daemon asked for them, every op on a file's or volume's object
 * carries the handle's cap for it in front of its payload
 * (SDFS_F_CAP). A refusal (SDFS_RES_CAP, -EKEYREJECTED: none, expired,
 * too few rights) makes the call ask the mds for a new one and go
 * again, once; a second refusal is the caller's -EACCES.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/coord_suspect.h"
#include "common/log.h"
#include "common/net.h"
#include "common/objcap.h"
#include "common/oid.h"
#include "common/proto.h"
#include "libclient/client.h"
#include "common/rpc.h"

struct placement {
	struct map_ref *m;
	unsigned copies;
	uint32_t obj_size;
	size_t n;                                       /* placed */
	const struct cmap_node *node[RING_MAX_COPIES];  /* placement order */
	size_t nup;
	const struct cmap_node *up[RING_MAX_COPIES];    /* those that are up */
};

static uint64_t next_req_id(void *arg)
{
	return client_req_id(arg);
}

/* Place @oid on the current map. Holds a map reference: placement_done. */
static int placement_get(struct sdfs *s, uint64_t oid, struct placement *p)
{
	uint32_t ids[RING_MAX_COPIES];
	int err = 0, n;

	memset(p, 0, sizeof(*p));
	p->m = client_map_get(s, &err);
	if (!p->m)
		return err;
	pthread_mutex_lock(&s->lock);
	p->copies = oid_copies(oid, s->cfg.copies);
	p->obj_size = s->cfg.obj_size;
	pthread_mutex_unlock(&s->lock);
	n = ring_place(p->m->map->ring, oid, p->copies, ids);
	if (n < 0) {
		client_map_put(p->m);
		return n;
	}
	for (int i = 0; i < n; i++) {
		const struct cmap_node *nd = cmap_find(p->m->map, ids[i]);

		p->node[p->n++] = nd;
		if (nd->state == CMAP_UP)
			p->up[p->nup++] = nd;
	}
	return 0;
}

/*
 * Would a replica refuse this mutation for space? A write of data (not
 * of the mds's objects, nor a file's truncate by the mds carrying its
 * token, nor a removal or a flush: blockd/ops.c's space_refuses) when an
 * up replica is full in the map: refused before anything is sent, so
 * that no replica applies what the caller is told failed (issue 14).
 */
static int placement_full(const struct placement *p, uint64_t oid,
			  const struct sdfs_hdr *tmpl, uint32_t token)
{
	unsigned kind = oid_kind(oid);

	if ((tmpl->opcode != SDFS_OP_OBJ_WRITE && tmpl->opcode != SDFS_OP_OBJ_REPLACE &&
	     tmpl->opcode != SDFS_OP_OBJ_CREATE && tmpl->opcode != SDFS_OP_OBJ_COPY) ||
	    kind == OID_KIND_MDS ||
	    (oid_is_file(oid) && token))
		return 0;
	for (size_t i = 0; i < p->nup; i++)
		if (p->up[i]->full)
			return 1;
	return 0;
}

static void placement_done(struct placement *p)
{
	client_map_put(p->m);
	p->m = NULL;
}

static int is_epoch_miss(int err)
{
	return err == -ESTALE || err == -EAGAIN;
}

void sdfs_set_fence_token(struct sdfs *s, uint32_t token)
{
	atomic_store(&s->fence_token, token);
}

enum mut_kind { MUT_ALL_OK, MUT_NOENT_OK };

/*
 * Send one mutation carrying @token to every up replica of @oid until
 * all acknowledge under one epoch. With MUT_NOENT_OK a replica's ENOENT counts as done,
 * and -ENOENT is returned only if every replica said so.
 */
/*
 * A volume write in flight while its vid froze (a snapshot) that some
 * replicas took and others refused (READONLY) would leave the frozen
 * object's replicas different. Finish it on the refusing ones: a block
 * daemon takes it if our token passed the fence the vid had before it
 * froze (SDFS_RES_READONLY in the request's result; docs/volumes.md).
 * The caller still gets -EROFS and redoes the write in the new state.
 */
static void complete_split(struct sdfs *s, struct rpc_call *calls, const size_t *idx,
			   size_t n, uint64_t oid, int timeout_ms)
{
	struct rpc_call c[RING_MAX_COPIES];

	memset(c, 0, n * sizeof(c[0]));
	for (size_t k = 0; k < n; k++) {
		c[k].node = calls[idx[k]].node;
		c[k].req = calls[idx[k]].req;
		c[k].req.result = SDFS_RES_READONLY;
		c[k].payload = calls[idx[k]].payload;
	}
	rpc_run(s->pool, c, n, timeout_ms > 0 ? timeout_ms : 1, next_req_id, s);
	for (size_t k = 0; k < n; k++) {
		int r = rpc_result(&c[k]);

		if (r && r != -ENOENT)
			log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": finishing a write the "
				 "freeze split: %s (recovery settles it)",
				 c[k].node->node_id, oid, strerror(-r));
	}
	rpc_calls_free(c, n);
}

/* How long a call waits, after reporting a replica, for the map to drop
 * it (reconciliation takes up to a lease and a half without the node's
 * own ack) before it tries again anyway. */
#define SUSPECT_WAIT_MS 3000
#define SUSPECT_POLL_MS 50

/* One try's wait on the replicas: the handle's bound; on a primary
 * forwarding to the others (blockd/order.c, which waits as long for
 * them and then answers), a second more, so that the client does not
 * give up on a primary that is still waiting for a replica; never past
 * @left. */
static int try_bound(struct sdfs *s, int via_primary, int64_t left)
{
	int64_t b = atomic_load(&s->replica_timeout_ms);

	if (via_primary)
		b += 1000;
	return (int)(b < left ? b : left);
}

/* Re-read the map: has it moved past @epoch? */
static int map_moved(struct sdfs *s, uint64_t epoch)
{
	struct map_ref *m;
	int err = 0, moved;

	client_map_refresh(s);
	m = client_map_get(s, &err);
	if (!m)
		return 0;
	moved = m->map->epoch > epoch;
	client_map_put(m);
	return moved;
}

/*
 * The nodes @ids did not answer a try in @epoch within its bound, for
 * an object of @copies copies. Unless the map has moved on already (a
 * stopped node's session expired: retry at once), report the first
 * @nreport of them (as far as the limit lets: coord_suspect_report) and
 * poll the map until it moves (the reconcilers mark them down, or a
 * dead replica's session expires), SUSPECT_WAIT_MS or @deadline.
 */
static void suspects_await(struct sdfs *s, uint64_t epoch, const uint32_t *ids,
			   size_t n, size_t nreport, unsigned copies, int64_t deadline)
{
	int64_t until = net_now_ms() + SUSPECT_WAIT_MS;
	char who[96], host[64] = "?";

	if (map_moved(s, epoch))
		return;
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	snprintf(who, sizeof(who), "client:%s:%ld", host, (long)getpid());
	for (size_t i = 0; i < n; i++) {
		if (i >= nreport) {
			log_every(LOG_EVERY_MS, LOG_WARNING, "node=%" PRIu32 " epoch=%"
				  PRIu64 ": no answer; not reported, as the try's "
				  "other replicas are gone (refused, not serving) or "
				  "silent too: waiting for the map", ids[i], epoch);
			continue;
		}
		int r = coord_suspect_report(s->coord, ids[i], epoch, who, copies);

		if (r == 0)
			log_warn("node=%" PRIu32 " epoch=%" PRIu64 ": no answer within %d ms; "
				 "reported unresponsive", ids[i], epoch,
				 atomic_load(&s->replica_timeout_ms));
		else if (r == -EBUSY)
			log_every(LOG_EVERY_MS, LOG_WARNING, "node=%" PRIu32 " epoch=%"
				  PRIu64 ": no answer, but copies - 1 nodes are reported "
				  "or down already: not reported", ids[i], epoch);
		else if (r != -EEXIST)
			log_warn("node=%" PRIu32 ": cannot report it unresponsive: %s",
				 ids[i], strerror(-r));
	}
	if (until > deadline)
		until = deadline;
	while (net_now_ms() < until) {
		usleep(SUSPECT_POLL_MS * 1000);
		if (map_moved(s, epoch))
			return;
	}
}

/*
 * What a mutation's tries met, for the one line it logs when it gives
 * up: a retry loop's own lines are held back (LOG_EVERY_MS), so without
 * it a call that fails after its whole deadline says nothing of why.
 */
struct try_trace {
	int64_t start;
	int tries;
	uint64_t epoch0, epoch;
	char last[200];                 /* the last retried try, per node */
};

static void trace_try(struct try_trace *t, uint64_t epoch, const struct rpc_call *calls,
		      size_t n)
{
	size_t o = 0;

	if (!t->tries++)
		t->epoch0 = epoch;
	t->epoch = epoch;
	t->last[0] = '\0';
	for (size_t i = 0; i < n && o < sizeof(t->last); i++) {
		int r = rpc_result(&calls[i]);
		int w = snprintf(t->last + o, sizeof(t->last) - o, "%snode=%" PRIu32 ": %s",
				 i ? ", " : "", calls[i].node->node_id,
				 r ? strerror(-r) : "ok");

		o += w > 0 ? (size_t)w : 0;
	}
}

static int trace_give_up(const struct try_trace *t, const struct sdfs_hdr *tmpl,
			 uint64_t oid, int ret)
{
	log_warn("oid=%016" PRIx64 " op=%s: failed after %d tries in %" PRId64 " ms "
		 "(epoch %" PRIu64 "..%" PRIu64 "): %s; last retried try: %s", oid,
		 proto_op_name(tmpl->opcode), t->tries, net_now_ms() - t->start, t->epoch0,
		 t->epoch, strerror(-ret), t->last[0] ? t->last : "no replica up");
	return ret;
}

static int replicated_try(struct sdfs *s, uint64_t oid, const struct sdfs_hdr *tmpl,
			  const void *payload, enum mut_kind kind, uint32_t token)
{
	int64_t deadline = net_now_ms() + s->timeout_ms;
	int last = -ETIMEDOUT, done_before = 0;
	struct try_trace tt = { .start = net_now_ms() };

	for (int attempt = 0;; attempt++) {
		struct rpc_call calls[RING_MAX_COPIES];
		struct placement p;
		int ret = placement_get(s, oid, &p);
		int64_t left = deadline - net_now_ms();

		if (ret)
			return ret;
		if (placement_full(&p, oid, tmpl, token)) {
			placement_done(&p);
			return -ENOSPC;
		}
		if (left <= 0) {
			placement_done(&p);
			return trace_give_up(&tt, tmpl, oid, last);
		}
		if (p.nup == 0) {
			last = p.n ? -EIO : -ENOSPC;   /* all replicas down / no nodes */
			placement_done(&p);
			client_map_refresh(s);
			client_backoff(attempt, deadline);
			continue;
		}
		/* A shared object's primary sends a mutation on to every
		 * replica in its order (blockd/order.h): one call, one sum of
		 * answers. A flush changes nothing and is not passed on: each
		 * replica makes its own copy durable, so it goes to all. */
		size_t ncalls = oid_is_ordered(oid) && tmpl->opcode != SDFS_OP_OBJ_FLUSH
				? 1 : p.nup;

		memset(calls, 0, ncalls * sizeof(calls[0]));
		for (size_t i = 0; i < ncalls; i++) {
			calls[i].node = p.up[i];
			calls[i].req = *tmpl;
			calls[i].req.oid = oid;
			calls[i].req.epoch = (uint32_t)p.m->map->epoch;
			calls[i].req.token = token;
			calls[i].payload = payload;
		}
		rpc_run(s->pool, calls, ncalls,
			try_bound(s, ncalls == 1 && oid_is_ordered(oid), left),
			next_req_id, s);

		int ok = 0, noent = 0, retry = 0, fatal = 0, fenced = 0, nperm = 0;
		size_t rofs[RING_MAX_COPIES], nrofs = 0, nsus = 0, nheard = 0, ngone = 0;
		uint32_t sus[RING_MAX_COPIES];
		uint64_t epoch = p.m->map->epoch;
		/* The limit counts in the cluster's copies at most: what
		 * every object has unless a volume chose fewer. */
		pthread_mutex_lock(&s->lock);
		unsigned copies = p.copies < s->cfg.copies ? p.copies : s->cfg.copies;
		pthread_mutex_unlock(&s->lock);
		for (size_t i = 0; i < ncalls; i++) {
			int r = rpc_result(&calls[i]);

			/* Silent past the bound: a suspect. Refused, reset (a
			 * dead process: the map drops it within a session
			 * timeout) or "not serving": gone for this try. */
			if (calls[i].ret == -ETIMEDOUT)
				sus[nsus++] = p.up[i]->node_id;
			else if (calls[i].ret || r == -ESHUTDOWN)
				ngone++;
			nheard += calls[i].ret == 0;

			/* The primary's try applied it somewhere: a retried
			 * removal that then finds nothing still removed it. */
			if (ncalls == 1 && calls[i].ret == 0 && r && calls[i].reply.length)
				done_before = 1;

			if ((r == -EPERM || r == -EROFS) && calls[i].ret == 0) {
				fenced = fenced == -EROFS ? fenced : r;  /* FENCED, READONLY */
				if (r == -EROFS)
					rofs[nrofs++] = i;
				else
					nperm++;
			} else if (r == 0)
				ok++;
			else if (r == -ENOENT && kind == MUT_NOENT_OK)
				noent++;
			else if (is_epoch_miss(r) || rpc_is_transport(r) || r == -ENODATA) {
				if (rpc_is_transport(r))
					log_every(LOG_EVERY_MS, LOG_WARNING, "node=%" PRIu32
						  " oid=%016" PRIx64 ": %s; retrying",
						  p.up[i]->node_id, oid, strerror(-r));
				retry = 1;
				last = rpc_is_transport(r) || r == -ENODATA ? -EIO : last;
			} else if (!fatal)
				fatal = r;
		}
		if (nrofs && !nperm && ok + noent > 0)
			complete_split(s, calls, rofs, nrofs, oid, try_bound(s, 0, left));
		if (retry)
			trace_try(&tt, epoch, calls, ncalls);
		rpc_calls_free(calls, ncalls);
		placement_done(&p);
		if (fenced == -EPERM)
			log_info("oid=%016" PRIx64 " token=%" PRIu32 ": fenced: a newer "
				 "writer took over", oid, token);
		if (fenced)
			return fenced;
		if (fatal)
			return fatal;
		/* A retried removal finds what its first try removed. */
		if (!retry)
			return ok == 0 && noent && !done_before ? -ENOENT : 0;
		done_before |= ok > 0;
		if (nsus && nsus == ncalls && ncalls > 1) {
			/* No replica answered: the common factor is us (cut
			 * off, or too loaded to hear them), not them. */
			log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 " epoch=%"
				  PRIu64 ": none of %zu replicas answered within %d ms; "
				  "reporting none (the fault is likely ours)", oid, epoch,
				  ncalls, atomic_load(&s->replica_timeout_ms));
			client_map_refresh(s);
			client_backoff(attempt, deadline);
			continue;
		}
		if (nsus) {
			/*
			 * The report limit (coord_suspect.h) counts the nodes
			 * the map has down or that are marked; one that just
			 * died is neither until its session expires. So the
			 * replicas gone from this try count against it here:
			 * report at most copies - 1 - gone, and none at all
			 * if no replica of several answered (some refused,
			 * the rest silent: as above, we may be the slow one;
			 * a primary alone, silent, is reported). Else a
			 * replica killed under a loaded machine gets its two
			 * slow survivors marked too, and every holder of the
			 * object stops serving (survive_test.c, survive_slow).
			 */
			size_t room = copies > ngone + 1 ? copies - 1 - ngone : 0;

			suspects_await(s, epoch, sus, nsus, nheard || ncalls == 1 ? room : 0,
				       copies, deadline);
			continue;
		}
		client_map_refresh(s);
		client_backoff(attempt, deadline);
	}
}

/* An op's header and payload with its cap in front (SDFS_F_CAP), or as
 * they were when the handle sends none; free(buf) after. */
struct capped {
	struct sdfs_hdr h;
	const void *payload;
	uint8_t *buf;
};

static int cap_wrap(struct sdfs *s, uint64_t oid, const struct sdfs_hdr *tmpl,
		    const void *payload, int fresh, struct capped *cp)
{
	uint8_t cap[OBJCAP_WIRE_SIZE];
	unsigned need = objcap_rights_of(tmpl);
	int ret;

	cp->h = *tmpl;
	cp->payload = payload;
	cp->buf = NULL;
	if (!need)
		return 0;
	ret = capcache_get(s, oid, need, fresh, cap);
	if (ret <= 0)
		return ret;
	cp->buf = malloc(OBJCAP_WIRE_SIZE + (size_t)tmpl->payload_len);
	if (!cp->buf)
		return -ENOMEM;
	memcpy(cp->buf, cap, OBJCAP_WIRE_SIZE);
	if (tmpl->payload_len)
		memcpy(cp->buf + OBJCAP_WIRE_SIZE, payload, tmpl->payload_len);
	cp->h.flags |= SDFS_F_CAP;
	cp->h.payload_len += OBJCAP_WIRE_SIZE;
	cp->payload = cp->buf;
	return 0;
}

/* replicated_try with @oid's cap; refused for it: a fresh one, once. */
static int replicated_tok(struct sdfs *s, uint64_t oid, const struct sdfs_hdr *tmpl,
			  const void *payload, enum mut_kind kind, uint32_t token)
{
	struct capped cp;
	int ret = cap_wrap(s, oid, tmpl, payload, 0, &cp);

	if (ret)
		return ret;
	ret = replicated_try(s, oid, &cp.h, cp.payload, kind, token);
	if (ret == -EKEYREJECTED) {
		free(cp.buf);
		ret = cap_wrap(s, oid, tmpl, payload, 1, &cp);
		if (ret == 0)
			ret = replicated_try(s, oid, &cp.h, cp.payload, kind, token);
	}
	free(cp.buf);
	return ret == -EKEYREJECTED ? -EACCES : ret;
}

/* With the handle's token, read once: a retry must not pass a fence
 * its first try met. */
static int replicated(struct sdfs *s, uint64_t oid, const struct sdfs_hdr *tmpl,
		      const void *payload, enum mut_kind kind)
{
	uint32_t token = tmpl->opcode == SDFS_OP_OBJ_FLUSH ? 0
			 : atomic_load(&s->fence_token);

	return replicated_tok(s, oid, tmpl, payload, kind, token);
}

int sdfs_obj_write_tok(struct sdfs *s, uint64_t oid, const void *buf, size_t len,
		       uint64_t off, unsigned flags, uint32_t token)
{
	uint32_t max;
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_WRITE, .flags = SDFS_F_CREATE };

	if (flags & ~SDFS_WRITE_SYNC)
		return -EINVAL;
	if (flags & SDFS_WRITE_SYNC)
		h.flags |= SDFS_F_SYNC;
	max = sdfs_obj_size(s);
	if (max == 0)
		return -ENOENT;
	if (off > max || len > max - off)
		return -EFBIG;
	h.offset = off;
	h.payload_len = (uint32_t)len;
	return replicated_tok(s, oid, &h, buf, MUT_ALL_OK, token);
}

int sdfs_obj_write_ex(struct sdfs *s, uint64_t oid, const void *buf, size_t len,
		      uint64_t off, unsigned flags)
{
	return sdfs_obj_write_tok(s, oid, buf, len, off, flags,
				  atomic_load(&s->fence_token));
}

int sdfs_obj_write(struct sdfs *s, uint64_t oid, const void *buf, size_t len,
		   uint64_t off)
{
	return sdfs_obj_write_ex(s, oid, buf, len, off, 0);
}

int sdfs_obj_put_tok(struct sdfs *s, uint64_t oid, const void *buf, size_t len,
		     uint32_t token)
{
	uint32_t max = sdfs_obj_size(s);
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_REPLACE };

	if (max == 0)
		return -ENOENT;
	if (len > max)
		return -EFBIG;
	h.payload_len = (uint32_t)len;
	return replicated_tok(s, oid, &h, buf, MUT_ALL_OK, token);
}

int sdfs_obj_copy_tok(struct sdfs *s, uint64_t dst, uint64_t src, const void *buf,
		      size_t len, uint64_t off, uint32_t token)
{
	return sdfs_obj_copy_ex(s, dst, src, 0, buf, len, off, token);
}

int sdfs_obj_copy_ex(struct sdfs *s, uint64_t dst, uint64_t src, uint32_t flags,
		     const void *buf, size_t len, uint64_t off, uint32_t token)
{
	struct sdfs_obj_copy c = { .src = src, .len = (uint32_t)len,
				   .flags = flags | (buf ? 0 : SDFS_COPY_ZERO) };
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_COPY, .offset = off };
	uint32_t max = sdfs_obj_size(s);
	size_t plen = SDFS_OBJ_COPY_SIZE + (buf ? len : 0);
	uint8_t *p;
	int ret;

	if (max == 0)
		return -ENOENT;
	if (off > max || len > max - off)
		return -EFBIG;
	p = malloc(plen);
	if (!p)
		return -ENOMEM;
	proto_obj_copy_encode(&c, p);
	if (buf)
		memcpy(p + SDFS_OBJ_COPY_SIZE, buf, len);
	h.payload_len = (uint32_t)plen;
	ret = replicated_tok(s, dst, &h, p, MUT_ALL_OK, token);
	free(p);
	return ret;
}

int sdfs_obj_put(struct sdfs *s, uint64_t oid, const void *buf, size_t len)
{
	return sdfs_obj_put_tok(s, oid, buf, len, atomic_load(&s->fence_token));
}

int sdfs_obj_remove_tok(struct sdfs *s, uint64_t oid, uint32_t token)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_REMOVE };

	return replicated_tok(s, oid, &h, NULL, MUT_NOENT_OK, token);
}

int sdfs_obj_remove(struct sdfs *s, uint64_t oid)
{
	return sdfs_obj_remove_tok(s, oid, atomic_load(&s->fence_token));
}

int sdfs_obj_flush(struct sdfs *s, uint64_t oid)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_FLUSH };

	return replicated(s, oid, &h, NULL, MUT_NOENT_OK);
}

/*
 * One rpc_run for as many of @oids as their calls fit (*@used of
 * them), each object's @op (OBJ_FLUSH or OBJ_REMOVE, with @token) as
 * the first try of its one-object call: a flush to every up replica
 * (a replica syncs only its own copy), a removal like any mutation
 * (through the primary of a shared object). An object whose every
 * answer is a success or "absent" is done: @res gets 0, or -ENOENT if
 * no replica had it. Any other outcome (a replica down or unreachable,
 * a newer epoch, a fence) goes through the one-object call, which
 * retries as it does alone. The first object that fails (not -ENOENT)
 * ends the batch with its error, and those after it get the same.
 */
static int many_batch(struct sdfs *s, unsigned op, uint32_t token, const uint64_t *oids,
		      size_t n, int *res, size_t *used)
{
	struct rpc_call calls[RPC_MAX_CALLS];
	struct placement p[RPC_MAX_CALLS];
	size_t first[RPC_MAX_CALLS + 1], nobj = 0, ncalls = 0;
	int bad[RPC_MAX_CALLS] = { 0 }, ok[RPC_MAX_CALLS] = { 0 }, ret = 0;
	uint8_t cap[RPC_MAX_CALLS][OBJCAP_WIRE_SIZE];
	struct sdfs_hdr what = { .opcode = (uint8_t)op };

	while (nobj < n && nobj < RPC_MAX_CALLS) {
		uint64_t oid = oids[nobj];
		struct placement *pl = &p[nobj];

		first[nobj] = ncalls;
		if (placement_get(s, oid, pl)) {
			pl->m = NULL;
			bad[nobj++] = 1;
			continue;
		}
		size_t k = oid_is_ordered(oid) && op != SDFS_OP_OBJ_FLUSH && pl->nup ? 1
			   : pl->nup;

		if (ncalls + k > RPC_MAX_CALLS) {
			placement_done(pl);
			break;
		}
		bad[nobj] = k == 0;
		/* no cap to be had: the one-object call says why */
		int capped = capcache_get(s, oid, objcap_rights_of(&what), 0, cap[nobj]);

		if (capped < 0)
			bad[nobj] = 1, k = 0;
		for (size_t i = 0; i < k; i++, ncalls++) {
			/* zeroed one by one: 64 calls are 93 KB */
			memset(&calls[ncalls], 0, sizeof(calls[ncalls]));
			calls[ncalls].node = pl->up[i];
			calls[ncalls].req.opcode = (uint8_t)op;
			calls[ncalls].req.oid = oid;
			calls[ncalls].req.epoch = (uint32_t)pl->m->map->epoch;
			calls[ncalls].req.token = op == SDFS_OP_OBJ_FLUSH ? 0 : token;
			if (capped > 0) {
				calls[ncalls].req.flags = SDFS_F_CAP;
				calls[ncalls].req.payload_len = OBJCAP_WIRE_SIZE;
				calls[ncalls].payload = cap[nobj];
			}
		}
		nobj++;
	}
	first[nobj] = ncalls;
	*used = nobj;
	/* Bounded like one try: an object a replica did not answer for goes
	 * through the one-object call, which reports the replica and waits
	 * for the map to drop it; the objects after it find the new map. */
	if (ncalls)
		rpc_run(s->pool, calls, ncalls, try_bound(s, op != SDFS_OP_OBJ_FLUSH,
							  s->timeout_ms), next_req_id, s);
	for (size_t o = 0; o < nobj; o++) {
		for (size_t c = first[o]; c < first[o + 1]; c++) {
			int r = rpc_result(&calls[c]);

			if (r && r != -ENOENT)
				bad[o] = 1;
			ok[o] |= r == 0;
		}
		if (p[o].m)
			placement_done(&p[o]);
	}
	rpc_calls_free(calls, ncalls);
	/* one by one, up to the first failure */
	for (size_t o = 0; o < nobj; o++) {
		if (ret)
			res[o] = ret;
		else if (!bad[o])
			res[o] = ok[o] ? 0 : -ENOENT;
		else if (op == SDFS_OP_OBJ_FLUSH)
			res[o] = sdfs_obj_flush(s, oids[o]);
		else if ((res[o] = sdfs_obj_remove_tok(s, oids[o], token)) == -ENOENT && ok[o])
			res[o] = 0;     /* removed by the batch on some replica */
		if (res[o] && res[o] != -ENOENT)
			ret = res[o];
	}
	return ret;
}

static int many(struct sdfs *s, unsigned op, uint32_t token, const uint64_t *oids,
		size_t n, int *res)
{
	int ret = 0;

	for (size_t done = 0; done < n;) {
		size_t used = 0;

		if (ret) {
			res[done++] = ret;
			continue;
		}
		ret = many_batch(s, op, token, oids + done, n - done, res + done, &used);
		done += used;
	}
	return ret;
}

int sdfs_obj_flush_many(struct sdfs *s, const uint64_t *oids, size_t n)
{
	int *res = malloc((n ? n : 1) * sizeof(*res));
	int ret;

	if (!res)
		return -ENOMEM;
	ret = many(s, SDFS_OP_OBJ_FLUSH, 0, oids, n, res);
	free(res);
	return ret;
}

int sdfs_obj_remove_many_tok(struct sdfs *s, const uint64_t *oids, size_t n,
			     uint32_t token, int *res)
{
	return many(s, SDFS_OP_OBJ_REMOVE, token, oids, n, res);
}

/* Rewrite the replicas on @bad from the good copy on @good. */
static void repair(struct sdfs *s, struct placement *p, uint64_t oid,
		   const struct cmap_node *good, const struct cmap_node **bad,
		   size_t nbad)
{
	struct rpc_call rd = { 0 }, wr[RING_MAX_COPIES];
	int ret;

	rd.node = good;
	rd.req.opcode = SDFS_OP_OBJ_READ;
	rd.req.oid = oid;
	rd.req.length = p->obj_size;
	rd.req.epoch = (uint32_t)p->m->map->epoch;
	rpc_run(s->pool, &rd, 1, s->timeout_ms, next_req_id, s);
	ret = rpc_result(&rd);
	if (ret) {
		log_warn("oid=%016" PRIx64 ": cannot read good replica for repair: %s",
			 oid, strerror(-ret));
		rpc_calls_free(&rd, 1);
		return;
	}
	memset(wr, 0, sizeof(wr));
	for (size_t i = 0; i < nbad; i++) {
		wr[i].node = bad[i];
		/* Only the bad copies: for a shared object that is the
		 * primary's REPL_ op, which a node applies as it is. */
		wr[i].req.opcode = oid_is_ordered(oid) ? SDFS_OP_REPL_REPLACE
						       : SDFS_OP_OBJ_REPLACE;
		wr[i].req.oid = oid;
		wr[i].req.epoch = (uint32_t)p->m->map->epoch;
		/* A repair is a write too: a deposed writer must not put back
		 * what it read before the fence. */
		wr[i].req.token = atomic_load(&s->fence_token);
		wr[i].req.payload_len = rd.reply.payload_len;
		wr[i].payload = rd.rpayload;
	}
	rpc_run(s->pool, wr, nbad, s->timeout_ms, next_req_id, s);
	for (size_t i = 0; i < nbad; i++) {
		ret = rpc_result(&wr[i]);
		if (ret)
			log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": repair failed: %s",
				 bad[i]->node_id, oid, strerror(-ret));
		else
			log_info("node=%" PRIu32 " oid=%016" PRIx64 ": corrupt replica "
				 "rewritten from node %" PRIu32, bad[i]->node_id, oid,
				 good->node_id);
	}
	rpc_calls_free(wr, nbad);
	rpc_calls_free(&rd, 1);
}

/* How long a replica that let a read wait past the hedge is asked last. */
#define LATE_MS 5000

static int is_late(struct sdfs *s, uint32_t node_id, int64_t now)
{
	int late = 0;

	if (now >= atomic_load(&s->late_until_ms))
		return 0;       /* none is: no lock on the common path */
	pthread_mutex_lock(&s->late_mu);
	for (int i = 0; i < CLIENT_LATE_MAX; i++)
		if (s->late[i].node_id == node_id && s->late[i].until_ms > now)
			late = 1;
	pthread_mutex_unlock(&s->late_mu);
	return late;
}

/* @late: remember @node_id as late for LATE_MS, or forget it. */
static void set_late(struct sdfs *s, uint32_t node_id, int late)
{
	int64_t now = net_now_ms();
	int slot = -1;

	if (!late && now >= atomic_load(&s->late_until_ms))
		return;
	pthread_mutex_lock(&s->late_mu);
	for (int i = 0; i < CLIENT_LATE_MAX; i++) {
		struct client_late *l = &s->late[i];

		if (l->node_id == node_id) {
			slot = i;
			break;
		}
		/* a free or expired slot, else the one that expires first */
		if (slot < 0 || l->until_ms <= now || l->until_ms < s->late[slot].until_ms)
			slot = i;
	}
	if (late) {
		if (s->late[slot].node_id != node_id || s->late[slot].until_ms <= now)
			log_info("node=%" PRIu32 ": no answer to a read in %d ms; asking "
				 "the other replicas first", node_id, s->read_timeout_ms);
		s->late[slot] = (struct client_late){ node_id, now + LATE_MS };
		atomic_store(&s->late_until_ms, now + LATE_MS);
	} else if (s->late[slot].node_id == node_id) {
		s->late[slot].until_ms = 0;
	}
	pthread_mutex_unlock(&s->late_mu);
}

/* The up replicas in the order a read asks them: the late ones last. */
static size_t read_order(struct sdfs *s, const struct placement *p,
			 const struct cmap_node **out)
{
	int64_t now = net_now_ms();
	size_t n = 0, nlate = 0;
	const struct cmap_node *late[RING_MAX_COPIES];

	for (size_t i = 0; i < p->nup; i++) {
		if (is_late(s, p->up[i]->node_id, now))
			late[nlate++] = p->up[i];
		else
			out[n++] = p->up[i];
	}
	for (size_t i = 0; i < nlate; i++)
		out[n++] = late[i];
	return n;
}

/* An answer that ends a read: data, a newer epoch than ours, or an
 * error no other replica would help with. Not: a corrupt, missing or not
 * current copy (ENODATA: that node cannot vouch for it), a node behind
 * our epoch (EAGAIN: one just back, say; the others are current), or
 * no answer. */
static int read_accept(const struct rpc_call *c)
{
	int r = rpc_result(c);

	return !(r == -EBADMSG || r == -ENOENT || r == -ENODATA || r == -EAGAIN ||
		 rpc_is_transport(r));
}

/* One hedged round of @c (its req) to every up replica of @p. The
 * calls come last: only the n asked are set up (an rpc_call is 1.5 KB,
 * its session's key schedule; zeroing all RING_MAX_COPIES of them was
 * 23 KB of memset per read). */
struct read_round {
	size_t n;                                       /* replicas asked */
	const struct cmap_node *node[RING_MAX_COPIES];
	int won;                /* index of the answer (not OLD_EPOCH), or -1 */
	size_t nbad, noent, nodata;
	const struct cmap_node *bad[RING_MAX_COPIES];   /* failed checksums */
	int stale;              /* OLD_EPOCH, or a node behind: go again */
	int transport;                                  /* one did not answer */
	struct rpc_call calls[RING_MAX_COPIES];         /* [0, n) only */
};

/*
 * Ask the replicas of @p for @req, each after the one before has failed
 * or read_timeout_ms passed, until one answers for good (rr->won) or
 * @timeout_ms. The first call reads into @buf (@len), the others into
 * their own buffers. Counts the outcomes; replicas still silent when
 * another answered become late, one that answered is not any more.
 * rpc_calls_free(rr->calls, rr->n) afterwards.
 */
static void read_round(struct sdfs *s, const struct placement *p,
		       const struct sdfs_hdr *req, const void *payload, void *buf,
		       size_t len, int timeout_ms, struct read_round *rr)
{
	memset(rr, 0, offsetof(struct read_round, calls));
	rr->n = read_order(s, p, rr->node);
	memset(rr->calls, 0, rr->n * sizeof(rr->calls[0]));
	for (size_t i = 0; i < rr->n; i++) {
		rr->calls[i].node = rr->node[i];
		rr->calls[i].req = *req;
		rr->calls[i].req.epoch = (uint32_t)p->m->map->epoch;
		rr->calls[i].payload = payload;
	}
	if (buf) {
		rr->calls[0].rbuf = buf;
		rr->calls[0].rbuf_len = len;
	}
	rr->won = rpc_run_hedged(s->pool, rr->calls, rr->n, timeout_ms, s->read_timeout_ms,
				 read_accept, next_req_id, s);
	for (size_t i = 0; i < rr->n; i++) {
		struct rpc_call *c = &rr->calls[i];
		int r = rpc_result(c);

		if (c->ret == -ECANCELED)
			continue;       /* never asked */
		/* Silent past the hedge: the next one was asked meanwhile. */
		if (c->ret == -ETIMEDOUT && (rr->won < 0 || (int)i < rr->won))
			set_late(s, rr->node[i]->node_id, 1);
		else if (c->ret == 0)
			set_late(s, rr->node[i]->node_id, 0);
		if ((int)i == rr->won)
			continue;
		if (r == -EBADMSG) {
			log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": replica failed "
				 "its checksum; reading another", rr->node[i]->node_id,
				 req->oid);
			rr->bad[rr->nbad++] = rr->node[i];
		} else if (r == -ENOENT) {
			rr->noent++;
		} else if (r == -ENODATA) {
			/* That node cannot vouch for its copy: never take
			 * old data, ask the next one. */
			rr->nodata++;
		} else if (r == -EAGAIN) {
			rr->stale = 1;  /* if nobody else answers: again */
		} else if (rpc_is_transport(r) && (rr->won < 0 || (int)i < rr->won)) {
			rr->transport = 1;
		}
	}
	if (rr->won >= 0 && is_epoch_miss(rpc_result(&rr->calls[rr->won]))) {
		rr->won = -1;   /* our map is old: a new one, then again */
		rr->stale = 1;
	}
}

/*
 * After a round that nobody won: the outcome if it is final (0 if the
 * call should go on): every replica says the object is gone, or none
 * can give it.
 */
static int read_verdict(const struct read_round *rr)
{
	size_t nup = rr->n;

	if (rr->stale || !nup)
		return 0;
	if (rr->noent == nup)
		return -ENOENT;
	if (rr->noent && rr->noent + rr->nodata == nup)
		return -ENOENT; /* a replica that can vouch says it is gone */
	if (rr->nbad + rr->noent + rr->nodata == nup)
		return -EIO;    /* corrupt, missing or not current everywhere */
	return 0;
}

/*
 * What a read or a stat takes from the answer that won @rr (replicas of
 * @p; @len: the bytes asked for), whose result was 0: >= 0, or -errno.
 */
typedef ssize_t (*read_take_fn)(struct sdfs *s, struct placement *p,
				struct read_round *rr, size_t len, void *arg);

/*
 * Ask the replicas of @tmpl's object for @tmpl with its length set to
 * @len cut to the object size (a read: into @buf; a stat: 0), in read_order,
 * hedged (read_round), until one answers for good; @take then makes the
 * result of it. Re-reads the map and goes again while no replica could
 * answer (read_verdict), until the handle's timeout: -ETIMEDOUT then,
 * or -EIO when a replica did not answer.
 */
static ssize_t read_try(struct sdfs *s, const struct sdfs_hdr *tmpl,
			const void *payload, void *buf, size_t len, read_take_fn take,
			void *arg)
{
	int64_t deadline = net_now_ms() + s->timeout_ms;
	int last = -ETIMEDOUT;

	for (int attempt = 0;; attempt++) {
		struct sdfs_hdr req = *tmpl;
		struct read_round rr;
		struct placement p;
		int ret = placement_get(s, tmpl->oid, &p);
		int64_t left = deadline - net_now_ms();

		if (ret)
			return ret;
		if (left <= 0) {
			placement_done(&p);
			return last;
		}
		if (len > p.obj_size)
			len = p.obj_size;
		req.length = (uint32_t)len;
		read_round(s, &p, &req, payload, buf, len, (int)left, &rr);
		if (rr.won >= 0) {
			ssize_t got = rpc_result(&rr.calls[rr.won]);

			if (got == 0)
				got = take(s, &p, &rr, len, arg);
			rpc_calls_free(rr.calls, rr.n);
			placement_done(&p);
			return got;     /* EINVAL and the like: no replica helps */
		}
		rpc_calls_free(rr.calls, rr.n);
		placement_done(&p);
		if (rr.transport)
			last = -EIO;
		ret = read_verdict(&rr);
		if (ret)
			return ret;
		if (deadline - net_now_ms() <= 0)
			return last;
		client_map_refresh(s);
		client_backoff(attempt, deadline);
	}
}

/* read_try with the object's cap; refused for it: a fresh one, once. */
static ssize_t read_replicas(struct sdfs *s, const struct sdfs_hdr *tmpl,
			     void *buf, size_t len, read_take_fn take, void *arg)
{
	struct capped cp;
	ssize_t ret = cap_wrap(s, tmpl->oid, tmpl, NULL, 0, &cp);

	if (ret)
		return ret;
	ret = read_try(s, &cp.h, cp.payload, buf, len, take, arg);
	if (ret == -EKEYREJECTED) {
		free(cp.buf);
		ret = cap_wrap(s, tmpl->oid, tmpl, NULL, 1, &cp);
		if (ret == 0)
			ret = read_try(s, &cp.h, cp.payload, buf, len, take, arg);
	}
	free(cp.buf);
	return ret == -EKEYREJECTED ? -EACCES : ret;
}

/* A read's answer: its bytes into @buf (the first replica's are there
 * already), a corrupt replica rewritten. */
static ssize_t read_take(struct sdfs *s, struct placement *p,
			 struct read_round *rr, size_t len, void *buf)
{
	const struct rpc_call *c = &rr->calls[rr->won];
	size_t got = c->reply.payload_len;

	if (got > len)
		return -EPROTO;         /* more than asked: a broken node */
	if (rr->won > 0 && got)
		memcpy(buf, c->rpayload, got);
	if (rr->nbad)
		repair(s, p, c->req.oid, c->node, rr->bad, rr->nbad);
	return (ssize_t)got;
}

ssize_t sdfs_obj_read(struct sdfs *s, uint64_t oid, void *buf, size_t len,
		      uint64_t off)
{
	struct sdfs_hdr req = { .opcode = SDFS_OP_OBJ_READ, .oid = oid, .offset = off };

	if (len > SDFS_MAX_PAYLOAD)
		len = SDFS_MAX_PAYLOAD;
	return read_replicas(s, &req, buf, len, read_take, buf);
}

/* A stat's answer: decoded into @info. */
static ssize_t stat_take(struct sdfs *s, struct placement *p,
			 struct read_round *rr, size_t len, void *info)
{
	const struct rpc_call *c = &rr->calls[rr->won];
	struct sdfs_obj_info *out = info;
	struct sdfs_obj_stat st;

	(void)s, (void)p, (void)len;
	if (!c->rpayload || proto_obj_stat_decode(c->rpayload, c->reply.payload_len, &st))
		return -EPROTO;
	out->size = st.size;
	out->epoch = st.epoch;
	return 0;
}

int sdfs_obj_stat(struct sdfs *s, uint64_t oid, struct sdfs_obj_info *info)
{
	struct sdfs_hdr req = { .opcode = SDFS_OP_OBJ_STAT, .oid = oid };

	return (int)read_replicas(s, &req, NULL, 0, stat_take, info);
}
