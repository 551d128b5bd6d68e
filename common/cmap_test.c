/*
 * cmap_test.c - unit tests for cmap.c: the cluster map, member and
 * cluster config documents (round trips, the exact text an operator
 * sees in zkCli, hostile input), lookups, and the map's ring.
 *
 * Decoders must treat input as hostile, so most tests feed malformed
 * documents and expect -EBADMSG with *out untouched; a fuzz loop with a
 * fixed seed mutates valid documents and checks every accepted map is
 * well formed. Run under -fsanitize=address,undefined to catch reads
 * past the buffer (inputs are copied into exact-size, unterminated
 * allocations for that reason). No shared state between tests.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/cmap.h"

static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return XXH3_64bits(s, sizeof(*s));
}

static struct cmap_node mknode(uint32_t id, const char *host, uint16_t port,
			       uint32_t zone, uint32_t weight, uint8_t state)
{
	struct cmap_node nd = { .node_id = id, .zone = zone, .weight = weight,
				.port = port, .state = state };

	snprintf(nd.host, sizeof(nd.host), "%s", host);
	return nd;
}

/* Deliberately unsorted, both states, extreme fields. */
static struct cmap_node sample[6];

static void fill_sample(void)
{
	sample[0] = mknode(7, "10.0.0.7", 7000, 2, 100, CMAP_UP);
	sample[1] = mknode(2, "blockd-2.example.org", 65535, 1, 100, CMAP_DOWN);
	sample[2] = mknode(UINT32_MAX, "127.0.0.1", 1, UINT32_MAX, UINT32_MAX, CMAP_UP);
	sample[3] = mknode(11, "10.0.0.11", 7011, 0, 0, CMAP_UP);
	sample[4] = mknode(1, "h", 7001, 2, 1, CMAP_DOWN);
	sample[5] = mknode(5, "10.0.0.5", 7005, 3, 250, CMAP_UP);
	/* two with a cluster address (sdfs.conf cluster_addr) */
	sample[0].cport = 7100;
	snprintf(sample[0].chost, sizeof(sample[0].chost), "192.168.7.7");
	sample[5].cport = 1;
	snprintf(sample[5].chost, sizeof(sample[5].chost), "blockd-5.cluster.example");
}

TestSuite(cmap, .init = fill_sample);
TestSuite(cmap_doc, .init = fill_sample);
TestSuite(cmap_hostile);
TestSuite(cmap_member, .init = fill_sample);
TestSuite(cluster_config);

#define NSAMPLE (sizeof(sample) / sizeof(sample[0]))

/* Decode from an exact-size copy with no terminating NUL. */
static int decode_exact(const char *doc, size_t len, struct cmap **out)
{
	char *copy = malloc(len ? len : 1);
	int ret;

	cr_assert_not_null(copy);
	memcpy(copy, doc, len);
	ret = cmap_decode(copy, len, out);
	free(copy);
	return ret;
}

static void assert_nodes_eq(const struct cmap_node *a, const struct cmap_node *b)
{
	cr_assert_eq(a->node_id, b->node_id);
	cr_assert_eq(a->zone, b->zone, "node %u", a->node_id);
	cr_assert_eq(a->weight, b->weight, "node %u", a->node_id);
	cr_assert_eq(a->port, b->port, "node %u", a->node_id);
	cr_assert_eq(a->state, b->state, "node %u", a->node_id);
	cr_assert_str_eq(a->host, b->host, "node %u", a->node_id);
	cr_assert_eq(a->cport, b->cport, "node %u", a->node_id);
	cr_assert_str_eq(a->chost, b->chost, "node %u", a->node_id);
}

/* The invariants every decoded map must hold, whatever its input. */
static void assert_well_formed(const struct cmap *m)
{
	cr_assert_not_null(m->ring);
	cr_assert(m->epoch >= 1 && m->epoch <= UINT32_MAX);
	cr_assert_eq(ring_epoch(m->ring), m->epoch);
	cr_assert_leq(m->n, RING_MAX_NODES);
	cr_assert_eq(ring_nodes(m->ring), m->n);
	for (size_t i = 0; i < m->n; i++) {
		const struct cmap_node *nd = &m->nodes[i];

		cr_assert_neq(nd->node_id, 0);
		if (i)
			cr_assert_gt(nd->node_id, m->nodes[i - 1].node_id,
				     "nodes sorted and unique");
		cr_assert_neq(nd->port, 0);
		cr_assert_leq(nd->state, CMAP_DOWN);
		size_t hl = strnlen(nd->host, sizeof(nd->host));
		cr_assert(hl > 0 && hl < sizeof(nd->host), "host terminated, nonempty");
		cr_assert_eq(cmap_find(m, nd->node_id), nd);
	}
}

/* ---- building and finding ---- */

Test(cmap, new_sorts_nodes_by_id)
{
	struct cmap *m;

	cr_assert_eq(cmap_new(3, sample, NSAMPLE, &m), 0);
	cr_assert_eq(m->epoch, 3);
	cr_assert_eq(m->n, NSAMPLE);
	assert_well_formed(m);
	cr_assert_eq(m->nodes[0].node_id, 1);
	cr_assert_eq(m->nodes[NSAMPLE - 1].node_id, UINT32_MAX);
	cmap_free(m);
}

Test(cmap, new_copies_the_callers_array)
{
	struct cmap_node nodes[2] = { mknode(2, "a", 1, 0, 1, CMAP_UP),
				      mknode(1, "b", 2, 1, 1, CMAP_UP) };
	struct cmap *m;

	cr_assert_eq(cmap_new(1, nodes, 2, &m), 0);
	cr_assert_eq(nodes[0].node_id, 2, "caller's array left in its order");
	memset(nodes, 0, sizeof(nodes));
	cr_assert_str_eq(cmap_find(m, 2)->host, "a");
	cmap_free(m);
}

Test(cmap, new_refuses_duplicate_zero_and_too_many_ids)
{
	struct cmap_node dup[3] = { mknode(4, "a", 1, 0, 1, CMAP_UP),
				    mknode(9, "b", 1, 0, 1, CMAP_UP),
				    mknode(4, "c", 1, 0, 1, CMAP_UP) };
	struct cmap_node zero[1] = { mknode(0, "a", 1, 0, 1, CMAP_UP) };
	struct cmap_node *many = calloc(RING_MAX_NODES + 1, sizeof(*many));
	struct cmap *m = (struct cmap *)0x1;

	cr_assert_not_null(many);
	for (uint32_t i = 0; i <= RING_MAX_NODES; i++)
		many[i] = mknode(i + 1, "h", 1, i % 4, 1, CMAP_UP);
	cr_assert_eq(cmap_new(1, dup, 3, &m), -EINVAL);
	cr_assert_eq(cmap_new(1, zero, 1, &m), -EINVAL);
	cr_assert_eq(cmap_new(1, many, RING_MAX_NODES + 1, &m), -EINVAL);
	cr_assert_eq(m, (struct cmap *)0x1, "*out untouched on failure");
	cr_assert_eq(cmap_new(1, many, RING_MAX_NODES, &m), 0);
	cr_assert_eq(m->n, RING_MAX_NODES);
	cmap_free(m);
	free(many);
}

