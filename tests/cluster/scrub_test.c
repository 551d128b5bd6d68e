/*
 * scrub_test.c - the block daemons' background scrub (docs/scrub.md):
 * copies that rot on disk are found and rewritten from good ones
 * without any client read; an object corrupt everywhere is counted,
 * logged and left as it was; a pass pauses and resumes where it was,
 * across a restart of the daemon too; only admin keys start or stop it;
 * a copy that checks but differs from its peers (docs/scrub.md "Copies
 * that differ"): a stale one is refreshed from the newest, the odd one
 * of a version is replaced by the majority's, or by the primary's for an
 * object ordered through it, and one no rule decides is counted, logged
 * and left alone; a scrub racing a stream of client writes counts and
 * changes nothing; a big object is read piece by piece and again when
 * written meanwhile; sdfs.conf's scrub_mbps / scrub_interval_s set a
 * daemon's rate and schedule, and --scrub-mbps overrides the file.
 *
 * Corruption is made by flipping bytes in object files on disk
 * (objfile.h), a stale copy by putting an older copy's file back in
 * place, and the result is checked there too, with the tests' own
 * reader of the format, not the daemon's.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/oid.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/objfile.h"
#include "tests/cluster/tjson.h"

#define COPIES 3
#define NOBJ 200
#define NBAD 40                 /* every fifth object, one copy */
#define OID0 0x5c0b0000u
#define LEN (3 * 4096 + 1234)   /* three whole blocks and a partial one */
#define WAIT_MS 60000

static struct tcluster *tc;
static unsigned char data[NOBJ][LEN];
static char paths[NOBJ][COPIES][1024];
static uint32_t nodes[NOBJ][COPIES];

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = COPIES, .copies = COPIES });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(scrub, .init = up, .fini = down, .timeout = 240);

/* @n objects put, and where each copy's file is. */
static void put_objects(unsigned n)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t seed = tseed("scrub data");

	for (unsigned i = 0; i < n; i++) {
		struct sdfs_replica r[COPIES];
		size_t got;

		tfill_random(data[i], LEN, seed + i);
		cr_assert_eq(sdfs_obj_put(s, OID0 + i, data[i], LEN), 0, "put %u", i);
		cr_assert_eq(sdfs_obj_locate(s, OID0 + i, r, COPIES, &got), 0);
		cr_assert_eq(got, COPIES);
		for (int k = 0; k < COPIES; k++) {
			cr_assert_eq(r[k].result, 0, "object %u on node %u: %d", i,
				     r[k].node_id, r[k].result);
			snprintf(paths[i][k], sizeof(paths[i][k]), "%s", r[k].path);
			nodes[i][k] = r[k].node_id;
		}
	}
}

