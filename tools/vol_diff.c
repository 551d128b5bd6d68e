/*
 * vol_diff.c - see vol_diff.h; the byte layout is in docs/volumes.md
 * "Diff stream".
 */
#include "tools/vol_diff.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/csum.h"
#include "common/volidx.h"
#include "tools/cli.h"

#define DIFF_NAME_LEN 64        /* name fields: zero-padded, maybe unterminated */
#define DIFF_OBJ_MIN 4096u
#define DIFF_OBJ_MAX (64u << 20)

/* Header offsets. */
#define H_VERSION 8
#define H_HDR_SIZE 12
#define H_OBJ_SIZE 16
#define H_FLAGS 20
#define H_FROM_SIZE 24
#define H_TO_SIZE 32
#define H_FROM_VID 40
#define H_TO_VID 48
#define H_FROM_CTIME 56
#define H_TO_CTIME 64
#define H_FROM_NAME 72
#define H_TO_NAME 136
#define H_CSUM 248              /* XXH3-64 of bytes [0, 248) */

/* Record header / trailer offsets (both VOL_DIFF_REC_SIZE bytes). */
#define R_MAGIC 0
#define R_TYPE 4                /* trailer: reserved, 0 */
#define R_CHUNK 8               /* trailer: records */
#define R_LENGTH 16             /* trailer: data bytes (u64) */
#define R_RESERVED 20
#define R_DATA_CSUM 24          /* trailer: zero records */
#define R_CSUM 32               /* XXH3-64 of bytes [0, 32), seeded with the
				   previous record's (or the header's) */

static void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

