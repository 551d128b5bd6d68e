/*
 * policy_field_test.c - unit tests for policy.h: the copies field with
 * and without an erasure code, the codes taken, parsing and printing,
 * and that oid helpers see m + 1 copies for a coded field.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

#include "common/oid.h"
#include "common/policy.h"

Test(policy_field, copies_alone_read_as_before)
{
	for (unsigned c = 0; c <= 15; c++) {
		cr_assert(policy_valid(c));
		cr_assert(!policy_is_ec(c));
		cr_assert_eq(policy_copies(c), c);
		cr_assert_eq(policy_for_file(c), c);
	}
	cr_assert(!policy_valid(16));
	cr_assert(!policy_valid(0x10000));
}

Test(policy_field, codes)
{
	static const unsigned ok[][2] = { { 2, 1 }, { 4, 2 }, { 8, 3 } };

	for (unsigned i = 0; i < 3; i++) {
		unsigned k = ok[i][0], m = ok[i][1];
		uint16_t p = policy_ec(k, m);

		cr_assert(policy_valid(p));
		cr_assert(policy_is_ec(p));
		cr_assert_eq(policy_ec_k(p), k);
		cr_assert_eq(policy_ec_m(p), m);
		cr_assert_eq(policy_copies(p), m + 1);
		/* a file takes the code (docs/ec.md "EC files"), never the
		 * sealed bit of another file */
		cr_assert_eq(policy_for_file(p), p);
		cr_assert_eq(policy_for_file(p | POLICY_SEALED), p);
		cr_assert(!policy_is_sealed(p));
		cr_assert(policy_is_sealed(p | POLICY_SEALED));
		cr_assert(!policy_valid(p | POLICY_SEALED));    /* never a dir's */
		cr_assert_eq(policy_copies(p | POLICY_SEALED), m + 1);
		cr_assert_eq(oid_file(9, 1, p | POLICY_SEALED), oid_file(9, 1, p));
		/* the replicated objects of an EC volume: m + 1 copies */
		cr_assert_eq(oid_copies(oid_vdata(7, 3, p), 3), m + 1);
		cr_assert_eq(oid_copies(oid_vindex(7, p), 3), m + 1);
		cr_assert_eq(oid_copies(oid_file(9, 1, policy_for_file(p)), 3), m + 1);
		/* a code whose copies are not m + 1 is not a field we take */
		cr_assert(!policy_valid((p & ~0xfu) | 3u) || m + 1 == 3);
	}
	cr_assert_eq(policy_ec(2, 1), 0x2202);
	cr_assert(!policy_valid(policy_ec(3, 2)));
	cr_assert(!policy_valid(policy_ec(4, 1)));
	cr_assert(!policy_valid(0x0105));
	cr_assert_eq(oid_kind(oid_vstripe(5, 2)), OID_KIND_VSTRIPE);
	cr_assert_eq(oid_owner(oid_vstripe(5, 2)), 5);
	cr_assert_eq(oid_chunk(oid_vstripe(5, 2)), 2);
	cr_assert(!oid_is_vol(oid_vstripe(5, 2)));
	cr_assert_eq(oid_kind(oid_fstripe(5, 2)), OID_KIND_FSTRIPE);
	cr_assert_eq(oid_owner(oid_fstripe(5, 2)), 5);
	cr_assert_eq(oid_chunk(oid_fstripe(5, 2)), 2);
	cr_assert(!oid_is_file(oid_fstripe(5, 2)));     /* not a replicated object */
	cr_assert(!oid_is_vol(oid_fstripe(5, 2)));
	cr_assert(!policy_is_sealed(POLICY_SEALED | 3u)); /* no code: no form */
}

Test(policy_field, parse_and_print)
{
	uint16_t p = 0;
	char b[32];

	cr_assert_eq(policy_parse_ec("ec=4+2", &p), 0);
	cr_assert_eq(p, policy_ec(4, 2));
	cr_assert_str_eq(policy_str(p, b, sizeof(b)), "ec=4+2");
	cr_assert_eq(policy_parse_ec("8+3", &p), 0);
	cr_assert_str_eq(policy_str(p, b, sizeof(b)), "ec=8+3");
	cr_assert_eq(policy_parse_ec("ec=3+2", &p), -ERANGE);
	cr_assert_eq(policy_parse_ec("ec=4+2x", &p), -EINVAL);
	cr_assert_eq(policy_parse_ec("ec=4", &p), -EINVAL);
	cr_assert_eq(policy_parse_ec("copies=3", &p), -EINVAL);
	cr_assert_str_eq(policy_str(3, b, sizeof(b)), "copies=3");
	cr_assert_str_eq(policy_str(0, b, sizeof(b)), "default");
}
