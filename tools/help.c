/*
 * help.c - see help.h.
 *
 * One entry per line of `sdfs --help`: a synopsis (continuation lines
 * start with spaces), a summary for the list, and the details that
 * only `sdfs GROUP CMD --help` prints (options and their ranges).
 */
#include "tools/help.h"

#include <errno.h>
#include <string.h>

#define HELP_COL 34             /* the summaries' column in the list */

struct help_entry {
	const char *group;      /* "vol" */
	const char *cmds;       /* "create", or "status|down": one entry for two */
	const char *synopsis;   /* after "sdfs " */
	const char *summary;    /* lines of at most 44 columns */
	const char *details;    /* NULL: none */
};

static const struct help_entry entries[] = {
	{ "cluster", "format",
	  "cluster format --copies N [--obj-size SIZE] [--out-grace S] [--auth none]\n"
	  "  [--force]",
	  "store the cluster config in ZooKeeper; make\n"
	  "the cluster secret and the admin keyring",
	  "  --copies N        copies of every object, 1..16 (required); more than\n"
	  "                    the map's nodes is refused without --force\n"
	  "  --obj-size SIZE   object size, a multiple of 4K up to 64M (default 4M)\n"
	  "  --out-grace S     seconds a down node stays in before its data is\n"
	  "                    copied elsewhere, 1..86400 (default 30)\n"
	  "  --auth none       no keys: anyone who reaches the cluster may do\n"
	  "                    anything (benchmarks only; docs/security.md)\n"
	  "  --force           format a formatted cluster again (needs its admin\n"
	  "                    keyring): its data becomes unreachable; replace\n"
	  "                    the keyring file (and take more copies than nodes)\n"
	  "The admin keyring (client.admin, with the cluster secret) is written to\n"
	  "the config's keyring = FILE (or --keyring FILE), mode 0600.\n" },
	{ "cluster", "status", "cluster status",
	  "health, epoch, nodes, recovery progress", NULL },
	{ "cluster", "wait-healthy", "cluster wait-healthy [--timeout S]",
	  "wait until every object has all its copies",
	  "  --timeout S       give up after S seconds (exit 1), 0..604800\n"
	  "                    (default 300)\n" },
	{ "scrub", "status", "scrub status [--node N]",
	  "each node's scrub: progress, corrupt copies\nfound and repaired", NULL },
	{ "scrub", "start", "scrub start [--node N] [--rate SIZE]",
	  "start a scrub pass now (or resume a paused\none); admin key",
	  "  --node N          that node only (default: every up node)\n"
	  "  --rate SIZE       bytes/s for this pass, e.g. 10M (default: the\n"
	  "                    node's --scrub-mbps)\n" },
	{ "scrub", "stop", "scrub stop [--node N]",
	  "pause the running pass (start resumes it);\nadmin key", NULL },
	{ "auth", "add", "auth add NAME [--caps CAPS] [-o FILE]",
	  "a new key (default caps rw)",
	  "  NAME              client.alice, blockd.4, mds.b: [A-Za-z0-9._-]\n"
	  "  --caps CAPS       comma-separated: admin | daemon | ro | rw,\n"
	  "                    path=/a/b, root_squash, all_squash, anonuid=N,\n"
	  "                    anongid=N, uidmap=C:S[:N], gidmap=C:S[:N]\n"
	  "                    (default rw)\n"
	  "  -o FILE           write its keyring there too (mode 0600)\n" },
	{ "auth", "ls", "auth ls", "every key: name, caps, rotation deadline", NULL },
	{ "auth", "get", "auth get NAME [-o FILE]",
	  "a key's keyring (to FILE, mode 0600, or\nstdout)", NULL },
	{ "auth", "rm", "auth rm NAME", "remove a key: its connections are refused", NULL },
	{ "auth", "rotate", "auth rotate NAME [--grace S] [-o FILE]",
	  "a new key; the old one works until the\ngrace ends",
	  "  --grace S         seconds the old key stays valid, 0..2592000\n"
	  "                    (default 300)\n"
	  "  -o FILE           write the new keyring there (mode 0600); rotating\n"
	  "                    this keyring's own key rewrites this keyring\n" },
	{ "node", "list", "node list", "every block daemon, its numbers and its disk use\n"
	  "(also: node ls)", NULL },
	{ "node", "out", "node out ID", "a down node goes out now (no grace)", NULL },
	{ "node", "remove", "node remove ID", "drain a node: its data moves off",
	  "The node keeps serving while its data moves; stop it once sdfs node\n"
	  "list shows it holds 0 objects.\n" },
	{ "node", "add", "node add ID", "undo remove: the node is placed again", NULL },
	{ "node", "reweight", "node reweight ID WEIGHT", "set a node's placement weight",
	  "  WEIGHT            a whole number, at least 1 (default: the node's\n"
	  "                    capacity in GiB)\n" },
	{ "fs", "ls", "fs ls [-l] PATH", "a directory's entries",
	  "  -l                one line per entry with its attributes\n" },
	{ "fs", "stat", "fs stat PATH", "every attribute of PATH (a symlink itself)", NULL },
	{ "fs", "mkdir", "fs mkdir [-p] PATH", "make a directory (-p: and its parents)", NULL },
	{ "fs", "rm", "fs rm [-r] PATH", "remove a file, link or empty directory\n"
	  "(-r: a directory and all it holds)", NULL },
	{ "fs", "mv", "fs mv [--noreplace|--exchange] SRC DST",
	  "rename (DST a directory: move into it)",
	  "  --noreplace       fail if DST exists\n"
	  "  --exchange        swap SRC and DST (both must exist)\n" },
	{ "fs", "ln", "fs ln [-s] TARGET PATH", "hard link (-s: symbolic link)", NULL },
	{ "fs", "put", "fs put LOCAL PATH", "copy a local file ('-': stdin) into sdfs", NULL },
	{ "fs", "cat", "fs cat PATH", "write a file to stdout", NULL },
	{ "fs", "sync", "fs sync", "make every namespace change acknowledged so far durable (power-loss safe)", NULL },
	{ "fs", "setpolicy", "fs setpolicy DIR copies=N|default", "the copies of files, volumes and directories made in DIR from now on (root; docs/policy.md)", NULL },
	{ "vol", "create", "vol create PATH SIZE [--copies N|--policy POLICY [--force]] [--obj-size SIZE]",
	  "a new, empty (thin) volume file (VM disk)",
	  "  SIZE              the volume's size, more than 0: 10G, 512M\n"
	  "  --copies N        copies of its objects, 1..15 (default: the policy of\n"
	  "                    its directory, else the cluster's: docs/policy.md);\n"
	  "                    more than the map's nodes is refused without --force\n"
	  "  --policy POLICY   the same as copies=N, or default\n"
	  "  --obj-size SIZE   its object size, a power of 2 from 4K up to the\n"
	  "                    cluster's object size (default: the cluster's)\n" },
	{ "vol", "info", "vol info PATH[@SNAP]",
	  "vid, size, copies, object size, snapshots", NULL },
	{ "vol", "import",
	  "vol import PATH [--size SIZE] [--copies N [--force]] [--obj-size SIZE] < IMAGE",
	  "a raw image from stdin into a volume file\n"
	  "(made if missing; zero chunks skipped)",
	  "  --size SIZE       the volume's size if more than the image's\n"
	  "  --copies N [--force], --obj-size SIZE\n"
	  "                    of a new volume, as for vol create\n"
	  "An empty image is refused; nothing is made or changed then.\n" },
	{ "vol", "import", "vol import --diff PATH < DIFF",
	  "apply a diff stream (vol export --from-snap)",
	  "PATH must hold the diff's snapshot A (a clone of A, or A exported and\n"
	  "imported): the diff makes it B.\n" },
	{ "vol", "export", "vol export PATH[@SNAP] > OUT",
	  "a volume or snapshot as a raw image", NULL },
	{ "vol", "export", "vol export --from-snap A --snap B PATH > DIFF",
	  "the chunks that changed from snapshot A to B", NULL },
	{ "vol", "convert", "vol convert PATH", "make a plain file a volume file in place",
	  NULL },
	{ "vol", "resize", "vol resize PATH SIZE [--shrink]",
	  "grow (or, with --shrink, shrink) a volume",
	  "  SIZE              the new size, more than 0\n"
	  "  --shrink          allow a smaller size: the data past it is freed\n" },
	{ "vol", "clone", "vol clone PATH@SNAP NEWPATH",
	  "a new volume file starting as a snapshot", NULL },
	{ "vol", "tree", "vol tree PATH", "the volume's family: snapshots, clones,\n"
	  "states waiting for reclaim", NULL },
	{ "snap", "create", "snap create PATH NAME", "snapshot a volume file (metadata only)",
	  "  NAME              1 to 64 of A-Z a-z 0-9 . _ -\n" },
	{ "snap", "list", "snap list PATH", "its snapshots, oldest first", NULL },
	{ "snap", "rollback", "snap rollback PATH NAME",
	  "make snapshot NAME the volume's data again",
	  "PATH@NAME names the snapshot too.\n" },
	{ "snap", "delete", "snap delete PATH NAME",
	  "remove a snapshot (its data is reclaimed)",
	  "PATH@NAME names the snapshot too.\n" },
	{ "mds", "status", "mds status", "the active metadata server and standbys", NULL },
	{ "obj", "put", "obj put [--ec K+M] OID FILE", "store FILE ('-': stdin) as object OID",
	  "  --ec K+M   erasure-coded: K data + M parity strips on K+M nodes\n"
	  "             (docs/ec.md); a separate object from a replicated OID\n" },
	{ "obj", "get", "obj get [--ec K+M] OID [FILE]",
	  "write object OID to FILE (default stdout)",
	  "  --ec K+M   the erasure-coded object OID (rebuilt if strips are lost)\n" },
	{ "obj", "rm", "obj rm [--ec K+M] OID", "remove object OID",
	  "  --ec K+M   the erasure-coded object OID: a tombstone on its holders\n"
	  "             (a holder down gets it when back; docs/ec.md)\n" },
	{ "obj", "stat", "obj stat [--ec K+M] OID", "size and epoch of object OID",
	  "  --ec K+M   the erasure-coded object: size, version read, strips\n"
	  "             read and rebuilt\n" },
	{ "obj", "locate", "obj locate [--ec K+M] OID", "which nodes hold OID, and their paths",
	  "  --ec K+M   the holder of each strip, in strip order\n" },
	{ "dev", "up", "dev up --dir DIR [--blockd N] [--mds N] [--no-mount] [--copies N]\n"
	  "       [--out-grace S] [--recovery-mbps N] [--scrub-mbps N] [--netns]\n"
	  "       [--zk-servers N] [--auth none] [--cluster-net] [--set KEY=VALUE]",
	  "start a local cluster under DIR (by\n"
	  "default 3 blockd and 2 mds) and mount\n"
	  "it at DIR/mnt (not with --no-mount)",
	  "  --blockd N        block daemons, 0..32 (default 3; 0: only ZooKeeper)\n"
	  "  --mds N           metadata servers (default 2; 0 without blockd)\n"
	  "  --mounts N        mounts at DIR/mnt, DIR/mnt2... (default 1)\n"
	  "  --no-mount        no mount (as --mounts 0)\n"
	  "  --copies N        the cluster's copies, 1..16 (default: up to 3);\n"
	  "                    more than --blockd only with --force (degraded)\n"
	  "  --obj-size SIZE   the cluster's object size (default 4M)\n"
	  "  --out-grace S     as for cluster format (default 30)\n"
	  "  --recovery-mbps N the block daemons' recovery cap in MB/s\n"
	  "  --scrub-mbps N    the block daemons' scrub rate in MB/s (default:\n"
	  "                    sdfs.conf's scrub_mbps, else 50; docs/scrub.md)\n"
	  "  --netns           each daemon and mount in its own network namespace\n"
	  "                    on a bridge, 10.77.K.0/24 (root; docs/faults.md)\n"
	  "  --netns-delay-ms MS  tc netem delay on each link (default 1)\n"
	  "  --zk-servers N    ZooKeeper servers, 1, 3 or 5 (default 1): an\n"
	  "                    ensemble zk.1..zk.N, DIR/zk.K, all in sdfs.conf's zk\n"
	  "  --zk HOSTS --cluster NAME\n"
	  "                    use a running ZooKeeper instead of starting one\n"
	  "  --auth none       a new cluster without keys (benchmarks)\n"
	  "  --cluster-net     block daemon N also listens on 127.0.1.(N+1), its\n"
	  "                    cluster address: peers connect there (cluster_addr)\n"
	  "  --set KEY=VALUE   one more sdfs.conf line for every daemon and mount\n"
	  "                    (repeatable; kept by a later dev up without --set;\n"
	  "                    docs/config.md)\n"
	  "Keys: the admin keyring is DIR/keyring (sdfs.conf's keyring), each\n"
	  "daemon's and mount's DIR/keys/NAME.keyring (docs/operations.md).\n"
	  "Again on a DIR that was up: every daemon dev started there, dev add's\n"
	  "too, and as many ZooKeeper servers as before (another --zk-servers is\n"
	  "refused); they read ZooKeeper's address from DIR/sdfs.conf; the keys\n"
	  "the cluster still has are kept.\n" },
	{ "dev", "add", "dev add --dir DIR [--zone N] [--weight W]",
	  "start one more blockd in it", NULL },
	{ "dev", "status|down", "dev status|down --dir DIR",
	  "show / stop what dev up started", NULL },
	{ "dev", "kill|start", "dev kill|start --dir DIR NAME",
	  "SIGKILL / restart one daemon (blockd.1,\n"
	  "mds.0, zk, mnt: the mount; a kill also\n"
	  "unmounts it)",
	  "  NAME              blockd.N, mds.N, zk (zk.K of --zk-servers N), mnt\n"
	  "                    (the mount at DIR/mnt), or\n"
	  "                    mnt2.. (more mounts: dev up --mounts N)\n" },
};

