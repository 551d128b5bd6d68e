/*
 * coord_auth.c - see coord_auth.h.
 *
 * An entry's znode holds
 *   "SDK1" | nonce (24 bytes) | crypto_secretbox_easy(text)
 * keyed with auth_derive(secret, AUTH_DERIVE_DB); the text is
 *   sdfs-key 1
 *   name <name>                    must equal the znode's name
 *   key <base64>
 *   prev <base64>                  only with a previous key
 *   prev_until <ms>                0: none
 *   caps <auth_caps_format text>
 * A reader ignores lines it does not know (a later minor version may
 * add some); a new major changes the first line and "SDK1".
 * keydb_ent.gen is not stored: a read gives the znode's mzxid (the
 * ZooKeeper transaction that last wrote it), which rises with every
 * change, across a delete and re-create too.
 *
 * The follower (coord_auth_follow): a thread that reloads the whole
 * directory, arming a child watch on auth/ and a data watch on every
 * entry, whenever the watcher (coord_zk.c) reports an event under auth/
 * or the session (re)connected (after an expiry and coord_reopen every
 * watch is gone). A failed reload is retried every FOLLOW_RETRY_MS;
 * the keydb keeps what it had meanwhile.
 */
#include "common/coord_auth.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "common/coord_int.h"
#include "common/log.h"
#include "common/net.h"

#define SEAL_MAGIC "SDK1"
#define SEAL_MAGIC_LEN 4
#define SEAL_HDR (SEAL_MAGIC_LEN + crypto_secretbox_NONCEBYTES)
#define TEXT_MAX (AUTH_CAPS_STR_MAX + AUTH_NAME_MAX + 512)
#define FOLLOW_RETRY_MS 1000

struct coord_auth_follow {
	pthread_t thread;
	pthread_cond_t cond;            /* with c->lock */
	int dirty, stop;
	uint8_t secret[AUTH_KEY_BYTES];
	struct keydb *db;
	int64_t miss_next_ms;           /* fetch_miss: next read allowed (c->lock) */
};

static void entry_path(const struct coord *c, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", c->p_auth, name);
}

static int entry_format(const struct keydb_ent *e, char *out, size_t len)
{
	char key[AUTH_KEY_B64_LEN], prev[AUTH_KEY_B64_LEN], caps[AUTH_CAPS_STR_MAX];
	int n;

	if (auth_caps_format(&e->caps, caps, sizeof(caps)))
		return -ENOSPC;
	auth_key_to_b64(e->key, key);
	n = snprintf(out, len, "sdfs-key 1\nname %s\nkey %s\n", e->name, key);
	if (e->prev_until_ms > 0) {
		auth_key_to_b64(e->prev_key, prev);
		n += snprintf(out + n, len - (size_t)n, "prev %s\n", prev);
	}
	n += snprintf(out + n, len - (size_t)n, "prev_until %" PRId64 "\ncaps %s\n",
		      e->prev_until_ms > 0 ? e->prev_until_ms : 0, caps);
	sodium_memzero(key, sizeof(key));
	sodium_memzero(prev, sizeof(prev));
	return (size_t)n >= len ? -ENOSPC : n;
}

/* Parse @text (NUL-terminated) into @e. -EBADMSG on anything malformed. */
static int entry_parse(char *text, struct keydb_ent *e)
{
	char *save = NULL, *line, err[128];
	int have_name = 0, have_key = 0, have_caps = 0, first = 1;

	memset(e, 0, sizeof(*e));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *val = strchr(line, ' ');

		if (first) {
			if (strcmp(line, "sdfs-key 1"))
				return -EBADMSG;
			first = 0;
			continue;
		}
		if (!val)
			return -EBADMSG;
		*val++ = '\0';
		if (!strcmp(line, "name")) {
			if (!auth_name_ok(val))
				return -EBADMSG;
			snprintf(e->name, sizeof(e->name), "%s", val);
			have_name = 1;
		} else if (!strcmp(line, "key")) {
			if (auth_key_from_b64(val, e->key))
				return -EBADMSG;
			have_key = 1;
		} else if (!strcmp(line, "prev")) {
			if (auth_key_from_b64(val, e->prev_key))
				return -EBADMSG;
		} else if (!strcmp(line, "prev_until")) {
			char *end;

			errno = 0;
			e->prev_until_ms = strtoll(val, &end, 10);
			if (errno || *end || e->prev_until_ms < 0)
				return -EBADMSG;
		} else if (!strcmp(line, "caps")) {
			if (auth_caps_parse(val, &e->caps, err, sizeof(err))) {
				log_warn("key %s: caps \"%s\": %s", e->name, val, err);
				return -EBADMSG;
			}
			have_caps = 1;
		}
	}
	if (first || !have_name || !have_key || !have_caps)
		return -EBADMSG;
	if (!e->prev_until_ms)
		memset(e->prev_key, 0, sizeof(e->prev_key));
	return 0;
}

