/*
 * ec_test.c - erasure-coded objects end to end (docs/ec.md): real
 * block daemons, 4+2 stripes on 7 nodes (each its own zone).
 *
 *   put_get_degraded   50 objects of mixed sizes put and read back
 *                      byte-exact, whole and in ranges; then two strip
 *                      holders SIGKILLed and everything read back again,
 *                      rebuilt from the survivors; the CLI's --ec too.
 *   corrupt_strips     one, then two (= m) strip files of every object
 *                      damaged on disk (again once the reads' read-repair
 *                      put the first back): reads still right; all k + m:
 *                      reads fail, never wrong bytes.
 *   writer_killed      a put that stops after j strips (j = 1..5):
 *                      reads give exactly the old object (j < k) or the
 *                      new one (j >= k), never a mix, also with a strip
 *                      of the new version lost; the next whole put
 *                      commits and leaves one version of each strip.
 *   too_small          5 nodes cannot hold 4+2: refused, clearly.
 *   two_writers        two threads put one object 15 times each at once:
 *                      every put succeeds, and the object reads as one
 *                      of the two last puts, byte-exact.
 *   holders_killed     8 nodes: a writer overwrites 12 objects in a loop
 *                      while two strip holders are SIGKILLed; its puts
 *                      wait until the map has them out and go on; every
 *                      object then reads as its last acknowledged put.
 *   recovery           8 nodes: two strip holders die and go out; the
 *                      survivors rebuild every lost strip on the new
 *                      holders (blockd/strip_recover.c); then two more
 *                      die and every object still reads back right,
 *                      which it could not without the rebuild.
 *   remove_holder_down a removal with a strip holder SIGKILLed: -ENOENT
 *                      at once; restarted, the holder gets the
 *                      tombstone and drops its old strip (files counted
 *                      on every disk); rm --ec; a later put.
 *   add_node_drops_extras a node added: moved strips copied, the old
 *                      holders' extra copies dropped (each stripe's
 *                      files on its placement only), all read back.
 *   degraded_counted   a holder down: `cluster status` counts each
 *                      stripe with a strip there once; back up, none.
 *   remove_races_puts  removals racing puts: the object ends removed or
 *                      as the last put, never an earlier one.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"

#define K 4
#define M 2
#define NODES 7
#define NOBJ 50
#define OID0 0xec00000000001000ull

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NODES });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(ec, .init = up, .fini = down, .timeout = 400);

/* Mixed sizes: empty, sub-block, odd, block multiples, up to the
 * object size. */
static size_t size_of(unsigned i, uint32_t max)
{
	static const size_t fixed[] = { 0, 1, 100, 4095, 4096, 4097, 16384, 16385,
					65536 * 4, 65536 * 4 + 4096 * 3 + 5 };

	if (i < sizeof(fixed) / sizeof(fixed[0]))
		return fixed[i];
	if (i == 10)
		return max;
	if (i == 11)
		return max - 1;
	return (size_t)((i * 2654435761u) % max);
}

struct obj {
	uint64_t oid;
	size_t len;
	uint8_t *data;
};

static struct obj *put_all(unsigned n, uint64_t seed)
{
	struct sdfs *s = tcluster_client(tc);
	uint32_t max = sdfs_obj_size(s);
	struct obj *o = calloc(n, sizeof(*o));

