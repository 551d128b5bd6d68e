/*
 * objfile.h - the tests' own reader of a blockd object file, written
 * from the format (docs/format.md "blockd object files"; until that
 * lands, blockd/objstore.c): a 4096-byte area with the header, a table
 * of {cur, prev} XXH3-64 checksums per 4 KiB block padded to 4 KiB,
 * then the data at data_off = 4096 + roundup(max_obj_size / 4096 * 16,
 * 4096). Kept apart from objstore.c on purpose: a test that reused the
 * daemon's code would agree with its bugs.
 */
#ifndef SDFS_TESTS_CLUSTER_OBJFILE_H
#define SDFS_TESTS_CLUSTER_OBJFILE_H
#include <stddef.h>
#include <stdint.h>

#define OBJFILE_BLOCK 4096u
#define OBJFILE_F_DIRTY 0x1u
#define OBJFILE_F_BACKED 0x4u   /* reads absent blocks through a source */
/* With BACKED, flags bits 16..31 are the source tag's bits 32..47 (0
 * before 2.6); bit 31 of flags: the source is an EC stripe. */
#define OBJFILE_F_STRIPE 0x80000000u

struct objfile {
	int fd;
	uint32_t version, max_obj_size, flags;
	uint64_t oid, size, epoch;
	uint64_t data_off;
};

/* Open and check the header (magic, checksum); fails the test if bad. */
void objfile_open(const char *path, struct objfile *f);
void objfile_close(struct objfile *f);

/* Block @b's data (zeros past the end of a sparse file). */
void objfile_read_block(const struct objfile *f, uint64_t b, void *buf);
/* Block @b's table entry. */
void objfile_entry(const struct objfile *f, uint64_t b, uint64_t *cur,
		   uint64_t *prev);
/* Does block @b's data match its entry (either half while dirty)? */
int objfile_block_ok(const struct objfile *f, uint64_t b);

/* XOR @mask into the data byte at @off (object offset) on disk. */
void objfile_flip_data(const char *path, uint64_t off, uint8_t mask);
/* The same, and its block's table entry rewritten to match: a copy that
 * passes every check of its own but holds other bytes than its peers
 * (as a bug or a silent overwrite would leave it). Clean objects only. */
void objfile_rewrite_data(const char *path, uint64_t off, uint8_t mask);
#endif
