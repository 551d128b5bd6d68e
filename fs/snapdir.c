/*
 * snapdir.c - snapshots as read-only files in the mount
 * (docs/volumes.md "Reading snapshots"): every directory has a hidden
 * `.snap` directory (not listed, always there) holding FILE@SNAP for each
 * snapshot SNAP of each volume file FILE in it.
 *
 * Node ids: `.snap` of directory D is SNAPDIR_BIT | D; a snapshot is
 * SNAPFILE_BIT | its vid (vids are unique in the cluster and never
 * reused, so its id is stable across mounts and restarts). Real inode
 * numbers stay below 2^36. A snapshot file's attributes are remembered
 * here when it is looked up; one unknown here (an old NFS handle after a
 * restart) is ESTALE.
 *
 * The ops in main.c's table are the wrappers below: a virtual node is
 * answered here, anything else goes to the fs_op_* handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs.h"

#define SNAPDIR_BIT  (1ull << 62)
#define SNAPFILE_BIT (1ull << 63)
#define SNAPDIR_NAME ".snap"

int snapdir_is_virtual(uint64_t ino)
{
	return (ino & (SNAPDIR_BIT | SNAPFILE_BIT)) != 0;
}

static int is_virtual(uint64_t ino)
{
	return snapdir_is_virtual(ino);
}

/* Snapshots looked up here: vid -> what getattr and open need. */
struct snapent {
	uint64_t vid, vol_ino;
	char name[SDFS_VOL_SNAP_NAME_MAX + 1];
	struct sdfs_stat st;
	struct snapent *next;
};
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct snapent *snaps;

static void snap_remember(const struct snapent *e)
{
	struct snapent *p;

	pthread_mutex_lock(&snap_lock);
	for (p = snaps; p && p->vid != e->vid; p = p->next)
		;
	if (!p && (p = malloc(sizeof(*p)))) {
		p->next = snaps;
		snaps = p;
	}
	if (p) {
		struct snapent *next = p->next;

		*p = *e;
		p->next = next;
	}
	pthread_mutex_unlock(&snap_lock);
}

static int snap_find(uint64_t vid, struct snapent *out)
{
	struct snapent *p;

	pthread_mutex_lock(&snap_lock);
	for (p = snaps; p && p->vid != vid; p = p->next)
		;
	if (p)
		*out = *p;
	pthread_mutex_unlock(&snap_lock);
	return p ? 0 : -ESTALE;
}

/* The attributes of snapshot @vi of volume file @vol. */
static void snap_stat(const struct sdfs_stat *vol, const struct sdfs_vol_info *vi,
		      struct sdfs_stat *st)
{
	*st = *vol;
	st->ino = SNAPFILE_BIT | vi->vid;
	st->gen = 1;
	st->size = vi->size;
	st->blocks = vi->objects * vi->obj_size / 512;
	st->mode = S_IFREG | (vol->mode & 0444);
	st->nlink = 1;
	st->atime_ns = st->mtime_ns = st->ctime_ns = vi->ctime_ns;
	st->layout = SDFS_LAYOUT_VOLUME;
}

static int snapdir_stat(uint64_t dir, struct sdfs_stat *st)
{
	int ret = sdfs_ns_getattr(the_fs->s, dir, st);

	if (ret)
		return ret;
	if (!S_ISDIR(st->mode))
		return -ENOTDIR;
	st->ino = SNAPDIR_BIT | dir;
	st->gen = 1;
	st->mode = S_IFDIR | 0555;
	st->nlink = 2;
	st->size = 0;
	st->blocks = 0;
	return 0;
}

static int virt_stat(uint64_t ino, struct sdfs_stat *st)
{
	struct snapent e;
	int ret;

	if (ino & SNAPDIR_BIT)
		return snapdir_stat(ino & ~SNAPDIR_BIT, st);
	ret = snap_find(ino & ~SNAPFILE_BIT, &e);
	if (!ret)
		*st = e.st;
	return ret;
}

