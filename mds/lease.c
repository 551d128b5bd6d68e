/*
 * lease.c - leases of subscribed clients and the pushes (lease.h).
 *
 * Leases live in a hash table of small lists, keyed (a, h): an inode
 * lease is (ino, 0), an entry lease (parent, hash(name) << 2 | 1), a
 * listing lease (dir, 2). Two names with one hash only cost a needless
 * push. Expired leases are dropped by whoever walks their list, and a
 * grant also sweeps one more list, round the table.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "common/auth.h"
#include "common/csum.h"
#include "common/log.h"
#include "common/proto.h"
#include "mds/lease.h"

#define LEASE_BUCKETS   16384
#define LEASE_STRIPES   256
#define LEASE_MARGIN_MS 100     /* the client starts its timeout after we do */
#define NOTE_INODES     32
#define NOTE_ENTRIES    16
#define H_INODE         0
#define H_LISTING       2

struct lease {
	uint64_t a, h, client;
	int64_t until;                  /* monotonic ms */
	struct lease *next;
};

struct lease_sub {
	struct leases *l;
	uint64_t client;
	uint32_t cache_ms;
	int fd;                         /* -1: no channel now */
	struct auth_sess *tx;           /* fd's session (NULL: none); its tx
					   direction is used under wlock */
	uint64_t seq, acked;            /* under leases.mu */
	uint64_t chan;                  /* +1 when the channel changes */
	uint64_t root;                  /* shown as SDFS_ROOT_INO (a key's
					   subtree, kcaps.h); 0: none */
	pthread_mutex_t wlock;          /* one message at a time on fd */
	struct lease_sub *next;
};

struct leases {
	pthread_mutex_t mu;             /* subs, their fd/seq/acked */
	pthread_cond_t acked;           /* any answer arrived */
	struct lease_sub *subs;
	atomic_int nsubs;
	pthread_mutex_t stripe[LEASE_STRIPES];
	struct lease *bucket[LEASE_BUCKETS];
	atomic_uint sweep;
	atomic_uint_fast64_t nleases, pushes, push_items, push_timeouts, hints;
};

struct note_ent {
	uint64_t parent;
	uint16_t nlen;
	char name[SDFS_NAME_MAX];
};

static __thread struct {
	int on, over;
	unsigned ni, ne;
	uint64_t ino[NOTE_INODES];
	uint8_t iflags[NOTE_INODES];    /* SDFS_NOTE_F_* */
	struct note_ent ent[NOTE_ENTRIES];
} notes;

/* One stale item for one client. */
struct target {
	uint64_t client;
	int64_t until;
	struct sdfs_note iv;           /* name points into notes */
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t name_h(const char *name, size_t nlen)
{
	return csum64(name, nlen) << 2 | 1;
}

static size_t bucket_of(uint64_t a, uint64_t h)
{
	uint64_t x = (a ^ (h * 0xbf58476d1ce4e5b9ull)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(x >> 50) & (LEASE_BUCKETS - 1);
}

static pthread_mutex_t *stripe_of(struct leases *l, size_t b)
{
	return &l->stripe[b % LEASE_STRIPES];
}

int leases_new(struct leases **out)
{
	struct leases *l = calloc(1, sizeof(*l));
	pthread_condattr_t ca;

	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->acked, &ca);
	pthread_condattr_destroy(&ca);
	for (size_t i = 0; i < LEASE_STRIPES; i++)
		pthread_mutex_init(&l->stripe[i], NULL);
	*out = l;
	return 0;
}

void leases_free(struct leases *l)
{
	if (!l)
		return;
	for (size_t b = 0; b < LEASE_BUCKETS; b++)
		while (l->bucket[b]) {
			struct lease *x = l->bucket[b];

			l->bucket[b] = x->next;
			free(x);
		}
	while (l->subs) {
		struct lease_sub *s = l->subs;

		l->subs = s->next;
		pthread_mutex_destroy(&s->wlock);
		free(s);
	}
	for (size_t i = 0; i < LEASE_STRIPES; i++)
		pthread_mutex_destroy(&l->stripe[i]);
	pthread_cond_destroy(&l->acked);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

/* ---- subscriptions ---- */

static struct lease_sub *sub_find(struct leases *l, uint64_t client)
{
	for (struct lease_sub *s = l->subs; s; s = s->next)
		if (s->client == client)
			return s;
	return NULL;
}

struct lease_sub *lease_subscribe(struct leases *l, uint64_t client, uint32_t cache_ms,
				  int fd, struct auth_sess *tx)
{
	struct lease_sub *s;

	pthread_mutex_lock(&l->mu);
	s = sub_find(l, client);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			pthread_mutex_unlock(&l->mu);
			return NULL;
		}
		s->l = l;
		s->client = client;
		pthread_mutex_init(&s->wlock, NULL);
		s->next = l->subs;
		l->subs = s;
		atomic_fetch_add(&l->nsubs, 1);
	}
	/* A longer cache time holds from now; a shorter one only for
	 * what is granted from now (old leases keep their end). */
	s->cache_ms = cache_ms;
	s->fd = fd;
	s->tx = tx;
	/* Whatever was sent on an old channel is lost with it: its
	 * waiters wait out those leases instead. */
	s->chan++;
	pthread_mutex_unlock(&l->mu);
	log_info("client=%016" PRIx64 ": subscribed to invalidations (caches %" PRIu32
		 " ms)", client, cache_ms);
	return s;
}

