/*
 * caller_test.c - mds/caller.c: the ids a request acts as under each
 * kind of key cap (none, root_squash, all_squash, uid/gid maps), the
 * supplementary groups, and the maps back for replies.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "mds/caller.h"

static struct auth_ident key(uint32_t flags)
{
	struct auth_ident k;

	memset(&k, 0, sizeof(k));
	strcpy(k.name, "client.t");
	strcpy(k.caps.path, "/");
	k.caps.flags = flags;
	k.caps.anon_uid = AUTH_ANON_ID;
	k.caps.anon_gid = AUTH_ANON_ID;
	return k;
}

Test(caller, without_a_key_the_claimed_ids_pass)
{
	uint32_t g[] = { 0, 10, 20 };
	struct ns_caller who;

	caller_make(NULL, 0, 0, g, 3, &who);
	cr_assert_null(who.key);
	cr_assert_eq(who.uid, 0);
	cr_assert_eq(who.gid, 0);
	cr_assert_eq(who.ngroups, 3);
	cr_assert_eq(who.groups[2], 20);
}

Test(caller, a_plain_key_keeps_the_ids)
{
	struct auth_ident k = key(0);
	uint32_t g[] = { 0, 10 };
	struct ns_caller who;

	caller_make(&k, 0, 0, g, 2, &who);
	cr_assert_eq(who.key, &k);
	cr_assert_eq(who.uid, 0);
	cr_assert_eq(who.gid, 0);
	cr_assert_eq(who.ngroups, 2);
	cr_assert_eq(who.groups[0], 0);
}

Test(caller, root_squash_makes_root_anonymous_and_no_one_else)
{
	struct auth_ident k = key(AUTH_CAP_ROOT_SQUASH);
	uint32_t g[] = { 0, 10 };
	struct ns_caller who;

	k.caps.anon_uid = 65500;
	k.caps.anon_gid = 65501;
	caller_make(&k, 0, 0, g, 2, &who);
	cr_assert_eq(who.uid, 65500);
	cr_assert_eq(who.gid, 65501);
	cr_assert_eq(who.ngroups, 2);
	cr_assert_eq(who.groups[0], 65501, "group 0 squashed too");
	cr_assert_eq(who.groups[1], 10);
	caller_make(&k, 1000, 100, NULL, 0, &who);
	cr_assert_eq(who.uid, 1000);
	cr_assert_eq(who.gid, 100);
	cr_assert_eq(who.ngroups, 0);
}

Test(caller, all_squash_makes_everyone_anonymous_without_groups)
{
	struct auth_ident k = key(AUTH_CAP_ALL_SQUASH);
	uint32_t g[] = { 10, 20 };
	struct ns_caller who;

	caller_make(&k, 1000, 100, g, 2, &who);
	cr_assert_eq(who.uid, AUTH_ANON_ID);
	cr_assert_eq(who.gid, AUTH_ANON_ID);
	cr_assert_eq(who.ngroups, 0, "a squashed caller keeps no group rights");
}

Test(caller, maps_move_ranges_of_ids_and_back)
{
	struct auth_ident k = key(0);
	uint32_t g[] = { 50, 99 };
	struct ns_caller who;

	k.caps.nuidmap = 1;
	k.caps.uidmap[0] = (struct auth_idmap){ 1000, 5000, 10 };
	k.caps.ngidmap = 1;
	k.caps.gidmap[0] = (struct auth_idmap){ 50, 7050, 1 };
	caller_make(&k, 1005, 50, g, 2, &who);
	cr_assert_eq(who.uid, 5005);
	cr_assert_eq(who.gid, 7050);
	cr_assert_eq(who.groups[0], 7050);
	cr_assert_eq(who.groups[1], 99, "ids no map covers pass unchanged");
	caller_make(&k, 1010, 51, NULL, 0, &who);
	cr_assert_eq(who.uid, 1010, "the range ends at from + count - 1");
	cr_assert_eq(who.gid, 51);

	cr_assert_eq(caller_map_uid_in(&k.caps, 1009), 5009);
	cr_assert_eq(caller_map_uid_out(&k.caps, 5009), 1009);
	cr_assert_eq(caller_map_uid_out(&k.caps, 1009), 1009);
	cr_assert_eq(caller_map_gid_out(&k.caps, 7050), 50);
	cr_assert_eq(caller_map_gid_in(NULL, 7), 7);
}

Test(caller, too_many_groups_are_cut_off)
{
	struct auth_ident k = key(AUTH_CAP_ROOT_SQUASH);
	uint32_t g[NS_GROUPS_MAX + 8];
	struct ns_caller who;

	for (uint32_t i = 0; i < NS_GROUPS_MAX + 8; i++)
		g[i] = i;
	caller_make(&k, 1, 1, g, NS_GROUPS_MAX + 8, &who);
	cr_assert_eq(who.ngroups, NS_GROUPS_MAX);
	cr_assert_eq(who.groups[0], AUTH_ANON_ID);
	cr_assert_eq(who.groups[NS_GROUPS_MAX - 1], NS_GROUPS_MAX - 1);
}
