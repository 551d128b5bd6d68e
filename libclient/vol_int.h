/*
 * vol_int.h - an open volume, shared by libclient/vol.c (open, lock,
 * token, index load and reload, close) and libclient/vol_io.c (reads,
 * writes with copy-on-write, the index group commit, punch, flush,
 * resize). docs/volumes.md has the model.
 *
 * Locking: `state` is held shared by every I/O and exclusively by a
 * reload (a snapshot moved the live state to a new vid), so an I/O sees
 * one vid and one index throughout. `idx` holds committed owners only: a
 * chunk being made is owned in `ixbuf` (the index object's image) until
 * its index write is acknowledged, and only then in `idx`, under its
 * chunk lock; a write into a chunk whose idx owner is not ours takes
 * the chunk lock, so nothing is acknowledged into a chunk the index
 * does not point at yet.
 *
 * Copy-on-write: the first write into a chunk an ancestor owns asks the
 * block daemons to make the copy next to the data (OBJ_COPY, blockd/
 * copy.h), one small request per replica; a daemon without it (2.1), a
 * key that needs object capabilities, or a source no holder could give
 * makes this client copy the chunk itself (read it, put it whole).
 *
 * Erasure-coded volumes (a code in vi.copies, common/policy.h; docs/
 * ec.md "EC volumes"): an idx entry with VOLIDX_SEALED reads from the
 * chunk's stripe; the sealer (vol_seal.c) turns a cold chunk of ours
 * into one under its chunk lock, and a write into a sealed chunk makes
 * it replicated again under the same lock. A write into a replicated
 * chunk of ours takes no chunk lock: it counts itself in `wact` (in
 * flight, writes done) and checks the entry again, so the sealer sees
 * either the write or the writer sees the sealed entry.
 */
#ifndef SDFS_LIBCLIENT_VOL_INT_H
#define SDFS_LIBCLIENT_VOL_INT_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/coord_vol.h"
#include "common/oid.h"
#include "common/policy.h"
#include "common/volidx.h"
#include "libclient/client.h"

#define VOL_CHUNK_LOCKS 64
#define VOL_EC_HINTS 1024       /* stripe versions remembered per handle */

struct vol_ec_hint {
	uint64_t oid, gen, unsealed;
	struct ec_hint h;
};
#define VOL_RO_RELOAD_MS 1000   /* read-only live handles re-read the index */

struct sdfs_vol {
	struct sdfs *s;
	uint64_t ino;
	int writer;                     /* SDFS_VOL_WRITE */
	char snap[SDFS_SNAP_NAME_MAX + 1]; /* a snapshot handle's name; "" */
	char lock_node[COORD_VOL_NODE_MAX];
	uint32_t token;
	atomic_int fenced;              /* a write was refused: -EPERM from now on */

	pthread_rwlock_t state;
	struct sdfs_vol_info vi;        /* vid, size, obj_size, copies */
	_Atomic uint32_t *idx;          /* committed owner per chunk */
	uint64_t cap;                   /* entries in idx and ixbuf */
	uint64_t gen;                   /* bumped by every reload */
	int64_t loaded_ms;
	int idx_exists;                 /* the index object has its header */

	pthread_mutex_t size_lock;      /* growing writes push the size */

	/* index group commit (vol_io.c) */
	pthread_mutex_t ixmu;
	pthread_cond_t ixcv;
	uint32_t *ixbuf;                /* owners as they will be written */
	uint64_t dirty_lo, dirty_hi;    /* chunks to write; lo > hi: none */
	uint64_t dirty_gen, done_gen, err_gen;
	int err;                        /* of the write that ended at err_gen */
	int writing;

	pthread_mutex_t chunk_locks[VOL_CHUNK_LOCKS];

	/* per chunk, with idx (vol_grow_cap): last write (seconds,
	 * net_now_ms() / 1000) and writes (high 32 bits done, low 32 in
	 * flight) into our replicated chunks: the sealer's view */
	_Atomic uint32_t *wsec;
	_Atomic uint64_t *wact;
	/* the sealer thread (vol_seal.c): EC writers with ec_seal_after_s */
	pthread_t sealer;
	int sealer_on, sealer_stop;
	pthread_mutex_t smu;
	pthread_cond_t scv;
	atomic_uint_fast64_t sealed, unsealed;  /* chunks, by this handle */
	/* where sealed chunks' stripes were last read (vol_io.c
	 * vol_chunk_read): valid while gen and unsealed are as then */
	pthread_mutex_t hmu;
	struct vol_ec_hint *hints;      /* VOL_EC_HINTS slots, or NULL */
	/* our own stripes a backed unseal left (vol_seal.c): removed once
	 * the objects backed by them are filled (vol_stripe_gc) */
	pthread_mutex_t gcmu;
	struct vol_gc { uint32_t vid, at_s; uint64_t chunk; } *gc;
	size_t ngc, cap_gc;

