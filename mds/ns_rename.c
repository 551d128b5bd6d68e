/*
 * ns_rename.c - rename, with RENAME_NOREPLACE and RENAME_EXCHANGE,
 * atomic (one batch), also across directories, never making a loop.
 *
 * Cross-directory renames take ns->rename_lock first (as Linux's
 * s_vfs_rename_mutex): directories' parents only change under it, so
 * walking up from the target directory to the root is stable.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "mds/ns_int.h"
#include "mds/perm.h"

#define RENAME_NOREPLACE_ 1u
#define RENAME_EXCHANGE_  2u
#define RENAME_HIDE_      SDFS_NS_RENAME_HIDE

/* Is @dir equal to @anc or below it? Walks parent pointers up. */
static int is_within(struct ns *ns, uint64_t dir, uint64_t anc)
{
	for (int depth = 0; depth < 4096; depth++) {
		struct inode in;

		if (dir == anc)
			return 1;
		if (dir == SDFS_ROOT_INO)
			return 0;
		if (inode_get(ns, dir, &in))
			return -EIO;
		dir = in.a.parent;
	}
	return -ELOOP;
}

/* The inodes of one rename, loaded once each (the two directories and
 * the two entries may be the same inodes). */
struct rtx {
	struct inode in[4];
	int dirty[4];
	int n;
};

static struct inode *rtx_get(struct ns *ns, struct rtx *t, uint64_t ino, int *err)
{
	for (int i = 0; i < t->n; i++)
		if (t->in[i].a.ino == ino)
			return &t->in[i];
	*err = inode_get(ns, ino, &t->in[t->n]);
	if (*err)
		return NULL;
	return &t->in[t->n++];
}

static void rtx_dirty(struct rtx *t, struct inode *in)
{
	t->dirty[in - t->in] = 1;
}

/* vfs_rename's checks: write and search on both directories, the
 * sticky rule for what leaves the old one and what the new name
 * replaces, and a directory moving to another parent must be writable
 * (its ".." changes). 0, -EACCES, -EPERM. */
static int rename_may(struct ns *ns, const struct ns_caller *who, struct inode *odir,
		      struct inode *ndir, struct inode *src, struct inode *dst,
		      unsigned flags)
{
	int ret = nsacl_access(ns, who, odir, PERM_WRITE | PERM_EXEC);

	if (!ret && ndir != odir)
		ret = nsacl_access(ns, who, ndir, PERM_WRITE | PERM_EXEC);
	if (!ret)
		ret = perm_sticky(who, &odir->a, &src->a);
	if (!ret && dst)
		ret = perm_sticky(who, &ndir->a, &dst->a);
	if (!ret && ndir != odir && S_ISDIR(src->a.mode))
		ret = nsacl_access(ns, who, src, PERM_WRITE);
	if (!ret && ndir != odir && dst && (flags & RENAME_EXCHANGE_) &&
	    S_ISDIR(dst->a.mode))
		ret = nsacl_access(ns, who, dst, PERM_WRITE);
	return ret;
}

