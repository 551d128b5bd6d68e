/*
 * conf_test.c - unit tests for conf.c: parsing sdfs.conf, defaults,
 * error messages that name file and line, value checks, and which file
 * conf_path picks.
 *
 * Each test writes its files with mkstemp; the suite's fini removes
 * them. criterion runs every test in its own process, so setenv there
 * does not leak into other tests.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"

#define MAX_FILES 16

static char paths[MAX_FILES][64];
static int npaths;

static void remove_files(void)
{
	for (int i = 0; i < npaths; i++)
		unlink(paths[i]);
	npaths = 0;
}

TestSuite(conf, .fini = remove_files);
TestSuite(conf_path, .fini = remove_files);

/* A temp file holding @text; removed in fini. */
static const char *write_conf(const char *text)
{
	char *p;
	int fd;

	cr_assert_lt(npaths, MAX_FILES);
	p = paths[npaths];
	snprintf(p, sizeof(paths[0]), "/tmp/sdfs-conf-test-XXXXXX");
	fd = mkstemp(p);
	cr_assert_geq(fd, 0, "mkstemp: %s", strerror(errno));
	npaths++;
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return p;
}

static char err[256];

/* conf_init, then conf_load of a file holding @text. The file is gone
 * afterwards; *@path keeps its name for checking the error message. */
static int load(const char *text, struct sdfs_conf *c, const char **path)
{
	static char name[sizeof(paths[0])];
	int ret;

	strcpy(name, write_conf(text));
	if (path)
		*path = name;
	conf_init(c);
	err[0] = '\0';
	ret = conf_load(name, c, err, sizeof(err));
	unlink(name);
	npaths--;
	return ret;
}

/* The error must name @path, and with @lineno > 0 "path:lineno:". */
static void assert_err_names(const char *path, int lineno)
{
	char want[96];

	if (lineno > 0)
		snprintf(want, sizeof(want), "%s:%d:", path, lineno);
	else
		snprintf(want, sizeof(want), "%s", path);
	cr_assert_not_null(strstr(err, want), "error \"%s\" does not name \"%s\"", err, want);
}

/* ---- parsing ---- */

Test(conf, parses_a_full_file)
{
	struct sdfs_conf c;

	cr_assert_eq(load("# sdfs.conf\n"
			  "\n"
			  "   # indented comment\n"
			  "zk = 127.0.0.1:2181,127.0.0.2:2181\n"
			  "\t\n"
			  "cluster=dev-1\n"
			  "  timeout_ms   =   2500  \n"
			  "session_ms\t=\t4000\n"
			  "read_timeout_ms = 300\n"
			  "# the end\n", &c, NULL), 0, "%s", err);
	cr_assert_str_eq(c.zk, "127.0.0.1:2181,127.0.0.2:2181");
	cr_assert_str_eq(c.cluster, "dev-1");
	cr_assert_eq(c.timeout_ms, 2500);
	cr_assert_eq(c.session_ms, 4000);
	cr_assert_eq(c.read_timeout_ms, 300);
}

Test(conf, init_sets_the_documented_defaults)
{
	struct sdfs_conf c;

	memset(&c, 0x5a, sizeof(c));
	conf_init(&c);
	cr_assert_str_eq(c.zk, "");
	cr_assert_str_eq(c.cluster, "sdfs");
	cr_assert_eq(c.timeout_ms, 10000);
	cr_assert_eq(c.session_ms, 2000);
	cr_assert_eq(c.frame_timeout_ms, 10000);
	cr_assert_eq(c.idle_timeout_ms, 300000);
	cr_assert_eq(c.max_conns, 4096);
	cr_assert_eq(c.nearfull_pct, 85);
	cr_assert_eq(c.full_pct, 95);
	cr_assert_eq(c.read_timeout_ms, 1000);
	cr_assert_str_eq(c.keyring, "/etc/sdfs/keyring");
	cr_assert_eq(c.keyring_set, 0);
}

Test(conf, parses_the_keyring_path)
{
	struct sdfs_conf c;

	cr_assert_eq(load("zk = h:1\nkeyring = /srv/dev/keyring.client.admin\n", &c, NULL),
		     0, "%s", err);
	cr_assert_str_eq(c.keyring, "/srv/dev/keyring.client.admin");
	cr_assert_eq(c.keyring_set, 1);
	cr_assert_eq(load("zk = h:1\nkeyring =\n", &c, NULL), -EINVAL);
}

