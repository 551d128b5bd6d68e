/*
 * vol_io.c - I/O on an open volume (vol_int.h; docs/volumes.md "Data
 * path"): reads by owner, writes into owned chunks, copy-on-write and
 * new chunks with a group-committed index update, punch, flush, resize.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/net.h"
#include "common/volidx.h"
#include "libclient/vol_int.h"

void vol_io_init(struct sdfs_vol *v)
{
	pthread_mutex_init(&v->ixmu, NULL);
	pthread_cond_init(&v->ixcv, NULL);
	pthread_mutex_init(&v->dmu, NULL);
	pthread_mutex_init(&v->fmu, NULL);
	for (int i = 0; i < VOL_CHUNK_LOCKS; i++)
		pthread_mutex_init(&v->chunk_locks[i], NULL);
	pthread_mutex_init(&v->smu, NULL);
	pthread_cond_init(&v->scv, NULL);
	pthread_mutex_init(&v->hmu, NULL);
	pthread_mutex_init(&v->gcmu, NULL);
	v->dirty_lo = UINT64_MAX;
	v->dirty_hi = 0;
	const char *cow = getenv("SDFS_VOL_COW");

	v->cow_client = cow && !strcmp(cow, "client");
}

void vol_io_destroy(struct sdfs_vol *v)
{
	pthread_mutex_destroy(&v->ixmu);
	pthread_cond_destroy(&v->ixcv);
	pthread_mutex_destroy(&v->dmu);
	pthread_mutex_destroy(&v->fmu);
	for (int i = 0; i < VOL_CHUNK_LOCKS; i++)
		pthread_mutex_destroy(&v->chunk_locks[i]);
	pthread_mutex_destroy(&v->smu);
	pthread_mutex_destroy(&v->hmu);
	free(v->hints);
	pthread_cond_destroy(&v->scv);
	pthread_mutex_destroy(&v->gcmu);
	free(v->gc);
	free(v->dirty);
}

void vol_io_reset(struct sdfs_vol *v)
{
	pthread_mutex_lock(&v->ixmu);
	v->dirty_lo = UINT64_MAX;
	v->dirty_hi = 0;
	v->done_gen = v->dirty_gen;
	v->err_gen = 0;
	pthread_mutex_unlock(&v->ixmu);
	/* The dirty objects stay: those of the old vid hold acknowledged
	 * writes the new state shares, and a flush (not a mutation) passes
	 * its freeze. */
}

/* Remember @oid for the next flush. */
static void dirty_add(struct sdfs_vol *v, uint64_t oid)
{
	pthread_mutex_lock(&v->dmu);
	for (size_t i = v->ndirty; i-- > 0;)
		if (v->dirty[i] == oid)
			goto out;
	if (v->ndirty == v->cap_dirty) {
		size_t cap = v->cap_dirty ? v->cap_dirty * 2 : 64;
		uint64_t *d = realloc(v->dirty, cap * sizeof(*d));

		if (!d)
			goto out;       /* flush then syncs everything (below) */
		v->dirty = d;
		v->cap_dirty = cap;
	}
	v->dirty[v->ndirty++] = oid;
out:
	pthread_mutex_unlock(&v->dmu);
}

void vol_note_fenced(struct sdfs_vol *v, int err)
{
	if (err == -EPERM && !atomic_exchange(&v->fenced, 1))
		log_warn("volume ino=%" PRIu64 " vid=%" PRIu64 ": our token %" PRIu32
			 " was fenced: another writer took the volume", v->ino, v->vi.vid,
			 v->token);
}

/*
 * Set index entry @chunk to @owner and wait until an index write that
 * includes it is acknowledged; one write is in flight per volume and
 * carries every entry changed while the previous one was. state shared.
 */
