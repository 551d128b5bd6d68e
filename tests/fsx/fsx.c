/*
 * fsx.c - sdfs-fsx: a randomized data-integrity exerciser for one file
 * on a mounted filesystem (mount.sdfs, or any local dir to compare).
 *
 *   sdfs-fsx [OPTIONS] (--dir DIR | --file PATH)
 *
 * Random operations on the file - writes at random offsets and lengths
 * (past EOF, across object boundaries), reads, truncates up and down,
 * fallocate (allocate, punch hole), MAP_SHARED reads and writes with
 * msync, fsync, close and reopen, aligned O_DIRECT reads and writes,
 * SEEK_DATA/SEEK_HOLE - are mirrored on an in-memory model of the file's bytes. Every read is
 * compared with the model and the size with fstat after every
 * operation. On the first difference it prints the tail of the
 * operation log, the first differing offset with expected and actual
 * bytes and which logged write those bytes look like, and exits 1.
 *
 * Everything derives from the seed (--seed, printed at start): the same
 * seed and options replay the same operations. The bytes written by
 * operation #n at file offset p are a hash of (p, n), so a wrong byte
 * can be traced back to the write it came from.
 *
 * --fixed-size works on an existing file of a size that never changes
 * (a volume file, docs/volumes.md, whose content may be sealed chunks of
 * an erasure-coded volume): the model starts as the file's bytes, no
 * truncates, writes and fallocate stay inside the file.
 *
 * Not here: concurrency on one file (run several instances on
 * different files), namespace operations (tests/posix).
 * Single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FSX_LOG_KEEP    8192            /* ops kept for tracing bytes back */
#define FSX_LOG_TAIL    50              /* ops printed on a failure */
#define FSX_DIO_ALIGN   4096            /* O_DIRECT offsets, lengths, buffers */
#define FSX_SMALL_LEN   4096            /* "small" operations: up to this */
#define FSX_DUMP        16              /* bytes shown either side */

enum fsx_op {
	OP_READ, OP_WRITE, OP_MAPREAD, OP_MAPWRITE, OP_TRUNCATE, OP_FALLOC,
	OP_FALLOC_KEEP, OP_PUNCH, OP_FSYNC, OP_FDATASYNC, OP_REOPEN, OP_DREAD,
	OP_DWRITE, OP_SEEK_DATA, OP_SEEK_HOLE, OP_VERIFY, OP_COUNT
};

static const char *const op_name[OP_COUNT] = {
	[OP_READ] = "read", [OP_WRITE] = "write", [OP_MAPREAD] = "mapread",
	[OP_MAPWRITE] = "mapwrite", [OP_TRUNCATE] = "truncate",
	[OP_FALLOC] = "falloc", [OP_FALLOC_KEEP] = "falloc_keep",
	[OP_PUNCH] = "punch_hole", [OP_FSYNC] = "fsync",
	[OP_FDATASYNC] = "fdatasync", [OP_REOPEN] = "close/open",
	[OP_DREAD] = "dio_read", [OP_DWRITE] = "dio_write",
	[OP_SEEK_DATA] = "seek_data", [OP_SEEK_HOLE] = "seek_hole",
	[OP_VERIFY] = "verify_all",
};

/* Relative frequencies of the randomly chosen operations. */
static const unsigned op_weight[OP_COUNT] = {
	[OP_READ] = 24, [OP_WRITE] = 24, [OP_MAPREAD] = 7, [OP_MAPWRITE] = 7,
	[OP_TRUNCATE] = 6, [OP_FALLOC] = 3, [OP_FALLOC_KEEP] = 2,
	[OP_PUNCH] = 6, [OP_FSYNC] = 3, [OP_FDATASYNC] = 1, [OP_REOPEN] = 4,
	[OP_DREAD] = 4, [OP_DWRITE] = 4, [OP_SEEK_DATA] = 1, [OP_SEEK_HOLE] = 1,
};

struct fsx_opts {
	uint64_t ops;
	uint64_t seed;
	uint64_t max_size;      /* the file never grows past this */
	uint64_t max_len;       /* longest read/write */
	uint64_t obj_size;      /* boundaries that ops aim at */
	uint64_t verify_every;  /* whole-file check every N ops; 0: at the end only */
	uint64_t progress;      /* a progress line every N ops; 0: none */
	uint64_t pause_every;   /* close, sleep pause_ms, reopen, verify every N ops */
	uint64_t pause_ms;
	const char *dir, *file;
	int quiet, no_mmap, no_direct, no_falloc, keep, fixed;
};

struct fsx_rec {                /* one logged operation */
	uint64_t n;
	uint64_t off, len;
	uint64_t size_before, size_after;
	int64_t result;         /* lseek's */
	uint8_t op;
	uint8_t skipped;        /* chose the op but it had nothing to do */
	uint8_t uncached;       /* the range's cached pages dropped first */
};

