/*
 * ops_lock.c - getlk, setlk, flock: cluster-wide locks served by the
 * mds (libsdfs sdfs_lock_*, docs/locks.md), and their release at close.
 *
 * The kernel hands every POSIX, OFD and flock request of this mount to
 * us (FUSE_CAP_POSIX_LOCKS, FUSE_CAP_FLOCK_LOCKS: libfuse turns them on
 * because these ops exist) and keeps no lock of its own, so it never
 * unlocks at close either: flush drops the POSIX locks of its
 * lock_owner (every close(2)); release (once the open file's last
 * descriptor went) drops its flock lock (fi->flock_release) and the
 * OFD locks taken through it, which the kernel does not name: lockown.c
 * remembers which owners locked through which open file.
 * A blocking request (sleep, or flock without LOCK_NB) keeps its loop
 * thread while it retries, and ends with EINTR when the kernel
 * interrupts it (a signal to the waiting process).
 * Only inodes this mount ever locked cost a request at close: a set of
 * their numbers (it only grows; one entry per file ever locked here).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "common/log.h"
#include "fs/fs.h"

static pthread_mutex_t used_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *used;                  /* open addressing, 0 = empty */
static size_t used_cap, used_n;

static size_t used_slot(uint64_t ino, size_t cap)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static void used_add(uint64_t ino)
{
	pthread_mutex_lock(&used_lock);
	if ((used_n + 1) * 2 > used_cap) {
		size_t cap = used_cap ? used_cap * 2 : 64;
		uint64_t *t = calloc(cap, sizeof(*t));

		if (!t)
			goto out;       /* then a close may skip a release: logged */
		for (size_t i = 0; i < used_cap; i++)
			if (used[i])
				for (size_t j = used_slot(used[i], cap);; j = (j + 1) & (cap - 1))
					if (!t[j]) {
						t[j] = used[i];
						break;
					}
		free(used);
		used = t;
		used_cap = cap;
	}
	for (size_t j = used_slot(ino, used_cap);; j = (j + 1) & (used_cap - 1)) {
		if (used[j] == ino)
			break;
		if (!used[j]) {
			used[j] = ino;
			used_n++;
			break;
		}
	}
out:
	if (!used_cap)
		log_err("ino=%llu: out of memory; its locks may outlive close",
			(unsigned long long)ino);
	pthread_mutex_unlock(&used_lock);
}

static int used_has(uint64_t ino)
{
	int found = 0;

	pthread_mutex_lock(&used_lock);
	if (used_cap)
		for (size_t j = used_slot(ino, used_cap); used[j]; j = (j + 1) & (used_cap - 1))
			if (used[j] == ino) {
				found = 1;
				break;
			}
	pthread_mutex_unlock(&used_lock);
	return found;
}

/* Snapshot files and .snap directories (snapdir_is_virtual) are not
 * inodes at the mds and never change: their locks are granted here
 * without asking anyone (qemu-img locks the images it opens, snapshots
 * too), and F_GETLK finds none. */
static int is_virtual(fuse_ino_t ino)
{
	return snapdir_is_virtual((uint64_t)ino);
}

static int interrupted(void *arg)
{
	return fuse_req_interrupted((fuse_req_t)arg);
}

/* A lock was granted: what this mount caches of the file (pages and
 * attributes) may predate the last holder's writes, so drop it, as an
 * NFS client does when it locks. SQLite and other lock-then-read
 * programs then see the other mount's writes. Safe from this handler:
 * the locking process holds no page or inode lock while it waits. */
static void granted(fuse_ino_t ino)
{
	int ret = fuse_lowlevel_notify_inval_inode(the_fs->se, ino, 0, 0);

	if (ret && ret != -ENOENT)
		log_debug("ino=%llu: invalidating the cache after a lock: %s",
			  (unsigned long long)ino, strerror(-ret));
}

/* struct flock (SEEK_SET, as libfuse passes it) -> sdfs_lock. */
static int from_flock(const struct flock *fl, uint64_t owner, struct sdfs_lock *l)
{
	l->kind = SDFS_LK_POSIX;
	l->owner = owner;
	l->pid = fl->l_pid > 0 ? (uint32_t)fl->l_pid : 0;
	switch (fl->l_type) {
	case F_RDLCK: l->type = SDFS_LK_RD; break;
	case F_WRLCK: l->type = SDFS_LK_WR; break;
	case F_UNLCK: l->type = SDFS_LK_UN; break;
	default: return -EINVAL;
	}
	if (fl->l_start < 0 || fl->l_len < 0)
		return -EINVAL;
	l->start = (uint64_t)fl->l_start;
	l->end = fl->l_len == 0 ? SDFS_LK_EOF : l->start + (uint64_t)fl->l_len - 1;
	return 0;
}

