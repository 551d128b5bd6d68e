/*
 * keyadm.c - see keyadm.h.
 */
#include "tools/keyadm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "common/coord_auth.h"

int64_t keyadm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int keyadm_conf(const struct cli *cli, struct keyadm *ka)
{
	const char *env = getenv("SDFS_KEYRING");
	char err[512];

	memset(ka, 0, sizeof(*ka));
	conf_init(&ka->conf);
	snprintf(ka->conf_path, sizeof(ka->conf_path), "%s", conf_path(cli->conf));
	if (conf_load(ka->conf_path, &ka->conf, err, sizeof(err)))
		return cli_fail("%s", err);
	if (cli->keyring)
		snprintf(ka->path, sizeof(ka->path), "%s", cli->keyring);
	else if (env && *env)
		snprintf(ka->path, sizeof(ka->path), "%s", env);
	else if (ka->conf.keyring_set || access(ka->conf.keyring, F_OK) == 0)
		snprintf(ka->path, sizeof(ka->path), "%s", ka->conf.keyring);
	return 0;
}

int keyadm_load(struct keyadm *ka, const char *what)
{
	char err[512];

	if (keyring_load(ka->path, &ka->kr, err, sizeof(err)))
		return cli_fail("%s: %s", what, err);
	ka->loaded = 1;
	return 0;
}

/* keyadm_connect, with the reason in @err. */
static int keyadm_connect_quiet(struct keyadm *ka, char *err, size_t errlen)
{
	struct coord_cred cred;
	int ret, has = ka->loaded && coord_cred_from_keyring(&ka->kr, &cred) == 0;

	ret = coord_open_cred(ka->conf.zk, ka->conf.cluster, has ? &cred : NULL,
			      ka->conf.session_ms, ka->conf.timeout_ms, NULL, NULL,
			      &ka->coord);
	sodium_memzero(&cred, sizeof(cred));
	if (ret == -EACCES)
		snprintf(err, errlen, "ZooKeeper refused %s (%s)",
			 has ? "this keyring's password" : "a session without a key",
			 has ? ka->path : "set keyring = in the config, or --keyring FILE");
	else if (ret)
		snprintf(err, errlen, "cannot reach ZooKeeper at %s: %s", ka->conf.zk,
			 strerror(-ret));
	return ret;
}

int keyadm_connect(struct keyadm *ka, const char *what)
{
	char err[512];

	if (keyadm_connect_quiet(ka, err, sizeof(err)))
		return cli_fail("%s: %s", what, err);
	return 0;
}

/* Does @key open @e now: its key, or the one it replaced within the
 * grace? */
static int ent_accepts(const struct keydb_ent *e, const uint8_t key[AUTH_KEY_BYTES],
		       int64_t now_ms)
{
	if (!sodium_memcmp(e->key, key, AUTH_KEY_BYTES))
		return 1;
	return e->prev_until_ms > now_ms &&
	       !sodium_memcmp(e->prev_key, key, AUTH_KEY_BYTES);
}

int keyadm_check_admin(struct keyadm *ka, const char *what)
{
	struct keydb_ent e;
	int ret;

	if (!ka->kr.has_secret)
		return cli_fail("%s: needs an admin key (this keyring is %s)", what,
				ka->kr.name);
	ret = coord_auth_get(ka->coord, ka->kr.secret, ka->kr.name, &e);
	if (ret == -EBADMSG)
		return cli_fail("%s: the keyring %s holds another cluster's secret", what,
				ka->path);
	if (ret == -ENOENT)
		return cli_fail("%s: needs an admin key (%s is not a key of this cluster)",
				what, ka->kr.name);
	if (ret)
		return cli_fail("%s: cannot read the key of %s: %s", what, ka->kr.name,
				strerror(-ret));
	if (!(e.caps.flags & AUTH_CAP_ADMIN))
		return cli_fail("%s: needs an admin key (this keyring is %s)", what,
				ka->kr.name);
	if (!ent_accepts(&e, ka->kr.key, keyadm_now_ms()))
		return cli_fail("%s: the key of %s in %s was rotated or replaced (get the "
				"current one with sdfs auth get)", what, ka->kr.name, ka->path);
	return 0;
}

