/*
 * coord_mds.h - the metadata service's use of ZooKeeper: electing one
 * active sdfs-mds, its fencing epoch, and where clients find it.
 *
 * Layout under /sdfs/<cluster>/mds (docs/zookeeper.md):
 *   election/n_<guid>_<seq>  ephemeral-sequential, one per running mds;
 *                            the lowest sequence is the leader
 *   epoch                    persistent, decimal: the MDS epoch, bumped
 *                            by every new active (the fencing token)
 *   active                   ephemeral, mds document of the serving active
 * The mds document is text: "name=mds.0\naddr=127.0.0.1:7100\nepoch=5\n".
 *
 * Same threading rules as coord.h (blocking; any thread).
 */
#ifndef SDFS_COMMON_COORD_MDS_H
#define SDFS_COMMON_COORD_MDS_H
#include <stddef.h>
#include <stdint.h>

#include "common/coord.h"

#define COORD_MDS_NAME_MAX 32
#define COORD_MDS_ADDR_MAX 80

struct coord_mds_doc {
	char name[COORD_MDS_NAME_MAX];  /* "mds.0" */
	char addr[COORD_MDS_ADDR_MAX];  /* host:port */
	uint64_t epoch;                 /* active: the epoch it serves; else 0 */
	char node[64];                  /* election node name (candidates) */
};

/* Text <-> document. decode: -EBADMSG on anything malformed (unknown
 * keys are ignored, name and addr are required). */
int coord_mds_doc_encode(const struct coord_mds_doc *d, char *out, size_t len);
int coord_mds_doc_decode(const char *text, size_t len, struct coord_mds_doc *d);

/* Enter the election: creates our ephemeral-sequential node holding
 * @self's document; its name goes to @node (>= 64 bytes). */
int coord_mds_elect_join(struct coord *c, const struct coord_mds_doc *self,
			 char *node, size_t len);
/*
 * Wait until @node is the lowest candidate (0), watching only its
 * predecessor. Returns -ETIMEDOUT after @timeout_ms (call again: the
 * caller checks its session in between), -ENOENT if @node is gone (our
 * session expired), -errno on ZooKeeper errors.
 */
int coord_mds_elect_wait(struct coord *c, const char *node, int timeout_ms);
/* Does our election @node still exist? A ZooKeeper round trip: 0 means
 * the session was alive when the request was sent (the mds's lease).
 * -ENOENT if it is gone, -errno when ZooKeeper cannot be reached. */
int coord_mds_elect_check(struct coord *c, const char *node);
/* The candidates in election order (first = leader); free with free(). */
int coord_mds_candidates(struct coord *c, struct coord_mds_doc **out, size_t *n);

/*
 * Bump mds/epoch by one in a transaction that also checks that our
 * election @node still exists: a deposed leader cannot bump. *@epoch
 * gets the new value. -ENOENT if @node is gone, -EAGAIN on a race.
 */
int coord_mds_epoch_bump(struct coord *c, const char *node, uint64_t *epoch);
/* The current MDS epoch (0 if never bumped); @watch arms
 * COORD_EV_MDS_EPOCH. */
int coord_mds_epoch_get(struct coord *c, int watch, uint64_t *epoch);

/* Publish @self as the active (ephemeral mds/active), replacing a stale
 * one. */
int coord_mds_publish(struct coord *c, const struct coord_mds_doc *self);
/* The active's document; -ENOENT if none is serving. @watch arms
 * COORD_EV_MDS_ACTIVE (also when it does not exist yet). */
int coord_mds_active_get(struct coord *c, int watch, struct coord_mds_doc *d);
#endif
