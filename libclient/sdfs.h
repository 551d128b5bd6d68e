/*
 * sdfs.h - libsdfs, the client library: the one installed API.
 *
 * A struct sdfs is a connection to one cluster: it follows the cluster
 * map in ZooKeeper and talks to block daemons directly. Every call is
 * synchronous and thread-safe: any number of threads may share one
 * handle. Calls return 0 (or a byte count) on success and a negative
 * errno on failure, never abort, and give up with -ETIMEDOUT or -EIO
 * after the handle's timeout rather than hang.
 * libsdfs never writes to stderr: set a sink with sdfs_set_log().
 *
 * Objects: 64-bit ids, up to the cluster's object size (4 MiB by
 * default), each stored on `copies` block daemons chosen by placement.
 * A write returns when every replica that is up has it (it then
 * survives a crash of any of them); sdfs_obj_flush makes it durable
 * against power loss. A read that finds a replica corrupt returns the
 * data of a good one and rewrites the bad one.
 */
#ifndef SDFS_SDFS_H
#define SDFS_SDFS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sdfs;

/* Where log messages go; level is a syslog level. NULL: discarded. */
typedef void (*sdfs_log_fn)(int level, const char *msg, void *arg);
void sdfs_set_log(sdfs_log_fn fn, void *arg, int max_level);

/*
 * Connect using a config file (NULL: $SDFS_CONF, then
 * /etc/sdfs/sdfs.conf). On failure returns -errno and, if @err is not
 * NULL, a one-line reason in @err. The cluster need not be formatted
 * yet (only sdfs_cluster_format then works).
 */
int sdfs_open(const char *conf_file, struct sdfs **out, char *err, size_t errlen);
/* The same from explicit values; @timeout_ms 0 = default (10 s). */
int sdfs_connect(const char *zk_hosts, const char *cluster, int timeout_ms,
		 struct sdfs **out, char *err, size_t errlen);
/*
 * sdfs_connect as the holder of the keyring file @keyring (NULL: none;
 * docs/config.md): its key proves who we are to the daemons where the
 * cluster requires authentication (docs/security.md), and its
 * credentials open the ZooKeeper session. A keyring that cannot be read
 * fails (-errno, the reason in @err). sdfs_open does this with
 * $SDFS_KEYRING if set, else the config's `keyring =` (its default file
 * only if it exists).
 */
int sdfs_connect_keyring(const char *zk_hosts, const char *cluster, int timeout_ms,
			 const char *keyring, struct sdfs **out, char *err,
			 size_t errlen);
void sdfs_close(struct sdfs *s);        /* NULL ok */

/*
 * What the cluster lets this handle's key do (docs/security.md
 * "Capabilities"): the key's name into @name and its caps as the mds
 * said at the handshake into @caps ("ro,path=/a", "rw", ...; the text of
 * common/keys.h). Asks the mds (a root getattr) if this handle has not
 * shaken its hand yet; later calls answer from the last handshake (caps
 * changed meanwhile show at the next new connection). 0; -ENOENT when
 * no key is in use (a cluster without authentication, or a handle
 * without a key: nothing is restricted); else the -errno of reaching
 * the mds (-EACCES: it refused the key), with the key's name in @name.
 * Any thread.
 */
int sdfs_key_caps(struct sdfs *s, char *name, size_t namelen, char *caps,
		  size_t capslen);

/*
 * Who the namespace calls (sdfs_ns_*, sdfs_vol_* on names) made by the
 * calling thread act as, for every handle: the mds checks permissions
 * against these ids (docs/mds.md "Permissions"), after the key's squash
 * and maps. @groups: the supplementary groups, at most
 * SDFS_CALLER_GROUPS_MAX (more are cut: access through a later group
 * is then refused). Until set on a thread, and after sdfs_clear_caller,
 * the process's own effective ids and groups. Never fails.
 */
#define SDFS_CALLER_GROUPS_MAX 32u
void sdfs_set_caller(uint32_t uid, uint32_t gid, const uint32_t *groups, size_t n);
void sdfs_clear_caller(void);
/* The calling thread's caller as sdfs_set_caller set it: 1, with
 * @groups (room for SDFS_CALLER_GROUPS_MAX) and *@n filled; 0 when
 * none is set (the process's own ids apply). So that work done later on
 * another thread acts as the caller it is done for. */
int sdfs_get_caller(uint32_t *uid, uint32_t *gid, uint32_t *groups, size_t *n);

/* Per-operation timeout, in milliseconds. */
void sdfs_set_timeout(struct sdfs *s, int timeout_ms);
/* How long one try of a replicated write waits for the replicas
 * (default 1500 ms, sdfs.conf replica_timeout_ms): a replica that did not
 * answer by then is reported unresponsive and the write goes on without
 * it once the map says so (docs/recovery.md). */
void sdfs_set_replica_timeout(struct sdfs *s, int timeout_ms);
/*
 * How long a read waits for one replica before it asks the next one as
 * well (keeping the first answer that comes; the config's
 * read_timeout_ms, default SDFS_READ_TIMEOUT_MS). A replica that made a
 * read wait this long is asked last for a few seconds. 0: unchanged.
 */
#define SDFS_READ_TIMEOUT_MS 1000
void sdfs_set_read_timeout(struct sdfs *s, int timeout_ms);
/* A writer (sdfs_vol_open with SDFS_VOL_WRITE) of an erasure-coded
 * volume opened after this call seals, in the background, each chunk
 * of its own not written for @secs seconds (sdfs.conf ec_seal_after_s,
 * default SDFS_EC_SEAL_AFTER_S); 0: never (sdfs_vol_seal still does). */
#define SDFS_EC_SEAL_AFTER_S 60
void sdfs_set_ec_seal_after(struct sdfs *s, int secs);
/* All of the above from a loaded sdfs.conf (common/conf.h): what every
 * program that connects with sdfs_connect_keyring applies. */
struct sdfs_conf;
void sdfs_set_conf(struct sdfs *s, const struct sdfs_conf *c);

/* ---- cluster ---- */

/*
 * Store the cluster config. @out_grace_ms: how long a node may be down
 * before its data is re-replicated (0: the default, 30 s). -EEXIST if
 * formatted already and !force.
 */
int sdfs_cluster_format(struct sdfs *s, unsigned copies, uint32_t obj_size,
			uint32_t out_grace_ms, int force);

struct sdfs_cluster_info {
	char uuid[40];
	unsigned copies;
	uint32_t obj_size;
	uint32_t out_grace_ms;  /* a node down this long goes out */
	uint64_t created;       /* unix seconds */
	uint64_t epoch;
	unsigned nodes, nodes_up;
};
/* -ENOENT if the cluster is not formatted. */
int sdfs_cluster_info(struct sdfs *s, struct sdfs_cluster_info *info);

