/*
 * coord_vol.h - volumes in ZooKeeper: the one-writer lock of a volume
 * file and the fence (lowest writer token accepted) of each volume id.
 *
 * Layout under /sdfs/<cluster>/vols (docs/zookeeper.md, docs/volumes.md):
 *   fence/<vid>              persistent, decimal uint32: blockd refuses a
 *                            mutation of that vid's objects carrying a
 *                            lower token; SDFS_TOKEN_FROZEN: frozen (a
 *                            snapshot or a deleted state), no writer ever
 *   locks/<ino>/w_<guid>_<seq>  ephemeral-sequential, one per opener that
 *                            wants to write volume file <ino>; the lowest
 *                            holds the lock. Its data is the holder's
 *                            description ("host=a pid=12 mount=/mnt").
 * <vid> and <ino> are decimal.
 *
 * How a writer starts (libclient/vol.c): join the lock, be first (or
 * -EBUSY), then in one transaction check its lock node still exists and
 * set fence/<live vid> to old + 1 (that value is its token), then raise
 * every blockd's fence to it (VOL_FENCE). A zombie writer's token is
 * then below the fence everywhere.
 *
 * Same threading rules as coord.h (blocking; any thread).
 */
#ifndef SDFS_COMMON_COORD_VOL_H
#define SDFS_COMMON_COORD_VOL_H
#include <stddef.h>
#include <stdint.h>

#include "common/coord.h"

#define COORD_VOL_NODE_MAX 256          /* a lock node's full path */
#define COORD_VOL_HOLDER_MAX 256        /* a holder description */

/* The fence of @vid: *@token (0 if the node does not exist) and the
 * node's version in *@version (-1 if it does not exist). */
int coord_vol_fence_get(struct coord *c, uint64_t vid, uint32_t *token,
			int32_t *version);

/* One fence change of a transaction. */
struct coord_vol_fset {
	uint64_t vid;
	uint32_t token;                 /* the new value */
	int32_t version;                /* the version read; -1: create it */
};
/*
 * Apply @n changes in one ZooKeeper transaction, which also checks that
 * @lock_node (a full path; NULL: no check) still exists. -EAGAIN if a
 * fence changed since it was read (or was created meanwhile): re-read and
 * retry; -ENOENT if @lock_node is gone (our lock is lost); -errno.
 */
int coord_vol_fence_multi(struct coord *c, const struct coord_vol_fset *sets,
			  size_t n, const char *lock_node);
/* Remove fence/<vid> (a fully reclaimed vid). Absent: 0. */
int coord_vol_fence_delete(struct coord *c, uint64_t vid);
/* Call @fn for every fence; stops at and returns @fn's nonzero. Bad
 * nodes are skipped with a warning. */
int coord_vol_fence_list(struct coord *c,
			 int (*fn)(void *arg, uint64_t vid, uint32_t token),
			 void *arg);

/* Enter the queue for writing volume file @ino: an ephemeral-sequential
 * node holding @holder; its full path goes to @node (COORD_VOL_NODE_MAX). */
int coord_vol_lock_join(struct coord *c, uint64_t ino, const char *holder,
			char *node, size_t len);
/*
 * Is @node first in @ino's queue? 0: yes (we hold the lock). -EBUSY: no;
 * the first one's description goes to @holder (COORD_VOL_HOLDER_MAX,
 * NULL ok). -ENOENT if @node is gone (session expired).
 */
int coord_vol_lock_first(struct coord *c, uint64_t ino, const char *node,
			 char *holder, size_t len);
/* Wait until @node is first, watching only its predecessor: 0, or
 * -ETIMEDOUT after @timeout_ms, -ENOENT, -errno. */
int coord_vol_lock_wait(struct coord *c, uint64_t ino, const char *node,
			int timeout_ms);
/* Leave: delete @node (absent: 0), and @ino's queue node if now empty. */
int coord_vol_lock_release(struct coord *c, uint64_t ino, const char *node);
/* Who holds @ino's lock: 1 with the description in @holder (NULL ok),
 * 0 if no one, -errno. */
int coord_vol_lock_holder(struct coord *c, uint64_t ino, char *holder, size_t len);
#endif
