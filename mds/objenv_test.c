/*
 * objenv_test.c - unit tests for objenv.cc: LevelDB on an in-memory
 * object store.
 *
 * The store (mstore) lives in a MAP_SHARED anonymous region made before
 * any fork(), so a child can write and then die without closing (_exit,
 * SIGKILL, or a dir-table write torn in the middle) and the parent
 * reopens from exactly what the child left: a crash. The store counts
 * its calls and injects faults: after N more writes every write fails
 * with a chosen errno (-EPERM is a fence), and an optional delay per
 * write stands in for a replicated round trip.
 *
 * Power: writes through write_mem (the log's) are in "memory" until a
 * flush; store_power_loss() cuts every object back to what was durable
 * (written with write, or flushed), as a power loss of every node
 * would.
 *
 * LevelDB's background thread is one per process and does not survive
 * fork(), so a test that forks opens no database before the fork.
 * criterion runs each test in its own process: no shared state.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/csum.h"
#include "common/oid.h"
#include "mds/objenv.h"

#define REGION_BYTES    (1ull << 30)
#define MAX_OBJS        32768u
#define MIB             (1u << 20)
#define KIB             (1u << 10)

struct mobj {
	uint64_t oid;
	uint32_t slab;
	uint32_t len;
	uint32_t dlen;                  /* durable: survives store_power_loss */
	bool used;
};

/* At the start of the shared region; object data follows at data_off. */
struct mstore {
	pthread_mutex_t mu;
	uint32_t obj_size, nslabs, slabs_used, nfree, hi;
	uint64_t data_off;
	uint64_t writes, reads, lengths, removes, mem_writes, flushes;
	int64_t fail_after;             /* < 0: never; else writes left */
	int fail_errno;
	int flush_errno;                /* != 0: every flush fails with it */
	uint32_t delay_us;              /* per write; reads and lengths: read_delay_us */
	uint32_t read_delay_us;
	bool tear_armed;                /* write half of tear_oid's next write, _exit */
	uint64_t tear_oid;
	struct mobj objs[MAX_OBJS];
	uint32_t free_slabs[MAX_OBJS];
};

static struct mstore *ms;
static struct objenv_store st;

static char *slab_data(uint32_t slab)
{
	return (char *)ms + ms->data_off + (uint64_t)slab * ms->obj_size;
}

static struct mobj *obj_find(uint64_t oid)
{
	for (uint32_t i = 0; i < ms->hi; i++)
		if (ms->objs[i].used && ms->objs[i].oid == oid)
			return &ms->objs[i];
	return NULL;
}

static struct mobj *obj_create(uint64_t oid)
{
	uint32_t i, slab;

	for (i = 0; i < MAX_OBJS && ms->objs[i].used; i++)
		;
	if (i == MAX_OBJS)
		return NULL;
	if (ms->nfree)
		slab = ms->free_slabs[--ms->nfree];
	else if (ms->slabs_used < ms->nslabs)
		slab = ms->slabs_used++;
	else
		return NULL;
	memset(slab_data(slab), 0, ms->obj_size);
	ms->objs[i] = (struct mobj){ .oid = oid, .slab = slab, .used = true };
	if (i >= ms->hi)
		ms->hi = i + 1;
	return &ms->objs[i];
}

static int ms_put(uint64_t oid, uint64_t off, const void *buf, size_t len, bool mem)
{
	struct mobj *o;

	if (ms->delay_us)
		usleep(ms->delay_us);
	pthread_mutex_lock(&ms->mu);
	if (ms->fail_after == 0) {
		pthread_mutex_unlock(&ms->mu);
		return -ms->fail_errno;
	}
	if (ms->fail_after > 0)
		ms->fail_after--;
	if (off + len > ms->obj_size || !(o = obj_find(oid) ?: obj_create(oid))) {
		pthread_mutex_unlock(&ms->mu);
		return -EINVAL;
	}
	if (ms->tear_armed && oid == ms->tear_oid) {
		/* The process dies half-way through: the new header lands,
		 * the rest of the slot keeps its old bytes. */
		memcpy(slab_data(o->slab) + off, buf, len / 2);
		_exit(0);
	}
	memcpy(slab_data(o->slab) + off, buf, len);
	if (off + len > o->len)
		o->len = off + len;     /* after the data: a kill mid-copy hides it */
	ms->writes++;
	if (mem)
		ms->mem_writes++;
	else
		o->dlen = o->len;
	pthread_mutex_unlock(&ms->mu);
	return 0;
}

static int ms_write(void *ctx, uint64_t oid, uint64_t off, const void *buf, size_t len)
{
	(void)ctx;
	return ms_put(oid, off, buf, len, false);
}

static int ms_write_mem(void *ctx, uint64_t oid, uint64_t off, const void *buf, size_t len)
{
	(void)ctx;
	return ms_put(oid, off, buf, len, true);
}

static int ms_flush(void *ctx, const uint64_t *oids, size_t n)
{
	(void)ctx;
	pthread_mutex_lock(&ms->mu);
	if (ms->flush_errno) {
		pthread_mutex_unlock(&ms->mu);
		return -ms->flush_errno;
	}
	ms->flushes++;
	for (size_t i = 0; i < n; i++) {
		struct mobj *o = obj_find(oids[i]);

		if (o)
			o->dlen = o->len;
	}
	pthread_mutex_unlock(&ms->mu);
	return 0;
}

/* Every node loses power: what was not durable is gone. */
static void store_power_loss(void)
{
	for (uint32_t i = 0; i < ms->hi; i++) {
		struct mobj *o = &ms->objs[i];

		if (!o->used || o->len == o->dlen)
			continue;
		if (!o->dlen) {
			o->used = false;
			ms->free_slabs[ms->nfree++] = o->slab;
		} else {
			o->len = o->dlen;
		}
	}
}

