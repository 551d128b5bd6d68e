/*
 * client.h - libsdfs internals shared by its files (not installed).
 *
 *   client.c   handles, the cluster map and its refresh, cluster info
 *   objio.c    replicated object reads, writes and repair; fencing tokens
 *   admin.c    node list, object locate, raising the MDS and volume fences
 *   nsclient.c requests to the active mds: finding it, retrying
 *   ns.c       the namespace calls and sdfs_mds_status
 *   fileio.c   regular files' data in objects
 *   lock.c     cluster-wide locks; the handle's lock identity
 *   notify.c   pushed invalidations: the subscription and its thread
 *   capcache.c object capabilities asked from the mds, sent to blockds
 */
#ifndef SDFS_LIBCLIENT_CLIENT_H
#define SDFS_LIBCLIENT_CLIENT_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/auth.h"
#include "common/cmap.h"
#include "common/coord.h"
#include "common/sdfs_proto.h"
#include "libclient/sdfs.h"

/* A map shared by the calls using it; the last put frees it. */
struct map_ref {
	struct cmap *map;
	atomic_int refs;
};

struct pool;

#define CLIENT_LATE_MAX 8       /* replicas remembered as late (objio.c) */

/* A replica that let a read wait past the hedge: tried last until then. */
struct client_late {
	uint32_t node_id;
	int64_t until_ms;       /* net_now_ms(); 0: free slot */
};

struct sdfs {
	struct coord *coord;
	char cluster[64];
	int timeout_ms;
	atomic_int replica_timeout_ms;  /* one try's wait on the replicas (objio.c) */
	atomic_uint_fast64_t next_req_id;

	pthread_mutex_t lock;           /* protects map, cfg, formatted */
	struct map_ref *map;
	struct cluster_config cfg;
	int formatted;
	atomic_int map_stale;           /* set by ZooKeeper watch events */
	atomic_int expired;             /* the ZooKeeper session expired */
	atomic_uint fence_token;        /* sdfs_set_fence_token: in every mutation */

	struct pool *pool;
	/* who we are (sdfs_connect_keyring): used where cfg.auth says the
	 * cluster requires it (the pool, nsclient.c, notify.c) */
	int have_cred;
	struct auth_cred cred;          /* as first read */
	struct auth_keyfile *keyfile;   /* followed: a rotated key is taken */
	/* client_auth: what the mds's last handshake said the key may do
	 * (sdfs_key_caps), under lock; key_name[0] == 0: none yet */
	char key_name[AUTH_NAME_MAX + 1];
	char key_caps[AUTH_CAPS_STR_MAX];
	/* objio.c: a read asks the next replica too when one has not
	 * answered in read_timeout_ms; the late ones, under late_mu */
	int read_timeout_ms;
	/* a volume writer seals a chunk of an EC volume not written for
	 * this long (vol_seal.c; sdfs.conf ec_seal_after_s); 0: never */
	atomic_int ec_seal_after_s;
	atomic_int_fast64_t late_until_ms;      /* the latest until_ms set */
	pthread_mutex_t late_mu;
	struct client_late late[CLIENT_LATE_MAX];
	struct nsclient *ns;            /* nsclient.c; made on first use */
	struct notify *notify;          /* notify.c; sdfs_ns_subscribe (under lock) */
	atomic_int mds_changed;         /* ZooKeeper: mds/active may have moved
					   (notify.c re-reads it) */
	atomic_int ns_changed;          /* a namespace change was sent since
					   the last sdfs_ns_sync (nsclient.c) */
	atomic_uint mds_gen;            /* the same, counted: nsclient.c's
					   attempts re-read it when it moved */

