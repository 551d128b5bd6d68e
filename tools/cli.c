/*
 * cli.c - see cli.h.
 */
#include "tools/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

int cli_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("sdfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int cli_usage(const char *usage)
{
	fprintf(stderr, "usage: %s\n", usage);
	return 2;
}

static void log_stderr(int level, const char *msg, void *arg)
{
	(void)arg;
	fprintf(stderr, "sdfs: %s: %s\n", level <= LOG_ERR ? "error" :
		level == LOG_WARNING ? "warning" : "info", msg);
}

void cli_log_init(const struct cli *cli)
{
	sdfs_set_log(log_stderr, NULL, cli->verbose ? LOG_DEBUG : LOG_ERR);
}

struct sdfs *cli_open(const struct cli *cli)
{
	struct sdfs *s;
	char err[512];

	if (sdfs_open(cli->conf, &s, err, sizeof(err)) != 0) {
		cli_fail("%s", err);
		return NULL;
	}
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
	if (*i + 1 >= argc) {
		cli_fail("%s needs a value", name);
		exit(2);
	}
	return argv[++*i];
}
