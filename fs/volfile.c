/*
 * volfile.c - volume files in the mount (docs/volumes.md): I/O goes
 * through libsdfs's volume handles straight to the block daemons, no
 * mds round trip per I/O. The kernel's async direct I/O keeps many
 * O_DIRECT requests in flight at once (the file is not opened with
 * direct_io: with libfuse 3.14 that would serialize writes).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/fs.h"

int volf_wait;
int volf_lazy;

static int is_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY;
}

static void holder_desc(char *buf, size_t len)
{
	char host[64];

	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	snprintf(buf, len, "host=%s pid=%d mount.sdfs", host, (int)getpid());
}

int volf_open(struct fnode *n, int flags)
{
	char desc[128];
	int ret = 0;

	pthread_rwlock_wrlock(&n->vol_rw);
	if (is_write(flags) && !n->vol_wr && !volf_lazy) {
		holder_desc(desc, sizeof(desc));
		/* without vol_wait, a grace: the kernel sends the RELEASE
		 * of the last user's file after that user exited, so a mount
		 * whose writer just went may hold the lock a moment longer */
		ret = sdfs_vol_open(the_fs->s, n->ino,
				    SDFS_VOL_WRITE | (volf_wait ? SDFS_VOL_WAIT : SDFS_VOL_GRACE),
				    desc, &n->vol_wr);
	} else if ((!is_write(flags) || volf_lazy) && !n->vol_rd && !n->vol_wr) {
		ret = sdfs_vol_open(the_fs->s, n->ino, 0, NULL, &n->vol_rd);
	}
	if (!ret) {
		n->vol_opens++;
		if (is_write(flags))
			n->vol_writers++;
	}
	pthread_rwlock_unlock(&n->vol_rw);
	return ret;
}

void volf_release(struct fnode *n, int flags)
{
	struct sdfs_vol *wr = NULL, *rd = NULL;

	pthread_rwlock_wrlock(&n->vol_rw);
	if (is_write(flags) && --n->vol_writers == 0) {
		wr = n->vol_wr;
		n->vol_wr = NULL;
	}
	if (--n->vol_opens == 0) {
		rd = n->vol_rd;
		n->vol_rd = NULL;
	}
	/* Closed (flushed, the lock released) before another open of this
	 * node can look: it would find our own lock still held. */
	sdfs_vol_close(wr);
	pthread_rwlock_unlock(&n->vol_rw);
	sdfs_vol_close(rd);
}

/* The handle for I/O, with vol_rw held shared (NULL: not open here). */
static struct sdfs_vol *vol_get(struct fnode *n)
{
	pthread_rwlock_rdlock(&n->vol_rw);
	if (n->vol_wr)
		return n->vol_wr;
	if (n->vol_rd)
		return n->vol_rd;
	pthread_rwlock_unlock(&n->vol_rw);
	return NULL;
}

static void vol_put(struct fnode *n)
{
	pthread_rwlock_unlock(&n->vol_rw);
}

/* The node's size follows the volume's (a write may have grown it). */
static void note_size(struct fnode *n, uint64_t size)
{
	pthread_mutex_lock(&n->lock);
	if (size > n->st.size) {
		n->st.size = size;
		n->attr_ver++;
	}
	pthread_mutex_unlock(&n->lock);
}

static void reply_io_err(fuse_req_t req, int neg)
{
	/* Fenced (another writer took the volume), or cut off: EIO. */
	if (neg == -EPERM || neg == -ETIMEDOUT || neg == -EHOSTDOWN || neg == -ENODATA)
		neg = -EIO;
	fuse_reply_err(req, -neg);
}

ssize_t volf_pread(struct fnode *n, void *buf, size_t size, uint64_t off)
{
	struct sdfs_vol *v = vol_get(n);
	ssize_t got;

	if (!v)
		return -EBADF;
	got = sdfs_vol_pread(v, buf, size, off);
	vol_put(n);
	return got;
}

/*
 * With vol_lazy, a write open holds only a reader until its first
 * change: the writer lock is taken then, waiting for the holder (QEMU
 * live migration: the destination opens the image while the source
 * still writes it, and writes only after the switch-over).
 */
static int writer_get(struct fnode *n)
{
	char desc[128];
	int ret = 0;

	pthread_rwlock_wrlock(&n->vol_rw);
	if (!n->vol_wr && n->vol_writers > 0) {
		holder_desc(desc, sizeof(desc));
		ret = sdfs_vol_open(the_fs->s, n->ino, SDFS_VOL_WRITE | SDFS_VOL_WAIT,
				    desc, &n->vol_wr);
	}
	pthread_rwlock_unlock(&n->vol_rw);
	return ret;
}

