/*
 * ops_node.c - FUSE operations on names and attributes: lookup, forget,
 * getattr, setattr, mknod, mkdir, unlink, rmdir, symlink, rename, link,
 * readlink, statfs, xattrs, access.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <time.h>

#include "fs/fs.h"

/* Floor division: before 1970 the nanoseconds stay in [0, 1e9). */
static void ns_to_ts(int64_t ns, struct timespec *ts)
{
	int64_t sec = ns / 1000000000, rem = ns % 1000000000;

	if (rem < 0) {
		rem += 1000000000;
		sec--;
	}
	ts->tv_sec = sec;
	ts->tv_nsec = rem;
}

void fs_stat_to_kernel(const struct sdfs_stat *st, struct stat *out)
{
	memset(out, 0, sizeof(*out));
	out->st_ino = st->ino;
	out->st_mode = st->mode;
	out->st_nlink = st->nlink;
	out->st_uid = st->uid;
	out->st_gid = st->gid;
	out->st_rdev = st->rdev;
	out->st_size = (off_t)st->size;
	out->st_blocks = (blkcnt_t)st->blocks;
	out->st_blksize = 1 << 20;
	ns_to_ts(st->atime_ns, &out->st_atim);
	ns_to_ts(st->mtime_ns, &out->st_mtim);
	ns_to_ts(st->ctime_ns, &out->st_ctim);
}

void fs_entry(const struct sdfs_stat *st, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = st->ino;
	/* The root's generation is 0 to the kernel (FUSE_ROOT_ID from
	 * INIT); a `..` lookup answering another gets "root generation
	 * should be zero" in its log, and is overridden. */
	e->generation = st->ino == FUSE_ROOT_ID ? 0 : st->gen & 0xffffffffu;
	fs_stat_to_kernel(st, &e->attr);
	e->attr_timeout = inval_attr_timeout(inval_thread_mark());
	e->entry_timeout = inval_entry_timeout(inval_thread_mark());
}

void fs_reply_err(fuse_req_t req, int neg_errno)
{
	int e = -neg_errno;

	switch (e) {
	case ETIMEDOUT: case EHOSTDOWN: case ESHUTDOWN:
	case EPROTO: case EBADMSG: case ECONNREFUSED: case ECONNRESET:
		e = EIO;        /* the cluster could not answer now */
		break;
	}
	if (e <= 0)
		e = EIO;
	fuse_reply_err(req, e);
}

int fs_getattr(struct fs *fs, uint64_t ino, struct sdfs_stat *st)
{
	struct sdfs_stat mds;
	struct fnode *n = fnode_find(fs, ino);
	int ret;

	uint64_t ver = 0;

	if (n)
		ver = fnode_ver(n);
	ret = sdfs_ns_getattr(fs->s, ino, &mds);
	if (ret)
		return ret;
	if (!n) {
		*st = mds;
		return 0;
	}
	fnode_set_stat_v(n, &mds, ver, st);
	/* Our relatime update claimed or in flight (ops_file.c): show the
	 * atime it sets, not an older one the mds still has. */
	pthread_mutex_lock(&n->lock);
	if (n->atime_busy && st->atime_ns < n->atime_claim_ns)
		st->atime_ns = n->atime_claim_ns;
	pthread_mutex_unlock(&n->lock);
	return 0;
}

/* Reply with an entry for @st, taking one kernel reference. @ver: as
 * for fnode_set_stat_v (UINT64_MAX: a change made here). */
static void reply_entry_v(fuse_req_t req, const struct sdfs_stat *st, uint64_t ver)
{
	struct fuse_entry_param e;
	struct sdfs_stat view = *st;
	struct fnode *n = fnode_get(the_fs, st->ino, 1);

	if (!n) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fnode_set_stat_v(n, st, ver, &view);
	fs_entry(&view, &e);
	if (fuse_reply_entry(req, &e))
		fnode_forget(the_fs, st->ino, 1);       /* the kernel did not take it */
}

static void reply_entry(fuse_req_t req, const struct sdfs_stat *st)
{
	reply_entry_v(req, st, UINT64_MAX);
}

