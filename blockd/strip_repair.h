/*
 * strip_repair.h - STRIP_REPAIR (2.6): a reader's read-repair of a
 * strip file here that failed its checksums (docs/ec.md "Degraded
 * reads").
 *
 * The request is answered as soon as it is queued; the rebuild runs on
 * a thread that may wait on peers (backing_defer, never an I/O worker):
 * the file of strip s of exactly (version, tag) is read whole here and,
 * only if it still fails its checksums, rebuilt in place as the scrub
 * does (strip_recover_scrub: stripstore_replace while the file is still
 * there with that tag; never another version), again every 500 ms while
 * between epochs, a few times. A request for a strip whose rebuild is
 * running already is dropped (each rebuilt and counted once). Counted in the scrub's total strips
 * found and repaired / unrepaired (scrub_note_strip), one line logged
 * at warn. A file that is gone or good again is left alone, not counted.
 */
#ifndef SDFS_BLOCKD_STRIP_REPAIR_H
#define SDFS_BLOCKD_STRIP_REPAIR_H
#include <stdint.h>

#include "common/sdfs_proto.h"

struct blockd;

/* Loop thread: queue the read-repair of strip @st (s, version, tag) of
 * @oid. 0, or -ENOMEM. */
int strip_repair_queue(struct blockd *bd, uint64_t oid, const struct sdfs_strip *st);
#endif
