/*
 * vol_ops.c - the NS_VOL_* operations (sdfs_proto.h, docs/volumes.md)
 * and a volume file going away (purge.c).
 *
 * An op on an existing volume finds the file's family, takes the
 * family's lock, finishes any pending op of the family (a crashed
 * active's), and answers a retried request from its recorded reply
 * before doing anything: a roll-forward may just have answered it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/coord_vol.h"
#include "common/log.h"
#include "common/oid.h"
#include "common/policy.h"
#include "common/proto.h"
#include "common/volidx.h"
#include "mds/ns_int.h"
#include "mds/vol.h"

/* The largest chunk count a volume of @obj_size objects may have. */
static uint64_t max_chunks(uint32_t obj_size)
{
	uint64_t m = VOLIDX_MAX_CHUNKS(obj_size);

	return m < OID_CHUNK_MAX + 1 ? m : OID_CHUNK_MAX + 1;
}

int vol_size_ok(uint64_t size, uint32_t obj_size)
{
	return obj_size && vol_chunks(size, obj_size) <= max_chunks(obj_size);
}

/*
 * Find volume file @ino's family, lock it and finish its pending ops.
 * On 0 the lock is held: *@fam, *@in, *@live (the live state, re-read
 * under the lock).
 */
static int fam_enter(struct ns *ns, uint64_t ino, uint64_t *fam, struct inode *in,
		     struct vol_rec *live)
{
	uint64_t vid;
	int ret;

	ret = inode_get(ns, ino, in);
	if (ret)
		return ret;
	if (in->a.layout != SDFS_LAYOUT_VOL)
		return -EMEDIUMTYPE;
	ret = vol_live_get(ns, ino, &vid);
	if (!ret)
		ret = vol_rec_get(ns, vid, live);
	if (ret)
		return ret;
	*fam = live->family;
	vol_fam_lock(ns, *fam);
	ret = vol_roll_forward(ns, *fam);
	if (!ret)
		ret = vol_live_get(ns, ino, &vid);
	if (!ret)
		ret = vol_rec_get(ns, vid, live);
	if (!ret)
		ret = inode_get(ns, ino, in);
	if (ret) {
		vol_fam_unlock(ns, *fam);
		return ret;
	}
	live->size = in->a.size;        /* the inode's size is the live one */
	return 0;
}

static int reply_vols(struct ns_reply *rep, const struct sdfs_ns_vol *v, size_t n)
{
	rep->data = malloc(n ? n * SDFS_NS_VOL_SIZE : 1);
	if (!rep->data)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		proto_ns_vol_encode(&v[i], rep->data + i * SDFS_NS_VOL_SIZE);
	rep->len = (uint32_t)(n * SDFS_NS_VOL_SIZE);
	return 0;
}

static uint32_t fence_of(struct ns *ns, uint64_t vid)
{
	uint32_t tok = 0;
	int32_t ver;

	coord_vol_fence_get(ns->vol->coord, vid, &tok, &ver);
	return tok;
}

static int op_vol_create(struct ns *ns, const struct sdfs_ns_req *r, const char *name,
			 struct ns_reply *rep)
{
	struct inode dir, in = { 0 };
	struct vol_rec v = { 0 };
	struct lockset ls;
	struct kvbatch *b;
	uint8_t k[32];
	uint32_t obj_size = r->max ? r->max : ns->obj_size;
	int ret;

	ret = name_check(name, r->name_len);
	if (ret)
		return ret;
	if (name_is_dot(name, r->name_len))
		return -EEXIST;
	if (!policy_valid(r->flags) || obj_size < 4096 || obj_size > ns->obj_size ||
	    (obj_size & (obj_size - 1)) || !vol_size_ok(r->arg, obj_size))
		return -EINVAL;
	b = kvbatch_new();
	if (!b)
		return -ENOMEM;
	ns_lock(ns, &ls, &r->ino, 1);
	ret = child_check(ns, r->ino, name, r->name_len, &dir);
	if (!ret)
		ret = ino_alloc(ns, &in.a.ino);
	if (!ret)
		ret = vol_vid_alloc(ns, &v.vid);
	if (ret)
		goto out;
	v.family = v.vid;
	v.ino = in.a.ino;
	v.size = r->arg;
	v.obj_size = obj_size;
	/* none asked: the directory's policy (`sdfs fs setpolicy`) */
	v.copies = (uint16_t)(r->flags ? r->flags : dir.a.copies);
	v.state = SDFS_VS_LIVE;
	v.ctime_ns = ns_now();
	ret = vol_index_write(ns, &v, NULL, 0);
	if (ret)
		goto out;
	child_init(ns, &dir, S_IFREG | (r->mode & 07777), r->uid, r->gid, v.ctime_ns, &in);
	in.a.size = r->arg;
	in.a.layout = SDFS_LAYOUT_VOL;
	in.a.obj_size = obj_size;
	in.a.copies = v.copies;
	child_link(b, &dir, name, r->name_len, &in, v.ctime_ns);
	vol_rec_put(b, &v);
	kvbatch_put(b, k, vol_key_member(k, v.family, v.vid), "", 0);
	vol_u64_put(b, k, vol_key_live(k, in.a.ino), v.vid);
	ret = reply_attr(rep, &in);
	if (!ret)
		ret = ns_commit_op(ns, r, b, rep);
out:
	ns_unlock(ns, &ls);
	kvbatch_free(b);
	return ret;
}