int vol_index_commit(struct sdfs_vol *v, uint64_t chunk, uint32_t owner)
{
	uint64_t mine;
	int ret = 0;

	pthread_mutex_lock(&v->ixmu);
	v->ixbuf[chunk] = owner;
	if (chunk < v->dirty_lo)
		v->dirty_lo = chunk;
	if (chunk > v->dirty_hi)
		v->dirty_hi = chunk;
	mine = ++v->dirty_gen;
	while (v->done_gen < mine) {
		uint64_t lo, hi, upto, off;
		uint8_t *buf;
		size_t len;

		if (v->writing) {
			pthread_cond_wait(&v->ixcv, &v->ixmu);
			continue;
		}
		/* Lead the next write: every entry dirty up to now. */
		lo = v->idx_exists ? v->dirty_lo : 0;
		hi = v->dirty_hi;
		upto = v->dirty_gen;
		off = v->idx_exists ? VOLIDX_ENTRY_OFF(lo) : 0;
		len = (size_t)(VOLIDX_ENTRY_OFF(hi + 1) - off);
		buf = malloc(len);
		if (!buf) {
			ret = -ENOMEM;
			break;
		}
		if (!v->idx_exists) {
			struct volidx_hdr h = { .vid = v->vi.vid, .parent = v->vi.parent,
				.obj_size = v->vi.obj_size, .copies = v->vi.copies };

			volidx_hdr_encode(&h, buf);
		}
		for (uint64_t i = lo; i <= hi; i++)
			volidx_entry_put(buf + VOLIDX_ENTRY_OFF(i) - off, v->ixbuf[i]);
		v->dirty_lo = UINT64_MAX;
		v->dirty_hi = 0;
		v->writing = 1;
		pthread_mutex_unlock(&v->ixmu);

		ret = sdfs_obj_write_tok(v->s, vol_index_oid(v), buf, len, off, 0, v->token);
		free(buf);

		pthread_mutex_lock(&v->ixmu);
		v->writing = 0;
		if (!ret)
			v->idx_exists = 1;
		if (ret) {
			v->err = ret;
			v->err_gen = upto;
		}
		if (upto > v->done_gen)
			v->done_gen = upto;
		pthread_cond_broadcast(&v->ixcv);
	}
	if (!ret && mine <= v->err_gen && v->err)
		ret = v->err;
	pthread_mutex_unlock(&v->ixmu);
	if (!ret)
		dirty_add(v, vol_index_oid(v));
	return ret;
}

/* The stripe version @oid was last read in, if nothing since could have
 * made a newer one: no reload (gen) and no unseal by this handle (a
 * sealed chunk's stripe gets a new version only by an unseal and a new
 * seal, and another writer's shows after a reload). State shared. */
static void hint_get(struct sdfs_vol *v, uint64_t oid, struct ec_hint *h)
{
	struct vol_ec_hint *x;

	pthread_mutex_lock(&v->hmu);
	x = v->hints ? &v->hints[oid % VOL_EC_HINTS] : NULL;
	if (x && x->oid == oid && x->gen == v->gen &&
	    x->unsealed == atomic_load(&v->unsealed))
		*h = x->h;
	pthread_mutex_unlock(&v->hmu);
}

static void hint_put(struct sdfs_vol *v, uint64_t oid, const struct ec_hint *h,
		     uint64_t unsealed)
{
	pthread_mutex_lock(&v->hmu);
	if (!v->hints)
		v->hints = calloc(VOL_EC_HINTS, sizeof(*v->hints));
	if (v->hints)
		v->hints[oid % VOL_EC_HINTS] = (struct vol_ec_hint){
			.oid = oid, .gen = v->gen, .unsealed = unsealed, .h = *h };
	pthread_mutex_unlock(&v->hmu);
}

/* A sealed chunk's range, from where its stripe was last read. */
static ssize_t stripe_read(struct sdfs_vol *v, uint64_t oid, char *buf, size_t n,
			   uint64_t in)
{
	uint64_t unsealed = atomic_load(&v->unsealed);
	struct ec_hint h = { 0 };
	ssize_t got;

	hint_get(v, oid, &h);
	got = ec_read_hinted(v->s, oid, policy_ec_k(v->vi.copies), policy_ec_m(v->vi.copies),
			     buf, n, in, &h);
	if (got >= 0 && h.version)
		hint_put(v, oid, &h, unsealed);
	return got;
}

int vol_chunk_read(struct sdfs_vol *v, uint32_t e, uint64_t chunk, char *buf, size_t n,
		   uint64_t in)
{
	uint32_t owner = volidx_owner(e, vol_is_ec(v));
	ssize_t got;

	if (!owner) {
		memset(buf, 0, n);
		return 0;
	}
	if (volidx_sealed(e, vol_is_ec(v)))
		got = stripe_read(v, oid_vstripe(owner, chunk), buf, n, in);
	else
		got = sdfs_obj_read(v->s, oid_vdata(owner, chunk, v->vi.copies), buf, n, in);
	if (got < 0)
		return (int)got;
	if ((size_t)got < n)
		memset(buf + got, 0, n - (size_t)got);
	return 0;
}

/* How long a volume handle sends no OBJ_COPY after a daemon did not
 * know it, or refused it for this key: a daemon upgraded meanwhile is
 * used again after that. */