struct fsx {
	struct fsx_opts o;
	char path[4096];
	int fd, dfd;            /* the file; its O_DIRECT twin (-1: closed) */
	uint8_t *model;         /* o.max_size bytes; zero past size */
	uint8_t *buf;           /* o.max_len + FSX_DIO_ALIGN, aligned */
	uint8_t *check;         /* the same, for re-reads on a failure */
	uint64_t size;          /* the model's file size */
	uint64_t rng;
	uint64_t n;             /* the current op's number */
	long page_size;
	struct fsx_rec log[FSX_LOG_KEEP];
	uint64_t count[OP_COUNT];
	double secs[OP_COUNT];  /* time spent in each kind */
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rnd(struct fsx *f)
{
	f->rng += 0x9e3779b97f4a7c15ull;
	return mix64(f->rng);
}

static uint64_t rnd_below(struct fsx *f, uint64_t n)
{
	return n ? rnd(f) % n : 0;
}

/* The byte op #n writes at file offset @p. */
static uint8_t pattern_byte(uint64_t n, uint64_t p)
{
	uint64_t w = mix64((p >> 3) * 0x2545f4914f6cdd1dull ^ (n + 1) * 0x9e3779b97f4a7c15ull);

	return (uint8_t)(w >> ((p & 7) * 8));
}

static void pattern_fill(uint8_t *dst, uint64_t n, uint64_t off, uint64_t len)
{
	uint64_t i = 0;

	while (i < len && ((off + i) & 7))
		dst[i] = pattern_byte(n, off + i), i++;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix64(((off + i) >> 3) * 0x2545f4914f6cdd1dull ^
				   (n + 1) * 0x9e3779b97f4a7c15ull);
		memcpy(dst + i, &w, 8);         /* little-endian hosts only */
	}
	for (; i < len; i++)
		dst[i] = pattern_byte(n, off + i);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the log and failure reports ---- */

static struct fsx_rec *rec_of(struct fsx *f, uint64_t n)
{
	return &f->log[n % FSX_LOG_KEEP];
}

static int op_writes_data(int op)
{
	return op == OP_WRITE || op == OP_MAPWRITE || op == OP_DWRITE;
}

static void print_rec(const struct fsx_opts *o, const struct fsx_rec *r)
{
	uint64_t end = r->off + r->len;

	fprintf(stderr, "  #%-8" PRIu64 " %-11s", r->n, op_name[r->op]);
	if (r->op == OP_TRUNCATE)
		fprintf(stderr, " to 0x%" PRIx64, r->size_after);
	else if (r->op == OP_SEEK_DATA || r->op == OP_SEEK_HOLE)
		fprintf(stderr, " from 0x%09" PRIx64 " -> %s0x%" PRIx64, r->off,
			r->result < 0 ? "-" : "", (uint64_t)(r->result < 0 ? -r->result : r->result));
	else if (r->len)
		fprintf(stderr, " 0x%09" PRIx64 "..0x%09" PRIx64 " (0x%" PRIx64 ")",
			r->off, end, r->len);
	if (r->size_before != r->size_after)
		fprintf(stderr, " size 0x%" PRIx64 " -> 0x%" PRIx64, r->size_before,
			r->size_after);
	if (r->len && r->off / o->obj_size != (end - 1) / o->obj_size)
		fprintf(stderr, " [objects %" PRIu64 "-%" PRIu64 "]", r->off / o->obj_size,
			(end - 1) / o->obj_size);
	if (r->skipped)
		fprintf(stderr, " (skipped)");
	if (r->uncached)
		fprintf(stderr, " (cache dropped first)");
	fputc('\n', stderr);
}

static void print_log_tail(struct fsx *f)
{
	uint64_t first = f->n + 1 > FSX_LOG_TAIL ? f->n + 1 - FSX_LOG_TAIL : 0;

	fprintf(stderr, "fsx: last %" PRIu64 " operations (seed %" PRIu64 "):\n",
		f->n + 1 - first, f->o.seed);
	for (uint64_t i = first; i <= f->n; i++)
		print_rec(&f->o, rec_of(f, i));
}

/* Which logged op last changed the byte at @p (or zeroed it). */
static void trace_byte(struct fsx *f, uint64_t p, uint8_t got)
{
	uint64_t first = f->n + 1 > FSX_LOG_KEEP ? f->n + 1 - FSX_LOG_KEEP : 0;
	int said_last = 0, found_got = 0;

	for (uint64_t i = f->n + 1; i-- > first;) {
		const struct fsx_rec *r = rec_of(f, i);
		int covers = r->len && p >= r->off && p < r->off + r->len;

		if (!said_last && i < f->n && covers && !r->skipped &&
		    (op_writes_data(r->op) || r->op == OP_PUNCH)) {
			fprintf(stderr, "fsx: offset 0x%" PRIx64 " last written by #%" PRIu64
				" (%s)\n", p, r->n, op_name[r->op]);
			said_last = 1;
		}
		if (!said_last && i < f->n && r->op == OP_TRUNCATE && r->size_after <= p &&
		    r->size_before > p) {
			fprintf(stderr, "fsx: offset 0x%" PRIx64 " last cut off by #%" PRIu64
				" (truncate to 0x%" PRIx64 ")\n", p, r->n, r->size_after);
			said_last = 1;
		}
		if (!found_got && covers && op_writes_data(r->op) &&
		    pattern_byte(r->n, p) == got) {
			fprintf(stderr, "fsx: the byte read there is what #%" PRIu64 " (%s) wrote\n",
				r->n, op_name[r->op]);
			found_got = 1;
		}
	}
	if (!said_last)
		fprintf(stderr, "fsx: no op in the last %d wrote offset 0x%" PRIx64 "\n",
			FSX_LOG_KEEP, p);
	if (!found_got)
		fprintf(stderr, "fsx: no logged write put byte 0x%02x there%s\n", got,
			got == 0 ? " (zero: a hole or a punched/truncated range?)" : "");
}

static void dump_bytes(const char *what, const uint8_t *b, uint64_t base, uint64_t from,
		       uint64_t to)
{
	fprintf(stderr, "  %-8s 0x%09" PRIx64 ":", what, base + from);
	for (uint64_t i = from; i < to; i++)
		fprintf(stderr, " %02x", b[i]);
	fputc('\n', stderr);
}

static void die(struct fsx *f, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(struct fsx *f, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "fsx: FAILED at op #%" PRIu64 " (%s): ", f->n,
		op_name[rec_of(f, f->n)->op]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	print_log_tail(f);
	fprintf(stderr, "fsx: file %s kept; replay with --seed %" PRIu64 "\n", f->path,
		f->o.seed);
	exit(1);
}

/* ---- file access ---- */

static void open_file(struct fsx *f)
{
	f->fd = open(f->path, O_RDWR | O_CLOEXEC);
	if (f->fd < 0)
		die(f, "open %s: %s", f->path, strerror(errno));
}

static int open_direct(struct fsx *f)
{
	if (f->dfd >= 0)
		return 0;
	f->dfd = open(f->path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (f->dfd >= 0)
		return 0;
	if (errno != EINVAL)
		die(f, "open O_DIRECT %s: %s", f->path, strerror(errno));
	fprintf(stderr, "fsx: O_DIRECT not supported here; no direct I/O from now on\n");
	f->o.no_direct = 1;
	return -1;
}

static void close_direct(struct fsx *f)
{
	if (f->dfd >= 0 && close(f->dfd))
		die(f, "close O_DIRECT: %s", strerror(errno));
	f->dfd = -1;
}

/* pread until @len or EOF; short reads are legal. Returns bytes read. */
static uint64_t read_all(struct fsx *f, int fd, uint8_t *dst, uint64_t off, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, dst + done, len - done, (off_t)(off + done));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			die(f, "pread 0x%" PRIx64 "+0x%" PRIx64 ": %s", off + done,
			    len - done, strerror(errno));
		}
		if (r == 0)
			break;
		done += (uint64_t)r;
	}
	return done;
}

