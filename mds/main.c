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
 *
 * A term that failed (the takeover, or the database under it) is
 * followed by a backoff: the re-executed process waits before it joins
 * the election again, 500 ms doubling to 30 s (plus up to a quarter of
 * jitter), carried across the exec in $SDFS_MDS_BACKOFF; a term that
 * served BACKOFF_RESET_MS starts the next failure over at 500 ms. Two
 * mds that cannot open the database so take turns a few times a
 * minute, not hundreds of times a second. A real fence (a newer MDS
 * epoch in ZooKeeper, or a block daemon refusing our token) or a lost
 * session is no failure of ours: no wait.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/coord.h"
#include "common/coord_auth.h"
#include "common/keydb.h"
#include "common/log.h"
#include "common/net.h"
#include "common/version.h"
#include "libclient/sdfs.h"
#include "mds/mds.h"
#include "mds/ns.h"
#include "mds/store.h"

#define BACKOFF_ENV "SDFS_MDS_BACKOFF"
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
#define BACKOFF_RESET_MS 60000          /* a term this long was a success */

static struct mds *the_mds;
static char **saved_argv;
static int backoff_ms;                  /* the last wait; 0: none yet */
static int64_t active_since;            /* monotonic ms; 0: not active */

static void usage(FILE *f)
{
	fprintf(f,
"usage: sdfs-mds [options]\n"
"Serve the sdfs namespace: one active among any number of sdfs-mds,\n"
"the others standing by to take over.\n"
"\n"
"  -n, --name NAME        name shown by `sdfs mds status` (default mds)\n"
"  -l, --listen HOST:PORT address to listen on (default: the config's\n"
"                         public_addr, else 127.0.0.1, port 7100)\n"
"  -c, --conf FILE        cluster config file (default $SDFS_CONF, then %s)\n"
"  -k, --keyring FILE     this daemon's key (default: the config's keyring =)\n"
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
		{ "keyring", required_argument, NULL, 'k' },
		{ "zk", required_argument, NULL, 'Z' },
		{ "cluster", required_argument, NULL, 'C' },
		{ "log-level", required_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *conf_file = NULL, *zk = NULL, *cluster = NULL;
	const char *listen = NULL, *name = "mds";
	char def_listen[300];
	char err[256];
	int c, lvl;

	while ((c = getopt_long(argc, argv, "n:l:c:k:v:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'n': name = optarg; break;
		case 'l': listen = optarg; break;
		case 'c': conf_file = optarg; break;
		case 'k':
			if (strlen(optarg) >= sizeof(m->keyring)) {
				fprintf(stderr, "sdfs-mds: --keyring path too long\n");
				return -1;
			}
			strcpy(m->keyring, optarg);
			break;
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
	if (conf_resolve(conf_file, zk, cluster, &m->conf, err, sizeof(err))) {
		fprintf(stderr, "sdfs-mds: %s\n", err);
		return -1;
	}
	if (!listen) {          /* the config's public_addr */
		snprintf(def_listen, sizeof(def_listen), "%s:7100",
			 m->conf.public_addr[0] ? m->conf.public_addr : "127.0.0.1");
		listen = def_listen;
	}
	if (net_parse_addr(listen, m->host, sizeof(m->host), &m->port) || m->port == 0) {
		fprintf(stderr, "sdfs-mds: bad --listen '%s' (want HOST:PORT)\n", listen);
		return -1;
	}
	snprintf(m->addr, sizeof(m->addr), "%s:%u", m->host, m->port);
	return 0;
}

/*
 * Step down: forget everything and come back as a standby. @failed: the
 * term failed on its own (not deposed): the next process backs off
 * before it joins the election again.
 */
static void step_down(struct mds *m, const char *why, bool failed)
{
	int64_t served = active_since ? net_now_ms() - active_since : 0;
	int next = 0;
	char env[32];

	if (served >= BACKOFF_RESET_MS)
		backoff_ms = 0;
	if (failed)
		next = backoff_ms ? backoff_ms * 2 : BACKOFF_MIN_MS;
	if (next > BACKOFF_MAX_MS)
		next = BACKOFF_MAX_MS;
	/* "<level> <wait>": a deposed mds keeps its level, waits nothing */
	snprintf(env, sizeof(env), "%d %d", failed ? next : backoff_ms, next);
	setenv(BACKOFF_ENV, env, 1);
	if (failed)
		log_warn("stepping down: %s; back in the election in %d.%d s",
			 why, next / 1000, next % 1000 / 100);
	else
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

/* After a failed term (step_down): wait before joining the election,
 * so that a database nobody can open is not fought over. */
static void backoff_wait(struct mds *m)
{
	const char *env = getenv(BACKOFF_ENV);
	int level = 0, wait = 0;

	if (!env)
		return;
	if (sscanf(env, "%d %d", &level, &wait) != 2 || level < 0 || wait < 0 ||
	    level > BACKOFF_MAX_MS || wait > BACKOFF_MAX_MS)
		level = wait = 0;
	unsetenv(BACKOFF_ENV);
	backoff_ms = level;
	if (!wait)
		return;
	srandom((unsigned)getpid() ^ (unsigned)net_now_ms());
	wait += (int)(random() % (wait / 4 + 1));
	log_info("backing off after a failed term: joining the election in %d ms",
		 wait);
	for (int64_t end = net_now_ms() + wait; !stopping(m) && net_now_ms() < end;)
		usleep(50 * 1000);
}

/*
 * Why did the database fail under us? A newer MDS epoch in ZooKeeper or
 * a block daemon refusing our token is a fence (returns true);
 * anything else is this term's failure, and @why says what failed.
 */
static bool db_failure(struct mds *m, char *why, size_t len)
{
	uint64_t cur;
	char last[200];
	int err;

	if (coord_mds_epoch_get(m->coord, 0, &cur) == 0 && cur > m->epoch) {
		snprintf(why, len, "fenced: a newer mds took over (MDS epoch %" PRIu64
			 ", ours %" PRIu64 ")", cur, m->epoch);
		return true;
	}
	err = store_last_error(last, sizeof(last));
	if (err == EPERM) {
		snprintf(why, len, "fenced: %s", last);
		return true;
	}
	if (err)
		snprintf(why, len, "%s", last);
	else
		snprintf(why, len, "the database failed (see its error above)");
	return false;
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

/* Become the active. 0, or -errno with what failed in @why. */
static int take_over(struct mds *m, char *why, size_t whylen)
{
	char err[256] = "", last[200];
	int64_t t0 = net_now_ms();
	int ret;

	for (;;) {
		ret = coord_mds_epoch_bump(m->coord, m->node, &m->epoch);
		if (ret != -EAGAIN)
			break;
	}
	if (ret) {
		snprintf(why, whylen, "cannot bump the MDS epoch: %s", strerror(-ret));
		return ret;
	}
	log_info("elected; MDS epoch %" PRIu64 ": fencing the block daemons", m->epoch);
	sdfs_set_fence_token(m->sdfs, (uint32_t)m->epoch);
	while ((ret = sdfs_mds_fence(m->sdfs, m->epoch)) != 0) {
		log_every(LOG_EVERY_MS, LOG_WARNING, "fencing the block daemons: "
			  "%s; retrying", strerror(-ret));
		if (stopping(m))
			return -EINTR;
		usleep(200 * 1000);
	}
	int64_t t1 = net_now_ms();
	ret = ns_open(m->sdfs, m->coord, m->epoch, m->name, &m->ns, err, sizeof(err));
	if (ret == 0 && m->secret)
		ns_set_objcap(m->ns, m->secret, m->conf.objcap_lifetime_ms);
	if (ret == 0) {
		ns_set_sync_interval(m->ns, m->conf.mds_sync_interval_ms);
		ns_set_reclaim_interval(m->ns, m->conf.reclaim_interval_s * 1000);
		ns_set_ec_seal_after(m->ns, m->conf.ec_seal_after_s);
	}
	if (ret) {
		if (store_last_error(last, sizeof(last)))
			snprintf(why, whylen, "cannot open the namespace database: "
				 "%s (%s)", err, last);
		else
			snprintf(why, whylen, "cannot open the namespace database: %s",
				 err);
		return ret;
	}
	/* The old active answered nothing since its lease (session/2)
	 * lapsed, at least session - lease before we were elected. */
	ret = ns_handover(m->ns, m->conf.session_ms - m->lease_ms);
	if (ret) {
		if (store_last_error(last, sizeof(last)))
			snprintf(why, whylen, "cannot record the handover: %s (%s)",
				 strerror(-ret), last);
		else
			snprintf(why, whylen, "cannot record the handover: %s",
				 strerror(-ret));
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
		snprintf(why, whylen, "cannot publish the active: %s", strerror(-ret));
		return ret;
	}
	active_since = net_now_ms();
	log_info("active at %s, MDS epoch %" PRIu64 " (fence %" PRId64 " ms, open %"
		 PRId64 " ms)", m->addr, m->epoch, t1 - t0, t2 - t1);
	return 0;
}

static char ident[64];

/* With the cluster's auth required: the keys it accepts, from ZooKeeper
 * (kept current), before the server starts. 0 or -errno, logged. */
static int auth_setup(struct mds *m, const struct keyring *kr, int have_kr)
{
	struct cluster_config cfg;
	int ret = coord_config_get(m->coord, &cfg);

	if (ret) {
		log_err("cannot read the cluster config: %s", strerror(-ret));
		return ret;
	}
	m->auth = cfg.auth == CMAP_AUTH_REQUIRED;
	if (!m->auth)
		return 0;
	ret = coord_auth_daemon_keys(m->coord, kr, have_kr, m->conf.cluster, &m->keydb);
	/* a key just added works at once: a client's first contact is us
	 * (connection threads may wait; blockd's loop may not: it takes
	 * keys from the watch alone) */
	if (!ret)
		ret = coord_auth_fetch_misses(m->coord, m->keydb);
	if (ret)
		return ret;
	m->secret = kr->secret;
	log_info("authentication required: key %s, %zu keys known", kr->name,
		 keydb_count(m->keydb));
	return 0;
}

int main(int argc, char **argv)
{
	static struct mds m = { .listen_fd = -1 };
	static struct keyring kr;       /* the secret, borrowed by coord_auth */
	struct sigaction sa = { .sa_handler = on_signal };
	struct coord_cred cred, *credp = NULL;
	const char *kr_path;
	char err[256];
	int ret, have_kr;

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
	ret = auth_keyring_open(m.keyring, m.conf.keyring, m.conf.keyring_set, &kr, err,
				sizeof(err));
	have_kr = ret == 0;
	if (ret && ret != -ENOENT) {
		log_err("%s", err);
		return 1;
	}
	kr_path = m.keyring[0] ? m.keyring : m.conf.keyring;
	if (have_kr && coord_cred_from_keyring(&kr, &cred) == 0)
		credp = &cred;
	ret = sdfs_connect_keyring(m.conf.zk, m.conf.cluster, m.conf.timeout_ms,
				   have_kr ? kr_path : NULL, &m.sdfs, err, sizeof(err));
	if (ret) {
		log_err("cannot connect to cluster %s: %s", m.conf.cluster, err);
		return 1;
	}
	sdfs_set_conf(m.sdfs, &m.conf);
	for (int logged = 0; !atomic_load(&m.stop); usleep(300 * 1000)) {
		struct sdfs_cluster_info ci;

		ret = sdfs_cluster_info(m.sdfs, &ci);
		if (ret == 0)
			break;
		if (!logged++)
			log_info("cluster=%s is not formatted yet; waiting", m.conf.cluster);
	}
	ret = coord_open_cred(m.conf.zk, m.conf.cluster, credp, m.conf.session_ms, 15000,
			      on_coord, &m, &m.coord);
	if (ret) {
		log_err("cannot reach ZooKeeper at %s: %s", m.conf.zk, strerror(-ret));
		return 1;
	}
	if (auth_setup(&m, &kr, have_kr))
		return 1;
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
	backoff_wait(&m);
	ret = stopping(&m) ? -EINTR : elect(&m);
	if (ret == 0) {
		char why[512];

		ret = take_over(&m, why, sizeof(why));
		if (ret && !atomic_load(&m.stop)) {
			if (atomic_load(&m.expired))
				step_down(&m, "ZooKeeper session expired", false);
			else
				step_down(&m, why, ret != -ENOENT && ret != -EINTR);
		}
	}
	for (int tick = 0; !atomic_load(&m.stop); tick++) {
		if (m.ns && tick % 4 == 0)
			lease_renew(&m);        /* every 200 ms */
		if (atomic_load(&m.expired))
			step_down(&m, "ZooKeeper session expired", false);
		if (m.ns && ns_failed(m.ns)) {
			char why[512];
			bool fenced = db_failure(&m, why, sizeof(why));

			step_down(&m, why, !fenced);
		}
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