#define COW_OFF_MS 60000

/*
 * Chunk @chunk of @owner copied to @oid with [in, in+n) = @data (@data
 * NULL: zeros) over it, by the block daemons (OBJ_COPY) when they can;
 * else (a 2.1 daemon, an unprivileged key, a source they could not
 * read) read here and put whole, as before 2.2. A fence or freeze
 * (-EPERM, -EROFS), no space or no answer is the caller's, not a
 * reason to move 4 MiB through this client.
 */
static int chunk_copy(struct sdfs_vol *v, uint64_t oid, uint32_t owner, uint64_t chunk,
		      const char *data, size_t n, uint64_t in)
{
	uint32_t osz = v->vi.obj_size;
	uint64_t src = oid_vdata(owner, chunk, v->vi.copies);
	size_t len = (size_t)(in + n);
	ssize_t got;
	char *buf;
	int ret;

	if (!v->cow_client && net_now_ms() >= atomic_load(&v->cow_off_until)) {
		ret = sdfs_obj_copy_tok(v->s, oid, src, data, n, in, v->token);
		if (!ret) {
			atomic_fetch_add(&v->cow_daemon, 1);
			return 0;
		}
		if (ret == -EPERM || ret == -EROFS || ret == -ENOSPC || ret == -ETIMEDOUT ||
		    ret == -ENOMEM || ret == -EFBIG)
			return ret;
		if (ret == -EOPNOTSUPP || ret == -EACCES) {
			atomic_store(&v->cow_off_until, net_now_ms() + COW_OFF_MS);
			log_info("volume ino=%" PRIu64 ": the block daemons do not copy "
				 "chunks for us (%s): this client copies them", v->ino,
				 strerror(-ret));
		} else {
			log_warn("volume ino=%" PRIu64 " oid=%016" PRIx64 ": the block "
				 "daemons could not copy it (%s): copying it here", v->ino,
				 src, strerror(-ret));
		}
	}
	buf = calloc(1, osz);
	if (!buf)
		return -ENOMEM;
	got = sdfs_obj_read(v->s, src, buf, osz, 0);
	if (got < 0) {
		free(buf);
		return (int)got;
	}
	if ((size_t)got > len)
		len = (size_t)got;
	if (data)
		memcpy(buf + in, data, n);
	else
		memset(buf + in, 0, n);
	ret = sdfs_obj_put_tok(v->s, oid, buf, len, v->token);
	free(buf);
	if (!ret)
		atomic_fetch_add(&v->cow_copied, 1);
	return ret;
}

/*
 * Make chunk @chunk ours with [in, in+n) = @data (@data NULL: zeros),
 * under its chunk lock: a fresh chunk gets a new object (any object of
 * ours left by a crash before its index update is replaced), an
 * ancestor's is copied first. Then the index.
 */
static int chunk_make(struct sdfs_vol *v, uint64_t chunk, const char *data, size_t n,
		      uint64_t in, uint32_t owner)
{
	uint64_t oid = oid_vdata(v->vi.vid, chunk, v->vi.copies);
	int ret;

	if (volidx_sealed(owner, vol_is_ec(v)))
		return vol_unseal(v, chunk, owner, data, n, in);
	if (!owner && data) {
		/* A fresh chunk: a short object, holes read as zeros. An
		 * object of ours left by a crash before its index update is
		 * replaced (put), or removed first (a write into it would
		 * keep its old bytes around the new ones). */
		if (in == 0) {
			ret = sdfs_obj_put_tok(v->s, oid, data, n, v->token);
		} else {
			ret = sdfs_obj_remove_tok(v->s, oid, v->token);
			if (!ret || ret == -ENOENT)
				ret = sdfs_obj_write_tok(v->s, oid, data, n, in, 0, v->token);
		}
		goto index;
	}
	/* An ancestor's (a zeroing of a fresh chunk never comes here:
	 * piece_write). */
	ret = chunk_copy(v, oid, owner, chunk, data, n, in);
index:
	if (ret)
		return ret;
	dirty_add(v, oid);
	ret = vol_index_commit(v, chunk, (uint32_t)v->vi.vid);
	if (!ret) {
		atomic_store(&v->idx[chunk], (uint32_t)v->vi.vid);
		atomic_store(&v->wsec[chunk], (uint32_t)(net_now_ms() / 1000));
	}
	return ret;
}

