/*
 * zk_acl_test.c - ZooKeeper digest ACLs on sdfs nodes (coord.h,
 * docs/zookeeper.md "Security"), on the run's real ZooKeeper server
 * (SDFS_TEST_ZK, tests/run).
 *
 * A cluster formatted by an admin session (the cluster secret) is
 * secured: a session without credentials, or with a wrong password,
 * reads and changes nothing, and cannot even open; a client session
 * (the sdfs-client password of a keyring's `zk =`) reads what clients
 * read (config, map, mds, members), makes what clients make
 * (clients/<id>, a suspect marker, a volume lock and fence) and nothing
 * else: not auth/, not config, map or members; an admin session does
 * everything, including to the nodes clients made. An open cluster
 * (formatted without credentials) works as before until an admin
 * secures it.
 *
 * Raw ZooKeeper handles (zookeeper.h) check what each identity may do
 * node by node; coord calls check that sdfs's own code paths pass.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "common/cmap.h"
#include "common/coord.h"
#include "common/coord_auth.h"
#include "common/coord_client.h"
#include "common/coord_mds.h"
#include "common/coord_suspect.h"
#include "common/coord_vol.h"
#include "common/keys.h"

static char zk[512], cluster[64], base[128];
static uint8_t secret[AUTH_KEY_BYTES];
static struct coord_cred admin, client;

static void setup(void)
{
	const char *env = getenv("SDFS_TEST_ZK");
	static int seq;

	if (!env)
		cr_skip_test("SDFS_TEST_ZK is not set (run through tests/run)");
	snprintf(zk, sizeof(zk), "%s", env);
	snprintf(cluster, sizeof(cluster), "zkacl%d_%ld_%d", (int)getpid(),
		 (long)time(NULL) % 100000, seq++);
	snprintf(base, sizeof(base), "/sdfs/%s", cluster);
	auth_random_key(secret);
	memset(&admin, 0, sizeof(admin));
	admin.has_secret = 1;
	memcpy(admin.secret, secret, AUTH_KEY_BYTES);
	memset(&client, 0, sizeof(client));
	auth_zk_password(secret, 0, client.zk_pw);
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
}

TestSuite(zk_acl, .init = setup, .timeout = 120);

/* A raw session authenticated as @user:@pw (NULL: none). */
static zhandle_t *raw(const char *user, const char *pw)
{
	zhandle_t *zh = zookeeper_init(zk, NULL, 6000, NULL, NULL, 0);
	char cred[256];

	cr_assert_not_null(zh);
	if (user) {
		snprintf(cred, sizeof(cred), "%s:%s", user, pw);
		cr_assert_eq(zoo_add_auth(zh, "digest", cred, (int)strlen(cred),
					  NULL, NULL), ZOK);
	}
	for (int i = 0; i < 500 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
		usleep(20 * 1000);
	cr_assert_eq(zoo_state(zh), ZOO_CONNECTED_STATE);
	return zh;
}

static zhandle_t *raw_admin(void)
{
	char pw[AUTH_ZK_PW_MAX];

	auth_zk_password(secret, 1, pw);
	return raw("sdfs-admin", pw);
}

static const char *P(const char *rel)
{
	static char bufs[8][256];
	static int i;
	char *b = bufs[i++ % 8];

	snprintf(b, 256, "%s%s%s", base, *rel ? "/" : "", rel);
	return b;
}

static struct coord *open_cred(const struct coord_cred *cr)
{
	struct coord *c = NULL;

	cr_assert_eq(coord_open_cred(zk, cluster, cr, 6000, 10000, NULL, NULL, &c), 0);
	return c;
}

static void format(struct coord *c)
{
	struct cluster_config cfg = { .uuid = "zk-acl-test", .copies = 3,
		.obj_size = 1 << 20, .created = 1, .out_grace_ms = 30000 };

	cr_assert_eq(coord_format(c, &cfg, 0), 0);
}

/* A secured cluster with a member, an mds and a key, as daemons and
 * `sdfs cluster format` leave it. */
static struct coord *secured_cluster(void)
{
	struct coord *a = open_cred(&admin);
	struct cmap_node self = { .node_id = 1, .weight = 100, .state = CMAP_UP };
	struct coord_mds_doc mds = { .name = "mds.a", .addr = "127.0.0.1:1", .epoch = 1 };
	struct keydb_ent e = { .name = "client.admin" };
	char node[64];
	uint64_t epoch;

	format(a);
	cr_assert(coord_secured(a));
	snprintf(self.host, sizeof(self.host), "127.0.0.1");
	self.port = 2;
	cr_assert_eq(coord_member_join(a, &self), 0);
	cr_assert_eq(coord_mds_elect_join(a, &mds, node, sizeof(node)), 0);
	cr_assert_eq(coord_mds_epoch_bump(a, node, &epoch), 0);
	cr_assert_eq(coord_mds_publish(a, &mds), 0);
	auth_random_key(e.key);
	e.caps.flags = AUTH_CAP_ADMIN;
	cr_assert_eq(coord_auth_put(a, secret, &e), 0);
	return a;
}

/* What neither a stranger nor a client may do: read the keys, change
 * the cluster's documents. */
static void expect_no_admin_rights(zhandle_t *zh)
{
	struct String_vector kids = { 0 };
	struct Stat st;
	char buf[4096];
	int len = sizeof(buf);

	cr_expect_eq(zoo_get_children(zh, P("auth"), 0, &kids), ZNOAUTH);
	cr_expect_eq(zoo_get(zh, P("auth/client.admin"), 0, buf, &len, &st), ZNOAUTH);
	cr_expect_eq(zoo_set(zh, P("auth/client.admin"), "x", 1, -1), ZNOAUTH);
	cr_expect_eq(zoo_delete(zh, P("auth/client.admin"), -1), ZNOAUTH);
	cr_expect_eq(zoo_create(zh, P("auth/client.evil"), "x", 1, &ZOO_OPEN_ACL_UNSAFE,
				0, NULL, 0), ZNOAUTH);
	cr_expect_eq(zoo_set(zh, P("config"), "x", 1, -1), ZNOAUTH);
	cr_expect_eq(zoo_set(zh, P("map"), "x", 1, -1), ZNOAUTH);
	cr_expect_eq(zoo_delete(zh, P("map"), -1), ZNOAUTH);
	cr_expect_eq(zoo_set(zh, P("members/1"), "x", 1, -1), ZNOAUTH);
	cr_expect_eq(zoo_delete(zh, P("members/1"), -1), ZNOAUTH);
	cr_expect_eq(zoo_create(zh, P("members/9"), "x", 1, &ZOO_OPEN_ACL_UNSAFE,
				ZOO_EPHEMERAL, NULL, 0), ZNOAUTH);
	cr_expect_eq(zoo_create(zh, P("epochs/0000000099"), "x", 1,
				&ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZNOAUTH);
	cr_expect_eq(zoo_set(zh, P("mds/epoch"), "9\n", 2, -1), ZNOAUTH);
	cr_expect_eq(zoo_set(zh, P("mds/active"), "x", 1, -1), ZNOAUTH);
	cr_expect_eq(zoo_create(zh, P("mds/election/n_x_"), "x", 1, &ZOO_OPEN_ACL_UNSAFE,
				ZOO_EPHEMERAL | ZOO_SEQUENCE, NULL, 0), ZNOAUTH);
	cr_expect_eq(zoo_create(zh, P("nodeids/n"), NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
				ZOO_SEQUENCE, NULL, 0), ZNOAUTH);
	cr_expect_eq(zoo_create(zh, P("evil"), NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
		     ZNOAUTH);
	cr_expect_eq(zoo_set_acl(zh, P("map"), -1, &ZOO_OPEN_ACL_UNSAFE), ZNOAUTH);
	cr_expect_eq(zoo_set_acl(zh, P(""), -1, &ZOO_OPEN_ACL_UNSAFE), ZNOAUTH);
	cr_expect_eq(zoo_delete(zh, base, -1), ZNOAUTH);
}

Test(zk_acl, stranger_reads_and_changes_nothing)
{
	struct coord *a = secured_cluster(), *c = NULL;
	zhandle_t *zh = raw(NULL, NULL);
	zhandle_t *wrong = raw("sdfs-client", "not-the-password");
	struct String_vector kids = { 0 };
	struct Stat st;
	char buf[4096];
	int len = sizeof(buf);

	expect_no_admin_rights(zh);
	expect_no_admin_rights(wrong);
	/* Not even what clients read. */
	cr_expect_eq(zoo_get(zh, P("config"), 0, buf, &len, &st), ZNOAUTH);
	len = sizeof(buf);
	cr_expect_eq(zoo_get(wrong, P("map"), 0, buf, &len, &st), ZNOAUTH);
	cr_expect_eq(zoo_get_children(zh, P("members"), 0, &kids), ZNOAUTH);
	cr_expect_eq(zoo_create(zh, P("clients/00000000000000aa"), NULL, -1,
				&ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZNOAUTH);
	cr_expect_eq(zoo_create(wrong, P("suspects/1"), NULL, -1,
				&ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZNOAUTH);
	cr_expect_eq(zoo_get_children(zh, "/sdfs", 0, &kids), ZNOAUTH);

	/* sdfs itself: coord_open says why. */
	cr_expect_eq(coord_open(zk, cluster, 6000, 10000, NULL, NULL, &c), -EACCES);
	struct coord_cred bad = { 0 };
	snprintf(bad.zk_pw, sizeof(bad.zk_pw), "not-the-password");
	cr_expect_eq(coord_open_cred(zk, cluster, &bad, 6000, 10000, NULL, NULL, &c),
		     -EACCES);
	struct coord_cred other = { .has_secret = 1 };
	auth_random_key(other.secret);
	cr_expect_eq(coord_open_cred(zk, cluster, &other, 6000, 10000, NULL, NULL, &c),
		     -EACCES);

	/* And nothing changed: the admin still reads what it wrote. */
	struct keydb_ent e;
	cr_expect_eq(coord_auth_get(a, secret, "client.admin", &e), 0);
	struct cluster_config cfg;
	cr_expect_eq(coord_config_get(a, &cfg), 0);
	cr_expect_str_eq(cfg.uuid, "zk-acl-test");
	zookeeper_close(zh);
	zookeeper_close(wrong);
	coord_close(a);
}

Test(zk_acl, client_reads_the_map_and_makes_only_its_nodes)
{
	struct coord *a = secured_cluster();
	struct coord *c = open_cred(&client);
	char pw[AUTH_ZK_PW_MAX];
	zhandle_t *zh;
	struct cmap *map = NULL;
	struct cmap_node *members = NULL;
	struct coord_mds_doc *cands = NULL, d;
	struct cluster_config cfg;
	struct keydb_ent e;
	size_t n = 0;
	uint64_t epoch = 0;

	auth_zk_password(secret, 0, pw);
	zh = raw("sdfs-client", pw);
	expect_no_admin_rights(zh);
	zookeeper_close(zh);

	/* What libclient reads. */
	cr_expect(coord_secured(c));
	cr_expect_eq(coord_config_get(c, &cfg), 0);
	cr_expect_eq(coord_map_get(c, 1, &map), 0);
	cr_expect_eq(coord_members_get(c, 0, &members, &n), 0);
	cr_expect_eq(n, 1);
	free(members);
	cr_expect_eq(coord_mds_candidates(c, &cands, &n), 0);
	cr_expect_eq(n, 1);
	free(cands);
	cr_expect_eq(coord_mds_epoch_get(c, 1, &epoch), 0);
	cr_expect_eq(epoch, 1);
	cr_expect_eq(coord_mds_active_get(c, 1, &d), 0);

	/* What it may not: the keys, the map, format, node ids. */
	cr_expect_eq(coord_auth_get(c, secret, "client.admin", &e), -EACCES);
	memset(&e, 0, sizeof(e));
	snprintf(e.name, sizeof(e.name), "client.evil");
	cr_expect_eq(coord_auth_put(c, secret, &e), -EACCES);
	struct cmap *next = NULL;
	cr_assert_eq(cmap_new(map->epoch + 1, NULL, 0, &next), 0);
	cr_expect_eq(coord_map_cas(c, map, next), -EACCES);
	cr_expect_eq(coord_format(c, &cfg, 1), -EACCES);
	uint32_t id;
	cr_expect_eq(coord_node_id_alloc(c, &id), -EACCES);
	cr_expect_eq(coord_secure(c), -EPERM);

	/* What it makes: its lock-holder node, a suspect marker, a volume
	 * lock and its fence. */
	cr_expect_eq(coord_client_register(c, 0xabcdef, "host=x pid=1"), 0);
	uint64_t *ids = NULL;
	cr_expect_eq(coord_client_list(a, &ids, &n), 0);
	cr_expect(coord_client_listed(ids, n, 0xabcdef));
	free(ids);
	cr_expect_eq(coord_suspect_report(c, 7, map->epoch, "client:test", 3), 0);
	char node[COORD_VOL_NODE_MAX];
	cr_expect_eq(coord_vol_lock_join(c, 42, "host=x", node, sizeof(node)), 0);
	cr_expect_eq(coord_vol_lock_first(c, 42, node, NULL, 0), 0);
	struct coord_vol_fset set = { .vid = 5, .token = 1, .version = -1 };
	cr_expect_eq(coord_vol_fence_multi(c, &set, 1, node), 0);
	uint32_t token = 0;
	int32_t version = -1;
	cr_expect_eq(coord_vol_fence_get(c, 5, &token, &version), 0);
	cr_expect_eq(token, 1);
	set.token = 2;
	set.version = version;
	cr_expect_eq(coord_vol_fence_multi(c, &set, 1, node), 0);

	/* Each node a client made is the admin's too (its ACL names
	 * sdfs-admin), and not writable by a stranger. */
	zhandle_t *adm = raw_admin(), *none = raw(NULL, NULL);
	const char *made[] = { "clients/0000000000abcdef", "suspects/7",
			       "vols/fence/5", "vols/locks/42" };
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		struct ACL_vector acl = { 0 };
		struct Stat st;
		int found = 0;

		int rc = zoo_get_acl(adm, P(made[i]), &acl, &st);
		cr_assert_eq(rc, ZOK, "%s: %s", made[i], zerror(rc));
		for (int k = 0; k < acl.count; k++)
			found |= !strcmp(acl.data[k].id.scheme, "digest") &&
				 !strncmp(acl.data[k].id.id, "sdfs-admin:", 11) &&
				 acl.data[k].perms == ZOO_PERM_ALL;
		cr_expect(found, "%s: no sdfs-admin ALL", made[i]);
		for (int k = 0; k < acl.count; k++)
			cr_expect(strcmp(acl.data[k].id.scheme, "world"), "%s: world in ACL",
				  made[i]);
		deallocate_ACL_vector(&acl);
		cr_expect_eq(zoo_set(none, P(made[i]), "x", 1, -1), ZNOAUTH, "%s", made[i]);
	}
	/* The client made no member, and cannot bump the fence below it. */
	cr_expect_eq(zoo_set(none, P("vols/fence/5"), "0\n", 2, -1), ZNOAUTH);
	zookeeper_close(none);
	zookeeper_close(adm);

	/* The daemons' side works on them: ack and clear the marker. */
	cr_expect_eq(coord_suspect_ack(a, 7), 0);
	cr_expect_eq(coord_suspect_clear(a, 7), 0);
	cr_expect_eq(coord_vol_lock_release(c, 42, node), 0);
	cr_expect_eq(coord_client_unregister(c, 0xabcdef), 0);
	cr_expect_eq(coord_vol_fence_delete(a, 5), 0);
	cmap_free(next);
	cmap_free(map);
	coord_close(c);
	coord_close(a);
}

Test(zk_acl, admin_does_everything)
{
	struct coord *a = secured_cluster();
	struct coord *d = open_cred(&admin);    /* a second one: a daemon */
	struct keydb_ent e;
	struct cmap *map = NULL, *next = NULL;
	struct cmap_node nd = { .node_id = 2, .weight = 100, .state = CMAP_UP };
	uint32_t id;

	cr_expect(coord_secured(d));
	cr_expect_eq(coord_auth_get(d, secret, "client.admin", &e), 0);
	cr_expect_eq(coord_auth_put(d, secret, &e), 0);
	cr_expect_eq(coord_node_id_alloc(d, &id), 0);
	snprintf(nd.host, sizeof(nd.host), "127.0.0.1");
	nd.port = 3;
	cr_expect_eq(coord_member_join(d, &nd), 0);
	cr_assert_eq(coord_map_get(d, 0, &map), 0);
	cr_assert_eq(cmap_new(map->epoch + 1, &nd, 1, &next), 0);
	cr_expect_eq(coord_map_cas(d, map, next), 0);
	struct cmap *old = NULL;
	cr_expect_eq(coord_epoch_get(d, map->epoch, &old), 0);
	cmap_free(old);
	cr_expect_eq(coord_auth_del(d, "client.admin"), 0);
	/* Format again (force) keeps it secured. */
	struct cluster_config cfg;
	cr_assert_eq(coord_config_get(d, &cfg), 0);
	cr_expect_eq(coord_format(d, &cfg, 1), 0);
	cr_expect_eq(coord_secure(d), 0);
	zhandle_t *none = raw(NULL, NULL);
	char buf[4096];
	int len = sizeof(buf);
	struct Stat st;
	cr_expect_eq(zoo_get(none, P("map"), 0, buf, &len, &st), ZNOAUTH);
	zookeeper_close(none);
	cmap_free(map);
	cmap_free(next);
	coord_close(d);
	coord_close(a);
}

Test(zk_acl, open_cluster_until_secured)
{
	struct coord *o = open_cred(NULL), *a, *c = NULL;
	struct cmap_node self = { .node_id = 1, .weight = 100, .state = CMAP_UP };
	zhandle_t *none;
	char buf[4096];
	int len = sizeof(buf);
	struct Stat st;

	format(o);                      /* --auth none */
	cr_expect(!coord_secured(o));
	snprintf(self.host, sizeof(self.host), "127.0.0.1");
	self.port = 2;
	cr_assert_eq(coord_member_join(o, &self), 0);
	cr_expect_eq(coord_client_register(o, 1, NULL), 0);
	none = raw(NULL, NULL);
	cr_expect_eq(zoo_get(none, P("map"), 0, buf, &len, &st), ZOK);

	/* A credentialed session on an open cluster leaves it open. */
	a = open_cred(&admin);
	cr_expect(!coord_secured(a));
	cr_expect_eq(coord_client_register(a, 2, NULL), 0);
	len = sizeof(buf);
	cr_expect_eq(zoo_get(none, P("clients/0000000000000002"), 0, buf, &len, &st), ZOK);

	/* Secured by the admin: every node, those of others included. */
	cr_assert_eq(coord_secure(a), 0);
	cr_expect(coord_secured(a));
	const char *rels[] = { "", "config", "map", "members", "members/1", "epochs",
			       "epochs/0000000001", "clients/0000000000000001" };
	for (size_t i = 0; i < sizeof(rels) / sizeof(rels[0]); i++) {
		len = sizeof(buf);
		cr_expect_eq(zoo_get(none, P(rels[i]), 0, buf, &len, &st), ZNOAUTH,
			     "%s", rels[i]);
	}
	cr_expect_eq(zoo_set(none, P("config"), "x", 1, -1), ZNOAUTH);
	cr_expect_eq(coord_open(zk, cluster, 6000, 10000, NULL, NULL, &c), -EACCES);
	c = open_cred(&client);
	cr_expect(coord_secured(c));
	struct cmap *map = NULL;
	cr_expect_eq(coord_map_get(c, 0, &map), 0);
	cmap_free(map);
	coord_close(c);
	zookeeper_close(none);
	coord_close(a);
	coord_close(o);
}

/*
 * A listed server that is down: sessions with credentials open all the
 * same, every time. The library tries the listed servers in a random
 * order; between one that refused and the next one it is in state 0,
 * where zoo_add_auth refuses (ZINVALIDSTATE, as for a closed handle).
 * coord_open used to take that for the end: "cannot reach ZooKeeper:
 * Cannot send after transport endpoint shutdown" from `sdfs cluster
 * status` with one of three servers down (CI, cli_again::
 * dev_up_zk_ensemble_of_three). It happens when the library's thread
 * tried the dead server before the caller added its credentials: a busy
 * host, here several threads opening at once.
 */
#define DEAD_OPENERS 4
#define DEAD_OPENS 25

static char dead_hosts[600];

static int dead_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, len), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);                      /* nobody listens there: refused */
	return port;
}

static void *dead_opener(void *arg)
{
	int *failed = arg;

	for (int i = 0; i < DEAD_OPENS; i++) {
		struct coord *c = NULL;
		int ret = coord_open_cred(dead_hosts, cluster, &admin, 6000, 10000,
					  NULL, NULL, &c);

		if (ret) {
			cr_log_warn("open %d: %s", i, strerror(-ret));
			(*failed)++;
		}
		coord_close(c);
	}
	return NULL;
}

Test(zk_acl, opens_with_a_listed_server_down)
{
	pthread_t th[DEAD_OPENERS];
	int failed[DEAD_OPENERS] = { 0 }, total = 0;
	struct timespec t0, t1;

	snprintf(dead_hosts, sizeof(dead_hosts), "127.0.0.1:%d,%s", dead_port(), zk);
	coord_close(open_cred(&admin));         /* the base: made once */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < DEAD_OPENERS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, dead_opener, &failed[i]), 0);
	for (int i = 0; i < DEAD_OPENERS; i++) {
		pthread_join(th[i], NULL);
		total += failed[i];
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_log_info("%d opens with %s: %d failed, %.2f s", DEAD_OPENERS * DEAD_OPENS,
		    dead_hosts, total, (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	cr_expect_eq(total, 0, "%d of %d opens failed", total, DEAD_OPENERS * DEAD_OPENS);
}
