/*
 * strip_recover.c - rebuilding lost strips on their holders
 * (strip_recover.h).
 */
#include "blockd/strip_recover.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blockd/blockd.h"
#include "blockd/recover.h"
#include "blockd/stripstore.h"
#include "common/cmap.h"
#include "common/ec.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/ring.h"
#include "common/rpc.h"

#define RETRY_S 30              /* a pass this long after the last anyway */
#define SOON_MS 1000            /* ... or this soon after one that missed
				   peers (another epoch, unreachable) */
#define CALL_MS 5000            /* one round of calls to the holders */
#define GROUPS_MAX 32u
#define LOCAL_MAX 64u

struct strip_recover {
	struct blockd *bd;
	struct pool *pool;
	atomic_uint_fast64_t req_id;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct cmap *next;              /* the newest map not yet passed */
	int stop;
	int missed;                     /* this pass missed a peer: retry soon */
	uint64_t rebuilt, copied;       /* strips sent, this daemon's life */
	uint64_t tombs, dropped;        /* tombstones sent, extra files dropped */
	/* stripes this node counts (strip_recover.h): during the pass (its
	 * thread only), and as of the last whole pass (under mu) */
	uint64_t pass_degraded, pass_unavail, degraded, unavail;
};

struct group {
	uint64_t version, tag, size;
	uint32_t strip_len;
	int tomb;                       /* a removal's (SDFS_STRIP_TOMB) */
	unsigned count;
	int at[RING_MAX_PLACE];         /* strip s: index into the holders, or -1 */
	uint32_t has[RING_MAX_PLACE];   /* per holder index: strips it has */
};

static uint64_t next_req_id(void *arg)
{
	struct strip_recover *sr = arg;

	return atomic_fetch_add(&sr->req_id, 1) + 1;
}

/*
 * Fetch bytes [off, off + len) of strip @s of @g from holder @h into
 * @dst; 0 or -errno. @ms 0: recovery's (paced at the recovery rate,
 * CALL_MS); else a backed object's read-through (strip_recover_read):
 * not paced, within @ms.
 */
static int fetch(struct strip_recover *sr, const struct cmap_node *h, uint64_t oid,
		 uint64_t epoch, const struct group *g, unsigned s, uint32_t off, uint32_t len,
		 int ms, uint8_t *dst)
{
	struct sdfs_strip st = { .version = g->version, .tag = g->tag, .s = (uint8_t)s };
	uint8_t hdr[SDFS_STRIP_SIZE];
	struct rpc_call c;
	int r;

	/* every strip read for a copy or a rebuild pays at the recovery
	 * rate: a rebuild reads k of them (docs/ec.md "Rate") */
	if (!ms)
		recover_throttle(sr->bd->recover, len);
	proto_strip_encode(&st, hdr);
	rpc_call_init(&c, h, SDFS_OP_STRIP_GET, oid, epoch, hdr, SDFS_STRIP_SIZE);
	c.req.offset = off;
	c.req.length = len;
	c.rbuf = dst;
	c.rbuf_len = len;
	rpc_run(sr->pool, &c, 1, ms ? ms : CALL_MS, next_req_id, sr);
	r = rpc_result(&c);
	if (!r && c.reply.payload_len != len)
		r = -EPROTO;
	rpc_calls_free(&c, 1);
	return r;
}

/* Send @op of strip @st (no bytes: a tombstone or a commit) to @nd;
 * 0 or -errno. */
static int send_hdr(struct strip_recover *sr, const struct cmap_node *nd, unsigned op,
		    uint64_t oid, uint64_t epoch, const struct sdfs_strip *st)
{
	uint8_t hdr[SDFS_STRIP_SIZE];
	struct rpc_call c;
	int r;

	proto_strip_encode(st, hdr);
	rpc_call_init(&c, nd, op, oid, epoch, hdr, SDFS_STRIP_SIZE);
	rpc_run(sr->pool, &c, 1, CALL_MS, next_req_id, sr);
	r = rpc_result(&c);
	rpc_calls_free(&c, 1);
	return r;
}

/*
 * The leader of a removal's tombstone @best: every up position gets its
 * tombstone strip and its commit (which drops every older version of
 * the object there) unless it holds the tombstone and nothing older.
 */
