/*
 * mds.h - the sdfs-mds daemon's state, shared by main.c (options,
 * election, takeover, stepping down) and server.c (serving requests).
 */
#ifndef SDFS_MDS_MDS_H
#define SDFS_MDS_MDS_H
#include <stdatomic.h>
#include <stdint.h>

#include "common/conf.h"
#include "common/coord_mds.h"

struct coord;
struct sdfs;
struct ns;

struct mds {
	struct sdfs_conf conf;
	char name[COORD_MDS_NAME_MAX];  /* "mds.0" */
	char host[64];
	uint16_t port;
	char addr[COORD_MDS_ADDR_MAX];  /* host:port, as published */
	int listen_fd;

	struct coord *coord;            /* the election's ZooKeeper session */
	struct sdfs *sdfs;              /* objects (the database lives there) */
	char node[64];                  /* our election node */
	uint64_t epoch;                 /* MDS epoch while active */
	struct ns *ns;                  /* set once active */

	atomic_int serving;             /* active and ZooKeeper connected */
	atomic_int zk_connected;
	atomic_int expired;             /* the election session expired */
	atomic_int stop;                /* SIGTERM */
	atomic_uint_fast64_t conns;
	/* The lease: monotonic ms when a ZooKeeper round trip that found
	 * our election node was sent. Replies need it fresher than
	 * lease_ms: a process resumed from SIGSTOP answers nothing until it
	 * has talked to ZooKeeper again (and then it learns it is deposed). */
	atomic_int_fast64_t lease_at;
	int lease_ms;

	/* authentication (common/auth.h), set before server_start */
	char keyring[512];              /* --keyring; else conf.keyring */
	int auth;                       /* the cluster's auth is required */
	struct keydb *keydb;            /* the keys it accepts */
	const uint8_t *secret;          /* the cluster secret (its keyring's):
					   signs object capabilities; NULL
					   without authentication */
};

/* May this mds acknowledge anything now? (serving, and the lease is fresh) */
int mds_may_reply(struct mds *m);

/* server.c: accept connections on m->listen_fd (a thread each) and
 * answer requests: NS_* while m->serving, SDFS_RES_SHUTDOWN otherwise.
 * A reply is only sent while serving: an mds that lost ZooKeeper
 * acknowledges nothing. */
int server_start(struct mds *m);
#endif
