/*
 * stripstore.c - strips of erasure-coded objects, one immutable file
 * per (oid, strip number, version); see stripstore.h and docs/format.md
 * "blockd strip files".
 */
#include "blockd/stripstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/csum.h"
#include "common/ec.h"
#include "common/log.h"

#define STRIP_MAGIC     0x3152545346444453ull   /* "SDFSSTR1" */
#define STRIP_FORMAT    1u
#define STRIP_HDR       64u
#define STRIP_BLOCK     4096u
#define STRIP_LOCKS     64u

struct stripstore {
	char root[PATH_MAX - 64];               /* <dir>/strip */
	uint32_t max_strip_len;
	pthread_mutex_t lock[STRIP_LOCKS];
};

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static size_t nblocks(uint32_t strip_len)
{
	return strip_len / STRIP_BLOCK;
}

/* Where a strip's data begins: after the header and the table. */
static size_t data_off(uint32_t strip_len)
{
	size_t t = STRIP_HDR + 8 * nblocks(strip_len);

	return (t + STRIP_BLOCK - 1) / STRIP_BLOCK * STRIP_BLOCK;
}

static pthread_mutex_t *lock_of(struct stripstore *ss, uint64_t oid)
{
	return &ss->lock[(oid * 0x9e3779b97f4a7c15ull) >> 58];
}

static void subdir(const struct stripstore *ss, uint64_t oid, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%02x", ss->root, (unsigned)(oid & 0xff));
}

int stripstore_path(const struct stripstore *ss, uint64_t oid, unsigned s,
		    uint64_t version, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%02x/%016" PRIx64 ".%02x.%016" PRIx64, ss->root,
			 (unsigned)(oid & 0xff), oid, s, version);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Parse "<16 hex>.<2 hex>.<16 hex>" exactly. */
static int parse_name(const char *name, uint64_t *oid, unsigned *s, uint64_t *version)
{
	char *end;

	if (strlen(name) != 16 + 1 + 2 + 1 + 16 || name[16] != '.' || name[19] != '.')
		return -EINVAL;
	for (const char *p = name; *p; p++)
		if (*p != '.' && !((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return -EINVAL;
	*oid = strtoull(name, &end, 16);
	*s = (unsigned)strtoul(name + 17, &end, 16);
	*version = strtoull(name + 20, &end, 16);
	return 0;
}

int stripstore_open(const char *dir, uint32_t max_strip_len, struct stripstore **out)
{
	struct stripstore *ss = calloc(1, sizeof(*ss));
	char sub[PATH_MAX + 8];

	if (!ss)
		return -ENOMEM;
	if (snprintf(ss->root, sizeof(ss->root), "%s/strip", dir) >= (int)sizeof(ss->root)) {
		free(ss);
		return -ENAMETOOLONG;
	}
	ss->max_strip_len = max_strip_len;
	if (mkdir(ss->root, 0755) && errno != EEXIST) {
		int e = -errno;

		free(ss);
		return e;
	}
	for (unsigned i = 0; i < 256; i++) {
		DIR *d;
		struct dirent *de;

		snprintf(sub, sizeof(sub), "%s/%02x", ss->root, i);
		if (mkdir(sub, 0755) && errno != EEXIST) {
			int e = -errno;

			free(ss);
			return e;
		}
		d = opendir(sub);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);

			if (l > 4 && !strcmp(de->d_name + l - 4, ".tmp"))
				unlinkat(dirfd(d), de->d_name, 0);
		}
		closedir(d);
	}
	for (unsigned i = 0; i < STRIP_LOCKS; i++)
		pthread_mutex_init(&ss->lock[i], NULL);
	*out = ss;
	return 0;
}

void stripstore_close(struct stripstore *ss)
{
	if (!ss)
		return;
	for (unsigned i = 0; i < STRIP_LOCKS; i++)
		pthread_mutex_destroy(&ss->lock[i]);
	free(ss);
}

int stripstore_check(const struct stripstore *ss, const struct sdfs_strip *st)
{
	if (st->k < 1 || st->k > EC_K_MAX || st->m < 1 || st->m > EC_M_MAX ||
	    st->s >= st->k + st->m || st->flags & ~SDFS_STRIP_TOMB || st->version == 0)
		return -EINVAL;
	if (st->flags & SDFS_STRIP_TOMB)        /* a removal's: no bytes */
		return st->strip_len == 0 && st->obj_size == 0 ? 0 : -EINVAL;
	if (st->strip_len == 0 || st->strip_len % STRIP_BLOCK ||
	    st->strip_len > ss->max_strip_len ||
	    st->obj_size > (uint64_t)st->k * st->strip_len || st->version == 0)
		return -EINVAL;
	return 0;
}

static void hdr_encode(uint64_t oid, const struct sdfs_strip *st, uint8_t h[STRIP_HDR])
{
	memset(h, 0, STRIP_HDR);
	put64(h + 0, STRIP_MAGIC);
	put32(h + 8, STRIP_FORMAT);
	put32(h + 12, st->strip_len);
	put64(h + 16, oid);
	put64(h + 24, st->version);
	put64(h + 32, st->tag);
	put64(h + 40, st->obj_size);
	h[48] = st->k;
	h[49] = st->m;
	h[50] = st->s;
	h[51] = st->flags;
	put64(h + 56, csum64(h, 56));
}

/* Decode and check a header read from a file named (oid, s, version). */
static int hdr_decode(const struct stripstore *ss, const uint8_t h[STRIP_HDR],
		      uint64_t oid, unsigned s, uint64_t version, struct sdfs_strip *st)
{
	const char *why = NULL;

	if (get64(h) != STRIP_MAGIC)
		why = "magic";
	else if (get64(h + 56) != csum64(h, 56))
		why = "header checksum";
	else if (get32(h + 8) != STRIP_FORMAT)
		why = "format version";
	if (!why) {
		st->strip_len = get32(h + 12);
		st->version = get64(h + 24);
		st->tag = get64(h + 32);
		st->obj_size = get64(h + 40);
		st->k = h[48];
		st->m = h[49];
		st->s = h[50];
		st->flags = h[51];
		if (get64(h + 16) != oid || st->version != version || st->s != s)
			why = "not the strip its name says";
		else if (stripstore_check(ss, st))
			why = "fields out of range";
	}
	if (why) {
		log_err("oid=%016" PRIx64 " strip=%u version=%016" PRIx64 ": bad strip "
			"header: %s", oid, s, version, why);
		return -EBADMSG;
	}
	return 0;
}

static int fsync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t w = pwrite(fd, p, len, off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
		off += w;
	}
	return 0;
}

