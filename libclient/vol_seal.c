/*
 * vol_seal.c - the chunks of an erasure-coded volume (vol_int.h; docs/
 * ec.md "EC volumes"): sealing a cold chunk of ours as an EC object,
 * making a sealed chunk replicated again for a write, the writer's
 * background sealer and sdfs_vol_seal.
 *
 * Sealing chunk c of live vid V (state shared, chunk lock held): read
 * the replicated object, sdfs_ec_put it as oid_vstripe(V, c), set the
 * in-memory entry sealed, check no write into c ran meanwhile (wact),
 * commit the entry, flush the index, remove the replicated object. Until
 * the remove both forms hold the same bytes, so a crash or a failed step
 * anywhere leaves whatever the durable index says readable; a stripe
 * left behind is garbage the next seal overwrites or reclaim removes.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/net.h"
#include "libclient/vol_int.h"

#define SEAL_SCAN_MS 1000       /* the sealer looks for cold chunks this often */
#define SEAL_MBPS 32            /* and seals at most this many MiB/s */
#define SEAL_BACKOFF_MS 10000   /* after a failure (no k + m nodes, ...) */

static unsigned ec_k(const struct sdfs_vol *v)
{
	return policy_ec_k(v->vi.copies);
}

static unsigned ec_m(const struct sdfs_vol *v)
{
	return policy_ec_m(v->vi.copies);
}

static uint32_t now_s(void)
{
	return (uint32_t)(net_now_ms() / 1000);
}

/* SDFS_VOL_FAULT=@what (tests, vol_ec_test.c): the process dies here,
 * as a writer killed between two steps of a seal. SDFS_VOL_FAULT=
 * stop_@what (vol_ec_fault_test.c): it stops itself here (SIGSTOP), as a
 * writer paused between two steps, and goes on when sent SIGCONT. */
static void fault_point(const char *what)
{
	const char *f = getenv("SDFS_VOL_FAULT");

	if (f && !strcmp(f, what)) {
		log_warn("SDFS_VOL_FAULT=%s: exiting", what);
		_exit(99);
	}
	if (f && !strncmp(f, "stop_", 5) && !strcmp(f + 5, what)) {
		log_warn("SDFS_VOL_FAULT=%s: stopping", f);
		raise(SIGSTOP);
	}
}

/* The bytes sealed by the last vol_seal_chunk that returned 1 (for
 * sdfs_vol_seal's count; per thread). */
static __thread uint64_t seal_bytes;

int vol_seal_chunk(struct sdfs_vol *v, uint64_t chunk)
{
	uint32_t vid = (uint32_t)v->vi.vid, sealed = vid | VOLIDX_SEALED;
	pthread_mutex_t *cl = &v->chunk_locks[chunk % VOL_CHUNK_LOCKS];
	uint64_t oid = oid_vdata(vid, chunk, v->vi.copies), ix = vol_index_oid(v), w0;
	uint32_t osz = v->vi.obj_size;
	char *buf = NULL;
	ssize_t got;
	int ret = 0;

	if (!vol_is_ec(v) || v->vi.vid > VOLIDX_SEALED - 1 || chunk >= v->cap)
		return 0;
	pthread_mutex_lock(cl);
	w0 = atomic_load(&v->wact[chunk]);
	if (atomic_load(&v->idx[chunk]) != vid || (w0 & (VOL_WACT_DONE - 1)))
		goto out;               /* not ours and replicated, or being written */
	buf = malloc(osz);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	got = sdfs_obj_read(v->s, oid, buf, osz, 0);
	if (got <= 0) {
		ret = got == 0 ? 0 : (int)got;  /* empty: nothing to seal */
		goto out;
	}
	/* The strip puts carry our token (2.5): a writer a newer one fenced
	 * is refused there (-EPERM) as its object writes are, and a vid
	 * frozen meanwhile gives -EROFS (the next state's chunks next). */
	fault_point("seal_before_put");
	ret = sdfs_ec_put_ex(v->s, oid_vstripe(vid, chunk), ec_k(v), ec_m(v), buf,
			     (size_t)got, &(struct sdfs_ec_opts){ .token = v->token });
	vol_note_fenced(v, ret);
	if (ret)
		goto out;
	fault_point("seal_after_put");
	/* Readers now take the stripe, writers the chunk lock (ours).
	 * A write that counted itself before this store shows in wact: the
	 * stripe may miss it, so the chunk stays replicated. */
	atomic_store(&v->idx[chunk], sealed);
	if (atomic_load(&v->wact[chunk]) != w0) {
		atomic_store(&v->idx[chunk], vid);
		goto out;
	}
	ret = vol_index_commit(v, chunk, sealed);
	/* Failed: the entry stays sealed here (both forms hold the same
	 * bytes, and a write unseals it under this lock); the replicated
	 * object stays too, whatever the index says on disk. */
	if (!ret)
		ret = sdfs_obj_flush_many(v->s, &ix, 1);
	if (!ret) {
		int r = sdfs_obj_remove_tok(v->s, oid, v->token);

		if (r && r != -ENOENT)
			log_info("volume ino=%" PRIu64 " chunk %" PRIu64 ": sealed; its "
				 "replicated object stays until reclaim (%s)", v->ino, chunk,
				 strerror(-r));
		atomic_fetch_add(&v->sealed, 1);
		seal_bytes = (uint64_t)got;
		ret = 1;
	}
out:
	pthread_mutex_unlock(cl);
	free(buf);
	return ret;
}

