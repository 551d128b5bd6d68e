/*
 * keydb.c - the keys a daemon accepts (keydb.h): a sorted array under a
 * mutex. Few keys (hundreds), looked up once per new connection.
 */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/keydb.h"

struct keydb {
	pthread_mutex_t mu;
	struct keydb_ent *ents;         /* sorted by name */
	size_t n, cap;
	uint64_t version;
	keydb_miss_fn miss;             /* set once, before lookups */
	void *miss_arg;
};

int keydb_new(struct keydb **out)
{
	struct keydb *db = calloc(1, sizeof(*db));

	if (!db)
		return -ENOMEM;
	pthread_mutex_init(&db->mu, NULL);
	*out = db;
	return 0;
}

void keydb_free(struct keydb *db)
{
	if (!db)
		return;
	if (db->ents)
		sodium_memzero(db->ents, db->cap * sizeof(*db->ents));
	free(db->ents);
	pthread_mutex_destroy(&db->mu);
	free(db);
}

/* Index of @name, or -(insertion point) - 1. Locked. */
static long find(const struct keydb *db, const char *name)
{
	size_t lo = 0, hi = db->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(db->ents[mid].name, name);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(long)lo - 1;
}

static int put_locked(struct keydb *db, const struct keydb_ent *e)
{
	long i = find(db, e->name);

	if (i >= 0) {
		db->ents[i] = *e;
	} else {
		size_t at = (size_t)(-i - 1);

		if (db->n == db->cap) {
			size_t cap = db->cap ? db->cap * 2 : 16;
			struct keydb_ent *p = realloc(db->ents, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			db->ents = p;
			db->cap = cap;
		}
		memmove(db->ents + at + 1, db->ents + at, (db->n - at) * sizeof(*e));
		db->ents[at] = *e;
		db->n++;
	}
	db->version++;
	return 0;
}

int keydb_put(struct keydb *db, const struct keydb_ent *e)
{
	int ret;

	pthread_mutex_lock(&db->mu);
	ret = put_locked(db, e);
	pthread_mutex_unlock(&db->mu);
	return ret;
}

int keydb_remove(struct keydb *db, const char *name)
{
	long i;

	pthread_mutex_lock(&db->mu);
	i = find(db, name);
	if (i >= 0) {
		sodium_memzero(&db->ents[i], sizeof(db->ents[i]));
		memmove(db->ents + i, db->ents + i + 1,
			(db->n - (size_t)i - 1) * sizeof(*db->ents));
		db->n--;
		db->version++;
	}
	pthread_mutex_unlock(&db->mu);
	return 0;
}

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct keydb_ent *)a)->name,
		      ((const struct keydb_ent *)b)->name);
}

int keydb_replace(struct keydb *db, const struct keydb_ent *ents, size_t n)
{
	struct keydb_ent *p = malloc((n ? n : 1) * sizeof(*p)), *old;
	size_t oldcap;

	if (!p)
		return -ENOMEM;
	if (n)
		memcpy(p, ents, n * sizeof(*p));
	qsort(p, n, sizeof(*p), cmp_ent);
	pthread_mutex_lock(&db->mu);
	old = db->ents;
	oldcap = db->cap;
	db->ents = p;
	db->n = db->cap = n ? n : 1;
	db->n = n;
	db->version++;
	pthread_mutex_unlock(&db->mu);
	if (old)
		sodium_memzero(old, oldcap * sizeof(*old));
	free(old);
	return 0;
}

static int lookup(struct keydb *db, const char *name, struct keydb_ent *out)
{
	long i;

	pthread_mutex_lock(&db->mu);
	i = find(db, name);
	if (i >= 0)
		*out = db->ents[i];
	pthread_mutex_unlock(&db->mu);
	return i >= 0 ? 0 : -ENOENT;
}

int keydb_get(struct keydb *db, const char *name, struct keydb_ent *out)
{
	return lookup(db, name, out);
}

int keydb_fetch(struct keydb *db, const char *name, struct keydb_ent *out)
{
	uint64_t v;

	if (lookup(db, name, out) == 0)
		return 0;
	if (!db->miss)
		return -ENOENT;
	v = keydb_version(db);
	if (db->miss(db->miss_arg, name, out))
		return -ENOENT;
	/* Kept only if no reload came meanwhile: a reload after a removal
	 * (sdfs auth rm) must not find the removed key put back behind it. */
	pthread_mutex_lock(&db->mu);
	if (db->version == v)
		put_locked(db, out);
	pthread_mutex_unlock(&db->mu);
	return 0;
}

void keydb_on_miss(struct keydb *db, keydb_miss_fn fn, void *arg)
{
	db->miss = fn;
	db->miss_arg = arg;
}

size_t keydb_count(struct keydb *db)
{
	size_t n;

	pthread_mutex_lock(&db->mu);
	n = db->n;
	pthread_mutex_unlock(&db->mu);
	return n;
}

uint64_t keydb_version(struct keydb *db)
{
	uint64_t v;

	pthread_mutex_lock(&db->mu);
	v = db->version;
	pthread_mutex_unlock(&db->mu);
	return v;
}

int keydb_valid(struct keydb *db, const char *name,
		const uint8_t key[AUTH_KEY_BYTES], int64_t now_ms)
{
	struct keydb_ent e;
	int ok;

	if (lookup(db, name, &e))
		return 0;
	ok = sodium_memcmp(e.key, key, AUTH_KEY_BYTES) == 0 ||
	     (e.prev_until_ms > now_ms &&
	      sodium_memcmp(e.prev_key, key, AUTH_KEY_BYTES) == 0);
	sodium_memzero(&e, sizeof(e));
	return ok;
}