static void write_all(struct fsx *f, int fd, const uint8_t *src, uint64_t off, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		ssize_t r = pwrite(fd, src + done, len - done, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die(f, "pwrite 0x%" PRIx64 "+0x%" PRIx64 ": %s", off + done,
			    len - done, r < 0 ? strerror(errno) : "wrote nothing");
		done += (uint64_t)r;
	}
}

/* After a mismatch: read the range again through the cache and,
 * bypassing it, through O_DIRECT, so the report says where the wrong
 * bytes live. */
static void reread(struct fsx *f, uint64_t off, uint64_t len, uint64_t bad)
{
	uint64_t got = read_all(f, f->fd, f->check, off, len);

	fprintf(stderr, "fsx: re-read through the page cache: %s\n",
		got == len && !memcmp(f->check, f->model + off, len) ? "now right" :
		got == len && f->check[bad - off] == f->buf[bad - off] ? "same wrong bytes" :
		"different again");
	if (f->o.no_direct)
		return;
	int fd = open(f->path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	uint64_t a = bad & ~(uint64_t)(FSX_DIO_ALIGN - 1);
	if (fd < 0)
		return;
	if (pread(fd, f->check, FSX_DIO_ALIGN, (off_t)a) > (ssize_t)(bad - a)) {
		fprintf(stderr, "fsx: O_DIRECT read of that byte (the cluster's copy): 0x%02x "
			"(expected 0x%02x)\n", f->check[bad - a], f->model[bad]);
	}
	close(fd);
}

/* Compare @got bytes read at @off (wanted @len) with the model. */
static void check_read(struct fsx *f, const uint8_t *data, uint64_t off, uint64_t len,
		       uint64_t got, const char *how)
{
	uint64_t want = off >= f->size ? 0 : (len < f->size - off ? len : f->size - off);

	if (got != want) {
		fprintf(stderr, "fsx: %s at 0x%" PRIx64 " of 0x%" PRIx64 " bytes returned 0x%"
			PRIx64 ", expected 0x%" PRIx64 " (model size 0x%" PRIx64 ")\n",
			how, off, len, got, want, f->size);
		die(f, "short or long read");
	}
	if (!memcmp(data, f->model + off, want))
		return;
	uint64_t i = 0, nbad = 0, last = 0;
	while (data[i] == f->model[off + i])
		i++;
	for (uint64_t j = i; j < want; j++)
		if (data[j] != f->model[off + j]) {
			nbad++;
			last = j;
		}
	uint64_t from = i > FSX_DUMP ? i - FSX_DUMP : 0;
	uint64_t to = i + FSX_DUMP < want ? i + FSX_DUMP : want;
	fflush(stdout);
	fprintf(stderr, "fsx: %s of 0x%" PRIx64 "..0x%" PRIx64 ": first bad byte at file offset "
		"0x%" PRIx64 " (object %" PRIu64 " +0x%" PRIx64 "): expected 0x%02x, got 0x%02x; "
		"%" PRIu64 " bad bytes up to 0x%" PRIx64 "\n", how, off, off + want, off + i,
		(off + i) / f->o.obj_size, (off + i) % f->o.obj_size, f->model[off + i],
		data[i], nbad, off + last);
	dump_bytes("expected", f->model + off, off, from, to);
	dump_bytes("got", data, off, from, to);
	trace_byte(f, off + i, data[i]);
	if (data != f->buf)
		memcpy(f->buf, data, want);     /* reread compares against it */
	reread(f, off, want, off + i);
	die(f, "data mismatch at 0x%" PRIx64, off + i);
}

static void check_size(struct fsx *f)
{
	struct stat st;

	if (fstat(f->fd, &st))
		die(f, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size != f->size)
		die(f, "fstat size 0x%" PRIx64 ", expected 0x%" PRIx64,
		    (uint64_t)st.st_size, f->size);
}

/* ---- choosing ranges ---- */

static uint64_t pick_len(struct fsx *f)
{
	if (rnd_below(f, 4) == 0)
		return 1 + rnd_below(f, FSX_SMALL_LEN);
	return 1 + rnd_below(f, f->o.max_len);
}

/* A range within [0, max_size): a quarter cross an object boundary,
 * an eighth start at or just past EOF, the rest anywhere. */
static void pick_range(struct fsx *f, uint64_t *off, uint64_t *len)
{
	uint64_t l = pick_len(f), o, r = rnd_below(f, 8);
	uint64_t nobj = f->o.max_size / f->o.obj_size;

	if (r < 2 && nobj > 0) {
		uint64_t b = f->o.obj_size * (1 + rnd_below(f, nobj));

		if (b >= f->o.max_size)
			b = f->o.max_size - 1;
		o = b - 1 - rnd_below(f, l < b ? l : b);
	} else if (r == 2) {
		o = f->size + rnd_below(f, 4 * FSX_SMALL_LEN + 1);
	} else {
		o = rnd_below(f, f->o.max_size);
	}
	if (o >= f->o.max_size)
		o = f->o.max_size - 1;
	if (l > f->o.max_size - o)
		l = f->o.max_size - o;
	*off = o;
	*len = l;
}

/* A range mostly within the file (reads), sometimes past its end. */
static void pick_read_range(struct fsx *f, uint64_t *off, uint64_t *len)
{
	uint64_t r = rnd_below(f, 8);

	if (r < 2) {
		pick_range(f, off, len);        /* boundary-crossing or past EOF */
		return;
	}
	*len = pick_len(f);
	*off = rnd_below(f, f->size + 1);
}

static void align_range(uint64_t *off, uint64_t *len, uint64_t max)
{
	uint64_t a = FSX_DIO_ALIGN;

	*off &= ~(a - 1);
	*len = (*len + a - 1) & ~(a - 1);
	if (*off + *len > max)
		*len = max - *off;      /* max is aligned */
	if (*len == 0) {
		*off -= a;
		*len = a;
	}
}

/* ---- the operations ---- */

static void model_write(struct fsx *f, const uint8_t *src, uint64_t off, uint64_t len)
{
	memcpy(f->model + off, src, len);
	if (off + len > f->size)
		f->size = off + len;
}

/* Half the reads first drop the range's clean pages, so that they
 * reach the filesystem and not only what this kernel cached. */
static void do_read(struct fsx *f, struct fsx_rec *r)
{
	pick_read_range(f, &r->off, &r->len);
	if (rnd_below(f, 2)) {
		r->uncached = 1;
		if (posix_fadvise(f->fd, (off_t)r->off, (off_t)r->len, POSIX_FADV_DONTNEED))
			die(f, "posix_fadvise DONTNEED: %s", strerror(errno));
	}
	check_read(f, f->buf, r->off, r->len, read_all(f, f->fd, f->buf, r->off, r->len),
		   "read");
}

static void do_write(struct fsx *f, struct fsx_rec *r)
{
	pick_range(f, &r->off, &r->len);
	pattern_fill(f->buf, f->n, r->off, r->len);
	write_all(f, f->fd, f->buf, r->off, r->len);
	model_write(f, f->buf, r->off, r->len);
}

/*
 * A fault on a mapping (SIGBUS: the page is past the kernel's idea of
 * EOF, or reading it failed) comes back to the mmap op as a failure
 * with the op log, instead of killing the process without a word.
 */
static sigjmp_buf map_fault_jmp;
static volatile sig_atomic_t map_armed;
static void *volatile map_fault_addr;

static void on_map_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (!map_armed) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	map_armed = 0;
	map_fault_addr = si->si_addr;
	siglongjmp(map_fault_jmp, sig);
}