/* Write [in, in+n) of our replicated chunk @chunk (@data NULL: zeros),
 * counted in wact for the sealer (vol_int.h): 1 and the write's result,
 * or 0 if the chunk is not ours and replicated (any more). */
static int own_write(struct sdfs_vol *v, uint64_t chunk, const char *data, size_t n,
		     uint64_t in, int *res)
{
	uint32_t vid = (uint32_t)v->vi.vid;
	uint64_t oid = oid_vdata(vid, chunk, v->vi.copies);
	int ret;

	atomic_fetch_add(&v->wact[chunk], 1);
	if (atomic_load(&v->idx[chunk]) != vid) {
		atomic_fetch_sub(&v->wact[chunk], 1);
		return 0;
	}
	if (data) {
		ret = sdfs_obj_write_tok(v->s, oid, data, n, in, 0, v->token);
	} else {
		char *z = calloc(1, n);

		ret = z ? sdfs_obj_write_tok(v->s, oid, z, n, in, 0, v->token) : -ENOMEM;
		free(z);
	}
	if (!ret) {
		dirty_add(v, oid);
		atomic_store(&v->wsec[chunk], (uint32_t)(net_now_ms() / 1000));
	}
	atomic_fetch_add(&v->wact[chunk], VOL_WACT_DONE - 1);
	*res = ret;
	return 1;
}

/* Write one piece inside chunk @chunk (state shared). */
static int piece_write(struct sdfs_vol *v, uint64_t chunk, const char *data, size_t n,
		       uint64_t in)
{
	uint32_t vid = (uint32_t)v->vi.vid, owner = atomic_load(&v->idx[chunk]);
	pthread_mutex_t *cl = &v->chunk_locks[chunk % VOL_CHUNK_LOCKS];
	int ret = 0;

	if (!data && !owner)
		return 0;       /* zeros already */
	if (owner == vid && own_write(v, chunk, data, n, in, &ret))
		return ret;
	/* Not ours, sealed, or sealed meanwhile: under the chunk lock. */
	pthread_mutex_lock(cl);
	owner = atomic_load(&v->idx[chunk]);
	if (owner == vid && own_write(v, chunk, data, n, in, &ret))
		;               /* the sealer waits for the lock */
	else if (!data && !owner)
		ret = 0;        /* dropped meanwhile */
	else
		ret = chunk_make(v, chunk, data, n, in, owner);
	pthread_mutex_unlock(cl);
	return ret;
}

/* Drop whole chunk @chunk: entry 0 first, then our object (state shared). */
static int piece_drop(struct sdfs_vol *v, uint64_t chunk)
{
	pthread_mutex_t *cl = &v->chunk_locks[chunk % VOL_CHUNK_LOCKS];
	uint32_t owner;
	int ret = 0;

	pthread_mutex_lock(cl);
	owner = atomic_load(&v->idx[chunk]);
	if (owner) {
		ret = vol_index_commit(v, chunk, 0);
		if (!ret) {
			atomic_store(&v->idx[chunk], 0);
			if (volidx_owner(owner, vol_is_ec(v)) == v->vi.vid) {
				ret = sdfs_obj_remove_tok(v->s, oid_vdata(v->vi.vid, chunk,
						v->vi.copies), v->token);
				if (ret == -ENOENT)
					ret = 0;
			}
			/* Our stripe: nothing else names it (a snapshot would
			 * have moved us to a new vid). */
			if (!ret && volidx_sealed(owner, vol_is_ec(v)) &&
			    volidx_owner(owner, 1) == v->vi.vid) {
				ret = sdfs_ec_remove(v->s, oid_vstripe(v->vi.vid, chunk),
						     policy_ec_k(v->vi.copies),
						     policy_ec_m(v->vi.copies));
				if (ret == -ENOENT)
					ret = 0;
			}
		}
	}
	pthread_mutex_unlock(cl);
	return ret;
}

/* Does [in, in+n) of @owner's chunk @chunk read as zeros? 1 yes, 0 no,
 * or -errno. */
static int zeros_already(struct sdfs_vol *v, uint32_t owner, uint64_t chunk, size_t n,
			 uint64_t in)
{
	char *buf = malloc(n);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = vol_chunk_read(v, owner, chunk, buf, n, in);
	if (!ret)
		ret = !buf[0] && !memcmp(buf, buf + 1, n - 1);
	free(buf);
	return ret;
}

