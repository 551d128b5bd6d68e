/*
 * coord_auth_test.c - the cluster's keys in ZooKeeper (coord_auth.h) on
 * the run's real ZooKeeper server (SDFS_TEST_ZK, tests/run): put, get,
 * list, del; an entry does not open with another secret (-EBADMSG);
 * coord_auth_follow keeps a keydb equal to auth/ through changes and
 * through the loss of its session (expired, reopened).
 *
 * White box for the expiry only: it reads the session's id from
 * coord_int.h to end that session from a second handle.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "common/coord.h"
#include "common/coord_auth.h"
#include "common/coord_int.h"
#include "common/keydb.h"
#include "common/keys.h"

#define WAIT_MS 20000           /* a deadline for a watch to be seen,
				   never a measured bound */

static char zk[512], cluster[64];
static uint8_t secret[AUTH_KEY_BYTES];
static struct coord_cred admin;

static void setup(void)
{
	const char *env = getenv("SDFS_TEST_ZK");

	if (!env)
		cr_skip_test("SDFS_TEST_ZK is not set (run through tests/run)");
	snprintf(zk, sizeof(zk), "%s", env);
	snprintf(cluster, sizeof(cluster), "cauth%d_%ld", (int)getpid(),
		 (long)time(NULL) % 100000);
	auth_random_key(secret);
	memset(&admin, 0, sizeof(admin));
	admin.has_secret = 1;
	memcpy(admin.secret, secret, AUTH_KEY_BYTES);
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
}

TestSuite(coord_auth, .init = setup, .timeout = 120);

static struct coord *open_admin(coord_event_fn fn, void *arg)
{
	struct coord *c = NULL;

	cr_assert_eq(coord_open_cred(zk, cluster, &admin, 6000, 10000, fn, arg, &c), 0);
	return c;
}

static void make_ent(struct keydb_ent *e, const char *name, const char *caps)
{
	char err[128];

	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	auth_random_key(e->key);
	cr_assert_eq(auth_caps_parse(caps, &e->caps, err, sizeof(err)), 0, "%s", err);
}

static void expect_same(const struct keydb_ent *a, const struct keydb_ent *b)
{
	char ca[AUTH_CAPS_STR_MAX], cb[AUTH_CAPS_STR_MAX];

	cr_expect_str_eq(a->name, b->name);
	cr_expect_eq(memcmp(a->key, b->key, AUTH_KEY_BYTES), 0);
	cr_expect_eq(a->prev_until_ms, b->prev_until_ms);
	if (a->prev_until_ms)
		cr_expect_eq(memcmp(a->prev_key, b->prev_key, AUTH_KEY_BYTES), 0);
	cr_assert_eq(auth_caps_format(&a->caps, ca, sizeof(ca)), 0);
	cr_assert_eq(auth_caps_format(&b->caps, cb, sizeof(cb)), 0);
	cr_expect_str_eq(ca, cb);
}

