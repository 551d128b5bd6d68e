/*
 * cmd_scrub.c - sdfs scrub status|start|stop [--node N]: the block
 * daemons' background scrub (docs/scrub.md), through sdfs_scrub.
 * status answers for every key; start and stop need an admin key.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static const char scrub_usage[] =
	"sdfs scrub status|stop [--node N] | start [--node N] [--rate SIZE]";

/* One node's failure in a few words. */
static const char *why(int err)
{
	switch (err) {
	case -EHOSTDOWN: return "down in the map";
	case -EOPNOTSUPP: return "its sdfs-blockd has no scrub (upgrade it)";
	case -EACCES: return "needs an admin key";
	}
	return strerror(-err);
}

static const char *when(uint64_t ms, char *buf, size_t len)
{
	if (!ms)
		return "never";
	return cli_time((int64_t)ms * 1000000, buf, len);
}

static void show_json(const struct sdfs_scrub_status *st, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++) {
		const struct sdfs_scrub_status *x = &st[i];

		printf("%s{\"id\": %" PRIu32 ", \"addr\": ", i ? ", " : "", x->node_id);
		cli_json_str(stdout, x->addr);
		if (x->result) {
			printf(", \"error\": ");
			cli_json_str(stdout, why(x->result));
			printf("}");
			continue;
		}
		printf(", \"state\": \"%s\", \"cursor\": %" PRIu64 ", \"objects\": %" PRIu64
		       ", \"bytes\": %" PRIu64 ", \"found\": %" PRIu64 ", \"repaired\": %"
		       PRIu64 ", \"unrepaired\": %" PRIu64 ", \"total_found\": %" PRIu64
		       ", \"total_repaired\": %" PRIu64 ", \"total_unrepaired\": %" PRIu64
		       ", \"passes\": %" PRIu64 ", \"pass_start_ms\": %" PRIu64
		       ", \"pass_end_ms\": %" PRIu64 ", \"next_start_ms\": %" PRIu64
		       ", \"rate\": %" PRIu64 ", \"interval_s\": %" PRIu64
		       ", \"store_objects\": %" PRIu64 ", \"compared\": %" PRIu64
		       ", \"mismatched\": %" PRIu64 ", \"total_mismatched\": %" PRIu64
		       ", \"refreshed\": %" PRIu64 ", \"total_refreshed\": %" PRIu64
		       ", \"last_start_ms\": %" PRIu64 ", \"strips\": %" PRIu64
		       ", \"strip_bytes\": %" PRIu64 ", \"strips_found\": %" PRIu64
		       ", \"strips_repaired\": %" PRIu64 ", \"strips_unrepaired\": %" PRIu64
		       ", \"total_strips_found\": %" PRIu64 ", \"total_strips_repaired\": %"
		       PRIu64 ", \"total_strips_unrepaired\": %" PRIu64
		       "}", x->state, x->cursor, x->objects,
		       x->bytes, x->found, x->repaired, x->unrepaired, x->total_found,
		       x->total_repaired, x->total_unrepaired, x->passes, x->pass_start_ms,
		       x->pass_end_ms, x->next_start_ms, x->rate, x->interval_s,
		       x->store_objects, x->compared, x->mismatched, x->total_mismatched,
		       x->refreshed, x->total_refreshed, x->last_start_ms, x->strips,
		       x->strip_bytes, x->strips_found, x->strips_repaired,
		       x->strips_unrepaired, x->total_strips_found, x->total_strips_repaired,
		       x->total_strips_unrepaired);
	}
	printf("]\n");
}