/*
 * The backed unseal (docs/ec.md "Backed unseal"; protocol 2.6): the
 * block daemons make @oid backed by the stripe @stripe with [in, in + n)
 * = @data (NULL: zeros) in it, as a snapshot's copy-on-write (OBJ_COPY
 * with SDFS_COPY_STRIPE): no chunk moves through this client. 0; a
 * fence, freeze, no space or no answer: the caller's; 1: not done here
 * (an older daemon, a key that needs object capabilities, the stripe
 * unreadable to them, SDFS_VOL_UNSEAL=client): unseal it whole.
 */
static int unseal_backed(struct sdfs_vol *v, uint64_t oid, uint64_t stripe, const char *data,
			 size_t n, uint64_t in)
{
	const char *env = getenv("SDFS_VOL_UNSEAL");
	int ret;

	if ((env && !strcmp(env, "client")) || net_now_ms() < atomic_load(&v->cow_off_until))
		return 1;
	ret = sdfs_obj_copy_ex(v->s, oid, stripe, SDFS_COPY_STRIPE |
			       SDFS_COPY_CODE(ec_k(v), ec_m(v)), data, n, in, v->token);
	if (ret == 0 || ret == -EPERM || ret == -EROFS || ret == -ENOSPC ||
	    ret == -ETIMEDOUT || ret == -ENOMEM || ret == -EFBIG)
		return ret;
	log_info("volume ino=%" PRIu64 " oid=%016" PRIx64 ": the block daemons did not "
		 "unseal it (%s): unsealing it here", v->ino, oid, strerror(-ret));
	return 1;
}

/* Note own stripe (@vid, @chunk) for vol_stripe_gc (no memory: it
 * stays until reclaim). */
static void gc_add(struct sdfs_vol *v, uint32_t vid, uint64_t chunk)
{
	pthread_mutex_lock(&v->gcmu);
	for (size_t i = 0; i < v->ngc; i++)
		if (v->gc[i].vid == vid && v->gc[i].chunk == chunk) {
			v->gc[i].at_s = now_s();
			goto out;
		}
	if (v->ngc == v->cap_gc) {
		size_t cap = v->cap_gc ? v->cap_gc * 2 : 16;
		struct vol_gc *g = realloc(v->gc, cap * sizeof(*g));

		if (!g)
			goto out;
		v->gc = g;
		v->cap_gc = cap;
	}
	v->gc[v->ngc++] = (struct vol_gc){ vid, now_s(), chunk };
out:
	pthread_mutex_unlock(&v->gcmu);
}

/*
 * One own stripe of a backed unseal: under the chunk lock (no seal and
 * new backed unseal of it meanwhile), every node fills the chunk's
 * object (sdfs_obj_fill), then the stripe goes, unless the chunk was
 * sealed again (the stripe is its data now) or a snapshot moved us to
 * another vid (the frozen state's reclaim removes it, after its fill).
 * 0 done (entry dropped), -errno kept.
 */
static int gc_one(struct sdfs_vol *v, struct vol_gc g)
{
	pthread_mutex_t *cl = &v->chunk_locks[g.chunk % VOL_CHUNK_LOCKS];
	int ret = 0;

	pthread_rwlock_rdlock(&v->state);
	if (atomic_load(&v->fenced)) {
		pthread_rwlock_unlock(&v->state);
		return -EPERM;
	}
	if (g.vid != (uint32_t)v->vi.vid || g.chunk >= v->cap) {
		pthread_rwlock_unlock(&v->state);
		return 0;
	}
	pthread_mutex_lock(cl);
	if (atomic_load(&v->idx[g.chunk]) == g.vid) {
		ret = sdfs_obj_fill(v->s, g.vid, oid_vdata(g.vid, g.chunk, v->vi.copies));
		/* Still the writer? The entry written again with our token
		 * (a writer fenced meanwhile gets -EPERM: the new one may
		 * have sealed the chunk into this very stripe). */
		if (!ret)
			ret = vol_index_commit(v, g.chunk, g.vid);
		vol_note_fenced(v, ret);
		if (!ret) {
			ret = sdfs_ec_remove(v->s, oid_vstripe(g.vid, g.chunk), ec_k(v), ec_m(v));
			if (ret == -ENOENT)
				ret = 0;
		}
	}
	pthread_mutex_unlock(cl);
	pthread_rwlock_unlock(&v->state);
	return ret;
}

