/*
 * ns_objcap.c - NS_OBJCAP: object capabilities for the asking key
 * (common/objcap.h, docs/security.md "Object capabilities").
 *
 * A file: one cap for its inode, rights as asked if the caller may have
 * them. A vid: a cap for it (write only for a live state) and a read cap
 * for each ancestor its index may name (the parent chain: an index is
 * copied from its parent's and then names only its own vid besides).
 * Caps are signed with the cluster's cap key (ns_set_objcap); an mds
 * without it (an open cluster) answers with none, and block daemons
 * there ask for none.
 *
 * Grants are by owner (inode or vid), never by oid kind: which oids a
 * cap covers is common/objcap.c's objcap_of_oid, the one map from oid
 * kinds to caps, which block daemons and libsdfs both use. So an
 * owner's data is covered in whatever form it is stored — replicated
 * objects and the erasure-coded stripes of those oids alike (protocol
 * 2.4, docs/ec.md) — on the same basis: the rights the namespace gives
 * the key on the file (or the volume's file). See cap_owner_of_file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "common/log.h"
#include "common/objcap.h"
#include "common/proto.h"
#include "mds/ns_int.h"
#include "mds/perm.h"
#include "mds/vol.h"

#define OBJCAP_CHAIN_MAX 4096u  /* ancestors answered (a reply of 192 KiB) */

void ns_set_objcap(struct ns *ns, const uint8_t secret[AUTH_KEY_BYTES],
		   int lifetime_ms)
{
	objcap_key(secret, ns->objcap_key);
	ns->objcap_lifetime_ms = lifetime_ms > 0 ? lifetime_ms
						 : OBJCAP_LIFETIME_MS_DEFAULT;
	atomic_store(&ns->objcap_on, 1);
}

/*
 * May @who have @want on @in? The key's ro cap takes writing away. Then
 * the owner and root may (an owner can chmod itself the rights anyway,
 * and a file created 0444 is still written through the descriptor its
 * creator opened), others as the mode bits and the access ACL say
 * (nsacl_access, the check every namespace op makes). No key: the mds
 * itself or an open cluster.
 */
static int may(struct ns *ns, const struct ns_caller *who, const struct inode *in,
	       unsigned want)
{
	unsigned mask = 0;

	if (!who || !who->key)
		return 0;
	if ((want & OBJCAP_W) && (who->key->caps.flags & AUTH_CAP_RO))
		return -EROFS;
	if (auth_caps_privileged(&who->key->caps) || perm_is_owner(who, &in->a))
		return 0;
	if (want & OBJCAP_R)
		mask |= PERM_READ;
	if (want & OBJCAP_W)
		mask |= PERM_WRITE;
	return nsacl_access(ns, who, in, mask);
}

/* may(), but with @best a refused write leaves read (*@want cut). */
static int may_best(struct ns *ns, const struct ns_caller *who, const struct inode *in,
		    unsigned *want, int best)
{
	int ret = may(ns, who, in, *want);

	if (ret && best && *want == OBJCAP_RW && may(ns, who, in, OBJCAP_R) == 0) {
		*want = OBJCAP_R;
		return 0;
	}
	return ret;
}

/*
 * Is @a a file whose data a file cap covers (its inode the owner,
 * OBJCAP_FILE)? A regular file of objects: its chunks oid_file(ino, i)
 * of any copies (OID_KIND_FILE, OID_KIND_FILEC), whether a chunk is
 * stored replicated or as an erasure-coded stripe of the same oid. A
 * file layout whose data is erasure-coded under other oids of the
 * inode, when there is one, is added here (and its oid kind to
 * objcap_of_oid, mapped to OBJCAP_FILE). Volume data of any kind,
 * replicated or EC, is the volume's cap (vol_caps, owner the vid), the
 * kind mapped to OBJCAP_VOL in objcap_of_oid: nothing here changes.
 */
static int cap_owner_of_file(const struct sdfs_attr *a)
{
	return S_ISREG(a->mode) && a->layout == SDFS_LAYOUT_OBJECTS;
}

static void sign_one(struct ns *ns, const struct ns_caller *who, unsigned kind,
		     uint64_t owner, unsigned rights, int64_t expiry, uint8_t *out)
{
	struct objcap c = {
		.kind = (uint8_t)kind, .rights = (uint8_t)rights,
		.epoch = (uint32_t)ns->epoch, .owner = owner, .expiry_ms = expiry,
		.holder = objcap_holder(who && who->key ? who->key->name : ""),
	};

	objcap_sign(&c, ns->objcap_key, out);
}

static int file_caps(struct ns *ns, const struct ns_caller *who,
		     const struct sdfs_ns_req *r, unsigned want, int best, int64_t expiry,
		     struct ns_reply *rep)
{
	struct inode in;
	int ret = inode_get(ns, r->ino, &in);