static int op_vol_info(struct ns *ns, const struct sdfs_ns_req *r, const char *name,
		       struct ns_reply *rep)
{
	struct sdfs_ns_vol w;
	struct vol_rec live, snap;
	struct inode in;
	uint64_t fam, vid;
	int ret = fam_enter(ns, r->ino, &fam, &in, &live);

	if (ret)
		return ret;
	if (r->name_len) {
		ret = vol_snap_get(ns, r->ino, name, r->name_len, &vid);
		if (!ret)
			ret = vol_rec_get(ns, vid, &snap);
		if (!ret)
			vol_rec_to_wire(&snap, 0, 0, &w);
	} else {
		vol_rec_to_wire(&live, 0, fence_of(ns, live.vid), &w);
	}
	vol_fam_unlock(ns, fam);
	return ret ? ret : reply_vols(rep, &w, 1);
}

static int cmp_vol(const void *a, const void *b)
{
	const struct sdfs_ns_vol *x = a, *y = b;

	return x->vid < y->vid ? -1 : x->vid > y->vid;
}

/* Records of @vids as wire structs with their owned objects. */
static int describe(struct ns *ns, const uint64_t *vids, size_t n,
		    struct sdfs_ns_vol **out)
{
	struct sdfs_ns_vol *w = calloc(n ? n : 1, sizeof(*w));
	int ret = 0;

	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < n && !ret; i++) {
		struct vol_rec v;
		struct inode in;
		uint64_t objects = 0;

		ret = vol_rec_get(ns, vids[i], &v);
		if (ret)
			break;
		if (v.state == SDFS_VS_LIVE && inode_get(ns, v.ino, &in) == 0)
			v.size = in.a.size;
		ret = vol_count_owned(ns, &v, &objects);
		vol_rec_to_wire(&v, objects,
				v.state == SDFS_VS_LIVE ? fence_of(ns, v.vid) : 0, &w[i]);
	}
	if (ret) {
		free(w);
		return ret;
	}
	qsort(w, n, sizeof(*w), cmp_vol);
	*out = w;
	return 0;
}

/* SNAPLIST (the file's snapshots) and TREE (its family). */
static int op_vol_list(struct ns *ns, unsigned op, const struct sdfs_ns_req *r,
		       struct ns_reply *rep)
{
	struct sdfs_ns_vol *w = NULL;
	struct vol_rec live;
	struct inode in;
	uint64_t fam, *vids = NULL;
	size_t n = 0;
	int ret = fam_enter(ns, r->ino, &fam, &in, &live);

	if (ret)
		return ret;
	if (op == SDFS_OP_NS_VOL_SNAPLIST)
		ret = vol_snaps_of(ns, r->ino, &vids, &n);
	else
		ret = vol_members_of(ns, fam, &vids, &n);
	if (!ret)
		ret = describe(ns, vids, n, &w);
	vol_fam_unlock(ns, fam);
	free(vids);
	if (!ret)
		ret = reply_vols(rep, w, n);
	free(w);
	return ret;
}

/* A new pending op's records, committed before any of its steps. */
static int pending_begin(struct ns *ns, const struct vol_pending *p,
			 const struct vol_rec *nw)
{
	struct kvbatch *b = kvbatch_new();
	uint8_t k[32];
	int ret;

	if (!b)
		return -ENOMEM;
	vol_pending_put(b, p);
	vol_rec_put(b, nw);
	kvbatch_put(b, k, vol_key_member(k, nw->family, nw->vid), "", 0);
	ret = ns_commit(ns, b);
	kvbatch_free(b);
	return ret;
}