/* Every node's scrub status; fails the test if a node did not answer. */
static size_t status(struct sdfs_scrub_status **st)
{
	size_t n;

	cr_assert_eq(sdfs_scrub(tcluster_client(tc), SDFS_SCRUB_ALL, SDFS_SCRUB_ASK, 0,
				st, &n), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq((*st)[i].result, 0, "node %u: %s", (*st)[i].node_id,
			     strerror(-(*st)[i].result));
	return n;
}

static const struct sdfs_scrub_status *of_node(const struct sdfs_scrub_status *st,
					       size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (st[i].node_id == id)
			return &st[i];
	cr_assert_fail("node %u not in the scrub status", id);
	return NULL;
}

/* `sdfs scrub ARGS --json`: it must succeed with valid JSON. */
static void scrub_cli(const char *args)
{
	char *out = NULL, *err = NULL;
	int st = tcluster_sdfs(tc, &out, &err, "scrub %s --json", args);

	cr_assert_eq(st, 0, "sdfs scrub %s: exit %d: %s", args, st, err ? err : "");
	cr_assert(tjson_valid(out), "sdfs scrub %s --json: not JSON: %s", args, out);
	free(out);
	free(err);
}

/* Wait (bounded, polling) until every node finished @passes passes and
 * none runs; returns the status. */
static size_t wait_passes(uint64_t passes, struct sdfs_scrub_status **st)
{
	int64_t end = tnow_ms() + WAIT_MS;

	for (;;) {
		size_t n = status(st), done = 0;

		for (size_t i = 0; i < n; i++)
			done += (*st)[i].passes >= passes && !strcmp((*st)[i].state, "idle");
		if (done == n)
			return n;
		cr_assert_lt(tnow_ms(), end, "scrub passes did not end within %d ms",
			     WAIT_MS);
		free(*st);
		tsleep_ms(100);
	}
}

/* Every block of @path checks, and the data is @want. */
static void assert_copy_good(const char *path, const unsigned char *want)
{
	struct objfile f;
	unsigned char blk[OBJFILE_BLOCK];

	objfile_open(path, &f);
	cr_assert_eq(f.size, LEN, "%s: size %" PRIu64, path, f.size);
	for (uint64_t b = 0; b * OBJFILE_BLOCK < LEN; b++) {
		size_t len = LEN - b * OBJFILE_BLOCK < OBJFILE_BLOCK ?
			     LEN - b * OBJFILE_BLOCK : OBJFILE_BLOCK;

		cr_assert(objfile_block_ok(&f, b), "%s: block %" PRIu64 " fails its "
			  "checksum", path, b);
		objfile_read_block(&f, b, blk);
		cr_assert_arr_eq(blk, want + b * OBJFILE_BLOCK, len, "%s: block %"
				 PRIu64 " holds other bytes", path, b);
	}
	objfile_close(&f);
}

static uint64_t version_of(const char *path)
{
	struct objfile f;
	uint64_t v;

	objfile_open(path, &f);
	v = f.epoch;
	objfile_close(&f);
	return v;
}

/* The whole file at @path (malloc'd), its length in *@len. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long sz;

	cr_assert(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	sz = ftell(f);
	cr_assert_gt(sz, 0);
	rewind(f);
	buf = malloc((size_t)sz);
	cr_assert(buf);
	cr_assert_eq(fread(buf, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	*len = (size_t)sz;
	return buf;
}

/* A data byte of block @b (0..3) of object @i's copy @k. */
static void corrupt(unsigned i, int k, unsigned b)
{
	uint64_t off = b * OBJFILE_BLOCK + 100 + i % 1000;

	if (off >= LEN)
		off = LEN - 1;
	objfile_flip_data(paths[i][k], off, 0x40);
}

Test(scrub, corrupt_copies_are_found_and_repaired_without_a_client_read)
{
	struct sdfs_scrub_status *st;
	uint64_t want[64] = { 0 }, sum_f = 0, sum_r = 0, sum_c = 0;
	uint64_t ver[NOBJ];
	size_t n;

	put_objects(NOBJ);
	for (unsigned i = 0; i < NOBJ; i++)
		ver[i] = version_of(paths[i][0]);
	/* every fifth object: one copy, the node rotating, the block too */
	for (unsigned i = 0; i < NOBJ; i += NOBJ / NBAD) {
		int k = (int)(i / (NOBJ / NBAD)) % COPIES;

		corrupt(i, k, (i / 5) % 4);
		want[nodes[i][k] % 64]++;
	}
	scrub_cli("start");
	n = wait_passes(1, &st);
	for (size_t i = 0; i < n; i++) {
		const struct sdfs_scrub_status *x = &st[i];

		cr_log_info("node %u: %" PRIu64 " objects, %" PRIu64 " bytes, found %"
			    PRIu64 ", repaired %" PRIu64 ", unrepaired %" PRIu64,
			    x->node_id, x->objects, x->bytes, x->found, x->repaired,
			    x->unrepaired);
		cr_assert_eq(x->found, want[x->node_id % 64], "node %u found %" PRIu64
			     ", %" PRIu64 " were corrupted", x->node_id, x->found,
			     want[x->node_id % 64]);
		cr_assert_eq(x->repaired, x->found, "node %u", x->node_id);
		cr_assert_eq(x->unrepaired, 0, "node %u", x->node_id);
		cr_assert_eq(x->objects, NOBJ, "node %u verified %" PRIu64, x->node_id,
			     x->objects);
		cr_assert_eq(x->bytes, (uint64_t)NOBJ * LEN);
		cr_assert_eq(x->mismatched, 0, "node %u", x->node_id);
		sum_c += x->compared;
		cr_assert_neq(x->pass_end_ms, 0);
		sum_f += x->found;
		sum_r += x->repaired;
	}
	free(st);
	cr_assert_eq(sum_f, NBAD);
	cr_assert_eq(sum_r, NBAD);
	/* each good copy compared with its two peers' by its node (a corrupt
	 * one is repaired, not compared; a peer's corrupt data has the right
	 * table, which is what a peer's csum is made of) */
	cr_assert_geq(sum_c, (uint64_t)(NOBJ * COPIES - NBAD) * (COPIES - 1),
		      "compared %" PRIu64, sum_c);
	cr_assert_leq(sum_c, (uint64_t)NOBJ * COPIES * (COPIES - 1), "compared %" PRIu64,
		      sum_c);
	/* On disk: every copy good, the original bytes, its version kept. */
	for (unsigned i = 0; i < NOBJ; i++)
		for (int k = 0; k < COPIES; k++) {
			assert_copy_good(paths[i][k], data[i]);
			cr_assert_eq(version_of(paths[i][k]), ver[i], "object %u copy %d: "
				     "version changed", i, k);
		}
	/* The found and the repaired errors are logged by the node. */
	char name[32], *line;
	cr_assert(tcluster_node_name(tc, nodes[0][0], name, sizeof(name)));
	line = tcluster_log_line(tc, name, "scrub: checksum mismatch", 5000);
	cr_assert(line, "%s logged no scrub mismatch", name);
	free(line);
	line = tcluster_log_line(tc, name, "scrub: corrupt copy rewritten from node", 5000);
	cr_assert(line, "%s logged no repair", name);
	free(line);
	/* cluster status shows the counts */
	char *out = NULL;
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "cluster status"), 0);
	cr_assert(strstr(out, "scrub") && strstr(out, "40 corrupt copies found, 40 "
						     "repaired"), "cluster status: %s", out);
	free(out);
}

