/*
 * ec_scrub_test.c - the scrub of erasure-coded strips (docs/scrub.md
 * "Strips"): real block daemons, 4+2 stripes on 7 nodes, strip files
 * damaged on disk behind the daemons' backs and found by a scrub pass
 * with no client read in between.
 *
 *   repaired     40 objects; one strip file of each damaged in its
 *                data area: one pass finds all 40 and rebuilds each in
 *                place, byte-for-byte the file it was (its header,
 *                table and data), counted exactly (status, --json,
 *                cluster status), and a read afterwards rebuilds
 *                nothing; then m = 2 strips of each: 80 found and
 *                rebuilt the same way.
 *   unrepaired   m + 1 = 3 strips of one object damaged: the three
 *                nodes each find theirs, none can be rebuilt (fewer
 *                than k good strips of the version), each counted as
 *                unrepaired, and the files are left exactly as they
 *                were; the other objects' strips are untouched.
 *   read_repair  10 objects; one data strip file of each damaged; each
 *                read once (right bytes, degraded): the reads alone ask
 *                the holders to rebuild (STRIP_REPAIR), so every file is
 *                byte-for-byte what it was again with no scrub pass run
 *                (passes 0 on every node), counted in the nodes' total
 *                strips found and repaired.
 *   rebuild_rate (--recovery-mbps 4) 12 full objects, one strip of each
 *                damaged: each rebuild reads k strips at the recovery
 *                rate, so a node that rebuilt r strips of L bytes
 *                spent at least (r k L - L - the 100 ms burst) / rate in its
 *                pass (a lower bound: a loaded machine only makes it
 *                longer); measured rate logged.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/cluster/tjson.h"

#define K 4
#define M 2
#define NODES 7
#define NOBJ 40
#define OID0 0xec5c000000002000ull
#define WAIT_MS 60000

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NODES });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(ec_scrub, .init = up, .fini = down, .timeout = 300);

struct obj {
	uint64_t oid;
	size_t len;
	uint8_t *data;
};

/* A saved strip file: its path and every byte of it. */
struct file {
	char path[1024];
	uint8_t *bytes;
	size_t len;
};

static struct obj *put_all(unsigned n, uint64_t seed)
{
	struct sdfs *s = tcluster_client(tc);
	uint32_t max = sdfs_obj_size(s);
	struct obj *o = calloc(n, sizeof(*o));

	cr_assert_gt(max, 0);
	for (unsigned i = 0; i < n; i++) {
		o[i].oid = OID0 + i * 0x101;
		/* 1 byte to a quarter object: strips of 4 KiB to max/16 */
		o[i].len = 1 + (size_t)((i * 2654435761u) % (max / 4));
		o[i].data = malloc(o[i].len);
		tfill_random(o[i].data, o[i].len, seed + i);
		cr_assert_eq(sdfs_ec_put(s, o[i].oid, K, M, o[i].data, o[i].len), 0,
			     "put of object %u (%zu bytes)", i, o[i].len);
	}
	return o;
}

static void free_all(struct obj *o, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(o[i].data);
	free(o);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat sb;
	uint8_t *b;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(fstat(fd, &sb), 0);
	b = malloc((size_t)sb.st_size + 1);
	cr_assert_eq(pread(fd, b, (size_t)sb.st_size, 0), sb.st_size, "%s", path);
	close(fd);
	*len = (size_t)sb.st_size;
	return b;
}

/* The one file of strip @s of @oid (one version, one holder: a fresh
 * put on a steady cluster), saved into @f whole, then damaged: 16 bytes
 * flipped in its first data block (data begins at 4096 for strips up to
 * 2 MiB: docs/format.md "blockd strip files"). */
