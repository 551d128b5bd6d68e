/*
 * mdbench.c - sdfs-mdbench: metadata operations per second through
 * libsdfs's namespace calls, and the client side of tools/bench/mds-failover.
 *
 * For each thread count and directory mode ("group") it runs, in order:
 * create (sdfs_ns_mknod) of --files files, getattr of each by inode,
 * lookup of each by name, rename of each within its directory, readdir
 * of the directories without and with attributes, and unlink of each.
 * In "private" mode each thread works in a directory of its own; in
 * "shared" mode all threads work in one, where the mds serializes
 * mutations. Each thread owns a fixed slice of the files, so what a
 * phase touched is known exactly, and ops/s is the files over the wall
 * time of the slowest thread. Every group works under a directory of its
 * own in /mdbench.PID-N, which is removed at the end, also after
 * Ctrl-C (a second one kills without cleanup).
 *
 * --failover-probe creates and unlinks files one at a time and prints,
 * for every call that fails or takes longer than --slow-ms, the wall-
 * clock time of the last success before it and of the first success
 * after it: tools/bench/mds-failover reads those lines.
 *
 * Not here: starting or breaking a cluster (tools/bench/mds-failover),
 * the FUSE path (mount.sdfs). tools/bench/README.md explains the numbers.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "libclient/sdfs.h"
#include "tools/cli.h"

#define MD_ROOT_INO             1u
#define MD_MAX_LIST             16
#define MD_MAX_THREADS          64
#define MD_MAX_FILES            (1u << 22)
#define MD_NAME_LEN             32

enum md_phase {
	PH_CREATE, PH_GETATTR, PH_LOOKUP, PH_RENAME, PH_READDIR, PH_READDIR_PLUS,
	PH_UNLINK, PH_COUNT
};

static const char *const phase_names[PH_COUNT] = {
	[PH_CREATE] = "create", [PH_GETATTR] = "getattr", [PH_LOOKUP] = "lookup",
	[PH_RENAME] = "rename", [PH_READDIR] = "readdir",
	[PH_READDIR_PLUS] = "readdir+", [PH_UNLINK] = "unlink",
};

static const char usage[] =
	"usage: sdfs-mdbench [--conf FILE] [--files N] [--threads LIST] [--modes LIST]\n"
	"                    [--handles per-thread|shared] [--readdir-rounds R] [--json]\n"
	"       sdfs-mdbench --failover-probe [--conf FILE] [--slow-ms MS]\n"
	"  --conf FILE        cluster config (default $SDFS_CONF, /etc/sdfs/sdfs.conf)\n"
	"  --files N          files per group, split over the threads (default 10000);\n"
	"                     in shared mode the one directory holds all N\n"
	"  --threads LIST     client threads, e.g. 1,8 (default)\n"
	"  --modes LIST       private,shared (default both): a directory per thread,\n"
	"                     or one for all\n"
	"  --handles H        per-thread: a libsdfs handle per thread (default);\n"
	"                     shared: one handle for all threads\n"
	"  --readdir-rounds R each thread lists its directory until it has read\n"
	"                     R x N entries (default 10)\n"
	"  --json             JSON instead of the table\n"
	"  --failover-probe   create+unlink one file at a time until SIGTERM/SIGINT;\n"
	"                     print a 'gap' line for every call that failed or took\n"
	"                     over --slow-ms (default 100)\n";

struct md_opts {
	const char *conf;
	uint64_t files;
	unsigned threads[MD_MAX_LIST];
	size_t nthreads;
	int modes[2];                   /* private, shared: run it? */
	int shared_handle;
	uint64_t readdir_rounds;
	int json;
	int probe;
	uint64_t slow_ms;
};

/* One phase of one group: what the table shows. */
struct md_cell {
	int ran;
	uint64_t ops;                   /* readdir rows: entries listed */
	uint64_t calls;                 /* calls timed (readdir: listings) */
	double seconds;
	double p50_ms, p99_ms;          /* per call (readdir: per listing) */
	uint64_t blk_reqs;              /* block daemon requests meanwhile */
};

struct md_group {
	unsigned threads;
	int shared_dir;
	struct md_cell cell[PH_COUNT];
};

