/*
 * vfence.c - see vfence.h. A chained hash table vid -> token under one
 * mutex (entries are only added: vids are never reused), and striped
 * rwlocks keyed by vid that order mutations against raises.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* rwlock kinds */
#endif
#include "blockd/vfence.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/coord_vol.h"
#include "common/sdfs_proto.h"

#define VFENCE_STRIPES 64
#define VFENCE_BUCKETS0 1024

struct vf_ent {
	uint64_t vid;
	uint32_t token;
	uint32_t before;        /* frozen: the fence it had (FROZEN: unknown) */
	struct vf_ent *next;
};

struct vfence {
	/* Shared by a vid's mutations from check to end; exclusive to a
	 * raise of one of its vids. Writers preferred, as in fence.c. */
	pthread_rwlock_t stripe[VFENCE_STRIPES];
	pthread_mutex_t lock;           /* the table below */
	struct vf_ent **bucket;
	size_t nbuckets, count;
	atomic_int synced;
};

static size_t hash(uint64_t vid)
{
	vid ^= vid >> 33;
	vid *= 0xff51afd7ed558ccdull;
	vid ^= vid >> 33;
	return (size_t)vid;
}

static pthread_rwlock_t *stripe_of(struct vfence *f, uint64_t vid)
{
	return &f->stripe[hash(vid) % VFENCE_STRIPES];
}

int vfence_open(struct vfence **out)
{
	pthread_rwlockattr_t attr;
	struct vfence *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->nbuckets = VFENCE_BUCKETS0;
	f->bucket = calloc(f->nbuckets, sizeof(*f->bucket));
	if (!f->bucket) {
		free(f);
		return -ENOMEM;
	}
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (int i = 0; i < VFENCE_STRIPES; i++)
		pthread_rwlock_init(&f->stripe[i], &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&f->lock, NULL);
	atomic_init(&f->synced, 0);
	*out = f;
	return 0;
}

void vfence_close(struct vfence *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nbuckets; i++)
		while (f->bucket[i]) {
			struct vf_ent *e = f->bucket[i];

			f->bucket[i] = e->next;
			free(e);
		}
	free(f->bucket);
	for (int i = 0; i < VFENCE_STRIPES; i++)
		pthread_rwlock_destroy(&f->stripe[i]);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* f->lock held. */
static struct vf_ent *find(struct vfence *f, uint64_t vid)
{
	for (struct vf_ent *e = f->bucket[hash(vid) % f->nbuckets]; e; e = e->next)
		if (e->vid == vid)
			return e;
	return NULL;
}

/* Twice the buckets once there are more entries than buckets; without
 * memory the chains just get longer. f->lock held. */
static void grow(struct vfence *f)
{
	size_t n = f->nbuckets * 2;
	struct vf_ent **b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < f->nbuckets; i++)
		while (f->bucket[i]) {
			struct vf_ent *e = f->bucket[i];

			f->bucket[i] = e->next;
			e->next = b[hash(e->vid) % n];
			b[hash(e->vid) % n] = e;
		}
	free(f->bucket);
	f->bucket = b;
	f->nbuckets = n;
}

uint32_t vfence_get(struct vfence *f, uint64_t vid)
{
	uint32_t token;

	pthread_mutex_lock(&f->lock);
	struct vf_ent *e = find(f, vid);
	token = e ? e->token : 0;
	pthread_mutex_unlock(&f->lock);
	return token;
}

/* Set @vid's entry to @token if higher. A freeze remembers the fence it
 * replaces if @known (a VOL_FENCE round: this node saw every raise
 * before it), else not (loaded from ZooKeeper). f->lock held. */
static int set_max(struct vfence *f, uint64_t vid, uint32_t token, int known)
{
	struct vf_ent *e = find(f, vid);

	if (e) {
		if (token > e->token) {
			if (token == SDFS_TOKEN_FROZEN)
				e->before = known ? e->token : SDFS_TOKEN_FROZEN;
			e->token = token;
		}
		return 0;
	}
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->vid = vid;
	e->token = token;
	e->before = known ? 0 : SDFS_TOKEN_FROZEN;
	e->next = f->bucket[hash(vid) % f->nbuckets];
	f->bucket[hash(vid) % f->nbuckets] = e;
	if (++f->count > f->nbuckets)
		grow(f);
	return 0;
}

static int raise_ex(struct vfence *f, uint64_t vid, uint32_t token, int known)
{
	pthread_rwlock_t *s = stripe_of(f, vid);
	int ret;

	/* Most raises change nothing (a repeated round, the load after our
	 * own raise): no need to stop the vid's mutations. */
	if (token == 0 || token <= vfence_get(f, vid))
		return 0;
	pthread_rwlock_wrlock(s);
	pthread_mutex_lock(&f->lock);
	ret = set_max(f, vid, token, known);
	pthread_mutex_unlock(&f->lock);
	pthread_rwlock_unlock(s);
	return ret;
}

int vfence_raise(struct vfence *f, uint64_t vid, uint32_t token)
{
	return raise_ex(f, vid, token, 1);
}

int vfence_mutate_begin(struct vfence *f, uint64_t vid, uint32_t token)
{
	return vfence_mutate_begin_ex(f, vid, token, 0);
}

int vfence_mutate_begin_ex(struct vfence *f, uint64_t vid, uint32_t token, int complete)
{
	pthread_rwlock_t *s = stripe_of(f, vid);
	uint32_t fence, before = SDFS_TOKEN_FROZEN;

	pthread_rwlock_rdlock(s);
	if (!atomic_load(&f->synced)) {
		pthread_rwlock_unlock(s);
		return -ESHUTDOWN;
	}
	pthread_mutex_lock(&f->lock);
	struct vf_ent *e = find(f, vid);
	fence = e ? e->token : 0;
	if (e)
		before = e->before;
	pthread_mutex_unlock(&f->lock);
	if (fence == SDFS_TOKEN_FROZEN && complete && token && token >= before)
		return 0;       /* finishing a write the freeze split */
	if (fence == SDFS_TOKEN_FROZEN && token != SDFS_TOKEN_FROZEN) {
		pthread_rwlock_unlock(s);
		return -EROFS;
	}
	if (token < fence) {
		pthread_rwlock_unlock(s);
		return -EPERM;
	}
	return 0;
}

void vfence_mutate_end(struct vfence *f, uint64_t vid)
{
	pthread_rwlock_unlock(stripe_of(f, vid));
}

static int load_one(void *arg, uint64_t vid, uint32_t token)
{
	return raise_ex(arg, vid, token, 0);
}

int vfence_load(struct vfence *f, struct coord *c)
{
	int ret = coord_vol_fence_list(c, load_one, f);

	if (ret)
		return ret;
	atomic_store(&f->synced, 1);
	return 0;
}

void vfence_set_synced(struct vfence *f, int synced)
{
	atomic_store(&f->synced, !!synced);
}

int vfence_is_synced(struct vfence *f)
{
	return atomic_load(&f->synced);
}

uint64_t vfence_count(struct vfence *f)
{
	uint64_t n;

	pthread_mutex_lock(&f->lock);
	n = f->count;
	pthread_mutex_unlock(&f->lock);
	return n;
}
