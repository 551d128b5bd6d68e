/*
 * ec_test.c - unit tests for ec.c: encode against a reference, decode
 * of random and of every erasure pattern, argument checks, odd strip
 * lengths, skipped outputs, the object layout, and decodes from several
 * threads on one code.
 *
 * The reference (ref_parity) builds the Cauchy rows 1/(i ^ j) itself
 * with gf_inv and multiplies byte by byte with gf_mul, so it checks
 * that parity is exactly the code ec.h names (parity goes to disk: the
 * bytes must never change) without going through ec_encode_data.
 * Not here: speed (tools/bench/ecbench.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <isa-l/erasure_code.h>

#include "common/ec.h"

static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return XXH3_64bits(s, sizeof(*s));
}

static void fill_random(uint8_t *p, size_t len, uint64_t *s)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng_next(s);
}

/* k + m strips of @len bytes in one allocation; strips[i] points at each. */
struct stripe {
	unsigned k, m;
	size_t len;
	uint8_t *buf;
	uint8_t *strips[EC_STRIPS_MAX];
};

static void stripe_init(struct stripe *st, unsigned k, unsigned m, size_t len)
{
	st->k = k;
	st->m = m;
	st->len = len;
	st->buf = malloc((k + m) * len);
	cr_assert_not_null(st->buf);
	for (unsigned i = 0; i < k + m; i++)
		st->strips[i] = st->buf + i * len;
}

static void stripe_encode(const struct ec_code *c, struct stripe *st)
{
	cr_assert_eq(ec_encode(c, st->len, (const uint8_t *const *)st->strips,
			       &st->strips[st->k]), 0);
}

static void ref_parity(unsigned k, unsigned m, size_t len,
		       uint8_t *const data[], uint8_t *out /* m * len */)
{
	for (unsigned p = 0; p < m; p++)
		for (size_t b = 0; b < len; b++) {
			uint8_t s = 0;

			for (unsigned j = 0; j < k; j++)
				s ^= gf_mul(gf_inv((uint8_t)((k + p) ^ j)), data[j][b]);
			out[p * len + b] = s;
		}
}

static const struct ec_code *code(unsigned k, unsigned m)
{
	const struct ec_code *c = NULL;

	cr_assert_eq(ec_code_get(k, m, &c), 0, "ec_code_get(%u, %u)", k, m);
	cr_assert_not_null(c);
	return c;
}

/*
 * A stripe of random data encoded with @c, its parity checked against
 * the reference Cauchy code; returns a copy of all k+m strips (the
 * bytes every decode must give back), freed by the caller with st->buf.
 */
static uint8_t *encoded_stripe(const struct ec_code *c, struct stripe *st, unsigned k,
			       unsigned m, size_t len, uint64_t *seed)
{
	uint8_t *ref = malloc(m * len), *want = malloc((k + m) * len);

	cr_assert(ref && want);
	stripe_init(st, k, m, len);
	fill_random(st->buf, k * len, seed);
	stripe_encode(c, st);
	ref_parity(k, m, len, st->strips, ref);
	cr_assert_eq(memcmp(st->strips[k], ref, m * len), 0,
		     "k=%u m=%u len=%zu: parity is not the Cauchy code", k, m, len);
	memcpy(want, st->buf, (k + m) * len);
	free(ref);
	return want;
}

/*
 * Wipe the strips in @missing (so a decode that does nothing fails),
 * decode, and compare every strip with @want, byte for byte.
 */
static void erase_and_check(const struct ec_code *c, struct stripe *st,
			    const uint8_t *want, uint32_t missing)
{
	unsigned n = st->k + st->m;

	for (unsigned i = 0; i < n; i++)
		if (missing & (1u << i))
			memset(st->strips[i], 0xa5, st->len);
	cr_assert_eq(ec_decode(c, st->len, missing, st->strips), 0,
		     "k=%u m=%u missing=%#x", st->k, st->m, missing);
	cr_assert_eq(memcmp(st->buf, want, n * st->len), 0,
		     "k=%u m=%u len=%zu missing=%#x: rebuilt bytes differ",
		     st->k, st->m, st->len, missing);
}

