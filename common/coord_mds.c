/*
 * coord_mds.c - see coord_mds.h. Also the queue recipe (an election or a
 * lock: ephemeral-sequential nodes in a directory, the lowest first)
 * that coord_vol.c shares (coord_int.h).
 */
#include "common/coord_mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/coord_int.h"
#include "common/log.h"
#include "common/net.h"

int coord_mds_doc_encode(const struct coord_mds_doc *d, char *out, size_t len)
{
	int n = snprintf(out, len, "name=%s\naddr=%s\nepoch=%" PRIu64 "\n",
			 d->name, d->addr, d->epoch);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int coord_mds_doc_decode(const char *text, size_t len, struct coord_mds_doc *d)
{
	const char *p = text, *end = text + len;

	memset(d, 0, sizeof(*d));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eq = memchr(p, '=', (size_t)((nl ? nl : end) - p));
		size_t klen, vlen;

		if (!nl)
			nl = end;
		if (!eq)
			return -EBADMSG;
		klen = (size_t)(eq - p);
		vlen = (size_t)(nl - eq - 1);
		if (klen == 4 && !memcmp(p, "name", 4)) {
			if (vlen == 0 || vlen >= sizeof(d->name))
				return -EBADMSG;
			memcpy(d->name, eq + 1, vlen);
		} else if (klen == 4 && !memcmp(p, "addr", 4)) {
			if (vlen == 0 || vlen >= sizeof(d->addr))
				return -EBADMSG;
			memcpy(d->addr, eq + 1, vlen);
		} else if (klen == 5 && !memcmp(p, "epoch", 5)) {
			char num[24], *e;

			if (vlen == 0 || vlen >= sizeof(num))
				return -EBADMSG;
			memcpy(num, eq + 1, vlen);
			num[vlen] = '\0';
			errno = 0;
			d->epoch = strtoull(num, &e, 10);
			if (*e || errno || num[0] == '-')
				return -EBADMSG;
		}
		p = nl + 1;
	}
	if (!d->name[0] || !d->addr[0] || memchr(d->name, '\0', strlen(d->name)) ||
	    strpbrk(d->name, " \t\r") || strpbrk(d->addr, " \t\r"))
		return -EBADMSG;
	return 0;
}

int coord_mds_elect_join(struct coord *c, const struct coord_mds_doc *self,
			 char *node, size_t len)
{
	char doc[256], made[PATH_MAX_LEN * 2];
	int ret;

	ret = coord_mds_doc_encode(self, doc, sizeof(doc));
	if (ret)
		return ret;
	ret = coord_queue_join(c, c->p_mds_elect, "n", doc, made, sizeof(made));
	if (ret)
		return ret;
	const char *base = strrchr(made, '/') + 1;
	if (strlen(base) >= len)
		return -ENAMETOOLONG;
	strcpy(node, base);
	return 0;
}

/* A guid in the name, so a create whose answer a connection loss ate
 * can be recognized: "<dir>/<prefix>_<guid>_<seq>" (ZooKeeper's sequence
 * makes the name unique anyway). */
static int find_guid(struct coord *c, const char *dir, const char *guid,
		     char *made, size_t len)
{
	struct String_vector kids = { 0 };
	int rc = zoo_get_children(c->zh, dir, 0, &kids), found = 0;

	if (rc != ZOK)
		return coord_zerr(rc);
	for (int i = 0; i < kids.count && !found; i++)
		if (strstr(kids.data[i], guid)) {
			snprintf(made, len, "%s/%s", dir, kids.data[i]);
			found = 1;
		}
	deallocate_String_vector(&kids);
	return found ? 0 : -ENOENT;
}

int coord_queue_join(struct coord *c, const char *dir, const char *prefix,
		     const char *data, char *made, size_t len)
{
	char path[PATH_MAX_LEN * 2], guid[24];
	struct timespec ts;
	int rc = ZOK, ret = -ETIMEDOUT;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(guid, sizeof(guid), "_%08lx%08lx_", (unsigned long)ts.tv_nsec,
		 (unsigned long)random());
	snprintf(path, sizeof(path), "%s/%s%s", dir, prefix, guid);
	for (int tries = 0; tries < 5; tries++) {
		pthread_rwlock_rdlock(&c->zlock);
		/* After a connection loss the create may have happened. */
		ret = tries ? find_guid(c, dir, guid, made, len) : -ENOENT;
		if (ret == -ENOENT) {
			rc = zoo_create(c->zh, path, data, (int)strlen(data),
					coord_acl(c, COORD_ACL_READ),
					ZOO_EPHEMERAL | ZOO_SEQUENCE,
					made, (int)len);
			ret = coord_zerr(rc);
		}
		pthread_rwlock_unlock(&c->zlock);
		if (ret != -ETIMEDOUT)
			return ret;
		usleep(100 * 1000);
	}
	return ret;
}

/* The sequence suffix of an election node name (after the last '_'). */
static long long seq_of(const char *name)
{
	const char *u = strrchr(name, '_');

	return u ? atoll(u + 1) : -1;
}