static void reply_virt_entry(fuse_req_t req, const struct sdfs_stat *st)
{
	struct fuse_entry_param e;
	struct fnode *n = fnode_get(the_fs, st->ino, 1);
	struct sdfs_stat view;

	if (!n) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fnode_set_stat(n, st, &view);
	fs_entry(st, &e);
	if (fuse_reply_entry(req, &e))
		fnode_forget(the_fs, st->ino, 1);
}

/* FILE@SNAP in directory @dir: the snapshot's attributes, remembered. */
static int snap_lookup(uint64_t dir, const char *name, struct sdfs_stat *st)
{
	const char *at = strrchr(name, '@');
	struct sdfs_vol_info vi;
	struct sdfs_stat vol;
	struct snapent e;
	char file[256];
	int ret;

	if (!at || at == name || !at[1] || (size_t)(at - name) >= sizeof(file) ||
	    strlen(at + 1) > SDFS_VOL_SNAP_NAME_MAX)
		return -ENOENT;
	memcpy(file, name, (size_t)(at - name));
	file[at - name] = '\0';
	ret = sdfs_ns_lookup(the_fs->s, dir, file, &vol);
	if (!ret && vol.layout != SDFS_LAYOUT_VOLUME)
		ret = -ENOENT;
	if (!ret)
		ret = sdfs_vol_info(the_fs->s, vol.ino, at + 1, &vi);
	if (ret)
		return ret == -EMEDIUMTYPE || ret == -EINVAL ? -ENOENT : ret;
	snap_stat(&vol, &vi, st);
	memset(&e, 0, sizeof(e));
	e.vid = vi.vid;
	e.vol_ino = vol.ino;
	snprintf(e.name, sizeof(e.name), "%s", at + 1);
	e.st = *st;
	snap_remember(&e);
	return 0;
}

static void w_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs_caller(req);    /* before the virtual snapshot dirs' calls */
	struct sdfs_stat st;
	int ret;

	if (parent & SNAPFILE_BIT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (parent & SNAPDIR_BIT) {
		uint64_t dir = parent & ~SNAPDIR_BIT;

		if (!strcmp(name, "."))
			ret = snapdir_stat(dir, &st);
		else if (!strcmp(name, ".."))
			ret = sdfs_ns_getattr(the_fs->s, dir, &st);
		else
			ret = snap_lookup(dir, name, &st);
	} else if (!strcmp(name, SNAPDIR_NAME)) {
		ret = snapdir_stat(parent, &st);
	} else {
		fs_op_lookup(req, parent, name);
		return;
	}
	if (ret)
		fs_reply_err(req, ret);
	else
		reply_virt_entry(req, &st);
}

static void w_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_caller(req);    /* before the virtual snapshot dirs' calls */
	struct sdfs_stat st;
	struct stat kst;
	int ret;

	if (!is_virtual(ino)) {
		fs_op_getattr(req, ino, fi);
		return;
	}
	ret = virt_stat(ino, &st);
	if (ret) {
		fs_reply_err(req, ret);
		return;
	}
	fs_stat_to_kernel(&st, &kst);
	fuse_reply_attr(req, &kst, the_fs->o.attr_timeout);
}

static void w_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_caller(req);    /* before the virtual snapshot dirs' calls */
	struct snapent e;
	struct ofile *of;
	struct fnode *n;
	int ret;

	if (!is_virtual(ino)) {
		fs_op_open(req, ino, fi);
		return;
	}
	if (ino & SNAPDIR_BIT) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	ret = snap_find(ino & ~SNAPFILE_BIT, &e);
	n = ret ? NULL : fnode_get(the_fs, ino, 0);
	of = n ? malloc(sizeof(*of)) : NULL;
	if (ret || !of) {
		fs_reply_err(req, ret ? ret : -ENOMEM);
		return;
	}
	fnode_open(the_fs, n);
	pthread_mutex_lock(&n->lock);
	n->st = e.st;
	pthread_mutex_unlock(&n->lock);
	pthread_rwlock_wrlock(&n->vol_rw);
	if (!n->vol_rd)
		ret = sdfs_vol_open_snap(the_fs->s, e.vol_ino, e.name, &n->vol_rd);
	if (!ret)
		n->vol_opens++;
	pthread_rwlock_unlock(&n->vol_rw);
	if (ret) {
		fnode_close(the_fs, n);
		free(of);
		fs_reply_err(req, ret == -ENOENT ? -ESTALE : ret);
		return;
	}
	fi->keep_cache = 1;     /* a snapshot never changes */
	of->n = n;
	fi->fh = (uint64_t)(uintptr_t)of;
	if (fuse_reply_open(req, fi)) {
		volf_release(n, O_RDONLY);
		fnode_close(the_fs, n);
		free(of);
	}
}