struct sdfs_node_status {
	uint32_t node_id;
	char addr[80];          /* host:port */
	uint32_t zone, weight;
	const char *state;      /* "up", "down", "out" (static string) */
	int drain;              /* `sdfs node remove`: its data moves off */
	int weight_set;         /* weight set by an operator, not the node */
	int placed;             /* placement uses it (not out, not draining) */
	uint64_t down_ms;       /* down or out: unix ms when it went down */
	int reachable;          /* answered NODE_INFO just now */
	uint64_t epoch;         /* the epoch the node knows */
	uint64_t objects, used_bytes, total_bytes, requests, errors;
	uint64_t avail_bytes;   /* its data filesystem's statvfs f_bavail
				   (from a node before 1.6: total - used) */
	/* Its space as the node judged it (0 from nodes before 1.9):
	 * above nearfull_pct used; full: above full_pct, or less available
	 * than an object, or @enospc (a write hit ENOSPC and no object's
	 * worth of space came back since): it refuses data writes. */
	int nearfull, full, enospc;
	unsigned used_pct;      /* as df's Use%: used / (used + avail),
				   rounded up */
	/* Recovery, as of its pass at rec_epoch (all 0 from a 1.0 node). */
	uint64_t rec_epoch;     /* epoch of its current or last pass */
	uint64_t clean_epoch;   /* last epoch whose pass left nothing to do */
	uint64_t rec_todo_objs, rec_done_objs;  /* objects the pass settles */
	uint64_t rec_todo_bytes, rec_done_bytes;/* bytes it must fetch */
	uint64_t rec_unavail;   /* objects with no current copy reachable */
	uint64_t rec_extra;     /* copies kept here that placement moved away */
	uint64_t rec_elapsed_ms;/* since the pass started (to its end if over) */
	uint64_t moved_objs;    /* objects fetched since the daemon started */
	/* Erasure-coded stripes it counted in its last strip recovery pass
	 * (docs/ec.md; 0 from a node before 2.4): led by it and short of a
	 * strip on some position; with no version of k strips reachable. */
	uint64_t ec_degraded, ec_unavail;
};
/* All nodes of the current map; free *@out with free(). */
int sdfs_node_list(struct sdfs *s, struct sdfs_node_status **out, size_t *n);

struct sdfs_health {
	int healthy;            /* every object has all its copies, current */
	char reason[128];       /* "ok", "node 3 down (out in 12 s)",
				   "recovering", "2 objects unavailable",
				   "fewer nodes than copies: copies 3, the map can place 2",
				   "node 2 unreachable", "no nodes",
				   "node 2 full (97% used, 1.2 MiB available)" */
	uint64_t epoch;         /* of the map judged */
	unsigned nodes_up, nodes_down, nodes_out, nodes_draining;
	unsigned nodes_clean;   /* up nodes whose pass at epoch is clean */
	/* Recovery, summed over the up nodes' passes at epoch. */
	uint64_t todo_objs, done_objs, todo_bytes, done_bytes;
	uint64_t rate;          /* bytes/s fetched (sum of the nodes' rates) */
	int64_t eta_s;          /* seconds left at that rate; -1: unknown */
	uint64_t unavail;       /* objects with no current copy reachable */
	uint64_t extra;         /* copies still kept where placement moved away */
	uint64_t moved_objs;    /* objects fetched since the daemons started */
	/* Erasure-coded stripes, summed over the reachable nodes' last strip
	 * recovery passes (each stripe counted by one node); reported, not
	 * part of @healthy. */
	uint64_t ec_degraded, ec_unavail;
	uint32_t down_id;       /* the first placed down node, or 0 */
	int64_t out_in_s;       /* ... seconds until it goes out (0: due) */
	/* Space (docs/operations.md "Space"): a full node (it refuses data
	 * writes) makes the cluster unhealthy, an error; a near full one is
	 * a warning only (healthy stays 1). */
	unsigned nodes_nearfull, nodes_full;   /* full ones count in both */
	uint32_t full_id;       /* the first full node, or 0 */
	uint32_t nearfull_id;   /* the first near full (not full) node, or 0 */
	char warning[128];      /* "" or "node 3 near full (88% used)" */
	/* Copies: how many distinct copies the map can place now (placed up
	 * nodes, at most copies); below copies the cluster is degraded. */
	unsigned copies, copies_placeable;
};
/*
 * Does every object have its full redundancy right now? Healthy iff no
 * placed node is down (a drained one may be), at least `copies` up nodes
 * are placed, and every up node answered with the map's epoch, a clean
 * pass at that epoch and no unavailable objects. Asks every up node
 * (NODE_INFO). Fills @h and returns 0 whether healthy or not; -ENOENT if
 * not formatted, -errno if ZooKeeper cannot be read.
 */
int sdfs_cluster_health(struct sdfs *s, struct sdfs_health *h);

enum sdfs_node_action {
	SDFS_NODE_OUT,          /* a down node goes out now (no grace) */
	SDFS_NODE_REMOVE,       /* drain: its data moves off; it keeps serving
				   until its copies are safe elsewhere */
	SDFS_NODE_ADD,          /* undo REMOVE: placed again */
	SDFS_NODE_REWEIGHT,     /* set its weight; the node keeps it */
};
/*
 * Change node @node_id in the cluster map: a compare-and-swap that
 * writes a new epoch (retried a few times if a block daemon writes
 * first). @weight is used by REWEIGHT only (>= 1). Returns 0, -ENOENT (no such
 * node), -EBUSY (OUT of a node that is up: use REMOVE), -ENOSPC (REMOVE
 * would leave fewer placed nodes than copies), -EALREADY (nothing to
 * change: already out, draining, not draining, or that weight),
 * -EINVAL, or -errno from ZooKeeper.
 */
int sdfs_node_set(struct sdfs *s, uint32_t node_id, enum sdfs_node_action a,
		  uint32_t weight);

/* ---- scrub (docs/scrub.md) ---- */

enum sdfs_scrub_action {
	SDFS_SCRUB_ASK,         /* status only */
	SDFS_SCRUB_BEGIN,       /* start a pass now, or resume a paused one */
	SDFS_SCRUB_PAUSE,       /* pause the running pass */
};
#define SDFS_SCRUB_ALL UINT32_MAX      /* sdfs_scrub's node_id: every up node */

