/*
 * sdfs-bench.c - object write and read throughput of sdfs next to the
 * same workload on a local directory, in one run, with the ratios.
 *
 * For each object size and thread count ("group") it times, on both
 * sides: write, write+flush (durable) and read back. Every phase writes
 * fresh objects/files; a group removes everything it wrote before the
 * next one starts, and Ctrl-C still removes it. tools/bench/README.md
 * says what the rows mean and what they do not measure.
 *
 * Not here: starting a cluster (tools/bench/run), benchmarks through a
 * mount (fio, metadata, FUSE passthrough: they need mount.sdfs).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "libclient/sdfs.h"
#include "tools/bench/phase.h"
#include "tools/bench/report.h"
#include "tools/bench/target.h"
#include "tools/cli.h"

/* No object-id kinds exist yet (DESIGN.md §3); a high byte nothing else
 * uses keeps bench objects apart, and a per-run id below it keeps two
 * runs on one cluster apart. Each write phase takes the next range. */
#define BENCH_OID_KIND          0xbe00000000000000ull
#define BENCH_RUN_ID_SHIFT      40
#define BENCH_MAX_LIST          16
#define BENCH_MAX_THREADS       64
#define BENCH_MAX_OPS           (1u << 24)      /* bounds the latency array */
#define BENCH_WORKLOADS         3               /* write, write+flush, read */

static const char usage[] =
	"usage: sdfs-bench [--conf FILE] [--local-dir DIR] [--seconds S]\n"
	"                  [--threads LIST] [--sizes LIST] [--max-bytes SIZE] [--json]\n"
	"  --conf FILE       cluster config (default $SDFS_CONF, /etc/sdfs/sdfs.conf)\n"
	"  --local-dir DIR   where the local comparison writes; put it on the same\n"
	"                    filesystem as the block daemons' data (default $TMPDIR or /tmp)\n"
	"  --seconds S       time limit per phase (default 3)\n"
	"  --max-bytes SIZE  byte limit per phase (default 512M)\n"
	"  --threads LIST    concurrent writers/readers, e.g. 1,4 (default)\n"
	"  --sizes LIST      object sizes, e.g. 4k,4m (default)\n"
	"  --no-warmup       skip the unreported warm-up group\n"
	"  --json            JSON instead of the table\n";

struct bench_opts {
	const char *conf;
	const char *local_dir;
	double seconds;
	uint64_t max_bytes;
	unsigned threads[BENCH_MAX_LIST];
	size_t nthreads;
	uint64_t sizes[BENCH_MAX_LIST];
	size_t nsizes;
	int json;
	int warmup;             /* run one unreported group first */
};

struct bench {
	struct bench_opts o;
	struct sdfs *s;
	char work_dir[PATH_MAX];        /* private, inside --local-dir */
	int work_fd;
	uint64_t oid_next;              /* next unused object id */
	unsigned ngroups;
};

/* What one (size, threads) group wrote, so cleanup can remove it. */
struct group {
	uint64_t size;
	unsigned threads;
	uint64_t max_ops;
	char plain_name[32], synced_name[32];   /* local dirs in work_dir */
	struct target sdfs_plain, sdfs_flushed, local_plain, local_synced;
	uint64_t n_sdfs_plain, n_sdfs_flushed, n_local_plain, n_local_synced;
};

static void vfail(const char *fmt, va_list ap)
{
	fputs("sdfs-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* Print "sdfs-bench: <msg>"; returns -1. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(fmt, ap);
	va_end(ap);
	return -1;
}

/* The same for a bad option; returns 2, the usage exit status. */
static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(fmt, ap);
	va_end(ap);
	return 2;
}

static void log_stderr(int level, const char *msg, void *arg)
{
	(void)arg;
	fprintf(stderr, "sdfs-bench: libsdfs %s: %s\n",
		level <= LOG_ERR ? "error" : "warning", msg);
}

static void on_signal(int sig)
{
	(void)sig;
	phase_interrupt();
}

/* Ctrl-C ends the timed phases early but lets cleanup finish; a second
 * one kills (SA_RESETHAND), for when cleanup itself hangs. */
static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESETHAND };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* "1,4" -> {1, 4}; -1 on a bad element or too many. */
static int parse_list(const char *text, int sizes, uint64_t *out, size_t *n)
{
	char buf[256], *save;

	if (strlen(text) >= sizeof(buf))
		return -1;
	strcpy(buf, text);
	*n = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n == BENCH_MAX_LIST)
			return -1;
		if (sizes ? cli_parse_size(t, &out[*n]) : cli_parse_u64(t, &out[*n]))
			return -1;
		if (out[(*n)++] == 0)
			return -1;
	}
	return *n ? 0 : -1;
}

