/*
 * objenv.cc - LevelDB on sdfs objects: a leveldb::Env whose files are
 * runs of objects, and the C API of objenv.h around leveldb::DB.
 *
 * Every file method of leveldb::Env is overridden here; only Schedule,
 * StartThread, NowMicros and SleepForMicroseconds go to the POSIX Env.
 * A method forwarded by mistake would quietly create files on the MDS's
 * local disk, so GetTestDirectory and NewLogger are overridden too.
 * One DB per Env: the directory part of every name is dropped.
 *
 * The dir table (file_id 0, docs/format.md "MDS database") maps names to
 * file ids and sizes, and lists removed files whose objects are still to
 * be removed (the graveyard). It is rewritten synchronously when a file
 * is created, closed or renamed; removals and the sizes of files dropped
 * without Close() are folded into the next rewrite. A removed file's
 * objects are removed only after a table without its name (and with its
 * graveyard entry) is durable, so no table ever names missing objects and
 * no crash leaks objects: the graveyard is finished after a restart.
 *
 * Not here: which replica to read or how writes are fenced (the store
 * callbacks: libclient in sdfs-mds), what the keys mean (mds/).
 *
 * Concurrency: mu_ guards the file map, the graveyard and the mutation
 * counter gen_. tw_mu_ serialises dir-table writes so slots are written
 * in seq order; it is taken before mu_, never inside it. A table write
 * covers every mutation up to the gen_ it encoded, so concurrent
 * creators share one write. File objects belong to one thread each,
 * except RandomAccessFile::Read, which any thread may call: its
 * read-ahead buffer has a mutex of its own, and a log's tail, which
 * LevelDB's writer appends to and any settling thread writes out (the
 * commit pipeline in objenv.h; its locks are listed at logs_).
 */
#include "mds/objenv.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/write_batch.h>

#include "common/oid.h"

#define OBJENV_DBNAME      "sdfs-mds"
#define DIRTAB_MAGIC       0x3154444d53464453ull  /* "SDFSMDT1" as LE u64 */
#define DIRTAB_HDR_LEN     32u
#define DIRTAB_CSUM_LEN    8u
#define DIRTAB_ENTRY_FIXED 17u          /* name_len + file_id + size */
#define DIRTAB_FIRST_READ  (64u << 10)
#define SIZE_UNKNOWN       UINT64_MAX
#define WRITE_EARLY_BYTES  (1u << 20)   /* Append() writes out past this */
#define SEQ_READAHEAD      (1u << 20)
#define TABLE_CACHE_OBJS   4u           /* cache whole tables up to 4 objects */
#define TABLE_CACHE_CAP    (256ull << 20)

using leveldb::Slice;
using leveldb::Status;

namespace {

struct file_meta {
	const uint64_t id;
	std::atomic<uint64_t> size;     /* bytes appended so far */
	bool writing;                   /* open for writing; under obj_env::mu_ */

	file_meta(uint64_t i, uint64_t s, bool w) : id(i), size(s), writing(w) {}
};
typedef std::shared_ptr<file_meta> meta_ptr;

struct grave {
	uint64_t size;                  /* SIZE_UNKNOWN: probe the objects */
	uint64_t gen;                   /* removable once durable_gen_ >= gen */
	bool busy;                      /* a thread is removing the objects */
};

/*
 * A log file's tail that is not yet in its objects. LevelDB's writer
 * appends (under mu); whichever thread settles writes it out (under
 * obj_env::log_io_mu_, so the writes of all logs go out in order).
 */
struct log_tail {
	log_tail(meta_ptr m, const std::string &n) : meta(std::move(m)), name(n) {}

