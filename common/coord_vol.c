/*
 * coord_vol.c - see coord_vol.h. The lock is the queue recipe of
 * coord_mds.c (coord_int.h) in vols/locks/<ino>; fences are plain
 * persistent nodes changed only in transactions.
 */
#include "common/coord_vol.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/coord_int.h"
#include "common/log.h"
#include "common/sdfs_proto.h"

#define VOL_DIR_MAX PATH_MAX_LEN          /* a directory: base + vols/.../<n> */
#define VOL_PATH_MAX (PATH_MAX_LEN * 2)   /* a node in one */
#define VOL_LOCK_PREFIX "w"
#define VOL_TRIES 5

static void fence_path(const struct coord *c, uint64_t vid, char *out, size_t len)
{
	snprintf(out, len, "%s/vols/fence/%" PRIu64, c->base, vid);
}

static void queue_path(const struct coord *c, uint64_t ino, char *out, size_t len)
{
	snprintf(out, len, "%s/vols/locks/%" PRIu64, c->base, ino);
}

/* The ACL of a directory under vols/ (coord_int.h): clients make
 * queues in vols/locks, fences in vols/fence. */
static enum coord_acl_kind vol_dir_kind(const struct coord *c, const char *p)
{
	const char *rel = p + strlen(c->base) + 1;

	if (!strcmp(rel, "vols/fence"))
		return COORD_ACL_FENCES;
	if (!strncmp(rel, "vols/locks", 10))
		return COORD_ACL_DIR;
	return COORD_ACL_READ;
}

/* Create every missing node from c->base down to @path (plain,
 * persistent, empty); another creating it first is fine. Each is
 * checked before it is created: a client of a secured cluster may
 * create only in vols/locks and vols/fence. zlock held. */
static int make_path(struct coord *c, const char *path)
{
	char p[VOL_PATH_MAX];
	size_t base = strlen(c->base);

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + base + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char was = *s;
		*s = '\0';
		int ret = coord_ensure(c, p, vol_dir_kind(c, p));
		if (ret)
			return ret;
		*s = was;
		if (!was)
			return 0;
	}
}

static int parse_token(const char *doc, uint32_t *token)
{
	char *e;

	if (!doc[0] || doc[0] == '-')
		return -EBADMSG;
	errno = 0;
	unsigned long long v = strtoull(doc, &e, 10);
	if (errno || (*e && *e != '\n') || v > UINT32_MAX)
		return -EBADMSG;
	*token = (uint32_t)v;
	return 0;
}

static int fence_get_locked(struct coord *c, const char *path, uint32_t *token,
			    int32_t *version)
{
	struct Stat st;
	char *doc;
	int len, ret;

	ret = coord_get_doc(c, path, 0, &doc, &len, &st);
	if (ret == -ENOENT) {
		*token = 0;
		*version = -1;
		return 0;
	}
	if (ret)
		return ret;
	ret = parse_token(doc, token);
	free(doc);
	if (ret)
		log_warn("%s: malformed fence (want one decimal number)", path);
	else
		*version = st.version;
	return ret;
}

