/*
 * data_test.c - posix_data: read and write at any offset and size
 * (object boundaries of 4 MiB included), sparse files and
 * SEEK_DATA/SEEK_HOLE, fallocate (allocate, punch hole, zero range), copy_file_range,
 * fsync, mmap MAP_SHARED with msync, O_APPEND (also from two threads),
 * O_DIRECT, O_SYNC, large offsets (> 4 GiB, > 8 GiB, 1 PiB).
 */
#include <criterion/logging.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/posix/posix.h"

POSIX_SUITE(data);

#define KB (1ll << 10)
#define MB (1ll << 20)
#define GB (1ll << 30)

static char *rnd(size_t len, uint64_t seed)
{
	char *p = malloc(len);

	cr_assert(p);
	tfill_random(p, len, seed);
	return p;
}

static void assert_zero(const char *buf, size_t len, long long at)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i])
			cr_assert_fail("byte at %lld is %d, expected 0 (a hole)",
				       at + (long long)i, buf[i]);
}

/* ---- read and write ---- */

Test(data, writes_at_unaligned_offsets_read_back)
{
	static const struct { long long off, len; } w[] = {
		{ 0, 1 }, { 1, 4095 }, { 4095, 2 }, { 7000, 70000 },
		{ 4 * MB - 3, 7 }, { 4 * MB + 1, 12345 }, { 12 * MB - 100, 200 },
	};
	char *model = calloc(1, 13 * MB), *back = malloc(13 * MB);
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	long long size = 0;

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		char *buf = rnd((size_t)w[i].len, 100 + i);

		pwrite_all(fd, buf, (size_t)w[i].len, w[i].off);
		memcpy(model + w[i].off, buf, (size_t)w[i].len);
		if (w[i].off + w[i].len > size)
			size = w[i].off + w[i].len;
		free(buf);
	}
	cr_assert_eq(sx_fd(fd).stx_size, (uint64_t)size);
	pread_all(fd, back, (size_t)size, 0);
	cr_assert_arr_eq(back, model, (size_t)size);
	close(fd);
	/* and through a new open, after close */
	fd = ASSERT_OK(open("f", O_RDONLY));
	memset(back, 0, (size_t)size);
	pread_all(fd, back, (size_t)size, 0);
	cr_assert_arr_eq(back, model, (size_t)size);
	close(fd);
	free(model);
	free(back);
}

Test(data, one_write_spanning_three_objects_reads_back)
{
	size_t len = 9 * MB;
	char *buf = rnd(len, 5), *back = malloc(len);
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	cr_assert_eq(ASSERT_OK(pwrite(fd, buf, len, 3 * MB + 17)), (long)len,
		     "a 9 MiB write was short");
	pread_all(fd, back, len, 3 * MB + 17);
	cr_assert_arr_eq(back, buf, len);
	close(fd);
	free(buf);
	free(back);
}

Test(data, read_at_and_past_the_end_is_short_then_empty)
{
	char buf[100];
	int fd;

	put_str("f", "0123456789");
	fd = ASSERT_OK(open("f", O_RDONLY));
	cr_assert_eq(ASSERT_OK(pread(fd, buf, sizeof(buf), 4)), 6);
	cr_assert_eq(ASSERT_OK(pread(fd, buf, sizeof(buf), 10)), 0);
	cr_assert_eq(ASSERT_OK(pread(fd, buf, sizeof(buf), 1 << 30)), 0);
	cr_assert_eq(ASSERT_OK(read(fd, buf, 3)), 3);
	cr_assert_eq(ASSERT_OK(read(fd, buf, sizeof(buf))), 7);
	cr_assert_eq(ASSERT_OK(read(fd, buf, sizeof(buf))), 0);
	close(fd);
}

Test(data, two_fds_of_one_file_see_each_others_writes)
{
	int a = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	int b = ASSERT_OK(open("f", O_RDWR));
	char buf[8] = { 0 };

	cr_assert_eq(ASSERT_OK(pwrite(a, "abcd", 4, 0)), 4);
	cr_assert_eq(ASSERT_OK(pread(b, buf, sizeof(buf), 0)), 4);
	cr_assert_str_eq(buf, "abcd");
	cr_assert_eq(ASSERT_OK(pwrite(b, "XY", 2, 6)), 2);
	cr_assert_eq(sx_fd(a).stx_size, 8);
	memset(buf, 1, sizeof(buf));
	cr_assert_eq(ASSERT_OK(pread(a, buf, sizeof(buf), 0)), 8);
	cr_assert(memcmp(buf, "abcd\0\0XY", 8) == 0);
	close(a);
	close(b);
}

