/*
 * coord_auth.h - the cluster's keys in ZooKeeper (docs/security.md).
 *
 *   <base>/auth            the key directory
 *   <base>/auth/<name>     one key: its entry (keydb.h) sealed with the
 *                          key derived from the cluster secret
 *                          (AUTH_DERIVE_DB, libsodium secretbox): the
 *                          bytes in ZooKeeper are useless without it
 * Only admin and daemon sessions (ZooKeeper digest ACLs, coord.h) can
 * read or change them. Same threading rules as coord.h.
 */
#ifndef SDFS_COMMON_COORD_AUTH_H
#define SDFS_COMMON_COORD_AUTH_H
#include <stddef.h>
#include <stdint.h>

#include "common/coord.h"
#include "common/keydb.h"

/* Write @e under auth/ (created or replaced), sealed with @secret. */
int coord_auth_put(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		   const struct keydb_ent *e);
/* Read one entry: 0, -ENOENT, or -EBADMSG (does not open with @secret). */
int coord_auth_get(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		   const char *name, struct keydb_ent *e);
/* Remove one entry (absent: -ENOENT). */
int coord_auth_del(struct coord *c, const char *name);
/* Every entry, sorted by name; free *@out with free(). Entries that do
 * not open are skipped with a warning. */
int coord_auth_list(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		    struct keydb_ent **out, size_t *n);
/*
 * Keep @db equal to auth/: load it now, then on every change (a watch;
 * reloaded after a session loss too). Returns after the first load:
 * 0, or -errno (then nothing is watched). @db and @secret are borrowed
 * until coord_close.
 */
int coord_auth_follow(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		      struct keydb *db);
/*
 * Give @db (followed with coord_auth_follow) a miss hook that reads the
 * one name from auth/ (keydb_fetch): `sdfs auth add`, then a connection
 * with the new key works whether or not the watch's reload has come.
 * The read blocks its caller (one ZooKeeper round trip, or up to the
 * session's timeout while ZooKeeper hangs): the mds calls it from a
 * connection's thread, blockd from its coord worker. At most one read
 * per KEYDB_MISS_GAP_MS; the other misses meanwhile are refused as
 * before, so unknown names sent in a stream cost ZooKeeper little.
 * 0, or -EINVAL when @db is not followed.
 */
#define KEYDB_MISS_GAP_MS 100
int coord_auth_fetch_misses(struct coord *c, struct keydb *db);
/*
 * A daemon's start (sdfs-blockd, sdfs-mds) on a cluster that requires
 * authentication: its keyring @kr (loaded: @have_kr) must hold the
 * cluster secret; then a new key table *@db follows auth/ (freed by the
 * caller after coord_close). 0, or -errno with the reason logged.
 */
int coord_auth_daemon_keys(struct coord *c, const struct keyring *kr, int have_kr,
			   const char *cluster, struct keydb **db);
#endif
