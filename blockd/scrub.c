/*
 * scrub.c - the scrub thread (scrub.h): the schedule, the walk over the
 * store, the throttle, and what is counted and logged for each object.
 *
 * An object is read in pieces of SCRUB_PIECE_BLOCKS, each paid for at
 * the pass's rate before it is read and read under the object's store
 * lock only for that piece (objstore_verify_part), so a client write
 * to it waits for one piece at most, never for the whole object or the
 * throttle's pauses. The pieces make one consistent copy only if the
 * object's version did not move between them; if it did, the object is
 * read again (SCRUB_RESTARTS at most).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockd/blockd.h"
#include "blockd/scrub.h"
#include "blockd/scrub_state.h"
#include "blockd/strip_recover.h"
#include "blockd/stripstore.h"
#include "common/csum.h"
#include "common/log.h"
#include "common/net.h"

#define SCRUB_PAGE 64           /* oids listed at once */
#define SCRUB_SAVE_MS 2000      /* the cursor reaches the disk this often */
#define SCRUB_REPAIR_TRIES 20   /* a repair between epochs: again, 0.5 s apart */
#define SCRUB_BURST_MS 100      /* the throttle lets this much run ahead */
#define SCRUB_PIECE_BLOCKS 64   /* 256 KiB paid, read and checked at once */
#define SCRUB_RESTARTS 3        /* an object written while read: again */
/* A write in flight lands on every up holder within twice the
 * sdfs.conf replica_timeout_ms (1.5 s by default), or its try gives up:
 * the client waits that long for its replicas, a primary as long for
 * the others. Copies that differ are looked at again after it
 * (recover_reconcile). Without a replica_timeout_ms: 3 s. */
#define SCRUB_SETTLE_MS 3000
#define SCRUB_BLOCK 4096u
#define SCRUB_RECHECKS 64       /* differing copies waiting for a second look */
#define SCRUB_STRIPS_MAX 64     /* strip files of one oid checked at most */

/* A copy that differed at its first look, to look at again when due. */
struct scrub_recheck {
	uint64_t oid;
	int64_t due_ms;         /* net_now_ms */
	struct recover_look lk;
};

struct scrub {
	struct blockd *bd;
	struct scrub_opts opts;
	pthread_t thread;
	pthread_mutex_t lock;   /* below */
	pthread_cond_t cond;
	int stop;               /* the thread ends */
	int dirty;              /* st changed since it was saved */
	struct scrub_state st;
	uint64_t rate;          /* this pass's bytes/s (lock) */
	/* throttle, the thread's own */
	double tokens;
	int64_t tb_last_ms;
	double yield_polls;     /* 2 ms waits for client I/O still allowed */
	/* the thread's: block checksums of the object being read */
	uint64_t *csums;
	size_t ncsums;
	int settle_ms;          /* SCRUB_SETTLE_MS */
	struct scrub_recheck *rechecks; /* the thread's, oldest first */
	size_t nrechecks;
	uint8_t *sbuf;          /* the thread's: one piece of a strip */
	int64_t saved_ms;       /* the thread's: the state was last saved */
};

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A pass should run now: not stopping, begun and not paused. With lock. */
static int running(const struct scrub *s)
{
	return !s->stop && s->st.in_pass && !s->st.paused;
}

/* With lock: a new pass from the first oid. */
static void pass_begin(struct scrub *s, uint64_t rate, const char *why)
{
	struct scrub_state *st = &s->st;

	st->in_pass = 1;
	st->paused = 0;
	st->has_cursor = 0;
	st->cursor = 0;
	st->objects = st->bytes = st->found = st->repaired = st->unrepaired = 0;
	st->compared = st->mismatched = st->refreshed = 0;
	st->strip_phase = st->has_strip_cursor = 0;
	st->strip_cursor = 0;
	st->strips = st->strip_bytes = st->strips_found = st->strips_repaired = 0;
	st->strips_unrepaired = 0;
	st->pass_start_ms = wall_ms();
	s->rate = rate ? rate : s->opts.rate;
	s->dirty = 1;
	log_info("node=%" PRIu32 ": scrub pass started (%s), %" PRIu64 " objects, "
		 "at most %" PRIu64 " bytes/s", s->bd->node_id, why,
		 objstore_count(s->bd->store), s->rate);
	pthread_cond_broadcast(&s->cond);
}