/* The writer handle for a change, with vol_rw held shared. */
static int vol_get_writer(struct fnode *n, struct sdfs_vol **out)
{
	int ret;

	for (;;) {
		pthread_rwlock_rdlock(&n->vol_rw);
		if (n->vol_wr) {
			*out = n->vol_wr;
			return 0;
		}
		ret = n->vol_writers > 0 ? 0 : (n->vol_rd ? -EROFS : -EBADF);
		pthread_rwlock_unlock(&n->vol_rw);
		if (!ret)
			ret = writer_get(n);
		if (ret)
			return ret;
	}
}

int volf_pwrite(struct fnode *n, const void *buf, size_t size, uint64_t off)
{
	struct sdfs_vol *v;
	int ret = vol_get_writer(n, &v);

	if (ret)
		return ret;
	ret = sdfs_vol_pwrite(v, buf, size, off);
	if (!ret)
		note_size(n, sdfs_vol_size(v));
	vol_put(n);
	return ret;
}

void volf_read(fuse_req_t req, struct fnode *n, size_t size, off_t off)
{
	char *buf = malloc(size ? size : 1);
	ssize_t got;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	got = volf_pread(n, buf, size, (uint64_t)off);
	if (got < 0)
		reply_io_err(req, (int)got);
	else
		fuse_reply_buf(req, buf, (size_t)got);
	free(buf);
}

void volf_write(fuse_req_t req, struct fnode *n, const char *buf, size_t size, off_t off)
{
	int ret = volf_pwrite(n, buf, size, (uint64_t)off);

	if (ret)
		reply_io_err(req, ret);
	else
		fuse_reply_write(req, size);
}

void volf_fsync(fuse_req_t req, struct fnode *n)
{
	struct sdfs_vol *v = vol_get(n);
	int ret = v ? sdfs_vol_flush(v) : 0;

	if (v)
		vol_put(n);
	if (!ret)
		ret = sdfs_ns_sync(the_fs->s);
	if (ret)
		reply_io_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

int volf_resize(struct fnode *n, uint64_t size)
{
	struct sdfs_vol *v = NULL;
	char desc[128];
	int ret;

	pthread_rwlock_rdlock(&n->vol_rw);
	if (n->vol_wr) {
		ret = sdfs_vol_resize(n->vol_wr, size);
		pthread_rwlock_unlock(&n->vol_rw);
	} else {
		pthread_rwlock_unlock(&n->vol_rw);
		holder_desc(desc, sizeof(desc));
		ret = sdfs_vol_open(the_fs->s, n->ino, SDFS_VOL_WRITE, desc, &v);
		if (!ret)
			ret = sdfs_vol_resize(v, size);
		sdfs_vol_close(v);
	}
	if (!ret) {
		pthread_mutex_lock(&n->lock);
		n->st.size = size;
		n->attr_ver++;
		pthread_mutex_unlock(&n->lock);
	}
	return ret;
}

void volf_fallocate(fuse_req_t req, struct fnode *n, int mode, off_t off, off_t len)
{
	struct sdfs_vol *v;
	uint64_t end = (uint64_t)off + (uint64_t)len;
	int ret = 0, grow;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	ret = vol_get_writer(n, &v);
	if (ret) {
		reply_io_err(req, ret);
		return;
	}
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		/* Both free whole chunks and zero parts (thin: zeros are holes). */
		ret = sdfs_vol_punch(v, (uint64_t)off, (uint64_t)len);
	}
	grow = !ret && !(mode & FALLOC_FL_KEEP_SIZE) && end > sdfs_vol_size(v);
	vol_put(n);
	if (grow)       /* thin: nothing to reserve; only the size grows */
		ret = volf_resize(n, end);
	if (ret)
		reply_io_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

/* SEEK_DATA / SEEK_HOLE by chunk: a chunk with an owner is data. */
void volf_lseek(fuse_req_t req, struct fnode *n, off_t off, int whence)
{
	struct sdfs_vol *v = vol_get(n);
	struct sdfs_vol_info vi;
	uint64_t pos = (uint64_t)off;

	if (!v) {
		fuse_reply_err(req, EBADF);
		return;
	}
	sdfs_vol_get_info(v, &vi);
	if (off < 0 || pos >= vi.size) {
		vol_put(n);
		fuse_reply_err(req, ENXIO);
		return;
	}
	while (pos < vi.size) {
		int data = sdfs_vol_chunk_owner(v, pos / vi.obj_size) != 0;

		if (data == (whence == SEEK_DATA))
			break;
		pos = (pos / vi.obj_size + 1) * vi.obj_size;
	}
	vol_put(n);
	if (pos >= vi.size && whence == SEEK_DATA)
		fuse_reply_err(req, ENXIO);
	else
		fuse_reply_lseek(req, (off_t)(pos < vi.size ? pos : vi.size));
}
