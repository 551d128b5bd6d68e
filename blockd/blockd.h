/*
 * blockd.h - the state of one sdfs-blockd and how its parts meet.
 *
 * One struct blockd per process, owned by the event loop thread (the
 * main thread); workers see only the jobs they are given plus the
 * objstore, which is thread-safe. Parts:
 *   client_conn.c  connections: framing, checks, replies
 *   ops.c          what each request does (dispatch table)
 *   member.c       node id, ZooKeeper membership, the cluster map, the
 *                  MDS epoch the fence follows, and loading the volume
 *                  fences
 *   fence.c        the MDS fence (fence.h)
 *   vfence.c       the volume fences, per vid (vfence.h)
 *   recover*.c     keeping copies current across epochs (recover.h)
 *   order.c        shared objects' mutations, ordered by their primary
 *                  (order.h)
 *   copy.c         OBJ_COPY: a volume's copy-on-write (copy.h)
 *   strip*.c       strips of erasure-coded objects (strip_ops.h,
 *                  stripstore.h)
 *   backing.c      the objects OBJ_COPY makes backed by their source:
 *                  read-through, the filler, OBJ_FILL (backing.h)
 *   scrub*.c       re-reading every copy in the background, repairing
 *                  the corrupt ones and replacing stale or odd ones
 *                  (scrub.h); recover_repair.c
 *   lease.c        the serving lease: serve only while ZooKeeper says we
 *                  may (lease.h); suspect.c its and the markers' rules
 *   main.c         options and start-up
 */
#ifndef SDFS_BLOCKD_BLOCKD_H
#define SDFS_BLOCKD_BLOCKD_H
#include <stdatomic.h>
#include <stdint.h>

#include "blockd/objstore.h"
#include "blockd/recover.h"
#include "blockd/scrub.h"
#include "blockd/suspect.h"
#include "common/cmap.h"
#include "common/conf.h"
#include "common/coord.h"
#include "common/keydb.h"
#include "common/keys.h"
#include "common/loop.h"
#include "common/sdfs_proto.h"
#include "common/workq.h"

struct blockd {
	/* options */
	char dir[512];
	char host[CMAP_MAX_HOST];
	uint16_t port;
	/* the cluster network (--cluster-listen, sdfs.conf cluster_addr):
	 * peers' connections only; cport 0: none, peers use the public */
	char chost[CMAP_MAX_HOST];
	uint16_t cport;
	uint32_t zone;
	uint32_t weight;                /* 0: from capacity */
	int io_threads;
	struct recover_opts rec_opts;
	struct scrub_opts scrub_opts;
	struct sdfs_conf conf;          /* zk, cluster, session_ms */
	char keyring[512];              /* --keyring; else conf.keyring */

	/* state, loop thread */
	struct loop *loop;
	struct workq *io_q;             /* disk I/O */
	struct workq *coord_q;          /* ZooKeeper calls (one thread) */
	struct order *order;            /* primary-ordered mutations (order.h) */
	struct copy *copy;              /* OBJ_COPY: copy-on-write here (copy.h) */
	struct backing *backing;        /* backed objects, the filler (backing.h) */
	struct lease *lease;            /* serving lease (lease.h) */
	struct objstore *store;
	struct stripstore *strips;      /* EC strips (stripstore.h) */
	struct strip_recover *strip_rec;/* rebuilding them (strip_recover.h) */
	struct recover *recover;
	struct scrub *scrub;            /* background scrub (scrub.h) */
	struct fence *fence;            /* the MDS fence (fence.h) */
	struct vfence *vfence;          /* volume fences (vfence.h) */
	struct coord *coord;
	struct cluster_config cfg;
	int auth;                       /* cfg.auth required: connections
					   authenticate (client_conn.c) */
	struct keydb *keydb;            /* the keys it accepts (auth) */
	uint32_t node_id;
	struct cmap *map;               /* latest map seen; epoch = map->epoch */
	int listen_fd;
	int cluster_fd;                 /* the cluster listener, or -1 */
	int stopping;
	int zk_connected;               /* our ZooKeeper session is live */
	int zk_expired;                 /* session gone, new one not yet made */

	/* member.c bookkeeping */
	atomic_uint coord_events;       /* bits of enum coord_event, set on the zk thread */
	struct loop_call coord_call;
	int reconcile_running, reconcile_again;
	int fence_sync_running, fence_sync_again;
	unsigned fence_gen;             /* +1 whenever the session may have missed an MDS
					   epoch or a volume fence */
	unsigned lease_lapses;          /* lease_lapses() last acted on */
	int suspect_pending;            /* a marked member's wait runs: reconcile again */
	/* the coord worker's own (reconcile_fn): markers first seen */
	struct suspect_seen seen[SUSPECT_SEEN_MAX];
	size_t nseen;