static void catch_map_faults(void)
{
	struct sigaction sa = { .sa_sigaction = on_map_fault, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

/* After a fault in [@p, @p+@len) mapped from file offset @off. */
static void map_fault(struct fsx *f, int sig, const uint8_t *p, uint64_t off, const char *how)
{
	uint64_t at = off + (uint64_t)((const uint8_t *)map_fault_addr - p);
	struct stat st;
	int ret = fstat(f->fd, &st);

	die(f, "%s on an mmap %s at file offset 0x%" PRIx64 " (object %" PRIu64 "); model size "
	    "0x%" PRIx64 ", fstat now says %s0x%" PRIx64, strsignal(sig), how, at,
	    at / f->o.obj_size, f->size, ret ? "(failed) " : "",
	    ret ? 0 : (uint64_t)st.st_size);
}

static uint8_t *map_range(struct fsx *f, uint64_t off, uint64_t len, int prot,
			  uint64_t *map_off, uint64_t *map_len)
{
	void *p;

	*map_off = off & ~(uint64_t)(f->page_size - 1);
	*map_len = off + len - *map_off;
	p = mmap(NULL, *map_len, prot, MAP_SHARED, f->fd, (off_t)*map_off);
	if (p == MAP_FAILED)
		die(f, "mmap 0x%" PRIx64 "+0x%" PRIx64 ": %s", *map_off, *map_len,
		    strerror(errno));
	return (uint8_t *)p + (off - *map_off);
}

static void unmap(struct fsx *f, uint8_t *p, uint64_t off, uint64_t map_off, uint64_t map_len)
{
	if (munmap(p - (off - map_off), map_len))
		die(f, "munmap: %s", strerror(errno));
}

static void do_mapread(struct fsx *f, struct fsx_rec *r)
{
	uint64_t mo, ml;
	uint8_t *p;

	if (f->size == 0) {
		r->skipped = 1;
		return;
	}
	r->off = rnd_below(f, f->size);
	r->len = pick_len(f);
	if (r->len > f->size - r->off)
		r->len = f->size - r->off;
	p = map_range(f, r->off, r->len, PROT_READ, &mo, &ml);
	int sig = sigsetjmp(map_fault_jmp, 1);
	if (sig)
		map_fault(f, sig, p, r->off, "read");
	map_armed = 1;
	/* touch every page first: a fault is then not a "mismatch" */
	for (uint64_t i = 0; i < r->len; i += (uint64_t)f->page_size)
		(void)*(volatile uint8_t *)(p + i);
	(void)*(volatile uint8_t *)(p + r->len - 1);
	map_armed = 0;
	check_read(f, p, r->off, r->len, r->len, "mmap read");
	unmap(f, p, r->off, mo, ml);
}

static void do_mapwrite(struct fsx *f, struct fsx_rec *r)
{
	uint64_t mo, ml;
	uint8_t *p;

	pick_range(f, &r->off, &r->len);
	if (r->off + r->len > f->size) {
		/* pages past EOF cannot be written through a mapping */
		if (ftruncate(f->fd, (off_t)(r->off + r->len)))
			die(f, "ftruncate to 0x%" PRIx64 " before mapwrite: %s",
			    r->off + r->len, strerror(errno));
		f->size = r->off + r->len;
	}
	p = map_range(f, r->off, r->len, PROT_READ | PROT_WRITE, &mo, &ml);
	pattern_fill(f->buf, f->n, r->off, r->len);
	int sig = sigsetjmp(map_fault_jmp, 1);
	if (sig)
		map_fault(f, sig, p, r->off, "write");
	map_armed = 1;
	memcpy(p, f->buf, r->len);
	map_armed = 0;
	if (msync(p - (r->off - mo), ml, MS_SYNC))
		die(f, "msync: %s", strerror(errno));
	model_write(f, f->buf, r->off, r->len);
	unmap(f, p, r->off, mo, ml);
}

static void do_truncate(struct fsx *f)
{
	uint64_t to, k = rnd_below(f, 6), nobj = f->o.max_size / f->o.obj_size;

	if (k < 2)                              /* down */
		to = rnd_below(f, f->size + 1);
	else if (k < 4)                         /* up */
		to = f->size + rnd_below(f, f->o.max_size - f->size + 1);
	else if (k == 4 && nobj > 0) {          /* at or next to a boundary */
		to = f->o.obj_size * rnd_below(f, nobj + 1) + rnd_below(f, 3);
		to = to ? to - 1 : 0;
	} else
		to = rnd_below(f, f->o.max_size + 1);
	if (to > f->o.max_size)
		to = f->o.max_size;
	if (ftruncate(f->fd, (off_t)to))
		die(f, "ftruncate to 0x%" PRIx64 ": %s", to, strerror(errno));
	if (to < f->size)
		memset(f->model + to, 0, f->size - to);
	f->size = to;
}

static void falloc_unsupported(struct fsx *f, const char *what)
{
	fprintf(stderr, "fsx: fallocate %s not supported here; no fallocate from now on\n",
		what);
	f->o.no_falloc = 1;
}

static void do_falloc(struct fsx *f, struct fsx_rec *r, int mode)
{
	pick_range(f, &r->off, &r->len);
	if (fallocate(f->fd, mode, (off_t)r->off, (off_t)r->len)) {
		if (errno == EOPNOTSUPP) {
			falloc_unsupported(f, mode ? "KEEP_SIZE" : "");
			r->skipped = 1;
			return;
		}
		die(f, "fallocate mode %d 0x%" PRIx64 "+0x%" PRIx64 ": %s", mode, r->off,
		    r->len, strerror(errno));
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) && r->off + r->len > f->size)
		f->size = r->off + r->len;      /* the new bytes read as zeros */
}

static void do_punch(struct fsx *f, struct fsx_rec *r)
{
	uint64_t end;

	pick_read_range(f, &r->off, &r->len);
	if (r->off >= f->o.max_size)
		r->off = f->o.max_size - 1;
	if (r->len > f->o.max_size - r->off)
		r->len = f->o.max_size - r->off;
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)r->off,
		      (off_t)r->len)) {
		if (errno == EOPNOTSUPP) {
			falloc_unsupported(f, "PUNCH_HOLE");
			r->skipped = 1;
			return;
		}
		die(f, "punch hole 0x%" PRIx64 "+0x%" PRIx64 ": %s", r->off, r->len,
		    strerror(errno));
	}
	end = r->off + r->len < f->size ? r->off + r->len : f->size;
	if (r->off < end)
		memset(f->model + r->off, 0, end - r->off);
}