struct sdfs_scrub_status {
	uint32_t node_id;
	char addr[80];
	int result;             /* 0: answered; -EOPNOTSUPP: a daemon from
				   before scrub; -EACCES: start or pause
				   without an admin key;
				   -EHOSTDOWN: down in the map; -errno */
	const char *state;      /* "idle", "running", "paused" (static); "-" */
	uint64_t cursor;        /* every oid <= this was checked, this pass */
	uint64_t objects, bytes;/* verified, this pass */
	uint64_t found, repaired, unrepaired;   /* corrupt copies, this pass */
	uint64_t total_found, total_repaired, total_unrepaired;
	uint64_t passes;        /* complete passes */
	uint64_t pass_start_ms, pass_end_ms;    /* unix ms; 0: never */
	uint64_t next_start_ms; /* the schedule's next pass; 0: none due */
	uint64_t rate;          /* bytes/s */
	uint64_t interval_s;    /* 0: only on demand */
	uint64_t store_objects; /* in its store now (progress: objects/this) */
	/* this pass: the other holders' copies of the same version
	 * compared with the node's, and the node's copies that differed
	 * from the right one (stale, or the odd one of a version: see its
	 * log), of which refreshed were replaced (docs/scrub.md) */
	uint64_t compared, mismatched, total_mismatched;
	uint64_t refreshed, total_refreshed;
	/* the last complete pass began: every object the node stored then
	 * was verified after it (unless written since); 0: none yet or a
	 * daemon that does not say */
	uint64_t last_start_ms;
	/* strip files of EC objects (docs/scrub.md "Strips"), this pass:
	 * verified, their bytes, found corrupt, rebuilt in place, left as
	 * they were; and totals since the node's state file was made (0
	 * from a daemon that does not say) */
	uint64_t strips, strip_bytes, strips_found, strips_repaired, strips_unrepaired;
	uint64_t total_strips_found, total_strips_repaired, total_strips_unrepaired;
};
/*
 * Ask node @node_id (or every node of the current map, SDFS_SCRUB_ALL)
 * about its scrub, after doing @a there (start, pause: the key must be
 * admin). @rate: bytes/s for a pass BEGIN starts or resumes (0: the
 * node's own; rounded down to KiB/s). *@out (free()) gets one entry per
 * node asked, *@n of them, each with its own result. 0; -ENOENT: no
 * such node; -errno from reading the map.
 */
int sdfs_scrub(struct sdfs *s, uint32_t node_id, enum sdfs_scrub_action a,
	       uint64_t rate, struct sdfs_scrub_status **out, size_t *n);

/* ---- objects ---- */

/* Read up to @len bytes at @off; returns the count (short at the
 * object's end) or -ENOENT, -EIO, -ETIMEDOUT... */
ssize_t sdfs_obj_read(struct sdfs *s, uint64_t oid, void *buf, size_t len,
		      uint64_t off);
/* Write @len bytes at @off, creating the object if missing. -EFBIG past
 * the object size. */
int sdfs_obj_write(struct sdfs *s, uint64_t oid, const void *buf, size_t len,
		   uint64_t off);
/* Replace the whole object with @buf (atomic on each replica). */
int sdfs_obj_put(struct sdfs *s, uint64_t oid, const void *buf, size_t len);
/* -ENOENT if no replica had it. */
int sdfs_obj_remove(struct sdfs *s, uint64_t oid);
/* Make the object durable against power loss on every replica. */
int sdfs_obj_flush(struct sdfs *s, uint64_t oid);
/*
 * sdfs_obj_flush of each of @oids[0..n), the replicas of many objects
 * at once (a file's or a volume's fsync). An object absent from every
 * replica counts as flushed (truncated or punched since it was
 * written). 0, or the error of the first object that failed; objects
 * after it may not have been flushed (a failure costs one timeout, not
 * one per object).
 */
int sdfs_obj_flush_many(struct sdfs *s, const uint64_t *oids, size_t n);

/*
 * ---- erasure-coded objects (docs/ec.md) ----
 * An object stored as @k data + @m parity strips (1 <= k <= 16,
 * 1 <= m <= 4) on k + m distinct nodes (at most m in a zone), any m of
 * which may be lost. A separate name space from the replicated objects
 * above: the same oid may name one of each. The caller says the code,
 * for the put and for every read (volumes and files will carry it).
 *
 * sdfs_ec_put: the whole object (at most the object size) as a new
 * version of all k + m strips; 0 once every strip is stored durably,
 * after which the older version is dropped. A crash or failure before
 * leaves the object reading as its old or its new contents, never a
 * mix. -ENODEV: the cluster cannot place k + m strips (too few nodes
 * with weight, or of zones holding at most m each); -EIO / -ETIMEDOUT:
 * a strip holder stayed down or unreachable; -EINVAL: bad k or m.
 * sdfs_ec_read: up to @len bytes at @off (short at the end), from the
 * newest version with k good strips, rebuilding what a missing or
 * corrupt strip held; -ENOENT if no holder has any strip of it, or
 * its newest version is a removal's.
 * sdfs_ec_remove: a tombstone as the newest version of every strip,
 * stored and committed on the holders that answer (at least max(k,
 * m + 1)): the object reads -ENOENT from then on, the holders drop its
 * older versions, and one that was down gets the tombstone from strip
 * recovery when it is back, never bringing the object back. A later
 * put makes it exist again. -ENOENT: nothing to remove; -EIO /
 * -ETIMEDOUT: too few holders answered until the timeout.
 * Keys that need object capabilities (docs/security.md) use them as
 * for replicated objects: the oid's owner's cap (a file's or a
 * volume's), asked from the mds and sent with every strip request;
 * read-write for a put or removal, read for a read. Raw oids are for
 * admin and daemon keys only. -EACCES: no cap the block daemons take
 * (none for this key and oid, too few rights: a read-only key's or a
 * frozen volume state's put; or refused again after a fresh one).
 */
struct sdfs_ec_opts {
	unsigned stop_after;    /* test hook: 1..k+m-1: store strips
				   0..stop_after-1 of the new version, one
				   after the other, and stop (-ECANCELED),
				   as a writer killed between strips */
	uint32_t token;         /* a volume writer's token (0: none): the
				   strips of a sealed volume chunk
				   (oid_vstripe) are then stored and
				   committed only while the block daemons'
				   fence of its vid is at most @token
				   (-EPERM: fenced) and the vid is not
				   frozen (-EROFS), as the writer's object
				   writes are (docs/ec.md "Fencing") */
};
int sdfs_ec_put(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, const void *buf,
		size_t len);
int sdfs_ec_put_ex(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, const void *buf,
		   size_t len, const struct sdfs_ec_opts *o);
struct sdfs_ec_rstat {
	uint64_t version;       /* the version read */
	uint64_t size;          /* the object's size in that version */
	unsigned strips_read;   /* strip reads sent */
	unsigned rebuilt;       /* data strips decoded from others */
};
ssize_t sdfs_ec_read(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, void *buf,
		     size_t len, uint64_t off);
ssize_t sdfs_ec_read_ex(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, void *buf,
			size_t len, uint64_t off, struct sdfs_ec_rstat *rs);
int sdfs_ec_remove(struct sdfs *s, uint64_t oid, unsigned k, unsigned m);
/* The node ids holding strips 0..k+m-1 in the current map into @ids (at
 * most @max); returns k + m, or -ENODEV as sdfs_ec_put. */
int sdfs_ec_locate(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, uint32_t *ids,
		   size_t max);

struct sdfs_obj_info {
	uint64_t size;
	uint64_t epoch;         /* epoch of its last write */
};
int sdfs_obj_stat(struct sdfs *s, uint64_t oid, struct sdfs_obj_info *info);