/* SNAP, ROLLBACK and CLONE: from the checks to the commit. */
static int op_vol_make(struct ns *ns, unsigned op, const struct sdfs_ns_req *r,
		       const char *name, const char *name2, struct ns_reply *rep)
{
	struct vol_pending p = { .client_id = r->client_id, .seq = r->seq };
	struct vol_rec live, snap, nw;
	struct inode in, dir;
	uint64_t fam, vid, *snaps = NULL;
	size_t nsnaps = 0;
	int ret;

	ret = vol_snap_name_check(name, r->name_len);
	if (ret)
		return op == SDFS_OP_NS_VOL_SNAP ? ret : -ENOENT;
	if (op == SDFS_OP_NS_VOL_CLONE) {
		ret = name_check(name2, r->name2_len);
		if (ret)
			return ret;
		if (name_is_dot(name2, r->name2_len))
			return -EEXIST;
	}
	ret = fam_enter(ns, r->ino, &fam, &in, &live);
	if (ret)
		return ret;
	ret = replycache_lookup(ns, r->client_id, r->seq, rep);
	if (ret) {
		/* finished by a roll-forward: its reply */
		vol_fam_unlock(ns, fam);
		return ret < 0 ? ret : 0;
	}
	ret = vol_snap_get(ns, r->ino, name, r->name_len, &vid);
	if (op == SDFS_OP_NS_VOL_SNAP) {
		if (ret != -ENOENT) {
			ret = ret ? ret : -EEXIST;
			goto out;
		}
		ret = vol_snaps_of(ns, r->ino, &snaps, &nsnaps);
		free(snaps);
		if (!ret && nsnaps >= SDFS_VOL_SNAPS_MAX)
			ret = -ENOSPC;
	} else if (!ret) {
		ret = vol_rec_get(ns, vid, &snap);
	}
	if (ret)
		goto out;
	p.family = fam;
	p.snap_len = r->name_len;
	memcpy(p.snap, name, r->name_len);
	switch (op) {
	case SDFS_OP_NS_VOL_SNAP:
		p.kind = VOL_P_SNAP;
		p.ino = r->ino;
		p.old = p.src = live.vid;
		nw = live;
		break;
	case SDFS_OP_NS_VOL_ROLLBACK: {
		char holder[COORD_VOL_HOLDER_MAX];

		ret = coord_vol_lock_holder(ns->vol->coord, r->ino, holder, sizeof(holder));
		if (ret) {
			if (ret > 0) {
				log_info("ino=%" PRIu64 ": rollback refused: %s holds it",
					 r->ino, holder);
				ret = -EBUSY;
			}
			goto out;
		}
		p.kind = VOL_P_ROLLBACK;
		p.ino = r->ino;
		p.old = live.vid;
		p.src = snap.vid;
		nw = snap;
		break;
	}
	default:        /* CLONE */
		ret = child_check(ns, r->ino2, name2, r->name2_len, &dir);
		if (!ret)
			ret = ino_alloc(ns, &p.ino);
		if (ret)
			goto out;
		p.kind = VOL_P_CLONE;
		p.src = snap.vid;
		p.dir = r->ino2;
		p.mode = r->mode;
		p.uid = r->uid;
		p.gid = r->gid;
		p.name2_len = r->name2_len;
		memcpy(p.name2, name2, r->name2_len);
		nw = snap;
		break;
	}
	ret = vol_vid_alloc(ns, &p.newvid);
	if (ret)
		goto out;
	nw.vid = p.newvid;
	nw.parent = p.src;
	nw.ino = p.ino;
	nw.state = SDFS_VS_PENDING;
	nw.ctime_ns = ns_now();
	nw.name_len = 0;
	nw.name[0] = '\0';
	ret = pending_begin(ns, &p, &nw);
	if (!ret)
		ret = vol_pending_run(ns, &p, 1, rep);
out:
	vol_fam_unlock(ns, fam);
	return ret;
}

static int op_vol_snapdel(struct ns *ns, const struct sdfs_ns_req *r, const char *name,
			  struct kvbatch *b)
{
	struct vol_rec live, snap;
	struct inode in;
	struct ns_reply old = { 0 };
	uint64_t fam, vid;
	uint8_t k[16 + SDFS_SNAP_NAME_MAX];
	int ret;

