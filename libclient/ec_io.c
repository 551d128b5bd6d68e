/*
 * ec_io.c - erasure-coded objects (sdfs.h "erasure-coded objects",
 * docs/ec.md): a whole object put as k + m strips of a new version on
 * the nodes ring_place_strips names, then committed; reads of a range
 * from the data strips, rebuilt from k others of the same version when
 * one is missing, corrupt or unreachable.
 *
 * Put: every strip holder must be up (a strip is never put elsewhere;
 * a stripe with a holder down waits for the map to move, as a
 * replicated write's retry does, until the handle's timeout). The
 * holders' STRIP_STAT gives the newest version they hold; the put's is
 * past it and past epoch << 32, with a random tag. All k + m STRIP_PUTs
 * go in parallel (each durable before its answer); a try that any
 * holder did not take (another epoch, unreachable, not serving) is
 * done again whole, as a newer version. Only once all k + m took it
 * does the put send STRIP_COMMIT to them (not waited for beyond a
 * short bound: a lost commit only keeps an old version longer) and
 * return 0. Nothing before that drops the previous version anywhere.
 *
 * Read: STRIP_STAT of every holder that is up (of the nodes the map
 * places, even fewer than k + m), the strip versions
 * grouped by (version, tag); the newest group with at least k strips
 * is read, else the next older. A range is read from its data strips;
 * the pieces that fail are rebuilt together from the same range of k
 * other strips of the group (data strips first), only the wanted
 * strips decoded. A group that cannot give k good strips for the range
 * (corruption found only now) gives way to the next older one: the
 * older version is still whole there, since nothing was committed past
 * it unless all k + m strips of the newer were stored. A read that came
 * through degraded asks each holder that answered CSUM to rebuild its
 * strip in place (STRIP_REPAIR, 2.6: read-repair; once per strip per
 * read, waiting only for it to be queued).
 *
 * Object capabilities (docs/security.md): each call takes the handle's
 * cap for the oid from capcache.c as objio.c does (none until a block
 * daemon asked for one: admin keys and open clusters send none) and
 * puts it in front of every strip request's payload (SDFS_F_CAP). A
 * refusal (SDFS_RES_CAP, -EKEYREJECTED) anywhere in the call makes it
 * ask the mds for a fresh cap and run again, once; a second refusal is
 * the caller's -EACCES. A put or removal asks for a read-write cap (it
 * STATs, then PUTs and COMMITs), a read for a read cap (and a
 * read-repair for a read-write one: without it, none is asked).
 *
 * No mocks of the codec or the wire here: common/ec.h encodes, rpc.h
 * talks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/ec.h"
#include "common/log.h"
#include "common/net.h"
#include "common/objcap.h"
#include "common/proto.h"
#include "common/ring.h"
#include "common/rpc.h"
#include "libclient/client.h"

#define EC_GROUPS_MAX 32u       /* (version, tag) groups one read weighs */
#define EC_STAT_MAX 256u        /* strip versions one node lists */
#define COMMIT_MS 1000          /* the bound on a put's commit round */
#define REPAIR_MS 500           /* on a read-repair's round (queued only) */

struct ec_place {
	struct map_ref *m;
	unsigned n;                                     /* k + m */
	const struct cmap_node *node[RING_MAX_PLACE];   /* strip s's holder */
};

/* One version of the object's stripe as the holders listed it. */
struct ec_group {
	uint64_t version, tag, size;
	uint32_t strip_len;
	int tomb;                                       /* a removal's */
	unsigned count;                                 /* strips found */
	const struct cmap_node *at[RING_MAX_PLACE];     /* a holder of strip s */
};

/* The cap a call sends with each strip request (capcache_get): has = 0
 * when the handle sends none. */
struct ec_cap {
	int has;
	uint8_t cap[OBJCAP_WIRE_SIZE];
	uint32_t token;         /* sent with every strip request (a put's
				   sdfs_ec_opts.token; 0: none) */
};

/* Room in front of a strip request's payload for its cap. */
#define CAP_ROOM OBJCAP_WIRE_SIZE

static uint64_t next_req_id(void *arg)
{
	return client_req_id(arg);
}

/* @oid's cap with @need into @c (@fresh: the one held was refused). */
static int cap_get(struct sdfs *s, uint64_t oid, unsigned need, int fresh,
		   struct ec_cap *c)
{
	int ret = capcache_get(s, oid, need, fresh, c->cap);

	c->has = ret > 0;
	return ret < 0 ? ret : 0;
}

/*
 * A strip request whose @plen payload bytes start at @room + CAP_ROOM
 * (@room: CAP_ROOM bytes the caller leaves free in front): with @cap's
 * bytes put there and SDFS_F_CAP when there is one.
 */
static void strip_call(struct rpc_call *c, const struct cmap_node *node, unsigned op,
		       uint64_t oid, uint64_t epoch, uint8_t *room, uint32_t plen,
		       const struct ec_cap *cap)
{
	if (!cap->has) {
		rpc_call_init(c, node, op, oid, epoch, room + CAP_ROOM, plen);
		c->req.token = cap->token;
		return;
	}
	memcpy(room, cap->cap, CAP_ROOM);
	rpc_call_init(c, node, op, oid, epoch, room, CAP_ROOM + plen);
	c->req.flags |= SDFS_F_CAP;
	c->req.token = cap->token;
}

