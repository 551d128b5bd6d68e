/*
 * repair_test.c - a replica whose bytes rot on disk is caught by its
 * checksums, never served, and rewritten from a good replica by the
 * read that found it.
 *
 * The primary (first in placement order) is corrupted: reads try it
 * first, so the repair path surely runs.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/cluster/objfile.h"

#define COPIES 3
#define OID 0x5eed0001u
#define LEN (5 * 4096 + 1000)   /* five whole blocks and a partial one */

static struct tcluster *tc;
static unsigned char data[LEN];

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = COPIES, .copies = COPIES });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(repair, .init = up, .fini = down, .timeout = 120);

static void locate(struct sdfs_replica r[COPIES])
{
	size_t n;

	cr_assert_eq(sdfs_obj_locate(tcluster_client(tc), OID, r, COPIES, &n), 0);
	cr_assert_eq(n, COPIES);
}

/* Every replica present, checksum-valid and identical; returns the csum. */
static uint64_t assert_replicas_identical(const char *when)
{
	struct sdfs_replica r[COPIES];

	locate(r);
	for (int i = 0; i < COPIES; i++) {
		cr_assert_eq(r[i].result, 0, "%s: replica on node %u: %s", when, r[i].node_id,
			     strerror(-r[i].result));
		cr_assert_eq(r[i].size, LEN, "%s: replica on node %u has size %" PRIu64, when,
			     r[i].node_id, r[i].size);
		cr_assert_eq(r[i].csum, r[0].csum, "%s: replicas on nodes %u and %u differ",
			     when, r[0].node_id, r[i].node_id);
	}
	return r[0].csum;
}

static void put_object(void)
{
	tfill_random(data, sizeof(data), OID);
	cr_assert_eq(sdfs_obj_put(tcluster_client(tc), OID, data, sizeof(data)), 0);
}

static void assert_reads_original(void)
{
	static unsigned char out[LEN + 4096];

	cr_assert_eq(sdfs_obj_read(tcluster_client(tc), OID, out, sizeof(out), 0), LEN);
	cr_assert_arr_eq(out, data, LEN, "read returned other bytes than were written");
}

/* Corrupt the primary with @corrupt, then check detection and repair. */
static void primary_is_repaired(void (*corrupt)(const char *path), const char *what)
{
	struct sdfs_replica r[COPIES];
	uint64_t csum;
	char primary[32], *line;

	put_object();
	csum = assert_replicas_identical("after put");
	locate(r);
	cr_assert(tcluster_name_of_path(tc, r[0].path, primary, sizeof(primary)),
		  "replica path %s is not under %s", r[0].path, tcluster_dir(tc));
	cr_log_info("corrupting %s of the primary, %s: %s", what, primary, r[0].path);
	corrupt(r[0].path);

	locate(r);
	cr_assert_eq(r[0].result, -EBADMSG, "locate shows the corrupt primary as %d (%s)",
		     r[0].result, strerror(-r[0].result));
	for (int i = 1; i < COPIES; i++)
		cr_assert_eq(r[i].result, 0, "replica on node %u: %s", r[i].node_id,
			     strerror(-r[i].result));

	assert_reads_original();
	cr_assert_eq(assert_replicas_identical("after the read"), csum,
		     "the repaired replicas differ from the original");
	line = tcluster_log_line(tc, primary, "checksum mismatch", 5000);
	cr_assert(line, "%s did not log the checksum mismatch", primary);
	free(line);
	assert_reads_original();
}

static void flip_data_byte(const char *path)
{
	objfile_flip_data(path, 2 * 4096 + 77, 0x01);
}

static void flip_last_partial_block(const char *path)
{
	objfile_flip_data(path, LEN - 1, 0x80);
}

/* The block's {cur, prev} entry, half of it: the clean object no longer
 * agrees with itself. */
static void flip_table_entry(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	unsigned char b;
	off_t off = 4096 + 3 * 16 + 8 + 2;      /* block 3, prev, a byte of it */

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(pread(fd, &b, 1, off), 1);
	b ^= 0x10;
	cr_assert_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

Test(repair, corrupt_data_block_of_primary_is_rewritten_by_read)
{
	primary_is_repaired(flip_data_byte, "a data byte in block 2");
}

Test(repair, corrupt_partial_last_block_of_primary_is_rewritten_by_read)
{
	primary_is_repaired(flip_last_partial_block, "the last byte of the partial block");
}

Test(repair, corrupt_checksum_entry_of_primary_is_rewritten_by_read)
{
	primary_is_repaired(flip_table_entry, "the checksum entry of block 3");
}

Test(repair, read_fails_rather_than_return_bad_bytes_when_every_replica_is_corrupt)
{
	struct sdfs_replica r[COPIES];
	static unsigned char out[LEN];
	ssize_t got;

	put_object();
	locate(r);
	for (int i = 0; i < COPIES; i++)
		flip_data_byte(r[i].path);
	got = sdfs_obj_read(tcluster_client(tc), OID, out, sizeof(out), 0);
	cr_assert_eq(got, -EIO, "read of an object corrupt everywhere: %zd (%s)", got,
		     got < 0 ? strerror((int)-got) : "data returned");
	locate(r);
	for (int i = 0; i < COPIES; i++)
		cr_assert_eq(r[i].result, -EBADMSG, "replica on node %u: %d", r[i].node_id,
			     r[i].result);
}
