/*
 * coord_int.h - what the coord_*.c files share: the handle and the
 * helpers. Not part of the coord API; include only from common/coord_*.c.
 */
#ifndef SDFS_COMMON_COORD_INT_H
#define SDFS_COMMON_COORD_INT_H
#include <pthread.h>
#include <zookeeper/zookeeper.h>

#include "common/coord.h"

#define PATH_MAX_LEN 256

/*
 * The ACL of a node's place in a secured cluster (coord_acl): sdfs-admin
 * has ALL everywhere; what sdfs-client may do (docs/zookeeper.md).
 */
enum coord_acl_kind {
	COORD_ACL_ROOT,         /* /sdfs: anyone may CREATE (other clusters) */
	COORD_ACL_READ,         /* client READ: base, config, map, epochs,
				   members, mds, vols and their nodes */
	COORD_ACL_ADMIN,        /* no client access: nodeids, auth */
	COORD_ACL_DIR,          /* client READ, CREATE, DELETE: clients/,
				   vols/locks/ and vols/locks/<ino> */
	COORD_ACL_SUSPECTS,     /* suspects/: READ, WRITE (the report's
				   version bump), CREATE */
	COORD_ACL_FENCES,       /* vols/fence/: READ, CREATE */
	COORD_ACL_FENCE,        /* vols/fence/<vid>: READ, WRITE */
	COORD_ACL_KINDS
};

#define COORD_DIGEST_ID_MAX 96  /* "sdfs-client:<base64 of sha1>" */

struct coord_auth_follow;       /* coord_auth.c */

struct coord {
	zhandle_t *zh;
	char hosts[512];
	int session_ms;
	char base[PATH_MAX_LEN / 2];    /* /sdfs/<name> */
	char p_config[PATH_MAX_LEN], p_members[PATH_MAX_LEN];
	char p_map[PATH_MAX_LEN], p_epochs[PATH_MAX_LEN], p_nodeids[PATH_MAX_LEN];
	char p_mds[PATH_MAX_LEN], p_mds_elect[PATH_MAX_LEN];
	char p_mds_epoch[PATH_MAX_LEN], p_mds_active[PATH_MAX_LEN];
	char p_suspects[PATH_MAX_LEN];
	coord_event_fn fn;
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;            /* state or queue_gen changed */
	int state;                      /* last ZOO_*_STATE seen */
	/* Bumped (under lock) by every queue predecessor watch that fires
	 * (coord_queue_wait). The watch's context is this coord, which
	 * outlives the ZooKeeper handle, never a per-wait object: the
	 * library also calls a watch for every session event (connection
	 * lost, back, expired), and keeps it, so one watch runs any number
	 * of times and for as long as the handle lives. */
	unsigned long queue_gen;
	pthread_rwlock_t zlock;         /* exclusive only to replace zh */

	/* Credentials (set at open, then read-only). */
	int cred;                       /* COORD_CRED_* */
	char zk_auth[AUTH_ZK_PW_MAX + 16];      /* "user:password" */
	char admin_id[COORD_DIGEST_ID_MAX];     /* digest ids; "" unknown */
	char client_id[COORD_DIGEST_ID_MAX];
	int secured;                    /* nodes we create carry ACLs */
	struct ACL acl_ents[COORD_ACL_KINDS][3];
	struct ACL_vector acls[COORD_ACL_KINDS];
	char p_auth[PATH_MAX_LEN];
	/* coord_auth_follow's state; set once, under lock. */
	struct coord_auth_follow *follow;
};

#define COORD_CRED_NONE   0
#define COORD_CRED_CLIENT 1
#define COORD_CRED_ADMIN  2

/* coord_acl.c: take @cred (NULL: none) before the first session;
 * authenticate a new handle; at open, create or inspect the base (is
 * the cluster secured?). */
int coord_cred_init(struct coord *c, const struct coord_cred *cred);
int coord_cred_apply(struct coord *c);
int coord_cred_detect(struct coord *c);

/* The ACL a node of @kind gets when we create it: the open ACL unless
 * the cluster is secured. */
const struct ACL_vector *coord_acl(struct coord *c, enum coord_acl_kind kind);
/* Create @path (no data, persistent) if it is missing, with @kind's ACL.
 * Checks first, so a session that may not create there is fine if it
 * exists. zlock held. */
int coord_ensure(struct coord *c, const char *path, enum coord_acl_kind kind);

/* coord_auth.c: a watch event on @path (NULL: the session is back) for
 * the key follower, from the watcher; and stop it (coord_close). */
void coord_auth_event(struct coord *c, const char *path);
void coord_auth_stop(struct coord *c);

/* ZooKeeper return code -> -errno. */
int coord_zerr(int rc);
/* Read a whole znode into a malloc'd, NUL-terminated buffer. */
int coord_get_doc(struct coord *c, const char *path, int watch, char **out,
		  int *len, struct Stat *st);

/*
 * A queue (coord_mds.c): ephemeral-sequential nodes "<prefix>_<guid>_<seq>"
 * in directory @dir, the lowest sequence first (an election, a lock).
 * join: create ours holding @data (the directory must exist); its full
 * path goes to @made. A create lost to a connection loss is found again
 * by its guid. Takes zlock itself.
 */
int coord_queue_join(struct coord *c, const char *dir, const char *prefix,
		     const char *data, char *made, size_t len);
/* @dir's children sorted by sequence (free with deallocate_String_vector);
 * the caller holds zlock shared. */
int coord_queue_list(struct coord *c, const char *dir, struct String_vector *kids);
/* Is @node (a name in @dir) first? 0: yes; else watch only its
 * predecessor, up to @timeout_ms: -EAGAIN when it went (check again),
 * -ETIMEDOUT, -ENOENT if @node is gone. Takes zlock itself. */
int coord_queue_wait(struct coord *c, const char *dir, const char *node,
		     int timeout_ms);
#endif