Test(cmap, find_returns_each_node_and_null_for_missing_ids)
{
	struct cmap *m;
	const uint32_t missing[] = { 0, 3, 4, 6, 8, 10, 12, 1000, UINT32_MAX - 1 };

	cr_assert_eq(cmap_new(3, sample, NSAMPLE, &m), 0);
	for (size_t i = 0; i < NSAMPLE; i++) {
		const struct cmap_node *nd = cmap_find(m, sample[i].node_id);

		cr_assert_not_null(nd, "node %u", sample[i].node_id);
		assert_nodes_eq(nd, &sample[i]);
	}
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++)
		cr_assert_null(cmap_find(m, missing[i]), "id %u", missing[i]);
	cmap_free(m);
}

Test(cmap, empty_map_finds_and_places_nothing)
{
	struct cmap *m;
	uint32_t out[3];

	cr_assert_eq(cmap_new(1, NULL, 0, &m), 0);
	cr_assert_eq(m->n, 0);
	cr_assert_null(cmap_find(m, 1));
	cr_assert_eq(ring_place(m->ring, 42, 3, out), 0);
	cmap_free(m);
}

Test(cmap, ring_places_onto_the_maps_nodes)
{
	struct cmap *m;
	size_t weighted = 0;

	cr_assert_eq(cmap_new(9, sample, NSAMPLE, &m), 0);
	cr_assert_eq(ring_epoch(m->ring), 9);
	cr_assert_eq(ring_nodes(m->ring), NSAMPLE);
	for (size_t i = 0; i < NSAMPLE; i++)
		weighted += sample[i].weight > 0;
	for (uint64_t oid = 0; oid < 2000; oid++) {
		uint32_t out[RING_MAX_COPIES];
		int n = ring_place(m->ring, oid * 0x9e3779b97f4a7c15ull, 3, out);

		cr_assert_eq(n, 3 < weighted ? 3 : (int)weighted);
		for (int i = 0; i < n; i++) {
			const struct cmap_node *nd = cmap_find(m, out[i]);

			cr_assert_not_null(nd, "oid %" PRIu64 " placed on unknown node %u",
					   oid, out[i]);
			cr_assert_gt(nd->weight, 0);
			for (int j = 0; j < i; j++)
				cr_assert_neq(out[i], out[j]);
		}
	}
	cmap_free(m);
}

Test(cmap, free_accepts_null)
{
	cmap_free(NULL);
}

Test(cmap, state_names)
{
	cr_assert_str_eq(cmap_state_name(CMAP_UP), "up");
	cr_assert_str_eq(cmap_state_name(CMAP_DOWN), "down");
	cr_assert_str_eq(cmap_state_name(CMAP_OUT), "out");
	cr_assert_str_eq(cmap_state_name(3), "?");
	cr_assert_str_eq(cmap_state_name(~0u), "?");
}

/* ---- map documents ---- */

Test(cmap_doc, round_trip_keeps_every_field_and_sorts)
{
	struct cmap *m, *back = NULL;
	char *doc;

	cr_assert_eq(cmap_new(UINT32_MAX, sample, NSAMPLE, &m), 0);
	cr_assert_eq(cmap_encode(m, &doc), 0);
	cr_assert_eq(decode_exact(doc, strlen(doc), &back), 0, "%s", doc);
	cr_assert_eq(back->epoch, UINT32_MAX);
	cr_assert_eq(back->n, NSAMPLE);
	assert_well_formed(back);
	for (size_t i = 0; i < NSAMPLE; i++)
		assert_nodes_eq(&back->nodes[i], &m->nodes[i]);
	free(doc);
	cmap_free(back);
	cmap_free(m);
}

Test(cmap_doc, unsorted_document_decodes_sorted)
{
	const char *doc =
		"sdfs-map 1\n"
		"epoch 4\n"
		"node 30 10.0.0.30:7000 zone=3 weight=1 state=up\n"
		"node 10 10.0.0.10:7000 zone=1 weight=1 state=down\n"
		"node 20 10.0.0.20:7000 zone=2 weight=1 state=up\n";
	struct cmap *m;

	cr_assert_eq(decode_exact(doc, strlen(doc), &m), 0);
	cr_assert_eq(m->n, 3);
	cr_assert_eq(m->nodes[0].node_id, 10);
	cr_assert_eq(m->nodes[0].state, CMAP_DOWN);
	cr_assert_eq(m->nodes[1].node_id, 20);
	cr_assert_eq(m->nodes[2].node_id, 30);
	assert_well_formed(m);
	cmap_free(m);
}

Test(cmap_doc, encodes_the_documented_text)
{
	struct cmap_node nodes[2] = {
		mknode(2, "10.0.0.2", 7002, 1, 100, CMAP_DOWN),
		mknode(1, "10.0.0.1", 7001, 0, 50, CMAP_UP),
	};
	struct cmap *m;
	char *doc;

	cr_assert_eq(cmap_new(12, nodes, 2, &m), 0);
	cr_assert_eq(cmap_encode(m, &doc), 0);
	cr_assert_str_eq(doc,
		"sdfs-map 1\n"
		"epoch 12\n"
		"node 1 10.0.0.1:7001 zone=0 weight=50 state=up\n"
		"node 2 10.0.0.2:7002 zone=1 weight=100 state=down\n");
	free(doc);
	cmap_free(m);
}

Test(cmap_doc, zversion_is_not_part_of_the_document)
{
	struct cmap *m, *back;
	char *a, *b;

	cr_assert_eq(cmap_new(5, sample, NSAMPLE, &m), 0);
	m->zversion = 0;
	cr_assert_eq(cmap_encode(m, &a), 0);
	m->zversion = 123456;
	cr_assert_eq(cmap_encode(m, &b), 0);
	cr_assert_str_eq(a, b);
	cr_assert_eq(decode_exact(b, strlen(b), &back), 0);
	cr_assert_eq(back->zversion, 0, "set by the caller from the znode stat");
	free(a);
	free(b);
	cmap_free(back);
	cmap_free(m);
}

