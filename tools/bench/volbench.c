/*
 * volbench.c - sdfs-volbench: the libsdfs side of tools/bench/vol.
 *
 *   create PATH SIZE  a new thin volume file (sdfs_vol_create)
 *   snap COUNT PATH.. COUNT snapshots of each, round-robin, each timed
 *                     alone; with --clone-dir DIR then COUNT clones of
 *                     each (sdfs_vol_clone of snapshot i into DIR), with
 *                     --rollback then COUNT rollbacks of each
 *                     (sdfs_vol_rollback to snapshot i), the same way
 *   info PATH         its live state: chunks written, chunks it owns
 *   cow PATH SECS     4 KiB random writes through libsdfs for SECS
 *                     seconds, then a snapshot, then SECS seconds more:
 *                     the latency and IOPS of writes that copy-on-write
 *                     chunks (docs/volumes.md "Copy-on-write"; the
 *                     client's own copy with SDFS_VOL_COW=client)
 *
 * PATH is an sdfs path ("/bench/v.img"), not a mount path. snap connects
 * once and times only the one library call: `sdfs snap create` would add
 * a process start and a ZooKeeper connection to every sample, more than
 * the 50 ms a snapshot may take. Output is key=value lines for the
 * script; the exit status is 1 with a one-line reason on failure, 3 when
 * the cluster has no volume support (-ENOSYS, -EOPNOTSUPP, -EPROTO,
 * -EBADMSG from an mds or library without it).
 *
 * Not here: fio, the mount, the cluster (tools/bench/vol does those).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libclient/sdfs.h"
#include "tools/cli.h"

#define VB_MAX_SNAPS    1000
#define VB_MAX_PATHS    8
#define VB_EXIT_NOVOL   3
#define VB_BUSY_TRIES   25      /* rollback -EBUSY retries, VB_BUSY_MS apart */
#define VB_BUSY_MS      200

static const char usage[] =
	"usage: sdfs-volbench [--conf FILE] create PATH SIZE [--copies N]\n"
	"       sdfs-volbench [--conf FILE] snap COUNT PATH... [--prefix NAME]\n"
	"                     [--clone-dir DIR] [--rollback]\n"
	"       sdfs-volbench [--conf FILE] info PATH\n"
	"       sdfs-volbench [--conf FILE] cow PATH SECS [--qd N] [--fill] [--snap NAME]\n"
	"  PATH is an sdfs path (/dir/name), SIZE takes K/M/G/T suffixes.\n"
	"  snap takes COUNT snapshots of each PATH, round-robin, named NAME-1..\n"
	"  (default bench-N); it prints 'snap path=P i=N ms=T vid=V' for each,\n"
	"  then 'snaps path=P count=N min_ms= median_ms= max_ms=' per PATH.\n"
	"  --clone-dir DIR: then clones snapshot NAME-i of each PATH into\n"
	"  DIR/clone-i-BASENAME, round-robin ('clone path=P i=N ms=T ino=I',\n"
	"  then 'clones path=P ...'); --rollback: then rolls each PATH back to\n"
	"  NAME-i, round-robin ('rollback path=P i=N ms=T vid=V busy=B', then\n"
	"  'rollbacks path=P ... busy=B'; B: -EBUSY answers retried, untimed).\n"
	"  cow: --fill first writes every chunk of PATH; then N threads (default\n"
	"  1) write 4 KiB at random 4 KiB offsets, one at a time each, for SECS\n"
	"  s ('cow phase=before ...'), snapshot NAME (default cow-<pid>), SECS s\n"
	"  more ('cow phase=after ...'): iops, p50/p99/max ms, IOPS per second.\n";

static int is_novol(int err)
{
	return err == -ENOSYS || err == -EOPNOTSUPP || err == -EPROTO ||
	       err == -EBADMSG;
}

