/*
 * lockown.c - which lock owners took byte-range locks through which
 * open file, so that the RELEASE of an open file drops its OFD locks
 * (fs.h "lockown.c", docs/locks.md "OFD locks").
 *
 * The kernel gives a FUSE server one lock_owner per lock request: the
 * process (its files_struct) for POSIX locks, the open file description
 * for OFD locks, and does not say which. A POSIX owner closing the file
 * sends a flush with its owner (its locks on the inode go then); an OFD
 * owner never does, and when the open file's last descriptor closes the
 * kernel sends only a RELEASE of fi->fh. So each lock request records
 * (ino, fh, owner); a flush forgets (ino, fh, owner); at the RELEASE of
 * fh what is left of fh are OFD owners, whose locks are dropped at the
 * mds. An owner that still has a record through another open file of
 * the inode is left alone: a kernel may reuse a freed struct file (and
 * so an OFD owner's value) for a new open before the old RELEASE comes,
 * and a POSIX owner that locked again elsewhere keeps its new locks.
 *
 * Records are chained per inode in a small fixed hash table (a few per
 * locking open file; one mutex). While a release drops (ino, owner),
 * a record of its own marks it and lockown_add of that pair waits, so
 * a new lock cannot be sent before the drop and be dropped by it.
 */
#include <errno.h>
#include <stdlib.h>

#include "fs/fs.h"

#define LOCKOWN_BUCKETS 256

enum rec_kind {
	REC_LOCKED,             /* owner locked through fh */
	REC_DROPPING,           /* a release of fh is dropping (ino, owner) */
	REC_RELEASING,          /* a release of fh is running (owner unused) */
};

struct rec {
	uint64_t ino, fh, owner;
	enum rec_kind kind;
	struct rec *next;
	struct rec *drop_next;          /* REC_DROPPING: its release's list */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;  /* a release ended */
static struct rec *tab[LOCKOWN_BUCKETS];

static struct rec **bucket(uint64_t ino)
{
	return &tab[(ino * 0x9e3779b97f4a7c15ull) >> 56];
}

/* The record of @ino, @kind, @owner and (unless @any_fh) @fh; or NULL. */
static struct rec *find(uint64_t ino, enum rec_kind kind, uint64_t fh, uint64_t owner,
			int any_fh)
{
	for (struct rec *r = *bucket(ino); r; r = r->next)
		if (r->ino == ino && r->kind == kind && r->owner == owner &&
		    (any_fh || r->fh == fh))
			return r;
	return NULL;
}

static void unlink_rec(struct rec *x)
{
	for (struct rec **p = bucket(x->ino); *p; p = &(*p)->next)
		if (*p == x) {
			*p = x->next;
			return;
		}
}

int lockown_add(uint64_t ino, uint64_t fh, uint64_t owner)
{
	struct rec *r;

	pthread_mutex_lock(&mu);
	while (find(ino, REC_DROPPING, 0, owner, 1))
		pthread_cond_wait(&done, &mu);
	if (!find(ino, REC_LOCKED, fh, owner, 0)) {
		r = malloc(sizeof(*r));
		if (!r) {
			pthread_mutex_unlock(&mu);
			return -ENOMEM;
		}
		*r = (struct rec){ .ino = ino, .fh = fh, .owner = owner, .kind = REC_LOCKED,
				   .next = *bucket(ino) };
		*bucket(ino) = r;
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

void lockown_flushed(uint64_t ino, uint64_t fh, uint64_t owner)
{
	struct rec *r;

	pthread_mutex_lock(&mu);
	r = find(ino, REC_LOCKED, fh, owner, 0);
	if (r)
		unlink_rec(r);
	pthread_mutex_unlock(&mu);
	free(r);
}

int lockown_release(uint64_t ino, uint64_t fh, const uint64_t *flock_owner,
		    void (*drop)(uint64_t ino, int flock, uint64_t owner))
{
	struct rec busy = { .ino = ino, .fh = fh, .kind = REC_RELEASING };
	struct rec *mine = NULL, *drops = NULL, *r, *next;
	int n = 0;

	pthread_mutex_lock(&mu);
	/* take this open file's records out, then judge each owner
	 * against the records of the other open files */
	for (struct rec **p = bucket(ino); *p;) {
		r = *p;
		if (r->ino == ino && r->fh == fh && r->kind == REC_LOCKED) {
			*p = r->next;
			r->next = mine;
			mine = r;
		} else {
			p = &r->next;
		}
	}
	busy.next = *bucket(ino);
	*bucket(ino) = &busy;
	for (r = mine; r; r = next) {
		next = r->next;
		if (find(ino, REC_LOCKED, 0, r->owner, 1)) {
			free(r);
			continue;
		}
		r->kind = REC_DROPPING;         /* in the table until dropped */
		r->next = *bucket(ino);
		*bucket(ino) = r;
		r->drop_next = drops;
		drops = r;
		n++;
	}
	pthread_mutex_unlock(&mu);

	/* only this call unlinks its REC_DROPPING records: read unlocked */
	if (flock_owner)
		drop(ino, 1, *flock_owner);
	for (r = drops; r; r = r->drop_next)
		drop(ino, 0, r->owner);

	pthread_mutex_lock(&mu);
	for (r = drops; r; r = r->drop_next)
		unlink_rec(r);
	unlink_rec(&busy);
	pthread_cond_broadcast(&done);
	pthread_mutex_unlock(&mu);
	for (r = drops; r; r = next) {
		next = r->drop_next;
		free(r);
	}
	return n;
}

int lockown_wait_release(uint64_t ino)
{
	int was = 0;

	pthread_mutex_lock(&mu);
	for (;;) {
		struct rec *r = *bucket(ino);

		while (r && !(r->ino == ino && r->kind == REC_RELEASING))
			r = r->next;
		if (!r)
			break;
		was = 1;
		pthread_cond_wait(&done, &mu);
	}
	pthread_mutex_unlock(&mu);
	return was;
}
