/*
 * side.c - one call run on a pooled thread beside the caller's (fs.h):
 * fsync flushes a file's data on the block daemons while its own
 * thread pushes the size and mtime to the mds, so it waits for the
 * longer of the two, not their sum.
 *
 * SIDE_THREADS threads, started at first use, take jobs from one list.
 * side_start never waits for a thread: when none is idle (or none could
 * be started) the call runs right there, in the caller, and side_wait
 * just returns its result.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "fs/fs.h"

#define SIDE_THREADS 4

static struct {
	pthread_mutex_t mu;
	pthread_cond_t work;            /* a job was queued */
	pthread_cond_t done;            /* a job finished */
	struct side_job *head, *tail;
	unsigned threads, idle;
} sq = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

static void *side_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&sq.mu);
	for (;;) {
		struct side_job *j;

		sq.idle++;
		while (!sq.head)
			pthread_cond_wait(&sq.work, &sq.mu);
		sq.idle--;
		j = sq.head;
		sq.head = j->next;
		if (!sq.head)
			sq.tail = NULL;
		pthread_mutex_unlock(&sq.mu);
		int ret = j->fn(j->arg);
		pthread_mutex_lock(&sq.mu);
		j->ret = ret;
		j->state = 2;
		pthread_cond_broadcast(&sq.done);
	}
	return NULL;
}

/* With sq.mu held: one more thread, signals blocked (FUSE's own are). */
static void grow(void)
{
	sigset_t all, old;
	pthread_t t;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, side_main, NULL) == 0) {
		pthread_detach(t);
		sq.threads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void side_start(struct side_job *j, int (*fn)(void *), void *arg)
{
	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	pthread_mutex_lock(&sq.mu);
	if (!sq.idle && sq.threads < SIDE_THREADS)
		grow();
	/* queued jobs count against idle threads: a queue never waits */
	int n = 0;

	for (struct side_job *q = sq.head; q; q = q->next)
		n++;
	if ((unsigned)n >= sq.idle) {
		pthread_mutex_unlock(&sq.mu);
		j->ret = fn(arg);
		j->state = 2;
		return;
	}
	j->state = 1;
	if (sq.tail)
		sq.tail->next = j;
	else
		sq.head = j;
	sq.tail = j;
	pthread_cond_signal(&sq.work);
	pthread_mutex_unlock(&sq.mu);
}

int side_wait(struct side_job *j)
{
	pthread_mutex_lock(&sq.mu);
	while (j->state != 2)
		pthread_cond_wait(&sq.done, &sq.mu);
	pthread_mutex_unlock(&sq.mu);
	return j->ret;
}
