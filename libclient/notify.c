/*
 * notify.c - pushed invalidations: a handle's subscription to the
 * active mds (sdfs_ns_subscribe) and the thread that serves it.
 *
 * One thread per subscribed handle. It finds the active in ZooKeeper,
 * opens a connection of its own, sends NS_SUBSCRIBE with the handle's
 * client id (the mds knows by that id what its replies told the handle)
 * and then, for each NS_NOTIFY, calls the caller's function and answers
 * once it returned: the mds holds the change that made the items stale
 * until that answer.
 *
 * After each subscription the handle's open inodes are claimed again
 * (hold.c): a new active knows them only from that.
 *
 * The subscription follows the active: a lost connection, a "not
 * active" (SHUTDOWN) answer, or ZooKeeper showing another active (a
 * watch on mds/active, and a re-read every few seconds while idle, as a
 * hung active keeps its connection open) makes the thread subscribe
 * again, to whichever mds is active then. While none is active (or a
 * standby answers) it waits for the watch, not a grown backoff. An mds
 * without the op (UNKNOWN_OP) is asked again every 2 s; meanwhile the
 * handle works as without a subscription: its caches expire by their
 * timeouts.
 *
 * Stopping: notify_stop (from sdfs_close) sets a flag and joins. The
 * thread waits on its socket in slices of 200 ms and sleeps on a
 * condition variable, so it ends within a slice, a connect (500 ms) or
 * a ZooKeeper read.
 *
 * Authentication (the cluster's auth required): each connection runs
 * the handshake first (client_auth); its session tags every frame of
 * the channel both ways. A refusal is logged (client_auth) and retried
 * at the backoff's pace: keys can be fixed without a remount.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/coord_mds.h"
#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"
#include "libclient/client.h"

#define NOTIFY_MSG_MAX      (1u << 20)  /* payload cap of one NS_NOTIFY */
#define NOTIFY_SLICE_MS     200         /* longest wait between stop checks */
#define NOTIFY_CONNECT_MS   500
#define NOTIFY_IO_MS        5000        /* a reply, a message's rest, an answer */
#define NOTIFY_RECHECK_MS   5000        /* re-read the active while idle */
#define NOTIFY_ZK_RETRY_MS  1000        /* ...sooner after a ZooKeeper error */
#define NOTIFY_SHUTDOWN_MS  150         /* a standby answered: failover under way */
#define NOTIFY_UNSUPP_MS    2000        /* the mds has no NS_SUBSCRIBE */
#define NOTIFY_RETRY_MIN_MS 100
#define NOTIFY_RETRY_MAX_MS 2000
/* The API's kinds are the wire's (sdfs.h, sdfs_proto.h): passed on as they are. */
static_assert((int)SDFS_INVAL_INODE == (int)SDFS_NOTE_INODE &&
	      (int)SDFS_INVAL_ENTRY == (int)SDFS_NOTE_ENTRY &&
	      SDFS_INVAL_F_ATIME == SDFS_NOTE_F_ATIME,
	      "sdfs_inval kinds differ from the wire's");

#define NOTIFY_LOG_MS       60000       /* the same error is logged again after */
#define NOTIFY_MOVED_SLICE_MS 50        /* no active: look at the watch this often */

struct notify {
	struct sdfs *s;
	uint32_t cache_ms;
	sdfs_inval_fn fn;
	void *arg;
	pthread_t thread;
	atomic_int stop;
	pthread_mutex_t mu;             /* with cond: naps end at stop */
	pthread_cond_t cond;

	/* the thread's own */
	struct coord_mds_doc mds;       /* the active subscribed to (or tried) */
	uint8_t *buf;                   /* a message's payload */
	size_t buf_cap;
	struct sdfs_inval *iv;          /* a message's records, for fn */
	size_t iv_cap;
	int64_t recheck_ms;             /* when to re-read the active (idle) */
	struct auth_sess sess;          /* the connection's (on: tagged) */
	int last_err;                   /* the last error logged; 0: none since
					   the last subscription */
	int64_t last_log_ms;
};

static int stopped(struct notify *nt)
{
	return atomic_load(&nt->stop);
}

