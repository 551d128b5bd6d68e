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
 *   1.2  metadata service: the header's reserved field becomes `token`
 *        (fencing), SDFS_F_SYNC, MDS_FENCE, SDFS_RES_FENCED, and the
 *        namespace ops (NS_*) spoken between libclient and sdfs-mds.
 *   1.3  volumes: VOL_FENCE, SDFS_RES_READONLY, volume kinds of oids
 *        (common/oid.h), the NS_VOL_* ops and sdfs_ns_vol /
 *        sdfs_ns_reclaim payloads, SDFS_LAYOUT_VOL.
 *   1.4  cluster-wide locks (docs/locks.md): NS_LOCK_SET, NS_LOCK_GET,
 *        NS_LOCK_UNLOCK, NS_LOCK_RELEASE and the sdfs_ns_lock payload.
 *   1.5  primary-ordered mutations of shared objects (common/oid.h
 *        oid_is_ordered): a client sends them to the object's primary
 *        only, which forwards them as the peer-only REPL_* ops; the
 *        reply's `length` counts the replicas that applied it. Pushed
 *        invalidations: NS_SUBSCRIBE, NS_NOTIFY and sdfs_note records;
 *        SDFS_ATTR_F_LEASED in sdfs_attr.flags (was reserved, 0).
 *   1.6  POSIX ACLs (docs/acl.md): the *XATTR ops take the names
 *        system.posix_acl_access and system.posix_acl_default (ACLs in
 *        the kernel's xattr form, checked by the mds); MKNOD and MKDIR
 *        may carry the creator's umask (SDFS_NS_UMASK) for the mds to
 *        apply where the directory has no default ACL; SETXATTR of an
 *        access ACL may say SDFS_NS_XATTR_KILL_SGID.
 *   1.7  space (docs/mount.md "Space"): sdfs_node_info.avail_bytes (136
 *        bytes, sent to requests of minor >= 7 only; 128 to older ones),
 *        sdfs_ns_statfs.bytes_avail (48 bytes, sent only when the
 *        request has SDFS_NS_STATFS_AVAIL; 40 otherwise), a SETATTR's
 *        data may carry an sdfs_ns_chunks report (an older mds ignores
 *        it), and sdfs_attr.blocks of a regular file counts its data
 *        objects, not its size.
 *   1.8  open files the mds keeps (docs/mds.md "Strays"): NS_OPEN (a
 *        client holds inodes open, and lets them go), sdfs_mds_info.strays
 *        (128 bytes); SDFS_NS_RENAME_HIDE is no longer sent by clients.
 *   1.9  space states (docs/operations.md "Space"): sdfs_node_info's
 *        reserved field becomes `space` (SDFS_SPACE_*: near full, full,
 *        a write hit ENOSPC; 0 from older nodes); a full node answers
 *        writes of file, raw and volume data with SDFS_RES_NO_SPACE.
 *   2.0  the mds enforces permissions (docs/mds.md "Permissions"): every
 *        sdfs_ns_req carries its caller's ids (cuid, cgid, ngroups; 104
 *        bytes) and ngroups (<= SDFS_NS_GROUPS_MAX) le32 supplementary
 *        groups after its data; SETATTR's SDFS_SET_FH (a truncate through
 *        an open file: no write permission needed, as ftruncate);
 *        GETATTR's SDFS_NS_MAY_MASK (an open's access check).
 *        Authentication (docs/protocol.md "Authentication", common/auth.h):
 *        every connection starts with AUTH_HELLO / AUTH_PROOF (mutual,
 *        a keyed MAC over both nonces), unless the cluster was formatted
 *        with auth none; then every frame, both directions, carries a
 *        16-byte tag after its payload (not counted in payload_len):
 *        AES-256-GCM (GMAC) or ChaCha20-Poly1305, offered in AUTH_HELLO
 *        and picked by the server (auth.h); a tagged frame's payload_csum
 *        is 0 and not checked (the tag covers the payload).
 *        SDFS_RES_AUTH refuses an unauthenticated or failed peer. A 1.x
 *        peer gets SDFS_RES_BAD_VERSION; a 1.x answer to a 2.0 peer reads
 *        as "peer speaks protocol 1.x". Minor-version rules of 1.x (sizes
 *        of node_info, statfs, mds_info) no longer apply: 2.0 sends the
 *        1.9 sizes.
 *        Object capabilities (common/objcap.h, docs/security.md): an
 *        object request may carry SDFS_F_CAP, its payload then begins
 *        with a signed cap (OBJCAP_WIRE_SIZE bytes); block daemons refuse
 *        unprivileged keys' object ops without a valid one with
 *        SDFS_RES_CAP; NS_OBJCAP asks the mds for caps.
 *   2.1  NS_SYNC (every acknowledged change durable). SDFS_NS_WANT_ATTRS
 *        on MKNOD, MKDIR, SYMLINK, LINK, UNLINK, RMDIR, RENAME: the reply
 *        ends with the new attributes of the other inodes the change
 *        wrote (the directories, a removed, replaced or moved inode),
 *        leased like a GETATTR's (mount.sdfs answers the kernel's
 *        GETATTR of the parent from them). An older mds ignores the flag
 *        (RENAME: EINVAL; the client then sends it again without).
 *        SDFS_NS_HOLD on MKNOD: the new file is held open (NS_OPEN) from
 *        the create on, SDFS_ATTR_F_HELD says so. SDFS_NS_DURABLE on
 *        SETATTR: the reply waits for an NS_SYNC's durability.
 *   2.2  OBJ_COPY (a volume's copy-on-write made by the block daemons
 *        next to the data, docs/volumes.md "Copy-on-write"): the
 *        payload starts with an sdfs_obj_copy. A 2.1 daemon answers
 *        UNKNOWN_OP; the client then copies the chunk itself.
 *   2.3  SCRUB (docs/scrub.md): a block daemon's background scrub,
 *        asked about (any key) or started and paused (admin and daemon
 *        keys; others get SDFS_RES_CAP); the reply is an
 *        sdfs_scrub_info. A 2.2 daemon answers UNKNOWN_OP. A raw
 *        OBJ_STAT with length SDFS_STAT_CSUM fills csum (0 from 2.2).
 *        The mtime write-back (docs/consistency.md "What fsync
 *        guarantees"): NS_OPEN's SDFS_NS_OPEN_WRITEBACK (the holder may
 *        keep the file's mtime behind its data until it lets the file
 *        go; the mds first ends the other clients' leases on it), and
 *        SDFS_ATTR_F_WRITEBACK on a GETATTR's attributes when another
 *        client does. A 2.2 mds answers the flag with EINVAL; the client
 *        then pushes the mtime at every fsync, as before.
 *   2.4  (ec) erasure-coded strips (docs/ec.md): STRIP_PUT, STRIP_GET,
 *        STRIP_STAT, STRIP_COMMIT and the sdfs_strip payload (its flag
 *        SDFS_STRIP_TOMB: a removal's tombstone, whose commit drops
 *        every older version of the object; NODE_INFO's ec_degraded and
 *        ec_unavail, 152 bytes to a 2.4 peer, 136 to older); a strip is
 *        stored under (oid, strip number, version), apart from the
 *        replicated objects. A 2.3 daemon answers UNKNOWN_OP.
 *        Also: SDFS_NOTE_F_ATIME in NS_NOTIFY's inode records (an older
 *        mds sends 0, an older client ignores it) and SETATTR's
 *        SDFS_SET_COPIES, a directory's policy (an older mds: EINVAL).
 *        OBJ_COPY makes DST a *backed* object (blockd/backing.h): the
 *        piece's blocks only, the rest read through SRC until the
 *        daemon fills it; request and reply unchanged. OBJ_FILL (offset
 *        = a vid; admin and daemon keys): fill now every object on the
 *        node backed by one of that vid's, before they are freed. A 2.3
 *        daemon answers UNKNOWN_OP (it has none).
 *   2.5  (ec volumes) the 16-bit copies of an inode (attributes), a
 *        volume record (sdfs_vol_info) and SETATTR SDFS_SET_COPIES /
 *        NS_VOL_CREATE's flags may carry an erasure code (common/
 *        policy.h: k in bits 8..12, m in 13..15, copies m + 1); layouts
 *        unchanged. An older mds refuses such a field (EINVAL). Index
 *        entries of an EC volume may carry VOLIDX_SEALED (common/
 *        volidx.h): a chunk stored as EC object oid_vstripe; clients
 *        before 2.5 must not write or read EC volumes.
 *   2.6  (ec files) a regular file's copies may carry POLICY_SEALED
 *        (bit 4, common/policy.h): its chunks are EC objects
 *        oid_fstripe (kind 0x41); NS_OPEN SDFS_NS_OPEN_UNSEAL before a
 *        holder's first write to an ec=K+M file. Clients before 2.6 must
 *        not read or write files under an ec=K+M directory.
 *        OBJ_COPY's SDFS_COPY_STRIPE: DST made backed by an EC stripe
 *        (an EC volume's write into a sealed chunk, docs/ec.md "Backed
 *        unseal"); a 2.5 daemon answers INVALID (the client then
 *        unseals the chunk itself). OBJ_FILL of a vid also fills the
 *        objects backed by that vid's stripes.
 *        STRIP_REPAIR (sdfs_strip: s, version, tag; W cap for a client
 *        key): a reader that found this node's strip failing its
 *        checksums (CSUM) asks it to rebuild that strip in place
 *        (read-repair, docs/ec.md); answered once queued. A 2.5 daemon
 *        answers UNKNOWN_OP (the reader ignores it).
 */