static void do_sync(struct fsx *f, int data_only)
{
	if ((data_only ? fdatasync(f->fd) : fsync(f->fd)))
		die(f, "%s: %s", data_only ? "fdatasync" : "fsync", strerror(errno));
}

static void do_reopen(struct fsx *f)
{
	if (close(f->fd))
		die(f, "close: %s", strerror(errno));
	close_direct(f);
	open_file(f);
}

static void do_dread(struct fsx *f, struct fsx_rec *r)
{
	uint64_t got;

	if (open_direct(f)) {
		r->skipped = 1;
		return;
	}
	r->off = rnd_below(f, f->size + 1);
	r->len = pick_len(f);
	align_range(&r->off, &r->len, f->o.max_size);
	got = read_all(f, f->dfd, f->buf, r->off, r->len);
	check_read(f, f->buf, r->off, r->len, got, "O_DIRECT read");
}

static void do_dwrite(struct fsx *f, struct fsx_rec *r)
{
	if (open_direct(f)) {
		r->skipped = 1;
		return;
	}
	pick_range(f, &r->off, &r->len);
	align_range(&r->off, &r->len, f->o.max_size);
	pattern_fill(f->buf, f->n, r->off, r->len);
	write_all(f, f->dfd, f->buf, r->off, r->len);
	model_write(f, f->buf, r->off, r->len);
}

static int model_zero(const struct fsx *f, uint64_t from, uint64_t to, uint64_t *nonzero)
{
	for (uint64_t i = from; i < to; i++)
		if (f->model[i]) {
			*nonzero = i;
			return 0;
		}
	return 1;
}

/*
 * SEEK_DATA and SEEK_HOLE may be coarse (a filesystem may call any
 * range data), but never wrong: SEEK_DATA skips only bytes that read
 * as zeros, SEEK_HOLE lands on a zero byte or at EOF, and both give
 * ENXIO at or past EOF.
 */
