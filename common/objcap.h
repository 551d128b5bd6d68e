/*
 * objcap.h - object capabilities: the mds's signed word that a key may
 * read (or write) one file's or one volume state's objects until a time
 * (docs/security.md "Object capabilities").
 *
 * The mds signs a cap with the key auth_derive(secret, AUTH_DERIVE_OBJCAP)
 * when a client asks for one (NS_OBJCAP) and the namespace lets it;
 * block daemons check it with the same key, without asking the mds.
 * A cap names one owner: a regular file's inode (its data objects,
 * kind OID_KIND_FILE) or one volume id (its index and data objects,
 * OID_KIND_VINDEX/VDATA of that vid); a volume reading its ancestors'
 * objects holds one read cap per ancestor vid. The strips of an
 * erasure-coded object (protocol 2.4, docs/ec.md) are covered by the
 * cap of their oid exactly as the replicated object of that oid is:
 * one owner, whichever form its data takes. It is bound to the key
 * that asked (a hash of its name): another key cannot use it.
 *
 * On the wire (OBJCAP_WIRE_SIZE bytes, little-endian): u8 kind, u8
 * rights, u16 0, u32 mds epoch, le64 owner, le64 expiry (unix ms),
 * le64 holder (objcap_holder of the key name), 16 bytes MAC (keyed
 * BLAKE2b over the 32 bytes before it).
 * Not here: who may have a cap (mds/ns_objcap.c), keeping caps
 * (libclient/capcache.c), refusing requests (blockd/ops.c).
 * Pure functions: thread-safe.
 */
#ifndef SDFS_COMMON_OBJCAP_H
#define SDFS_COMMON_OBJCAP_H
#include <stddef.h>
#include <stdint.h>

#include "common/keys.h"
#include "common/sdfs_proto.h"

#define OBJCAP_WIRE_SIZE 48u
#define OBJCAP_MAC_BYTES 16u
#define OBJCAP_LIFETIME_MS_DEFAULT 600000       /* 10 min (objcap_lifetime_ms) */

enum objcap_kind {
	OBJCAP_FILE = 1,        /* owner = inode: file data objects (oid_is_file) */
	OBJCAP_VOL = 2,         /* owner = vid: its index and data objects */
};
#define OBJCAP_R  0x1u          /* READ, STAT, FLUSH; STRIP_GET, STRIP_STAT */
#define OBJCAP_W  0x2u          /* WRITE, CREATE, REMOVE, REPLACE; STRIP_PUT
				   (a removal's tombstone too), STRIP_COMMIT,
				   STRIP_REPAIR */
#define OBJCAP_RW (OBJCAP_R | OBJCAP_W)

struct objcap {
	uint8_t kind;           /* enum objcap_kind */
	uint8_t rights;         /* OBJCAP_R | OBJCAP_W */
	uint32_t epoch;         /* the mds epoch that signed it (informational:
				   blockd does not compare it, see security.md) */
	uint64_t owner;         /* inode or vid */
	int64_t expiry_ms;      /* unix ms; refused after */
	uint64_t holder;        /* objcap_holder(key name) */
};

/* Wall-clock unix ms (CLOCK_REALTIME): what expiry is measured in.
 * The mds's and block daemons' clocks must agree to well within a
 * cap's lifetime (NTP). */
int64_t objcap_now_ms(void);

/* The signing key: auth_derive(@secret, AUTH_DERIVE_OBJCAP). */
void objcap_key(const uint8_t secret[AUTH_KEY_BYTES], uint8_t key[AUTH_KEY_BYTES]);
/* 64 bits naming key @name (keyed by nothing: a name is not secret). */
uint64_t objcap_holder(const char *name);

/* Sign @c with @key into the wire bytes @out. */
void objcap_sign(const struct objcap *c, const uint8_t key[AUTH_KEY_BYTES],
		 uint8_t out[OBJCAP_WIRE_SIZE]);
/* Decode @in and check its MAC with @key (constant time): 0 and *@c
 * filled, or -EACCES (forged, altered, another cluster's). Expiry is
 * the caller's (objcap_admit). */
int objcap_verify(const uint8_t in[OBJCAP_WIRE_SIZE],
		  const uint8_t key[AUTH_KEY_BYTES], struct objcap *c);
/* Decode without checking (clients: they cannot, and need not). */
void objcap_decode(const uint8_t in[OBJCAP_WIRE_SIZE], struct objcap *c);

/* Which cap kind and owner object (or stripe) @oid needs: 0 and *@kind
 * and *@owner, or -EACCES for kinds no cap covers (raw, MDS database,
 * unknown). The only place that maps oid kinds to caps: blockd's
 * admission and libsdfs's choice of cap both ask it, and the mds grants
 * by owner (mds/ns_objcap.c), so a new data kind (say an EC kind of
 * volume data) is covered by adding it here: file data kinds to
 * OBJCAP_FILE (owner = ino), volume kinds to OBJCAP_VOL (owner = vid). */
int objcap_of_oid(uint64_t oid, unsigned *kind, uint64_t *owner);
/* The rights object or strip op @op needs (OBJCAP_R or OBJCAP_W;
 * VOL_FENCE: W on the vid in its oid field), 0 for ops no cap allows
 * (LIST, FLUSH of everything, MDS_FENCE, peer ops). */
unsigned objcap_rights_of(const struct sdfs_hdr *h);

/*
 * A block daemon's admission of request @h with its @payload from a
 * peer authenticated as @id (NULL: an open cluster, everything passes),
 * @key being the cluster's cap key (NULL: none known; then only
 * privileged peers pass). Privileged keys (admin, daemon) need no cap
 * and may send one. Others: NODE_INFO and a SCRUB status (not a start
 * or stop) pass; an object op or strip op (2.4) of a file or
 * volume object (and a VOL_FENCE of a vid below SDFS_TOKEN_FROZEN: the
 * volume's writer) needs SDFS_F_CAP and a cap in the first
 * OBJCAP_WIRE_SIZE bytes of the payload that verifies, is unexpired at
 * @now_ms, names @id's key, the oid's kind and owner, and the op's
 * rights; anything else is refused. SDFS_F_CAP counts on the object
 * ops, the strip ops and VOL_FENCE only: on any other op (NODE_INFO,
 * LIST, MDS_FENCE, ...) it is a bit the op does not use, ignored. Returns 0 and *@skip =
 * the payload bytes the cap takes (0 or OBJCAP_WIRE_SIZE: strip them
 * before the op sees the payload), or -EACCES with a reason in *@why
 * (static text).
 */
int objcap_admit(const struct auth_ident *id, const uint8_t *key,
		 const struct sdfs_hdr *h, const uint8_t *payload,
		 int64_t now_ms, uint32_t *skip, const char **why);
#endif
