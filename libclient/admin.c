/*
 * admin.c - what operators ask of the cluster and tell it: every node's
 * state and numbers, whether every object has its redundancy, where an
 * object's replicas are, node changes (out, remove, add, reweight), and
 * raising the MDS fence (for a new active sdfs-mds) or a volume's fence
 * (for a new writer) on every node.
 *
 * Node changes edit the cluster map in ZooKeeper with the same
 * compare-and-swap the block daemons use to follow membership: each is
 * a new epoch, and the daemons keep what an operator set (drain, a set
 * weight, out) when they write the next one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/net.h"
#include "common/objcap.h"
#include "common/oid.h"
#include "common/proto.h"
#include "libclient/client.h"
#include "common/rpc.h"

#define ADMIN_INFO_TIMEOUT_MS 3000      /* NODE_INFO: a status call stays quick */
#define ADMIN_RPC_BATCH 64              /* calls the rpc engine runs at once */
#define ADMIN_CAS_TRIES 8
#define ADMIN_FENCE_TRY_MS 2000         /* MDS/VOL_FENCE round: then re-read the map */

static uint64_t next_req_id(void *arg)
{
	return client_req_id(arg);
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* What the map says about @nd. */
static void status_from_map(const struct cmap_node *nd, struct sdfs_node_status *st)
{
	memset(st, 0, sizeof(*st));
	st->node_id = nd->node_id;
	snprintf(st->addr, sizeof(st->addr), "%s:%u", nd->host, nd->port);
	st->zone = nd->zone;
	st->weight = nd->weight;
	st->state = cmap_state_name(nd->state);
	st->drain = nd->drain;
	st->weight_set = nd->wset;
	st->placed = cmap_node_is_placed(nd);
	st->down_ms = nd->state == CMAP_UP ? 0 : nd->down_ms;
}

static void status_from_info(const struct sdfs_node_info *ni, struct sdfs_node_status *st)
{
	st->reachable = 1;
	st->epoch = ni->epoch;
	st->objects = ni->objects;
	st->used_bytes = ni->used_bytes;
	st->total_bytes = ni->total_bytes;
	st->avail_bytes = ni->avail_bytes;
	st->nearfull = !!(ni->space & SDFS_SPACE_NEARFULL);
	st->full = !!(ni->space & SDFS_SPACE_FULL);
	st->enospc = !!(ni->space & SDFS_SPACE_ENOSPC);
	/* as df's Use%: the blocks kept for root count in neither */
	uint64_t base = ni->used_bytes + ni->avail_bytes;
	if (base)
		st->used_pct = (unsigned)((ni->used_bytes * 100 + base - 1) / base);
	st->requests = ni->requests;
	st->errors = ni->errors;
	st->rec_epoch = ni->rec_epoch;
	st->clean_epoch = ni->clean_epoch;
	st->rec_todo_objs = ni->rec_todo_objs;
	st->rec_done_objs = ni->rec_done_objs;
	st->rec_todo_bytes = ni->rec_todo_bytes;
	st->rec_done_bytes = ni->rec_done_bytes;
	st->rec_unavail = ni->rec_unavail;
	st->rec_extra = ni->rec_extra;
	st->rec_elapsed_ms = ni->rec_elapsed_ms;
	st->moved_objs = ni->moved_objs;
	st->ec_degraded = ni->ec_degraded;
	st->ec_unavail = ni->ec_unavail;
}

/*
 * Fill @st[i] for every node of @map, asking each with NODE_INFO, all at
 * once (with @up_only, only the nodes the map says are up: a status
 * poll then never waits on a dead host).
 */
static int nodes_query(struct sdfs *s, const struct cmap *map, int up_only,
		       struct sdfs_node_status *st)
{
	size_t cnt = map->n, nc = 0;
	struct rpc_call *calls = calloc(cnt ? cnt : 1, sizeof(*calls));
	size_t *idx = calloc(cnt ? cnt : 1, sizeof(*idx));
	int timeout_ms = s->timeout_ms < ADMIN_INFO_TIMEOUT_MS ? s->timeout_ms
							      : ADMIN_INFO_TIMEOUT_MS;

	if (!calls || !idx) {
		free(calls);
		free(idx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cnt; i++) {
		status_from_map(&map->nodes[i], &st[i]);
		if (up_only && map->nodes[i].state != CMAP_UP)
			continue;
		calls[nc].node = &map->nodes[i];
		calls[nc].req.opcode = SDFS_OP_NODE_INFO;
		idx[nc++] = i;
	}
	for (size_t i = 0; i < nc; i += ADMIN_RPC_BATCH)
		rpc_run(s->pool, calls + i, nc - i > ADMIN_RPC_BATCH ? ADMIN_RPC_BATCH : nc - i,
			timeout_ms, next_req_id, s);
	for (size_t k = 0; k < nc; k++) {
		struct sdfs_node_info ni;

		if (rpc_result(&calls[k]) == 0 && calls[k].rpayload &&
		    proto_node_info_decode(calls[k].rpayload, calls[k].reply.payload_len,
					   &ni) == 0)
			status_from_info(&ni, &st[idx[k]]);
	}
	rpc_calls_free(calls, nc);
	free(calls);
	free(idx);
	return 0;
}

/* The current map, fresh from ZooKeeper, with the nodes' answers. */
static int nodes_get(struct sdfs *s, int up_only, struct map_ref **mp,
		     struct sdfs_node_status **out)
{
	struct map_ref *m;
	struct sdfs_node_status *st;
	int err = 0;

	atomic_store(&s->map_stale, 1);
	m = client_map_get(s, &err);
	if (!m)
		return err;
	st = calloc(m->map->n ? m->map->n : 1, sizeof(*st));
	if (!st) {
		client_map_put(m);
		return -ENOMEM;
	}
	err = nodes_query(s, m->map, up_only, st);
	if (err) {
		free(st);
		client_map_put(m);
		return err;
	}
	*mp = m;
	*out = st;
	return 0;
}

int sdfs_node_list(struct sdfs *s, struct sdfs_node_status **out, size_t *n)
{
	struct map_ref *m;
	int ret = nodes_get(s, 0, &m, out);

	if (ret)
		return ret;
	*n = m->map->n;
	client_map_put(m);
	return 0;
}

/* "1.5 MiB": bytes for a one-line reason. */
static void human(uint64_t n, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)n;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", n);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
}

/* Near full and full nodes among the up ones that answered; the warning
 * for a near full one (a full one is the reason, set by the caller). */
static void space_sum(struct sdfs_health *h, const struct cmap *map,
		      const struct sdfs_node_status *st)
{
	const struct sdfs_node_status *near = NULL;

	for (size_t i = 0; i < map->n; i++) {
		const struct sdfs_node_status *x = &st[i];

		if (map->nodes[i].state != CMAP_UP || !x->reachable)
			continue;
		if (x->full) {
			h->nodes_full++;
			h->nodes_nearfull++;
			if (!h->full_id)
				h->full_id = x->node_id;
		} else if (x->nearfull) {
			h->nodes_nearfull++;
			if (!near)
				near = x;
		}
	}
	if (!near)
		return;
	h->nearfull_id = near->node_id;
	unsigned more = h->nodes_nearfull - h->nodes_full - 1;
	if (more)
		snprintf(h->warning, sizeof(h->warning), "node %" PRIu32 " near full "
			 "(%u%% used) and %u more", near->node_id, near->used_pct, more);
	else
		snprintf(h->warning, sizeof(h->warning), "node %" PRIu32 " near full "
			 "(%u%% used)", near->node_id, near->used_pct);
}

/* Recovery totals of the up nodes whose pass is at @h->epoch. */
static void health_sum(struct sdfs_health *h, const struct sdfs_node_status *st,
		       size_t n)
{
	h->eta_s = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sdfs_node_status *x = &st[i];

		if (!x->reachable)
			continue;
		h->moved_objs += x->moved_objs;
		h->extra += x->rec_extra;
		h->ec_degraded += x->ec_degraded;
		h->ec_unavail += x->ec_unavail;
		if (x->epoch != h->epoch || x->rec_epoch != h->epoch) {
			h->eta_s = -1;  /* its pass has not started: no estimate */
			continue;
		}
		uint64_t done_b = x->rec_done_bytes < x->rec_todo_bytes ?
				  x->rec_done_bytes : x->rec_todo_bytes;
		uint64_t done_o = x->rec_done_objs < x->rec_todo_objs ?
				  x->rec_done_objs : x->rec_todo_objs;
		/* An unavailable object was looked at, not recovered. */
		done_o -= x->rec_unavail < done_o ? x->rec_unavail : done_o;
		h->todo_objs += x->rec_todo_objs;
		h->done_objs += done_o;
		h->todo_bytes += x->rec_todo_bytes;
		h->done_bytes += done_b;
		h->unavail += x->rec_unavail;
		if (x->clean_epoch == h->epoch) {
			h->nodes_clean++;
			continue;
		}
		/* Still working: its rate adds up with the others' (the passes
		 * run in parallel); the slowest node sets the ETA. */
		int64_t eta = -1;
		uint64_t rate = x->rec_elapsed_ms ? done_b * 1000 / x->rec_elapsed_ms : 0;
		h->rate += rate;
		/* Unavailable objects wait for a node to return: no estimate. */
		if (x->rec_elapsed_ms && !x->rec_unavail) {
			if (x->rec_todo_bytes > done_b && rate)
				eta = (int64_t)((x->rec_todo_bytes - done_b + rate - 1) / rate);
			else if (x->rec_todo_objs > done_o && done_o)
				eta = (int64_t)((x->rec_todo_objs - done_o) *
						x->rec_elapsed_ms / done_o / 1000 + 1);
			else if (x->rec_todo_objs && x->rec_todo_objs <= done_o &&
				 x->rec_todo_bytes <= done_b)
				eta = 0;        /* finishing, or retrying leftovers */
		}
		if (eta < 0 || h->eta_s < 0)
			h->eta_s = -1;
		else if (eta > h->eta_s)
			h->eta_s = eta;
	}
}

