/*
 * fixture.h - a whole sdfs cluster per test, for the functional tests:
 * block daemons on loopback started by `sdfs dev up` in a private temp
 * dir, on the ZooKeeper server the test run started ($SDFS_TEST_ZK;
 * without it, dev up starts a private one), under a cluster name of
 * their own.
 *
 * Every function that cannot go on fails the test (cr_assert) instead
 * of returning an error, except where a return value is documented.
 * Readiness is always a polled check with a deadline. Teardown stops
 * only the pids this fixture started (dev down reads them from the
 * dir); a watchdog process does the same if the test process dies
 * without tearing down (a criterion timeout kills it).
 *
 * With opts.mds, tcluster_start returns once every mds runs and one of
 * them is active and answering (sdfs_mds_status). With opts.mount, also
 * once mount.sdfs serves the filesystem at DIR/mnt (dev name "mnt":
 * tcluster_kill SIGKILLs it and lazily unmounts, tcluster_restart
 * mounts again). Teardown unmounts before it stops any daemon, the
 * watchdog too; without opts.mount dev up runs with --no-mount. With
 * opts.mounts >= 2, that many mounts of the same cluster, each its own
 * mount.sdfs (dev up --mounts N): DIR/mnt, DIR/mnt2 ... (dev names mnt,
 * mnt2 ...; tcluster_mnt_n), all serving when tcluster_start returns,
 * all unmounted at teardown and by the watchdog.
 *
 * The dir (logs in DIR/log/, libsdfs's in DIR/client.log, data) is
 * removed after a test that passed and kept after one that failed;
 * SDFS_TEST_KEEP=1 keeps it always. The runner process decides, since
 * only it learns the test's result (a criterion report hook).
 */
#ifndef SDFS_TESTS_CLUSTER_FIXTURE_H
#define SDFS_TESTS_CLUSTER_FIXTURE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "libclient/sdfs.h"

#define TCLUSTER_WAIT_MS 30000  /* default deadline of the wait helpers */

struct tcluster_opts {
	unsigned blockd;        /* 0: only a formatted cluster, no daemon */
	unsigned copies;        /* 0: dev up's default */
	unsigned out_grace_s;   /* down this long, a node goes out; 0: default */
	unsigned mds;           /* sdfs-mds daemons mds.0, mds.1...; 0: none */
	unsigned mount;         /* 1: mount.sdfs at DIR/mnt (dev name "mnt";
				   needs mds >= 1); 0: none (--no-mount) */
	unsigned mounts;        /* 2..TCLUSTER_MOUNTS_MAX: that many mounts
				   (needs mds >= 1; mount is then ignored);
				   0 or 1: as opts.mount says */
	unsigned private_zk;    /* 1: the cluster's own ZooKeeper server, also
				   when $SDFS_TEST_ZK is set (a dev up again
				   may move it: tcluster_up_again) */
	unsigned netns;         /* 1: dev up --netns, each daemon in its own
				   network namespace (docs/faults.md; needs
				   root; implies private_zk) */
	unsigned auth_none;     /* 1: dev up --auth none: no keys, no
				   handshake, no frame MACs (tests that send
				   raw unauthenticated frames, tests/cluster/
				   wire.h, to test framing itself) */
	const char *set;        /* dev up --set KEY=VALUE: one sdfs.conf line
				   (e.g. "reclaim_interval_s=1"); NULL: none */
	unsigned cluster_net;   /* 1: dev up --cluster-net: block daemon N's
				   peers reach it on 127.0.1.(N+1) */
	unsigned recovery_mbps; /* dev up --recovery-mbps N; 0: the default */
};
#define TCLUSTER_MOUNTS_MAX 4

struct tcluster;

struct tcluster *tcluster_start(const struct tcluster_opts *o);
void tcluster_stop(struct tcluster *tc);        /* NULL ok */

/* A libsdfs handle on the cluster, owned by @tc; its log goes to
 * DIR/client.log. */
struct sdfs *tcluster_client(struct tcluster *tc);
const char *tcluster_conf(struct tcluster *tc);  /* DIR/sdfs.conf */
const char *tcluster_dir(struct tcluster *tc);
unsigned tcluster_nblockd(struct tcluster *tc);
unsigned tcluster_nmds(struct tcluster *tc);     /* opts.mds */
/* The FUSE mount point (DIR/mnt) when opts.mount or opts.mounts; NULL
 * otherwise. */
const char *tcluster_mnt(struct tcluster *tc);
/* Mount point @i: 0 is DIR/mnt (dev name "mnt"), 1 DIR/mnt2 ("mnt2")...;
 * NULL if the cluster has no mount @i. */
const char *tcluster_mnt_n(struct tcluster *tc, unsigned i);

/* `sdfs dev kill` (SIGKILL, waits until gone); returns its exit status. */
int tcluster_kill(struct tcluster *tc, const char *name);
/* `sdfs dev start`, then wait until the node is up in the map and
 * answers with the map's epoch (an mds: until sdfs_mds_status lists it
 * among the running ones, which a killed mds still is until its
 * ZooKeeper session expires; "zk", the cluster's private ZooKeeper
 * server when SDFS_TEST_ZK was unset: until it answers the fixture's
 * client); 0, or the failing status / -ETIMEDOUT. */
int tcluster_restart(struct tcluster *tc, const char *name);
/* The pid recorded in DIR/run/@name.pid; 0 if none. */
pid_t tcluster_pid(struct tcluster *tc, const char *name);
/* kill(2) @sig to @name's recorded pid (never by name); 0 or -errno.
 * A SIGSTOPped daemon is remembered until its SIGCONT: tcluster_stop
 * sends it SIGCONT first, so a failed test still tears down cleanly. */
