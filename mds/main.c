/*
 * main.c - sdfs-mds: options, the election, taking over, stepping down.
 *
 * Every sdfs-mds joins the election (common/coord_mds.h) and waits. The
 * leader, in this order: bumps the MDS epoch in a transaction that
 * checks it still holds its election node; fences every blockd with
 * that epoch (they then refuse MDS-object writes carrying an older one);
 * only then opens the database from its objects; and publishes itself
 * as the active. A deposed active (its ZooKeeper session lost, or a
 * write refused by a fence) stops answering at once and steps down by
 * re-executing itself, so it comes back as a clean standby.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/coord.h"
#include "common/log.h"
#include "common/net.h"
#include "common/version.h"
#include "libclient/sdfs.h"
#include "mds/mds.h"
#include "mds/ns.h"

static struct mds *the_mds;
static char **saved_argv;

static void usage(FILE *f)
{
	fprintf(f,
"usage: sdfs-mds [options]\n"
"Serve the sdfs namespace: one active among any number of sdfs-mds,\n"
"the others standing by to take over.\n"
"\n"
"  -n, --name NAME        name shown by `sdfs mds status` (default mds)\n"
"  -l, --listen HOST:PORT address to listen on (default 127.0.0.1:7100)\n"
"  -c, --conf FILE        cluster config file (default $SDFS_CONF, then %s)\n"
"      --zk HOSTS         ZooKeeper hosts, overrides the config file\n"
"      --cluster NAME     cluster name, overrides the config file\n"
"  -v, --log-level LEVEL  err, warn, info or debug (default info)\n"
"  -V, --version          print the version and exit\n"
"  -h, --help             this help\n", CONF_DEFAULT_PATH);
}

static void on_signal(int sig)
{
	(void)sig;
	if (the_mds)
		atomic_store(&the_mds->stop, 1);
}

static void on_coord(enum coord_event ev, void *arg)
{
	struct mds *m = arg;

	switch (ev) {
	case COORD_EV_CONNECTING:
		atomic_store(&m->zk_connected, 0);
		/* Stop acknowledging at once: a standby may take over as soon
		 * as our session is seen gone. */
		if (atomic_exchange(&m->serving, 0))
			log_warn("lost ZooKeeper connection: not acknowledging");
		break;
	case COORD_EV_CONNECTED:
		atomic_store(&m->zk_connected, 1);
		break;
	case COORD_EV_EXPIRED:
		atomic_store(&m->serving, 0);
		atomic_store(&m->expired, 1);
		break;
	default:
		break;
	}
}