static void spread_tomb(struct strip_recover *sr, const struct cmap *m, uint64_t oid,
			unsigned k, unsigned mm, const struct group *best,
			const struct cmap_node *const *node, const uint64_t *minv,
			const uint32_t *ids)
{
	for (unsigned p = 0; p < k + mm; p++) {
		struct sdfs_strip st = { .version = best->version, .tag = best->tag,
					 .k = (uint8_t)k, .m = (uint8_t)mm, .s = (uint8_t)p,
					 .flags = SDFS_STRIP_TOMB };
		int has = !!(best->has[p] & 1u << p), r = 0;

		if (!node[p] || (has && minv[p] >= best->version))
			continue;
		if (!has)
			r = send_hdr(sr, node[p], SDFS_OP_STRIP_PUT, oid, m->epoch, &st);
		if (!r)
			r = send_hdr(sr, node[p], SDFS_OP_STRIP_COMMIT, oid, m->epoch, &st);
		if (r) {
			sr->missed = 1;
			log_warn("oid=%016" PRIx64 " strip=%u: tombstone to node=%" PRIu32 ": %s",
				 oid, p, ids[p], strerror(-r));
			continue;
		}
		log_info("oid=%016" PRIx64 " strip=%u: tombstone %016" PRIx64 " %s node=%"
			 PRIu32, oid, p, best->version, has ? "committed on" : "given to",
			 ids[p]);
		pthread_mutex_lock(&sr->mu);
		sr->tombs++;
		pthread_mutex_unlock(&sr->mu);
	}
}

/*
 * This node's strip files of @oid that placement moved away (@l, @nl):
 * each is dropped only when it is not needed — the holder of its
 * position answered holding the same (version, tag) strip, or it is
 * older than a removal's tombstone with k strips, or older than a
 * version whose k + m strips all sit on their positions (which a commit
 * could drop anyway). Never the last copy of anything.
 */
static void drop_extras(struct strip_recover *sr, uint64_t oid, unsigned n,
			const uint32_t *ids, const struct cmap_node *const *node,
			const struct group *g, unsigned ng, const struct group *best,
			const struct sdfs_strip *l, size_t nl)
{
	int whole = best && !best->tomb && n == (unsigned)l[0].k + l[0].m;

	for (unsigned p = 0; whole && p < n; p++)
		whole = node[p] && best->has[p] & 1u << p;
	for (size_t x = 0; x < nl; x++) {
		unsigned s = l[x].s;
		const char *why = NULL;
		int r;

		if (s >= n || ids[s] == sr->bd->node_id)
			continue;               /* its position is here */
		for (unsigned j = 0; j < ng && !why; j++)
			if (g[j].version == l[x].version && g[j].tag == l[x].tag &&
			    node[s] && g[j].has[s] & 1u << s)
				why = "its holder has it";
		if (!why && best && l[x].version < best->version && (best->tomb || whole))
			why = best->tomb ? "older than a removal" : "older than a whole stripe";
		if (!why) {
			if (best && l[x].version == best->version && l[x].tag == best->tag &&
			    node[s])
				sr->missed = 1; /* its holder gets it soon: look again */
			continue;
		}
		r = stripstore_drop(sr->bd->strips, oid, s, l[x].version, l[x].tag);
		if (r) {
			if (r != -ENOENT)
				log_warn("oid=%016" PRIx64 " strip=%u: dropping an extra copy: %s",
					 oid, s, strerror(-r));
			continue;
		}
		log_info("oid=%016" PRIx64 " strip=%u version=%016" PRIx64 ": extra copy "
			 "dropped (node=%" PRIu32 " holds the position; %s)", oid, s,
			 l[x].version, ids[s], why);
		pthread_mutex_lock(&sr->mu);
		sr->dropped++;
		pthread_mutex_unlock(&sr->mu);
	}
}

/* What the holders of a stripe's placement answered (gather). */
struct view {
	unsigned n;                             /* positions placed */
	uint32_t ids[RING_MAX_PLACE];
	struct cmap_node peer[RING_MAX_PLACE];
	const struct cmap_node *node[RING_MAX_PLACE];   /* NULL: down or no answer */
	struct group g[GROUPS_MAX];
	unsigned ng;
	uint64_t minv[RING_MAX_PLACE];          /* per holder: oldest version listed */
	unsigned first;                         /* first holder listing any strip */
	int miss;                               /* an up holder did not answer */
};

