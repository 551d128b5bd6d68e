/*
 * store.c - see store.h.
 */
#include "mds/store.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "libclient/sdfs.h"

/* The last object call that failed: what the mds says when it steps
 * down (LevelDB's own message names a table file, not the cause). */
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const char *what;               /* "write", "read"...; NULL: none */
	uint64_t oid;
	int err;                        /* positive errno */
} last;

static int note(const char *what, uint64_t oid, int ret)
{
	if (ret >= 0)
		return ret;
	pthread_mutex_lock(&last_lock);
	last.what = what;
	last.oid = oid;
	last.err = -ret;
	pthread_mutex_unlock(&last_lock);
	return ret;
}

int store_last_error(char *buf, size_t len)
{
	int err;

	pthread_mutex_lock(&last_lock);
	err = last.what ? last.err : 0;
	if (err)
		snprintf(buf, len, "database %s of object %016" PRIx64 " failed: %s%s",
			 last.what, last.oid, strerror(err),
			 err == EPERM ? " (a block daemon holds a newer MDS fence)" : "");
	pthread_mutex_unlock(&last_lock);
	return err;
}

static int st_write(void *ctx, uint64_t oid, uint64_t off, const void *buf, size_t len)
{
	return note("write", oid, sdfs_obj_write_ex(ctx, oid, buf, len, off,
						    SDFS_WRITE_SYNC));
}

static ssize_t st_read(void *ctx, uint64_t oid, uint64_t off, void *buf, size_t len)
{
	ssize_t n = sdfs_obj_read(ctx, oid, buf, len, off);

	if (n < 0 && n != -ENOENT)      /* missing: a hole or a file's end */
		note("read", oid, (int)n);
	return n;
}

static int st_length(void *ctx, uint64_t oid, uint64_t *len)
{
	struct sdfs_obj_info info;
	int ret = sdfs_obj_stat(ctx, oid, &info);

	if (ret == 0)
		*len = info.size;
	else if (ret != -ENOENT)
		note("stat", oid, ret);
	return ret;
}

static int st_remove(void *ctx, uint64_t oid)
{
	int ret = sdfs_obj_remove(ctx, oid);

	return ret == -ENOENT ? 0 : note("remove", oid, ret);
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
