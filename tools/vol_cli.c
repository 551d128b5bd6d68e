/*
 * vol_cli.c - see vol_cli.h.
 */
#include "tools/vol_cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "common/policy.h"
#include "common/volidx.h"

int vol_cli_snap_ok(const char *what, const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > VOL_CLI_SNAP_MAX || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789._-") != n) {
		cli_bad("%s: bad snapshot name '%s' (1 to %u of A-Z a-z 0-9 . _ -)",
			what, name, VOL_CLI_SNAP_MAX);
		return 0;
	}
	return 1;
}

int vol_cli_target(struct sdfs *s, const char *what, const char *arg,
		   unsigned flags, struct vol_target *t)
{
	const char *at = strrchr(arg, '@'), *slash = strrchr(arg, '/');
	int ret;

	memset(t, 0, sizeof(*t));
	t->arg = arg;
	if (!cli_path_ok(what, arg))
		return 2;
	if (strlen(arg) >= sizeof(t->path))
		return cli_fail("%s %s: %s", what, arg, strerror(ENAMETOOLONG));
	strcpy(t->path, arg);
	ret = sdfs_ns_resolve(s, arg, 1, &t->st);
	/* "vm.img@base": a snapshot, unless a file has that very name. */
	if (ret == -ENOENT && (flags & VOL_T_SNAP) && at && at > slash + 1) {
		char snapwhat[VOL_CLI_PATH_MAX + 64];

		snprintf(snapwhat, sizeof(snapwhat), "%s %s", what, arg);
		if (!vol_cli_snap_ok(snapwhat, at + 1))
			return 2;
		strcpy(t->snap, at + 1);
		t->path[at - arg] = '\0';
		ret = sdfs_ns_resolve(s, t->path, 1, &t->st);
	}
	if (ret)
		return vol_cli_fail(s, what, NULL, t->path, ret);
	if (S_ISDIR(t->st.mode))
		return cli_fail("%s %s: %s", what, t->path, strerror(EISDIR));
	if (!S_ISREG(t->st.mode))
		return cli_fail("%s %s: not a regular file", what, t->path);
	if ((flags & VOL_T_VOLUME) && t->st.layout != SDFS_LAYOUT_VOLUME)
		return vol_cli_fail(s, what, t, NULL, -EMEDIUMTYPE);
	return 0;
}

int vol_cli_open(struct sdfs *s, const struct vol_target *t, unsigned flags,
		 struct sdfs_vol **out)
{
	if (t->snap[0])
		return sdfs_vol_open_snap(s, t->st.ino, t->snap, out);
	return sdfs_vol_open(s, t->st.ino, flags, NULL, out);
}

int vol_cli_fail(struct sdfs *s, const char *what, const struct vol_target *t,
		 const char *arg, int err)
{
	const char *path = t ? t->path : arg;
	char full[VOL_CLI_PATH_MAX + 128];

	if (t && t->snap[0])
		snprintf(full, sizeof(full), "%s %s@%s", what, t->path, t->snap);
	else
		snprintf(full, sizeof(full), "%s %s", what, path);
	switch (err) {
	case -ENOENT:
		if (t && t->snap[0])
			return cli_fail("%s: no snapshot '%s' of %s", full, t->snap, t->path);
		break;
	case -EMEDIUMTYPE:
		return cli_fail("%s: not a volume file (sdfs vol convert %s makes it one)",
				full, path);
	case -EBUSY:
		return cli_fail("%s is open for writing elsewhere", path);
	case -EPERM:
		return cli_fail("%s: fenced: another writer took the volume", full);
	case -EROFS:
		return cli_fail("%s: read-only (a snapshot)", full);
	}
	return cli_ns_fail(s, full, err);
}

const char *vol_cli_state(unsigned state)
{
	switch (state) {
	case SDFS_VOL_LIVE: return "live";
	case SDFS_VOL_SNAP: return "snapshot";
	case SDFS_VOL_DELETED: return "deleted";
	case SDFS_VOL_PENDING: return "pending";
	default: return "unknown";
	}
}