#ifndef SDFS_COMMON_SDFS_PROTO_H
#define SDFS_COMMON_SDFS_PROTO_H
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define SDFS_PROTO_MAGIC 0x53464453u    /* the bytes "SDFS" read as a LE uint32 */
#define SDFS_PROTO_MAJOR 2              /* bump = incompatible */
#define SDFS_PROTO_MINOR 6              /* bump = additions only */

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
	SDFS_OP_OBJ_COPY    = 0x09,     /* 2.2: sdfs_obj_copy */
	SDFS_OP_NODE_INFO   = 0x10,
	SDFS_OP_MDS_FENCE   = 0x11,     /* 1.2 */
	SDFS_OP_VOL_FENCE   = 0x12,     /* 1.3 */
	SDFS_OP_SCRUB       = 0x13,     /* 2.3: offset = SDFS_SCRUB_*,
					   length = start's rate in KiB/s
					   (0: the daemon's own) */
	/* 2.4 (ec): strips of erasure-coded objects (docs/ec.md); payload
	 * an sdfs_strip first. Admin and daemon keys only for now. */
	SDFS_OP_STRIP_PUT    = 0x1c,    /* sdfs_strip, strip_len bytes -> - */
	SDFS_OP_STRIP_GET    = 0x1d,    /* offset, length; sdfs_strip -> bytes */
	SDFS_OP_STRIP_STAT   = 0x1e,    /* - -> sdfs_strip[] held of oid */
	SDFS_OP_STRIP_COMMIT = 0x1f,    /* sdfs_strip -> -: drop s's older versions */
	SDFS_OP_STRIP_REPAIR = 0x1b,    /* 2.6: sdfs_strip -> -: rebuild s in place */
	SDFS_OP_OBJ_FILL    = 0x14,     /* 2.4: offset = a vid; fill every
					   object here backed by one of its
					   (docs/volumes.md "Copy-on-write") */
	/* 1.2: namespace, client -> sdfs-mds (payload: sdfs_ns_req) */
	SDFS_OP_NS_LOOKUP   = 0x20,
	SDFS_OP_NS_GETATTR  = 0x21,
	SDFS_OP_NS_SETATTR  = 0x22,
	SDFS_OP_NS_MKNOD    = 0x23,     /* regular files too (create) */
	SDFS_OP_NS_MKDIR    = 0x24,
	SDFS_OP_NS_UNLINK   = 0x25,
	SDFS_OP_NS_RMDIR    = 0x26,
	SDFS_OP_NS_RENAME   = 0x27,
	SDFS_OP_NS_LINK     = 0x28,
	SDFS_OP_NS_SYMLINK  = 0x29,
	SDFS_OP_NS_READLINK = 0x2a,
	SDFS_OP_NS_READDIR  = 0x2b,
	SDFS_OP_NS_STATFS   = 0x2c,
	SDFS_OP_NS_GETXATTR = 0x2d,
	SDFS_OP_NS_SETXATTR = 0x2e,
	SDFS_OP_NS_LISTXATTR = 0x2f,
	SDFS_OP_NS_RMXATTR  = 0x30,
	SDFS_OP_NS_INFO     = 0x31,     /* the mds itself: sdfs_mds_info */
	/* 1.3: volumes (docs/volumes.md), client -> sdfs-mds */
	SDFS_OP_NS_VOL_CREATE   = 0x32,
	SDFS_OP_NS_VOL_INFO     = 0x33,
	SDFS_OP_NS_VOL_SNAP     = 0x34,
	SDFS_OP_NS_VOL_SNAPLIST = 0x35,
	SDFS_OP_NS_VOL_SNAPDEL  = 0x36,
	SDFS_OP_NS_VOL_ROLLBACK = 0x37,
	SDFS_OP_NS_VOL_CLONE    = 0x38,
	SDFS_OP_NS_VOL_TREE     = 0x39,
	SDFS_OP_NS_VOL_RECLAIM  = 0x3a,
	/* 1.4: locks (docs/locks.md), client -> sdfs-mds; data = sdfs_ns_lock */
	SDFS_OP_NS_LOCK_SET     = 0x3b,
	SDFS_OP_NS_LOCK_GET     = 0x3c,
	SDFS_OP_NS_LOCK_UNLOCK  = 0x3d,
	SDFS_OP_NS_LOCK_RELEASE = 0x3e,
	/* 1.5: pushed invalidations (docs/consistency.md) */
	SDFS_OP_NS_SUBSCRIBE    = 0x3f,
	SDFS_OP_NS_NOTIFY       = 0x40,
	/* 1.8: open files kept past their last name (docs/mds.md) */
	SDFS_OP_NS_OPEN         = 0x41,
	/* 2.0: the handshake, any client -> any daemon, untagged (auth.h) */
	SDFS_OP_AUTH_HELLO      = 0x50, /* nonce_c[32], offer, key name ->
					   nonce_s[32], alg */
	SDFS_OP_AUTH_PROOF      = 0x51, /* proof[32] -> proof[32], caps text */
	/* 2.0: object capabilities (common/objcap.h) */
	SDFS_OP_NS_OBJCAP       = 0x42,
	/* 2.1: make every namespace change acknowledged so far durable
	 * (power-loss safe): fsync, fsyncdir; empty -> empty */
	SDFS_OP_NS_SYNC         = 0x43,
	/* 1.5: peer-only, primary -> every up holder (itself included):
	 * apply this mutation of a shared object, as ordered by the primary.
	 * Same header and payload as the client op they carry (0x80 | op). */
	SDFS_OP_REPL_WRITE   = 0x82,
	SDFS_OP_REPL_CREATE  = 0x83,
	SDFS_OP_REPL_REMOVE  = 0x84,
	SDFS_OP_REPL_REPLACE = 0x88,
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
#define SDFS_F_SYNC      0x80u   /* WRITE, REPLACE, REMOVE: durable (fdatasync)
				    before the reply (1.2) */