int sdfs_cluster_health(struct sdfs *s, struct sdfs_health *h)
{
	struct cluster_config cfg;
	struct sdfs_node_status *st;
	struct map_ref *m;
	unsigned placed_up = 0, answering = 0, down_placed = 0;
	uint32_t unreachable_id = 0;
	int ret;

	ret = nodes_get(s, 1, &m, &st);
	if (ret)
		return ret;
	ret = client_config(s, &cfg);
	if (ret) {
		free(st);
		client_map_put(m);
		return ret;
	}
	memset(h, 0, sizeof(*h));
	h->epoch = m->map->epoch;
	uint64_t now = wall_ms();
	for (size_t i = 0; i < m->map->n; i++) {
		const struct cmap_node *nd = &m->map->nodes[i];

		h->nodes_draining += nd->drain;
		if (nd->state == CMAP_OUT) {
			h->nodes_out++;
			continue;
		}
		if (nd->state == CMAP_DOWN) {
			h->nodes_down++;
			/* A drained node may be stopped: it holds nothing placed
			 * (copies it still had show as unavailable elsewhere). */
			if (cmap_node_is_placed(nd) && down_placed++ == 0) {
				uint64_t at = nd->down_ms + cfg.out_grace_ms;

				h->down_id = nd->node_id;
				h->out_in_s = at > now ? (int64_t)((at - now + 999) / 1000) : 0;
			}
			continue;
		}
		h->nodes_up++;
		placed_up += cmap_node_is_placed(nd);
		if (st[i].reachable)
			answering++;
		else if (!unreachable_id)
			unreachable_id = nd->node_id;
	}
	health_sum(h, st, m->map->n);
	space_sum(h, m->map, st);
	h->copies = cfg.copies;
	h->copies_placeable = placed_up < cfg.copies ? placed_up : cfg.copies;

	char avail[32];
	const struct sdfs_node_status *full = NULL;
	for (size_t i = 0; i < m->map->n && h->full_id; i++)
		if (st[i].node_id == h->full_id)
			full = &st[i];
	if (full)
		human(full->avail_bytes, avail, sizeof(avail));

	if (m->map->n == 0)
		snprintf(h->reason, sizeof(h->reason), "no nodes");
	else if (full && h->nodes_full == 1)
		snprintf(h->reason, sizeof(h->reason), "node %" PRIu32 " full (%u%% used, "
			 "%s available%s)", full->node_id, full->used_pct, avail,
			 full->enospc ? ", a write hit ENOSPC" : "");
	else if (full)
		snprintf(h->reason, sizeof(h->reason), "%u nodes full (node %" PRIu32
			 ": %u%% used, %s available)", h->nodes_full, full->node_id,
			 full->used_pct, avail);
	else if (down_placed == 1)
		snprintf(h->reason, sizeof(h->reason), "node %" PRIu32 " down (out in %"
			 PRId64 " s)", h->down_id, h->out_in_s);
	else if (down_placed)
		snprintf(h->reason, sizeof(h->reason), "%u nodes down (node %" PRIu32
			 " out in %" PRId64 " s)", down_placed, h->down_id, h->out_in_s);
	else if (placed_up < cfg.copies)
		snprintf(h->reason, sizeof(h->reason), "fewer nodes than copies: "
			 "copies %u, the map can place %u", cfg.copies, placed_up);
	else if (unreachable_id)
		snprintf(h->reason, sizeof(h->reason), "node %" PRIu32 " up but not "
			 "answering", unreachable_id);
	else if (h->unavail)
		snprintf(h->reason, sizeof(h->reason), "%" PRIu64 " object%s unavailable",
			 h->unavail, h->unavail == 1 ? "" : "s");
	else if (h->nodes_clean < answering)
		snprintf(h->reason, sizeof(h->reason), "recovering (%u of %u nodes done)",
			 h->nodes_clean, answering);
	else {
		h->healthy = 1;
		h->eta_s = 0;
		snprintf(h->reason, sizeof(h->reason), "ok");
	}
	free(st);
	client_map_put(m);
	return 0;
}