static int try_bound(struct sdfs *s, int64_t deadline)
{
	int64_t b = atomic_load(&s->replica_timeout_ms) + 2000, left = deadline - net_now_ms();

	return (int)(b < left ? b : left > 1 ? left : 1);
}

static void place_done(struct ec_place *p)
{
	client_map_put(p->m);
	p->m = NULL;
}

/* Strip holders of @oid in the current map; -ENODEV when it cannot
 * place k + m strips (ring.h ring_place_strips) and @all says it must
 * (a put); a read takes the nodes there are. */
static int place(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, int all,
		 struct ec_place *p)
{
	uint32_t ids[RING_MAX_PLACE];
	int err = 0, n;

	memset(p, 0, sizeof(*p));
	p->m = client_map_get(s, &err);
	if (!p->m)
		return err;
	n = ring_place_strips(p->m->map->ring, oid, k, m, ids);
	if (n < 0) {
		place_done(p);
		return n;
	}
	if ((unsigned)n < k + m && (all || n == 0)) {
		log_warn("oid=%016" PRIx64 ": %u+%u needs %u block daemons, at most %u "
			 "in a zone; the map (epoch %" PRIu64 ") can place %d", oid, k, m,
			 k + m, m, p->m->map->epoch, n);
		place_done(p);
		return -ENODEV;
	}
	p->n = (unsigned)n;
	for (unsigned i = 0; i < p->n; i++)
		p->node[i] = cmap_find(p->m->map, ids[i]);
	return 0;
}

static int code_of(unsigned k, unsigned m, const struct ec_code **code)
{
	if (k < 1 || k > EC_K_MAX || m < 1 || m > EC_M_MAX)
		return -EINVAL;
	return ec_code_get(k, m, code);
}

/* Is @r worth another try (a new map, a node back)? */
static int retryable(int r)
{
	return r == -ESTALE || r == -EAGAIN || r == -ESHUTDOWN || r == -ENODATA ||
	       rpc_is_transport(r);
}

/*
 * STRIP_STAT of every up holder (with @cap): their strip versions of
 * (@k, @m) grouped into @g (newest first), *@ng groups; *@unreached
 * counts the holders down or not answering. 0, or a lasting error
 * (-EKEYREJECTED: the cap was refused).
 */
static int stat_groups(struct sdfs *s, const struct ec_place *p, uint64_t oid,
		       unsigned k, unsigned m, int64_t deadline, const struct ec_cap *cap,
		       struct ec_group *g, unsigned *ng, unsigned *unreached)
{
	struct rpc_call calls[RING_MAX_PLACE];
	size_t nc = 0;
	int ret = 0;

	*ng = 0;
	*unreached = 0;
	memset(calls, 0, sizeof(calls));
	for (unsigned i = 0; i < p->n; i++) {
		if (!p->node[i] || p->node[i]->state != CMAP_UP) {
			(*unreached)++;
			continue;
		}
		calls[nc].node = p->node[i];
		calls[nc].req.opcode = SDFS_OP_STRIP_STAT;
		calls[nc].req.oid = oid;
		calls[nc].req.epoch = (uint32_t)p->m->map->epoch;
		if (cap->has) {
			calls[nc].req.flags = SDFS_F_CAP;
			calls[nc].req.payload_len = OBJCAP_WIRE_SIZE;
			calls[nc].payload = cap->cap;
		}
		nc++;
	}
	rpc_run(s->pool, calls, nc, try_bound(s, deadline), next_req_id, s);
	for (size_t c = 0; c < nc; c++) {
		int r = rpc_result(&calls[c]);
		size_t ne = calls[c].reply.payload_len / SDFS_STRIP_SIZE;

		if (r) {
			if (!retryable(r) && r != -EOPNOTSUPP && !ret)
				ret = r;
			(*unreached)++;
			continue;
		}
		for (size_t e = 0; e < ne && e < EC_STAT_MAX; e++) {
			struct sdfs_strip st;
			unsigned j;

			if (proto_strip_decode(calls[c].rpayload + e * SDFS_STRIP_SIZE,
					       SDFS_STRIP_SIZE, &st) ||
			    st.k != k || st.m != m || st.s >= k + m)
				continue;
			for (j = 0; j < *ng; j++)
				if (g[j].version == st.version && g[j].tag == st.tag)
					break;
			if (j == *ng) {
				if (*ng == EC_GROUPS_MAX)
					continue;
				memset(&g[j], 0, sizeof(g[j]));
				g[j].version = st.version;
				g[j].tag = st.tag;
				g[j].size = st.obj_size;
				g[j].strip_len = st.strip_len;
				g[j].tomb = !!(st.flags & SDFS_STRIP_TOMB);
				(*ng)++;
			}
			if (g[j].size != st.obj_size || g[j].strip_len != st.strip_len ||
			    g[j].tomb != !!(st.flags & SDFS_STRIP_TOMB) || g[j].at[st.s])
				continue;       /* not of this stripe, or seen */
			g[j].at[st.s] = calls[c].node;
			g[j].count++;
		}
	}
	/* newest first (a handful: insertion sort) */
	for (unsigned i = 1; i < *ng; i++)
		for (unsigned j = i; j > 0 && (g[j].version > g[j - 1].version ||
		     (g[j].version == g[j - 1].version && g[j].tag > g[j - 1].tag)); j--) {
			struct ec_group t = g[j];

			g[j] = g[j - 1];
			g[j - 1] = t;
		}
	/* the nodes in calls[] are the map's, which the caller holds */
	rpc_calls_free(calls, nc);
	return ret;
}

