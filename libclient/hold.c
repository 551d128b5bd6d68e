/*
 * hold.c - the inodes this handle holds open, told to the active mds
 * (sdfs.h sdfs_ns_hold; docs/mds.md "Strays").
 *
 * A table of counted entries: only a count going 0 -> 1 or 1 -> 0 sends
 * NS_OPEN, under the handle's lock identity (lock.c: the ZooKeeper node
 * clients/<id>, whose end makes the mds let go). One change of an entry
 * is in flight at a time (busy); a thread finding it busy waits, then
 * sends what the count says by then, so a hold and a release of one
 * inode racing from two threads leave the mds with the last word.
 *
 * A last release is not sent at once: the entry lingers HOLD_LINGER_MS
 * (a file opened and closed again and again costs the mds nothing after
 * its first open, as opens under a lease ask nothing), and a thread of
 * the table sends the releases whose linger passed.
 *
 * hold_claim sends the whole set again (after each subscription, and
 * when the identity changed): the entries are frozen meanwhile.
 *
 * A hold may carry the write-back mark (sdfs_ns_hold_writeback, one
 * NS_OPEN with SDFS_NS_OPEN_WRITEBACK per hold): it is claimed again
 * with the hold and goes when the hold's release is sent.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"
#include "libclient/client.h"
#include "libclient/ns_int.h"

#define HOLD_BUCKETS 1024
#define HOLD_LINGER_MS 2000     /* a last release waits this long */
#define HOLD_TICK_MS 500        /* the release thread looks this often */

struct hold_ent {
	uint64_t ino;
	uint32_t refs;                  /* holds by the handle's users */
	uint16_t users;                 /* threads in sync_ent on it */
	uint8_t sent;                   /* the mds knows it held */
	uint8_t wb_sent;                /* ... and marked SDFS_NS_OPEN_WRITEBACK */
	uint8_t busy;                   /* a change is in flight */
	uint8_t unsealed;               /* SDFS_NS_OPEN_UNSEAL done since the hold
					   was sent (hold_unseal) */
	int64_t idle_ms;                /* refs 0 since (monotonic) */
	struct hold_ent *next;
};

struct holds {
	pthread_mutex_t mu;
	pthread_cond_t cond;            /* an entry or the claim got done */
	struct hold_ent *b[HOLD_BUCKETS];
	size_t n, nbusy;
	int claiming;
	int wb_unsupported;             /* the mds refused a write-back mark */
	uint64_t id;                    /* identity the mds knows them by; 0: none */
	struct sdfs *s;
	pthread_t thread;               /* sends lingering releases */
	int started, stop;
	pthread_cond_t tick;            /* CLOCK_MONOTONIC: wakes it to stop */
};

static void *release_main(void *arg);

static size_t bucket_of(uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 54) & (HOLD_BUCKETS - 1);
}

/* The handle's table, made at first use; NULL on ENOMEM. */
static struct holds *holds_get(struct sdfs *s)
{
	struct holds *h;

	pthread_mutex_lock(&s->lock);
	h = s->holds;
	if (!h && (h = calloc(1, sizeof(*h)))) {
		pthread_condattr_t ca;
		sigset_t all, old;

		pthread_mutex_init(&h->mu, NULL);
		pthread_cond_init(&h->cond, NULL);
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&h->tick, &ca);
		pthread_condattr_destroy(&ca);
		h->s = s;
		/* Signals are for the program's threads, not this one. */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		h->started = pthread_create(&h->thread, NULL, release_main, h) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		s->holds = h;
	}
	pthread_mutex_unlock(&s->lock);
	return h;
}

void holds_free(struct holds *h)
{
	if (!h)
		return;
	if (h->started) {
		pthread_mutex_lock(&h->mu);
		h->stop = 1;
		pthread_cond_broadcast(&h->tick);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->thread, NULL);
	}
	/* releases still lingering are not sent: closing the handle ends
	 * its ZooKeeper node, and the mds lets go of all its holds */
	for (size_t i = 0; i < HOLD_BUCKETS; i++)
		while (h->b[i]) {
			struct hold_ent *e = h->b[i];

			h->b[i] = e->next;
			free(e);
		}
	pthread_cond_destroy(&h->tick);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* One NS_OPEN; -errno as the mds answered. */