/* Seal @e: a malloc'd buffer in *@out, its length in *@len. */
static int entry_seal(const uint8_t secret[AUTH_KEY_BYTES], const struct keydb_ent *e,
		      uint8_t **out, size_t *len)
{
	uint8_t k[AUTH_KEY_BYTES];
	char text[TEXT_MAX];
	uint8_t *buf;
	int n = entry_format(e, text, sizeof(text));

	if (n < 0)
		return n;
	*len = SEAL_HDR + crypto_secretbox_MACBYTES + (size_t)n;
	buf = malloc(*len);
	if (!buf) {
		sodium_memzero(text, sizeof(text));
		return -ENOMEM;
	}
	memcpy(buf, SEAL_MAGIC, SEAL_MAGIC_LEN);
	randombytes_buf(buf + SEAL_MAGIC_LEN, crypto_secretbox_NONCEBYTES);
	auth_derive(secret, AUTH_DERIVE_DB, k);
	crypto_secretbox_easy(buf + SEAL_HDR, (const uint8_t *)text, (size_t)n,
			      buf + SEAL_MAGIC_LEN, k);
	sodium_memzero(k, sizeof(k));
	sodium_memzero(text, sizeof(text));
	*out = buf;
	return 0;
}

/* Open @len bytes of @buf into @e; its name must be @name. -EBADMSG. */
static int entry_open(const uint8_t secret[AUTH_KEY_BYTES], const char *name,
		      const uint8_t *buf, size_t len, struct keydb_ent *e)
{
	uint8_t k[AUTH_KEY_BYTES];
	char text[TEXT_MAX + 1];
	size_t n;
	int ret;

	if (len < SEAL_HDR + crypto_secretbox_MACBYTES ||
	    memcmp(buf, SEAL_MAGIC, SEAL_MAGIC_LEN))
		return -EBADMSG;
	n = len - SEAL_HDR - crypto_secretbox_MACBYTES;
	if (n > TEXT_MAX)
		return -EBADMSG;
	auth_derive(secret, AUTH_DERIVE_DB, k);
	ret = crypto_secretbox_open_easy((uint8_t *)text, buf + SEAL_HDR,
					 len - SEAL_HDR, buf + SEAL_MAGIC_LEN, k);
	sodium_memzero(k, sizeof(k));
	if (ret)
		return -EBADMSG;
	text[n] = '\0';
	ret = memchr(text, '\0', n) ? -EBADMSG : entry_parse(text, e);
	sodium_memzero(text, sizeof(text));
	if (ret == 0 && strcmp(e->name, name))
		ret = -EBADMSG;         /* moved to another name */
	if (ret)
		sodium_memzero(e, sizeof(*e));
	return ret;
}

int coord_auth_put(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		   const struct keydb_ent *e)
{
	char path[PATH_MAX_LEN * 2];
	uint8_t *buf;
	size_t len;
	int ret, rc = ZOK;

	if (!auth_name_ok(e->name))
		return -EINVAL;
	ret = entry_seal(secret, e, &buf, &len);
	if (ret)
		return ret;
	entry_path(c, e->name, path, sizeof(path));
	pthread_rwlock_rdlock(&c->zlock);
	for (int tries = 0; tries < 4; tries++) {
		rc = zoo_set(c->zh, path, (const char *)buf, (int)len, -1);
		if (rc != ZNONODE)
			break;
		rc = zoo_create(c->zh, path, (const char *)buf, (int)len,
				coord_acl(c, COORD_ACL_ADMIN), 0, NULL, 0);
		if (rc == ZNONODE) {    /* no auth/ yet (made by admin opens) */
			ret = coord_ensure(c, c->p_auth, COORD_ACL_ADMIN);
			if (ret)
				break;
			continue;
		}
		if (rc != ZNODEEXISTS)  /* made meanwhile: set it */
			break;
	}
	pthread_rwlock_unlock(&c->zlock);
	sodium_memzero(buf, len);
	free(buf);
	return ret ? ret : coord_zerr(rc);
}