/* Is the cluster formatted with --auth none? 1 or 0 (also if it
 * cannot be told). */
static int open_cluster(struct keyadm *ka)
{
	struct cluster_config cfg;
	char err[512];
	int none;

	if (keyadm_connect_quiet(ka, err, sizeof(err)))
		return 0;
	none = coord_config_get(ka->coord, &cfg) == 0 && cfg.auth == CMAP_AUTH_NONE;
	coord_close(ka->coord);
	ka->coord = NULL;
	return none;
}

int keyadm_open(const struct cli *cli, const char *what, struct keyadm *ka)
{
	int ret;

	if ((ret = keyadm_conf(cli, ka)))
		return ret;
	if (!ka->path[0] || access(ka->path, F_OK)) {
		if (open_cluster(ka))
			return cli_fail("%s: the cluster is formatted with --auth none: it has "
					"no keys", what);
		if (!ka->path[0])
			return cli_fail("%s: no keyring (set keyring = in %s, or use "
					"--keyring FILE)", what, ka->conf_path);
	}
	if ((ret = keyadm_load(ka, what)))
		return ret;
	if (!ka->kr.has_secret)         /* say so before ZooKeeper is asked */
		return cli_fail("%s: needs an admin key (this keyring is %s)", what,
				ka->kr.name);
	if ((ret = keyadm_connect(ka, what)))
		return ret;
	if ((ret = keyadm_check_admin(ka, what))) {
		keyadm_close(ka);
		return ret;
	}
	return 0;
}

void keyadm_close(struct keyadm *ka)
{
	coord_close(ka->coord);
	ka->coord = NULL;
	sodium_memzero(&ka->kr, sizeof(ka->kr));
	ka->loaded = 0;
}

void keyadm_new_ent(const char *name, const struct auth_caps *caps,
		    struct keydb_ent *e)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	auth_random_key(e->key);
	e->caps = *caps;
	e->gen = 1;
}

void keyadm_keyring_of(const struct keydb_ent *e,
		       const uint8_t secret[AUTH_KEY_BYTES], struct keyring *kr)
{
	int priv = auth_caps_privileged(&e->caps);

	memset(kr, 0, sizeof(*kr));
	snprintf(kr->name, sizeof(kr->name), "%s", e->name);
	memcpy(kr->key, e->key, AUTH_KEY_BYTES);
	if (auth_caps_format(&e->caps, kr->caps, sizeof(kr->caps)))
		kr->caps[0] = '\0';
	if (priv) {
		kr->has_secret = 1;
		memcpy(kr->secret, secret, AUTH_KEY_BYTES);
	}
	auth_zk_password(secret, priv, kr->zk_pw);
}

static void tmp_path(const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s.new", path);
}

static int format_begin(const char *path, struct keyring *kr, char *err, size_t errlen)
{
	uint8_t secret[AUTH_KEY_BYTES];
	struct keydb_ent e;
	struct auth_caps caps;
	char tmp[PATH_MAX + 8], why[256];
	int ret;

	if (auth_caps_parse("admin", &caps, why, sizeof(why))) {
		snprintf(err, errlen, "caps admin: %s", why);
		return -EINVAL;
	}
	auth_random_key(secret);
	keyadm_new_ent("client.admin", &caps, &e);
	keyadm_keyring_of(&e, secret, kr);
	tmp_path(path, tmp, sizeof(tmp));
	ret = keyring_save(tmp, kr);
	if (ret)
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(-ret));
	return ret;
}

static int format_commit(struct coord *c, const char *path, const struct keyring *kr,
			 char *err, size_t errlen)
{
	struct keydb_ent e = { .gen = 1 };
	char tmp[PATH_MAX + 8], why[256];
	int ret;

	snprintf(e.name, sizeof(e.name), "%s", kr->name);
	memcpy(e.key, kr->key, AUTH_KEY_BYTES);
	if (auth_caps_parse(kr->caps, &e.caps, why, sizeof(why))) {
		snprintf(err, errlen, "caps %s: %s", kr->caps, why);
		return -EINVAL;
	}
	ret = coord_auth_put(c, kr->secret, &e);
	if (ret) {
		snprintf(err, errlen, "cannot store the key %s: %s", e.name, strerror(-ret));
		return ret;
	}
	tmp_path(path, tmp, sizeof(tmp));
	if (rename(tmp, path)) {
		ret = -errno;
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path,
			 strerror(errno));
	}
	return ret;
}

