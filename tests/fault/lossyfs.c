/*
 * lossyfs.c - a test-only FUSE filesystem that loses unsynced data when
 * the power goes out (docs/testing.md "The durability tests").
 *
 *   lossyfs BACKING MOUNTPOINT [fuse options]
 *
 * Everything passes through to the directory BACKING, except file data:
 * what is written to a file (write, truncate, O_TRUNC, fallocate) since
 * its last fsync/fdatasync stays in this process's memory, per inode
 * like a page cache (reads and stat see it), and reaches the backing
 * file only when some handle of that inode is fsynced or fdatasynced.
 * A close does not write it back (POSIX promises nothing there; ext4's
 * auto_da_alloc would, XFS does not). SIGKILL this process and unmount
 * (umount2 MNT_DETACH or fusermount3 -uz): that is the power going out.
 * What was synced is in BACKING, nothing else is.
 *
 * It models data loss, not metadata reordering: create, mkdir, link,
 * rename, unlink and chmod go to BACKING at once, as if every directory
 * were always synced (fsyncdir is a no-op). So a file can survive the
 * power loss with its name but without its data (zero length, or the
 * old contents), which is what ext4 and XFS do to a file created or
 * replaced without an fsync; a lost rename or create is not modelled.
 *
 * The kernel keeps nothing above it that it could lose: every open is
 * direct_io (no page cache), attribute, entry and negative timeouts are
 * 0, no writeback cache. syncfs(2) on a FUSE mount never reaches the
 * daemon (Linux sends FUSE_SYNCFS to virtiofs only), so a syncfs here
 * makes nothing durable, as the contract in docs/consistency.md says
 * of sdfs's own mount.
 *
 * getxattr "user.lossyfs.dirty" on any path: "<inodes> <bytes>", the
 * unsynced inodes and bytes held now (what a power loss would drop).
 *
 * What blockd does to its store (blockd/objstore.c, datadir.c) is what
 * is supported: openat with O_CREAT|O_EXCL, pwrite(v), pread(v),
 * ftruncate, fallocate(PUNCH_HOLE|KEEP_SIZE), linkat, renameat,
 * unlinkat, mkdirat, readdir, fdatasync/fsync of a file through any of
 * its handles, fsync of a directory. Not: mmap, xattrs, locks beyond
 * what the kernel does locally, special files.
 *
 * LOSSYFS_NOSYNC=1 in the environment: fsync and fdatasync answer 0 and
 * keep nothing (a check that a test notices lost data).
 * LOSSYFS_WRITEBACK=N (0-100, default 0): background writeback in
 * random order (st_writeback_one), so that what survives a power loss
 * is any subset of the unsynced pages, not none of them: a file written
 * in several steps without an fsync between them may come back with a
 * later step and without an earlier one. LOSSYFS_SEED seeds the choice.
 *
 * One global mutex; a test's load, not a product's.
 */
#define FUSE_USE_VERSION 314
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define PG 4096u
#define NBUCKETS 4096u
#define DIRTY_XATTR "user.lossyfs.dirty"

/* The unsynced state of one backing inode. */
struct ino_state {
	ino_t ino;
	uint64_t size;          /* the file's size as readers see it */
	uint64_t trunc_min;     /* smallest size truncated to since the
				   last sync (UINT64_MAX: none): backing
				   bytes from here on read as zeros */
	size_t npages;
	unsigned char **pages;  /* dirty pages; zero_page: all zeros */
	struct ino_state *next;
};

