/*
 * ns_int.h - what the mds/ns*.c files share (not an API).
 *
 *   ns.c          open/close, per-inode locks, the dispatch table
 *   records.c     keys and records, inode numbers, names (mds/records.h)
 *   ns_ops.c      create, remove, link, setattr, getattr, lookup
 *   ns_rename.c   rename (plain, NOREPLACE, EXCHANGE) and its loop check
 *   ns_dir.c      readdir, readlink, statfs, xattrs, info
 *   ns_acl.c      POSIX ACLs: inheritance, chmod, setting (acl.c parses)
 *   ns_space.c    the space a file's data takes (its blocks)
 *   replycache.c  the (client_id, seq) -> reply records
 *   purge.c       background: data of unlinked files, old reply records
 *   lease.c       clients' leases, pushed invalidations (mds/lease.h)
 *   opens.c       which clients hold which inodes open (mds/opens.h)
 *   handover.c    caches of the previous active's clients (ns_handover)
 *   vol*.c        volume files' catalog, snapshots, reclaim (mds/vol.h)
 */
#ifndef SDFS_MDS_NS_INT_H
#define SDFS_MDS_NS_INT_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "mds/ns.h"
#include "mds/objenv.h"
#include "mds/records.h"
#include "libclient/sdfs.h"

#define NS_LOCKS 1024

struct inflight;
struct vol;
struct locktab;
struct coord;

struct ns {
	struct sdfs *sdfs;
	struct kvdb *db;
	uint64_t epoch;
	char name[32];
	uint32_t obj_size;              /* for new files */
	int64_t active_ms;

	pthread_mutex_t locks[NS_LOCKS];
	pthread_mutex_t rename_lock;    /* cross-directory renames */

	pthread_mutex_t ino_lock;       /* inode number allocation */
	uint64_t ino_next, ino_limit;

	atomic_int failed;
	atomic_uint_fast64_t ops, inodes;

	struct inflight *inflight;      /* replycache.c */
	struct vol *vol;                /* vol*.c */
	struct locktab *lt;             /* lock.c */
	struct opens *opens;            /* opens.c: clients' open inodes */
	struct leases *leases;          /* lease.c: what clients cache */
	/* handover.c: the longest cache time subscribed this term, and
	 * when mutations may start (monotonic ms; 0: at once) */
	pthread_mutex_t cache_lock;
	uint64_t cache_max;
	int64_t mut_gate_ms;

	/* ns_objcap.c: object capabilities (ns_set_objcap) */
	atomic_int objcap_on;
	int objcap_lifetime_ms;
	uint8_t objcap_key[AUTH_KEY_BYTES];

	/* statfs cache */
	pthread_mutex_t statfs_lock;
	int64_t statfs_at;
	struct sdfs_ns_statfs statfs;

	/* purge.c */
	pthread_t purge_thread;
	pthread_mutex_t purge_lock;
	pthread_cond_t purge_cond;
	int purge_stop, purge_started;

	/* ecfile.c: the seal thread of EC files, its counters */
	pthread_t ecfile_thread;
	pthread_mutex_t ecfile_lock;
	pthread_cond_t ecfile_cond;
	int ecfile_stop, ecfile_started;
	int64_t ecfile_nodev_ms;        /* last "cannot place" log line */
	atomic_int ec_seal_after_s;     /* 0: never */
	atomic_uint_fast64_t ec_seals, ec_unseals, ec_sealed_bytes;

	/* commit.c: the sync interval's thread */
	int sync_interval_ms;           /* set before ns_open returns; 0: default */
	pthread_t sync_thread;
	pthread_mutex_t sync_lock;
	pthread_cond_t sync_cond;
	int sync_stop, sync_started;
};

/* Making a child of a directory (mknod, mkdir, symlink, volume create
 * and clone): check: 0 with @dir read if @dirino is a live directory
 * without @name (-ENOTDIR, -ENOENT, -EEXIST); init: a new inode's common
 * fields (generation, mode, owner — a setgid directory's group —, links,
 * times; its number is the caller's); link: its dentry, the directory's
 * times, both records into @b. The caller holds the directory's lock. */
int child_check(struct ns *ns, uint64_t dirino, const char *name, size_t nlen,
		struct inode *dir);
/* ... may: the caller may make it (0, -EACCES) and its owner's ids are
 * *@uid, *@gid (ns_ops.c). */
int child_may(struct ns *ns, const struct ns_caller *who, const struct inode *dir,
	      const struct sdfs_ns_req *r, uint32_t *uid, uint32_t *gid);
void child_init(struct ns *ns, const struct inode *dir, uint32_t mode, uint32_t uid,
		uint32_t gid, int64_t now, struct inode *in);
