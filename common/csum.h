/*
 * csum.h - XXH3-64 checksums for blocks, payloads and records.
 *
 * Inlined xxhash with runtime dispatch (xxh_x86dispatch.h): Debian's
 * shared libxxhash is a generic SSE2 build, several times slower.
 * XXH3 is stable since xxhash 0.8.0, so its values may go to disk.
 * Pure functions: safe from any thread.
 */
#ifndef SDFS_COMMON_CSUM_H
#define SDFS_COMMON_CSUM_H
#include <stddef.h>
#include <stdint.h>

#define CSUM_BLOCK_SIZE 4096u   /* blockd keeps one checksum per block */

uint64_t csum64(const void *buf, size_t len);
uint64_t csum64_seed(const void *buf, size_t len, uint64_t seed);
/* The checksum of CSUM_BLOCK_SIZE zero bytes, computed once. */
uint64_t csum_zero_block(void);
#endif
