/*
 * keys.c - key names, caps text, keyring files, derived keys (keys.h).
 */
#include <errno.h>
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/keys.h"
#include "common/log.h"

static int sodium_ready(void)
{
	static int ok;

	if (!ok)
		ok = sodium_init() >= 0;
	return ok;
}

int auth_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > AUTH_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return 0;
	}
	return 1;
}

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* "C:S[:N]" */
static int parse_map(const char *s, struct auth_idmap *m)
{
	char buf[64], *p, *q;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	p = strchr(buf, ':');
	if (!p)
		return -EINVAL;
	*p++ = 0;
	q = strchr(p, ':');
	if (q)
		*q++ = 0;
	m->count = 1;
	if (parse_u32(buf, &m->from) || parse_u32(p, &m->to) ||
	    (q && (parse_u32(q, &m->count) || m->count == 0)))
		return -EINVAL;
	if ((uint64_t)m->from + m->count - 1 > UINT32_MAX ||
	    (uint64_t)m->to + m->count - 1 > UINT32_MAX)
		return -EINVAL;
	return 0;
}

/* Normalise an absolute path: no "//", ".", ".." components, no
 * trailing '/'; "/" stays. -EINVAL if relative, with "..", or too long. */
static int norm_path(const char *in, char *out, size_t len)
{
	size_t o = 0;
	const char *p = in;

	if (*p != '/')
		return -EINVAL;
	while (*p) {
		const char *s;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		s = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - s);
		if (n == 1 && s[0] == '.')
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return -EINVAL;
		if (o + 1 + n + 1 > len)
			return -EINVAL;
		out[o++] = '/';
		memcpy(out + o, s, n);
		o += n;
	}
	if (o == 0) {
		if (len < 2)
			return -EINVAL;
		out[o++] = '/';
	}
	out[o] = 0;
	return 0;
}

int auth_caps_parse(const char *s, struct auth_caps *c, char *err, size_t errlen)
{
	char buf[AUTH_CAPS_STR_MAX], *save = NULL, *tok;
	int have_rw = 0;

	memset(c, 0, sizeof(*c));
	strcpy(c->path, "/");
	c->anon_uid = c->anon_gid = AUTH_ANON_ID;
	if (!s)
		s = "";
	if (strlen(s) >= sizeof(buf))
		return fail(err, errlen, -EINVAL, "caps: too long");
	strcpy(buf, s);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		char *val = strchr(tok, '=');

		if (val)
			*val++ = 0;
		if (!val && !strcmp(tok, "admin")) {
			c->flags |= AUTH_CAP_ADMIN;
		} else if (!val && !strcmp(tok, "daemon")) {
			c->flags |= AUTH_CAP_DAEMON;
		} else if (!val && (!strcmp(tok, "ro") || !strcmp(tok, "rw"))) {
			if (have_rw++)
				return fail(err, errlen, -EINVAL, "caps: ro/rw given twice");
			if (tok[1] == 'o')
				c->flags |= AUTH_CAP_RO;
		} else if (!val && !strcmp(tok, "root_squash")) {
			c->flags |= AUTH_CAP_ROOT_SQUASH;
		} else if (!val && !strcmp(tok, "all_squash")) {
			c->flags |= AUTH_CAP_ALL_SQUASH;
		} else if (val && !strcmp(tok, "path")) {
			if (norm_path(val, c->path, sizeof(c->path)))
				return fail(err, errlen, -EINVAL, "caps: path=%s: not an "
					    "absolute path without '..'", val);
		} else if (val && (!strcmp(tok, "anonuid") || !strcmp(tok, "anongid"))) {
			if (parse_u32(val, tok[4] == 'u' ? &c->anon_uid : &c->anon_gid))
				return fail(err, errlen, -EINVAL, "caps: %s=%s: not a number",
					    tok, val);
		} else if (val && (!strcmp(tok, "uidmap") || !strcmp(tok, "gidmap"))) {
			int uid = tok[0] == 'u';
			uint32_t *n = uid ? &c->nuidmap : &c->ngidmap;
			struct auth_idmap *m = uid ? c->uidmap : c->gidmap;

			if (*n >= AUTH_MAP_MAX)
				return fail(err, errlen, -EINVAL, "caps: more than %u %s",
					    AUTH_MAP_MAX, tok);
			if (parse_map(val, &m[*n]))
				return fail(err, errlen, -EINVAL, "caps: %s=%s: want "
					    "CLIENT:CLUSTER[:COUNT]", tok, val);
			(*n)++;
		} else {
			return fail(err, errlen, -EINVAL, "caps: unknown '%s%s%s' (known: "
				    "admin daemon ro rw path= root_squash all_squash "
				    "anonuid= anongid= uidmap= gidmap=)", tok,
				    val ? "=" : "", val ? val : "");
		}
	}
	return 0;
}

