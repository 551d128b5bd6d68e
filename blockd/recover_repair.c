/*
 * recover_repair.c - rewriting a copy here that scrub found corrupt
 * (recover_repair in recover.h), comparing a good one with its peers'
 * (recover_look) and making it the right one when they differ
 * (recover_reconcile), with recovery's own tools: the object's stripe
 * lock, the settle rule, the peers' raw STAT (the view) and the raw
 * OBJ_READ fetch. Which copy may replace which is the whole point, see
 * below; docs/scrub.md "Repair" and "Copies that differ" say it for
 * operators.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "blockd/recover_int.h"
#include "common/log.h"
#include "common/oid.h"

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

/*
 * What the other up holders of @oid in @m said in @v, against the copy
 * here of @version and @csum: into @out. A holder that did not answer
 * is not in it; one that answered without a copy is (present 0).
 */
static void look_fill(struct recover *r, const struct cmap *m, uint64_t oid,
		      const struct rec_view *v, uint64_t version, uint64_t csum,
		      struct recover_look *out)
{
	uint32_t ids[RING_MAX_COPIES];
	int n = history_up_holders(m, oid, r->copies, ids);

	memset(out, 0, sizeof(*out));
	out->version = version;
	out->csum = csum;
	for (int k = 0; k < n; k++) {
		struct recover_peer_copy *pc = &out->peer[out->n];
		int answered = 0;

		if (ids[k] == r->self)
			continue;
		for (size_t i = 0; i < v->nresp && !answered; i++)
			answered = v->resp_id[i] == ids[k];
		if (!answered)
			continue;
		memset(pc, 0, sizeof(*pc));
		pc->node_id = ids[k];
		for (size_t i = 0; i < v->n; i++) {
			const struct rec_copy *c = &v->copy[i];

			if (c->node_id != ids[k] || !c->present)
				continue;
			pc->present = 1;
			pc->deleted = c->deleted;
			pc->version = c->tag;
			pc->csum = c->deleted ? 0 : c->csum;
		}
		out->n++;
		if (!pc->present)
			continue;
		if (pc->version > version)
			out->newer++;
		/* csum 0: a node before 2.3, or entries left unsettled */
		else if (pc->version == version && !pc->deleted && pc->csum && csum) {
			out->compared++;
			out->differ += pc->csum != csum;
		}
	}
}

int recover_look(struct recover *r, uint64_t oid, uint64_t epoch, uint64_t version,
		 uint64_t csum, struct recover_look *out)
{
	const struct cmap *m;
	struct rec_view v;
	int ret;

	memset(out, 0, sizeof(*out));
	if (history_get(r->hist, epoch, &m))
		return -EAGAIN;
	if (!history_is_up_holder(m, oid, r->copies, r->self))
		return -ENOENT;
	ret = rec_view_gather(r, m, oid, 1, &v);
	if (ret)
		return ret;
	look_fill(r, m, oid, &v, version, csum, out);
	return 0;
}

/*
 * Did every peer of @a answer in @b with the same version (and none
 * more)? Every change of a copy by a client gives it a new version; a
 * copy whose contents changed at the same version was replaced by its
 * own node's scrub (or read repair) meanwhile, which is no write in
 * flight: the rule is applied to what @b says.
 */
static int look_same(const struct recover_look *a, const struct recover_look *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct recover_peer_copy *x = &a->peer[i], *y = &b->peer[i];

		if (x->node_id != y->node_id || x->present != y->present ||
		    x->deleted != y->deleted || x->version != y->version)
			return 0;
	}
	return 1;
}

/* The copy to take as a rec_copy for rec_fetch. */
static struct rec_copy as_rec_copy(const struct recover_peer_copy *pc)
{
	return (struct rec_copy){ pc->node_id, 1, pc->deleted, pc->version, 0, pc->csum };
}

/*
 * Copies of @lk->version differ. Which csum is right: a strict majority
 * of the object's @nholders up holders (this node's copy counted), else
 * for an ordered object the copy of its primary in the version's epoch.
 * 0 and *@right, *@why; -ENODATA when no rule decides.
 */
