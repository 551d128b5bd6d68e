/*
 * ns.c - the namespace calls of sdfs.h over nsclient_call, and
 * sdfs_mds_status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/coord_mds.h"
#include "common/objcap.h"
#include "common/oid.h"
#include "common/policy.h"
#include "common/proto.h"
#include "libclient/client.h"
#include "libclient/ns_int.h"

_Static_assert(SDFS_RENAME_HIDE == SDFS_NS_RENAME_HIDE, "sdfs.h and the wire agree");

void ns_stat_from_attr(struct sdfs_stat *st, const struct sdfs_attr *a)
{
	st->ino = a->ino;
	st->gen = a->gen;
	st->size = a->size;
	st->blocks = a->blocks;
	st->atime_ns = a->atime_ns;
	st->mtime_ns = a->mtime_ns;
	st->ctime_ns = a->ctime_ns;
	st->parent = a->parent;
	st->mode = a->mode;
	st->nlink = a->nlink;
	st->uid = a->uid;
	st->gid = a->gid;
	st->rdev = a->rdev;
	st->obj_size = a->obj_size;
	st->copies = a->copies;
	st->layout = a->layout;
	st->flags = (a->flags & SDFS_ATTR_F_LEASED ? SDFS_STAT_LEASED : 0) |
		    (a->flags & SDFS_ATTR_F_LISTING ? SDFS_STAT_LISTING : 0) |
		    (a->flags & SDFS_ATTR_F_HELD ? SDFS_STAT_HELD : 0) |
		    (a->flags & SDFS_ATTR_F_WRITEBACK ? SDFS_STAT_WRITEBACK : 0);
}

int ns_name_len(const char *name, uint16_t *len)
{
	size_t n = name ? strlen(name) : 0;

	if (n > SDFS_NAME_MAX)
		return -ENAMETOOLONG;
	*len = (uint16_t)n;
	return 0;
}

int ns_call_one(struct sdfs *s, unsigned op, struct sdfs_ns_req *req,
		const char *name, const char *name2, const void *data,
		ns_decode_fn dec, void *out)
{
	struct sdfs_hdr reply;
	uint8_t *rep = NULL;
	uint32_t len = 0;
	int ret;

	ret = nsclient_call(s, op, req, name, name2, data, &reply, &rep, &len, 0);
	if (ret)
		return ret;
	if (out && (!rep || dec(rep, len, out)))
		ret = -EPROTO;
	free(rep);
	return ret;
}

static int dec_attr(const uint8_t *in, uint32_t len, void *out)
{
	struct sdfs_attr a;
	int ret = proto_attr_decode(in, len, &a);

	if (!ret)
		ns_stat_from_attr(out, &a);
	return ret;
}

void sdfs_ns_on_attrs(struct sdfs *s, sdfs_attrs_fn fn, void *arg)
{
	s->attrs_arg = arg;
	s->attrs_fn = fn;
}

/* The changes whose replies can carry other inodes' attributes. */
static int has_more_attrs(unsigned op)
{
	switch (op) {
	case SDFS_OP_NS_MKNOD: case SDFS_OP_NS_MKDIR: case SDFS_OP_NS_SYMLINK:
	case SDFS_OP_NS_LINK: case SDFS_OP_NS_UNLINK: case SDFS_OP_NS_RMDIR:
	case SDFS_OP_NS_RENAME:
		return 1;
	}
	return 0;
}

/* SDFS_NS_WANT_ATTRS: the attributes after the body, to sdfs_ns_on_attrs's
 * fn (a short one is dropped: the change itself was made). */
static void more_attrs(struct sdfs *s, const uint8_t *p, uint32_t len)
{
	for (uint32_t off = 0; len - off >= SDFS_ATTR_SIZE; off += SDFS_ATTR_SIZE) {
		struct sdfs_stat st;

		if (dec_attr(p + off, SDFS_ATTR_SIZE, &st) == 0)
			s->attrs_fn(s->attrs_arg, &st);
	}
}

