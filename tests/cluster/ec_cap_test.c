/*
 * ec_cap_test.c - object capabilities for the strips of erasure-coded
 * objects (docs/security.md "Object capabilities", docs/ec.md) against
 * three real block daemons and an sdfs-mds with authentication on:
 *
 *   a_plain_key_uses_its_stripes_through_libsdfs
 *                      a client key (rw, no admin) puts, reads (whole
 *                      and a range) and removes 2+1 stripes of its file's
 *                      and its volume's data oids through libsdfs, which
 *                      asks the mds for the oid's cap once a block daemon
 *                      refuses it and sends it with every strip request
 *                      (also a 1+1 strip as long as the object: the
 *                      largest request); raw oids stay refused (-EACCES)
 *   a_read_only_key_reads_but_cannot_put_or_remove
 *                      a read-only key reads the stripe, its put and
 *                      removal get -EACCES and change nothing
 *   a_key_gets_no_stripes_outside_its_path
 *                      a path=/d key uses the stripes of its file in /d;
 *                      it reads, puts and removes nothing of a file's
 *                      or volume's stripes outside /d
 *   strips_without_a_cap_get_nothing
 *                      the client key on the wire, no cap: STRIP_STAT,
 *                      GET, PUT, a tombstone PUT and COMMIT all refused
 *                      CAP, the stripe unchanged
 *   caps_for_something_else_get_nothing
 *                      the same with caps the test signs (it knows the
 *                      cluster secret): another oid's, a volume's of the
 *                      same number, another key's, a read cap for
 *                      PUT/tombstone/COMMIT, an expired one, one signed
 *                      with another key; a good read cap is taken (STAT
 *                      lists the node's strip), a good write cap passes
 *                      the check (COMMIT of a version not there: NO_OBJ)
 *   admin_keys_need_no_cap
 *                      an admin key puts, reads and removes raw and file
 *                      oids' stripes, and STATs on the wire without a cap
 *
 * The cluster is `sdfs dev up`'s (authentication required); the test adds
 * client.t (admin), client.alice (rw), client.carol (ro), client.dave
 * (rw, path=/d) with the admin
 * keyring dev up wrote (DIR/keyring), whose secret also signs caps.
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
#include "common/policy.h"
#include "common/proto.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/tkeys.h"
#include "tests/cluster/wire.h"

#define K 2
#define M 1
#define ROOT 1
#define WAIT_MS 5000
#define LEN (100 * 1024 + 17)
#define ADMIN_KEY "client.t"
#define ALICE "client.alice"
#define BOB "client.bob"
#define CAROL "client.carol"
#define DAVE "client.dave"      /* rw, path=/d */

static struct tcluster *tc;
static struct sdfs *admin, *alice, *carol, *dave;
static char blockd_addr[80];
static uint8_t secret[AUTH_KEY_BYTES], capkey[AUTH_KEY_BYTES], admin_key[AUTH_KEY_BYTES],
	       alice_key[AUTH_KEY_BYTES], carol_key[AUTH_KEY_BYTES],
	       dave_key[AUTH_KEY_BYTES];
static uint64_t req_ids = 9000;

