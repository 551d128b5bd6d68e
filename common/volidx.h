/*
 * volidx.h - the bytes of a volume index object (docs/volumes.md,
 * docs/format.md "Volume index").
 *
 * The index of volume state `vid` is object oid_vindex(vid, copies). It
 * is a 64-byte header and then one le32 per chunk: the vid that owns
 * that chunk's data object (oid_vdata(owner, chunk, copies)), 0 for a
 * chunk never written (it reads as zeros, with no I/O). Entries past
 * the object's end are 0 too, and a missing index object is a volume
 * with nothing written: a new volume costs no I/O. The live state's
 * writer updates entries in place (a write at VOLIDX_ENTRY_OFF(i)); the
 * mds writes a whole index when it copies one (snapshot, clone,
 * rollback). The header is written once, with the first entry.
 *
 * Bit 31 of an entry (VOLIDX_SEALED) says the chunk of an erasure-coded
 * volume is sealed: its data is the EC object oid_vstripe(owner, chunk),
 * not the replicated oid_vdata (docs/ec.md "EC volumes"); the owner is
 * the other 31 bits (a state of an EC volume is sealed only while its
 * vid is below 2^31). Volumes without a code never set it and their
 * entries are the whole 32-bit vid, as before: @ec says which.
 *
 * Pure inline functions; no state.
 */
#ifndef SDFS_COMMON_VOLIDX_H
#define SDFS_COMMON_VOLIDX_H
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#define VOLIDX_MAGIC    0x58444956u     /* "VIDX" as a LE uint32 */
#define VOLIDX_VERSION  1u
#define VOLIDX_HDR_SIZE 64u
#define VOLIDX_ENTRY_SIZE 4u
#define VOLIDX_ENTRY_OFF(chunk) (VOLIDX_HDR_SIZE + (uint64_t)(chunk) * VOLIDX_ENTRY_SIZE)

/* The most chunks an index of objects of @obj_size bytes can map. */
#define VOLIDX_MAX_CHUNKS(obj_size) \
	(((uint64_t)(obj_size) - VOLIDX_HDR_SIZE) / VOLIDX_ENTRY_SIZE)

struct volidx_hdr {
	uint32_t magic, version;
	uint64_t vid;           /* whose index this is */
	uint64_t parent;        /* the vid it was copied from; 0: none */
	uint32_t obj_size;      /* bytes per data object */
	uint32_t copies;        /* 0: the cluster's */
	/* 32 bytes reserved, zero */
};

static inline void volidx_hdr_encode(const struct volidx_hdr *h, uint8_t out[VOLIDX_HDR_SIZE])
{
	uint32_t v32;
	uint64_t v64;

	memset(out, 0, VOLIDX_HDR_SIZE);
	v32 = htole32(VOLIDX_MAGIC); memcpy(out + 0, &v32, 4);
	v32 = htole32(VOLIDX_VERSION); memcpy(out + 4, &v32, 4);
	v64 = htole64(h->vid); memcpy(out + 8, &v64, 8);
	v64 = htole64(h->parent); memcpy(out + 16, &v64, 8);
	v32 = htole32(h->obj_size); memcpy(out + 24, &v32, 4);
	v32 = htole32(h->copies); memcpy(out + 28, &v32, 4);
}

/* -EBADMSG if @in is not a version-1 index header; -EPROTO if short. */
static inline int volidx_hdr_decode(const uint8_t *in, size_t len, struct volidx_hdr *h)
{
	uint32_t v32;
	uint64_t v64;

	if (len < VOLIDX_HDR_SIZE)
		return -EPROTO;
	memcpy(&v32, in + 0, 4); h->magic = le32toh(v32);
	memcpy(&v32, in + 4, 4); h->version = le32toh(v32);
	if (h->magic != VOLIDX_MAGIC || h->version != VOLIDX_VERSION)
		return -EBADMSG;
	memcpy(&v64, in + 8, 8); h->vid = le64toh(v64);
	memcpy(&v64, in + 16, 8); h->parent = le64toh(v64);
	memcpy(&v32, in + 24, 4); h->obj_size = le32toh(v32);
	memcpy(&v32, in + 28, 4); h->copies = le32toh(v32);
	return 0;
}

#define VOLIDX_SEALED 0x80000000u

/* The owning vid of entry @e of a volume with (@ec) or without an
 * erasure code, and whether it is sealed. */
static inline uint32_t volidx_owner(uint32_t e, int ec)
{
	return ec ? e & ~VOLIDX_SEALED : e;
}

static inline int volidx_sealed(uint32_t e, int ec)
{
	return ec && (e & VOLIDX_SEALED) != 0;
}

static inline uint32_t volidx_entry_get(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline void volidx_entry_put(uint8_t *p, uint32_t owner)
{
	uint32_t v = htole32(owner);

	memcpy(p, &v, 4);
}
#endif