int auth_caps_format(const struct auth_caps *c, char *buf, size_t len)
{
	size_t o = 0;
	int n;

#define PUT(...) do { \
		n = snprintf(buf + o, len - o, __VA_ARGS__); \
		if (n < 0 || (size_t)n >= len - o) \
			return -ENOSPC; \
		o += (size_t)n; \
	} while (0)
	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	if (c->flags & AUTH_CAP_ADMIN)
		PUT("admin,");
	if (c->flags & AUTH_CAP_DAEMON)
		PUT("daemon,");
	PUT("%s", c->flags & AUTH_CAP_RO ? "ro" : "rw");
	if (c->path[0] && strcmp(c->path, "/"))
		PUT(",path=%s", c->path);
	if (c->flags & AUTH_CAP_ROOT_SQUASH)
		PUT(",root_squash");
	if (c->flags & AUTH_CAP_ALL_SQUASH)
		PUT(",all_squash");
	if (c->anon_uid != AUTH_ANON_ID)
		PUT(",anonuid=%" PRIu32, c->anon_uid);
	if (c->anon_gid != AUTH_ANON_ID)
		PUT(",anongid=%" PRIu32, c->anon_gid);
	for (uint32_t i = 0; i < c->nuidmap && i < AUTH_MAP_MAX; i++)
		PUT(",uidmap=%" PRIu32 ":%" PRIu32 ":%" PRIu32, c->uidmap[i].from,
		    c->uidmap[i].to, c->uidmap[i].count);
	for (uint32_t i = 0; i < c->ngidmap && i < AUTH_MAP_MAX; i++)
		PUT(",gidmap=%" PRIu32 ":%" PRIu32 ":%" PRIu32, c->gidmap[i].from,
		    c->gidmap[i].to, c->gidmap[i].count);
#undef PUT
	return 0;
}

static uint32_t map_id(const struct auth_caps *c, uint32_t id, int uid)
{
	uint32_t anon = uid ? c->anon_uid : c->anon_gid;
	uint32_t n = uid ? c->nuidmap : c->ngidmap;
	const struct auth_idmap *m = uid ? c->uidmap : c->gidmap;

	if (c->flags & AUTH_CAP_ALL_SQUASH)
		return anon;
	if (id == 0 && (c->flags & AUTH_CAP_ROOT_SQUASH))
		return anon;
	for (uint32_t i = 0; i < n && i < AUTH_MAP_MAX; i++)
		if (id >= m[i].from && id - m[i].from < m[i].count)
			return m[i].to + (id - m[i].from);
	return id;
}

uint32_t auth_caps_uid(const struct auth_caps *c, uint32_t uid)
{
	return map_id(c, uid, 1);
}

uint32_t auth_caps_gid(const struct auth_caps *c, uint32_t gid)
{
	return map_id(c, gid, 0);
}

int auth_caps_privileged(const struct auth_caps *c)
{
	return (c->flags & (AUTH_CAP_ADMIN | AUTH_CAP_DAEMON)) != 0;
}

void auth_random_key(uint8_t key[AUTH_KEY_BYTES])
{
	if (!sodium_ready())
		abort();        /* no entropy source: nothing safe to do */
	randombytes_buf(key, AUTH_KEY_BYTES);
}

void auth_key_to_b64(const uint8_t key[AUTH_KEY_BYTES], char out[AUTH_KEY_B64_LEN])
{
	sodium_bin2base64(out, AUTH_KEY_B64_LEN, key, AUTH_KEY_BYTES,
			  sodium_base64_VARIANT_ORIGINAL);
}

int auth_key_from_b64(const char *s, uint8_t key[AUTH_KEY_BYTES])
{
	size_t n = 0;
	const char *end = NULL;

	if (!s || strlen(s) != AUTH_KEY_B64_LEN - 1)
		return -EINVAL;
	if (sodium_base642bin(key, AUTH_KEY_BYTES, s, strlen(s), NULL, &n, &end,
			      sodium_base64_VARIANT_ORIGINAL) || n != AUTH_KEY_BYTES ||
	    *end)
		return -EINVAL;
	return 0;
}

void auth_derive(const uint8_t secret[AUTH_KEY_BYTES], unsigned purpose,
		 uint8_t out[AUTH_KEY_BYTES])
{
	static_assert(AUTH_KEY_BYTES == crypto_kdf_KEYBYTES, "kdf key size");
	if (!sodium_ready())
		abort();
	crypto_kdf_derive_from_key(out, AUTH_KEY_BYTES, purpose, "sdfs-key", secret);
}