#define NENTRIES (sizeof(entries) / sizeof(entries[0]))

static const char global_tail[] =
"\n"
"  -c FILE   cluster config (default: $SDFS_CONF, then /etc/sdfs/sdfs.conf)\n"
"  --keyring FILE  the key to use (default: $SDFS_KEYRING, then the\n"
"            config's keyring =)\n"
"  --json    machine-readable output; a failure prints {\"error\": ..., \"code\": N}\n"
"  -v        show the library's warnings and debug messages\n"
"  --version print the version\n"
"sdfs GROUP --help and sdfs GROUP COMMAND --help tell more. Exit status: 0\n"
"done, 1 failed, 2 bad command line. OIDs are decimal, 0x-prefixed hex, or\n"
"16 hex digits. SIZEs take K, M, G or T (powers of 1024): 10G, 512M. PATHs\n"
"are absolute paths inside sdfs (/a/b); the active sdfs-mds serves them.\n"
"PATH@SNAP names a snapshot of a volume file (docs/volumes.md). To mount\n"
"the filesystem: mount.sdfs CLUSTER MOUNTPOINT -o conf=FILE (docs/mount.md).\n";

static const char cmd_tail[] =
"\nGlobal options (-c FILE, --keyring FILE, --json, -v) and the forms of\n"
"OIDs, SIZEs and PATHs: sdfs --help.\n";

