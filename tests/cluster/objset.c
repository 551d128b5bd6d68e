/*
 * objset.c - see objset.h.
 */
#include "tests/cluster/objset.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cluster/fixture.h"

#define MAX_COPIES 16
#define PARTIAL_MAX (64 * 1024)

struct obj {
	uint64_t oid;
	unsigned char *data;    /* last acknowledged content */
	size_t size;
	int exists;
};

struct objset {
	struct sdfs *s;
	uint32_t max_size;
	unsigned n;
	uint64_t rng;
	struct obj *o;
	unsigned char *rbuf;    /* for reads: max_size */
};

struct objset *objset_new(struct sdfs *s, unsigned n, uint32_t max_size, uint64_t seed)
{
	struct objset *os = calloc(1, sizeof(*os));

	cr_assert(os && n && max_size);
	os->s = s;
	os->n = n;
	os->max_size = max_size;
	os->rng = seed;
	os->o = calloc(n, sizeof(*os->o));
	os->rbuf = malloc(max_size);
	cr_assert(os->o && os->rbuf);
	for (unsigned i = 0; i < n; i++) {
		uint64_t oid;
		int dup;

		do {    /* distinct, and never 0 */
			oid = trand(&os->rng) >> 8;  /* kind 0: raw objects (a volume kind would carry its own copies) */
			dup = oid == 0;
			for (unsigned k = 0; k < i && !dup; k++)
				dup = os->o[k].oid == oid;
		} while (dup);
		os->o[i].oid = oid;
	}
	return os;
}

void objset_free(struct objset *os)
{
	if (!os)
		return;
	for (unsigned i = 0; i < os->n; i++)
		free(os->o[i].data);
	free(os->o);
	free(os->rbuf);
	free(os);
}

unsigned objset_count(const struct objset *os)
{
	return os->n;
}

uint64_t objset_oid(const struct objset *os, unsigned i)
{
	return os->o[i].oid;
}

int objset_exists(const struct objset *os, unsigned i)
{
	return os->o[i].exists;
}

const unsigned char *objset_data(const struct objset *os, unsigned i, size_t *size)
{
	*size = os->o[i].exists ? os->o[i].size : 0;
	return os->o[i].exists ? os->o[i].data : NULL;
}

/* Mostly small; a tenth up to the set's maximum. */
static size_t pick_size(struct objset *os)
{
	uint64_t r = trand(&os->rng) % 100, max = os->max_size;

	if (r < 60)
		return 1 + trand(&os->rng) % (max < 16384 ? max : 16384);
	if (r < 90)
		return 1 + trand(&os->rng) % (max < 131072 ? max : 131072);
	return 1 + trand(&os->rng) % max;
}

/* Run @op until it succeeds, says ENOENT (an answer, not a failure to
 * get one), or @deadline_ms passes. */
#define RETRY(ret, op, deadline_ms, retries)                                   \
	for (;;) {                                                             \
		(ret) = (op);                                                  \
		if ((ret) == 0 || (ret) == -ENOENT || tnow_ms() >= (deadline_ms)) \
			break;                                                 \
		if (retries)                                                   \
			(*(retries))++;                                        \
		tsleep_ms(50);                                                 \
	}

int objset_change(struct objset *os, unsigned i, int64_t deadline_ms, unsigned *retries)
{
	struct obj *o = &os->o[i];
	unsigned char *buf;
	int ret;

	if (o->exists && trand(&os->rng) % 3 == 0) {
		/* A range inside the object or running past its end. */
		uint64_t off = trand(&os->rng) % (o->size + 1), room, len;

		if (trand(&os->rng) % 2)
			off &= ~(uint64_t)4095;
		if (off >= os->max_size)
			off = 0;
		room = os->max_size - off;
		len = 1 + trand(&os->rng) % (room < PARTIAL_MAX ? room : PARTIAL_MAX);
		buf = malloc(len);
		if (!buf)
			return -ENOMEM;
		tfill_random(buf, len, trand(&os->rng));
		RETRY(ret, sdfs_obj_write(os->s, o->oid, buf, len, off), deadline_ms, retries);
		if (ret == 0) {
			size_t nsize = off + len > o->size ? off + len : o->size;
			unsigned char *d = realloc(o->data, nsize);

			if (!d) {
				free(buf);
				return -ENOMEM;
			}
			memcpy(d + off, buf, len);
			o->data = d;
			o->size = nsize;
		}
		free(buf);
		return ret;
	}
	size_t size = pick_size(os);

	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	tfill_random(buf, size, trand(&os->rng));
	RETRY(ret, sdfs_obj_put(os->s, o->oid, buf, size), deadline_ms, retries);
	if (ret) {
		free(buf);
		return ret;
	}
	free(o->data);
	o->data = buf;
	o->size = size;
	o->exists = 1;
	return 0;
}

