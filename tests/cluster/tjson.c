/*
 * tjson.c - see tjson.h.
 */
#include "tests/cluster/tjson.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *value(const char *p, int depth);

static const char *string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (;;) {
		unsigned char c = (unsigned char)*p++;

		if (c == '"')
			return p;
		if (c < 0x20)
			return NULL;
		if (c == '\\') {
			c = (unsigned char)*p++;
			if (c == 'u') {
				for (int i = 0; i < 4; i++)
					if (!isxdigit((unsigned char)*p++))
						return NULL;
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				return NULL;
			}
		}
	}
}

static const char *number(const char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (isdigit((unsigned char)*p))
		while (isdigit((unsigned char)*p))
			p++;
	else
		return NULL;
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	return p;
}

static const char *members(const char *p, int depth, char close, int keyed)
{
	p = ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (keyed) {
			p = string(p);
			if (!p)
				return NULL;
			p = ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = value(p, depth + 1);
		if (!p)
			return NULL;
		p = ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = ws(p);
	}
}

static const char *value(const char *p, int depth)
{
	if (depth > 64)
		return NULL;
	p = ws(p);
	switch (*p) {
	case '{': return members(p, depth, '}', 1);
	case '[': return members(p, depth, ']', 0);
	case '"': return string(p);
	case 't': return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f': return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n': return strncmp(p, "null", 4) ? NULL : p + 4;
	default: return number(p);
	}
}

int tjson_valid(const char *s)
{
	const char *p = s ? value(s, 0) : NULL;

	return p && *ws(p) == '\0';
}

/* Where the value of the first "@key": starts, or NULL. */
static const char *find(const char *s, const char *key)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	for (p = strstr(s, pat); p; p = strstr(p + 1, pat)) {
		const char *v = ws(p + strlen(pat));

		if (*v == ':')
			return ws(v + 1);
	}
	return NULL;
}

int tjson_int(const char *s, const char *key, int64_t *v, const char **end)
{
	const char *p = find(s, key);
	char *e;

	if (!p || !(isdigit((unsigned char)*p) || *p == '-'))
		return -1;
	*v = strtoll(p, &e, 10);
	if (end)
		*end = e;
	return 0;
}

int tjson_str(const char *s, const char *key, char *buf, size_t len, const char **end)
{
	const char *p = find(s, key), *e;

	if (!p || *p != '"' || !(e = string(p)))
		return -1;
	size_t n = (size_t)(e - p - 2);
	if (n >= len)
		return -1;
	memcpy(buf, p + 1, n);
	buf[n] = '\0';
	if (end)
		*end = e;
	return 0;
}

int tjson_bool(const char *s, const char *key, int *v, const char **end)
{
	const char *p = find(s, key);

	if (p && !strncmp(p, "true", 4))
		*v = 1;
	else if (p && !strncmp(p, "false", 5))
		*v = 0;
	else
		return -1;
	if (end)
		*end = p + (*v ? 4 : 5);
	return 0;
}

size_t tjson_count(const char *s, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}
