/*
 * cmd_obj.c - sdfs obj put|get|rm|stat|locate: objects by id, for
 * operators and scripts. With --ec K+M, put, get, rm, stat and locate work
 * on the erasure-coded object of that id (libclient/ec_io.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

/* --ec K+M of this command; k == 0: none (a replicated object). */
static unsigned ec_k, ec_m;

/* Read all of @fd up to @max bytes into a malloc'd buffer. */
static int slurp(int fd, size_t max, uint8_t **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap > max) {
				free(buf);
				return -EFBIG;
			}
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			int e = -errno;

			free(buf);
			return e;
		}
		if (r == 0)
			break;
		n += r;
	}
	if (n > max) {
		free(buf);
		return -EFBIG;
	}
	*out = buf;
	*len = n;
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= w;
	}
	return 0;
}

static int obj_put(struct cli *cli, struct sdfs *s, uint64_t oid)
{
	uint32_t max = sdfs_obj_size(s);
	uint8_t *buf = NULL;
	size_t len = 0;
	int fd, ret;

	if (cli->argc != 3)
		return cli_usage("sdfs obj put [--ec K+M] OID FILE");
	if (!max)
		return cli_fail("cluster is not formatted");
	const char *file = cli->argv[2];
	fd = strcmp(file, "-") ? open(file, O_RDONLY | O_CLOEXEC) : 0;
	if (fd < 0)
		return cli_fail("%s: %s", file, strerror(errno));
	ret = slurp(fd, max, &buf, &len);
	if (fd)
		close(fd);
	if (ret == -EFBIG)
		return cli_fail("%s: larger than the object size (%" PRIu32 " bytes)",
				file, max);
	if (ret)
		return cli_fail("%s: %s", file, strerror(-ret));
	ret = ec_k ? sdfs_ec_put(s, oid, ec_k, ec_m, buf, len) : sdfs_obj_put(s, oid, buf, len);
	free(buf);
	if (ret == -ENODEV)
		return cli_fail("put 0x%016" PRIx64 ": %u+%u needs %u block daemons with "
				"weight, at most %u in one zone; the cluster has too few", oid,
				ec_k, ec_m, ec_k + ec_m, ec_m);
	if (ret)
		return cli_fail("put 0x%016" PRIx64 ": %s", oid, strerror(-ret));
	if (cli->json && ec_k)
		printf("{\"oid\": \"0x%016" PRIx64 "\", \"size\": %zu, \"ec\": \"%u+%u\"}\n",
		       oid, len, ec_k, ec_m);
	else if (cli->json)
		printf("{\"oid\": \"0x%016" PRIx64 "\", \"size\": %zu}\n", oid, len);
	return 0;
}

static int obj_get(struct cli *cli, struct sdfs *s, uint64_t oid)
{
	uint32_t max = sdfs_obj_size(s);
	uint8_t *buf;
	ssize_t got;
	int fd = 1, ret;

	if (cli->argc != 2 && cli->argc != 3)
		return cli_usage("sdfs obj get [--ec K+M] OID [FILE]");
	if (cli->argc == 2 || !strcmp(cli->argv[2], "-"))
		cli_stdout_is_data();
	if (!max)
		return cli_fail("cluster is not formatted");
	buf = malloc(max);
	if (!buf)
		return cli_fail("out of memory");
	got = ec_k ? sdfs_ec_read(s, oid, ec_k, ec_m, buf, max, 0)
		   : sdfs_obj_read(s, oid, buf, max, 0);
	if (got < 0) {
		free(buf);
		return cli_fail("get 0x%016" PRIx64 ": %s", oid, got == -ENOENT ?
				"no such object" : strerror((int)-got));
	}
	if (cli->argc == 3 && strcmp(cli->argv[2], "-")) {
		fd = open(cli->argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			free(buf);
			return cli_fail("%s: %s", cli->argv[2], strerror(errno));
		}
	}
	ret = write_all(fd, buf, (size_t)got);
	if (fd != 1 && close(fd) < 0 && !ret)
		ret = -errno;
	free(buf);
	if (ret)
		return cli_fail("write output: %s", strerror(-ret));
	return 0;
}

