/*
 * objcap.c - signing and checking object capabilities (objcap.h).
 *
 * The MAC is libsodium's keyed BLAKE2b (crypto_generichash) cut to 16
 * bytes: a forger must guess 128 bits, and a cap lives minutes.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "common/objcap.h"
#include "common/oid.h"

#define BODY 32u        /* signed bytes: everything before the MAC */

static void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

int64_t objcap_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void objcap_key(const uint8_t secret[AUTH_KEY_BYTES], uint8_t key[AUTH_KEY_BYTES])
{
	auth_derive(secret, AUTH_DERIVE_OBJCAP, key);
}

/* A block daemon asks for the same few names again and again (every
 * request of a connection): the last one per thread is remembered. */
static __thread char last_name[AUTH_NAME_MAX + 1];
static __thread uint64_t last_holder;

uint64_t objcap_holder(const char *name)
{
	size_t len = strlen(name);
	uint8_t h[8];

	if (len <= AUTH_NAME_MAX && last_name[0] && strcmp(name, last_name) == 0)
		return last_holder;
	crypto_generichash(h, sizeof(h), (const uint8_t *)name, len, NULL, 0);
	if (len <= AUTH_NAME_MAX) {
		memcpy(last_name, name, len + 1);
		last_holder = get64(h);
	}
	return get64(h);
}

static void body_encode(const struct objcap *c, uint8_t *out)
{
	uint32_t ep = htole32(c->epoch);

	out[0] = c->kind;
	out[1] = c->rights;
	out[2] = out[3] = 0;
	memcpy(out + 4, &ep, 4);
	put64(out + 8, c->owner);
	put64(out + 16, (uint64_t)c->expiry_ms);
	put64(out + 24, c->holder);
}

static void mac(const uint8_t *body, const uint8_t key[AUTH_KEY_BYTES],
		uint8_t out[OBJCAP_MAC_BYTES])
{
	crypto_generichash(out, OBJCAP_MAC_BYTES, body, BODY, key, AUTH_KEY_BYTES);
}

void objcap_sign(const struct objcap *c, const uint8_t key[AUTH_KEY_BYTES],
		 uint8_t out[OBJCAP_WIRE_SIZE])
{
	body_encode(c, out);
	mac(out, key, out + BODY);
}

void objcap_decode(const uint8_t in[OBJCAP_WIRE_SIZE], struct objcap *c)
{
	uint32_t ep;

	memset(c, 0, sizeof(*c));
	c->kind = in[0];
	c->rights = in[1];
	memcpy(&ep, in + 4, 4);
	c->epoch = le32toh(ep);
	c->owner = get64(in + 8);
	c->expiry_ms = (int64_t)get64(in + 16);
	c->holder = get64(in + 24);
}

int objcap_verify(const uint8_t in[OBJCAP_WIRE_SIZE],
		  const uint8_t key[AUTH_KEY_BYTES], struct objcap *c)
{
	uint8_t want[OBJCAP_MAC_BYTES];
	int bad;

	mac(in, key, want);
	bad = sodium_memcmp(want, in + BODY, OBJCAP_MAC_BYTES);
	sodium_memzero(want, sizeof(want));
	if (bad)
		return -EACCES;
	objcap_decode(in, c);
	return 0;
}

/* The one map from a data oid to the cap that covers it (objcap.h):
 * a new kind of file or volume data (an erasure-coded one too) is one
 * more line here. */
int objcap_of_oid(uint64_t oid, unsigned *kind, uint64_t *owner)
{
	if (oid_is_file(oid) || oid_kind(oid) == OID_KIND_FSTRIPE)
		*kind = OBJCAP_FILE;
	else if (oid_is_vol(oid) || oid_is_vstripe(oid))
		*kind = OBJCAP_VOL;
	else
		return -EACCES;
	*owner = oid_owner(oid);
	return 0;
}

unsigned objcap_rights_of(const struct sdfs_hdr *h)
{
	switch (h->opcode) {
	case SDFS_OP_OBJ_READ:
	case SDFS_OP_OBJ_STAT:
	case SDFS_OP_STRIP_GET:
	case SDFS_OP_STRIP_STAT:
		return OBJCAP_R;
	case SDFS_OP_OBJ_FLUSH:
		return h->flags & SDFS_F_ALL ? 0 : OBJCAP_R;
	case SDFS_OP_OBJ_WRITE:
	case SDFS_OP_OBJ_CREATE:
	case SDFS_OP_OBJ_REMOVE:
	case SDFS_OP_OBJ_REPLACE:
	case SDFS_OP_VOL_FENCE:         /* the volume's writer (oid = vid) */
	case SDFS_OP_STRIP_PUT:         /* a removal's tombstone too */
	case SDFS_OP_STRIP_COMMIT:
	case SDFS_OP_STRIP_REPAIR:      /* 2.6: a reader's read-repair */
	case SDFS_OP_OBJ_COPY:          /* 2.6: from the vid's own stripe only */
		return OBJCAP_W;
	case SDFS_OP_OBJ_FILL:          /* 2.6: one object of the vid's */
		return h->oid ? OBJCAP_W : 0;
	}
	return 0;
}