static void do_seek(struct fsx *f, struct fsx_rec *r, int whence)
{
	const char *how = whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE";
	uint64_t nz;
	off_t res;

	r->off = rnd_below(f, 8) ? rnd_below(f, f->size + 1) : f->size + rnd_below(f, 4096);
	res = lseek(f->fd, (off_t)r->off, whence);
	r->result = res < 0 ? -errno : res;
	if (r->off >= f->size) {
		if (res >= 0 || errno != ENXIO)
			die(f, "%s from 0x%" PRIx64 " at or past EOF 0x%" PRIx64 ": %s, expected "
			    "ENXIO", how, r->off, f->size, res < 0 ? strerror(errno) : "an offset");
		return;
	}
	if (res < 0) {
		if (errno != ENXIO || whence != SEEK_DATA)
			die(f, "%s from 0x%" PRIx64 ": %s", how, r->off, strerror(errno));
		if (!model_zero(f, r->off, f->size, &nz))
			die(f, "SEEK_DATA from 0x%" PRIx64 ": ENXIO, but byte 0x%" PRIx64
			    " is data (0x%02x)", r->off, nz, f->model[nz]);
		return;
	}
	if ((uint64_t)res < r->off || (uint64_t)res > f->size ||
	    (whence == SEEK_DATA && (uint64_t)res == f->size))
		die(f, "%s from 0x%" PRIx64 " -> 0x%" PRIx64 ": outside [0x%" PRIx64
		    ", 0x%" PRIx64 "%c", how, r->off, (uint64_t)res, r->off, f->size,
		    whence == SEEK_DATA ? ')' : ']');
	if (whence == SEEK_DATA && !model_zero(f, r->off, (uint64_t)res, &nz))
		die(f, "SEEK_DATA from 0x%" PRIx64 " -> 0x%" PRIx64 " skipped data at 0x%"
		    PRIx64 " (0x%02x)", r->off, (uint64_t)res, nz, f->model[nz]);
	if (whence == SEEK_HOLE && (uint64_t)res < f->size && f->model[res])
		die(f, "SEEK_HOLE from 0x%" PRIx64 " -> 0x%" PRIx64 ", but that byte is data "
		    "(0x%02x)", r->off, (uint64_t)res, f->model[res]);
}

/* The whole file against the model, from the filesystem itself:
 * through O_DIRECT, or after dropping the file's cached pages. */
static void verify_all(struct fsx *f)
{
	uint64_t chunk = f->o.max_len;
	int fd = f->fd;

	if (!f->o.no_direct && !open_direct(f)) {
		fd = f->dfd;
		chunk = (f->o.max_len + FSX_DIO_ALIGN - 1) & ~(uint64_t)(FSX_DIO_ALIGN - 1);
	} else if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) {
		die(f, "posix_fadvise DONTNEED: %s", strerror(errno));
	}
	for (uint64_t off = 0; off < f->size; off += chunk) {
		uint64_t len = f->size - off < chunk ? f->size - off : chunk;

		if (fd == f->dfd)       /* whole blocks; the last one comes back short */
			len = (len + FSX_DIO_ALIGN - 1) & ~(uint64_t)(FSX_DIO_ALIGN - 1);
		check_read(f, f->buf, off, len, read_all(f, fd, f->buf, off, len),
			   fd == f->dfd ? "whole-file O_DIRECT read" : "whole-file read");
	}
}

static int op_enabled(const struct fsx_opts *o, int op)
{
	switch (op) {
	case OP_MAPREAD: case OP_MAPWRITE:
		return !o->no_mmap;
	case OP_FALLOC: case OP_FALLOC_KEEP: case OP_PUNCH:
		return !o->no_falloc;
	case OP_DREAD: case OP_DWRITE:
		return !o->no_direct;
	case OP_TRUNCATE:
		return !o->fixed;
	default:
		return 1;
	}
}

static int pick_op(struct fsx *f)
{
	unsigned total = 0, x;

	for (int i = 0; i < OP_COUNT; i++)
		total += op_enabled(&f->o, i) ? op_weight[i] : 0;
	x = (unsigned)rnd_below(f, total);
	for (int i = 0; i < OP_COUNT; i++) {
		unsigned w = op_enabled(&f->o, i) ? op_weight[i] : 0;

		if (x < w)
			return i;
		x -= w;
	}
	return OP_READ;
}

static void run_op(struct fsx *f, int op)
{
	struct fsx_rec *r = rec_of(f, f->n);
	double t0 = now_s();

	*r = (struct fsx_rec){ .n = f->n, .op = (uint8_t)op, .size_before = f->size,
			       .size_after = f->size };
	switch (op) {
	case OP_READ:           do_read(f, r); break;
	case OP_WRITE:          do_write(f, r); break;
	case OP_MAPREAD:        do_mapread(f, r); break;
	case OP_MAPWRITE:       do_mapwrite(f, r); break;
	case OP_TRUNCATE:       do_truncate(f); break;
	case OP_FALLOC:         do_falloc(f, r, 0); break;
	case OP_FALLOC_KEEP:    do_falloc(f, r, FALLOC_FL_KEEP_SIZE); break;
	case OP_PUNCH:          do_punch(f, r); break;
	case OP_FSYNC:          do_sync(f, 0); break;
	case OP_FDATASYNC:      do_sync(f, 1); break;
	case OP_REOPEN:         do_reopen(f); break;
	case OP_DREAD:          do_dread(f, r); break;
	case OP_DWRITE:         do_dwrite(f, r); break;
	case OP_SEEK_DATA:      do_seek(f, r, SEEK_DATA); break;
	case OP_SEEK_HOLE:      do_seek(f, r, SEEK_HOLE); break;
	case OP_VERIFY:         verify_all(f); break;
	}
	r->size_after = f->size;
	check_size(f);
	f->count[op]++;
	f->secs[op] += now_s() - t0;
}

/* ---- options and main ---- */