static void up(void)
{
	struct sdfs_conf conf;
	struct sdfs_stat st;
	struct coord_cred cred;
	struct keyring kr;
	struct coord *c;
	char path[512], err[256];
	int ret = -1;

	tc = tcluster_start(&(struct tcluster_opts){ .blockd = K + M, .mds = 1 });
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
	auth_random_key(carol_key);
	auth_random_key(dave_key);
	cr_assert_eq(coord_open_cred(conf.zk, conf.cluster, &cred, 5000, 10000, NULL, NULL,
				     &c), 0);
	tkeys_put(c, secret, ADMIN_KEY, admin_key, "admin");
	tkeys_put(c, secret, ALICE, alice_key, "rw");
	tkeys_put(c, secret, CAROL, carol_key, "ro");
	tkeys_put(c, secret, DAVE, dave_key, "rw,path=/d");
	coord_close(c);
	admin = tkeys_handle(tc, &conf, secret, ADMIN_KEY, admin_key);
	alice = tkeys_handle(tc, &conf, secret, ALICE, alice_key);
	carol = tkeys_handle(tc, &conf, secret, CAROL, carol_key);
	dave = tkeys_handle(tc, &conf, secret, DAVE, dave_key);
	/* the daemons' key tables follow ZooKeeper: the new keys shortly */
	for (int64_t end = tnow_ms() + 60000; ret && tnow_ms() < end; tsleep_ms(200)) {
		ret = sdfs_ns_mkdir(alice, ROOT, "ready", 0755, 0, 0, &st);
		if (ret == -EEXIST)
			ret = 0;
	}
	cr_assert_eq(ret, 0, "the cluster does not serve alice: %s", strerror(-ret));
	cr_assert_eq(sdfs_ns_mkdir(admin, ROOT, "d", 0777, 0, 0, &st), 0);
	cr_assert_eq(tcluster_wait_nodes_up(tc, K + M, 30000), 0);
	tcluster_node_addr(tc, "blockd.0", blockd_addr, sizeof(blockd_addr));
	/* ... and the block daemons' tables too, each key on each */
	for (unsigned b = 0; b < K + M; b++) {
		const char *names[] = { ADMIN_KEY, ALICE, CAROL, DAVE };
		const uint8_t *keys[] = { admin_key, alice_key, carol_key, dave_key };
		char name[32], addr[80];

		snprintf(name, sizeof(name), "blockd.%u", b);
		tcluster_node_addr(tc, name, addr, sizeof(addr));
		for (unsigned i = 0; i < 4; i++) {
			ret = -1;
			for (int64_t end = tnow_ms() + 60000; ret && tnow_ms() < end;) {
				struct auth_sess as;
				int fd = wire_connect(addr);

				ret = wire_auth(fd, names[i], keys[i], &as, err, sizeof(err));
				close(fd);
				if (ret)
					tsleep_ms(200);
			}
			cr_assert_eq(ret, 0, "%s does not know %s: %s", name, names[i], err);
		}
	}
}

static void down(void)
{
	sdfs_close(dave);
	sdfs_close(carol);
	sdfs_close(alice);
	sdfs_close(admin);
	tcluster_stop(tc);
}

TestSuite(ec_cap, .init = up, .fini = down, .timeout = 300);

/* ---- helpers ---- */

/* A file of alice's (0644: others may read it); the oid of its chunk
 * @chunk (its replicated object's, and its stripe's). */
static uint64_t alice_file(const char *name, uint64_t chunk)
{
	struct sdfs_stat st;

	cr_assert_eq(sdfs_ns_mknod(alice, ROOT, name, S_IFREG | 0644, 0, 1000, 1000, &st), 0);
	return oid_file(st.ino, chunk, 0);
}

/* @oid (@k+@m) reads back as @want (@len bytes) through @s. */
static void assert_reads_km(struct sdfs *s, uint64_t oid, unsigned k, unsigned m,
			    const uint8_t *want, size_t len)
{
	uint8_t *back = malloc(len + 1);
	ssize_t got;

	cr_assert_not_null(back);
	got = sdfs_ec_read(s, oid, k, m, back, len + 1, 0);
	cr_assert_eq(got, (ssize_t)len, "read %016" PRIx64 ": %zd", oid, got);
	cr_assert_eq(memcmp(back, want, len), 0, "%016" PRIx64 " reads other bytes", oid);
	free(back);
}

static void assert_reads(struct sdfs *s, uint64_t oid, const uint8_t *want, size_t len)
{
	assert_reads_km(s, oid, K, M, want, len);
}

/* A put, a whole read and a range read, a removal, a read of nothing. */
static void put_read_remove(struct sdfs *s, uint64_t oid, uint64_t seed)
{
	uint8_t *data = malloc(LEN), piece[5000];
	int ret;

	cr_assert_not_null(data);
	tfill_random(data, LEN, seed);
	ret = sdfs_ec_put(s, oid, K, M, data, LEN);
	cr_assert_eq(ret, 0, "put %016" PRIx64 ": %s", oid, strerror(-ret));
	assert_reads(s, oid, data, LEN);
	cr_assert_eq(sdfs_ec_read(s, oid, K, M, piece, sizeof(piece), 60000),
		     (ssize_t)sizeof(piece));
	cr_assert_eq(memcmp(piece, data + 60000, sizeof(piece)), 0, "a range");
	ret = sdfs_ec_remove(s, oid, K, M);
	cr_assert_eq(ret, 0, "remove %016" PRIx64 ": %s", oid, strerror(-ret));
	cr_assert_eq(sdfs_ec_read(s, oid, K, M, piece, sizeof(piece), 0), -ENOENT);
	free(data);
}

