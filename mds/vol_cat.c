/*
 * vol_cat.c - the volume catalog's keys and records, vid numbers,
 * family locks and pending-op records (vol.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/oid.h"
#include "common/proto.h"
#include "mds/ns_int.h"
#include "mds/vol.h"

static const char key_vid_next[] = "Mvid_next";

size_t vol_key_rec(uint8_t *k, uint64_t vid)
{
	return key_tag_n(k, 'V', vid);
}

size_t vol_key_live(uint8_t *k, uint64_t ino)
{
	return key_tag_n(k, 'W', ino);
}

size_t vol_key_snap(uint8_t *k, uint64_t ino, const char *name, size_t nlen)
{
	return key_tag_name(k, 'S', ino, name, nlen);
}

size_t vol_key_member(uint8_t *k, uint64_t family, uint64_t vid)
{
	return key_tag_nn(k, 'F', family, vid);
}

size_t vol_key_pending(uint8_t *k, uint64_t vid)
{
	return key_tag_n(k, 'P', vid);
}

size_t vol_key_deleted(uint8_t *k, uint64_t family)
{
	return key_tag_n(k, 'G', family);
}

uint64_t vol_chunks(uint64_t size, uint32_t obj_size)
{
	return obj_size ? (size + obj_size - 1) / obj_size : 0;
}

int vol_rec_get(struct ns *ns, uint64_t vid, struct vol_rec *r)
{
	uint8_t k[16];
	const uint8_t *v;
	char *val;
	size_t vlen;
	int ret;

	ret = kvdb_get(ns->db, k, vol_key_rec(k, vid), &val, &vlen);
	if (ret)
		return ret;
	v = (const uint8_t *)val;
	if (vlen != VOL_REC_SIZE || le32_get(v + 48) > SDFS_SNAP_NAME_MAX) {
		log_err("vid=%" PRIu64 ": malformed record (%zu bytes)", vid, vlen);
		free(val);
		return -EIO;
	}
	memset(r, 0, sizeof(*r));
	r->vid = vid;
	r->state = (uint16_t)(le32_get(v) & 0xffff);
	r->copies = (uint16_t)(le32_get(v) >> 16);
	r->obj_size = le32_get(v + 4);
	r->family = le64_get(v + 8);
	r->parent = le64_get(v + 16);
	r->ino = le64_get(v + 24);
	r->size = le64_get(v + 32);
	r->ctime_ns = (int64_t)le64_get(v + 40);
	r->name_len = le32_get(v + 48);
	memcpy(r->name, v + 52, r->name_len);
	r->name[r->name_len] = '\0';
	free(val);
	return 0;
}

void vol_rec_put(struct kvbatch *b, const struct vol_rec *r)
{
	uint8_t k[16], v[VOL_REC_SIZE] = { 0 };

	le32_put(v, (uint32_t)r->state | (uint32_t)r->copies << 16);
	le32_put(v + 4, r->obj_size);
	le64_put(v + 8, r->family);
	le64_put(v + 16, r->parent);
	le64_put(v + 24, r->ino);
	le64_put(v + 32, r->size);
	le64_put(v + 40, (uint64_t)r->ctime_ns);
	le32_put(v + 48, r->name_len);
	memcpy(v + 52, r->name, r->name_len);
	kvbatch_put(b, k, vol_key_rec(k, r->vid), v, sizeof(v));
}

void vol_u64_put(struct kvbatch *b, const uint8_t *k, size_t klen, uint64_t val)
{
	uint8_t v[8];

	le64_put(v, val);
	kvbatch_put(b, k, klen, v, 8);
}

static int u64_get(struct ns *ns, const uint8_t *k, size_t klen, uint64_t *out)
{
	char *v;
	size_t vlen;
	int ret = kvdb_get(ns->db, k, klen, &v, &vlen);

	if (ret)
		return ret;
	if (vlen != 8) {
		log_err("volume key %c: malformed record", k[0]);
		free(v);
		return -EIO;
	}
	*out = le64_get((const uint8_t *)v);
	free(v);
	return 0;
}

int vol_live_get(struct ns *ns, uint64_t ino, uint64_t *vid)
{
	uint8_t k[16];

	return u64_get(ns, k, vol_key_live(k, ino), vid);
}

int vol_snap_get(struct ns *ns, uint64_t ino, const char *name, size_t nlen,
		 uint64_t *vid)
{
	uint8_t k[9 + SDFS_SNAP_NAME_MAX];

	if (nlen > SDFS_SNAP_NAME_MAX)
		return -ENOENT;
	return u64_get(ns, k, vol_key_snap(k, ino, name, nlen), vid);
}

#define PENDING_FIXED 96

int vol_pending_get(struct ns *ns, uint64_t vid, struct vol_pending *p)
{
	uint8_t k[16];
	const uint8_t *v;
	char *val;
	size_t vlen;
	int ret;

	ret = kvdb_get(ns->db, k, vol_key_pending(k, vid), &val, &vlen);
	if (ret)
		return ret;
	v = (const uint8_t *)val;
	memset(p, 0, sizeof(*p));
	if (vlen >= PENDING_FIXED) {
		p->kind = le32_get(v);
		p->snap_len = le32_get(v + 4);
		p->newvid = le64_get(v + 8);
		p->ino = le64_get(v + 16);
		p->old = le64_get(v + 24);
		p->src = le64_get(v + 32);
		p->family = le64_get(v + 40);
		p->client_id = le64_get(v + 48);
		p->seq = le64_get(v + 56);
		p->dir = le64_get(v + 64);
		p->mode = le32_get(v + 72);
		p->uid = le32_get(v + 76);
		p->gid = le32_get(v + 80);
		p->name2_len = le32_get(v + 84);
	}
	if (vlen < PENDING_FIXED || p->snap_len > SDFS_SNAP_NAME_MAX ||
	    p->name2_len > SDFS_NAME_MAX ||
	    vlen != PENDING_FIXED + p->snap_len + p->name2_len) {
		log_err("vid=%" PRIu64 ": malformed pending record", vid);
		free(val);
		return -EIO;
	}
	memcpy(p->snap, v + PENDING_FIXED, p->snap_len);
	memcpy(p->name2, v + PENDING_FIXED + p->snap_len, p->name2_len);
	free(val);
	return 0;
}

void vol_pending_put(struct kvbatch *b, const struct vol_pending *p)
{
	uint8_t k[16], v[PENDING_FIXED + SDFS_SNAP_NAME_MAX + SDFS_NAME_MAX] = { 0 };

	le32_put(v, p->kind);
	le32_put(v + 4, p->snap_len);
	le64_put(v + 8, p->newvid);
	le64_put(v + 16, p->ino);
	le64_put(v + 24, p->old);
	le64_put(v + 32, p->src);
	le64_put(v + 40, p->family);
	le64_put(v + 48, p->client_id);
	le64_put(v + 56, p->seq);
	le64_put(v + 64, p->dir);
	le32_put(v + 72, p->mode);
	le32_put(v + 76, p->uid);
	le32_put(v + 80, p->gid);
	le32_put(v + 84, p->name2_len);
	memcpy(v + PENDING_FIXED, p->snap, p->snap_len);
	memcpy(v + PENDING_FIXED + p->snap_len, p->name2, p->name2_len);
	kvbatch_put(b, k, vol_key_pending(k, p->newvid), v,
		    PENDING_FIXED + p->snap_len + p->name2_len);
}

/* Collect the big-endian u64 at @at of every key starting with @pfx. */
/* The u64 of every key starting with @pfx: big-endian in the key at
 * @at, or (SCAN_VALUE) the record's le64 value. */
