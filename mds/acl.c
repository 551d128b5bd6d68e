/*
 * acl.c - POSIX ACL xattrs: parse, validate, encode, and Linux's mode
 * rules (acl.h).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mds/acl.h"

static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static void put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }

/* The order of tags the kernel requires (posix_acl_valid's states). */
static int acl_check(const struct acl *acl)
{
	enum { S_USER_OBJ, S_USER, S_GROUP, S_OTHER, S_DONE } state = S_USER_OBJ;
	int needs_mask = 0;

	for (uint32_t i = 0; i < acl->n; i++) {
		const struct acl_entry *e = &acl->e[i];

		if (e->perm & ~ACL_PERM_RWX)
			return -EINVAL;
		switch (e->tag) {
		case ACL_TAG_USER_OBJ:
			if (state != S_USER_OBJ)
				return -EINVAL;
			state = S_USER;
			break;
		case ACL_TAG_USER:
			if (state != S_USER || e->id == ACL_ID_NONE)
				return -EINVAL;
			needs_mask = 1;
			break;
		case ACL_TAG_GROUP_OBJ:
			if (state != S_USER)
				return -EINVAL;
			state = S_GROUP;
			break;
		case ACL_TAG_GROUP:
			if (state != S_GROUP || e->id == ACL_ID_NONE)
				return -EINVAL;
			needs_mask = 1;
			break;
		case ACL_TAG_MASK:
			if (state != S_GROUP)
				return -EINVAL;
			state = S_OTHER;
			break;
		case ACL_TAG_OTHER:
			if (state != S_OTHER && (state != S_GROUP || needs_mask))
				return -EINVAL;
			state = S_DONE;
			break;
		default:
			return -EINVAL;
		}
	}
	return state == S_DONE ? 0 : -EINVAL;
}

int acl_parse(const uint8_t *buf, size_t len, struct acl *acl)
{
	size_t n;
	int ret;

	if (len < ACL_HDR_SIZE || (len - ACL_HDR_SIZE) % ACL_ENTRY_SIZE ||
	    get32(buf) != ACL_XATTR_VERSION)
		return -EINVAL;
	n = (len - ACL_HDR_SIZE) / ACL_ENTRY_SIZE;
	if (n > ACL_MAX_ENTRIES)
		return -EINVAL;
	acl->n = (uint32_t)n;
	acl->e = NULL;
	if (n == 0)
		return 0;
	acl->e = calloc(n, sizeof(*acl->e));
	if (!acl->e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = buf + ACL_HDR_SIZE + i * ACL_ENTRY_SIZE;
		struct acl_entry *e = &acl->e[i];

		e->tag = get16(p);
		e->perm = get16(p + 2);
		e->id = (e->tag == ACL_TAG_USER || e->tag == ACL_TAG_GROUP) ?
			get32(p + 4) : ACL_ID_NONE;
	}
	ret = acl_check(acl);
	if (ret)
		acl_fini(acl);
	return ret;
}

void acl_fini(struct acl *acl)
{
	free(acl->e);
	acl->e = NULL;
	acl->n = 0;
}

size_t acl_size(const struct acl *acl)
{
	return ACL_HDR_SIZE + (size_t)acl->n * ACL_ENTRY_SIZE;
}

void acl_encode(const struct acl *acl, uint8_t *out)
{
	put32(out, ACL_XATTR_VERSION);
	for (uint32_t i = 0; i < acl->n; i++) {
		uint8_t *p = out + ACL_HDR_SIZE + (size_t)i * ACL_ENTRY_SIZE;

		put16(p, acl->e[i].tag);
		put16(p + 2, acl->e[i].perm);
		put32(p + 4, acl->e[i].id);
	}
}

int acl_equiv_mode(const struct acl *acl, uint32_t *mode)
{
	uint32_t m = 0;
	int not_equiv = 0;

	/* in order: a MASK comes after GROUP_OBJ and overrides its bits */
	for (uint32_t i = 0; i < acl->n; i++) {
		uint32_t perm = acl->e[i].perm & ACL_PERM_RWX;

		switch (acl->e[i].tag) {
		case ACL_TAG_USER_OBJ: m |= perm << 6; break;
		case ACL_TAG_GROUP_OBJ: m |= perm << 3; break;
		case ACL_TAG_OTHER: m |= perm; break;
		case ACL_TAG_MASK:
			m = (m & ~070u) | perm << 3;
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
		}
	}
	*mode = (*mode & ~0777u) | m;
	return not_equiv;
}

int acl_create_masq(struct acl *acl, uint32_t *mode)
{
	struct acl_entry *group_obj = NULL, *mask = NULL;
	uint32_t m = *mode & 0777u;
	int not_equiv = 0;

	for (uint32_t i = 0; i < acl->n; i++) {
		struct acl_entry *e = &acl->e[i];

		switch (e->tag) {
		case ACL_TAG_USER_OBJ:
			e->perm &= (m >> 6) & ACL_PERM_RWX;
			m &= (uint32_t)e->perm << 6 | ~0700u;
			break;
		case ACL_TAG_OTHER:
			e->perm &= m & ACL_PERM_RWX;
			m &= e->perm | ~07u;
			break;
		case ACL_TAG_GROUP_OBJ:
			group_obj = e;
			break;
		case ACL_TAG_MASK:
			mask = e;
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
		}
	}
	/* the mask (or the owning group without one) limits the group bits */
	if (!mask)
		mask = group_obj;
	if (!mask)
		return -EINVAL;
	mask->perm &= (m >> 3) & ACL_PERM_RWX;
	m &= (uint32_t)mask->perm << 3 | ~070u;
	*mode = (*mode & ~0777u) | m;
	return not_equiv;
}

void acl_chmod(struct acl *acl, uint32_t mode)
{
	struct acl_entry *group_obj = NULL, *mask = NULL;

	for (uint32_t i = 0; i < acl->n; i++) {
		struct acl_entry *e = &acl->e[i];

		switch (e->tag) {
		case ACL_TAG_USER_OBJ: e->perm = (mode >> 6) & ACL_PERM_RWX; break;
		case ACL_TAG_OTHER: e->perm = mode & ACL_PERM_RWX; break;
		case ACL_TAG_GROUP_OBJ: group_obj = e; break;
		case ACL_TAG_MASK: mask = e; break;
		}
	}
	if (!mask)
		mask = group_obj;
	if (mask)
		mask->perm = (mode >> 3) & ACL_PERM_RWX;
}
