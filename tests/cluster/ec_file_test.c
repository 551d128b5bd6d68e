/*
 * ec_file_test.c - erasure-coded regular files (docs/ec.md "EC files"):
 * 4 block daemons, two mds (one standby), two mounts, ec_seal_after_s=1,
 * a directory of policy ec=2+1.
 *
 *   seal_modify_unlink  files written through mount 1 and closed are
 *                       sealed by the mds (the inode's bit, no replicated
 *                       object left, every stripe readable) and read back
 *                       byte-exact through mount 2 and a cold libsdfs
 *                       read; a partial overwrite, an append and a
 *                       truncate (compared with a model) unseal them;
 *                       they seal again; an unlink removes the stripes
 *   holder_killed       a sealed file read back with a strip holder
 *                       SIGKILLed (a degraded read)
 *   mds_killed          the active mds exits after putting an 8 MiB
 *                       file's stripes, before its inode says sealed
 *                       (SDFS_MDS_ECFILE_FAULT): the file reads back
 *                       from its replicated objects, the standby seals it
 *   measure_64mib       a 64 MiB file: the strip files on disk per byte
 *                       (at most 1.6 for 2+1), the seal's log line, the
 *                       time of the first write after the seal (the
 *                       unseal), printed
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/oid.h"
#include "common/policy.h"
#include "tests/cluster/fixture.h"

static struct tcluster *tc;
static char fault[64];          /* SDFS_MDS_ECFILE_FAULT (mds/ecfile.c) */

static void up(void)
{
	snprintf(fault, sizeof(fault), "/tmp/sdfs-ecfile-fault.%d", (int)getpid());
	unlink(fault);
	setenv("SDFS_MDS_ECFILE_FAULT", fault, 1);
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 4, .mds = 2, .mounts = 2,
						     .out_grace_s = 60,
						     .set = "ec_seal_after_s=1" });
	cr_assert(tc);
}

static void down(void)
{
	tcluster_stop(tc);
	unlink(fault);
}

TestSuite(ec_file, .init = up, .fini = down, .timeout = 240);

static const char *at(unsigned mnt, const char *rel)
{
	static char p[8][512];
	static int k;

	k = (k + 1) % 8;
	snprintf(p[k], sizeof(p[k]), "%s/%s", tcluster_mnt_n(tc, mnt), rel);
	return p[k];
}

/* @path: a mount's path; the test's handle resolves the part after it. */
static struct sdfs_stat resolve(const char *path)
{
	struct sdfs_stat st;
	const char *rel = path;

	for (unsigned i = 0; i < 2; i++) {
		size_t l = strlen(tcluster_mnt_n(tc, i));

		if (strncmp(path, tcluster_mnt_n(tc, i), l) == 0 && path[l] == '/')
			rel = path + l;
	}
	cr_assert_eq(sdfs_ns_resolve(tcluster_client(tc), rel, 1, &st), 0, "%s", rel);
	return st;
}

static void ec_dir_code(const char *rel, unsigned k, unsigned m)
{
	struct sdfs_stat out;

	cr_assert_eq(mkdir(at(0, rel), 0755), 0);
	cr_assert_eq(sdfs_ns_setpolicy(tcluster_client(tc), resolve(at(0, rel)).ino,
				       policy_ec(k, m), &out), 0);
}

static void ec_dir(const char *rel)
{
	ec_dir_code(rel, 2, 1);
}

/* Does a log of the cluster's mds have a line with @what? */
static int mds_logged(const char *what)
{
	char line[1024], path[600];
	int found = 0;

	for (unsigned i = 0; i < 2 && !found; i++) {
		snprintf(path, sizeof(path), "%s/log/mds.%u.log", tcluster_dir(tc), i);
		FILE *f = fopen(path, "r");

		while (f && !found && fgets(line, sizeof(line), f))
			found = strstr(line, what) != NULL;
		if (f)
			fclose(f);
	}
	return found;
}

static void fill(char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)((i * 31 + seed * 7 + (i >> 12)) & 0xff);
}

static void write_file(const char *path, const char *b, size_t n)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	cr_assert_eq(close(fd), 0);
}