Test(cmap_doc, map_without_nodes_round_trips)
{
	struct cmap *m, *back;
	char *doc;

	cr_assert_eq(cmap_new(1, NULL, 0, &m), 0);
	cr_assert_eq(cmap_encode(m, &doc), 0);
	cr_assert_str_eq(doc, "sdfs-map 1\nepoch 1\n");
	cr_assert_eq(decode_exact(doc, strlen(doc), &back), 0);
	cr_assert_eq(back->n, 0);
	free(doc);
	cmap_free(back);
	cmap_free(m);
}

Test(cmap_doc, accepts_blank_lines_tabs_and_epoch_after_nodes)
{
	const char *doc =
		"\n\nsdfs-map\t1\n\n"
		"node  3 \t h3:3 zone=0 weight=1 state=up  \n"
		"\n"
		"epoch 8\n";
	struct cmap *m;

	cr_assert_eq(decode_exact(doc, strlen(doc), &m), 0);
	cr_assert_eq(m->epoch, 8);
	cr_assert_eq(m->n, 1);
	cr_assert_str_eq(m->nodes[0].host, "h3");
	cmap_free(m);
}

Test(cmap_doc, reads_only_len_bytes)
{
	const char *doc = "sdfs-map 1\nepoch 5\nthis is not part of it";
	struct cmap *m;

	cr_assert_eq(decode_exact(doc, strlen("sdfs-map 1\nepoch 5\n"), &m), 0);
	cr_assert_eq(m->epoch, 5);
	cr_assert_eq(m->n, 0);
	cmap_free(m);
	/* and without the last newline */
	cr_assert_eq(decode_exact(doc, strlen("sdfs-map 1\nepoch 5"), &m), 0);
	cr_assert_eq(m->epoch, 5);
	cmap_free(m);
}

Test(cmap_doc, host_of_max_length_fits)
{
	char host[CMAP_MAX_HOST], doc[256];
	struct cmap *m;

	memset(host, 'a', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(doc, sizeof(doc), "sdfs-map 1\nepoch 1\n"
		 "node 1 %s:1 zone=0 weight=1 state=up\n", host);
	cr_assert_eq(decode_exact(doc, strlen(doc), &m), 0);
	cr_assert_str_eq(m->nodes[0].host, host);
	cmap_free(m);
}

/* A map document of @n nodes, each on its own line. */
static char *doc_with_nodes(size_t n)
{
	size_t cap = 64 + n * 64, len;
	char *doc = malloc(cap);

	cr_assert_not_null(doc);
	len = (size_t)snprintf(doc, cap, "sdfs-map 1\nepoch 2\n");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(doc + len, cap - len,
					"node %zu 10.0.%zu.%zu:7000 zone=%zu weight=1 state=up\n",
					i + 1, i / 256, i % 256, i % 8);
	return doc;
}

Test(cmap_doc, accepts_ring_max_nodes)
{
	char *doc = doc_with_nodes(RING_MAX_NODES);
	struct cmap *m;

	cr_assert_eq(decode_exact(doc, strlen(doc), &m), 0);
	cr_assert_eq(m->n, RING_MAX_NODES);
	cmap_free(m);
	free(doc);
}

Test(cmap_doc, accepts_document_of_exactly_max_size)
{
	const char *valid = "sdfs-map 1\nepoch 3\nnode 1 h:1 zone=0 weight=1 state=up\n";
	char *doc = malloc(CMAP_MAX_DOC);
	struct cmap *m;

	cr_assert_not_null(doc);
	memset(doc, '\n', CMAP_MAX_DOC);
	memcpy(doc, valid, strlen(valid));
	cr_assert_eq(decode_exact(doc, CMAP_MAX_DOC, &m), 0);
	cr_assert_eq(m->n, 1);
	cmap_free(m);
	free(doc);
}

/* ---- hostile map documents ---- */

struct bad_doc {
	const char *why;
	const char *doc;
};

#define HDR "sdfs-map 1\nepoch 1\n"
#define NODE_OK "node 1 10.0.0.1:7000 zone=0 weight=1 state=up\n"

static void expect_all_rejected(const struct bad_doc *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cmap *m = (struct cmap *)0x1;
		int ret = decode_exact(cases[i].doc, strlen(cases[i].doc), &m);

		cr_assert_eq(ret, -EBADMSG, "%s: got %d for:\n%s", cases[i].why, ret,
			     cases[i].doc);
		cr_assert_eq(m, (struct cmap *)0x1, "%s: *out written", cases[i].why);
	}
}

#define REJECT_ALL(...) do { \
	static const struct bad_doc cases[] = { __VA_ARGS__ }; \
	expect_all_rejected(cases, sizeof(cases) / sizeof(cases[0])); \
} while (0)

Test(cmap_hostile, control_document_is_accepted)
{
	struct cmap *m;

	/* the base every case below breaks in one place */
	cr_assert_eq(decode_exact(HDR NODE_OK, strlen(HDR NODE_OK), &m), 0);
	cmap_free(m);
}

Test(cmap_hostile, rejects_empty_documents)
{
	REJECT_ALL(
		{ "empty", "" },
		{ "only newlines", "\n\n\n" },
		{ "only blanks", "  \t \n \n" },
	);
}

Test(cmap_hostile, rejects_wrong_header)
{
	REJECT_ALL(
		{ "member header", "sdfs-member 1\nepoch 1\n" },
		{ "config header", "sdfs-config 1\nepoch 1\n" },
		{ "no header", "epoch 1\n" NODE_OK },
		{ "header after epoch", "epoch 1\nsdfs-map 1\n" },
		{ "header without version", "sdfs-map\nepoch 1\n" },
		{ "header with extra token", "sdfs-map 1 x\nepoch 1\n" },
		{ "header in capitals", "SDFS-MAP 1\nepoch 1\n" },
		{ "header twice", "sdfs-map 1\nsdfs-map 1\nepoch 1\n" },
	);
}

Test(cmap_hostile, rejects_wrong_version)
{
	REJECT_ALL(
		{ "version 0", "sdfs-map 0\nepoch 1\n" },
		{ "version 2", "sdfs-map 2\nepoch 1\n" },
		{ "version 01", "sdfs-map 01\nepoch 1\n" },
		{ "version 1.0", "sdfs-map 1.0\nepoch 1\n" },
		{ "version -1", "sdfs-map -1\nepoch 1\n" },
	);
}

