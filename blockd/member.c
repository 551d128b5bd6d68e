/*
 * member.c - this blockd's identity and its view of the cluster:
 * the stable node id in the data dir, the ephemeral member znode, and
 * the cluster map, which every blockd keeps in step with membership.
 *
 * Keeping the map in step: on every membership or map event, a job on
 * the single-threaded coord queue reads the members and the map and,
 * if they disagree (a member missing from the map, a mapped node whose
 * member znode is gone or came back), writes the next epoch with a
 * compare-and-swap. All blockds race to do this; the CAS lets exactly
 * one write each epoch and the others re-read. The map thus numbers
 * every membership change, and every blockd ends on the same map.
 *
 * The MDS epoch: whenever the session is (re)established and whenever
 * mds/epoch changes, a job reads it (re-arming the watch) and raises
 * the MDS fence to it (fence.h), so a node that was away during a
 * takeover refuses the deposed mds too. Until that read succeeded in the
 * current session, the fence counts as unsynced and refuses MDS writes.
 * The volume fences go the same way: after every (re)connection the
 * same job loads every vid's fence from ZooKeeper (vfence_load), and
 * until it did, volume mutations are refused. There is no watch for
 * them: a writer raises them with VOL_FENCE after writing ZooKeeper, and
 * a node that could not hear it has lost its session meanwhile.
 *
 * Unresponsive nodes: a member with a marker suspects/<id>
 * (coord_suspect.h) counts as down once it acked the marker or a lease
 * and a half passed since this node first saw it (suspect_decide), at
 * most copies - 1 of them at once. Until then the job asks again every
 * quarter lease (250 ms at most). The map write checks the versions of the markers it
 * relied on (coord_map_cas_checked), so it never lands after a node
 * removed its marker and serves again. docs/recovery.md, "Unresponsive nodes", argues why no
 * stale read follows.
 *
 * ZooKeeper events arrive on the library's thread: they only set a bit
 * and post a call to the loop (member_on_event).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockd/blockd.h"
#include "blockd/datadir.h"
#include "blockd/fence.h"
#include "blockd/lease.h"
#include "blockd/strip_recover.h"
#include "blockd/vfence.h"
#include "common/coord_mds.h"
#include "common/coord_suspect.h"
#include "common/log.h"
#include "common/net.h"

#define MEMBER_CAS_TRIES 32

uint64_t member_epoch(const struct blockd *bd)
{
	return atomic_load(&((struct blockd *)bd)->map_epoch);
}

int member_node_id_load(struct blockd *bd)
{
	char buf[128];
	uint64_t id;
	int ret;

	/* A data dir belongs to one cluster: refuse another's. */
	ret = datadir_read(bd->dir, "cluster_uuid", buf, sizeof(buf));
	if (ret == 0) {
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, bd->cfg.uuid) != 0) {
			log_err("%s belongs to cluster %s, not %s (reformatted?); "
				"refusing to start", bd->dir, buf, bd->cfg.uuid);
			return -EXDEV;
		}
	} else if (ret == -ENOENT) {
		char text[64];

		snprintf(text, sizeof(text), "%s\n", bd->cfg.uuid);
		ret = datadir_write(bd->dir, "cluster_uuid", text);
		if (ret)
			return ret;
	} else {
		return ret;
	}

	ret = datadir_read_u64(bd->dir, "node_id", &id);
	if (ret == 0) {
		if (id == 0 || id > UINT32_MAX) {
			log_err("%s/node_id: malformed node id", bd->dir);
			return -EBADMSG;
		}
		bd->node_id = (uint32_t)id;
		return 0;
	}
	if (ret == -EBADMSG)
		log_err("%s/node_id: malformed node id", bd->dir);
	if (ret != -ENOENT)
		return ret;
	ret = coord_node_id_alloc(bd->coord, &bd->node_id);
	if (ret)
		return ret;
	ret = datadir_write_u64(bd->dir, "node_id", bd->node_id);
	if (!ret)
		log_info("node=%" PRIu32 ": new node id allocated", bd->node_id);
	return ret;
}