static void format_abort(const char *path)
{
	char tmp[PATH_MAX + 8];

	tmp_path(path, tmp, sizeof(tmp));
	unlink(tmp);
}

void keyadm_cluster_config(struct cluster_config *cfg, unsigned copies,
			   uint32_t obj_size, uint32_t out_grace_ms, int auth)
{
	uint8_t b[AUTH_KEY_BYTES];

	memset(cfg, 0, sizeof(*cfg));
	cfg->copies = copies;
	cfg->obj_size = obj_size;
	cfg->out_grace_ms = out_grace_ms;
	cfg->created = (uint64_t)time(NULL);
	cfg->auth = auth ? CMAP_AUTH_REQUIRED : CMAP_AUTH_NONE;
	auth_random_key(b);             /* a version 4 uuid */
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(cfg->uuid, sizeof(cfg->uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4],
		 b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int keyadm_format_new(struct keyadm *ka, const struct cluster_config *cfg, int force,
		      char *err, size_t errlen)
{
	struct keyring kr;
	int ret;

	keyadm_close(ka);
	if ((ret = format_begin(ka->path, &kr, err, errlen)))
		return ret;
	ka->kr = kr;
	ka->loaded = 1;
	sodium_memzero(&kr, sizeof(kr));
	if (keyadm_connect_quiet(ka, err, errlen)) {
		format_abort(ka->path);
		return -EIO;
	}
	ret = coord_format(ka->coord, cfg, force);
	if (ret)
		snprintf(err, errlen, "%s", ret == -EEXIST ? "cluster is already formatted "
			 "(use --force to reformat: existing data becomes unreachable)" :
			 strerror(-ret));
	else
		ret = format_commit(ka->coord, ka->path, &ka->kr, err, errlen);
	if (ret) {
		format_abort(ka->path);
		keyadm_close(ka);
	}
	return ret;
}

int keyadm_ensure(struct keyadm *ka, const char *name, const char *caps_s,
		  const char *file, char *err, size_t errlen)
{
	struct keydb_ent cur, e;
	struct auth_caps caps;
	struct keyring have, kr;
	char why[256];
	int ret;

	if (auth_caps_parse(caps_s, &caps, why, sizeof(why))) {
		snprintf(err, errlen, "caps %s: %s", caps_s, why);
		return -EINVAL;
	}
	ret = coord_auth_get(ka->coord, ka->kr.secret, name, &cur);
	if (ret && ret != -ENOENT && ret != -EBADMSG) {
		snprintf(err, errlen, "cannot read the key of %s: %s", name, strerror(-ret));
		return ret;
	}
	if (!ret && keyring_load(file, &have, why, sizeof(why)) == 0 &&
	    !strcmp(have.name, name) &&
	    !memcmp(have.key, cur.key, AUTH_KEY_BYTES) &&
	    have.has_secret == auth_caps_privileged(&cur.caps) &&
	    (!have.has_secret || !memcmp(have.secret, ka->kr.secret, AUTH_KEY_BYTES)))
		return 0;       /* the same key: keep it */
	keyadm_new_ent(name, &caps, &e);
	if (!ret)
		e.gen = cur.gen + 1;
	ret = coord_auth_put(ka->coord, ka->kr.secret, &e);
	if (ret) {
		snprintf(err, errlen, "cannot store the key %s: %s", name, strerror(-ret));
		return ret;
	}
	keyadm_keyring_of(&e, ka->kr.secret, &kr);
	ret = keyring_save(file, &kr);
	if (ret)
		snprintf(err, errlen, "cannot write %s: %s", file, strerror(-ret));
	return ret;
}