static ssize_t ms_read(void *ctx, uint64_t oid, uint64_t off, void *buf, size_t len)
{
	struct mobj *o;
	ssize_t n = 0;

	(void)ctx;
	if (ms->read_delay_us)
		usleep(ms->read_delay_us);
	pthread_mutex_lock(&ms->mu);
	ms->reads++;
	o = obj_find(oid);
	if (!o) {
		n = -ENOENT;
	} else if (off < o->len) {
		n = o->len - off < len ? o->len - off : len;
		memcpy(buf, slab_data(o->slab) + off, n);
	}
	pthread_mutex_unlock(&ms->mu);
	return n;
}

static int ms_length(void *ctx, uint64_t oid, uint64_t *len)
{
	struct mobj *o;

	(void)ctx;
	if (ms->read_delay_us)
		usleep(ms->read_delay_us);
	pthread_mutex_lock(&ms->mu);
	ms->lengths++;
	o = obj_find(oid);
	if (o)
		*len = o->len;
	pthread_mutex_unlock(&ms->mu);
	return o ? 0 : -ENOENT;
}

static int ms_remove(void *ctx, uint64_t oid)
{
	struct mobj *o;

	(void)ctx;
	pthread_mutex_lock(&ms->mu);
	ms->removes++;
	o = obj_find(oid);
	if (o) {
		o->used = false;
		ms->free_slabs[ms->nfree++] = o->slab;
	}
	pthread_mutex_unlock(&ms->mu);
	return 0;
}

static void store_lock_init(void)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&ms->mu, &a);
	pthread_mutexattr_destroy(&a);
}

static void store_new(uint32_t obj_size)
{
	void *p = mmap(NULL, REGION_BYTES, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	cr_assert_neq(p, MAP_FAILED);
	ms = p;
	ms->obj_size = obj_size;
	ms->data_off = (sizeof(*ms) + MIB - 1) / MIB * MIB;
	ms->nslabs = (REGION_BYTES - ms->data_off) / obj_size;
	if (ms->nslabs > MAX_OBJS)
		ms->nslabs = MAX_OBJS;
	ms->fail_after = -1;
	store_lock_init();
	st = (struct objenv_store){ .ctx = ms, .write = ms_write, .read = ms_read,
		.length = ms_length, .remove = ms_remove, .write_mem = ms_write_mem,
		.flush = ms_flush, .obj_size = obj_size };
}

/* After the child died, possibly holding the lock. */
static void store_after_crash(void)
{
	store_lock_init();
	ms->tear_armed = false;
}

static void store_fail_after(int64_t writes, int err)
{
	pthread_mutex_lock(&ms->mu);
	ms->fail_errno = err;
	ms->fail_after = writes;
	pthread_mutex_unlock(&ms->mu);
}

static uint32_t store_objects(void)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < ms->hi; i++)
		n += ms->objs[i].used;
	return n;
}

/* ---- the dir table as docs/format.md "MDS database" describes it ---- */

#define DT_MAGIC        0x3154444d53464453ull
#define DT_OID          oid_make(OID_KIND_MDS, 0, 0)

struct dt_file {
	char name[256];
	uint64_t id, size;
};

