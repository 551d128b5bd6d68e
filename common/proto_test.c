/*
 * proto_test.c - unit tests for proto.c against sdfs_proto.h: header
 * encode/decode, the order and kind of rejections, result <-> errno
 * mapping, the fixed payload structs, and the 1.2 namespace payloads.
 *
 * The wire layout is checked against an independent reference (ref_*),
 * written with explicit shifts and plain <xxhash.h>, so a mistake in
 * proto.c cannot hide behind itself. Randomness comes from a fixed seed:
 * every run sees the same inputs. No shared state between tests.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <xxhash.h>

#include "common/proto.h"

#define ITERATIONS 10000

static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return XXH3_64bits(s, sizeof(*s));
}

static void rng_fill(uint64_t *s, void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng_next(s);
}

/* ---- reference encoding: the layout in sdfs_proto.h, byte by byte ---- */

static void ref_le(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t ref_get(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Recompute hdr_csum over bytes [0, 60) after a test edited the header. */
static void ref_reseal(uint8_t b[SDFS_HDR_SIZE])
{
	ref_le(b + 60, (uint32_t)XXH3_64bits(b, 60), 4);
}

/* The wire bytes of @h exactly as given (magic, versions, payload_csum
 * and token included), with a correct hdr_csum. */
static void ref_encode_raw(const struct sdfs_hdr *h, uint8_t b[SDFS_HDR_SIZE])
{
	ref_le(b + 0, h->magic, 4);
	b[4] = h->major;
	b[5] = h->minor;
	b[6] = h->opcode;
	b[7] = h->flags;
	ref_le(b + 8, h->req_id, 8);
	ref_le(b + 16, h->epoch, 4);
	ref_le(b + 20, h->result, 4);
	ref_le(b + 24, h->oid, 8);
	ref_le(b + 32, h->offset, 8);
	ref_le(b + 40, h->length, 4);
	ref_le(b + 44, h->payload_len, 4);
	ref_le(b + 48, h->payload_csum, 8);
	ref_le(b + 56, h->token, 4);
	ref_reseal(b);
}

/* A valid header with no payload, as a peer of this version sends it. */
static struct sdfs_hdr plain_hdr(void)
{
	return (struct sdfs_hdr){
		.magic = SDFS_PROTO_MAGIC, .major = SDFS_PROTO_MAJOR,
		.minor = SDFS_PROTO_MINOR, .opcode = SDFS_OP_OBJ_READ,
		.req_id = 0x1122334455667788ull, .epoch = 7,
		.oid = 0xdeadbeefcafef00dull, .offset = 4096, .length = 8192,
	};
}

static const uint8_t known_flags =
	SDFS_F_REPLY | SDFS_F_CREATE | SDFS_F_ALL | SDFS_F_FIRST | SDFS_F_MORE |
	SDFS_F_EPOCHS | SDFS_F_RAW | SDFS_F_SYNC;

static struct sdfs_hdr random_hdr(uint64_t *seed, uint32_t payload_len)
{
	struct sdfs_hdr h = {
		.opcode = (uint8_t)rng_next(seed),
		.flags = (uint8_t)rng_next(seed) & known_flags,
		.req_id = rng_next(seed),
		.epoch = (uint32_t)rng_next(seed),
		.result = (uint32_t)rng_next(seed),
		.oid = rng_next(seed),
		.offset = rng_next(seed),
		.length = (uint32_t)rng_next(seed),
		.payload_len = payload_len,
		.token = (uint32_t)rng_next(seed),
	};

	return h;
}

/* ---- round trip and layout ---- */

Test(proto_hdr, every_field_survives_encode_decode)
{
	uint64_t seed = 1;
	uint8_t payload[512], wire[SDFS_HDR_SIZE];

	for (int i = 0; i < ITERATIONS; i++) {
		uint32_t plen = (uint32_t)(rng_next(&seed) % (sizeof(payload) + 1));
		struct sdfs_hdr in = random_hdr(&seed, plen), out;

		rng_fill(&seed, payload, plen);
		proto_hdr_encode(&in, payload, wire);
		cr_assert_eq(proto_hdr_decode(wire, sizeof(payload), &out), 0,
			     "iteration %d", i);
		cr_assert_eq(out.magic, SDFS_PROTO_MAGIC);
		cr_assert_eq(out.major, SDFS_PROTO_MAJOR);
		cr_assert_eq(out.minor, SDFS_PROTO_MINOR);
		cr_assert_eq(out.opcode, in.opcode);
		cr_assert_eq(out.flags, in.flags);
		cr_assert_eq(out.req_id, in.req_id);
		cr_assert_eq(out.epoch, in.epoch);
		cr_assert_eq(out.result, in.result);
		cr_assert_eq(out.oid, in.oid);
		cr_assert_eq(out.offset, in.offset);
		cr_assert_eq(out.length, in.length);
		cr_assert_eq(out.payload_len, in.payload_len);
		cr_assert_eq(out.payload_csum, plen ? XXH3_64bits(payload, plen) : 0);
		cr_assert_eq(out.token, in.token);
		cr_assert_eq(out.hdr_csum, (uint32_t)ref_get(wire + 60, 4));
		cr_assert_eq(proto_payload_check(&out, payload), 0, "iteration %d", i);
	}
}

Test(proto_hdr, encoding_matches_reference_layout)
{
	uint64_t seed = 2;
	uint8_t payload[64], wire[SDFS_HDR_SIZE], ref[SDFS_HDR_SIZE];

	for (int i = 0; i < ITERATIONS; i++) {
		uint32_t plen = (uint32_t)(rng_next(&seed) % (sizeof(payload) + 1));
		struct sdfs_hdr h = random_hdr(&seed, plen);

		h.flags = (uint8_t)rng_next(&seed);     /* encode copies any byte */
		rng_fill(&seed, payload, plen);
		proto_hdr_encode(&h, payload, wire);
		h.magic = SDFS_PROTO_MAGIC;
		h.major = SDFS_PROTO_MAJOR;
		h.minor = SDFS_PROTO_MINOR;
		h.payload_csum = plen ? XXH3_64bits(payload, plen) : 0;
		ref_encode_raw(&h, ref);
		cr_assert_arr_eq(wire, ref, SDFS_HDR_SIZE, "iteration %d", i);
	}
}

Test(proto_hdr, wire_bytes_are_little_endian_at_pinned_offsets)
{
	struct sdfs_hdr h = {
		.opcode = SDFS_OP_OBJ_WRITE, .flags = SDFS_F_CREATE,
		.req_id = 0x0102030405060708ull, .epoch = 0x11223344u,
		.result = 0x0a0b0c0du, .oid = 0x2122232425262728ull,
		.offset = 0x3132333435363738ull, .length = 0x41424344u,
		.payload_len = 5, .token = 0x51525354u,
	};
	const uint8_t payload[5] = "hello";
	uint8_t w[SDFS_HDR_SIZE];
	uint64_t pcsum = XXH3_64bits(payload, sizeof(payload));

	proto_hdr_encode(&h, payload, w);
	cr_assert_arr_eq(w, ((uint8_t[]){ 0x53, 0x44, 0x46, 0x53 }), 4, "magic \"SDFS\"");
	cr_assert_eq(w[4], SDFS_PROTO_MAJOR);
	cr_assert_eq(w[5], SDFS_PROTO_MINOR);
	cr_assert_eq(w[6], SDFS_OP_OBJ_WRITE);
	cr_assert_eq(w[7], SDFS_F_CREATE);
	cr_assert_arr_eq(w + 8, ((uint8_t[]){ 8, 7, 6, 5, 4, 3, 2, 1 }), 8, "req_id");
	cr_assert_arr_eq(w + 16, ((uint8_t[]){ 0x44, 0x33, 0x22, 0x11 }), 4, "epoch");
	cr_assert_arr_eq(w + 20, ((uint8_t[]){ 0x0d, 0x0c, 0x0b, 0x0a }), 4, "result");
	cr_assert_arr_eq(w + 24, ((uint8_t[]){ 0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21 }),
			 8, "oid");
	cr_assert_arr_eq(w + 32, ((uint8_t[]){ 0x38, 0x37, 0x36, 0x35, 0x34, 0x33, 0x32, 0x31 }),
			 8, "offset");
	cr_assert_arr_eq(w + 40, ((uint8_t[]){ 0x44, 0x43, 0x42, 0x41 }), 4, "length");
	cr_assert_arr_eq(w + 44, ((uint8_t[]){ 5, 0, 0, 0 }), 4, "payload_len");
	for (int i = 0; i < 8; i++)
		cr_assert_eq(w[48 + i], (uint8_t)(pcsum >> (8 * i)), "payload_csum byte %d", i);
	cr_assert_arr_eq(w + 56, ((uint8_t[]){ 0x54, 0x53, 0x52, 0x51 }), 4, "token");
	cr_assert_eq(ref_get(w + 60, 4), (uint32_t)XXH3_64bits(w, 60), "hdr_csum");
}

Test(proto_hdr, encode_ignores_callers_magic_and_version_but_sends_token)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	h.magic = 0xffffffffu;
	h.major = 9;
	h.minor = 9;
	h.token = 0xabcdef01u;
	h.payload_csum = 1234;          /* no payload: checksum must be 0 */
	h.hdr_csum = 5678;
	proto_hdr_encode(&h, NULL, w);
	cr_assert_eq(ref_get(w, 4), SDFS_PROTO_MAGIC);
	cr_assert_eq(w[4], SDFS_PROTO_MAJOR);
	cr_assert_eq(w[5], SDFS_PROTO_MINOR);
	cr_assert_eq(ref_get(w + 48, 8), 0);
	cr_assert_eq(ref_get(w + 56, 4), 0xabcdef01u, "token at 56..60");
	cr_assert_eq(proto_hdr_decode(w, 0, &out), 0);
	cr_assert_eq(out.token, 0xabcdef01u);
}

Test(proto_hdr, token_round_trips_and_old_peers_send_none)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];
	const uint32_t tokens[] = { 1, 2, 0x5a5a5a5au, UINT32_MAX };

	for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
		h.token = tokens[i];
		ref_encode_raw(&h, w);
		cr_assert_eq(proto_hdr_decode(w, 0, &out), 0, "token %u", tokens[i]);
		cr_assert_eq(out.token, tokens[i]);
		cr_assert_eq(out.req_id, h.req_id);
	}
	/* a 1.1 peer: minor 1, bytes 56..60 zero (its reserved field) */
	h.token = 0;
	h.minor = 1;
	ref_encode_raw(&h, w);
	cr_assert_eq(proto_hdr_decode(w, 0, &out), 0);
	cr_assert_eq(out.token, 0, "no token");
	cr_assert_eq(out.minor, 1);
}

