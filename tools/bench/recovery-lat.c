/*
 * recovery-lat.c - the client side of tools/bench/recovery: fill a
 * cluster with whole objects, time 4 KiB writes one at a time, and
 * report each node's recovery counters, all through libsdfs.
 *
 *   recovery-lat fill  [--conf F] --objects N [--threads T] [--oid-base OID]
 *   recovery-lat write [--conf F] --objects N --seconds S [--oid-base OID]
 *                      [--wait-stdin]
 *   recovery-lat nodes [--conf F]
 *
 * fill writes objects OID .. OID+N-1 whole (the cluster's object size)
 * from T threads sharing one handle. write overwrites 4 KiB at a random
 * 4 KiB-aligned offset of a random one of those objects, one write at a
 * time (queue depth 1), until S seconds pass or SIGUSR1 arrives, and
 * reports ops/s, p50/p99/max and how many writes took 10 ms or more
 * (and their total time). With --wait-stdin it connects and warms up
 * first, then starts the clock when a line (or EOF) arrives on stdin.
 * nodes prints one line for the cluster's health and one per node of
 * the map.
 *
 * Output is one "key=value ..." line per record on stdout, for the
 * script to read; errors go to stderr. Not here: starting or breaking
 * the cluster (tools/bench/recovery does that).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "libclient/sdfs.h"
#include "tools/bench/phase.h"
#include "tools/bench/target.h"
#include "tools/cli.h"

#define DEFAULT_OID_BASE        0xbe7ec00000000000ull   /* "bench rec" */
#define WRITE_LEN               4096u
#define WARMUP_OPS              32
#define MAX_SAMPLES             (1u << 24)
#define SLOW_NS                 10000000        /* a "slow" write: >= 10 ms */

static const char usage[] =
	"usage: recovery-lat fill  [--conf F] --objects N [--threads T] [--oid-base OID]\n"
	"       recovery-lat write [--conf F] --objects N --seconds S [--oid-base OID]\n"
	"                          [--wait-stdin]\n"
	"       recovery-lat nodes [--conf F]\n";

struct opts {
	const char *conf;
	uint64_t objects;
	uint64_t threads;
	uint64_t oid_base;
	double seconds;
	int wait_stdin;
};

static volatile sig_atomic_t stop_now;

static void on_stop(int sig)
{
	(void)sig;
	stop_now = 1;
	phase_interrupt();
}

