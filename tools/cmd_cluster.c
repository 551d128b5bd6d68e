/*
 * cmd_cluster.c - sdfs cluster format|status|wait-healthy.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/coord_auth.h"
#include "tools/cli.h"
#include "tools/keyadm.h"

/*
 * Who may format. A cluster not formatted yet: anyone who reaches its
 * ZooKeeper (the keyring file must not exist then, unless --force: it
 * gets the new admin key). A formatted one (with --force): if it has
 * keys (formatted with auth required), only the holder of its admin
 * keyring, and the cluster keeps its secret and keys (*@keep); one
 * formatted with --auth none: anyone. 0, or the exit status with the
 * reason printed.
 */
static int format_allowed(struct keyadm *ka, const struct cluster_config *cfg,
			  int formatted, int force, int auth, int *keep)
{
	struct stat st;
	int have = ka->path[0] && stat(ka->path, &st) == 0;

	*keep = 0;
	if (formatted && cfg->auth == CMAP_AUTH_REQUIRED) {
		if (!ka->loaded)
			return cli_fail("format: needs the cluster's admin keyring (%s)",
					ka->path[0] ? ka->path : "set keyring = in the "
					"config, or --keyring FILE");
		if (keyadm_check_admin(ka, "format"))
			return 1;
		if (!auth)      /* its ZooKeeper nodes stay secured by the secret */
			return cli_fail("format: --auth none on a cluster with keys: "
					"format a new cluster (another name) instead");
		*keep = 1;
		return 0;
	}
	if (auth && have && !force)
		return cli_fail("format: %s exists (another cluster's keyring?); use "
				"--force to replace it", ka->path);
	return 0;
}

static int cluster_format(struct cli *cli, struct sdfs *unused)
{
	(void)unused;
	uint64_t copies = 0, obj_size = 4 << 20, grace_s = 30;
	int force = 0, auth = 1, formatted, keep = 0, ret;
	struct cluster_config cfg;
	struct keyadm ka;
	struct stat st;
	char err[512];
	const char *v;

	for (int i = 0; i < cli->argc; i++) {
		if ((v = cli_opt(cli->argc, cli->argv, &i, "--copies"))) {
			if (cli_parse_u64(v, &copies) || copies == 0 || copies > 16)
				return cli_bad("--copies must be 1..16, not '%s'", v);
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--obj-size"))) {
			if (cli_parse_size(v, &obj_size) || obj_size < 4096 ||
			    obj_size % 4096 || obj_size > (64u << 20))
				return cli_bad("--obj-size must be a multiple of 4 KiB "
					       "up to 64 MiB, not '%s'", v);
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--out-grace"))) {
			if (cli_parse_u64(v, &grace_s) || grace_s < 1 || grace_s > 86400)
				return cli_bad("--out-grace must be 1..86400 seconds, not '%s'", v);
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--auth"))) {
			if (strcmp(v, "none") && strcmp(v, "keys"))
				return cli_bad("--auth must be keys or none, not '%s'", v);
			auth = !strcmp(v, "keys");
		} else if (!strcmp(cli->argv[i], "--force")) {
			force = 1;
		} else {
			return cli_usage("sdfs cluster format --copies N [--obj-size SIZE] "
					 "[--out-grace S] [--auth none] [--force]");
		}
	}
	if (!copies)
		return cli_usage("sdfs cluster format --copies N [--obj-size SIZE] "
				 "[--out-grace S] [--auth none] [--force]");
	if ((ret = keyadm_conf(cli, &ka)))
		return ret;
	/* the config's default file, which every program reads if it exists */
	if (!ka.path[0])
		snprintf(ka.path, sizeof(ka.path), "%s", ka.conf.keyring);
	/* The keyring there, if any: an admin's may reformat its cluster. */
	if (ka.path[0] && stat(ka.path, &st) == 0 && (ret = keyadm_load(&ka, "format")))
		return ret;
	if ((ret = keyadm_connect(&ka, "format")))
		return ret;
	formatted = coord_config_get(ka.coord, &cfg) == 0;
	if (formatted && !force) {
		keyadm_close(&ka);
		return cli_fail("cluster is already formatted (use --force to "
				"reformat: existing data becomes unreachable)");
	}
	if ((ret = format_allowed(&ka, &cfg, formatted, force, auth, &keep))) {
		keyadm_close(&ka);
		return ret;
	}
	/* (formatted and no --force: refused above.) Only a formatted
	 * cluster has nodes (block daemons wait for the format to join);
	 * a new one may have no keyring yet for a libsdfs handle. */
	if (formatted) {
		struct sdfs *s = cli_open(cli);

		ret = s ? cli_copies_fit(s, "--copies", (unsigned)copies, force) : 1;
		sdfs_close(s);
		if (ret) {
			keyadm_close(&ka);
			return ret;
		}
	} else if (copies > 1) {
		fprintf(stderr, "sdfs: note: no block daemon has joined yet; copies %u "
			"needs %u nodes (health says degraded until then)\n",
			(unsigned)copies, (unsigned)copies);
	}
	keyadm_cluster_config(&cfg, (unsigned)copies, (uint32_t)obj_size,
			      (uint32_t)(grace_s * 1000), auth);
	if (auth && !keep) {
		/* new keys: the session that formats holds the new secret */
		ret = keyadm_format_new(&ka, &cfg, force, err, sizeof(err));
	} else {
		ret = coord_format(ka.coord, &cfg, force);
		snprintf(err, sizeof(err), "%s", ret == -EEXIST ? "cluster is already "
			 "formatted (use --force to reformat: existing data becomes "
			 "unreachable)" : strerror(-ret));
	}
	keyadm_close(&ka);
	if (ret)
		return cli_fail("format: %s", err);
	if (cli->json) {
		printf("{\"uuid\": \"%s\", \"copies\": %u, \"obj_size\": %" PRIu32
		       ", \"auth\": %s, \"keyring\": ", cfg.uuid, cfg.copies, cfg.obj_size,
		       auth ? "true" : "false");
		if (auth)
			cli_json_str(stdout, ka.path);
		else
			printf("null");
		printf(", \"keys_kept\": %s}\n", keep ? "true" : "false");
	} else {
		printf("formatted cluster %s: copies=%u obj_size=%" PRIu32 "\n",
		       cfg.uuid, cfg.copies, cfg.obj_size);
		if (keep)
			printf("keys kept: the cluster's secret and keys, %s among them\n",
			       ka.path);
		else if (auth)
			printf("admin keyring (client.admin) written to %s\n", ka.path);
		else
			printf("no keys (--auth none): anyone who reaches the cluster may "
			       "do anything\n");
	}
	return 0;
}

