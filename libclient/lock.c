/*
 * lock.c - cluster-wide locks (sdfs.h "cluster-wide locks",
 * docs/locks.md): the handle's lock identity in ZooKeeper and the
 * NS_LOCK_* requests to the active mds.
 *
 * The identity is made lazily, at the first lock call, so handles that
 * never lock (the mds's own, the CLI) leave no node. After an expiry of
 * the ZooKeeper session a new identity is made: the old node went with
 * the session and the mds drops the old identity's locks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/coord_client.h"
#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"
#include "libclient/client.h"

#define LOCK_BACKOFF_MIN_MS 10
#define LOCK_BACKOFF_MAX_MS 100

static uint64_t new_id(void)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 48;
	x ^= (uint64_t)(uintptr_t)&x;
	x += 0x9e3779b97f4a7c15ull;     /* splitmix64 */
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

/* The current lock identity, made (registered in ZooKeeper) if there is
 * none in this session. 0 or -ENOLCK. */
int lock_identity(struct sdfs *s, uint64_t *id)
{
	unsigned gen = atomic_load(&s->session_gen);
	int ret = 0;

	pthread_mutex_lock(&s->lock_mu);
	if (!s->lock_id || s->lock_gen != gen) {
		char desc[128], host[64] = "?";
		uint64_t nid = new_id();

		/* A session that expired needs the new one first. */
		if (atomic_load(&s->expired))
			client_map_refresh(s);
		gethostname(host, sizeof(host) - 1);
		snprintf(desc, sizeof(desc), "host=%s pid=%d", host, (int)getpid());
		ret = coord_client_register(s->coord, nid, desc);
		if (ret) {
			log_warn("cannot register a lock identity in ZooKeeper: %s",
				 strerror(-ret));
			ret = -ENOLCK;
		} else {
			if (s->lock_id)
				log_warn("ZooKeeper session expired: the locks of this "
					 "client were dropped; new lock identity %016llx",
					 (unsigned long long)nid);
			s->lock_id = nid;
			s->lock_gen = gen;
		}
	}
	*id = s->lock_id;
	pthread_mutex_unlock(&s->lock_mu);
	return ret;
}

static int lock_call(struct sdfs *s, unsigned op, uint64_t ino, const struct sdfs_lock *l,
		     uint16_t flags, struct sdfs_lock *out)
{
	struct sdfs_ns_req r = { .ino = ino, .data_len = SDFS_NS_LOCK_SIZE };
	struct sdfs_ns_lock q = { .owner = l->owner, .pid = l->pid,
				  .type = (uint8_t)l->type, .kind = (uint8_t)l->kind,
				  .flags = flags };
	uint8_t data[SDFS_NS_LOCK_SIZE], *rep = NULL;
	struct sdfs_hdr reply;
	uint32_t len = 0;
	int ret;

	if ((l->kind != SDFS_LK_POSIX && l->kind != SDFS_LK_FLOCK) ||
	    l->type < SDFS_LK_UN || l->type > SDFS_LK_WR || ino == 0)
		return -EINVAL;
	if (l->kind == SDFS_LK_POSIX) {
		if (l->start > l->end)
			return -EINVAL;
		q.start = l->start;
		q.end = l->end;
	} else {
		q.end = SDFS_LOCK_EOF;
	}
	ret = lock_identity(s, &q.client);
	if (ret)
		return ret;
	proto_ns_lock_encode(&q, data);
	ret = nsclient_call(s, op, &r, NULL, NULL, data, &reply, &rep, &len, 0);
	if (ret)
		return ret;
	if (out) {
		struct sdfs_ns_lock a;

		if (proto_ns_lock_decode(rep, len, &a)) {
			free(rep);
			return -EPROTO;
		}
		out->type = a.type;
		out->kind = a.kind;
		out->start = a.start;
		out->end = a.end;
		out->pid = a.pid;
		out->owner = a.owner;
	}
	free(rep);
	return 0;
}

