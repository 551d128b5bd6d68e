/*
 * ring.c - weighted rendezvous (straw2) placement; see ring.h.
 *
 * The placement function is part of the cluster's on-disk and on-wire
 * contract: every client and daemon must compute the same copies for
 * the same node list, so the formula below is fixed:
 *
 *	h    = XXH3-64(oid as 8 little-endian bytes, seed = node_id)
 *	u    = ((h >> 11) + 1) / 2^53          (in (0, 1], exact in a double)
 *	draw = log(u) / weight                 (higher wins; weight 0 never)
 *
 * Ties go to the lower node_id. Copies are chosen in draw order: first
 * the best node of each zone, highest draws first, until @copies or the
 * zones run out; then the highest remaining nodes whatever their zone.
 * ring_place does this in one pass over the nodes with two small top-k
 * lists (see place_pass), without allocating and without sorting all
 * nodes: O(nodes * copies) comparisons, one hash and one log per node.
 *
 * Not here: node states, which epoch to use, talking to nodes.
 * Concurrency: a ring is immutable after ring_new; ring_place reads it
 * from any thread. The reference count is atomic; the last ring_put
 * frees, so a reader must hold a reference for as long as it reads.
 */
#include "common/ring.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/csum.h"

struct ring {
	atomic_uint refs;
	uint64_t epoch;
	size_t n;
	struct ring_node nodes[];       /* sorted by node_id, ids unique */
};

/* One candidate copy: a node and its draw for the oid being placed. */
struct ring_pick {
	double draw;
	uint32_t node_id;
	uint32_t zone;
};

/* A bounded list of picks, best first. */
struct ring_top {
	unsigned len;
	struct ring_pick p[RING_MAX_PLACE];
};

static int node_id_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct ring_node *)a)->node_id;
	uint32_t y = ((const struct ring_node *)b)->node_id;

	return (x > y) - (x < y);
}

int ring_new(uint64_t epoch, const struct ring_node *nodes, size_t n,
	     struct ring **out)
{
	struct ring *r;
	size_t i;

	if (n > RING_MAX_NODES)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (nodes[i].node_id == 0)
			return -EINVAL;
	r = malloc(sizeof(*r) + n * sizeof(r->nodes[0]));
	if (!r)
		return -ENOMEM;
	if (n)
		memcpy(r->nodes, nodes, n * sizeof(r->nodes[0]));
	/* Sort so that iteration order, and with it tie-breaking, does
	 * not depend on the order the member list arrived in. */
	qsort(r->nodes, n, sizeof(r->nodes[0]), node_id_cmp);
	for (i = 1; i < n; i++) {
		if (r->nodes[i].node_id == r->nodes[i - 1].node_id) {
			free(r);
			return -EINVAL;
		}
	}
	atomic_init(&r->refs, 1);
	r->epoch = epoch;
	r->n = n;
	*out = r;
	return 0;
}

struct ring *ring_get(struct ring *r)
{
	if (r)
		atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
	return r;
}

void ring_put(struct ring *r)
{
	if (!r)
		return;
	/* acq_rel: every earlier put's reads happen before the free. */
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
		free(r);
}

uint64_t ring_epoch(const struct ring *r)
{
	return r->epoch;
}

size_t ring_nodes(const struct ring *r)
{
	return r->n;
}

static double node_draw(uint64_t oid, const struct ring_node *node)
{
	unsigned char key[8];
	uint64_t h;
	double u;
	int i;

	for (i = 0; i < 8; i++)
		key[i] = (unsigned char)(oid >> (8 * i));
	h = csum64_seed(key, sizeof(key), node->node_id);
	/* (h >> 11) + 1 <= 2^53 is exact in a double, and so is the
	 * scaling by a power of two: u is the same bits everywhere. */
	u = (double)((h >> 11) + 1) * 0x1p-53;
	return log(u) / (double)node->weight;
}

static bool pick_is_better(const struct ring_pick *a,
			   const struct ring_pick *b)
{
	if (a->draw != b->draw)
		return a->draw > b->draw;
	return a->node_id < b->node_id;
}

/* Insert @c into @t at its rank, keeping at most @k entries. */
static void top_insert(struct ring_top *t, unsigned k,
		       const struct ring_pick *c)
{
	unsigned i;

	if (t->len == k) {
		if (!pick_is_better(c, &t->p[k - 1]))
			return;
		t->len--;                       /* drop the worst */
	}
	i = t->len;
	while (i > 0 && pick_is_better(c, &t->p[i - 1])) {
		t->p[i] = t->p[i - 1];
		i--;
	}
	t->p[i] = *c;
	t->len++;
}

/*
 * Keep @t as the best @k of "the best node of each zone" seen so far.
 * When @c's zone is listed, @c replaces that entry only if better. When
 * it is not, the zone's earlier best (if any) was pushed out by @k
 * better zones; the list's worst entry only ever rises, so that earlier
 * best can never matter again and @c competes as a new zone.
 */
