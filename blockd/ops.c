/*
 * ops.c - what blockd does for each request: the dispatch table, the
 * epoch check, the MDS fence check, and the work functions that touch
 * the objstore.
 *
 * ops_dispatch() runs on the loop thread: it checks the request against
 * the table, the node's serving lease (lease.h) and the node's epoch,
 * then queues a job on the I/O workers.
 * A job's fn runs on a worker and touches only the job and the
 * (thread-safe) objstore and fence; req_done then replies from the same
 * worker (NODE_INFO's from the loop thread, whose counters it reads).
 *
 * Client mutations of MDS-database objects are checked against the MDS
 * fence on the worker, holding it shared until the change is made
 * (fence.h): an MDS_FENCE that was answered has waited for every older
 * mutation past its check, and the ones still queued are refused.
 * Mutations of volume objects (oid_is_vol) are checked the same way
 * against their vid's fence (vfence.h, VOL_FENCE). A client's mutation
 * of a shared object goes to order.c instead, which sends it back here
 * as a REPL_* op to every replica; an OBJ_COPY to copy.c. Recovery's copies
 * between nodes do not come through here and are never fenced.
 *
 * Before any of that, a peer whose key is neither admin nor daemon must
 * show an object capability for the object (or stripe) and op
 * (common/objcap.h
 * objcap_admit; docs/security.md "Object capabilities"); its bytes are
 * stripped from the payload here, so nothing after sees them (REPL_*
 * forwards carry none: peers are daemons).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blockd/backing.h"
#include "blockd/blockd.h"
#include "blockd/copy.h"
#include "blockd/fence.h"
#include "blockd/order.h"
#include "blockd/strip_ops.h"
#include "blockd/strip_recover.h"
#include "blockd/vfence.h"
#include "common/csum.h"
#include "common/log.h"
#include "common/net.h"
#include "common/objcap.h"
#include "common/oid.h"
#include "common/proto.h"

struct req {
	struct work work;
	struct blockd *bd;
	struct conn *conn;
	struct sdfs_hdr h;
	uint8_t *payload;       /* request payload, owned */
	uint8_t *out;           /* reply payload, owned until replied */
	uint32_t out_len;
	uint32_t reply_flags;
	uint64_t epoch;         /* the request's, else the node's at dispatch */
	uint64_t fence;         /* MDS_FENCE, VOL_FENCE: the fence after it */
	int remote;             /* on backing.c's threads: may ask peers */
	int ret;                /* 0 or -errno */
};

/* How long a peer's raw request waits for older mutations in flight
 * here (recover_quiesce) before it is told to ask again. */
#define QUIESCE_MS 1000

/*
 * Client access (not SDFS_F_RAW): the local copy must be current first.
 * A peer's (SDFS_F_RAW: a listing, a stat, a fetch of recovery) must see
 * every change of an older epoch this node will apply (recover.h).
 */
static int ensure(struct req *r)
{
	if (r->h.flags & SDFS_F_RAW)
		return recover_quiesce(r->bd->recover, r->epoch, QUIESCE_MS);
	return recover_ensure(r->bd->recover, r->h.oid, r->epoch);
}

struct op_desc {
	const char *name;
	work_fn fn;
	int mutates;            /* needs a nonzero epoch */
};

static void op_read(struct work *w)
{
	struct req *r = (struct req *)w;
	size_t got = 0;

	if (r->h.length > r->bd->cfg.obj_size) {
		r->ret = -EINVAL;
		return;
	}
	r->ret = ensure(r);
	if (r->ret)
		return;
	r->out = malloc(r->h.length ? r->h.length : 1);
	if (!r->out) {
		r->ret = -ENOMEM;
		return;
	}
	/* A backed object's absent blocks through its source (backing.h);
	 * -EREMOTE: only a peer has it, req_done hands the read over. */
	r->ret = backing_read(r->bd, r->h.oid, r->epoch, r->h.offset, r->out,
			      r->h.length, &got, r->remote);
	r->out_len = (uint32_t)got;
}

/* MDS-database objects always; file data when the mutation carries a
 * token (the mds truncating or freeing it; clients send none). */
static int is_fenced(const struct req *r)
{
	unsigned kind = oid_kind(r->h.oid);

	return kind == OID_KIND_MDS || (oid_is_file(r->h.oid) && r->h.token);
}

/* -EPERM and -EROFS on the wire mean "fenced" and "frozen"; a disk
 * that says so is an I/O error, which the client may retry elsewhere. */
static int disk_err(int ret)
{
	return ret == -EPERM || ret == -EROFS ? -EIO : ret;
}

/* The fence check of the object's kind; 0 for unfenced ones. */
static int fences_begin(struct req *r)
{
	if (is_fenced(r))
		return fence_mutate_begin(r->bd->fence, r->h.token);
	if (oid_is_vol(r->h.oid))
		return vfence_mutate_begin_ex(r->bd->vfence, oid_owner(r->h.oid),
					      r->h.token,
					      r->h.result == SDFS_RES_READONLY);
	return 0;
}

