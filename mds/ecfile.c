/*
 * ecfile.c - erasure-coded regular files (docs/ec.md "EC files"): the
 * mds seals a cold file of an ec=K+M policy into stripes, and unseals
 * it before anyone writes it again.
 *
 * A file's form is one bit of its inode (POLICY_SEALED in the copies
 * field, common/policy.h): clear, chunk i is the replicated object
 * oid_file(ino, i, m + 1); set, it is the EC object oid_fstripe(ino, i).
 * The bit flips only in one record write, under the inode's lock, after
 * the new form is whole, so the durable inode always names a whole form;
 * the other one is garbage that the next unseal, seal or purge removes.
 * A second bit, POLICY_STRIPES, is set before a seal puts its first
 * stripe and cleared only once the stripes are removed, so stripes that
 * no inode names as the form exist only under it, and a file without
 * either bit costs nothing to unseal or purge.
 *
 * Sealing (the ecfile thread, active mds only, when ec_seal_after_s is
 * set): a file no client holds open (opens_held) whose mtime and ctime
 * are older than ec_seal_after_s: each chunk read and put as a stripe
 * (at most ECFILE_RATE bytes a second), then under the inode's lock the
 * inode read again; if it changed (ctime, mtime, size, copies, links) or
 * a client holds it now, the seal is given up and its stripes removed;
 * else the bit is set and committed, then the replicated objects removed.
 * A writer must hold the file (NS_OPEN) and then ask for the unseal
 * (NS_OPEN SDFS_NS_OPEN_UNSEAL, ecfile_unseal) before its first write:
 * both happen before that commit (which then sees the hold) or after
 * it (the unseal sees the bit). mds-side writers (a truncate) change
 * ctime, which the commit checks.
 *
 * Unsealing, under the inode's lock: each stripe read and written as
 * the replicated object, the bit cleared and committed, then every
 * stripe removed (also of a file with only POLICY_STRIPES: a crash left
 * stripes, and a reader with old attributes would read them) and
 * POLICY_STRIPES cleared, so a write that follows lands where every
 * reader looks. A stripe that cannot be removed fails the unseal (the
 * writer's write fails; its next one asks again).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/net.h"
#include "common/oid.h"
#include "common/policy.h"
#include "common/ring.h"
#include "mds/lease.h"
#include "mds/ns_int.h"
#include "mds/opens.h"

#define ECFILE_RATE (32u << 20)         /* bytes sealed per second, at most */
#define ECFILE_BATCH 64                 /* files sealed per pass, at most */
/* A pass reads every inode record: once a quarter of ec_seal_after_s,
 * at least a second and at most 30 s apart. */
#define ECFILE_PERIOD_MIN_MS 1000
#define ECFILE_PERIOD_MAX_MS 30000

static uint64_t chunks_of(const struct inode *in)
{
	return in->a.obj_size ? (in->a.size + in->a.obj_size - 1) / in->a.obj_size : 0;
}

/* Remove the stripes of chunks [from, n) of @ino; 0 or the first error
 * other than -ENOENT (with @must; else errors are logged only). */
static int drop_stripes(struct ns *ns, uint64_t ino, unsigned p, uint64_t from,
			uint64_t n, int must)
{
	for (uint64_t c = from; c < n; c++) {
		int ret = sdfs_ec_remove(ns->sdfs, oid_fstripe(ino, c), policy_ec_k(p),
					 policy_ec_m(p));

		if (ret && ret != -ENOENT) {
			if (must)
				return ret;
			log_debug("ino=%" PRIu64 " chunk %" PRIu64 ": stripe not removed: %s",
				  ino, c, strerror(-ret));
		}
	}
	return 0;
}

int ecfile_drop(struct ns *ns, uint64_t ino, unsigned copies, uint64_t first,
		uint64_t last_plus1)
{
	if (!policy_has_stripes(copies))
		return 0;
	return drop_stripes(ns, ino, copies, first, last_plus1, policy_is_sealed(copies));
}

/* Commit @in with its copies field @p (the caller holds its lock). */
static int put_field(struct ns *ns, struct inode *in, unsigned p)
{
	struct kvbatch *b = kvbatch_new();
	unsigned was = in->a.copies;
	int ret;

	if (!b)
		return -ENOMEM;
	in->a.copies = (uint16_t)p;
	inode_put(b, in);
	ret = ns_commit(ns, b);
	kvbatch_free(b);
	if (ret)
		in->a.copies = (uint16_t)was;
	return ret;
}