#define SDFS_F_CAP       0x10u   /* object requests (READ, WRITE, CREATE,
				    REMOVE, REPLACE, STAT, FLUSH): the payload
				    begins with an object capability,
				    OBJCAP_WIRE_SIZE bytes, not part of the
				    data (2.0; MORE is a reply flag) */

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
	SDFS_RES_FENCED      = 16, /* EPERM: the mutation's token is older than
				      the fence (a deposed writer) (1.2) */
	/* 1.2: namespace results: the errno itself travels in hdr.length */
	SDFS_RES_ERRNO       = 17,
	SDFS_RES_READONLY    = 18, /* EROFS: the volume object's vid is frozen
				      (a snapshot was taken, or it was deleted):
				      reload the volume and retry (1.3) */
	SDFS_RES_AUTH        = 19, /* EACCES: authentication required or failed;
				      the payload says why (one line), and
				      the connection closes (2.0) */
	SDFS_RES_CAP         = 20, /* EKEYREJECTED: an object op of a key that is
				      not admin or daemon without a valid
				      object capability for it (none, forged,
				      expired, another key's, another object's,
				      too few rights): get one (NS_OBJCAP) and
				      retry; libclient then says EACCES (2.0) */
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
	uint64_t payload_csum;  /* XXH3-64 of the payload; 0 when payload_len
				   is 0, and on a tagged connection (2.0) */
	uint32_t token;         /* 1.2: fencing token of a mutation (the MDS
				   epoch for MDS-database objects); 0 = none.
				   Sent as 0 and ignored by 1.0/1.1 peers */
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
 * A mutation of an MDS-database object (common/oid.h), or of a file-data
 * object carrying a nonzero token (the mds truncating or freeing data),
 * whose token is below the node's MDS fence gets SDFS_RES_FENCED (1.2).
 *   MDS_FENCE   hdr(offset = MDS epoch)       -> hdr(offset = the node's fence)
 *               raises the node's fence to offset (never lowers it),
 *               durably, before replying.
 *   VOL_FENCE   hdr(oid = vid, offset = token) -> hdr(offset = the node's
 *               fence for vid), raised to token (never lowered) once no
 *               mutation of that vid with an older token is in progress
 *               (1.3). A mutation of a volume object (oid_is_vol) whose
 *               token is below its vid's fence gets SDFS_RES_FENCED; one
 *               of a frozen vid (fence SDFS_TOKEN_FROZEN) gets
 *               SDFS_RES_READONLY unless its token is SDFS_TOKEN_FROZEN
 *               itself (the mds copying an index, reclaim removing).
 *               A mutation whose request carries result SDFS_RES_READONLY
 *               (otherwise 0 in requests) finishes a write some replicas
 *               took before its vid froze: it passes a frozen vid if its
 *               token is at least the fence the vid had before freezing,
 *               as this node saw it in a VOL_FENCE round.
 *               Until a node has loaded every vid's fence from ZooKeeper
 *               after a (re)connection, volume mutations get
 *               SDFS_RES_SHUTDOWN (retry).
 *
 * Namespace ops (1.2), client -> active sdfs-mds:
 *   NS_*        hdr(op), sdfs_ns_req, name[name_len], name2[name2_len],
 *               data[data_len], groups[ngroups] (2.0: le32 each)
 *            -> hdr(result), reply payload; a failure is result
 *               SDFS_RES_ERRNO with the positive errno in hdr.length.
 *   Replies: LOOKUP GETATTR SETATTR MKNOD MKDIR LINK SYMLINK -> sdfs_attr;
 *   UNLINK RMDIR RENAME SETXATTR RMXATTR -> nothing; READLINK -> target;
 *   READDIR -> entries (sdfs_dirent + name, padded to 8; + sdfs_attr with
 *   SDFS_NS_PLUS), hdr.flags MORE if entries remain; STATFS ->
 *   sdfs_ns_statfs; GETXATTR -> value; LISTXATTR -> NUL-terminated
 *   names (with max 0: nothing, the size in hdr.length); INFO ->
 *   sdfs_mds_info.
 * Names are 1..255 bytes without '/' or NUL; "." and ".." are refused
 * where a new name is made.
 *
 * NS_OBJCAP (2.0): object capabilities for the asking key
 * (docs/security.md "Object capabilities"):
 *   sdfs_ns_req(flags = SDFS_OBJCAP_VOL or 0 [| SDFS_OBJCAP_BEST], ino = a regular file's
 *   inode / arg = a vid, max = OBJCAP_R or OBJCAP_RW wanted)
 *   -> caps, OBJCAP_WIRE_SIZE bytes each: a file: one; a vid: its own
 *   (write only if it is a live state) then one read cap per ancestor
 *   whose objects its index may name. hdr.length = the lifetime in ms.
 *   An open cluster's mds (no secret) answers with no caps. Errors:
 *   EACCES / EROFS (the namespace or the key refuses the rights),
 *   ENOENT, EINVAL (not a regular file of objects, not a volume).
 */
#define SDFS_OBJCAP_VOL    0x1u         /* NS_OBJCAP: arg is a vid */
/* LOOKUP, GETATTR, MKNOD (2.0): a regular file of objects is answered
 * with its object capability (as NS_OBJCAP with BEST and RW would give
 * it) after the sdfs_attr: SDFS_ATTR_SIZE + OBJCAP_WIRE_SIZE bytes. No
 * cap (caps off, no right to read): the attr alone. */
#define SDFS_NS_WANT_CAP   0x80000000u
/* MKNOD, MKDIR, SYMLINK, LINK, UNLINK, RMDIR, RENAME (2.1): after the
 * reply's body as without the flag (the new inode's sdfs_attr, then its
 * cap, for the creating ops and LINK; nothing for the others) come the
 * attributes, after the change, of the other inodes it wrote: each
 * directory it changed, then the inode a name went from or moved
 * (UNLINK, RMDIR: the removed one, nlink 0 when it was the last; RENAME:
 * the moved inode, and the replaced or exchanged one), as sdfs_attrs
 * (SDFS_ATTR_F_LEASED when the mds leased them to the client before the
 * change), at most SDFS_NS_ATTRS_MAX. The client tells the body from
 * them by its length (SDFS_ATTR_SIZE, + OBJCAP_WIRE_SIZE with a cap). */
#define SDFS_NS_WANT_ATTRS 0x20000000u
#define SDFS_NS_ATTRS_MAX  4u
/* MKNOD of a regular file (2.1): arg is the client's lock identity, as
 * NS_OPEN's: the mds holds the new file open for it from the create on
 * (as an NS_OPEN would, before the reply) and says so with
 * SDFS_ATTR_F_HELD in the reply's attr. One request instead of two per
 * create; an older mds ignores the flag (no HELD: send NS_OPEN). */
#define SDFS_NS_HOLD       0x10000000u
/* SETATTR (2.1): reply only once this change, and every change
 * acknowledged before it, is durable, as after an NS_SYNC: fsync's
 * push of a file's size and mtime, one request instead of two. A
 * sync that fails answers EIO; the change itself stands (NS_SYNC
 * again). Not one of the setattr mask bits; an mds from before it
 * answers EINVAL (libsdfs then sends SETATTR and NS_SYNC). */
#define SDFS_NS_DURABLE    0x08000000u
#define SDFS_OBJCAP_BEST   0x2u         /* NS_OBJCAP: the most of max the
					   caller may have (at least read),
					   not EACCES / EROFS for the rest */

/*
 * OBJ_COPY (2.2): make volume data object DST (hdr.oid) a copy of SRC
 * with one piece applied, each replica from its own verified copy of
 * SRC: hdr(oid = DST, offset = the piece's offset in the object, token
 * = the writer's), payload = sdfs_obj_copy, then the piece's `len`
 * bytes (none with SDFS_COPY_ZERO: zeros). DST becomes SRC's bytes
 * with the piece over them, size max(SRC's size, offset + len), as an
 * OBJ_REPLACE of them would make it (the next version; fenced,
 * refused when full). Both must be volume data objects of one chunk
 * and number of copies, of different vids; SRC is an ancestor's
 * (frozen). A replica that holds no current or good copy of SRC reads
 * it from SRC's other holders. -> hdr. Errors: NO_OBJ (no holder has
 * SRC: the client copies it itself, and learns why), INVALID (a bad
 * pair or piece), and those of OBJ_REPLACE. A client mutation like
 * the others, to every up replica of DST; not for keys that need
 * object capabilities (they get SDFS_RES_CAP: the client copies).
 */
struct sdfs_obj_copy {
	uint64_t src;           /* the object copied */
	uint32_t len;           /* the piece's bytes */
	uint32_t flags;         /* SDFS_COPY_ZERO, SDFS_COPY_STRIPE */
};
#define SDFS_OBJ_COPY_SIZE 16u
#define SDFS_COPY_ZERO 0x1u     /* the piece is zeros; no bytes follow */
/* 2.6: src is a stripe (oid_vstripe of the same chunk, any vid, its
 * code k in flags bits 8..15 and m in bits 16..23, DST's copies m + 1):
 * an EC volume's sealed chunk made replicated again for a write
 * (docs/ec.md "Backed unseal"). A 2.5 daemon answers INVALID. */
#define SDFS_COPY_STRIPE 0x2u
#define SDFS_COPY_K(f) (((f) >> 8) & 0xffu)
#define SDFS_COPY_M(f) (((f) >> 16) & 0xffu)
#define SDFS_COPY_CODE(k, m) ((uint32_t)(k) << 8 | (uint32_t)(m) << 16)

/*
 * 2.4 (ec): one strip version of an erasure-coded object (docs/ec.md,
 * "Strips on the wire"), 32 bytes: le64 version, le64 tag (the put's
 * random stripe id: strips of one version with different tags are of
 * different writes, never mixed), le64 obj_size (the object's bytes),
 * le32 strip_len (bytes of every strip of the stripe, a multiple of
 * 4096), u8 k, u8 m, u8 s (this strip's number, 0..k+m-1), u8 flags
 * (SDFS_STRIP_TOMB or 0). STRIP_STAT's reply is one per strip version
 * held. A tombstone (SDFS_STRIP_TOMB, obj_size and strip_len 0, no
 * bytes) is the version a removal writes: the object is gone as of it.
 */
struct sdfs_strip {
	uint64_t version, tag, obj_size;
	uint32_t strip_len;
	uint8_t k, m, s, flags;
};
#define SDFS_STRIP_SIZE 32u
#define SDFS_STRIP_TOMB 0x1u  /* 2.4 (ec): a removal's version, no bytes */

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
/* length of a raw OBJ_STAT (2.3): fill csum too (the node reads the
 * copy's block table; without it a raw STAT reads the header only and
 * csum is 0, as from an older node) */
#define SDFS_STAT_CSUM 1u
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
	uint32_t space;         /* 1.9: SDFS_SPACE_* (was reserved, 0) */
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
	/* 1.7: what the store's filesystem lets the daemon still write
	 * (statvfs f_bavail: without the blocks kept for root), less
	 * nothing else: blockd keeps no reserve of its own */
	uint64_t avail_bytes;
	/* 2.4 (ec): erasure-coded stripes as of the node's last strip
	 * recovery pass (docs/ec.md), each counted by one node: its leader */
	uint64_t ec_degraded;   /* newest version short of a strip on a
				   position (down, or not rebuilt yet) */
	uint64_t ec_unavail;    /* no version with k strips on the up holders */
};
/* sdfs_node_info.space: its data filesystem's state, judged by the node
 * against its nearfull_pct / full_pct (docs/config.md) */
