/*
 * replycache.c - answers to retried mutations.
 *
 * A mutation's reply is stored under 'R' client_id seq in the same
 * batch as its effect, so after a failover the new active answers the
 * retry from the database instead of applying it twice. A retry that
 * arrives while the first attempt still runs (the client gave up on the
 * connection, not on the mds) waits for it through the in-flight table.
 * Records older than a few minutes are swept (purge.c): clients retry
 * within their timeout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mds/ns_int.h"

#define INFLIGHT_BUCKETS 256

struct flight {
	uint64_t client, seq;
	struct flight *next;
};

struct inflight {
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct flight *b[INFLIGHT_BUCKETS];
};

static size_t key_reply(uint8_t *k, uint64_t client, uint64_t seq)
{
	k[0] = 'R';
	be64_put(k + 1, client);
	be64_put(k + 9, seq);
	return 17;
}

static unsigned bucket(uint64_t client, uint64_t seq)
{
	return (unsigned)(((client ^ seq * 0x9e3779b97f4a7c15ull) >> 40) % INFLIGHT_BUCKETS);
}

int replycache_init(struct ns *ns)
{
	ns->inflight = calloc(1, sizeof(*ns->inflight));
	if (!ns->inflight)
		return -ENOMEM;
	pthread_mutex_init(&ns->inflight->lock, NULL);
	pthread_cond_init(&ns->inflight->done, NULL);
	return 0;
}

void replycache_free(struct ns *ns)
{
	struct inflight *f = ns->inflight;

	if (!f)
		return;
	for (int i = 0; i < INFLIGHT_BUCKETS; i++)
		while (f->b[i]) {
			struct flight *x = f->b[i];

			f->b[i] = x->next;
			free(x);
		}
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->done);
	free(f);
	ns->inflight = NULL;
}

static struct flight **find(struct inflight *f, uint64_t client, uint64_t seq)
{
	struct flight **p = &f->b[bucket(client, seq)];

	while (*p && !((*p)->client == client && (*p)->seq == seq))
		p = &(*p)->next;
	return p;
}

int replycache_begin(struct ns *ns, const struct sdfs_ns_req *r, struct ns_reply *rep)
{
	struct inflight *f = ns->inflight;
	struct flight *x;
	int ret;

	if (r->client_id == 0)
		return 0;
	x = malloc(sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->client = r->client_id;
	x->seq = r->seq;
	pthread_mutex_lock(&f->lock);
	while (*find(f, r->client_id, r->seq))
		pthread_cond_wait(&f->done, &f->lock);
	x->next = f->b[bucket(r->client_id, r->seq)];
	f->b[bucket(r->client_id, r->seq)] = x;
	pthread_mutex_unlock(&f->lock);

	ret = replycache_lookup(ns, r->client_id, r->seq, rep);
	if (ret)        /* answered before (1), or an error: not in flight */
		replycache_end(ns, r);
	return ret;
}

int replycache_lookup(struct ns *ns, uint64_t client_id, uint64_t seq,
		      struct ns_reply *rep)
{
	uint8_t k[17];
	char *v;
	size_t vlen;
	int ret;

	if (client_id == 0)
		return 0;
	ret = kvdb_get(ns->db, k, key_reply(k, client_id, seq), &v, &vlen);
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	if (vlen < 16) {
		free(v);
		return -EIO;
	}
	memset(rep, 0, sizeof(*rep));
	rep->hdr_length = le32_get((const uint8_t *)v + 12);
	if (vlen > 16) {
		rep->data = malloc(vlen - 16);
		if (!rep->data) {
			free(v);
			return -ENOMEM;
		}
		memcpy(rep->data, v + 16, vlen - 16);
		rep->len = (uint32_t)(vlen - 16);
	}
	free(v);
	return 1;
}

void replycache_record(struct ns *ns, const struct sdfs_ns_req *r, struct kvbatch *b,
		       const struct ns_reply *rep)
{
	uint32_t len = rep ? rep->len : 0;
	uint8_t k[17], *v;
	(void)ns;

	if (r->client_id == 0)
		return;
	v = malloc(16 + (size_t)len);
	if (!v)
		return;         /* a retry would then be re-applied; rare */
	le64_put(v, (uint64_t)(ns_now() / 1000000));
	le32_put(v + 8, 0);
	le32_put(v + 12, rep ? rep->hdr_length : 0);
	if (len)
		memcpy(v + 16, rep->data, len);
	kvbatch_put(b, k, key_reply(k, r->client_id, r->seq), v, 16 + (size_t)len);
	free(v);
}

void replycache_end(struct ns *ns, const struct sdfs_ns_req *r)
{
	struct inflight *f = ns->inflight;
	struct flight **p, *x;

	if (r->client_id == 0)
		return;
	pthread_mutex_lock(&f->lock);
	p = find(f, r->client_id, r->seq);
	x = *p;
	if (x)
		*p = x->next;
	pthread_cond_broadcast(&f->done);
	pthread_mutex_unlock(&f->lock);
	free(x);
}

void replycache_sweep(struct ns *ns, int64_t max_age_ms)
{
	int64_t cutoff = ns_now() / 1000000 - max_age_ms;
	struct kviter *it = kvdb_iter(ns->db);
	struct kvbatch *b = kvbatch_new();
	size_t n = 0;

	if (!it || !b)
		goto out;
	for (kviter_seek(it, "R", 1); kviter_valid(it); kviter_next(it)) {
		size_t klen, vlen;
		const char *key = kviter_key(it, &klen);
		const char *v = kviter_value(it, &vlen);

		if (key[0] != 'R')
			break;
		if (vlen >= 8 && (int64_t)le64_get((const uint8_t *)v) >= cutoff)
			continue;
		kvbatch_del(b, key, klen);
		if (++n % 1000 == 0) {
			if (ns_commit(ns, b))
				goto out;
			kvbatch_clear(b);
		}
	}
	if (n % 1000)
		ns_commit(ns, b);
out:
	kviter_free(it);
	kvbatch_free(b);
}
