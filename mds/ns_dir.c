/*
 * ns_dir.c - reading: readdir(plus), readlink, statfs, xattrs, and
 * the mds's own info.
 */
#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/net.h"
#include "common/oid.h"
#include "common/proto.h"
#include "mds/lease.h"
#include "mds/ns_int.h"
#include "mds/perm.h"

#define READDIR_MAX (64u << 10)

int op_readdir(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	       struct ns_reply *rep)
{
	int plus = (r->flags & SDFS_NS_PLUS) != 0;
	uint32_t max = r->max ? r->max : READDIR_MAX;
	struct kviter *it;
	struct inode dir;
	uint8_t pfx[17];
	size_t used = 0;
	int ret;

	if (max > READDIR_MAX)
		max = READDIR_MAX;
	ret = inode_get(ns, r->ino, &dir);
	if (ret)
		return ret;
	if (!S_ISDIR(dir.a.mode))
		return -ENOTDIR;
	ret = nsacl_access(ns, who, &dir, PERM_READ);
	if (ret)
		return ret;
	rep->data = malloc(max);
	it = kvdb_iter(ns->db);
	if (!rep->data || !it) {
		kviter_free(it);
		return -ENOMEM;
	}
	/* readdirplus: the kernel caches every name and inode it returns */
	if (plus)
		lease_grant_listing(ns->leases, r->client_id, r->ino);
	key_list(pfx, r->ino, r->arg < NS_FIRST_COOKIE ? NS_FIRST_COOKIE : r->arg);
	for (kviter_seek(it, pfx, 17); kviter_valid(it); kviter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)kviter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)kviter_value(it, &vlen);
		struct sdfs_dirent d;
		struct sdfs_attr a;
		struct inode in;
		size_t need;

		if (klen != 17 || memcmp(k, pfx, 9))
			break;
		if (vlen < 13 || vlen > 12 + SDFS_NAME_MAX) {
			log_err("dir %" PRIu64 ": malformed listing record", r->ino);
			continue;
		}
		d.ino = le64_get(v);
		d.type = le32_get(v + 8);
		d.name_len = (uint32_t)(vlen - 12);
		d.cookie = be64_get(k + 9) + 1;
		need = proto_dirent_size(d.name_len, plus);
		if (used + need > max) {
			rep->more = 1;
			break;
		}
		if (plus) {
			uint32_t f = lease_grant_inode(ns->leases, r->client_id, d.ino) ?
				     SDFS_ATTR_F_LEASED : 0;

			ret = inode_get(ns, d.ino, &in);
			if (ret)
				continue;       /* removed meanwhile */
			space_attr(ns, &in, &a);
			a.flags = f;
		}
		used += proto_dirent_encode(&d, (const char *)v + 12,
					    plus ? &a : NULL, rep->data + used);
	}
	kviter_free(it);
	if (used == 0 && rep->more) {
		free(rep->data);
		rep->data = NULL;
		return -EINVAL;         /* max too small for one entry */
	}
	rep->len = (uint32_t)used;
	return 0;
}

int op_readlink(struct ns *ns, const struct sdfs_ns_req *r, struct ns_reply *rep)
{
	struct inode in;
	uint8_t k[16];
	char *v;
	size_t vlen;
	int ret;

	ret = inode_get(ns, r->ino, &in);
	if (ret)
		return ret;
	if (!S_ISLNK(in.a.mode))
		return -EINVAL;
	ret = kvdb_get(ns->db, k, key_link(k, r->ino), &v, &vlen);
	if (ret)
		return ret == -ENOENT ? -EIO : ret;
	rep->data = (uint8_t *)v;
	rep->len = (uint32_t)vlen;
	return 0;
}

/*
 * df's numbers (docs/mount.md "Space"): the placed, answering nodes'
 * data filesystems, summed, each of total, free and avail (what the
 * daemon may still write: statvfs f_bavail) divided by the copies a
 * byte takes. Inodes: the files that exist, and as many more as the
 * smaller of the inode numbers left and the space: a non-empty file
 * takes at least one object, a block of STATFS_BYTES_PER_FILE on each
 * of its copies' filesystems.
 */
#define STATFS_BYTES_PER_FILE 4096u

