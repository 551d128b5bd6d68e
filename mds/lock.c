/*
 * lock.c - the lock table (lock.h, docs/locks.md).
 *
 * Key 'K' ino client owner kind start (big-endian), value le64 end,
 * le32 pid, u8 type. In memory: a hash of per-inode chains of every
 * lock, plus the waiters of blocking POSIX requests (never stored), and
 * which clients wait on which inode: when locks there are dropped or
 * changed, those clients get a wake-up on their invalidation channel
 * (SDFS_NOTE_LOCK, mds/lease.h) and retry at once instead of at their
 * next poll.
 */
#include "mds/lock.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/coord_client.h"
#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"
#include "mds/lease.h"
#include "mds/ns_int.h"

#define LOCK_BUCKETS 4096
#define LOCK_KEY_SIZE 34
#define LOCK_VAL_SIZE 13
#define LOCK_BLOCKERS 8

struct lk {
	uint64_t ino, client, owner, start, end;
	uint32_t pid;
	uint8_t type, kind;
	int64_t since_ms;               /* monotonic: granted or loaded */
	struct lk *next;
};

/* A POSIX owner that was refused and said it waits (SDFS_LOCK_WAIT). */
struct waiter {
	uint64_t client, owner;
	int64_t until_ms;
	uint64_t by[LOCK_BLOCKERS][2];  /* (client, owner) holding it up */
	int nby;
};

/* A client with a blocking request refused on an inode (any kind):
 * its namespace client id (the request's, which its invalidation
 * channel is subscribed with), not its lock identity. */
struct interest {
	uint64_t ino, client;
	int64_t until_ms;
};

/* Wake-ups to send once the table's lock is released. */
struct wakes {
	struct interest *w;
	size_t n, cap;
};

struct locktab {
	pthread_mutex_t mu;
	struct lk *b[LOCK_BUCKETS];
	size_t count;
	struct waiter *w;
	size_t nw, capw;
	struct interest *in;            /* who waits where, for wake-ups */
	size_t nin, capin;
	struct coord *coord;
	pthread_t thr;
	pthread_mutex_t stop_mu;
	pthread_cond_t stop_cond;
	int stop, started;
};

static size_t bucket(uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 52) & (LOCK_BUCKETS - 1);
}

static size_t lock_key(uint8_t *k, const struct lk *l)
{
	k[0] = 'K';
	be64_put(k + 1, l->ino);
	be64_put(k + 9, l->client);
	be64_put(k + 17, l->owner);
	k[25] = l->kind;
	be64_put(k + 26, l->start);
	return LOCK_KEY_SIZE;
}

static void batch_put_lock(struct kvbatch *b, const struct lk *l)
{
	uint8_t k[LOCK_KEY_SIZE], v[LOCK_VAL_SIZE];

	le64_put(v, l->end);
	le32_put(v + 8, l->pid);
	v[12] = l->type;
	kvbatch_put(b, k, lock_key(k, l), v, sizeof(v));
}

static void batch_del_lock(struct kvbatch *b, const struct lk *l)
{
	uint8_t k[LOCK_KEY_SIZE];

	kvbatch_del(b, k, lock_key(k, l));
}

static int overlaps(uint64_t s1, uint64_t e1, uint64_t s2, uint64_t e2)
{
	return s1 <= e2 && s2 <= e1;
}

static int same_owner(const struct lk *l, uint64_t client, uint64_t owner)
{
	return l->client == client && l->owner == owner;
}

/* The first lock of another owner that @q conflicts with, or NULL. */
static struct lk *find_conflict(struct locktab *t, uint64_t ino, const struct sdfs_ns_lock *q)
{
	for (struct lk *l = t->b[bucket(ino)]; l; l = l->next) {
		if (l->ino != ino || l->kind != q->kind || same_owner(l, q->client, q->owner))
			continue;
		if (q->type != SDFS_LOCK_WR && l->type != SDFS_LOCK_WR)
			continue;
		if (q->kind == SDFS_LOCK_FLOCK || overlaps(l->start, l->end, q->start, q->end))
			return l;
	}
	return NULL;
}

static struct waiter *waiter_find(struct locktab *t, uint64_t client, uint64_t owner)
{
	for (size_t i = 0; i < t->nw; i++)
		if (t->w[i].client == client && t->w[i].owner == owner)
			return &t->w[i];
	return NULL;
}