static int send_open_raw(struct sdfs *s, uint64_t id, uint64_t ino, uint32_t flags,
			 const uint64_t *more, size_t n)
{
	struct sdfs_ns_req r = { .ino = ino, .arg = id, .flags = flags,
				 .data_len = (uint32_t)(n * 8) };
	uint8_t *data = NULL, *rep = NULL;
	struct sdfs_hdr reply;
	uint32_t len = 0;
	int ret;

	if (n) {
		data = malloc(n * 8);
		if (!data)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			for (int j = 0; j < 8; j++)
				data[8 * i + j] = (uint8_t)(more[i] >> (8 * j));
	}
	ret = nsclient_call(s, SDFS_OP_NS_OPEN, &r, NULL, NULL, data, &reply, &rep, &len, 0);
	free(data);
	free(rep);
	return ret;
}

/* One NS_OPEN. An mds without the op (before 1.8) cannot keep files: 0. */
static int send_open(struct sdfs *s, uint64_t id, uint64_t ino, uint32_t flags,
		     const uint64_t *more, size_t n)
{
	int ret = send_open_raw(s, id, ino, flags, more, n);

	return ret == -EOPNOTSUPP ? 0 : ret;
}

/* Send @inos in batches; the last one with @last_flags. */
static int send_set(struct sdfs *s, uint64_t id, uint32_t flags, uint32_t last_flags,
		    const uint64_t *inos, size_t n)
{
	int ret = 0;

	do {
		size_t k = n > SDFS_NS_OPEN_MAX ? SDFS_NS_OPEN_MAX : n;

		ret = send_open(s, id, 0, k == n ? last_flags : flags, inos, k);
		inos += k;
		n -= k;
	} while (!ret && n);
	return ret;
}

/*
 * The whole set to the mds under the current identity: first the
 * releases it may still count (a release that failed), then every held
 * inode, the last batch marked CLAIM. Entries are frozen meanwhile.
 * 0 or -errno (then it is tried again at the next claim).
 */
static int claim(struct sdfs *s, struct holds *h)
{
	uint64_t id, *held = NULL, *gone = NULL, *wb = NULL;
	size_t nh = 0, ng = 0, nw = 0;
	int ret;

	ret = lock_identity(s, &id);
	if (ret)
		return ret;
	pthread_mutex_lock(&h->mu);
	while (h->claiming || h->nbusy)
		pthread_cond_wait(&h->cond, &h->mu);
	h->claiming = 1;
	held = malloc((h->n ? h->n : 1) * sizeof(*held));
	gone = malloc((h->n ? h->n : 1) * sizeof(*gone));
	wb = malloc((h->n ? h->n : 1) * sizeof(*wb));
	for (size_t i = 0; held && gone && wb && i < HOLD_BUCKETS; i++)
		for (struct hold_ent *e = h->b[i]; e; e = e->next)
			if (e->refs && e->wb_sent)
				wb[nw++] = e->ino;
			else if (e->refs)
				held[nh++] = e->ino;
			else if (e->sent && h->id == id)
				gone[ng++] = e->ino;
	pthread_mutex_unlock(&h->mu);
	if (!held || !gone || !wb)
		ret = -ENOMEM;
	if (!ret && ng)
		ret = send_set(s, id, SDFS_NS_OPEN_CLOSE, SDFS_NS_OPEN_CLOSE, gone, ng);
	if (!ret && nw) {
		/* marked holds first, so the CLAIM comes last */
		ret = send_set(s, id, SDFS_NS_OPEN_WRITEBACK, SDFS_NS_OPEN_WRITEBACK, wb, nw);
		if (ret == -EINVAL) {   /* an older mds: plain holds */
			ret = send_set(s, id, 0, 0, wb, nw);
			pthread_mutex_lock(&h->mu);
			h->wb_unsupported = 1;
			pthread_mutex_unlock(&h->mu);
		}
	}
	if (!ret)
		ret = send_set(s, id, 0, SDFS_NS_OPEN_CLAIM, held, nh);
	pthread_mutex_lock(&h->mu);
	if (!ret) {
		h->id = id;
		for (size_t i = 0; i < HOLD_BUCKETS; i++)
			for (struct hold_ent **pp = &h->b[i]; *pp;) {
				struct hold_ent *e = *pp;

				e->sent = e->refs > 0;
				e->unsealed = 0;        /* maybe a new identity */
				if (!e->sent || h->wb_unsupported)
					e->wb_sent = 0;
				if (!e->refs && !e->users) {
					*pp = e->next;
					free(e);
					h->n--;
				} else {
					pp = &e->next;
				}
			}
	}
	h->claiming = 0;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->mu);
	free(held);
	free(gone);
	free(wb);
	nh += nw;
	if (ret)
		log_warn("cannot tell the mds which %zu files are open here: %s", nh,
			 strerror(-ret));
	return ret;
}

