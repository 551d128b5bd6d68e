/*
 * ops_dir.c - directory listing: opendir, readdir, readdirplus,
 * releasedir, fsyncdir.
 *
 * Offsets given to the kernel: 1 after ".", 2 after "..", then the
 * mds's cookies (>= 4), which resume after their entry and stay valid
 * while the entry exists. A handle keeps the last page fetched from the
 * mds, so the kernel's small buffers do not refetch it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs.h"

#define PAGE_ENTRIES 256

struct dent_c {
	char *name;
	uint64_t ino, cookie;
	uint32_t type;
	struct sdfs_stat st;
};

struct dirh {
	pthread_mutex_t lock;
	uint64_t ino, parent;
	struct dent_c *ents;
	size_t n;
	uint64_t from;          /* the cookie the page was fetched from */
	uint64_t mark;          /* inval_mark() before it was fetched */
	int64_t mark_ns;        /* and when (inval_now_ns) */
	int plus, end;          /* end: nothing after the page */
};

static void page_clear(struct dirh *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->ents[i].name);
	d->n = 0;
}

struct collect {
	struct dirh *d;
	int err;
};

static int collect_one(void *arg, const char *name, uint64_t ino, uint32_t type,
		       uint64_t cookie, const struct sdfs_stat *st)
{
	struct collect *c = arg;
	struct dent_c *e = &c->d->ents[c->d->n];

	e->name = strdup(name);
	if (!e->name) {
		c->err = -ENOMEM;
		return 1;
	}
	e->ino = ino;
	e->type = type;
	e->cookie = cookie;
	if (st)
		e->st = *st;
	return ++c->d->n == PAGE_ENTRIES;
}

static int page_fetch(struct dirh *d, uint64_t from, int plus)
{
	struct collect c = { .d = d };
	int ret;

	page_clear(d);
	d->from = from;
	d->plus = plus;
	d->mark_ns = inval_now_ns();
	d->mark = inval_mark();
	ret = sdfs_ns_readdir(the_fs->s, d->ino, from, plus, collect_one, &c);
	if (!ret)
		ret = c.err;
	d->end = d->n < PAGE_ENTRIES;
	if (ret)
		page_clear(d);
	return ret;
}

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_caller(req);
	struct sdfs_stat st;
	struct dirh *d;
	int ret = sdfs_ns_getattr(the_fs->s, ino, &st);

	if (ret) {
		fs_reply_err(req, ret);
		return;
	}
	if (!S_ISDIR(st.mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (d)
		d->ents = calloc(PAGE_ENTRIES, sizeof(*d->ents));
	if (!d || !d->ents) {
		free(d);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_init(&d->lock, NULL);
	d->ino = ino;
	d->parent = st.parent ? st.parent : ino;
	d->from = UINT64_MAX;
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi)) {
		free(d->ents);
		free(d);
	}
}

static size_t add(fuse_req_t req, char *buf, size_t room, const char *name,
		  uint64_t ino, uint32_t type, const struct sdfs_stat *st, off_t next,
		  int plus)
{
	if (plus) {
		struct fuse_entry_param e;

		if (st) {
			fs_entry(st, &e);
		} else {
			memset(&e, 0, sizeof(e));
			e.ino = ino;
			e.attr.st_ino = ino;
			e.attr.st_mode = type;
		}
		return fuse_add_direntry_plus(req, buf, room, name, &e, next);
	}
	struct stat kst = { .st_ino = ino, .st_mode = type };
	return fuse_add_direntry(req, buf, room, name, &kst, next);
}

/*
 * The attributes readdirplus gives for @e, taking one kernel reference
 * on its node: the page's, with this mount's pending size and write
 * time over them. A node that already holds state keeps it (the page
 * may be older than what it knows, as for lookup). 0 on ENOMEM.
 */
static int entry_view(const struct dent_c *e, struct sdfs_stat *view)
{
	struct fnode *n = fnode_get(the_fs, e->ino, 1);
	uint64_t ver;

	if (!n)
		return 0;
	ver = fnode_ver(n);
	fnode_set_stat_v(n, &e->st, ver ? UINT64_MAX - 1 : ver, view);
	return 1;
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi, int plus)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	char *buf = malloc(size);
	size_t used = 0;
	uint64_t pos = (uint64_t)off;
	int ret = 0;
	(void)ino;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&d->lock);
	if (pos == 0) {
		size_t n = add(req, buf + used, size - used, ".", d->ino, S_IFDIR, NULL, 1, plus);
		if (n > size - used)
			goto out;
		used += n;
		pos = 1;
	}
	if (pos == 1) {
		size_t n = add(req, buf + used, size - used, "..", d->parent, S_IFDIR, NULL, 2, plus);
		if (n > size - used)
			goto out;
		used += n;
		pos = 2;
	}
	for (;;) {
		uint64_t cookie = pos <= 2 ? 0 : pos;
		size_t i = 0;

		/* resume inside the cached page, else fetch from the cookie */
		if (d->from != UINT64_MAX && d->plus == plus) {
			if (cookie == d->from)
				i = 0;
			else {
				for (i = 0; i < d->n && d->ents[i].cookie != cookie; i++)
					;
				i = i < d->n ? i + 1 : SIZE_MAX;
			}
		} else {
			i = SIZE_MAX;
		}
		if (i == SIZE_MAX) {
			ret = page_fetch(d, cookie, plus);
			if (ret)
				goto out;
			i = 0;
		}
		inval_begin_at(d->mark, d->mark_ns);    /* the page's age */
		for (; i < d->n; i++) {
			struct dent_c *e = &d->ents[i];
			struct sdfs_stat view;
			size_t n;

			/* The kernel takes these attributes as the inode's: they
			 * must show what this mount has pending on it (a size it
			 * extended, its write time), as lookup and getattr do. */
			if (plus && !entry_view(e, &view)) {
				ret = -ENOMEM;
				goto out;
			}
			n = add(req, buf + used, size - used, e->name, e->ino, e->type,
				plus ? &view : NULL, (off_t)e->cookie, plus);
			if (n > size - used) {
				if (plus)       /* not sent: the kernel takes no reference */
					fnode_forget(the_fs, e->ino, 1);
				goto out;
			}
			used += n;
			pos = e->cookie;
		}
		if (d->end)
			break;
		/* the page ran out: the next one starts after its last entry */
		pos = d->n ? d->ents[d->n - 1].cookie : pos;
		ret = page_fetch(d, pos, plus);
		if (ret)
			goto out;
		if (d->n == 0)
			break;
	}
out:
	pthread_mutex_unlock(&d->lock);
	if (ret && used == 0)
		fs_reply_err(req, ret);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	fs_caller(req);
	list(req, ino, size, off, fi, 0);
}

void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	fs_caller(req);
	list(req, ino, size, off, fi, 1);
}

void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_caller(req);
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	(void)ino;

	page_clear(d);
	free(d->ents);
	pthread_mutex_destroy(&d->lock);
	free(d);
	fuse_reply_err(req, 0);
}

void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	fs_caller(req);
	/* what this mount changed is durable (every change is in the
	 * replicas' memory already: docs/consistency.md) */
	int ret = sdfs_ns_sync(the_fs->s);

	(void)ino; (void)datasync; (void)fi;
	fuse_reply_err(req, ret == -ENOMEM ? ENOMEM : ret ? EIO : 0);
}
