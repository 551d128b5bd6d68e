/*
 * vol_cli_test.c - sdfs vol and sdfs snap against a cluster with two
 * sdfs-mds: create/info, raw images through import and export (files
 * and pipes, byte for byte), snapshots, incremental diff streams and
 * refusing bad ones, convert, clone and tree, rollback, resize, no
 * volume of size 0, and one-line errors (exit 2 for a bad command
 * line). Commands with redirections run through /bin/sh -c with $SDFS
 * set to the built sdfs and the cluster's config, in the cluster's dir
 * (local files live there).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/cluster/tjson.h"

#define MIB (1u << 20)
#define SH_TIMEOUT_MS 120000

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .copies = 2, .mds = 2 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(vol_cli, .init = up, .fini = down, .timeout = 240);

static char *slurp(int fd)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	ssize_t n;

	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert(buf);
	while (got < (size_t)st.st_size &&
	       (n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	return buf;
}

/*
 * Run the shell line @fmt in the cluster's dir with $SDFS = "sdfs -c
 * CONF"; stdout and stderr captured into *@out / *@err (NULL: dropped).
 * Returns the exit status (128 + signal if killed).
 */
static int sh(char **out, char **err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int sh(char **out, char **err, const char *fmt, ...)
{
	char line[8192], sdfs[8192];
	int ofd = memfd_create("out", MFD_CLOEXEC), efd = memfd_create("err", MFD_CLOEXEC);
	int status = 0;
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	snprintf(sdfs, sizeof(sdfs), "%s -c %s", getenv("SDFS_BIN"), tcluster_conf(tc));
	cr_assert(ofd >= 0 && efd >= 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDONLY);

		if (nfd < 0 || dup2(nfd, 0) < 0 || dup2(ofd, 1) < 0 || dup2(efd, 2) < 0 ||
		    setenv("SDFS", sdfs, 1) || chdir(tcluster_dir(tc)))
			_exit(127);
		close_range(3, ~0u, 0);
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	for (int64_t end = tnow_ms() + SH_TIMEOUT_MS;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (tnow_ms() > end) {
			cr_log_error("%s: still running after %d ms; killing it", line,
				     SH_TIMEOUT_MS);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		tsleep_ms(5);
	}
	if (out)
		*out = slurp(ofd);
	if (err)
		*err = slurp(efd);
	close(ofd);
	close(efd);
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	       128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* A shell line that must succeed; its stdout. */
static char *ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *ok(const char *fmt, ...)
{
	char line[8192], *out, *err;
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	st = sh(&out, &err, "%s", line);
	cr_assert_eq(st, 0, "%s: exit %d: %s", line, st, err);
	free(err);
	return out;
}

/* A shell line that must fail: exit @want (-1: any failure), nothing on
 * stdout, one line on stderr ("sdfs: ..." for exit 1) mentioning
 * @mention (NULL: anything). */
static void fails(int want, const char *mention, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fails(int want, const char *mention, const char *fmt, ...)
{
	char line[8192], *out, *err;
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	st = sh(&out, &err, "%s", line);
	if (want < 0)
		cr_assert_neq(st, 0, "%s: succeeded", line);
	else
		cr_assert_eq(st, want, "%s: exit %d, not %d; stderr: %s", line, st, want, err);
	cr_assert_str_empty(out, "%s: printed on stdout: %.200s", line, out);
	cr_assert_eq(tcount_lines(err), 1, "%s: stderr is not one line: %s", line, err);
	cr_assert(err[strlen(err) - 1] == '\n', "%s: unterminated: %s", line, err);
	if (st == 1)
		cr_assert(!strncmp(err, "sdfs: ", 6), "%s: no 'sdfs: ' prefix: %s", line, err);
	if (mention)
		cr_assert(strstr(err, mention), "%s: the error should mention '%s': %s", line,
			  mention, err);
	cr_log_info("%s: exit %d: %s", line, st, err);
	free(out);
	free(err);
}

static void local_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tcluster_dir(tc), name);
}

static void write_local(const char *name, const void *buf, size_t len)
{
	char path[4200];
	int fd;

	local_path(path, sizeof(path), name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static unsigned char *read_local(const char *name, size_t *len)
{
	char path[4200];
	struct stat st;
	unsigned char *buf;
	size_t got = 0;
	int fd;

	local_path(path, sizeof(path), name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert(buf);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		cr_assert_gt(n, 0, "%s: short read", path);
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return buf;
}

/* Local file @name holds exactly @want. */
static void assert_local(const char *name, const unsigned char *want, size_t len)
{
	size_t got_len;
	unsigned char *got = read_local(name, &got_len);

	cr_assert_eq(got_len, len, "%s: %zu bytes, not %zu", name, got_len, len);
	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i])
			cr_assert_fail("%s: byte %zu is 0x%02x, not 0x%02x", name, i, got[i],
				       want[i]);
	free(got);
}

/*
 * @len random bytes with holes: every chunk (@chunk bytes) whose bit is
 * set in @zero_mask is all zeros, and a few small zero runs inside
 * data chunks.
 */
static unsigned char *image(size_t len, uint64_t seed, size_t chunk, uint64_t zero_mask)
{
	unsigned char *b = malloc(len);

	cr_assert(b);
	tfill_random(b, len, seed);
	for (size_t c = 0; c * chunk < len; c++) {
		size_t n = len - c * chunk < chunk ? len - c * chunk : chunk;

		if (zero_mask >> (c % 64) & 1)
			memset(b + c * chunk, 0, n);
		else if (n > 9000)
			memset(b + c * chunk + 4096, 0, 4096);  /* a hole inside data */
	}
	return b;
}

static int64_t json_int(const char *json, const char *key)
{
	int64_t v;

	cr_assert(tjson_valid(json), "not JSON: %s", json);
	cr_assert_eq(tjson_int(json, key, &v, NULL), 0, "no %s: %s", key, json);
	return v;
}

static int64_t vol_field(const char *path, const char *key)
{
	char *out = ok("$SDFS --json vol info %s", path);
	int64_t v = json_int(out, key);

	free(out);
	return v;
}

/* A write handle on volume file @path through libsdfs, for changes the
 * CLI does not make (a few chunks). */
static struct sdfs_vol *vol_writer(const char *path)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_stat st;
	struct sdfs_vol *v;

	cr_assert_eq(sdfs_ns_resolve(s, path, 1, &st), 0, "%s", path);
	cr_assert_eq(sdfs_vol_open(s, st.ino, SDFS_VOL_WRITE, NULL, &v), 0, "%s", path);
	return v;
}

static void vol_write(struct sdfs_vol *v, const void *buf, size_t len, uint64_t off)
{
	cr_assert_geq(sdfs_vol_pwrite(v, buf, len, off), 0, "pwrite %zu at %" PRIu64, len,
		      off);
}

Test(vol_cli, create_and_info)
{
	char *out, state[16];
	int64_t vid;

	out = ok("$SDFS vol create /v1 64M --copies 2 --obj-size 1M");
	cr_assert_str_empty(out, "create printed: %s", out);
	free(out);

	out = ok("$SDFS vol info /v1 --json");
	vid = json_int(out, "vid");
	cr_assert_gt(vid, 0);
	cr_assert_eq(json_int(out, "size"), 64 * MIB);
	cr_assert_eq(json_int(out, "copies"), 2);
	cr_assert_eq(json_int(out, "obj_size"), MIB);
	cr_assert_eq(json_int(out, "snapshots"), 0);
	cr_assert_eq(json_int(out, "family"), vid, "a new volume is its own family: %s", out);
	cr_assert_eq(tjson_str(out, "state", state, sizeof(state), NULL), 0, "%s", out);
	cr_assert_str_eq(state, "live");
	free(out);

	out = ok("$SDFS vol info /v1");
	cr_assert(strstr(out, "size       64.0 MiB (67108864 bytes)\n") &&
		  strstr(out, "copies     2\n") && strstr(out, "obj_size   1.0 MiB\n") &&
		  strstr(out, "snapshots  0\n"), "vol info: %s", out);
	free(out);

	/* The cluster's defaults, a big thin one, and the file it is. */
	free(ok("$SDFS vol create /v2 10G"));
	cr_assert_eq(vol_field("/v2", "size"), 10ll << 30);
	cr_assert_eq(vol_field("/v2", "copies"), 2, "the cluster's copies");
	out = ok("$SDFS --json fs stat /v2");
	cr_assert_eq(json_int(out, "layout"), 2, "a volume file's layout: %s", out);
	cr_assert_eq(json_int(out, "mode") & 0777, 0644, "%s", out);
	cr_assert_eq(json_int(out, "uid"), (int64_t)getuid(), "%s", out);
	free(out);

	fails(1, "File exists", "$SDFS vol create /v1 1M");
	free(ok("echo hi > hi.txt && $SDFS fs put hi.txt /plain"));
	fails(1, "not a volume file", "$SDFS vol info /plain");
	fails(1, "No such file", "$SDFS vol info /missing");
}

Test(vol_cli, import_export_round_trip_files_and_pipes)
{
	size_t len = 20 * MIB + 12345;
	unsigned char *img = image(len, 0x1a, 4 * MIB, 0x2 | 0x8);  /* chunks 1, 3: holes */
	char path[4200];
	struct stat st;
	int64_t objects;

	write_local("img.raw", img, len);
	free(ok("$SDFS vol import /img < img.raw"));
	cr_assert_eq(vol_field("/img", "size"), (int64_t)len);
	objects = vol_field("/img", "objects");
	cr_assert_leq(objects, 4, "thin: the two zero chunks have no object (%" PRId64 ")",
		      objects);

	free(ok("$SDFS vol export /img > out.raw"));
	assert_local("out.raw", img, len);
	/* Sparse: the two zero chunks were seeked over. */
	local_path(path, sizeof(path), "out.raw");
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_leq((uint64_t)st.st_blocks * 512, len - 7 * MIB,
		      "export wrote %" PRIu64 " bytes of blocks", (uint64_t)st.st_blocks * 512);

	/* Through pipes: the size is not known up front, the volume grows. */
	free(ok("cat img.raw | $SDFS vol import /img2 --obj-size 1M"));
	cr_assert_eq(vol_field("/img2", "size"), (int64_t)len);
	cr_assert_eq(vol_field("/img2", "obj_size"), MIB);
	free(ok("$SDFS vol export /img2 | cat > out2.raw"));
	assert_local("out2.raw", img, len);

	/* --size larger than the image: the rest reads as zeros. */
	free(ok("head -c 5000000 img.raw | $SDFS vol import /img3 --size 8M"));
	cr_assert_eq(vol_field("/img3", "size"), 8 * MIB);
	free(ok("$SDFS vol export /img3 > out3.raw"));
	{
		unsigned char *want = calloc(1, 8 * MIB);

		memcpy(want, img, 5000000);
		assert_local("out3.raw", want, 8 * MIB);
		free(want);
	}

	/* Again over an existing volume: it becomes the new, shorter image. */
	free(ok("head -c 3000000 img.raw > short.raw && $SDFS vol import /img < short.raw"));
	cr_assert_eq(vol_field("/img", "size"), 3000000);
	free(ok("$SDFS vol export /img > out4.raw"));
	assert_local("out4.raw", img, 3000000);
	free(img);
}

/* The progress line: drawn on a terminal (script(1) gives the command
 * one) once a transfer runs longer than 100 ms, ended by a newline;
 * nothing at all when stderr is not a terminal. */
Test(vol_cli, progress_only_on_a_terminal)
{
	size_t len = 6 * MIB;
	unsigned char *img = image(len, 0x2b, 4 * MIB, 0);
	char *out, *err;
	int st;

	write_local("p.raw", img, len);
	/* a producer that pauses: the import runs past the first redraw */
	st = sh(&out, &err, "script -qec \"sh -c '(head -c 1000000 p.raw; sleep 0.5;"
		" tail -c +1000001 p.raw) | $SDFS vol import /p --size 6M'\" /dev/null");
	cr_assert_eq(st, 0, "import on a terminal: exit %d: %s%s", st, out, err);
	cr_assert(strstr(out, "import [") && strstr(out, "%") && strstr(out, "MiB"),
		  "no progress line on the terminal: '%s'", out);
	cr_assert(strstr(out, "100%"), "the last state is not drawn: '%s'", out);
	cr_assert(out[0] && out[strlen(out) - 1] == '\n', "the line is not ended: '%s'", out);
	free(out);
	free(err);
	free(ok("$SDFS vol export /p > p.out"));
	assert_local("p.out", img, len);

	st = sh(&out, &err, "(head -c 1000000 p.raw; sleep 0.5; tail -c +1000001 p.raw) |"
		" $SDFS vol import /p2 --size 6M");
	cr_assert_eq(st, 0);
	cr_assert_str_eq(err, "", "progress drawn without a terminal: '%s'", err);
	cr_assert_str_eq(out, "");
	free(out);
	free(err);
	free(img);
}

Test(vol_cli, export_of_a_snapshot)
{
	size_t len = 12 * MIB;
	unsigned char *a = image(len, 0x2a, MIB, 0x10), *b = malloc(len);
	struct sdfs_vol *v;

	cr_assert(b);
	write_local("a.raw", a, len);
	free(ok("$SDFS vol import /s --obj-size 1M < a.raw"));
	free(ok("$SDFS snap create /s one"));

	memcpy(b, a, len);
	memset(b + 3 * MIB + 100, 0xee, 5000);
	v = vol_writer("/s");
	vol_write(v, b + 3 * MIB + 100, 5000, 3 * MIB + 100);
	sdfs_vol_close(v);

	free(ok("$SDFS vol export /s@one > one.raw"));
	assert_local("one.raw", a, len);
	free(ok("$SDFS vol export --snap one /s > one2.raw"));
	assert_local("one2.raw", a, len);
	free(ok("$SDFS vol export /s > now.raw"));
	assert_local("now.raw", b, len);

	cr_assert_eq(vol_field("/s@one", "size"), (int64_t)len);
	cr_assert_eq(vol_field("/s", "snapshots"), 1);
	fails(1, "no snapshot 'two'", "$SDFS vol export /s@two > x.raw");
	fails(2, "two snapshots", "$SDFS vol export /s@one --snap other > x.raw");
	free(a);
	free(b);
}

/* Volume /src at snapshot A (12 MiB of 1 MiB chunks), then a few
 * chunks changed, one punched and the volume grown, at snapshot B.
 * Returns B's bytes; its length in *@blen. */
static unsigned char *two_snapshots(size_t *blen)
{
	size_t alen = 12 * MIB, len = 14 * MIB + 777;
	unsigned char *a = image(alen, 0x3a, MIB, 0x20), *b = calloc(1, len), *x;
	struct sdfs_vol *v;

	cr_assert(b);
	write_local("a.raw", a, alen);
	free(ok("$SDFS vol import /src --obj-size 1M < a.raw"));
	free(ok("$SDFS snap create /src A"));

	memcpy(b, a, alen);
	x = image(len, 0x3b, MIB, 0);
	memcpy(b, x, MIB);                              /* chunk 0 whole */
	memcpy(b + 2 * MIB + 10, x + 2 * MIB + 10, 300);/* a bit of chunk 2 */
	memset(b + 7 * MIB, 0, MIB);                    /* chunk 7 punched */
	memcpy(b + 13 * MIB, x + 13 * MIB, len - 13 * MIB);  /* past A's end */
	v = vol_writer("/src");
	vol_write(v, b, MIB, 0);
	vol_write(v, b + 2 * MIB + 10, 300, 2 * MIB + 10);
	cr_assert_eq(sdfs_vol_punch(v, 7 * MIB, MIB), 0);
	vol_write(v, b + 13 * MIB, len - 13 * MIB, 13 * MIB);
	cr_assert_eq(sdfs_vol_size(v), len);
	sdfs_vol_close(v);
	free(ok("$SDFS snap create /src B"));
	free(a);
	free(x);
	*blen = len;
	return b;
}

Test(vol_cli, incremental_diff_applies_to_a_copy_of_a)
{
	size_t blen, dlen;
	unsigned char *b = two_snapshots(&blen), *d;
	char *out;

	free(ok("$SDFS vol export /src@A > a_full.raw"));
	free(ok("$SDFS vol export /src --snap B > b_full.raw"));
	assert_local("b_full.raw", b, blen);
	free(ok("$SDFS vol export --from-snap A --snap B /src > ab.diff"));
	d = read_local("ab.diff", &dlen);
	cr_assert(!memcmp(d, "SDFSDIFF", 8), "no magic");
	/* Chunks 0 and 2 with data, 7 as a zero record, 12 and 13 past A's
	 * end: much less than the image. */
	cr_assert_lt(dlen, 5 * MIB, "the diff is %zu bytes", dlen);
	cr_assert_gt(dlen, 3 * MIB, "the diff is %zu bytes", dlen);
	free(d);

	/* A copy of A, the diff applied from a file: B. */
	free(ok("$SDFS vol import /dst --obj-size 1M < a_full.raw"));
	out = ok("$SDFS --json vol import --diff /dst < ab.diff");
	cr_assert_eq(json_int(out, "size"), (int64_t)blen, "%s", out);
	free(out);
	free(ok("$SDFS vol export /dst > dst.raw"));
	assert_local("dst.raw", b, blen);

	/* The same through pipes both ways. */
	free(ok("cat a_full.raw | $SDFS vol import /dst2 --obj-size 1M"));
	free(ok("$SDFS vol export --from-snap A --snap B /src | $SDFS vol import --diff /dst2"));
	free(ok("$SDFS vol export /dst2 > dst2.raw"));
	assert_local("dst2.raw", b, blen);

	/* Applied again onto B: still B (applying is idempotent). */
	free(ok("$SDFS vol import --diff /dst < ab.diff"));
	free(ok("$SDFS vol export /dst > dst.raw"));
	assert_local("dst.raw", b, blen);
	free(b);
}

Test(vol_cli, bad_diff_streams_are_refused)
{
	size_t blen, dlen, alen;
	unsigned char *b = two_snapshots(&blen), *d, *a;

	free(ok("$SDFS vol export /src@A > a_full.raw"));
	free(ok("$SDFS vol export --from-snap A --snap B /src > ab.diff"));
	a = read_local("a_full.raw", &alen);
	d = read_local("ab.diff", &dlen);
	free(ok("$SDFS vol import /dst --obj-size 1M < a_full.raw"));

	/* A flipped data byte (in chunk 0's data, after two headers). */
	d[256 + 40 + 1000] ^= 0x40;
	write_local("flip.diff", d, dlen);
	fails(1, "checksum", "$SDFS vol import --diff /dst < flip.diff");
	d[256 + 40 + 1000] ^= 0x40;
	/* A changed record header field (chunk number of the first record). */
	d[256 + 8] ^= 1;
	write_local("hdr.diff", d, dlen);
	fails(1, "bad diff stream", "$SDFS vol import --diff /dst < hdr.diff");
	d[256 + 8] ^= 1;
	/* Cut short: in a record's data, and before the trailer. */
	write_local("half.diff", d, dlen / 2);
	fails(1, "truncated", "$SDFS vol import --diff /dst < half.diff");
	write_local("notrailer.diff", d, dlen - 40);
	fails(1, "truncated", "$SDFS vol import --diff /dst < notrailer.diff");
	write_local("header.diff", d, 100);
	fails(1, "truncated", "$SDFS vol import --diff /dst < header.diff");
	/* Bytes after the trailer. */
	{
		unsigned char *more = malloc(dlen + 5);

		memcpy(more, d, dlen);
		memcpy(more + dlen, "extra", 5);
		write_local("more.diff", more, dlen + 5);
		free(more);
	}
	fails(1, "after its trailer", "$SDFS vol import --diff /dst < more.diff");
	/* Garbage, an empty stream, another version. */
	fails(1, "not an sdfs diff stream", "$SDFS vol import --diff /dst < a_full.raw");
	fails(1, "not an sdfs diff stream", "$SDFS vol import --diff /dst < /dev/null");
	d[8] = 9;
	write_local("v9.diff", d, dlen);
	fails(1, "version 9", "$SDFS vol import --diff /dst < v9.diff");
	d[8] = 1;

	/* From files nothing was written: /dst is still A. */
	free(ok("$SDFS vol export /dst > dst.raw"));
	assert_local("dst.raw", a, alen);

	/* From a pipe the bad record is refused too, non-zero, one line. */
	fails(1, "truncated", "head -c %zu ab.diff | $SDFS vol import --diff /dst", dlen / 2);
	/* The intact diff then finishes the job. */
	free(ok("$SDFS vol import --diff /dst < ab.diff"));
	free(ok("$SDFS vol export /dst > dst.raw"));
	assert_local("dst.raw", b, blen);

	/* A volume of another size or object size. */
	free(ok("$SDFS vol create /other 12M"));
	fails(1, "chunks of", "$SDFS vol import --diff /other < ab.diff");
	free(ok("$SDFS vol create /other2 3M --obj-size 1M"));
	fails(1, "bytes", "$SDFS vol import --diff /other2 < ab.diff");
	free(a);
	free(b);
	free(d);
}

Test(vol_cli, convert_a_plain_file)
{
	size_t len = 9 * MIB + 4321;
	unsigned char *data = image(len, 0x4c, 4 * MIB, 0x2);
	char *out, *err, name[64];
	int64_t mtime, ino;
	const char *p;

	write_local("plain.raw", data, len);
	free(ok("$SDFS fs mkdir /d && $SDFS fs put plain.raw /d/disk.img"));
	out = ok("$SDFS --json fs stat /d/disk.img");
	cr_assert_eq(json_int(out, "layout"), 1, "%s", out);
	mtime = json_int(out, "mtime_ns");
	ino = json_int(out, "ino");
	free(out);

	free(ok("$SDFS vol convert /d/disk.img"));
	out = ok("$SDFS --json fs stat /d/disk.img");
	cr_assert_eq(json_int(out, "layout"), 2, "%s", out);
	cr_assert_eq(json_int(out, "size"), (int64_t)len, "%s", out);
	cr_assert_eq(json_int(out, "mtime_ns"), mtime, "mtime kept: %s", out);
	cr_assert_neq(json_int(out, "ino"), ino, "a new file: %s", out);
	cr_assert_eq(json_int(out, "uid"), (int64_t)getuid(), "%s", out);
	free(out);
	free(ok("$SDFS vol export /d/disk.img > back.raw"));
	assert_local("back.raw", data, len);

	/* Nothing left behind in the directory. */
	out = ok("$SDFS --json fs ls /d");
	p = out;
	cr_assert_eq(tjson_str(p, "name", name, sizeof(name), &p), 0, "%s", out);
	cr_assert_str_eq(name, "disk.img");
	cr_assert_neq(tjson_str(p, "name", name, sizeof(name), NULL), 0, "left over: %s", out);
	free(out);

	fails(1, "volume file already", "$SDFS vol convert /d/disk.img");
	fails(1, "directory", "$SDFS vol convert /d");
	fails(1, "No such file", "$SDFS vol convert /d/none");
	free(ok("$SDFS fs ln -s /d/disk.img /link"));
	fails(1, "symbolic link", "$SDFS vol convert /link");

	/* An empty file converts too. */
	cr_assert_eq(sh(NULL, &err, "$SDFS fs put - /empty && $SDFS vol convert /empty"), 0,
		     "%s", err);
	free(err);
	cr_assert_eq(vol_field("/empty", "size"), 0);
	free(data);
}

Test(vol_cli, clone_and_tree)
{
	size_t len = 6 * MIB;
	unsigned char *a = image(len, 0x5c, MIB, 0x4);
	char *out, what[64];
	int64_t base_vid, vid;

	write_local("a.raw", a, len);
	free(ok("$SDFS vol import /base --obj-size 1M < a.raw"));
	base_vid = vol_field("/base", "vid");
	free(ok("$SDFS snap create /base s1"));
	free(ok("$SDFS vol clone /base@s1 /cl"));
	free(ok("$SDFS vol export /cl > cl.raw"));
	assert_local("cl.raw", a, len);
	cr_assert_eq(vol_field("/cl", "family"), vol_field("/base", "family"));

	out = ok("$SDFS vol tree /base");
	cr_log_info("vol tree:\n%s", out);
	cr_assert(!strncmp(out, "TREE", 4), "%s", out);
	cr_assert(strstr(out, "@s1"), "%s", out);
	cr_assert(strstr(out, "/base "), "%s", out);
	cr_assert(strstr(out, "clone (ino "), "%s", out);
	cr_assert(strstr(out, "-- "), "children are drawn: %s", out);
	cr_assert_eq(tcount_lines(out), 4, "header, s1, /base, the clone: %s", out);
	free(out);

	out = ok("$SDFS vol tree /base --json");
	cr_assert(tjson_valid(out), "%s", out);
	cr_assert_eq(tjson_count(out, "\"vid\""), 3, "%s", out);
	/* The snapshot is the root: the vid /base had before it. */
	cr_assert_eq(tjson_int(out, "vid", &vid, NULL), 0);
	cr_assert_eq(vid, base_vid, "%s", out);
	cr_assert_eq(tjson_str(out, "state", what, sizeof(what), NULL), 0);
	cr_assert_str_eq(what, "snapshot");
	cr_assert_eq(tjson_str(out, "name", what, sizeof(what), NULL), 0);
	cr_assert_str_eq(what, "s1");
	free(out);

	fails(1, "name a snapshot", "$SDFS vol clone /base /cl2");
	fails(1, "File exists", "$SDFS vol clone /base@s1 /cl");
	fails(1, "no snapshot 'nope'", "$SDFS vol clone /base@nope /cl3");
	free(a);
}

Test(vol_cli, snap_list_rollback_delete)
{
	size_t len = 4 * MIB;
	unsigned char *x = image(len, 0x6a, MIB, 0), *y = image(len, 0x6b, MIB, 0x1);
	char *out, name[80];
	int64_t v1, v2, t;
	const char *p;

	write_local("x.raw", x, len);
	write_local("y.raw", y, len);
	free(ok("$SDFS vol import /r --obj-size 1M < x.raw"));
	free(ok("$SDFS snap create /r s1"));
	free(ok("$SDFS vol import /r < y.raw"));
	out = ok("$SDFS --json snap create /r s2");
	cr_assert_eq(tjson_str(out, "name", name, sizeof(name), NULL), 0, "%s", out);
	cr_assert_str_eq(name, "s2");
	free(out);

	out = ok("$SDFS snap list /r --json");
	cr_assert(tjson_valid(out), "%s", out);
	cr_assert_eq(out[0], '[', "%s", out);
	p = out;
	cr_assert_eq(tjson_str(p, "name", name, sizeof(name), &p), 0, "%s", out);
	cr_assert_str_eq(name, "s1", "oldest first: %s", out);
	cr_assert_eq(tjson_int(p, "vid", &v1, &p), 0);
	cr_assert_eq(tjson_int(p, "size", &t, &p), 0);
	cr_assert_eq(t, (int64_t)len);
	cr_assert_eq(tjson_int(p, "objects", &t, &p), 0);
	cr_assert_eq(tjson_int(p, "ctime_ns", &t, &p), 0);
	cr_assert_gt(t, 0);
	cr_assert_eq(tjson_str(p, "name", name, sizeof(name), &p), 0, "%s", out);
	cr_assert_str_eq(name, "s2");
	cr_assert_eq(tjson_int(p, "vid", &v2, &p), 0);
	cr_assert_neq(v1, v2);
	cr_assert_neq(tjson_str(p, "name", name, sizeof(name), NULL), 0, "3 entries: %s", out);
	free(out);

	out = ok("$SDFS snap list /r");
	cr_assert(!strncmp(out, "NAME", 4) && strstr(out, "\ns1 ") && strstr(out, "\ns2 "),
		  "%s", out);
	cr_assert_eq(tcount_lines(out), 3, "%s", out);
	free(out);

	fails(1, "exists already", "$SDFS snap create /r s1");
	fails(2, "bad snapshot name", "$SDFS snap create /r a/b");
	fails(2, "bad snapshot name", "$SDFS snap create /r ..");

	/* Back to s1: the volume is x again; s1 stays. */
	free(ok("$SDFS snap rollback /r s1"));
	free(ok("$SDFS vol export /r > r.raw"));
	assert_local("r.raw", x, len);
	cr_assert_eq(vol_field("/r", "snapshots"), 2);
	/* While a writer holds it, rollback is refused. */
	{
		struct sdfs_vol *w = vol_writer("/r");

		fails(1, "open for writing elsewhere", "$SDFS snap rollback /r s2");
		fails(1, "open for writing elsewhere", "$SDFS vol resize /r 8M");
		sdfs_vol_close(w);
	}
	free(ok("$SDFS snap rollback /r@s2"));
	free(ok("$SDFS vol export /r > r.raw"));
	assert_local("r.raw", y, len);

	free(ok("$SDFS snap delete /r s2"));
	fails(1, "no snapshot 's2'", "$SDFS snap delete /r s2");
	out = ok("$SDFS --json snap list /r");
	cr_assert_eq(tjson_count(out, "\"name\""), 1, "%s", out);
	free(out);
	out = ok("$SDFS vol tree /r");
	cr_log_info("vol tree after rollbacks and a delete:\n%s", out);
	free(out);
	free(x);
	free(y);
}

Test(vol_cli, resize)
{
	unsigned char *x = image(3 * MIB, 0x7a, MIB, 0), *want;
	char *out;

	write_local("x.raw", x, 3 * MIB);
	free(ok("$SDFS vol import /g --obj-size 1M < x.raw"));
	free(ok("$SDFS vol resize /g 16M"));
	cr_assert_eq(vol_field("/g", "size"), 16 * MIB);
	free(ok("$SDFS vol export /g > g.raw"));
	want = calloc(1, 16 * MIB);
	memcpy(want, x, 3 * MIB);
	assert_local("g.raw", want, 16 * MIB);

	fails(1, "--shrink", "$SDFS vol resize /g 1M");
	cr_assert_eq(vol_field("/g", "size"), 16 * MIB);
	out = ok("$SDFS --json vol resize /g 2M --shrink");
	cr_assert_eq(json_int(out, "old_size"), 16 * MIB, "%s", out);
	free(out);
	free(ok("$SDFS vol export /g > g.raw"));
	assert_local("g.raw", x, 2 * MIB);
	fails(1, "more than a volume", "$SDFS vol resize /g 100T");
	free(want);
	free(x);
}

Test(vol_cli, bad_arguments_fail_with_one_line)
{
	free(ok("$SDFS vol create /v 1M"));
	fails(2, "usage", "$SDFS vol");
	fails(2, "usage", "$SDFS snap");
	fails(2, "usage", "$SDFS vol create /x");
	fails(2, "usage", "$SDFS vol create /x 1M extra");
	fails(2, "usage", "$SDFS vol info");
	fails(2, "usage", "$SDFS vol export /v --frob");
	fails(2, "usage", "$SDFS snap create /v");
	fails(2, "vol frob", "$SDFS vol frob");
	fails(2, "snap frob", "$SDFS snap frob");
	fails(2, "10Q", "$SDFS vol create /x 10Q");
	fails(2, "--copies", "$SDFS vol create /x 1M --copies 0");
	fails(2, "--obj-size", "$SDFS vol create /x 1M --obj-size 1000");
	fails(2, "--obj-size", "$SDFS vol create /x 1M --obj-size 3M");
	fails(1, "cluster's object size", "$SDFS vol create /x 1M --obj-size 64M");
	fails(2, "--copies", "$SDFS vol create /x 1M --copies 16");
	fails(2, "start with /", "$SDFS vol info relative");
	fails(1, "No such file", "$SDFS vol export /nope > x.raw");
	fails(2, "needs --snap", "$SDFS vol export --from-snap a /v > x.raw");
	fails(1, "exists already", "$SDFS vol import /v --copies 2 < /dev/null");
	fails(2, "not an sdfs path", "$SDFS vol import v < /dev/null");
	fails(2, "bad snapshot name", "$SDFS snap create /v 'with space'");
	fails(1, "No such file", "$SDFS snap list /nope");
	/* each bad command line names the --help that tells more */
	fails(2, "sdfs vol --help", "$SDFS vol frob");
	fails(2, "sdfs vol create --help", "$SDFS vol create /x");
	fails(2, "sdfs vol create --help", "$SDFS vol create /x 1M --copies 0");
	fails(2, "sdfs snap create --help", "$SDFS snap create /v 'with space'");
	fails(2, "sdfs vol import --help", "$SDFS vol import --frob /v < /dev/null");
}

/* A volume has a size: 0 is refused for vol create and vol resize, and
 * an empty image imports nothing (nor makes a volume). (vol convert of
 * an empty file still makes a volume of size 0: convert_a_plain_file.) */
Test(vol_cli, a_volume_of_size_0_is_refused)
{
	unsigned char *x = image(MIB, 0x50, MIB, 0);
	char *out;

	fails(2, "size must be > 0", "$SDFS vol create /z 0");
	fails(2, "size must be > 0", "$SDFS vol create /z 0M --copies 2");
	fails(1, "No such file", "$SDFS vol info /z");

	/* empty stdin: a regular file, /dev/null, an empty pipe */
	free(ok(": > empty.raw"));
	fails(1, "is empty", "$SDFS vol import /z < empty.raw");
	fails(1, "is empty", "$SDFS vol import /z < /dev/null");
	fails(1, "is empty", "true | $SDFS vol import /z");
	fails(1, "is empty", "true | $SDFS vol import /z --size 1M");
	fails(1, "No such file", "$SDFS vol info /z");
	out = ok("$SDFS fs ls /");
	cr_assert(!strstr(out, "z\n"), "a failed import left a file: %s", out);
	free(out);

	/* over a volume that exists: it keeps its size and data */
	write_local("x.raw", x, MIB);
	free(ok("$SDFS vol import /x < x.raw"));
	fails(1, "is empty", "true | $SDFS vol import /x");
	fails(1, "is empty", "$SDFS vol import /x < empty.raw");
	cr_assert_eq(vol_field("/x", "size"), MIB);
	free(ok("$SDFS vol export /x > back.raw"));
	assert_local("back.raw", x, MIB);

	/* resize to 0, even with --shrink */
	fails(2, "size must be > 0", "$SDFS vol resize /x 0 --shrink");
	cr_assert_eq(vol_field("/x", "size"), MIB);
	free(x);
}

Test(vol_cli, cluster_status_shows_reclaim)
{
	char *out;

	out = ok("$SDFS cluster status");
	cr_assert(strstr(out, "\nreclaim   "), "no reclaim line: %s", out);
	cr_assert(strstr(out, "to free, "), "%s", out);
	free(out);
	out = ok("$SDFS --json cluster status");
	cr_assert(tjson_valid(out), "%s", out);
	json_int(out, "objects_pending");
	json_int(out, "objects_freed");
	free(out);
	out = ok("$SDFS help");
	cr_assert(strstr(out, "vol import") && strstr(out, "snap rollback"), "%s", out);
	free(out);

	/* a volume of 3 written chunks removed: the status counts its 3
	 * objects freed (the index is no data object), then none pending */
	size_t len = 12 * MIB;
	unsigned char *img = image(len, 0x3c, 4 * MIB, 0);
	int64_t freed0, freed = 0, pending = -1;

	write_local("gone.raw", img, len);
	free(img);
	free(ok("$SDFS vol import /gone < gone.raw"));
	cr_assert_eq(vol_field("/gone", "objects"), 3);
	out = ok("$SDFS --json cluster status");
	freed0 = json_int(out, "objects_freed");
	free(out);
	free(ok("$SDFS fs rm /gone"));
	for (int64_t end = tnow_ms() + 60000; tnow_ms() < end; tsleep_ms(100)) {
		out = ok("$SDFS --json cluster status");
		freed = json_int(out, "objects_freed");
		pending = json_int(out, "objects_pending");
		free(out);
		if (freed >= freed0 + 3 && pending == 0)
			break;
	}
	cr_assert_geq(freed, freed0 + 3, "status: %" PRId64 " objects freed since the "
		      "removal, want 3 (pending %" PRId64 ")", freed - freed0, pending);
	cr_assert_eq(pending, 0);
	out = ok("$SDFS cluster status");
	cr_assert(strstr(out, "\nreclaim   0 objects ("), "nothing left to free: %s", out);
	free(out);
}