Test(data, wrong_access_mode_is_ebadf)
{
	char c;
	int r, w;

	put_str("f", "x");
	r = ASSERT_OK(open("f", O_RDONLY));
	w = ASSERT_OK(open("f", O_WRONLY));
	ASSERT_ERRNO(write(r, "y", 1), EBADF);
	ASSERT_ERRNO(read(w, &c, 1), EBADF);
	ASSERT_ERRNO(fallocate(r, 0, 0, 4096), EBADF);
	close(r);
	close(w);
	cr_assert_str_eq(get("f", NULL), "x");
}

Test(data, parallel_writers_to_separate_ranges_keep_every_byte)
{
	enum { PER = 6, CHUNK = 1 << 20 };
	char *buf = rnd(2 * PER * CHUNK, 9), *back = malloc(2 * PER * CHUNK);
	int fds[2];
	pid_t kids[2];

	fds[0] = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	fds[1] = ASSERT_OK(open("f", O_RDWR));
	/* two processes, interleaving chunk by chunk */
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		cr_assert(kids[k] >= 0);
		if (kids[k] == 0) {
			for (int i = 0; i < PER; i++) {
				off_t off = (off_t)(2 * i + k) * CHUNK;

				if (pwrite(fds[k], buf + off, CHUNK, off) != CHUNK)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < 2; k++)
		cr_assert_eq(posix_child_wait(kids[k]), 0, "writer %d failed", k);
	pread_all(fds[0], back, 2 * PER * CHUNK, 0);
	cr_assert_arr_eq(back, buf, 2 * PER * CHUNK);
	close(fds[0]);
	close(fds[1]);
}

Test(data, sizes_from_two_fds_stick_whichever_closes_first)
{
	int a = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	int b = ASSERT_OK(open("f", O_RDWR));

	cr_assert_eq(ASSERT_OK(pwrite(a, "aaaa", 4, 0)), 4);
	ASSERT_OK(close(a));
	cr_assert_eq(ASSERT_OK(pwrite(b, "bbbb", 4, 10)), 4);
	cr_assert_eq(sx("f").stx_size, 14);
	a = ASSERT_OK(open("f", O_RDWR));
	cr_assert_eq(ASSERT_OK(pwrite(a, "cc", 2, 20)), 2);
	ASSERT_OK(close(b));
	cr_assert_eq(sx("f").stx_size, 22);
	ASSERT_OK(close(a));
	cr_assert_eq(sx("f").stx_size, 22);
}

Test(data, a_truncate_through_one_fd_wins_over_an_earlier_write_through_another)
{
	int a = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	int b = ASSERT_OK(open("f", O_RDWR));
	char buf[200];

	memset(buf, 'w', sizeof(buf));
	pwrite_all(a, buf, 100, 0);
	ASSERT_OK(ftruncate(b, 50));
	cr_assert_eq(sx_fd(a).stx_size, 50);
	ASSERT_OK(close(a));
	cr_assert_eq(sx("f").stx_size, 50, "closing the writer brought the old size back");
	cr_assert_eq(ASSERT_OK(pread(b, buf, sizeof(buf), 0)), 50);
	ASSERT_OK(close(b));
}

Test(data, o_append_after_a_truncate_from_another_fd_starts_at_the_new_end)
{
	int ap = ASSERT_OK(open("f", O_WRONLY | O_CREAT | O_APPEND, 0644));
	int tr = ASSERT_OK(open("f", O_WRONLY));

	cr_assert_eq(ASSERT_OK(write(ap, "0123456789", 10)), 10);
	ASSERT_OK(ftruncate(tr, 4));
	cr_assert_eq(ASSERT_OK(write(ap, "ab", 2)), 2);
	close(ap);
	close(tr);
	cr_assert_str_eq(get("f", NULL), "0123ab");
}

Test(data, old_data_never_shows_through_after_o_trunc)
{
	size_t len = 10 * MB;
	char *buf = rnd(len, 37), *back = malloc(len);
	int fd;

	put("f", buf, len);
	fd = ASSERT_OK(open("f", O_RDWR | O_TRUNC));
	cr_assert_eq(ASSERT_OK(pwrite(fd, "end", 3, 8 * MB)), 3);
	ASSERT_OK(close(fd));
	fd = ASSERT_OK(open("f", O_RDONLY));
	cr_assert_eq(sx_fd(fd).stx_size, 8 * MB + 3);
	pread_all(fd, back, 8 * MB + 3, 0);
	assert_zero(back, 8 * MB, 0);
	cr_assert(memcmp(back + 8 * MB, "end", 3) == 0);
	close(fd);
	free(buf);
	free(back);
}

Test(data, old_data_never_shows_through_after_shrinking_and_regrowing)
{
	size_t len = 9 * MB;
	char *buf = rnd(len, 41), *back = malloc(len);
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	pwrite_all(fd, buf, len, 0);
	ASSERT_OK(close(fd));
	ASSERT_OK(truncate("f", 0));
	ASSERT_OK(truncate("f", len));
	fd = ASSERT_OK(open("f", O_RDONLY));
	pread_all(fd, back, len, 0);
	assert_zero(back, len, 0);
	close(fd);
	free(buf);
	free(back);
}

/* ---- sparse files ---- */

Test(data, a_write_past_the_end_leaves_a_hole_of_zeros)
{
	char *back = malloc(6 * MB);
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	cr_assert_eq(ASSERT_OK(pwrite(fd, "head", 4, 0)), 4);
	cr_assert_eq(ASSERT_OK(pwrite(fd, "tail", 4, 6 * MB)), 4);
	cr_assert_eq(sx_fd(fd).stx_size, 6 * MB + 4);
	pread_all(fd, back, 6 * MB, 0);
	cr_assert(memcmp(back, "head", 4) == 0);
	assert_zero(back + 4, 6 * MB - 4, 4);
	close(fd);
	free(back);
}

Test(data, seek_data_and_seek_hole_find_the_data_of_a_sparse_file)
{
	char buf[4096];
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	off_t h, d, h2;

	tfill_random(buf, sizeof(buf), 11);
	pwrite_all(fd, buf, sizeof(buf), 0);
	pwrite_all(fd, buf, sizeof(buf), 64 * MB);
	ASSERT_OK(ftruncate(fd, 128 * MB));
	cr_assert_eq(ASSERT_OK(lseek(fd, 0, SEEK_DATA)), 0);
	h = ASSERT_OK(lseek(fd, 0, SEEK_HOLE));
	cr_assert(h >= 4096 && h < 64 * MB, "first hole at %lld", (long long)h);
	d = ASSERT_OK(lseek(fd, h, SEEK_DATA));
	cr_assert(d > h && d <= 64 * MB, "data after the hole at %lld", (long long)d);
	cr_assert_eq(ASSERT_OK(lseek(fd, 64 * MB + 100, SEEK_DATA)), 64 * MB + 100,
		     "inside data SEEK_DATA stays");
	h2 = ASSERT_OK(lseek(fd, 64 * MB, SEEK_HOLE));
	cr_assert(h2 >= 64 * MB + 4096 && h2 <= 128 * MB, "hole after the data at %lld",
		  (long long)h2);
	ASSERT_ERRNO(lseek(fd, 64 * MB + 4096, SEEK_DATA), ENXIO);
	close(fd);
}

Test(data, seek_data_and_seek_hole_at_or_past_the_end_are_enxio)
{
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	ASSERT_ERRNO(lseek(fd, 0, SEEK_DATA), ENXIO);
	ASSERT_ERRNO(lseek(fd, 0, SEEK_HOLE), ENXIO);
	cr_assert_eq(ASSERT_OK(write(fd, "0123456789", 10)), 10);
	ASSERT_ERRNO(lseek(fd, 10, SEEK_DATA), ENXIO);
	ASSERT_ERRNO(lseek(fd, 10, SEEK_HOLE), ENXIO);
	ASSERT_ERRNO(lseek(fd, -1, SEEK_DATA), ENXIO);
	cr_assert_eq(ASSERT_OK(lseek(fd, 3, SEEK_HOLE)), 10, "the end is a hole");
	cr_assert_eq(ASSERT_OK(lseek(fd, 3, SEEK_DATA)), 3);
	close(fd);
}

Test(data, lseek_with_a_bad_whence_or_negative_result_is_einval)
{
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	ASSERT_ERRNO(lseek(fd, 0, 42), EINVAL);
	ASSERT_ERRNO(lseek(fd, -1, SEEK_SET), EINVAL);
	ASSERT_ERRNO(lseek(fd, -1, SEEK_END), EINVAL);
	cr_assert_eq(ASSERT_OK(lseek(fd, 5 * GB, SEEK_SET)), 5 * GB, "seeking past the end is fine");
	close(fd);
}

/* ---- fallocate ---- */

Test(data, fallocate_extends_the_size_with_zeros)
{
	char back[8192];
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	cr_assert_eq(ASSERT_OK(write(fd, "abc", 3)), 3);
	ASSERT_OK(fallocate(fd, 0, 0, 8192));
	cr_assert_eq(sx_fd(fd).stx_size, 8192);
	pread_all(fd, back, sizeof(back), 0);
	cr_assert(memcmp(back, "abc", 3) == 0, "fallocate changed data");
	assert_zero(back + 3, sizeof(back) - 3, 3);
	ASSERT_OK(fallocate(fd, 0, 100, 10));
	cr_assert_eq(sx_fd(fd).stx_size, 8192, "allocating inside must not shrink");
	close(fd);
	cr_assert_eq(sx("f").stx_size, 8192);
}

Test(data, fallocate_keep_size_leaves_the_size)
{
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	cr_assert_eq(ASSERT_OK(write(fd, "abc", 3)), 3);
	ASSERT_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 10 * MB));
	cr_assert_eq(sx_fd(fd).stx_size, 3);
	close(fd);
	cr_assert_str_eq(get("f", NULL), "abc");
}

