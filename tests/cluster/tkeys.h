/*
 * tkeys.h - keys for cluster tests on a keyed dev cluster (issue 15):
 * entries put straight into ZooKeeper with the cluster secret, client
 * keyrings, and restarting a daemon so it reads what changed.
 * criterion asserts on failure; any thread of a test.
 */
#ifndef SDFS_TESTS_CLUSTER_TKEYS_H
#define SDFS_TESTS_CLUSTER_TKEYS_H
#include <stdint.h>

#include "common/conf.h"
#include "common/coord.h"
#include "common/keys.h"
#include "tests/cluster/fixture.h"

/* Put key @name (@key, caps text @caps) into the cluster's key table,
 * sealed with @secret, through the admin session @c. */
void tkeys_put(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES], const char *name,
	       const uint8_t *key, const char *caps);
/* Write a client keyring at @path: @name, @key and the ZooKeeper
 * password of clients (from @secret), as `sdfs auth get` writes it. */
void tkeys_save_client(const char *path, const uint8_t secret[AUTH_KEY_BYTES],
		       const char *name, const uint8_t *key);
/* A libsdfs handle on @tc's cluster (@conf: its sdfs.conf) as client
 * key @name (@key), through a keyring written to DIR/NAME.keyring;
 * the caller closes it. */
struct sdfs *tkeys_handle(struct tcluster *tc, const struct sdfs_conf *conf,
			  const uint8_t secret[AUTH_KEY_BYTES], const char *name,
			  const uint8_t *key);
/* SIGKILL daemon @name of @tc and start it again (`sdfs dev start`). */
void tkeys_dev_restart(struct tcluster *tc, const char *name);
#endif
