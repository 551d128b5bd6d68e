/*
 * admin.c - what operators ask of the cluster: every node's state and
 * numbers, and where an object's replicas are.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"
#include "libclient/client.h"
#include "common/rpc.h"

static uint64_t next_req_id(void *arg)
{
	return client_req_id(arg);
}

int sdfs_node_list(struct sdfs *s, struct sdfs_node_status **out, size_t *n)
{
	struct map_ref *m;
	struct sdfs_node_status *st;
	struct rpc_call *calls;
	int err = 0;

	atomic_store(&s->map_stale, 1);
	m = client_map_get(s, &err);
	if (!m)
		return err;
	size_t cnt = m->map->n;
	st = calloc(cnt ? cnt : 1, sizeof(*st));
	calls = calloc(cnt ? cnt : 1, sizeof(*calls));
	if (!st || !calls) {
		free(st);
		free(calls);
		client_map_put(m);
		return -ENOMEM;
	}
	/* Ask every node at once, in batches the rpc engine accepts. */
	for (size_t i = 0; i < cnt; i++) {
		calls[i].node = &m->map->nodes[i];
		calls[i].req.opcode = SDFS_OP_NODE_INFO;
	}
	for (size_t i = 0; i < cnt; i += 64)
		rpc_run(s->pool, calls + i, cnt - i > 64 ? 64 : cnt - i,
			s->timeout_ms < 3000 ? s->timeout_ms : 3000, next_req_id, s);
	for (size_t i = 0; i < cnt; i++) {
		const struct cmap_node *nd = &m->map->nodes[i];
		struct sdfs_node_info ni;

		st[i].node_id = nd->node_id;
		snprintf(st[i].addr, sizeof(st[i].addr), "%s:%u", nd->host, nd->port);
		st[i].zone = nd->zone;
		st[i].weight = nd->weight;
		st[i].state = cmap_state_name(nd->state);
		if (rpc_result(&calls[i]) == 0 && calls[i].rpayload &&
		    proto_node_info_decode(calls[i].rpayload, calls[i].reply.payload_len,
					   &ni) == 0) {
			st[i].reachable = 1;
			st[i].epoch = ni.epoch;
			st[i].objects = ni.objects;
			st[i].used_bytes = ni.used_bytes;
			st[i].total_bytes = ni.total_bytes;
			st[i].requests = ni.requests;
			st[i].errors = ni.errors;
		}
	}
	rpc_calls_free(calls, cnt);
	free(calls);
	client_map_put(m);
	*out = st;
	*n = cnt;
	return 0;
}

int sdfs_obj_locate(struct sdfs *s, uint64_t oid, struct sdfs_replica *out,
		    size_t max, size_t *n)
{
	struct rpc_call calls[RING_MAX_COPIES];
	uint32_t ids[RING_MAX_COPIES];
	struct cluster_config cfg;
	struct map_ref *m;
	int err = 0, placed;

	m = client_map_get(s, &err);
	if (!m)
		return err;
	pthread_mutex_lock(&s->lock);
	cfg = s->cfg;
	pthread_mutex_unlock(&s->lock);
	placed = ring_place(m->map->ring, oid, cfg.copies, ids);
	if (placed < 0) {
		client_map_put(m);
		return placed;
	}
	memset(calls, 0, sizeof(calls));
	for (int i = 0; i < placed; i++) {
		calls[i].node = cmap_find(m->map, ids[i]);
		calls[i].req.opcode = SDFS_OP_OBJ_STAT;
		calls[i].req.oid = oid;
	}
	rpc_run(s->pool, calls, placed, s->timeout_ms, next_req_id, s);
	for (int i = 0; i < placed && (size_t)i < max; i++) {
		struct sdfs_replica *r = &out[i];
		struct sdfs_obj_stat st;

		memset(r, 0, sizeof(*r));
		r->node_id = ids[i];
		snprintf(r->addr, sizeof(r->addr), "%s:%u", calls[i].node->host,
			 calls[i].node->port);
		r->state = cmap_state_name(calls[i].node->state);
		r->result = rpc_result(&calls[i]);
		if (r->result == 0 && (!calls[i].rpayload ||
		    proto_obj_stat_decode(calls[i].rpayload, calls[i].reply.payload_len,
					  &st) != 0))
			r->result = -EPROTO;
		if (r->result == 0) {
			r->size = st.size;
			r->epoch = st.epoch;
			r->csum = st.csum;
			memcpy(r->path, calls[i].rpayload + sizeof(st), st.path_len);
			r->path[st.path_len] = '\0';
		}
	}
	rpc_calls_free(calls, placed);
	client_map_put(m);
	*n = (size_t)placed;
	return 0;
}