	const meta_ptr meta;
	const std::string name;
	std::mutex mu;
	std::string buf;                /* bytes [taken, taken + buf.size()) */
	uint64_t taken = 0;             /* handed to a write-out; mu */
};
typedef std::shared_ptr<log_tail> tail_ptr;

/* One decoded dir-table slot. */
struct dirtab_image {
	uint64_t seq, next_id;
	std::map<std::string, std::pair<uint64_t, uint64_t>> files; /* id, size */
	std::map<uint64_t, uint64_t> graves;                        /* id -> size */
};

void put_le64(std::string *s, uint64_t v)
{
	uint64_t le = htole64(v);

	s->append(reinterpret_cast<const char *>(&le), 8);
}

uint64_t get_le64(const char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

uint32_t get_le32(const char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

std::string base_name(const std::string &path)
{
	size_t slash = path.rfind('/');

	return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_log_name(const std::string &name)
{
	size_t n = name.size();

	return n > 4 && name.compare(n - 4, 4, ".log") == 0;
}

bool is_table_name(const std::string &name)
{
	size_t n = name.size();

	return n > 4 && (name.compare(n - 4, 4, ".ldb") == 0 ||
			 name.compare(n - 4, 4, ".sst") == 0);
}

uint64_t entry_bytes(const std::string &name)
{
	return DIRTAB_ENTRY_FIXED + name.size();
}

/*
 * Decode the slot in @buf[0, @len). False with *@why set when it fails
 * any check; *@img is then unspecified.
 */
bool dirtab_decode(const char *buf, size_t len, size_t slot_len,
		   dirtab_image *img, const char **why)
{
	if (len < DIRTAB_HDR_LEN + DIRTAB_CSUM_LEN || get_le64(buf) != DIRTAB_MAGIC) {
		*why = "bad magic";
		return false;
	}
	uint32_t count = get_le32(buf + 24), blen = get_le32(buf + 28);

	if (blen > slot_len - DIRTAB_HDR_LEN - DIRTAB_CSUM_LEN ||
	    DIRTAB_HDR_LEN + blen + DIRTAB_CSUM_LEN > len) {
		*why = "bad length";
		return false;
	}
	if (XXH3_64bits(buf, DIRTAB_HDR_LEN + blen) !=
	    get_le64(buf + DIRTAB_HDR_LEN + blen)) {
		*why = "checksum mismatch";
		return false;
	}
	img->seq = get_le64(buf + 8);
	img->next_id = get_le64(buf + 16);
	img->files.clear();
	img->graves.clear();
	if (img->next_id == 0 || img->next_id > OID_OWNER_MAX + 1) {
		*why = "bad next_file_id";
		return false;
	}
	const char *p = buf + DIRTAB_HDR_LEN, *end = p + blen;
	std::set<uint64_t> ids;

	for (uint32_t i = 0; i < count; i++) {
		if (end - p < 1 || (size_t)(end - p) < DIRTAB_ENTRY_FIXED +
		    (uint8_t)*p) {
			*why = "entry past the end";
			return false;
		}
		size_t nlen = (uint8_t)*p++;
		std::string name(p, nlen);

		p += nlen;
		uint64_t id = get_le64(p), size = get_le64(p + 8);

		p += 16;
		if (id == 0 || id >= img->next_id || !ids.insert(id).second) {
			*why = "bad or duplicate file_id";
			return false;
		}
		bool dup = nlen ? !img->files.emplace(name,
				std::make_pair(id, size)).second :
				!img->graves.emplace(id, size).second;

		if (dup || name.find('/') != std::string::npos) {
			*why = "duplicate or bad name";
			return false;
		}
	}
	if (p != end) {
		*why = "count and length disagree";
		return false;
	}
	return true;
}

class obj_logger : public leveldb::Logger {
public:
	explicit obj_logger(void (*fn)(int, const char *)) : fn_(fn) {}

	void Logv(const char *format, va_list ap) override
	{
		char msg[512];

		if (!fn_)
			return;
		vsnprintf(msg, sizeof(msg), format, ap);
		size_t n = strlen(msg);

		while (n && msg[n - 1] == '\n')
			msg[--n] = '\0';
		fn_(LOG_INFO, msg);
	}

private:
	void (*fn_)(int, const char *);
};

class obj_lock : public leveldb::FileLock {
};

class obj_env : public leveldb::EnvWrapper {
public:
	obj_env(const objenv_store *st, void (*log_fn)(int, const char *))
		: EnvWrapper(leveldb::Env::Default()), st_(*st),
		  slot_len_(st->obj_size / 2), log_fn_(log_fn) {}

	/* leveldb::Env, the file half. */
	Status NewSequentialFile(const std::string &fname,
				 leveldb::SequentialFile **result) override;
	Status NewRandomAccessFile(const std::string &fname,
				   leveldb::RandomAccessFile **result) override;
	Status NewWritableFile(const std::string &fname,
			       leveldb::WritableFile **result) override;
	Status NewAppendableFile(const std::string &fname,
				 leveldb::WritableFile **result) override
	{
		*result = nullptr;
		return Status::NotSupported(fname, "append to an existing file");
	}
	bool FileExists(const std::string &fname) override
	{
		std::lock_guard<std::mutex> l(mu_);

		return files_.count(base_name(fname)) != 0;
	}
	Status GetChildren(const std::string &dir,
			   std::vector<std::string> *result) override;
	Status RemoveFile(const std::string &fname) override;
	Status DeleteFile(const std::string &fname) override
	{
		return RemoveFile(fname);
	}
	Status CreateDir(const std::string &) override { return Status::OK(); }
	Status RemoveDir(const std::string &) override { return Status::OK(); }
	Status DeleteDir(const std::string &) override { return Status::OK(); }
	Status GetFileSize(const std::string &fname, uint64_t *size) override;
	Status RenameFile(const std::string &src, const std::string &target) override;
	Status LockFile(const std::string &fname, leveldb::FileLock **lock) override;
	Status UnlockFile(leveldb::FileLock *lock) override;
	Status GetTestDirectory(std::string *) override
	{
		return Status::NotSupported("objenv has no test directory");
	}
	Status NewLogger(const std::string &, leveldb::Logger **result) override
	{
		*result = new obj_logger(log_fn_);
		return Status::OK();
	}

	/* For kvdb. */
	Status load(bool *bad_table);
	void shutdown();
	bool fenced() const { return fenced_.load(); }
	void stats(uint64_t *files, uint64_t *bytes);
	void env_stats(struct kvdb_env_stats *out);
	void log(int level, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));

	/* The commit pipeline (objenv.h): log tails, settle, sync. */
	tail_ptr open_log(const meta_ptr &meta, const std::string &name);
	void log_append(const tail_ptr &t, const Slice &data);
	Status settle_logs(bool durable = false);
	Status sync_logs();
	Status close_log(const tail_ptr &t, bool persist);
	Status log_status();

	/* For the file objects. @mem: write_mem (replicated memory), the
	 * object noted for the next flush; else durable. */
	Status write_at(uint64_t id, uint64_t off, const char *buf, size_t len,
			const std::string &name, bool mem = false);
	Status read_at(uint64_t id, uint64_t off, size_t len, char *dst,
		       const std::string &name);
	Status close_file(const meta_ptr &meta, uint64_t size, bool persist);
	void count_sync() { syncs_++; }
	bool cache_reserve(uint64_t bytes);
	void cache_release(uint64_t bytes) { cache_bytes_ -= bytes; }
	uint32_t obj_size() const { return st_.obj_size; }

private:
	Status store_error(const std::string &name, const char *what, int err);
	Status persist(uint64_t need_gen);
	void drain_graves();
	int remove_objects(uint64_t id, uint64_t size);
	int probe_size(uint64_t id, uint64_t *size);
	Status read_dirtab_slot(int slot, std::string *buf, bool *absent);
	void add_grave_locked(uint64_t id, const meta_ptr &meta);

	const objenv_store st_;
	const uint64_t slot_len_;
	void (*const log_fn_)(int, const char *);

	std::mutex tw_mu_;              /* one dir-table write at a time */
	uint64_t seq_ = 0;              /* seq of the newest durable slot; tw_mu_ */
	int cur_slot_ = 1;              /* slot holding seq_; tw_mu_ */

	std::mutex mu_;
	std::map<std::string, meta_ptr> files_;
	std::map<uint64_t, grave> graves_;
	uint64_t next_id_ = 1;
	uint64_t table_bytes_ = DIRTAB_HDR_LEN + DIRTAB_CSUM_LEN;
	uint64_t gen_ = 0, durable_gen_ = 0;
	bool locked_ = false;

	std::atomic<bool> fenced_{false};
	std::atomic<uint64_t> cache_bytes_{0};
	std::atomic<uint64_t> obj_writes_{0}, obj_reads_{0}, obj_removes_{0};
	std::atomic<uint64_t> syncs_{0}, files_created_{0}, dirtable_writes_{0};
	std::atomic<uint64_t> log_writes_{0}, flushes_{0};

	/* The commit pipeline. Lock order: sync_mu_, log_io_mu_, then
	 * logs_mu_ or a tail's mu or dirty_mu_ (each alone). */
	std::mutex log_io_mu_;          /* one log write-out at a time */
	std::mutex sync_mu_;            /* one flush at a time */
	std::mutex logs_mu_;
	std::vector<tail_ptr> logs_;    /* open logs, oldest first; logs_mu_ */
	std::atomic<uint64_t> appended_{0};     /* log bytes appended, all logs */
	std::atomic<uint64_t> settled_{0};      /* ...of them in objects */
	std::mutex dirty_mu_;
	std::set<uint64_t> dirty_;      /* written with write_mem since the last flush */
	std::string log_err_;           /* sticky: the first failed log write; dirty_mu_ */
	std::atomic<bool> log_failed_{false};
};

/*
 * Append() buffers; Flush() does nothing (LevelDB calls it after every
 * log record); Sync() writes the unsynced bytes at their offsets.
 */
class obj_writable : public leveldb::WritableFile {
public:
	/* @tail: a log (the commit pipeline writes it out); NULL: a table,
	 * the manifest or CURRENT's temp file (Sync writes durably). */
	obj_writable(obj_env *env, meta_ptr meta, const std::string &name, tail_ptr tail)
		: env_(env), meta_(std::move(meta)), name_(name), tail_(std::move(tail)) {}

	~obj_writable() override
	{
		/* LevelDB drops the last log without Close(): its bytes
		 * must still land. The size is recorded lazily; if that
		 * never happens it is probed from the objects. */
		if (closed_)
			return;
		if (tail_) {
			Status s = env_->close_log(tail_, false);

			if (!s.ok())
				env_->log(LOG_WARNING, "%s: lost unsettled tail: %s",
					  name_.c_str(), s.ToString().c_str());
			return;
		}
		Status s = write_out();

		if (!s.ok())
			env_->log(LOG_WARNING, "%s: lost unsynced tail: %s",
				  name_.c_str(), s.ToString().c_str());
		env_->close_file(meta_, done_, false);
	}

	Status Append(const Slice &data) override
	{
		if (tail_) {
			env_->log_append(tail_, data);
			return env_->log_status();
		}
		buf_.append(data.data(), data.size());
		meta_->size.store(done_ + buf_.size());
		if (buf_.size() >= WRITE_EARLY_BYTES)
			return write_out();
		return Status::OK();
	}

	Status Flush() override { return Status::OK(); }

	Status Sync() override
	{
		env_->count_sync();
		return tail_ ? env_->sync_logs() : write_out();
	}

	Status Close() override
	{
		if (closed_)
			return Status::OK();
		if (tail_) {
			closed_ = true;
			return env_->close_log(tail_, true);
		}
		Status s = write_out();

		closed_ = true;
		if (!s.ok())
			return s;
		return env_->close_file(meta_, done_, true);
	}

private:
	Status write_out()
	{
		if (buf_.empty())
			return Status::OK();
		Status s = env_->write_at(meta_->id, done_, buf_.data(),
					  buf_.size(), name_);

		if (s.ok()) {
			done_ += buf_.size();
			buf_.clear();
		}
		return s;
	}

	obj_env *const env_;
	const meta_ptr meta_;
	const std::string name_;
	const tail_ptr tail_;           /* a log's; then buf_ and done_ unused */
	std::string buf_;               /* bytes [done_, done_ + size) */
	uint64_t done_ = 0;             /* bytes durable in objects */
	bool closed_ = false;
};

class obj_sequential : public leveldb::SequentialFile {
public:
	obj_sequential(obj_env *env, uint64_t id, uint64_t size,
		       const std::string &name)
		: env_(env), id_(id), size_(size), name_(name),
		  log_(is_log_name(name)) {}

	/* Fills @n bytes unless the file ends first: log::Reader takes a
	 * short read for the end of the file. */
	Status Read(size_t n, Slice *result, char *scratch) override
	{
		size_t got = 0;

		while (got < n) {
			if (ra_pos_ == ra_.size()) {
				Status s = refill();

				if (!s.ok())
					return s;
				if (ra_.empty())
					break;
			}
			size_t k = std::min(n - got, ra_.size() - ra_pos_);

			memcpy(scratch + got, ra_.data() + ra_pos_, k);
			ra_pos_ += k;
			got += k;
		}
		*result = Slice(scratch, got);
		return Status::OK();
	}

	Status Skip(uint64_t n) override
	{
		uint64_t buffered = ra_.size() - ra_pos_;

		if (n <= buffered) {
			ra_pos_ += n;
			return Status::OK();
		}
		pos_ = std::min(size_, pos_ + (n - buffered));
		ra_.clear();
		ra_pos_ = 0;
		return Status::OK();
	}

private:
	/* Read ahead up to the next object boundary: one object read. */
	Status refill()
	{
		uint32_t obj = env_->obj_size();
		uint64_t len = std::min<uint64_t>(size_ - pos_, SEQ_READAHEAD);

		len = std::min<uint64_t>(len, obj - pos_ % obj);
		ra_.resize(len);
		ra_pos_ = 0;
		if (!len)
			return Status::OK();
		Status s = env_->read_at(id_, pos_, len, &ra_[0], name_);

		if (s.IsCorruption() && log_) {
			/* An object missing or short inside a log: the power
			 * went out before a settled (not synced) write reached
			 * the disks. The log ends here (objenv.h). */
			env_->log(LOG_WARNING, "%s: ends at byte %llu, not %llu (%s): "
				  "changes after its last sync were lost",
				  name_.c_str(), (unsigned long long)pos_,
				  (unsigned long long)size_, s.ToString().c_str());
			size_ = pos_;
			ra_.clear();
			return Status::OK();
		}
		if (!s.ok()) {
			ra_.clear();
			return s;
		}
		pos_ += len;
		return s;
	}

	obj_env *const env_;
	const uint64_t id_;
	uint64_t size_;
	const std::string name_;
	const bool log_;
	uint64_t pos_ = 0;              /* file offset of ra_'s end */
	std::string ra_;
	size_t ra_pos_ = 0;
};

/*
 * Tables. A small one is read whole at open (cache_); a larger one reads
 * through, except that a read starting where the previous one ended
 * (compaction walking its blocks) fetches up to SEQ_READAHEAD at once.
 */
class obj_random : public leveldb::RandomAccessFile {
public:
	obj_random(obj_env *env, uint64_t id, uint64_t size,
		   const std::string &name, std::string &&cache)
		: env_(env), id_(id), size_(size), name_(name),
		  cache_(std::move(cache)) {}

	~obj_random() override { env_->cache_release(cache_.size()); }

	/* A cached table is served from memory: Table sees a pointer
	 * outside scratch and keeps such blocks out of the block cache. */
	Status Read(uint64_t off, size_t n, Slice *result,
		    char *scratch) const override
	{
		if (off >= size_) {
			*result = Slice(scratch, 0);
			return Status::OK();
		}
		n = std::min<uint64_t>(n, size_ - off);
		if (!cache_.empty()) {
			*result = Slice(cache_.data() + off, n);
			return Status::OK();
		}
		*result = Slice(scratch, n);
		if (from_readahead(off, n, scratch))
			return Status::OK();
		bool sequential = next_off_.exchange(off + n) == off;

		if (sequential && n < SEQ_READAHEAD)
			return read_ahead(off, n, scratch, result);
		Status s = env_->read_at(id_, off, n, scratch, name_);

		if (!s.ok())
			*result = Slice(scratch, 0);
		return s;
	}

private:
	bool from_readahead(uint64_t off, size_t n, char *scratch) const
	{
		std::lock_guard<std::mutex> l(ra_mu_);

		if (!ra_ || off < ra_off_ || off + n > ra_off_ + ra_->size())
			return false;
		memcpy(scratch, ra_->data() + (off - ra_off_), n);
		next_off_.store(off + n);
		return true;
	}

	/* End at an object boundary when that still covers the request. */
	Status read_ahead(uint64_t off, size_t n, char *scratch, Slice *result) const
	{
		uint32_t obj = env_->obj_size();
		uint64_t end = std::min(size_, off + SEQ_READAHEAD);

		if (end / obj * obj >= off + n)
			end = end / obj * obj;
		auto buf = std::make_shared<std::string>(end - off, '\0');
		Status s = env_->read_at(id_, off, buf->size(), &(*buf)[0], name_);

		if (!s.ok()) {
			*result = Slice(scratch, 0);
			return s;
		}
		memcpy(scratch, buf->data(), n);
		std::lock_guard<std::mutex> l(ra_mu_);

		ra_ = std::move(buf);
		ra_off_ = off;
		return s;
	}

	obj_env *const env_;
	const uint64_t id_, size_;
	const std::string name_;
	const std::string cache_;       /* the whole file, or empty */
	mutable std::atomic<uint64_t> next_off_{UINT64_MAX};
	mutable std::mutex ra_mu_;
	mutable std::shared_ptr<const std::string> ra_;  /* bytes at ra_off_ */
	mutable uint64_t ra_off_ = 0;
};

void obj_env::log(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!log_fn_)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fn_(level, msg);
}

Status obj_env::store_error(const std::string &name, const char *what, int err)
{
	if (err == EPERM) {
		if (!fenced_.exchange(true))
			log(LOG_ERR, "%s: %s: fenced, a newer MDS took over",
			    name.c_str(), what);
		return Status::IOError(name, std::string(what) +
				       ": fenced (a newer MDS took over)");
	}
	return Status::IOError(name, std::string(what) + ": " + strerror(err));
}

Status obj_env::write_at(uint64_t id, uint64_t off, const char *buf, size_t len,
			 const std::string &name, bool mem)
{
	const uint32_t obj = st_.obj_size;

	mem = mem && st_.write_mem && st_.flush;
	if ((off + len + obj - 1) / obj > OID_CHUNK_MAX + 1)
		return Status::IOError(name, "file too large for its object ids");
	while (len) {
		uint64_t chunk = off / obj, in = off % obj;
		size_t n = std::min<uint64_t>(len, obj - in);
		uint64_t oid = oid_make(OID_KIND_MDS, id, chunk);
		int r = (mem ? st_.write_mem : st_.write)(st_.ctx, oid, in, buf, n);

		obj_writes_++;
		if (r < 0)
			return store_error(name, "object write", -r);
		if (mem) {
			std::lock_guard<std::mutex> l(dirty_mu_);

			dirty_.insert(oid);
		}
		off += n;
		buf += n;
		len -= n;
	}
	return Status::OK();
}

/* A missing or short object inside the file's size is an error, never
 * zeros: the bytes were acknowledged once. */
Status obj_env::read_at(uint64_t id, uint64_t off, size_t len, char *dst,
			const std::string &name)
{
	const uint32_t obj = st_.obj_size;

	while (len) {
		uint64_t chunk = off / obj, in = off % obj;
		size_t n = std::min<uint64_t>(len, obj - in);
		ssize_t r = st_.read(st_.ctx, oid_make(OID_KIND_MDS, id, chunk),
				     in, dst, n);

		obj_reads_++;
		if (r == -ENOENT)
			return Status::Corruption(name, "object " +
						  std::to_string(chunk) + " missing");
		if (r < 0)
			return store_error(name, "object read", (int)-r);
		if ((size_t)r < n)
			return Status::Corruption(name, "object " +
					std::to_string(chunk) + " shorter than the file");
		off += n;
		dst += n;
		len -= n;
	}
	return Status::OK();
}

bool obj_env::cache_reserve(uint64_t bytes)
{
	uint64_t cur = cache_bytes_.load();

	do {
		if (cur + bytes > TABLE_CACHE_CAP)
			return false;
	} while (!cache_bytes_.compare_exchange_weak(cur, cur + bytes));
	return true;
}

Status obj_env::NewSequentialFile(const std::string &fname,
				  leveldb::SequentialFile **result)
{
	std::string name = base_name(fname);
	meta_ptr meta;

	*result = nullptr;
	{
		std::lock_guard<std::mutex> l(mu_);
		auto it = files_.find(name);

		if (it == files_.end())
			return Status::NotFound(fname);
		meta = it->second;
	}
	*result = new obj_sequential(this, meta->id, meta->size.load(), name);
	return Status::OK();
}

Status obj_env::NewRandomAccessFile(const std::string &fname,
				    leveldb::RandomAccessFile **result)
{
	std::string name = base_name(fname), cache;
	meta_ptr meta;

	*result = nullptr;
	{
		std::lock_guard<std::mutex> l(mu_);
		auto it = files_.find(name);

		if (it == files_.end())
			return Status::NotFound(fname);
		meta = it->second;
	}
	uint64_t size = meta->size.load();

	/* Tables are immutable and read in small blocks: reading a small
	 * one whole costs one object read per object instead of one per
	 * block, and compaction reads it all anyway. */
	if (is_table_name(name) && size &&
	    size <= (uint64_t)TABLE_CACHE_OBJS * st_.obj_size &&
	    cache_reserve(size)) {
		cache.resize(size);
		Status s = read_at(meta->id, 0, size, &cache[0], name);

		if (!s.ok()) {
			cache_release(size);
			return s;
		}
	}
	*result = new obj_random(this, meta->id, size, name, std::move(cache));
	return Status::OK();
}

void obj_env::add_grave_locked(uint64_t id, const meta_ptr &meta)
{
	uint64_t size = meta->writing ? SIZE_UNKNOWN : meta->size.load();

	graves_[id] = grave{ size, ++gen_, false };
	table_bytes_ += DIRTAB_ENTRY_FIXED;
}

Status obj_env::NewWritableFile(const std::string &fname,
				leveldb::WritableFile **result)
{
	std::string name = base_name(fname);
	meta_ptr meta;
	uint64_t gen;

	*result = nullptr;
	if (name.empty() || name.size() > UINT8_MAX)
		return Status::InvalidArgument(fname, "bad name for the dir table");
	{
		std::lock_guard<std::mutex> l(mu_);
		auto it = files_.find(name);
		uint64_t after = table_bytes_ +
			(it == files_.end() ? entry_bytes(name) : DIRTAB_ENTRY_FIXED);

		if (after > slot_len_)
			return Status::IOError(fname, "MDS dir table full (" +
					std::to_string(files_.size()) + " files)");
		if (next_id_ > OID_OWNER_MAX)
			return Status::IOError(fname, "MDS file ids exhausted");
		if (it != files_.end()) {
			add_grave_locked(it->second->id, it->second);
			files_.erase(it);
		} else {
			table_bytes_ += entry_bytes(name);
		}
		meta = std::make_shared<file_meta>(next_id_++, 0, true);
		files_[name] = meta;
		gen = ++gen_;
	}
	/* Before the first Sync is acknowledged, a restart must find the
	 * name; writing the table now is the simplest way. */
	Status s = persist(gen);

	if (!s.ok())
		return s;
	files_created_++;
	*result = new obj_writable(this, meta, name,
				   is_log_name(name) ? open_log(meta, name) : nullptr);
	return Status::OK();
}

Status obj_env::close_file(const meta_ptr &meta, uint64_t size, bool now)
{
	uint64_t gen;
	{
		std::lock_guard<std::mutex> l(mu_);

		meta->size.store(size);
		meta->writing = false;
		gen = ++gen_;
	}
	return now ? persist(gen) : Status::OK();
}

Status obj_env::GetChildren(const std::string &, std::vector<std::string> *result)
{
	std::lock_guard<std::mutex> l(mu_);

	result->clear();
	for (const auto &f : files_)
		result->push_back(f.first);
	return Status::OK();
}

Status obj_env::RemoveFile(const std::string &fname)
{
	std::string name = base_name(fname);
	{
		std::lock_guard<std::mutex> l(mu_);
		auto it = files_.find(name);

		if (it == files_.end())
			return Status::NotFound(fname);
		add_grave_locked(it->second->id, it->second);
		table_bytes_ -= entry_bytes(name);
		files_.erase(it);
	}
	/* Lazy: the removal rides on the next table write, and the objects
	 * of files removed before that write go now. */
	drain_graves();
	return Status::OK();
}

Status obj_env::GetFileSize(const std::string &fname, uint64_t *size)
{
	std::lock_guard<std::mutex> l(mu_);
	auto it = files_.find(base_name(fname));

	if (it == files_.end())
		return Status::NotFound(fname);
	*size = it->second->size.load();
	return Status::OK();
}

/* Renaming "*.dbtmp" to CURRENT is the DB's commit point: durable here. */
Status obj_env::RenameFile(const std::string &src, const std::string &target)
{
	std::string from = base_name(src), to = base_name(target);
	uint64_t gen;

	if (to.empty() || to.size() > UINT8_MAX)
		return Status::InvalidArgument(target, "bad name for the dir table");
	{
		std::lock_guard<std::mutex> l(mu_);
		auto it = files_.find(from);

		if (it == files_.end())
			return Status::NotFound(src);
		if (from == to)
			return Status::OK();
		/* A replaced target's entry becomes a graveyard entry of
		 * the same fixed size as the source's. */
		auto old = files_.find(to);
		uint64_t after = table_bytes_ - from.size() +
			(old == files_.end() ? to.size() : 0);

		if (after > slot_len_)
			return Status::IOError(target, "MDS dir table full");
		meta_ptr meta = it->second;

		files_.erase(it);
		table_bytes_ -= entry_bytes(from);
		if (old != files_.end()) {
			add_grave_locked(old->second->id, old->second);
			old->second = meta;
		} else {
			files_[to] = meta;
			table_bytes_ += entry_bytes(to);
		}
		gen = ++gen_;
	}
	return persist(gen);
}

/* Exclusion between MDSs is ZooKeeper's and the store's fence; this only
 * keeps LevelDB's own rule of one DB object per lock. */
Status obj_env::LockFile(const std::string &fname, leveldb::FileLock **lock)
{
	std::lock_guard<std::mutex> l(mu_);

	*lock = nullptr;
	if (locked_)
		return Status::IOError(fname, "already locked");
	locked_ = true;
	*lock = new obj_lock();
	return Status::OK();
}

Status obj_env::UnlockFile(leveldb::FileLock *lock)
{
	std::lock_guard<std::mutex> l(mu_);

	delete lock;
	locked_ = false;
	return Status::OK();
}

/*
 * Make every mutation up to @need_gen durable. The table is written to
 * the slot not holding seq_; seq_ advances only on success, so a failed
 * write is retried into the same slot and the good one is never touched.
 */
Status obj_env::persist(uint64_t need_gen)
{
	std::lock_guard<std::mutex> w(tw_mu_);
	std::string buf;
	uint64_t gen;
	uint32_t count = 0;
	{
		std::lock_guard<std::mutex> l(mu_);

		if (durable_gen_ >= need_gen)
			return Status::OK();
		gen = gen_;
		buf.reserve(table_bytes_);
		buf.resize(DIRTAB_HDR_LEN);
		for (const auto &f : files_) {
			buf.push_back((char)f.first.size());
			buf.append(f.first);
			put_le64(&buf, f.second->id);
			put_le64(&buf, f.second->writing ? SIZE_UNKNOWN :
				 f.second->size.load());
			count++;
		}
		for (const auto &g : graves_) {
			buf.push_back('\0');
			put_le64(&buf, g.first);
			put_le64(&buf, g.second.size);
			count++;
		}
		std::string hdr;

		put_le64(&hdr, DIRTAB_MAGIC);
		put_le64(&hdr, seq_ + 1);
		put_le64(&hdr, next_id_);
		uint32_t c = htole32(count);
		uint32_t blen = htole32((uint32_t)(buf.size() - DIRTAB_HDR_LEN));

		hdr.append(reinterpret_cast<const char *>(&c), 4);
		hdr.append(reinterpret_cast<const char *>(&blen), 4);
		buf.replace(0, DIRTAB_HDR_LEN, hdr);
	}
	put_le64(&buf, XXH3_64bits(buf.data(), buf.size()));
	if (buf.size() > slot_len_)     /* the callers' checks prevent it */
		return Status::IOError("MDS dir table full");

	int slot = cur_slot_ ^ 1;
	int r = st_.write(st_.ctx, oid_make(OID_KIND_MDS, 0, 0),
			  (uint64_t)slot * slot_len_, buf.data(), buf.size());

	obj_writes_++;
	if (r < 0)
		return store_error("dir table", "write", -r);
	dirtable_writes_++;
	seq_++;
	cur_slot_ = slot;
	std::lock_guard<std::mutex> l(mu_);

	durable_gen_ = std::max(durable_gen_, gen);
	return Status::OK();
}

int obj_env::probe_size(uint64_t id, uint64_t *size)
{
	uint64_t last_len = 0, chunk;

	for (chunk = 0; chunk <= OID_CHUNK_MAX; chunk++) {
		uint64_t len;
		int r = st_.length(st_.ctx, oid_make(OID_KIND_MDS, id, chunk), &len);

		if (r == -ENOENT)
			break;
		if (r < 0)
			return r;
		last_len = len;
	}
	*size = chunk ? (chunk - 1) * st_.obj_size + last_len : 0;
	return 0;
}

int obj_env::remove_objects(uint64_t id, uint64_t size)
{
	int r;

	if (size == SIZE_UNKNOWN && (r = probe_size(id, &size)) < 0)
		return r;
	uint64_t chunks = (size + st_.obj_size - 1) / st_.obj_size;

	/* Last chunk first: if this stops half-way, what is left is a
	 * prefix, and probing it after a restart finds all of it. */
	for (uint64_t c = chunks; c-- > 0;) {
		r = st_.remove(st_.ctx, oid_make(OID_KIND_MDS, id, c));
		obj_removes_++;
		if (r < 0 && r != -ENOENT)
			return r;
	}
	return 0;
}

/* Remove the objects of graveyard files whose removal is durable. */
void obj_env::drain_graves()
{
	std::vector<std::pair<uint64_t, uint64_t>> todo;
	{
		std::lock_guard<std::mutex> l(mu_);

		for (auto &g : graves_) {
			if (g.second.busy || g.second.gen > durable_gen_)
				continue;
			g.second.busy = true;
			todo.emplace_back(g.first, g.second.size);
		}
	}
	for (const auto &t : todo) {
		int r = remove_objects(t.first, t.second);

		if (r < 0) {
			Status s = store_error("graveyard", "object remove", -r);

			log(LOG_WARNING, "file_id=%llu: %s; retried later",
			    (unsigned long long)t.first, s.ToString().c_str());
		}
		std::lock_guard<std::mutex> l(mu_);

		if (r < 0) {
			graves_[t.first].busy = false;
			continue;
		}
		graves_.erase(t.first);
		table_bytes_ -= DIRTAB_ENTRY_FIXED;
		gen_++;
	}
}

Status obj_env::read_dirtab_slot(int slot, std::string *buf, bool *absent)
{
	const uint64_t oid = oid_make(OID_KIND_MDS, 0, 0), base = slot * slot_len_;
	size_t want = std::min<uint64_t>(slot_len_, DIRTAB_FIRST_READ);

	*absent = false;
	buf->resize(want);
	ssize_t r = st_.read(st_.ctx, oid, base, &(*buf)[0], want);

	obj_reads_++;
	if (r == -ENOENT) {
		*absent = true;
		buf->clear();
		return Status::OK();
	}
	if (r < 0)
		return store_error("dir table", "read", (int)-r);
	buf->resize(r);
	if ((size_t)r < DIRTAB_HDR_LEN || get_le64(buf->data()) != DIRTAB_MAGIC)
		return Status::OK();
	uint64_t total = DIRTAB_HDR_LEN + (uint64_t)get_le32(buf->data() + 28) +
			 DIRTAB_CSUM_LEN;

	if (total <= (size_t)r || total > slot_len_)
		return Status::OK();    /* complete, or a length decode rejects */
	size_t have = r;

	buf->resize(total);
	r = st_.read(st_.ctx, oid, base + have, &(*buf)[have], total - have);
	obj_reads_++;
	if (r < 0 && r != -ENOENT)
		return store_error("dir table", "read", (int)-r);
	buf->resize(have + std::max<ssize_t>(r, 0));
	return Status::OK();
}

/*
 * Read the dir table, pick the valid slot with the highest seq, and
 * probe the sizes of files that were open when the last MDS stopped.
 */
Status obj_env::load(bool *bad_table)
{
	std::string raw[2];
	dirtab_image img[2];
	bool valid[2] = { false, false }, absent;
	const char *why[2] = { "", "" };

	*bad_table = false;
	for (int i = 0; i < 2; i++) {
		Status s = read_dirtab_slot(i, &raw[i], &absent);

		if (!s.ok())
			return s;
		if (absent)
			return Status::OK();    /* a new database */
		valid[i] = dirtab_decode(raw[i].data(), raw[i].size(), slot_len_,
					 &img[i], &why[i]);
	}
	int best = valid[0] && valid[1] ? (img[1].seq > img[0].seq) :
		   valid[1] ? 1 : valid[0] ? 0 : -1;

	if (best < 0) {
		/* Slot 1 is written second, so a table whose slot 1 was
		 * never written and whose slot 0 is torn is a database
		 * whose first table write never finished: nothing in it
		 * was ever acknowledged. */
		if (raw[1].empty()) {
			log(LOG_WARNING, "dir table: first write torn (%s); "
			    "starting an empty database", why[0]);
			return Status::OK();
		}
		*bad_table = true;
		return Status::Corruption("MDS dir table: no valid slot",
				std::string("slot 0: ") + why[0] + ", slot 1: " + why[1]);
	}
	if (!valid[best ^ 1] && !raw[best ^ 1].empty())
		log(LOG_WARNING, "dir table: slot %d invalid (%s), using slot %d "
		    "seq=%llu", best ^ 1, why[best ^ 1], best,
		    (unsigned long long)img[best].seq);

	const dirtab_image &t = img[best];
	std::lock_guard<std::mutex> w(tw_mu_);
	std::lock_guard<std::mutex> l(mu_);

	seq_ = t.seq;
	cur_slot_ = best;
	next_id_ = t.next_id;
	for (const auto &f : t.files) {
		uint64_t size = f.second.second;

		if (size == SIZE_UNKNOWN) {
			int r = probe_size(f.second.first, &size);

			if (r < 0)
				return store_error(f.first, "object length", -r);
			log(LOG_INFO, "%s: open at the last stop, %llu bytes in objects",
			    f.first.c_str(), (unsigned long long)size);
		}
		files_[f.first] = std::make_shared<file_meta>(f.second.first, size, false);
		table_bytes_ += entry_bytes(f.first);
	}
	for (const auto &g : t.graves) {
		graves_[g.first] = grave{ g.second, 0, false };
		table_bytes_ += DIRTAB_ENTRY_FIXED;
	}
	return Status::OK();
}

/* Persist what was folded lazily, finish the graveyard, persist again. */
void obj_env::shutdown()
{
	for (int pass = 0; pass < 2; pass++) {
		uint64_t gen;
		{
			std::lock_guard<std::mutex> l(mu_);

			gen = gen_;
		}
		Status s = persist(gen);

		if (!s.ok()) {
			log(LOG_WARNING, "close: %s", s.ToString().c_str());
			return;
		}
		drain_graves();
	}
}

void obj_env::stats(uint64_t *files, uint64_t *bytes)
{
	std::lock_guard<std::mutex> l(mu_);

	*files = files_.size();
	*bytes = 0;
	for (const auto &f : files_)
		*bytes += f.second->size.load();
}

void obj_env::env_stats(struct kvdb_env_stats *out)
{
	out->obj_writes = obj_writes_.load();
	out->obj_reads = obj_reads_.load();
	out->obj_removes = obj_removes_.load();
	out->syncs = syncs_.load();
	out->files_created = files_created_.load();
	out->dirtable_writes = dirtable_writes_.load();
	out->log_writes = log_writes_.load();
	out->flushes = flushes_.load();
}

tail_ptr obj_env::open_log(const meta_ptr &meta, const std::string &name)
{
	tail_ptr t = std::make_shared<log_tail>(meta, name);
	std::lock_guard<std::mutex> l(logs_mu_);

	logs_.push_back(t);
	return t;
}

void obj_env::log_append(const tail_ptr &t, const Slice &data)
{
	size_t pending;
	{
		std::lock_guard<std::mutex> l(t->mu);

		t->buf.append(data.data(), data.size());
		t->meta->size.store(t->taken + t->buf.size());
		appended_ += data.size();
		pending = t->buf.size();
	}
	if (pending >= WRITE_EARLY_BYTES)
		settle_logs();          /* its error is sticky: log_status() */
}

Status obj_env::log_status()
{
	if (!log_failed_.load())
		return Status::OK();
	std::lock_guard<std::mutex> l(dirty_mu_);

	return Status::IOError(log_err_);
}

/*
 * Write every log's unwritten tail, oldest log first. One thread writes
 * at a time; those waiting meanwhile usually find their bytes written by
 * it (group commit). Bytes appended after the call may go out too.
 * @durable (sync_logs): the tails go as synced writes, which make every
 * earlier byte of their objects durable too (each replica fdatasyncs the
 * object's file), so they need no flush after: one replicated write per
 * sync instead of a write and a flush. Objects written to memory before
 * stay in dirty_ and are flushed as ever (a synced write proves nothing
 * about a copy that recovery brought meanwhile).
 */
Status obj_env::settle_logs(bool durable)
{
	uint64_t target = appended_.load();

	if (settled_.load() >= target)
		return log_status();
	std::lock_guard<std::mutex> io(log_io_mu_);

	if (settled_.load() >= target || log_failed_.load())
		return log_status();
	std::vector<tail_ptr> logs;
	{
		std::lock_guard<std::mutex> l(logs_mu_);

		logs = logs_;
	}
	for (const tail_ptr &t : logs) {
		std::string out;
		uint64_t off;
		{
			std::lock_guard<std::mutex> l(t->mu);

			out.swap(t->buf);
			off = t->taken;
			t->taken += out.size();
		}
		if (out.empty())
			continue;
		Status s = write_at(t->meta->id, off, out.data(), out.size(), t->name,
				    !durable);

		log_writes_++;
		if (!s.ok()) {
			std::lock_guard<std::mutex> l(dirty_mu_);

			if (!log_failed_.exchange(true))
				log_err_ = s.ToString();
			return Status::IOError(log_err_);
		}
		settled_ += out.size();
	}
	return Status::OK();
}

/* Settle, then flush every object written to memory since the last
 * flush: one flush at a time, so a caller never returns while a flush
 * that holds its objects is still running. */
Status obj_env::sync_logs()
{
	Status s = settle_logs(true);

	if (!s.ok() || !st_.flush)
		return s;
	std::lock_guard<std::mutex> sl(sync_mu_);
	std::vector<uint64_t> oids;
	{
		std::lock_guard<std::mutex> l(dirty_mu_);

		oids.assign(dirty_.begin(), dirty_.end());
		dirty_.clear();
	}
	if (oids.empty())
		return log_status();
	flushes_++;
	int r = st_.flush(st_.ctx, oids.data(), oids.size());

	if (r < 0 && r != -ENOENT) {
		/* Not durable yet, still in the replicas' memory (a crash
		 * loses nothing): the next sync tries these again. Only a
		 * fence ends this database. */
		s = store_error("log", "flush", -r);
		std::lock_guard<std::mutex> l(dirty_mu_);

		dirty_.insert(oids.begin(), oids.end());
		return s;
	}
	return log_status();
}

/* A log is done (LevelDB switched to a new one, or closes): its bytes
 * are made durable before the dir table may record its size. */
Status obj_env::close_log(const tail_ptr &t, bool persist)
{
	Status s = sync_logs();
	{
		std::lock_guard<std::mutex> l(logs_mu_);

		logs_.erase(std::remove(logs_.begin(), logs_.end(), t), logs_.end());
	}
	if (!s.ok())
		return s;
	uint64_t size;
	{
		std::lock_guard<std::mutex> l(t->mu);

		size = t->taken;
	}
	return close_file(t->meta, size, persist);
}

void set_err(char *err, size_t errlen, const std::string &msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg.c_str());
}

} /* namespace */

