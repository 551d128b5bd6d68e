/*
 * main.c - sdfs-blockd: options, start-up and shutdown.
 *
 * Start-up order: the keyring (--keyring, else sdfs.conf's), ZooKeeper
 * session (with the keyring's credentials), wait for the cluster to be
 * formatted, with authentication the key table (coord_auth_follow) and
 * our own key for the peer pools, open the object store, the MDS fence and the (empty,
 * unsynced) volume fences, node id, listen,
 * register, serve. The scrub (scrub.h) starts with recovery.
 * SIGTERM/SIGINT stop it cleanly (the member znode goes at once).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockd/blockd.h"
#include "blockd/strip_recover.h"
#include "blockd/stripstore.h"
#include "blockd/backing.h"
#include "blockd/copy.h"
#include "blockd/fence.h"
#include "blockd/lease.h"
#include "blockd/order.h"
#include "blockd/vfence.h"

/* Ordered mutations in flight at once on this node as primary; each
 * thread mostly waits for the replicas' answers. */
#define ORDER_THREADS 32
#define COPY_THREADS 8         /* OBJ_COPY workers (copy.h) */
#include "common/auth.h"
#include "common/coord_auth.h"
#include "common/log.h"
#include "common/net.h"
#include "common/rpc.h"
#include "common/version.h"

static struct loop *main_loop;

