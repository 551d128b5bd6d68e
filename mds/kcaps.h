/*
 * kcaps.h - what a key's caps allow in the namespace (docs/security.md
 * "Capabilities"): ns_exec runs every request through kcaps_enter and
 * its reply through kcaps_leave.
 *
 *   ro            every namespace mutation (not locks, not NS_OPEN's
 *                 holds) gets -EROFS
 *   path=/a/b     the key sees /a/b as its root: SDFS_ROOT_INO in a
 *                 request means /a/b's inode and /a/b's inode is shown
 *                 as SDFS_ROOT_INO in replies; ".." of it is itself;
 *                 any inode a request names outside /a/b gets -ENOENT,
 *                 as if it did not exist; the path is resolved on each
 *                 request, so a renamed or removed /a/b gives -ENOENT
 *   squash, maps  owners a request names are mapped in (creates: as
 *                 the caller's ids, caller.h; chown targets: the maps
 *                 only) and the owners of attributes in replies out
 *                 (the maps only; a squashed id stays anonymous)
 *   not admin     ops only administrators use (VOL_RECLAIM's cluster-
 *                 wide numbers) get -EPERM
 * An op kcaps.c does not classify gets -EOPNOTSUPP from a key with ro
 * or path=: a new op must say what it names before such keys may use
 * it (NS_OBJCAP: a file, or a vid whose volume file, must be inside).
 * A caller without a key (open cluster, the mds itself) passes
 * unchanged.
 *
 * "Inside the subtree" is decided from the database, never from what
 * the client remembers: a directory is inside when walking its parent
 * pointers up reaches the subtree's root before the real root; any
 * other inode when one of its names (its back-links, below) is in a
 * directory inside. A stray (no name left) is outside.
 *
 * Back-links: every dentry parent/name -> ino has a twin key
 * 'B' ino parent name (empty value), written and deleted in the same
 * batch by dent_add/dent_del, so an inode's names are listed by one
 * prefix scan. A database made before them gets them once, at open
 * (kcaps_open), before the mds serves.
 *
 * Thread-safe: any server thread; no state of its own.
 */
#ifndef SDFS_MDS_KCAPS_H
#define SDFS_MDS_KCAPS_H
#include <stddef.h>
#include <stdint.h>

#include "common/sdfs_proto.h"
#include "mds/ns.h"

struct kvbatch;

/* One request as the namespace runs it, on the caller's stack. */
struct kcaps_req {
	const struct sdfs_ns_req *req;  /* the original, or &copy */
	const char *name;               /* the original, or "." */
	struct sdfs_ns_req copy;
	const struct auth_caps *caps;   /* NULL: nothing to translate */
	uint64_t root;                  /* the key's subtree root; 0: none */
};

/*
 * Check @op of @who against its key's caps and fill @kr with the
 * request to run (kr->req, kr->name; name2 and data never change).
 * 0, or the error to answer: -EROFS, -EPERM, -ENOENT (an inode outside
 * the key's subtree, or the subtree's path gone), -EOPNOTSUPP (an op
 * not classified, for a restricted key), -EIO.
 */
int kcaps_enter(struct ns *ns, const struct ns_caller *who, unsigned op,
		const struct sdfs_ns_req *req, const char *name,
		struct kcaps_req *kr);
/*
 * The reply to @op as @kr's key sees it: inode numbers and owners
 * translated in @rep (in place) when @ret is 0. Returns @ret.
 */
int kcaps_leave(const struct kcaps_req *kr, unsigned op, int ret,
		struct ns_reply *rep);

/* The inode @who's key sees as SDFS_ROOT_INO now: its path= subtree's
 * root, or 0 (no key, no path, or the path is gone). */
uint64_t kcaps_root(struct ns *ns, const struct ns_caller *who);

/* May @who change anything (no ro cap)? 1 or 0. For the grants of
 * object capabilities: a read-only key gets read rights only. */
int kcaps_may_write(const struct ns_caller *who);

/* Back-links (see above): the twin of dentry @parent/@name -> @ino,
 * put into / deleted from @b. */
void kcaps_backlink_add(struct kvbatch *b, uint64_t ino, uint64_t parent,
			const char *name, size_t nlen);
void kcaps_backlink_del(struct kvbatch *b, uint64_t ino, uint64_t parent,
			const char *name, size_t nlen);
/* At ns_open, as the active: give a database made without back-links
 * all of them (one pass over the dentries, in batches), then mark it
 * done. 0 or -errno. */
int kcaps_open(struct ns *ns);

/* Is @ino inside the subtree rooted at directory @root? 1, 0, or
 * -errno (-EIO: a malformed record; -ELOOP: parents 4096 deep). */
int kcaps_inside(struct ns *ns, uint64_t ino, uint64_t root);
/* The directory @path ("/a/b": absolute, normalised) names now into
 * *@ino. 0, -ENOENT (a component missing or no directory), -EIO. */
int kcaps_resolve(struct ns *ns, const char *path, uint64_t *ino);
#endif
