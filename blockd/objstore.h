/*
 * objstore.h - objects on a local disk, one file each, with an XXH3-64
 * checksum per 4 KiB block verified on every read.
 *
 * Crash contract: an object write that returned 0 is in the page cache
 * and survives a crash of the process; objstore_sync() makes it survive
 * power loss. A write interrupted by a crash (kill -9) leaves every
 * 4 KiB block of the object reading back as its old or its new content,
 * never a mix and never a checksum error. The on-disk format is in
 * docs/format.md ("blockd object files").
 *
 * Versions: every change of an object gets a 64-bit version, the
 * cluster epoch it was made in << 32 | its number among the changes in
 * that epoch (1, 2, ...). Replicas that saw the same changes have the
 * same version; one that missed a change has a lower one. Recovery
 * compares them; version >> 32 is "the epoch of the last write".
 *
 * Open files: the store keeps up to 512 object files open between
 * writes (2 per lock stripe, least recently written closed first), so
 * an overwrite costs no open or header read; a removed or replaced
 * object's file is closed at once. Object files must not be changed
 * by anyone else while the store is open (a file renamed or removed
 * behind its back is noticed; one changed in place is not, until a
 * read checks it).
 *
 * Bytes on disk that fail their checks give -EBADMSG and a log line,
 * never bad data. Thread-safe: any number of threads may call any
 * function at once; writes to one object are serialized inside.
 * Not here: the network, epochs policy, replication (blockd/ops.c).
 */
#ifndef SDFS_BLOCKD_OBJSTORE_H
#define SDFS_BLOCKD_OBJSTORE_H
#include <stddef.h>
#include <stdint.h>

#define OBJSTORE_MAX_OBJ_SIZE   (64u << 20)     /* largest max_obj_size */
#define OBJSTORE_CREATE         0x1u            /* write: create if missing */
#define OBJSTORE_BLOCK          4096u           /* checksum block */

struct objstore;

struct objstore_stat {
	uint64_t size;          /* high-water mark: highest byte written + 1 */
	uint64_t version;       /* of the last change (see above) */
	uint64_t csum;          /* XXH3-64 over the block checksums, for scrub/compare */
	uint64_t backing;       /* a backed object's tag (its csum covers the
				   absent blocks as zeros), else 0 */
};

/*
 * Backed objects (docs/format.md "Backed objects"): an object may be
 * made *backed* by a source its caller names with a tag: nonzero low
 * 32 bits, at most 48 bits (blockd/backing.h: a volume's ancestor vid,
 * or a stripe's vid and code in bits 32..47; an object from before 2.6
 * has a 32-bit one). A block of it never
 * written is *absent*: its bytes are the source's, which the store does
 * not have. objstore_read_map says which blocks are absent; a write
 * that covers an absent block only partly needs the source's bytes of
 * that block (struct objstore_src), else -ENODATA and nothing changes;
 * objstore_fill writes the source's bytes into the absent blocks (the
 * version kept) and objstore_unback ends the backing once none is
 * left. A kill -9 anywhere leaves each block old (absent included) or
 * new, as for any write. Replace, put, remove and bury make an ordinary
 * object (or tombstone) again.
 */
struct objstore_src {
	const void *head;       /* the source's block off / 4096, or NULL */
	const void *tail;       /* its block (off + len - 1) / 4096, or NULL */
};

/*
 * Open (creating if needed) the store under @dir, holding objects of up
 * to @max_obj_size bytes (a multiple of 4096, at most
 * OBJSTORE_MAX_OBJ_SIZE). Returns 0 and *@out, -EINVAL, or -errno.
 * Leftover temporary files from a crash are removed here.
 */
int objstore_open(const char *dir, uint32_t max_obj_size, struct objstore **out);
void objstore_close(struct objstore *s);        /* NULL ok */

/* An empty object (size 0), changed in @epoch. -EEXIST if it exists
 * (a tombstone does not count). */
int objstore_create(struct objstore *s, uint64_t oid, uint64_t epoch);

/*
 * Write @len bytes at @off. -ENOENT if the object does not exist and
 * @flags lacks OBJSTORE_CREATE; -EFBIG if off + len > max_obj_size;
 * -EBADMSG if a partly overwritten block was already corrupt.
 * The new version is the next one in @epoch.
 */
