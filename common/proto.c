/*
 * proto.c - see proto.h. Byte order is handled here and nowhere else.
 */
#include "common/proto.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "common/csum.h"

static inline void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static inline void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static inline uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static inline uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

#define KNOWN_FLAGS (SDFS_F_REPLY | SDFS_F_CREATE | SDFS_F_ALL | SDFS_F_FIRST | \
		     SDFS_F_MORE | SDFS_F_EPOCHS | SDFS_F_RAW)

void proto_hdr_encode(const struct sdfs_hdr *h, const void *payload,
		      uint8_t out[SDFS_HDR_SIZE])
{
	uint64_t pcsum = h->payload_len ? csum64(payload, h->payload_len) : 0;

	put32(out + 0, SDFS_PROTO_MAGIC);
	out[4] = SDFS_PROTO_MAJOR;
	out[5] = SDFS_PROTO_MINOR;
	out[6] = h->opcode;
	out[7] = h->flags;
	put64(out + 8, h->req_id);
	put32(out + 16, h->epoch);
	put32(out + 20, h->result);
	put64(out + 24, h->oid);
	put64(out + 32, h->offset);
	put32(out + 40, h->length);
	put32(out + 44, h->payload_len);
	put64(out + 48, pcsum);
	put32(out + 56, 0);
	put32(out + 60, (uint32_t)csum64(out, 60));
}