/* Past every version of this code the holders have, and past this
 * epoch's start: versions only grow. A version a concurrent writer took
 * first is refused (EEXIST, another tag): the try is done again with the
 * next one. The tag is random, never 0. */
static void new_version(uint64_t epoch, const struct ec_group *g, unsigned ng,
			struct sdfs_strip *st)
{
	st->version = epoch << 32 | 1;
	for (unsigned j = 0; j < ng; j++)
		if (g[j].version >= st->version)
			st->version = g[j].version + 1;
	do {
		if (getrandom(&st->tag, sizeof(st->tag), 0) != sizeof(st->tag))
			st->tag = (uint64_t)net_now_ms() ^ (uint64_t)getpid() << 40;
	} while (st->tag == 0);
}

/*
 * The put of the k + m strips @strip (@sl bytes each, each with
 * CAP_ROOM + SDFS_STRIP_SIZE bytes free in front) of an object of @len
 * bytes, with @cap: 0, or the error (-EKEYREJECTED: the cap refused).
 * @stop: sdfs_ec_opts's.
 */
static int put_try(struct sdfs *s, uint64_t oid, unsigned k, unsigned m,
		   uint8_t *const *strip, size_t sl, size_t len, unsigned stop,
		   const struct ec_cap *cap)
{
	unsigned n = k + m;
	int64_t deadline = net_now_ms() + s->timeout_ms;
	int ret, last = -ETIMEDOUT;

	for (int attempt = 0;; attempt++) {
		struct rpc_call calls[RING_MAX_PLACE];
		struct ec_group g[EC_GROUPS_MAX];
		struct sdfs_strip st = { .obj_size = len, .strip_len = (uint32_t)sl,
					 .k = (uint8_t)k, .m = (uint8_t)m };
		struct ec_place p;
		unsigned ng, unreached, down = 0;
		uint64_t epoch;
		int retry = 0, fatal = 0;

		if (net_now_ms() >= deadline) {
			log_warn("oid=%016" PRIx64 ": ec put %u+%u gave up: %s", oid, k, m,
				 strerror(-last));
			return last;
		}
		ret = place(s, oid, k, m, 1, &p);
		if (ret)
			return ret;
		for (unsigned i = 0; i < n; i++)
			if (!p.node[i] || p.node[i]->state != CMAP_UP) {
				down++;
				log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64
					  ": strip %u's holder node=%" PRIu32 " is not up; "
					  "waiting for the map", oid, i,
					  p.node[i] ? p.node[i]->node_id : 0);
			}
		if (down) {
			last = -EIO;
			place_done(&p);
			client_map_refresh(s);
			client_backoff(attempt, deadline);
			continue;
		}
		epoch = p.m->map->epoch;
		ret = stat_groups(s, &p, oid, k, m, deadline, cap, g, &ng, &unreached);
		if (ret) {
			place_done(&p);
			return ret;
		}
		if (unreached) {
			last = -EIO;
			place_done(&p);
			client_map_refresh(s);
			client_backoff(attempt, deadline);
			continue;
		}
		new_version(epoch, g, ng, &st);
		for (unsigned i = 0; i < n; i++) {
			st.s = (uint8_t)i;
			proto_strip_encode(&st, strip[i] - SDFS_STRIP_SIZE);
			strip_call(&calls[i], p.node[i], SDFS_OP_STRIP_PUT, oid, epoch,
				   strip[i] - SDFS_STRIP_SIZE - CAP_ROOM,
				   (uint32_t)(SDFS_STRIP_SIZE + sl), cap);
		}
		if (stop) {
			/* Test hook: a writer that dies after @stop strips,
			 * each stored before the next is sent. */
			for (unsigned i = 0; i < stop; i++)
				rpc_run(s->pool, &calls[i], 1, try_bound(s, deadline),
					next_req_id, s);
			for (unsigned i = 0; i < stop && !fatal; i++)
				fatal = rpc_result(&calls[i]);
			rpc_calls_free(calls, stop);
			place_done(&p);
			return fatal ? fatal : -ECANCELED;
		}
		rpc_run(s->pool, calls, n, try_bound(s, deadline), next_req_id, s);
		for (unsigned i = 0; i < n; i++) {
			int r = rpc_result(&calls[i]);

			if (!r)
				continue;
			if (retryable(r) || r == -EEXIST) {
				retry = 1;
				last = rpc_is_transport(r) || r == -ENODATA ? -EIO : r;
				log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64
					  " strip=%u node=%" PRIu32 ": %s; putting the "
					  "stripe again", oid, i, p.node[i]->node_id,
					  strerror(-r));
			} else if (!fatal)
				fatal = r;
		}
		rpc_calls_free(calls, n);
		if (fatal || retry) {
			place_done(&p);
			if (fatal) {
				if (fatal != -EKEYREJECTED)     /* the caller's */
					log_warn("oid=%016" PRIx64 ": ec put %u+%u refused: %s",
						 oid, k, m, strerror(-fatal));
				return fatal;
			}
			client_map_refresh(s);
			client_backoff(attempt, deadline);
			continue;
		}
		/* All k + m stored: the older versions may go. A commit
		 * that does not arrive keeps them a while longer, no more
		 * (the next put's commit drops them). */
		for (unsigned i = 0; i < n; i++) {
			st.s = (uint8_t)i;
			proto_strip_encode(&st, strip[i] - SDFS_STRIP_SIZE);
			strip_call(&calls[i], p.node[i], SDFS_OP_STRIP_COMMIT, oid, epoch,
				   strip[i] - SDFS_STRIP_SIZE - CAP_ROOM, SDFS_STRIP_SIZE, cap);
		}
		rpc_run(s->pool, calls, n, COMMIT_MS, next_req_id, s);
		for (unsigned i = 0; i < n; i++)
			if (rpc_result(&calls[i]))
				log_debug("oid=%016" PRIx64 " strip=%u: commit: %s", oid, i,
					  strerror(-rpc_result(&calls[i])));
		rpc_calls_free(calls, n);
		place_done(&p);
		return 0;
	}
}

