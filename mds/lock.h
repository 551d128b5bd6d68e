/*
 * lock.h - the cluster-wide lock table of the active mds (docs/locks.md):
 * POSIX byte-range locks and flock locks per inode, held by (client,
 * owner), kept in memory and in LevelDB ('K' keys, every change one
 * sync WriteBatch), so a new active loads them at takeover.
 *
 * A thread polls ZooKeeper's clients/ (common/coord_client.h) and drops
 * every lock of a client whose node is gone (its session expired or it
 * closed). Blocked POSIX lockers are remembered for LOCK_WAITER_TTL_MS
 * after each retry, to answer EDEADLK when a wait would close a cycle.
 * Everything is under one mutex (held across the sync write): simple
 * and fast enough for lock traffic; not for thousands of lockers.
 * Called from the server's connection threads through ns_exec.
 */
#ifndef SDFS_MDS_LOCK_H
#define SDFS_MDS_LOCK_H
#include <stdint.h>

#include "common/sdfs_proto.h"

struct ns;
struct coord;
struct kvbatch;
struct ns_reply;

#define LOCK_WAITER_TTL_MS 1000         /* a waiter not seen again is gone */
#define LOCK_SWEEP_MS 500               /* dead clients: poll interval */

/* Load the table from the database and start the dead-client sweeper
 * (@coord borrowed until lock_close). -errno. */
int lock_open(struct ns *ns, struct coord *coord);
void lock_close(struct ns *ns);         /* NULL table ok */

/* One NS_LOCK_* request (@data: r->data_len bytes). Mutations commit
 * @b (with the reply record) themselves. 0 or -errno: -EAGAIN
 * (conflict), -EDEADLK, -EINVAL / -EPROTO (bad request). */
int lock_exec(struct ns *ns, unsigned op, const struct sdfs_ns_req *r,
	      const uint8_t *data, struct kvbatch *b, struct ns_reply *rep);
#endif
