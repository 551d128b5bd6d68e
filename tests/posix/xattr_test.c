/*
 * xattr_test.c - posix_xattr: extended attributes of files and
 * directories: set, get, list, remove, XATTR_CREATE/XATTR_REPLACE,
 * sizes (64 KiB values, 255-byte names), namespaces, and their error
 * codes (ENODATA, EEXIST, ERANGE, E2BIG, EOPNOTSUPP).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tests/posix/posix.h"

POSIX_SUITE(xattr);

/* Does the NUL-separated @list of @len bytes hold @name? */
static int listed(const char *list, ssize_t len, const char *name)
{
	for (const char *p = list; p < list + len; p += strlen(p) + 1)
		if (strcmp(p, name) == 0)
			return 1;
	return 0;
}

Test(xattr, set_and_get_round_trip_a_binary_value)
{
	const char val[] = { 'a', 0, 'b', (char)0xff, 0, 'c' };
	char back[16];

	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.bin", val, sizeof(val), 0));
	cr_assert_eq(ASSERT_OK(getxattr("f", "user.bin", back, sizeof(back))), sizeof(val));
	cr_assert(memcmp(back, val, sizeof(val)) == 0);
}

Test(xattr, an_empty_value_is_a_value)
{
	char back[4];

	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.empty", "", 0, 0));
	cr_assert_eq(ASSERT_OK(getxattr("f", "user.empty", back, sizeof(back))), 0);
	ASSERT_ERRNO(setxattr("f", "user.empty", "", 0, XATTR_CREATE), EEXIST);
}

Test(xattr, a_size_query_returns_the_length)
{
	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.k", "twelve bytes", 12, 0));
	cr_assert_eq(ASSERT_OK(getxattr("f", "user.k", NULL, 0)), 12);
}

Test(xattr, a_buffer_too_small_is_erange)
{
	char back[4];

	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.k", "twelve bytes", 12, 0));
	ASSERT_ERRNO(getxattr("f", "user.k", back, sizeof(back)), ERANGE);
}

Test(xattr, a_missing_attribute_is_enodata)
{
	char back[4];

	put_str("f", "");
	ASSERT_ERRNO(getxattr("f", "user.none", back, sizeof(back)), ENODATA);
	ASSERT_ERRNO(getxattr("f", "user.none", NULL, 0), ENODATA);
	ASSERT_ERRNO(removexattr("f", "user.none"), ENODATA);
	ASSERT_ERRNO(getxattr("missing", "user.none", NULL, 0), ENOENT);
}

Test(xattr, set_replaces_the_value)
{
	char back[16] = { 0 };

	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.k", "first value", 11, 0));
	ASSERT_OK(setxattr("f", "user.k", "2nd", 3, 0));
	cr_assert_eq(ASSERT_OK(getxattr("f", "user.k", back, sizeof(back))), 3);
	cr_assert_str_eq(back, "2nd");
}

Test(xattr, xattr_create_on_an_existing_attribute_is_eexist)
{
	char back[8] = { 0 };

	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.k", "v1", 2, XATTR_CREATE));
	ASSERT_ERRNO(setxattr("f", "user.k", "v2", 2, XATTR_CREATE), EEXIST);
	ASSERT_OK(getxattr("f", "user.k", back, sizeof(back)));
	cr_assert_str_eq(back, "v1");
}

Test(xattr, xattr_replace_of_a_missing_attribute_is_enodata)
{
	put_str("f", "");
	ASSERT_ERRNO(setxattr("f", "user.k", "v", 1, XATTR_REPLACE), ENODATA);
	ASSERT_ERRNO(getxattr("f", "user.k", NULL, 0), ENODATA);
	ASSERT_OK(setxattr("f", "user.k", "v", 1, 0));
	ASSERT_OK(setxattr("f", "user.k", "w", 1, XATTR_REPLACE));
}

Test(xattr, an_unknown_flag_is_einval)
{
	put_str("f", "");
	ASSERT_ERRNO(setxattr("f", "user.k", "v", 1, 4), EINVAL);
	ASSERT_ERRNO(getxattr("f", "user.k", NULL, 0), ENODATA);
}

Test(xattr, remove_deletes_the_attribute)
{
	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.a", "1", 1, 0));
	ASSERT_OK(setxattr("f", "user.b", "2", 1, 0));
	ASSERT_OK(removexattr("f", "user.a"));
	ASSERT_ERRNO(getxattr("f", "user.a", NULL, 0), ENODATA);
	cr_assert_eq(ASSERT_OK(getxattr("f", "user.b", NULL, 0)), 1);
}

Test(xattr, list_names_every_attribute_once)
{
	char list[4096], name[32];
	ssize_t n;

	put_str("f", "");
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "user.attr%d", i);
		ASSERT_OK(setxattr("f", name, "v", 1, 0));
	}
	ASSERT_OK(setxattr("f", "trusted.t", "v", 1, 0));
	n = ASSERT_OK(listxattr("f", list, sizeof(list)));
	cr_assert_eq(ASSERT_OK(listxattr("f", NULL, 0)), n, "size query differs");
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "user.attr%d", i);
		cr_assert(listed(list, n, name), "%s not listed", name);
	}
	cr_assert(listed(list, n, "trusted.t"), "root lists trusted.*");
	for (const char *p = list; p < list + n; p += strlen(p) + 1)
		cr_assert(strncmp(p, "user.attr", 9) == 0 || strcmp(p, "trusted.t") == 0 ||
			  strncmp(p, "security.", 9) == 0, "unexpected name '%s'", p);
}

