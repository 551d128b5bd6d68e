/*
 * objenv.h - LevelDB whose files are sdfs objects: the C API of
 * mds/objenv.cc (the project's one C++ file).
 *
 * LevelDB's C API cannot take a custom Env, so objenv.cc subclasses
 * leveldb::EnvWrapper, overriding every file method (nothing touches
 * the local disk), and wraps leveldb::DB behind this small C API.
 *
 * The store: every file of the database is a run of objects
 *   oid_make(OID_KIND_MDS, file_id, chunk)    chunk = offset / obj_size
 * and file_id 0 is the dir table (name -> file_id, size), two slots
 * written alternately, the valid one with the highest sequence wins
 * (docs/format.md, "MDS database"). Append() buffers, Flush() is not a
 * network write, Sync() writes the unsynced tail and returns once every
 * replica has it durably. A file left open by a crash gets its size back
 * from its objects' lengths.
 *
 * The commit pipeline (docs/mds.md "Commit pipeline"): kvdb_apply puts a
 * batch into the database at once (visible to every later read here) and
 * appends it to the log in memory; kvdb_settle writes the log's tail to
 * its objects with write_mem, so everything applied before the call
 * survives the crash of any process; kvdb_sync also flushes those
 * objects, so it survives a power loss. Concurrent settles share one
 * log write (group commit); tables, the manifest and the dir table are
 * always written durably. A log that closes is flushed before its size
 * is recorded. After a power loss a log ends where its durable bytes
 * end: what was settled but not synced is lost as a suffix.
 *
 * Threading: one struct kvdb may be used from any number of threads at
 * once (LevelDB's own guarantees); kvdb_write from several threads is
 * how group commit happens. Iterators and batches belong to one thread.
 * All calls block on object I/O.
 */
#ifndef SDFS_MDS_OBJENV_H
#define SDFS_MDS_OBJENV_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Object I/O the database runs on: libsdfs in sdfs-mds, memory in tests.
 * Each returns 0 / a byte count, or -errno. */
struct objenv_store {
	void *ctx;
	/* Write @len bytes at @off of @oid, creating it; durable on return.
	 * -EPERM: fenced (a newer MDS took over): the database turns
	 * read-only for good and the caller must step down. */
	int (*write)(void *ctx, uint64_t oid, uint64_t off, const void *buf, size_t len);
	/* Up to @len bytes at @off (short at the object's end, 0 past it);
	 * -ENOENT if the object does not exist. */
	ssize_t (*read)(void *ctx, uint64_t oid, uint64_t off, void *buf, size_t len);
	/* The object's length (its high-water mark); -ENOENT if absent. */
	int (*length)(void *ctx, uint64_t oid, uint64_t *len);
	/* Remove @oid; -ENOENT counts as success. */
	int (*remove)(void *ctx, uint64_t oid);
	/* Optional pair, for the log (NULL: the log uses write): write as
	 * @write does, but return once every replica has the bytes in
	 * memory (they survive the crash of any process, not a power loss
	 * of every node); and make such writes to @oids[0..n) durable
	 * (missing objects count as success). */
	int (*write_mem)(void *ctx, uint64_t oid, uint64_t off, const void *buf, size_t len);
	int (*flush)(void *ctx, const uint64_t *oids, size_t n);
	uint32_t obj_size;      /* bytes per object, a power of two >= 64 KiB */
};

struct kvdb;
struct kvbatch;
struct kviter;

struct kvdb_opts {
	size_t cache_bytes;     /* LevelDB block cache; 0: 64 MiB */
	size_t write_buffer;    /* memtable size; 0: 4 MiB */
	void (*log)(int level, const char *msg);   /* LevelDB's info log; NULL: none */
};

/*
 * Open (creating if empty) the database stored in @st. @st is copied;
 * @opts may be NULL (all defaults). Returns 0, or -errno with a one-line
 * reason in @err (e.g. -EIO "Corruption: ..."): -EINVAL bad @st (a
 * callback missing, obj_size not a power of two >= 64 KiB), -EBADMSG
 * neither dir-table slot is valid, -EPERM fenced, -EIO anything else.
 */
int kvdb_open(const struct objenv_store *st, const struct kvdb_opts *opts,
	      struct kvdb **out, char *err, size_t errlen);
/* Free every kviter first. Writes what was kept for later (removals,
 * sizes) and waits for background compaction. NULL ok. */
void kvdb_close(struct kvdb *db);

/* *@val is malloc'd (free with free()); -ENOENT if absent, -EIO on a
 * read error (logged), -ENOMEM. */
int kvdb_get(struct kvdb *db, const void *key, size_t klen, char **val, size_t *vlen);

struct kvbatch *kvbatch_new(void);      /* NULL on ENOMEM */
void kvbatch_put(struct kvbatch *b, const void *key, size_t klen,
		 const void *val, size_t vlen);
void kvbatch_del(struct kvbatch *b, const void *key, size_t klen);
void kvbatch_clear(struct kvbatch *b);
void kvbatch_free(struct kvbatch *b);   /* NULL ok */
/* Apply @b atomically: visible to reads at once, in the store only
 * after a kvdb_settle. -EIO (reason in @err) when the store failed;
 * -EPERM when it was fenced. After one failure every later apply,
 * settle and sync fails too. A batch whose apply or settle failed may
 * or may not be in the store (like a write that timed out): the mds
 * answers nothing then, and a resend finds its reply record or not. */
int kvdb_apply(struct kvdb *db, struct kvbatch *b, char *err, size_t errlen);
/* Every batch applied before the call is in the store (every replica's
 * memory: survives the crash of any process). 0 at once when nothing
 * is pending; -EIO / -EPERM as kvdb_apply. */
int kvdb_settle(struct kvdb *db, char *err, size_t errlen);
/* kvdb_settle, and durable (survives a power loss of every node). A
 * failed flush (-EIO: a replica did not answer) is not sticky: the
 * next kvdb_sync tries the same objects again; -EPERM (fenced) is. */
int kvdb_sync(struct kvdb *db, char *err, size_t errlen);
/* kvdb_apply then kvdb_settle. */
int kvdb_write(struct kvdb *db, struct kvbatch *b, char *err, size_t errlen);

/* A consistent view at creation time (NULL on ENOMEM). Not positioned
 * until kviter_seek; klen 0 seeks to the first key. Key and value
 * pointers stay valid until the next seek/next/free. kviter_valid() is
 * 0 at the end and after a read error; kviter_error() tells them apart
 * (0, or -EIO). */
struct kviter *kvdb_iter(struct kvdb *db);
void kviter_seek(struct kviter *it, const void *key, size_t klen);
int kviter_valid(const struct kviter *it);
void kviter_next(struct kviter *it);
const char *kviter_key(const struct kviter *it, size_t *len);
const char *kviter_value(const struct kviter *it, size_t *len);
int kviter_error(const struct kviter *it);
void kviter_free(struct kviter *it);    /* NULL ok */

/* Files in the database and their total size in bytes. */
void kvdb_stats(struct kvdb *db, uint64_t *files, uint64_t *bytes);
/* Env call counters since open, for tests: how many times each file
 * method ran and how many object writes were made. */
struct kvdb_env_stats {
	uint64_t obj_writes, obj_reads, obj_removes;
	uint64_t syncs, files_created, dirtable_writes;
	uint64_t log_writes;    /* settles that wrote (write_mem or write) */
	uint64_t flushes;       /* kvdb_sync / log-close flush calls */
};
void kvdb_env_stats(struct kvdb *db, struct kvdb_env_stats *out);

#ifdef __cplusplus
}
#endif
#endif