int vol_stripe_gc(struct sdfs_vol *v, uint32_t age_s)
{
	size_t left = 0, young = 0;

	for (;;) {
		struct vol_gc g;
		size_t i;
		int ret;

		pthread_mutex_lock(&v->gcmu);
		if (left >= v->ngc) {
			pthread_mutex_unlock(&v->gcmu);
			break;
		}
		g = v->gc[left];
		pthread_mutex_unlock(&v->gcmu);
		if (now_s() - g.at_s < age_s) {
			left++;
			young++;
			continue;
		}
		ret = gc_one(v, g);
		pthread_mutex_lock(&v->gcmu);
		for (i = 0; i < v->ngc; i++)
			if (v->gc[i].vid == g.vid && v->gc[i].chunk == g.chunk)
				break;
		if (ret || i == v->ngc) {
			left++;
		} else {
			v->gc[i] = v->gc[--v->ngc];
		}
		pthread_mutex_unlock(&v->gcmu);
		if (ret)
			log_info("volume ino=%" PRIu64 " chunk %" PRIu64 ": its stripe stays "
				 "until filled (%s)", v->ino, g.chunk, strerror(-ret));
	}
	return left > young ? -EAGAIN : 0;
}

int vol_unseal(struct sdfs_vol *v, uint64_t chunk, uint32_t e, const char *data, size_t n,
	       uint64_t in)
{
	uint32_t vid = (uint32_t)v->vi.vid, owner = volidx_owner(e, 1);
	uint64_t oids[2] = { oid_vdata(vid, chunk, v->vi.copies), vol_index_oid(v) };
	uint32_t osz = v->vi.obj_size;
	size_t len;
	ssize_t got;
	char *buf;
	int ret;

	ret = unseal_backed(v, oids[0], oid_vstripe(owner, chunk), data, n, in);
	if (ret <= 0) {
		if (!ret)
			ret = vol_index_commit(v, chunk, vid);
		if (ret)
			return ret;
		/* Backed by the stripe: it stays until nothing reads through
		 * it. Our own goes once filled (vol_stripe_gc); an
		 * ancestor's at its reclaim, which fills first (OBJ_FILL).
		 * A later seal of the chunk puts a new version of the same
		 * bytes (docs/ec.md "Backed unseal"). */
		if (owner == vid)
			gc_add(v, vid, chunk);
		atomic_store(&v->idx[chunk], vid);
		atomic_store(&v->wsec[chunk], now_s());
		atomic_fetch_add(&v->unsealed, 1);
		return 0;
	}
	buf = calloc(1, osz);
	if (!buf)
		return -ENOMEM;
	got = sdfs_ec_read(v->s, oid_vstripe(owner, chunk), ec_k(v), ec_m(v), buf, osz, 0);
	if (got < 0) {
		free(buf);
		return got == -ENOENT ? -EIO : (int)got;
	}
	len = (size_t)got > in + n ? (size_t)got : (size_t)(in + n);
	if (data)
		memcpy(buf + in, data, n);
	else
		memset(buf + in, 0, n);
	/* whole: replaces an object of ours a crash left before an index
	 * update (an earlier unseal's, or a seal's not yet removed) */
	ret = sdfs_obj_put_tok(v->s, oids[0], buf, len, v->token);
	free(buf);
	if (!ret)
		ret = vol_index_commit(v, chunk, vid);
	if (ret)
		return ret;
	atomic_store(&v->idx[chunk], vid);
	atomic_store(&v->wsec[chunk], now_s());
	atomic_fetch_add(&v->unsealed, 1);
	/* Our own stripe: no snapshot names it (one would have moved us to
	 * a new vid), so it goes once the replicated form is durable. An
	 * ancestor's stays for its own index; reclaim removes it. */
	if (owner == vid) {
		ret = sdfs_obj_flush_many(v->s, oids, 2);
		if (!ret) {
			int r = sdfs_ec_remove(v->s, oid_vstripe(vid, chunk), ec_k(v), ec_m(v));

			if (r && r != -ENOENT)
				log_info("volume ino=%" PRIu64 " chunk %" PRIu64 ": old stripe "
					 "stays until reclaim (%s)", v->ino, chunk, strerror(-r));
		}
	}
	return ret;
}

/* One seal at a time, state shared: a reload after a snapshot (-EROFS)
 * as range_apply does. 1 sealed, 0 not, -errno. */