static uint32_t random_pattern(unsigned n, unsigned nmiss, uint64_t *s)
{
	uint32_t mask = 0;

	while ((unsigned)__builtin_popcount(mask) < nmiss)
		mask |= 1u << (rng_next(s) % n);
	return mask;
}

Test(ec, code_limits_and_sharing)
{
	const struct ec_code *c = NULL, *again = NULL;

	cr_assert_eq(ec_code_get(0, 1, &c), -EINVAL);
	cr_assert_eq(ec_code_get(1, 0, &c), -EINVAL);
	cr_assert_eq(ec_code_get(EC_K_MAX + 1, 1, &c), -EINVAL);
	cr_assert_eq(ec_code_get(4, EC_M_MAX + 1, &c), -EINVAL);
	cr_assert_null(c, "a failed get leaves *out alone");
	cr_assert_eq(ec_code_get(EC_K_MAX, EC_M_MAX, &c), 0);
	cr_assert_eq(ec_code_k(c), EC_K_MAX);
	cr_assert_eq(ec_code_m(c), EC_M_MAX);
	cr_assert_eq(ec_code_get(EC_K_MAX, EC_M_MAX, &again), 0);
	cr_assert_eq(c, again, "one code per (k, m)");
	cr_assert_eq(ec_code_get(4, 2, &again), 0);
	cr_assert_neq(c, again);
}

static const unsigned km[][2] = {
	{ 1, 1 }, { 2, 1 }, { 2, 2 }, { 3, 2 }, { 4, 1 }, { 4, 2 }, { 5, 3 },
	{ 6, 3 }, { 8, 3 }, { 8, 4 }, { 10, 4 }, { 12, 4 }, { 16, 1 }, { 16, 4 },
};

Test(ec, encode_matches_reference_and_decode_random_patterns)
{
	uint64_t seed = 19;

	for (size_t t = 0; t < sizeof(km) / sizeof(km[0]); t++) {
		unsigned k = km[t][0], m = km[t][1], n = k + m;
		const struct ec_code *c = code(k, m);
		struct stripe st;
		uint8_t *want = encoded_stripe(c, &st, k, m, 3 * EC_STRIP_ALIGN, &seed);

		for (unsigned nmiss = 1; nmiss <= m; nmiss++)
			for (int r = 0; r < 40; r++)
				erase_and_check(c, &st, want,
						random_pattern(n, nmiss, &seed));
		/* Data only, as many as may be lost: the hardest case. */
		uint32_t lead = (1u << (m < k ? m : k)) - 1;

		erase_and_check(c, &st, want, lead);
		erase_and_check(c, &st, want, lead << (k - (m < k ? m : k)));
		/* Parity only: a rebuild of what a lost parity node held. */
		erase_and_check(c, &st, want, ((1u << m) - 1) << k);
		free(want);
		free(st.buf);
	}
}

/*
 * Every allowed code, every set of exactly m lost strips: each set of k
 * survivors occurs once, so this is every decode matrix the codec can
 * ever invert (ec_decode uses the first k present strips). Short
 * strips keep it to about 26 000 decodes.
 */
Test(ec, every_pattern_of_every_code_decodes, .timeout = 120)
{
	uint64_t seed = 20;

	for (unsigned k = 1; k <= EC_K_MAX; k++)
		for (unsigned m = 1; m <= EC_M_MAX; m++) {
			const struct ec_code *c = code(k, m);
			unsigned n = k + m;
			struct stripe st;
			uint8_t want[EC_STRIPS_MAX * 64];

			stripe_init(&st, k, m, 64);
			fill_random(st.buf, k * st.len, &seed);
			stripe_encode(c, &st);
			memcpy(want, st.buf, n * st.len);
			for (uint32_t mask = 0; mask < (1u << n); mask++)
				if ((unsigned)__builtin_popcount(mask) == m)
					erase_and_check(c, &st, want, mask);
			free(st.buf);
		}
}