static void waiter_drop(struct locktab *t, struct waiter *w)
{
	*w = t->w[--t->nw];
}

static void waiters_expire(struct locktab *t, int64_t now)
{
	for (size_t i = 0; i < t->nw;)
		if (t->w[i].until_ms < now)
			waiter_drop(t, &t->w[i]);
		else
			i++;
}

/* Would (client, owner) waiting for @by[] close a cycle? A walk over
 * the waiters' edges; each waiter is expanded at most once. */
static int would_deadlock(struct locktab *t, uint64_t client, uint64_t owner,
			  uint64_t (*by)[2], int nby)
{
	size_t cap = t->nw * LOCK_BLOCKERS + LOCK_BLOCKERS, n = 0;
	uint64_t (*stack)[2] = malloc(cap * sizeof(*stack));
	char *seen = calloc(t->nw + 1, 1);
	int found = 0;

	if (!stack || !seen) {
		free(stack);
		free(seen);
		return 0;       /* no memory: no detection, the wait goes on */
	}
	for (int i = 0; i < nby; i++) {
		stack[n][0] = by[i][0];
		stack[n++][1] = by[i][1];
	}
	while (n && !found) {
		uint64_t c = stack[n - 1][0], o = stack[n - 1][1];

		n--;
		if (c == client && o == owner) {
			found = 1;
			break;
		}
		struct waiter *w = waiter_find(t, c, o);
		if (!w || seen[w - t->w])
			continue;
		seen[w - t->w] = 1;
		for (int i = 0; i < w->nby && n < cap; i++) {
			stack[n][0] = w->by[i][0];
			stack[n++][1] = w->by[i][1];
		}
	}
	free(stack);
	free(seen);
	return found;
}

/* A refused blocking POSIX request: EDEADLK or record it as waiting. */
static int refuse_waiter(struct locktab *t, uint64_t ino, const struct sdfs_ns_lock *q)
{
	uint64_t by[LOCK_BLOCKERS][2];
	int nby = 0;
	int64_t now = net_now_ms();

	for (struct lk *l = t->b[bucket(ino)]; l && nby < LOCK_BLOCKERS; l = l->next) {
		if (l->ino != ino || l->kind != SDFS_LOCK_POSIX ||
		    same_owner(l, q->client, q->owner) ||
		    (q->type != SDFS_LOCK_WR && l->type != SDFS_LOCK_WR) ||
		    !overlaps(l->start, l->end, q->start, q->end))
			continue;
		int dup = 0;
		for (int i = 0; i < nby; i++)
			dup |= by[i][0] == l->client && by[i][1] == l->owner;
		if (!dup) {
			by[nby][0] = l->client;
			by[nby++][1] = l->owner;
		}
	}
	waiters_expire(t, now);
	struct waiter *w = waiter_find(t, q->client, q->owner);
	if (w)
		waiter_drop(t, w);
	if (would_deadlock(t, q->client, q->owner, by, nby))
		return -EDEADLK;
	if (t->nw == t->capw) {
		size_t cap = t->capw ? t->capw * 2 : 16;
		struct waiter *nw = realloc(t->w, cap * sizeof(*nw));

		if (!nw)
			return -EAGAIN;
		t->w = nw;
		t->capw = cap;
	}
	w = &t->w[t->nw++];
	w->client = q->client;
	w->owner = q->owner;
	w->until_ms = now + LOCK_WAITER_TTL_MS;
	memcpy(w->by, by, sizeof(by));
	w->nby = nby;
	return -EAGAIN;
}

/* @client waits for a lock on @ino (renewed by each retry). mu held. */
static void interest_note(struct locktab *t, uint64_t ino, uint64_t client)
{
	int64_t until = net_now_ms() + LOCK_WAITER_TTL_MS;

	for (size_t i = 0; i < t->nin; i++)
		if (t->in[i].ino == ino && t->in[i].client == client) {
			t->in[i].until_ms = until;
			return;
		}
	if (t->nin == t->capin) {
		size_t cap = t->capin ? 2 * t->capin : 16;
		struct interest *in = realloc(t->in, cap * sizeof(*in));

		if (!in)
			return;         /* it polls anyway */
		t->in = in;
		t->capin = cap;
	}
	t->in[t->nin++] = (struct interest){ ino, client, until };
}