int sdfs_ec_put_ex(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, const void *buf,
		   size_t len, const struct sdfs_ec_opts *o)
{
	const struct ec_code *code;
	uint32_t max = sdfs_obj_size(s);
	unsigned n = k + m, stop = o ? o->stop_after : 0;
	size_t sl, each;
	uint8_t *mem, *strip[RING_MAX_PLACE];
	struct ec_cap cap = { 0 };
	int ret = code_of(k, m, &code);

	if (ret)
		return ret;
	if (max == 0)
		return -ENOENT;
	if (len > max)
		return -EFBIG;
	if (stop >= n)
		return -EINVAL;
	sl = ec_strip_len(len, k);
	if (sl == 0)
		sl = EC_STRIP_ALIGN;            /* an empty object: one zero block */
	each = CAP_ROOM + SDFS_STRIP_SIZE + sl;
	mem = malloc(n * each);
	if (!mem)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		strip[i] = mem + i * each + CAP_ROOM + SDFS_STRIP_SIZE;
	ret = ec_split(k, buf, len, sl, strip);
	if (!ret)
		ret = ec_encode(code, sl, (const uint8_t *const *)strip, strip + k);
	cap.token = o ? o->token : 0;
	if (!ret)
		ret = cap_get(s, oid, OBJCAP_RW, 0, &cap);
	if (!ret)
		ret = put_try(s, oid, k, m, strip, sl, len, stop, &cap);
	if (ret == -EKEYREJECTED) {
		/* refused the cap held (or none sent): a fresh one, once */
		ret = cap_get(s, oid, OBJCAP_RW, 1, &cap);
		if (!ret)
			ret = put_try(s, oid, k, m, strip, sl, len, stop, &cap);
		if (ret == -EKEYREJECTED) {
			log_warn("oid=%016" PRIx64 ": ec put %u+%u: no capability a block "
				 "daemon takes", oid, k, m);
			ret = -EACCES;
		}
	}
	free(mem);
	return ret;
}

int sdfs_ec_put(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, const void *buf,
		size_t len)
{
	return sdfs_ec_put_ex(s, oid, k, m, buf, len, NULL);
}

/*
 * Removal: a tombstone (SDFS_STRIP_TOMB, no bytes) as a new version of
 * every strip, stored like a put's on the holders that answer — at
 * least max(k, m + 1) of them, so the tombstone outnumbers what any
 * holder missed (at most k - 1 strips of an older version stay out of
 * reach of the commit: never readable again) and readers find it the
 * newest version with k strips — then committed there: each drops every
 * older version of the object it holds. A holder that was down gets the
 * tombstone and its commit from strip recovery when it is back
 * (blockd/strip_recover.c), so it does not bring the object back.
 */