/* Sleep @ms, or less if stopped meanwhile. */
static void nap(struct notify *nt, int ms)
{
	struct timespec ts;

	net_time_in(CLOCK_MONOTONIC, ms, &ts);
	pthread_mutex_lock(&nt->mu);
	while (!stopped(nt) && pthread_cond_timedwait(&nt->cond, &nt->mu, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&nt->mu);
}

/* Sleep @ms, or less if stopped or mds/active changed meanwhile (the
 * watch subscribe armed): a new active is subscribed to at once, not
 * after a backoff grown while there was none. */
static void nap_moved(struct notify *nt, int ms)
{
	int64_t end = net_now_ms() + ms;

	while (!stopped(nt) && !atomic_load(&nt->s->mds_changed)) {
		int64_t left = end - net_now_ms();

		if (left <= 0)
			break;
		nap(nt, left < NOTIFY_MOVED_SLICE_MS ? (int)left : NOTIFY_MOVED_SLICE_MS);
	}
}

/* Log @err unless it is the one logged last, less than a minute ago
 * (an mds without the op: only once). */
static int log_due(struct notify *nt, int err)
{
	int64_t now = net_now_ms();

	if (err == nt->last_err &&
	    (err == -EOPNOTSUPP || now - nt->last_log_ms < NOTIFY_LOG_MS))
		return 0;
	nt->last_err = err;
	nt->last_log_ms = now;
	return 1;
}

/* Read mds/active (arming the watch that sets s->mds_changed). */
static int active_read(struct notify *nt, struct coord_mds_doc *d)
{
	client_coord_renew(nt->s);
	return coord_mds_active_get(nt->s->coord, 1, d);
}

/* Is the mds we are subscribed to no longer the active? A ZooKeeper
 * error is not an answer: *@retry_ms tells when to ask again. */
static int active_moved(struct notify *nt, int *retry_ms)
{
	struct coord_mds_doc d;
	int ret;

	*retry_ms = NOTIFY_RECHECK_MS;
	ret = active_read(nt, &d);
	if (ret == -ENOENT)
		return 1;       /* ours lost its lease, none took over yet */
	if (ret) {
		*retry_ms = NOTIFY_ZK_RETRY_MS;
		return 0;
	}
	return strcmp(d.addr, nt->mds.addr) || d.epoch != nt->mds.epoch;
}

/*
 * Wait until @fd is ready for @events, up to @deadline (monotonic ms).
 * -ECANCELED when stopped, -ESTALE when the watch says the active moved
 * (with @idle, no message under way, also at the periodic re-read, and
 * there is no deadline).
 */
static int wait_fd(struct notify *nt, int fd, short events, int64_t deadline, int idle)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t now = net_now_ms();
		int ms = NOTIFY_SLICE_MS, retry_ms;

		if (stopped(nt))
			return -ECANCELED;
		if (!idle && now >= deadline)
			return -ETIMEDOUT;
		if (!idle && deadline - now < ms)
			ms = (int)(deadline - now);
		int n = poll(&p, 1, ms);
		if (n > 0)
			return 0;       /* ready, or an error the I/O will tell */
		if (n < 0 && errno != EINTR)
			return -errno;
		if (!idle) {
			/* a reply from a deposed active never comes */
			if (atomic_exchange(&nt->s->mds_changed, 0) &&
			    active_moved(nt, &retry_ms))
				return -ESTALE;
			continue;
		}
		now = net_now_ms();
		if (atomic_exchange(&nt->s->mds_changed, 0) || now >= nt->recheck_ms) {
			if (active_moved(nt, &retry_ms))
				return -ESTALE;
			nt->recheck_ms = net_now_ms() + retry_ms;
		}
	}
}

/* What io_full's waits know: the first byte's wait is @idle (see
 * wait_fd), and then @deadline counts from that first byte. */
struct io_wait {
	struct notify *nt;
	int64_t deadline;
	int idle;
};

static int io_wait(void *arg, int fd, short events, size_t done)
{
	struct io_wait *w = arg;

	if (w->idle && done) {
		w->deadline = net_now_ms() + NOTIFY_IO_MS;
		w->idle = 0;
	}
	return wait_fd(w->nt, fd, events, w->deadline, w->idle);
}

/* All @len bytes; the wait for the first one is @idle (see wait_fd),
 * and then @deadline counts from that first byte. */
static int io_full(struct notify *nt, int fd, void *buf, size_t len, int writing,
		   int64_t deadline, int idle)
{
	struct io_wait w = { nt, deadline, idle };
	struct iovec iov = { buf, len };

	return net_io_full(fd, &iov, 1, writing, io_wait, &w);
}

