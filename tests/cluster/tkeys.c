/* tkeys.c - keys for cluster tests (tkeys.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/coord_auth.h"
#include "common/keydb.h"
#include "tests/cluster/tkeys.h"

void tkeys_put(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES], const char *name,
	       const uint8_t *key, const char *caps)
{
	struct keydb_ent e = { 0 };
	char err[128];

	snprintf(e.name, sizeof(e.name), "%s", name);
	memcpy(e.key, key, AUTH_KEY_BYTES);
	cr_assert_eq(auth_caps_parse(caps, &e.caps, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(coord_auth_put(c, secret, &e), 0);
}

void tkeys_save_client(const char *path, const uint8_t secret[AUTH_KEY_BYTES],
		       const char *name, const uint8_t *key)
{
	struct keyring kr = { 0 };

	snprintf(kr.name, sizeof(kr.name), "%s", name);
	memcpy(kr.key, key, AUTH_KEY_BYTES);
	auth_zk_password(secret, 0, kr.zk_pw);
	cr_assert_eq(keyring_save(path, &kr), 0, "%s", path);
}

struct sdfs *tkeys_handle(struct tcluster *tc, const struct sdfs_conf *conf,
			  const uint8_t secret[AUTH_KEY_BYTES], const char *name,
			  const uint8_t *key)
{
	char path[512], err[256];
	struct sdfs *s;

	snprintf(path, sizeof(path), "%s/%s.keyring", tcluster_dir(tc), name);
	tkeys_save_client(path, secret, name, key);
	cr_assert_eq(sdfs_connect_keyring(conf->zk, conf->cluster, 10000, path, &s, err,
					  sizeof(err)), 0, "%s", err);
	return s;
}

void tkeys_dev_restart(struct tcluster *tc, const char *name)
{
	char *out = NULL, *err = NULL;
	int ret;

	cr_assert_eq(tcluster_kill(tc, name), 0);
	ret = tsdfs_run(&out, &err, "dev start --dir %s %s", tcluster_dir(tc), name);
	cr_assert_eq(ret, 0, "dev start %s: %s%s", name, out, err);
	free(out);
	free(err);
}