	cr_assert_gt(max, 0);
	for (unsigned i = 0; i < n; i++) {
		o[i].oid = OID0 + i * 0x101;
		o[i].len = size_of(i, max);
		o[i].data = malloc(o[i].len ? o[i].len : 1);
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

/* Every object reads back byte-exact, whole and in a few ranges;
 * returns the strips rebuilt on the way. */
static unsigned read_all(const struct obj *o, unsigned n, const char *when)
{
	struct sdfs *s = tcluster_client(tc);
	uint32_t max = sdfs_obj_size(s);
	uint8_t *buf = malloc(max + 4096);
	uint64_t rnd = 42;
	unsigned rebuilt = 0;

	for (unsigned i = 0; i < n; i++) {
		struct sdfs_ec_rstat rs;
		ssize_t got = sdfs_ec_read_ex(s, o[i].oid, K, M, buf, max + 4096, 0, &rs);

		cr_assert_eq(got, (ssize_t)o[i].len, "%s: object %u: read %zd of %zu", when,
			     i, got, o[i].len);
		cr_assert(!memcmp(buf, o[i].data, o[i].len), "%s: object %u: other bytes",
			  when, i);
		rebuilt += rs.rebuilt;
		for (int r = 0; r < 3 && o[i].len > 1; r++) {
			size_t off = (size_t)(trand(&rnd) % o[i].len);
			size_t len = (size_t)(trand(&rnd) % (o[i].len - off)) + 1;

			got = sdfs_ec_read_ex(s, o[i].oid, K, M, buf, len, off, &rs);
			cr_assert_eq(got, (ssize_t)len, "%s: object %u [%zu, +%zu): %zd", when,
				     i, off, len, got);
			cr_assert(!memcmp(buf, o[i].data + off, len),
				  "%s: object %u [%zu, +%zu): other bytes", when, i, off, len);
			rebuilt += rs.rebuilt;
		}
	}
	free(buf);
	return rebuilt;
}

/* The strip files of @oid, strip @s (-1: any), on any node. */
static void strip_files(uint64_t oid, int s, glob_t *g)
{
	char pat[1024];

	if (s < 0)
		snprintf(pat, sizeof(pat), "%s/blockd.*/strip/%02x/%016" PRIx64 ".*",
			 tcluster_dir(tc), (unsigned)(oid & 0xff), oid);
	else
		snprintf(pat, sizeof(pat), "%s/blockd.*/strip/%02x/%016" PRIx64 ".%02x.*",
			 tcluster_dir(tc), (unsigned)(oid & 0xff), oid, (unsigned)s);
	memset(g, 0, sizeof(*g));
	int r = glob(pat, 0, NULL, g);

	cr_assert(r == 0 || r == GLOB_NOMATCH, "glob %s: %d", pat, r);
}

/* Damage the first data block of every file of strip @s of @oid (data
 * begins at 4096 for strips up to 2 MiB): 16 bytes set to a fixed
 * pattern, so a file damaged already stays damaged (a flip would undo
 * it). */
static unsigned corrupt_strip(uint64_t oid, int s)
{
	static const uint8_t bad[16] = "\xde\xad\xbe\xef\xde\xad\xbe\xef"
				       "\xde\xad\xbe\xef\xde\xad\xbe\xef";
	glob_t g;
	unsigned n = 0;

	strip_files(oid, s, &g);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		int fd = open(g.gl_pathv[i], O_RDWR);

		cr_assert_geq(fd, 0, "%s", g.gl_pathv[i]);
		cr_assert_eq(pwrite(fd, bad, sizeof(bad), 4096), (ssize_t)sizeof(bad));
		close(fd);
		n++;
	}
	globfree(&g);
	return n;
}

/* A degraded read asks the holders of the strips that failed to rebuild
 * them (read-repair, docs/ec.md): read the @n objects whole again until
 * none needs a rebuild (their data strips good again), within 10 s. */
static void settle(const struct obj *o, unsigned n)
{
	struct sdfs *s = tcluster_client(tc);
	uint32_t max = sdfs_obj_size(s);
	uint8_t *buf = malloc(max);
	int64_t end = tnow_ms() + 10000;

	for (unsigned i = 0; i < n; i++)
		for (;;) {
			struct sdfs_ec_rstat rs;

			cr_assert_eq(sdfs_ec_read_ex(s, o[i].oid, K, M, buf, max, 0, &rs),
				     (ssize_t)o[i].len, "object %u", i);
			if (!rs.rebuilt)
				break;
			cr_assert_lt(tnow_ms(), end, "object %u: not read-repaired", i);
			tsleep_ms(20);
		}
	free(buf);
}

static void name_of(uint32_t id, char *buf, size_t len)
{
	cr_assert_not_null(tcluster_node_name(tc, id, buf, len), "node %u", id);
}

Test(ec, put_get_degraded)
{
	struct sdfs *s = tcluster_client(tc);
	struct obj *o;
	uint32_t ids[K + M];
	char a[32], b[32], *out = NULL, *err = NULL, path[1024], path2[1024];
	unsigned rebuilt;
	int st;

	o = put_all(NOBJ, tseed("ec put_get"));
	cr_assert_eq(read_all(o, NOBJ, "healthy"), 0, "a healthy read rebuilt strips");

	/* the CLI: put, get, stat, locate with --ec */
	snprintf(path, sizeof(path), "%s/ec-in", tcluster_dir(tc));
	snprintf(path2, sizeof(path2), "%s/ec-out", tcluster_dir(tc));
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(o[NOBJ - 1].data, 1, o[NOBJ - 1].len, f), o[NOBJ - 1].len);
	fclose(f);
	st = tcluster_sdfs(tc, &out, &err, "--json obj put --ec 4+2 0xec0000000000ff01 %s",
			   path);
	cr_assert_eq(st, 0, "obj put --ec: %s", err);
	cr_assert(strstr(out, "\"ec\": \"4+2\""), "%s", out);
	free(out);
	free(err);
	st = tcluster_sdfs(tc, NULL, &err, "obj get --ec 4+2 0xec0000000000ff01 %s", path2);
	cr_assert_eq(st, 0, "obj get --ec: %s", err);
	free(err);
	{
		char cmd[2200];

		snprintf(cmd, sizeof(cmd), "cmp -s %s %s", path, path2);
		cr_assert_eq(system(cmd), 0, "obj get --ec gave other bytes");
	}
	st = tcluster_sdfs(tc, &out, &err, "--json obj stat --ec 4+2 0xec0000000000ff01");
	cr_assert_eq(st, 0, "obj stat --ec: %s", err);
	cr_assert(strstr(out, "\"rebuilt\": 0"), "%s", out);
	free(out);
	free(err);
	st = tcluster_sdfs(tc, &out, &err, "obj locate --ec 4+2 0xec0000000000ff01");
	cr_assert_eq(st, 0, "obj locate --ec: %s", err);
	cr_assert_eq(tcount_lines(out), 1 + K + M, "%s", out);
	free(out);
	free(err);
	st = tcluster_sdfs(tc, &out, &err, "obj get --ec 4+2 0xec0000000000ff02");
	cr_assert_neq(st, 0);
	cr_assert(strstr(err, "no such object"), "%s", err);
	free(out);
	free(err);