Test(coord_auth, put_get_list_del)
{
	struct coord *c = open_admin(NULL, NULL);
	struct keydb_ent a, b, got, *all = NULL;
	size_t n = 99;

	cr_assert_eq(coord_auth_list(c, secret, &all, &n), 0);
	cr_expect_eq(n, 0);
	free(all);

	make_ent(&a, "client.alice", "rw,path=/projects/a,root_squash,uidmap=1000:2000:10");
	make_ent(&b, "blockd.3", "daemon");
	auth_random_key(b.prev_key);
	b.prev_until_ms = 1790000000000LL;
	cr_assert_eq(coord_auth_put(c, secret, &b), 0);
	cr_assert_eq(coord_auth_put(c, secret, &a), 0);

	cr_assert_eq(coord_auth_get(c, secret, "client.alice", &got), 0);
	expect_same(&a, &got);
	uint64_t gen = got.gen;
	cr_expect_gt(gen, 0);
	cr_assert_eq(coord_auth_get(c, secret, "blockd.3", &got), 0);
	expect_same(&b, &got);

	/* Replaced: new key, new caps, a higher gen. */
	auth_random_key(a.key);
	cr_assert_eq(auth_caps_parse("ro", &a.caps, NULL, 0), 0);
	cr_assert_eq(coord_auth_put(c, secret, &a), 0);
	cr_assert_eq(coord_auth_get(c, secret, "client.alice", &got), 0);
	expect_same(&a, &got);
	cr_expect_gt(got.gen, gen);

	cr_assert_eq(coord_auth_list(c, secret, &all, &n), 0);
	cr_assert_eq(n, 2);
	expect_same(&b, &all[0]);       /* sorted by name */
	expect_same(&a, &all[1]);
	free(all);

	cr_expect_eq(coord_auth_get(c, secret, "client.nobody", &got), -ENOENT);
	cr_expect_eq(coord_auth_del(c, "client.alice"), 0);
	cr_expect_eq(coord_auth_get(c, secret, "client.alice", &got), -ENOENT);
	cr_expect_eq(coord_auth_del(c, "client.alice"), -ENOENT);
	cr_expect_eq(coord_auth_put(c, secret, &(struct keydb_ent){ .name = "a/b" }),
		     -EINVAL);
	coord_close(c);
}

Test(coord_auth, wrong_secret_does_not_open)
{
	struct coord *c = open_admin(NULL, NULL);
	uint8_t other[AUTH_KEY_BYTES];
	struct keydb_ent a, b, got, *all = NULL;
	size_t n = 0;

	auth_random_key(other);
	make_ent(&a, "client.alice", "rw");
	make_ent(&b, "client.bob", "ro");
	cr_assert_eq(coord_auth_put(c, secret, &a), 0);
	/* Sealed with another secret (written by an admin session of ours:
	 * ZooKeeper lets it, the secret is what differs). */
	cr_assert_eq(coord_auth_put(c, other, &b), 0);

	cr_expect_eq(coord_auth_get(c, other, "client.alice", &got), -EBADMSG);
	cr_expect_eq(coord_auth_get(c, secret, "client.bob", &got), -EBADMSG);
	cr_assert_eq(coord_auth_list(c, secret, &all, &n), 0);
	cr_assert_eq(n, 1);             /* bob skipped with a warning */
	cr_expect_str_eq(all[0].name, "client.alice");
	free(all);

	/* An entry copied under another name does not open there. */
	char path[PATH_MAX_LEN * 2], buf[4096];
	int len = sizeof(buf);
	struct Stat st;

	snprintf(path, sizeof(path), "/sdfs/%s/auth/client.alice", cluster);
	cr_assert_eq(zoo_get(c->zh, path, 0, buf, &len, &st), ZOK);
	snprintf(path, sizeof(path), "/sdfs/%s/auth/client.mallory", cluster);
	cr_assert_eq(zoo_create(c->zh, path, buf, len, coord_acl(c, COORD_ACL_ADMIN),
				0, NULL, 0), ZOK);
	cr_expect_eq(coord_auth_get(c, secret, "client.mallory", &got), -EBADMSG);
	/* A flipped byte does not open either. */
	buf[len - 1] ^= 1;
	snprintf(path, sizeof(path), "/sdfs/%s/auth/client.alice", cluster);
	cr_assert_eq(zoo_set(c->zh, path, buf, len, -1), ZOK);
	cr_expect_eq(coord_auth_get(c, secret, "client.alice", &got), -EBADMSG);
	coord_close(c);
}

/* Wait until @db has @name with @key (NULL: until it lacks @name). */
static int wait_db(struct keydb *db, const char *name, const uint8_t *key)
{
	for (int i = 0; i < WAIT_MS / 20; i++) {
		struct keydb_ent e;
		int ret = keydb_get(db, name, &e);

		if (!key && ret == -ENOENT)
			return 1;
		if (key && ret == 0 && !memcmp(e.key, key, AUTH_KEY_BYTES))
			return 1;
		usleep(20 * 1000);
	}
	return 0;
}

