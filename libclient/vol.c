/*
 * vol.c - opening a volume: the writer lock and token, loading and
 * reloading the index, closing (vol_int.h; docs/volumes.md "One writer").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/net.h"
#include "common/volidx.h"
#include "libclient/vol_int.h"

#define VOL_RETRY_MS 20         /* a snapshot is committing: ask again */

static void sleep_ms(int ms)
{
	usleep((useconds_t)ms * 1000);
}

int vol_grow_cap(struct sdfs_vol *v, uint64_t chunks)
{
	_Atomic uint32_t *idx, *wsec;
	_Atomic uint64_t *wact;
	uint32_t *ixbuf;

	if (chunks <= v->cap)
		return 0;
	if (chunks > VOLIDX_MAX_CHUNKS(v->vi.obj_size))
		return -EFBIG;
	idx = realloc((void *)v->idx, chunks * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	v->idx = idx;
	ixbuf = realloc(v->ixbuf, chunks * sizeof(*ixbuf));
	if (!ixbuf)
		return -ENOMEM;
	v->ixbuf = ixbuf;
	wsec = realloc((void *)v->wsec, chunks * sizeof(*wsec));
	if (!wsec)
		return -ENOMEM;
	v->wsec = wsec;
	wact = realloc((void *)v->wact, chunks * sizeof(*wact));
	if (!wact)
		return -ENOMEM;
	v->wact = wact;
	for (uint64_t i = v->cap; i < chunks; i++) {
		atomic_init(&v->idx[i], 0);
		v->ixbuf[i] = 0;
		atomic_init(&v->wsec[i], (uint32_t)(net_now_ms() / 1000));
		atomic_init(&v->wact[i], 0);
	}
	v->cap = chunks;
	return 0;
}

static uint64_t chunks_of(uint64_t size, uint32_t obj_size)
{
	return (size + obj_size - 1) / obj_size;
}

/* Read the index of v->vi.vid into idx/ixbuf (state exclusive or open). */
static int index_load(struct sdfs_vol *v)
{
	uint64_t max = VOLIDX_MAX_CHUNKS(v->vi.obj_size);
	size_t len = (size_t)VOLIDX_ENTRY_OFF(max);
	uint8_t *buf = malloc(len);
	struct volidx_hdr h;
	uint64_t n;
	ssize_t got;
	int ret;

	if (!buf)
		return -ENOMEM;
	got = sdfs_obj_read(v->s, vol_index_oid(v), buf, len, 0);
	if (got == -ENOENT)
		got = 0;
	if (got < 0) {
		free(buf);
		return (int)got;
	}
	v->idx_exists = got >= (ssize_t)VOLIDX_HDR_SIZE;
	if (v->idx_exists) {
		ret = volidx_hdr_decode(buf, (size_t)got, &h);
		if (!ret && h.vid != v->vi.vid)
			ret = -EBADMSG;
		if (ret) {
			log_err("volume ino=%" PRIu64 " vid=%" PRIu64 ": bad index header",
				v->ino, v->vi.vid);
			free(buf);
			return -EIO;
		}
	}
	n = got > (ssize_t)VOLIDX_HDR_SIZE ? ((uint64_t)got - VOLIDX_HDR_SIZE) / 4 : 0;
	ret = vol_grow_cap(v, n > chunks_of(v->vi.size, v->vi.obj_size) ? n
			   : chunks_of(v->vi.size, v->vi.obj_size));
	if (ret) {
		free(buf);
		return ret;
	}
	for (uint64_t i = 0; i < v->cap; i++) {
		uint32_t o = i < n ? volidx_entry_get(buf + VOLIDX_ENTRY_OFF(i)) : 0;

		atomic_store(&v->idx[i], o);
		v->ixbuf[i] = o;
		/* a chunk's age counts from when this handle first saw it */
		atomic_store(&v->wsec[i], (uint32_t)(net_now_ms() / 1000));
	}
	free(buf);
	v->loaded_ms = net_now_ms();
	return 0;
}

/* The state this handle shows, from the mds. */
static int info_get(struct sdfs_vol *v, struct sdfs_vol_info *vi)
{
	return sdfs_vol_info(v->s, v->ino, v->snap[0] ? v->snap : NULL, vi);
}

int vol_reload(struct sdfs_vol *v, uint64_t gen)
{
	int64_t deadline = net_now_ms() + v->s->timeout_ms;
	struct sdfs_vol_info vi;
	int ret = 0;

	pthread_rwlock_wrlock(&v->state);
	if (v->gen != gen)
		goto out;       /* another I/O reloaded already */
	for (;;) {
		ret = info_get(v, &vi);
		if (ret)
			goto out;
		if (vi.vid != v->vi.vid || !v->writer)
			break;
		/* Frozen but not yet committed at the mds. */
		if (net_now_ms() > deadline) {
			ret = -ETIMEDOUT;
			goto out;
		}
		sleep_ms(VOL_RETRY_MS);
	}
	if (v->writer && vi.token > v->token) {
		log_warn("volume ino=%" PRIu64 ": fenced by a newer writer (token %"
			 PRIu32 " > ours %" PRIu32 ")", v->ino, vi.token, v->token);
		atomic_store(&v->fenced, 1);
		ret = -EPERM;
		goto out;
	}
	if (v->writer)
		log_info("volume ino=%" PRIu64 ": live state moved from vid %" PRIu64
			 " to %" PRIu64 " (snapshot)", v->ino, v->vi.vid, vi.vid);
	v->vi = vi;
	vol_io_reset(v);
	ret = index_load(v);
	v->gen++;
out:
	pthread_rwlock_unlock(&v->state);
	return ret;
}

void vol_refresh_ro(struct sdfs_vol *v)
{
	uint64_t gen;
	int stale;

	if (v->writer || v->snap[0])
		return;
	pthread_rwlock_rdlock(&v->state);
	stale = net_now_ms() - v->loaded_ms > VOL_RO_RELOAD_MS;
	gen = v->gen;
	pthread_rwlock_unlock(&v->state);
	if (stale && vol_reload(v, gen))
		log_debug("volume ino=%" PRIu64 ": index refresh failed", v->ino);
}

/*
 * Become the writer: be first in the lock queue, then take a token one
 * above the live vid's fence (checked against our lock node in the same
 * transaction) and raise every block daemon's fence to it.
 */
static int take_token(struct sdfs_vol *v, unsigned flags)
{
	struct coord *c = v->s->coord;
	int64_t deadline = net_now_ms() + v->s->timeout_ms;
	char holder[COORD_VOL_HOLDER_MAX];
	int ret;

	ret = coord_vol_lock_first(c, v->ino, v->lock_node, holder, sizeof(holder));
	if (ret == -EBUSY && (flags & SDFS_VOL_WAIT)) {
		ret = coord_vol_lock_wait(c, v->ino, v->lock_node, v->s->timeout_ms);
	} else if (ret == -EBUSY && (flags & SDFS_VOL_GRACE)) {
		ret = coord_vol_lock_wait(c, v->ino, v->lock_node, SDFS_VOL_GRACE_MS);
		if (ret == -ETIMEDOUT)
			ret = -EBUSY;
	}
	if (ret == -EBUSY)
		log_info("volume ino=%" PRIu64 ": busy, written by %s", v->ino, holder);
	if (ret)
		return ret;
	for (;;) {
		struct coord_vol_fset set;
		uint32_t t;
		int32_t ver;

		ret = info_get(v, &v->vi);
		if (ret)
			return ret;
		ret = coord_vol_fence_get(c, v->vi.vid, &t, &ver);
		if (ret)
			return ret;
		if (t == SDFS_TOKEN_FROZEN) {
			ret = -EAGAIN;          /* a snapshot is committing */
		} else if (t + 1 == SDFS_TOKEN_FROZEN) {
			return -EOVERFLOW;
		} else {
			set.vid = v->vi.vid;
			set.token = t + 1;
			set.version = ver;
			ret = coord_vol_fence_multi(c, &set, 1, v->lock_node);
			if (!ret) {
				v->token = t + 1;
				break;
			}
		}
		if (ret != -EAGAIN)
			return ret;
		if (net_now_ms() > deadline)
			return -ETIMEDOUT;
		sleep_ms(VOL_RETRY_MS);
	}
	ret = sdfs_vol_fence(v->s, v->vi.vid, v->token);
	if (!ret)
		log_info("volume ino=%" PRIu64 " vid=%" PRIu64 ": writer with token %"
			 PRIu32, v->ino, v->vi.vid, v->token);
	return ret;
}

static struct sdfs_vol *vol_alloc(struct sdfs *s, uint64_t ino)
{
	struct sdfs_vol *v = calloc(1, sizeof(*v));
	pthread_rwlockattr_t ra;

	if (!v)
		return NULL;
	v->s = s;
	v->ino = ino;
	/* Writers first: a reload (after a snapshot) waiting for the lock
	 * must not starve behind I/O threads that keep taking it shared
	 * (glibc prefers readers: at queue depth 32 a write waited out the
	 * whole 30 s benchmark run, tools/bench/vol's cow group). */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&v->state, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&v->size_lock, NULL);
	vol_io_init(v);
	return v;
}