static void corrupt(uint64_t oid, unsigned s, struct file *f)
{
	char pat[1024];
	uint8_t b[16];
	glob_t g;
	int fd;

	snprintf(pat, sizeof(pat), "%s/blockd.*/strip/%02x/%016" PRIx64 ".%02x.*",
		 tcluster_dir(tc), (unsigned)(oid & 0xff), oid, s);
	memset(&g, 0, sizeof(g));
	cr_assert_eq(glob(pat, 0, NULL, &g), 0, "no file for %s", pat);
	cr_assert_eq(g.gl_pathc, 1, "%zu files for %s", g.gl_pathc, pat);
	snprintf(f->path, sizeof(f->path), "%s", g.gl_pathv[0]);
	globfree(&g);
	f->bytes = slurp(f->path, &f->len);
	cr_assert_geq(f->len, 4096 + sizeof(b), "%s: %zu bytes", f->path, f->len);
	fd = open(f->path, O_RDWR);
	cr_assert_geq(fd, 0);
	memcpy(b, f->bytes + 4096, sizeof(b));
	for (size_t j = 0; j < sizeof(b); j++)
		b[j] ^= 0x5a;
	cr_assert_eq(pwrite(fd, b, sizeof(b), 4096), (ssize_t)sizeof(b));
	close(fd);
}

/* The file at f->path holds exactly f->bytes again, or (@flipped) still
 * the damaged bytes it was left with. */
static void check_file(const struct file *f, int flipped, const char *when)
{
	size_t len;
	uint8_t *now = slurp(f->path, &len);

	cr_assert_eq(len, f->len, "%s: %s is %zu bytes, was %zu", when, f->path, len,
		     f->len);
	if (!flipped) {
		cr_assert(!memcmp(now, f->bytes, len), "%s: %s is not the file it was",
			  when, f->path);
	} else {
		cr_assert(memcmp(now + 4096, f->bytes + 4096, 16), "%s: %s was rewritten",
			  when, f->path);
		cr_assert(!memcmp(now, f->bytes, 4096) &&
			  !memcmp(now + 4096 + 16, f->bytes + 4096 + 16, len - 4096 - 16),
			  "%s: %s changed elsewhere", when, f->path);
	}
	free(now);
}

/* Start a pass on every node (at @rate bytes/s, 0: their own) and wait
 * until every node has finished @passes; the summed status into @sum
 * (this pass's strip counts, and strip bytes / ms of the pass). */
struct sum {
	uint64_t strips, bytes, found, repaired, unrepaired, total_found;
	uint64_t max_ms;
};

static void scrub_pass_ex(uint64_t passes, uint64_t rate, struct sum *sum,
			  struct sdfs_scrub_status **keep, size_t *nkeep)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_scrub_status *st;
	int64_t end = tnow_ms() + WAIT_MS;
	size_t n;

	cr_assert_eq(sdfs_scrub(s, SDFS_SCRUB_ALL, SDFS_SCRUB_BEGIN, rate, &st, &n), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(st[i].result, 0, "start on node %u", st[i].node_id);
	free(st);
	for (;;) {
		size_t done = 0;

		cr_assert_eq(sdfs_scrub(s, SDFS_SCRUB_ALL, SDFS_SCRUB_ASK, 0, &st, &n), 0);
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(st[i].result, 0, "node %u", st[i].node_id);
			done += st[i].passes >= passes && !strcmp(st[i].state, "idle");
		}
		if (done == n)
			break;
		free(st);
		cr_assert_lt(tnow_ms(), end, "scrub passes did not end in %d ms", WAIT_MS);
		tsleep_ms(100);
	}
	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < n; i++) {
		uint64_t ms = st[i].pass_end_ms - st[i].pass_start_ms;

		sum->strips += st[i].strips;
		sum->bytes += st[i].strip_bytes;
		sum->found += st[i].strips_found;
		sum->repaired += st[i].strips_repaired;
		sum->unrepaired += st[i].strips_unrepaired;
		sum->total_found += st[i].total_strips_found;
		if (ms > sum->max_ms)
			sum->max_ms = ms;
		cr_log_info("node %u: %" PRIu64 " strips, %" PRIu64 " bytes in %" PRIu64
			    " ms (%.1f MB/s of %.1f); found %" PRIu64 ", rebuilt %" PRIu64
			    ", left %" PRIu64, st[i].node_id, st[i].strips,
			    st[i].strip_bytes, ms, ms ? st[i].strip_bytes / 1e3 / (double)ms
						      : 0.0, st[i].rate / 1e6,
			    st[i].strips_found, st[i].strips_repaired,
			    st[i].strips_unrepaired);
	}
	if (keep) {
		*keep = st;
		*nkeep = n;
	} else {
		free(st);
	}
}

static void scrub_pass(uint64_t passes, uint64_t rate, struct sum *sum)
{
	scrub_pass_ex(passes, rate, sum, NULL, NULL);
}

