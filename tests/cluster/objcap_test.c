/*
 * objcap_test.c - object capabilities (docs/security.md "Object
 * capabilities") against a real blockd and sdfs-mds with authentication
 * on: a plain client key reads and writes its files and volumes through
 * libsdfs, which asks the mds for caps and sends them, and renews them
 * past their lifetime without the caller noticing; the same key talking
 * to the blockd directly gets nothing without a cap (guessed file, raw
 * and mds object ids, listing), nothing with a cap for another inode,
 * for another key, with too few rights, expired or forged, and changes
 * nothing; a valid cap made by the test (which knows the cluster
 * secret) is taken.
 *
 * The cluster is `sdfs dev up`'s, with its keys (authentication
 * required, each daemon its own key); the test adds its keys (client.t
 * with admin caps, alice and bob with rw) with the admin keyring dev up
 * wrote, DIR/keyring, whose cluster secret also lets it sign caps. The
 * mds is restarted with objcap_lifetime_ms = 10 s, the least it may be.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/conf.h"
#include "common/coord.h"
#include "common/coord_auth.h"
#include "common/keys.h"
#include "common/objcap.h"
#include "common/oid.h"
#include "common/proto.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/tkeys.h"
#include "tests/cluster/wire.h"

#define ROOT 1
#define WAIT_MS 5000
#define LIFETIME_MS 10000
#define ADMIN_KEY "client.t"
#define ALICE "client.alice"
#define BOB "client.bob"

static struct tcluster *tc;
static struct sdfs *admin, *alice;
static char blockd_addr[80];
static uint8_t secret[AUTH_KEY_BYTES], capkey[AUTH_KEY_BYTES], admin_key[AUTH_KEY_BYTES],
	       alice_key[AUTH_KEY_BYTES], bob_key[AUTH_KEY_BYTES];
static uint64_t req_ids = 7000;

static void up(void)
{
	struct sdfs_conf conf;
	struct sdfs_stat st;
	struct coord_cred cred;
	struct keyring kr;
	struct coord *c;
	char path[512], err[256];
	FILE *f;
	int ret = -1;

	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 1, .copies = 1, .mds = 1 });
	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	snprintf(path, sizeof(path), "%s/keyring", tcluster_dir(tc));
	cr_assert_eq(keyring_load(path, &kr, err, sizeof(err)), 0, "%s", err);
	cr_assert(kr.has_secret, "dev up's admin keyring has no secret");
	memcpy(secret, kr.secret, AUTH_KEY_BYTES);
	cr_assert_eq(coord_cred_from_keyring(&kr, &cred), 0);
	objcap_key(secret, capkey);
	auth_random_key(admin_key);
	auth_random_key(alice_key);
	auth_random_key(bob_key);
	cr_assert_eq(coord_open_cred(conf.zk, conf.cluster, &cred, 5000, 10000, NULL, NULL,
				     &c), 0);
	tkeys_put(c, secret, ADMIN_KEY, admin_key, "admin");
	tkeys_put(c, secret, ALICE, alice_key, "rw");
	tkeys_put(c, secret, BOB, bob_key, "rw");
	coord_close(c);

	/* the mds signs caps for LIFETIME_MS: it reads that at start */
	f = fopen(tcluster_conf(tc), "a");
	cr_assert_not_null(f);
	fprintf(f, "objcap_lifetime_ms = %d\n", LIFETIME_MS);
	fclose(f);
	tkeys_dev_restart(tc, "mds.0");
	admin = tkeys_handle(tc, &conf, secret, ADMIN_KEY, admin_key);
	alice = tkeys_handle(tc, &conf, secret, ALICE, alice_key);
	/* the daemons' key tables follow ZooKeeper: the new keys shortly */
	for (int64_t end = tnow_ms() + 60000; ret && tnow_ms() < end; tsleep_ms(200)) {
		ret = sdfs_ns_mkdir(admin, ROOT, "ready", 0755, 0, 0, &st);
		if (ret == -EEXIST)
			ret = 0;
	}
	cr_assert_eq(ret, 0, "the restarted cluster does not serve: %s", strerror(-ret));
	tcluster_node_addr(tc, "blockd.0", blockd_addr, sizeof(blockd_addr));
}

