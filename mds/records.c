/*
 * records.c - the namespace's records: keys, inode and dentry records,
 * inode numbers, names, attribute replies (records.h has the key layout
 * and the contracts).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/oid.h"
#include "common/proto.h"
#include "mds/kcaps.h"
#include "mds/lease.h"
#include "mds/ns_int.h"
#include "mds/records.h"

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

size_t key_ino_next(uint8_t *k)
{
	static const char key[] = "Mino_next";

	memcpy(k, key, sizeof(key) - 1);
	return sizeof(key) - 1;
}

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

uint64_t inode_count(struct ns *ns)
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

int ino_alloc(struct ns *ns, uint64_t *ino)
{
	int ret = 0;

	pthread_mutex_lock(&ns->ino_lock);
	if (ns->ino_next >= ns->ino_limit) {
		/* Reserve the next range durably before handing any out: a
		 * new active starts above everything reserved. */
		struct kvbatch *b = kvbatch_new();
		uint8_t k[16], v[8];
		uint64_t limit = ns->ino_limit + NS_INO_BATCH;

		if (!b) {
			ret = -ENOMEM;
			goto out;
		}
		le64_put(v, limit);
		kvbatch_put(b, k, key_ino_next(k), v, 8);
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

static int reply_with(struct ns_reply *rep, const struct sdfs_attr *a)
{
	rep->data = malloc(SDFS_ATTR_SIZE);
	if (!rep->data)
		return -ENOMEM;
	proto_attr_encode(a, rep->data);
	rep->len = SDFS_ATTR_SIZE;
	return 0;
}

int reply_attr_f(struct ns_reply *rep, const struct inode *in, uint32_t flags)
{
	struct sdfs_attr a = in->a;

	a.flags = flags;
	a.blocks = space_blocks(in);
	return reply_with(rep, &a);
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
	return reply_with(rep, &a);
}
