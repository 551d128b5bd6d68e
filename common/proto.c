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
		     SDFS_F_MORE | SDFS_F_EPOCHS | SDFS_F_RAW | SDFS_F_SYNC)

static void hdr_encode(const struct sdfs_hdr *h, uint64_t pcsum,
		       uint8_t out[SDFS_HDR_SIZE])
{
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
	put32(out + 56, h->token);
	put32(out + 60, (uint32_t)csum64(out, 60));
}

void proto_hdr_encode(const struct sdfs_hdr *h, const void *payload,
		      uint8_t out[SDFS_HDR_SIZE])
{
	hdr_encode(h, h->payload_len ? csum64(payload, h->payload_len) : 0, out);
}

void proto_hdr_encode_nocsum(const struct sdfs_hdr *h, uint8_t out[SDFS_HDR_SIZE])
{
	hdr_encode(h, 0, out);
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
	h->token = get32(in + 56);
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
	[SDFS_RES_UNAVAIL] = ENODATA, [SDFS_RES_FENCED] = EPERM,
	[SDFS_RES_ERRNO] = EIO,         /* the errno is in hdr.length */
	[SDFS_RES_READONLY] = EROFS,
	[SDFS_RES_AUTH] = EACCES,
	[SDFS_RES_CAP] = EKEYREJECTED,
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
	[SDFS_OP_NODE_INFO] = "NODE_INFO", [SDFS_OP_MDS_FENCE] = "MDS_FENCE",
	[SDFS_OP_VOL_FENCE] = "VOL_FENCE", [SDFS_OP_OBJ_COPY] = "OBJ_COPY",
	[SDFS_OP_SCRUB] = "SCRUB",
	[SDFS_OP_STRIP_PUT] = "STRIP_PUT", [SDFS_OP_STRIP_GET] = "STRIP_GET",
	[SDFS_OP_STRIP_STAT] = "STRIP_STAT", [SDFS_OP_STRIP_COMMIT] = "STRIP_COMMIT",
	[SDFS_OP_STRIP_REPAIR] = "STRIP_REPAIR",
	[SDFS_OP_OBJ_FILL] = "OBJ_FILL",
	[SDFS_OP_NS_SUBSCRIBE] = "NS_SUBSCRIBE", [SDFS_OP_NS_NOTIFY] = "NS_NOTIFY",
	[SDFS_OP_NS_OPEN] = "NS_OPEN", [SDFS_OP_NS_OBJCAP] = "NS_OBJCAP",
	[SDFS_OP_NS_SYNC] = "NS_SYNC",
	[SDFS_OP_AUTH_HELLO] = "AUTH_HELLO", [SDFS_OP_AUTH_PROOF] = "AUTH_PROOF",
	[SDFS_OP_REPL_WRITE] = "REPL_WRITE", [SDFS_OP_REPL_CREATE] = "REPL_CREATE",
	[SDFS_OP_REPL_REMOVE] = "REPL_REMOVE", [SDFS_OP_REPL_REPLACE] = "REPL_REPLACE",
	[SDFS_OP_NS_LOOKUP] = "NS_LOOKUP", [SDFS_OP_NS_GETATTR] = "NS_GETATTR",
	[SDFS_OP_NS_SETATTR] = "NS_SETATTR", [SDFS_OP_NS_MKNOD] = "NS_MKNOD",
	[SDFS_OP_NS_MKDIR] = "NS_MKDIR", [SDFS_OP_NS_UNLINK] = "NS_UNLINK",
	[SDFS_OP_NS_RMDIR] = "NS_RMDIR", [SDFS_OP_NS_RENAME] = "NS_RENAME",
	[SDFS_OP_NS_LINK] = "NS_LINK", [SDFS_OP_NS_SYMLINK] = "NS_SYMLINK",
	[SDFS_OP_NS_READLINK] = "NS_READLINK", [SDFS_OP_NS_READDIR] = "NS_READDIR",
	[SDFS_OP_NS_STATFS] = "NS_STATFS", [SDFS_OP_NS_GETXATTR] = "NS_GETXATTR",
	[SDFS_OP_NS_SETXATTR] = "NS_SETXATTR", [SDFS_OP_NS_LISTXATTR] = "NS_LISTXATTR",
	[SDFS_OP_NS_RMXATTR] = "NS_RMXATTR", [SDFS_OP_NS_INFO] = "NS_INFO",
	[SDFS_OP_NS_VOL_CREATE] = "NS_VOL_CREATE", [SDFS_OP_NS_VOL_INFO] = "NS_VOL_INFO",
	[SDFS_OP_NS_VOL_SNAP] = "NS_VOL_SNAP", [SDFS_OP_NS_VOL_SNAPLIST] = "NS_VOL_SNAPLIST",
	[SDFS_OP_NS_VOL_SNAPDEL] = "NS_VOL_SNAPDEL",
	[SDFS_OP_NS_VOL_ROLLBACK] = "NS_VOL_ROLLBACK",
	[SDFS_OP_NS_VOL_CLONE] = "NS_VOL_CLONE", [SDFS_OP_NS_VOL_TREE] = "NS_VOL_TREE",
	[SDFS_OP_NS_VOL_RECLAIM] = "NS_VOL_RECLAIM",
	[SDFS_OP_NS_LOCK_SET] = "NS_LOCK_SET", [SDFS_OP_NS_LOCK_GET] = "NS_LOCK_GET",
	[SDFS_OP_NS_LOCK_UNLOCK] = "NS_LOCK_UNLOCK",
	[SDFS_OP_NS_LOCK_RELEASE] = "NS_LOCK_RELEASE",
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

void proto_obj_copy_encode(const struct sdfs_obj_copy *c, uint8_t *out)
{
	put64(out + 0, c->src);
	put32(out + 8, c->len);
	put32(out + 12, c->flags);
}

int proto_obj_copy_decode(const uint8_t *in, size_t len, uint32_t max_piece,
			  struct sdfs_obj_copy *c, const uint8_t **piece)
{
	if (!in || len < SDFS_OBJ_COPY_SIZE)
		return -EPROTO;
	c->src = get64(in + 0);
	c->len = get32(in + 8);
	c->flags = get32(in + 12);
	if (c->flags & ~(SDFS_COPY_ZERO | SDFS_COPY_STRIPE | SDFS_COPY_CODE(0xff, 0xff)) ||
	    (!(c->flags & SDFS_COPY_STRIPE) && c->flags & SDFS_COPY_CODE(0xff, 0xff)) ||
	    c->len > max_piece)
		return -EPROTO;
	if (len - SDFS_OBJ_COPY_SIZE != (c->flags & SDFS_COPY_ZERO ? 0 : c->len))
		return -EPROTO;
	*piece = in + SDFS_OBJ_COPY_SIZE;
	return 0;
}

void proto_strip_encode(const struct sdfs_strip *st, uint8_t *out)
{
	put64(out + 0, st->version);
	put64(out + 8, st->tag);
	put64(out + 16, st->obj_size);
	put32(out + 24, st->strip_len);
	out[28] = st->k;
	out[29] = st->m;
	out[30] = st->s;
	out[31] = st->flags;
}

int proto_strip_decode(const uint8_t *in, size_t len, struct sdfs_strip *st)
{
	if (!in || len < SDFS_STRIP_SIZE)
		return -EPROTO;
	st->version = get64(in + 0);
	st->tag = get64(in + 8);
	st->obj_size = get64(in + 16);
	st->strip_len = get32(in + 24);
	st->k = in[28];
	st->m = in[29];
	st->s = in[30];
	st->flags = in[31];
	return st->flags & ~SDFS_STRIP_TOMB ? -EPROTO : 0;
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
	put32(out + 52, ni->space);
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
	put64(out + 128, ni->avail_bytes);
	put64(out + 136, ni->ec_degraded);
	put64(out + 144, ni->ec_unavail);
}

int proto_node_info_decode(const uint8_t *in, size_t len, struct sdfs_node_info *ni)
{
	if (len != sizeof(*ni) && len != SDFS_NODE_INFO_V17_SIZE &&
	    len != SDFS_NODE_INFO_V11_SIZE && len != SDFS_NODE_INFO_V10_SIZE)
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
	ni->space = get32(in + 52);     /* 0 before 1.9 */
	/* before 1.7: what is free is all a node tells */
	ni->avail_bytes = ni->total_bytes > ni->used_bytes ?
			  ni->total_bytes - ni->used_bytes : 0;
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
	if (len >= SDFS_NODE_INFO_V17_SIZE)
		ni->avail_bytes = get64(in + 128);
	if (len == sizeof(*ni)) {
		ni->ec_degraded = get64(in + 136);
		ni->ec_unavail = get64(in + 144);
	}
	return 0;
}

void proto_scrub_info_encode(const struct sdfs_scrub_info *si, uint8_t *out)
{
	put32(out + 0, si->node_id);
	put32(out + 4, si->state);
	put64(out + 8, si->cursor);
	put64(out + 16, si->objects);
	put64(out + 24, si->bytes);
	put64(out + 32, si->found);
	put64(out + 40, si->repaired);
	put64(out + 48, si->unrepaired);
	put64(out + 56, si->total_found);
	put64(out + 64, si->total_repaired);
	put64(out + 72, si->total_unrepaired);
	put64(out + 80, si->passes);
	put64(out + 88, si->pass_start_ms);
	put64(out + 96, si->pass_end_ms);
	put64(out + 104, si->next_start_ms);
	put64(out + 112, si->rate);
	put64(out + 120, si->interval_s);
	put64(out + 128, si->store_objects);
	put64(out + 136, si->compared);
	put64(out + 144, si->mismatched);
	put64(out + 152, si->total_mismatched);
	put64(out + 160, si->refreshed);
	put64(out + 168, si->total_refreshed);
	put64(out + 176, si->last_start_ms);
	put64(out + 184, si->strips);
	put64(out + 192, si->strip_bytes);
	put64(out + 200, si->strips_found);
	put64(out + 208, si->strips_repaired);
	put64(out + 216, si->strips_unrepaired);
	put64(out + 224, si->total_strips_found);
	put64(out + 232, si->total_strips_repaired);
	put64(out + 240, si->total_strips_unrepaired);
}

int proto_scrub_info_decode(const uint8_t *in, size_t len, struct sdfs_scrub_info *si)
{
	if (!in || (len != SDFS_SCRUB_INFO_SIZE && len != SDFS_SCRUB_INFO_V24_SIZE &&
		    len != SDFS_SCRUB_INFO_V23_SIZE))
		return -EPROTO;
	memset(si, 0, sizeof(*si));
	si->node_id = get32(in + 0);
	si->state = get32(in + 4);
	si->cursor = get64(in + 8);
	si->objects = get64(in + 16);
	si->bytes = get64(in + 24);
	si->found = get64(in + 32);
	si->repaired = get64(in + 40);
	si->unrepaired = get64(in + 48);
	si->total_found = get64(in + 56);
	si->total_repaired = get64(in + 64);
	si->total_unrepaired = get64(in + 72);
	si->passes = get64(in + 80);
	si->pass_start_ms = get64(in + 88);
	si->pass_end_ms = get64(in + 96);
	si->next_start_ms = get64(in + 104);
	si->rate = get64(in + 112);
	si->interval_s = get64(in + 120);
	si->store_objects = get64(in + 128);
	si->compared = get64(in + 136);
	si->mismatched = get64(in + 144);
	si->total_mismatched = get64(in + 152);
	if (len >= SDFS_SCRUB_INFO_V24_SIZE) {
		si->refreshed = get64(in + 160);
		si->total_refreshed = get64(in + 168);
		si->last_start_ms = get64(in + 176);
	}
	if (len >= SDFS_SCRUB_INFO_SIZE) {
		si->strips = get64(in + 184);
		si->strip_bytes = get64(in + 192);
		si->strips_found = get64(in + 200);
		si->strips_repaired = get64(in + 208);
		si->strips_unrepaired = get64(in + 216);
		si->total_strips_found = get64(in + 224);
		si->total_strips_repaired = get64(in + 232);
		si->total_strips_unrepaired = get64(in + 240);
	}
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

/* ---- namespace payloads (1.2) ---- */

int proto_ns_result(const struct sdfs_hdr *reply)
{
	if (reply->result == SDFS_RES_ERRNO)
		return reply->length > 0 && reply->length < 4096 ?
		       -(int)reply->length : -EIO;
	return proto_res_to_errno(reply->result);
}

void proto_ns_req_encode(const struct sdfs_ns_req *r, uint8_t *out)
{
	put64(out + 0, r->client_id);
	put64(out + 8, r->seq);
	put64(out + 16, r->ino);
	put64(out + 24, r->ino2);
	put64(out + 32, r->arg);
	put64(out + 40, (uint64_t)r->atime_ns);
	put64(out + 48, (uint64_t)r->mtime_ns);
	put32(out + 56, r->mode);
	put32(out + 60, r->uid);
	put32(out + 64, r->gid);
	put32(out + 68, r->rdev);
	put32(out + 72, r->flags);
	put32(out + 76, r->max);
	out[80] = (uint8_t)r->name_len;
	out[81] = (uint8_t)(r->name_len >> 8);
	out[82] = (uint8_t)r->name2_len;
	out[83] = (uint8_t)(r->name2_len >> 8);
	put32(out + 84, r->data_len);
	put32(out + 88, r->cuid);
	put32(out + 92, r->cgid);
	put32(out + 96, r->ngroups);
	put32(out + 100, 0);
}

size_t proto_ns_req_len(const struct sdfs_ns_req *r)
{
	return SDFS_NS_REQ_SIZE + (size_t)r->name_len + r->name2_len + r->data_len +
	       4 * (size_t)r->ngroups;
}

void proto_ns_groups_encode(const struct sdfs_ns_req *r, uint8_t *payload)
{
	uint8_t *p = payload + proto_ns_req_len(r) - 4 * (size_t)r->ngroups;

	for (uint32_t i = 0; i < r->ngroups; i++)
		put32(p + 4 * i, r->groups[i]);
}

int proto_ns_req_decode(const uint8_t *in, size_t len, struct sdfs_ns_req *r)
{
	if (len < SDFS_NS_REQ_SIZE)
		return -EPROTO;
	r->client_id = get64(in + 0);
	r->seq = get64(in + 8);
	r->ino = get64(in + 16);
	r->ino2 = get64(in + 24);
	r->arg = get64(in + 32);
	r->atime_ns = (int64_t)get64(in + 40);
	r->mtime_ns = (int64_t)get64(in + 48);
	r->mode = get32(in + 56);
	r->uid = get32(in + 60);
	r->gid = get32(in + 64);
	r->rdev = get32(in + 68);
	r->flags = get32(in + 72);
	r->max = get32(in + 76);
	r->name_len = (uint16_t)(in[80] | in[81] << 8);
	r->name2_len = (uint16_t)(in[82] | in[83] << 8);
	r->data_len = get32(in + 84);
	r->cuid = get32(in + 88);
	r->cgid = get32(in + 92);
	r->ngroups = get32(in + 96);
	r->reserved = 0;
	if (r->ngroups > SDFS_NS_GROUPS_MAX)
		return -EPROTO;
	if ((uint64_t)SDFS_NS_REQ_SIZE + r->name_len + r->name2_len + r->data_len +
	    4 * (uint64_t)r->ngroups != len)
		return -EPROTO;
	in += len - 4 * (size_t)r->ngroups;
	for (uint32_t i = 0; i < r->ngroups; i++)
		r->groups[i] = get32(in + 4 * i);
	return 0;
}

void proto_attr_encode(const struct sdfs_attr *a, uint8_t *out)
{
	put64(out + 0, a->ino);
	put64(out + 8, a->gen);
	put64(out + 16, a->size);
	put64(out + 24, a->blocks);
	put64(out + 32, (uint64_t)a->atime_ns);
	put64(out + 40, (uint64_t)a->mtime_ns);
	put64(out + 48, (uint64_t)a->ctime_ns);
	put64(out + 56, a->parent);
	put32(out + 64, a->mode);
	put32(out + 68, a->nlink);
	put32(out + 72, a->uid);
	put32(out + 76, a->gid);
	put32(out + 80, a->rdev);
	put32(out + 84, a->flags);
	put32(out + 88, a->obj_size);
	out[92] = (uint8_t)a->copies;
	out[93] = (uint8_t)(a->copies >> 8);
	out[94] = (uint8_t)a->layout;
	out[95] = (uint8_t)(a->layout >> 8);
}

int proto_attr_decode(const uint8_t *in, size_t len, struct sdfs_attr *a)
{
	if (len < SDFS_ATTR_SIZE)
		return -EPROTO;
	a->ino = get64(in + 0);
	a->gen = get64(in + 8);
	a->size = get64(in + 16);
	a->blocks = get64(in + 24);
	a->atime_ns = (int64_t)get64(in + 32);
	a->mtime_ns = (int64_t)get64(in + 40);
	a->ctime_ns = (int64_t)get64(in + 48);
	a->parent = get64(in + 56);
	a->mode = get32(in + 64);
	a->nlink = get32(in + 68);
	a->uid = get32(in + 72);
	a->gid = get32(in + 76);
	a->rdev = get32(in + 80);
	a->flags = get32(in + 84);
	a->obj_size = get32(in + 88);
	a->copies = (uint16_t)(in[92] | in[93] << 8);
	a->layout = (uint16_t)(in[94] | in[95] << 8);
	return 0;
}

size_t proto_dirent_size(size_t name_len, int plus)
{
	return SDFS_DIRENT_SIZE + ((name_len + 7) & ~(size_t)7) +
	       (plus ? SDFS_ATTR_SIZE : 0);
}

size_t proto_dirent_encode(const struct sdfs_dirent *d, const char *name,
			   const struct sdfs_attr *attr, uint8_t *out)
{
	size_t pad = (d->name_len + 7) & ~(size_t)7;

	put64(out + 0, d->ino);
	put64(out + 8, d->cookie);
	put32(out + 16, d->type);
	put32(out + 20, d->name_len);
	memset(out + SDFS_DIRENT_SIZE, 0, pad);
	memcpy(out + SDFS_DIRENT_SIZE, name, d->name_len);
	if (attr)
		proto_attr_encode(attr, out + SDFS_DIRENT_SIZE + pad);
	return proto_dirent_size(d->name_len, attr != NULL);
}

ssize_t proto_dirent_decode(const uint8_t *in, size_t len, int plus,
			    struct sdfs_dirent *d, const char **name,
			    struct sdfs_attr *attr)
{
	size_t need;

	if (len < SDFS_DIRENT_SIZE)
		return -EPROTO;
	d->ino = get64(in + 0);
	d->cookie = get64(in + 8);
	d->type = get32(in + 16);
	d->name_len = get32(in + 20);
	if (d->name_len == 0 || d->name_len > SDFS_NAME_MAX)
		return -EPROTO;
	need = proto_dirent_size(d->name_len, plus);
	if (need > len)
		return -EPROTO;
	*name = (const char *)in + SDFS_DIRENT_SIZE;
	if (plus && attr)
		proto_attr_decode(in + need - SDFS_ATTR_SIZE, SDFS_ATTR_SIZE, attr);
	return (ssize_t)need;
}

void proto_ns_chunks_encode(const uint64_t *chunks, uint32_t n, uint8_t *out)
{
	put32(out + 0, SDFS_NS_CHUNKS_MAGIC);
	put32(out + 4, n);
	for (uint32_t i = 0; i < n; i++)
		put64(out + SDFS_NS_CHUNKS_HDR + 8ull * i, chunks[i]);
}

void proto_ns_statfs_encode(const struct sdfs_ns_statfs *s, uint8_t *out)
{
	put64(out + 0, s->bytes_total);
	put64(out + 8, s->bytes_free);
	put64(out + 16, s->files);
	put64(out + 24, s->files_free);
	put32(out + 32, s->bsize);
	put32(out + 36, s->name_max);
	put64(out + 40, s->bytes_avail);
}

int proto_ns_statfs_decode(const uint8_t *in, size_t len, struct sdfs_ns_statfs *s)
{
	if (len != SDFS_NS_STATFS_SIZE && len != SDFS_NS_STATFS_SIZE_1_6)
		return -EPROTO;
	s->bytes_total = get64(in + 0);
	s->bytes_free = get64(in + 8);
	s->files = get64(in + 16);
	s->files_free = get64(in + 24);
	s->bsize = get32(in + 32);
	s->name_max = get32(in + 36);
	s->bytes_avail = len == SDFS_NS_STATFS_SIZE ? get64(in + 40) : s->bytes_free;
	return 0;
}

void proto_mds_info_encode(const struct sdfs_mds_info *m, uint8_t *out)
{
	put64(out + 0, m->epoch);
	put64(out + 8, m->db_bytes);
	put64(out + 16, m->db_files);
	put64(out + 24, m->inodes);
	put64(out + 32, m->ops);
	put64(out + 40, m->active_ms);
	memset(out + 48, 0, 32);
	memcpy(out + 48, m->name, strnlen(m->name, 31));
	put64(out + 80, m->subs);
	put64(out + 88, m->leases);
	put64(out + 96, m->pushes);
	put64(out + 104, m->push_timeouts);
	put64(out + 112, m->wakes);
	put64(out + 120, m->strays);
	put64(out + 128, m->ec_seals);
	put64(out + 136, m->ec_unseals);
	put64(out + 144, m->ec_sealed_bytes);
}

int proto_mds_info_decode(const uint8_t *in, size_t len, struct sdfs_mds_info *m)
{
	if (len != SDFS_MDS_INFO_SIZE && len != SDFS_MDS_INFO_SIZE_1_8 &&
	    len != SDFS_MDS_INFO_SIZE_1_5 && len != SDFS_MDS_INFO_SIZE_1_4)
		return -EPROTO;
	m->subs = m->leases = m->pushes = m->push_timeouts = m->wakes = 0;
	m->strays = m->ec_seals = m->ec_unseals = m->ec_sealed_bytes = 0;
	if (len >= SDFS_MDS_INFO_SIZE_1_8)
		m->strays = get64(in + 120);
	if (len == SDFS_MDS_INFO_SIZE) {
		m->ec_seals = get64(in + 128);
		m->ec_unseals = get64(in + 136);
		m->ec_sealed_bytes = get64(in + 144);
	}
	if (len >= SDFS_MDS_INFO_SIZE_1_5) {
		m->subs = get64(in + 80);
		m->leases = get64(in + 88);
		m->pushes = get64(in + 96);
		m->push_timeouts = get64(in + 104);
		m->wakes = get64(in + 112);
	}
	m->epoch = get64(in + 0);
	m->db_bytes = get64(in + 8);
	m->db_files = get64(in + 16);
	m->inodes = get64(in + 24);
	m->ops = get64(in + 32);
	m->active_ms = get64(in + 40);
	memcpy(m->name, in + 48, 32);
	m->name[31] = '\0';
	return 0;
}

void proto_ns_vol_encode(const struct sdfs_ns_vol *v, uint8_t *out)
{
	size_t n = strnlen(v->name, SDFS_SNAP_NAME_MAX);

	put64(out + 0, v->vid);
	put64(out + 8, v->family);
	put64(out + 16, v->parent);
	put64(out + 24, v->ino);
	put64(out + 32, v->size);
	put64(out + 40, v->objects);
	put64(out + 48, (uint64_t)v->ctime_ns);
	put32(out + 56, v->obj_size);
	put32(out + 60, (uint32_t)v->copies | (uint32_t)v->state << 16);
	put32(out + 64, v->token);
	put32(out + 68, (uint32_t)n);
	memset(out + 72, 0, SDFS_SNAP_NAME_MAX);
	memcpy(out + 72, v->name, n);
}

int proto_ns_vol_decode(const uint8_t *in, size_t len, struct sdfs_ns_vol *v)
{
	uint32_t cs, n;

	if (len != SDFS_NS_VOL_SIZE)
		return -EPROTO;
	n = get32(in + 68);
	if (n > SDFS_SNAP_NAME_MAX)
		return -EPROTO;
	v->vid = get64(in + 0);
	v->family = get64(in + 8);
	v->parent = get64(in + 16);
	v->ino = get64(in + 24);
	v->size = get64(in + 32);
	v->objects = get64(in + 40);
	v->ctime_ns = (int64_t)get64(in + 48);
	v->obj_size = get32(in + 56);
	cs = get32(in + 60);
	v->copies = (uint16_t)(cs & 0xffff);
	v->state = (uint16_t)(cs >> 16);
	v->token = get32(in + 64);
	v->name_len = n;
	memcpy(v->name, in + 72, n);
	v->name[n] = '\0';
	return 0;
}

void proto_ns_reclaim_encode(const struct sdfs_ns_reclaim *r, uint8_t *out)
{
	put64(out + 0, r->vids_pending);
	put64(out + 8, r->objects_pending);
	put64(out + 16, r->bytes_pending);
	put64(out + 24, r->objects_freed);
	put64(out + 32, r->bytes_freed);
	put64(out + 40, r->sweeps);
}

int proto_ns_reclaim_decode(const uint8_t *in, size_t len, struct sdfs_ns_reclaim *r)
{
	if (len != SDFS_NS_RECLAIM_SIZE)
		return -EPROTO;
	r->vids_pending = get64(in + 0);
	r->objects_pending = get64(in + 8);
	r->bytes_pending = get64(in + 16);
	r->objects_freed = get64(in + 24);
	r->bytes_freed = get64(in + 32);
	r->sweeps = get64(in + 40);
	return 0;
}

/* ---- locks (1.4) ---- */

size_t proto_note_encode(const struct sdfs_note *iv, uint8_t *out)
{
	out[0] = iv->kind;
	out[1] = iv->flags;
	out[2] = (uint8_t)iv->name_len;
	out[3] = (uint8_t)(iv->name_len >> 8);
	put32(out + 4, 0);
	put64(out + 8, iv->ino);
	if (iv->name_len)
		memcpy(out + SDFS_NOTE_HDR_SIZE, iv->name, iv->name_len);
	return SDFS_NOTE_HDR_SIZE + iv->name_len;
}

ssize_t proto_note_decode(const uint8_t *in, size_t len, struct sdfs_note *iv)
{
	if (len < SDFS_NOTE_HDR_SIZE)
		return -EPROTO;
	iv->kind = in[0];
	iv->flags = in[1];
	iv->name_len = (uint16_t)(in[2] | in[3] << 8);
	iv->ino = get64(in + 8);
	iv->name = (const char *)in + SDFS_NOTE_HDR_SIZE;
	if (iv->kind == SDFS_NOTE_INODE || iv->kind == SDFS_NOTE_LOCK ? iv->name_len != 0
	    : iv->kind != SDFS_NOTE_ENTRY || iv->name_len == 0 ||
	      iv->name_len > SDFS_NAME_MAX)
		return -EPROTO;
	if (len - SDFS_NOTE_HDR_SIZE < iv->name_len)
		return -EPROTO;
	return (ssize_t)(SDFS_NOTE_HDR_SIZE + iv->name_len);
}

void proto_ns_lock_encode(const struct sdfs_ns_lock *l, uint8_t *out)
{
	put64(out + 0, l->client);
	put64(out + 8, l->owner);
	put64(out + 16, l->start);
	put64(out + 24, l->end);
	put32(out + 32, l->pid);
	out[36] = l->type;
	out[37] = l->kind;
	out[38] = (uint8_t)l->flags;
	out[39] = (uint8_t)(l->flags >> 8);
}

int proto_ns_lock_decode(const uint8_t *in, size_t len, struct sdfs_ns_lock *l)
{
	if (len != SDFS_NS_LOCK_SIZE)
		return -EPROTO;
	l->client = get64(in + 0);
	l->owner = get64(in + 8);
	l->start = get64(in + 16);
	l->end = get64(in + 24);
	l->pid = get32(in + 32);
	l->type = in[36];
	l->kind = in[37];
	l->flags = (uint16_t)(in[38] | in[39] << 8);
	if (l->type > SDFS_LOCK_WR || (l->kind != SDFS_LOCK_POSIX &&
	    l->kind != SDFS_LOCK_FLOCK) || l->start > l->end)
		return -EPROTO;
	return 0;
}