Test(ec, rejects_bad_arguments)
{
	const struct ec_code *c = code(4, 2);
	struct stripe st;

	stripe_init(&st, 4, 2, 4096);
	memset(st.buf, 1, 6 * 4096);
	cr_assert_eq(ec_encode(c, 0, (const uint8_t *const *)st.strips, &st.strips[4]), -EINVAL);
	cr_assert_eq(ec_encode(c, (size_t)EC_LEN_MAX + 1,
			       (const uint8_t *const *)st.strips, &st.strips[4]), -EINVAL);
	cr_assert_eq(ec_decode(c, 4096, 0x7, st.strips), -EINVAL, "3 missing, m = 2");
	cr_assert_eq(ec_decode(c, 4096, 0x3f, st.strips), -EINVAL, "all missing");
	cr_assert_eq(ec_decode(c, 4096, 1u << 6, st.strips), -EINVAL, "no strip 6");
	cr_assert_eq(ec_decode(c, 0, 0x1, st.strips), -EINVAL);
	cr_assert_eq(ec_decode(c, 4096, 0, st.strips), 0, "nothing missing");
	for (size_t i = 0; i < 6 * 4096; i++)
		cr_assert_eq(st.buf[i], 1, "a rejected call wrote nothing");
	free(st.buf);
}

Test(ec, zero_data_gives_zero_parity)
{
	for (size_t t = 0; t < sizeof(km) / sizeof(km[0]); t++) {
		unsigned k = km[t][0], m = km[t][1];
		struct stripe st;

		stripe_init(&st, k, m, 65536);
		memset(st.strips[0], 0, k * st.len);
		memset(st.strips[k], 0xff, m * st.len);
		stripe_encode(code(k, m), &st);
		for (size_t i = 0; i < m * st.len; i++)
			cr_assert_eq(st.strips[k][i], 0, "k=%u m=%u byte %zu", k, m, i);
		free(st.buf);
	}
}

/* ec.h: any length >= 1 works, not only multiples of 32 or 64. */
Test(ec, odd_strip_lengths)
{
	static const size_t lens[] = { 1, 2, 15, 16, 31, 32, 33, 63, 64, 65, 100,
				       127, 129, 4095, 4097, 65537 };
	uint64_t seed = 21;

	for (size_t t = 0; t < sizeof(lens) / sizeof(lens[0]); t++)
		for (unsigned m = 1; m <= EC_M_MAX; m++) {
			unsigned k = 5, n = k + m;
			const struct ec_code *c = code(k, m);
			struct stripe st;
			uint8_t *want = encoded_stripe(c, &st, k, m, lens[t], &seed);

			for (int r = 0; r < 8; r++)
				erase_and_check(c, &st, want,
						random_pattern(n, 1 + r % m, &seed));
			free(want);
			free(st.buf);
		}
}

Test(ec, null_output_is_skipped)
{
	const struct ec_code *c = code(4, 2);
	struct stripe st;
	uint64_t seed = 22;
	uint8_t *want;

	stripe_init(&st, 4, 2, 8192);
	fill_random(st.buf, 4 * st.len, &seed);
	stripe_encode(c, &st);
	want = malloc(6 * st.len);
	cr_assert_not_null(want);
	memcpy(want, st.buf, 6 * st.len);

	/* Data strip 1 and parity strip 4 lost; a degraded read wants 1 only. */
	uint8_t *parity4 = st.strips[4];

	memset(st.strips[1], 0, st.len);
	memset(parity4, 0x5a, st.len);
	st.strips[4] = NULL;
	cr_assert_eq(ec_decode(c, st.len, (1u << 1) | (1u << 4), st.strips), 0);
	cr_assert_eq(memcmp(st.strips[1], want + 1 * st.len, st.len), 0);
	for (size_t i = 0; i < st.len; i++)
		cr_assert_eq(parity4[i], 0x5a, "a skipped strip is not written");

	/* Same lost strips, both wanted now: a different cached pattern. */
	st.strips[4] = parity4;
	erase_and_check(c, &st, want, (1u << 1) | (1u << 4));
	free(want);
	free(st.buf);
}

Test(ec, strip_len_rule)
{
	cr_assert_eq(ec_strip_len(0, 4), 0);
	cr_assert_eq(ec_strip_len(1, 4), 4096);
	cr_assert_eq(ec_strip_len(4096 * 4, 4), 4096);
	cr_assert_eq(ec_strip_len(4096 * 4 + 1, 4), 8192);
	cr_assert_eq(ec_strip_len(4u << 20, 2), 2u << 20);
	cr_assert_eq(ec_strip_len(4u << 20, 4), 1u << 20);
	cr_assert_eq(ec_strip_len(4u << 20, 8), 512u << 10);
	cr_assert_eq(ec_strip_len(4u << 20, 10), 103 * 4096);   /* 102.4 blocks */
	cr_assert_eq(ec_strip_len(4u << 20, 16), 256u << 10);
	cr_assert_eq(ec_strip_len(1u << 20, 16), 64u << 10);
}