#define SDFS_SPACE_NEARFULL 0x1u /* above nearfull_pct used */
#define SDFS_SPACE_FULL     0x2u /* above full_pct used, or less free than
				    one object: data writes are refused */
#define SDFS_SPACE_ENOSPC   0x4u /* a write failed with ENOSPC and no
				    object's worth of space came back since */
/* SCRUB (2.3): what hdr.offset asks for */
#define SDFS_SCRUB_STATUS 0u    /* just the sdfs_scrub_info */
#define SDFS_SCRUB_START  1u    /* start a pass now, or resume a paused one */
#define SDFS_SCRUB_STOP   2u    /* pause the running pass (START resumes) */
/* sdfs_scrub_info.state */
#define SDFS_SCRUB_IDLE    0u
#define SDFS_SCRUB_RUNNING 1u
#define SDFS_SCRUB_PAUSED  2u
/* SCRUB reply payload (2.3), SDFS_SCRUB_INFO_SIZE bytes: the pass now
 * running or paused, else the last one, and totals kept in the data
 * dir's scrub_state since it was made. Times: unix ms, 0 = never. */
struct sdfs_scrub_info {
	uint32_t node_id;
	uint32_t state;         /* SDFS_SCRUB_IDLE, _RUNNING, _PAUSED */
	uint64_t cursor;        /* the pass has checked every oid <= this */
	uint64_t objects;       /* this pass: objects verified */
	uint64_t bytes;         /* ... their bytes */
	uint64_t found;         /* ... copies found corrupt here */
	uint64_t repaired;      /* ... rewritten from a good copy */
	uint64_t unrepaired;    /* ... left: no good current copy reachable */
	uint64_t total_found, total_repaired, total_unrepaired;
	uint64_t passes;        /* complete passes */
	uint64_t pass_start_ms; /* this (or the last) pass began */
	uint64_t pass_end_ms;   /* the last complete pass ended */
	uint64_t next_start_ms; /* the schedule starts the next then (0: never) */
	uint64_t rate;          /* bytes/s the pass reads at most */
	uint64_t interval_s;    /* the schedule: a pass at least this often */
	uint64_t store_objects; /* objects (and tombstones) in the store now */
	/* this pass: other holders' copies of the same version compared
	 * with this node's, and this node's copies that differed from the
	 * right one (stale, or the odd one of a version; docs/scrub.md) */
	uint64_t compared, mismatched;
	uint64_t total_mismatched;
	/* (184-byte form) of the differing copies, those replaced; when the
	 * last complete pass began (every object stored then was verified
	 * after it, unless written since), unix ms */
	uint64_t refreshed, total_refreshed;
	uint64_t last_start_ms;
	/* (248-byte form, sent when the request's oid has
	 * SDFS_SCRUB_WANT_STRIPS) strip files of EC objects (docs/scrub.md
	 * "Strips"): this pass's verified, their bytes, found corrupt,
	 * rebuilt in place, left; totals since the state file was made */
	uint64_t strips, strip_bytes, strips_found, strips_repaired, strips_unrepaired;
	uint64_t total_strips_found, total_strips_repaired, total_strips_unrepaired;
};
#define SDFS_SCRUB_INFO_SIZE 248u
#define SDFS_SCRUB_INFO_V24_SIZE 184u   /* without the strips' eight */
#define SDFS_SCRUB_INFO_V23_SIZE 160u   /* ... and without the three before */
/* SCRUB request's oid: the client takes the 248-byte reply (a daemon
 * before it ignores the oid and sends 184 bytes; a client before it
 * sends 0 and gets the 184 it takes) */
