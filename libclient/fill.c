/*
 * fill.c - sdfs_vol_fill (sdfs.h): OBJ_FILL (protocol 2.4) to every
 * node of the map at once, before a volume state's data objects are
 * removed (docs/volumes.md "Copy-on-write", "Reclaim").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/objcap.h"
#include "common/proto.h"
#include "common/rpc.h"
#include "libclient/client.h"

#define FILL_TIMEOUT_MS 25000   /* a daemon answers within 20 s (backing.c) */

static uint64_t next_req_id(void *arg)
{
	return client_req_id(arg);
}

int sdfs_vol_fill(struct sdfs *s, uint64_t vid)
{
	return sdfs_obj_fill(s, vid, 0);
}

static int fill_try(struct sdfs *s, uint64_t vid, uint64_t oid, int fresh);

int sdfs_obj_fill(struct sdfs *s, uint64_t vid, uint64_t oid)
{
	int ret = fill_try(s, vid, oid, 0);

	/* a key that needs caps: no cap held yet, or a stale one */
	if (ret == -EKEYREJECTED && oid)
		ret = fill_try(s, vid, oid, 1);
	return ret == -EKEYREJECTED ? -EACCES : ret;
}

/* One round of OBJ_FILL to every node, with @oid's write cap when the
 * handle sends caps (2.6: a writer fills its own object). */
static int fill_try(struct sdfs *s, uint64_t vid, uint64_t oid, int fresh)
{
	uint8_t cap[OBJCAP_WIRE_SIZE];
	int hascap = 0;
	struct rpc_call *calls;
	struct map_ref *m;
	size_t nc = 0;
	int err = 0, ret = 0;

	if (vid == 0 || vid > SDFS_VID_MAX)
		return -EINVAL;
	if (oid) {
		ret = capcache_get(s, oid, OBJCAP_W, fresh, cap);
		if (ret < 0)
			return ret;
		hascap = ret > 0;
		ret = 0;
	}
	atomic_store(&s->map_stale, 1);
	m = client_map_get(s, &err);
	if (!m)
		return err;
	for (size_t i = 0; i < m->map->n; i++)
		if (m->map->nodes[i].state != CMAP_UP) {
			/* its backed objects are not known to be filled */
			log_info("vid=%" PRIu64 ": node %" PRIu32 " is not up: its objects "
				 "backed by this vid's cannot be filled yet", vid,
				 m->map->nodes[i].node_id);
			client_map_put(m);
			return -EAGAIN;
		}
	calls = calloc(m->map->n + 1, sizeof(*calls));
	if (!calls) {
		client_map_put(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->map->n; i++) {
		calls[nc].node = &m->map->nodes[i];
		calls[nc].req.opcode = SDFS_OP_OBJ_FILL;
		calls[nc].req.offset = vid;
		calls[nc].req.oid = oid;        /* 2.6: only it; older: all */
		if (hascap) {
			calls[nc].req.flags = SDFS_F_CAP;
			calls[nc].req.payload_len = OBJCAP_WIRE_SIZE;
			calls[nc].payload = cap;
		}
		nc++;
	}
	rpc_run(s->pool, calls, nc, FILL_TIMEOUT_MS, next_req_id, s);
	for (size_t k = 0; k < nc; k++) {
		int r = rpc_result(&calls[k]);

		/* a 2.3 daemon makes no backed objects */
		if (r == -EOPNOTSUPP)
			r = 0;
		if (r == -EKEYREJECTED) {
			ret = r;
			continue;
		}
		if (r && !ret) {
			log_info("vid=%" PRIu64 ": node %" PRIu32 " did not fill the objects "
				 "backed by this vid's: %s", vid, calls[k].node->node_id,
				 strerror(-r));
			ret = -EAGAIN;
		}
	}
	rpc_calls_free(calls, nc);
	free(calls);
	client_map_put(m);
	return ret;
}