static int remove_try(struct sdfs *s, uint64_t oid, unsigned k, unsigned m,
		      const struct ec_cap *cap)
{
	unsigned n = k + m, need = k > m + 1 ? k : m + 1;
	int64_t deadline = net_now_ms() + s->timeout_ms;
	uint8_t hdr[RING_MAX_PLACE][CAP_ROOM + SDFS_STRIP_SIZE];
	int ret, last = -ETIMEDOUT;

	for (int attempt = 0;; attempt++) {
		struct rpc_call calls[RING_MAX_PLACE];
		struct ec_group g[EC_GROUPS_MAX];
		struct sdfs_strip st = { .k = (uint8_t)k, .m = (uint8_t)m,
					 .flags = SDFS_STRIP_TOMB };
		const struct ec_group *top = NULL;
		unsigned ng, unreached, nc = 0, stored = 0, at[RING_MAX_PLACE];
		struct ec_place p;
		uint64_t epoch;
		int retry = 0, fatal = 0;

		if (net_now_ms() >= deadline) {
			log_warn("oid=%016" PRIx64 ": ec remove %u+%u gave up: %s", oid, k, m,
				 strerror(-last));
			return last;
		}
		ret = place(s, oid, k, m, 1, &p);
		if (ret)
			return ret;
		epoch = p.m->map->epoch;
		ret = stat_groups(s, &p, oid, k, m, deadline, cap, g, &ng, &unreached);
		if (ret) {
			place_done(&p);
			return ret;
		}
		for (unsigned j = 0; j < ng && !top; j++)
			if (g[j].count >= k)
				top = &g[j];
		if ((ng == 0 && unreached <= m) || (top && top->tomb)) {
			place_done(&p);
			return -ENOENT;         /* never put, or removed already */
		}
		if (n - unreached < need) {
			last = -EIO;
			log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 ": ec remove "
				  "%u+%u: %u holders answer, %u needed; waiting", oid, k, m,
				  n - unreached, need);
			place_done(&p);
			client_map_refresh(s);
			client_backoff(attempt, deadline);
			continue;
		}
		new_version(epoch, g, ng, &st);
		for (unsigned i = 0; i < n; i++) {
			if (!p.node[i] || p.node[i]->state != CMAP_UP)
				continue;
			st.s = (uint8_t)i;
			proto_strip_encode(&st, hdr[i] + CAP_ROOM);
			at[nc] = i;
			strip_call(&calls[nc++], p.node[i], SDFS_OP_STRIP_PUT, oid, epoch, hdr[i],
				   SDFS_STRIP_SIZE, cap);
		}
		rpc_run(s->pool, calls, nc, try_bound(s, deadline), next_req_id, s);
		for (unsigned c = 0; c < nc; c++) {
			int r = rpc_result(&calls[c]);

			if (!r)
				at[stored++] = at[c];   /* stored <= c: in place */
			else if (r == -EEXIST)
				retry = 1;
			else if (!retryable(r) && !fatal)
				fatal = r;
		}
		rpc_calls_free(calls, nc);
		if (fatal) {
			place_done(&p);
			if (fatal != -EKEYREJECTED)     /* the caller's */
				log_warn("oid=%016" PRIx64 ": ec remove %u+%u refused: %s", oid,
					 k, m, strerror(-fatal));
			return fatal;
		}
		if (retry || stored < need) {
			last = -EIO;
			place_done(&p);
			client_map_refresh(s);
			client_backoff(attempt, deadline);
			continue;
		}
		/* Committed where stored; a holder that missed it gets it
		 * from strip recovery. */
		for (unsigned c = 0; c < stored; c++)
			strip_call(&calls[c], p.node[at[c]], SDFS_OP_STRIP_COMMIT, oid, epoch,
				   hdr[at[c]], SDFS_STRIP_SIZE, cap);
		rpc_run(s->pool, calls, stored, COMMIT_MS, next_req_id, s);
		for (unsigned c = 0; c < stored; c++)
			if (rpc_result(&calls[c]))
				log_debug("oid=%016" PRIx64 " strip=%u: commit of the tombstone: %s",
					  oid, at[c], strerror(-rpc_result(&calls[c])));
		rpc_calls_free(calls, stored);
		place_done(&p);
		if (stored < n)
			log_info("oid=%016" PRIx64 ": ec remove %u+%u: tombstone on %u of %u "
				 "holders; recovery gives it to the others", oid, k, m, stored, n);
		return 0;
	}
}

int sdfs_ec_remove(struct sdfs *s, uint64_t oid, unsigned k, unsigned m)
{
	const struct ec_code *code;
	struct ec_cap cap = { 0 };
	int ret = code_of(k, m, &code);

	if (!ret)
		ret = cap_get(s, oid, OBJCAP_RW, 0, &cap);
	if (!ret)
		ret = remove_try(s, oid, k, m, &cap);
	if (ret == -EKEYREJECTED) {
		ret = cap_get(s, oid, OBJCAP_RW, 1, &cap);
		if (!ret)
			ret = remove_try(s, oid, k, m, &cap);
		if (ret == -EKEYREJECTED) {
			log_warn("oid=%016" PRIx64 ": ec remove %u+%u: no capability a "
				 "block daemon takes", oid, k, m);
			ret = -EACCES;
		}
	}
	return ret;
}

/* A STRIP_GET of [@r0, @r1) of strip @j of group @g into @dst, with
 * @cap (@hdr: CAP_ROOM + SDFS_STRIP_SIZE bytes). */
static void get_req(struct rpc_call *c, const struct ec_group *g, unsigned j,
		    uint64_t oid, uint64_t epoch, uint8_t *hdr, uint64_t r0, uint64_t r1,
		    void *dst, const struct ec_cap *cap)
{
	struct sdfs_strip st = { .version = g->version, .tag = g->tag, .s = (uint8_t)j };

	proto_strip_encode(&st, hdr + CAP_ROOM);
	strip_call(c, g->at[j], SDFS_OP_STRIP_GET, oid, epoch, hdr, SDFS_STRIP_SIZE, cap);
	c->req.offset = r0;
	c->req.length = (uint32_t)(r1 - r0);
	c->rbuf = dst;
	c->rbuf_len = (size_t)(r1 - r0);
}

static int got_all(const struct rpc_call *c)
{
	return rpc_result(c) == 0 && c->reply.payload_len == c->req.length;
}

static const char *err_text(const struct rpc_call *c)
{
	int r = rpc_result(c);

	return r ? strerror(-r) : "short reply";
}

/* Did any of @n calls have its cap refused? (a refusal is not a lost
 * strip: rebuilding from others would be refused the same) */
