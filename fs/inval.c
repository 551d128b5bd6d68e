/*
 * inval.c - invalidations pushed by the mds, applied to the kernel's
 * caches; and the guard that keeps replies racing them out of it.
 *
 * The mds tells this mount (libsdfs's subscription, sdfs_ns_subscribe)
 * which attributes and names it cached became stale through another
 * client's change, and acknowledges that change only after we answered
 * (or after our cache time passed). Each item becomes
 *   SDFS_INVAL_INODE  fuse_lowlevel_notify_inval_inode(ino, -1, 0):
 *                     the attributes only (data is close-to-open)
 *   SDFS_INVAL_ENTRY  fuse_lowlevel_notify_inval_entry(parent, name):
 *                     the name, cached as present or as missing
 * -ENOENT (the kernel holds no such inode or name) is the common case.
 *
 * Why an applier thread and a 50 ms bound: the kernel's inval_entry
 * takes the parent directory's inode lock. A syscall of this mount in
 * that directory may hold it while it waits for the mds, and the mds may
 * be waiting for our answer before it serves that syscall. So the
 * callback (on libsdfs's thread) only queues a copy of the items and
 * waits for the applier at most INVAL_WAIT_MS: in the normal case the
 * kernel dropped them before the mds acknowledges the change; in the
 * deadlock case the answer goes anyway, the mds proceeds, the syscall
 * ends, its lock goes, and the applier finishes a moment later.
 *
 * Why the guard: a lookup or getattr reply that the mds made before a
 * change but that reaches the kernel after the invalidation of that
 * change was applied would put the stale state back for a whole
 * timeout. Every message bumps inval_seq before its items are queued;
 * a handler takes a mark before asking the mds, and replies with
 * timeout 0 if inval_seq moved since (a reply about something else
 * loses its caching once, nothing worse). The check and the reply are
 * not atomic: a message arriving between them is not caught here, but
 * the kernel covers most of that window itself (a lookup holds the
 * directory lock inval_entry waits for; attributes carry the kernel's
 * attr_version, which inval_inode bumps).
 *
 * Threads: the callback on libsdfs's thread, one applier, FUSE's
 * workers calling the mark functions (lock-free).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"
#include "common/sdfs_proto.h"
#include "fs/fs.h"

#define INVAL_WAIT_MS   50      /* the callback waits for the applier */
#define INVAL_STOP_MS   1000    /* inval_quiesce waits for an item in flight */

/* One message's items; names copied (NUL-terminated) after them. */
struct inval_batch {
	struct inval_batch *next;
	uint64_t id;
	size_t n;
	struct sdfs_inval iv[];
};

static struct {
	pthread_t applier;
	int started;
	pthread_mutex_t mu;             /* everything below */
	pthread_cond_t work;            /* to the applier: queued, or stopping */
	pthread_cond_t done;            /* from it: done_id moved, or idle */
	struct inval_batch *head, *tail;
	uint64_t queued_id, done_id;
	int applying;                   /* the applier is in a notify call */
	int stopping;                   /* the session goes: apply nothing more */
} q = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
};

static atomic_uint_fast64_t inval_seq;
static _Thread_local uint64_t thread_mark;
static _Thread_local int64_t thread_mark_ns;

uint64_t inval_mark(void)
{
	return atomic_load(&inval_seq);
}

int64_t inval_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double inval_attr_timeout(uint64_t mark)
{
	return atomic_load(&inval_seq) == mark ? the_fs->o.attr_timeout : 0;
}

double inval_entry_timeout(uint64_t mark)
{
	return atomic_load(&inval_seq) == mark ? the_fs->o.entry_timeout : 0;
}

void inval_begin(void)
{
	thread_mark_ns = inval_now_ns();        /* before the mark: older */
	thread_mark = inval_mark();
}

void inval_begin_at(uint64_t mark, int64_t mark_ns)
{
	thread_mark = mark;
	thread_mark_ns = mark_ns;
}

uint64_t inval_thread_mark(void)
{
	return thread_mark;
}

