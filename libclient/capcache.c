/*
 * capcache.c - the handle's object capabilities (common/objcap.h,
 * docs/security.md "Object capabilities"): asked from the mds
 * (NS_OBJCAP) per file or volume state, kept until a fifth of their
 * lifetime is left, then asked again at the next use.
 *
 * A handle asks for none until a block daemon refused it one
 * (SDFS_RES_CAP): an open cluster's and a privileged key's handles
 * (admin, the mds's own) never do, and pay nothing. From that refusal
 * on, every file or volume object the handle touches first gets its
 * cap (one mds round trip per file, or per volume and its ancestors,
 * per lifetime). Caps are asked for the most rights the namespace
 * allows (SDFS_OBJCAP_BEST), so that reading and then writing a file
 * asks once; a volume's ancestors come with the volume's own.
 * Thread-safe: one mutex over a small hash table.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/net.h"
#include "common/objcap.h"
#include "libclient/client.h"

#define CAP_BUCKETS 1024u
#define CAP_MAX_ENTS 16384u     /* past that, expired ones go first */

struct capent {
	struct capent *next;
	unsigned kind;
	uint64_t owner;
	unsigned rights;
	uint64_t via;           /* the vid asked for (volumes: an ancestor's
				   cap came with it) */
	int64_t renew_ms;       /* net_now_ms(): ask again from then on */
	int64_t end_ms;         /* ... and never send it past this */
	uint8_t cap[OBJCAP_WIRE_SIZE];
};

struct capcache {
	pthread_mutex_t mu;
	size_t n;
	struct capent *b[CAP_BUCKETS];
};

static struct capcache *cache_of(struct sdfs *s)
{
	struct capcache *c = atomic_load(&s->caps), *nc;

	if (c)
		return c;
	nc = calloc(1, sizeof(*nc));
	if (!nc)
		return NULL;
	pthread_mutex_init(&nc->mu, NULL);
	if (!atomic_compare_exchange_strong(&s->caps, &c, nc)) {
		pthread_mutex_destroy(&nc->mu);
		free(nc);
		return c;
	}
	return nc;
}

void capcache_free(struct capcache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < CAP_BUCKETS; i++)
		for (struct capent *e = c->b[i], *nx; e; e = nx) {
			nx = e->next;
			free(e);
		}
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static unsigned bucket(unsigned kind, uint64_t owner)
{
	return (unsigned)(((owner * 2 + kind) * 0x9e3779b97f4a7c15ull) >> 54) % CAP_BUCKETS;
}

/* Under mu. */
static struct capent *find(struct capcache *c, unsigned kind, uint64_t owner)
{
	for (struct capent *e = c->b[bucket(kind, owner)]; e; e = e->next)
		if (e->kind == kind && e->owner == owner)
			return e;
	return NULL;
}

/* Under mu: drop what can no longer be sent (when the table is full). */
static void prune(struct capcache *c, int64_t now)
{
	for (unsigned i = 0; i < CAP_BUCKETS; i++)
		for (struct capent **pp = &c->b[i]; *pp;) {
			struct capent *e = *pp;

			if (c->n >= CAP_MAX_ENTS / 2 && (e->end_ms <= now ||
							 c->n >= CAP_MAX_ENTS)) {
				*pp = e->next;
				free(e);
				c->n--;
			} else
				pp = &e->next;
		}
}

static void put(struct capcache *c, const uint8_t *w, uint64_t via, int64_t now,
		int lifetime_ms)
{
	struct objcap oc;
	struct capent *e;

	objcap_decode(w, &oc);
	pthread_mutex_lock(&c->mu);
	e = find(c, oc.kind, oc.owner);
	if (!e) {
		if (c->n >= CAP_MAX_ENTS)
			prune(c, now);
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&c->mu);
			return;
		}
		e->kind = oc.kind;
		e->owner = oc.owner;
		e->next = c->b[bucket(oc.kind, oc.owner)];
		c->b[bucket(oc.kind, oc.owner)] = e;
		c->n++;
	}
	e->rights = oc.rights;
	e->via = via;
	/* Our clock, not the mds's: ask again with a fifth of it left, and
	 * stop sending it a twentieth before it ends (clock skew, transit). */
	e->renew_ms = now + lifetime_ms - lifetime_ms / 5;
	e->end_ms = now + lifetime_ms - lifetime_ms / 20;
	memcpy(e->cap, w, OBJCAP_WIRE_SIZE);
	pthread_mutex_unlock(&c->mu);
}