Test(cmap_hostile, rejects_missing_or_bad_epoch)
{
	REJECT_ALL(
		{ "missing epoch", "sdfs-map 1\n" NODE_OK },
		{ "epoch 0", "sdfs-map 1\nepoch 0\n" },
		{ "epoch above UINT32_MAX", "sdfs-map 1\nepoch 4294967296\n" },
		{ "epoch overflows u64", "sdfs-map 1\nepoch 18446744073709551616\n" },
		{ "epoch negative", "sdfs-map 1\nepoch -1\n" },
		{ "epoch with sign", "sdfs-map 1\nepoch +1\n" },
		{ "epoch hex", "sdfs-map 1\nepoch 0x10\n" },
		{ "epoch not a number", "sdfs-map 1\nepoch one\n" },
		{ "epoch with suffix", "sdfs-map 1\nepoch 1x\n" },
		{ "epoch without value", "sdfs-map 1\nepoch\n" },
		{ "epoch with two values", "sdfs-map 1\nepoch 1 2\n" },
		{ "duplicate epoch line", "sdfs-map 1\nepoch 1\nepoch 1\n" },
		{ "two different epochs", "sdfs-map 1\nepoch 1\nepoch 2\n" },
	);
}

Test(cmap_hostile, rejects_bad_node_ids)
{
	REJECT_ALL(
		{ "node id 0", HDR "node 0 h:1 zone=0 weight=1 state=up\n" },
		{ "node id negative", HDR "node -1 h:1 zone=0 weight=1 state=up\n" },
		{ "node id above u32", HDR "node 4294967296 h:1 zone=0 weight=1 state=up\n" },
		{ "node id not a number", HDR "node x h:1 zone=0 weight=1 state=up\n" },
		{ "duplicate node ids", HDR NODE_OK "node 1 10.0.0.2:7000 zone=1 weight=1 state=up\n" },
		{ "duplicate ids apart", HDR NODE_OK
			"node 2 h:1 zone=0 weight=1 state=up\n" NODE_OK },
	);
}

