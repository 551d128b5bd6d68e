/*
 * strip_ops.h - the strip ops of protocol 2.4 (ec): STRIP_PUT,
 * STRIP_GET, STRIP_STAT, STRIP_COMMIT (common/sdfs_proto.h, docs/ec.md)
 * served from the node's strip store (stripstore.h).
 *
 *   STRIP_PUT     payload sdfs_strip + strip_len bytes (a tombstone:
 *                 none): stored durably
 *                 (always: a commit may drop the previous version next),
 *                 beside the versions held. Refused INVALID unless this
 *                 node is strip s's holder in the request's epoch
 *                 (ring_place_strips), the fields are in range and the
 *                 bytes are exactly strip_len.
 *   STRIP_GET     offset, length; sdfs_strip (s, version, tag) -> bytes,
 *                 every block verified: CSUM if one fails, NO_OBJ if that
 *                 version (and tag) is not here.
 *   STRIP_STAT    -> sdfs_strip[] of every strip version of oid held
 *                 (any strip number; headers checked); empty if none.
 *   STRIP_COMMIT  sdfs_strip (s, version): the writer saw all k + m
 *                 strips of that version stored: drop the older versions
 *                 of strip s here (NO_OBJ, nothing dropped, if that
 *                 version is not here); of every strip number if it
 *                 is a tombstone (SDFS_STRIP_TOMB: a removal's).
 *   STRIP_REPAIR  (2.6) sdfs_strip (s, version, tag): a reader found that
 *                 file failing its checksums: rebuild it in place
 *                 (strip_repair.h); answered once queued.
 * PUT, COMMIT and REPAIR are mutations (a nonzero epoch, checked by
 * ops_dispatch); none are ordered. Those of a sealed volume chunk
 * (oid_vstripe) that carry a token (its volume writer's; 2.5) are
 * fenced as the writer's object writes are (vfence_mutate_begin of the
 * vid: PERM below the fence, READONLY if the vid is frozen, SHUTDOWN
 * until the fences are in step with ZooKeeper); without a token
 * (strip recovery, reclaim's removals) they are not. A key that is neither
 * admin nor daemon needs an object capability for the oid, as for the
 * object ops (objcap_admit in ops_dispatch: R for GET and STAT, W for
 * PUT, COMMIT and REPAIR); its bytes are gone from the payload by the time it
 * reaches strip_dispatch. Work runs on the I/O workers and replies
 * from there.
 */
#ifndef SDFS_BLOCKD_STRIP_OPS_H
#define SDFS_BLOCKD_STRIP_OPS_H
#include <stdint.h>

#include "common/sdfs_proto.h"

struct blockd;
struct conn;

int strip_is_op(unsigned opcode);

/* Loop thread, after ops_dispatch's checks: queue the op, reply when
 * done. Takes @payload. */
void strip_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h,
		    uint8_t *payload);
#endif
