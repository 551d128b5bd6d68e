/*
 * timesback.c - the mtime write-back (fs.h): an fsync of a file whose
 * size and chunks the mds already has flushes the data and leaves the
 * mtime to this thread, which pushes it (one ordinary, not durable
 * SETATTR) fs->o.times_ms later, as the caller of that fsync. A file
 * fsynced again meanwhile is queued once: one push per file and
 * interval, however many fsyncs (docs/consistency.md "What fsync
 * guarantees"). A close pushes the mtime itself (fs_op_flush), so the
 * queue matters only for files kept open.
 *
 * A queued node is pinned (fnode_pin) until its push, so it outlives
 * the kernel's forget. The thread starts at the first deferral; at
 * unmount timesback_stop pushes what is queued at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "fs/fs.h"

struct tb_ent {
	struct fnode *n;
	int64_t due_ns;                 /* CLOCK_MONOTONIC */
	uint32_t uid, gid;
	size_t ngroups;
	int has_caller;
	uint32_t groups[SDFS_CALLER_GROUPS_MAX];
	struct tb_ent *next;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;              /* queued, or stop */
	struct tb_ent *head, *tail;     /* in due order: one delay for all */
	int started, stop;
	pthread_t thread;
	struct fs *fs;
} tb = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void push_one(struct tb_ent *e)
{
	int ret;

	/* unqueued first: an fsync during the push queues the node again,
	 * for an mtime this push may not carry */
	pthread_mutex_lock(&e->n->lock);
	e->n->times_queued = 0;
	pthread_mutex_unlock(&e->n->lock);
	if (e->has_caller)
		sdfs_set_caller(e->uid, e->gid, e->groups, e->ngroups);
	else
		sdfs_clear_caller();
	ret = fnode_push_ex(tb.fs, e->n, 1, 0);
	if (ret)        /* still dirty: the next fsync or the close sends it */
		log_warn("ino=%" PRIu64 ": mtime write-back: %s", e->n->ino,
			 strerror(-ret));
	fnode_unpin(tb.fs, e->n);
	free(e);
}

static void *tb_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&tb.mu);
	for (;;) {
		struct tb_ent *e = tb.head;

		if (!e) {
			if (tb.stop)
				break;
			pthread_cond_wait(&tb.cv, &tb.mu);
			continue;
		}
		int64_t now = mono_ns();

		if (!tb.stop && e->due_ns > now) {
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			int64_t ns = until.tv_nsec + (e->due_ns - now);

			until.tv_sec += ns / 1000000000;
			until.tv_nsec = ns % 1000000000;
			pthread_cond_timedwait(&tb.cv, &tb.mu, &until);
			continue;
		}
		tb.head = e->next;
		if (!tb.head)
			tb.tail = NULL;
		pthread_mutex_unlock(&tb.mu);
		push_one(e);
		pthread_mutex_lock(&tb.mu);
	}
	pthread_mutex_unlock(&tb.mu);
	return NULL;
}

/* With tb.mu held. Signals blocked: FUSE's handlers stay on its threads. */
static int start(void)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&tb.thread, NULL, tb_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	tb.started = 1;
	return 0;
}

int timesback_defer(struct fs *fs, struct fnode *n)
{
	struct tb_ent *e;

	if (!fs->o.times_ms)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&n->lock);
	if (n->times_queued) {  /* the queued push will carry this one */
		pthread_mutex_unlock(&n->lock);
		return 0;
	}
	pthread_mutex_unlock(&n->lock);
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->n = n;
	e->due_ns = mono_ns() + (int64_t)fs->o.times_ms * 1000000;
	e->has_caller = sdfs_get_caller(&e->uid, &e->gid, e->groups, &e->ngroups);
	pthread_mutex_lock(&tb.mu);
	if (tb.stop || (!tb.started && start())) {
		pthread_mutex_unlock(&tb.mu);
		free(e);
		return -ESHUTDOWN;
	}
	tb.fs = fs;
	pthread_mutex_lock(&n->lock);
	if (n->times_queued) {          /* another fsync queued it meanwhile */
		pthread_mutex_unlock(&n->lock);
		pthread_mutex_unlock(&tb.mu);
		free(e);
		return 0;
	}
	n->times_queued = 1;
	pthread_mutex_unlock(&n->lock);
	fnode_pin(fs, n);       /* an open of the caller's holds it until here */
	if (tb.tail)
		tb.tail->next = e;
	else
		tb.head = e;
	tb.tail = e;
	pthread_cond_signal(&tb.cv);
	pthread_mutex_unlock(&tb.mu);
	return 0;
}

void timesback_stop(void)
{
	pthread_mutex_lock(&tb.mu);
	tb.stop = 1;
	pthread_cond_signal(&tb.cv);
	int started = tb.started;

	pthread_mutex_unlock(&tb.mu);
	if (started)
		pthread_join(tb.thread, NULL);  /* after pushing what is queued */
}
