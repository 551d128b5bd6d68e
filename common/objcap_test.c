/*
 * objcap_test.c - unit tests for objcap.c: a signed cap verifies with
 * its key only, any changed byte breaks it, and objcap_admit (blockd's
 * check) refuses what it must: no cap, another key's, another object's,
 * too few rights, expired, forged, object kinds and ops no cap covers;
 * and lets privileged keys and open clusters through.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "common/objcap.h"
#include "common/oid.h"
#include "common/proto.h"

static const uint8_t secret[AUTH_KEY_BYTES] = { 1, 2, 3, 4, 5 };
static const uint8_t other_secret[AUTH_KEY_BYTES] = { 9, 9, 9 };

#define NOW 1700000000000ll

static struct objcap cap_for(const char *name, unsigned kind, uint64_t owner,
			     unsigned rights)
{
	struct objcap c = {
		.kind = (uint8_t)kind, .rights = (uint8_t)rights, .epoch = 7,
		.owner = owner, .expiry_ms = NOW + 60000,
		.holder = objcap_holder(name),
	};
	return c;
}

static struct auth_ident ident(const char *name, uint32_t flags)
{
	struct auth_ident id;

	memset(&id, 0, sizeof(id));
	strcpy(id.name, name);
	id.caps.flags = flags;
	return id;
}

Test(objcap, sign_verify_roundtrip)
{
	uint8_t key[AUTH_KEY_BYTES], w[OBJCAP_WIRE_SIZE];
	struct objcap c = cap_for("client.alice", OBJCAP_FILE, 42, OBJCAP_RW), d;

	objcap_key(secret, key);
	objcap_sign(&c, key, w);
	cr_assert_eq(objcap_verify(w, key, &d), 0);
	cr_assert_eq(d.kind, OBJCAP_FILE);
	cr_assert_eq(d.rights, OBJCAP_RW);
	cr_assert_eq(d.epoch, 7);
	cr_assert_eq(d.owner, 42);
	cr_assert_eq(d.expiry_ms, NOW + 60000);
	cr_assert_eq(d.holder, objcap_holder("client.alice"));
	cr_assert_neq(objcap_holder("client.alice"), objcap_holder("client.bob"));
}

Test(objcap, any_changed_byte_or_other_key_fails)
{
	uint8_t key[AUTH_KEY_BYTES], key2[AUTH_KEY_BYTES], w[OBJCAP_WIRE_SIZE];
	struct objcap c = cap_for("client.alice", OBJCAP_VOL, 5, OBJCAP_R), d;

	objcap_key(secret, key);
	objcap_key(other_secret, key2);
	cr_assert(memcmp(key, key2, sizeof(key)));
	cr_assert(memcmp(key, secret, sizeof(key)), "a derived key, not the secret");
	objcap_sign(&c, key, w);
	cr_assert_eq(objcap_verify(w, key2, &d), -EACCES, "another cluster's key");
	for (unsigned i = 0; i < OBJCAP_WIRE_SIZE; i++) {
		uint8_t t[OBJCAP_WIRE_SIZE];

		memcpy(t, w, sizeof(t));
		t[i] ^= 0x01;
		cr_assert_eq(objcap_verify(t, key, &d), -EACCES, "byte %u flipped", i);
	}
}

/* A request and its payload carrying @c signed with @key (or no cap). */
struct msg {
	struct sdfs_hdr h;
	uint8_t payload[OBJCAP_WIRE_SIZE + 16];
};

static struct msg msg(unsigned op, uint64_t oid, const struct objcap *c,
		      const uint8_t *key)
{
	struct msg m;

	memset(&m, 0, sizeof(m));
	m.h.opcode = (uint8_t)op;
	m.h.oid = oid;
	m.h.epoch = 3;
	if (c) {
		m.h.flags |= SDFS_F_CAP;
		objcap_sign(c, key, m.payload);
		m.h.payload_len = OBJCAP_WIRE_SIZE;
	}
	if (op == SDFS_OP_OBJ_WRITE || op == SDFS_OP_OBJ_REPLACE)
		m.h.payload_len += 16;
	return m;
}