int64_t inval_lease_end(void)
{
	if (!thread_mark_ns || atomic_load(&inval_seq) != thread_mark)
		return 0;
	return thread_mark_ns + (int64_t)(the_fs->o.attr_timeout * 1e9);
}

static struct inval_batch *batch_new(const struct sdfs_inval *iv, size_t n)
{
	size_t names = 0;

	for (size_t i = 0; i < n; i++)
		names += iv[i].kind == SDFS_INVAL_ENTRY ? iv[i].name_len + 1u : 0;
	struct inval_batch *b = malloc(sizeof(*b) + n * sizeof(b->iv[0]) + names);
	if (!b)
		return NULL;
	char *p = (char *)&b->iv[n];
	b->next = NULL;
	b->n = n;
	for (size_t i = 0; i < n; i++) {
		b->iv[i] = iv[i];
		b->iv[i].name = NULL;
		if (iv[i].kind != SDFS_INVAL_ENTRY)
			continue;
		memcpy(p, iv[i].name, iv[i].name_len);
		p[iv[i].name_len] = '\0';       /* libfuse sends name_len + 1 bytes */
		b->iv[i].name = p;
		p += iv[i].name_len + 1u;
	}
	return b;
}

/* A (re)subscription: the attributes of every inode the kernel holds
 * (names cannot be listed: those cached while there was no subscription
 * run out by entry_timeout). */
static void apply_all(struct fs *fs)
{
	uint64_t *inos = NULL;
	size_t n = 0;

	pthread_mutex_lock(&fs->lock);
	inos = malloc((fs->count ? fs->count : 1) * sizeof(*inos));
	for (size_t b = 0; inos && b < fs->tab_size; b++)
		for (struct fnode *x = fs->tab[b]; x && n < fs->count; x = x->next)
			inos[n++] = x->ino;
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < n; i++)
		if (!snapdir_is_virtual(inos[i]))
			fuse_lowlevel_notify_inval_inode(fs->se, inos[i], -1, 0);
	free(inos);
}

static void apply(struct fs *fs, const struct sdfs_inval *iv)
{
	int ret;

	if (iv->kind == SDFS_INVAL_ALL) {
		apply_all(fs);
		return;
	}
	if (iv->kind == SDFS_INVAL_INODE)
		ret = fuse_lowlevel_notify_inval_inode(fs->se, iv->ino, -1, 0);
	else
		ret = fuse_lowlevel_notify_inval_entry(fs->se, iv->ino, iv->name,
						       iv->name_len);
	if (ret && ret != -ENOENT)
		log_debug("%s ino=%llu%s%s: %s",
			  iv->kind == SDFS_INVAL_INODE ? "inode" : "entry",
			  (unsigned long long)iv->ino, iv->name ? " name=" : "",
			  iv->name ? iv->name : "", strerror(-ret));
}

static void *applier_main(void *arg)
{
	struct fs *fs = arg;
	sigset_t all;

	/* a notify call must not end early with EINTR */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&q.mu);
	for (;;) {
		while (!q.stopping && !q.head)
			pthread_cond_wait(&q.work, &q.mu);
		if (q.stopping)
			break;
		struct inval_batch *b = q.head;

		for (size_t i = 0; i < b->n && !q.stopping; i++) {
			q.applying = 1;
			pthread_mutex_unlock(&q.mu);
			apply(fs, &b->iv[i]);
			pthread_mutex_lock(&q.mu);
			q.applying = 0;
		}
		q.head = b->next;
		if (!q.head)
			q.tail = NULL;
		q.done_id = b->id;
		pthread_cond_broadcast(&q.done);
		free(b);
	}
	pthread_cond_broadcast(&q.done);
	pthread_mutex_unlock(&q.mu);
	return NULL;
}

static void deadline_in(struct timespec *ts, int ms)
{
	net_time_in(CLOCK_MONOTONIC, ms, ts);
}