/* Read and open one entry (zlock held). */
static int get_locked(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		      const char *name, int watch, struct keydb_ent *e)
{
	char path[PATH_MAX_LEN * 2], *doc;
	struct Stat st;
	int len, ret;

	if (!auth_name_ok(name))
		return -EINVAL;
	entry_path(c, name, path, sizeof(path));
	ret = coord_get_doc(c, path, watch, &doc, &len, &st);
	if (ret)
		return ret;
	ret = entry_open(secret, name, (const uint8_t *)doc, (size_t)len, e);
	sodium_memzero(doc, (size_t)len);
	free(doc);
	if (ret == 0)
		e->gen = (uint64_t)st.mzxid;
	return ret;
}

int coord_auth_get(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		   const char *name, struct keydb_ent *e)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = c->zh ? get_locked(c, secret, name, 0, e) : -ESHUTDOWN;
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

int coord_auth_del(struct coord *c, const char *name)
{
	char path[PATH_MAX_LEN * 2];
	int rc;

	if (!auth_name_ok(name))
		return -EINVAL;
	entry_path(c, name, path, sizeof(path));
	pthread_rwlock_rdlock(&c->zlock);
	rc = zoo_delete(c->zh, path, -1);
	pthread_rwlock_unlock(&c->zlock);
	return coord_zerr(rc);
}