static int admit(const struct auth_ident *id, const uint8_t *key,
		 const struct msg *m, int64_t now, uint32_t *skip)
{
	const char *why;
	int ret = objcap_admit(id, key, &m->h, m->payload, now, skip, &why);

	cr_assert(ret == 0 || (why && *why), "a refusal says why");
	return ret;
}

Test(objcap, admit_file_caps)
{
	uint8_t key[AUTH_KEY_BYTES], key2[AUTH_KEY_BYTES];
	struct auth_ident alice = ident("client.alice", 0);
	uint64_t oid = oid_make(OID_KIND_FILE, 42, 3);
	struct objcap rw = cap_for("client.alice", OBJCAP_FILE, 42, OBJCAP_RW);
	struct objcap r = cap_for("client.alice", OBJCAP_FILE, 42, OBJCAP_R);
	struct objcap other = cap_for("client.alice", OBJCAP_FILE, 43, OBJCAP_RW);
	struct objcap bobs = cap_for("client.bob", OBJCAP_FILE, 42, OBJCAP_RW);
	struct objcap volk = cap_for("client.alice", OBJCAP_VOL, 42, OBJCAP_RW);
	struct msg m;
	uint32_t skip;

	objcap_key(secret, key);
	objcap_key(other_secret, key2);
	m = msg(SDFS_OP_OBJ_READ, oid, &rw, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0);
	cr_assert_eq(skip, OBJCAP_WIRE_SIZE);
	m = msg(SDFS_OP_OBJ_WRITE, oid, &rw, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0);
	m = msg(SDFS_OP_OBJ_READ, oid, NULL, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "no cap");
	m = msg(SDFS_OP_OBJ_WRITE, oid, &r, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "read-only cap");
	m = msg(SDFS_OP_OBJ_REMOVE, oid, &r, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "read-only cap");
	m = msg(SDFS_OP_OBJ_STAT, oid, &r, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0);
	m = msg(SDFS_OP_OBJ_READ, oid, &other, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "another inode");
	m = msg(SDFS_OP_OBJ_READ, oid, &volk, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "a vid, not an ino");
	m = msg(SDFS_OP_OBJ_READ, oid, &bobs, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "bob's cap");
	m = msg(SDFS_OP_OBJ_READ, oid, &rw, key2);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "signed elsewhere");
	m = msg(SDFS_OP_OBJ_READ, oid, &rw, key);
	cr_assert_eq(admit(&alice, key, &m, NOW + 60000, &skip), 0, "last ms");
	cr_assert_eq(admit(&alice, key, &m, NOW + 60001, &skip), -EACCES, "expired");
	cr_assert_eq(admit(&alice, NULL, &m, NOW, &skip), -EACCES, "no key here");
	m.h.payload_len = OBJCAP_WIRE_SIZE - 1;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "short");
}

Test(objcap, admit_volume_caps)
{
	uint8_t key[AUTH_KEY_BYTES];
	struct auth_ident alice = ident("client.alice", 0);
	struct objcap v7 = cap_for("client.alice", OBJCAP_VOL, 7, OBJCAP_RW);
	struct objcap v5 = cap_for("client.alice", OBJCAP_VOL, 5, OBJCAP_R);
	struct msg m;
	uint32_t skip;

	objcap_key(secret, key);
	m = msg(SDFS_OP_OBJ_WRITE, oid_vdata(7, 9, 2), &v7, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0);
	m = msg(SDFS_OP_OBJ_REPLACE, oid_vindex(7, 2), &v7, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "the index too");
	m = msg(SDFS_OP_OBJ_READ, oid_vdata(5, 9, 2), &v5, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "an ancestor's data");
	m = msg(SDFS_OP_OBJ_WRITE, oid_vdata(5, 9, 2), &v5, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "ancestors: read");
	m = msg(SDFS_OP_OBJ_READ, oid_vdata(6, 9, 2), &v7, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "another vid");
	m = msg(SDFS_OP_OBJ_READ, oid_make(OID_KIND_FILE, 7, 0), &v7, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "an ino, not a vid");
	/* the writer raises its vid's fence (oid = the vid), not another's,
	 * never to frozen, not with a read cap */
	m = msg(SDFS_OP_VOL_FENCE, 7, &v7, key);
	m.h.offset = 3;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "its own vid's fence");
	m = msg(SDFS_OP_VOL_FENCE, 7, NULL, key);
	m.h.offset = 3;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "no cap");
	m = msg(SDFS_OP_VOL_FENCE, 5, &v5, key);
	m.h.offset = 3;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "a read cap");
	m = msg(SDFS_OP_VOL_FENCE, 6, &v7, key);
	m.h.offset = 3;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "another vid");
	m = msg(SDFS_OP_VOL_FENCE, 7, &v7, key);
	m.h.offset = SDFS_TOKEN_FROZEN;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "freezing");
}