Test(scrub, an_object_corrupt_everywhere_is_counted_unrepaired_and_left_alone)
{
	enum { N = 10, BAD = 3, GONE = 7 };
	struct sdfs_scrub_status *st;
	char *before[COPIES];
	size_t blen[COPIES];
	uint64_t sum_f = 0, sum_u = 0;
	size_t n;

	put_objects(N);
	/* a removed one: its tombstone (until collected) is not checked */
	cr_assert_eq(sdfs_obj_remove(tcluster_client(tc), OID0 + GONE), 0);
	for (int k = 0; k < COPIES; k++) {
		corrupt(BAD, k, (unsigned)k);
		before[k] = slurp(paths[BAD][k], &blen[k]);
	}
	scrub_cli("start");
	n = wait_passes(1, &st);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(st[i].found, 1, "node %u found %" PRIu64, st[i].node_id,
			     st[i].found);
		cr_assert_eq(st[i].unrepaired, 1, "node %u", st[i].node_id);
		cr_assert_eq(st[i].repaired, 0, "node %u", st[i].node_id);
		cr_assert_eq(st[i].objects, N - 2, "node %u verified %" PRIu64 " (neither "
			     "the removed nor the unrepaired one counts)", st[i].node_id,
			     st[i].objects);
		sum_f += st[i].found;
		sum_u += st[i].unrepaired;
	}
	free(st);
	cr_assert_eq(sum_f, COPIES);
	cr_assert_eq(sum_u, COPIES);
	/* nothing made worse: each copy's file is byte for byte as it was */
	for (int k = 0; k < COPIES; k++) {
		size_t alen;
		char *after = slurp(paths[BAD][k], &alen);

		cr_assert_eq(alen, blen[k], "copy %d changed size", k);
		cr_assert_arr_eq(after, before[k], alen, "copy %d of the object "
				 "corrupt everywhere was changed", k);
		free(after);
		free(before[k]);
	}
	for (unsigned i = 0; i < N; i++)
		if (i != BAD && i != GONE)
			for (int k = 0; k < COPIES; k++)
				assert_copy_good(paths[i][k], data[i]);
	char name[32], *line;
	cr_assert(tcluster_node_name(tc, nodes[BAD][0], name, sizeof(name)));
	line = tcluster_log_line(tc, name, "scrub: corrupt copy NOT repaired", 5000);
	cr_assert(line, "%s did not log the unrepaired copy", name);
	free(line);
	/* and a read still refuses rather than return bad bytes */
	static unsigned char out[LEN];
	cr_assert_eq(sdfs_obj_read(tcluster_client(tc), OID0 + BAD, out, sizeof(out), 0),
		     -EIO);
}