static int fail(const char *what, const char *path, int err)
{
	if (is_novol(err)) {
		fprintf(stderr, "sdfs-volbench: %s %s: %s: no volume support in this "
			"cluster or libsdfs\n", what, path, strerror(-err));
		return VB_EXIT_NOVOL;
	}
	fprintf(stderr, "sdfs-volbench: %s %s: %s\n", what, path, strerror(-err));
	return 1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* @path's parent directory into *@dir and its last component into @name. */
static int split_path(struct sdfs *s, const char *path, struct sdfs_stat *dir,
		      char *name, size_t name_len)
{
	const char *slash = strrchr(path, '/');
	char *parent;
	int ret;

	if (path[0] != '/' || !slash || !slash[1] || strlen(slash + 1) >= name_len)
		return -EINVAL;
	snprintf(name, name_len, "%s", slash + 1);
	parent = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (!parent)
		return -ENOMEM;
	ret = sdfs_ns_resolve(s, parent, 1, dir);
	free(parent);
	if (!ret && !S_ISDIR(dir->mode))
		ret = -ENOTDIR;
	return ret;
}

static int do_create(struct sdfs *s, int argc, char **argv)
{
	struct sdfs_stat dir, st;
	uint64_t size, copies = 0;
	char name[256];
	int i, ret;

	if (argc < 2 || cli_parse_size(argv[1], &size) < 0 || size == 0) {
		fputs(usage, stderr);
		return 2;
	}
	for (i = 2; i < argc; i++) {
		const char *v = cli_opt(argc, argv, &i, "--copies");

		if (!v || cli_parse_u64(v, &copies) < 0 || copies > 16) {
			fputs(usage, stderr);
			return 2;
		}
	}
	ret = split_path(s, argv[0], &dir, name, sizeof(name));
	if (ret < 0)
		return fail("create", argv[0], ret);
	ret = sdfs_vol_create(s, dir.ino, name, 0644, getuid(), getgid(), size,
			      (unsigned)copies, 0, &st);
	if (ret < 0)
		return fail("create", argv[0], ret);
	printf("create ino=%" PRIu64 " size=%" PRIu64 " layout=%u\n",
	       st.ino, st.size, st.layout);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *sorted, size_t n)
{
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

static void print_stats(const char *what, const char *path, double *ms,
			uint64_t count, const char *extra)
{
	qsort(ms, count, sizeof(ms[0]), cmp_double);
	printf("%s path=%s count=%" PRIu64 " min_ms=%.3f median_ms=%.3f max_ms=%.3f%s\n",
	       what, path, count, ms[0], median(ms, count), ms[count - 1], extra);
}

/* Roll @ino back to @name. -EBUSY (a writer holds the volume; the mount
 * lets go of a volume file's writer lock a little after the last close)
 * is retried VB_BUSY_TRIES times, counted in *@busy and not timed: *@ms
 * is the call that answered otherwise. */
static int rollback_timed(struct sdfs *s, uint64_t ino, const char *name,
			  struct sdfs_vol_info *vi, double *ms, unsigned *busy)
{
	const struct timespec pause = { 0, VB_BUSY_MS * 1000000L };
	double t0;
	int ret, tries = 0;

	for (;;) {
		t0 = now_ms();
		ret = sdfs_vol_rollback(s, ino, name, vi);
		*ms = now_ms() - t0;
		if (ret != -EBUSY || ++tries > VB_BUSY_TRIES)
			return ret;
		++*busy;
		nanosleep(&pause, NULL);
	}
}

/* COUNT rounds of each operation; each round does it to every PATH once,
 * in turn, so that the volumes share whatever load the machine has
 * meanwhile. The operations run one after another (all snapshots, then
 * the clones, then the rollbacks): the snapshot numbers stay comparable
 * with runs that time snapshots only. */
static int do_snap(struct sdfs *s, int argc, char **argv)
{
	const char *prefix = "bench", *clone_dir = NULL;
	struct sdfs_vol_info vi;
	struct sdfs_stat st[VB_MAX_PATHS], dir, cst;
	const char *paths[VB_MAX_PATHS], *base;
	static double ms[VB_MAX_PATHS][VB_MAX_SNAPS];
	unsigned busy[VB_MAX_PATHS] = { 0 };
	char extra[32], cname[256];
	uint64_t count;
	size_t npaths = 0, p;
	double t0;
	char name[65];
	int i, ret, rollback = 0;

	if (argc < 2 || cli_parse_u64(argv[0], &count) < 0 || count == 0 ||
	    count > VB_MAX_SNAPS) {
		fputs(usage, stderr);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		const char *v = cli_opt(argc, argv, &i, "--prefix");
		const char *d = v ? NULL : cli_opt(argc, argv, &i, "--clone-dir");

		if (v) {
			if (strlen(v) > 40) {
				fputs(usage, stderr);
				return 2;
			}
			prefix = v;
		} else if (d) {
			clone_dir = d;
		} else if (!strcmp(argv[i], "--rollback")) {
			rollback = 1;
		} else if (argv[i][0] != '-' && npaths < VB_MAX_PATHS) {
			paths[npaths++] = argv[i];
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!npaths) {
		fputs(usage, stderr);
		return 2;
	}
	for (p = 0; p < npaths; p++) {
		ret = sdfs_ns_resolve(s, paths[p], 1, &st[p]);
		if (ret < 0)
			return fail("snap", paths[p], ret);
	}
	if (clone_dir) {
		ret = sdfs_ns_resolve(s, clone_dir, 1, &dir);
		if (!ret && !S_ISDIR(dir.mode))
			ret = -ENOTDIR;
		if (ret < 0)
			return fail("clone into", clone_dir, ret);
	}
	for (i = 0; i < (int)count; i++) {
		for (p = 0; p < npaths; p++) {
			snprintf(name, sizeof(name), "%s-%d", prefix, i + 1);
			t0 = now_ms();
			ret = sdfs_vol_snap_create(s, st[p].ino, name, &vi);
			ms[p][i] = now_ms() - t0;
			if (ret < 0)
				return fail("snap", paths[p], ret);
			printf("snap path=%s i=%d ms=%.3f vid=%" PRIu64 "\n",
			       paths[p], i + 1, ms[p][i], vi.vid);
			fflush(stdout);
		}
	}
	for (p = 0; p < npaths; p++)
		print_stats("snaps", paths[p], ms[p], count, "");
	if (clone_dir) {
		for (i = 0; i < (int)count; i++) {
			for (p = 0; p < npaths; p++) {
				base = strrchr(paths[p], '/');
				base = base ? base + 1 : paths[p];
				snprintf(name, sizeof(name), "%s-%d", prefix, i + 1);
				snprintf(cname, sizeof(cname), "clone-%d-%.200s", i + 1, base);
				t0 = now_ms();
				ret = sdfs_vol_clone(s, st[p].ino, name, dir.ino, cname,
						     st[p].mode & 07777, getuid(), getgid(),
						     &cst);
				ms[p][i] = now_ms() - t0;
				if (ret < 0)
					return fail("clone", paths[p], ret);
				printf("clone path=%s i=%d ms=%.3f ino=%" PRIu64 " name=%s\n",
				       paths[p], i + 1, ms[p][i], cst.ino, cname);
				fflush(stdout);
			}
		}
		for (p = 0; p < npaths; p++)
			print_stats("clones", paths[p], ms[p], count, "");
	}
	if (rollback) {
		for (i = 0; i < (int)count; i++) {
			for (p = 0; p < npaths; p++) {
				unsigned b0 = busy[p];

				snprintf(name, sizeof(name), "%s-%d", prefix, i + 1);
				ret = rollback_timed(s, st[p].ino, name, &vi, &ms[p][i],
						     &busy[p]);
				if (ret < 0)
					return fail("rollback", paths[p], ret);
				printf("rollback path=%s i=%d ms=%.3f vid=%" PRIu64 " busy=%u\n",
				       paths[p], i + 1, ms[p][i], vi.vid, busy[p] - b0);
				fflush(stdout);
			}
		}
		for (p = 0; p < npaths; p++) {
			snprintf(extra, sizeof(extra), " busy=%u", busy[p]);
			print_stats("rollbacks", paths[p], ms[p], count, extra);
		}
	}
	return 0;
}

/* ---- cow: writes right after a snapshot ---- */

#define COW_BLK 4096u
#define COW_MAX_QD 64

struct cow_thread {
	struct sdfs_vol *v;
	uint64_t seed, nblk;
	double start, end;
	double *lat;                    /* ms, one per write */
	size_t n, cap;
	unsigned *per_s;                /* writes that ended in second i */
	size_t nsec;
	int err;
	pthread_t th;
};

static uint64_t cow_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *cow_loop(void *arg)
{
	struct cow_thread *t = arg;
	char buf[COW_BLK];
	double t0, t1;

	memset(buf, 0xc5, sizeof(buf));
	while ((t0 = now_ms()) < t->end) {
		uint64_t blk = cow_rand(&t->seed) % t->nblk;
		int ret;

		buf[0] = (char)blk;
		ret = sdfs_vol_pwrite(t->v, buf, COW_BLK, blk * COW_BLK);
		t1 = now_ms();
		if (ret) {
			t->err = ret;
			break;
		}
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 4096;
			double *l = realloc(t->lat, cap * sizeof(*l));

			if (!l) {
				t->err = -ENOMEM;
				break;
			}
			t->lat = l;
			t->cap = cap;
		}
		t->lat[t->n++] = t1 - t0;
		size_t sec = (size_t)((t1 - t->start) / 1000);
		if (sec < t->nsec)
			t->per_s[sec]++;
	}
	return NULL;
}

static double pct(const double *sorted, size_t n, double p)
{
	size_t i = (size_t)(p * (double)n);

	return n ? sorted[i < n ? i : n - 1] : 0;
}

/* @qd threads of writes for @secs s; one 'cow phase=...' line. */
static int cow_phase(struct sdfs_vol *v, const char *phase, unsigned qd, unsigned secs,
		     uint64_t nblk, uint64_t seed)
{
	struct cow_thread t[COW_MAX_QD];
	double start = now_ms(), *all;
	size_t n = 0, nsec = secs + 1;
	int err = 0;

	memset(t, 0, sizeof(t));
	for (unsigned i = 0; i < qd; i++) {
		t[i].v = v;
		t[i].seed = seed * 2654435761u + i + 1;
		t[i].nblk = nblk;
		t[i].start = start;
		t[i].end = start + secs * 1000.0;
		t[i].nsec = nsec;
		t[i].per_s = calloc(nsec, sizeof(unsigned));
		if (!t[i].per_s || pthread_create(&t[i].th, NULL, cow_loop, &t[i]))
			return -ENOMEM;
	}
	for (unsigned i = 0; i < qd; i++) {
		pthread_join(t[i].th, NULL);
		n += t[i].n;
		if (t[i].err && !err)
			err = t[i].err;
	}
	double took = now_ms() - start;
	all = malloc((n ? n : 1) * sizeof(*all));
	if (!all)
		return -ENOMEM;
	n = 0;
	for (unsigned i = 0; i < qd; i++) {
		memcpy(all + n, t[i].lat, t[i].n * sizeof(*all));
		n += t[i].n;
	}
	qsort(all, n, sizeof(*all), cmp_double);
	printf("cow phase=%s qd=%u secs=%u writes=%zu iops=%.0f p50_ms=%.3f p99_ms=%.3f "
	       "max_ms=%.3f iops_by_s=", phase, qd, secs, n, n / (took / 1000), pct(all, n, 0.5),
	       pct(all, n, 0.99), n ? all[n - 1] : 0);
	for (size_t sec = 0; sec < secs; sec++) {
		unsigned c = 0;

		for (unsigned i = 0; i < qd; i++)
			c += t[i].per_s[sec];
		printf("%s%u", sec ? "," : "", c);
	}
	printf("\n");
	fflush(stdout);
	for (unsigned i = 0; i < qd; i++) {
		free(t[i].lat);
		free(t[i].per_s);
	}
	free(all);
	return err;
}

static int do_cow(struct sdfs *s, int argc, char **argv)
{
	uint64_t secs, qd = 1, size;
	char snap[65], *buf;
	struct sdfs_vol_info vi;
	struct sdfs_stat st;
	struct sdfs_vol *v;
	int i, ret, fill = 0;
	double t0;

	snprintf(snap, sizeof(snap), "cow-%ld", (long)getpid());
	if (argc < 2 || cli_parse_u64(argv[1], &secs) < 0 || secs == 0 || secs > 3600) {
		fputs(usage, stderr);
		return 2;
	}
	for (i = 2; i < argc; i++) {
		const char *q = cli_opt(argc, argv, &i, "--qd");
		const char *n = q ? NULL : cli_opt(argc, argv, &i, "--snap");

		if (q) {
			if (cli_parse_u64(q, &qd) < 0 || qd == 0 || qd > COW_MAX_QD) {
				fputs(usage, stderr);
				return 2;
			}
		} else if (n && strlen(n) < sizeof(snap)) {
			snprintf(snap, sizeof(snap), "%s", n);
		} else if (!strcmp(argv[i], "--fill")) {
			fill = 1;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	ret = sdfs_ns_resolve(s, argv[0], 1, &st);
	if (ret < 0)
		return fail("cow", argv[0], ret);
	ret = sdfs_vol_open(s, st.ino, SDFS_VOL_WRITE | SDFS_VOL_WAIT, "sdfs-volbench", &v);
	if (ret < 0)
		return fail("cow", argv[0], ret);
	size = sdfs_vol_size(v);
	sdfs_vol_get_info(v, &vi);
	if (fill) {
		buf = malloc(vi.obj_size);
		if (!buf) {
			sdfs_vol_close(v);
			return fail("cow", argv[0], -ENOMEM);
		}
		memset(buf, 0x3b, vi.obj_size);
		t0 = now_ms();
		for (uint64_t off = 0; off < size && !ret; off += vi.obj_size)
			ret = sdfs_vol_pwrite(v, buf, size - off < vi.obj_size ?
					      (size_t)(size - off) : vi.obj_size, off);
		if (!ret)
			ret = sdfs_vol_flush(v);
		free(buf);
		if (ret) {
			sdfs_vol_close(v);
			return fail("cow fill", argv[0], ret);
		}
		printf("cow fill size=%" PRIu64 " chunks=%" PRIu64 " ms=%.0f\n", size,
		       (size + vi.obj_size - 1) / vi.obj_size, now_ms() - t0);
	}
	ret = cow_phase(v, "before", (unsigned)qd, (unsigned)secs, size / COW_BLK, 1);
	if (!ret) {
		t0 = now_ms();
		ret = sdfs_vol_snap_create(s, st.ino, snap, &vi);
		printf("cow snap name=%s ms=%.3f vid=%" PRIu64 "\n", snap, now_ms() - t0, vi.vid);
	}
	if (!ret)
		ret = cow_phase(v, "after", (unsigned)qd, (unsigned)secs, size / COW_BLK, 2);
	sdfs_vol_close(v);
	return ret ? fail("cow", argv[0], ret) : 0;
}

static int do_info(struct sdfs *s, int argc, char **argv)
{
	struct sdfs_vol_info vi;
	struct sdfs_vol *v;
	struct sdfs_stat st;
	uint64_t chunk, nchunks, owner, used = 0, own = 0;
	int ret;

	if (argc != 1) {
		fputs(usage, stderr);
		return 2;
	}
	ret = sdfs_ns_resolve(s, argv[0], 1, &st);
	if (ret < 0)
		return fail("info", argv[0], ret);
	ret = sdfs_vol_open(s, st.ino, 0, NULL, &v);
	if (ret < 0)
		return fail("info", argv[0], ret);
	sdfs_vol_get_info(v, &vi);
	nchunks = vi.obj_size ? (sdfs_vol_size(v) + vi.obj_size - 1) / vi.obj_size : 0;
	for (chunk = 0; chunk < nchunks; chunk++) {
		owner = sdfs_vol_chunk_owner(v, chunk);
		used += owner != 0;
		own += owner == vi.vid;
	}
	sdfs_vol_close(v);
	printf("info vid=%" PRIu64 " size=%" PRIu64 " obj_size=%" PRIu32
	       " copies=%u chunks=%" PRIu64 " written=%" PRIu64 " owned=%" PRIu64 "\n",
	       vi.vid, vi.size, vi.obj_size, vi.copies, nchunks, used, own);
	return 0;
}

int main(int argc, char **argv)
{
	const char *conf = NULL, *cmd;
	struct sdfs *s;
	char err[256] = "";
	int i = 1, ret;

	if (i < argc && !strcmp(argv[i], "--conf")) {
		if (i + 1 >= argc) {
			fputs(usage, stderr);
			return 2;
		}
		conf = argv[i + 1];
		i += 2;
	}
	if (i + 1 >= argc) {
		fputs(usage, stderr);
		return 2;
	}
	cmd = argv[i++];
	if (strcmp(cmd, "create") && strcmp(cmd, "snap") && strcmp(cmd, "info") &&
	    strcmp(cmd, "cow")) {
		fputs(usage, stderr);
		return 2;
	}
	ret = sdfs_open(conf, &s, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "sdfs-volbench: %s\n", err[0] ? err : strerror(-ret));
		return 1;
	}
	if (!strcmp(cmd, "create"))
		ret = do_create(s, argc - i, argv + i);
	else if (!strcmp(cmd, "snap"))
		ret = do_snap(s, argc - i, argv + i);
	else if (!strcmp(cmd, "cow"))
		ret = do_cow(s, argc - i, argv + i);
	else
		ret = do_info(s, argc - i, argv + i);
	sdfs_close(s);
	return ret;
}
