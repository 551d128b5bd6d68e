/*
 * client.c - libsdfs handles: connecting, following the cluster map,
 * formatting and describing the cluster.
 *
 * The map is re-read lazily: a ZooKeeper watch only marks it stale, and
 * the next call that needs it reads it (so the ZooKeeper thread never
 * blocks). Calls hold a reference to the map they started with.
 */
#include "libclient/client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "common/auth.h"
#include "common/conf.h"
#include "common/log.h"
#include "common/net.h"
#include "common/rpc.h"

static sdfs_log_fn user_log;
static void *user_log_arg;

static void log_to_user(int level, const char *msg, void *arg)
{
	(void)arg;
	if (user_log)
		user_log(level, msg, user_log_arg);
}

void sdfs_set_log(sdfs_log_fn fn, void *arg, int max_level)
{
	user_log = fn;
	user_log_arg = arg;
	log_level = max_level;
	log_set_sink(log_to_user, NULL);
}

static void on_coord_event(enum coord_event ev, void *arg)
{
	struct sdfs *s = arg;

	if (ev == COORD_EV_EXPIRED) {
		atomic_store(&s->expired, 1);
		atomic_fetch_add(&s->session_gen, 1);   /* lock identity lost */
	}
	if (ev == COORD_EV_MAP || ev == COORD_EV_CONNECTED || ev == COORD_EV_EXPIRED)
		atomic_store(&s->map_stale, 1);
	if (ev == COORD_EV_MDS_ACTIVE || ev == COORD_EV_CONNECTED || ev == COORD_EV_EXPIRED) {
		atomic_store(&s->mds_changed, 1);
		atomic_fetch_add(&s->mds_gen, 1);
	}
}

uint64_t client_req_id(struct sdfs *s)
{
	return atomic_fetch_add(&s->next_req_id, 1);
}

void client_backoff(int attempt, int64_t deadline)
{
	int64_t ms = 20 << (attempt < 5 ? attempt : 5), left = deadline - net_now_ms();

	if (ms > 500)
		ms = 500;
	if (ms > left)
		ms = left;
	if (ms > 0)
		usleep((useconds_t)ms * 1000);
}

void client_map_put(struct map_ref *m)
{
	if (m && atomic_fetch_sub(&m->refs, 1) == 1) {
		cmap_free(m->map);
		free(m);
	}
}

void client_coord_renew(struct sdfs *s)
{
	/* A lost connection comes back by itself; an expired session never
	 * does: its handle answers nothing until replaced. */
	if (atomic_exchange(&s->expired, 0) && coord_reopen(s->coord, s->timeout_ms))
		atomic_store(&s->expired, 1);
}

/* Read config (once) and map from ZooKeeper and install them. */
int client_map_refresh(struct sdfs *s)
{
	struct cmap *map = NULL;
	struct cluster_config cfg;
	int ret;

	client_coord_renew(s);
	atomic_store(&s->map_stale, 0);
	ret = coord_config_get(s->coord, &cfg);
	if (!ret)
		ret = coord_map_get(s->coord, 1, &map);
	if (ret) {
		atomic_store(&s->map_stale, 1);
		return ret;
	}
	struct map_ref *ref = malloc(sizeof(*ref));
	if (!ref) {
		cmap_free(map);
		atomic_store(&s->map_stale, 1);
		return -ENOMEM;
	}
	ref->map = map;
	atomic_init(&ref->refs, 1);
	pthread_mutex_lock(&s->lock);
	struct map_ref *old = s->map;
	if (!old || map->epoch >= old->map->epoch || strcmp(cfg.uuid, s->cfg.uuid)) {
		s->map = ref;
		ref = old;
	}
	s->cfg = cfg;
	s->formatted = 1;
	pthread_mutex_unlock(&s->lock);
	/* the cluster says whether connections authenticate */
	pool_set_auth(s->pool, cfg.auth == CMAP_AUTH_REQUIRED,
		      s->have_cred ? &s->cred : NULL);
	client_map_put(ref);
	return 0;
}

struct map_ref *client_map_get(struct sdfs *s, int *err)
{
	struct map_ref *m;