/* With lock: every oid was checked. */
static void pass_end(struct scrub *s)
{
	struct scrub_state *st = &s->st;

	st->in_pass = 0;
	st->paused = 0;
	st->has_cursor = 0;
	st->strip_phase = st->has_strip_cursor = 0;
	st->passes++;
	st->pass_end_ms = wall_ms();
	st->last_start_ms = st->pass_start_ms;
	s->rate = s->opts.rate;
	s->dirty = 1;
	sdfs_log(st->unrepaired || st->strips_unrepaired || st->mismatched > st->refreshed
		 ? LOG_ERR : st->found || st->strips_found || st->mismatched ? LOG_WARNING
		 : LOG_INFO,
		 "node=%" PRIu32 ": scrub pass done in %" PRIu64 " s: %" PRIu64
		 " objects, %" PRIu64 " bytes verified; %" PRIu64 " corrupt copies "
		 "found, %" PRIu64 " repaired, %" PRIu64 " not repaired; %" PRIu64
		 " peers' copies compared; %" PRIu64 " copies here differed, %" PRIu64
		 " replaced; %" PRIu64 " strips, %" PRIu64 " bytes verified; %" PRIu64
		 " corrupt strips found, %" PRIu64 " rebuilt, %" PRIu64 " not rebuilt",
		 s->bd->node_id, (st->pass_end_ms - st->pass_start_ms) / 1000,
		 st->objects, st->bytes, st->found, st->repaired, st->unrepaired,
		 st->compared, st->mismatched, st->refreshed, st->strips, st->strip_bytes,
		 st->strips_found, st->strips_repaired, st->strips_unrepaired);
}

/* When the schedule starts (or resumes) the next pass, unix ms; 0:
 * never. With lock. */
static uint64_t next_due_ms(const struct scrub *s)
{
	const struct scrub_state *st = &s->st;
	uint64_t base = st->pass_start_ms ? st->pass_start_ms : st->created_ms;

	if (!s->opts.interval_s || (st->in_pass && !st->paused))
		return 0;
	return base + s->opts.interval_s * 1000;
}

/* Pay for @bytes at this pass's rate, yielding to client I/O first:
 * while requests queue on the disk workers, up to 50 ms per 4 MiB (2 ms
 * polls, the fractions carried to the next piece), so the yield per
 * byte stays what it was when whole objects were paid for, and a busy
 * disk does not starve the pass. 0, or -EINTR when the pass was paused
 * or the thread is stopping. */
static int throttle(struct scrub *s, uint64_t bytes)
{
	s->yield_polls += 25.0 * (double)bytes / (double)(4u << 20);
	for (; s->yield_polls >= 1.0 && workq_depth(s->bd->io_q) > 0; s->yield_polls -= 1.0)
		usleep(2000);
	if (s->yield_polls > 25.0)
		s->yield_polls = 25.0;  /* no more than one object's worth owed */
	for (;;) {
		int64_t now = net_now_ms(), wait_ms;
		double rate;            /* bytes per ms; start may change it */
		int go;

		pthread_mutex_lock(&s->lock);
		go = running(s);
		rate = (double)s->rate / 1000.0;
		pthread_mutex_unlock(&s->lock);
		if (!go)
			return -EINTR;
		s->tokens += (double)(now - s->tb_last_ms) * rate;
		if (s->tokens > rate * SCRUB_BURST_MS)
			s->tokens = rate * SCRUB_BURST_MS;
		s->tb_last_ms = now;
		if (s->tokens >= 0) {
			s->tokens -= (double)bytes;     /* may go negative: pay later */
			return 0;
		}
		wait_ms = (int64_t)(-s->tokens / rate) + 1;
		usleep((useconds_t)(wait_ms > 100 ? 100 : wait_ms) * 1000);
	}
}

/* A repair of @oid (@st: the strip, or NULL for the object's copy):
 * 0, -EAGAIN (between epochs: again), -errno; the node it copied from
 * into *@from (0: rebuilt or nothing copied). */
