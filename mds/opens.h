/*
 * opens.h - which clients hold which inodes open, so that a file whose
 * last name went (a stray: nlink 0, an 'O' record) is freed only after
 * its last close anywhere (docs/mds.md "Strays").
 *
 * Clients say so with NS_OPEN at their first open and last close of an
 * inode (libclient/hold.c), as the identity of their ZooKeeper node
 * clients/<id> (the one locks use). The table is in memory only: a new
 * active starts empty and every live client claims its set again when it
 * resubscribes (SDFS_NS_OPEN_CLAIM). Until every client listed in
 * ZooKeeper at takeover claimed (or its node went, or OPENS_CLAIM_MAX_MS
 * passed) no stray is freed. The purge thread calls opens_sweep each
 * round: it forgets the holds of clients whose node is gone (their
 * session ended: the process died or was cut off), as lock.c does for
 * locks. Not here: freeing (purge.c). Thread-safe (one mutex).
 */
#ifndef SDFS_MDS_OPENS_H
#define SDFS_MDS_OPENS_H
#include <stdint.h>

#include "common/sdfs_proto.h"

struct ns;
struct coord;

#define OPENS_CLAIM_MAX_MS 30000        /* takeover: longest wait for claims */

/* Make ns->opens; with @coord (borrowed until opens_close; NULL: no
 * ZooKeeper, no claim wait, no sweeping) note the clients that must
 * claim. 0 or -ENOMEM. */
int opens_open(struct ns *ns, struct coord *coord);
void opens_close(struct ns *ns);        /* NULL table ok */

/* One NS_OPEN (@data: r->data_len bytes). 0, -EINVAL, -ENOMEM. A hold
 * of @ino let go by its last holder wakes the purge thread. */
int opens_exec(struct ns *ns, const struct sdfs_ns_req *r, const uint8_t *data);

/* May the stray @ino not be freed now? 1 while some client holds it, or
 * while the takeover's claims are awaited; else 0. */
int opens_held(struct ns *ns, uint64_t ino);

/* Has a handle other than @handle (a client_id) marked its hold of @ino
 * SDFS_NS_OPEN_WRITEBACK, so that the file's data may be newer than its
 * mtime? Also 1 while a takeover's claims are awaited; 0 in a
 * namespace made without the table (unit tests). */
int opens_writeback_other(struct ns *ns, uint64_t ino, uint64_t handle);

/* Does some client hold @ino open now? (The stray count.) */
int opens_has_holder(struct ns *ns, uint64_t ino);

/* From the purge thread, about once a second: forget the holds of
 * clients whose ZooKeeper node is gone; end the claim wait. */
void opens_sweep(struct ns *ns);

/* Holds now (for logs and info). */
uint64_t opens_count(struct ns *ns);
#endif
