/*
 * fence.c - see fence.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* rwlock kinds */
#endif
#include "blockd/fence.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blockd/datadir.h"
#include "common/log.h"

struct fence {
	/* Shared by MDS mutations from check to end; exclusive to raise.
	 * Writers are preferred, so a steady stream of mutations cannot
	 * hold a raise off. */
	pthread_rwlock_t lock;
	atomic_uint_fast64_t value;     /* written under lock, exclusive */
	atomic_int synced;
	char *dir;
};

int fence_open(const char *dir, struct fence **out)
{
	pthread_rwlockattr_t attr;
	struct fence *f;
	uint64_t v = 0;
	int ret;

	ret = datadir_read_u64(dir, FENCE_FILE, &v);
	if (ret == -EBADMSG)
		log_err("%s/%s: malformed (want one decimal number)", dir, FENCE_FILE);
	if (ret && ret != -ENOENT)
		return ret;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->dir = strdup(dir);
	if (!f->dir) {
		free(f);
		return -ENOMEM;
	}
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&f->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	atomic_init(&f->value, v);
	atomic_init(&f->synced, 0);
	if (v)
		log_info("mds fence %" PRIu64 " (from %s/%s)", v, dir, FENCE_FILE);
	*out = f;
	return 0;
}

void fence_close(struct fence *f)
{
	if (!f)
		return;
	pthread_rwlock_destroy(&f->lock);
	free(f->dir);
	free(f);
}

uint64_t fence_get(struct fence *f)
{
	return atomic_load(&f->value);
}

int fence_raise(struct fence *f, uint64_t to, const char *why, uint64_t *now)
{
	int ret = 0;

	/* Most calls change nothing (a query, a repeated fence, the epoch
	 * read back after our own raise): no need to stop mutations. */
	if (to <= atomic_load(&f->value))
		goto out;
	pthread_rwlock_wrlock(&f->lock);
	if (to > atomic_load(&f->value)) {
		ret = datadir_write_u64(f->dir, FENCE_FILE, to);
		if (ret == 0) {
			atomic_store(&f->value, to);
			log_info("mds fence raised to %" PRIu64 " (%s)", to, why);
		} else {
			log_err("%s/%s: cannot persist mds fence %" PRIu64 ": %s",
				f->dir, FENCE_FILE, to, strerror(-ret));
		}
	}
	pthread_rwlock_unlock(&f->lock);
out:
	if (now)
		*now = atomic_load(&f->value);
	return ret;
}

int fence_mutate_begin(struct fence *f, uint32_t token)
{
	pthread_rwlock_rdlock(&f->lock);
	if (!atomic_load(&f->synced)) {
		pthread_rwlock_unlock(&f->lock);
		return -ESHUTDOWN;
	}
	if (token < atomic_load(&f->value)) {
		pthread_rwlock_unlock(&f->lock);
		return -EPERM;
	}
	return 0;
}

void fence_mutate_end(struct fence *f)
{
	pthread_rwlock_unlock(&f->lock);
}

void fence_set_synced(struct fence *f, int synced)
{
	atomic_store(&f->synced, !!synced);
}

int fence_is_synced(struct fence *f)
{
	return atomic_load(&f->synced);
}