int tcluster_signal(struct tcluster *tc, const char *name, int sig);
/* Does `sdfs dev status --json` show @name running? */
int tcluster_running(struct tcluster *tc, const char *name);
/* A clean stop: SIGTERM to @name's recorded pid, then wait (bounded)
 * until it is gone. 0, or -errno / -ETIMEDOUT. */
int tcluster_term(struct tcluster *tc, const char *name);
/* `sdfs dev add`: one more blockd (its own zone), up and answering at
 * the map's epoch when this returns; its dev name ("blockd.N") goes
 * into @name, which is returned. Fails the test if it cannot. */
const char *tcluster_add(struct tcluster *tc, char *name, size_t len);

/*
 * `sdfs dev down` (returns its exit status), then `sdfs dev up` again
 * on the same dir with tcluster_start's options: every daemon dev
 * recorded there starts again, dev add's too. The fixture's client is
 * closed by tcluster_down and opened again on the current sdfs.conf by
 * tcluster_up_again, which fails the test if dev up fails and returns
 * once the mds (opts.mds) are back with one active.
 */
int tcluster_down(struct tcluster *tc);
void tcluster_up_again(struct tcluster *tc);

/* blockd.N <-> node id (from DIR/blockd.N/node_id); 0 / NULL if none. */
uint32_t tcluster_node_id(struct tcluster *tc, const char *name);
const char *tcluster_node_name(struct tcluster *tc, uint32_t node_id,
			       char *buf, size_t len);
/* The dev name owning an object file path DIR/blockd.N/...; NULL if none. */
const char *tcluster_name_of_path(struct tcluster *tc, const char *path,
				  char *buf, size_t len);
/* "host:port" of @name from the current map, into @addr. */
void tcluster_node_addr(struct tcluster *tc, const char *name, char *addr,
			size_t len);

/* Wait until @want nodes are up in the map and every up node answers
 * with the map's epoch. 0 or -ETIMEDOUT. */
int tcluster_wait_nodes_up(struct tcluster *tc, unsigned want, int timeout_ms);
/* Wait until the map shows @name in @state ("up", "down"). */
int tcluster_wait_state(struct tcluster *tc, const char *name,
			const char *state, int timeout_ms);
/* Wait until the map's epoch is above @epoch; 0 or -ETIMEDOUT. */
int tcluster_wait_epoch_above(struct tcluster *tc, uint64_t epoch,
			      int timeout_ms);
uint64_t tcluster_epoch(struct tcluster *tc);

/* `sdfs cluster wait-healthy --timeout @timeout_s`: its exit status (0:
 * healthy); what it printed is logged if not. */
int tcluster_wait_healthy(struct tcluster *tc, unsigned timeout_s);
/* `sdfs node @action ID` (out, remove, add) for @name: its exit status. */
int tcluster_node_set(struct tcluster *tc, const char *action, const char *name);
/* @name's entry in the node list (map state, and its NODE_INFO numbers
 * if it answered: st->reachable); 0, -ENOENT if not in the map. */
int tcluster_node_status(struct tcluster *tc, const char *name,
			 struct sdfs_node_status *st);
/* Wait until @name answers and reports @objects objects (tombstones
 * count: they are files); 0 or -ETIMEDOUT. */
int tcluster_wait_objects(struct tcluster *tc, const char *name, uint64_t objects,
			  int timeout_ms);
/* The sum of moved_objs (objects fetched by recovery since each daemon
 * started) over every node that answered, and how many up nodes did
 * not answer into *@silent (NULL ok). */
uint64_t tcluster_moved_objs(struct tcluster *tc, unsigned *silent);

/* The active mds (sdfs_mds_status): its name ("mds.0") into @name if
 * one is published and answered just now; 0, else -ENOENT (none, or it
 * did not answer) or -errno from ZooKeeper. */
int tcluster_active_mds(struct tcluster *tc, char *name, size_t len);
/* Wait until an mds other than @not_this_one (NULL: any) is active and
 * answers; its name into @name (NULL ok). 0 or -ETIMEDOUT. */
int tcluster_wait_active_mds(struct tcluster *tc, const char *not_this_one,
			     char *name, size_t len, int timeout_ms);
/* Wait until sdfs_mds_status lists exactly @n running mds and one of
 * them is active and answers. 0 or -ETIMEDOUT. */
int tcluster_wait_mds(struct tcluster *tc, unsigned n, int timeout_ms);

/* The first line of DIR/log/@name.log containing @needle (malloc'd,
 * without its newline), polled until @timeout_ms; NULL if none. */
char *tcluster_log_line(struct tcluster *tc, const char *name,
			const char *needle, int timeout_ms);

/*
 * Run the sdfs CLI with `-c DIR/sdfs.conf` and the words of @fmt
 * (split on spaces after formatting: no argument may hold one).
 * Captures stdout into *@out and stderr into *@err (malloc'd, NUL
 * terminated; either may be NULL to discard). Returns the exit status,
 * 128 + signal if killed.
 */
int tcluster_sdfs(struct tcluster *tc, char **out, char **err,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same without -c: the command line is all yours. */
int tsdfs_run(char **out, char **err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Lines in @s (a last line without '\n' counts). */
size_t tcount_lines(const char *s);

/* Monotonic milliseconds; sleep @ms (for pacing polls, never as sync). */
int64_t tnow_ms(void);
void tsleep_ms(int ms);

/* A seed for random test data: $SDFS_TEST_SEED or fresh, logged. */
uint64_t tseed(const char *what);
/* splitmix64: a small, fast, reproducible generator. */
uint64_t trand(uint64_t *state);
void tfill_random(void *buf, size_t len, uint64_t seed);
#endif
