/*
 * sdfs_proto.h - every byte that crosses a process boundary.
 *
 * Every message is the 64-byte header below, then payload_len bytes of
 * payload. Integers are little-endian on the wire; only common/proto.c
 * converts, every other file sees host values. Reserved fields: send
 * zero, ignore on receipt. A receiver checks, in this order: magic,
 * header checksum, major version, then every length against its cap
 * before allocating anything. A peer with a newer minor version is
 * accepted; another major version gets SDFS_RES_BAD_VERSION.
 *
 * Changelog:
 *   1.0  first version: object ops and NODE_INFO.
 *   1.1  recovery: SDFS_F_EPOCHS (OBJ_LIST with epochs), SDFS_F_RAW,
 *        SDFS_RES_UNAVAIL, recovery fields at the end of sdfs_node_info.
 */
#ifndef SDFS_COMMON_SDFS_PROTO_H
#define SDFS_COMMON_SDFS_PROTO_H
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define SDFS_PROTO_MAGIC 0x53464453u    /* the bytes "SDFS" read as a LE uint32 */
#define SDFS_PROTO_MAJOR 1              /* bump = incompatible */
#define SDFS_PROTO_MINOR 1              /* bump = additions only */

#define SDFS_HDR_SIZE        64u
#define SDFS_MAX_PAYLOAD     (64u << 20)  /* no message carries more */
#define SDFS_MAX_LIST        65536u       /* oids in one OBJ_LIST reply */
#define SDFS_MAX_PATH        1024u        /* path strings in replies */

enum sdfs_op {  /* 0x00-0x7f public, 0x80+ peer-only */
	SDFS_OP_OBJ_READ    = 0x01,
	SDFS_OP_OBJ_WRITE   = 0x02,
	SDFS_OP_OBJ_CREATE  = 0x03,
	SDFS_OP_OBJ_REMOVE  = 0x04,
	SDFS_OP_OBJ_LIST    = 0x05,
	SDFS_OP_OBJ_FLUSH   = 0x06,
	SDFS_OP_OBJ_STAT    = 0x07,
	SDFS_OP_OBJ_REPLACE = 0x08,
	SDFS_OP_NODE_INFO   = 0x10,
	SDFS_OP_MAX         = 0x100,
};

/* Header flags (struct sdfs_hdr.flags). */
#define SDFS_F_REPLY     0x01u   /* set on every reply */
#define SDFS_F_CREATE    0x02u   /* OBJ_WRITE: create the object if missing */
#define SDFS_F_ALL       0x04u   /* OBJ_FLUSH: the whole store, oid ignored */
#define SDFS_F_FIRST     0x08u   /* OBJ_LIST: start at the lowest oid (incl. 0) */
#define SDFS_F_MORE      0x10u   /* OBJ_LIST reply: more oids follow */
#define SDFS_F_EPOCHS    0x20u   /* OBJ_LIST: entries are sdfs_list_ent (1.1) */
#define SDFS_F_RAW       0x40u   /* READ, STAT, LIST: this node's copy as
				    stored, no freshness check (peers, 1.1) */

/* Results on the wire; common/proto.c maps them to and from errno. */
enum sdfs_res {
	SDFS_RES_OK          = 0,
	SDFS_RES_NO_OBJ      = 1,  /* ENOENT */
	SDFS_RES_EXISTS      = 2,  /* EEXIST */
	SDFS_RES_CSUM        = 3,  /* EBADMSG: this replica's bytes failed their checksum */
	SDFS_RES_OLD_EPOCH   = 4,  /* ESTALE: sender's epoch is older; refresh the map */
	SDFS_RES_NEW_EPOCH   = 5,  /* EAGAIN: receiver is behind; retry shortly */
	SDFS_RES_INVALID     = 6,  /* EINVAL */
	SDFS_RES_TOO_BIG     = 7,  /* EFBIG */
	SDFS_RES_NO_SPACE    = 8,  /* ENOSPC */
	SDFS_RES_IO          = 9,  /* EIO */
	SDFS_RES_BAD_VERSION = 10, /* EPROTONOSUPPORT */
	SDFS_RES_BAD_MSG     = 11, /* EPROTO: malformed message */
	SDFS_RES_UNKNOWN_OP  = 12, /* EOPNOTSUPP */
	SDFS_RES_NO_MEM      = 13, /* ENOMEM */
	SDFS_RES_SHUTDOWN    = 14, /* ESHUTDOWN: node is stopping or cut off */
	SDFS_RES_UNAVAIL     = 15, /* ENODATA: no copy known to be current is
				      reachable now; never old data (1.1) */
	SDFS_RES_MAX
};