struct kvdb {
	obj_env *env = nullptr;
	leveldb::DB *db = nullptr;
	leveldb::Cache *cache = nullptr;
	const leveldb::FilterPolicy *filter = nullptr;
	leveldb::Logger *info_log = nullptr;
};

struct kvbatch {
	leveldb::WriteBatch wb;
};

struct kviter {
	leveldb::Iterator *it;
};

static void kvdb_free(struct kvdb *db)
{
	if (db->db) {
		Status s = db->env->sync_logs();

		if (!s.ok())
			db->env->log(LOG_WARNING, "close: %s", s.ToString().c_str());
	}
	delete db->db;          /* waits for background compaction */
	if (db->env)
		db->env->shutdown();
	delete db->env;
	delete db->cache;
	delete db->filter;
	delete db->info_log;
	delete db;
}

int kvdb_open(const struct objenv_store *st, const struct kvdb_opts *opts,
	      struct kvdb **out, char *err, size_t errlen)
{
	static const struct kvdb_opts defaults = {};
	bool bad_table;

	if (!opts)
		opts = &defaults;
	if (!st || !st->write || !st->read || !st->length || !st->remove ||
	    st->obj_size < (64u << 10) || (st->obj_size & (st->obj_size - 1))) {
		set_err(err, errlen, "objenv: bad store (callbacks, or obj_size "
			"not a power of two >= 64 KiB)");
		return -EINVAL;
	}
	struct kvdb *db = new (std::nothrow) kvdb;

