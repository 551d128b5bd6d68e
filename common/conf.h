/*
 * conf.h - the sdfs.conf file: how a program finds its cluster.
 *
 *   # comment
 *   zk = 127.0.0.1:2181,127.0.0.2:2181   ZooKeeper hosts (required)
 *   cluster = dev                          cluster name (default "sdfs")
 *   timeout_ms = 10000                     client operation timeout
 *   session_ms = 2000                      ZooKeeper session timeout
 *   frame_timeout_ms = 10000               daemons: a frame must complete
 *   idle_timeout_ms = 300000               daemons: idle connections close
 *   max_conns = 4096                       daemons: connections at most
 *   nearfull_pct = 85                      blockd: disk this full is a warning
 *   full_pct = 95                          blockd: this full refuses data writes
 *   replica_timeout_ms = 1500              wait on one replica per try
 *   lease_ms = 2000                        blockd's serving lease
 *   read_timeout_ms = 1000                 a read tries the next replica
 *   keyring = /etc/sdfs/keyring            this process's key (keys.h)
 *   public_addr = 10.0.0.5                 daemons: listen here (no --listen)
 *   cluster_addr = 10.9.0.5                blockd: peers' traffic here
 *   objcap_lifetime_ms = 600000            sdfs-mds: object caps live this long
 *   mds_sync_interval_ms = 1000            sdfs-mds: changes durable within this
 *   scrub_mbps = 50                        blockd: the scrub reads at most this
 *   scrub_interval_s = 604800              blockd: a scrub pass this often
 *   fill_mbps = 32                         blockd: the copy-on-write filler's rate
 *   reclaim_interval_s = 10                sdfs-mds: volume reclaim looks this often
 *   ec_seal_after_s = 60                   clients: seal EC volume chunks this cold
 *
 * Found from -c FILE, else $SDFS_CONF, else /etc/sdfs/sdfs.conf.
 * Unknown keys are ignored (newer files stay readable); malformed lines
 * and bad values are errors naming the line. docs/config.md has the
 * full list. Pure functions: thread-safe.
 */
#ifndef SDFS_COMMON_CONF_H
#define SDFS_COMMON_CONF_H
#include <stddef.h>

#define CONF_DEFAULT_PATH "/etc/sdfs/sdfs.conf"
#define CONF_MAX_NAME 64
#define CONF_DEFAULT_KEYRING "/etc/sdfs/keyring"

struct sdfs_conf {
	char zk[512];
	char cluster[CONF_MAX_NAME];
	int timeout_ms;
	int session_ms;
	/* Daemons' connections (blockd/client_conn.c, mds/server.c): a
	 * frame begun must be whole, and queued replies must move, within
	 * frame_timeout_ms; a connection with nothing under way for
	 * idle_timeout_ms is closed (clients reconnect); more than
	 * max_conns at once are refused. */
	int frame_timeout_ms;
	int idle_timeout_ms;
	int max_conns;
	/* sdfs-blockd: how much of its data filesystem may be in use (by
	 * anyone; as df's Use%: used / (used + available)) before it
	 * reports itself near full (a health warning) and full (a health
	 * error; it then refuses writes of file and volume data, docs/
	 * operations.md "Space"). 1..100; full_pct >= nearfull_pct. */
	int nearfull_pct;
	int full_pct;
	int replica_timeout_ms;         /* a try waits this long for a replica */
	int lease_ms;                   /* blockd serving lease (blockd/lease.h) */
	int read_timeout_ms;    /* a read asks the next replica after this */
	/* libsdfs: a writer of an erasure-coded volume seals a chunk not
	 * written for this many seconds (docs/ec.md); 0: never */
	int ec_seal_after_s;
	/* The keyring (common/keys.h) a program proves itself with
	 * (common/auth.h): libsdfs's sdfs_open, sdfs-blockd, sdfs-mds.
	 * keyring_set: the file named it (a missing file is then an
	 * error); else the default, used only if it exists. */
	char keyring[512];
	int keyring_set;
	/* sdfs-blockd, sdfs-mds: the host (IPv4 address or name) they
	 * listen on, and the address in the map / mds/active, when their
	 * --listen does not say; "": 127.0.0.1. */
	char public_addr[256];
	/* sdfs-blockd: the host of the cluster network, where block
	 * daemons reach each other (replication, recovery) on the public
	 * port, when --cluster-listen does not say; "": no second
	 * address, peers use the public one. Only daemon keys are taken
	 * there. Longer than a map's host is refused by blockd. */
	char cluster_addr[256];
	int objcap_lifetime_ms; /* sdfs-mds: object capabilities' lifetime */
	int mds_sync_interval_ms; /* sdfs-mds: settled changes get durable within */
	/* sdfs-blockd's background scrub (blockd/scrub.h) when its
	 * --scrub-mbps / --scrub-interval do not say: MB/s (10^6 bytes) a
	 * pass reads at most, 1..100000; seconds from one pass's start to
	 * the next, 0..2^31-1 (0: only on demand). */
	int scrub_mbps;
	int scrub_interval_s;
	/* sdfs-blockd's filler of backed objects (blockd/backing.h): MB/s
	 * (2^20 bytes) it copies at most, 1..100000. */
	int fill_mbps;
	int reclaim_interval_s;          /* sdfs-mds: a reclaim pass at least this often */
};

/* Defaults for everything but zk. */
void conf_init(struct sdfs_conf *c);
/* Which file to read: @explicit if set, else $SDFS_CONF, else the default. */
const char *conf_path(const char *explicit_path);
/*
 * Parse the file at @path into @c (which conf_init set). On error returns
 * -errno and writes a one-line reason into @err (e.g. "sdfs.conf:3: bad
 * timeout_ms"). Requires zk.
 */
int conf_load(const char *path, struct sdfs_conf *c, char *err, size_t errlen);
/* 1 if @name is a valid cluster name: [A-Za-z0-9_.-]{1,63}, not
 * starting with '.' (it is a ZooKeeper path component). */
int conf_name_ok(const char *name);
/*
 * A daemon's config: the file (@file, else $SDFS_CONF, else the
 * default) unless only @zk is given, then the --zk / --cluster
 * overrides (NULL: none). -EINVAL with a one-line reason in @err
 * ("--zk too long", "bad --cluster 'x'", or conf_load's).
 */
int conf_resolve(const char *file, const char *zk, const char *cluster,
		 struct sdfs_conf *c, char *err, size_t errlen);
#endif
