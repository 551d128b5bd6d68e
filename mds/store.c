/*
 * store.c - see store.h.
 */
#include "mds/store.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "libclient/sdfs.h"

/* The last object call that failed: what the mds says when it steps
 * down (LevelDB's own message names a table file, not the cause). */
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const char *what;               /* "write", "read"...; NULL: none */
	uint64_t oid;
	int err;                        /* positive errno */
	int64_t at_ms;                  /* CLOCK_MONOTONIC */
} last;

/* An older failure did not make this step-down: it was retried past. */
#define LAST_ERROR_MS 30000

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int note(const char *what, uint64_t oid, int ret)
{
	if (ret >= 0)
		return ret;
	pthread_mutex_lock(&last_lock);
	last.what = what;
	last.oid = oid;
	last.err = -ret;
	last.at_ms = mono_ms();
	pthread_mutex_unlock(&last_lock);
	return ret;
}

int store_last_error(char *buf, size_t len)
{
	int err;

	pthread_mutex_lock(&last_lock);
	err = last.what && mono_ms() - last.at_ms < LAST_ERROR_MS ? last.err : 0;
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

static int st_write_mem(void *ctx, uint64_t oid, uint64_t off, const void *buf,
			size_t len)
{
	return note("write", oid, sdfs_obj_write_ex(ctx, oid, buf, len, off, 0));
}

static int st_flush(void *ctx, const uint64_t *oids, size_t n)
{
	int ret = sdfs_obj_flush_many(ctx, oids, n);

	return note("flush", n ? oids[0] : 0, ret);
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
	st->write_mem = st_write_mem;
	st->flush = st_flush;
	st->obj_size = sdfs_obj_size(s);
}
