/*
 * coord_zk.c - coord.h on libzookeeper-mt.
 *
 * One global watcher turns ZooKeeper events into coord events; it runs
 * on the library's completion thread and only calls the user's fn.
 * Synchronous ZooKeeper calls are used from callers' threads.
 */
#include "common/coord.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "common/coord_int.h"
#include "common/log.h"
#include "common/net.h"

int coord_zerr(int rc)
{
	switch (rc) {
	case ZOK: return 0;
	case ZNONODE: return -ENOENT;
	case ZNODEEXISTS: return -EEXIST;
	case ZBADVERSION: return -EAGAIN;
	case ZNOTEMPTY: return -ENOTEMPTY;
	case ZBADARGUMENTS: return -EINVAL;
	case ZNOAUTH: case ZAUTHFAILED: return -EACCES;
	case ZCONNECTIONLOSS: case ZOPERATIONTIMEOUT: return -ETIMEDOUT;
	case ZSESSIONEXPIRED: case ZINVALIDSTATE: case ZCLOSING: return -ESHUTDOWN;
	default: return -EIO;
	}
}

/*
 * The library's own log (zookeeper_init2's callback). It is chatty at
 * INFO, and while its server is away it reports every refused or timed
 * out reconnect, several a second per handle: those come at most once
 * per LOG_EVERY_MS with a count, other errors at most once a second.
 * Its own timestamp and thread prefix are dropped (ours has both).
 */
static void zk_log(const char *msg)
{
	const char *zoo = strstr(msg, "ZOO_");

	if (zoo)
		msg = zoo;
	if (!strstr(msg, "ERROR"))
		log_debug("zookeeper: %s", msg);
	else if (strstr(msg, "errno=111") || strstr(msg, "errno=110") ||
		 strstr(msg, "refused") || strstr(msg, "timed out"))
		log_every(LOG_EVERY_MS, LOG_WARNING, "zookeeper: %s", msg);
	else
		log_every(1000, LOG_WARNING, "zookeeper: %s", msg);
}

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct coord *c = ctx;
	size_t alen = strlen(c->p_auth);
	(void)zh;

	if (type == ZOO_SESSION_EVENT) {
		pthread_mutex_lock(&c->lock);
		c->state = state;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		if (state == ZOO_CONNECTED_STATE)
			coord_auth_event(c, NULL);      /* reload: watches may be gone */
		if (!c->fn)
			return;
		if (state == ZOO_CONNECTED_STATE)
			c->fn(COORD_EV_CONNECTED, c->arg);
		else if (state == ZOO_CONNECTING_STATE)
			c->fn(COORD_EV_CONNECTING, c->arg);
		else if (state == ZOO_EXPIRED_SESSION_STATE)
			c->fn(COORD_EV_EXPIRED, c->arg);
		return;
	}
	if (path && !strncmp(path, c->p_auth, alen) &&
	    (path[alen] == '\0' || path[alen] == '/')) {
		coord_auth_event(c, path);
		return;
	}
	if (!c->fn || !path)
		return;
	if (type == ZOO_CHILD_EVENT && strcmp(path, c->p_members) == 0)
		c->fn(COORD_EV_MEMBERS, c->arg);
	else if (strcmp(path, c->p_map) == 0)
		c->fn(COORD_EV_MAP, c->arg);
	else if (strcmp(path, c->p_mds_epoch) == 0)
		c->fn(COORD_EV_MDS_EPOCH, c->arg);
	else if (strcmp(path, c->p_mds_active) == 0)
		c->fn(COORD_EV_MDS_ACTIVE, c->arg);
	else if (strncmp(path, c->p_suspects, strlen(c->p_suspects)) == 0 &&
		 (path[strlen(c->p_suspects)] == '\0' || path[strlen(c->p_suspects)] == '/'))
		c->fn(COORD_EV_SUSPECTS, c->arg);
}