	if (atomic_load(&s->map_stale) || !s->map) {
		int ret = client_map_refresh(s);

		if (ret && !s->map) {
			*err = ret;
			return NULL;
		}
	}
	pthread_mutex_lock(&s->lock);
	m = s->map;
	if (m)
		atomic_fetch_add(&m->refs, 1);
	pthread_mutex_unlock(&s->lock);
	if (!m)
		*err = -ENOENT;
	return m;
}

int client_config(struct sdfs *s, struct cluster_config *cfg)
{
	int err = 0;
	struct map_ref *m = client_map_get(s, &err);

	if (!m)
		return err;
	pthread_mutex_lock(&s->lock);
	*cfg = s->cfg;
	pthread_mutex_unlock(&s->lock);
	client_map_put(m);
	return 0;
}

int client_auth(struct sdfs *s, int fd, int timeout_ms, struct auth_sess *sess)
{
	char err[256];
	int on, ret;

	memset(sess, 0, sizeof(*sess));
	pthread_mutex_lock(&s->lock);
	on = s->formatted && s->cfg.auth == CMAP_AUTH_REQUIRED;
	pthread_mutex_unlock(&s->lock);
	if (!on)
		return 0;
	if (!s->have_cred) {
		log_every(LOG_EVERY_MS, LOG_WARNING, "the cluster requires "
			  "authentication and this process has no key (keyring =, "
			  "docs/config.md)");
		return -EACCES;
	}
	struct auth_cred cred = s->cred;

	if (s->keyfile)
		auth_keyfile_cred(s->keyfile, &cred);
	char caps[AUTH_CAPS_STR_MAX] = "";

	ret = auth_client_run(fd, &cred, timeout_ms, sess, caps, sizeof(caps), err,
			      sizeof(err));
	if (ret == 0) {
		pthread_mutex_lock(&s->lock);
		snprintf(s->key_name, sizeof(s->key_name), "%s", cred.name);
		snprintf(s->key_caps, sizeof(s->key_caps), "%s", caps);
		pthread_mutex_unlock(&s->lock);
	}
	sodium_memzero(&cred, sizeof(cred));
	if (ret == -EACCES || ret == -EPROTONOSUPPORT)
		log_every(LOG_EVERY_MS, LOG_WARNING, "authentication: %s", err);
	return ret;
}