/*
 * Ask the holders of @oid's k + m stripe in map @m, all at once, which
 * strip versions they have: @v gets them as groups of one (version,
 * tag) each. 0, or -EINVAL (no placement, bad k + m).
 */
static int gather(struct strip_recover *sr, const struct cmap *m, uint64_t oid,
		  unsigned k, unsigned mm, struct view *v)
{
	struct rpc_call calls[RING_MAX_PLACE];
	const struct ec_code *code;
	int placed = ring_place_strips(m->ring, oid, k, mm, v->ids);
	unsigned n;

	v->ng = 0;
	v->first = RING_MAX_PLACE;
	v->miss = 0;
	if (placed <= 0 || ec_code_get(k, mm, &code))
		return -EINVAL;
	n = v->n = (unsigned)placed;
	memset(calls, 0, sizeof(calls));
	for (unsigned i = 0; i < n; i++) {
		const struct cmap_node *nd = cmap_find(m, v->ids[i]);

		v->node[i] = nd && nd->state == CMAP_UP ? cmap_node_peer(nd, &v->peer[i])
							: NULL;
		rpc_call_init(&calls[i], v->node[i] ? v->node[i] : nd, SDFS_OP_STRIP_STAT,
			      oid, m->epoch, NULL, 0);
	}
	/* ask the up ones only, all at once */
	{
		struct rpc_call up[RING_MAX_PLACE];
		unsigned nu = 0, at[RING_MAX_PLACE];

		for (unsigned i = 0; i < n; i++)
			if (v->node[i]) {
				at[nu] = i;
				up[nu++] = calls[i];
			}
		rpc_run(sr->pool, up, nu, CALL_MS, next_req_id, sr);
		for (unsigned u = 0; u < nu; u++)
			calls[at[u]] = up[u];
	}
	for (unsigned i = 0; i < n; i++) {
		struct group *g = v->g;
		size_t ne;

		v->minv[i] = UINT64_MAX;
		if (!v->node[i] || rpc_result(&calls[i])) {
			if (v->node[i])
				v->miss = 1;
			v->node[i] = NULL;
			continue;
		}
		ne = calls[i].reply.payload_len / SDFS_STRIP_SIZE;
		for (size_t e = 0; e < ne; e++) {
			struct sdfs_strip st;
			unsigned j;

			if (proto_strip_decode(calls[i].rpayload + e * SDFS_STRIP_SIZE,
					       SDFS_STRIP_SIZE, &st) ||
			    st.k != k || st.m != mm || st.s >= k + mm)
				continue;
			if (st.version < v->minv[i])
				v->minv[i] = st.version;
			if (v->first == RING_MAX_PLACE)
				v->first = i;   /* lists the lowest position, as i grows */
			for (j = 0; j < v->ng; j++)
				if (g[j].version == st.version && g[j].tag == st.tag)
					break;
			if (j == v->ng) {
				if (v->ng == GROUPS_MAX)
					continue;
				memset(&g[j], 0, sizeof(g[j]));
				memset(g[j].at, 0xff, sizeof(g[j].at));
				g[j].version = st.version;
				g[j].tag = st.tag;
				g[j].size = st.obj_size;
				g[j].strip_len = st.strip_len;
				g[j].tomb = !!(st.flags & SDFS_STRIP_TOMB);
				v->ng++;
			}
			if (g[j].size != st.obj_size || g[j].strip_len != st.strip_len ||
			    g[j].tomb != !!(st.flags & SDFS_STRIP_TOMB))
				continue;
			g[j].has[i] |= 1u << st.s;
			if (g[j].at[st.s] < 0) {
				g[j].at[st.s] = (int)i;
				g[j].count++;
			}
		}
	}
	rpc_calls_free(calls, n);
	return 0;
}

/*
 * Rebuild bytes [off, off + len) of strip @p of @g into @out with
 * ec_decode from that range of k other strips of that (version, tag),
 * data strips first, read from their holders in @v (each checks its
 * block checksums as it reads; one that fails is replaced by the next
 * strip); never from strip @p itself. @ms as fetch's. @buf: room for k
 * ranges. 0, -ENODATA (fewer than k readable), -EINTR (stopping),
 * -errno. Strip recovery's rebuild, the scrub's (strip_recover_scrub)
 * and a backed object's degraded read-through (strip_recover_read).
 */