int op_statfs(struct ns *ns, const struct sdfs_ns_req *r, struct ns_reply *rep)
{
	struct sdfs_ns_statfs sf;
	int64_t now = net_now_ms();
	uint64_t by_space;
	size_t len;

	pthread_mutex_lock(&ns->statfs_lock);
	if (now - ns->statfs_at > 1000) {
		struct sdfs_node_status *nodes = NULL;
		struct sdfs_cluster_info ci;
		size_t n = 0;
		uint64_t total = 0, used = 0, avail = 0;
		unsigned copies = 1;

		if (sdfs_cluster_info(ns->sdfs, &ci) == 0 && ci.copies)
			copies = ci.copies;
		if (sdfs_node_list(ns->sdfs, &nodes, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				if (!nodes[i].reachable || !nodes[i].placed)
					continue;
				total += nodes[i].total_bytes;
				used += nodes[i].used_bytes;
				avail += nodes[i].avail_bytes;
			}
			free(nodes);
		}
		memset(&ns->statfs, 0, sizeof(ns->statfs));
		ns->statfs.bytes_total = total / copies;
		ns->statfs.bytes_free = (total > used ? total - used : 0) / copies;
		ns->statfs.bytes_avail = avail / copies;
		if (ns->statfs.bytes_avail > ns->statfs.bytes_free)
			ns->statfs.bytes_avail = ns->statfs.bytes_free;
		ns->statfs_at = now;
	}
	sf = ns->statfs;
	pthread_mutex_unlock(&ns->statfs_lock);
	sf.files = atomic_load(&ns->inodes);
	sf.files_free = OID_INODES_FREE(ns->ino_next);
	by_space = sf.bytes_avail / STATFS_BYTES_PER_FILE;
	if (sf.files_free > by_space)
		sf.files_free = by_space;
	sf.bsize = 4096;
	sf.name_max = SDFS_NAME_MAX;
	/* a client before 1.6 wants the 40 bytes it knows */
	len = r->flags & SDFS_NS_STATFS_AVAIL ? SDFS_NS_STATFS_SIZE
					      : SDFS_NS_STATFS_SIZE_1_6;
	rep->data = malloc(SDFS_NS_STATFS_SIZE);
	if (!rep->data)
		return -ENOMEM;
	proto_ns_statfs_encode(&sf, rep->data);
	rep->len = (uint32_t)len;
	return 0;
}

/* -EOPNOTSUPP for namespaces other than user., trusted., security.
 * and the two POSIX ACL names of system. (ns_acl.c). */
static int xname_check(const char *name, size_t len)
{
	static const char *const pfx[] = { "user.", "trusted.", "security." };

	if (len == 0 || memchr(name, '\0', len))
		return -EINVAL;
	if (len > SDFS_XATTR_NAME_MAX)
		return -ERANGE;
	if (nsacl_xattr_kind(name, len))
		return 0;
	for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++) {
		size_t pl = strlen(pfx[i]);

		if (len > pl && memcmp(name, pfx[i], pl) == 0)
			return 0;
	}
	return -EOPNOTSUPP;
}

/* perm_xattr for @in, with the access the name's namespace needs
 * (@write 0: read; 1, 2: write). */
static int xattr_may(struct ns *ns, const struct ns_caller *who, const struct inode *in,
		     const char *name, size_t len, int write)
{
	int may = 0;

	if (len > 5 && memcmp(name, "user.", 5) == 0)
		may = nsacl_access(ns, who, in, write ? PERM_WRITE : PERM_READ);
	else if (write == 2)    /* security.capability: a writer's kill */
		may = nsacl_access(ns, who, in, PERM_WRITE);
	if (may && may != -EACCES)
		return may;     /* -EIO */
	return perm_xattr(who, &in->a, name, len, write, may);
}

int op_getxattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
		const char *name, struct ns_reply *rep)
{
	struct inode in;
	uint8_t k[NS_KEY_MAX];
	char *v;
	size_t vlen;
	int ret;

	ret = xname_check(name, r->name_len);
	if (!ret)
		ret = inode_get(ns, r->ino, &in);
	if (!ret)
		ret = xattr_may(ns, who, &in, name, r->name_len, 0);
	if (ret)
		return ret;
	ret = kvdb_get(ns->db, k, key_xattr(k, r->ino, name, r->name_len), &v, &vlen);
	if (ret)
		return ret == -ENOENT ? -ENODATA : ret;
	rep->hdr_length = (uint32_t)vlen;
	if (r->max == 0) {
		free(v);
		return 0;
	}
	if (vlen > r->max) {
		free(v);
		return -ERANGE;
	}
	rep->data = (uint8_t *)v;
	rep->len = (uint32_t)vlen;
	return 0;
}

int op_listxattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
		 struct ns_reply *rep)
{
	struct kviter *it;
	struct inode in;
	uint8_t pfx[9];
	size_t used = 0, cap = 256;
	int ret;

	ret = inode_get(ns, r->ino, &in);
	if (ret)
		return ret;
	rep->data = malloc(cap);
	it = kvdb_iter(ns->db);
	if (!rep->data || !it) {
		kviter_free(it);
		return -ENOMEM;
	}
	key_xattr(pfx, r->ino, "", 0);
	for (kviter_seek(it, pfx, 9); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const char *k = kviter_key(it, &klen);

		if (klen <= 9 || memcmp(k, pfx, 9))
			break;
		if (!perm_xattr_listed(who, k + 9, klen - 9))
			continue;
		if (used + klen - 9 + 1 > cap) {
			uint8_t *n;

			cap = (used + klen) * 2;
			n = realloc(rep->data, cap);
			if (!n) {
				kviter_free(it);
				return -ENOMEM;
			}
			rep->data = n;
		}
		memcpy(rep->data + used, k + 9, klen - 9);
		used += klen - 9;
		rep->data[used++] = '\0';
	}
	kviter_free(it);
	rep->hdr_length = (uint32_t)used;
	if (r->max == 0 || used > r->max) {
		free(rep->data);
		rep->data = NULL;
		return r->max == 0 ? 0 : -ERANGE;
	}
	rep->len = (uint32_t)used;
	return 0;
}

