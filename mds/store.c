/*
 * store.c - see store.h.
 */
#include "mds/store.h"

#include <errno.h>

#include "libclient/sdfs.h"

static int st_write(void *ctx, uint64_t oid, uint64_t off, const void *buf, size_t len)
{
	return sdfs_obj_write_ex(ctx, oid, buf, len, off, SDFS_WRITE_SYNC);
}

static ssize_t st_read(void *ctx, uint64_t oid, uint64_t off, void *buf, size_t len)
{
	return sdfs_obj_read(ctx, oid, buf, len, off);
}

static int st_length(void *ctx, uint64_t oid, uint64_t *len)
{
	struct sdfs_obj_info info;
	int ret = sdfs_obj_stat(ctx, oid, &info);

	if (ret == 0)
		*len = info.size;
	return ret;
}

static int st_remove(void *ctx, uint64_t oid)
{
	int ret = sdfs_obj_remove(ctx, oid);

	return ret == -ENOENT ? 0 : ret;
}

void store_init(struct objenv_store *st, struct sdfs *s)
{
	st->ctx = s;
	st->write = st_write;
	st->read = st_read;
	st->length = st_length;
	st->remove = st_remove;
	st->obj_size = sdfs_obj_size(s);
}