static void check_file(const char *path, const char *want, size_t n)
{
	char *got = malloc(n + 16);
	int fd = open(path, O_RDONLY);
	size_t done = 0;
	ssize_t r;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	while ((r = read(fd, got + done, n + 16 - done)) > 0)
		done += (size_t)r;
	close(fd);
	cr_assert_eq(done, n, "%s: %zu bytes, want %zu", path, done, n);
	cr_assert(memcmp(got, want, n) == 0, "%s: bytes differ", path);
	free(got);
}

/* The same through the test's own handle: no cache anywhere. */
static void check_cold(const char *path, const char *want, size_t n)
{
	struct sdfs_stat st = resolve(path);
	char *got = malloc(n + 1);

	cr_assert_eq(st.size, n);
	cr_assert_eq(sdfs_file_pread(tcluster_client(tc), &st, got, n, 0), (ssize_t)n);
	cr_assert(memcmp(got, want, n) == 0, "%s: cold bytes differ", path);
	free(got);
}

/* Wait until @path is sealed (or, !@sealed, replicated); 0 on time. */
static int wait_sealed(const char *path, int sealed, int secs)
{
	for (int i = 0; i < secs * 10; i++) {
		if (policy_is_sealed(resolve(path).copies) == sealed)
			return 0;
		usleep(100000);
	}
	return -1;
}

/* Sealed for real: no replicated object (the mds removes them right
 * after the inode says sealed: a few seconds at most), every chunk's
 * stripe there. */
static void assert_stored_sealed(const char *path)
{
	struct sdfs_stat st = resolve(path);
	struct sdfs_obj_info oi;
	char b[16];

	cr_assert(policy_is_sealed(st.copies), "%s not sealed", path);
	for (uint64_t c = 0; c * st.obj_size < st.size; c++) {
		int ret;

		for (int i = 0; i < 100; i++) {
			ret = sdfs_obj_stat(tcluster_client(tc), oid_file(st.ino, c, st.copies),
					    &oi);
			if (ret == -ENOENT)
				break;
			usleep(100000);
		}
		cr_assert_eq(ret, -ENOENT, "%s chunk %lu replicated still after 10 s",
			     path, (unsigned long)c);
		cr_assert_eq(sdfs_ec_read(tcluster_client(tc), oid_fstripe(st.ino, c), 2, 1, b,
					  sizeof(b), 0), (ssize_t)sizeof(b),
			     "%s chunk %lu: no stripe", path, (unsigned long)c);
	}
}

