/*
 * ns.c - the namespace's frame: opening the database, keys and records,
 * per-inode locks, inode numbers, and dispatch (ns.h, ns_int.h).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"
#include "common/oid.h"
#include "common/proto.h"
#include "mds/kcaps.h"
#include "mds/lease.h"
#include "mds/lock.h"
#include "mds/ns_int.h"
#include "mds/opens.h"
#include "mds/perm.h"
#include "mds/store.h"
#include "mds/vol.h"

void be64_put(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }
uint64_t be64_get(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }
void le64_put(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
uint64_t le64_get(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }
void le32_put(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
uint32_t le32_get(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }

int64_t ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The shapes of every key: a tag byte, then big-endian numbers or a
 * number and a name. */
size_t key_tag_n(uint8_t *k, uint8_t tag, uint64_t a)
{
	k[0] = tag;
	be64_put(k + 1, a);
	return 9;
}

size_t key_tag_nn(uint8_t *k, uint8_t tag, uint64_t a, uint64_t b)
{
	be64_put(k + 9, b);
	return key_tag_n(k, tag, a) + 8;
}

size_t key_tag_name(uint8_t *k, uint8_t tag, uint64_t a, const char *name, size_t nlen)
{
	memcpy(k + 9, name, nlen);
	return key_tag_n(k, tag, a) + nlen;
}

void batch_del_prefix(struct kviter *it, struct kvbatch *b, const uint8_t *pfx,
		      size_t plen)
{
	for (kviter_seek(it, pfx, plen); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const char *key = kviter_key(it, &klen);

		if (klen < plen || memcmp(key, pfx, plen))
			break;
		kvbatch_del(b, key, klen);
	}
}

size_t key_inode(uint8_t *k, uint64_t ino)
{
	return key_tag_n(k, 'I', ino);
}

size_t key_dent(uint8_t *k, uint64_t parent, const char *name, size_t nlen)
{
	return key_tag_name(k, 'D', parent, name, nlen);
}

size_t key_list(uint8_t *k, uint64_t parent, uint64_t cookie)
{
	return key_tag_nn(k, 'E', parent, cookie);
}

size_t key_link(uint8_t *k, uint64_t ino)
{
	return key_tag_n(k, 'L', ino);
}

size_t key_xattr(uint8_t *k, uint64_t ino, const char *name, size_t nlen)
{
	return key_tag_name(k, 'X', ino, name, nlen);
}

size_t key_orphan(uint8_t *k, uint64_t ino)
{
	return key_tag_n(k, 'O', ino);
}

static const char key_ino_next[] = "Mino_next";

#define INODE_REC_SIZE (SDFS_ATTR_SIZE + 8)

int inode_get(struct ns *ns, uint64_t ino, struct inode *in)
{
	uint8_t k[16];
	char *v;
	size_t vlen;
	int ret;

	if (ino == 0)
		return -ENOENT;
	ret = kvdb_get(ns->db, k, key_inode(k, ino), &v, &vlen);
	if (ret)
		return ret;
	if (vlen != INODE_REC_SIZE) {
		log_err("inode %" PRIu64 ": malformed record (%zu bytes)", ino, vlen);
		free(v);
		return -EIO;
	}
	proto_attr_decode((const uint8_t *)v, vlen, &in->a);
	in->next_seq = le64_get((const uint8_t *)v + SDFS_ATTR_SIZE);
	free(v);
	in->chunks = 0;
	if (S_ISREG(in->a.mode) && in->a.layout != SDFS_LAYOUT_VOL)
		in->chunks = in->a.blocks & SPACE_COUNTED ?
			     in->a.blocks & ~SPACE_COUNTED : SPACE_UNKNOWN;
	in->a.blocks = space_blocks(in);
	return 0;
}

void inode_put(struct kvbatch *b, const struct inode *in)
{
	uint8_t k[16], v[INODE_REC_SIZE];
	struct sdfs_attr a = in->a;

	a.blocks = 0;
	if (S_ISREG(a.mode))    /* an older mds ignores it: size / 512 */
		a.blocks = in->chunks == SPACE_UNKNOWN || a.layout == SDFS_LAYOUT_VOL ?
			   (a.size + 511) / 512 : SPACE_COUNTED | in->chunks;
	proto_attr_encode(&a, v);
	le64_put(v + SDFS_ATTR_SIZE, in->next_seq);
	kvbatch_put(b, k, key_inode(k, in->a.ino), v, sizeof(v));
	lease_note_inode(in->a.ino);
}

