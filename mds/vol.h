/*
 * vol.h - the volume catalog of the mds (docs/volumes.md): which vid is
 * a volume file's live state, its snapshots by name, families, pending
 * snapshot/clone/rollback ops and their roll-forward, and the
 * background reclaim of deleted states' data. Not an API: shared by
 * mds/ns*.c, purge.c and vol*.c.
 *
 *   vol_cat.c      keys, records, vid numbers, family locks, pending records
 *   vol_freeze.c   freezing a vid (ZooKeeper + fence rounds), index copies,
 *                  running (and rolling forward) a pending op
 *   vol_ops.c      the NS_VOL_* operations, a volume file going away
 *   vol_reclaim.c  mark and sweep of families with deleted states
 *
 * Keys (big-endian numbers; see ns_int.h for the namespace's):
 *   'V' vid                  state record (struct vol_rec, VOL_REC_SIZE)
 *   'W' ino                  le64: the volume file's live vid
 *   'S' ino name             le64: snapshot @name of volume file @ino
 *   'F' family vid           (empty): @vid is a member of @family
 *   'P' vid                  pending op making @vid (struct vol_pending)
 *   'G' family               (empty): @family has DELETED members
 *   'M' "vid_next"           le64: vids below it may be in use
 *
 * Locking: every op touching a family holds that family's mutex (striped
 * by family vid) from its first read to its commit; namespace inode locks
 * (ns_lock) may be taken inside it, never the other way round. Any
 * thread may call these functions.
 */
#ifndef SDFS_MDS_VOL_H
#define SDFS_MDS_VOL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/sdfs_proto.h"

struct ns;
struct ns_reply;
struct kvbatch;
struct coord;

#define VOL_FAM_LOCKS 64
#define VOL_VID_BATCH 1024
#define VOL_REC_SIZE 116
#define VOL_RECLAIM_MS 10000

struct vol_rec {
	uint64_t vid, family, parent, ino, size;
	int64_t ctime_ns;
	uint32_t obj_size;
	uint16_t copies, state;         /* enum sdfs_vol_state */
	uint32_t name_len;
	char name[SDFS_SNAP_NAME_MAX + 1];
};

enum vol_pending_kind {
	VOL_P_SNAP = 1,                 /* live old -> snapshot; new live */
	VOL_P_CLONE = 2,                /* new file whose live vid copies src */
	VOL_P_ROLLBACK = 3,             /* live old -> deleted; new live copies src */
};

/* A snapshot, clone or rollback that has not committed yet. Every step
 * of running it is idempotent, so any active may finish it. */
struct vol_pending {
	uint32_t kind;
	uint64_t newvid;                /* the vid being made */
	uint64_t ino;                   /* its volume file (clone: the new one) */
	uint64_t old;                   /* the live vid frozen (0: none) */
	uint64_t src;                   /* whose index is copied */
	uint64_t family;
	uint64_t client_id, seq;        /* the request: its reply is recorded */
	uint64_t dir;                   /* clone: where the new file goes */
	uint32_t mode, uid, gid;
	uint32_t snap_len;              /* snapshot name (SNAP; CLONE/ROLLBACK: source) */
	char snap[SDFS_SNAP_NAME_MAX + 1];
	uint32_t name2_len;             /* clone: the new file's name */
	char name2[SDFS_NAME_MAX + 1];
};

struct vol_stats {
	atomic_uint_fast64_t objects_freed, bytes_freed, sweeps;
	atomic_uint_fast64_t objects_pending, bytes_pending;
};

struct vol {
	struct coord *coord;
	pthread_mutex_t fam_locks[VOL_FAM_LOCKS];
	pthread_mutex_t vid_lock;
	uint64_t vid_next, vid_limit;
	const char *fault;              /* $SDFS_MDS_FAULT (tests only) */

	struct vol_stats stats;
	pthread_t reclaim_thread;
	pthread_mutex_t reclaim_lock;
	pthread_cond_t reclaim_cond;
	int reclaim_stop, reclaim_kick, reclaim_started;
	int reclaim_ms;                 /* a pass at least this often */
};

/* ---- vol_cat.c ---- */
/* Load the vid counter; the reclaim thread is started by vol_start. */
int vol_open(struct ns *ns, struct coord *coord);
int vol_start(struct ns *ns);           /* roll-forward + reclaim thread */
void vol_close(struct ns *ns);          /* NULL vol ok */

size_t vol_key_rec(uint8_t *k, uint64_t vid);
size_t vol_key_live(uint8_t *k, uint64_t ino);
size_t vol_key_snap(uint8_t *k, uint64_t ino, const char *name, size_t nlen);
size_t vol_key_member(uint8_t *k, uint64_t family, uint64_t vid);
size_t vol_key_pending(uint8_t *k, uint64_t vid);
size_t vol_key_deleted(uint8_t *k, uint64_t family);