/* Is @word one of the '|'-separated words of @list? */
static int in_list(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p; p = strchr(p, '|'), p = p ? p + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == '|' || p[n] == '\0'))
			return 1;
	return 0;
}

/* @text's lines, each after @indent spaces but the first. */
static void put_lines(FILE *f, const char *text, int indent)
{
	for (const char *p = text; *p; p++) {
		fputc(*p, f);
		if (*p == '\n' && p[1])
			fprintf(f, "%*s", indent, "");
	}
}

/* The list form: "  SYNOPSIS   summary", or the summary under a
 * synopsis that does not leave room for it. */
static void put_entry(FILE *f, const struct help_entry *e)
{
	int len = (int)strlen(e->synopsis);

	fputs("  ", f);
	put_lines(f, e->synopsis, 2);
	if (!strchr(e->synopsis, '\n') && 2 + len < HELP_COL)
		fprintf(f, "%*s", HELP_COL - 2 - len, "");
	else
		fprintf(f, "\n%*s", HELP_COL, "");
	put_lines(f, e->summary, HELP_COL);
	fputc('\n', f);
}

void help_global(FILE *f)
{
	fputs("usage: sdfs [-c FILE] [--json] [-v] COMMAND ...\n\n", f);
	for (size_t i = 0; i < NENTRIES; i++)
		put_entry(f, &entries[i]);
	fputs(global_tail, f);
}