void child_link(struct kvbatch *b, struct inode *dir, const char *name, size_t nlen,
		const struct inode *in, int64_t now);

/* Locks on inode numbers (0s ignored), taken in a global order. */
struct lockset {
	int idx[8];
	int n;
};
void ns_lock(struct ns *ns, struct lockset *ls, const uint64_t *inos, int n);
void ns_unlock(struct ns *ns, struct lockset *ls);

/*
 * commit.c, the commit pipeline. ns_commit: apply @b and settle it (in
 * every replica's memory: survives any crash) before returning, for
 * writers that act on the result outside the database. ns_commit_op:
 * add @r's reply record and apply, nothing more: the request's ns_exec
 * settles before the reply, after the op dropped its locks. ns_settle:
 * everything applied so far is settled. ns_sync: ...and durable (power
 * loss). Each returns 0, or -EIO / -EPERM with ns_failed() set.
 */
int ns_commit(struct ns *ns, struct kvbatch *b);
int ns_commit_op(struct ns *ns, const struct sdfs_ns_req *r, struct kvbatch *b,
		 const struct ns_reply *rep);
int ns_settle(struct ns *ns);
int ns_sync(struct ns *ns);
int commit_start(struct ns *ns);        /* the sync interval thread */
void commit_stop(struct ns *ns);

/* Operation entry points (ns_ops.c, ns_rename.c, ns_dir.c). */
int op_lookup(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	      const char *name, struct ns_reply *rep);
int op_getattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	       struct ns_reply *rep);
int op_setattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	       const uint8_t *data, struct kvbatch *b, struct ns_reply *rep);
int op_mknod(struct ns *ns, const struct ns_caller *who, unsigned op,
	     const struct sdfs_ns_req *r, const char *name, const uint8_t *data,
	     struct kvbatch *b, struct ns_reply *rep);
int op_remove(struct ns *ns, const struct ns_caller *who, unsigned op,
	      const struct sdfs_ns_req *r, const char *name, struct kvbatch *b,
	      struct ns_reply *rep);
int op_link(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	    const char *name2, struct kvbatch *b, struct ns_reply *rep);
int op_rename(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	      const char *name, const char *name2, struct kvbatch *b, struct ns_reply *rep);
/* SDFS_NS_WANT_ATTRS (sdfs_proto.h): append the attributes of @ins[0..n)
 * (NULL entries and repeats skipped) as they are after the change, each
 * leased to the requester unless nlink is 0 (a directory's names too:
 * SDFS_ATTR_F_LISTING), to @rep; nothing without the flag. The caller holds their locks until it committed. 0, -ENOMEM. */
int reply_more_attrs(struct ns *ns, const struct sdfs_ns_req *r, struct ns_reply *rep,
		     const struct inode *const *ins, int n);
int op_readdir(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	       struct ns_reply *rep);
int op_readlink(struct ns *ns, const struct sdfs_ns_req *r, struct ns_reply *rep);
int op_statfs(struct ns *ns, const struct sdfs_ns_req *r, struct ns_reply *rep);
int op_getxattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
		const char *name, struct ns_reply *rep);
int op_listxattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
		 struct ns_reply *rep);
int op_setxattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
		const char *name, const uint8_t *val, struct kvbatch *b);
int op_rmxattr(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	       const char *name, struct kvbatch *b);
int op_info(struct ns *ns, struct ns_reply *rep);
/* ns_objcap.c: NS_OBJCAP; and a regular file's cap after the sdfs_attr
 * of a LOOKUP, GETATTR or MKNOD reply (SDFS_NS_WANT_CAP; nothing when
 * caps are off or the caller may not read it) */
int op_objcap(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	      struct ns_reply *rep);
void ns_objcap_attach(struct ns *ns, const struct ns_caller *who, unsigned op,
		      struct ns_reply *rep);

/* ns_acl.c: POSIX ACLs (docs/acl.md). The caller holds the inode's
 * lock (the directory's for create) and commits @b.
 * kind: NSACL_ACCESS or NSACL_DEFAULT for the two ACL xattr names, 0
 * for other names.
 * create: the new inode @in (mode from the request) gets @dir's default
 * ACL: its access ACL and mode bits masked by each other, and for a
 * directory the default ACL too; without one, the umask in @flags
 * (SDFS_NS_UMASK) is applied. 0, -EIO, -ENOMEM.
 * chmod: @in's access ACL follows its new mode. 0, -EIO, -ENOMEM.
 * set: a client sets ACL xattr @kind of @in to @val: -EINVAL when it
 * is no valid ACL, -EACCES for a default ACL on a non-directory,
 * -EOPNOTSUPP on a symlink; for an access ACL @in's mode bits are set
 * from it (setgid cleared with SDFS_NS_XATTR_KILL_SGID in @flags).
 * Returns 1 to store @val, 0 to remove the xattr instead (an ACL the
 * mode bits say all of, or an empty one). */
