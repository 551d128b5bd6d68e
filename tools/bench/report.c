/*
 * report.c - see report.h. MB means 10^6 bytes, so MB/s reads the same
 * as fio's and dd's; sizes are binary (4 KiB, 4 MiB) as given.
 */
#include "tools/bench/report.h"

#include <inttypes.h>

#include "tools/cli.h"

static double mb_per_s(const struct phase_result *r, uint64_t size)
{
	return r->seconds > 0 ? (double)r->ops * (double)size / r->seconds / 1e6 : 0;
}

static double ops_per_s(const struct phase_result *r)
{
	return r->seconds > 0 ? (double)r->ops / r->seconds : 0;
}

static double ratio(const struct report_row *row)
{
	double local = mb_per_s(&row->local, row->size);

	return local > 0 ? mb_per_s(&row->sdfs, row->size) / local : 0;
}

static const char *size_label(uint64_t size, char *buf, size_t len)
{
	if (size >= (1u << 20) && size % (1u << 20) == 0)
		snprintf(buf, len, "%" PRIu64 " MiB", size >> 20);
	else if (size >= 1024 && size % 1024 == 0)
		snprintf(buf, len, "%" PRIu64 " KiB", size >> 10);
	else
		snprintf(buf, len, "%" PRIu64 " B", size);
	return buf;
}

/* "4 KiB x1 write+flush" */
static const char *row_label(const struct report_row *row, char *buf, size_t len)
{
	char size[32];

	snprintf(buf, len, "%-7s x%-2u %s", size_label(row->size, size, sizeof(size)),
		 row->threads, row->workload);
	return buf;
}

static void print_legend(FILE *f, const struct report_info *info)
{
	fprintf(f,
		"write        sdfs: sdfs_obj_write of a new object, acked once all %u\n"
		"             replicas have it in their page cache (survives a daemon crash)\n"
		"             local: create a file and write it, no sync (page cache)\n"
		"write+flush  sdfs: the same, then sdfs_obj_flush (fdatasync + directory\n"
		"             fsync on every replica: survives power loss)\n"
		"             local: the same, then fdatasync the file and fsync its directory\n"
		"read         read back what the write row wrote, whole objects, cycling;\n"
		"             page cache on both sides (the daemons' for sdfs): nothing\n"
		"             drops caches first, so this is network + daemon cost, not disk\n"
		"Each phase: %.1f s or %" PRIu64 " MiB, whichever comes first; sync(2) before\n"
		"each, so dirty data of the last phase is not written back during the next.\n"
		"%s"
		"MB/s is 10^6 bytes/s; sdfs/local is the ratio of MB/s.\n",
		info->copies, info->seconds, info->max_bytes >> 20,
		info->warmup ? "An unreported warm-up group (largest size, most threads) "
		"ran first.\n" : "No warm-up group (--no-warmup): the first rows may be slow.\n");
}

void report_table(FILE *f, const struct report_info *info,
		  const struct report_row *rows, size_t n)
{
	char label[64];

	fprintf(f, "sdfs-bench: copies=%u, %u of %u block daemons up; local dir %s\n\n",
		info->copies, info->nodes_up, info->nodes, info->local_dir);
	print_legend(f, info);
	fprintf(f, "\n%-26s %10s %9s %10s %9s %10s\n", "workload", "sdfs MB/s",
		"ops/s", "local MB/s", "ops/s", "sdfs/local");
	for (size_t i = 0; i < n; i++) {
		const struct report_row *r = &rows[i];

		fprintf(f, "%-26s %10.1f %9.0f %10.1f %9.0f %10.2f\n",
			row_label(r, label, sizeof(label)),
			mb_per_s(&r->sdfs, r->size), ops_per_s(&r->sdfs),
			mb_per_s(&r->local, r->size), ops_per_s(&r->local), ratio(r));
	}
	fprintf(f, "\n%-26s %10s %9s %10s %9s\n", "latency per op, ms", "sdfs p50",
		"p99", "local p50", "p99");
	for (size_t i = 0; i < n; i++) {
		const struct report_row *r = &rows[i];

		fprintf(f, "%-26s %10.3f %9.3f %10.3f %9.3f\n",
			row_label(r, label, sizeof(label)), r->sdfs.p50_ms,
			r->sdfs.p99_ms, r->local.p50_ms, r->local.p99_ms);
	}
}

static void json_result(FILE *f, const struct phase_result *r, uint64_t size)
{
	fprintf(f, "{\"ops\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"seconds\": %.4f, "
		"\"mb_s\": %.2f, \"ops_s\": %.1f, \"p50_ms\": %.4f, \"p99_ms\": %.4f}",
		r->ops, r->ops * size, r->seconds, mb_per_s(r, size), ops_per_s(r),
		r->p50_ms, r->p99_ms);
}

void report_json(FILE *f, const struct report_info *info,
		 const struct report_row *rows, size_t n)
{
	fprintf(f, "{\"copies\": %u, \"nodes\": %u, \"nodes_up\": %u, "
		"\"seconds_per_phase\": %.2f, \"max_bytes_per_phase\": %" PRIu64 ", "
		"\"warmup\": %s, \"local_dir\": ", info->copies, info->nodes,
		info->nodes_up, info->seconds, info->max_bytes,
		info->warmup ? "true" : "false");
	cli_json_str(f, info->local_dir);
	fprintf(f, ",\n \"rows\": [");
	for (size_t i = 0; i < n; i++) {
		const struct report_row *r = &rows[i];

		fprintf(f, "%s\n  {\"size\": %" PRIu64 ", \"threads\": %u, "
			"\"workload\": \"%s\", \"sdfs\": ", i ? "," : "", r->size,
			r->threads, r->workload);
		json_result(f, &r->sdfs, r->size);
		fprintf(f, ", \"local\": ");
		json_result(f, &r->local, r->size);
		fprintf(f, ", \"ratio\": %.4f}", ratio(r));
	}
	fprintf(f, "\n]}\n");
}

void report_progress(FILE *f, const struct report_row *row)
{
	char label[64];

	fprintf(f, "sdfs-bench: %s: sdfs %.1f MB/s, local %.1f MB/s\n",
		row_label(row, label, sizeof(label)), mb_per_s(&row->sdfs, row->size),
		mb_per_s(&row->local, row->size));
}
