/*
 * sdfs.c - the sdfs command: global options, then one command group.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static const char usage_text[] =
"usage: sdfs [-c FILE] [--json] [-v] COMMAND ...\n"
"\n"
"  cluster format --copies N [--obj-size SIZE] [--out-grace S] [--force]\n"
"                                  store the cluster config in ZooKeeper\n"
"  cluster status                  health, epoch, nodes, recovery progress\n"
"  cluster wait-healthy [--timeout S]\n"
"                                  wait until every object has all its copies\n"
"  node list                       every block daemon and its numbers\n"
"  node out ID                     a down node goes out now (no grace)\n"
"  node remove ID                  drain a node: its data moves off\n"
"  node add ID                     undo remove: the node is placed again\n"
"  node reweight ID WEIGHT         set a node's placement weight\n"
"  fs ls [-l] PATH                 a directory's entries\n"
"  fs stat PATH                    every attribute of PATH (a symlink itself)\n"
"  fs mkdir [-p] PATH              make a directory (-p: and its parents)\n"
"  fs rm [-r] PATH                 remove a file, link or empty directory\n"
"                                  (-r: a directory and all it holds)\n"
"  fs mv [--noreplace|--exchange] SRC DST\n"
"                                  rename (DST a directory: move into it)\n"
"  fs ln [-s] TARGET PATH          hard link (-s: symbolic link)\n"
"  fs put LOCAL PATH               copy a local file ('-': stdin) into sdfs\n"
"  fs cat PATH                     write a file to stdout\n"
"  vol create PATH SIZE [--copies N] [--obj-size SIZE]\n"
"                                  a new, empty (thin) volume file (VM disk)\n"
"  vol info PATH[@SNAP]            vid, size, copies, object size, snapshots\n"
"  vol import PATH [--size SIZE] [--copies N] [--obj-size SIZE] < IMAGE\n"
"                                  a raw image from stdin into a volume file\n"
"                                  (made if missing; zero chunks skipped)\n"
"  vol import --diff PATH < DIFF   apply a diff stream (vol export --from-snap)\n"
"  vol export PATH[@SNAP] > OUT    a volume or snapshot as a raw image\n"
"  vol export --from-snap A --snap B PATH > DIFF\n"
"                                  the chunks that changed from snapshot A to B\n"
"  vol convert PATH                make a plain file a volume file in place\n"
"  vol resize PATH SIZE [--shrink] grow (or, with --shrink, shrink) a volume\n"
"  vol clone PATH@SNAP NEWPATH     a new volume file starting as a snapshot\n"
"  vol tree PATH                   the volume's family: snapshots, clones,\n"
"                                  states waiting for reclaim\n"
"  snap create PATH NAME           snapshot a volume file (metadata only)\n"
"  snap list PATH                  its snapshots, oldest first\n"
"  snap rollback PATH NAME         make snapshot NAME the volume's data again\n"
"  snap delete PATH NAME           remove a snapshot (its data is reclaimed)\n"
"  mds status                      the active metadata server and standbys\n"
"  obj put OID FILE                store FILE ('-': stdin) as object OID\n"
"  obj get OID [FILE]              write object OID to FILE (default stdout)\n"
"  obj rm OID                      remove object OID\n"
"  obj stat OID                    size and epoch of object OID\n"
"  obj locate OID                  which nodes hold OID, and their paths\n"
"  dev up --dir DIR [--blockd N] [--mds N] [--no-mount] [--copies N]\n"
"         [--out-grace S] [--recovery-mbps N]\n"
"                                  start a local cluster under DIR (by\n"
"                                  default 3 blockd and 2 mds) and mount\n"
"                                  it at DIR/mnt (not with --no-mount)\n"
"  dev add --dir DIR [--zone N] [--weight W]\n"
"                                  start one more blockd in it\n"
"  dev status|down --dir DIR       show / stop what dev up started\n"
"  dev kill|start --dir DIR NAME   SIGKILL / restart one daemon (blockd.1,\n"
"                                  mds.0, zk, mnt: the mount; a kill also\n"
"                                  unmounts it)\n"
"\n"
"  -c FILE   cluster config (default: $SDFS_CONF, then /etc/sdfs/sdfs.conf)\n"
"  --json    machine-readable output\n"
"  -v        show the library's warnings and debug messages\n"
"OIDs are decimal, 0x-prefixed hex, or 16 hex digits. SIZEs take K, M, G\n"
"or T (powers of 1024): 10G, 512M. PATHs are absolute paths inside sdfs\n"
"(/a/b); the active sdfs-mds serves them. PATH@SNAP names a snapshot of a\n"
"volume file (docs/volumes.md). To mount the filesystem:\n"
"mount.sdfs CLUSTER MOUNTPOINT -o conf=FILE (docs/mount.md).\n";

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	char **rest = calloc(argc + 1, sizeof(*rest));
	int n = 0;

	if (!rest)
		return 1;
	/* Global options may stand anywhere. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			cli.json = 1;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			cli.verbose = 1;
		} else if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--conf")) {
			if (i + 1 >= argc)
				return cli_usage("sdfs -c FILE ...");
			cli.conf = argv[++i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else {
			rest[n++] = argv[i];
		}
	}
	if (n == 0) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (!strcmp(rest[0], "help")) {
		fputs(usage_text, stdout);
		free(rest);
		return 0;
	}
	cli_log_init(&cli);
	cli.argc = n - 1;
	cli.argv = rest + 1;
	int ret;
	if (!strcmp(rest[0], "cluster"))
		ret = cmd_cluster(&cli);
	else if (!strcmp(rest[0], "node"))
		ret = cmd_node(&cli);
	else if (!strcmp(rest[0], "obj"))
		ret = cmd_obj(&cli);
	else if (!strcmp(rest[0], "dev"))
		ret = cmd_dev(&cli);
	else if (!strcmp(rest[0], "fs"))
		ret = cmd_fs(&cli);
	else if (!strcmp(rest[0], "mds"))
		ret = cmd_mds(&cli);
	else if (!strcmp(rest[0], "vol"))
		ret = cmd_vol(&cli);
	else if (!strcmp(rest[0], "snap"))
		ret = cmd_snap(&cli);
	else
		ret = cli_fail("unknown command '%s' (see sdfs --help)", rest[0]);
	free(rest);
	return ret;
}
