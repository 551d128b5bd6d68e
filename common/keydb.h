/*
 * keydb.h - the keys a daemon accepts, in memory: name -> key, the key
 * it replaced (valid until a deadline, `sdfs auth rotate`), and caps.
 *
 * Filled from ZooKeeper (common/coord_auth.h, which keeps it current
 * with a watch); read by the handshake (common/auth.h) on every new
 * connection. Thread-safe: a lookup copies the entry out under a lock,
 * so a writer never waits on a reader's use of it.
 */
#ifndef SDFS_COMMON_KEYDB_H
#define SDFS_COMMON_KEYDB_H
#include <stddef.h>
#include <stdint.h>

#include "common/keys.h"

struct keydb_ent {
	char name[AUTH_NAME_MAX + 1];
	uint8_t key[AUTH_KEY_BYTES];
	uint8_t prev_key[AUTH_KEY_BYTES];
	int64_t prev_until_ms;          /* wall clock (ms since 1970) the
					   previous key is valid until; 0: none */
	struct auth_caps caps;
	uint64_t gen;                   /* rises with every change of the entry */
};

struct keydb;

int keydb_new(struct keydb **out);
void keydb_free(struct keydb *db);      /* NULL ok */

/* Add or replace the entry of e->name. 0 or -ENOMEM. */
int keydb_put(struct keydb *db, const struct keydb_ent *e);
/* Drop @name (absent: 0). */
int keydb_remove(struct keydb *db, const char *name);
/* Replace every entry with @n entries (a full reload). 0 or -ENOMEM. */
int keydb_replace(struct keydb *db, const struct keydb_ent *ents, size_t n);
/* Copy @name's entry into @out: 0, or -ENOENT. */
int keydb_get(struct keydb *db, const char *name, struct keydb_ent *out);
/*
 * keydb_get, and on a miss the miss hook's read of @name from where the
 * keys live (keydb_on_miss), kept unless a reload came meanwhile (which
 * may have been a removal's): a key added a moment ago is accepted
 * before the table's own reload brings it. May block (the hook reads
 * ZooKeeper): never on an event loop.
 */
int keydb_fetch(struct keydb *db, const char *name, struct keydb_ent *out);
/* The miss hook: @fn(@arg, name, out) reads name's entry into @out: 0,
 * or -errno (coord_auth_fetch_misses sets one). */
typedef int (*keydb_miss_fn)(void *arg, const char *name, struct keydb_ent *out);
void keydb_on_miss(struct keydb *db, keydb_miss_fn fn, void *arg);
/* Entries held now. */
size_t keydb_count(struct keydb *db);
/* Rises with every change: a daemon re-checks its connections' keys
 * (removed or rotated past the grace) when it moved. */
uint64_t keydb_version(struct keydb *db);
/* Has @name still a key equal to @key (current, or previous within its
 * grace at @now_ms wall clock)? 1 or 0. */
int keydb_valid(struct keydb *db, const char *name,
		const uint8_t key[AUTH_KEY_BYTES], int64_t now_ms);
#endif
