/*
 * workq.c - see workq.h. A mutex+condvar FIFO feeding N threads.
 */
#include "common/workq.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct workq {
	struct loop *loop;
	const char *name;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct work *head, **tail;
	int stopping;
	int nthreads;
	atomic_uint depth;
	pthread_t *threads;
};

static void work_complete(void *arg)
{
	struct work *w = arg;

	w->done(w);
}

static void *worker(void *arg)
{
	struct workq *q = arg;

	for (;;) {
		pthread_mutex_lock(&q->lock);
		while (!q->head && !q->stopping)
			pthread_cond_wait(&q->cond, &q->lock);
		struct work *w = q->head;
		if (!w) {
			pthread_mutex_unlock(&q->lock);
			return NULL;
		}
		q->head = w->next;
		if (!q->head)
			q->tail = &q->head;
		pthread_mutex_unlock(&q->lock);

		w->fn(w);
		atomic_fetch_sub(&q->depth, 1);
		if (w->finish) {
			w->finish(w);   /* may free w */
		} else if (w->done) {
			w->call.fn = work_complete;
			w->call.arg = w;
			loop_post(q->loop, &w->call);
		}
	}
}

int workq_new(struct loop *l, const char *name, int nthreads, struct workq **out)
{
	struct workq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->threads = calloc(nthreads, sizeof(*q->threads));
	if (!q->threads) {
		free(q);
		return -ENOMEM;
	}
	q->loop = l;
	q->name = name;
	q->tail = &q->head;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	for (int i = 0; i < nthreads; i++) {
		int ret = pthread_create(&q->threads[i], NULL, worker, q);

		if (ret) {
			q->nthreads = i;
			workq_free(q);
			return -ret;
		}
	}
	q->nthreads = nthreads;
	*out = q;
	return 0;
}

void workq_free(struct workq *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = 1;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	for (int i = 0; i < q->nthreads; i++)
		pthread_join(q->threads[i], NULL);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	free(q->threads);
	free(q);
}

void workq_push(struct workq *q, struct work *w)
{
	w->next = NULL;
	atomic_fetch_add(&q->depth, 1);
	pthread_mutex_lock(&q->lock);
	*q->tail = w;
	q->tail = &w->next;
	pthread_mutex_unlock(&q->lock);
	/* after the unlock: the woken worker does not wake into a held
	 * lock (it re-checks the queue under it, so no wake-up is lost) */
	pthread_cond_signal(&q->cond);
}

unsigned workq_depth(const struct workq *q)
{
	return atomic_load(&((struct workq *)q)->depth);
}