void fs_op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock)
{
	fs_caller(req);
	struct sdfs_lock l;
	int ret = from_flock(lock, fi->lock_owner, &l);

	if (!ret && is_virtual(ino))
		l.type = SDFS_LK_UN;
	else if (!ret)
		ret = sdfs_lock_get(the_fs->s, ino, &l);
	if (ret) {
		fs_reply_err(req, ret);
		return;
	}
	if (l.type == SDFS_LK_UN) {
		lock->l_type = F_UNLCK;
	} else {
		lock->l_type = l.type == SDFS_LK_WR ? F_WRLCK : F_RDLCK;
		lock->l_whence = SEEK_SET;
		lock->l_start = (off_t)l.start;
		lock->l_len = l.end == SDFS_LK_EOF ? 0 : (off_t)(l.end - l.start + 1);
		lock->l_pid = (pid_t)l.pid;
	}
	fuse_reply_lock(req, lock);
}

void fs_op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock, int sleep)
{
	fs_caller(req);
	struct sdfs_lock l;
	int ret = from_flock(lock, fi->lock_owner, &l);

	if (!ret && is_virtual(ino)) {
		fuse_reply_err(req, 0);
		return;
	}
	if (!ret && l.type != SDFS_LK_UN) {
		used_add(ino);
		if (lockown_add(ino, fi->fh, l.owner))
			ret = -ENOLCK;  /* could not be released at close */
	}
	if (!ret) {
		ret = sleep ? sdfs_lock_wait(the_fs->s, ino, &l, interrupted, req) :
			      sdfs_lock_set(the_fs->s, ino, &l);
		/* refused while a release here is dropping locks of the
		 * file (a process that just exited): ask again after it */
		if (ret == -EAGAIN && lockown_wait_release(ino))
			ret = sdfs_lock_set(the_fs->s, ino, &l);
		if (!ret && l.type != SDFS_LK_UN)
			granted(ino);
	}
	if (ret)
		fs_reply_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

void fs_op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	fs_caller(req);
	struct sdfs_lock l = { .kind = SDFS_LK_FLOCK, .owner = fi->lock_owner,
			       .end = SDFS_LK_EOF };
	int ret;

	if (is_virtual(ino)) {
		fuse_reply_err(req, 0);
		return;
	}
	switch (op & ~LOCK_NB) {
	case LOCK_SH: l.type = SDFS_LK_RD; break;
	case LOCK_EX: l.type = SDFS_LK_WR; break;
	case LOCK_UN: l.type = SDFS_LK_UN; break;
	default:
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (l.type == SDFS_LK_UN) {
		ret = sdfs_lock_unlock(the_fs->s, ino, &l);
	} else {
		used_add(ino);
		ret = (op & LOCK_NB) ? sdfs_lock_set(the_fs->s, ino, &l) :
		      sdfs_lock_wait(the_fs->s, ino, &l, interrupted, req);
		if (ret == -EAGAIN && lockown_wait_release(ino))
			ret = sdfs_lock_set(the_fs->s, ino, &l);
		if (!ret)
			granted(ino);
	}
	if (ret)
		fs_reply_err(req, ret);
	else
		fuse_reply_err(req, 0);
}

static void (*next_flush)(fuse_req_t, fuse_ino_t, struct fuse_file_info *);
static void (*next_release)(fuse_req_t, fuse_ino_t, struct fuse_file_info *);

static void lock_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (used_has(ino)) {
		int ret = sdfs_lock_release(the_fs->s, ino, SDFS_LK_POSIX, fi->lock_owner);

		if (ret)
			log_warn("ino=%llu: releasing POSIX locks at close: %s",
				 (unsigned long long)ino, strerror(-ret));
		lockown_flushed(ino, fi->fh, fi->lock_owner);
	}
	next_flush(req, ino, fi);
}

static void drop(uint64_t ino, int flock, uint64_t owner)
{
	int ret = sdfs_lock_release(the_fs->s, ino, flock ? SDFS_LK_FLOCK : SDFS_LK_POSIX,
				    owner);

	if (ret)
		log_warn("ino=%llu: releasing %s at close: %s", (unsigned long long)ino,
			 flock ? "a flock lock" : "OFD locks", strerror(-ret));
}

static void lock_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!is_virtual(ino) && used_has(ino)) {
		uint64_t flock_owner = fi->lock_owner;
		int n = lockown_release(ino, fi->fh, fi->flock_release ? &flock_owner : NULL,
					drop);

		if (n)
			log_debug("ino=%llu: the OFD locks of %d owner(s) released at close",
				  (unsigned long long)ino, n);
	}
	next_release(req, ino, fi);
}

void fs_lock_ops(struct fuse_lowlevel_ops *ops)
{
	next_flush = ops->flush;
	next_release = ops->release;
	ops->flush = lock_flush;
	ops->release = lock_release;
	ops->getlk = fs_op_getlk;
	ops->setlk = fs_op_setlk;
	ops->flock = fs_op_flock;
}