#define XATTR_CREATE_  1u
#define XATTR_REPLACE_ 2u

int op_setxattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
		const char *name, const uint8_t *val, struct kvbatch *b)
{
	uint8_t k[NS_KEY_MAX];
	struct lockset ls;
	struct inode in;
	size_t klen, vlen;
	uint32_t xflags = r->flags & ~SDFS_NS_XATTR_KILL_SGID;
	int acl = nsacl_xattr_kind(name, r->name_len);
	char *v;
	int ret;

	ret = xname_check(name, r->name_len);
	if (ret)
		return ret;
	if (r->data_len > SDFS_XATTR_SIZE_MAX)
		return -E2BIG;
	if (xflags & ~(XATTR_CREATE_ | XATTR_REPLACE_) ||
	    xflags == (XATTR_CREATE_ | XATTR_REPLACE_))
		return -EINVAL;
	ns_lock(ns, &ls, &r->ino, 1);
	ret = inode_get(ns, r->ino, &in);
	if (!ret)
		ret = xattr_may(ns, who, &in, name, r->name_len, 1);
	if (ret)
		goto out;
	klen = key_xattr(k, r->ino, name, r->name_len);
	ret = kvdb_get(ns->db, k, klen, &v, &vlen);
	if (ret && ret != -ENOENT)
		goto out;
	if (ret == 0)
		free(v);
	if (ret == 0 && (r->flags & XATTR_CREATE_)) {
		ret = -EEXIST;
		goto out;
	}
	if (ret == -ENOENT && (r->flags & XATTR_REPLACE_)) {
		ret = -ENODATA;
		goto out;
	}
	/* an ACL is checked, and an access ACL sets the mode (or is only
	 * the mode: then not kept) */
	uint32_t aflags = r->flags;

	/* Linux drops setgid when the setter is outside the file's group */
	if (acl == NSACL_ACCESS && !perm_is_root(who) && !perm_in_group(who, in.a.gid))
		aflags |= SDFS_NS_XATTR_KILL_SGID;
	ret = acl ? nsacl_set(&in, acl, val, r->data_len, aflags) : 1;
	if (ret < 0)
		goto out;
	if (ret)
		kvbatch_put(b, k, klen, val, r->data_len);
	else
		kvbatch_del(b, k, klen);
	in.a.ctime_ns = ns_now();
	inode_put(b, &in);
	ret = ns_commit_op(ns, r, b, NULL);
out:
	ns_unlock(ns, &ls);
	return ret;
}

int op_rmxattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	       const char *name, struct kvbatch *b)
{
	uint8_t k[NS_KEY_MAX];
	struct lockset ls;
	struct inode in;
	size_t klen, vlen;
	char *v;
	int ret;

	ret = xname_check(name, r->name_len);
	if (ret)
		return ret;
	ns_lock(ns, &ls, &r->ino, 1);
	ret = inode_get(ns, r->ino, &in);
	if (!ret)
		ret = xattr_may(ns, who, &in, name, r->name_len, 2);
	if (ret)
		goto out;
	klen = key_xattr(k, r->ino, name, r->name_len);
	ret = kvdb_get(ns->db, k, klen, &v, &vlen);
	if (ret) {
		ret = ret == -ENOENT ? -ENODATA : ret;
		goto out;
	}
	free(v);
	kvbatch_del(b, k, klen);
	in.a.ctime_ns = ns_now();
	inode_put(b, &in);
	ret = ns_commit_op(ns, r, b, NULL);
out:
	ns_unlock(ns, &ls);
	return ret;
}

int op_info(struct ns *ns, struct ns_reply *rep)
{
	struct sdfs_mds_info mi = { 0 };

	mi.epoch = ns->epoch;
	kvdb_stats(ns->db, &mi.db_files, &mi.db_bytes);
	mi.inodes = atomic_load(&ns->inodes);
	mi.ops = atomic_load(&ns->ops);
	mi.active_ms = (uint64_t)ns->active_ms;
	snprintf(mi.name, sizeof(mi.name), "%s", ns->name);
	struct lease_stats ls;
	lease_stats(ns->leases, &ls);
	mi.subs = ls.subs;
	mi.leases = ls.leases;
	mi.pushes = ls.pushes;
	mi.push_timeouts = ls.push_timeouts;
	mi.wakes = ls.hints;
	mi.strays = purge_count_strays(ns);
	mi.ec_seals = atomic_load(&ns->ec_seals);
	mi.ec_unseals = atomic_load(&ns->ec_unseals);
	mi.ec_sealed_bytes = atomic_load(&ns->ec_sealed_bytes);
	rep->data = malloc(SDFS_MDS_INFO_SIZE);
	if (!rep->data)
		return -ENOMEM;
	proto_mds_info_encode(&mi, rep->data);
	rep->len = SDFS_MDS_INFO_SIZE;
	return 0;
}