Test(cmap_hostile, rejects_bad_addresses)
{
	REJECT_ALL(
		{ "no port", HDR "node 1 10.0.0.1 zone=0 weight=1 state=up\n" },
		{ "empty port", HDR "node 1 10.0.0.1: zone=0 weight=1 state=up\n" },
		{ "empty host", HDR "node 1 :7000 zone=0 weight=1 state=up\n" },
		{ "port 0", HDR "node 1 10.0.0.1:0 zone=0 weight=1 state=up\n" },
		{ "port 65536", HDR "node 1 10.0.0.1:65536 zone=0 weight=1 state=up\n" },
		{ "port overflows", HDR "node 1 h:99999999999999999999999 zone=0 weight=1 state=up\n" },
		{ "port negative", HDR "node 1 h:-1 zone=0 weight=1 state=up\n" },
		{ "port with suffix", HDR "node 1 h:70x zone=0 weight=1 state=up\n" },
		{ "host of 64 chars", HDR "node 1 "
			"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			":7000 zone=0 weight=1 state=up\n" },
		{ "host of 300 chars", HDR "node 1 "
			"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
			"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
			"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
			":7000 zone=0 weight=1 state=up\n" },
	);
}

Test(cmap_hostile, rejects_bad_zone_and_weight)
{
	REJECT_ALL(
		{ "zone negative", HDR "node 1 h:1 zone=-1 weight=1 state=up\n" },
		{ "zone empty", HDR "node 1 h:1 zone= weight=1 state=up\n" },
		{ "zone not a number", HDR "node 1 h:1 zone=abc weight=1 state=up\n" },
		{ "zone with suffix", HDR "node 1 h:1 zone=1k weight=1 state=up\n" },
		{ "zone with sign", HDR "node 1 h:1 zone=+1 weight=1 state=up\n" },
		{ "zone above u32", HDR "node 1 h:1 zone=4294967296 weight=1 state=up\n" },
		{ "zone overflows u64", HDR "node 1 h:1 zone=18446744073709551616 weight=1 state=up\n" },
		{ "zone key misspelt", HDR "node 1 h:1 zon=1 weight=1 state=up\n" },
		{ "zone with colon", HDR "node 1 h:1 zone:1 weight=1 state=up\n" },
		{ "weight negative", HDR "node 1 h:1 zone=0 weight=-5 state=up\n" },
		{ "weight empty", HDR "node 1 h:1 zone=0 weight= state=up\n" },
		{ "weight not a number", HDR "node 1 h:1 zone=0 weight=heavy state=up\n" },
		{ "weight fractional", HDR "node 1 h:1 zone=0 weight=1.5 state=up\n" },
		{ "weight above u32", HDR "node 1 h:1 zone=0 weight=4294967296 state=up\n" },
		{ "weight overflows u64", HDR "node 1 h:1 zone=0 weight=99999999999999999999999 state=up\n" },
		{ "zone and weight swapped", HDR "node 1 h:1 weight=1 zone=0 state=up\n" },
	);
}

Test(cmap_hostile, rejects_unknown_state)
{
	REJECT_ALL(
		{ "state UP", HDR "node 1 h:1 zone=0 weight=1 state=UP\n" },
		{ "state empty", HDR "node 1 h:1 zone=0 weight=1 state=\n" },
		{ "state dead", HDR "node 1 h:1 zone=0 weight=1 state=dead\n" },
		{ "state upx", HDR "node 1 h:1 zone=0 weight=1 state=upx\n" },
		{ "state number", HDR "node 1 h:1 zone=0 weight=1 state=0\n" },
		{ "state key misspelt", HDR "node 1 h:1 zone=0 weight=1 stat=up\n" },
		{ "state bare", HDR "node 1 h:1 zone=0 weight=1 up\n" },
	);
}

Test(cmap_hostile, rejects_wrong_token_counts_and_unknown_lines)
{
	REJECT_ALL(
		{ "node line with 7 tokens", HDR "node 1 h:1 zone=0 weight=1 state=up x\n" },
		{ "node line with 8 tokens", HDR "node 1 h:1 zone=0 weight=1 state=up x y\n" },
		{ "node line with 9 tokens", HDR "node 1 h:1 zone=0 weight=1 state=up x y z\n" },
		{ "node line with 40 tokens", HDR "node 1 h:1 zone=0 weight=1 state=up "
			"a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a\n" },
		{ "node line with 5 tokens", HDR "node 1 h:1 zone=0 weight=1\n" },
		{ "bare node", HDR "node\n" },
		{ "header with 9 tokens", "sdfs-map 1 a b c d e f g\nepoch 1\n" },
		{ "unknown line", HDR "color blue\n" },
		{ "unknown line with node fields", HDR "nodes 1 h:1 zone=0 weight=1 state=up\n" },
	);
}

Test(cmap_hostile, rejects_embedded_nul)
{
	const char doc[] = HDR NODE_OK;
	size_t len = sizeof(doc) - 1;
	char *copy = malloc(len + 1);

	cr_assert_not_null(copy);
	for (size_t at = 0; at <= len; at++) {
		struct cmap *m = (struct cmap *)0x1;

		memcpy(copy, doc, at);
		copy[at] = '\0';
		memcpy(copy + at + 1, doc + at, len - at);
		cr_assert_eq(cmap_decode(copy, len + 1, &m), -EBADMSG, "NUL at %zu", at);
		cr_assert_eq(m, (struct cmap *)0x1);
	}
	free(copy);
}

Test(cmap_hostile, rejects_document_above_max_size)
{
	const char *valid = HDR NODE_OK;
	char *doc = malloc(CMAP_MAX_DOC + 1);
	struct cmap *m = (struct cmap *)0x1;

	cr_assert_not_null(doc);
	memset(doc, '\n', CMAP_MAX_DOC + 1);
	memcpy(doc, valid, strlen(valid));
	cr_assert_eq(cmap_decode(doc, CMAP_MAX_DOC + 1, &m), -EBADMSG);
	cr_assert_eq(cmap_decode(doc, SIZE_MAX, &m), -EBADMSG);
	cr_assert_eq(m, (struct cmap *)0x1);
	free(doc);
}

Test(cmap_hostile, rejects_more_than_ring_max_nodes)
{
	char *doc = doc_with_nodes(RING_MAX_NODES + 1);
	struct cmap *m = (struct cmap *)0x1;

	cr_assert_eq(decode_exact(doc, strlen(doc), &m), -EBADMSG);
	cr_assert_eq(m, (struct cmap *)0x1);
	free(doc);
}

/* ---- fuzz: mutations of a valid document ---- */

static const char interesting[] = "0123456789 \t\n:=-+epochnodezoneweightstate\0";

static size_t mutate(uint64_t *seed, char *buf, size_t len, size_t cap)
{
	unsigned steps = 1 + (unsigned)(rng_next(seed) % 4);

	for (unsigned s = 0; s < steps; s++) {
		uint64_t r = rng_next(seed);
		size_t at = len ? (size_t)(r >> 8) % len : 0;
		char c = (r >> 40) & 1 ? interesting[(r >> 41) % sizeof(interesting)]
				       : (char)(r >> 48);

		switch (r % 3) {
		case 0:         /* flip one bit */
			if (len)
				buf[at] ^= (char)(1u << ((r >> 4) % 8));
			break;
		case 1:         /* insert a byte */
			if (len < cap) {
				at = (size_t)(r >> 8) % (len + 1);
				memmove(buf + at + 1, buf + at, len - at);
				buf[at] = c;
				len++;
			}
			break;
		default:        /* delete a byte */
			if (len) {
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
			}
			break;
		}
	}
	return len;
}

Test(cmap_fuzz, mutated_map_documents_fail_cleanly_or_decode_well_formed, .timeout = 60)
{
	struct cmap *base;
	char *doc, buf[1024];
	uint64_t seed = 10;
	size_t base_len;
	unsigned accepted = 0;

	fill_sample();
	cr_assert_eq(cmap_new(77, sample, NSAMPLE, &base), 0);
	cr_assert_eq(cmap_encode(base, &doc), 0);
	base_len = strlen(doc);
	cr_assert_lt(base_len, sizeof(buf) / 2);
	for (int i = 0; i < 20000; i++) {
		struct cmap *m = NULL, *again = NULL;
		char *re;
		size_t len;
		int ret;

		memcpy(buf, doc, base_len);
		len = mutate(&seed, buf, base_len, sizeof(buf));
		ret = decode_exact(buf, len, &m);
		if (ret) {
			cr_assert_eq(ret, -EBADMSG, "iteration %d: %d", i, ret);
			cr_assert_null(m);
			continue;
		}
		accepted++;
		assert_well_formed(m);
		/* what was accepted encodes to a document that means the same */
		cr_assert_eq(cmap_encode(m, &re), 0);
		cr_assert_eq(decode_exact(re, strlen(re), &again), 0, "iteration %d", i);
		cr_assert_eq(again->epoch, m->epoch);
		cr_assert_eq(again->n, m->n);
		for (size_t k = 0; k < m->n; k++)
			assert_nodes_eq(&again->nodes[k], &m->nodes[k]);
		free(re);
		cmap_free(again);
		cmap_free(m);
	}
	/* the loop must exercise both outcomes to mean anything */
	cr_assert_gt(accepted, 100);
	cr_assert_lt(accepted, 19000);
	free(doc);
	cmap_free(base);
}

Test(cmap_fuzz, mutated_member_documents_fail_cleanly, .timeout = 60)
{
	char *doc, buf[512];
	uint64_t seed = 11;
	size_t base_len;

	fill_sample();
	cr_assert_eq(cmap_member_encode(&sample[1], &doc), 0);
	base_len = strlen(doc);
	for (int i = 0; i < 20000; i++) {
		struct cmap_node nd;
		char *copy;
		size_t len;
		int ret;

		memcpy(buf, doc, base_len);
		len = mutate(&seed, buf, base_len, sizeof(buf));
		copy = malloc(len ? len : 1);
		memcpy(copy, buf, len);
		ret = cmap_member_decode(copy, len, &nd);
		free(copy);
		cr_assert(ret == 0 || ret == -EBADMSG, "iteration %d: %d", i, ret);
		if (!ret) {
			cr_assert_neq(nd.node_id, 0);
			cr_assert_neq(nd.port, 0);
			cr_assert_leq(nd.state, CMAP_DOWN);
			cr_assert_lt(strnlen(nd.host, sizeof(nd.host)), sizeof(nd.host));
		}
	}
	free(doc);
}

Test(cmap_fuzz, mutated_config_documents_fail_cleanly, .timeout = 60)
{
	const struct cluster_config cfg = {
		.uuid = "0b7e7c1e-3f4a-4c55-9a51-1f0e2d3c4b5a", .copies = 3,
		.obj_size = 4u << 20, .created = 1700000000,
	};
	char *doc, buf[512];
	uint64_t seed = 12;
	size_t base_len;

	cr_assert_eq(cluster_config_encode(&cfg, &doc), 0);
	base_len = strlen(doc);
	for (int i = 0; i < 20000; i++) {
		struct cluster_config c;
		char *copy;
		size_t len;
		int ret;

		memcpy(buf, doc, base_len);
		len = mutate(&seed, buf, base_len, sizeof(buf));
		copy = malloc(len ? len : 1);
		memcpy(copy, buf, len);
		ret = cluster_config_decode(copy, len, &c);
		free(copy);
		cr_assert(ret == 0 || ret == -EBADMSG, "iteration %d: %d", i, ret);
		if (!ret) {
			size_t ul = strnlen(c.uuid, sizeof(c.uuid));

			cr_assert(ul > 0 && ul < sizeof(c.uuid));
			cr_assert(c.copies >= 1 && c.copies <= RING_MAX_COPIES);
			cr_assert(c.obj_size > 0 && c.obj_size % 4096 == 0 &&
				  c.obj_size <= (64u << 20));
		}
	}
	free(doc);
}

/* ---- member documents ---- */

static int member_decode_exact(const char *doc, struct cmap_node *nd)
{
	size_t len = strlen(doc);
	char *copy = malloc(len ? len : 1);
	int ret;

	cr_assert_not_null(copy);
	memcpy(copy, doc, len);
	ret = cmap_member_decode(copy, len, nd);
	free(copy);
	return ret;
}

Test(cmap_member, round_trips_every_node)
{
	for (size_t i = 0; i < NSAMPLE; i++) {
		struct cmap_node back;
		char *doc;

		cr_assert_eq(cmap_member_encode(&sample[i], &doc), 0);
		cr_assert_eq(member_decode_exact(doc, &back), 0, "%s", doc);
		assert_nodes_eq(&back, &sample[i]);
		free(doc);
	}
}

Test(cmap_member, encodes_the_documented_text)
{
	struct cmap_node nd = mknode(4, "10.1.2.3", 7004, 2, 100, CMAP_UP);
	char *doc;

	cr_assert_eq(cmap_member_encode(&nd, &doc), 0);
	cr_assert_str_eq(doc, "sdfs-member 1\n"
			      "node 4 10.1.2.3:7004 zone=2 weight=100 state=up\n");
	free(doc);
}

/* The cluster network (docs/config.md cluster_addr): an optional field;
 * a document without it, as every one before it existed, means the
 * public address serves the peers too. */
Test(cmap_member, cluster_address_round_trips_and_is_optional)
{
	struct cmap_node nd = mknode(4, "10.1.2.3", 7004, 2, 100, CMAP_UP), back, peer;
	const char *old = "sdfs-member 1\nnode 4 10.1.2.3:7004 zone=2 weight=100 "
			  "state=up full=1\n";
	char *doc;

	nd.cport = 7104;
	strcpy(nd.chost, "192.168.1.3");
	cr_assert_eq(cmap_member_encode(&nd, &doc), 0);
	cr_assert_str_eq(doc, "sdfs-member 1\n"
			      "node 4 10.1.2.3:7004 zone=2 weight=100 state=up "
			      "cluster=192.168.1.3:7104\n");
	cr_assert_eq(member_decode_exact(doc, &back), 0);
	assert_nodes_eq(&back, &nd);
	cr_assert_eq(cmap_node_peer(&back, &peer), &peer);
	cr_assert_str_eq(peer.host, "192.168.1.3");
	cr_assert_eq(peer.port, 7104);
	cr_assert_eq(peer.node_id, 4);
	free(doc);

	cr_assert_eq(member_decode_exact(old, &back), 0);
	cr_assert_eq(back.cport, 0);
	cr_assert_str_eq(back.chost, "");
	cr_assert_eq(back.full, 1);
	cmap_node_peer(&back, &peer);
	cr_assert_str_eq(peer.host, "10.1.2.3", "no cluster address: the public one");
	cr_assert_eq(peer.port, 7004);
}

Test(cmap_doc, map_without_cluster_addresses_parses_and_mixes)
{
	const char *doc =
		"sdfs-map 1\n"
		"epoch 9\n"
		"node 1 10.0.0.1:7000 zone=0 weight=1 state=up\n"
		"node 2 10.0.0.2:7000 zone=1 weight=1 state=up cluster=10.9.0.2:7000\n"
		"node 3 10.0.0.3:7000 zone=2 weight=1 state=down down=5 drain=1\n";
	struct cmap *m;
	char *again;

	cr_assert_eq(decode_exact(doc, strlen(doc), &m), 0);
	assert_well_formed(m);
	cr_assert_eq(m->nodes[0].cport, 0);
	cr_assert_eq(m->nodes[1].cport, 7000);
	cr_assert_str_eq(m->nodes[1].chost, "10.9.0.2");
	cr_assert_eq(m->nodes[2].cport, 0);
	cr_assert_eq(cmap_encode(m, &again), 0);
	cr_assert_str_eq(again, doc, "re-encoded as it came");
	free(again);
	cmap_free(m);
}

Test(cmap_member, rejects_malformed_cluster_addresses)
{
	static const char *const bad[] = {
		"sdfs-member 1\nnode 4 h:1 zone=0 weight=1 state=up cluster=\n",
		"sdfs-member 1\nnode 4 h:1 zone=0 weight=1 state=up cluster=h\n",
		"sdfs-member 1\nnode 4 h:1 zone=0 weight=1 state=up cluster=h:0\n",
		"sdfs-member 1\nnode 4 h:1 zone=0 weight=1 state=up cluster=h:70000\n",
		"sdfs-member 1\nnode 4 h:1 zone=0 weight=1 state=up cluster=:7\n",
		"sdfs-member 1\nnode 4 h:1 zone=0 weight=1 state=up cluster=h:1 "
		"cluster=g:2\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cmap_node nd;

		cr_assert_eq(member_decode_exact(bad[i], &nd), -EBADMSG, "%s", bad[i]);
	}
}

Test(cmap_member, rejects_malformed_documents)
{
	static const char *const bad[] = {
		"",
		"sdfs-member 1\n",
		"sdfs-member 2\nnode 4 h:1 zone=0 weight=1 state=up\n",
		"sdfs-map 1\nnode 4 h:1 zone=0 weight=1 state=up\n",
		"node 4 h:1 zone=0 weight=1 state=up\n",
		"sdfs-member 1\nnode 4 h:1 zone=0 weight=1 state=up\n"
		"node 5 h:1 zone=0 weight=1 state=up\n",
		"sdfs-member 1\nepoch 3\n",
		"sdfs-member 1\nnode 0 h:1 zone=0 weight=1 state=up\n",
		"sdfs-member 1\nnode 4 h:0 zone=0 weight=1 state=up\n",
		"sdfs-member 1\nnode 4 h zone=0 weight=1 state=up\n",
		"sdfs-member 1\nnode 4 h:1 zone=0 weight=1 state=gone\n",
		"sdfs-member 1\nnode 4 h:1 zone=0 weight=x state=up\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cmap_node nd;

		cr_assert_eq(member_decode_exact(bad[i], &nd), -EBADMSG, "%s", bad[i]);
	}
}

Test(cmap_member, rejects_embedded_nul)
{
	const char doc[] = "sdfs-member 1\nnode 4 h:1 zone=0 weight=1 state=up\n\0";
	struct cmap_node nd;

	cr_assert_eq(cmap_member_decode(doc, sizeof(doc) - 1, &nd), -EBADMSG);
	cr_assert_eq(cmap_member_decode(doc, sizeof(doc) - 2, &nd), 0);
}

/* ---- cluster config documents ---- */

static int config_decode_exact(const char *doc, struct cluster_config *c)
{
	size_t len = strlen(doc);
	char *copy = malloc(len ? len : 1);
	int ret;

	cr_assert_not_null(copy);
	memcpy(copy, doc, len);
	ret = cluster_config_decode(copy, len, c);
	free(copy);
	return ret;
}

Test(cluster_config, round_trips_every_field)
{
	const struct cluster_config in[] = {
		{ .uuid = "0b7e7c1e-3f4a-4c55-9a51-1f0e2d3c4b5a", .copies = 3,
		  .obj_size = 4u << 20, .created = 1700000000 },
		{ .uuid = "x", .copies = 1, .obj_size = 4096, .created = 0 },
		{ .uuid = "123456789012345678901234567890123456789", /* 39 chars */
		  .copies = RING_MAX_COPIES, .obj_size = 64u << 20, .created = UINT64_MAX },
	};

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct cluster_config out;
		char *doc;

		cr_assert_eq(cluster_config_encode(&in[i], &doc), 0);
		cr_assert_eq(config_decode_exact(doc, &out), 0, "%s", doc);
		cr_assert_str_eq(out.uuid, in[i].uuid);
		cr_assert_eq(out.copies, in[i].copies);
		cr_assert_eq(out.obj_size, in[i].obj_size);
		cr_assert_eq(out.created, in[i].created);
		free(doc);
	}
}