unsigned vol_cli_copies(struct sdfs *s, unsigned copies)
{
	struct sdfs_cluster_info ci;

	if (copies || sdfs_cluster_info(s, &ci))
		return policy_copies(copies);
	return ci.copies;
}

int vol_cli_copies_arg(const char *v, unsigned *copies)
{
	uint64_t n;

	if (cli_parse_u64(v, &n) || n == 0 || n > VOL_CLI_COPIES_MAX)
		return cli_bad("--copies must be 1..%u, not '%s'", VOL_CLI_COPIES_MAX, v);
	*copies = (unsigned)n;
	return 0;
}

int vol_cli_obj_size_arg(const char *v, uint32_t *obj_size)
{
	uint64_t n;

	if (cli_parse_size(v, &n) || n < 4096 || n > (64u << 20) || (n & (n - 1)))
		return cli_bad("--obj-size must be a power of 2 from 4K to the cluster's "
			       "object size, not '%s'", v);
	*obj_size = (uint32_t)n;
	return 0;
}

int vol_cli_size_fits(struct sdfs *s, const char *what, const char *path,
		      uint64_t size, uint32_t obj_size)
{
	uint64_t max;
	char a[32], b[32], c[32];

	uint32_t cluster = sdfs_obj_size(s);

	if (!cluster)
		return 0;       /* not formatted: the call itself will say */
	if (obj_size > cluster)
		return cli_fail("%s %s: --obj-size %s is more than the cluster's object "
				"size (%s)", what, path, cli_human(obj_size, a, sizeof(a)),
				cli_human(cluster, b, sizeof(b)));
	if (!obj_size)
		obj_size = cluster;
	/* The index is one object: a header and 4 bytes per chunk. */
	max = VOLIDX_MAX_CHUNKS(obj_size) * obj_size;
	if (size <= max)
		return 0;
	return cli_fail("%s %s: %s is more than a volume of %s objects holds (%s)", what,
			path, cli_human(size, a, sizeof(a)), cli_human(obj_size, b, sizeof(b)),
			cli_human(max, c, sizeof(c)));
}

/* Options known to @c anywhere before "--"; "-" alone is an argument. */
static int parse(const struct vol_cmd *c, int argc, char **argv, struct vol_args *a)
{
	int opts = 1;

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < argc; i++) {
		const char *w = argv[i];
		int k = -1;

		if (opts && !strcmp(w, "--")) {
			opts = 0;
			continue;
		}
		if (opts && w[0] == '-' && w[1]) {
			for (int j = 0; c->opts[j] && k < 0; j++) {
				size_t n = strlen(c->opts[j]);
				char name[64];

				if (c->opts[j][n - 1] != '=') {
					if (!strcmp(w, c->opts[j])) {
						a->val[j] = "";
						k = j;
					}
					continue;
				}
				snprintf(name, sizeof(name), "%.*s", (int)n - 1, c->opts[j]);
				const char *v = cli_opt(argc, argv, &i, name);
				if (v) {
					a->val[j] = v;
					k = j;
				}
			}
			if (k < 0)
				return -1;
			continue;
		}
		if (a->npos == c->max)
			return -1;
		a->pos[a->npos++] = w;
	}
	return a->npos < c->min ? -1 : 0;
}

int vol_cli_run(struct cli *cli, const char *group, const char *group_usage,
		const struct vol_cmd *cmds, size_t n)
{
	const struct vol_cmd *c = NULL;
	struct vol_args a;
	struct sdfs *s;
	int ret;

	if (cli->argc < 1)
		return cli_usage(group_usage);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(cli->argv[0], cmds[i].name))
			c = &cmds[i];
	if (!c)
		return cli_unknown(group, cli->argv[0]);
	if (parse(c, cli->argc - 1, cli->argv + 1, &a))
		return cli_usage(c->usage);
	s = cli_open(cli);
	if (!s)
		return 1;
	ret = c->fn(cli, s, &a);
	sdfs_close(s);
	return ret;
}
