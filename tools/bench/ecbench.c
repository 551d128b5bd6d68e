/*
 * ecbench.c - sdfs-ecbench: the erasure-coding codec's speed on one
 * core (common/ec.h over isa-l), the number issue 19 sets a goal for
 * (encode >= 2 GB/s per core).
 *
 * For 4+2 and 8+3 at strips of 64 KiB, 256 KiB and 1 MiB it times
 * encode, decode with one data strip lost and decode with m data
 * strips lost (the costliest rebuild: every output is a full dot
 * product). One thread pinned to the CPU it started on; the same
 * buffers every round, so caches are warm (an 8+3 stripe of 1 MiB
 * strips, 11 MiB, is past a 2 MiB L2 but may fit an L3). Rates are MB/s
 * (10^6 bytes) of object data, i.e. k * strip bytes per call, over the
 * thread's CPU time (median and best of --reps runs of about --ms each:
 * the per-core figure, which a busy shared machine disturbs less) and
 * over wall time (median: what the run got). Last, the cost
 * of one ec_decode call on 64-byte strips with its decode tables cached
 * and with them built each call (8+3, 3 lost: the table build a cache
 * miss adds to a rebuild).
 *
 * Not a test: nothing is asserted. Not here: EC through the block
 * daemons (there is none yet: docs/ec.md).
 *
 * usage: sdfs-ecbench [--reps N] [--ms MS]
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ec.h"

static double now_s(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void print_machine(void)
{
	char line[8192], model[256] = "?", load[64] = "?";	/* flags lines are long */
	int avx2 = 0, avx512 = 0, gfni = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10) && model[0] == '?')
			sscanf(line, "model name : %255[^\n]", model);
		if (!strncmp(line, "flags", 5)) {
			avx2 = !!strstr(line, " avx2");
			avx512 = !!strstr(line, " avx512bw");
			gfni = !!strstr(line, " gfni");
		}
	}
	if (f)
		fclose(f);
	f = fopen("/proc/loadavg", "r");
	if (f && fgets(load, sizeof(load), f))
		load[strcspn(load, "\n")] = 0;
	if (f)
		fclose(f);
	printf("cpu:  %s, %ld online, pinned to cpu %d; avx2 %s, avx512bw %s, gfni %s\n",
	       model, sysconf(_SC_NPROCESSORS_ONLN), sched_getcpu(),
	       avx2 ? "yes" : "no", avx512 ? "yes" : "no", gfni ? "yes" : "no");
	printf("load: %s (before the run)\n", load);
}

enum op { OP_ENCODE, OP_DECODE_1, OP_DECODE_M };

struct run {
	const struct ec_code *c;
	unsigned k, m;
	size_t len;
	uint8_t *strips[EC_STRIPS_MAX];
};

static int run_once(struct run *r, enum op op)
{
	if (op == OP_ENCODE)
		return ec_encode(r->c, r->len, (const uint8_t *const *)r->strips,
				 &r->strips[r->k]);
	/* The rebuilt strips go where they were: the bytes stay valid. */
	uint32_t missing = op == OP_DECODE_1 ? 1u : (1u << r->m) - 1;

	return ec_decode(r->c, r->len, missing, r->strips);
}

/*
 * Calls per second of @op, timed for about @ms of wall time after one
 * warm-up: *@wall per second of wall time, *@cpu per second of this
 * thread's CPU time (what one core does while the machine is shared).
 */
static int rate(struct run *r, enum op op, unsigned ms, double *wall, double *cpu)
{
	unsigned calls = 0, batch = 1;
	double t0, c0, t;

	if (run_once(r, op))
		return -1;
	t0 = now_s(CLOCK_MONOTONIC);
	c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	do {
		for (unsigned i = 0; i < batch; i++)
			run_once(r, op);
		calls += batch;
		batch = batch < 64 ? batch * 2 : batch;
		t = now_s(CLOCK_MONOTONIC) - t0;
	} while (t < ms / 1000.0);
	*cpu = calls / (now_s(CLOCK_THREAD_CPUTIME_ID) - c0);
	*wall = calls / t;
	return 0;
}