/*
 * With object caps on (capcache.c), a regular file's LOOKUP, GETATTR
 * and MKNOD bring its cap along: kept for its first data op. With
 * sdfs_ns_on_attrs, a change's reply brings the other inodes it changed
 * (SDFS_NS_WANT_ATTRS). Replies: [attr [cap]] [attrs...], the body
 * (an attr) only when @st wants one.
 */
int ns_call_attr(struct sdfs *s, unsigned op, struct sdfs_ns_req *req,
		 const char *name, const char *name2, const void *data,
		 struct sdfs_stat *st)
{
	int want_cap = atomic_load(&s->caps_needed) && (op == SDFS_OP_NS_LOOKUP ||
		       op == SDFS_OP_NS_GETATTR || op == SDFS_OP_NS_MKNOD);
	unsigned gen = atomic_load(&s->mds_gen);
	int want_attrs = s->attrs_fn && has_more_attrs(op) &&
			 !(op == SDFS_OP_NS_RENAME && atomic_load(&s->attrs_refused) == gen + 1);
	struct sdfs_hdr reply;
	uint8_t *rep = NULL;
	uint32_t len = 0, body;
	int ret;

	if (!want_cap && !want_attrs)
		return ns_call_one(s, op, req, name, name2, data, dec_attr, st);
	if (want_cap)
		req->flags |= SDFS_NS_WANT_CAP;
	if (want_attrs)
		req->flags |= SDFS_NS_WANT_ATTRS;
	ret = nsclient_call(s, op, req, name, name2, data, &reply, &rep, &len, 0);
	if (ret == -EINVAL && want_attrs && op == SDFS_OP_NS_RENAME) {
		/* an mds before 2.1 refuses flags it does not know */
		req->flags &= ~SDFS_NS_WANT_ATTRS;
		want_attrs = 0;
		free(rep);
		rep = NULL;
		ret = nsclient_call(s, op, req, name, name2, data, &reply, &rep, &len, 0);
		if (ret != -EINVAL)     /* it was the flag: not again with this active */
			atomic_store(&s->attrs_refused, gen + 1);
	}
	if (ret)
		return ret;
	body = st ? SDFS_ATTR_SIZE : 0;
	if (st && len >= body && (len - body) % SDFS_ATTR_SIZE == OBJCAP_WIRE_SIZE) {
		capcache_put(s, rep + SDFS_ATTR_SIZE);
		body += OBJCAP_WIRE_SIZE;
	}
	if (st && (!rep || len < body || dec_attr(rep, len, st)))
		ret = -EPROTO;
	else if (want_attrs && len > body)
		more_attrs(s, rep + body, len - body);
	free(rep);
	return ret;
}

int sdfs_ns_lookup(struct sdfs *s, uint64_t dir, const char *name, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = dir };
	int ret = ns_name_len(name, &r.name_len);

	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_LOOKUP, &r, name, NULL, NULL, st);
}

int sdfs_ns_getattr(struct sdfs *s, uint64_t ino, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = ino };

	return ns_call_attr(s, SDFS_OP_NS_GETATTR, &r, NULL, NULL, NULL, st);
}

int sdfs_ns_access(struct sdfs *s, uint64_t ino, int mask, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = ino, .flags = (uint32_t)mask & SDFS_NS_MAY_MASK };

	if (mask & ~7)
		return -EINVAL;
	return ns_call_attr(s, SDFS_OP_NS_GETATTR, &r, NULL, NULL, NULL, st);
}

static_assert(SDFS_SETATTR_DURABLE == SDFS_NS_DURABLE, "durable flag");

/* A SETATTR; SDFS_NS_DURABLE syncs what this handle changed before it
 * too (sdfs_ns_sync's flag, cleared first as there; nsclient.c leaves
 * it clear after the answer). An mds from before the flag refuses it
 * (EINVAL, an unknown mask bit): then the SETATTR again without it, and
 * an NS_SYNC. */
static int setattr_call(struct sdfs *s, struct sdfs_ns_req *r, const void *data,
			struct sdfs_stat *st)
{
	int durable = (r->flags & SDFS_NS_DURABLE) != 0, ret;