static volatile int expired;

static void on_event(enum coord_event ev, void *arg)
{
	(void)arg;
	if (ev == COORD_EV_EXPIRED)
		expired = 1;
}

/* End @c's session from another handle that takes it over. */
static void expire_session(struct coord *c)
{
	const clientid_t *id = zoo_client_id(c->zh);
	zhandle_t *zh = zookeeper_init(zk, NULL, 6000, id, NULL, 0);

	int state = 0;

	cr_assert_not_null(zh);
	/* Expired already (an earlier takeover's close did it and our own
	 * handle has not heard yet): the server says so to this one too. */
	for (int i = 0; i < 500; i++) {
		state = zoo_state(zh);
		if (state == ZOO_CONNECTED_STATE ||
		    state == ZOO_EXPIRED_SESSION_STATE)
			break;
		usleep(20 * 1000);
	}
	cr_assert(state == ZOO_CONNECTED_STATE ||
		  state == ZOO_EXPIRED_SESSION_STATE,
		  "takeover handle neither connected nor expired (%d)", state);
	zookeeper_close(zh);
}

Test(coord_auth, follow)
{
	struct coord *c = open_admin(on_event, NULL);
	struct coord *w = open_admin(NULL, NULL);       /* the writer */
	struct keydb *db;
	struct keydb_ent a, b, e;

	cr_assert_eq(keydb_new(&db), 0);
	make_ent(&a, "client.alice", "rw");
	cr_assert_eq(coord_auth_put(w, secret, &a), 0);
	cr_assert_eq(coord_auth_follow(c, secret, db), 0);
	cr_expect_eq(keydb_count(db), 1);       /* loaded before it returns */
	cr_assert_eq(keydb_get(db, "client.alice", &e), 0);
	cr_expect_eq(memcmp(e.key, a.key, AUTH_KEY_BYTES), 0);
	cr_expect_eq(coord_auth_follow(c, secret, db), -EBUSY);

	/* A new entry (child watch), a changed one (data watch), a removed one. */
	make_ent(&b, "client.bob", "ro");
	cr_assert_eq(coord_auth_put(w, secret, &b), 0);
	cr_expect(wait_db(db, "client.bob", b.key), "new key not seen");
	auth_random_key(a.key);
	cr_assert_eq(coord_auth_put(w, secret, &a), 0);
	cr_expect(wait_db(db, "client.alice", a.key), "changed key not seen");
	cr_assert_eq(keydb_get(db, "client.alice", &e), 0);
	cr_assert_eq(coord_auth_del(w, "client.bob"), 0);
	cr_expect(wait_db(db, "client.bob", NULL), "removed key still there");
	cr_expect_eq(keydb_count(db), 1);

	/* The session is lost: every watch with it. Changes made while it
	 * is away show after the owner reopens it. */
	/* Taken over and closed: expired. Unless our handle, cut off by the
	 * takeover, reconnected first and took it back, so that the close
	 * went nowhere (seen once at load 10): then again. */
	for (int i = 0; i < WAIT_MS / 20 && !expired; i++) {
		if (i % 100 == 0)
			expire_session(c);
		usleep(20 * 1000);
	}
	cr_assert(expired, "session did not expire");
	auth_random_key(a.key);
	cr_assert_eq(coord_auth_put(w, secret, &a), 0);
	make_ent(&b, "client.carol", "rw");
	cr_assert_eq(coord_auth_put(w, secret, &b), 0);
	cr_assert_eq(coord_reopen(c, 10000), 0);
	cr_expect(wait_db(db, "client.alice", a.key), "change while expired not seen");
	cr_expect(wait_db(db, "client.carol", b.key), "new key while expired not seen");
	/* And the watches are armed again. */
	cr_assert_eq(coord_auth_del(w, "client.carol"), 0);
	cr_expect(wait_db(db, "client.carol", NULL), "removed key still there");

	coord_close(c);         /* stops the follower */
	coord_close(w);
	keydb_free(db);
}