static int pick_right(struct recover *r, uint64_t oid, const struct recover_look *lk,
		      int nholders, uint64_t *right, const char **why)
{
	uint64_t seen[RING_MAX_COPIES + 1];
	unsigned count[RING_MAX_COPIES + 1];
	size_t nseen = 0;
	const struct cmap *vm;
	uint32_t ids[RING_MAX_COPIES];

	seen[nseen] = lk->csum;
	count[nseen++] = 1;
	for (size_t i = 0; i < lk->n; i++) {
		const struct recover_peer_copy *pc = &lk->peer[i];
		size_t k = 0;

		if (!pc->present || pc->deleted || pc->version != lk->version || !pc->csum)
			continue;
		while (k < nseen && seen[k] != pc->csum)
			k++;
		if (k == nseen) {
			seen[nseen] = pc->csum;
			count[nseen++] = 0;
		}
		count[k]++;
	}
	for (size_t k = 0; k < nseen; k++)
		if (2 * count[k] > (unsigned)nholders) {
			*right = seen[k];
			*why = "majority";
			return 0;
		}
	if (!oid_is_ordered(oid) || history_get(r->hist, lk->version >> 32, &vm) ||
	    history_up_holders(vm, oid, r->copies, ids) < 1)
		return -ENODATA;
	if (ids[0] == r->self) {
		*right = lk->csum;
		*why = "primary";
		return 0;
	}
	for (size_t i = 0; i < lk->n; i++) {
		const struct recover_peer_copy *pc = &lk->peer[i];

		if (pc->node_id == ids[0] && pc->present && !pc->deleted &&
		    pc->version == lk->version && pc->csum) {
			*right = pc->csum;
			*why = "primary";
			return 0;
		}
	}
	return -ENODATA;        /* that primary holds another version, or is away */
}

int recover_reconcile(struct recover *r, uint64_t oid, uint64_t epoch,
		      const struct recover_look *first, uint32_t *from, const char **why)
{
	struct objstore *st = r->bd->store;
	struct recover_look now;
	struct objstore_stat ost;
	const struct cmap *m;
	uint32_t ids[RING_MAX_COPIES];
	struct rec_view v;
	uint64_t right, bytes;
	int ret, nholders;

	*from = 0;
	*why = "";
	pthread_mutex_lock(rec_stripe(r, oid));
	if (history_get(r->hist, epoch, &m)) {
		ret = -EAGAIN;
		goto out;
	}
	/* Current as before a client op first (a node back from away
	 * fetches what it missed here: recovery's business, not a stale
	 * copy); a copy that moved meanwhile is not the one looked at. */
	ret = rec_ensure_locked(r, oid, epoch);
	if (ret)
		goto out;
	ret = RECOVER_BUSY;
	if (objstore_stat_table(st, oid, &ost) || ost.version != first->version ||
	    ost.csum != first->csum)
		goto out;
	if (!history_is_up_holder(m, oid, r->copies, r->self))
		goto out;
	if (rec_view_gather(r, m, oid, 1, &v))
		goto out;       /* between epochs: busy */
	look_fill(r, m, oid, &v, first->version, first->csum, &now);
	/* A write in flight when @first was taken has landed since, on
	 * this node or a peer (its try waited at most the replica timeout,
	 * the caller waited longer): then something here moved. */
	if (!look_same(first, &now))
		goto out;
	if (!now.newer && !now.differ) {
		ret = RECOVER_AGREE;
		goto out;
	}
	if (now.newer) {
		/* Missed changes: the newest copy, as a settle takes it;
		 * never one not newer than this. */
		const struct recover_peer_copy *best = NULL;

		for (size_t i = 0; i < now.n; i++)
			if (now.peer[i].present && now.peer[i].version > now.version &&
			    (!best || now.peer[i].version > best->version))
				best = &now.peer[i];
		struct rec_copy c = as_rec_copy(best);
		ret = rec_fetch(r, m, oid, &c, &bytes);
		if (ret == 0) {
			*from = best->node_id;
			*why = "newer";
			ret = RECOVER_REFRESHED;
		}
		goto out;
	}
	nholders = history_up_holders(m, oid, r->copies, ids);
	if (pick_right(r, oid, &now, nholders, &right, why)) {
		ret = RECOVER_NO_RULE;
		goto out;
	}
	ret = RECOVER_KEPT;
	if (right == now.csum)
		goto out;
	ret = -ENODATA;
	for (size_t i = 0; i < now.n && ret; i++) {
		const struct recover_peer_copy *pc = &now.peer[i];

		if (!pc->present || pc->deleted || pc->version != now.version ||
		    pc->csum != right)
			continue;
		struct rec_copy c = as_rec_copy(pc);
		ret = rec_fetch(r, m, oid, &c, &bytes);
		if (ret == 0)
			*from = pc->node_id;
	}
	if (ret == 0)
		ret = RECOVER_REFRESHED;
out:
	pthread_mutex_unlock(rec_stripe(r, oid));
	return ret;
}