Test(data, punch_hole_zeroes_the_range_and_keeps_the_size)
{
	size_t len = 12 * MB;
	char *buf = rnd(len, 13), *back = malloc(len);
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	pwrite_all(fd, buf, len, 0);
	/* a part of object 0, all of object 1, a part of object 2 */
	ASSERT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1 * MB, 9 * MB));
	cr_assert_eq(sx_fd(fd).stx_size, len);
	pread_all(fd, back, len, 0);
	cr_assert_arr_eq(back, buf, 1 * MB, "before the hole");
	assert_zero(back + 1 * MB, 9 * MB, 1 * MB);
	cr_assert_arr_eq(back + 10 * MB, buf + 10 * MB, 2 * MB, "after the hole");
	close(fd);
	/* and the same through a new open */
	fd = ASSERT_OK(open("f", O_RDONLY));
	pread_all(fd, back, len, 0);
	assert_zero(back + 1 * MB, 9 * MB, 1 * MB);
	cr_assert_arr_eq(back + 10 * MB, buf + 10 * MB, 2 * MB);
	close(fd);
	free(buf);
	free(back);
}

Test(data, punch_hole_past_the_end_zeroes_the_tail_only)
{
	char buf[10000], back[10000];
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	tfill_random(buf, sizeof(buf), 17);
	pwrite_all(fd, buf, sizeof(buf), 0);
	ASSERT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 9000, 1 * MB));
	cr_assert_eq(sx_fd(fd).stx_size, sizeof(buf));
	pread_all(fd, back, sizeof(back), 0);
	cr_assert_arr_eq(back, buf, 9000);
	assert_zero(back + 9000, 1000, 9000);
	close(fd);
}

