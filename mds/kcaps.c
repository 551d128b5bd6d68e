/*
 * kcaps.c - a key's caps in the namespace: read-only keys, the path
 * subtree a key sees as its root, owners mapped in and out, admin-only
 * ops; and the back-links that tell which directories hold an inode's
 * names (kcaps.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/objcap.h"
#include "common/proto.h"
#include "mds/caller.h"
#include "mds/kcaps.h"
#include "mds/ns_int.h"
#include "mds/vol.h"

/* What an op does, for the caps (indexed by op - SDFS_OP_NS_LOOKUP). */
#define K_KNOWN 0x01u   /* classified: an op not here is refused to a
			   restricted key (fail closed) */
#define K_INO   0x02u   /* req->ino names an inode */
#define K_INO2  0x04u   /* req->ino2 names an inode */
#define K_MUT   0x08u   /* changes the namespace: -EROFS for ro keys */
#define K_ADMIN 0x10u   /* administrators only */
#define K_OWNER 0x20u   /* creates: uid/gid are the new inode's owner */
#define K_ATTR  0x40u   /* the reply is an sdfs_attr */

/* NS_OBJCAP: its flag SDFS_OBJCAP_VOL says "arg
 * is a vid" */
#define OP_OBJCAP  SDFS_OP_NS_OBJCAP
#define OBJCAP_VOL SDFS_OBJCAP_VOL

#define OPS_FIRST SDFS_OP_NS_LOOKUP
#define OPS_LAST  SDFS_OP_NS_SYNC

#define I  (K_KNOWN | K_INO)
static const uint8_t op_class[OPS_LAST - OPS_FIRST + 1] = {
	[SDFS_OP_NS_LOOKUP - OPS_FIRST]   = I | K_ATTR,
	[SDFS_OP_NS_GETATTR - OPS_FIRST]  = I | K_ATTR,
	[SDFS_OP_NS_SETATTR - OPS_FIRST]  = I | K_MUT | K_ATTR,
	[SDFS_OP_NS_MKNOD - OPS_FIRST]    = I | K_MUT | K_OWNER | K_ATTR,
	[SDFS_OP_NS_MKDIR - OPS_FIRST]    = I | K_MUT | K_OWNER | K_ATTR,
	[SDFS_OP_NS_UNLINK - OPS_FIRST]   = I | K_MUT,
	[SDFS_OP_NS_RMDIR - OPS_FIRST]    = I | K_MUT,
	[SDFS_OP_NS_RENAME - OPS_FIRST]   = I | K_INO2 | K_MUT,
	[SDFS_OP_NS_LINK - OPS_FIRST]     = I | K_INO2 | K_MUT | K_ATTR,
	[SDFS_OP_NS_SYMLINK - OPS_FIRST]  = I | K_MUT | K_OWNER | K_ATTR,
	[SDFS_OP_NS_READLINK - OPS_FIRST] = I,
	[SDFS_OP_NS_READDIR - OPS_FIRST]  = I,
	[SDFS_OP_NS_STATFS - OPS_FIRST]   = K_KNOWN,
	[SDFS_OP_NS_GETXATTR - OPS_FIRST] = I,
	[SDFS_OP_NS_SETXATTR - OPS_FIRST] = I | K_MUT,
	[SDFS_OP_NS_LISTXATTR - OPS_FIRST] = I,
	[SDFS_OP_NS_RMXATTR - OPS_FIRST]  = I | K_MUT,
	[SDFS_OP_NS_INFO - OPS_FIRST]     = K_KNOWN,
	[SDFS_OP_NS_VOL_CREATE - OPS_FIRST] = I | K_MUT | K_OWNER | K_ATTR,
	[SDFS_OP_NS_VOL_INFO - OPS_FIRST] = I,
	[SDFS_OP_NS_VOL_SNAP - OPS_FIRST] = I | K_MUT,
	[SDFS_OP_NS_VOL_SNAPLIST - OPS_FIRST] = I,
	[SDFS_OP_NS_VOL_SNAPDEL - OPS_FIRST] = I | K_MUT,
	[SDFS_OP_NS_VOL_ROLLBACK - OPS_FIRST] = I | K_MUT,
	[SDFS_OP_NS_VOL_CLONE - OPS_FIRST] = I | K_INO2 | K_MUT | K_OWNER | K_ATTR,
	[SDFS_OP_NS_VOL_TREE - OPS_FIRST] = I,
	[SDFS_OP_NS_VOL_RECLAIM - OPS_FIRST] = K_KNOWN | K_ADMIN,
	/* locks change no namespace state: a read-only key may lock */
	[SDFS_OP_NS_LOCK_SET - OPS_FIRST] = I,
	[SDFS_OP_NS_LOCK_GET - OPS_FIRST] = I,
	[SDFS_OP_NS_LOCK_UNLOCK - OPS_FIRST] = I,
	[SDFS_OP_NS_LOCK_RELEASE - OPS_FIRST] = I,
	[SDFS_OP_NS_SUBSCRIBE - OPS_FIRST] = K_KNOWN,
	/* holds keep an unlinked file's data, reveal and change nothing a
	 * client sees, and name inodes a client may hold from before a
	 * rename moved them out (docs/security.md) */
	[SDFS_OP_NS_OPEN - OPS_FIRST]     = K_KNOWN,
	/* a file's object capability: the file must be inside (a vid's:
	 * its volume file, kcaps_enter); ro keys get read rights only
	 * (objcap's own check, kcaps_may_write) */
	[OP_OBJCAP - OPS_FIRST]           = I,
	[SDFS_OP_NS_SYNC - OPS_FIRST]     = K_KNOWN,       /* any key, ro too */
};
#undef I