	if (!db) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	db->env = new obj_env(st, opts->log);
	Status s = db->env->load(&bad_table);

	if (!s.ok()) {
		int ret = bad_table ? -EBADMSG : db->env->fenced() ? -EPERM : -EIO;

		set_err(err, errlen, s.ToString());
		kvdb_free(db);
		return ret;
	}
	db->cache = leveldb::NewLRUCache(opts->cache_bytes ? opts->cache_bytes :
					 64u << 20);
	db->filter = leveldb::NewBloomFilterPolicy(10);
	db->info_log = new obj_logger(opts->log);

	leveldb::Options o;

	o.env = db->env;
	o.create_if_missing = true;
	o.paranoid_checks = true;
	o.write_buffer_size = opts->write_buffer ? opts->write_buffer : 4u << 20;
	o.max_file_size = st->obj_size;
	o.block_cache = db->cache;
	o.filter_policy = db->filter;
	o.max_open_files = 10000;
	o.reuse_logs = false;
	o.info_log = db->info_log;
	s = leveldb::DB::Open(o, OBJENV_DBNAME, &db->db);
	if (!s.ok()) {
		int ret = db->env->fenced() ? -EPERM : -EIO;

		set_err(err, errlen, s.ToString());
		db->db = nullptr;
		kvdb_free(db);
		return ret;
	}
	*out = db;
	return 0;
}

