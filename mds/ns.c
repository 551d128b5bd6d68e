/*
 * ns.c - the namespace's frame: opening and closing it, the per-inode
 * locks, and dispatch: a table from opcode to operation, and what every
 * mutation goes through around it (ns.h, ns_int.h). The records the
 * operations read and write are records.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/proto.h"
#include "mds/kcaps.h"
#include "mds/lease.h"
#include "mds/lock.h"
#include "mds/ns_int.h"
#include "mds/opens.h"
#include "mds/perm.h"
#include "mds/records.h"
#include "mds/store.h"
#include "mds/vol.h"

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

int ns_failed(struct ns *ns)
{
	return atomic_load(&ns->failed);
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
	uint8_t k[16], v[8];
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
	kvbatch_put(b, k, key_ino_next(k), v, 8);
	ret = ns_commit(ns, b);
	kvbatch_free(b);
	if (!ret) {
		ns->ino_next = SDFS_ROOT_INO + 1;
		ns->ino_limit = NS_INO_BATCH;
		log_info("created the root directory of a new filesystem");
	}
	return ret;
}

int ns_open(struct sdfs *s, struct coord *coord, uint64_t epoch, const char *name,
	    struct ns **out, char *err, size_t errlen)
{
	struct objenv_store st;
	struct kvdb_opts opts = { .log = kv_log };
	struct ns *ns;
	uint8_t k[16];
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
	pthread_mutex_init(&ns->ecfile_lock, NULL);
	pthread_cond_init(&ns->ecfile_cond, NULL);
	ret = replycache_init(ns);
	if (!ret)
		ret = leases_new(&ns->leases);
	if (ret)
		goto fail;

	store_init(&st, s);
	ret = kvdb_open(&st, &opts, &ns->db, err, errlen);
	if (ret)
		goto fail;
	ret = kvdb_get(ns->db, k, key_ino_next(k), &v, &vlen);
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
	atomic_store(&ns->inodes, inode_count(ns));
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
		ret = ecfile_start(ns);
	if (!ret)
		ret = vol_start(ns);
	if (!ret)
		ret = commit_start(ns);
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
	commit_stop(ns);
	ecfile_stop(ns);
	purge_stop(ns);
	opens_close(ns);
	lock_close(ns);
	vol_close(ns);
	kvdb_close(ns->db);
	replycache_free(ns);
	leases_free(ns->leases);
	free(ns);
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

/*
 * The dispatch table: one row an opcode, a handler taking the call's
 * arguments, and whether the op changes the database (then exec_op
 * brackets it: reply cache, batch, handover, leases). An opcode
 * without a row is not an NS op here (-EOPNOTSUPP; server.c answers
 * SUBSCRIBE itself).
 */
struct ns_call {
	struct ns *ns;
	const struct ns_caller *who;
	unsigned op;
	const struct sdfs_ns_req *req;
	const char *name, *name2;
	const uint8_t *data;
	struct kvbatch *b;              /* a mutation's; NULL otherwise */
	struct ns_reply *rep;
};

typedef int (*ns_op_fn)(const struct ns_call *c);

struct op_desc {
	ns_op_fn fn;
	int mutates;
};

static int call_lookup(const struct ns_call *c)
{
	return op_lookup(c->ns, c->who, c->req, c->name, c->rep);
}

static int call_getattr(const struct ns_call *c)
{
	return op_getattr(c->ns, c->who, c->req, c->rep);
}

static int call_setattr(const struct ns_call *c)
{
	return op_setattr(c->ns, c->who, c->req, c->data, c->b, c->rep);
}

static int call_mknod(const struct ns_call *c)     /* MKNOD, MKDIR, SYMLINK */
{
	return op_mknod(c->ns, c->who, c->op, c->req, c->name, c->data, c->b, c->rep);
}

static int call_remove(const struct ns_call *c)    /* UNLINK, RMDIR */
{
	return op_remove(c->ns, c->who, c->op, c->req, c->name, c->b, c->rep);
}