struct sdfs_replica {
	uint32_t node_id;
	char addr[80];
	const char *state;      /* node state: "up", "down" */
	int result;             /* 0: present; -ENOENT, -EBADMSG, -EIO... */
	uint64_t size, epoch, csum;
	char path[1024];        /* the object's file on that node */
};
/* Where placement puts @oid and what each of those nodes holds. Fills
 * up to @max entries; *@n is the number of placed copies. */
int sdfs_obj_locate(struct sdfs *s, uint64_t oid, struct sdfs_replica *out,
		    size_t max, size_t *n);

/* The largest object size of the cluster (0 if not formatted). */
uint32_t sdfs_obj_size(struct sdfs *s);

/* ---- fencing and durable writes (for sdfs-mds and volume writers) ---- */

/*
 * Every mutation this handle sends from now on carries @token (the
 * MDS epoch, for MDS-database objects). A block daemon whose fence is
 * higher refuses it: the call returns -EPERM ("fenced"), never retried.
 * 0 (the default): no token.
 */
void sdfs_set_fence_token(struct sdfs *s, uint32_t token);
/* Raise the MDS fence of every up block daemon to @epoch, durably.
 * Returns 0 once every node that is up in the map acknowledged (nodes
 * that go down meanwhile are skipped: they re-read the epoch from
 * ZooKeeper when they come back), -ETIMEDOUT at the handle's timeout. */
int sdfs_mds_fence(struct sdfs *s, uint64_t epoch);

#define SDFS_WRITE_SYNC 0x1     /* durable on every replica (fdatasync) before return */
/* sdfs_obj_write with flags. */
int sdfs_obj_write_ex(struct sdfs *s, uint64_t oid, const void *buf, size_t len,
		      uint64_t off, unsigned flags);

/* ---- namespace (served by the active sdfs-mds) ----
 *
 * Inode numbers are 64-bit and never reused; the root is 1. Calls find
 * the active mds through ZooKeeper and, if it fails, retry against the
 * next one with the same request id, so a retried create, mkdir,
 * rename, unlink or link returns its first result instead of being
 * applied twice. They give up after the handle's timeout with
 * -EHOSTDOWN if no mds was active all that time, else -ETIMEDOUT. Errors are the POSIX ones (-ENOENT, -EEXIST, -ENOTDIR,
 * -EISDIR, -ENOTEMPTY, -EINVAL, -ENAMETOOLONG, -ELOOP...). Names are
 * single components (no '/'), at most 255 bytes. The mds checks
 * permissions as the thread's caller (sdfs_set_caller): -EACCES, -EPERM.
 */
struct sdfs_stat {
	uint64_t ino, gen;
	uint64_t size, blocks;          /* blocks: 512-byte units */
	int64_t atime_ns, mtime_ns, ctime_ns;   /* ns since 1970 */
	uint64_t parent;                /* directories: the parent */
	uint32_t mode, nlink, uid, gid, rdev;
	uint32_t obj_size;              /* regular files: bytes per data object */
	uint16_t copies;                /* 0: the cluster's */
	uint16_t layout;                /* SDFS_LAYOUT_FILE: data in objects (sdfs_file_*) */
	uint32_t flags;                 /* SDFS_STAT_LEASED */
};
/* From sdfs_ns_getattr, sdfs_ns_lookup and readdirplus: this client is
 * subscribed (sdfs_ns_subscribe) and the mds leased it the inode before
 * reading it: until the lease ends (the subscribed cache time after the
 * call was made), every change to the inode that the mds acknowledges is
 * first notified to this client (SDFS_INVAL_INODE). */
#define SDFS_STAT_LEASED 0x1u
/* From sdfs_ns_on_attrs's attributes and sdfs_ns_mkdir: a directory
 * whose names the mds leased this client too (SDFS_ATTR_F_LISTING): until
 * the lease ends, a name another client adds or removes in it is first
 * notified (SDFS_INVAL_ENTRY). */
#define SDFS_STAT_LISTING 0x2u
/* From sdfs_ns_create: the mds holds the new file open for this handle. */
#define SDFS_STAT_HELD 0x4u
/* From sdfs_ns_getattr of a regular file: another handle holds it with
 * sdfs_ns_hold_writeback, so its data may be newer than its mtime: a
 * cache judged by mtime and size is not to be trusted. */
#define SDFS_STAT_WRITEBACK 0x8u
#define SDFS_LAYOUT_FILE 1
#define SDFS_LAYOUT_VOLUME 2            /* a volume file: use sdfs_vol_* */

#define SDFS_SETATTR_MODE      0x01u
#define SDFS_SETATTR_UID       0x02u
#define SDFS_SETATTR_GID       0x04u
#define SDFS_SETATTR_SIZE      0x08u   /* truncate: data past it is freed */
#define SDFS_SETATTR_ATIME     0x10u
#define SDFS_SETATTR_MTIME     0x20u
#define SDFS_SETATTR_ATIME_NOW 0x40u
#define SDFS_SETATTR_MTIME_NOW 0x80u
#define SDFS_SETATTR_CTIME     0x100u  /* move ctime; any change but an
					   atime alone moves it anyway */
#define SDFS_SETATTR_EXTEND    0x200u  /* with SIZE: only grow (a size a
					   writer pushes; never truncates) */
#define SDFS_SETATTR_FH        0x400u  /* with SIZE: through a file the
					   caller opened for writing
					   (ftruncate): the mds does not
					   check write permission again */
#define SDFS_SETATTR_DURABLE   0x08000000u /* return once this change
					   and every one this handle saw
					   acknowledged before it is
					   durable (sdfs_ns_sync), in one
					   request: fsync's push */
struct sdfs_setattr {
	unsigned mask;                  /* SDFS_SETATTR_* */
	uint32_t mode, uid, gid;
	uint64_t size;
	int64_t atime_ns, mtime_ns;
};

int sdfs_ns_lookup(struct sdfs *s, uint64_t dir, const char *name, struct sdfs_stat *st);
int sdfs_ns_getattr(struct sdfs *s, uint64_t ino, struct sdfs_stat *st);
/* getattr for an open: @mask of R_OK, W_OK, X_OK (4, 2, 1) is the
 * access the caller is about to make; -EACCES unless the mds lets it
 * (mode, ACL, ownership: docs/mds.md "Permissions"). */
int sdfs_ns_access(struct sdfs *s, uint64_t ino, int mask, struct sdfs_stat *st);
int sdfs_ns_setattr(struct sdfs *s, uint64_t ino, const struct sdfs_setattr *sa,
		    struct sdfs_stat *st);
/* Directory @ino's redundancy policy: regular files, volumes and
 * directories made in it from now on get @copies (1..15; 0: the
 * cluster's) and keep it (st->copies); what exists is not changed.
 * Root only: -EPERM; -ENOTDIR, -EINVAL (also from an mds before 2.4). */