	/* lock.c: the lock identity, a node clients/<lock_id> made in the
	 * ZooKeeper session numbered lock_gen (session_gen counts the
	 * expiries seen); 0: none yet. */
	atomic_uint session_gen;
	pthread_mutex_t lock_mu;
	uint64_t lock_id;
	unsigned lock_gen;
	/* hold.c: inodes held open (sdfs_ns_hold); made at first use */
	struct holds *holds;
	/* lock.c: wake-ups of blocking lock waits (SDFS_NOTE_LOCK) */
	pthread_mutex_t wake_mu;
	pthread_cond_t wake_cond;       /* CLOCK_MONOTONIC */
	uint64_t lock_wakes;
	/* capcache.c: object capabilities; needed once a block daemon
	 * refused an op for want of one (SDFS_RES_CAP) */
	atomic_int caps_needed;
	_Atomic(struct capcache *) caps;        /* made at first use */
	/* ns.c: sdfs_ns_on_attrs; the active refused SDFS_NS_WANT_ATTRS on
	 * a RENAME (before 2.1) while mds_gen was attrs_refused - 1 (0: no) */
	sdfs_attrs_fn attrs_fn;
	void *attrs_arg;
	atomic_uint attrs_refused;
};

/* The current map with a reference (drop with client_map_put), reading
 * it from ZooKeeper first if it is stale. NULL with *@err set if the
 * cluster is not formatted or ZooKeeper cannot be reached. */
struct map_ref *client_map_get(struct sdfs *s, int *err);
void client_map_put(struct map_ref *m);
/* Re-read the map now (after an OLD_EPOCH reply, or a dead node). */
int client_map_refresh(struct sdfs *s);
/* Replace the ZooKeeper session if it expired (a new handle: the old one
 * fails every call); nothing if it is live or only disconnected. Every
 * path that reads ZooKeeper calls this first (the map, the active mds,
 * mds status), so a client outlives a ZooKeeper stall or restart. */
void client_coord_renew(struct sdfs *s);
/* Copies and object size; -ENOENT if not formatted. */
int client_config(struct sdfs *s, struct cluster_config *cfg);
/*
 * The handshake on a new connection @fd to a daemon if the cluster
 * requires authentication (nsclient.c, notify.c); *@sess set either way
 * (off without). 0, or -EACCES (refused, or no key: logged),
 * -EPROTONOSUPPORT (an old daemon), a transport -errno.
 */
int client_auth(struct sdfs *s, int fd, int timeout_ms, struct auth_sess *sess);
uint64_t client_req_id(struct sdfs *s);
/* Sleep before try @attempt + 1 of an object call: 20 ms doubling up to
 * 500, never past @deadline (net_now_ms; the call then returns at it,
 * not up to 500 ms after). */
void client_backoff(int attempt, int64_t deadline);
/* lock.c: the mds says locks on @ino changed (notify.c): blocking waits
 * of this handle retry now. */
void lock_wake(struct sdfs *s, uint64_t ino);
/* lock.c: the handle's identity, its node clients/<id> in ZooKeeper,
 * made if this session has none (locks and open files are held by it).
 * 0 or -ENOLCK. */
int lock_identity(struct sdfs *s, uint64_t *id);
/* hold.c: tell the active mds every inode held open here (after each
 * subscription: a new active waits for it before freeing strays). No-op
 * for a handle with no identity and nothing held. 0 or -errno. */
int hold_claim(struct sdfs *s);
/* Before a write to a regular file of an ec=K+M policy: have the mds
 * unseal it (NS_OPEN SDFS_NS_OPEN_UNSEAL; docs/ec.md "EC files"). Sent
 * once per hold while this handle holds @ino (sdfs_ns_hold) since
 * before the call; without a hold at every call. 0 or -errno. */
int hold_unseal(struct sdfs *s, uint64_t ino);
struct holds;
void holds_free(struct holds *h);       /* sdfs_close; NULL ok */

/* nsclient.c: one namespace request to the active mds, retried (same
 * client id and seq) across connection losses and failovers. With
 * @timeout_ms 0 (the handle's timeout) it gives up only once that long
 * passed and no mds took, answered or held its request for that long
 * either (or at NSCLIENT_HARD_FACTOR times the timeout): docs/mds.md
 * "Clients and failover". With @timeout_ms > 0, strictly at
 * @timeout_ms (status queries). Fills @req's client_id and seq. Returns
 * the reply's
 * outcome (0 or -errno); on 0, *@rep (malloc'd, NULL if empty) and
 * *@rep_len hold the reply payload and @reply its header. */