static int obj_rm(struct cli *cli, struct sdfs *s, uint64_t oid)
{
	int ret;

	if (cli->argc != 2)
		return cli_usage("sdfs obj rm [--ec K+M] OID");
	ret = ec_k ? sdfs_ec_remove(s, oid, ec_k, ec_m) : sdfs_obj_remove(s, oid);
	if (ret == -ENOENT)
		return cli_fail("rm 0x%016" PRIx64 ": no such object", oid);
	if (ret)
		return cli_fail("rm 0x%016" PRIx64 ": %s", oid, strerror(-ret));
	return 0;
}

static int obj_stat_ec(struct cli *cli, struct sdfs *s, uint64_t oid)
{
	struct sdfs_ec_rstat rs;
	uint32_t max = sdfs_obj_size(s);
	uint8_t *buf = malloc(max ? max : 1);
	ssize_t got;

	if (!buf)
		return cli_fail("out of memory");
	got = sdfs_ec_read_ex(s, oid, ec_k, ec_m, buf, max, 0, &rs);
	free(buf);
	if (got < 0)
		return cli_fail("stat 0x%016" PRIx64 ": %s", oid, got == -ENOENT ?
				"no such object" : strerror((int)-got));
	if (cli->json)
		printf("{\"oid\": \"0x%016" PRIx64 "\", \"ec\": \"%u+%u\", \"size\": %"
		       PRIu64 ", \"version\": %" PRIu64 ", \"epoch\": %" PRIu64
		       ", \"strips_read\": %u, \"rebuilt\": %u}\n", oid, ec_k, ec_m, rs.size,
		       rs.version, rs.version >> 32, rs.strips_read, rs.rebuilt);
	else
		printf("oid          0x%016" PRIx64 "\nec           %u+%u\nsize         %"
		       PRIu64 "\nversion      0x%016" PRIx64 "\nepoch        %" PRIu64
		       "\nstrips read  %u\nrebuilt      %u\n", oid, ec_k, ec_m, rs.size,
		       rs.version, rs.version >> 32, rs.strips_read, rs.rebuilt);
	return 0;
}

static int obj_locate_ec(struct cli *cli, struct sdfs *s, uint64_t oid)
{
	uint32_t ids[32];
	int n = sdfs_ec_locate(s, oid, ec_k, ec_m, ids, 32);

	if (n == -ENODEV)
		return cli_fail("locate 0x%016" PRIx64 ": %u+%u needs %u block daemons, at "
				"most %u in one zone", oid, ec_k, ec_m, ec_k + ec_m, ec_m);
	if (n < 0)
		return cli_fail("locate 0x%016" PRIx64 ": %s", oid, strerror(-n));
	if (cli->json) {
		printf("{\"oid\": \"0x%016" PRIx64 "\", \"ec\": \"%u+%u\", \"strips\": [",
		       oid, ec_k, ec_m);
		for (int i = 0; i < n; i++)
			printf("%s{\"strip\": %d, \"kind\": \"%s\", \"node\": %" PRIu32 "}",
			       i ? ", " : "", i, i < (int)ec_k ? "data" : "parity", ids[i]);
		printf("]}\n");
		return 0;
	}
	printf("%-6s %-7s %s\n", "STRIP", "KIND", "NODE");
	for (int i = 0; i < n; i++)
		printf("%-6d %-7s %" PRIu32 "\n", i, i < (int)ec_k ? "data" : "parity", ids[i]);
	return 0;
}

static int obj_stat(struct cli *cli, struct sdfs *s, uint64_t oid)
{
	struct sdfs_obj_info info;
	int ret;

	if (cli->argc != 2)
		return cli_usage("sdfs obj stat [--ec K+M] OID");
	if (ec_k)
		return obj_stat_ec(cli, s, oid);
	ret = sdfs_obj_stat(s, oid, &info);
	if (ret)
		return cli_fail("stat 0x%016" PRIx64 ": %s", oid, ret == -ENOENT ?
				"no such object" : strerror(-ret));
	if (cli->json)
		printf("{\"oid\": \"0x%016" PRIx64 "\", \"size\": %" PRIu64
		       ", \"epoch\": %" PRIu64 "}\n", oid, info.size, info.epoch);
	else
		printf("oid    0x%016" PRIx64 "\nsize   %" PRIu64 "\nepoch  %" PRIu64 "\n",
		       oid, info.size, info.epoch);
	return 0;
}

