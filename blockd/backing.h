/*
 * backing.h - a volume chunk's object *backed* by its ancestor's until
 * filled: the copy-on-write of OBJ_COPY at block granularity
 * (docs/volumes.md "Copy-on-write", docs/format.md "Backed objects").
 *
 * OBJ_COPY (copy.c) makes L's object of a chunk (DST) a backed object
 * whose tag is the ancestor's vid: SRC = the same chunk's object of that
 * vid (backing_src). Only the blocks the written piece touches are
 * written; the absent ones read through SRC until the filler here has
 * copied them:
 *   - reads (backing_read): present blocks from DST, absent ones from
 *     this node's own current, verified copy of SRC when it is an up
 *     holder of SRC (recover_ensure), else with OBJ_READ from SRC's up
 *     holders (only when the caller may wait on peers). SRC's blocks are
 *     checked either way; SRC unreadable everywhere: -EBADMSG (the copy
 *     here is bad, the client reads another replica), never zeros.
 *   - writes covering an absent block only partly take the rest of it
 *     from SRC (backing_src_blocks);
 *   - the filler, one thread per daemon, copies SRC's bytes into the
 *     absent blocks (objstore_fill) and ends the backing
 *     (objstore_unback), 256 KiB at a time, at most sdfs.conf's fill_mbps
 *     and only while the I/O workers are idle; the backed objects are
 *     found by a scan of the store at start (so a restart resumes) and
 *     noted by OBJ_COPY afterwards;
 *   - OBJ_FILL (2.4, backing_fill_dispatch): before SRC's vid is freed
 *     (mds reclaim), every node fills now what that vid backs.
 *
 * Stripe sources (2.6, docs/ec.md "Writes into a sealed chunk"): an EC
 * volume's write into a sealed chunk makes the chunk's replicated
 * object backed by the chunk's stripe (OBJ_COPY SDFS_COPY_STRIPE; the
 * tag says so: BACKING_STRIPE below). The same rules hold: absent blocks
 * are read from the stripe's range (strip_recover_read: the data
 * strips covering it, decoded from k others when one is missing or
 * fails its checksums, never zeros), always on the remote threads (the
 * strips are on k + m nodes: an I/O worker gets -EREMOTE and hands the
 * request over); fewer than k strips readable: -EIO; the stripe gone
 * everywhere: -EBADMSG (this copy is bad). The filler fills from it;
 * OBJ_FILL of the owner's vid covers these objects, and the writer
 * removes its own stripe only after an OBJ_FILL of the object
 * (libclient/vol_seal.c vol_stripe_gc).
 *
 * Threads: peers are asked only from the filler, the OBJ_FILL workers
 * and the remote threads here (backing_defer), never from an I/O
 * worker: an I/O worker whose read needs a peer hands the request over
 * (-EREMOTE), so I/O workers never wait on peers (copy.h's rule).
 * Test hook: SDFS_BLOCKD_FAULT=no_fill stops the filler (objects stay
 * backed until a daemon without it fills them).
 */
#ifndef SDFS_BLOCKD_BACKING_H
#define SDFS_BLOCKD_BACKING_H
#include <stddef.h>
#include <stdint.h>

#include "common/sdfs_proto.h"
#include "common/workq.h"

#define BACKING_FILL_MBPS 32    /* the filler's rate per daemon, unless
				   sdfs.conf's fill_mbps says */

struct blockd;
struct conn;
struct backing;

/* Start the filler (it scans the store first) and the remote threads. */
int backing_new(struct blockd *bd, struct backing **out);
void backing_free(struct backing *b);   /* after the loop stopped; NULL ok */

/*
 * Tags (objstore.h): an ancestor's vid (2.4), or (2.6) a stripe's: the
 * vid that owns it in bits 0..31, BACKING_STRIPE and its code k in bits
 * 40..44, m in 32..34 (objstore keeps bits 32..47 in the header's
 * flags). OBJ_FILL of a vid covers both (backing_tag_vid).
 */
#define BACKING_STRIPE (1ull << 47)
static inline uint64_t backing_stripe_tag(uint32_t vid, unsigned k, unsigned m)
{
	return BACKING_STRIPE | (uint64_t)(k & 0x1fu) << 40 | (uint64_t)(m & 0x7u) << 32 | vid;
}

static inline uint32_t backing_tag_vid(uint64_t tag)
{
	return (uint32_t)tag;
}

/* The object backing @dst under @tag: the same chunk's object of the
 * tag's vid, of @dst's kind, or its stripe (oid_vstripe). */
uint64_t backing_src(uint64_t dst, uint64_t tag);

/*
 * backing_src_read of the source @src under @tag: a stripe's bytes
 * through strip_recover_read (only with @remote: else -EREMOTE; every
 * strip is a peer's or the I/O workers', -ENODATA there gives -EIO), an
 * object's through backing_src_read. copy.c's and this file's reads.
 */
int backing_tag_read(struct blockd *bd, uint64_t tag, uint64_t src, uint64_t epoch,
		     uint64_t off, void *buf, size_t len, uint64_t *size, int remote,
		     int timeout_ms);

/*
 * Read [off, off + len) of @oid as objstore_read would, absent blocks
 * of a backed object through its source, as of map @epoch. @remote: may
 * ask peers; without, -EREMOTE when only a peer can give the source.
 * Any thread.
 */
int backing_read(struct blockd *bd, uint64_t oid, uint64_t epoch, uint64_t off,
		 void *buf, size_t len, size_t *got, int remote);

/*
 * Bytes [off, off + len) of object @src (zeros past its end) and its
 * size: from this node's copy if it is an up holder in @epoch, else
 * (with @remote) from its other up holders within @timeout_ms. -ENOENT:
 * nobody has it; -EREMOTE; -EAGAIN (the map moves); -errno.
 */
int backing_src_read(struct blockd *bd, uint64_t src, uint64_t epoch, uint64_t off,
		     void *buf, size_t len, uint64_t *size, int remote, int timeout_ms);

/* For a write of [off, off + len) into @oid that got -ENODATA: the
 * source's first and last block of that range into @head and @tail
 * (4096 bytes each). 1: @oid is not backed (any more); 0; -errno. */
int backing_src_blocks(struct blockd *bd, uint64_t oid, uint64_t epoch, uint64_t off,
		       size_t len, uint8_t *head, uint8_t *tail, int remote);

/* A backed object was made (OBJ_COPY): fill it. Any thread. */
void backing_note(struct backing *b, uint64_t oid, uint64_t tag);

/* Run @w (its fn, then its finish) on a thread that may wait on peers.
 * Any thread. */
void backing_defer(struct backing *b, struct work *w);

/* Loop thread, after ops_dispatch's checks: OBJ_FILL @h (offset = the
 * vid; oid nonzero (2.6): that object only): reply once no object here
 * (or not @h's oid) is backed by one of that vid's or its stripes, or
 * -EAGAIN if that is not so within the request's time. */
void backing_fill_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h);

/* Objects filled and backed ones now (logged at stop). Any thread. */
void backing_counts(struct backing *b, uint64_t *filled, uint64_t *backed);
#endif
