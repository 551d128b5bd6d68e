/*
 * objstore_test.c - unit tests for blockd/objstore.c.
 *
 * Each test gets a fresh store in its own temporary directory. The
 * corruption and crash tests poke the object files directly, so they
 * know the layout of docs/format.md ("blockd object files") for a store
 * of 4 MiB objects. The crash tests fork a writer and SIGKILL it at a
 * random moment, then check every block reads back whole.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* mkdtemp, nftw */
#endif
#include "blockd/objstore.h"

#include "common/csum.h"
#include "common/log.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_OBJ         (4u << 20)
#define BLK             4096u
#define NBLOCKS         (MAX_OBJ / BLK)
#define TAB_OFF         4096u                   /* layout of a 4 MiB object */
#define DATA_OFF        (TAB_OFF + NBLOCKS * 16u)
#define HDR_CSUM_OFF    48u
#define HDR_FLAGS_OFF   40u
#define HDR_F_DIRTY     1u

static char dir[64];
static struct objstore *s;
static int err_count;
static char last_err[1024];

static void capture_log(int level, const char *msg, void *arg)
{
	(void)arg;
	if (level > LOG_ERR)
		return;
	err_count++;
	snprintf(last_err, sizeof(last_err), "%s", msg);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/objstore_test.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	log_set_sink(capture_log, NULL);
	cr_assert_eq(objstore_open(dir, MAX_OBJ, &s), 0);
}

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

static char small_mnt[96];      /* a tmpfs a test mounted, or "" */