static unsigned placed_count(const struct cmap_node *nodes, size_t n)
{
	unsigned placed = 0;

	for (size_t i = 0; i < n; i++)
		placed += cmap_node_is_placed(&nodes[i]);
	return placed;
}

/* @nd edited in place as @a says; 0, or why not. */
static int node_edit(struct cmap_node *nd, enum sdfs_node_action a, uint32_t weight)
{
	switch (a) {
	case SDFS_NODE_OUT:
		if (nd->state == CMAP_OUT)
			return -EALREADY;
		if (nd->state == CMAP_UP)
			return -EBUSY;
		nd->state = CMAP_OUT;
		return 0;
	case SDFS_NODE_REMOVE:
		if (nd->drain)
			return -EALREADY;
		nd->drain = 1;
		return 0;
	case SDFS_NODE_ADD:
		if (!nd->drain)
			return -EALREADY;
		nd->drain = 0;
		return 0;
	case SDFS_NODE_REWEIGHT:
		if (weight == 0)
			return -EINVAL;
		if (nd->wset && nd->weight == weight)
			return -EALREADY;
		nd->weight = weight;
		nd->wset = 1;
		return 0;
	}
	return -EINVAL;
}

/* The map after @a on @node_id: *@next, or -errno. */
static int map_edit(const struct cmap *cur, unsigned copies, uint32_t node_id,
		    enum sdfs_node_action a, uint32_t weight, struct cmap **next)
{
	struct cmap_node *nodes = calloc(cur->n ? cur->n : 1, sizeof(*nodes));
	const struct cmap_node *old = cmap_find(cur, node_id);
	int ret;

