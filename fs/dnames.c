/*
 * dnames.c - the names of a directory this mount knows all of, so that
 * a lookup of a missing name there needs no mds request (fs.h).
 *
 * The kernel looks every new name up before it creates it; that LOOKUP
 * was one mds round trip per create. A directory made here starts
 * empty, and the reply of every change made here in it (SDFS_NS_WANT_ATTRS)
 * says the mds leased us its names (SDFS_STAT_LISTING): any name another
 * client adds or removes there is pushed to us (an SDFS_INVAL_ENTRY,
 * which drops the set, in on_inval before we answer) before the mds
 * acknowledges that change. So while the lease runs the set here is the
 * directory's: each change made here adds or removes its names, a failed
 * one drops the set (it may have been made), and a lease that runs out
 * unrenewed (no change here for entry_timeout) drops it too. The set
 * lives in the directory's node (n->names, under n->lock).
 *
 * Leases' ends are judged from the thread's mark (inval_begin), as
 * attribute leases are: a reply during which any invalidation came
 * renews nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/sdfs_proto.h"
#include "fs/fs.h"

#define DNAMES_MAX      (1u << 20)      /* more names: not kept */

struct dname {
	struct dname *next;
	size_t len;
	char name[];
};

struct dnames {
	int64_t until;                  /* monotonic ns: the lease's end */
	size_t n, nb;
	struct dname **b;
};

static size_t hash(const char *name, size_t len)
{
	size_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
	return h;
}

static void free_set(struct dnames *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nb; i++)
		while (d->b[i]) {
			struct dname *x = d->b[i];

			d->b[i] = x->next;
			free(x);
		}
	free(d->b);
	free(d);
}

static struct dname **find(struct dnames *d, const char *name, size_t len)
{
	struct dname **p = &d->b[hash(name, len) & (d->nb - 1)];

	while (*p && ((*p)->len != len || memcmp((*p)->name, name, len)))
		p = &(*p)->next;
	return p;
}

static int grow(struct dnames *d)
{
	size_t nb = d->nb * 2;
	struct dname **b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < d->nb; i++)
		while (d->b[i]) {
			struct dname *x = d->b[i];

			d->b[i] = x->next;
			x->next = b[hash(x->name, x->len) & (nb - 1)];
			b[hash(x->name, x->len) & (nb - 1)] = x;
		}
	free(d->b);
	d->b = b;
	d->nb = nb;
	return 0;
}

/* With n->lock held: the set, if it is still the directory's. */
static struct dnames *live(struct fnode *n, int64_t now)
{
	if (n->names && n->names->until <= now) {
		free_set(n->names);
		n->names = NULL;
	}
	return n->names;
}

/* The end of a names lease granted after the thread's mark, or 0. */
static int64_t lease_end(void)
{
	int64_t end = inval_lease_end();       /* mark + attr_timeout, or 0 */

	if (!end)
		return 0;
	return end - (int64_t)(the_fs->o.attr_timeout * 1e9) +
	       (int64_t)(the_fs->o.entry_timeout * 1e9);
}

void dnames_start(struct fs *fs, uint64_t dir)
{
	int64_t end = lease_end();
	struct fnode *n;
	struct dnames *d;

	if (end <= inval_now_ns())
		return;
	d = calloc(1, sizeof(*d));
	if (d) {
		d->nb = 16;
		d->b = calloc(d->nb, sizeof(*d->b));
		d->until = end;
	}
	if (!d || !d->b) {
		free_set(d);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	n = fnode_find_locked(fs, dir);
	if (n) {
		pthread_mutex_lock(&n->lock);
		free_set(n->names);
		n->names = d;
		d = NULL;
		pthread_mutex_unlock(&n->lock);
	}
	pthread_mutex_unlock(&fs->lock);
	free_set(d);
}

/* Run @fn on @dir's node with n->lock held (fs->lock keeps it alive). */
static void with_node(struct fs *fs, uint64_t dir, void (*fn)(struct fnode *, void *),
		      void *arg)
{
	struct fnode *n;

	pthread_mutex_lock(&fs->lock);
	n = fnode_find_locked(fs, dir);
	if (n) {
		pthread_mutex_lock(&n->lock);
		fn(n, arg);
		pthread_mutex_unlock(&n->lock);
	}
	pthread_mutex_unlock(&fs->lock);
}

static void renew(struct fnode *n, void *arg)
{
	int64_t end = *(int64_t *)arg;
	struct dnames *d = live(n, inval_now_ns());

	if (d && end > d->until)
		d->until = end;
}

void dnames_renew(struct fs *fs, uint64_t dir)
{
	int64_t end = lease_end();

	if (end)
		with_node(fs, dir, renew, &end);
	else            /* an invalidation came meanwhile: maybe of a name here */
		dnames_drop(fs, dir);
}

struct name_arg {
	const char *name;
	size_t len;
	int add;
};

static void add_del(struct fnode *n, void *arg)
{
	struct name_arg *a = arg;
	struct dnames *d = live(n, inval_now_ns());
	struct dname **p;

	if (!d)
		return;
	p = find(d, a->name, a->len);
	if (!a->add) {
		if (*p) {
			struct dname *x = *p;

			*p = x->next;
			free(x);
			d->n--;
		}
		return;
	}
	if (*p)
		return;
	struct dname *x = d->n < DNAMES_MAX ? malloc(sizeof(*x) + a->len) : NULL;

	if (!x || (d->n >= d->nb && grow(d))) {
		free(x);
		free_set(n->names);     /* cannot keep it: forget it */
		n->names = NULL;
		return;
	}
	x->len = a->len;
	memcpy(x->name, a->name, a->len);
	p = &d->b[hash(a->name, a->len) & (d->nb - 1)];
	x->next = *p;
	*p = x;
	d->n++;
}

void dnames_add(struct fs *fs, uint64_t dir, const char *name)
{
	struct name_arg a = { name, strlen(name), 1 };

	with_node(fs, dir, add_del, &a);
}

void dnames_del(struct fs *fs, uint64_t dir, const char *name)
{
	struct name_arg a = { name, strlen(name), 0 };

	with_node(fs, dir, add_del, &a);
}

static void drop(struct fnode *n, void *arg)
{
	(void)arg;
	free_set(n->names);
	n->names = NULL;
}

void dnames_drop(struct fs *fs, uint64_t dir)
{
	with_node(fs, dir, drop, NULL);
}

void dnames_drop_all(struct fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	for (size_t b = 0; b < fs->tab_size; b++)
		for (struct fnode *n = fs->tab[b]; n; n = n->next) {
			pthread_mutex_lock(&n->lock);
			drop(n, NULL);
			pthread_mutex_unlock(&n->lock);
		}
	pthread_mutex_unlock(&fs->lock);
}

void dnames_free(struct fnode *n)
{
	free_set(n->names);
	n->names = NULL;
}

int dnames_absent(struct fs *fs, uint64_t dir, const char *name, double *left_s)
{
	size_t len = strlen(name);
	int64_t now = inval_now_ns();
	struct fnode *n;
	int absent = 0;

	if (len > SDFS_NAME_MAX)
		return 0;       /* the mds says ENAMETOOLONG */
	pthread_mutex_lock(&fs->lock);
	n = fnode_find_locked(fs, dir);
	if (n) {
		pthread_mutex_lock(&n->lock);
		struct dnames *d = live(n, now);

		if (d && !*find(d, name, len)) {
			absent = 1;
			*left_s = (double)(d->until - now) / 1e9;
		}
		pthread_mutex_unlock(&n->lock);
	}
	pthread_mutex_unlock(&fs->lock);
	return absent;
}