Test(ec, split_and_join_round_trip)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, 12289, 100000, 4u << 20 };
	uint64_t seed = 23;

	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++)
		for (unsigned k = 1; k <= EC_K_MAX; k += 3) {
			size_t size = sizes[t], sl = ec_strip_len(size, k);
			size_t alloc = sl ? sl : 1;
			uint8_t *obj = malloc(size + 1), *back = malloc(size + 1);
			uint8_t *buf = malloc(k * alloc), *data[EC_K_MAX];

			cr_assert(obj && back && buf);
			fill_random(obj, size, &seed);
			memset(buf, 0xee, k * alloc);
			for (unsigned i = 0; i < k; i++)
				data[i] = buf + i * alloc;
			cr_assert_eq(ec_split(k, obj, size, sl, data), 0);
			/* Contiguous pieces, then zeros. */
			cr_assert_eq(memcmp(buf, obj, size), 0, "size=%zu k=%u", size, k);
			for (size_t i = size; i < k * sl; i++)
				cr_assert_eq(buf[i], 0, "size=%zu k=%u pad byte %zu", size, k, i);
			cr_assert_eq(ec_join(k, (const uint8_t *const *)data, sl, back, size), 0);
			cr_assert_eq(memcmp(back, obj, size), 0);
			if (size > 1) {
				size_t small = (size - 1) / k;

				cr_assert_eq(ec_split(k, obj, size, small, data), -EINVAL);
				cr_assert_eq(ec_join(k, (const uint8_t *const *)data, small,
						     back, size), -EINVAL);
			}
			free(buf);
			free(back);
			free(obj);
		}
	cr_assert_eq(ec_split(0, NULL, 0, 4096, NULL), -EINVAL);
	cr_assert_eq(ec_split(EC_K_MAX + 1, NULL, 0, 4096, NULL), -EINVAL);
}

/* Several threads decode different patterns on one code at once; the
 * decode cache is shared between them. */
struct decoder {
	pthread_t tid;
	unsigned seed;
	int bad;
};

static void *decode_loop(void *arg)
{
	struct decoder *d = arg;
	const struct ec_code *c;
	uint64_t seed = d->seed;
	struct stripe st;
	uint8_t *want;

	if (ec_code_get(8, 3, &c))
		return d->bad = 1, NULL;
	st.k = 8;
	st.m = 3;
	st.len = 4096;
	st.buf = malloc(11 * st.len);
	want = malloc(11 * st.len);
	if (!st.buf || !want)
		return d->bad = 1, NULL;
	for (unsigned i = 0; i < 11; i++)
		st.strips[i] = st.buf + i * st.len;
	fill_random(st.buf, 8 * st.len, &seed);
	ec_encode(c, st.len, (const uint8_t *const *)st.strips, &st.strips[8]);
	memcpy(want, st.buf, 11 * st.len);
	for (int r = 0; r < 2000 && !d->bad; r++) {
		uint32_t missing = random_pattern(11, 1 + r % 3, &seed);

		for (unsigned i = 0; i < 11; i++)
			if (missing & (1u << i))
				memset(st.strips[i], 0, st.len);
		if (ec_decode(c, st.len, missing, st.strips) ||
		    memcmp(st.buf, want, 11 * st.len))
			d->bad = 1;
	}
	free(want);
	free(st.buf);
	return NULL;
}

Test(ec, decodes_from_many_threads)
{
	struct decoder d[4];

	for (unsigned i = 0; i < 4; i++) {
		d[i] = (struct decoder){ .seed = 100 + i };
		cr_assert_eq(pthread_create(&d[i].tid, NULL, decode_loop, &d[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(d[i].tid, NULL);
		cr_assert_eq(d[i].bad, 0, "thread %u decoded wrong bytes", i);
	}
}