static int decode_strip(struct strip_recover *sr, uint64_t epoch, uint64_t oid,
			unsigned k, unsigned mm, const struct view *v, const struct group *g,
			unsigned p, uint32_t off, uint32_t len, int ms, uint8_t *buf,
			uint8_t *out)
{
	uint8_t *ptr[RING_MAX_PLACE] = { 0 };
	uint32_t missing = (1u << (k + mm)) - 1;
	const struct ec_code *code;
	unsigned got = 0;

	if (ec_code_get(k, mm, &code))
		return -EINVAL;
	for (unsigned s = 0; s < k + mm && got < k; s++) {
		pthread_mutex_lock(&sr->mu);
		int stop = sr->stop;
		pthread_mutex_unlock(&sr->mu);
		if (stop)
			return -EINTR;
		if (s == p || g->at[s] < 0 ||
		    fetch(sr, v->node[g->at[s]], oid, epoch, g, s, off, len, ms,
			  buf + (size_t)got * len))
			continue;
		ptr[s] = buf + (size_t)got * len;
		missing &= ~(1u << s);
		got++;
	}
	if (got < k)
		return -ENODATA;
	ptr[p] = out;
	return ec_decode(code, len, missing, ptr);
}

/*
 * The stripe of @oid (k + m) in map @m: make every position's node hold
 * its strip of the newest version with k strips, if this node leads;
 * drop this node's strip files (@l, @nl) placement moved away.
 */