static void fences_end(struct req *r)
{
	if (is_fenced(r))
		fence_mutate_end(r->bd->fence);
	else if (oid_is_vol(r->h.oid))
		vfence_mutate_end(r->bd->vfence, oid_owner(r->h.oid));
}

/* ---- space (docs/operations.md "Space") ---- */

#define SPACE_CHECK_MS 100      /* statvfs at most this often */

/* How full, as df says it: used of what used and available make (the
 * blocks kept for root count in neither), in percent, rounded up. */
static unsigned space_pct(uint64_t used, uint64_t avail)
{
	uint64_t base = used + avail;

	return base ? (unsigned)((used * 100 + base - 1) / base) : 0;
}

/* A state is left only SPACE_HYST_PCT below where it began: a disk at
 * the line does not flap (nor its log, nor the refusals). */
#define SPACE_HYST_PCT 2

static unsigned space_line(int pct, int in_state)
{
	int at = in_state ? pct - SPACE_HYST_PCT : pct;

	return at > 0 ? (unsigned)at : 0;
}

/* SDFS_SPACE_* for a filesystem with @used bytes in use of which the
 * daemon may still write @avail, the state before being @prev; clears
 * bd->nospace once space came back. */
static unsigned space_judge(struct blockd *bd, uint64_t used, uint64_t avail,
			    unsigned prev)
{
	unsigned pct = space_pct(used, avail), st = 0;
	uint64_t obj = bd->cfg.obj_size;

	if (pct >= space_line(bd->conf.nearfull_pct, prev & SDFS_SPACE_NEARFULL))
		st |= SDFS_SPACE_NEARFULL;
	if (pct >= space_line(bd->conf.full_pct, prev & SDFS_SPACE_FULL) || avail < obj)
		st |= SDFS_SPACE_FULL;
	if (atomic_load(&bd->nospace)) {
		if (avail >= atomic_load(&bd->nospace_avail) + obj)
			atomic_store(&bd->nospace, 0);
		else
			st |= SDFS_SPACE_ENOSPC | SDFS_SPACE_FULL;
	}
	if (st & SDFS_SPACE_FULL)
		st |= SDFS_SPACE_NEARFULL;
	return st;
}

/* The node's space state, judged afresh if the last is older than
 * SPACE_CHECK_MS (or @fresh); a change is logged once. */
static unsigned space_state(struct blockd *bd, int fresh)
{
	int64_t now = net_now_ms();
	uint64_t used, total, avail;
	unsigned st, old;

	if (!fresh && now - atomic_load(&bd->space_ms) < SPACE_CHECK_MS)
		return atomic_load(&bd->space);
	if (objstore_space(bd->store, &used, &total) || objstore_avail(bd->store, &avail))
		return atomic_load(&bd->space);
	st = space_judge(bd, used, avail, atomic_load(&bd->space));
	atomic_store(&bd->space_ms, now);
	old = atomic_exchange(&bd->space, st);
	if (old == st)
		return st;
	if ((old ^ st) & SDFS_SPACE_FULL)
		member_space_changed(bd);       /* the map says so (issue 14) */
	unsigned pct = space_pct(used, avail);
	if (st & SDFS_SPACE_FULL)
		log_err("node=%" PRIu32 ": disk full (%u%% used, %" PRIu64 " bytes "
			"available%s): writes of data are refused with ENOSPC until "
			"space is freed", bd->node_id, pct, avail,
			st & SDFS_SPACE_ENOSPC ? ", a write hit ENOSPC" : "");
	else if (st & SDFS_SPACE_NEARFULL)
		log_warn("node=%" PRIu32 ": disk near full (%u%% used, %" PRIu64
			 " bytes available)", bd->node_id, pct, avail);
	else
		log_info("node=%" PRIu32 ": disk space ok again (%u%% used)",
			 bd->node_id, pct);
	return st;
}

unsigned ops_space(struct blockd *bd)
{
	return space_state(bd, 0);
}

/* A write the disk refused for lack of space: the node is full until an
 * object's worth of space comes back. */
static void space_note(struct blockd *bd, int ret)
{
	uint64_t avail;

	if ((ret != -ENOSPC && ret != -EDQUOT) || objstore_avail(bd->store, &avail))
		return;
	atomic_store(&bd->nospace_avail, avail);
	atomic_store(&bd->nospace, 1);
	space_state(bd, 1);
}

/*
 * A full node takes no more file, raw or volume data (-ENOSPC, before
 * anything is written), so what space is left stays for the mds's
 * database, whose commits are what frees space (an unlink), and for
 * removals, which never need any. The mds's own mutations of file data
 * (truncate, carrying its token) pass too.
 */
static int space_refuses(struct req *r)
{
	if (oid_kind(r->h.oid) == OID_KIND_MDS || is_fenced(r))
		return 0;
	return !!(space_state(r->bd, 0) & SDFS_SPACE_FULL);
}

