/*
 * scrub_state.c - the scrub's state file (scrub_state.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "blockd/datadir.h"
#include "blockd/scrub_state.h"

#define STATE_FILE "scrub_state"

/* The fields, by name, as offsets of uint64_t or int members. */
#define U64(f) { #f, offsetof(struct scrub_state, f), 0 }
#define INT(f) { #f, offsetof(struct scrub_state, f), 1 }
static const struct field {
	const char *name;
	size_t off;
	int is_int;
} fields[] = {
	INT(in_pass), INT(paused), INT(has_cursor), U64(cursor),
	U64(objects), U64(bytes), U64(found), U64(repaired), U64(unrepaired),
	U64(pass_start_ms), U64(total_found), U64(total_repaired),
	U64(total_unrepaired), U64(passes), U64(pass_end_ms), U64(created_ms),
	U64(compared), U64(mismatched), U64(total_mismatched),
	U64(refreshed), U64(total_refreshed), U64(last_start_ms),
	INT(strip_phase), INT(has_strip_cursor), U64(strip_cursor), U64(strips),
	U64(strip_bytes), U64(strips_found), U64(strips_repaired),
	U64(strips_unrepaired), U64(total_strips_found), U64(total_strips_repaired),
	U64(total_strips_unrepaired),
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

int scrub_state_load(const char *dir, struct scrub_state *st)
{
	char buf[2048], *line, *save = NULL;
	int ret, known = 0;

	memset(st, 0, sizeof(*st));
	ret = datadir_read(dir, STATE_FILE, buf, sizeof(buf));
	if (ret)
		return ret;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[32];
		uint64_t v;

		if (sscanf(line, "%31s %" SCNu64, name, &v) != 2)
			goto bad;
		for (size_t i = 0; i < NFIELDS; i++) {
			if (strcmp(name, fields[i].name))
				continue;
			if (fields[i].is_int)
				*(int *)((char *)st + fields[i].off) = v != 0;
			else
				*(uint64_t *)((char *)st + fields[i].off) = v;
			known++;
		}
	}
	if (known)
		return 0;
bad:
	memset(st, 0, sizeof(*st));
	return -EBADMSG;
}

int scrub_state_save(const char *dir, const struct scrub_state *st)
{
	char buf[2048];
	size_t len = 0;

	for (size_t i = 0; i < NFIELDS; i++) {
		const char *p = (const char *)st + fields[i].off;
		uint64_t v = fields[i].is_int ? (uint64_t)*(const int *)p
					      : *(const uint64_t *)p;

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %" PRIu64 "\n",
					fields[i].name, v);
	}
	return datadir_write(dir, STATE_FILE, buf);
}