	if (durable)
		atomic_store(&s->ns_changed, 0);
	ret = ns_call_attr(s, SDFS_OP_NS_SETATTR, r, NULL, NULL, data, st);
	if (ret && durable)
		atomic_store(&s->ns_changed, 1);
	if (ret == -EINVAL && durable) {
		r->flags &= ~SDFS_NS_DURABLE;
		ret = ns_call_attr(s, SDFS_OP_NS_SETATTR, r, NULL, NULL, data, st);
		if (!ret)
			ret = sdfs_ns_sync(s);
	}
	return ret;
}

int sdfs_ns_setattr(struct sdfs *s, uint64_t ino, const struct sdfs_setattr *sa,
		    struct sdfs_stat *st)
{
	struct sdfs_ns_req r = {
		.ino = ino, .flags = sa->mask, .mode = sa->mode, .uid = sa->uid,
		.gid = sa->gid, .arg = sa->size, .atime_ns = sa->atime_ns,
		.mtime_ns = sa->mtime_ns,
	};

	return setattr_call(s, &r, NULL, st);
}

int sdfs_ns_setpolicy(struct sdfs *s, uint64_t ino, unsigned copies, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = ino, .flags = SDFS_SET_COPIES, .max = copies };

	if (!policy_valid(copies))
		return -EINVAL;
	return setattr_call(s, &r, NULL, st);
}

static_assert(SDFS_XATTR_KILL_SGID == SDFS_NS_XATTR_KILL_SGID, "same flag");

/* SDFS_MODE_UMASK in @mode travels as SDFS_NS_UMASK in the flags. */
static void mode_umask(struct sdfs_ns_req *r, uint32_t mode)
{
	r->mode = mode & (S_IFMT | 07777);
	if (mode & SDFS_MODE_UMASK_SET)
		r->flags = SDFS_NS_UMASK | ((mode >> 16) & 0777u);
}

static_assert(SDFS_CHUNK_GONE == SDFS_NS_CHUNK_GONE, "chunk gone bit");
static_assert(SDFS_CHUNKS_MAX == SDFS_NS_CHUNKS_MAX, "chunks in a report");

int sdfs_ns_setattr_chunks(struct sdfs *s, uint64_t ino, const struct sdfs_setattr *sa,
			   const uint64_t *chunks, size_t n, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = {
		.ino = ino, .flags = sa->mask, .mode = sa->mode, .uid = sa->uid,
		.gid = sa->gid, .arg = sa->size, .atime_ns = sa->atime_ns,
		.mtime_ns = sa->mtime_ns,
	};
	uint8_t *d;
	int ret;

	if (n > SDFS_CHUNKS_MAX)
		return -EINVAL;
	d = malloc(SDFS_NS_CHUNKS_HDR + 8 * n);
	if (!d)
		return -ENOMEM;
	proto_ns_chunks_encode(chunks, (uint32_t)n, d);
	r.data_len = (uint32_t)(SDFS_NS_CHUNKS_HDR + 8 * n);
	ret = setattr_call(s, &r, d, st);
	free(d);
	return ret;
}

int sdfs_ns_mknod(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t rdev, uint32_t uid, uint32_t gid, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = dir, .rdev = rdev, .uid = uid, .gid = gid };
	int ret = ns_name_len(name, &r.name_len);

	mode_umask(&r, mode);

	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_MKNOD, &r, name, NULL, NULL, st);
}

int ns_mknod_held(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, uint64_t id, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = dir, .uid = uid, .gid = gid, .arg = id };
	int ret = ns_name_len(name, &r.name_len);

	mode_umask(&r, (mode & ~(uint32_t)S_IFMT) | S_IFREG);
	r.flags |= SDFS_NS_HOLD;
	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_MKNOD, &r, name, NULL, NULL, st);
}

int sdfs_ns_mkdir(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = dir, .uid = uid, .gid = gid };
	int ret = ns_name_len(name, &r.name_len);

	mode_umask(&r, mode);
	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_MKDIR, &r, name, NULL, NULL, st);
}

int sdfs_ns_unlink(struct sdfs *s, uint64_t dir, const char *name)
{
	struct sdfs_ns_req r = { .ino = dir };
	int ret = ns_name_len(name, &r.name_len);

	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_UNLINK, &r, name, NULL, NULL, NULL);
}