static void zone_top_insert(struct ring_top *t, unsigned k,
			    const struct ring_pick *c)
{
	unsigned i;

	for (i = 0; i < t->len; i++) {
		if (t->p[i].zone != c->zone)
			continue;
		if (!pick_is_better(c, &t->p[i]))
			return;
		memmove(&t->p[i], &t->p[i + 1],
			(t->len - i - 1) * sizeof(t->p[0]));
		t->len--;
		break;
	}
	top_insert(t, k, c);
}

static bool top_has_node(const struct ring_top *t, uint32_t node_id)
{
	unsigned i;

	for (i = 0; i < t->len; i++)
		if (t->p[i].node_id == node_id)
			return true;
	return false;
}

int ring_place(const struct ring *r, uint64_t oid, unsigned copies,
	       uint32_t out[])
{
	struct ring_top by_zone = { .len = 0 }, any = { .len = 0 };
	unsigned placed, i;
	size_t j;

	if (copies == 0 || copies > RING_MAX_PLACE)
		return -EINVAL;
	/* One pass fills both lists. The fallback for lack of zones needs
	 * the best nodes outside by_zone; they are all among the best
	 * @copies nodes overall, because by_zone can hold at most
	 * len(by_zone) of those. */
	for (j = 0; j < r->n; j++) {
		const struct ring_node *node = &r->nodes[j];
		struct ring_pick c;

		if (node->weight == 0)
			continue;
		c.draw = node_draw(oid, node);
		c.node_id = node->node_id;
		c.zone = node->zone;
		zone_top_insert(&by_zone, copies, &c);
		top_insert(&any, copies, &c);
	}
	for (placed = 0; placed < by_zone.len; placed++)
		out[placed] = by_zone.p[placed].node_id;
	for (i = 0; i < any.len && placed < copies; i++)
		if (!top_has_node(&by_zone, any.p[i].node_id))
			out[placed++] = any.p[i].node_id;
	return (int)placed;
}

/* The zone of node @id (one of the ring's). */
static uint32_t node_zone(const struct ring *r, uint32_t id)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {                       /* nodes are sorted by id */
		size_t mid = (lo + hi) / 2;

		if (r->nodes[mid].node_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n ? r->nodes[lo].zone : UINT32_MAX;
}

/* How many of @out[0..n) are in @zone. */
static unsigned zone_count(const struct ring *r, const uint32_t *out, unsigned n,
			   uint32_t zone)
{
	unsigned c = 0;

	for (unsigned i = 0; i < n; i++)
		c += node_zone(r, out[i]) == zone;
	return c;
}

int ring_place_strips(const struct ring *r, uint64_t oid, unsigned k, unsigned m,
		      uint32_t out[])
{
	unsigned want = k + m, placed, zones = 0;
	uint32_t first_zone = 0;
	int n;

	if (m == 0 || want == 0 || want > RING_MAX_PLACE)
		return -EINVAL;
	n = ring_place(r, oid, want, out);
	if (n < 0)
		return n;
	for (size_t j = 0; j < r->n && zones < 2; j++) {
		if (r->nodes[j].weight == 0)
			continue;
		if (zones == 0) {
			first_zone = r->nodes[j].zone;
			zones = 1;
		} else if (r->nodes[j].zone != first_zone)
			zones = 2;
	}
	if (zones < 2)
		return n;                       /* one failure domain */
	/* ring_place gave the best node of each zone first (distinct
	 * zones), then fill-ins by draw. Keep the distinct-zone head,
	 * redo the fill-ins with the cap of m per zone. */
	placed = 0;
	for (unsigned i = 0; i < (unsigned)n; i++) {
		if (zone_count(r, out, placed, node_zone(r, out[i])) >= m)
			break;
		out[placed++] = out[i];
	}
	if (placed == want)
		return (int)placed;
	/* Fill the rest: the best remaining nodes by draw whose zone has
	 * fewer than m strips. O(nodes * (k + m)): EC writes only. */
	while (placed < want) {
		struct ring_pick best = { .draw = 0, .node_id = 0 };
		int found = 0;

		for (size_t j = 0; j < r->n; j++) {
			const struct ring_node *node = &r->nodes[j];
			struct ring_pick c;
			unsigned i;

			if (node->weight == 0)
				continue;
			for (i = 0; i < placed && out[i] != node->node_id; i++)
				;
			if (i < placed || zone_count(r, out, placed, node->zone) >= m)
				continue;
			c.draw = node_draw(oid, node);
			c.node_id = node->node_id;
			c.zone = node->zone;
			if (!found || pick_is_better(&c, &best)) {
				best = c;
				found = 1;
			}
		}
		if (!found)
			break;
		out[placed++] = best.node_id;
	}
	return (int)placed;
}