static int call_rename(const struct ns_call *c)
{
	return op_rename(c->ns, c->who, c->req, c->name, c->name2, c->b, c->rep);
}

static int call_link(const struct ns_call *c)
{
	return op_link(c->ns, c->who, c->req, c->name2, c->b, c->rep);
}

static int call_readlink(const struct ns_call *c)
{
	return op_readlink(c->ns, c->req, c->rep);
}

static int call_readdir(const struct ns_call *c)
{
	return op_readdir(c->ns, c->who, c->req, c->rep);
}

static int call_statfs(const struct ns_call *c)
{
	return op_statfs(c->ns, c->req, c->rep);
}

static int call_getxattr(const struct ns_call *c)
{
	return op_getxattr(c->ns, c->who, c->req, c->name, c->rep);
}

static int call_setxattr(const struct ns_call *c)
{
	return op_setxattr(c->ns, c->who, c->req, c->name, c->data, c->b);
}

static int call_listxattr(const struct ns_call *c)
{
	return op_listxattr(c->ns, c->who, c->req, c->rep);
}

static int call_rmxattr(const struct ns_call *c)
{
	return op_rmxattr(c->ns, c->who, c->req, c->name, c->b);
}

static int call_info(const struct ns_call *c)
{
	return op_info(c->ns, c->rep);
}

static int call_objcap(const struct ns_call *c)
{
	return op_objcap(c->ns, c->who, c->req, c->rep);
}

static int call_sync(const struct ns_call *c)
{
	return ns_sync(c->ns);
}

/* A WRITEBACK mark ends the other clients' leases on the inodes first
 * (their next open asks, and sees SDFS_ATTR_F_WRITEBACK), as a change
 * to them would. */
static int call_open(const struct ns_call *c)
{
	const struct sdfs_ns_req *r = c->req;
	int wb = (r->flags & SDFS_NS_OPEN_WRITEBACK) != 0;
	int ret;

	/* 2.6: before a holder's first write to an EC file (docs/ec.md) */
	if (r->flags == SDFS_NS_OPEN_UNSEAL)
		return r->ino ? ecfile_unseal(c->ns, r->ino) : -EINVAL;
	if (!wb)
		return opens_exec(c->ns, r, c->data);
	lease_collect_begin();
	ret = opens_exec(c->ns, r, c->data);
	if (!ret) {
		if (r->ino)
			lease_note_inode(r->ino);
		for (size_t i = 0; i < r->data_len / 8; i++)
			lease_note_inode(le64_get(c->data + 8 * i));
	}
	lease_collect_end(c->ns->leases, r->client_id, ret == 0);
	return ret;
}

/* Every NS_VOL_* op; vol_may passes the ops that change nothing. */
static int call_vol(const struct ns_call *c)
{
	int ret = vol_may(c->ns, c->who, c->op, c->req);

	return ret ? ret : vol_exec(c->ns, c->op, c->req, c->name, c->name2, c->b, c->rep);
}

static int call_lock(const struct ns_call *c)      /* every NS_LOCK_* op */
{
	return lock_exec(c->ns, c->op, c->req, c->data, c->b, c->rep);
}