static int parse_args(struct mds *m, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "listen", required_argument, NULL, 'l' },
		{ "conf", required_argument, NULL, 'c' },
		{ "zk", required_argument, NULL, 'Z' },
		{ "cluster", required_argument, NULL, 'C' },
		{ "log-level", required_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *conf_file = NULL, *zk = NULL, *cluster = NULL;
	const char *listen = "127.0.0.1:7100", *name = "mds";
	char err[256];
	int c, lvl;

	while ((c = getopt_long(argc, argv, "n:l:c:v:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'n': name = optarg; break;
		case 'l': listen = optarg; break;
		case 'c': conf_file = optarg; break;
		case 'Z': zk = optarg; break;
		case 'C': cluster = optarg; break;
		case 'v':
			lvl = log_level_parse(optarg);
			if (lvl < 0) {
				fprintf(stderr, "sdfs-mds: bad --log-level '%s'\n", optarg);
				return -1;
			}
			log_level = lvl;
			break;
		case 'V':
			printf("sdfs-mds %s\n", SDFS_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "sdfs-mds: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!*name || strlen(name) >= sizeof(m->name) || strpbrk(name, " \t\n=/")) {
		fprintf(stderr, "sdfs-mds: bad --name '%s'\n", name);
		return -1;
	}
	strcpy(m->name, name);
	if (net_parse_addr(listen, m->host, sizeof(m->host), &m->port) || m->port == 0) {
		fprintf(stderr, "sdfs-mds: bad --listen '%s' (want HOST:PORT)\n", listen);
		return -1;
	}
	snprintf(m->addr, sizeof(m->addr), "%s:%u", m->host, m->port);
	if (conf_resolve(conf_file, zk, cluster, &m->conf, err, sizeof(err))) {
		fprintf(stderr, "sdfs-mds: %s\n", err);
		return -1;
	}
	return 0;
}

/* Step down: forget everything and come back as a standby. */
static void step_down(struct mds *m, const char *why)
{
	log_warn("stepping down: %s", why);
	atomic_store(&m->serving, 0);
	/* Our election node goes now (not at session expiry), so a standby
	 * does not wait for us. Nothing is written after the fence anyway.
	 * Connection and background threads may still be in a coord call:
	 * the handle is closed, not freed, under them. */
	coord_close_for_exit(m->coord);
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	execv("/proc/self/exe", saved_argv);
	log_err("re-exec failed: %s; exiting", strerror(errno));
	_exit(1);
}

int mds_may_reply(struct mds *m)
{
	return atomic_load(&m->serving) &&
	       net_now_ms() - atomic_load(&m->lease_at) < m->lease_ms;
}

/* Renew the lease: one ZooKeeper round trip, timed from its start. */
static void lease_renew(struct mds *m)
{
	int64_t t = net_now_ms();

	if (coord_mds_elect_check(m->coord, m->node) == 0)
		atomic_store(&m->lease_at, t);
}

static int stopping(struct mds *m)
{
	return atomic_load(&m->stop) || atomic_load(&m->expired);
}

/* Wait to be the leader. 0, or -EINTR when stopping or expired. */
static int elect(struct mds *m)
{
	struct coord_mds_doc self = { 0 };
	int ret, logged = 0;

	snprintf(self.name, sizeof(self.name), "%s", m->name);
	snprintf(self.addr, sizeof(self.addr), "%s", m->addr);
	ret = coord_mds_elect_join(m->coord, &self, m->node, sizeof(m->node));
	if (ret)
		return ret;
	for (;;) {
		if (stopping(m))
			return -EINTR;
		int64_t t0 = net_now_ms();

		ret = coord_mds_elect_wait(m->coord, m->node, 500);
		if (ret == 0)
			return 0;
		if (ret == -ENOENT)
			return -EINTR;  /* our node is gone: the session ended */
		if (!logged++)
			log_info("standing by (election node %s)", m->node);
		/* -ETIMEDOUT long before the 500 ms is ZooKeeper unreachable
		 * (connection loss), not a wait that ran out: pause as for
		 * any other error instead of asking again at once (a standby
		 * spun a core while its ZooKeeper server was down) */
		if ((ret != -EAGAIN && ret != -ETIMEDOUT) ||
		    (ret == -ETIMEDOUT && net_now_ms() - t0 < 250))
			usleep(200 * 1000);
	}
}

static int take_over(struct mds *m)
{
	char err[256] = "";
	int64_t t0 = net_now_ms();
	int ret;

	for (;;) {
		ret = coord_mds_epoch_bump(m->coord, m->node, &m->epoch);
		if (ret != -EAGAIN)
			break;
	}
	if (ret) {
		log_err("cannot bump the MDS epoch: %s", strerror(-ret));
		return ret;
	}
	log_info("elected; MDS epoch %" PRIu64 ": fencing the block daemons", m->epoch);
	sdfs_set_fence_token(m->sdfs, (uint32_t)m->epoch);
	while ((ret = sdfs_mds_fence(m->sdfs, m->epoch)) != 0) {
		log_warn("fencing: %s; retrying", strerror(-ret));
		if (stopping(m))
			return -EINTR;
		usleep(200 * 1000);
	}
	int64_t t1 = net_now_ms();
	ret = ns_open(m->sdfs, m->coord, m->epoch, m->name, &m->ns, err, sizeof(err));
	if (ret) {
		log_err("cannot open the namespace database: %s", err);
		return ret;
	}
	/* The old active answered nothing since its lease (session/2)
	 * lapsed, at least session - lease before we were elected. */
	ret = ns_handover(m->ns, m->conf.session_ms - m->lease_ms);
	if (ret) {
		log_err("cannot record the handover: %s", strerror(-ret));
		return ret;
	}
	int64_t t2 = net_now_ms();
	struct coord_mds_doc self = { .epoch = m->epoch };
	snprintf(self.name, sizeof(self.name), "%s", m->name);
	snprintf(self.addr, sizeof(self.addr), "%s", m->addr);
	lease_renew(m);
	atomic_store(&m->serving, atomic_load(&m->zk_connected));
	ret = coord_mds_publish(m->coord, &self);
	if (ret) {
		atomic_store(&m->serving, 0);
		log_err("cannot publish the active: %s", strerror(-ret));
		return ret;
	}
	log_info("active at %s, MDS epoch %" PRIu64 " (fence %" PRId64 " ms, open %"
		 PRId64 " ms)", m->addr, m->epoch, t1 - t0, t2 - t1);
	return 0;
}

static char ident[64];

int main(int argc, char **argv)
{
	static struct mds m = { .listen_fd = -1 };
	struct sigaction sa = { .sa_handler = on_signal };
	char err[256];
	int ret;

	saved_argv = argv;
	if (parse_args(&m, argc, argv))
		return 2;
	snprintf(ident, sizeof(ident), "%s[%d]", m.name, getpid());
	log_set_ident(ident);
	signal(SIGPIPE, SIG_IGN);
	the_mds = &m;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	m.listen_fd = net_listen(m.host, m.port, NULL);
	if (m.listen_fd < 0) {
		log_err("listen on %s: %s", m.addr, strerror(-m.listen_fd));
		return 1;
	}
	/* libsdfs logs through common/log.c too, so its lines already reach
	 * our log: no sdfs_set_log (its sink would call log_write again). */
	ret = sdfs_connect(m.conf.zk, m.conf.cluster, m.conf.timeout_ms, &m.sdfs,
			   err, sizeof(err));
	if (ret) {
		log_err("cannot connect to cluster %s: %s", m.conf.cluster, err);
		return 1;
	}
	sdfs_set_read_timeout(m.sdfs, m.conf.read_timeout_ms);
	for (int logged = 0; !atomic_load(&m.stop); usleep(300 * 1000)) {
		struct sdfs_cluster_info ci;

		ret = sdfs_cluster_info(m.sdfs, &ci);
		if (ret == 0)
			break;
		if (!logged++)
			log_info("cluster=%s is not formatted yet; waiting", m.conf.cluster);
	}
	ret = coord_open(m.conf.zk, m.conf.cluster, m.conf.session_ms, 15000,
			 on_coord, &m, &m.coord);
	if (ret) {
		log_err("cannot reach ZooKeeper at %s: %s", m.conf.zk, strerror(-ret));
		return 1;
	}
	atomic_store(&m.zk_connected, 1);
	/* Half the session: a stopped process's lease runs out well before
	 * ZooKeeper lets a successor be elected. */
	m.lease_ms = m.conf.session_ms / 2 > 200 ? m.conf.session_ms / 2 : 200;
	ret = server_start(&m);
	if (ret) {
		log_err("cannot start the server: %s", strerror(-ret));
		return 1;
	}
	log_info("%s listening on %s (cluster %s)", m.name, m.addr, m.conf.cluster);
	ret = elect(&m);
	if (ret == 0) {
		ret = take_over(&m);
		if (ret && !atomic_load(&m.stop))
			step_down(&m, "takeover failed");
	}
	for (int tick = 0; !atomic_load(&m.stop); tick++) {
		if (m.ns && tick % 4 == 0)
			lease_renew(&m);        /* every 200 ms */
		if (atomic_load(&m.expired))
			step_down(&m, "ZooKeeper session expired");
		if (m.ns && ns_failed(m.ns))
			step_down(&m, "the database refused a write (fenced by a newer mds?)");
		if (m.ns && !atomic_load(&m.serving) && atomic_load(&m.zk_connected))
			atomic_store(&m.serving, 1);    /* reconnected in time */
		usleep(50 * 1000);
	}
	log_info("stopping");
	atomic_store(&m.serving, 0);
	/* our election and active nodes go now; threads may still call */
	coord_close_for_exit(m.coord);
	/* Connection threads may still be inside ns_exec: leave the database
	 * to the process exit (every acknowledged write is durable already). */
	_exit(0);
}
