/*
 * coord_suspect.c - coord_suspect.h on libzookeeper-mt.
 */
#include "common/coord_suspect.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "common/coord_int.h"
#include "common/log.h"

#define SUSPECT_ACK "ack\n"

static void marker_path(const struct coord *c, uint32_t node_id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%" PRIu32, c->p_suspects, node_id);
}

/* Does @id count towards the limit: marked, or down in @map, and placed? */
static int counts(const struct cmap *map, uint32_t id, int is_marked)
{
	const struct cmap_node *nd = map ? cmap_find(map, id) : NULL;

	if (nd && !cmap_node_is_placed(nd))
		return 0;
	return is_marked || (nd && nd->state != CMAP_UP);
}

int suspect_may_report(const struct cmap *map, const uint32_t *marked, size_t nmarked,
		       uint32_t node_id, unsigned copies)
{
	unsigned n = 0;

	if (copies <= 1)
		return 0;
	/* Each other node once: its marker, or its down state in the map. */
	for (size_t i = 0; i < nmarked; i++) {
		int dup = 0;

		for (size_t k = 0; k < i && !dup; k++)
			dup = marked[k] == marked[i];
		if (!dup && marked[i] != node_id &&
		    counts(map, marked[i], 1))
			n++;
	}
	for (size_t i = 0; map && i < map->n; i++) {
		uint32_t id = map->nodes[i].node_id;
		int is_marked = 0;

		for (size_t k = 0; k < nmarked && !is_marked; k++)
			is_marked = marked[k] == id;
		if (!is_marked && id != node_id && counts(map, id, 0))
			n++;
	}
	return n < copies - 1;
}

#define REPORT_TRIES 8

/*
 * One try of coord_suspect_report: read suspects/ (its children and
 * data version) and then the map, decide, and create the marker in one
 * transaction with both versions checked. 1: a race lost, try again.
 */
static int report_once_locked(struct coord *c, uint32_t node_id, const char *doc,
			      unsigned copies)
{
	struct String_vector kids = { 0 };
	char path[PATH_MAX_LEN * 2], *mdoc = NULL;
	struct cmap *map = NULL;
	uint32_t *marked = NULL;
	size_t nmarked = 0;
	struct Stat pst, mst;
	zoo_op_t ops[3];
	zoo_op_result_t res[3];
	int len, rc, ret, may;

	rc = zoo_get_children2(c->zh, c->p_suspects, 0, &kids, &pst);
	if (rc != ZOK)
		return coord_zerr(rc);
	marked = calloc(kids.count ? kids.count : 1, sizeof(*marked));
	if (!marked) {
		deallocate_String_vector(&kids);
		return -ENOMEM;
	}
	for (int i = 0; i < kids.count; i++) {
		char *end;
		unsigned long id = strtoul(kids.data[i], &end, 10);

		if (*end || id == 0 || id > UINT32_MAX)
			continue;
		if (id == node_id) {
			deallocate_String_vector(&kids);
			free(marked);
			return -EEXIST;
		}
		marked[nmarked++] = (uint32_t)id;
	}
	deallocate_String_vector(&kids);
	/* Read after suspects/: at least as new (one session's reads are
	 * ordered), and checked in the transaction anyway. */
	ret = coord_get_doc(c, c->p_map, 0, &mdoc, &len, &mst);
	if (ret == 0) {
		ret = cmap_decode(mdoc, len, &map);
		free(mdoc);
	}
	if (ret) {
		free(marked);
		return ret;
	}
	may = suspect_may_report(map, marked, nmarked, node_id, copies);
	cmap_free(map);
	free(marked);
	if (!may)
		return -EBUSY;
	marker_path(c, node_id, path, sizeof(path));
	zoo_check_op_init(&ops[0], c->p_map, mst.version);
	zoo_set_op_init(&ops[1], c->p_suspects, "", 0, pst.version, NULL);
	zoo_create_op_init(&ops[2], path, doc, (int)strlen(doc),
			   coord_acl(c, COORD_ACL_READ), 0, NULL, 0);
	rc = zoo_multi(c->zh, 3, ops, res);
	if (rc == ZBADVERSION)
		return 1;
	return coord_zerr(rc);
}

