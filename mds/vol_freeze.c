/*
 * vol_freeze.c - the steps of a snapshot, clone or rollback
 * (docs/volumes.md): freeze the live vid in ZooKeeper and on every block
 * daemon, copy an index, commit; and rolling forward the ones a crashed
 * active left pending. Every step is idempotent: freezing a frozen vid
 * does nothing, an index copy rewrites the same bytes, the commit
 * happens once (it deletes the pending record in its batch).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/coord_vol.h"
#include "common/log.h"
#include "common/oid.h"
#include "common/policy.h"
#include "common/proto.h"
#include "common/volidx.h"
#include "mds/ns_int.h"
#include "mds/vol.h"

#define FREEZE_TRIES 100

int vol_freeze(struct ns *ns, uint64_t old, uint64_t newvid, uint32_t bump)
{
	struct coord *c = ns->vol->coord;
	uint32_t tok = 0, ntok = 0;
	int32_t ver, nver = -1;
	int ret;

	for (int tries = 0;; tries++) {
		struct coord_vol_fset sets[2];
		size_t n = 0;

		ret = coord_vol_fence_get(c, old, &tok, &ver);
		if (!ret && newvid)
			ret = coord_vol_fence_get(c, newvid, &ntok, &nver);
		if (ret)
			return ret;
		if (tok == SDFS_TOKEN_FROZEN && (!newvid || nver >= 0))
			break;          /* done before (a roll-forward) */
		if (tok != SDFS_TOKEN_FROZEN)
			sets[n++] = (struct coord_vol_fset){ old, SDFS_TOKEN_FROZEN, ver };
		if (newvid && nver < 0) {
			/* The new live state inherits the writer's token, so a
			 * writer carries on there (a rollback bumps it: whoever
			 * held the old token is fenced from the new state). */
			uint32_t t = tok == SDFS_TOKEN_FROZEN ? 1 : tok + bump;

			if (t == SDFS_TOKEN_FROZEN)
				t--;
			sets[n++] = (struct coord_vol_fset){ newvid, t, -1 };
		}
		ret = coord_vol_fence_multi(c, sets, n, NULL);
		if (ret == -EAGAIN && tries < FREEZE_TRIES)
			continue;
		if (ret)
			return ret;
	}
	/* ZooKeeper says frozen; the block daemons must have stopped taking
	 * writes of old tokens before the index is read. */
	ret = sdfs_vol_fence(ns->sdfs, old, SDFS_TOKEN_FROZEN);
	if (ret)
		return ret;
	if (newvid) {
		ret = coord_vol_fence_get(c, newvid, &ntok, &nver);
		if (!ret && ntok)
			ret = sdfs_vol_fence(ns->sdfs, newvid, ntok);
	}
	return ret;
}

int vol_index_read(struct ns *ns, const struct vol_rec *r, uint8_t **buf, size_t *len)
{
	size_t cap = r->obj_size ? r->obj_size : ns->obj_size;
	uint8_t *b;
	ssize_t n;

	if (cap < VOLIDX_HDR_SIZE)
		cap = VOLIDX_HDR_SIZE;
	b = malloc(cap);
	if (!b)
		return -ENOMEM;
	n = sdfs_obj_read(ns->sdfs, oid_vindex(r->vid, r->copies), b, cap, 0);
	if (n == -ENOENT)
		n = 0;          /* nothing written yet */
	if (n < 0) {
		log_warn("vid=%" PRIu64 ": cannot read its index: %s", r->vid,
			 strerror((int)-n));
		free(b);
		return (int)n;
	}
	if ((size_t)n < VOLIDX_HDR_SIZE) {
		memset(b + n, 0, VOLIDX_HDR_SIZE - (size_t)n);
		n = VOLIDX_HDR_SIZE;
	}
	*buf = b;
	*len = (size_t)n;
	return 0;
}

int vol_index_write(struct ns *ns, const struct vol_rec *dst, const uint8_t *src,
		    size_t len)
{
	struct volidx_hdr h = {
		.vid = dst->vid, .parent = dst->parent,
		.obj_size = dst->obj_size, .copies = dst->copies,
	};
	size_t n = src && len > VOLIDX_HDR_SIZE ? len : VOLIDX_HDR_SIZE;
	uint64_t oid = oid_vindex(dst->vid, dst->copies);
	uint8_t *b = malloc(n);
	int ret;

	if (!b)
		return -ENOMEM;
	volidx_hdr_encode(&h, b);
	if (n > VOLIDX_HDR_SIZE)
		memcpy(b + VOLIDX_HDR_SIZE, src + VOLIDX_HDR_SIZE, n - VOLIDX_HDR_SIZE);
	/* FROZEN passes any fence: no writer knows this vid yet. */
	ret = sdfs_obj_put_tok(ns->sdfs, oid, b, n, SDFS_TOKEN_FROZEN);
	if (!ret)
		ret = sdfs_obj_flush(ns->sdfs, oid);
	free(b);
	if (ret)
		log_warn("vid=%" PRIu64 ": cannot write its index: %s", dst->vid,
			 strerror(-ret));
	return ret;
}