/*
 * Zero [in, in+n), a part of chunk @chunk (state shared; discard and
 * write-zeroes). Only bytes the chunk's object holds are written: past
 * its end it reads zeros already, and zeros written there would only
 * take space (a never-written chunk stays a hole). An ancestor's chunk
 * whose every stored byte is in the range becomes a hole here (its
 * entry 0, under the chunk lock, so a write racing for the chunk sees
 * either) instead of being copied just to hold zeros; so does a range
 * of it that reads as zeros already (a guest's TRIM of free space in a
 * clone); else it is copied as for a write.
 */
static int piece_zero(struct sdfs_vol *v, uint64_t chunk, size_t n, uint64_t in)
{
	uint32_t vid = (uint32_t)v->vi.vid, owner = atomic_load(&v->idx[chunk]);
	pthread_mutex_t *cl = &v->chunk_locks[chunk % VOL_CHUNK_LOCKS];
	struct sdfs_obj_info oi;
	int ret;

	if (!owner)
		return 0;
	if (volidx_sealed(owner, vol_is_ec(v)))
		return piece_write(v, chunk, NULL, n, in);      /* unsealed with zeros */
	ret = sdfs_obj_stat(v->s, oid_vdata(owner, chunk, v->vi.copies), &oi);
	if (ret)
		return piece_write(v, chunk, NULL, n, in);      /* as before */
	if (in >= oi.size)
		return 0;
	if (in + n > oi.size)
		n = (size_t)(oi.size - in);
	if (owner == vid)
		return piece_write(v, chunk, NULL, n, in);
	if (in > 0 || n < oi.size) {
		ret = zeros_already(v, owner, chunk, n, in);
		return ret < 0 ? ret : ret ? 0 : piece_write(v, chunk, NULL, n, in);
	}
	pthread_mutex_lock(cl);
	if (atomic_load(&v->idx[chunk]) == owner) {
		ret = vol_index_commit(v, chunk, 0);
		if (!ret)
			atomic_store(&v->idx[chunk], 0);
		pthread_mutex_unlock(cl);
		return ret;
	}
	pthread_mutex_unlock(cl);
	return piece_zero(v, chunk, n, in);     /* made ours meanwhile */
}

enum io_kind { IO_WRITE, IO_ZERO };

/*
 * Apply a write (@data) or a zeroing (@data NULL; whole chunks dropped)
 * to [off, off+len), within the size; retried in the new live state if a
 * snapshot froze ours meanwhile.
 */
static int range_apply(struct sdfs_vol *v, const char *data, uint64_t len, uint64_t off)
{
	uint32_t osz;
	uint64_t done = 0, gen;
	int ret;

	for (;;) {
		if (atomic_load(&v->fenced))
			return -EPERM;
		pthread_rwlock_rdlock(&v->state);
		gen = v->gen;
		osz = v->vi.obj_size;
		ret = 0;
		while (done < len && !ret) {
			uint64_t pos = off + done, chunk = pos / osz, in = pos % osz;
			uint64_t n = len - done < osz - in ? len - done : osz - in;

			if (chunk >= v->cap)
				ret = -EFBIG;
			else if (!data && in == 0 && n == osz)
				ret = piece_drop(v, chunk);
			else if (!data)
				ret = piece_zero(v, chunk, (size_t)n, in);
			else
				ret = piece_write(v, chunk, data + done, (size_t)n, in);
			if (!ret)
				done += n;
		}
		pthread_rwlock_unlock(&v->state);
		if (ret != -EROFS)
			break;
		ret = vol_reload(v, gen);
		if (ret)
			break;
	}
	vol_note_fenced(v, ret);
	return ret;
}

/* The mds's size of the volume becomes @sa->size, then ours (size_lock
 * held). */
static int size_set(struct sdfs_vol *v, const struct sdfs_setattr *sa)
{
	int ret = sdfs_ns_setattr(v->s, v->ino, sa, NULL);

	if (!ret) {
		pthread_rwlock_wrlock(&v->state);
		v->vi.size = sa->size;
		pthread_rwlock_unlock(&v->state);
	}
	return ret;
}

/* Tell the mds a size of @size if it grows the volume. */
static int size_grow(struct sdfs_vol *v, uint64_t size)
{
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_SIZE, .size = size };
	int ret = 0;

	pthread_mutex_lock(&v->size_lock);
	if (size > sdfs_vol_size(v)) {
		pthread_rwlock_wrlock(&v->state);
		ret = vol_grow_cap(v, (size + v->vi.obj_size - 1) / v->vi.obj_size);
		pthread_rwlock_unlock(&v->state);
		if (!ret)
			ret = size_set(v, &sa);
	}
	pthread_mutex_unlock(&v->size_lock);
	return ret;
}