static unsigned classify(unsigned op)
{
	if (op < OPS_FIRST || op > OPS_LAST)
		return 0;
	return op_class[op - OPS_FIRST];
}

/* ---- back-links ---- */

static const char key_backlinks_done[] = "Mbacklinks";

static size_t key_backlink(uint8_t *k, uint64_t ino, uint64_t parent,
			   const char *name, size_t nlen)
{
	memcpy(k + 17, name, nlen);
	return key_tag_nn(k, 'B', ino, parent) + nlen;
}

void kcaps_backlink_add(struct kvbatch *b, uint64_t ino, uint64_t parent,
			const char *name, size_t nlen)
{
	uint8_t k[NS_KEY_MAX];

	kvbatch_put(b, k, key_backlink(k, ino, parent, name, nlen), "", 0);
}

void kcaps_backlink_del(struct kvbatch *b, uint64_t ino, uint64_t parent,
			const char *name, size_t nlen)
{
	uint8_t k[NS_KEY_MAX];

	kvbatch_del(b, k, key_backlink(k, ino, parent, name, nlen));
}

#define BUILD_BATCH 4096

int kcaps_open(struct ns *ns)
{
	struct kvbatch *b;
	struct kviter *it;
	uint64_t n = 0, pending = 0;
	char *v;
	size_t vlen;
	int ret;

	ret = kvdb_get(ns->db, key_backlinks_done, sizeof(key_backlinks_done) - 1,
		       &v, &vlen);
	if (ret == 0) {
		free(v);
		return 0;
	}
	if (ret != -ENOENT)
		return ret;
	b = kvbatch_new();
	it = kvdb_iter(ns->db);
	if (!b || !it) {
		ret = -ENOMEM;
		goto out;
	}
	/* 'D' parent name -> le64 ino ...: each gets its 'B' twin. The
	 * iterator is a snapshot: the batches written meanwhile are not
	 * in it. Puts are idempotent, so a crash here just redoes it. */
	for (kviter_seek(it, "D", 1); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const char *k = kviter_key(it, &klen);
		const char *dv = kviter_value(it, &vlen);

		if (klen < 1 || k[0] != 'D')
			break;
		if (klen <= 9 || klen > 9 + SDFS_NAME_MAX || vlen != 20) {
			log_err("malformed dentry record (%zu bytes); no back-link", klen);
			continue;
		}
		kcaps_backlink_add(b, le64_get((const uint8_t *)dv),
				   be64_get((const uint8_t *)k + 1), k + 9, klen - 9);
		n++;
		if (++pending == BUILD_BATCH) {
			ret = ns_commit(ns, b);
			if (ret)
				goto out;
			kvbatch_clear(b);
			pending = 0;
		}
	}
	ret = kviter_error(it);
	if (ret)
		goto out;
	kvbatch_put(b, key_backlinks_done, sizeof(key_backlinks_done) - 1, "", 0);
	ret = ns_commit(ns, b);
	if (!ret && n)
		log_info("gave %" PRIu64 " names their back-links (once, for "
			 "key caps with path=)", n);
out:
	kviter_free(it);
	kvbatch_free(b);
	return ret;
}

/* ---- the subtree ---- */

#define DEPTH_MAX 4096

