/*
 * recover.h - keeping this node's copies current across epochs.
 *
 * The rule (docs/recovery.md): every write tagged with epoch t reached
 * every up holder of its object in map t. So this node's copy of an
 * object is current if it was an up holder in every epoch since the
 * copy's tag (the fast path, no I/O). Otherwise it asks every up node
 * for its copy's tag and takes the newest, but only if every node that
 * could hold a newer one answered; if not, the object is unavailable
 * here (SDFS_RES_UNAVAIL) rather than possibly old (Sheepdog §4.4).
 *
 * After each epoch change a background pass lists every node's objects,
 * fetches what this node must now hold, and removes copies placement
 * moved away once every new holder has them. Client requests for an
 * object not yet settled settle it first, on demand.
 *
 * Thread-safety: recover_ensure and recover_note_* from any worker
 * thread; recover_map_changed from the loop thread; recover_fill_info
 * from anywhere.
 */
#ifndef SDFS_BLOCKD_RECOVER_H
#define SDFS_BLOCKD_RECOVER_H
#include <stdint.h>

#include "common/cmap.h"
#include "common/ring.h"
#include "common/sdfs_proto.h"

struct blockd;
struct recover;

struct recover_opts {
	int threads;            /* objects fetched in parallel (default 2) */
	uint32_t mbps;          /* recovery bandwidth cap, MB/s (default 200) */
	int peer_timeout_ms;    /* per peer request (default 3000) */
};

/* Start the pass thread. @bd must outlive it (recover_free first). */
int recover_new(struct blockd *bd, const struct recover_opts *o, struct recover **out);
void recover_free(struct recover *r);

/* The loop thread installed map @m: remember it, start a pass. */
void recover_map_changed(struct recover *r, const struct cmap *m);

/*
 * Before a client operation on @oid in @epoch: make the local copy (or
 * its absence) current, fetching a newer copy from a peer if there is
 * one. 0 when current; -ENODATA when no copy known to be current is
 * reachable; -EAGAIN when this node or a peer is between epochs (the
 * client retries); -errno otherwise.
 */
int recover_ensure(struct recover *r, uint64_t oid, uint64_t epoch);
/* The cluster map of @epoch (kept until recover_free): 0 and *@out,
 * or -errno. Any thread. */
int recover_map(struct recover *r, uint64_t epoch, const struct cmap **out);
/*
 * Scrub (scrub.h) found this node's copy of @oid corrupt: rewrite it
 * from a good copy on another up node, under the object's lock, as of
 * map @epoch (recover_repair.c). The copy here is first settled as for
 * a client op (that may fetch a newer copy, which repairs it); if still
 * corrupt, a peer's copy of the same version or newer is fetched (the
 * peer checks every block as it reads), never an older one. With the
 * header here unreadable too, the newest copy elsewhere is taken only
 * if holders of every later epoch answered. 0: the copy here is good
 * now (*@from: the node it came from; 0 when it was rewritten some
 * other way meanwhile); -ENOENT: removed meanwhile; -EAGAIN: this node
 * or a peer is between epochs (try later); -ENODATA: no good current
 * copy reachable, the copy here is left as it was. Any thread but the
 * loop's (it talks to peers).
 */
int recover_repair(struct recover *r, uint64_t oid, uint64_t epoch, uint32_t *from);
/* What another up holder holds of an object, as it answered. */
struct recover_peer_copy {
	uint32_t node_id;
	int present;            /* 0: answered "no copy" */
	int deleted;            /* a tombstone */
	uint64_t version;
	uint64_t csum;          /* objstore_stat_table's; 0: unknown */
};

/* A copy here (@version, @csum) against the other up holders' copies. */
struct recover_look {
	uint64_t version, csum;
	size_t n;               /* the other up holders that answered */
	struct recover_peer_copy peer[RING_MAX_COPIES];
	unsigned compared;      /* their copies of @version with a csum */
	unsigned differ;        /* ... of those, with another csum */
	unsigned newer;         /* their copies (or tombstones) newer than @version */
};

/*
 * Scrub, on a copy here that verified with @version and @csum: what do
 * the other up holders of @oid in map @epoch hold (a raw OBJ_STAT with
 * SDFS_STAT_CSUM to every up node, as a settle asks; a peer reads only
 * its checksum table for it)? Fills *@out; nothing is changed. 0;
 * -EAGAIN between epochs; -ENOENT when this node is no up holder of
 * @oid in @epoch (placement moved the copy: recovery's to drop).
 */