#define NSACL_ACCESS 1
#define NSACL_DEFAULT 2
int nsacl_xattr_kind(const char *name, size_t len);
int nsacl_create(struct ns *ns, struct kvbatch *b, const struct inode *dir,
		 struct inode *in, uint32_t flags);
int nsacl_chmod(struct ns *ns, struct kvbatch *b, const struct inode *in);
int nsacl_set(struct inode *in, int kind, const uint8_t *val, uint32_t len,
	      uint32_t flags);
/* May @who access @in for @mask (PERM_* of mds/perm.h), its access ACL
 * considered? 0, -EACCES, -EIO, -ENOMEM. */
int nsacl_access(struct ns *ns, const struct ns_caller *who, const struct inode *in,
		 unsigned mask);

/* replycache.c: an operation that mutates is bracketed by begin/end.
 * begin returns 1 with @rep filled when (client, seq) was answered
 * before (the stored reply), 0 to go on, or -errno. end records the
 * reply in @b (when the op succeeded and @b is committed by the caller)
 * and wakes duplicates waiting for it. */
int replycache_init(struct ns *ns);
void replycache_free(struct ns *ns);
int replycache_begin(struct ns *ns, const struct sdfs_ns_req *r, struct ns_reply *rep);
void replycache_record(struct ns *ns, const struct sdfs_ns_req *r, struct kvbatch *b,
		       const struct ns_reply *rep);
void replycache_end(struct ns *ns, const struct sdfs_ns_req *r);
/* The stored reply of (client, seq): 1 with @rep filled, 0 if none. */
int replycache_lookup(struct ns *ns, uint64_t client_id, uint64_t seq,
		      struct ns_reply *rep);
/* Delete reply records older than @max_age_ms. */
void replycache_sweep(struct ns *ns, int64_t max_age_ms);

/* handover.c: mutations wait until the previous active's clients'
 * caches ran out (ns.h ns_handover). */
void ns_handover_wait(struct ns *ns);

/* ns_space.c (see there). blocks: a regular file's from its count
 * (volume files: 0). report_ok: is @data a well-formed sdfs_ns_chunks?
 * apply: record the report's chunks in @b and in->chunks (with
 * in->a.size already the new size), cut: drop the chunks past
 * @new_size (a truncate), drop: every chunk key of @ino (purge).
 * attr: @in's attributes for a reply, a volume file's space counted
 * from its index. Caller holds the inode's lock for apply and cut. */
uint64_t space_blocks(const struct inode *in);
int space_report_ok(const uint8_t *data, uint32_t len);
int space_apply(struct ns *ns, struct kvbatch *b, struct inode *in,
		const uint8_t *data, uint32_t len);
int space_cut(struct ns *ns, struct kvbatch *b, struct inode *in, uint64_t new_size);
void space_drop(struct kviter *it, struct kvbatch *b, uint64_t ino);
void space_attr(struct ns *ns, const struct inode *in, struct sdfs_attr *a);

/* purge.c */
int purge_start(struct ns *ns);
void purge_stop(struct ns *ns);
/* Strays now: inodes without a name ('O' records) that some client
 * holds open. */
uint64_t purge_count_strays(struct ns *ns);
/* Free the data of @ino (objects of @obj_size bytes, @copies as its
 * inode says) beyond @new_size (chunks past it removed, the tail of the
 * last one zeroed). */
int purge_data(struct ns *ns, uint64_t ino, uint32_t obj_size, unsigned copies,
	       uint64_t old_size, uint64_t new_size);

/* ecfile.c (docs/ec.md "EC files"): the seal thread; unseal: a sealed
 * file of @ino made replicated again (0 when it is not sealed, or gone;
 * its stripes removed anyway); _locked with the inode's lock held and
 * @in read under it (updated). drop: remove the stripes of chunks
 * [first, end) of a file of policy @copies (errors count only when
 * sealed). */
int ecfile_start(struct ns *ns);
void ecfile_stop(struct ns *ns);
int ecfile_unseal(struct ns *ns, uint64_t ino);
int ecfile_unseal_locked(struct ns *ns, struct inode *in);
int ecfile_drop(struct ns *ns, uint64_t ino, unsigned copies, uint64_t first,
		uint64_t end);
#endif
