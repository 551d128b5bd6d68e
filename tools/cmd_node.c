/*
 * cmd_node.c - sdfs node list.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static int node_list(struct cli *cli, struct sdfs *s)
{
	struct sdfs_node_status *nodes;
	size_t n;
	int ret = sdfs_node_list(s, &nodes, &n);

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
			       ", \"errors\": %" PRIu64 "}", x->zone, x->weight, x->state,
			       x->reachable ? "true" : "false", x->epoch, x->objects,
			       x->used_bytes, x->total_bytes, x->requests, x->errors);
		}
		printf("]\n");
	} else {
		printf("%-6s %-22s %-5s %-6s %-5s %-9s %-10s %-10s %s\n", "NODE", "ADDRESS",
		       "STATE", "WEIGHT", "ZONE", "OBJECTS", "USED", "SIZE", "EPOCH");
		for (size_t i = 0; i < n; i++) {
			const struct sdfs_node_status *x = &nodes[i];
			char u[32], t[32], e[24];

			if (!x->reachable) {
				printf("%-6" PRIu32 " %-22s %-5s %-6" PRIu32 " %-5" PRIu32
				       " %-9s %-10s %-10s %s\n", x->node_id, x->addr, x->state,
				       x->weight, x->zone, "-", "-", "-", "unreachable");
				continue;
			}
			snprintf(e, sizeof(e), "%" PRIu64, x->epoch);
			printf("%-6" PRIu32 " %-22s %-5s %-6" PRIu32 " %-5" PRIu32
			       " %-9" PRIu64 " %-10s %-10s %s\n", x->node_id, x->addr, x->state,
			       x->weight, x->zone, x->objects,
			       cli_human(x->used_bytes, u, sizeof(u)),
			       cli_human(x->total_bytes, t, sizeof(t)), e);
		}
	}
	free(nodes);
	return 0;
}

int cmd_node(struct cli *cli)
{
	struct sdfs *s;
	int ret;

	if (cli->argc != 1 || strcmp(cli->argv[0], "list"))
		return cli->argc >= 1 && strcmp(cli->argv[0], "list")
			? cli_fail("unknown command 'node %s' (see sdfs --help)", cli->argv[0])
			: cli_usage("sdfs node list [--json]");
	s = cli_open(cli);
	if (!s)
		return 1;
	ret = node_list(cli, s);
	sdfs_close(s);
	return ret;
}
