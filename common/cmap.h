/*
 * cmap.h - the cluster map: which block daemons form the cluster in one
 * epoch, where they listen and whether they are up; and the cluster
 * config set by `sdfs cluster format`.
 *
 * Both are stored in ZooKeeper as small line-oriented text documents
 * (docs/zookeeper.md), so an operator can read them
 * with zkCli. Decoders treat their input as hostile: every field is
 * range-checked and anything malformed is -EBADMSG.
 * A cmap is immutable once built; share it read-only across threads.
 */
#ifndef SDFS_COMMON_CMAP_H
#define SDFS_COMMON_CMAP_H
#include <stddef.h>
#include <stdint.h>

#include "common/ring.h"

#define CMAP_MAX_HOST  64
#define CMAP_MAX_DOC   (1u << 20)      /* largest encoded document */

enum cmap_state {
	CMAP_UP = 0,            /* registered in ZooKeeper, serving */
	CMAP_DOWN = 1,          /* session gone; still placed (no data moves yet) */
	CMAP_OUT = 2,           /* down past the grace (or `sdfs node out`): not
				   placed, its data is re-replicated elsewhere */
};

struct cmap_node {
	uint32_t node_id;
	uint32_t zone;
	uint32_t weight;
	uint16_t port;
	uint8_t state;          /* enum cmap_state */
	uint8_t drain;          /* `sdfs node remove`: not placed, data moves off */
	uint8_t wset;           /* weight set by `sdfs node reweight`, not the node */
	uint8_t full;           /* its disk is full (SDFS_SPACE_FULL): writers
				   refuse data writes it would hold (ENOSPC) */
	uint64_t down_ms;       /* unix ms when it went down (DOWN, OUT) */
	char host[CMAP_MAX_HOST];       /* the public address: clients, mds */
	/* The cluster address (sdfs.conf cluster_addr): where block
	 * daemons reach each other. cport 0 (a document without the field,
	 * as before it existed): the same as the public address. */
	uint16_t cport;
	char chost[CMAP_MAX_HOST];
};

/* Does placement use this node? (up or down, not out, not draining) */
int cmap_node_is_placed(const struct cmap_node *nd);
/* Where a block daemon connects to its peer @nd: a copy of @nd with the
 * cluster address as host and port when it has one (into @out; returns
 * @out). Clients use host and port as they are. */
const struct cmap_node *cmap_node_peer(const struct cmap_node *nd,
				       struct cmap_node *out);

struct cmap {
	uint64_t epoch;         /* 1, 2, ...: bumped on every membership change */
	int32_t zversion;       /* ZooKeeper version of the document it came from */
	size_t n;
	struct cmap_node *nodes;        /* sorted by node_id */
	struct ring *ring;              /* placement over the placed nodes */
};

struct cluster_config {
	char uuid[40];
	unsigned copies;        /* 1..RING_MAX_COPIES */
	uint32_t obj_size;      /* max object size: multiple of 4096 */
	uint64_t created;       /* unix seconds */
	uint32_t out_grace_ms;  /* down this long -> out (default 30 s) */
	/* CMAP_AUTH_*: every connection authenticated and every frame
	 * MAC'd (common/auth.h), or none (benchmarks; a document without
	 * the line, from before issue 15, reads as none) */
	unsigned auth;
};

#define CMAP_AUTH_NONE     0u
#define CMAP_AUTH_REQUIRED 1u

#define CMAP_DEFAULT_OUT_GRACE_MS 30000u

/* A map of @n nodes (copied, sorted by id) with its ring. -EINVAL on
 * duplicate ids. Free with cmap_free. */
int cmap_new(uint64_t epoch, const struct cmap_node *nodes, size_t n,
	     struct cmap **out);
void cmap_free(struct cmap *m);         /* NULL ok */
const struct cmap_node *cmap_find(const struct cmap *m, uint32_t node_id);
const char *cmap_state_name(unsigned state);

/* Documents: encode into a malloc'd NUL-terminated string (free()).
 * Decode returns 0 or -EBADMSG / -ENOMEM. */
int cmap_encode(const struct cmap *m, char **out);
int cmap_decode(const char *buf, size_t len, struct cmap **out);
int cmap_member_encode(const struct cmap_node *nd, char **out);
int cmap_member_decode(const char *buf, size_t len, struct cmap_node *nd);
int cluster_config_encode(const struct cluster_config *c, char **out);
int cluster_config_decode(const char *buf, size_t len, struct cluster_config *c);
#endif
