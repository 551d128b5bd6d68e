/*
 * fs.h - mount.sdfs: what its files share.
 *
 *   main.c      options, mounting, the session loop
 *   inode.c     the client's table of inodes the kernel knows
 *   ops_node.c  lookup, attributes, names, links, xattrs, statfs
 *   ops_file.c  open, read, write, flush, fsync, fallocate, lseek, copy
 *   ops_dir.c   opendir, readdir(plus), releasedir, fsyncdir
 *   volfile.c   volume files: their opens, I/O, truncate, punch, seek
 *   snapdir.c   DIR/.snap/FILE@SNAP: snapshots as read-only files
 *   ops_lock.c  getlk, setlk, flock (served by the mds), unlock at close
 *   lockown.c   which lock owners locked through which open file
 *   inval.c     invalidations pushed by the mds, applied to the kernel
 *   dnames.c    all the names of directories leased to us: lookup misses
 *   space.c     the chunks written or punched here, told to the mds
 *   side.c      a call run on another thread beside the caller's
 *
 * FUSE node ids are the persistent sdfs inode numbers (the root is 1 on
 * both sides), generations the low 32 bits of the inode's gen. The mds
 * keeps size and times; file data goes from here straight to blockd.
 * A write that extends a file makes its size "pending" here until the
 * next flush (close), fsync or getattr pushes it to the mds.
 */
#ifndef SDFS_FS_FS_H
#define SDFS_FS_FS_H
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdint.h>

#include "libclient/sdfs.h"

struct fs_opts {
	double attr_timeout;            /* s, default 1.0 */
	double entry_timeout;           /* s, default 1.0 */
	unsigned readahead_kb;          /* the bdi's read_ahead_kb; default 1024 */
	unsigned threads;               /* max loop threads; default 64 */
	int timeout_ms;                 /* libsdfs calls; EIO after; default 10000 */
	int noatime;                    /* -o noatime: reads never move atime */
	int noacl;                      /* -o noacl: no POSIX ACLs (docs/acl.md) */
	unsigned times_ms;              /* mtime write-back after an fsync that
					   changed no size (timesback.c); 0:
					   fsync pushes it durably; default 1000 */
};

struct fs {
	struct sdfs *s;
	struct fs_opts o;
	struct fuse_session *se;
	pthread_mutex_t lock;           /* the inode table */
	struct fnode **tab;
	size_t tab_size, count;
	size_t open_nodes;              /* fnodes with opens > 0 (under lock) */
};

struct space_known;
/* Chunk indices, SDFS_CHUNK_GONE set for a removed one (space.c). */
struct space_list {
	uint64_t *e;
	size_t n, cap;
};

/* What this client knows of an inode the kernel holds (inode.c). */
struct fnode {
	uint64_t ino;
	uint64_t nlookup;               /* the kernel's references */
	int opens;
	pthread_mutex_t lock;           /* the fields below */
	struct sdfs_stat st;            /* last from the mds */
	uint64_t attr_ver;              /* bumped whenever st is replaced: a
					   reply to a request sent before a newer
					   one was applied is not applied */
	uint64_t pending_size;          /* written here past st.size; 0: none */
	int mtime_dirty;                /* written since the last push */
	uint64_t *dirty;                /* chunks written since the last fsync */
	size_t ndirty, cap_dirty;
	int sync_lost;                  /* a dirty chunk was not recorded (ENOMEM) */
	struct space_list made;         /* chunks made or punched here since
					   the last push (space.c) */
	struct space_known *known;      /* chunks the mds was told of (space.c) */
	int64_t nocaps_until;           /* monotonic ns: "no security.capability"
					   known until then (the kernel asks on
					   every write) */
	int atime_busy;                 /* a relatime update is claimed or in
					   flight: setattr waits for it... */
	pthread_cond_t atime_done;
	int64_t atime_claim_ns;         /* ...getattr shows this atime meanwhile */
	int64_t wrote_ns;               /* time of the last write here (mtime
					   shown until pushed) */
	int64_t leased_until;           /* monotonic ns: until then st is what the
					   mds would answer (it holds a lease for
					   us; inval.c clears this before any
					   change to the inode is acknowledged) */
	int64_t open_mtime;             /* mtime/size at the last open: keep_cache */
	uint64_t open_size;
	/* A volume file (volfile.c): one writer handle shared by the opens
	 * for writing here, one reader handle for the others. */
	pthread_rwlock_t vol_rw;        /* I/O shared; opening/closing exclusive */
	struct sdfs_vol *vol_rd, *vol_wr;
	int vol_opens, vol_writers;
	struct dnames *names;           /* a directory's names, all (dnames.c) */
	int times_queued;               /* an mtime push is queued (timesback.c) */
	int pins;                       /* held by this process's own work
					   (fnode_pin; under fs->lock) */
	struct fnode *next;
};

