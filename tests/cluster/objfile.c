/*
 * objfile.c - see objfile.h.
 */
#include "tests/cluster/objfile.h"

#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/csum.h"

#define OBJ_MAGIC    0x314a424f53464453ull     /* "SDFSOBJ1" */
#define HDR_AREA     4096u
#define HDR_CSUM_OFF 48u

static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

static void pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		cr_assert(n >= 0, "pread: %s", strerror(errno));
		if (n == 0) {
			memset((char *)buf + got, 0, len - got);    /* sparse tail */
			return;
		}
		got += (size_t)n;
	}
}

void objfile_open(const char *path, struct objfile *f)
{
	uint8_t h[56];

	memset(f, 0, sizeof(*f));
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(f->fd >= 0, "%s: %s", path, strerror(errno));
	pread_all(f->fd, h, sizeof(h), 0);
	cr_assert_eq(get64(h), OBJ_MAGIC, "%s: bad magic", path);
	cr_assert_eq(get64(h + HDR_CSUM_OFF), csum64(h, HDR_CSUM_OFF),
		     "%s: bad header checksum", path);
	f->version = get32(h + 8);
	f->max_obj_size = get32(h + 12);
	f->oid = get64(h + 16);
	f->size = get64(h + 24);
	f->epoch = get64(h + 32);
	f->flags = get32(h + 40);
	cr_assert(f->max_obj_size && f->max_obj_size % OBJFILE_BLOCK == 0,
		  "%s: bad max_obj_size %u", path, f->max_obj_size);
	cr_assert_leq(f->size, f->max_obj_size, "%s: size past max", path);
	uint64_t tab = (uint64_t)f->max_obj_size / OBJFILE_BLOCK * 16;
	f->data_off = HDR_AREA + (tab + OBJFILE_BLOCK - 1) / OBJFILE_BLOCK * OBJFILE_BLOCK;
}

void objfile_close(struct objfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

void objfile_read_block(const struct objfile *f, uint64_t b, void *buf)
{
	cr_assert_lt(b, f->max_obj_size / OBJFILE_BLOCK);
	pread_all(f->fd, buf, OBJFILE_BLOCK, f->data_off + b * OBJFILE_BLOCK);
}

void objfile_entry(const struct objfile *f, uint64_t b, uint64_t *cur, uint64_t *prev)
{
	uint8_t e[16];

	cr_assert_lt(b, f->max_obj_size / OBJFILE_BLOCK);
	pread_all(f->fd, e, sizeof(e), HDR_AREA + b * 16);
	*cur = get64(e);
	*prev = get64(e + 8);
}

int objfile_block_ok(const struct objfile *f, uint64_t b)
{
	uint8_t buf[OBJFILE_BLOCK];
	uint64_t cur, prev, c;

	objfile_read_block(f, b, buf);
	objfile_entry(f, b, &cur, &prev);
	c = csum64(buf, sizeof(buf));
	if (cur == 0 && prev == 0)
		return c == csum_zero_block();
	if (f->flags & OBJFILE_F_DIRTY)
		return c == cur || c == prev;
	return c == cur && c == prev;
}

void objfile_flip_data(const char *path, uint64_t off, uint8_t mask)
{
	struct objfile f;
	uint8_t byte;
	int fd;

	objfile_open(path, &f);
	cr_assert_lt(off, f.size, "flip past the object's size");
	fd = open(path, O_RDWR | O_CLOEXEC);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	pread_all(fd, &byte, 1, f.data_off + off);
	byte ^= mask;
	cr_assert_eq(pwrite(fd, &byte, 1, (off_t)(f.data_off + off)), 1);
	close(fd);
	objfile_close(&f);
}

void objfile_rewrite_data(const char *path, uint64_t off, uint8_t mask)
{
	struct objfile f;
	uint8_t buf[OBJFILE_BLOCK], e[16];
	uint64_t b = off / OBJFILE_BLOCK, c;
	int fd;

	objfile_flip_data(path, off, mask);
	objfile_open(path, &f);
	cr_assert(!(f.flags & OBJFILE_F_DIRTY), "%s: dirty", path);
	objfile_read_block(&f, b, buf);
	c = htole64(csum64(buf, sizeof(buf)));
	memcpy(e, &c, 8);
	memcpy(e + 8, &c, 8);
	fd = open(path, O_RDWR | O_CLOEXEC);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(pwrite(fd, e, sizeof(e), (off_t)(HDR_AREA + b * 16)), (ssize_t)sizeof(e));
	close(fd);
	cr_assert(objfile_block_ok(&f, b));
	objfile_close(&f);
}