void lease_acked(struct lease_sub *s, int fd, uint64_t seq)
{
	pthread_mutex_lock(&s->l->mu);
	if (s->fd == fd && seq > s->acked && seq <= s->seq) {
		s->acked = seq;
		pthread_cond_broadcast(&s->l->acked);
	}
	pthread_mutex_unlock(&s->l->mu);
}

void lease_unsubscribe(struct lease_sub *s, int fd)
{
	pthread_mutex_lock(&s->l->mu);
	if (s->fd == fd) {
		s->fd = -1;
		s->tx = NULL;
		s->chan++;
		pthread_cond_broadcast(&s->l->acked);
		log_info("client=%016" PRIx64 ": invalidation channel closed; its "
			 "leases run out", s->client);
	}
	pthread_mutex_unlock(&s->l->mu);
	/* a writer on the old fd is done with it before it is closed */
	pthread_mutex_lock(&s->wlock);
	pthread_mutex_unlock(&s->wlock);
}

/* ---- leases ---- */

/* Drop the expired leases of list @b (its stripe held). */
static void sweep_list(struct leases *l, size_t b, int64_t now)
{
	for (struct lease **pp = &l->bucket[b]; *pp;) {
		struct lease *x = *pp;

		if (x->until <= now) {
			*pp = x->next;
			free(x);
			atomic_fetch_sub(&l->nleases, 1);
		} else
			pp = &x->next;
	}
}

/* 1 if @client holds the lease afterwards. */
static int grant(struct leases *l, uint64_t client, uint64_t a, uint64_t h)
{
	struct lease_sub *s;
	uint32_t cache_ms;
	int64_t now, until;
	size_t b = bucket_of(a, h), other;
	struct lease *x;
	int held = 0;

	if (!atomic_load(&l->nsubs))
		return 0;
	pthread_mutex_lock(&l->mu);
	s = sub_find(l, client);
	cache_ms = s ? s->cache_ms : 0;
	pthread_mutex_unlock(&l->mu);
	if (!s || cache_ms == 0)        /* subscribed for lock wake-ups only */
		return 0;
	now = mono_ms();
	until = now + cache_ms + LEASE_MARGIN_MS;
	pthread_mutex_lock(stripe_of(l, b));
	sweep_list(l, b, now);
	for (x = l->bucket[b]; x; x = x->next)
		if (x->a == a && x->h == h && x->client == client)
			break;
	if (x) {
		if (until > x->until)
			x->until = until;
		held = 1;
	} else if ((x = malloc(sizeof(*x)))) {
		*x = (struct lease){ a, h, client, until, l->bucket[b] };
		l->bucket[b] = x;
		atomic_fetch_add(&l->nleases, 1);
		held = 1;
	}
	pthread_mutex_unlock(stripe_of(l, b));
	other = atomic_fetch_add(&l->sweep, 1) % LEASE_BUCKETS;
	pthread_mutex_lock(stripe_of(l, other));
	sweep_list(l, other, now);
	pthread_mutex_unlock(stripe_of(l, other));
	return held;
}

int lease_grant_inode(struct leases *l, uint64_t client, uint64_t ino)
{
	return grant(l, client, ino, H_INODE);
}

void lease_grant_entry(struct leases *l, uint64_t client, uint64_t parent,
		       const char *name, size_t nlen)
{
	if (atomic_load(&l->nsubs))
		grant(l, client, parent, name_h(name, nlen));
}

int lease_grant_listing(struct leases *l, uint64_t client, uint64_t dir)
{
	return grant(l, client, dir, H_LISTING);
}

/* ---- changes ---- */

void lease_collect_begin(void)
{
	notes.on = 1;
	notes.over = 0;
	notes.ni = notes.ne = 0;
}

void lease_note_inode(uint64_t ino)
{
	if (!notes.on)
		return;
	for (unsigned i = 0; i < notes.ni; i++)
		if (notes.ino[i] == ino)
			return;
	if (notes.ni < NOTE_INODES) {
		notes.iflags[notes.ni] = 0;
		notes.ino[notes.ni++] = ino;
	} else {
		notes.over = 1;
	}
}