/* A raw connection to blockd.0, authenticated as @name. */
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
 * Send strip op @op on @oid with sdfs_strip @st (none for STAT), @data
 * bytes after it (@len), and, if @c, that cap signed with @key in front;
 * the result, and the reply's payload length in *@got.
 */
static uint32_t strip_call(int fd, struct auth_sess *s, unsigned op, uint64_t oid,
			   const struct sdfs_strip *st, const void *data, size_t len,
			   const struct objcap *c, const uint8_t *key, size_t *got)
{
	uint8_t *p = malloc(OBJCAP_WIRE_SIZE + SDFS_STRIP_SIZE + len + 1);
	struct sdfs_hdr h = { .opcode = (uint8_t)op, .req_id = req_ids++, .oid = oid,
			      .epoch = (uint32_t)tcluster_epoch(tc) };
	struct sdfs_hdr r;
	static uint8_t rbuf[1 << 20];
	size_t off = 0;

	cr_assert_not_null(p);
	if (c) {
		objcap_sign(c, key, p);
		h.flags |= SDFS_F_CAP;
		off = OBJCAP_WIRE_SIZE;
	}
	if (st) {
		proto_strip_encode(st, p + off);
		off += SDFS_STRIP_SIZE;
	}
	if (len)
		memcpy(p + off, data, len);
	if (op == SDFS_OP_STRIP_GET)
		h.length = 4096;
	h.payload_len = (uint32_t)(off + len);
	cr_assert_eq(wire_send_req_auth(fd, s, &h, p), 0);
	free(p);
	cr_assert_eq(wire_recv_reply_auth(fd, s, &r, rbuf, sizeof(rbuf), WAIT_MS), 0,
		     "op %s: no reply", proto_op_name(op));
	cr_assert_eq(r.req_id, h.req_id);
	if (got)
		*got = r.payload_len;
	return r.result;
}

/* Every mutation and read of @oid's strips there is, with cap @c (NULL:
 * none): each must be refused CAP, with no bytes. @ver names a version
 * (a stored one, so a request that got past the check would change it). */
static void all_refused(int fd, struct auth_sess *s, uint64_t oid, uint64_t ver,
			const struct objcap *c, const uint8_t *key, const char *what)
{
	static uint8_t junk[4096];
	struct sdfs_strip st = { .version = ver + 1, .tag = 77, .obj_size = sizeof(junk),
				 .strip_len = sizeof(junk), .k = K, .m = M };
	struct sdfs_strip tomb = { .version = ver + 1, .tag = 78, .k = K, .m = M,
				   .flags = SDFS_STRIP_TOMB };
	struct sdfs_strip get = { .version = ver, .k = K, .m = M };
	size_t got = 1;

	for (unsigned i = 0; i < K + M; i++) {
		st.s = tomb.s = get.s = (uint8_t)i;
		cr_assert_eq(strip_call(fd, s, SDFS_OP_STRIP_PUT, oid, &st, junk, sizeof(junk),
					c, key, NULL), SDFS_RES_CAP, "%s: PUT of strip %u",
			     what, i);
		cr_assert_eq(strip_call(fd, s, SDFS_OP_STRIP_PUT, oid, &tomb, NULL, 0, c, key,
					NULL), SDFS_RES_CAP, "%s: tombstone %u", what, i);
		cr_assert_eq(strip_call(fd, s, SDFS_OP_STRIP_COMMIT, oid, &tomb, NULL, 0, c,
					key, NULL), SDFS_RES_CAP, "%s: COMMIT %u", what, i);
		if (c && (c->rights & OBJCAP_R) && c->expiry_ms > objcap_now_ms() &&
		    c->holder == objcap_holder(ALICE) && key == capkey)
			continue;       /* a read cap of this oid: reads pass */
		cr_assert_eq(strip_call(fd, s, SDFS_OP_STRIP_GET, oid, &get, NULL, 0, c, key,
					&got), SDFS_RES_CAP, "%s: GET %u", what, i);
		cr_assert_eq(got, 0, "no bytes with a refusal");
	}
	if (c && (c->rights & OBJCAP_R) && c->expiry_ms > objcap_now_ms() &&
	    c->holder == objcap_holder(ALICE) && key == capkey)
		return;
	cr_assert_eq(strip_call(fd, s, SDFS_OP_STRIP_STAT, oid, NULL, NULL, 0, c, key, &got),
		     SDFS_RES_CAP, "%s: STAT", what);
	cr_assert_eq(got, 0, "no list with a refusal");
}