	/* counters */
	uint64_t requests;              /* loop thread */
	atomic_uint_fast64_t errors;    /* replies not OK, from any thread */
	atomic_uint_fast64_t map_epoch; /* map->epoch, for any thread */
	atomic_int map_zversion;        /* map->zversion, for any thread (lease) */
	unsigned conns;

	/* ops.c: the data filesystem's state (SDFS_SPACE_*), any thread */
	atomic_uint space;              /* as last judged ... */
	atomic_int_fast64_t space_ms;   /* ... at this net_now_ms (0: never) */
	atomic_uint nospace;            /* a write hit ENOSPC, space not back */
	atomic_uint_fast64_t nospace_avail; /* avail_bytes when it did */

	/* member.c: the map's full flag follows the space state (issue 14) */
	struct loop_call space_call;    /* member_space_changed posts it */
	atomic_uint space_armed;        /* space_call is set up */
	atomic_uint space_posted;       /* space_call is queued */
	int space_job;                  /* loop thread: a judge or an update runs */

	/* ops.c: object capabilities (common/objcap.h); set once at start
	 * by ops_set_secret, read by the loop thread */
	int objcap_on;                  /* the cluster secret is known */
	uint8_t objcap_key[AUTH_KEY_BYTES];
};

/* client_conn.c: accept connections on bd->listen_fd, and on
 * bd->cluster_fd (when >= 0) those of daemon keys only. */
int client_conn_start(struct blockd *bd);

/* ops.c: the request dispatch (see client_conn.c for framing). */
struct conn;
struct req;
/* Handle one checked request; takes ownership of @payload (free()). */
void ops_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h,
		  uint8_t *payload);
/* Apply the REPL_* mutation @h (@payload) on the calling thread, as an
 * I/O worker would (order.c, for the primary's own copy); the request's
 * epoch was checked at dispatch and is checked again under the object's
 * lock. 0 or -errno. */
int ops_apply(struct blockd *bd, const struct sdfs_hdr *h, const uint8_t *payload);
/* OBJ_COPY's write (copy.c): replace @h->oid, as a REPL_REPLACE would
 * (fences, recovery lock, space check, the next version in h->epoch), by
 * an object backed by @backing of @size bytes holding @piece[0..len) at
 * h->offset (objstore_put_backed). 0 or -errno. */
int ops_put_backed(struct blockd *bd, const struct sdfs_hdr *h, uint64_t backing,
		   uint64_t size, const uint8_t *piece, uint32_t len,
		   const struct objstore_src *src);
/* Queue a reply on @c, from any thread; takes ownership of @payload
 * (free(), may be NULL). */
void client_conn_reply(struct conn *c, struct sdfs_hdr *h, uint8_t *payload);
void client_conn_put(struct conn *c);   /* drop a reference taken by ops */
void client_conn_get(struct conn *c);
struct auth_ident;
/* The key at the other end of @c and the caps the cluster gives it;
 * NULL when the cluster runs without authentication. Fixed before the
 * connection's first request is dispatched: any thread holding a
 * reference. */
const struct auth_ident *client_conn_ident(const struct conn *c);

/* ops.c: the cluster secret (from the daemon's keyring), before the
 * loop starts: object ops of keys that are neither admin nor daemon are
 * then checked against their capabilities (docs/security.md "Object
 * capabilities"). Without it such keys get no object op at all. */
void ops_set_secret(struct blockd *bd, const uint8_t secret[AUTH_KEY_BYTES]);

/* ops.c: judge the node's space (statvfs, at most every 100 ms) and
 * return its SDFS_SPACE_* state. Any thread but the loop's (disk I/O). */
unsigned ops_space(struct blockd *bd);

/* member.c */
int member_node_id_load(struct blockd *bd);     /* read or allocate */
int member_join(struct blockd *bd);             /* ephemeral + first map */
void member_on_event(enum coord_event ev, void *arg);  /* coord callback */
uint64_t member_epoch(const struct blockd *bd);        /* any thread */
/* Loop thread, before a request is served: SDFS_RES_OK, or the answer
 * refusing it (the lease, lease.h). After a lapse of the lease the MDS
 * and volume fences are re-read before their writes are taken again. */
enum sdfs_res member_admit(struct blockd *bd, const struct sdfs_hdr *h);
/* Any thread (the primary's own copy): the same without the fences. */
enum sdfs_res member_admit_any(struct blockd *bd, const struct sdfs_hdr *h);
/* Any thread: the space state's full bit changed; the member document
 * and then the map follow it (never blocks). */
void member_space_changed(struct blockd *bd);
#endif