int sdfs_ns_setpolicy(struct sdfs *s, uint64_t ino, unsigned copies, struct sdfs_stat *st);
/*
 * setattr, with a report of the data objects (chunks, @chunks[i] the
 * chunk index; with SDFS_CHUNK_GONE set: removed, a punched hole) this
 * client made in regular file @ino since its last report: the mds
 * counts the file's space from them (st_blocks, docs/mount.md "Space").
 * A writer pushing a size sends one, even with @n 0; at most
 * SDFS_CHUNKS_MAX entries (-EINVAL). An mds before 1.6 ignores it.
 */
#define SDFS_CHUNK_GONE (1ull << 63)
#define SDFS_CHUNKS_MAX 8192u
int sdfs_ns_setattr_chunks(struct sdfs *s, uint64_t ino, const struct sdfs_setattr *sa,
			   const uint64_t *chunks, size_t n, struct sdfs_stat *st);
/* Regular files, fifos, sockets, devices: @mode has the type bits
 * (S_IFREG when none). @st may be NULL in every call that fills one.
 * A directory's default ACL (docs/acl.md) masks @mode and becomes the
 * new inode's access ACL (and a new directory's default ACL). */
int sdfs_ns_mknod(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t rdev, uint32_t uid, uint32_t gid, struct sdfs_stat *st);
int sdfs_ns_mkdir(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, struct sdfs_stat *st);
/* Or'ed into @mode of sdfs_ns_mknod/mkdir: the creator's umask @u, for
 * the mds to apply where the directory has no default ACL (with one,
 * the ACL decides: umask never applies). Without it, @mode is used as
 * given. An mds older than protocol 1.6 ignores it. */
#define SDFS_MODE_UMASK(u) (SDFS_MODE_UMASK_SET | ((uint32_t)(u) & 0777u) << 16)
#define SDFS_MODE_UMASK_SET 0x80000000u
int sdfs_ns_unlink(struct sdfs *s, uint64_t dir, const char *name);
int sdfs_ns_rmdir(struct sdfs *s, uint64_t dir, const char *name);
/* @flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE (linux/fs.h values 1, 2),
 * or (for mds before 1.8; mount.sdfs now holds open files instead,
 * sdfs_ns_hold) SDFS_RENAME_HIDE: a replaced file with one link is not removed but
 * renamed to SDFS_HIDDEN_NAME_FMT (with its inode number) in @newdir,
 * for a client that holds it open and removes that name at its last
 * close; -EEXIST if that name is taken. */
#define SDFS_RENAME_HIDE 0x40000000u
#define SDFS_HIDDEN_NAME_FMT ".sdfs-hidden-%016llx"
int sdfs_ns_rename(struct sdfs *s, uint64_t dir, const char *name,
		   uint64_t newdir, const char *newname, unsigned flags);
/* Open files (docs/mds.md "Strays"): the handle holds @ino open until
 * the matching sdfs_ns_release (counted: only the first hold and the
 * last release ask the mds; a last release is sent 2 s later, so a file
 * opened again meanwhile costs nothing). While any handle of the cluster holds it,
 * a file whose last name went stays (nlink 0) with its data, usable by
 * inode number; after the last release anywhere, or once the holder's
 * ZooKeeper session ended (the process died), the mds frees it. Holds
 * are made under the handle's lock identity and told again to a new
 * active mds when the handle resubscribes (sdfs_ns_subscribe: a handle
 * without a subscription keeps its holds only with the active it told).
 * 0 or -errno (-ENOLCK: ZooKeeper unreachable); the hold is counted even
 * then, and told at the next subscription. An mds older than 1.8
 * answers 0 and keeps such files only for a grace of seconds. */
int sdfs_ns_hold(struct sdfs *s, uint64_t ino);
void sdfs_ns_release(struct sdfs *s, uint64_t ino);
/* While the caller holds @ino (sdfs_ns_hold), mark the hold "this
 * handle may keep the file's mtime behind its data" (protocol 2.3):
 * the other handles' leases on it end, and their sdfs_ns_getattr says
 * SDFS_STAT_WRITEBACK until the hold is let go. Only the first call per
 * hold asks the mds. 0; -EOPNOTSUPP from an mds before 2.3 (then every
 * later call answers so at once); -EAGAIN when the hold itself is not
 * known to the mds yet; -errno. */
int sdfs_ns_hold_writeback(struct sdfs *s, uint64_t ino);
/* sdfs_ns_mknod of a regular file that the mds holds open for this
 * handle from the create on, in one request (an mds before 2.1: two,
 * or none held): the hold lingers as a released one does (then it is
 * let go), so an sdfs_ns_hold of the new file right after asks the mds
 * nothing. */
int sdfs_ns_create(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		   uint32_t uid, uint32_t gid, struct sdfs_stat *st);
int sdfs_ns_link(struct sdfs *s, uint64_t ino, uint64_t newdir, const char *newname,
		 struct sdfs_stat *st);
int sdfs_ns_symlink(struct sdfs *s, uint64_t dir, const char *name, const char *target,
		    uint32_t uid, uint32_t gid, struct sdfs_stat *st);
/* The target's length (may exceed @len: then truncated, not terminated). */
ssize_t sdfs_ns_readlink(struct sdfs *s, uint64_t ino, char *buf, size_t len);

/*
 * List @dir from @cookie (0: the start), calling @fn for each entry in
 * a stable order until the end or until @fn returns nonzero. @cookie of
 * an entry resumes after it. @type is the S_IFMT bits of its mode (not
 * a DT_* value). With @plus, @st is the entry's attributes (else NULL). "." and ".." are not listed. Memory is bounded (pages of
 * at most 64 KiB) whatever the directory's size.
 */
typedef int (*sdfs_dirent_fn)(void *arg, const char *name, uint64_t ino,
			      uint32_t type, uint64_t cookie, const struct sdfs_stat *st);
int sdfs_ns_readdir(struct sdfs *s, uint64_t dir, uint64_t cookie, int plus,
		    sdfs_dirent_fn fn, void *arg);

struct sdfs_statfs {
	uint64_t bytes_total, bytes_free;       /* usable, after replication */
	uint64_t bytes_avail;   /* ...what the daemons may still write (their
				   data filesystems' f_bavail) / copies; <=
				   bytes_free (an mds before 1.6: = free) */
	uint64_t files, files_free;
	uint32_t bsize, name_max;
};
int sdfs_ns_statfs(struct sdfs *s, struct sdfs_statfs *st);

/*
 * Make every namespace change this handle's calls made (and every one
 * acknowledged to anyone before this call) durable: on stable storage on
 * every replica of the mds database, so a power loss of every node keeps
 * it (docs/consistency.md "What is durable when"). An acknowledged change
 * already survives the crash of any process and the loss of copies-1
 * nodes; this is what fsync and fsyncdir add. Returns 0 at once when this
 * handle made no change since its last sync. 0 or -errno (-EIO).
 */
