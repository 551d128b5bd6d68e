/*
 * ns_ops.c - lookup, getattr, setattr, creating (mknod, mkdir,
 * symlink), removing (unlink, rmdir) and link.
 *
 * Every mutation: lock the inodes involved (for a name, first read the
 * dentry, then lock, then re-read it: it may have changed), check,
 * build one batch, commit it with the reply record, unlock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/oid.h"
#include "common/policy.h"
#include "common/proto.h"
#include "mds/lease.h"
#include "mds/ns_int.h"
#include "mds/opens.h"
#include "mds/perm.h"
#include "mds/vol.h"

/* Leases (lease.h) are granted before the state is read: a change
 * committed after the read then finds them and is pushed. */
int op_getattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	       struct ns_reply *rep)
{
	uint32_t f = lease_grant_inode(ns->leases, r->client_id, r->ino) ?
		     SDFS_ATTR_F_LEASED : 0;
	struct inode in;
	int ret = inode_get(ns, r->ino, &in);

	/* an open's check: the access it is about to make */
	if (!ret && (r->flags & SDFS_NS_MAY_MASK))
		ret = nsacl_access(ns, who, &in, r->flags & SDFS_NS_MAY_MASK);
	/* after the grant: a mark made later ends the lease */
	if (!ret && S_ISREG(in.a.mode) && opens_writeback_other(ns, r->ino, r->client_id))
		f |= SDFS_ATTR_F_WRITEBACK;
	return ret ? ret : reply_attr_ns(ns, rep, &in, f);
}

int op_lookup(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	      const char *name, struct ns_reply *rep)
{
	struct inode dir, in;
	struct dent d;
	int ret;

	ret = name_check(name, r->name_len);
	if (ret)
		return ret;
	ret = inode_get(ns, r->ino, &dir);
	if (ret)
		return ret;
	if (!S_ISDIR(dir.a.mode))
		return -ENOTDIR;
	ret = nsacl_access(ns, who, &dir, PERM_EXEC);
	if (ret)
		return ret;
	if (r->name_len == 1 && name[0] == '.')
		return reply_attr(rep, &dir);
	if (r->name_len == 2 && name[0] == '.' && name[1] == '.') {
		ret = inode_get(ns, dir.a.parent, &in);
		return ret ? ret : reply_attr(rep, &in);
	}
	/* a missing name is cached too (a negative entry) */
	lease_grant_entry(ns->leases, r->client_id, r->ino, name, r->name_len);
	ret = dent_get(ns, r->ino, name, r->name_len, &d);
	if (ret)
		return ret;
	uint32_t f = lease_grant_inode(ns->leases, r->client_id, d.ino) ?
		     SDFS_ATTR_F_LEASED : 0;

	ret = inode_get(ns, d.ino, &in);
	if (ret == -ENOENT)
		ret = -ENOENT;  /* removed between the two reads */
	return ret ? ret : reply_attr_ns(ns, rep, &in, f);
}

static int valid_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFIFO: case S_IFSOCK: case S_IFCHR: case S_IFBLK:
		return 1;
	}
	return 0;
}

/*
 * May @who make an entry in @dir (write and search), and whose is the
 * new inode: root gives it the ids it asks for; anyone else owns it
 * and gives it the group asked for only if it is in it (else its own).
 */
int child_may(struct ns *ns, const struct ns_caller *who, const struct inode *dir,
	      const struct sdfs_ns_req *r, uint32_t *uid, uint32_t *gid)
{
	int ret = nsacl_access(ns, who, dir, PERM_WRITE | PERM_EXEC);

	if (ret)
		return ret;
	*uid = r->uid;
	*gid = r->gid;
	if (!perm_is_root(who)) {
		*uid = who->uid;
		if (!perm_in_group(who, r->gid))
			*gid = who->gid;
	}
	return 0;
}

/* With SDFS_NS_WANT_ATTRS: lease @in to the requester (its lock is held
 * until the commit, so no other change reads or writes it before), a
 * directory's names too; the attribute flags saying so. */
