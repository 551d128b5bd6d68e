/*
 * crash_write_test.c - kill -9 of a replica in the middle of object
 * writes leaves every replica checksum-valid with every 4 KiB block
 * wholly of one write, never a mix.
 *
 * A writer thread keeps overwriting one whole object with generation
 * g = 1, 2, ...: block b of generation g is a pattern derived from
 * (g, b) alone, so any block tells which write it came from, or that it
 * came from none. Until recovery exists, the restarted replica may hold
 * an older generation than the others: that is expected, and not
 * checked here beyond "whole blocks of the last two writes it saw".
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cluster/fixture.h"
#include "tests/cluster/objfile.h"

#define COPIES 3
#define OID 0xc4a54u
#define BLK OBJFILE_BLOCK
#define WORDS (BLK / 8)

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = COPIES, .copies = COPIES });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(crash_write, .init = up, .fini = down, .timeout = 120);

static void fill_block(uint64_t *w, uint64_t g, uint64_t b)
{
	uint64_t st = (g << 32) ^ b ^ 0x6a09e667f3bcc909ull;

	w[0] = g;
	w[1] = b;
	for (unsigned k = 2; k < WORDS; k++)
		w[k] = trand(&st);
}

/* The generation block @b holds, or 0 if it is not wholly one. */
static uint64_t block_gen(const void *buf, uint64_t b)
{
	uint64_t want[WORDS], g;

	memcpy(&g, buf, 8);
	if (g == 0)
		return 0;
	fill_block(want, g, b);
	return memcmp(want, buf, BLK) ? 0 : g;
}

struct writer {
	pthread_t thread;
	struct sdfs *s;
	uint32_t size;
	atomic_int stop;
	atomic_uint_fast64_t done;      /* last generation acknowledged */
	int err;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t *buf = malloc(w->size);

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (uint64_t g = 1; !atomic_load(&w->stop); g++) {
		for (uint64_t b = 0; b < w->size / BLK; b++)
			fill_block(buf + b * WORDS, g, b);
		int ret = sdfs_obj_write(w->s, OID, buf, w->size, 0);
		if (ret) {
			w->err = ret;
			break;
		}
		atomic_store(&w->done, g);
	}
	free(buf);
	return NULL;
}

/* Check a replica's file: header sane, every block checksum-valid and
 * wholly one generation; returns the lowest and highest seen. */
static void check_file(const char *path, const char *who, uint64_t *lo, uint64_t *hi)
{
	struct objfile f;
	unsigned char buf[BLK];

	objfile_open(path, &f);
	cr_assert_eq(f.oid, OID, "%s: oid in header", who);
	cr_assert_eq(f.size, f.max_obj_size, "%s: size %" PRIu64, who, f.size);
	*lo = UINT64_MAX;
	*hi = 0;
	for (uint64_t b = 0; b < f.size / BLK; b++) {
		objfile_read_block(&f, b, buf);
		uint64_t g = block_gen(buf, b);

		cr_assert_neq(g, 0, "%s: block %" PRIu64 " is not wholly one write", who, b);
		cr_assert(objfile_block_ok(&f, b), "%s: block %" PRIu64 " fails its checksum "
			  "entry (flags 0x%x)", who, b, f.flags);
		*lo = g < *lo ? g : *lo;
		*hi = g > *hi ? g : *hi;
	}
	cr_log_info("%s: generations %" PRIu64 "..%" PRIu64 ", epoch %" PRIu64 ", flags 0x%x",
		    who, *lo, *hi, f.epoch, f.flags);
	objfile_close(&f);
}