/* Room for a payload of @len bytes in nt->buf. */
static int buf_reserve(struct notify *nt, size_t len)
{
	if (len <= nt->buf_cap)
		return 0;
	uint8_t *b = realloc(nt->buf, len);
	if (!b)
		return -ENOMEM;
	nt->buf = b;
	nt->buf_cap = len;
	return 0;
}

/* A message's payload into nt->buf, then its tag (in a session),
 * checked: -EBADMSG if either fails. @raw: its header's wire bytes. */
static int read_payload(struct notify *nt, int fd, const uint8_t *raw,
			const struct sdfs_hdr *h, int64_t deadline)
{
	uint8_t tag[AUTH_TAG_BYTES];
	int ret = 0;

	if (h->payload_len) {
		ret = buf_reserve(nt, h->payload_len);
		if (!ret)
			ret = io_full(nt, fd, nt->buf, h->payload_len, 0, deadline, 0);
	}
	if (!ret && nt->sess.on) {
		ret = io_full(nt, fd, tag, sizeof(tag), 0, deadline, 0);
		if (!ret && auth_check(&nt->sess, raw, nt->buf, h->payload_len, tag))
			ret = -EBADMSG;
	}
	if (!ret && h->payload_len && auth_payload_check(&nt->sess, h, nt->buf))
		ret = -EBADMSG;
	return ret;
}

/* Send the encoded frame @msg (@len bytes, header first) and its tag. */
static int send_frame(struct notify *nt, int fd, uint8_t *msg, size_t len,
		      int64_t deadline)
{
	uint8_t tag[AUTH_TAG_BYTES];
	int ret;

	if (nt->sess.on)
		auth_tag(&nt->sess, msg, msg + SDFS_HDR_SIZE, len - SDFS_HDR_SIZE, tag);
	ret = io_full(nt, fd, msg, len, 1, deadline, 0);
	if (!ret && nt->sess.on)
		ret = io_full(nt, fd, tag, sizeof(tag), 1, deadline, 0);
	return ret;
}

/* Find the active, connect, subscribe. 0 with *@fdp, or -errno:
 * -ENOENT (none active), -ESHUTDOWN (not the active), -EOPNOTSUPP. */
static int subscribe(struct notify *nt, int *fdp)
{
	struct sdfs_ns_req req = { .ino = 0, .arg = nt->cache_ms };
	uint8_t msg[SDFS_HDR_SIZE + SDFS_NS_REQ_SIZE], raw[SDFS_HDR_SIZE];
	struct sdfs_hdr h = { 0 }, reply;
	char host[64];
	uint16_t port;
	int64_t deadline;
	int fd, ret;

	/* cleared before the read: a move after it sets it again */
	atomic_store(&nt->s->mds_changed, 0);
	ret = active_read(nt, &nt->mds);
	if (ret) {
		nt->mds.addr[0] = '\0';
		return ret;
	}
	if (net_parse_addr(nt->mds.addr, host, sizeof(host), &port))
		return -EBADMSG;
	fd = net_connect(host, port, NOTIFY_CONNECT_MS);
	if (fd < 0)
		return fd;
	ret = client_auth(nt->s, fd, NOTIFY_IO_MS, &nt->sess);
	if (ret)
		goto out_close;
	req.client_id = nsclient_client_id(nt->s, &req.seq);
	if (!req.client_id) {
		ret = -ENOMEM;
		goto out_close;
	}
	proto_ns_req_encode(&req, msg + SDFS_HDR_SIZE);
	h.opcode = SDFS_OP_NS_SUBSCRIBE;
	h.req_id = client_req_id(nt->s);
	h.oid = req.ino;
	h.payload_len = SDFS_NS_REQ_SIZE;
	auth_hdr_encode(&nt->sess, &h, msg + SDFS_HDR_SIZE, msg);

	deadline = net_now_ms() + NOTIFY_IO_MS;
	ret = send_frame(nt, fd, msg, sizeof(msg), deadline);
	if (!ret)
		ret = io_full(nt, fd, raw, sizeof(raw), 0, deadline, 0);
	if (ret)
		goto out_close;
	if (proto_hdr_decode(raw, NOTIFY_MSG_MAX, &reply) ||
	    !(reply.flags & SDFS_F_REPLY) || reply.req_id != h.req_id) {
		ret = -EPROTO;
		goto out_close;
	}
	ret = read_payload(nt, fd, raw, &reply, deadline);      /* none expected */
	if (ret)
		goto out_close;
	if (reply.result == SDFS_RES_SHUTDOWN)
		ret = -ESHUTDOWN;
	else
		ret = proto_ns_result(&reply);
	if (ret)
		goto out_close;
	nt->recheck_ms = net_now_ms() + NOTIFY_RECHECK_MS;
	*fdp = fd;
	return 0;
out_close:
	close(fd);
	return ret;
}