void kvdb_close(struct kvdb *db)
{
	if (db)
		kvdb_free(db);
}

int kvdb_get(struct kvdb *db, const void *key, size_t klen, char **val, size_t *vlen)
{
	std::string v;
	Status s = db->db->Get(leveldb::ReadOptions(),
			       Slice(static_cast<const char *>(key), klen), &v);

	if (s.IsNotFound())
		return -ENOENT;
	if (!s.ok()) {
		db->env->log(LOG_ERR, "get: %s", s.ToString().c_str());
		return -EIO;
	}
	char *p = static_cast<char *>(malloc(v.size() ? v.size() : 1));

	if (!p)
		return -ENOMEM;
	memcpy(p, v.data(), v.size());
	*val = p;
	*vlen = v.size();
	return 0;
}

struct kvbatch *kvbatch_new(void)
{
	return new (std::nothrow) kvbatch;
}

void kvbatch_put(struct kvbatch *b, const void *key, size_t klen,
		 const void *val, size_t vlen)
{
	b->wb.Put(Slice(static_cast<const char *>(key), klen),
		  Slice(static_cast<const char *>(val), vlen));
}

void kvbatch_del(struct kvbatch *b, const void *key, size_t klen)
{
	b->wb.Delete(Slice(static_cast<const char *>(key), klen));
}