	/* Two strip holders of object 10 (a full one) die: every object
	 * has strips there, some data strips among them. */
	cr_assert_eq(sdfs_ec_locate(s, o[10].oid, K, M, ids, K + M), K + M);
	name_of(ids[0], a, sizeof(a));
	name_of(ids[2], b, sizeof(b));
	cr_log_info("killing %s and %s (strips 0 and 2 of object 10)", a, b);
	cr_assert_eq(tcluster_kill(tc, a), 0);
	cr_assert_eq(tcluster_kill(tc, b), 0);
	rebuilt = read_all(o, NOBJ, "two holders killed");
	cr_assert_gt(rebuilt, 0, "nothing was rebuilt with two holders dead");
	cr_log_info("degraded: %u strips rebuilt", rebuilt);
	/* also once the map has them down */
	cr_assert_eq(tcluster_wait_state(tc, a, "down", TCLUSTER_WAIT_MS), 0);
	cr_assert_eq(tcluster_wait_state(tc, b, "down", TCLUSTER_WAIT_MS), 0);
	cr_assert_gt(read_all(o, NOBJ, "two holders down in the map"), 0);
	free_all(o, NOBJ);
}

Test(ec, corrupt_strips)
{
	struct sdfs *s = tcluster_client(tc);
	enum { N = 20 };
	struct obj *o = put_all(N, tseed("ec corrupt"));
	uint32_t max = sdfs_obj_size(s);
	uint8_t *buf = malloc(max);
	unsigned rebuilt;

	/* one strip of each: a data strip for most, parity for some */
	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(corrupt_strip(o[i].oid, (int)(i % (K + M))), 1, "object %u", i);
	rebuilt = read_all(o, N, "one strip corrupt");
	cr_assert_gt(rebuilt, 0);
	/* those reads had the data strips rebuilt in place (read-repair):
	 * once they are, m strips of each are made bad */
	settle(o, N);
	for (unsigned i = 0; i < N; i++) {
		cr_assert_eq(corrupt_strip(o[i].oid, (int)(i % (K + M))), 1);
		cr_assert_eq(corrupt_strip(o[i].oid, (int)((i + 3) % (K + M))), 1);
	}
	cr_assert_gt(read_all(o, N, "two strips corrupt"), rebuilt);
	/* more than m (all k + m, so a read-repair still finishing cannot
	 * bring back k): a full object then cannot be read, and says so
	 * rather than give wrong bytes */
	settle(o + 10, 2);
	for (unsigned i = 10; i < 12; i++) {
		ssize_t got;

		cr_assert_eq(o[i].len >= max - 1, 1);
		for (int j = 0; j < K + M; j++)
			cr_assert_eq(corrupt_strip(o[i].oid, j), 1);
		got = sdfs_ec_read(s, o[i].oid, K, M, buf, max, 0);
		cr_assert_lt(got, 0, "object %u: %zd bytes read with k + m strips bad", i,
			     got);
	}
	free(buf);
	free_all(o, N);
}