/* @oid put by alice with @seed's bytes; its version. */
static uint64_t alice_stripe(uint64_t oid, uint64_t seed, uint8_t *data)
{
	struct sdfs_ec_rstat rs;
	uint8_t back[64];

	tfill_random(data, LEN, seed);
	cr_assert_eq(sdfs_ec_put(alice, oid, K, M, data, LEN), 0);
	cr_assert_eq(sdfs_ec_read_ex(alice, oid, K, M, back, sizeof(back), 0, &rs),
		     (ssize_t)sizeof(back));
	return rs.version;
}

/* ---- through libsdfs ---- */

Test(ec_cap, a_plain_key_uses_its_stripes_through_libsdfs)
{
	struct sdfs_vol_info vi;
	struct sdfs_stat st;
	uint8_t data[64];
	int ret;

	/* alice's first strip request goes without a cap, is refused, and
	 * the put asks the mds for one and goes again */
	put_read_remove(alice, alice_file("f1", 0), 1);
	put_read_remove(alice, alice_file("f2", 3), 2);
	cr_assert_eq(sdfs_vol_create(alice, ROOT, "v1", 0600, 1000, 1000, 1 << 20, 0, 0,
				     &st), 0);
	cr_assert_eq(sdfs_vol_info(alice, st.ino, NULL, &vi), 0);
	put_read_remove(alice, oid_vdata(vi.vid, 2, vi.copies), 3);
	/* 1+1: one strip as long as the object, with its cap in front: the
	 * largest strip request there is */
	uint32_t max = sdfs_obj_size(alice);
	uint8_t *big = malloc(max);
	uint64_t oid = alice_file("f3", 1);

	cr_assert_not_null(big);
	tfill_random(big, max, 11);
	ret = sdfs_ec_put(alice, oid, 1, 1, big, max);
	cr_assert_eq(ret, 0, "a 1+1 put of %u bytes: %s", max, strerror(-ret));
	assert_reads_km(alice, oid, 1, 1, big, max);
	cr_assert_eq(sdfs_ec_remove(alice, oid, 1, 1), 0);
	free(big);
	/* raw oids (sdfs obj --ec): no cap covers them */
	tfill_random(data, sizeof(data), 4);
	ret = sdfs_ec_put(alice, oid_make(OID_KIND_RAW, 0xec, 1), K, M, data, sizeof(data));
	cr_assert_eq(ret, -EACCES, "raw put: %s", strerror(-ret));
	ret = (int)sdfs_ec_read(alice, oid_make(OID_KIND_RAW, 0xec, 1), K, M, data,
				sizeof(data), 0);
	cr_assert_eq(ret, -EACCES, "raw read: %s", strerror(-ret));
}

/* An erasure-coded volume of alice's (docs/ec.md "EC volumes"): her
 * writer seals its chunks (oid_vstripe: the vid's cap covers them),
 * reads them back, and a write into a sealed chunk unseals it. Failed
 * with EACCES while objcap_of_oid knew only the replicated forms. */