int objset_remove(struct objset *os, unsigned i, int64_t deadline_ms)
{
	struct obj *o = &os->o[i];
	int ret;

	RETRY(ret, sdfs_obj_remove(os->s, o->oid), deadline_ms, (unsigned *)NULL);
	if (ret == -ENOENT && !o->exists)
		ret = 0;
	if (ret)
		return ret;
	free(o->data);
	o->data = NULL;
	o->size = 0;
	o->exists = 0;
	return 0;
}

void objset_check_reads(struct objset *os, const char *when)
{
	for (unsigned i = 0; i < os->n; i++) {
		struct obj *o = &os->o[i];
		ssize_t got = sdfs_obj_read(os->s, o->oid, os->rbuf, os->max_size, 0);

		if (!o->exists) {
			cr_assert_eq(got, -ENOENT, "%s: object #%u (oid %016" PRIx64 ") does "
				     "not exist, but reads %zd (%s)", when, i, o->oid, got,
				     got < 0 ? strerror((int)-got) : "bytes");
			continue;
		}
		cr_assert_eq(got, (ssize_t)o->size, "%s: object #%u (oid %016" PRIx64 "): "
			     "read %zd, want %zu bytes (%s)", when, i, o->oid, got, o->size,
			     got < 0 ? strerror((int)-got) : "short or long");
		cr_assert(memcmp(os->rbuf, o->data, o->size) == 0, "%s: object #%u (oid %016"
			  PRIx64 ", %zu bytes) reads back other bytes than its last "
			  "acknowledged write", when, i, o->oid, o->size);
	}
}

void objset_check_replicas(struct objset *os, unsigned copies, uint32_t not_on,
			   uint64_t per_node[OBJSET_MAX_NODE + 1], const char *when)
{
	static struct sdfs_replica r[MAX_COPIES];

	cr_assert_leq(copies, MAX_COPIES);
	for (unsigned i = 0; i < os->n; i++) {
		struct obj *o = &os->o[i];
		size_t n;
		int ret = sdfs_obj_locate(os->s, o->oid, r, MAX_COPIES, &n);

		cr_assert_eq(ret, 0, "%s: locate #%u (oid %016" PRIx64 "): %s", when, i,
			     o->oid, strerror(-ret));
		cr_assert_eq(n, copies, "%s: object #%u (oid %016" PRIx64 ") has %zu placed "
			     "replicas, not %u", when, i, o->oid, n, copies);
		for (size_t k = 0; k < n; k++) {
			cr_assert_neq(r[k].node_id, not_on, "%s: object #%u (oid %016" PRIx64
				      ") is placed on node %u", when, i, o->oid, not_on);
			cr_assert_str_eq(r[k].state, "up", "%s: object #%u (oid %016" PRIx64
					 ") is placed on node %u, which is %s", when, i,
					 o->oid, r[k].node_id, r[k].state);
			for (size_t j = 0; j < k; j++)
				cr_assert_neq(r[j].node_id, r[k].node_id, "%s: object #%u "
					      "placed twice on node %u", when, i, r[k].node_id);
			if (per_node && r[k].node_id <= OBJSET_MAX_NODE)
				per_node[r[k].node_id]++;
			if (!o->exists) {
				cr_assert_eq(r[k].result, -ENOENT, "%s: object #%u (oid %016"
					     PRIx64 ") does not exist, but node %u says %d (%s)",
					     when, i, o->oid, r[k].node_id, r[k].result,
					     r[k].result ? strerror(-r[k].result) : "present");
				continue;
			}
			cr_assert_eq(r[k].result, 0, "%s: object #%u (oid %016" PRIx64 "): "
				     "replica on node %u: %s", when, i, o->oid, r[k].node_id,
				     strerror(-r[k].result));
			cr_assert_eq(r[k].size, o->size, "%s: object #%u (oid %016" PRIx64 "): "
				     "replica on node %u has %" PRIu64 " bytes, not %zu", when,
				     i, o->oid, r[k].node_id, r[k].size, o->size);
			cr_assert_eq(r[k].csum, r[0].csum, "%s: object #%u (oid %016" PRIx64
				     "): replicas on nodes %u and %u differ (csum %016" PRIx64
				     " / %016" PRIx64 ", epochs %" PRIu64 " / %" PRIu64 ")", when,
				     i, o->oid, r[0].node_id, r[k].node_id, r[0].csum, r[k].csum,
				     r[0].epoch, r[k].epoch);
		}
	}
}

size_t objset_placement(struct objset *os, unsigned i, uint32_t *ids, size_t max)
{
	static struct sdfs_replica r[MAX_COPIES];
	size_t n;
	int ret = sdfs_obj_locate(os->s, os->o[i].oid, r, MAX_COPIES, &n);

	cr_assert_eq(ret, 0, "locate: %s", strerror(-ret));
	for (size_t k = 0; k < n && k < max; k++)
		ids[k] = r[k].node_id;
	return n < max ? n : max;
}