static void down(void)
{
	sdfs_close(alice);
	sdfs_close(admin);
	tcluster_stop(tc);
}

TestSuite(objcap, .init = up, .fini = down, .timeout = 300);

/* ---- helpers ---- */

/* A file of alice's with @len random bytes (seed @seed) at offset 0. */
static void alice_file(const char *name, char *data, size_t len, uint64_t seed,
		       struct sdfs_stat *st)
{
	tfill_random(data, len, seed);
	cr_assert_eq(sdfs_ns_mknod(alice, ROOT, name, S_IFREG | 0600, 0, 1000, 1000, st), 0);
	cr_assert_eq(sdfs_file_pwrite(alice, st, data, len, 0, 0), 0, "alice writes her file");
	st->size = len;         /* as a mount keeps it until it pushes it */
}

/* A raw connection to the blockd, authenticated as @name. */
static int conn_as(const char *name, const uint8_t *key, struct auth_sess *s)
{
	char err[256];
	int fd = wire_connect(blockd_addr);

	cr_assert_eq(wire_auth(fd, name, key, s, err, sizeof(err)), 0, "handshake: %s", err);
	return fd;
}

static struct objcap cap_of(const char *holder, unsigned kind, uint64_t owner,
			    unsigned rights, int64_t expiry_ms)
{
	return (struct objcap){ .kind = (uint8_t)kind, .rights = (uint8_t)rights,
				.epoch = 1, .owner = owner, .expiry_ms = expiry_ms,
				.holder = objcap_holder(holder) };
}

/*
 * Send @op on @oid with @data (@len bytes) and, if @c, that cap signed
 * with @key in front; returns the result, the reply's payload (a read's
 * bytes) in @out (@cap bytes at most; *@got its length).
 */
static uint32_t call(int fd, struct auth_sess *s, unsigned op, uint64_t oid,
		     const struct objcap *c, const uint8_t *key, const void *data,
		     size_t len, void *out, size_t cap, size_t *got)
{
	uint8_t *p = malloc(OBJCAP_WIRE_SIZE + len + 1);
	struct sdfs_hdr h = { .opcode = (uint8_t)op, .req_id = req_ids++, .oid = oid,
			      .epoch = (uint32_t)tcluster_epoch(tc) };
	struct sdfs_hdr r;
	uint8_t rbuf[65536];
	size_t off = 0;

	cr_assert_not_null(p);
	if (op == SDFS_OP_OBJ_WRITE)
		h.flags |= SDFS_F_CREATE;
	if (op == SDFS_OP_OBJ_READ)
		h.length = (uint32_t)cap;
	if (c) {
		objcap_sign(c, key, p);
		h.flags |= SDFS_F_CAP;
		off = OBJCAP_WIRE_SIZE;
	}
	if (len)
		memcpy(p + off, data, len);
	h.payload_len = (uint32_t)(off + len);
	cr_assert_eq(wire_send_req_auth(fd, s, &h, p), 0);
	free(p);
	cr_assert_eq(wire_recv_reply_auth(fd, s, &r, rbuf, sizeof(rbuf), WAIT_MS), 0,
		     "op %s: no reply", proto_op_name(op));
	cr_assert_eq(r.req_id, h.req_id);
	if (got)
		*got = r.payload_len;
	if (out && r.payload_len)
		memcpy(out, rbuf, r.payload_len < cap ? r.payload_len : cap);
	return r.result;
}

/* @st's first object holds @want (@len bytes), as the admin reads it. */
static void assert_unchanged(const struct sdfs_stat *st, const char *want, size_t len)
{
	char back[4096];

	cr_assert_eq(sdfs_file_pread(admin, st, back, len, 0), (ssize_t)len);
	cr_assert_eq(memcmp(back, want, len), 0, "the file changed");
}