int vol_count_owned(struct ns *ns, const struct vol_rec *r, uint64_t *objects)
{
	uint8_t *b;
	size_t len;
	uint64_t n = 0;
	int ret = vol_index_read(ns, r, &b, &len);

	if (ret)
		return ret;
	for (size_t off = VOLIDX_HDR_SIZE; off + VOLIDX_ENTRY_SIZE <= len;
	     off += VOLIDX_ENTRY_SIZE)
		if (volidx_owner(volidx_entry_get(b + off), policy_is_ec(r->copies)) == r->vid)
			n++;
	free(b);
	*objects = n;
	return 0;
}

/* SDFS_MDS_FAULT=snap_after_freeze[:NAME]: die right after the freeze
 * of a snapshot (named NAME), for the roll-forward test. */
static void fault_point(struct ns *ns, const char *what, const struct vol_pending *p)
{
	const char *f = ns->vol->fault;
	size_t n = strlen(what);

	if (!f || strncmp(f, what, n) || (f[n] && f[n] != ':'))
		return;
	if (f[n] == ':' && (strlen(f + n + 1) != p->snap_len ||
			    memcmp(f + n + 1, p->snap, p->snap_len)))
		return;
	log_warn("fault injection: %s (vid=%" PRIu64 "): exiting", what, p->newvid);
	_exit(1);
}

/* Clone's commit part: the new volume file in its directory. -EEXIST,
 * -ENOENT, -ENOTDIR: the clone is abandoned. Called with the locks. */
static int clone_inode(struct ns *ns, const struct vol_pending *p,
		       const struct vol_rec *nw, struct kvbatch *b, struct inode *out)
{
	struct inode dir, in = { 0 };
	int64_t now = ns_now();
	int ret = child_check(ns, p->dir, p->name2, p->name2_len, &dir);

	if (ret)
		return ret;
	in.a.ino = p->ino;
	child_init(ns, &dir, S_IFREG | (p->mode & 07777), p->uid, p->gid, now, &in);
	in.a.size = nw->size;
	in.a.layout = SDFS_LAYOUT_VOL;
	in.a.obj_size = nw->obj_size;
	in.a.copies = nw->copies;
	child_link(b, &dir, p->name2, p->name2_len, &in, now);
	*out = in;
	return 0;
}

static int reply_vol(struct ns_reply *rep, const struct vol_rec *r, uint32_t token)
{
	struct sdfs_ns_vol w;

	rep->data = malloc(SDFS_NS_VOL_SIZE);
	if (!rep->data)
		return -ENOMEM;
	vol_rec_to_wire(r, 0, token, &w);
	proto_ns_vol_encode(&w, rep->data);
	rep->len = SDFS_NS_VOL_SIZE;
	return 0;
}

int vol_pending_run(struct ns *ns, const struct vol_pending *p, int first,
		    struct ns_reply *rep)
{
	struct sdfs_ns_req fr = { .client_id = p->client_id, .seq = p->seq };
	struct ns_reply r = { 0 };
	struct vol_rec src, old, nw;
	struct inode in;
	struct lockset ls = { .n = 0 };
	struct kvbatch *b = NULL;
	uint8_t k[NS_KEY_MAX], *idx = NULL;
	size_t len = 0;
	int64_t now = ns_now();
	int ret, abandon = 0;

	ret = vol_rec_get(ns, p->newvid, &nw);
	if (!ret)
		ret = vol_rec_get(ns, p->src, &src);
	if (!ret && p->old)
		ret = vol_rec_get(ns, p->old, &old);
	if (ret)
		return ret;
	if (p->kind != VOL_P_CLONE) {
		ret = vol_freeze(ns, p->old, p->newvid, p->kind == VOL_P_ROLLBACK);
		if (ret) {
			log_warn("vid=%" PRIu64 ": cannot freeze: %s", p->old, strerror(-ret));
			return ret;
		}
	}
	if (first && p->kind == VOL_P_SNAP)
		fault_point(ns, "snap_after_freeze", p);
	ret = vol_index_read(ns, &src, &idx, &len);
	if (!ret)
		ret = vol_index_write(ns, &nw, idx, len);
	free(idx);
	if (ret)
		return ret;