static uint32_t lease_changed(struct ns *ns, const struct sdfs_ns_req *r,
			      const struct inode *in)
{
	uint32_t f = 0;

	if (!(r->flags & SDFS_NS_WANT_ATTRS) || in->a.nlink == 0)
		return 0;
	if (lease_grant_inode(ns->leases, r->client_id, in->a.ino))
		f |= SDFS_ATTR_F_LEASED;
	if (S_ISDIR(in->a.mode) &&
	    lease_grant_listing(ns->leases, r->client_id, in->a.ino))
		f |= SDFS_ATTR_F_LISTING;
	return f;
}

int reply_more_attrs(struct ns *ns, const struct sdfs_ns_req *r, struct ns_reply *rep,
		     const struct inode *const *ins, int n)
{
	uint64_t seen[SDFS_NS_ATTRS_MAX];
	unsigned k = 0;
	uint8_t *d;

	if (!(r->flags & SDFS_NS_WANT_ATTRS))
		return 0;
	d = realloc(rep->data, rep->len + (size_t)n * SDFS_ATTR_SIZE);
	if (!d)
		return -ENOMEM;
	rep->data = d;
	for (int i = 0; i < n && k < SDFS_NS_ATTRS_MAX; i++) {
		struct sdfs_attr a;
		unsigned j;

		if (!ins[i] || !ins[i]->a.ino)
			continue;
		for (j = 0; j < k && seen[j] != ins[i]->a.ino; j++)
			;
		if (j < k)
			continue;
		seen[k++] = ins[i]->a.ino;
		space_attr(ns, ins[i], &a);
		a.flags = lease_changed(ns, r, ins[i]);
		proto_attr_encode(&a, rep->data + rep->len);
		rep->len += SDFS_ATTR_SIZE;
	}
	return 0;
}

int op_mknod(struct ns *ns, const struct ns_caller *who, unsigned op,
	     const struct sdfs_ns_req *r, const char *name, const uint8_t *data,
	     struct kvbatch *b, struct ns_reply *rep)
{
	struct inode dir, in = { 0 };
	struct lockset ls;
	uint32_t mode = r->mode, uid, gid;
	int64_t now;
	int ret;

	ret = name_check(name, r->name_len);
	if (ret)
		return ret;
	if (name_is_dot(name, r->name_len))
		return -EEXIST;
	if (op == SDFS_OP_NS_MKNOD) {
		if (!(mode & S_IFMT))
			mode |= S_IFREG;
		if (!valid_type(mode))
			return -EINVAL;
	} else if (op == SDFS_OP_NS_MKDIR) {
		mode = S_IFDIR | (mode & 07777);
	} else {
		if (r->data_len == 0 || memchr(data, '\0', r->data_len))
			return r->data_len ? -EINVAL : -ENOENT;
		if (r->data_len > SDFS_SYMLINK_MAX)
			return -ENAMETOOLONG;
		mode = S_IFLNK | 0777;
	}
	/* devices: root only (CAP_MKNOD) */
	if ((S_ISCHR(mode) || S_ISBLK(mode)) && !perm_is_root(who))
		return -EPERM;
	ns_lock(ns, &ls, &r->ino, 1);
	ret = child_check(ns, r->ino, name, r->name_len, &dir);
	if (!ret)
		ret = child_may(ns, who, &dir, r, &uid, &gid);
	if (!ret)
		ret = ino_alloc(ns, &in.a.ino);
	if (ret)
		goto out;
	now = ns_now();
	child_init(ns, &dir, mode, uid, gid, now, &in);
	ret = nsacl_create(ns, b, &dir, &in, r->flags);
	if (ret)
		goto out;
	/* the directory's policy goes to what is made in it (docs/policy.md) */
	if (S_ISDIR(mode))
		in.a.copies = dir.a.copies;
	else if (S_ISREG(mode))         /* files: m + 1 copies under a code */
		in.a.copies = policy_for_file(dir.a.copies);
	if (S_ISDIR(mode)) {
		in.a.parent = dir.a.ino;
		in.next_seq = NS_FIRST_COOKIE;
		dir.a.nlink++;
	} else {
		if (S_ISCHR(mode) || S_ISBLK(mode))
			in.a.rdev = r->rdev;
		if (S_ISREG(mode)) {
			in.a.layout = SDFS_LAYOUT_OBJECTS;
			in.a.obj_size = ns->obj_size;
		}
		if (S_ISLNK(mode)) {
			uint8_t k[16];

			in.a.size = r->data_len;
			kvbatch_put(b, k, key_link(k, in.a.ino), data, r->data_len);
		}
	}
	child_link(b, &dir, name, r->name_len, &in, now);
	uint32_t f = lease_changed(ns, r, &in);
	/* SDFS_NS_HOLD: held open before anyone can find it (the reply
	 * record says so, a resend gets the same answer) */
	struct sdfs_ns_req hold = { .ino = in.a.ino, .arg = r->arg };
	int held = op == SDFS_OP_NS_MKNOD && (r->flags & SDFS_NS_HOLD) && r->arg &&
		   S_ISREG(mode) && opens_exec(ns, &hold, NULL) == 0;

