/*
 * target.h - the operations the benchmark times, on sdfs objects and on
 * files in a local directory, each shaped as a phase_op_fn.
 *
 * Item i is object oid_base + i (sdfs) or the file named by i in hex
 * (local), always written whole from offset 0. Writes stamp the item
 * number into the first 8 bytes and reads check it, so a read of the
 * wrong object fails with -EBADMSG instead of counting as a success.
 * Not here: timing and threads (phase.h). The functions keep no state:
 * any number of threads may call them on one target.
 */
#ifndef SDFS_TOOLS_BENCH_TARGET_H
#define SDFS_TOOLS_BENCH_TARGET_H
#include <stddef.h>
#include <stdint.h>

#include "libclient/sdfs.h"

struct target {
	struct sdfs *s;         /* sdfs: the cluster (borrowed) */
	uint64_t oid_base;      /* sdfs: item i is object oid_base + i */
	int dir_fd;             /* local: the directory holding the files */
	uint64_t items;         /* reads: items 0 .. items-1 exist; op i
				 * reads item i % items */
};

/* sdfs_obj_write of the whole object: acked in every replica's page cache. */
int target_sdfs_write(const void *t, uint64_t idx, uint8_t *buf, size_t len);
/* The same, then sdfs_obj_flush: durable on every replica. */
int target_sdfs_write_flush(const void *t, uint64_t idx, uint8_t *buf, size_t len);
int target_sdfs_read(const void *t, uint64_t idx, uint8_t *buf, size_t len);
/* sdfs_obj_remove; an object that is not there counts as removed. */
int target_sdfs_remove(const void *t, uint64_t idx, uint8_t *buf, size_t len);

/* Create the file and write it, no sync: it stays in the page cache. */
int target_local_write(const void *t, uint64_t idx, uint8_t *buf, size_t len);
/* The same, then fdatasync the file and fsync the directory. */
int target_local_write_sync(const void *t, uint64_t idx, uint8_t *buf, size_t len);
int target_local_read(const void *t, uint64_t idx, uint8_t *buf, size_t len);
/* unlink; a missing file counts as removed. */
int target_local_remove(const void *t, uint64_t idx, uint8_t *buf, size_t len);
#endif