static uint64_t le64_at(const char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Header fields of slot @slot: false if it does not pass its checks. */
static bool dt_slot_valid(int slot, uint64_t *seq)
{
	struct mobj *o = obj_find(DT_OID);
	uint32_t half = ms->obj_size / 2, blen;
	const char *p;

	if (!o)
		return false;
	p = slab_data(o->slab) + (uint64_t)slot * half;
	*seq = le64_at(p + 8);
	memcpy(&blen, p + 28, 4);
	return le64_at(p) == DT_MAGIC && blen <= half - 40 &&
	       csum64(p, 32 + blen) == le64_at(p + 32 + blen);
}

/* Live files of the newest valid slot; -1 if none is valid. */
static int dt_files(struct dt_file *out, int max, int *ngraves)
{
	uint64_t s0 = 0, s1 = 0;
	bool v0 = dt_slot_valid(0, &s0), v1 = dt_slot_valid(1, &s1);
	int slot = v0 && v1 ? s1 > s0 : v1 ? 1 : v0 ? 0 : -1, n = 0;
	const char *p;
	uint32_t count;

	*ngraves = 0;
	if (slot < 0)
		return -1;
	p = slab_data(obj_find(DT_OID)->slab) + (uint64_t)slot * (ms->obj_size / 2);
	memcpy(&count, p + 24, 4);
	p += 32;
	for (uint32_t i = 0; i < count; i++) {
		uint8_t nlen = (uint8_t)*p++;

		if (!nlen) {
			(*ngraves)++;
			p += 16;
			continue;
		}
		cr_assert_lt(n, max);
		memcpy(out[n].name, p, nlen);
		out[n].name[nlen] = '\0';
		p += nlen;
		out[n].id = le64_at(p);
		out[n].size = le64_at(p + 8);
		p += 16;
		n++;
	}
	return n;
}

/* Encode a slot with @n files named "x%05d" into @slot. */
static void dt_write_slot(int slot, uint64_t seq, int n)
{
	static char buf[1 << 20];
	uint32_t blen, cnt = n;
	uint64_t v, next = n + 1;
	char *p = buf + 32;

	for (int i = 0; i < n; i++) {
		*p++ = 6;
		p += sprintf(p, "x%05d", i);
		v = i + 1;
		memcpy(p, &v, 8);
		v = 0;
		memcpy(p + 8, &v, 8);
		p += 16;
	}
	blen = p - buf - 32;
	v = DT_MAGIC;
	memcpy(buf, &v, 8);
	memcpy(buf + 8, &seq, 8);
	memcpy(buf + 16, &next, 8);
	memcpy(buf + 24, &cnt, 4);
	memcpy(buf + 28, &blen, 4);
	v = csum64(buf, 32 + blen);
	memcpy(p, &v, 8);
	cr_assert_eq(ms_write(ms, DT_OID, (uint64_t)slot * (ms->obj_size / 2),
			      buf, p + 8 - buf), 0);
}

/* ---- database helpers ---- */

static void log_discard(int level, const char *msg)
{
	(void)level;
	(void)msg;
}

static struct kvdb *db_open(size_t write_buffer)
{
	struct kvdb_opts o = { .write_buffer = write_buffer, .log = log_discard };
	struct kvdb *db = NULL;
	char err[256] = "";
	int ret = kvdb_open(&st, &o, &db, err, sizeof(err));

	cr_assert_eq(ret, 0, "kvdb_open: %d %s", ret, err);
	return db;
}

static int key_of(char *k, const char *pfx, unsigned i)
{
	return sprintf(k, "%s%08u", pfx, i);
}

/* Letters from a per-key xorshift: snappy finds nothing to compress. */
static size_t val_of(char *v, unsigned i, size_t len)
{
	uint64_t x = i * 0x9e3779b97f4a7c15ull + 1;

	for (size_t j = 0; j < len; j++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v[j] = 'a' + x % 26;
	}
	return len;
}

static int put_one(struct kvdb *db, const char *pfx, unsigned i, size_t vlen,
		   char *err, size_t errlen)
{
	struct kvbatch *b = kvbatch_new();
	char k[64], v[4096];
	int klen = key_of(k, pfx, i), ret;

	kvbatch_put(b, k, klen, v, val_of(v, i, vlen));
	ret = kvdb_write(db, b, err, errlen);
	kvbatch_free(b);
	return ret;
}

/* 0 if present with its value, -ENOENT if absent, -EBADMSG if the value
 * is wrong, else kvdb_get's error. */
static int check_one(struct kvdb *db, const char *pfx, unsigned i, size_t vlen)
{
	char k[64], want[4096], *got;
	size_t glen;
	int ret = kvdb_get(db, k, key_of(k, pfx, i), &got, &glen);

	if (ret)
		return ret;
	val_of(want, i, vlen);
	ret = glen == vlen && !memcmp(got, want, vlen) ? 0 : -EBADMSG;
	free(got);
	return ret;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Every object in the store belongs to a live file or is the table. */
static void assert_no_leaked_objects(void)
{
	static struct dt_file f[4096];
	int graves, n = dt_files(f, 4096, &graves);
	uint64_t want = 1;

	cr_assert_geq(n, 0);
	for (int i = 0; i < n; i++)
		want += (f[i].size + ms->obj_size - 1) / ms->obj_size;
	cr_assert_eq(graves, 0, "%d graveyard entries after close", graves);
	cr_assert_eq(store_objects(), want, "%u objects, live files need %" PRIu64,
		     store_objects(), want);
}

TestSuite(objenv, .timeout = 100);

Test(objenv, put_get_delete_survive_reopen)
{
	struct kvdb *db;
	struct kvbatch *b = kvbatch_new();
	char err[256], *v;
	size_t vlen;

	store_new(MIB);
	db = db_open(0);
	cr_assert_eq(kvdb_get(db, "a", 1, &v, &vlen), -ENOENT);
	kvbatch_put(b, "a", 1, "alpha", 5);
	kvbatch_put(b, "b", 1, "beta", 4);
	kvbatch_put(b, "empty", 5, "", 0);
	cr_assert_eq(kvdb_write(db, b, err, sizeof(err)), 0, "%s", err);
	kvbatch_clear(b);
	kvbatch_del(b, "b", 1);
	cr_assert_eq(kvdb_write(db, b, err, sizeof(err)), 0, "%s", err);
	kvbatch_free(b);
	kvdb_close(db);

	db = db_open(0);
	cr_assert_eq(kvdb_get(db, "a", 1, &v, &vlen), 0);
	cr_assert_eq(vlen, 5);
	cr_assert_arr_eq(v, "alpha", 5);
	free(v);
	cr_assert_eq(kvdb_get(db, "empty", 5, &v, &vlen), 0);
	cr_assert_eq(vlen, 0);
	free(v);
	cr_assert_eq(kvdb_get(db, "b", 1, &v, &vlen), -ENOENT);
	kvdb_close(db);
	assert_no_leaked_objects();
}


Test(objenv, iterator_orders_keys_and_seeks)
{
	struct kvdb *db;
	struct kvbatch *b = kvbatch_new();
	struct kviter *it;
	const char *k, *v;
	char err[256], want[64];
	size_t klen, vlen;
	unsigned n = 0;
	int wl;

	store_new(MIB);
	db = db_open(0);
	for (unsigned i = 0; i < 1000; i += 2) {       /* even keys, backwards */
		wl = key_of(want, "it", 998 - i);
		kvbatch_put(b, want, wl, want, wl);
	}
	cr_assert_eq(kvdb_write(db, b, err, sizeof(err)), 0, "%s", err);
	kvbatch_free(b);

	it = kvdb_iter(db);
	/* Written after the iterator was made: not in its view. */
	cr_assert_eq(put_one(db, "it", 1, 10, err, sizeof(err)), 0, "%s", err);
	for (kviter_seek(it, "", 0); kviter_valid(it); kviter_next(it), n++) {
		wl = key_of(want, "it", 2 * n);
		k = kviter_key(it, &klen);
		v = kviter_value(it, &vlen);
		cr_assert_eq(klen, (size_t)wl);
		cr_assert_arr_eq(k, want, klen, "entry %u", n);
		cr_assert_arr_eq(v, want, vlen);
	}
	cr_assert_eq(n, 500);
	cr_assert_eq(kviter_error(it), 0);

	kviter_seek(it, "it00000101", 10);     /* between keys: the next one */
	cr_assert(kviter_valid(it));
	k = kviter_key(it, &klen);
	cr_assert_arr_eq(k, "it00000102", 10);
	kviter_seek(it, "zz", 2);
	cr_assert_not(kviter_valid(it));
	cr_assert_eq(kviter_error(it), 0);
	kviter_free(it);

	it = kvdb_iter(db);
	kviter_seek(it, "it00000001", 10);
	cr_assert(kviter_valid(it));
	k = kviter_key(it, &klen);
	cr_assert_arr_eq(k, "it00000001", 10);
	kviter_free(it);
	kvdb_close(db);
}

Test(objenv, batch_applies_puts_and_deletes_in_order)
{
	struct kvdb *db;
	struct kvbatch *b = kvbatch_new();
	char err[256], *v;
	size_t vlen;

	store_new(MIB);
	db = db_open(0);
	kvbatch_put(b, "x", 1, "1", 1);
	cr_assert_eq(kvdb_write(db, b, err, sizeof(err)), 0, "%s", err);
	kvbatch_clear(b);
	kvbatch_del(b, "x", 1);
	kvbatch_put(b, "y", 1, "y", 1);
	kvbatch_put(b, "x", 1, "2", 1);
	kvbatch_del(b, "y", 1);
	cr_assert_eq(kvdb_write(db, b, err, sizeof(err)), 0, "%s", err);
	kvbatch_free(b);
	kvdb_close(db);

	db = db_open(0);
	cr_assert_eq(kvdb_get(db, "x", 1, &v, &vlen), 0);
	cr_assert_eq(vlen, 1);
	cr_assert_eq(v[0], '2');
	free(v);
	cr_assert_eq(kvdb_get(db, "y", 1, &v, &vlen), -ENOENT);
	kvdb_close(db);
}

/* ---- crashes: a child writes and dies, the parent reopens ---- */

enum child_end {
	END_EXIT,               /* _exit(0) after n acknowledged batches */
	END_KILLED,             /* runs until the parent SIGKILLs it */
	END_TORN_DIRTAB,        /* after n batches, the next table write tears */
};

#define CHILD_MAX_BATCHES 400000u

/* Batch i puts keys "c" i*per .. i*per+per-1; its index goes down @fd
 * (-1: nowhere) once kvdb_write returned 0; after batch @sync_at (0:
 * none) a kvdb_sync. Never returns. */
static void child_writer(int fd, enum child_end end, unsigned n, unsigned per,
			 size_t wbuf, unsigned sync_at)
{
	struct kvdb_opts o = { .write_buffer = wbuf, .log = log_discard };
	struct kvbatch *b = kvbatch_new();
	struct kvdb *db;
	char err[256], k[64], v[256];

	if (kvdb_open(&st, &o, &db, err, sizeof(err)))
		_exit(2);
	for (unsigned i = 0; i < CHILD_MAX_BATCHES; i++) {
		kvbatch_clear(b);
		for (unsigned j = 0; j < per; j++) {
			unsigned id = i * per + j;

			kvbatch_put(b, k, key_of(k, "c", id), v, val_of(v, id, 100));
		}
		if (kvdb_write(db, b, err, sizeof(err)))
			_exit(3);
		if (fd >= 0 && write(fd, &i, sizeof(i)) != sizeof(i))
			_exit(4);
		if (i + 1 == sync_at && kvdb_sync(db, err, sizeof(err)))
			_exit(6);
		if (i + 1 == n && end == END_EXIT)
			_exit(0);
		if (i + 1 == n && end == END_TORN_DIRTAB) {
			ms->tear_oid = DT_OID;
			__atomic_store_n(&ms->tear_armed, true, __ATOMIC_SEQ_CST);
		}
	}
	_exit(5);
}

/* Run the child; returns how many batches it acknowledged. */
static unsigned crash_child(enum child_end end, unsigned n, unsigned per,
			    size_t wbuf, unsigned kill_after)
{
	unsigned acked = 0, idx;
	int fds[2], status;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		child_writer(fds[1], end, n, per, wbuf, 0);
	}
	close(fds[1]);
	while (read(fds[0], &idx, sizeof(idx)) == sizeof(idx)) {
		cr_assert_eq(idx, acked);
		if (++acked == kill_after)
			kill(pid, SIGKILL);
	}
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (end == END_KILLED)
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			  "child status %#x", status);
	else
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "child status %#x", status);
	store_after_crash();
	return acked;
}