/*
 * The object store keeps up to 512 objects open for writes, beside the
 * connections: raise the soft fd limit to the hard one (systemd's
 * default soft limit is 1024).
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warn("cannot raise the open file limit: %s", strerror(errno));
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: sdfs-blockd --dir DIR [options]\n"
"Store sdfs objects in DIR and serve them over TCP.\n"
"\n"
"  -d, --dir DIR          data directory (required; created if missing)\n"
"  -l, --listen HOST:PORT address to listen on (default: the config's\n"
"                         public_addr, else 127.0.0.1, port 7000)\n"
"      --cluster-listen HOST:PORT  the cluster network: where the other\n"
"                         block daemons connect (daemon keys only; default:\n"
"                         the config's cluster_addr on the public port,\n"
"                         else none: peers use the public address)\n"
"  -c, --conf FILE        cluster config file (default $SDFS_CONF, then %s)\n"
"  -k, --keyring FILE     this daemon's key (default: the config's keyring =)\n"
"      --zk HOSTS         ZooKeeper hosts, overrides the config file\n"
"      --cluster NAME     cluster name, overrides the config file\n"
"  -z, --zone N           failure domain; copies go to distinct zones (default 0)\n"
"  -w, --weight N         placement weight (default: capacity in GiB, at least 1)\n"
"  -t, --io-threads N     disk I/O threads (default 8)\n"
"      --recovery-threads N objects recovered in parallel (default 2)\n"
"      --recovery-mbps N    recovery bandwidth cap in MB/s (default 200)\n"
"      --scrub-mbps N     the scrub reads at most N MB/s (default: the\n"
"                         config's scrub_mbps, else 50)\n"
"      --scrub-interval S a full scrub pass at least every S seconds\n"
"                         (default: the config's scrub_interval_s, else\n"
"                         604800, a week; 0: only on demand)\n"
"  -v, --log-level LEVEL  err, warn, info or debug (default info)\n"
"  -V, --version          print the version and exit\n"
"  -h, --help             this help\n", CONF_DEFAULT_PATH);
}

static void on_signal(int sig)
{
	(void)sig;
	if (main_loop)
		loop_stop(main_loop);
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_args(struct blockd *bd, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "listen", required_argument, NULL, 'l' },
		{ "cluster-listen", required_argument, NULL, 'L' },
		{ "conf", required_argument, NULL, 'c' },
		{ "keyring", required_argument, NULL, 'k' },
		{ "zk", required_argument, NULL, 'Z' },
		{ "cluster", required_argument, NULL, 'C' },
		{ "zone", required_argument, NULL, 'z' },
		{ "weight", required_argument, NULL, 'w' },
		{ "io-threads", required_argument, NULL, 't' },
		{ "recovery-threads", required_argument, NULL, 'R' },
		{ "recovery-mbps", required_argument, NULL, 'B' },
		{ "scrub-mbps", required_argument, NULL, 'S' },
		{ "scrub-interval", required_argument, NULL, 'I' },
		{ "log-level", required_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *conf_file = NULL, *zk = NULL, *cluster = NULL;
	const char *listen = NULL, *clisten = NULL;
	char def_listen[300], def_clisten[300];
	uint32_t threads = 8, v;
	char err[256];
	int c, lvl, rate_set = 0, interval_set = 0;

	while ((c = getopt_long(argc, argv, "d:l:c:k:z:w:t:v:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (strlen(optarg) >= sizeof(bd->dir) - 64) {
				fprintf(stderr, "sdfs-blockd: --dir path too long\n");
				return -1;
			}
			strcpy(bd->dir, optarg);
			break;
		case 'l': listen = optarg; break;
		case 'L': clisten = optarg; break;
		case 'c': conf_file = optarg; break;
		case 'k':
			if (strlen(optarg) >= sizeof(bd->keyring)) {
				fprintf(stderr, "sdfs-blockd: --keyring path too long\n");
				return -1;
			}
			strcpy(bd->keyring, optarg);
			break;
		case 'Z': zk = optarg; break;
		case 'C': cluster = optarg; break;
		case 'z':
			if (parse_u32(optarg, &bd->zone)) {
				fprintf(stderr, "sdfs-blockd: bad --zone '%s'\n", optarg);
				return -1;
			}
			break;
		case 'w':
			if (parse_u32(optarg, &bd->weight) || bd->weight == 0) {
				fprintf(stderr, "sdfs-blockd: bad --weight '%s'\n", optarg);
				return -1;
			}
			break;
		case 't':
			if (parse_u32(optarg, &threads) || threads == 0 || threads > 256) {
				fprintf(stderr, "sdfs-blockd: bad --io-threads '%s'\n", optarg);
				return -1;
			}
			break;
		case 'R':
			if (parse_u32(optarg, &v) || v == 0 || v > 16) {
				fprintf(stderr, "sdfs-blockd: bad --recovery-threads '%s' "
					"(1..16)\n", optarg);
				return -1;
			}
			bd->rec_opts.threads = (int)v;
			break;
		case 'B':
			if (parse_u32(optarg, &v) || v == 0) {
				fprintf(stderr, "sdfs-blockd: bad --recovery-mbps '%s'\n", optarg);
				return -1;
			}
			bd->rec_opts.mbps = v;
			break;
		case 'S':
			if (parse_u32(optarg, &v) || v == 0 || v > 100000) {
				fprintf(stderr, "sdfs-blockd: bad --scrub-mbps '%s' "
					"(1..100000)\n", optarg);
				return -1;
			}
			bd->scrub_opts.rate = (uint64_t)v * 1000 * 1000;
			rate_set = 1;
			break;
		case 'I':
			if (parse_u32(optarg, &v)) {
				fprintf(stderr, "sdfs-blockd: bad --scrub-interval '%s' "
					"(seconds)\n", optarg);
				return -1;
			}
			bd->scrub_opts.interval_s = v;
			interval_set = 1;
			break;
		case 'v':
			lvl = log_level_parse(optarg);
			if (lvl < 0) {
				fprintf(stderr, "sdfs-blockd: bad --log-level '%s'\n", optarg);
				return -1;
			}
			log_level = lvl;
			break;
		case 'V':
			printf("sdfs-blockd %s\n", SDFS_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc || !bd->dir[0]) {
		fprintf(stderr, "sdfs-blockd: %s\n", optind != argc ?
			"unexpected argument" : "--dir is required");
		return -1;
	}
	bd->io_threads = (int)threads;
	if (conf_resolve(conf_file, zk, cluster, &bd->conf, err, sizeof(err))) {
		fprintf(stderr, "sdfs-blockd: %s\n", err);
		return -1;
	}
	/* the scrub's: the command line, else sdfs.conf (its defaults) */
	if (!rate_set)
		bd->scrub_opts.rate = (uint64_t)bd->conf.scrub_mbps * 1000 * 1000;
	if (!interval_set)
		bd->scrub_opts.interval_s = (uint64_t)bd->conf.scrub_interval_s;
	if (!listen) {          /* the config's public_addr */
		snprintf(def_listen, sizeof(def_listen), "%s:7000",
			 bd->conf.public_addr[0] ? bd->conf.public_addr : "127.0.0.1");
		listen = def_listen;
	}
	if (net_parse_addr(listen, bd->host, sizeof(bd->host), &bd->port) ||
	    bd->port == 0) {
		fprintf(stderr, "sdfs-blockd: bad --listen '%s' (want HOST:PORT)\n", listen);
		return -1;
	}
	if (!clisten && bd->conf.cluster_addr[0]) {     /* on the public port */
		snprintf(def_clisten, sizeof(def_clisten), "%s:%u",
			 bd->conf.cluster_addr, bd->port);
		clisten = def_clisten;
	}
	if (clisten && (net_parse_addr(clisten, bd->chost, sizeof(bd->chost),
				       &bd->cport) || bd->cport == 0)) {
		fprintf(stderr, "sdfs-blockd: bad --cluster-listen or cluster_addr '%s' "
			"(want HOST:PORT, HOST)\n", clisten);
		return -1;
	}
	if (clisten && bd->cport == bd->port && !strcmp(bd->chost, bd->host)) {
		fprintf(stderr, "sdfs-blockd: the cluster address %s is the public "
			"one: leave cluster_addr unset instead\n", clisten);
		return -1;
	}
	return 0;
}