int ecfile_unseal_locked(struct ns *ns, struct inode *in)
{
	unsigned p = in->a.copies, k = policy_ec_k(p), m = policy_ec_m(p);
	uint64_t n = chunks_of(in);
	uint32_t osz = in->a.obj_size;
	int64_t t0 = net_now_ms();
	uint64_t bytes = 0;
	void *buf;
	int ret = 0;

	if (!S_ISREG(in->a.mode) || in->a.layout != SDFS_LAYOUT_OBJECTS || !policy_is_ec(p))
		return 0;
	if (!policy_has_stripes(p))
		return 0;
	if (!policy_is_sealed(p))
		goto drop;
	buf = malloc(osz ? osz : 1);
	if (!buf)
		return -ENOMEM;
	for (uint64_t c = 0; c < n && !ret; c++) {
		ssize_t got = sdfs_ec_read(ns->sdfs, oid_fstripe(in->a.ino, c), k, m, buf, osz, 0);

		if (got == -ENOENT || got == 0)
			continue;       /* a hole */
		if (got < 0) {
			ret = (int)got;
			break;
		}
		ret = sdfs_obj_put(ns->sdfs, oid_file(in->a.ino, c, p), buf, (size_t)got);
		bytes += (uint64_t)got;
	}
	free(buf);
	if (ret) {
		log_warn("ino=%" PRIu64 ": cannot unseal: %s", in->a.ino, strerror(-ret));
		return ret;
	}
	ret = put_field(ns, in, (p & ~POLICY_SEALED) | POLICY_STRIPES);
	if (ret)
		return ret;
	atomic_fetch_add(&ns->ec_unseals, 1);
	log_info("ino=%" PRIu64 ": unsealed (%" PRIu64 " bytes read and written again "
		 "in %" PRId64 " ms)", in->a.ino, bytes, net_now_ms() - t0);
drop:
	ret = drop_stripes(ns, in->a.ino, p, 0, n, 1);
	if (ret) {
		log_warn("ino=%" PRIu64 ": cannot remove its stripes: %s", in->a.ino,
			 strerror(-ret));
		return ret;
	}
	return put_field(ns, in, in->a.copies & ~(POLICY_SEALED | POLICY_STRIPES));
}

int ecfile_unseal(struct ns *ns, uint64_t ino)
{
	struct lockset ls;
	struct inode in;
	int ret;

	ns_handover_wait(ns);
	lease_collect_begin();
	ns_lock(ns, &ls, &ino, 1);
	ret = inode_get(ns, ino, &in);
	if (!ret)
		ret = ecfile_unseal_locked(ns, &in);
	ns_unlock(ns, &ls);
	/* every client caching the inode learns the form, the asker too */
	lease_collect_end(ns->leases, 0, ret == 0);
	return ret == -ENOENT ? 0 : ret;
}

static int seal_due(const struct inode *in, int64_t now_ns, int after_s)
{
	int64_t t = in->a.mtime_ns > in->a.ctime_ns ? in->a.mtime_ns : in->a.ctime_ns;

	return S_ISREG(in->a.mode) && in->a.layout == SDFS_LAYOUT_OBJECTS &&
	       policy_is_ec(in->a.copies) && !policy_is_sealed(in->a.copies) &&
	       in->a.nlink > 0 && in->a.size > 0 &&
	       now_ns - t >= (int64_t)after_s * 1000000000LL;
}

static int same_inode(const struct inode *a, const struct inode *b)
{
	return a->a.ctime_ns == b->a.ctime_ns && a->a.mtime_ns == b->a.mtime_ns &&
	       a->a.size == b->a.size && a->a.copies == b->a.copies &&
	       a->a.nlink == b->a.nlink && a->a.gen == b->a.gen;
}

static int stopping(struct ns *ns)
{
	int stop;

	pthread_mutex_lock(&ns->ecfile_lock);
	stop = ns->ecfile_stop;
	pthread_mutex_unlock(&ns->ecfile_lock);
	return stop || ns_failed(ns);
}

