/*
 * ns_space.c - the space a file's data takes (sdfs_attr.blocks, what
 * du and st_blocks show; docs/mount.md "Space").
 *
 * A regular file's data are objects, one per chunk of obj_size bytes,
 * that its writers make straight on the block daemons. They report the
 * chunks they made or removed (a punched hole) with the size they push
 * (a SETATTR's sdfs_ns_chunks data); a truncate frees the chunks past
 * the new size here. The mds keeps:
 *   'A' ino chunk   (empty): chunk @chunk of regular file @ino has data
 * and their count in the inode record's blocks field, with
 * SPACE_COUNTED set (records.c inode_get/inode_put). A record without that
 * bit (an mds before 1.6 wrote it, or a client before 1.6 extended the
 * file: it reports nothing) has no count: its blocks are size / 512, as
 * they always were, until a truncate to 0 starts counting again.
 *
 * A volume file's space is the data objects its live state owns in its
 * index (a snapshot's or clone's shared chunks belong to the state that
 * wrote them: counted once, there), read from the index at each reply.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "mds/ns_int.h"
#include "mds/vol.h"

static size_t key_chunk(uint8_t *k, uint64_t ino, uint64_t chunk)
{
	return key_tag_nn(k, 'A', ino, chunk);
}

static uint64_t round512(uint64_t bytes)
{
	return bytes / 512 + (bytes % 512 != 0);
}

uint64_t space_blocks(const struct inode *in)
{
	uint64_t data;

	if (!S_ISREG(in->a.mode) || in->a.layout == SDFS_LAYOUT_VOL)
		return 0;
	if (in->chunks == SPACE_UNKNOWN)
		return round512(in->a.size);
	/* Whole objects, but never more than the file's size: the last
	 * object of a file stops at its end. */
	data = in->chunks * in->a.obj_size;
	if (in->a.obj_size && data / in->a.obj_size != in->chunks)
		data = UINT64_MAX;
	return round512(data < in->a.size ? data : in->a.size);
}

/* Does the chunk's key exist? 1, 0 or -errno. */
static int chunk_has(struct ns *ns, uint64_t ino, uint64_t chunk)
{
	uint8_t k[17];
	char *v;
	size_t vlen;
	int ret = kvdb_get(ns->db, k, key_chunk(k, ino, chunk), &v, &vlen);

	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	free(v);
	return 1;
}

static int cmp_entry(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa & ~SDFS_NS_CHUNK_GONE;
	uint64_t b = *(const uint64_t *)pb & ~SDFS_NS_CHUNK_GONE;

	return a < b ? -1 : a > b;
}

int space_report_ok(const uint8_t *data, uint32_t len)
{
	uint32_t n;

	if (len < SDFS_NS_CHUNKS_HDR || le32_get(data) != SDFS_NS_CHUNKS_MAGIC)
		return 0;
	n = le32_get(data + 4);
	return n <= SDFS_NS_CHUNKS_MAX && len == SDFS_NS_CHUNKS_HDR + 8ull * n;
}

int space_apply(struct ns *ns, struct kvbatch *b, struct inode *in,
		const uint8_t *data, uint32_t len)
{
	uint32_t n = le32_get(data + 4);
	uint64_t *e, osz = in->a.obj_size;
	uint8_t k[17];
	int ret = 0;

	if (in->chunks == SPACE_UNKNOWN || n == 0 || osz == 0)
		return 0;
	(void)len;
	e = malloc(n * sizeof(*e));
	if (!e)
		return -ENOMEM;
	/* Entries in order, the last one of a chunk wins (made, punched,
	 * made again): a stable sort would do; position breaks the ties. */
	for (uint32_t i = 0; i < n; i++)
		e[i] = le64_get(data + SDFS_NS_CHUNKS_HDR + 8ull * i);
	for (uint32_t i = 1; i < n; i++)        /* insertion: mostly sorted */
		for (uint32_t j = i; j > 0 && cmp_entry(&e[j - 1], &e[j]) > 0; j--) {
			uint64_t t = e[j];

			e[j] = e[j - 1];
			e[j - 1] = t;
		}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t c = e[i] & ~SDFS_NS_CHUNK_GONE;
		int gone = (e[i] & SDFS_NS_CHUNK_GONE) != 0, has;

		if (i + 1 < n && (e[i + 1] & ~SDFS_NS_CHUNK_GONE) == c)
			continue;       /* a later entry of this chunk decides */
		/* a chunk past the end was freed by a truncate since */
		if (!gone && c >= (in->a.size + osz - 1) / osz)
			continue;
		has = chunk_has(ns, in->a.ino, c);
		if (has < 0) {
			ret = has;
			break;
		}
		if (gone && has) {
			kvbatch_del(b, k, key_chunk(k, in->a.ino, c));
			in->chunks--;
		} else if (!gone && !has) {
			kvbatch_put(b, k, key_chunk(k, in->a.ino, c), "", 0);
			in->chunks++;
		}
	}
	free(e);
	return ret;
}

int space_cut(struct ns *ns, struct kvbatch *b, struct inode *in, uint64_t new_size)
{
	uint64_t osz = in->a.obj_size, first = osz ? (new_size + osz - 1) / osz : 0;
	struct kviter *it = kvdb_iter(ns->db);
	uint8_t pfx[17];
	uint64_t gone = 0;

	if (!it)
		return -ENOMEM;
	key_chunk(pfx, in->a.ino, first);
	for (kviter_seek(it, pfx, 17); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const char *key = kviter_key(it, &klen);

		if (klen != 17 || memcmp(key, pfx, 9))
			break;
		kvbatch_del(b, key, klen);
		gone++;
	}
	kviter_free(it);
	if (new_size == 0)
		in->chunks = 0;         /* nothing left: counting (re)starts */
	else if (in->chunks != SPACE_UNKNOWN)
		in->chunks = in->chunks > gone ? in->chunks - gone : 0;
	return 0;
}

void space_drop(struct kviter *it, struct kvbatch *b, uint64_t ino)
{
	uint8_t pfx[9];

	batch_del_prefix(it, b, pfx, key_tag_n(pfx, 'A', ino));
}

void space_attr(struct ns *ns, const struct inode *in, struct sdfs_attr *a)
{
	struct vol_rec r;
	uint64_t vid, objects, data;

	*a = in->a;
	if (!S_ISREG(a->mode))
		return;
	a->blocks = space_blocks(in);
	if (a->layout != SDFS_LAYOUT_VOL)
		return;
	/* A failure to read the index shows 0: getattr must not fail
	 * for it (the data are what it cannot reach). */
	if (vol_live_get(ns, in->a.ino, &vid) || vol_rec_get(ns, vid, &r) ||
	    vol_count_owned(ns, &r, &objects))
		return;
	data = objects * r.obj_size;
	a->blocks = round512(data < a->size ? data : a->size);
}