void kvbatch_clear(struct kvbatch *b)
{
	b->wb.Clear();
}

void kvbatch_free(struct kvbatch *b)
{
	delete b;
}

/* The flag, not the text: once fenced, LevelDB's sticky error may
 * carry any message, and every write must still say -EPERM. */
static int kvdb_err(struct kvdb *db, const Status &s, char *err, size_t errlen)
{
	if (s.ok())
		return 0;
	set_err(err, errlen, s.ToString());
	return db->env->fenced() ? -EPERM : -EIO;
}

int kvdb_apply(struct kvdb *db, struct kvbatch *b, char *err, size_t errlen)
{
	Status s = db->env->log_status();

	/* sync=false: the log's Append only buffers (obj_env::log_append);
	 * kvdb_settle writes it out. */
	if (s.ok())
		s = db->db->Write(leveldb::WriteOptions(), &b->wb);
	return kvdb_err(db, s, err, errlen);
}

int kvdb_settle(struct kvdb *db, char *err, size_t errlen)
{
	return kvdb_err(db, db->env->settle_logs(), err, errlen);
}

int kvdb_sync(struct kvdb *db, char *err, size_t errlen)
{
	return kvdb_err(db, db->env->sync_logs(), err, errlen);
}

int kvdb_write(struct kvdb *db, struct kvbatch *b, char *err, size_t errlen)
{
	int ret = kvdb_apply(db, b, err, errlen);

	return ret ? ret : kvdb_settle(db, err, errlen);
}