int hold_claim(struct sdfs *s)
{
	struct holds *h;
	int ret;

	pthread_mutex_lock(&s->lock_mu);
	ret = s->lock_id != 0;          /* an identity the mds may wait for */
	pthread_mutex_unlock(&s->lock_mu);
	pthread_mutex_lock(&s->lock);
	h = s->holds;
	pthread_mutex_unlock(&s->lock);
	if (!h && !ret)
		return 0;
	h = holds_get(s);
	return h ? claim(s, h) : -ENOMEM;
}

/* Bring the mds to what @e's count says; h->mu held, @e counted in
 * users by the caller. A release only once its linger passed, with
 * @now_release (the release thread). 0 or -errno. */
static int sync_ent(struct sdfs *s, struct holds *h, struct hold_ent *e, int now_release)
{
	int ret = 0;

	for (;;) {
		uint64_t id;
		int want;

		while (e->busy || h->claiming)
			pthread_cond_wait(&h->cond, &h->mu);
		want = e->refs > 0;
		if (want == e->sent)
			return 0;
		if (!want && (!now_release ||
			      net_now_ms() - e->idle_ms < HOLD_LINGER_MS))
			return 0;       /* lingers: the thread sends it */
		e->busy = 1;
		h->nbusy++;
		pthread_mutex_unlock(&h->mu);
		ret = lock_identity(s, &id);
		pthread_mutex_lock(&h->mu);
		if (!ret && h->id && h->id != id) {
			/* a new identity (the session expired): the mds let
			 * everything go; tell it the whole set again */
			e->busy = 0;
			h->nbusy--;
			pthread_cond_broadcast(&h->cond);
			pthread_mutex_unlock(&h->mu);
			ret = claim(s, h);
			pthread_mutex_lock(&h->mu);
			if (ret)
				return ret;
			continue;
		}
		pthread_mutex_unlock(&h->mu);
		if (!ret)
			ret = send_open(s, id, e->ino, want ? 0 : SDFS_NS_OPEN_CLOSE, NULL, 0);
		pthread_mutex_lock(&h->mu);
		e->busy = 0;
		h->nbusy--;
		pthread_cond_broadcast(&h->cond);
		if (ret)
			return ret;
		if (!h->id)
			h->id = id;
		e->sent = (uint8_t)want;
		if (!want) {
			e->wb_sent = 0; /* the mark went with the hold */
			e->unsealed = 0;
		}
	}
}

/* Find or (@make) add @ino's entry and count the caller as its user. */
static struct hold_ent *ent_use(struct holds *h, uint64_t ino, int make)
{
	struct hold_ent *e;

	for (e = h->b[bucket_of(ino)]; e; e = e->next)
		if (e->ino == ino)
			break;
	if (!e && make && (e = calloc(1, sizeof(*e)))) {
		e->ino = ino;
		e->next = h->b[bucket_of(ino)];
		h->b[bucket_of(ino)] = e;
		h->n++;
	}
	if (e)
		e->users++;
	return e;
}

/* The caller is done with @e: unlink it if nothing is left of it. */
static void ent_done(struct holds *h, struct hold_ent *e)
{
	if (--e->users || e->refs || e->sent || e->busy)
		return;
	for (struct hold_ent **pp = &h->b[bucket_of(e->ino)]; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			free(e);
			h->n--;
			return;
		}
}

int sdfs_ns_hold(struct sdfs *s, uint64_t ino)
{
	struct holds *h = holds_get(s);
	struct hold_ent *e;
	int ret;

	if (!h)
		return -ENOMEM;
	if (ino == 0)
		return -EINVAL;
	pthread_mutex_lock(&h->mu);
	e = ent_use(h, ino, 1);
	if (!e) {
		pthread_mutex_unlock(&h->mu);
		return -ENOMEM;
	}
	e->refs++;
	ret = sync_ent(s, h, e, 0);
	ent_done(h, e);
	pthread_mutex_unlock(&h->mu);
	if (ret)
		log_warn("ino=%" PRIu64 ": cannot tell the mds it is open here: %s "
			 "(told at the next subscription)", ino, strerror(-ret));
	return ret;
}