int sdfs_lock_set(struct sdfs *s, uint64_t ino, const struct sdfs_lock *l)
{
	if (l->type == SDFS_LK_UN)
		return sdfs_lock_unlock(s, ino, l);
	return lock_call(s, SDFS_OP_NS_LOCK_SET, ino, l, 0, NULL);
}

void lock_wake(struct sdfs *s, uint64_t ino)
{
	(void)ino;              /* any of them: a spurious retry is cheap */
	pthread_mutex_lock(&s->wake_mu);
	s->lock_wakes++;
	pthread_cond_broadcast(&s->wake_cond);
	pthread_mutex_unlock(&s->wake_mu);
}

static uint64_t wakes_now(struct sdfs *s)
{
	uint64_t n;

	pthread_mutex_lock(&s->wake_mu);
	n = s->lock_wakes;
	pthread_mutex_unlock(&s->wake_mu);
	return n;
}

/* Sleep @ms, or less if a wake-up came after @seen (sampled before the
 * refused request, so one arriving in between is not missed). */
static void nap(struct sdfs *s, uint64_t seen, int ms)
{
	struct timespec ts;

	net_time_in(CLOCK_MONOTONIC, ms, &ts);
	pthread_mutex_lock(&s->wake_mu);
	while (s->lock_wakes == seen &&
	       pthread_cond_timedwait(&s->wake_cond, &s->wake_mu, &ts) == 0)
		;
	pthread_mutex_unlock(&s->wake_mu);
}

/*
 * A blocking wait: SET with SDFS_LOCK_WAIT until granted. Between tries
 * it sleeps 10 ms doubling to 100 ms, and less when the mds wakes it
 * (the locks on some inode changed: SDFS_NOTE_LOCK on the handle's
 * invalidation channel, when it has one): the hand-off then costs a
 * round trip, not a poll interval.
 */
int sdfs_lock_wait(struct sdfs *s, uint64_t ino, const struct sdfs_lock *l,
		   int (*cancel)(void *arg), void *arg)
{
	int backoff = LOCK_BACKOFF_MIN_MS;

	if (l->type == SDFS_LK_UN)
		return sdfs_lock_unlock(s, ino, l);
	for (;;) {
		uint64_t seen = wakes_now(s);
		int ret = lock_call(s, SDFS_OP_NS_LOCK_SET, ino, l, SDFS_LOCK_WAIT, NULL);

		if (ret != -EAGAIN)
			return ret;
		if (cancel && cancel(arg))
			break;
		nap(s, seen, backoff);
		if (cancel && cancel(arg))
			break;
		backoff = backoff * 2 < LOCK_BACKOFF_MAX_MS ? backoff * 2 : LOCK_BACKOFF_MAX_MS;
	}
	/* Withdraw the wait before the caller hears of it: the mds would
	 * otherwise count it in others' deadlock cycles for a while. A
	 * failure only leaves it to expire (LOCK_WAITER_TTL_MS). */
	struct sdfs_lock u = *l;

	u.type = SDFS_LK_UN;
	lock_call(s, SDFS_OP_NS_LOCK_SET, ino, &u, SDFS_LOCK_CANCEL, NULL);
	return -EINTR;
}

int sdfs_lock_get(struct sdfs *s, uint64_t ino, struct sdfs_lock *l)
{
	if (l->type == SDFS_LK_UN)
		return -EINVAL;
	return lock_call(s, SDFS_OP_NS_LOCK_GET, ino, l, 0, l);
}

int sdfs_lock_unlock(struct sdfs *s, uint64_t ino, const struct sdfs_lock *l)
{
	struct sdfs_lock u = *l;

	u.type = SDFS_LK_UN;
	return lock_call(s, SDFS_OP_NS_LOCK_UNLOCK, ino, &u, 0, NULL);
}

int sdfs_lock_release(struct sdfs *s, uint64_t ino, int kind, uint64_t owner)
{
	struct sdfs_lock l = { .kind = kind, .type = SDFS_LK_UN, .owner = owner,
			       .end = SDFS_LK_EOF };

	return lock_call(s, SDFS_OP_NS_LOCK_RELEASE, ino, &l, 0, NULL);
}