#define SCAN_VALUE SIZE_MAX
static int scan_u64(struct ns *ns, const uint8_t *pfx, size_t plen, size_t at,
		    uint64_t **out, size_t *n)
{
	struct kviter *it = kvdb_iter(ns->db);
	uint64_t *v = NULL;
	size_t cnt = 0, cap = 0;
	int ret = 0;

	if (!it)
		return -ENOMEM;
	for (kviter_seek(it, pfx, plen); kviter_valid(it); kviter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)kviter_key(it, &klen);
		const uint8_t *val = (const uint8_t *)kviter_value(it, &vlen);

		if (klen < plen || memcmp(k, pfx, plen))
			break;
		if (at == SCAN_VALUE ? vlen != 8 : klen < at + 8)
			continue;
		if (cnt == cap) {
			uint64_t *nv = realloc(v, (cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			v = nv;
			cap = cap ? cap * 2 : 16;
		}
		v[cnt++] = at == SCAN_VALUE ? le64_get(val) : be64_get(k + at);
	}
	if (!ret)
		ret = kviter_error(it);
	kviter_free(it);
	if (ret) {
		free(v);
		return ret;
	}
	*out = v;
	*n = cnt;
	return 0;
}

int vol_snaps_of(struct ns *ns, uint64_t ino, uint64_t **out, size_t *n)
{
	uint8_t pfx[9];

	vol_key_snap(pfx, ino, "", 0);
	return scan_u64(ns, pfx, 9, SCAN_VALUE, out, n);
}

int vol_members_of(struct ns *ns, uint64_t family, uint64_t **out, size_t *n)
{
	uint8_t pfx[17];

	pfx[0] = 'F';
	be64_put(pfx + 1, family);
	return scan_u64(ns, pfx, 9, 9, out, n);
}

int vol_pendings_of(struct ns *ns, uint64_t family, uint64_t **out, size_t *n)
{
	uint64_t *all;
	size_t cnt, m = 0;
	int ret = scan_u64(ns, (const uint8_t *)"P", 1, 1, &all, &cnt);

	if (ret || family == 0) {
		if (!ret) {
			*out = all;
			*n = cnt;
		}
		return ret;
	}
	for (size_t i = 0; i < cnt; i++) {
		struct vol_pending p;

		if (vol_pending_get(ns, all[i], &p) == 0 && p.family == family)
			all[m++] = all[i];
	}
	*out = all;
	*n = m;
	return 0;
}

int vol_vid_alloc(struct ns *ns, uint64_t *vid)
{
	struct vol *v = ns->vol;
	int ret = 0;

	pthread_mutex_lock(&v->vid_lock);
	if (v->vid_next >= v->vid_limit) {
		/* Reserved durably before any is handed out, as inode numbers. */
		struct kvbatch *b = kvbatch_new();
		uint64_t limit = v->vid_limit + VOL_VID_BATCH;

		if (!b) {
			ret = -ENOMEM;
			goto out;
		}
		vol_u64_put(b, (const uint8_t *)key_vid_next, sizeof(key_vid_next) - 1, limit);
		ret = ns_commit(ns, b);
		kvbatch_free(b);
		if (ret)
			goto out;
		v->vid_limit = limit;
	}
	if (v->vid_next > SDFS_VID_MAX) {
		ret = -ENOSPC;
		goto out;
	}
	*vid = v->vid_next++;
out:
	pthread_mutex_unlock(&v->vid_lock);
	return ret;
}

static unsigned fam_idx(uint64_t family)
{
	return (unsigned)((family * 0x9e3779b97f4a7c15ull) >> 58) % VOL_FAM_LOCKS;
}

void vol_fam_lock(struct ns *ns, uint64_t family)
{
	pthread_mutex_lock(&ns->vol->fam_locks[fam_idx(family)]);
}

void vol_fam_unlock(struct ns *ns, uint64_t family)
{
	pthread_mutex_unlock(&ns->vol->fam_locks[fam_idx(family)]);
}

int vol_snap_name_check(const char *name, size_t len)
{
	if (len == 0 || len > SDFS_SNAP_NAME_MAX || name_is_dot(name, len))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return -EINVAL;
	}
	return 0;
}