/* One NS_NOTIFY whose header is @h: its records to the caller, then
 * the answer. */
static int handle_notify(struct notify *nt, int fd, const uint8_t *hraw,
			 const struct sdfs_hdr *h)
{
	int64_t deadline = net_now_ms() + NOTIFY_IO_MS;
	uint8_t raw[SDFS_HDR_SIZE];
	struct sdfs_hdr reply;
	size_t n = 0, off = 0;
	int ret;

	if (h->opcode != SDFS_OP_NS_NOTIFY || (h->flags & SDFS_F_REPLY))
		return -EPROTO;
	ret = read_payload(nt, fd, hraw, h, deadline);
	if (ret)
		return ret;
	/* records are 16 bytes at least */
	size_t cap = h->payload_len / SDFS_NOTE_HDR_SIZE;
	if (cap > nt->iv_cap) {
		struct sdfs_inval *iv = realloc(nt->iv, cap * sizeof(*iv));

		if (!iv)
			return -ENOMEM;
		nt->iv = iv;
		nt->iv_cap = cap;
	}
	while (off < h->payload_len) {
		struct sdfs_note note;
		ssize_t used = proto_note_decode(nt->buf + off, h->payload_len - off, &note);

		if (used < 0)
			return -EBADMSG;
		off += (size_t)used;
		/* Lock wake-ups are libsdfs's own; the rest go to the caller. */
		if (note.kind == SDFS_NOTE_LOCK)
			lock_wake(nt->s, note.ino);
		else
			nt->iv[n++] = (struct sdfs_inval){ .kind = note.kind, .ino = note.ino,
							   .flags = note.flags,
							   .name = note.name,
							   .name_len = note.name_len };
	}
	if (n)
		nt->fn(nt->arg, nt->iv, n);
	proto_reply_init(&reply, h, SDFS_RES_OK);
	auth_hdr_encode(&nt->sess, &reply, NULL, raw);
	return send_frame(nt, fd, raw, sizeof(raw), net_now_ms() + NOTIFY_IO_MS);
}

/* Serve the subscription on @fd until it breaks: the reason. */
static int serve(struct notify *nt, int fd)
{
	for (;;) {
		uint8_t raw[SDFS_HDR_SIZE];
		struct sdfs_hdr h;
		int ret;

		ret = io_full(nt, fd, raw, sizeof(raw), 0, net_now_ms() + NOTIFY_IO_MS, 1);
		if (ret)
			return ret;
		if (proto_hdr_decode(raw, NOTIFY_MSG_MAX, &h))
			return -EBADMSG;
		ret = handle_notify(nt, fd, raw, &h);
		if (ret)
			return ret;
	}
}

static void log_lost(struct notify *nt, int ret)
{
	if (ret == -ESTALE)
		log_info("mds %s at %s is no longer the active: resubscribing",
			 nt->mds.name, nt->mds.addr);
	else if (ret == -ECONNRESET)
		log_info("mds %s at %s closed the subscription: resubscribing",
			 nt->mds.name, nt->mds.addr);
	else
		log_warn("mds %s at %s: subscription lost: %s; resubscribing",
			 nt->mds.name, nt->mds.addr,
			 ret == -EBADMSG ? "malformed message" : strerror(-ret));
}