Test(ec, writer_killed)
{
	struct sdfs *s = tcluster_client(tc);
	uint32_t max = sdfs_obj_size(s);
	size_t len = max - 12345;
	uint8_t *old = malloc(len), *new = malloc(len), *buf = malloc(max);
	uint64_t seed = tseed("ec writer_killed");

	for (unsigned j = 1; j < K + M; j++) {
		uint64_t oid = OID0 + 0x10000 + j;
		struct sdfs_ec_opts stop = { .stop_after = j };
		struct sdfs_ec_rstat rs;
		ssize_t got;
		glob_t g;

		tfill_random(old, len, seed + 2 * j);
		tfill_random(new, len - 4096, seed + 2 * j + 1);
		cr_assert_eq(sdfs_ec_put(s, oid, K, M, old, len), 0);
		cr_assert_eq(sdfs_ec_put_ex(s, oid, K, M, new, len - 4096, &stop), -ECANCELED);
		strip_files(oid, -1, &g);
		cr_assert_eq(g.gl_pathc, K + M + j, "j=%u: %zu strip files", j, g.gl_pathc);
		globfree(&g);
		got = sdfs_ec_read_ex(s, oid, K, M, buf, max, 0, &rs);
		if (j < K) {
			cr_assert_eq(got, (ssize_t)len, "j=%u: %zd", j, got);
			cr_assert(!memcmp(buf, old, len), "j=%u: not the old object", j);
		} else {
			cr_assert_eq(got, (ssize_t)len - 4096, "j=%u: %zd", j, got);
			cr_assert(!memcmp(buf, new, len - 4096), "j=%u: not the new object", j);
			/* lose strip 0 of the new version: with j = k the new
			 * one is short of k, and the old one (whole, never
			 * committed away) is read; with j > k still the new */
			char pat[1024];
			glob_t g0;

			snprintf(pat, sizeof(pat), "%s/blockd.*/strip/%02x/%016" PRIx64
				 ".00.%016" PRIx64, tcluster_dir(tc), (unsigned)(oid & 0xff),
				 oid, rs.version);
			cr_assert_eq(glob(pat, 0, NULL, &g0), 0, "%s", pat);
			cr_assert_eq(unlink(g0.gl_pathv[0]), 0);
			globfree(&g0);
			got = sdfs_ec_read(s, oid, K, M, buf, max, 0);
			if (j == K) {
				cr_assert_eq(got, (ssize_t)len, "j=%u, one lost: %zd", j, got);
				cr_assert(!memcmp(buf, old, len), "j=%u, one lost: not old", j);
			} else {
				cr_assert_eq(got, (ssize_t)len - 4096);
				cr_assert(!memcmp(buf, new, len - 4096), "j=%u, one lost", j);
			}
		}
		/* a whole put afterwards: read back, and its commit leaves
		 * one version of each strip */
		cr_assert_eq(sdfs_ec_put(s, oid, K, M, new, len - 4096), 0);
		got = sdfs_ec_read(s, oid, K, M, buf, max, 0);
		cr_assert_eq(got, (ssize_t)len - 4096);
		cr_assert(!memcmp(buf, new, len - 4096));
		strip_files(oid, -1, &g);
		cr_assert_eq(g.gl_pathc, K + M, "j=%u: %zu strip files after a commit", j,
			     g.gl_pathc);
		globfree(&g);
	}
	free(old);
	free(new);
	free(buf);
}

Test(ec_small, too_small, .timeout = 200)
{
	struct tcluster *small = tcluster_start(&(struct tcluster_opts){ .blockd = 5 });
	char *out = NULL, *err = NULL;
	uint8_t b[100] = { 1 };
	int st;

	tc = NULL;
	cr_assert_eq(sdfs_ec_put(tcluster_client(small), 77, K, M, b, sizeof(b)), -ENODEV);
	cr_assert_eq(sdfs_ec_put(tcluster_client(small), 77, 2, 2, b, sizeof(b)), 0);
	st = tcluster_sdfs(small, &out, &err, "obj put --ec 4+2 77 /dev/null");
	cr_assert_neq(st, 0);
	cr_assert(strstr(err, "needs 6 block daemons"), "%s", err);
	free(out);
	free(err);
	tcluster_stop(small);
}

/* ---- two holders killed while a writer overwrites ---- */

#define KOBJ 12
#define KPUTS 60
#define KLEN (3 * 65536 + 777)

struct writer {
	struct sdfs *s;
	uint64_t seed;
	unsigned done;                  /* puts acknowledged so far */
	unsigned acked[KOBJ];           /* round of each object's last acked put */
	int err;
	pthread_mutex_t mu;
};

static uint64_t kseed(const struct writer *w, unsigned obj, unsigned round)
{
	return w->seed ^ ((uint64_t)obj << 32 | round);
}

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	uint8_t *b = malloc(KLEN);

	for (unsigned i = 0; i < KPUTS && !w->err; i++) {
		unsigned obj = i % KOBJ, round = 1 + i / KOBJ;
		int r;

		tfill_random(b, KLEN, kseed(w, obj, round));
		r = sdfs_ec_put(w->s, OID0 + 0x20000 + obj, K, M, b, KLEN);
		pthread_mutex_lock(&w->mu);
		if (r)
			w->err = r;
		else {
			w->acked[obj] = round;
			w->done++;
		}
		pthread_mutex_unlock(&w->mu);
	}
	free(b);
	return NULL;
}

static void up8(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 8, .out_grace_s = 3 });
}

