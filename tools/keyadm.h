/*
 * keyadm.h - the cluster's keys for the commands that manage them
 * (sdfs cluster format, sdfs auth, sdfs dev): which keyring file a run
 * uses, a ZooKeeper session with the admin keyring, making keys and
 * writing their keyring files. docs/operations.md "Keys".
 *
 * The key entries live in ZooKeeper (common/coord_auth.h), sealed with
 * a key derived from the cluster secret: only a keyring that carries
 * the secret (admin, daemon) can read or write them, and only an admin
 * key may (keyadm_open checks the cluster's copy of its caps).
 * Not here: the handshake (common/auth.h), parsing caps (common/keys.h).
 */
#ifndef SDFS_TOOLS_KEYADM_H
#define SDFS_TOOLS_KEYADM_H
#include <limits.h>
#include <stddef.h>

#include "common/conf.h"
#include "common/coord.h"
#include "common/keydb.h"
#include "common/keys.h"
#include "tools/cli.h"

#define KEYADM_GRACE_S 300u     /* auth rotate's default grace */

struct keyadm {
	struct sdfs_conf conf;
	char conf_path[PATH_MAX];
	char path[PATH_MAX];            /* the keyring file; "" if none */
	struct keyring kr;              /* loaded by keyadm_open */
	int loaded;                     /* kr holds a keyring */
	struct coord *coord;
};

/*
 * Read the config (-c, $SDFS_CONF, the default) into @ka and find the
 * keyring file: --keyring, else $SDFS_KEYRING, else the config's
 * `keyring =`; "" if none of them names one. 0, or cli_fail's 1.
 */
int keyadm_conf(const struct cli *cli, struct keyadm *ka);
/* Load @ka->path into @ka->kr. 0, or cli_fail's 1. */
int keyadm_load(struct keyadm *ka, const char *what);
/* A ZooKeeper session for the cluster of @ka->conf, authenticated with
 * @ka->kr if loaded (sdfs-admin with its secret, else sdfs-client with
 * its zk password). 0, or cli_fail's 1 (@what names the command). */
int keyadm_connect(struct keyadm *ka, const char *what);
/*
 * keyadm_conf, load the keyring, connect, and check that it is an admin
 * key of this cluster (its secret opens the cluster's entry of it,
 * whose caps say admin, and the key is that entry's). 0, or 1 with the
 * reason printed: "auth: needs an admin key (this keyring is
 * client.x)". keyadm_close undoes it.
 */
int keyadm_open(const struct cli *cli, const char *what, struct keyadm *ka);
void keyadm_close(struct keyadm *ka);
/* The admin check of keyadm_open for an already loaded @ka->kr and
 * connected @ka. 0, or 1 with the reason printed. */
int keyadm_check_admin(struct keyadm *ka, const char *what);

/* A new entry for @name with a random key and @caps. */
void keyadm_new_ent(const char *name, const struct auth_caps *caps,
		    struct keydb_ent *e);
/* The keyring file of @e: its key and caps, the ZooKeeper password of
 * its class, and the secret @secret too for admin and daemon caps. */
void keyadm_keyring_of(const struct keydb_ent *e,
		       const uint8_t secret[AUTH_KEY_BYTES], struct keyring *kr);

/* A new cluster's config: a random uuid, now, and the values given
 * (@auth: 1 keys, 0 --auth none). */
void keyadm_cluster_config(struct cluster_config *cfg, unsigned copies,
			   uint32_t obj_size, uint32_t out_grace_ms, int auth);

/*
 * Format with new keys: a new cluster secret and the admin key
 * client.admin (caps admin), its keyring first in @ka->path.new, then
 * a session holding the new secret formats (coord_format: its nodes
 * get the ACLs of that secret; @force as there) and stores the admin
 * entry, then the keyring is renamed to @ka->path (mode 0600). @ka:
 * keyadm_conf done, no session (any is closed first). On success @ka
 * holds the admin keyring and a session with it; on failure nothing is
 * left in @ka->path (-EEXIST: formatted already). 0 or -errno with a
 * one-line reason in @err.
 */
int keyadm_format_new(struct keyadm *ka, const struct cluster_config *cfg, int force,
		      char *err, size_t errlen);

/*
 * A key for @name with @caps whose keyring is at @file: kept if @file
 * holds the key the cluster has for @name (a restarted dev cluster),
 * else made (or its entry replaced) and written. Needs the admin
 * session @ka. 0 or -errno with a reason in @err.
 */
int keyadm_ensure(struct keyadm *ka, const char *name, const char *caps,
		  const char *file, char *err, size_t errlen);

/* Wall clock in ms since 1970 (rotation deadlines). */
int64_t keyadm_now_ms(void);
#endif