/*
 * Test hook: SDFS_BLOCKD_FAULT=KIND:OID:PATH (OID in hex, or * for any)
 * makes every client request of that kind on OID wait while the file
 * PATH exists (at most 30 s). KIND stall_mutation: after its epoch and
 * fence checks and before it touches the store, the window in which the
 * map may move on (tests/cluster/recovery_test.c); stall_flush: a flush
 * before it syncs (tests/vol/vol_flush_test.c). Read once.
 */
#define FAULT_STALL_MAX_MS 30000

enum fault_kind { FAULT_NONE, FAULT_MUTATION, FAULT_FLUSH };

static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static enum fault_kind fault_kind;
static int fault_any_oid;
static uint64_t fault_oid;
static char fault_path[256];

static void fault_parse(void)
{
	const char *f = getenv("SDFS_BLOCKD_FAULT");
	char kind[32], oid[32];

	if (!f || sscanf(f, "%31[^:]:%31[^:]:%255s", kind, oid, fault_path) != 3)
		return;
	if (!strcmp(kind, "stall_mutation"))
		fault_kind = FAULT_MUTATION;
	else if (!strcmp(kind, "stall_flush"))
		fault_kind = FAULT_FLUSH;
	fault_any_oid = !strcmp(oid, "*");
	if (!fault_any_oid && sscanf(oid, "%" SCNx64, &fault_oid) != 1)
		fault_kind = FAULT_NONE;
}

static void fault_stall(enum fault_kind kind, uint64_t oid)
{
	int64_t t0;

	pthread_once(&fault_once, fault_parse);
	if (fault_kind != kind || (!fault_any_oid && oid != fault_oid))
		return;
	if (access(fault_path, F_OK))
		return;
	log_warn("fault injection: oid=%016" PRIx64 ": %s stalled while %s exists", oid,
		 kind == FAULT_FLUSH ? "flush" : "mutation", fault_path);
	t0 = net_now_ms();
	while (access(fault_path, F_OK) == 0 && net_now_ms() - t0 < FAULT_STALL_MAX_MS)
		usleep(10 * 1000);
	log_info("fault injection: oid=%016" PRIx64 ": going on after %" PRId64 " ms",
		 oid, net_now_ms() - t0);
}

/*
 * Begin/end a mutation: under the object's recovery lock (recover.h),
 * then, for MDS and volume objects, past their fence, holding it shared
 * until the change is made. The fence is taken last and held only
 * around local disk work: a raise never waits for a settle that talks
 * to peers.
 */
static int mutate_begin(struct req *r, int settle)
{
	int ret;

	ret = recover_mutate_begin(r->bd->recover, r->h.oid, r->epoch,
				   settle && !(r->h.flags & SDFS_F_RAW));
	if (ret)
		return disk_err(ret);
	ret = fences_begin(r);
	if (ret)
		recover_mutate_end(r->bd->recover, r->h.oid, r->epoch, 0);
	else
		fault_stall(FAULT_MUTATION, r->h.oid);
	return ret;
}

/* After the change: durable first if the client asked (SDFS_F_SYNC). */
static void mutate_end(struct req *r)
{
	space_note(r->bd, r->ret);
	r->ret = disk_err(r->ret);
	/* A removal of a missing object may have left a tombstone. */
	if (r->h.flags & SDFS_F_SYNC && (r->ret == 0 || r->ret == -ENOENT)) {
		int ret = objstore_sync(r->bd->store, r->h.oid);

		if (ret && ret != -ENOENT)
			r->ret = disk_err(ret);
	}
	fences_end(r);
	recover_mutate_end(r->bd->recover, r->h.oid, r->epoch,
			   r->ret == 0 || r->ret == -ENOENT);
}

/*
 * A write that covers a backed object's absent block only partly
 * (-ENODATA) takes the rest of that block from the source (backing.h),
 * read outside the object's locks, then goes again; -EREMOTE: only a
 * peer has the source, req_done hands the write over.
 */
static void op_write(struct work *w)
{
	struct req *r = (struct req *)w;
	struct objstore_src src = { 0 };
	uint8_t *blk = NULL;

	for (int pass = 0;; pass++) {
		int ret;

		if (space_refuses(r)) {
			r->ret = -ENOSPC;
			break;
		}
		r->ret = mutate_begin(r, 1);
		if (r->ret)
			break;
		r->ret = objstore_write_src(r->bd->store, r->h.oid, r->h.offset, r->payload,
					    r->h.payload_len, r->h.epoch,
					    r->h.flags & SDFS_F_CREATE ? OBJSTORE_CREATE : 0,
					    blk ? &src : NULL);
		mutate_end(r);
		if (r->ret != -ENODATA || pass > 1)
			break;
		if (!blk && !(blk = malloc(2 * OBJSTORE_BLOCK))) {
			r->ret = -ENOMEM;
			break;
		}
		ret = backing_src_blocks(r->bd, r->h.oid, r->epoch, r->h.offset,
					 r->h.payload_len, blk, blk + OBJSTORE_BLOCK, r->remote);
		if (ret < 0) {
			r->ret = ret;
			break;
		}
		src.head = ret ? NULL : blk;
		src.tail = ret ? NULL : blk + OBJSTORE_BLOCK;
	}
	free(blk);
}

