/*
 * proto.h - encoding and checking of sdfs_proto.h messages.
 *
 * The only place that converts byte order and maps wire results to
 * errno. Pure functions: safe from any thread. Not here: sockets
 * (net.h), what an op means (blockd/ops.c, libclient/objio.c).
 */
#ifndef SDFS_COMMON_PROTO_H
#define SDFS_COMMON_PROTO_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/sdfs_proto.h"

/* Fill magic, versions, payload checksum (of @payload) and hdr_csum,
 * and write the 64 wire bytes of @h into @out. */
void proto_hdr_encode(const struct sdfs_hdr *h, const void *payload,
		      uint8_t out[SDFS_HDR_SIZE]);
/* The same with payload_csum 0, the payload not read: a frame on a
 * tagged connection, whose MAC covers the payload (auth_hdr_encode). */
void proto_hdr_encode_nocsum(const struct sdfs_hdr *h, uint8_t out[SDFS_HDR_SIZE]);

/*
 * Decode and check 64 wire bytes. Checks magic, header checksum, major
 * version, and payload_len <= @max_payload, in that order. Returns 0 and
 * fills *@h, or -EPROTO (magic, checksum, flags), -EPROTONOSUPPORT
 * (major version; *@h is filled so a reply can echo req_id) or -EMSGSIZE.
 */
int proto_hdr_decode(const uint8_t in[SDFS_HDR_SIZE], uint32_t max_payload,
		     struct sdfs_hdr *h);

/* 0 if @payload matches h->payload_csum, else -EPROTO. */
int proto_payload_check(const struct sdfs_hdr *h, const void *payload);

/* A reply header for request @req with @res; payload fields zero. */
void proto_reply_init(struct sdfs_hdr *reply, const struct sdfs_hdr *req,
		      enum sdfs_res res);

/* -errno -> result, and back; unknown values map to IO / -EIO. */
enum sdfs_res proto_res_from_errno(int neg_errno);
int proto_res_to_errno(uint32_t res);
const char *proto_op_name(unsigned op);         /* "OBJ_READ", or "?" */

/* Fixed payload structs: host <-> wire. Decoders return -EPROTO on bad
 * lengths; obj_stat also checks path_len against the bytes present;
 * node_info accepts the 1.0 and 1.1..1.5 sizes too (recovery fields
 * then zero; avail_bytes total - used), ns_statfs the 1.5 size
 * (bytes_avail = bytes_free). */
void proto_obj_stat_encode(const struct sdfs_obj_stat *s, uint8_t *out);
int proto_obj_stat_decode(const uint8_t *in, size_t len, struct sdfs_obj_stat *s);
void proto_node_info_encode(const struct sdfs_node_info *ni, uint8_t *out);
int proto_node_info_decode(const uint8_t *in, size_t len, struct sdfs_node_info *ni);
/* SCRUB's reply (2.3): SDFS_SCRUB_INFO_SIZE bytes; decoding also takes
 * SDFS_SCRUB_INFO_V24_SIZE (without the strips' counts) and the first
 * daemons' SDFS_SCRUB_INFO_V23_SIZE (the fields after them 0). */
void proto_scrub_info_encode(const struct sdfs_scrub_info *si, uint8_t *out);
int proto_scrub_info_decode(const uint8_t *in, size_t len, struct sdfs_scrub_info *si);
/* OBJ_COPY (2.2): the SDFS_OBJ_COPY_SIZE bytes in front of the piece.
 * Decoding takes the whole payload (@len bytes) and checks it: known
 * flags, and the piece's bytes present (ZERO: none) and at most
 * @max_piece; 0, or -EPROTO. *@piece then points at them. */
void proto_obj_copy_encode(const struct sdfs_obj_copy *c, uint8_t *out);
int proto_obj_copy_decode(const uint8_t *in, size_t len, uint32_t max_piece,
			  struct sdfs_obj_copy *c, const uint8_t **piece);

/* sdfs_strip (2.4, ec): SDFS_STRIP_SIZE bytes at @in (more may follow:
 * the strip's bytes); decode: -EPROTO if short or flags set. */
void proto_strip_encode(const struct sdfs_strip *st, uint8_t *out);
int proto_strip_decode(const uint8_t *in, size_t len, struct sdfs_strip *st);