/* Reopen after the crash, each object call taking 500 us (a replicated
 * round trip); every acknowledged key must be there. */
static void check_after_crash(unsigned acked, unsigned per, size_t wbuf,
			      const char *what)
{
	struct kvdb_env_stats es;
	struct kvdb *db;
	unsigned present = 0;
	double t0, open_ms;

	ms->delay_us = ms->read_delay_us = 500;
	ms->lengths = 0;
	t0 = now_ms();
	db = db_open(wbuf);
	open_ms = now_ms() - t0;
	ms->delay_us = ms->read_delay_us = 0;
	kvdb_env_stats(db, &es);
	for (unsigned i = 0; i < acked * per; i++) {
		int ret = check_one(db, "c", i, 100);

		cr_assert_eq(ret, 0, "key %u of %u acknowledged: %d", i, acked * per, ret);
	}
	/* The batch in flight at the crash: all of it or none. */
	for (unsigned j = 0; j < per; j++)
		present += check_one(db, "c", acked * per + j, 100) == 0;
	cr_assert(present == 0 || present == per, "%u of %u keys of a batch",
		  present, per);
	cr_log_info("%s: %u batches acknowledged, all present; reopen %.1f ms at "
		    "500 us/object call (%" PRIu64 " reads, %" PRIu64 " writes, %"
		    PRIu64 " length probes)", what, acked, open_ms, es.obj_reads,
		    es.obj_writes, ms->lengths);
	kvdb_close(db);
	assert_no_leaked_objects();
}