/* Wait until node @id has verified at least @objects this pass. */
static void wait_progress(uint32_t id, uint64_t objects)
{
	int64_t end = tnow_ms() + WAIT_MS;

	for (;;) {
		struct sdfs_scrub_status *st;
		size_t n = status(&st);
		uint64_t got = of_node(st, n, id)->objects;

		free(st);
		if (got >= objects)
			return;
		cr_assert_lt(tnow_ms(), end, "node %u verified only %" PRIu64, id, got);
		tsleep_ms(50);
	}
}

Test(scrub, stop_pauses_and_start_resumes_where_it_was_across_a_restart)
{
	struct sdfs_scrub_status *st, *st2;
	const struct sdfs_scrub_status *x;
	uint64_t objects, cursor, start_ms;
	char name[32] = "blockd.0";
	uint32_t id = tcluster_node_id(tc, name);
	size_t n;

	put_objects(NOBJ);
	/* 200 x 16 KiB at 64 KiB/s: about 50 s if nothing stopped it */
	scrub_cli("start --rate 64K");
	wait_progress(id, 10);
	scrub_cli("stop");
	n = status(&st);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(st[i].state, "paused", "node %u is %s", st[i].node_id,
				 st[i].state);
	x = of_node(st, n, id);
	objects = x->objects;
	cursor = x->cursor;
	start_ms = x->pass_start_ms;
	cr_assert_lt(objects, NOBJ, "the pass ended before the stop");
	cr_assert_geq(cursor, OID0);
	/* Paused stays paused: the count does not move over a while. */
	for (int i = 0; i < 5; i++) {
		tsleep_ms(300);
		n = status(&st2);
		cr_assert_eq(of_node(st2, n, id)->objects, objects, "a paused pass went on");
		free(st2);
	}
	free(st);
	/* A restart keeps the paused pass and its cursor. */
	cr_assert_eq(tcluster_term(tc, name), 0);
	cr_assert_eq(tcluster_restart(tc, name), 0);
	n = status(&st);
	x = of_node(st, n, id);
	cr_assert_str_eq(x->state, "paused");
	cr_assert_eq(x->cursor, cursor, "cursor %" PRIx64 " after the restart, was %"
		     PRIx64, x->cursor, cursor);
	cr_assert_eq(x->objects, objects);
	cr_assert_eq(x->pass_start_ms, start_ms);
	free(st);
	/* start resumes it: on from the cursor, not from the first oid */
	scrub_cli("start --rate 100M");
	n = wait_passes(1, &st);
	x = of_node(st, n, id);
	cr_assert_eq(x->pass_start_ms, start_ms, "a new pass began instead");
	cr_assert_eq(x->objects, NOBJ, "node %u verified %" PRIu64 " objects in the "
		     "pass: not each once", id, x->objects);
	cr_assert_eq(x->found, 0);
	cr_assert_eq(x->passes, 1);
	free(st);
	char *line = tcluster_log_line(tc, name, "scrub pass resumed after oid", 5000);
	cr_assert(line, "%s did not log the resume", name);
	free(line);
}

Test(scrub, start_and_stop_need_an_admin_key_status_does_not)
{
	char keyring[1024], *out = NULL, *err = NULL;
	struct sdfs_scrub_status *st;
	size_t n;
	int rc;

	snprintf(keyring, sizeof(keyring), "%s/client.bob.keyring", tcluster_dir(tc));
	rc = tcluster_sdfs(tc, NULL, &err, "auth add client.bob --caps rw -o %s", keyring);
	cr_assert_eq(rc, 0, "auth add: %s", err ? err : "");
	free(err);
	err = NULL;
	rc = tcluster_sdfs(tc, &out, &err, "--keyring %s scrub status --json", keyring);
	cr_assert_eq(rc, 0, "status with a plain key: exit %d: %s", rc, err ? err : "");
	cr_assert(tjson_valid(out), "%s", out);
	free(out);
	free(err);
	for (int i = 0; i < 2; i++) {
		const char *sub = i ? "stop" : "start";

		out = err = NULL;
		rc = tcluster_sdfs(tc, &out, &err, "--keyring %s scrub %s", keyring, sub);
		cr_assert_eq(rc, 1, "scrub %s with a plain key: exit %d", sub, rc);
		cr_assert(err && strstr(err, "needs an admin key"), "scrub %s: %s", sub,
			  err ? err : "");
		free(out);
		free(err);
	}
	/* and nothing started */
	n = status(&st);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(st[i].state, "idle", "node %u", st[i].node_id);
	free(st);
}