/* libsdfs's thread: queue, wait a little, return (= answer the mds). */
static void on_inval(void *arg, const struct sdfs_inval *iv, size_t n)
{
	struct inval_batch *b;
	struct timespec ts;
	uint64_t id;

	atomic_fetch_add(&inval_seq, 1);        /* before any item is applied */
	/* Now, not on the applier: answering says we no longer rely on what
	 * they name (an open would take a leased size as current). */
	for (size_t i = 0; i < n; i++)
		if (iv[i].kind == SDFS_INVAL_ALL) {
			fnode_unlease_all(arg);
			dnames_drop_all(arg);
		} else if (iv[i].kind == SDFS_INVAL_INODE &&
			   (iv[i].flags & SDFS_INVAL_F_ATIME)) {
			fnode_unlease_atime(arg, iv[i].ino);    /* names as they were */
		} else if (iv[i].kind == SDFS_INVAL_INODE) {
			fnode_unlease(arg, iv[i].ino);
			dnames_drop(arg, iv[i].ino);
		} else if (iv[i].kind == SDFS_INVAL_ENTRY) {
			dnames_drop(arg, iv[i].ino);    /* a name there changed */
		}
	b = batch_new(iv, n);
	pthread_mutex_lock(&q.mu);
	if (q.stopping) {
		pthread_mutex_unlock(&q.mu);
		free(b);
		return;
	}
	if (!b) {
		pthread_mutex_unlock(&q.mu);
		log_warn("out of memory: %zu invalidations not applied (cached "
			 "until their timeouts)", n);
		return;
	}
	id = b->id = ++q.queued_id;
	if (q.tail)
		q.tail->next = b;
	else
		q.head = b;
	q.tail = b;
	pthread_cond_signal(&q.work);
	deadline_in(&ts, INVAL_WAIT_MS);
	while (q.done_id < id && !q.stopping &&
	       pthread_cond_timedwait(&q.done, &q.mu, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&q.mu);
}

static void on_attrs(void *arg, const struct sdfs_stat *st)
{
	fnode_set_stat_newer(arg, st);
}

int inval_start(struct fs *fs)
{
	double t = fs->o.attr_timeout > fs->o.entry_timeout ?
		   fs->o.attr_timeout : fs->o.entry_timeout;
	uint32_t cache_ms = (uint32_t)(t * 1000);
	pthread_condattr_t ca;
	int ret;

	if ((double)cache_ms < t * 1000)
		cache_ms++;     /* rounded up */
	/* With both timeouts 0 the kernel caches nothing and the mds grants
	 * no leases; the subscription still brings lock wake-ups (libsdfs
	 * handles those itself). */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q.done, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&q.applier, NULL, applier_main, fs);
	if (ret)
		return -ret;
	q.started = 1;
	/* the directories our own changes wrote, as they are after them */
	sdfs_ns_on_attrs(fs->s, on_attrs, fs);
	ret = sdfs_ns_subscribe(fs->s, cache_ms, on_inval, fs);
	if (ret) {
		inval_quiesce(fs);
		inval_stop(fs);
	}
	return ret;
}

void inval_quiesce(struct fs *fs)
{
	struct timespec ts;
	(void)fs;

	if (!q.started)
		return;
	pthread_mutex_lock(&q.mu);
	q.stopping = 1;
	pthread_cond_broadcast(&q.work);
	pthread_cond_broadcast(&q.done);        /* a waiting callback returns */
	deadline_in(&ts, INVAL_STOP_MS);
	while (q.applying && pthread_cond_timedwait(&q.done, &q.mu, &ts) != ETIMEDOUT)
		;
	if (q.applying)
		log_info("an invalidation is blocked in the kernel; unmounting anyway");
	pthread_mutex_unlock(&q.mu);
}

void inval_stop(struct fs *fs)
{
	(void)fs;
	if (!q.started)
		return;
	pthread_join(q.applier, NULL);
	q.started = 0;
	while (q.head) {
		struct inval_batch *b = q.head;

		q.head = b->next;
		free(b);
	}
	q.tail = NULL;
}
