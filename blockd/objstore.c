/*
 * objstore.c - see objstore.h; the file format is in docs/format.md
 * ("blockd object files").
 *
 * Each object is one sparse file: a header, a table of two checksums per
 * 4 KiB block {cur, prev}, then the data. A write marks the header dirty
 * (with the new size and epoch), stores the entries {new, old}, then the
 * data, then the entries {new, new}, then the header clean. While the
 * header is dirty a block passes if its data matches cur or prev, so a
 * process killed anywhere in between leaves every block old or new.
 * In a clean object every entry must be settled (cur == prev) and the
 * data must match it, so a flip in either half is caught. The next
 * write to a dirty object settles its entries first (obj_settle).
 *
 * Writers keep a few objects open per lock stripe (struct obj_slot):
 * the fd and the checked header, so a small overwrite costs no open,
 * header read or close. A slot belongs to its stripe's write lock;
 * every other change of a file (replace, create over a tombstone,
 * remove) drops the slot first, and a slot whose file lost its name
 * (unlinked or renamed over behind the store's back) is not used.
 * Readers open the file themselves and read the header from disk.
 *
 * Not here: caching of blocks, power-loss ordering beyond what
 * objstore_sync asks of the kernel, fault injection (struct disk_ops).
 *
 * Concurrency: a striped array of rwlocks keyed by the oid. Reads,
 * stat, verify and sync share a stripe; write, replace, create and
 * remove hold it alone. There is no lock across objects; list takes the
 * stripes one at a time and may or may not see objects created or
 * removed meanwhile. One process per store directory.
 *
 * Names: the store keeps the ids that have a file (objects and
 * tombstones) in memory, per stripe a sorted array (struct oid_set),
 * filled by the one walk of the 256 directories at open and changed
 * only where a name appears or goes (obj_commit_tmp, objstore_remove),
 * under the stripe's write lock. So objstore_count needs no walk and a
 * listing page costs O(page + stripes * log n), not a walk of every
 * directory: a full listing of n objects was O(n * n / page) entries
 * read (docs/recovery.md "At scale"). With each name, what a listing
 * read of its header (struct name), forgotten when the stripe is taken
 * for writing for it: a listing reads only headers that changed since
 * the last one. 32 bytes per object.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* syncfs, rwlock kinds */
#endif
#include "blockd/objstore.h"

#include "common/csum.h"
#include "common/log.h"

#include <assert.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#define BLK             CSUM_BLOCK_SIZE
#define OBJ_MAGIC       0x314a424f53464453ull  /* "SDFSOBJ1" read as LE u64 */
#define OBJ_VERSION     1u
#define OBJ_HDR_AREA    4096u           /* header, then zeros */
#define OBJ_F_DIRTY     0x1u            /* entries may be unsettled */
#define OBJ_F_DELETED   0x2u            /* a tombstone: removed at `epoch` */
#define OBJ_F_BACKED    0x4u            /* absent blocks read through a source */
#define OBJ_F_KNOWN     (OBJ_F_DIRTY | OBJ_F_DELETED | OBJ_F_BACKED)
#define OBJ_F_TAG_SHIFT 16              /* BACKED: bits 16..31 = the tag's
					   bits 32..47 (objstore.h) */
#define OBJ_STRIPES     256
#define OBJ_SLOTS       2               /* open objects kept per stripe */
#define OBJ_CHUNK       1024u           /* blocks per table chunk: 16 KiB */
#define OBJ_SCAN_CHUNK  64u             /* blocks per scan read: 256 KiB */
#define OBJ_PATH_MAX    32              /* "xx/0123456789abcdef.tmp" */

/* On disk, little-endian. hdr_csum is XXH3-64 of the bytes before it. */
struct obj_hdr_disk {
	uint64_t magic;
	uint32_t version;
	uint32_t max_obj_size;  /* sets this file's layout */
	uint64_t oid;
	uint64_t size;          /* high-water mark */
	uint64_t epoch;         /* version of the last change (objstore.h) */
	uint32_t flags;         /* OBJ_F_* */
	uint32_t backing;       /* BACKED: the source's tag (objstore.h); else 0 */
	uint64_t hdr_csum;
};
static_assert(sizeof(struct obj_hdr_disk) == 56, "object header is 56 bytes");
static_assert(offsetof(struct obj_hdr_disk, hdr_csum) == 48, "csum is last");

/* One per block, little-endian on disk; {0, 0}: never written. */
struct obj_ent {
	uint64_t cur;           /* checksum of the block's newest data */
	uint64_t prev;          /* of the data before the newest write */
};
static_assert(sizeof(struct obj_ent) == 16, "table entry is 16 bytes");
static_assert(BLK % sizeof(struct obj_ent) == 0, "entries never span pages");

/* An open object file; header fields in host order, already checked. */
struct obj {
	int fd;
	uint64_t oid;
	uint32_t max_obj_size;
	uint64_t size;
	uint64_t epoch;
	uint32_t flags;
	uint64_t backing;       /* OBJ_F_BACKED: the caller's tag of the source */
	uint64_t nblocks;       /* table entries: max_obj_size / BLK */
	uint64_t data_off;
};

/*
 * A name and, once a listing read it, its header's version, size and
 * tombstone flag: what objstore_head returned then. Forgotten (known = 0)
 * whenever the stripe is taken for writing for that id, and filled only
 * under the stripe held for reading, so it is never older than the file.
 */
struct name {
	uint64_t oid, version, size;
	uint32_t known, deleted;
};

/* The names of one stripe, ascending by id. */
struct oid_set {
	struct name *ents;
	size_t n, cap;
};

/* An object kept open for the next write; o.fd < 0: empty. */
struct obj_slot {
	struct obj o;
	uint64_t used;          /* the stripe's write count at the last use */
};

struct objstore {
	int obj_fd;             /* <dir>/obj */
	uint32_t max_obj_size;
	char *dir;
	pthread_rwlock_t locks[OBJ_STRIPES];
	/* Per <xx> directory: names changed (link, rename, unlink) and the
	 * count its last fsync covered. objstore_sync fsyncs a directory
	 * only when they differ: an in-place write needs no directory flush. */
	atomic_uint_fast64_t dir_gen[256], dir_synced[256];
	/* Under the stripe's write lock only (see the top of this file). */
	struct obj_slot slots[OBJ_STRIPES][OBJ_SLOTS];
	uint64_t writes[OBJ_STRIPES];
	/* Under the stripe's lock: write to change, read to look; a name's
	 * header fields also under name_mu when the stripe is only read. */
	struct oid_set names[OBJ_STRIPES];
	pthread_mutex_t name_mu[OBJ_STRIPES];
	atomic_uint_fast64_t nnames;    /* sum of names[].n */
};


/*
 * The blocks of one I/O range [off, end). Blocks wholly inside the range
 * go straight to or from the caller's buffer; the first and last block,
 * when only partly covered, go through head and tail.
 */
struct span {
	uint64_t off, end;
	unsigned char *buf;
	uint64_t first, last;   /* block numbers; valid only when end > off */
	unsigned char head[BLK], tail[BLK];
};

static uint64_t nblocks_of(uint64_t size)
{
	return (size + BLK - 1) / BLK;
}

static unsigned stripe_of(uint64_t oid)
{
	return (unsigned)((oid * 0x9e3779b97f4a7c15ull) >> 56);
}

static pthread_rwlock_t *stripe(struct objstore *s, uint64_t oid)
{
	return &s->locks[stripe_of(oid)];
}

/* The version after @old for a change in @epoch (objstore.h). */
static uint64_t version_next(uint64_t old, uint64_t epoch)
{
	return (old >> 32) >= epoch ? old + 1 : epoch << 32 | 1;
}

static void obj_name(uint64_t oid, const char *suffix, char out[OBJ_PATH_MAX])
{
	snprintf(out, OBJ_PATH_MAX, "%02x/%016" PRIx64 "%s",
		 (unsigned)(oid & 0xff), oid, suffix);
}

static void obj_set_layout(struct obj *o, uint32_t max_obj_size)
{
	uint64_t tab = (uint64_t)max_obj_size / BLK * sizeof(struct obj_ent);

	o->max_obj_size = max_obj_size;
	o->nblocks = max_obj_size / BLK;
	o->data_off = OBJ_HDR_AREA + (tab + BLK - 1) / BLK * BLK;
}

static bool ent_is_zero(const struct obj_ent *e)
{
	return e->cur == 0 && e->prev == 0;
}