/* Object @i's copies: where each is now (a put makes new files). */
static void locate(unsigned i, uint64_t oid)
{
	struct sdfs_replica r[COPIES];
	size_t got;

	cr_assert_eq(sdfs_obj_locate(tcluster_client(tc), oid, r, COPIES, &got), 0);
	cr_assert_eq(got, COPIES);
	for (int k = 0; k < COPIES; k++) {
		cr_assert_eq(r[k].result, 0);
		snprintf(paths[i][k], sizeof(paths[i][k]), "%s", r[k].path);
		nodes[i][k] = r[k].node_id;
	}
}

/* Put @buf back as the whole file at @path, in place (the same inode,
 * as the daemon's open files see it). */
static void put_back(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(pwrite(fd, buf, len, 0), (ssize_t)len);
	cr_assert_eq(ftruncate(fd, (off_t)len), 0);
	cr_assert_eq(close(fd), 0);
}

/* Sum of @field over every node's status, and the field of node @id. */
#define SUM(st, n, field) ({ uint64_t s_ = 0; \
	for (size_t i_ = 0; i_ < (n); i_++) s_ += (st)[i_].field; s_; })

Test(scrub, a_stale_copy_is_refreshed_from_the_newest_without_a_client_read)
{
	/* one object ordered through its primary, one written directly */
	const uint64_t oid[2] = { OID0 + 7, oid_vdata(0x5c0b1, 3, 0) };
	static unsigned char v1[LEN];
	struct sdfs_scrub_status *st;
	char *old[2], name[32], *line;
	size_t len[2], n;
	uint64_t ver1[2], ver2[2];

	for (unsigned i = 0; i < 2; i++) {
		tfill_random(v1, LEN, tseed("scrub stale v1") + i);
		tfill_random(data[i], LEN, tseed("scrub stale v2") + i);
		cr_assert_eq(sdfs_obj_put(tcluster_client(tc), oid[i], v1, LEN), 0);
		locate(i, oid[i]);
		old[i] = slurp(paths[i][1], &len[i]);
		ver1[i] = version_of(paths[i][1]);
		cr_assert_eq(sdfs_obj_put(tcluster_client(tc), oid[i], data[i], LEN), 0);
		locate(i, oid[i]);
		ver2[i] = version_of(paths[i][1]);
		cr_assert_gt(ver2[i], ver1[i]);
		/* copy 1 missed the second put: the first one's file again */
		put_back(paths[i][1], old[i], len[i]);
		cr_assert_eq(version_of(paths[i][1]), ver1[i]);
		free(old[i]);
	}
	scrub_cli("start");
	n = wait_passes(1, &st);
	for (unsigned i = 0; i < 2; i++)
		for (int k = 0; k < COPIES; k++) {
			assert_copy_good(paths[i][k], data[i]);
			cr_assert_eq(version_of(paths[i][k]), ver2[i], "object %u copy %d: "
				     "version %" PRIx64, i, k, version_of(paths[i][k]));
		}
	for (size_t i = 0; i < n; i++) {
		uint64_t want = (st[i].node_id == nodes[0][1]) + (st[i].node_id == nodes[1][1]);

		cr_assert_eq(st[i].mismatched, want, "node %u: %" PRIu64 " differing",
			     st[i].node_id, st[i].mismatched);
		cr_assert_eq(st[i].refreshed, want, "node %u: %" PRIu64 " refreshed",
			     st[i].node_id, st[i].refreshed);
		cr_assert_eq(st[i].total_refreshed, want);
		cr_assert_eq(st[i].found, 0, "a stale copy counted corrupt");
		/* when the pass began: every object was verified after it */
		cr_assert_neq(st[i].last_start_ms, 0);
		cr_assert_eq(st[i].last_start_ms, st[i].pass_start_ms);
	}
	cr_assert_eq(SUM(st, n, refreshed), 2);
	free(st);
	cr_assert(tcluster_node_name(tc, nodes[0][1], name, sizeof(name)));
	line = tcluster_log_line(tc, name, "was stale", 5000);
	cr_assert(line, "%s did not log the stale copy", name);
	free(line);
	/* and `sdfs scrub status --json` says so */
	char *out = NULL;
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "scrub status --json"), 0);
	cr_assert(tjson_valid(out) && strstr(out, "\"total_refreshed\": ") &&
		  strstr(out, "\"last_start_ms\": "), "%s", out);
	free(out);
}

