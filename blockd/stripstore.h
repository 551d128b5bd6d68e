/*
 * stripstore.h - strips of erasure-coded objects on a local disk
 * (docs/ec.md; file format in docs/format.md "blockd strip files").
 *
 * A strip is one of the k + m pieces of an object's stripe; a node may
 * hold strips of many objects, and more than one strip number or
 * version of one object. Each (oid, strip number, version) is a file
 * of its own under <dir>/strip/, apart from the replicated objects
 * (objstore.h), written once and never changed: built in a temporary
 * file, fdatasync'ed, renamed to its name, the directory fsync'ed, so
 * after a crash or power loss it is there whole or not at all. Every
 * 4 KiB block has an XXH3-64 checksum, verified on every read (-EBADMSG,
 * never bad bytes).
 *
 * A tombstone (SDFS_STRIP_TOMB) is a version of header only, no bytes:
 * what a removal writes (docs/ec.md "Removal"); it reads as -ENOENT.
 *
 * Versions: a put adds a version beside the ones held; nothing is
 * dropped until the writer commits a version (stripstore_commit), which
 * removes the older versions of that strip number once the committed
 * one is here. So the previous version of a strip stays readable until
 * its stripe's new version is complete on all k + m nodes: the write
 * hole's closure (docs/ec.md, "Versions and commits").
 *
 * Thread-safe: puts and commits of one oid are serialized by a lock
 * stripe; reads take no lock (files are immutable; a rename or unlink
 * never changes an open file's bytes).
 */
#ifndef SDFS_BLOCKD_STRIPSTORE_H
#define SDFS_BLOCKD_STRIPSTORE_H
#include <stddef.h>
#include <stdint.h>

#include "common/sdfs_proto.h"

struct stripstore;

/* Open (creating) <@dir>/strip holding strips of up to @max_strip_len
 * bytes; leftover temporary files are removed. 0 or -errno. */
int stripstore_open(const char *dir, uint32_t max_strip_len, struct stripstore **out);
void stripstore_close(struct stripstore *ss);           /* NULL ok */

/* Is @st a strip this store can take (k, m, s, lengths)? 0 or -EINVAL. */
int stripstore_check(const struct stripstore *ss, const struct sdfs_strip *st);

/* Store strip @st of @oid: its st->strip_len bytes at @data, durably,
 * replacing a file of the same (oid, s, version) and tag if any (a
 * retry). -EEXIST if that version is here with another tag (another
 * writer's: the caller tries a newer version), -EINVAL, -ENOSPC, -EIO. */
int stripstore_put(struct stripstore *ss, uint64_t oid, const struct sdfs_strip *st,
		   const void *data);

/* The scrub's rebuild (docs/scrub.md "Strips"): as stripstore_put, but
 * only while the file of (oid, st->s, st->version) is here with tag
 * st->tag (or a header too damaged to say): it is replaced whole, under
 * the lock puts and commits take, so a commit that dropped it first is
 * never undone. -ENOENT (not here: nothing written), -EEXIST (another
 * tag), -EINVAL, -ENOSPC, -EIO. */
int stripstore_replace(struct stripstore *ss, uint64_t oid, const struct sdfs_strip *st,
		       const void *data);

/*
 * Read @len bytes at @off of strip @s, version @version of @oid, whose
 * tag must be @tag; *@got is the count, short only at the strip's end.
 * -ENOENT (no such strip version, or another tag), -EBADMSG (a block
 * or the header failed its checksum).
 */
int stripstore_read(struct stripstore *ss, uint64_t oid, unsigned s, uint64_t version,
		    uint64_t tag, uint64_t off, void *buf, size_t len, size_t *got);

/* Every strip version held of @oid (any strip number), as its header
 * says, into @out (at most @max), *@n of them. A file whose header
 * fails its checks is left out (logged). 0 or -errno. */
int stripstore_list(struct stripstore *ss, uint64_t oid, struct sdfs_strip *out,
		    size_t max, size_t *n);

/* Version @version of strip @s of @oid is complete on every node:
 * remove the older versions of that strip here; of every strip number
 * if @version is a tombstone (SDFS_STRIP_TOMB: the object was removed).
 * -ENOENT (and nothing removed) if @version itself is not held.
 * *@dropped (may be NULL) counts the files removed. */
int stripstore_commit(struct stripstore *ss, uint64_t oid, unsigned s, uint64_t version,
		      unsigned *dropped);

/* Remove the file of strip @s, version @version of @oid if its tag is
 * @tag: an extra copy whose position's holder has the same strip (the
 * caller checked). 0, -ENOENT (not here with that tag), -errno. */
int stripstore_drop(struct stripstore *ss, uint64_t oid, unsigned s, uint64_t version,
		    uint64_t tag);

/* Call @fn(@arg, oid) once for every oid with strip files here (one
 * directory at a time, in no set order); stops at @fn's first nonzero
 * return, which it returns. */
int stripstore_each_oid(struct stripstore *ss, int (*fn)(void *arg, uint64_t oid),
			void *arg);

/* The path of a strip version's file (tests, operators). */
int stripstore_path(const struct stripstore *ss, uint64_t oid, unsigned s,
		    uint64_t version, char *buf, size_t len);
#endif