static int seal_one(struct sdfs_vol *v, uint64_t chunk)
{
	uint64_t gen;
	int ret;

	pthread_rwlock_rdlock(&v->state);
	gen = v->gen;
	ret = vol_seal_chunk(v, chunk);
	pthread_rwlock_unlock(&v->state);
	if (ret == -EROFS && !vol_reload(v, gen))
		ret = 0;        /* frozen meanwhile: the new state's chunks next */
	return ret;
}

/* The next chunk at or after @from that is ours, replicated and cold for
 * @after seconds (@after 0: any); UINT64_MAX if none. */
static uint64_t next_cold(struct sdfs_vol *v, uint64_t from, uint32_t after)
{
	uint64_t found = UINT64_MAX;
	uint32_t vid, now = now_s();

	pthread_rwlock_rdlock(&v->state);
	vid = (uint32_t)v->vi.vid;
	for (uint64_t c = from; c < v->cap; c++) {
		if (atomic_load(&v->idx[c]) == vid &&
		    (!after || now - atomic_load(&v->wsec[c]) >= after)) {
			found = c;
			break;
		}
	}
	pthread_rwlock_unlock(&v->state);
	return found;
}

/* Wait @ms or until stopped; 1 if stopped. */
static int sealer_wait(struct sdfs_vol *v, int64_t ms)
{
	struct timespec ts;
	int stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&v->smu);
	if (!v->sealer_stop)
		pthread_cond_timedwait(&v->scv, &v->smu, &ts);
	stop = v->sealer_stop;
	pthread_mutex_unlock(&v->smu);
	return stop;
}

static void *sealer_main(void *arg)
{
	struct sdfs_vol *v = arg;
	int64_t pause_ms = (int64_t)v->vi.obj_size * 1000 / ((int64_t)SEAL_MBPS << 20);

	while (!sealer_wait(v, SEAL_SCAN_MS)) {
		int after = atomic_load(&v->s->ec_seal_after_s);
		uint64_t c = 0;

		if (!atomic_load(&v->fenced))
			vol_stripe_gc(v, VOL_GC_AGE_S);
		if (after <= 0 || atomic_load(&v->fenced))
			continue;
		while ((c = next_cold(v, c, (uint32_t)after)) != UINT64_MAX) {
			int ret = seal_one(v, c);

			if (ret < 0) {
				log_warn("volume ino=%" PRIu64 " chunk %" PRIu64 ": cannot seal "
					 "(%s); trying again in %d s", v->ino, c, strerror(-ret),
					 SEAL_BACKOFF_MS / 1000);
				if (sealer_wait(v, SEAL_BACKOFF_MS))
					return NULL;
				break;
			}
			c++;
			if (ret > 0 && sealer_wait(v, pause_ms > 0 ? pause_ms : 1))
				return NULL;
		}
	}
	return NULL;
}

void vol_sealer_start(struct sdfs_vol *v)
{
	if (!vol_is_ec(v) || atomic_load(&v->s->ec_seal_after_s) <= 0)
		return;
	v->sealer_stop = 0;
	if (pthread_create(&v->sealer, NULL, sealer_main, v) == 0)
		v->sealer_on = 1;
	else
		log_warn("volume ino=%" PRIu64 ": no sealer thread: its chunks stay "
			 "replicated until sdfs vol seal", v->ino);
}

void vol_sealer_stop(struct sdfs_vol *v)
{
	if (!v->sealer_on)
		return;
	pthread_mutex_lock(&v->smu);
	v->sealer_stop = 1;
	pthread_cond_broadcast(&v->scv);
	pthread_mutex_unlock(&v->smu);
	pthread_join(v->sealer, NULL);
	v->sealer_on = 0;
}

int sdfs_vol_seal(struct sdfs_vol *v, void (*progress)(void *arg, uint64_t done,
		  uint64_t total), void *arg, struct sdfs_vol_seal_stat *st)
{
	struct sdfs_vol_seal_stat s = { 0 };
	uint64_t c = 0, total;
	int ret = 0;

	if (!v->writer)
		return -EROFS;
	if (!vol_is_ec(v))
		return -EMEDIUMTYPE;
	if (atomic_load(&v->fenced))
		return -EPERM;
	pthread_rwlock_rdlock(&v->state);
	total = v->cap;
	pthread_rwlock_unlock(&v->state);
	while ((c = next_cold(v, c, 0)) != UINT64_MAX) {
		s.chunks++;
		ret = seal_one(v, c);
		if (ret < 0)
			break;
		if (ret > 0) {
			s.sealed++;
			s.bytes += seal_bytes;
		} else {
			s.skipped++;
		}
		ret = 0;
		c++;
		if (progress)
			progress(arg, c, total);
	}
	if (progress && !ret)
		progress(arg, total, total);
	if (st)
		*st = s;
	return ret;
}