static unsigned char zero_page[PG];
static struct ino_state *buckets[NBUCKETS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int root_fd = -1;
static bool nosync;     /* LOSSYFS_NOSYNC=1: fsync keeps nothing */
static unsigned writeback_pct;  /* LOSSYFS_WRITEBACK */
static uint64_t rng_state;

/* "/a/b" -> "a/b" relative to root_fd; "/" -> ".". */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static struct ino_state **slot_of(ino_t ino)
{
	struct ino_state **p = &buckets[(ino * 0x9e3779b97f4a7c15ull) >> 52];

	while (*p && (*p)->ino != ino)
		p = &(*p)->next;
	return p;
}

static void state_free(struct ino_state *st)
{
	for (size_t i = 0; i < st->npages; i++)
		if (st->pages[i] != zero_page)
			free(st->pages[i]);
	free(st->pages);
	free(st);
}

/* Forget @ino's state (a new inode got its number); mu held. */
static void state_drop(ino_t ino)
{
	struct ino_state **p = slot_of(ino), *st = *p;

	if (st) {
		*p = st->next;
		state_free(st);
	}
}

/* @fd's state, made (clean, at the backing size) if absent; mu held. */
static struct ino_state *state_get(int fd, bool make, int *err)
{
	struct stat sb;
	struct ino_state **p, *st;

	if (fstat(fd, &sb) < 0) {
		*err = -errno;
		return NULL;
	}
	p = slot_of(sb.st_ino);
	if (*p || !make)
		return *p;
	st = calloc(1, sizeof(*st));
	if (!st) {
		*err = -ENOMEM;
		return NULL;
	}
	st->ino = sb.st_ino;
	st->size = (uint64_t)sb.st_size;
	st->trunc_min = UINT64_MAX;
	*p = st;
	return st;
}

static int pages_reserve(struct ino_state *st, size_t idx)
{
	size_t n = st->npages ? st->npages : 16;
	unsigned char **np;

	if (idx < st->npages)
		return 0;
	while (n <= idx)
		n *= 2;
	np = realloc(st->pages, n * sizeof(*np));
	if (!np)
		return -ENOMEM;
	memset(np + st->npages, 0, (n - st->npages) * sizeof(*np));
	st->pages = np;
	st->npages = n;
	return 0;
}

/* Page @idx as readers see it, into @buf. */
static int page_read(struct ino_state *st, int fd, uint64_t idx,
		     unsigned char *buf)
{
	uint64_t off = idx * PG;
	size_t done = 0;

	if (idx < st->npages && st->pages[idx]) {
		memcpy(buf, st->pages[idx], PG);
		return 0;
	}
	/* A truncate materialised the page it cut inside (page_own), so a
	 * clean page is either wholly below trunc_min or wholly gone. */
	while (off < st->trunc_min && done < PG) {
		ssize_t n = pread(fd, buf + done, PG - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	memset(buf + done, 0, PG - done);
	return 0;
}

/* Make page @idx dirty and return it (loaded unless @whole). */
static unsigned char *page_own(struct ino_state *st, int fd, uint64_t idx,
			       bool whole, int *err)
{
	unsigned char *p;

	*err = pages_reserve(st, idx);
	if (*err)
		return NULL;
	p = st->pages[idx];
	if (p && p != zero_page)
		return p;
	p = malloc(PG);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	if (st->pages[idx] == zero_page || whole)
		memset(p, 0, PG);
	else if ((*err = page_read(st, fd, idx, p)) < 0) {
		free(p);
		return NULL;
	}
	st->pages[idx] = p;
	return p;
}

static int st_write(struct ino_state *st, int fd, const char *buf,
		    size_t len, uint64_t off)
{
	uint64_t end = off + len;

	for (uint64_t o = off; o < end;) {
		uint64_t idx = o / PG, in = o % PG;
		size_t n = (size_t)(PG - in < end - o ? PG - in : end - o);
		int err;
		unsigned char *p = page_own(st, fd, idx, n == PG, &err);

		if (!p)
			return err;
		memcpy(p + in, buf + (o - off), n);
		o += n;
	}
	if (end > st->size)
		st->size = end;
	return 0;
}

static int st_truncate(struct ino_state *st, int fd, uint64_t size)
{
	uint64_t keep = (size + PG - 1) / PG;   /* pages kept */
	int err = 0;

	for (size_t i = keep; i < st->npages; i++) {
		if (st->pages[i] && st->pages[i] != zero_page)
			free(st->pages[i]);
		st->pages[i] = NULL;
	}
	if (size % PG) {
		unsigned char *p = page_own(st, fd, size / PG, false, &err);

		if (!p)
			return err;
		memset(p + size % PG, 0, PG - size % PG);
	}
	if (size < st->trunc_min)
		st->trunc_min = size;
	st->size = size;
	return 0;
}

/* Zero [off, off + len) below the size (fallocate PUNCH_HOLE|KEEP_SIZE). */
static int st_punch(struct ino_state *st, int fd, uint64_t off, uint64_t len)
{
	uint64_t end = off + len < st->size ? off + len : st->size;

	for (uint64_t o = off; o < end;) {
		uint64_t idx = o / PG, in = o % PG;
		size_t n = (size_t)(PG - in < end - o ? PG - in : end - o);
		int err;

		if (n == PG) {
			err = pages_reserve(st, idx);
			if (err)
				return err;
			if (st->pages[idx] != zero_page)
				free(st->pages[idx]);
			st->pages[idx] = zero_page;
		} else {
			unsigned char *p = page_own(st, fd, idx, false, &err);

			if (!p)
				return err;
			memset(p + in, 0, n);
		}
		o += n;
	}
	return 0;
}

static int pwrite_all(int fd, const unsigned char *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* The power stays on: write @st to the backing file through @fd (which
 * must be writable) and forget it. The backing directory is the disk
 * here, so no fdatasync of it: only this process can lose data. */
static int st_sync(struct ino_state *st, int fd)
{
	int err;

	if (st->trunc_min != UINT64_MAX &&
	    ftruncate(fd, (off_t)st->trunc_min) < 0)
		return -errno;
	for (size_t i = 0; i < st->npages; i++) {
		if (!st->pages[i])
			continue;
		if (st->pages[i] == zero_page) {
			if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)(i * PG), PG) == 0)
				continue;
		}
		err = pwrite_all(fd, st->pages[i], PG, (off_t)(i * PG));
		if (err)
			return err;
	}
	if (ftruncate(fd, (off_t)st->size) < 0)
		return -errno;
	state_drop(st->ino);
	return 0;
}

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * The kernel's background writeback, in no particular order: with
 * LOSSYFS_WRITEBACK=N, after a write, N% of the time one random dirty
 * page of the file goes to the backing file (and is clean after). Not
 * while a truncate is pending (it would have to go first). A power loss
 * then keeps any subset of a file's unsynced pages, as a real disk may.
 */
static void st_writeback_one(struct ino_state *st, int fd)
{
	size_t n = 0, want;
	uint64_t end;

	if (!writeback_pct || rnd() % 100 >= writeback_pct ||
	    st->trunc_min != UINT64_MAX)
		return;
	for (size_t i = 0; i < st->npages; i++)
		n += st->pages[i] != NULL;
	if (!n)
		return;
	want = rnd() % n;
	for (size_t i = 0; i < st->npages; i++) {
		if (!st->pages[i] || want--)
			continue;
		if ((uint64_t)i * PG >= st->size)
			return;
		end = (uint64_t)(i + 1) * PG < st->size ? (uint64_t)(i + 1) * PG
							: st->size;
		if (st->pages[i] == zero_page) {
			if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)(i * PG), PG) < 0)
				return;
		} else if (pwrite_all(fd, st->pages[i], (size_t)(end - i * PG),
				      (off_t)(i * PG)) < 0) {
			return;
		}
		if (st->pages[i] != zero_page)
			free(st->pages[i]);
		st->pages[i] = NULL;
		return;
	}
}