/* 0, or 2 (the usage exit status) after saying what is wrong. */
static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
	uint64_t list[BENCH_MAX_LIST];
	const char *v;

	*o = (struct bench_opts){ .seconds = 3, .max_bytes = 512u << 20,
				  .threads = { 1, 4 }, .nthreads = 2,
				  .sizes = { 4 << 10, 4 << 20 }, .nsizes = 2,
				  .warmup = 1 };
	o->local_dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	for (int i = 1; i < argc; i++) {
		if ((v = cli_opt(argc, argv, &i, "--conf"))) {
			o->conf = v;
		} else if ((v = cli_opt(argc, argv, &i, "--local-dir"))) {
			o->local_dir = v;
		} else if ((v = cli_opt(argc, argv, &i, "--seconds"))) {
			char *end;

			o->seconds = strtod(v, &end);
			if (*end || !(o->seconds > 0 && o->seconds <= 3600))
				return bad_usage("--seconds must be in (0, 3600]");
		} else if ((v = cli_opt(argc, argv, &i, "--max-bytes"))) {
			if (cli_parse_size(v, &o->max_bytes) || !o->max_bytes)
				return bad_usage("bad --max-bytes '%s'", v);
		} else if ((v = cli_opt(argc, argv, &i, "--threads"))) {
			if (parse_list(v, 0, list, &o->nthreads))
				return bad_usage("bad --threads '%s' (e.g. 1,4)", v);
			for (size_t k = 0; k < o->nthreads; k++) {
				if (list[k] > BENCH_MAX_THREADS)
					return bad_usage("--threads: at most %d", BENCH_MAX_THREADS);
				o->threads[k] = (unsigned)list[k];
			}
		} else if ((v = cli_opt(argc, argv, &i, "--sizes"))) {
			if (parse_list(v, 1, o->sizes, &o->nsizes))
				return bad_usage("bad --sizes '%s' (e.g. 4k,4m)", v);
		} else if (!strcmp(argv[i], "--no-warmup")) {
			o->warmup = 0;
		} else if (!strcmp(argv[i], "--json")) {
			o->json = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			exit(0);
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	return 0;
}

/* Connect and check the cluster can hold the sizes asked for. */
static int bench_connect(struct bench *b, struct report_info *info)
{
	struct sdfs_cluster_info ci;
	char err[512];
	int ret;

	if (sdfs_open(b->o.conf, &b->s, err, sizeof(err)) < 0)
		return fail("%s", err);
	ret = sdfs_cluster_info(b->s, &ci);
	if (ret < 0)
		return fail("cluster info: %s", ret == -ENOENT ? "cluster not formatted" :
			    strerror(-ret));
	for (size_t i = 0; i < b->o.nsizes; i++)
		if (b->o.sizes[i] > ci.obj_size)
			return fail("size %" PRIu64 " is over the cluster's object size %" PRIu32,
				    b->o.sizes[i], ci.obj_size);
	info->copies = ci.copies;
	info->nodes = ci.nodes;
	info->nodes_up = ci.nodes_up;
	b->oid_next = BENCH_OID_KIND |
		(uint64_t)((getpid() ^ time(NULL)) & 0xffff) << BENCH_RUN_ID_SHIFT;
	return 0;
}

/* A private directory inside --local-dir: we remove only what is ours. */
static int work_dir_open(struct bench *b, struct report_info *info)
{
	snprintf(b->work_dir, sizeof(b->work_dir), "%s/sdfs-bench.XXXXXX", b->o.local_dir);
	if (!mkdtemp(b->work_dir))
		return fail("%s: %s", b->o.local_dir, strerror(errno));
	b->work_fd = open(b->work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->work_fd < 0) {
		fail("%s: %s", b->work_dir, strerror(errno));
		rmdir(b->work_dir);
		return -1;
	}
	info->local_dir = b->o.local_dir;
	return 0;
}

static void bench_close(struct bench *b)
{
	close(b->work_fd);
	if (rmdir(b->work_dir) < 0)
		fail("%s: %s (left behind)", b->work_dir, strerror(errno));
	sdfs_close(b->s);
}

/* A fresh local directory for one phase's files. */
static int local_dir_new(struct bench *b, char *name, size_t len, const char *kind)
{
	snprintf(name, len, "g%u-%s", b->ngroups, kind);
	if (mkdirat(b->work_fd, name, 0755) < 0)
		return -errno;
	int fd = openat(b->work_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void group_init(struct bench *b, struct group *g, uint64_t size,
		       unsigned threads)
{
	uint64_t max_ops = b->o.max_bytes / size;

	memset(g, 0, sizeof(*g));
	g->size = size;
	g->threads = threads;
	g->max_ops = max_ops < 1 ? 1 : max_ops > BENCH_MAX_OPS ? BENCH_MAX_OPS : max_ops;
	g->sdfs_plain = (struct target){ .s = b->s, .oid_base = b->oid_next, .dir_fd = -1 };
	b->oid_next += g->max_ops;
	g->sdfs_flushed = (struct target){ .s = b->s, .oid_base = b->oid_next, .dir_fd = -1 };
	b->oid_next += g->max_ops;
	g->local_plain.dir_fd = -1;
	g->local_synced.dir_fd = -1;
	b->ngroups++;
}

/* One phase; a timed one (@seconds > 0) after sync(2), so the last
 * phase's dirty pages are not written back during it. Writes the op
 * count to *@done even on failure: cleanup needs it. */
static int measure(const struct group *g, const char *what, phase_op_fn op,
		   const struct target *t, struct phase_result *r, uint64_t *done,
		   double seconds)
{
	struct phase p = { .op = op, .ctx = t, .len = g->size, .threads = g->threads,
			   .max_ops = g->max_ops, .seconds = seconds };
	int ret;

	if (seconds > 0)
		sync();
	ret = phase_run(&p, r);
	if (done)
		*done = r->ops;
	if (ret < 0) {
		fail("%s (%" PRIu64 " bytes, %u threads), item %" PRIu64 ": %s", what,
		     g->size, g->threads, r->err_idx, strerror(-ret));
		return ret;
	}
	/* Cleanup phases (no time limit) run to the end despite Ctrl-C. */
	return seconds > 0 && phase_is_interrupted() ? -EINTR : 0;
}

/* Reads cycle over the items the write phase left. */
static struct target reader_of(const struct target *t, uint64_t written)
{
	struct target r = *t;

	r.items = written;
	return r;
}

static int run_group(struct bench *b, struct group *g, struct report_row rows[])
{
	double sec = b->o.seconds;
	struct target rd;
	int ret;

	for (int i = 0; i < BENCH_WORKLOADS; i++)
		rows[i] = (struct report_row){ .size = g->size, .threads = g->threads };
	rows[0].workload = "write";
	rows[1].workload = "write+flush";
	rows[2].workload = "read";

	ret = g->local_plain.dir_fd = local_dir_new(b, g->plain_name,
						    sizeof(g->plain_name), "plain");
	if (ret < 0) {
		fail("%s: %s", b->work_dir, strerror(-ret));
		return ret;
	}
	ret = g->local_synced.dir_fd = local_dir_new(b, g->synced_name,
						     sizeof(g->synced_name), "synced");
	if (ret < 0) {
		fail("%s: %s", b->work_dir, strerror(-ret));
		return ret;
	}

	if ((ret = measure(g, "sdfs write", target_sdfs_write, &g->sdfs_plain,
			   &rows[0].sdfs, &g->n_sdfs_plain, sec)))
		return ret;
	rd = reader_of(&g->sdfs_plain, g->n_sdfs_plain);
	if ((ret = measure(g, "sdfs read", target_sdfs_read, &rd, &rows[2].sdfs, NULL, sec)))
		return ret;
	if ((ret = measure(g, "local write", target_local_write, &g->local_plain,
			   &rows[0].local, &g->n_local_plain, sec)))
		return ret;
	rd = reader_of(&g->local_plain, g->n_local_plain);
	if ((ret = measure(g, "local read", target_local_read, &rd, &rows[2].local, NULL, sec)))
		return ret;
	if ((ret = measure(g, "sdfs write+flush", target_sdfs_write_flush,
			   &g->sdfs_flushed, &rows[1].sdfs, &g->n_sdfs_flushed, sec)))
		return ret;
	return measure(g, "local write+fdatasync", target_local_write_sync,
		       &g->local_synced, &rows[1].local, &g->n_local_synced, sec);
}

/* Remove @n items with untimed phases; failures are reported, not fatal. */
static void remove_items(const struct group *g, const char *what, phase_op_fn op,
			 const struct target *t, uint64_t n)
{
	struct group all = *g;
	struct phase_result r;

	if (n == 0)
		return;
	all.max_ops = n;
	if (measure(&all, what, op, t, &r, NULL, 0) < 0)
		fail("some of %s were left behind", what);
}

static void remove_local_dir(struct bench *b, int *fd, const char *name)
{
	if (*fd < 0)
		return;
	close(*fd);
	*fd = -1;
	if (unlinkat(b->work_fd, name, AT_REMOVEDIR) < 0)
		fail("%s/%s: %s", b->work_dir, name, strerror(errno));
}

static void group_cleanup(struct bench *b, struct group *g)
{
	remove_items(g, "sdfs objects (write)", target_sdfs_remove, &g->sdfs_plain,
		     g->n_sdfs_plain);
	remove_items(g, "sdfs objects (write+flush)", target_sdfs_remove,
		     &g->sdfs_flushed, g->n_sdfs_flushed);
	remove_items(g, "local files (write)", target_local_remove, &g->local_plain,
		     g->n_local_plain);
	remove_items(g, "local files (write+fdatasync)", target_local_remove,
		     &g->local_synced, g->n_local_synced);
	remove_local_dir(b, &g->local_plain.dir_fd, g->plain_name);
	remove_local_dir(b, &g->local_synced.dir_fd, g->synced_name);
}

static int run_and_clean(struct bench *b, uint64_t size, unsigned threads,
			 struct report_row rows[])
{
	struct group g;
	int ret;

	group_init(b, &g, size, threads);
	ret = run_group(b, &g, rows);
	group_cleanup(b, &g);
	return ret;
}

/*
 * One group at the largest size and thread count, results dropped. It
 * opens the daemons' connections and files, and it touches memory: on a
 * VM whose host backs guest memory lazily, a page the guest never used
 * faults at 0.4 GB/s against 2 GB/s for a reused one (measured here),
 * which made the first group look several times slower on both sides.
 */
static int warm_up(struct bench *b)
{
	struct report_row rows[BENCH_WORKLOADS];
	uint64_t size = 0;
	unsigned threads = 0;

	for (size_t i = 0; i < b->o.nsizes; i++)
		size = b->o.sizes[i] > size ? b->o.sizes[i] : size;
	for (size_t i = 0; i < b->o.nthreads; i++)
		threads = b->o.threads[i] > threads ? b->o.threads[i] : threads;
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "sdfs-bench: warm-up group, %" PRIu64 " bytes x%u\n",
			size, threads);
	return run_and_clean(b, size, threads, rows);
}

/* All groups, in order; stops at the first failure. Returns rows done. */
static size_t run_all(struct bench *b, struct report_row *rows, int *ret)
{
	size_t n = 0;

	*ret = b->o.warmup ? warm_up(b) : 0;
	for (size_t i = 0; i < b->o.nsizes && !*ret; i++) {
		for (size_t j = 0; j < b->o.nthreads && !*ret; j++) {
			*ret = run_and_clean(b, b->o.sizes[i], b->o.threads[j], &rows[n]);
			if (*ret)
				break;
			for (int k = 0; k < BENCH_WORKLOADS; k++)
				if (isatty(STDERR_FILENO) && !b->o.json)
					report_progress(stderr, &rows[n + k]);
			n += BENCH_WORKLOADS;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	static struct report_row rows[BENCH_MAX_LIST * BENCH_MAX_LIST * BENCH_WORKLOADS];
	struct bench b = { .work_fd = -1 };
	struct report_info info = { 0 };
	size_t n;
	int ret;

	if ((ret = parse_opts(argc, argv, &b.o)))
		return ret;
	info.seconds = b.o.seconds;
	info.max_bytes = b.o.max_bytes;
	info.warmup = b.o.warmup;
	sdfs_set_log(log_stderr, NULL, LOG_WARNING);
	catch_signals();
	if (bench_connect(&b, &info) < 0 || work_dir_open(&b, &info) < 0) {
		sdfs_close(b.s);
		return 1;
	}
	n = run_all(&b, rows, &ret);
	bench_close(&b);
	if (n && b.o.json)
		report_json(stdout, &info, rows, n);
	else if (n)
		report_table(stdout, &info, rows, n);
	if (ret == -EINTR)
		fail("interrupted%s", n ? "; the results are the groups that finished" : "");
	return ret == -EINTR ? 130 : ret ? 1 : 0;
}
