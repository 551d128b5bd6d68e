/*
 * inode.c - the inodes the kernel holds (lookup counts), what is
 * pending on them, and pushing that to the mds (fs.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/sdfs_proto.h"
#include "fs/fs.h"

#define TAB_SIZE 65536

int fnode_table_init(struct fs *fs)
{
	pthread_mutex_init(&fs->lock, NULL);
	fs->tab_size = TAB_SIZE;
	fs->tab = calloc(fs->tab_size, sizeof(*fs->tab));
	if (!fs->tab)
		return -ENOMEM;
	/* the root's node, never looked up: for what changes there bring
	 * (fnode_set_stat_newer) and its names (dnames.c) */
	return fnode_get(fs, SDFS_ROOT_INO, 0) ? 0 : -ENOMEM;
}

static size_t slot(struct fs *fs, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 40) % fs->tab_size;
}

struct fnode *fnode_find_locked(struct fs *fs, uint64_t ino)
{
	struct fnode *n;

	for (n = fs->tab[slot(fs, ino)]; n && n->ino != ino; n = n->next)
		;
	return n;
}

struct fnode *fnode_find(struct fs *fs, uint64_t ino)
{
	struct fnode *n;

	pthread_mutex_lock(&fs->lock);
	for (n = fs->tab[slot(fs, ino)]; n && n->ino != ino; n = n->next)
		;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

struct fnode *fnode_get(struct fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct fnode *n;
	size_t i = slot(fs, ino);

	pthread_mutex_lock(&fs->lock);
	for (n = fs->tab[i]; n && n->ino != ino; n = n->next)
		;
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (n) {
			n->ino = ino;
			pthread_mutex_init(&n->lock, NULL);
			pthread_cond_init(&n->atime_done, NULL);
			pthread_rwlock_init(&n->vol_rw, NULL);
			n->next = fs->tab[i];
			fs->tab[i] = n;
			fs->count++;
		}
	}
	if (n)
		n->nlookup += nlookup;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

/* With fs->lock held: unlink and free @n if nothing holds it. */
static void maybe_free(struct fs *fs, struct fnode *n)
{
	struct fnode **p;

	if (n->nlookup || n->opens || n->pins || n->ino == 1)   /* the root: the kernel never forgets it */
		return;
	for (p = &fs->tab[slot(fs, n->ino)]; *p && *p != n; p = &(*p)->next)
		;
	if (*p)
		*p = n->next;
	fs->count--;
	pthread_mutex_destroy(&n->lock);
	pthread_cond_destroy(&n->atime_done);
	pthread_rwlock_destroy(&n->vol_rw);
	free(n->dirty);
	space_free(n);
	dnames_free(n);
	free(n);
}

void fnode_forget(struct fs *fs, uint64_t ino, uint64_t cnt)
{
	struct fnode *n;

	pthread_mutex_lock(&fs->lock);
	for (n = fs->tab[slot(fs, ino)]; n && n->ino != ino; n = n->next)
		;
	if (n) {
		n->nlookup = n->nlookup > cnt ? n->nlookup - cnt : 0;
		maybe_free(fs, n);
	}
	pthread_mutex_unlock(&fs->lock);
}

/* Nodes of the mds (not .snap ones, snapdir.c: bits 62, 63) are held
 * open at the mds from the first open to the last close here, so a file
 * unlinked meanwhile (here or on another mount) stays until then. */
static int held_at_mds(uint64_t ino)
{
	return (ino >> 62) == 0;
}

void fnode_open(struct fs *fs, struct fnode *n)
{
	int first;

	pthread_mutex_lock(&fs->lock);
	first = n->opens++ == 0;
	if (first)
		fs->open_nodes++;
	pthread_mutex_unlock(&fs->lock);
	/* counted in libsdfs: a release racing with this settles there */
	if (first && held_at_mds(n->ino))
		sdfs_ns_hold(fs->s, n->ino);
}

void fnode_close(struct fs *fs, struct fnode *n)
{
	uint64_t ino = n->ino;
	int last = 0;

	pthread_mutex_lock(&fs->lock);
	if (n->opens > 0 && --n->opens == 0) {
		fs->open_nodes--;
		last = 1;
	}
	maybe_free(fs, n);
	pthread_mutex_unlock(&fs->lock);
	if (last && held_at_mds(ino))   /* the last close of it here */
		sdfs_ns_release(fs->s, ino);
}

void fnode_pin(struct fs *fs, struct fnode *n)
{
	pthread_mutex_lock(&fs->lock);
	n->pins++;
	pthread_mutex_unlock(&fs->lock);
}

void fnode_unpin(struct fs *fs, struct fnode *n)
{
	pthread_mutex_lock(&fs->lock);
	if (n->pins > 0)
		n->pins--;
	maybe_free(fs, n);
	pthread_mutex_unlock(&fs->lock);
}

void fnode_wait_atime(struct fnode *n)
{
	pthread_mutex_lock(&n->lock);
	while (n->atime_busy)
		pthread_cond_wait(&n->atime_done, &n->lock);
	pthread_mutex_unlock(&n->lock);
}

uint64_t fnode_ver(struct fnode *n)
{
	uint64_t v;

	pthread_mutex_lock(&n->lock);
	v = n->attr_ver;
	pthread_mutex_unlock(&n->lock);
	return v;
}

int fnode_leased_stat(struct fnode *n, struct sdfs_stat *st)
{
	int64_t now = inval_now_ns();
	int ok;

	pthread_mutex_lock(&n->lock);
	ok = n->leased_until > now;
	if (ok) {
		*st = n->st;
		st->flags &= ~SDFS_STAT_LEASED;
	}
	pthread_mutex_unlock(&n->lock);
	return ok;
}

static void unlease(struct fs *fs, uint64_t ino, int atime_only)
{
	struct fnode *n;

	pthread_mutex_lock(&fs->lock);
	n = fnode_find_locked(fs, ino);
	if (n) {
		pthread_mutex_lock(&n->lock);
		n->leased_until = 0;
		if (!atime_only)
			space_forget(n);        /* another client's change: maybe a truncate */
		pthread_mutex_unlock(&n->lock);
	}
	pthread_mutex_unlock(&fs->lock);
}

void fnode_unlease(struct fs *fs, uint64_t ino)
{
	unlease(fs, ino, 0);
}

void fnode_unlease_atime(struct fs *fs, uint64_t ino)
{
	unlease(fs, ino, 1);
}

void fnode_unlease_all(struct fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	for (size_t b = 0; b < fs->tab_size; b++)
		for (struct fnode *n = fs->tab[b]; n; n = n->next) {
			pthread_mutex_lock(&n->lock);
			n->leased_until = 0;
			pthread_mutex_unlock(&n->lock);
		}
	pthread_mutex_unlock(&fs->lock);
}

void fnode_set_stat(struct fnode *n, const struct sdfs_stat *st, struct sdfs_stat *out)
{
	fnode_set_stat_v(n, st, UINT64_MAX, out);
}

/* With n->lock held: take @st as the mds's state (and its lease). */
static void take_stat(struct fnode *n, const struct sdfs_stat *st)
{
	if (st->size < n->st.size)
		space_forget(n);        /* truncated: chunks may be gone */
	n->st = *st;
	n->attr_ver++;
	/* Under n->lock: an invalidation bumps the mark before it
	 * unleases (fnode_unlease takes this lock), so either it
	 * sees this lease or inval_lease_end sees it. */
	if (st->flags & SDFS_STAT_LEASED) {
		int64_t end = inval_lease_end();

		if (end > n->leased_until)
			n->leased_until = end;
	}
	if (n->pending_size && n->pending_size <= st->size)
		n->pending_size = 0;
}

static _Thread_local uint64_t newer_calls;

uint64_t fnode_newer_count(void)
{
	return newer_calls;
}

void fnode_set_stat_newer(struct fs *fs, const struct sdfs_stat *st)
{
	struct fnode *n;

	newer_calls++;

	pthread_mutex_lock(&fs->lock);
	n = fnode_find_locked(fs, st->ino);
	if (n) {
		pthread_mutex_lock(&n->lock);
		/* replies of two changes may come in either order; every
		 * change these come from moves ctime */
		if (st->ctime_ns >= n->st.ctime_ns)
			take_stat(n, st);
		pthread_mutex_unlock(&n->lock);
	}
	pthread_mutex_unlock(&fs->lock);
	if (st->flags & SDFS_STAT_LISTING)
		dnames_renew(fs, st->ino);
}

int fnode_leased_dir(struct fnode *n, struct sdfs_stat *st, double *left_s)
{
	int64_t now = inval_now_ns();
	int ok;

	pthread_mutex_lock(&n->lock);
	ok = n->leased_until > now && S_ISDIR(n->st.mode);
	if (ok) {
		*st = n->st;
		st->flags &= ~SDFS_STAT_LEASED;
		*left_s = (double)(n->leased_until - now) / 1e9;
	}
	pthread_mutex_unlock(&n->lock);
	return ok;
}

void fnode_set_stat_v(struct fnode *n, const struct sdfs_stat *st, uint64_t ver,
		      struct sdfs_stat *out)
{
	pthread_mutex_lock(&n->lock);
	if (ver == UINT64_MAX || ver == n->attr_ver)
		take_stat(n, st);
	*out = *st;
	if (n->pending_size > out->size)
		out->size = n->pending_size;
	space_overlay(n, out);
	if (n->mtime_dirty && n->wrote_ns > out->mtime_ns)
		out->mtime_ns = n->wrote_ns;    /* written here, not pushed yet */
	if (n->mtime_dirty && n->wrote_ns > out->ctime_ns)
		out->ctime_ns = n->wrote_ns;
	pthread_mutex_unlock(&n->lock);
}

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* With n->lock held. On ENOMEM the chunk is forgotten: an fsync then
 * misses it, so say so. */
static int mark_dirty(struct fnode *n, uint64_t c)
{
	for (size_t i = 0; i < n->ndirty; i++)
		if (n->dirty[i] == c)
			return 0;
	if (n->ndirty == n->cap_dirty) {
		size_t cap = n->cap_dirty ? n->cap_dirty * 2 : 8;
		uint64_t *d = realloc(n->dirty, cap * sizeof(*d));

		if (!d)
			return -ENOMEM;
		n->dirty = d;
		n->cap_dirty = cap;
	}
	n->dirty[n->ndirty++] = c;
	return 0;
}

void fnode_wrote(struct fnode *n, uint64_t off, uint64_t len)
{
	uint32_t osz;
	uint64_t end = off + len;

	if (!len)
		return;
	pthread_mutex_lock(&n->lock);
	osz = n->st.obj_size ? n->st.obj_size : 1;
	if (end > n->st.size && end > n->pending_size)
		n->pending_size = end;
	n->mtime_dirty = 1;
	n->wrote_ns = wall_ns();
	for (uint64_t c = off / osz; c <= (end - 1) / osz; c++) {
		if (mark_dirty(n, c))
			n->sync_lost = 1;
		space_note(n, c, 0);
	}
	pthread_mutex_unlock(&n->lock);
}

int fnode_push(struct fs *fs, struct fnode *n)
{
	return fnode_push_ex(fs, n, 1, 0);
}

int fnode_push_ex(struct fs *fs, struct fnode *n, int with_mtime, int durable)
{
	struct sdfs_setattr sa = { 0 };
	struct sdfs_stat st;
	uint64_t size;
	int ret;

	pthread_mutex_lock(&n->lock);
	uint64_t ver = n->attr_ver;
	size = n->pending_size;
	if (size > n->st.size) {
		/* extend only: another client may have grown it further */
		sa.mask |= SDFS_SETATTR_SIZE | SDFS_SETATTR_EXTEND;
		sa.size = size;
	}
	if (n->mtime_dirty && with_mtime) {
		sa.mask |= SDFS_SETATTR_MTIME_NOW;
		n->mtime_dirty = 0;
	}
	pthread_mutex_unlock(&n->lock);
	if (durable)
		sa.mask |= SDFS_SETATTR_DURABLE;
	/* with the chunks written or punched here since the last push */
	ret = space_push(fs, n, &sa, &st);
	if (ret > 0)
		return 0;       /* nothing to tell */
	pthread_mutex_lock(&n->lock);
	if (ret) {
		if (sa.mask & SDFS_SETATTR_MTIME_NOW)
			n->mtime_dirty = 1;
	} else if (ver == n->attr_ver) {        /* else a newer state is here */
		n->st = st;
		n->attr_ver++;
		if (n->pending_size <= st.size)
			n->pending_size = 0;
	}
	pthread_mutex_unlock(&n->lock);
	return ret;
}

struct flush_job {
	struct fs *fs;
	struct fnode *n;
	const uint64_t *chunks;
	size_t cnt;
	struct sdfs_stat st;    /* the file's ino and copies */
};

static int flush_chunks(void *arg)
{
	const struct flush_job *j = arg;

	return sdfs_file_flush(j->fs->s, &j->st, j->chunks, j->cnt);
}

/*
 * With n->lock held: whether an fsync's mtime goes to the write-back
 * (timesback.c) rather than in its own durable push: only when nothing
 * else needs pushing (the size and the chunks are the mds's already),
 * so that a rewrite inside a file + fsync asks the mds nothing.
 */
static int times_later(struct fs *fs, const struct fnode *n)
{
	return fs->o.times_ms && n->mtime_dirty && n->pending_size <= n->st.size &&
	       !n->made.n;
}

/*
 * After a sync that left the mtime: queue it, or push it now if it
 * cannot be queued. The hold is marked first (once per open span, one
 * mds request; none after), so that another mount's open does not keep
 * pages it cached before this data: its GETATTR says
 * SDFS_STAT_WRITEBACK while the mtime may lag (ops_file.c). An mds
 * without the mark (before 2.3) gets the mtime at every fsync.
 */
static int times_defer(struct fs *fs, struct fnode *n)
{
	if (!held_at_mds(n->ino) || sdfs_ns_hold_writeback(fs->s, n->ino) ||
	    timesback_defer(fs, n))
		return fnode_push_ex(fs, n, 1, 1);
	return 0;
}

int fnode_sync_write(struct fs *fs, struct fnode *n, int with_mtime)
{
	int later;

	pthread_mutex_lock(&n->lock);
	later = with_mtime && times_later(fs, n);
	pthread_mutex_unlock(&n->lock);
	if (later)
		return times_defer(fs, n);
	return fnode_push_ex(fs, n, with_mtime, 1);
}

int fnode_sync(struct fs *fs, struct fnode *n, int datasync)
{
	struct flush_job fj = { .fs = fs, .n = n };
	struct side_job side;
	uint64_t *chunks;
	int ret, pushed = 0, pret = 0, beside, later = 0;

	pthread_mutex_lock(&n->lock);
	fj.st = n->st;
	chunks = n->dirty;
	fj.chunks = chunks;
	fj.cnt = n->ndirty;
	n->dirty = NULL;
	n->ndirty = n->cap_dirty = 0;
	if (!datasync && times_later(fs, n)) {
		later = 1;
		datasync = 1;   /* the push below: size and chunks only */
	}
	/* data to flush and something to push: both at once */
	beside = fj.cnt && (n->pending_size > n->st.size || n->made.n ||
			    (n->mtime_dirty && !datasync));
	pthread_mutex_unlock(&n->lock);
	if (beside) {
		side_start(&side, flush_chunks, &fj);
		pret = fnode_push_ex(fs, n, !datasync, 1);
		pushed = 1;
		ret = side_wait(&side);
	} else {
		ret = flush_chunks(&fj);
	}
	pthread_mutex_lock(&n->lock);
	if (ret) {      /* keep them dirty for the next fsync */
		for (size_t i = 0; i < fj.cnt; i++)
			if (mark_dirty(n, chunks[i]))
				n->sync_lost = 1;
	} else if (n->sync_lost) {
		n->sync_lost = 0;       /* some chunk may not be flushed: say so */
		ret = -EIO;
	}
	pthread_mutex_unlock(&n->lock);
	free(chunks);
	if (ret)
		return ret;
	/* fdatasync: the size is needed to read the data back, the mtime
	 * is not; made durable by the push itself (one mds request, no
	 * sdfs_ns_sync after it unless other changes wait). Pushed beside
	 * the flush: a crash before both ended may leave the new size or
	 * mtime durable and some data not, as fsync promises nothing
	 * until it returns. */
	ret = pushed ? pret : fnode_push_ex(fs, n, !datasync, 1);
	return !ret && later ? times_defer(fs, n) : ret;
}

/* fuse_req_getgroups reads /proc/PID/task/TID/status: kept per process
 * (and its ids) for CALLER_CACHE_MS. */
#define CALLER_SLOTS 64
#define CALLER_CACHE_MS 1000

struct caller_slot {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int64_t at_ms;
	uint32_t n;
	uint32_t groups[SDFS_CALLER_GROUPS_MAX];
};

static struct caller_slot caller_slots[CALLER_SLOTS];
static pthread_mutex_t caller_lock = PTHREAD_MUTEX_INITIALIZER;

static int64_t caller_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void fs_caller(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct caller_slot *sl = &caller_slots[(unsigned)ctx->pid % CALLER_SLOTS];
	uint32_t groups[SDFS_CALLER_GROUPS_MAX];
	gid_t list[SDFS_CALLER_GROUPS_MAX];
	int64_t now = caller_now_ms();
	int n = -1;

	pthread_mutex_lock(&caller_lock);
	if (ctx->pid && sl->pid == ctx->pid && sl->uid == ctx->uid && sl->gid == ctx->gid &&
	    now - sl->at_ms < CALLER_CACHE_MS) {
		n = (int)sl->n;
		memcpy(groups, sl->groups, sl->n * sizeof(groups[0]));
	}
	pthread_mutex_unlock(&caller_lock);
	if (n < 0) {
		n = ctx->pid ? fuse_req_getgroups(req, SDFS_CALLER_GROUPS_MAX, list) : 0;
		if (n < 0)
			n = 0;  /* gone already: its own group only */
		if (n > (int)SDFS_CALLER_GROUPS_MAX)
			n = SDFS_CALLER_GROUPS_MAX;
		for (int i = 0; i < n; i++)
			groups[i] = (uint32_t)list[i];
		pthread_mutex_lock(&caller_lock);
		sl->pid = ctx->pid;
		sl->uid = ctx->uid;
		sl->gid = ctx->gid;
		sl->at_ms = now;
		sl->n = (uint32_t)n;
		memcpy(sl->groups, groups, (size_t)n * sizeof(groups[0]));
		pthread_mutex_unlock(&caller_lock);
	}
	sdfs_set_caller(ctx->uid, ctx->gid, groups, (size_t)n);
}