int sdfs_ns_rmdir(struct sdfs *s, uint64_t dir, const char *name)
{
	struct sdfs_ns_req r = { .ino = dir };
	int ret = ns_name_len(name, &r.name_len);

	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_RMDIR, &r, name, NULL, NULL, NULL);
}

int sdfs_ns_rename(struct sdfs *s, uint64_t dir, const char *name,
		   uint64_t newdir, const char *newname, unsigned flags)
{
	struct sdfs_ns_req r = { .ino = dir, .ino2 = newdir, .flags = flags };
	int ret = ns_name_len(name, &r.name_len);

	if (!ret)
		ret = ns_name_len(newname, &r.name2_len);
	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_RENAME, &r, name, newname, NULL, NULL);
}

int sdfs_ns_link(struct sdfs *s, uint64_t ino, uint64_t newdir, const char *newname,
		 struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = ino, .ino2 = newdir };
	int ret = ns_name_len(newname, &r.name2_len);

	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_LINK, &r, NULL, newname, NULL, st);
}

int sdfs_ns_symlink(struct sdfs *s, uint64_t dir, const char *name, const char *target,
		    uint32_t uid, uint32_t gid, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = dir, .uid = uid, .gid = gid };
	size_t tlen = target ? strlen(target) : 0;
	int ret = ns_name_len(name, &r.name_len);

	if (tlen > SDFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	r.data_len = (uint32_t)tlen;
	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_SYMLINK, &r, name, NULL, target, st);
}

ssize_t sdfs_ns_readlink(struct sdfs *s, uint64_t ino, char *buf, size_t len)
{
	struct sdfs_ns_req r = { .ino = ino };
	struct sdfs_hdr reply;
	uint8_t *rep = NULL;
	uint32_t n = 0;
	int ret;

	ret = nsclient_call(s, SDFS_OP_NS_READLINK, &r, NULL, NULL, NULL, &reply, &rep, &n, 0);
	if (ret)
		return ret;
	memcpy(buf, rep, n < len ? n : len);
	free(rep);
	return n;
}

int sdfs_ns_readdir(struct sdfs *s, uint64_t dir, uint64_t cookie, int plus,
		    sdfs_dirent_fn fn, void *arg)
{
	for (;;) {
		struct sdfs_ns_req r = { .ino = dir, .arg = cookie,
					 .flags = plus ? SDFS_NS_PLUS : 0,
					 .max = 64u << 10 };
		struct sdfs_hdr reply;
		uint8_t *rep = NULL;
		uint32_t len = 0, off = 0;
		int ret, stop = 0;

		ret = nsclient_call(s, SDFS_OP_NS_READDIR, &r, NULL, NULL, NULL,
				    &reply, &rep, &len, 0);
		if (ret)
			return ret;
		while (off < len && !stop) {
			struct sdfs_dirent d;
			struct sdfs_attr a;
			struct sdfs_stat st;
			const char *nm;
			char name[SDFS_NAME_MAX + 1];
			ssize_t used = proto_dirent_decode(rep + off, len - off, plus,
							   &d, &nm, &a);

			if (used < 0) {
				free(rep);
				return -EPROTO;
			}
			memcpy(name, nm, d.name_len);
			name[d.name_len] = '\0';
			if (plus)
				ns_stat_from_attr(&st, &a);
			cookie = d.cookie;
			stop = fn(arg, name, d.ino, d.type, d.cookie, plus ? &st : NULL);
			off += (uint32_t)used;
		}
		free(rep);
		if (stop || !(reply.flags & SDFS_F_MORE))
			return 0;
	}
}

static int dec_statfs(const uint8_t *in, uint32_t len, void *out)
{
	struct sdfs_statfs *st = out;
	struct sdfs_ns_statfs sf;
	int ret = proto_ns_statfs_decode(in, len, &sf);

	if (ret)
		return ret;
	st->bytes_total = sf.bytes_total;
	st->bytes_free = sf.bytes_free;
	st->bytes_avail = sf.bytes_avail;
	st->files = sf.files;
	st->files_free = sf.files_free;
	st->bsize = sf.bsize;
	st->name_max = sf.name_max;
	return 0;
}