	if (!nodes)
		return -ENOMEM;
	if (!old) {
		ret = -ENOENT;
		goto out;
	}
	memcpy(nodes, cur->nodes, cur->n * sizeof(*nodes));
	ret = node_edit(&nodes[old - cur->nodes], a, weight);
	if (ret)
		goto out;
	/* Draining the last spare would leave objects short of copies with
	 * nowhere to put them; the node is better left where it is. */
	if (a == SDFS_NODE_REMOVE && cmap_node_is_placed(old) &&
	    placed_count(nodes, cur->n) < copies) {
		ret = -ENOSPC;
		goto out;
	}
	ret = cmap_new(cur->epoch + 1, nodes, cur->n, next);
out:
	free(nodes);
	return ret;
}

int sdfs_node_set(struct sdfs *s, uint32_t node_id, enum sdfs_node_action a,
		  uint32_t weight)
{
	struct cluster_config cfg;
	int ret;

	if (a > SDFS_NODE_REWEIGHT || (a == SDFS_NODE_REWEIGHT && weight == 0))
		return -EINVAL;
	ret = client_config(s, &cfg);
	if (ret)
		return ret;
	for (int tries = 0; tries < ADMIN_CAS_TRIES; tries++) {
		struct cmap *cur = NULL, *next = NULL;

		ret = coord_map_get(s->coord, 0, &cur);
		if (ret)
			return ret;
		ret = map_edit(cur, cfg.copies, node_id, a, weight, &next);
		if (ret == 0)
			ret = coord_map_cas(s->coord, cur, next);
		cmap_free(next);
		cmap_free(cur);
		if (ret != -EAGAIN)
			break;
		/* A block daemon wrote an epoch first: judge the new map. */
	}
	atomic_store(&s->map_stale, 1);
	return ret;
}