struct mdbench {
	struct md_opts o;
	struct sdfs *s;                 /* the main thread's; shared mode's */
	struct sdfs *handles[MD_MAX_THREADS];
	uint64_t root;                  /* /mdbench.PID-N */
	char root_name[64];
	unsigned ngroups;
	unsigned copies, nodes_up;
	uint64_t blk_self;              /* requests one blockd_requests() adds */
};

/* One phase on many threads: a start gate and the first error. */
struct md_run {
	enum md_phase ph;
	uint64_t *ino;                  /* [files]: item -> inode, set by create */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ready;                 /* workers past their untimed call */
	bool go;
	atomic_int err;
};

struct md_worker {
	struct md_run *run;
	struct sdfs *s;
	uint64_t dir;                   /* the directory it works in */
	uint64_t dir_entries;           /* files that directory holds */
	uint64_t first, n;              /* its items: first .. first+n-1 */
	uint64_t *lat_ns;               /* [calls] */
	uint64_t cap;                   /* lat_ns slots */
	uint64_t calls, entries;
	int err;
	uint64_t err_item;
	pthread_t tid;
};

static atomic_int interrupted;

static void vfail(const char *fmt, va_list ap)
{
	fputs("sdfs-mdbench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* Print "sdfs-mdbench: <msg>"; returns -1. */
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
	fprintf(stderr, "sdfs-mdbench: libsdfs %s: %s\n",
		level <= LOG_ERR ? "error" : "warning", msg);
}

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&interrupted, 1);
}

/* Ctrl-C (or SIGTERM) ends the phases early but lets cleanup finish; a
 * second one kills (SA_RESETHAND), for when cleanup itself hangs. */
static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESETHAND };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "1,8" -> {1, 8}; -1 on a bad or zero element or too many. */
static int parse_threads(const char *text, struct md_opts *o)
{
	char buf[256], *save;
	uint64_t v;

	if (strlen(text) >= sizeof(buf))
		return -1;
	strcpy(buf, text);
	o->nthreads = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (o->nthreads == MD_MAX_LIST || cli_parse_u64(t, &v) || !v ||
		    v > MD_MAX_THREADS)
			return -1;
		o->threads[o->nthreads++] = (unsigned)v;
	}
	return o->nthreads ? 0 : -1;
}

static int parse_modes(const char *text, struct md_opts *o)
{
	char buf[64], *save;

	if (strlen(text) >= sizeof(buf))
		return -1;
	strcpy(buf, text);
	o->modes[0] = o->modes[1] = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "private"))
			o->modes[0] = 1;
		else if (!strcmp(t, "shared"))
			o->modes[1] = 1;
		else
			return -1;
	}
	return o->modes[0] || o->modes[1] ? 0 : -1;
}

