/*
 * mdfs.c - sdfs-mdfs: metadata operations per second through a mounted
 * filesystem, with plain system calls, so that sdfs, a local directory
 * and libfuse's passthrough_ll are measured by the same code
 * (tools/bench/fs runs it on all three).
 *
 *   sdfs-mdfs [--files N] [--threads LIST] [--modes LIST]
 *             [--readdir-rounds R] [--drop-caches] [--hook CMD] DIR
 *
 * For each thread count and directory mode it makes a fresh directory
 * under DIR/mdfs.PID and runs, in order: create (openat O_CREAT|O_EXCL,
 * close) of N files split over the threads, stat (fstatat) of each,
 * readdir (whole listings, entries/s), rename of each within its
 * directory, unlink of each. "private": thread k works in a directory of
 * its own; "shared": all threads in one. Each thread owns a fixed slice
 * of the files, and a row is the slice total over the wall time from
 * the start gate to the slowest thread's end. Calls are made relative to
 * the thread's directory fd, so no row pays for resolving DIR.
 *
 * Output: one key=value line per (threads, mode, phase), with the
 * per-call p50/p99 in microseconds (readdir: per whole listing).
 * --hook runs a shell command before and after every phase, outside the
 * clock (tools/bench/fs reads sdfs's request counters there).
 * Everything it made is removed at the end, also after an error or
 * Ctrl-C (a second Ctrl-C kills without cleanup).
 *
 * Not here: mounting anything (tools/bench/fs), libsdfs's own namespace
 * calls (mdbench.c). tools/bench/README.md explains the numbers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MDFS_MAX_LIST           16
#define MDFS_MAX_THREADS        64
#define MDFS_MAX_FILES          (1u << 22)

enum mdfs_phase { PH_CREATE, PH_STAT, PH_READDIR, PH_RENAME, PH_UNLINK, PH_COUNT };

static const char *const phase_names[PH_COUNT] = {
	[PH_CREATE] = "create", [PH_STAT] = "stat", [PH_READDIR] = "readdir",
	[PH_RENAME] = "rename", [PH_UNLINK] = "unlink",
};

static const char usage[] =
	"usage: sdfs-mdfs [--files N] [--threads LIST] [--modes LIST]\n"
	"                 [--readdir-rounds R] [--drop-caches] [--hook CMD] DIR\n"
	"  --files N          files per group, split over the threads (default 10000)\n"
	"  --threads LIST     thread counts, e.g. 1,4 (default)\n"
	"  --modes LIST       private (a directory per thread, default), shared\n"
	"                     (one for all), or private,shared\n"
	"  --readdir-rounds R each thread lists its directory until it has read\n"
	"                     R x its files (default 5)\n"
	"  --drop-caches      (root) sync and drop the kernel's dentries and inodes\n"
	"                     (vm.drop_caches=2) before stat, so that each stat\n"
	"                     asks the filesystem instead of the kernel's cache\n"
	"  --hook CMD         run CMD (sh -c) before and after every phase, untimed,\n"
	"                     with MDFS_WHEN=before|after, MDFS_PHASE, MDFS_THREADS\n"
	"                     and MDFS_MODE in its environment\n";

struct mdfs_opts {
	const char *dir;
	unsigned long files;
	unsigned threads[MDFS_MAX_LIST];
	size_t nthreads;
	int modes[2];                   /* private, shared: run it? */
	unsigned long readdir_rounds;
	int drop_caches;
	const char *hook;
};

struct mdfs_worker {
	pthread_t tid;
	unsigned k;                     /* thread index: names are f<k>.<i> */
	int dir_fd;
	unsigned long n;                /* files in its slice */
	unsigned long dir_entries;      /* files its directory holds */
	unsigned long rounds;
	pthread_barrier_t *gate;
	enum mdfs_phase ph;
	int64_t start_ns, end_ns;
	uint64_t *lat_ns;               /* [cap] */
	unsigned long cap, calls, ops;
	int err;                        /* errno of the first failure */
	const char *err_what;
	unsigned long err_item;
};

static atomic_int interrupted;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&interrupted, 1);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *e;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &e, 10);
	if (errno || e == s || *e || !v || v > max || *s == '-')
		return -1;
	*out = v;
	return 0;
}

