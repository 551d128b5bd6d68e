/*
 * progress.h - a one-line progress bar on stderr for commands that move
 * bytes (vol import/export/convert), redrawn in place at most every
 * 100 ms, only when stderr is a terminal:
 *
 *   import [########............]  42%  8.4 GiB/20.0 GiB  310 MiB/s  ETA 38s
 *   import 8.4 GiB  310 MiB/s                  (total unknown: a pipe)
 *
 * Not thread-safe: one progress line per command, from its thread.
 */
#ifndef SDFS_TOOLS_PROGRESS_H
#define SDFS_TOOLS_PROGRESS_H
#include <stdint.h>

struct progress {
	const char *what;       /* first word of the line; borrowed */
	uint64_t total;         /* bytes; 0: unknown */
	int64_t start_ms, shown_ms;
	int tty;                /* stderr is a terminal: draw */
	int drawn;              /* a line is on screen (needs its newline) */
};

/* Start counting now; draws nothing yet. */
void progress_init(struct progress *p, const char *what, uint64_t total);
/* @done bytes so far; redraws if 100 ms passed since the last draw. */
void progress_show(struct progress *p, uint64_t done);
/* The final state and its newline (if anything was drawn). */
void progress_end(struct progress *p, uint64_t done);
/* Before an error message: ends the line drawn, if any. */
void progress_abort(struct progress *p);
#endif
