/*
 * cli.c - see cli.h.
 */
#include "tools/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/policy.h"

/* What failures are reported with, for the whole run (cli_init). */
static struct {
	int json;               /* --json: failures as JSON on stdout too */
	int data;               /* stdout carries data: no JSON there */
	const char *cmd;        /* named in hints: "sdfs vol create --help" */
} fail_ctx;

static void log_stderr(int level, const char *msg, void *arg)
{
	(void)arg;
	fprintf(stderr, "sdfs: %s: %s\n", level <= LOG_ERR ? "error" :
		level == LOG_WARNING ? "warning" : "info", msg);
}

void cli_init(const struct cli *cli)
{
	fail_ctx.json = cli->json;
	fail_ctx.cmd = cli->cmd;
	sdfs_set_log(log_stderr, NULL, cli->verbose ? LOG_DEBUG : LOG_ERR);
}

void cli_stdout_is_data(void)
{
	fail_ctx.data = 1;
}

/* "@prefix@msg@suffix" on stderr; with --json, {"error": "@prefix@msg",
 * "code": @code} on stdout unless @no_json. Returns @code. */
static int report(int code, int no_json, const char *prefix, const char *suffix,
		  const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "%s%s%s\n", prefix, msg, suffix);
	if (fail_ctx.json && !fail_ctx.data && !no_json) {
		char full[2100];

		snprintf(full, sizeof(full), "%s%s", strcmp(prefix, "sdfs: ") ? prefix : "",
			 msg);
		fputs("{\"error\": ", stdout);
		cli_json_str(stdout, full);
		printf(", \"code\": %d}\n", code);
	}
	fflush(stdout);
	return code;
}

/* " (see sdfs vol create --help)"; "" in a program that is not sdfs
 * (no cli_init). */
static const char *hint(char *buf, size_t len)
{
	if (!fail_ctx.cmd)
		return "";
	snprintf(buf, len, " (see sdfs %s%s--help)", fail_ctx.cmd,
		 fail_ctx.cmd[0] ? " " : "");
	return buf;
}

int cli_fail(const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = report(1, 0, "sdfs: ", "", fmt, ap);
	va_end(ap);
	return ret;
}

int cli_fail_after_output(const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = report(1, 1, "sdfs: ", "", fmt, ap);
	va_end(ap);
	return ret;
}

int cli_bad(const char *fmt, ...)
{
	char h[128];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = report(2, 0, "sdfs: ", hint(h, sizeof(h)), fmt, ap);
	va_end(ap);
	return ret;
}

static int usage_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_line(const char *fmt, ...)
{
	char h[128];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = report(2, 0, "usage: ", hint(h, sizeof(h)), fmt, ap);
	va_end(ap);
	return ret;
}

int cli_usage(const char *usage)
{
	return usage_line("%s", usage);
}

int cli_unknown(const char *group, const char *sub)
{
	fail_ctx.cmd = group;   /* the hint names the group's --help */
	return cli_bad("unknown command '%s %s'", group, sub);
}

/* --keyring FILE, else $SDFS_KEYRING; NULL: the config's (sdfs_open). */
static const char *keyring_override(const struct cli *cli)
{
	const char *env = getenv("SDFS_KEYRING");

	return cli->keyring ? cli->keyring : env && *env ? env : NULL;
}

struct sdfs *cli_open(const struct cli *cli)
{
	const char *keyring = keyring_override(cli);
	struct sdfs_conf conf;
	struct sdfs *s;
	char err[512];

