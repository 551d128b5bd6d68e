/*
 * scrub.h - the background scrub: every object this node stores is
 * re-read and checked against its block checksums at a throttled rate,
 * so a copy that rotted on disk is found while others are still good,
 * not when a client finally reads it; a corrupt copy is rewritten from
 * a good current one on another node (recover_repair, recover.h), and
 * a good one is compared with the other holders' copies (recover_look)
 * and, if it is stale or the odd one of its version once a write in
 * flight would have landed, replaced by the right one
 * (recover_reconcile). Objects are read in pieces paced by the rate,
 * never under the object's lock across the pauses. After the objects,
 * every strip file of an EC object here (stripstore.h) is read the
 * same way, paced, with no lock (the files are immutable), and one that
 * fails its checksums is rebuilt in place from its stripe
 * (strip_recover_scrub).
 *
 * A pass walks the store in oid order (objstore_list) and keeps its
 * cursor and counters in the data dir (scrub_state.h), so a restart
 * resumes it. A pass starts when `scrub_interval` has passed since the
 * last one started (since the state file was made, for the first),
 * or on demand (scrub_start); scrub_stop pauses it, scrub_start
 * resumes it, and so does the schedule once an interval has passed
 * since the paused pass began. docs/scrub.md has the operator's view.
 *
 * Not here: what is checked (objstore_verify_part), which copy may
 * replace a corrupt, stale or odd one (recover_repair.c), the wire
 * (ops.c, SDFS_OP_SCRUB).
 * Threads: one of its own; the rest from any thread.
 */
#ifndef SDFS_BLOCKD_SCRUB_H
#define SDFS_BLOCKD_SCRUB_H
#include <stdint.h>

#include "common/sdfs_proto.h"

struct blockd;
struct scrub;

#define SCRUB_RATE_DEFAULT (50ull * 1000 * 1000)        /* bytes/s: 50 MB/s */
#define SCRUB_INTERVAL_DEFAULT (7ull * 24 * 3600)       /* s: a week */

struct scrub_opts {
	uint64_t rate;          /* bytes/s a pass reads at most; 0: default */
	uint64_t interval_s;    /* a full pass at least this often; 0: only
				   on demand (scrub_start) */
};

/* Load the state (a missing or unreadable file starts afresh, logged)
 * and start the thread. @bd (its store, recover, dir, node_id) must
 * outlive it: scrub_free before recover_free. 0 or -errno. */
int scrub_new(struct blockd *bd, const struct scrub_opts *o, struct scrub **out);
/* Stop the thread (a pass in progress is saved, resumed at the next
 * start of the daemon). NULL ok. */
void scrub_free(struct scrub *s);

/* Start a pass now, or resume the paused one; a running one goes on.
 * @rate: bytes/s for this pass (0: the daemon's own). */
void scrub_start(struct scrub *s, uint64_t rate);
/* Pause the running pass where it is (nothing if none runs). */
void scrub_stop(struct scrub *s);
/* Where it stands (node_id included). */
void scrub_info(struct scrub *s, struct sdfs_scrub_info *out);
/* A corrupt strip file found and rebuilt (@good) or not outside a pass
 * (a reader's read-repair, strip_repair.h): counted in the totals
 * (total_strips_found and _repaired or _unrepaired), not the pass's.
 * Any thread; NULL ok. */
void scrub_note_strip(struct scrub *s, int good);
#endif