static int pread_all(int fd, void *buf, size_t len, off_t off, size_t *got)
{
	uint8_t *p = buf;

	*got = 0;
	while (len) {
		ssize_t r = pread(fd, p, len, off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		p += r;
		len -= (size_t)r;
		off += r;
		*got += (size_t)r;
	}
	return 0;
}

/* stripstore_put, or with @replace stripstore_replace. */
static int store(struct stripstore *ss, uint64_t oid, const struct sdfs_strip *st,
		 const void *data, int replace)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8], dir[PATH_MAX];
	size_t nb = nblocks(st->strip_len), doff = data_off(st->strip_len);
	uint8_t *head;
	int fd, ret;

	if (stripstore_check(ss, st))
		return -EINVAL;
	if (st->flags & SDFS_STRIP_TOMB)
		doff = STRIP_HDR;               /* a tombstone is its header */
	head = calloc(1, doff);
	if (!head)
		return -ENOMEM;
	hdr_encode(oid, st, head);
	for (size_t i = 0; i < nb; i++)
		put64(head + STRIP_HDR + 8 * i,
		      csum64((const uint8_t *)data + i * STRIP_BLOCK, STRIP_BLOCK));
	stripstore_path(ss, oid, st->s, st->version, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	subdir(ss, oid, dir, sizeof(dir));

	pthread_mutex_lock(lock_of(ss, oid));
	/* One version number, one write: a different tag there is another
	 * writer's stripe, which must not get our strips mixed into it. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		uint8_t h[STRIP_HDR];
		struct sdfs_strip have;
		size_t got = 0;

		if (!pread_all(fd, h, STRIP_HDR, 0, &got) && got == STRIP_HDR &&
		    !hdr_decode(ss, h, oid, st->s, st->version, &have) && have.tag != st->tag)
			ret = -EEXIST;
		else
			ret = 0;
		close(fd);
		if (ret)
			goto out;
	} else if (replace) {
		ret = -ENOENT;  /* committed or dropped meanwhile: not brought back */
		goto out;
	}
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = pwrite_all(fd, head, doff, 0);
	if (!ret && st->strip_len)
		ret = pwrite_all(fd, data, st->strip_len, (off_t)doff);
	if (!ret && fdatasync(fd))
		ret = -errno;
	close(fd);
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	else
		ret = fsync_dir(dir);
out:
	pthread_mutex_unlock(lock_of(ss, oid));
	free(head);
	if (ret == -EEXIST || ret == -ENOENT)
		return ret;
	if (ret)
		log_warn("oid=%016" PRIx64 " strip=%u version=%016" PRIx64 ": cannot store "
			 "strip: %s", oid, st->s, st->version, strerror(-ret));
	return ret == -ENOSPC || ret == -EDQUOT ? -ENOSPC : ret ? -EIO : 0;
}

