/*
 * space.c - the chunks (data objects) of a regular file this mount made
 * or removed since it last told the mds (fnode.made): they go with the
 * next push of the file's size and mtime (sdfs_ns_setattr_chunks), so
 * the mds counts the space the file's data take (st_blocks; docs/mount.md
 * "Space"), and are shown meanwhile on top of the mds's count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"

#define KNOWN_MAX (1u << 16)    /* chunks remembered per file; more: told again */

/* Chunks told to the mds as made: an open-addressed set of chunk + 1. */
struct space_known {
	size_t n, nb;
	uint64_t s[];
};

static size_t known_slot(const struct space_known *k, uint64_t chunk)
{
	size_t i = (size_t)((chunk * 0x9e3779b97f4a7c15ull) >> 20) & (k->nb - 1);

	while (k->s[i] && k->s[i] != chunk + 1)
		i = (i + 1) & (k->nb - 1);
	return i;
}

static int known_has(const struct fnode *n, uint64_t chunk)
{
	const struct space_known *k = n->known;

	return k && k->s[known_slot(k, chunk)] == chunk + 1;
}

/* With n->lock held; ENOMEM or full: the chunk is simply told again. */
static void known_add(struct fnode *n, uint64_t chunk)
{
	struct space_known *k = n->known;

	if (!k || 2 * (k->n + 1) > k->nb) {
		size_t nb = k ? 2 * k->nb : 64;
		struct space_known *g;

		if (nb > 2 * KNOWN_MAX)
			return;
		g = calloc(1, sizeof(*g) + nb * sizeof(g->s[0]));
		if (!g)
			return;
		g->nb = nb;
		for (size_t i = 0; k && i < k->nb; i++)
			if (k->s[i]) {
				g->s[known_slot(g, k->s[i] - 1)] = k->s[i];
				g->n++;
			}
		free(k);
		n->known = k = g;
	}
	size_t i = known_slot(k, chunk);

	if (!k->s[i]) {
		k->s[i] = chunk + 1;
		k->n++;
	}
}

void space_forget(struct fnode *n)
{
	free(n->known);
	n->known = NULL;
}

/* With n->lock held. */
static int list_add(struct space_list *l, uint64_t e)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		uint64_t *p = realloc(l->e, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->e = p;
		l->cap = cap;
	}
	l->e[l->n++] = e;
	return 0;
}

void space_note(struct fnode *n, uint64_t chunk, int gone)
{
	uint64_t e = chunk | (gone ? SDFS_CHUNK_GONE : 0);
	struct space_list *l = &n->made;

	if (gone)
		space_forget(n);
	else if (known_has(n, chunk))
		return;
	/* writes come in runs: the same chunk again is the common case */
	for (size_t i = l->n, k = 0; i > 0 && k < 4; i--, k++)
		if (l->e[i - 1] == e)
			return;
		else if ((l->e[i - 1] & ~SDFS_CHUNK_GONE) == chunk)
			break;  /* the other way: this one must follow it */
	list_add(l, e);         /* ENOMEM: the mds's count misses it */
}

void space_overlay(struct fnode *n, struct sdfs_stat *out)
{
	uint64_t osz = out->obj_size, max = out->size / 512 + (out->size % 512 != 0);
	int64_t delta = 0;

	if (out->layout != SDFS_LAYOUT_FILE || !n->made.n || !osz)
		return;
	/* An upper bound: a chunk made here may have had data already. */
	for (size_t i = 0; i < n->made.n; i++)
		delta += n->made.e[i] & SDFS_CHUNK_GONE ? -(int64_t)(osz / 512)
							: (int64_t)(osz / 512);
	if (delta < 0 && (uint64_t)-delta > out->blocks)
		out->blocks = 0;
	else
		out->blocks += (uint64_t)delta;
	if (out->blocks > max)
		out->blocks = max;
}

int space_push(struct fs *fs, struct fnode *n, const struct sdfs_setattr *sa,
	       struct sdfs_stat *st)
{
	struct space_list l;
	struct sdfs_setattr none = { 0 };
	size_t done = 0;
	int ret = 0;

	pthread_mutex_lock(&n->lock);
	l = n->made;
	memset(&n->made, 0, sizeof(n->made));
	pthread_mutex_unlock(&n->lock);
	if (!(sa->mask & ~SDFS_SETATTR_DURABLE) && !l.n)
		return 1;
	/* The first report goes with the size and mtime; a longer list
	 * follows in reports that change nothing else; the last one is
	 * the durable one, if any. */
	do {
		size_t cnt = l.n - done < SDFS_CHUNKS_MAX ? l.n - done : SDFS_CHUNKS_MAX;
		struct sdfs_setattr one = done ? none : *sa;

		one.mask &= ~SDFS_SETATTR_DURABLE;
		if (done + cnt >= l.n)
			one.mask |= sa->mask & SDFS_SETATTR_DURABLE;
		ret = sdfs_ns_setattr_chunks(fs->s, n->ino, &one, l.e + done, cnt, st);
		if (!ret)
			done += cnt;
	} while (!ret && done < l.n);
	pthread_mutex_lock(&n->lock);
	/* told: not again while nothing may have removed them */
	for (size_t i = 0; i < done; i++)
		if (l.e[i] & SDFS_CHUNK_GONE)
			space_forget(n);
		else
			known_add(n, l.e[i]);
	if (ret && done < l.n) {
		/* Not told: before anything noted since, in that order. */
		struct space_list keep = n->made;

		memmove(l.e, l.e + done, (l.n - done) * sizeof(*l.e));
		l.n -= done;
		n->made = l;
		for (size_t i = 0; i < keep.n; i++)
			list_add(&n->made, keep.e[i]);
		free(keep.e);
	} else {
		free(l.e);
	}
	pthread_mutex_unlock(&n->lock);
	return ret;
}

void space_free(struct fnode *n)
{
	free(n->made.e);
	memset(&n->made, 0, sizeof(n->made));
	space_forget(n);
}
