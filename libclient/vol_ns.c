/*
 * vol_ns.c - the volume catalog calls of sdfs.h (sdfs_vol_create, info,
 * snapshots, rollback, clone, tree, reclaim status) over nsclient_call:
 * NS_VOL_* requests to the active mds (common/sdfs_proto.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"
#include "libclient/client.h"
#include "libclient/ns_int.h"

_Static_assert(SDFS_LAYOUT_VOLUME == SDFS_LAYOUT_VOL, "sdfs.h and the wire agree");
_Static_assert(SDFS_VOL_LIVE == SDFS_VS_LIVE && SDFS_VOL_SNAP == SDFS_VS_SNAP &&
	       SDFS_VOL_DELETED == SDFS_VS_DELETED && SDFS_VOL_PENDING == SDFS_VS_PENDING,
	       "volume states agree");
_Static_assert(sizeof(((struct sdfs_vol_info *)0)->name) == SDFS_SNAP_NAME_MAX + 1,
	       "snapshot names agree");

static void info_from_wire(struct sdfs_vol_info *vi, const struct sdfs_ns_vol *v)
{
	memset(vi, 0, sizeof(*vi));
	vi->vid = v->vid;
	vi->family = v->family;
	vi->parent = v->parent;
	vi->ino = v->ino;
	vi->size = v->size;
	vi->objects = v->objects;
	vi->ctime_ns = v->ctime_ns;
	vi->obj_size = v->obj_size;
	vi->copies = v->copies;
	vi->state = v->state;
	vi->token = v->token;
	memcpy(vi->name, v->name, v->name_len);
	vi->name[v->name_len] = '\0';
}

static int snap_len(const char *name, uint16_t *len)
{
	size_t n = name ? strlen(name) : 0;

	if (n > SDFS_SNAP_NAME_MAX)
		return -EINVAL;
	*len = (uint16_t)n;
	return 0;
}

static int dec_vol(const uint8_t *in, uint32_t len, void *out)
{
	struct sdfs_ns_vol v;
	int ret = proto_ns_vol_decode(in, len, &v);

	if (!ret)
		info_from_wire(out, &v);
	return ret;
}

/* A call whose reply is one sdfs_ns_vol (@vi NULL: ignored). */
static int call_vol(struct sdfs *s, unsigned op, struct sdfs_ns_req *req,
		    const char *name, struct sdfs_vol_info *vi)
{
	return ns_call_one(s, op, req, name, NULL, NULL, dec_vol, vi);
}

/* A call whose reply is an array of sdfs_ns_vol. */
static int call_vols(struct sdfs *s, unsigned op, uint64_t ino,
		     struct sdfs_vol_info **out, size_t *n)
{
	struct sdfs_ns_req r = { .ino = ino };
	struct sdfs_vol_info *vi;
	struct sdfs_hdr reply;
	uint8_t *rep = NULL;
	uint32_t len = 0;
	size_t cnt;
	int ret;

	ret = nsclient_call(s, op, &r, NULL, NULL, NULL, &reply, &rep, &len, 0);
	if (ret)
		return ret;
	if (len % SDFS_NS_VOL_SIZE) {
		free(rep);
		return -EPROTO;
	}
	cnt = len / SDFS_NS_VOL_SIZE;
	vi = calloc(cnt ? cnt : 1, sizeof(*vi));
	if (!vi) {
		free(rep);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cnt; i++) {
		struct sdfs_ns_vol v;

		if (proto_ns_vol_decode(rep + i * SDFS_NS_VOL_SIZE, SDFS_NS_VOL_SIZE, &v)) {
			free(rep);
			free(vi);
			return -EPROTO;
		}
		info_from_wire(&vi[i], &v);
	}
	free(rep);
	*out = vi;
	*n = cnt;
	return 0;
}