int objstore_write(struct objstore *s, uint64_t oid, uint64_t off,
		   const void *buf, size_t len, uint64_t epoch, unsigned flags);

/* objstore_write into a backed object: @src gives the source's bytes
 * of partly written absent blocks (NULL: none; -ENODATA if one is). */
int objstore_write_src(struct objstore *s, uint64_t oid, uint64_t off,
		       const void *buf, size_t len, uint64_t epoch, unsigned flags,
		       const struct objstore_src *src);

/*
 * Replace the object atomically (as objstore_put: the next version in
 * @epoch) by one backed by @backing (nonzero), @size bytes long (at
 * least off + len), every block absent but those of @buf[0..len) at
 * @off; partly written blocks take the rest from @src (-ENODATA
 * without). -EINVAL for a bad size, range or tag.
 */
int objstore_put_backed(struct objstore *s, uint64_t oid, uint64_t backing,
			uint64_t size, uint64_t off, const void *buf, size_t len,
			const struct objstore_src *src, uint64_t epoch);

/*
 * Fill the absent blocks of backed object @oid in [off, off + len) (whole
 * blocks) with @buf, the source's bytes there; present blocks are left
 * alone, the version is kept. -ESTALE if @oid is not backed by @backing
 * (any more), -ENOENT if missing.
 */
int objstore_fill(struct objstore *s, uint64_t oid, uint64_t backing, uint64_t off,
		  const void *buf, size_t len);
/* End @oid's backing by @backing once no block below its size is absent
 * (the object synced first): 0, -EAGAIN (absent blocks left), -ESTALE
 * (not backed by it), -ENOENT. */
int objstore_unback(struct objstore *s, uint64_t oid, uint64_t backing);
/* The object's tag (0: not backed) and size, from its header. -ENOENT
 * (a tombstone too), -EBADMSG. @size may be NULL. */
int objstore_backing(struct objstore *s, uint64_t oid, uint64_t *backing, uint64_t *size);

/*
 * Replace the whole object with @buf[0..len) atomically (a temporary
 * file renamed over it): after a crash it is wholly old or wholly new.
 * Used to repair a replica and to recover objects: it gets exactly
 * @version (a copy keeps the version of its source). Creates if missing.
 */
int objstore_replace(struct objstore *s, uint64_t oid, const void *buf,
		     size_t len, uint64_t version);

/* objstore_replace by a client in @epoch: the next version. */
int objstore_put(struct objstore *s, uint64_t oid, const void *buf, size_t len,
		 uint64_t epoch);

/*
 * Read up to @len bytes at @off into @buf; *@got is the count, short
 * only at the object's size (0 at or past it). Verifies every block it
 * touches: -EBADMSG on a mismatch. -ENOENT if no such object.
 */
int objstore_read(struct objstore *s, uint64_t oid, uint64_t off,
		  void *buf, size_t len, size_t *got);
/* objstore_read, saying in *@backing the object's tag (0: not backed)
 * and, for a backed one, in @absent[i] (one byte per block from off /
 * 4096 to the last read) whether block off / 4096 + i is absent (read
 * as zeros here; its bytes are the source's). Either may be NULL. */
int objstore_read_map(struct objstore *s, uint64_t oid, uint64_t off,
		      void *buf, size_t len, size_t *got, uint64_t *backing,
		      uint8_t *absent);

int objstore_remove(struct objstore *s, uint64_t oid);   /* -ENOENT */
int objstore_stat(struct objstore *s, uint64_t oid, struct objstore_stat *st);

/* Check every block of the object: 0, -EBADMSG or -ENOENT. */
int objstore_verify(struct objstore *s, uint64_t oid);

/*
 * objstore_verify in parts, for a caller that paces its reads (scrub):
 * check blocks [@b0, @b0 + @max) of those below the object's size as a
 * read would, holding the object's lock only meanwhile. Their data
 * checksums go to @csums[@b0 ...] (little-endian: what objstore_stat's
 * csum hashes; @ncsums entries at most, else -EFBIG), and *@st gets the
 * header's size, version and backing (csum 0). The part that reaches the size
 * also checks that the table has nothing past it. *@next: the first
 * block of the next part, 0 after the last. The object may change
 * between parts: the caller compares the versions. 0, -EBADMSG,
 * -ENOENT, -errno.
 */
