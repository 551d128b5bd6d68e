/*
 * ns_int.h - helpers of libclient/ns.c shared with libclient/vol_ns.c
 * (not installed). Same threading as every libsdfs call: any thread.
 */
#ifndef SDFS_LIBCLIENT_NS_INT_H
#define SDFS_LIBCLIENT_NS_INT_H
#include <stdint.h>

#include "common/sdfs_proto.h"
#include "libclient/sdfs.h"

void ns_stat_from_attr(struct sdfs_stat *st, const struct sdfs_attr *a);
/* strlen(@name) (NULL: 0) into *@len; -ENAMETOOLONG past SDFS_NAME_MAX. */
int ns_name_len(const char *name, uint16_t *len);
/* A namespace call whose reply payload @dec decodes into @out (NULL:
 * the reply is ignored); -EPROTO if it cannot. 0 or -errno. */
typedef int (*ns_decode_fn)(const uint8_t *in, uint32_t len, void *out);
int ns_call_one(struct sdfs *s, unsigned op, struct sdfs_ns_req *req,
		const char *name, const char *name2, const void *data,
		ns_decode_fn dec, void *out);
/* A namespace call whose reply is an sdfs_attr, decoded into @st (NULL:
 * the reply is ignored). 0 or -errno. */
int ns_call_attr(struct sdfs *s, unsigned op, struct sdfs_ns_req *req,
		 const char *name, const char *name2, const void *data,
		 struct sdfs_stat *st);
/* MKNOD of a regular file with SDFS_NS_HOLD for lock identity @id
 * (hold.c's sdfs_ns_create): SDFS_STAT_HELD in @st if the mds held it. */
int ns_mknod_held(struct sdfs *s, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, uint64_t id, struct sdfs_stat *st);
#endif
