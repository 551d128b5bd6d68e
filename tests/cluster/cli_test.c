/*
 * cli_test.c - the sdfs command against a running cluster: JSON that
 * parses, object round trips through files, and errors as one line on
 * stderr ("sdfs: ...") with exit 1 (usage errors: exit 2).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/cluster/tjson.h"

#define NBLOCKD 3

static struct tcluster *tc;

static void up3(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NBLOCKD, .copies = 3 });
}

static void up0(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 0 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(cli, .init = up3, .fini = down, .timeout = 120);
TestSuite(cli_nodes0, .init = up0, .fini = down, .timeout = 120);
TestSuite(cli_noconf, .timeout = 60);

/* Run the CLI on the cluster; it must succeed. Returns its stdout. */
static char *ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *ok(const char *fmt, ...)
{
	char cmd[4096], *out, *err;
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = tcluster_sdfs(tc, &out, &err, "%s", cmd);
	cr_assert_eq(st, 0, "sdfs %s: exit %d: %s", cmd, st, err);
	free(err);
	return out;
}

/* Exit @want (-1: any failure), nothing on stdout, exactly one line on
 * stderr, containing @mention if not NULL. */
static void assert_fails_one_line(int st, int want, char *out, char *err,
				  const char *mention, const char *what)
{
	if (want < 0)
		cr_assert_neq(st, 0, "%s: succeeded", what);
	else
		cr_assert_eq(st, want, "%s: exit %d, not %d; stderr: %s", what, st, want, err);
	cr_assert_str_empty(out, "%s: printed on stdout: %s", what, out);
	cr_assert_eq(tcount_lines(err), 1, "%s: stderr is not one line: %s", what, err);
	cr_assert(err[strlen(err) - 1] == '\n', "%s: unterminated: %s", what, err);
	if (st == 1)
		cr_assert(!strncmp(err, "sdfs: ", 6), "%s: no 'sdfs: ' prefix: %s", what, err);
	if (mention)
		cr_assert(strstr(err, mention), "%s: the error should mention '%s': %s", what,
			  mention, err);
	cr_log_info("%s: exit %d: %s", what, st, err);
	free(out);
	free(err);
}