/* OBJ_LIST payloads: @n oids <-> le64 array of 8 * n bytes. */
void proto_oids_encode(const uint64_t *oids, size_t n, uint8_t *out);
void proto_oids_decode(const uint8_t *in, size_t n, uint64_t *oids);
/* OBJ_LIST with SDFS_F_EPOCHS: @n entries <-> 24 * n bytes. */
void proto_list_ent_encode(const struct sdfs_list_ent *ents, size_t n, uint8_t *out);
void proto_list_ent_decode(const uint8_t *in, size_t n, struct sdfs_list_ent *ents);

/* ---- namespace (1.2) ---- */
/* A namespace reply's outcome: 0 or -errno (SDFS_RES_ERRNO carries the
 * errno in hdr.length). */
int proto_ns_result(const struct sdfs_hdr *reply);
/* sdfs_ns_req: decode checks that name, name2, data and the caller's
 * groups (2.0, at most SDFS_NS_GROUPS_MAX) fill exactly the rest of
 * @len (they follow at SDFS_NS_REQ_SIZE), and fills r->groups;
 * -EPROTO if not. encode writes the fixed part at @out; the sender
 * puts the strings and data after it, then the groups with
 * proto_ns_groups_encode(@r, the payload's start). req_len: the whole
 * payload's length. */
void proto_ns_req_encode(const struct sdfs_ns_req *r, uint8_t *out);
int proto_ns_req_decode(const uint8_t *in, size_t len, struct sdfs_ns_req *r);
size_t proto_ns_req_len(const struct sdfs_ns_req *r);
void proto_ns_groups_encode(const struct sdfs_ns_req *r, uint8_t *payload);
void proto_attr_encode(const struct sdfs_attr *a, uint8_t *out);
int proto_attr_decode(const uint8_t *in, size_t len, struct sdfs_attr *a);
/* READDIR entries: size on the wire, encode (@attr NULL: not PLUS),
 * and decode (returns the bytes used, or -EPROTO; *@name points into
 * @in and is not NUL-terminated). */
size_t proto_dirent_size(size_t name_len, int plus);
size_t proto_dirent_encode(const struct sdfs_dirent *d, const char *name,
			   const struct sdfs_attr *attr, uint8_t *out);
ssize_t proto_dirent_decode(const uint8_t *in, size_t len, int plus,
			    struct sdfs_dirent *d, const char **name,
			    struct sdfs_attr *attr);
/* sdfs_note records: encode returns the bytes written (16 +
 * name_len); decode the bytes used, or -EPROTO (unknown kind, an entry
 * without a name or longer than SDFS_NAME_MAX, an inode or lock record
 * with one, bytes missing); *@iv's name points into @in. */
size_t proto_note_encode(const struct sdfs_note *iv, uint8_t *out);
ssize_t proto_note_decode(const uint8_t *in, size_t len, struct sdfs_note *iv);
/* A SETATTR's chunk report (sdfs_ns_chunks): SDFS_NS_CHUNKS_HDR + 8 * @n
 * bytes into @out. */
void proto_ns_chunks_encode(const uint64_t *chunks, uint32_t n, uint8_t *out);
void proto_ns_statfs_encode(const struct sdfs_ns_statfs *s, uint8_t *out);
int proto_ns_statfs_decode(const uint8_t *in, size_t len, struct sdfs_ns_statfs *s);
void proto_mds_info_encode(const struct sdfs_mds_info *m, uint8_t *out);
int proto_mds_info_decode(const uint8_t *in, size_t len, struct sdfs_mds_info *m);
/* Volumes (1.3). vol decode: -EPROTO unless @len is SDFS_NS_VOL_SIZE and
 * name_len <= SDFS_SNAP_NAME_MAX; the name comes out NUL-terminated. */
void proto_ns_vol_encode(const struct sdfs_ns_vol *v, uint8_t *out);
int proto_ns_vol_decode(const uint8_t *in, size_t len, struct sdfs_ns_vol *v);
void proto_ns_reclaim_encode(const struct sdfs_ns_reclaim *r, uint8_t *out);
int proto_ns_reclaim_decode(const uint8_t *in, size_t len, struct sdfs_ns_reclaim *r);
/* Locks (1.4). decode: -EPROTO unless @len is SDFS_NS_LOCK_SIZE, type
 * and kind are known and start <= end. */
void proto_ns_lock_encode(const struct sdfs_ns_lock *l, uint8_t *out);
int proto_ns_lock_decode(const uint8_t *in, size_t len, struct sdfs_ns_lock *l);
#endif