static int cmp_seq(const void *a, const void *b)
{
	long long x = seq_of(*(char *const *)a), y = seq_of(*(char *const *)b);

	return x < y ? -1 : x > y;
}

int coord_queue_list(struct coord *c, const char *dir, struct String_vector *kids)
{
	int rc = zoo_get_children(c->zh, dir, 0, kids);

	if (rc != ZOK)
		return coord_zerr(rc);
	qsort(kids->data, (size_t)kids->count, sizeof(char *), cmp_seq);
	return 0;
}

/*
 * The predecessor watch. Its context is the coord itself: the library
 * calls a watch not only once for its node's event but also for every
 * session event while it is registered (it is kept), so anything the
 * context points to must live as long as the handle. It was a per-wait
 * object freed after two calls, and a ZooKeeper stall (connection lost,
 * then back or expired) ran every watch a standby had left registered
 * on freed memory (issue 13: an abort in pthread_mutex_lock). One
 * (function, context) pair is kept once per path, so the waits of a
 * standby no longer pile up watches either.
 */
static void pred_watcher(zhandle_t *zh, int type, int state, const char *path,
			 void *ctx)
{
	struct coord *c = ctx;
	(void)zh; (void)state; (void)path;

	if (type == ZOO_SESSION_EVENT)
		return;         /* the global watcher follows the session */
	pthread_mutex_lock(&c->lock);
	c->queue_gen++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

int coord_queue_wait(struct coord *c, const char *dir, const char *node,
		     int timeout_ms)
{
	struct String_vector kids = { 0 };
	char pred[PATH_MAX_LEN * 2];
	unsigned long gen;
	struct timespec dl;
	struct Stat st;
	int rc, found = -1, changed;

	pthread_rwlock_rdlock(&c->zlock);
	rc = coord_queue_list(c, dir, &kids);
	if (rc) {
		pthread_rwlock_unlock(&c->zlock);
		return rc;
	}
	for (int i = 0; i < kids.count; i++)
		if (strcmp(kids.data[i], node) == 0)
			found = i;
	if (found <= 0) {
		deallocate_String_vector(&kids);
		pthread_rwlock_unlock(&c->zlock);
		return found == 0 ? 0 : -ENOENT;
	}
	snprintf(pred, sizeof(pred), "%s/%s", dir, kids.data[found - 1]);
	deallocate_String_vector(&kids);

	/* Read the generation before arming: a fire in between counts. */
	pthread_mutex_lock(&c->lock);
	gen = c->queue_gen;
	pthread_mutex_unlock(&c->lock);
	rc = zoo_wexists(c->zh, pred, pred_watcher, c, &st);
	pthread_rwlock_unlock(&c->zlock);
	if (rc == ZNONODE)
		return -EAGAIN; /* predecessor gone: re-check at once (the
				   creation watch this leaves is harmless) */
	if (rc != ZOK)
		return coord_zerr(rc);
	net_time_in(CLOCK_REALTIME, timeout_ms, &dl);
	/* Any queue's watch wakes every waiter of this coord, and so does
	 * the session's end: each re-checks (-EAGAIN), which is cheap. */
	pthread_mutex_lock(&c->lock);
	while (c->queue_gen == gen && c->state != ZOO_EXPIRED_SESSION_STATE)
		if (pthread_cond_timedwait(&c->cond, &c->lock, &dl))
			break;
	changed = c->queue_gen != gen || c->state == ZOO_EXPIRED_SESSION_STATE;
	pthread_mutex_unlock(&c->lock);
	return changed ? -EAGAIN : -ETIMEDOUT;
}

int coord_mds_elect_wait(struct coord *c, const char *node, int timeout_ms)
{
	return coord_queue_wait(c, c->p_mds_elect, node, timeout_ms);
}

int coord_mds_elect_check(struct coord *c, const char *node)
{
	char path[PATH_MAX_LEN * 2];
	struct Stat st;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", c->p_mds_elect, node);
	pthread_rwlock_rdlock(&c->zlock);
	rc = zoo_exists(c->zh, path, 0, &st);
	pthread_rwlock_unlock(&c->zlock);
	return coord_zerr(rc);
}

int coord_mds_candidates(struct coord *c, struct coord_mds_doc **out, size_t *n)
{
	struct String_vector kids = { 0 };
	struct coord_mds_doc *docs;
	size_t cnt = 0;
	int rc;

	pthread_rwlock_rdlock(&c->zlock);
	rc = coord_queue_list(c, c->p_mds_elect, &kids);
	if (rc) {
		pthread_rwlock_unlock(&c->zlock);
		return rc;
	}
	docs = calloc((size_t)kids.count + 1, sizeof(*docs));
	if (!docs) {
		deallocate_String_vector(&kids);
		pthread_rwlock_unlock(&c->zlock);
		return -ENOMEM;
	}
	for (int i = 0; i < kids.count; i++) {
		char path[PATH_MAX_LEN * 2], *doc;
		struct Stat st;
		int len;

		snprintf(path, sizeof(path), "%s/%s", c->p_mds_elect, kids.data[i]);
		if (coord_get_doc(c, path, 0, &doc, &len, &st))
			continue;       /* gone meanwhile */
		if (coord_mds_doc_decode(doc, (size_t)len, &docs[cnt]) == 0) {
			snprintf(docs[cnt].node, sizeof(docs[cnt].node), "%s", kids.data[i]);
			cnt++;
		}
		free(doc);
	}
	deallocate_String_vector(&kids);
	pthread_rwlock_unlock(&c->zlock);
	*out = docs;
	*n = cnt;
	return 0;
}

static int parse_epoch(const char *doc, uint64_t *epoch)
{
	char *e;

	if (!doc[0] || doc[0] == '-')
		return -EBADMSG;
	errno = 0;
	*epoch = strtoull(doc, &e, 10);
	if (errno || (*e && *e != '\n'))
		return -EBADMSG;
	return 0;
}

static int epoch_get_locked(struct coord *c, int watch, uint64_t *epoch,
			    int *version)
{
	struct Stat st;
	char *doc;
	int len, ret;

	ret = coord_get_doc(c, c->p_mds_epoch, watch, &doc, &len, &st);
	if (ret == -ENOENT) {
		*epoch = 0;
		*version = -1;
		if (watch) {    /* arm the watch for its creation */
			int rc = zoo_exists(c->zh, c->p_mds_epoch, 1, &st);
			if (rc == ZOK)
				return -EAGAIN;
		}
		return 0;
	}
	if (ret)
		return ret;
	ret = parse_epoch(doc, epoch);
	*version = st.version;
	free(doc);
	return ret;
}

int coord_mds_epoch_get(struct coord *c, int watch, uint64_t *epoch)
{
	int version, ret;

	for (int tries = 0; tries < 5; tries++) {
		pthread_rwlock_rdlock(&c->zlock);
		ret = epoch_get_locked(c, watch, epoch, &version);
		pthread_rwlock_unlock(&c->zlock);
		if (ret != -EAGAIN)
			return ret;
	}
	return ret;
}

int coord_mds_epoch_bump(struct coord *c, const char *node, uint64_t *epoch)
{
	char mine[PATH_MAX_LEN * 2], num[24];
	zoo_op_t ops[2];
	zoo_op_result_t res[2];
	uint64_t cur;
	int version, ret, rc;

	snprintf(mine, sizeof(mine), "%s/%s", c->p_mds_elect, node);
	pthread_rwlock_rdlock(&c->zlock);
	ret = epoch_get_locked(c, 0, &cur, &version);
	if (ret) {
		pthread_rwlock_unlock(&c->zlock);
		return ret;
	}
	snprintf(num, sizeof(num), "%" PRIu64 "\n", cur + 1);
	zoo_check_op_init(&ops[0], mine, -1);
	if (version < 0)
		zoo_create_op_init(&ops[1], c->p_mds_epoch, num, (int)strlen(num),
				   coord_acl(c, COORD_ACL_READ), 0, NULL, 0);
	else
		zoo_set_op_init(&ops[1], c->p_mds_epoch, num, (int)strlen(num),
				version, NULL);
	rc = zoo_multi(c->zh, 2, ops, res);
	pthread_rwlock_unlock(&c->zlock);
	if (rc == ZOK) {
		*epoch = cur + 1;
		return 0;
	}
	if (res[0].err == ZNONODE)
		return -ENOENT;
	if (rc == ZBADVERSION || rc == ZNODEEXISTS)
		return -EAGAIN;
	return coord_zerr(rc);
}

int coord_mds_publish(struct coord *c, const struct coord_mds_doc *self)
{
	char doc[256];
	int ret, rc;

	ret = coord_mds_doc_encode(self, doc, sizeof(doc));
	if (ret)
		return ret;
	pthread_rwlock_rdlock(&c->zlock);
	for (int tries = 0; tries < 3; tries++) {
		rc = zoo_create(c->zh, c->p_mds_active, doc, (int)strlen(doc),
				coord_acl(c, COORD_ACL_READ), ZOO_EPHEMERAL, NULL, 0);
		if (rc != ZNODEEXISTS)
			break;
		/* A stale active: its holder stepped down in a session that
		 * has not ended yet. We are the elected leader; replace it. */
		zoo_delete(c->zh, c->p_mds_active, -1);
	}
	pthread_rwlock_unlock(&c->zlock);
	return coord_zerr(rc);
}

int coord_mds_active_get(struct coord *c, int watch, struct coord_mds_doc *d)
{
	struct Stat st;
	char *doc;
	int len, ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = coord_get_doc(c, c->p_mds_active, watch, &doc, &len, &st);
	if (ret == -ENOENT && watch)
		zoo_exists(c->zh, c->p_mds_active, 1, &st);
	pthread_rwlock_unlock(&c->zlock);
	if (ret)
		return ret;
	ret = coord_mds_doc_decode(doc, (size_t)len, d);
	free(doc);
	return ret;
}