Test(objcap, admit_privileged_and_open)
{
	uint8_t key[AUTH_KEY_BYTES];
	struct auth_ident alice = ident("client.alice", 0);
	struct auth_ident admin = ident("client.admin", AUTH_CAP_ADMIN);
	struct auth_ident bd = ident("blockd.3", AUTH_CAP_DAEMON);
	struct objcap c = cap_for("client.alice", OBJCAP_FILE, 42, OBJCAP_RW);
	uint64_t raw = oid_make(OID_KIND_RAW, 1, 0), mdsobj = oid_make(OID_KIND_MDS, 1, 0);
	static const unsigned priv_ops[] = {
		SDFS_OP_OBJ_LIST, SDFS_OP_MDS_FENCE,
		SDFS_OP_REPL_WRITE, SDFS_OP_REPL_CREATE, SDFS_OP_REPL_REMOVE,
		SDFS_OP_REPL_REPLACE,
	};
	struct msg m;
	uint32_t skip;

	objcap_key(secret, key);
	/* raw and mds objects, LIST, FLUSH ALL, fences, peer ops: privileged only */
	m = msg(SDFS_OP_OBJ_READ, raw, NULL, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES);
	cr_assert_eq(admit(&admin, key, &m, NOW, &skip), 0);
	cr_assert_eq(skip, 0);
	cr_assert_eq(admit(NULL, NULL, &m, NOW, &skip), 0, "open cluster");
	m = msg(SDFS_OP_OBJ_WRITE, mdsobj, NULL, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES);
	cr_assert_eq(admit(&bd, key, &m, NOW, &skip), 0);
	for (size_t i = 0; i < sizeof(priv_ops) / sizeof(priv_ops[0]); i++) {
		m = msg(priv_ops[i], oid_make(OID_KIND_FILE, 42, 0), &c, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "op %u", priv_ops[i]);
		cr_assert_eq(admit(&bd, key, &m, NOW, &skip), 0, "op %u", priv_ops[i]);
	}
	m = msg(SDFS_OP_OBJ_FLUSH, 0, NULL, key);
	m.h.flags |= SDFS_F_ALL;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "flush all");
	m = msg(SDFS_OP_OBJ_READ, oid_make(OID_KIND_FILE, 42, 0), &c, key);
	m.h.flags |= SDFS_F_RAW;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "raw reads: peers");
	m = msg(SDFS_OP_NODE_INFO, 0, NULL, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "node info: anyone");
	/* the scrub (2.3): anyone looks, admins and daemons start and stop */
	m = msg(SDFS_OP_SCRUB, 0, NULL, key);
	m.h.offset = SDFS_SCRUB_STATUS;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "scrub status: anyone");
	for (uint64_t act = SDFS_SCRUB_START; act <= SDFS_SCRUB_STOP + 1; act++) {
		m.h.offset = act;
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "scrub %" PRIu64,
			     act);
		cr_assert_eq(admit(&admin, key, &m, NOW, &skip), 0, "scrub %" PRIu64, act);
		cr_assert_eq(admit(&bd, key, &m, NOW, &skip), 0, "scrub %" PRIu64, act);
	}
	/* a privileged key's cap is stripped, not checked */
	m = msg(SDFS_OP_OBJ_READ, oid_make(OID_KIND_FILE, 43, 0), &c, key);
	cr_assert_eq(admit(&admin, key, &m, NOW, &skip), 0);
	cr_assert_eq(skip, OBJCAP_WIRE_SIZE);
}

