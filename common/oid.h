/*
 * oid.h - what an object id names: the kind in the top byte, then the
 * owner and the chunk index (docs/format.md, "Object ids").
 *
 *   kind 0x00  raw objects (`sdfs obj put`, tests)
 *   kind 0x01  MDS database: file_id (36 bits) << 20 | chunk (20 bits)
 *   kind 0x02  regular file data: ino (36 bits) << 20 | chunk (20 bits)
 * Pure inline functions; no state.
 */
#ifndef SDFS_COMMON_OID_H
#define SDFS_COMMON_OID_H
#include <stdint.h>

#define OID_KIND_SHIFT   56
#define OID_KIND_RAW     0x00u
#define OID_KIND_MDS     0x01u
#define OID_KIND_FILE    0x02u
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
#endif
