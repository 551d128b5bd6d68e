/*
 * copy.h - OBJ_COPY (protocol 2.2, common/sdfs_proto.h): a volume's
 * copy-on-write made next to the data (docs/volumes.md "Copy-on-write").
 *
 * The first write into a chunk an ancestor owns makes the chunk's
 * object of the live vid (DST) SRC's bytes with the written piece over
 * them. The client sends the small request (the piece, not the chunk)
 * to every up replica of DST, as any volume mutation; each replica then
 * (2.4) makes DST an object *backed* by SRC (backing.h), with no
 * whole-chunk read or write on the write's path:
 *   1. gets SRC's size and the one or two blocks of SRC the piece covers
 *      only partly (backing_src_read): from its own store when it is an
 *      up holder of SRC in the request's epoch, after making its copy
 *      current (recover_ensure), every block checked; else, or when
 *      that copy is missing or corrupt, with a raw OBJ_STAT and an
 *      ordinary OBJ_READ from SRC's other up holders over the cluster
 *      network, within 3/4 of replica_timeout_ms since the request came
 *      (the client's bound on this node: a slow peer must not get us
 *      reported);
 *   2. writes DST as an OBJ_REPLACE would (ops_put_backed: the
 *      object's recovery lock, the vid's fence with the writer's token,
 *      the space check, a new version in the epoch, an atomic rename:
 *      after a crash DST is wholly old or wholly new), but as a backed
 *      object of SRC's vid holding the piece's blocks only (zeros with
 *      SDFS_COPY_ZERO), as long as SRC or the piece's end;
 *   3. notes DST for the filler (backing_note).
 * SRC belongs to a frozen vid: its bytes never change, so any holder's
 * current, verified copy is the right one. Nobody can give SRC in time:
 * NO_OBJ (the client copies the chunk itself, the old way, and learns
 * why);
 * peers on another epoch: OLD_EPOCH / NEW_EPOCH (the client retries).
 * A corrupt local SRC is not rewritten here (a client read or the
 * recovery pass repairs it); the copy just does not use it.
 *
 * SDFS_COPY_STRIPE (2.6): SRC is the chunk's EC stripe (an EC volume's
 * write into a sealed chunk, docs/ec.md): the same, SRC's size and
 * blocks read through backing_tag_read (strip_recover_read), DST backed
 * by a stripe tag (backing.h). The stripe's version may change under us
 * (a reseal): every version holds the same bytes where DST is absent.
 *
 * Test hook: with SDFS_BLOCKD_FAULT=no_copy in its environment the
 * daemon answers OBJ_COPY with UNKNOWN_OP, as a 2.1 daemon would.
 *
 * Threads: copy_dispatch runs on the loop thread; the work runs on the
 * copy workers, which block on peers' OBJ_READs and OBJ_STATs served by
 * their I/O workers, never the other way round (as order.h's workers;
 * an I/O worker that needs a peer hands its request to backing.c's
 * threads), so no cycle of waits between nodes.
 */
#ifndef SDFS_BLOCKD_COPY_H
#define SDFS_BLOCKD_COPY_H
#include <stdint.h>

#include "common/sdfs_proto.h"

struct blockd;
struct conn;
struct copy;

/* Workers and peer connections; 0 or -errno. */
int copy_new(struct blockd *bd, int nthreads, struct copy **out);
void copy_free(struct copy *c);         /* after the loop stopped; NULL ok */

/* Loop thread, after ops_dispatch's checks (the request's epoch is the
 * node's): queue OBJ_COPY @h, reply when done. Takes @payload. */
void copy_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h,
		   uint8_t *payload);

/* Backed objects made so far on a node that holds the source / does
 * not (logged at stop). Any thread. */
void copy_counts(struct copy *c, uint64_t *local, uint64_t *fetched);
#endif