/* Every object reads back byte-exact; returns the strips rebuilt. */
static unsigned read_all(const struct obj *o, unsigned n, const char *when)
{
	struct sdfs *s = tcluster_client(tc);
	uint32_t max = sdfs_obj_size(s);
	uint8_t *buf = malloc(max);
	unsigned rebuilt = 0;

	for (unsigned i = 0; i < n; i++) {
		struct sdfs_ec_rstat rs;
		ssize_t got = sdfs_ec_read_ex(s, o[i].oid, K, M, buf, max, 0, &rs);

		cr_assert_eq(got, (ssize_t)o[i].len, "%s: object %u: read %zd of %zu", when,
			     i, got, o[i].len);
		cr_assert(!memcmp(buf, o[i].data, o[i].len), "%s: object %u: other bytes",
			  when, i);
		rebuilt += rs.rebuilt;
	}
	free(buf);
	return rebuilt;
}

Test(ec_scrub, repaired)
{
	struct obj *o = put_all(NOBJ, tseed("ec_scrub repaired"));
	struct file *f = calloc(2 * NOBJ, sizeof(*f));
	struct sum sum;
	char *out = NULL, *err = NULL, want[128];

	/* a pass over healthy strips: every file verified, nothing found
	 * (at 5 MB/s: the rate, measured and logged) */
	scrub_pass(1, 5 * 1000 * 1000, &sum);
	cr_assert_eq(sum.strips, NOBJ * (K + M), "%" PRIu64 " strips verified", sum.strips);
	cr_assert_eq(sum.found, 0);

	/* one strip of each, data and parity strips alike */
	for (unsigned i = 0; i < NOBJ; i++)
		corrupt(o[i].oid, i % (K + M), &f[i]);
	scrub_pass(2, 0, &sum);
	cr_log_info("one strip of each corrupt: %" PRIu64 " found, %" PRIu64 " rebuilt, %"
		    PRIu64 " left", sum.found, sum.repaired, sum.unrepaired);
	cr_assert_eq(sum.found, NOBJ, "%" PRIu64 " corrupt strips found", sum.found);
	cr_assert_eq(sum.repaired, NOBJ, "%" PRIu64 " rebuilt", sum.repaired);
	cr_assert_eq(sum.unrepaired, 0);
	cr_assert_eq(sum.strips, NOBJ * (K + M));
	for (unsigned i = 0; i < NOBJ; i++)
		check_file(&f[i], 0, "one corrupt, after the pass");
	/* the counts where an operator looks */
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "scrub status --json"), 0, "%s", err);
	cr_assert(tjson_valid(out), "%s", out);
	cr_assert(strstr(out, "\"strips_repaired\": "), "%s", out);
	free(out);
	free(err);
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "scrub status"), 0, "%s", err);
	cr_assert(strstr(out, "BAD/FIXED/LEFT"), "%s", out);
	free(out);
	free(err);
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "cluster status"), 0, "%s", err);
	snprintf(want, sizeof(want), "%u corrupt strips found, %u rebuilt, 0 not rebuilt",
		 NOBJ, NOBJ);
	cr_assert(strstr(out, want), "no \"%s\" in: %s", want, out);
	free(out);
	free(err);
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "cluster status --json"), 0, "%s", err);
	snprintf(want, sizeof(want), "\"strips_found\": %u, \"strips_repaired\": %u", NOBJ,
		 NOBJ);
	cr_assert(strstr(out, want), "no \"%s\" in: %s", want, out);
	free(out);
	free(err);
	/* the files are good: a read needs no rebuild */
	cr_assert_eq(read_all(o, NOBJ, "after the first repair"), 0,
		     "a read rebuilt strips the scrub had rebuilt");

	/* m = 2 strips of each */
	for (unsigned i = 0; i < NOBJ; i++) {
		free(f[i].bytes);
		corrupt(o[i].oid, i % (K + M), &f[i]);
		corrupt(o[i].oid, (i + 3) % (K + M), &f[NOBJ + i]);
	}
	scrub_pass(3, 0, &sum);
	cr_assert_eq(sum.found, 2 * NOBJ, "%" PRIu64 " corrupt strips found", sum.found);
	cr_assert_eq(sum.repaired, 2 * NOBJ, "%" PRIu64 " rebuilt", sum.repaired);
	cr_assert_eq(sum.unrepaired, 0);
	cr_assert_eq(sum.total_found, 3 * NOBJ);
	for (unsigned i = 0; i < 2 * NOBJ; i++)
		check_file(&f[i], 0, "two corrupt, after the pass");
	cr_assert_eq(read_all(o, NOBJ, "after the second repair"), 0);
	for (unsigned i = 0; i < 2 * NOBJ; i++)
		free(f[i].bytes);
	free(f);
	free_all(o, NOBJ);
}