#define NSCLIENT_HARD_FACTOR 4
struct nsclient;
int nsclient_call(struct sdfs *s, unsigned op, struct sdfs_ns_req *req,
		  const char *name, const char *name2, const void *data,
		  struct sdfs_hdr *reply, uint8_t **rep, uint32_t *rep_len,
		  int timeout_ms);
void nsclient_free(struct nsclient *nc);
/* The client id of the handle's namespace requests (making its
 * nsclient if needed), and with @seq a fresh seq of them; 0 on ENOMEM.
 * A subscription must carry this id: the mds matches by it what its
 * replies told the handle. */
uint64_t nsclient_client_id(struct sdfs *s, uint64_t *seq);

/*
 * capcache.c: the cap to send with an op needing @need (OBJCAP_R or
 * OBJCAP_W) on @oid into @out: 1; 0 when the handle sends none (no
 * block daemon asked it for one yet, or @oid's kind takes none); or
 * -errno (the mds refused: -EACCES, -EROFS, -ENOENT...). @fresh: a
 * block daemon refused the one held (or none was sent): ask the mds
 * again (and send caps from now on). Any thread.
 */
struct capcache;
int capcache_get(struct sdfs *s, uint64_t oid, unsigned need, int fresh,
		 uint8_t out[48]);
void capcache_free(struct capcache *c);        /* sdfs_close; NULL ok */
/* Keep @cap (one that came with a file's attributes); its lifetime is
 * what is left of it by our wall clock. */
void capcache_put(struct sdfs *s, const uint8_t cap[48]);

/* notify.c: end the handle's subscription, if any: stops and joins its
 * thread (its callback is not running any more on return). sdfs_close
 * calls it before freeing what the thread uses. */
void notify_stop(struct sdfs *s);

/* objio.c: OBJ_COPY (2.2) to every up replica of volume data object
 * @dst, carrying @token: @dst becomes @src's bytes with [@off, @off +
 * @len) = @buf (NULL: zeros) over them, each replica copying from its
 * own (or a peer's) verified copy of @src (blockd/copy.h). 0, or as
 * sdfs_obj_put_tok; -EOPNOTSUPP from a 2.1 daemon, -ENOENT when no
 * holder could give @src, -EACCES for a key that needs object
 * capabilities (the caller then copies @src itself). */
int sdfs_obj_copy_tok(struct sdfs *s, uint64_t dst, uint64_t src, const void *buf,
		      size_t len, uint64_t off, uint32_t token);

/* ec_io.c: sdfs_ec_read of the version *@h names (version 0: none) when
 * its strips are where the map places them, without first asking the
 * k + m holders which versions they hold (one round trip, not two);
 * else as sdfs_ec_read, the newest version. On success *@h names the
 * version read. The caller must know no newer version was committed
 * since it got @h (volumes: a sealed chunk's stripe changes only by an
 * unseal and a new seal, vol_io.c). */
struct ec_hint {
	uint64_t version, tag, size;
	uint32_t strip_len;
};
ssize_t ec_read_hinted(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, void *buf,
		       size_t len, uint64_t off, struct ec_hint *h);
/* fill.c: sdfs_vol_fill (OBJ_FILL to every node) of object @oid only
 * (2.6; 0: all of @vid's; a 2.5 daemon fills all): 0 once no node has
 * @oid backed by @vid's data or stripes; -EAGAIN (a node down, or not
 * done in time); -errno. Admin and daemon keys. */
int sdfs_obj_fill(struct sdfs *s, uint64_t vid, uint64_t oid);
/* sdfs_obj_copy_tok with OBJ_COPY @flags (2.6: SDFS_COPY_STRIPE and
 * SDFS_COPY_CODE(k, m): @src is a stripe; a 2.5 daemon: -EINVAL). */
int sdfs_obj_copy_ex(struct sdfs *s, uint64_t dst, uint64_t src, uint32_t flags,
		     const void *buf, size_t len, uint64_t off, uint32_t token);
#endif