#define SDFS_SCRUB_WANT_STRIPS 1u

#define SDFS_NODE_INFO_V10_SIZE 56u
#define SDFS_NODE_INFO_V11_SIZE 128u    /* 1.1 .. 1.6 */
#define SDFS_NODE_INFO_V17_SIZE 136u    /* 1.7 .. 2.3 */

/* ---- namespace (1.2) ---- */
#define SDFS_NAME_MAX      255u
#define SDFS_SYMLINK_MAX   4095u
#define SDFS_XATTR_NAME_MAX 255u
#define SDFS_XATTR_SIZE_MAX 65536u
#define SDFS_ROOT_INO      1u

#define SDFS_NS_GROUPS_MAX 32u         /* 2.0: a caller's groups sent */

struct sdfs_ns_req {
	uint64_t client_id;     /* random per client handle, nonzero */
	uint64_t seq;           /* per client, increasing; (client_id, seq)
				   keys the reply cache: a retry reuses it */
	uint64_t ino;           /* the inode, or the parent directory */
	uint64_t ino2;          /* RENAME: new parent; LINK: new parent */
	uint64_t arg;           /* SETATTR: size; READDIR: cookie */
	int64_t atime_ns;       /* SETATTR: ns since 1970 */
	int64_t mtime_ns;
	uint32_t mode;          /* MKNOD/MKDIR: type and permissions (umask
				   applied by the caller, or given in flags:
				   SDFS_NS_UMASK); SETATTR: mode */
	uint32_t uid, gid;      /* creates: the owner; SETATTR: new owner */
	uint32_t rdev;          /* MKNOD: device */
	uint32_t flags;         /* SETATTR: SDFS_SET_*; RENAME: RENAME_*;
				   SETXATTR: XATTR_CREATE/REPLACE (and
				   SDFS_NS_XATTR_KILL_SGID); READDIR:
				   SDFS_NS_PLUS; MKNOD/MKDIR: SDFS_NS_UMASK */
	uint32_t max;           /* READDIR/GETXATTR/LISTXATTR: reply bytes
				   wanted */
	uint16_t name_len;      /* the name (xattr name for *XATTR) */
	uint16_t name2_len;     /* RENAME: the new name; LINK: the new name */
	uint32_t data_len;      /* SYMLINK: target; SETXATTR: value */
	/* 2.0: who asks (the mds checks permissions against them; a key's
	 * squash and maps apply first) */
	uint32_t cuid, cgid;    /* the caller's fsuid, fsgid */
	uint32_t ngroups;       /* supplementary groups, after the data */
	uint32_t reserved;
	/* not in the fixed part: ngroups le32 after data[data_len] */
	uint32_t groups[SDFS_NS_GROUPS_MAX];
};
#define SDFS_NS_REQ_SIZE 104u           /* the fixed part; 88 before 2.0 */