static void show_table(const struct sdfs_scrub_status *st, size_t n)
{
	printf("%-6s %-8s %-14s %-10s %-6s %-9s %-11s %-7s %-7s %-15s %-19s %s\n", "NODE",
	       "STATE", "CHECKED", "BYTES", "FOUND", "REPAIRED", "UNREPAIRED", "DIFFER",
	       "STRIPS", "BAD/FIXED/LEFT", "LAST PASS ENDED", "NEXT");
	for (size_t i = 0; i < n; i++) {
		const struct sdfs_scrub_status *x = &st[i];
		char chk[48], b[32], end[32], next[32], sb[72];

		if (x->result) {
			printf("%-6" PRIu32 " %-8s %s\n", x->node_id, "-", why(x->result));
			continue;
		}
		snprintf(chk, sizeof(chk), "%" PRIu64 "/%" PRIu64, x->objects,
			 x->store_objects);
		snprintf(sb, sizeof(sb), "%" PRIu64 "/%" PRIu64 "/%" PRIu64, x->strips_found,
			 x->strips_repaired, x->strips_unrepaired);
		printf("%-6" PRIu32 " %-8s %-14s %-10s %-6" PRIu64 " %-9" PRIu64 " %-11"
		       PRIu64 " %-7" PRIu64 " %-7" PRIu64 " %-15s %-19s %s\n", x->node_id,
		       x->state, chk, cli_human(x->bytes, b, sizeof(b)), x->found, x->repaired,
		       x->unrepaired, x->mismatched, x->strips, sb,
		       when(x->pass_end_ms, end, sizeof(end)),
		       x->next_start_ms ? when(x->next_start_ms, next, sizeof(next))
					: strcmp(x->state, "running") ? "on demand" : "-");
	}
}

int cmd_scrub(struct cli *cli)
{
	enum sdfs_scrub_action a;
	struct sdfs_scrub_status *st;
	uint32_t node = SDFS_SCRUB_ALL;
	uint64_t rate = 0, v;
	const char *val;
	struct sdfs *s;
	size_t n;
	int ret, bad = -1;

	if (cli->argc < 1)
		return cli_usage(scrub_usage);
	const char *sub = cli->argv[0];
	if (!strcmp(sub, "status"))
		a = SDFS_SCRUB_ASK;
	else if (!strcmp(sub, "start"))
		a = SDFS_SCRUB_BEGIN;
	else if (!strcmp(sub, "stop"))
		a = SDFS_SCRUB_PAUSE;
	else
		return cli_unknown("scrub", sub);
	for (int i = 1; i < cli->argc; i++) {
		if ((val = cli_opt(cli->argc, cli->argv, &i, "--node"))) {
			if (cli_parse_u64(val, &v) || v == 0 || v >= UINT32_MAX)
				return cli_bad("bad --node '%s' (a node id)", val);
			node = (uint32_t)v;
		} else if (a == SDFS_SCRUB_BEGIN &&
			   (val = cli_opt(cli->argc, cli->argv, &i, "--rate"))) {
			if (cli_parse_size(val, &rate) || rate < 1024 ||
			    rate / 1024 > UINT32_MAX)
				return cli_bad("bad --rate '%s' (bytes/s, at least 1K)", val);
		} else {
			return cli_usage(scrub_usage);
		}
	}
	s = cli_open(cli);
	if (!s)
		return 1;
	ret = sdfs_scrub(s, node, a, rate, &st, &n);
	sdfs_close(s);
	if (ret == -ENOENT)
		return cli_fail("no node %" PRIu32 " in the cluster map (see sdfs node list)",
				node);
	if (ret)
		return cli_fail("scrub %s: %s", sub, strerror(-ret));
	/* A node down in the map fails only when it was asked by name. */
	for (size_t i = 0; i < n && bad < 0; i++)
		if (st[i].result && (st[i].result != -EHOSTDOWN || node != SDFS_SCRUB_ALL))
			bad = (int)i;
	if (cli->json)
		show_json(st, n);
	else
		show_table(st, n);
	if (bad >= 0) {
		ret = cli_fail_after_output("scrub %s: node %" PRIu32 ": %s", sub,
					    st[bad].node_id, why(st[bad].result));
		free(st);
		return ret;
	}
	free(st);
	return 0;
}
