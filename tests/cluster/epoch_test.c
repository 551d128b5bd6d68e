/*
 * epoch_test.c - requests carry the sender's map epoch: a blockd turns
 * away stale ones and unstamped mutations, and libsdfs follows the map
 * as nodes die and come back.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"

#define NBLOCKD 3
#define REPLY_MS 5000

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = NBLOCKD, .copies = 2 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(epoch, .init = up, .fini = down, .timeout = 120);

static uint64_t req_ids = 1;

/* Send @h (+@payload) on a fresh connection to @node; the reply header. */
static struct sdfs_hdr raw_call(const char *node, struct sdfs_hdr h, const void *payload)
{
	char addr[80];
	struct sdfs_hdr r;
	int fd;

	tcluster_node_addr(tc, node, addr, sizeof(addr));
	fd = wire_connect(addr);
	h.req_id = req_ids++;
	cr_assert_eq(wire_send_req(fd, &h, payload), 0);
	cr_assert_eq(wire_recv_hdr(fd, &r, REPLY_MS), 0, "no reply from %s", node);
	cr_assert_eq(r.req_id, h.req_id);
	cr_assert(r.flags & SDFS_F_REPLY);
	close(fd);
	return r;
}

/* The dev name of the first replica (in placement order) of @oid. */
static void primary_of(uint64_t oid, char *name, size_t len)
{
	struct sdfs_replica r[4];
	size_t n;

	cr_assert_eq(sdfs_obj_locate(tcluster_client(tc), oid, r, 4, &n), 0);
	cr_assert_geq(n, 1);
	cr_assert(tcluster_node_name(tc, r[0].node_id, name, len), "node %u unknown",
		  r[0].node_id);
}

static void write_and_check(uint64_t oid, size_t len)
{
	struct sdfs *s = tcluster_client(tc);
	char *in = malloc(len), *out = malloc(len + 1);

	cr_assert(in && out);
	tfill_random(in, len, oid);
	cr_assert_eq(sdfs_obj_write(s, oid, in, len, 0), 0, "write %" PRIu64, oid);
	cr_assert_eq(sdfs_obj_read(s, oid, out, len + 1, 0), (ssize_t)len, "read %" PRIu64, oid);
	cr_assert_arr_eq(in, out, len, "object %" PRIu64 " read back different", oid);
	free(in);
	free(out);
}

static void read_and_check(uint64_t oid, size_t len)
{
	char *in = malloc(len), *out = malloc(len + 1);

	cr_assert(in && out);
	tfill_random(in, len, oid);
	cr_assert_eq(sdfs_obj_read(tcluster_client(tc), oid, out, len + 1, 0), (ssize_t)len,
		     "read %" PRIu64, oid);
	cr_assert_arr_eq(in, out, len, "object %" PRIu64 " read back different", oid);
	free(in);
	free(out);
}

Test(epoch, read_with_stale_epoch_gets_old_epoch)
{
	uint64_t epoch = tcluster_epoch(tc);
	char node[32];

	cr_assert_geq(epoch, 2, "epoch %" PRIu64 " after %d joins", epoch, NBLOCKD);
	write_and_check(11, 5000);
	primary_of(11, node, sizeof(node));

	struct sdfs_hdr rd = { .opcode = SDFS_OP_OBJ_READ, .oid = 11, .length = 5000, .epoch = 1 };
	struct sdfs_hdr r = raw_call(node, rd, NULL);
	cr_assert_eq(r.result, SDFS_RES_OLD_EPOCH, "result %u", r.result);
	cr_assert_eq(r.payload_len, 0, "no data with a refusal");
	cr_assert_eq(r.epoch, epoch, "the reply carries the node's epoch");

	rd.epoch = (uint32_t)epoch;     /* the same read, current: served */
	r = raw_call(node, rd, NULL);
	cr_assert_eq(r.result, SDFS_RES_OK, "result %u", r.result);
	cr_assert_eq(r.payload_len, 5000);
}

/*
 * Each map is written for a membership change and every join adds at
 * least one node: the first map is epoch 2, so N joins end at 2..N+1.
 * More means a map was written that membership did not call for, such
 * as a live node marked down from a stale member list and then up again.
 */
Test(epoch, joins_write_one_map_at_most_per_join)
{
	uint64_t epoch = tcluster_epoch(tc);

	cr_assert(epoch >= 2 && epoch <= NBLOCKD + 1, "epoch %" PRIu64 " after %d joins "
		  "(see %s/log: a map written with no membership change?)", epoch, NBLOCKD,
		  tcluster_dir(tc));
}