/* Move the clients waiting on @ino into @wk (expired ones just go). mu
 * held. */
static void interest_take(struct locktab *t, uint64_t ino, struct wakes *wk)
{
	int64_t now = net_now_ms();

	for (size_t i = 0; i < t->nin;) {
		struct interest *x = &t->in[i];

		if (x->until_ms > now && x->ino != ino) {
			i++;
			continue;
		}
		if (x->until_ms > now) {
			if (wk->n == wk->cap) {
				size_t cap = wk->cap ? 2 * wk->cap : 8;
				struct interest *w = realloc(wk->w, cap * sizeof(*w));

				if (!w) {
					i++;    /* it polls anyway */
					continue;
				}
				wk->w = w;
				wk->cap = cap;
			}
			wk->w[wk->n++] = *x;
		}
		*x = t->in[--t->nin];
	}
}

/* Send the wake-ups (mu not held: a send may take a moment). */
static void wakes_send(struct ns *ns, struct wakes *wk)
{
	for (size_t i = 0; i < wk->n; i++) {
		struct sdfs_note iv = { .kind = SDFS_NOTE_LOCK, .ino = wk->w[i].ino };

		lease_hint(ns->leases, wk->w[i].client, &iv);
	}
	free(wk->w);
}

static int cmp_start(const void *a, const void *b)
{
	const struct lk *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The owner's POSIX locks @own[@n] after setting [start, end] to
 * @type (UN: unlocking): every overlapped piece is cut out, the new
 * range added, and touching ranges of one type merged. @out has room
 * for n + 2. Returns the count.
 */
static size_t posix_apply(const struct lk *own, size_t n, const struct sdfs_ns_lock *q,
			  const struct lk *tmpl, struct lk *out)
{
	size_t m = 0, k = 0;

	for (size_t i = 0; i < n; i++) {
		const struct lk *o = &own[i];

		if (!overlaps(o->start, o->end, q->start, q->end)) {
			out[m++] = *o;
			continue;
		}
		if (o->start < q->start) {
			out[m] = *o;
			out[m++].end = q->start - 1;
		}
		if (o->end > q->end) {
			out[m] = *o;
			out[m++].start = q->end + 1;
		}
	}
	if (q->type != SDFS_LOCK_UN) {
		out[m] = *tmpl;
		out[m].start = q->start;
		out[m].end = q->end;
		out[m++].type = q->type;
	}
	qsort(out, m, sizeof(*out), cmp_start);
	for (size_t i = 0; i < m; i++) {
		if (k && out[k - 1].type == out[i].type && out[k - 1].end != SDFS_LOCK_EOF &&
		    out[k - 1].end + 1 >= out[i].start) {
			if (out[i].end > out[k - 1].end)
				out[k - 1].end = out[i].end;
			continue;
		}
		out[k++] = out[i];
	}
	return k;
}

/* Unlink and free every lock of (client, owner, kind) on @ino. */
static void mem_drop_owner(struct locktab *t, uint64_t ino, uint64_t client,
			   uint64_t owner, uint8_t kind)
{
	for (struct lk **pp = &t->b[bucket(ino)]; *pp;) {
		struct lk *l = *pp;

		if (l->ino == ino && l->kind == kind && same_owner(l, client, owner)) {
			*pp = l->next;
			free(l);
			t->count--;
		} else {
			pp = &l->next;
		}
	}
}

static int mem_add(struct locktab *t, const struct lk *l)
{
	struct lk *c = malloc(sizeof(*c));
	size_t i = bucket(l->ino);

	if (!c)
		return -ENOMEM;
	*c = *l;
	c->next = t->b[i];
	t->b[i] = c;
	t->count++;
	return 0;
}

/*
 * Replace the owner's locks of @q's kind on @ino by @want[@nwant]
 * (durably first, then in memory). Nothing changes: no write at all.
 */
static int owner_replace(struct ns *ns, const struct sdfs_ns_req *r, uint64_t ino,
			 const struct sdfs_ns_lock *q, const struct lk *have, size_t nhave,
			 const struct lk *want, size_t nwant, struct kvbatch *b)
{
	struct locktab *t = ns->lt;
	struct ns_reply none = { 0 };
	int ret;

	if (nhave == nwant) {
		int same = 1;

		for (size_t i = 0; i < nhave && same; i++)
			same = have[i].start == want[i].start && have[i].end == want[i].end &&
			       have[i].type == want[i].type;
		if (same)
			return 0;
	}
	for (size_t i = 0; i < nhave; i++)
		batch_del_lock(b, &have[i]);
	for (size_t i = 0; i < nwant; i++)
		batch_put_lock(b, &want[i]);
	ret = ns_commit_op(ns, r, b, &none);
	if (ret)
		return ret;
	mem_drop_owner(t, ino, q->client, q->owner, q->kind);
	for (size_t i = 0; i < nwant; i++)
		if (mem_add(t, &want[i]))
			log_err("ino=%" PRIu64 ": lock table out of memory", ino);
	return 0;
}

/* The owner's locks of @q's kind on @ino, sorted by start: *@out
 * (malloc'd with room for 2 more; free it). */
static int owner_locks(struct locktab *t, uint64_t ino, const struct sdfs_ns_lock *q,
		       struct lk **out, size_t *n)
{
	size_t m = 0, cap = 8;
	struct lk *a = malloc(cap * sizeof(*a));

	if (!a)
		return -ENOMEM;
	for (struct lk *l = t->b[bucket(ino)]; l; l = l->next) {
		if (l->ino != ino || l->kind != q->kind || !same_owner(l, q->client, q->owner))
			continue;
		if (m + 2 >= cap) {
			struct lk *na = realloc(a, cap * 2 * sizeof(*a));

			if (!na) {
				free(a);
				return -ENOMEM;
			}
			a = na;
			cap *= 2;
		}
		a[m++] = *l;
	}
	qsort(a, m, sizeof(*a), cmp_start);
	*out = a;
	*n = m;
	return 0;
}

/* A blocking wait ended without its lock: forget the waiter, so that
 * it closes no cycle for others' waits (idempotent: nothing durable). */
static int waiter_cancel(struct locktab *t, const struct sdfs_ns_lock *q)
{
	pthread_mutex_lock(&t->mu);
	struct waiter *w = waiter_find(t, q->client, q->owner);
	if (w)
		waiter_drop(t, w);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

static int op_set(struct ns *ns, unsigned op, const struct sdfs_ns_req *r,
		  const struct sdfs_ns_lock *q, struct kvbatch *b)
{
	struct locktab *t = ns->lt;
	struct lk tmpl = { .ino = r->ino, .client = q->client, .owner = q->owner,
			   .pid = q->pid, .kind = q->kind, .since_ms = net_now_ms() };
	struct lk *have = NULL, *want = NULL;
	size_t nhave = 0, nwant = 0;
	struct sdfs_ns_lock eff = *q;
	struct wakes wk = { 0 };
	int ret;

	if (op == SDFS_OP_NS_LOCK_RELEASE || (op == SDFS_OP_NS_LOCK_UNLOCK &&
					      q->kind == SDFS_LOCK_FLOCK)) {
		eff.type = SDFS_LOCK_UN;
		eff.start = 0;
		eff.end = SDFS_LOCK_EOF;
	} else if (op == SDFS_OP_NS_LOCK_UNLOCK) {
		eff.type = SDFS_LOCK_UN;
	} else if (q->type == SDFS_LOCK_UN && (q->flags & SDFS_LOCK_CANCEL)) {
		return waiter_cancel(t, q);
	} else if (q->type == SDFS_LOCK_UN) {
		return -EINVAL;
	}
	if (q->kind == SDFS_LOCK_FLOCK && eff.type != SDFS_LOCK_UN) {
		eff.start = 0;
		eff.end = SDFS_LOCK_EOF;
	}
	/* Locks only on inodes that exist; unlocking one that went (purged
	 * while locked) still drops what the owner has there. */
	struct inode in;
	int gone = inode_get(ns, r->ino, &in);
	if (gone && gone != -ENOENT)
		return gone;
	if (gone && eff.type != SDFS_LOCK_UN)
		return -ENOENT;
	pthread_mutex_lock(&t->mu);
	if (eff.type != SDFS_LOCK_UN && find_conflict(t, r->ino, &eff)) {
		ret = -EAGAIN;
		if ((q->flags & SDFS_LOCK_WAIT) && q->kind == SDFS_LOCK_POSIX)
			ret = refuse_waiter(t, r->ino, &eff);
		if (ret == -EAGAIN && (q->flags & SDFS_LOCK_WAIT))
			interest_note(t, r->ino, r->client_id);
		goto out;
	}
	struct waiter *w = waiter_find(t, q->client, q->owner);
	if (w)
		waiter_drop(t, w);
	ret = owner_locks(t, r->ino, &eff, &have, &nhave);
	if (ret)
		goto out;
	if (gone && !nhave) {
		ret = -ENOENT;
		goto out;
	}
	want = malloc((nhave + 2) * sizeof(*want));
	if (!want) {
		ret = -ENOMEM;
		goto out;
	}
	if (q->kind == SDFS_LOCK_POSIX) {
		nwant = posix_apply(have, nhave, &eff, &tmpl, want);
	} else if (eff.type != SDFS_LOCK_UN) {
		want[0] = tmpl;
		want[0].start = 0;
		want[0].end = SDFS_LOCK_EOF;
		want[0].type = eff.type;
		nwant = 1;
	}
	ret = owner_replace(ns, r, r->ino, &eff, have, nhave, want, nwant, b);
	/* What the owner had there changed: whoever waits there may now
	 * get it. */
	if (ret == 0 && nhave)
		interest_take(t, r->ino, &wk);
out:
	pthread_mutex_unlock(&t->mu);
	wakes_send(ns, &wk);
	free(have);
	free(want);
	return ret;
}

static int op_get(struct ns *ns, const struct sdfs_ns_req *r, const struct sdfs_ns_lock *q,
		  struct ns_reply *rep)
{
	struct locktab *t = ns->lt;
	struct sdfs_ns_lock a = *q;

	struct inode in;
	int ret;

	if (q->type == SDFS_LOCK_UN)
		return -EINVAL;
	ret = inode_get(ns, r->ino, &in);
	if (ret)
		return ret;
	rep->data = malloc(SDFS_NS_LOCK_SIZE);
	if (!rep->data)
		return -ENOMEM;
	pthread_mutex_lock(&t->mu);
	struct lk *l = find_conflict(t, r->ino, q);
	if (l) {
		a.client = l->client;
		a.owner = l->owner;
		a.start = l->start;
		a.end = l->end;
		a.type = l->type;
		a.kind = l->kind;
		/* A pid means something only on the holder's machine. */
		a.pid = l->client == q->client ? l->pid : 0;
	} else {
		a.type = SDFS_LOCK_UN;
	}
	pthread_mutex_unlock(&t->mu);
	a.flags = 0;
	proto_ns_lock_encode(&a, rep->data);
	rep->len = SDFS_NS_LOCK_SIZE;
	return 0;
}

int lock_exec(struct ns *ns, unsigned op, const struct sdfs_ns_req *r,
	      const uint8_t *data, struct kvbatch *b, struct ns_reply *rep)
{
	struct sdfs_ns_lock q;

	if (r->name_len || r->name2_len || r->ino == 0 ||
	    proto_ns_lock_decode(data, r->data_len, &q) || q.client == 0)
		return -EINVAL;
	if (op == SDFS_OP_NS_LOCK_GET)
		return op_get(ns, r, &q, rep);
	return op_set(ns, op, r, &q, b);
}

/* ---- dead clients ---- */

/* Drop every lock of @client (durably); the clients waiting where it
 * held them go into @wk. mu held. */
static int drop_client(struct ns *ns, uint64_t client, struct wakes *wk)
{
	struct locktab *t = ns->lt;
	struct kvbatch *b = kvbatch_new();
	size_t n = 0;
	int ret;

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < LOCK_BUCKETS; i++)
		for (struct lk *l = t->b[i]; l; l = l->next)
			if (l->client == client) {
				batch_del_lock(b, l);
				n++;
			}
	ret = ns_commit(ns, b);
	kvbatch_free(b);
	if (ret)
		return ret;
	for (size_t i = 0; i < LOCK_BUCKETS; i++)
		for (struct lk **pp = &t->b[i]; *pp;) {
			struct lk *l = *pp;

			if (l->client == client) {
				*pp = l->next;
				interest_take(t, l->ino, wk);
				free(l);
				t->count--;
			} else {
				pp = &l->next;
			}
		}
	for (size_t i = 0; i < t->nw;)
		if (t->w[i].client == client)
			waiter_drop(t, &t->w[i]);
		else
			i++;
	log_info("client=%016" PRIx64 ": gone from ZooKeeper, dropped its %zu locks",
		 client, n);
	return 0;
}

/* One pass: locks granted before the listing whose client has no node. */
static void sweep(struct ns *ns)
{
	struct locktab *t = ns->lt;
	int64_t listed = net_now_ms();
	uint64_t *ids = NULL;
	struct wakes wk = { 0 };
	size_t n = 0;

	if (coord_client_list(t->coord, &ids, &n))
		return;         /* ZooKeeper unreachable: decide nothing */
	pthread_mutex_lock(&t->mu);
	waiters_expire(t, listed);
	for (int again = 1; again && !ns_failed(ns);) {
		again = 0;
		for (size_t i = 0; i < LOCK_BUCKETS && !again; i++)
			for (struct lk *l = t->b[i]; l; l = l->next)
				if (l->since_ms < listed && !coord_client_listed(ids, n, l->client)) {
					again = drop_client(ns, l->client, &wk) == 0;
					break;
				}
	}
	pthread_mutex_unlock(&t->mu);
	wakes_send(ns, &wk);
	free(ids);
}

static void *sweeper_main(void *arg)
{
	struct ns *ns = arg;
	struct locktab *t = ns->lt;

	pthread_mutex_lock(&t->stop_mu);
	while (!t->stop) {
		pthread_mutex_unlock(&t->stop_mu);
		pthread_mutex_lock(&t->mu);
		size_t held = t->count;
		pthread_mutex_unlock(&t->mu);
		if (held)
			sweep(ns);
		pthread_mutex_lock(&t->stop_mu);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += LOCK_SWEEP_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!t->stop)
			pthread_cond_timedwait(&t->stop_cond, &t->stop_mu, &ts);
	}
	pthread_mutex_unlock(&t->stop_mu);
	return NULL;
}

