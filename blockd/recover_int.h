/*
 * recover_int.h - what recover.c (deciding what to recover: the pass),
 * recover_io.c (settling one object: peers, fetch, the rule) and
 * recover_repair.c (rewriting a copy scrub found corrupt) share.
 * Not installed, not used outside these three files.
 */
#ifndef SDFS_BLOCKD_RECOVER_INT_H
#define SDFS_BLOCKD_RECOVER_INT_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "blockd/blockd.h"
#include "blockd/history.h"
#include "blockd/recover.h"
#include "common/rpc.h"

#define REC_STRIPES 256
#define REC_BUCKETS (1u << 16)
#define REC_MAX_PEERS 64        /* peers asked about one object */
#define REC_INFLIGHT 8          /* epochs with mutations in flight at once */

/* One node's copy of an object, as a peer (or this node) reported it. */
struct rec_copy {
	uint32_t node_id;
	int present;
	int deleted;            /* a tombstone: removed in epoch `tag` */
	uint64_t tag;           /* epoch of the copy's last write */
	uint64_t size;
	uint64_t csum;          /* XXH3 over its block checksums (scrub's
				   compare; 0 where a listing made it) */
};

/* What a set of peers said about one object, for the rule. */
struct rec_view {
	size_t n;
	struct rec_copy copy[REC_MAX_PEERS + 1];
	/* the nodes that answered, with their clean epochs */
	size_t nresp;
	uint32_t resp_id[REC_MAX_PEERS];
	uint64_t resp_clean[REC_MAX_PEERS];
	uint64_t resp_full[REC_MAX_PEERS];
};

struct verified {
	uint64_t oid, epoch;
	struct verified *next;
};

struct recover {
	struct blockd *bd;
	struct recover_opts opts;
	struct history *hist;
	struct pool *pool;
	uint32_t self;
	unsigned copies;
	uint32_t obj_size;

	pthread_mutex_t stripe[REC_STRIPES];    /* one object settles at a time */

	pthread_mutex_t vlock;                  /* the verified table */
	struct verified **vtab;                 /* oid -> epoch verified current */

	pthread_mutex_t lock;                   /* below */
	pthread_cond_t cond;
	uint64_t cur_epoch;                     /* latest map installed */
	uint64_t pass_epoch;                    /* pass running or last run */
	int64_t retry_at_ms;                    /* re-run the pass then (0: no) */
	uint64_t backoff_epoch;                 /* failed passes of this epoch */
	int64_t backoff_ms;                     /* wait before the next one */
	/* Mutations past their last epoch check, not ended yet, counted
	 * by their epoch (recover_quiesce); quiet is signalled when a
	 * count drops to 0 or a map is installed. */
	struct {
		uint64_t epoch;
		unsigned n;
	} inflight[REC_INFLIGHT];
	pthread_cond_t quiet;
	int stop;
	pthread_t thread;

	atomic_uint_fast64_t clean_epoch;      /* recover.h */
	atomic_uint_fast64_t full_epoch;
	atomic_uint_fast64_t todo_objs, done_objs, todo_bytes, done_bytes;
	atomic_uint_fast64_t unavail, extra, moved;
	atomic_int_fast64_t pass_start_ms, pass_end_ms;

	/* throttle: a token bucket of bytes */
	pthread_mutex_t tb_lock;
	double tb_tokens;
	int64_t tb_last_ms;
};

/* recover_io.c */
uint64_t rec_verified_get(struct recover *r, uint64_t oid);
void rec_verified_set(struct recover *r, uint64_t oid, uint64_t epoch);
void rec_verified_clear(struct recover *r);
/* Ask every up node of @m but this one about @oid (raw STAT); with
 * @csum their copies' csums too (SDFS_STAT_CSUM: each reads its block
 * table; 0 from a node before 2.3). */
int rec_view_gather(struct recover *r, const struct cmap *m, uint64_t oid,
		    int csum, struct rec_view *v);
/*
 * Settle @oid for map @m with the stripe lock held: fast path, else the
 * rule over @v (gathered here if NULL). @fetched says if bytes moved.
 */
int rec_settle_locked(struct recover *r, const struct cmap *m, uint64_t oid,
		      const struct rec_view *v, int *fetched, uint64_t *bytes);
pthread_mutex_t *rec_stripe(struct recover *r, uint64_t oid);
/* With the stripe lock held: settle @oid for @epoch if not yet
 * (recover_ensure's work). */
int rec_ensure_locked(struct recover *r, uint64_t oid, uint64_t epoch);
/* Fetch @c's copy of @oid whole (a raw OBJ_READ: the peer checks every
 * block as it reads) and store it here with its tag, or bury a
 * tombstone; *@bytes moved. With the stripe lock held. 0 or -errno. */
int rec_fetch(struct recover *r, const struct cmap *m, uint64_t oid,
	      const struct rec_copy *c, uint64_t *bytes);
/*
 * Before dropping a copy without leaving a tombstone in @epoch: a full
 * epoch older than @epoch would still claim "nothing here was ever
 * missing" for it, so it is forgotten (on disk too). 0 or -errno.
 */
int rec_full_forget(struct recover *r, uint64_t epoch);
void rec_throttle(struct recover *r, uint64_t bytes);
int64_t rec_now_ms(void);
#endif
