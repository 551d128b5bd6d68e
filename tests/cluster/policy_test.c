/*
 * policy_test.c - a directory's redundancy policy (`sdfs fs setpolicy`,
 * docs/policy.md), end to end on real daemons: what is made under it
 * gets its copies, its data objects sit on exactly that many nodes (the
 * copies travel in the oid, kind 0x1c, so recovery agrees), what existed
 * before keeps its copies, and only root may set it, only on a directory.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/oid.h"
#include "tests/cluster/fixture.h"

#define NODES 3                 /* the cluster's copies */
#define BLOCKD 4                /* one more: a lost node's copies move */
#define CHUNKS 3

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = BLOCKD, .copies = NODES,
						     .mds = 1, .mount = 1,
						     .out_grace_s = 2 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(policy, .init = up, .fini = down, .timeout = 240);

static const char *at(const char *rel)
{
	static char p[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", tcluster_mnt(tc), rel);
	return p[k];
}

static struct sdfs_stat resolve(const char *path)
{
	struct sdfs_stat st;

	cr_assert_eq(sdfs_ns_resolve(tcluster_client(tc), path, 1, &st), 0, "%s", path);
	return st;
}

static void set_policy(const char *path, unsigned copies)
{
	struct sdfs_stat st = resolve(path), out;

	cr_assert_eq(sdfs_ns_setpolicy(tcluster_client(tc), st.ino, copies, &out), 0,
		     "setpolicy %s", path);
	cr_assert_eq(out.copies, copies);
}

/* CHUNKS objects' worth of seeded bytes through the mount, fsynced. */
static uint8_t *write_file(const char *rel, uint64_t seed, size_t *len)
{
	uint32_t osz = sdfs_obj_size(tcluster_client(tc));
	size_t n = (size_t)osz * (CHUNKS - 1) + osz / 3;
	uint8_t *b = malloc(n);
	int fd;

	cr_assert(b);
	tfill_random(b, n, seed);
	fd = open(at(rel), O_CREAT | O_EXCL | O_WRONLY, 0644);
	cr_assert_geq(fd, 0, "%s: %s", rel, strerror(errno));
	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	cr_assert_eq(fsync(fd), 0, "fsync %s: %s", rel, strerror(errno));
	cr_assert_eq(close(fd), 0);
	*len = n;
	return b;
}

static void read_back(const char *rel, const uint8_t *want, size_t n)
{
	uint8_t *got = malloc(n + 1);
	int fd = open(at(rel), O_RDONLY);
	size_t have = 0;
	ssize_t r;

	cr_assert(got);
	cr_assert_geq(fd, 0, "%s: %s", rel, strerror(errno));
	/* the page cache must not answer: read what the nodes hold */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	while ((r = read(fd, got + have, n + 1 - have)) > 0)
		have += (size_t)r;
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(have, n, "%s: %zu bytes, want %zu", rel, have, n);
	cr_assert(!memcmp(got, want, n), "%s: the bytes differ", rel);
	free(got);
}

/* How many nodes that are up hold a current copy of @oid. */
static unsigned held(uint64_t oid)
{
	struct sdfs_replica r[16];
	size_t n = 0;
	unsigned ok = 0;

	cr_assert_eq(sdfs_obj_locate(tcluster_client(tc), oid, r, 16, &n), 0);
	for (size_t i = 0; i < n && i < 16; i++)
		ok += r[i].result == 0 && !strcmp(r[i].state, "up");
	return ok;
}

/* Every chunk of @path is held by @copies nodes under the oid its inode
 * names, and nothing under the other kind. */
static void assert_placed(const char *path, unsigned copies)
{
	struct sdfs_stat st = resolve(path);

	cr_assert_eq(st.copies, copies == NODES ? 0 : copies, "%s: copies %u", path,
		     st.copies);
	for (uint64_t c = 0; c < CHUNKS; c++) {
		uint64_t oid = oid_file(st.ino, c, st.copies);
		uint64_t other = oid_file(st.ino, c, st.copies ? 0 : 1);

		cr_assert_eq(held(oid), copies, "%s chunk %lu: %u copies, want %u", path,
			     (unsigned long)c, held(oid), copies);
		cr_assert_eq(held(other), 0, "%s chunk %lu under the other kind", path,
			     (unsigned long)c);
	}
}

Test(policy, what_is_made_under_a_policy_gets_its_copies)
{
	uint8_t *old, *f, *g;
	size_t nold, nf, ng;

	cr_assert_eq(mkdir(at("p"), 0755), 0);
	old = write_file("p/before", 1, &nold);         /* made before the policy */
	set_policy("/p", 2);
	f = write_file("p/f", 2, &nf);
	cr_assert_eq(mkdir(at("p/sub"), 0755), 0);      /* inherits it */
	cr_assert_eq(resolve("/p/sub").copies, 2);
	g = write_file("p/sub/g", 3, &ng);
	assert_placed("/p/before", NODES);
	assert_placed("/p/f", 2);
	assert_placed("/p/sub/g", 2);
	read_back("p/before", old, nold);
	read_back("p/f", f, nf);
	read_back("p/sub/g", g, ng);

	/* back to the cluster's: what is made next has 3 again */
	set_policy("/p", 0);
	free(old);
	old = write_file("p/after", 4, &nold);
	assert_placed("/p/after", NODES);
	assert_placed("/p/f", 2);

	/* a truncate frees the objects under the right kind */
	struct sdfs_stat st = resolve("/p/f");

	cr_assert_eq(truncate(at("p/f"), 0), 0);
	for (uint64_t c = 0; c < CHUNKS; c++)
		cr_assert_eq(held(oid_file(st.ino, c, 2)), 0, "chunk %lu left after truncate",
			     (unsigned long)c);
	free(old);
	free(f);
	free(g);
}

Test(policy, a_node_lost_and_recovery_keeps_the_policy_s_copies)
{
	uint8_t *f;
	size_t nf;

	cr_assert_eq(mkdir(at("q"), 0755), 0);
	set_policy("/q", 2);
	f = write_file("q/f", 5, &nf);
	assert_placed("/q/f", 2);
	/* a holder of chunk 0 dies for good: its copy is made again elsewhere */
	struct sdfs_stat st = resolve("/q/f");
	struct sdfs_replica r[16];
	size_t n = 0;
	char victim[64] = "";

	cr_assert_eq(sdfs_obj_locate(tcluster_client(tc), oid_file(st.ino, 0, 2), r, 16,
				     &n), 0);
	for (size_t i = 0; i < n && !victim[0]; i++)
		if (r[i].result == 0)
			tcluster_node_name(tc, r[i].node_id, victim, sizeof(victim));
	cr_assert(victim[0], "no holder of chunk 0");
	cr_assert_eq(tcluster_kill(tc, victim), 0);
	read_back("q/f", f, nf);                        /* the other copy */
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0, "no recovery after %s died", victim);
	assert_placed("/q/f", 2);
	read_back("q/f", f, nf);
	free(f);
}

