/*
 * coord_client.c - see coord_client.h.
 */
#include "common/coord_client.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/coord_int.h"

static void client_dir(const struct coord *c, char *out, size_t len)
{
	snprintf(out, len, "%s/clients", c->base);
}

int coord_client_register(struct coord *c, uint64_t id, const char *desc)
{
	char dir[PATH_MAX_LEN], path[PATH_MAX_LEN + 32];
	int rc;

	client_dir(c, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%016" PRIx64, dir, id);
	pthread_rwlock_rdlock(&c->zlock);
	/* The node first: a client of a secured cluster may not create the
	 * directory (coord_open made it), and ZooKeeper checks that before
	 * whether it exists. */
	for (int tries = 0; tries < 2; tries++) {
		rc = zoo_create(c->zh, path, desc, desc ? (int)strlen(desc) : -1,
				coord_acl(c, COORD_ACL_READ), ZOO_EPHEMERAL, NULL, 0);
		if (rc != ZNONODE || tries)
			break;
		int ret = coord_ensure(c, dir, COORD_ACL_DIR);
		if (ret) {
			pthread_rwlock_unlock(&c->zlock);
			return ret;
		}
	}
	pthread_rwlock_unlock(&c->zlock);
	return rc == ZNODEEXISTS ? 0 : coord_zerr(rc);
}

int coord_client_unregister(struct coord *c, uint64_t id)
{
	char dir[PATH_MAX_LEN], path[PATH_MAX_LEN + 32];
	int rc;

	client_dir(c, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%016" PRIx64, dir, id);
	pthread_rwlock_rdlock(&c->zlock);
	rc = zoo_delete(c->zh, path, -1);
	pthread_rwlock_unlock(&c->zlock);
	return rc == ZNONODE ? 0 : coord_zerr(rc);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int coord_client_list(struct coord *c, uint64_t **out, size_t *n)
{
	struct String_vector kids = { 0 };
	char dir[PATH_MAX_LEN];
	uint64_t *ids;
	size_t m = 0;
	int rc;

	client_dir(c, dir, sizeof(dir));
	pthread_rwlock_rdlock(&c->zlock);
	rc = zoo_get_children(c->zh, dir, 0, &kids);
	pthread_rwlock_unlock(&c->zlock);
	if (rc == ZNONODE) {
		*out = NULL;
		*n = 0;
		return 0;
	}
	if (rc != ZOK)
		return coord_zerr(rc);
	ids = calloc((size_t)kids.count + 1, sizeof(*ids));
	if (!ids) {
		deallocate_String_vector(&kids);
		return -ENOMEM;
	}
	for (int i = 0; i < kids.count; i++) {
		const char *s = kids.data[i];
		char *e;

		if (strlen(s) != 16)
			continue;
		errno = 0;
		uint64_t v = strtoull(s, &e, 16);
		if (!errno && !*e)
			ids[m++] = v;
	}
	deallocate_String_vector(&kids);
	qsort(ids, m, sizeof(*ids), cmp_u64);
	*out = ids;
	*n = m;
	return 0;
}

int coord_client_listed(const uint64_t *ids, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ids[mid] == id)
			return 1;
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}
