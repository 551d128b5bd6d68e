/*
 * ops_file.c - FUSE operations on open files: open, create, read,
 * write, flush, release, fsync, fallocate, lseek, copy_file_range.
 *
 * Data goes straight between this client and the block daemons (the
 * file's objects, libsdfs sdfs_file_*); the mds only learns the new
 * size and mtime, at flush (close), fsync, truncate or getattr time.
 * fi->fh is a struct ofile: one per open file description (the lock
 * owners of an open file are told apart by it, ops_lock.c), naming the
 * inode's struct fnode that every open of it shares.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"

#define COPY_CHUNK (1u << 20)

/* Data-path errors: anything that means "not reachable now" is EIO. */
static void io_err(fuse_req_t req, int neg)
{
	fs_reply_err(req, neg == -ENODATA || neg == -EAGAIN || neg == -ESTALE ? -EIO : neg);
}

static struct fnode *node_of(fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (fi && fi->fh)
		return ((struct ofile *)(uintptr_t)fi->fh)->n;
	return fnode_get(the_fs, ino, 0);       /* writeback of mmap'd pages */
}

/* The file as this client sees it: the mds's view plus what it wrote. */
static void view_of(struct fnode *n, struct sdfs_stat *st)
{
	pthread_mutex_lock(&n->lock);
	*st = n->st;
	if (n->pending_size > st->size)
		st->size = n->pending_size;
	pthread_mutex_unlock(&n->lock);
}

/* relatime: a read moves atime when it is not newer than mtime, or a
 * day old (the kernel leaves atime to FUSE servers). Not compared with
 * ctime: setting atime moves ctime in the mds. When due, the update is
 * claimed (atime_busy) before the caller replies, so a setattr the
 * application makes next waits for it (fnode_wait_atime) instead of
 * racing it to the mds, and a getattr meanwhile shows the claim's time
 * without waiting (a cluster that does not answer would hold it up to
 * the timeout); the caller must then touch_atime. Never through an
 * O_NOATIME open (@flags: the open's), as on a local file system. */
static int atime_due(struct fnode *n, int flags)
{
	struct timespec now;
	int due;

	if (the_fs->o.noatime || (flags & O_NOATIME))
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&n->lock);
	due = !n->atime_busy && (n->st.atime_ns <= n->st.mtime_ns ||
	      (int64_t)now.tv_sec * 1000000000 - n->st.atime_ns > 86400ll * 1000000000);
	if (due) {
		n->atime_busy = 1;
		n->atime_claim_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	}
	pthread_mutex_unlock(&n->lock);
	return due;
}

/* After atime_due said so. The caller holds an open reference on @n
 * (the kernel's release may come as soon as it has replied). */
static void touch_atime(struct fnode *n)
{
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_ATIME_NOW };
	struct sdfs_stat st;
	int ok = sdfs_ns_setattr(the_fs->s, n->ino, &sa, &st) == 0;
	pthread_mutex_lock(&n->lock);
	if (ok)         /* only the atime: the rest may be newer here */
		n->st.atime_ns = st.atime_ns;
	n->atime_busy = 0;
	pthread_cond_broadcast(&n->atime_done);
	pthread_mutex_unlock(&n->lock);
}