Test(ec_cap, a_plain_key_seals_and_unseals_its_ec_volume)
{
	enum { OSZ = 1 << 20, SIZE = 3 * OSZ };
	struct sdfs_vol_seal_stat ss = { 0 };
	uint8_t *model = malloc(SIZE), *got = malloc(SIZE);
	struct sdfs_stat st;
	struct sdfs_vol *v;
	int ret;

	cr_assert(model && got);
	ret = sdfs_vol_create(alice, ROOT, "ecv", 0600, 1000, 1000, SIZE, policy_ec(K, M), OSZ,
			      &st);
	cr_assert_eq(ret, 0, "create: %s", strerror(-ret));
	ret = sdfs_vol_open(alice, st.ino, SDFS_VOL_WRITE, "ec_cap", &v);
	cr_assert_eq(ret, 0, "open: %s", strerror(-ret));
	tfill_random(model, SIZE, 21);
	cr_assert_eq(sdfs_vol_pwrite(v, model, SIZE, 0), 0);
	ret = sdfs_vol_seal(v, NULL, NULL, &ss);
	cr_assert_eq(ret, 0, "seal: %s", strerror(-ret));
	cr_assert_eq(ss.sealed, 3, "sealed %" PRIu64 " of 3", ss.sealed);
	cr_assert(sdfs_vol_chunk_sealed(v, 1));
	cr_assert_eq(sdfs_vol_pread(v, got, SIZE, 0), (ssize_t)SIZE);
	cr_assert_arr_eq(got, model, SIZE, "the sealed volume reads back");
	tfill_random(model + OSZ + 4096, 4096, 22);
	ret = sdfs_vol_pwrite(v, model + OSZ + 4096, 4096, OSZ + 4096);
	cr_assert_eq(ret, 0, "a write into a sealed chunk: %s", strerror(-ret));
	cr_assert(!sdfs_vol_chunk_sealed(v, 1));
	cr_assert_eq(sdfs_vol_pread(v, got, SIZE, 0), (ssize_t)SIZE);
	cr_assert_arr_eq(got, model, SIZE, "after the unseal");
	sdfs_vol_close(v);
	free(model);
	free(got);
}

Test(ec_cap, a_read_only_key_reads_but_cannot_put_or_remove)
{
	uint64_t oid = alice_file("r1", 0);
	uint8_t *data = malloc(LEN), *junk = malloc(LEN);
	int ret;

	cr_assert(data && junk);
	alice_stripe(oid, 5, data);
	assert_reads(carol, oid, data, LEN);
	tfill_random(junk, LEN, 6);
	ret = sdfs_ec_put(carol, oid, K, M, junk, LEN);
	cr_assert_eq(ret, -EACCES, "a read-only key's put: %s", strerror(-ret));
	ret = sdfs_ec_remove(carol, oid, K, M);
	cr_assert_eq(ret, -EACCES, "a read-only key's removal: %s", strerror(-ret));
	assert_reads(alice, oid, data, LEN);
	free(junk);
	free(data);
}

/* A key's path= bounds its stripes as it bounds its files: the mds
 * grants no cap for a file or volume outside it. */
Test(ec_cap, a_key_gets_no_stripes_outside_its_path)
{
	uint64_t oid = alice_file("p1", 0);
	uint8_t *data = malloc(LEN), *junk = malloc(LEN);
	struct sdfs_vol_info vi;
	struct sdfs_stat st;
	int ret;

	cr_assert(data && junk);
	/* inside its path (its root is /d) it works: its key is known */
	ret = -1;
	for (int64_t end = tnow_ms() + 60000; ret && tnow_ms() < end; tsleep_ms(200))
		ret = sdfs_ns_mknod(dave, ROOT, "mine", S_IFREG | 0600, 0, 1000, 1000, &st);
	cr_assert_eq(ret, 0, "dave's file in /d: %s", strerror(-ret));
	put_read_remove(dave, oid_file(st.ino, 0, 0), 15);
	alice_stripe(oid, 12, data);
	tfill_random(junk, LEN, 13);
	ret = (int)sdfs_ec_read(dave, oid, K, M, junk, LEN, 0);
	cr_assert(ret == -EACCES || ret == -ENOENT, "a read outside: %d", ret);
	ret = sdfs_ec_put(dave, oid, K, M, junk, LEN);
	cr_assert(ret == -EACCES || ret == -ENOENT, "a put outside: %d", ret);
	ret = sdfs_ec_remove(dave, oid, K, M);
	cr_assert(ret == -EACCES || ret == -ENOENT, "a removal outside: %d", ret);
	assert_reads(alice, oid, data, LEN);
	/* a volume outside: the same */
	cr_assert_eq(sdfs_vol_create(alice, ROOT, "pv", 0666, 1000, 1000, 1 << 20, 0, 0,
				     &st), 0);
	cr_assert_eq(sdfs_vol_info(alice, st.ino, NULL, &vi), 0);
	oid = oid_vdata(vi.vid, 0, vi.copies);
	alice_stripe(oid, 14, data);
	ret = sdfs_ec_put(dave, oid, K, M, junk, LEN);
	cr_assert(ret == -EACCES || ret == -ENOENT, "a volume's put outside: %d", ret);
	assert_reads(alice, oid, data, LEN);
	free(junk);
	free(data);
}