	if (!keyring) {
		if (sdfs_open(cli->conf, &s, err, sizeof(err)) != 0) {
			cli_fail("%s", err);
			return NULL;
		}
		return s;
	}
	/* sdfs_open with another keyring than the config's */
	conf_init(&conf);
	if (conf_load(conf_path(cli->conf), &conf, err, sizeof(err)) ||
	    sdfs_connect_keyring(conf.zk, conf.cluster, conf.timeout_ms, keyring, &s, err,
				 sizeof(err))) {
		cli_fail("%s", err);
		return NULL;
	}
	sdfs_set_conf(s, &conf);
	return s;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || end == s)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_oid(const char *s, uint64_t *oid)
{
	size_t n = strlen(s);

	if (n == 16 && strspn(s, "0123456789abcdefABCDEF") == 16) {
		*oid = strtoull(s, NULL, 16);
		return 0;
	}
	return cli_parse_u64(s, oid);
}

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: return -1;
	}
	if (*end && end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))
		return -1;
	if (shift && v > (UINT64_MAX >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

const char *cli_human(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

void cli_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

const char *cli_opt(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] != '\0')
		return NULL;
	if (*i + 1 >= argc)
		exit(cli_bad("%s needs a value", name));
	return argv[++*i];
}

const char *cli_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (ns < 0 && ns % 1000000000)
		t--;
	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

int64_t cli_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

ssize_t cli_read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = read(fd, (char *)buf + done, len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

int cli_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int cli_is_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	/* Each byte equals the next and the first is zero: all are. */
	return len == 0 || (p[0] == 0 && !memcmp(p, p + 1, len - 1));
}

int cli_path_ok(const char *what, const char *path)
{
	if (path[0] == '/')
		return 1;
	cli_bad("%s %s: not an sdfs path (they start with /)", what, path);
	return 0;
}

int cli_split_path(struct sdfs *s, const char *path, struct sdfs_stat *dir,
		   char name[CLI_NAME_MAX + 1])
{
	size_t e = strlen(path), b;
	char *parent;
	int ret;

	while (e > 1 && path[e - 1] == '/')
		e--;
	for (b = e; b > 0 && path[b - 1] != '/'; b--)
		;
	if (e - b > CLI_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, path + b, e - b);
	name[e - b] = '\0';
	parent = strndup(path, b);
	if (!parent)
		return -ENOMEM;
	ret = sdfs_ns_resolve(s, parent, 1, dir);
	free(parent);
	if (!ret && !S_ISDIR(dir->mode))
		ret = -ENOTDIR;
	return ret;
}

int cli_ns_fail(struct sdfs *s, const char *what, int err)
{
	struct sdfs_mds_status ms;

	if (err == -EHOSTDOWN)
		return cli_fail("%s: no active mds (see sdfs mds status)", what);
	if (err == -ETIMEDOUT && sdfs_mds_status(s, &ms) == 0) {
		int active = ms.has_active;

		free(ms.list);
		if (!active)
			return cli_fail("%s: no active mds (see sdfs mds status)", what);
	}
	return cli_fail("%s: %s", what, strerror(-err));
}

/*
 * Can the nodes the map has hold @copies distinct copies? Each copy needs
 * a node of its own (in a zone of its own while there are zones enough),
 * so more copies than placed nodes leaves every object short: refused
 * unless @force. A cluster no node has joined yet (a first format: block
 * daemons join after it) cannot be judged: a note says what it needs.
 */
int cli_policy_arg(const char *what, const char *arg, unsigned *copies)
{
	char *end;
	unsigned long n;

	if (!strcmp(arg, "default")) {
		*copies = 0;
		return 0;
	}
	if (!strncmp(arg, "ec=", 3)) {
		uint16_t p;
		int ret = policy_parse_ec(arg, &p);

		if (ret)
			return cli_fail("%s: %s: %s", what, arg, ret == -ERANGE ?
					"codes are ec=2+1, ec=4+2 and ec=8+3" :
					"want ec=K+M (2+1, 4+2, 8+3)");
		*copies = p;
		return 0;
	}
	errno = 0;
	n = strncmp(arg, "copies=", 7) ? 0 : strtoul(arg + 7, &end, 10);
	if (!n || errno || *end || n > 15)
		return cli_fail("%s: %s: want copies=N (1..15) or default", what, arg);
	*copies = (unsigned)n;
	return 0;
}

int cli_copies_fit(struct sdfs *s, const char *what, unsigned copies, int force)
{
	if (policy_is_ec(copies)) {     /* k + m strips on distinct nodes */
		unsigned k = policy_ec_k(copies), m = policy_ec_m(copies);
		char w[64];

		snprintf(w, sizeof(w), "%s ec=%u+%u needs k+m =", what, k, m);
		return cli_copies_fit(s, w, k + m, force);
	}
	struct sdfs_node_status *nodes;
	unsigned placed = 0, zones = 0;
	uint32_t zone_seen[64];
	size_t n;

	if (sdfs_node_list(s, &nodes, &n) || n == 0) {
		if (copies > 1)
			fprintf(stderr, "sdfs: note: no block daemon has joined yet; "
				"copies %u needs %u nodes (health says degraded until "
				"then)\n", copies, copies);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		int seen = 0;

		if (!nodes[i].placed || !strcmp(nodes[i].state, "out"))
			continue;
		placed++;
		for (unsigned z = 0; z < zones; z++)
			seen |= zone_seen[z] == nodes[i].zone;
		if (!seen && zones < sizeof(zone_seen) / sizeof(zone_seen[0]))
			zone_seen[zones++] = nodes[i].zone;
	}
	free(nodes);
	if (copies <= placed)
		return 0;
	if (force) {
		fprintf(stderr, "sdfs: warning: copies %u, but the map has %u node%s "
			"(%u zone%s) to hold them: health says degraded until %u are up\n",
			copies, placed, placed == 1 ? "" : "s", zones, zones == 1 ? "" : "s",
			copies);
		return 0;
	}
	return cli_fail("%s %u: the map has %u node%s (%u zone%s) that can hold "
			"distinct copies; add nodes first, or use --force", what, copies, placed,
			placed == 1 ? "" : "s", zones, zones == 1 ? "" : "s");
}
