/*
 * ns_acl.c - POSIX ACLs on inodes (docs/acl.md): the xattrs
 * system.posix_acl_access and system.posix_acl_default, kept as 'X'
 * records like any xattr, and what Linux does with them that the kernel
 * leaves to a FUSE server with FUSE_POSIX_ACL: inheriting a directory's
 * default ACL on create (or applying the creator's umask without one),
 * keeping the access ACL and the mode bits in step on chmod and on
 * setting the ACL; and checking a caller's access with them (the mds
 * enforces them itself, mds/perm.h). Callers hold the inode's lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "mds/acl.h"
#include "mds/ns_int.h"
#include "mds/perm.h"

int nsacl_xattr_kind(const char *name, size_t len)
{
	if (len == sizeof(ACL_XATTR_ACCESS) - 1 && !memcmp(name, ACL_XATTR_ACCESS, len))
		return NSACL_ACCESS;
	if (len == sizeof(ACL_XATTR_DEFAULT) - 1 && !memcmp(name, ACL_XATTR_DEFAULT, len))
		return NSACL_DEFAULT;
	return 0;
}

static const char *kind_name(int kind)
{
	return kind == NSACL_ACCESS ? ACL_XATTR_ACCESS : ACL_XATTR_DEFAULT;
}

/* The stored ACL of @kind on @ino: 0 with @acl filled, -ENOENT, -EIO
 * (a record that does not parse: logged), -ENOMEM. */
static int acl_load(struct ns *ns, uint64_t ino, int kind, struct acl *acl,
		    char **raw, size_t *rawlen)
{
	const char *name = kind_name(kind);
	uint8_t k[NS_KEY_MAX];
	char *v;
	size_t vlen;
	int ret;

	ret = kvdb_get(ns->db, k, key_xattr(k, ino, name, strlen(name)), &v, &vlen);
	if (ret)
		return ret;
	ret = acl_parse((const uint8_t *)v, vlen, acl);
	if (ret == -EINVAL) {
		log_err("inode %" PRIu64 ": malformed %s record", ino, name);
		ret = -EIO;
	}
	if (ret == 0 && acl->n == 0) {
		acl_fini(acl);
		ret = -ENOENT;          /* never stored so; as no ACL */
	}
	if (ret == 0 && raw) {
		*raw = v;
		*rawlen = vlen;
	} else {
		free(v);
	}
	return ret;
}

static int acl_store(struct kvbatch *b, uint64_t ino, int kind, const struct acl *acl)
{
	const char *name = kind_name(kind);
	uint8_t k[NS_KEY_MAX];
	size_t len = acl_size(acl);
	uint8_t *v = malloc(len);

	if (!v)
		return -ENOMEM;
	acl_encode(acl, v);
	kvbatch_put(b, k, key_xattr(k, ino, name, strlen(name)), v, len);
	free(v);
	return 0;
}

int nsacl_create(struct ns *ns, struct kvbatch *b, const struct inode *dir,
		 struct inode *in, uint32_t flags)
{
	struct acl acl;
	char *raw;
	size_t rawlen;
	uint32_t mode = in->a.mode;
	int ret;

	if (S_ISLNK(in->a.mode))
		return 0;
	ret = acl_load(ns, dir->a.ino, NSACL_DEFAULT, &acl, &raw, &rawlen);
	if (ret == -ENOENT) {
		if (flags & SDFS_NS_UMASK)
			in->a.mode &= ~(flags & 0777u);
		return 0;
	}
	if (ret)
		return ret;
	/* a directory passes its default ACL on as is, to subdirectories */
	if (S_ISDIR(in->a.mode)) {
		uint8_t k[NS_KEY_MAX];

		kvbatch_put(b, k, key_xattr(k, in->a.ino, ACL_XATTR_DEFAULT,
					    sizeof(ACL_XATTR_DEFAULT) - 1), raw, rawlen);
	}
	free(raw);
	ret = acl_create_masq(&acl, &mode);
	if (ret > 0)
		ret = acl_store(b, in->a.ino, NSACL_ACCESS, &acl);
	if (ret == 0)
		in->a.mode = mode;
	acl_fini(&acl);
	return ret < 0 ? ret : 0;
}

int nsacl_chmod(struct ns *ns, struct kvbatch *b, const struct inode *in)
{
	struct acl acl;
	int ret;

	if (S_ISLNK(in->a.mode))
		return 0;
	ret = acl_load(ns, in->a.ino, NSACL_ACCESS, &acl, NULL, NULL);
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	acl_chmod(&acl, in->a.mode);
	ret = acl_store(b, in->a.ino, NSACL_ACCESS, &acl);
	acl_fini(&acl);
	return ret;
}

int nsacl_set(struct inode *in, int kind, const uint8_t *val, uint32_t len,
	      uint32_t flags)
{
	struct acl acl;
	uint32_t mode = in->a.mode;
	int ret;

	if (S_ISLNK(in->a.mode))
		return -EOPNOTSUPP;
	ret = acl_parse(val, len, &acl);
	if (ret)
		return ret;
	if (kind == NSACL_DEFAULT) {
		/* only directories have one; an empty one removes it */
		if (!S_ISDIR(in->a.mode))
			ret = acl.n ? -EACCES : 0;
		else
			ret = acl.n ? 1 : 0;
		acl_fini(&acl);
		return ret;
	}
	if (acl.n == 0)
		return 0;
	/* An access ACL is the mode's bits and more: set them from it, and
	 * keep it only if it says more (posix_acl_update_mode). */
	ret = acl_equiv_mode(&acl, &mode);
	acl_fini(&acl);
	if (flags & SDFS_NS_XATTR_KILL_SGID)
		mode &= ~(uint32_t)S_ISGID;
	in->a.mode = mode;
	return ret;
}

int nsacl_access(struct ns *ns, const struct ns_caller *who, const struct inode *in,
		 unsigned mask)
{
	struct acl acl;
	int ret;

	/* the ACL matters only to others than the owner, when the group
	 * bits (its mask) are not all clear; root passes all but exec */
	if (who->uid == in->a.uid || perm_is_root(who) || !(in->a.mode & S_IRWXG) ||
	    S_ISLNK(in->a.mode))
		return perm_access(who, &in->a, NULL, mask);
	ret = acl_load(ns, in->a.ino, NSACL_ACCESS, &acl, NULL, NULL);
	if (ret == -ENOENT)
		return perm_access(who, &in->a, NULL, mask);
	if (ret)
		return ret;
	ret = perm_access(who, &in->a, &acl, mask);
	acl_fini(&acl);
	return ret;
}
