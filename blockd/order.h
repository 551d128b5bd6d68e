/*
 * order.h - mutations of shared objects, ordered through their primary
 * replica (DESIGN.md §5, docs/consistency.md).
 *
 * Any client may write a file-data or raw object at any time
 * (common/oid.h oid_is_ordered), so two clients' writes to one object
 * must reach its replicas in one order, or the replicas diverge. A
 * client therefore sends such a mutation (WRITE, CREATE, REMOVE,
 * REPLACE) to the object's primary: the first up holder in the
 * request's epoch. The primary holds the object's order lock while it
 * sends the mutation as the peer-only REPL_* op to every up holder,
 * itself included, and waits for all of them; so at every replica the
 * changes of one object arrive one at a time, in the primary's order.
 * The reply's result sums them up (every replica applied it, or why
 * not) and its `length` counts the replicas that applied it.
 *
 * A node that gets such a request but is not the primary (a client on
 * the same epoch places the same primary, so only tools and tests do
 * this) passes it to the primary and relays the answer.
 *
 * Epochs: every REPL_* op carries the client's epoch and each replica
 * checks it under its per-object lock as for any mutation, so a primary
 * of an older map can no longer get a change applied once a replica has
 * the newer one; at each node the changes of one epoch come before the
 * next epoch's, and within an epoch one primary orders them.
 *
 * Threads: order_dispatch runs on the loop thread (placement from the
 * node's map); the forwarding runs on the order workers, which block on
 * replies from REPL_* ops served by the I/O workers, never the other way
 * round, so the two pools cannot wait on each other in a cycle.
 */
#ifndef SDFS_BLOCKD_ORDER_H
#define SDFS_BLOCKD_ORDER_H
#include <stdint.h>

#include "common/sdfs_proto.h"

struct blockd;
struct conn;
struct order;

/* Workers and connections to the peers; 0 or -errno. */
int order_new(struct blockd *bd, int nthreads, struct order **out);
void order_free(struct order *o);       /* after the loop stopped; NULL ok */

/* Must this request be ordered here: a client's mutation of an ordered
 * object (not a REPL_* op, not SDFS_F_RAW)? */
int order_wanted(const struct sdfs_hdr *h);

/* The REPL_* op that carries client mutation @op (0 if none). */
unsigned order_repl_op(unsigned op);

/*
 * Loop thread, after the epoch checks (the request's epoch is the
 * node's): place the object, queue the forwarding, reply when done.
 * Takes ownership of @payload.
 */
void order_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h,
		    uint8_t *payload);
#endif