static void usage(FILE *out)
{
	fprintf(out,
"usage: sdfs-fsx [OPTIONS] (--dir DIR | --file PATH)\n"
"Random writes, reads, truncates, fallocate, mmap, fsync, reopen,\n"
"O_DIRECT and SEEK_DATA/SEEK_HOLE on one file, each checked against a\n"
"model of its bytes.\n"
"\n"
"  --dir DIR          work on DIR/fsx.SEED (removed after a clean run)\n"
"  --file PATH        work on PATH (created or truncated)\n"
"  --fixed-size       with --file: PATH exists and keeps its size (a volume\n"
"                     file); its bytes are the model's start, no truncates\n"
"  --ops N            operations to run (default 10000)\n"
"  --seed S           the random seed (default: from the clock; printed)\n"
"  --max-size SIZE    the file's largest size (default 32M; K, M, G)\n"
"  --max-len SIZE     longest single read or write (default 256K)\n"
"  --obj-size SIZE    object boundaries to aim at (default 4M)\n"
"  --verify-every N   read the whole file back every N ops (default 10000; 0: end only)\n"
"  --progress N       a progress line every N ops (default 10000; 0: none)\n"
"  --quiet            only the start line, failures and the summary\n"
"  --no-mmap          no mmap reads or writes\n"
"  --no-direct        no O_DIRECT reads or writes\n"
"  --no-fallocate     no fallocate (allocate, punch hole)\n"
"  --keep             keep the --dir file after a clean run\n"
"  --pause-every N    every N ops: close the file, sleep --pause-ms (default\n"
"                     5000), reopen and verify all (a file system may act on\n"
"                     a closed file meanwhile: sdfs seals EC files)\n"
"  -h, --help         this help\n"
"Exit status: 0 all verified, 1 a mismatch or failed call, 2 usage.\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *e;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &e, 0);
	if (errno || e == s)
		return -1;
	switch (*e) {
	case 'k': case 'K': v <<= 10; e++; break;
	case 'm': case 'M': v <<= 20; e++; break;
	case 'g': case 'G': v <<= 30; e++; break;
	}
	if (*e)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(struct fsx_opts *o, int argc, char **argv, int *seeded)
{
	enum { O_DIR = 256, O_FILE, O_OPS, O_SEED, O_MAXSIZE, O_MAXLEN, O_OBJSIZE,
	       O_VERIFY, O_PROGRESS, O_QUIET, O_NOMMAP, O_NODIRECT, O_NOFALLOC, O_KEEP, O_FIXED,
	       O_PAUSE_EVERY, O_PAUSE_MS };
	static const struct option lopts[] = {
		{ "dir", required_argument, NULL, O_DIR },
		{ "file", required_argument, NULL, O_FILE },
		{ "ops", required_argument, NULL, O_OPS },
		{ "seed", required_argument, NULL, O_SEED },
		{ "max-size", required_argument, NULL, O_MAXSIZE },
		{ "max-len", required_argument, NULL, O_MAXLEN },
		{ "obj-size", required_argument, NULL, O_OBJSIZE },
		{ "verify-every", required_argument, NULL, O_VERIFY },
		{ "progress", required_argument, NULL, O_PROGRESS },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "no-mmap", no_argument, NULL, O_NOMMAP },
		{ "no-direct", no_argument, NULL, O_NODIRECT },
		{ "no-fallocate", no_argument, NULL, O_NOFALLOC },
		{ "keep", no_argument, NULL, O_KEEP },
		{ "fixed-size", no_argument, NULL, O_FIXED },
		{ "pause-every", required_argument, NULL, O_PAUSE_EVERY },
		{ "pause-ms", required_argument, NULL, O_PAUSE_MS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case O_DIR:      o->dir = optarg; break;
		case O_FILE:     o->file = optarg; break;
		case O_OPS:      bad = parse_size(optarg, &o->ops); break;
		case O_SEED:     bad = parse_size(optarg, &o->seed); *seeded = 1; break;
		case O_MAXSIZE:  bad = parse_size(optarg, &o->max_size); break;
		case O_MAXLEN:   bad = parse_size(optarg, &o->max_len); break;
		case O_OBJSIZE:  bad = parse_size(optarg, &o->obj_size); break;
		case O_VERIFY:   bad = parse_size(optarg, &o->verify_every); break;
		case O_PROGRESS: bad = parse_size(optarg, &o->progress); break;
		case O_QUIET:    o->quiet = 1; break;
		case O_NOMMAP:   o->no_mmap = 1; break;
		case O_NODIRECT: o->no_direct = 1; break;
		case O_NOFALLOC: o->no_falloc = 1; break;
		case O_KEEP:     o->keep = 1; break;
		case O_FIXED:    o->fixed = 1; break;
		case O_PAUSE_EVERY: bad = parse_size(optarg, &o->pause_every); break;
		case O_PAUSE_MS: bad = parse_size(optarg, &o->pause_ms); break;
		case 'h':        usage(stdout); exit(0);
		default:         return -1;
		}
		if (bad) {
			fprintf(stderr, "sdfs-fsx: bad value '%s'\n", optarg);
			return -1;
		}
	}
	if (optind != argc || !o->dir == !o->file) {
		fprintf(stderr, "sdfs-fsx: give --dir or --file (one of them)\n");
		return -1;
	}
	if (o->fixed && !o->file) {
		fprintf(stderr, "sdfs-fsx: --fixed-size needs --file\n");
		return -1;
	}
	if (o->max_size < 2 * FSX_DIO_ALIGN || o->max_size % FSX_DIO_ALIGN ||
	    o->max_size > (1ull << 36)) {
		fprintf(stderr, "sdfs-fsx: --max-size: a multiple of %d from 8K to 64G\n",
			FSX_DIO_ALIGN);
		return -1;
	}
	if (o->max_len < 1 || o->max_len > o->max_size || o->max_len > (256u << 20) ||
	    o->obj_size < 1) {
		fprintf(stderr, "sdfs-fsx: --max-len: 1 to min(--max-size, 256M); "
			"--obj-size > 0\n");
		return -1;
	}
	return 0;
}

static void *xalloc(size_t len, int zero)
{
	void *p;

	if (posix_memalign(&p, FSX_DIO_ALIGN, len)) {
		fprintf(stderr, "sdfs-fsx: out of memory (%zu bytes)\n", len);
		exit(1);
	}
	if (zero)
		memset(p, 0, len);
	return p;
}

/* --fixed-size: open the existing file; its size is max_size for good,
 * its bytes the model. 0, or 1 with the reason printed. */
static int open_fixed(struct fsx *f)
{
	struct stat st;

	f->fd = open(f->path, O_RDWR | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &st)) {
		fprintf(stderr, "sdfs-fsx: %s: %s\n", f->path, strerror(errno));
		return 1;
	}
	if (st.st_size < 2 * FSX_DIO_ALIGN || st.st_size % FSX_DIO_ALIGN ||
	    (uint64_t)st.st_size > (1ull << 36)) {
		fprintf(stderr, "sdfs-fsx: --fixed-size: %s is %jd bytes, not a multiple "
			"of %d from 8K to 64G\n", f->path, (intmax_t)st.st_size, FSX_DIO_ALIGN);
		return 1;
	}
	f->o.max_size = f->size = (uint64_t)st.st_size;
	if (f->o.max_len > f->o.max_size)
		f->o.max_len = f->o.max_size;
	f->model = xalloc(f->o.max_size, 0);
	for (uint64_t off = 0; off < f->size;) {
		ssize_t got = pread(f->fd, f->model + off, f->size - off, (off_t)off);

		if (got <= 0) {
			fprintf(stderr, "sdfs-fsx: reading %s at 0x%" PRIx64 ": %s\n", f->path,
				off, got ? strerror(errno) : "end of file");
			return 1;
		}
		off += (uint64_t)got;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct fsx f = { .o = { .ops = 10000, .max_size = 32u << 20,
				       .max_len = 256u << 10, .obj_size = 4u << 20,
				       .verify_every = 10000, .progress = 10000 },
				.fd = -1, .dfd = -1 };
	int seeded = 0;
	double t0, dt;

	if (parse_args(&f.o, argc, argv, &seeded)) {
		usage(stderr);
		return 2;
	}
	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		f.o.seed = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
				 (uint64_t)getpid()) % 1000000000000ull;
	}
	f.rng = f.o.seed;
	catch_map_faults();
	f.page_size = sysconf(_SC_PAGESIZE);
	if (f.o.file)
		snprintf(f.path, sizeof(f.path), "%s", f.o.file);
	else
		snprintf(f.path, sizeof(f.path), "%s/fsx.%" PRIu64, f.o.dir, f.o.seed);
	if (f.o.fixed && open_fixed(&f))
		return 1;
	if (!f.o.fixed)
		f.model = xalloc(f.o.max_size, 1);
	f.buf = xalloc(f.o.max_len + FSX_DIO_ALIGN, 0);
	f.check = xalloc(f.o.max_len + FSX_DIO_ALIGN, 0);
	printf("sdfs-fsx: seed %" PRIu64 ", %" PRIu64 " ops on %s, max size 0x%" PRIx64
	       ", max len 0x%" PRIx64 "%s%s%s\n", f.o.seed, f.o.ops, f.path, f.o.max_size,
	       f.o.max_len, f.o.no_mmap ? ", no mmap" : "", f.o.no_direct ? ", no O_DIRECT" : "",
	       f.o.no_falloc ? ", no fallocate" : "");
	fflush(stdout);

	if (!f.o.fixed)
		f.fd = open(f.path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f.fd < 0) {
		fprintf(stderr, "sdfs-fsx: %s: %s\n", f.path, strerror(errno));
		return 1;
	}
	t0 = now_s();
	for (f.n = 0; f.n < f.o.ops; f.n++) {
		int op = pick_op(&f);

		if (f.o.verify_every && f.n && f.n % f.o.verify_every == 0)
			op = OP_VERIFY;
		if (f.o.pause_every && f.n && f.n % f.o.pause_every == 0) {
			if (close(f.fd))
				die(&f, "close: %s", strerror(errno));
			close_direct(&f);
			usleep((useconds_t)(f.o.pause_ms ? f.o.pause_ms : 5000) * 1000);
			open_file(&f);
			verify_all(&f);
		}
		run_op(&f, op);
		if (!f.o.quiet && f.o.progress && (f.n + 1) % f.o.progress == 0) {
			printf("sdfs-fsx: %" PRIu64 " ops, size 0x%" PRIx64 ", %.0f ops/s\n",
			       f.n + 1, f.size, (double)(f.n + 1) / (now_s() - t0));
			fflush(stdout);
		}
	}
	/* the end: reopen (a flush to the mds and a fresh open), verify all */
	run_op(&f, OP_REOPEN);
	f.n++;
	run_op(&f, OP_VERIFY);
	dt = now_s() - t0;
	close_direct(&f);
	if (close(f.fd)) {
		fprintf(stderr, "sdfs-fsx: close: %s\n", strerror(errno));
		return 1;
	}
	if (f.o.dir && !f.o.keep && unlink(f.path))
		fprintf(stderr, "sdfs-fsx: unlink %s: %s\n", f.path, strerror(errno));
	printf("sdfs-fsx: seed %" PRIu64 ": %" PRIu64 " ops verified in %.1f s, %.0f ops/s;",
	       f.o.seed, f.o.ops, dt, (double)f.o.ops / dt);
	for (int i = 0; i < OP_COUNT; i++)
		if (f.count[i])
			printf(" %s %" PRIu64, op_name[i], f.count[i]);
	printf("\n");
	if (!f.o.quiet) {
		printf("sdfs-fsx: mean ms per op:");
		for (int i = 0; i < OP_COUNT; i++)
			if (f.count[i])
				printf(" %s %.2f", op_name[i], 1e3 * f.secs[i] / (double)f.count[i]);
		printf("\n");
	}
	return 0;
}
