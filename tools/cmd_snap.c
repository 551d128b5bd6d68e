/*
 * cmd_snap.c - sdfs snap create|list|rollback|delete: snapshots of a
 * volume file (docs/volumes.md), metadata only, made by the mds.
 * Not here: reading a snapshot (sdfs vol export PATH@SNAP, vol_stream.c)
 * or cloning one (cmd_vol.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/vol_cli.h"

/* PATH (a volume file) and NAME (a snapshot of it) of a snap command. */
static int snap_target(struct sdfs *s, const char *what, const struct vol_args *a,
		       struct vol_target *t)
{
	char full[VOL_CLI_PATH_MAX + 32];
	int ret;

	/* One word: PATH@NAME. */
	if (a->npos == 1) {
		ret = vol_cli_target(s, what, a->pos[0], VOL_T_SNAP | VOL_T_VOLUME, t);
		if (!ret && !t->snap[0])
			ret = cli_fail("%s %s: name a snapshot: PATH NAME or PATH@NAME", what,
				       t->path);
		return ret;
	}
	ret = vol_cli_target(s, what, a->pos[0], VOL_T_VOLUME, t);
	if (ret)
		return ret;
	snprintf(full, sizeof(full), "%s %s", what, t->path);
	if (!vol_cli_snap_ok(full, a->pos[1]))
		return 2;
	snprintf(t->snap, sizeof(t->snap), "%s", a->pos[1]);
	return 0;
}

static void snap_json(const struct sdfs_vol_info *vi, int comma)
{
	char when[32];

	printf("%s{\"name\": ", comma ? ", " : "");
	cli_json_str(stdout, vi->name);
	printf(", \"vid\": %" PRIu64 ", \"parent\": %" PRIu64 ", \"size\": %" PRIu64
	       ", \"objects\": %" PRIu64 ", \"obj_size\": %" PRIu32 ", \"ctime_ns\": %"
	       PRId64 ", \"created\": \"%s\"}", vi->vid, vi->parent, vi->size, vi->objects,
	       vi->obj_size, vi->ctime_ns, cli_time(vi->ctime_ns, when, sizeof(when)));
}

static int snap_fail(struct sdfs *s, const char *what, const struct vol_target *t,
		     int err)
{
	if (err == -EEXIST)
		return cli_fail("%s %s: snapshot '%s' exists already", what, t->path, t->snap);
	if (err == -ENOSPC)
		return cli_fail("%s %s: no room for another snapshot (256 per file at most, "
				"or volume ids exhausted)", what, t->path);
	return vol_cli_fail(s, what, t, NULL, err);
}

static int snap_create(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	struct sdfs_vol_info vi;
	struct vol_target t;
	int ret = snap_target(s, "snap create", a, &t);

	if (ret)
		return ret;
	ret = sdfs_vol_snap_create(s, t.st.ino, t.snap, &vi);
	if (ret) {
		/* ENOENT here is the file (gone meanwhile), not the snapshot. */
		if (ret == -ENOENT)
			return vol_cli_fail(s, "snap create", NULL, t.path, ret);
		return snap_fail(s, "snap create", &t, ret);
	}
	if (cli->json) {
		snap_json(&vi, 0);
		printf("\n");
	}
	return 0;
}

static int snap_list(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	struct sdfs_vol_info *v;
	struct vol_target t;
	size_t n;
	int wn = 4, wv = 3, ws = 4, wo = 7, w;
	char size[32], when[32], num[32];
	int ret = vol_cli_target(s, "snap list", a->pos[0], VOL_T_VOLUME, &t);

	if (ret)
		return ret;
	ret = sdfs_vol_snap_list(s, t.st.ino, &v, &n);
	if (ret)
		return vol_cli_fail(s, "snap list", &t, NULL, ret);
	if (cli->json) {
		printf("[");
		for (size_t i = 0; i < n; i++)
			snap_json(&v[i], i > 0);
		printf("]\n");
		free(v);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		wn = (w = (int)strlen(v[i].name)) > wn ? w : wn;
		wv = (w = snprintf(num, sizeof(num), "%" PRIu64, v[i].vid)) > wv ? w : wv;
		ws = (w = (int)strlen(cli_human(v[i].size, size, sizeof(size)))) > ws ? w : ws;
		wo = (w = snprintf(num, sizeof(num), "%" PRIu64, v[i].objects)) > wo ? w : wo;
	}
	printf("%-*s  %*s  %*s  %*s  %s\n", wn, "NAME", wv, "VID", ws, "SIZE", wo, "OBJECTS",
	       "CREATED");
	for (size_t i = 0; i < n; i++)
		printf("%-*s  %*" PRIu64 "  %*s  %*" PRIu64 "  %s\n", wn, v[i].name, wv,
		       v[i].vid, ws, cli_human(v[i].size, size, sizeof(size)), wo,
		       v[i].objects, cli_time(v[i].ctime_ns, when, sizeof(when)));
	free(v);
	return 0;
}

static int snap_rollback(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	struct sdfs_vol_info vi;
	struct vol_target t;
	int ret = snap_target(s, "snap rollback", a, &t);

	if (ret)
		return ret;
	ret = sdfs_vol_rollback(s, t.st.ino, t.snap, &vi);
	if (ret)
		return snap_fail(s, "snap rollback", &t, ret);
	if (cli->json) {
		printf("{\"path\": ");
		cli_json_str(stdout, t.path);
		printf(", \"snapshot\": ");
		cli_json_str(stdout, t.snap);
		printf(", \"vid\": %" PRIu64 ", \"size\": %" PRIu64 "}\n", vi.vid, vi.size);
	}
	return 0;
}

static int snap_delete(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	struct vol_target t;
	int ret = snap_target(s, "snap delete", a, &t);

	(void)cli;
	if (ret)
		return ret;
	ret = sdfs_vol_snap_delete(s, t.st.ino, t.snap);
	return ret ? snap_fail(s, "snap delete", &t, ret) : 0;
}

static const struct vol_cmd snap_cmds[] = {
	{ "create", { NULL }, 2, 2, "sdfs snap create PATH NAME [--json]", snap_create },
	{ "list", { NULL }, 1, 1, "sdfs snap list PATH [--json]", snap_list },
	{ "rollback", { NULL }, 1, 2, "sdfs snap rollback PATH NAME  (or PATH@NAME)",
	  snap_rollback },
	{ "delete", { NULL }, 1, 2, "sdfs snap delete PATH NAME  (or PATH@NAME)",
	  snap_delete },
};

int cmd_snap(struct cli *cli)
{
	return vol_cli_run(cli, "snap", "sdfs snap create|list|rollback|delete ...",
			   snap_cmds, sizeof(snap_cmds) / sizeof(snap_cmds[0]));
}
