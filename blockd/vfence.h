/*
 * vfence.h - this node's volume fences: for each volume id, the lowest
 * writer token it accepts on a mutation of that vid's objects
 * (oid_is_vol; common/oid.h). SDFS_TOKEN_FROZEN means frozen: only the
 * mds's own token (SDFS_TOKEN_FROZEN) passes (docs/volumes.md).
 *
 * ZooKeeper (vols/fence/<vid>, common/coord_vol.h) is the truth; this is
 * a copy in memory. After every (re)connection member.c loads all fences
 * (vfence_load) and only then marks it synced; until then volume
 * mutations get -ESHUTDOWN (the client retries), so a node back from a
 * split or a restart cannot take a zombie's write. VOL_FENCE raises one
 * vid at once (a writer's fence round).
 *
 * A mutation holds its vid's stripe shared from the check to the end of
 * its write, a raise holds it exclusively: once vfence_raise returns, no
 * mutation with an older token is running or can start.
 *
 * Thread-safety: any thread. vfence_raise and vfence_mutate_begin block
 * (waiting for the stripe): workers only.
 */
#ifndef SDFS_BLOCKD_VFENCE_H
#define SDFS_BLOCKD_VFENCE_H
#include <stdint.h>

struct vfence;

int vfence_open(struct vfence **out);   /* -ENOMEM */
void vfence_close(struct vfence *f);    /* NULL ok */

/* The fence of @vid (0: none). */
uint32_t vfence_get(struct vfence *f, uint64_t vid);
/* Raise @vid's fence to @token if higher; 0 or -ENOMEM. */
int vfence_raise(struct vfence *f, uint64_t vid, uint32_t token);

/*
 * Around a mutation of an object of @vid carrying @token: begin returns
 * 0 holding the stripe shared (drop it with vfence_mutate_end), -EROFS
 * if @vid is frozen and @token is not SDFS_TOKEN_FROZEN, -EPERM if
 * @token is below the fence, -ESHUTDOWN if not synced; on an error
 * nothing is held.
 */
int vfence_mutate_begin(struct vfence *f, uint64_t vid, uint32_t token);
/* The same; with @complete, a mutation of a frozen vid also passes if
 * @token is at least the fence the vid had when this node saw it frozen
 * (a VOL_FENCE round; not known after a load from ZooKeeper): it
 * finishes, on this replica, a write in flight across the freeze that
 * other replicas took (SDFS_RES_READONLY in the request's result). */
int vfence_mutate_begin_ex(struct vfence *f, uint64_t vid, uint32_t token, int complete);
void vfence_mutate_end(struct vfence *f, uint64_t vid);

/* Replace the table by what ZooKeeper holds (coord_vol_fence_list) and
 * mark it synced; fences only rise, so an entry raised meanwhile by
 * VOL_FENCE stays. 0 or -errno (then it stays unsynced). */
struct coord;
int vfence_load(struct vfence *f, struct coord *c);
void vfence_set_synced(struct vfence *f, int synced);
int vfence_is_synced(struct vfence *f);
uint64_t vfence_count(struct vfence *f);        /* vids with a fence */
#endif