static void self_node(const struct blockd *bd, struct cmap_node *nd)
{
	memset(nd, 0, sizeof(*nd));
	nd->node_id = bd->node_id;
	nd->zone = bd->zone;
	nd->weight = bd->weight;
	nd->port = bd->port;
	nd->state = CMAP_UP;
	nd->full = !!(atomic_load(&((struct blockd *)bd)->space) & SDFS_SPACE_FULL);
	snprintf(nd->host, sizeof(nd->host), "%s", bd->host);
	nd->cport = bd->cport;
	snprintf(nd->chost, sizeof(nd->chost), "%s", bd->chost);
}

static int same_node(const struct cmap_node *a, const struct cmap_node *b)
{
	return a->node_id == b->node_id && a->zone == b->zone &&
	       a->weight == b->weight && a->port == b->port &&
	       a->state == b->state && a->down_ms == b->down_ms &&
	       a->drain == b->drain && a->wset == b->wset && a->full == b->full &&
	       strcmp(a->host, b->host) == 0 && a->cport == b->cport &&
	       strcmp(a->chost, b->chost) == 0;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A mapped node without a member znode: down now, out after the grace. */
static void node_gone(struct cmap_node *nd, uint64_t now, uint32_t grace_ms)
{
	if (nd->state == CMAP_UP) {
		nd->state = CMAP_DOWN;
		nd->down_ms = now;
	} else if (nd->state == CMAP_DOWN && now >= nd->down_ms + grace_ms) {
		nd->state = CMAP_OUT;
	}
}

/* A member: up, as it describes itself (its full flag too), but what
 * operators set stays. */
static void node_here(struct cmap_node *nd, const struct cmap_node *cur,
		      const struct cmap_node *mem)
{
	*nd = *mem;
	nd->state = CMAP_UP;
	nd->down_ms = 0;
	if (cur) {
		nd->drain = cur->drain;
		nd->wset = cur->wset;
		if (cur->wset)
			nd->weight = cur->weight;
	}
}

/*
 * The map that membership @mem implies, starting from @cur: nodes keep
 * their place; a node without a member znode is down, and out once down
 * for @grace_ms; a member not in the map is added. Returns 1 and *@next
 * if it differs from @cur.
 */
static int map_next(const struct cmap *cur, const struct cmap_node *mem, size_t nmem,
		    uint64_t now, uint32_t grace_ms, struct cmap **next)
{
	struct cmap_node *nodes = calloc(cur->n + nmem + 1, sizeof(*nodes));
	size_t n = 0, i, j;
	int changed = 0;

	if (!nodes)
		return -ENOMEM;
	/* Both lists are sorted by node id: merge. */
	for (i = 0, j = 0; i < cur->n || j < nmem;) {
		if (j == nmem || (i < cur->n && cur->nodes[i].node_id < mem[j].node_id)) {
			nodes[n] = cur->nodes[i++];
			node_gone(&nodes[n], now, grace_ms);
		} else {
			int both = i < cur->n && cur->nodes[i].node_id == mem[j].node_id;

			node_here(&nodes[n], both ? &cur->nodes[i] : NULL, &mem[j]);
			if (both)
				i++;
			j++;
		}
		n++;
	}
	if (n != cur->n)
		changed = 1;
	for (i = 0; !changed && i < n; i++)
		changed = !same_node(&nodes[i], &cur->nodes[i]);
	int ret = changed ? cmap_new(cur->epoch + 1, nodes, n, next) : 0;
	free(nodes);
	return ret ? ret : changed;
}

struct reconcile_job {
	struct work work;
	struct blockd *bd;
	uint32_t grace_ms;
	int suspect_wait_ms;    /* a marked member's wait without its ack */
	unsigned max_suspect_down;
	struct cmap_node self;
	struct coord *coord;
	struct cmap *map;       /* result */
	int pending;            /* a marked member's wait still runs */
	int ret;
};

/*
 * Take the marked members to count as down out of @mem (suspect_decide;
 * the seen table is the coord worker's, in bd). The markers of those
 * taken out go to *@checks (*@nchecks; free()), the list's version to
 * *@list_version: the map is written only while they are still the ones
 * read. 0 or -errno.
 */
static int drop_suspects(struct reconcile_job *j, const struct cmap *cur,
			 struct cmap_node *mem, size_t *nmem,
			 struct coord_suspect **checks, size_t *nchecks,
			 int32_t *list_version)
{
	struct coord_suspect *sus = NULL;
	uint32_t *drop;
	size_t nsus = 0, ndrop, n = 0;
	int ret = coord_suspects_get(j->coord, 1, &sus, &nsus, list_version);

	if (ret)
		return ret;
	drop = calloc(*nmem + 1, sizeof(*drop));
	if (!drop) {
		free(sus);
		return -ENOMEM;
	}
	ndrop = suspect_decide(cur, mem, *nmem, sus, nsus, j->bd->seen, &j->bd->nseen,
			       net_now_ms(), j->suspect_wait_ms, j->max_suspect_down,
			       drop, &j->pending);
	/* The decision relied on these markers: keep only theirs (sus is
	 * ours, and every dropped id has one). */
	*nchecks = 0;
	for (size_t k = 0; k < nsus; k++)
		for (size_t i = 0; i < ndrop; i++)
			if (drop[i] == sus[k].node_id)
				sus[(*nchecks)++] = sus[k];
	for (size_t i = 0; i < *nmem; i++) {
		int gone = 0;

		for (size_t k = 0; k < ndrop && !gone; k++)
			gone = drop[k] == mem[i].node_id;
		if (gone) {
			const struct cmap_node *nd = cmap_find(cur, mem[i].node_id);

			if (nd && nd->state == CMAP_UP)
				log_warn("node=%" PRIu32 ": reported unresponsive; marking "
					 "it down", mem[i].node_id);
			continue;
		}
		mem[n++] = mem[i];
	}
	if (nsus > ndrop && !j->pending)
		log_debug("%zu unresponsive reports, %zu acted on (at most %u at once)",
			  nsus, ndrop, j->max_suspect_down);
	*nmem = n;
	free(drop);
	*checks = sus;
	return 0;
}

/* Worker: bring the map in line with membership; leave the latest in job. */
static void reconcile_fn(struct work *w)
{
	struct reconcile_job *j = (struct reconcile_job *)w;

	for (int tries = 0; tries < MEMBER_CAS_TRIES; tries++) {
		struct cmap_node *mem = NULL;
		struct cmap *cur = NULL, *next = NULL;
		struct coord_suspect *checks = NULL;
		size_t nmem = 0, nchecks = 0;
		int32_t list_version = -1;
		int ret, self_seen = 0;

		/*
		 * The map first: ZooKeeper orders one session's reads, so the
		 * member list read after it is at least as new. The other order
		 * could judge a newer map by an older member list and mark a
		 * node that just joined down.
		 */
		ret = coord_map_get(j->coord, 1, &cur);
		if (!ret)
			ret = coord_members_get(j->coord, 1, &mem, &nmem);
		if (ret) {
			free(mem);
			cmap_free(cur);
			j->ret = ret;
			return;
		}
		for (size_t i = 0; i < nmem; i++)
			self_seen |= mem[i].node_id == j->self.node_id;
		if (!self_seen) {
			/* Our ephemeral is gone (an expired session): re-create it. */
			ret = coord_member_join(j->coord, &j->self);
			free(mem);
			cmap_free(cur);
			if (ret && ret != -EEXIST) {
				j->ret = ret;
				return;
			}
			continue;
		}
		j->pending = 0;
		ret = drop_suspects(j, cur, mem, &nmem, &checks, &nchecks,
				    &list_version);
		if (ret) {
			free(mem);
			cmap_free(cur);
			j->ret = ret;
			return;
		}
		ret = map_next(cur, mem, nmem, wall_ms(), j->grace_ms, &next);
		free(mem);
		if (ret < 0) {
			free(checks);
			cmap_free(cur);
			j->ret = ret;
			return;
		}
		if (ret == 0) {
			free(checks);
			cmap_free(j->map);
			j->map = cur;
			j->ret = 0;
			return;
		}
		/* With a check of every marker the decision relied on: one
		 * deleted since (its node may serve again) fails the write,
		 * and we decide again (docs/recovery.md). */
		ret = coord_map_cas_checked(j->coord, cur, next, list_version,
					    checks, nchecks);
		free(checks);
		cmap_free(cur);
		if (ret == 0)
			log_info("epoch=%" PRIu64 ": cluster map written (%zu nodes)",
				 next->epoch, next->n);
		cmap_free(next);
		if (ret && ret != -EAGAIN) {
			j->ret = ret;
			return;
		}
		/* Written or lost the race: re-read, so the result is what is stored. */
	}
	j->ret = -EAGAIN;
}

static void reconcile_start(struct blockd *bd);

static void reconcile_done(struct work *w)
{
	struct reconcile_job *j = (struct reconcile_job *)w;
	struct blockd *bd = j->bd;

	bd->reconcile_running = 0;
	bd->suspect_pending = j->pending;
	if (j->ret == 0 && j->map) {
		if (!bd->map || j->map->epoch > bd->map->epoch) {
			log_info("node=%" PRIu32 " epoch=%" PRIu64 ": now in effect "
				 "(%zu nodes)", bd->node_id, j->map->epoch, j->map->n);
			cmap_free(bd->map);
			bd->map = j->map;
			j->map = NULL;
			atomic_store(&bd->map_epoch, bd->map->epoch);
			atomic_store(&bd->map_zversion, bd->map->zversion);
			recover_map_changed(bd->recover, bd->map);
			strip_recover_map_changed(bd->strip_rec, bd->map);
		}
	} else if (j->ret) {
		log_warn("node=%" PRIu32 ": cluster map update failed: %s; will retry",
			 bd->node_id, strerror(-j->ret));
		bd->reconcile_again = 1;
	}
	cmap_free(j->map);
	free(j);
	if (bd->reconcile_again)
		reconcile_start(bd);
}

static void reconcile_start(struct blockd *bd)
{
	struct reconcile_job *j;

	if (bd->reconcile_running) {
		bd->reconcile_again = 1;
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		bd->reconcile_again = 1;
		return;
	}
	bd->reconcile_again = 0;
	bd->reconcile_running = 1;
	j->bd = bd;
	j->coord = bd->coord;
	j->grace_ms = bd->cfg.out_grace_ms;
	/* The node's lease, and half of it again for clock rates and late
	 * answers (docs/recovery.md). */
	j->suspect_wait_ms = bd->conf.lease_ms + bd->conf.lease_ms / 2;
	j->max_suspect_down = bd->cfg.copies > 1 ? bd->cfg.copies - 1 : 0;
	self_node(bd, &j->self);
	j->work.fn = reconcile_fn;
	j->work.done = reconcile_done;
	workq_push(bd->coord_q, &j->work);
}

struct fence_sync_job {
	struct work work;
	struct blockd *bd;
	struct coord *coord;
	struct fence *fence;
	struct vfence *vfence;  /* load it too (not synced when queued); NULL: no */
	unsigned gen;           /* bd->fence_gen when queued */
	uint64_t epoch;
	int ret;
};

/* Worker: read the MDS epoch, watching it, and raise the fence to it;
 * then every volume fence, if asked. */
static void fence_sync_fn(struct work *w)
{
	struct fence_sync_job *j = (struct fence_sync_job *)w;

	j->ret = coord_mds_epoch_get(j->coord, 1, &j->epoch);
	if (!j->ret)
		j->ret = fence_raise(j->fence, j->epoch, "mds epoch in ZooKeeper", NULL);
	if (!j->ret && j->vfence)
		j->ret = vfence_load(j->vfence, j->coord);
}

static void fence_sync_start(struct blockd *bd);

static void fence_sync_done(struct work *w)
{
	struct fence_sync_job *j = (struct fence_sync_job *)w;
	struct blockd *bd = j->bd;

	bd->fence_sync_running = 0;
	if (j->ret) {
		/* The tick tries again (reconcile_tick). */
		log_warn("node=%" PRIu32 ": cannot bring the mds and volume fences "
			 "in step with ZooKeeper: %s; refusing their writes until it is",
			 bd->node_id, strerror(-j->ret));
	} else if (j->gen != bd->fence_gen) {
		/* The session dropped meanwhile: what was loaded may be old. */
		vfence_set_synced(bd->vfence, 0);
		bd->fence_sync_again = 1;
	} else {
		if (!fence_is_synced(bd->fence))
			log_info("node=%" PRIu32 ": mds epoch %" PRIu64 ", mds fence %"
				 PRIu64, bd->node_id, j->epoch, fence_get(bd->fence));
		if (j->vfence)
			log_info("node=%" PRIu32 ": volume fences loaded (%" PRIu64
				 " vids)", bd->node_id, vfence_count(bd->vfence));
		fence_set_synced(bd->fence, 1);
	}
	free(j);
	if (bd->fence_sync_again && bd->zk_connected)
		fence_sync_start(bd);
}

static void fence_sync_start(struct blockd *bd)
{
	struct fence_sync_job *j;

	if (bd->fence_sync_running) {
		bd->fence_sync_again = 1;
		return;
	}
	bd->fence_sync_again = 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return;         /* the tick tries again */
	bd->fence_sync_running = 1;
	j->bd = bd;
	j->coord = bd->coord;
	j->fence = bd->fence;
	j->vfence = vfence_is_synced(bd->vfence) ? NULL : bd->vfence;
	j->gen = bd->fence_gen;
	j->work.fn = fence_sync_fn;
	j->work.done = fence_sync_done;
	workq_push(bd->coord_q, &j->work);
}

/* The session may have missed an MDS epoch or a volume fence: refuse
 * MDS and volume writes until the next read. */
static void fence_unsync(struct blockd *bd)
{
	bd->fence_gen++;
	fence_set_synced(bd->fence, 0);
	vfence_set_synced(bd->vfence, 0);
}

/* Loop thread: act on the events the zk thread noted. */
static void coord_events_run(void *arg)
{
	struct blockd *bd = arg;
	unsigned ev = atomic_exchange(&bd->coord_events, 0);

	if (ev & (1u << COORD_EV_EXPIRED)) {
		log_warn("node=%" PRIu32 ": ZooKeeper session expired; rejoining",
			 bd->node_id);
		bd->zk_connected = 0;
		bd->zk_expired = 1;
		fence_unsync(bd);
	}
	if (bd->zk_expired) {
		if (coord_reopen(bd->coord, bd->conf.session_ms) == 0) {
			bd->zk_expired = 0;
			ev |= 1u << COORD_EV_CONNECTED;
		} else {
			log_err("node=%" PRIu32 ": cannot reconnect to ZooKeeper yet; "
				"retrying", bd->node_id);
		}
	}
	/*
	 * Without a live session we may already be marked down and our
	 * data superseded: serve nothing until the session is back. The
	 * client library notices CONNECTING at 2/3 of the session timeout,
	 * before ZooKeeper expires the session and others move on.
	 */
	if (ev & (1u << COORD_EV_CONNECTING)) {
		bd->zk_connected = 0;
		fence_unsync(bd);
		log_warn("node=%" PRIu32 ": ZooKeeper connection lost; refusing I/O "
			 "until it is back", bd->node_id);
	}
	if (ev & (1u << COORD_EV_CONNECTED) && coord_is_connected(bd->coord)) {
		if (!bd->zk_connected)
			log_info("node=%" PRIu32 ": ZooKeeper session live", bd->node_id);
		bd->zk_connected = 1;
	}
	if (ev & ((1u << COORD_EV_MEMBERS) | (1u << COORD_EV_MAP) |
		  (1u << COORD_EV_SUSPECTS) |
		  (1u << COORD_EV_CONNECTED) | (1u << COORD_EV_EXPIRED)))
		reconcile_start(bd);
	if (bd->zk_connected &&
	    ev & ((1u << COORD_EV_CONNECTED) | (1u << COORD_EV_MDS_EPOCH)))
		fence_sync_start(bd);
}

void member_on_event(enum coord_event ev, void *arg)
{
	struct blockd *bd = arg;

	if (atomic_fetch_or(&bd->coord_events, 1u << ev) == 0)
		loop_post(bd->loop, &bd->coord_call);
}

/* Periodic safety net: a lost watch (or a failed update) is redone. */
static void reconcile_tick(void *arg)
{
	struct blockd *bd = arg;

	if (bd->zk_expired) {
		member_on_event(COORD_EV_EXPIRED, bd);
		return;
	}
	/* A node down past the grace goes out: someone must write that. */
	for (size_t i = 0; bd->map && i < bd->map->n; i++) {
		const struct cmap_node *nd = &bd->map->nodes[i];

		if (nd->state == CMAP_DOWN &&
		    wall_ms() >= nd->down_ms + bd->cfg.out_grace_ms)
			bd->reconcile_again = 1;
	}
	if (bd->reconcile_again)
		reconcile_start(bd);
	if (bd->zk_connected &&
	    (!fence_is_synced(bd->fence) || !vfence_is_synced(bd->vfence)))
		fence_sync_start(bd);
}

/* A marked member's wait runs: look again every quarter lease, at
 * most every 250 ms. */
static void suspect_tick(void *arg)
{
	struct blockd *bd = arg;

	if (bd->suspect_pending)
		reconcile_start(bd);
}

/*
 * The full flag (issue 14): writers refuse data writes an up node that
 * the map calls full would hold, before any replica applies them. When
 * the node's space state (ops.c) and what the map says of it differ,
 * our member document is rewritten and the map reconciled, as for a
 * change of weight. A change judged on the I/O path only posts
 * space_call; a tick judges on an I/O worker too, as nobody sends a
 * full node data writes any more to notice it has room again. One job
 * at a time (bd->space_job); a failed update is redone by the tick.
 */
struct space_job {
	struct work work;
	struct blockd *bd;
	struct cmap_node self;  /* update: our member document */
	int ret;
};

static void space_sync(void *arg);

static void space_judge_fn(struct work *w)
{
	ops_space(((struct space_job *)w)->bd);
}

static void space_update_fn(struct work *w)
{
	struct space_job *j = (struct space_job *)w;

	j->ret = coord_member_update(j->bd->coord, &j->self);
}

static void space_job_done(struct work *w)
{
	struct space_job *j = (struct space_job *)w;
	struct blockd *bd = j->bd;

	bd->space_job = 0;
	if (j->work.fn == space_update_fn) {
		if (j->ret)
			log_warn("node=%" PRIu32 ": cannot set full=%u in our member "
				 "document: %s; will retry", bd->node_id, j->self.full,
				 strerror(-j->ret));
		else
			log_info("node=%" PRIu32 ": member document says full=%u",
				 bd->node_id, j->self.full);
		reconcile_start(bd);    /* the map follows (or we join again) */
	} else {
		space_sync(bd);
	}
	free(j);
}

static void space_job_push(struct blockd *bd, work_fn fn, struct workq *q)
{
	struct space_job *j = calloc(1, sizeof(*j));

	if (!j)
		return;         /* the tick tries again */
	bd->space_job = 1;
	j->bd = bd;
	self_node(bd, &j->self);
	j->work.fn = fn;
	j->work.done = space_job_done;
	workq_push(q, &j->work);
}

/* Loop thread: does the map say of us what our space state says? */
static void space_sync(void *arg)
{
	struct blockd *bd = arg;
	const struct cmap_node *nd;
	unsigned full;

	atomic_store(&bd->space_posted, 0);
	if (bd->space_job || bd->reconcile_running || !bd->zk_connected || !bd->map)
		return;
	full = !!(atomic_load(&bd->space) & SDFS_SPACE_FULL);
	nd = cmap_find(bd->map, bd->node_id);
	if (nd && nd->state == CMAP_UP && nd->full != full)
		space_job_push(bd, space_update_fn, bd->coord_q);
}

static void space_tick(void *arg)
{
	struct blockd *bd = arg;

	if (!bd->space_job)
		space_job_push(bd, space_judge_fn, bd->io_q);
}

void member_space_changed(struct blockd *bd)
{
	if (atomic_load(&bd->space_armed) && !atomic_exchange(&bd->space_posted, 1))
		loop_post(bd->loop, &bd->space_call);
}

enum sdfs_res member_admit_any(struct blockd *bd, const struct sdfs_hdr *h)
{
	if (!bd->lease)
		return SDFS_RES_OK;
	/* A request from a newer epoch than ours gets NEW_EPOCH anyway. */
	return lease_admit(bd->lease, atomic_load(&bd->map_zversion),
			   h->epoch != 0 && h->epoch <= member_epoch(bd));
}

enum sdfs_res member_admit(struct blockd *bd, const struct sdfs_hdr *h)
{
	enum sdfs_res res = member_admit_any(bd, h);

	if (res == SDFS_RES_OK && bd->lease &&
	    lease_lapses(bd->lease) != bd->lease_lapses) {
		/* We refused whatever came meanwhile, a VOL_FENCE or an
		 * MDS_FENCE too: read the fences again before their writes. */
		bd->lease_lapses = lease_lapses(bd->lease);
		fence_unsync(bd);
		if (bd->zk_connected)
			fence_sync_start(bd);
	}
	if (res == SDFS_RES_OLD_EPOCH)
		member_on_event(COORD_EV_MAP, bd);      /* install the newer map */
	return res;
}

int member_join(struct blockd *bd)
{
	struct cmap_node self;
	int ret;

	bd->coord_call.fn = coord_events_run;
	bd->coord_call.arg = bd;
	self_node(bd, &self);
	/*
	 * After a kill -9 our previous session's ephemeral lingers until
	 * ZooKeeper expires it (one session timeout): wait that out.
	 */
	for (int waited = 0;; waited += 200) {
		ret = coord_member_join(bd->coord, &self);
		if (ret == -ETIMEDOUT && waited < 30000)
			goto again;     /* ZooKeeper slow under load */
		if (ret != -EEXIST || waited > bd->conf.session_ms * 3)
			break;
		if (waited == 0)
			log_info("node=%" PRIu32 ": previous session still registered; "
				 "waiting for it to expire", bd->node_id);
again:
		usleep(200 * 1000);
	}
	if (ret) {
		log_err("node=%" PRIu32 ": cannot register in ZooKeeper: %s",
			bd->node_id, ret == -EEXIST ? "node id in use by a live daemon"
						    : strerror(-ret));
		return ret;
	}
	bd->zk_connected = coord_is_connected(bd->coord);
	ret = loop_add_timer(bd->loop, 1000, reconcile_tick, bd);
	if (ret < 0)
		return ret;
	/* At most 250 ms late on a wait that ends: that lateness adds to
	 * a write's stall on a node that does not ack. */
	int tick = bd->conf.lease_ms / 4 < 250 ? bd->conf.lease_ms / 4 : 250;

	ret = loop_add_timer(bd->loop, tick > 50 ? tick : 50, suspect_tick, bd);
	if (ret < 0)
		return ret;
	bd->space_call = (struct loop_call){ .fn = space_sync, .arg = bd };
	atomic_store(&bd->space_armed, 1);
	ret = loop_add_timer(bd->loop, 1000, space_tick, bd);
	if (ret < 0)
		return ret;
	reconcile_start(bd);
	if (bd->zk_connected)
		fence_sync_start(bd);
	return 0;
}