/* Copy what the last handshake said; 0, or -ENOENT before one. */
static int key_caps_known(struct sdfs *s, char *name, size_t namelen, char *caps,
			  size_t capslen)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&s->lock);
	if (s->key_name[0]) {
		snprintf(name, namelen, "%s", s->key_name);
		snprintf(caps, capslen, "%s", s->key_caps);
		ret = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int sdfs_key_caps(struct sdfs *s, char *name, size_t namelen, char *caps,
		  size_t capslen)
{
	struct cluster_config cfg;
	struct sdfs_stat st;
	int ret;

	if (!key_caps_known(s, name, namelen, caps, capslen))
		return 0;
	ret = client_config(s, &cfg);
	if (ret)
		return ret;
	if (cfg.auth != CMAP_AUTH_REQUIRED || !s->have_cred)
		return -ENOENT;         /* no handshake: nothing restricted */
	snprintf(name, namelen, "%s", s->cred.name);
	/* a connection to the mds shakes hands; what it answers (a path=
	 * that is gone: ENOENT) does not matter here */
	ret = sdfs_ns_getattr(s, SDFS_ROOT_INO, &st);
	if (!key_caps_known(s, name, namelen, caps, capslen))
		return 0;
	return ret ? ret : -EIO;
}

int sdfs_connect(const char *zk_hosts, const char *cluster, int timeout_ms,
		 struct sdfs **out, char *err, size_t errlen)
{
	return sdfs_connect_keyring(zk_hosts, cluster, timeout_ms, NULL, out, err,
				    errlen);
}

/* sdfs_connect_keyring with the keyring at @path already read (@kr
 * NULL: none). */
static int connect_kr(const char *zk_hosts, const char *cluster, int timeout_ms,
		      const char *path, const struct keyring *kr, struct sdfs **out,
		      char *err, size_t errlen)
{
	struct coord_cred cred, *credp = NULL;
	struct sdfs *s;
	int ret;

	if (!conf_name_ok(cluster)) {
		if (err)
			snprintf(err, errlen, "bad cluster name '%s'", cluster);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (kr) {
		auth_cred_of(kr, &s->cred);
		s->have_cred = 1;
		if (coord_cred_from_keyring(kr, &cred) == 0)
			credp = &cred;
	}
	s->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
	atomic_init(&s->replica_timeout_ms, 1500);
	s->read_timeout_ms = SDFS_READ_TIMEOUT_MS;
	atomic_init(&s->ec_seal_after_s, SDFS_EC_SEAL_AFTER_S);
	snprintf(s->cluster, sizeof(s->cluster), "%s", cluster);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->lock_mu, NULL);
	pthread_mutex_init(&s->late_mu, NULL);
	pthread_mutex_init(&s->wake_mu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s->wake_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	atomic_init(&s->next_req_id, ((uint64_t)getpid() << 32) | 1);
	atomic_init(&s->map_stale, 1);
	ret = pool_new(&s->pool);
	if (ret)
		goto out_free;
	if (kr && auth_keyfile_open(path, &s->keyfile, NULL, 0) == 0)
		pool_set_keyfile(s->pool, s->keyfile);
	ret = coord_open_cred(zk_hosts, cluster, credp, 2000, s->timeout_ms,
			      on_coord_event, s, &s->coord);
	if (ret) {
		if (err && ret == -EACCES)
			snprintf(err, errlen, "ZooKeeper at %s refused %s: this "
				 "cluster needs a key of its own (keyring = in the "
				 "config, --keyring FILE or $SDFS_KEYRING; sdfs auth get)",
				 zk_hosts, credp ? "this keyring's password" :
				 "a process without a keyring");
		else if (err)
			snprintf(err, errlen, "cannot reach ZooKeeper at %s: %s",
				 zk_hosts, strerror(-ret));
		goto out_pool;
	}
	client_map_refresh(s);  /* -ENOENT: not formatted yet, that is fine */
	*out = s;
	return 0;
out_pool:
	pool_free(s->pool);
	auth_keyfile_free(s->keyfile);
out_free:
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->lock_mu);
	pthread_mutex_destroy(&s->late_mu);
	pthread_mutex_destroy(&s->wake_mu);
	pthread_cond_destroy(&s->wake_cond);
	free(s);
	return ret;
}

int sdfs_connect_keyring(const char *zk_hosts, const char *cluster, int timeout_ms,
			 const char *keyring, struct sdfs **out, char *err,
			 size_t errlen)
{
	struct keyring kr;
	char buf[512];
	int ret;

	if (!keyring)
		return connect_kr(zk_hosts, cluster, timeout_ms, NULL, NULL, out, err,
				  errlen);
	ret = keyring_load(keyring, &kr, buf, sizeof(buf));
	if (ret) {
		if (err)
			snprintf(err, errlen, "%s", buf);
		return ret;
	}
	ret = connect_kr(zk_hosts, cluster, timeout_ms, keyring, &kr, out, err, errlen);
	sodium_memzero(&kr, sizeof(kr));
	return ret;
}

int sdfs_open(const char *conf_file, struct sdfs **out, char *err, size_t errlen)
{
	struct sdfs_conf conf;
	struct keyring kr;
	char buf[512];
	int ret, have;

	conf_init(&conf);
	ret = conf_load(conf_path(conf_file), &conf, buf, sizeof(buf));
	if (ret) {
		if (err)
			snprintf(err, errlen, "%s", buf);
		return ret;
	}
	const char *env = getenv("SDFS_KEYRING");

	ret = auth_keyring_open(env, conf.keyring, conf.keyring_set, &kr, buf,
				sizeof(buf));
	if (ret && ret != -ENOENT) {
		if (err)
			snprintf(err, errlen, "%s", buf);
		return ret;
	}
	have = ret == 0;
	ret = connect_kr(conf.zk, conf.cluster, conf.timeout_ms,
			 env && *env ? env : conf.keyring, have ? &kr : NULL, out, err,
			 errlen);
	sodium_memzero(&kr, sizeof(kr));
	if (ret == 0)
		sdfs_set_conf(*out, &conf);
	return ret;
}

void sdfs_set_conf(struct sdfs *s, const struct sdfs_conf *c)
{
	sdfs_set_replica_timeout(s, c->replica_timeout_ms);
	sdfs_set_read_timeout(s, c->read_timeout_ms);
	sdfs_set_ec_seal_after(s, c->ec_seal_after_s);
}

void sdfs_close(struct sdfs *s)
{
	if (!s)
		return;
	notify_stop(s);         /* its thread uses coord and the client id */
	holds_free(s->holds);
	capcache_free(atomic_load(&s->caps));
	nsclient_free(s->ns);
	coord_close(s->coord);
	client_map_put(s->map);
	pool_free(s->pool);
	auth_keyfile_free(s->keyfile);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->lock_mu);
	pthread_mutex_destroy(&s->late_mu);
	pthread_mutex_destroy(&s->wake_mu);
	pthread_cond_destroy(&s->wake_cond);
	free(s);
}