int stripstore_put(struct stripstore *ss, uint64_t oid, const struct sdfs_strip *st,
		   const void *data)
{
	return store(ss, oid, st, data, 0);
}

int stripstore_replace(struct stripstore *ss, uint64_t oid, const struct sdfs_strip *st,
		       const void *data)
{
	return store(ss, oid, st, data, 1);
}

int stripstore_read(struct stripstore *ss, uint64_t oid, unsigned s, uint64_t version,
		    uint64_t tag, uint64_t off, void *buf, size_t len, size_t *got)
{
	char path[PATH_MAX];
	uint8_t h[STRIP_HDR], *tab = NULL, *blk = NULL;
	struct sdfs_strip st;
	size_t n, b0, b1, doff;
	int fd, ret;

	*got = 0;
	stripstore_path(ss, oid, s, version, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -EIO;
	ret = pread_all(fd, h, STRIP_HDR, 0, &n);
	if (!ret && n != STRIP_HDR)
		ret = -EBADMSG;
	if (!ret)
		ret = hdr_decode(ss, h, oid, s, version, &st);
	if (ret)
		goto out;
	if ((tag && st.tag != tag) || st.flags & SDFS_STRIP_TOMB) {
		ret = -ENOENT;
		goto out;
	}
	if (off >= st.strip_len || len == 0)
		goto out;
	if (len > st.strip_len - off)
		len = (size_t)(st.strip_len - off);
	b0 = off / STRIP_BLOCK;
	b1 = (off + len - 1) / STRIP_BLOCK + 1;
	doff = data_off(st.strip_len);
	tab = malloc(8 * (b1 - b0));
	blk = malloc((b1 - b0) * STRIP_BLOCK);
	if (!tab || !blk) {
		ret = -ENOMEM;
		goto out;
	}
	ret = pread_all(fd, tab, 8 * (b1 - b0), (off_t)(STRIP_HDR + 8 * b0), &n);
	if (!ret && n != 8 * (b1 - b0))
		ret = -EBADMSG;
	if (!ret)
		ret = pread_all(fd, blk, (b1 - b0) * STRIP_BLOCK,
				(off_t)(doff + b0 * STRIP_BLOCK), &n);
	if (!ret && n != (b1 - b0) * STRIP_BLOCK)
		ret = -EBADMSG;         /* a short file: lost its tail */
	for (size_t i = 0; !ret && i < b1 - b0; i++)
		if (csum64(blk + i * STRIP_BLOCK, STRIP_BLOCK) != get64(tab + 8 * i)) {
			log_err("oid=%016" PRIx64 " strip=%u version=%016" PRIx64 " block=%zu: "
				"checksum mismatch", oid, s, version, b0 + i);
			ret = -EBADMSG;
		}
	if (!ret) {
		memcpy(buf, blk + (off - b0 * STRIP_BLOCK), len);
		*got = len;
	}
out:
	if (ret && ret != -ENOENT && ret != -EBADMSG && ret != -ENOMEM)
		ret = -EIO;
	free(tab);
	free(blk);
	close(fd);
	return ret;
}

/* Call @fn for every strip file of @oid in its directory. */
static int each_file(struct stripstore *ss, uint64_t oid,
		     int (*fn)(void *arg, int dfd, const char *name, unsigned s,
			       uint64_t version), void *arg)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	subdir(ss, oid, dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		uint64_t o, v;
		unsigned s;

		if (parse_name(de->d_name, &o, &s, &v) || o != oid)
			continue;
		ret = fn(arg, dirfd(d), de->d_name, s, v);
	}
	closedir(d);
	return ret;
}

struct list_arg {
	struct stripstore *ss;
	uint64_t oid;
	struct sdfs_strip *out;
	size_t max, n;
};

static int list_one(void *arg, int dfd, const char *name, unsigned s, uint64_t version)
{
	struct list_arg *a = arg;
	uint8_t h[STRIP_HDR];
	size_t got = 0;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);

	if (a->n == a->max)
		return 0;
	if (fd < 0)
		return 0;                       /* committed away meanwhile */
	if (!pread_all(fd, h, STRIP_HDR, 0, &got) && got == STRIP_HDR &&
	    !hdr_decode(a->ss, h, a->oid, s, version, &a->out[a->n]))
		a->n++;
	close(fd);
	return 0;
}

int stripstore_list(struct stripstore *ss, uint64_t oid, struct sdfs_strip *out,
		    size_t max, size_t *n)
{
	struct list_arg a = { .ss = ss, .oid = oid, .out = out, .max = max };
	int ret = each_file(ss, oid, list_one, &a);

	*n = a.n;
	return ret;
}

struct commit_arg {
	const struct stripstore *ss;
	uint64_t oid;
	unsigned s;
	uint64_t version;
	int have, tomb;
	unsigned dropped;
	int pass;                               /* 0: look, 1: remove */
};