	if (held)
		f |= SDFS_ATTR_F_HELD;
	ret = reply_attr_f(rep, &in, f);
	if (!ret)
		ret = reply_more_attrs(ns, r, rep, (const struct inode *[]){ &dir }, 1);
	if (!ret)
		ret = ns_commit_op(ns, r, b, rep);
	if (ret && held) {
		hold.flags = SDFS_NS_OPEN_CLOSE;
		opens_exec(ns, &hold, NULL);
	}
out:
	ns_unlock(ns, &ls);
	return ret;
}

/*
 * Lock @dir and the inode @name names in it, consistently: read the
 * dentry, lock both, re-read; retry if it changed. *@d gets the dentry
 * (ret -ENOENT: no such name; @dir is then locked alone).
 */
static int lock_dir_and_child(struct ns *ns, uint64_t dir, const char *name,
			      size_t nlen, struct lockset *ls, struct dent *d)
{
	for (;;) {
		struct dent again;
		uint64_t inos[2] = { dir, 0 };
		int ret = dent_get(ns, dir, name, nlen, d);

		if (ret && ret != -ENOENT)
			return ret;
		if (ret == 0)
			inos[1] = d->ino;
		ns_lock(ns, ls, inos, 2);
		ret = dent_get(ns, dir, name, nlen, &again);
		if (ret == -ENOENT && inos[1] == 0)
			return -ENOENT;
		if (ret == 0 && again.ino == inos[1]) {
			*d = again;
			return 0;
		}
		ns_unlock(ns, ls);
		if (ret && ret != -ENOENT)
			return ret;
	}
}

int op_remove(struct ns *ns, const struct ns_caller *who, unsigned op,
	      const struct sdfs_ns_req *r, const char *name, struct kvbatch *b,
	      struct ns_reply *rep)
{
	struct inode dir, in;
	struct lockset ls = { .n = 0 };
	struct dent d;
	int64_t now;
	int ret;