Test(objenv, crash_exit_without_close_keeps_acked_writes)
{
	unsigned acked;

	store_new(MIB);
	acked = crash_child(END_EXIT, 50000, 1, 0, 0);
	cr_assert_eq(acked, 50000);
	check_after_crash(acked, 1, 0, "_exit without close, 4 MiB memtable");
}

Test(objenv, crash_sigkill_at_random_keeps_acked_writes)
{
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid(), acked, kill_at;

	srand(seed);
	kill_at = 2000 + rand() % 50000;
	cr_log_info("seed %u: SIGKILL after %u acknowledgements", seed, kill_at);
	store_new(64 * KIB);
	acked = crash_child(END_KILLED, 0, 1, 128 * KIB, kill_at);
	cr_assert_geq(acked, kill_at);
	check_after_crash(acked, 1, 128 * KIB, "SIGKILL");
}

Test(objenv, batch_is_all_or_nothing_across_a_crash)
{
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid(), acked;

	srand(seed);
	store_new(64 * KIB);
	acked = crash_child(END_KILLED, 0, 10, 128 * KIB, 500 + rand() % 3000);
	check_after_crash(acked, 10, 128 * KIB, "batches of 10, SIGKILL");
}

/* ---- the commit pipeline: apply, settle, sync; power loss ---- */