/* Does data with checksum @c belong to a block of @o whose entry is @e? */
static bool ent_accepts(const struct obj *o, const struct obj_ent *e,
			uint64_t c)
{
	if (ent_is_zero(e))
		return c == csum_zero_block();
	if (o->flags & OBJ_F_DIRTY)
		return c == e->cur || c == e->prev ||
		       (e->prev == 0 && c == csum_zero_block());
	return c == e->cur && c == e->prev;
}

/*
 * Is the block absent in a backed object (its bytes are the source's)?
 * Never written ({0, 0}), or a first write of it interrupted before its
 * data landed: entry {new, 0} and the data still zeros.
 */
static bool blk_absent(const struct obj *o, const struct obj_ent *e, uint64_t c)
{
	if (!(o->flags & OBJ_F_BACKED))
		return false;
	if (ent_is_zero(e))
		return true;
	return o->flags & OBJ_F_DIRTY && e->prev == 0 && c != e->cur &&
	       c == csum_zero_block();
}

/* pread/pwrite of a whole iovec list. Reads stop at EOF: returns bytes
 * done or -errno; writes return 0 or -errno. */
static ssize_t rw_full(int fd, const struct iovec *iov_in, int cnt,
		       uint64_t off, bool write)
{
	struct iovec iov[4];
	struct iovec *v = iov;
	size_t done = 0;

	sdfs_assert(cnt >= 0 && cnt <= 4);
	memcpy(iov, iov_in, cnt * sizeof(*iov));
	while (cnt > 0) {
		ssize_t n = write ? pwritev(fd, v, cnt, off + done)
				  : preadv(fd, v, cnt, off + done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			if (write)
				return -EIO;
			break;
		}
		done += n;
		while (cnt > 0 && (size_t)n >= v->iov_len) {
			n -= v->iov_len;
			v++;
			cnt--;
		}
		if (cnt > 0) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= n;
		}
	}
	return write ? 0 : (ssize_t)done;
}

static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	struct iovec v = { buf, len };

	return rw_full(fd, &v, 1, off, false);
}

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	struct iovec v = { (void *)buf, len };

	return (int)rw_full(fd, &v, 1, off, true);
}

static int hdr_write(const struct obj *o)
{
	struct obj_hdr_disk d = {
		.magic = htole64(OBJ_MAGIC),
		.version = htole32(OBJ_VERSION),
		.max_obj_size = htole32(o->max_obj_size),
		.oid = htole64(o->oid),
		.size = htole64(o->size),
		.epoch = htole64(o->epoch),
		.flags = htole32(o->flags | (uint32_t)(o->backing >> 32) << OBJ_F_TAG_SHIFT),
		.backing = htole32((uint32_t)o->backing),
	};

	d.hdr_csum = htole64(csum64(&d,
				    offsetof(struct obj_hdr_disk, hdr_csum)));
	return pwrite_full(o->fd, &d, sizeof(d), 0);
}

static int hdr_bad(uint64_t oid, const char *why)
{
	log_err("oid=%016" PRIx64 ": bad object header: %s", oid, why);
	return -EBADMSG;
}