struct kviter *kvdb_iter(struct kvdb *db)
{
	kviter *it = new (std::nothrow) kviter;

	if (it)
		it->it = db->db->NewIterator(leveldb::ReadOptions());
	return it;
}

void kviter_seek(struct kviter *it, const void *key, size_t klen)
{
	it->it->Seek(Slice(static_cast<const char *>(key), klen));
}

int kviter_valid(const struct kviter *it)
{
	return it->it->Valid();
}

void kviter_next(struct kviter *it)
{
	it->it->Next();
}

const char *kviter_key(const struct kviter *it, size_t *len)
{
	Slice k = it->it->key();

	*len = k.size();
	return k.data();
}

const char *kviter_value(const struct kviter *it, size_t *len)
{
	Slice v = it->it->value();

	*len = v.size();
	return v.data();
}

int kviter_error(const struct kviter *it)
{
	return it->it->status().ok() ? 0 : -EIO;
}

void kviter_free(struct kviter *it)
{
	if (!it)
		return;
	delete it->it;
	delete it;
}

void kvdb_stats(struct kvdb *db, uint64_t *files, uint64_t *bytes)
{
	db->env->stats(files, bytes);
}

void kvdb_env_stats(struct kvdb *db, struct kvdb_env_stats *out)
{
	db->env->env_stats(out);
}