Test(objenv, apply_is_visible_at_once_and_settle_writes_it)
{
	struct kvdb_env_stats a, b2;
	struct kvbatch *b = kvbatch_new();
	struct kvdb *db;
	char err[256], k[64], v[256];
	uint64_t w0;

	store_new(MIB);
	db = db_open(0);
	kvdb_env_stats(db, &a);
	w0 = ms->writes;
	kvbatch_put(b, k, key_of(k, "p", 1), v, val_of(v, 1, 100));
	cr_assert_eq(kvdb_apply(db, b, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(check_one(db, "p", 1, 100), 0, "applied: visible here at once");
	cr_assert_eq(ms->writes, w0, "apply wrote nothing to the store");
	cr_assert_eq(kvdb_settle(db, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(ms->mem_writes, 0, "settle wrote the log to memory");
	cr_assert_eq(ms->writes, w0 + 1, "one log write for the batch");
	cr_assert_eq(kvdb_settle(db, err, sizeof(err)), 0);
	cr_assert_eq(ms->writes, w0 + 1, "nothing pending: no write");
	cr_assert_eq(kvdb_sync(db, err, sizeof(err)), 0, "%s", err);
	kvdb_env_stats(db, &b2);
	cr_assert_eq(b2.flushes - a.flushes, 1, "sync flushed the log's object");
	cr_assert_eq(ms->flushes, 1);
	cr_assert_eq(kvdb_sync(db, err, sizeof(err)), 0);
	cr_assert_eq(ms->flushes, 1, "nothing written since: no flush");
	kvbatch_free(b);
	kvdb_close(db);
}

Test(objenv, failed_flush_is_retried_not_sticky)
{
	struct kvbatch *b = kvbatch_new();
	struct kvdb *db;
	char err[256], k[64], v[256];

	store_new(MIB);
	db = db_open(0);
	kvbatch_put(b, k, key_of(k, "f", 1), v, val_of(v, 1, 100));
	cr_assert_eq(kvdb_write(db, b, err, sizeof(err)), 0, "%s", err);
	ms->flush_errno = EIO;
	cr_assert_eq(kvdb_sync(db, err, sizeof(err)), -EIO, "a failed flush says so");
	kvbatch_clear(b);
	kvbatch_put(b, k, key_of(k, "f", 2), v, val_of(v, 2, 100));
	cr_assert_eq(kvdb_write(db, b, err, sizeof(err)), 0,
		     "writes go on after a failed flush: %s", err);
	ms->flush_errno = 0;
	cr_assert_eq(kvdb_sync(db, err, sizeof(err)), 0, "%s", err);
	kvbatch_free(b);
	/* the retried flush covered the first batch's object too */
	store_power_loss();
	kvdb_close(db);         /* closing syncs; nothing more to flush */
	db = db_open(0);
	cr_assert_eq(check_one(db, "f", 1, 100), 0);
	cr_assert_eq(check_one(db, "f", 2, 100), 0);
	kvdb_close(db);
}

/* After a power loss: every batch up to @sync_at is there, and the
 * batches there are a prefix (no batch without its predecessor). */
static void power_loss_case(unsigned n, unsigned per, unsigned sync_at, size_t wbuf)
{
	struct kvdb *db;
	unsigned have = 0, extra = 0;
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		child_writer(-1, END_EXIT, n, per, wbuf, sync_at);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	store_after_crash();
	store_power_loss();
	db = db_open(wbuf);
	for (unsigned i = 0; i < n; i++) {
		unsigned present = 0;

		for (unsigned j = 0; j < per; j++)
			present += check_one(db, "c", i * per + j, 100) == 0;
		cr_assert(present == 0 || present == per, "batch %u: %u of %u keys",
			  i, present, per);
		if (present && have < i)
			cr_assert_fail("batch %u is there but batch %u is not", i, have);
		if (present)
			have = i + 1;
		if (present && i >= sync_at)
			extra++;
	}
	cr_assert_geq(have, sync_at, "synced batches lost: %u of %u there", have, sync_at);
	cr_log_info("power loss: %u batches synced, %u there (%u after the sync)",
		    sync_at, have, extra);
	kvdb_close(db);
}

Test(objenv, power_loss_keeps_synced_batches_and_loses_a_suffix)
{
	store_new(64 * KIB);
	power_loss_case(3000, 1, 2000, 0);
}

Test(objenv, power_loss_across_log_switches_and_compactions)
{
	/* a 64 KiB memtable: the log switches and tables are written
	 * many times before and after the sync */
	store_new(64 * KIB);
	power_loss_case(2000, 10, 1200, 64 * KIB);
}

Test(objenv, torn_dir_table_write_uses_older_slot)
{
	uint64_t seq0, seq1;
	bool v0, v1;
	unsigned acked;

	store_new(MIB);
	acked = crash_child(END_TORN_DIRTAB, 3000, 1, 64 * KIB, 0);
	cr_assert_geq(acked, 3000);
	v0 = dt_slot_valid(0, &seq0);
	v1 = dt_slot_valid(1, &seq1);
	cr_assert(v0 != v1, "exactly one slot torn (%d %d)", v0, v1);
	cr_assert_gt(v0 ? seq1 : seq0, v0 ? seq0 : seq1,
		     "the torn slot is the newer one");
	check_after_crash(acked, 1, 64 * KIB, "torn dir-table write");
}

/* ---- fencing and store errors ---- */

struct fence_writer {
	pthread_t thr;
	struct kvdb *db;
	char pfx[8];
	unsigned acked;
	int ret;
	char err[256];
};

static void *fence_writer_run(void *arg)
{
	struct fence_writer *w = arg;

	for (w->acked = 0; w->acked < 200000; w->acked++) {
		w->ret = put_one(w->db, w->pfx, w->acked, 100, w->err, sizeof(w->err));
		if (w->ret)
			break;
	}
	return NULL;
}

Test(objenv, fenced_store_fails_writes_with_eperm_for_good)
{
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	struct fence_writer w[4];
	char err[256];
	struct kvdb *db;

	srand(seed);
	store_new(64 * KIB);
	db = db_open(64 * KIB);
	for (unsigned i = 0; i < 300; i++)
		cr_assert_eq(put_one(db, "pre", i, 100, err, sizeof(err)), 0, "%s", err);
	/* The fence lands wherever the writers and compaction are. */
	store_fail_after(200 + rand() % 2000, EPERM);
	for (int t = 0; t < 4; t++) {
		w[t] = (struct fence_writer){ .db = db };
		sprintf(w[t].pfx, "f%d-", t);
		pthread_create(&w[t].thr, NULL, fence_writer_run, &w[t]);
	}
	for (int t = 0; t < 4; t++) {
		pthread_join(w[t].thr, NULL);
		cr_assert_eq(w[t].ret, -EPERM, "writer %d: %d %s", t, w[t].ret, w[t].err);
		cr_assert(strstr(w[t].err, "fenced"), "writer %d: %s", t, w[t].err);
	}
	for (int i = 0; i < 3; i++) {   /* sticky */
		cr_assert_eq(put_one(db, "post", i, 100, err, sizeof(err)), -EPERM);
		cr_assert(strstr(err, "fenced"), "%s", err);
	}
	kvdb_close(db);

	store_fail_after(-1, 0);        /* a new active, past the fence */
	db = db_open(64 * KIB);
	for (unsigned i = 0; i < 300; i++)
		cr_assert_eq(check_one(db, "pre", i, 100), 0);
	for (int t = 0; t < 4; t++) {
		for (unsigned i = 0; i < w[t].acked; i++)
			cr_assert_eq(check_one(db, w[t].pfx, i, 100), 0,
				     "writer %d key %u of %u acked", t, i, w[t].acked);
		/* the failed write may be there: its bytes can go out in
		 * one settle and its own settle fail on later ones (the
		 * mds then answers nothing: the caller cannot tell) */
		int failed = check_one(db, w[t].pfx, w[t].acked, 100);

		cr_assert(failed == 0 || failed == -ENOENT, "writer %d: %d", t, failed);
		cr_assert_eq(check_one(db, w[t].pfx, w[t].acked + 1, 100), -ENOENT,
			     "nothing after the failed write");
	}
	cr_assert_eq(check_one(db, "post", 0, 100), -ENOENT);
	cr_log_info("seed %u: fenced after %u+%u+%u+%u writes, all present after reopen",
		    seed, w[0].acked, w[1].acked, w[2].acked, w[3].acked);
	kvdb_close(db);
}

Test(objenv, store_eio_fails_writes_with_eio_and_reason)
{
	struct kvdb *db;
	char err[256] = "";

	store_new(MIB);
	db = db_open(0);
	for (unsigned i = 0; i < 10; i++)
		cr_assert_eq(put_one(db, "e", i, 100, err, sizeof(err)), 0, "%s", err);
	store_fail_after(0, EIO);
	cr_assert_eq(put_one(db, "e", 10, 100, err, sizeof(err)), -EIO);
	cr_assert(strstr(err, "Input/output error"), "%s", err);
	store_fail_after(-1, 0);        /* the error stays: LevelDB is read-only now */
	cr_assert_eq(put_one(db, "e", 11, 100, err, sizeof(err)), -EIO);
	cr_assert_eq(check_one(db, "e", 9, 100), 0);
	kvdb_close(db);

	db = db_open(0);
	for (unsigned i = 0; i < 10; i++)
		cr_assert_eq(check_one(db, "e", i, 100), 0);
	kvdb_close(db);
}

/* ---- volume and concurrency ---- */

static void put_many(struct kvdb *db, const char *pfx, unsigned n, unsigned per,
		     size_t vlen)
{
	struct kvbatch *b = kvbatch_new();
	char err[256], k[64], v[4096];

	for (unsigned i = 0; i < n; i += per) {
		kvbatch_clear(b);
		for (unsigned j = i; j < i + per && j < n; j++) {
			/* A fixed permutation: flushes overlap, compaction merges. */
			unsigned id = (unsigned)((uint64_t)j * 7919 % n);

			kvbatch_put(b, k, key_of(k, pfx, id), v, val_of(v, id, vlen));
		}
		cr_assert_eq(kvdb_write(db, b, err, sizeof(err)), 0, "%s", err);
	}
	kvbatch_free(b);
}

static void check_many(struct kvdb *db, const char *pfx, unsigned n, size_t vlen)
{
	struct kviter *it = kvdb_iter(db);
	unsigned count = 0;

	for (unsigned i = 0; i < n; i++) {
		int ret = check_one(db, pfx, i, vlen);

		cr_assert_eq(ret, 0, "key %u: %d", i, ret);
	}
	for (kviter_seek(it, pfx, strlen(pfx)); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const char *k = kviter_key(it, &klen);

		if (klen < strlen(pfx) || memcmp(k, pfx, strlen(pfx)))
			break;
		count++;
	}
	cr_assert_eq(kviter_error(it), 0);
	cr_assert_eq(count, n);
	kviter_free(it);
}

/* Until background compaction has stopped touching the store. */
static void wait_quiet(struct kvdb *db)
{
	struct kvdb_env_stats a, b;

	kvdb_env_stats(db, &a);
	for (int i = 0; i < 100; i++) {
		usleep(300 * 1000);
		kvdb_env_stats(db, &b);
		if (a.obj_writes == b.obj_writes && a.obj_reads == b.obj_reads)
			return;
		a = b;
	}
	cr_assert_fail("compaction did not stop in 30 s");
}

Test(objenv, many_keys_flush_compact_and_reopen)
{
	struct kvdb_env_stats es;
	uint64_t files, bytes;
	double t0 = now_ms(), t1, t2;
	struct kvdb *db;

	store_new(MIB);
	db = db_open(MIB);
	put_many(db, "m", 200000, 100, 100);
	t1 = now_ms();
	wait_quiet(db);
	kvdb_stats(db, &files, &bytes);
	kvdb_env_stats(db, &es);
	cr_assert_gt(es.files_created, 40, "flushes and compactions ran");
	kvdb_close(db);
	t2 = now_ms();
	db = db_open(MIB);
	check_many(db, "m", 200000, 100);
	cr_log_info("200k x 100 B: write %.0f ms, reopen+verify %.0f ms; %" PRIu64
		    " files %" PRIu64 " bytes; %" PRIu64 " files created, %" PRIu64
		    " object writes, %" PRIu64 " reads, %" PRIu64 " dir-table writes",
		    t1 - t0, now_ms() - t2, files, bytes, es.files_created,
		    es.obj_writes, es.obj_reads, es.dirtable_writes);
	kvdb_close(db);
	assert_no_leaked_objects();
}

/* Not a pass/fail check: what tables cost in object reads. */
Test(objenv, object_reads_for_compaction_and_cold_gets)
{
	struct kvdb_env_stats a, b;
	struct kvdb *db;
	unsigned r = 12345;

	store_new(MIB);
	db = db_open(MIB);
	put_many(db, "r", 150000, 100, 100);
	wait_quiet(db);
	kvdb_env_stats(db, &a);
	kvdb_close(db);
	db = db_open(MIB);
	kvdb_env_stats(db, &b);
	for (int i = 0; i < 5000; i++) {
		r = r * 1103515245 + 12345;
		cr_assert_eq(check_one(db, "r", (r >> 8) % 150000, 100), 0);
	}
	wait_quiet(db);
	kvdb_env_stats(db, &b);
	cr_log_info("150k keys: %" PRIu64 " object reads while writing "
		    "(compaction), %.2f per cold get", a.obj_reads,
		    (double)b.obj_reads / 5000);
	kvdb_close(db);
}

Test(objenv, small_objects_crossed_by_logs_and_tables)
{
	struct kvdb *db;

	store_new(64 * KIB);
	db = db_open(256 * KIB);
	put_many(db, "s", 40000, 50, 100);
	put_many(db, "big", 300, 3, 3000);     /* log records span objects */
	kvdb_close(db);
	db = db_open(256 * KIB);
	check_many(db, "s", 40000, 100);
	check_many(db, "big", 300, 3000);
	kvdb_close(db);
	assert_no_leaked_objects();
}

struct conc_writer {
	pthread_t thr;
	struct kvdb *db;
	char pfx[8];
	unsigned n;
	int ret;
};

static void *conc_writer_run(void *arg)
{
	struct conc_writer *w = arg;
	char err[256];

	for (unsigned i = 0; i < w->n && !w->ret; i++)
		w->ret = put_one(w->db, w->pfx, i, 100, err, sizeof(err));
	return NULL;
}

/* Object writes per operation and ops/s with @nthr threads. */
static double run_writers(struct kvdb *db, int nthr, unsigned n, int base,
			  double *ops_s)
{
	struct conc_writer w[8];
	struct kvdb_env_stats a, b;
	double t0;

	kvdb_env_stats(db, &a);
	t0 = now_ms();
	for (int t = 0; t < nthr; t++) {
		w[t] = (struct conc_writer){ .db = db, .n = n };
		sprintf(w[t].pfx, "w%d-", base + t);
		pthread_create(&w[t].thr, NULL, conc_writer_run, &w[t]);
	}
	for (int t = 0; t < nthr; t++) {
		pthread_join(w[t].thr, NULL);
		cr_assert_eq(w[t].ret, 0);
	}
	*ops_s = nthr * n / ((now_ms() - t0) / 1e3);
	kvdb_env_stats(db, &b);
	return (double)(b.obj_writes - a.obj_writes) / (nthr * n);
}

Test(objenv, concurrent_writers_share_object_writes)
{
	double per1, per8, ops1, ops8;
	struct kvdb *db;
	char pfx[8];

	store_new(MIB);
	ms->delay_us = 200;     /* about a replicated round trip on a LAN */
	db = db_open(0);
	per1 = run_writers(db, 1, 2000, 8, &ops1);
	per8 = run_writers(db, 8, 2000, 0, &ops8);
	cr_log_info("200 us/object write: 1 thread %.3f object writes/op (%.0f ops/s), "
		    "8 threads %.3f (%.0f ops/s)", per1, ops1, per8, ops8);
	cr_assert_lt(per8, 1.0, "group commit: %.3f writes/op", per8);
	kvdb_close(db);

	ms->delay_us = 0;
	db = db_open(0);
	for (int t = 0; t < 9; t++) {
		sprintf(pfx, "w%d-", t);
		check_many(db, pfx, 2000, 100);
	}
	kvdb_close(db);
}

/* ---- the local disk is never touched ---- */

static bool path_known(char known[][256], int n, const char *path)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(known[i], path))
			return true;
	return false;
}

/* Paths of open fds; @known: remember them, else assert none is new. */
static int scan_fds(char known[][256], int n, bool remember)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char link[300], path[256];

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		len = readlink(link, path, sizeof(path) - 1);
		if (len < 0)
			continue;
		path[len] = '\0';
		if (path[0] != '/' || !strncmp(path, "/proc/", 6) ||
		    !strncmp(path, "/dev/", 5))
			continue;
		if (remember && n < 64)
			snprintf(known[n++], 256, "%s", path);
		else if (!remember)
			cr_assert(path_known(known, n, path), "new open file %s", path);
	}
	closedir(d);
	return n;
}