/* Read and check the header of the open file o->fd; fills @o. */
static int hdr_read(struct obj *o, uint64_t oid)
{
	struct obj_hdr_disk d;
	struct stat st;
	ssize_t n;

	if (fstat(o->fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return hdr_bad(oid, "not a regular file");
	/* An object file gets its name only once its header and table are
	 * written (obj_commit_tmp), so an empty one is a name a power loss
	 * kept whose contents never reached the disk: no object. */
	if (st.st_size == 0) {
		log_warn("oid=%016" PRIx64 ": empty object file (its contents were "
			 "lost in a power loss): treated as absent", oid);
		return -ENOENT;
	}
	n = pread_full(o->fd, &d, sizeof(d), 0);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(d))
		return hdr_bad(oid, "file too short");
	if (le64toh(d.magic) != OBJ_MAGIC)
		return hdr_bad(oid, "magic");
	if (le64toh(d.hdr_csum) !=
	    csum64(&d, offsetof(struct obj_hdr_disk, hdr_csum)))
		return hdr_bad(oid, "checksum");
	if (le32toh(d.version) != OBJ_VERSION)
		return hdr_bad(oid, "version");

	uint32_t max = le32toh(d.max_obj_size);

	if (max == 0 || max % BLK || max > OBJSTORE_MAX_OBJ_SIZE)
		return hdr_bad(oid, "max_obj_size");
	if (le64toh(d.oid) != oid)
		return hdr_bad(oid, "oid of another object");
	if (le64toh(d.size) > max)
		return hdr_bad(oid, "size");
	uint32_t flags = le32toh(d.flags), hi = flags >> OBJ_F_TAG_SHIFT;

	/* the tag's high bits (a stripe source's, blockd/backing.h) only
	 * with BACKED and a nonzero low half */
	flags &= (1u << OBJ_F_TAG_SHIFT) - 1;
	if (flags & ~OBJ_F_KNOWN || !(flags & OBJ_F_BACKED) != !d.backing ||
	    (hi && !(flags & OBJ_F_BACKED)))
		return hdr_bad(oid, "flags");
	o->oid = oid;
	o->size = le64toh(d.size);
	o->epoch = le64toh(d.epoch);
	o->flags = flags;
	o->backing = (uint64_t)hi << 32 | le32toh(d.backing);
	obj_set_layout(o, max);
	/* Every object file is created at least data_off long, so a shorter
	 * one lost its table. */
	if ((uint64_t)st.st_size < o->data_off)
		return hdr_bad(oid, "file truncated");
	return 0;
}

static int obj_open(struct objstore *s, uint64_t oid, int mode, struct obj *o)
{
	char name[OBJ_PATH_MAX];
	int ret;

	obj_name(oid, "", name);
	o->fd = openat(s->obj_fd, name, mode | O_CLOEXEC);
	if (o->fd < 0)
		return -errno;
	ret = hdr_read(o, oid);
	if (ret < 0) {
		close(o->fd);
		o->fd = -1;
	}
	return ret;
}

static void obj_close(struct obj *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
}

/* obj_open, but a tombstone is no object: -ENOENT. */
static int obj_open_live(struct objstore *s, uint64_t oid, int mode, struct obj *o)
{
	int ret = obj_open(s, oid, mode, o);

	if (ret == 0 && o->flags & OBJ_F_DELETED) {
		obj_close(o);
		return -ENOENT;
	}
	return ret;
}

/*
 * Take @oid's open object out of its stripe's slots into *@o: 1, or 0
 * if none is kept. A kept file that lost its last name (removed or
 * renamed over by someone else) is closed and not returned. Stripe
 * held for writing.
 */
static int slot_take(struct objstore *s, uint64_t oid, struct obj *o)
{
	struct obj_slot *sl = s->slots[stripe_of(oid)];
	struct stat st;

	for (int i = 0; i < OBJ_SLOTS; i++) {
		if (sl[i].o.fd < 0 || sl[i].o.oid != oid)
			continue;
		*o = sl[i].o;
		sl[i].o.fd = -1;
		if (fstat(o->fd, &st) == 0 && st.st_nlink > 0)
			return 1;
		obj_close(o);
		return 0;
	}
	return 0;
}

/* Keep the open object @o for the next write, closing the least
 * recently used one of its stripe if all slots are taken. */
static void slot_keep(struct objstore *s, struct obj *o)
{
	unsigned k = stripe_of(o->oid);
	struct obj_slot *sl = s->slots[k], *victim = &sl[0];

	for (int i = 0; i < OBJ_SLOTS; i++) {
		if (sl[i].o.fd < 0) {
			victim = &sl[i];
			break;
		}
		if (sl[i].used < victim->used)
			victim = &sl[i];
	}
	obj_close(&victim->o);
	victim->o = *o;
	victim->used = ++s->writes[k];
	o->fd = -1;
}

/* Forget @oid's open object before its file changes; stripe held for
 * writing. */
static void slot_drop(struct objstore *s, uint64_t oid)
{
	struct obj o;

	if (slot_take(s, oid, &o))
		obj_close(&o);
}

/* The index of the first id in @set that is >= @oid. */
static size_t set_lower(const struct oid_set *set, uint64_t oid)
{
	size_t lo = 0, hi = set->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (set->ents[mid].oid < oid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Room for one more id, so that adding one after a rename cannot fail. */
static int set_reserve(struct oid_set *set)
{
	struct name *ents;
	size_t cap;

	if (set->n < set->cap)
		return 0;
	cap = set->cap ? set->cap * 2 : 16;
	ents = realloc(set->ents, cap * sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	set->ents = ents;
	set->cap = cap;
	return 0;
}

/* @oid has a file now; stripe held for writing, set_reserve done. */
static void names_add(struct objstore *s, uint64_t oid)
{
	struct oid_set *set = &s->names[stripe_of(oid)];
	size_t i = set_lower(set, oid);

	if (i < set->n && set->ents[i].oid == oid)
		return;
	assert(set->n < set->cap);
	memmove(set->ents + i + 1, set->ents + i, (set->n - i) * sizeof(*set->ents));
	set->ents[i] = (struct name){ .oid = oid };
	set->n++;
	atomic_fetch_add(&s->nnames, 1);
}

/* @oid's file is gone; stripe held for writing. */
static void names_del(struct objstore *s, uint64_t oid)
{
	struct oid_set *set = &s->names[stripe_of(oid)];
	size_t i = set_lower(set, oid);

	if (i == set->n || set->ents[i].oid != oid)
		return;
	memmove(set->ents + i, set->ents + i + 1, (set->n - i - 1) * sizeof(*set->ents));
	set->n--;
	atomic_fetch_sub(&s->nnames, 1);
}

/* @oid's stripe for writing; what a listing learnt of its header is
 * forgotten (the file may change now). */
static void stripe_wrlock(struct objstore *s, uint64_t oid)
{
	struct oid_set *set = &s->names[stripe_of(oid)];
	size_t i;

	pthread_rwlock_wrlock(stripe(s, oid));
	i = set_lower(set, oid);
	if (i < set->n && set->ents[i].oid == oid)
		set->ents[i].known = 0;
}

/* Entries [b0, b0 + n) in host order. The file always covers the whole
 * table, so a short read means it was cut. */
static int tab_read(const struct obj *o, uint64_t b0, size_t n,
		    struct obj_ent *ents)
{
	size_t len = n * sizeof(*ents);
	ssize_t got = pread_full(o->fd, ents, len,
				 OBJ_HDR_AREA + b0 * sizeof(*ents));

	if (got < 0)
		return (int)got;
	if ((size_t)got < len) {
		log_err("oid=%016" PRIx64 ": checksum table truncated", o->oid);
		return -EBADMSG;
	}
	for (size_t i = 0; i < n; i++) {
		ents[i].cur = le64toh(ents[i].cur);
		ents[i].prev = le64toh(ents[i].prev);
	}
	return 0;
}

/* Write entries [b0, b0 + n); @ents is left in disk byte order. */
static int tab_write(const struct obj *o, uint64_t b0, size_t n,
		     struct obj_ent *ents)
{
	for (size_t i = 0; i < n; i++) {
		ents[i].cur = htole64(ents[i].cur);
		ents[i].prev = htole64(ents[i].prev);
	}
	return pwrite_full(o->fd, ents, n * sizeof(*ents),
			   OBJ_HDR_AREA + b0 * sizeof(*ents));
}

static int blk_bad(const struct obj *o, uint64_t b)
{
	log_err("oid=%016" PRIx64 " block=%" PRIu64 ": checksum mismatch",
		o->oid, b);
	return -EBADMSG;
}

static void span_init(struct span *sp, uint64_t off, size_t len, void *buf)
{
	sp->off = off;
	sp->end = off + len;
	sp->buf = buf;
	sp->first = off / BLK;
	sp->last = len ? (sp->end - 1) / BLK : sp->first;
}

static bool span_whole(const struct span *sp, uint64_t b)
{
	return b * BLK >= sp->off && (b + 1) * BLK <= sp->end;
}

static unsigned char *span_block(struct span *sp, uint64_t b)
{
	if (span_whole(sp, b))
		return sp->buf + (b * BLK - sp->off);
	return b == sp->first ? sp->head : sp->tail;
}

/* Copy the caller's part of partial block @b between it and the buffer. */
static void span_copy(struct span *sp, uint64_t b, bool to_caller)
{
	uint64_t lo = b * BLK > sp->off ? b * BLK : sp->off;
	uint64_t hi = (b + 1) * BLK < sp->end ? (b + 1) * BLK : sp->end;
	unsigned char *blk = span_block(sp, b) + (lo - b * BLK);
	unsigned char *user = sp->buf + (lo - sp->off);

	if (to_caller)
		memcpy(user, blk, hi - lo);
	else
		memcpy(blk, user, hi - lo);
}

/* The iovecs for blocks [b0, b0 + n): at most head, middle, tail. */
static int span_iov(struct span *sp, uint64_t b0, size_t n, struct iovec *iov)
{
	int cnt = 0;

	for (uint64_t b = b0; b < b0 + n; b++) {
		unsigned char *p = span_block(sp, b);

		if (cnt && (unsigned char *)iov[cnt - 1].iov_base +
			   iov[cnt - 1].iov_len == p) {
			iov[cnt - 1].iov_len += BLK;
			continue;
		}
		sdfs_assert(cnt < 3);
		iov[cnt].iov_base = p;
		iov[cnt].iov_len = BLK;
		cnt++;
	}
	return cnt;
}

/* Read blocks [b0, b0 + n) of the data area; past EOF reads zeros. */
static int data_read(const struct obj *o, uint64_t b0, const struct iovec *iov,
		     int cnt)
{
	ssize_t n = rw_full(o->fd, iov, cnt, o->data_off + b0 * BLK, false);
	size_t got, have;

	if (n < 0)
		return (int)n;
	got = (size_t)n;
	for (int i = 0; i < cnt; i++) {
		have = got < iov[i].iov_len ? got : iov[i].iov_len;
		memset((char *)iov[i].iov_base + have, 0,
		       iov[i].iov_len - have);
		got -= have;
	}
	return 0;
}

/* Read partial block @b into @blk and check it; a backed object's
 * absent block is @src's (the source's block), -ENODATA without it. */
static int blk_load(const struct obj *o, uint64_t b, unsigned char *blk,
		    const void *src)
{
	struct iovec v = { blk, BLK };
	struct obj_ent e;
	uint64_t c;
	int ret;

	ret = tab_read(o, b, 1, &e);
	if (ret < 0)
		return ret;
	ret = data_read(o, b, &v, 1);
	if (ret < 0)
		return ret;
	c = csum64(blk, BLK);
	if (!ent_accepts(o, &e, c))
		return blk_bad(o, b);
	if (blk_absent(o, &e, c)) {
		if (!src)
			return -ENODATA;
		memcpy(blk, src, BLK);
	}
	return 0;
}

/*
 * After an interrupted write: give every entry with cur != prev the
 * checksum of the data the block holds, so that the object can be
 * clean again. Only those blocks are read. A block matching neither is
 * corrupt; it stays unsettled and keeps failing reads.
 */
static int obj_settle(struct obj *o)
{
	uint64_t nb = nblocks_of(o->size), fixed = 0;
	struct obj_ent ents[OBJ_CHUNK];
	unsigned char blk[BLK];
	int ret;

	for (uint64_t b0 = 0; b0 < nb; b0 += OBJ_CHUNK) {
		size_t n = nb - b0 < OBJ_CHUNK ? nb - b0 : OBJ_CHUNK;
		bool changed = false;

		ret = tab_read(o, b0, n, ents);
		if (ret < 0)
			return ret;
		for (size_t i = 0; i < n; i++) {
			struct iovec v = { blk, BLK };
			struct obj_ent *e = &ents[i];
			uint64_t c;

			if (e->cur == e->prev)
				continue;
			ret = data_read(o, b0 + i, &v, 1);
			if (ret < 0)
				return ret;
			c = csum64(blk, BLK);
			if (c != e->cur && e->prev == 0 && c == csum_zero_block()) {
				/* a first write into a backed object's absent
				 * block that did not land: absent again */
				e->cur = 0;
				changed = true;
				fixed++;
				continue;
			}
			if (c != e->cur && c != e->prev) {
				blk_bad(o, b0 + i);
				continue;
			}
			e->cur = e->prev = c;
			changed = true;
			fixed++;
		}
		if (changed) {
			ret = tab_write(o, b0, n, ents);
			if (ret < 0)
				return ret;
		}
	}
	log_warn("oid=%016" PRIx64 ": settled %" PRIu64 " blocks of an"
		 " interrupted write", o->oid, fixed);
	return 0;
}

/*
 * The write protocol (docs/format.md): the header dirty with the new
 * size and epoch; per chunk of blocks the entries {new, old}, the data
 * and the entries {new, new}; the header clean. Stopped anywhere, each
 * block is old or new; on error the header stays dirty.
 */
static int obj_write_blocks(struct obj *o, uint64_t off, const void *buf,
			    size_t len, uint64_t version,
			    const struct objstore_src *src)
{
	struct obj_ent ents[OBJ_CHUNK];
	struct span sp;
	int ret;

	if (o->flags & OBJ_F_DIRTY) {
		ret = obj_settle(o);
		if (ret < 0)
			return ret;
	}
	span_init(&sp, off, len, (void *)buf);
	/* Load partial blocks before touching anything: a corrupt one
	 * fails the write with the object unchanged. */
	if (len && !span_whole(&sp, sp.first)) {
		ret = blk_load(o, sp.first, sp.head, src ? src->head : NULL);
		if (ret < 0)
			return ret;
		span_copy(&sp, sp.first, false);
	}
	if (len && sp.last != sp.first && !span_whole(&sp, sp.last)) {
		ret = blk_load(o, sp.last, sp.tail, src ? src->tail : NULL);
		if (ret < 0)
			return ret;
		span_copy(&sp, sp.last, false);
	}

	if (len && sp.end > o->size)
		o->size = sp.end;
	o->epoch = version;
	o->flags |= OBJ_F_DIRTY;
	ret = hdr_write(o);
	if (ret < 0)
		return ret;

	for (uint64_t b0 = sp.first; len && b0 <= sp.last; b0 += OBJ_CHUNK) {
		size_t n = sp.last - b0 + 1 < OBJ_CHUNK ? sp.last - b0 + 1
							 : OBJ_CHUNK;
		struct iovec iov[3];
		int cnt;

		ret = tab_read(o, b0, n, ents);
		if (ret < 0)
			return ret;
		for (size_t i = 0; i < n; i++) {
			/* Settled: cur is what the block holds now; in a
			 * backed object {0, 0} is absent, prev 0 says so. */
			if (!ent_is_zero(&ents[i]))
				ents[i].prev = ents[i].cur;
			else
				ents[i].prev = o->flags & OBJ_F_BACKED ? 0
								     : csum_zero_block();
			ents[i].cur = csum64(span_block(&sp, b0 + i), BLK);
		}
		ret = tab_write(o, b0, n, ents);
		if (ret < 0)
			return ret;
		cnt = span_iov(&sp, b0, n, iov);
		ret = (int)rw_full(o->fd, iov, cnt, o->data_off + b0 * BLK,
				   true);
		if (ret < 0)
			return ret;
		/* tab_write left the entries in disk order; cur == prev
		 * holds in either. */
		for (size_t i = 0; i < n; i++)
			ents[i].prev = ents[i].cur;
		ret = pwrite_full(o->fd, ents, n * sizeof(*ents),
				  OBJ_HDR_AREA + b0 * sizeof(*ents));
		if (ret < 0)
			return ret;
	}

	o->flags &= ~OBJ_F_DIRTY;
	return hdr_write(o);
}

/*
 * Read every block below the object's size in chunks and hand each
 * chunk's entries and data checksums to @fn, which returns 0 to go on
 * or a negative errno to stop.
 */
typedef int (*obj_scan_fn)(struct obj *o, uint64_t b0, size_t n,
			   const struct obj_ent *ents, const uint64_t *csums,
			   void *arg);

static int obj_scan(struct obj *o, obj_scan_fn fn, void *arg)
{
	uint64_t nb = nblocks_of(o->size);
	struct obj_ent ents[OBJ_SCAN_CHUNK];
	uint64_t csums[OBJ_SCAN_CHUNK];
	unsigned char *data;
	int ret = 0;

	data = malloc((size_t)OBJ_SCAN_CHUNK * BLK);
	if (!data)
		return -ENOMEM;
	for (uint64_t b0 = 0; b0 < nb; b0 += OBJ_SCAN_CHUNK) {
		size_t n = nb - b0 < OBJ_SCAN_CHUNK ? nb - b0 : OBJ_SCAN_CHUNK;
		struct iovec v = { data, n * BLK };

		ret = tab_read(o, b0, n, ents);
		if (ret < 0)
			goto out_free;
		ret = data_read(o, b0, &v, 1);
		if (ret < 0)
			goto out_free;
		for (size_t i = 0; i < n; i++)
			csums[i] = csum64(data + i * BLK, BLK);
		ret = fn(o, b0, n, ents, csums, arg);
		if (ret < 0)
			goto out_free;
	}
	ret = 0;
out_free:
	free(data);
	return ret;
}

static int verify_chunk(struct obj *o, uint64_t b0, size_t n,
			const struct obj_ent *ents, const uint64_t *csums,
			void *arg)
{
	uint64_t *out = arg;

	for (size_t i = 0; i < n; i++) {
		if (!ent_accepts(o, &ents[i], csums[i]))
			return blk_bad(o, b0 + i);
		if (out)
			out[b0 + i] = htole64(csums[i]);
	}
	return 0;
}

/* A new object file at <name>.tmp holding an empty object. */
static int obj_new_tmp(struct objstore *s, uint64_t oid, uint64_t version,
		       struct obj *o)
{
	char tmp[OBJ_PATH_MAX];
	int ret;

	obj_name(oid, ".tmp", tmp);
	/* Never O_TRUNC: a leftover could still be a link to the object. */
	if (unlinkat(s->obj_fd, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	o->fd = openat(s->obj_fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
		       0600);
	if (o->fd < 0)
		return -errno;
	o->oid = oid;
	o->size = 0;
	o->epoch = version;
	o->flags = 0;
	o->backing = 0;
	obj_set_layout(o, s->max_obj_size);
	if (ftruncate(o->fd, o->data_off) < 0) {
		ret = -errno;
		goto out_unlink;
	}
	ret = hdr_write(o);
	if (ret < 0)
		goto out_unlink;
	return 0;
out_unlink:
	unlinkat(s->obj_fd, tmp, 0);
	obj_close(o);
	return ret;
}

/*
 * Give the filled <name>.tmp its final name: renamed over an existing
 * object when @replace, else linked (-EEXIST if the object exists).
 * The temporary name is gone afterwards either way.
 */
static int obj_commit_tmp(struct objstore *s, uint64_t oid, bool replace)
{
	char tmp[OBJ_PATH_MAX], name[OBJ_PATH_MAX];
	int ret = 0;

	obj_name(oid, ".tmp", tmp);
	obj_name(oid, "", name);
	ret = set_reserve(&s->names[stripe_of(oid)]);
	if (ret < 0)
		goto out_unlink;
	atomic_fetch_add(&s->dir_gen[oid & 0xff], 1);
	if (replace) {
		if (renameat(s->obj_fd, tmp, s->obj_fd, name) == 0) {
			names_add(s, oid);
			return 0;
		}
		ret = -errno;
	} else if (linkat(s->obj_fd, tmp, s->obj_fd, name, 0) < 0) {
		struct stat st;

		ret = -errno;
		/* an empty file is no object (hdr_read): replace it */
		if (ret == -EEXIST && fstatat(s->obj_fd, name, &st, 0) == 0 &&
		    st.st_size == 0 && renameat(s->obj_fd, tmp, s->obj_fd, name) == 0) {
			names_add(s, oid);
			return 0;
		}
	} else {
		names_add(s, oid);
	}
out_unlink:
	unlinkat(s->obj_fd, tmp, 0);
	return ret;
}

static void obj_drop_tmp(struct objstore *s, uint64_t oid)
{
	char tmp[OBJ_PATH_MAX];

	obj_name(oid, ".tmp", tmp);
	unlinkat(s->obj_fd, tmp, 0);
}

/* Build a whole new object in a temporary file and commit it. */
static int obj_build(struct objstore *s, uint64_t oid, uint64_t off,
		     const void *buf, size_t len, uint64_t version, bool replace)
{
	struct obj o;
	int ret;

	ret = obj_new_tmp(s, oid, version, &o);
	if (ret < 0)
		return ret;
	if (len) {
		ret = obj_write_blocks(&o, off, buf, len, version, NULL);
		if (ret < 0)
			goto out_drop;
	}
	obj_close(&o);
	return obj_commit_tmp(s, oid, replace);
out_drop:
	obj_close(&o);
	obj_drop_tmp(s, oid);
	return ret;
}

static bool is_tmp_name(const char *name)
{
	size_t len = strlen(name);

	if (len != 16 + 4 || strcmp(name + 16, ".tmp") != 0)
		return false;
	return strspn(name, "0123456789abcdef") == 16;
}

/* Strict: exactly 16 lowercase hex digits. */
static bool parse_obj_name(const char *name, uint64_t *oid)
{
	uint64_t v = 0;

	for (int i = 0; i < 16; i++) {
		char c = name[i];

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return false;
	}
	if (name[16] != '\0')
		return false;
	*oid = v;
	return true;
}

static bool is_regular(int dir_fd, const struct dirent *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_REG;
	return fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b)
{
	return cmp_u64(&((const struct name *)a)->oid, &((const struct name *)b)->oid);
}

/* A name found at open: appended, sorted once the walk is done. */
static int names_load(struct objstore *s, uint64_t oid)
{
	struct oid_set *set = &s->names[stripe_of(oid)];
	int ret = set_reserve(set);

	if (ret == 0) {
		set->ents[set->n++] = (struct name){ .oid = oid };
		atomic_fetch_add(&s->nnames, 1);
	}
	return ret;
}

/*
 * Create the 256 subdirectories, remove leftover temporary files and
 * learn the names of the objects (the one walk of every directory; the
 * rules are those objstore_list always had: 16 lowercase hex digits, in
 * the directory of the id's low byte, a regular file).
 */
static int store_prepare(struct objstore *s)
{
	int obj_fd = s->obj_fd;

	for (unsigned i = 0; i < 256; i++) {
		char sub[3];
		struct dirent *de;
		uint64_t oid;
		DIR *d;
		int fd;

		snprintf(sub, sizeof(sub), "%02x", i);
		if (mkdirat(obj_fd, sub, 0700) < 0 && errno != EEXIST)
			return -errno;
		fd = openat(obj_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			return -errno;
		}
		while ((de = readdir(d)) != NULL) {
			if (parse_obj_name(de->d_name, &oid) && (oid & 0xff) == i &&
			    is_regular(fd, de)) {
				int ret = names_load(s, oid);

				if (ret < 0) {
					closedir(d);
					return ret;
				}
				continue;
			}
			if (!is_tmp_name(de->d_name))
				continue;
			log_info("removing leftover %s/%s", sub, de->d_name);
			if (unlinkat(fd, de->d_name, 0) < 0 &&
			    errno != ENOENT) {
				int ret = -errno;

				closedir(d);
				return ret;
			}
		}
		closedir(d);
	}
	for (unsigned k = 0; k < OBJ_STRIPES; k++)
		if (s->names[k].n)      /* empty: ents is NULL, and qsort's nonnull */
			qsort(s->names[k].ents, s->names[k].n, sizeof(struct name),
			      cmp_name);
	return 0;
}

int objstore_open(const char *dir, uint32_t max_obj_size, struct objstore **out)
{
	pthread_rwlockattr_t attr;
	struct objstore *s;
	int dir_fd, i, ret;

	if (max_obj_size == 0 || max_obj_size % BLK ||
	    max_obj_size > OBJSTORE_MAX_OBJ_SIZE)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->max_obj_size = max_obj_size;
	for (i = 0; i < 256; i++)       /* names from before: not known synced */
		atomic_init(&s->dir_gen[i], 1);
	s->dir = strdup(dir);
	if (!s->dir) {
		ret = -ENOMEM;
		goto out_free;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		goto out_free;
	}
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		ret = -errno;
		goto out_free;
	}
	if (mkdirat(dir_fd, "obj", 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		close(dir_fd);
		goto out_free;
	}
	s->obj_fd = openat(dir_fd, "obj", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->obj_fd < 0) {
		ret = -errno;
		close(dir_fd);
		goto out_free;
	}
	close(dir_fd);
	ret = store_prepare(s);
	if (ret < 0)
		goto out_close;

	pthread_rwlockattr_init(&attr);
	/* Writers must not starve behind a stream of reads of one object. */
	pthread_rwlockattr_setkind_np(&attr,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (i = 0; i < OBJ_STRIPES; i++) {
		pthread_rwlock_init(&s->locks[i], &attr);
		pthread_mutex_init(&s->name_mu[i], NULL);
		for (int j = 0; j < OBJ_SLOTS; j++)
			s->slots[i][j].o.fd = -1;
	}
	pthread_rwlockattr_destroy(&attr);
	*out = s;
	return 0;
out_close:
	close(s->obj_fd);
	for (i = 0; i < OBJ_STRIPES; i++)
		free(s->names[i].ents);
out_free:
	log_err("dir=%s: cannot open object store: %s", dir, strerror(-ret));
	free(s->dir);
	free(s);
	return ret;
}

void objstore_close(struct objstore *s)
{
	if (!s)
		return;
	for (int i = 0; i < OBJ_STRIPES; i++) {
		pthread_rwlock_destroy(&s->locks[i]);
		pthread_mutex_destroy(&s->name_mu[i]);
		for (int j = 0; j < OBJ_SLOTS; j++)
			obj_close(&s->slots[i][j].o);
		free(s->names[i].ents);
	}
	close(s->obj_fd);
	free(s->dir);
	free(s);
}

int objstore_create(struct objstore *s, uint64_t oid, uint64_t epoch)
{
	char name[OBJ_PATH_MAX];
	int ret;

	struct obj o;

	obj_name(oid, "", name);
	stripe_wrlock(s, oid);
	slot_drop(s, oid);
	ret = obj_open(s, oid, O_RDONLY, &o);
	if (ret == 0) {
		bool buried = o.flags & OBJ_F_DELETED;

		obj_close(&o);
		ret = buried ? obj_build(s, oid, 0, NULL, 0,
					 version_next(o.epoch, epoch), true) : -EEXIST;
	} else if (faccessat(s->obj_fd, name, F_OK, AT_EACCESS) == 0) {
		ret = -EEXIST;  /* there, but unreadable: not ours to replace */
	} else {
		ret = obj_build(s, oid, 0, NULL, 0, version_next(0, epoch), false);
	}
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_write(struct objstore *s, uint64_t oid, uint64_t off,
		   const void *buf, size_t len, uint64_t epoch, unsigned flags)
{
	return objstore_write_src(s, oid, off, buf, len, epoch, flags, NULL);
}

int objstore_write_src(struct objstore *s, uint64_t oid, uint64_t off,
		       const void *buf, size_t len, uint64_t epoch, unsigned flags,
		       const struct objstore_src *src)
{
	struct obj o;
	int ret;

	if (off > s->max_obj_size || len > s->max_obj_size - off)
		return -EFBIG;
	stripe_wrlock(s, oid);
	ret = slot_take(s, oid, &o) ? 0 : obj_open(s, oid, O_RDWR, &o);
	bool buried = ret == 0 && o.flags & OBJ_F_DELETED;
	uint64_t was = ret == 0 ? o.epoch : 0;
	if (buried) {
		obj_close(&o);
		ret = -ENOENT;
	}
	if (ret == -ENOENT && flags & OBJSTORE_CREATE) {
		/* A new object appears whole or not at all (over a tombstone). */
		ret = obj_build(s, oid, off, buf, len, version_next(was, epoch), buried);
		goto out_unlock;
	}
	if (ret < 0)
		goto out_unlock;
	if (off + len > o.max_obj_size) {
		ret = -EFBIG;
		goto out_close;
	}
	ret = obj_write_blocks(&o, off, buf, len, version_next(o.epoch, epoch), src);
	if (ret == 0)
		slot_keep(s, &o);       /* header clean and as in o */
out_close:
	obj_close(&o);
out_unlock:
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_replace(struct objstore *s, uint64_t oid, const void *buf,
		     size_t len, uint64_t version)
{
	int ret;

	if (len > s->max_obj_size)
		return -EFBIG;
	stripe_wrlock(s, oid);
	slot_drop(s, oid);
	ret = obj_build(s, oid, 0, buf, len, version, true);
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_put(struct objstore *s, uint64_t oid, const void *buf, size_t len,
		 uint64_t epoch)
{
	uint64_t was = 0;
	struct obj o;
	int ret;

	if (len > s->max_obj_size)
		return -EFBIG;
	stripe_wrlock(s, oid);
	slot_drop(s, oid);
	if (obj_open(s, oid, O_RDONLY, &o) == 0) {
		was = o.epoch;
		obj_close(&o);
	}
	ret = obj_build(s, oid, 0, buf, len, version_next(was, epoch), true);
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_put_backed(struct objstore *s, uint64_t oid, uint64_t backing,
			uint64_t size, uint64_t off, const void *buf, size_t len,
			const struct objstore_src *src, uint64_t epoch)
{
	uint64_t was = 0, version;
	struct obj o;
	int ret;

	if (!(uint32_t)backing || backing >> 48 || size > s->max_obj_size ||
	    off > s->max_obj_size ||
	    len > s->max_obj_size - off)
		return -EINVAL;
	stripe_wrlock(s, oid);
	slot_drop(s, oid);
	if (obj_open(s, oid, O_RDONLY, &o) == 0) {
		was = o.epoch;
		obj_close(&o);
	}
	version = version_next(was, epoch);
	ret = obj_new_tmp(s, oid, version, &o);
	if (ret < 0)
		goto out_unlock;
	o.flags = OBJ_F_BACKED;
	o.backing = backing;
	o.size = size;
	ret = hdr_write(&o);
	if (ret == 0 && len)
		ret = obj_write_blocks(&o, off, buf, len, version, src);
	obj_close(&o);
	if (ret == 0)
		ret = obj_commit_tmp(s, oid, true);
	else
		obj_drop_tmp(s, oid);
out_unlock:
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

/* Open @oid for writing as a backed object of @backing: -ESTALE if it
 * is not (any more), settled. Stripe held for writing. */
static int backed_open(struct objstore *s, uint64_t oid, uint64_t backing,
		       struct obj *o)
{
	int ret = slot_take(s, oid, o) ? 0 : obj_open(s, oid, O_RDWR, o);

	if (ret < 0)
		return ret;
	if (o->flags & OBJ_F_DELETED)
		ret = -ENOENT;
	else if (!(o->flags & OBJ_F_BACKED) || o->backing != backing)
		ret = -ESTALE;
	else if (o->flags & OBJ_F_DIRTY)
		ret = obj_settle(o);
	if (ret < 0)
		obj_close(o);
	return ret;
}

static bool blk_is_zero(const unsigned char *b)
{
	static const unsigned char zero[BLK];

	return !memcmp(b, zero, BLK);
}

/* The source's blocks @data for the absent ones of [b0, b0 + n) (one
 * table chunk at most), as any write does them, the version kept: the
 * object's content does not change. An absent block's data is zeros, so
 * a zero source block needs its entry only. */
static int fill_chunk(struct obj *o, uint64_t b0, size_t n, const unsigned char *data)
{
	struct obj_ent ents[OBJ_CHUNK];
	bool any = false, zeros = false;
	int ret;

	ret = tab_read(o, b0, n, ents);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n; i++) {
		if (!ent_is_zero(&ents[i]))
			continue;
		if (blk_is_zero(data + i * BLK)) {
			zeros = true;
			continue;
		}
		any = true;
	}
	if (!any && !zeros)
		return 0;
	if (any && !(o->flags & OBJ_F_DIRTY)) {
		o->flags |= OBJ_F_DIRTY;
		ret = hdr_write(o);
		if (ret < 0)
			return ret;
	}
	if (any) {
		struct obj_ent mid[OBJ_CHUNK];

		memcpy(mid, ents, n * sizeof(*ents));
		for (size_t i = 0; i < n; i++)
			if (ent_is_zero(&ents[i]) && !blk_is_zero(data + i * BLK))
				mid[i].cur = csum64(data + i * BLK, BLK);  /* {new, 0} */
		ret = tab_write(o, b0, n, mid);
		if (ret < 0)
			return ret;
		for (size_t i = 0; i < n; i++) {
			if (!ent_is_zero(&ents[i]) || blk_is_zero(data + i * BLK))
				continue;
			ret = pwrite_full(o->fd, data + i * BLK, BLK,
					  o->data_off + (b0 + i) * BLK);
			if (ret < 0)
				return ret;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (ent_is_zero(&ents[i]))
			ents[i].cur = ents[i].prev = csum64(data + i * BLK, BLK);
	return tab_write(o, b0, n, ents);
}

int objstore_fill(struct objstore *s, uint64_t oid, uint64_t backing, uint64_t off,
		  const void *buf, size_t len)
{
	struct obj o;
	int ret;

	if (off % BLK || len % BLK || off > s->max_obj_size ||
	    len > s->max_obj_size - off)
		return -EINVAL;
	stripe_wrlock(s, oid);
	ret = backed_open(s, oid, backing, &o);
	if (ret < 0)
		goto out_unlock;
	for (uint64_t b0 = off / BLK; ret == 0 && b0 < (off + len) / BLK &&
	     b0 < nblocks_of(o.size); b0 += OBJ_CHUNK) {
		uint64_t end = (off + len) / BLK < nblocks_of(o.size) ?
			       (off + len) / BLK : nblocks_of(o.size);
		size_t n = end - b0 < OBJ_CHUNK ? end - b0 : OBJ_CHUNK;

		ret = fill_chunk(&o, b0, n, (const unsigned char *)buf + (b0 * BLK - off));
	}
	if (ret == 0 && o.flags & OBJ_F_DIRTY) {
		o.flags &= ~OBJ_F_DIRTY;
		ret = hdr_write(&o);
	}
	if (ret == 0)
		slot_keep(s, &o);
	obj_close(&o);
out_unlock:
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_unback(struct objstore *s, uint64_t oid, uint64_t backing)
{
	struct obj_ent ents[OBJ_CHUNK];
	struct obj o;
	int ret;

	stripe_wrlock(s, oid);
	ret = backed_open(s, oid, backing, &o);
	if (ret < 0)
		goto out_unlock;
	for (uint64_t b0 = 0; ret == 0 && b0 < nblocks_of(o.size); b0 += OBJ_CHUNK) {
		size_t n = nblocks_of(o.size) - b0 < OBJ_CHUNK ? nblocks_of(o.size) - b0
							       : OBJ_CHUNK;

		ret = tab_read(&o, b0, n, ents);
		for (size_t i = 0; ret == 0 && i < n; i++)
			if (ent_is_zero(&ents[i]))
				ret = -EAGAIN;
	}
	/* The filled blocks reach the disk before the header stops
	 * reading through: after a power loss {0, 0} would mean zeros. */
	if (ret == 0 && fdatasync(o.fd) < 0)
		ret = -errno;
	if (ret == 0) {
		o.flags &= ~(OBJ_F_BACKED | OBJ_F_DIRTY);      /* settled */
		o.backing = 0;
		ret = hdr_write(&o);
	}
	if (ret == 0)
		slot_keep(s, &o);
	obj_close(&o);
out_unlock:
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_backing(struct objstore *s, uint64_t oid, uint64_t *backing, uint64_t *size)
{
	struct obj o;
	int ret;

	pthread_rwlock_rdlock(stripe(s, oid));
	ret = obj_open_live(s, oid, O_RDONLY, &o);
	if (ret == 0) {
		*backing = o.backing;
		if (size)
			*size = o.size;
		obj_close(&o);
	}
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

static int obj_read_range(struct obj *o, uint64_t off, void *buf, size_t len,
			  uint8_t *absent)
{
	struct obj_ent ents[OBJ_CHUNK];
	struct span sp;
	int ret;

	span_init(&sp, off, len, buf);
	for (uint64_t b0 = sp.first; b0 <= sp.last; b0 += OBJ_CHUNK) {
		size_t n = sp.last - b0 + 1 < OBJ_CHUNK ? sp.last - b0 + 1
							 : OBJ_CHUNK;
		struct iovec iov[3];
		int cnt;

		ret = tab_read(o, b0, n, ents);
		if (ret < 0)
			return ret;
		cnt = span_iov(&sp, b0, n, iov);
		ret = data_read(o, b0, iov, cnt);
		if (ret < 0)
			return ret;
		for (size_t i = 0; i < n; i++) {
			uint64_t b = b0 + i;

			uint64_t c = csum64(span_block(&sp, b), BLK);

			if (!ent_accepts(o, &ents[i], c))
				return blk_bad(o, b);
			if (absent)
				absent[b - sp.first] = blk_absent(o, &ents[i], c);
			if (!span_whole(&sp, b))
				span_copy(&sp, b, true);
		}
	}
	return 0;
}

int objstore_read(struct objstore *s, uint64_t oid, uint64_t off,
		  void *buf, size_t len, size_t *got)
{
	return objstore_read_map(s, oid, off, buf, len, got, NULL, NULL);
}

int objstore_read_map(struct objstore *s, uint64_t oid, uint64_t off,
		      void *buf, size_t len, size_t *got, uint64_t *backing,
		      uint8_t *absent)
{
	struct obj o;
	int ret;

	pthread_rwlock_rdlock(stripe(s, oid));
	ret = obj_open_live(s, oid, O_RDONLY, &o);
	if (ret < 0)
		goto out_unlock;
	if (backing)
		*backing = o.backing;
	if (off >= o.size || len == 0) {
		*got = 0;
		goto out_close;
	}
	if (len > o.size - off)
		len = o.size - off;
	ret = obj_read_range(&o, off, buf, len, absent);
	if (ret < 0) {
		memset(buf, 0, len);    /* no unchecked bytes leave here */
		goto out_close;
	}
	*got = len;
out_close:
	obj_close(&o);
out_unlock:
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_remove(struct objstore *s, uint64_t oid)
{
	char name[OBJ_PATH_MAX];
	int ret = 0;

	obj_name(oid, "", name);
	stripe_wrlock(s, oid);
	slot_drop(s, oid);
	atomic_fetch_add(&s->dir_gen[oid & 0xff], 1);
	if (unlinkat(s->obj_fd, name, 0) < 0)
		ret = -errno;
	if (ret == 0 || ret == -ENOENT)
		names_del(s, oid);
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_stat(struct objstore *s, uint64_t oid, struct objstore_stat *st)
{
	uint64_t *csums = NULL;
	struct obj o;
	int ret;

	pthread_rwlock_rdlock(stripe(s, oid));
	ret = obj_open_live(s, oid, O_RDONLY, &o);
	if (ret < 0)
		goto out_unlock;
	/* At least one element: malloc(0) may return NULL. */
	csums = malloc((nblocks_of(o.size) + 1) * sizeof(*csums));
	if (!csums) {
		ret = -ENOMEM;
		goto out_close;
	}
	ret = obj_scan(&o, verify_chunk, csums);
	if (ret < 0)
		goto out_free;
	st->size = o.size;
	st->version = o.epoch;
	st->backing = o.backing;
	st->csum = csum64(csums, nblocks_of(o.size) * sizeof(*csums));
out_free:
	free(csums);
out_close:
	obj_close(&o);
out_unlock:
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

/* Entries past the size were never written and must still be zero. */
static int tab_tail_is_zero(struct obj *o)
{
	struct obj_ent ents[OBJ_SCAN_CHUNK];

	for (uint64_t b0 = nblocks_of(o->size); b0 < o->nblocks;
	     b0 += OBJ_SCAN_CHUNK) {
		size_t n = o->nblocks - b0 < OBJ_SCAN_CHUNK ? o->nblocks - b0
							    : OBJ_SCAN_CHUNK;
		int ret = tab_read(o, b0, n, ents);

		if (ret < 0)
			return ret;
		for (size_t i = 0; i < n; i++)
			if (!ent_is_zero(&ents[i]))
				return blk_bad(o, b0 + i);
	}
	return 0;
}

int objstore_verify(struct objstore *s, uint64_t oid)
{
	struct obj o;
	int ret;

	pthread_rwlock_rdlock(stripe(s, oid));
	ret = obj_open_live(s, oid, O_RDONLY, &o);
	if (ret < 0)
		goto out_unlock;
	ret = obj_scan(&o, verify_chunk, NULL);
	if (ret == 0)
		ret = tab_tail_is_zero(&o);
	obj_close(&o);
out_unlock:
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_sync(struct objstore *s, uint64_t oid)
{
	char name[OBJ_PATH_MAX];
	int fd, ret = 0;

	obj_name(oid, "", name);
	/* The lock only orders the open after a create or replace; the
	 * flush itself need not hold up writers. */
	pthread_rwlock_rdlock(stripe(s, oid));
	fd = openat(s->obj_fd, name, O_RDONLY | O_CLOEXEC);
	pthread_rwlock_unlock(stripe(s, oid));
	if (fd < 0)
		return -errno;
	if (fdatasync(fd) < 0)
		ret = -errno;
	close(fd);
	if (ret < 0)
		goto out_log;
	/* The directory entry: a create or replace is a link or rename.
	 * The generation is read before the fsync, so a change racing it
	 * leaves the directory marked for the next sync. */
	unsigned x = (unsigned)(oid & 0xff);
	uint_fast64_t gen = atomic_load(&s->dir_gen[x]);
	if (gen == atomic_load(&s->dir_synced[x]))
		return 0;
	name[2] = '\0';
	fd = openat(s->obj_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out_log;
	}
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0) {
		uint_fast64_t cur = atomic_load(&s->dir_synced[x]);

		while (cur < gen && !atomic_compare_exchange_weak(&s->dir_synced[x], &cur, gen))
			;
		return 0;
	}
out_log:
	log_err("oid=%016" PRIx64 ": sync failed: %s", oid, strerror(-ret));
	return ret;
}

int objstore_sync_all(struct objstore *s)
{
	if (syncfs(s->obj_fd) < 0) {
		int ret = -errno;

		log_err("dir=%s: syncfs failed: %s", s->dir, strerror(-ret));
		return ret;
	}
	return 0;
}

/* Keep the @max smallest ids seen in a max-heap at oids[0..*n). */
static void heap_offer(uint64_t *h, size_t max, size_t *n, uint64_t id)
{
	size_t i;

	if (*n < max) {
		i = (*n)++;
		while (i > 0 && h[(i - 1) / 2] < id) {
			h[i] = h[(i - 1) / 2];
			i = (i - 1) / 2;
		}
		h[i] = id;
		return;
	}
	if (id >= h[0])
		return;
	i = 0;
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= id)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = id;
}

int objstore_list(struct objstore *s, uint64_t after, int include_zero,
		  uint64_t *oids, size_t max, size_t *n)
{
	bool all = include_zero && after == 0;
	size_t cnt = 0;

	for (unsigned k = 0; k < OBJ_STRIPES && max; k++) {
		const struct oid_set *set = &s->names[k];
		size_t i;

		pthread_rwlock_rdlock(&s->locks[k]);
		i = all ? 0 : set_lower(set, after);
		if (!all && i < set->n && set->ents[i].oid == after)
			i++;
		/* Ascending: once the heap is full, the first id not below
		 * its largest ends this stripe. */
		for (; i < set->n; i++) {
			if (cnt == max && set->ents[i].oid >= oids[0])
				break;
			heap_offer(oids, max, &cnt, set->ents[i].oid);
		}
		pthread_rwlock_unlock(&s->locks[k]);
	}
	qsort(oids, cnt, sizeof(*oids), cmp_u64);
	*n = cnt;
	return 0;
}

uint64_t objstore_count(struct objstore *s)
{
	return atomic_load(&s->nnames);
}

int objstore_path(const struct objstore *s, uint64_t oid, char *buf, size_t len)
{
	char name[OBJ_PATH_MAX];
	int n;

	obj_name(oid, "", name);
	n = snprintf(buf, len, "%s/obj/%s", s->dir, name);
	if (n < 0 || (size_t)n >= len)
		return -ERANGE;
	return 0;
}

int objstore_space(const struct objstore *s, uint64_t *used, uint64_t *total)
{
	struct statvfs sv;

	if (fstatvfs(s->obj_fd, &sv) < 0)
		return -errno;
	*total = (uint64_t)sv.f_blocks * sv.f_frsize;
	*used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
	return 0;
}

int objstore_avail(const struct objstore *s, uint64_t *avail)
{
	struct statvfs sv;

	if (fstatvfs(s->obj_fd, &sv) < 0)
		return -errno;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}

/* objstore_head with the stripe held (either way). */
static int head_locked(struct objstore *s, uint64_t oid, uint64_t *size,
		       uint64_t *version, int *deleted)
{
	struct obj o;
	int ret;

	ret = obj_open(s, oid, O_RDONLY, &o);
	if (ret == 0) {
		*size = o.size;
		*version = o.epoch;
		if (deleted)
			*deleted = !!(o.flags & OBJ_F_DELETED);
		obj_close(&o);
	}
	return ret;
}

int objstore_head(struct objstore *s, uint64_t oid, uint64_t *size, uint64_t *version,
		  int *deleted)
{
	int ret;

	pthread_rwlock_rdlock(stripe(s, oid));
	ret = head_locked(s, oid, size, version, deleted);
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

/*
 * objstore_head for a listing: from the name's fields when a listing
 * read them since the object last changed, else from the file (and kept
 * for the next listing; a header that fails its checks is not kept).
 * -ENOENT also when the name went meanwhile.
 */
static int head_listed(struct objstore *s, uint64_t oid, struct objstore_ent *e)
{
	unsigned k = stripe_of(oid);
	struct oid_set *set = &s->names[k];
	int ret = -ENOENT, deleted = 0;
	size_t i;

	pthread_rwlock_rdlock(&s->locks[k]);
	i = set_lower(set, oid);
	if (i == set->n || set->ents[i].oid != oid)
		goto out_unlock;
	pthread_mutex_lock(&s->name_mu[k]);
	if (set->ents[i].known) {
		e->version = set->ents[i].version;
		e->size = set->ents[i].size;
		e->deleted = (int)set->ents[i].deleted;
		ret = 0;
	}
	pthread_mutex_unlock(&s->name_mu[k]);
	if (ret == 0)
		goto out_unlock;
	/* No writer can change the file while we hold the stripe. */
	ret = head_locked(s, oid, &e->size, &e->version, &deleted);
	if (ret == 0) {
		e->deleted = deleted;
		pthread_mutex_lock(&s->name_mu[k]);
		set->ents[i].version = e->version;
		set->ents[i].size = e->size;
		set->ents[i].deleted = (uint32_t)deleted;
		set->ents[i].known = 1;
		pthread_mutex_unlock(&s->name_mu[k]);
	}
out_unlock:
	pthread_rwlock_unlock(&s->locks[k]);
	return ret;
}

/*
 * The tombstone written over the object's own file, for a disk too full
 * for a new one (a new file needs an inode and a block): the header,
 * whose block is allocated already, says "removed at @version" first;
 * then the data and the table are let go. A crash in between leaves a
 * tombstone with some dead blocks behind it. Stripe held, slot dropped.
 */
static int obj_entomb_in_place(struct objstore *s, uint64_t oid, uint64_t version)
{
	struct obj o;
	int ret;

	ret = obj_open(s, oid, O_RDWR, &o);
	if (ret)
		return ret;
	o.size = 0;
	o.epoch = version;
	o.flags = OBJ_F_DELETED;
	o.backing = 0;
	ret = hdr_write(&o);
	if (ret == 0 && ftruncate(o.fd, (off_t)o.data_off) < 0)
		ret = -errno;
	/* The table is no use to a tombstone either (best effort). */
	if (ret == 0)
		(void)fallocate(o.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, OBJ_HDR_AREA,
			  (off_t)(o.data_off - OBJ_HDR_AREA));
	obj_close(&o);
	return ret;
}

/* Put a tombstone of @version in place of the object; stripe held. */
static int obj_entomb(struct objstore *s, uint64_t oid, uint64_t version)
{
	struct obj o;
	int ret;

	slot_drop(s, oid);
	ret = obj_new_tmp(s, oid, version, &o);
	if (ret == 0) {
		o.flags = OBJ_F_DELETED;
		ret = hdr_write(&o);
		obj_close(&o);
		if (ret == 0)
			ret = obj_commit_tmp(s, oid, true);
		else
			obj_drop_tmp(s, oid);
	}
	/* A removal is what gives space back: on a full disk it must not
	 * need any (docs/operations.md "Space"). */
	if (ret == -ENOSPC || ret == -EDQUOT) {
		int r = obj_entomb_in_place(s, oid, version);

		if (r != -ENOENT)
			ret = r;
	}
	return ret;
}

int objstore_bury(struct objstore *s, uint64_t oid, uint64_t version)
{
	int ret;

	stripe_wrlock(s, oid);
	ret = obj_entomb(s, oid, version);
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_remove_at(struct objstore *s, uint64_t oid, uint64_t epoch)
{
	struct obj o;
	int ret;

	stripe_wrlock(s, oid);
	ret = obj_open(s, oid, O_RDONLY, &o);
	if (ret == 0) {
		bool buried = o.flags & OBJ_F_DELETED;

		obj_close(&o);
		ret = obj_entomb(s, oid, version_next(o.epoch, epoch));
		/* Already removed: the tombstone moved on, the caller hears so. */
		if (ret == 0 && buried)
			ret = -ENOENT;
	} else if (ret == -EBADMSG) {
		/* A copy whose header fails its checks holds nothing usable
		 * (listed as the oldest copy, objstore_list_ent): bury it, or
		 * it could never be removed. */
		log_warn("oid=%016" PRIx64 ": removing a copy with a bad header", oid);
		ret = obj_entomb(s, oid, version_next(0, epoch));
	}
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}

int objstore_list_ent(struct objstore *s, uint64_t after, int include_zero,
		      struct objstore_ent *ents, size_t max, size_t *n)
{
	uint64_t *oids = malloc((max ? max : 1) * sizeof(*oids));
	size_t cnt = 0, out = 0;
	int ret;

	if (!oids)
		return -ENOMEM;
	ret = objstore_list(s, after, include_zero, oids, max, &cnt);
	for (size_t i = 0; ret == 0 && i < cnt; i++) {
		int r = head_listed(s, oids[i], &ents[out]);

		if (r == -ENOENT)
			continue;       /* removed while we listed */
		if (r == -EBADMSG) {
			/* A header that fails its checks holds nothing usable:
			 * list it as the oldest possible copy. */
			ents[out].size = 0;
			ents[out].version = 0;
			ents[out].deleted = 0;
		} else if (r) {
			ret = r;
			break;
		}
		ents[out++].oid = oids[i];
	}
	free(oids);
	if (ret == 0)
		*n = out;
	return ret;
}

int objstore_verify_part(struct objstore *s, uint64_t oid, uint64_t b0, size_t max,
			 uint64_t *csums, size_t ncsums, struct objstore_stat *st,
			 uint64_t *next)
{
	struct obj_ent ents[OBJ_SCAN_CHUNK];
	uint64_t c[OBJ_SCAN_CHUNK], nb;
	unsigned char *data;
	struct obj o;
	int ret;

	data = malloc((size_t)OBJ_SCAN_CHUNK * BLK);
	if (!data)
		return -ENOMEM;
	pthread_rwlock_rdlock(stripe(s, oid));
	ret = obj_open_live(s, oid, O_RDONLY, &o);
	if (ret < 0)
		goto out_unlock;
	nb = nblocks_of(o.size);
	if (nb > ncsums) {
		ret = -EFBIG;
		goto out_close;
	}
	st->size = o.size;
	st->version = o.epoch;
	st->csum = 0;
	st->backing = o.flags & OBJ_F_BACKED ? o.backing : 0;
	/* obj_scan's loop, from @b0 and for @max blocks at most */
	while (b0 < nb && max) {
		size_t n = nb - b0 < OBJ_SCAN_CHUNK ? nb - b0 : OBJ_SCAN_CHUNK;

		if (n > max)
			n = max;
		struct iovec v = { data, n * BLK };
		ret = tab_read(&o, b0, n, ents);
		if (ret == 0)
			ret = data_read(&o, b0, &v, 1);
		for (size_t i = 0; ret == 0 && i < n; i++)
			c[i] = csum64(data + i * BLK, BLK);
		if (ret == 0)
			ret = verify_chunk(&o, b0, n, ents, c, csums);
		if (ret < 0)
			goto out_close;
		b0 += n;
		max -= n;
	}
	*next = b0 < nb ? b0 : 0;
	if (b0 >= nb)
		ret = tab_tail_is_zero(&o);
out_close:
	obj_close(&o);
out_unlock:
	pthread_rwlock_unlock(stripe(s, oid));
	free(data);
	return ret;
}

int objstore_stat_table(struct objstore *s, uint64_t oid, struct objstore_stat *st)
{
	struct obj_ent ents[OBJ_SCAN_CHUNK];
	uint64_t *all = NULL, nb;
	int unsettled = 0;
	struct obj o;
	int ret;

	pthread_rwlock_rdlock(stripe(s, oid));
	ret = obj_open_live(s, oid, O_RDONLY, &o);
	if (ret < 0)
		goto out_unlock;
	nb = nblocks_of(o.size);
	all = malloc((nb + 1) * sizeof(*all));  /* +1: malloc(0) may be NULL */
	if (!all) {
		ret = -ENOMEM;
		goto out_close;
	}
	for (uint64_t b0 = 0; ret == 0 && b0 < nb; b0 += OBJ_SCAN_CHUNK) {
		size_t n = nb - b0 < OBJ_SCAN_CHUNK ? nb - b0 : OBJ_SCAN_CHUNK;

		ret = tab_read(&o, b0, n, ents);
		for (size_t i = 0; ret == 0 && i < n; i++) {
			/* what a clean block's data hashes to, if it is intact */
			unsettled |= ents[i].cur != ents[i].prev;
			all[b0 + i] = htole64(ent_is_zero(&ents[i]) ? csum_zero_block()
								    : ents[i].cur);
		}
	}
	if (ret == 0) {
		st->size = o.size;
		st->version = o.epoch;
		st->backing = o.flags & OBJ_F_BACKED ? o.backing : 0;
		/* unknown (0) while unsettled, or backed: its absent
		 * blocks are the source's, not the zeros of the table */
		st->csum = unsettled || st->backing ? 0 : csum64(all, nb * sizeof(*all));
	}
	free(all);
out_close:
	obj_close(&o);
out_unlock:
	pthread_rwlock_unlock(stripe(s, oid));
	return ret;
}
