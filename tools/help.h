/*
 * help.h - the sdfs command's usage text, in one table: `sdfs --help`
 * lists every command, `sdfs GROUP --help` a group's, `sdfs GROUP CMD
 * --help` one command's with its options.
 * Not here: the one-line usage a command prints for a bad command line
 * (each command keeps its own, cli_usage), parsing (sdfs.c, cmd_*.c).
 */
#ifndef SDFS_TOOLS_HELP_H
#define SDFS_TOOLS_HELP_H
#include <stdio.h>

/* The whole list with the global options: sdfs --help, sdfs help. */
void help_global(FILE *f);
/* Is @group a command group ("vol")? Is @cmd one of its commands
 * ("create"; "status" matches the entry "status|down")? */
int help_has_group(const char *group);
int help_has_cmd(const char *group, const char *cmd);
/*
 * The help of @group's command @cmd (NULL: the whole group) to @f.
 * 0, or -ENOENT (nothing printed) if there is no such group or command.
 */
int help_show(FILE *f, const char *group, const char *cmd);
#endif
