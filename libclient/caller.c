/*
 * caller.c - the caller's ids per thread (sdfs.h sdfs_set_caller,
 * caller.h). A thread-local: mount.sdfs serves each FUSE request on
 * some thread of its pool and sets the request's ids there before it
 * calls in.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "libclient/caller.h"
#include "libclient/sdfs.h"

struct caller {
	int set;
	uint32_t uid, gid, n;
	uint32_t groups[SDFS_NS_GROUPS_MAX];
};

static __thread struct caller cur;

void sdfs_set_caller(uint32_t uid, uint32_t gid, const uint32_t *groups, size_t n)
{
	if (n > SDFS_NS_GROUPS_MAX)
		n = SDFS_NS_GROUPS_MAX;
	cur.uid = uid;
	cur.gid = gid;
	cur.n = (uint32_t)n;
	if (n)
		memcpy(cur.groups, groups, n * sizeof(*groups));
	cur.set = 1;
}

void sdfs_clear_caller(void)
{
	cur.set = 0;
}

int sdfs_get_caller(uint32_t *uid, uint32_t *gid, uint32_t *groups, size_t *n)
{
	if (!cur.set)
		return 0;
	*uid = cur.uid;
	*gid = cur.gid;
	*n = cur.n < SDFS_CALLER_GROUPS_MAX ? cur.n : SDFS_CALLER_GROUPS_MAX;
	memcpy(groups, cur.groups, *n * sizeof(*groups));
	return 1;
}

void caller_fill(struct sdfs_ns_req *r)
{
	gid_t g[SDFS_NS_GROUPS_MAX];
	int n;

	if (cur.set) {
		r->cuid = cur.uid;
		r->cgid = cur.gid;
		r->ngroups = cur.n;
		memcpy(r->groups, cur.groups, cur.n * sizeof(cur.groups[0]));
		return;
	}
	/* the process's own: a cheap syscall each, and current after a
	 * setgroups */
	r->cuid = (uint32_t)geteuid();
	r->cgid = (uint32_t)getegid();
	n = getgroups(SDFS_NS_GROUPS_MAX, g);
	if (n < 0) {    /* more than fit: the first ones */
		int all = getgroups(0, NULL);
		gid_t *a = all > 0 ? malloc((size_t)all * sizeof(*a)) : NULL;

		n = a ? getgroups(all, a) : -1;
		if (n > (int)SDFS_NS_GROUPS_MAX)
			n = SDFS_NS_GROUPS_MAX;
		for (int i = 0; i < n; i++)
			g[i] = a[i];
		free(a);
		if (n < 0)
			n = 0;
	}
	r->ngroups = (uint32_t)n;
	for (int i = 0; i < n; i++)
		r->groups[i] = (uint32_t)g[i];
}