int proto_hdr_decode(const uint8_t in[SDFS_HDR_SIZE], uint32_t max_payload,
		     struct sdfs_hdr *h)
{
	if (get32(in) != SDFS_PROTO_MAGIC)
		return -EPROTO;
	if (get32(in + 60) != (uint32_t)csum64(in, 60))
		return -EPROTO;
	memset(h, 0, sizeof(*h));
	h->magic = SDFS_PROTO_MAGIC;
	h->major = in[4];
	h->minor = in[5];
	h->opcode = in[6];
	h->flags = in[7];
	h->req_id = get64(in + 8);
	h->epoch = get32(in + 16);
	h->result = get32(in + 20);
	h->oid = get64(in + 24);
	h->offset = get64(in + 32);
	h->length = get32(in + 40);
	h->payload_len = get32(in + 44);
	h->payload_csum = get64(in + 48);
	h->hdr_csum = get32(in + 60);
	if (h->major != SDFS_PROTO_MAJOR)
		return -EPROTONOSUPPORT;
	if (h->payload_len > max_payload || h->payload_len > SDFS_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (h->flags & ~KNOWN_FLAGS)
		return -EPROTO;
	if (h->payload_len == 0 && h->payload_csum != 0)
		return -EPROTO;
	return 0;
}

int proto_payload_check(const struct sdfs_hdr *h, const void *payload)
{
	uint64_t c = h->payload_len ? csum64(payload, h->payload_len) : 0;

	return c == h->payload_csum ? 0 : -EPROTO;
}

void proto_reply_init(struct sdfs_hdr *reply, const struct sdfs_hdr *req,
		      enum sdfs_res res)
{
	memset(reply, 0, sizeof(*reply));
	reply->opcode = req->opcode;
	reply->flags = SDFS_F_REPLY;
	reply->req_id = req->req_id;
	reply->oid = req->oid;
	reply->offset = req->offset;
	reply->result = res;
}

static const int res_errno[SDFS_RES_MAX] = {
	[SDFS_RES_OK] = 0, [SDFS_RES_NO_OBJ] = ENOENT, [SDFS_RES_EXISTS] = EEXIST,
	[SDFS_RES_CSUM] = EBADMSG, [SDFS_RES_OLD_EPOCH] = ESTALE,
	[SDFS_RES_NEW_EPOCH] = EAGAIN, [SDFS_RES_INVALID] = EINVAL,
	[SDFS_RES_TOO_BIG] = EFBIG, [SDFS_RES_NO_SPACE] = ENOSPC,
	[SDFS_RES_IO] = EIO, [SDFS_RES_BAD_VERSION] = EPROTONOSUPPORT,
	[SDFS_RES_BAD_MSG] = EPROTO, [SDFS_RES_UNKNOWN_OP] = EOPNOTSUPP,
	[SDFS_RES_NO_MEM] = ENOMEM, [SDFS_RES_SHUTDOWN] = ESHUTDOWN,
	[SDFS_RES_UNAVAIL] = ENODATA,
};

enum sdfs_res proto_res_from_errno(int neg_errno)
{
	if (neg_errno == 0)
		return SDFS_RES_OK;
	for (int r = 1; r < SDFS_RES_MAX; r++)
		if (-res_errno[r] == neg_errno)   /* negating neg_errno overflows on INT_MIN */
			return r;
	return SDFS_RES_IO;
}

int proto_res_to_errno(uint32_t res)
{
	if (res >= SDFS_RES_MAX)
		return -EIO;
	return -res_errno[res];
}

static const char *const op_names[SDFS_OP_MAX] = {
	[SDFS_OP_OBJ_READ] = "OBJ_READ", [SDFS_OP_OBJ_WRITE] = "OBJ_WRITE",
	[SDFS_OP_OBJ_CREATE] = "OBJ_CREATE", [SDFS_OP_OBJ_REMOVE] = "OBJ_REMOVE",
	[SDFS_OP_OBJ_LIST] = "OBJ_LIST", [SDFS_OP_OBJ_FLUSH] = "OBJ_FLUSH",
	[SDFS_OP_OBJ_STAT] = "OBJ_STAT", [SDFS_OP_OBJ_REPLACE] = "OBJ_REPLACE",
	[SDFS_OP_NODE_INFO] = "NODE_INFO",
};

const char *proto_op_name(unsigned op)
{
	return op < SDFS_OP_MAX && op_names[op] ? op_names[op] : "?";
}

void proto_obj_stat_encode(const struct sdfs_obj_stat *s, uint8_t *out)
{
	put64(out + 0, s->size);
	put64(out + 8, s->epoch);
	put64(out + 16, s->csum);
	put32(out + 24, s->path_len);
	put32(out + 28, 0);
}

int proto_obj_stat_decode(const uint8_t *in, size_t len, struct sdfs_obj_stat *s)
{
	if (len < sizeof(*s))
		return -EPROTO;
	s->size = get64(in + 0);
	s->epoch = get64(in + 8);
	s->csum = get64(in + 16);
	s->path_len = get32(in + 24);
	s->reserved = 0;
	if (s->path_len > SDFS_MAX_PATH || s->path_len != len - sizeof(*s))
		return -EPROTO;
	return 0;
}

void proto_node_info_encode(const struct sdfs_node_info *ni, uint8_t *out)
{
	put32(out + 0, ni->node_id);
	put32(out + 4, ni->epoch);
	put64(out + 8, ni->objects);
	put64(out + 16, ni->used_bytes);
	put64(out + 24, ni->total_bytes);
	put64(out + 32, ni->requests);
	put64(out + 40, ni->errors);
	put32(out + 48, ni->max_obj_size);
	put32(out + 52, 0);
	put32(out + 56, ni->rec_epoch);
	put32(out + 60, ni->clean_epoch);
	put64(out + 64, ni->rec_todo_objs);
	put64(out + 72, ni->rec_done_objs);
	put64(out + 80, ni->rec_todo_bytes);
	put64(out + 88, ni->rec_done_bytes);
	put64(out + 96, ni->rec_unavail);
	put64(out + 104, ni->rec_extra);
	put64(out + 112, ni->rec_elapsed_ms);
	put64(out + 120, ni->moved_objs);
}

int proto_node_info_decode(const uint8_t *in, size_t len, struct sdfs_node_info *ni)
{
	if (len != sizeof(*ni) && len != SDFS_NODE_INFO_V10_SIZE)
		return -EPROTO;
	memset(ni, 0, sizeof(*ni));
	ni->node_id = get32(in + 0);
	ni->epoch = get32(in + 4);
	ni->objects = get64(in + 8);
	ni->used_bytes = get64(in + 16);
	ni->total_bytes = get64(in + 24);
	ni->requests = get64(in + 32);
	ni->errors = get64(in + 40);
	ni->max_obj_size = get32(in + 48);
	if (len == SDFS_NODE_INFO_V10_SIZE)
		return 0;       /* a 1.0 node: no recovery fields */
	ni->rec_epoch = get32(in + 56);
	ni->clean_epoch = get32(in + 60);
	ni->rec_todo_objs = get64(in + 64);
	ni->rec_done_objs = get64(in + 72);
	ni->rec_todo_bytes = get64(in + 80);
	ni->rec_done_bytes = get64(in + 88);
	ni->rec_unavail = get64(in + 96);
	ni->rec_extra = get64(in + 104);
	ni->rec_elapsed_ms = get64(in + 112);
	ni->moved_objs = get64(in + 120);
	return 0;
}

void proto_oids_encode(const uint64_t *oids, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++)
		put64(out + 8 * i, oids[i]);
}

void proto_oids_decode(const uint8_t *in, size_t n, uint64_t *oids)
{
	for (size_t i = 0; i < n; i++)
		oids[i] = get64(in + 8 * i);
}

void proto_list_ent_encode(const struct sdfs_list_ent *ents, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		put64(out + 24 * i, ents[i].oid);
		put64(out + 24 * i + 8, ents[i].epoch);
		put64(out + 24 * i + 16, ents[i].size);
	}
}

void proto_list_ent_decode(const uint8_t *in, size_t n, struct sdfs_list_ent *ents)
{
	for (size_t i = 0; i < n; i++) {
		ents[i].oid = get64(in + 24 * i);
		ents[i].epoch = get64(in + 24 * i + 8);
		ents[i].size = get64(in + 24 * i + 16);
	}
}
