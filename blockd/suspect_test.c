/*
 * suspect_test.c - the rules of suspect.h: when a marked member counts
 * as down, and when a block daemon may serve.
 */
#include <criterion/criterion.h>

#include "blockd/suspect.h"

static struct cmap *map3(int down2)
{
	struct cmap_node n[3] = { { .node_id = 1, .state = CMAP_UP },
				  { .node_id = 2, .state = CMAP_UP },
				  { .node_id = 3, .state = CMAP_UP } };
	struct cmap *m = NULL;

	if (down2)
		n[1].state = CMAP_DOWN;
	cr_assert_eq(cmap_new(7, n, 3, &m), 0);
	return m;
}

static const struct cmap_node mem3[3] = { { .node_id = 1 }, { .node_id = 2 },
					  { .node_id = 3 } };

Test(suspect, acked_marker_drops_at_once)
{
	struct cmap *m = map3(0);
	struct coord_suspect sus[1] = { { 2, 1, 0 } };
	struct suspect_seen seen[SUSPECT_SEEN_MAX];
	size_t nseen = 0;
	uint32_t drop[3];
	int pending;

	cr_assert_eq(suspect_decide(m, mem3, 3, sus, 1, seen, &nseen, 1000, 1500, 2,
				    drop, &pending), 1);
	cr_assert_eq(drop[0], 2);
	cr_assert_eq(pending, 0);
	cmap_free(m);
}

Test(suspect, unacked_marker_waits_from_first_sight)
{
	struct cmap *m = map3(0);
	struct coord_suspect sus[1] = { { 3, 0, 0 } };
	struct suspect_seen seen[SUSPECT_SEEN_MAX];
	size_t nseen = 0;
	uint32_t drop[3];
	int pending;

	cr_assert_eq(suspect_decide(m, mem3, 3, sus, 1, seen, &nseen, 1000, 1500, 2,
				    drop, &pending), 0);
	cr_assert_eq(pending, 1);
	cr_assert_eq(suspect_decide(m, mem3, 3, sus, 1, seen, &nseen, 2499, 1500, 2,
				    drop, &pending), 0);
	cr_assert_eq(pending, 1);
	cr_assert_eq(suspect_decide(m, mem3, 3, sus, 1, seen, &nseen, 2500, 1500, 2,
				    drop, &pending), 1);
	cr_assert_eq(drop[0], 3);
	cr_assert_eq(pending, 0);
	/* the marker goes, and comes again: a new wait */
	cr_assert_eq(suspect_decide(m, mem3, 3, NULL, 0, seen, &nseen, 3000, 1500, 2,
				    drop, &pending), 0);
	cr_assert_eq(nseen, 0);
	cr_assert_eq(suspect_decide(m, mem3, 3, sus, 1, seen, &nseen, 4000, 1500, 2,
				    drop, &pending), 0);
	cr_assert_eq(pending, 1);
	cmap_free(m);
}

Test(suspect, never_more_than_the_cap_and_down_ones_first)
{
	struct cmap *m = map3(1);
	struct coord_suspect sus[3] = { { 1, 1, 0 }, { 2, 1, 0 }, { 3, 1, 0 } };
	struct suspect_seen seen[SUSPECT_SEEN_MAX];
	size_t nseen = 0;
	uint32_t drop[3];
	int pending;

	cr_assert_eq(suspect_decide(m, mem3, 3, sus, 3, seen, &nseen, 0, 1500, 1,
				    drop, &pending), 1);
	cr_assert_eq(drop[0], 2, "the node down already keeps its place");
	cr_assert_eq(suspect_decide(m, mem3, 3, sus, 3, seen, &nseen, 0, 1500, 2,
				    drop, &pending), 2);
	cr_assert_eq(drop[0], 2);
	cr_assert_eq(drop[1], 1);
	cmap_free(m);
}

Test(suspect, marker_of_a_non_member_changes_nothing)
{
	struct cmap *m = map3(0);
	struct coord_suspect sus[1] = { { 3, 1, 0 } };
	struct suspect_seen seen[SUSPECT_SEEN_MAX];
	size_t nseen = 0;
	uint32_t drop[3];
	int pending;

	cr_assert_eq(suspect_decide(m, mem3, 2, sus, 1, seen, &nseen, 0, 1500, 2,
				    drop, &pending), 0);
	cr_assert_eq(pending, 0);
	cmap_free(m);
}