Test(proto_hdr, newer_minor_version_is_accepted)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	for (unsigned minor = SDFS_PROTO_MINOR + 1; minor <= 255; minor++) {
		h.minor = (uint8_t)minor;
		ref_encode_raw(&h, w);
		cr_assert_eq(proto_hdr_decode(w, 0, &out), 0, "minor %u", minor);
		cr_assert_eq(out.minor, minor);
		cr_assert_eq(out.req_id, h.req_id);
	}
}

Test(proto_hdr, payload_len_at_the_cap_is_accepted)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	h.payload_len = 1000;
	h.payload_csum = 42;
	ref_encode_raw(&h, w);
	cr_assert_eq(proto_hdr_decode(w, 1000, &out), 0);
	h.payload_len = SDFS_MAX_PAYLOAD;
	ref_encode_raw(&h, w);
	cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), 0);
	cr_assert_eq(out.payload_len, SDFS_MAX_PAYLOAD);
}

Test(proto_hdr, every_known_flag_is_accepted)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	for (unsigned f = 0; f <= known_flags; f++) {
		if (f & ~known_flags)
			continue;
		h.flags = (uint8_t)f;
		proto_hdr_encode(&h, NULL, w);
		cr_assert_eq(proto_hdr_decode(w, 0, &out), 0, "flags %#x", f);
		cr_assert_eq(out.flags, f);
	}
}

/* ---- rejections ---- */

Test(proto_hdr, rejects_wrong_magic)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];
	const uint32_t bad[] = { 0, 0x53464452u, 0x53444653u /* byte-swapped */,
				 0xffffffffu, 0x00444653u };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h.magic = bad[i];
		ref_encode_raw(&h, w);  /* checksum correct: only the magic is wrong */
		cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EPROTO,
			     "magic %#x", bad[i]);
	}
}

Test(proto_hdr, rejects_every_single_bit_flip)
{
	uint64_t seed = 3;
	uint8_t payload[32], w[SDFS_HDR_SIZE];

	for (int round = 0; round < 16; round++) {
		struct sdfs_hdr h = random_hdr(&seed, round * 2), out;

		rng_fill(&seed, payload, sizeof(payload));
		proto_hdr_encode(&h, payload, w);
		cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), 0);
		for (unsigned bit = 0; bit < SDFS_HDR_SIZE * 8; bit++) {
			w[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EPROTO,
				     "round %d: byte %u bit %u flipped", round,
				     bit / 8, bit % 8);
			w[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
	}
}

Test(proto_hdr, rejects_other_major_versions)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	for (unsigned major = 0; major <= 255; major++) {
		if (major == SDFS_PROTO_MAJOR)
			continue;
		h.major = (uint8_t)major;
		ref_encode_raw(&h, w);
		memset(&out, 0, sizeof(out));
		cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EPROTONOSUPPORT,
			     "major %u", major);
		/* filled, so the BAD_VERSION reply can echo the request */
		cr_assert_eq(out.major, major);
		cr_assert_eq(out.req_id, h.req_id);
		cr_assert_eq(out.opcode, h.opcode);
		cr_assert_eq(out.oid, h.oid);
	}
}

Test(proto_hdr, checks_magic_before_checksum_before_version)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	/* bad magic and another major: the magic decides */
	h.major = SDFS_PROTO_MAJOR + 1;
	h.magic = 0x12345678u;
	ref_encode_raw(&h, w);
	cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EPROTO);

	/* bad checksum and another major: the checksum decides */
	h.magic = SDFS_PROTO_MAGIC;
	ref_encode_raw(&h, w);
	w[60] ^= 1;
	cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EPROTO);
}

Test(proto_hdr, checks_version_before_length_and_flags)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	/* a different major may define lengths and flags differently */
	h.major = SDFS_PROTO_MAJOR + 1;
	h.payload_len = UINT32_MAX;
	h.payload_csum = 1;
	h.flags = 0xff;
	ref_encode_raw(&h, w);
	cr_assert_eq(proto_hdr_decode(w, 0, &out), -EPROTONOSUPPORT);
}

Test(proto_hdr, rejects_payload_len_above_the_callers_cap)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t payload[1001] = { 0 }, w[SDFS_HDR_SIZE];

	h.payload_len = sizeof(payload);
	proto_hdr_encode(&h, payload, w);
	cr_assert_eq(proto_hdr_decode(w, 1000, &out), -EMSGSIZE);
	cr_assert_eq(proto_hdr_decode(w, 0, &out), -EMSGSIZE);
	cr_assert_eq(proto_hdr_decode(w, 1001, &out), 0);
}

Test(proto_hdr, rejects_payload_len_above_max_payload_whatever_the_cap)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];
	const uint32_t lens[] = { SDFS_MAX_PAYLOAD + 1, SDFS_MAX_PAYLOAD * 2,
				  UINT32_MAX };

	h.payload_csum = 1;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		h.payload_len = lens[i];
		ref_encode_raw(&h, w);
		cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EMSGSIZE,
			     "payload_len %u", lens[i]);
	}
}

Test(proto_hdr, rejects_unknown_flag_bits)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	/* Since 1.2 (SDFS_F_SYNC) every bit of the byte has a meaning, so
	 * there is nothing to reject yet: the loop guards the next version. */
	cr_assert_eq(known_flags, 0xff);
	for (unsigned bit = 0; bit < 8; bit++) {
		if (known_flags & (1u << bit))
			continue;
		h.flags = (uint8_t)((1u << bit) | SDFS_F_REPLY);
		proto_hdr_encode(&h, NULL, w);
		cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EPROTO,
			     "flag bit %u", bit);
	}
}

Test(proto_hdr, rejects_payload_csum_without_payload)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	h.payload_len = 0;
	h.payload_csum = 1;
	ref_encode_raw(&h, w);
	cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EPROTO);
	h.payload_csum = XXH3_64bits(NULL, 0);  /* the empty input's hash is not 0 */
	ref_encode_raw(&h, w);
	cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EPROTO);
}

