/*
 * target.c - see target.h.
 */
#include "tools/bench/target.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TARGET_NAME_MAX 17      /* 16 hex digits */

static void stamp(uint8_t *buf, size_t len, uint64_t item)
{
	memcpy(buf, &item, len < 8 ? len : 8);
}

static int check_stamp(const uint8_t *buf, size_t len, uint64_t item)
{
	return memcmp(buf, &item, len < 8 ? len : 8) ? -EBADMSG : 0;
}

/* The item a read op visits: reads cycle over what was written. */
static uint64_t read_item(const struct target *t, uint64_t idx)
{
	return t->items ? idx % t->items : idx;
}

static void file_name(uint64_t item, char name[TARGET_NAME_MAX])
{
	snprintf(name, TARGET_NAME_MAX, "%016" PRIx64, item);
}

int target_sdfs_write(const void *arg, uint64_t idx, uint8_t *buf, size_t len)
{
	const struct target *t = arg;

	stamp(buf, len, idx);
	return sdfs_obj_write(t->s, t->oid_base + idx, buf, len, 0);
}

int target_sdfs_write_flush(const void *arg, uint64_t idx, uint8_t *buf, size_t len)
{
	const struct target *t = arg;
	int ret = target_sdfs_write(arg, idx, buf, len);

	return ret ? ret : sdfs_obj_flush(t->s, t->oid_base + idx);
}

int target_sdfs_read(const void *arg, uint64_t idx, uint8_t *buf, size_t len)
{
	const struct target *t = arg;
	uint64_t item = read_item(t, idx);
	ssize_t n = sdfs_obj_read(t->s, t->oid_base + item, buf, len, 0);

	if (n < 0)
		return (int)n;
	if ((size_t)n != len)
		return -EIO;    /* the object is shorter than what was written */
	return check_stamp(buf, len, item);
}

int target_sdfs_remove(const void *arg, uint64_t idx, uint8_t *buf, size_t len)
{
	const struct target *t = arg;
	int ret = sdfs_obj_remove(t->s, t->oid_base + idx);

	(void)buf;
	(void)len;
	return ret == -ENOENT ? 0 : ret;
}

static int write_full(int fd, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = pwrite(fd, buf + off, len - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

static int read_full(int fd, uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = pread(fd, buf + off, len - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;    /* shorter than what was written */
		off += (size_t)n;
	}
	return 0;
}

static int local_write(const struct target *t, uint64_t idx, uint8_t *buf,
		       size_t len, int sync)
{
	char name[TARGET_NAME_MAX];
	int fd, ret;

	stamp(buf, len, idx);
	file_name(idx, name);
	fd = openat(t->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = write_full(fd, buf, len);
	if (ret == 0 && sync && fdatasync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	/* A new file's name is durable only once its directory is synced;
	 * sdfs_obj_flush syncs the object's directory too. */
	if (ret == 0 && sync && fsync(t->dir_fd) < 0)
		ret = -errno;
	return ret;
}

int target_local_write(const void *arg, uint64_t idx, uint8_t *buf, size_t len)
{
	return local_write(arg, idx, buf, len, 0);
}

int target_local_write_sync(const void *arg, uint64_t idx, uint8_t *buf, size_t len)
{
	return local_write(arg, idx, buf, len, 1);
}

int target_local_read(const void *arg, uint64_t idx, uint8_t *buf, size_t len)
{
	const struct target *t = arg;
	uint64_t item = read_item(t, idx);
	char name[TARGET_NAME_MAX];
	int fd, ret;

	file_name(item, name);
	fd = openat(t->dir_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = read_full(fd, buf, len);
	close(fd);
	return ret ? ret : check_stamp(buf, len, item);
}

int target_local_remove(const void *arg, uint64_t idx, uint8_t *buf, size_t len)
{
	const struct target *t = arg;
	char name[TARGET_NAME_MAX];

	(void)buf;
	(void)len;
	file_name(idx, name);
	return unlinkat(t->dir_fd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}