	if (vol_snap_name_check(name, r->name_len))
		return -ENOENT;
	ret = fam_enter(ns, r->ino, &fam, &in, &live);
	if (ret)
		return ret;
	ret = replycache_lookup(ns, r->client_id, r->seq, &old);
	free(old.data);
	if (ret) {
		vol_fam_unlock(ns, fam);
		return ret < 0 ? ret : 0;
	}
	ret = vol_snap_get(ns, r->ino, name, r->name_len, &vid);
	if (!ret)
		ret = vol_rec_get(ns, vid, &snap);
	if (!ret) {
		/* a snapshot is frozen already: no ZooKeeper step */
		snap.state = SDFS_VS_DELETED;
		vol_rec_put(b, &snap);
		kvbatch_del(b, k, vol_key_snap(k, r->ino, name, r->name_len));
		kvbatch_put(b, k, vol_key_deleted(k, fam), "", 0);
		ret = ns_commit_op(ns, r, b, NULL);
	}
	vol_fam_unlock(ns, fam);
	if (!ret)
		vol_reclaim_kick(ns);
	return ret;
}

int vol_exec(struct ns *ns, unsigned op, const struct sdfs_ns_req *r, const char *name,
	     const char *name2, struct kvbatch *b, struct ns_reply *rep)
{
	/* These act outside the database (ZooKeeper fences, a volume's
	 * objects) on what they read: nothing they read may be taken back
	 * by a crash (commit.c). */
	if (b) {
		int ret = ns_settle(ns);

		if (ret)
			return ret;
	}
	switch (op) {
	case SDFS_OP_NS_VOL_CREATE: return op_vol_create(ns, r, name, rep);
	case SDFS_OP_NS_VOL_INFO: return op_vol_info(ns, r, name, rep);
	case SDFS_OP_NS_VOL_SNAP:
	case SDFS_OP_NS_VOL_ROLLBACK:
	case SDFS_OP_NS_VOL_CLONE: return op_vol_make(ns, op, r, name, name2, rep);
	case SDFS_OP_NS_VOL_SNAPLIST:
	case SDFS_OP_NS_VOL_TREE: return op_vol_list(ns, op, r, rep);
	case SDFS_OP_NS_VOL_SNAPDEL: return op_vol_snapdel(ns, r, name, b);
	case SDFS_OP_NS_VOL_RECLAIM: {
		struct sdfs_ns_reclaim st;

		vol_reclaim_stats(ns, &st);
		rep->data = malloc(SDFS_NS_RECLAIM_SIZE);
		if (!rep->data)
			return -ENOMEM;
		proto_ns_reclaim_encode(&st, rep->data);
		rep->len = SDFS_NS_RECLAIM_SIZE;
		return 0;
	}
	}
	return -EOPNOTSUPP;
}

int vol_file_gone(struct ns *ns, uint64_t ino, uint64_t size)
{
	struct vol_rec live;
	struct kvbatch *b;
	uint64_t vid, fam, *snaps = NULL;
	size_t n = 0;
	uint8_t k[16];
	int ret;

	ret = vol_live_get(ns, ino, &vid);
	if (ret == -ENOENT)
		return 0;       /* done before */
	if (!ret)
		ret = vol_rec_get(ns, vid, &live);
	if (ret)
		return ret;
	fam = live.family;
	vol_fam_lock(ns, fam);
	ret = vol_roll_forward(ns, fam);
	if (!ret)
		ret = vol_live_get(ns, ino, &vid);
	if (!ret)
		ret = vol_rec_get(ns, vid, &live);
	if (!ret)
		ret = vol_freeze(ns, vid, 0, 0);
	if (!ret)
		ret = vol_snaps_of(ns, ino, &snaps, &n);
	if (ret)
		goto out;
	b = kvbatch_new();
	if (!b) {
		ret = -ENOMEM;
		goto out;
	}
	live.state = SDFS_VS_DELETED;
	live.size = size;
	vol_rec_put(b, &live);
	for (size_t i = 0; i < n && !ret; i++) {
		struct vol_rec s;

		ret = vol_rec_get(ns, snaps[i], &s);
		if (ret)
			break;
		s.state = SDFS_VS_DELETED;
		vol_rec_put(b, &s);
	}
	if (!ret) {
		struct kviter *it = kvdb_iter(ns->db);
		uint8_t pfx[9];

		if (!it) {
			kvbatch_free(b);
			ret = -ENOMEM;
			goto out;
		}
		/* the snapshot names */
		vol_key_snap(pfx, ino, "", 0);
		batch_del_prefix(it, b, pfx, 9);
		kviter_free(it);
		kvbatch_del(b, k, vol_key_live(k, ino));
		kvbatch_put(b, k, vol_key_deleted(k, fam), "", 0);
		ret = ns_commit(ns, b);
	}
	kvbatch_free(b);
	if (!ret) {
		log_debug("ino=%" PRIu64 ": volume file gone: vid=%" PRIu64
			  " and %zu snapshots deleted", ino, vid, n);
		vol_reclaim_kick(ns);
	}
out:
	vol_fam_unlock(ns, fam);
	free(snaps);
	return ret;
}