/* SDFS_F_CAP (0x10, MORE on replies) means a cap only on the object ops
 * and VOL_FENCE: elsewhere it is a bit the op does not use, ignored
 * (docs/protocol.md), even with no payload to hold a cap. */
Test(objcap, cap_flag_ignored_on_ops_without_caps)
{
	uint8_t key[AUTH_KEY_BYTES];
	struct auth_ident alice = ident("client.alice", 0);
	struct auth_ident bd = ident("blockd.3", AUTH_CAP_DAEMON);
	struct msg m;
	uint32_t skip;

	objcap_key(secret, key);
	m = msg(SDFS_OP_NODE_INFO, 0, NULL, key);
	m.h.flags |= SDFS_F_CAP;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "node info");
	cr_assert_eq(skip, 0);
	cr_assert_eq(admit(NULL, NULL, &m, NOW, &skip), 0, "node info, open cluster");
	cr_assert_eq(skip, 0);
	m = msg(SDFS_OP_MDS_FENCE, 0, NULL, key);
	m.h.flags |= SDFS_F_CAP;
	cr_assert_eq(admit(&bd, key, &m, NOW, &skip), 0, "mds fence");
	cr_assert_eq(skip, 0);
	cr_assert_eq(admit(NULL, NULL, &m, NOW, &skip), 0, "mds fence, open cluster");
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "still daemons' op");
	/* on an object op it still needs its cap */
	m = msg(SDFS_OP_OBJ_READ, oid_make(OID_KIND_FILE, 42, 0), NULL, key);
	m.h.flags |= SDFS_F_CAP;
	cr_assert_eq(admit(&bd, key, &m, NOW, &skip), -EACCES, "CAP without a cap");
}

/* Strip ops (2.4, ec) of a stripe take the cap of its oid as the
 * object ops do: read for GET and STAT, write for PUT (a tombstone is a
 * PUT) and COMMIT; the same refusals; admin and daemon keys need none. */