Test(ec_kill, holders_killed, .init = up8, .fini = down, .timeout = 300)
{
	struct writer w = { .s = tcluster_client(tc), .seed = tseed("ec holders_killed") };
	uint8_t *want = malloc(KLEN), *buf = malloc(KLEN + 4096);
	uint32_t ids[K + M];
	char a[32], b[32];
	pthread_t t;
	int64_t t0;

	pthread_mutex_init(&w.mu, NULL);
	sdfs_set_timeout(w.s, 60000);   /* longer than a node's way out */
	cr_assert_eq(sdfs_ec_locate(w.s, OID0 + 0x20000, K, M, ids, K + M), K + M);
	name_of(ids[1], a, sizeof(a));
	name_of(ids[4], b, sizeof(b));
	cr_assert_eq(pthread_create(&t, NULL, writer_fn, &w), 0);
	for (t0 = tnow_ms(); tnow_ms() - t0 < 60000; tsleep_ms(20)) {
		pthread_mutex_lock(&w.mu);
		unsigned d = w.done;
		pthread_mutex_unlock(&w.mu);
		if (d >= KOBJ + 3)
			break;
	}
	cr_log_info("killing %s and %s (strips 1 and 4 of the first object) after %u puts",
		    a, b, w.done);
	cr_assert_eq(tcluster_kill(tc, a), 0);
	cr_assert_eq(tcluster_kill(tc, b), 0);
	pthread_join(t, NULL);
	cr_assert_eq(w.err, 0, "a put failed: %s", strerror(-w.err));
	cr_assert_eq(w.done, KPUTS);
	for (unsigned obj = 0; obj < KOBJ; obj++) {
		ssize_t got = sdfs_ec_read(w.s, OID0 + 0x20000 + obj, K, M, buf, KLEN + 4096, 0);

		tfill_random(want, KLEN, kseed(&w, obj, w.acked[obj]));
		cr_assert_eq(got, KLEN, "object %u: %zd", obj, got);
		cr_assert(!memcmp(buf, want, KLEN), "object %u is not its last put (round %u)",
			  obj, w.acked[obj]);
	}
	free(want);
	free(buf);
}

/* Does every position of @oid's placement hold its strip (any version)? */
static int stripe_whole(uint64_t oid)
{
	uint32_t ids[K + M];
	char name[32];

	if (sdfs_ec_locate(tcluster_client(tc), oid, K, M, ids, K + M) != K + M)
		return 0;
	for (unsigned p = 0; p < K + M; p++) {
		char pat[1024];
		glob_t g;
		int r;

		if (!tcluster_node_name(tc, ids[p], name, sizeof(name)))
			return 0;
		snprintf(pat, sizeof(pat), "%s/%s/strip/%02x/%016" PRIx64 ".%02x.*",
			 tcluster_dir(tc), name, (unsigned)(oid & 0xff), oid, p);
		r = glob(pat, 0, NULL, &g);
		globfree(&g);
		if (r)
			return 0;
	}
	return 1;
}

Test(ec_kill, recovery, .init = up8, .fini = down, .timeout = 300)
{
	enum { N = 24 };
	struct obj *o = put_all(N, tseed("ec recovery"));
	struct sdfs *s = tcluster_client(tc);
	uint32_t ids[K + M];
	char a[32], b[32];
	unsigned whole = 0;
	int64_t t0;

	cr_assert_eq(sdfs_ec_locate(s, o[10].oid, K, M, ids, K + M), K + M);
	name_of(ids[0], a, sizeof(a));
	name_of(ids[3], b, sizeof(b));
	cr_log_info("killing %s and %s, waiting for them to go out", a, b);
	cr_assert_eq(tcluster_kill(tc, a), 0);
	cr_assert_eq(tcluster_kill(tc, b), 0);
	cr_assert_eq(tcluster_wait_state(tc, a, "out", 60000), 0);
	cr_assert_eq(tcluster_wait_state(tc, b, "out", 60000), 0);
	for (t0 = tnow_ms(); tnow_ms() - t0 < 90000; tsleep_ms(250)) {
		whole = 0;
		for (unsigned i = 0; i < N; i++)
			whole += stripe_whole(o[i].oid);
		if (whole == N)
			break;
	}
	cr_assert_eq(whole, N, "%u of %u stripes whole again after %" PRId64 " ms", whole, N,
		     tnow_ms() - t0);
	cr_log_info("every stripe whole again after %" PRId64 " ms", tnow_ms() - t0);
	cr_assert_eq(read_all(o, N, "after recovery"), 0);
	/* two more die: only a rebuilt stripe has k strips left everywhere */
	cr_assert_eq(sdfs_ec_locate(s, o[10].oid, K, M, ids, K + M), K + M);
	name_of(ids[1], a, sizeof(a));
	name_of(ids[2], b, sizeof(b));
	cr_log_info("killing %s and %s", a, b);
	cr_assert_eq(tcluster_kill(tc, a), 0);
	cr_assert_eq(tcluster_kill(tc, b), 0);
	cr_assert_gt(read_all(o, N, "two more killed"), 0);
	free_all(o, N);
}