int sdfs_ns_sync(struct sdfs *s);
/* The same for every change any client made that was acknowledged
 * before this call, whatever this handle did (`sdfs fs sync`). */
int sdfs_ns_sync_all(struct sdfs *s);

/* xattrs: names "user.*", "trusted.*", "security.*", and the POSIX
 * ACLs "system.posix_acl_access" and "system.posix_acl_default" in the
 * kernel's xattr form (-EINVAL when not a valid ACL; setting an access
 * ACL sets the mode bits, docs/acl.md); -EOPNOTSUPP for other names.
 * Values up to 64 KiB. get/list with @len 0 return the size.
 * -ERANGE if @len is too small, -ENODATA if absent. @flags: 0,
 * XATTR_CREATE (1) or XATTR_REPLACE (2), with SDFS_XATTR_KILL_SGID for
 * an access ACL set by a caller outside the file's group (as Linux
 * clears setgid then). */
#define SDFS_XATTR_KILL_SGID 0x100
ssize_t sdfs_ns_getxattr(struct sdfs *s, uint64_t ino, const char *name,
			 void *buf, size_t len);
int sdfs_ns_setxattr(struct sdfs *s, uint64_t ino, const char *name,
		     const void *val, size_t len, int flags);
ssize_t sdfs_ns_listxattr(struct sdfs *s, uint64_t ino, char *buf, size_t len);
int sdfs_ns_removexattr(struct sdfs *s, uint64_t ino, const char *name);

/* Resolve an absolute path ("/a/b") component by component as POSIX
 * does: symlinks met on the way are followed (relative ones from their
 * directory), the last component only with @follow; -ELOOP after 40
 * symlinks; "/" is the root, ".." of the root is the root. */
int sdfs_ns_resolve(struct sdfs *s, const char *path, int follow, struct sdfs_stat *st);

/*
 * Pushed invalidations (docs/consistency.md). From now on the active
 * mds remembers which inode attributes and names its replies gave this
 * handle within the last @cache_ms (how long the caller caches them),
 * and before it acknowledges a change another client makes to one of
 * them it calls @fn with what became stale: records of
 * SDFS_INVAL_INODE (ino) and SDFS_INVAL_ENTRY (parent ino, name; not
 * NUL-terminated, valid during the call). @fn runs on a thread of
 * libsdfs, one message at a time, and the other client waits until it
 * returned: it should drop the items and return, never wait for calls
 * of this handle. The subscription follows mds failovers. Once per
 * handle: 0, -EEXIST, -ENOMEM. sdfs_close ends it.
 */
enum sdfs_inval_kind {
	SDFS_INVAL_INODE = 1,   /* the attributes of inode `ino` */
	SDFS_INVAL_ENTRY = 2,   /* the name `name` in directory `ino`, whether
				   cached as present or as missing */
	/* Also passed to @fn, alone, right after each (re)subscription:
	 * what the mds may have pushed while there was no subscription (at
	 * start, or after a lost connection or a failover) is lost, so
	 * drop whatever can be dropped. */
	SDFS_INVAL_ALL = 0x80,
};
/* SDFS_INVAL_INODE: only the atime moved (another client's read): the
 * data, size, ctime and names are as they were (from a 2.4 mds). */
#define SDFS_INVAL_F_ATIME 0x1u
struct sdfs_inval {
	uint8_t kind;           /* enum sdfs_inval_kind */
	uint8_t flags;          /* SDFS_INVAL_F_* */
	uint16_t name_len;      /* SDFS_INVAL_ENTRY: name's bytes */
	uint64_t ino;
	const char *name;       /* name_len bytes, not NUL-terminated */
};
typedef void (*sdfs_inval_fn)(void *arg, const struct sdfs_inval *iv, size_t n);
int sdfs_ns_subscribe(struct sdfs *s, uint32_t cache_ms, sdfs_inval_fn fn, void *arg);

/*
 * After each change this handle makes (mknod, mkdir, symlink, link,
 * unlink, rmdir, rename), @fn gets the attributes, as they are after it,
 * of the other inodes it changed: the directories, and the inode a name
 * went from or moved (nlink 0 when that was its last), each with
 * SDFS_STAT_LEASED when the mds leased it as for sdfs_ns_getattr. One
 * call per inode, on the calling thread, before the change's call
 * returns; none from an mds older than 2.1. NULL: the mds is not asked
 * for them. Set it before the handle is used from other threads.
 */
typedef void (*sdfs_attrs_fn)(void *arg, const struct sdfs_stat *st);
void sdfs_ns_on_attrs(struct sdfs *s, sdfs_attrs_fn fn, void *arg);

/* A regular file's data (layout 1): read and write through its objects.
 * Reads past @st->size return 0 bytes, holes read as zeros. A write does
 * not change the size kept by the mds: follow it with sdfs_ns_setattr
 * (SIZE) when it grows the file. */
ssize_t sdfs_file_pread(struct sdfs *s, const struct sdfs_stat *st, void *buf,
			size_t len, uint64_t off);
int sdfs_file_pwrite(struct sdfs *s, const struct sdfs_stat *st, const void *buf,
		     size_t len, uint64_t off, unsigned flags);
/* The largest size a file of chunks of @obj_size bytes can have (its
 * chunk numbers run out): writes and sizes past it are EFBIG. */
uint64_t sdfs_file_max_size(uint32_t obj_size);
/* fsync's data half: chunks @chunks[0..n) of regular file @st->ino
 * (chunk i holds bytes [i * obj_size, (i + 1) * obj_size)) made durable
 * on every replica, all at once; a chunk that is gone (truncated or
 * punched meanwhile) is fine. 0 or -errno. */
int sdfs_file_flush(struct sdfs *s, const struct sdfs_stat *st, const uint64_t *chunks,
		    size_t n);
/* Zero [@off, @off + @len) of the file: a chunk it covers whole is
 * removed (@gone(@arg, chunk) is called for each, if set; the caller
 * tells the mds, sdfs_ns_setattr_chunks), the part of another that
 * has data is overwritten with zeros. The size does not change. */
int sdfs_file_punch(struct sdfs *s, const struct sdfs_stat *st, uint64_t off,
		    uint64_t len, void (*gone)(void *arg, uint64_t chunk), void *arg);
/* lseek's SEEK_DATA / SEEK_HOLE from @off (< @st->size) over the file's
 * chunks (a missing chunk, or the part past a chunk's end, is a hole;
 * the size ends the last one): the offset in *@out. -ENXIO: no data at
 * or after @off (SEEK_DATA); -EINVAL: another @whence. */
int sdfs_file_seek(struct sdfs *s, const struct sdfs_stat *st, uint64_t off, int whence,
		   uint64_t *out);

/* ---- objects with an explicit fencing token (volumes) ----
 * As sdfs_obj_write_ex / _put / _remove, but carrying @token instead of
 * the handle's. -EROFS: the object's vid is frozen; -EPERM: fenced. */