static int cmp_ent(const void *a, const void *b)
{
	const struct keydb_ent *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Every entry that opens (zlock held); @watch arms the child watch and
 * a data watch on each entry. No auth/: none (with @watch, a watch for
 * its creation). */
static int list_locked(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		       int watch, struct keydb_ent **out, size_t *n)
{
	struct String_vector kids = { 0 };
	struct keydb_ent *v;
	size_t cnt = 0;
	int rc, ret = 0;

	if (!c->zh)
		return -ESHUTDOWN;
	rc = zoo_get_children(c->zh, c->p_auth, watch, &kids);
	if (rc == ZNONODE) {
		struct Stat st;

		if (watch) {
			rc = zoo_exists(c->zh, c->p_auth, 1, &st);
			if (rc != ZOK && rc != ZNONODE)
				return coord_zerr(rc);
			if (rc == ZOK)
				return -EAGAIN;   /* made meanwhile: again */
		}
		*out = NULL;
		*n = 0;
		return 0;
	}
	if (rc != ZOK)
		return coord_zerr(rc);
	v = calloc(kids.count ? (size_t)kids.count : 1, sizeof(*v));
	if (!v) {
		deallocate_String_vector(&kids);
		return -ENOMEM;
	}
	for (int i = 0; i < kids.count && !ret; i++) {
		ret = get_locked(c, secret, kids.data[i], watch, &v[cnt]);
		if (ret == 0) {
			cnt++;
		} else if (ret == -ENOENT) {
			ret = 0;        /* removed while we listed */
		} else if (ret == -EBADMSG || ret == -EINVAL) {
			log_warn("%s/%s: does not open with the cluster secret, "
				 "skipped", c->p_auth, kids.data[i]);
			ret = 0;
		}
	}
	deallocate_String_vector(&kids);
	if (ret) {
		sodium_memzero(v, cnt * sizeof(*v));
		free(v);
		return ret;
	}
	qsort(v, cnt, sizeof(*v), cmp_ent);
	*out = v;
	*n = cnt;
	return 0;
}

int coord_auth_list(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		    struct keydb_ent **out, size_t *n)
{
	int ret;

	pthread_rwlock_rdlock(&c->zlock);
	ret = list_locked(c, secret, 0, out, n);
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}

/* One reload of @f->db with watches armed. */
static int follow_load(struct coord *c, struct coord_auth_follow *f)
{
	struct keydb_ent *v = NULL;
	size_t n = 0;
	int ret = -EAGAIN;

	for (int tries = 0; tries < 3 && ret == -EAGAIN; tries++) {
		pthread_rwlock_rdlock(&c->zlock);
		ret = list_locked(c, f->secret, 1, &v, &n);
		pthread_rwlock_unlock(&c->zlock);
	}
	if (ret)
		return ret;
	ret = keydb_replace(f->db, v, n);
	sodium_memzero(v, n * sizeof(*v));
	free(v);
	return ret;
}

static void *follow_main(void *arg)
{
	struct coord *c = arg;
	struct coord_auth_follow *f = c->follow;

	pthread_mutex_lock(&c->lock);
	while (!f->stop) {
		if (!f->dirty) {
			pthread_cond_wait(&f->cond, &c->lock);
			continue;
		}
		f->dirty = 0;
		pthread_mutex_unlock(&c->lock);
		int ret = follow_load(c, f);
		pthread_mutex_lock(&c->lock);
		if (ret == 0) {
			log_debug("%s: %zu keys loaded", c->p_auth, keydb_count(f->db));
			continue;
		}
		log_every(LOG_EVERY_MS, LOG_WARNING, "%s: cannot reload the keys: %s "
			  "(retrying)", c->p_auth, strerror(-ret));
		/* Again after a pause, or at the next event. */
		f->dirty = 1;
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += (FOLLOW_RETRY_MS % 1000) * 1000000L;
		dl.tv_sec += FOLLOW_RETRY_MS / 1000 + dl.tv_nsec / 1000000000L;
		dl.tv_nsec %= 1000000000L;
		if (!f->stop)
			pthread_cond_timedwait(&f->cond, &c->lock, &dl);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int coord_auth_follow(struct coord *c, const uint8_t secret[AUTH_KEY_BYTES],
		      struct keydb *db)
{
	struct coord_auth_follow *f;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = c->follow ? -EBUSY : 0;
	pthread_mutex_unlock(&c->lock);
	if (ret)
		return ret;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	memcpy(f->secret, secret, AUTH_KEY_BYTES);
	f->db = db;
	pthread_cond_init(&f->cond, NULL);
	/* Registered before the first load: an event during it marks the
	 * keys dirty, and the thread loads them again. */
	pthread_mutex_lock(&c->lock);
	c->follow = f;
	pthread_mutex_unlock(&c->lock);
	ret = follow_load(c, f);
	if (ret == 0)
		ret = -pthread_create(&f->thread, NULL, follow_main, c);
	if (ret == 0)
		return 0;
	pthread_mutex_lock(&c->lock);
	c->follow = NULL;
	pthread_mutex_unlock(&c->lock);
	pthread_cond_destroy(&f->cond);
	sodium_memzero(f->secret, sizeof(f->secret));
	free(f);
	return ret;
}

void coord_auth_event(struct coord *c, const char *path)
{
	(void)path;
	pthread_mutex_lock(&c->lock);
	if (c->follow) {
		c->follow->dirty = 1;
		pthread_cond_signal(&c->follow->cond);
	}
	pthread_mutex_unlock(&c->lock);
}

void coord_auth_stop(struct coord *c)
{
	struct coord_auth_follow *f;

	pthread_mutex_lock(&c->lock);
	f = c->follow;
	if (f) {
		f->stop = 1;
		pthread_cond_signal(&f->cond);
	}
	pthread_mutex_unlock(&c->lock);
	if (!f)
		return;
	pthread_join(f->thread, NULL);
	pthread_mutex_lock(&c->lock);
	c->follow = NULL;
	pthread_mutex_unlock(&c->lock);
	pthread_cond_destroy(&f->cond);
	sodium_memzero(f->secret, sizeof(f->secret));
	free(f);
}

static int fetch_miss(void *arg, const char *name, struct keydb_ent *out)
{
	struct coord *c = arg;
	uint8_t secret[AUTH_KEY_BYTES];
	int ret = -EAGAIN;

	/* one caller a gap reads; the others miss as before */
	pthread_mutex_lock(&c->lock);
	if (c->follow && net_now_ms() >= c->follow->miss_next_ms) {
		c->follow->miss_next_ms = net_now_ms() + KEYDB_MISS_GAP_MS;
		memcpy(secret, c->follow->secret, sizeof(secret));
		ret = 0;
	}
	pthread_mutex_unlock(&c->lock);
	if (ret)
		return ret;
	ret = coord_auth_get(c, secret, name, out);
	sodium_memzero(secret, sizeof(secret));
	if (ret == 0)
		log_info("%s: key %s read at its first use, before the watch's reload",
			 c->p_auth, name);
	return ret;
}

int coord_auth_fetch_misses(struct coord *c, struct keydb *db)
{
	int ok;

	pthread_mutex_lock(&c->lock);
	ok = c->follow && c->follow->db == db;
	pthread_mutex_unlock(&c->lock);
	if (!ok)
		return -EINVAL;
	keydb_on_miss(db, fetch_miss, c);
	return 0;
}

int coord_auth_daemon_keys(struct coord *c, const struct keyring *kr, int have_kr,
			   const char *cluster, struct keydb **db)
{
	int ret;

	if (!have_kr || !kr->has_secret) {
		log_err("cluster=%s requires authentication: this daemon needs a "
			"keyring with its key and the cluster secret (--keyring, or "
			"keyring = in sdfs.conf; sdfs auth get)", cluster);
		return -EACCES;
	}
	ret = keydb_new(db);
	if (!ret)
		ret = coord_auth_follow(c, kr->secret, *db);
	if (ret)
		log_err("cannot load the cluster's keys: %s", strerror(-ret));
	return ret;
}
