/*
 * cmd_node.c - sdfs node list|out|remove|add|reweight.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static const char node_usage[] =
	"sdfs node list | out ID | remove ID | add ID | reweight ID WEIGHT";

static int node_list(struct cli *cli, struct sdfs *s)
{
	struct sdfs_node_status *nodes;
	size_t n;
	int ret = sdfs_node_list(s, &nodes, &n), any_wset = 0;

	if (ret == -ENOENT)
		return cli_fail("cluster is not formatted");
	if (ret)
		return cli_fail("cannot list nodes: %s", strerror(-ret));
	if (cli->json) {
		printf("[");
		for (size_t i = 0; i < n; i++) {
			const struct sdfs_node_status *x = &nodes[i];

			printf("%s{\"id\": %" PRIu32 ", \"addr\": ", i ? ", " : "", x->node_id);
			cli_json_str(stdout, x->addr);
			printf(", \"zone\": %" PRIu32 ", \"weight\": %" PRIu32
			       ", \"state\": \"%s\", \"reachable\": %s, \"epoch\": %" PRIu64
			       ", \"objects\": %" PRIu64 ", \"used_bytes\": %" PRIu64
			       ", \"total_bytes\": %" PRIu64 ", \"requests\": %" PRIu64
			       ", \"errors\": %" PRIu64, x->zone, x->weight, x->state,
			       x->reachable ? "true" : "false", x->epoch, x->objects,
			       x->used_bytes, x->total_bytes, x->requests, x->errors);
			printf(", \"draining\": %s, \"weight_set\": %s, \"placed\": %s"
			       ", \"down_ms\": %" PRIu64 ", \"clean_epoch\": %" PRIu64
			       ", \"rec_epoch\": %" PRIu64 ", \"extra\": %" PRIu64
			       ", \"unavailable\": %" PRIu64 ", \"moved_objs\": %" PRIu64,
			       x->drain ? "true" : "false", x->weight_set ? "true" : "false",
			       x->placed ? "true" : "false", x->down_ms, x->clean_epoch,
			       x->rec_epoch, x->rec_extra, x->rec_unavail, x->moved_objs);
			if (x->reachable)
				printf(", \"avail_bytes\": %" PRIu64 ", \"used_pct\": %u"
				       ", \"space\": \"%s\", \"enospc\": %s", x->avail_bytes,
				       x->used_pct, x->full ? "full" : x->nearfull ?
				       "nearfull" : "ok", x->enospc ? "true" : "false");
			printf("}");
		}
		printf("]\n");
		free(nodes);
		return 0;
	}
	printf("%-6s %-22s %-5s %-5s %-7s %-5s %-9s %-10s %-10s %-14s %s\n", "NODE",
	       "ADDRESS", "STATE", "DRAIN", "WEIGHT", "ZONE", "OBJECTS", "USED", "SIZE",
	       "USE", "EPOCH");
	for (size_t i = 0; i < n; i++) {
		const struct sdfs_node_status *x = &nodes[i];
		char u[32], t[32], e[24], w[16], o[24], p[32];

		snprintf(w, sizeof(w), "%" PRIu32 "%s", x->weight, x->weight_set ? "*" : "");
		any_wset |= x->weight_set;
		if (!x->reachable) {
			printf("%-6" PRIu32 " %-22s %-5s %-5s %-7s %-5" PRIu32
			       " %-9s %-10s %-10s %-14s %s\n", x->node_id, x->addr, x->state,
			       x->drain ? "yes" : "-", w, x->zone, "-", "-", "-", "-",
			       "unreachable");
			continue;
		}
		snprintf(e, sizeof(e), "%" PRIu64, x->epoch);
		snprintf(o, sizeof(o), "%" PRIu64, x->objects);
		/* "97% full": what the node judged (its nearfull_pct/full_pct) */
		snprintf(p, sizeof(p), "%u%%%s", x->used_pct, x->full ? " full" :
			 x->nearfull ? " near full" : "");
		printf("%-6" PRIu32 " %-22s %-5s %-5s %-7s %-5" PRIu32
		       " %-9s %-10s %-10s %-14s %s\n", x->node_id, x->addr, x->state,
		       x->drain ? "yes" : "-", w, x->zone, o,
		       cli_human(x->used_bytes, u, sizeof(u)),
		       cli_human(x->total_bytes, t, sizeof(t)), p, e);
	}
	if (any_wset)
		printf("* weight set by sdfs node reweight\n");
	free(nodes);
	return 0;
}

static const char *const action_name[] = {
	[SDFS_NODE_OUT] = "out", [SDFS_NODE_REMOVE] = "remove",
	[SDFS_NODE_ADD] = "add", [SDFS_NODE_REWEIGHT] = "reweight",
};

/* Why @a on @id changed nothing (-EALREADY): the node is as asked. */
static void say_already(enum sdfs_node_action a, uint32_t id, uint32_t weight)
{
	switch (a) {
	case SDFS_NODE_OUT:
		printf("node %" PRIu32 " is already out\n", id);
		break;
	case SDFS_NODE_REMOVE:
		printf("node %" PRIu32 " is already draining\n", id);
		break;
	case SDFS_NODE_ADD:
		printf("node %" PRIu32 " is not draining: nothing to add back\n", id);
		break;
	case SDFS_NODE_REWEIGHT:
		printf("node %" PRIu32 " already has weight %" PRIu32 "\n", id, weight);
		break;
	}
}

