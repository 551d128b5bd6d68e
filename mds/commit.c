/*
 * commit.c - the commit pipeline (docs/mds.md "Commit pipeline"): how a
 * batch gets into the database, when it is in every replica's memory
 * and when it is durable, and the thread that bounds how long a change
 * stays not durable.
 *
 * A mutation applies its batch under its inode locks (ns_commit_op:
 * visible at once, nothing written yet) and unlocks; ns_exec settles
 * before any reply leaves (ns_settle), so a reply never shows state a
 * crash could take back, and concurrent requests share one log write.
 * Other writers (purge, reclaim, locks, handover...) use ns_commit,
 * which settles before it returns: they act on its result outside the
 * database. fsync and fsyncdir reach ns_sync (SDFS_OP_NS_SYNC).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"
#include "mds/ns_int.h"

#define SYNC_INTERVAL_DEFAULT_MS 1000

/* A failed store write: this mds is done (server.c steps down and
 * answers nothing, so clients resend to the next active). */
static int commit_failed(struct ns *ns, int ret, const char *what, const char *err)
{
	if (!atomic_exchange(&ns->failed, 1))
		log_err("database %s failed (%s): %s; this mds must step down",
			what, ret == -EPERM ? "fenced by a newer mds" : "I/O", err);
	return ret == -EPERM ? -EPERM : -EIO;
}

static int apply(struct ns *ns, struct kvbatch *b)
{
	char err[256] = "";
	int ret;

	if (atomic_load(&ns->failed))
		return -EIO;
	ret = kvdb_apply(ns->db, b, err, sizeof(err));
	return ret ? commit_failed(ns, ret, "write", err) : 0;
}

int ns_settle(struct ns *ns)
{
	char err[256] = "";
	int ret;

	if (atomic_load(&ns->failed))
		return -EIO;
	ret = kvdb_settle(ns->db, err, sizeof(err));
	return ret ? commit_failed(ns, ret, "write", err) : 0;
}

int ns_sync(struct ns *ns)
{
	char err[256] = "";
	int ret;

	if (atomic_load(&ns->failed))
		return -EIO;
	ret = kvdb_sync(ns->db, err, sizeof(err));
	if (!ret)
		return 0;
	/* A fence, or a failed settle, ends this mds; a flush that failed
	 * (block daemons down or hung) leaves the changes in the replicas'
	 * memory, to be flushed by the next sync. */
	if (ret == -EPERM || kvdb_settle(ns->db, NULL, 0))
		return commit_failed(ns, ret, "sync", err);
	log_every(10000, LOG_WARNING, "database sync failed, will retry: %s", err);
	return -EIO;
}

int ns_commit(struct ns *ns, struct kvbatch *b)
{
	int ret = apply(ns, b);

	return ret ? ret : ns_settle(ns);
}

int ns_commit_op(struct ns *ns, const struct sdfs_ns_req *r, struct kvbatch *b,
		 const struct ns_reply *rep)
{
	replycache_record(ns, r, b, rep);
	return apply(ns, b);
}

/* The sync interval: what was settled more than interval ago is durable
 * even if nobody calls fsync, as ext4's commit interval does. */
static void *sync_main(void *arg)
{
	struct ns *ns = arg;

	pthread_mutex_lock(&ns->sync_lock);
	while (!ns->sync_stop) {
		struct timespec ts;
		int ms = ns->sync_interval_ms;

		net_time_in(CLOCK_MONOTONIC, ms, &ts);
		pthread_cond_timedwait(&ns->sync_cond, &ns->sync_lock, &ts);
		if (ns->sync_stop || atomic_load(&ns->failed))
			break;
		pthread_mutex_unlock(&ns->sync_lock);
		ns_sync(ns);
		pthread_mutex_lock(&ns->sync_lock);
	}
	pthread_mutex_unlock(&ns->sync_lock);
	return NULL;
}

void ns_set_sync_interval(struct ns *ns, int ms)
{
	pthread_mutex_lock(&ns->sync_lock);
	ns->sync_interval_ms = ms > 0 ? ms : SYNC_INTERVAL_DEFAULT_MS;
	pthread_cond_signal(&ns->sync_cond);
	pthread_mutex_unlock(&ns->sync_lock);
}

int commit_start(struct ns *ns)
{
	pthread_condattr_t ca;
	int ret;

	if (ns->sync_interval_ms <= 0)
		ns->sync_interval_ms = SYNC_INTERVAL_DEFAULT_MS;
	pthread_mutex_init(&ns->sync_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ns->sync_cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = -pthread_create(&ns->sync_thread, NULL, sync_main, ns);
	ns->sync_started = ret == 0;
	return ret;
}

void commit_stop(struct ns *ns)
{
	if (!ns->sync_started)
		return;
	pthread_mutex_lock(&ns->sync_lock);
	ns->sync_stop = 1;
	pthread_cond_signal(&ns->sync_cond);
	pthread_mutex_unlock(&ns->sync_lock);
	pthread_join(ns->sync_thread, NULL);
	ns->sync_started = 0;
}
