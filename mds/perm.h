/*
 * perm.h - who may do what to an inode: the mds's own permission checks
 * (docs/mds.md "Permissions"), as Linux's VFS makes them
 * (generic_permission, posix_acl_permission, may_delete, setattr_prepare,
 * xattr_permission), against the caller's ids in the request, never
 * trusting what the client's kernel checked.
 *
 * uid 0 is root: it passes the mode and ACL checks as CAP_DAC_OVERRIDE
 * and CAP_FOWNER do (executing a non-directory still needs some x bit),
 * and may chown. A key's squash and uid/gid maps are applied to the
 * caller before (mds/caller.c). Pure functions on caller memory: safe
 * from any thread. Loading ACLs and calling these for each operation is
 * mds/ns_perm.c's.
 */
#ifndef SDFS_MDS_PERM_H
#define SDFS_MDS_PERM_H
#include <stddef.h>
#include <stdint.h>

#include "common/sdfs_proto.h"
#include "mds/acl.h"
#include "mds/ns.h"

#define PERM_EXEC  1u           /* also: search a directory */
#define PERM_WRITE 2u
#define PERM_READ  4u

int perm_is_root(const struct ns_caller *who);
/* Is @gid the caller's group or one of its supplementary groups? */
int perm_in_group(const struct ns_caller *who, uint32_t gid);
/* Does the caller own @a (or is root: inode_owner_or_capable)? */
int perm_is_owner(const struct ns_caller *who, const struct sdfs_attr *a);

/*
 * May @who access the inode with attributes @a and access ACL @acl
 * (NULL: none) for @mask (PERM_*)? 0 or -EACCES. The owner is judged by
 * the owner bits alone; others by the ACL when there is one and the
 * group bits are not all clear, else the group or other bits.
 */
int perm_access(const struct ns_caller *who, const struct sdfs_attr *a,
		const struct acl *acl, unsigned mask);

/*
 * Removing or replacing @victim from directory @dir (the caller may
 * already write and search @dir): a sticky directory lets only the
 * owner of either, or root, do it. 0 or -EPERM.
 */
int perm_sticky(const struct ns_caller *who, const struct sdfs_attr *dir,
		const struct sdfs_attr *victim);

/*
 * A SETATTR of @a with SDFS_SET_* @flags, new @mode, @uid, @gid
 * (@may_write: perm_access(PERM_WRITE) of the inode, 0 or -EACCES).
 * Returns 0, -EPERM or -EACCES as Linux would; on 0 *@mode is the mode
 * to set (setgid dropped when a caller outside the group chmods).
 *   mode: the owner or root; someone who may write may only drop
 *         setuid/setgid (the kernel's kill on write);
 *   uid: root (the owner may "change" it to itself);
 *   gid: root, or the owner to a group it is in;
 *   size: needs write permission, unless SDFS_SET_FH (ftruncate of a
 *         file opened for writing) or a writer's pushed size
 *         (SDFS_SET_EXTEND) from the owner;
 *   times: explicit ones the owner; NOW the owner or a writer; a read's
 *          atime (ATIME_NOW without CTIME) any reader.
 */
int perm_setattr(const struct ns_caller *who, const struct sdfs_attr *a,
		 uint32_t flags, uint32_t *mode, uint32_t uid, uint32_t gid,
		 int may_read, int may_write);

/*
 * Reading (@write 0: get) or changing (@write 1: set, remove) xattr
 * @name (@len bytes) of @a; @may: perm_access of PERM_READ or PERM_WRITE
 * for it. user.*: that permission, on regular files and directories
 * only (others: -EPERM to set, -ENODATA to get); trusted.*: root
 * (-EPERM, -ENODATA to get); security.*: anyone gets, root sets
 * (security.capability: a writer may remove it, the kernel's kill on
 * write); system.posix_acl_*: anyone gets, the owner or root sets.
 * 0 or the error.
 */
int perm_xattr(const struct ns_caller *who, const struct sdfs_attr *a,
	       const char *name, size_t len, int write, int may);
/* May @who see xattr @name in a listing? (trusted.*: root only) */
int perm_xattr_listed(const struct ns_caller *who, const char *name, size_t len);
#endif