void lease_note_atime_only(uint64_t ino)
{
	for (unsigned i = 0; notes.on && i < notes.ni; i++)
		if (notes.ino[i] == ino)
			notes.iflags[i] = SDFS_NOTE_F_ATIME;
}

void lease_note_entry(uint64_t parent, const char *name, size_t nlen)
{
	struct note_ent *e;

	if (!notes.on || nlen == 0 || nlen > SDFS_NAME_MAX)
		return;
	for (unsigned i = 0; i < notes.ne; i++)
		if (notes.ent[i].parent == parent && notes.ent[i].nlen == nlen &&
		    !memcmp(notes.ent[i].name, name, nlen))
			return;
	if (notes.ne == NOTE_ENTRIES) {
		notes.over = 1;
		return;
	}
	e = &notes.ent[notes.ne++];
	e->parent = parent;
	e->nlen = (uint16_t)nlen;
	memcpy(e->name, name, nlen);
}

struct tlist {
	struct target *t;
	size_t n, cap;
};

/* Take the leases others hold on key (a, h): each becomes a target
 * carrying @iv. The requester's stay. */
static void take(struct leases *l, uint64_t requester, uint64_t a, uint64_t h,
		 const struct sdfs_note *iv, int64_t now, struct tlist *tl)
{
	size_t b = bucket_of(a, h);

	pthread_mutex_lock(stripe_of(l, b));
	for (struct lease **pp = &l->bucket[b]; *pp;) {
		struct lease *x = *pp;
		int expired = x->until <= now;

		if (!expired && (x->a != a || x->h != h || x->client == requester)) {
			pp = &x->next;
			continue;
		}
		if (!expired && tl->n == tl->cap) {
			size_t cap = tl->cap ? 2 * tl->cap : 16;
			struct target *t = realloc(tl->t, cap * sizeof(*t));

			if (!t) {       /* keep it; its holder waits its timeout */
				pp = &x->next;
				continue;
			}
			tl->t = t;
			tl->cap = cap;
		}
		if (!expired)
			tl->t[tl->n++] = (struct target){ x->client, x->until, *iv };
		*pp = x->next;
		free(x);
		atomic_fetch_sub(&l->nleases, 1);
	}
	pthread_mutex_unlock(stripe_of(l, b));
}

static int by_client(const void *x, const void *y)
{
	const struct target *a = x, *b = y;

	return a->client < b->client ? -1 : a->client > b->client;
}

static int same_item(const struct sdfs_note *a, const struct sdfs_note *b)
{
	return a->kind == b->kind && a->ino == b->ino && a->name_len == b->name_len &&
	       !memcmp(a->name, b->name, a->name_len);
}

/* One NS_NOTIFY with @n items to @client; *@seq its number and *@chan
 * the channel it went on. 0, or -ENOTCONN (no channel: it cannot be
 * told) / -EIO (channel broken). */
static int push(struct leases *l, uint64_t client, const struct target *t, size_t n,
		struct lease_sub **subp, uint64_t *seq, uint64_t *chan)
{
	size_t len = 0, off = 0;
	struct lease_sub *s;
	uint8_t hb[SDFS_HDR_SIZE], *pl, tag[AUTH_TAG_BYTES];
	struct sdfs_hdr h = { .opcode = SDFS_OP_NS_NOTIFY };
	uint64_t root = 0;
	struct auth_sess *tx;
	int fd, ret = 0;

	pthread_mutex_lock(&l->mu);
	s = sub_find(l, client);
	if (s)
		root = s->root;
	pthread_mutex_unlock(&l->mu);
	*subp = s;
	if (!s)
		return -ENOTCONN;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || !same_item(&t[i].iv, &t[i - 1].iv))
			len += SDFS_NOTE_HDR_SIZE + t[i].iv.name_len;
	pl = malloc(len);
	if (!pl)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct sdfs_note iv = t[i].iv;

		if (i && same_item(&iv, &t[i - 1].iv))
			continue;
		if (root && iv.ino == root)
			iv.ino = SDFS_ROOT_INO;
		off += proto_note_encode(&iv, pl + off);
	}
	/* wlock before reading fd: lease_unsubscribe waits for it before
	 * the fd is closed, so ours stays open while we send. */
	pthread_mutex_lock(&s->wlock);
	pthread_mutex_lock(&l->mu);
	fd = s->fd;
	tx = s->tx;
	*seq = ++s->seq;
	*chan = s->chan;
	pthread_mutex_unlock(&l->mu);
	if (fd < 0) {
		ret = -ENOTCONN;
		goto out;
	}
	h.req_id = *seq;
	h.payload_len = (uint32_t)len;
	auth_hdr_encode(tx, &h, pl, hb);
	struct iovec iov[3] = { { hb, sizeof(hb) }, { pl, len }, { tag, 0 } };
	if (tx && tx->on) {
		auth_tag(tx, hb, pl, len, tag);
		iov[2].iov_len = sizeof(tag);
	}
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 3 };
	/* Never block an operation on a client that does not read: a
	 * message that does not fit breaks the channel (it reconnects). */
	ssize_t sent = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (sent != (ssize_t)(sizeof(hb) + len + iov[2].iov_len)) {
		log_warn("client=%016" PRIx64 ": cannot send an invalidation (%s); "
			 "closing its channel", client, sent < 0 ? strerror(errno) : "short");
		shutdown(fd, SHUT_RDWR);
		ret = -EIO;
	}