static void log_stderr(int level, const char *msg, void *arg)
{
	(void)arg;
	fprintf(stderr, "recovery-lat: libsdfs %s: %s\n",
		level <= LOG_ERR ? "error" : "warning", msg);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	const char *v;

	*o = (struct opts){ .threads = 4, .oid_base = DEFAULT_OID_BASE };
	for (int i = 2; i < argc; i++) {
		if ((v = cli_opt(argc, argv, &i, "--conf"))) {
			o->conf = v;
		} else if ((v = cli_opt(argc, argv, &i, "--objects"))) {
			if (cli_parse_u64(v, &o->objects) || !o->objects ||
			    o->objects > (1u << 24))
				return fprintf(stderr, "recovery-lat: bad --objects '%s'\n", v), 2;
		} else if ((v = cli_opt(argc, argv, &i, "--threads"))) {
			if (cli_parse_u64(v, &o->threads) || !o->threads || o->threads > 64)
				return fprintf(stderr, "recovery-lat: --threads must be 1..64\n"), 2;
		} else if ((v = cli_opt(argc, argv, &i, "--oid-base"))) {
			if (cli_parse_oid(v, &o->oid_base))
				return fprintf(stderr, "recovery-lat: bad --oid-base '%s'\n", v), 2;
		} else if ((v = cli_opt(argc, argv, &i, "--seconds"))) {
			char *end;

			o->seconds = strtod(v, &end);
			if (*end || !(o->seconds > 0 && o->seconds <= 86400))
				return fprintf(stderr, "recovery-lat: bad --seconds '%s'\n", v), 2;
		} else if (!strcmp(argv[i], "--wait-stdin")) {
			o->wait_stdin = 1;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	return 0;
}

static struct sdfs *open_cluster(const struct opts *o)
{
	struct sdfs *s;
	char err[512];

	if (sdfs_open(o->conf, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "recovery-lat: %s\n", err);
		return NULL;
	}
	return s;
}

/* Whole objects from several threads: the phase machinery of sdfs-bench. */
static int cmd_fill(const struct opts *o)
{
	struct sdfs *s = open_cluster(o);
	struct phase_result r;
	uint32_t size;
	int ret;

	if (!s)
		return 1;
	size = sdfs_obj_size(s);
	if (!size) {
		sdfs_close(s);
		fprintf(stderr, "recovery-lat: cluster not formatted\n");
		return 1;
	}
	struct target t = { .s = s, .oid_base = o->oid_base, .dir_fd = -1 };
	struct phase p = { .op = target_sdfs_write, .ctx = &t, .len = size,
			   .threads = (unsigned)o->threads, .max_ops = o->objects };
	ret = phase_run(&p, &r);
	sdfs_close(s);
	if (ret < 0) {
		fprintf(stderr, "recovery-lat: fill: object %" PRIu64 ": %s\n",
			r.err_idx, strerror(-ret));
		return 1;
	}
	printf("objects=%" PRIu64 " obj_size=%" PRIu32 " bytes=%" PRIu64
	       " seconds=%.3f p50_ms=%.2f p99_ms=%.2f\n", r.ops, size,
	       r.ops * (uint64_t)size, r.seconds, r.p50_ms, r.p99_ms);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* xorshift64*: cheap and good enough to spread offsets. */
static uint64_t rnd(uint64_t *st)
{
	*st ^= *st >> 12;
	*st ^= *st << 25;
	*st ^= *st >> 27;
	return *st * 2685821657736338717ull;
}

static int one_write(struct sdfs *s, const struct opts *o, uint32_t size,
		     uint64_t *st, uint8_t *buf)
{
	uint64_t obj = rnd(st) % o->objects;
	uint64_t off = (rnd(st) % (size / WRITE_LEN)) * WRITE_LEN;

	memcpy(buf, &off, sizeof(off));         /* every write's bytes differ */
	return sdfs_obj_write(s, o->oid_base + obj, buf, WRITE_LEN, off);
}

static int cmd_write(const struct opts *o)
{
	uint64_t *lat, st = (uint64_t)now_ns() | 1, ops = 0, errors = 0;
	uint8_t buf[WRITE_LEN];
	int first_err = 0, ret;
	struct sdfs *s;
	uint32_t size;

	if (!o->seconds) {
		fprintf(stderr, "recovery-lat: write needs --seconds\n");
		return 2;
	}
	lat = malloc(MAX_SAMPLES * sizeof(*lat));
	if (!lat || !(s = open_cluster(o))) {
		free(lat);
		return 1;
	}
	size = sdfs_obj_size(s);
	if (size < WRITE_LEN) {
		fprintf(stderr, "recovery-lat: cluster not formatted\n");
		goto fail;
	}
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd(&st);
	/* Open the connections to every node before the clock starts. */
	for (int i = 0; i < WARMUP_OPS; i++) {
		ret = one_write(s, o, size, &st, buf);
		if (ret < 0) {
			fprintf(stderr, "recovery-lat: warm-up write: %s\n", strerror(-ret));
			goto fail;
		}
	}
	if (o->wait_stdin) {
		char line[64];

		if (!fgets(line, sizeof(line), stdin) && ferror(stdin)) {
			fprintf(stderr, "recovery-lat: stdin: %s\n", strerror(errno));
			goto fail;
		}
	}
	int64_t start = now_ns(), end = start + (int64_t)(o->seconds * 1e9), t;
	while (!stop_now && (t = now_ns()) < end && ops < MAX_SAMPLES) {
		ret = one_write(s, o, size, &st, buf);
		int64_t d = now_ns() - t;

		if (ret < 0) {
			if (!errors++)
				first_err = ret;
			continue;
		}
		lat[ops++] = (uint64_t)d;
	}
	double secs = (double)(now_ns() - start) / 1e9, slow_s = 0;
	uint64_t slow = 0;
	qsort(lat, ops, sizeof(*lat), cmp_u64);
	for (uint64_t i = ops; i > 0 && lat[i - 1] >= SLOW_NS; i--) {
		slow++;
		slow_s += lat[i - 1] / 1e9;
	}
	printf("ops=%" PRIu64 " seconds=%.3f ops_s=%.1f p50_ms=%.3f p99_ms=%.3f"
	       " max_ms=%.3f slow=%" PRIu64 " slow_s=%.3f errors=%" PRIu64 "\n", ops,
	       secs, secs > 0 ? ops / secs : 0, ops ? lat[ops / 2] / 1e6 : 0,
	       ops ? lat[(ops * 99) / 100] / 1e6 : 0, ops ? lat[ops - 1] / 1e6 : 0,
	       slow, slow_s, errors);
	if (errors)
		fprintf(stderr, "recovery-lat: %" PRIu64 " writes failed, the first with: %s\n",
			errors, strerror(-first_err));
	sdfs_close(s);
	free(lat);
	return 0;
fail:
	sdfs_close(s);
	free(lat);
	return 1;
}

static int cmd_nodes(const struct opts *o)
{
	struct sdfs_cluster_info ci;
	struct sdfs_node_status *n;
	struct sdfs_health h;
	struct sdfs *s = open_cluster(o);
	size_t cnt;
	int ret;

	if (!s)
		return 1;
	if ((ret = sdfs_cluster_info(s, &ci)) || (ret = sdfs_cluster_health(s, &h)) ||
	    (ret = sdfs_node_list(s, &n, &cnt))) {
		fprintf(stderr, "recovery-lat: %s\n", strerror(-ret));
		sdfs_close(s);
		return 1;
	}
	printf("cluster epoch=%" PRIu64 " healthy=%d up=%u down=%u out=%u clean=%u"
	       " moved=%" PRIu64 " done_bytes=%" PRIu64 " todo_bytes=%" PRIu64 "\n",
	       h.epoch, h.healthy, h.nodes_up, h.nodes_down, h.nodes_out,
	       h.nodes_clean, h.moved_objs, h.done_bytes, h.todo_bytes);
	for (size_t i = 0; i < cnt; i++)
		printf("node id=%" PRIu32 " state=%s reachable=%d epoch=%" PRIu64
		       " clean=%" PRIu64 " objects=%" PRIu64 " used=%" PRIu64
		       " moved=%" PRIu64 " done_bytes=%" PRIu64 " elapsed_ms=%" PRIu64 "\n",
		       n[i].node_id, n[i].state, n[i].reachable, n[i].epoch,
		       n[i].clean_epoch, n[i].objects, n[i].used_bytes, n[i].moved_objs,
		       n[i].rec_done_bytes, n[i].rec_elapsed_ms);
	free(n);
	sdfs_close(s);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_stop };
	struct opts o;
	int ret;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if ((ret = parse_opts(argc, argv, &o)))
		return ret;
	sigemptyset(&sa.sa_mask);
	/* SIGUSR1 ends a write run early; Ctrl-C kills as usual, so that
	 * the script sees it and stops too. */
	sigaction(SIGUSR1, &sa, NULL);
	sdfs_set_log(log_stderr, NULL, LOG_WARNING);
	if (!strcmp(argv[1], "fill"))
		return o.objects ? cmd_fill(&o) : (fputs(usage, stderr), 2);
	if (!strcmp(argv[1], "write"))
		return o.objects ? cmd_write(&o) : (fputs(usage, stderr), 2);
	if (!strcmp(argv[1], "nodes"))
		return cmd_nodes(&o);
	fputs(usage, stderr);
	return 2;
}