int coord_vol_fence_get(struct coord *c, uint64_t vid, uint32_t *token,
			int32_t *version)
{
	char path[VOL_PATH_MAX];
	int ret;

	fence_path(c, vid, path, sizeof(path));
	pthread_rwlock_rdlock(&c->zlock);
	ret = fence_get_locked(c, path, token, version);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

/* What a failed transaction means: the first op that says why. */
static int multi_err(const zoo_op_t *ops, const zoo_op_result_t *res, size_t n,
		     int rc)
{
	for (size_t i = 0; i < n; i++) {
		int err = res[i].err;

		if (err == ZOK || err == ZRUNTIMEINCONSISTENCY)
			continue;
		if (ops[i].type == ZOO_CHECK_OP && err == ZNONODE)
			return -ENOENT;         /* our lock node is gone */
		if (err == ZBADVERSION || err == ZNODEEXISTS ||
		    (ops[i].type == ZOO_SETDATA_OP && err == ZNONODE))
			return -EAGAIN;         /* changed (or deleted) since read */
		if (ops[i].type == ZOO_CREATE_OP && err == ZNONODE)
			return -ENOTDIR;        /* vols/fence missing: make it */
		return coord_zerr(err);
	}
	return coord_zerr(rc);
}

int coord_vol_fence_multi(struct coord *c, const struct coord_vol_fset *sets,
			  size_t n, const char *lock_node)
{
	size_t nops = n + (lock_node ? 1 : 0);
	zoo_op_t *ops = calloc(nops ? nops : 1, sizeof(*ops));
	zoo_op_result_t *res = calloc(nops ? nops : 1, sizeof(*res));
	char (*paths)[VOL_PATH_MAX] = calloc(n ? n : 1, sizeof(*paths));
	char (*nums)[16] = calloc(n ? n : 1, sizeof(*nums));
	int ret = -ENOMEM;

	if (!ops || !res || !paths || !nums)
		goto out;
	for (int tries = 0; tries < 2; tries++) {
		size_t k = 0;

		if (lock_node)
			zoo_check_op_init(&ops[k++], lock_node, -1);
		for (size_t i = 0; i < n; i++) {
			fence_path(c, sets[i].vid, paths[i], sizeof(paths[i]));
			snprintf(nums[i], sizeof(nums[i]), "%" PRIu32 "\n", sets[i].token);
			if (sets[i].version < 0)
				zoo_create_op_init(&ops[k++], paths[i], nums[i],
						   (int)strlen(nums[i]),
						   coord_acl(c, COORD_ACL_FENCE),
						   0, NULL, 0);
			else
				zoo_set_op_init(&ops[k++], paths[i], nums[i],
						(int)strlen(nums[i]), sets[i].version, NULL);
		}
		pthread_rwlock_rdlock(&c->zlock);
		int rc = zoo_multi(c->zh, (int)nops, ops, res);
		ret = rc == ZOK ? 0 : multi_err(ops, res, nops, rc);
		if (ret == -ENOTDIR && n) {
			/* The first fence ever: make vols/fence and try again. */
			char dir[VOL_DIR_MAX];

			snprintf(dir, sizeof(dir), "%s/vols/fence", c->base);
			ret = make_path(c, dir);
			if (ret == 0)
				ret = -ENOTDIR;
		}
		pthread_rwlock_unlock(&c->zlock);
		if (ret != -ENOTDIR)
			break;
	}
	if (ret == -ENOTDIR)
		ret = -EIO;
out:
	free(ops);
	free(res);
	free(paths);
	free(nums);
	return ret;
}

int coord_vol_fence_delete(struct coord *c, uint64_t vid)
{
	char path[VOL_PATH_MAX];
	int rc;

	fence_path(c, vid, path, sizeof(path));
	pthread_rwlock_rdlock(&c->zlock);
	rc = zoo_delete(c->zh, path, -1);
	pthread_rwlock_unlock(&c->zlock);
	return rc == ZNONODE ? 0 : coord_zerr(rc);
}

struct fence_ent {
	uint64_t vid;
	uint32_t token;
};

/* Every well-formed fence into *@out (malloc'd). zlock held. */
static int fence_read_all(struct coord *c, struct fence_ent **out, size_t *n)
{
	struct String_vector kids = { 0 };
	char dir[VOL_DIR_MAX];
	struct fence_ent *ents;
	size_t cnt = 0;
	int rc, ret = 0;

	snprintf(dir, sizeof(dir), "%s/vols/fence", c->base);
	rc = zoo_get_children(c->zh, dir, 0, &kids);
	if (rc == ZNONODE) {
		*out = NULL;
		*n = 0;
		return 0;
	}
	if (rc != ZOK)
		return coord_zerr(rc);
	ents = calloc(kids.count ? (size_t)kids.count : 1, sizeof(*ents));
	if (!ents) {
		deallocate_String_vector(&kids);
		return -ENOMEM;
	}
	for (int i = 0; i < kids.count && ret == 0; i++) {
		char path[VOL_PATH_MAX], *e;
		int32_t version;
		uint64_t vid;

		errno = 0;
		vid = strtoull(kids.data[i], &e, 10);
		if (errno || *e || vid == 0 || vid > SDFS_VID_MAX) {
			log_warn("%s/%s: not a volume id, ignored", dir, kids.data[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, kids.data[i]);
		ret = fence_get_locked(c, path, &ents[cnt].token, &version);
		if (ret == -EBADMSG) {
			ret = 0;        /* warned */
			continue;
		}
		if (ret == 0 && version >= 0)   /* not deleted meanwhile */
			ents[cnt++].vid = vid;
	}
	deallocate_String_vector(&kids);
	if (ret) {
		free(ents);
		return ret;
	}
	*out = ents;
	*n = cnt;
	return 0;
}

int coord_vol_fence_list(struct coord *c,
			 int (*fn)(void *arg, uint64_t vid, uint32_t token),
			 void *arg)
{
	struct fence_ent *ents = NULL;
	size_t n = 0;
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = fence_read_all(c, &ents, &n);
	pthread_rwlock_unlock(&c->zlock);
	/* Called without zlock: @fn may take its time. */
	for (size_t i = 0; ret == 0 && i < n; i++)
		ret = fn(arg, ents[i].vid, ents[i].token);
	free(ents);
	return ret;
}

int coord_vol_lock_join(struct coord *c, uint64_t ino, const char *holder,
			char *node, size_t len)
{
	char dir[VOL_DIR_MAX];
	int ret = 0;

	if (strlen(holder) >= COORD_VOL_HOLDER_MAX)
		return -ENAMETOOLONG;
	queue_path(c, ino, dir, sizeof(dir));
	for (int tries = 0; tries < VOL_TRIES; tries++) {
		ret = coord_queue_join(c, dir, VOL_LOCK_PREFIX, holder, node, len);
		if (ret != -ENOENT)
			return ret;
		/* No queue yet, or a last leaver removed it just now. */
		pthread_rwlock_rdlock(&c->zlock);
		ret = make_path(c, dir);
		pthread_rwlock_unlock(&c->zlock);
		if (ret)
			return ret;
	}
	return -EAGAIN;
}

/* The data of @dir/@name into @holder (NULL ok). zlock held. */
static int read_holder(struct coord *c, const char *dir, const char *name,
		       char *holder, size_t len)
{
	char path[VOL_PATH_MAX], *doc;
	struct Stat st;
	int n, ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ret = coord_get_doc(c, path, 0, &doc, &n, &st);
	if (ret)
		return ret;
	if (holder && len)
		snprintf(holder, len, "%s", doc);
	free(doc);
	return 0;
}

/*
 * The first of @ino's queue: 1 with its name compared to @mine (NULL:
 * none) in *@is_mine and its description in @holder; 0 if the queue is
 * empty; -ENOENT if @mine is not in it; -errno.
 */
static int queue_first(struct coord *c, uint64_t ino, const char *mine,
		       int *is_mine, char *holder, size_t len)
{
	char dir[VOL_DIR_MAX];
	int ret = -EAGAIN;

	queue_path(c, ino, dir, sizeof(dir));
	for (int tries = 0; tries < VOL_TRIES && ret == -EAGAIN; tries++) {
		struct String_vector kids = { 0 };
		int found = !mine;

		pthread_rwlock_rdlock(&c->zlock);
		ret = coord_queue_list(c, dir, &kids);
		for (int i = 0; ret == 0 && mine && i < kids.count; i++)
			found |= strcmp(kids.data[i], mine) == 0;
		if (ret == -ENOENT || (ret == 0 && kids.count == 0))
			ret = mine ? -ENOENT : 0;
		else if (ret == 0 && !found)
			ret = -ENOENT;
		else if (ret == 0) {
			*is_mine = mine && strcmp(kids.data[0], mine) == 0;
			ret = *is_mine ? 1 : read_holder(c, dir, kids.data[0], holder, len);
			if (ret == 0)
				ret = 1;
			else if (ret == -ENOENT)
				ret = -EAGAIN;  /* the first left meanwhile: again */
		}
		deallocate_String_vector(&kids);
		pthread_rwlock_unlock(&c->zlock);
	}
	return ret;
}

static const char *base_name(const char *node)
{
	const char *s = strrchr(node, '/');

	return s ? s + 1 : node;
}

int coord_vol_lock_first(struct coord *c, uint64_t ino, const char *node,
			 char *holder, size_t len)
{
	int mine = 0, ret = queue_first(c, ino, base_name(node), &mine, holder, len);

	if (ret < 0)
		return ret;
	return mine ? 0 : -EBUSY;
}

int coord_vol_lock_wait(struct coord *c, uint64_t ino, const char *node,
			int timeout_ms)
{
	struct timespec now;
	char dir[VOL_DIR_MAX];
	int64_t end;
	int ret;

	queue_path(c, ino, dir, sizeof(dir));
	clock_gettime(CLOCK_MONOTONIC, &now);
	end = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + timeout_ms;
	for (;;) {
		int64_t left;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = end - ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
		ret = coord_queue_wait(c, dir, base_name(node),
				       left > 0 ? (int)left : 0);
		if (ret != -EAGAIN)
			return ret;
		if (left <= 0)
			return -ETIMEDOUT;
	}
}

int coord_vol_lock_release(struct coord *c, uint64_t ino, const char *node)
{
	char dir[VOL_DIR_MAX];
	int rc;

	queue_path(c, ino, dir, sizeof(dir));
	pthread_rwlock_rdlock(&c->zlock);
	rc = zoo_delete(c->zh, node, -1);
	if (rc == ZOK || rc == ZNONODE) {
		/* The queue goes with its last member; a joiner racing us
		 * makes it again (coord_vol_lock_join). */
		int rc2 = zoo_delete(c->zh, dir, -1);

		if (rc2 != ZOK && rc2 != ZNONODE && rc2 != ZNOTEMPTY)
			log_debug("%s: %s", dir, zerror(rc2));
		rc = ZOK;
	}
	pthread_rwlock_unlock(&c->zlock);
	return coord_zerr(rc);
}

int coord_vol_lock_holder(struct coord *c, uint64_t ino, char *holder, size_t len)
{
	int mine = 0;

	return queue_first(c, ino, NULL, &mine, holder, len);
}