/* Block until `sdfs cluster format` has run. */
static int wait_formatted(struct blockd *bd)
{
	int logged = 0;

	for (;;) {
		int ret = coord_config_get(bd->coord, &bd->cfg);

		if (ret != -ENOENT)
			return ret;
		if (!logged++)
			log_info("cluster=%s is not formatted yet; waiting "
				 "(run: sdfs cluster format)", bd->conf.cluster);
		usleep(300 * 1000);
		if (main_loop == NULL && bd->stopping)
			return -EINTR;
	}
}

static char ident[80];

/*
 * With the cluster's auth required: the key table from ZooKeeper (kept
 * current), and our own key for the connections we open (peers, order.c,
 * recover.c: their pools are made after this). 0 or -errno, logged.
 */
static int auth_setup(struct blockd *bd, const struct keyring *kr, int have_kr)
{
	struct auth_cred cred;
	int ret;

	bd->auth = bd->cfg.auth == CMAP_AUTH_REQUIRED;
	if (!bd->auth) {
		rpc_set_default_auth(0, NULL);
		return 0;
	}
	ret = coord_auth_daemon_keys(bd->coord, kr, have_kr, bd->conf.cluster, &bd->keydb);
	/* a key just added works at once (client_conn.c reads it) */
	if (!ret)
		ret = coord_auth_fetch_misses(bd->coord, bd->keydb);
	if (ret)
		return ret;
	auth_cred_of(kr, &cred);
	rpc_set_default_auth(1, &cred);
	ops_set_secret(bd, kr->secret);  /* object capabilities (ops.c) */
	log_info("authentication required: key %s, %zu keys known", kr->name,
		 keydb_count(bd->keydb));
	return 0;
}