static int repair_once(struct scrub *s, uint64_t oid, const struct sdfs_strip *st,
		       uint32_t *from)
{
	struct blockd *bd = s->bd;

	return st ? strip_recover_scrub(bd->strip_rec, oid, st, from) :
		    recover_repair(bd->recover, oid, member_epoch(bd), from);
}

/* repair_once, again every 500 ms while it says -EAGAIN, up to
 * SCRUB_REPAIR_TRIES times, unless the scrub is stopping. */
static int repair_tries(struct scrub *s, uint64_t oid, const struct sdfs_strip *st,
			uint32_t *from)
{
	int ret = -EAGAIN;

	for (int i = 0; i < SCRUB_REPAIR_TRIES && ret == -EAGAIN; i++) {
		if (i)
			usleep(500 * 1000);
		pthread_mutex_lock(&s->lock);
		int stop = s->stop;
		pthread_mutex_unlock(&s->lock);
		if (stop)
			break;
		ret = repair_once(s, oid, st, from);
	}
	return ret;
}

/* The copy here is corrupt: rewrite it from a good one. 1 if it is good
 * now, 0 if not (logged). */
static int repair(struct scrub *s, uint64_t oid)
{
	struct blockd *bd = s->bd;
	uint32_t from = 0;
	int ret = repair_tries(s, oid, NULL, &from);

	if (ret == 0 && from)
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: corrupt copy "
			 "rewritten from node %" PRIu32, bd->node_id, oid, from);
	else if (ret == 0 || ret == -ENOENT)
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: corrupt copy "
			 "%s meanwhile", bd->node_id, oid, ret ? "removed" : "rewritten");
	else
		log_err("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: corrupt copy NOT "
			"repaired: %s; it is left as it is", bd->node_id, oid,
			ret == -ENODATA ? "no good current copy is reachable"
					: strerror(-ret));
	return ret == 0 || ret == -ENOENT;
}

/* Sleep @ms unless the pass is paused or the thread stops meanwhile:
 * 0, or -EINTR. */
static int pause_ms(struct scrub *s, int ms)
{
	for (int64_t end = net_now_ms() + ms; net_now_ms() < end;) {
		pthread_mutex_lock(&s->lock);
		int go = running(s);
		pthread_mutex_unlock(&s->lock);
		if (!go)
			return -EINTR;
		usleep(50 * 1000);
	}
	return 0;
}

/*
 * Read and check @oid (of @size by its header) piece by piece at the
 * pass's rate. 0 and *@out (version, size, csum over the block
 * checksums as objstore_stat's) when the pieces make one copy of one
 * version; -EBUSY when it was written while read every time (each
 * block was checked, against the table of its moment, but there is no
 * one copy to compare); -EINTR (paused or stopping), -EBADMSG, -ENOENT.
 */
static int verify_paced(struct scrub *s, uint64_t oid, uint64_t size,
			struct objstore_stat *out)
{
	for (int round = 0; round <= SCRUB_RESTARTS; round++) {
		struct objstore_stat first = { 0 }, st;
		uint64_t b0 = 0, next;
		int moved = 0, ret;

		do {
			uint64_t at = b0 * SCRUB_BLOCK, piece = 0;

			if (size > at)
				piece = size - at < SCRUB_PIECE_BLOCKS * SCRUB_BLOCK
					? size - at : SCRUB_PIECE_BLOCKS * SCRUB_BLOCK;
			if (throttle(s, piece))
				return -EINTR;
			ret = objstore_verify_part(s->bd->store, oid, b0, SCRUB_PIECE_BLOCKS,
						   s->csums, s->ncsums, &st, &next);
			if (ret)
				return ret;
			if (b0 == 0)
				first = st;
			else if (st.version != first.version)
				moved = 1;
			size = st.size;
			b0 = next;
		} while (next && !moved);
		if (!moved) {
			uint64_t nb = (first.size + SCRUB_BLOCK - 1) / SCRUB_BLOCK;

			*out = first;
			out->csum = csum64(s->csums, nb * sizeof(*s->csums));
			return 0;
		}
	}
	return -EBUSY;
}