	/* copy-on-write (vol_io.c chunk_copy; docs/volumes.md
	 * "Copy-on-write") */
	int cow_client;                 /* $SDFS_VOL_COW=client: always the
					   client's copy (benchmarks) */
	_Atomic int64_t cow_off_until;  /* net_now_ms: no OBJ_COPY before */
	atomic_uint_fast64_t cow_daemon; /* chunks the block daemons copied */
	atomic_uint_fast64_t cow_copied; /* chunks this client read and put */

	/* objects written since the last flush */
	pthread_mutex_t fmu;            /* one flush at a time (sdfs_vol_flush) */
	pthread_mutex_t dmu;
	uint64_t *dirty;
	size_t ndirty, cap_dirty;
};

static inline uint64_t vol_index_oid(const struct sdfs_vol *v)
{
	return oid_vindex(v->vi.vid, v->vi.copies);
}

/* Has the volume an erasure code (its chunks may be sealed)? */
static inline int vol_is_ec(const struct sdfs_vol *v)
{
	return policy_is_ec(v->vi.copies);
}

#define VOL_WACT_DONE (1ull << 32)      /* wact: one write done */

/* vol.c */
/* Re-read the live state after a write was refused as frozen (-EROFS)
 * by an I/O that started at generation @gen: waits until the mds shows a
 * new live vid, loads its index. Call without `state` held. 0 or -errno. */
int vol_reload(struct sdfs_vol *v, uint64_t gen);
/* Read-only handles of the live state: reload if the index is older
 * than VOL_RO_RELOAD_MS. Call without `state` held. */
void vol_refresh_ro(struct sdfs_vol *v);
/* Make room for @chunks entries (state held exclusively, or at open). */
int vol_grow_cap(struct sdfs_vol *v, uint64_t chunks);

/* vol_io.c */
void vol_io_init(struct sdfs_vol *v);
void vol_io_destroy(struct sdfs_vol *v);
/* Forget the index commit state after a reload (ixmu free). */
void vol_io_reset(struct sdfs_vol *v);
/* Set index entry @chunk to @e and wait until an index write with it is
 * acknowledged (state shared). */
int vol_index_commit(struct sdfs_vol *v, uint64_t chunk, uint32_t e);
/* @err is -EPERM: another writer fenced ours; from now on -EPERM. */
void vol_note_fenced(struct sdfs_vol *v, int err);
/* Read [in, in+n) of chunk @chunk as index entry @e says (0: zeros). */
int vol_chunk_read(struct sdfs_vol *v, uint32_t e, uint64_t chunk, char *buf, size_t n,
		   uint64_t in);

/* vol_seal.c */
/* Seal chunk @chunk of ours if it is replicated and no write is under
 * way (state shared; takes its chunk lock): 1 sealed, 0 not (not ours,
 * busy, empty), or -errno. */
int vol_seal_chunk(struct sdfs_vol *v, uint64_t chunk);
/* Chunk @chunk, sealed as @e, becomes ours and replicated with [in,
 * in+n) = @data (NULL: zeros) over it (state shared, chunk lock held). */
int vol_unseal(struct sdfs_vol *v, uint64_t chunk, uint32_t e, const char *data,
	       size_t n, uint64_t in);
/* Remove the own stripes backed unseals left at least @age_s seconds
 * ago once every node filled the objects backed by them (sdfs_obj_fill;
 * state not held): the sealer's scans and the writer's close, both
 * VOL_GC_AGE_S (the filler has mostly done it by then: a close does not
 * wait for whole chunks to be copied; a younger stripe stays until the
 * chunk is sealed again, which reuses it, or its vid is reclaimed).
 * 0, or -EAGAIN (some stay). */
#define VOL_GC_AGE_S 60
int vol_stripe_gc(struct sdfs_vol *v, uint32_t age_s);
/* The sealer thread of a writer of an EC volume, if ec_seal_after_s. */
void vol_sealer_start(struct sdfs_vol *v);
void vol_sealer_stop(struct sdfs_vol *v);
#endif