int sdfs_vol_pwrite(struct sdfs_vol *v, const void *buf, size_t len, uint64_t off)
{
	int ret;

	if (!v->writer)
		return -EROFS;
	if (off + len < off)
		return -EFBIG;
	if (!len)
		return 0;
	if (off + len > sdfs_vol_size(v)) {
		ret = size_grow(v, off + len);
		if (ret)
			return ret;
	}
	return range_apply(v, buf, len, off);
}

ssize_t sdfs_vol_pread(struct sdfs_vol *v, void *buf, size_t len, uint64_t off)
{
	uint64_t done = 0, gen;
	int retried = 0;
	int ret;

	vol_refresh_ro(v);
again:
	pthread_rwlock_rdlock(&v->state);
	gen = v->gen;
	if (off >= v->vi.size)
		len = 0;
	else if (len > v->vi.size - off)
		len = (size_t)(v->vi.size - off);
	ret = 0;
	while (done < len && !ret) {
		uint32_t osz = v->vi.obj_size;
		uint64_t pos = off + done, chunk = pos / osz, in = pos % osz;
		size_t n = len - done < osz - in ? len - done : (size_t)(osz - in);
		uint32_t owner = chunk < v->cap ? atomic_load(&v->idx[chunk]) : 0;

		ret = vol_chunk_read(v, owner, chunk, (char *)buf + done, n, in);
		/* sealed or unsealed meanwhile (its other form is gone): read
		 * it again as the entry now says */
		if (ret == -ENOENT && vol_is_ec(v) && atomic_load(&v->idx[chunk]) != owner)
			ret = 0;
		else if (!ret)
			done += n;
	}
	pthread_rwlock_unlock(&v->state);
	/* A reader's index may be older than a reclaim of a chunk the live
	 * state has since overwritten: read it again once. */
	if (ret == -ENOENT && !v->writer && !v->snap[0] && !retried) {
		retried = 1;
		if (!vol_reload(v, gen))
			goto again;
	}
	if (ret == -ENOENT)
		ret = -EIO;     /* the index names an object no replica has */
	return ret ? ret : (ssize_t)len;
}

int sdfs_vol_punch(struct sdfs_vol *v, uint64_t off, uint64_t len)
{
	uint64_t size;

	if (!v->writer)
		return -EROFS;
	size = sdfs_vol_size(v);
	if (off >= size || !len)
		return 0;
	if (len > size - off)
		len = size - off;
	return range_apply(v, NULL, len, off);
}

int sdfs_vol_flush(struct sdfs_vol *v)
{
	uint64_t *oids;
	size_t n;
	int ret = 0;

	if (!v->writer)
		return 0;
	if (atomic_load(&v->fenced))
		return -EPERM;  /* writes were refused: nothing is durable */
	/*
	 * One flush at a time: a write acknowledged before this call is in
	 * the list, or in the list an earlier flush took and is syncing
	 * (or put back when it failed); waiting for that one first covers
	 * both. Two flushes at once returned the second with the first's
	 * objects not yet synced (found with the NBD plugin's multi-conn).
	 */
	pthread_mutex_lock(&v->fmu);
	pthread_mutex_lock(&v->dmu);
	oids = v->dirty;
	n = v->ndirty;
	v->dirty = NULL;
	v->ndirty = v->cap_dirty = 0;
	pthread_mutex_unlock(&v->dmu);
	ret = sdfs_obj_flush_many(v->s, oids, n);     /* absent: punched since */
	if (ret) {              /* keep them for the next try */
		for (size_t i = 0; i < n; i++)
			dirty_add(v, oids[i]);
	}
	pthread_mutex_unlock(&v->fmu);
	free(oids);
	return ret;
}

int sdfs_vol_resize(struct sdfs_vol *v, uint64_t size)
{
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_SIZE, .size = size };
	uint64_t old = sdfs_vol_size(v), osz = v->vi.obj_size, end;
	int ret;

	if (!v->writer)
		return -EROFS;
	if (size >= old)
		return size == old ? 0 : size_grow(v, size);
	/* Shrink: zero the tail of the last chunk, drop the chunks past it,
	 * so a later grow reads zeros. */
	end = (old + osz - 1) / osz * osz;
	ret = range_apply(v, NULL, end - size, size);
	if (ret)
		return ret;
	pthread_mutex_lock(&v->size_lock);
	ret = size_set(v, &sa);
	pthread_mutex_unlock(&v->size_lock);
	return ret;
}