Test(ec_file, seal_modify_unlink)
{
	size_t n1 = 9 * 1024 * 1024 + 123, n2 = 100 * 1024;
	char *m1 = malloc(n1 + 4096), *m2 = malloc(n2);
	struct sdfs_stat st;
	char b[16];
	int fd;

	ec_dir("e");
	/* 4+2 on 4 block daemons: written replicated, never sealed (below) */
	ec_dir_code("w", 4, 2);
	write_file(at(0, "w/f"), "four plus two", 13);
	fill(m1, n1, 1);
	fill(m2, n2, 2);
	write_file(at(0, "e/big"), m1, n1);
	write_file(at(0, "e/small"), m2, n2);
	cr_assert(policy_is_ec(resolve(at(0, "e/big")).copies));
	cr_assert_eq(wait_sealed(at(0, "e/big"), 1, 20), 0, "big never sealed");
	cr_assert_eq(wait_sealed(at(0, "e/small"), 1, 20), 0, "small never sealed");
	assert_stored_sealed(at(0, "e/big"));
	assert_stored_sealed(at(0, "e/small"));
	char *out = NULL;
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "fs stat /e/big --json"), 0);
	cr_assert(strstr(out, "\"sealed\": true") && strstr(out, "\"policy\": \"ec=2+1\""),
		  "%s", out);
	free(out);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "fs stat /e/big"), 0);
	cr_assert(strstr(out, "policy    ec=2+1 (sealed: stripes)"), "%s", out);
	free(out);
	check_file(at(1, "e/big"), m1, n1);
	check_file(at(1, "e/small"), m2, n2);
	check_cold(at(0, "e/big"), m1, n1);
	check_file(at(0, "e/big"), m1, n1);

	/* a partial overwrite and an append through mount 1 */
	fd = open(at(0, "e/big"), O_WRONLY);
	cr_assert_geq(fd, 0);
	memset(m1 + 5000000, 'x', 70000);
	cr_assert_eq(pwrite(fd, m1 + 5000000, 70000, 5000000), 70000);
	fill(m1 + n1, 4096, 3);
	cr_assert_eq(pwrite(fd, m1 + n1, 4096, (off_t)n1), 4096);
	n1 += 4096;
	cr_assert(!policy_has_stripes(resolve(at(0, "e/big")).copies), "written while sealed");
	cr_assert_eq(close(fd), 0);
	check_file(at(0, "e/big"), m1, n1);
	check_file(at(1, "e/big"), m1, n1);
	check_cold(at(0, "e/big"), m1, n1);
	/* a truncate inside a chunk of the sealed small file */
	cr_assert_eq(truncate(at(1, "e/small"), 77777), 0);
	n2 = 77777;
	check_file(at(0, "e/small"), m2, n2);
	cr_assert_eq(truncate(at(1, "e/small"), 90000), 0);
	memset(m2 + 77777, 0, 90000 - 77777);
	n2 = 90000;
	check_file(at(0, "e/small"), m2, n2);
	check_cold(at(0, "e/small"), m2, n2);

	cr_assert_eq(wait_sealed(at(0, "e/big"), 1, 20), 0, "big never sealed again");
	cr_assert_eq(wait_sealed(at(0, "e/small"), 1, 20), 0, "small never sealed again");
	assert_stored_sealed(at(0, "e/big"));
	check_file(at(1, "e/big"), m1, n1);
	check_cold(at(0, "e/big"), m1, n1);
	check_file(at(1, "e/small"), m2, n2);

	/* the active mds counted them (sdfs mds status) */
	struct sdfs_mds_status ms;
	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &ms), 0);
	cr_assert_geq(ms.ec_seals, 4, "%lu seals counted", (unsigned long)ms.ec_seals);
	cr_assert_geq(ms.ec_unseals, 2, "%lu unseals counted", (unsigned long)ms.ec_unseals);
	cr_assert_geq(ms.ec_sealed_bytes, 2 * (9u << 20));
	free(ms.list);
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "mds status"), 0);
	cr_assert(strstr(out, "ec files  "), "%s", out);
	free(out);

	/* 4+2 on 4 nodes: never sealed, nothing written for it, clearly
	 * logged; writes and reads go on */
	cr_assert_eq(resolve(at(0, "w/f")).copies, policy_ec(4, 2), "%#x",
		     resolve(at(0, "w/f")).copies);
	cr_assert(mds_logged("cannot place the strips of its code"), "no log line");
	fd = open(at(1, "w/f"), O_WRONLY | O_APPEND);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "!", 1), 1);
	cr_assert_eq(close(fd), 0);
	check_file(at(0, "w/f"), "four plus two!", 14);

	/* unlink: the stripes go */
	st = resolve(at(0, "e/big"));
	cr_assert_eq(unlink(at(0, "e/big")), 0);
	int gone = 0;
	for (int i = 0; i < 100 && !gone; i++) {
		gone = 1;
		for (uint64_t c = 0; c * st.obj_size < st.size; c++)
			if (sdfs_ec_read(tcluster_client(tc), oid_fstripe(st.ino, c), 2, 1, b,
					 sizeof(b), 0) != -ENOENT)
				gone = 0;
		if (!gone)
			usleep(100000);
	}
	cr_assert(gone, "stripes of an unlinked sealed file still readable");
	free(m1);
	free(m2);
}

Test(ec_file, holder_killed)
{
	size_t n = 5 * 1024 * 1024 + 77;
	char *m = malloc(n), name[64];
	uint32_t ids[3];
	struct sdfs_stat st;

	ec_dir("h");
	fill(m, n, 9);
	write_file(at(0, "h/f"), m, n);
	cr_assert_eq(wait_sealed(at(0, "h/f"), 1, 20), 0, "never sealed");
	st = resolve(at(0, "h/f"));
	cr_assert_eq(sdfs_ec_locate(tcluster_client(tc), oid_fstripe(st.ino, 0), 2, 1, ids, 3),
		     3);
	cr_assert(tcluster_node_name(tc, ids[0], name, sizeof(name)));
	cr_assert_eq(tcluster_signal(tc, name, SIGKILL), 0, "%s", name);
	check_cold(at(0, "h/f"), m, n);
	check_file(at(1, "h/f"), m, n);
	free(m);
}