/* The header of file @name in @dfd, checked; 0 or -errno. */
static int read_hdr(const struct stripstore *ss, int dfd, const char *name, uint64_t oid,
		    unsigned s, uint64_t version, struct sdfs_strip *st)
{
	uint8_t h[STRIP_HDR];
	size_t got = 0;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = pread_all(fd, h, STRIP_HDR, 0, &got);
	if (!ret)
		ret = got == STRIP_HDR ? hdr_decode(ss, h, oid, s, version, st) : -EBADMSG;
	close(fd);
	return ret;
}

static int commit_one(void *arg, int dfd, const char *name, unsigned s, uint64_t version)
{
	struct commit_arg *a = arg;
	struct sdfs_strip st;

	if (a->pass == 0) {
		if (s == a->s && version == a->version) {
			a->have = 1;
			a->tomb = !read_hdr(a->ss, dfd, name, a->oid, s, version, &st) &&
				  st.flags & SDFS_STRIP_TOMB;
		}
		return 0;
	}
	/* A removal's tombstone ends the whole object here: the older
	 * versions of every strip number go, extra copies too. */
	if ((s == a->s || a->tomb) && version < a->version && unlinkat(dfd, name, 0) == 0)
		a->dropped++;
	return 0;
}

int stripstore_commit(struct stripstore *ss, uint64_t oid, unsigned s, uint64_t version,
		      unsigned *dropped)
{
	struct commit_arg a = { .ss = ss, .oid = oid, .s = s, .version = version };
	char dir[PATH_MAX];
	int ret;

	pthread_mutex_lock(lock_of(ss, oid));
	ret = each_file(ss, oid, commit_one, &a);
	if (!ret && !a.have)
		ret = -ENOENT;
	if (!ret) {
		a.pass = 1;
		ret = each_file(ss, oid, commit_one, &a);
	}
	pthread_mutex_unlock(lock_of(ss, oid));
	if (!ret && a.dropped) {
		subdir(ss, oid, dir, sizeof(dir));
		fsync_dir(dir);
	}
	if (dropped)
		*dropped = a.dropped;
	return ret;
}

struct drop_arg {
	const struct stripstore *ss;
	uint64_t oid, version, tag;
	unsigned s;
	int ret;
};

static int drop_one(void *arg, int dfd, const char *name, unsigned s, uint64_t version)
{
	struct drop_arg *a = arg;
	struct sdfs_strip st;

	if (s != a->s || version != a->version)
		return 0;
	if (read_hdr(a->ss, dfd, name, a->oid, s, version, &st) || st.tag != a->tag)
		return 0;                       /* another write's, or unreadable */
	a->ret = unlinkat(dfd, name, 0) ? -errno : 0;
	return 1;
}

int stripstore_drop(struct stripstore *ss, uint64_t oid, unsigned s, uint64_t version,
		    uint64_t tag)
{
	struct drop_arg a = { .ss = ss, .oid = oid, .version = version, .tag = tag, .s = s,
			      .ret = -ENOENT };
	char dir[PATH_MAX];
	int ret;

	pthread_mutex_lock(lock_of(ss, oid));
	ret = each_file(ss, oid, drop_one, &a);
	pthread_mutex_unlock(lock_of(ss, oid));
	if (ret < 0)
		return ret;
	if (a.ret == 0) {
		subdir(ss, oid, dir, sizeof(dir));
		fsync_dir(dir);
	}
	return a.ret;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

int stripstore_each_oid(struct stripstore *ss, int (*fn)(void *arg, uint64_t oid),
			void *arg)
{
	char dir[PATH_MAX];
	uint64_t *oids = NULL;
	size_t cap = 0;
	int ret = 0;

	for (unsigned i = 0; i < 256 && !ret; i++) {
		struct dirent *de;
		size_t n = 0;
		DIR *d;

		snprintf(dir, sizeof(dir), "%s/%02x", ss->root, i);
		d = opendir(dir);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			uint64_t o, v;
			unsigned s;

			if (parse_name(de->d_name, &o, &s, &v))
				continue;
			if (n == cap) {
				uint64_t *no = realloc(oids, (cap ? 2 * cap : 64) * sizeof(*no));

				if (!no) {
					ret = -ENOMEM;
					break;
				}
				oids = no;
				cap = cap ? 2 * cap : 64;
			}
			oids[n++] = o;
		}
		closedir(d);
		if (ret)
			break;
		if (n)          /* qsort of NULL (none yet) is undefined */
			qsort(oids, n, sizeof(*oids), u64_cmp);
		for (size_t j = 0; j < n && !ret; j++)
			if (j == 0 || oids[j] != oids[j - 1])
				ret = fn(arg, oids[j]);
	}
	free(oids);
	return ret;
}
