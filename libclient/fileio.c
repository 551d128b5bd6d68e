/*
 * fileio.c - a regular file's data (layout SDFS_LAYOUT_OBJECTS): byte
 * ranges split onto chunk objects oid_make(OID_KIND_FILE, ino, i).
 * A missing chunk is a hole and reads as zeros.
 */
#include <errno.h>
#include <string.h>

#include "common/oid.h"
#include "libclient/client.h"

ssize_t sdfs_file_pread(struct sdfs *s, const struct sdfs_stat *st, void *buf,
			size_t len, uint64_t off)
{
	uint32_t osz = st->obj_size;
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
		ssize_t got = sdfs_obj_read(s, oid_make(OID_KIND_FILE, st->ino, chunk),
					    (char *)buf + done, n, in);

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
	while (done < len) {
		uint64_t pos = off + done, chunk = pos / osz, in = pos % osz;
		size_t n = len - done < osz - in ? len - done : (size_t)(osz - in);
		int ret = sdfs_obj_write_ex(s, oid_make(OID_KIND_FILE, st->ino, chunk),
					    (const char *)buf + done, n, in, flags);

		if (ret)
			return ret;
		done += n;
	}
	return 0;
}
