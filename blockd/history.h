/*
 * history.h - the cluster maps of past epochs, as this node needs them
 * to tell whether its copy of an object can be stale.
 *
 * Maps are read from ZooKeeper (epochs/<n>) on first use and kept; they
 * are immutable, so a pointer handed out stays valid until history_free.
 * Thread-safe.
 */
#ifndef SDFS_BLOCKD_HISTORY_H
#define SDFS_BLOCKD_HISTORY_H
#include <stdint.h>

#include "common/cmap.h"
#include "common/coord.h"

struct history;

int history_new(struct coord *c, struct history **out);
void history_free(struct history *h);

/* Remember @m (copied), e.g. the map just read as current. */
int history_add(struct history *h, const struct cmap *m);
/* The map of @epoch: 0 and *@out (borrowed), or -ENOENT / -errno. */
int history_get(struct history *h, uint64_t epoch, const struct cmap **out);

/*
 * The up holders of @oid in @m: placed copies on nodes whose state is
 * UP, placement order. @copies is the cluster's; a volume object has its
 * own (oid_copies). Returns their number (0..copies). These are the
 * nodes every write tagged with m->epoch reached.
 */
int history_up_holders(const struct cmap *m, uint64_t oid, unsigned copies,
		       uint32_t out[]);
/* Is @node_id one of them? */
int history_is_up_holder(const struct cmap *m, uint64_t oid, unsigned copies,
			 uint32_t node_id);
#endif