/* .snap listing: built at opendir. */
struct snaplist {
	size_t n;
	struct { char name[256 + 1 + SDFS_VOL_SNAP_NAME_MAX + 1]; struct sdfs_stat st; } *e;
};

struct lister {
	struct snaplist *l;
	int err;
};

static int list_add(struct snaplist *l, const char *name, const struct sdfs_stat *st)
{
	void *p = realloc(l->e, (l->n + 1) * sizeof(*l->e));

	if (!p)
		return -ENOMEM;
	l->e = p;
	snprintf(l->e[l->n].name, sizeof(l->e[l->n].name), "%s", name);
	l->e[l->n].st = *st;
	l->n++;
	return 0;
}

static int list_one(void *arg, const char *name, uint64_t ino, uint32_t type,
		    uint64_t cookie, const struct sdfs_stat *st)
{
	struct lister *ls = arg;
	struct sdfs_vol_info *vi = NULL;
	size_t n = 0;
	char full[sizeof(ls->l->e->name)];
	(void)ino; (void)type; (void)cookie;

	if (!st || st->layout != SDFS_LAYOUT_VOLUME)
		return 0;
	if (sdfs_vol_snap_list(the_fs->s, st->ino, &vi, &n))
		return 0;       /* gone meanwhile */
	for (size_t i = 0; i < n && !ls->err; i++) {
		struct sdfs_stat sst;
		struct snapent e = { .vid = vi[i].vid, .vol_ino = st->ino };

		snap_stat(st, &vi[i], &sst);
		snprintf(e.name, sizeof(e.name), "%s", vi[i].name);
		e.st = sst;
		snap_remember(&e);
		snprintf(full, sizeof(full), "%s@%s", name, vi[i].name);
		ls->err = list_add(ls->l, full, &sst);
	}
	free(vi);
	return ls->err != 0;
}

static void w_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_caller(req);    /* before the virtual snapshot dirs' calls */
	struct snaplist *l;
	struct lister ls;
	struct sdfs_stat st;
	int ret;

	if (!is_virtual(ino)) {
		fs_op_opendir(req, ino, fi);
		return;
	}
	if (ino & SNAPFILE_BIT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ls.l = l;
	ls.err = 0;
	ret = snapdir_stat(ino & ~SNAPDIR_BIT, &st);
	if (!ret)
		ret = list_add(l, ".", &st);
	if (!ret)
		ret = sdfs_ns_readdir(the_fs->s, ino & ~SNAPDIR_BIT, 0, 1, list_one, &ls);
	if (!ret)
		ret = ls.err;
	if (ret) {
		free(l->e);
		free(l);
		fs_reply_err(req, ret);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)l;
	if (fuse_reply_open(req, fi)) {
		free(l->e);
		free(l);
	}
}

static void list_reply(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, int plus)
{
	struct snaplist *l = (struct snaplist *)(uintptr_t)fi->fh;
	char *buf = malloc(size ? size : 1);
	size_t used = 0;
	(void)ino;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = (size_t)off; i < l->n; i++) {
		size_t room = size - used, len;
		struct fuse_entry_param e;

		fs_entry(&l->e[i].st, &e);
		len = plus ? fuse_add_direntry_plus(req, buf + used, room, l->e[i].name,
						    &e, (off_t)(i + 1))
			   : fuse_add_direntry(req, buf + used, room, l->e[i].name,
					       &e.attr, (off_t)(i + 1));
		if (len > room)
			break;
		if (plus && i > 0 && !fnode_get(the_fs, l->e[i].st.ino, 1))
			break;  /* the kernel takes a reference (not for ".") */
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void w_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	if (is_virtual(ino))
		list_reply(req, ino, size, off, fi, 0);
	else
		fs_op_readdir(req, ino, size, off, fi);
}

