/*
 * ns.h - the namespace: POSIX inodes, directories, symlinks and xattrs
 * kept in LevelDB (mds/objenv.h), one WriteBatch per operation.
 *
 * ns_exec runs one decoded NS_* request and is called from many server
 * threads at once: operations touching disjoint inodes run in parallel
 * and their sync writes share LevelDB's group commit; operations on the
 * same inode (or directory) are serialized by per-inode locks held
 * until their batch is durable. Mutations record their reply under
 * (client_id, seq) in the same batch (mds/replycache.c), so a retry is
 * answered with the first result.
 * Not here: sockets (mds/server.c), election and fencing (mds/main.c).
 */
#ifndef SDFS_MDS_NS_H
#define SDFS_MDS_NS_H
#include <stddef.h>
#include <stdint.h>

#include "common/keys.h"
#include "common/sdfs_proto.h"

struct ns;
struct sdfs;
struct coord;

/*
 * Open the database stored in @s's MDS objects (creating the root on
 * first use) as MDS epoch @epoch; the handle must already carry the
 * epoch as its fence token and the blockds must be fenced. @coord (a
 * ZooKeeper session, borrowed until ns_close) serves volume fences and
 * locks. Starts the background purge of unlinked files' data and the
 * volume reclaim, which first finishes snapshots left pending by a
 * crashed active. -errno with @err set.
 */
int ns_open(struct sdfs *s, struct coord *coord, uint64_t epoch, const char *name,
	    struct ns **out, char *err, size_t errlen);
void ns_close(struct ns *ns);           /* NULL ok */
/* Sign object capabilities (NS_OBJCAP) with the key derived from the
 * cluster @secret, valid @lifetime_ms (<= 0: the default); right after
 * ns_open. Without it (an open cluster) NS_OBJCAP answers no caps. */
void ns_set_objcap(struct ns *ns, const uint8_t secret[AUTH_KEY_BYTES],
		   int lifetime_ms);
/* Make acknowledged changes durable at least every @ms (commit.c; the
 * default, 1000, until this is called). */
void ns_set_sync_interval(struct ns *ns, int ms);
/* Look for deleted volume states to free at least every @ms (vol.h
 * vol_reclaim_interval; the default, 10000, until this is called). */
void ns_set_reclaim_interval(struct ns *ns, int ms);
/* Seal regular files of an ec=K+M policy not written for @secs (sdfs.conf
 * ec_seal_after_s; 0, the default until this is called: never). */
void ns_set_ec_seal_after(struct ns *ns, int secs);

struct ns_reply {
	uint8_t *data;                  /* malloc'd reply payload, or NULL */
	uint32_t len;
	uint32_t hdr_length;            /* hdr.length of the reply */
	int more;                       /* READDIR: entries remain */
};

/*
 * Who a request comes from (docs/security.md): the connection's key and
 * the ids the caller acts as, after the key's squash and maps
 * (auth_caps_uid/gid). The mds checks permissions against these, never
 * trusting the client's kernel. key NULL: the mds itself or an open
 * (unauthenticated) cluster's client, with full rights over the tree.
 */
#define NS_GROUPS_MAX 32u
struct ns_caller {
	const struct auth_ident *key;
	uint32_t uid, gid;
	uint32_t ngroups;               /* supplementary groups, mapped */
	uint32_t groups[NS_GROUPS_MAX];
};

/*
 * Execute @op for @who with @req and its strings (already checked by
 * proto_ns_req_decode: they fill the payload exactly; not
 * NUL-terminated). Returns 0 and fills @rep, or -errno (the POSIX error
 * for the client, or -EPERM / -EIO when the database failed: then
 * ns_failed() is set and the mds must step down).
 */
int ns_exec(struct ns *ns, const struct ns_caller *who, unsigned op,
	    const struct sdfs_ns_req *req, const char *name, const char *name2,
	    const uint8_t *data, struct ns_reply *rep);

/*
 * Right after ns_open, as the new active: read the longest cache time
 * the previous active's clients subscribed with, and hold mutations back
 * until that long after the previous active could last have answered
 * (at least @quiet_ms before now); start this term's record. 0 or -errno.
 */
int ns_handover(struct ns *ns, int64_t quiet_ms);
/* A client subscribes caching @cache_ms: record it durably if it is the
 * longest this term (before the subscription is answered). 0 or -errno. */
int ns_note_cache_ms(struct ns *ns, uint32_t cache_ms);

/* The leases of this term's clients (mds/lease.h): server.c hands it
 * their subscriptions. */
struct leases *ns_leases(struct ns *ns);

/* The database failed (fenced, or I/O): nothing more can be written. */
int ns_failed(struct ns *ns);
#endif