static int cap_refused(const struct rpc_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (rpc_result(&calls[i]) == -EKEYREJECTED)
			return 1;
	return 0;
}

/*
 * A read of group @g came through degraded: ask the holder of each strip
 * in @csum (it answered CSUM) to rebuild that strip in place
 * (STRIP_REPAIR, 2.6: read-repair). Waits only for the requests to be
 * queued (REPAIR_MS at most), not for the rebuilds; a refusal (no write
 * cap, an older daemon) leaves the file to the scrub (logged at debug).
 */
static void ask_repair(struct sdfs *s, uint64_t oid, uint64_t epoch, const struct ec_group *g,
		       uint32_t csum, const struct ec_cap *rcap)
{
	uint8_t hdrs[RING_MAX_PLACE][CAP_ROOM + SDFS_STRIP_SIZE];
	struct rpc_call calls[RING_MAX_PLACE];
	unsigned nc = 0, at[RING_MAX_PLACE];
	struct ec_cap cap = { .token = rcap->token };

	/* a client key needs the oid's write cap for it (objcap.h) */
	if (cap_get(s, oid, OBJCAP_RW, 0, &cap)) {
		log_debug("oid=%016" PRIx64 ": no write cap: no read-repair", oid);
		return;
	}
	memset(calls, 0, sizeof(calls));
	for (unsigned j = 0; j < RING_MAX_PLACE; j++) {
		struct sdfs_strip st = { .version = g->version, .tag = g->tag, .s = (uint8_t)j };

		if (!(csum & 1u << j) || !g->at[j])
			continue;
		proto_strip_encode(&st, hdrs[j] + CAP_ROOM);
		strip_call(&calls[nc], g->at[j], SDFS_OP_STRIP_REPAIR, oid, epoch, hdrs[j],
			   SDFS_STRIP_SIZE, &cap);
		at[nc++] = j;
	}
	rpc_run(s->pool, calls, nc, REPAIR_MS, next_req_id, s);
	for (unsigned c = 0; c < nc; c++)
		if (rpc_result(&calls[c]))
			log_debug("oid=%016" PRIx64 " strip=%u node=%" PRIu32 ": read-repair "
				  "not asked: %s", oid, at[c], g->at[at[c]]->node_id,
				  strerror(-rpc_result(&calls[c])));
		else
			log_info("oid=%016" PRIx64 " strip=%u node=%" PRIu32 ": corrupt strip; "
				 "read-repair asked", oid, at[c], g->at[at[c]]->node_id);
	rpc_calls_free(calls, nc);
}

/*
 * Read @len bytes at @off of the object as group @g has it into @buf,
 * with @cap. The length, or -EAGAIN when fewer than k strips of @g give
 * the range (the caller waits for unreached holders or fails: never an
 * older version), -ESTALE when that is so
 * only because some holders answered what a later try may not (a newer
 * map, a transport error, not synced yet: the caller refreshes the map
 * and tries again), -EKEYREJECTED (the cap refused), or -ENOMEM.
 */
/* A strip read's failure that a read on a fresh map and a fresh STAT may
 * not have: retryable, or the version gone (NO_OBJ: a newer put's commit
 * dropped it after the STAT; the newer one is the object now). */
static int moved_on(int r)
{
	return retryable(r) || r == -ENOENT;
}