Test(data, punch_hole_without_keep_size_is_eopnotsupp)
{
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	cr_assert_eq(ASSERT_OK(write(fd, "abc", 3)), 3);
	ASSERT_ERRNO(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 3), EOPNOTSUPP);
	cr_assert_eq(sx_fd(fd).stx_size, 3);
	close(fd);
}

Test(data, zero_range_zeroes_across_objects)
{
	size_t len = 12 * MB;
	char *buf = rnd(len, 19), *back = malloc(len);
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	pwrite_all(fd, buf, len, 0);
	/* QEMU's write-zeroes and fallocate -z: part of object 0, all of
	 * object 1, part of object 2; the size stays */
	ASSERT_OK(fallocate(fd, FALLOC_FL_ZERO_RANGE, 3 * MB + 5, 6 * MB));
	cr_assert_eq(sx_fd(fd).stx_size, len);
	pread_all(fd, back, len, 0);
	cr_assert_arr_eq(back, buf, 3 * MB + 5, "before the range");
	assert_zero(back + 3 * MB + 5, 6 * MB, 3 * MB + 5);
	cr_assert_arr_eq(back + 9 * MB + 5, buf + 9 * MB + 5, 3 * MB - 5, "after the range");
	close(fd);
	fd = ASSERT_OK(open("f", O_RDONLY));
	pread_all(fd, back, len, 0);
	assert_zero(back + 3 * MB + 5, 6 * MB, 3 * MB + 5);
	close(fd);
	free(buf);
	free(back);
}

