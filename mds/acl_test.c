/*
 * acl_test.c - mds/acl.c: parsing and validating ACL xattrs (valid
 * ones, every kind of malformed one, random bytes), and Linux's mode
 * rules: equivalence, create masking, chmod.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mds/acl.h"

/* Build an xattr of @n entries (tag, perm, id triples) into @buf. */
static size_t build(uint8_t *buf, const struct acl_entry *e, uint32_t n)
{
	struct acl a = { .n = n, .e = (struct acl_entry *)e };

	acl_encode(&a, buf);
	return acl_size(&a);
}

#define E(tag, perm, id) { ACL_TAG_##tag, perm, id }
#define NONE ACL_ID_NONE

static const struct acl_entry named[] = {
	E(USER_OBJ, 6, NONE), E(USER, 4, 1000), E(USER, 7, 1001), E(GROUP_OBJ, 4, NONE),
	E(GROUP, 5, 50), E(MASK, 5, NONE), E(OTHER, 0, NONE),
};

Test(acl, parses_a_valid_acl_and_encodes_it_back)
{
	uint8_t buf[128], out[128];
	size_t len = build(buf, named, 7);
	struct acl a;

	cr_assert_eq(len, 4 + 7 * 8);
	cr_assert_eq(acl_parse(buf, len, &a), 0);
	cr_assert_eq(a.n, 7);
	cr_assert_eq(a.e[1].id, 1000);
	cr_assert_eq(a.e[4].tag, ACL_TAG_GROUP);
	cr_assert_eq(acl_size(&a), len);
	acl_encode(&a, out);
	cr_assert_arr_eq(buf, out, len);
	acl_fini(&a);
}

Test(acl, a_minimal_acl_and_an_empty_one_are_valid)
{
	static const struct acl_entry min[] = {
		E(USER_OBJ, 7, NONE), E(GROUP_OBJ, 5, NONE), E(OTHER, 1, NONE),
	};
	uint8_t buf[64];
	struct acl a;

	cr_assert_eq(acl_parse(buf, build(buf, min, 3), &a), 0);
	cr_assert_eq(a.n, 3);
	acl_fini(&a);
	cr_assert_eq(acl_parse(buf, build(buf, min, 0), &a), 0);
	cr_assert_eq(a.n, 0);
}

static void expect_invalid(const struct acl_entry *e, uint32_t n, const char *why)
{
	uint8_t buf[256];
	struct acl a;

	cr_assert_eq(acl_parse(buf, build(buf, e, n), &a), -EINVAL, "%s", why);
}

Test(acl, refuses_malformed_acls)
{
	uint8_t buf[128];
	size_t len = build(buf, named, 7);
	struct acl a;

	cr_assert_eq(acl_parse(buf, 0, &a), -EINVAL, "no header");
	cr_assert_eq(acl_parse(buf, 3, &a), -EINVAL, "short header");
	cr_assert_eq(acl_parse(buf, len - 1, &a), -EINVAL, "partial entry");
	cr_assert_eq(acl_parse(buf, len + 4, &a), -EINVAL, "trailing bytes");
	buf[0] = 1;
	cr_assert_eq(acl_parse(buf, len, &a), -EINVAL, "version 1");

	static const struct acl_entry no_mask[] = {
		E(USER_OBJ, 6, NONE), E(USER, 4, 1000), E(GROUP_OBJ, 4, NONE), E(OTHER, 0, NONE),
	};
	static const struct acl_entry no_other[] = {
		E(USER_OBJ, 6, NONE), E(GROUP_OBJ, 4, NONE),
	};
	static const struct acl_entry no_user_obj[] = {
		E(GROUP_OBJ, 4, NONE), E(OTHER, 0, NONE),
	};
	static const struct acl_entry no_group_obj[] = {
		E(USER_OBJ, 6, NONE), E(OTHER, 0, NONE),
	};
	static const struct acl_entry two_user_obj[] = {
		E(USER_OBJ, 6, NONE), E(USER_OBJ, 6, NONE), E(GROUP_OBJ, 4, NONE), E(OTHER, 0, NONE),
	};
	static const struct acl_entry out_of_order[] = {
		E(USER_OBJ, 6, NONE), E(GROUP_OBJ, 4, NONE), E(USER, 4, 1000), E(MASK, 4, NONE),
		E(OTHER, 0, NONE),
	};
	static const struct acl_entry bad_perm[] = {
		E(USER_OBJ, 8, NONE), E(GROUP_OBJ, 4, NONE), E(OTHER, 0, NONE),
	};
	static const struct acl_entry bad_tag[] = {
		E(USER_OBJ, 6, NONE), { 0x40, 4, NONE }, E(GROUP_OBJ, 4, NONE), E(OTHER, 0, NONE),
	};
	static const struct acl_entry undefined_id[] = {
		E(USER_OBJ, 6, NONE), E(USER, 4, NONE), E(GROUP_OBJ, 4, NONE), E(MASK, 4, NONE),
		E(OTHER, 0, NONE),
	};
	static const struct acl_entry after_other[] = {
		E(USER_OBJ, 6, NONE), E(GROUP_OBJ, 4, NONE), E(OTHER, 0, NONE), E(OTHER, 0, NONE),
	};
	expect_invalid(no_mask, 4, "named entry without a mask");
	expect_invalid(no_other, 2, "no OTHER");
	expect_invalid(no_user_obj, 2, "no USER_OBJ");
	expect_invalid(no_group_obj, 2, "no GROUP_OBJ");
	expect_invalid(two_user_obj, 4, "USER_OBJ twice");
	expect_invalid(out_of_order, 5, "USER after GROUP_OBJ");
	expect_invalid(bad_perm, 3, "perm beyond rwx");
	expect_invalid(bad_tag, 4, "unknown tag");
	expect_invalid(undefined_id, 5, "named user without an id");
	expect_invalid(after_other, 4, "an entry after OTHER");
}