/* SETATTR mask */
#define SDFS_SET_MODE      0x01u
#define SDFS_SET_UID       0x02u
#define SDFS_SET_GID       0x04u
#define SDFS_SET_SIZE      0x08u
#define SDFS_SET_ATIME     0x10u
#define SDFS_SET_MTIME     0x20u
#define SDFS_SET_ATIME_NOW 0x40u
#define SDFS_SET_MTIME_NOW 0x80u
#define SDFS_SET_CTIME     0x100u
#define SDFS_SET_EXTEND    0x200u /* with SIZE: only if it grows the file (a
				    client's pushed size; never frees data) (1.3) */
#define SDFS_SET_FH        0x400u /* with SIZE: through a file the caller
				    opened for writing (ftruncate): write
				    permission is not checked again (2.0) */
#define SDFS_SET_COPIES    0x800u /* alone, on a directory, root only: the
				    copies (`max`, 0..15; 0 the cluster's)
				    of the files, volumes and directories
				    made in it from now on (2.4) */
#define SDFS_NS_PLUS       0x1u  /* READDIR: each entry with its sdfs_attr */
/* GETATTR (2.0): flags & 7 is the access (4 read, 2 write, 1 execute)
 * the caller is about to make, as an open does: -EACCES unless it may */
#define SDFS_NS_MAY_MASK   0x7u
/* MKNOD/MKDIR: flags & 0777 is the creator's umask; the mds applies it
 * to the mode unless the directory has a default ACL, which is
 * inherited instead (1.6). Without it the mode is used as sent. */
#define SDFS_NS_UMASK      0x1000u
/* SETXATTR of system.posix_acl_access: the setter is not in the file's
 * group (and not privileged): the setgid bit goes (1.6). */
#define SDFS_NS_XATTR_KILL_SGID 0x100u
/* RENAME (1.2-1.7 clients; 1.8 clients use NS_OPEN instead): a replaced
 * non-directory with one link is not dropped but moved to
 * SDFS_HIDDEN_FMT (its ino) in the new directory: the client holds it
 * open and removes that name at its last close. */
#define SDFS_NS_RENAME_HIDE 0x40000000u
#define SDFS_HIDDEN_FMT    ".sdfs-hidden-%016llx"

/* Where a regular file's data lives. */
enum sdfs_layout_kind {
	SDFS_LAYOUT_NONE   = 0,         /* not a regular file */
	SDFS_LAYOUT_OBJECTS = 1,        /* chunk i = oid_file(ino, i) */
	SDFS_LAYOUT_VOL = 2,            /* a volume file: data in a volume
					   (NS_VOL_INFO, common/volidx.h) (1.3) */
};

/* ---- volumes (1.3, docs/volumes.md) ---- */
#define SDFS_TOKEN_FROZEN   0xffffffffu /* vid fence: no writer ever again */
#define SDFS_VID_MAX        0xfffffffeull /* vids are 1..VID_MAX (index entries are 32-bit) */
#define SDFS_SNAP_NAME_MAX  64u         /* bytes; [A-Za-z0-9._-], not "." / ".." */
#define SDFS_VOL_SNAPS_MAX  256u        /* snapshots of one volume file */

enum sdfs_vol_state {
	SDFS_VS_LIVE    = 1,   /* the writable state of a volume file */
	SDFS_VS_SNAP    = 2,   /* a snapshot: frozen, readable */
	SDFS_VS_DELETED = 3,   /* frozen, waiting for reclaim */
	SDFS_VS_PENDING = 4,   /* being made (a snapshot, clone or rollback
				   that has not committed yet) */
};

/*
 * NS_VOL_* requests (sdfs_ns_req fields):
 *   VOL_CREATE   ino = dir, name, mode, uid, gid, arg = size, flags =
 *                copies (0: the cluster's), max = object size (0: the
 *                cluster's)                    -> sdfs_attr (layout VOLUME)
 *   VOL_INFO     ino = volume file, [name = snapshot] -> sdfs_ns_vol
 *                (no name: the live state)
 *   VOL_SNAP     ino, name                     -> sdfs_ns_vol (the snapshot)
 *   VOL_SNAPLIST ino                           -> sdfs_ns_vol[] by age
 *   VOL_SNAPDEL  ino, name                     -> nothing
 *   VOL_ROLLBACK ino, name                     -> sdfs_ns_vol (the new live
 *                state); EBUSY while a writer holds the volume's lock
 *   VOL_CLONE    ino, name = snapshot, ino2 = new dir, name2 = new name,
 *                mode, uid, gid                -> sdfs_attr of the new file
 *   VOL_TREE     ino                           -> sdfs_ns_vol[] of the family
 *   VOL_RECLAIM  (nothing)                     -> sdfs_ns_reclaim
 * Errors: ENOENT (no such file or snapshot), EMEDIUMTYPE (not a volume
 * file), EEXIST (snapshot name taken), EINVAL (bad name or size),
 * ENOSPC (too many snapshots, vids exhausted).
 */
struct sdfs_ns_vol {
	uint64_t vid;           /* this state's volume id */
	uint64_t family;        /* vid of the family's first volume */
	uint64_t parent;        /* vid whose index it was copied from; 0: none */
	uint64_t ino;           /* the volume file it belongs to (a snapshot:
				   the file it was taken of) */
	uint64_t size;          /* bytes (a snapshot: when it was taken) */
	uint64_t objects;       /* data objects it owns (VOL_TREE/SNAPLIST;
				   else 0) */
	int64_t ctime_ns;       /* when it was made */
	uint32_t obj_size;
	uint16_t copies;        /* 0: the cluster's */
	uint16_t state;         /* enum sdfs_vol_state (= SDFS_VOL_* of sdfs.h) */
	uint32_t token;         /* LIVE: the vid's fence (the writer's token) */
	uint32_t name_len;
	char name[SDFS_SNAP_NAME_MAX + 1]; /* SNAP: its name, NUL-terminated
				   (on the wire: 64 bytes, zero-padded) */
};
#define SDFS_NS_VOL_SIZE 136u   /* on the wire */

struct sdfs_ns_reclaim {
	uint64_t vids_pending;  /* deleted states whose data is not all freed */
	uint64_t objects_pending; /* their objects no one references (to free) */
	uint64_t bytes_pending;   /* ... as bytes (objects x object size) */
	uint64_t objects_freed; /* freed since this mds became active */
	uint64_t bytes_freed;
	uint64_t sweeps;        /* family sweeps since this mds became active */
};
#define SDFS_NS_RECLAIM_SIZE 48u

/* ---- locks (1.4, docs/locks.md) ----
 * NS_LOCK_* requests: sdfs_ns_req with ino = the file, data = one
 * sdfs_ns_lock (data_len = SDFS_NS_LOCK_SIZE), nothing else.
 *   LOCK_SET     take or change a lock (type RD/WR; POSIX: a byte range,
 *                split and merged with the owner's others; FLOCK: the
 *                whole file). Never waits: EAGAIN on a conflict; with
 *                SDFS_LOCK_WAIT the caller will retry (a blocking wait):
 *                the mds records it as a waiter and answers EDEADLK when
 *                waiting would close a cycle of POSIX owners. With type
 *                UN and SDFS_LOCK_CANCEL: that wait ended without the
 *                lock (interrupted); the owner is no waiter any more and
 *                no lock changes (an older mds answers EINVAL).  -> nothing
 *   LOCK_GET     POSIX: the first lock conflicting with the one
 *                described.  -> sdfs_ns_lock (type UN: none; pid 0 unless
 *                the holder is the asking client)
 *   LOCK_UNLOCK  POSIX: unlock the range; FLOCK: drop the owner's lock.
 *                -> nothing
 *   LOCK_RELEASE every lock of (client, owner) of that kind on the file
 *                (close: POSIX at flush, FLOCK at release). -> nothing
 * client is the locker's identity (its ZooKeeper node clients/<id>):
 * the mds drops every lock of a client whose node is gone. */
enum sdfs_lock_type { SDFS_LOCK_UN = 0, SDFS_LOCK_RD = 1, SDFS_LOCK_WR = 2 };

/*
 * Pushed invalidations (1.5, docs/consistency.md):
 *   NS_SUBSCRIBE  client -> mds, on a connection of its own:
 *                 sdfs_ns_req(client_id: the handle's, as in its other
 *                 requests; arg: how long it caches what it is told, in
 *                 ms)  -> hdr. From then on the connection carries
 *                 notifications, mds -> client:
 *   NS_NOTIFY     hdr(req_id = a number increasing per subscription),
 *                 sdfs_note records filling the payload; the client
 *                 answers each with hdr(SDFS_F_REPLY, same req_id) once it
 *                 dropped what they name. The mds acknowledges the change
 *                 that made them stale only after that answer (or once
 *                 the client's cache time since it last got that state
 *                 has passed).
 * A record on the wire: u8 kind, u8 flags, le16 name_len, le32 0, le64 ino,
 * then name_len bytes of name (SDFS_NOTE_ENTRY only). flags (2.4; 0 from
 * an older mds, ignored by an older client): SDFS_NOTE_F_ATIME.
 */
enum sdfs_note_kind {
	SDFS_NOTE_INODE = 1,   /* the attributes of inode `ino` */
	SDFS_NOTE_ENTRY = 2,   /* the name `name` in directory `ino`, whether
				   cached as present or as missing */
	SDFS_NOTE_LOCK = 3,    /* locks on inode `ino` were dropped or changed:
				   a blocking lock request of this client there
				   retries now (a wake-up: nothing is cached, and
				   the mds does not wait for the answer) */
};
/* SDFS_NOTE_INODE: the change moved the inode's atime alone (a read's
 * update): its data, size, chunks, ctime and names are as they were. */
#define SDFS_NOTE_F_ATIME 0x1u
struct sdfs_note {
	uint8_t kind;
	uint8_t flags;          /* SDFS_NOTE_F_* */
	uint16_t name_len;
	uint64_t ino;
	const char *name;       /* name_len bytes, not NUL-terminated */
};
#define SDFS_NOTE_HDR_SIZE 16u
enum sdfs_lock_kind { SDFS_LOCK_POSIX = 1, SDFS_LOCK_FLOCK = 2 };
#define SDFS_LOCK_WAIT  0x1u            /* LOCK_SET: part of a blocking wait */
#define SDFS_LOCK_CANCEL 0x2u           /* LOCK_SET, type UN: the wait ended */
#define SDFS_LOCK_EOF   UINT64_MAX      /* end of a range "to the end of file" */
struct sdfs_ns_lock {
	uint64_t client;        /* locker identity, nonzero */
	uint64_t owner;         /* POSIX: the lock owner (FUSE lock_owner);
				   FLOCK: the open file's owner */
	uint64_t start, end;    /* inclusive; end SDFS_LOCK_EOF: to EOF */
	uint32_t pid;           /* the locking process (GETLK answers) */
	uint8_t type;           /* enum sdfs_lock_type */
	uint8_t kind;           /* enum sdfs_lock_kind */
	uint16_t flags;         /* SDFS_LOCK_WAIT, SDFS_LOCK_CANCEL */
};
#define SDFS_NS_LOCK_SIZE 40u

/*
 * NS_OPEN (1.8): which inodes a client holds open, so that a file whose
 * last name goes stays (a stray, nlink 0) until no client holds it:
 *   sdfs_ns_req(arg = the client's identity: its ZooKeeper node
 *   clients/<id>, as for locks; ino = an inode, or 0; flags; data = more
 *   inodes, le64 each: data_len a multiple of 8, at most
 *   SDFS_NS_OPEN_MAX of them)  -> nothing
 * Without flags: hold ino and the listed inodes. SDFS_NS_OPEN_CLOSE: let
 * them go. SDFS_NS_OPEN_CLAIM: also "this completes the set I hold"
 * (sent after each (re)subscription, in batches whose last carries the
 * flag): a new active purges no stray until every client listed in
 * ZooKeeper claimed, or its node went, or a bound passed. Idempotent;
 * not in the reply cache. The mds forgets the holds of a client whose
 * node is gone. Errors: EINVAL (arg 0, bad data_len, names given).
 * SDFS_NS_OPEN_WRITEBACK (2.3, not with CLOSE): hold them and mark the
 * holds "this client's mtime of the file may lag its data" until they
 * are let go (it fsyncs without pushing the mtime each time); before the
 * reply, the other clients' leases on the inodes end (as a change's do),
 * and from then on their GETATTRs say SDFS_ATTR_F_WRITEBACK, so that an
 * open elsewhere does not keep pages it cached before.
 */
#define SDFS_NS_OPEN_CLOSE 0x1u
#define SDFS_NS_OPEN_CLAIM 0x2u
#define SDFS_NS_OPEN_WRITEBACK 0x4u
/* 2.6, alone (ino set, no data): before its first write to a regular
 * file of an ec=K+M policy, a client that holds it open asks the mds to
 * make it replicated if it is sealed (docs/ec.md "EC files"); the reply
 * comes once the file's stripes are gone. An older mds: EINVAL. */
#define SDFS_NS_OPEN_UNSEAL 0x8u
#define SDFS_NS_OPEN_MAX   8192u

struct sdfs_attr {
	uint64_t ino;
	uint64_t gen;           /* with ino, unique forever */
	uint64_t size;
	uint64_t blocks;        /* 512-byte units of space the data takes
				   (1.6, regular files: data objects, not
				   size; docs/mount.md "Space") */
	int64_t atime_ns, mtime_ns, ctime_ns;
	uint64_t parent;        /* directories: the parent (root: itself) */
	uint32_t mode, nlink, uid, gid, rdev;
	uint32_t flags;         /* SDFS_ATTR_F_*; stored as 0 */
	uint32_t obj_size;      /* layout: bytes per data object */
	uint16_t copies;        /* layout: replicas (0: the cluster's) */
	uint16_t layout;        /* enum sdfs_layout_kind */
};
#define SDFS_ATTR_SIZE 96u
/* 1.5, in replies of GETATTR, LOOKUP and READDIR(PLUS) only: the mds
 * recorded a lease on this inode for the asking client before it read
 * it (docs/consistency.md), so a change to it will be pushed to that
 * client (or wait for the lease to end) before it is acknowledged. */
#define SDFS_ATTR_F_LEASED 0x1u
/* 2.1, on a directory's attributes in a reply with SDFS_NS_WANT_ATTRS
 * (the directory a change made or wrote): the mds also leased the
 * client the directory's names, as a READDIRPLUS does, so a name another
 * client adds or removes there is pushed to it first (mount.sdfs then
 * answers lookups of names it knows are missing itself). */
#define SDFS_ATTR_F_LISTING 0x2u
/* 2.1, on the attr of a MKNOD with SDFS_NS_HOLD: the file is held open. */
#define SDFS_ATTR_F_HELD 0x4u
/* 2.3, on a GETATTR's attributes: another client holds the file with
 * SDFS_NS_OPEN_WRITEBACK (or, after a takeover, the holds are not all
 * claimed yet): its data may be newer than its mtime says. */
#define SDFS_ATTR_F_WRITEBACK 0x8u

/* READDIR entry: then name[name_len], zero padding to 8, then with
 * SDFS_NS_PLUS an sdfs_attr. */
struct sdfs_dirent {
	uint64_t ino;
	uint64_t cookie;        /* pass as arg to continue after this entry */
	uint32_t type;          /* S_IFMT bits of the mode */
	uint32_t name_len;
};
#define SDFS_DIRENT_SIZE 24u

struct sdfs_ns_statfs {
	uint64_t bytes_total, bytes_free;       /* usable, after replication */
	uint64_t files, files_free;
	uint32_t bsize, name_max;
	/* 1.7, only with SDFS_NS_STATFS_AVAIL in the request's flags: what
	 * unprivileged writers can use (the data filesystems' f_bavail
	 * summed, / copies); decoded from a 40-byte reply as bytes_free */
	uint64_t bytes_avail;
};
#define SDFS_NS_STATFS_SIZE 48u
#define SDFS_NS_STATFS_SIZE_1_6 40u
#define SDFS_NS_STATFS_AVAIL 0x1u       /* STATFS request flag (1.7) */

/*
 * A SETATTR's data (1.7): the data objects (chunks) of a regular file
 * the client made or removed since its last report, so the mds can
 * count the file's space (sdfs_attr.blocks). le32 magic
 * SDFS_NS_CHUNKS_MAGIC, le32 count, then count le64 entries: a chunk
 * index, with SDFS_NS_CHUNK_GONE set when that chunk's object was
 * removed (a punched hole). A SETATTR from a writer without it (an
 * older client pushing a size or mtime) makes the mds stop counting
 * that file: its blocks go back to size / 512.
 */
#define SDFS_NS_CHUNKS_MAGIC 0x4b4e4843u /* "CHNK" as a LE uint32 */
#define SDFS_NS_CHUNKS_HDR 8u
#define SDFS_NS_CHUNKS_MAX 8192u         /* entries in one report */
#define SDFS_NS_CHUNK_GONE (1ull << 63)

struct sdfs_mds_info {
	uint64_t epoch;         /* the MDS epoch this active serves */
	uint64_t db_bytes;      /* LevelDB files, total */
	uint64_t db_files;
	uint64_t inodes;
	uint64_t ops;           /* served since it became active */
	uint64_t active_ms;     /* unix ms when it became active */
	char name[32];          /* "mds.0", NUL-padded */
	/* 1.5: pushed invalidations (mds/lease.h); a 1.4 mds sends the 80
	 * bytes above only, read as zeros */
	uint64_t subs;          /* clients subscribed */
	uint64_t leases;        /* leases held now */
	uint64_t pushes;        /* notifications sent for changes */
	uint64_t push_timeouts; /* ...that ended by the lease, not an answer */
	uint64_t wakes;         /* lock wake-ups sent (SDFS_NOTE_LOCK) */
	/* 1.8 (a 1.5 to 1.7 mds sends the 120 bytes above, read as zeros) */
	uint64_t strays;        /* inodes without a name kept because a
				   client holds them open */
	/* 2.6 (a 1.8 to 2.5 mds sends the 128 bytes above, read as zeros):
	 * EC files (docs/ec.md "EC files") since it became active */
	uint64_t ec_seals;      /* files sealed into stripes */
	uint64_t ec_unseals;    /* sealed files made replicated again */
	uint64_t ec_sealed_bytes;
};
#define SDFS_MDS_INFO_SIZE 152u
#define SDFS_MDS_INFO_SIZE_1_8 128u
#define SDFS_MDS_INFO_SIZE_1_5 120u
#define SDFS_MDS_INFO_SIZE_1_4 80u
static_assert(sizeof(struct sdfs_node_info) == 152, "node_info is 152 bytes");
static_assert(sizeof(struct sdfs_scrub_info) == SDFS_SCRUB_INFO_SIZE, "scrub_info size");
#endif