int sdfs_ns_sync(struct sdfs *s)
{
	struct sdfs_ns_req r = { 0 };
	int ret;

	if (!atomic_exchange(&s->ns_changed, 0))
		return 0;
	ret = ns_call_one(s, SDFS_OP_NS_SYNC, &r, NULL, NULL, NULL, NULL, NULL);
	if (ret)
		atomic_store(&s->ns_changed, 1);
	return ret;
}

int sdfs_ns_sync_all(struct sdfs *s)
{
	atomic_store(&s->ns_changed, 1);
	return sdfs_ns_sync(s);
}

int sdfs_ns_statfs(struct sdfs *s, struct sdfs_statfs *st)
{
	struct sdfs_ns_req r = { .flags = SDFS_NS_STATFS_AVAIL };

	return ns_call_one(s, SDFS_OP_NS_STATFS, &r, NULL, NULL, NULL, dec_statfs, st);
}

static int xname_len(const char *name, uint16_t *len)
{
	size_t n = name ? strlen(name) : 0;

	if (n > SDFS_XATTR_NAME_MAX)
		return -ERANGE;
	*len = (uint16_t)n;
	return 0;
}

/* get/list: with @len 0 the size, else the bytes. */
static ssize_t xattr_read(struct sdfs *s, unsigned op, uint64_t ino, const char *name,
			  void *buf, size_t len)
{
	struct sdfs_ns_req r = { .ino = ino,
				 .max = len > SDFS_XATTR_SIZE_MAX * 2 ?
					SDFS_XATTR_SIZE_MAX * 2 : (uint32_t)len };
	struct sdfs_hdr reply;
	uint8_t *rep = NULL;
	uint32_t n = 0;
	int ret = name ? xname_len(name, &r.name_len) : 0;

	if (ret)
		return ret;
	ret = nsclient_call(s, op, &r, name, NULL, NULL, &reply, &rep, &n, 0);
	if (ret)
		return ret;
	if (len == 0) {
		free(rep);
		return reply.length;
	}
	if (n > len) {
		free(rep);
		return -ERANGE;
	}
	if (n)
		memcpy(buf, rep, n);
	free(rep);
	return n;
}

ssize_t sdfs_ns_getxattr(struct sdfs *s, uint64_t ino, const char *name,
			 void *buf, size_t len)
{
	return xattr_read(s, SDFS_OP_NS_GETXATTR, ino, name, buf, len);
}

ssize_t sdfs_ns_listxattr(struct sdfs *s, uint64_t ino, char *buf, size_t len)
{
	return xattr_read(s, SDFS_OP_NS_LISTXATTR, ino, NULL, buf, len);
}

int sdfs_ns_setxattr(struct sdfs *s, uint64_t ino, const char *name,
		     const void *val, size_t len, int flags)
{
	struct sdfs_ns_req r = { .ino = ino, .flags = (uint32_t)flags };
	int ret = xname_len(name, &r.name_len);

	if (ret)
		return ret;
	if (len > SDFS_XATTR_SIZE_MAX)
		return -E2BIG;
	r.data_len = (uint32_t)len;
	return ns_call_attr(s, SDFS_OP_NS_SETXATTR, &r, name, NULL, val, NULL);
}

int sdfs_ns_removexattr(struct sdfs *s, uint64_t ino, const char *name)
{
	struct sdfs_ns_req r = { .ino = ino };
	int ret = xname_len(name, &r.name_len);

	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_RMXATTR, &r, name, NULL, NULL, NULL);
}

#define SYMLOOP_MAX_ 40

