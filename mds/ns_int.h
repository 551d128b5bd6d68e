/*
 * ns_int.h - what the mds/ns*.c files share (not an API).
 *
 *   ns.c          open/close, keys and records, locks, transactions
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
 *
 * Keys (big-endian numbers, so LevelDB orders them):
 *   'I' ino                  inode: sdfs_attr wire bytes + le64 next_seq
 *   'D' parent name          dentry: le64 ino, le32 type, le64 cookie
 *   'E' parent cookie        listing order: le64 ino, le32 type, name
 *   'L' ino                  symlink target
 *   'X' ino name             xattr value
 *   'A' ino chunk            (empty): the regular file's chunk has data
 *                            (ns_space.c); their count is in the inode's
 *                            blocks field, with SPACE_COUNTED set
 *   'O' ino                  stray: le64 size, le32 obj_size, le64 unix ms
 *                            when its last link went (inode kept, nlink 0,
 *                            until no client holds it open: opens.h)
 *   'R' client seq           reply record (replycache.c)
 *   'M' "ino_next"           le64: inode numbers below it may be in use
 *   'K' ino client owner kind start   a lock (mds/lock.c): le64 end,
 *                            le32 pid, u8 type
 * Volumes (mds/vol.h has their values):
 *   'V' vid                  volume state record
 *   'W' ino                  le64: a volume file's live vid
 *   'S' ino name             le64: a volume file's snapshot by name
 *   'F' family vid           (empty): family membership
 *   'P' vid                  pending snapshot/clone/rollback making vid
 *   'G' family               (empty): the family has deleted states
 *   'M' "vid_next"           le64: vids below it may be in use
 */
#ifndef SDFS_MDS_NS_INT_H
#define SDFS_MDS_NS_INT_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "mds/ns.h"
#include "mds/objenv.h"
#include "libclient/sdfs.h"

#define NS_LOCKS 1024
#define NS_KEY_MAX (1 + 8 + 8 + SDFS_XATTR_NAME_MAX + 1)
#define NS_FIRST_COOKIE 3       /* 0..2 are free for ".", ".." in clients */
#define NS_INO_BATCH 1024

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
};

struct inode {
	struct sdfs_attr a;             /* a.blocks: from space_blocks */
	uint64_t next_seq;              /* directories: next listing cookie */
	uint64_t chunks;                /* regular files: chunks with data
					   (ns_space.c); SPACE_UNKNOWN: not
					   counted */
};
#define SPACE_UNKNOWN UINT64_MAX
/* In a stored record's blocks field: the low bits are the chunk count
 * (an mds before 1.6 stored size / 512 there, and ignores it). */
#define SPACE_COUNTED (1ull << 63)

struct dent {
	uint64_t ino;
	uint32_t type;
	uint64_t cookie;
};

/* Delete into @b every key starting with @pfx (found with @it). */
void batch_del_prefix(struct kviter *it, struct kvbatch *b, const uint8_t *pfx,
		      size_t plen);
/* Keys: each returns its length. */
size_t key_tag_n(uint8_t *k, uint8_t tag, uint64_t a);
size_t key_tag_nn(uint8_t *k, uint8_t tag, uint64_t a, uint64_t b);
size_t key_tag_name(uint8_t *k, uint8_t tag, uint64_t a, const char *name, size_t nlen);
size_t key_inode(uint8_t *k, uint64_t ino);
size_t key_dent(uint8_t *k, uint64_t parent, const char *name, size_t nlen);
size_t key_list(uint8_t *k, uint64_t parent, uint64_t cookie);
size_t key_link(uint8_t *k, uint64_t ino);
size_t key_xattr(uint8_t *k, uint64_t ino, const char *name, size_t nlen);
size_t key_orphan(uint8_t *k, uint64_t ino);
void be64_put(uint8_t *p, uint64_t v);
uint64_t be64_get(const uint8_t *p);
void le64_put(uint8_t *p, uint64_t v);
uint64_t le64_get(const uint8_t *p);
void le32_put(uint8_t *p, uint32_t v);
uint32_t le32_get(const uint8_t *p);

int64_t ns_now(void);           /* ns since 1970 */

/* Records. get: -ENOENT, -EIO (malformed record: logged). */
int inode_get(struct ns *ns, uint64_t ino, struct inode *in);
void inode_put(struct kvbatch *b, const struct inode *in);
int dent_get(struct ns *ns, uint64_t parent, const char *name, size_t nlen,
	     struct dent *d);
/* Add/remove the dentry and its listing entry. add takes the cookie
 * from @dir->next_seq (and bumps it). */
void dent_add(struct kvbatch *b, struct inode *dir, const char *name, size_t nlen,
	      uint64_t ino, uint32_t type);
void dent_del(struct kvbatch *b, uint64_t parent, const char *name, size_t nlen,
	      const struct dent *d);
/* An inode's last link went: it is kept with nlink 0 (an open file
 * stays usable) and an orphan ("stray") record makes purge.c delete it,
 * its data, symlink target and xattrs once ORPHAN_GRACE_MS passed and
 * no client holds it open (mds/opens.h). */
#define ORPHAN_REC_SIZE 20
/* 2 s: longer than mount.sdfs's default entry_timeout (1 s), so a
 * kernel that still had a replaced name cached opens its old inode in
 * time; short, because the space comes back only after it. */
#define ORPHAN_GRACE_MS 2000
void inode_drop(struct ns *ns, struct kvbatch *b, const struct inode *in);
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
/* A new inode number (never reused). */
int ino_alloc(struct ns *ns, uint64_t *ino);
/* Does directory @ino have any entry? 1, 0 or -errno. */
int dir_has_entries(struct ns *ns, uint64_t ino);

/* Locks on inode numbers (0s ignored), taken in a global order. */
struct lockset {
	int idx[8];
	int n;
};
void ns_lock(struct ns *ns, struct lockset *ls, const uint64_t *inos, int n);
void ns_unlock(struct ns *ns, struct lockset *ls);

/* Commit @b durably. ns_commit_op adds @r's reply record first. */
int ns_commit(struct ns *ns, struct kvbatch *b);
int ns_commit_op(struct ns *ns, const struct sdfs_ns_req *r, struct kvbatch *b,
		 const struct ns_reply *rep);
/* A path component: 0, -ENAMETOOLONG (> 255), -EINVAL (empty, '/', NUL). */
int name_check(const char *name, size_t len);
int name_is_dot(const char *name, size_t len);  /* "." or ".." */

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

/* A reply carrying @in's attributes. reply_attr_ns also counts a
 * volume file's space (space_attr: reads its index); the others show
 * 0 blocks for a volume file (one just made owns nothing). */
int reply_attr(struct ns_reply *rep, const struct inode *in);
int reply_attr_ns(struct ns *ns, struct ns_reply *rep, const struct inode *in,
		  uint32_t flags);
/* With SDFS_ATTR_F_* @flags (the stored flags are not sent). */
int reply_attr_f(struct ns_reply *rep, const struct inode *in, uint32_t flags);

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
/* Free the data of @ino beyond @size (chunks past it removed, the tail
 * of the last one zeroed). */
int purge_data(struct ns *ns, uint64_t ino, uint32_t obj_size, uint64_t old_size,
	       uint64_t new_size);
#endif