Test(conf, parses_connection_limits)
{
	struct sdfs_conf c;

	cr_assert_eq(load("zk = h:1\nframe_timeout_ms = 2000\nidle_timeout_ms = 60000\n"
			  "max_conns = 1\n", &c, NULL), 0, "%s", err);
	cr_assert_eq(c.frame_timeout_ms, 2000);
	cr_assert_eq(c.idle_timeout_ms, 60000);
	cr_assert_eq(c.max_conns, 1);
	cr_assert_neq(load("zk = h:1\nmax_conns = 0\n", &c, NULL), 0);
	cr_assert_neq(load("zk = h:1\nframe_timeout_ms = 10\n", &c, NULL), 0);
}

Test(conf, space_thresholds)
{
	struct sdfs_conf c;

	cr_assert_eq(load("zk = h:1\nnearfull_pct = 70\nfull_pct = 100\n", &c, NULL), 0,
		     "%s", err);
	cr_assert_eq(c.nearfull_pct, 70);
	cr_assert_eq(c.full_pct, 100);
	cr_assert_eq(load("zk = h:1\nfull_pct = 0\n", &c, NULL), -EINVAL);
	cr_assert(strstr(err, ":2: bad value for full_pct"), "%s", err);
	cr_assert_eq(load("zk = h:1\nnearfull_pct = 101\n", &c, NULL), -EINVAL);
	cr_assert_eq(load("zk = h:1\nnearfull_pct = 90\nfull_pct = 80\n", &c, NULL),
		     -EINVAL);
	cr_assert(strstr(err, "nearfull_pct 90 is above full_pct 80"), "%s", err);
}

Test(conf, defaults_apply_to_keys_not_given)
{
	struct sdfs_conf c;

	cr_assert_eq(load("zk = zk1:2181\n", &c, NULL), 0, "%s", err);
	cr_assert_str_eq(c.zk, "zk1:2181");
	cr_assert_str_eq(c.cluster, "sdfs");
	cr_assert_eq(c.timeout_ms, 10000);
	cr_assert_eq(c.session_ms, 2000);
	cr_assert_eq(c.read_timeout_ms, 1000);
}

Test(conf, ignores_unknown_keys)
{
	struct sdfs_conf c;

	cr_assert_eq(load("future_key = 1\n"
			  "zk = h:2181\n"
			  "log_level = debug\n"
			  "ZK = uppercase:1\n", &c, NULL), 0, "%s", err);
	cr_assert_str_eq(c.zk, "h:2181");
}

Test(conf, accepts_last_line_without_newline_and_crlf)
{
	struct sdfs_conf c;

	cr_assert_eq(load("cluster = a\nzk = h:2181", &c, NULL), 0, "%s", err);
	cr_assert_str_eq(c.zk, "h:2181");
	cr_assert_eq(load("zk = h:2181\r\ncluster = b\r\n", &c, NULL), 0, "%s", err);
	cr_assert_str_eq(c.zk, "h:2181");
	cr_assert_str_eq(c.cluster, "b");
}

Test(conf, accepts_timeout_bounds)
{
	struct sdfs_conf c;

	cr_assert_eq(load("zk = h:1\ntimeout_ms = 100\nsession_ms = 3600000\n", &c, NULL),
		     0, "%s", err);
	cr_assert_eq(c.timeout_ms, 100);
	cr_assert_eq(c.session_ms, 3600000);
}

Test(conf, accepts_longest_zk_value)
{
	struct sdfs_conf c;
	char text[600];
	char zk[sizeof(c.zk)];

	memset(zk, 'z', sizeof(zk) - 1);
	zk[sizeof(zk) - 1] = '\0';
	snprintf(text, sizeof(text), "zk = %s\n", zk);
	cr_assert_eq(load(text, &c, NULL), 0, "%s", err);
	cr_assert_str_eq(c.zk, zk);
}

/* ---- errors ---- */

Test(conf, missing_zk_is_an_error_naming_the_file)
{
	static const char *const texts[] = {
		"",
		"# only a comment\n\n",
		"cluster = dev\ntimeout_ms = 500\n",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct sdfs_conf c;
		const char *path;

		cr_assert_eq(load(texts[i], &c, &path), -EINVAL, "case %zu", i);
		assert_err_names(path, 0);
		cr_assert_not_null(strstr(err, "zk"), "%s", err);
	}
}