void vol_rec_to_wire(const struct vol_rec *r, uint64_t objects, uint32_t token,
		     struct sdfs_ns_vol *out)
{
	memset(out, 0, sizeof(*out));
	out->vid = r->vid;
	out->family = r->family;
	out->parent = r->parent;
	out->ino = r->ino;
	out->size = r->size;
	out->objects = objects;
	out->ctime_ns = r->ctime_ns;
	out->obj_size = r->obj_size;
	out->copies = r->copies;
	out->state = r->state;
	out->token = token;
	out->name_len = r->name_len;
	memcpy(out->name, r->name, r->name_len);
	out->name[r->name_len] = '\0';
}

int vol_open(struct ns *ns, struct coord *coord)
{
	struct vol *v = calloc(1, sizeof(*v));
	char *val;
	size_t vlen;
	int ret;

	if (!v)
		return -ENOMEM;
	v->coord = coord;
	for (int i = 0; i < VOL_FAM_LOCKS; i++)
		pthread_mutex_init(&v->fam_locks[i], NULL);
	pthread_mutex_init(&v->vid_lock, NULL);
	pthread_mutex_init(&v->reclaim_lock, NULL);
	pthread_cond_init(&v->reclaim_cond, NULL);
	v->fault = getenv("SDFS_MDS_FAULT");
	v->vid_next = v->vid_limit = 1;
	v->reclaim_ms = VOL_RECLAIM_MS;
	ns->vol = v;
	ret = kvdb_get(ns->db, key_vid_next, sizeof(key_vid_next) - 1, &val, &vlen);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	if (vlen != 8) {
		free(val);
		log_err("malformed vid counter");
		return -EIO;
	}
	v->vid_next = v->vid_limit = le64_get((const uint8_t *)val);
	free(val);
	return 0;
}

void ns_set_reclaim_interval(struct ns *ns, int ms)
{
	vol_reclaim_interval(ns, ms);
}

int vol_start(struct ns *ns)
{
	return vol_reclaim_start(ns);
}

void vol_close(struct ns *ns)
{
	if (!ns->vol)
		return;
	vol_reclaim_stop(ns);
	free(ns->vol);
	ns->vol = NULL;
}