/* The differing copies' csums of @lk, for a log line. */
static void differing(const struct recover_look *lk, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < lk->n && off < len; i++) {
		const struct recover_peer_copy *pc = &lk->peer[i];

		if (!pc->present)
			continue;
		if (pc->version != lk->version)
			off += (size_t)snprintf(buf + off, len - off, "%snode %" PRIu32
						": %s %" PRIx64, off ? ", " : "", pc->node_id,
						pc->deleted ? "tombstone" : "version",
						pc->version);
		else if (pc->csum && pc->csum != lk->csum)
			off += (size_t)snprintf(buf + off, len - off, "%snode %" PRIu32
						": csum %016" PRIx64, off ? ", " : "",
						pc->node_id, pc->csum);
	}
}

/*
 * Copies of @oid differed from the one here at @lk's look, the wait
 * ago: look again under the object's lock and make the one here the
 * right one (recover_reconcile); count and log what it was.
 */
static void recheck(struct scrub *s, uint64_t oid, const struct recover_look *lk)
{
	struct blockd *bd = s->bd;
	const char *why = "";
	char peers[512];
	uint32_t from = 0;
	int ret, counted = 0, replaced = 0;

	differing(lk, peers, sizeof(peers));
	ret = recover_reconcile(bd->recover, oid, member_epoch(bd), lk, &from, &why);
	switch (ret) {
	case RECOVER_REFRESHED:
		counted = replaced = 1;
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: the copy here "
			 "(version %" PRIx64 ", csum %016" PRIx64 ") was %s (%s); replaced "
			 "by node %" PRIu32 "'s", bd->node_id, oid, lk->version, lk->csum,
			 strcmp(why, "newer") ? "the odd one of its version" : "stale",
			 peers, from);
		break;
	case RECOVER_KEPT:
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: other copies of "
			 "version %" PRIx64 " differ (%s); the one here (csum %016" PRIx64
			 ") is right by the %s rule, each odd one is replaced by its "
			 "node's scrub", bd->node_id, oid, lk->version, peers, lk->csum, why);
		break;
	case RECOVER_NO_RULE:
		counted = 1;
		log_err("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: copies of version %"
			PRIx64 " have other contents (csum %016" PRIx64 " here, %s) and no "
			"rule says which is right: NOT repaired, left as they are",
			bd->node_id, oid, lk->version, lk->csum, peers);
		break;
	case RECOVER_AGREE:
	case RECOVER_BUSY:
		log_debug("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: %s", bd->node_id,
			  oid, ret == RECOVER_AGREE ? "the copies agree by now"
						    : "written meanwhile: in flight, not stale");
		break;
	default:
		log_every(LOG_EVERY_MS, LOG_WARNING, "node=%" PRIu32 " oid=%016" PRIx64
			  ": scrub: the copy here differs (%s) but could not be looked "
			  "at again: %s", bd->node_id, oid, peers, strerror(-ret));
		break;
	}
	pthread_mutex_lock(&s->lock);
	s->st.mismatched += (uint64_t)counted;
	s->st.total_mismatched += (uint64_t)counted;
	s->st.refreshed += (uint64_t)replaced;
	s->st.total_refreshed += (uint64_t)replaced;
	pthread_mutex_unlock(&s->lock);
}

/*
 * The rechecks that are due (all of them with @all, waiting for each
 * one's time). 0, or -EINTR when the pass was paused or the thread
 * stops while waiting (those left stay queued).
 */
static int rechecks_run(struct scrub *s, int all)
{
	while (s->nrechecks) {
		struct scrub_recheck *rc = &s->rechecks[0];
		int64_t wait = rc->due_ms - net_now_ms();

		if (wait > 0 && (!all || pause_ms(s, (int)wait)))
			return all ? -EINTR : 0;
		recheck(s, rc->oid, &rc->lk);
		memmove(rc, rc + 1, --s->nrechecks * sizeof(*rc));
	}
	return 0;
}

/*
 * A good copy here (@ost): do the other up holders' copies agree? A
 * newer copy elsewhere, or one of the same version with other contents,
 * is looked at again once a write in flight would have landed (queued:
 * the pass goes on meanwhile; inline if SCRUB_RECHECKS wait already),
 * and the copy here replaced if the rules say it is the stale or odd
 * one (recover_reconcile, docs/scrub.md "Copies that differ").
 */