Test(proto_hdr, payload_check_rejects_changed_payload)
{
	uint64_t seed = 4;
	uint8_t payload[256], w[SDFS_HDR_SIZE];
	struct sdfs_hdr h = random_hdr(&seed, sizeof(payload)), out;

	rng_fill(&seed, payload, sizeof(payload));
	proto_hdr_encode(&h, payload, w);
	cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), 0);
	cr_assert_eq(proto_payload_check(&out, payload), 0);
	for (unsigned bit = 0; bit < sizeof(payload) * 8; bit++) {
		payload[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		cr_assert_eq(proto_payload_check(&out, payload), -EPROTO, "bit %u", bit);
		payload[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	out.payload_len--;      /* a truncated payload */
	cr_assert_eq(proto_payload_check(&out, payload), -EPROTO);
}

Test(proto_hdr, payload_check_accepts_empty_payload)
{
	struct sdfs_hdr h = plain_hdr(), out;
	uint8_t w[SDFS_HDR_SIZE];

	proto_hdr_encode(&h, NULL, w);
	cr_assert_eq(proto_hdr_decode(w, 0, &out), 0);
	cr_assert_eq(out.payload_csum, 0);
	cr_assert_eq(proto_payload_check(&out, NULL), 0);
}

Test(proto_hdr, random_buffers_never_decode)
{
	uint64_t seed = 5;
	uint8_t w[SDFS_HDR_SIZE];
	struct sdfs_hdr out;

	for (int i = 0; i < ITERATIONS; i++) {
		rng_fill(&seed, w, sizeof(w));
		cr_assert_neq(proto_hdr_decode(w, UINT32_MAX, &out), 0, "iteration %d", i);
	}
}

Test(proto_hdr, random_buffers_with_valid_magic_never_decode)
{
	uint64_t seed = 6;
	uint8_t w[SDFS_HDR_SIZE];
	struct sdfs_hdr out;

	/* past the magic, only the checksum stands between noise and a
	 * header: a 2^-32 chance each, so none of these may pass */
	for (int i = 0; i < ITERATIONS; i++) {
		rng_fill(&seed, w, sizeof(w));
		ref_le(w, SDFS_PROTO_MAGIC, 4);
		w[4] = SDFS_PROTO_MAJOR;
		cr_assert_eq(proto_hdr_decode(w, UINT32_MAX, &out), -EPROTO,
			     "iteration %d", i);
	}
}

/* ---- replies, op names ---- */

Test(proto_reply, echoes_the_request)
{
	struct sdfs_hdr req = plain_hdr(), rep;

	req.flags = SDFS_F_CREATE;
	req.payload_len = 77;
	req.payload_csum = 99;
	memset(&rep, 0xa5, sizeof(rep));
	proto_reply_init(&rep, &req, SDFS_RES_NO_OBJ);
	cr_assert_eq(rep.opcode, req.opcode);
	cr_assert_eq(rep.req_id, req.req_id);
	cr_assert_eq(rep.oid, req.oid);
	cr_assert_eq(rep.flags, SDFS_F_REPLY);
	cr_assert_eq(rep.result, SDFS_RES_NO_OBJ);
	cr_assert_eq(rep.payload_len, 0);
	cr_assert_eq(rep.payload_csum, 0);
	cr_assert_eq(rep.token, 0, "a reply carries no token");
}

Test(proto_reply, does_not_echo_the_token)
{
	struct sdfs_hdr req = plain_hdr(), rep;

	req.opcode = SDFS_OP_MDS_FENCE;
	req.token = 9;
	req.offset = 12;
	proto_reply_init(&rep, &req, SDFS_RES_FENCED);
	cr_assert_eq(rep.token, 0);
	cr_assert_eq(rep.offset, 12, "offset is echoed (MDS_FENCE overwrites it)");
	cr_assert_eq(rep.result, SDFS_RES_FENCED);
}

Test(proto_op_name, names_known_ops_and_question_marks_the_rest)
{
	cr_assert_str_eq(proto_op_name(SDFS_OP_OBJ_READ), "OBJ_READ");
	cr_assert_str_eq(proto_op_name(SDFS_OP_OBJ_REPLACE), "OBJ_REPLACE");
	cr_assert_str_eq(proto_op_name(SDFS_OP_NODE_INFO), "NODE_INFO");
	cr_assert_str_eq(proto_op_name(SDFS_OP_MDS_FENCE), "MDS_FENCE");
	cr_assert_str_eq(proto_op_name(SDFS_OP_OBJ_COPY), "OBJ_COPY");
	cr_assert_str_eq(proto_op_name(SDFS_OP_NS_LOOKUP), "NS_LOOKUP");
	cr_assert_str_eq(proto_op_name(SDFS_OP_NS_INFO), "NS_INFO");
	cr_assert_str_eq(proto_op_name(0), "?");
	cr_assert_str_eq(proto_op_name(0x7f), "?");
	cr_assert_str_eq(proto_op_name(0xff), "?");
	cr_assert_str_eq(proto_op_name(SDFS_OP_MAX), "?");
	cr_assert_str_eq(proto_op_name(UINT_MAX), "?");
}

/* ---- results <-> errno ---- */

static const struct { enum sdfs_res res; int err; } res_table[] = {
	{ SDFS_RES_OK, 0 }, { SDFS_RES_NO_OBJ, ENOENT }, { SDFS_RES_EXISTS, EEXIST },
	{ SDFS_RES_CSUM, EBADMSG }, { SDFS_RES_OLD_EPOCH, ESTALE },
	{ SDFS_RES_NEW_EPOCH, EAGAIN }, { SDFS_RES_INVALID, EINVAL },
	{ SDFS_RES_TOO_BIG, EFBIG }, { SDFS_RES_NO_SPACE, ENOSPC },
	{ SDFS_RES_IO, EIO }, { SDFS_RES_BAD_VERSION, EPROTONOSUPPORT },
	{ SDFS_RES_BAD_MSG, EPROTO }, { SDFS_RES_UNKNOWN_OP, EOPNOTSUPP },
	{ SDFS_RES_NO_MEM, ENOMEM }, { SDFS_RES_SHUTDOWN, ESHUTDOWN },
	{ SDFS_RES_UNAVAIL, ENODATA }, { SDFS_RES_FENCED, EPERM },
	{ SDFS_RES_ERRNO, EIO }, { SDFS_RES_READONLY, EROFS },
	{ SDFS_RES_AUTH, EACCES },
	{ SDFS_RES_CAP, EKEYREJECTED },
};

Test(proto_res, table_covers_every_result)
{
	cr_assert_eq(sizeof(res_table) / sizeof(res_table[0]), SDFS_RES_MAX);
	for (unsigned r = 0; r < SDFS_RES_MAX; r++)
		cr_assert_eq(res_table[r].res, r);
}

Test(proto_res, maps_each_result_to_its_documented_errno)
{
	for (size_t i = 0; i < sizeof(res_table) / sizeof(res_table[0]); i++)
		cr_assert_eq(proto_res_to_errno(res_table[i].res), -res_table[i].err,
			     "result %d", res_table[i].res);
}

Test(proto_res, every_result_round_trips_through_errno)
{
	for (unsigned r = 0; r < SDFS_RES_MAX; r++) {
		if (r == SDFS_RES_ERRNO)
			continue;       /* its errno travels in hdr.length */
		cr_assert_eq(proto_res_from_errno(proto_res_to_errno(r)), r, "result %u", r);
	}
}

Test(proto_res, eperm_means_fenced)
{
	cr_assert_eq(proto_res_from_errno(-EPERM), SDFS_RES_FENCED);
	cr_assert_eq(proto_res_to_errno(SDFS_RES_FENCED), -EPERM);
	cr_assert_eq(proto_res_from_errno(-EIO), SDFS_RES_IO, "not ERRNO");
}

Test(proto_res, unknown_results_map_to_eio)
{
	const uint32_t bad[] = { SDFS_RES_MAX, SDFS_RES_MAX + 1, 255, 0x80000000u,
				 UINT32_MAX };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(proto_res_to_errno(bad[i]), -EIO, "result %u", bad[i]);
}

Test(proto_res, unknown_errno_maps_to_res_io)
{
	const int bad[] = { -ENOTDIR, -ETIMEDOUT, -9999, INT_MIN,
			    ENOENT /* positive: not a -errno */, INT_MAX };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(proto_res_from_errno(bad[i]), SDFS_RES_IO, "errno %d", bad[i]);
}

/* ---- fixed payload structs ---- */

Test(proto_obj_stat, round_trips_with_its_path)
{
	uint64_t seed = 7;
	uint8_t buf[sizeof(struct sdfs_obj_stat) + SDFS_MAX_PATH];

	for (int i = 0; i < 1000; i++) {
		uint32_t plen = (uint32_t)(rng_next(&seed) % (SDFS_MAX_PATH + 1));
		struct sdfs_obj_stat in = {
			.size = rng_next(&seed), .epoch = rng_next(&seed),
			.csum = rng_next(&seed), .path_len = plen,
			.reserved = (uint32_t)rng_next(&seed),
		}, out;

		proto_obj_stat_encode(&in, buf);
		cr_assert_eq(ref_get(buf + 0, 8), in.size);
		cr_assert_eq(ref_get(buf + 8, 8), in.epoch);
		cr_assert_eq(ref_get(buf + 16, 8), in.csum);
		cr_assert_eq(ref_get(buf + 24, 4), plen);
		cr_assert_eq(ref_get(buf + 28, 4), 0, "reserved sent as zero");
		rng_fill(&seed, buf + sizeof(in), plen);
		cr_assert_eq(proto_obj_stat_decode(buf, sizeof(in) + plen, &out), 0,
			     "path_len %u", plen);
		cr_assert_eq(out.size, in.size);
		cr_assert_eq(out.epoch, in.epoch);
		cr_assert_eq(out.csum, in.csum);
		cr_assert_eq(out.path_len, plen);
	}
}

Test(proto_obj_stat, rejects_short_buffers)
{
	struct sdfs_obj_stat in = { .size = 1, .path_len = 0 }, out;
	uint8_t buf[sizeof(in)];

	proto_obj_stat_encode(&in, buf);
	for (size_t len = 0; len < sizeof(in); len++)
		cr_assert_eq(proto_obj_stat_decode(buf, len, &out), -EPROTO, "len %zu", len);
	cr_assert_eq(proto_obj_stat_decode(buf, sizeof(in), &out), 0);
}

Test(proto_obj_stat, rejects_path_len_that_does_not_match_the_bytes)
{
	struct sdfs_obj_stat in = { .size = 1, .path_len = 10 }, out;
	uint8_t buf[sizeof(in) + 64] = { 0 };

	proto_obj_stat_encode(&in, buf);
	for (size_t extra = 0; extra <= 64; extra++) {
		int want = extra == 10 ? 0 : -EPROTO;

		cr_assert_eq(proto_obj_stat_decode(buf, sizeof(in) + extra, &out), want,
			     "path_len 10 with %zu path bytes", extra);
	}
}

Test(proto_obj_stat, rejects_path_len_above_max_path)
{
	static uint8_t buf[sizeof(struct sdfs_obj_stat) + SDFS_MAX_PATH + 1];
	struct sdfs_obj_stat in = { .size = 1 }, out;
	const uint32_t lens[] = { SDFS_MAX_PATH + 1, UINT32_MAX,
				  UINT32_MAX - sizeof(in) + 1 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		in.path_len = lens[i];
		proto_obj_stat_encode(&in, buf);
		cr_assert_eq(proto_obj_stat_decode(buf, sizeof(buf), &out), -EPROTO,
			     "path_len %u", lens[i]);
	}
	/* even when the buffer claims to hold that many bytes */
	in.path_len = SDFS_MAX_PATH + 1;
	proto_obj_stat_encode(&in, buf);
	cr_assert_eq(proto_obj_stat_decode(buf, sizeof(in) + SDFS_MAX_PATH + 1, &out),
		     -EPROTO);
	in.path_len = SDFS_MAX_PATH;
	proto_obj_stat_encode(&in, buf);
	cr_assert_eq(proto_obj_stat_decode(buf, sizeof(in) + SDFS_MAX_PATH, &out), 0);
}

Test(proto_node_info, round_trips_every_field)
{
	uint64_t seed = 8;
	uint8_t buf[sizeof(struct sdfs_node_info)];

	for (int i = 0; i < 1000; i++) {
		struct sdfs_node_info in = {
			.node_id = (uint32_t)rng_next(&seed), .epoch = (uint32_t)rng_next(&seed),
			.objects = rng_next(&seed), .used_bytes = rng_next(&seed),
			.total_bytes = rng_next(&seed), .requests = rng_next(&seed),
			.errors = rng_next(&seed), .max_obj_size = (uint32_t)rng_next(&seed),
			.space = (uint32_t)rng_next(&seed),
			.avail_bytes = rng_next(&seed), .ec_degraded = rng_next(&seed),
			.ec_unavail = rng_next(&seed),
		}, out;

		proto_node_info_encode(&in, buf);
		cr_assert_eq(ref_get(buf + 0, 4), in.node_id);
		cr_assert_eq(ref_get(buf + 4, 4), in.epoch);
		cr_assert_eq(ref_get(buf + 8, 8), in.objects);
		cr_assert_eq(ref_get(buf + 48, 4), in.max_obj_size);
		cr_assert_eq(ref_get(buf + 52, 4), in.space);
		cr_assert_eq(proto_node_info_decode(buf, sizeof(buf), &out), 0);
		cr_assert_eq(out.space, in.space);
		cr_assert_eq(out.node_id, in.node_id);
		cr_assert_eq(out.epoch, in.epoch);
		cr_assert_eq(out.objects, in.objects);
		cr_assert_eq(out.used_bytes, in.used_bytes);
		cr_assert_eq(out.total_bytes, in.total_bytes);
		cr_assert_eq(out.requests, in.requests);
		cr_assert_eq(out.errors, in.errors);
		cr_assert_eq(out.max_obj_size, in.max_obj_size);
		cr_assert_eq(out.avail_bytes, in.avail_bytes);
		cr_assert_eq(ref_get(buf + 136, 8), in.ec_degraded);
		cr_assert_eq(ref_get(buf + 144, 8), in.ec_unavail);
		cr_assert_eq(out.ec_degraded, in.ec_degraded);
		cr_assert_eq(out.ec_unavail, in.ec_unavail);
		/* from a node before 2.4: no ec counters */
		cr_assert_eq(proto_node_info_decode(buf, SDFS_NODE_INFO_V17_SIZE, &out), 0);
		cr_assert_eq(out.avail_bytes, in.avail_bytes);
		cr_assert(out.ec_degraded == 0 && out.ec_unavail == 0);
	}
}

Test(proto_scrub_info, round_trips_every_field_at_pinned_offsets)
{
	uint64_t seed = 9;
	uint8_t buf[SDFS_SCRUB_INFO_SIZE], again[SDFS_SCRUB_INFO_SIZE];
	struct sdfs_scrub_info out;

	/* any bytes decode, and encode back to themselves: every field is
	 * carried, none overlaps another */
	for (int i = 0; i < 100; i++) {
		for (size_t k = 0; k < sizeof(buf); k += 8) {
			uint64_t v = rng_next(&seed);

			memcpy(buf + k, &v, 8);
		}
		cr_assert_eq(proto_scrub_info_decode(buf, sizeof(buf), &out), 0);
		cr_assert_eq(out.node_id, ref_get(buf + 0, 4));
		cr_assert_eq(out.state, ref_get(buf + 4, 4));
		cr_assert_eq(out.cursor, ref_get(buf + 8, 8));
		cr_assert_eq(out.repaired, ref_get(buf + 40, 8));
		cr_assert_eq(out.store_objects, ref_get(buf + 128, 8));
		cr_assert_eq(out.total_mismatched, ref_get(buf + 152, 8));
		cr_assert_eq(out.refreshed, ref_get(buf + 160, 8));
		cr_assert_eq(out.last_start_ms, ref_get(buf + 176, 8));
		cr_assert_eq(out.strips, ref_get(buf + 184, 8));
		cr_assert_eq(out.strips_unrepaired, ref_get(buf + 216, 8));
		cr_assert_eq(out.total_strips_unrepaired, ref_get(buf + 240, 8));
		proto_scrub_info_encode(&out, again);
		cr_assert_arr_eq(again, buf, sizeof(buf));
	}
	cr_assert_eq(proto_scrub_info_decode(buf, sizeof(buf) - 8, &out), -EPROTO);
	/* 184 bytes (a daemon before the strips' counts): those are 0 */
	cr_assert_eq(proto_scrub_info_decode(buf, SDFS_SCRUB_INFO_V24_SIZE, &out), 0);
	cr_assert_eq(out.last_start_ms, ref_get(buf + 176, 8));
	cr_assert_eq(out.strips + out.strips_found + out.total_strips_unrepaired, 0);
	/* the first 2.3 daemons' 160 bytes: the fields after them are 0 */
	cr_assert_eq(proto_scrub_info_decode(buf, SDFS_SCRUB_INFO_V23_SIZE, &out), 0);
	cr_assert_eq(out.total_mismatched, ref_get(buf + 152, 8));
	cr_assert_eq(out.refreshed + out.total_refreshed + out.last_start_ms, 0);
	cr_assert_eq(proto_scrub_info_decode(NULL, 0, &out), -EPROTO);
	cr_assert_str_eq(proto_op_name(SDFS_OP_SCRUB), "SCRUB");
}

Test(proto_node_info, an_older_node_s_avail_is_its_free_space)
{
	struct sdfs_node_info in = { .used_bytes = 300, .total_bytes = 1000,
				     .avail_bytes = 5 }, out;
	uint8_t buf[sizeof(struct sdfs_node_info)];

	proto_node_info_encode(&in, buf);
	cr_assert_eq(ref_get(buf + 128, 8), 5);
	cr_assert_eq(proto_node_info_decode(buf, SDFS_NODE_INFO_V11_SIZE, &out), 0);
	cr_assert_eq(out.avail_bytes, 700);
	cr_assert_eq(proto_node_info_decode(buf, SDFS_NODE_INFO_V10_SIZE, &out), 0);
	cr_assert_eq(out.avail_bytes, 700);
	cr_assert_eq(proto_node_info_decode(buf, sizeof(buf), &out), 0);
	cr_assert_eq(out.avail_bytes, 5);
}

Test(proto_node_info, rejects_wrong_lengths)
{
	uint8_t buf[sizeof(struct sdfs_node_info) + 8] = { 0 };
	struct sdfs_node_info out;

	for (size_t len = 0; len <= sizeof(buf); len++) {
		int want = len == sizeof(struct sdfs_node_info) ||
			   len == SDFS_NODE_INFO_V17_SIZE || len == SDFS_NODE_INFO_V11_SIZE ||
			   len == SDFS_NODE_INFO_V10_SIZE ? 0 : -EPROTO;

		cr_assert_eq(proto_node_info_decode(buf, len, &out), want, "len %zu", len);
	}
}

Test(proto_oids, round_trip_as_le64_array)
{
	uint64_t seed = 9, in[257], out[257];
	uint8_t buf[sizeof(in)];

	for (size_t i = 0; i < 257; i++)
		in[i] = rng_next(&seed);
	in[0] = 0;
	in[1] = UINT64_MAX;
	in[2] = 0x0102030405060708ull;
	proto_oids_encode(in, 257, buf);
	cr_assert_arr_eq(buf + 16, ((uint8_t[]){ 8, 7, 6, 5, 4, 3, 2, 1 }), 8);
	for (size_t i = 0; i < 257; i++)
		cr_assert_eq(ref_get(buf + 8 * i, 8), in[i], "oid %zu", i);
	memset(out, 0, sizeof(out));
	proto_oids_decode(buf, 257, out);
	cr_assert_arr_eq(out, in, sizeof(in));
}

Test(proto_oids, zero_oids_touch_nothing)
{
	uint8_t buf[8] = { 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee };
	uint64_t oid = 5;

	proto_oids_encode(&oid, 0, buf);
	cr_assert_eq(buf[0], 0xee);
	proto_oids_decode(buf, 0, &oid);
	cr_assert_eq(oid, 5);
}

/* ---- OBJ_COPY (2.2) ---- */

Test(proto_obj_copy, round_trips_at_pinned_offsets)
{
	struct sdfs_obj_copy in = { .src = 0x3102030405060708ull, .len = 5 }, out;
	uint8_t buf[SDFS_OBJ_COPY_SIZE + 5];
	const uint8_t *piece = NULL;

	memset(buf, 0xee, sizeof(buf));
	proto_obj_copy_encode(&in, buf);
	memcpy(buf + SDFS_OBJ_COPY_SIZE, "abcde", 5);
	cr_assert_eq(ref_get(buf, 8), in.src);
	cr_assert_eq(ref_get(buf + 8, 4), 5);
	cr_assert_eq(ref_get(buf + 12, 4), 0);
	cr_assert_eq(proto_obj_copy_decode(buf, sizeof(buf), 4096, &out, &piece), 0);
	cr_assert_eq(out.src, in.src);
	cr_assert_eq(out.len, 5);
	cr_assert_eq(out.flags, 0);
	cr_assert_eq(piece, buf + SDFS_OBJ_COPY_SIZE);

	in.flags = SDFS_COPY_ZERO;
	in.len = 4096;
	proto_obj_copy_encode(&in, buf);
	cr_assert_eq(proto_obj_copy_decode(buf, SDFS_OBJ_COPY_SIZE, 4096, &out, &piece), 0);
	cr_assert_eq(out.flags, SDFS_COPY_ZERO);
	cr_assert_eq(out.len, 4096);
}

Test(proto_obj_copy, rejects_bad_lengths_flags_and_garbage)
{
	struct sdfs_obj_copy in = { .src = 1, .len = 8 }, out;
	uint8_t buf[SDFS_OBJ_COPY_SIZE + 8] = { 0 };
	const uint8_t *piece;
	uint64_t seed = 18;

	proto_obj_copy_encode(&in, buf);
	cr_assert_eq(proto_obj_copy_decode(NULL, 0, 4096, &out, &piece), -EPROTO);
	for (size_t len = 0; len < sizeof(buf); len++)  /* short, piece missing */
		cr_assert_eq(proto_obj_copy_decode(buf, len, 4096, &out, &piece), -EPROTO,
			     "len %zu", len);
	cr_assert_eq(proto_obj_copy_decode(buf, sizeof(buf), 4096, &out, &piece), 0);
	cr_assert_eq(proto_obj_copy_decode(buf, sizeof(buf), 7, &out, &piece), -EPROTO);
	in.flags = 0x4;                         /* unknown flag */
	proto_obj_copy_encode(&in, buf);
	cr_assert_eq(proto_obj_copy_decode(buf, sizeof(buf), 4096, &out, &piece), -EPROTO);
	in.flags = SDFS_COPY_CODE(4, 2);        /* a code without STRIPE */
	proto_obj_copy_encode(&in, buf);
	cr_assert_eq(proto_obj_copy_decode(buf, sizeof(buf), 4096, &out, &piece), -EPROTO);
	in.flags = SDFS_COPY_STRIPE | SDFS_COPY_CODE(4, 2);     /* 2.6 */
	proto_obj_copy_encode(&in, buf);
	cr_assert_eq(proto_obj_copy_decode(buf, sizeof(buf), 4096, &out, &piece), 0);
	cr_assert_eq(SDFS_COPY_K(out.flags), 4);
	cr_assert_eq(SDFS_COPY_M(out.flags), 2);
	in.flags = SDFS_COPY_ZERO;              /* zeros carry no bytes */
	proto_obj_copy_encode(&in, buf);
	cr_assert_eq(proto_obj_copy_decode(buf, sizeof(buf), 4096, &out, &piece), -EPROTO);
	for (int i = 0; i < ITERATIONS; i++) {  /* garbage: never more than said */
		uint8_t g[SDFS_OBJ_COPY_SIZE + 32];
		size_t len = rng_next(&seed) % sizeof(g);

		for (size_t k = 0; k < sizeof(g); k++)
			g[k] = (uint8_t)rng_next(&seed);
		if (proto_obj_copy_decode(g, len, 1u << 22, &out, &piece) == 0)
			cr_assert_eq(len - SDFS_OBJ_COPY_SIZE,
				     out.flags & SDFS_COPY_ZERO ? 0 : out.len);
	}
}

/* ---- namespace payloads (1.2) ---- */

Test(proto_ns, payload_sizes_match_their_structs)
{
	cr_assert_eq(offsetof(struct sdfs_ns_req, groups), SDFS_NS_REQ_SIZE);
	cr_assert_eq(sizeof(struct sdfs_attr), SDFS_ATTR_SIZE);
	cr_assert_eq(sizeof(struct sdfs_dirent), SDFS_DIRENT_SIZE);
	cr_assert_eq(sizeof(struct sdfs_ns_statfs), SDFS_NS_STATFS_SIZE);
	cr_assert_eq(sizeof(struct sdfs_mds_info), SDFS_MDS_INFO_SIZE);
}

static struct sdfs_ns_req random_ns_req(uint64_t *seed)
{
	return (struct sdfs_ns_req){
		.client_id = rng_next(seed), .seq = rng_next(seed),
		.ino = rng_next(seed), .ino2 = rng_next(seed), .arg = rng_next(seed),
		.atime_ns = (int64_t)rng_next(seed), .mtime_ns = (int64_t)rng_next(seed),
		.mode = (uint32_t)rng_next(seed), .uid = (uint32_t)rng_next(seed),
		.gid = (uint32_t)rng_next(seed), .rdev = (uint32_t)rng_next(seed),
		.flags = (uint32_t)rng_next(seed), .max = (uint32_t)rng_next(seed),
		.name_len = (uint16_t)(rng_next(seed) % 300),
		.name2_len = (uint16_t)(rng_next(seed) % 300),
		.data_len = (uint32_t)(rng_next(seed) % 5000),
		.cuid = (uint32_t)rng_next(seed), .cgid = (uint32_t)rng_next(seed),
		.ngroups = (uint32_t)(rng_next(seed) % (SDFS_NS_GROUPS_MAX + 1)),
		.groups = { (uint32_t)rng_next(seed), 7, 0xffffffffu, 3 },
	};
}

Test(proto_ns_req, round_trips_at_the_reference_offsets)
{
	static uint8_t buf[SDFS_NS_REQ_SIZE + 300 + 300 + 5000 + 4 * SDFS_NS_GROUPS_MAX];
	uint64_t seed = 20;

	for (int i = 0; i < 1000; i++) {
		struct sdfs_ns_req in = random_ns_req(&seed), out;
		size_t len = SDFS_NS_REQ_SIZE + in.name_len + in.name2_len + in.data_len +
			     4 * in.ngroups;

		for (uint32_t g = 4; g < in.ngroups; g++)
			in.groups[g] = (uint32_t)rng_next(&seed);
		cr_assert_eq(proto_ns_req_len(&in), len);

		if (i == 0) {           /* the extremes of the signed fields */
			in.atime_ns = INT64_MIN;
			in.mtime_ns = -1;
		}
		proto_ns_req_encode(&in, buf);
		proto_ns_groups_encode(&in, buf);
		cr_assert_eq(ref_get(buf + 0, 8), in.client_id);
		cr_assert_eq(ref_get(buf + 8, 8), in.seq);
		cr_assert_eq(ref_get(buf + 16, 8), in.ino);
		cr_assert_eq(ref_get(buf + 24, 8), in.ino2);
		cr_assert_eq(ref_get(buf + 32, 8), in.arg);
		cr_assert_eq(ref_get(buf + 40, 8), (uint64_t)in.atime_ns);
		cr_assert_eq(ref_get(buf + 48, 8), (uint64_t)in.mtime_ns);
		cr_assert_eq(ref_get(buf + 56, 4), in.mode);
		cr_assert_eq(ref_get(buf + 60, 4), in.uid);
		cr_assert_eq(ref_get(buf + 64, 4), in.gid);
		cr_assert_eq(ref_get(buf + 68, 4), in.rdev);
		cr_assert_eq(ref_get(buf + 72, 4), in.flags);
		cr_assert_eq(ref_get(buf + 76, 4), in.max);
		cr_assert_eq(ref_get(buf + 80, 2), in.name_len);
		cr_assert_eq(ref_get(buf + 82, 2), in.name2_len);
		cr_assert_eq(ref_get(buf + 84, 4), in.data_len);
		cr_assert_eq(ref_get(buf + 88, 4), in.cuid);
		cr_assert_eq(ref_get(buf + 92, 4), in.cgid);
		cr_assert_eq(ref_get(buf + 96, 4), in.ngroups);
		cr_assert_eq(ref_get(buf + 100, 4), 0);
		for (uint32_t g = 0; g < in.ngroups; g++)
			cr_assert_eq(ref_get(buf + len - 4 * in.ngroups + 4 * g, 4),
				     in.groups[g]);
		memset(&out, 0xa5, sizeof(out));
		cr_assert_eq(proto_ns_req_decode(buf, len, &out), 0, "iteration %d", i);
		cr_assert_eq(out.client_id, in.client_id);
		cr_assert_eq(out.seq, in.seq);
		cr_assert_eq(out.ino, in.ino);
		cr_assert_eq(out.ino2, in.ino2);
		cr_assert_eq(out.arg, in.arg);
		cr_assert_eq(out.atime_ns, in.atime_ns);
		cr_assert_eq(out.mtime_ns, in.mtime_ns);
		cr_assert_eq(out.mode, in.mode);
		cr_assert_eq(out.uid, in.uid);
		cr_assert_eq(out.gid, in.gid);
		cr_assert_eq(out.rdev, in.rdev);
		cr_assert_eq(out.flags, in.flags);
		cr_assert_eq(out.max, in.max);
		cr_assert_eq(out.name_len, in.name_len);
		cr_assert_eq(out.name2_len, in.name2_len);
		cr_assert_eq(out.data_len, in.data_len);
		cr_assert_eq(out.cuid, in.cuid);
		cr_assert_eq(out.cgid, in.cgid);
		cr_assert_eq(out.ngroups, in.ngroups);
		for (uint32_t g = 0; g < in.ngroups; g++)
			cr_assert_eq(out.groups[g], in.groups[g]);
	}
}

Test(proto_ns_req, groups_count_exactly_and_at_most_the_max)
{
	static uint8_t buf[SDFS_NS_REQ_SIZE + 3 + 4 * (SDFS_NS_GROUPS_MAX + 1)];
	struct sdfs_ns_req in = { .client_id = 1, .seq = 1, .ino = 1, .name_len = 3,
				  .cuid = 1000, .cgid = 100, .ngroups = 2,
				  .groups = { 10, 20 } }, out;
	size_t exact = SDFS_NS_REQ_SIZE + 3 + 8;

	proto_ns_req_encode(&in, buf);
	memcpy(buf + SDFS_NS_REQ_SIZE, "abc", 3);
	proto_ns_groups_encode(&in, buf);
	for (size_t len = SDFS_NS_REQ_SIZE; len <= sizeof(buf); len++)
		cr_assert_eq(proto_ns_req_decode(buf, len, &out), len == exact ? 0 : -EPROTO,
			     "len %zu", len);
	cr_assert_eq(out.groups[1], 20);
	in.ngroups = SDFS_NS_GROUPS_MAX + 1;
	proto_ns_req_encode(&in, buf);
	cr_assert_eq(proto_ns_req_decode(buf, sizeof(buf), &out), -EPROTO);
}

Test(proto_ns_req, rejects_lengths_that_do_not_match_the_parts)
{
	static uint8_t buf[SDFS_NS_REQ_SIZE + 64];
	struct sdfs_ns_req in = { .client_id = 1, .seq = 1, .ino = 1,
				  .name_len = 5, .name2_len = 7, .data_len = 9 }, out;
	size_t exact = SDFS_NS_REQ_SIZE + 5 + 7 + 9;

	proto_ns_req_encode(&in, buf);
	for (size_t len = 0; len <= sizeof(buf); len++)
		cr_assert_eq(proto_ns_req_decode(buf, len, &out), len == exact ? 0 : -EPROTO,
			     "len %zu", len);

	/* no parts at all: exactly the fixed part */
	in.name_len = in.name2_len = 0;
	in.data_len = 0;
	proto_ns_req_encode(&in, buf);
	cr_assert_eq(proto_ns_req_decode(buf, SDFS_NS_REQ_SIZE, &out), 0);
	cr_assert_eq(proto_ns_req_decode(buf, SDFS_NS_REQ_SIZE - 1, &out), -EPROTO);
	cr_assert_eq(proto_ns_req_decode(buf, 0, &out), -EPROTO);

	/* lengths whose sum would overflow 32 bits must not wrap around */
	in.name_len = UINT16_MAX;
	in.name2_len = UINT16_MAX;
	in.data_len = UINT32_MAX;
	proto_ns_req_encode(&in, buf);
	size_t wrapped = (uint32_t)(SDFS_NS_REQ_SIZE + UINT16_MAX + UINT16_MAX +
				    (uint64_t)UINT32_MAX);
	cr_assert_eq(proto_ns_req_decode(buf, wrapped, &out), -EPROTO);
	cr_assert_eq(proto_ns_req_decode(buf, sizeof(buf), &out), -EPROTO);
}

static struct sdfs_attr random_attr(uint64_t *seed)
{
	return (struct sdfs_attr){
		.ino = rng_next(seed), .gen = rng_next(seed), .size = rng_next(seed),
		.blocks = rng_next(seed), .atime_ns = (int64_t)rng_next(seed),
		.mtime_ns = (int64_t)rng_next(seed), .ctime_ns = (int64_t)rng_next(seed),
		.parent = rng_next(seed), .mode = (uint32_t)rng_next(seed),
		.nlink = (uint32_t)rng_next(seed), .uid = (uint32_t)rng_next(seed),
		.gid = (uint32_t)rng_next(seed), .rdev = (uint32_t)rng_next(seed),
		.flags = (uint32_t)rng_next(seed), .obj_size = (uint32_t)rng_next(seed),
		.copies = (uint16_t)rng_next(seed), .layout = (uint16_t)rng_next(seed),
	};
}

static void assert_attr_eq(const struct sdfs_attr *a, const struct sdfs_attr *b)
{
	cr_assert_eq(a->ino, b->ino);
	cr_assert_eq(a->gen, b->gen);
	cr_assert_eq(a->size, b->size);
	cr_assert_eq(a->blocks, b->blocks);
	cr_assert_eq(a->atime_ns, b->atime_ns);
	cr_assert_eq(a->mtime_ns, b->mtime_ns);
	cr_assert_eq(a->ctime_ns, b->ctime_ns);
	cr_assert_eq(a->parent, b->parent);
	cr_assert_eq(a->mode, b->mode);
	cr_assert_eq(a->nlink, b->nlink);
	cr_assert_eq(a->uid, b->uid);
	cr_assert_eq(a->gid, b->gid);
	cr_assert_eq(a->rdev, b->rdev);
	cr_assert_eq(a->flags, b->flags);
	cr_assert_eq(a->obj_size, b->obj_size);
	cr_assert_eq(a->copies, b->copies);
	cr_assert_eq(a->layout, b->layout);
}

Test(proto_attr, round_trips_at_the_reference_offsets)
{
	uint8_t buf[SDFS_ATTR_SIZE];
	uint64_t seed = 21;

	for (int i = 0; i < 1000; i++) {
		struct sdfs_attr in = random_attr(&seed), out;

		proto_attr_encode(&in, buf);
		cr_assert_eq(ref_get(buf + 0, 8), in.ino);
		cr_assert_eq(ref_get(buf + 8, 8), in.gen);
		cr_assert_eq(ref_get(buf + 16, 8), in.size);
		cr_assert_eq(ref_get(buf + 24, 8), in.blocks);
		cr_assert_eq(ref_get(buf + 32, 8), (uint64_t)in.atime_ns);
		cr_assert_eq(ref_get(buf + 40, 8), (uint64_t)in.mtime_ns);
		cr_assert_eq(ref_get(buf + 48, 8), (uint64_t)in.ctime_ns);
		cr_assert_eq(ref_get(buf + 56, 8), in.parent);
		cr_assert_eq(ref_get(buf + 64, 4), in.mode);
		cr_assert_eq(ref_get(buf + 68, 4), in.nlink);
		cr_assert_eq(ref_get(buf + 72, 4), in.uid);
		cr_assert_eq(ref_get(buf + 76, 4), in.gid);
		cr_assert_eq(ref_get(buf + 80, 4), in.rdev);
		cr_assert_eq(ref_get(buf + 84, 4), in.flags);
		cr_assert_eq(ref_get(buf + 88, 4), in.obj_size);
		cr_assert_eq(ref_get(buf + 92, 2), in.copies);
		cr_assert_eq(ref_get(buf + 94, 2), in.layout);
		cr_assert_eq(proto_attr_decode(buf, sizeof(buf), &out), 0);
		assert_attr_eq(&out, &in);
	}
}

Test(proto_attr, rejects_short_buffers)
{
	uint8_t buf[SDFS_ATTR_SIZE] = { 0 };
	struct sdfs_attr out;

	for (size_t len = 0; len < SDFS_ATTR_SIZE; len++)
		cr_assert_eq(proto_attr_decode(buf, len, &out), -EPROTO, "len %zu", len);
	cr_assert_eq(proto_attr_decode(buf, SDFS_ATTR_SIZE, &out), 0);
}

Test(proto_dirent, size_pads_the_name_to_8)
{
	cr_assert_eq(proto_dirent_size(1, 0), SDFS_DIRENT_SIZE + 8);
	cr_assert_eq(proto_dirent_size(8, 0), SDFS_DIRENT_SIZE + 8);
	cr_assert_eq(proto_dirent_size(9, 0), SDFS_DIRENT_SIZE + 16);
	cr_assert_eq(proto_dirent_size(255, 0), SDFS_DIRENT_SIZE + 256);
	cr_assert_eq(proto_dirent_size(9, 1), SDFS_DIRENT_SIZE + 16 + SDFS_ATTR_SIZE);
}

Test(proto_dirent, a_page_of_entries_round_trips)
{
	static uint8_t page[64 << 10];
	static char names[64][SDFS_NAME_MAX + 1];
	uint64_t seed = 22;

	for (int plus = 0; plus <= 1; plus++) {
		struct sdfs_attr attrs[64];
		size_t off = 0;
		int n = 0;

		memset(page, 0xee, sizeof(page));
		for (n = 0; n < 64; n++) {
			size_t nlen = 1 + rng_next(&seed) % SDFS_NAME_MAX;
			struct sdfs_dirent d = { .ino = rng_next(&seed),
				.cookie = rng_next(&seed), .type = (uint32_t)rng_next(&seed),
				.name_len = (uint32_t)nlen };

			if (n == 0)
				nlen = d.name_len = 1;
			if (n == 1)
				nlen = d.name_len = SDFS_NAME_MAX;
			for (size_t k = 0; k < nlen; k++)
				names[n][k] = (char)('a' + rng_next(&seed) % 26);
			attrs[n] = random_attr(&seed);
			size_t used = proto_dirent_encode(&d, names[n], plus ? &attrs[n] : NULL,
							  page + off);
			cr_assert_eq(used, proto_dirent_size(nlen, plus));
			cr_assert_eq(ref_get(page + off, 8), d.ino);
			cr_assert_eq(ref_get(page + off + 8, 8), d.cookie);
			cr_assert_eq(ref_get(page + off + 16, 4), d.type);
			cr_assert_eq(ref_get(page + off + 20, 4), nlen);
			for (size_t k = nlen; k < ((nlen + 7) & ~(size_t)7); k++)
				cr_assert_eq(page[off + SDFS_DIRENT_SIZE + k], 0,
					     "padding byte %zu of entry %d", k, n);
			off += used;
		}

		size_t at = 0;
		seed = 22;      /* not needed: compare against what was kept */
		for (int i = 0; i < n; i++) {
			struct sdfs_dirent d;
			struct sdfs_attr a;
			const char *name;
			ssize_t used = proto_dirent_decode(page + at, off - at, plus, &d,
							   &name, &a);

			cr_assert_gt(used, 0, "entry %d (plus %d)", i, plus);
			cr_assert_eq(d.name_len, strlen(names[i]) ? d.name_len : 0);
			cr_assert_eq(memcmp(name, names[i], d.name_len), 0, "entry %d", i);
			if (plus)
				assert_attr_eq(&a, &attrs[i]);
			at += (size_t)used;
		}
		cr_assert_eq(at, off, "every byte used, none left over");
		memset(names, 0, sizeof(names));
	}
}

Test(proto_dirent, rejects_truncated_entries)
{
	uint8_t buf[SDFS_DIRENT_SIZE + 16 + SDFS_ATTR_SIZE];
	struct sdfs_dirent d = { .ino = 5, .cookie = 6, .type = 0040000, .name_len = 9 }, out;
	struct sdfs_attr a = { .ino = 5 }, aout;
	const char *name;

	for (int plus = 0; plus <= 1; plus++) {
		size_t need = proto_dirent_encode(&d, "directory", plus ? &a : NULL, buf);

		for (size_t len = 0; len < need; len++)
			cr_assert_eq(proto_dirent_decode(buf, len, plus, &out, &name, &aout),
				     -EPROTO, "plus %d len %zu of %zu", plus, len, need);
		cr_assert_eq(proto_dirent_decode(buf, need, plus, &out, &name, &aout),
			     (ssize_t)need);
		/* more bytes than the entry (the next entry): only its own used */
		if (!plus)
			cr_assert_eq(proto_dirent_decode(buf, sizeof(buf), 0, &out, &name,
							 &aout), (ssize_t)need);
	}
}

Test(proto_dirent, rejects_bad_name_len)
{
	static uint8_t buf[SDFS_DIRENT_SIZE + 4096];
	const uint32_t bad[] = { 0, SDFS_NAME_MAX + 1, 4096, UINT32_MAX };
	struct sdfs_dirent d = { .ino = 7, .cookie = 1, .type = 0100000, .name_len = 3 }, out;
	const char *name;

	proto_dirent_encode(&d, "abc", NULL, buf);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ref_le(buf + 20, bad[i], 4);
		cr_assert_eq(proto_dirent_decode(buf, sizeof(buf), 0, &out, &name, NULL),
			     -EPROTO, "name_len %u", bad[i]);
	}
	ref_le(buf + 20, SDFS_NAME_MAX, 4);
	cr_assert_eq(proto_dirent_decode(buf, sizeof(buf), 0, &out, &name, NULL),
		     (ssize_t)proto_dirent_size(SDFS_NAME_MAX, 0));
}

Test(proto_ns_statfs, round_trips_and_wants_its_exact_size)
{
	struct sdfs_ns_statfs in = { .bytes_total = 0x0102030405060708ull,
		.bytes_free = 2, .files = 3, .files_free = UINT64_MAX,
		.bsize = 4096, .name_max = SDFS_NAME_MAX, .bytes_avail = 1 }, out;
	uint8_t buf[SDFS_NS_STATFS_SIZE + 8] = { 0 };

	proto_ns_statfs_encode(&in, buf);
	cr_assert_arr_eq(buf, ((uint8_t[]){ 8, 7, 6, 5, 4, 3, 2, 1 }), 8);
	cr_assert_eq(ref_get(buf + 8, 8), 2);
	cr_assert_eq(ref_get(buf + 16, 8), 3);
	cr_assert_eq(ref_get(buf + 24, 8), UINT64_MAX);
	cr_assert_eq(ref_get(buf + 32, 4), 4096);
	cr_assert_eq(ref_get(buf + 36, 4), SDFS_NAME_MAX);
	cr_assert_eq(ref_get(buf + 40, 8), 1);
	for (size_t len = 0; len <= sizeof(buf); len++)
		cr_assert_eq(proto_ns_statfs_decode(buf, len, &out),
			     len == SDFS_NS_STATFS_SIZE || len == SDFS_NS_STATFS_SIZE_1_6 ?
			     0 : -EPROTO, "len %zu", len);
	cr_assert_eq(proto_ns_statfs_decode(buf, SDFS_NS_STATFS_SIZE_1_6, &out), 0);
	cr_assert_eq(out.bytes_avail, 2, "a 1.5 mds: avail is free");
	cr_assert_eq(proto_ns_statfs_decode(buf, SDFS_NS_STATFS_SIZE, &out), 0);
	cr_assert_eq(out.bytes_avail, 1);
	cr_assert_eq(out.bytes_total, in.bytes_total);
	cr_assert_eq(out.bytes_free, in.bytes_free);
	cr_assert_eq(out.files, in.files);
	cr_assert_eq(out.files_free, in.files_free);
	cr_assert_eq(out.bsize, in.bsize);
	cr_assert_eq(out.name_max, in.name_max);
}

Test(proto_mds_info, round_trips_and_wants_its_exact_size)
{
	struct sdfs_mds_info in = { .epoch = 5, .db_bytes = 6, .db_files = 7,
		.inodes = 8, .ops = 9, .active_ms = 0x0102030405060708ull,
		.name = "mds.0", .subs = 10, .leases = 11, .pushes = 12,
		.push_timeouts = 13, .wakes = 14, .strays = 15, .ec_seals = 16,
		.ec_unseals = 17, .ec_sealed_bytes = 18 }, out;
	uint8_t buf[SDFS_MDS_INFO_SIZE + 8];

	memset(buf, 0xee, sizeof(buf));
	proto_mds_info_encode(&in, buf);
	cr_assert_eq(ref_get(buf + 0, 8), 5);
	cr_assert_eq(ref_get(buf + 8, 8), 6);
	cr_assert_eq(ref_get(buf + 16, 8), 7);
	cr_assert_eq(ref_get(buf + 24, 8), 8);
	cr_assert_eq(ref_get(buf + 32, 8), 9);
	cr_assert_eq(ref_get(buf + 40, 8), in.active_ms);
	cr_assert_eq(memcmp(buf + 48, "mds.0", 6), 0);
	for (int i = 48 + 5; i < 80; i++)
		cr_assert_eq(buf[i], 0, "name padding byte %d", i);
	cr_assert_eq(ref_get(buf + 80, 8), 10);
	cr_assert_eq(ref_get(buf + 104, 8), 13);
	cr_assert_eq(ref_get(buf + 120, 8), 15);
	cr_assert_eq(ref_get(buf + 128, 8), 16);
	cr_assert_eq(ref_get(buf + 144, 8), 18);
	for (size_t len = 0; len <= sizeof(buf); len++)
		cr_assert_eq(proto_mds_info_decode(buf, len, &out),
			     len == SDFS_MDS_INFO_SIZE || len == SDFS_MDS_INFO_SIZE_1_8 ||
			     len == SDFS_MDS_INFO_SIZE_1_5 ||
			     len == SDFS_MDS_INFO_SIZE_1_4 ? 0 : -EPROTO, "len %zu", len);
	cr_assert_eq(proto_mds_info_decode(buf, SDFS_MDS_INFO_SIZE_1_8, &out), 0);
	cr_assert_eq(out.strays, 15);
	cr_assert_eq(out.ec_seals, 0, "the 128 bytes of 1.8 to 2.5 have no EC counts");
	cr_assert_eq(proto_mds_info_decode(buf, SDFS_MDS_INFO_SIZE_1_5, &out), 0);
	cr_assert_eq(out.wakes, 14);
	cr_assert_eq(out.strays, 0, "the 120 bytes of 1.5 and 1.6 have no stray count");
	cr_assert_eq(proto_mds_info_decode(buf, SDFS_MDS_INFO_SIZE_1_4, &out), 0);
	cr_assert_eq(out.subs, 0, "1.4's 80 bytes have no counters");
	cr_assert_eq(out.push_timeouts, 0);
	cr_assert_eq(proto_mds_info_decode(buf, SDFS_MDS_INFO_SIZE, &out), 0);
	cr_assert_eq(out.subs, 10);
	cr_assert_eq(out.leases, 11);
	cr_assert_eq(out.pushes, 12);
	cr_assert_eq(out.push_timeouts, 13);
	cr_assert_eq(out.wakes, 14);
	cr_assert_eq(out.strays, 15);
	cr_assert_eq(out.ec_seals, 16);
	cr_assert_eq(out.ec_unseals, 17);
	cr_assert_eq(out.ec_sealed_bytes, 18);
	cr_assert_eq(out.epoch, 5);
	cr_assert_eq(out.db_bytes, 6);
	cr_assert_eq(out.db_files, 7);
	cr_assert_eq(out.inodes, 8);
	cr_assert_eq(out.ops, 9);
	cr_assert_eq(out.active_ms, in.active_ms);
	cr_assert_str_eq(out.name, "mds.0");
}

Test(proto_mds_info, a_name_without_nul_is_cut_to_31)
{
	struct sdfs_mds_info in = { .epoch = 1 }, out;
	uint8_t buf[SDFS_MDS_INFO_SIZE];

	memset(in.name, 'x', sizeof(in.name));  /* no NUL at all */
	proto_mds_info_encode(&in, buf);
	cr_assert_eq(buf[48 + 31], 0, "encode keeps the last byte NUL");
	memset(buf + 48, 'y', 32);              /* a peer that did not */
	cr_assert_eq(proto_mds_info_decode(buf, sizeof(buf), &out), 0);
	cr_assert_eq(strlen(out.name), 31);
}

Test(proto_ns, result_takes_the_errno_from_length)
{
	struct sdfs_hdr h = { .result = SDFS_RES_ERRNO };
	const int errs[] = { ENOENT, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY, EINVAL,
			     ENAMETOOLONG, ELOOP, ERANGE, ENODATA, EOPNOTSUPP, EXDEV };

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		h.length = (uint32_t)errs[i];
		cr_assert_eq(proto_ns_result(&h), -errs[i], "errno %d", errs[i]);
	}
	/* nonsense errnos are an I/O error, never 0 or a huge value */
	h.length = 0;
	cr_assert_eq(proto_ns_result(&h), -EIO);
	h.length = 4096;
	cr_assert_eq(proto_ns_result(&h), -EIO);
	h.length = UINT32_MAX;
	cr_assert_eq(proto_ns_result(&h), -EIO);
	/* other results map as everywhere else */
	h.result = SDFS_RES_OK;
	h.length = ENOENT;
	cr_assert_eq(proto_ns_result(&h), 0, "length is data when OK");
	h.result = SDFS_RES_SHUTDOWN;
	cr_assert_eq(proto_ns_result(&h), -ESHUTDOWN);
	h.result = SDFS_RES_MAX + 3;
	cr_assert_eq(proto_ns_result(&h), -EIO);
}

