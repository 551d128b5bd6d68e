/*
 * ec.h - the erasure-coding codec: k data strips -> m parity strips and
 * back, over isa-l's Reed-Solomon in GF(2^8), plus the object layout
 * (which bytes of an object go into which data strip).
 *
 * A code is made once per (k, m) and shared: ec_code_get() returns the
 * process's one copy, built on first use, never freed. Its generator is
 * isa-l's Cauchy matrix (gf_gen_cauchy1_matrix): the identity on top,
 * 1/(i ^ j) below. Every square submatrix of a Cauchy matrix with
 * distinct indices is invertible, so ANY k of the k + m strips rebuild
 * the rest; that holds while k + m <= 256 (row indices fit a byte). The
 * Vandermonde matrix (gf_gen_rs_matrix) has no such guarantee and is
 * not used. The limits below (1 <= k <= 16, 1 <= m <= 4, hence
 * k + m <= 20) are policy, not algebra: isa-l encodes up to 6 parity
 * rows per pass, and a stripe of k + m strips needs as many nodes;
 * ec_test.c decodes every erasure pattern of every allowed code.
 *
 * Strips are numbered 0..k-1 (data) and k..k+m-1 (parity); a mask of
 * strips has bit i for strip i. A strip is any length >= 1 byte, not
 * only multiples of isa-l's 32/64-byte vectors (ec_test.c checks 1 to
 * 65537 against a byte-by-byte reference), with no alignment needed;
 * ec_strip_len() gives the length the object layout uses.
 *
 * Not here: detecting a strip that is present but wrong. The codec
 * trusts every present strip; a corrupt one gives wrong rebuilt bytes,
 * silently. Checksums (csum.h, one per 4 KiB block) decide what is
 * present. Also not here: where strips live (placement), versions,
 * partial-stripe updates, the wire (docs/ec.md: the plan).
 *
 * Threads: everything here may be called from any thread at once. Codes
 * are immutable after ec_code_get() returns them, except the decode
 * table cache inside, which has its own lock. Encode and decode take
 * caller buffers and allocate nothing (ec_code_get allocates once).
 */
#ifndef SDFS_COMMON_EC_H
#define SDFS_COMMON_EC_H
#include <stddef.h>
#include <stdint.h>

#define EC_K_MAX        16u     /* data strips */
#define EC_M_MAX        4u      /* parity strips: strips that may be lost */
#define EC_STRIPS_MAX   20u     /* k + m */
#define EC_LEN_MAX      (1u << 30)      /* bytes per strip in one call */
#define EC_STRIP_ALIGN  4096u   /* object layout: strip lengths are multiples */

struct ec_code;                 /* opaque; see ec.c */

/*
 * The code for (@k, @m): 0 and *@out set, or -EINVAL (k or m out of the
 * limits above) or -ENOMEM (first use only; *@out untouched). The code
 * lives until the process exits: there is no put.
 */
int ec_code_get(unsigned k, unsigned m, const struct ec_code **out);
unsigned ec_code_k(const struct ec_code *c);
unsigned ec_code_m(const struct ec_code *c);

/*
 * Compute the m parity strips from the k data strips, each @len bytes.
 * @data[0..k-1] are read, @parity[0..m-1] are written (no overlap with
 * the data). Returns 0, or -EINVAL when len is 0 or above EC_LEN_MAX.
 * All-zero data gives all-zero parity (the code is linear).
 */
int ec_encode(const struct ec_code *c, size_t len,
	      const uint8_t *const data[], uint8_t *const parity[]);

/*
 * Rebuild the strips in @missing from the others, each @len bytes.
 * @strips[0..k+m-1] are all k + m strips by number. A strip not in
 * @missing is present and only read; ec_decode reads the first k
 * present strips in number order and never touches the others, so a
 * caller that fetched exactly k strips marks the rest missing. A strip
 * in @missing is written, or skipped when its pointer is NULL (a
 * degraded read that wants data strips only).
 *
 * Returns 0, or -EINVAL: len 0 or above EC_LEN_MAX, more than m strips
 * missing, or bits at or above k + m. A @missing of 0 is a no-op.
 *
 * The decode tables for a (missing, wanted) pattern are built once
 * (gf_invert_matrix of the k surviving rows, then ec_init_tables) and
 * kept in the code's cache: EC_DECODE_CACHE slots, allocated with the
 * code (at most 32 * k * m + k bytes each), a pattern takes the slot
 * its hash names and replaces what was there. Never -ENOMEM.
 */
#define EC_DECODE_CACHE 64u
int ec_decode(const struct ec_code *c, size_t len, uint32_t missing,
	      uint8_t *const strips[]);

/*
 * The object layout. An object of @size bytes is cut into k contiguous
 * pieces: data strip i holds bytes [i * strip_len, (i + 1) * strip_len)
 * of the object, and the last bytes past @size are zero. strip_len is
 * ceil(size / k) rounded up to a multiple of EC_STRIP_ALIGN (4 KiB, the
 * checksum block), so a 4 KiB-aligned read of the object touches whole
 * blocks of one strip. 0 for size 0 (an empty object has no strips).
 *
 * Strip sizes this gives: a 4 MiB object is 1 MiB strips at k = 4,
 * 512 KiB at k = 8, 256 KiB at k = 16; isa-l needs strips of 64 KiB
 * or more to run at full speed (docs/ec.md), i.e. objects of
 * k * 64 KiB or more. Smaller objects still work, only more slowly;
 * whether they should be EC at all is policy, not the codec's call.
 */
size_t ec_strip_len(size_t size, unsigned k);

/*
 * Copy the @size bytes of @obj into the k data strips of @strip_len
 * bytes each (zero-padding the tail), or back from the strips into
 * @obj. Returns 0, or -EINVAL when k is out of range or k * strip_len
 * cannot hold size (any strip_len that can is accepted, not only
 * ec_strip_len's).
 */
int ec_split(unsigned k, const void *obj, size_t size, size_t strip_len,
	     uint8_t *const data[]);
int ec_join(unsigned k, const uint8_t *const data[], size_t strip_len,
	    void *obj, size_t size);
#endif