static ssize_t read_group(struct sdfs *s, const struct ec_code *code, unsigned k,
			  unsigned m, uint64_t oid, uint64_t epoch, const struct ec_group *g,
			  void *buf, size_t len, uint64_t off, int64_t deadline,
			  const struct ec_cap *cap, struct sdfs_ec_rstat *rs)
{
	uint64_t sl = g->strip_len, lo[EC_K_MAX], hi[EC_K_MAX], r0 = UINT64_MAX, r1 = 0;
	uint8_t hdrs[RING_MAX_PLACE][CAP_ROOM + SDFS_STRIP_SIZE], *dst[EC_K_MAX];
	struct rpc_call calls[RING_MAX_PLACE];
	unsigned first, last, nc = 0, nbad = 0, n = k + m, cidx[RING_MAX_PLACE];
	uint32_t bad = 0, failed = 0, csum = 0;      /* csum: answered CSUM */
	uint8_t *tmp = NULL;
	int transient = 0;
	ssize_t ret;

	if (off >= g->size)
		return 0;
	if (len > g->size - off)
		len = (size_t)(g->size - off);
	if (len == 0)
		return 0;
	first = (unsigned)(off / sl);
	last = (unsigned)((off + len - 1) / sl);
	memset(calls, 0, sizeof(calls));
	for (unsigned i = first; i <= last; i++) {
		lo[i] = i == first ? off - i * sl : 0;
		hi[i] = i == last ? off + len - i * sl : sl;
		dst[i] = (uint8_t *)buf + (i * sl + lo[i] - off);
		if (!g->at[i]) {
			bad |= 1u << i;
			continue;
		}
		cidx[nc] = i;
		get_req(&calls[nc++], g, i, oid, epoch, hdrs[i], lo[i], hi[i], dst[i], cap);
	}
	rpc_run(s->pool, calls, nc, try_bound(s, deadline), next_req_id, s);
	if (cap_refused(calls, nc)) {
		rpc_calls_free(calls, nc);
		return -EKEYREJECTED;
	}
	for (unsigned c = 0; c < nc; c++) {
		unsigned i = cidx[c];

		if (!got_all(&calls[c])) {
			bad |= 1u << i;
			failed |= 1u << i;
			csum |= (uint32_t)(rpc_result(&calls[c]) == -EBADMSG) << i;
			transient |= moved_on(rpc_result(&calls[c]));
			log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 " strip=%u node=%"
				  PRIu32 ": %s; rebuilding it from %u others", oid, i,
				  g->at[i]->node_id, err_text(&calls[c]),
				  k);
		}
	}
	rpc_calls_free(calls, nc);
	if (rs)
		rs->strips_read += nc;
	if (!bad)
		return (ssize_t)len;

	/* Degraded: the union of the lost pieces' ranges, from k others. */
	for (unsigned i = first; i <= last; i++)
		if (bad & 1u << i) {
			nbad++;
			r0 = lo[i] < r0 ? lo[i] : r0;
			r1 = hi[i] > r1 ? hi[i] : r1;
		}
	size_t rl = (size_t)(r1 - r0);
	uint8_t *ptr[RING_MAX_PLACE];

	tmp = malloc((size_t)(k + nbad) * rl);
	if (!tmp)
		return -ENOMEM;
	for (;;) {
		unsigned src[RING_MAX_PLACE], ns = 0;

		/* data strips first, then parity: the first k good ones */
		for (unsigned j = 0; j < n && ns < k; j++)
			if (g->at[j] && !(bad & 1u << j) && !(failed & 1u << j))
				src[ns++] = j;
		if (ns < k) {
			ret = transient ? -ESTALE : -EAGAIN;
			break;
		}
		nc = 0;
		for (unsigned x = 0; x < k; x++)
			get_req(&calls[nc++], g, src[x], oid, epoch, hdrs[src[x]], r0, r1,
				tmp + (size_t)x * rl, cap);
		rpc_run(s->pool, calls, nc, try_bound(s, deadline), next_req_id, s);
		int again = 0;

		if (cap_refused(calls, nc)) {
			rpc_calls_free(calls, nc);
			ret = -EKEYREJECTED;
			break;
		}
		for (unsigned x = 0; x < k; x++)
			if (!got_all(&calls[x])) {
				failed |= 1u << src[x];
				csum |= (uint32_t)(rpc_result(&calls[x]) == -EBADMSG) << src[x];
				transient |= moved_on(rpc_result(&calls[x]));
				again = 1;
				log_every(LOG_EVERY_MS, LOG_WARNING, "oid=%016" PRIx64 " strip=%u "
					  "node=%" PRIu32 ": %s (degraded read)", oid, src[x],
					  g->at[src[x]]->node_id,
					  err_text(&calls[x]));
			}
		rpc_calls_free(calls, nc);
		if (rs)
			rs->strips_read += k;
		if (again)
			continue;
		uint32_t missing = (n >= 32 ? 0xffffffffu : (1u << n) - 1);
		unsigned w = 0;

		memset(ptr, 0, sizeof(ptr));
		for (unsigned x = 0; x < k; x++) {
			ptr[src[x]] = tmp + (size_t)x * rl;
			missing &= ~(1u << src[x]);
		}
		for (unsigned i = first; i <= last; i++)
			if (bad & 1u << i)
				ptr[i] = tmp + (size_t)(k + w++) * rl;
		ret = ec_decode(code, rl, missing, ptr);
		if (ret)
			break;
		for (unsigned i = first; i <= last; i++)
			if (bad & 1u << i)
				memcpy(dst[i], ptr[i] + (lo[i] - r0), (size_t)(hi[i] - lo[i]));
		if (rs)
			rs->rebuilt += nbad;
		ret = (ssize_t)len;
		break;
	}
	free(tmp);
	if (ret == (ssize_t)len && csum)
		ask_repair(s, oid, epoch, g, csum, cap);
	return ret;
}

/*
 * The read of @h's version without asking the holders which versions
 * they have (ec_read_hinted): its strips where the map places them.
 * The length; -EKEYREJECTED; else < 0 (not there any more, holders
 * down: the caller asks them).
 */
static ssize_t read_hinted(struct sdfs *s, const struct ec_code *code, uint64_t oid,
			   unsigned k, unsigned m, void *buf, size_t len, uint64_t off,
			   int64_t deadline, const struct ec_cap *cap,
			   const struct ec_hint *h, struct sdfs_ec_rstat *rs)
{
	struct ec_group g = { .version = h->version, .tag = h->tag, .size = h->size,
			      .strip_len = h->strip_len };
	struct ec_place p;
	ssize_t r;
	int ret = place(s, oid, k, m, 0, &p);

	if (ret)
		return ret;
	for (unsigned i = 0; i < p.n; i++)
		if (p.node[i] && p.node[i]->state == CMAP_UP) {
			g.at[i] = p.node[i];
			g.count++;
		}
	r = g.count >= k ? read_group(s, code, k, m, oid, p.m->map->epoch, &g, buf, len,
				      off, deadline, cap, rs) : -EAGAIN;
	place_done(&p);
	return r;
}