Test(policy, only_root_sets_a_policy_and_only_on_a_directory)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_stat d, out;
	size_t n;
	uint8_t *f;

	cr_assert_eq(mkdir(at("r"), 0777), 0);
	f = write_file("r/file", 6, &n);
	d = resolve("/r");
	sdfs_set_caller(1000, 1000, NULL, 0);
	cr_assert_eq(sdfs_ns_setpolicy(s, d.ino, 2, &out), -EPERM);
	sdfs_set_caller(0, 0, NULL, 0);
	cr_assert_eq(sdfs_ns_setpolicy(s, resolve("/r/file").ino, 2, &out), -ENOTDIR);
	cr_assert_eq(sdfs_ns_setpolicy(s, d.ino, 16, &out), -EINVAL);
	cr_assert_eq(resolve("/r").copies, 0, "a refused policy changed the directory");

	/* the CLI: a clear line and a non-zero exit for what it refuses */
	char *out_s = NULL, *err_s = NULL;

	/* 4 nodes cannot hold 4+2 strips (EC volumes: vol_ec_test.c) */
	cr_assert_neq(tcluster_sdfs(tc, &out_s, &err_s, "fs setpolicy /r ec=4+2"), 0);
	cr_assert(strstr(err_s, "ec=4+2 needs k+m = 6"), "%s", err_s);
	free(out_s);
	free(err_s);
	cr_assert_neq(tcluster_sdfs(tc, &out_s, &err_s, "fs setpolicy /r ec=5+1"), 0);
	cr_assert(strstr(err_s, "codes are ec=2+1, ec=4+2 and ec=8+3"), "%s", err_s);
	free(out_s);
	free(err_s);
	cr_assert_eq(sdfs_ns_setpolicy(s, d.ino, 0x0105, &out), -EINVAL, "a code not in "
		     "the table taken");
	cr_assert_eq(tcluster_sdfs(tc, &out_s, &err_s, "--json fs setpolicy /r copies=2"), 0,
		     "%s", err_s);
	cr_assert(strstr(out_s, "\"copies\": 2"), "%s", out_s);
	free(out_s);
	free(err_s);
	cr_assert_eq(resolve("/r").copies, 2);
	free(f);
}

Test(policy, a_volume_made_under_a_policy_gets_its_copies)
{
	char *out = NULL, *err = NULL;

	cr_assert_eq(mkdir(at("v"), 0755), 0);
	set_policy("/v", 2);
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "vol create /v/disk 64M"), 0, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(resolve("/v/disk").copies, 2);
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "vol create /v/three 64M --copies 3"), 0,
		     "%s", err);
	free(out);
	free(err);
	cr_assert_eq(resolve("/v/three").copies, 3, "--copies lost to the policy");
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "vol create /v/one 64M --policy copies=1"),
		     0, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(resolve("/v/one").copies, 1);
	cr_assert_neq(tcluster_sdfs(tc, &out, &err, "vol create /v/ec 64M --policy ec=4+2"), 0);
	cr_assert(strstr(err, "ec=4+2 needs k+m = 6"), "%s", err);
	free(out);
	free(err);
	cr_assert_eq(tcluster_sdfs(tc, &out, &err, "vol create /v/ec 64M --policy ec=2+1"), 0,
		     "%s", err);
	free(out);
	free(err);
	cr_assert_eq(resolve("/v/ec").copies, 0x2202, "ec=2+1: k 2 (bits 8..12), m 1 (13..15), copies 2");
}