/* Can the map place @in's stripes now? 0 or -ENODEV (sdfs_ec_locate:
 * the map alone, no request). */
static int placeable(struct ns *ns, const struct inode *in)
{
	uint32_t ids[RING_MAX_PLACE];
	int r = sdfs_ec_locate(ns->sdfs, oid_fstripe(in->a.ino, 0), policy_ec_k(in->a.copies),
			       policy_ec_m(in->a.copies), ids, RING_MAX_PLACE);

	return r < 0 ? r : 0;
}

/* Seal @ino (due when listed). 1 sealed, 0 given up, -errno. */
static int seal_one(struct ns *ns, uint64_t ino, uint64_t *bytes_out)
{
	struct inode in0, in1;
	struct lockset ls;
	uint64_t n, bytes = 0;
	unsigned p, k, m;
	int64_t t0 = net_now_ms();
	void *buf;
	int ret = 0;

	/* a cluster too small for the code: no record written, no stripe */
	if (inode_get(ns, ino, &in0) == 0 && placeable(ns, &in0) < 0)
		return -ENODEV;
	/* POLICY_STRIPES first: any stripe put from here on is named */
	ns_lock(ns, &ls, &ino, 1);
	if (inode_get(ns, ino, &in0) || opens_held(ns, ino) ||
	    !seal_due(&in0, ns_now(), 0) ||
	    put_field(ns, &in0, in0.a.copies | POLICY_STRIPES)) {
		ns_unlock(ns, &ls);
		return 0;
	}
	ns_unlock(ns, &ls);
	p = in0.a.copies;
	k = policy_ec_k(p);
	m = policy_ec_m(p);
	n = chunks_of(&in0);
	buf = malloc(in0.a.obj_size);
	if (!buf)
		return -ENOMEM;
	for (uint64_t c = 0; c < n && !ret; c++) {
		ssize_t got = sdfs_obj_read(ns->sdfs, oid_file(ino, c, p), buf, in0.a.obj_size, 0);

		if (got == -ENOENT || got == 0)
			continue;
		if (got < 0) {
			ret = (int)got;
			break;
		}
		ret = sdfs_ec_put(ns->sdfs, oid_fstripe(ino, c), k, m, buf, (size_t)got);
		bytes += (uint64_t)got;
		if (opens_held(ns, ino) || stopping(ns))
			ret = -EAGAIN;
		/* the rate: this many bytes take at least bytes / RATE s */
		int64_t due = t0 + (int64_t)(bytes * 1000 / ECFILE_RATE), now = net_now_ms();
		if (!ret && due > now)
			usleep((useconds_t)(due - now) * 1000);
	}
	free(buf);
	/* test hook: the first mds to take the file exits after the puts */
	const char *fault = getenv("SDFS_MDS_ECFILE_FAULT");
	if (!ret && fault && unlink(fault) == 0) {
		log_warn("ino=%" PRIu64 ": SDFS_MDS_ECFILE_FAULT: exiting after the puts", ino);
		_exit(9);
	}
	ns_lock(ns, &ls, &ino, 1);
	if (!ret && (inode_get(ns, ino, &in1) || !same_inode(&in0, &in1) ||
		     opens_held(ns, ino)))
		ret = -EAGAIN;  /* changed or opened meanwhile */
	if (ret) {
		/* give up: the stripes go, then the bit (if the inode still
		 * has it: an unseal or purge may have done both already) */
		if (drop_stripes(ns, ino, p, 0, n, 1) == 0 && inode_get(ns, ino, &in1) == 0 &&
		    !policy_is_sealed(in1.a.copies) && policy_has_stripes(in1.a.copies))
			put_field(ns, &in1, in1.a.copies & ~POLICY_STRIPES);
		ns_unlock(ns, &ls);
		if (ret == -EAGAIN)
			return 0;
		log_warn("ino=%" PRIu64 ": cannot seal: %s (tried again later)", ino,
			 strerror(-ret));
		return ret;
	}
	lease_collect_begin();
	ret = put_field(ns, &in1, p | POLICY_SEALED);
	ns_unlock(ns, &ls);
	lease_collect_end(ns->leases, 0, ret == 0);
	if (ret)
		return ret;
	for (uint64_t c = 0; c < n; c++) {
		int r = sdfs_obj_remove(ns->sdfs, oid_file(ino, c, p));

		if (r && r != -ENOENT)
			log_debug("ino=%" PRIu64 " chunk %" PRIu64 ": replicated object "
				  "not removed: %s", ino, c, strerror(-r));
	}
	atomic_fetch_add(&ns->ec_seals, 1);
	atomic_fetch_add(&ns->ec_sealed_bytes, bytes);
	log_info("ino=%" PRIu64 ": sealed ec=%u+%u (%" PRIu64 " bytes in %" PRId64 " ms)",
		 ino, k, m, bytes, net_now_ms() - t0);
	*bytes_out = bytes;
	return 1;
}