Test(objcap, admit_strip_caps)
{
	uint8_t key[AUTH_KEY_BYTES], key2[AUTH_KEY_BYTES];
	struct auth_ident alice = ident("client.alice", 0);
	struct auth_ident admin = ident("client.admin", AUTH_CAP_ADMIN);
	struct auth_ident bd = ident("blockd.3", AUTH_CAP_DAEMON);
	uint64_t file = oid_make(OID_KIND_FILE, 42, 3), vdata = oid_vdata(7, 9, 2);
	struct objcap rw = cap_for("client.alice", OBJCAP_FILE, 42, OBJCAP_RW);
	struct objcap r = cap_for("client.alice", OBJCAP_FILE, 42, OBJCAP_R);
	struct objcap other = cap_for("client.alice", OBJCAP_FILE, 43, OBJCAP_RW);
	struct objcap bobs = cap_for("client.bob", OBJCAP_FILE, 42, OBJCAP_RW);
	struct objcap v7 = cap_for("client.alice", OBJCAP_VOL, 7, OBJCAP_RW);
	static const unsigned reads[] = { SDFS_OP_STRIP_GET, SDFS_OP_STRIP_STAT };
	static const unsigned writes[] = { SDFS_OP_STRIP_PUT, SDFS_OP_STRIP_COMMIT };
	struct msg m;
	uint32_t skip;

	objcap_key(secret, key);
	objcap_key(other_secret, key2);
	cr_assert_eq(objcap_rights_of(&(struct sdfs_hdr){ .opcode = SDFS_OP_STRIP_GET }),
		     OBJCAP_R);
	cr_assert_eq(objcap_rights_of(&(struct sdfs_hdr){ .opcode = SDFS_OP_STRIP_PUT }),
		     OBJCAP_W);
	/* 2.6 read-repair: a write, as PUT */
	cr_assert_eq(objcap_rights_of(&(struct sdfs_hdr){ .opcode = SDFS_OP_STRIP_REPAIR }),
		     OBJCAP_W);
	m = msg(SDFS_OP_STRIP_REPAIR, file, &rw, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "STRIP_REPAIR, rw cap");
	m = msg(SDFS_OP_STRIP_REPAIR, file, &r, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "STRIP_REPAIR, read cap");
	for (unsigned i = 0; i < 2; i++) {
		m = msg(reads[i], file, &r, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "op %u, read cap", reads[i]);
		cr_assert_eq(skip, OBJCAP_WIRE_SIZE, "the cap is stripped");
		m = msg(reads[i], file, NULL, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "op %u, no cap",
			     reads[i]);
		m = msg(reads[i], file, &other, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "op %u, another oid",
			     reads[i]);
		m = msg(reads[i], file, &r, key);
		cr_assert_eq(admit(&alice, key, &m, NOW + 60001, &skip), -EACCES,
			     "op %u, expired", reads[i]);
		m = msg(writes[i], file, &rw, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "op %u, rw cap", writes[i]);
		cr_assert_eq(skip, OBJCAP_WIRE_SIZE);
		m = msg(writes[i], file, &r, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "op %u, read cap",
			     writes[i]);
		m = msg(writes[i], file, NULL, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "op %u, no cap",
			     writes[i]);
		m = msg(writes[i], file, &bobs, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "op %u, bob's",
			     writes[i]);
		m = msg(writes[i], file, &rw, key2);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "op %u, forged",
			     writes[i]);
		m = msg(writes[i], file, &rw, key);
		cr_assert_eq(admit(&alice, key, &m, NOW + 60001, &skip), -EACCES,
			     "op %u, expired", writes[i]);
		/* a volume's stripes: its vid's cap, not an inode's */
		m = msg(writes[i], vdata, &v7, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "op %u, vol", writes[i]);
		m = msg(writes[i], vdata, &rw, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "op %u, an ino's",
			     writes[i]);
		/* a sealed chunk's EC object (oid_vstripe): the vid's cap too */
		m = msg(writes[i], oid_vstripe(7, 9), &v7, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "op %u, vstripe", writes[i]);
		m = msg(writes[i], oid_vstripe(8, 9), &v7, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES,
			     "op %u, another vid's vstripe", writes[i]);
		/* raw oids (sdfs obj --ec): privileged keys only */
		m = msg(writes[i], oid_make(OID_KIND_RAW, 42, 3), &rw, key);
		cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "op %u, raw",
			     writes[i]);
		m = msg(writes[i], oid_make(OID_KIND_RAW, 42, 3), NULL, key);
		cr_assert_eq(admit(&admin, key, &m, NOW, &skip), 0, "op %u, admin", writes[i]);
		cr_assert_eq(skip, 0);
		cr_assert_eq(admit(&bd, key, &m, NOW, &skip), 0, "op %u, daemon", writes[i]);
		m = msg(reads[i], file, &other, key);
		cr_assert_eq(admit(&admin, key, &m, NOW, &skip), 0, "op %u, admin's cap "
			     "stripped, not checked", reads[i]);
		cr_assert_eq(skip, OBJCAP_WIRE_SIZE);
	}
}

/* A sealed file's stripes (oid_fstripe, docs/ec.md "EC files") take the
 * file's cap, owner its inode, as its replicated chunks do. */