int recover_look(struct recover *r, uint64_t oid, uint64_t epoch, uint64_t version,
		 uint64_t csum, struct recover_look *out);

/* recover_reconcile's outcome. */
enum recover_verdict {
	RECOVER_AGREE,          /* the copies agree by now */
	RECOVER_BUSY,           /* something moved since @first: a write in
				   flight, an epoch change; nothing done */
	RECOVER_REFRESHED,      /* the copy here was stale or the odd one:
				   replaced from node *@from */
	RECOVER_KEPT,           /* the copy here is the right one by the
				   rule; the odd ones are their nodes' to
				   replace */
	RECOVER_NO_RULE,        /* copies of one version differ and no rule
				   says which is right: left as they are */
};

/*
 * Scrub, some time after recover_look gave @first with copies newer
 * than the one here or of its version with other contents: under the
 * object's lock (no client change or settle of @oid here meanwhile)
 * settle it, check that the copy here and every peer's are still
 * exactly as in @first (else RECOVER_BUSY: a write was in flight), and
 * then make the copy here the right one (docs/scrub.md "Copies that
 * differ"):
 *  - a newer copy elsewhere: the newest is fetched (raw OBJ_READ, the
 *    source checks every block), never an older or equal one;
 *  - copies of the same version with other contents: the csum a strict
 *    majority of the object's up holders hold; else, for an object
 *    ordered through its primary (oid_is_ordered), the copy of the
 *    primary of the version's epoch; else none (RECOVER_NO_RULE).
 * *@from: the source of a refresh; *@why: the rule that decided
 * ("newer", "majority", "primary"; "" otherwise). The verdict, or
 * -errno (-EAGAIN: between epochs; -ENODATA: not current here and no
 * current copy reachable; a failed fetch). Any thread but the loop's.
 */
int recover_reconcile(struct recover *r, uint64_t oid, uint64_t epoch,
		      const struct recover_look *first, uint32_t *from, const char **why);

/* A client wrote, replaced or removed @oid in @epoch: now current. */
void recover_note_current(struct recover *r, uint64_t oid, uint64_t epoch);
/*
 * A removal left a tombstone here: a pass runs within a few seconds to
 * collect it (once every copy anywhere is a tombstone), else it would
 * wait for the next epoch's pass, and its peers' passes may have
 * dropped theirs meanwhile. Any thread.
 */
void recover_note_tombstone(struct recover *r);

/*
 * Around a client mutation of @oid in @epoch: begin takes the object's
 * lock (so no settle or fetch interleaves with it), refuses with -ESTALE
 * if a newer epoch is installed by now, and settles the object first if
 * @settle; on error the lock is not held. end records the object current
 * (if @current) and drops the lock.
 */
int recover_mutate_begin(struct recover *r, uint64_t oid, uint64_t epoch, int settle);
void recover_mutate_end(struct recover *r, uint64_t oid, uint64_t epoch, int current);

/*
 * Before answering a peer's raw request (a recovery pass's listing, a
 * settle's stat, a fetch) made in @epoch: wait until map @epoch is
 * installed here and every mutation of an older epoch that passed its
 * epoch check has ended, so that the answer shows every change tagged
 * older that this node will ever apply. A peer that becomes a holder in
 * @epoch learns from such answers what it must fetch: without the wait,
 * a change that passed its check just before the map moved, and landed
 * just after the answer, was on no list the new holder ever read
 * (docs/recovery.md "The recovery pass"). Mutations counted here only do
 * local disk work, so the wait is short; -EAGAIN (the peer asks again,
 * as of a node between epochs) if it is not over within @timeout_ms.
 */
int recover_quiesce(struct recover *r, uint64_t epoch, int timeout_ms);

/* Pay for @bytes read by a rebuild at the recovery rate (opts.mbps,
 * --recovery-mbps): the bucket recovery's own fetches pay from, so a
 * strip rebuilt by strip recovery or the scrub (k strips read) shares
 * the cap with objects recovered. Waits first while client requests
 * queue on the disk workers. Any thread. */
void recover_throttle(struct recover *r, uint64_t bytes);

/*
 * The recovery fields of NODE_INFO. The clean epoch: the last whose pass
 * settled every listed object this node holds (its copies are current as
 * of it). The full epoch: the last clean one in which every node of the
 * map was up and listed (then its knowing that an object does not exist
 * is current too). Raw replies carry both (sdfs_proto.h).
 */
void recover_fill_info(struct recover *r, struct sdfs_node_info *ni);
uint64_t recover_clean_epoch(struct recover *r);
uint64_t recover_full_epoch(struct recover *r);
#endif
