/*
 * ec.c - the erasure-coding codec over isa-l (contract in ec.h).
 *
 * Codes live in a table indexed by (k, m), published once with a
 * release store and read with an acquire load, so the common path of
 * ec_code_get takes no lock. A code's decode cache is a fixed array of
 * slots under the code's mutex; a hit copies the slot's tables to the
 * caller's stack (at most 2 KiB) and the encode runs unlocked.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>

#include "common/ec.h"
#include "common/log.h"

#define EC_TBL_PER_COEF 32u     /* isa-l's expanded table per coefficient */
#define EC_TBLS_MAX     (EC_TBL_PER_COEF * EC_K_MAX * EC_M_MAX)

/* One cached decode pattern: which strips feed it, and its tables. */
struct ec_dslot {
	uint64_t key;                   /* missing | wanted << 32; 0: empty */
	uint8_t src[EC_K_MAX];          /* strip numbers of the k sources */
	uint8_t tbls[];                 /* 32 * k * popcount(wanted) bytes */
};

struct ec_code {
	unsigned k, m;
	uint8_t gen[EC_STRIPS_MAX * EC_K_MAX];  /* (k + m) x k, identity on top */
	uint8_t enc_tbls[EC_TBLS_MAX];          /* 32 * k * m used */
	pthread_mutex_t lock;                   /* guards the slots */
	size_t slot_size;
	unsigned char *slots;                   /* EC_DECODE_CACHE * slot_size */
};

static _Atomic(struct ec_code *) codes[EC_K_MAX + 1][EC_M_MAX + 1];
static pthread_mutex_t codes_lock = PTHREAD_MUTEX_INITIALIZER;

static int ec_valid(unsigned k, unsigned m)
{
	return k >= 1 && k <= EC_K_MAX && m >= 1 && m <= EC_M_MAX &&
	       k + m <= EC_STRIPS_MAX;
}

static struct ec_code *ec_code_new(unsigned k, unsigned m)
{
	struct ec_code *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->k = k;
	c->m = m;
	/* Rounded up to 8 bytes: the next slot's key stays aligned. */
	c->slot_size = (sizeof(struct ec_dslot) + EC_TBL_PER_COEF * k * m + 7) & ~(size_t)7;
	c->slots = calloc(EC_DECODE_CACHE, c->slot_size);
	if (!c->slots) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	gf_gen_cauchy1_matrix(c->gen, (int)(k + m), (int)k);
	ec_init_tables((int)k, (int)m, &c->gen[k * k], c->enc_tbls);
	return c;
}

int ec_code_get(unsigned k, unsigned m, const struct ec_code **out)
{
	struct ec_code *c;

	if (!ec_valid(k, m))
		return -EINVAL;
	c = atomic_load_explicit(&codes[k][m], memory_order_acquire);
	if (!c) {
		pthread_mutex_lock(&codes_lock);
		c = atomic_load_explicit(&codes[k][m], memory_order_relaxed);
		if (!c && (c = ec_code_new(k, m)))
			atomic_store_explicit(&codes[k][m], c, memory_order_release);
		pthread_mutex_unlock(&codes_lock);
		if (!c)
			return -ENOMEM;
	}
	*out = c;
	return 0;
}

unsigned ec_code_k(const struct ec_code *c) { return c->k; }
unsigned ec_code_m(const struct ec_code *c) { return c->m; }

int ec_encode(const struct ec_code *c, size_t len,
	      const uint8_t *const data[], uint8_t *const parity[])
{
	unsigned char *src[EC_K_MAX], *dst[EC_M_MAX];

	if (!len || len > EC_LEN_MAX)
		return -EINVAL;
	/* isa-l's prototypes take no const; it only reads the sources and
	 * the tables. */
	for (unsigned i = 0; i < c->k; i++)
		src[i] = (unsigned char *)data[i];
	for (unsigned i = 0; i < c->m; i++)
		dst[i] = parity[i];
	ec_encode_data((int)len, (int)c->k, (int)c->m,
		       (unsigned char *)c->enc_tbls, src, dst);
	return 0;
}

/*
 * Build the tables that turn the first k present strips into the
 * @wanted ones. B is the k x k matrix of the sources' generator rows:
 * sources = B * data, so data = B^-1 * sources. A lost data strip i is
 * row i of B^-1; a lost parity strip p is gen[p] * B^-1.
 */