Test(data, zero_range_past_the_end_grows_unless_keep_size)
{
	char buf[10000], back[20000];
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	tfill_random(buf, sizeof(buf), 23);
	pwrite_all(fd, buf, sizeof(buf), 0);
	ASSERT_OK(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 9000, 1 * MB));
	cr_assert_eq(sx_fd(fd).stx_size, sizeof(buf));
	ASSERT_OK(fallocate(fd, FALLOC_FL_ZERO_RANGE, 8000, 12000));
	cr_assert_eq(sx_fd(fd).stx_size, 20000);
	pread_all(fd, back, sizeof(back), 0);
	cr_assert_arr_eq(back, buf, 8000);
	assert_zero(back + 8000, 12000, 8000);
	close(fd);
	cr_assert_eq(sx("f").stx_size, 20000);
}

Test(data, fallocate_with_a_bad_range_is_einval)
{
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	ASSERT_ERRNO(fallocate(fd, 0, 0, 0), EINVAL);
	ASSERT_ERRNO(fallocate(fd, 0, -1, 10), EINVAL);
	ASSERT_ERRNO(fallocate(fd, 0, 10, -1), EINVAL);
	cr_assert_eq(sx_fd(fd).stx_size, 0);
	close(fd);
}

/* ---- copy_file_range ---- */

Test(data, copy_file_range_copies_between_files_at_offsets)
{
	size_t len = 6 * MB + 333;
	char *buf = rnd(len, 19), *back = malloc(len);
	int in, out;
	loff_t oi = 1000, oo = 5;
	size_t done = 0;

	put("src", buf, len);
	put_str("dst", "01234");
	in = ASSERT_OK(open("src", O_RDONLY));
	out = ASSERT_OK(open("dst", O_WRONLY));
	while (done < len - 1000) {
		ssize_t n = ASSERT_OK(copy_file_range(in, &oi, out, &oo, len - 1000 - done, 0));

		cr_assert_gt(n, 0, "copy_file_range made no progress at %zu", done);
		done += (size_t)n;
	}
	cr_assert_eq(oi, (loff_t)len);
	cr_assert_eq(oo, (loff_t)(5 + len - 1000));
	close(in);
	close(out);
	cr_assert_eq(sx("dst").stx_size, 5 + len - 1000);
	in = ASSERT_OK(open("dst", O_RDONLY));
	pread_all(in, back, len - 1000, 5);
	cr_assert_arr_eq(back, buf + 1000, len - 1000);
	pread_all(in, back, 5, 0);
	cr_assert(memcmp(back, "01234", 5) == 0);
	close(in);
	free(buf);
	free(back);
}

Test(data, copy_file_range_stops_at_the_end_of_the_source)
{
	int in, out;
	loff_t oi = 6, oo = 0;

	put_str("src", "0123456789");
	in = ASSERT_OK(open("src", O_RDONLY));
	out = ASSERT_OK(open("dst", O_WRONLY | O_CREAT, 0644));
	cr_assert_eq(ASSERT_OK(copy_file_range(in, &oi, out, &oo, 100, 0)), 4);
	cr_assert_eq(ASSERT_OK(copy_file_range(in, &oi, out, &oo, 100, 0)), 0);
	close(in);
	close(out);
	cr_assert_str_eq(get("dst", NULL), "6789");
}