Test(scrub, the_odd_copy_of_a_version_is_replaced_by_the_majority_s)
{
	enum { N = 10, ODD = 2 };
	struct sdfs_scrub_status *st;
	uint64_t ver = 0;
	char name[32], *line;
	size_t n;

	put_objects(N);
	ver = version_of(paths[ODD][1]);
	/* copy 1 gets other bytes, checksums and version intact */
	objfile_rewrite_data(paths[ODD][1], 4096 + 7, 0x08);
	scrub_cli("start");
	n = wait_passes(1, &st);
	for (size_t i = 0; i < n; i++) {
		uint64_t want = st[i].node_id == nodes[ODD][1];

		cr_assert_eq(st[i].mismatched, want, "node %u: %" PRIu64 " differing",
			     st[i].node_id, st[i].mismatched);
		cr_assert_eq(st[i].refreshed, want, "node %u", st[i].node_id);
		cr_assert_eq(st[i].found, 0, "a copy that checks was counted corrupt");
	}
	free(st);
	for (unsigned i = 0; i < N; i++)
		for (int k = 0; k < COPIES; k++)
			assert_copy_good(paths[i][k], data[i]);
	cr_assert_eq(version_of(paths[ODD][1]), ver);
	cr_assert(tcluster_node_name(tc, nodes[ODD][1], name, sizeof(name)));
	line = tcluster_log_line(tc, name, "the odd one of its version", 5000);
	cr_assert(line, "%s did not log the replaced copy", name);
	free(line);
}

Test(scrub, three_contents_of_a_version_take_the_primary_s_or_none)
{
	/* no majority: the ordered object takes its primary's copy, the
	 * directly written one has no rule and is left as it is */
	const uint64_t oid[2] = { OID0 + 3, oid_vdata(0x5c0b2, 1, 0) };
	struct sdfs_scrub_status *st;
	char *before[COPIES], name[32], *line;
	size_t blen[COPIES], n;

	for (unsigned i = 0; i < 2; i++) {
		tfill_random(data[i], LEN, tseed("scrub three") + i);
		cr_assert_eq(sdfs_obj_put(tcluster_client(tc), oid[i], data[i], LEN), 0);
		locate(i, oid[i]);
		objfile_rewrite_data(paths[i][1], 4096 + 11, 0x10);
		objfile_rewrite_data(paths[i][2], 4096 + 11, 0x20);
	}
	for (int k = 0; k < COPIES; k++)
		before[k] = slurp(paths[1][k], &blen[k]);
	scrub_cli("start");
	n = wait_passes(1, &st);
	for (size_t i = 0; i < n; i++) {
		/* the ordered one: copies 1 and 2 replaced (from the primary,
		 * copy 0); the direct one: each node's copy counted */
		uint64_t rep = st[i].node_id != nodes[0][0];

		cr_assert_eq(st[i].refreshed, rep, "node %u: %" PRIu64 " refreshed",
			     st[i].node_id, st[i].refreshed);
		cr_assert_eq(st[i].mismatched, rep + 1, "node %u: %" PRIu64 " differing",
			     st[i].node_id, st[i].mismatched);
	}
	free(st);
	for (int k = 0; k < COPIES; k++)
		assert_copy_good(paths[0][k], data[0]);
	for (int k = 0; k < COPIES; k++) {
		size_t alen;
		char *after = slurp(paths[1][k], &alen);

		cr_assert_eq(alen, blen[k]);
		cr_assert_arr_eq(after, before[k], alen, "copy %d of the direct object "
				 "was changed without a rule", k);
		free(after);
		free(before[k]);
	}
	cr_assert(tcluster_node_name(tc, nodes[1][0], name, sizeof(name)));
	line = tcluster_log_line(tc, name, "no rule says which is right", 5000);
	cr_assert(line, "%s did not log the undecided copies", name);
	free(line);
}