static const char *replica_state(const struct sdfs_replica *r)
{
	switch (r->result) {
	case 0: return "ok";
	case -ENOENT: return "missing";
	case -EBADMSG: return "corrupt";
	default: return "unreachable";
	}
}

static int obj_locate(struct cli *cli, struct sdfs *s, uint64_t oid)
{
	struct sdfs_replica r[16];
	size_t n;
	int ret;

	if (cli->argc != 2)
		return cli_usage("sdfs obj locate [--ec K+M] OID");
	if (ec_k)
		return obj_locate_ec(cli, s, oid);
	ret = sdfs_obj_locate(s, oid, r, 16, &n);
	if (ret)
		return cli_fail("locate 0x%016" PRIx64 ": %s", oid, strerror(-ret));
	if (cli->json) {
		printf("{\"oid\": \"0x%016" PRIx64 "\", \"replicas\": [", oid);
		for (size_t i = 0; i < n; i++) {
			printf("%s{\"node\": %" PRIu32 ", \"addr\": \"%s\", \"node_state\": "
			       "\"%s\", \"replica\": \"%s\", \"size\": %" PRIu64
			       ", \"epoch\": %" PRIu64 ", \"path\": ", i ? ", " : "",
			       r[i].node_id, r[i].addr, r[i].state, replica_state(&r[i]),
			       r[i].size, r[i].epoch);
			cli_json_str(stdout, r[i].path);
			printf("}");
		}
		printf("]}\n");
		return 0;
	}
	printf("%-6s %-22s %-5s %-11s %-9s %-6s %s\n", "NODE", "ADDRESS", "STATE",
	       "REPLICA", "SIZE", "EPOCH", "PATH");
	for (size_t i = 0; i < n; i++)
		printf("%-6" PRIu32 " %-22s %-5s %-11s %-9" PRIu64 " %-6" PRIu64 " %s\n",
		       r[i].node_id, r[i].addr, r[i].state, replica_state(&r[i]),
		       r[i].size, r[i].epoch, r[i].result ? "-" : r[i].path);
	return 0;
}

int cmd_obj(struct cli *cli)
{
	static const struct {
		const char *name;
		int (*fn)(struct cli *, struct sdfs *, uint64_t);
	} subs[] = {
		{ "put", obj_put }, { "get", obj_get }, { "rm", obj_rm },
		{ "stat", obj_stat }, { "locate", obj_locate },
	};
	uint64_t oid;

	/* --ec K+M anywhere after the subcommand: taken out of argv */
	for (int i = 1; i < cli->argc; i++) {
		unsigned k, m;
		char extra;

		if (strcmp(cli->argv[i], "--ec"))
			continue;
		if (i + 1 >= cli->argc ||
		    sscanf(cli->argv[i + 1], "%u+%u%c", &k, &m, &extra) != 2 ||
		    k < 1 || k > 16 || m < 1 || m > 4)
			return cli_bad("--ec takes K+M with 1 <= K <= 16, 1 <= M <= 4 "
				       "(e.g. 4+2)");
		ec_k = k;
		ec_m = m;
		memmove(&cli->argv[i], &cli->argv[i + 2],
			(size_t)(cli->argc - i - 2) * sizeof(cli->argv[0]));
		cli->argc -= 2;
		break;
	}
	if (cli->argc < 2)
		return cli_usage("sdfs obj put|get|rm|stat|locate [--ec K+M] OID ...");
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (strcmp(cli->argv[0], subs[i].name))
			continue;
		if (cli_parse_oid(cli->argv[1], &oid))
			return cli_bad("bad object id '%s' (decimal, 0x-hex or 16 hex digits)",
				       cli->argv[1]);
		struct sdfs *s = cli_open(cli);
		if (!s)
			return 1;
		int ret = subs[i].fn(cli, s, oid);
		sdfs_close(s);
		return ret;
	}
	return cli_unknown("obj", cli->argv[0]);
}