static void op_create(struct work *w)
{
	struct req *r = (struct req *)w;

	if (space_refuses(r)) {
		r->ret = -ENOSPC;
		return;
	}
	r->ret = mutate_begin(r, 1);
	if (r->ret)
		return;
	r->ret = objstore_create(r->bd->store, r->h.oid, r->h.epoch);
	mutate_end(r);
}

static void op_remove(struct work *w)
{
	struct req *r = (struct req *)w;

	r->ret = mutate_begin(r, 1);
	if (r->ret)
		return;
	/* A tombstone, not nothing: a node that missed this removal must not
	 * bring its old copy back (recover.h). */
	r->ret = objstore_remove_at(r->bd->store, r->h.oid, r->h.epoch);
	mutate_end(r);
	if (r->ret == 0)
		recover_note_tombstone(r->bd->recover);
}

static void op_replace(struct work *w)
{
	struct req *r = (struct req *)w;

	if (space_refuses(r)) {
		r->ret = -ENOSPC;
		return;
	}
	/* The whole object: what was here before does not matter, but a
	 * settle in progress must not overwrite it afterwards. */
	r->ret = mutate_begin(r, 0);
	if (r->ret)
		return;
	r->ret = objstore_put(r->bd->store, r->h.oid, r->payload,
			      r->h.payload_len, r->h.epoch);
	mutate_end(r);
}

static void op_mds_fence(struct work *w)
{
	struct req *r = (struct req *)w;

	/* A fence no token can pass (tokens are 32 bits) would lock the
	 * MDS out for good: garbage, not an epoch. A payload: garbage. */
	if (r->h.offset > UINT32_MAX || r->h.payload_len) {
		r->ret = -EINVAL;
		r->fence = fence_get(r->bd->fence);
		return;
	}
	r->ret = fence_raise(r->bd->fence, r->h.offset, "MDS_FENCE", &r->fence);
}

static void op_vol_fence(struct work *w)
{
	struct req *r = (struct req *)w;
	uint64_t vid = r->h.oid;

	/* Token 0 raises nothing (every token passes it): a mistake, as is a
	 * token no 32-bit token could reach, a vid out of range or a payload. */
	if (vid == 0 || vid > SDFS_VID_MAX || r->h.offset == 0 ||
	    r->h.offset > UINT32_MAX || r->h.payload_len) {
		r->ret = -EINVAL;
		r->fence = vid && vid <= SDFS_VID_MAX ? vfence_get(r->bd->vfence, vid) : 0;
		return;
	}
	r->ret = vfence_raise(r->bd->vfence, vid, (uint32_t)r->h.offset);
	r->fence = vfence_get(r->bd->vfence, vid);
	if (r->ret == 0)
		log_debug("vid=%" PRIu64 ": volume fence %" PRIu64 " (VOL_FENCE %" PRIu64
			  ")", vid, r->fence, r->h.offset);
}

static void op_flush(struct work *w)
{
	struct req *r = (struct req *)w;

	fault_stall(FAULT_FLUSH, r->h.oid);
	r->ret = r->h.flags & SDFS_F_ALL ? objstore_sync_all(r->bd->store)
					 : objstore_sync(r->bd->store, r->h.oid);
}

static void op_list(struct work *w)
{
	struct req *r = (struct req *)w;
	int epochs = !!(r->h.flags & SDFS_F_EPOCHS);
	size_t max = r->h.length, n = 0, esz = epochs ? SDFS_LIST_ENT_SIZE : 8;
	struct objstore_ent *ents;

	if (max == 0 || max > SDFS_MAX_LIST)
		max = SDFS_MAX_LIST;
	if (r->h.flags & SDFS_F_RAW) {
		r->ret = ensure(r);     /* a recovery pass's listing */
		if (r->ret)
			return;
	}
	ents = malloc((max + 1) * sizeof(*ents));
	r->out = malloc(max * esz);
	if (!ents || !r->out) {
		free(ents);
		r->ret = -ENOMEM;
		return;
	}
	/* One more than asked, to know whether the list goes on. */
	if (epochs)
		r->ret = objstore_list_ent(r->bd->store, r->h.offset,
					   !!(r->h.flags & SDFS_F_FIRST), ents, max + 1, &n);
	else {
		uint64_t *oids = (uint64_t *)ents;   /* big enough */

		r->ret = objstore_list(r->bd->store, r->h.offset,
				       !!(r->h.flags & SDFS_F_FIRST), oids, max + 1, &n);
		if (r->ret == 0 && n > max) {
			n = max;
			r->reply_flags |= SDFS_F_MORE;
		}
		if (r->ret == 0)
			proto_oids_encode(oids, n, r->out);
	}
	if (r->ret == 0 && epochs) {
		if (n > max) {
			n = max;
			r->reply_flags |= SDFS_F_MORE;
		}
		for (size_t i = 0; i < n; i++) {
			struct sdfs_list_ent e = { ents[i].oid, ents[i].version,
				ents[i].deleted ? SDFS_SIZE_TOMBSTONE : ents[i].size };

			proto_list_ent_encode(&e, 1, r->out + i * SDFS_LIST_ENT_SIZE);
		}
	}
	if (r->ret == 0)
		r->out_len = (uint32_t)(n * esz);
	free(ents);
}

