/*
 * sdfs.c - the sdfs command: global options, --help and --version, then
 * one command group.
 * Not here: the help text (help.c), the commands (cmd_*.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "tools/cli.h"
#include "tools/help.h"

static const struct {
	const char *name;
	int (*fn)(struct cli *cli);
} groups[] = {
	{ "auth", cmd_auth }, { "cluster", cmd_cluster }, { "node", cmd_node }, { "obj", cmd_obj },
	{ "dev", cmd_dev }, { "fs", cmd_fs }, { "mds", cmd_mds }, { "vol", cmd_vol },
	{ "snap", cmd_snap }, { "scrub", cmd_scrub },
};

static int dispatch(struct cli *cli, const char *group)
{
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (!strcmp(group, groups[i].name))
			return groups[i].fn(cli);
	return cli_bad("unknown command '%s'", group);
}

/* sdfs [GROUP [CMD]] --help, sdfs help [GROUP [CMD]]: to stdout, 0. */
static int show_help(char **words, int n)
{
	if (n == 0) {
		help_global(stdout);
		return 0;
	}
	if (!help_has_group(words[0]))
		return cli_bad("unknown command '%s'", words[0]);
	if (n > 1 && !help_has_cmd(words[0], words[1]))
		return cli_unknown(words[0], words[1]);
	help_show(stdout, words[0], n > 1 ? words[1] : NULL);
	return 0;
}

int main(int argc, char **argv)
{
	struct cli cli = { .cmd = "" };
	char **rest = calloc(argc + 1, sizeof(*rest)), **words, cmd[128];
	int n = 0, help = 0, version = 0, ret;

	if (!rest)
		return 1;
	/* Global options may stand anywhere before "--". */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				rest[n++] = argv[i++];
		} else if (!strcmp(argv[i], "--json")) {
			cli.json = 1;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			cli.verbose = 1;
		} else if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--conf")) {
			if (i + 1 >= argc) {
				free(rest);
				cli_init(&cli);
				return cli_usage("sdfs -c FILE ...");
			}
			cli.conf = argv[++i];
		} else if (!strcmp(argv[i], "--keyring")) {
			if (i + 1 >= argc) {
				free(rest);
				cli_init(&cli);
				return cli_usage("sdfs --keyring FILE ...");
			}
			cli.keyring = argv[++i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help = 1;
		} else if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			version = 1;
		} else {
			rest[n++] = argv[i];
		}
	}
	words = rest;
	if (n > 0 && !strcmp(words[0], "help")) {
		help = 1;
		words++;
		n--;
	}
	/* Hints name the command's own --help: "sdfs vol create --help". */
	if (n > 0 && help_has_group(words[0])) {
		if (n > 1 && help_has_cmd(words[0], words[1]))
			snprintf(cmd, sizeof(cmd), "%s %s", words[0], words[1]);
		else
			snprintf(cmd, sizeof(cmd), "%s", words[0]);
		cli.cmd = cmd;
	}
	cli_init(&cli);
	if (version) {
		printf("sdfs %s\n", SDFS_VERSION);
		ret = 0;
	} else if (help) {
		ret = show_help(words, n);
	} else if (n == 0) {
		ret = cli_usage("sdfs [-c FILE] [--keyring FILE] [--json] [-v] COMMAND ...");
	} else {
		cli.argc = n - 1;
		cli.argv = words + 1;
		ret = dispatch(&cli, words[0]);
	}
	free(rest);
	return ret;
}