	ret = name_check(name, r->name_len);
	if (ret)
		return ret;
	if (name_is_dot(name, r->name_len)) {
		if (op == SDFS_OP_NS_UNLINK)
			return -EISDIR;
		return r->name_len == 1 ? -EINVAL : -ENOTEMPTY;
	}
	ret = lock_dir_and_child(ns, r->ino, name, r->name_len, &ls, &d);
	if (ret == -ENOENT) {
		/* Say ENOTDIR rather than ENOENT when the parent is no dir,
		 * EACCES when the caller may not search it. */
		if (inode_get(ns, r->ino, &dir) == 0) {
			if (!S_ISDIR(dir.a.mode))
				ret = -ENOTDIR;
			else if (nsacl_access(ns, who, &dir, PERM_EXEC))
				ret = -EACCES;
		}
		goto out;
	}
	if (ret)
		goto out;
	ret = inode_get(ns, r->ino, &dir);
	if (!ret)
		ret = inode_get(ns, d.ino, &in);
	if (!ret)
		ret = nsacl_access(ns, who, &dir, PERM_WRITE | PERM_EXEC);
	if (!ret)
		ret = perm_sticky(who, &dir.a, &in.a);
	if (ret)
		goto out;
	if (op == SDFS_OP_NS_UNLINK && S_ISDIR(in.a.mode)) {
		ret = -EISDIR;
		goto out;
	}
	if (op == SDFS_OP_NS_RMDIR) {
		if (!S_ISDIR(in.a.mode)) {
			ret = -ENOTDIR;
			goto out;
		}
		ret = dir_has_entries(ns, in.a.ino);
		if (ret) {
			ret = ret > 0 ? -ENOTEMPTY : ret;
			goto out;
		}
	}
	now = ns_now();
	dent_del(b, dir.a.ino, name, r->name_len, &d);
	dir.a.mtime_ns = dir.a.ctime_ns = now;
	if (S_ISDIR(in.a.mode)) {
		dir.a.nlink--;
		inode_drop(ns, b, &in);
		in.a.nlink = 0;         /* as the reply shows it */
	} else if (--in.a.nlink == 0) {
		inode_drop(ns, b, &in);
	} else {
		in.a.ctime_ns = now;
		inode_put(b, &in);
	}
	inode_put(b, &dir);
	ret = reply_more_attrs(ns, r, rep, (const struct inode *[]){ &dir, &in }, 2);
	if (!ret)
		ret = ns_commit_op(ns, r, b, rep->len ? rep : NULL);
out:
	ns_unlock(ns, &ls);
	return ret;
}