Test(objcap, file_stripes_take_the_file_cap)
{
	uint8_t key[AUTH_KEY_BYTES];
	struct auth_ident alice = ident("client.alice", 0);
	uint64_t st = oid_fstripe(42, 3);
	struct objcap rw = cap_for("client.alice", OBJCAP_FILE, 42, OBJCAP_RW);
	struct objcap r = cap_for("client.alice", OBJCAP_FILE, 42, OBJCAP_R);
	struct objcap other = cap_for("client.alice", OBJCAP_FILE, 43, OBJCAP_RW);
	struct objcap vol = cap_for("client.alice", OBJCAP_VOL, 42, OBJCAP_RW);
	unsigned kind;
	uint64_t owner;
	struct msg m;
	uint32_t skip;

	cr_assert_eq(objcap_of_oid(st, &kind, &owner), 0);
	cr_assert_eq(kind, OBJCAP_FILE);
	cr_assert_eq(owner, 42);
	objcap_key(secret, key);
	m = msg(SDFS_OP_STRIP_GET, st, &r, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0);
	m = msg(SDFS_OP_STRIP_PUT, st, &rw, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0);
	m = msg(SDFS_OP_STRIP_PUT, st, &r, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES);
	m = msg(SDFS_OP_STRIP_GET, st, &other, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES);
	m = msg(SDFS_OP_STRIP_GET, st, &vol, key);
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES);
}

/* 2.6: a plain key's writer copies from its own vid's stripe (the
 * backed unseal) and fills one object of its vid; nothing else. */
Test(objcap, admit_stripe_copy_and_one_object_fill)
{
	uint8_t key[AUTH_KEY_BYTES];
	struct auth_ident alice = ident("client.alice", 0);
	struct objcap v7 = cap_for("client.alice", OBJCAP_VOL, 7, OBJCAP_RW);
	struct objcap r7 = cap_for("client.alice", OBJCAP_VOL, 7, OBJCAP_R);
	struct sdfs_obj_copy oc = { .src = oid_vstripe(7, 9), .len = 0,
				    .flags = SDFS_COPY_STRIPE | SDFS_COPY_ZERO |
					     SDFS_COPY_CODE(2, 1) };
	struct msg m;
	uint32_t skip;

	objcap_key(secret, key);
	m = msg(SDFS_OP_OBJ_COPY, oid_vdata(7, 9, 2), &v7, key);
	proto_obj_copy_encode(&oc, m.payload + OBJCAP_WIRE_SIZE);
	m.h.payload_len += SDFS_OBJ_COPY_SIZE;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "from its own stripe");
	cr_assert_eq(skip, OBJCAP_WIRE_SIZE);
	m.h.payload_len = OBJCAP_WIRE_SIZE + 8;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "short");
	oc.src = oid_vstripe(5, 9);
	m = msg(SDFS_OP_OBJ_COPY, oid_vdata(7, 9, 2), &v7, key);
	proto_obj_copy_encode(&oc, m.payload + OBJCAP_WIRE_SIZE);
	m.h.payload_len += SDFS_OBJ_COPY_SIZE;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "an ancestor's stripe");
	oc = (struct sdfs_obj_copy){ .src = oid_vdata(5, 9, 2), .len = 0,
				     .flags = SDFS_COPY_ZERO };
	m = msg(SDFS_OP_OBJ_COPY, oid_vdata(7, 9, 2), &v7, key);
	proto_obj_copy_encode(&oc, m.payload + OBJCAP_WIRE_SIZE);
	m.h.payload_len += SDFS_OBJ_COPY_SIZE;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "a snapshot's copy");
	oc = (struct sdfs_obj_copy){ .src = oid_vstripe(7, 9), .len = 0,
				     .flags = SDFS_COPY_STRIPE | SDFS_COPY_ZERO |
					      SDFS_COPY_CODE(2, 1) };
	m = msg(SDFS_OP_OBJ_COPY, oid_vdata(7, 9, 2), &r7, key);
	proto_obj_copy_encode(&oc, m.payload + OBJCAP_WIRE_SIZE);
	m.h.payload_len += SDFS_OBJ_COPY_SIZE;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "a read cap");

	m = msg(SDFS_OP_OBJ_FILL, oid_vdata(7, 9, 2), &v7, key);
	m.h.offset = 7;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), 0, "one object of its vid");
	m.h.offset = 5;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "another vid's fill");
	m = msg(SDFS_OP_OBJ_FILL, 0, NULL, key);
	m.h.offset = 7;
	cr_assert_eq(admit(&alice, key, &m, NOW, &skip), -EACCES, "a whole vid's fill");
}