/* ---- through libsdfs ---- */

Test(objcap, a_plain_key_reads_and_writes_its_files_through_libsdfs)
{
	char data[4096], back[4096];
	struct sdfs_stat st;

	alice_file("a1", data, sizeof(data), 1, &st);
	cr_assert_eq(sdfs_file_pread(alice, &st, back, sizeof(back), 0), (ssize_t)sizeof(back));
	cr_assert_eq(memcmp(back, data, sizeof(data)), 0);
	/* the caps expire; the handle asks for new ones, unseen */
	cr_log_info("waiting a cap's lifetime (%d ms)", LIFETIME_MS);
	tsleep_ms(LIFETIME_MS + 1000);
	tfill_random(data, sizeof(data), 2);
	cr_assert_eq(sdfs_file_pwrite(alice, &st, data, sizeof(data), 0, 0), 0,
		     "a write after the cap's lifetime");
	cr_assert_eq(sdfs_file_pread(alice, &st, back, sizeof(back), 0), (ssize_t)sizeof(back));
	cr_assert_eq(memcmp(back, data, sizeof(data)), 0);
	assert_unchanged(&st, data, sizeof(data));
}

Test(objcap, a_plain_key_uses_its_volumes_and_their_snapshots)
{
	char a[8192], b[8192], back[8192];
	struct sdfs_vol_info vi;
	struct sdfs_stat st;
	struct sdfs_vol *v;

	tfill_random(a, sizeof(a), 3);
	tfill_random(b, sizeof(b), 4);
	cr_assert_eq(sdfs_vol_create(alice, ROOT, "v1", 0600, 1000, 1000, 1 << 20, 0, 0,
				     &st), 0);
	int ret = sdfs_vol_open(alice, st.ino, SDFS_VOL_WRITE, "t", &v);

	cr_assert_eq(ret, 0, "open: %s", strerror(-ret));
	cr_assert_eq(sdfs_vol_pwrite(v, a, sizeof(a), 0), 0);
	cr_assert_eq(sdfs_vol_flush(v), 0);
	/* the snapshot freezes the vid: the data read next belongs to the
	 * ancestor, written next to the new live vid */
	cr_assert_eq(sdfs_vol_snap_create(alice, st.ino, "s1", &vi), 0);
	cr_assert_eq(sdfs_vol_pwrite(v, b, 4096, 4096), 0);
	cr_assert_eq(sdfs_vol_pread(v, back, sizeof(back), 0), (ssize_t)sizeof(back));
	cr_assert_eq(memcmp(back, a, 4096), 0, "the ancestor's chunk part");
	cr_assert_eq(memcmp(back + 4096, b, 4096), 0, "the new write");
	sdfs_vol_close(v);
	cr_assert_eq(sdfs_vol_open_snap(alice, st.ino, "s1", &v), 0);
	cr_assert_eq(sdfs_vol_pread(v, back, sizeof(back), 0), (ssize_t)sizeof(back));
	cr_assert_eq(memcmp(back, a, sizeof(a)), 0, "the snapshot");
	sdfs_vol_close(v);
}

/* ---- straight to the blockd ---- */