int help_has_group(const char *group)
{
	for (size_t i = 0; i < NENTRIES; i++)
		if (!strcmp(entries[i].group, group))
			return 1;
	return 0;
}

int help_has_cmd(const char *group, const char *cmd)
{
	for (size_t i = 0; i < NENTRIES; i++)
		if (!strcmp(entries[i].group, group) && in_list(entries[i].cmds, cmd))
			return 1;
	return 0;
}

static void show_group(FILE *f, const char *group)
{
	fprintf(f, "usage: sdfs %s COMMAND ...   (sdfs %s COMMAND --help: one "
		"command)\n\n", group, group);
	for (size_t i = 0; i < NENTRIES; i++)
		if (!strcmp(entries[i].group, group))
			put_entry(f, &entries[i]);
	fputs(cmd_tail, f);
}

/* "usage: sdfs SYNOPSIS" for each entry of the command, then the
 * summary and details of each. */
static void show_cmd(FILE *f, const char *group, const char *cmd)
{
	int n = 0;

	for (size_t i = 0; i < NENTRIES; i++) {
		if (strcmp(entries[i].group, group) || !in_list(entries[i].cmds, cmd))
			continue;
		fputs(n++ ? "       sdfs " : "usage: sdfs ", f);
		put_lines(f, entries[i].synopsis, 5);
		fputc('\n', f);
	}
	for (size_t i = 0; i < NENTRIES; i++) {
		const struct help_entry *e = &entries[i];

		if (strcmp(e->group, group) || !in_list(e->cmds, cmd))
			continue;
		fprintf(f, "\n%s.\n", e->summary);
		if (e->details)
			fputs(e->details, f);
	}
	fputs(cmd_tail, f);
}

int help_show(FILE *f, const char *group, const char *cmd)
{
	if (!help_has_group(group) || (cmd && !help_has_cmd(group, cmd)))
		return -ENOENT;
	if (cmd)
		show_cmd(f, group, cmd);
	else
		show_group(f, group);
	return 0;
}