static int wait_connected(struct coord *c, int timeout_ms)
{
	struct timespec dl;
	int ret = 0;

	net_time_in(CLOCK_REALTIME, timeout_ms, &dl);
	pthread_mutex_lock(&c->lock);
	while (c->state != ZOO_CONNECTED_STATE && ret == 0) {
		if (c->state == ZOO_EXPIRED_SESSION_STATE ||
		    c->state == ZOO_AUTH_FAILED_STATE)
			ret = -ESHUTDOWN;
		else
			ret = pthread_cond_timedwait(&c->cond, &c->lock, &dl)
				? -ETIMEDOUT : 0;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Add our credentials to the new handle: queued, sent first when the
 * connection is up (and again on every reconnection of this handle),
 * before any request of ours. zoo_add_auth refuses (ZINVALIDSTATE)
 * while the handle is between two servers (state 0: the one it tried
 * refused or closed, the next is not tried yet), as for a closed
 * handle; with a listed server down that is where the library's thread
 * often is when we come here. Again every 10 ms until @end.
 */
static int cred_apply_wait(struct coord *c, int64_t end)
{
	for (;;) {
		int ret = coord_cred_apply(c), state = zoo_state(c->zh);

		if (ret != -ESHUTDOWN || state == ZOO_EXPIRED_SESSION_STATE ||
		    state == ZOO_AUTH_FAILED_STATE)
			return ret;
		if (mono_ms() >= end)
			return -ETIMEDOUT;
		usleep(10 * 1000);
	}
}

static int connect_session(struct coord *c, int timeout_ms)
{
	int64_t end = mono_ms() + timeout_ms;
	int ret;

	c->state = 0;
	c->zh = zookeeper_init2(c->hosts, watcher, c->session_ms, NULL, c, 0, zk_log);
	if (!c->zh)
		return errno ? -errno : -EINVAL;
	ret = cred_apply_wait(c, end);
	if (!ret)
		ret = wait_connected(c, (int)(end - mono_ms()));
	if (ret) {
		zookeeper_close(c->zh);
		c->zh = NULL;
	}
	return ret;
}

/* What coord_open does once connected: the credentials' kind, and the
 * base directories. 0 or -errno (-ETIMEDOUT: the connection was lost). */
static int open_setup(struct coord *c)
{
	int ret = coord_cred_detect(c);

	if (ret)
		return ret;
	char p_clients[PATH_MAX_LEN], p_vols[PATH_MAX_LEN];
	char p_fence[PATH_MAX_LEN], p_locks[PATH_MAX_LEN];
	snprintf(p_clients, sizeof(p_clients), "%s/clients", c->base);
	snprintf(p_vols, sizeof(p_vols), "%s/vols", c->base);
	snprintf(p_fence, sizeof(p_fence), "%s/vols/fence", c->base);
	snprintf(p_locks, sizeof(p_locks), "%s/vols/locks", c->base);
	const struct {
		const char *path;
		enum coord_acl_kind kind;
	} dirs[] = {
		{ c->p_members, COORD_ACL_READ }, { c->p_epochs, COORD_ACL_READ },
		{ c->p_nodeids, COORD_ACL_ADMIN }, { c->p_mds, COORD_ACL_READ },
		{ c->p_mds_elect, COORD_ACL_READ }, { c->p_suspects, COORD_ACL_SUSPECTS },
		/* where clients create nodes: made here, as a client of a
		 * secured cluster may not */
		{ p_clients, COORD_ACL_DIR }, { p_vols, COORD_ACL_READ },
		{ p_fence, COORD_ACL_FENCES }, { p_locks, COORD_ACL_DIR },
		{ c->p_auth, COORD_ACL_ADMIN },
	};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (dirs[i].path == c->p_auth && c->cred != COORD_CRED_ADMIN)
			continue;
		ret = coord_ensure(c, dirs[i].path, dirs[i].kind);
		/* A client of a secured cluster may not make a missing
		 * directory: its calls that need it fail instead. */
		if (ret == -EACCES && c->secured && c->cred != COORD_CRED_ADMIN) {
			log_warn("zookeeper: %s is missing and we may not create it",
				 dirs[i].path);
			ret = 0;
		}
		if (ret)
			return ret;
	}
	return 0;
}

int coord_open(const char *hosts, const char *name, int session_ms,
	       int timeout_ms, coord_event_fn fn, void *arg, struct coord **out)
{
	return coord_open_cred(hosts, name, NULL, session_ms, timeout_ms, fn, arg, out);
}

int coord_open_cred(const char *hosts, const char *name,
		    const struct coord_cred *cred, int session_ms,
		    int timeout_ms, coord_event_fn fn, void *arg,
		    struct coord **out)
{
	struct coord *c;
	int64_t end;
	int ret;

	if (strlen(hosts) >= sizeof(c->hosts) || strlen(name) > 64)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	strcpy(c->hosts, hosts);
	c->session_ms = session_ms;
	c->fn = fn;
	c->arg = arg;
	snprintf(c->base, sizeof(c->base), "/sdfs/%s", name);
	snprintf(c->p_config, PATH_MAX_LEN, "%s/config", c->base);
	snprintf(c->p_members, PATH_MAX_LEN, "%s/members", c->base);
	snprintf(c->p_map, PATH_MAX_LEN, "%s/map", c->base);
	snprintf(c->p_epochs, PATH_MAX_LEN, "%s/epochs", c->base);
	snprintf(c->p_nodeids, PATH_MAX_LEN, "%s/nodeids", c->base);
	snprintf(c->p_mds, PATH_MAX_LEN, "%s/mds", c->base);
	snprintf(c->p_mds_elect, PATH_MAX_LEN, "%s/mds/election", c->base);
	snprintf(c->p_mds_epoch, PATH_MAX_LEN, "%s/mds/epoch", c->base);
	snprintf(c->p_mds_active, PATH_MAX_LEN, "%s/mds/active", c->base);
	snprintf(c->p_suspects, PATH_MAX_LEN, "%s/suspects", c->base);
	snprintf(c->p_auth, PATH_MAX_LEN, "%s/auth", c->base);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	pthread_rwlock_init(&c->zlock, NULL);
	zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);

	ret = coord_cred_init(c, cred);
	if (ret)
		goto out_free;
	end = mono_ms() + timeout_ms;
	ret = connect_session(c, timeout_ms);
	if (ret)
		goto out_free;
	/* A server that stalls longer than the session's receive timeout
	 * (a loaded host), or one that leaves the ensemble (it died, an
	 * election), loses the connection under a request: the handle
	 * reconnects to another listed server (or, its session expired,
	 * we make another) and open_setup runs again, until @timeout_ms is
	 * over. */
	for (;;) {
		int64_t left;

		ret = open_setup(c);
		left = end - mono_ms();
		if ((ret != -ETIMEDOUT && (ret != -ESHUTDOWN ||
		     zoo_state(c->zh) != ZOO_EXPIRED_SESSION_STATE)) || left <= 0)
			break;
		log_warn("zookeeper: %s while opening %s; again", ret == -ESHUTDOWN ?
			 "session expired" : "connection lost", c->base);
		usleep(100 * 1000);     /* the session event may be on its way */
		ret = wait_connected(c, (int)left);
		if (ret == -ESHUTDOWN) {
			zookeeper_close(c->zh);
			ret = connect_session(c, (int)left);    /* zh NULL if not */
		}
		if (ret)
			break;
	}
	if (ret)
		goto out_close;
	*out = c;
	return 0;
out_close:
	if (c->zh)
		zookeeper_close(c->zh);
out_free:
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	pthread_rwlock_destroy(&c->zlock);
	free(c);
	return ret;
}