/* An open file (fi->fh of a regular or snapshot file, ops_file.c,
 * snapdir.c): one per open file description, freed at its release, so
 * that fi->fh tells the open files of one inode apart (lockown.c). */
struct ofile {
	struct fnode *n;                /* shared by every open of the inode */
};

extern struct fs *the_fs;

/* inode.c */
int fnode_table_init(struct fs *fs);
/* The node for @ino with one more reference of @nlookup (0: just find
 * or make it, e.g. for an open). NULL on ENOMEM. */
struct fnode *fnode_get(struct fs *fs, uint64_t ino, uint64_t nlookup);
/* Drop @n kernel references; the node goes when none and not open. */
void fnode_forget(struct fs *fs, uint64_t ino, uint64_t n);
/* Find without creating (NULL if the kernel holds none). */
struct fnode *fnode_find(struct fs *fs, uint64_t ino);
struct fnode *fnode_find_locked(struct fs *fs, uint64_t ino);   /* fs->lock held */
/* One open / one close. The first open and the last close tell the mds
 * (sdfs_ns_hold/release): a file whose last name goes while it is open
 * on any mount stays, with its data, until its last close everywhere. */
void fnode_open(struct fs *fs, struct fnode *n);
void fnode_close(struct fs *fs, struct fnode *n);
/* Keep @n (held by the caller: an open, a lookup) until the unpin, past
 * the kernel's forget and the last close. */
void fnode_pin(struct fs *fs, struct fnode *n);
void fnode_unpin(struct fs *fs, struct fnode *n);
/* Record @st from the mds, merging a pending size/mtime; fills @out
 * with what the kernel should see. set_stat applies it always (the
 * reply of a change made here); set_stat_v only if nothing replaced
 * n->st since @ver (fnode_ver before the request was sent). A reply
 * marked SDFS_STAT_LEASED also sets leased_until (inval_lease_end). */
void fnode_set_stat(struct fnode *n, const struct sdfs_stat *st, struct sdfs_stat *out);
void fnode_set_stat_v(struct fnode *n, const struct sdfs_stat *st, uint64_t ver,
		      struct sdfs_stat *out);
uint64_t fnode_ver(struct fnode *n);
/* sdfs_ns_on_attrs (registered by inval_start): @st of another inode a
 * change made here wrote, as it is after the change: taken (with its
 * lease) if the kernel holds the inode and @st is not older than what
 * the node has (ctime: replies of two changes may cross). */
void fnode_set_stat_newer(struct fs *fs, const struct sdfs_stat *st);
/* How many fnode_set_stat_newer calls this thread made (a change whose
 * reply brought no attributes: an older mds, or nothing was changed). */
uint64_t fnode_newer_count(void);
/* A directory's n->st while a lease covers it: 1, *@left_s the lease's
 * remaining seconds (fs_op_getattr answers the kernel from it: after a
 * change in a directory the kernel drops its attributes and asks again,
 * default_permissions needs them); else 0. */
int fnode_leased_dir(struct fnode *n, struct sdfs_stat *st, double *left_s);
/* n->st, if a lease still covers it (without SDFS_STAT_LEASED): 1;
 * else 0 and the caller asks the mds. */
