/*
 * conf.c - see conf.h.
 */
#include "common/conf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void conf_init(struct sdfs_conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->cluster, "sdfs");
	c->timeout_ms = 10000;
	c->session_ms = 2000;
	c->frame_timeout_ms = 10000;
	c->idle_timeout_ms = 300000;
	c->max_conns = 4096;
	c->nearfull_pct = 85;
	c->full_pct = 95;
	c->replica_timeout_ms = 1500;
	c->lease_ms = 2000;
	c->read_timeout_ms = 1000;
	c->ec_seal_after_s = 60;
	strcpy(c->keyring, CONF_DEFAULT_KEYRING);
	c->objcap_lifetime_ms = 600000;
	c->mds_sync_interval_ms = 1000;
	c->scrub_mbps = 50;                     /* blockd/scrub.h's defaults */
	c->scrub_interval_s = 7 * 24 * 3600;    /* a week */
	c->fill_mbps = 32;                      /* blockd/backing.h's */
	c->reclaim_interval_s = 10;             /* mds/vol.h VOL_RECLAIM_MS */
}

const char *conf_path(const char *explicit_path)
{
	const char *env = getenv("SDFS_CONF");

	if (explicit_path && *explicit_path)
		return explicit_path;
	if (env && *env)
		return env;
	return CONF_DEFAULT_PATH;
}

int conf_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= CONF_MAX_NAME)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_.-", name[i]))
			return 0;
	return name[0] != '.';
}

int conf_resolve(const char *file, const char *zk, const char *cluster,
		 struct sdfs_conf *c, char *err, size_t errlen)
{
	conf_init(c);
	if ((!zk || file) && conf_load(conf_path(file), c, err, errlen))
		return -EINVAL;
	if (zk) {
		if (strlen(zk) >= sizeof(c->zk)) {
			snprintf(err, errlen, "--zk too long");
			return -EINVAL;
		}
		strcpy(c->zk, zk);
	}
	if (cluster) {
		if (!conf_name_ok(cluster)) {
			snprintf(err, errlen, "bad --cluster '%s'", cluster);
			return -EINVAL;
		}
		strcpy(c->cluster, cluster);
	}
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int parse_pct(const char *v, int *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || end == v || x < 1 || x > 100)
		return -EINVAL;
	*out = (int)x;
	return 0;
}

static int parse_ms(const char *v, int *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || end == v || x < 100 || x > 3600 * 1000)
		return -EINVAL;
	*out = (int)x;
	return 0;
}

static int parse_count(const char *v, long min, long max, int *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || end == v || x < min || x > max)
		return -EINVAL;
	*out = (int)x;
	return 0;
}

int conf_load(const char *path, struct sdfs_conf *c, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int lineno = 0, ret = 0;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	while (fgets(line, sizeof(line), f)) {
		char *k, *v, *eq;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			ret = -EINVAL;
			break;
		}
		k = trim(line);
		if (*k == '\0' || *k == '#')
			continue;
		eq = strchr(k, '=');
		if (!eq || eq == k) {   /* no "=", or nothing before it */
			snprintf(err, errlen, "%s:%d: expected key = value", path, lineno);
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		k = trim(k);
		v = trim(eq + 1);
		if (strcmp(k, "zk") == 0) {
			if (!*v || strlen(v) >= sizeof(c->zk))
				ret = -EINVAL;
			else
				strcpy(c->zk, v);
		} else if (strcmp(k, "cluster") == 0) {
			if (!conf_name_ok(v))
				ret = -EINVAL;
			else
				strcpy(c->cluster, v);
		} else if (strcmp(k, "timeout_ms") == 0) {
			ret = parse_ms(v, &c->timeout_ms);
		} else if (strcmp(k, "session_ms") == 0) {
			ret = parse_ms(v, &c->session_ms);
		} else if (strcmp(k, "frame_timeout_ms") == 0) {
			ret = parse_ms(v, &c->frame_timeout_ms);
		} else if (strcmp(k, "idle_timeout_ms") == 0) {
			ret = parse_ms(v, &c->idle_timeout_ms);
		} else if (strcmp(k, "max_conns") == 0) {
			ret = parse_count(v, 1, 1000000, &c->max_conns);
		} else if (strcmp(k, "nearfull_pct") == 0) {
			ret = parse_pct(v, &c->nearfull_pct);
		} else if (strcmp(k, "full_pct") == 0) {
			ret = parse_pct(v, &c->full_pct);
		} else if (strcmp(k, "replica_timeout_ms") == 0) {
			ret = parse_ms(v, &c->replica_timeout_ms);
		} else if (strcmp(k, "lease_ms") == 0) {
			ret = parse_ms(v, &c->lease_ms);
		} else if (strcmp(k, "read_timeout_ms") == 0) {
			ret = parse_ms(v, &c->read_timeout_ms);
		} else if (strcmp(k, "ec_seal_after_s") == 0) {
			ret = parse_count(v, 0, 2147483647, &c->ec_seal_after_s);
		} else if (strcmp(k, "keyring") == 0) {
			if (!*v || strlen(v) >= sizeof(c->keyring)) {
				ret = -EINVAL;
			} else {
				strcpy(c->keyring, v);
				c->keyring_set = 1;
			}
		} else if (strcmp(k, "public_addr") == 0) {
			/* a host: the daemon's port comes from --listen or
			 * its default */
			if (!*v || strlen(v) >= sizeof(c->public_addr) ||
			    strpbrk(v, ": \t"))
				ret = -EINVAL;
			else
				strcpy(c->public_addr, v);
		} else if (strcmp(k, "cluster_addr") == 0) {
			/* a host too: blockd's port is its public one */
			if (!*v || strlen(v) >= sizeof(c->cluster_addr) ||
			    strpbrk(v, ": \t"))
				ret = -EINVAL;
			else
				strcpy(c->cluster_addr, v);
		} else if (strcmp(k, "objcap_lifetime_ms") == 0) {
			ret = parse_ms(v, &c->objcap_lifetime_ms);
			if (!ret && c->objcap_lifetime_ms < 10000)
				ret = -EINVAL;
		} else if (strcmp(k, "mds_sync_interval_ms") == 0) {
			ret = parse_ms(v, &c->mds_sync_interval_ms);
			if (!ret && (c->mds_sync_interval_ms < 10 ||
				     c->mds_sync_interval_ms > 60000))
				ret = -EINVAL;
		} else if (strcmp(k, "scrub_mbps") == 0) {
			ret = parse_count(v, 1, 100000, &c->scrub_mbps);
		} else if (strcmp(k, "scrub_interval_s") == 0) {
			ret = parse_count(v, 0, INT_MAX, &c->scrub_interval_s);
		} else if (strcmp(k, "fill_mbps") == 0) {
			ret = parse_count(v, 1, 100000, &c->fill_mbps);
		} else if (strcmp(k, "reclaim_interval_s") == 0) {
			ret = parse_count(v, 1, 86400, &c->reclaim_interval_s);
		}
		if (ret) {
			snprintf(err, errlen, "%s:%d: bad value for %s", path, lineno, k);
			break;
		}
	}
	fclose(f);
	if (!ret && c->nearfull_pct > c->full_pct) {
		snprintf(err, errlen, "%s: nearfull_pct %d is above full_pct %d", path,
			 c->nearfull_pct, c->full_pct);
		ret = -EINVAL;
	}
	if (!ret && !c->zk[0]) {
		snprintf(err, errlen, "%s: no 'zk = HOST:PORT' line", path);
		ret = -EINVAL;
	}
	return ret;
}