static int say(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int say(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

static uint64_t chunks_of(uint64_t size, uint32_t obj_size)
{
	return size / obj_size + (size % obj_size != 0);
}

/* Bytes of chunk @i of a volume of @size bytes. */
static uint32_t chunk_len(uint64_t size, uint32_t obj_size, uint64_t i)
{
	uint64_t left = size - i * obj_size;

	return left < obj_size ? (uint32_t)left : obj_size;
}

static void hdr_encode(struct vol_diff_hdr *h, uint8_t out[VOL_DIFF_HDR_SIZE])
{
	memset(out, 0, VOL_DIFF_HDR_SIZE);
	memcpy(out, VOL_DIFF_MAGIC, 8);
	put32(out + H_VERSION, VOL_DIFF_VERSION);
	put32(out + H_HDR_SIZE, VOL_DIFF_HDR_SIZE);
	put32(out + H_OBJ_SIZE, h->obj_size);
	put64(out + H_FROM_SIZE, h->from_size);
	put64(out + H_TO_SIZE, h->to_size);
	put64(out + H_FROM_VID, h->from_vid);
	put64(out + H_TO_VID, h->to_vid);
	put64(out + H_FROM_CTIME, (uint64_t)h->from_ctime_ns);
	put64(out + H_TO_CTIME, (uint64_t)h->to_ctime_ns);
	memcpy(out + H_FROM_NAME, h->from_name, strnlen(h->from_name, DIFF_NAME_LEN));
	memcpy(out + H_TO_NAME, h->to_name, strnlen(h->to_name, DIFF_NAME_LEN));
	h->csum = csum64(out, H_CSUM);
	put64(out + H_CSUM, h->csum);
}

int vol_diff_read_hdr(int fd, struct vol_diff_hdr *h, char *err, size_t errlen)
{
	uint8_t b[VOL_DIFF_HDR_SIZE];
	ssize_t n = cli_read_full(fd, b, sizeof(b));
	uint32_t version;

	if (n < 0)
		return say(err, errlen, (int)n, "read: %s", strerror((int)-n));
	/* The magic first: garbage is "not a diff stream", not "truncated". */
	if (n < 8 || memcmp(b, VOL_DIFF_MAGIC, 8))
		return say(err, errlen, -EBADMSG, "not an sdfs diff stream (no %s magic)",
			   VOL_DIFF_MAGIC);
	version = get32(b + H_VERSION);
	if (n >= H_VERSION + 4 && version != VOL_DIFF_VERSION)
		return say(err, errlen, -EBADMSG, "diff stream version %" PRIu32
			   ", this sdfs reads version %u", version, VOL_DIFF_VERSION);
	if ((size_t)n < sizeof(b))
		return say(err, errlen, -EBADMSG, "truncated diff stream (%zd of the "
			   "header's %u bytes)", n, VOL_DIFF_HDR_SIZE);
	if (get64(b + H_CSUM) != csum64(b, H_CSUM))
		return say(err, errlen, -EBADMSG, "diff stream header checksum mismatch");
	if (get32(b + H_HDR_SIZE) != VOL_DIFF_HDR_SIZE || get32(b + H_FLAGS))
		return say(err, errlen, -EBADMSG, "diff stream header: unknown size or flags");
	memset(h, 0, sizeof(*h));
	h->obj_size = get32(b + H_OBJ_SIZE);
	h->from_size = get64(b + H_FROM_SIZE);
	h->to_size = get64(b + H_TO_SIZE);
	h->from_vid = get64(b + H_FROM_VID);
	h->to_vid = get64(b + H_TO_VID);
	h->from_ctime_ns = (int64_t)get64(b + H_FROM_CTIME);
	h->to_ctime_ns = (int64_t)get64(b + H_TO_CTIME);
	memcpy(h->from_name, b + H_FROM_NAME, DIFF_NAME_LEN);
	memcpy(h->to_name, b + H_TO_NAME, DIFF_NAME_LEN);
	h->csum = get64(b + H_CSUM);
	if (h->obj_size < DIFF_OBJ_MIN || h->obj_size > DIFF_OBJ_MAX)
		return say(err, errlen, -EBADMSG, "diff stream header: object size %" PRIu32
			   " out of range", h->obj_size);
	if (chunks_of(h->to_size, h->obj_size) > VOLIDX_MAX_CHUNKS(h->obj_size) ||
	    chunks_of(h->from_size, h->obj_size) > VOLIDX_MAX_CHUNKS(h->obj_size))
		return say(err, errlen, -EBADMSG, "diff stream header: volume size too large "
			   "for its object size");
	return 0;
}

/* Encode a record header (or the trailer) and advance the chain. */
static void rec_encode(uint8_t r[VOL_DIFF_REC_SIZE], uint32_t magic, uint32_t type,
		       uint64_t chunk, uint64_t length, uint64_t data_csum, uint64_t *chain)
{
	memset(r, 0, VOL_DIFF_REC_SIZE);
	put32(r + R_MAGIC, magic);
	put32(r + R_TYPE, type);
	put64(r + R_CHUNK, chunk);
	if (magic == VOL_DIFF_END_MAGIC)
		put64(r + R_LENGTH, length);
	else
		put32(r + R_LENGTH, (uint32_t)length);
	put64(r + R_DATA_CSUM, data_csum);
	*chain = csum64_seed(r, R_CSUM, *chain);
	put64(r + R_CSUM, *chain);
}

static int out_fail(int ret, int *out_err, char *err, size_t errlen)
{
	*out_err = 1;
	return say(err, errlen, ret, "write output: %s", strerror(-ret));
}

int vol_diff_write(struct sdfs_vol *from, struct sdfs_vol *to, int fd,
		   struct progress *p, uint64_t *records, uint64_t *bytes,
		   int *out_err, char *err, size_t errlen)
{
	struct sdfs_vol_info a, b;
	struct vol_diff_hdr h;
	uint8_t hb[VOL_DIFF_HDR_SIZE], r[VOL_DIFF_REC_SIZE];
	uint64_t chain, nrec = 0, nzero = 0, data_bytes = 0, tail = UINT64_MAX;
	uint64_t n_from, n_to;
	uint8_t *buf;
	int ret = 0;

	*out_err = 0;
	sdfs_vol_get_info(from, &a);
	sdfs_vol_get_info(to, &b);
	if (a.obj_size != b.obj_size || !b.obj_size)
		return say(err, errlen, -EINVAL, "the snapshots have different object sizes");
	memset(&h, 0, sizeof(h));
	h.obj_size = b.obj_size;
	h.from_size = sdfs_vol_size(from);
	h.to_size = sdfs_vol_size(to);
	h.from_vid = a.vid;
	h.to_vid = b.vid;
	h.from_ctime_ns = a.ctime_ns;
	h.to_ctime_ns = b.ctime_ns;
	snprintf(h.from_name, sizeof(h.from_name), "%s", a.name);
	snprintf(h.to_name, sizeof(h.to_name), "%s", b.name);
	hdr_encode(&h, hb);
	buf = malloc(h.obj_size);
	if (!buf)
		return say(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	ret = cli_write_all(fd, hb, sizeof(hb));
	if (ret)
		goto out_write;
	chain = h.csum;
	n_from = chunks_of(h.from_size, h.obj_size);
	n_to = chunks_of(h.to_size, h.obj_size);
	/* A grown volume's chunk across A's old end: its bytes past that
	 * end read as zeros in A but need not in B, whoever owns it. */
	if (h.from_size % h.obj_size && h.to_size > h.from_size)
		tail = h.from_size / h.obj_size;
	for (uint64_t i = 0; i < n_to; i++) {
		uint64_t oa = i < n_from ? sdfs_vol_chunk_owner(from, i) : 0;
		uint64_t ob = sdfs_vol_chunk_owner(to, i), off = i * h.obj_size;
		uint32_t len = chunk_len(h.to_size, h.obj_size, i), type = VOL_DIFF_ZERO;
		uint64_t dcsum = 0;

		progress_show(p, off);
		/* Both are snapshots: a chunk with one owner in both is the
		 * same frozen object, so the same bytes. */
		if (oa == ob && i != tail)
			continue;
		if (ob) {
			ssize_t n = sdfs_vol_pread(to, buf, len, off);

			if (n < 0) {
				ret = say(err, errlen, (int)n, "read chunk %" PRIu64 ": %s", i,
					  strerror((int)-n));
				goto out;
			}
			memset(buf + n, 0, len - (size_t)n);
			if (!cli_is_zero(buf, len)) {
				type = VOL_DIFF_DATA;
				dcsum = csum64(buf, len);
			}
		}
		rec_encode(r, VOL_DIFF_REC_MAGIC, type, i, len, dcsum, &chain);
		ret = cli_write_all(fd, r, sizeof(r));
		if (!ret && type == VOL_DIFF_DATA)
			ret = cli_write_all(fd, buf, len);
		if (ret)
			goto out_write;
		nrec++;
		if (type == VOL_DIFF_DATA)
			data_bytes += len;
		else
			nzero++;
	}
	rec_encode(r, VOL_DIFF_END_MAGIC, 0, nrec, data_bytes, nzero, &chain);
	ret = cli_write_all(fd, r, sizeof(r));
	if (ret)
		goto out_write;
	progress_end(p, h.to_size);
	if (records)
		*records = nrec;
	if (bytes)
		*bytes = data_bytes;
	free(buf);
	return 0;
out_write:
	ret = out_fail(ret, out_err, err, errlen);
out:
	free(buf);
	return ret;
}

int vol_diff_apply(int fd, const struct vol_diff_hdr *h, struct sdfs_vol *v,
		   struct progress *p, uint64_t *records, int *vol_err,
		   char *err, size_t errlen)
{
	uint64_t chain = h->csum, nrec = 0, nzero = 0, data_bytes = 0, next = 0;
	uint64_t nchunks = chunks_of(h->to_size, h->obj_size);
	uint8_t r[VOL_DIFF_REC_SIZE], *buf = malloc(h->obj_size);
	int ret = 0;

	*vol_err = 0;
	if (!buf)
		return say(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	for (;;) {
		ssize_t n = cli_read_full(fd, r, sizeof(r));
		uint32_t magic, type, len;
		uint64_t chunk;

		if (n < 0) {
			ret = say(err, errlen, (int)n, "read: %s", strerror((int)-n));
			goto out;
		}
		if ((size_t)n < sizeof(r)) {
			ret = say(err, errlen, -EBADMSG, "truncated diff stream: it ends after "
				  "%" PRIu64 " records, without its trailer", nrec);
			goto out;
		}
		magic = get32(r + R_MAGIC);
		if (magic != VOL_DIFF_REC_MAGIC && magic != VOL_DIFF_END_MAGIC) {
			ret = say(err, errlen, -EBADMSG, "bad diff stream: record %" PRIu64
				  " is not a record (corrupt or truncated data before it)",
				  nrec + 1);
			goto out;
		}
		if (get64(r + R_CSUM) != csum64_seed(r, R_CSUM, chain)) {
			ret = say(err, errlen, -EBADMSG, "bad diff stream: record %" PRIu64
				  ": checksum mismatch (a record changed, missing or out of "
				  "order)", nrec + 1);
			goto out;
		}
		chain = get64(r + R_CSUM);
		if (magic == VOL_DIFF_END_MAGIC) {
			uint8_t extra;

			if (get64(r + R_CHUNK) != nrec || get64(r + R_LENGTH) != data_bytes ||
			    get64(r + R_DATA_CSUM) != nzero) {
				ret = say(err, errlen, -EBADMSG, "bad diff stream: the trailer "
					  "counts other records than the stream holds");
				goto out;
			}
			n = cli_read_full(fd, &extra, 1);
			if (n != 0) {
				ret = n < 0 ? say(err, errlen, (int)n, "read: %s",
						  strerror((int)-n))
					    : say(err, errlen, -EBADMSG, "bad diff stream: "
						  "bytes after its trailer");
				goto out;
			}
			break;
		}
		type = get32(r + R_TYPE);
		chunk = get64(r + R_CHUNK);
		len = get32(r + R_LENGTH);
		if ((type != VOL_DIFF_DATA && type != VOL_DIFF_ZERO) || get32(r + R_RESERVED) ||
		    chunk >= nchunks || chunk < next ||
		    len != chunk_len(h->to_size, h->obj_size, chunk) ||
		    (type == VOL_DIFF_ZERO && get64(r + R_DATA_CSUM))) {
			ret = say(err, errlen, -EBADMSG, "bad diff stream: record %" PRIu64
				  " (chunk %" PRIu64 "): impossible type, chunk or length",
				  nrec + 1, chunk);
			goto out;
		}
		if (type == VOL_DIFF_DATA) {
			n = cli_read_full(fd, buf, len);
			if (n < 0) {
				ret = say(err, errlen, (int)n, "read: %s", strerror((int)-n));
				goto out;
			}
			if ((size_t)n < len) {
				ret = say(err, errlen, -EBADMSG, "truncated diff stream: in the "
					  "data of record %" PRIu64 " (chunk %" PRIu64 ")",
					  nrec + 1, chunk);
				goto out;
			}
			if (csum64(buf, len) != get64(r + R_DATA_CSUM)) {
				ret = say(err, errlen, -EBADMSG, "bad diff stream: record %"
					  PRIu64 " (chunk %" PRIu64 "): data checksum mismatch",
					  nrec + 1, chunk);
				goto out;
			}
		}
		/* Checked: only now does it touch the volume. */
		if (v && type == VOL_DIFF_DATA)
			ret = sdfs_vol_pwrite(v, buf, len, chunk * h->obj_size);
		else if (v)
			ret = sdfs_vol_punch(v, chunk * h->obj_size, len);
		if (ret < 0) {
			*vol_err = 1;
			ret = say(err, errlen, ret, "chunk %" PRIu64 ": %s", chunk,
				  strerror(-ret));
			goto out;
		}
		ret = 0;        /* a byte count is success too */
		nrec++;
		next = chunk + 1;
		if (type == VOL_DIFF_DATA)
			data_bytes += len;
		else
			nzero++;
		progress_show(p, chunk * h->obj_size);
	}
out:
	if (records)
		*records = nrec;
	free(buf);
	return ret;
}