int sdfs_ns_create(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		   uint32_t uid, uint32_t gid, struct sdfs_stat *st)
{
	struct holds *h = holds_get(s);
	uint64_t id;
	int ret;

	if (!h || lock_identity(s, &id))
		return sdfs_ns_mknod(s, dir, name, (mode & ~(uint32_t)S_IFMT) | S_IFREG,
				     0, uid, gid, st);
	pthread_mutex_lock(&h->mu);
	while (h->claiming)
		pthread_cond_wait(&h->cond, &h->mu);
	if (h->id && h->id != id) {
		/* a new identity: the next sdfs_ns_hold claims the set again */
		pthread_mutex_unlock(&h->mu);
		return sdfs_ns_mknod(s, dir, name, (mode & ~(uint32_t)S_IFMT) | S_IFREG,
				     0, uid, gid, st);
	}
	h->nbusy++;             /* a claim waits: it must see this hold */
	pthread_mutex_unlock(&h->mu);
	ret = ns_mknod_held(s, dir, name, mode, uid, gid, id, st);
	pthread_mutex_lock(&h->mu);
	if (!ret && (st->flags & SDFS_STAT_HELD)) {
		struct hold_ent *e = ent_use(h, st->ino, 1);

		if (e) {        /* held, no user yet: it lingers until one comes */
			if (!h->id)
				h->id = id;
			e->sent = 1;
			e->idle_ms = net_now_ms();
			ent_done(h, e);
		}               /* else the mds holds it until our node ends */
	}
	h->nbusy--;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->mu);
	return ret;
}

int sdfs_ns_hold_writeback(struct sdfs *s, uint64_t ino)
{
	struct holds *h = holds_get(s);
	struct hold_ent *e;
	uint64_t id;
	int ret;

	if (!h)
		return -ENOMEM;
	pthread_mutex_lock(&h->mu);
	e = h->wb_unsupported ? NULL : ent_use(h, ino, 0);
	if (!e) {
		ret = h->wb_unsupported ? -EOPNOTSUPP : -EAGAIN;
		pthread_mutex_unlock(&h->mu);
		return ret;
	}
	while (e->busy || h->claiming)
		pthread_cond_wait(&h->cond, &h->mu);
	if (!e->refs || !e->sent || h->wb_unsupported) {
		ret = h->wb_unsupported ? -EOPNOTSUPP : -EAGAIN;
	} else if (e->wb_sent) {
		ret = 0;
	} else {
		e->busy = 1;
		h->nbusy++;
		pthread_mutex_unlock(&h->mu);
		ret = lock_identity(s, &id);
		pthread_mutex_lock(&h->mu);
		if (!ret && h->id != id)
			ret = -EAGAIN;  /* a new identity: the set is claimed first */
		if (!ret) {
			pthread_mutex_unlock(&h->mu);
			ret = send_open_raw(s, id, ino, SDFS_NS_OPEN_WRITEBACK, NULL, 0);
			pthread_mutex_lock(&h->mu);
		}
		e->busy = 0;
		h->nbusy--;
		pthread_cond_broadcast(&h->cond);
		if (!ret) {
			e->wb_sent = 1;
		} else if (ret == -EINVAL || ret == -EOPNOTSUPP) {
			h->wb_unsupported = 1;  /* before 2.3 (or before 1.8) */
			ret = -EOPNOTSUPP;
		}
	}
	ent_done(h, e);
	pthread_mutex_unlock(&h->mu);
	return ret;
}

void sdfs_ns_release(struct sdfs *s, uint64_t ino)
{
	struct holds *h = holds_get(s);
	struct hold_ent *e;
	int ret;

	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	e = ent_use(h, ino, 0);
	if (!e || !e->refs) {
		if (e)
			ent_done(h, e);
		pthread_mutex_unlock(&h->mu);
		return;
	}
	if (--e->refs == 0)
		e->idle_ms = net_now_ms();
	ret = sync_ent(s, h, e, 0);
	ent_done(h, e);
	pthread_mutex_unlock(&h->mu);
	if (ret)
		log_warn("ino=%" PRIu64 ": cannot tell the mds it was closed here: %s "
			 "(told at the next subscription)", ino, strerror(-ret));
}

