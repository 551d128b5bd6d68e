/*
 * datadir.c - see datadir.h.
 */
#include "blockd/datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int datadir_read(const char *dir, const char *name, char *buf, size_t len)
{
	char path[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

int datadir_write(const char *dir, const char *name, const char *text)
{
	char tmp[1024], final[1024];
	size_t len = strlen(text);
	int fd, dfd, ret = 0;

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(final, sizeof(final), "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		ret = -EIO;
	close(fd);
	if (!ret && rename(tmp, final) < 0)
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return ret;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

int datadir_read_u64(const char *dir, const char *name, uint64_t *v)
{
	char buf[64], *end;
	unsigned long long x;
	int ret = datadir_read(dir, name, buf, sizeof(buf));

	if (ret)
		return ret;
	if (buf[0] < '0' || buf[0] > '9')
		return -EBADMSG;
	errno = 0;
	x = strtoull(buf, &end, 10);
	if (errno || (*end && strcmp(end, "\n")))
		return -EBADMSG;
	*v = x;
	return 0;
}

int datadir_write_u64(const char *dir, const char *name, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	return datadir_write(dir, name, buf);
}
