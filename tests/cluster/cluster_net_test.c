/*
 * cluster_net_test.c - the cluster network (sdfs.conf cluster_addr,
 * sdfs-blockd --cluster-listen; docs/operations.md "Two networks"):
 * block daemons reach each other on their cluster addresses, clients
 * stay on the public ones, and the cluster address takes daemon keys
 * only.
 *
 * Three tests, a cluster each, about 4 s in all on 2 cores.
 * The cluster is `sdfs dev up --cluster-net`: blockd.N listens on
 * 127.0.0.1:P (public) and 127.0.1.(N+1):P (cluster). Which address a
 * peer connection went to is read from the kernel: the TCP sockets each
 * daemon holds (/proc/PID/fd) matched against /proc/net/tcp's remote
 * addresses. Needs root (another user's /proc/PID/fd), as the cluster
 * tests run.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "common/auth.h"
#include "common/cmap.h"
#include "common/conf.h"
#include "common/coord.h"
#include "common/keys.h"
#include "common/oid.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"

#define NBLOCKD 3
#define NOBJ 24
#define OBJ_LEN (64u << 10)

static struct tcluster *tc;

/* One block daemon: its addresses from the map, its pid. */
struct bnode {
	char name[16];
	uint32_t id;
	pid_t pid;
	struct cmap_node nd;
};

static struct bnode bn[NBLOCKD];

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NBLOCKD, .copies = 3,
						    .cluster_net = 1 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(cluster_net, .init = up, .fini = down, .timeout = 180);

static void load_keyring(const char *rel, struct keyring *kr)
{
	char path[1024], err[256];

	snprintf(path, sizeof(path), "%s/%s", tcluster_dir(tc), rel);
	cr_assert_eq(keyring_load(path, kr, err, sizeof(err)), 0, "%s", err);
}

/* Every block daemon's map entry (the one the daemons route by) and pid. */
static void read_nodes(void)
{
	struct sdfs_conf conf;
	struct coord_cred cred;
	struct keyring kr;
	struct coord *c;
	struct cmap *m;
	char err[256];

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	load_keyring("keyring", &kr);
	cr_assert_eq(coord_cred_from_keyring(&kr, &cred), 0);
	cr_assert_eq(coord_open_cred(conf.zk, conf.cluster, &cred, 5000, 10000, NULL,
				     NULL, &c), 0);
	cr_assert_eq(coord_map_get(c, 0, &m), 0);
	for (unsigned i = 0; i < NBLOCKD; i++) {
		const struct cmap_node *nd;

		snprintf(bn[i].name, sizeof(bn[i].name), "blockd.%u", i);
		bn[i].id = tcluster_node_id(tc, bn[i].name);
		bn[i].pid = tcluster_pid(tc, bn[i].name);
		nd = cmap_find(m, bn[i].id);
		cr_assert_not_null(nd, "%s (node %u) not in the map", bn[i].name, bn[i].id);
		bn[i].nd = *nd;
		cr_log_info("%s: node %u public %s:%u cluster %s:%u pid %d", bn[i].name,
			    nd->node_id, nd->host, nd->port, nd->chost, nd->cport,
			    (int)bn[i].pid);
		cr_assert_neq(nd->cport, 0, "%s has no cluster address in the map",
			      bn[i].name);
		cr_assert_str_neq(nd->chost, nd->host, "%s: cluster address is the "
				  "public one", bn[i].name);
	}
	cmap_free(m);
	coord_close(c);
}