static void say_done(enum sdfs_node_action a, uint32_t id, uint32_t weight,
		     uint64_t epoch)
{
	switch (a) {
	case SDFS_NODE_OUT:
		printf("node %" PRIu32 " is out (epoch %" PRIu64 "): its data is being "
		       "re-replicated on the other nodes\n", id, epoch);
		break;
	case SDFS_NODE_REMOVE:
		printf("node %" PRIu32 " is draining (epoch %" PRIu64 "): its data is "
		       "moving to the other nodes, and it keeps serving meanwhile.\n"
		       "Stop it once 'sdfs node list' shows it holds 0 objects (or "
		       "'sdfs cluster wait-healthy' succeeds and its extra copies are "
		       "gone).\n", id, epoch);
		break;
	case SDFS_NODE_ADD:
		printf("node %" PRIu32 " is placed again (epoch %" PRIu64 "): data moves "
		       "back onto it\n", id, epoch);
		break;
	case SDFS_NODE_REWEIGHT:
		printf("node %" PRIu32 " now has weight %" PRIu32 " (epoch %" PRIu64
		       "): data moves to match\n", id, weight, epoch);
		break;
	}
}

static int node_fail(enum sdfs_node_action a, uint32_t id, int err)
{
	switch (err) {
	case -ENOENT:
		return cli_fail("no node %" PRIu32 " in the cluster map (see sdfs node list)", id);
	case -EBUSY:
		return cli_fail("node %" PRIu32 " is up: 'node out' is for a node that is "
				"down; to move an up node's data off, use "
				"'sdfs node remove %" PRIu32 "'", id, id);
	case -ENOSPC:
		return cli_fail("cannot remove node %" PRIu32 ": fewer placed nodes than "
				"copies would remain (add a node first)", id);
	case -EACCES:
		return cli_fail("node %s %" PRIu32 ": needs an admin key (ZooKeeper "
				"refused this keyring's change of the map)",
				action_name[a], id);
	case -EAGAIN:
		return cli_fail("node %s %" PRIu32 ": the cluster map kept changing; "
				"try again", action_name[a], id);
	default:
		return cli_fail("node %s %" PRIu32 ": %s", action_name[a], id,
				strerror(-err));
	}
}

static int node_set(struct cli *cli, struct sdfs *s, enum sdfs_node_action a,
		    uint32_t id, uint32_t weight)
{
	struct sdfs_cluster_info info;
	int ret = sdfs_node_set(s, id, a, weight), changed = ret == 0;

	if (ret && ret != -EALREADY)
		return node_fail(a, id, ret);
	if (sdfs_cluster_info(s, &info))
		info.epoch = 0;
	if (cli->json) {
		printf("{\"node\": %" PRIu32 ", \"action\": \"%s\", \"changed\": %s, "
		       "\"epoch\": %" PRIu64, id, action_name[a],
		       changed ? "true" : "false", info.epoch);
		if (a == SDFS_NODE_REWEIGHT)
			printf(", \"weight\": %" PRIu32, weight);
		printf("}\n");
	} else if (changed) {
		say_done(a, id, weight, info.epoch);
	} else {
		say_already(a, id, weight);
	}
	return 0;
}

static int parse_id(const char *v, uint32_t *id)
{
	uint64_t x;

	if (cli_parse_u64(v, &x) || x == 0 || x > UINT32_MAX)
		return -1;
	*id = (uint32_t)x;
	return 0;
}

int cmd_node(struct cli *cli)
{
	static const struct { const char *name; enum sdfs_node_action a; int args; } acts[] = {
		{ "out", SDFS_NODE_OUT, 1 }, { "remove", SDFS_NODE_REMOVE, 1 },
		{ "add", SDFS_NODE_ADD, 1 }, { "reweight", SDFS_NODE_REWEIGHT, 2 },
	};
	uint32_t id = 0, weight = 0;
	struct sdfs *s;
	int ret, act = -1;

	if (cli->argc < 1)
		return cli_usage(node_usage);
	const char *sub = cli->argv[0];
	if (!strcmp(sub, "list") || !strcmp(sub, "ls")) {      /* ls: as fs ls */
		if (cli->argc != 1)
			return cli_usage("sdfs node list [--json]");
	} else {
		for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
			if (!strcmp(sub, acts[i].name))
				act = (int)i;
		if (act < 0)
			return cli_unknown("node", sub);
		if (cli->argc != 1 + acts[act].args)
			return cli_usage(act == 3 ? "sdfs node reweight ID WEIGHT"
					 : "sdfs node out|remove|add ID");
		if (parse_id(cli->argv[1], &id))
			return cli_bad("bad node id '%s'", cli->argv[1]);
		if (acts[act].args == 2 && parse_id(cli->argv[2], &weight))
			return cli_bad("bad weight '%s' (a whole number, at least 1)",
				       cli->argv[2]);
	}
	s = cli_open(cli);
	if (!s)
		return 1;
	ret = act < 0 ? node_list(cli, s) : node_set(cli, s, acts[act].a, id, weight);
	sdfs_close(s);
	return ret;
}