	b = kvbatch_new();
	if (!b)
		return -ENOMEM;
	uint64_t inos[2] = { p->ino, p->kind == VOL_P_CLONE ? p->dir : 0 };
	ns_lock(ns, &ls, inos, 2);
	switch (p->kind) {
	case VOL_P_SNAP:
		old.state = SDFS_VS_SNAP;
		if (inode_get(ns, p->ino, &in) == 0)
			old.size = in.a.size;
		old.ctime_ns = now;
		old.name_len = p->snap_len;
		memcpy(old.name, p->snap, p->snap_len);
		old.name[p->snap_len] = '\0';
		vol_rec_put(b, &old);
		vol_u64_put(b, k, vol_key_snap(k, p->ino, p->snap, p->snap_len), old.vid);
		nw.state = SDFS_VS_LIVE;
		nw.size = old.size;
		nw.ctime_ns = now;
		vol_rec_put(b, &nw);
		vol_u64_put(b, k, vol_key_live(k, p->ino), nw.vid);
		ret = reply_vol(&r, &old, 0);
		break;
	case VOL_P_ROLLBACK:
		if (inode_get(ns, p->ino, &in) == 0) {
			old.size = in.a.size;
			in.a.size = src.size;
			in.a.mtime_ns = in.a.ctime_ns = now;
			inode_put(b, &in);
		}
		old.state = SDFS_VS_DELETED;
		vol_rec_put(b, &old);
		kvbatch_put(b, k, vol_key_deleted(k, old.family), "", 0);
		nw.state = SDFS_VS_LIVE;
		nw.size = src.size;
		nw.ctime_ns = now;
		vol_rec_put(b, &nw);
		vol_u64_put(b, k, vol_key_live(k, p->ino), nw.vid);
		{
			uint32_t tok = 0;
			int32_t ver;

			coord_vol_fence_get(ns->vol->coord, nw.vid, &tok, &ver);
			ret = reply_vol(&r, &nw, tok);
		}
		break;
	case VOL_P_CLONE:
		nw.size = src.size;
		ret = clone_inode(ns, p, &nw, b, &in);
		if (ret && ret != -ENOMEM) {
			/* the name was taken or the directory went: give up */
			kvbatch_clear(b);
			abandon = ret;
			nw.state = SDFS_VS_DELETED;
			vol_rec_put(b, &nw);
			kvbatch_put(b, k, vol_key_deleted(k, nw.family), "", 0);
			ret = 0;
			break;
		}
		if (ret)
			break;
		nw.state = SDFS_VS_LIVE;
		nw.ctime_ns = now;
		vol_rec_put(b, &nw);
		vol_u64_put(b, k, vol_key_live(k, p->ino), nw.vid);
		atomic_fetch_add(&ns->inodes, 1);
		ret = reply_attr(&r, &in);
		break;
	default:
		ret = -EIO;
	}
	if (ret)
		goto out;
	kvbatch_del(b, k, vol_key_pending(k, p->newvid));
	if (!abandon)
		replycache_record(ns, &fr, b, &r);
	ret = ns_commit(ns, b);
	if (!ret && abandon) {
		ret = abandon;
		vol_reclaim_kick(ns);
	}
	if (!ret && p->kind == VOL_P_ROLLBACK)
		vol_reclaim_kick(ns);
out:
	ns_unlock(ns, &ls);
	kvbatch_free(b);
	if (!ret && rep)
		*rep = r;
	else
		free(r.data);
	return ret;
}

int vol_roll_forward(struct ns *ns, uint64_t family)
{
	uint64_t *v;
	size_t n;
	int ret = vol_pendings_of(ns, family, &v, &n), first_err = 0;

	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++) {
		struct vol_pending p;

		if (vol_pending_get(ns, v[i], &p))
			continue;
		if (!family)
			vol_fam_lock(ns, p.family);
		/* re-read under the lock: an op may have finished it */
		ret = vol_pending_get(ns, v[i], &p);
		if (!ret) {
			ret = vol_pending_run(ns, &p, 0, NULL);
			if (ret == -EEXIST || ret == -ENOENT || ret == -ENOTDIR)
				ret = 0;        /* an abandoned clone */
			if (ret)
				log_warn("vid=%" PRIu64 ": cannot finish its pending op: %s",
					 p.newvid, strerror(-ret));
			else
				log_info("rolled forward the pending %s making vid=%" PRIu64,
					 p.kind == VOL_P_SNAP ? "snapshot" :
					 p.kind == VOL_P_CLONE ? "clone" : "rollback", p.newvid);
		} else if (ret == -ENOENT) {
			ret = 0;
		}
		if (!family)
			vol_fam_unlock(ns, p.family);
		if (ret && !first_err)
			first_err = ret;
	}
	free(v);
	return first_err;
}