Test(objcap, guessed_ids_get_nothing_without_a_cap)
{
	char data[4096], junk[4096], back[4096];
	struct sdfs_stat st;
	struct auth_sess s;
	size_t got = 0;
	int fd;

	alice_file("g1", data, sizeof(data), 5, &st);
	tfill_random(junk, sizeof(junk), 6);
	fd = conn_as(ALICE, alice_key, &s);
	uint64_t oid = oid_make(OID_KIND_FILE, st.ino, 0);

	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_READ, oid, NULL, NULL, NULL, 0, back,
			  sizeof(back), &got), SDFS_RES_CAP);
	cr_assert_eq(got, 0, "no bytes come with a refusal");
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_WRITE, oid, NULL, NULL, junk, sizeof(junk),
			  NULL, 0, NULL), SDFS_RES_CAP);
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_REMOVE, oid, NULL, NULL, NULL, 0, NULL, 0,
			  NULL), SDFS_RES_CAP);
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_STAT, oid, NULL, NULL, NULL, 0, NULL, 0,
			  NULL), SDFS_RES_CAP);
	/* the mds's database, raw objects, and the list of them: never */
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_READ, oid_make(OID_KIND_MDS, 0, 0), NULL,
			  NULL, NULL, 0, back, sizeof(back), NULL), SDFS_RES_CAP);
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_WRITE, oid_make(OID_KIND_RAW, 7, 0), NULL,
			  NULL, junk, 16, NULL, 0, NULL), SDFS_RES_CAP);
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_LIST, 0, NULL, NULL, NULL, 0, NULL, 0, NULL),
		     SDFS_RES_CAP);
	close(fd);
	assert_unchanged(&st, data, sizeof(data));
}

Test(objcap, caps_for_something_else_get_nothing)
{
	char data[4096], junk[4096], back[4096];
	struct sdfs_stat st;
	struct auth_sess s;
	int64_t later = objcap_now_ms() + 60000;
	uint8_t forged[AUTH_KEY_BYTES];
	int fd;

	alice_file("c1", data, sizeof(data), 7, &st);
	tfill_random(junk, sizeof(junk), 8);
	auth_random_key(forged);
	fd = conn_as(ALICE, alice_key, &s);
	uint64_t oid = oid_make(OID_KIND_FILE, st.ino, 0);
	struct objcap other_ino = cap_of(ALICE, OBJCAP_FILE, st.ino + 1, OBJCAP_RW, later);
	struct objcap bobs = cap_of(BOB, OBJCAP_FILE, st.ino, OBJCAP_RW, later);
	struct objcap ro = cap_of(ALICE, OBJCAP_FILE, st.ino, OBJCAP_R, later);
	struct objcap expired = cap_of(ALICE, OBJCAP_FILE, st.ino, OBJCAP_RW,
				       objcap_now_ms() - 1);
	struct objcap a_vid = cap_of(ALICE, OBJCAP_VOL, st.ino, OBJCAP_RW, later);
	struct objcap good = cap_of(ALICE, OBJCAP_FILE, st.ino, OBJCAP_RW, later);

	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_WRITE, oid, &other_ino, capkey, junk,
			  sizeof(junk), NULL, 0, NULL), SDFS_RES_CAP, "another inode's");
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_WRITE, oid, &bobs, capkey, junk,
			  sizeof(junk), NULL, 0, NULL), SDFS_RES_CAP, "bob's");
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_WRITE, oid, &ro, capkey, junk,
			  sizeof(junk), NULL, 0, NULL), SDFS_RES_CAP, "read only");
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_WRITE, oid, &expired, capkey, junk,
			  sizeof(junk), NULL, 0, NULL), SDFS_RES_CAP, "expired");
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_WRITE, oid, &a_vid, capkey, junk,
			  sizeof(junk), NULL, 0, NULL), SDFS_RES_CAP, "a volume's");
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_WRITE, oid, &good, forged, junk,
			  sizeof(junk), NULL, 0, NULL), SDFS_RES_CAP, "not the cluster's key");
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_READ, oid, &expired, capkey, NULL, 0, back,
			  sizeof(back), NULL), SDFS_RES_CAP, "expired");
	assert_unchanged(&st, data, sizeof(data));
	/* the mechanics are right: the cluster's cap for it is taken, and
	 * the cap's bytes are not part of the data */
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_READ, oid, &ro, capkey, NULL, 0, back,
			  sizeof(back), NULL), SDFS_RES_OK);
	cr_assert_eq(memcmp(back, data, sizeof(data)), 0);
	cr_assert_eq(call(fd, &s, SDFS_OP_OBJ_WRITE, oid, &good, capkey, junk,
			  sizeof(junk), NULL, 0, NULL), SDFS_RES_OK);
	close(fd);
	assert_unchanged(&st, junk, sizeof(junk));
}