void auth_zk_password(const uint8_t secret[AUTH_KEY_BYTES], int admin,
		      char out[AUTH_ZK_PW_MAX])
{
	uint8_t k[AUTH_KEY_BYTES];

	static_assert(AUTH_ZK_PW_MAX >= AUTH_KEY_B64_LEN, "password fits");
	auth_derive(secret, admin ? AUTH_DERIVE_ZK_ADMIN : AUTH_DERIVE_ZK_CLIENT, k);
	auth_key_to_b64(k, out);
	sodium_memzero(k, sizeof(k));
}

/* ---- keyring files ---- */

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

int keyring_load(const char *path, struct keyring *kr, char *err, size_t errlen)
{
	char line[AUTH_CAPS_STR_MAX + 64];
	int lineno = 0, have_key = 0, ret = 0;
	struct stat st;
	FILE *f;

	memset(kr, 0, sizeof(*kr));
	f = fopen(path, "r");
	if (!f)
		return fail(err, errlen, -errno, "keyring %s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
		log_warn("keyring %s: readable by others (mode %04o); it should be 0600",
			 path, (unsigned)(st.st_mode & 07777));
	while (fgets(line, sizeof(line), f)) {
		char *s, *eq, *k, *v;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			ret = fail(err, errlen, -EINVAL, "keyring %s:%d: line too long",
				   path, lineno);
			goto out;
		}
		s = trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *e = strchr(s, ']');

			if (!e || e[1] || kr->name[0]) {
				ret = fail(err, errlen, -EINVAL, "keyring %s:%d: %s", path,
					   lineno, kr->name[0] ? "more than one key" :
					   "malformed [name]");
				goto out;
			}
			*e = 0;
			if (!auth_name_ok(s + 1)) {
				ret = fail(err, errlen, -EINVAL, "keyring %s:%d: bad key "
					   "name '%s'", path, lineno, s + 1);
				goto out;
			}
			strcpy(kr->name, s + 1);
			continue;
		}
		eq = strchr(s, '=');
		if (!eq || !kr->name[0]) {
			ret = fail(err, errlen, -EINVAL, "keyring %s:%d: %s", path, lineno,
				   kr->name[0] ? "expected key = value" :
				   "expected [name] first");
			goto out;
		}
		*eq = 0;
		k = trim(s);
		v = trim(eq + 1);
		if (!strcmp(k, "key")) {
			if (auth_key_from_b64(v, kr->key)) {
				ret = fail(err, errlen, -EINVAL, "keyring %s:%d: key is "
					   "not base64 of 32 bytes", path, lineno);
				goto out;
			}
			have_key = 1;
		} else if (!strcmp(k, "secret")) {
			if (auth_key_from_b64(v, kr->secret)) {
				ret = fail(err, errlen, -EINVAL, "keyring %s:%d: secret "
					   "is not base64 of 32 bytes", path, lineno);
				goto out;
			}
			kr->has_secret = 1;
		} else if (!strcmp(k, "caps")) {
			snprintf(kr->caps, sizeof(kr->caps), "%s", v);
		} else if (!strcmp(k, "zk")) {
			if (strlen(v) >= sizeof(kr->zk_pw)) {
				ret = fail(err, errlen, -EINVAL, "keyring %s:%d: zk "
					   "password too long", path, lineno);
				goto out;
			}
			strcpy(kr->zk_pw, v);
		}               /* unknown keys: ignored, as in sdfs.conf */
	}
	if (ferror(f))
		ret = fail(err, errlen, -EIO, "keyring %s: read error", path);
	else if (!kr->name[0] || !have_key)
		ret = fail(err, errlen, -EINVAL, "keyring %s: no [name] with a key",
			   path);
out:
	fclose(f);
	sodium_memzero(line, sizeof(line));
	if (ret)
		sodium_memzero(kr, sizeof(*kr));
	return ret;
}

int keyring_save(const char *path, const struct keyring *kr)
{
	char tmp[PATH_MAX], key[AUTH_KEY_B64_LEN], sec[AUTH_KEY_B64_LEN];
	char buf[AUTH_CAPS_STR_MAX + 512];
	int fd, n, ret = 0;

	if (!auth_name_ok(kr->name))
		return -EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	auth_key_to_b64(kr->key, key);
	n = snprintf(buf, sizeof(buf), "[%s]\n\tkey = %s\n", kr->name, key);
	if (kr->caps[0])
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "\tcaps = %s\n", kr->caps);
	if (kr->has_secret) {
		auth_key_to_b64(kr->secret, sec);
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "\tsecret = %s\n", sec);
	}
	if (kr->zk_pw[0])
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "\tzk = %s\n", kr->zk_pw);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (fchmod(fd, 0600) || write(fd, buf, (size_t)n) != n || fsync(fd))
		ret = errno ? -errno : -EIO;
	close(fd);
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
out:
	sodium_memzero(buf, sizeof(buf));
	sodium_memzero(key, sizeof(key));
	sodium_memzero(sec, sizeof(sec));
	return ret;
}
