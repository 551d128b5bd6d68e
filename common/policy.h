/*
 * policy.h - a redundancy policy in the 16-bit `copies` field of an
 * inode, a volume record and a volume index header (docs/policy.md).
 *
 *   bits 0..3    copies: replicas of the replicated objects (1..15;
 *                0: the cluster's). With a code: m + 1.
 *   bit  4       a regular file's data is sealed: its chunks are EC
 *                objects oid_fstripe (docs/ec.md "EC files"); only in a
 *                file's inode, set and cleared by the mds
 *   bit  5       ... and stripes of it may exist (set before a seal's
 *                first put, cleared once they are removed): the mds
 *                removes them before anyone writes the file again
 *   bits 6..7    zero
 *   bits 8..12   k of an erasure code (0: none)
 *   bits 13..15  m of an erasure code
 *
 * A field without a code is exactly the copies it always was, so every
 * record written before codes existed reads unchanged, and every oid
 * helper that takes `copies` (common/oid.h: the low nibble) sees m + 1
 * for an EC volume's replicated objects. Codes: 2+1, 4+2, 8+3.
 * Pure inline functions; no state.
 */
#ifndef SDFS_COMMON_POLICY_H
#define SDFS_COMMON_POLICY_H
#include <stdint.h>
#include <errno.h>
#include <stdio.h>

#define POLICY_COPIES_MASK 0x000fu
#define POLICY_K_SHIFT     8
#define POLICY_M_SHIFT     13
#define POLICY_SEALED      0x0010u
#define POLICY_STRIPES     0x0020u

static inline unsigned policy_copies(unsigned p)
{
	return p & POLICY_COPIES_MASK;
}

static inline unsigned policy_ec_k(unsigned p)
{
	return (p >> POLICY_K_SHIFT) & 0x1fu;
}

static inline unsigned policy_ec_m(unsigned p)
{
	return (p >> POLICY_M_SHIFT) & 0x7u;
}

static inline int policy_is_ec(unsigned p)
{
	return policy_ec_k(p) != 0;
}

/* Is k + m one of the codes volumes take? */
static inline int policy_ec_ok(unsigned k, unsigned m)
{
	return (k == 2 && m == 1) || (k == 4 && m == 2) || (k == 8 && m == 3);
}

/* The field for code @k + @m (its replicated objects: m + 1 copies). */
static inline uint16_t policy_ec(unsigned k, unsigned m)
{
	return (uint16_t)((m + 1) | k << POLICY_K_SHIFT | m << POLICY_M_SHIFT);
}

/* Is @p a field the mds takes: copies 0..15 alone, or a code above
 * with copies m + 1? */
static inline int policy_valid(unsigned p)
{
	if (p > 0xffffu || (p & 0xf0u))
		return 0;
	if (!policy_is_ec(p))
		return 1;
	return policy_ec_ok(policy_ec_k(p), policy_ec_m(p)) &&
	       policy_copies(p) == policy_ec_m(p) + 1;
}

/* Is a regular file of policy field @p sealed (its chunks stripes)? */
static inline int policy_is_sealed(unsigned p)
{
	return policy_is_ec(p) && (p & POLICY_SEALED);
}

/* May stripes of a regular file of field @p exist (sealed, or a seal or
 * unseal that did not finish)? */
static inline int policy_has_stripes(unsigned p)
{
	return policy_is_ec(p) && (p & (POLICY_SEALED | POLICY_STRIPES));
}

/* What a regular file made under a directory of policy @p gets: the
 * field as it is (an ec=K+M file is written with m + 1 replicas and
 * sealed into stripes when cold: docs/ec.md "EC files"). */
static inline uint16_t policy_for_file(unsigned p)
{
	return (uint16_t)(p & ~(POLICY_SEALED | POLICY_STRIPES));
}

/* "ec 4+2", "copies 3", "copies (cluster's)" style text into @buf. */
static inline const char *policy_str(unsigned p, char *buf, size_t len)
{
	if (policy_is_ec(p))
		snprintf(buf, len, "ec=%u+%u", policy_ec_k(p), policy_ec_m(p));
	else if (policy_copies(p))
		snprintf(buf, len, "copies=%u", policy_copies(p));
	else
		snprintf(buf, len, "default");
	return buf;
}

/* Parse "ec=K+M" or "K+M": 0 and *@out, or -EINVAL (not a code volumes
 * take; -ERANGE: K+M well formed but not in the table). */
static inline int policy_parse_ec(const char *s, uint16_t *out)
{
	unsigned k, m;
	char tail;

	if (s[0] == 'e' && s[1] == 'c' && s[2] == '=')
		s += 3;
	if (sscanf(s, "%u+%u%c", &k, &m, &tail) != 2)
		return -EINVAL;
	if (!policy_ec_ok(k, m))
		return -ERANGE;
	*out = policy_ec(k, m);
	return 0;
}
#endif