static ssize_t read_try(struct sdfs *s, const struct ec_code *code, uint64_t oid,
			unsigned k, unsigned m, void *buf, size_t len, uint64_t off,
			const struct ec_cap *cap, struct ec_hint *h,
			struct sdfs_ec_rstat *rs)
{
	int64_t deadline = net_now_ms() + s->timeout_ms;
	ssize_t last = -EIO;
	int ret;

	if (rs)
		memset(rs, 0, sizeof(*rs));
	if (h && h->version) {
		ssize_t r = read_hinted(s, code, oid, k, m, buf, len, off, deadline, cap, h,
					rs);

		if (r >= 0 || r == -EKEYREJECTED)
			return r;
		h->version = 0;         /* moved on: ask the holders */
		if (rs)
			memset(rs, 0, sizeof(*rs));
	}
	for (int attempt = 0;; attempt++) {
		struct ec_group g[EC_GROUPS_MAX];
		struct ec_place p;
		unsigned ng, unreached;
		int stale = 0;

		ret = place(s, oid, k, m, 0, &p);
		if (ret)
			return ret;
		ret = stat_groups(s, &p, oid, k, m, deadline, cap, g, &ng, &unreached);
		if (ret) {
			place_done(&p);
			return ret;
		}
		unreached += k + m - p.n;       /* positions the map cannot place */
		for (unsigned j = 0; j < ng; j++) {
			ssize_t r;

			if (g[j].count < k)
				continue;       /* never complete, or lost too much */
			if (g[j].tomb) {
				place_done(&p);
				return -ENOENT; /* removed, as of this version */
			}
			r = read_group(s, code, k, m, oid, p.m->map->epoch, &g[j], buf, len,
				       off, deadline, cap, rs);
			if (r == -ESTALE) {
				/* holders on a newer map (or briefly away):
				 * not a lost version; again on a fresh map */
				stale = 1;
				last = -EIO;
				break;
			}
			/* The newest version with k strips is the object (a
			 * put stopped after k strips reads as the new one):
			 * fewer than k of them readable is no reason to read
			 * an older one, only to wait for holders or fail. */
			if (r == -EAGAIN)
				break;
			if (rs && r >= 0) {
				rs->version = g[j].version;
				rs->size = g[j].size;
			}
			if (h && r >= 0)
				*h = (struct ec_hint){ .version = g[j].version, .tag = g[j].tag,
						       .size = g[j].size,
						       .strip_len = g[j].strip_len };
			place_done(&p);
			return r;
		}
		place_done(&p);
		/* Nothing of it anywhere, and enough holders answered that
		 * a whole stripe would have shown k strips: no object. */
		if (ng == 0 && unreached <= m)
			return -ENOENT;
		/* Every holder answered: no version has k good strips, and
		 * none will by waiting (more than m lost or corrupt). */
		if (unreached == 0 && !stale) {
			log_warn("oid=%016" PRIx64 ": ec read %u+%u: no version with %u good "
				 "strips", oid, k, m, k);
			return -EIO;
		}
		if (net_now_ms() >= deadline) {
			log_warn("oid=%016" PRIx64 ": ec read %u+%u: no version with %u good "
				 "strips (%u holders unreachable)", oid, k, m, k, unreached);
			return last;
		}
		client_map_refresh(s);
		client_backoff(attempt, deadline);
	}
}

static ssize_t ec_read(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, void *buf,
		       size_t len, uint64_t off, struct ec_hint *h, struct sdfs_ec_rstat *rs)
{
	const struct ec_code *code;
	struct ec_cap cap = { 0 };
	ssize_t ret = code_of(k, m, &code);

	if (!ret)
		ret = cap_get(s, oid, OBJCAP_R, 0, &cap);
	if (!ret)
		ret = read_try(s, code, oid, k, m, buf, len, off, &cap, h, rs);
	if (ret == -EKEYREJECTED) {
		ret = cap_get(s, oid, OBJCAP_R, 1, &cap);
		if (!ret)
			ret = read_try(s, code, oid, k, m, buf, len, off, &cap, h, rs);
		if (ret == -EKEYREJECTED) {
			log_warn("oid=%016" PRIx64 ": ec read %u+%u: no capability a block "
				 "daemon takes", oid, k, m);
			ret = -EACCES;
		}
	}
	return ret;
}

ssize_t sdfs_ec_read_ex(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, void *buf,
			size_t len, uint64_t off, struct sdfs_ec_rstat *rs)
{
	return ec_read(s, oid, k, m, buf, len, off, NULL, rs);
}

ssize_t sdfs_ec_read(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, void *buf,
		     size_t len, uint64_t off)
{
	return ec_read(s, oid, k, m, buf, len, off, NULL, NULL);
}

ssize_t ec_read_hinted(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, void *buf,
		       size_t len, uint64_t off, struct ec_hint *h)
{
	return ec_read(s, oid, k, m, buf, len, off, h, NULL);
}

int sdfs_ec_locate(struct sdfs *s, uint64_t oid, unsigned k, unsigned m, uint32_t *ids,
		   size_t max)
{
	struct ec_place p;
	int ret = place(s, oid, k, m, 1, &p);

	if (ret)
		return ret;
	for (unsigned i = 0; i < p.n && i < max; i++)
		ids[i] = p.node[i] ? p.node[i]->node_id : 0;
	ret = (int)p.n;
	place_done(&p);
	return ret;
}