/* A writer: object @oid written over and over, at random places, until
 * stop; what it last wrote is kept in shadow. */
struct writer {
	uint64_t oid;
	unsigned char shadow[LEN];
	atomic_int *stop;
	unsigned writes;
	int err;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t seed = tseed("scrub race") ^ w->oid;
	unsigned char buf[8192];

	while (!atomic_load(w->stop) && !w->err) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		size_t off = (size_t)(seed >> 33) % (LEN - sizeof(buf));
		size_t len = 1 + (size_t)(seed >> 20) % sizeof(buf);

		tfill_random(buf, len, seed);
		w->err = sdfs_obj_write(tcluster_client(tc), w->oid, buf, len, off);
		if (!w->err)
			memcpy(w->shadow + off, buf, len);
		w->writes++;
	}
	return NULL;
}

Test(scrub, a_scrub_racing_client_writes_counts_and_changes_nothing)
{
	enum { NW = 4 };
	struct writer *w = calloc(NW, sizeof(*w));
	pthread_t th[NW];
	atomic_int stop = 0;
	struct sdfs_scrub_status *st;
	unsigned passes = 0;
	size_t n;

	cr_assert(w);
	for (unsigned i = 0; i < NW; i++) {
		/* half ordered through their primary, half written directly */
		w[i].oid = i % 2 ? OID0 + 40 + i : oid_vdata(0x5c0b3, i, 0);
		w[i].stop = &stop;
		tfill_random(w[i].shadow, LEN, tseed("scrub race base") + i);
		cr_assert_eq(sdfs_obj_put(tcluster_client(tc), w[i].oid, w[i].shadow, LEN), 0);
	}
	for (unsigned i = 0; i < NW; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
	/* passes back to back for a while, each object looked at many times
	 * while writes land on its copies one after the other */
	for (int64_t end = tnow_ms() + 15000; tnow_ms() < end;) {
		n = status(&st);
		int idle = 1;
		for (size_t i = 0; i < n; i++)
			idle &= !strcmp(st[i].state, "idle");
		free(st);
		if (idle) {
			scrub_cli("start --rate 100M");
			passes++;
		}
		tsleep_ms(50);
	}
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < NW; i++) {
		cr_assert_eq(pthread_join(th[i], NULL), 0);
		cr_assert_eq(w[i].err, 0, "writer %u: %s", i, strerror(-w[i].err));
		cr_log_info("writer %u: %u writes", i, w[i].writes);
	}
	n = wait_passes(0, &st);
	cr_log_info("%u passes started", passes);
	cr_assert_geq(passes, 2);
	for (size_t i = 0; i < n; i++) {
		cr_log_info("node %u: compared %" PRIu64 ", differing %" PRIu64 ", refreshed %"
			    PRIu64, st[i].node_id, st[i].compared, st[i].total_mismatched,
			    st[i].total_refreshed);
		cr_assert_eq(st[i].total_mismatched, 0, "node %u counted copies in flight "
			     "as differing", st[i].node_id);
		cr_assert_eq(st[i].total_refreshed, 0, "node %u", st[i].node_id);
		cr_assert_eq(st[i].total_found, 0, "node %u", st[i].node_id);
	}
	free(st);
	/* every copy holds what was written last */
	for (unsigned i = 0; i < NW; i++) {
		locate(0, w[i].oid);
		for (int k = 0; k < COPIES; k++)
			assert_copy_good(paths[0][k], w[i].shadow);
	}
	free(w);
}