static void kill_mid_write(int replica_index)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_replica r[COPIES];
	struct writer w = { .s = s, .size = sdfs_obj_size(s) };
	uint64_t seed = tseed("kill delay"), st = seed, last, lo, hi;
	char victim[32], who[64];
	size_t n;

	cr_assert_gt(w.size, 0);
	cr_assert_eq(pthread_create(&w.thread, NULL, writer_main, &w), 0);
	for (int64_t end = tnow_ms() + 20000; !atomic_load(&w.done) && !w.err; tsleep_ms(5))
		cr_assert_lt(tnow_ms(), end, "no write completed in 20 s");
	cr_assert_eq(sdfs_obj_locate(s, OID, r, COPIES, &n), 0);
	cr_assert_eq(n, COPIES);
	cr_assert(tcluster_name_of_path(tc, r[replica_index].path, victim, sizeof(victim)));

	tsleep_ms(50 + (int)(trand(&st) % 1000));       /* a random point in the stream */
	uint64_t before = atomic_load(&w.done);
	cr_assert_eq(tcluster_kill(tc, victim), 0);
	uint64_t after = atomic_load(&w.done);
	atomic_store(&w.stop, 1);
	pthread_join(w.thread, NULL);
	last = atomic_load(&w.done);
	cr_assert_eq(w.err, 0, "a write failed: %s", strerror(-w.err));
	cr_log_info("killed %s (replica %d) with generation %" PRIu64 "..%" PRIu64 " in "
		    "flight; writer stopped after %" PRIu64, victim, replica_index, before + 1,
		    after + 1, last);

	cr_assert_eq(tcluster_restart(tc, victim), 0, "%s did not come back", victim);

	/* stat verifies every block of every replica */
	cr_assert_eq(sdfs_obj_locate(s, OID, r, COPIES, &n), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(r[i].result, 0, "replica on node %u after the crash: %s",
			     r[i].node_id, strerror(-r[i].result));

	for (size_t i = 0; i < n; i++) {
		char name[32];

		cr_assert(tcluster_name_of_path(tc, r[i].path, name, sizeof(name)));
		snprintf(who, sizeof(who), "%s%s", name, strcmp(name, victim) ? "" : " (killed)");
		check_file(r[i].path, who, &lo, &hi);
		if (strcmp(name, victim)) {
			cr_assert(lo == last && hi == last, "%s missed acknowledged generation %"
				  PRIu64 ": holds %" PRIu64 "..%" PRIu64, who, last, lo, hi);
		} else {
			/* The last write it acknowledged, and maybe some of the next. */
			cr_assert_leq(hi - lo, 1, "%s mixes generations %" PRIu64 "..%" PRIu64,
				      who, lo, hi);
			cr_assert_geq(lo, before, "%s lost acknowledged generation %" PRIu64, who,
				      before);
			cr_assert_leq(hi, after + 1, "%s holds generation %" PRIu64 " written "
				      "after its death", who, hi);
		}
	}

	/* What the cluster serves: whole blocks, whichever replica answers. */
	unsigned char *buf = malloc(w.size);
	cr_assert(buf);
	cr_assert_eq(sdfs_obj_read(s, OID, buf, w.size, 0), (ssize_t)w.size);
	for (uint64_t b = 0; b < w.size / BLK; b++)
		cr_assert_neq(block_gen(buf + b * BLK, b), 0,
			      "read: block %" PRIu64 " is not wholly one write", b);

	/* The crashed replica takes the next write like the others. */
	for (uint64_t b = 0; b < w.size / BLK; b++)
		fill_block((uint64_t *)buf + b * WORDS, last + 1, b);
	cr_assert_eq(sdfs_obj_write(s, OID, buf, w.size, 0), 0);
	cr_assert_eq(sdfs_obj_locate(s, OID, r, COPIES, &n), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(r[i].result, 0, "replica on node %u: %s", r[i].node_id,
			     strerror(-r[i].result));
		cr_assert_eq(r[i].csum, r[0].csum, "replicas differ after a full rewrite");
		check_file(r[i].path, "after rewrite", &lo, &hi);
		cr_assert(lo == last + 1 && hi == last + 1);
	}
	free(buf);
}

Test(crash_write, kill9_of_primary_mid_write_leaves_whole_blocks)
{
	kill_mid_write(0);
}

Test(crash_write, kill9_of_secondary_mid_write_leaves_whole_blocks)
{
	kill_mid_write(COPIES - 1);
}