Test(ec_scrub, unrepaired)
{
	enum { N = 8 };
	struct obj *o = put_all(N, tseed("ec_scrub unrepaired"));
	struct file f[M + 1];
	struct sdfs *s = tcluster_client(tc);
	uint8_t *buf = malloc(sdfs_obj_size(s));
	struct sum sum;

	/* object 3: m + 1 strips damaged, two data and one parity */
	corrupt(o[3].oid, 0, &f[0]);
	corrupt(o[3].oid, 2, &f[1]);
	corrupt(o[3].oid, 5, &f[2]);
	scrub_pass(1, 0, &sum);
	cr_assert_eq(sum.found, M + 1, "%" PRIu64 " corrupt strips found", sum.found);
	cr_assert_eq(sum.unrepaired, M + 1, "%" PRIu64 " left", sum.unrepaired);
	cr_assert_eq(sum.repaired, 0, "%" PRIu64 " rebuilt from too few", sum.repaired);
	cr_assert_eq(sum.strips, N * (K + M) - (M + 1));
	for (unsigned i = 0; i < M + 1; i++)
		check_file(&f[i], 1, "m + 1 corrupt, after the pass");
	/* it cannot be read, and says so */
	cr_assert_lt(sdfs_ec_read(s, o[3].oid, K, M, buf, sdfs_obj_size(s), 0), 0);
	/* the others are whole */
	for (unsigned i = 0; i < N; i++) {
		struct sdfs_ec_rstat rs;

		if (i == 3)
			continue;
		cr_assert_eq(sdfs_ec_read_ex(s, o[i].oid, K, M, buf, sdfs_obj_size(s), 0,
					     &rs), (ssize_t)o[i].len);
		cr_assert(!memcmp(buf, o[i].data, o[i].len));
		cr_assert_eq(rs.rebuilt, 0);
	}
	for (unsigned i = 0; i < M + 1; i++)
		free(f[i].bytes);
	free(buf);
	free_all(o, N);
}

/* Is the file at f->path exactly f->bytes again? */
static int file_is_back(const struct file *f)
{
	size_t len;
	uint8_t *now = slurp(f->path, &len);
	int same = len == f->len && !memcmp(now, f->bytes, len);

	free(now);
	return same;
}

Test(ec_scrub, read_repair)
{
	enum { N = 10 };
	struct obj *o = put_all(N, tseed("ec_scrub read_repair"));
	struct sdfs *s = tcluster_client(tc);
	uint8_t *buf = malloc(sdfs_obj_size(s));
	struct sdfs_scrub_status *st;
	struct file f[N];
	uint64_t found = 0, repaired = 0;
	int64_t end;
	size_t n;

	for (unsigned i = 0; i < N; i++)
		corrupt(o[i].oid, i % K, &f[i]);
	for (unsigned i = 0; i < N; i++) {
		struct sdfs_ec_rstat rs;

		cr_assert_eq(sdfs_ec_read_ex(s, o[i].oid, K, M, buf, sdfs_obj_size(s), 0, &rs),
			     (ssize_t)o[i].len, "object %u", i);
		cr_assert(!memcmp(buf, o[i].data, o[i].len), "object %u: other bytes", i);
		cr_assert_geq(rs.rebuilt, 1, "object %u: its corrupt strip not rebuilt", i);
	}
	/* no scrub: the reads' repairs put every file back */
	end = tnow_ms() + 8000;
	for (unsigned i = 0; i < N; i++)
		while (!file_is_back(&f[i])) {
			cr_assert_lt(tnow_ms(), end, "%s not rebuilt by the read in 8 s",
				     f[i].path);
			tsleep_ms(20);
		}
	for (unsigned i = 0; i < N; i++)
		check_file(&f[i], 0, "after the reads");
	/* counted once each, after the file is replaced: poll for that too */
	for (;;) {
		found = repaired = 0;
		cr_assert_eq(sdfs_scrub(s, SDFS_SCRUB_ALL, SDFS_SCRUB_ASK, 0, &st, &n), 0);
		cr_assert_eq(n, NODES);
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(st[i].result, 0, "node %u", st[i].node_id);
			cr_assert_eq(st[i].passes, 0, "node %u ran a scrub pass",
				     st[i].node_id);
			cr_assert_str_eq(st[i].state, "idle", "node %u", st[i].node_id);
			found += st[i].total_strips_found;
			repaired += st[i].total_strips_repaired;
		}
		free(st);
		if (repaired >= N || tnow_ms() >= end)
			break;
		tsleep_ms(20);
	}
	cr_log_info("read-repair: %" PRIu64 " found, %" PRIu64 " rebuilt", found, repaired);
	cr_assert_eq(found, N, "%" PRIu64 " counted found", found);
	cr_assert_eq(repaired, N, "%" PRIu64 " counted rebuilt", repaired);
	/* and a read now needs no rebuild */
	cr_assert_eq(read_all(o, N, "after the read-repair"), 0);
	for (unsigned i = 0; i < N; i++)
		free(f[i].bytes);
	free(buf);
	free_all(o, N);
}