/* Is socket inode @ino one of @pid's? */
static int pid_has_socket(pid_t pid, unsigned long ino)
{
	char dir[64], path[320], link[64], want[40];
	struct dirent *e;
	DIR *d;
	int found = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	snprintf(want, sizeof(want), "socket:[%lu]", ino);
	d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while (!found && (e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = !strcmp(link, want);
	}
	closedir(d);
	return found;
}

/*
 * Established connections that daemon @from holds to "@host:@port" (as
 * their remote end): /proc/net/tcp (addresses as the kernel's u32,
 * ports in hex; state 01 is ESTABLISHED) matched to @from's sockets.
 */
static unsigned conns_to(pid_t from, const char *host, uint16_t port)
{
	struct in_addr want;
	unsigned count = 0;
	char line[512];
	FILE *f;

	cr_assert_eq(inet_pton(AF_INET, host, &want), 1, "%s", host);
	f = fopen("/proc/net/tcp", "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned laddr, lport, raddr, rport, st;
		unsigned long ino;

		if (sscanf(line, " %*d: %X:%X %X:%X %X %*X:%*X %*X:%*X %*X %*u %*u %lu",
			   &laddr, &lport, &raddr, &rport, &st, &ino) != 6)
			continue;
		if (st != 1 || raddr != want.s_addr || rport != port || !ino)
			continue;
		count += pid_has_socket(from, ino);
	}
	fclose(f);
	return count;
}

static uint64_t obj(unsigned i)
{
	return oid_make(OID_KIND_FILE, 7171, i);
}

/*
 * With copies = 3 on three nodes every write reaches all three: each
 * node is the primary of some objects (its REPL_* ops go to the other
 * two) and a replica of the others. Afterwards every replica holds the
 * same bytes, every node has been reached by a peer on its cluster
 * address, and no daemon holds a connection to another's public one.
 */
Test(cluster_net, replication_runs_on_the_cluster_addresses)
{
	struct sdfs *s = tcluster_client(tc);
	char *buf = malloc(OBJ_LEN), *got = malloc(OBJ_LEN);
	uint64_t seed = tseed("cluster_net");

	cr_assert(buf && got);
	read_nodes();
	for (unsigned o = 0; o < NOBJ; o++) {
		tfill_random(buf, OBJ_LEN, seed + o);
		cr_assert_eq(sdfs_obj_put(s, obj(o), buf, OBJ_LEN), 0, "put %u", o);
		/* an overwrite too: WRITE goes through the primary as well */
		cr_assert_eq(sdfs_obj_write(s, obj(o), buf, 4096, OBJ_LEN - 4096), 0,
			     "write %u", o);
	}
	for (unsigned o = 0; o < NOBJ; o++) {
		struct sdfs_replica rep[NBLOCKD];
		size_t n = 0;

		cr_assert_eq(sdfs_obj_locate(s, obj(o), rep, NBLOCKD, &n), 0);
		cr_assert_eq(n, NBLOCKD, "object %u placed on %zu nodes", o, n);
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(rep[i].result, 0, "object %u not on node %u: %s", o,
				     rep[i].node_id, strerror(-rep[i].result));
			cr_assert(rep[i].size == OBJ_LEN && rep[i].csum == rep[0].csum,
				  "object %u: node %u has %" PRIu64 " bytes csum %016" PRIx64
				  ", node %u %016" PRIx64, o, rep[i].node_id, rep[i].size,
				  rep[i].csum, rep[0].node_id, rep[0].csum);
		}
		tfill_random(buf, OBJ_LEN, seed + o);
		memcpy(buf + OBJ_LEN - 4096, buf, 4096);        /* the overwrite */
		cr_assert_eq(sdfs_obj_read(s, obj(o), got, OBJ_LEN, 0), (ssize_t)OBJ_LEN);
		cr_assert(!memcmp(got, buf, OBJ_LEN), "object %u reads back other bytes", o);
	}
	unsigned to_cluster = 0;

	for (unsigned y = 0; y < NBLOCKD; y++) {
		unsigned in_cluster = 0, in_public = 0;

		for (unsigned x = 0; x < NBLOCKD; x++) {
			if (x == y)
				continue;
			in_cluster += conns_to(bn[x].pid, bn[y].nd.chost, bn[y].nd.cport);
			in_public += conns_to(bn[x].pid, bn[y].nd.host, bn[y].nd.port);
		}
		cr_log_info("%s: %u peer connections on its cluster address, %u on its "
			    "public one", bn[y].name, in_cluster, in_public);
		cr_assert_gt(in_cluster, 0, "no peer reached %s on its cluster address "
			     "%s:%u", bn[y].name, bn[y].nd.chost, bn[y].nd.cport);
		cr_assert_eq(in_public, 0, "peers reached %s on its public address",
			     bn[y].name);
		to_cluster += in_cluster;
	}
	cr_log_info("%u peer connections in all, every one on a cluster address",
		    to_cluster);
	free(buf);
	free(got);
}

/* Peer connections daemon @x holds to the others' cluster and public
 * addresses, into *@cl and *@pub. */
static void peer_conns_of(unsigned x, unsigned *cl, unsigned *pub)
{
	*cl = *pub = 0;
	for (unsigned y = 0; y < NBLOCKD; y++) {
		if (y == x)
			continue;
		*cl += conns_to(bn[x].pid, bn[y].nd.chost, bn[y].nd.cport);
		*pub += conns_to(bn[x].pid, bn[y].nd.host, bn[y].nd.port);
	}
}

/*
 * Recovery copies go over the cluster network too: a node killed while
 * every object changed fetches them all from its peers on its return,
 * on their cluster addresses (its connections after the restart are
 * recovery's: it is a replica of everything, so no client write it
 * orders meanwhile).
 */
