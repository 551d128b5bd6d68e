/*
 * ecput.c - sdfs-ecput: whole-object put and get throughput of one
 * client thread, replicated (sdfs_obj_put / sdfs_obj_read, the
 * cluster's copies) against erasure-coded (sdfs_ec_put / sdfs_ec_read,
 * K+M), for tools/bench/ec, which also measures the bytes each stores
 * on disk. Not a test: speed is measured here, never asserted.
 *
 *   sdfs-ecput [--conf F] --mode rep|ec [--ec K+M] --objects N
 *              [--size BYTES] [--oid-base OID] put|get
 *
 * Prints one line: "<mode> <op> <objects> <bytes> <seconds> <MB/s>".
 * Every get checks the bytes it read against what put wrote (the same
 * generator, seeded by the oid).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libclient/sdfs.h"
#include "tools/cli.h"

static void fill(uint8_t *b, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *conf = NULL, *mode = "rep", *op = NULL, *v;
	uint64_t objects = 0, size = 0, base = 0xbe7ec0ec00000000ull;
	unsigned k = 4, m = 2;
	struct sdfs *s;
	char err[512];
	uint8_t *buf, *want;

	for (int i = 1; i < argc; i++) {
		if ((v = cli_opt(argc, argv, &i, "--conf")))
			conf = v;
		else if ((v = cli_opt(argc, argv, &i, "--mode")))
			mode = v;
		else if ((v = cli_opt(argc, argv, &i, "--ec"))) {
			if (sscanf(v, "%u+%u", &k, &m) != 2)
				return fprintf(stderr, "sdfs-ecput: bad --ec '%s'\n", v), 2;
		} else if ((v = cli_opt(argc, argv, &i, "--objects"))) {
			if (cli_parse_u64(v, &objects) || !objects)
				return fprintf(stderr, "sdfs-ecput: bad --objects '%s'\n", v), 2;
		} else if ((v = cli_opt(argc, argv, &i, "--size"))) {
			if (cli_parse_size(v, &size))
				return fprintf(stderr, "sdfs-ecput: bad --size '%s'\n", v), 2;
		} else if ((v = cli_opt(argc, argv, &i, "--oid-base"))) {
			if (cli_parse_oid(v, &base))
				return fprintf(stderr, "sdfs-ecput: bad --oid-base '%s'\n", v), 2;
		} else if (!op && (!strcmp(argv[i], "put") || !strcmp(argv[i], "get")))
			op = argv[i];
		else
			return fprintf(stderr, "usage: sdfs-ecput [--conf F] --mode rep|ec "
				       "[--ec K+M] --objects N [--size B] [--oid-base OID] "
				       "put|get\n"), 2;
	}
	if (!op || !objects || (strcmp(mode, "rep") && strcmp(mode, "ec")))
		return fprintf(stderr, "sdfs-ecput: need --mode rep|ec, --objects and "
			       "put or get\n"), 2;
	if (sdfs_open(conf, &s, err, sizeof(err)) < 0)
		return fprintf(stderr, "sdfs-ecput: %s\n", err), 1;
	if (!size)
		size = sdfs_obj_size(s);
	buf = malloc(size);
	want = malloc(size);
	if (!buf || !want)
		return fprintf(stderr, "sdfs-ecput: out of memory\n"), 1;
	int ec = !strcmp(mode, "ec");
	double t0 = now_s(), busy = 0;

	for (uint64_t i = 0; i < objects; i++) {
		uint64_t oid = base + i;
		double t;
		int ret;

		fill(want, size, oid);
		t = now_s();
		if (!strcmp(op, "put")) {
			ret = ec ? sdfs_ec_put(s, oid, k, m, want, size)
				 : sdfs_obj_put(s, oid, want, size);
		} else {
			ssize_t got = ec ? sdfs_ec_read(s, oid, k, m, buf, size, 0)
					 : sdfs_obj_read(s, oid, buf, size, 0);

			ret = got < 0 ? (int)got : (size_t)got != size ||
			      memcmp(buf, want, size) ? -EILSEQ : 0;
		}
		busy += now_s() - t;
		if (ret) {
			fprintf(stderr, "sdfs-ecput: %s %s of %016" PRIx64 ": %s\n", mode, op,
				oid, strerror(-ret));
			return 1;
		}
	}
	(void)t0;
	printf("%s %s %" PRIu64 " %" PRIu64 " %.3f %.1f\n", ec ? "ec" : "rep", op, objects,
	       objects * size, busy, busy > 0 ? objects * size / busy / 1e6 : 0.0);
	free(buf);
	free(want);
	sdfs_close(s);
	return 0;
}