static void assert_no_db_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		cr_assert(!strstr(line, "sdfs-mds") && !strstr(line, ".ldb") &&
			  !strstr(line, ".log"), "mapped: %s", line);
	fclose(f);
}

Test(objenv, never_touches_the_local_filesystem)
{
	char dir[] = "/tmp/objenv-cwd.XXXXXX", known[64][256];
	struct stat sb;
	bool tmp_had = stat("/tmp/sdfs-mds", &sb) == 0;
	struct dirent *e;
	struct kvdb *db;
	int nknown, entries = 0;
	DIR *d;

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chdir(dir), 0);
	store_new(64 * KIB);
	nknown = scan_fds(known, 0, true);
	db = db_open(64 * KIB);
	put_many(db, "l", 20000, 20, 100);     /* flushes and compactions */
	scan_fds(known, nknown, false);
	assert_no_db_mappings();
	kvdb_close(db);
	db = db_open(64 * KIB);
	cr_assert_eq(check_one(db, "l", 123, 100), 0);
	scan_fds(known, nknown, false);
	kvdb_close(db);

	d = opendir(".");
	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			entries++;
	closedir(d);
	cr_assert_eq(entries, 0, "the cwd is no longer empty");
	cr_assert_neq(stat("sdfs-mds", &sb), 0);
	cr_assert(tmp_had || stat("/tmp/sdfs-mds", &sb) != 0);
	cr_assert_neq(stat("/sdfs-mds", &sb), 0);
	cr_assert_eq(chdir("/"), 0);
	cr_assert_eq(rmdir(dir), 0);
}

