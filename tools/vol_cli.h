/*
 * vol_cli.h - what the volume commands (sdfs vol, sdfs snap) share:
 * naming a volume file or one of its snapshots on the command line
 * ("PATH" or "PATH@SNAP"), opening it, and saying why a volume call
 * failed in one line.
 * Not here: the commands themselves (cmd_vol.c, cmd_snap.c,
 * vol_stream.c, vol_diff.c).
 */
#ifndef SDFS_TOOLS_VOL_CLI_H
#define SDFS_TOOLS_VOL_CLI_H
#include <stdint.h>

#include "tools/cli.h"

#define VOL_CLI_SNAP_MAX 64     /* bytes of a snapshot name (sdfs_proto.h) */
#define VOL_CLI_PATH_MAX 4096

#define VOL_T_SNAP   0x1        /* "PATH@SNAP" names a snapshot */
#define VOL_T_VOLUME 0x2        /* must be a volume file */

/* A volume file (or a snapshot of it) named by a command's argument. */
struct vol_target {
	const char *arg;                /* as given; borrowed */
	char path[VOL_CLI_PATH_MAX];    /* without "@SNAP" */
	char snap[VOL_CLI_SNAP_MAX + 1];/* "": the live state */
	struct sdfs_stat st;            /* the file, symlinks followed */
};

/*
 * Resolve @arg for command @what ("vol info"). With VOL_T_SNAP, a last
 * component "NAME@SNAP" that does not exist as a file names snapshot
 * SNAP of NAME. On failure prints the reason ("sdfs: vol info /x: not a
 * volume file ...") and returns the exit status (1; 2 for a relative
 * path or a bad snapshot name); 0 on success.
 */
int vol_cli_target(struct sdfs *s, const char *what, const char *arg,
		   unsigned flags, struct vol_target *t);
/* Is @name a valid snapshot name ([A-Za-z0-9._-], 1..64 bytes, not "."
 * or "..")? If not, says so for @what (cli_bad: exit status 2) and
 * returns 0. */
int vol_cli_snap_ok(const char *what, const char *name);
/* sdfs_vol_open_snap if @t names a snapshot, else sdfs_vol_open(@flags). */
int vol_cli_open(struct sdfs *s, const struct vol_target *t, unsigned flags,
		 struct sdfs_vol **out);
/*
 * The one-line reason for a volume call's @err about @t (NULL: @arg
 * alone): a snapshot that does not exist, a volume open for writing
 * elsewhere, a file that is not a volume, no active mds... Returns 1.
 */
int vol_cli_fail(struct sdfs *s, const char *what, const struct vol_target *t,
		 const char *arg, int err);
/* --copies N (1..15: what a volume oid can say) and --obj-size SIZE
 * (a power of 2 from 4 KiB; the mds refuses more than the cluster's)
 * of a new volume; on bad input says so and returns 2, else 0. */
#define VOL_CLI_COPIES_MAX 15
int vol_cli_copies_arg(const char *v, unsigned *copies);
int vol_cli_obj_size_arg(const char *v, uint32_t *obj_size);
/* Can a volume of @obj_size-byte objects (0: the cluster's) hold @size
 * bytes? If not, says so for "@what @path" and returns 1; else 0. */
int vol_cli_size_fits(struct sdfs *s, const char *what, const char *path,
		      uint64_t size, uint32_t obj_size);
/* ---- subcommand tables (sdfs vol ..., sdfs snap ...) ---- */
#define VOL_ARGS_MAX 6

/* A subcommand's words: its options' values, then positional ones. */
struct vol_args {
	const char *val[VOL_ARGS_MAX];  /* option i's value; flags: "" if given */
	const char *pos[3];
	int npos;
};

struct vol_cmd {
	const char *name;
	/* "--copies=" takes a value, "--shrink" is a flag; NULL-terminated */
	const char *opts[VOL_ARGS_MAX + 1];
	int min, max;                   /* positional arguments */
	const char *usage;
	int (*fn)(struct cli *cli, struct sdfs *s, const struct vol_args *a);
};

/* Find @cli's subcommand in @cmds, parse its words (usage error: exit
 * 2 before connecting), connect and run it. @group: "vol", "snap". */
int vol_cli_run(struct cli *cli, const char *group, const char *group_usage,
		const struct vol_cmd *cmds, size_t n);

/* The vol subcommands that move data (vol_stream.c). */
int vol_stream_import(struct cli *cli, struct sdfs *s, const struct vol_args *a);
int vol_stream_export(struct cli *cli, struct sdfs *s, const struct vol_args *a);
/* "live", "snapshot", "deleted", "pending" */
const char *vol_cli_state(unsigned state);
/* Effective copies: @copies, or the cluster's when 0. */
unsigned vol_cli_copies(struct sdfs *s, unsigned copies);
#endif
