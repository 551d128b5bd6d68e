/*
 * coord_suspect.h - markers of block daemons reported unresponsive, and
 * the ZooKeeper round trip of a block daemon's serving lease
 * (docs/recovery.md, "Unresponsive nodes"; docs/zookeeper.md).
 *
 *   suspects/<node id>   persistent   "sdfs-suspect 1" document: who
 *                                      reported it, at which epoch, when;
 *                                      "ack" once the node stopped serving
 *
 * A client (or a primary forwarding a shared object's mutation) whose
 * request to a replica went unanswered past its bound reports the node.
 * Every reconciler (blockd/member.c) then counts a marked member as down,
 * but only once the node acknowledged the marker or a lease passed since
 * the reconciler first saw it; the node itself stops serving when its
 * lease check sees the marker, acks, and removes the marker after a hold
 * time. Not here: those decisions (blockd/suspect.h, blockd/lease.h).
 *
 * Thread-safety: as coord.h. coord_lease_check's callback runs on the
 * ZooKeeper library's completion thread.
 */
#ifndef SDFS_COMMON_COORD_SUSPECT_H
#define SDFS_COMMON_COORD_SUSPECT_H
#include <stddef.h>
#include <stdint.h>

#include "common/coord.h"

struct coord_suspect {
	uint32_t node_id;
	int acked;              /* the node said it stopped serving */
};

/* Create suspects/<@node_id> for epoch @epoch, reported by @reporter (a
 * short word, no spaces: "client:host:pid", "node:3"). 0, -EEXIST if
 * marked already (that is a success for the caller), or -errno. */
int coord_suspect_report(struct coord *c, uint32_t node_id, uint64_t epoch,
			 const char *reporter);

/* Every marker, sorted by node id; free *@out with free(). With @watch,
 * a change of the list or of any marker's data (an ack) fires
 * COORD_EV_SUSPECTS. */
int coord_suspects_get(struct coord *c, int watch, struct coord_suspect **out,
		       size_t *n);

/* The marked node: "I stopped serving" (the marker's data becomes
 * "ack"). -ENOENT if there is no marker. */
int coord_suspect_ack(struct coord *c, uint32_t node_id);

/* Remove the marker of @node_id; 0 also if there is none. */
int coord_suspect_clear(struct coord *c, uint32_t node_id);

/*
 * The lease's round trip, asynchronous: a sync (so the server we talk to
 * has caught up with the leader), then whether suspects/<@node_id>
 * exists and the map's ZooKeeper version. ZooKeeper answers one
 * session's requests in order, so both reads are at least as new as the
 * moment the sync was sent. @fn(@arg, err, marked, map_version) runs
 * once, on the library's thread (err: 0 or -errno; the rest valid only
 * when err is 0). Returns 0 if the check was sent (fn will run), else
 * -errno and fn never runs.
 */
typedef void (*coord_lease_fn)(void *arg, int err, int marked, int32_t map_version);
int coord_lease_check(struct coord *c, uint32_t node_id, coord_lease_fn fn, void *arg);
#endif
