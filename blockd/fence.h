/*
 * fence.h - this node's MDS fence: the lowest fencing token it still
 * accepts on a client mutation of an MDS-database object (common/oid.h).
 * A new active sdfs-mds raises it (MDS_FENCE, and the MDS epoch in
 * ZooKeeper), so a deposed one cannot change the database any more
 * (docs/protocol.md, "Fencing").
 *
 * The fence only rises. A raise is written to DIR/mds_fence (durably)
 * before it takes effect, so a fence acknowledged survives a crash.
 * Mutations of MDS objects hold the fence shared from their check to
 * the end of their write, and a raise holds it exclusively: once
 * fence_raise() returns, no mutation with an older token is running or
 * can start. Until the fence has been brought up to the MDS epoch in
 * ZooKeeper after a (re)connection, MDS mutations are refused with
 * -ESHUTDOWN (the client retries): a node back from a network split or
 * a restart must not take a deposed writer's change first.
 *
 * Thread-safety: any thread. fence_raise and fence_mutate_begin block
 * (fsync; waiting for the lock): workers only.
 * Not here: reading ZooKeeper (member.c), which ops are fenced (ops.c).
 */
#ifndef SDFS_BLOCKD_FENCE_H
#define SDFS_BLOCKD_FENCE_H
#include <stdint.h>

#define FENCE_FILE "mds_fence"  /* in the data dir: decimal, newline */

struct fence;

/* Load @dir/mds_fence (absent: 0). -EBADMSG if it is malformed, -ENOMEM.
 * @dir is copied. The fence starts unsynced (fence_set_synced). */
int fence_open(const char *dir, struct fence **out);
void fence_close(struct fence *f);      /* NULL ok */

uint64_t fence_get(struct fence *f);

/*
 * Raise the fence to @to if that is higher, persisting it first; *@now
 * (NULL ok) gets the fence afterwards. Waits for MDS mutations in
 * progress. Returns 0, or -errno if it could not be persisted (the
 * fence is then unchanged). @why names the source for the log line.
 */
int fence_raise(struct fence *f, uint64_t to, const char *why, uint64_t *now);

/*
 * Around a client mutation of an MDS object carrying @token: begin
 * returns 0 holding the fence shared (drop it with fence_mutate_end),
 * -EPERM if @token is below the fence, -ESHUTDOWN if not synced; on an
 * error nothing is held.
 */
int fence_mutate_begin(struct fence *f, uint32_t token);
void fence_mutate_end(struct fence *f);

/* Whether the fence is known to be at least ZooKeeper's MDS epoch of
 * the current session. */
void fence_set_synced(struct fence *f, int synced);
int fence_is_synced(struct fence *f);
#endif