Test(scrub, a_big_object_is_read_in_pieces_and_again_when_written_meanwhile)
{
	/* 2 MiB at 256 KiB/s: about 8 s an object, a piece at a time; a
	 * write lands in the middle (it does not wait for the object), the
	 * scrub reads that copy again and compares the whole new one */
	enum { BIG = 2 << 20 };
	const uint64_t oid = OID0 + 90;
	unsigned char *buf = malloc(BIG), patch[4096];
	struct sdfs_scrub_status *st;
	size_t n;

	cr_assert(buf);
	tfill_random(buf, BIG, tseed("scrub big"));
	cr_assert_eq(sdfs_obj_put(tcluster_client(tc), oid, buf, BIG), 0);
	scrub_cli("start --rate 256K");
	tsleep_ms(2500);
	n = status(&st);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(st[i].state, "running", "node %u", st[i].node_id);
	free(st);
	tfill_random(patch, sizeof(patch), tseed("scrub big patch"));
	cr_assert_eq(sdfs_obj_write(tcluster_client(tc), oid, patch, sizeof(patch),
				    BIG / 2), 0);
	memcpy(buf + BIG / 2, patch, sizeof(patch));
	n = wait_passes(1, &st);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(st[i].objects, 1, "node %u", st[i].node_id);
		cr_assert_eq(st[i].bytes, BIG, "node %u", st[i].node_id);
		cr_assert_eq(st[i].found + st[i].mismatched, 0, "node %u", st[i].node_id);
		/* both peers' copies of the new version compared */
		cr_assert_eq(st[i].compared, COPIES - 1, "node %u compared %" PRIu64,
			     st[i].node_id, st[i].compared);
	}
	free(st);
	locate(0, oid);
	for (int k = 0; k < COPIES; k++) {
		struct objfile f;
		unsigned char blk[OBJFILE_BLOCK];

		objfile_open(paths[0][k], &f);
		for (uint64_t b = 0; b < BIG / OBJFILE_BLOCK; b++) {
			cr_assert(objfile_block_ok(&f, b));
			objfile_read_block(&f, b, blk);
			cr_assert_arr_eq(blk, buf + b * OBJFILE_BLOCK, OBJFILE_BLOCK);
		}
		objfile_close(&f);
	}
	free(buf);
}

/* Append @len bytes of @text to the file at @path. */
static void append(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "a");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(text, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

/* Restart @name (SIGTERM, then `sdfs dev start` of its recorded command
 * line), after @cmd_extra (NUL-separated words, @len bytes) is added to
 * that command line. */
static void restart_with(const char *name, const char *cmd_extra, size_t len)
{
	char path[1024];

	cr_assert_eq(tcluster_term(tc, name), 0);
	if (len) {
		snprintf(path, sizeof(path), "%s/run/%s.cmd", tcluster_dir(tc), name);
		append(path, cmd_extra, len);
	}
	cr_assert_eq(tcluster_restart(tc, name), 0);
}

Test(scrub, the_config_file_sets_rate_and_interval_and_the_command_line_wins)
{
	static const char opt[] = "--scrub-mbps\0" "9";  /* and its final NUL */
	struct sdfs_scrub_status *st;
	const struct sdfs_scrub_status *x;
	size_t n;

	/* read by a daemon when it starts: blockd.2 keeps the defaults */
	append(tcluster_conf(tc), "scrub_mbps = 7\nscrub_interval_s = 0\n",
	       strlen("scrub_mbps = 7\nscrub_interval_s = 0\n"));
	restart_with("blockd.0", NULL, 0);
	restart_with("blockd.1", opt, sizeof(opt));
	n = status(&st);
	x = of_node(st, n, tcluster_node_id(tc, "blockd.0"));
	cr_assert_eq(x->rate, 7000000, "blockd.0's rate %" PRIu64, x->rate);
	cr_assert_eq(x->interval_s, 0, "blockd.0's interval %" PRIu64, x->interval_s);
	cr_assert_eq(x->next_start_ms, 0, "only on demand: no next start");
	x = of_node(st, n, tcluster_node_id(tc, "blockd.1"));
	cr_assert_eq(x->rate, 9000000, "--scrub-mbps 9 lost to the file: %" PRIu64,
		     x->rate);
	cr_assert_eq(x->interval_s, 0, "the file's interval, no --scrub-interval");
	x = of_node(st, n, tcluster_node_id(tc, "blockd.2"));
	cr_assert_eq(x->rate, 50000000, "the default rate: %" PRIu64, x->rate);
	cr_assert_eq(x->interval_s, 604800, "the default interval");
	free(st);
}
