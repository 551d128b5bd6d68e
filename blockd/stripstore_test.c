/*
 * stripstore_test.c - the strip store (stripstore.h) on a real temp
 * dir: put and read back, versions side by side, commit dropping only
 * older versions of one strip number, checksums failing a flipped byte,
 * tags, leftovers of a crash, bad arguments, tombstones (a commit of
 * one drops every older strip), dropping one extra copy, and the
 * scrub's replacement of a damaged file (only while it is there).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockd/stripstore.h"

static char dir[] = "/tmp/sdfs-stripstore-XXXXXX";
static struct stripstore *ss;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(stripstore_open(dir, 1u << 20, &ss), 0);
}

static void teardown(void)
{
	char cmd[128];

	stripstore_close(ss);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

static struct sdfs_strip strip(unsigned s, uint64_t version, uint32_t len)
{
	return (struct sdfs_strip){ .version = version, .tag = 77, .obj_size = 4ull * len - 5,
				    .strip_len = len, .k = 4, .m = 2, .s = (uint8_t)s };
}

static uint8_t *bytes(size_t len, int seed)
{
	uint8_t *b = malloc(len);

	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 31 + seed);
	return b;
}

TestSuite(stripstore, .init = setup, .fini = teardown);

Test(stripstore, put_read_list)
{
	struct sdfs_strip st = strip(3, 10, 8192), l[8];
	uint8_t *b = bytes(8192, 1), out[8192];
	size_t got, n;

	cr_assert_eq(stripstore_put(ss, 0x1234, &st, b), 0);
	cr_assert_eq(stripstore_read(ss, 0x1234, 3, 10, 77, 100, out, 5000, &got), 0);
	cr_assert_eq(got, 5000);
	cr_assert_arr_eq(out, b + 100, 5000);
	/* short at the end, nothing past it */
	cr_assert_eq(stripstore_read(ss, 0x1234, 3, 10, 0, 8000, out, 1000, &got), 0);
	cr_assert_eq(got, 192);
	cr_assert_eq(stripstore_read(ss, 0x1234, 3, 10, 0, 8192, out, 10, &got), 0);
	cr_assert_eq(got, 0);
	/* another tag, version or strip number: not here */
	cr_assert_eq(stripstore_read(ss, 0x1234, 3, 10, 78, 0, out, 10, &got), -ENOENT);
	cr_assert_eq(stripstore_read(ss, 0x1234, 3, 11, 77, 0, out, 10, &got), -ENOENT);
	cr_assert_eq(stripstore_read(ss, 0x1234, 2, 10, 77, 0, out, 10, &got), -ENOENT);
	cr_assert_eq(stripstore_list(ss, 0x1234, l, 8, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(l[0].version, 10);
	cr_assert_eq(l[0].tag, 77);
	cr_assert_eq(l[0].obj_size, st.obj_size);
	cr_assert_eq(l[0].s, 3);
	cr_assert_eq(l[0].k, 4);
	cr_assert_eq(l[0].m, 2);
	cr_assert_eq(stripstore_list(ss, 0x1334, l, 8, &n), 0);   /* same subdir */
	cr_assert_eq(n, 0);
	free(b);
}

Test(stripstore, commit_drops_older_versions_of_that_strip_only)
{
	struct sdfs_strip l[8];
	uint8_t *b = bytes(4096, 2);
	size_t n, got;
	unsigned dropped;
	uint8_t out[16];

	for (uint64_t v = 1; v <= 3; v++) {
		struct sdfs_strip st = strip(1, v, 4096), o = strip(4, v, 4096);

		cr_assert_eq(stripstore_put(ss, 9, &st, b), 0);
		cr_assert_eq(stripstore_put(ss, 9, &o, b), 0);
	}
	cr_assert_eq(stripstore_list(ss, 9, l, 8, &n), 0);
	cr_assert_eq(n, 6);
	/* a version not held drops nothing */
	cr_assert_eq(stripstore_commit(ss, 9, 1, 5, &dropped), -ENOENT);
	cr_assert_eq(dropped, 0);
	cr_assert_eq(stripstore_commit(ss, 9, 1, 2, &dropped), 0);
	cr_assert_eq(dropped, 1);
	cr_assert_eq(stripstore_read(ss, 9, 1, 1, 0, 0, out, 16, &got), -ENOENT);
	cr_assert_eq(stripstore_read(ss, 9, 1, 2, 0, 0, out, 16, &got), 0);
	cr_assert_eq(stripstore_read(ss, 9, 1, 3, 0, 0, out, 16, &got), 0);
	cr_assert_eq(stripstore_read(ss, 9, 4, 1, 0, 0, out, 16, &got), 0);
	cr_assert_eq(stripstore_list(ss, 9, l, 8, &n), 0);
	cr_assert_eq(n, 5);
	free(b);
}

Test(stripstore, flipped_byte_fails_its_block_only)
{
	struct sdfs_strip st = strip(0, 5, 3 * 4096);
	uint8_t *b = bytes(3 * 4096, 3), out[3 * 4096];
	char path[512];
	size_t got;
	int fd;

	cr_assert_eq(stripstore_put(ss, 0xabc, &st, b), 0);
	cr_assert_eq(stripstore_path(ss, 0xabc, 0, 5, path, sizeof(path)), 0);
	fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	/* data starts at 4096 (header + table fit the first block) */
	cr_assert_eq(pwrite(fd, "X", 1, 4096 + 4096 + 17), 1);
	close(fd);
	cr_assert_eq(stripstore_read(ss, 0xabc, 0, 5, 0, 0, out, 4096, &got), 0);
	cr_assert_arr_eq(out, b, 4096);
	cr_assert_eq(stripstore_read(ss, 0xabc, 0, 5, 0, 4000, out, 200, &got), -EBADMSG);
	cr_assert_eq(stripstore_read(ss, 0xabc, 0, 5, 0, 8192, out, 4096, &got), 0);
	/* a bad header: the strip is not listed and reads fail */
	fd = open(path, O_RDWR);
	cr_assert_eq(pwrite(fd, "Y", 1, 40), 1);
	close(fd);
	cr_assert_eq(stripstore_read(ss, 0xabc, 0, 5, 0, 0, out, 10, &got), -EBADMSG);
	struct sdfs_strip l[2];
	size_t n;
	cr_assert_eq(stripstore_list(ss, 0xabc, l, 2, &n), 0);
	cr_assert_eq(n, 0);
	free(b);
}

Test(stripstore, truncated_file_fails)
{
	struct sdfs_strip st = strip(2, 6, 2 * 4096);
	uint8_t *b = bytes(2 * 4096, 4), out[4096];
	char path[512];
	size_t got;

	cr_assert_eq(stripstore_put(ss, 0x77, &st, b), 0);
	stripstore_path(ss, 0x77, 2, 6, path, sizeof(path));
	cr_assert_eq(truncate(path, 4096 + 4096 + 100), 0);
	cr_assert_eq(stripstore_read(ss, 0x77, 2, 6, 0, 0, out, 4096, &got), 0);
	cr_assert_eq(stripstore_read(ss, 0x77, 2, 6, 0, 4096, out, 4096, &got), -EBADMSG);
	free(b);
}

Test(stripstore, reopen_removes_tmp_and_keeps_strips)
{
	struct sdfs_strip st = strip(5, 8, 4096);
	uint8_t *b = bytes(4096, 5), out[4096];
	char path[600];
	size_t got;
	int fd;

	cr_assert_eq(stripstore_put(ss, 0x42, &st, b), 0);
	stripstore_path(ss, 0x42, 5, 9, path, sizeof(path));
	strcat(path, ".tmp");
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	stripstore_close(ss);
	cr_assert_eq(stripstore_open(dir, 1u << 20, &ss), 0);
	cr_assert_eq(access(path, F_OK), -1);
	cr_assert_eq(stripstore_read(ss, 0x42, 5, 8, 77, 0, out, 4096, &got), 0);
	cr_assert_arr_eq(out, b, 4096);
	free(b);
}

Test(stripstore, bad_strips_refused)
{
	uint8_t *b = bytes(8192, 6);
	struct sdfs_strip st;

	st = strip(6, 1, 4096);                 /* s = k + m */
	cr_assert_eq(stripstore_put(ss, 1, &st, b), -EINVAL);
	st = strip(0, 1, 4000);                 /* not whole blocks */
	cr_assert_eq(stripstore_put(ss, 1, &st, b), -EINVAL);
	st = strip(0, 0, 4096);                 /* version 0 */
	cr_assert_eq(stripstore_put(ss, 1, &st, b), -EINVAL);
	st = strip(0, 1, 4096);
	st.obj_size = 4 * 4096 + 1;             /* does not fit k strips */
	cr_assert_eq(stripstore_put(ss, 1, &st, b), -EINVAL);
	st = strip(0, 1, 2u << 20);             /* above the store's max */
	cr_assert_eq(stripstore_put(ss, 1, &st, b), -EINVAL);
	st = strip(0, 1, 4096);
	st.k = 17;
	cr_assert_eq(stripstore_put(ss, 1, &st, b), -EINVAL);
	free(b);
}

Test(stripstore, same_version_other_tag_refused)
{
	struct sdfs_strip st = strip(1, 4, 4096);
	uint8_t *b = bytes(4096, 7), *c = bytes(4096, 8), out[4096];
	size_t got;

	cr_assert_eq(stripstore_put(ss, 0x55, &st, b), 0);
	cr_assert_eq(stripstore_put(ss, 0x55, &st, c), 0);     /* same tag: a retry */
	st.tag = 78;
	cr_assert_eq(stripstore_put(ss, 0x55, &st, b), -EEXIST);
	cr_assert_eq(stripstore_read(ss, 0x55, 1, 4, 77, 0, out, 4096, &got), 0);
	cr_assert_arr_eq(out, c, 4096);
	free(b);
	free(c);
}

Test(stripstore, tombstone_commit_drops_every_older_strip)
{
	struct sdfs_strip l[8], t = { .version = 5, .tag = 9, .k = 4, .m = 2, .s = 1,
				      .flags = SDFS_STRIP_TOMB }, bad = t;
	uint8_t *b = bytes(4096, 3), out[16];
	char path[4096];
	struct stat sb;
	size_t n, got;
	unsigned dropped;

	for (uint64_t v = 1; v <= 3; v++) {
		struct sdfs_strip st = strip(1, v, 4096), o = strip(4, v, 4096);

		cr_assert_eq(stripstore_put(ss, 9, &st, b), 0);
		cr_assert_eq(stripstore_put(ss, 9, &o, b), 0);
	}
	struct sdfs_strip newer = strip(4, 7, 4096);

	cr_assert_eq(stripstore_put(ss, 9, &newer, b), 0);
	/* a tombstone has no bytes */
	bad.strip_len = 4096;
	cr_assert_eq(stripstore_put(ss, 9, &bad, b), -EINVAL);
	bad = t;
	bad.flags = 2;
	cr_assert_eq(stripstore_put(ss, 9, &bad, b), -EINVAL);
	cr_assert_eq(stripstore_put(ss, 9, &t, NULL), 0);
	cr_assert_eq(stripstore_path(ss, 9, 1, 5, path, sizeof(path)), 0);
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_size, 64, "a tombstone is its header");
	cr_assert_eq(stripstore_read(ss, 9, 1, 5, 9, 0, out, 16, &got), -ENOENT);
	cr_assert_eq(stripstore_list(ss, 9, l, 8, &n), 0);
	cr_assert_eq(n, 8);
	/* its commit drops every older version of every strip number,
	 * not the newer one of strip 4 */
	cr_assert_eq(stripstore_commit(ss, 9, 1, 5, &dropped), 0);
	cr_assert_eq(dropped, 6);
	cr_assert_eq(stripstore_list(ss, 9, l, 8, &n), 0);
	cr_assert_eq(n, 2);
	for (size_t i = 0; i < n; i++)
		cr_assert(l[i].version == 7 ||
			  (l[i].version == 5 && l[i].flags == SDFS_STRIP_TOMB && l[i].tag == 9));
	free(b);
}