int sdfs_obj_write_tok(struct sdfs *s, uint64_t oid, const void *buf, size_t len,
		       uint64_t off, unsigned flags, uint32_t token);
int sdfs_obj_put_tok(struct sdfs *s, uint64_t oid, const void *buf, size_t len,
		     uint32_t token);
int sdfs_obj_remove_tok(struct sdfs *s, uint64_t oid, uint32_t token);
/*
 * sdfs_obj_remove_tok of each of @oids[0..n), the replicas of many
 * objects at once (volume reclaim); @res[i] gets each one's result (0,
 * -ENOENT if no replica had it, or an error). Returns 0, or the first
 * error other than -ENOENT: the objects after it were not tried and
 * have that error in @res (a failure costs one timeout, not one per
 * object).
 */
int sdfs_obj_remove_many_tok(struct sdfs *s, const uint64_t *oids, size_t n,
			     uint32_t token, int *res);
/* Raise every up block daemon's fence of @vid to @token (VOL_FENCE).
 * Same contract as sdfs_mds_fence. */
int sdfs_vol_fence(struct sdfs *s, uint64_t vid, uint32_t token);
/*
 * Before @vid's data objects are removed (reclaim): have every block
 * daemon fill now each object it holds that is still backed by one of
 * @vid's (OBJ_FILL, 2.4; docs/volumes.md "Copy-on-write"). 0 when every
 * node of the map said so (a 2.3 daemon makes none: counts as done);
 * -EAGAIN when a node of the map is not up or one could not finish in
 * time (try later; nothing may be removed meanwhile); -errno.
 */
int sdfs_vol_fill(struct sdfs *s, uint64_t vid);

/* ---- volumes (docs/volumes.md) ----
 *
 * A volume file is a regular file of layout SDFS_LAYOUT_VOLUME whose
 * data lives in a volume: an index object and data objects made on first
 * write, shared copy-on-write with its snapshots and clones. The mds
 * keeps the catalog (which vid is a file's live state, its snapshots,
 * the family); data I/O goes from the client to the block daemons.
 */
#define SDFS_VOL_SNAP_NAME_MAX 64       /* [A-Za-z0-9._-], not "." or ".." */
struct sdfs_vol_info {
	uint64_t vid;                   /* this state's volume id */
	uint64_t family;                /* vid of the family's first volume */
	uint64_t parent;                /* vid it was copied from; 0: none */
	uint64_t ino;                   /* its volume file */
	uint64_t size;                  /* bytes (a snapshot: when taken) */
	uint64_t objects;               /* data objects it owns (tree, list) */
	int64_t ctime_ns;
	uint32_t obj_size;
	uint16_t copies;                /* 0: the cluster's */
	uint16_t state;                 /* SDFS_VOL_LIVE/SNAP/DELETED/PENDING */
	uint32_t token;                 /* live: its fence */
	char name[SDFS_VOL_SNAP_NAME_MAX + 1]; /* a snapshot's name; "" */
};
#define SDFS_VOL_LIVE    1
#define SDFS_VOL_SNAP    2
#define SDFS_VOL_DELETED 3
#define SDFS_VOL_PENDING 4

/* A new, empty (thin) volume file of @size bytes. @copies 0 and
 * @obj_size 0: the cluster's. */
int sdfs_vol_create(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		    uint32_t uid, uint32_t gid, uint64_t size, unsigned copies,
		    uint32_t obj_size, struct sdfs_stat *st);
/* The live state of volume file @ino (@snap NULL) or its snapshot @snap.
 * -EMEDIUMTYPE if @ino is not a volume file. */
int sdfs_vol_info(struct sdfs *s, uint64_t ino, const char *snap,
		  struct sdfs_vol_info *vi);
/* Snapshot the live state as @name (metadata only; a writer carries on
 * in a new state). */
int sdfs_vol_snap_create(struct sdfs *s, uint64_t ino, const char *name,
			 struct sdfs_vol_info *vi);
/* The snapshots of @ino, oldest first; free *@out with free(). */
int sdfs_vol_snap_list(struct sdfs *s, uint64_t ino, struct sdfs_vol_info **out,
		       size_t *n);
int sdfs_vol_snap_delete(struct sdfs *s, uint64_t ino, const char *name);
/* Make snapshot @name the live state (the current one is discarded).
 * -EBUSY while a writer holds the volume. */
int sdfs_vol_rollback(struct sdfs *s, uint64_t ino, const char *name,
		      struct sdfs_vol_info *vi);
/* A new volume file @dir/@name whose data starts as snapshot @snap of @ino. */
int sdfs_vol_clone(struct sdfs *s, uint64_t ino, const char *snap, uint64_t dir,
		   const char *name, uint32_t mode, uint32_t uid, uint32_t gid,
		   struct sdfs_stat *st);
/* Every member of @ino's family (live states, snapshots, deleted states
 * not yet reclaimed); free *@out with free(). */
int sdfs_vol_tree(struct sdfs *s, uint64_t ino, struct sdfs_vol_info **out, size_t *n);
struct sdfs_reclaim_status {
	uint64_t vids_pending, objects_pending, bytes_pending;
	uint64_t objects_freed, bytes_freed, sweeps;
};
int sdfs_vol_reclaim_status(struct sdfs *s, struct sdfs_reclaim_status *rs);

/*
 * An open volume: its index in memory, I/O straight to the block
 * daemons. Any number of threads may do I/O on one handle at once.
 *
 * Opening with SDFS_VOL_WRITE takes the volume's writer lock in
 * ZooKeeper (-EBUSY if another handle, anywhere, holds it; with
 * SDFS_VOL_WAIT it waits up to the handle's timeout, with
 * SDFS_VOL_GRACE up to SDFS_VOL_GRACE_MS: a holder that is letting go,
 * e.g. a mount whose last writer just exited, is then no conflict),
 * gets a new token and fences every block daemon with it: a previous
 * writer's writes are refused from then on. If this handle is fenced
 * in turn (its session expired and someone else took the lock) every
 * later write fails with -EPERM. A snapshot taken meanwhile is
 * followed transparently. Read-only handles (no flag) see the live
 * state as of open (reloaded at most every second) or a snapshot.
 */
struct sdfs_vol;
#define SDFS_VOL_WRITE 0x1
#define SDFS_VOL_WAIT  0x2
#define SDFS_VOL_GRACE 0x4
#define SDFS_VOL_GRACE_MS 1000
/* @holder: describes this opener to a refused one (NULL: host and pid). */
int sdfs_vol_open(struct sdfs *s, uint64_t ino, unsigned flags, const char *holder,
		  struct sdfs_vol **out);
/* A snapshot, read-only. */
int sdfs_vol_open_snap(struct sdfs *s, uint64_t ino, const char *snap,
		       struct sdfs_vol **out);