/* A backed object's csum is its content's, absent blocks read through
 * the source (what it will be once filled): one full read. */
static int backed_csum(struct req *r, struct objstore_stat *st)
{
	uint64_t nb = (st->size + OBJSTORE_BLOCK - 1) / OBJSTORE_BLOCK;
	uint8_t *data = malloc(nb * OBJSTORE_BLOCK + 1);
	uint64_t *cs = malloc((nb + 1) * sizeof(*cs));
	size_t got = 0;
	int ret = -ENOMEM;

	if (data && cs)
		ret = backing_read(r->bd, r->h.oid, r->epoch, 0, data, st->size, &got,
				   r->remote);
	if (ret == 0) {
		memset(data + got, 0, nb * OBJSTORE_BLOCK - got);
		for (uint64_t i = 0; i < nb; i++)
			cs[i] = htole64(csum64(data + i * OBJSTORE_BLOCK, OBJSTORE_BLOCK));
		st->csum = csum64(cs, nb * sizeof(*cs));
	}
	free(data);
	free(cs);
	return ret;
}

static void op_stat(struct work *w)
{
	struct req *r = (struct req *)w;
	struct objstore_stat st = { 0 };
	struct sdfs_obj_stat ws = { 0 };
	char path[SDFS_MAX_PATH];

	if (r->h.flags & SDFS_F_RAW) {
		/* Peers want the tag, fast: the header only. */
		int deleted = 0;

		r->ret = ensure(r);
		if (r->ret)
			return;
		r->ret = objstore_head(r->bd->store, r->h.oid, &st.size, &st.version,
				       &deleted);
		if (deleted)
			st.size = SDFS_SIZE_TOMBSTONE;
		/* 2.3: a scrub comparing copies wants the csum, from the
		 * checksum table only (no data read: this copy's own scrub
		 * checks its data); of the version the header said, else
		 * unknown (0) */
		else if (r->ret == 0 && r->h.length == SDFS_STAT_CSUM) {
			struct objstore_stat full;

			/* a backed copy's absent blocks are not in it: its
			 * table csum is 0 (objstore_stat_table) */
			if (objstore_stat_table(r->bd->store, r->h.oid, &full) == 0 &&
			    full.version == st.version && !full.backing)
				st.csum = full.csum;
		}
	} else {
		r->ret = ensure(r);
		if (r->ret == 0)
			r->ret = objstore_stat(r->bd->store, r->h.oid, &st);
		if (r->ret == 0 && st.backing)
			r->ret = backed_csum(r, &st);
	}
	if (r->ret)
		return;
	if (objstore_path(r->bd->store, r->h.oid, path, sizeof(path)) != 0)
		path[0] = '\0';
	ws.size = st.size;
	/* Peers compare whole versions; clients see the epoch. */
	ws.epoch = r->h.flags & SDFS_F_RAW ? st.version : st.version >> 32;
	ws.csum = st.csum;
	ws.path_len = (uint32_t)strlen(path);
	r->out = malloc(sizeof(ws) + ws.path_len + 1);
	if (!r->out) {
		r->ret = -ENOMEM;
		return;
	}
	proto_obj_stat_encode(&ws, r->out);
	memcpy(r->out + sizeof(ws), path, ws.path_len);
	r->out_len = sizeof(ws) + ws.path_len;
}

static void op_node_info(struct work *w)
{
	struct req *r = (struct req *)w;
	struct sdfs_node_info ni = { 0 };

	/* Kept by the store as names come and go: `cluster status` used to
	 * walk every directory of every node here. */
	ni.objects = objstore_count(r->bd->store);
	objstore_space(r->bd->store, &ni.used_bytes, &ni.total_bytes);
	objstore_avail(r->bd->store, &ni.avail_bytes);
	ni.space = space_state(r->bd, 1);
	/* node_id, epoch and counters are filled on the loop thread */
	r->out = malloc(sizeof(ni));
	if (!r->out) {
		r->ret = -ENOMEM;
		return;
	}
	memcpy(r->out, &ni, sizeof(ni));
	/* exactly what the asker's version decodes: 128 bytes before 1.7,
	 * 136 before 2.4 (ec counters) */
	r->out_len = r->h.major > 2 || (r->h.major == 2 && r->h.minor >= 4) ? sizeof(ni) :
		     r->h.major > 1 || r->h.minor >= 7 ? SDFS_NODE_INFO_V17_SIZE :
		     SDFS_NODE_INFO_V11_SIZE;
}