/* Is directory @dir (or the directory it is below) inside @root? */
static int dir_inside(struct ns *ns, uint64_t dir, uint64_t root)
{
	for (int depth = 0; depth < DEPTH_MAX; depth++) {
		struct inode in;
		int ret;

		if (dir == root)
			return 1;
		if (dir == SDFS_ROOT_INO)
			return 0;
		ret = inode_get(ns, dir, &in);
		if (ret)
			return ret == -ENOENT ? 0 : ret;
		if (!S_ISDIR(in.a.mode))
			return 0;
		dir = in.a.parent;
	}
	return -ELOOP;
}

int kcaps_inside(struct ns *ns, uint64_t ino, uint64_t root)
{
	struct kviter *it;
	struct inode in;
	uint8_t pfx[9];
	int ret;

	if (ino == root)
		return 1;
	ret = inode_get(ns, ino, &in);
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	if (S_ISDIR(in.a.mode))
		return dir_inside(ns, in.a.parent, root);
	/* Any of its names in a directory inside will do: a hard link
	 * makes a file reachable from both ends. */
	it = kvdb_iter(ns->db);
	if (!it)
		return -ENOMEM;
	ret = 0;
	key_tag_n(pfx, 'B', ino);
	for (kviter_seek(it, pfx, 9); kviter_valid(it) && ret == 0; kviter_next(it)) {
		size_t klen;
		const uint8_t *k = (const uint8_t *)kviter_key(it, &klen);

		if (klen < 17 || memcmp(k, pfx, 9))
			break;
		ret = dir_inside(ns, be64_get(k + 9), root);
	}
	if (ret == 0)
		ret = kviter_error(it);
	kviter_free(it);
	return ret;
}

int kcaps_resolve(struct ns *ns, const char *path, uint64_t *ino)
{
	uint64_t cur = SDFS_ROOT_INO;
	const char *p = path;

	while (*p) {
		const char *end;
		struct dent d;
		size_t len;
		int ret;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchr(p, '/');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len > SDFS_NAME_MAX || name_is_dot(p, len))
			return -ENOENT;
		ret = dent_get(ns, cur, p, len, &d);
		if (ret)
			return ret;
		if (d.type != S_IFDIR)
			return -ENOENT;
		cur = d.ino;
		p += len;
	}
	*ino = cur;
	return 0;
}

/* ---- requests and replies ---- */

static int has_path(const struct auth_caps *c)
{
	return c->path[0] && strcmp(c->path, "/") != 0;
}

static int maps_ids(const struct auth_caps *c)
{
	return c->nuidmap || c->ngidmap;
}

/* Check @ino (after SDFS_ROOT_INO became @root) is inside. */
static int check_inside(struct ns *ns, uint64_t *ino, uint64_t root)
{
	int ret;

	if (*ino == SDFS_ROOT_INO)
		*ino = root;
	ret = kcaps_inside(ns, *ino, root);
	if (ret < 0)
		return ret == -ELOOP ? -EIO : ret;
	return ret ? 0 : -ENOENT;
}

int kcaps_enter(struct ns *ns, const struct ns_caller *who, unsigned op,
		const struct sdfs_ns_req *req, const char *name,
		struct kcaps_req *kr)
{
	const struct auth_ident *key = who ? who->key : NULL;
	const struct auth_caps *c;
	struct sdfs_ns_req *r = &kr->copy;
	unsigned cls = classify(op);
	int ret;

