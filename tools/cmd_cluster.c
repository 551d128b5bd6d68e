/*
 * cmd_cluster.c - sdfs cluster format|status.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"

static int cluster_format(struct cli *cli, struct sdfs *s)
{
	uint64_t copies = 0, obj_size = 4 << 20, grace_s = 30;
	int force = 0, ret;
	const char *v;

	for (int i = 0; i < cli->argc; i++) {
		if ((v = cli_opt(cli->argc, cli->argv, &i, "--copies"))) {
			if (cli_parse_u64(v, &copies) || copies == 0 || copies > 16)
				return cli_fail("--copies must be 1..16, not '%s'", v);
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--obj-size"))) {
			if (cli_parse_size(v, &obj_size) || obj_size < 4096 ||
			    obj_size % 4096 || obj_size > (64u << 20))
				return cli_fail("--obj-size must be a multiple of 4 KiB "
						"up to 64 MiB, not '%s'", v);
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--out-grace"))) {
			if (cli_parse_u64(v, &grace_s) || grace_s < 1 || grace_s > 86400)
				return cli_fail("--out-grace must be 1..86400 seconds, not '%s'", v);
		} else if (!strcmp(cli->argv[i], "--force")) {
			force = 1;
		} else {
			return cli_usage("sdfs cluster format --copies N "
					 "[--obj-size SIZE] [--out-grace S] [--force]");
		}
	}
	if (!copies)
		return cli_usage("sdfs cluster format --copies N [--obj-size SIZE] "
				 "[--out-grace S] [--force]");
	ret = sdfs_cluster_format(s, (unsigned)copies, (uint32_t)obj_size,
				  (uint32_t)(grace_s * 1000), force);
	if (ret == -EEXIST)
		return cli_fail("cluster is already formatted (use --force to "
				"reformat: existing data becomes unreachable)");
	if (ret)
		return cli_fail("format failed: %s", strerror(-ret));
	struct sdfs_cluster_info info;
	if (sdfs_cluster_info(s, &info) == 0) {
		if (cli->json)
			printf("{\"uuid\": \"%s\", \"copies\": %u, \"obj_size\": %" PRIu32 "}\n",
			       info.uuid, info.copies, info.obj_size);
		else
			printf("formatted cluster %s: copies=%u obj_size=%" PRIu32 "\n",
			       info.uuid, info.copies, info.obj_size);
	}
	return 0;
}

static int cluster_status(struct cli *cli, struct sdfs *s)
{
	struct sdfs_cluster_info info;
	struct sdfs_node_status *nodes;
	size_t n;
	int ret;

	if (cli->argc)
		return cli_usage("sdfs cluster status [--json]");
	ret = sdfs_cluster_info(s, &info);
	if (ret == -ENOENT)
		return cli_fail("cluster is not formatted (run: sdfs cluster format --copies N)");
	if (ret)
		return cli_fail("cannot read cluster state: %s", strerror(-ret));
	ret = sdfs_node_list(s, &nodes, &n);
	if (ret)
		return cli_fail("cannot list nodes: %s", strerror(-ret));

	uint64_t objects = 0, used = 0, total = 0;
	for (size_t i = 0; i < n; i++) {
		objects += nodes[i].objects;
		used += nodes[i].used_bytes;
		total += nodes[i].total_bytes;
	}
	const char *health = info.nodes == 0 ? "no-nodes" :
		info.nodes_up == info.nodes ? "ok" :
		info.nodes_up == 0 ? "down" : "degraded";
	if (cli->json) {
		printf("{\"uuid\": \"%s\", \"epoch\": %" PRIu64 ", \"copies\": %u, "
		       "\"obj_size\": %" PRIu32 ", \"health\": \"%s\", \"nodes\": %u, "
		       "\"nodes_up\": %u, \"replicas\": %" PRIu64 ", \"nodes_detail\": [",
		       info.uuid, info.epoch, info.copies, info.obj_size, health,
		       info.nodes, info.nodes_up, objects);
		for (size_t i = 0; i < n; i++)
			printf("%s{\"id\": %" PRIu32 ", \"addr\": \"%s\", \"state\": \"%s\"}",
			       i ? ", " : "", nodes[i].node_id, nodes[i].addr, nodes[i].state);
		printf("]}\n");
	} else {
		char c1[32], c2[32], when[32];
		time_t t = (time_t)info.created;

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("cluster   %s (formatted %s)\n", info.uuid, when);
		printf("health    %s\n", health);
		printf("epoch     %" PRIu64 "\n", info.epoch);
		printf("copies    %u   object size %s\n", info.copies,
		       cli_human(info.obj_size, c1, sizeof(c1)));
		printf("nodes     %u up / %u in map\n", info.nodes_up, info.nodes);
		printf("replicas  %" PRIu64 " stored; disks %s used of %s\n", objects,
		       cli_human(used, c1, sizeof(c1)), cli_human(total, c2, sizeof(c2)));
		printf("\n%-6s %-22s %-5s\n", "NODE", "ADDRESS", "STATE");
		for (size_t i = 0; i < n; i++)
			printf("%-6" PRIu32 " %-22s %-5s\n", nodes[i].node_id, nodes[i].addr,
			       nodes[i].state);
	}
	free(nodes);
	return 0;
}

int cmd_cluster(struct cli *cli)
{
	const char *usage = "sdfs cluster format|status ...";
	struct sdfs *s;
	int ret;

	if (cli->argc < 1)
		return cli_usage(usage);
	const char *sub = cli->argv[0];
	if (strcmp(sub, "format") && strcmp(sub, "status"))
		return cli_fail("unknown command 'cluster %s' (see sdfs --help)", sub);
	cli->argc--;
	cli->argv++;
	s = cli_open(cli);
	if (!s)
		return 1;
	ret = !strcmp(sub, "format") ? cluster_format(cli, s) : cluster_status(cli, s);
	sdfs_close(s);
	return ret;
}
