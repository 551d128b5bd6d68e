/*
 * ring.h - placement of objects onto block daemons by weighted
 * rendezvous hashing (straw2: draw = ln(u(oid, node_id)) / weight,
 * highest draws win), copies in distinct zones where there are enough.
 *
 * A ring is built once per cluster epoch from that epoch's member list
 * and never changed afterwards: a membership change builds a new ring
 * and swaps the pointer. Readers need no lock, only a reference
 * (ring_get/ring_put). Every client and daemon computes the same
 * placement from the same node list, whatever order it is given in.
 * Not here: node states and talking to nodes (libclient/), recovery.
 */
#ifndef SDFS_COMMON_RING_H
#define SDFS_COMMON_RING_H
#include <stddef.h>
#include <stdint.h>

#define RING_MAX_NODES  4096
#define RING_MAX_COPIES 16      /* replicas of an object (cmap.h copies) */
#define RING_MAX_PLACE  20      /* nodes one placement may name: copies, or
				   the k + m strips of an erasure-coded
				   object (EC_STRIPS_MAX, common/ec.h) */

struct ring;                    /* opaque; see ring.c */

struct ring_node {
	uint32_t node_id;       /* stable id assigned at first join; never 0 */
	uint32_t zone;          /* failure domain; copies avoid sharing one */
	uint32_t weight;        /* relative capacity; 0 = holds nothing */
};

/*
 * Build the ring for @epoch from @nodes. @nodes is copied; the caller
 * keeps its array. On success *@out holds one reference (drop it with
 * ring_put) and 0 is returned; on failure *@out is untouched and the
 * result is -EINVAL (n > RING_MAX_NODES, node_id 0, duplicate node_id)
 * or -ENOMEM. n == 0 is allowed: such a ring places nothing.
 */
int ring_new(uint64_t epoch, const struct ring_node *nodes, size_t n,
	     struct ring **out);
struct ring *ring_get(struct ring *r);  /* +1 reference, returns r */
void ring_put(struct ring *r);          /* -1; the last one frees; NULL ok */

uint64_t ring_epoch(const struct ring *r);
size_t ring_nodes(const struct ring *r); /* number of nodes it was built from */

/*
 * Fill @out with the node ids holding the copies of @oid, best first.
 * Copies go to distinct zones while unused zones remain; when there are
 * fewer zones than @copies the rest go to distinct nodes of already used
 * zones. Nodes with weight 0 are never chosen. Returns the number placed,
 * min(@copies, nodes with weight > 0), or -EINVAL when @copies is 0 or
 * above RING_MAX_PLACE (@out must hold @copies). Pure: safe from any thread.
 */
int ring_place(const struct ring *r, uint64_t oid, unsigned copies,
	       uint32_t out[]);

/*
 * The holders of the k + @m strips of an erasure-coded object @oid
 * (docs/ec.md): strip s on out[s]. As ring_place(r, oid, k + m) while
 * there are at least k + m zones, so strips go to distinct zones; with
 * fewer zones (but more than one), the rest go to distinct nodes in
 * draw order, skipping any node whose zone already has @m strips, so
 * that losing one zone loses at most m strips. A ring of one zone only
 * (every node zone 0, say) has no failure domains to spread over: its
 * strips just go to distinct nodes. Never two strips on one node.
 * Returns the number placed; fewer than k + m means the ring cannot
 * hold such a stripe (the caller refuses the write). -EINVAL if k + m
 * is 0 or above RING_MAX_PLACE, or @m is 0.
 */
int ring_place_strips(const struct ring *r, uint64_t oid, unsigned k, unsigned m,
		      uint32_t out[]);
#endif