int sdfs_ns_resolve(struct sdfs *s, const char *path, int follow, struct sdfs_stat *st)
{
	struct sdfs_stat cur, next;
	char *work, comp[SDFS_NAME_MAX + 1];
	size_t cap;
	const char *p;
	int links = 0, ret;

	if (!path || path[0] != '/')
		return -EINVAL;
	cap = strlen(path) + 1;
	work = malloc(cap);
	if (!work)
		return -ENOMEM;
	memcpy(work, path, cap);
	p = work;
	ret = sdfs_ns_getattr(s, SDFS_ROOT_INO, &cur);
	while (!ret) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, "/");
		if (n > SDFS_NAME_MAX) {
			ret = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		if (!S_ISDIR(cur.mode)) {
			ret = -ENOTDIR;
			break;
		}
		ret = sdfs_ns_lookup(s, cur.ino, comp, &next);
		if (ret)
			break;
		int last = p[strspn(p, "/")] == '\0';
		if (!S_ISLNK(next.mode) || (last && !follow && *p != '/')) {
			cur = next;
			continue;
		}
		/* A symlink: splice its target in front of the rest. */
		if (++links > SYMLOOP_MAX_) {
			ret = -ELOOP;
			break;
		}
		char target[SDFS_SYMLINK_MAX + 1];
		ssize_t tl = sdfs_ns_readlink(s, next.ino, target, SDFS_SYMLINK_MAX);
		if (tl < 0) {
			ret = (int)tl;
			break;
		}
		target[tl] = '\0';
		size_t rest = strlen(p);
		char *nw = malloc((size_t)tl + 1 + rest + 1);
		if (!nw) {
			ret = -ENOMEM;
			break;
		}
		memcpy(nw, target, (size_t)tl);
		nw[tl] = '/';
		memcpy(nw + tl + 1, p, rest + 1);
		free(work);
		work = nw;
		p = work;
		if (target[0] == '/')
			ret = sdfs_ns_getattr(s, SDFS_ROOT_INO, &cur);
		/* relative: from the directory holding the link (cur) */
	}
	free(work);
	if (!ret)
		*st = cur;
	return ret;
}

int sdfs_mds_status(struct sdfs *s, struct sdfs_mds_status *st)
{
	struct coord_mds_doc active, *cands = NULL;
	struct sdfs_ns_req r = { 0 };
	struct sdfs_hdr reply;
	uint8_t *rep = NULL;
	uint32_t len = 0;
	size_t n = 0;
	int ret;

	memset(st, 0, sizeof(*st));
	client_coord_renew(s);
	ret = coord_mds_candidates(s->coord, &cands, &n);
	if (ret)
		return ret;
	ret = coord_mds_epoch_get(s->coord, 0, &st->epoch);
	if (ret) {
		free(cands);
		return ret;
	}
	if (coord_mds_active_get(s->coord, 0, &active) == 0) {
		st->has_active = 1;
		snprintf(st->active, sizeof(st->active), "%s", active.name);
		snprintf(st->addr, sizeof(st->addr), "%s", active.addr);
	}
	st->list = calloc(n + 1, sizeof(*st->list));
	if (!st->list) {
		free(cands);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(st->list[i].name, sizeof(st->list[i].name), "%s", cands[i].name);
		snprintf(st->list[i].addr, sizeof(st->list[i].addr), "%s", cands[i].addr);
		st->list[i].active = st->has_active &&
			strcmp(cands[i].name, st->active) == 0 &&
			strcmp(cands[i].addr, st->addr) == 0;
	}
	st->n = n;
	free(cands);
	if (!st->has_active)
		return 0;
	/* A short timeout: status must answer even when the active hangs. */
	ret = nsclient_call(s, SDFS_OP_NS_INFO, &r, NULL, NULL, NULL, &reply, &rep, &len,
			    s->timeout_ms < 2000 ? s->timeout_ms : 2000);
	if (ret == 0) {
		struct sdfs_mds_info mi;

		if (proto_mds_info_decode(rep, len, &mi) == 0) {
			st->reachable = 1;
			st->epoch = mi.epoch;
			st->db_bytes = mi.db_bytes;
			st->db_files = mi.db_files;
			st->inodes = mi.inodes;
			st->ops = mi.ops;
			st->active_ms = mi.active_ms;
			st->subs = mi.subs;
			st->leases = mi.leases;
			st->pushes = mi.pushes;
			st->push_timeouts = mi.push_timeouts;
			st->lock_wakes = mi.wakes;
			st->strays = mi.strays;
			st->ec_seals = mi.ec_seals;
			st->ec_unseals = mi.ec_unseals;
			st->ec_sealed_bytes = mi.ec_sealed_bytes;
		}
		free(rep);
	}
	return 0;
}