int sdfs_obj_locate(struct sdfs *s, uint64_t oid, struct sdfs_replica *out,
		    size_t max, size_t *n)
{
	struct rpc_call calls[RING_MAX_COPIES];
	uint32_t ids[RING_MAX_COPIES];
	struct cluster_config cfg;
	struct map_ref *m;
	int err = 0, placed;

	m = client_map_get(s, &err);
	if (!m)
		return err;
	pthread_mutex_lock(&s->lock);
	cfg = s->cfg;
	pthread_mutex_unlock(&s->lock);
	placed = ring_place(m->map->ring, oid, oid_copies(oid, cfg.copies), ids);
	if (placed < 0) {
		client_map_put(m);
		return placed;
	}
	memset(calls, 0, sizeof(calls));
	for (int i = 0; i < placed; i++) {
		calls[i].node = cmap_find(m->map, ids[i]);
		calls[i].req.opcode = SDFS_OP_OBJ_STAT;
		calls[i].req.oid = oid;
	}
	rpc_run(s->pool, calls, placed, s->timeout_ms, next_req_id, s);
	for (int i = 0; i < placed && (size_t)i < max; i++) {
		struct sdfs_replica *r = &out[i];
		struct sdfs_obj_stat st;

		memset(r, 0, sizeof(*r));
		r->node_id = ids[i];
		snprintf(r->addr, sizeof(r->addr), "%s:%u", calls[i].node->host,
			 calls[i].node->port);
		r->state = cmap_state_name(calls[i].node->state);
		r->result = rpc_result(&calls[i]);
		if (r->result == 0 && (!calls[i].rpayload ||
		    proto_obj_stat_decode(calls[i].rpayload, calls[i].reply.payload_len,
					  &st) != 0))
			r->result = -EPROTO;
		if (r->result == 0) {
			r->size = st.size;
			r->epoch = st.epoch;
			r->csum = st.csum;
			memcpy(r->path, calls[i].rpayload + sizeof(st), st.path_len);
			r->path[st.path_len] = '\0';
		}
	}
	rpc_calls_free(calls, placed);
	client_map_put(m);
	*n = (size_t)placed;
	return 0;
}