static int h_fd(struct fuse_file_info *fi)
{
	return (int)fi->fh;
}

/* ---- operations ---- */

static void *lfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	cfg->use_ino = 1;
	cfg->readdir_ino = 1;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->hard_remove = 1;   /* unlink open files for real, no .fuse_hidden */
	cfg->nullpath_ok = 1;
	return NULL;
}

static int lfs_getattr(const char *path, struct stat *sb,
		       struct fuse_file_info *fi)
{
	int ret = fi ? fstat(h_fd(fi), sb)
		     : fstatat(root_fd, rel(path), sb, AT_SYMLINK_NOFOLLOW);

	if (ret < 0)
		return -errno;
	if (S_ISREG(sb->st_mode)) {
		pthread_mutex_lock(&mu);
		struct ino_state *st = *slot_of(sb->st_ino);

		if (st)
			sb->st_size = (off_t)st->size;
		pthread_mutex_unlock(&mu);
	}
	return 0;
}

static int lfs_open_common(const char *path, int flags, mode_t mode,
			   bool create, struct fuse_file_info *fi)
{
	int bflags = flags & ~(O_TRUNC | O_APPEND | O_ACCMODE | O_NOFOLLOW);
	int fd, err = 0;

	/* Writable always: a read-only handle may be the one fsynced. */
	fd = openat(root_fd, rel(path), bflags | O_RDWR | O_CLOEXEC, mode);
	if (fd < 0 && (errno == EACCES || errno == EISDIR || errno == EPERM))
		fd = openat(root_fd, rel(path), (flags & ~(O_TRUNC | O_APPEND)) |
			    O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&mu);
	if (create && (flags & O_EXCL)) {
		struct stat sb;

		/* A new inode may reuse a dead one's number. */
		if (fstat(fd, &sb) == 0)
			state_drop(sb.st_ino);
	}
	if (flags & O_TRUNC) {
		struct ino_state *st = state_get(fd, true, &err);

		if (st)
			err = st_truncate(st, fd, 0);
	}
	pthread_mutex_unlock(&mu);
	if (err) {
		close(fd);
		return err;
	}
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	return 0;
}

static int lfs_open(const char *path, struct fuse_file_info *fi)
{
	return lfs_open_common(path, fi->flags, 0, false, fi);
}

static int lfs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return lfs_open_common(path, fi->flags | O_CREAT, mode, true, fi);
}