Test(data, copy_file_range_within_one_file)
{
	int fd;
	loff_t a = 0, b = 20;

	put_str("f", "abcdefghij");
	fd = ASSERT_OK(open("f", O_RDWR));
	cr_assert_eq(ASSERT_OK(copy_file_range(fd, &a, fd, &b, 10, 0)), 10);
	close(fd);
	cr_assert_eq(sx("f").stx_size, 30);
	fd = ASSERT_OK(open("f", O_RDONLY));
	char back[30];
	pread_all(fd, back, 30, 0);
	close(fd);
	cr_assert(memcmp(back, "abcdefghij", 10) == 0);
	assert_zero(back + 10, 10, 10);
	cr_assert(memcmp(back + 20, "abcdefghij", 10) == 0);
}

Test(data, copy_file_range_with_flags_or_bad_fds_fails)
{
	int in, out, dir;
	loff_t oi = 0, oo = 0;

	put_str("src", "x");
	in = ASSERT_OK(open("src", O_RDONLY));
	out = ASSERT_OK(open("dst", O_WRONLY | O_CREAT, 0644));
	xmkdir("d", 0755);
	dir = ASSERT_OK(open("d", O_RDONLY));
	ASSERT_ERRNO(copy_file_range(in, &oi, out, &oo, 1, 1), EINVAL);
	ASSERT_ERRNO(copy_file_range(out, &oi, in, &oo, 1, 0), EBADF);
	ASSERT_ERRNO(copy_file_range(dir, &oi, out, &oo, 1, 0), EISDIR);
	close(in);
	close(out);
	close(dir);
}

/* ---- fsync, O_SYNC, O_DIRECT ---- */

Test(data, fsync_and_fdatasync_succeed_on_files_and_dirs)
{
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	int ro, dir;

	cr_assert_eq(ASSERT_OK(write(fd, "abc", 3)), 3);
	ASSERT_OK(fsync(fd));
	ASSERT_OK(fdatasync(fd));
	cr_assert_eq(sx_fd(fd).stx_size, 3);
	ro = ASSERT_OK(open("f", O_RDONLY));
	ASSERT_OK(fsync(ro));
	dir = ASSERT_OK(open(".", O_RDONLY | O_DIRECTORY));
	ASSERT_OK(fsync(dir));
	ASSERT_OK(syncfs(fd));
	close(dir);
	close(ro);
	close(fd);
}

Test(data, o_sync_writes_are_visible_with_their_size_at_once)
{
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT | O_SYNC, 0644));
	char *buf = rnd(5 * MB, 23), *back = malloc(5 * MB);

	pwrite_all(fd, buf, 5 * MB, 100);
	cr_assert_eq(sx("f").stx_size, 5 * MB + 100);
	pread_all(fd, back, 5 * MB, 100);
	cr_assert_arr_eq(back, buf, 5 * MB);
	close(fd);
	free(buf);
	free(back);
}

Test(data, o_direct_aligned_io_round_trips)
{
	size_t len = 1 * MB + 8192;
	void *buf, *back;
	int fd;
	char *plain = malloc(len);

	cr_assert_eq(posix_memalign(&buf, 4096, len), 0);
	cr_assert_eq(posix_memalign(&back, 4096, len), 0);
	tfill_random(buf, len, 29);
	fd = ASSERT_OK(open("f", O_RDWR | O_CREAT | O_DIRECT, 0644));
	cr_assert_eq(ASSERT_OK(pwrite(fd, buf, len, 3 * 4096)), (long)len);
	cr_assert_eq(ASSERT_OK(pread(fd, back, len, 3 * 4096)), (long)len);
	cr_assert_arr_eq(back, buf, len);
	cr_assert_eq(sx_fd(fd).stx_size, 3 * 4096 + len);
	close(fd);
	fd = ASSERT_OK(open("f", O_RDONLY));
	pread_all(fd, plain, len, 3 * 4096);
	cr_assert_arr_eq(plain, buf, len, "buffered read after O_DIRECT write");
	close(fd);
	free(buf);
	free(back);
	free(plain);
}