/* 0, or 2 (the usage exit status) after saying what is wrong. */
static int parse_opts(int argc, char **argv, struct md_opts *o)
{
	const char *v;

	*o = (struct md_opts){ .files = 10000, .threads = { 1, 8 }, .nthreads = 2,
			       .modes = { 1, 1 }, .readdir_rounds = 10, .slow_ms = 100 };
	for (int i = 1; i < argc; i++) {
		if ((v = cli_opt(argc, argv, &i, "--conf"))) {
			o->conf = v;
		} else if ((v = cli_opt(argc, argv, &i, "--files"))) {
			if (cli_parse_u64(v, &o->files) || !o->files || o->files > MD_MAX_FILES)
				return bad_usage("--files must be 1..%u", MD_MAX_FILES);
		} else if ((v = cli_opt(argc, argv, &i, "--threads"))) {
			if (parse_threads(v, o))
				return bad_usage("bad --threads '%s' (e.g. 1,8; at most %d)",
						 v, MD_MAX_THREADS);
		} else if ((v = cli_opt(argc, argv, &i, "--modes"))) {
			if (parse_modes(v, o))
				return bad_usage("bad --modes '%s' (private,shared)", v);
		} else if ((v = cli_opt(argc, argv, &i, "--handles"))) {
			if (strcmp(v, "per-thread") && strcmp(v, "shared"))
				return bad_usage("--handles is per-thread or shared");
			o->shared_handle = !strcmp(v, "shared");
		} else if ((v = cli_opt(argc, argv, &i, "--readdir-rounds"))) {
			if (cli_parse_u64(v, &o->readdir_rounds) || !o->readdir_rounds ||
			    o->readdir_rounds > 1000)
				return bad_usage("--readdir-rounds must be 1..1000");
		} else if ((v = cli_opt(argc, argv, &i, "--slow-ms"))) {
			if (cli_parse_u64(v, &o->slow_ms) || !o->slow_ms || o->slow_ms > 60000)
				return bad_usage("--slow-ms must be 1..60000");
		} else if (!strcmp(argv[i], "--failover-probe")) {
			o->probe = 1;
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
	for (size_t i = 0; i < o->nthreads; i++)
		if (o->threads[i] > o->files)
			return bad_usage("--files %" PRIu64 " is fewer than %u threads",
					 o->files, o->threads[i]);
	return 0;
}

static int open_handle(const struct md_opts *o, struct sdfs **s)
{
	char err[512];

	if (sdfs_open(o->conf, s, err, sizeof(err)) < 0)
		return fail("%s", err);
	return 0;
}

/* ---- removing what a run made, whatever state it was left in ---- */

struct name_list {
	char (*name)[MD_NAME_LEN + 1];
	uint32_t *type;
	size_t n, cap;
	int err;
};

static int collect_name(void *arg, const char *name, uint64_t ino, uint32_t type,
			uint64_t cookie, const struct sdfs_stat *st)
{
	struct name_list *l = arg;

	(void)ino, (void)cookie, (void)st;
	if (strlen(name) > MD_NAME_LEN)
		return 0;               /* not one of ours: leave it */
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		void *nm = realloc(l->name, cap * sizeof(*l->name));

		if (nm)
			l->name = nm;
		void *ty = nm ? realloc(l->type, cap * sizeof(*l->type)) : NULL;
		if (!ty) {
			l->err = -ENOMEM;
			return 1;
		}
		l->type = ty;
		l->cap = cap;
	}
	strcpy(l->name[l->n], name);
	l->type[l->n++] = type;
	return 0;
}

/* rm -r @parent/@name; what cannot be removed is reported, not fatal. */
static int tree_remove(struct sdfs *s, uint64_t parent, const char *name)
{
	struct name_list l = { 0 };
	struct sdfs_stat st;
	int ret = sdfs_ns_lookup(s, parent, name, &st);

	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	if (!S_ISDIR(st.mode))
		return sdfs_ns_unlink(s, parent, name);
	ret = sdfs_ns_readdir(s, st.ino, 0, 0, collect_name, &l);
	if (!ret)
		ret = l.err;
	for (size_t i = 0; i < l.n && !ret; i++)
		ret = S_ISDIR(l.type[i]) ? tree_remove(s, st.ino, l.name[i])
					 : sdfs_ns_unlink(s, st.ino, l.name[i]);
	free(l.name);
	free(l.type);
	if (!ret)
		ret = sdfs_ns_rmdir(s, parent, name);
	return ret == -ENOENT ? 0 : ret;
}

/* ---- one phase on the group's threads ---- */

static void item_name(char *buf, size_t len, char kind, uint64_t item)
{
	snprintf(buf, len, "%c%" PRIu64, kind, item);
}

static int count_entry(void *arg, const char *name, uint64_t ino, uint32_t type,
		       uint64_t cookie, const struct sdfs_stat *st)
{
	uint64_t *n = arg;

	(void)name, (void)cookie;
	/* With attributes, a wrong inode is an error, not a fast result. */
	if (st && (st->ino != ino || (st->mode & S_IFMT) != type))
		return 1;
	(*n)++;
	return 0;
}

/* One call of phase @ph on item @item (readdir: one whole listing). */
static int md_op(struct md_worker *w, uint64_t item)
{
	struct md_run *run = w->run;
	struct sdfs_stat st;
	char name[MD_NAME_LEN], name2[MD_NAME_LEN];
	uint64_t n = 0;
	int ret;

	item_name(name, sizeof(name), 'f', item);
	switch (run->ph) {
	case PH_CREATE:
		ret = sdfs_ns_mknod(w->s, w->dir, name, S_IFREG | 0644, 0, getuid(),
				    getgid(), &st);
		if (!ret && (!st.ino || !S_ISREG(st.mode)))
			ret = -EPROTO;
		if (!ret)
			run->ino[item] = st.ino;
		return ret;
	case PH_GETATTR:
		ret = sdfs_ns_getattr(w->s, run->ino[item], &st);
		return !ret && (st.ino != run->ino[item] || !S_ISREG(st.mode)) ? -EPROTO : ret;
	case PH_LOOKUP:
		ret = sdfs_ns_lookup(w->s, w->dir, name, &st);
		return !ret && st.ino != run->ino[item] ? -EPROTO : ret;
	case PH_RENAME:
		item_name(name2, sizeof(name2), 'r', item);
		return sdfs_ns_rename(w->s, w->dir, name, w->dir, name2, 0);
	case PH_READDIR:
	case PH_READDIR_PLUS:
		ret = sdfs_ns_readdir(w->s, w->dir, 0, run->ph == PH_READDIR_PLUS,
				      count_entry, &n);
		w->entries += n;
		return !ret && n != w->dir_entries ? -EPROTO : ret;
	case PH_UNLINK:
		item_name(name2, sizeof(name2), 'r', item);
		return sdfs_ns_unlink(w->s, w->dir, name2);
	default:
		return -EINVAL;
	}
}

static int phase_is_readdir(enum md_phase ph)
{
	return ph == PH_READDIR || ph == PH_READDIR_PLUS;
}

static void *worker_main(void *arg)
{
	struct md_worker *w = arg;
	struct md_run *run = w->run;
	uint64_t calls = w->n;

	/* Untimed: opens this thread's connection to the active mds. */
	struct sdfs_stat st;
	int ret = sdfs_ns_getattr(w->s, w->dir, &st);

	if (ret)
		atomic_store(&run->err, ret);
	pthread_mutex_lock(&run->lock);
	run->ready++;
	pthread_cond_broadcast(&run->cond);
	while (!run->go)
		pthread_cond_wait(&run->cond, &run->lock);
	pthread_mutex_unlock(&run->lock);
	if (phase_is_readdir(run->ph))
		calls = w->cap;
	for (uint64_t i = 0; i < calls; i++) {
		if (atomic_load(&run->err) || atomic_load(&interrupted))
			break;
		uint64_t item = w->first + i;
		int64_t t0 = now_ns();

		ret = md_op(w, item);
		w->lat_ns[w->calls++] = (uint64_t)(now_ns() - t0);
		if (ret) {
			int none = 0;

			w->err = ret;
			w->err_item = item;
			atomic_compare_exchange_strong(&run->err, &none, ret);
			break;
		}
	}
	return NULL;
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
	return (double)v[(rank < 1 ? 1 : rank) - 1] / 1e6;
}

/* Requests the block daemons served so far (NODE_INFO counters). */
static uint64_t blockd_requests(struct sdfs *s)
{
	struct sdfs_node_status *nodes;
	uint64_t sum = 0;
	size_t n;

	if (sdfs_node_list(s, &nodes, &n))
		return 0;
	for (size_t i = 0; i < n; i++)
		sum += nodes[i].requests;
	free(nodes);
	return sum;
}

/* Run @ph on workers @w[0..nw) (their dirs and items set) into @c. */
static int run_phase(struct mdbench *b, enum md_phase ph, struct md_worker *w,
		     unsigned nw, uint64_t *ino, struct md_cell *c)
{
	struct md_run run = { .ph = ph, .ino = ino,
			      .lock = PTHREAD_MUTEX_INITIALIZER,
			      .cond = PTHREAD_COND_INITIALIZER };
	uint64_t total = 0, *all;
	unsigned started = 0;
	int ret = 0;

	for (unsigned i = 0; i < nw; i++) {
		w[i].run = &run;
		w[i].calls = w[i].entries = 0;
		w[i].err = 0;
		w[i].cap = w[i].n;
		if (phase_is_readdir(ph)) {
			/* Enough listings to read readdir_rounds x files entries. */
			uint64_t want = b->o.readdir_rounds * b->o.files;

			w[i].cap = (want + w[i].dir_entries - 1) / w[i].dir_entries;
		}
		w[i].lat_ns = calloc(w[i].cap, sizeof(*w[i].lat_ns));
		if (!w[i].lat_ns)
			ret = -ENOMEM;
	}
	uint64_t req0 = ret ? 0 : blockd_requests(b->s);
	for (; !ret && started < nw; started++)
		if (pthread_create(&w[started].tid, NULL, worker_main, &w[started])) {
			atomic_store(&run.err, -EAGAIN);
			ret = -EAGAIN;
			break;
		}
	/* The clock starts once every thread's untimed call is done. */
	pthread_mutex_lock(&run.lock);
	while (run.ready < started)
		pthread_cond_wait(&run.cond, &run.lock);
	int64_t t0 = now_ns();
	run.go = true;
	pthread_cond_broadcast(&run.cond);
	pthread_mutex_unlock(&run.lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(w[i].tid, NULL);
	c->seconds = (double)(now_ns() - t0) / 1e9;
	c->blk_reqs = blockd_requests(b->s) - req0;
	c->blk_reqs -= c->blk_reqs < b->blk_self ? c->blk_reqs : b->blk_self;

	for (unsigned i = 0; i < nw; i++)
		total += w[i].calls;
	all = ret ? NULL : malloc((total ? total : 1) * sizeof(*all));
	c->calls = c->ops = 0;
	for (unsigned i = 0; i < nw; i++) {
		if (all)
			memcpy(all + c->calls, w[i].lat_ns, w[i].calls * sizeof(*all));
		c->calls += w[i].calls;
		c->ops += phase_is_readdir(ph) ? w[i].entries : w[i].calls;
		free(w[i].lat_ns);
		w[i].lat_ns = NULL;
		if (w[i].err && !ret) {
			ret = w[i].err;
			fail("%s, thread %u, file %" PRIu64 ": %s", phase_names[ph], i,
			     w[i].err_item, ret == -EPROTO ? "wrong answer (inode, type or "
			     "entry count)" : strerror(-ret));
		}
	}
	if (!ret && atomic_load(&run.err))
		ret = atomic_load(&run.err);    /* an untimed call failed */
	if (all) {
		qsort(all, c->calls, sizeof(*all), cmp_u64);
		c->p50_ms = percentile_ms(all, c->calls, 0.50);
		c->p99_ms = percentile_ms(all, c->calls, 0.99);
		free(all);
	}
	c->ran = 1;
	if (!ret && atomic_load(&interrupted))
		ret = -EINTR;
	return ret;
}

/* ---- a group: one thread count in one mode ---- */

static int make_dir(struct sdfs *s, uint64_t parent, const char *name, uint64_t *ino)
{
	struct sdfs_stat st;
	int ret = sdfs_ns_mkdir(s, parent, name, 0755, getuid(), getgid(), &st);

	if (ret)
		return fail("mkdir %s: %s", name, strerror(-ret));
	*ino = st.ino;
	return 0;
}

static int run_group(struct mdbench *b, struct md_group *g, uint64_t *ino,
		     const char *gname)
{
	struct md_worker w[MD_MAX_THREADS];
	uint64_t gdir;
	unsigned n = g->threads;
	int ret;

	if (make_dir(b->s, b->root, gname, &gdir))
		return -EIO;
	memset(w, 0, sizeof(w));
	for (unsigned i = 0; i < n; i++) {
		w[i].s = b->o.shared_handle ? b->s : b->handles[i];
		w[i].first = b->o.files * i / n;
		w[i].n = b->o.files * (i + 1) / n - w[i].first;
		w[i].dir = gdir;
		w[i].dir_entries = b->o.files;
		if (!g->shared_dir) {
			char dname[MD_NAME_LEN];

			snprintf(dname, sizeof(dname), "t%u", i);
			if (make_dir(b->s, gdir, dname, &w[i].dir))
				return -EIO;
			w[i].dir_entries = w[i].n;
		}
	}
	for (int ph = 0; ph < PH_COUNT; ph++) {
		ret = run_phase(b, (enum md_phase)ph, w, n, ino, &g->cell[ph]);
		if (ret)
			return ret;
		if (isatty(STDERR_FILENO) && !b->o.json)
			fprintf(stderr, "sdfs-mdbench: x%u %s %s: %.0f %s/s\n", n,
				g->shared_dir ? "shared" : "private", phase_names[ph],
				g->cell[ph].seconds > 0 ? g->cell[ph].ops / g->cell[ph].seconds : 0,
				phase_is_readdir((enum md_phase)ph) ? "entries" : "ops");
	}
	return 0;
}

static int run_and_clean(struct mdbench *b, struct md_group *g, uint64_t *ino)
{
	char gname[MD_NAME_LEN];
	int ret, cret;

	snprintf(gname, sizeof(gname), "g%u-x%u-%s", b->ngroups++, g->threads,
		 g->shared_dir ? "shared" : "private");
	ret = run_group(b, g, ino, gname);
	cret = tree_remove(b->s, b->root, gname);
	if (cret)
		fail("removing %s/%s: %s (left behind)", b->root_name, gname,
		     strerror(-cret));
	return ret;
}

/* ---- output ---- */

static double cell_rate(const struct md_cell *c)
{
	return c->seconds > 0 ? (double)c->ops / c->seconds : 0;
}

/* Block daemon requests per call (readdir: per listing). */
static double cell_blk(const struct md_cell *c)
{
	return c->calls ? (double)c->blk_reqs / (double)c->calls : 0;
}

static void print_info(FILE *f, const struct mdbench *b, const struct sdfs_mds_status *ms)
{
	fprintf(f, "sdfs-mdbench: %" PRIu64 " files per group; active mds %s (%s), "
		"epoch %" PRIu64 ", %zu mds running; %u block daemons up, copies=%u;\n"
		"%s\n\n", b->o.files, ms->has_active ? ms->active : "-",
		ms->has_active ? ms->addr : "-", ms->epoch, ms->n, b->nodes_up, b->copies,
		b->o.shared_handle ? "one libsdfs handle shared by all threads"
				   : "one libsdfs handle per thread");
	fprintf(f,
		"create    sdfs_ns_mknod of a new regular file\n"
		"getattr   sdfs_ns_getattr by inode      lookup  sdfs_ns_lookup by name\n"
		"rename    to a new name in the same directory\n"
		"readdir   whole listings, entries/s (readdir+: with attributes); each\n"
		"          thread reads %" PRIu64 " x %" PRIu64 " entries: private lists its\n"
		"          own directory (N/threads entries) more often than shared\n"
		"unlink    of each renamed file\n"
		"private: a directory per thread; shared: all threads in one directory\n"
		"blk/op: block daemon requests per call (all replicas; readdir: per\n"
		"listing), i.e. the object I/O of the mds's database behind one call\n",
		b->o.readdir_rounds, b->o.files);
}

/* One table: a row per phase, a column per group; @cell formats one. */
static void print_matrix(FILE *f, const char *title, int width,
			 const struct md_group *g, size_t ng,
			 void (*cell)(char *buf, size_t len, const struct md_cell *c))
{
	char head[32], v[32];

	fprintf(f, "\n%-10s", title);
	for (size_t j = 0; j < ng; j++) {
		snprintf(head, sizeof(head), "x%u %s", g[j].threads,
			 g[j].shared_dir ? "shared" : "private");
		fprintf(f, " %*s", width, head);
	}
	for (int ph = 0; ph < PH_COUNT; ph++) {
		fprintf(f, "\n%-10s", phase_names[ph]);
		for (size_t j = 0; j < ng; j++) {
			if (g[j].cell[ph].ran)
				cell(v, sizeof(v), &g[j].cell[ph]);
			else
				snprintf(v, sizeof(v), "-");
			fprintf(f, " %*s", width, v);
		}
	}
	fputc('\n', f);
}

static void fmt_rate(char *buf, size_t len, const struct md_cell *c)
{
	snprintf(buf, len, "%.0f", cell_rate(c));
}

static void fmt_lat(char *buf, size_t len, const struct md_cell *c)
{
	snprintf(buf, len, "%.2f/%.2f", c->p50_ms, c->p99_ms);
}

static void fmt_blk(char *buf, size_t len, const struct md_cell *c)
{
	snprintf(buf, len, "%.2f", cell_blk(c));
}

static void print_table(FILE *f, const struct md_group *g, size_t ng)
{
	print_matrix(f, "ops/s", 12, g, ng, fmt_rate);
	print_matrix(f, "p50/p99 ms", 14, g, ng, fmt_lat);
	print_matrix(f, "blk/op", 12, g, ng, fmt_blk);
}

static void print_json(FILE *f, const struct mdbench *b, const struct sdfs_mds_status *ms,
		       const struct md_group *g, size_t ng)
{
	int first = 1;

	fprintf(f, "{\"files\": %" PRIu64 ", \"handles\": \"%s\", \"readdir_rounds\": %"
		PRIu64 ", \"copies\": %u, \"nodes_up\": %u, \"mds_epoch\": %" PRIu64
		", \"mds_active\": ", b->o.files, b->o.shared_handle ? "shared" : "per-thread",
		b->o.readdir_rounds, b->copies, b->nodes_up, ms->epoch);
	cli_json_str(f, ms->has_active ? ms->active : "");
	fprintf(f, ",\n \"rows\": [");
	for (size_t j = 0; j < ng; j++)
		for (int ph = 0; ph < PH_COUNT; ph++) {
			const struct md_cell *c = &g[j].cell[ph];

			if (!c->ran)
				continue;
			fprintf(f, "%s\n  {\"threads\": %u, \"mode\": \"%s\", \"phase\": \"%s\", "
				"\"ops\": %" PRIu64 ", \"calls\": %" PRIu64 ", \"seconds\": %.4f, "
				"\"ops_s\": %.1f, \"p50_ms\": %.4f, \"p99_ms\": %.4f, "
				"\"blockd_requests\": %" PRIu64 "}", first ? "" : ",",
				g[j].threads, g[j].shared_dir ? "shared" : "private",
				phase_names[ph], c->ops, c->calls, c->seconds, cell_rate(c),
				c->p50_ms, c->p99_ms, c->blk_reqs);
			first = 0;
		}
	fprintf(f, "\n]}\n");
}

/* ---- the benchmark ---- */

static int bench_open(struct mdbench *b)
{
	struct sdfs_cluster_info ci;
	struct sdfs_mds_status ms;
	unsigned most = 0;
	int ret;

	if (open_handle(&b->o, &b->s))
		return -1;
	ret = sdfs_cluster_info(b->s, &ci);
	if (ret)
		return fail("cluster info: %s", ret == -ENOENT ? "cluster not formatted" :
			    strerror(-ret));
	b->copies = ci.copies;
	b->nodes_up = ci.nodes_up;
	ret = sdfs_mds_status(b->s, &ms);
	free(ms.list);
	if (ret || !ms.has_active)
		return fail("no active mds (%s): is sdfs-mds running?",
			    ret ? strerror(-ret) : "none elected");
	/* The counters count the NODE_INFO requests that read them too. */
	b->blk_self = blockd_requests(b->s);
	b->blk_self = blockd_requests(b->s) - b->blk_self;
	for (size_t i = 0; i < b->o.nthreads; i++)
		most = b->o.threads[i] > most ? b->o.threads[i] : most;
	for (unsigned i = 0; i < most && !b->o.shared_handle; i++)
		if (open_handle(&b->o, &b->handles[i]))
			return -1;
	snprintf(b->root_name, sizeof(b->root_name), "mdbench.%d-%u", (int)getpid(),
		 (unsigned)(time(NULL) & 0xffff));
	return make_dir(b->s, MD_ROOT_INO, b->root_name, &b->root);
}

static void bench_close(struct mdbench *b)
{
	if (b->root) {
		int ret = tree_remove(b->s, MD_ROOT_INO, b->root_name);

		if (ret)
			fail("removing /%s: %s (left behind)", b->root_name, strerror(-ret));
	}
	for (unsigned i = 0; i < MD_MAX_THREADS; i++)
		sdfs_close(b->handles[i]);
	sdfs_close(b->s);
}

static int bench_main(struct mdbench *b)
{
	static struct md_group groups[MD_MAX_LIST * 2];
	struct sdfs_mds_status ms = { 0 };
	uint64_t *ino;
	size_t ng = 0;
	int ret = 0;

	ino = calloc(b->o.files, sizeof(*ino));
	if (!ino)
		return fail("out of memory"), 1;
	if (bench_open(b)) {
		bench_close(b);
		free(ino);
		return 1;
	}
	for (size_t i = 0; i < b->o.nthreads && !ret; i++)
		for (int mode = 0; mode < 2 && !ret; mode++) {
			if (!b->o.modes[mode])
				continue;
			groups[ng] = (struct md_group){ .threads = b->o.threads[i],
							.shared_dir = mode };
			ret = run_and_clean(b, &groups[ng], ino);
			ng++;
		}
	if (sdfs_mds_status(b->s, &ms) == 0)
		free(ms.list);
	bench_close(b);
	free(ino);
	if (ng && b->o.json) {
		print_json(stdout, b, &ms, groups, ng);
	} else if (ng) {
		print_info(stdout, b, &ms);
		print_table(stdout, groups, ng);
	}
	if (ret == -EINTR)
		fail("interrupted; the results are the phases that finished");
	return ret == -EINTR ? 130 : ret ? 1 : 0;
}

/* ---- --failover-probe ---- */

/*
 * One call at a time, create then unlink, so the directory stays
 * small. libsdfs retries a call across a failover by itself (the reply
 * cache answers a retried mutation with its first result), so a
 * failover shows as one slow call; a call that gives up (-ETIMEDOUT)
 * is counted and the probe goes on with the next name.
 */
static int probe_main(const struct md_opts *o)
{
	struct sdfs *s;
	char dname[64], name[MD_NAME_LEN];
	uint64_t dir, ops = 0, item = 0;
	int64_t last_ok = 0, gap_from = 0;
	unsigned errors = 0;
	int ret;

	if (open_handle(o, &s))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(dname, sizeof(dname), "mdprobe.%d", (int)getpid());
	if (make_dir(s, MD_ROOT_INO, dname, &dir)) {
		sdfs_close(s);
		return 1;
	}
	printf("ready pid=%d dir=/%s slow_ms=%" PRIu64 "\n", (int)getpid(), dname,
	       o->slow_ms);
	last_ok = wall_ms();
	while (!atomic_load(&interrupted)) {
		int unlinking = ops % 2;
		int64_t t0 = wall_ms();

		if (!unlinking)
			item_name(name, sizeof(name), 'p', item++);
		ret = unlinking ? sdfs_ns_unlink(s, dir, name)
				: sdfs_ns_mknod(s, dir, name, S_IFREG | 0644, 0, getuid(),
						getgid(), NULL);
		int64_t t1 = wall_ms();

		if (ret && ret != -ENOENT && ret != -EEXIST) {
			/* No answer from an mds: the failure goes on. */
			if (!gap_from)
				gap_from = last_ok;
			errors++;
			fprintf(stderr, "sdfs-mdbench: probe: %s %s: %s\n",
				unlinking ? "unlink" : "create", name, strerror(-ret));
			ops += 2 - ops % 2;     /* next name */
			continue;
		}
		/* -ENOENT / -EEXIST: a retry after giving up found the first
		 * attempt applied; the mds answered all the same. */
		if (t1 - t0 > (int64_t)o->slow_ms && !gap_from)
			gap_from = last_ok;
		if (gap_from) {
			printf("gap last_ok_ms=%" PRId64 " first_ok_ms=%" PRId64 " gap_ms=%"
			       PRId64 " slow_call_ms=%" PRId64 " errors=%u op=%s\n", gap_from,
			       t1, t1 - gap_from, t1 - t0, errors,
			       unlinking ? "unlink" : "create");
			gap_from = 0;
			errors = 0;
		}
		last_ok = t1;
		ops++;
	}
	ret = tree_remove(s, MD_ROOT_INO, dname);
	if (ret)
		fail("removing /%s: %s (left behind)", dname, strerror(-ret));
	printf("done ops=%" PRIu64 "\n", ops);
	sdfs_close(s);
	return 0;
}

int main(int argc, char **argv)
{
	struct mdbench b = { 0 };
	int ret;

	if ((ret = parse_opts(argc, argv, &b.o)))
		return ret;
	sdfs_set_log(log_stderr, NULL, LOG_WARNING);
	catch_signals();
	return b.o.probe ? probe_main(&b.o) : bench_main(&b);
}