#define WAIT_POLL_MS 200
#define WAIT_PLAIN_EVERY_MS 5000        /* progress lines without a terminal */
#define BAR_WIDTH 20

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One word for scripts: "ok" or "warning" (a near full node) iff
 * healthy; "error" for a full node. */
static const char *health_word(const struct sdfs_health *h)
{
	if (h->healthy)
		return h->nodes_nearfull ? "warning" : "ok";
	if (h->nodes_up + h->nodes_down + h->nodes_out == 0)
		return "no-nodes";
	if (h->nodes_up == 0)
		return "down";
	if (h->nodes_full)
		return "error";
	if (!strncmp(h->reason, "recovering", 10))
		return "recovering";
	return "degraded";
}

/* Recovery progress in percent: the lesser of bytes fetched and objects
 * settled (most objects settle without moving bytes). */
static unsigned progress_pct(const struct sdfs_health *h)
{
	unsigned by_bytes = 100, by_objs = 100;

	if (h->healthy)
		return 100;
	if (!h->todo_bytes && !h->todo_objs)
		return 0;       /* no pass has counted its work yet */
	if (h->todo_bytes)
		by_bytes = (unsigned)(h->done_bytes * 100 / h->todo_bytes);
	if (h->todo_objs)
		by_objs = (unsigned)(h->done_objs * 100 / h->todo_objs);
	return by_bytes < by_objs ? by_bytes : by_objs;
}