static int parse_threads(const char *text, struct mdfs_opts *o)
{
	char buf[256], *save;
	unsigned long v;

	if (strlen(text) >= sizeof(buf))
		return -1;
	strcpy(buf, text);
	o->nthreads = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (o->nthreads == MDFS_MAX_LIST || parse_ulong(t, MDFS_MAX_THREADS, &v))
			return -1;
		o->threads[o->nthreads++] = (unsigned)v;
	}
	return o->nthreads ? 0 : -1;
}

static int parse_modes(const char *text, struct mdfs_opts *o)
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
static int parse_opts(int argc, char **argv, struct mdfs_opts *o)
{
	*o = (struct mdfs_opts){ .files = 10000, .threads = { 1, 4 }, .nthreads = 2,
				 .modes = { 1, 0 }, .readdir_rounds = 5 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;

		if (!strcmp(a, "--files") && v) {
			bad = parse_ulong(v, MDFS_MAX_FILES, &o->files);
			i++;
		} else if (!strcmp(a, "--threads") && v) {
			bad = parse_threads(v, o);
			i++;
		} else if (!strcmp(a, "--modes") && v) {
			bad = parse_modes(v, o);
			i++;
		} else if (!strcmp(a, "--readdir-rounds") && v) {
			bad = parse_ulong(v, 1000, &o->readdir_rounds);
			i++;
		} else if (!strcmp(a, "--hook") && v) {
			o->hook = v;
			i++;
		} else if (!strcmp(a, "--drop-caches")) {
			o->drop_caches = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			exit(0);
		} else if (a[0] != '-' && !o->dir) {
			o->dir = a;
		} else {
			bad = 1;
		}
		if (bad) {
			fprintf(stderr, "sdfs-mdfs: bad argument '%s%s%s'\n%s", a,
				v && a[0] == '-' ? " " : "", v && a[0] == '-' ? v : "", usage);
			return 2;
		}
	}
	if (!o->dir) {
		fputs(usage, stderr);
		return 2;
	}
	for (size_t i = 0; i < o->nthreads; i++)
		if (o->threads[i] > o->files) {
			fprintf(stderr, "sdfs-mdfs: --files %lu is fewer than %u threads\n",
				o->files, o->threads[i]);
			return 2;
		}
	return 0;
}

static void file_name(char *buf, size_t len, char prefix, unsigned k, unsigned long i)
{
	snprintf(buf, len, "%c%u.%lu", prefix, k, i);
}

static void record(struct mdfs_worker *w, int64_t t0)
{
	if (w->calls < w->cap)
		w->lat_ns[w->calls] = (uint64_t)(now_ns() - t0);
	w->calls++;
}

/* Note the worker's first failure; returns -1. */
static int worker_fail(struct mdfs_worker *w, const char *what, unsigned long i, int err)
{
	w->err = err;
	w->err_what = what;
	w->err_item = i;
	return -1;
}

