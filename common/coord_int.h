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
};

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