static void teardown(void)
{
	objstore_close(s);
	s = NULL;
	if (small_mnt[0])
		umount2(small_mnt, MNT_DETACH);
	small_mnt[0] = '\0';
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(objstore, .init = setup, .fini = teardown);
TestSuite(corrupt, .init = setup, .fini = teardown);
TestSuite(crash, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(replace, .init = setup, .fini = teardown);
TestSuite(list, .init = setup, .fini = teardown);
TestSuite(concurrency, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(parts, .init = setup, .fini = teardown);

/* Generation @g of the byte at @pos: 8-byte words (g << 32 | pos / 8). */
static void fill_gen(void *buf, uint64_t pos, size_t len, uint64_t g)
{
	uint64_t *w = buf;

	cr_assert(pos % 8 == 0 && len % 8 == 0);
	for (size_t i = 0; i < len / 8; i++)
		w[i] = g << 32 | ((pos >> 3) + i);
}

static void fill_random(void *buf, size_t len, unsigned *seed)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)rand_r(seed);
}

static void obj_file(uint64_t oid, char *path, size_t len)
{
	cr_assert_eq(objstore_path(s, oid, path, len), 0);
}

static void file_pwrite(uint64_t oid, const void *buf, size_t len, off_t off)
{
	char path[256];
	int fd;

	obj_file(oid, path, sizeof(path));
	fd = open(path, O_WRONLY);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(pwrite(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

static void file_pread(uint64_t oid, void *buf, size_t len, off_t off)
{
	char path[256];
	int fd;

	obj_file(oid, path, sizeof(path));
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

static void file_flip_bit(uint64_t oid, off_t pos, int bit)
{
	unsigned char c;

	file_pread(oid, &c, 1, pos);
	c ^= (unsigned char)(1u << bit);
	file_pwrite(oid, &c, 1, pos);
}

/* Rewrite the header's checksum after a test changed its fields. */
static void file_fix_hdr_csum(uint64_t oid)
{
	unsigned char h[56];
	uint64_t c;

	file_pread(oid, h, sizeof(h), 0);
	c = htole64(csum64(h, HDR_CSUM_OFF));
	memcpy(h + HDR_CSUM_OFF, &c, 8);
	file_pwrite(oid, h, sizeof(h), 0);
}

static void file_set_u64(uint64_t oid, off_t pos, uint64_t v)
{
	v = htole64(v);
	file_pwrite(oid, &v, 8, pos);
}

static void file_set_u32(uint64_t oid, off_t pos, uint32_t v)
{
	v = htole32(v);
	file_pwrite(oid, &v, 4, pos);
}

static int read_all(uint64_t oid, uint64_t off, void *buf, size_t len,
		    size_t *got)
{
	return objstore_read(s, oid, off, buf, len, got);
}

static void expect_read(uint64_t oid, uint64_t off, const void *want,
			size_t len)
{
	unsigned char *buf = malloc(len ? len : 1);
	size_t got = 0;

	cr_assert_not_null(buf);
	cr_assert_eq(read_all(oid, off, buf, len, &got), 0,
		     "read oid=%" PRIx64 " off=%" PRIu64 " len=%zu", oid, off,
		     len);
	cr_assert_eq(got, len);
	cr_assert(memcmp(buf, want, len) == 0, "content at off=%" PRIu64
		  " len=%zu", off, len);
	free(buf);
}

static int read_block(uint64_t oid, uint64_t b)
{
	unsigned char buf[BLK];
	size_t got;

	return objstore_read(s, oid, b * BLK, buf, BLK, &got);
}

/* ---- basic operations ---- */

Test(objstore, open_rejects_bad_max_obj_size)
{
	struct objstore *o = NULL;

	cr_assert_eq(objstore_open(dir, 0, &o), -EINVAL);
	cr_assert_eq(objstore_open(dir, 4095, &o), -EINVAL);
	cr_assert_eq(objstore_open(dir, OBJSTORE_MAX_OBJ_SIZE + 4096, &o),
		     -EINVAL);
	cr_assert_null(o);
}

Test(objstore, round_trip_at_unaligned_offsets_and_lengths)
{
	static const struct { uint64_t off; size_t len; } w[] = {
		{ 0, 1 }, { 1, 1 }, { 4095, 2 }, { 4096, 4096 },
		{ 100, 10000 }, { 8191, 1 }, { 12288, 0 }, { 5000, 123457 },
		{ MAX_OBJ - 1, 1 }, { MAX_OBJ - 4097, 4097 }, { 0, MAX_OBJ },
		{ 77, 3 * BLK + 5 }, { 2 * 1024 * 1024 + 3, 1024 * 1024 },
	};
	unsigned char *model = calloc(1, MAX_OBJ), *buf = malloc(MAX_OBJ);
	unsigned seed = 42;
	uint64_t size = 0;

	cr_assert(model && buf);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		fill_random(buf, w[i].len, &seed);
		cr_assert_eq(objstore_write(s, 7, w[i].off, buf, w[i].len, i,
					    OBJSTORE_CREATE), 0,
			     "write %zu", i);
		memcpy(model + w[i].off, buf, w[i].len);
		if (w[i].len && w[i].off + w[i].len > size)
			size = w[i].off + w[i].len;
		expect_read(7, 0, model, size);
		for (int j = 0; j < 20; j++) {
			uint64_t off = rand_r(&seed) % (size + 1);
			size_t len = rand_r(&seed) % (size - off + 1);

			expect_read(7, off, model + off, len);
		}
	}
	cr_assert_eq(objstore_verify(s, 7), 0);
	free(model);
	free(buf);
}

Test(objstore, read_past_size_is_short)
{
	unsigned char in[10000], out[20000];
	size_t got = 99;

	fill_random(in, sizeof(in), &(unsigned){ 1 });
	cr_assert_eq(objstore_write(s, 1, 0, in, sizeof(in), 1,
				    OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_read(s, 1, 5000, out, sizeof(out), &got), 0);
	cr_assert_eq(got, 5000);
	cr_assert_arr_eq(out, in + 5000, 5000);
	cr_assert_eq(objstore_read(s, 1, 10000, out, 10, &got), 0);
	cr_assert_eq(got, 0);
	cr_assert_eq(objstore_read(s, 1, MAX_OBJ * 2ull, out, 10, &got), 0);
	cr_assert_eq(got, 0);
}

Test(objstore, holes_read_as_zeros)
{
	unsigned char in[100], out[3 * BLK], zero[3 * BLK] = { 0 };
	size_t got;

	memset(in, 0xab, sizeof(in));
	cr_assert_eq(objstore_create(s, 2, 1), 0);
	cr_assert_eq(objstore_write(s, 2, 10 * BLK + 50, in, sizeof(in), 1, 0),
		     0);
	cr_assert_eq(objstore_read(s, 2, 0, out, sizeof(out), &got), 0);
	cr_assert_eq(got, sizeof(out));
	cr_assert_arr_eq(out, zero, sizeof(out));
	cr_assert_eq(objstore_read(s, 2, 10 * BLK, out, 200, &got), 0);
	cr_assert_eq(got, 150);
	cr_assert_arr_eq(out, zero, 50);
	cr_assert_arr_eq(out + 50, in, 100);
	cr_assert_eq(objstore_verify(s, 2), 0);
}

Test(objstore, size_is_high_water_mark_and_epoch_is_recorded)
{
	struct objstore_stat st;
	char c = 'x';

	cr_assert_eq(objstore_create(s, 3, 5), 0);
	cr_assert_eq(objstore_stat(s, 3, &st), 0);
	cr_assert_eq(st.size, 0);
	cr_assert_eq(st.version >> 32, 5);
	cr_assert_eq(objstore_write(s, 3, 9999, &c, 1, 6, 0), 0);
	cr_assert_eq(objstore_stat(s, 3, &st), 0);
	cr_assert_eq(st.size, 10000);
	cr_assert_eq(st.version >> 32, 6);
	cr_assert_eq(objstore_write(s, 3, 10, &c, 1, 9, 0), 0);
	cr_assert_eq(objstore_stat(s, 3, &st), 0);
	cr_assert_eq(st.size, 10000, "a lower write does not shrink it");
	cr_assert_eq(st.version >> 32, 9);
	cr_assert_eq(objstore_write(s, 3, 500000, &c, 0, 10, 0), 0);
	cr_assert_eq(objstore_stat(s, 3, &st), 0);
	cr_assert_eq(st.size, 10000, "an empty write does not grow it");
	cr_assert_eq(st.version >> 32, 10);
}

Test(objstore, create_existing_is_eexist)
{
	cr_assert_eq(objstore_create(s, 4, 1), 0);
	cr_assert_eq(objstore_create(s, 4, 1), -EEXIST);
	cr_assert_eq(objstore_create(s, 4, 2), -EEXIST);
	cr_assert_eq(objstore_write(s, 5, 0, "a", 1, 1, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_create(s, 5, 1), -EEXIST);
}

Test(objstore, write_missing_without_create_is_enoent)
{
	size_t got;
	char c;

	cr_assert_eq(objstore_write(s, 6, 0, "a", 1, 1, 0), -ENOENT);
	cr_assert_eq(objstore_read(s, 6, 0, &c, 1, &got), -ENOENT);
	cr_assert_eq(objstore_verify(s, 6), -ENOENT);
	cr_assert_eq(objstore_sync(s, 6), -ENOENT);
	cr_assert_eq(objstore_stat(s, 6, &(struct objstore_stat){ 0 }),
		     -ENOENT);
}

Test(objstore, write_past_max_is_efbig)
{
	char c = 1;

	cr_assert_eq(objstore_write(s, 8, MAX_OBJ, &c, 1, 1, OBJSTORE_CREATE),
		     -EFBIG);
	cr_assert_eq(objstore_write(s, 8, MAX_OBJ - 1, "ab", 2, 1,
				    OBJSTORE_CREATE), -EFBIG);
	cr_assert_eq(objstore_write(s, 8, UINT64_MAX, &c, 1, 1,
				    OBJSTORE_CREATE), -EFBIG);
	cr_assert_eq(objstore_write(s, 8, 1, &c, SIZE_MAX, 1,
				    OBJSTORE_CREATE), -EFBIG);
	cr_assert_eq(objstore_replace(s, 8, &c, MAX_OBJ + 1ul, 1), -EFBIG);
	cr_assert_eq(objstore_verify(s, 8), -ENOENT, "nothing was created");
	cr_assert_eq(objstore_write(s, 8, MAX_OBJ - 1, &c, 1, 1,
				    OBJSTORE_CREATE), 0);
}

Test(objstore, removed_object_is_enoent)
{
	size_t got;
	char c;

	cr_assert_eq(objstore_write(s, 9, 0, "a", 1, 1, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_remove(s, 9), 0);
	cr_assert_eq(objstore_read(s, 9, 0, &c, 1, &got), -ENOENT);
	cr_assert_eq(objstore_remove(s, 9), -ENOENT);
	cr_assert_eq(objstore_create(s, 9, 1), 0, "the id can be used again");
}

Test(objstore, stat_csum_depends_on_content_not_history)
{
	struct objstore_stat a, b, c;
	unsigned char *buf = malloc(3 * BLK), zero[BLK] = { 0 };

	cr_assert_not_null(buf);
	fill_random(buf, 3 * BLK, &(unsigned){ 3 });
	memset(buf + BLK, 0, BLK);
	/* a: written in pieces with a hole; b: replaced whole. */
	cr_assert_eq(objstore_write(s, 10, 2 * BLK, buf + 2 * BLK, BLK, 1,
				    OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_write(s, 10, 0, buf, 10, 2, 0), 0);
	cr_assert_eq(objstore_write(s, 10, 10, buf + 10, BLK - 10, 3, 0), 0);
	cr_assert_eq(objstore_replace(s, 11, buf, 3 * BLK, 7), 0);
	cr_assert_eq(objstore_stat(s, 10, &a), 0);
	cr_assert_eq(objstore_stat(s, 11, &b), 0);
	cr_assert_eq(a.size, b.size);
	cr_assert_eq(a.csum, b.csum);
	cr_assert_neq(a.version, b.version);
	cr_assert_eq(objstore_write(s, 11, BLK, zero, 1, 8, 0), 0);
	cr_assert_eq(objstore_stat(s, 11, &c), 0);
	cr_assert_eq(c.csum, b.csum, "zeros written over zeros");
	cr_assert_eq(objstore_write(s, 11, BLK + 5, "x", 1, 9, 0), 0);
	cr_assert_eq(objstore_stat(s, 11, &c), 0);
	cr_assert_neq(c.csum, b.csum);
	free(buf);
}

Test(objstore, sync_space_and_path)
{
	uint64_t used = 0, total = 0;
	char path[256], small[8];
	struct stat st;

	cr_assert_eq(objstore_write(s, 0x1234, 0, "a", 1, 1, OBJSTORE_CREATE),
		     0);
	cr_assert_eq(objstore_sync(s, 0x1234), 0);
	cr_assert_eq(objstore_sync_all(s), 0);
	cr_assert_eq(objstore_space(s, &used, &total), 0);
	cr_assert_gt(total, 0);
	cr_assert_leq(used, total);
	cr_assert_eq(objstore_path(s, 0x1234, path, sizeof(path)), 0);
	cr_assert(strstr(path, "/obj/34/0000000000001234") != NULL, "%s", path);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(objstore_path(s, 0x1234, small, sizeof(small)), -ERANGE);
}

Test(objstore, objects_keep_their_layout_when_store_max_changes)
{
	unsigned char *buf = malloc(MAX_OBJ);
	struct objstore *small;

	cr_assert_not_null(buf);
	fill_gen(buf, 0, MAX_OBJ, 3);
	cr_assert_eq(objstore_write(s, 12, 0, buf, MAX_OBJ, 1,
				    OBJSTORE_CREATE), 0);
	objstore_close(s);
	s = NULL;
	cr_assert_eq(objstore_open(dir, 1u << 20, &small), 0);
	s = small;
	expect_read(12, 0, buf, MAX_OBJ);
	cr_assert_eq(objstore_write(s, 12, (1u << 20) - 1, "ab", 2, 2, 0),
		     -EFBIG);
	cr_assert_eq(objstore_write(s, 12, 100, "ab", 2, 2, 0), 0);
	memcpy(buf + 100, "ab", 2);
	expect_read(12, 0, buf, MAX_OBJ);
	cr_assert_eq(objstore_verify(s, 12), 0);
	free(buf);
}

/* ---- corruption ---- */

static void write_blocks(uint64_t oid, unsigned nblocks)
{
	unsigned char *buf = malloc(nblocks * BLK);

	cr_assert_not_null(buf);
	fill_gen(buf, 0, nblocks * BLK, 1);
	cr_assert_eq(objstore_write(s, oid, 0, buf, nblocks * BLK, 1,
				    OBJSTORE_CREATE), 0);
	free(buf);
}

Test(corrupt, flipped_data_bit_fails_only_that_block)
{
	unsigned char buf[2 * BLK];
	size_t got = 0;

	write_blocks(0x20, 8);
	file_flip_bit(0x20, DATA_OFF + 3 * BLK + 1234, 5);
	cr_assert_eq(read_block(0x20, 3), -EBADMSG);
	cr_assert(strstr(last_err, "oid=0000000000000020") &&
		  strstr(last_err, "block=3"), "log: %s", last_err);
	cr_assert_eq(objstore_read(s, 0x20, 2 * BLK + 4000, buf, 200, &got),
		     -EBADMSG, "a read that touches the block");
	cr_assert_eq(got, 0, "*got untouched on failure");
	for (unsigned b = 0; b < 8; b++)
		if (b != 3)
			cr_assert_eq(read_block(0x20, b), 0, "block %u", b);
	cr_assert_eq(objstore_verify(s, 0x20), -EBADMSG);
	cr_assert_eq(objstore_stat(s, 0x20, &(struct objstore_stat){ 0 }),
		     -EBADMSG);
	cr_assert_eq(objstore_write(s, 0x20, 3 * BLK + 1, "x", 1, 2, 0),
		     -EBADMSG, "partial overwrite of a corrupt block");
	/* A whole-block overwrite heals it. */
	memset(buf, 7, BLK);
	cr_assert_eq(objstore_write(s, 0x20, 3 * BLK, buf, BLK, 2, 0), 0);
	cr_assert_eq(objstore_verify(s, 0x20), 0);
}

Test(corrupt, flipped_header_bit_is_ebadmsg)
{
	write_blocks(0x21, 2);
	for (unsigned i = 0; i < 56; i++) {
		file_flip_bit(0x21, i, i % 8);
		err_count = 0;
		cr_assert_eq(read_block(0x21, 0), -EBADMSG, "byte %u", i);
		cr_assert_eq(objstore_verify(s, 0x21), -EBADMSG);
		cr_assert_eq(objstore_write(s, 0x21, 0, "x", 1, 2, 0),
			     -EBADMSG);
		cr_assert_gt(err_count, 0, "logged");
		file_flip_bit(0x21, i, i % 8);
		cr_assert_eq(read_block(0x21, 0), 0, "byte %u restored", i);
	}
}

Test(corrupt, flipped_table_bit_fails_that_block)
{
	write_blocks(0x22, 4);
	/* Each byte of block 2's entry: cur, then prev. */
	for (unsigned i = 0; i < 16; i++) {
		file_flip_bit(0x22, TAB_OFF + 2 * 16 + i, i % 8);
		cr_assert_eq(read_block(0x22, 2), -EBADMSG, "byte %u", i);
		cr_assert(strstr(last_err, "block=2"), "log: %s", last_err);
		cr_assert_eq(read_block(0x22, 1), 0);
		cr_assert_eq(read_block(0x22, 3), 0);
		cr_assert_eq(objstore_verify(s, 0x22), -EBADMSG);
		file_flip_bit(0x22, TAB_OFF + 2 * 16 + i, i % 8);
		cr_assert_eq(objstore_verify(s, 0x22), 0);
	}
	/* An entry past the size must stay {0, 0}. */
	file_flip_bit(0x22, TAB_OFF + 100 * 16 + 9, 2);
	cr_assert_eq(objstore_verify(s, 0x22), -EBADMSG);
}

Test(corrupt, flipped_bit_in_never_written_block_is_ebadmsg)
{
	unsigned char one = 1;

	cr_assert_eq(objstore_write(s, 0x23, 5 * BLK, "x", 1, 1,
				    OBJSTORE_CREATE), 0);
	file_pwrite(0x23, &one, 1, DATA_OFF + 2 * BLK + 17);
	cr_assert_eq(read_block(0x23, 2), -EBADMSG);
	cr_assert_eq(read_block(0x23, 1), 0);
	cr_assert_eq(objstore_verify(s, 0x23), -EBADMSG);
}

static void expect_all_ebadmsg(uint64_t oid)
{
	struct objstore_stat st;

	cr_assert_eq(read_block(oid, 0), -EBADMSG);
	cr_assert_eq(objstore_stat(s, oid, &st), -EBADMSG);
	cr_assert_eq(objstore_verify(s, oid), -EBADMSG);
	cr_assert_eq(objstore_write(s, oid, 10, "x", 1, 2, 0), -EBADMSG);
	cr_assert_eq(objstore_write(s, oid, 0, "x", 1, 2, OBJSTORE_CREATE),
		     -EBADMSG, "an existing bad file is not recreated");
}

static void truncate_obj(uint64_t oid, off_t len)
{
	char path[256];

	obj_file(oid, path, sizeof(path));
	cr_assert_eq(truncate(path, len), 0);
}

Test(corrupt, truncated_file_is_ebadmsg)
{
	write_blocks(0x30, 4);
	write_blocks(0x31, 4);
	write_blocks(0x32, 4);
	truncate_obj(0x30, 100);
	expect_all_ebadmsg(0x30);
	truncate_obj(0x31, DATA_OFF - 1);       /* header whole, table cut */
	expect_all_ebadmsg(0x31);
}

/* A name with no bytes: a power loss kept the link of a file whose
 * header never reached the disk. No object; a create replaces it. */
Test(corrupt, empty_file_is_no_object)
{
	struct objstore_stat st;

	write_blocks(0x32, 4);
	truncate_obj(0x32, 0);
	cr_assert_eq(read_block(0x32, 0), -ENOENT);
	cr_assert_eq(objstore_stat(s, 0x32, &st), -ENOENT);
	cr_assert_eq(objstore_write(s, 0x32, 10, "x", 1, 2, 0), -ENOENT);
	cr_assert_eq(objstore_write(s, 0x32, 0, "y", 1, 2, OBJSTORE_CREATE), 0,
		     "a create replaces the empty file");
	cr_assert_eq(objstore_stat(s, 0x32, &st), 0);
	cr_assert_eq(st.size, 1);
}

Test(corrupt, copy_with_bad_header_can_be_removed)
{
	struct objstore_stat st;

	write_blocks(0x33, 2);
	file_flip_bit(0x33, 0, 0);
	cr_assert_eq(objstore_stat(s, 0x33, &st), -EBADMSG);
	cr_assert_eq(objstore_remove(s, 0x33), 0, "buried, not refused");
	cr_assert_eq(objstore_stat(s, 0x33, &st), -ENOENT);
}

Test(corrupt, truncated_data_is_ebadmsg)
{
	write_blocks(0x33, 4);
	truncate_obj(0x33, DATA_OFF + BLK + 10);
	cr_assert_eq(read_block(0x33, 0), 0);
	cr_assert_eq(read_block(0x33, 1), -EBADMSG);
	cr_assert_eq(read_block(0x33, 3), -EBADMSG);
	cr_assert_eq(objstore_verify(s, 0x33), -EBADMSG);
}

Test(corrupt, random_bytes_file_is_ebadmsg)
{
	unsigned char *junk = malloc(DATA_OFF + 8 * BLK);
	unsigned seed = 99;

	cr_assert_not_null(junk);
	for (uint64_t oid = 0x40; oid < 0x48; oid++) {
		size_t len = DATA_OFF + 8 * BLK - (oid - 0x40) * 3001;

		write_blocks(oid, 1);
		fill_random(junk, len, &seed);
		file_pwrite(oid, junk, len, 0);
		expect_all_ebadmsg(oid);
	}
	free(junk);
}

Test(corrupt, header_with_valid_csum_but_bad_fields_is_ebadmsg)
{
	/* field offset, width, value */
	static const struct { off_t off; int w; uint64_t v; } bad[] = {
		{ 0, 8, 0x1234 },                       /* magic */
		{ 8, 4, 2 },                            /* version */
		{ 12, 4, 0 },                           /* max_obj_size */
		{ 12, 4, 4097 },
		{ 12, 4, OBJSTORE_MAX_OBJ_SIZE + 4096 },
		{ 16, 8, 0x51 },                        /* oid */
		{ 24, 8, MAX_OBJ + 1ull },              /* size */
		{ 24, 8, UINT64_MAX },
		{ 40, 4, 0x80 },                        /* unknown flag */
		{ 44, 4, 1 },                           /* reserved */
	};

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t oid = 0x50;

		cr_assert_eq(objstore_replace(s, oid, "abc", 3, 1), 0);
		if (bad[i].w == 8)
			file_set_u64(oid, bad[i].off, bad[i].v);
		else
			file_set_u32(oid, bad[i].off, (uint32_t)bad[i].v);
		file_fix_hdr_csum(oid);
		expect_all_ebadmsg(oid);
	}
}

Test(corrupt, object_file_under_another_oid_is_ebadmsg)
{
	char from[256], to[256];

	write_blocks(0x60, 1);
	cr_assert_eq(objstore_create(s, 0x160, 1), 0);
	obj_file(0x60, from, sizeof(from));
	obj_file(0x160, to, sizeof(to));
	cr_assert_eq(rename(from, to), 0);
	expect_all_ebadmsg(0x160);
}

/* ---- interrupted writes ---- */

static void expect_entry(uint64_t oid, uint64_t b, uint64_t cur,
			 uint64_t prev)
{
	uint64_t ent[2];

	file_pread(oid, ent, sizeof(ent), TAB_OFF + b * 16);
	cr_assert_eq(le64toh(ent[0]), cur, "block %" PRIu64 " cur", b);
	cr_assert_eq(le64toh(ent[1]), prev, "block %" PRIu64 " prev", b);
}

Test(crash, completed_write_leaves_only_the_new_data_valid)
{
	unsigned char g1[BLK], g2[BLK];

	fill_gen(g1, 0, BLK, 1);
	fill_gen(g2, 0, BLK, 2);
	cr_assert_eq(objstore_write(s, 0x70, 0, g1, BLK, 1, OBJSTORE_CREATE),
		     0);
	expect_entry(0x70, 0, csum64(g1, BLK), csum64(g1, BLK));
	cr_assert_eq(objstore_write(s, 0x70, 0, g2, BLK, 2, 0), 0);
	expect_entry(0x70, 0, csum64(g2, BLK), csum64(g2, BLK));
	/* The block silently going back to its old content is caught. */
	file_pwrite(0x70, g1, BLK, DATA_OFF);
	cr_assert_eq(read_block(0x70, 0), -EBADMSG);
}

Test(crash, interrupted_write_is_settled_by_the_next_write)
{
	unsigned char g1[3 * BLK], g2[3 * BLK], g3[3 * BLK];
	uint32_t flags;

	fill_gen(g1, 0, 3 * BLK, 1);
	fill_gen(g2, 0, 3 * BLK, 2);
	fill_gen(g3, 0, 3 * BLK, 3);
	cr_assert_eq(objstore_write(s, 0x71, 0, g1, 3 * BLK, 1,
				    OBJSTORE_CREATE), 0);
	/* What a kill during a write of g2 leaves: the header dirty, all
	 * entries {g2, g1}; block 1 already holds g2, blocks 0 and 2 g1. */
	for (unsigned b = 0; b < 3; b++) {
		file_set_u64(0x71, TAB_OFF + b * 16, csum64(g2 + b * BLK, BLK));
		file_set_u64(0x71, TAB_OFF + b * 16 + 8,
			     csum64(g1 + b * BLK, BLK));
	}
	file_pwrite(0x71, g2 + BLK, BLK, DATA_OFF + BLK);
	memcpy(g1 + BLK, g2 + BLK, BLK);        /* g1 is now "expected" */
	file_set_u32(0x71, HDR_FLAGS_OFF, HDR_F_DIRTY);
	file_fix_hdr_csum(0x71);
	expect_read(0x71, 0, g1, 3 * BLK);
	cr_assert_eq(objstore_verify(s, 0x71), 0);

	/* The next write, to block 0 only, settles blocks 1 and 2 too. */
	cr_assert_eq(objstore_write(s, 0x71, 0, g3, BLK, 3, 0), 0);
	memcpy(g1, g3, BLK);
	expect_read(0x71, 0, g1, 3 * BLK);
	for (unsigned b = 0; b < 3; b++)
		expect_entry(0x71, b, csum64(g1 + b * BLK, BLK),
			     csum64(g1 + b * BLK, BLK));
	file_pread(0x71, &flags, 4, HDR_FLAGS_OFF);
	cr_assert_eq(flags, 0, "header clean");
	cr_assert_eq(objstore_verify(s, 0x71), 0);
}

Test(crash, unsettled_entry_in_a_clean_object_is_ebadmsg)
{
	unsigned char g1[BLK], g2[BLK];

	fill_gen(g1, 0, BLK, 1);
	fill_gen(g2, 0, BLK, 2);
	cr_assert_eq(objstore_write(s, 0x72, 0, g1, BLK, 1, OBJSTORE_CREATE),
		     0);
	file_set_u64(0x72, TAB_OFF, csum64(g2, BLK));
	cr_assert_eq(read_block(0x72, 0), -EBADMSG);
	cr_assert_eq(objstore_verify(s, 0x72), -EBADMSG);
}

/*
 * Which generation does block @b hold? Bytes of the block inside the
 * written range [off, end) must all be one generation's (0: never
 * written, all zero); bytes outside stay zero. -1 if neither.
 */
static int64_t block_gen(const unsigned char *obj, uint64_t b, uint64_t off,
			 uint64_t end)
{
	uint64_t lo = b * BLK > off ? b * BLK : off;
	uint64_t hi = (b + 1) * BLK < end ? (b + 1) * BLK : end;
	unsigned char want[BLK];
	uint64_t w, g;

	for (uint64_t p = b * BLK; p < (b + 1) * BLK; p++)
		if ((p < lo || p >= hi) && obj[p])
			return -1;
	memcpy(&w, obj + lo, 8);
	g = w >> 32;
	if (w == 0)
		memset(want, 0, hi - lo);
	else
		fill_gen(want, lo, hi - lo, g);
	return memcmp(obj + lo, want, hi - lo) == 0 ? (int64_t)g : -1;
}

static void writer_child(int ready_fd, uint64_t oid, uint64_t off,
			 size_t len, uint64_t g0, int replace)
{
	unsigned char *buf = malloc(MAX_OBJ);
	struct objstore *cs;

	if (!buf || objstore_open(dir, MAX_OBJ, &cs) < 0)
		_exit(2);
	if (write(ready_fd, "r", 1) != 1)
		_exit(3);
	for (uint64_t g = g0;; g++) {
		int ret;

		if (replace) {
			/* Each generation has its own size. */
			len = MAX_OBJ - (g % 13) * 37 * BLK - (g % 3) * 808;
			fill_gen(buf, 0, len, g);
			ret = objstore_replace(cs, oid, buf, len, g);
		} else {
			fill_gen(buf, off, len, g);
			ret = objstore_write(cs, oid, off, buf, len, g,
					     OBJSTORE_CREATE);
		}
		if (ret < 0)
			_exit(4);
	}
}

/* Start a writer, let it run for @delay_us after it opened the store,
 * then SIGKILL it. */
static void run_and_kill(uint64_t oid, uint64_t off, size_t len, uint64_t g0,
			 int replace, unsigned delay_us)
{
	int p[2], status;
	ssize_t started;
	pid_t pid;
	char c;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Never outlive a test that failed before the kill. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		writer_child(p[1], oid, off, len, g0, replace);
		_exit(5);
	}
	close(p[1]);
	started = read(p[0], &c, 1);
	close(p[0]);
	if (started == 1)
		usleep(delay_us);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(started, 1, "writer did not start: status %d", status);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "writer failed before the kill: status %d", status);
}

/* Reopen the store as after a crash and read the whole object. */
static int reopen_and_read(uint64_t oid, unsigned char *obj, size_t *got)
{
	objstore_close(s);
	s = NULL;
	cr_assert_eq(objstore_open(dir, MAX_OBJ, &s), 0);
	memset(obj, 0, MAX_OBJ);
	*got = 0;
	return objstore_read(s, oid, 0, obj, MAX_OBJ, got);
}

/*
 * Kill a writer of generations g0, g0 + 1, ... over [off, off + len)
 * again and again. After each kill every block must read back without
 * error as one whole generation: either what it held before (the kill
 * came before the writer reached it) or, for the blocks that changed,
 * the newest generation G written or G - 1.
 */
static void kill_writers(uint64_t oid, uint64_t off, size_t len,
			 unsigned min_us, unsigned max_us)
{
	uint64_t first = off / BLK, last = (off + len - 1) / BLK;
	int64_t prev[NBLOCKS] = { 0 }, gen[NBLOCKS];
	unsigned char *obj = malloc(MAX_OBJ);
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	unsigned iter, torn = 0, seed0 = seed;
	uint64_t g0 = 1;

	cr_assert_not_null(obj);
	for (iter = 0; iter < 150 && (iter < 30 || torn < 5); iter++) {
		unsigned delay = min_us + rand_r(&seed) % (max_us - min_us);
		int64_t newest = -1, oldest = INT64_MAX;
		size_t got;
		int ret;

		run_and_kill(oid, off, len, g0, 0, delay);
		ret = reopen_and_read(oid, obj, &got);
		if (ret == -ENOENT) {
			cr_assert_eq(g0, 1, "seed %u iter %u: object lost",
				     seed0, iter);
			continue;
		}
		cr_assert_eq(ret, 0, "seed %u iter %u delay %u: read failed",
			     seed0, iter, delay);
		cr_assert_eq(got, off + len);
		cr_assert_eq(objstore_verify(s, oid), 0);
		for (uint64_t b = first; b <= last; b++) {
			gen[b] = block_gen(obj, b, off, off + len);
			cr_assert_geq(gen[b], 0, "seed %u iter %u delay %u: "
				      "block %" PRIu64 " is not one whole "
				      "generation", seed0, iter, delay, b);
			if (gen[b] == prev[b])
				continue;
			cr_assert_geq((uint64_t)gen[b], g0, "seed %u iter %u: "
				      "block %" PRIu64 " went back from %"
				      PRId64 " to %" PRId64, seed0, iter, b,
				      prev[b], gen[b]);
			newest = gen[b] > newest ? gen[b] : newest;
			oldest = gen[b] < oldest ? gen[b] : oldest;
		}
		if (newest < 0)
			continue;       /* killed before any data landed */
		cr_assert_leq(newest - oldest, 1, "seed %u iter %u: blocks of"
			      " generations %" PRId64 "..%" PRId64, seed0,
			      iter, oldest, newest);
		for (uint64_t b = first; b <= last; b++) {
			if (gen[b] != prev[b] && gen[b] != newest) {
				torn++;
				break;
			}
		}
		memcpy(prev, gen, sizeof(prev));
		g0 = newest + 1;
	}
	cr_log_info("%u kills, %u left a write half done, last generation "
		    "%" PRIu64, iter, torn, g0 - 1);
	free(obj);
}

Test(crash, killed_whole_object_writes_leave_each_block_old_or_new)
{
	kill_writers(0x80, 0, MAX_OBJ, 200, 4000);
}

Test(crash, killed_unaligned_writes_leave_each_block_old_or_new)
{
	kill_writers(0x81, 1000, (1u << 20) + 3000, 100, 2000);
}

Test(crash, killed_replace_leaves_object_wholly_old_or_new)
{
	unsigned char *obj = malloc(MAX_OBJ), *want = malloc(MAX_OBJ);
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid(), seed0 = seed;
	uint64_t g0 = 1, g;
	struct objstore_stat st;
	size_t got;

	cr_assert(obj && want);
	for (unsigned iter = 0; iter < 30; iter++) {
		unsigned delay = 200 + rand_r(&seed) % 4000;
		int ret;

		run_and_kill(0x82, 0, 0, g0, 1, delay);
		ret = reopen_and_read(0x82, obj, &got);
		if (ret == -ENOENT && g0 == 1)
			continue;
		cr_assert_eq(ret, 0, "seed %u iter %u", seed0, iter);
		cr_assert_eq(objstore_stat(s, 0x82, &st), 0);
		g = st.version;    /* replace stores the version it is given */
		cr_assert_geq(g, g0 - 1, "seed %u iter %u", seed0, iter);
		cr_assert_eq(got, MAX_OBJ - (g % 13) * 37 * BLK - (g % 3) * 808,
			     "seed %u iter %u: size of generation %" PRIu64,
			     seed0, iter, g);
		fill_gen(want, 0, got, g);
		cr_assert(memcmp(obj, want, got) == 0, "seed %u iter %u: "
			  "content is not generation %" PRIu64, seed0, iter, g);
		g0 = g + 1;
	}
	free(obj);
	free(want);
}

/* ---- replace ---- */

Test(replace, swaps_content_and_size)
{
	unsigned char *big = malloc(3 << 20), small[5000];
	struct objstore_stat st;
	size_t got;

	cr_assert_not_null(big);
	fill_gen(big, 0, 3 << 20, 1);
	fill_gen(small, 0, 5000, 2);
	cr_assert_eq(objstore_write(s, 0x90, 0, big, 3 << 20, 1,
				    OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_replace(s, 0x90, small, sizeof(small), 2), 0);
	cr_assert_eq(objstore_stat(s, 0x90, &st), 0);
	cr_assert_eq(st.size, sizeof(small));
	cr_assert_eq(st.version, 2, "a replace keeps the version it is given");
	expect_read(0x90, 0, small, sizeof(small));
	cr_assert_eq(objstore_read(s, 0x90, 0, big, 3 << 20, &got), 0);
	cr_assert_eq(got, sizeof(small));
	cr_assert_eq(objstore_verify(s, 0x90), 0);
	/* Partial-block writes after a replace see zeros past its end. */
	cr_assert_eq(objstore_write(s, 0x90, 6000, "z", 1, 3, 0), 0);
	cr_assert_eq(objstore_read(s, 0x90, 5000, big, 2000, &got), 0);
	cr_assert_eq(got, 1001);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(big[i], 0);
	cr_assert_eq(big[1000], 'z');
	cr_assert_eq(objstore_replace(s, 0x90, NULL, 0, 4), 0);
	cr_assert_eq(objstore_stat(s, 0x90, &st), 0);
	cr_assert_eq(st.size, 0);
	free(big);
}

Test(replace, creates_missing_object)
{
	cr_assert_eq(objstore_replace(s, 0x91, "hello", 5, 3), 0);
	expect_read(0x91, 0, "hello", 5);
}

Test(replace, leftover_tmp_is_removed_at_open_and_never_listed)
{
	char path[256], tmp[300];
	uint64_t ids[4];
	struct stat st;
	size_t n;
	int fd;

	cr_assert_eq(objstore_create(s, 0x92, 1), 0);
	obj_file(0x92, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "junk", 4), 4);
	close(fd);
	cr_assert_eq(objstore_list(s, 0, 1, ids, 4, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(ids[0], 0x92);
	objstore_close(s);
	s = NULL;
	cr_assert_eq(objstore_open(dir, MAX_OBJ, &s), 0);
	cr_assert_eq(stat(tmp, &st), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(stat(path, &st), 0, "the object itself stays");
	cr_assert_eq(objstore_verify(s, 0x92), 0);
}

/* ---- list ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

Test(list, pages_return_every_id_once_ascending)
{
	enum { N = 300 };
	uint64_t want[N], got[N + 8], page[7];
	unsigned seed = 5;
	size_t total = 0, n;
	uint64_t after = 0;
	int first = 1;

	want[0] = 0;
	want[1] = UINT64_MAX;
	want[2] = 1;
	want[3] = 0xff;
	want[4] = 0x100;
	want[5] = 0x100000000ull;
	want[6] = UINT64_MAX - 0xff;
	for (int i = 7; i < N; i++)
		want[i] = (uint64_t)rand_r(&seed) << 33 ^ (uint64_t)i << 8 ^ i;
	for (int i = 0; i < N; i++)
		cr_assert_eq(objstore_create(s, want[i], 1), 0, "%d", i);
	qsort(want, N, sizeof(want[0]), cmp_u64);

	for (;;) {
		cr_assert_eq(objstore_list(s, after, first, page, 7, &n), 0);
		if (n == 0)
			break;
		cr_assert_leq(n, 7);
		cr_assert_leq(total + n, N, "listed more than exist");
		memcpy(got + total, page, n * sizeof(page[0]));
		total += n;
		after = page[n - 1];
		first = 0;
	}
	cr_assert_eq(total, N);
	cr_assert_arr_eq(got, want, N * sizeof(want[0]));

	cr_assert_eq(objstore_list(s, 0, 0, page, 7, &n), 0);
	cr_assert_eq(page[0], 1, "without include_zero, 0 is skipped");
	cr_assert_eq(objstore_list(s, UINT64_MAX - 0xff, 0, page, 7, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(page[0], UINT64_MAX);
	cr_assert_eq(objstore_list(s, 0, 1, page, 0, &n), 0);
	cr_assert_eq(n, 0);
}

Test(list, ignores_junk_names)
{
	static const char *junk[] = {
		"34/zz", "34/000000000000123", "34/00000000000001234",
		"34/000000000000ABCD", "34/0000000000001234.tmp",
		"34/0000000000001234~", "35/0000000000001234",
		"00/.0000000000000000", "00/ 000000000000000",
	};
	char path[512], base[300];
	uint64_t ids[16];
	size_t n;

	cr_assert_eq(objstore_create(s, 0x1234, 1), 0);
	snprintf(base, sizeof(base), "%s/obj", dir);
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/%s", base, junk[i]);
		fd = open(path, O_WRONLY | O_CREAT, 0600);
		cr_assert_geq(fd, 0, "%s", path);
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/cd/000000000000abcd", base);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(objstore_list(s, 0, 1, ids, 16, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(ids[0], 0x1234);
}

/*
 * The ids with a file, as the store's directories show them: what a walk
 * of every directory finds, sorted, into @ids (room for @max); the count.
 */
static size_t walk_ids(uint64_t *ids, size_t max)
{
	char path[300];
	size_t n = 0;

	for (unsigned i = 0; i < 256; i++) {
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "%s/obj/%02x", dir, i);
		d = opendir(path);
		cr_assert_not_null(d, "%s", path);
		while ((de = readdir(d)) != NULL) {
			uint64_t oid;
			char *end;

			if (strlen(de->d_name) != 16 ||
			    strspn(de->d_name, "0123456789abcdef") != 16)
				continue;
			oid = strtoull(de->d_name, &end, 16);
			if ((oid & 0xff) != i)
				continue;
			cr_assert_lt(n, max);
			ids[n++] = oid;
		}
		closedir(d);
	}
	qsort(ids, n, sizeof(*ids), cmp_u64);
	return n;
}

/* Every id in pages of @page, into @ids (room for @max); the count. */
static size_t list_all(uint64_t *ids, size_t max, size_t page)
{
	uint64_t after = 0;
	size_t total = 0, n;
	int first = 1;

	do {
		cr_assert_leq(total + page, max + page);
		cr_assert_eq(objstore_list(s, after, first, ids + total,
					   total + page <= max ? page : max - total, &n), 0);
		total += n;
		if (n)
			after = ids[total - 1];
		first = 0;
	} while (n == page && total < max);
	return total;
}

/* The store's count and list agree with a walk of its directories. */
static void expect_index_is_walk(const char *when)
{
	enum { MAX = 4096 };
	static uint64_t walked[MAX], listed[MAX];
	size_t nw = walk_ids(walked, MAX), nl = list_all(listed, MAX, 13);

	cr_assert_eq(objstore_count(s), nw, "%s: count %" PRIu64 ", walk %zu",
		     when, objstore_count(s), nw);
	cr_assert_eq(nl, nw, "%s: listed %zu, walk %zu", when, nl, nw);
	cr_assert_arr_eq(listed, walked, nw * sizeof(walked[0]), "%s", when);
}

Test(list, count_and_list_equal_a_walk_after_random_changes_and_reopens)
{
	enum { IDS = 600, ROUNDS = 4, OPS = 900 };
	static uint64_t pool[IDS];
	unsigned seed = 14;
	char buf[100];

	memset(buf, 7, sizeof(buf));
	for (int i = 0; i < IDS; i++)   /* clustered ids share stripes and dirs */
		pool[i] = i < IDS / 2 ? (uint64_t)rand_r(&seed) << 31 ^ rand_r(&seed)
				      : 0x4200000000ull + (uint64_t)i * 0x100;
	pool[0] = 0;
	pool[1] = UINT64_MAX;
	expect_index_is_walk("empty");
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < OPS; k++) {
			uint64_t oid = pool[rand_r(&seed) % IDS];
			uint64_t epoch = 1 + (uint64_t)r;

			switch (rand_r(&seed) % 8) {
			case 0: (void)objstore_create(s, oid, epoch); break;
			case 1: (void)objstore_write(s, oid, 0, buf, sizeof(buf), epoch,
						     OBJSTORE_CREATE); break;
			case 2: (void)objstore_put(s, oid, buf, 10, epoch); break;
			case 3: (void)objstore_replace(s, oid, buf, 20, epoch << 32 | 9); break;
			case 4: (void)objstore_remove(s, oid); break;
			case 5: (void)objstore_remove_at(s, oid, epoch); break;
			case 6: (void)objstore_bury(s, oid, epoch << 32 | 7); break;
			case 7: (void)objstore_write(s, oid, 50, buf, 5, epoch, 0); break;
			}
		}
		expect_index_is_walk("after changes");
		/* A file the store did not make is not one of its names. */
		char junk[300];
		snprintf(junk, sizeof(junk), "%s/obj/07/00000000000000ab", dir);
		int fd = open(junk, O_WRONLY | O_CREAT, 0600);
		cr_assert_geq(fd, 0);
		close(fd);
		expect_index_is_walk("with a file in the wrong directory");
		unlink(junk);
		objstore_close(s);
		s = NULL;
		cr_assert_eq(objstore_open(dir, MAX_OBJ, &s), 0);
		expect_index_is_walk("after reopening");
	}
	cr_assert_gt(objstore_count(s), 0, "the test made some objects");
}

Test(list, count_and_list_read_no_directory)
{
	char a[300], b[300];
	uint64_t ids[8];
	size_t n;

	cr_assert_eq(objstore_create(s, 0x505, 1), 0);
	cr_assert_eq(objstore_create(s, 0x1005, 1), 0);
	cr_assert_eq(objstore_create(s, 0x77, 1), 0);
	/* Directory 05 gone behind the store's back: nothing it lists or
	 * counts comes from a walk any more (cluster status and each
	 * listing page used to walk all 256). */
	snprintf(a, sizeof(a), "%s/obj/05", dir);
	snprintf(b, sizeof(b), "%s/obj/05.away", dir);
	cr_assert_eq(rename(a, b), 0);
	cr_assert_eq(objstore_count(s), 3);
	cr_assert_eq(objstore_list(s, 0, 1, ids, 8, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(ids[0], 0x77);
	cr_assert_eq(ids[1], 0x505);
	cr_assert_eq(ids[2], 0x1005);
	cr_assert_eq(rename(b, a), 0);
}

Test(list, pages_list_every_old_id_once_while_ids_are_added_and_removed)
{
	enum { OLD = 2000, PAGE = 37 };
	static uint64_t old[OLD], got[8 * OLD];
	unsigned seed = 99;
	uint64_t after = 0, page[PAGE], added = 0;
	size_t total = 0, n, o = 0, adds = 0;
	int first = 1;

	for (int i = 0; i < OLD; i++) {
		old[i] = (uint64_t)rand_r(&seed) << 32 ^ (uint64_t)rand_r(&seed) << 1;
		cr_assert_eq(objstore_create(s, old[i], 1), 0);
	}
	qsort(old, OLD, sizeof(old[0]), cmp_u64);
	for (;;) {
		cr_assert_eq(objstore_list(s, after, first, page, PAGE, &n), 0);
		if (n == 0)
			break;
		for (size_t i = 0; i < n; i++) {
			cr_assert(first && i == 0 ? 1 : page[i] > after,
				  "ascending past the cursor");
			if (i)
				cr_assert_gt(page[i], page[i - 1]);
			cr_assert_lt(total, 8 * OLD);
			got[total++] = page[i];
		}
		after = page[n - 1];
		first = 0;
		/* New ids (odd: never an old one) around and behind the cursor,
		 * and the new ones removed again now and then; for the first
		 * pages only (one just ahead each time would never let it end). */
		for (int k = 0; k < 5 && adds++ < 200; k++) {
			uint64_t id = (uint64_t)rand_r(&seed) << 32 ^
				      (uint64_t)rand_r(&seed) << 1 ^ 1;

			if (k == 0)
				id = after + 1 + 2 * (uint64_t)(rand_r(&seed) % 64);
			cr_assert_eq(objstore_create(s, id | 1, 2), 0);
			added++;
			if (k == 4)
				cr_assert_eq(objstore_remove(s, id | 1), 0);
		}
	}
	cr_assert_gt(added, 0);
	/* Every old id exactly once, in order. */
	for (size_t i = 0; i < total; i++) {
		if (got[i] & 1)
			continue;
		cr_assert_lt(o, OLD, "an old id listed twice or an unknown one");
		cr_assert_eq(got[i], old[o], "old id %zu", o);
		o++;
	}
	cr_assert_eq(o, OLD, "listed %zu of %d old ids", o, OLD);
}

/* Every listed entry is what objstore_head says of that object now. */
static void expect_list_ent_is_head(const char *when)
{
	enum { MAX = 4096 };
	static struct objstore_ent e[MAX];
	uint64_t after = 0, size, version;
	size_t n, total = 0;
	int first = 1, deleted;

	do {
		cr_assert_eq(objstore_list_ent(s, after, first, e, 11, &n), 0);
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(objstore_head(s, e[i].oid, &size, &version, &deleted), 0);
			cr_assert_eq(e[i].version, version, "%s: oid %" PRIx64 " listed "
				     "version %" PRIx64 ", header %" PRIx64, when,
				     e[i].oid, e[i].version, version);
			cr_assert_eq(e[i].size, size, "%s: oid %" PRIx64, when, e[i].oid);
			cr_assert_eq(e[i].deleted, deleted, "%s: oid %" PRIx64, when, e[i].oid);
		}
		total += n;
		if (n)
			after = e[n - 1].oid;
		first = 0;
	} while (n == 11);
	cr_assert_eq(total, objstore_count(s), "%s", when);
}

Test(list, listed_versions_follow_every_change_after_a_listing)
{
	enum { IDS = 300, ROUNDS = 12, OPS = 150 };
	uint64_t pool[IDS];
	unsigned seed = 41;
	char buf[64];

	memset(buf, 3, sizeof(buf));
	for (int i = 0; i < IDS; i++)
		pool[i] = 0x900000 + (uint64_t)i * 0x101;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t epoch = 1 + (uint64_t)r / 3;   /* changes within an epoch too */

		for (int k = 0; k < OPS; k++) {
			uint64_t oid = pool[rand_r(&seed) % IDS];

			switch (rand_r(&seed) % 7) {
			case 0: (void)objstore_create(s, oid, epoch); break;
			case 1: (void)objstore_write(s, oid, (uint64_t)(rand_r(&seed) % 8192),
						     buf, sizeof(buf), epoch, OBJSTORE_CREATE); break;
			case 2: (void)objstore_write(s, oid, 0, buf, 8, epoch, 0); break;
			case 3: (void)objstore_put(s, oid, buf, (size_t)(rand_r(&seed) % 64), epoch); break;
			case 4: (void)objstore_replace(s, oid, buf, 9, epoch << 32 | 77); break;
			case 5: (void)objstore_remove_at(s, oid, epoch); break;
			case 6: (void)objstore_remove(s, oid); break;
			}
		}
		/* Twice: the second listing answers from what the first read. */
		expect_list_ent_is_head("first listing");
		expect_list_ent_is_head("second listing");
		if (r % 4 == 3) {
			objstore_close(s);
			s = NULL;
			cr_assert_eq(objstore_open(dir, MAX_OBJ, &s), 0);
			expect_list_ent_is_head("after reopening");
		}
	}
}

Test(list, a_second_listing_reads_no_unchanged_header)
{
	struct objstore_ent e[8];
	char a[300], b[300];
	size_t n;

	cr_assert_eq(objstore_write(s, 0x605, 0, "abc", 3, 2, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_create(s, 0x77, 1), 0);
	cr_assert_eq(objstore_list_ent(s, 0, 1, e, 8, &n), 0);
	cr_assert_eq(n, 2);
	/* Directory 05 gone behind the store's back: a listing that read
	 * 0x605's header again would miss it (a cold disk paid one header
	 * read per object and listing page, every pass of every peer). */
	snprintf(a, sizeof(a), "%s/obj/05", dir);
	snprintf(b, sizeof(b), "%s/obj/05.away", dir);
	cr_assert_eq(rename(a, b), 0);
	memset(e, 0, sizeof(e));
	cr_assert_eq(objstore_list_ent(s, 0, 1, e, 8, &n), 0);
	cr_assert_eq(rename(b, a), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(e[0].oid, 0x77);
	cr_assert_eq(e[1].oid, 0x605);
	cr_assert_eq(e[1].size, 3);
	cr_assert_eq(e[1].version, 2ull << 32 | 1);
	/* A change is seen by the next listing. */
	cr_assert_eq(objstore_write(s, 0x605, 10, "de", 2, 3, 0), 0);
	cr_assert_eq(objstore_list_ent(s, 0x77, 0, e, 8, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].size, 12);
	cr_assert_eq(e[0].version, 3ull << 32 | 1);
}

/* ---- concurrency ---- */

enum { THREADS = 6, ROUNDS = 60 };
static int thread_failures;

struct worker {
	pthread_t tid;
	unsigned idx;
	int failures;
};

/* Each thread: its own 64 KiB of shared object A, unaligned writes all
 * over shared object B, its own object C, and reads of B throughout. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned char buf[64 * 1024 + 8], out[64 * 1024];
	unsigned seed = w->idx + 1;
	size_t got;

	for (unsigned r = 1; r <= ROUNDS; r++) {
		uint64_t g = (uint64_t)w->idx << 16 | r;
		uint64_t off = (rand_r(&seed) % (MAX_OBJ / 8 - 8192)) * 8;
		size_t len = (1 + rand_r(&seed) % 8000) * 8;

		fill_gen(buf, w->idx * sizeof(out), sizeof(out), g);
		if (objstore_write(s, 0xa0, w->idx * sizeof(out), buf,
				   sizeof(out), g, OBJSTORE_CREATE) < 0)
			w->failures++;
		fill_gen(buf, off, len, g);
		if (objstore_write(s, 0xb0, off, buf, len, g,
				   OBJSTORE_CREATE) < 0)
			w->failures++;
		if (objstore_write(s, 0xc0 + w->idx, off, buf, len, g,
				   OBJSTORE_CREATE) < 0)
			w->failures++;
		if (objstore_read(s, 0xb0, off, out, sizeof(out), &got) < 0)
			w->failures++;
		if (objstore_verify(s, 0xa0) < 0)
			w->failures++;
	}
	return NULL;
}

Test(concurrency, threads_on_shared_and_private_objects_leave_every_block_valid)
{
	struct worker w[THREADS];
	unsigned char want[64 * 1024];

	for (unsigned i = 0; i < THREADS; i++) {
		w[i].idx = i;
		w[i].failures = 0;
		cr_assert_eq(pthread_create(&w[i].tid, NULL, worker_main,
					    &w[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		cr_assert_eq(pthread_join(w[i].tid, NULL), 0);
		thread_failures += w[i].failures;
	}
	cr_assert_eq(thread_failures, 0);
	cr_assert_eq(err_count, 0, "log: %s", last_err);
	cr_assert_eq(objstore_verify(s, 0xa0), 0);
	cr_assert_eq(objstore_verify(s, 0xb0), 0);
	for (unsigned i = 0; i < THREADS; i++) {
		cr_assert_eq(objstore_verify(s, 0xc0 + i), 0);
		fill_gen(want, i * sizeof(want), sizeof(want),
			 (uint64_t)i << 16 | ROUNDS);
		expect_read(0xa0, i * sizeof(want), want, sizeof(want));
	}
}

TestSuite(tombstone, .init = setup, .fini = teardown);

Test(tombstone, buried_object_reads_as_missing_but_keeps_its_epoch)
{
	struct objstore_stat st;
	uint64_t size, epoch;
	int deleted = 0;
	size_t got;
	char c;

	cr_assert_eq(objstore_write(s, 7, 0, "abc", 3, 4, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_bury(s, 7, 9), 0);
	cr_assert_eq(objstore_read(s, 7, 0, &c, 1, &got), -ENOENT);
	cr_assert_eq(objstore_stat(s, 7, &st), -ENOENT);
	cr_assert_eq(objstore_verify(s, 7), -ENOENT);
	cr_assert_eq(objstore_write(s, 7, 0, "x", 1, 10, 0), -ENOENT);
	cr_assert_eq(objstore_head(s, 7, &size, &epoch, &deleted), 0);
	cr_assert(deleted);
	cr_assert_eq(size, 0);
	cr_assert_eq(epoch, 9, "the removal's version is what recovery compares");
}

Test(tombstone, versions_count_changes_within_an_epoch)
{
	uint64_t size, v;
	int deleted;

	cr_assert_eq(objstore_write(s, 5, 0, "a", 1, 4, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_write(s, 5, 1, "b", 1, 4, 0), 0);
	cr_assert_eq(objstore_head(s, 5, &size, &v, &deleted), 0);
	cr_assert_eq(v, 4ull << 32 | 2, "two changes in epoch 4");
	cr_assert_eq(objstore_write(s, 5, 1, "c", 1, 6, 0), 0);
	cr_assert_eq(objstore_head(s, 5, &size, &v, &deleted), 0);
	cr_assert_eq(v, 6ull << 32 | 1);
	cr_assert_eq(objstore_remove_at(s, 5, 6), 0);
	cr_assert_eq(objstore_head(s, 5, &size, &v, &deleted), 0);
	cr_assert(deleted);
	cr_assert_eq(v, 6ull << 32 | 2);
	cr_assert_eq(objstore_remove_at(s, 5, 6), -ENOENT, "gone already...");
	cr_assert_eq(objstore_head(s, 5, &size, &v, &deleted), 0);
	cr_assert_eq(v, 6ull << 32 | 3, "...but a retried removal is newer");
	cr_assert_eq(objstore_remove_at(s, 99, 6), -ENOENT);
}

Test(tombstone, create_and_write_with_create_replace_a_tombstone)
{
	char buf[4] = { 0 };
	uint64_t size, epoch;
	int deleted = 1;
	size_t got;

	cr_assert_eq(objstore_write(s, 3, 0, "old!", 4, 1, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_bury(s, 3, 2), 0);
	cr_assert_eq(objstore_write(s, 3, 1, "n", 1, 3, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_read(s, 3, 0, buf, 4, &got), 0);
	cr_assert_eq(got, 2);
	cr_assert_arr_eq(buf, ((char[]){ 0, 'n' }), 2, "nothing of the old object");
	cr_assert_eq(objstore_head(s, 3, &size, &epoch, &deleted), 0);
	cr_assert(!deleted);
	cr_assert_eq(epoch, 3ull << 32 | 1);
	cr_assert_eq(objstore_bury(s, 3, 4), 0);
	cr_assert_eq(objstore_create(s, 3, 5), 0);
	cr_assert_eq(objstore_create(s, 3, 5), -EEXIST);
}

Test(tombstone, listed_with_a_flag_and_removable)
{
	struct objstore_ent e[4];
	size_t n;

	cr_assert_eq(objstore_write(s, 1, 0, "a", 1, 1, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_write(s, 2, 0, "b", 1, 1, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_bury(s, 2, 6), 0);
	cr_assert_eq(objstore_list_ent(s, 0, 1, e, 4, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert(!e[0].deleted && e[0].size == 1 && e[0].version == (1ull << 32 | 1));
	cr_assert(e[1].deleted && e[1].version == 6);
	cr_assert_eq(objstore_remove(s, 2), 0);
	cr_assert_eq(objstore_list_ent(s, 0, 1, e, 4, &n), 0);
	cr_assert_eq(n, 1);
}

/* A full filesystem: a removal still works and gives the space back.
 * The store lives on a tmpfs of 2 MiB (needs root: skipped without). */
Test(tombstone, removal_on_a_full_disk_needs_no_space_and_frees_it)
{
	char *small = small_mnt, filler[128], buf[4096];
	struct statvfs sv;
	uint64_t size, v, avail0;
	int deleted = 0, fd, ret = 0;
	size_t got;

	snprintf(small, sizeof(small_mnt), "%s/small", dir);
	cr_assert_eq(mkdir(small, 0700), 0);
	if (mount("tmpfs", small, "tmpfs", 0, "size=2m,nr_inodes=300") < 0) {
		small[0] = '\0';
		cr_skip_test("cannot mount a tmpfs: %s", strerror(errno));
	}
	objstore_close(s);
	s = NULL;
	ret = objstore_open(small, MAX_OBJ, &s);
	cr_assert_eq(ret, 0, "open on the tmpfs: %s", strerror(-ret));
	memset(buf, 0x5a, sizeof(buf));
	for (uint64_t off = 0; off < (1u << 20); off += sizeof(buf))
		cr_assert_eq(objstore_write(s, 42, off, buf, sizeof(buf), 3,
					    OBJSTORE_CREATE), 0);
	/* Fill the rest, inodes too, so not even a tombstone file fits. */
	snprintf(filler, sizeof(filler), "%s/filler", small);
	fd = open(filler, O_WRONLY | O_CREAT, 0600);
	cr_assert(fd >= 0);
	while (write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
	close(fd);
	for (int i = 0; i < 300; i++) {
		snprintf(filler, sizeof(filler), "%s/f%d", small, i);
		if ((fd = open(filler, O_WRONLY | O_CREAT, 0600)) < 0)
			break;
		close(fd);
	}
	cr_assert_eq(objstore_write(s, 43, 0, buf, sizeof(buf), 3, OBJSTORE_CREATE),
		     -ENOSPC, "the disk is full");
	cr_assert_eq(statvfs(small, &sv), 0);
	avail0 = (uint64_t)sv.f_bavail * sv.f_frsize;

	ret = objstore_remove_at(s, 42, 4);
	cr_assert_eq(ret, 0, "removal on a full disk: %s", strerror(-ret));
	cr_assert_eq(objstore_read(s, 42, 0, buf, 1, &got), -ENOENT);
	cr_assert_eq(objstore_head(s, 42, &size, &v, &deleted), 0);
	cr_assert(deleted, "a tombstone");
	cr_assert_eq(v, 4ull << 32 | 1, "the next version, as any removal");
	cr_assert_eq(statvfs(small, &sv), 0);
	cr_assert_geq((uint64_t)sv.f_bavail * sv.f_frsize, avail0 + (1u << 20) - 64 * 1024,
		      "the object's MiB came back");
	/* and it stays a good tombstone for the next open */
	objstore_close(s);
	cr_assert_eq(objstore_open(small, MAX_OBJ, &s), 0);
	cr_assert_eq(objstore_head(s, 42, &size, &v, &deleted), 0);
	cr_assert(deleted);
}

/* ---- objects kept open between writes (struct obj_slot) ---- */

TestSuite(slots, .init = setup, .fini = teardown, .timeout = 60);

static int count_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

/* Each change that does not go through objstore_write is seen by the
 * next write: it never lands in a file that is no longer the object. */
Test(slots, removal_replace_and_burial_are_seen_by_the_next_write)
{
	char buf[8] = { 0 };
	size_t got;

	cr_assert_eq(objstore_write(s, 0x51, 0, "aaaa", 4, 1, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_write(s, 0x51, 4, "bbbb", 4, 1, 0), 0);     /* kept now */
	int fds = count_fds();

	cr_assert_eq(objstore_remove(s, 0x51), 0);
	cr_assert_eq(count_fds(), fds - 1, "a removed object's space is not held by a kept fd");
	cr_assert_eq(objstore_write(s, 0x51, 0, "c", 1, 1, 0), -ENOENT);

	cr_assert_eq(objstore_write(s, 0x51, 0, "dddd", 4, 1, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_write(s, 0x51, 4, "eeee", 4, 1, 0), 0);
	cr_assert_eq(objstore_replace(s, 0x51, "ffffffff", 8, 1ull << 32 | 9), 0);
	cr_assert_eq(objstore_write(s, 0x51, 2, "g", 1, 1, 0), 0);
	cr_assert_eq(objstore_read(s, 0x51, 0, buf, 8, &got), 0);
	cr_assert_eq(got, 8);
	cr_assert_arr_eq(buf, "ffgfffff", 8, "the write went to the replaced object");

	cr_assert_eq(objstore_remove_at(s, 0x51, 2), 0);
	cr_assert_eq(objstore_write(s, 0x51, 0, "h", 1, 2, 0), -ENOENT);
	cr_assert_eq(objstore_read(s, 0x51, 0, buf, 1, &got), -ENOENT);
}

/* A file unlinked or renamed over by someone else while the store keeps
 * it open: the next write goes to what the name holds now. */
Test(slots, a_file_changed_behind_the_store_is_not_written_through_the_old_fd)
{
	char path[256], tmp[300], buf[4];
	size_t got;

	cr_assert_eq(objstore_write(s, 0x52, 0, "abcd", 4, 1, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_write(s, 0x52, 0, "A", 1, 1, 0), 0);        /* kept */
	obj_file(0x52, path, sizeof(path));
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(objstore_write(s, 0x52, 1, "B", 1, 1, 0), -ENOENT);
	cr_assert_eq(objstore_write(s, 0x52, 1, "B", 1, 1, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_write(s, 0x52, 2, "C", 1, 1, 0), 0);        /* kept */
	cr_assert_eq(objstore_read(s, 0x52, 0, buf, 4, &got), 0);
	cr_assert_eq(got, 3);
	cr_assert_arr_eq(buf, ((char[]){ 0, 'B', 'C' }), 3);

	/* A copy renamed over the object, its header then damaged: the
	 * write must see the damage, not the kept copy's header. */
	snprintf(tmp, sizeof(tmp), "%s.copy", path);
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, tmp);
		cr_assert_eq(system(cmd), 0);
	}
	cr_assert_eq(rename(tmp, path), 0);
	file_flip_bit(0x52, 3, 1);
	cr_assert_eq(objstore_write(s, 0x52, 0, "D", 1, 1, 0), -EBADMSG);
	file_flip_bit(0x52, 3, 1);
	cr_assert_eq(objstore_write(s, 0x52, 0, "D", 1, 1, 0), 0);
	cr_assert_eq(objstore_read(s, 0x52, 0, buf, 3, &got), 0);
	cr_assert_arr_eq(buf, "DBC", 3);
}

/* Many objects written in turn: more than the slots, so objects are
 * closed and reopened; every write lands and no fd is left behind. */
Test(slots, more_objects_than_slots_keep_every_write_and_no_fd_leaks)
{
	enum { N = 1200, ROUNDS = 3 };
	int fds0 = count_fds();
	uint64_t v;
	size_t got;

	for (int r = 0; r < ROUNDS; r++)
		for (uint64_t oid = 1; oid <= N; oid++) {
			v = oid << 8 | (uint64_t)r;
			cr_assert_eq(objstore_write(s, oid, (uint64_t)r * 8, &v, 8, 1,
						    OBJSTORE_CREATE), 0);
		}
	cr_assert_leq(count_fds(), fds0 + 256 * 2, "at most OBJ_SLOTS per stripe open");
	for (uint64_t oid = 1; oid <= N; oid++)
		for (int r = 0; r < ROUNDS; r++) {
			cr_assert_eq(objstore_read(s, oid, (uint64_t)r * 8, &v, 8, &got), 0);
			cr_assert_eq(v, oid << 8 | (uint64_t)r, "oid %" PRIu64 " round %d", oid, r);
		}
	objstore_close(s);
	s = NULL;
	cr_assert_eq(count_fds(), fds0 - 1, "close closed every kept object (and the store dir)");
	cr_assert_eq(objstore_open(dir, MAX_OBJ, &s), 0);
}

/* ---- backed objects (docs/format.md "Backed objects") ---- */

TestSuite(backed, .init = setup, .fini = teardown);

/* Read all of @oid with its absent map; the present blocks must be
 * @want's, the absent ones exactly those @absent_want says. */
static void expect_backed(uint64_t oid, const unsigned char *want, size_t len,
			  const uint8_t *absent_want, uint32_t tag)
{
	unsigned char *got = malloc(len);
	uint8_t absent[NBLOCKS];
	uint64_t backing = 7;
	size_t n = 0;

	cr_assert_eq(objstore_read_map(s, oid, 0, got, len, &n, &backing, absent), 0, "%s", last_err);
	cr_assert_eq(n, len);
	cr_assert_eq(backing, tag);
	for (size_t b = 0; b < len / BLK; b++) {
		cr_assert_eq(absent[b], absent_want[b], "block %zu absent %u", b, absent[b]);
		if (!absent[b])
			cr_assert_eq(memcmp(got + b * BLK, want + b * BLK, BLK), 0,
				     "block %zu", b);
		else
			cr_assert_eq(read_block(oid, b), 0);
	}
	free(got);
}

Test(backed, put_writes_only_the_piece_and_partial_blocks_take_the_source)
{
	unsigned char src[8 * BLK], want[8 * BLK], piece[BLK + 104];
	uint8_t absent[8] = { 1, 1, 0, 0, 1, 1, 1, 1 };
	struct objstore_src sb = { src + 2 * BLK, src + 3 * BLK };
	struct objstore_stat st;

	fill_gen(src, 0, sizeof(src), 1);
	fill_gen(piece, 2 * BLK + 48, sizeof(piece), 2);
	/* without the source's blocks a partial piece cannot be laid */
	cr_assert_eq(objstore_put_backed(s, 0x81, 9, 8 * BLK, 2 * BLK + 48, piece,
					 sizeof(piece), NULL, 1), -ENODATA);
	cr_assert_eq(objstore_read(s, 0x81, 0, want, BLK, &(size_t){ 0 }), -ENOENT);
	cr_assert_eq(objstore_put_backed(s, 0x81, 9, 8 * BLK, 2 * BLK + 48, piece,
					 sizeof(piece), &sb, 1), 0);
	memcpy(want, src, sizeof(want));
	memcpy(want + 2 * BLK + 48, piece, sizeof(piece));
	expect_backed(0x81, want, sizeof(want), absent, 9);
	cr_assert_eq(objstore_verify(s, 0x81), 0);
	cr_assert_eq(objstore_stat(s, 0x81, &st), 0);
	cr_assert_eq(st.backing, 9);
	cr_assert_eq(st.size, 8 * BLK);
	/* a whole-block write needs no source; a partial one into an
	 * absent block does */
	fill_gen(want + 5 * BLK, 5 * BLK, BLK, 3);
	cr_assert_eq(objstore_write(s, 0x81, 5 * BLK, want + 5 * BLK, BLK, 2, 0), 0);
	absent[5] = 0;
	cr_assert_eq(objstore_write(s, 0x81, 6 * BLK + 16, want, 16, 2, 0), -ENODATA);
	sb.head = sb.tail = src + 6 * BLK;
	memcpy(want + 6 * BLK + 16, want, 16);
	cr_assert_eq(objstore_write_src(s, 0x81, 6 * BLK + 16, want, 16, 2, 0, &sb), 0);
	absent[6] = 0;
	expect_backed(0x81, want, sizeof(want), absent, 9);
	/* fill: the source's bytes into the absent blocks only */
	cr_assert_eq(objstore_unback(s, 0x81, 9), -EAGAIN);
	cr_assert_eq(objstore_fill(s, 0x81, 8, 0, src, sizeof(src)), -ESTALE);
	memset(src + 7 * BLK, 0, BLK);          /* a zero block of the source */
	memset(want + 7 * BLK, 0, BLK);
	cr_assert_eq(objstore_fill(s, 0x81, 9, 0, src, sizeof(src)), 0);
	cr_assert_eq(objstore_unback(s, 0x81, 9), 0);
	memset(absent, 0, sizeof(absent));
	expect_backed(0x81, want, sizeof(want), absent, 0);
	expect_read(0x81, 0, want, sizeof(want));
	cr_assert_eq(objstore_verify(s, 0x81), 0);
	cr_assert_eq(objstore_stat(s, 0x81, &st), 0);
	cr_assert_eq(st.backing, 0);
	cr_assert_eq(st.version, 2ull << 32 | 2);  /* kept by fill */
	cr_assert_eq(objstore_unback(s, 0x81, 9), -ESTALE);
}

Test(backed, an_interrupted_first_write_of_an_absent_block_is_absent_again)
{
	unsigned char src[2 * BLK], g[BLK];
	uint8_t absent[2] = { 1, 1 };
	uint32_t flags;

	fill_gen(src, 0, sizeof(src), 1);
	cr_assert_eq(objstore_put_backed(s, 0x82, 5, 2 * BLK, 0, NULL, 0, NULL, 1), 0);
	fill_gen(g, 0, BLK, 2);
	/* What a kill during a first write of g into block 0 leaves before
	 * its data landed: the header dirty, the entry {g, 0}, zeros. */
	file_set_u64(0x82, TAB_OFF, csum64(g, BLK));
	file_pread(0x82, &flags, 4, HDR_FLAGS_OFF);
	file_set_u32(0x82, HDR_FLAGS_OFF, flags | HDR_F_DIRTY);
	file_fix_hdr_csum(0x82);
	expect_backed(0x82, src, sizeof(src), absent, 5);
	cr_assert_eq(objstore_verify(s, 0x82), 0);
	/* the next write settles it back to absent */
	cr_assert_eq(objstore_write(s, 0x82, BLK, src + BLK, BLK, 2, 0), 0);
	absent[1] = 0;
	expect_backed(0x82, src, sizeof(src), absent, 5);
	expect_entry(0x82, 0, 0, 0);
	/* and once its data landed, it is the new block (the store
	 * reopened: it keeps written objects' headers open) */
	objstore_close(s);
	cr_assert_eq(objstore_open(dir, MAX_OBJ, &s), 0);
	file_set_u64(0x82, TAB_OFF, csum64(g, BLK));
	file_pwrite(0x82, g, BLK, DATA_OFF);
	file_pread(0x82, &flags, 4, HDR_FLAGS_OFF);
	file_set_u32(0x82, HDR_FLAGS_OFF, flags | HDR_F_DIRTY);
	file_fix_hdr_csum(0x82);
	cr_assert_eq(objstore_write(s, 0x82, BLK, src + BLK, BLK, 3, 0), 0);
	memcpy(src, g, BLK);
	absent[0] = 0;
	expect_backed(0x82, src, sizeof(src), absent, 5);
	/* a replace makes an ordinary object */
	cr_assert_eq(objstore_put(s, 0x82, src, sizeof(src), 4), 0);
	expect_backed(0x82, src, sizeof(src), absent, 0);
}

/* objstore_verify_part from block 0 in parts of @part blocks; the csum
 * over the checksums as objstore_stat's. 0 or the first error. */
static int verify_in_parts(uint64_t oid, size_t part, struct objstore_stat *out,
			   unsigned *parts)
{
	static uint64_t csums[NBLOCKS];
	uint64_t b0 = 0, next;
	int ret;

	*parts = 0;
	do {
		ret = objstore_verify_part(s, oid, b0, part, csums, NBLOCKS, out, &next);
		if (ret)
			return ret;
		(*parts)++;
		b0 = next;
	} while (next);
	out->csum = csum64(csums, (out->size + BLK - 1) / BLK * sizeof(*csums));
	return 0;
}

Test(parts, verify_in_parts_gives_stat_s_csum_and_finds_the_bad_block)
{
	struct objstore_stat whole, parted, table;
	unsigned char *buf = malloc(10 * BLK + 77);
	unsigned parts;

	cr_assert_not_null(buf);
	fill_random(buf, 10 * BLK + 77, &(unsigned){ 5 });
	cr_assert_eq(objstore_write(s, 0x90, 0, buf, 10 * BLK + 77, 4, OBJSTORE_CREATE), 0);
	cr_assert_eq(objstore_write(s, 0x90, 3 * BLK, buf, 100, 4, 0), 0);
	cr_assert_eq(objstore_stat(s, 0x90, &whole), 0);
	cr_assert_eq(verify_in_parts(0x90, 4, &parted, &parts), 0);
	cr_assert_eq(parts, 3, "11 blocks in parts of 4");
	cr_assert_eq(parted.csum, whole.csum);
	cr_assert_eq(parted.version, whole.version);
	cr_assert_eq(parted.size, whole.size);
	cr_assert_eq(verify_in_parts(0x90, 64, &parted, &parts), 0);
	cr_assert_eq(parts, 1);
	cr_assert_eq(parted.csum, whole.csum);
	/* the table alone says the same of a clean object */
	cr_assert_eq(objstore_stat_table(s, 0x90, &table), 0);
	cr_assert_eq(table.csum, whole.csum);
	cr_assert_eq(table.version, whole.version);
	/* an empty object: one part, the csum of nothing */
	cr_assert_eq(objstore_create(s, 0x91, 1), 0);
	cr_assert_eq(verify_in_parts(0x91, 4, &parted, &parts), 0);
	cr_assert_eq(objstore_stat(s, 0x91, &whole), 0);
	cr_assert_eq(parted.csum, whole.csum);
	cr_assert_eq(parts, 1);
	/* rot in block 9: the third part fails, the table does not know */
	file_flip_bit(0x90, DATA_OFF + 9 * BLK + 5, 2);
	cr_assert_eq(verify_in_parts(0x90, 4, &parted, &parts), -EBADMSG);
	cr_assert_eq(parts, 2);
	cr_assert_eq(objstore_stat_table(s, 0x90, &table), 0);
	cr_assert_eq(objstore_stat(s, 0x90, &whole), -EBADMSG);
	cr_assert_eq(verify_in_parts(0x92, 4, &parted, &parts), -ENOENT);
	cr_assert_eq(objstore_stat_table(s, 0x92, &table), -ENOENT);
	free(buf);
}

Test(parts, the_table_csum_of_an_interrupted_write_is_unknown)
{
	unsigned char g1[2 * BLK], g2[2 * BLK];
	struct objstore_stat table;

	fill_gen(g1, 0, 2 * BLK, 1);
	fill_gen(g2, 0, 2 * BLK, 2);
	cr_assert_eq(objstore_write(s, 0x93, 0, g1, 2 * BLK, 1, OBJSTORE_CREATE), 0);
	file_set_u64(0x93, TAB_OFF, csum64(g2, BLK));
	file_set_u64(0x93, TAB_OFF + 8, csum64(g1, BLK));
	file_set_u32(0x93, HDR_FLAGS_OFF, HDR_F_DIRTY);
	file_fix_hdr_csum(0x93);
	cr_assert_eq(objstore_stat_table(s, 0x93, &table), 0);
	cr_assert_eq(table.csum, 0);
	cr_assert_eq(objstore_verify(s, 0x93), 0, "old data still reads");
}

/* A backed copy's table csum is unknown (0: its absent blocks are the
 * source's, not the zeros the table says), and a verify in parts says
 * it is backed: scrub then does not compare it with its peers. */
Test(backed, the_table_csum_of_a_backed_copy_is_unknown)
{
	unsigned char src[8 * BLK], piece[BLK];
	struct objstore_src sb = { NULL, NULL };
	struct objstore_stat table, part;
	uint64_t csums[8], next = 1;

	fill_gen(src, 0, sizeof(src), 4);
	fill_gen(piece, 2 * BLK, sizeof(piece), 5);
	cr_assert_eq(objstore_put_backed(s, 0x94, 6, 8 * BLK, 2 * BLK, piece, sizeof(piece),
					 &sb, 1), 0);
	cr_assert_eq(objstore_stat_table(s, 0x94, &table), 0);
	cr_assert_eq(table.csum, 0);
	cr_assert_eq(table.backing, 6);
	cr_assert_eq(objstore_verify_part(s, 0x94, 0, 8, csums, 8, &part, &next), 0);
	cr_assert_eq(part.backing, 6);
	cr_assert_eq(next, 0);
	cr_assert_eq(objstore_fill(s, 0x94, 6, 0, src, sizeof(src)), 0);
	cr_assert_eq(objstore_unback(s, 0x94, 6), 0);
	cr_assert_eq(objstore_stat_table(s, 0x94, &table), 0);
	cr_assert_neq(table.csum, 0, "an ordinary copy's table csum is known");
	cr_assert_eq(table.backing, 0);
}