Test(cluster_net, recovery_fetches_on_the_cluster_addresses)
{
	struct sdfs *s = tcluster_client(tc);
	char *buf = malloc(OBJ_LEN);
	uint64_t seed = tseed("cluster_net recovery");
	struct sdfs_node_status st;
	unsigned cl, pub;

	cr_assert(buf);
	read_nodes();
	for (unsigned o = 0; o < NOBJ; o++) {
		tfill_random(buf, OBJ_LEN, seed + o);
		cr_assert_eq(sdfs_obj_put(s, obj(o), buf, OBJ_LEN), 0, "put %u", o);
	}
	cr_assert_eq(tcluster_kill(tc, bn[2].name), 0);
	cr_assert_eq(tcluster_wait_state(tc, bn[2].name, "down", TCLUSTER_WAIT_MS), 0);
	for (unsigned o = 0; o < NOBJ; o++) {
		tfill_random(buf, OBJ_LEN, seed + 1000 + o);
		cr_assert_eq(sdfs_obj_put(s, obj(o), buf, OBJ_LEN), 0, "put %u with %s "
			     "down", o, bn[2].name);
	}
	cr_assert_eq(tcluster_restart(tc, bn[2].name), 0);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	cr_assert_eq(tcluster_node_status(tc, bn[2].name, &st), 0);
	cr_log_info("%s fetched %" PRIu64 " objects on its return", bn[2].name,
		    st.moved_objs);
	cr_assert_eq(st.moved_objs, NOBJ);
	read_nodes();   /* its new pid */
	peer_conns_of(2, &cl, &pub);
	cr_log_info("%s after recovery: %u connections to its peers' cluster "
		    "addresses, %u to their public ones", bn[2].name, cl, pub);
	cr_assert_gt(cl, 0, "recovery did not use the cluster addresses");
	cr_assert_eq(pub, 0, "recovery connected to the public addresses");
	for (unsigned o = 0; o < NOBJ; o++) {
		struct sdfs_replica rep[NBLOCKD];
		size_t n = 0;

		cr_assert_eq(sdfs_obj_locate(s, obj(o), rep, NBLOCKD, &n), 0);
		for (size_t i = 0; i < n; i++)
			cr_assert(rep[i].result == 0 && rep[i].csum == rep[0].csum,
				  "object %u differs on node %u", o, rep[i].node_id);
	}
	free(buf);
}

/*
 * The cluster address takes daemon keys only: the admin key (a client
 * key, however privileged) is refused there with a reason naming the
 * public address, and the daemon logs it; the same key is welcome on
 * the public address, and a daemon key on the cluster one.
 */
Test(cluster_net, client_keys_are_refused_on_the_cluster_address)
{
	struct keyring admin, daemon;
	struct auth_sess sess;
	char addr[96], err[256];
	int fd, ret;

	read_nodes();
	load_keyring("keyring", &admin);
	load_keyring("keys/blockd.0.keyring", &daemon);

	snprintf(addr, sizeof(addr), "%s:%u", bn[1].nd.chost, bn[1].nd.cport);
	fd = wire_connect(addr);
	err[0] = '\0';
	ret = wire_auth(fd, admin.name, admin.key, &sess, err, sizeof(err));
	cr_log_info("%s as %s: %d (%s)", addr, admin.name, ret, err);
	cr_assert_eq(ret, -EACCES, "a client key got in on the cluster address %s", addr);
	cr_assert(strstr(err, "not a daemon key") && strstr(err, "clients use"),
		  "refusal without its reason: '%s'", err);
	cr_assert_eq(wire_wait_closed(fd, 5000), 0, "not closed after the refusal");
	close(fd);
	char *line = tcluster_log_line(tc, bn[1].name, "refused on the cluster address",
				       10000);
	cr_assert_not_null(line, "%s logged no refusal", bn[1].name);
	cr_assert(strstr(line, admin.name), "the log line names no key: %s", line);
	free(line);

	snprintf(addr, sizeof(addr), "%s:%u", bn[1].nd.host, bn[1].nd.port);
	fd = wire_connect(addr);
	ret = wire_auth(fd, admin.name, admin.key, &sess, err, sizeof(err));
	cr_assert_eq(ret, 0, "the admin key on the public address %s: %s", addr, err);
	close(fd);

	snprintf(addr, sizeof(addr), "%s:%u", bn[1].nd.chost, bn[1].nd.cport);
	fd = wire_connect(addr);
	ret = wire_auth(fd, daemon.name, daemon.key, &sess, err, sizeof(err));
	cr_assert_eq(ret, 0, "a daemon key on the cluster address %s: %s", addr, err);
	close(fd);
}