/* Random bytes, and valid ACLs with random bytes flipped: parse never
 * reads past the end (ASan/valgrind would say), and what it accepts
 * encodes back to the same bytes. */
Test(acl, random_bytes_are_refused_or_round_trip)
{
	uint8_t buf[256], out[256];
	unsigned seed = 1, accepted = 0;

	for (int i = 0; i < 200000; i++) {
		size_t len;
		struct acl a;

		if (i % 2) {
			len = (size_t)rand_r(&seed) % sizeof(buf);
			for (size_t j = 0; j < len; j++)
				buf[j] = (uint8_t)rand_r(&seed);
			if (len >= 4 && i % 4 == 1)
				memcpy(buf, "\2\0\0\0", 4);
		} else {
			len = build(buf, named, 7);
			for (int f = rand_r(&seed) % 3; f >= 0; f--)
				buf[(size_t)rand_r(&seed) % len] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		}
		int ret = acl_parse(buf, len, &a);

		cr_assert(ret == 0 || ret == -EINVAL);
		if (ret)
			continue;
		accepted++;
		acl_encode(&a, out);
		/* ids of the unnamed entries are not kept */
		for (uint32_t k = 0; k < a.n; k++)
			if (a.e[k].tag != ACL_TAG_USER && a.e[k].tag != ACL_TAG_GROUP)
				memcpy(buf + 4 + k * 8 + 4, out + 4 + k * 8 + 4, 4);
		cr_assert_arr_eq(buf, out, len);
		acl_fini(&a);
	}
	cr_assert_gt(accepted, 0);
}

static struct acl parsed(const struct acl_entry *e, uint32_t n)
{
	uint8_t buf[256];
	struct acl a;

	cr_assert_eq(acl_parse(buf, build(buf, e, n), &a), 0);
	return a;
}

Test(acl, equiv_mode_takes_the_group_bits_from_the_mask)
{
	static const struct acl_entry min[] = {
		E(USER_OBJ, 7, NONE), E(GROUP_OBJ, 5, NONE), E(OTHER, 1, NONE),
	};
	struct acl a = parsed(min, 3);
	uint32_t mode = 0100000 | 02000;

	cr_assert_eq(acl_equiv_mode(&a, &mode), 0);
	cr_assert_eq(mode, 0100000 | 02000 | 0751);
	acl_fini(&a);
	a = parsed(named, 7);
	mode = 0100777;
	cr_assert_eq(acl_equiv_mode(&a, &mode), 1);
	cr_assert_eq(mode, 0100650, "got %o", mode);
	acl_fini(&a);
}

Test(acl, create_masks_the_default_acl_and_the_mode_by_each_other)
{
	static const struct acl_entry def[] = {
		E(USER_OBJ, 7, NONE), E(USER, 7, 12345), E(GROUP_OBJ, 5, NONE),
		E(MASK, 7, NONE), E(OTHER, 0, NONE),
	};
	struct acl a = parsed(def, 5);
	uint32_t mode = 0100666;

	cr_assert_eq(acl_create_masq(&a, &mode), 1);
	cr_assert_eq(mode, 0100660, "got %o", mode);
	cr_assert_eq(a.e[0].perm, 6);   /* user:: rw- */
	cr_assert_eq(a.e[1].perm, 7);   /* named: kept, the mask limits it */
	cr_assert_eq(a.e[3].perm, 6);   /* mask:: rw- */
	cr_assert_eq(a.e[4].perm, 0);
	acl_fini(&a);

	static const struct acl_entry min[] = {
		E(USER_OBJ, 7, NONE), E(GROUP_OBJ, 5, NONE), E(OTHER, 0, NONE),
	};
	a = parsed(min, 3);
	mode = 040777;
	cr_assert_eq(acl_create_masq(&a, &mode), 0, "no named entry: the mode says it all");
	cr_assert_eq(mode, 040750, "got %o", mode);
	acl_fini(&a);
}

Test(acl, chmod_sets_owner_mask_and_other)
{
	struct acl a = parsed(named, 7);

	acl_chmod(&a, 0100704);
	cr_assert_eq(a.e[0].perm, 7);
	cr_assert_eq(a.e[1].perm, 4, "named entries keep their perms");
	cr_assert_eq(a.e[3].perm, 4, "GROUP_OBJ keeps its perms under a mask");
	cr_assert_eq(a.e[5].perm, 0, "the mask takes the group bits");
	cr_assert_eq(a.e[6].perm, 4);
	acl_fini(&a);

	static const struct acl_entry min[] = {
		E(USER_OBJ, 7, NONE), E(GROUP_OBJ, 5, NONE), E(OTHER, 0, NONE),
	};
	a = parsed(min, 3);
	acl_chmod(&a, 0100640);
	cr_assert_eq(a.e[1].perm, 4, "without a mask GROUP_OBJ takes them");
	acl_fini(&a);
}
