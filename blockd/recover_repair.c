/*
 * recover_repair.c - rewriting a copy here that scrub found corrupt
 * (recover_repair in recover.h), and comparing a good one with its
 * peers' (recover_compare), with recovery's own tools: the
 * object's stripe lock, the settle rule, the peers' raw STAT (the view)
 * and the raw OBJ_READ fetch. Which copy may replace it is the whole
 * point, see below; docs/scrub.md "Repair" says it for operators.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "blockd/recover_int.h"
#include "common/log.h"

/*
 * The candidates of @v, newest first, that may replace a corrupt copy
 * here whose header says @ltag (@have_tag; else its header is gone
 * too). A copy of the same version holds the same changes, so the same
 * bytes; a newer one is what the settle would take. A tombstone is
 * never a candidate: an object removed meanwhile is the settle's (the
 * next pass's) to drop. Returns how many went into @out.
 */
static size_t candidates(const struct rec_view *v, int have_tag, uint64_t ltag,
			 const struct rec_copy **out)
{
	size_t n = 0;

	for (size_t i = 0; i < v->n; i++) {
		const struct rec_copy *c = &v->copy[i];

		if (!c->present || c->deleted || (have_tag && c->tag < ltag))
			continue;
		size_t k = n++;
		while (k > 0 && out[k - 1]->tag < c->tag) {     /* insertion sort */
			out[k] = out[k - 1];
			k--;
		}
		out[k] = c;
	}
	return n;
}

/*
 * Without a readable header here, nothing says which version this node
 * held: the newest copy elsewhere (@best_tag) is current only if, for
 * every epoch after it up to @m's, some up holder of that epoch other
 * than this node answered (a change made then is on all of them; this
 * node's word is what was lost). The settle's own check, without self.
 */
static int newest_is_current(struct recover *r, const struct cmap *m, uint64_t oid,
			     const struct rec_view *v, uint64_t best_tag)
{
	for (uint64_t t = (best_tag >> 32) + 1; t <= m->epoch; t++) {
		const struct cmap *cm;
		uint32_t ids[RING_MAX_COPIES];
		int n, seen = 0;

		if (history_get(r->hist, t, &cm))
			return 0;
		n = history_up_holders(cm, oid, r->copies, ids);
		for (int k = 0; k < n && !seen; k++)
			for (size_t i = 0; i < v->nresp && !seen; i++)
				seen = ids[k] != r->self && v->resp_id[i] == ids[k];
		if (n && !seen)
			return 0;
	}
	return 1;
}

int recover_repair(struct recover *r, uint64_t oid, uint64_t epoch, uint32_t *from)
{
	struct objstore *st = r->bd->store;
	const struct rec_copy *cand[REC_MAX_PEERS];
	const struct cmap *m;
	struct rec_view v;
	uint64_t size, ltag = 0, bytes;
	size_t n;
	int ret, have_tag;

	*from = 0;
	pthread_mutex_lock(rec_stripe(r, oid));
	/* Under the lock no client change or settle of @oid runs here: a
	 * read's repair may have rewritten it already, or a removal. */
	ret = objstore_verify(st, oid);
	if (ret != -EBADMSG)
		goto out;
	if (history_get(r->hist, epoch, &m)) {
		ret = -EAGAIN;
		goto out;
	}
	/* First current as any copy before a client op (it may fetch a
	 * newer copy, which repairs it; or learn the object is gone). */
	ret = rec_ensure_locked(r, oid, epoch);
	if (ret)
		goto out;
	ret = objstore_verify(st, oid);
	if (ret != -EBADMSG)
		goto out;
	have_tag = objstore_head(st, oid, &size, &ltag, NULL) == 0;
	ret = rec_view_gather(r, m, oid, 0, &v);
	if (ret)
		goto out;
	n = candidates(&v, have_tag, ltag, cand);
	if (n && !have_tag && !newest_is_current(r, m, oid, &v, cand[0]->tag))
		n = 0;
	ret = -ENODATA;
	for (size_t i = 0; i < n && ret; i++) {
		ret = rec_fetch(r, m, oid, cand[i], &bytes);
		if (ret == 0)
			ret = objstore_verify(st, oid);
		if (ret == 0)
			*from = cand[i]->node_id;
	}
	if (ret && ret != -EAGAIN)
		ret = -ENODATA;
out:
	pthread_mutex_unlock(rec_stripe(r, oid));
	if (ret == 0 && *from)
		log_debug("oid=%016" PRIx64 ": repaired from node %" PRIu32, oid, *from);
	return ret;
}

int recover_compare(struct recover *r, uint64_t oid, uint64_t epoch, uint64_t version,
		    uint64_t csum, unsigned *asked)
{
	uint32_t ids[RING_MAX_COPIES];
	const struct cmap *m;
	struct rec_view v;
	int n, ret, differ = 0;

	*asked = 0;
	if (history_get(r->hist, epoch, &m))
		return -EAGAIN;
	n = history_up_holders(m, oid, r->copies, ids);
	if (n < 2 || ids[0] != r->self)
		return 0;
	ret = rec_view_gather(r, m, oid, 1, &v);
	if (ret)
		return ret;
	for (size_t i = 0; i < v.n; i++) {
		const struct rec_copy *c = &v.copy[i];
		int holder = 0;

		for (int k = 1; k < n; k++)
			holder |= ids[k] == c->node_id;
		/* csum 0: a node before 2.3 did not say */
		if (!holder || !c->present || c->deleted || c->tag != version || !c->csum)
			continue;
		(*asked)++;
		if (c->csum == csum)
			continue;
		differ++;
		log_err("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: the copy on node %"
			PRIu32 " has this copy's version %" PRIx64 " but other contents "
			"(csum %016" PRIx64 " there, %016" PRIx64 " here)", r->self, oid,
			c->node_id, version, c->csum, csum);
	}
	return differ;
}