int objstore_verify_part(struct objstore *s, uint64_t oid, uint64_t b0, size_t max,
			 uint64_t *csums, size_t ncsums, struct objstore_stat *st,
			 uint64_t *next);
/*
 * objstore_stat from the header and the checksum table only (16 bytes
 * read per 4 KiB block, no data): the csum a good copy's data would
 * give. csum 0 when an interrupted write left entries unsettled (unknown
 * until the next write settles them), and for a backed object (its
 * absent blocks are the source's). No block is checked.
 */
int objstore_stat_table(struct objstore *s, uint64_t oid, struct objstore_stat *st);

/* fdatasync the object (and its directory entry); -ENOENT if missing. */
int objstore_sync(struct objstore *s, uint64_t oid);
/* Make everything in the store durable (syncfs). */
int objstore_sync_all(struct objstore *s);

/*
 * List object ids greater than @after in ascending order, at most @max
 * of them, into @oids; *@n is the count. A caller pages through the
 * store by passing the last id it got. Pass @after = 0 and
 * @include_zero = 1 for the first page (oid 0 is a valid id).
 * Tombstones are listed too. From the store's index in memory (built at
 * open): no disk access, O(@max + 256 log n) whatever the page. Every
 * id that has a file from the first page to the last is listed exactly
 * once; one created or removed meanwhile may or may not be.
 */
int objstore_list(struct objstore *s, uint64_t after, int include_zero,
		  uint64_t *oids, size_t max, size_t *n);

/* How many ids objstore_list would list (objects and tombstones), kept
 * as they come and go: no disk access. */
uint64_t objstore_count(struct objstore *s);

/* Size, version and whether it is a tombstone, from the object's header
 * only (cheap: no block checks). -ENOENT, -EBADMSG. @deleted may be NULL. */
int objstore_head(struct objstore *s, uint64_t oid, uint64_t *size, uint64_t *version,
		  int *deleted);

/*
 * Replace the object by a tombstone, a version like any other: "removed".
 * Read, stat, verify and write without OBJSTORE_CREATE then see -ENOENT;
 * create and write with OBJSTORE_CREATE make a new object over it.
 * Recovery compares a tombstone's version with copies' versions, so an
 * old copy on a node that was away cannot bring the object back.
 * objstore_remove deletes a tombstone like any file.
 *   objstore_remove_at: a client's removal in @epoch: the next version.
 *     -ENOENT if missing; a tombstone already there still gets the next
 *     version (a retried removal must not look older than a write it
 *     follows) and -ENOENT.
 *   objstore_bury: a copied tombstone with exactly @version (recovery).
 * Neither needs space: on a filesystem too full for a new file (ENOSPC,
 * EDQUOT) the tombstone is written over the object's own file, whose
 * data and table are let go (docs/operations.md "Space").
 */
int objstore_remove_at(struct objstore *s, uint64_t oid, uint64_t epoch);
int objstore_bury(struct objstore *s, uint64_t oid, uint64_t version);

struct objstore_ent {
	uint64_t oid, version, size;
	int deleted;            /* a tombstone */
};
/* objstore_list with each object's epoch and size; a copy whose header
 * is unreadable is listed with epoch 0 (older than any real copy). A
 * header is read from disk only the first time it is listed after the
 * object changed (or the store opened); the other times the listing
 * repeats what it read then, so one changed behind the store's back is
 * seen only after the next change through it or a restart. */
int objstore_list_ent(struct objstore *s, uint64_t after, int include_zero,
		      struct objstore_ent *ents, size_t max, size_t *n);

/* The path of the object's file, for operators (`sdfs obj locate`). */
int objstore_path(const struct objstore *s, uint64_t oid, char *buf, size_t len);

/* Bytes used and total of the filesystem holding the store. */
int objstore_space(const struct objstore *s, uint64_t *used, uint64_t *total);
/* Bytes the daemon may still write there: statvfs f_bavail (the blocks
 * the filesystem keeps for root are not the daemon's to fill). */
int objstore_avail(const struct objstore *s, uint64_t *avail);
#endif
