/*
 * cmd_mds.c - sdfs mds status: which sdfs-mds is active, its numbers,
 * and every running one in election order (the next active first).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "3m05s", "2h10m", "4d03h" */
static const char *age_text(uint64_t ms, char *buf, size_t len)
{
	uint64_t s = ms / 1000;

	if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s / 3600 % 24);
	return buf;
}

static void status_json(const struct sdfs_mds_status *st)
{
	printf("{\"active\": ");
	if (st->has_active)
		cli_json_str(stdout, st->active);
	else
		printf("null");
	printf(", \"addr\": ");
	if (st->has_active)
		cli_json_str(stdout, st->addr);
	else
		printf("null");
	printf(", \"epoch\": %" PRIu64 ", \"reachable\": %s, \"db_bytes\": %" PRIu64
	       ", \"db_files\": %" PRIu64 ", \"inodes\": %" PRIu64 ", \"ops\": %" PRIu64
	       ", \"active_ms\": %" PRIu64 ", \"subscribers\": %" PRIu64 ", \"leases\": %"
	       PRIu64 ", \"pushes\": %" PRIu64 ", \"push_timeouts\": %" PRIu64
	       ", \"lock_wakes\": %" PRIu64 ", \"strays\": %" PRIu64,
	       st->epoch, st->reachable ? "true" : "false", st->db_bytes, st->db_files,
	       st->inodes, st->ops, st->active_ms, st->subs, st->leases, st->pushes,
	       st->push_timeouts, st->lock_wakes, st->strays);
	printf(", \"ec_seals\": %" PRIu64 ", \"ec_unseals\": %" PRIu64
	       ", \"ec_sealed_bytes\": %" PRIu64 ", \"mds\": [", st->ec_seals,
	       st->ec_unseals, st->ec_sealed_bytes);
	for (size_t i = 0; i < st->n; i++) {
		printf("%s{\"name\": ", i ? ", " : "");
		cli_json_str(stdout, st->list[i].name);
		printf(", \"addr\": ");
		cli_json_str(stdout, st->list[i].addr);
		printf(", \"role\": \"%s\"}", st->list[i].active ? "active" : "standby");
	}
	printf("]}\n");
}

static void status_text(const struct sdfs_mds_status *st)
{
	char db[32], since[32], age[32];

	if (st->reachable) {
		time_t t = (time_t)(st->active_ms / 1000);
		uint64_t now = wall_ms();

		strftime(since, sizeof(since), "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("active    %s at %s, MDS epoch %" PRIu64 ", since %s (%s)\n",
		       st->active, st->addr, st->epoch, since,
		       age_text(now > st->active_ms ? now - st->active_ms : 0, age,
				sizeof(age)));
		printf("database  %s in %" PRIu64 " files, %" PRIu64 " inodes, %" PRIu64
		       " ops served\n", cli_human(st->db_bytes, db, sizeof(db)),
		       st->db_files, st->inodes, st->ops);
		printf("caches    %" PRIu64 " clients subscribed, %" PRIu64 " leases, %" PRIu64
		       " invalidations pushed (%" PRIu64 " waited out), %" PRIu64
		       " lock wake-ups\n", st->subs, st->leases, st->pushes,
		       st->push_timeouts, st->lock_wakes);
		printf("strays    %" PRIu64 " files without a name, kept while open\n",
		       st->strays);
		if (st->ec_seals || st->ec_unseals)
			printf("ec files  %" PRIu64 " sealed (%s), %" PRIu64 " unsealed\n",
			       st->ec_seals, cli_human(st->ec_sealed_bytes, db, sizeof(db)),
			       st->ec_unseals);
	} else {
		printf("active    %s at %s, MDS epoch %" PRIu64 " (not answering)\n",
		       st->active, st->addr, st->epoch);
	}
	printf("\n%-12s %-22s %s\n", "NAME", "ADDR", "ROLE");
	for (size_t i = 0; i < st->n; i++)
		printf("%-12s %-22s %s\n", st->list[i].name, st->list[i].addr,
		       st->list[i].active ? "active" : "standby");
}

static int mds_status(struct cli *cli, struct sdfs *s)
{
	struct sdfs_mds_status st;
	int ret;

	if (cli->argc != 1)
		return cli_usage("sdfs mds status [--json]");
	ret = sdfs_mds_status(s, &st);
	if (ret)
		return cli_fail("cannot read the mds state: %s", strerror(-ret));
	if (cli->json)
		status_json(&st);
	else if (st.has_active)
		status_text(&st);
	if (!st.has_active && cli->json)        /* the object says "active": null */
		ret = cli_fail_after_output("no active mds (%zu running%s)", st.n,
					    st.n ? ", none elected yet" : "; start sdfs-mds");
	else if (!st.has_active)
		ret = cli_fail("no active mds (%zu running%s)", st.n,
			       st.n ? ", none elected yet" : "; start sdfs-mds");
	free(st.list);
	return ret;
}

int cmd_mds(struct cli *cli)
{
	struct sdfs *s;
	int ret;

	if (cli->argc < 1)
		return cli_usage("sdfs mds status [--json]");
	if (strcmp(cli->argv[0], "status"))
		return cli_unknown("mds", cli->argv[0]);
	s = cli_open(cli);
	if (!s)
		return 1;
	ret = mds_status(cli, s);
	sdfs_close(s);
	return ret;
}