int fnode_leased_stat(struct fnode *n, struct sdfs_stat *st);
/* The mds is about to acknowledge a change to @ino (or, for all, this
 * mount resubscribed): forget that st is leased. fs->lock not held. */
void fnode_unlease(struct fs *fs, uint64_t ino);
/* The same when only @ino's atime moved (another mount's read): the
 * chunks the mds was told of stay known (fs/space.c). */
void fnode_unlease_atime(struct fs *fs, uint64_t ino);
void fnode_unlease_all(struct fs *fs);
/* Wait until no relatime atime update of @n is in flight (setattr: an
 * explicit time must not lose to it). */
void fnode_wait_atime(struct fnode *n);
/* Note a write of [off, off+len): pending size, dirty chunk. */
void fnode_wrote(struct fnode *n, uint64_t off, uint64_t len);
/* Push a pending size and mtime to the mds (flush, fsync, before a
 * truncate). 0 or -errno. */
int fnode_push(struct fs *fs, struct fnode *n);
/* ... without the mtime unless @with_mtime; @durable: the push returns
 * once it and every earlier change of this mount is durable
 * (SDFS_SETATTR_DURABLE); nothing to push makes nothing durable. */
int fnode_push_ex(struct fs *fs, struct fnode *n, int with_mtime, int durable);
/* fsync: flush the dirty chunks on every replica, then push durably
 * (the size only, with @datasync). A push of the mtime alone (the size
 * and chunks known to the mds) is left to the write-back instead, when
 * fs->o.times_ms is set. */
int fnode_sync(struct fs *fs, struct fnode *n, int datasync);
/* O_SYNC / O_DSYNC write: push durably what the mds must know to read
 * the data back (size, chunks); the mtime (@with_mtime, O_SYNC) as
 * fnode_sync does. */
int fnode_sync_write(struct fs *fs, struct fnode *n, int with_mtime);

/*
 * timesback.c: push @n's mtime fs->o.times_ms from now (one ordinary
 * SETATTR as the calling thread's caller; a node queued already is not
 * queued again). 0, or -errno when it cannot be queued (then push it
 * now). stop: at unmount, push what is queued and end the thread.
 */
int timesback_defer(struct fs *fs, struct fnode *n);
void timesback_stop(void);

/*
 * space.c. note: chunk @chunk of @n was written here (or, @gone, its
 * object removed); overlay: add what is noted to @out's blocks (as an
 * upper bound: a written chunk may have had data), both with n->lock
 * held. push: setattr @sa with what is noted (in order; kept for the
 * next push on failure), the mds's answer in @st; 1 if there was
 * nothing to send, else 0 or -errno. free: at the node's end.
 * A chunk the mds was told of is not noted again when rewritten, until
 * anything may have removed it: a punch or truncate here
 * (space_note(gone)), a smaller size or any other client's change of
 * the file but its atime (space_forget, n->lock held), so that a rewrite within a
 * file (fdatasync, O_DSYNC) asks the mds nothing.
 */
void space_note(struct fnode *n, uint64_t chunk, int gone);
void space_forget(struct fnode *n);
void space_overlay(struct fnode *n, struct sdfs_stat *out);
int space_push(struct fs *fs, struct fnode *n, const struct sdfs_setattr *sa,
	       struct sdfs_stat *st);
void space_free(struct fnode *n);

/*
 * side.c: run @fn(@arg) on a pooled thread while the caller goes on;
 * side_wait returns its result. When no thread is idle the call runs
 * inside side_start. The job lives in the caller's frame until
 * side_wait returned.
 */
struct side_job {
	int (*fn)(void *);
	void *arg;
	int ret;
	int state;                      /* 1 queued or running, 2 done */
	struct side_job *next;
};
void side_start(struct side_job *j, int (*fn)(void *), void *arg);
int side_wait(struct side_job *j);

/* Attributes for the kernel. fs_entry's timeouts are judged against
 * the thread's mark (inval_begin). */