Test(data, o_direct_and_buffered_fds_stay_coherent)
{
	void *buf;
	int d, b;
	char back[4096];

	cr_assert_eq(posix_memalign(&buf, 4096, 4096), 0);
	d = ASSERT_OK(open("f", O_RDWR | O_CREAT | O_DIRECT, 0644));
	b = ASSERT_OK(open("f", O_RDWR));
	memset(buf, 'b', 4096);
	pwrite_all(b, buf, 4096, 0);          /* buffered first, then read direct */
	memset(buf, 0, 4096);
	cr_assert_eq(ASSERT_OK(pread(d, buf, 4096, 0)), 4096);
	cr_assert_eq(((char *)buf)[4095], 'b');
	memset(buf, 'd', 4096);
	cr_assert_eq(ASSERT_OK(pwrite(d, buf, 4096, 0)), 4096);
	pread_all(b, back, 4096, 0);
	cr_assert_eq(back[0], 'd', "a buffered read after a direct write");
	close(d);
	close(b);
	free(buf);
}

/* ---- mmap ---- */

Test(data, a_shared_mapping_write_reaches_the_file_after_msync)
{
	size_t len = 9 * MB + 100;     /* pages in three objects */
	char *buf = rnd(len, 31), *back, *p;
	int fd;

	put("f", buf, len);
	fd = ASSERT_OK(open("f", O_RDWR));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert(p != MAP_FAILED, "mmap: %s", errname(errno));
	cr_assert_arr_eq(p, buf, len, "the mapping shows the file");
	for (size_t i = 0; i < len; i += 1000) {       /* every page, some twice */
		p[i] = (char)~p[i];
		buf[i] = (char)~buf[i];
	}
	ASSERT_OK(msync(p, len, MS_SYNC));
	ASSERT_OK(munmap(p, len));
	close(fd);
	cr_assert_eq(sx("f").stx_size, len, "a mapping must not change the size");
	back = get("f", &len);
	cr_assert_arr_eq(back, buf, len);
	free(buf);
	free(back);
}

