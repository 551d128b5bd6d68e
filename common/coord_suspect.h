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
 * A marker is created only while fewer than copies - 1 placed nodes are
 * marked or down in the map already (coord_suspect_report), so reports
 * alone never stop every holder of an object. Every reconciler
 * (blockd/member.c) then counts a marked member as down,
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
	int32_t zversion;       /* the marker's ZooKeeper data version */
};

/*
 * The limit on reports (pure; unit-tested in blockd/suspect_test.c):
 * may @node_id be marked, given the map @map (NULL: none yet) and the
 * nodes marked already (@marked, @nmarked, any order), for objects of
 * @copies copies? Yes while fewer than @copies - 1 *other* placed nodes
 * (cmap_node_is_placed; a marked node not in the map counts too) are
 * marked or down in the map: a marker stops its node serving at once,
 * so this keeps a holder of every such object serving. Never for
 * @copies <= 1 (stopping the only holder cannot help a write).
 */
int suspect_may_report(const struct cmap *map, const uint32_t *marked, size_t nmarked,
		       uint32_t node_id, unsigned copies);

/*
 * Create suspects/<@node_id> for epoch @epoch, reported by @reporter (a
 * short word, no spaces: "client:host:pid", "node:3"), if
 * suspect_may_report allows it for @copies (the caller's: at most the
 * cluster's, docs/recovery.md). One transaction: the map's version is
 * checked, suspects/'s data version bumped (it serialises creations:
 * two reporters that read the same markers cannot both pass the limit),
 * the marker created; a transaction that lost a race reads and decides
 * again (a few tries). 0, -EEXIST if marked already (that is a success
 * for the caller), -EBUSY if the limit refused it (not reported),
 * -EAGAIN if it kept losing races, or -errno.
 */
int coord_suspect_report(struct coord *c, uint32_t node_id, uint64_t epoch,
			 const char *reporter, unsigned copies);

/*
 * coord_map_cas (coord.h) that also fails, -EAGAIN, unless every marker
 * of @checks (@nchecks) still exists at the data version it was read
 * with and (with any check) no marker was created since the list was
 * read at @list_version (coord_suspects_get): a map that counts marked
 * nodes as down is written only while the markers it relied on are the
 * ones it read (a marker deleted and made again restarts at version 0;
 * its creation moved the list's version) (docs/recovery.md).
 */
int coord_map_cas_checked(struct coord *c, const struct cmap *prev, const struct cmap *next,
			  int32_t list_version, const struct coord_suspect *checks,
			  size_t nchecks);

/* Every marker, sorted by node id; free *@out with free(). With @watch,
 * a change of the list or of any marker's data (an ack) fires
 * COORD_EV_SUSPECTS. *@list_version (NULL: not wanted): suspects/'s data
 * version, which every creation bumps (for coord_map_cas_checked). */
int coord_suspects_get(struct coord *c, int watch, struct coord_suspect **out,
		       size_t *n, int32_t *list_version);

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
