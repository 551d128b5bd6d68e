/*
 * csum.c - see csum.h.
 */
#include "common/csum.h"

#include <xxhash.h>
#include <xxh_x86dispatch.h>

uint64_t csum64(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

uint64_t csum64_seed(const void *buf, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(buf, len, seed);
}

uint64_t csum_zero_block(void)
{
	static const unsigned char zero[CSUM_BLOCK_SIZE];

	return XXH3_64bits(zero, sizeof(zero));
}
