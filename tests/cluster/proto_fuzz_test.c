/*
 * proto_fuzz_test.c - a blockd fed malformed frames drops that one
 * connection, says why in its log, and keeps serving everyone else.
 *
 * One blockd with copies=1, so the libsdfs write and read after each
 * frame go through the very daemon that was fed it.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/oid.h"
#include "common/proto.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"

#define NODE "blockd.0"
#define CLOSE_WAIT_MS 5000

static struct tcluster *tc;
static char addr[80];
static int bystander = -1;      /* a well-behaved connection opened first */

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = 1, .copies = 1 });
	tcluster_node_addr(tc, NODE, addr, sizeof(addr));
	bystander = wire_connect(addr);
}

static void down(void)
{
	if (bystander >= 0)
		close(bystander);
	tcluster_stop(tc);
}

TestSuite(proto_fuzz, .init = up, .fini = down, .timeout = 120);

static uint64_t req_ids = 1000;

static struct sdfs_hdr node_info_req(void)
{
	return (struct sdfs_hdr){ .opcode = SDFS_OP_NODE_INFO, .req_id = req_ids++ };
}

/* NODE_INFO on the bystander connection still gets its answer. */
static void assert_bystander_served(void)
{
	struct sdfs_hdr h = node_info_req(), r;

	cr_assert_eq(wire_send_req(bystander, &h, NULL), 0);
	cr_assert_eq(wire_recv_hdr(bystander, &r, CLOSE_WAIT_MS), 0,
		     "an unrelated connection lost its answer");
	cr_assert_eq(r.req_id, h.req_id);
	cr_assert_eq(r.result, SDFS_RES_OK);
	cr_assert_eq(wire_skip(bystander, r.payload_len, CLOSE_WAIT_MS), 0);
}

/* libsdfs can still write and read back an object on the daemon. */
static void assert_objects_served(uint64_t oid)
{
	struct sdfs *s = tcluster_client(tc);
	char in[10000], out[sizeof(in) + 1];

	tfill_random(in, sizeof(in), oid);
	cr_assert_eq(sdfs_obj_write(s, oid, in, sizeof(in), 0), 0);
	cr_assert_eq(sdfs_obj_read(s, oid, out, sizeof(out), 0), (ssize_t)sizeof(in));
	cr_assert_arr_eq(in, out, sizeof(in));
}

/*
 * After a bad frame on @fd (whose local address is @local): the daemon
 * closed it, logged why for this peer, is still running, and serves
 * the other connection and libsdfs.
 */
static void assert_dropped(int fd, const char *local, const char *what)
{
	char needle[96];
	char *line;
	int ret = wire_wait_closed(fd, CLOSE_WAIT_MS);

	close(fd);
	cr_assert_eq(ret, 0, "%s: connection still open after %d ms (%s)", what,
		     CLOSE_WAIT_MS, strerror(-ret));
	snprintf(needle, sizeof(needle), "peer=%s: ", local);
	line = tcluster_log_line(tc, NODE, needle, CLOSE_WAIT_MS);
	cr_assert(line, "%s: no log line for %s", what, needle);
	cr_log_info("%s: %s", what, line);
	cr_assert(strstr(line, "dropping connection"), "%s: log says: %s", what, line);
	free(line);
	cr_assert(tcluster_running(tc, NODE), "%s: %s is no longer running", what, NODE);
	assert_bystander_served();
	assert_objects_served(req_ids++);
}