Test(epoch, read_with_future_epoch_gets_new_epoch)
{
	uint64_t epoch = tcluster_epoch(tc);
	struct sdfs_hdr rd = { .opcode = SDFS_OP_OBJ_READ, .oid = 12, .length = 4096,
			       .epoch = (uint32_t)epoch + 100 };
	struct sdfs_hdr r = raw_call("blockd.0", rd, NULL);

	cr_assert_eq(r.result, SDFS_RES_NEW_EPOCH, "result %u", r.result);
}

Test(epoch, mutations_without_epoch_are_invalid)
{
	static char payload[4096];
	uint64_t epoch = tcluster_epoch(tc);
	const struct { uint8_t op; uint8_t flags; int with_payload; } muts[] = {
		{ SDFS_OP_OBJ_WRITE, SDFS_F_CREATE, 1 },
		{ SDFS_OP_OBJ_CREATE, 0, 0 },
		{ SDFS_OP_OBJ_REPLACE, 0, 1 },
		{ SDFS_OP_OBJ_REMOVE, 0, 0 },
	};
	char node[32];

	tfill_random(payload, sizeof(payload), 13);
	primary_of(13, node, sizeof(node));
	for (size_t i = 0; i < sizeof(muts) / sizeof(muts[0]); i++) {
		struct sdfs_hdr h = { .opcode = muts[i].op, .flags = muts[i].flags, .oid = 13,
				      .payload_len = muts[i].with_payload ? sizeof(payload) : 0 };
		struct sdfs_hdr r = raw_call(node, h, payload);

		cr_assert_eq(r.result, SDFS_RES_INVALID, "op 0x%02x with epoch 0: result %u",
			     muts[i].op, r.result);
		/* A stale epoch is refused as well. */
		h.epoch = 1;
		r = raw_call(node, h, payload);
		cr_assert_eq(r.result, SDFS_RES_OLD_EPOCH, "op 0x%02x with epoch 1: result %u",
			     muts[i].op, r.result);
	}
	cr_assert_eq(sdfs_obj_read(tcluster_client(tc), 13, payload, sizeof(payload), 0),
		     -ENOENT, "a refused write must not create the object");

	/* The same write with the current epoch is applied. */
	struct sdfs_hdr w = { .opcode = SDFS_OP_OBJ_WRITE, .flags = SDFS_F_CREATE, .oid = 13,
			      .epoch = (uint32_t)epoch, .payload_len = sizeof(payload) };
	cr_assert_eq(raw_call(node, w, payload).result, SDFS_RES_OK);
}

Test(epoch, client_follows_map_when_a_node_dies_and_returns)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_obj_info info;
	uint64_t e0, e1;

	for (uint64_t oid = 100; oid < 110; oid++)
		write_and_check(oid, 3000 + oid);
	e0 = tcluster_epoch(tc);
	cr_assert_eq(tcluster_kill(tc, "blockd.1"), 0);

	/* Straight away, before the map has caught up: same handle. */
	for (uint64_t oid = 110; oid < 120; oid++)
		write_and_check(oid, 3000 + oid);
	for (uint64_t oid = 100; oid < 110; oid++)
		read_and_check(oid, 3000 + oid);

	cr_assert_eq(tcluster_wait_epoch_above(tc, e0, TCLUSTER_WAIT_MS), 0,
		     "the map never noticed the dead node");
	cr_assert_eq(tcluster_wait_state(tc, "blockd.1", "down", TCLUSTER_WAIT_MS), 0);
	e1 = tcluster_epoch(tc);
	write_and_check(120, 4096);
	cr_assert_eq(sdfs_obj_stat(s, 120, &info), 0);
	cr_assert_eq(info.epoch, e1, "written with epoch %" PRIu64 ", map is at %" PRIu64,
		     info.epoch, e1);

	cr_assert_eq(tcluster_restart(tc, "blockd.1"), 0);
	uint64_t e2 = tcluster_epoch(tc);
	cr_assert_gt(e2, e1);
	write_and_check(121, 4096);
	cr_assert_eq(sdfs_obj_stat(s, 121, &info), 0);
	cr_assert_eq(info.epoch, e2, "written with epoch %" PRIu64 ", map is at %" PRIu64,
		     info.epoch, e2);
	for (uint64_t oid = 100; oid < 120; oid++)
		read_and_check(oid, 3000 + oid);
}
