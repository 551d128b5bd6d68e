/*
 * history.c - see history.h. An array indexed by epoch, grown on demand.
 */
#include "blockd/history.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/oid.h"

struct history {
	struct coord *coord;
	pthread_mutex_t lock;
	struct cmap **maps;     /* [epoch], NULL where not loaded yet */
	size_t cap;
};

int history_new(struct coord *c, struct history **out)
{
	struct history *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->coord = c;
	pthread_mutex_init(&h->lock, NULL);
	*out = h;
	return 0;
}

void history_free(struct history *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->cap; i++)
		cmap_free(h->maps[i]);
	free(h->maps);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* Keep @m at its epoch, or free it if that epoch is there already. */
static void store(struct history *h, struct cmap *m)
{
	pthread_mutex_lock(&h->lock);
	if (m->epoch >= h->cap) {
		size_t cap = h->cap ? h->cap : 64;
		struct cmap **maps;

		while (cap <= m->epoch)
			cap *= 2;
		maps = realloc(h->maps, cap * sizeof(*maps));
		if (!maps) {
			pthread_mutex_unlock(&h->lock);
			cmap_free(m);
			return;
		}
		memset(maps + h->cap, 0, (cap - h->cap) * sizeof(*maps));
		h->maps = maps;
		h->cap = cap;
	}
	if (!h->maps[m->epoch]) {
		h->maps[m->epoch] = m;
		m = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	cmap_free(m);
}

int history_add(struct history *h, const struct cmap *m)
{
	struct cmap *copy;
	int ret = cmap_new(m->epoch, m->nodes, m->n, &copy);

	if (ret)
		return ret;
	store(h, copy);
	return 0;
}

static const struct cmap *lookup(struct history *h, uint64_t epoch)
{
	const struct cmap *m = NULL;

	pthread_mutex_lock(&h->lock);
	if (epoch < h->cap)
		m = h->maps[epoch];
	pthread_mutex_unlock(&h->lock);
	return m;
}

int history_get(struct history *h, uint64_t epoch, const struct cmap **out)
{
	struct cmap *m;
	int ret;

	*out = lookup(h, epoch);
	if (*out)
		return 0;
	ret = coord_epoch_get(h->coord, epoch, &m);
	if (ret)
		return ret;
	store(h, m);
	*out = lookup(h, epoch);
	return *out ? 0 : -ENOMEM;
}

int history_up_holders(const struct cmap *m, uint64_t oid, unsigned copies,
		       uint32_t out[])
{
	uint32_t ids[RING_MAX_COPIES];
	/* @copies is the cluster's; a volume object has its own. */
	int n = ring_place(m->ring, oid, oid_copies(oid, copies), ids), k = 0;

	for (int i = 0; i < n; i++) {
		const struct cmap_node *nd = cmap_find(m, ids[i]);

		if (nd && nd->state == CMAP_UP)
			out[k++] = ids[i];
	}
	return k;
}

int history_is_up_holder(const struct cmap *m, uint64_t oid, unsigned copies,
			 uint32_t node_id)
{
	uint32_t ids[RING_MAX_COPIES];
	int n = history_up_holders(m, oid, copies, ids);

	for (int i = 0; i < n; i++)
		if (ids[i] == node_id)
			return 1;
	return 0;
}