/* A fresh connection and its local address. */
static int raw_open(char *local, size_t len)
{
	int fd = wire_connect(addr);

	wire_local_addr(fd, local, len);
	return fd;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

/* Send a NODE_INFO header edited by @edit (then re-checksummed if
 * @fix_csum), and expect the connection dropped. */
static void send_edited(void (*edit)(uint8_t *wire), int fix_csum, const char *what)
{
	struct sdfs_hdr h = node_info_req();
	uint8_t wire[SDFS_HDR_SIZE];
	char local[64];
	int fd = raw_open(local, sizeof(local));

	proto_hdr_encode(&h, NULL, wire);
	edit(wire);
	if (fix_csum)
		wire_fix_hdr_csum(wire);
	cr_assert_eq(wire_send(fd, wire, sizeof(wire)), 0);
	assert_dropped(fd, local, what);
}

static void edit_magic(uint8_t *w) { w[0] ^= 0xff; }
static void edit_hdr_csum(uint8_t *w) { w[61] ^= 0x01; }
static void edit_reply_flag(uint8_t *w) { w[7] = SDFS_F_REPLY; }
static void edit_csum_without_payload(uint8_t *w) { w[48] = 1; }

Test(proto_fuzz, drops_frame_with_wrong_magic)
{
	send_edited(edit_magic, 0, "wrong magic");
	send_edited(edit_magic, 1, "wrong magic, header checksum fixed");
}

Test(proto_fuzz, drops_frame_with_bad_header_checksum)
{
	send_edited(edit_hdr_csum, 0, "bad header checksum");
}

/* Since 1.2 every bit of the flags byte has a meaning (SDFS_F_SYNC took
 * the last one): no request can carry an unknown flag any more, and bits
 * an op does not use are ignored. */
Test(proto_fuzz, ignores_flags_an_op_does_not_use)
{
	struct sdfs_hdr h = node_info_req(), r;
	int fd = wire_connect(addr);

	h.flags = (uint8_t)(0xff & ~SDFS_F_REPLY);
	cr_assert_eq(wire_send_req(fd, &h, NULL), 0);
	cr_assert_eq(wire_recv_hdr(fd, &r, CLOSE_WAIT_MS), 0);
	cr_assert_eq(r.req_id, h.req_id);
	cr_assert_eq(r.result, SDFS_RES_OK, "result %u", r.result);
	cr_assert_eq(wire_skip(fd, r.payload_len, CLOSE_WAIT_MS), 0);
	close(fd);
}

Test(proto_fuzz, drops_request_flagged_as_reply)
{
	send_edited(edit_reply_flag, 1, "reply flag on a request");
}

Test(proto_fuzz, drops_payload_checksum_without_payload)
{
	send_edited(edit_csum_without_payload, 1, "payload checksum with no payload");
}

Test(proto_fuzz, answers_unknown_major_version_then_drops)
{
	struct sdfs_hdr h = node_info_req(), r;
	uint8_t wire[SDFS_HDR_SIZE];
	char local[64];
	int fd = raw_open(local, sizeof(local));

	proto_hdr_encode(&h, NULL, wire);
	wire[4] = SDFS_PROTO_MAJOR + 1;
	wire_fix_hdr_csum(wire);
	cr_assert_eq(wire_send(fd, wire, sizeof(wire)), 0);
	cr_assert_eq(wire_recv_hdr(fd, &r, CLOSE_WAIT_MS), 0, "no reply to a new major version");
	cr_assert_eq(r.result, SDFS_RES_BAD_VERSION, "result %u", r.result);
	cr_assert(r.flags & SDFS_F_REPLY);
	cr_assert_eq(r.req_id, h.req_id, "the reply must echo req_id");
	cr_assert_eq(r.payload_len, 0);
	assert_dropped(fd, local, "unknown major version");
}

/* A WRITE header promising @len payload bytes, none of which follow. */
static void send_oversized(uint32_t len, const char *what)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_WRITE, .req_id = req_ids++,
			      .epoch = (uint32_t)tcluster_epoch(tc), .oid = 7,
			      .flags = SDFS_F_CREATE };
	uint8_t wire[SDFS_HDR_SIZE];
	char local[64];
	int fd = raw_open(local, sizeof(local));

	proto_hdr_encode(&h, NULL, wire);
	put32(wire + 44, len);
	wire[48] = 1;                   /* some payload checksum */
	wire_fix_hdr_csum(wire);
	cr_assert_eq(wire_send(fd, wire, sizeof(wire)), 0);
	assert_dropped(fd, local, what);
}

Test(proto_fuzz, drops_payload_len_over_protocol_max)
{
	send_oversized(SDFS_MAX_PAYLOAD + 1, "payload_len > 64 MiB");
	send_oversized(UINT32_MAX, "payload_len = 4 GiB - 1");
}

Test(proto_fuzz, drops_payload_len_over_object_size)
{
	uint32_t obj_size = sdfs_obj_size(tcluster_client(tc));

	cr_assert_gt(obj_size, 0);
	cr_assert_lt(obj_size + 4096ull, SDFS_MAX_PAYLOAD, "pick a smaller object size");
	send_oversized(obj_size + 4096, "payload_len > object size");
}

Test(proto_fuzz, drops_truncated_header)
{
	struct sdfs_hdr h = node_info_req();
	uint8_t wire[SDFS_HDR_SIZE];
	char local[64];
	int fd = raw_open(local, sizeof(local));

	proto_hdr_encode(&h, NULL, wire);
	cr_assert_eq(wire_send(fd, wire, SDFS_HDR_SIZE / 2), 0);
	cr_assert_eq(shutdown(fd, SHUT_WR), 0);
	assert_dropped(fd, local, "half a header, then EOF");
}