Test(conf, missing_file_is_an_error_naming_it)
{
	struct sdfs_conf c;
	const char *path = "/nonexistent/sdfs-conf-test/sdfs.conf";

	conf_init(&c);
	cr_assert_eq(conf_load(path, &c, err, sizeof(err)), -ENOENT);
	assert_err_names(path, 0);
}

Test(conf, malformed_line_is_an_error_naming_file_and_line)
{
	static const struct { const char *text; int lineno; } cases[] = {
		{ "zk 127.0.0.1:2181\n", 1 },
		{ "# c\n\nzk = h:1\njust some words\n", 4 },
		{ "zk = h:1\n\n\n\n\ncluster dev\n", 6 },
		{ "zk = h:1\n= 5000\n", 2 },            /* value without a key */
		{ "zk = h:1\n  =\n", 2 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sdfs_conf c;
		const char *path;

		cr_assert_eq(load(cases[i].text, &c, &path), -EINVAL, "case %zu", i);
		assert_err_names(path, cases[i].lineno);
	}
}

Test(conf, rejects_empty_or_too_long_zk)
{
	struct sdfs_conf c;
	const char *path;
	char text[700];
	char zk[sizeof(c.zk) + 1];

	cr_assert_eq(load("zk =\n", &c, &path), -EINVAL);
	assert_err_names(path, 1);
	cr_assert_eq(load("cluster = a\nzk =    \n", &c, &path), -EINVAL);
	assert_err_names(path, 2);
	memset(zk, 'z', sizeof(zk) - 1);
	zk[sizeof(zk) - 1] = '\0';
	snprintf(text, sizeof(text), "zk = %s\n", zk);
	cr_assert_eq(load(text, &c, &path), -EINVAL);
	assert_err_names(path, 1);
}

Test(conf, rejects_bad_timeout_values)
{
	static const char *const bad[] = {
		"", "abc", "-5", "0", "99", "3600001", "10s", "1e4", "1.5",
		"0x100", "10 000", "99999999999999999999", "-99999999999999999999",
		"2147483648",
	};
	static const char *const keys[] = { "timeout_ms", "session_ms", "read_timeout_ms" };

	for (size_t k = 0; k < 3; k++) {
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct sdfs_conf c;
			const char *path;
			char text[128];

			snprintf(text, sizeof(text), "zk = h:1\n%s = %s\n", keys[k], bad[i]);
			cr_assert_eq(load(text, &c, &path), -EINVAL, "%s = \"%s\"", keys[k], bad[i]);
			assert_err_names(path, 2);
			cr_assert_not_null(strstr(err, keys[k]), "%s", err);
		}
	}
}

Test(conf, rejects_bad_cluster_names)
{
	static const char *const bad[] = {
		"a b", "a/b", "../x", ".", "..", ".hidden", "a$b", "na\xc3\xafve",
		"a:b", "a,b",
		"a123456789012345678901234567890123456789012345678901234567890123", /* 64 */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sdfs_conf c;
		const char *path;
		char text[128];

		snprintf(text, sizeof(text), "zk = h:1\ncluster = %s\n", bad[i]);
		cr_assert_eq(load(text, &c, &path), -EINVAL, "cluster \"%s\"", bad[i]);
		assert_err_names(path, 2);
		cr_assert_not_null(strstr(err, "cluster"), "%s", err);
	}
}

Test(conf, rejects_too_long_lines)
{
	static char text[4096];
	struct sdfs_conf c;
	const char *path;

	/* even a comment: the rest of it would be read as a new line */
	text[0] = '#';
	memset(text + 1, 'x', 2000);
	strcpy(text + 2001, "\nzk = h:1\n");
	cr_assert_eq(load(text, &c, &path), -EINVAL);
	assert_err_names(path, 1);
	cr_assert_not_null(strstr(err, "too long"), "%s", err);

	snprintf(text, sizeof(text), "zk = h:1\ncluster = ");
	memset(text + strlen(text), 'c', 3000);
	cr_assert_eq(load(text, &c, &path), -EINVAL);
	assert_err_names(path, 2);
}

Test(conf, short_error_buffer_is_truncated_not_overrun)
{
	struct sdfs_conf c;
	const char *path = write_conf("no equals sign here\n");
	char small[8];

	memset(small, 'Q', sizeof(small));
	conf_init(&c);
	cr_assert_eq(conf_load(path, &c, small, 6), -EINVAL);
	cr_assert_eq(strlen(small), 5);
	cr_assert_eq(small[6], 'Q');
	cr_assert_eq(small[7], 'Q');
}