#define RATE_MBPS 4

static void up_slow(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NODES,
						     .recovery_mbps = RATE_MBPS });
}

TestSuite(ec_scrub_rate, .init = up_slow, .fini = down, .timeout = 300);

Test(ec_scrub_rate, rebuild_rate)
{
	enum { N = 12 };
	struct sdfs *s = tcluster_client(tc);
	uint32_t max = sdfs_obj_size(s);
	uint64_t strip_len = ((max + K - 1) / K + 4095) / 4096 * 4096;
	double rate = RATE_MBPS * 1e6 / 1000.0;         /* bytes per ms */
	struct obj *o = calloc(N, sizeof(*o));
	struct file f[N];
	struct sdfs_scrub_status *st;
	struct sum sum;
	size_t n;

	for (unsigned i = 0; i < N; i++) {
		o[i].oid = OID0 + 0x10000 + i * 0x101;
		o[i].len = max;
		o[i].data = malloc(max);
		tfill_random(o[i].data, max, tseed("ec_scrub rate") + i);
		cr_assert_eq(sdfs_ec_put(s, o[i].oid, K, M, o[i].data, max), 0);
	}
	for (unsigned i = 0; i < N; i++)
		corrupt(o[i].oid, i % (K + M), &f[i]);
	/* the scrub's own reading is not what is measured: 1000 MB/s */
	scrub_pass_ex(1, 1000ull * 1000 * 1000, &sum, &st, &n);
	cr_assert_eq(sum.found, N);
	cr_assert_eq(sum.repaired, N);
	for (size_t i = 0; i < n; i++) {
		uint64_t ms = st[i].pass_end_ms - st[i].pass_start_ms;
		double read = (double)(st[i].strips_repaired * K * strip_len);
		/* the bucket lets 100 ms run ahead and charges a read when it
		 * starts (paid by the next one's wait): the last strip read
		 * is not waited for */
		double least = (read - rate * 100 - (double)strip_len) / rate;

		cr_log_info("node %u: %" PRIu64 " strips rebuilt, %.1f MB read for them in "
			    "%" PRIu64 " ms: %.2f MB/s (--recovery-mbps %d)", st[i].node_id,
			    st[i].strips_repaired, read / 1e6, ms,
			    ms ? read / 1e3 / (double)ms : 0.0, RATE_MBPS);
		cr_assert_geq((double)ms, least * 0.95, "node %u rebuilt %" PRIu64 " strips "
			      "(%.1f MB read) in %" PRIu64 " ms: faster than %d MB/s",
			      st[i].node_id, st[i].strips_repaired, read / 1e6, ms, RATE_MBPS);
	}
	free(st);
	for (unsigned i = 0; i < N; i++) {
		check_file(&f[i], 0, "after the pass");
		free(f[i].bytes);
	}
	cr_assert_eq(read_all(o, N, "after the pass"), 0);
	free_all(o, N);
}
