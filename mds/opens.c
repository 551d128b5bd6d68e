/*
 * opens.c - the clients' open inodes (opens.h).
 *
 * Holds live in a hash table of small lists keyed by inode, so all the
 * holders of one inode are in one list. One mutex; the ZooKeeper listing
 * of a sweep is made without it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/coord_client.h"
#include "common/log.h"
#include "common/net.h"
#include "mds/ns_int.h"
#include "mds/opens.h"

#define OPENS_BUCKETS 4096

struct hold {
	uint64_t ino, client;
	int64_t since_ms;               /* monotonic: when it was (re)made */
	uint64_t wb_handle;             /* SDFS_NS_OPEN_WRITEBACK: the marking
					   handle's client_id; 0: not marked */
	struct hold *next;
};

struct opens {
	pthread_mutex_t mu;
	struct coord *coord;
	struct hold *b[OPENS_BUCKETS];
	uint64_t n;
	/* takeover: clients listed in ZooKeeper that have not claimed yet
	 * (sorted); the wait ends when none is left or at claim_until */
	int claiming;
	int listed;                     /* pending[] was read from ZooKeeper */
	uint64_t *pending;
	size_t npending;
	int64_t claim_until;
};

static size_t bucket_of(uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 52) & (OPENS_BUCKETS - 1);
}

int opens_open(struct ns *ns, struct coord *coord)
{
	struct opens *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->mu, NULL);
	o->coord = coord;
	if (coord) {
		o->claiming = 1;
		o->claim_until = net_now_ms() + OPENS_CLAIM_MAX_MS;
		if (coord_client_list(coord, &o->pending, &o->npending) == 0)
			o->listed = 1;
		if (o->listed && o->npending == 0)
			o->claiming = 0;        /* no client to wait for */
		log_info("strays: waiting for %zu clients to claim their open files "
			 "(at most %d s)", o->npending, OPENS_CLAIM_MAX_MS / 1000);
	}
	ns->opens = o;
	return 0;
}

void opens_close(struct ns *ns)
{
	struct opens *o = ns->opens;

	if (!o)
		return;
	for (size_t i = 0; i < OPENS_BUCKETS; i++)
		while (o->b[i]) {
			struct hold *h = o->b[i];

			o->b[i] = h->next;
			free(h);
		}
	free(o->pending);
	pthread_mutex_destroy(&o->mu);
	free(o);
	ns->opens = NULL;
}

/* mu held. @wb: the marking handle (0: a plain hold, which leaves a
 * mark made before). 0 or -ENOMEM. */
static int hold_add(struct opens *o, uint64_t ino, uint64_t client, int64_t now,
		    uint64_t wb)
{
	size_t b = bucket_of(ino);
	struct hold *h;

	for (h = o->b[b]; h; h = h->next)
		if (h->ino == ino && h->client == client) {
			h->since_ms = now;
			if (wb)
				h->wb_handle = wb;
			return 0;
		}
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = (struct hold){ ino, client, now, wb, o->b[b] };
	o->b[b] = h;
	o->n++;
	return 0;
}

/* mu held. 1 if @ino has no holder left (and had this one). */
static int hold_del(struct opens *o, uint64_t ino, uint64_t client)
{
	size_t b = bucket_of(ino);
	int found = 0, others = 0;

	for (struct hold **pp = &o->b[b]; *pp;) {
		struct hold *h = *pp;

		if (h->ino == ino && h->client == client) {
			*pp = h->next;
			free(h);
			o->n--;
			found = 1;
			continue;
		}
		others |= h->ino == ino;
		pp = &h->next;
	}
	return found && !others;
}

static void pending_drop(struct opens *o, uint64_t client)
{
	for (size_t i = 0; i < o->npending; i++)
		if (o->pending[i] == client) {
			memmove(o->pending + i, o->pending + i + 1,
				(o->npending - i - 1) * sizeof(*o->pending));
			o->npending--;
			return;
		}
}

static void wake_purge(struct ns *ns)
{
	pthread_mutex_lock(&ns->purge_lock);
	pthread_cond_broadcast(&ns->purge_cond);
	pthread_mutex_unlock(&ns->purge_lock);
}