static void compare(struct scrub *s, uint64_t oid, const struct objstore_stat *ost)
{
	struct blockd *bd = s->bd;
	struct recover_look lk;
	char peers[512];

	if (ost->backing)
		return;         /* backed: its absent blocks are not here (backing.h) */
	if (recover_look(bd->recover, oid, member_epoch(bd), ost->version, ost->csum, &lk))
		return;         /* between epochs, or not a holder: recovery's */
	pthread_mutex_lock(&s->lock);
	s->st.compared += lk.compared;
	pthread_mutex_unlock(&s->lock);
	if (!lk.newer && !lk.differ)
		return;
	differing(&lk, peers, sizeof(peers));
	log_debug("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: the copy here (version %"
		  PRIx64 ") differs from %s; looking again in %d ms", bd->node_id, oid,
		  lk.version, peers, s->settle_ms);
	if (s->nrechecks < SCRUB_RECHECKS) {
		struct scrub_recheck *rc = &s->rechecks[s->nrechecks++];

		rc->oid = oid;
		rc->due_ms = net_now_ms() + s->settle_ms;
		rc->lk = lk;
		return;
	}
	if (pause_ms(s, s->settle_ms) == 0)
		recheck(s, oid, &lk);
}

/* Check @oid; count it. -EINTR: paused or stopping before it was all
 * read (the cursor stays before it). */
static int scrub_one(struct scrub *s, uint64_t oid)
{
	struct blockd *bd = s->bd;
	struct objstore_stat ost;
	uint64_t size = 0, version = 0;
	int dead = 0, ret, bad = 0, good = 0;

	ret = objstore_head(bd->store, oid, &size, &version, &dead);
	if (ret == 0 && dead) {
		ret = -ENOENT;  /* a tombstone: nothing to check, not counted */
		goto done;
	}
	if (ret != -ENOENT) {
		ret = verify_paced(s, oid, size, &ost);
		if (ret == -EINTR)
			return -EINTR;
	}
	if (ret == -EBADMSG) {
		bad = 1;
		log_err("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: checksum mismatch "
			"in the local copy (version %" PRIx64 "); repairing it from a peer",
			bd->node_id, oid, version);
		good = repair(s, oid);
	} else if (ret == 0) {
		size = ost.size;
		compare(s, oid, &ost);
	} else if (ret == -EBUSY) {
		ret = 0;        /* checked, by pieces of different versions */
		log_debug("node=%" PRIu32 " oid=%016" PRIx64 ": scrub: written while "
			  "read %d times; not compared this pass", bd->node_id, oid,
			  SCRUB_RESTARTS + 1);
	} else if (ret != -ENOENT) {
		log_every(LOG_EVERY_MS, LOG_ERR, "node=%" PRIu32 " oid=%016" PRIx64
			  ": scrub: cannot read the local copy: %s", bd->node_id, oid,
			  strerror(-ret));
	}
done:
	pthread_mutex_lock(&s->lock);
	if (ret == 0 || good) {
		s->st.objects++;
		s->st.bytes += size;
	}
	if (bad) {
		s->st.found++;
		s->st.total_found++;
		if (good) {
			s->st.repaired++;
			s->st.total_repaired++;
		} else {
			s->st.unrepaired++;
			s->st.total_unrepaired++;
		}
	}
	s->st.cursor = oid;
	s->st.has_cursor = 1;
	s->dirty = 1;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Save the state if it changed (and @force or it is time). Thread only;
 * called without the lock. */
static void save(struct scrub *s, int force, int64_t *saved_ms)
{
	struct scrub_state copy;
	int ret;

	if (!force && net_now_ms() - *saved_ms < SCRUB_SAVE_MS)
		return;
	pthread_mutex_lock(&s->lock);
	if (!s->dirty) {
		pthread_mutex_unlock(&s->lock);
		return;
	}
	copy = s->st;
	s->dirty = 0;
	pthread_mutex_unlock(&s->lock);
	ret = scrub_state_save(s->bd->dir, &copy);
	if (ret)
		log_every(LOG_EVERY_MS, LOG_WARNING, "%s/scrub_state: %s", s->bd->dir,
			  strerror(-ret));
	*saved_ms = net_now_ms();
}

/*
 * Strips. A strip file is immutable (stripstore.h): it is read in
 * pieces, each paid for at the pass's rate, with no lock at all; one
 * committed away meanwhile reads as -ENOENT and is not counted.
 */

/* The strip store's walk order (stripstore_each_oid: by the oid's low
 * byte, its directory, then by oid) as one number: the strip cursor. */
static uint64_t strip_key(uint64_t oid)
{
	return (oid & 0xff) << 56 | oid >> 8;
}

/* The file of @st failed its checksums: rebuild it in place
 * (strip_recover_scrub), trying again while between epochs. 1 if it is
 * good now (or gone: a newer version's commit dropped it), 0 if not
 * (logged). */
static int strip_repair(struct scrub *s, uint64_t oid, const struct sdfs_strip *st)
{
	struct blockd *bd = s->bd;
	uint32_t from = 0;
	int ret = repair_tries(s, oid, st, &from);

	if (ret == 0 && from)
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 " strip=%u version=%016" PRIx64
			 ": scrub: corrupt strip replaced by node %" PRIu32 "'s good copy",
			 bd->node_id, oid, st->s, st->version, from);
	else if (ret == 0)
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 " strip=%u version=%016" PRIx64
			 ": scrub: corrupt strip rebuilt from its stripe", bd->node_id, oid,
			 st->s, st->version);
	else if (ret == -ENOENT)
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 " strip=%u version=%016" PRIx64
			 ": scrub: corrupt strip dropped meanwhile (a newer version "
			 "committed)", bd->node_id, oid, st->s, st->version);
	else
		log_err("node=%" PRIu32 " oid=%016" PRIx64 " strip=%u version=%016" PRIx64
			": scrub: corrupt strip NOT rebuilt: %s; it is left as it is",
			bd->node_id, oid, st->s, st->version,
			ret == -ENODATA ? "fewer than k good strips of its version are "
					  "readable" : strerror(-ret));
	return ret == 0 || ret == -ENOENT;
}

