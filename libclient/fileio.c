/*
 * fileio.c - a regular file's data (layout SDFS_LAYOUT_OBJECTS): byte
 * ranges split onto chunk objects oid_file(ino, i, copies).
 * A missing chunk is a hole and reads as zeros. Also the calls that act
 * on a file's chunks for fsync, a punched hole and SEEK_DATA, so that
 * mount.sdfs never names an object.
 *
 * A file of an ec=K+M policy (docs/ec.md "EC files") is in one of two
 * forms, as its inode's POLICY_SEALED says: replicated (the objects
 * above) or sealed (EC objects oid_fstripe). A read by the form in @st
 * that finds no object asks the mds for the inode again (the form may
 * have flipped since @st was read) and reads by the form it says; a hole
 * is absent in both. Writes, punches: the mds unseals the file first
 * (hold_unseal), so they always go to the replicated objects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/oid.h"
#include "common/policy.h"
#include "libclient/client.h"

/* Read up to @n bytes at @in of chunk @chunk in the form @copies says. */
static ssize_t chunk_read(struct sdfs *s, uint64_t ino, unsigned copies, uint64_t chunk,
			  void *buf, size_t n, uint64_t in)
{
	if (policy_is_sealed(copies))
		return sdfs_ec_read(s, oid_fstripe(ino, chunk), policy_ec_k(copies),
				    policy_ec_m(copies), buf, n, in);
	return sdfs_obj_read(s, oid_file(ino, chunk, copies), buf, n, in);
}

/* Chunk @chunk of an EC file, absent in the form @copies: in the other
 * form if the inode says it flipped, else a hole (-ENOENT). */
static ssize_t chunk_read_again(struct sdfs *s, uint64_t ino, unsigned *copies,
				uint64_t chunk, void *buf, size_t n, uint64_t in)
{
	struct sdfs_stat now;
	int ret = sdfs_ns_getattr(s, ino, &now);

	if (ret)
		return ret;
	if (policy_is_sealed(now.copies) == policy_is_sealed(*copies))
		return -ENOENT;
	*copies = now.copies;
	return chunk_read(s, ino, *copies, chunk, buf, n, in);
}

ssize_t sdfs_file_pread(struct sdfs *s, const struct sdfs_stat *st, void *buf,
			size_t len, uint64_t off)
{
	uint32_t osz = st->obj_size;
	unsigned copies = st->copies;
	size_t done = 0;

	if (st->layout != SDFS_LAYOUT_OBJECTS || osz == 0)
		return -EINVAL;
	if (off >= st->size)
		return 0;
	if (len > st->size - off)
		len = (size_t)(st->size - off);
	while (done < len) {
		uint64_t pos = off + done, chunk = pos / osz, in = pos % osz;
		size_t n = len - done < osz - in ? len - done : (size_t)(osz - in);
		ssize_t got = chunk_read(s, st->ino, copies, chunk, (char *)buf + done, n, in);

		if (got == -ENOENT && policy_is_ec(copies))
			got = chunk_read_again(s, st->ino, &copies, chunk, (char *)buf + done,
					       n, in);
		if (got == -ENOENT)
			got = 0;
		if (got < 0)
			return got;
		if ((size_t)got < n)    /* past the object's end: a hole */
			memset((char *)buf + done + got, 0, n - (size_t)got);
		done += n;
	}
	return (ssize_t)done;
}

int sdfs_file_pwrite(struct sdfs *s, const struct sdfs_stat *st, const void *buf,
		     size_t len, uint64_t off, unsigned flags)
{
	uint32_t osz = st->obj_size;
	size_t done = 0;

	if (st->layout != SDFS_LAYOUT_OBJECTS || osz == 0)
		return -EINVAL;
	if (off + len < off || off + len > OID_FILE_MAX_SIZE(osz))
		return -EFBIG;
	if (len && policy_is_ec(st->copies)) {
		int ret = hold_unseal(s, st->ino);

		if (ret)
			return ret;
	}
	while (done < len) {
		uint64_t pos = off + done, chunk = pos / osz, in = pos % osz;
		size_t n = len - done < osz - in ? len - done : (size_t)(osz - in);
		int ret = sdfs_obj_write_ex(s, oid_file(st->ino, chunk, st->copies),
					    (const char *)buf + done, n, in, flags);

		if (ret)
			return ret;
		done += n;
	}
	return 0;
}