void capcache_put(struct sdfs *s, const uint8_t cap[OBJCAP_WIRE_SIZE])
{
	struct capcache *c = cache_of(s);
	struct objcap oc;
	int64_t left;

	objcap_decode(cap, &oc);
	left = oc.expiry_ms - objcap_now_ms();
	if (!c || left < 1000)
		return;
	if (left > 2 * (int64_t)OBJCAP_LIFETIME_MS_DEFAULT)
		left = 2 * (int64_t)OBJCAP_LIFETIME_MS_DEFAULT; /* a clock off */
	put(c, cap, 0, net_now_ms(), (int)left);
}

/* Ask the mds for @kind/@owner's caps (volumes: asked as @via, else
 * itself), with the most rights it allows. */
static int fetch(struct sdfs *s, struct capcache *c, unsigned kind, uint64_t owner,
		 uint64_t via)
{
	struct sdfs_ns_req r = { 0 };
	struct sdfs_hdr reply;
	uint8_t *rep = NULL;
	uint32_t len = 0;
	int64_t now = net_now_ms();
	int ret, lifetime;

	r.max = OBJCAP_RW;
	r.flags = SDFS_OBJCAP_BEST;
	if (kind == OBJCAP_VOL) {
		r.flags |= SDFS_OBJCAP_VOL;
		r.arg = via ? via : owner;
	} else
		r.ino = owner;
	ret = nsclient_call(s, SDFS_OP_NS_OBJCAP, &r, NULL, NULL, NULL, &reply, &rep,
			    &len, 0);
	if (ret)
		return ret;
	lifetime = reply.length >= 1000 ? (int)reply.length : OBJCAP_LIFETIME_MS_DEFAULT;
	for (uint32_t off = 0; off + OBJCAP_WIRE_SIZE <= len; off += OBJCAP_WIRE_SIZE)
		put(c, rep + off, kind == OBJCAP_VOL ? r.arg : 0, now, lifetime);
	free(rep);
	return len ? 0 : -EACCES;       /* none: an mds without the secret */
}

int capcache_get(struct sdfs *s, uint64_t oid, unsigned need, int fresh,
		 uint8_t out[OBJCAP_WIRE_SIZE])
{
	struct capcache *c;
	struct capent *e;
	unsigned kind;
	uint64_t owner, via = 0;
	int64_t now;
	int ret, last = -EACCES;

	if (objcap_of_oid(oid, &kind, &owner))
		return 0;       /* raw, MDS: privileged keys only, no cap helps */
	if (!fresh && !atomic_load(&s->caps_needed))
		return 0;
	atomic_store(&s->caps_needed, 1);
	c = cache_of(s);
	if (!c)
		return -ENOMEM;
	for (int asked = 0;; asked = 1) {
		now = net_now_ms();
		pthread_mutex_lock(&c->mu);
		e = find(c, kind, owner);
		if (e && (e->rights & need) == need && e->end_ms > now &&
		    (asked || (!fresh && e->renew_ms > now))) {
			memcpy(out, e->cap, OBJCAP_WIRE_SIZE);
			pthread_mutex_unlock(&c->mu);
			return 1;
		}
		via = e ? e->via : 0;
		pthread_mutex_unlock(&c->mu);
		if (asked)
			return last;    /* not the rights needed, or no answer */
		ret = fetch(s, c, kind, owner, via);
		if (ret == -EACCES && via && via != owner)
			ret = fetch(s, c, kind, owner, 0);      /* asked for itself */
		if (ret) {
			log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 ": no "
				  "object capability: %s", oid, strerror(-ret));
			if (fresh)
				return ret;
			last = ret;     /* the one held may still be good */
		}
	}
}