static int lfs_read(const char *path, char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	int fd = h_fd(fi), err = 0;
	struct ino_state *st;
	ssize_t ret;

	(void)path;
	pthread_mutex_lock(&mu);
	st = state_get(fd, false, &err);
	if (!st) {
		pthread_mutex_unlock(&mu);
		if (err)
			return err;
		ret = pread(fd, buf, len, off);
		return ret < 0 ? -errno : (int)ret;
	}
	uint64_t end = (uint64_t)off + len;

	if (end > st->size)
		end = st->size;
	for (uint64_t o = (uint64_t)off; o < end;) {
		unsigned char page[PG];
		uint64_t in = o % PG;
		size_t n = (size_t)(PG - in < end - o ? PG - in : end - o);

		err = page_read(st, fd, o / PG, page);
		if (err)
			break;
		memcpy(buf + (o - (uint64_t)off), page + in, n);
		o += n;
	}
	pthread_mutex_unlock(&mu);
	if (err)
		return err;
	return end > (uint64_t)off ? (int)(end - (uint64_t)off) : 0;
}

static int lfs_write(const char *path, const char *buf, size_t len, off_t off,
		     struct fuse_file_info *fi)
{
	int fd = h_fd(fi), err = 0;
	struct ino_state *st;

	(void)path;
	pthread_mutex_lock(&mu);
	st = state_get(fd, true, &err);
	if (st)
		err = st_write(st, fd, buf, len, (uint64_t)off);
	if (!err)
		st_writeback_one(st, fd);
	pthread_mutex_unlock(&mu);
	return err ? err : (int)len;
}

static int lfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd = fi ? h_fd(fi) : openat(root_fd, rel(path), O_RDWR | O_CLOEXEC);
	int err = 0;
	struct ino_state *st;

	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&mu);
	st = state_get(fd, true, &err);
	if (st)
		err = st_truncate(st, fd, (uint64_t)size);
	pthread_mutex_unlock(&mu);
	if (!fi)
		close(fd);
	return err;
}

static int lfs_fallocate(const char *path, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	int fd = h_fd(fi), err = 0;
	struct ino_state *st;

	(void)path;
	if (mode != (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) && mode != 0)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&mu);
	st = state_get(fd, true, &err);
	if (st && mode == 0 && (uint64_t)(off + len) > st->size)
		st->size = (uint64_t)(off + len);       /* zeros up to there */
	else if (st && mode != 0)
		err = st_punch(st, fd, (uint64_t)off, (uint64_t)len);
	pthread_mutex_unlock(&mu);
	return err;
}

static int lfs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	int fd = h_fd(fi), err = 0;
	struct ino_state *st;

	(void)path;
	(void)datasync;
	if (nosync)
		return 0;
	pthread_mutex_lock(&mu);
	st = state_get(fd, false, &err);
	if (st)
		err = st_sync(st, fd);
	pthread_mutex_unlock(&mu);
	return err;
}

static int lfs_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return 0;       /* a close makes nothing durable */
}

static int lfs_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close(h_fd(fi));
	return 0;
}

static int lfs_opendir(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(root_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static int lfs_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		       off_t off, struct fuse_file_info *fi,
		       enum fuse_readdir_flags flags)
{
	DIR *d = (DIR *)(uintptr_t)fi->fh;
	struct dirent *de;

	(void)path;
	(void)off;
	(void)flags;
	rewinddir(d);
	while ((errno = 0, de = readdir(d))) {
		struct stat sb = { .st_ino = de->d_ino,
				   .st_mode = (mode_t)DTTOIF(de->d_type) };

		if (fill(buf, de->d_name, &sb, 0, 0))
			break;
	}
	return errno ? -errno : 0;
}

static int lfs_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	closedir((DIR *)(uintptr_t)fi->fh);
	return 0;
}

static int lfs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	(void)fi;
	return 0;       /* names are always durable here (see the top) */
}

static int lfs_mkdir(const char *path, mode_t mode)
{
	return mkdirat(root_fd, rel(path), mode) < 0 ? -errno : 0;
}

