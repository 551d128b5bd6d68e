/*
 * cli.h - what the sdfs subcommands share: global options, opening the
 * cluster, one-line errors, tables and JSON.
 *
 * Conventions every command keeps: results on stdout (a table, or JSON
 * with --json), a one-line reason on stderr and exit status 1 on
 * failure, 2 on bad usage.
 */
#ifndef SDFS_TOOLS_CLI_H
#define SDFS_TOOLS_CLI_H
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "libclient/sdfs.h"

struct cli {
	const char *conf;       /* -c FILE */
	int json;               /* --json */
	int verbose;            /* -v: library warnings to stderr */
	int argc;               /* the command's own arguments */
	char **argv;
};

/* Print "sdfs: <msg>" to stderr; returns 1 (the failure exit status). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print a usage line to stderr; returns 2. */
int cli_usage(const char *usage);
/* Route libsdfs messages to stderr (errors; everything with -v). */
void cli_log_init(const struct cli *cli);
/* Connect to the cluster named by -c / $SDFS_CONF / the default file.
 * On failure prints the reason and returns NULL. */
struct sdfs *cli_open(const struct cli *cli);

/* OIDs: "0x1f", "31" or 16 hex digits. -1 on bad input. */
int cli_parse_oid(const char *s, uint64_t *oid);
int cli_parse_u64(const char *s, uint64_t *out);
/* Sizes with an optional K/M/G suffix (powers of 1024). */
int cli_parse_size(const char *s, uint64_t *out);
/* "1.5 GiB" */
const char *cli_human(uint64_t bytes, char *buf, size_t len);

/* A JSON string literal with escapes. */
void cli_json_str(FILE *f, const char *s);
/* "2026-11-22 01:51:38", local time of @ns since 1970. */
const char *cli_time(int64_t ns, char *buf, size_t len);

/* Monotonic milliseconds, for rates and pacing. */
int64_t cli_mono_ms(void);
/* Read until @len bytes or the end of input (EINTR retried); the count,
 * or -errno. */
ssize_t cli_read_full(int fd, void *buf, size_t len);
/* Write all of @buf (EINTR retried); 0 or -errno. */
int cli_write_all(int fd, const void *buf, size_t len);
/* Are all @len bytes zero? (true for 0 bytes) */
int cli_is_zero(const void *buf, size_t len);

/* ---- namespace paths (absolute sdfs paths, "/a/b") ---- */
#define CLI_NAME_MAX 255        /* sdfs.h: names up to 255 bytes */
/* Is @path absolute? If not, says so ("sdfs: WHAT PATH: not an sdfs
 * path") and returns 0. */
int cli_path_ok(const char *what, const char *path);
/* @path's parent directory, resolved (symlinks followed), into *@dir,
 * and its last component into @name ("" for the root). 0 or -errno
 * (-ENOTDIR if the parent is not a directory). */
int cli_split_path(struct sdfs *s, const char *path, struct sdfs_stat *dir,
		   char name[CLI_NAME_MAX + 1]);
/* "sdfs: WHAT: reason" for a namespace call's @err (< 0); -EHOSTDOWN,
 * and -ETIMEDOUT with no active mds, say "no active mds". Returns 1. */
int cli_ns_fail(struct sdfs *s, const char *what, int err);

/* The option's value for "--name VALUE" at argv[*i], advancing *i;
 * NULL if argv[*i] is not that option. Exits with usage if missing. */
const char *cli_opt(int argc, char **argv, int *i, const char *name);

int cmd_cluster(struct cli *cli);
int cmd_node(struct cli *cli);
int cmd_obj(struct cli *cli);
int cmd_dev(struct cli *cli);
int cmd_fs(struct cli *cli);
int cmd_mds(struct cli *cli);
int cmd_vol(struct cli *cli);
int cmd_snap(struct cli *cli);
#endif