struct sdfs_hdr {
	uint32_t magic;
	uint8_t  major, minor, opcode, flags;
	uint64_t req_id;        /* chosen by the sender, echoed in the reply */
	uint32_t epoch;         /* sender's cluster epoch; 0 = none (reads, admin) */
	uint32_t result;        /* enum sdfs_res; zero in requests */
	uint64_t oid, offset;
	uint32_t length;        /* bytes asked for (READ), max entries (LIST) */
	uint32_t payload_len;   /* bytes that follow the header */
	uint64_t payload_csum;  /* XXH3-64 of the payload; 0 when payload_len is 0 */
	uint32_t reserved;
	uint32_t hdr_csum;      /* low 32 bits of XXH3-64 of bytes [0, 60) */
};
static_assert(sizeof(struct sdfs_hdr) == SDFS_HDR_SIZE, "header is 64 bytes");
static_assert(offsetof(struct sdfs_hdr, req_id) == 8, "req_id at 8");
static_assert(offsetof(struct sdfs_hdr, oid) == 24, "oid at 24");
static_assert(offsetof(struct sdfs_hdr, payload_csum) == 48, "payload_csum at 48");
static_assert(offsetof(struct sdfs_hdr, hdr_csum) == 60, "csum is last");

/*
 * Messages (request -> reply). Every reply has SDFS_F_REPLY, the
 * request's opcode, req_id and oid, and a result.
 *   OBJ_READ    hdr(oid, offset, length)      -> hdr, data[payload_len <= length]
 *   OBJ_WRITE   hdr(oid, offset, [CREATE]), data[payload_len] -> hdr
 *   OBJ_CREATE  hdr(oid)                      -> hdr
 *   OBJ_REMOVE  hdr(oid)                      -> hdr
 *   OBJ_LIST    hdr(offset = after, length = max, [FIRST], [EPOCHS])
 *                                             -> hdr([MORE]), le64 oid[payload_len / 8]
 *                                                with EPOCHS: sdfs_list_ent[payload_len / 24]
 * Replies to SDFS_F_RAW requests carry the node's clean epoch (the last
 * epoch whose recovery pass left nothing to do) in `length` and its full
 * epoch (clean, with every node of the map up) in `offset`.
 *   OBJ_FLUSH   hdr(oid | [ALL])              -> hdr
 *   OBJ_STAT    hdr(oid)                      -> hdr, sdfs_obj_stat, path[path_len]
 *   OBJ_REPLACE hdr(oid), data[payload_len]   -> hdr   (whole object, atomic)
 *   NODE_INFO   hdr                           -> hdr, sdfs_node_info
 * Mutations (WRITE, CREATE, REMOVE, REPLACE) must carry a nonzero epoch.
 */

/* OBJ_STAT reply payload, then path_len bytes of the object file's path. */
struct sdfs_obj_stat {
	uint64_t size;          /* high-water mark */
	uint64_t epoch;         /* epoch of the last write; with SDFS_F_RAW the
				   whole version: epoch << 32 | changes in it */
	uint64_t csum;          /* XXH3-64 over its block checksums */
	uint32_t path_len;      /* <= SDFS_MAX_PATH */
	uint32_t reserved;
};
static_assert(sizeof(struct sdfs_obj_stat) == 32, "obj_stat is 32 bytes");

/* OBJ_LIST entry with SDFS_F_EPOCHS: three le64, 24 bytes on the wire. */
struct sdfs_list_ent {
	uint64_t oid;
	uint64_t epoch;         /* version: epoch of the last change << 32 |
				   changes in that epoch */
	uint64_t size;
};
#define SDFS_LIST_ENT_SIZE 24u
/* size in a raw OBJ_STAT or an OBJ_LIST entry: the copy is a tombstone,
 * "removed in that epoch" (1.1) */
#define SDFS_SIZE_TOMBSTONE UINT64_MAX

/* NODE_INFO reply payload: 56 bytes in 1.0, 128 since 1.1. */
struct sdfs_node_info {
	uint32_t node_id;
	uint32_t epoch;         /* the cluster epoch this node knows */
	uint64_t objects;       /* objects stored */
	uint64_t used_bytes;    /* filesystem holding the store */
	uint64_t total_bytes;
	uint64_t requests;      /* served since start */
	uint64_t errors;        /* requests answered with an error */
	uint32_t max_obj_size;
	uint32_t reserved;
	/* 1.1: recovery, for the pass at rec_epoch */
	uint32_t rec_epoch;     /* epoch of the current or last recovery pass */
	uint32_t clean_epoch;   /* last epoch whose pass left nothing to do */
	uint64_t rec_todo_objs; /* objects this pass must fetch */
	uint64_t rec_done_objs; /* ... fetched so far */
	uint64_t rec_todo_bytes;
	uint64_t rec_done_bytes;
	uint64_t rec_unavail;   /* objects with no current copy reachable */
	uint64_t rec_extra;     /* copies held here that placement moved away */
	uint64_t rec_elapsed_ms;/* since the pass started */
	uint64_t moved_objs;    /* objects fetched by recovery since start */
};
#define SDFS_NODE_INFO_V10_SIZE 56u
static_assert(sizeof(struct sdfs_node_info) == 128, "node_info is 128 bytes");
#endif