/* One whole listing of the worker's directory; the entries it held. */
static long list_dir(struct mdfs_worker *w)
{
	int fd = openat(w->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	long n = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	errno = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	if (errno)
		n = -errno;
	closedir(d);
	return n;
}

static int run_phase(struct mdfs_worker *w)
{
	char a[48], b[48];
	struct stat st;
	int64_t t0;

	for (unsigned long i = 0; i < w->n && !atomic_load(&interrupted); i++) {
		t0 = now_ns();
		switch (w->ph) {
		case PH_CREATE: {
			file_name(a, sizeof(a), 'f', w->k, i);
			int fd = openat(w->dir_fd, a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0 || close(fd) < 0)
				return worker_fail(w, "create", i, errno);
			break;
		}
		case PH_STAT:
			file_name(a, sizeof(a), 'f', w->k, i);
			if (fstatat(w->dir_fd, a, &st, AT_SYMLINK_NOFOLLOW) < 0)
				return worker_fail(w, "stat", i, errno);
			if (!S_ISREG(st.st_mode) || st.st_size != 0)
				return worker_fail(w, "stat (not an empty file)", i, EBADMSG);
			break;
		case PH_RENAME:
			file_name(a, sizeof(a), 'f', w->k, i);
			file_name(b, sizeof(b), 'r', w->k, i);
			if (renameat(w->dir_fd, a, w->dir_fd, b) < 0)
				return worker_fail(w, "rename", i, errno);
			break;
		case PH_UNLINK:
			file_name(a, sizeof(a), 'r', w->k, i);
			if (unlinkat(w->dir_fd, a, 0) < 0)
				return worker_fail(w, "unlink", i, errno);
			break;
		default:
			return -1;
		}
		record(w, t0);
		w->ops++;
	}
	return 0;
}

static int run_readdir(struct mdfs_worker *w)
{
	unsigned long want = w->rounds * w->n;

	while (w->ops < want && !atomic_load(&interrupted)) {
		int64_t t0 = now_ns();
		long n = list_dir(w);

		if (n < 0)
			return worker_fail(w, "readdir", w->calls, (int)-n);
		if ((unsigned long)n != w->dir_entries)
			return worker_fail(w, "readdir (wrong entry count)", (unsigned long)n,
					   EBADMSG);
		record(w, t0);
		w->ops += (unsigned long)n;
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct mdfs_worker *w = arg;

	pthread_barrier_wait(w->gate);
	w->start_ns = now_ns();
	if (w->ph == PH_READDIR)
		(void)run_readdir(w);   /* a failure is in w->err */
	else
		(void)run_phase(w);
	w->end_ns = now_ns();
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Drop the kernel's dentries and inodes: the next lookup goes to the
 * filesystem (for FUSE: a LOOKUP request), not the dcache. */
static int drop_dentries(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "2\n", 2) != 2) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	return 0;
}

/* --hook: 0, or -1 when the command failed. */
static int run_hook(const struct mdfs_opts *o, const char *when, enum mdfs_phase ph,
		    unsigned t, const char *mode)
{
	char n[16];
	int st;

	if (!o->hook)
		return 0;
	snprintf(n, sizeof(n), "%u", t);
	setenv("MDFS_WHEN", when, 1);
	setenv("MDFS_PHASE", phase_names[ph], 1);
	setenv("MDFS_THREADS", n, 1);
	setenv("MDFS_MODE", mode, 1);
	fflush(stdout);
	st = system(o->hook);
	if (st != 0) {
		fprintf(stderr, "sdfs-mdfs: --hook '%s' failed (status %d)\n", o->hook, st);
		return -1;
	}
	return 0;
}

/* Run one phase on all workers and print its line; 0 or -1. */
static int phase(struct mdfs_worker *ws, unsigned t, enum mdfs_phase ph,
		 const char *mode, const struct mdfs_opts *o)
{
	pthread_barrier_t gate;
	uint64_t *all;
	unsigned long calls = 0, ops = 0;
	int64_t start = INT64_MAX, end = 0;
	int ret = 0;

	if (ph == PH_STAT && o->drop_caches) {
		int r = drop_dentries();

		if (r < 0) {
			fprintf(stderr, "sdfs-mdfs: drop caches: %s\n", strerror(-r));
			return -1;
		}
	}
	if (run_hook(o, "before", ph, t, mode))
		return -1;
	pthread_barrier_init(&gate, NULL, t);
	for (unsigned k = 0; k < t; k++) {
		ws[k].ph = ph;
		ws[k].gate = &gate;
		ws[k].calls = ws[k].ops = 0;
		ws[k].err = 0;
		if (pthread_create(&ws[k].tid, NULL, worker_main, &ws[k])) {
			/* cannot happen at these counts; the gate would hang */
			fprintf(stderr, "sdfs-mdfs: pthread_create failed\n");
			exit(1);
		}
	}
	for (unsigned k = 0; k < t; k++)
		pthread_join(ws[k].tid, NULL);
	pthread_barrier_destroy(&gate);

	for (unsigned k = 0; k < t; k++) {
		struct mdfs_worker *w = &ws[k];

		if (w->err && !ret) {
			fprintf(stderr, "sdfs-mdfs: threads=%u %s thread %u item %lu: %s: %s\n",
				t, mode, k, w->err_item, w->err_what, strerror(w->err));
			ret = -1;
		}
		calls += w->calls < w->cap ? w->calls : w->cap;
		ops += w->ops;
		if (w->start_ns < start)
			start = w->start_ns;
		if (w->end_ns > end)
			end = w->end_ns;
	}
	if (ret || atomic_load(&interrupted) || run_hook(o, "after", ph, t, mode))
		return -1;
	all = malloc((calls ? calls : 1) * sizeof(*all));
	if (!all) {
		fprintf(stderr, "sdfs-mdfs: out of memory\n");
		return -1;
	}
	calls = 0;
	for (unsigned k = 0; k < t; k++) {
		unsigned long c = ws[k].calls < ws[k].cap ? ws[k].calls : ws[k].cap;

		memcpy(all + calls, ws[k].lat_ns, c * sizeof(*all));
		calls += c;
	}
	qsort(all, calls, sizeof(*all), cmp_u64);
	double s = (double)(end - start) / 1e9;
	printf("mdfs threads=%u mode=%s phase=%s ops=%lu seconds=%.4f ops_s=%.1f"
	       " calls=%lu p50_us=%.1f p99_us=%.1f\n",
	       t, mode, phase_names[ph], ops, s, s > 0 ? (double)ops / s : 0.0, calls,
	       calls ? (double)all[calls / 2] / 1e3 : 0.0,
	       calls ? (double)all[calls * 99 / 100] / 1e3 : 0.0);
	fflush(stdout);
	free(all);
	return 0;
}

/* Remove every entry of @dir_fd's directory (ours: plain files only). */
static void empty_dir(int dir_fd)
{
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dir_fd, de->d_name, 0);
	closedir(d);
}