int op_link(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	    const char *name2, struct kvbatch *b, struct ns_reply *rep)
{
	uint64_t inos[2] = { r->ino, r->ino2 };
	struct inode in, dir;
	struct lockset ls;
	struct dent d;
	int64_t now;
	int ret;

	ret = name_check(name2, r->name2_len);
	if (ret)
		return ret;
	if (name_is_dot(name2, r->name2_len))
		return -EEXIST;
	ns_lock(ns, &ls, inos, 2);
	ret = inode_get(ns, r->ino, &in);
	if (ret)
		goto out;
	ret = inode_get(ns, r->ino2, &dir);
	if (ret)
		goto out;
	if (!S_ISDIR(dir.a.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	ret = nsacl_access(ns, who, &dir, PERM_WRITE | PERM_EXEC);
	if (ret)
		goto out;
	if (S_ISDIR(in.a.mode)) {
		ret = -EPERM;
		goto out;
	}
	if (dir.a.nlink == 0 || in.a.nlink == 0) {
		ret = -ENOENT;
		goto out;
	}
	if (in.a.nlink >= 65000) {
		ret = -EMLINK;
		goto out;
	}
	ret = dent_get(ns, r->ino2, name2, r->name2_len, &d);
	if (ret != -ENOENT) {
		ret = ret ? ret : -EEXIST;
		goto out;
	}
	now = ns_now();
	in.a.nlink++;
	in.a.ctime_ns = now;
	dent_add(b, &dir, name2, r->name2_len, in.a.ino, in.a.mode & S_IFMT);
	dir.a.mtime_ns = dir.a.ctime_ns = now;
	inode_put(b, &in);
	inode_put(b, &dir);
	ret = reply_attr_ns(ns, rep, &in, lease_changed(ns, r, &in));
	if (!ret)
		ret = reply_more_attrs(ns, r, rep, (const struct inode *[]){ &dir }, 1);
	if (!ret)
		ret = ns_commit_op(ns, r, b, rep);
out:
	ns_unlock(ns, &ls);
	return ret;
}

/* SETATTR with SDFS_SET_COPIES alone: a directory's policy, root only. */
static int set_policy(struct ns *ns, const struct ns_caller *who,
		      const struct sdfs_ns_req *r, struct kvbatch *b, struct ns_reply *rep)
{
	struct inode in;
	struct lockset ls;
	int ret;

	if (r->flags != SDFS_SET_COPIES || !policy_valid(r->max) || r->data_len)
		return -EINVAL;
	if (!perm_is_root(who))
		return -EPERM;
	ns_lock(ns, &ls, &r->ino, 1);
	ret = inode_get(ns, r->ino, &in);
	if (!ret && !S_ISDIR(in.a.mode))
		ret = -ENOTDIR;         /* a file's copies are fixed at its making */
	if (ret)
		goto out;
	in.a.copies = (uint16_t)r->max;
	in.a.ctime_ns = ns_now();
	inode_put(b, &in);
	ret = reply_attr_ns(ns, rep, &in, 0);
	if (!ret)
		ret = ns_commit_op(ns, r, b, rep);
out:
	ns_unlock(ns, &ls);
	return ret;
}

int op_setattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	       const uint8_t *data, struct kvbatch *b, struct ns_reply *rep)
{
	struct inode in;
	struct lockset ls;
	uint32_t m = r->flags & ~SDFS_NS_DURABLE, mode = r->mode;
	int64_t now = ns_now();
	int may_read = -EACCES, may_write, ret;

	if (m & ~0xfffu)
		return -EINVAL;
	if (m & SDFS_SET_COPIES)
		return set_policy(ns, who, r, b, rep);
	/* 1.6: the chunks the writer made or removed (ns_space.c) */
	int report = r->data_len > 0;

	if (report && !space_report_ok(data, r->data_len))
		return -EINVAL;
	ns_lock(ns, &ls, &r->ino, 1);
	ret = inode_get(ns, r->ino, &in);
	if (ret)
		goto out;
	may_write = nsacl_access(ns, who, &in, PERM_WRITE);
	if (m & SDFS_SET_ATIME_NOW)
		may_read = nsacl_access(ns, who, &in, PERM_READ);
	ret = perm_setattr(who, &in.a, m, &mode, r->uid, r->gid, may_read, may_write);
	if (ret)
		goto out;
	/* A size a writer pushes (close, fsync) only grows the file: another
	 * client may have made it longer meanwhile, and an absolute size
	 * would truncate, freeing that client's data. */
	if ((m & SDFS_SET_EXTEND) && (m & SDFS_SET_SIZE) && r->arg <= in.a.size)
		m &= ~(uint32_t)(SDFS_SET_SIZE | SDFS_SET_EXTEND);
	if (m & SDFS_SET_SIZE) {
		if (S_ISDIR(in.a.mode)) {
			ret = -EISDIR;
			goto out;
		}
		if (!S_ISREG(in.a.mode)) {
			ret = -EINVAL;
			goto out;
		}
		if (in.a.layout == SDFS_LAYOUT_VOL) {
			/* A volume's chunks are the client's (it frees them on
			 * a shrink): only the size changes here. */
			if (!vol_size_ok(r->arg, in.a.obj_size)) {
				ret = -EFBIG;
				goto out;
			}
		} else if (r->arg > (OID_FILE_MAX_SIZE(in.a.obj_size))) {
			ret = -EFBIG;
			goto out;
		} else if (r->arg < in.a.size) {
			/* A sealed file cut inside a chunk: replicated first
			 * (the chunk's tail is zeroed in place; ecfile.c). */
			if (policy_is_sealed(in.a.copies) && in.a.obj_size &&
			    r->arg % in.a.obj_size) {
				ret = ecfile_unseal_locked(ns, &in);
				if (ret)
					goto out;
			}
			/* Free the data first: an unacknowledged truncate may
			 * lose the tail, an acknowledged one never shows it. */
			ret = purge_data(ns, in.a.ino, in.a.obj_size, in.a.copies, in.a.size,
					 r->arg);
			if (!ret)
				ret = space_cut(ns, b, &in, r->arg);
			if (ret)
				goto out;
		}
		/* Grown by a client that does not report its chunks (before
		 * 1.6, or a libsdfs user's plain setattr): it may have written
		 * anywhere; count no more (blocks: size / 512). */
		if (!report && r->arg > in.a.size && in.a.layout != SDFS_LAYOUT_VOL)
			in.chunks = SPACE_UNKNOWN;
		in.a.size = r->arg;
		in.a.mtime_ns = now;
	}
	if (report && S_ISREG(in.a.mode) && in.a.layout != SDFS_LAYOUT_VOL) {
		ret = space_apply(ns, b, &in, data, r->data_len);
		if (ret)
			goto out;
	}
	if (m & SDFS_SET_MODE) {
		in.a.mode = (in.a.mode & S_IFMT) | (mode & 07777);
		ret = nsacl_chmod(ns, b, &in);
		if (ret)
			goto out;
	}
	if (m & (SDFS_SET_UID | SDFS_SET_GID)) {
		if (m & SDFS_SET_UID)
			in.a.uid = r->uid;
		if (m & SDFS_SET_GID)
			in.a.gid = r->gid;
		/* chown clears setuid, and setgid with group exec, unless
		 * the same call sets the mode. */
		if (!(m & SDFS_SET_MODE) && !S_ISDIR(in.a.mode)) {
			in.a.mode &= ~(uint32_t)S_ISUID;
			if (in.a.mode & S_IXGRP)
				in.a.mode &= ~(uint32_t)S_ISGID;
		}
	}
	if (m & SDFS_SET_ATIME_NOW)
		in.a.atime_ns = now;
	else if (m & SDFS_SET_ATIME)
		in.a.atime_ns = r->atime_ns;
	if (m & SDFS_SET_MTIME_NOW)
		in.a.mtime_ns = now;
	else if (m & SDFS_SET_MTIME)
		in.a.mtime_ns = r->mtime_ns;
	/* Every change moves ctime, except atime alone without CTIME: that
	 * is a read's atime update (relatime), which POSIX keeps ctime for;
	 * explicit utimes come with CTIME. */
	if ((m & ~(SDFS_SET_ATIME | SDFS_SET_ATIME_NOW | SDFS_SET_CTIME)) ||
	    (m & SDFS_SET_CTIME))
		in.a.ctime_ns = now;
	inode_put(b, &in);
	if (!report && !(m & ~(uint32_t)(SDFS_SET_ATIME | SDFS_SET_ATIME_NOW)))
		lease_note_atime_only(in.a.ino);
	ret = reply_attr_ns(ns, rep, &in, 0);
	if (!ret)
		ret = ns_commit_op(ns, r, b, rep);
out:
	ns_unlock(ns, &ls);
	return ret;
}

int child_check(struct ns *ns, uint64_t dirino, const char *name, size_t nlen,
		struct inode *dir)
{
	struct dent d;
	int ret = inode_get(ns, dirino, dir);

	if (ret)
		return ret;
	if (!S_ISDIR(dir->a.mode))
		return -ENOTDIR;
	if (dir->a.nlink == 0)
		return -ENOENT;         /* being removed */
	ret = dent_get(ns, dirino, name, nlen, &d);
	if (ret != -ENOENT)
		return ret ? ret : -EEXIST;
	return 0;
}

void child_init(struct ns *ns, const struct inode *dir, uint32_t mode, uint32_t uid,
		uint32_t gid, int64_t now, struct inode *in)
{
	in->a.gen = ns->epoch;
	in->a.mode = mode;
	in->a.uid = uid;
	in->a.gid = gid;
	in->a.nlink = S_ISDIR(mode) ? 2 : 1;
	in->a.atime_ns = in->a.mtime_ns = in->a.ctime_ns = now;
	/* setgid directories pass their group on (and the bit to subdirs) */
	if (dir->a.mode & S_ISGID) {
		in->a.gid = dir->a.gid;
		if (S_ISDIR(mode))
			in->a.mode |= S_ISGID;
	}
}

void child_link(struct kvbatch *b, struct inode *dir, const char *name, size_t nlen,
		const struct inode *in, int64_t now)
{
	dent_add(b, dir, name, nlen, in->a.ino, in->a.mode & S_IFMT);
	dir->a.mtime_ns = dir->a.ctime_ns = now;
	inode_put(b, dir);
	inode_put(b, in);
}