/* Log a failed subscribe; returns how long to wait before the next. */
static int subscribe_failed(struct notify *nt, int ret, int *backoff)
{
	int wait_ms = *backoff;

	switch (ret) {
	case -ESTALE:           /* deposed while we subscribed */
	case -ESHUTDOWN:        /* a standby, or an active losing its lease */
		log_debug("mds %s at %s is not active", nt->mds.name, nt->mds.addr);
		return NOTIFY_SHUTDOWN_MS;
	case -EOPNOTSUPP:
		if (log_due(nt, ret))
			log_info("mds %s at %s does not push invalidations: asking "
				 "again every %d s", nt->mds.name, nt->mds.addr,
				 NOTIFY_UNSUPP_MS / 1000);
		return NOTIFY_UNSUPP_MS;
	case -ENOENT:
		if (log_due(nt, ret))
			log_warn("no active mds to subscribe to; retrying");
		break;
	default:
		if (log_due(nt, ret))
			log_warn("subscribing to mds %s at %s: %s; retrying",
				 nt->mds.addr[0] ? nt->mds.name : "?",
				 nt->mds.addr[0] ? nt->mds.addr : "?", strerror(-ret));
		break;
	}
	*backoff = *backoff * 2 < NOTIFY_RETRY_MAX_MS ? *backoff * 2 : NOTIFY_RETRY_MAX_MS;
	return wait_ms;
}

static void *notify_main(void *arg)
{
	struct notify *nt = arg;
	int backoff = NOTIFY_RETRY_MIN_MS;

	while (!stopped(nt)) {
		int fd = -1, wait_ms;
		int ret = subscribe(nt, &fd);

		if (ret == -ECANCELED)
			break;
		if (ret) {
			wait_ms = subscribe_failed(nt, ret, &backoff);
			if (ret == -ENOENT || ret == -ESHUTDOWN || ret == -ESTALE)
				nap_moved(nt, wait_ms);
			else
				nap(nt, wait_ms);
			continue;
		}
		log_info("subscribed to invalidations from mds %s at %s (epoch %" PRIu64
			 ", cache %" PRIu32 " ms)", nt->mds.name, nt->mds.addr,
			 nt->mds.epoch, nt->cache_ms);
		nt->last_err = 0;
		struct sdfs_inval all = { .kind = SDFS_INVAL_ALL };
		nt->fn(nt->arg, &all, 1);
		/* a new active waits for this before it frees strays */
		hold_claim(nt->s);
		int64_t since = net_now_ms();
		ret = serve(nt, fd);
		close(fd);
		if (ret == -ECANCELED)
			break;
		log_lost(nt, ret);
		/* one that lasted is a failover: be quick; one that breaks at
		 * once again and again backs off */
		if (net_now_ms() - since >= NOTIFY_RETRY_MAX_MS)
			backoff = NOTIFY_RETRY_MIN_MS;
		wait_ms = backoff;
		backoff = backoff * 2 < NOTIFY_RETRY_MAX_MS ? backoff * 2 : NOTIFY_RETRY_MAX_MS;
		nap(nt, wait_ms);
	}
	return NULL;
}

static void notify_free(struct notify *nt)
{
	pthread_cond_destroy(&nt->cond);
	pthread_mutex_destroy(&nt->mu);
	free(nt->buf);
	free(nt->iv);
	free(nt);
}

int sdfs_ns_subscribe(struct sdfs *s, uint32_t cache_ms, sdfs_inval_fn fn, void *arg)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	struct notify *nt;
	int ret;

	if (!fn)
		return -EINVAL;
	if (!nsclient_client_id(s, NULL))       /* the id it will subscribe with */
		return -ENOMEM;
	nt = calloc(1, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	nt->s = s;
	nt->cache_ms = cache_ms;
	nt->fn = fn;
	nt->arg = arg;
	atomic_init(&nt->stop, 0);
	pthread_mutex_init(&nt->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&nt->cond, &ca);
	pthread_condattr_destroy(&ca);

	pthread_mutex_lock(&s->lock);
	if (s->notify) {
		pthread_mutex_unlock(&s->lock);
		notify_free(nt);
		return -EEXIST;
	}
	s->notify = nt;
	pthread_mutex_unlock(&s->lock);

	/* Signals are for the program's threads, not this one. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&nt->thread, NULL, notify_main, nt);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		pthread_mutex_lock(&s->lock);
		s->notify = NULL;
		pthread_mutex_unlock(&s->lock);
		notify_free(nt);
		return -ENOMEM;
	}
	return 0;
}

void notify_stop(struct sdfs *s)
{
	struct notify *nt;

	pthread_mutex_lock(&s->lock);
	nt = s->notify;
	s->notify = NULL;
	pthread_mutex_unlock(&s->lock);
	if (!nt)
		return;
	pthread_mutex_lock(&nt->mu);
	atomic_store(&nt->stop, 1);
	pthread_cond_broadcast(&nt->cond);
	pthread_mutex_unlock(&nt->mu);
	pthread_join(nt->thread, NULL);
	notify_free(nt);
}