Test(stripstore, drop_takes_one_file_of_that_tag)
{
	struct sdfs_strip st = strip(2, 4, 4096), l[4];
	uint8_t *b = bytes(4096, 4);
	size_t n;

	cr_assert_eq(stripstore_put(ss, 11, &st, b), 0);
	cr_assert_eq(stripstore_drop(ss, 11, 2, 4, 78), -ENOENT);     /* another tag */
	cr_assert_eq(stripstore_drop(ss, 11, 3, 4, 77), -ENOENT);
	cr_assert_eq(stripstore_list(ss, 11, l, 4, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(stripstore_drop(ss, 11, 2, 4, 77), 0);
	cr_assert_eq(stripstore_list(ss, 11, l, 4, &n), 0);
	cr_assert_eq(n, 0);
	free(b);
}

/* The scrub's rebuild: stripstore_replace rewrites a damaged file whole,
 * only while it is there with its tag, never one a commit dropped. */
Test(stripstore, replace_only_while_there)
{
	struct sdfs_strip st = strip(1, 5, 2 * 4096), newer = strip(1, 6, 2 * 4096);
	struct sdfs_strip other = st;
	uint8_t *b = bytes(2 * 4096, 4), *c = bytes(2 * 4096, 5), out[2 * 4096];
	char path[512];
	size_t got;
	int fd;

	/* not here: nothing written */
	cr_assert_eq(stripstore_replace(ss, 0x77, &st, b), -ENOENT);
	cr_assert_eq(stripstore_read(ss, 0x77, 1, 5, 77, 0, out, 10, &got), -ENOENT);
	cr_assert_eq(stripstore_put(ss, 0x77, &st, b), 0);
	cr_assert_eq(stripstore_path(ss, 0x77, 1, 5, path, sizeof(path)), 0);
	fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, "X", 1, 4096 + 100), 1);
	close(fd);
	cr_assert_eq(stripstore_read(ss, 0x77, 1, 5, 77, 0, out, sizeof(out), &got),
		     -EBADMSG);
	/* another tag's: refused, untouched */
	other.tag = 78;
	cr_assert_eq(stripstore_replace(ss, 0x77, &other, b), -EEXIST);
	/* the damaged file, rewritten whole */
	cr_assert_eq(stripstore_replace(ss, 0x77, &st, b), 0);
	cr_assert_eq(stripstore_read(ss, 0x77, 1, 5, 77, 0, out, sizeof(out), &got), 0);
	cr_assert_eq(got, sizeof(out));
	cr_assert_arr_eq(out, b, sizeof(out));
	/* a newer version committed: the old one is not brought back */
	cr_assert_eq(stripstore_put(ss, 0x77, &newer, c), 0);
	cr_assert_eq(stripstore_commit(ss, 0x77, 1, 6, NULL), 0);
	cr_assert_eq(stripstore_replace(ss, 0x77, &st, b), -ENOENT);
	cr_assert_eq(access(path, F_OK), -1);
	cr_assert_eq(stripstore_read(ss, 0x77, 1, 6, 77, 0, out, sizeof(out), &got), 0);
	cr_assert_arr_eq(out, c, sizeof(out));
	free(b);
	free(c);
}
