/*
 * suspect.c - the decisions of suspect.h.
 */
#include "blockd/suspect.h"

#include <string.h>

static const struct cmap_node *find(const struct cmap *m, uint32_t id)
{
	return m ? cmap_find(m, id) : NULL;
}

static int is_member(const struct cmap_node *mem, size_t nmem, uint32_t id)
{
	for (size_t i = 0; i < nmem; i++)
		if (mem[i].node_id == id)
			return 1;
	return 0;
}

/* Forget markers that are gone; note new ones at @now. */
static void seen_update(const struct coord_suspect *sus, size_t nsus,
			struct suspect_seen *seen, size_t *nseen, int64_t now)
{
	size_t n = 0;

	for (size_t i = 0; i < *nseen; i++) {
		int still = 0;

		for (size_t k = 0; k < nsus && !still; k++)
			still = sus[k].node_id == seen[i].node_id;
		if (still)
			seen[n++] = seen[i];
	}
	for (size_t k = 0; k < nsus; k++) {
		int known = 0;

		for (size_t i = 0; i < n && !known; i++)
			known = seen[i].node_id == sus[k].node_id;
		if (!known && n < SUSPECT_SEEN_MAX)
			seen[n++] = (struct suspect_seen){ sus[k].node_id, now };
	}
	*nseen = n;
}

static int64_t first_seen(const struct suspect_seen *seen, size_t nseen, uint32_t id,
			  int64_t now)
{
	for (size_t i = 0; i < nseen; i++)
		if (seen[i].node_id == id)
			return seen[i].first_ms;
	return now;     /* no room to remember it: it waits from now, each time */
}

size_t suspect_decide(const struct cmap *cur, const struct cmap_node *mem, size_t nmem,
		      const struct coord_suspect *sus, size_t nsus,
		      struct suspect_seen *seen, size_t *nseen, int64_t now_ms,
		      int wait_ms, unsigned max_down, uint32_t *drop, int *pending)
{
	size_t n = 0;

	*pending = 0;
	seen_update(sus, nsus, seen, nseen, now_ms);
	/* Two passes: members the map has down already keep their place
	 * under the cap, so the choice does not flap between epochs. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t k = 0; k < nsus; k++) {
			const struct cmap_node *nd = find(cur, sus[k].node_id);
			int down = nd && nd->state != CMAP_UP;

			if (down != (pass == 0) || !is_member(mem, nmem, sus[k].node_id))
				continue;
			/* Down already: stays so while marked, whoever wrote
			 * that (reconcilers that first saw the marker at other
			 * times must not flap it back up). */
			if (!down && !sus[k].acked &&
			    now_ms - first_seen(seen, *nseen, sus[k].node_id, now_ms) < wait_ms) {
				*pending = 1;
				continue;
			}
			if (n < max_down)
				drop[n++] = sus[k].node_id;
		}
	}
	return n;
}

enum sdfs_res lease_decide(const struct lease_view *v, int64_t now_ms, int lease_ms,
			   int32_t installed_version, int has_epoch)
{
	if (v->marked || v->start_ms <= 0 || now_ms - v->start_ms >= lease_ms)
		return SDFS_RES_SHUTDOWN;
	if (has_epoch && v->map_version > installed_version)
		return SDFS_RES_OLD_EPOCH;
	return SDFS_RES_OK;
}