/* ---- straight to a block daemon ---- */

Test(ec_cap, strips_without_a_cap_get_nothing)
{
	uint64_t oid = alice_file("w1", 0);
	uint8_t *data = malloc(LEN);
	struct auth_sess s;
	uint64_t ver;
	int fd;

	cr_assert_not_null(data);
	ver = alice_stripe(oid, 7, data);
	fd = conn_as(ALICE, alice_key, &s);
	all_refused(fd, &s, oid, ver, NULL, NULL, "no cap");
	close(fd);
	assert_reads(alice, oid, data, LEN);
	free(data);
}

Test(ec_cap, caps_for_something_else_get_nothing)
{
	uint64_t oid = alice_file("w2", 0), other = alice_file("w3", 0);
	uint64_t ino = oid_owner(oid);
	uint8_t *data = malloc(LEN), forged[AUTH_KEY_BYTES];
	int64_t later = objcap_now_ms() + 60000;
	struct auth_sess s;
	uint64_t ver;
	size_t got = 0;
	int fd;

	cr_assert_not_null(data);
	auth_random_key(forged);
	ver = alice_stripe(oid, 8, data);
	struct objcap of_other = cap_of(ALICE, OBJCAP_FILE, oid_owner(other), OBJCAP_RW, later);
	struct objcap a_vid = cap_of(ALICE, OBJCAP_VOL, ino, OBJCAP_RW, later);
	struct objcap bobs = cap_of(BOB, OBJCAP_FILE, ino, OBJCAP_RW, later);
	struct objcap ro = cap_of(ALICE, OBJCAP_FILE, ino, OBJCAP_R, later);
	struct objcap expired = cap_of(ALICE, OBJCAP_FILE, ino, OBJCAP_RW, objcap_now_ms() - 1);
	struct objcap good = cap_of(ALICE, OBJCAP_FILE, ino, OBJCAP_RW, later);

	fd = conn_as(ALICE, alice_key, &s);
	all_refused(fd, &s, oid, ver, &of_other, capkey, "another oid's cap");
	all_refused(fd, &s, oid, ver, &a_vid, capkey, "a vid's cap");
	all_refused(fd, &s, oid, ver, &bobs, capkey, "bob's cap");
	all_refused(fd, &s, oid, ver, &ro, capkey, "a read cap");
	all_refused(fd, &s, oid, ver, &expired, capkey, "an expired cap");
	all_refused(fd, &s, oid, ver, &good, forged, "not the cluster's key");
	/* the mechanics are right: the cluster's caps for it are taken (and
	 * their bytes are not the request's) */
	cr_assert_eq(strip_call(fd, &s, SDFS_OP_STRIP_STAT, oid, NULL, NULL, 0, &ro, capkey,
				&got), SDFS_RES_OK, "STAT with a read cap");
	cr_assert_eq(got, SDFS_STRIP_SIZE, "blockd.0 holds one strip of the 2+1 stripe");
	struct sdfs_strip gone = { .version = ver + 1000, .k = K, .m = M };

	cr_assert_eq(strip_call(fd, &s, SDFS_OP_STRIP_COMMIT, oid, &gone, NULL, 0, &good,
				capkey, NULL), SDFS_RES_NO_OBJ, "COMMIT with a write cap "
		     "gets past the check");
	close(fd);
	assert_reads(alice, oid, data, LEN);
	free(data);
}

Test(ec_cap, admin_keys_need_no_cap)
{
	struct auth_sess s;
	size_t got = 1;
	int fd;

	put_read_remove(admin, oid_make(OID_KIND_RAW, 0xec, 2), 9);
	put_read_remove(admin, alice_file("a1", 0), 10);
	fd = conn_as(ADMIN_KEY, admin_key, &s);
	cr_assert_eq(strip_call(fd, &s, SDFS_OP_STRIP_STAT, oid_make(OID_KIND_RAW, 0xec, 3),
				NULL, NULL, 0, NULL, NULL, &got), SDFS_RES_OK);
	cr_assert_eq(got, 0, "nothing there");
	close(fd);
}