	if (ret)
		return ret;
	if (!cap_owner_of_file(&in.a))
		return -EINVAL;
	ret = may_best(ns, who, &in, &want, best);
	if (ret)
		return ret;
	rep->data = malloc(OBJCAP_WIRE_SIZE);
	if (!rep->data)
		return -ENOMEM;
	sign_one(ns, who, OBJCAP_FILE, r->ino, want, expiry, rep->data);
	rep->len = OBJCAP_WIRE_SIZE;
	return 0;
}

static int vol_caps(struct ns *ns, const struct ns_caller *who, uint64_t vid,
		    unsigned want, int best, int64_t expiry, struct ns_reply *rep)
{
	struct vol_rec v;
	struct inode in;
	uint8_t *buf;
	size_t n = 0;
	int ret = vol_rec_get(ns, vid, &v);

	if (ret)
		return ret;
	if ((want & OBJCAP_W) && v.state != SDFS_VS_LIVE) {
		if (!best)
			return -EROFS;  /* frozen: nobody writes it again */
		want = OBJCAP_R;
	}
	/* a snapshot's file: the file it was taken of */
	ret = inode_get(ns, v.ino, &in);
	if (ret)
		return ret;
	ret = may_best(ns, who, &in, &want, best);
	if (ret)
		return ret;
	buf = malloc(OBJCAP_WIRE_SIZE * 16);
	if (!buf)
		return -ENOMEM;
	sign_one(ns, who, OBJCAP_VOL, vid, want, expiry, buf);
	n = 1;
	for (uint64_t p = v.parent; p && n < OBJCAP_CHAIN_MAX; p = v.parent) {
		if (vol_rec_get(ns, p, &v))
			break;  /* reclaimed: it owns nothing any index names */
		if ((n & (n - 1)) == 0 && n >= 16) {
			uint8_t *nb = realloc(buf, OBJCAP_WIRE_SIZE * n * 2);

			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		sign_one(ns, who, OBJCAP_VOL, p, OBJCAP_R, expiry,
			 buf + n * OBJCAP_WIRE_SIZE);
		n++;
	}
	rep->data = buf;
	rep->len = (uint32_t)(n * OBJCAP_WIRE_SIZE);
	return 0;
}

int op_objcap(struct ns *ns, const struct ns_caller *who, const struct sdfs_ns_req *r,
	      struct ns_reply *rep)
{
	unsigned want = r->max;
	int64_t expiry;
	int best;

	if ((want != OBJCAP_R && want != OBJCAP_RW) || r->name_len || r->name2_len ||
	    r->data_len || (r->flags & ~(SDFS_OBJCAP_VOL | SDFS_OBJCAP_BEST)))
		return -EINVAL;
	if (!atomic_load(&ns->objcap_on))
		return 0;       /* an open cluster: nothing to show */
	rep->hdr_length = (uint32_t)ns->objcap_lifetime_ms;
	expiry = objcap_now_ms() + ns->objcap_lifetime_ms;
	best = !!(r->flags & SDFS_OBJCAP_BEST);
	if (r->flags & SDFS_OBJCAP_VOL)
		return vol_caps(ns, who, r->arg, want, best, expiry, rep);
	return file_caps(ns, who, r, want, best, expiry, rep);
}

void ns_objcap_attach(struct ns *ns, const struct ns_caller *who, unsigned op,
		      struct ns_reply *rep)
{
	unsigned want = OBJCAP_RW;
	struct inode in = { 0 };
	uint8_t *nd;

	/* MKNOD's reply may go on with other inodes' attributes
	 * (SDFS_NS_WANT_ATTRS): the cap goes right after the file's */
	if ((op != SDFS_OP_NS_LOOKUP && op != SDFS_OP_NS_GETATTR &&
	     op != SDFS_OP_NS_MKNOD) || !atomic_load(&ns->objcap_on) ||
	    rep->len < SDFS_ATTR_SIZE || (rep->len - SDFS_ATTR_SIZE) % SDFS_ATTR_SIZE ||
	    proto_attr_decode(rep->data, rep->len, &in.a) ||
	    !cap_owner_of_file(&in.a) || may_best(ns, who, &in, &want, 1))
		return;
	nd = realloc(rep->data, rep->len + OBJCAP_WIRE_SIZE);
	if (!nd)
		return;         /* the client asks NS_OBJCAP later */
	rep->data = nd;
	memmove(nd + SDFS_ATTR_SIZE + OBJCAP_WIRE_SIZE, nd + SDFS_ATTR_SIZE,
		rep->len - SDFS_ATTR_SIZE);
	sign_one(ns, who, OBJCAP_FILE, in.a.ino, want,
		 objcap_now_ms() + ns->objcap_lifetime_ms, nd + SDFS_ATTR_SIZE);
	rep->len += OBJCAP_WIRE_SIZE;
}
