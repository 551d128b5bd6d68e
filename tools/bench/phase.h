/*
 * phase.h - one timed phase of the benchmark: N threads run the same
 * operation on consecutive item numbers until a deadline or an op count,
 * whichever comes first, and the phase reports ops, wall time and the
 * latency percentiles.
 *
 * Not here: what an operation does (target.h), printing (report.h).
 * A phase is run from one thread; the op runs on the phase's threads
 * and must be safe to call concurrently with itself.
 */
#ifndef SDFS_TOOLS_BENCH_PHASE_H
#define SDFS_TOOLS_BENCH_PHASE_H
#include <stddef.h>
#include <stdint.h>

/*
 * One operation on item @idx. @buf holds @len bytes private to the
 * calling thread, random when the phase starts; the op may change it.
 * Returns 0 or a negative errno, which stops the phase.
 */
typedef int (*phase_op_fn)(const void *ctx, uint64_t idx, uint8_t *buf,
			   size_t len);

struct phase {
	phase_op_fn op;
	const void *ctx;        /* borrowed for the run */
	size_t len;             /* bytes per op */
	unsigned threads;
	uint64_t max_ops;       /* items 0 .. max_ops-1 at most */
	double seconds;         /* 0: no deadline, run all max_ops, ignore
				 * phase_interrupt (cleanup must finish) */
};

struct phase_result {
	uint64_t ops;           /* ops done: items 0 .. ops-1 were touched */
	double seconds;         /* wall time, first start to last finish */
	double p50_ms, p99_ms;  /* per-op latency */
	int err;                /* first failure, 0 if none */
	uint64_t err_idx;       /* its item */
};

/*
 * Run @p and fill *@r. Returns 0 when every op succeeded, else the
 * first op's error (also in r->err) or -ENOMEM / -EAGAIN when the
 * buffers or threads could not be had (then r->ops is 0).
 */
int phase_run(const struct phase *p, struct phase_result *r);

/* Make timed phases stop early (Ctrl-C). Async-signal-safe. */
void phase_interrupt(void);
int phase_is_interrupted(void);
#endif
