/*
 * oid.h - what an object id names: the kind in the top byte, then the
 * owner and the chunk index (docs/format.md, "Object ids").
 *
 *   kind 0x00  raw objects (`sdfs obj put`, tests)
 *   kind 0x01  MDS database: file_id (36 bits) << 20 | chunk (20 bits)
 *   kind 0x02  regular file data: ino (36 bits) << 20 | chunk (20 bits)
 *   kind 0x1c  the same, of a file with its own number of copies c
 *              (1..15, the directory policy it was made under: `sdfs fs
 *              setpolicy`, docs/policy.md)
 *   kind 0x2c  volume index (docs/volumes.md): vid << 20 | 0
 *   kind 0x3c  volume data: owning vid << 20 | chunk
 *   kind 0x40  a sealed chunk of an erasure-coded volume: an EC object
 *              (sdfs_ec_*, its code from the volume's policy, common/
 *              policy.h): owning vid << 20 | chunk (docs/ec.md)
 *   kind 0x41  a sealed regular file's chunk: an EC object, its code from
 *              the inode's policy: ino << 20 | chunk (docs/ec.md "EC files")
 * Volume kinds carry the volume's number of copies in their low nibble
 * (c = 0: the cluster's), and so do the files' 0x1c, so placement and
 * recovery, which see only the oid, agree on it everywhere: oid_copies().
 * Pure inline functions; no state.
 */
#ifndef SDFS_COMMON_OID_H
#define SDFS_COMMON_OID_H
#include <stdint.h>

#define OID_KIND_SHIFT   56
#define OID_KIND_RAW     0x00u
#define OID_KIND_MDS     0x01u
#define OID_KIND_FILE    0x02u
#define OID_KIND_FILEC   0x10u   /* | copies (1..15): file data, own copies */
#define OID_KIND_VINDEX  0x20u   /* | copies */
#define OID_KIND_VDATA   0x30u   /* | copies */
#define OID_KIND_VSTRIPE 0x40u  /* EC object: a sealed volume chunk */
#define OID_KIND_FSTRIPE 0x41u  /* EC object: a sealed file's chunk */
#define OID_COPIES_MAX   15u     /* what a volume kind can say */
#define OID_CHUNK_BITS   20
#define OID_OWNER_BITS   36
#define OID_CHUNK_MAX    ((1ull << OID_CHUNK_BITS) - 1)
#define OID_OWNER_MAX    ((1ull << OID_OWNER_BITS) - 1)

/* The largest size a file of objects of @obj_size bytes can have. */
#define OID_FILE_MAX_SIZE(obj_size) ((uint64_t)(obj_size) * (OID_CHUNK_MAX + 1))

/* Inode numbers left for files with objects (ino < 2^36). */
#define OID_INODES_FREE(next_ino) \
	((next_ino) > OID_OWNER_MAX ? 0 : OID_OWNER_MAX - (next_ino))

static inline unsigned oid_kind(uint64_t oid)
{
	return (unsigned)(oid >> OID_KIND_SHIFT);
}

static inline uint64_t oid_make(unsigned kind, uint64_t owner, uint64_t chunk)
{
	return (uint64_t)kind << OID_KIND_SHIFT |
	       (owner & OID_OWNER_MAX) << OID_CHUNK_BITS | (chunk & OID_CHUNK_MAX);
}

static inline uint64_t oid_owner(uint64_t oid)
{
	return (oid >> OID_CHUNK_BITS) & OID_OWNER_MAX;
}

static inline uint64_t oid_chunk(uint64_t oid)
{
	return oid & OID_CHUNK_MAX;
}

/* Volume objects: index of @vid, and chunk @chunk owned by @vid, for a
 * volume of @copies copies (0: the cluster's; at most OID_COPIES_MAX). */
static inline uint64_t oid_vindex(uint64_t vid, unsigned copies)
{
	return oid_make(OID_KIND_VINDEX | (copies & 0xfu), vid, 0);
}

static inline uint64_t oid_vdata(uint64_t vid, uint64_t chunk, unsigned copies)
{
	return oid_make(OID_KIND_VDATA | (copies & 0xfu), vid, chunk);
}

/* The EC object (sdfs_ec_*) holding chunk @chunk owned by @vid once
 * sealed (an erasure-coded volume, docs/ec.md "EC volumes"). */
static inline uint64_t oid_vstripe(uint64_t vid, uint64_t chunk)
{
	return oid_make(OID_KIND_VSTRIPE, vid, chunk);
}

/* The EC object (sdfs_ec_*) holding chunk @chunk of the regular file
 * @ino once sealed (docs/ec.md "EC files"). */
static inline uint64_t oid_fstripe(uint64_t ino, uint64_t chunk)
{
	return oid_make(OID_KIND_FSTRIPE, ino, chunk);
}

/* Chunk @chunk of the file @ino whose inode says @copies (0: the
 * cluster's; at most OID_COPIES_MAX). */
static inline uint64_t oid_file(uint64_t ino, uint64_t chunk, unsigned copies)
{
	return oid_make(copies ? OID_KIND_FILEC | (copies & 0xfu) : OID_KIND_FILE, ino, chunk);
}

/* Is @oid a regular file's data object? (its inode is oid_owner) */
static inline int oid_is_file(uint64_t oid)
{
	unsigned k = oid_kind(oid);

	return k == OID_KIND_FILE || ((k & 0xf0u) == OID_KIND_FILEC && (k & 0xfu));
}

/* Is @oid a volume index or data object? (its vid is oid_owner) */
static inline int oid_is_vol(uint64_t oid)
{
	unsigned k = oid_kind(oid) & 0xf0u;

	return k == OID_KIND_VINDEX || k == OID_KIND_VDATA;
}

/* Is @oid a sealed volume chunk's EC object? (its vid is oid_owner) */
static inline int oid_is_vstripe(uint64_t oid)
{
	return oid_kind(oid) == OID_KIND_VSTRIPE;
}

static inline int oid_is_vdata(uint64_t oid)
{
	return (oid_kind(oid) & 0xf0u) == OID_KIND_VDATA;
}

/*
 * Are mutations of @oid ordered through its primary replica (the first
 * up holder)? Yes for objects any client may write at once: file data
 * and raw objects; two clients' writes then reach every replica in one
 * order, so replicas never diverge (docs/consistency.md). No for volume
 * and MDS-database objects: they have one fenced writer at a time, which
 * writes every replica directly (one hop less).
 */
static inline int oid_is_ordered(uint64_t oid)
{
	return !oid_is_vol(oid) && oid_kind(oid) != OID_KIND_MDS;
}

/* How many copies @oid has in a cluster of @cluster_copies. */
static inline unsigned oid_copies(uint64_t oid, unsigned cluster_copies)
{
	unsigned c = oid_kind(oid) & 0xfu;

	return (oid_is_vol(oid) || (oid_kind(oid) & 0xf0u) == OID_KIND_FILEC) && c ?
	       c : cluster_copies;
}
#endif
