/*
 * phase.c - see phase.h.
 *
 * Threads claim item numbers from one atomic counter, so a phase with a
 * deadline touches exactly items 0 .. ops-1 however the threads
 * interleave, and cleanup knows what to remove. Each claimed item gets
 * its own latency slot: no locking on the hot path.
 */
#include "tools/bench/phase.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct phase_state {
	const struct phase *p;
	pthread_mutex_t lock;           /* with cond: the start gate */
	pthread_cond_t cond;
	bool go;
	int64_t deadline_ns;            /* set before the gate opens */
	atomic_uint_fast64_t next;      /* next item to claim */
	atomic_int err;                 /* first error: everyone stops */
	atomic_uint_fast64_t err_idx;
	uint64_t *lat_ns;               /* [max_ops] */
};

struct worker {
	struct phase_state *st;
	uint8_t *buf;
	pthread_t tid;
};

static atomic_int interrupted;

void phase_interrupt(void)
{
	atomic_store(&interrupted, 1);
}

int phase_is_interrupted(void)
{
	return atomic_load(&interrupted);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool phase_is_over(const struct phase_state *st)
{
	if (atomic_load(&st->err))
		return true;
	if (st->p->seconds <= 0)
		return false;
	return phase_is_interrupted() || now_ns() >= st->deadline_ns;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct phase_state *st = w->st;
	const struct phase *p = st->p;

	pthread_mutex_lock(&st->lock);
	while (!st->go)
		pthread_cond_wait(&st->cond, &st->lock);
	pthread_mutex_unlock(&st->lock);
	while (!phase_is_over(st)) {
		uint64_t idx = atomic_fetch_add(&st->next, 1);

		if (idx >= p->max_ops)
			break;
		int64_t t0 = now_ns();
		int ret = p->op(p->ctx, idx, w->buf, p->len);
		st->lat_ns[idx] = (uint64_t)(now_ns() - t0);
		if (ret < 0) {
			int none = 0;

			if (atomic_compare_exchange_strong(&st->err, &none, ret))
				atomic_store(&st->err_idx, idx);
			break;
		}
	}
	return NULL;
}

/* Random bytes, so no layer (sparse files, zero detection) can skip work. */
static void fill_random(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of the sorted @v[0..n). */
static double percentile_ms(const uint64_t *v, uint64_t n, double q)
{
	uint64_t rank = (uint64_t)(q * (double)n + 0.999999);

	if (n == 0)
		return 0;
	if (rank < 1)
		rank = 1;
	return (double)v[rank - 1] / 1e6;
}

static void workers_free(struct worker *w, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(w[i].buf);
	free(w);
}

static struct worker *workers_new(struct phase_state *st)
{
	const struct phase *p = st->p;
	struct worker *w = calloc(p->threads, sizeof(*w));
	/* Page-aligned like a real I/O buffer; at least a page. */
	size_t cap = (p->len + 4095) & ~(size_t)4095;

	if (!w)
		return NULL;
	for (unsigned i = 0; i < p->threads; i++) {
		w[i].st = st;
		if (posix_memalign((void **)&w[i].buf, 4096, cap ? cap : 4096)) {
			workers_free(w, i);
			return NULL;
		}
		fill_random(w[i].buf, p->len, i + 1);
	}
	return w;
}

/* Let the workers go; all start within a wakeup of each other. */
static void open_gate(struct phase_state *st)
{
	pthread_mutex_lock(&st->lock);
	st->go = true;
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

int phase_run(const struct phase *p, struct phase_result *r)
{
	struct phase_state st = {
		.p = p,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	struct worker *w;
	unsigned started = 0;

	memset(r, 0, sizeof(*r));
	st.lat_ns = calloc(p->max_ops ? p->max_ops : 1, sizeof(*st.lat_ns));
	w = st.lat_ns ? workers_new(&st) : NULL;
	if (!w) {
		free(st.lat_ns);
		return r->err = -ENOMEM;
	}
	for (; started < p->threads; started++) {
		if (pthread_create(&w[started].tid, NULL, worker_main, &w[started])) {
			/* The started ones see the error and stop at once. */
			atomic_store(&st.err, -EAGAIN);
			break;
		}
	}
	int64_t t0 = now_ns();
	st.deadline_ns = t0 + (int64_t)(p->seconds * 1e9);
	open_gate(&st);
	for (unsigned i = 0; i < started; i++)
		pthread_join(w[i].tid, NULL);
	r->seconds = (double)(now_ns() - t0) / 1e9;

	uint64_t claimed = atomic_load(&st.next);
	r->ops = claimed < p->max_ops ? claimed : p->max_ops;
	r->err = atomic_load(&st.err);
	r->err_idx = atomic_load(&st.err_idx);
	qsort(st.lat_ns, r->ops, sizeof(*st.lat_ns), cmp_u64);
	r->p50_ms = percentile_ms(st.lat_ns, r->ops, 0.50);
	r->p99_ms = percentile_ms(st.lat_ns, r->ops, 0.99);
	free(st.lat_ns);
	workers_free(w, p->threads);
	return r->err;
}
