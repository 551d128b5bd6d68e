/*
 * cli.h - what the sdfs subcommands share: global options, opening the
 * cluster, one-line errors, tables and JSON.
 *
 * Conventions every command keeps: results on stdout (a table, or JSON
 * with --json), a one-line reason on stderr and exit status 1 on
 * failure, 2 on a bad command line (unknown command or option, missing
 * or extra words, a value that can never be valid). With --json a
 * failure also prints {"error": "<the reason>", "code": <exit status>}
 * on stdout, unless stdout carries data (an image, a file's bytes).
 */
#ifndef SDFS_TOOLS_CLI_H
#define SDFS_TOOLS_CLI_H
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "libclient/sdfs.h"

struct cli {
	const char *conf;       /* -c FILE */
	const char *keyring;    /* --keyring FILE; NULL: $SDFS_KEYRING, then
				   the config's keyring = */
	int json;               /* --json */
	int verbose;            /* -v: library warnings to stderr */
	int argc;               /* the command's own arguments */
	char **argv;
	const char *cmd;        /* "vol create", "vol", "": hints name its --help */
};

/* What the helpers below keep from @cli for the run: --json, the
 * command hints name; and libsdfs messages go to stderr (errors;
 * everything with -v). Once, after the global options. */
void cli_init(const struct cli *cli);
/* Print "sdfs: <msg>" to stderr (and the JSON above); returns 1. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A bad command line: "sdfs: <msg> (see sdfs CMD --help)"; returns 2. */
int cli_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "usage: <usage> (see sdfs CMD --help)" for missing or extra words;
 * returns 2. */
int cli_usage(const char *usage);
/* "sdfs: unknown command 'GROUP SUB' (see sdfs GROUP --help)"; 2. */
int cli_unknown(const char *group, const char *sub);
/* As cli_fail, for a command whose --json result is printed already
 * and tells the failure itself: the reason goes to stderr only. */
int cli_fail_after_output(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From here on stdout is the command's data: no JSON failure there. */
void cli_stdout_is_data(void);
/* Connect to the cluster named by -c / $SDFS_CONF / the default file.
 * On failure prints the reason and returns NULL. */
struct sdfs *cli_open(const struct cli *cli);

/*
 * Can the cluster's map hold @copies distinct copies (a node each)? 0 if
 * so, or if @force (a warning on stderr then), or if no node joined yet
 * (a note says how many it needs); else cli_fail's 1 with the reason,
 * naming the option @what ("--copies"). Health says degraded while
 * fewer placed nodes than copies are up (docs/operations.md).
 */
int cli_copies_fit(struct sdfs *s, const char *what, unsigned copies, int force);
/*
 * A redundancy policy argument (docs/policy.md): "copies=N" (1..15) or
 * "default" (the cluster's: 0) into *@copies. 0; or cli_fail's 1 with a
 * line naming @what: "ec=K+M" (not available yet) or anything else.
 */
int cli_policy_arg(const char *what, const char *arg, unsigned *copies);

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
 * path", a bad command line: exit status 2) and returns 0. */
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
 * NULL if argv[*i] is not that option. Exits 2 if the value is missing. */
const char *cli_opt(int argc, char **argv, int *i, const char *name);

int cmd_auth(struct cli *cli);
int cmd_cluster(struct cli *cli);
int cmd_node(struct cli *cli);
int cmd_obj(struct cli *cli);
int cmd_dev(struct cli *cli);
int cmd_fs(struct cli *cli);
int cmd_mds(struct cli *cli);
int cmd_vol(struct cli *cli);
int cmd_snap(struct cli *cli);
int cmd_scrub(struct cli *cli);
#endif