struct two {
	unsigned id;
	uint64_t seed;
	int err;
};

static void *two_fn(void *arg)
{
	struct two *t = arg;
	uint8_t *b = malloc(KLEN);

	for (unsigned r = 1; r <= 15 && !t->err; r++) {
		tfill_random(b, KLEN, t->seed + t->id * 1000 + r);
		t->err = sdfs_ec_put(tcluster_client(tc), OID0 + 0x30000, K, M, b, KLEN);
	}
	free(b);
	return NULL;
}

Test(ec, two_writers)
{
	struct two a = { .id = 1, .seed = tseed("ec two_writers") }, b = a;
	uint8_t *buf = malloc(KLEN + 1), *wa = malloc(KLEN), *wb = malloc(KLEN);
	pthread_t ta, tb;
	ssize_t got;

	b.id = 2;
	cr_assert_eq(pthread_create(&ta, NULL, two_fn, &a), 0);
	cr_assert_eq(pthread_create(&tb, NULL, two_fn, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_assert_eq(a.err, 0, "writer 1: %s", strerror(-a.err));
	cr_assert_eq(b.err, 0, "writer 2: %s", strerror(-b.err));
	got = sdfs_ec_read(tcluster_client(tc), OID0 + 0x30000, K, M, buf, KLEN + 1, 0);
	cr_assert_eq(got, KLEN);
	tfill_random(wa, KLEN, a.seed + 1000 + 15);
	tfill_random(wb, KLEN, b.seed + 2000 + 15);
	cr_assert(!memcmp(buf, wa, KLEN) || !memcmp(buf, wb, KLEN),
		  "the object is neither writer's last put");
	free(buf);
	free(wa);
	free(wb);
}

/*
 * Where @oid's strip files are, on every node's disk: *@files of them,
 * *@misplaced not on the node its strip number's position names now,
 * *@big more than a tombstone's header. 0, or -1 when the map cannot
 * place it.
 */
static int strip_census(uint64_t oid, unsigned *files, unsigned *misplaced, unsigned *big)
{
	uint32_t ids[K + M];
	size_t dl = strlen(tcluster_dir(tc));
	glob_t g;

	*files = *misplaced = *big = 0;
	if (sdfs_ec_locate(tcluster_client(tc), oid, K, M, ids, K + M) != K + M)
		return -1;
	strip_files(oid, -1, &g);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *p = g.gl_pathv[i], *name = p + dl + 1, *slash = strchr(name, '/');
		const char *base = strrchr(p, '/') + 1;
		unsigned s = (unsigned)strtoul(base + 17, NULL, 16);
		char want[32];
		struct stat sb;

		(*files)++;
		if (s >= K + M || !tcluster_node_name(tc, ids[s], want, sizeof(want)) ||
		    !slash || strlen(want) != (size_t)(slash - name) ||
		    strncmp(want, name, (size_t)(slash - name)))
			(*misplaced)++;
		if (stat(p, &sb) == 0 && sb.st_size >= 4096)
			(*big)++;
	}
	globfree(&g);
	return 0;
}

/* A removal with a strip holder SIGKILLed: the object reads -ENOENT at
 * once; restarted, the holder gets the tombstone from strip recovery,
 * which drops its old strip: one tombstone per position and nothing
 * else on any disk. The CLI's rm --ec; a later put brings it back. */
Test(ec, remove_holder_down)
{
	enum { N = 12 };
	struct obj *o = put_all(N, tseed("ec remove_holder_down"));
	struct sdfs *s = tcluster_client(tc);
	uint64_t x = o[10].oid;         /* the biggest one */
	uint32_t ids[K + M];
	unsigned files = 0, misplaced = 0, big = 0;
	uint8_t buf[4096];
	char a[32], *out = NULL, *err = NULL;
	int64_t t0;
	int st;

	cr_assert_eq(strip_census(x, &files, &misplaced, &big), 0);
	cr_assert(files == K + M && misplaced == 0 && big == K + M, "%u %u %u", files,
		  misplaced, big);
	cr_assert_eq(sdfs_ec_locate(s, x, K, M, ids, K + M), K + M);
	name_of(ids[2], a, sizeof(a));
	cr_log_info("killing %s (strip 2), then removing the object", a);
	cr_assert_eq(tcluster_kill(tc, a), 0);
	t0 = tnow_ms();
	cr_assert_eq(sdfs_ec_remove(s, x, K, M), 0);
	cr_log_info("removed with a holder down in %" PRId64 " ms", tnow_ms() - t0);
	cr_assert_eq(sdfs_ec_read(s, x, K, M, buf, sizeof(buf), 0), -ENOENT);
	cr_assert_eq(sdfs_ec_remove(s, x, K, M), -ENOENT);
	cr_assert_eq(strip_census(x, &files, &misplaced, &big), 0);
	cr_log_info("with the holder down: %u files, %u of them more than a header", files,
		    big);
	cr_assert_eq(big, 1, "the dead holder's old strip only");

	cr_assert_eq(tcluster_restart(tc, a), 0);
	for (t0 = tnow_ms(); tnow_ms() - t0 < 60000; tsleep_ms(250)) {
		cr_assert_eq(strip_census(x, &files, &misplaced, &big), 0);
		if (files == K + M && misplaced == 0 && big == 0)
			break;
	}
	cr_assert(files == K + M && misplaced == 0 && big == 0, "after %" PRId64 " ms: %u "
		  "files, %u misplaced, %u not tombstones", tnow_ms() - t0, files, misplaced,
		  big);
	cr_log_info("the restarted holder has the tombstone after %" PRId64 " ms",
		    tnow_ms() - t0);
	cr_assert_eq(sdfs_ec_read(s, x, K, M, buf, sizeof(buf), 0), -ENOENT);
	read_all(o, 10, "after a removal");     /* the others are untouched */
	read_all(o + 11, 1, "after a removal");

	/* the CLI */
	st = tcluster_sdfs(tc, NULL, &err, "obj rm --ec 4+2 0x%016" PRIx64, o[11].oid);
	cr_assert_eq(st, 0, "%s", err);
	free(err);
	st = tcluster_sdfs(tc, &out, &err, "obj get --ec 4+2 0x%016" PRIx64, o[11].oid);
	cr_assert_neq(st, 0);
	cr_assert(strstr(err, "no such object"), "%s", err);
	free(out);
	free(err);
	st = tcluster_sdfs(tc, &out, &err, "obj rm --ec 4+2 0x%016" PRIx64, o[11].oid);
	cr_assert_neq(st, 0);
	cr_assert(strstr(err, "no such object"), "%s", err);
	free(out);
	free(err);

	/* a later put makes it again; its commit drops the tombstones */
	cr_assert_eq(sdfs_ec_put(s, x, K, M, o[3].data, o[3].len), 0);
	cr_assert_eq(sdfs_ec_read(s, x, K, M, buf, sizeof(buf), 0), (ssize_t)o[3].len);
	cr_assert(!memcmp(buf, o[3].data, o[3].len));
	for (t0 = tnow_ms(); tnow_ms() - t0 < 10000; tsleep_ms(100)) {
		cr_assert_eq(strip_census(x, &files, &misplaced, &big), 0);
		if (files == K + M)
			break;
	}
	cr_assert(files == K + M && big == K + M, "%u files, %u full", files, big);
	free_all(o, N);
}

/* A node added: placement moves some strips; recovery copies them to
 * their new holders and the old holders drop theirs, once the new
 * holder has it: every stripe's files sit on its placement only, one
 * per position, and every object reads back. */
Test(ec, add_node_drops_extras)
{
	enum { N = 16 };
	struct obj *o = put_all(N, tseed("ec add_node_drops_extras"));
	struct sdfs *s = tcluster_client(tc);
	uint32_t before[N][K + M], ids[K + M];
	unsigned moved = 0, settled = 0, files, misplaced, big;
	char name[32];
	int64_t t0;

	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(sdfs_ec_locate(s, o[i].oid, K, M, before[i], K + M), K + M);
	tcluster_add(tc, name, sizeof(name));
	cr_log_info("added %s", name);
	for (t0 = tnow_ms(); tnow_ms() - t0 < 90000; tsleep_ms(250)) {
		settled = 0;
		for (unsigned i = 0; i < N; i++)
			if (!strip_census(o[i].oid, &files, &misplaced, &big) &&
			    files == K + M && misplaced == 0)
				settled++;
		if (settled == N)
			break;
	}
	for (unsigned i = 0; i < N && settled < N; i++) {
		strip_census(o[i].oid, &files, &misplaced, &big);
		cr_log_info("object %u: %u files, %u misplaced", i, files, misplaced);
	}
	cr_assert_eq(settled, N, "%u of %u stripes on their placement only after %" PRId64
		     " ms", settled, N, tnow_ms() - t0);
	cr_log_info("every stripe on its new placement only after %" PRId64 " ms",
		    tnow_ms() - t0);
	for (unsigned i = 0; i < N; i++) {
		cr_assert_eq(sdfs_ec_locate(s, o[i].oid, K, M, ids, K + M), K + M);
		moved += memcmp(ids, before[i], sizeof(ids)) != 0;
	}
	cr_log_info("%u of %u stripes moved", moved, N);
	cr_assert_gt(moved, 0, "the add moved no stripe: nothing tested");
	cr_assert_eq(read_all(o, N, "after the add"), 0);
	free_all(o, N);
}

/* `cluster status` counts the stripes short of a strip: a strip holder
 * down makes every stripe it holds a strip of degraded, counted once
 * (by its leader); back up, none. */
Test(ec, degraded_counted)
{
	enum { N = 10 };
	struct obj *o = put_all(N, tseed("ec degraded_counted"));
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_health h;
	uint32_t ids[K + M], dead;
	unsigned want = 0;
	char a[32], *out = NULL, *err = NULL, key[64];
	int64_t t0;

	cr_assert_eq(sdfs_ec_locate(s, o[5].oid, K, M, ids, K + M), K + M);
	dead = ids[1];
	name_of(dead, a, sizeof(a));
	for (unsigned i = 0; i < N; i++) {
		cr_assert_eq(sdfs_ec_locate(s, o[i].oid, K, M, ids, K + M), K + M);
		for (unsigned p = 0; p < K + M; p++)
			want += ids[p] == dead;
	}
	cr_assert_eq(sdfs_cluster_health(s, &h), 0);
	cr_assert_eq(h.ec_degraded, 0);
	cr_log_info("killing %s: %u of %u stripes hold a strip there", a, want, N);
	cr_assert_eq(tcluster_kill(tc, a), 0);
	cr_assert_eq(tcluster_wait_state(tc, a, "down", TCLUSTER_WAIT_MS), 0);
	for (t0 = tnow_ms(); tnow_ms() - t0 < 30000; tsleep_ms(250)) {
		cr_assert_eq(sdfs_cluster_health(s, &h), 0);
		if (h.ec_degraded == want)
			break;
	}
	cr_assert_eq(h.ec_degraded, want, "%" PRIu64 " degraded stripes counted, %u "
		     "expected", h.ec_degraded, want);
	cr_assert_eq(h.ec_unavail, 0);
	cr_log_info("%" PRIu64 " degraded stripes counted after %" PRId64 " ms",
		    h.ec_degraded, tnow_ms() - t0);
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "--json cluster status"), 0, "%s", err);
	snprintf(key, sizeof(key), "\"ec\": {\"degraded\": %u,", want);
	cr_assert(strstr(out, key), "%s", out);
	free(out);
	free(err);
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "cluster status"), 0, "%s", err);
	cr_assert(strstr(out, "stripes degraded"), "%s", out);
	free(out);
	free(err);
	cr_assert_eq(tcluster_restart(tc, a), 0);
	for (t0 = tnow_ms(); tnow_ms() - t0 < 30000; tsleep_ms(250)) {
		cr_assert_eq(sdfs_cluster_health(s, &h), 0);
		if (h.ec_degraded == 0)
			break;
	}
	cr_assert_eq(h.ec_degraded, 0, "still %" PRIu64 " degraded with every node up",
		     h.ec_degraded);
	free_all(o, N);
}