static void w_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	if (is_virtual(ino))
		list_reply(req, ino, size, off, fi, 1);
	else
		fs_op_readdirplus(req, ino, size, off, fi);
}

static void w_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct snaplist *l;

	if (!is_virtual(ino)) {
		fs_op_releasedir(req, ino, fi);
		return;
	}
	l = (struct snaplist *)(uintptr_t)fi->fh;
	free(l->e);
	free(l);
	fuse_reply_err(req, 0);
}

static void w_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fnode *n;

	if (!is_virtual(ino)) {
		fs_op_release(req, ino, fi);
		return;
	}
	n = ((struct ofile *)(uintptr_t)fi->fh)->n;
	volf_release(n, O_RDONLY);
	fnode_close(the_fs, n);
	free((struct ofile *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void w_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	if (!is_virtual(ino))
		fs_op_access(req, ino, mask);
	else
		fuse_reply_err(req, (mask & W_OK) ? EROFS : 0);
}

/* Anything that would change a virtual node or make one in .snap. */
#define RO(ino) do { if (is_virtual(ino)) { fuse_reply_err(req, EROFS); return; } } while (0)

static void w_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		      struct fuse_file_info *fi)
{
	RO(ino);
	fs_op_setattr(req, ino, attr, to_set, fi);
}

static void w_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		    dev_t rdev)
{
	RO(parent);
	fs_op_mknod(req, parent, name, mode, rdev);
}

static void w_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	RO(parent);
	fs_op_mkdir(req, parent, name, mode);
}

static void w_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	RO(parent);
	fs_op_unlink(req, parent, name);
}

static void w_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	RO(parent);
	fs_op_rmdir(req, parent, name);
}

static void w_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		      const char *name)
{
	RO(parent);
	fs_op_symlink(req, link, parent, name);
}

static void w_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		     fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	RO(parent);
	RO(newparent);
	fs_op_rename(req, parent, name, newparent, newname, flags);
}

static void w_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		   const char *newname)
{
	RO(ino);
	RO(newparent);
	fs_op_link(req, ino, newparent, newname);
}

static void w_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     struct fuse_file_info *fi)
{
	RO(parent);
	fs_op_create(req, parent, name, mode, fi);
}

static void w_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		       const char *value, size_t size, int flags)
{
	RO(ino);
	fs_op_setxattr(req, ino, name, value, size, flags);
}

static void w_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	RO(ino);
	fs_op_removexattr(req, ino, name);
}

static void w_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	if (is_virtual(ino))
		fuse_reply_err(req, ENODATA);
	else
		fs_op_getxattr(req, ino, name, size);
}

static void w_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (!is_virtual(ino))
		fs_op_listxattr(req, ino, size);
	else if (size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_xattr(req, 0);
}

static void w_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			struct fuse_file_info *fi)
{
	RO(ino);
	fs_op_fallocate(req, ino, mode, off, len, fi);
}

static void w_readlink(fuse_req_t req, fuse_ino_t ino)
{
	if (is_virtual(ino))
		fuse_reply_err(req, EINVAL);
	else
		fs_op_readlink(req, ino);
}

void snapdir_ops(struct fuse_lowlevel_ops *ops)
{
	ops->lookup = w_lookup;
	ops->getattr = w_getattr;
	ops->setattr = w_setattr;
	ops->readlink = w_readlink;
	ops->mknod = w_mknod;
	ops->mkdir = w_mkdir;
	ops->unlink = w_unlink;
	ops->rmdir = w_rmdir;
	ops->symlink = w_symlink;
	ops->rename = w_rename;
	ops->link = w_link;
	ops->open = w_open;
	ops->release = w_release;
	ops->opendir = w_opendir;
	ops->readdir = w_readdir;
	ops->readdirplus = w_readdirplus;
	ops->releasedir = w_releasedir;
	ops->setxattr = w_setxattr;
	ops->getxattr = w_getxattr;
	ops->listxattr = w_listxattr;
	ops->removexattr = w_removexattr;
	ops->access = w_access;
	ops->create = w_create;
	ops->fallocate = w_fallocate;
}