Test(data, a_mapping_sees_a_later_write)
{
	int fd;
	char *p;

	put_str("f", "0123456789");
	fd = ASSERT_OK(open("f", O_RDWR));
	p = mmap(NULL, 10, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert(p != MAP_FAILED, "mmap: %s", errname(errno));
	cr_assert_eq(p[5], '5');
	cr_assert_eq(ASSERT_OK(pwrite(fd, "X", 1, 5)), 1);
	cr_assert_eq(p[5], 'X');
	munmap(p, 10);
	close(fd);
}

/* ---- O_APPEND ---- */

Test(data, o_append_writes_at_the_end_whatever_the_offset)
{
	int fd;

	put_str("f", "start");
	fd = ASSERT_OK(open("f", O_WRONLY | O_APPEND));
	ASSERT_OK(lseek(fd, 0, SEEK_SET));
	cr_assert_eq(ASSERT_OK(write(fd, "+one", 4)), 4);
	cr_assert_eq(ASSERT_OK(lseek(fd, 0, SEEK_CUR)), 9);
	cr_assert_eq(ASSERT_OK(pwrite(fd, "+two", 4, 0)), 4, "Linux appends pwrite too");
	close(fd);
	cr_assert_str_eq(get("f", NULL), "start+one+two");
}

Test(data, o_append_from_two_fds_interleaves_whole_writes)
{
	int a, b;

	a = ASSERT_OK(open("f", O_WRONLY | O_CREAT | O_APPEND, 0644));
	b = ASSERT_OK(open("f", O_WRONLY | O_APPEND));
	cr_assert_eq(ASSERT_OK(write(a, "aa", 2)), 2);
	cr_assert_eq(ASSERT_OK(write(b, "bbb", 3)), 3);
	cr_assert_eq(ASSERT_OK(write(a, "cc", 2)), 2);
	close(a);
	close(b);
	cr_assert_str_eq(get("f", NULL), "aabbbcc");
}

#define REC_LEN 512
#define RECS 300

struct appender {
	int id, fd;
	char fail[128];
};

static void *append_records(void *arg)
{
	struct appender *a = arg;
	char rec[REC_LEN];

	for (int i = 0; i < RECS; i++) {
		memset(rec, 'a' + a->id, sizeof(rec));
		snprintf(rec, 32, "<t%d s%06d>", a->id, i);
		rec[12] = 'a' + a->id;
		rec[REC_LEN - 1] = '\n';
		if (write(a->fd, rec, REC_LEN) != REC_LEN) {
			snprintf(a->fail, sizeof(a->fail), "record %d: %s", i, errname(errno));
			break;
		}
	}
	return NULL;
}

Test(data, o_append_by_two_threads_loses_and_tears_no_record)
{
	struct appender ap[2] = { { .id = 0 }, { .id = 1 } };
	pthread_t th[2];
	int next[2] = { 0, 0 };
	size_t len;
	char *all;

	for (int t = 0; t < 2; t++) {
		ap[t].fd = ASSERT_OK(open("log", O_WRONLY | O_CREAT | O_APPEND, 0644));
		cr_assert_eq(pthread_create(&th[t], NULL, append_records, &ap[t]), 0);
	}
	for (int t = 0; t < 2; t++) {
		pthread_join(th[t], NULL);
		close(ap[t].fd);
		cr_assert_str_empty(ap[t].fail, "thread %d: %s", t, ap[t].fail);
	}
	all = get("log", &len);
	cr_assert_eq(len, 2 * RECS * REC_LEN, "size %zu, expected %d", len, 2 * RECS * REC_LEN);
	for (size_t off = 0; off < len; off += REC_LEN) {
		char *r = all + off;
		int id, seq;

		cr_assert(sscanf(r, "<t%d s%06d>", &id, &seq) == 2 && (id == 0 || id == 1),
			  "no record header at %zu: %.12s", off, r);
		cr_assert_eq(seq, next[id], "at %zu: thread %d record %d, expected %d", off, id,
			     seq, next[id]);
		next[id]++;
		for (int i = 13; i < REC_LEN - 1; i++)
			cr_assert_eq(r[i], 'a' + id, "record at %zu torn at byte %d", off, i);
		cr_assert_eq(r[REC_LEN - 1], '\n');
	}
	cr_assert_eq(next[0], RECS);
	cr_assert_eq(next[1], RECS);
	free(all);
}

/* ---- large offsets ---- */

Test(data, writes_beyond_4_and_8_gib_read_back)
{
	static const long long offs[] = { 4 * GB - 2000, 4 * GB + 8192 + 123, 8 * GB + 3 * 4096 + 7,
					  8 * GB + 5 * MB - 1 };
	char buf[4][4096], back[4096];
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	for (int i = 0; i < 4; i++) {
		tfill_random(buf[i], sizeof(buf[i]), 40 + i);
		pwrite_all(fd, buf[i], sizeof(buf[i]), offs[i]);
	}
	cr_assert_eq(sx_fd(fd).stx_size, (uint64_t)(8 * GB + 5 * MB - 1 + 4096));
	for (int i = 0; i < 4; i++) {
		pread_all(fd, back, sizeof(back), offs[i]);
		cr_assert_arr_eq(back, buf[i], sizeof(back), "at offset %lld", offs[i]);
	}
	pread_all(fd, back, sizeof(back), 6 * GB);
	assert_zero(back, sizeof(back), 6 * GB);
	close(fd);
	fd = ASSERT_OK(open("f", O_RDONLY));
	pread_all(fd, back, sizeof(back), offs[2]);
	cr_assert_arr_eq(back, buf[2], sizeof(back), "after reopening");
	close(fd);
	cr_assert_eq(sx("f").stx_size, (uint64_t)(8 * GB + 5 * MB - 1 + 4096));
}

Test(data, a_write_at_a_petabyte_reads_back_or_is_efbig)
{
	long long off = 1ll << 50;
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	char back[4] = { 0 };
	ssize_t n;

	cr_assert_eq(ASSERT_OK(write(fd, "base", 4)), 4);
	errno = 0;
	n = pwrite(fd, "peta", 4, off);
	if (n < 0) {
		cr_assert_eq(errno, EFBIG, "a write past the largest size: %s", errname(errno));
		cr_assert_eq(sx_fd(fd).stx_size, 4, "a refused write changed the size");
	} else {
		cr_assert_eq(n, 4);
		cr_assert_eq(sx_fd(fd).stx_size, (uint64_t)off + 4);
		pread_all(fd, back, 4, off);
		cr_assert(memcmp(back, "peta", 4) == 0);
	}
	/* no other file was hit: the first bytes are still ours */
	pread_all(fd, back, 4, 0);
	cr_assert(memcmp(back, "base", 4) == 0);
	close(fd);
}