int opens_exec(struct ns *ns, const struct sdfs_ns_req *r, const uint8_t *data)
{
	struct opens *o = ns->opens;
	int close = (r->flags & SDFS_NS_OPEN_CLOSE) != 0;
	uint64_t wb = r->flags & SDFS_NS_OPEN_WRITEBACK ? r->client_id : 0;
	int64_t now = net_now_ms();
	size_t n = r->data_len / 8;
	int freed = 0, ret = 0;

	if (r->arg == 0 || r->name_len || r->name2_len || r->data_len % 8 ||
	    n > SDFS_NS_OPEN_MAX ||
	    (r->flags & ~(SDFS_NS_OPEN_CLOSE | SDFS_NS_OPEN_CLAIM |
			  SDFS_NS_OPEN_WRITEBACK)) ||
	    (close && (r->flags & SDFS_NS_OPEN_WRITEBACK)) ||
	    (wb == 0 && (r->flags & SDFS_NS_OPEN_WRITEBACK)))
		return -EINVAL;
	pthread_mutex_lock(&o->mu);
	for (size_t i = 0; i <= n && !ret; i++) {
		uint64_t ino = i == 0 ? r->ino : le64_get(data + 8 * (i - 1));

		if (ino == 0)
			continue;
		if (close)
			freed |= hold_del(o, ino, r->arg);
		else
			ret = hold_add(o, ino, r->arg, now, wb);
	}
	if (!ret && (r->flags & SDFS_NS_OPEN_CLAIM) && o->claiming) {
		pending_drop(o, r->arg);
		if (o->listed && o->npending == 0) {
			o->claiming = 0;
			log_info("strays: every client claimed its open files");
		}
	}
	pthread_mutex_unlock(&o->mu);
	if (freed)
		wake_purge(ns);
	return ret;
}

int opens_held(struct ns *ns, uint64_t ino)
{
	struct opens *o = ns->opens;
	int held;

	pthread_mutex_lock(&o->mu);
	held = o->claiming;
	for (struct hold *h = o->b[bucket_of(ino)]; h && !held; h = h->next)
		held = h->ino == ino;
	pthread_mutex_unlock(&o->mu);
	return held;
}

int opens_has_holder(struct ns *ns, uint64_t ino)
{
	struct opens *o = ns->opens;
	int held = 0;

	pthread_mutex_lock(&o->mu);
	for (struct hold *h = o->b[bucket_of(ino)]; h && !held; h = h->next)
		held = h->ino == ino;
	pthread_mutex_unlock(&o->mu);
	return held;
}

int opens_writeback_other(struct ns *ns, uint64_t ino, uint64_t handle)
{
	struct opens *o = ns->opens;
	int wb;

	if (!o)
		return 0;       /* a namespace without the table: no holds */
	pthread_mutex_lock(&o->mu);
	wb = o->claiming;       /* a mark may not be claimed again yet */
	for (struct hold *h = o->b[bucket_of(ino)]; h && !wb; h = h->next)
		wb = h->ino == ino && h->wb_handle && h->wb_handle != handle;
	pthread_mutex_unlock(&o->mu);
	return wb;
}

uint64_t opens_count(struct ns *ns)
{
	uint64_t n;

	pthread_mutex_lock(&ns->opens->mu);
	n = ns->opens->n;
	pthread_mutex_unlock(&ns->opens->mu);
	return n;
}

void opens_sweep(struct ns *ns)
{
	struct opens *o = ns->opens;
	int64_t listed = net_now_ms();
	uint64_t *ids = NULL, last = 0;
	size_t n = 0;
	int want;

	if (!o->coord)
		return;
	pthread_mutex_lock(&o->mu);
	want = o->n > 0 || o->claiming;
	pthread_mutex_unlock(&o->mu);
	if (!want || coord_client_list(o->coord, &ids, &n))
		ids = NULL;     /* ZooKeeper unreachable: drop nothing */
	pthread_mutex_lock(&o->mu);
	if (ids) {
		for (size_t b = 0; b < OPENS_BUCKETS; b++)
			for (struct hold **pp = &o->b[b]; *pp;) {
				struct hold *h = *pp;

				if (h->since_ms < listed && !coord_client_listed(ids, n, h->client)) {
					if (h->client != last)
						log_info("client=%016" PRIx64 ": gone from "
							 "ZooKeeper, its open files are let go",
							 h->client);
					last = h->client;
					*pp = h->next;
					free(h);
					o->n--;
				} else {
					pp = &h->next;
				}
			}
		if (o->claiming && !o->listed) {
			/* the takeover's listing failed: these must claim */
			o->pending = ids;
			o->npending = n;
			o->listed = 1;
			ids = NULL;
		} else if (o->claiming) {
			for (size_t i = 0; i < o->npending;)
				if (!coord_client_listed(ids, n, o->pending[i]))
					pending_drop(o, o->pending[i]);
				else
					i++;
		}
	}
	if (o->claiming && ((o->listed && o->npending == 0) || listed >= o->claim_until)) {
		if (o->npending)
			log_warn("strays: %zu clients did not claim their open files in "
				 "%d s; freeing strays no one claimed", o->npending,
				 OPENS_CLAIM_MAX_MS / 1000);
		else
			log_info("strays: every client claimed its open files");
		o->claiming = 0;
	}
	pthread_mutex_unlock(&o->mu);
	free(ids);
}
