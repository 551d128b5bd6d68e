/*
 * caller.c - a request's caller from its connection's key and the
 * client's claimed ids (caller.h).
 */
#include <string.h>

#include "mds/caller.h"

void caller_make(const struct auth_ident *key, uint32_t uid, uint32_t gid,
		 const uint32_t *groups, uint32_t n, struct ns_caller *who)
{
	memset(who, 0, sizeof(*who));
	who->key = key;
	if (n > NS_GROUPS_MAX)
		n = NS_GROUPS_MAX;
	if (!key) {
		who->uid = uid;
		who->gid = gid;
		for (uint32_t i = 0; i < n; i++)
			who->groups[i] = groups[i];
		who->ngroups = n;
		return;
	}
	who->uid = auth_caps_uid(&key->caps, uid);
	who->gid = auth_caps_gid(&key->caps, gid);
	/* nfsd drops the groups of an all_squash export: a squashed
	 * caller must not keep the rights its groups carry */
	if (key->caps.flags & AUTH_CAP_ALL_SQUASH)
		return;
	for (uint32_t i = 0; i < n; i++)
		who->groups[i] = auth_caps_gid(&key->caps, groups[i]);
	who->ngroups = n;
}

static uint32_t map_in(const struct auth_idmap *m, uint32_t nm, uint32_t id)
{
	for (uint32_t i = 0; i < nm && i < AUTH_MAP_MAX; i++)
		if (id >= m[i].from && id - m[i].from < m[i].count)
			return m[i].to + (id - m[i].from);
	return id;
}

static uint32_t map_out(const struct auth_idmap *m, uint32_t nm, uint32_t id)
{
	for (uint32_t i = 0; i < nm && i < AUTH_MAP_MAX; i++)
		if (id >= m[i].to && id - m[i].to < m[i].count)
			return m[i].from + (id - m[i].to);
	return id;
}

uint32_t caller_map_uid_in(const struct auth_caps *c, uint32_t uid)
{
	return c ? map_in(c->uidmap, c->nuidmap, uid) : uid;
}

uint32_t caller_map_gid_in(const struct auth_caps *c, uint32_t gid)
{
	return c ? map_in(c->gidmap, c->ngidmap, gid) : gid;
}

uint32_t caller_map_uid_out(const struct auth_caps *c, uint32_t uid)
{
	return c ? map_out(c->uidmap, c->nuidmap, uid) : uid;
}

uint32_t caller_map_gid_out(const struct auth_caps *c, uint32_t gid)
{
	return c ? map_out(c->gidmap, c->ngidmap, gid) : gid;
}