/* SCRUB (2.3): start or pause the scrub (admin and daemon keys only:
 * objcap_admit), and say where it stands. */
static void op_scrub(struct work *w)
{
	struct req *r = (struct req *)w;
	struct sdfs_scrub_info si;

	switch (r->h.offset) {
	case SDFS_SCRUB_STATUS:
		break;
	case SDFS_SCRUB_START:
		scrub_start(r->bd->scrub, (uint64_t)r->h.length * 1024);
		break;
	case SDFS_SCRUB_STOP:
		scrub_stop(r->bd->scrub);
		break;
	default:
		r->ret = -EINVAL;
		return;
	}
	scrub_info(r->bd->scrub, &si);
	r->out = malloc(SDFS_SCRUB_INFO_SIZE);
	if (!r->out) {
		r->ret = -ENOMEM;
		return;
	}
	proto_scrub_info_encode(&si, r->out);
	/* a client that does not ask for the strips' counts takes 184 */
	r->out_len = r->h.oid & SDFS_SCRUB_WANT_STRIPS ? SDFS_SCRUB_INFO_SIZE
						       : SDFS_SCRUB_INFO_V24_SIZE;
}

/* OBJ_COPY runs on copy.c's workers (copy_dispatch), OBJ_FILL on
 * backing.c's (backing_fill_dispatch), the strip ops in strip_ops.c;
 * applied as they are (ops_apply) they make no sense. */
static void op_copy(struct work *w)
{
	((struct req *)w)->ret = -EINVAL;
}

static const struct op_desc ops[SDFS_OP_MAX] = {
	[SDFS_OP_OBJ_READ]    = { "OBJ_READ",    op_read,    0 },
	[SDFS_OP_OBJ_WRITE]   = { "OBJ_WRITE",   op_write,   1 },
	[SDFS_OP_OBJ_CREATE]  = { "OBJ_CREATE",  op_create,  1 },
	[SDFS_OP_OBJ_REMOVE]  = { "OBJ_REMOVE",  op_remove,  1 },
	[SDFS_OP_OBJ_LIST]    = { "OBJ_LIST",    op_list,    0 },
	[SDFS_OP_OBJ_FLUSH]   = { "OBJ_FLUSH",   op_flush,   0 },
	[SDFS_OP_OBJ_STAT]    = { "OBJ_STAT",    op_stat,    0 },
	[SDFS_OP_OBJ_REPLACE] = { "OBJ_REPLACE", op_replace, 1 },
	[SDFS_OP_OBJ_COPY]    = { "OBJ_COPY",    op_copy,    1 },   /* copy.h */
	[SDFS_OP_NODE_INFO]   = { "NODE_INFO",   op_node_info, 0 },
	[SDFS_OP_MDS_FENCE]   = { "MDS_FENCE",   op_mds_fence, 0 },
	[SDFS_OP_VOL_FENCE]   = { "VOL_FENCE",   op_vol_fence, 0 },
	[SDFS_OP_SCRUB]       = { "SCRUB",       op_scrub,   0 },
	/* 2.4 (ec): strip_ops.h */
	[SDFS_OP_STRIP_PUT]    = { "STRIP_PUT",    op_copy, 1 },
	[SDFS_OP_STRIP_GET]    = { "STRIP_GET",    op_copy, 0 },
	[SDFS_OP_STRIP_STAT]   = { "STRIP_STAT",   op_copy, 0 },
	[SDFS_OP_STRIP_COMMIT] = { "STRIP_COMMIT", op_copy, 1 },
	[SDFS_OP_STRIP_REPAIR] = { "STRIP_REPAIR", op_copy, 1 },  /* 2.6 */
	[SDFS_OP_OBJ_FILL]    = { "OBJ_FILL",    op_copy,    0 },   /* backing.h */
	/* applied as the object's primary ordered them (order.h) */
	[SDFS_OP_REPL_WRITE]   = { "REPL_WRITE",   op_write,   1 },
	[SDFS_OP_REPL_CREATE]  = { "REPL_CREATE",  op_create,  1 },
	[SDFS_OP_REPL_REMOVE]  = { "REPL_REMOVE",  op_remove,  1 },
	[SDFS_OP_REPL_REPLACE] = { "REPL_REPLACE", op_replace, 1 },
};

static void reply_now(struct blockd *bd, struct conn *c, const struct sdfs_hdr *h,
		      enum sdfs_res res)
{
	struct sdfs_hdr reply;

	(void)bd;
	proto_reply_init(&reply, h, res);
	client_conn_reply(c, &reply, NULL);
}