int coord_suspect_report(struct coord *c, uint32_t node_id, uint64_t epoch,
			 const char *reporter, unsigned copies)
{
	char doc[256];
	struct timespec ts;
	int ret = -EAGAIN;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(doc, sizeof(doc), "sdfs-suspect 1\nreporter %s\nepoch %" PRIu64
		 "\ntime %lld\n", reporter, epoch,
		 (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	pthread_rwlock_rdlock(&c->zlock);
	for (int tries = 0; tries < REPORT_TRIES; tries++) {
		ret = report_once_locked(c, node_id, doc, copies);
		if (ret != 1)
			break;
		ret = -EAGAIN;
	}
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_map_cas_checked(struct coord *c, const struct cmap *prev, const struct cmap *next,
			  int32_t list_version, const struct coord_suspect *checks,
			  size_t nchecks)
{
	char *doc, hist[PATH_MAX_LEN * 2];
	char (*paths)[PATH_MAX_LEN * 2];
	zoo_op_t *ops;
	zoo_op_result_t *res;
	int ret, rc;

	if (next->epoch != prev->epoch + 1)
		return -EINVAL;
	ret = cmap_encode(next, &doc);
	if (ret)
		return ret;
	ops = calloc(nchecks + 3, sizeof(*ops));
	res = calloc(nchecks + 3, sizeof(*res));
	paths = calloc(nchecks + 1, sizeof(*paths));
	if (!ops || !res || !paths) {
		free(ops);
		free(res);
		free(paths);
		free(doc);
		return -ENOMEM;
	}
	snprintf(hist, sizeof(hist), "%s/%010" PRIu64, c->p_epochs, next->epoch);
	zoo_set_op_init(&ops[0], c->p_map, doc, strlen(doc), prev->zversion, NULL);
	zoo_create_op_init(&ops[1], hist, doc, strlen(doc),
			   coord_acl(c, COORD_ACL_READ), 0, NULL, 0);
	for (size_t i = 0; i < nchecks; i++) {
		marker_path(c, checks[i].node_id, paths[i], sizeof(paths[i]));
		zoo_check_op_init(&ops[2 + i], paths[i], checks[i].zversion);
	}
	if (nchecks)
		zoo_check_op_init(&ops[2 + nchecks], c->p_suspects, list_version);
	pthread_rwlock_rdlock(&c->zlock);
	rc = zoo_multi(c->zh, (int)nchecks + 2 + (nchecks ? 1 : 0), ops, res);
	pthread_rwlock_unlock(&c->zlock);
	free(ops);
	free(res);
	free(paths);
	free(doc);
	if (rc == ZBADVERSION || rc == ZNODEEXISTS || rc == ZNONODE)
		return -EAGAIN;
	return coord_zerr(rc);
}

static int cmp_suspect(const void *a, const void *b)
{
	const struct coord_suspect *x = a, *y = b;

	return x->node_id < y->node_id ? -1 : x->node_id > y->node_id;
}

static int suspects_get_locked(struct coord *c, int watch, struct coord_suspect **out,
			       size_t *n, int32_t *list_version)
{
	struct String_vector kids = { 0 };
	struct coord_suspect *v;
	struct Stat pst;
	size_t cnt = 0;
	int rc;

	rc = zoo_get_children2(c->zh, c->p_suspects, watch, &kids, &pst);
	if (rc == ZNONODE) {
		*out = NULL;
		*n = 0;
		if (list_version)
			*list_version = -1;
		return 0;
	}
	if (rc != ZOK)
		return coord_zerr(rc);
	if (list_version)
		*list_version = pst.version;
	v = calloc(kids.count ? kids.count : 1, sizeof(*v));
	if (!v) {
		deallocate_String_vector(&kids);
		return -ENOMEM;
	}
	for (int i = 0; i < kids.count; i++) {
		char path[PATH_MAX_LEN * 2], buf[64], *end;
		unsigned long id = strtoul(kids.data[i], &end, 10);
		int len = sizeof(buf) - 1;
		struct Stat st;

		if (*end || id == 0 || id > UINT32_MAX) {
			log_warn("suspect %s: not a node id, ignored", kids.data[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", c->p_suspects, kids.data[i]);
		rc = zoo_get(c->zh, path, watch, buf, &len, &st);
		if (rc == ZNONODE)
			continue;       /* cleared while we listed */
		if (rc != ZOK) {
			deallocate_String_vector(&kids);
			free(v);
			return coord_zerr(rc);
		}
		buf[len < 0 ? 0 : len] = '\0';
		v[cnt].node_id = (uint32_t)id;
		v[cnt].acked = strcmp(buf, SUSPECT_ACK) == 0;
		v[cnt].zversion = st.version;
		cnt++;
	}
	deallocate_String_vector(&kids);
	qsort(v, cnt, sizeof(*v), cmp_suspect);
	*out = v;
	*n = cnt;
	return 0;
}

int coord_suspects_get(struct coord *c, int watch, struct coord_suspect **out, size_t *n,
		       int32_t *list_version)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = suspects_get_locked(c, watch, out, n, list_version);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_suspect_ack(struct coord *c, uint32_t node_id)
{
	char path[PATH_MAX_LEN * 2];
	int rc;

	marker_path(c, node_id, path, sizeof(path));
	pthread_rwlock_rdlock(&c->zlock);
	rc = zoo_set(c->zh, path, SUSPECT_ACK, (int)strlen(SUSPECT_ACK), -1);
	pthread_rwlock_unlock(&c->zlock);
	return coord_zerr(rc);
}

int coord_suspect_clear(struct coord *c, uint32_t node_id)
{
	char path[PATH_MAX_LEN * 2];
	int rc;

	marker_path(c, node_id, path, sizeof(path));
	pthread_rwlock_rdlock(&c->zlock);
	rc = zoo_delete(c->zh, path, -1);
	pthread_rwlock_unlock(&c->zlock);
	return rc == ZNONODE ? 0 : coord_zerr(rc);
}

/* One lease check in flight: freed by whoever drops the last reference
 * (the sender and each request sent hold one). */
struct lease_check {
	atomic_int refs;
	int err, marked;        /* the completion thread's */
	int send_err;           /* the sender's, set before it drops its reference */
	int32_t map_version;
	coord_lease_fn fn;
	void *arg;
};

static void check_put(struct lease_check *k)
{
	if (atomic_fetch_sub(&k->refs, 1) != 1)
		return;
	k->fn(k->arg, k->send_err ? k->send_err : k->err, k->marked, k->map_version);
	free(k);
}

static void note_err(struct lease_check *k, int rc)
{
	if (rc != ZOK && !k->err)
		k->err = coord_zerr(rc) ? coord_zerr(rc) : -EIO;
}

static void sync_done(int rc, const char *value, const void *data)
{
	struct lease_check *k = (struct lease_check *)data;

	(void)value;
	note_err(k, rc);
	check_put(k);
}

static void marker_done(int rc, const struct Stat *st, const void *data)
{
	struct lease_check *k = (struct lease_check *)data;

	(void)st;
	k->marked = rc == ZOK;
	if (rc != ZNONODE)
		note_err(k, rc);
	check_put(k);
}

static void map_done(int rc, const struct Stat *st, const void *data)
{
	struct lease_check *k = (struct lease_check *)data;

	note_err(k, rc);
	if (rc == ZOK && st)
		k->map_version = st->version;
	check_put(k);
}

int coord_lease_check(struct coord *c, uint32_t node_id, coord_lease_fn fn, void *arg)
{
	struct lease_check *k = calloc(1, sizeof(*k));
	char path[PATH_MAX_LEN * 2];
	int rc = ZOK;

	if (!k)
		return -ENOMEM;
	k->fn = fn;
	k->arg = arg;
	k->map_version = -1;
	atomic_init(&k->refs, 1);
	marker_path(c, node_id, path, sizeof(path));
	pthread_rwlock_rdlock(&c->zlock);
	if (!c->zh) {
		pthread_rwlock_unlock(&c->zlock);
		free(k);
		return -ESHUTDOWN;
	}
	/* The completions all run on the one completion thread, in order;
	 * the counts are taken before each request can complete. */
	atomic_fetch_add(&k->refs, 1);
	rc = zoo_async(c->zh, c->p_map, sync_done, k);
	if (rc == ZOK) {
		atomic_fetch_add(&k->refs, 1);
		rc = zoo_aexists(c->zh, path, 0, marker_done, k);
		if (rc == ZOK) {
			atomic_fetch_add(&k->refs, 1);
			rc = zoo_aexists(c->zh, c->p_map, 0, map_done, k);
			if (rc != ZOK)
				atomic_fetch_sub(&k->refs, 1);
		} else {
			atomic_fetch_sub(&k->refs, 1);
		}
	} else {
		atomic_fetch_sub(&k->refs, 1);
	}
	pthread_rwlock_unlock(&c->zlock);
	if (rc != ZOK && atomic_load(&k->refs) == 1) {
		/* nothing was sent: the caller hears it here, fn never runs */
		free(k);
		return coord_zerr(rc) ? coord_zerr(rc) : -EIO;
	}
	if (rc != ZOK)
		k->send_err = coord_zerr(rc) ? coord_zerr(rc) : -EIO;
	check_put(k);
	return 0;
}