#define REFUSE(text) do { *why = (text); return -EACCES; } while (0)

/* The ops SDFS_F_CAP means something on: the object requests, the
 * strip requests (2.4) and VOL_FENCE. On any other op the bit is one the op does not use, and
 * ignored like every such bit (docs/protocol.md "Flags"). */
static int op_takes_cap(unsigned op)
{
	switch (op) {
	case SDFS_OP_OBJ_READ:
	case SDFS_OP_OBJ_WRITE:
	case SDFS_OP_OBJ_CREATE:
	case SDFS_OP_OBJ_REMOVE:
	case SDFS_OP_OBJ_REPLACE:
	case SDFS_OP_OBJ_STAT:
	case SDFS_OP_OBJ_FLUSH:
	case SDFS_OP_VOL_FENCE:
	case SDFS_OP_STRIP_PUT:
	case SDFS_OP_STRIP_GET:
	case SDFS_OP_STRIP_STAT:
	case SDFS_OP_STRIP_COMMIT:
	case SDFS_OP_STRIP_REPAIR:
	case SDFS_OP_OBJ_COPY:
	case SDFS_OP_OBJ_FILL:
		return 1;
	}
	return 0;
}

int objcap_admit(const struct auth_ident *id, const uint8_t *key,
		 const struct sdfs_hdr *h, const uint8_t *payload,
		 int64_t now_ms, uint32_t *skip, const char **why)
{
	struct objcap c;
	unsigned need, kind;
	uint64_t owner;
	int has = op_takes_cap(h->opcode) && (h->flags & SDFS_F_CAP);

	*skip = 0;
	*why = "";
	if (has && h->payload_len < OBJCAP_WIRE_SIZE)
		REFUSE("SDFS_F_CAP without a cap");
	if (!id || auth_caps_privileged(&id->caps)) {
		*skip = has ? OBJCAP_WIRE_SIZE : 0;
		return 0;
	}
	if (h->opcode == SDFS_OP_NODE_INFO ||
	    (h->opcode == SDFS_OP_SCRUB && h->offset == SDFS_SCRUB_STATUS))
		return 0;       /* looking is open to every key; SCRUB's
				   start and stop are admin's (below) */
	need = objcap_rights_of(h);
	if (!need || (h->flags & SDFS_F_RAW))
		REFUSE("op for admin and daemon keys only");
	if (h->opcode == SDFS_OP_VOL_FENCE) {
		/* a volume's writer fences its vid (oid = vid); freezing
		 * one is the mds's (snapshots, deletion) */
		if (h->offset >= SDFS_TOKEN_FROZEN)
			REFUSE("freezing a volume is for daemon keys only");
		kind = OBJCAP_VOL;
		owner = h->oid;
	} else if (objcap_of_oid(h->oid, &kind, &owner))
		REFUSE("object kind for admin and daemon keys only");
	if (!has)
		REFUSE("no capability");
	if (!key)
		REFUSE("no capability key here (no cluster secret)");
	if (objcap_verify(payload, key, &c))
		REFUSE("forged or altered capability");
	if (c.holder != objcap_holder(id->name))
		REFUSE("capability of another key");
	if (c.kind != kind || c.owner != owner)
		REFUSE("capability for another object");
	if ((c.rights & need) != need)
		REFUSE("capability without the rights");
	if (now_ms > c.expiry_ms)
		REFUSE("capability expired");
	if (h->opcode == SDFS_OP_OBJ_FILL && h->offset != owner)
		REFUSE("OBJ_FILL of another vid's: admin and daemon keys only");
	if (h->opcode == SDFS_OP_OBJ_COPY) {
		/* the cap covers DST's vid; the source must be of it too:
		 * its own stripe (an EC volume's backed unseal, 2.6), never
		 * an ancestor's object (a snapshot's copy-on-write) */
		const uint8_t *cp = payload + OBJCAP_WIRE_SIZE;
		uint64_t src;
		uint32_t fl;

		if (h->payload_len < OBJCAP_WIRE_SIZE + SDFS_OBJ_COPY_SIZE)
			REFUSE("short OBJ_COPY");
		src = get64(cp);
		memcpy(&fl, cp + 12, 4);
		fl = le32toh(fl);
		if (!(fl & SDFS_COPY_STRIPE) || !oid_is_vstripe(src) || oid_owner(src) != owner)
			REFUSE("a copy of another's object: admin and daemon keys only");
	}
	*skip = OBJCAP_WIRE_SIZE;
	return 0;
}