static void req_done(struct work *w)
{
	struct req *r = (struct req *)w;
	struct sdfs_hdr reply;

	if (r->ret == -EREMOTE && !r->remote) {
		/* Needs a peer: on a thread that may wait on peers (backing.h). */
		r->remote = 1;
		r->ret = 0;
		free(r->out);
		r->out = NULL;
		r->out_len = 0;
		backing_defer(r->bd->backing, &r->work);
		return;
	}
	int vol = oid_is_vol(r->h.oid) && r->h.opcode != SDFS_OP_VOL_FENCE;

	if (r->ret == -EPERM && vol)
		log_info("oid=%016" PRIx64 " op=%s token=%" PRIu32 ": refused, below "
			 "the fence %" PRIu32 " of vid %" PRIu64, r->h.oid,
			 proto_op_name(r->h.opcode), r->h.token,
			 vfence_get(r->bd->vfence, oid_owner(r->h.oid)), oid_owner(r->h.oid));
	else if (r->ret == -EPERM)
		log_info("oid=%016" PRIx64 " op=%s token=%" PRIu32 ": refused, below "
			 "the mds fence %" PRIu64, r->h.oid, proto_op_name(r->h.opcode),
			 r->h.token, fence_get(r->bd->fence));
	else if (r->ret == -EROFS)
		log_info("oid=%016" PRIx64 " op=%s token=%" PRIu32 ": refused, vid %"
			 PRIu64 " is frozen", r->h.oid, proto_op_name(r->h.opcode),
			 r->h.token, oid_owner(r->h.oid));
	else if (r->ret == -ESHUTDOWN)
		log_debug("oid=%016" PRIx64 " op=%s: %s fence not yet in step with "
			  "ZooKeeper", r->h.oid, proto_op_name(r->h.opcode),
			  vol ? "volume" : "mds");
	else if (r->ret == -EBADMSG)
		log_err("node=%" PRIu32 " oid=%016" PRIx64 ": checksum mismatch in "
			"local replica (%s)", r->bd->node_id, r->h.oid,
			proto_op_name(r->h.opcode));
	else if (r->ret && r->ret != -ENOENT && r->ret != -EEXIST &&
		 r->ret != -EAGAIN && r->ret != -ENODATA)
		log_warn("oid=%016" PRIx64 " op=%s: %s", r->h.oid,
			 proto_op_name(r->h.opcode), strerror(-r->ret));
	if (r->ret == 0 && r->h.opcode == SDFS_OP_NODE_INFO) {
		struct sdfs_node_info ni;

		memcpy(&ni, r->out, sizeof(ni));
		ni.node_id = r->bd->node_id;
		ni.epoch = (uint32_t)member_epoch(r->bd);
		ni.requests = r->bd->requests;
		ni.errors = atomic_load(&r->bd->errors);
		ni.max_obj_size = r->bd->cfg.obj_size;
		recover_fill_info(r->bd->recover, &ni);
		strip_recover_fill_info(r->bd->strip_rec, &ni);
		proto_node_info_encode(&ni, r->out);
	}
	proto_reply_init(&reply, &r->h, proto_res_from_errno(r->ret));
	reply.flags |= r->reply_flags;
	if (r->h.flags & SDFS_F_RAW) {
		reply.length = (uint32_t)recover_clean_epoch(r->bd->recover);
		reply.offset = recover_full_epoch(r->bd->recover);
	}
	/* Whatever the flags: this op's answer is in offset. */
	if (r->h.opcode == SDFS_OP_MDS_FENCE || r->h.opcode == SDFS_OP_VOL_FENCE)
		reply.offset = r->fence;
	if (r->ret == 0 && r->out) {
		reply.payload_len = r->out_len;
		client_conn_reply(r->conn, &reply, r->out);
	} else {
		free(r->out);
		client_conn_reply(r->conn, &reply, NULL);
	}
	client_conn_put(r->conn);
	free(r->payload);
	free(r);
}

int ops_apply(struct blockd *bd, const struct sdfs_hdr *h, const uint8_t *payload)
{
	const struct op_desc *op = &ops[h->opcode];
	struct req r = { .bd = bd, .h = *h, .payload = (uint8_t *)payload,
			 .epoch = h->epoch };

	if (!op->fn || !op->mutates || !h->epoch)
		return -EINVAL;
	/* as ops_dispatch: a node cut off from ZooKeeper changes nothing */
	if (__atomic_load_n(&bd->stopping, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&bd->zk_connected, __ATOMIC_RELAXED))
		return -ESHUTDOWN;
	if (member_admit_any(bd, h) != SDFS_RES_OK)
		return -ESHUTDOWN;      /* lease.h */
	op->fn(&r.work);
	free(r.out);
	return r.ret;
}

