/*
 * perm_test.c - the permission rules (perm.h) against what Linux does.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "mds/perm.h"

static struct ns_caller user(uint32_t uid, uint32_t gid)
{
	return (struct ns_caller){ .uid = uid, .gid = gid };
}

static struct sdfs_attr file(uint32_t mode, uint32_t uid, uint32_t gid)
{
	return (struct sdfs_attr){ .mode = mode, .uid = uid, .gid = gid };
}

Test(perm, mode_bits_owner_group_other)
{
	struct ns_caller alice = user(1000, 1000), bob = user(1001, 1001);
	struct sdfs_attr f = file(S_IFREG | 0640, 1000, 1000);

	cr_assert_eq(perm_access(&alice, &f, NULL, PERM_READ | PERM_WRITE), 0);
	cr_assert_eq(perm_access(&alice, &f, NULL, PERM_EXEC), -EACCES);
	cr_assert_eq(perm_access(&bob, &f, NULL, PERM_READ), -EACCES);
	bob.groups[bob.ngroups++] = 1000;       /* a supplementary group */
	cr_assert_eq(perm_access(&bob, &f, NULL, PERM_READ), 0);
	cr_assert_eq(perm_access(&bob, &f, NULL, PERM_WRITE), -EACCES);
	/* the owner gets the owner bits only, even if others get more */
	f.mode = S_IFREG | 0077;
	cr_assert_eq(perm_access(&alice, &f, NULL, PERM_READ), -EACCES);
}

Test(perm, root_overrides_but_exec_needs_an_x_bit)
{
	struct ns_caller root = user(0, 0);
	struct sdfs_attr f = file(S_IFREG | 0600, 1000, 1000);
	struct sdfs_attr d = file(S_IFDIR | 0000, 1000, 1000);

	cr_assert_eq(perm_access(&root, &f, NULL, PERM_READ | PERM_WRITE), 0);
	cr_assert_eq(perm_access(&root, &f, NULL, PERM_EXEC), -EACCES);
	f.mode |= S_IXOTH;
	cr_assert_eq(perm_access(&root, &f, NULL, PERM_EXEC), 0);
	cr_assert_eq(perm_access(&root, &d, NULL, PERM_EXEC | PERM_WRITE), 0);
}

/* user::rw- user:1001:rwx group::r-- mask::r-x other::--- */
static struct acl_entry ents[] = {
	{ ACL_TAG_USER_OBJ, 6, ACL_ID_NONE }, { ACL_TAG_USER, 7, 1001 },
	{ ACL_TAG_GROUP_OBJ, 4, ACL_ID_NONE }, { ACL_TAG_GROUP, 2, 2000 },
	{ ACL_TAG_MASK, 5, ACL_ID_NONE }, { ACL_TAG_OTHER, 0, ACL_ID_NONE },
};

Test(perm, acl_named_entries_limited_by_the_mask)
{
	struct acl acl = { .n = 6, .e = ents };
	struct sdfs_attr f = file(S_IFREG | 0650, 1000, 1000);      /* group bits = mask */
	struct ns_caller named = user(1001, 5), grp = user(1002, 1000);
	struct ns_caller other = user(1003, 5), g2000 = user(1004, 2000);

	cr_assert_eq(perm_access(&named, &f, &acl, PERM_READ | PERM_EXEC), 0);
	cr_assert_eq(perm_access(&named, &f, &acl, PERM_WRITE), -EACCES); /* masked */
	cr_assert_eq(perm_access(&grp, &f, &acl, PERM_READ), 0);
	cr_assert_eq(perm_access(&grp, &f, &acl, PERM_EXEC), -EACCES);
	cr_assert_eq(perm_access(&other, &f, &acl, PERM_READ), -EACCES);
	/* in a matching group that grants nothing wanted: not "other" */
	cr_assert_eq(perm_access(&g2000, &f, &acl, PERM_WRITE), -EACCES);
	/* without the ACL the mode's group bits (the mask) would decide */
	cr_assert_eq(perm_access(&grp, &f, NULL, PERM_EXEC), 0);
	cr_assert_eq(perm_access(&named, &f, NULL, PERM_READ), -EACCES);
}