void sdfs_set_ec_seal_after(struct sdfs *s, int secs)
{
	if (secs >= 0)
		atomic_store(&s->ec_seal_after_s, secs);
}

void sdfs_set_read_timeout(struct sdfs *s, int timeout_ms)
{
	if (timeout_ms > 0)
		s->read_timeout_ms = timeout_ms;
}

void sdfs_set_timeout(struct sdfs *s, int timeout_ms)
{
	if (timeout_ms > 0)
		s->timeout_ms = timeout_ms;
}

void sdfs_set_replica_timeout(struct sdfs *s, int timeout_ms)
{
	if (timeout_ms > 0)
		atomic_store(&s->replica_timeout_ms, timeout_ms);
}

uint32_t sdfs_obj_size(struct sdfs *s)
{
	struct cluster_config cfg;

	return client_config(s, &cfg) ? 0 : cfg.obj_size;
}

static void make_uuid(char *out, size_t len)
{
	int fd = open("/proc/sys/kernel/random/uuid", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n < 36) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(out, len, "%08lx-0000-4000-8000-%012lx",
			 (unsigned long)ts.tv_sec, (unsigned long)ts.tv_nsec ^ getpid());
		return;
	}
	out[36] = '\0';
}

int sdfs_cluster_format(struct sdfs *s, unsigned copies, uint32_t obj_size,
			uint32_t out_grace_ms, int force)
{
	struct cluster_config cfg = { .copies = copies, .obj_size = obj_size,
		.out_grace_ms = out_grace_ms ? out_grace_ms : CMAP_DEFAULT_OUT_GRACE_MS };
	int ret;

	if (copies == 0 || copies > RING_MAX_COPIES || obj_size < 4096 ||
	    obj_size % 4096 || obj_size > (64u << 20))
		return -EINVAL;
	make_uuid(cfg.uuid, sizeof(cfg.uuid));
	cfg.created = (uint64_t)time(NULL);
	ret = coord_format(s->coord, &cfg, force);
	if (ret == 0)
		atomic_store(&s->map_stale, 1);
	return ret;
}

int sdfs_cluster_info(struct sdfs *s, struct sdfs_cluster_info *info)
{
	int err = 0;
	struct map_ref *m;

	/* Always fresh: this is what status commands show. */
	atomic_store(&s->map_stale, 1);
	m = client_map_get(s, &err);
	if (!m)
		return err;
	memset(info, 0, sizeof(*info));
	pthread_mutex_lock(&s->lock);
	snprintf(info->uuid, sizeof(info->uuid), "%s", s->cfg.uuid);
	info->copies = s->cfg.copies;
	info->obj_size = s->cfg.obj_size;
	info->created = s->cfg.created;
	info->out_grace_ms = s->cfg.out_grace_ms;
	pthread_mutex_unlock(&s->lock);
	info->epoch = m->map->epoch;
	info->nodes = (unsigned)m->map->n;
	for (size_t i = 0; i < m->map->n; i++)
		info->nodes_up += m->map->nodes[i].state == CMAP_UP;
	client_map_put(m);
	return 0;
}