static void recover_oid(struct strip_recover *sr, const struct cmap *m, uint64_t oid,
			unsigned k, unsigned mm, const struct sdfs_strip *l, size_t nl)
{
	struct blockd *bd = sr->bd;
	struct view *v = malloc(sizeof(*v));
	struct rpc_call calls[1];
	struct group *g, *best = NULL;
	unsigned ng, n, leader = RING_MAX_PLACE, okc = 0, first;
	const struct cmap_node *const *node;
	const uint32_t *ids;
	const uint64_t *minv;
	int miss;
	uint8_t *buf = NULL;

	if (!v)
		return;
	if (gather(sr, m, oid, k, mm, v)) {
		free(v);
		return;
	}
	g = v->g;
	ng = v->ng;
	n = v->n;
	node = v->node;
	ids = v->ids;
	minv = v->minv;
	first = v->first;
	miss = v->miss;
	for (unsigned j = 0; j < ng; j++)
		if (g[j].count >= k && (!best || g[j].version > best->version ||
		    (g[j].version == best->version && g[j].tag > best->tag)))
			best = &g[j];
	sr->missed |= miss;             /* only this thread touches it unlocked */
	drop_extras(sr, oid, n, ids, node, g, ng, best, l, nl);
	if (!best) {
		/* Unavailable only on every up holder's word: a holder that
		 * did not answer (another epoch: this map may be the stale
		 * one, a timeout) may hold the strips; the pass runs again. */
		if (first < n && ids[first] == bd->node_id && !miss)
			sr->pass_unavail++;
		if (ng && !miss)
			log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 ": no version "
				  "of its %u+%u stripe has %u strips on the up holders; "
				  "nothing rebuilt (UNAVAIL)", oid, k, mm, k);
		goto out;
	}
	for (unsigned i = 0; i < n && leader == RING_MAX_PLACE; i++)
		if (node[i] && best->has[i])
			leader = i;
	if (leader == RING_MAX_PLACE || ids[leader] != bd->node_id)
		goto out;
	if (best->tomb) {
		if (n == k + mm)
			spread_tomb(sr, m, oid, k, mm, best, node, minv, ids);
		goto out;
	}
	buf = malloc((size_t)(k + 1) * best->strip_len);
	if (!buf)
		goto out;
	for (unsigned p = 0; p < n && p < k + mm; p++) {
		struct sdfs_strip st = { .version = best->version, .tag = best->tag,
					 .obj_size = best->size, .strip_len = best->strip_len,
					 .k = (uint8_t)k, .m = (uint8_t)mm, .s = (uint8_t)p };
		uint8_t *out = buf + (size_t)k * best->strip_len, *put;
		int r = -ENOENT, decoded = 0;

		if (best->has[p] & 1u << p) {
			okc++;
			continue;               /* has its strip */
		}
		if (!node[p])
			continue;               /* down */
		pthread_mutex_lock(&sr->mu);
		int stop = sr->stop;
		pthread_mutex_unlock(&sr->mu);
		if (stop)
			break;
		if (best->at[p] >= 0)
			r = fetch(sr, node[best->at[p]], oid, m->epoch, best, p, 0,
				  best->strip_len, 0, out);
		if (r) {
			/* rebuild it from k others, data strips first */
			r = decode_strip(sr, m->epoch, oid, k, mm, v, best, p, 0,
					 best->strip_len, 0, buf, out);
			if (r == -ENODATA) {
				sr->missed = 1;
				log_warn("oid=%016" PRIx64 " strip=%u: fewer than %u strips of "
					 "version %016" PRIx64 " readable; not rebuilt", oid, p,
					 k, best->version);
			}
			if (r)
				continue;
			decoded = 1;
		}
		/* STRIP_PUT wants sdfs_strip + bytes in one buffer */
		put = malloc(SDFS_STRIP_SIZE + (size_t)best->strip_len);
		if (!put)
			break;
		proto_strip_encode(&st, put);
		memcpy(put + SDFS_STRIP_SIZE, out, best->strip_len);
		rpc_call_init(&calls[0], node[p], SDFS_OP_STRIP_PUT, oid, m->epoch, put,
			  SDFS_STRIP_SIZE + best->strip_len);
		rpc_run(sr->pool, &calls[0], 1, CALL_MS, next_req_id, sr);
		r = rpc_result(&calls[0]);
		rpc_calls_free(&calls[0], 1);
		free(put);
		if (r) {
			sr->missed = 1;
			log_warn("oid=%016" PRIx64 " strip=%u: storing it on node=%" PRIu32
				 ": %s", oid, p, ids[p], strerror(-r));
			continue;
		}
		log_info("oid=%016" PRIx64 " strip=%u version=%016" PRIx64 ": %s node=%"
			 PRIu32, oid, p, best->version, decoded ? "rebuilt on" : "copied to",
			 ids[p]);
		okc++;
		pthread_mutex_lock(&sr->mu);
		if (decoded)
			sr->rebuilt++;
		else
			sr->copied++;
		pthread_mutex_unlock(&sr->mu);
	}
	if (okc < k + mm)
		sr->pass_degraded++;    /* a position down, or not rebuilt */
out:
	free(buf);
	free(v);
}

struct pass {
	struct strip_recover *sr;
	const struct cmap *m;
};

static int pass_oid(void *arg, uint64_t oid)
{
	struct pass *ps = arg;
	struct sdfs_strip l[LOCAL_MAX];
	size_t n = 0;
	int stop;

	pthread_mutex_lock(&ps->sr->mu);
	stop = ps->sr->stop || ps->sr->next;    /* a newer map: start over */
	pthread_mutex_unlock(&ps->sr->mu);
	if (stop)
		return 1;
	if (stripstore_list(ps->sr->bd->strips, oid, l, LOCAL_MAX, &n) || n == 0)
		return 0;
	recover_oid(ps->sr, ps->m, oid, l[0].k, l[0].m, l, n);
	return 0;
}

