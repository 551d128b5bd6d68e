/*
 * perm.c - permission rules (perm.h), after Linux's fs/namei.c,
 * fs/posix_acl.c, fs/attr.c and fs/xattr.c.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "mds/perm.h"

static_assert(NS_GROUPS_MAX == SDFS_NS_GROUPS_MAX, "ns_caller holds the wire's groups");

int perm_is_root(const struct ns_caller *who)
{
	return who->uid == 0;
}

int perm_in_group(const struct ns_caller *who, uint32_t gid)
{
	if (who->gid == gid)
		return 1;
	for (uint32_t i = 0; i < who->ngroups && i < NS_GROUPS_MAX; i++)
		if (who->groups[i] == gid)
			return 1;
	return 0;
}

int perm_is_owner(const struct ns_caller *who, const struct sdfs_attr *a)
{
	return who->uid == a->uid || perm_is_root(who);
}

/* posix_acl_permission: the first entry that names the caller decides,
 * named users and groups limited by the mask; -EAGAIN: owner (the mode
 * bits decide). */
static int acl_permission(const struct ns_caller *who, const struct sdfs_attr *a,
			  const struct acl *acl, unsigned want)
{
	const struct acl_entry *pe = NULL;
	int found = 0;

	for (uint32_t i = 0; i < acl->n && !pe; i++) {
		const struct acl_entry *e = &acl->e[i];

		switch (e->tag) {
		case ACL_TAG_USER_OBJ:
			if (who->uid == a->uid)
				return (e->perm & want) == want ? 0 : -EACCES;
			break;
		case ACL_TAG_USER:
			if (who->uid == e->id)
				pe = e;
			break;
		case ACL_TAG_GROUP_OBJ:
		case ACL_TAG_GROUP:
			if (perm_in_group(who, e->tag == ACL_TAG_GROUP ? e->id : a->gid)) {
				found = 1;
				if ((e->perm & want) == want)
					pe = e;
			}
			break;
		case ACL_TAG_MASK:
			break;
		case ACL_TAG_OTHER:
			if (found)
				return -EACCES;
			return (e->perm & want) == want ? 0 : -EACCES;
		}
	}
	if (!pe)
		return -EACCES;         /* no OTHER: not from acl_parse */
	for (const struct acl_entry *m = pe + 1; m < acl->e + acl->n; m++)
		if (m->tag == ACL_TAG_MASK)
			return (pe->perm & m->perm & want) == want ? 0 : -EACCES;
	return (pe->perm & want) == want ? 0 : -EACCES;
}

/* acl_permission_check: the mode bits (and the ACL) alone. */
static int mode_permission(const struct ns_caller *who, const struct sdfs_attr *a,
			   const struct acl *acl, unsigned mask)
{
	uint32_t mode = a->mode;

	if (who->uid == a->uid)
		return ((mode >> 6) & mask) == mask ? 0 : -EACCES;
	if (acl && acl->n && (mode & S_IRWXG))
		return acl_permission(who, a, acl, mask);
	if (perm_in_group(who, a->gid))
		mode >>= 3;
	return (mode & mask) == mask ? 0 : -EACCES;
}