Test(lease, serves_only_within_the_lease_unmarked_and_on_the_newest_map)
{
	struct lease_view v = { .start_ms = 10000, .marked = 0, .map_version = 4 };

	cr_assert_eq(lease_decide(&v, 10999, 1000, 4, 1), SDFS_RES_OK);
	cr_assert_eq(lease_decide(&v, 11000, 1000, 4, 1), SDFS_RES_SHUTDOWN);
	cr_assert_eq(lease_decide(&v, 10500, 1000, 3, 1), SDFS_RES_OLD_EPOCH);
	cr_assert_eq(lease_decide(&v, 10500, 1000, 3, 0), SDFS_RES_OK,
		     "a request without an epoch does not wait for the map");
	v.marked = 1;
	cr_assert_eq(lease_decide(&v, 10001, 1000, 4, 1), SDFS_RES_SHUTDOWN);
	v.marked = 0;
	v.start_ms = 0;
	cr_assert_eq(lease_decide(&v, 1, 1000, 4, 0), SDFS_RES_SHUTDOWN, "no check yet");
}

Test(suspect, a_marked_node_down_in_the_map_stays_down_without_waiting)
{
	struct cmap *m = map3(1);
	struct coord_suspect sus[1] = { { 2, 0, 0 } };
	struct suspect_seen seen[SUSPECT_SEEN_MAX];
	size_t nseen = 0;
	uint32_t drop[3];
	int pending;

	cr_assert_eq(suspect_decide(m, mem3, 3, sus, 1, seen, &nseen, 1000, 1500, 2,
				    drop, &pending), 1, "another reconciler decided");
	cr_assert_eq(drop[0], 2);
	cr_assert_eq(pending, 0);
	cmap_free(m);
}

/* The limit on creating markers (coord_suspect.h): nodes 1..4 up, or
 * with @down_id down. */
static struct cmap *map4(uint32_t down_id, uint32_t out_id)
{
	struct cmap_node n[4] = { { .node_id = 1, .state = CMAP_UP, .weight = 100 },
				  { .node_id = 2, .state = CMAP_UP, .weight = 100 },
				  { .node_id = 3, .state = CMAP_UP, .weight = 100 },
				  { .node_id = 4, .state = CMAP_UP, .weight = 100 } };
	struct cmap *m = NULL;

	for (int i = 0; i < 4; i++) {
		if (n[i].node_id == down_id)
			n[i].state = CMAP_DOWN;
		if (n[i].node_id == out_id)
			n[i].state = CMAP_OUT;
	}
	cr_assert_eq(cmap_new(9, n, 4, &m), 0);
	return m;
}

Test(report_limit, at_most_copies_minus_one_markers)
{
	struct cmap *m = map4(0, 0);
	uint32_t one[1] = { 1 }, two[2] = { 1, 2 };

	cr_assert(suspect_may_report(m, NULL, 0, 3, 3));
	cr_assert(suspect_may_report(m, one, 1, 3, 3));
	cr_assert_not(suspect_may_report(m, two, 2, 3, 3),
		      "a third marker would stop every holder of a 3-copy object");
	cr_assert_not(suspect_may_report(m, one, 1, 3, 2));
	cr_assert(suspect_may_report(m, NULL, 0, 3, 2));
	cmap_free(m);
}

Test(report_limit, nodes_down_in_the_map_count)
{
	struct cmap *m = map4(2, 0);
	uint32_t one[1] = { 1 };

	cr_assert(suspect_may_report(m, NULL, 0, 3, 3));
	cr_assert_not(suspect_may_report(m, one, 1, 3, 3),
		      "node 2 is down already: 1 marked + 1 down = copies - 1");
	/* marked and down is one node, not two */
	uint32_t two[1] = { 2 };
	cr_assert(suspect_may_report(m, two, 1, 3, 3));
	/* the node reported down already: only the others count */
	cr_assert(suspect_may_report(m, one, 1, 2, 3));
	cmap_free(m);
}

Test(report_limit, unplaced_nodes_do_not_count_unknown_ones_do)
{
	struct cmap *m = map4(0, 2);
	uint32_t out_and_one[2] = { 2, 1 }, unknown[2] = { 1, 77 };

	cr_assert(suspect_may_report(m, out_and_one, 2, 3, 3),
		  "node 2 is out: it holds nothing placed");
	cr_assert_not(suspect_may_report(m, unknown, 2, 3, 3),
		      "a marked node not in the map yet may be placed soon");
	cmap_free(m);
}

Test(report_limit, never_for_a_single_copy_and_duplicates_count_once)
{
	struct cmap *m = map4(0, 0);
	uint32_t dup[2] = { 1, 1 };

	cr_assert_not(suspect_may_report(m, NULL, 0, 3, 1));
	cr_assert_not(suspect_may_report(m, NULL, 0, 3, 0));
	cr_assert(suspect_may_report(m, dup, 2, 3, 3));
	cr_assert(suspect_may_report(NULL, NULL, 0, 3, 3), "no map yet");
	cmap_free(m);
}