/* ---- cluster names ---- */

Test(conf, name_ok_follows_the_documented_pattern)
{
	char longest[CONF_MAX_NAME];

	memset(longest, 'n', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	cr_assert(conf_name_ok("sdfs"));
	cr_assert(conf_name_ok("a"));
	cr_assert(conf_name_ok("Dev_1.test-2"));
	cr_assert(conf_name_ok("-x"));
	cr_assert(conf_name_ok(longest));
	longest[0] = '.';
	cr_assert_not(conf_name_ok(longest));
	cr_assert_not(conf_name_ok(""));
	cr_assert_not(conf_name_ok("."));
	cr_assert_not(conf_name_ok(".."));
	cr_assert_not(conf_name_ok("a b"));
	cr_assert_not(conf_name_ok("a/b"));
	cr_assert_not(conf_name_ok("a\tb"));
	cr_assert_not(conf_name_ok("a\nb"));
}

Test(conf, name_ok_rejects_64_chars)
{
	char name[CONF_MAX_NAME + 1];

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	cr_assert_eq(strlen(name), 64);
	cr_assert_not(conf_name_ok(name));
}

/* ---- which file ---- */

Test(conf_path, explicit_path_wins_over_environment)
{
	setenv("SDFS_CONF", "/from/env.conf", 1);
	cr_assert_str_eq(conf_path("/explicit.conf"), "/explicit.conf");
}

Test(conf_path, environment_wins_over_default)
{
	setenv("SDFS_CONF", "/from/env.conf", 1);
	cr_assert_str_eq(conf_path(NULL), "/from/env.conf");
	cr_assert_str_eq(conf_path(""), "/from/env.conf");
}

Test(conf_path, default_when_nothing_is_given)
{
	unsetenv("SDFS_CONF");
	cr_assert_str_eq(conf_path(NULL), CONF_DEFAULT_PATH);
	cr_assert_str_eq(conf_path(""), CONF_DEFAULT_PATH);
	cr_assert_str_eq(CONF_DEFAULT_PATH, "/etc/sdfs/sdfs.conf");
	setenv("SDFS_CONF", "", 1);
	cr_assert_str_eq(conf_path(NULL), CONF_DEFAULT_PATH);
}

Test(conf_path, explicit_path_without_environment)
{
	unsetenv("SDFS_CONF");
	cr_assert_str_eq(conf_path("rel/sdfs.conf"), "rel/sdfs.conf");
}

Test(conf_path, chosen_file_is_the_one_loaded)
{
	const char *env_file = write_conf("zk = from-env:1\n");
	const char *arg_file = write_conf("zk = from-arg:1\n");
	struct sdfs_conf c;

	setenv("SDFS_CONF", env_file, 1);
	conf_init(&c);
	cr_assert_eq(conf_load(conf_path(NULL), &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c.zk, "from-env:1");
	conf_init(&c);
	cr_assert_eq(conf_load(conf_path(arg_file), &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c.zk, "from-arg:1");
}

/* ---- listening addresses (issue 15) ---- */

Test(conf, parses_the_public_address)
{
	struct sdfs_conf c;
	const char *path;

	conf_init(&c);
	cr_assert_str_eq(c.public_addr, "", "no public_addr by default");
	cr_assert_eq(load("zk = h:1\npublic_addr = 10.1.2.3\n", &c, NULL), 0, "%s", err);
	cr_assert_str_eq(c.public_addr, "10.1.2.3");
	cr_assert_eq(load("zk = h:1\npublic_addr = node7.example\n", &c, NULL), 0, "%s", err);
	cr_assert_str_eq(c.public_addr, "node7.example");
	/* a host, not an address with a port (that is --listen's) */
	cr_assert_eq(load("zk = h:1\npublic_addr = 10.1.2.3:7000\n", &c, &path), -EINVAL);
	assert_err_names(path, 2);
	cr_assert_eq(load("zk = h:1\npublic_addr =\n", &c, NULL), -EINVAL);
}

Test(conf, parses_the_cluster_address)
{
	struct sdfs_conf c;
	const char *path;

	conf_init(&c);
	cr_assert_str_eq(c.cluster_addr, "", "no cluster network by default");
	cr_assert_eq(load("zk = h:1\npublic_addr = 10.1.2.3\ncluster_addr = 10.9.2.3\n",
			  &c, NULL), 0, "%s", err);
	cr_assert_str_eq(c.public_addr, "10.1.2.3");
	cr_assert_str_eq(c.cluster_addr, "10.9.2.3");
	cr_assert_eq(load("zk = h:1\ncluster_addr = node7.backend\n", &c, NULL), 0,
		     "%s", err);
	cr_assert_str_eq(c.cluster_addr, "node7.backend");
	cr_assert_eq(load("zk = h:1\ncluster_addr = 10.9.2.3:7000\n", &c, &path), -EINVAL);
	assert_err_names(path, 2);
	cr_assert_eq(load("zk = h:1\ncluster_addr =\n", &c, NULL), -EINVAL);
}

/* ---- the block daemons' scrub (blockd/scrub.h) ---- */

Test(conf, scrub_defaults_are_blockds)
{
	struct sdfs_conf c;

	conf_init(&c);
	cr_assert_eq(c.scrub_mbps, 50);
	cr_assert_eq(c.scrub_interval_s, 604800, "a week");
	cr_assert_eq(load("zk = h:1\n", &c, NULL), 0, "%s", err);
	cr_assert_eq(c.scrub_mbps, 50, "a file without the keys keeps the defaults");
	cr_assert_eq(c.scrub_interval_s, 604800);
}

Test(conf, the_filler_rate_has_a_default_and_a_key)
{
	struct sdfs_conf c;

	conf_init(&c);
	cr_assert_eq(c.fill_mbps, 32);
	cr_assert_eq(load("zk = h:1\nfill_mbps = 200\n", &c, NULL), 0, "%s", err);
	cr_assert_eq(c.fill_mbps, 200);
	cr_assert_neq(load("zk = h:1\nfill_mbps = 0\n", &c, NULL), 0);
	cr_assert_neq(load("zk = h:1\nfill_mbps = 32M\n", &c, NULL), 0);
}

Test(conf, the_reclaim_interval_has_a_default_and_a_key)
{
	struct sdfs_conf c;

	conf_init(&c);
	cr_assert_eq(c.reclaim_interval_s, 10);
	cr_assert_eq(load("zk = h:1\nreclaim_interval_s = 1\n", &c, NULL), 0, "%s", err);
	cr_assert_eq(c.reclaim_interval_s, 1);
	cr_assert_neq(load("zk = h:1\nreclaim_interval_s = 0\n", &c, NULL), 0);
	cr_assert_neq(load("zk = h:1\nreclaim_interval_s = 86401\n", &c, NULL), 0);
}

Test(conf, parses_the_scrub_rate_and_interval)
{
	struct sdfs_conf c;

	cr_assert_eq(load("zk = h:1\nscrub_mbps = 200\nscrub_interval_s = 86400\n",
			  &c, NULL), 0, "%s", err);
	cr_assert_eq(c.scrub_mbps, 200);
	cr_assert_eq(c.scrub_interval_s, 86400);
	/* the bounds: 1..100000 MB/s as --scrub-mbps; 0 s: only on demand */
	cr_assert_eq(load("zk = h:1\nscrub_mbps = 1\nscrub_interval_s = 0\n", &c, NULL),
		     0, "%s", err);
	cr_assert_eq(c.scrub_mbps, 1);
	cr_assert_eq(c.scrub_interval_s, 0);
	cr_assert_eq(load("zk = h:1\nscrub_mbps = 100000\n"
			  "scrub_interval_s = 2147483647\n", &c, NULL), 0, "%s", err);
	cr_assert_eq(c.scrub_mbps, 100000);
	cr_assert_eq(c.scrub_interval_s, 2147483647);
}

Test(conf, rejects_bad_scrub_values)
{
	static const char *const bad[] = {
		"scrub_mbps = 0\n", "scrub_mbps = 100001\n", "scrub_mbps = -5\n",
		"scrub_mbps = 50M\n", "scrub_mbps =\n", "scrub_interval_s = -1\n",
		"scrub_interval_s = 2147483648\n", "scrub_interval_s = 1w\n",
		"scrub_interval_s =\n",
	};
	struct sdfs_conf c;
	const char *path;
	char text[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "zk = h:1\n%s", bad[i]);
		cr_assert_eq(load(text, &c, &path), -EINVAL, "accepted: %s", bad[i]);
		assert_err_names(path, 2);
		cr_assert(strstr(err, "bad value for scrub_"), "%s", err);
	}
}
