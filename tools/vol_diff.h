/*
 * vol_diff.h - the volume diff stream (docs/volumes.md "Diff stream"):
 * the chunks whose owner differs between two snapshots of a volume,
 * written by `sdfs vol export --from-snap A --snap B` and applied by
 * `sdfs vol import --diff`.
 *
 * A stream is a 256-byte header, then one 40-byte record header per
 * changed chunk (followed by the chunk's bytes for a data record), then
 * a 40-byte trailer. Integers are little-endian. Every record header
 * carries a checksum seeded with the previous one's (the first with the
 * stream header's), so a record that is changed, dropped, repeated or
 * moved fails at the record after it at the latest, and the trailer
 * closes the chain. The reader checks a record header before it reads
 * the data it announces and the data's checksum before it writes it.
 *
 * Not here: choosing and opening the volumes (vol_stream.c).
 * Single-threaded: a stream is written or read by one thread.
 */
#ifndef SDFS_TOOLS_VOL_DIFF_H
#define SDFS_TOOLS_VOL_DIFF_H
#include <stddef.h>
#include <stdint.h>

#include "libclient/sdfs.h"
#include "tools/progress.h"

#define VOL_DIFF_MAGIC     "SDFSDIFF"  /* 8 bytes at offset 0 */
#define VOL_DIFF_VERSION   1u
#define VOL_DIFF_HDR_SIZE  256u
#define VOL_DIFF_REC_SIZE  40u         /* a record header, and the trailer */
#define VOL_DIFF_REC_MAGIC 0x52444453u /* "SDDR" as a LE uint32 */
#define VOL_DIFF_END_MAGIC 0x54444453u /* "SDDT": the trailer */
#define VOL_DIFF_DATA      1u          /* record type: the chunk's bytes follow */
#define VOL_DIFF_ZERO      2u          /* record type: the chunk reads as zeros */

/* What a stream's header says. */
struct vol_diff_hdr {
	uint32_t obj_size;              /* bytes per chunk */
	uint64_t from_size, to_size;    /* bytes of snapshots A and B */
	uint64_t from_vid, to_vid;      /* for the reader's information */
	int64_t from_ctime_ns, to_ctime_ns;
	char from_name[65], to_name[65];/* snapshot names A and B */
	uint64_t csum;                  /* the header's checksum: the chain's seed */
};

/*
 * Write the diff from snapshot handle @from to @to (both of one volume
 * file, see sdfs_vol_open_snap) to @fd. 0 on success; on failure a
 * negative errno and the reason in @err. *@out_err is set when the
 * failure was writing to @fd (the reason then names the output).
 * @records and @bytes (NULL ok): records written and their data bytes.
 */
int vol_diff_write(struct sdfs_vol *from, struct sdfs_vol *to, int fd,
		   struct progress *p, uint64_t *records, uint64_t *bytes,
		   int *out_err, char *err, size_t errlen);

/*
 * Read a diff stream's header from @fd into @h. 0, or -EBADMSG
 * (not a diff stream, other version, bad checksum, impossible values)
 * or -errno from read, with the reason in @err.
 */
int vol_diff_read_hdr(int fd, struct vol_diff_hdr *h, char *err, size_t errlen);

/*
 * Read the records after the header @h (already read from @fd) to the
 * trailer and the end of input, checking each. With @v, apply each
 * record to it once checked (the caller has checked that @v is at
 * @h's "from" state and has resized it to to_size); without, only
 * check. 0, or -EBADMSG (a bad record, truncated stream, bytes after
 * the trailer), -errno from read, or the volume's error, with the
 * reason in @err. *@vol_err is set when the volume call failed.
 * *@records (NULL ok): the records read and checked (applied, with @v)
 * before the end or the failure.
 */
int vol_diff_apply(int fd, const struct vol_diff_hdr *h, struct sdfs_vol *v,
		   struct progress *p, uint64_t *records, int *vol_err,
		   char *err, size_t errlen);
#endif