void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs_caller(req);
	struct sdfs_stat st;
	struct fnode *n;
	uint64_t ver = UINT64_MAX;
	int ret;

	inval_begin();
	if (strcmp(name, ".") == 0) {
		/* NFS: any inode; its node may hold newer state than the reply */
		n = fnode_find(the_fs, parent);
		if (n)
			ver = fnode_ver(n);
		ret = sdfs_ns_getattr(the_fs->s, parent, &st);
		/* a handle of an inode without a name is stale, even while a
		 * client holds it open (as ext4 answers open_by_handle_at) */
		if (!ret && st.nlink == 0)
			ret = -ESTALE;
	} else {
		double left;

		if (dnames_absent(the_fs, parent, name, &left)) {
			/* every name of the directory is known here */
			double t = inval_entry_timeout(inval_thread_mark());
			struct fuse_entry_param e = { .ino = 0,
				.entry_timeout = left < t ? left : t };

			fuse_reply_entry(req, &e);
			return;
		}
		ret = sdfs_ns_lookup(the_fs->s, parent, name, &st);
		/* the kernel holds no reference by name here; a node it holds
		 * for the inode (another name, an open file) keeps its newer
		 * state if it changed meanwhile */
		n = ret ? NULL : fnode_find(the_fs, st.ino);
		if (n && fnode_ver(n) != 0)
			ver = UINT64_MAX - 1;   /* never current: not applied */
	}
	if (ret == -ENOENT) {
		/* a negative entry, cached like positive ones (the kernel
		 * drops it when this client creates the name) */
		struct fuse_entry_param e = { .ino = 0,
			.entry_timeout = inval_entry_timeout(inval_thread_mark()) };
		fuse_reply_entry(req, &e);
		return;
	}
	if (ret)
		fs_reply_err(req, ret);
	else
		reply_entry_v(req, &st, ver);
}

void fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fnode_forget(the_fs, ino, nlookup);
	fuse_reply_none(req);
}

void fs_op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	for (size_t i = 0; i < count; i++)
		fnode_forget(the_fs, f[i].ino, f[i].nlookup);
	fuse_reply_none(req);
}

void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_caller(req);
	struct sdfs_stat st;
	struct stat kst;
	int ret;
	(void)fi;

	inval_begin();
	/* A directory leased to us (a lookup, or the reply of a change made
	 * here in it): what the mds would answer, until the lease ends. */
	struct fnode *n = fnode_find(the_fs, ino);
	double left;

	if (n && fnode_leased_dir(n, &st, &left)) {
		double t = inval_attr_timeout(inval_thread_mark());

		fs_stat_to_kernel(&st, &kst);
		fuse_reply_attr(req, &kst, left < t ? left : t);
		return;
	}
	ret = fs_getattr(the_fs, ino, &st);
	if (ret) {
		fs_reply_err(req, ret);
		return;
	}
	fs_stat_to_kernel(&st, &kst);
	fuse_reply_attr(req, &kst, inval_attr_timeout(inval_thread_mark()));
}

/*
 * For a setattr that sets mtime: add @n's pending size to @sa (only
 * growing, as a push does) and clear its pending write time. Returns
 * whether a write time was pending (restore it if the call fails).
 */
static int take_write_time(struct fnode *n, struct sdfs_setattr *sa)
{
	int was;

	pthread_mutex_lock(&n->lock);
	if (n->pending_size > n->st.size) {
		sa->mask |= SDFS_SETATTR_SIZE | SDFS_SETATTR_EXTEND;
		sa->size = n->pending_size;
	}
	was = n->mtime_dirty;
	n->mtime_dirty = 0;
	pthread_mutex_unlock(&n->lock);
	return was;
}