static void fails(int want, const char *mention, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fails(int want, const char *mention, const char *fmt, ...)
{
	char cmd[4096], *out, *err;
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = tcluster_sdfs(tc, &out, &err, "%s", cmd);
	assert_fails_one_line(st, want, out, err, mention, cmd);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void *read_file(const char *path, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *buf;

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert(buf);
	cr_assert_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static void cluster_uuid(char *uuid, size_t len)
{
	char *out = ok("--json cluster status");

	cr_assert(tjson_valid(out), "cluster status --json: %s", out);
	cr_assert_eq(tjson_str(out, "uuid", uuid, len, NULL), 0, "no uuid: %s", out);
	free(out);
}

Test(cli, format_refuses_a_formatted_cluster)
{
	char before[64], after[64];

	cluster_uuid(before, sizeof(before));
	fails(1, "--force", "cluster format --copies 3");
	cluster_uuid(after, sizeof(after));
	cr_assert_str_eq(before, after, "the refused format changed the cluster");
}

Test(cli_nodes0, format_force_reformats)
{
	char before[64], after[64], *out;
	int64_t copies;

	cluster_uuid(before, sizeof(before));
	fails(1, "--force", "cluster format --copies 2");
	free(ok("cluster format --copies 2 --force"));
	cluster_uuid(after, sizeof(after));
	cr_assert_str_neq(before, after, "--force kept the old uuid");
	out = ok("cluster status --json");
	cr_assert_eq(tjson_int(out, "copies", &copies, NULL), 0, "%s", out);
	cr_assert_eq(copies, 2);
	free(out);
}

Test(cli, status_and_node_list_json_parse)
{
	char *out, health[32], state[16];
	int64_t v, epoch, nodes_up, nodes, copies;
	const char *p;
	int reachable;

	out = ok("cluster status --json");
	cr_assert(tjson_valid(out), "cluster status --json is not JSON: %s", out);
	cr_assert_eq(tjson_int(out, "epoch", &epoch, NULL), 0, "%s", out);
	cr_assert_eq(tjson_int(out, "nodes_up", &nodes_up, NULL), 0, "%s", out);
	cr_assert_eq(tjson_int(out, "nodes", &nodes, NULL), 0, "%s", out);
	cr_assert_eq(tjson_int(out, "copies", &copies, NULL), 0, "%s", out);
	cr_assert_eq(tjson_str(out, "health", health, sizeof(health), NULL), 0, "%s", out);
	cr_assert_geq(epoch, 2, "epoch %" PRId64, epoch);
	cr_assert_eq(nodes_up, NBLOCKD);
	cr_assert_eq(nodes, NBLOCKD);
	cr_assert_eq(copies, 3);
	cr_assert_str_eq(health, "ok");
	free(out);

	out = ok("node list --json");
	cr_assert(tjson_valid(out), "node list --json is not JSON: %s", out);
	cr_assert_eq(out[0], '[', "node list --json is not an array: %s", out);
	p = out;
	for (int i = 0; i < NBLOCKD; i++) {
		cr_assert_eq(tjson_int(p, "id", &v, NULL), 0, "node %d missing: %s", i, out);
		cr_assert_gt(v, 0);
		cr_assert_eq(tjson_str(p, "state", state, sizeof(state), NULL), 0);
		cr_assert_str_eq(state, "up");
		cr_assert_eq(tjson_bool(p, "reachable", &reachable, NULL), 0);
		cr_assert(reachable, "node %" PRId64 " unreachable", v);
		cr_assert_eq(tjson_int(p, "epoch", &v, &p), 0);
		cr_assert_eq(v, epoch, "a node knows epoch %" PRId64 ", the map is at %" PRId64,
			     v, epoch);
	}
	cr_assert_neq(tjson_int(p, "id", &v, NULL), 0, "more than %d nodes: %s", NBLOCKD, out);
	free(out);
}

Test(cli, obj_put_get_stat_locate_rm_round_trip)
{
	char in_path[4200], out_path[4200], *out, state[16], path[1024];
	size_t len = 300001, got_len;
	unsigned char *data = malloc(len), *got;
	int64_t v;
	const char *p;

	cr_assert(data);
	tfill_random(data, len, 0xc11);
	snprintf(in_path, sizeof(in_path), "%s/in.bin", tcluster_dir(tc));
	snprintf(out_path, sizeof(out_path), "%s/out.bin", tcluster_dir(tc));
	write_file(in_path, data, len);

	out = ok("obj put 0x1234 %s", in_path);
	cr_assert_str_empty(out, "put printed: %s", out);
	free(out);
	free(ok("obj get 4660 %s", out_path));          /* 4660 == 0x1234 */
	got = read_file(out_path, &got_len);
	cr_assert_eq(got_len, len);
	cr_assert_arr_eq(got, data, len, "obj get wrote other bytes than obj put read");
	free(got);

	out = ok("--json obj stat 0000000000001234");
	cr_assert(tjson_valid(out), "obj stat --json is not JSON: %s", out);
	cr_assert_eq(tjson_int(out, "size", &v, NULL), 0, "%s", out);
	cr_assert_eq(v, (int64_t)len);
	free(out);

	out = ok("obj locate 0x1234 --json");
	cr_assert(tjson_valid(out), "obj locate --json is not JSON: %s", out);
	p = out;
	for (int i = 0; i < 3; i++) {
		struct stat st;

		cr_assert_eq(tjson_str(p, "replica", state, sizeof(state), NULL), 0,
			     "replica %d missing: %s", i, out);
		cr_assert_str_eq(state, "ok");
		cr_assert_eq(tjson_str(p, "path", path, sizeof(path), &p), 0);
		cr_assert_eq(strncmp(path, tcluster_dir(tc), strlen(tcluster_dir(tc))), 0,
			     "replica outside the cluster dir: %s", path);
		cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	}
	cr_assert_neq(tjson_str(p, "replica", state, sizeof(state), NULL), 0,
		      "more than 3 replicas: %s", out);
	free(out);

	/* Text, to stdout. */
	write_file(in_path, "hello, sdfs\n", 12);
	free(ok("obj put 7 %s", in_path));
	out = ok("obj get 7");
	cr_assert_str_eq(out, "hello, sdfs\n");
	free(out);

	free(ok("obj rm 0x1234"));
	fails(1, "no such object", "obj get 0x1234 %s", out_path);
	fails(1, "no such object", "obj rm 0x1234");
	fails(1, "no such object", "obj stat 0x1234");
	free(data);
}

Test(cli, get_of_missing_object_fails_with_one_line)
{
	fails(1, "no such object", "obj get 0xdeadbeef");
}

Test(cli, bad_oid_fails_with_one_line)
{
	const char *bad[] = { "xyz", "-1", "0x", "0x10000000000000000", "12abc",
			      "123456789012345678901234567890" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		fails(-1, bad[i], "obj get %s", bad[i]);
}

Test(cli, usage_errors_exit_2)
{
	fails(2, "usage", "obj");
	fails(2, "usage", "obj put 1");
	fails(2, "usage", "cluster format");
	fails(2, "usage", "node list extra");
	fails(-1, "--copies", "cluster format --copies");
	fails(1, "frobnicate", "frobnicate");
}

Test(cli_noconf, missing_config_fails_with_one_line)
{
	const char *cmds[] = { "cluster status", "node list", "obj get 1", "obj locate 1" };
	char *out, *err;

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		int st = tsdfs_run(&out, &err, "-c /nonexistent/sdfs.conf %s", cmds[i]);

		assert_fails_one_line(st, 1, out, err, "/nonexistent", cmds[i]);
	}
}
