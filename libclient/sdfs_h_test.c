/*
 * sdfs_h_test.c - sdfs.h, the installed API, stands alone: this file is
 * built with no include path but libclient's own (meson.build), so a
 * type the header uses but takes from an internal header (as struct
 * sdfs_inval once came from the wire's common/sdfs_proto.h) fails the
 * build. The test reads what a subscriber's callback reads.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <sdfs.h>

static size_t seen;
static char name[32];

static void on_inval(void *arg, const struct sdfs_inval *iv, size_t n)
{
	(void)arg;
	for (size_t i = 0; i < n; i++) {
		if (iv[i].kind == SDFS_INVAL_ENTRY && iv[i].name_len < sizeof(name)) {
			memcpy(name, iv[i].name, iv[i].name_len);
			name[iv[i].name_len] = '\0';
		}
		seen += iv[i].kind == SDFS_INVAL_INODE || iv[i].kind == SDFS_INVAL_ENTRY ||
			iv[i].kind == SDFS_INVAL_ALL;
	}
}

Test(sdfs_h, inval_records_are_readable_from_the_public_header)
{
	struct sdfs_inval iv[3] = {
		{ .kind = SDFS_INVAL_INODE, .ino = 7 },
		{ .kind = SDFS_INVAL_ENTRY, .ino = 1, .name = "hello.c", .name_len = 7 },
		{ .kind = SDFS_INVAL_ALL },
	};
	sdfs_inval_fn fn = on_inval;

	fn(NULL, iv, 3);
	cr_assert_eq(seen, 3);
	cr_assert_str_eq(name, "hello.c");
	cr_assert_neq(SDFS_INVAL_INODE, SDFS_INVAL_ENTRY);
}
