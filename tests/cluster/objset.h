/*
 * objset.h - a set of test objects and what each must read back: the
 * content of its last acknowledged change, or nothing (never written,
 * or removed). For the recovery tests, which change objects while
 * nodes die, come back, join and leave, then check every one.
 *
 * Object ids, sizes and contents derive from one seed (the caller logs
 * it with tseed). The changing calls never assert, so a writer thread
 * may use them; the checks assert (call them from the test's thread).
 * One thread at a time per set.
 */
#ifndef SDFS_TESTS_CLUSTER_OBJSET_H
#define SDFS_TESTS_CLUSTER_OBJSET_H
#include <stddef.h>
#include <stdint.h>

#include "libclient/sdfs.h"

#define OBJSET_MAX_NODE 64      /* node ids counted by objset_check_replicas */

struct objset;

/* @n objects of at most @max_size bytes, none written yet. */
struct objset *objset_new(struct sdfs *s, unsigned n, uint32_t max_size, uint64_t seed);
void objset_free(struct objset *os);    /* NULL ok */

unsigned objset_count(const struct objset *os);
uint64_t objset_oid(const struct objset *os, unsigned i);
/* Does object @i exist (written and not removed since)? */
int objset_exists(const struct objset *os, unsigned i);
/* Its current content and size (NULL if it does not exist). */
const unsigned char *objset_data(const struct objset *os, unsigned i, size_t *size);

/*
 * Give object @i new random content: a whole-object put, or (if it
 * exists, one time in three) a write of a random range inside or just
 * past its end. Retried while it fails, until acknowledged or
 * @deadline_ms (tnow_ms) passes: the same bytes at the same place, so
 * a redo is harmless. 0, or the last error (the object's content is
 * then unknown: the caller should fail the test). Adds the failed
 * tries to *@retries (NULL ok).
 */
int objset_change(struct objset *os, unsigned i, int64_t deadline_ms, unsigned *retries);
/* Remove object @i, retried the same way. 0 or the last error. */
int objset_remove(struct objset *os, unsigned i, int64_t deadline_ms);

/* Every object reads back its content; one that does not exist reads
 * -ENOENT. Fails the test, naming @when. */
void objset_check_reads(struct objset *os, const char *when);
/*
 * Every existing object has exactly @copies placed replicas (locate),
 * on distinct up nodes, none of them @not_on (0: no such node), each
 * present and checksum-valid (blockd's STAT checks every block), all of
 * its size and with one checksum; every placed replica of one that
 * does not exist says -ENOENT. Counts the replicas on each node id into
 * @per_node[id] (NULL ok; ids up to OBJSET_MAX_NODE). Fails the test.
 */
void objset_check_replicas(struct objset *os, unsigned copies, uint32_t not_on,
			   uint64_t per_node[OBJSET_MAX_NODE + 1], const char *when);
/* The node ids placement gives object @i now, in order; their count. */
size_t objset_placement(struct objset *os, unsigned i, uint32_t *ids, size_t max);
#endif
