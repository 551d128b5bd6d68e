/*
 * strip_recover.h - rebuilding the strips of erasure-coded objects
 * after a membership change (docs/ec.md "Recovery of lost strips").
 *
 * One thread per daemon. After every new map (and every 30 s, to retry
 * what failed) it walks the oids this node has strip files of. For each
 * it asks the holders of the stripe's placement in that map
 * (ring_place_strips) which strip versions they have, takes the newest
 * (version, tag) with at least k strips (the readers' rule), and if this
 * node is its leader — the first position whose node answered holding a
 * strip of that version — it makes every position hold its own strip
 * of it: a strip that exists on some node is fetched whole, a lost one
 * rebuilt with ec_decode from k others, and sent to its holder with the
 * version's own number and tag (STRIP_PUT, checked there like a
 * client's). It never commits, drops or changes a version of data: a
 * rebuilt strip is one more copy of bytes that already were the
 * stripe's, and the next put's commit drops what is old. Fewer than k
 * strips of any version: left alone (logged), never filled with older
 * data. When the newest version is a removal's tombstone, the leader
 * gives it (STRIP_PUT, no bytes) and its commit to every up position
 * that lacks either, so a holder that missed the removal drops the
 * object. And every node drops its own strip files placement moved
 * away (stripstore_drop), only when not the last copy: the position's
 * holder answered holding the same (version, tag), or the file is
 * older than a tombstone with k strips or than a version whole on all
 * k + m positions. Every strip read for a copy or a rebuild is paid
 * for at the recovery rate first (recover_throttle: a rebuild costs
 * k x strip_len there), and the scrub's rebuild of a damaged strip file
 * (strip_recover_scrub) is the same code.
 *
 * Threads: strip_recover_map_changed runs on the loop thread (it copies
 * the map); the pass runs on its own thread, talking to peers with its
 * own pool (blocking, as copy.c's workers; peers answer from their I/O
 * workers, never waiting on this thread).
 */
#ifndef SDFS_BLOCKD_STRIP_RECOVER_H
#define SDFS_BLOCKD_STRIP_RECOVER_H
#include <stddef.h>
#include <stdint.h>

struct blockd;
struct cmap;
struct sdfs_node_info;
struct sdfs_strip;
struct strip_recover;

int strip_recover_new(struct blockd *bd, struct strip_recover **out);
void strip_recover_free(struct strip_recover *sr);      /* NULL ok; joins */

/* Loop thread: @m is the node's new map; a pass follows. */
void strip_recover_map_changed(struct strip_recover *sr, const struct cmap *m);

/* NODE_INFO's ec_degraded and ec_unavail as of the last whole pass:
 * stripes this node leads whose newest version lacks a strip on some
 * position after the pass's rebuilds (a holder down, too few nodes, a
 * rebuild failed), and stripes with no version of k strips on the up
 * holders, counted by the first position listing any strip of it.
 * Tombstones are not counted. Any thread; @sr NULL: left as is. */
void strip_recover_fill_info(struct strip_recover *sr, struct sdfs_node_info *ni);
/*
 * The scrub (scrub.c) found this node's file of strip @bad of @oid
 * failing its block checksums: rebuild it in place. Strip bad->s of
 * exactly bad's (version, tag) is fetched whole from another node that
 * holds it, else decoded from k other strips of that (version, tag)
 * read from the stripe's holders in the current map (the rebuild strip
 * recovery does; every strip read pays at the recovery rate,
 * recover_throttle), and the file is replaced whole
 * (stripstore_replace: only while it is still here, so a newer
 * version's commit that dropped it meanwhile is never undone). Never
 * another version. *@from: the node whose copy was taken, 0 when
 * decoded. 0; -ENOENT (the file is gone: committed or dropped
 * meanwhile); -ENODATA (fewer than k good strips of that version on
 * the holders that answered); -EAGAIN (between epochs, or a holder did
 * not answer: try again); -errno. The scrub's thread; blocking.
 */
int strip_recover_scrub(struct strip_recover *sr, uint64_t oid, const struct sdfs_strip *bad,
			uint32_t *from);

/*
 * A backed object's read-through of a stripe source (backing.c): bytes
 * [off, off + len) of stripe @oid (k + @mm) into @out, zeros past its
 * size (into @size, may be NULL), as of the newest (version, tag) with k strips on the holders of
 * its placement in the map of @epoch (the readers' rule). Each data
 * strip covering the range is read at that range (STRIP_GET, checked
 * by its holder) from a holder that has it; one that is missing or
 * fails is decoded from that range of k others, parity included. Not
 * paced at the recovery rate; each call within @ms (> 0). 0; -ENOENT
 * (no such stripe, or removed); -ENODATA (fewer than k strips
 * readable); -EAGAIN (between epochs, a holder did not answer);
 * -errno. Blocking: not on an I/O worker.
 */
int strip_recover_read(struct strip_recover *sr, uint64_t oid, unsigned k, unsigned mm,
		       uint64_t epoch, uint64_t off, void *out, size_t len, uint64_t *size,
		       int ms);
#endif