void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi)
{
	fs_caller(req);
	struct sdfs_setattr sa = { 0 };
	struct sdfs_stat st, view;
	struct fnode *n = fnode_find(the_fs, ino);
	struct stat kst;
	int ret;
	(void)fi;

	inval_begin();
	if (n)          /* after our own atime update, not racing it */
		fnode_wait_atime(n);

	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.mask |= SDFS_SETATTR_MODE;
		sa.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.mask |= SDFS_SETATTR_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.mask |= SDFS_SETATTR_GID;
		sa.gid = attr->st_gid;
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && n && n->st.layout == SDFS_LAYOUT_VOLUME) {
		/* A volume frees and zeroes through its writer (volfile.c). */
		ret = volf_resize(n, (uint64_t)attr->st_size);
		if (ret) {
			fs_reply_err(req, ret);
			return;
		}
		sa.mask |= SDFS_SETATTR_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.mask |= SDFS_SETATTR_SIZE;
		if (fi)         /* ftruncate: the open checked the access */
			sa.mask |= SDFS_SETATTR_FH;
		sa.size = (uint64_t)attr->st_size;
		/* what was written here must reach the mds first, or its
		 * truncate would not free the data past the new size */
		if (n && (ret = fnode_push(the_fs, n)) != 0) {
			fs_reply_err(req, ret);
			return;
		}
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.mask |= SDFS_SETATTR_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.mask |= SDFS_SETATTR_ATIME;
		sa.atime_ns = (int64_t)attr->st_atim.tv_sec * 1000000000 + attr->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.mask |= SDFS_SETATTR_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.mask |= SDFS_SETATTR_MTIME;
		sa.mtime_ns = (int64_t)attr->st_mtim.tv_sec * 1000000000 + attr->st_mtim.tv_nsec;
	}
	/* a user's setattr always moves ctime (utimes of atime alone too) */
	sa.mask |= SDFS_SETATTR_CTIME;
	/* An explicit mtime (cp -a, tar, rsync: futimens before close) wins
	 * over the time of writes made here before it: their pending size
	 * goes in this call, and close pushes no write time over it. */
	int was_dirty = 0;

	if (n && (sa.mask & (SDFS_SETATTR_MTIME | SDFS_SETATTR_MTIME_NOW)) &&
	    !(sa.mask & SDFS_SETATTR_SIZE))
		was_dirty = take_write_time(n, &sa);
	/* an empty chunk report: a size grown here writes nothing (the
	 * mds keeps counting the file's space) */
	ret = sdfs_ns_setattr_chunks(the_fs->s, ino, &sa, NULL, 0, &st);
	if (ret) {
		if (was_dirty) {        /* not set: the writes' time still counts */
			pthread_mutex_lock(&n->lock);
			n->mtime_dirty = 1;
			pthread_mutex_unlock(&n->lock);
		}
		fs_reply_err(req, ret);
		return;
	}
	if (n) {
		if ((sa.mask & SDFS_SETATTR_SIZE) && !(sa.mask & SDFS_SETATTR_EXTEND)) {
			pthread_mutex_lock(&n->lock);
			n->pending_size = 0;
			pthread_mutex_unlock(&n->lock);
		}
		fnode_set_stat(n, &st, &view);
	} else {
		view = st;
	}
	fs_stat_to_kernel(&view, &kst);
	fuse_reply_attr(req, &kst, inval_attr_timeout(inval_thread_mark()));
}

void fs_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	fs_caller(req);
	char buf[4097];
	ssize_t n = sdfs_ns_readlink(the_fs->s, ino, buf, sizeof(buf) - 1);

	if (n < 0) {
		fs_reply_err(req, (int)n);
		return;
	}
	buf[n < (ssize_t)sizeof(buf) - 1 ? n : (ssize_t)sizeof(buf) - 1] = '\0';
	fuse_reply_readlink(req, buf);
}

/*
 * Around a change made here in @dir (and @dir2; 0: none): until its
 * reply brings their new attributes (fnode_set_stat_newer), their copies
 * here are not what the mds would answer: unlease them first. A reply
 * that brought none (an mds before 2.1) may also have left a removed,
 * replaced or moved inode's copy stale: unlease every node then.
 */
static uint64_t change_begin(fuse_ino_t dir, fuse_ino_t dir2)
{
	fnode_unlease(the_fs, dir);
	if (dir2 && dir2 != dir)
		fnode_unlease(the_fs, dir2);
	return fnode_newer_count();
}

static void change_end(int ret, uint64_t seen)
{
	if (!ret && fnode_newer_count() == seen)
		fnode_unlease_all(the_fs);
}

/* A change here in @dir: its name is now there (@added), or gone; a
 * failed change may have been made: forget the directory's names. */