static void vol_free(struct sdfs_vol *v)
{
	vol_io_destroy(v);
	pthread_rwlock_destroy(&v->state);
	pthread_mutex_destroy(&v->size_lock);
	free((void *)v->idx);
	free(v->ixbuf);
	free((void *)v->wsec);
	free((void *)v->wact);
	free(v);
}

static int vol_open_common(struct sdfs *s, uint64_t ino, unsigned flags,
			   const char *holder, const char *snap, struct sdfs_vol **out)
{
	char host[64], desc[COORD_VOL_HOLDER_MAX];
	struct sdfs_vol *v;
	int ret;

	*out = NULL;
	if (!s || (snap && (flags & SDFS_VOL_WRITE)))
		return -EINVAL;
	if (snap && strlen(snap) > SDFS_SNAP_NAME_MAX)
		return -ENAMETOOLONG;
	v = vol_alloc(s, ino);
	if (!v)
		return -ENOMEM;
	if (snap)
		snprintf(v->snap, sizeof(v->snap), "%s", snap);
	v->writer = !!(flags & SDFS_VOL_WRITE);
	if (v->writer) {
		if (!holder) {
			if (gethostname(host, sizeof(host)))
				snprintf(host, sizeof(host), "?");
			host[sizeof(host) - 1] = '\0';
			snprintf(desc, sizeof(desc), "host=%s pid=%d", host, (int)getpid());
			holder = desc;
		}
		client_coord_renew(s);
		ret = coord_vol_lock_join(s->coord, ino, holder, v->lock_node,
					  sizeof(v->lock_node));
		if (ret)
			goto fail;
		ret = take_token(v, flags);
	} else {
		ret = info_get(v, &v->vi);
	}
	if (!ret && v->vi.obj_size < VOLIDX_HDR_SIZE + VOLIDX_ENTRY_SIZE)
		ret = -EIO;
	if (!ret)
		ret = index_load(v);
	if (ret)
		goto fail;
	if (v->writer)
		vol_sealer_start(v);
	*out = v;
	return 0;
fail:
	if (v->lock_node[0])
		coord_vol_lock_release(s->coord, ino, v->lock_node);
	vol_free(v);
	return ret;
}

