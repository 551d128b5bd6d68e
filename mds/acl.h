/*
 * acl.h - POSIX ACLs in their xattr form (system.posix_acl_access and
 * system.posix_acl_default, docs/acl.md): parsing and validating the
 * bytes a client sends, and the three rules Linux applies to them
 * (fs/posix_acl.c): the mode an access ACL stands for, the ACL and mode
 * a new inode gets from its directory's default ACL, and the ACL a
 * chmod leaves.
 *
 * The xattr form: le32 version (2), then entries of le16 tag, le16 perm,
 * le32 id (the id only for ACL_USER and ACL_GROUP, else ACL_ID_NONE).
 * Pure functions on caller memory: safe from any thread. Reading and
 * writing the xattrs of inodes is mds/ns_acl.c's.
 */
#ifndef SDFS_MDS_ACL_H
#define SDFS_MDS_ACL_H
#include <stddef.h>
#include <stdint.h>

#include "common/sdfs_proto.h"

#define ACL_XATTR_ACCESS  "system.posix_acl_access"
#define ACL_XATTR_DEFAULT "system.posix_acl_default"
#define ACL_XATTR_VERSION 2u
#define ACL_HDR_SIZE 4u
#define ACL_ENTRY_SIZE 8u
/* as many entries as an xattr value can hold */
#define ACL_MAX_ENTRIES ((SDFS_XATTR_SIZE_MAX - ACL_HDR_SIZE) / ACL_ENTRY_SIZE)

/* tags and perms as in linux/posix_acl.h */
#define ACL_TAG_USER_OBJ  0x01
#define ACL_TAG_USER      0x02
#define ACL_TAG_GROUP_OBJ 0x04
#define ACL_TAG_GROUP     0x08
#define ACL_TAG_MASK      0x10
#define ACL_TAG_OTHER     0x20
#define ACL_PERM_RWX      07u
#define ACL_ID_NONE       0xffffffffu

struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

struct acl {
	uint32_t n;
	struct acl_entry *e;    /* malloc'd; acl_fini frees it */
};

/*
 * Parse and validate @len bytes at @buf into @acl (0), as the kernel's
 * posix_acl_valid does: version 2, whole entries, perms within rwx, the
 * tags in order USER_OBJ, USER*, GROUP_OBJ, GROUP*, MASK, OTHER, each
 * of USER_OBJ, GROUP_OBJ and OTHER once, MASK required when a USER or
 * GROUP entry is there. -EINVAL for anything else (never reads past
 * @len), -ENOMEM. Zero entries is valid (n 0: "no ACL", as Linux
 * removes the ACL then).
 */
int acl_parse(const uint8_t *buf, size_t len, struct acl *acl);
void acl_fini(struct acl *acl);

/* The xattr bytes of @acl: ACL_HDR_SIZE + n * ACL_ENTRY_SIZE at @out. */
size_t acl_size(const struct acl *acl);
void acl_encode(const struct acl *acl, uint8_t *out);

/*
 * posix_acl_equiv_mode: set the rwx bits of *@mode to what @acl grants
 * (the group bits from MASK when there is one). Returns 0 if the ACL
 * says nothing more than those bits (it need not be stored), else 1.
 */
int acl_equiv_mode(const struct acl *acl, uint32_t *mode);

/*
 * posix_acl_create_masq: @acl is a copy of the directory's default
 * ACL; the create mode *@mode (umask not applied) and the ACL mask each
 * other: entries lose what the mode's bits deny, the mode loses what
 * the entries deny. Returns 0 if the result is equivalent to the mode,
 * 1 if it must be stored as the new inode's access ACL, -EINVAL when
 * there is no GROUP_OBJ (not from acl_parse).
 */
int acl_create_masq(struct acl *acl, uint32_t *mode);

/*
 * posix_acl_chmod: after a chmod to @mode, USER_OBJ and OTHER take the
 * mode's owner and other bits, MASK (GROUP_OBJ without a mask) the
 * group bits; named entries keep theirs.
 */
void acl_chmod(struct acl *acl, uint32_t mode);
#endif