/* Records: get returns -ENOENT, -EIO (malformed, logged). */
int vol_rec_get(struct ns *ns, uint64_t vid, struct vol_rec *r);
void vol_rec_put(struct kvbatch *b, const struct vol_rec *r);
int vol_live_get(struct ns *ns, uint64_t ino, uint64_t *vid);
int vol_snap_get(struct ns *ns, uint64_t ino, const char *name, size_t nlen,
		 uint64_t *vid);
void vol_u64_put(struct kvbatch *b, const uint8_t *k, size_t klen, uint64_t v);
int vol_pending_get(struct ns *ns, uint64_t vid, struct vol_pending *p);
void vol_pending_put(struct kvbatch *b, const struct vol_pending *p);
/* Every snapshot vid of @ino (any order); free *@out. */
int vol_snaps_of(struct ns *ns, uint64_t ino, uint64_t **out, size_t *n);
/* Every member vid of @family; free *@out. */
int vol_members_of(struct ns *ns, uint64_t family, uint64_t **out, size_t *n);
/* Pending ops' new vids of @family (0: every family); free *@out. */
int vol_pendings_of(struct ns *ns, uint64_t family, uint64_t **out, size_t *n);

/* A new vid, never reused; -ENOSPC when they ran out. */
int vol_vid_alloc(struct ns *ns, uint64_t *vid);

void vol_fam_lock(struct ns *ns, uint64_t family);
void vol_fam_unlock(struct ns *ns, uint64_t family);

/* Snapshot names: 1..64 of [A-Za-z0-9._-], not "." / "..": 0 or -EINVAL. */
int vol_snap_name_check(const char *name, size_t len);
/* The wire form of @r; objects as given. */
void vol_rec_to_wire(const struct vol_rec *r, uint64_t objects, uint32_t token,
		     struct sdfs_ns_vol *out);
/* Chunks of a state of @size bytes. */
uint64_t vol_chunks(uint64_t size, uint32_t obj_size);

/* ---- vol_freeze.c ---- */
/* Freeze @old (fence FROZEN in ZooKeeper and on every up blockd); with
 * @newvid, give it @old's token (+ @bump) in the same transaction. */
int vol_freeze(struct ns *ns, uint64_t old, uint64_t newvid, uint32_t bump);
/* Read @vid's index (missing: header only). *@buf malloc'd, *@len bytes
 * (>= VOLIDX_HDR_SIZE). */
int vol_index_read(struct ns *ns, const struct vol_rec *r, uint8_t **buf, size_t *len);
/* Write a new index for @dst holding @src's entries (NULL: none). */
int vol_index_write(struct ns *ns, const struct vol_rec *dst, const uint8_t *src,
		    size_t len);
/* Objects of @r's index owned by @r itself. */
int vol_count_owned(struct ns *ns, const struct vol_rec *r, uint64_t *objects);
/*
 * Finish pending op @p (freeze, fence, index copy, commit with the
 * reply recorded for p->client_id/seq); caller holds the family lock.
 * @first: the op's first run (fault injection applies). On success the
 * reply (an sdfs_ns_vol or an sdfs_attr) goes to @rep when not NULL.
 */
int vol_pending_run(struct ns *ns, const struct vol_pending *p, int first,
		    struct ns_reply *rep);
/* Finish every pending op of @family (0: all); caller holds the family
 * lock unless @family is 0. */
int vol_roll_forward(struct ns *ns, uint64_t family);

/* ---- vol_ops.c ---- */
/* @b: the op's batch (ns_exec's), for the ops committing in one batch. */
int vol_exec(struct ns *ns, unsigned op, const struct sdfs_ns_req *r, const char *name,
	     const char *name2, struct kvbatch *b, struct ns_reply *rep);
/* May a volume of @size bytes in objects of @obj_size bytes exist? */
int vol_size_ok(uint64_t size, uint32_t obj_size);
/* Volume file @ino's last link went and the orphan is purged: its live
 * state (frozen first) and its snapshots become DELETED. Idempotent. */
int vol_file_gone(struct ns *ns, uint64_t ino, uint64_t size);

/* ---- vol_reclaim.c ---- */
int vol_reclaim_start(struct ns *ns);
void vol_reclaim_stop(struct ns *ns);
void vol_reclaim_kick(struct ns *ns);
/* A pass at least every @ms (> 0) from now on. */
void vol_reclaim_interval(struct ns *ns, int ms);
/* One pass over every family with deleted states (tests, the thread). */
void vol_reclaim_pass(struct ns *ns);
int vol_reclaim_stats(struct ns *ns, struct sdfs_ns_reclaim *out);
#endif