Test(cluster_config, encodes_the_documented_text)
{
	const struct cluster_config c = { .uuid = "abc", .copies = 2,
					  .obj_size = 1u << 20, .created = 42,
					  .out_grace_ms = 5000 };
	char *doc;

	cr_assert_eq(cluster_config_encode(&c, &doc), 0);
	cr_assert_str_eq(doc, "sdfs-config 1\nuuid abc\ncopies 2\nobj_size 1048576\n"
			      "created 42\nout_grace_ms 5000\nauth none\n");
	free(doc);
}

/* auth (issue 15): written always, "required" or "none"; a document
 * from before it has none; anything else is malformed. */
Test(cluster_config, auth_round_trips_and_defaults_to_none_when_absent)
{
	struct cluster_config c = { .uuid = "u", .copies = 1, .obj_size = 4096,
				    .auth = CMAP_AUTH_REQUIRED }, out;
	const char old[] = "sdfs-config 1\nuuid u\ncopies 3\nobj_size 4096\n";
	const char bad[] = "sdfs-config 1\nuuid u\ncopies 3\nobj_size 4096\nauth maybe\n";
	char *doc;

	cr_assert_eq(cluster_config_encode(&c, &doc), 0);
	cr_assert(strstr(doc, "\nauth required\n"), "%s", doc);
	cr_assert_eq(config_decode_exact(doc, &out), 0);
	cr_assert_eq(out.auth, CMAP_AUTH_REQUIRED);
	free(doc);
	cr_assert_eq(config_decode_exact(old, &out), 0);
	cr_assert_eq(out.auth, CMAP_AUTH_NONE);
	cr_assert_eq(config_decode_exact(bad, &out), -EBADMSG);
}