Test(perm, sticky_directory)
{
	struct sdfs_attr dir = file(S_IFDIR | 01777, 0, 0);
	struct sdfs_attr f = file(S_IFREG | 0644, 1000, 1000);
	struct ns_caller alice = user(1000, 1000), bob = user(1001, 1001), root = user(0, 0);

	cr_assert_eq(perm_sticky(&alice, &dir, &f), 0);
	cr_assert_eq(perm_sticky(&bob, &dir, &f), -EPERM);
	cr_assert_eq(perm_sticky(&root, &dir, &f), 0);
	dir.uid = 1001;                         /* the directory's owner */
	cr_assert_eq(perm_sticky(&bob, &dir, &f), 0);
	dir.mode &= ~(uint32_t)S_ISVTX;
	dir.uid = 0;
	cr_assert_eq(perm_sticky(&bob, &dir, &f), 0);
}

Test(perm, setattr_ownership_and_mode)
{
	struct sdfs_attr f = file(S_IFREG | 02755, 1000, 1000);
	struct ns_caller alice = user(1000, 1000), bob = user(1001, 1001), root = user(0, 0);
	uint32_t mode = 0644;

	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MODE, &mode, 0, 0, 0, -EACCES), -EPERM);
	cr_assert_eq(perm_setattr(&alice, &f, SDFS_SET_MODE, &mode, 0, 0, 0, 0), 0);
	cr_assert_eq(perm_setattr(&alice, &f, SDFS_SET_UID, &mode, 1001, 0, 0, 0), -EPERM);
	cr_assert_eq(perm_setattr(&alice, &f, SDFS_SET_UID, &mode, 1000, 0, 0, 0), 0);
	cr_assert_eq(perm_setattr(&root, &f, SDFS_SET_UID, &mode, 1001, 0, 0, 0), 0);
	/* chgrp: the owner, to a group it is in */
	cr_assert_eq(perm_setattr(&alice, &f, SDFS_SET_GID, &mode, 0, 2000, 0, 0), -EPERM);
	alice.groups[alice.ngroups++] = 2000;
	cr_assert_eq(perm_setattr(&alice, &f, SDFS_SET_GID, &mode, 0, 2000, 0, 0), 0);
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_GID, &mode, 0, 1001, 0, 0), -EPERM);
	/* chmod by the owner outside the file's group drops setgid */
	f.gid = 3000;
	mode = 02755;
	cr_assert_eq(perm_setattr(&alice, &f, SDFS_SET_MODE, &mode, 0, 0, 0, 0), 0);
	cr_assert_eq(mode, 0755);
	mode = 02755;
	cr_assert_eq(perm_setattr(&root, &f, SDFS_SET_MODE, &mode, 0, 0, 0, 0), 0);
	cr_assert_eq(mode, 02755);
	/* a writer's kill of setuid/setgid is no chmod of its own */
	mode = 0755;
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MODE, &mode, 0, 0, 0, 0), 0);
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MODE, &mode, 0, 0, 0, -EACCES), -EPERM);
	mode = 0700;
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MODE, &mode, 0, 0, 0, 0), -EPERM);
	f.mode = S_IFREG | 06745;       /* no group exec: setgid stays */
	mode = 02745;
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MODE, &mode, 0, 0, 0, 0), 0);
	mode = 06745;                   /* no change is no kill */
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MODE, &mode, 0, 0, 0, 0), -EPERM);
	mode = 07745;                   /* nor is adding a bit */
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MODE, &mode, 0, 0, 0, 0), -EPERM);
}

