/*
 * coord.h - coordination through ZooKeeper: the cluster config, the
 * membership of block daemons, and the cluster map with its epochs.
 *
 * Layout under /sdfs/<cluster> (docs/zookeeper.md):
 *   config            persistent  cluster_config document
 *   members/<id>      ephemeral   member document of a live blockd
 *   map               persistent  cluster map; its ZooKeeper version is CAS'd
 *   epochs/<epoch>    persistent  every map ever written, for history
 *   nodeids/n<seq>    persistent  sequence for allocating node ids
 *   suspects/<id>     persistent  a node reported unresponsive (coord_suspect.h)
 *   auth/<name>       persistent  a key, sealed (coord_auth.h)
 *
 * ZooKeeper digest ACLs (docs/zookeeper.md, "Security"): a session
 * opened with credentials (struct coord_cred) authenticates as
 * sdfs-admin (it holds the cluster secret: admins, daemons) or as
 * sdfs-client (a keyring's `zk =` password). A cluster is "secured"
 * once its base node carries the sdfs-admin ACL: created so by an admin
 * session, or by coord_format / coord_secure from one. Every node a
 * session creates in a secured cluster carries the ACL of its place
 * (sdfs-admin ALL; sdfs-client READ, and CREATE/DELETE/WRITE only where
 * clients write); in an open cluster (formatted by a session without
 * credentials, `--auth none`) nodes stay open as before.
 *
 * Thread-safety: every function may be called from any thread; calls
 * block on ZooKeeper round trips (use them from worker threads or at
 * startup in daemons). The event callback runs on the ZooKeeper
 * library's thread: it must only queue the event (loop_post) and return.
 * Watches are one-shot: a *_get with @watch arms one event.
 */
#ifndef SDFS_COMMON_COORD_H
#define SDFS_COMMON_COORD_H
#include <stddef.h>
#include <stdint.h>

#include "common/cmap.h"
#include "common/keys.h"

struct coord;

enum coord_event {
	COORD_EV_CONNECTED,     /* session (re)established */
	COORD_EV_CONNECTING,    /* connection lost; session may still live */
	COORD_EV_EXPIRED,       /* session gone: ephemerals and watches lost */
	COORD_EV_MEMBERS,       /* members/ children changed */
	COORD_EV_MAP,           /* the map document changed */
	COORD_EV_MDS_EPOCH,     /* mds/epoch changed (coord_mds.h) */
	COORD_EV_MDS_ACTIVE,    /* mds/active created, changed or deleted */
	COORD_EV_SUSPECTS,      /* suspects/ children or a marker's data changed
				   (coord_suspect.h) */
};

typedef void (*coord_event_fn)(enum coord_event ev, void *arg);

/* A session's ZooKeeper credentials. With @has_secret: sdfs-admin
 * (password auth_zk_password(secret, 1)); else @zk_pw: sdfs-client. */
struct coord_cred {
	int has_secret;
	uint8_t secret[AUTH_KEY_BYTES];
	char zk_pw[AUTH_ZK_PW_MAX];
};
/* The credentials of keyring @kr: its secret if it has one, else its
 * zk password. 0, or -ENOKEY if it has neither. */
int coord_cred_from_keyring(const struct keyring *kr, struct coord_cred *cr);

/*
 * Connect to @hosts ("h:p,h:p") for cluster @name, waiting up to
 * @timeout_ms for the session; create the base znodes if missing.
 * @fn may be NULL. Returns 0, -ETIMEDOUT, -EINVAL or -ENOMEM.
 */
int coord_open(const char *hosts, const char *name, int session_ms,
	       int timeout_ms, coord_event_fn fn, void *arg, struct coord **out);
/*
 * coord_open with credentials @cred (copied; NULL: none, as coord_open).
 * The session authenticates before any request, again after every
 * coord_reopen. -EACCES if the cluster is secured and @cred does not
 * let it read the base node (no or wrong credentials: the message is
 * logged).
 */
int coord_open_cred(const char *hosts, const char *name,
		    const struct coord_cred *cred, int session_ms,
		    int timeout_ms, coord_event_fn fn, void *arg,
		    struct coord **out);
/* Is the cluster secured (its nodes carry digest ACLs)? 1 or 0. */
int coord_secured(struct coord *c);
/*
 * Secure the cluster: set the ACL of its place on every sdfs node
 * (/sdfs, the base, its directories and their nodes), creating the
 * directories that are missing. Admin sessions only (-EPERM otherwise).
 * coord_format calls it from an admin session; call it to secure a
 * cluster that was open. Idempotent.
 */
int coord_secure(struct coord *c);
void coord_close(struct coord *c);      /* NULL ok; ephemerals go at once */
/*
 * For a process about to exec or exit while other threads may still
 * call on @c: end the session now (ephemerals go at once) but free
 * nothing; waits for calls in flight, and every later call blocks until
 * the exec or exit. NULL ok.
 */
void coord_close_for_exit(struct coord *c);

/* -ENOENT if the cluster is not formatted; -EBADMSG if the document is bad. */
int coord_config_get(struct coord *c, struct cluster_config *cfg);
/*
 * Format: store @cfg and a first, empty map (epoch 1). -EEXIST when a
 * config exists and @force is 0; with @force the old config, map and
 * history are replaced. From an admin session (struct coord_cred with
 * the secret) it also secures the cluster (coord_secure).
 */
int coord_format(struct coord *c, const struct cluster_config *cfg, int force);

/* A new cluster-unique node id (> 0). */
int coord_node_id_alloc(struct coord *c, uint32_t *id);

/* Create members/<id> (ephemeral). -EEXIST if a node with this id is
 * registered already (an older session of ours not yet expired, or a
 * second daemon on the same data dir). */
int coord_member_join(struct coord *c, const struct cmap_node *self);
/* Rewrite our members/<id> with @self (a changed flag, such as full).
 * -ENOENT if it is gone (the session expired: join again). Members watch
 * only the list, so the caller reconciles the map itself. */
int coord_member_update(struct coord *c, const struct cmap_node *self);

/* Live members, sorted by id; free *@out with free(). Bad member
 * documents are skipped with a warning. */
int coord_members_get(struct coord *c, int watch, struct cmap_node **out, size_t *n);

/* The current map; -ENOENT if not formatted. Free with cmap_free. */
int coord_map_get(struct coord *c, int watch, struct cmap **out);
/* The map of a past (or the current) epoch from epochs/; -ENOENT if
 * that epoch was never written (or the history was reset by format). */
int coord_epoch_get(struct coord *c, uint64_t epoch, struct cmap **out);

/*
 * Write @next as the new map if the stored one still has version
 * @prev->zversion, and record it under epochs/ in the same transaction.
 * @next->epoch must be @prev->epoch + 1. -EAGAIN if someone else wrote
 * first (re-read and retry).
 */
int coord_map_cas(struct coord *c, const struct cmap *prev, const struct cmap *next);

/* After COORD_EV_EXPIRED: a new session (ephemerals must be re-created
 * and watches re-armed by the caller). Waits up to @timeout_ms. */
int coord_reopen(struct coord *c, int timeout_ms);

/* Is the session connected right now? */
int coord_is_connected(struct coord *c);
#endif