static void *run(void *arg)
{
	struct strip_recover *sr = arg;
	struct cmap *cur = NULL;

	pthread_mutex_lock(&sr->mu);
	while (!sr->stop) {
		struct timespec until;

		if (!sr->next) {
			clock_gettime(CLOCK_REALTIME, &until);
			if (sr->missed) {
				until.tv_nsec += SOON_MS % 1000 * 1000000L;
				until.tv_sec += SOON_MS / 1000 + until.tv_nsec / 1000000000L;
				until.tv_nsec %= 1000000000L;
			} else
				until.tv_sec += RETRY_S;
			if (pthread_cond_timedwait(&sr->cond, &sr->mu, &until) == 0 ||
			    sr->stop)
				continue;       /* woken: look again */
		}
		if (sr->next) {
			cmap_free(cur);
			cur = sr->next;
			sr->next = NULL;
		}
		if (!cur)
			continue;
		struct pass ps = { .sr = sr, .m = cur };
		uint64_t r0 = sr->rebuilt, c0 = sr->copied, t0 = sr->tombs, d0 = sr->dropped;

		sr->missed = 0;
		sr->pass_degraded = sr->pass_unavail = 0;
		pthread_mutex_unlock(&sr->mu);

		int cut = stripstore_each_oid(sr->bd->strips, pass_oid, &ps);
		pthread_mutex_lock(&sr->mu);
		if (!cut) {             /* a whole pass: its counts stand */
			sr->degraded = sr->pass_degraded;
			sr->unavail = sr->pass_unavail;
		}
		if (sr->rebuilt != r0 || sr->copied != c0 || sr->tombs != t0 ||
		    sr->dropped != d0)
			log_info("node=%" PRIu32 " epoch=%" PRIu64 ": strip recovery pass: %"
				 PRIu64 " rebuilt, %" PRIu64 " copied, %" PRIu64 " tombstones "
				 "given, %" PRIu64 " extra copies dropped", sr->bd->node_id,
				 cur->epoch, sr->rebuilt - r0, sr->copied - c0, sr->tombs - t0,
				 sr->dropped - d0);
	}
	pthread_mutex_unlock(&sr->mu);
	cmap_free(cur);
	return NULL;
}

void strip_recover_fill_info(struct strip_recover *sr, struct sdfs_node_info *ni)
{
	if (!sr)
		return;
	pthread_mutex_lock(&sr->mu);
	ni->ec_degraded = sr->degraded;
	ni->ec_unavail = sr->unavail;
	pthread_mutex_unlock(&sr->mu);
}

void strip_recover_map_changed(struct strip_recover *sr, const struct cmap *m)
{
	struct cmap *copy = NULL;

	if (!sr || cmap_new(m->epoch, m->nodes, m->n, &copy))
		return;
	pthread_mutex_lock(&sr->mu);
	cmap_free(sr->next);
	sr->next = copy;
	pthread_cond_signal(&sr->cond);
	pthread_mutex_unlock(&sr->mu);
}

int strip_recover_new(struct blockd *bd, struct strip_recover **out)
{
	struct strip_recover *sr = calloc(1, sizeof(*sr));
	int ret;

	if (!sr)
		return -ENOMEM;
	sr->bd = bd;
	pthread_mutex_init(&sr->mu, NULL);
	pthread_cond_init(&sr->cond, NULL);
	ret = pool_new(&sr->pool);
	if (!ret)
		ret = -pthread_create(&sr->thread, NULL, run, sr);
	if (ret) {
		pool_free(sr->pool);
		free(sr);
		return ret;
	}
	*out = sr;
	return 0;
}

void strip_recover_free(struct strip_recover *sr)
{
	if (!sr)
		return;
	pthread_mutex_lock(&sr->mu);
	sr->stop = 1;
	pthread_cond_signal(&sr->cond);
	pthread_mutex_unlock(&sr->mu);
	pthread_join(sr->thread, NULL);
	cmap_free(sr->next);
	pool_free(sr->pool);
	free(sr);
}