out:
	pthread_mutex_unlock(&s->wlock);
	free(pl);
	return ret;
}

void lease_collect_end(struct leases *l, uint64_t requester, int committed)
{
	struct tlist tl = { 0 };
	int64_t now;

	if (!notes.on)
		return;
	notes.on = 0;
	if (!committed || (!notes.ni && !notes.ne) || !atomic_load(&l->nsubs))
		return;
	if (notes.over)
		log_warn("an operation changed more than %u inodes or %u names; the "
			 "rest are not pushed (clients see them after their timeout)",
			 NOTE_INODES, NOTE_ENTRIES);
	now = mono_ms();
	for (unsigned i = 0; i < notes.ni; i++) {
		struct sdfs_note iv = { .kind = SDFS_NOTE_INODE, .ino = notes.ino[i],
					 .flags = notes.iflags[i] };

		take(l, requester, notes.ino[i], H_INODE, &iv, now, &tl);
	}
	for (unsigned i = 0; i < notes.ne; i++) {
		const struct note_ent *e = &notes.ent[i];
		struct sdfs_note iv = { .kind = SDFS_NOTE_ENTRY, .ino = e->parent,
					 .name_len = e->nlen, .name = e->name };

		take(l, requester, e->parent, name_h(e->name, e->nlen), &iv, now, &tl);
		take(l, requester, e->parent, H_LISTING, &iv, now, &tl);
	}
	if (!tl.n)
		return;
	qsort(tl.t, tl.n, sizeof(*tl.t), by_client);

	/* One message per client, then wait for all of them. */
	struct wait {
		struct lease_sub *s;
		uint64_t seq, chan;
		int64_t until;
		int sent;
	} *w;
	size_t nw = 0, items = 0;

	w = calloc(tl.n, sizeof(*w));
	for (size_t i = 0; w && i < tl.n;) {
		size_t j = i;
		int64_t until = 0;

		while (j < tl.n && tl.t[j].client == tl.t[i].client) {
			if (tl.t[j].until > until)
				until = tl.t[j].until;
			j++;
		}
		w[nw].until = until;
		w[nw].sent = push(l, tl.t[i].client, tl.t + i, j - i, &w[nw].s, &w[nw].seq,
				  &w[nw].chan) == 0;
		items += j - i;
		nw++;
		i = j;
	}
	atomic_fetch_add(&l->pushes, nw);
	atomic_fetch_add(&l->push_items, items);
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < nw; i++) {
		struct wait *x = &w[i];

		for (;;) {
			/* answered on the channel it went on; if that one
			 * closed, the leases must run out instead */
			if (x->sent && x->s->chan == x->chan && x->s->acked >= x->seq)
				break;
			now = mono_ms();
			if (now >= x->until) {
				if (x->sent)
					atomic_fetch_add(&l->push_timeouts, 1);
				break;
			}
			struct timespec ts = { .tv_sec = x->until / 1000,
					       .tv_nsec = (x->until % 1000) * 1000000 };
			pthread_cond_timedwait(&l->acked, &l->mu, &ts);
		}
	}
	pthread_mutex_unlock(&l->mu);
	free(w);
	free(tl.t);
}

void lease_hint(struct leases *l, uint64_t client, const struct sdfs_note *iv)
{
	struct target t = { .client = client, .iv = *iv };
	struct lease_sub *sub;
	uint64_t seq, chan;

	if (atomic_load(&l->nsubs) && push(l, client, &t, 1, &sub, &seq, &chan) == 0)
		atomic_fetch_add(&l->hints, 1);
}

void lease_stats(struct leases *l, struct lease_stats *st)
{
	st->subs = (uint64_t)atomic_load(&l->nsubs);
	st->leases = atomic_load(&l->nleases);
	st->pushes = atomic_load(&l->pushes);
	st->push_items = atomic_load(&l->push_items);
	st->push_timeouts = atomic_load(&l->push_timeouts);
	st->hints = atomic_load(&l->hints);
}

void lease_sub_root(struct lease_sub *sub, uint64_t root)
{
	pthread_mutex_lock(&sub->l->mu);
	sub->root = root;
	pthread_mutex_unlock(&sub->l->mu);
}