/* ---- bad and extreme dir tables ---- */

Test(objenv, garbage_dir_table_fails_open_cleanly)
{
	static char junk[64 * KIB];
	struct kvdb *db = NULL;
	char err[256] = "";
	uint64_t writes;

	store_new(64 * KIB);
	db = db_open(0);
	kvdb_close(db);
	db = NULL;
	srand(1);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)rand();
	cr_assert_eq(ms_write(ms, DT_OID, 0, junk, sizeof(junk)), 0);
	writes = ms->writes;
	cr_assert_eq(kvdb_open(&st, NULL, &db, err, sizeof(err)), -EBADMSG);
	cr_assert_null(db);
	cr_assert(strstr(err, "dir table"), "%s", err);
	cr_assert_eq(ms->writes, writes, "nothing written over a bad table");
	cr_log_info("garbage table: %s", err);
}

Test(objenv, torn_first_dir_table_write_opens_empty)
{
	char junk[1000];
	struct kvdb *db;

	store_new(64 * KIB);
	memset(junk, 0x5a, sizeof(junk));       /* slot 1 never written */
	cr_assert_eq(ms_write(ms, DT_OID, 0, junk, sizeof(junk)), 0);
	db = db_open(0);
	cr_assert_eq(put_one(db, "t", 1, 100, junk, sizeof(junk)), 0);
	kvdb_close(db);
	db = db_open(0);
	cr_assert_eq(check_one(db, "t", 1, 100), 0);
	kvdb_close(db);
}

Test(objenv, full_dir_table_fails_cleanly)
{
	/* 1422 entries of 23 bytes leave 22 of the 32 KiB slot free, less
	 * than "MANIFEST-000001" needs (32). */
	struct kvdb *db = NULL;
	char err[256] = "";
	uint64_t writes;

	store_new(64 * KIB);
	dt_write_slot(0, 1, 1422);
	writes = ms->writes;
	cr_assert_eq(kvdb_open(&st, NULL, &db, err, sizeof(err)), -EIO);
	cr_assert_null(db);
	cr_assert(strstr(err, "dir table full"), "%s", err);
	cr_assert_eq(ms->writes, writes);
}

Test(objenv, missing_table_object_is_an_error_not_zeros)
{
	static struct dt_file f[4096];
	unsigned ok = 0, failed = 0;
	struct kvdb *db;
	int n, graves;

	store_new(64 * KIB);
	db = db_open(64 * KIB);
	put_many(db, "z", 20000, 100, 100);
	kvdb_close(db);
	n = dt_files(f, 4096, &graves);
	for (int i = 0; i < n; i++) {
		if (strstr(f[i].name, ".ldb") && f[i].size) {
			ms_remove(ms, oid_make(OID_KIND_MDS, f[i].id, 0));
			break;
		}
	}
	db = db_open(64 * KIB);
	for (unsigned i = 0; i < 20000; i++) {
		int ret = check_one(db, "z", i, 100);

		cr_assert(ret == 0 || ret == -EIO, "key %u: %d", i, ret);
		ret ? failed++ : ok++;
	}
	cr_assert_gt(failed, 0);
	cr_log_info("one table object removed: %u gets ok, %u -EIO", ok, failed);
	kvdb_close(db);
}