int hold_unseal(struct sdfs *s, uint64_t ino)
{
	struct holds *h = holds_get(s);
	struct sdfs_ns_req r = { .ino = ino, .flags = SDFS_NS_OPEN_UNSEAL };
	struct hold_ent *e;
	struct sdfs_hdr reply;
	uint8_t *rep = NULL;
	uint32_t len = 0;
	uint64_t id = 0;
	int ret;

	if (!h)
		return -ENOMEM;
	pthread_mutex_lock(&h->mu);
	e = ent_use(h, ino, 0);
	if (e) {
		while (e->busy || h->claiming)
			pthread_cond_wait(&h->cond, &h->mu);
		if (e->unsealed && e->refs && e->sent) {
			ent_done(h, e);
			pthread_mutex_unlock(&h->mu);
			return 0;
		}
	}
	pthread_mutex_unlock(&h->mu);
	if (lock_identity(s, &id) == 0)
		r.arg = id;
	ret = nsclient_call(s, SDFS_OP_NS_OPEN, &r, NULL, NULL, NULL, &reply, &rep, &len, 0);
	free(rep);
	if (ret == -EINVAL || ret == -EOPNOTSUPP)
		ret = 0;        /* an mds before 2.6 seals no file */
	pthread_mutex_lock(&h->mu);
	if (e) {
		if (!ret && e->refs && e->sent)
			e->unsealed = 1;
		ent_done(h, e);
	}
	pthread_mutex_unlock(&h->mu);
	return ret;
}

/* Send the releases whose linger passed, every HOLD_TICK_MS. */
#define HOLD_BATCH 256     /* releases in one NS_OPEN */

/*
 * h->mu held: send the releases that are due in one NS_OPEN (each was
 * one request: a file created and closed cost three). 1 if it sent
 * some, 0 if none were due or the identity changed (sync_ent then
 * claims the set again, one entry at a time).
 */
static int release_batch(struct holds *h, int64_t now)
{
	struct hold_ent *es[HOLD_BATCH];
	uint64_t inos[HOLD_BATCH], id;
	size_t n = 0;
	int ret;

	if (h->claiming)
		return 0;
	for (size_t i = 0; i < HOLD_BUCKETS && n < HOLD_BATCH; i++)
		for (struct hold_ent *e = h->b[i]; e && n < HOLD_BATCH; e = e->next)
			if (!e->refs && e->sent && !e->busy &&
			    now - e->idle_ms >= HOLD_LINGER_MS)
				es[n++] = e;
	if (n < 2)
		return 0;
	for (size_t i = 0; i < n; i++) {
		es[i]->users++;
		es[i]->busy = 1;
		inos[i] = es[i]->ino;
	}
	h->nbusy += n;
	pthread_mutex_unlock(&h->mu);
	ret = lock_identity(h->s, &id);
	pthread_mutex_lock(&h->mu);
	if (!ret && h->id == id) {
		pthread_mutex_unlock(&h->mu);
		ret = send_open(h->s, id, 0, SDFS_NS_OPEN_CLOSE, inos, n);
		pthread_mutex_lock(&h->mu);
	} else if (!ret) {
		ret = -ESTALE;  /* not ours to release under this identity */
	}
	for (size_t i = 0; i < n; i++) {
		es[i]->busy = 0;
		if (!ret) {     /* a hold made meanwhile is sent again */
			es[i]->sent = 0;
			es[i]->wb_sent = 0;
		}
	}
	h->nbusy -= n;
	pthread_cond_broadcast(&h->cond);
	for (size_t i = 0; i < n; i++)
		ent_done(h, es[i]);
	if (ret && ret != -ESTALE)
		log_warn("cannot tell the mds that %zu files were closed here: %s "
			 "(told one by one)", n, strerror(-ret));
	return !ret;
}

static void *release_main(void *arg)
{
	struct holds *h = arg;

	pthread_mutex_lock(&h->mu);
	while (!h->stop) {
		int64_t now = net_now_ms();
		uint64_t ino = 0;
		struct timespec ts;

		if (release_batch(h, now))
			continue;
		/* one due entry at a time (the table may change meanwhile) */
		for (size_t i = 0; i < HOLD_BUCKETS && !ino; i++)
			for (struct hold_ent *e = h->b[i]; e && !ino; e = e->next)
				if (!e->refs && e->sent && !e->busy && !h->claiming &&
				    now - e->idle_ms >= HOLD_LINGER_MS)
					ino = e->ino;
		if (ino) {
			struct hold_ent *e = ent_use(h, ino, 0);
			int ret = sync_ent(h->s, h, e, 1);

			ent_done(h, e);
			if (!ret)
				continue;
			log_warn("ino=%" PRIu64 ": cannot tell the mds it was closed here: "
				 "%s (told at the next subscription)", ino, strerror(-ret));
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += HOLD_TICK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&h->tick, &h->mu, &ts);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}