int coord_reopen(struct coord *c, int timeout_ms)
{
	int ret;

	pthread_rwlock_wrlock(&c->zlock);
	if (c->zh)
		zookeeper_close(c->zh);
	c->zh = NULL;
	ret = connect_session(c, timeout_ms);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

void coord_close(struct coord *c)
{
	if (!c)
		return;
	coord_auth_stop(c);
	if (c->zh)
		zookeeper_close(c->zh);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	pthread_rwlock_destroy(&c->zlock);
	free(c);
}

void coord_close_for_exit(struct coord *c)
{
	if (!c)
		return;
	pthread_rwlock_wrlock(&c->zlock);       /* never released */
	if (c->zh)
		zookeeper_close(c->zh);
	c->zh = NULL;
}

int coord_is_connected(struct coord *c)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = c->zh && zoo_state(c->zh) == ZOO_CONNECTED_STATE;
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

/* Read a whole znode into a malloc'd buffer (NUL-terminated). */
int coord_get_doc(struct coord *c, const char *path, int watch, char **out,
		   int *len, struct Stat *st)
{
	int cap = 4096;

	for (int tries = 0; tries < 8; tries++) {
		char *buf = malloc(cap + 1);
		int n = cap;
		int rc;

		if (!buf)
			return -ENOMEM;
		rc = zoo_get(c->zh, path, watch, buf, &n, st);
		if (rc != ZOK) {
			free(buf);
			return coord_zerr(rc);
		}
		if (st->dataLength <= cap) {
			n = n < 0 ? 0 : n;
			buf[n] = '\0';
			*out = buf;
			*len = n;
			return 0;
		}
		free(buf);
		cap = st->dataLength;
		if (cap > (int)CMAP_MAX_DOC)
			return -EBADMSG;
	}
	return -EAGAIN;
}

static int coord_config_get_locked(struct coord *c, struct cluster_config *cfg)
{
	struct Stat st;
	char *doc;
	int len, ret;

	ret = coord_get_doc(c, c->p_config, 0, &doc, &len, &st);
	if (ret)
		return ret;
	ret = cluster_config_decode(doc, len, cfg);
	if (ret)
		log_err("cluster=%s: config document is malformed", c->base);
	free(doc);
	return ret;
}

static int delete_children(struct coord *c, const char *path)
{
	struct String_vector kids = { 0 };
	char p[PATH_MAX_LEN * 2];
	int rc = zoo_get_children(c->zh, path, 0, &kids);

	if (rc != ZOK)
		return rc == ZNONODE ? 0 : coord_zerr(rc);
	for (int i = 0; i < kids.count; i++) {
		snprintf(p, sizeof(p), "%s/%s", path, kids.data[i]);
		rc = zoo_delete(c->zh, p, -1);
		if (rc != ZOK && rc != ZNONODE)
			break;
		rc = ZOK;
	}
	deallocate_String_vector(&kids);
	return coord_zerr(rc);
}

static int coord_format_locked(struct coord *c, const struct cluster_config *cfg, int force)
{
	struct cmap *empty = NULL;
	char *cdoc = NULL, *mdoc = NULL, hist[PATH_MAX_LEN * 2];
	zoo_op_t ops[3];
	zoo_op_result_t res[3];
	int ret, rc;

	if (force) {
		ret = delete_children(c, c->p_epochs);
		if (ret)
			return ret;
		rc = zoo_delete(c->zh, c->p_map, -1);
		if (rc != ZOK && rc != ZNONODE)
			return coord_zerr(rc);
		rc = zoo_delete(c->zh, c->p_config, -1);
		if (rc != ZOK && rc != ZNONODE)
			return coord_zerr(rc);
	}
	ret = cmap_new(1, NULL, 0, &empty);
	if (ret)
		return ret;
	ret = cluster_config_encode(cfg, &cdoc);
	if (!ret)
		ret = cmap_encode(empty, &mdoc);
	if (ret)
		goto out;
	snprintf(hist, sizeof(hist), "%s/%010d", c->p_epochs, 1);
	zoo_create_op_init(&ops[0], c->p_config, cdoc, strlen(cdoc),
			   coord_acl(c, COORD_ACL_READ), 0, NULL, 0);
	zoo_create_op_init(&ops[1], c->p_map, mdoc, strlen(mdoc),
			   coord_acl(c, COORD_ACL_READ), 0, NULL, 0);
	zoo_create_op_init(&ops[2], hist, mdoc, strlen(mdoc),
			   coord_acl(c, COORD_ACL_READ), 0, NULL, 0);
	rc = zoo_multi(c->zh, 3, ops, res);
	ret = coord_zerr(rc);
out:
	free(cdoc);
	free(mdoc);
	cmap_free(empty);
	return ret;
}

static int coord_node_id_alloc_locked(struct coord *c, uint32_t *id)
{
	char prefix[PATH_MAX_LEN * 2], made[PATH_MAX_LEN * 2];
	int rc;

	snprintf(prefix, sizeof(prefix), "%s/n", c->p_nodeids);
	rc = zoo_create(c->zh, prefix, NULL, -1, coord_acl(c, COORD_ACL_ADMIN),
			ZOO_SEQUENCE, made, sizeof(made));
	if (rc != ZOK)
		return coord_zerr(rc);
	const char *seq = made + strlen(prefix);
	unsigned long v = strtoul(seq, NULL, 10);
	if (v >= UINT32_MAX)
		return -ERANGE;
	*id = (uint32_t)v + 1;
	return 0;
}

/* Our member document: a new ephemeral node (@create), or the one we
 * have rewritten. */
static int coord_member_put_locked(struct coord *c, const struct cmap_node *self,
				   int create)
{
	char path[PATH_MAX_LEN * 2], *doc;
	int rc, ret;

	ret = cmap_member_encode(self, &doc);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/%" PRIu32, c->p_members, self->node_id);
	if (create)
		rc = zoo_create(c->zh, path, doc, strlen(doc),
				coord_acl(c, COORD_ACL_READ), ZOO_EPHEMERAL, NULL, 0);
	else
		rc = zoo_set(c->zh, path, doc, strlen(doc), -1);
	free(doc);
	return coord_zerr(rc);
}

static int cmp_id(const void *a, const void *b)
{
	const struct cmap_node *x = a, *y = b;

	return x->node_id < y->node_id ? -1 : x->node_id > y->node_id;
}

static int coord_members_get_locked(struct coord *c, int watch, struct cmap_node **out, size_t *n)
{
	struct String_vector kids = { 0 };
	struct cmap_node *nodes;
	size_t cnt = 0;
	int rc;

	rc = zoo_get_children(c->zh, c->p_members, watch, &kids);
	if (rc != ZOK)
		return coord_zerr(rc);
	nodes = calloc(kids.count ? kids.count : 1, sizeof(*nodes));
	if (!nodes) {
		deallocate_String_vector(&kids);
		return -ENOMEM;
	}
	for (int i = 0; i < kids.count; i++) {
		char path[PATH_MAX_LEN * 2], *doc;
		struct Stat st;
		int len, ret;

		snprintf(path, sizeof(path), "%s/%s", c->p_members, kids.data[i]);
		ret = coord_get_doc(c, path, 0, &doc, &len, &st);
		if (ret == -ENOENT)
			continue;       /* left while we listed */
		if (ret) {
			deallocate_String_vector(&kids);
			free(nodes);
			return ret;
		}
		if (cmap_member_decode(doc, len, &nodes[cnt]) == 0 &&
		    strtoul(kids.data[i], NULL, 10) == nodes[cnt].node_id)
			cnt++;
		else
			log_warn("member %s: malformed document, ignored", kids.data[i]);
		free(doc);
	}
	deallocate_String_vector(&kids);
	qsort(nodes, cnt, sizeof(*nodes), cmp_id);
	*out = nodes;
	*n = cnt;
	return 0;
}

static int coord_map_get_locked(struct coord *c, int watch, struct cmap **out)
{
	struct Stat st;
	char *doc;
	int len, ret;

	ret = coord_get_doc(c, c->p_map, watch, &doc, &len, &st);
	if (ret == -ENOENT && watch)
		zoo_exists(c->zh, c->p_map, 1, &st);   /* fire when formatted */
	if (ret)
		return ret;
	ret = cmap_decode(doc, len, out);
	free(doc);
	if (ret) {
		log_err("%s: cluster map document is malformed", c->p_map);
		return ret;
	}
	(*out)->zversion = st.version;
	return 0;
}

static int coord_epoch_get_locked(struct coord *c, uint64_t epoch, struct cmap **out)
{
	char path[PATH_MAX_LEN * 2], *doc;
	struct Stat st;
	int len, ret;

	snprintf(path, sizeof(path), "%s/%010" PRIu64, c->p_epochs, epoch);
	ret = coord_get_doc(c, path, 0, &doc, &len, &st);
	if (ret)
		return ret;
	ret = cmap_decode(doc, len, out);
	free(doc);
	if (ret == 0 && (*out)->epoch != epoch) {
		cmap_free(*out);
		ret = -EBADMSG;
	}
	if (ret)
		log_err("%s: epoch history document is malformed", path);
	return ret;
}

static int coord_map_cas_locked(struct coord *c, const struct cmap *prev, const struct cmap *next)
{
	char *doc, hist[PATH_MAX_LEN * 2];
	zoo_op_t ops[2];
	zoo_op_result_t res[2];
	int ret, rc;

	if (next->epoch != prev->epoch + 1)
		return -EINVAL;
	ret = cmap_encode(next, &doc);
	if (ret)
		return ret;
	snprintf(hist, sizeof(hist), "%s/%010" PRIu64, c->p_epochs, next->epoch);
	zoo_set_op_init(&ops[0], c->p_map, doc, strlen(doc), prev->zversion, NULL);
	zoo_create_op_init(&ops[1], hist, doc, strlen(doc),
			   coord_acl(c, COORD_ACL_READ), 0, NULL, 0);
	rc = zoo_multi(c->zh, 2, ops, res);
	free(doc);
	if (rc == ZBADVERSION || rc == ZNODEEXISTS || rc == ZNONODE)
		return -EAGAIN;
	return coord_zerr(rc);
}

/* The public calls: each holds zlock shared, so coord_reopen (exclusive)
 * never swaps the handle under a call in flight. */
int coord_config_get(struct coord *c, struct cluster_config *cfg)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_config_get_locked(c, cfg);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_format(struct coord *c, const struct cluster_config *cfg, int force)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_format_locked(c, cfg, force);
	pthread_rwlock_unlock(&c->zlock);
	if (ret == 0 && c->cred == COORD_CRED_ADMIN)
		ret = coord_secure(c);
	return ret;
}

int coord_node_id_alloc(struct coord *c, uint32_t *id)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_node_id_alloc_locked(c, id);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_member_join(struct coord *c, const struct cmap_node *self)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_member_put_locked(c, self, 1);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_member_update(struct coord *c, const struct cmap_node *self)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_member_put_locked(c, self, 0);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_members_get(struct coord *c, int watch, struct cmap_node **out, size_t *n)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_members_get_locked(c, watch, out, n);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_map_get(struct coord *c, int watch, struct cmap **out)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_map_get_locked(c, watch, out);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_map_cas(struct coord *c, const struct cmap *prev, const struct cmap *next)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_map_cas_locked(c, prev, next);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_epoch_get(struct coord *c, uint64_t epoch, struct cmap **out)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_epoch_get_locked(c, epoch, out);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}
