/*
 * scrub.c - sdfs_scrub (sdfs.h): SCRUB (protocol 2.3) to one node or to
 * every node of the map at once, each answer decoded on its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"
#include "common/rpc.h"
#include "libclient/client.h"

#define SCRUB_TIMEOUT_MS 3000   /* a status call stays quick */

static uint64_t next_req_id(void *arg)
{
	return client_req_id(arg);
}

static const char *state_name(uint32_t st)
{
	switch (st) {
	case SDFS_SCRUB_IDLE: return "idle";
	case SDFS_SCRUB_RUNNING: return "running";
	case SDFS_SCRUB_PAUSED: return "paused";
	}
	return "?";
}

static void from_info(const struct sdfs_scrub_info *si, struct sdfs_scrub_status *x)
{
	x->state = state_name(si->state);
	x->cursor = si->cursor;
	x->objects = si->objects;
	x->bytes = si->bytes;
	x->found = si->found;
	x->repaired = si->repaired;
	x->unrepaired = si->unrepaired;
	x->total_found = si->total_found;
	x->total_repaired = si->total_repaired;
	x->total_unrepaired = si->total_unrepaired;
	x->passes = si->passes;
	x->pass_start_ms = si->pass_start_ms;
	x->pass_end_ms = si->pass_end_ms;
	x->next_start_ms = si->next_start_ms;
	x->rate = si->rate;
	x->interval_s = si->interval_s;
	x->store_objects = si->store_objects;
	x->compared = si->compared;
	x->mismatched = si->mismatched;
	x->total_mismatched = si->total_mismatched;
	x->refreshed = si->refreshed;
	x->total_refreshed = si->total_refreshed;
	x->last_start_ms = si->last_start_ms;
	x->strips = si->strips;
	x->strip_bytes = si->strip_bytes;
	x->strips_found = si->strips_found;
	x->strips_repaired = si->strips_repaired;
	x->strips_unrepaired = si->strips_unrepaired;
	x->total_strips_found = si->total_strips_found;
	x->total_strips_repaired = si->total_strips_repaired;
	x->total_strips_unrepaired = si->total_strips_unrepaired;
}

int sdfs_scrub(struct sdfs *s, uint32_t node_id, enum sdfs_scrub_action a,
	       uint64_t rate, struct sdfs_scrub_status **out, size_t *n)
{
	static const uint64_t op_of[] = { [SDFS_SCRUB_ASK] = SDFS_SCRUB_STATUS,
		[SDFS_SCRUB_BEGIN] = SDFS_SCRUB_START, [SDFS_SCRUB_PAUSE] = SDFS_SCRUB_STOP };
	struct map_ref *m;
	struct rpc_call *calls;
	struct sdfs_scrub_status *st;
	size_t cnt = 0, nc = 0, *idx;
	int err = 0;

	if ((unsigned)a > SDFS_SCRUB_PAUSE || rate / 1024 > UINT32_MAX)
		return -EINVAL;
	atomic_store(&s->map_stale, 1);
	m = client_map_get(s, &err);
	if (!m)
		return err;
	for (size_t i = 0; i < m->map->n; i++)
		cnt += node_id == SDFS_SCRUB_ALL || m->map->nodes[i].node_id == node_id;
	if (!cnt) {
		client_map_put(m);
		return -ENOENT;
	}
	st = calloc(cnt, sizeof(*st));
	calls = calloc(cnt, sizeof(*calls));
	idx = calloc(cnt, sizeof(*idx));
	if (!st || !calls || !idx) {
		free(st);
		free(calls);
		free(idx);
		client_map_put(m);
		return -ENOMEM;
	}
	cnt = 0;
	for (size_t i = 0; i < m->map->n; i++) {
		const struct cmap_node *nd = &m->map->nodes[i];
		struct sdfs_scrub_status *x;

		if (node_id != SDFS_SCRUB_ALL && nd->node_id != node_id)
			continue;
		x = &st[cnt++];
		x->node_id = nd->node_id;
		snprintf(x->addr, sizeof(x->addr), "%s:%u", nd->host, nd->port);
		x->state = "-";
		x->result = -EHOSTDOWN;
		if (nd->state != CMAP_UP)
			continue;
		calls[nc].node = nd;
		calls[nc].req.opcode = SDFS_OP_SCRUB;
		calls[nc].req.offset = op_of[a];
		calls[nc].req.oid = SDFS_SCRUB_WANT_STRIPS;
		calls[nc].req.length = a == SDFS_SCRUB_BEGIN ? (uint32_t)(rate / 1024) : 0;
		idx[nc++] = cnt - 1;
	}
	rpc_run(s->pool, calls, nc, s->timeout_ms < SCRUB_TIMEOUT_MS ? s->timeout_ms
			: SCRUB_TIMEOUT_MS, next_req_id, s);
	for (size_t k = 0; k < nc; k++) {
		struct sdfs_scrub_status *x = &st[idx[k]];
		struct sdfs_scrub_info si;
		int ret = rpc_result(&calls[k]);

		if (ret == 0 && proto_scrub_info_decode(calls[k].rpayload,
				calls[k].reply.payload_len, &si))
			ret = -EPROTO;
		if (ret == -EKEYREJECTED)       /* SDFS_RES_CAP: not an admin key */
			ret = -EACCES;
		x->result = ret;
		if (ret == 0)
			from_info(&si, x);
	}
	rpc_calls_free(calls, nc);
	free(calls);
	free(idx);
	client_map_put(m);
	*out = st;
	*n = cnt;
	return 0;
}