static const struct op_desc ops[SDFS_OP_MAX] = {
	[SDFS_OP_NS_LOOKUP]    = { call_lookup,    0 },
	[SDFS_OP_NS_GETATTR]   = { call_getattr,   0 },
	[SDFS_OP_NS_SETATTR]   = { call_setattr,   1 },
	[SDFS_OP_NS_MKNOD]     = { call_mknod,     1 },
	[SDFS_OP_NS_MKDIR]     = { call_mknod,     1 },
	[SDFS_OP_NS_UNLINK]    = { call_remove,    1 },
	[SDFS_OP_NS_RMDIR]     = { call_remove,    1 },
	[SDFS_OP_NS_RENAME]    = { call_rename,    1 },
	[SDFS_OP_NS_LINK]      = { call_link,      1 },
	[SDFS_OP_NS_SYMLINK]   = { call_mknod,     1 },
	[SDFS_OP_NS_READLINK]  = { call_readlink,  0 },
	[SDFS_OP_NS_READDIR]   = { call_readdir,   0 },
	[SDFS_OP_NS_STATFS]    = { call_statfs,    0 },
	[SDFS_OP_NS_GETXATTR]  = { call_getxattr,  0 },
	[SDFS_OP_NS_SETXATTR]  = { call_setxattr,  1 },
	[SDFS_OP_NS_LISTXATTR] = { call_listxattr, 0 },
	[SDFS_OP_NS_RMXATTR]   = { call_rmxattr,   1 },
	[SDFS_OP_NS_INFO]      = { call_info,      0 },
	[SDFS_OP_NS_VOL_CREATE]   = { call_vol,    1 },
	[SDFS_OP_NS_VOL_INFO]     = { call_vol,    0 },
	[SDFS_OP_NS_VOL_SNAP]     = { call_vol,    1 },
	[SDFS_OP_NS_VOL_SNAPLIST] = { call_vol,    0 },
	[SDFS_OP_NS_VOL_SNAPDEL]  = { call_vol,    1 },
	[SDFS_OP_NS_VOL_ROLLBACK] = { call_vol,    1 },
	[SDFS_OP_NS_VOL_CLONE]    = { call_vol,    1 },
	[SDFS_OP_NS_VOL_TREE]     = { call_vol,    0 },
	[SDFS_OP_NS_VOL_RECLAIM]  = { call_vol,    0 },
	[SDFS_OP_NS_LOCK_SET]     = { call_lock,   1 },
	[SDFS_OP_NS_LOCK_GET]     = { call_lock,   0 },
	[SDFS_OP_NS_LOCK_UNLOCK]  = { call_lock,   1 },
	[SDFS_OP_NS_LOCK_RELEASE] = { call_lock,   1 },
	[SDFS_OP_NS_OPEN]      = { call_open,      0 },
	[SDFS_OP_NS_OBJCAP]    = { call_objcap,    0 },
	[SDFS_OP_NS_SYNC]      = { call_sync,      0 },
};

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
	struct ns_call c = { .ns = ns, .who = who, .op = op, .req = req, .name = name,
			     .name2 = name2, .data = data, .rep = rep };
	const struct op_desc *d = op < SDFS_OP_MAX ? &ops[op] : NULL;
	int ret;

	memset(rep, 0, sizeof(*rep));
	atomic_fetch_add(&ns->ops, 1);
	if (!d || !d->fn)
		return -EOPNOTSUPP;
	if (!d->mutates)
		return d->fn(&c);
	if (ns_failed(ns))
		return -EIO;
	ret = replycache_begin(ns, req, rep);
	if (ret)
		return ret < 0 ? ret : 0;       /* answered before */
	c.b = kvbatch_new();
	if (!c.b) {
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
	ret = d->fn(&c);
	lease_collect_end(ns->leases, req->client_id, ret == 0);
	if (ret == 0)
		grant_mutation(ns, op, req, name, name2, rep);
	kvbatch_free(c.b);
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
	ret = kcaps_leave(&kr, op, ret, rep);
	/* Nothing leaves before what it could show is in every replica
	 * (commit.c); a mutation settles here, after its locks went. */
	int durable = !ret && op == SDFS_OP_NS_SETATTR && (req->flags & SDFS_NS_DURABLE);
	/* SDFS_NS_DURABLE: durable, not only settled (a replay too: the
	 * first try's sync may not have happened), by one synced write
	 * of the log's tail where a settle and a flush would be two */
	int lost = (durable ? ns_sync(ns) : ns_settle(ns)) != 0;

	if (lost && !ret) {
		free(rep->data);
		memset(rep, 0, sizeof(*rep));
		ret = -EIO;
	}
	return ret;
}