	kr->req = req;
	kr->name = name;
	kr->caps = NULL;
	kr->root = 0;
	if (!key)
		return 0;
	c = &key->caps;
	if (!cls && (has_path(c) || (c->flags & AUTH_CAP_RO)))
		return -EOPNOTSUPP;
	if ((cls & K_ADMIN) && !auth_caps_privileged(c))
		return -EPERM;
	if ((cls & K_MUT) && (c->flags & AUTH_CAP_RO))
		return -EROFS;
	*r = *req;
	kr->req = r;
	if (cls & K_OWNER) {
		r->uid = auth_caps_uid(c, r->uid);
		r->gid = auth_caps_gid(c, r->gid);
	} else if (op == SDFS_OP_NS_SETATTR) {
		if (r->flags & SDFS_SET_UID)
			r->uid = caller_map_uid_in(c, r->uid);
		if (r->flags & SDFS_SET_GID)
			r->gid = caller_map_gid_in(c, r->gid);
	}
	if (maps_ids(c))
		kr->caps = c;
	if (!has_path(c))
		return 0;
	kr->caps = c;
	ret = kcaps_resolve(ns, c->path, &kr->root);
	if (ret) {
		if (ret == -ENOENT)
			log_every(LOG_EVERY_MS, LOG_WARNING, "key %s: its path %s is "
				  "gone (renamed or removed): its requests get ENOENT",
				  key->name, c->path);
		return ret;
	}
	if (op == OP_OBJCAP && (r->flags & OBJCAP_VOL)) {
		/* a vid's caps: the volume file it belongs to is inside */
		struct vol_rec v;

		ret = vol_rec_get(ns, r->arg, &v);
		if (!ret)
			ret = check_inside(ns, &v.ino, kr->root);
		if (ret)
			return ret;
	} else if (cls & K_INO) {
		ret = check_inside(ns, &r->ino, kr->root);
		if (ret)
			return ret;
	}
	if (cls & K_INO2) {
		ret = check_inside(ns, &r->ino2, kr->root);
		if (ret)
			return ret;
	}
	/* the subtree's root is its own parent, as the real root is */
	if (op == SDFS_OP_NS_LOOKUP && r->ino == kr->root &&
	    r->name_len == 2 && name[0] == '.' && name[1] == '.') {
		kr->name = ".";
		r->name_len = 1;
	}
	return 0;
}

static void attr_out(const struct kcaps_req *kr, struct sdfs_attr *a)
{
	if (kr->root) {
		if (a->ino == kr->root) {
			a->ino = SDFS_ROOT_INO;
			a->parent = SDFS_ROOT_INO;
		} else if (a->parent == kr->root) {
			a->parent = SDFS_ROOT_INO;
		}
	}
	a->uid = caller_map_uid_out(kr->caps, a->uid);
	a->gid = caller_map_gid_out(kr->caps, a->gid);
}

static void readdir_out(const struct kcaps_req *kr, struct ns_reply *rep)
{
	size_t off = 0;

	while (off < rep->len) {
		struct sdfs_dirent d;
		struct sdfs_attr a;
		const char *name;
		ssize_t n = proto_dirent_decode(rep->data + off, rep->len - off, 1,
						&d, &name, &a);

		if (n <= 0)
			return;
		attr_out(kr, &a);
		proto_attr_encode(&a, rep->data + off + proto_dirent_size(d.name_len, 0));
		off += (size_t)n;
	}
}

/* SDFS_NS_WANT_ATTRS: the attributes after the reply's body. */
static void more_attrs_out(const struct kcaps_req *kr, unsigned op, struct ns_reply *rep)
{
	size_t off = 0;

	if (classify(op) & K_ATTR) {
		off = SDFS_ATTR_SIZE;
		if (rep->len >= off && (rep->len - off) % SDFS_ATTR_SIZE != 0)
			off += OBJCAP_WIRE_SIZE;        /* a cap (ns_objcap.c) */
	}
	for (; off + SDFS_ATTR_SIZE <= rep->len; off += SDFS_ATTR_SIZE) {
		struct sdfs_attr a;

		if (proto_attr_decode(rep->data + off, SDFS_ATTR_SIZE, &a))
			return;
		attr_out(kr, &a);
		proto_attr_encode(&a, rep->data + off);
	}
}

int kcaps_leave(const struct kcaps_req *kr, unsigned op, int ret,
		struct ns_reply *rep)
{
	struct sdfs_attr a;

	if (ret || !kr->caps || !rep->data)
		return ret;
	if (kr->req->flags & SDFS_NS_WANT_ATTRS)
		more_attrs_out(kr, op, rep);
	if (classify(op) & K_ATTR) {
		if (proto_attr_decode(rep->data, rep->len, &a) == 0) {
			attr_out(kr, &a);
			proto_attr_encode(&a, rep->data);
		}
	} else if (op == SDFS_OP_NS_READDIR && (kr->req->flags & SDFS_NS_PLUS)) {
		/* plain entries carry no parent and no owner; the root
		 * is no entry of itself */
		readdir_out(kr, rep);
	}
	return ret;
}

uint64_t kcaps_root(struct ns *ns, const struct ns_caller *who)
{
	uint64_t root;

	if (!who || !who->key || !has_path(&who->key->caps) ||
	    kcaps_resolve(ns, who->key->caps.path, &root))
		return 0;
	return root;
}

int kcaps_may_write(const struct ns_caller *who)
{
	return !who || !who->key || !(who->key->caps.flags & AUTH_CAP_RO);
}