uint64_t sdfs_file_max_size(uint32_t obj_size)
{
	return OID_FILE_MAX_SIZE(obj_size);
}

int sdfs_file_flush(struct sdfs *s, const struct sdfs_stat *st, const uint64_t *chunks,
		    size_t n)
{
	uint64_t *oids;
	int ret;

	if (!n)
		return 0;
	oids = malloc(n * sizeof(*oids));
	if (!oids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		oids[i] = oid_file(st->ino, chunks[i], st->copies);
	ret = sdfs_obj_flush_many(s, oids, n);
	free(oids);
	return ret;
}

/* Zero [a, b) of chunk @oid where it has data (its end may come first). */
static int zero_part(struct sdfs *s, uint64_t oid, uint64_t a, uint64_t b)
{
	struct sdfs_obj_info info;
	void *zero;
	int ret = sdfs_obj_stat(s, oid, &info);

	if (ret == -ENOENT || (ret == 0 && info.size <= a))
		return 0;
	if (ret)
		return ret;
	if (b > info.size)
		b = info.size;
	zero = calloc(1, (size_t)(b - a));
	if (!zero)
		return -ENOMEM;
	ret = sdfs_obj_write(s, oid, zero, (size_t)(b - a), a);
	free(zero);
	return ret;
}

int sdfs_file_punch(struct sdfs *s, const struct sdfs_stat *st, uint64_t off,
		    uint64_t len, void (*gone)(void *arg, uint64_t chunk), void *arg)
{
	uint32_t osz = st->obj_size;
	uint64_t end = off + len;

	if (st->layout != SDFS_LAYOUT_OBJECTS || osz == 0 || end < off)
		return -EINVAL;
	if (len && policy_is_ec(st->copies)) {
		int ret = hold_unseal(s, st->ino);

		if (ret)
			return ret;
	}
	for (uint64_t c = off / osz; len && c <= (end - 1) / osz; c++) {
		uint64_t cs = c * osz;
		uint64_t a = off > cs ? off - cs : 0;
		uint64_t b = end < cs + osz ? end - cs : osz;
		uint64_t oid = oid_file(st->ino, c, st->copies);
		int ret;

		if (a == 0 && b == osz) {
			ret = sdfs_obj_remove(s, oid);
			if (ret && ret != -ENOENT)
				return ret;
			if (gone)
				gone(arg, c);
			continue;
		}
		ret = zero_part(s, oid, a, b);
		if (ret)
			return ret;
	}
	return 0;
}

int sdfs_file_seek(struct sdfs *s, const struct sdfs_stat *st, uint64_t off, int whence,
		   uint64_t *out)
{
	uint64_t osz = st->obj_size ? st->obj_size : 1, pos = off;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (pos >= st->size)
		return -ENXIO;
	if (policy_is_sealed(st->copies)) {     /* all data (POSIX allows it) */
		*out = whence == SEEK_DATA ? pos : st->size;
		return 0;
	}
	while (pos < st->size) {
		uint64_t c = pos / osz, cs = c * osz, data_end;
		struct sdfs_obj_info info;
		int ret = sdfs_obj_stat(s, oid_file(st->ino, c, st->copies), &info);

		if (ret && ret != -ENOENT)
			return ret;
		data_end = ret ? cs : cs + info.size;
		if (pos < data_end) {           /* in data */
			if (whence == SEEK_DATA) {
				*out = pos;
				return 0;
			}
			if (data_end < cs + osz) {      /* a hole after it */
				*out = data_end < st->size ? data_end : st->size;
				return 0;
			}
		} else if (whence == SEEK_HOLE) {       /* in a hole */
			*out = pos;
			return 0;
		}
		pos = cs + osz;
	}
	if (whence == SEEK_DATA)
		return -ENXIO;
	*out = st->size;
	return 0;
}