Test(xattr, list_into_a_small_buffer_is_erange)
{
	char list[8];

	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.a_long_name", "v", 1, 0));
	ASSERT_ERRNO(listxattr("f", list, sizeof(list)), ERANGE);
}

Test(xattr, list_of_a_new_file_has_no_user_attributes)
{
	char list[1024];
	ssize_t n;

	put_str("f", "");
	n = ASSERT_OK(listxattr("f", list, sizeof(list)));
	for (const char *p = list; p < list + n; p += strlen(p) + 1)
		cr_assert(strncmp(p, "user.", 5) != 0, "new file has '%s'", p);
}

Test(xattr, a_64_kib_value_round_trips_and_more_is_e2big)
{
	size_t max = 65536;
	char *val = malloc(max + 1), *back = malloc(max);

	put_str("f", "");
	tfill_random(val, max + 1, 47);
	ASSERT_OK(setxattr("f", "user.big", val, max, 0));
	cr_assert_eq(ASSERT_OK(getxattr("f", "user.big", back, max)), (long)max);
	cr_assert_arr_eq(back, val, max);
	ASSERT_ERRNO(setxattr("f", "user.big", val, max + 1, 0), E2BIG);
	free(val);
	free(back);
}

Test(xattr, a_255_byte_name_works_and_256_is_erange)
{
	char name[300];

	put_str("f", "");
	snprintf(name, sizeof(name), "user.%s", long_name(250));
	ASSERT_OK(setxattr("f", name, "v", 1, 0));
	cr_assert_eq(ASSERT_OK(getxattr("f", name, NULL, 0)), 1);
	snprintf(name, sizeof(name), "user.%s", long_name(251));
	ASSERT_ERRNO(setxattr("f", name, "v", 1, 0), ERANGE);
	ASSERT_ERRNO(getxattr("f", name, NULL, 0), ERANGE);
}

Test(xattr, an_unknown_namespace_is_eopnotsupp)
{
	put_str("f", "");
	ASSERT_ERRNO(setxattr("f", "bogus.k", "v", 1, 0), EOPNOTSUPP);
	ASSERT_ERRNO(getxattr("f", "bogus.k", NULL, 0), EOPNOTSUPP);
}

Test(xattr, directories_have_xattrs_too)
{
	char back[8] = { 0 };

	xmkdir("d", 0755);
	ASSERT_OK(setxattr("d", "user.dir", "yes", 3, 0));
	ASSERT_OK(getxattr("d", "user.dir", back, sizeof(back)));
	cr_assert_str_eq(back, "yes");
}

Test(xattr, user_xattrs_on_a_symlink_are_eperm_but_trusted_work)
{
	char back[8] = { 0 };

	put_str("f", "");
	ASSERT_OK(symlink("f", "l"));
	ASSERT_ERRNO(lsetxattr("l", "user.k", "v", 1, 0), EPERM);
	ASSERT_OK(lsetxattr("l", "trusted.k", "link", 4, 0));
	ASSERT_OK(lgetxattr("l", "trusted.k", back, sizeof(back)));
	cr_assert_str_eq(back, "link");
	ASSERT_ERRNO(getxattr("f", "trusted.k", NULL, 0), ENODATA);
}

Test(xattr, fd_calls_reach_the_same_attributes)
{
	char back[8] = { 0 };
	int fd;

	put_str("f", "");
	fd = ASSERT_OK(open("f", O_RDONLY));
	ASSERT_OK(fsetxattr(fd, "user.k", "fd", 2, 0));
	ASSERT_OK(getxattr("f", "user.k", back, sizeof(back)));
	cr_assert_str_eq(back, "fd");
	ASSERT_OK(fremovexattr(fd, "user.k"));
	ASSERT_ERRNO(fgetxattr(fd, "user.k", NULL, 0), ENODATA);
	close(fd);
}

Test(xattr, attributes_follow_the_inode_through_rename_and_links)
{
	char back[8] = { 0 };

	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.k", "kept", 4, 0));
	ASSERT_OK(rename("f", "g"));
	ASSERT_OK(link("g", "h"));
	ASSERT_OK(getxattr("h", "user.k", back, sizeof(back)));
	cr_assert_str_eq(back, "kept");
}

Test(xattr, a_new_file_under_an_old_name_has_no_attributes)
{
	put_str("f", "");
	ASSERT_OK(setxattr("f", "user.k", "old", 3, 0));
	ASSERT_OK(unlink("f"));
	put_str("f", "");
	ASSERT_ERRNO(getxattr("f", "user.k", NULL, 0), ENODATA);
}

Test(xattr, many_attributes_on_one_file)
{
	char name[32], val[32], back[32];

	put_str("f", "");
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "user.n%d", i);
		snprintf(val, sizeof(val), "value %d", i);
		ASSERT_OK(setxattr("f", name, val, strlen(val), XATTR_CREATE));
	}
	for (int i = 0; i < 200; i += 7) {
		ssize_t n;

		snprintf(name, sizeof(name), "user.n%d", i);
		snprintf(val, sizeof(val), "value %d", i);
		n = ASSERT_OK(getxattr("f", name, back, sizeof(back)));
		cr_assert_eq((size_t)n, strlen(val));
		cr_assert(memcmp(back, val, (size_t)n) == 0, "%s", name);
	}
	cr_assert_gt(ASSERT_OK(listxattr("f", NULL, 0)), 200 * 7);
}