static const char *eta_text(int64_t s, char *buf, size_t len)
{
	if (s < 0)
		snprintf(buf, len, "?");
	else if (s < 60)
		snprintf(buf, len, "%" PRId64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", s / 3600, s / 60 % 60);
	return buf;
}

/*
 * Why the ETA is unknown (h->eta_s < 0), from the nodes' passes, in place
 * of "ETA ?": "listing on 2 of 3 nodes" (a pass lists every peer's
 * objects before it counts its work), "node 3 catching up to epoch 9"
 * (its pass has not started), "12 objects unavailable" (waiting for a
 * node), "estimating" (work counted, nothing done yet). @nodes may be
 * NULL: then only what @h says.
 */
static const char *eta_wait(const struct sdfs_health *h,
			    const struct sdfs_node_status *nodes, size_t n,
			    char *buf, size_t len)
{
	unsigned up = 0, listing = 0;
	uint32_t behind = 0;

	for (size_t i = 0; nodes && i < n; i++) {
		const struct sdfs_node_status *x = &nodes[i];

		if (!x->reachable)
			continue;
		up++;
		if (x->epoch != h->epoch || x->rec_epoch != h->epoch) {
			if (!behind)
				behind = x->node_id;
		} else if (x->clean_epoch != h->epoch && !x->rec_todo_objs) {
			listing++;
		}
	}
	if (h->unavail)
		snprintf(buf, len, "%" PRIu64 " objects unavailable", h->unavail);
	else if (behind)
		snprintf(buf, len, "node %" PRIu32 " catching up to epoch %" PRIu64,
			 behind, h->epoch);
	else if (listing)
		snprintf(buf, len, "listing on %u of %u nodes", listing, up);
	else if (!nodes && !h->todo_objs)
		snprintf(buf, len, "listing");
	else
		snprintf(buf, len, "estimating");
	return buf;
}

/* "1203/2650 objects  310/700 MiB  52 MiB/s  ETA 8s"; in place of the
 * ETA, why there is none yet (eta_wait). */
static void progress_text(const struct sdfs_health *h,
			  const struct sdfs_node_status *nodes, size_t n,
			  const char *sep, char *buf, size_t len)
{
	char d[32], t[32], r[32], e[80];

	cli_human(h->done_bytes, d, sizeof(d));
	cli_human(h->todo_bytes, t, sizeof(t));
	cli_human(h->rate, r, sizeof(r));
	if (h->eta_s < 0 && !h->healthy) {
		char w[64];

		snprintf(e, sizeof(e), "ETA ? (%s)", eta_wait(h, nodes, n, w, sizeof(w)));
	} else {
		char v[48];

		snprintf(e, sizeof(e), "ETA %s", eta_text(h->eta_s, v, sizeof(v)));
	}
	snprintf(buf, len, "%" PRIu64 "/%" PRIu64 " objects%s%s/%s%s%s/s%s%s",
		 h->done_objs, h->todo_objs, sep, d, t, sep, r, sep, e);
}

/* "recovery [#########.........] 45%  1203/2650 objects ..." */
static void progress_bar(const struct sdfs_health *h,
			 const struct sdfs_node_status *nodes, size_t n,
			 char *buf, size_t len)
{
	unsigned pct = progress_pct(h), fill = pct * BAR_WIDTH / 100;
	char bar[BAR_WIDTH + 1], rest[192];

	for (unsigned i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR_WIDTH] = '\0';
	progress_text(h, nodes, n, "  ", rest, sizeof(rest));
	snprintf(buf, len, "recovery [%s] %3u%%  %s", bar, pct, rest);
}

/* The health fields shared by status and wait-healthy --json. */
static void health_json(const struct sdfs_health *h)
{
	printf("\"healthy\": %s, \"reason\": ", h->healthy ? "true" : "false");
	cli_json_str(stdout, h->reason);
	printf(", \"unavailable\": %" PRIu64 ", \"extra\": %" PRIu64
	       ", \"nodes_down\": %u, \"nodes_out\": %u, \"nodes_draining\": %u",
	       h->unavail, h->extra, h->nodes_down, h->nodes_out, h->nodes_draining);
	if (h->down_id)
		printf(", \"down_node\": %" PRIu32 ", \"out_in_s\": %" PRId64,
		       h->down_id, h->out_in_s);
	printf(", \"warning\": ");
	cli_json_str(stdout, h->warning);
	printf(", \"nodes_nearfull\": %u, \"nodes_full\": %u", h->nodes_nearfull,
	       h->nodes_full);
	if (h->full_id)
		printf(", \"full_node\": %" PRIu32, h->full_id);
	if (h->nearfull_id)
		printf(", \"nearfull_node\": %" PRIu32, h->nearfull_id);
	printf(", \"copies_placeable\": %u", h->copies_placeable);
	printf(", \"ec\": {\"degraded\": %" PRIu64 ", \"unavailable\": %" PRIu64 "}",
	       h->ec_degraded, h->ec_unavail);
	printf(", \"recovery\": {\"todo_objs\": %" PRIu64 ", \"done_objs\": %" PRIu64
	       ", \"todo_bytes\": %" PRIu64 ", \"done_bytes\": %" PRIu64
	       ", \"rate\": %" PRIu64 ", \"eta_s\": %" PRId64 ", \"percent\": %u"
	       ", \"nodes_done\": %u, \"moved_objs\": %" PRIu64 "}",
	       h->todo_objs, h->done_objs, h->todo_bytes, h->done_bytes, h->rate,
	       h->eta_s, progress_pct(h), h->nodes_clean, h->moved_objs);
}

/* Seconds until down node @x goes out (0: due now). */
static int64_t out_in_s(const struct sdfs_node_status *x, uint32_t grace_ms)
{
	uint64_t at = x->down_ms + grace_ms, now = wall_ms();

	return at > now ? (int64_t)((at - now + 999) / 1000) : 0;
}

#define RECLAIM_TIMEOUT_MS 3000

/* Volume reclaim numbers from the active mds: 0 if it answered, else -1
 * (no mds running or answering: status then leaves them out, without
 * waiting out the namespace calls' retries). Sets @s's timeout: call it
 * last. */
static int reclaim_status(struct sdfs *s, struct sdfs_reclaim_status *rs)
{
	struct sdfs_mds_status ms;
	int up;

	if (sdfs_mds_status(s, &ms))
		return -1;
	up = ms.has_active && ms.reachable;
	free(ms.list);
	if (!up)
		return -1;
	sdfs_set_timeout(s, RECLAIM_TIMEOUT_MS);
	return sdfs_vol_reclaim_status(s, rs) ? -1 : 0;
}

static void reclaim_json(const struct sdfs_reclaim_status *rs)
{
	printf(", \"reclaim\": {\"vids_pending\": %" PRIu64 ", \"objects_pending\": %"
	       PRIu64 ", \"bytes_pending\": %" PRIu64 ", \"objects_freed\": %" PRIu64
	       ", \"bytes_freed\": %" PRIu64 ", \"sweeps\": %" PRIu64 "}",
	       rs->vids_pending, rs->objects_pending, rs->bytes_pending,
	       rs->objects_freed, rs->bytes_freed, rs->sweeps);
}

/* A node's space in one word: "ok", "nearfull", "full". */
static const char *space_word(const struct sdfs_node_status *x)
{
	return x->full ? "full" : x->nearfull ? "nearfull" : "ok";
}

/* The scrub's counts summed over the nodes that answered (docs/scrub.md):
 * corrupt copies found, repaired and not, since each node's first pass. */
struct scrub_sum {
	uint64_t found, repaired, unrepaired, mismatched, refreshed;
	uint64_t strips_found, strips_repaired, strips_unrepaired;     /* EC strip files */
	unsigned answered, running, silent;
};

/* 0 with @sum, or -1 when no node could be asked (left out then). */
static int scrub_sum(struct sdfs *s, struct scrub_sum *sum)
{
	struct sdfs_scrub_status *st;
	size_t n;

	memset(sum, 0, sizeof(*sum));
	if (sdfs_scrub(s, SDFS_SCRUB_ALL, SDFS_SCRUB_ASK, 0, &st, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (st[i].result) {
			sum->silent += st[i].result != -EHOSTDOWN;
			continue;
		}
		sum->answered++;
		sum->running += !strcmp(st[i].state, "running");
		sum->found += st[i].total_found;
		sum->repaired += st[i].total_repaired;
		sum->unrepaired += st[i].total_unrepaired;
		sum->mismatched += st[i].total_mismatched;
		sum->refreshed += st[i].total_refreshed;
		sum->strips_found += st[i].total_strips_found;
		sum->strips_repaired += st[i].total_strips_repaired;
		sum->strips_unrepaired += st[i].total_strips_unrepaired;
	}
	free(st);
	return 0;
}

static void scrub_json(const struct scrub_sum *sc)
{
	printf(", \"scrub\": {\"found\": %" PRIu64 ", \"repaired\": %" PRIu64
	       ", \"unrepaired\": %" PRIu64 ", \"mismatched\": %" PRIu64
	       ", \"refreshed\": %" PRIu64 ", \"strips_found\": %" PRIu64
	       ", \"strips_repaired\": %" PRIu64 ", \"strips_unrepaired\": %" PRIu64
	       ", \"running\": %u, \"nodes\": %u"
	       ", \"silent\": %u}", sc->found, sc->repaired, sc->unrepaired,
	       sc->mismatched, sc->refreshed, sc->strips_found, sc->strips_repaired,
	       sc->strips_unrepaired, sc->running, sc->answered, sc->silent);
}

static void status_json(const struct sdfs_cluster_info *info, const struct sdfs_health *h,
			const struct sdfs_node_status *nodes, size_t n, uint64_t objects,
			const struct sdfs_reclaim_status *rs, const struct scrub_sum *sc)
{
	printf("{\"uuid\": \"%s\", \"epoch\": %" PRIu64 ", \"copies\": %u, "
	       "\"obj_size\": %" PRIu32 ", \"out_grace_ms\": %" PRIu32
	       ", \"health\": \"%s\", \"nodes\": %u, \"nodes_up\": %u, \"replicas\": %"
	       PRIu64 ", ", info->uuid, info->epoch, info->copies, info->obj_size,
	       info->out_grace_ms, health_word(h), info->nodes, info->nodes_up, objects);
	health_json(h);
	if (rs)
		reclaim_json(rs);
	if (sc)
		scrub_json(sc);
	printf(", \"nodes_detail\": [");
	for (size_t i = 0; i < n; i++) {
		const struct sdfs_node_status *x = &nodes[i];

		printf("%s{\"id\": %" PRIu32 ", \"addr\": ", i ? ", " : "", x->node_id);
		cli_json_str(stdout, x->addr);
		printf(", \"state\": \"%s\", \"draining\": %s, \"placed\": %s"
		       ", \"zone\": %" PRIu32 ", \"weight\": %" PRIu32
		       ", \"weight_set\": %s, \"reachable\": %s, \"epoch\": %" PRIu64
		       ", \"objects\": %" PRIu64 ", \"down_ms\": %" PRIu64, x->state,
		       x->drain ? "true" : "false", x->placed ? "true" : "false",
		       x->zone, x->weight, x->weight_set ? "true" : "false",
		       x->reachable ? "true" : "false", x->epoch, x->objects, x->down_ms);
		if (x->reachable)
			printf(", \"space\": \"%s\", \"used_pct\": %u, \"used_bytes\": %"
			       PRIu64 ", \"total_bytes\": %" PRIu64 ", \"avail_bytes\": %"
			       PRIu64 ", \"enospc\": %s", space_word(x), x->used_pct,
			       x->used_bytes, x->total_bytes, x->avail_bytes,
			       x->enospc ? "true" : "false");
		if (!strcmp(x->state, "down"))
			printf(", \"out_in_s\": %" PRId64, out_in_s(x, info->out_grace_ms));
		printf(", \"rec_epoch\": %" PRIu64 ", \"clean_epoch\": %" PRIu64
		       ", \"recovery\": {\"todo_objs\": %" PRIu64 ", \"done_objs\": %" PRIu64
		       ", \"todo_bytes\": %" PRIu64 ", \"done_bytes\": %" PRIu64
		       ", \"elapsed_ms\": %" PRIu64 "}, \"unavailable\": %" PRIu64
		       ", \"extra\": %" PRIu64 ", \"moved_objs\": %" PRIu64
		       ", \"ec_degraded\": %" PRIu64 ", \"ec_unavailable\": %" PRIu64 "}",
		       x->rec_epoch, x->clean_epoch, x->rec_todo_objs, x->rec_done_objs,
		       x->rec_todo_bytes, x->rec_done_bytes, x->rec_elapsed_ms,
		       x->rec_unavail, x->rec_extra, x->moved_objs, x->ec_degraded,
		       x->ec_unavail);
	}
	printf("]}\n");
}

/* What a node is doing, for the NOTE column. */
static void node_note(const struct sdfs_node_status *x, uint64_t epoch,
		      uint32_t grace_ms, char *buf, size_t len)
{
	buf[0] = '\0';
	if (!strcmp(x->state, "down")) {
		snprintf(buf, len, "out in %" PRId64 " s", out_in_s(x, grace_ms));
		return;
	}
	if (!strcmp(x->state, "out")) {
		snprintf(buf, len, "its data re-replicated elsewhere");
		return;
	}
	if (!x->reachable) {
		snprintf(buf, len, "not answering");
		return;
	}
	if (x->full) {
		snprintf(buf, len, "disk full: data writes refused%s",
			 x->enospc ? " (a write hit ENOSPC)" : "");
		return;
	}
	if (x->epoch != epoch || x->rec_epoch != epoch)
		snprintf(buf, len, "catching up to epoch %" PRIu64, epoch);
	else if (x->rec_unavail)
		snprintf(buf, len, "%" PRIu64 " objects unavailable", x->rec_unavail);
	else if (x->clean_epoch != epoch && !x->rec_todo_objs)
		snprintf(buf, len, "recovering: listing objects");
	else if (x->clean_epoch != epoch)
		snprintf(buf, len, "recovering %" PRIu64 "/%" PRIu64 " objects",
			 x->rec_done_objs, x->rec_todo_objs);
	else if (x->drain && x->objects)
		snprintf(buf, len, "draining: %" PRIu64 " objects left", x->objects);
	else if (x->drain)
		snprintf(buf, len, "drained: can be stopped");
	else if (x->rec_extra)
		snprintf(buf, len, "%" PRIu64 " extra copies to drop", x->rec_extra);
	else if (x->nearfull)
		snprintf(buf, len, "disk near full");
}

static void status_text(const struct sdfs_cluster_info *info, const struct sdfs_health *h,
			const struct sdfs_node_status *nodes, size_t n, uint64_t objects,
			uint64_t used, uint64_t total, const struct sdfs_reclaim_status *rs,
			const struct scrub_sum *sc)
{
	char c1[32], c2[32], when[32], line[256];
	time_t t = (time_t)info->created;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	printf("cluster   %s (formatted %s)\n", info->uuid, when);
	const char *word = health_word(h);
	if (h->healthy && h->warning[0])
		printf("health    %s: %s\n", word, h->warning);
	else if (h->healthy || !strncmp(h->reason, word, strlen(word)))
		printf("health    %s\n", h->healthy ? word : h->reason);
	else
		printf("health    %s: %s\n", word, h->reason);
	if (!h->healthy && h->warning[0])
		printf("warning   %s\n", h->warning);
	printf("epoch     %" PRIu64 "\n", info->epoch);
	printf("copies    %u   object size %s   out grace %" PRIu32 " s\n", info->copies,
	       cli_human(info->obj_size, c1, sizeof(c1)), info->out_grace_ms / 1000);
	printf("nodes     %u up", h->nodes_up);
	if (h->nodes_down)
		printf(", %u down", h->nodes_down);
	if (h->nodes_out)
		printf(", %u out", h->nodes_out);
	if (h->nodes_draining)
		printf(", %u draining", h->nodes_draining);
	printf(" / %u in map\n", info->nodes);
	printf("replicas  %" PRIu64 " stored; disks %s used of %s\n", objects,
	       cli_human(used, c1, sizeof(c1)), cli_human(total, c2, sizeof(c2)));
	if (h->healthy) {
		printf("recovery  done at epoch %" PRIu64 " (%" PRIu64 " objects checked)\n",
		       h->epoch, h->todo_objs);
	} else if (isatty(1)) {
		progress_bar(h, nodes, n, line, sizeof(line));
		printf("%s\n", line);
	} else {
		progress_text(h, nodes, n, ", ", line, sizeof(line));
		printf("recovery  %u%%: %s\n", progress_pct(h), line);
	}
	printf("          %" PRIu64 " unavailable, %" PRIu64 " extra copies kept, %"
	       PRIu64 " objects moved since the daemons started\n",
	       h->unavail, h->extra, h->moved_objs);
	if (h->ec_degraded || h->ec_unavail)
		printf("ec        %" PRIu64 " stripes degraded, %" PRIu64 " unavailable "
		       "(strip recovery's last passes)\n", h->ec_degraded, h->ec_unavail);
	if (rs)
		printf("reclaim   %" PRIu64 " objects (%s) to free, %" PRIu64 " freed\n",
		       rs->objects_pending, cli_human(rs->bytes_pending, c1, sizeof(c1)),
		       rs->objects_freed);
	if (sc) {
		printf("scrub     %" PRIu64 " corrupt copies found, %" PRIu64 " repaired, %"
		       PRIu64 " not repaired; %u of %u nodes scrubbing now", sc->found,
		       sc->repaired, sc->unrepaired, sc->running, sc->answered);
		if (sc->silent)
			printf(" (%u did not say)", sc->silent);
		if (sc->mismatched)
			printf("; %" PRIu64 " copies differed from their peers' (stale, "
			       "or the odd one of a version), %" PRIu64 " replaced",
			       sc->mismatched, sc->refreshed);
		if (sc->strips_found)
			printf("; %" PRIu64 " corrupt strips found, %" PRIu64 " rebuilt, %"
			       PRIu64 " not rebuilt", sc->strips_found, sc->strips_repaired,
			       sc->strips_unrepaired);
		printf("\n");
	}

	printf("\n%-6s %-22s %-10s %-9s %-6s %-6s %-5s %s\n", "NODE", "ADDRESS", "STATE",
	       "OBJECTS", "EPOCH", "CLEAN", "USE", "NOTE");
	for (size_t i = 0; i < n; i++) {
		const struct sdfs_node_status *x = &nodes[i];
		char st[16], obj[24] = "-", ep[24] = "-", cl[24] = "-", use[16] = "-";
		char note[96];

		snprintf(st, sizeof(st), "%s%s", x->state, x->drain ? ",drain" : "");
		if (x->reachable) {
			snprintf(obj, sizeof(obj), "%" PRIu64, x->objects);
			snprintf(ep, sizeof(ep), "%" PRIu64, x->epoch);
			snprintf(cl, sizeof(cl), "%" PRIu64, x->clean_epoch);
			snprintf(use, sizeof(use), "%u%%", x->used_pct);
		}
		node_note(x, info->epoch, info->out_grace_ms, note, sizeof(note));
		printf("%-6" PRIu32 " %-22s %-10s %-9s %-6s %-6s %-5s %s\n", x->node_id,
		       x->addr, st, obj, ep, cl, use, note);
	}
}

static int not_formatted_or(int ret, const char *what)
{
	if (ret == -ENOENT)
		return cli_fail("cluster is not formatted (run: sdfs cluster format --copies N)");
	return cli_fail("%s: %s", what, strerror(-ret));
}

static int cluster_status(struct cli *cli, struct sdfs *s)
{
	struct sdfs_cluster_info info;
	struct sdfs_node_status *nodes;
	struct sdfs_health h;
	size_t n;
	int ret;

	if (cli->argc)
		return cli_usage("sdfs cluster status [--json]");
	ret = sdfs_cluster_info(s, &info);
	if (ret)
		return not_formatted_or(ret, "cannot read cluster state");
	ret = sdfs_cluster_health(s, &h);
	if (ret)
		return not_formatted_or(ret, "cannot check health");
	ret = sdfs_node_list(s, &nodes, &n);
	if (ret)
		return not_formatted_or(ret, "cannot list nodes");

	uint64_t objects = 0, used = 0, total = 0;
	for (size_t i = 0; i < n; i++) {
		objects += nodes[i].objects;
		used += nodes[i].used_bytes;
		total += nodes[i].total_bytes;
	}
	struct sdfs_reclaim_status rs;
	int have_rs = reclaim_status(s, &rs) == 0;
	struct scrub_sum sc;
	int have_sc = scrub_sum(s, &sc) == 0;
	if (cli->json)
		status_json(&info, &h, nodes, n, objects, have_rs ? &rs : NULL,
			    have_sc ? &sc : NULL);
	else
		status_text(&info, &h, nodes, n, objects, used, total, have_rs ? &rs : NULL,
			    have_sc ? &sc : NULL);
	free(nodes);
	return 0;
}

static void wait_show(struct sdfs *s, const struct sdfs_health *h, int tty)
{
	struct sdfs_node_status *nodes = NULL;
	char line[512], bar[256];
	size_t n = 0;

	/* Why no ETA yet needs the nodes' passes (NODE_INFO is cheap: the
	 * stores keep their counts). */
	if (!h->healthy && h->eta_s < 0 && sdfs_node_list(s, &nodes, &n))
		nodes = NULL;
	if (tty) {
		progress_bar(h, nodes, n, bar, sizeof(bar));
		/* The reason only when it says more than "recovering". */
		if (!h->healthy && strncmp(h->reason, "recovering", 10))
			snprintf(line, sizeof(line), "%s  (%s)", bar, h->reason);
		else
			snprintf(line, sizeof(line), "%s", bar);
		printf("\r\033[K%s", line);
	} else {
		progress_text(h, nodes, n, ", ", bar, sizeof(bar));
		printf("waiting: %s; %u%%: %s\n", h->reason, progress_pct(h), bar);
	}
	fflush(stdout);
	free(nodes);
}

static int cluster_wait_healthy(struct cli *cli, struct sdfs *s)
{
	uint64_t timeout_s = 300;
	int tty = !cli->json && isatty(1), shown = 0, ret = -EAGAIN;
	struct sdfs_health h;
	const char *v;

	for (int i = 0; i < cli->argc; i++) {
		if ((v = cli_opt(cli->argc, cli->argv, &i, "--timeout"))) {
			if (cli_parse_u64(v, &timeout_s) || timeout_s > 86400 * 7)
				return cli_bad("--timeout must be 0..604800 seconds, not '%s'", v);
		} else {
			return cli_usage("sdfs cluster wait-healthy [--timeout S] [--json]");
		}
	}
	memset(&h, 0, sizeof(h));
	snprintf(h.reason, sizeof(h.reason), "no answer yet");
	int64_t start = mono_ms(), end = start + (int64_t)timeout_s * 1000;
	int64_t next_plain = start;
	for (;;) {
		struct sdfs_health cur;

		ret = sdfs_cluster_health(s, &cur);
		if (ret == -ENOENT) {
			if (shown)
				printf("\n");
			return cli_fail("cluster is not formatted");
		}
		if (ret == 0)
			h = cur;
		else
			snprintf(h.reason, sizeof(h.reason), "cannot check: %s", strerror(-ret));
		if (ret == 0 && h.healthy)
			break;
		int64_t now = mono_ms();
		if (now >= end)
			break;
		if (tty || (!cli->json && now >= next_plain)) {
			wait_show(s, &h, tty);
			shown = 1;
			next_plain = now + WAIT_PLAIN_EVERY_MS;
		}
		int64_t nap = end - now < WAIT_POLL_MS ? end - now : WAIT_POLL_MS;
		struct timespec ts = { 0, (long)nap * 1000000L };
		nanosleep(&ts, NULL);
	}
	double took = (double)(mono_ms() - start) / 1000;
	if (tty && shown) {
		if (h.healthy)
			wait_show(s, &h, tty);
		printf("\n");
	}
	if (cli->json) {
		printf("{\"epoch\": %" PRIu64 ", \"health\": \"%s\", \"waited_s\": %.1f, ",
		       h.epoch, health_word(&h), took);
		health_json(&h);
		printf("}\n");
	} else if (h.healthy) {
		printf("healthy at epoch %" PRIu64 " after %.1f s\n", h.epoch, took);
	}
	if (!h.healthy)         /* with --json, the object printed says so */
		return cli_fail_after_output("not healthy after %" PRIu64 " s: %s", timeout_s,
					     h.reason);
	return 0;
}

int cmd_cluster(struct cli *cli)
{
	static const struct {
		const char *name;
		int (*fn)(struct cli *cli, struct sdfs *s);
	} subs[] = {
		{ "format", cluster_format }, { "status", cluster_status },
		{ "wait-healthy", cluster_wait_healthy },
	};
	struct sdfs *s;
	int ret, k = -1;

	if (cli->argc < 1)
		return cli_usage("sdfs cluster format|status|wait-healthy ...");
	const char *sub = cli->argv[0];
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (!strcmp(sub, subs[i].name))
			k = (int)i;
	if (k < 0)
		return cli_unknown("cluster", sub);
	cli->argc--;
	cli->argv++;
	/* format opens its own handle: a new cluster's keyring is made by it */
	if (subs[k].fn == cluster_format)
		return cluster_format(cli, NULL);
	s = cli_open(cli);
	if (!s)
		return 1;
	ret = subs[k].fn(cli, s);
	sdfs_close(s);
	return ret;
}