/* Check strip file @st of @oid; count it. -EINTR: paused or stopping. */
static int scrub_strip(struct scrub *s, uint64_t oid, const struct sdfs_strip *st)
{
	struct blockd *bd = s->bd;
	uint64_t piece_max = SCRUB_PIECE_BLOCKS * SCRUB_BLOCK;
	int ret = 0, bad = 0, good = 0;

	if (st->flags & SDFS_STRIP_TOMB)
		return 0;       /* a removal's: a header, no bytes; not counted */
	for (uint64_t off = 0; off < st->strip_len && !ret; off += piece_max) {
		uint64_t piece = st->strip_len - off < piece_max ? st->strip_len - off
								  : piece_max;
		size_t got = 0;

		if (throttle(s, piece))
			return -EINTR;
		ret = stripstore_read(bd->strips, oid, st->s, st->version, st->tag, off,
				      s->sbuf, (size_t)piece, &got);
		if (!ret && got != piece)
			ret = -EBADMSG;
	}
	if (ret == -EBADMSG) {
		bad = 1;
		log_err("node=%" PRIu32 " oid=%016" PRIx64 " strip=%u version=%016" PRIx64
			": scrub: checksum mismatch in the strip file; rebuilding it",
			bd->node_id, oid, st->s, st->version);
		good = strip_repair(s, oid, st);
	} else if (ret && ret != -ENOENT) {
		log_every(LOG_EVERY_MS, LOG_ERR, "node=%" PRIu32 " oid=%016" PRIx64
			  " strip=%u: scrub: cannot read the strip file: %s", bd->node_id,
			  oid, st->s, strerror(-ret));
	}
	pthread_mutex_lock(&s->lock);
	if (ret == 0 || good) {
		s->st.strips++;
		s->st.strip_bytes += st->strip_len;
	}
	if (bad) {
		s->st.strips_found++;
		s->st.total_strips_found++;
		if (good) {
			s->st.strips_repaired++;
			s->st.total_strips_repaired++;
		} else {
			s->st.strips_unrepaired++;
			s->st.total_strips_unrepaired++;
		}
	}
	s->dirty = 1;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* stripstore_each_oid's callback: every strip file of @oid, unless the
 * cursor is past it. Nonzero stops the walk (paused or stopping). */
static int strip_oid(void *arg, uint64_t oid)
{
	struct scrub *s = arg;
	struct sdfs_strip l[SCRUB_STRIPS_MAX];
	size_t n = 0;
	int skip, ret;

	pthread_mutex_lock(&s->lock);
	skip = s->st.has_strip_cursor && strip_key(oid) <= strip_key(s->st.strip_cursor);
	pthread_mutex_unlock(&s->lock);
	if (skip)
		return 0;
	ret = stripstore_list(s->bd->strips, oid, l, SCRUB_STRIPS_MAX, &n);
	for (size_t i = 0; !ret && i < n; i++)
		if (scrub_strip(s, oid, &l[i]) == -EINTR)
			return 1;       /* the cursor stays before it */
	pthread_mutex_lock(&s->lock);
	s->st.strip_cursor = oid;
	s->st.has_strip_cursor = 1;
	s->dirty = 1;
	ret = running(s);
	pthread_mutex_unlock(&s->lock);
	save(s, 0, &s->saved_ms);
	return !ret;
}

/* One page of the walk, or the pass's end. Called without the lock. */
static void walk_page(struct scrub *s)
{
	uint64_t oids[SCRUB_PAGE], after;
	size_t n = 0;
	int first;

	pthread_mutex_lock(&s->lock);
	after = s->st.cursor;
	first = !s->st.has_cursor;
	pthread_mutex_unlock(&s->lock);
	int ret = objstore_list(s->bd->store, after, first, oids, SCRUB_PAGE, &n);

	if (ret) {
		log_every(LOG_EVERY_MS, LOG_WARNING, "scrub: cannot list the store: %s",
			  strerror(-ret));
		usleep(1000 * 1000);
		return;
	}
	if (!n) {
		/* the objects end with their last second looks; then the
		 * strip files, and the pass ends */
		if (rechecks_run(s, 1))
			return;
		pthread_mutex_lock(&s->lock);
		if (running(s) && !s->st.strip_phase) {
			s->st.strip_phase = 1;
			s->dirty = 1;
		}
		pthread_mutex_unlock(&s->lock);
		ret = stripstore_each_oid(s->bd->strips, strip_oid, s);
		if (ret) {
			if (ret < 0) {
				log_every(LOG_EVERY_MS, LOG_WARNING, "scrub: cannot list the "
					  "strip store: %s", strerror(-ret));
				usleep(1000 * 1000);
			}
			return;
		}
		pthread_mutex_lock(&s->lock);
		if (running(s))
			pass_end(s);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		rechecks_run(s, 0);
		if (scrub_one(s, oids[i]) == -EINTR)
			break;
	}
}

static void *scrub_main(void *arg)
{
	struct scrub *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		uint64_t due = next_due_ms(s), now = wall_ms();

		if (running(s)) {
			pthread_mutex_unlock(&s->lock);
			walk_page(s);
			save(s, 0, &s->saved_ms);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		if (due && now >= due) {
			if (!s->st.in_pass)
				pass_begin(s, 0, "scheduled");
			else {
				log_warn("node=%" PRIu32 ": the scrub pass paused since %"
					 PRIu64 " s is resumed by the schedule", s->bd->node_id,
					 (now - s->st.pass_start_ms) / 1000);
				s->st.paused = 0;
				s->dirty = 1;
			}
			continue;
		}
		pthread_mutex_unlock(&s->lock);
		save(s, 1, &s->saved_ms);
		pthread_mutex_lock(&s->lock);
		if (s->stop || running(s))
			continue;
		struct timespec ts;
		net_time_in(CLOCK_REALTIME, 1000, &ts);
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	save(s, 1, &s->saved_ms);
	return NULL;
}

int scrub_new(struct blockd *bd, const struct scrub_opts *o, struct scrub **out)
{
	struct scrub *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->bd = bd;
	s->opts = *o;
	s->settle_ms = bd->conf.replica_timeout_ms > 0 ? 2 * bd->conf.replica_timeout_ms
						       : SCRUB_SETTLE_MS;
	s->ncsums = OBJSTORE_MAX_OBJ_SIZE / SCRUB_BLOCK;
	s->csums = malloc(s->ncsums * sizeof(*s->csums));
	s->rechecks = malloc(SCRUB_RECHECKS * sizeof(*s->rechecks));
	s->sbuf = malloc(SCRUB_PIECE_BLOCKS * SCRUB_BLOCK);
	if (!s->csums || !s->rechecks || !s->sbuf) {
		free(s->csums);
		free(s->rechecks);
		free(s->sbuf);
		free(s);
		return -ENOMEM;
	}
	if (!s->opts.rate)
		s->opts.rate = SCRUB_RATE_DEFAULT;
	s->rate = s->opts.rate;
	s->tb_last_ms = net_now_ms();
	ret = scrub_state_load(bd->dir, &s->st);
	if (ret && ret != -ENOENT)
		log_warn("%s/scrub_state: %s; starting afresh", bd->dir, strerror(-ret));
	if (ret || !s->st.created_ms) {
		s->st.created_ms = wall_ms();
		s->dirty = 1;
	}
	if (s->st.in_pass)
		log_info("node=%" PRIu32 ": scrub pass of %" PRIu64 " s ago %s after "
			 "oid %016" PRIx64, bd->node_id,
			 (wall_ms() - s->st.pass_start_ms) / 1000,
			 s->st.paused ? "paused" : "resumes", s->st.cursor);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	ret = -pthread_create(&s->thread, NULL, scrub_main, s);
	if (ret) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		free(s->csums);
		free(s->rechecks);
		free(s->sbuf);
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void scrub_free(struct scrub *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s->csums);
	free(s->rechecks);
	free(s->sbuf);
	free(s);
}

void scrub_start(struct scrub *s, uint64_t rate)
{
	pthread_mutex_lock(&s->lock);
	if (!s->st.in_pass) {
		pass_begin(s, rate, "asked for");
	} else if (s->st.paused) {
		s->st.paused = 0;
		if (rate)
			s->rate = rate;
		s->dirty = 1;
		log_info("node=%" PRIu32 ": scrub pass resumed after oid %016" PRIx64,
			 s->bd->node_id, s->st.cursor);
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
}

void scrub_stop(struct scrub *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->st.in_pass && !s->st.paused) {
		s->st.paused = 1;
		s->dirty = 1;
		log_info("node=%" PRIu32 ": scrub pass paused after oid %016" PRIx64
			 " (%" PRIu64 " objects verified)", s->bd->node_id, s->st.cursor,
			 s->st.objects);
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
}

void scrub_note_strip(struct scrub *s, int good)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->st.total_strips_found++;
	if (good)
		s->st.total_strips_repaired++;
	else
		s->st.total_strips_unrepaired++;
	s->dirty = 1;
	pthread_mutex_unlock(&s->lock);
}

void scrub_info(struct scrub *s, struct sdfs_scrub_info *out)
{
	const struct scrub_state *st = &s->st;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->lock);
	out->node_id = s->bd->node_id;
	out->state = !st->in_pass ? SDFS_SCRUB_IDLE : st->paused ? SDFS_SCRUB_PAUSED
								  : SDFS_SCRUB_RUNNING;
	out->cursor = st->has_cursor ? st->cursor : 0;
	out->objects = st->objects;
	out->bytes = st->bytes;
	out->found = st->found;
	out->repaired = st->repaired;
	out->unrepaired = st->unrepaired;
	out->total_found = st->total_found;
	out->total_repaired = st->total_repaired;
	out->total_unrepaired = st->total_unrepaired;
	out->passes = st->passes;
	out->pass_start_ms = st->pass_start_ms;
	out->pass_end_ms = st->pass_end_ms;
	out->next_start_ms = next_due_ms(s);
	out->rate = s->rate;
	out->interval_s = s->opts.interval_s;
	out->compared = st->compared;
	out->mismatched = st->mismatched;
	out->total_mismatched = st->total_mismatched;
	out->refreshed = st->refreshed;
	out->total_refreshed = st->total_refreshed;
	out->last_start_ms = st->last_start_ms;
	out->strips = st->strips;
	out->strip_bytes = st->strip_bytes;
	out->strips_found = st->strips_found;
	out->strips_repaired = st->strips_repaired;
	out->strips_unrepaired = st->strips_unrepaired;
	out->total_strips_found = st->total_strips_found;
	out->total_strips_repaired = st->total_strips_repaired;
	out->total_strips_unrepaired = st->total_strips_unrepaired;
	pthread_mutex_unlock(&s->lock);
	out->store_objects = objstore_count(s->bd->store);
}