static void names_changed(fuse_ino_t dir, const char *name, int ret, int added)
{
	if (ret)
		dnames_drop(the_fs, dir);
	else if (added)
		dnames_add(the_fs, dir, name);
	else
		dnames_del(the_fs, dir, name);
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev, int dir)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct sdfs_stat st;
	int ret;

	inval_begin();
	/* the umask: the mds applies it unless a default ACL rules */
	mode |= SDFS_MODE_UMASK(ctx->umask);
	uint64_t seen = change_begin(parent, 0);

	if (dir)
		ret = sdfs_ns_mkdir(the_fs->s, parent, name, mode, ctx->uid, ctx->gid, &st);
	else
		ret = sdfs_ns_mknod(the_fs->s, parent, name, mode, (uint32_t)rdev,
				    ctx->uid, ctx->gid, &st);
	change_end(ret, seen);
	names_changed(parent, name, ret, 1);
	if (ret) {
		fs_reply_err(req, ret);
		return;
	}
	/* made here, empty, its names leased to us: known before the
	 * kernel can make any name in it */
	if (dir && (st.flags & SDFS_STAT_LISTING) && fnode_get(the_fs, st.ino, 0))
		dnames_start(the_fs, st.ino);
	reply_entry(req, &st);
}

void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		 dev_t rdev)
{
	fs_caller(req);
	make_node(req, parent, name, mode, rdev, 0);
}

void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fs_caller(req);
	make_node(req, parent, name, mode, 0, 1);
}

/* A file open on any mount (this one too) outlives its last name: the
 * mds keeps it as a stray until its last close (fnode_open/close hold it
 * there; docs/mds.md "Strays"), so unlink and rename just remove names. */
/* unlink and rmdir: one name goes, nothing else changes here. */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name,
			int (*rm)(struct sdfs *, uint64_t, const char *))
{
	fs_caller(req);
	int ret;

	inval_begin();        /* the leases the reply brings (fnode_set_stat_newer) */
	uint64_t seen = change_begin(parent, 0);

	ret = rm(the_fs->s, parent, name);
	change_end(ret, seen);
	names_changed(parent, name, ret, 0);
	if (ret)
		fs_reply_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, sdfs_ns_unlink);
}

void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, sdfs_ns_rmdir);
}

void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	fs_caller(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct sdfs_stat st;
	int ret;

	inval_begin();
	uint64_t seen = change_begin(parent, 0);

	ret = sdfs_ns_symlink(the_fs->s, parent, name, link, ctx->uid, ctx->gid, &st);
	change_end(ret, seen);
	names_changed(parent, name, ret, 1);

	if (ret)
		fs_reply_err(req, ret);
	else
		reply_entry(req, &st);
}

void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	fs_caller(req);
	int ret;

	inval_begin();
	uint64_t seen = change_begin(parent, newparent);

	ret = sdfs_ns_rename(the_fs->s, parent, name, newparent, newname, flags);
	change_end(ret, seen);
	if (!ret && fnode_newer_count() == seen) {
		/* no attributes back: an older mds, or two links of one
		 * inode (nothing renamed): which names remain is not known */
		names_changed(parent, name, -1, 0);
		names_changed(newparent, newname, -1, 1);
	} else if (!(flags & RENAME_EXCHANGE) || ret) { /* an exchange keeps both */
		names_changed(parent, name, ret, 0);
		names_changed(newparent, newname, ret, 1);
	}

	if (ret)
		fs_reply_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	fs_caller(req);
	struct sdfs_stat st;
	int ret;

	inval_begin();
	uint64_t seen = change_begin(newparent, 0);

	ret = sdfs_ns_link(the_fs->s, ino, newparent, newname, &st);
	change_end(ret, seen);
	names_changed(newparent, newname, ret, 1);

	if (ret)
		fs_reply_err(req, ret);
	else
		reply_entry(req, &st);
}

void fs_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	fs_caller(req);
	struct sdfs_statfs sf;
	struct statvfs v = { 0 };
	int ret = sdfs_ns_statfs(the_fs->s, &sf);
	(void)ino;

	if (ret) {
		fs_reply_err(req, ret);
		return;
	}
	v.f_bsize = sf.bsize;
	v.f_frsize = sf.bsize;
	v.f_blocks = sf.bytes_total / sf.bsize;
	v.f_bfree = sf.bytes_free / sf.bsize;
	v.f_bavail = sf.bytes_avail / sf.bsize;
	v.f_files = sf.files + sf.files_free;
	v.f_ffree = sf.files_free;
	v.f_favail = sf.files_free;
	v.f_namemax = sf.name_max;
	fuse_reply_statfs(req, &v);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char caps_name[] = "security.capability";

