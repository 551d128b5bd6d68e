/*
 * handover.c - caches clients may still hold from the previous active
 * (ns.h ns_handover, ns_note_cache_ms; docs/consistency.md "Failover").
 *
 * Leases live in the active's memory only (lease.h). A mount that
 * cached something under the previous active may keep it for its cache
 * time after that active's last reply, and nothing would tell it about
 * a change made through the new one. So each term records, durably and
 * before answering the subscription, the longest cache time a client
 * subscribed with ('M' "cache_max"); the next active reads it at
 * takeover and holds every mutation back until that long has passed
 * since the old active could last have answered (it stops answering
 * when its ZooKeeper lease lapses, half a session before a standby can
 * be elected: the caller says how long that quiet time is at least).
 * With the default 1 s caches and 2 s sessions nothing waits.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/net.h"
#include "mds/ns_int.h"

#define CACHE_MAX_CAP_MS (10 * 60 * 1000)      /* longer caches: not covered */

static const char key_cache_max[] = "Mcache_max";

static int put_cache_max(struct ns *ns, uint64_t v)
{
	struct kvbatch *b = kvbatch_new();
	uint8_t val[8];
	int ret;

	if (!b)
		return -ENOMEM;
	le64_put(val, v);
	kvbatch_put(b, key_cache_max, sizeof(key_cache_max) - 1, val, sizeof(val));
	ret = ns_commit(ns, b);
	kvbatch_free(b);
	return ret;
}

int ns_handover(struct ns *ns, int64_t quiet_ms)
{
	uint64_t prev = 0;
	size_t vlen;
	char *v;
	int ret = kvdb_get(ns->db, key_cache_max, sizeof(key_cache_max) - 1, &v, &vlen);

	if (ret == 0) {
		if (vlen == 8)
			prev = le64_get((const uint8_t *)v);
		free(v);
	} else if (ret != -ENOENT) {
		return ret;
	}
	/* this term counts its own subscribers from nothing */
	ret = put_cache_max(ns, 0);
	if (ret)
		return ret;
	pthread_mutex_lock(&ns->cache_lock);
	ns->cache_max = 0;
	if ((int64_t)prev > quiet_ms) {
		ns->mut_gate_ms = net_now_ms() + (int64_t)prev - quiet_ms;
		log_info("clients of the previous active cached up to %" PRIu64 " ms: "
			 "changes wait %" PRId64 " ms more", prev, (int64_t)prev - quiet_ms);
	}
	pthread_mutex_unlock(&ns->cache_lock);
	return 0;
}

int ns_note_cache_ms(struct ns *ns, uint32_t cache_ms)
{
	uint64_t v = cache_ms < CACHE_MAX_CAP_MS ? cache_ms : CACHE_MAX_CAP_MS;
	int ret = 0;

	pthread_mutex_lock(&ns->cache_lock);
	if (v > ns->cache_max) {
		ret = put_cache_max(ns, v);
		if (!ret)
			ns->cache_max = v;
	}
	pthread_mutex_unlock(&ns->cache_lock);
	return ret;
}

void ns_handover_wait(struct ns *ns)
{
	int64_t gate = ns->mut_gate_ms, left;

	while (gate && (left = gate - net_now_ms()) > 0)
		usleep((useconds_t)(left > 100 ? 100 : left) * 1000);
}