Test(cluster_config, out_grace_defaults_when_absent)
{
	const char doc[] = "sdfs-config 1\nuuid u\ncopies 3\nobj_size 4096\n";
	struct cluster_config c;

	cr_assert_eq(cluster_config_decode(doc, strlen(doc), &c), 0);
	cr_assert_eq(c.out_grace_ms, CMAP_DEFAULT_OUT_GRACE_MS);
}

Test(cmap, node_options_round_trip_and_out_nodes_are_not_placed)
{
	struct cmap_node nodes[3] = {
		{ .node_id = 1, .zone = 0, .weight = 1, .port = 1, .host = "h" },
		{ .node_id = 2, .zone = 1, .weight = 1, .port = 2, .host = "h",
		  .state = CMAP_OUT, .down_ms = 1234 },
		{ .node_id = 3, .zone = 2, .weight = 9, .port = 3, .host = "h",
		  .drain = 1, .wset = 1 },
	};
	struct cmap *m, *back;
	uint32_t ids[3];
	char *doc;

	cr_assert_eq(cmap_new(5, nodes, 3, &m), 0);
	cr_assert_eq(cmap_encode(m, &doc), 0);
	cr_assert_eq(cmap_decode(doc, strlen(doc), &back), 0);
	cr_assert_eq(back->nodes[1].state, CMAP_OUT);
	cr_assert_eq(back->nodes[1].down_ms, 1234);
	cr_assert(back->nodes[2].drain && back->nodes[2].wset);
	for (uint64_t oid = 0; oid < 100; oid++) {
		cr_assert_eq(ring_place(back->ring, oid, 3, ids), 1);
		cr_assert_eq(ids[0], 1, "only node 1 is placed");
	}
	free(doc);
	cmap_free(m);
	cmap_free(back);
}

/*
 * A full node (issue 14): the flag rides on the node line of the map
 * and of the member document, after the other options, and leaves
 * placement alone (a full node keeps its objects); a line without it,
 * as every older map has, decodes to not full.
 */