int dent_get(struct ns *ns, uint64_t parent, const char *name, size_t nlen,
	     struct dent *d)
{
	uint8_t k[NS_KEY_MAX];
	char *v;
	size_t vlen;
	int ret;

	ret = kvdb_get(ns->db, k, key_dent(k, parent, name, nlen), &v, &vlen);
	if (ret)
		return ret;
	if (vlen != 20) {
		log_err("dentry %" PRIu64 "/%.*s: malformed record", parent, (int)nlen, name);
		free(v);
		return -EIO;
	}
	d->ino = le64_get((const uint8_t *)v);
	d->type = le32_get((const uint8_t *)v + 8);
	d->cookie = le64_get((const uint8_t *)v + 12);
	free(v);
	return 0;
}

void dent_add(struct kvbatch *b, struct inode *dir, const char *name, size_t nlen,
	      uint64_t ino, uint32_t type)
{
	uint8_t k[NS_KEY_MAX], v[20], lv[12 + SDFS_NAME_MAX];
	uint64_t cookie = dir->next_seq++;

	le64_put(v, ino);
	le32_put(v + 8, type);
	le64_put(v + 12, cookie);
	kvbatch_put(b, k, key_dent(k, dir->a.ino, name, nlen), v, sizeof(v));
	le64_put(lv, ino);
	le32_put(lv + 8, type);
	memcpy(lv + 12, name, nlen);
	kvbatch_put(b, k, key_list(k, dir->a.ino, cookie), lv, 12 + nlen);
	kcaps_backlink_add(b, ino, dir->a.ino, name, nlen);
	lease_note_entry(dir->a.ino, name, nlen);
}

void dent_del(struct kvbatch *b, uint64_t parent, const char *name, size_t nlen,
	      const struct dent *d)
{
	uint8_t k[NS_KEY_MAX];

	kvbatch_del(b, k, key_dent(k, parent, name, nlen));
	kvbatch_del(b, k, key_list(k, parent, d->cookie));
	kcaps_backlink_del(b, d->ino, parent, name, nlen);
	lease_note_entry(parent, name, nlen);
}

void inode_drop(struct ns *ns, struct kvbatch *b, const struct inode *in)
{
	struct inode gone = *in;
	uint8_t k[16], v[ORPHAN_REC_SIZE];
	(void)ns;

	/* Kept with nlink 0 for a while: a client may still hold it open
	 * (or be opening it right now); purge.c frees it after the grace. */
	gone.a.nlink = 0;
	gone.a.ctime_ns = ns_now();
	inode_put(b, &gone);
	le64_put(v, S_ISREG(in->a.mode) ? in->a.size : 0);
	le32_put(v + 8, in->a.obj_size);
	le64_put(v + 12, (uint64_t)(ns_now() / 1000000));
	kvbatch_put(b, k, key_orphan(k, in->a.ino), v, sizeof(v));
}

int dir_has_entries(struct ns *ns, uint64_t ino)
{
	struct kviter *it = kvdb_iter(ns->db);
	uint8_t pfx[9];
	int ret = 0;

	if (!it)
		return -ENOMEM;
	pfx[0] = 'D';
	be64_put(pfx + 1, ino);
	kviter_seek(it, pfx, 9);
	if (kviter_valid(it)) {
		size_t klen;
		const char *key = kviter_key(it, &klen);

		ret = klen > 9 && memcmp(key, pfx, 9) == 0;
	}
	kviter_free(it);
	return ret;
}

int ino_alloc(struct ns *ns, uint64_t *ino)
{
	int ret = 0;

	pthread_mutex_lock(&ns->ino_lock);
	if (ns->ino_next >= ns->ino_limit) {
		/* Reserve the next range durably before handing any out: a
		 * new active starts above everything reserved. */
		struct kvbatch *b = kvbatch_new();
		uint8_t v[8];
		uint64_t limit = ns->ino_limit + NS_INO_BATCH;

		if (!b) {
			ret = -ENOMEM;
			goto out;
		}
		le64_put(v, limit);
		kvbatch_put(b, key_ino_next, sizeof(key_ino_next) - 1, v, 8);
		ret = ns_commit(ns, b);
		kvbatch_free(b);
		if (ret)
			goto out;
		ns->ino_limit = limit;
	}
	if (ns->ino_next > OID_OWNER_MAX) {
		ret = -ENOSPC;
		goto out;
	}
	*ino = ns->ino_next++;
	atomic_fetch_add(&ns->inodes, 1);
out:
	pthread_mutex_unlock(&ns->ino_lock);
	return ret;
}