Test(proto_fuzz, drops_frame_truncated_in_payload)
{
	static uint8_t payload[8192];
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_WRITE, .req_id = req_ids++,
			      .epoch = (uint32_t)tcluster_epoch(tc), .oid = 8,
			      .flags = SDFS_F_CREATE, .payload_len = sizeof(payload) };
	uint8_t wire[SDFS_HDR_SIZE];
	char local[64];
	int fd = raw_open(local, sizeof(local));

	tfill_random(payload, sizeof(payload), 8);
	proto_hdr_encode(&h, payload, wire);
	cr_assert_eq(wire_send(fd, wire, sizeof(wire)), 0);
	cr_assert_eq(wire_send(fd, payload, 1000), 0);
	cr_assert_eq(shutdown(fd, SHUT_WR), 0);
	assert_dropped(fd, local, "header promising 8 KiB, 1000 bytes, then EOF");
	cr_assert_eq(sdfs_obj_read(tcluster_client(tc), 8, payload, sizeof(payload), 0),
		     -ENOENT, "a truncated write must not create the object");
}

Test(proto_fuzz, drops_payload_with_wrong_checksum)
{
	static uint8_t payload[4096];
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_WRITE, .req_id = req_ids++,
			      .epoch = (uint32_t)tcluster_epoch(tc), .oid = 9,
			      .flags = SDFS_F_CREATE, .payload_len = sizeof(payload) };
	uint8_t wire[SDFS_HDR_SIZE];
	char local[64];
	int fd = raw_open(local, sizeof(local));

	tfill_random(payload, sizeof(payload), 9);
	proto_hdr_encode(&h, payload, wire);
	payload[100] ^= 0x20;           /* corrupted after the checksum */
	cr_assert_eq(wire_send(fd, wire, sizeof(wire)), 0);
	cr_assert_eq(wire_send(fd, payload, sizeof(payload)), 0);
	assert_dropped(fd, local, "payload checksum mismatch");
	cr_assert_eq(sdfs_obj_read(tcluster_client(tc), 9, payload, sizeof(payload), 0),
		     -ENOENT, "a write with a bad payload must not be applied");
}

Test(proto_fuzz, drops_random_bytes)
{
	uint64_t seed = tseed("random frames"), st = seed;
	static uint8_t junk[8192];

	for (int i = 0; i < 8; i++) {
		size_t len = SDFS_HDR_SIZE + trand(&st) % (sizeof(junk) - SDFS_HDR_SIZE);
		char local[64], what[96];
		int fd = raw_open(local, sizeof(local));

		tfill_random(junk, len, trand(&st));
		if (i % 2) {            /* past the magic, into the checksum */
			put32(junk, SDFS_PROTO_MAGIC);
		}
		snprintf(what, sizeof(what), "%zu random bytes%s (seed %" PRIu64 ", round %d)",
			 len, i % 2 ? " after a good magic" : "", seed, i);
		/* The daemon may drop us before it has read everything. */
		int ret = wire_send(fd, junk, len);
		cr_assert(ret == 0 || ret == -ECONNRESET || ret == -EPIPE, "send: %s",
			  strerror(-ret));
		assert_dropped(fd, local, what);
	}
}

/*
 * A peer that sends many reads and does not read the replies for a
 * while: the replies (48 MiB, far more than the socket buffers hold)
 * wait in the daemon — the I/O workers that meet a full socket leave
 * them to the loop thread — other connections are served meanwhile, and
 * then every reply arrives once, whole and in one piece.
 */
Test(proto_fuzz, replies_to_a_slow_reader_wait_and_arrive_whole)
{
	enum { READS = 48, LEN = 1 << 20 };
	struct sdfs *s = tcluster_client(tc);
	uint64_t oid = req_ids++, first = req_ids;
	char *want = malloc(LEN), *got = malloc(LEN);
	int seen[READS] = { 0 };
	int fd = wire_connect(addr);

	cr_assert(want && got);
	tfill_random(want, LEN, oid);
	cr_assert_eq(sdfs_obj_write(s, oid, want, LEN, 0), 0);
	for (int i = 0; i < READS; i++) {
		struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_READ, .oid = oid,
				      .length = LEN, .req_id = req_ids++ };

		cr_assert_eq(wire_send_req(fd, &h, NULL), 0, "read %d", i);
	}
	usleep(300 * 1000);     /* nothing read: the daemon's sends block */
	assert_bystander_served();
	for (int i = 0; i < READS; i++) {
		struct sdfs_hdr r;
		uint64_t k;

		cr_assert_eq(wire_recv_hdr(fd, &r, CLOSE_WAIT_MS), 0, "reply %d", i);
		k = r.req_id - first;
		cr_assert(k < READS && !seen[k], "reply %d: req_id %" PRIu64, i, r.req_id);
		seen[k] = 1;
		cr_assert_eq(r.result, SDFS_RES_OK, "reply %d: result %u", i, r.result);
		cr_assert_eq(r.payload_len, LEN, "reply %d: %u bytes", i, r.payload_len);
		cr_assert_eq(wire_recv(fd, got, LEN, CLOSE_WAIT_MS), 0, "reply %d data", i);
		cr_assert_eq(memcmp(got, want, LEN), 0, "reply %d: wrong bytes", i);
	}
	close(fd);
	free(want);
	free(got);
}

