/*
 * workq.h - named pools of worker threads for blocking work (disk I/O,
 * fsync), whose completions run back on the event loop thread.
 *
 * A job embeds struct work: fn runs on a worker and touches only its
 * job; done runs on the loop thread afterwards and may touch shared
 * state. A job whose completion is thread-safe sets finish instead:
 * it runs on the worker right after fn (no hand-off back to the loop)
 * and may free the job. workq_push() may be called from the loop thread
 * only.
 */
#ifndef SDFS_COMMON_WORKQ_H
#define SDFS_COMMON_WORKQ_H
#include "common/loop.h"

struct work;
typedef void (*work_fn)(struct work *w);

struct work {
	work_fn fn;                     /* on a worker thread */
	work_fn done;                   /* on the loop thread, after fn */
	work_fn finish;                 /* or: on the worker, after fn */
	struct work *next;              /* workq's own */
	struct loop_call call;          /* workq's own */
};

struct workq;

/* @nthreads workers named "@name" (for logs). Returns 0 or -errno. */
int workq_new(struct loop *l, const char *name, int nthreads, struct workq **out);
/* Finish queued work, join the workers. Pending done calls still run
 * on the loop if it keeps running. */
void workq_free(struct workq *q);
void workq_push(struct workq *q, struct work *w);
/* Jobs queued or running now. */
unsigned workq_depth(const struct workq *q);
#endif