/* An inode note's flags byte (2.4) round-trips at offset 1, and an
 * older mds's record (0 there) decodes with no flags. */
Test(proto_note, flags_round_trip_at_offset_one)
{
	struct sdfs_note in = { .kind = SDFS_NOTE_INODE, .flags = SDFS_NOTE_F_ATIME,
				.ino = 0x1122334455667788ull }, out;
	uint8_t b[SDFS_NOTE_HDR_SIZE];

	cr_assert_eq(proto_note_encode(&in, b), SDFS_NOTE_HDR_SIZE);
	cr_assert_eq(b[0], SDFS_NOTE_INODE);
	cr_assert_eq(b[1], SDFS_NOTE_F_ATIME);
	cr_assert_eq(proto_note_decode(b, sizeof(b), &out), (ssize_t)SDFS_NOTE_HDR_SIZE);
	cr_assert_eq(out.kind, SDFS_NOTE_INODE);
	cr_assert_eq(out.flags, SDFS_NOTE_F_ATIME);
	cr_assert_eq(out.ino, in.ino);
	b[1] = 0;
	cr_assert_eq(proto_note_decode(b, sizeof(b), &out), (ssize_t)SDFS_NOTE_HDR_SIZE);
	cr_assert_eq(out.flags, 0);
}

Test(proto_strip, round_trips_and_checks_flags)
{
	struct sdfs_strip a = { .version = 0x0000000700000003ull, .tag = 0x1122334455667788ull,
				.obj_size = 4194303, .strip_len = 1u << 20, .k = 4, .m = 2,
				.s = 5 }, b;
	uint8_t w[SDFS_STRIP_SIZE + 3];

	proto_strip_encode(&a, w);
	cr_assert_eq(w[0], 0x03);               /* little-endian version */
	cr_assert_eq(w[30], 5);
	cr_assert_eq(proto_strip_decode(w, sizeof(w), &b), 0);  /* bytes may follow */
	cr_assert_eq(b.version, a.version);
	cr_assert_eq(b.tag, a.tag);
	cr_assert_eq(b.obj_size, a.obj_size);
	cr_assert_eq(b.strip_len, a.strip_len);
	cr_assert(b.k == 4 && b.m == 2 && b.s == 5 && b.flags == 0);
	cr_assert_eq(proto_strip_decode(w, SDFS_STRIP_SIZE - 1, &b), -EPROTO);
	cr_assert_eq(proto_strip_decode(NULL, 0, &b), -EPROTO);
	w[31] = SDFS_STRIP_TOMB;                /* a tombstone */
	cr_assert_eq(proto_strip_decode(w, SDFS_STRIP_SIZE, &b), 0);
	cr_assert_eq(b.flags, SDFS_STRIP_TOMB);
	w[31] = 2;
	cr_assert_eq(proto_strip_decode(w, SDFS_STRIP_SIZE, &b), -EPROTO);
	cr_assert_str_eq(proto_op_name(SDFS_OP_STRIP_COMMIT), "STRIP_COMMIT");
}