Test(ec_file, mds_killed)
{
	size_t n = 8 * 1024 * 1024;
	char *m = malloc(n), active[32];
	int fd;

	ec_dir("k");
	cr_assert_eq(tcluster_active_mds(tc, active, sizeof(active)), 0);
	fd = open(fault, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	fill(m, n, 5);
	write_file(at(0, "k/f"), m, n);
	for (int i = 0; i < 200 && tcluster_running(tc, active) == 1; i++)
		usleep(100000);
	cr_assert_eq(access(fault, F_OK), -1, "the seal never reached the hook");
	cr_assert_eq(tcluster_wait_active_mds(tc, active, NULL, 0, TCLUSTER_WAIT_MS), 0);
	cr_assert(!policy_is_sealed(resolve(at(0, "k/f")).copies),
		  "sealed although the mds died before its commit");
	cr_assert(resolve(at(0, "k/f")).copies & POLICY_STRIPES,
		  "stripes were put but the inode does not say they may exist");
	check_cold(at(0, "k/f"), m, n);
	check_file(at(1, "k/f"), m, n);
	cr_assert_eq(wait_sealed(at(0, "k/f"), 1, 45), 0, "never sealed after the failover");
	assert_stored_sealed(at(0, "k/f"));
	check_cold(at(0, "k/f"), m, n);
	check_file(at(1, "k/f"), m, n);
	free(m);
}

/* Bytes of the strip files of a file's stripes under the cluster's dir:
 * "<oid>.<ss>.<version>", the oid's first 14 hex digits (chunks < 256). */
static char strip_pfx[24];
static uint64_t strip_bytes;
static int strip_files;

static int count_strip(const char *path, const struct stat *sb, int type, struct FTW *f)
{
	const char *base = path + f->base;

	if (type == FTW_F && strstr(path, "/strip/") &&
	    strncmp(base, strip_pfx, strlen(strip_pfx)) == 0 && !strstr(base, ".tmp")) {
		strip_bytes += (uint64_t)sb->st_size;
		strip_files++;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

Test(ec_file, measure_64mib)
{
	size_t n = 64u << 20;
	char *m = malloc(n), line[512], path[600];
	struct sdfs_stat st;
	double t0, t1;
	int fd;

	ec_dir("m");
	fill(m, n, 11);
	write_file(at(0, "m/f"), m, n);
	cr_assert_eq(wait_sealed(at(0, "m/f"), 1, 30), 0, "never sealed");
	st = resolve(at(0, "m/f"));
	assert_stored_sealed(at(0, "m/f"));
	snprintf(strip_pfx, sizeof(strip_pfx), "%014" PRIx64, oid_fstripe(st.ino, 0) >> 8);
	strip_bytes = 0;
	strip_files = 0;
	cr_assert_eq(nftw(tcluster_dir(tc), count_strip, 16, FTW_PHYS), 0);
	cr_assert_eq(strip_files, (int)(3 * (n / st.obj_size)), "%d strip files",
		     strip_files);
	cr_log_info("64 MiB sealed 2+1: %d strip files, %" PRIu64 " bytes, %.3f per byte",
		    strip_files, strip_bytes, (double)strip_bytes / (double)n);
	cr_assert_leq((double)strip_bytes / (double)n, 1.6);
	for (unsigned i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/log/mds.%u.log", tcluster_dir(tc), i);
		FILE *f = fopen(path, "r");

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "sealed"))
				cr_log_info("%s", line);
		if (f)
			fclose(f);
	}
	check_file(at(1, "m/f"), m, n);
	/* the first write after the seal pays the unseal */
	fd = open(at(0, "m/f"), O_WRONLY);
	cr_assert_geq(fd, 0);
	t0 = now_s();
	cr_assert_eq(pwrite(fd, "z", 1, 12345), 1);
	t1 = now_s();
	m[12345] = 'z';
	cr_assert_eq(close(fd), 0);
	cr_log_info("first write into the sealed 64 MiB file: %.2f s (the unseal)", t1 - t0);
	cr_assert(!policy_is_sealed(resolve(at(0, "m/f")).copies));
	check_file(at(1, "m/f"), m, n);
	check_cold(at(0, "m/f"), m, n);
	free(m);
}
