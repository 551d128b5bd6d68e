/*
 * suspect.h - the pure decisions behind reporting unresponsive nodes
 * (docs/recovery.md, "Unresponsive nodes"): when a reconciler counts a
 * marked member as down, and when a block daemon may serve under its
 * lease. No I/O, no clock of their own: unit-tested in suspect_test.c.
 * The ZooKeeper side is common/coord_suspect.h, the lease's thread
 * lease.h, the map writing member.c.
 */
#ifndef SDFS_BLOCKD_SUSPECT_H
#define SDFS_BLOCKD_SUSPECT_H
#include <stddef.h>
#include <stdint.h>

#include "common/cmap.h"
#include "common/coord_suspect.h"
#include "common/sdfs_proto.h"

/* When this reconciler first saw the marker of a node (its monotonic
 * clock: only its own waits are measured with it). */
struct suspect_seen {
	uint32_t node_id;
	int64_t first_ms;
};

#define SUSPECT_SEEN_MAX 64

/*
 * Which live members (@mem, @nmem, sorted by id) to count as down for
 * the markers @sus (@nsus, sorted by id), given the current map @cur.
 * A marked member goes down once its marker is acked (it stopped
 * serving) or @wait_ms passed since this reconciler first saw the marker
 * (the node's lease ran out even if it never looked); one the map has
 * down already stays down while marked (another reconciler decided, by
 * its own clock: no flapping); never more than
 * @max_down members at once through markers (those down already in
 * @cur first, then by id), so a client cut off from every node cannot
 * take the whole cluster down. @seen (*@nseen entries, room for
 * SUSPECT_SEEN_MAX) is updated: markers gone are forgotten, new ones
 * get @now_ms. Writes the ids to drop into @drop (room for @nmem) and
 * returns how many; *@pending is set to 1 if a marked member is not
 * dropped yet only because its wait has not run out (ask again later).
 */
size_t suspect_decide(const struct cmap *cur, const struct cmap_node *mem, size_t nmem,
		      const struct coord_suspect *sus, size_t nsus,
		      struct suspect_seen *seen, size_t *nseen, int64_t now_ms,
		      int wait_ms, unsigned max_down, uint32_t *drop, int *pending);

/* What the last published lease check found (lease.c). */
struct lease_view {
	int64_t start_ms;       /* when the last unmarked check started; 0: none */
	int marked;             /* the newest check found our marker */
	int32_t map_version;    /* the map's ZooKeeper version it found */
};

/*
 * May a block daemon serve a request at @now_ms? SDFS_RES_OK if the
 * last check started less than @lease_ms ago and found no marker, and
 * (for a request carrying an epoch, @has_epoch) no map newer than the
 * installed one (@installed_version); SDFS_RES_SHUTDOWN if the lease ran
 * out or we are marked; SDFS_RES_OLD_EPOCH if only the map is newer.
 */
enum sdfs_res lease_decide(const struct lease_view *v, int64_t now_ms, int lease_ms,
			   int32_t installed_version, int has_epoch);
#endif