int main(int argc, char **argv)
{
	struct blockd bd = { .listen_fd = -1, .cluster_fd = -1 };
	struct sigaction sa = { .sa_handler = on_signal };
	static struct keyring kr;       /* the secret outlives main's frames */
	struct coord_cred cred, *credp = NULL;
	char err[256];
	int ret, have_kr;

	if (parse_args(&bd, argc, argv))
		return 2;
	snprintf(ident, sizeof(ident), "blockd[%d]", getpid());
	log_set_ident(ident);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (mkdir(bd.dir, 0755) < 0 && errno != EEXIST) {
		log_err("mkdir %s: %s", bd.dir, strerror(errno));
		return 1;
	}
	ret = auth_keyring_open(bd.keyring, bd.conf.keyring, bd.conf.keyring_set, &kr,
				err, sizeof(err));
	have_kr = ret == 0;
	if (ret && ret != -ENOENT) {
		log_err("%s", err);
		return 1;
	}
	if (have_kr && coord_cred_from_keyring(&kr, &cred) == 0)
		credp = &cred;
	ret = loop_new(&bd.loop);
	if (ret)
		goto out;
	ret = coord_open_cred(bd.conf.zk, bd.conf.cluster, credp, bd.conf.session_ms,
			      15000, member_on_event, &bd, &bd.coord);
	if (ret) {
		log_err("cannot reach ZooKeeper at %s: %s", bd.conf.zk, strerror(-ret));
		goto out_loop;
	}
	ret = wait_formatted(&bd);
	if (ret) {
		log_err("cluster=%s: cannot read cluster config: %s", bd.conf.cluster,
			strerror(-ret));
		goto out_coord;
	}
	ret = auth_setup(&bd, &kr, have_kr);
	if (ret)
		goto out_coord;
	ret = objstore_open(bd.dir, bd.cfg.obj_size, &bd.store);
	if (ret) {
		log_err("%s: cannot open object store: %s", bd.dir, strerror(-ret));
		goto out_coord;
	}
	ret = stripstore_open(bd.dir, bd.cfg.obj_size, &bd.strips);
	if (ret) {
		log_err("%s: cannot open the strip store: %s", bd.dir, strerror(-ret));
		goto out_store;
	}
	ret = fence_open(bd.dir, &bd.fence);
	if (ret) {
		log_err("%s: cannot read the mds fence: %s", bd.dir, strerror(-ret));
		goto out_store;
	}
	ret = vfence_open(&bd.vfence);
	if (ret)
		goto out_store;
	/* ZooKeeper may be slow to answer under load: retry for a while. */
	for (int64_t end = net_now_ms() + 30000;;) {
		ret = member_node_id_load(&bd);
		if (ret != -ETIMEDOUT || net_now_ms() > end)
			break;
		log_warn("ZooKeeper slow to answer; retrying");
		usleep(500 * 1000);
	}
	if (ret) {
		log_err("%s: cannot get a node id: %s", bd.dir, strerror(-ret));
		goto out_store;
	}
	if (!bd.weight) {
		uint64_t used, total;

		bd.weight = 1;
		if (objstore_space(bd.store, &used, &total) == 0 && total >> 30)
			bd.weight = (uint32_t)(total >> 30);
	}
	snprintf(ident, sizeof(ident), "blockd.n%" PRIu32, bd.node_id);
	bd.listen_fd = net_listen(bd.host, bd.port, NULL);
	if (bd.listen_fd < 0) {
		ret = bd.listen_fd;
		log_err("listen on %s:%u: %s", bd.host, bd.port, strerror(-ret));
		goto out_store;
	}
	if (bd.cport) {
		bd.cluster_fd = net_listen(bd.chost, bd.cport, NULL);
		if (bd.cluster_fd < 0) {
			ret = bd.cluster_fd;
			log_err("listen on the cluster address %s:%u: %s", bd.chost,
				bd.cport, strerror(-ret));
			close(bd.listen_fd);
			goto out_store;
		}
		if (!bd.auth)
			log_warn("the cluster runs without authentication: the cluster "
				 "address %s:%u takes any peer", bd.chost, bd.cport);
	}
	ret = lease_new(bd.coord, bd.node_id, bd.conf.lease_ms, &bd.lease);
	if (!ret)
		ret = workq_new(bd.loop, "io", bd.io_threads, &bd.io_q);
	if (!ret)
		ret = workq_new(bd.loop, "coord", 1, &bd.coord_q);
	if (!ret)
		ret = order_new(&bd, ORDER_THREADS, &bd.order);
	if (!ret)
		ret = copy_new(&bd, COPY_THREADS, &bd.copy);
	if (!ret)
		ret = recover_new(&bd, &bd.rec_opts, &bd.recover);
	if (!ret)
		ret = strip_recover_new(&bd, &bd.strip_rec);
	if (!ret)
		ret = backing_new(&bd, &bd.backing);
	if (!ret)
		ret = scrub_new(&bd, &bd.scrub_opts, &bd.scrub);
	if (!ret)
		ret = client_conn_start(&bd);
	if (ret)
		goto out_workq;
	main_loop = bd.loop;
	ret = member_join(&bd);
	if (ret)
		goto out_workq;
	log_info("node=%" PRIu32 " listening on %s:%u, data in %s, zone=%" PRIu32
		 " weight=%" PRIu32, bd.node_id, bd.host, bd.port, bd.dir, bd.zone,
		 bd.weight);
	if (bd.cport)
		log_info("node=%" PRIu32 ": peers connect to the cluster address %s:%u",
			 bd.node_id, bd.chost, bd.cport);
	loop_run(bd.loop);
	{
		uint64_t cl = 0, cf = 0;

		copy_counts(bd.copy, &cl, &cf);
		log_info("node=%" PRIu32 ": stopping (volume chunks copied here: %"
			 PRIu64 " from this node's copy, %" PRIu64 " from a peer's)",
			 bd.node_id, cl, cf);
		backing_counts(bd.backing, &cl, &cf);
		log_info("node=%" PRIu32 ": backed objects filled: %" PRIu64 ", still "
			 "backed: %" PRIu64 " (filled after the restart)", bd.node_id, cl, cf);
	}
	bd.stopping = 1;
	ret = 0;
out_workq:
	main_loop = NULL;
	/* In order of who uses what: requests use recovery, recovery and the
	 * map updates use ZooKeeper. */
	scrub_free(bd.scrub);   /* it repairs with recover, strip_rec and io_q's depth */
	strip_recover_free(bd.strip_rec);
	order_free(bd.order);
	copy_free(bd.copy);
	backing_free(bd.backing);       /* uses recover and io_q's depth */
	workq_free(bd.io_q);
	recover_free(bd.recover);
	workq_free(bd.coord_q);
	lease_stop(bd.lease);
	coord_close(bd.coord);
	bd.coord = NULL;
	lease_free(bd.lease);   /* its checks in flight answered at the close */
	bd.lease = NULL;
	if (bd.listen_fd >= 0)
		close(bd.listen_fd);
	if (bd.cluster_fd >= 0)
		close(bd.cluster_fd);
out_store:
	vfence_close(bd.vfence);
	fence_close(bd.fence);
	if (bd.store)
		objstore_sync_all(bd.store);
	stripstore_close(bd.strips);
	objstore_close(bd.store);
out_coord:
	coord_close(bd.coord);
	keydb_free(bd.keydb);   /* after the close: coord_auth_follow fills it */
	cmap_free(bd.map);
out_loop:
	loop_free(bd.loop);
out:
	return ret ? 1 : 0;
}