int strip_recover_scrub(struct strip_recover *sr, uint64_t oid, const struct sdfs_strip *bad,
			uint32_t *from)
{
	struct blockd *bd = sr->bd;
	const struct cmap *m;
	const struct group *g = NULL;
	struct view *v;
	uint8_t *buf = NULL, *out;
	unsigned k = bad->k, mm = bad->m, p = bad->s, have = 0;
	int r;

	*from = 0;
	if (bad->flags & SDFS_STRIP_TOMB || !bad->strip_len)
		return -EINVAL;
	r = recover_map(bd->recover, member_epoch(bd), &m);
	if (r)
		return -EAGAIN;         /* between epochs */
	v = malloc(sizeof(*v));
	if (!v)
		return -ENOMEM;
	r = gather(sr, m, oid, k, mm, v);
	if (r)
		goto out;
	for (unsigned j = 0; j < v->ng && !g; j++)
		if (v->g[j].version == bad->version && v->g[j].tag == bad->tag &&
		    !v->g[j].tomb && v->g[j].strip_len == bad->strip_len &&
		    v->g[j].size == bad->obj_size)
			g = &v->g[j];
	for (unsigned s = 0; g && s < k + mm; s++)
		have += s != p && g->at[s] >= 0;
	r = -ENODATA;
	if (!g)
		goto out;
	buf = malloc((size_t)(k + 1) * bad->strip_len);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	out = buf + (size_t)k * bad->strip_len;
	/* A good copy of strip p elsewhere (placement moved, or this file is
	 * the extra one) is taken whole; else it is decoded from k others. */
	for (unsigned i = 0; i < v->n && r; i++)
		if (v->node[i] && v->ids[i] != bd->node_id && g->has[i] & 1u << p &&
		    fetch(sr, v->node[i], oid, m->epoch, g, p, 0, g->strip_len, 0, out) == 0) {
			r = 0;
			*from = v->ids[i];
		}
	if (r) {
		if (have < k) {
			r = v->miss ? -EAGAIN : -ENODATA;
			goto out;
		}
		r = decode_strip(sr, m->epoch, oid, k, mm, v, g, p, 0, g->strip_len, 0, buf,
				 out);
		if (r == -ENODATA && v->miss)
			r = -EAGAIN;
	}
	if (!r)
		r = stripstore_replace(bd->strips, oid, bad, out);
out:
	free(buf);
	free(v);
	return r;
}

static int read_once(struct strip_recover *sr, uint64_t oid, unsigned k, unsigned mm,
		     uint64_t epoch, uint64_t off, void *out, size_t len, uint64_t *size,
		     int ms)
{
	struct blockd *bd = sr->bd;
	const struct group *g = NULL;
	const struct cmap *m;
	uint8_t *buf = NULL, *dst = out;
	uint64_t end = off + len;
	struct view *v;
	int r;

	if (recover_map(bd->recover, epoch, &m))
		return -EAGAIN;
	v = malloc(sizeof(*v));
	if (!v)
		return -ENOMEM;
	r = gather(sr, m, oid, k, mm, v);
	if (r)
		goto out;
	/* the readers' rule: the newest (version, tag) with k strips */
	for (unsigned j = 0; j < v->ng; j++)
		if (v->g[j].count >= k && (!g || v->g[j].version > g->version))
			g = &v->g[j];
	r = !g || g->tomb ? (v->miss ? -EAGAIN : v->ng && !g ? -ENODATA : -ENOENT) : 0;
	if (r)
		goto out;
	if (size)
		*size = g->size;
	memset(out, 0, len);            /* past the object's size: zeros */
	if (end > g->size)
		end = g->size;
	buf = malloc((size_t)k * g->strip_len);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	for (uint64_t at = off; at < end && !r;) {
		unsigned s = (unsigned)(at / g->strip_len);
		uint64_t s0 = (uint64_t)s * g->strip_len;
		uint32_t a = (uint32_t)(at - s0);
		uint32_t n = (uint32_t)((end < s0 + g->strip_len ? end : s0 + g->strip_len) - at);

		r = -ENODATA;
		/* data strip s from a holder that has it, else decoded */
		for (unsigned i = 0; i < v->n && r; i++)
			if (v->node[i] && g->has[i] & 1u << s)
				r = fetch(sr, v->node[i], oid, m->epoch, g, s, a, n, ms,
					  dst + (at - off));
		if (r)
			r = decode_strip(sr, m->epoch, oid, k, mm, v, g, s, a, n, ms, buf,
					 dst + (at - off));
		if (r == -ENODATA && v->miss)
			r = -EAGAIN;
		at += n;
	}
out:
	free(buf);
	free(v);
	return r;
}

int strip_recover_read(struct strip_recover *sr, uint64_t oid, unsigned k, unsigned mm,
		       uint64_t epoch, uint64_t off, void *out, size_t len, uint64_t *size,
		       int ms)
{
	int r = -ENODATA;

	/* A put's commit may drop the version gathered before its strips
	 * are read (the new one holds the same bytes: a seal of the
	 * chunk's replicated object): gather again. */
	for (int i = 0; i < 3 && r == -ENODATA; i++)
		r = read_once(sr, oid, k, mm, epoch, off, out, len, size, ms);
	return r;
}