static int load(struct ns *ns)
{
	struct locktab *t = ns->lt;
	struct kviter *it = kvdb_iter(ns->db);
	int64_t now = net_now_ms();

	if (!it)
		return -ENOMEM;
	for (kviter_seek(it, "K", 1); kviter_valid(it); kviter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)kviter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)kviter_value(it, &vlen);
		struct lk l = { 0 };

		if (klen < 1 || k[0] != 'K')
			break;
		if (klen != LOCK_KEY_SIZE || vlen != LOCK_VAL_SIZE) {
			log_err("lock record of %zu/%zu bytes: malformed, ignored", klen, vlen);
			continue;
		}
		l.ino = be64_get(k + 1);
		l.client = be64_get(k + 9);
		l.owner = be64_get(k + 17);
		l.kind = k[25];
		l.start = be64_get(k + 26);
		l.end = le64_get(v);
		l.pid = le32_get(v + 8);
		l.type = v[12];
		l.since_ms = now;
		if (mem_add(t, &l)) {
			kviter_free(it);
			return -ENOMEM;
		}
	}
	kviter_free(it);
	if (t->count)
		log_info("loaded %zu locks from the database", t->count);
	return 0;
}

int lock_open(struct ns *ns, struct coord *coord)
{
	struct locktab *t = calloc(1, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	pthread_mutex_init(&t->stop_mu, NULL);
	pthread_cond_init(&t->stop_cond, NULL);
	t->coord = coord;
	ns->lt = t;
	ret = load(ns);
	if (ret)
		return ret;
	if (coord) {
		ret = -pthread_create(&t->thr, NULL, sweeper_main, ns);
		t->started = ret == 0;
	}
	return ret;
}

void lock_close(struct ns *ns)
{
	struct locktab *t = ns->lt;

	if (!t)
		return;
	if (t->started) {
		pthread_mutex_lock(&t->stop_mu);
		t->stop = 1;
		pthread_cond_signal(&t->stop_cond);
		pthread_mutex_unlock(&t->stop_mu);
		pthread_join(t->thr, NULL);
	}
	for (size_t i = 0; i < LOCK_BUCKETS; i++)
		while (t->b[i]) {
			struct lk *l = t->b[i];

			t->b[i] = l->next;
			free(l);
		}
	free(t->w);
	free(t->in);
	free(t);
	ns->lt = NULL;
}