/* One group: T threads in one mode, all phases; 0 or -1. */
static int group(int root_fd, unsigned t, int shared, const struct mdfs_opts *o)
{
	const char *mode = shared ? "shared" : "private";
	struct mdfs_worker ws[MDFS_MAX_THREADS];
	char gname[32], tname[16];
	int gfd, ret = 0;
	unsigned long per = o->files / t;

	snprintf(gname, sizeof(gname), "x%u-%s", t, mode);
	if (mkdirat(root_fd, gname, 0755) < 0 ||
	    (gfd = openat(root_fd, gname, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "sdfs-mdfs: %s/%s: %s\n", o->dir, gname, strerror(errno));
		return -1;
	}
	memset(ws, 0, sizeof(ws));
	for (unsigned k = 0; k < t; k++) {
		struct mdfs_worker *w = &ws[k];

		w->dir_fd = -1;
		w->k = k;
		w->n = per + (k < o->files % t);
		w->dir_entries = shared ? o->files : w->n;
		w->rounds = o->readdir_rounds;
		w->cap = w->n > w->rounds ? w->n : w->rounds;
		w->lat_ns = calloc(w->cap, sizeof(*w->lat_ns));
		snprintf(tname, sizeof(tname), shared ? "shared" : "t%u", k);
		if (!shared || k == 0)
			if (mkdirat(gfd, tname, 0755) < 0 && errno != EEXIST)
				ret = -1;
		w->dir_fd = openat(gfd, tname, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (!w->lat_ns || w->dir_fd < 0 || ret) {
			fprintf(stderr, "sdfs-mdfs: %s/%s/%s: %s\n", o->dir, gname, tname,
				w->lat_ns ? strerror(errno) : "out of memory");
			ret = -1;
			t = k + 1;
			goto out;
		}
	}
	for (int ph = 0; ph < PH_COUNT && !ret; ph++)
		ret = phase(ws, t, (enum mdfs_phase)ph, mode, o);
out:
	for (unsigned k = 0; k < t; k++) {
		if (ws[k].dir_fd >= 0) {
			empty_dir(ws[k].dir_fd);
			close(ws[k].dir_fd);
		}
		free(ws[k].lat_ns);
		snprintf(tname, sizeof(tname), shared ? "shared" : "t%u", k);
		if (!shared || k == 0)
			unlinkat(gfd, tname, AT_REMOVEDIR);
	}
	close(gfd);
	unlinkat(root_fd, gname, AT_REMOVEDIR);
	return ret;
}

int main(int argc, char **argv)
{
	struct mdfs_opts o;
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESETHAND };
	char rname[64];
	int ret, dfd, root_fd;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret;
	/* Ctrl-C ends the phase early but lets cleanup run; a second one kills. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	dfd = open(o.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(rname, sizeof(rname), "mdfs.%ld", (long)getpid());
	if (dfd < 0 || mkdirat(dfd, rname, 0755) < 0 ||
	    (root_fd = openat(dfd, rname, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "sdfs-mdfs: %s: %s\n", o.dir, strerror(errno));
		return 1;
	}
	ret = 0;
	for (size_t i = 0; i < o.nthreads && !ret; i++)
		for (int shared = 0; shared < 2 && !ret; shared++)
			if (o.modes[shared])
				ret = group(root_fd, o.threads[i], shared, &o);
	close(root_fd);
	unlinkat(dfd, rname, AT_REMOVEDIR);
	close(dfd);
	if (atomic_load(&interrupted)) {
		fprintf(stderr, "sdfs-mdfs: interrupted\n");
		return 130;
	}
	return ret ? 1 : 0;
}