void fs_stat_to_kernel(const struct sdfs_stat *st, struct stat *out);
void fs_entry(const struct sdfs_stat *st, struct fuse_entry_param *e);
/* Reply with an error; libsdfs errors that mean "cannot reach" become EIO. */
void fs_reply_err(fuse_req_t req, int neg_errno);
/* Make the calling thread's namespace calls act as @req's caller
 * (sdfs_set_caller: its uid, gid and groups, the groups cached per
 * process for a second); every op calls it first. */
void fs_caller(fuse_req_t req);
/* Getattr from the mds, merged with what this client has pending. */
int fs_getattr(struct fs *fs, uint64_t ino, struct sdfs_stat *st);

/*
 * dnames.c: every name of a directory, kept while the mds leases us its
 * names (SDFS_STAT_LISTING: from mkdir here, renewed by each change made
 * here in it), so that a lookup of a missing name is answered here.
 * start: @dir was just made here (empty; the thread's mark dates the
 * lease). renew: a change here in @dir brought SDFS_STAT_LISTING. add,
 * del: a change made here added or removed @name (nothing unless the set
 * is kept). drop: forget @dir's set (a failed change there, a pushed
 * invalidation); drop_all: every set (resubscription). absent: 1 if
 * @name is known missing from @dir, *@left_s the seconds that stays
 * known. free: at the node's end (n->lock not needed). Any thread.
 */
void dnames_start(struct fs *fs, uint64_t dir);
void dnames_renew(struct fs *fs, uint64_t dir);
void dnames_add(struct fs *fs, uint64_t dir, const char *name);
void dnames_del(struct fs *fs, uint64_t dir, const char *name);
void dnames_drop(struct fs *fs, uint64_t dir);
void dnames_drop_all(struct fs *fs);
int dnames_absent(struct fs *fs, uint64_t dir, const char *name, double *left_s);
void dnames_free(struct fnode *n);

/* volfile.c: volume files (layout SDFS_LAYOUT_VOLUME). open/release
 * keep the node's volume handles (a write open takes the volume's
 * writer lock: -EBUSY if another mount writes it); the I/O calls reply
 * themselves. */
int volf_open(struct fnode *n, int flags);
void volf_release(struct fnode *n, int flags);
void volf_read(fuse_req_t req, struct fnode *n, size_t size, off_t off);
void volf_write(fuse_req_t req, struct fnode *n, const char *buf, size_t size, off_t off);
void volf_fsync(fuse_req_t req, struct fnode *n);
void volf_fallocate(fuse_req_t req, struct fnode *n, int mode, off_t off, off_t len);
void volf_lseek(fuse_req_t req, struct fnode *n, off_t off, int whence);
/* Truncate (setattr size, O_TRUNC): through a writer handle (this
 * node's, or one opened for the call). */
int volf_resize(struct fnode *n, uint64_t size);
/* For copy_file_range: -errno or bytes. */
ssize_t volf_pread(struct fnode *n, void *buf, size_t size, uint64_t off);
int volf_pwrite(struct fnode *n, const void *buf, size_t size, uint64_t off);
/* Should the mount wait for a busy volume's lock instead of EBUSY? */
extern int volf_wait;
/* ...or take the lock only at the first write (waiting for it)? */
extern int volf_lazy;

/*
 * inval.c: invalidations pushed by the mds (the kernel drops what other
 * clients changed at once, not after its timeouts).
 * inval_start: after mounting, before the session loop: subscribes
 * (unless both timeouts are 0); 0 or -errno (the mount then works on
 * timeouts alone). inval_quiesce: after the loop, before
 * fuse_session_unmount: nothing is applied any more (waits up to 1 s
 * for a notify call in flight). inval_stop: after unmounting, before
 * fuse_session_destroy: joins the applier.
 */