/* The kernel asks for security.capability before every write (to drop
 * file capabilities): remember "none" for the attribute timeout. */
static void caps_forget(fuse_ino_t ino, const char *name)
{
	struct fnode *n = fnode_find(the_fs, ino);

	if (n && strcmp(name, caps_name) == 0) {
		pthread_mutex_lock(&n->lock);
		n->nocaps_until = 0;
		pthread_mutex_unlock(&n->lock);
	}
}

static const char acl_access_name[] = "system.posix_acl_access";

/*
 * Setting an access ACL by a caller outside the file's group clears
 * setgid, as Linux does (the kernel says so in FUSE_SETXATTR_ACL_KILL_SGID,
 * which libfuse 3.14 does not pass on): is the caller root, or is the
 * file's group its own or one of its groups?
 */
static int acl_kills_sgid(fuse_req_t req, fuse_ino_t ino)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct sdfs_stat st;
	gid_t groups[256];
	int n;

	if (ctx->uid == 0 || fs_getattr(the_fs, ino, &st) || !(st.mode & S_ISGID) ||
	    st.gid == ctx->gid)
		return 0;
	n = fuse_req_getgroups(req, 256, groups);
	for (int i = 0; i < n && i < 256; i++)
		if (groups[i] == st.gid)
			return 0;
	return 1;
}

void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags)
{
	fs_caller(req);
	int acl = strcmp(name, acl_access_name) == 0;
	int ret;

	caps_forget(ino, name);
	if (acl && acl_kills_sgid(req, ino))
		flags |= SDFS_XATTR_KILL_SGID;
	ret = sdfs_ns_setxattr(the_fs->s, ino, name, value, size, flags);
	/* the mds moved ctime (and set the mode bits from an ACL): the
	 * node's copy is no longer what it would answer */
	fnode_unlease(the_fs, ino);

	if (ret)
		fs_reply_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

/* get and list: the size when @size is 0, else the bytes. */
static void reply_xattr(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0) {
		/* ENODATA here means "no such attribute", not "unreachable" */
		fs_reply_err(req, (int)n);
		return;
	}
	if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	fs_caller(req);
	int caps = strcmp(name, caps_name) == 0;
	struct fnode *n = caps ? fnode_find(the_fs, ino) : NULL;
	char *buf;
	ssize_t got;

	if (n) {
		pthread_mutex_lock(&n->lock);
		int known = n->nocaps_until > mono_ns();
		pthread_mutex_unlock(&n->lock);
		if (known) {
			fuse_reply_err(req, ENODATA);
			return;
		}
	}
	buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	got = sdfs_ns_getxattr(the_fs->s, ino, name, buf, size);
	if (n && got == -ENODATA) {
		pthread_mutex_lock(&n->lock);
		n->nocaps_until = mono_ns() + (int64_t)(the_fs->o.attr_timeout * 1e9);
		pthread_mutex_unlock(&n->lock);
	}
	reply_xattr(req, got, buf, size);
	free(buf);
}

void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	fs_caller(req);
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = sdfs_ns_listxattr(the_fs->s, ino, buf, size);
	reply_xattr(req, n, buf, size);
	free(buf);
}

void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fs_caller(req);
	int ret;

	caps_forget(ino, name);
	ret = sdfs_ns_removexattr(the_fs->s, ino, name);
	fnode_unlease(the_fs, ino);     /* ctime moved */

	if (ret)
		fs_reply_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

/* With default_permissions the kernel checks modes itself; this only
 * answers access(2) for existence. */
void fs_op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	fs_caller(req);
	struct sdfs_stat st;
	int ret = sdfs_ns_getattr(the_fs->s, ino, &st);
	(void)mask;

	if (ret)
		fs_reply_err(req, ret);
	else
		fuse_reply_err(req, 0);
}