/* Is @id among the @n ids in @ids? */
static int id_in(const uint32_t *ids, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

/* A fence to raise on every up node: MDS_FENCE (oid 0, the MDS epoch)
 * or VOL_FENCE (oid = vid, a writer's token). */
struct fence_req {
	unsigned opcode;
	uint64_t oid;
	uint64_t value;         /* raise the fence to this */
	int cap_fresh;          /* VOL_FENCE: a node refused our cap (or none) */
	int err;                /* no cap to be had: the mds's answer */
};

/*
 * One round: @f to every up node of @map not yet in @acked, in
 * parallel; those that confirm a fence of at least f->value are added to
 * @acked. Returns how many were asked.
 */
static size_t fence_round(struct sdfs *s, const struct cmap *map,
			  struct fence_req *f, int timeout_ms,
			  uint32_t *acked, size_t *nacked)
{
	const char *op = proto_op_name(f->opcode);
	uint64_t epoch = f->value;
	struct rpc_call *calls = calloc(map->n ? map->n : 1, sizeof(*calls));
	uint8_t cap[OBJCAP_WIRE_SIZE];
	size_t nc = 0;
	int capped = 0;

	if (!calls)
		return 0;
	/* A volume's writer shows its write cap for the vid (objcap.h). */
	if (f->opcode == SDFS_OP_VOL_FENCE)
		capped = capcache_get(s, oid_vindex(f->oid, 0), OBJCAP_W, f->cap_fresh, cap);
	f->cap_fresh = 0;
	if (capped < 0) {
		f->err = capped;
		free(calls);
		return 0;
	}
	for (size_t i = 0; i < map->n; i++) {
		const struct cmap_node *nd = &map->nodes[i];

		if (nd->state != CMAP_UP || id_in(acked, *nacked, nd->node_id))
			continue;
		calls[nc].node = nd;
		calls[nc].req.opcode = (uint8_t)f->opcode;
		calls[nc].req.oid = f->oid;
		calls[nc].req.offset = epoch;
		calls[nc].req.epoch = (uint32_t)map->epoch;
		if (capped > 0) {
			calls[nc].req.flags = SDFS_F_CAP;
			calls[nc].req.payload_len = OBJCAP_WIRE_SIZE;
			calls[nc].payload = cap;
		}
		nc++;
	}
	for (size_t i = 0; i < nc; i += ADMIN_RPC_BATCH)
		rpc_run(s->pool, calls + i, nc - i > ADMIN_RPC_BATCH ? ADMIN_RPC_BATCH : nc - i,
			timeout_ms, next_req_id, s);
	for (size_t k = 0; k < nc; k++) {
		int r = rpc_result(&calls[k]);

		if (r == -EKEYREJECTED)
			f->cap_fresh = 1;
		if (r == 0 && calls[k].reply.offset >= epoch)
			acked[(*nacked)++] = calls[k].node->node_id;
		else if (r == 0)        /* cannot happen: a fence only rises */
			log_warn("node=%" PRIu32 " oid=%" PRIu64 ": %s %" PRIu64 " answered "
				 "with fence %" PRIu64 "; asking again", calls[k].node->node_id,
				 f->oid, op, epoch, calls[k].reply.offset);
		else
			log_debug("node=%" PRIu32 " oid=%" PRIu64 ": %s %" PRIu64 ": %s; "
				  "asking again", calls[k].node->node_id, f->oid, op, epoch,
				  strerror(-r));
	}
	rpc_calls_free(calls, nc);
	free(calls);
	return nc;
}

/* Rounds of @f until every up node confirmed it, or the handle's
 * timeout. */
static int fence_all(struct sdfs *s, struct fence_req *f)
{
	int64_t deadline = net_now_ms() + s->timeout_ms;
	uint32_t *acked = NULL;
	size_t nacked = 0, cap = 0;
	int ret;

	for (int attempt = 0;; attempt++) {
		struct map_ref *m;
		int err = 0;

		/* Fresh each round: nodes that went down are skipped (they read
		 * the epoch from ZooKeeper when they return), new ones asked. */
		atomic_store(&s->map_stale, 1);
		m = client_map_get(s, &err);
		if (!m) {
			ret = err;
			break;
		}
		if (cap < nacked + m->map->n) {
			uint32_t *a = realloc(acked, (nacked + m->map->n) * sizeof(*a));

			if (!a) {
				client_map_put(m);
				ret = -ENOMEM;
				break;
			}
			acked = a;
			cap = nacked + m->map->n;
		}
		int64_t left = deadline - net_now_ms();
		size_t asked = fence_round(s, m->map, f,
					   left < ADMIN_FENCE_TRY_MS ? (int)(left > 0 ? left : 1)
								     : ADMIN_FENCE_TRY_MS,
					   acked, &nacked);
		size_t missing = 0;

		if (f->err) {
			client_map_put(m);
			ret = f->err;
			break;
		}
		for (size_t i = 0; i < m->map->n; i++)
			missing += m->map->nodes[i].state == CMAP_UP &&
				   !id_in(acked, nacked, m->map->nodes[i].node_id);
		client_map_put(m);
		if (missing == 0) {
			ret = 0;
			break;
		}
		if (deadline - net_now_ms() <= 0) {
			log_warn("%s oid=%" PRIu64 " fence %" PRIu64 ": %zu up node%s did "
				 "not confirm in time", proto_op_name(f->opcode), f->oid,
				 f->value, missing, missing == 1 ? "" : "s");
			ret = -ETIMEDOUT;
			break;
		}
		if (asked)      /* failed fast (refused, not yet serving): pause */
			usleep((unsigned)(20 << (attempt < 4 ? attempt : 4)) * 1000);
	}
	free(acked);
	return ret;
}

int sdfs_mds_fence(struct sdfs *s, uint64_t epoch)
{
	struct fence_req f = { .opcode = SDFS_OP_MDS_FENCE, .value = epoch };

	/* Tokens are 32 bits: a higher fence would lock every writer out
	 * (block daemons refuse it too). */
	if (epoch > UINT32_MAX)
		return -EINVAL;
	return fence_all(s, &f);
}

int sdfs_vol_fence(struct sdfs *s, uint64_t vid, uint32_t token)
{
	struct fence_req f = { .opcode = SDFS_OP_VOL_FENCE, .oid = vid, .value = token };

	/* Block daemons refuse these too (a fence of 0 raises nothing). */
	if (vid == 0 || vid > SDFS_VID_MAX || token == 0)
		return -EINVAL;
	return fence_all(s, &f);
}