int perm_access(const struct ns_caller *who, const struct sdfs_attr *a,
		const struct acl *acl, unsigned mask)
{
	mask &= PERM_READ | PERM_WRITE | PERM_EXEC;
	if (mode_permission(who, a, acl, mask) == 0)
		return 0;
	if (!perm_is_root(who))
		return -EACCES;
	/* CAP_DAC_OVERRIDE: all, but running a file no one may run */
	if (S_ISDIR(a->mode) || !(mask & PERM_EXEC) ||
	    (a->mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
		return 0;
	return -EACCES;
}

int perm_sticky(const struct ns_caller *who, const struct sdfs_attr *dir,
		const struct sdfs_attr *victim)
{
	if (!(dir->mode & S_ISVTX))
		return 0;
	if (who->uid == victim->uid || who->uid == dir->uid || perm_is_root(who))
		return 0;
	return -EPERM;
}

#define SET_TIMES_EXPLICIT (SDFS_SET_ATIME | SDFS_SET_MTIME)
#define SET_TIMES_NOW (SDFS_SET_ATIME_NOW | SDFS_SET_MTIME_NOW)

int perm_setattr(const struct ns_caller *who, const struct sdfs_attr *a,
		 uint32_t flags, uint32_t *mode, uint32_t uid, uint32_t gid,
		 int may_read, int may_write)
{
	int owner = perm_is_owner(who, a);
	int root = perm_is_root(who);

	if (flags & SDFS_SET_UID) {
		if (!root && !(who->uid == a->uid && uid == a->uid))
			return -EPERM;
	}
	if (flags & SDFS_SET_GID) {
		if (!root && !(who->uid == a->uid &&
			       (gid == a->gid || perm_in_group(who, gid))))
			return -EPERM;
	}
	if (flags & SDFS_SET_MODE) {
		uint32_t kill = S_ISUID | S_ISGID;
		uint32_t newgid = flags & SDFS_SET_GID ? gid : a->gid;

		if (!owner) {
			/* a write's kill of setuid/setgid (the kernel sends
			 * it as a chmod from the writer; setgid goes only
			 * with group exec): only those bits, only dropped */
			uint32_t nm = *mode & 07777, om = a->mode & 07777;

			if ((nm & ~kill) != (om & ~kill) || (nm & ~om) || nm == om ||
			    may_write)
				return -EPERM;
		} else if (!root && !perm_in_group(who, newgid)) {
			*mode &= ~(uint32_t)S_ISGID;
		}
	}
	if (flags & SDFS_SET_SIZE) {
		if (flags & SDFS_SET_FH)
			;               /* opened for writing: checked then */
		else if (flags & SDFS_SET_EXTEND) {
			if (may_write && !owner)
				return may_write;
		} else if (may_write) {
			return may_write;
		}
	}
	if (flags & SET_TIMES_EXPLICIT) {
		if (!owner)
			return -EPERM;
	}
	if (flags & SET_TIMES_NOW) {
		/* a read's atime: ATIME_NOW alone, without CTIME */
		int read_atime = (flags & SET_TIMES_NOW) == SDFS_SET_ATIME_NOW &&
				 !(flags & SDFS_SET_CTIME);

		if (!owner && (read_atime ? may_read && may_write : may_write))
			return -EACCES;
	}
	return 0;
}

static int has_prefix(const char *name, size_t len, const char *pfx)
{
	size_t pl = strlen(pfx);

	return len > pl && memcmp(name, pfx, pl) == 0;
}

int perm_xattr(const struct ns_caller *who, const struct sdfs_attr *a,
	       const char *name, size_t len, int write, int may)
{
	if (has_prefix(name, len, "trusted."))
		return perm_is_root(who) ? 0 : write ? -EPERM : -ENODATA;
	if (has_prefix(name, len, "security.")) {
		static const char cap[] = "security.capability";

		if (!write || perm_is_root(who))
			return 0;
		if (write == 2 && len == sizeof(cap) - 1 && !memcmp(name, cap, len))
			return may;
		return -EPERM;
	}
	if (has_prefix(name, len, "user.")) {
		if (!S_ISREG(a->mode) && !S_ISDIR(a->mode))
			return write ? -EPERM : -ENODATA;
		if (write && S_ISDIR(a->mode) && (a->mode & S_ISVTX) &&
		    !perm_is_owner(who, a))
			return -EPERM;
		return may;
	}
	/* system.posix_acl_access, system.posix_acl_default */
	if (!write || perm_is_owner(who, a))
		return 0;
	return -EPERM;
}

int perm_xattr_listed(const struct ns_caller *who, const char *name, size_t len)
{
	return perm_is_root(who) || !has_prefix(name, len, "trusted.");
}
