/*
 * records.h - the namespace's records in the database: how keys are
 * built, how inode and dentry records are read and written, inode
 * numbers, path components, and a reply carrying an inode's attributes.
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
 *   'B' ino parent name      (empty): dentry parent/name names ino
 *                            (kcaps.c: written with the dentry)
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
 *
 * Not here: locking (the callers hold the inodes' locks, ns_lock in
 * ns_int.h), committing (the writers below only add to the caller's
 * batch, which the caller commits; ino_alloc alone commits its own),
 * and the operations (ns_ops.c, ns_rename.c, ns_dir.c).
 * Readers read the database and are safe from any thread. Writers that
 * change an inode record or a name also note it for the clients' leases
 * (lease_note_*: the calling thread's operation, mds/lease.h).
 */
#ifndef SDFS_MDS_RECORDS_H
#define SDFS_MDS_RECORDS_H
#include <stddef.h>
#include <stdint.h>

#include "common/sdfs_proto.h"
#include "mds/ns.h"
#include "mds/objenv.h"

#define NS_KEY_MAX (1 + 8 + 8 + SDFS_XATTR_NAME_MAX + 1)
#define NS_FIRST_COOKIE 3       /* 0..2 are free for ".", ".." in clients */
#define NS_INO_BATCH 1024       /* inode numbers reserved per commit */

struct ns;

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

/* Numbers into and out of record bytes (unaligned @p). */
void be64_put(uint8_t *p, uint64_t v);
uint64_t be64_get(const uint8_t *p);
void le64_put(uint8_t *p, uint64_t v);
uint64_t le64_get(const uint8_t *p);
void le32_put(uint8_t *p, uint32_t v);
uint32_t le32_get(const uint8_t *p);

int64_t ns_now(void);           /* ns since 1970 */

/* Keys: each writes one into @k (NS_KEY_MAX bytes are enough for all)
 * and returns its length. */
size_t key_tag_n(uint8_t *k, uint8_t tag, uint64_t a);
size_t key_tag_nn(uint8_t *k, uint8_t tag, uint64_t a, uint64_t b);
size_t key_tag_name(uint8_t *k, uint8_t tag, uint64_t a, const char *name, size_t nlen);
size_t key_inode(uint8_t *k, uint64_t ino);
size_t key_dent(uint8_t *k, uint64_t parent, const char *name, size_t nlen);
size_t key_list(uint8_t *k, uint64_t parent, uint64_t cookie);
size_t key_link(uint8_t *k, uint64_t ino);
size_t key_xattr(uint8_t *k, uint64_t ino, const char *name, size_t nlen);
size_t key_orphan(uint8_t *k, uint64_t ino);
size_t key_ino_next(uint8_t *k);        /* the inode number counter */
/* Delete into @b every key starting with @pfx (found with @it). */
void batch_del_prefix(struct kviter *it, struct kvbatch *b, const uint8_t *pfx,
		      size_t plen);

/* Records. get: -ENOENT, -EIO (malformed record: logged). */
int inode_get(struct ns *ns, uint64_t ino, struct inode *in);
void inode_put(struct kvbatch *b, const struct inode *in);
int dent_get(struct ns *ns, uint64_t parent, const char *name, size_t nlen,
	     struct dent *d);
/* Add/remove the dentry and its listing entry (and its back-link,
 * kcaps.h). add takes the cookie from @dir->next_seq (and bumps it). */
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
/* Does directory @ino have any entry? 1, 0 or -errno. */
int dir_has_entries(struct ns *ns, uint64_t ino);
/* How many inode records there are (0 when the database cannot be
 * read); for ns_open, which counts on from there. */
uint64_t inode_count(struct ns *ns);

/* A new inode number (never reused): 0 with *@ino set, -ENOSPC when
 * the numbers ran out, -ENOMEM, or ns_commit's error when the next
 * range could not be reserved. Any thread (takes ns->ino_lock). */
int ino_alloc(struct ns *ns, uint64_t *ino);

/* A path component: 0, -ENAMETOOLONG (> 255), -EINVAL (empty, '/', NUL). */
int name_check(const char *name, size_t len);
int name_is_dot(const char *name, size_t len);  /* "." or ".." */

/* A reply carrying @in's attributes (rep->data is malloc'd: 0 or
 * -ENOMEM). reply_attr_ns also counts a volume file's space
 * (space_attr: reads its index); the others show 0 blocks for a volume
 * file (one just made owns nothing). */
int reply_attr(struct ns_reply *rep, const struct inode *in);
int reply_attr_ns(struct ns *ns, struct ns_reply *rep, const struct inode *in,
		  uint32_t flags);
/* With SDFS_ATTR_F_* @flags (the stored flags are not sent). */
int reply_attr_f(struct ns_reply *rep, const struct inode *in, uint32_t flags);
#endif