static void ec_decode_tables(const struct ec_code *c, uint32_t missing,
			     uint32_t wanted, uint8_t src[], uint8_t tbls[])
{
	unsigned k = c->k, n = c->k + c->m, r = 0, e = 0;
	uint8_t b[EC_K_MAX * EC_K_MAX], inv[EC_K_MAX * EC_K_MAX];
	uint8_t d[EC_M_MAX * EC_K_MAX];

	for (unsigned i = 0; i < n && r < k; i++)
		if (!(missing & (1u << i)))
			src[r++] = (uint8_t)i;
	sdfs_assert(r == k);
	for (unsigned i = 0; i < k; i++)
		memcpy(&b[i * k], &c->gen[src[i] * k], k);
	/* Any k rows of a Cauchy-extended identity are independent (ec.h);
	 * ec_test.c checks every pattern of every allowed code. */
	sdfs_assert(gf_invert_matrix(b, inv, (int)k) == 0);
	for (unsigned i = 0; i < n; i++) {
		if (!(wanted & (1u << i)))
			continue;
		if (i < k) {
			memcpy(&d[e * k], &inv[i * k], k);
		} else {
			for (unsigned j = 0; j < k; j++) {
				uint8_t s = 0;

				for (unsigned t = 0; t < k; t++)
					s ^= gf_mul(c->gen[i * k + t], inv[t * k + j]);
				d[e * k + j] = s;
			}
		}
		e++;
	}
	ec_init_tables((int)k, (int)e, d, tbls);
}

static struct ec_dslot *ec_slot(const struct ec_code *c, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) % EC_DECODE_CACHE;

	return (struct ec_dslot *)(c->slots + i * c->slot_size);
}

int ec_decode(const struct ec_code *c, size_t len, uint32_t missing,
	      uint8_t *const strips[])
{
	unsigned n = c->k + c->m, nout = 0;
	uint32_t wanted = 0;
	uint8_t src_no[EC_K_MAX], tbls[EC_TBLS_MAX];
	unsigned char *src[EC_K_MAX], *out[EC_M_MAX];

	if (!len || len > EC_LEN_MAX || (missing >> n) ||
	    (unsigned)__builtin_popcount(missing) > c->m)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if ((missing & (1u << i)) && strips[i])
			wanted |= 1u << i;
	if (!wanted)
		return 0;
	nout = (unsigned)__builtin_popcount(wanted);

	/* The cache is logically const: a code's answers never change. */
	struct ec_code *mc = (struct ec_code *)c;
	uint64_t key = missing | (uint64_t)wanted << 32;
	size_t tlen = EC_TBL_PER_COEF * c->k * nout;
	struct ec_dslot *s = ec_slot(c, key);

	pthread_mutex_lock(&mc->lock);
	if (s->key == key) {
		memcpy(src_no, s->src, c->k);
		memcpy(tbls, s->tbls, tlen);
		pthread_mutex_unlock(&mc->lock);
	} else {
		pthread_mutex_unlock(&mc->lock);
		ec_decode_tables(c, missing, wanted, src_no, tbls);
		pthread_mutex_lock(&mc->lock);
		s->key = key;
		memcpy(s->src, src_no, c->k);
		memcpy(s->tbls, tbls, tlen);
		pthread_mutex_unlock(&mc->lock);
	}

	for (unsigned i = 0; i < c->k; i++)
		src[i] = strips[src_no[i]];
	for (unsigned i = 0, e = 0; i < n; i++)
		if (wanted & (1u << i))
			out[e++] = strips[i];
	ec_encode_data((int)len, (int)c->k, (int)nout, tbls, src, out);
	return 0;
}

size_t ec_strip_len(size_t size, unsigned k)
{
	if (!size || !k)
		return 0;
	size_t per = size / k + (size % k != 0);

	return (per + EC_STRIP_ALIGN - 1) / EC_STRIP_ALIGN * EC_STRIP_ALIGN;
}

static int ec_layout_ok(unsigned k, size_t size, size_t strip_len)
{
	return k >= 1 && k <= EC_K_MAX && strip_len <= SIZE_MAX / k &&
	       strip_len * k >= size;
}

/* The object's bytes in strip @i: the rest is zero padding. */
static size_t piece_len(size_t size, size_t strip_len, unsigned i)
{
	size_t off = i * strip_len;

	return off >= size ? 0 : size - off < strip_len ? size - off : strip_len;
}

int ec_split(unsigned k, const void *obj, size_t size, size_t strip_len,
	     uint8_t *const data[])
{
	const uint8_t *p = obj;

	if (!ec_layout_ok(k, size, strip_len))
		return -EINVAL;
	for (unsigned i = 0; i < k; i++) {
		size_t off = i * strip_len, n = piece_len(size, strip_len, i);

		if (n)
			memcpy(data[i], p + off, n);
		memset(data[i] + n, 0, strip_len - n);
	}
	return 0;
}

int ec_join(unsigned k, const uint8_t *const data[], size_t strip_len,
	    void *obj, size_t size)
{
	uint8_t *p = obj;

	if (!ec_layout_ok(k, size, strip_len))
		return -EINVAL;
	for (unsigned i = 0; i < k; i++) {
		size_t off = i * strip_len, n = piece_len(size, strip_len, i);

		if (n)
			memcpy(p + off, data[i], n);
	}
	return 0;
}