static int do_open(fuse_ino_t ino, struct fuse_file_info *fi, struct fnode **out)
{
	struct sdfs_stat st, view;
	struct fnode *n = fnode_get(the_fs, ino, 0);
	int ret;

	if (!n)
		return -ENOMEM;
	fnode_open(the_fs, n);
	inval_begin();
	/* close-to-open: what the mds says now — known without asking while
	 * it leases us the inode (docs/consistency.md), except where the open
	 * itself changes it or a volume's open asks the mds anyway */
	uint64_t ver = fnode_ver(n);
	int trunc = (fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY;

	if (!trunc && fnode_leased_stat(n, &st) && S_ISREG(st.mode) &&
	    st.layout != SDFS_LAYOUT_VOLUME)
		ret = 0;
	else
		ret = sdfs_ns_getattr(the_fs->s, ino, &st);
	if (!ret && st.layout == SDFS_LAYOUT_VOLUME) {
		ret = volf_open(n, fi->flags);
		if (!ret && (fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY) {
			fnode_set_stat_v(n, &st, ver, &view);
			ret = volf_resize(n, 0);
			if (!ret)
				ret = sdfs_ns_getattr(the_fs->s, ino, &st);
			ver = UINT64_MAX;
			if (ret)
				volf_release(n, fi->flags);
		}
		if (ret) {
			fnode_close(the_fs, n);
			return ret;
		}
		/* No page cache kept across opens, and no direct_io even for
		 * O_DIRECT: the kernel's async direct I/O then keeps many
		 * requests in flight (docs/volumes.md). */
		fnode_set_stat_v(n, &st, ver, &view);
		fi->keep_cache = 0;
		*out = n;
		return 0;
	}
	if (!ret && trunc && S_ISREG(st.mode)) {
		struct sdfs_setattr sa = { .mask = SDFS_SETATTR_SIZE | SDFS_SETATTR_MTIME_NOW };

		ret = fnode_push(the_fs, n);
		if (!ret)
			ret = sdfs_ns_setattr(the_fs->s, ino, &sa, &st);
		if (!ret) {
			pthread_mutex_lock(&n->lock);
			n->pending_size = 0;
			pthread_mutex_unlock(&n->lock);
			ver = UINT64_MAX;       /* our own change: applies */
		}
	}
	if (ret) {
		fnode_close(the_fs, n);
		return ret;
	}
	fnode_set_stat_v(n, &st, ver, &view);
	pthread_mutex_lock(&n->lock);
	/* WRITEBACK: another mount may have fsynced data its mtime does
	 * not show yet (timesback.c) */
	fi->keep_cache = n->open_mtime == view.mtime_ns && n->open_size == view.size &&
			 !(view.flags & SDFS_STAT_WRITEBACK);
	n->open_mtime = view.mtime_ns;
	n->open_size = view.size;
	pthread_mutex_unlock(&n->lock);
	/* Changed elsewhere since we last looked: the kernel drops the
	 * pages (no keep_cache) but keeps its cached size until the attribute
	 * timeout, and a read stops there. Drop the attributes too (offset
	 * -1: no page work, nothing this open waits on). */
	if (!fi->keep_cache && the_fs->se)
		fuse_lowlevel_notify_inval_inode(the_fs->se, ino, -1, 0);
	if (fi->flags & O_DIRECT)
		fi->direct_io = 1;
	*out = n;
	return 0;
}

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_caller(req);
	struct ofile *of = malloc(sizeof(*of));
	struct fnode *n;
	int ret = of ? do_open(ino, fi, &n) : -ENOMEM;

	if (ret) {
		free(of);
		fs_reply_err(req, ret);
		return;
	}
	of->n = n;
	fi->fh = (uint64_t)(uintptr_t)of;
	/* Reads served from the page cache never reach us: judge atime at
	 * an open for reading too, after replying (a getattr waits for it).
	 * An extra open reference keeps the node while we do: the release
	 * may come before we are done. */
	int touch = (fi->flags & O_ACCMODE) != O_WRONLY && atime_due(n, fi->flags);

	if (touch)
		fnode_open(the_fs, n);
	if (fuse_reply_open(req, fi)) {
		fnode_close(the_fs, n);         /* interrupted: no release comes */
		free(of);
	}
	if (touch) {
		touch_atime(n);
		fnode_close(the_fs, n);
	}
}

void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi)
{
	fs_caller(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fuse_entry_param e;
	struct sdfs_stat st, view;
	struct ofile *of = malloc(sizeof(*of));
	struct fnode *n;
	int ret;

	if (!of) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	inval_begin();
	/* the reply brings the directory's new attributes (fnode_set_stat_newer) */
	fnode_unlease(the_fs, parent);
	/* held open at the mds by the create itself (fnode_open's hold
	 * then sends nothing) */
	ret = sdfs_ns_create(the_fs->s, parent, name, (mode & ~S_IFMT) |
			     SDFS_MODE_UMASK(ctx->umask), ctx->uid, ctx->gid, &st);
	if (ret)
		dnames_drop(the_fs, parent);    /* it may have been made */
	else
		dnames_add(the_fs, parent, name);
	if (ret) {
		free(of);
		fs_reply_err(req, ret);
		return;
	}
	n = fnode_get(the_fs, st.ino, 1);
	if (!n) {
		free(of);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fnode_open(the_fs, n);
	fnode_set_stat(n, &st, &view);
	n->open_mtime = view.mtime_ns;
	n->open_size = view.size;
	if (fi->flags & O_DIRECT)
		fi->direct_io = 1;
	of->n = n;
	fi->fh = (uint64_t)(uintptr_t)of;
	fs_entry(&view, &e);
	if (fuse_reply_create(req, &e, fi)) {
		fnode_close(the_fs, n);
		fnode_forget(the_fs, st.ino, 1);
		free(of);
	}
}

void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	fs_caller(req);
	struct fnode *n = node_of(ino, fi);
	struct sdfs_stat st;
	char *buf;
	ssize_t got;

	if (!n) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	view_of(n, &st);
	if (st.layout == SDFS_LAYOUT_VOLUME) {
		volf_read(req, n, size, off);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	got = sdfs_file_pread(the_fs->s, &st, buf, size, (uint64_t)off);
	int touch = got >= 0 && atime_due(n, fi->flags);
	if (touch)
		fnode_open(the_fs, n);  /* kept past the reply */
	if (got < 0)
		io_err(req, (int)got);
	else
		fuse_reply_buf(req, buf, (size_t)got);
	free(buf);
	if (touch) {
		touch_atime(n);
		fnode_close(the_fs, n);
	}
}

void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	fs_caller(req);
	struct fnode *n = node_of(ino, fi);
	struct sdfs_stat st;
	int sync = fi && (fi->flags & (O_SYNC | O_DSYNC));
	int ret;

	if (!n) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	view_of(n, &st);
	if (st.layout == SDFS_LAYOUT_VOLUME) {
		volf_write(req, n, buf, size, off);
		return;
	}
	if (st.layout != SDFS_LAYOUT_FILE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	ret = sdfs_file_pwrite(the_fs->s, &st, buf, size, (uint64_t)off,
			       sync ? SDFS_WRITE_SYNC : 0);
	if (!ret) {
		fnode_wrote(n, (uint64_t)off, size);
		if (sync)       /* O_SYNC / O_DSYNC: the size durable too */
			ret = fnode_sync_write(the_fs, n, (fi->flags & O_SYNC) == O_SYNC);
	}
	if (ret)
		io_err(req, ret);
	else
		fuse_reply_write(req, size);
}

void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_caller(req);
	struct fnode *n = node_of(ino, fi);
	int ret = n ? fnode_push(the_fs, n) : 0;

	if (ret)
		fs_reply_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_caller(req);
	struct fnode *n = node_of(ino, fi);
	struct sdfs_stat st;

	if (n) {
		view_of(n, &st);
		if (st.layout == SDFS_LAYOUT_VOLUME)
			volf_release(n, fi->flags);
		fnode_push(the_fs, n);  /* flush already reported any error */
		fnode_close(the_fs, n);
	}
	free((struct ofile *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	fs_caller(req);
	struct fnode *n = node_of(ino, fi);
	struct sdfs_stat st;
	int ret;

	if (n) {
		view_of(n, &st);
		if (st.layout == SDFS_LAYOUT_VOLUME) {
			volf_fsync(req, n);
			return;
		}
	}
	ret = n ? fnode_sync(the_fs, n, datasync) : 0;
	/* the file's name and attributes: durable too (docs/consistency.md
	 * "What is durable when"); nothing to do if this mount changed no
	 * name since its last sync */
	if (!ret)
		ret = sdfs_ns_sync(the_fs->s);
	if (ret)
		io_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

static void punched(void *arg, uint64_t chunk)
{
	struct fnode *n = arg;

	pthread_mutex_lock(&n->lock);
	space_note(n, chunk, 1);        /* told to the mds at the push */
	pthread_mutex_unlock(&n->lock);
}

/* Zero [off, off+len) of the file: whole objects go, parts are zeroed. */
static int punch(struct fnode *n, const struct sdfs_stat *st, uint64_t off, uint64_t len)
{
	int ret = len ? sdfs_file_punch(the_fs->s, st, off, len, punched, n) : 0;

	if (ret || !len)
		return ret;
	pthread_mutex_lock(&n->lock);
	n->mtime_dirty = 1;
	pthread_mutex_unlock(&n->lock);
	return 0;
}

void fs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		     struct fuse_file_info *fi)
{
	fs_caller(req);
	struct fnode *n = node_of(ino, fi);
	struct sdfs_stat st;
	int ret = 0;

	if (!n) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	view_of(n, &st);
	if (st.layout == SDFS_LAYOUT_VOLUME) {
		volf_fallocate(req, n, mode, off, len);
		return;
	}
	if (mode == 0 || mode == FALLOC_FL_KEEP_SIZE) {
		/* Thin: nothing to reserve; only the size may grow. */
		if (mode == 0 && (uint64_t)(off + len) > st.size) {
			if ((uint64_t)(off + len) > sdfs_file_max_size(st.obj_size)) {
				fuse_reply_err(req, EFBIG);
				return;
			}
			pthread_mutex_lock(&n->lock);
			if ((uint64_t)(off + len) > n->pending_size)
				n->pending_size = (uint64_t)(off + len);
			pthread_mutex_unlock(&n->lock);
			ret = fnode_push(the_fs, n);
		}
	} else if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) ||
		   (mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE) {
		/* Thin: a zeroed range is a hole, as a punched one; zero-range
		 * may also grow the file (unless KEEP_SIZE). */
		uint64_t end = (uint64_t)off + (uint64_t)len;

		if (end > sdfs_file_max_size(st.obj_size) && !(mode & FALLOC_FL_KEEP_SIZE)) {
			fuse_reply_err(req, EFBIG);
			return;
		}
		if ((uint64_t)off < st.size)
			ret = punch(n, &st, (uint64_t)off,
				    (end < st.size ? end : st.size) - (uint64_t)off);
		if (!ret && !(mode & FALLOC_FL_KEEP_SIZE) && end > st.size) {
			pthread_mutex_lock(&n->lock);
			if (end > n->pending_size)
				n->pending_size = end;
			n->mtime_dirty = 1;
			pthread_mutex_unlock(&n->lock);
			ret = fnode_push(the_fs, n);
		}
	} else {
		ret = -EOPNOTSUPP;
	}
	if (ret)
		io_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

/* SEEK_DATA / SEEK_HOLE at object granularity: an object that exists
 * is data up to its length, the rest of it and missing objects are
 * holes. */
void fs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		 struct fuse_file_info *fi)
{
	fs_caller(req);
	struct fnode *n = node_of(ino, fi);
	struct sdfs_stat st;
	uint64_t pos = (uint64_t)off;
	int ret;

	if (!n || (whence != SEEK_DATA && whence != SEEK_HOLE)) {
		fuse_reply_err(req, n ? EINVAL : ENOMEM);
		return;
	}
	view_of(n, &st);
	if (st.layout == SDFS_LAYOUT_VOLUME) {
		volf_lseek(req, n, off, whence);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	ret = sdfs_file_seek(the_fs->s, &st, pos, whence, &pos);
	if (ret == -ENXIO || ret == -EINVAL)
		fuse_reply_err(req, -ret);
	else if (ret)
		io_err(req, ret);
	else
		fuse_reply_lseek(req, (off_t)pos);
}

/* Through this client: read a piece, write it (objects are not copied
 * between block daemons directly yet). */
void fs_op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			   struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			   struct fuse_file_info *fi_out, size_t len, int flags)
{
	fs_caller(req);
	struct fnode *in = node_of(ino_in, fi_in), *out = node_of(ino_out, fi_out);
	struct sdfs_stat sin, sout;
	size_t done = 0;
	char *buf;
	int ret = 0;

	if (flags) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (!in || !out || !(buf = malloc(COPY_CHUNK))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	view_of(in, &sin);
	view_of(out, &sout);
	while (done < len) {
		size_t want = len - done < COPY_CHUNK ? len - done : COPY_CHUNK;
		ssize_t got = sin.layout == SDFS_LAYOUT_VOLUME ?
			volf_pread(in, buf, want, (uint64_t)off_in + done) :
			sdfs_file_pread(the_fs->s, &sin, buf, want, (uint64_t)off_in + done);

		if (got <= 0) {
			ret = (int)got;
			break;
		}
		if (sout.layout == SDFS_LAYOUT_VOLUME) {
			ret = volf_pwrite(out, buf, (size_t)got, (uint64_t)off_out + done);
		} else {
			ret = sdfs_file_pwrite(the_fs->s, &sout, buf, (size_t)got,
					       (uint64_t)off_out + done, 0);
			if (!ret)
				fnode_wrote(out, (uint64_t)off_out + done, (uint64_t)got);
		}
		if (ret)
			break;
		done += (size_t)got;
	}
	free(buf);
	if (ret && !done)
		io_err(req, ret);
	else
		fuse_reply_write(req, done);
}