struct rm_race {
	uint64_t oid, seed;
	int stop, err;
	unsigned removed;
};

static void *remover_fn(void *arg)
{
	struct rm_race *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE) && !r->err) {
		int e = sdfs_ec_remove(tcluster_client(tc), r->oid, K, M);

		if (e == 0)
			r->removed++;
		else if (e != -ENOENT)
			r->err = e;
	}
	return NULL;
}

/* Removals racing puts of one object: every call succeeds (or finds it
 * removed already), and afterwards the object is either removed or the
 * last put's bytes — never an earlier put's, which a removal would have
 * brought back. */
Test(ec, remove_races_puts)
{
	enum { ROUNDS = 12, LEN = 3 * 65536 + 7 };
	struct rm_race r = { .oid = OID0 + 0x40000, .seed = tseed("ec remove_races_puts") };
	uint8_t *b = malloc(LEN), *buf = malloc(LEN + 1);
	pthread_t t;
	ssize_t got;

	cr_assert_eq(pthread_create(&t, NULL, remover_fn, &r), 0);
	for (unsigned i = 1; i <= ROUNDS; i++) {
		tfill_random(b, LEN, r.seed + i);
		cr_assert_eq(sdfs_ec_put(tcluster_client(tc), r.oid, K, M, b, LEN), 0,
			     "put %u", i);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	cr_assert_eq(r.err, 0, "remove: %s", strerror(-r.err));
	got = sdfs_ec_read(tcluster_client(tc), r.oid, K, M, buf, LEN + 1, 0);
	cr_log_info("%u removals among %u puts; the object reads %zd", r.removed, ROUNDS,
		    got);
	cr_assert(got == -ENOENT || got == LEN, "read: %zd", got);
	if (got == LEN)
		cr_assert(!memcmp(buf, b, LEN), "not the last put's bytes");
	/* and a last removal sticks */
	if (got == LEN)
		cr_assert_eq(sdfs_ec_remove(tcluster_client(tc), r.oid, K, M), 0);
	cr_assert_eq(sdfs_ec_read(tcluster_client(tc), r.oid, K, M, buf, LEN, 0), -ENOENT);
	free(b);
	free(buf);
}