int op_rename(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	      const char *name, const char *name2, struct kvbatch *b, struct ns_reply *rep)
{
	unsigned flags = r->flags & ~SDFS_NS_WANT_ATTRS;
	int cross = r->ino != r->ino2;
	struct lockset ls = { .n = 0 };
	struct dent sd, dd;
	struct rtx t = { .n = 0 };
	struct inode *odir, *ndir, *src, *dst = NULL;
	int have_dst, src_ret, ret;
	int64_t now;

	int hide = (flags & RENAME_HIDE_) != 0;
	char hidden[40];

	flags &= ~RENAME_HIDE_;
	if (flags & ~(RENAME_NOREPLACE_ | RENAME_EXCHANGE_) ||
	    flags == (RENAME_NOREPLACE_ | RENAME_EXCHANGE_))
		return -EINVAL;
	ret = name_check(name, r->name_len);
	if (!ret)
		ret = name_check(name2, r->name2_len);
	if (ret)
		return ret;
	if (name_is_dot(name, r->name_len) || name_is_dot(name2, r->name2_len))
		return -EINVAL;
	if (cross)
		pthread_mutex_lock(&ns->rename_lock);
	for (;;) {
		struct dent s2, d2;
		uint64_t inos[4] = { r->ino, r->ino2, 0, 0 };
		int r1, r2;

		r1 = dent_get(ns, r->ino, name, r->name_len, &sd);
		r2 = dent_get(ns, r->ino2, name2, r->name2_len, &dd);
		if ((r1 && r1 != -ENOENT) || (r2 && r2 != -ENOENT)) {
			ret = r1 && r1 != -ENOENT ? r1 : r2;
			goto out;
		}
		inos[2] = r1 ? 0 : sd.ino;
		inos[3] = r2 ? 0 : dd.ino;
		ns_lock(ns, &ls, inos, 4);
		int q1 = dent_get(ns, r->ino, name, r->name_len, &s2);
		int q2 = dent_get(ns, r->ino2, name2, r->name2_len, &d2);
		if (q1 == r1 && q2 == r2 && (r1 || s2.ino == sd.ino) &&
		    (r2 || d2.ino == dd.ino)) {
			have_dst = r2 == 0;
			if (r1 == 0)
				sd = s2;
			if (r2 == 0)
				dd = d2;
			src_ret = r1;
			break;
		}
		ns_unlock(ns, &ls);
	}
	odir = rtx_get(ns, &t, r->ino, &ret);
	if (!odir)
		goto out;
	ndir = rtx_get(ns, &t, r->ino2, &ret);
	if (!ndir)
		goto out;
	if (!S_ISDIR(odir->a.mode) || !S_ISDIR(ndir->a.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (src_ret) {          /* no source */
		ret = src_ret;
		goto out;
	}
	if (ndir->a.nlink == 0) {
		ret = -ENOENT;
		goto out;
	}
	src = rtx_get(ns, &t, sd.ino, &ret);
	if (!src)
		goto out;
	if (have_dst) {
		dst = rtx_get(ns, &t, dd.ino, &ret);
		if (!dst)
			goto out;
	}
	if ((flags & RENAME_EXCHANGE_) && !dst) {
		ret = -ENOENT;
		goto out;
	}
	if (dst && (flags & RENAME_NOREPLACE_)) {
		ret = -EEXIST;
		goto out;
	}
	if (dst == src) {       /* two links to one inode: nothing to do */
		ret = 0;
		goto out;
	}
	/* No directory may move into itself or below itself. */
	if (cross && S_ISDIR(src->a.mode)) {
		ret = is_within(ns, ndir->a.ino, src->a.ino);
		if (ret) {
			ret = ret > 0 ? -EINVAL : ret;
			goto out;
		}
	}
	if (cross && dst && (flags & RENAME_EXCHANGE_) && S_ISDIR(dst->a.mode)) {
		ret = is_within(ns, odir->a.ino, dst->a.ino);
		if (ret) {
			ret = ret > 0 ? -EINVAL : ret;
			goto out;
		}
	}
	ret = rename_may(ns, who, odir, ndir, src, dst, flags);
	if (ret)
		goto out;
	if (dst && !(flags & RENAME_EXCHANGE_)) {
		if (S_ISDIR(src->a.mode) && !S_ISDIR(dst->a.mode)) {
			ret = -ENOTDIR;
			goto out;
		}
		if (!S_ISDIR(src->a.mode) && S_ISDIR(dst->a.mode)) {
			ret = -EISDIR;
			goto out;
		}
		if (S_ISDIR(dst->a.mode)) {
			ret = dir_has_entries(ns, dst->a.ino);
			if (ret) {
				ret = ret > 0 ? -ENOTEMPTY : ret;
				goto out;
			}
		}
	}

	now = ns_now();
	dent_del(b, odir->a.ino, name, r->name_len, &sd);
	if (dst)
		dent_del(b, ndir->a.ino, name2, r->name2_len, &dd);
	dent_add(b, ndir, name2, r->name2_len, src->a.ino, src->a.mode & S_IFMT);
	if (flags & RENAME_EXCHANGE_) {
		dent_add(b, odir, name, r->name_len, dst->a.ino, dst->a.mode & S_IFMT);
		if (cross && S_ISDIR(dst->a.mode)) {
			dst->a.parent = odir->a.ino;
			ndir->a.nlink--;
			odir->a.nlink++;
		}
		dst->a.ctime_ns = now;
		rtx_dirty(&t, dst);
	} else if (dst && hide && !S_ISDIR(dst->a.mode) && dst->a.nlink == 1) {
		/* kept under a hidden name for the client holding it open */
		struct dent hd;
		int n = snprintf(hidden, sizeof(hidden), SDFS_HIDDEN_FMT,
				 (unsigned long long)dst->a.ino);

		ret = dent_get(ns, ndir->a.ino, hidden, (size_t)n, &hd);
		if (ret != -ENOENT) {
			ret = ret ? ret : -EEXIST;
			kvbatch_clear(b);
			goto out;
		}
		dent_add(b, ndir, hidden, (size_t)n, dst->a.ino, dst->a.mode & S_IFMT);
		dst->a.ctime_ns = now;
		rtx_dirty(&t, dst);
	} else if (dst) {
		if (S_ISDIR(dst->a.mode)) {
			ndir->a.nlink--;
			inode_drop(ns, b, dst);
			dst->a.nlink = 0;       /* as the reply shows it */
		} else if (--dst->a.nlink == 0) {
			inode_drop(ns, b, dst);
		} else {
			dst->a.ctime_ns = now;
			rtx_dirty(&t, dst);
		}
	}
	if (cross && S_ISDIR(src->a.mode)) {
		src->a.parent = ndir->a.ino;
		odir->a.nlink--;
		ndir->a.nlink++;
	}
	src->a.ctime_ns = now;
	odir->a.mtime_ns = odir->a.ctime_ns = now;
	ndir->a.mtime_ns = ndir->a.ctime_ns = now;
	rtx_dirty(&t, src);
	rtx_dirty(&t, odir);
	rtx_dirty(&t, ndir);
	for (int i = 0; i < t.n; i++)   /* a dropped dst is not dirty */
		if (t.dirty[i])
			inode_put(b, &t.in[i]);
	ret = reply_more_attrs(ns, r, rep,
			       (const struct inode *[]){ odir, ndir, src, dst }, 4);
	if (!ret)
		ret = ns_commit_op(ns, r, b, rep->len ? rep : NULL);
out:
	ns_unlock(ns, &ls);
	if (cross)
		pthread_mutex_unlock(&ns->rename_lock);
	return ret;
}