int sdfs_vol_open(struct sdfs *s, uint64_t ino, unsigned flags, const char *holder,
		  struct sdfs_vol **out)
{
	return vol_open_common(s, ino, flags, holder, NULL, out);
}

int sdfs_vol_open_snap(struct sdfs *s, uint64_t ino, const char *snap,
		       struct sdfs_vol **out)
{
	if (!snap || !snap[0])
		return -EINVAL;
	return vol_open_common(s, ino, 0, NULL, snap, out);
}

void sdfs_vol_close(struct sdfs_vol *v)
{
	if (!v)
		return;
	if (v->writer) {
		int ret;

		vol_sealer_stop(v);
		ret = sdfs_vol_flush(v);
		if (!ret && vol_stripe_gc(v, VOL_GC_AGE_S))
			log_info("volume ino=%" PRIu64 ": stripes of chunks unsealed "
				 "lately stay (until sealed again or reclaimed)", v->ino);

		if (ret)
			log_warn("volume ino=%" PRIu64 ": flush at close: %s", v->ino,
				 strerror(-ret));
		coord_vol_lock_release(v->s->coord, v->ino, v->lock_node);
	}
	vol_free(v);
}

uint64_t sdfs_vol_size(struct sdfs_vol *v)
{
	uint64_t size;

	pthread_rwlock_rdlock(&v->state);
	size = v->vi.size;
	pthread_rwlock_unlock(&v->state);
	return size;
}

void sdfs_vol_get_info(struct sdfs_vol *v, struct sdfs_vol_info *vi)
{
	pthread_rwlock_rdlock(&v->state);
	*vi = v->vi;
	pthread_rwlock_unlock(&v->state);
}

uint64_t sdfs_vol_chunk_owner(struct sdfs_vol *v, uint64_t chunk)
{
	uint64_t o = 0;

	pthread_rwlock_rdlock(&v->state);
	if (chunk < v->cap)
		o = volidx_owner(atomic_load(&v->idx[chunk]), vol_is_ec(v));
	pthread_rwlock_unlock(&v->state);
	return o;
}

int sdfs_vol_chunk_sealed(struct sdfs_vol *v, uint64_t chunk)
{
	int sealed = 0;

	pthread_rwlock_rdlock(&v->state);
	if (chunk < v->cap)
		sealed = volidx_sealed(atomic_load(&v->idx[chunk]), vol_is_ec(v));
	pthread_rwlock_unlock(&v->state);
	return sealed;
}