/* Reads past the size return 0 bytes; never-written chunks read as
 * zeros without I/O. */
ssize_t sdfs_vol_pread(struct sdfs_vol *v, void *buf, size_t len, uint64_t off);
/* Writes past the size grow it (the mds is told before return).
 * -EROFS on a read-only handle, -EPERM once fenced. */
int sdfs_vol_pwrite(struct sdfs_vol *v, const void *buf, size_t len, uint64_t off);
/* Zero a range; whole chunks become unallocated (their objects freed if
 * this state owns them). */
int sdfs_vol_punch(struct sdfs_vol *v, uint64_t off, uint64_t len);
/* Every write acknowledged so far is durable against power loss. */
int sdfs_vol_flush(struct sdfs_vol *v);
/* Grow or shrink (writers only); a shrink frees the chunks past it. */
int sdfs_vol_resize(struct sdfs_vol *v, uint64_t size);
uint64_t sdfs_vol_size(struct sdfs_vol *v);
/* What this handle reads: the live or snapshot state it shows. */
void sdfs_vol_get_info(struct sdfs_vol *v, struct sdfs_vol_info *vi);
/* Who owns chunk @chunk (the vid whose object holds it; 0: never
 * written); for SEEK_DATA and diffs. Chunk size: vi.obj_size. */
uint64_t sdfs_vol_chunk_owner(struct sdfs_vol *v, uint64_t chunk);
/* Is chunk @chunk sealed (an erasure-coded volume's chunk stored as a
 * stripe, docs/ec.md "EC volumes")? */
int sdfs_vol_chunk_sealed(struct sdfs_vol *v, uint64_t chunk);
/*
 * Seal every chunk this writer owns that is still replicated, now
 * (whatever ec_seal_after_s says), one after the other: read it, store
 * it as an EC object (sdfs_ec_put), mark its index entry sealed, remove
 * the replicated object. Chunks of ancestors (a snapshot's, a clone's
 * source's) stay as they are. @progress (may be NULL) is called after
 * each chunk looked at with the chunks done and the total. Fills @st
 * (may be NULL): chunks sealed, and bytes they hold. -EROFS without
 * SDFS_VOL_WRITE; -EMEDIUMTYPE: the volume has no erasure code;
 * -ENODEV: the cluster cannot place k + m strips; else sdfs_ec_put's.
 */
struct sdfs_vol_seal_stat {
	uint64_t chunks, sealed, skipped, bytes;
};
int sdfs_vol_seal(struct sdfs_vol *v, void (*progress)(void *arg, uint64_t done,
		  uint64_t total), void *arg, struct sdfs_vol_seal_stat *st);
/* Flush, release the lock, free. NULL ok. */
void sdfs_vol_close(struct sdfs_vol *v);

/* ---- the metadata service ---- */
struct sdfs_mds_entry {
	char name[32];                  /* "mds.0" */
	char addr[80];
	int active;
};
struct sdfs_mds_status {
	int has_active;
	char active[32], addr[80];      /* the active's name and address */
	uint64_t epoch;                 /* MDS epoch (bumped at every takeover) */
	int reachable;                  /* the active answered just now */
	uint64_t db_bytes, db_files, inodes, ops;
	uint64_t active_ms;             /* unix ms when it became active */
	/* pushed invalidations (docs/consistency.md): subscribed clients,
	 * leases held, notifications sent for changes, and how many of
	 * those ended by the lease running out instead of an answer */
	uint64_t subs, leases, pushes, push_timeouts;
	uint64_t lock_wakes;            /* lock wake-ups sent (docs/locks.md) */
	uint64_t strays;                /* files without a name kept because a
					   client holds them open (docs/mds.md) */
	/* EC files sealed and unsealed since it became active (docs/ec.md
	 * "EC files"; 0 from an mds before 2.6) */
	uint64_t ec_seals, ec_unseals, ec_sealed_bytes;
	size_t n;                       /* running mds, election order */
	struct sdfs_mds_entry *list;    /* free with free() */
};
int sdfs_mds_status(struct sdfs *s, struct sdfs_mds_status *st);

/* ---- cluster-wide locks (docs/locks.md) ----
 * POSIX byte-range locks (fcntl) and flock locks on a file, served by
 * the active mds and exclusive across every client of the cluster.
 * A lock belongs to (this handle's lock identity, @owner): the
 * identity is an ephemeral ZooKeeper node made at the first lock call;
 * when the handle's ZooKeeper session expires (or the process dies) the
 * mds drops all its locks, and this handle takes a new identity: locks
 * taken before are lost (unlocking them later just succeeds). POSIX
 * locks of one owner are split and merged like fcntl's; a flock lock
 * covers the file and converting it never waits. flock and POSIX locks
 * do not conflict with each other (as on Linux). Locks survive an mds
 * failover. Thread-safe like every call. */
enum sdfs_lk_kind { SDFS_LK_POSIX = 1, SDFS_LK_FLOCK = 2 };
enum sdfs_lk_type { SDFS_LK_UN = 0, SDFS_LK_RD = 1, SDFS_LK_WR = 2 };
#define SDFS_LK_EOF UINT64_MAX          /* end: "to the end of the file" */
struct sdfs_lock {
	int kind;                       /* enum sdfs_lk_kind */
	int type;                       /* enum sdfs_lk_type */
	uint64_t owner;                 /* POSIX: the lock owner; FLOCK: the open file */
	uint64_t start, end;            /* bytes, inclusive (FLOCK: ignored) */
	uint32_t pid;                   /* the locking process (informative) */
};
/* Take or change @l on @ino without waiting: 0, -EAGAIN (another owner
 * holds a conflicting lock), -ENOLCK (no lock identity: ZooKeeper
 * unreachable), or -errno. */
int sdfs_lock_set(struct sdfs *s, uint64_t ino, const struct sdfs_lock *l);
/* The same, waiting until granted: retries every 10..100 ms. Stops with
 * -EINTR when @cancel (may be NULL) returns nonzero, and with -EDEADLK
 * (POSIX only) when waiting would close a cycle of owners waiting for
 * each other. */
int sdfs_lock_wait(struct sdfs *s, uint64_t ino, const struct sdfs_lock *l,
		   int (*cancel)(void *arg), void *arg);
/* F_GETLK: the first lock of another owner conflicting with @l is
 * written over @l (its pid is 0 unless the holder is this handle);
 * none: l->type = SDFS_LK_UN. */
int sdfs_lock_get(struct sdfs *s, uint64_t ino, struct sdfs_lock *l);
/* Unlock @l's range (POSIX) or the owner's flock lock. */
int sdfs_lock_unlock(struct sdfs *s, uint64_t ino, const struct sdfs_lock *l);
/* Drop every lock of @kind that @owner holds on @ino (close). */
int sdfs_lock_release(struct sdfs *s, uint64_t ino, int kind, uint64_t owner);

#ifdef __cplusplus
}
#endif
#endif
