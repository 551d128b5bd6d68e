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
void sdfs_close(struct sdfs *s);        /* NULL ok */

/* Per-operation timeout, in milliseconds. */
void sdfs_set_timeout(struct sdfs *s, int timeout_ms);

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
	const char *state;      /* "up", "down" (static string) */
	int reachable;          /* answered NODE_INFO just now */
	uint64_t epoch;         /* the epoch the node knows */
	uint64_t objects, used_bytes, total_bytes, requests, errors;
};
/* All nodes of the current map; free *@out with free(). */
int sdfs_node_list(struct sdfs *s, struct sdfs_node_status **out, size_t *n);

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

#ifdef __cplusplus
}
#endif
#endif