Test(proto_fuzz, answers_unknown_opcode_and_keeps_connection)
{
	struct sdfs_hdr h = { .opcode = 0x7e, .req_id = req_ids++ }, r;
	int fd = wire_connect(addr);

	cr_assert_eq(wire_send_req(fd, &h, NULL), 0);
	cr_assert_eq(wire_recv_hdr(fd, &r, CLOSE_WAIT_MS), 0);
	cr_assert_eq(r.result, SDFS_RES_UNKNOWN_OP, "result %u", r.result);
	cr_assert_eq(r.req_id, h.req_id);
	h = node_info_req();
	cr_assert_eq(wire_send_req(fd, &h, NULL), 0);
	cr_assert_eq(wire_recv_hdr(fd, &r, CLOSE_WAIT_MS), 0,
		     "a well-formed unknown op must not cost the connection");
	cr_assert_eq(r.result, SDFS_RES_OK);
	close(fd);
}

/* MDS_FENCE(@epoch) on @fd (+@payload of @len): the reply header. */
static struct sdfs_hdr fence_call(int fd, struct sdfs_hdr h, const void *payload)
{
	struct sdfs_hdr r;

	h.opcode = SDFS_OP_MDS_FENCE;
	h.req_id = req_ids++;
	cr_assert_eq(wire_send_req(fd, &h, payload), 0);
	cr_assert_eq(wire_recv_hdr(fd, &r, CLOSE_WAIT_MS), 0, "no reply to MDS_FENCE");
	cr_assert_eq(r.req_id, h.req_id);
	cr_assert_eq(r.payload_len, 0);
	return r;
}

/*
 * Garbage in an MDS_FENCE: an epoch no token could pass (it would lock
 * every mds out for good) or a payload is refused as INVALID without
 * touching the fence; noise in the fields the op does not use is
 * ignored. The connection survives all of it.
 */
Test(proto_fuzz, answers_mds_fence_garbage_without_moving_the_fence)
{
	uint64_t seed = tseed("mds fence fields"), st = seed;
	static uint8_t junk[4096];
	int fd = wire_connect(addr);
	struct sdfs_hdr r;
	const uint64_t too_big[] = { (uint64_t)UINT32_MAX + 1, 1ull << 40, UINT64_MAX };

	for (size_t i = 0; i < sizeof(too_big) / sizeof(too_big[0]); i++) {
		r = fence_call(fd, (struct sdfs_hdr){ .offset = too_big[i] }, NULL);
		cr_assert_eq(r.result, SDFS_RES_INVALID, "epoch %" PRIu64 ": result %u",
			     too_big[i], r.result);
		cr_assert_eq(r.offset, 0, "the fence did not move");
	}
	tfill_random(junk, sizeof(junk), trand(&st));
	r = fence_call(fd, (struct sdfs_hdr){ .offset = 9, .payload_len = sizeof(junk) }, junk);
	cr_assert_eq(r.result, SDFS_RES_INVALID, "payload: result %u", r.result);
	cr_assert_eq(r.offset, 0, "the fence did not move");

	/* Noise in oid, length, token: ignored; the fence rises to offset. */
	for (int i = 0; i < 8; i++) {
		struct sdfs_hdr h = { .oid = trand(&st), .length = (uint32_t)trand(&st),
				      .token = (uint32_t)trand(&st),
				      .flags = (uint8_t)(trand(&st) & ~SDFS_F_REPLY),
				      .offset = 1 + (uint64_t)i / 2 };

		r = fence_call(fd, h, NULL);
		cr_assert_eq(r.result, SDFS_RES_OK, "seed %" PRIu64 " round %d: result %u",
			     seed, i, r.result);
		cr_assert_eq(r.offset, h.offset, "the fence after MDS_FENCE(%" PRIu64 ")",
			     h.offset);
	}
	r = fence_call(fd, (struct sdfs_hdr){ .offset = 0 }, NULL);
	cr_assert_eq(r.result, SDFS_RES_OK);
	cr_assert_eq(r.offset, 4, "0 asks without lowering");
	close(fd);

	/* The daemon is fine, and the fence it ended with is the one kept. */
	assert_bystander_served();
	assert_objects_served(req_ids++);
	struct sdfs *s = tcluster_client(tc);
	uint64_t mds_oid = oid_make(OID_KIND_MDS, 0, 0x42);
	char buf[100] = "mds";

	sdfs_set_fence_token(s, 3);
	cr_assert_eq(sdfs_obj_write(s, mds_oid, buf, sizeof(buf), 0), -EPERM);
	sdfs_set_fence_token(s, 4);
	cr_assert_eq(sdfs_obj_write(s, mds_oid, buf, sizeof(buf), 0), 0);
}