int sdfs_vol_create(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		    uint32_t uid, uint32_t gid, uint64_t size, unsigned copies,
		    uint32_t obj_size, struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = dir, .mode = mode, .uid = uid, .gid = gid,
				 .arg = size, .flags = copies, .max = obj_size };
	int ret = ns_name_len(name, &r.name_len);

	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_VOL_CREATE, &r, name, NULL, NULL, st);
}

int sdfs_vol_info(struct sdfs *s, uint64_t ino, const char *snap,
		  struct sdfs_vol_info *vi)
{
	struct sdfs_ns_req r = { .ino = ino };
	int ret = snap_len(snap, &r.name_len);

	return ret ? ret : call_vol(s, SDFS_OP_NS_VOL_INFO, &r, snap, vi);
}

int sdfs_vol_snap_create(struct sdfs *s, uint64_t ino, const char *name,
			 struct sdfs_vol_info *vi)
{
	struct sdfs_ns_req r = { .ino = ino };
	int ret = snap_len(name, &r.name_len);

	return ret ? ret : call_vol(s, SDFS_OP_NS_VOL_SNAP, &r, name, vi);
}

int sdfs_vol_snap_list(struct sdfs *s, uint64_t ino, struct sdfs_vol_info **out,
		       size_t *n)
{
	return call_vols(s, SDFS_OP_NS_VOL_SNAPLIST, ino, out, n);
}

int sdfs_vol_snap_delete(struct sdfs *s, uint64_t ino, const char *name)
{
	struct sdfs_ns_req r = { .ino = ino };
	int ret = snap_len(name, &r.name_len);

	if (ret)
		return -ENOENT;
	return call_vol(s, SDFS_OP_NS_VOL_SNAPDEL, &r, name, NULL);
}

int sdfs_vol_rollback(struct sdfs *s, uint64_t ino, const char *name,
		      struct sdfs_vol_info *vi)
{
	struct sdfs_ns_req r = { .ino = ino };
	int ret = snap_len(name, &r.name_len);

	if (ret)
		return -ENOENT;
	return call_vol(s, SDFS_OP_NS_VOL_ROLLBACK, &r, name, vi);
}

int sdfs_vol_clone(struct sdfs *s, uint64_t ino, const char *snap, uint64_t dir,
		   const char *name, uint32_t mode, uint32_t uid, uint32_t gid,
		   struct sdfs_stat *st)
{
	struct sdfs_ns_req r = { .ino = ino, .ino2 = dir, .mode = mode,
				 .uid = uid, .gid = gid };
	int ret = snap_len(snap, &r.name_len);

	if (ret)
		return -ENOENT;
	ret = ns_name_len(name, &r.name2_len);
	return ret ? ret : ns_call_attr(s, SDFS_OP_NS_VOL_CLONE, &r, snap, name, NULL, st);
}

int sdfs_vol_tree(struct sdfs *s, uint64_t ino, struct sdfs_vol_info **out, size_t *n)
{
	return call_vols(s, SDFS_OP_NS_VOL_TREE, ino, out, n);
}

static int dec_reclaim(const uint8_t *in, uint32_t len, void *out)
{
	struct sdfs_reclaim_status *rs = out;
	struct sdfs_ns_reclaim st;
	int ret = proto_ns_reclaim_decode(in, len, &st);

	if (ret)
		return ret;
	rs->vids_pending = st.vids_pending;
	rs->objects_pending = st.objects_pending;
	rs->bytes_pending = st.bytes_pending;
	rs->objects_freed = st.objects_freed;
	rs->bytes_freed = st.bytes_freed;
	rs->sweeps = st.sweeps;
	return 0;
}

int sdfs_vol_reclaim_status(struct sdfs *s, struct sdfs_reclaim_status *rs)
{
	struct sdfs_ns_req r = { 0 };

	return ns_call_one(s, SDFS_OP_NS_VOL_RECLAIM, &r, NULL, NULL, NULL, dec_reclaim, rs);
}