Test(cmap, full_flag_round_trips_and_keeps_placement)
{
	struct cmap_node nodes[2] = {
		{ .node_id = 1, .zone = 0, .weight = 1, .port = 1, .host = "h" },
		{ .node_id = 2, .zone = 1, .weight = 1, .port = 2, .host = "h",
		  .state = CMAP_UP, .wset = 1, .full = 1 },
	};
	const char old[] = "sdfs-map 1\nepoch 5\n"
			   "node 1 h:1 zone=0 weight=1 state=up\n"
			   "node 2 h:2 zone=1 weight=1 state=up wset=1\n";
	struct cmap *m, *back, *prev;
	struct cmap_node mem;
	uint32_t a[2], b[2];
	char *doc, *mdoc;

	cr_assert_eq(cmap_new(5, nodes, 2, &m), 0);
	cr_assert_eq(cmap_encode(m, &doc), 0);
	cr_assert_str_eq(doc, "sdfs-map 1\nepoch 5\n"
			      "node 1 h:1 zone=0 weight=1 state=up\n"
			      "node 2 h:2 zone=1 weight=1 state=up wset=1 full=1\n");
	cr_assert_eq(decode_exact(doc, strlen(doc), &back), 0);
	cr_assert_eq(back->nodes[0].full, 0);
	cr_assert_eq(back->nodes[1].full, 1);
	cr_assert_eq(back->nodes[1].wset, 1);
	cr_assert(cmap_node_is_placed(&back->nodes[1]), "a full node stays placed");

	/* An older map, without the flag: parses, nobody full, same ring. */
	cr_assert_eq(decode_exact(old, strlen(old), &prev), 0);
	cr_assert(!prev->nodes[0].full && !prev->nodes[1].full);
	for (uint64_t oid = 0; oid < 200; oid++) {
		cr_assert_eq(ring_place(back->ring, oid, 2, a), 2);
		cr_assert_eq(ring_place(prev->ring, oid, 2, b), 2);
		cr_assert(a[0] == b[0] && a[1] == b[1], "oid %" PRIu64 ": placement "
			  "moved with the full flag", oid);
	}

	/* The member document carries it the same way. */
	cr_assert_eq(cmap_member_encode(&nodes[1], &mdoc), 0);
	cr_assert_str_eq(mdoc, "sdfs-member 1\n"
			       "node 2 h:2 zone=1 weight=1 state=up wset=1 full=1\n");
	cr_assert_eq(cmap_member_decode(mdoc, strlen(mdoc), &mem), 0);
	cr_assert_eq(mem.full, 1);
	free(mdoc);
	nodes[1].full = 0;
	cr_assert_eq(cmap_member_encode(&nodes[1], &mdoc), 0);
	cr_assert_null(strstr(mdoc, "full"), "%s", mdoc);
	free(mdoc);
	free(doc);
	cmap_free(m);
	cmap_free(back);
	cmap_free(prev);
}

Test(cmap, rejects_unknown_or_repeated_node_options)
{
	static const char *const bad[] = {
		"sdfs-map 1\nepoch 2\nnode 1 h:1 zone=0 weight=1 state=up bogus=1\n",
		"sdfs-map 1\nepoch 2\nnode 1 h:1 zone=0 weight=1 state=up drain=1 drain=1\n",
		"sdfs-map 1\nepoch 2\nnode 1 h:1 zone=0 weight=1 state=up full=1 full=1\n",
		"sdfs-map 1\nepoch 2\nnode 1 h:1 zone=0 weight=1 state=up full=0\n",
		"sdfs-map 1\nepoch 2\nnode 1 h:1 zone=0 weight=1 state=up full=2\n",
		"sdfs-map 1\nepoch 2\nnode 1 h:1 zone=0 weight=1 state=up down=0\n",
		"sdfs-map 1\nepoch 2\nnode 1 h:1 zone=0 weight=1 state=gone\n",
	};
	struct cmap *m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(cmap_decode(bad[i], strlen(bad[i]), &m), -EBADMSG, "%s", bad[i]);
}

Test(cluster_config, ignores_unknown_keys)
{
	struct cluster_config c;

	cr_assert_eq(config_decode_exact("sdfs-config 1\nuuid u\nec 4+2\ncopies 2\n"
					 "obj_size 8192\nfuture_key something\n", &c), 0);
	cr_assert_eq(c.copies, 2);
	cr_assert_eq(c.obj_size, 8192);
}

#define CFG_OK_TAIL "copies 3\nobj_size 4194304\ncreated 1\n"

Test(cluster_config, rejects_malformed_documents)
{
	static const struct bad_doc bad[] = {
		{ "empty", "" },
		{ "header only", "sdfs-config 1\n" },
		{ "wrong header", "sdfs-map 1\nuuid u\n" CFG_OK_TAIL },
		{ "wrong version", "sdfs-config 2\nuuid u\n" CFG_OK_TAIL },
		{ "no header", "uuid u\n" CFG_OK_TAIL },
		{ "missing uuid", "sdfs-config 1\n" CFG_OK_TAIL },
		{ "uuid of 40 chars", "sdfs-config 1\n"
			"uuid 1234567890123456789012345678901234567890\n" CFG_OK_TAIL },
		{ "uuid of 200 chars", "sdfs-config 1\nuuid "
			"12345678901234567890123456789012345678901234567890"
			"12345678901234567890123456789012345678901234567890"
			"12345678901234567890123456789012345678901234567890"
			"12345678901234567890123456789012345678901234567890\n" CFG_OK_TAIL },
		{ "uuid without value", "sdfs-config 1\nuuid\n" CFG_OK_TAIL },
		{ "missing copies", "sdfs-config 1\nuuid u\nobj_size 4096\n" },
		{ "copies 0", "sdfs-config 1\nuuid u\ncopies 0\nobj_size 4096\n" },
		{ "copies 17", "sdfs-config 1\nuuid u\ncopies 17\nobj_size 4096\n" },
		{ "copies negative", "sdfs-config 1\nuuid u\ncopies -1\nobj_size 4096\n" },
		{ "copies huge", "sdfs-config 1\nuuid u\ncopies 4294967299\nobj_size 4096\n" },
		{ "copies not a number", "sdfs-config 1\nuuid u\ncopies three\nobj_size 4096\n" },
		{ "copies two values", "sdfs-config 1\nuuid u\ncopies 2 3\nobj_size 4096\n" },
		{ "missing obj_size", "sdfs-config 1\nuuid u\ncopies 2\n" },
		{ "obj_size 0", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 0\n" },
		{ "obj_size 4095", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 4095\n" },
		{ "obj_size 4097", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 4097\n" },
		{ "obj_size 1000000", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 1000000\n" },
		{ "obj_size 64 MiB + 4096", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 67112960\n" },
		{ "obj_size 128 MiB", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 134217728\n" },
		{ "obj_size 2^32", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 4294967296\n" },
		{ "obj_size overflows", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 99999999999999999999999\n" },
		{ "obj_size negative", "sdfs-config 1\nuuid u\ncopies 2\nobj_size -4096\n" },
		{ "created overflows", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 4096\n"
			"created 18446744073709551616\n" },
		{ "created negative", "sdfs-config 1\nuuid u\ncopies 2\nobj_size 4096\ncreated -1\n" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cluster_config c;

		cr_assert_eq(config_decode_exact(bad[i].doc, &c), -EBADMSG, "%s", bad[i].why);
	}
}

Test(cluster_config, rejects_embedded_nul)
{
	const char doc[] = "sdfs-config 1\nuuid u\ncopies 2\nobj_size 4096\n\0";
	struct cluster_config c;

	cr_assert_eq(cluster_config_decode(doc, sizeof(doc) - 1, &c), -EBADMSG);
	cr_assert_eq(cluster_config_decode(doc, sizeof(doc) - 2, &c), 0);
}
