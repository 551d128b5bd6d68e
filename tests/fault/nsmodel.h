/*
 * nsmodel.h - a model of one writer's directory tree, for the tests of
 * the durability contract (docs/consistency.md "What is durable when";
 * ns_crash_test.c, ns_power_test.c).
 *
 * A writer owns one directory (its root). nsm_next picks a change that
 * is valid in the model's state (create, mkdir, rename of a file or a
 * directory, a rename over a file, unlink, rmdir), from a seeded
 * generator; the writer carries it out through a mount (nsm_do_posix)
 * or a libsdfs handle (nsm_do_sdfs) and, once acknowledged, applies it
 * to the model (nsm_apply). nsm_read reads what the namespace really
 * holds under the root, through libsdfs (no kernel cache), to compare
 * (nsm_equal, nsm_diff).
 *
 * Paths are relative to the root, at most two deep: "f12", "d3",
 * "d3/f40". Names are never reused within one model (a sequence
 * number), so a change that went missing cannot be mistaken for a later
 * one. Not thread-safe: one model per thread.
 */
#ifndef SDFS_TESTS_FAULT_NSMODEL_H
#define SDFS_TESTS_FAULT_NSMODEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libclient/sdfs.h"

#define NSM_PATH 48

struct nsm_ent {
	char path[NSM_PATH];
	bool dir;
};

struct nsm {
	struct nsm_ent *v;      /* sorted by path */
	size_t n, cap;
	uint64_t seq;           /* the next fresh name's number */
};

enum nsm_kind { NSM_CREATE, NSM_MKDIR, NSM_RENAME, NSM_UNLINK, NSM_RMDIR };

struct nsm_op {
	enum nsm_kind kind;
	char a[NSM_PATH];       /* the path acted on; a rename's source */
	char b[NSM_PATH];       /* a rename's target */
};

void nsm_init(struct nsm *m);
void nsm_free(struct nsm *m);
void nsm_copy(struct nsm *dst, const struct nsm *src);  /* dst: inited */

/* A change valid in @m's state, chosen with @rng; @m unchanged but for
 * its name sequence. */
void nsm_next(struct nsm *m, uint64_t *rng, struct nsm_op *op);
void nsm_apply(struct nsm *m, const struct nsm_op *op);
bool nsm_has(const struct nsm *m, const char *path);
bool nsm_equal(const struct nsm *a, const struct nsm *b);
/* The first few differences ("missing d3/f4", "extra f9") into @buf. */
void nsm_diff(const struct nsm *want, const struct nsm *got, char *buf,
	      size_t len);
const char *nsm_op_str(const struct nsm_op *op, char *buf, size_t len);

/* Carry out @op under directory @root (a path in a mount): 0 or -errno. */
int nsm_do_posix(const char *root, const struct nsm_op *op);
/* The same through libsdfs under the directory inode @root. */
int nsm_do_sdfs(struct sdfs *s, uint64_t root, const struct nsm_op *op);

/* What is under @root now, into @out (inited, emptied first): 0 or
 * -errno. */
int nsm_read(struct sdfs *s, uint64_t root, struct nsm *out);
/* Does @path exist under @root? 1, 0, or -errno. */
int nsm_exists(struct sdfs *s, uint64_t root, const char *path);
#endif
