/*
 * strip_repair.c - STRIP_REPAIR's rebuild (strip_repair.h) on the
 * backing threads.
 */
#include "blockd/strip_repair.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blockd/backing.h"
#include "blockd/blockd.h"
#include "blockd/scrub.h"
#include "blockd/strip_recover.h"
#include "blockd/stripstore.h"
#include "common/log.h"

#define LIST_MAX 256u           /* strip versions looked through per oid */
#define REPAIR_TRIES 6          /* while between epochs, 500 ms apart */

#define BUSY_MAX 64             /* read-repairs running at once */

/* The strips being read-repaired now: a second request for one of them
 * (another read of it meanwhile) is dropped, so each is rebuilt and
 * counted once. */
static pthread_mutex_t busy_mu = PTHREAD_MUTEX_INITIALIZER;
static struct busy {
	uint64_t oid, version;
	unsigned s;
} busy[BUSY_MAX];
static unsigned nbusy;

/* Claim (@on) or let go of strip @st of @oid: 1 if claimed now. */
static int claim(uint64_t oid, const struct sdfs_strip *st, int on)
{
	int r = 0;

	pthread_mutex_lock(&busy_mu);
	for (unsigned i = 0; i < nbusy; i++)
		if (busy[i].oid == oid && busy[i].s == st->s && busy[i].version == st->version) {
			if (!on)
				busy[i] = busy[--nbusy];
			pthread_mutex_unlock(&busy_mu);
			return 0;       /* running already; or let go */
		}
	if (on && nbusy < BUSY_MAX) {
		busy[nbusy++] = (struct busy){ .oid = oid, .version = st->version, .s = st->s };
		r = 1;
	}
	pthread_mutex_unlock(&busy_mu);
	return r;
}

struct repairreq {
	struct work work;
	struct blockd *bd;
	uint64_t oid;
	struct sdfs_strip st;   /* s, version, tag as asked */
};

/* The header of the file asked for into *@out: 0, -ENOENT, -errno. */
static int find(struct blockd *bd, uint64_t oid, const struct sdfs_strip *want,
		struct sdfs_strip *out)
{
	struct sdfs_strip *l = calloc(LIST_MAX, sizeof(*l));
	size_t n = 0;
	int r;

	if (!l)
		return -ENOMEM;
	r = stripstore_list(bd->strips, oid, l, LIST_MAX, &n);
	if (!r)
		r = -ENOENT;
	for (size_t i = 0; i < n && r == -ENOENT; i++)
		if (l[i].s == want->s && l[i].version == want->version &&
		    l[i].tag == want->tag && !(l[i].flags & SDFS_STRIP_TOMB)) {
			*out = l[i];
			r = 0;
		}
	free(l);
	return r;
}

/* Does the file of @st read whole with good checksums? 0: yes;
 * -EBADMSG: no; -ENOENT: gone; -errno. */
static int verify(struct blockd *bd, uint64_t oid, const struct sdfs_strip *st)
{
	uint8_t *buf = malloc(st->strip_len ? st->strip_len : 1);
	size_t got = 0;
	int r;

	if (!buf)
		return -ENOMEM;
	r = stripstore_read(bd->strips, oid, st->s, st->version, st->tag, 0, buf,
			    st->strip_len, &got);
	if (!r && got != st->strip_len)
		r = -EBADMSG;
	free(buf);
	return r;
}

static void repair_fn(struct work *w)
{
	struct repairreq *q = (struct repairreq *)w;
	struct blockd *bd = q->bd;
	struct sdfs_strip st;
	uint32_t from = 0;
	int r;

	if (!claim(q->oid, &q->st, 1))
		return;         /* being repaired now (or too many at once) */
	r = find(bd, q->oid, &q->st, &st);
	if (!r)
		r = verify(bd, q->oid, &st);
	if (r != -EBADMSG) {
		claim(q->oid, &q->st, 0);
		return;         /* good (an earlier read's repair), or gone */
	}
	r = -EAGAIN;
	for (int i = 0; i < REPAIR_TRIES && r == -EAGAIN; i++) {
		if (i)
			usleep(500 * 1000);
		r = strip_recover_scrub(bd->strip_rec, q->oid, &st, &from);
	}
	claim(q->oid, &q->st, 0);
	if (r == -ENOENT)
		return;         /* a newer version's commit dropped it meanwhile */
	scrub_note_strip(bd->scrub, r == 0);
	if (r == 0)
		log_warn("node=%" PRIu32 " oid=%016" PRIx64 " strip=%u version=%016" PRIx64
			 ": read-repair: corrupt strip %s", bd->node_id, q->oid, st.s,
			 st.version, from ? "replaced by another node's good copy" :
			 "rebuilt from its stripe");
	else
		log_err("node=%" PRIu32 " oid=%016" PRIx64 " strip=%u version=%016" PRIx64
			": read-repair: corrupt strip NOT rebuilt: %s; left for the scrub",
			bd->node_id, q->oid, st.s, st.version, strerror(-r));
}

static void repair_finish(struct work *w)
{
	free(w);
}

int strip_repair_queue(struct blockd *bd, uint64_t oid, const struct sdfs_strip *st)
{
	struct repairreq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->bd = bd;
	q->oid = oid;
	q->st = *st;
	q->work.fn = repair_fn;
	q->work.finish = repair_finish;
	backing_defer(bd->backing, &q->work);
	return 0;
}