static int lock_idx(uint64_t ino)
{
	return (int)((ino * 0x9e3779b97f4a7c15ull) >> 54) & (NS_LOCKS - 1);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

void ns_lock(struct ns *ns, struct lockset *ls, const uint64_t *inos, int n)
{
	int idx[8], m = 0;

	for (int i = 0; i < n && i < 8; i++)
		if (inos[i])
			idx[m++] = lock_idx(inos[i]);
	qsort(idx, (size_t)m, sizeof(int), cmp_int);
	ls->n = 0;
	for (int i = 0; i < m; i++)
		if (i == 0 || idx[i] != idx[i - 1])
			ls->idx[ls->n++] = idx[i];
	for (int i = 0; i < ls->n; i++)
		pthread_mutex_lock(&ns->locks[ls->idx[i]]);
}

void ns_unlock(struct ns *ns, struct lockset *ls)
{
	for (int i = ls->n - 1; i >= 0; i--)
		pthread_mutex_unlock(&ns->locks[ls->idx[i]]);
	ls->n = 0;
}

int ns_commit(struct ns *ns, struct kvbatch *b)
{
	char err[256];
	int ret;

	if (atomic_load(&ns->failed))
		return -EIO;
	ret = kvdb_write(ns->db, b, err, sizeof(err));
	if (ret) {
		if (!atomic_exchange(&ns->failed, 1))
			log_err("database write failed (%s): %s; this mds must step down",
				ret == -EPERM ? "fenced by a newer mds" : "I/O", err);
		return ret == -EPERM ? -EPERM : -EIO;
	}
	return 0;
}

int ns_commit_op(struct ns *ns, const struct sdfs_ns_req *r, struct kvbatch *b,
		 const struct ns_reply *rep)
{
	replycache_record(ns, r, b, rep);
	return ns_commit(ns, b);
}

int name_check(const char *name, size_t len)
{
	if (len == 0)
		return -EINVAL;
	if (len > SDFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	return 0;
}

int name_is_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') ||
	       (len == 2 && name[0] == '.' && name[1] == '.');
}

int ns_failed(struct ns *ns)
{
	return atomic_load(&ns->failed);
}

int reply_attr_f(struct ns_reply *rep, const struct inode *in, uint32_t flags)
{
	struct sdfs_attr a = in->a;

	a.flags = flags;
	a.blocks = space_blocks(in);
	rep->data = malloc(SDFS_ATTR_SIZE);
	if (!rep->data)
		return -ENOMEM;
	proto_attr_encode(&a, rep->data);
	rep->len = SDFS_ATTR_SIZE;
	return 0;
}

int reply_attr(struct ns_reply *rep, const struct inode *in)
{
	return reply_attr_f(rep, in, 0);
}

int reply_attr_ns(struct ns *ns, struct ns_reply *rep, const struct inode *in,
		  uint32_t flags)
{
	struct sdfs_attr a;

	space_attr(ns, in, &a);
	a.flags = flags;
	rep->data = malloc(SDFS_ATTR_SIZE);
	if (!rep->data)
		return -ENOMEM;
	proto_attr_encode(&a, rep->data);
	rep->len = SDFS_ATTR_SIZE;
	return 0;
}

static void kv_log(int level, const char *msg)
{
	sdfs_log(level > LOG_INFO ? LOG_DEBUG : level, "leveldb: %s", msg);
}

/* First open of an empty database: the root directory. */
static int make_root(struct ns *ns)
{
	struct kvbatch *b = kvbatch_new();
	struct inode root = { 0 };
	int64_t now = ns_now();
	uint8_t v[8];
	int ret;

	if (!b)
		return -ENOMEM;
	root.a.ino = SDFS_ROOT_INO;
	root.a.gen = ns->epoch;
	root.a.mode = S_IFDIR | 0755;
	root.a.nlink = 2;
	root.a.parent = SDFS_ROOT_INO;
	root.a.atime_ns = root.a.mtime_ns = root.a.ctime_ns = now;
	root.next_seq = NS_FIRST_COOKIE;
	inode_put(b, &root);
	le64_put(v, NS_INO_BATCH);
	kvbatch_put(b, key_ino_next, sizeof(key_ino_next) - 1, v, 8);
	ret = ns_commit(ns, b);
	kvbatch_free(b);
	if (!ret) {
		ns->ino_next = SDFS_ROOT_INO + 1;
		ns->ino_limit = NS_INO_BATCH;
		log_info("created the root directory of a new filesystem");
	}
	return ret;
}

static uint64_t count_inodes(struct ns *ns)
{
	struct kviter *it = kvdb_iter(ns->db);
	uint64_t n = 0;

	if (!it)
		return 0;
	for (kviter_seek(it, "I", 1); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const char *k = kviter_key(it, &klen);

		if (k[0] != 'I')
			break;
		n++;
	}
	kviter_free(it);
	return n;
}

int ns_open(struct sdfs *s, struct coord *coord, uint64_t epoch, const char *name,
	    struct ns **out, char *err, size_t errlen)
{
	struct objenv_store st;
	struct kvdb_opts opts = { .log = kv_log };
	struct ns *ns;
	char *v;
	size_t vlen;
	int ret;

	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	ns->sdfs = s;
	ns->epoch = epoch;
	snprintf(ns->name, sizeof(ns->name), "%s", name);
	ns->obj_size = sdfs_obj_size(s);
	for (int i = 0; i < NS_LOCKS; i++)
		pthread_mutex_init(&ns->locks[i], NULL);
	pthread_mutex_init(&ns->rename_lock, NULL);
	pthread_mutex_init(&ns->ino_lock, NULL);
	pthread_mutex_init(&ns->statfs_lock, NULL);
	pthread_mutex_init(&ns->cache_lock, NULL);
	pthread_mutex_init(&ns->purge_lock, NULL);
	pthread_cond_init(&ns->purge_cond, NULL);
	ret = replycache_init(ns);
	if (!ret)
		ret = leases_new(&ns->leases);
	if (ret)
		goto fail;

	store_init(&st, s);
	ret = kvdb_open(&st, &opts, &ns->db, err, errlen);
	if (ret)
		goto fail;
	ret = kvdb_get(ns->db, key_ino_next, sizeof(key_ino_next) - 1, &v, &vlen);
	if (ret == -ENOENT) {
		ret = make_root(ns);
	} else if (ret == 0) {
		if (vlen == 8) {
			ns->ino_next = ns->ino_limit = le64_get((const uint8_t *)v);
		} else {
			ret = -EIO;
			snprintf(err, errlen, "malformed inode counter");
		}
		free(v);
	}
	if (!ret)
		ret = kcaps_open(ns);
	if (ret) {
		if (!err[0])
			snprintf(err, errlen, "cannot initialize: %s", strerror(-ret));
		goto fail;
	}
	atomic_store(&ns->inodes, count_inodes(ns));
	ns->active_ms = (int64_t)(ns_now() / 1000000);
	ret = vol_open(ns, coord);
	if (ret) {
		snprintf(err, errlen, "cannot load the volume catalog: %s", strerror(-ret));
		goto fail;
	}
	ret = lock_open(ns, coord);
	if (ret) {
		snprintf(err, errlen, "cannot load the lock table: %s", strerror(-ret));
		goto fail;
	}
	ret = opens_open(ns, coord);
	if (ret) {
		snprintf(err, errlen, "cannot make the open-file table");
		goto fail;
	}
	ret = purge_start(ns);
	if (!ret)
		ret = vol_start(ns);
	if (ret) {
		snprintf(err, errlen, "cannot start background threads");
		goto fail;
	}
	*out = ns;
	return 0;
fail:
	ns_close(ns);
	return ret;
}

void ns_close(struct ns *ns)
{
	if (!ns)
		return;
	purge_stop(ns);
	opens_close(ns);
	lock_close(ns);
	vol_close(ns);
	kvdb_close(ns->db);
	replycache_free(ns);
	leases_free(ns->leases);
	free(ns);
}

static int is_mutation(unsigned op)
{
	switch (op) {
	case SDFS_OP_NS_SETATTR: case SDFS_OP_NS_MKNOD: case SDFS_OP_NS_MKDIR:
	case SDFS_OP_NS_UNLINK: case SDFS_OP_NS_RMDIR: case SDFS_OP_NS_RENAME:
	case SDFS_OP_NS_LINK: case SDFS_OP_NS_SYMLINK: case SDFS_OP_NS_SETXATTR:
	case SDFS_OP_NS_RMXATTR:
		return 1;
	}
	return vol_is_mutation(op) || lock_is_mutation(op);
}

/*
 * Volume ops that change the namespace or a volume: checked before,
 * on the inodes as they are then (vol_ops.c takes its locks later).
 * create and clone make a name: write and search on the directory, and
 * only root gives the new file another owner; snapshot, rollback and
 * deleting a snapshot change the volume: write on its file; a clone
 * reads the source's.
 */
static int vol_may(struct ns *ns, const struct ns_caller *who, unsigned op,
		   const struct sdfs_ns_req *r)
{
	struct inode in, dir;
	int ret;

	switch (op) {
	case SDFS_OP_NS_VOL_CREATE:
	case SDFS_OP_NS_VOL_CLONE:
		ret = inode_get(ns, op == SDFS_OP_NS_VOL_CREATE ? r->ino : r->ino2, &dir);
		if (ret)
			return ret == -ENOENT ? 0 : ret;        /* the op says */
		ret = nsacl_access(ns, who, &dir, PERM_WRITE | PERM_EXEC);
		if (!ret && !perm_is_root(who) &&
		    (r->uid != who->uid || !perm_in_group(who, r->gid)))
			ret = -EPERM;
		if (ret || op == SDFS_OP_NS_VOL_CREATE)
			return ret;
		break;
	case SDFS_OP_NS_VOL_SNAP:
	case SDFS_OP_NS_VOL_ROLLBACK:
	case SDFS_OP_NS_VOL_SNAPDEL:
		break;
	default:
		return 0;
	}
	ret = inode_get(ns, r->ino, &in);
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	return nsacl_access(ns, who, &in, op == SDFS_OP_NS_VOL_CLONE ? PERM_READ
								     : PERM_WRITE);
}

static int exec_mutation(struct ns *ns, const struct ns_caller *who, unsigned op,
			 const struct sdfs_ns_req *r, const char *name, const char *name2,
			 const uint8_t *data, struct kvbatch *b, struct ns_reply *rep)
{
	switch (op) {
	case SDFS_OP_NS_SETATTR: return op_setattr(ns, who, r, data, b, rep);
	case SDFS_OP_NS_MKNOD:
	case SDFS_OP_NS_MKDIR:
	case SDFS_OP_NS_SYMLINK: return op_mknod(ns, who, op, r, name, data, b, rep);
	case SDFS_OP_NS_UNLINK:
	case SDFS_OP_NS_RMDIR: return op_remove(ns, who, op, r, name, b, rep);
	case SDFS_OP_NS_RENAME: return op_rename(ns, who, r, name, name2, b, rep);
	case SDFS_OP_NS_LINK: return op_link(ns, who, r, name2, b, rep);
	case SDFS_OP_NS_SETXATTR: return op_setxattr(ns, who, r, name, data, b);
	case SDFS_OP_NS_RMXATTR: return op_rmxattr(ns, who, r, name, b);
	}
	if (vol_is_op(op)) {
		int ret = vol_may(ns, who, op, r);

		return ret ? ret : vol_exec(ns, op, r, name, name2, b, rep);
	}
	if (lock_is_op(op))
		return lock_exec(ns, op, r, data, b, rep);
	return -EOPNOTSUPP;
}

/*
 * The leases a mutation's reply gives its client (lease.h): before it
 * runs, on what the request names (@rep NULL); after, on the inode a
 * create made (its attributes are in @rep).
 */
static void grant_mutation(struct ns *ns, unsigned op, const struct sdfs_ns_req *r,
			   const char *name, const char *name2, const struct ns_reply *rep)
{
	struct leases *l = ns->leases;
	struct sdfs_attr a;

	switch (op) {
	case SDFS_OP_NS_MKNOD: case SDFS_OP_NS_MKDIR: case SDFS_OP_NS_SYMLINK:
		if (!rep)
			lease_grant_entry(l, r->client_id, r->ino, name, r->name_len);
		else if (rep->data && proto_attr_decode(rep->data, rep->len, &a) == 0)
			lease_grant_inode(l, r->client_id, a.ino);
		break;
	case SDFS_OP_NS_LINK:
		if (!rep) {
			lease_grant_entry(l, r->client_id, r->ino2, name2, r->name2_len);
			lease_grant_inode(l, r->client_id, r->ino);
		}
		break;
	case SDFS_OP_NS_SETATTR:
		if (!rep)
			lease_grant_inode(l, r->client_id, r->ino);
		break;
	case SDFS_OP_NS_RENAME:
		if (!rep)
			lease_grant_entry(l, r->client_id, r->ino2, name2, r->name2_len);
		break;
	}
}

struct leases *ns_leases(struct ns *ns)
{
	return ns->leases;
}

static int exec_op(struct ns *ns, const struct ns_caller *who, unsigned op,
		   const struct sdfs_ns_req *req, const char *name, const char *name2,
		   const uint8_t *data, struct ns_reply *rep)
{
	struct kvbatch *b;
	int ret;

	memset(rep, 0, sizeof(*rep));
	atomic_fetch_add(&ns->ops, 1);
	if (!is_mutation(op)) {
		switch (op) {
		case SDFS_OP_NS_LOOKUP: return op_lookup(ns, who, req, name, rep);
		case SDFS_OP_NS_GETATTR: return op_getattr(ns, who, req, rep);
		case SDFS_OP_NS_READLINK: return op_readlink(ns, req, rep);
		case SDFS_OP_NS_READDIR: return op_readdir(ns, who, req, rep);
		case SDFS_OP_NS_STATFS: return op_statfs(ns, req, rep);
		case SDFS_OP_NS_GETXATTR: return op_getxattr(ns, who, req, name, rep);
		case SDFS_OP_NS_LISTXATTR: return op_listxattr(ns, who, req, rep);
		case SDFS_OP_NS_INFO: return op_info(ns, rep);
		case SDFS_OP_NS_OBJCAP: return op_objcap(ns, who, req, rep);
		}
		if (vol_is_op(op))
			return vol_exec(ns, op, req, name, name2, NULL, rep);
		if (op == SDFS_OP_NS_LOCK_GET)
			return lock_exec(ns, op, req, data, NULL, rep);
		if (op == SDFS_OP_NS_OPEN)
			return opens_exec(ns, req, data);
		return -EOPNOTSUPP;
	}
	if (ns_failed(ns))
		return -EIO;
	ret = replycache_begin(ns, req, rep);
	if (ret)
		return ret < 0 ? ret : 0;       /* answered before */
	b = kvbatch_new();
	if (!b) {
		replycache_end(ns, req);
		return -ENOMEM;
	}
	/* The op commits the batch itself, under its locks, after adding
	 * the reply record (replycache_record) to it. What it changed is
	 * noted on the way (inode_put, dent_add, dent_del) and pushed to
	 * the clients caching it once it is durable, before the reply. */
	ns_handover_wait(ns);
	grant_mutation(ns, op, req, name, name2, NULL);
	lease_collect_begin();
	ret = exec_mutation(ns, who, op, req, name, name2, data, b, rep);
	lease_collect_end(ns->leases, req->client_id, ret == 0);
	if (ret == 0)
		grant_mutation(ns, op, req, name, name2, rep);
	kvbatch_free(b);
	replycache_end(ns, req);
	if (ret) {
		free(rep->data);
		memset(rep, 0, sizeof(*rep));
	}
	return ret;
}

/* The key's caps (kcaps.h) wrap every request: what it may name, and
 * how its reply shows the key's subtree and ids. A regular file's
 * attributes come with its object capability when the client asks
 * (SDFS_NS_WANT_CAP, ns_objcap.c; signed for the real inode, before
 * kcaps_leave shows the reply as the key sees it): no round trip more
 * before its data. */
int ns_exec(struct ns *ns, const struct ns_caller *who, unsigned op,
	    const struct sdfs_ns_req *req, const char *name, const char *name2,
	    const uint8_t *data, struct ns_reply *rep)
{
	struct kcaps_req kr;
	int ret;

	memset(rep, 0, sizeof(*rep));
	ret = kcaps_enter(ns, who, op, req, name, &kr);
	if (ret)
		return ret;
	ret = exec_op(ns, who, op, kr.req, kr.name, name2, data, rep);
	if (ret == 0 && (req->flags & SDFS_NS_WANT_CAP))
		ns_objcap_attach(ns, who, op, rep);
	return kcaps_leave(&kr, op, ret, rep);
}
