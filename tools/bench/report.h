/*
 * report.h - the benchmark's results as a table or as JSON: each row
 * pairs an sdfs phase with the local-directory phase it is compared to.
 *
 * Not here: running anything. Called from the main thread only.
 */
#ifndef SDFS_TOOLS_BENCH_REPORT_H
#define SDFS_TOOLS_BENCH_REPORT_H
#include <stdint.h>
#include <stdio.h>

#include "tools/bench/phase.h"

struct report_row {
	uint64_t size;          /* bytes per object */
	unsigned threads;
	const char *workload;   /* "write", "write+flush", "read" */
	struct phase_result sdfs, local;
};

struct report_info {
	unsigned copies, nodes, nodes_up;
	double seconds;         /* time limit per phase */
	uint64_t max_bytes;     /* byte limit per phase */
	const char *local_dir;
	int warmup;             /* an unreported group ran first */
};

void report_table(FILE *f, const struct report_info *info,
		  const struct report_row *rows, size_t n);
void report_json(FILE *f, const struct report_info *info,
		 const struct report_row *rows, size_t n);
/* One line for a finished row, for progress on a terminal. */
void report_progress(FILE *f, const struct report_row *row);
#endif
