/*
 * scrub_state.h - where the scrub (scrub.h) stands, kept in the data
 * dir's file `scrub_state` so a restarted daemon resumes its pass
 * instead of starting over, and knows when the last one ran.
 *
 * The file is text, one "name value" line per field (unknown names are
 * skipped, missing ones read as 0), replaced durably (datadir.h). Only
 * the scrub thread calls these; no locking here.
 */
#ifndef SDFS_BLOCKD_SCRUB_STATE_H
#define SDFS_BLOCKD_SCRUB_STATE_H
#include <stdint.h>

struct scrub_state {
	int in_pass;            /* a pass began and has not ended */
	int paused;             /* ... and `sdfs scrub stop` paused it */
	int has_cursor;         /* cursor is set: every oid <= it is done */
	uint64_t cursor;
	/* the pass in progress, else the last one */
	uint64_t objects, bytes, found, repaired, unrepaired;
	uint64_t compared;      /* peers' copies of the same version compared */
	uint64_t mismatched;    /* copies here that differed from the right one
				   (stale, or the odd one of one version) */
	uint64_t refreshed;     /* ... of those, replaced (recover_reconcile) */
	uint64_t pass_start_ms; /* unix ms; 0: never (the file was new) */
	/* since the file was made */
	uint64_t total_found, total_repaired, total_unrepaired, total_mismatched;
	uint64_t total_refreshed;
	uint64_t passes;        /* complete passes */
	uint64_t pass_end_ms;   /* the last complete pass ended, unix ms */
	uint64_t last_start_ms; /* ... and began: every object stored then was
				   verified after it (unless written since) */
	uint64_t created_ms;    /* the file was made (the schedule's start) */
	/* strip files (stripstore.h), walked once the objects are done:
	 * every oid up to strip_cursor in the strip store's order (scrub.c
	 * strip_key) is done; this pass's counts, and totals */
	int strip_phase;        /* the objects are done, the strips walked */
	int has_strip_cursor;
	uint64_t strip_cursor;
	uint64_t strips, strip_bytes, strips_found, strips_repaired, strips_unrepaired;
	uint64_t total_strips_found, total_strips_repaired, total_strips_unrepaired;
};

/* Read @dir/scrub_state into @st: 0, -ENOENT (no file: @st zeroed),
 * -EBADMSG (not this format; @st zeroed), -errno. */
int scrub_state_load(const char *dir, struct scrub_state *st);
/* Replace @dir/scrub_state with @st, durably. 0 or -errno. */
int scrub_state_save(const char *dir, const struct scrub_state *st);
#endif
