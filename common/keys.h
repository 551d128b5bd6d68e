/*
 * keys.h - who may talk to sdfs: key names, capabilities, keyring files
 * (docs/security.md).
 *
 * Every process that connects to a daemon holds one key, named like
 * "client.admin", "client.alice", "blockd.3", "mds.a": 32 random bytes
 * that the cluster's daemons also know (common/keydb.h holds them, from
 * ZooKeeper, common/coord_auth.h). What a key may do is its caps, kept
 * by the cluster, never taken from the client:
 *
 *   admin           everything: format, node out/remove/weight, auth
 *   daemon          a blockd or mds: peer ops, MDS objects, every object
 *   ro | rw         the namespace and file data read-only, or not (rw)
 *   path=/a/b       the mount's root is /a/b; nothing outside is reachable
 *   root_squash     uid 0 acts as anonuid, gid 0 as anongid
 *   all_squash      every uid and gid acts as anonuid / anongid
 *   anonuid=N, anongid=N     the squashed ids (default 65534)
 *   uidmap=C:S[:N], gidmap=C:S[:N]   the client's ids C..C+N-1 act as
 *                   S..S+N-1 (N default 1); at most AUTH_MAP_MAX each;
 *                   ids a map does not cover pass unchanged
 * Caps are written comma-separated: "rw,path=/projects/a,root_squash".
 *
 * A keyring file (mode 0600) holds one key:
 *   [client.alice]
 *   key = <base64 of 32 bytes>
 *   caps = rw,path=/a          (informational: the cluster's copy rules)
 *   secret = <base64>          admin and daemon keyrings: the cluster secret
 *   zk = <base64>              the ZooKeeper password of its class
 * Pure functions and file I/O only: thread-safe.
 */
#ifndef SDFS_COMMON_KEYS_H
#define SDFS_COMMON_KEYS_H
#include <stddef.h>
#include <stdint.h>

#define AUTH_NAME_MAX   63u     /* key names: [A-Za-z0-9._-], 1..63 */
#define AUTH_KEY_BYTES  32u
#define AUTH_MAP_MAX    8u
#define AUTH_PATH_MAX   1024u
#define AUTH_ANON_ID    65534u
#define AUTH_CAPS_STR_MAX 2048u
#define AUTH_ZK_PW_MAX  64u     /* a ZooKeeper password, base64 text */

#define AUTH_CAP_ADMIN       0x01u
#define AUTH_CAP_DAEMON      0x02u
#define AUTH_CAP_RO          0x04u
#define AUTH_CAP_ROOT_SQUASH 0x08u
#define AUTH_CAP_ALL_SQUASH  0x10u

struct auth_idmap {
	uint32_t from, to, count;       /* from..from+count-1 -> to.. */
};

struct auth_caps {
	uint32_t flags;                 /* AUTH_CAP_* */
	char path[AUTH_PATH_MAX];       /* "/" (or ""): the whole tree;
					   else absolute, normalised, no
					   trailing '/' */
	uint32_t anon_uid, anon_gid;
	uint32_t nuidmap, ngidmap;
	struct auth_idmap uidmap[AUTH_MAP_MAX], gidmap[AUTH_MAP_MAX];
};

/* Who is at the other end of an authenticated connection: the key's
 * name and the caps the cluster gives it. */
struct auth_ident {
	char name[AUTH_NAME_MAX + 1];
	struct auth_caps caps;
};

/* Is @name a valid key name? 1 or 0. */
int auth_name_ok(const char *name);

/* Parse @s into @c (defaults first: rw, whole tree, anon 65534, no
 * maps). 0, or -EINVAL with a one-line reason in @err. */
int auth_caps_parse(const char *s, struct auth_caps *c, char *err, size_t errlen);
/* The canonical text of @c (parse gives @c back). 0 or -ENOSPC. */
int auth_caps_format(const struct auth_caps *c, char *buf, size_t len);
/* The ids a caller claiming @uid / @gid acts as under @c (squash, then
 * maps). Pure. */
uint32_t auth_caps_uid(const struct auth_caps *c, uint32_t uid);
uint32_t auth_caps_gid(const struct auth_caps *c, uint32_t gid);
/* Full rights: admin or daemon. */
int auth_caps_privileged(const struct auth_caps *c);

struct keyring {
	char name[AUTH_NAME_MAX + 1];
	uint8_t key[AUTH_KEY_BYTES];
	char caps[AUTH_CAPS_STR_MAX];   /* as written; "" if absent */
	int has_secret;
	uint8_t secret[AUTH_KEY_BYTES]; /* the cluster secret */
	char zk_pw[AUTH_ZK_PW_MAX];     /* "" if absent */
};

/* Read @path. 0, or -errno with a one-line reason in @err (missing,
 * unreadable, malformed line N, no key). A file readable by group or
 * others is loaded, with a warning logged. */
int keyring_load(const char *path, struct keyring *kr, char *err, size_t errlen);
/* Write @kr to @path atomically (temp file, fsync, rename), mode 0600. */
int keyring_save(const char *path, const struct keyring *kr);

/* 32 random bytes (libsodium). */
void auth_random_key(uint8_t key[AUTH_KEY_BYTES]);
/* Base64 (standard, padded) of a key: 44 chars + NUL. */
#define AUTH_KEY_B64_LEN 45u
void auth_key_to_b64(const uint8_t key[AUTH_KEY_BYTES], char out[AUTH_KEY_B64_LEN]);
int auth_key_from_b64(const char *s, uint8_t key[AUTH_KEY_BYTES]);  /* 0 / -EINVAL */

/*
 * Keys derived from the cluster secret @secret for one purpose each
 * (libsodium crypto_kdf, context "sdfs-key"): @purpose is one of the
 * AUTH_DERIVE_* ids. Admin and daemon keyrings carry the secret; other
 * keyrings get only the ZooKeeper password of their class.
 */
#define AUTH_DERIVE_DB     1u   /* encrypts key entries in ZooKeeper */
#define AUTH_DERIVE_OBJCAP 2u   /* signs object capabilities (objcap.h) */
#define AUTH_DERIVE_ZK_ADMIN  3u  /* ZooKeeper password, admins and daemons */
#define AUTH_DERIVE_ZK_CLIENT 4u  /* ZooKeeper password, other keys */
void auth_derive(const uint8_t secret[AUTH_KEY_BYTES], unsigned purpose,
		 uint8_t out[AUTH_KEY_BYTES]);
/* The ZooKeeper password (base64 text) of a class, from the secret. */
void auth_zk_password(const uint8_t secret[AUTH_KEY_BYTES], int admin,
		      char out[AUTH_ZK_PW_MAX]);
#endif