int ops_put_backed(struct blockd *bd, const struct sdfs_hdr *h, uint64_t backing,
		   uint64_t size, const uint8_t *piece, uint32_t len,
		   const struct objstore_src *src)
{
	struct req r = { .bd = bd, .h = *h, .epoch = h->epoch };

	if (!h->epoch)
		return -EINVAL;
	if (__atomic_load_n(&bd->stopping, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&bd->zk_connected, __ATOMIC_RELAXED))
		return -ESHUTDOWN;
	if (member_admit_any(bd, h) != SDFS_RES_OK)
		return -ESHUTDOWN;      /* lease.h */
	if (space_refuses(&r))
		return -ENOSPC;
	/* The whole object, as op_replace: what was here does not matter. */
	r.ret = mutate_begin(&r, 0);
	if (r.ret)
		return r.ret;
	r.ret = objstore_put_backed(bd->store, h->oid, backing, size, h->offset, piece,
				    len, src, h->epoch);
	mutate_end(&r);
	return r.ret;
}

void ops_set_secret(struct blockd *bd, const uint8_t secret[AUTH_KEY_BYTES])
{
	objcap_key(secret, bd->objcap_key);
	bd->objcap_on = 1;
}

/*
 * The capability check (objcap_admit): SDFS_RES_OK with the cap's
 * bytes stripped from *@h and @payload, or SDFS_RES_CAP, logged with
 * who and why (at most once a second: a guessing client must not flood
 * the log).
 */
static enum sdfs_res cap_admit(struct blockd *bd, struct conn *c, struct sdfs_hdr *h,
			       uint8_t *payload)
{
	const struct auth_ident *id = client_conn_ident(c);
	const char *why;
	uint32_t skip;

	if (objcap_admit(id, bd->objcap_on ? bd->objcap_key : NULL, h, payload,
			 objcap_now_ms(), &skip, &why)) {
		log_every(1000, LOG_WARNING, "key=%s op=%s oid=%016" PRIx64 ": refused: %s",
			  id ? id->name : "-", proto_op_name(h->opcode), h->oid, why);
		return SDFS_RES_CAP;
	}
	if (skip) {
		memmove(payload, payload + skip, h->payload_len - skip);
		h->payload_len -= skip;
	}
	h->flags &= ~SDFS_F_CAP;
	return SDFS_RES_OK;
}

void ops_dispatch(struct blockd *bd, struct conn *c, const struct sdfs_hdr *hin,
		  uint8_t *payload)
{
	const struct op_desc *op = &ops[hin->opcode];
	uint64_t epoch = member_epoch(bd);
	enum sdfs_res res = SDFS_RES_OK;
	struct sdfs_hdr hc = *hin, *h = &hc;

	log_debug("op=%s oid=%016" PRIx64 " off=%" PRIu64 " len=%u epoch=%u",
		  proto_op_name(h->opcode), h->oid, h->offset,
		  h->length ? h->length : h->payload_len, h->epoch);
	if (!op->fn)
		res = SDFS_RES_UNKNOWN_OP;
	else if ((res = cap_admit(bd, c, h, payload)) != SDFS_RES_OK)
		;       /* no capability for it */
	else if (bd->stopping ||
		 (!bd->zk_connected && h->opcode != SDFS_OP_NODE_INFO))
		res = SDFS_RES_SHUTDOWN;
	else if (h->opcode != SDFS_OP_NODE_INFO &&
		 (res = member_admit(bd, h)) != SDFS_RES_OK)
		;       /* the lease ran out, we are marked, or a newer map */
	else if (op->mutates && h->epoch == 0)
		res = SDFS_RES_INVALID;
	else if (h->epoch && h->epoch < epoch)
		res = SDFS_RES_OLD_EPOCH;
	else if (h->epoch > epoch) {
		/* The client saw a newer map than we have: catch up, let it retry. */
		res = SDFS_RES_NEW_EPOCH;
		member_on_event(COORD_EV_MAP, bd);
	}
	if (res != SDFS_RES_OK) {
		free(payload);
		reply_now(bd, c, h, res);
		return;
	}
	if (order_wanted(h)) {
		order_dispatch(bd, c, h, payload);
		return;
	}
	if (h->opcode == SDFS_OP_OBJ_COPY) {
		copy_dispatch(bd, c, h, payload);
		return;
	}
	if (strip_is_op(h->opcode)) {
		strip_dispatch(bd, c, h, payload);
		return;
	}
	if (h->opcode == SDFS_OP_OBJ_FILL) {
		free(payload);
		backing_fill_dispatch(bd, c, h);
		return;
	}

	struct req *r = calloc(1, sizeof(*r));
	if (!r) {
		free(payload);
		reply_now(bd, c, h, SDFS_RES_NO_MEM);
		return;
	}
	r->bd = bd;
	r->conn = c;
	r->h = *h;
	r->epoch = h->epoch ? h->epoch : epoch;
	r->payload = payload;
	r->work.fn = op->fn;
	/* NODE_INFO reads the loop's counters: answered from the loop. The
	 * rest answer from the worker (client_conn_reply is thread-safe). */
	if (h->opcode == SDFS_OP_NODE_INFO)
		r->work.done = req_done;
	else
		r->work.finish = req_done;
	client_conn_get(c);
	workq_push(bd->io_q, &r->work);
}