static int lfs_rmdir(const char *path)
{
	return unlinkat(root_fd, rel(path), AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int lfs_unlink(const char *path)
{
	return unlinkat(root_fd, rel(path), 0) < 0 ? -errno : 0;
}

static int lfs_link(const char *from, const char *to)
{
	return linkat(root_fd, rel(from), root_fd, rel(to), 0) < 0 ? -errno : 0;
}

static int lfs_rename(const char *from, const char *to, unsigned int flags)
{
	return renameat2(root_fd, rel(from), root_fd, rel(to), flags) < 0
		? -errno : 0;
}

static int lfs_symlink(const char *target, const char *path)
{
	return symlinkat(target, root_fd, rel(path)) < 0 ? -errno : 0;
}

static int lfs_readlink(const char *path, char *buf, size_t len)
{
	ssize_t n = readlinkat(root_fd, rel(path), buf, len - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int lfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int ret = fi ? fchmod(h_fd(fi), mode)
		     : fchmodat(root_fd, rel(path), mode, 0);

	return ret < 0 ? -errno : 0;
}

static int lfs_chown(const char *path, uid_t uid, gid_t gid,
		     struct fuse_file_info *fi)
{
	int ret = fi ? fchown(h_fd(fi), uid, gid)
		     : fchownat(root_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);

	return ret < 0 ? -errno : 0;
}

static int lfs_utimens(const char *path, const struct timespec tv[2],
		       struct fuse_file_info *fi)
{
	int ret = fi ? futimens(h_fd(fi), tv)
		     : utimensat(root_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW);

	return ret < 0 ? -errno : 0;
}

static int lfs_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	return fstatvfs(root_fd, sv) < 0 ? -errno : 0;
}

static int lfs_access(const char *path, int mask)
{
	return faccessat(root_fd, rel(path), mask, 0) < 0 ? -errno : 0;
}

static int lfs_getxattr(const char *path, const char *name, char *val,
			size_t len)
{
	char text[64];
	uint64_t inodes = 0, bytes = 0;
	int n;

	(void)path;
	if (strcmp(name, DIRTY_XATTR) != 0)
		return -ENODATA;
	pthread_mutex_lock(&mu);
	for (size_t b = 0; b < NBUCKETS; b++) {
		for (struct ino_state *st = buckets[b]; st; st = st->next) {
			inodes++;
			for (size_t i = 0; i < st->npages; i++)
				bytes += st->pages[i] ? PG : 0;
		}
	}
	pthread_mutex_unlock(&mu);
	n = snprintf(text, sizeof(text), "%" PRIu64 " %" PRIu64, inodes, bytes);
	if (len == 0)
		return n;
	if ((size_t)n > len)
		return -ERANGE;
	memcpy(val, text, (size_t)n);
	return n;
}

static const struct fuse_operations lfs_ops = {
	.init = lfs_init,
	.getattr = lfs_getattr,
	.open = lfs_open,
	.create = lfs_create,
	.read = lfs_read,
	.write = lfs_write,
	.truncate = lfs_truncate,
	.fallocate = lfs_fallocate,
	.fsync = lfs_fsync,
	.flush = lfs_flush,
	.release = lfs_release,
	.opendir = lfs_opendir,
	.readdir = lfs_readdir,
	.releasedir = lfs_releasedir,
	.fsyncdir = lfs_fsyncdir,
	.mkdir = lfs_mkdir,
	.rmdir = lfs_rmdir,
	.unlink = lfs_unlink,
	.link = lfs_link,
	.rename = lfs_rename,
	.symlink = lfs_symlink,
	.readlink = lfs_readlink,
	.chmod = lfs_chmod,
	.chown = lfs_chown,
	.utimens = lfs_utimens,
	.statfs = lfs_statfs,
	.access = lfs_access,
	.getxattr = lfs_getxattr,
};

int main(int argc, char **argv)
{
	char *fargv[64];
	int fargc = 0;

	if (argc < 3 || argc > 60) {
		fprintf(stderr, "usage: lossyfs BACKING MOUNTPOINT [fuse options]\n");
		return 2;
	}
	root_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		fprintf(stderr, "lossyfs: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	nosync = getenv("LOSSYFS_NOSYNC") && !strcmp(getenv("LOSSYFS_NOSYNC"), "1");
	if (getenv("LOSSYFS_WRITEBACK"))
		writeback_pct = (unsigned)atoi(getenv("LOSSYFS_WRITEBACK"));
	rng_state = getenv("LOSSYFS_SEED") ? strtoull(getenv("LOSSYFS_SEED"), NULL, 0)
					   : (uint64_t)getpid() * 0x2545f4914f6cdd1dull;
	/* A test that dies without stopping us: unmount cleanly. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	fargv[fargc++] = argv[0];
	fargv[fargc++] = argv[2];
	fargv[fargc++] = "-f";
	fargv[fargc++] = "-o";
	fargv[fargc++] = "fsname=lossyfs,subtype=lossyfs";
	for (int i = 3; i < argc; i++)
		fargv[fargc++] = argv[i];
	fargv[fargc] = NULL;
	return fuse_main(fargc, fargv, &lfs_ops, NULL);
}