int inval_start(struct fs *fs);
void inval_quiesce(struct fs *fs);
void inval_stop(struct fs *fs);
/*
 * The guard for replies racing an invalidation: take a mark before
 * asking the mds; replying, inval_*_timeout(mark) is the mount's
 * timeout, or 0 if an invalidation came meanwhile. Any thread.
 * inval_begin (at the top of a handler) keeps the mark and the time it
 * was taken (monotonic ns) in thread-locals that fs_entry and
 * fnode_set_stat_v use; inval_begin_at sets them to an older mark (a
 * readdirplus page fetched earlier). A handler that did not call it
 * gets its thread's last mark: at worst timeout 0 and no lease.
 * inval_lease_end: for a leased reply applied now on this thread, the
 * time until which it stays what the mds would answer: the mark's time
 * + attr_timeout (the mds leases for at least that long from a moment
 * after the mark), or 0 if an invalidation came since the mark.
 */
uint64_t inval_mark(void);
int64_t inval_now_ns(void);
double inval_attr_timeout(uint64_t mark);
double inval_entry_timeout(uint64_t mark);
void inval_begin(void);
void inval_begin_at(uint64_t mark, int64_t mark_ns);
uint64_t inval_thread_mark(void);
int64_t inval_lease_end(void);

/* snapdir.c: the hidden .snap directories (snapshots as read-only
 * files): wraps the ops of @ops that can meet their nodes. */
void snapdir_ops(struct fuse_lowlevel_ops *ops);
/* Is @ino one of its nodes (not an inode of the mds)? */
int snapdir_is_virtual(uint64_t ino);

extern const struct fuse_lowlevel_ops fs_ops;
/* The handlers, by file. */
void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f);
void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi);
void fs_op_readlink(fuse_req_t req, fuse_ino_t ino);
void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		 dev_t rdev);
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname, unsigned int flags);
void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void fs_op_statfs(fuse_req_t req, fuse_ino_t ino);
void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags);
void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void fs_op_access(fuse_req_t req, fuse_ino_t ino, int mask);

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		 struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		     struct fuse_file_info *fi);
void fs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		 struct fuse_file_info *fi);
void fs_op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			   struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			   struct fuse_file_info *fi_out, size_t len, int flags);

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

void fs_op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock);
void fs_op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock, int sleep);
void fs_op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op);
/*
 * lockown.c: the lock owners (fuse lock_owner) that took byte-range
 * locks through each open file (fi->fh) of an inode, so that the
 * RELEASE of an open file can drop its OFD locks: the kernel names an
 * OFD lock's owner after its open file and sends no unlock for it when
 * the last descriptor closes. A POSIX owner (a process) is forgotten
 * when it closes the file (flush: it then holds no POSIX lock on the
 * inode), so what remains at RELEASE are the open file's OFD owners.
 * Any thread; every call is short except lockown_release (it makes the
 * @drop calls) and lockown_add, which waits while a lockown_release is
 * dropping the same (ino, owner).
 */
/* Before asking the mds for a lock of @owner through @fh: 0, -ENOMEM. */
int lockown_add(uint64_t ino, uint64_t fh, uint64_t owner);
/* @owner closed a descriptor of @ino (its POSIX locks were dropped). */
void lockown_flushed(uint64_t ino, uint64_t fh, uint64_t owner);
/* The RELEASE of @fh: forget it, and @drop(ino, 0, owner) each owner
 * that locked through it, did not close it, and has no record through
 * another open file of @ino; first @drop(ino, 1, *flock_owner) if
 * @flock_owner (the open file's flock lock). Returns how many owners
 * were dropped. */
int lockown_release(uint64_t ino, uint64_t fh, const uint64_t *flock_owner,
		    void (*drop)(uint64_t ino, int flock, uint64_t owner));
/* Wait until no lockown_release of @ino is running; 1 if one was. */
int lockown_wait_release(uint64_t ino);

/* Install getlk, setlk, flock in @ops, and wrap its flush and release
 * so they first drop the closing owner's locks (call it last: after
 * snapdir_ops, so every release goes through it). */
void fs_lock_ops(struct fuse_lowlevel_ops *ops);
#endif