static int bench_code(unsigned k, unsigned m, unsigned reps, unsigned ms)
{
	static const size_t lens[] = { 64u << 10, 256u << 10, 1u << 20 };
	static const char *const names[] = { "encode", "decode-1", "decode-m" };
	struct run r = { .k = k, .m = m };
	int ret = ec_code_get(k, m, &r.c);

	if (ret)
		return ret;
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		uint8_t *buf = malloc((k + m) * lens[l]);

		if (!buf)
			return -ENOMEM;
		r.len = lens[l];
		for (unsigned i = 0; i < k + m; i++)
			r.strips[i] = buf + i * r.len;
		for (size_t i = 0; i < k * r.len; i++)
			buf[i] = (uint8_t)(i * 2654435761u >> 13);
		for (enum op op = OP_ENCODE; op <= OP_DECODE_M; op++) {
			double wall[64], cpu[64], mb = k * r.len / 1e6;

			for (unsigned i = 0; i < reps; i++) {
				if (rate(&r, op, ms, &wall[i], &cpu[i]))
					return -EINVAL;
				wall[i] *= mb;
				cpu[i] *= mb;
			}
			qsort(wall, reps, sizeof(wall[0]), cmp_double);
			qsort(cpu, reps, sizeof(cpu[0]), cmp_double);
			printf("%u+%u  %4zu KiB  %-8s  %4u  %10.0f  %8.0f  %11.0f\n",
			       k, m, r.len >> 10, names[op],
			       op == OP_ENCODE ? 0 : op == OP_DECODE_1 ? 1 : m,
			       cpu[reps / 2], cpu[reps - 1], wall[reps / 2]);
		}
		free(buf);
	}
	return 0;
}

/*
 * Microseconds per ec_decode call on 64-byte strips of 8+3 with 3 lost:
 * the same pattern every call (cached tables), and every one of the 165
 * patterns in turn (more than the EC_DECODE_CACHE slots, so mostly
 * built afresh).
 */
static void bench_tables(unsigned ms)
{
	const struct ec_code *c;
	uint8_t buf[11 * 64] = { 1 }, *strips[11];
	uint32_t pats[165];
	unsigned np = 0, calls;
	double t0, t;

	if (ec_code_get(8, 3, &c))
		return;
	for (unsigned i = 0; i < 11; i++)
		strips[i] = buf + i * 64;
	for (uint32_t mask = 0; mask < (1u << 11); mask++)
		if (__builtin_popcount(mask) == 3)
			pats[np++] = mask;
	for (int rotate = 0; rotate < 2; rotate++) {
		calls = 0;
		t0 = now_s(CLOCK_MONOTONIC);
		do {
			for (unsigned i = 0; i < np; i++)
				ec_decode(c, 64, rotate ? pats[i] : pats[0], strips);
			calls += np;
			t = now_s(CLOCK_MONOTONIC) - t0;
		} while (t < ms / 1000.0);
		printf("8+3  decode call, 64 B strips, 3 lost, %s: %.2f us\n",
		       rotate ? "165 patterns in turn (tables built)" :
				"one pattern (tables cached)", t * 1e6 / calls);
	}
}

int main(int argc, char **argv)
{
	unsigned reps = 7, ms = 150;
	cpu_set_t set;

	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--reps"))
			reps = (unsigned)atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--ms"))
			ms = (unsigned)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: sdfs-ecbench [--reps N] [--ms MS]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 64 || ms < 1) {
		fprintf(stderr, "sdfs-ecbench: --reps 1..64, --ms >= 1\n");
		return 2;
	}
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu(), &set);
	sched_setaffinity(0, sizeof(set), &set);

	print_machine();
	printf("MB/s of object data (k x strip bytes per call) per second of CPU time\n"
	       "(median, best) and of wall time (median), of %u runs of ~%u ms\n",
	       reps, ms);
	printf("code  strip     op        lost  cpu median  cpu best  wall median\n");
	if (bench_code(4, 2, reps, ms) || bench_code(8, 3, reps, ms)) {
		fprintf(stderr, "sdfs-ecbench: out of memory or a codec error\n");
		return 1;
	}
	bench_tables(ms * 2);
	return 0;
}
