/*
 * tproc.h - child programs of the fsx suite's tests (sdfs-fsx, dbench):
 * start one with its output in a log file, watch it, wait for it with
 * a deadline, show its log.
 *
 * A child gets SIGKILL when the test process dies (a criterion
 * timeout), so none outlives its test and its mount. Called from the
 * test's thread only.
 */
#ifndef SDFS_TESTS_FSX_TPROC_H
#define SDFS_TESTS_FSX_TPROC_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Start @argv (argv[0] a path) in @cwd (NULL: ours), stdin /dev/null,
 * stdout and stderr into @log (created or truncated). Returns its pid;
 * fails the test if it cannot. */
pid_t tproc_start(char *const argv[], const char *cwd, const char *log);
/* Has @pid ended? 1 and its status into *@status (the exit code,
 * 128 + signal if killed), else 0. Reaps it. */
int tproc_done(pid_t pid, int *status);
/* Wait until @pid ends or @deadline_ms (tnow_ms's clock) passes, then
 * SIGKILL it. Its status as tproc_done's, or -ETIMEDOUT. */
int tproc_wait(pid_t pid, int64_t deadline_ms);
/* The whole of @path, malloc'd and NUL terminated; NULL if unreadable. */
char *tproc_slurp(const char *path);
/* The last @max bytes of @log to stderr, under a header naming it. */
void tproc_dump(const char *log, size_t max);
/* The last line of @log starting with @prefix (malloc'd, without its
 * newline); NULL if none. */
char *tproc_last_line(const char *log, const char *prefix);
#endif