/* One pass: the files due, at most ECFILE_BATCH of them (only of codes
 * the map can place, so those it cannot never starve the others). */
static void seal_pass(struct ns *ns, int after_s)
{
	struct kviter *it = kvdb_iter(ns->db);
	uint64_t inos[ECFILE_BATCH], bytes, unplaced = 0;
	int64_t now = ns_now();
	int n = 0;

	if (!it)
		return;
	for (kviter_seek(it, "I", 1); kviter_valid(it) && n < ECFILE_BATCH; kviter_next(it)) {
		size_t klen;
		const uint8_t *k = (const uint8_t *)kviter_key(it, &klen);
		struct inode in;

		if (k[0] != 'I' || klen != 9)
			break;
		if (inode_get(ns, be64_get(k + 1), &in) || !seal_due(&in, now, after_s) ||
		    opens_held(ns, in.a.ino))
			continue;
		if (placeable(ns, &in) == 0)
			inos[n++] = in.a.ino;
		else if (!unplaced++ && net_now_ms() - ns->ecfile_nodev_ms > 60000) {
			/* said once a minute; tried again every pass */
			log_warn("ino=%" PRIu64 ": not sealed: the map cannot place the "
				 "strips of its code ec=%u+%u (k + m nodes needed)", in.a.ino,
				 policy_ec_k(in.a.copies), policy_ec_m(in.a.copies));
			ns->ecfile_nodev_ms = net_now_ms();
		}
	}
	kviter_free(it);
	for (int i = 0; i < n && !stopping(ns); i++)
		seal_one(ns, inos[i], &bytes);
}

static void *ecfile_main(void *arg)
{
	struct ns *ns = arg;

	pthread_mutex_lock(&ns->ecfile_lock);
	while (!ns->ecfile_stop) {
		int after = atomic_load(&ns->ec_seal_after_s);
		struct timespec dl;

		pthread_mutex_unlock(&ns->ecfile_lock);
		if (after > 0 && !ns_failed(ns)) {
			ns_handover_wait(ns);
			seal_pass(ns, after);
		}
		pthread_mutex_lock(&ns->ecfile_lock);
		if (ns->ecfile_stop)
			break;
		int64_t period = (int64_t)after * 250;

		if (period < ECFILE_PERIOD_MIN_MS)
			period = ECFILE_PERIOD_MIN_MS;
		if (period > ECFILE_PERIOD_MAX_MS)
			period = ECFILE_PERIOD_MAX_MS;
		net_time_in(CLOCK_REALTIME, period, &dl);
		pthread_cond_timedwait(&ns->ecfile_cond, &ns->ecfile_lock, &dl);
	}
	pthread_mutex_unlock(&ns->ecfile_lock);
	return NULL;
}

void ns_set_ec_seal_after(struct ns *ns, int secs)
{
	atomic_store(&ns->ec_seal_after_s, secs);
}

int ecfile_start(struct ns *ns)
{
	int ret = pthread_create(&ns->ecfile_thread, NULL, ecfile_main, ns);

	if (ret)
		return -ret;
	ns->ecfile_started = 1;
	return 0;
}

void ecfile_stop(struct ns *ns)
{
	if (!ns->ecfile_started)
		return;
	pthread_mutex_lock(&ns->ecfile_lock);
	ns->ecfile_stop = 1;
	pthread_cond_broadcast(&ns->ecfile_cond);
	pthread_mutex_unlock(&ns->ecfile_lock);
	pthread_join(ns->ecfile_thread, NULL);
	ns->ecfile_started = 0;
}
