/*
 * caller.h - who a namespace request acts as (struct ns_caller, ns.h):
 * the connection's key and the ids the client claims, mapped through
 * the key's caps (docs/security.md "Capabilities").
 *
 * The ids a client claims are what its kernel says; the key's caps
 * decide what they count as: root_squash and all_squash turn them into
 * anonuid/anongid, uidmap/gidmap move ranges (auth_caps_uid/gid in
 * common/keys.h). Under all_squash the supplementary groups go too (as
 * nfsd does); otherwise each is mapped like the gid.
 * Not here: what a caller may do (mds/kcaps.h for the key's caps,
 * mds/perm for mode bits and ACLs). Pure: any thread.
 */
#ifndef SDFS_MDS_CALLER_H
#define SDFS_MDS_CALLER_H
#include <stdint.h>

#include "common/keys.h"
#include "mds/ns.h"

/*
 * Fill @who for a request on a connection authenticated as @key (NULL:
 * an open cluster, or the mds itself: the claimed ids pass unchanged)
 * from the claimed @uid, @gid and @n supplementary @groups (@groups may
 * be NULL when @n is 0; beyond NS_GROUPS_MAX they are cut off). @key is
 * borrowed for as long as @who is used (the connection's).
 */
void caller_make(const struct auth_ident *key, uint32_t uid, uint32_t gid,
		 const uint32_t *groups, uint32_t n, struct ns_caller *who);

/*
 * The id maps alone, without squash (owners the client names, e.g. a
 * chown's target): to the server's id (in) and back to the client's
 * (out, for the attributes it is shown). Ids no map covers pass
 * unchanged; @c NULL: unchanged.
 */
uint32_t caller_map_uid_in(const struct auth_caps *c, uint32_t uid);
uint32_t caller_map_gid_in(const struct auth_caps *c, uint32_t gid);
uint32_t caller_map_uid_out(const struct auth_caps *c, uint32_t uid);
uint32_t caller_map_gid_out(const struct auth_caps *c, uint32_t gid);
#endif