Test(perm, setattr_size_and_times)
{
	struct sdfs_attr f = file(S_IFREG | 0644, 1000, 1000);
	struct ns_caller alice = user(1000, 1000), bob = user(1001, 1001);
	uint32_t mode = 0;

	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_SIZE, &mode, 0, 0, 0, -EACCES), -EACCES);
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_SIZE, &mode, 0, 0, 0, 0), 0);
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_SIZE | SDFS_SET_FH, &mode, 0, 0, 0,
				  -EACCES), 0);
	/* the owner's pushed size after a chmod took write away */
	cr_assert_eq(perm_setattr(&alice, &f, SDFS_SET_SIZE | SDFS_SET_EXTEND, &mode, 0, 0,
				  0, -EACCES), 0);
	cr_assert_eq(perm_setattr(&alice, &f, SDFS_SET_SIZE, &mode, 0, 0, 0, -EACCES),
		     -EACCES);
	/* explicit times: the owner only; now: the owner or a writer */
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MTIME | SDFS_SET_CTIME, &mode, 0, 0, 0, 0),
		     -EPERM);
	cr_assert_eq(perm_setattr(&alice, &f, SDFS_SET_MTIME, &mode, 0, 0, -EACCES, -EACCES), 0);
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MTIME_NOW | SDFS_SET_ATIME_NOW |
				  SDFS_SET_CTIME, &mode, 0, 0, 0, -EACCES), -EACCES);
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_MTIME_NOW | SDFS_SET_CTIME, &mode, 0, 0,
				  -EACCES, 0), 0);
	/* a read's atime (no CTIME): a reader */
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_ATIME_NOW, &mode, 0, 0, 0, -EACCES), 0);
	cr_assert_eq(perm_setattr(&bob, &f, SDFS_SET_ATIME_NOW, &mode, 0, 0, -EACCES, -EACCES),
		     -EACCES);
}

static int xa(const struct ns_caller *who, const struct sdfs_attr *a, const char *name,
	      int write, int may)
{
	return perm_xattr(who, a, name, strlen(name), write, may);
}

Test(perm, xattr_namespaces)
{
	struct sdfs_attr f = file(S_IFREG | 0644, 1000, 1000);
	struct sdfs_attr l = file(S_IFLNK | 0777, 1000, 1000);
	struct sdfs_attr d = file(S_IFDIR | 01777, 0, 0);
	struct ns_caller alice = user(1000, 1000), bob = user(1001, 1001), root = user(0, 0);

	cr_assert_eq(xa(&bob, &f, "user.a", 0, 0), 0);
	cr_assert_eq(xa(&bob, &f, "user.a", 1, -EACCES), -EACCES);
	cr_assert_eq(xa(&alice, &f, "user.a", 1, 0), 0);
	cr_assert_eq(xa(&alice, &l, "user.a", 1, 0), -EPERM);
	cr_assert_eq(xa(&alice, &l, "user.a", 0, 0), -ENODATA);
	cr_assert_eq(xa(&alice, &d, "user.a", 1, 0), -EPERM);       /* sticky dir */
	cr_assert_eq(xa(&alice, &f, "trusted.a", 1, 0), -EPERM);
	cr_assert_eq(xa(&alice, &f, "trusted.a", 0, 0), -ENODATA);
	cr_assert_eq(xa(&root, &f, "trusted.a", 1, -EACCES), 0);
	cr_assert_eq(xa(&alice, &f, "security.selinux", 0, 0), 0);
	cr_assert_eq(xa(&alice, &f, "security.selinux", 1, 0), -EPERM);
	cr_assert_eq(xa(&bob, &f, "security.capability", 2, 0), 0);
	cr_assert_eq(xa(&bob, &f, "security.capability", 2, -EACCES), -EACCES);
	cr_assert_eq(xa(&bob, &f, "system.posix_acl_access", 0, -EACCES), 0);
	cr_assert_eq(xa(&bob, &f, "system.posix_acl_access", 1, 0), -EPERM);
	cr_assert_eq(xa(&alice, &f, "system.posix_acl_access", 1, -EACCES), 0);
	cr_assert(!perm_xattr_listed(&alice, "trusted.a", 9));
	cr_assert(perm_xattr_listed(&root, "trusted.a", 9));
	cr_assert(perm_xattr_listed(&alice, "user.a", 6));
}
