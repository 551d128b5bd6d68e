/*
 * lease.h - a block daemon's serving lease (docs/recovery.md,
 * "Unresponsive nodes").
 *
 * Every lease_ms / 4 a thread sends one ZooKeeper round trip
 * (coord_lease_check: a sync, then whether suspects/<our id> exists and
 * the map's version); several may be in flight. The daemon serves client
 * and peer I/O only while the last check to come back *started* less
 * than lease_ms ago, found no marker for us, and (for requests carrying
 * an epoch) found no map newer than the installed one. So once a map
 * without this node is written, it serves nothing more: either a check
 * saw the marker and it stopped (and acked), or lease_ms passed since
 * the last check that could have missed it, and the reconcilers wait
 * that long (and a margin) before they write the map without an ack.
 *
 * On a marker the thread acks it at once, holds it for 5 s (doubling up
 * to 60 s if we are reported again within a minute of the last time),
 * then removes it: the reconcilers mark us up in a new epoch and
 * recovery brings our copies current.
 *
 * Threads: lease_admit from any thread; lease_lapses too. The checks'
 * answers arrive on the ZooKeeper library's thread.
 */
#ifndef SDFS_BLOCKD_LEASE_H
#define SDFS_BLOCKD_LEASE_H
#include <stdint.h>

#include "common/coord.h"
#include "common/sdfs_proto.h"

struct lease;

/* Start the checks for node @node_id on @c, every @lease_ms / 4. */
int lease_new(struct coord *c, uint32_t node_id, int lease_ms, struct lease **out);
/* Stop the thread (checks in flight still answer: free after coord_close). */
void lease_stop(struct lease *l);
/* After lease_stop and coord_close. NULL ok. */
void lease_free(struct lease *l);

/* May a request be served now (suspect.h lease_decide)? @installed_version:
 * the installed map's ZooKeeper version. */
enum sdfs_res lease_admit(struct lease *l, int32_t installed_version, int has_epoch);

/* Bumped each time the lease lapsed (ran out, or a marker) and came back:
 * what the daemon was told meanwhile (a fence) may have been refused. */
unsigned lease_lapses(struct lease *l);
#endif
