/*
 * nsclient.c - requests to the active mds.
 *
 * The active publishes itself in ZooKeeper (common/coord_mds.h). A call
 * takes an idle connection to it (or opens one), sends one request and
 * waits for its reply: one request per connection at a time, so many
 * threads use many connections and the mds serves them in parallel.
 * A failed connection, a "not active" (SHUTDOWN) answer or a timeout
 * makes the call re-read the active and send the same request again
 * (same client id and seq: the mds's reply cache answers a retried
 * mutation with its first result).
 *
 * Following the active: every read of mds/active arms a ZooKeeper
 * watch, and the handle counts its events (s->mds_gen). An attempt
 * waits for its reply in slices of NS_SLICE_MS and re-reads the active
 * when the count moved: if the active it talks to is gone (its lease
 * ran out: it will never answer) or another took over, the attempt is
 * abandoned at once and the request sent to the new one. NS_ATTEMPT_MS
 * remains the bound for an active that hangs without losing its lease.
 *
 * When to give up (docs/mds.md "Clients and failover"): an error from
 * a call means the operation did not happen. A request that reached an
 * mds may have been applied, so the call does not give up merely
 * because the handle's timeout passed: it goes on while an mds process
 * took its connection, answered, or held the request without refusing
 * it within the last timeout (a hung active, a standby taking over),
 * and ends with -ETIMEDOUT or
 * -EHOSTDOWN only after a whole timeout without any (connections
 * refused: the process is gone, and the request never arrived; no
 * active published), or at NSCLIENT_HARD_FACTOR timeouts. Calls with
 * their own short timeout (status queries) end at it.
 *
 * Authentication (the cluster's auth required): a new connection runs
 * the handshake (client_auth) before its first request; an idle one
 * keeps its session. A refusal (-EACCES) or an mds of an older protocol
 * ends the call at once with that error: retrying cannot help.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/coord_mds.h"
#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"
#include "libclient/client.h"
#include "libclient/caller.h"

#define NS_IDLE_MAX 32
#define NS_REPLY_MAX (1u << 20)
/* One attempt waits this long for its reply, then the call re-reads the
 * active and sends again: an active that hangs (SIGSTOP, a partition)
 * without losing its ZooKeeper lease never answers nor closes, and a
 * retry is safe (reply cache). */
#define NS_ATTEMPT_MS 3000
/* An attempt looks at the watch count this often. */
#define NS_SLICE_MS 50
#define NS_BACKOFF_MIN_MS 20
#define NS_BACKOFF_MAX_MS 100
/* No active published: wait for the watch this long at most, looking
 * at its count every NS_POLL_MS (then ZooKeeper is asked again). */
#define NS_NONE_WAIT_MS 500
#define NS_POLL_MS 5

struct nsclient {
	pthread_mutex_t lock;
	uint64_t client_id;
	uint64_t seq;
	int have_active;
	char host[64];
	uint16_t port;
	uint64_t epoch;                 /* the active's MDS epoch */
	uint64_t gen;                   /* bumps when the active changes */
	unsigned zk_seen;               /* s->mds_gen at the last read */
	int idle[NS_IDLE_MAX];
	uint64_t idle_gen[NS_IDLE_MAX];
	struct auth_sess idle_sess[NS_IDLE_MAX];
	int nidle;
};
static uint64_t random_id(void)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 48;
	x ^= (uint64_t)(uintptr_t)&x;
	/* splitmix64 */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

static struct nsclient *get_nc(struct sdfs *s)
{
	struct nsclient *nc;

	pthread_mutex_lock(&s->lock);
	nc = s->ns;
	if (!nc) {
		nc = calloc(1, sizeof(*nc));
		if (nc) {
			pthread_mutex_init(&nc->lock, NULL);
			nc->client_id = random_id();
			s->ns = nc;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return nc;
}

uint64_t nsclient_client_id(struct sdfs *s, uint64_t *seq)
{
	struct nsclient *nc = get_nc(s);
	uint64_t id;

	if (!nc)
		return 0;
	pthread_mutex_lock(&nc->lock);
	id = nc->client_id;
	if (seq)
		*seq = ++nc->seq;
	pthread_mutex_unlock(&nc->lock);
	return id;
}

void nsclient_free(struct nsclient *nc)
{
	if (!nc)
		return;
	for (int i = 0; i < nc->nidle; i++)
		close(nc->idle[i]);
	pthread_mutex_destroy(&nc->lock);
	free(nc);
}

/* Forget the active (the caller holds nc->lock): a new generation, so
 * attempts and idle connections to the old one are dropped. */
static void active_forget(struct nsclient *nc)
{
	nc->have_active = 0;
	nc->gen++;
	for (int i = 0; i < nc->nidle; i++)
		close(nc->idle[i]);
	nc->nidle = 0;
}

/* Read the active from ZooKeeper, arming the watch. -ENOENT: none is
 * active (the one we knew lost its lease: it will not answer). */
static int refresh_active(struct sdfs *s, struct nsclient *nc)
{
	unsigned seen = atomic_load(&s->mds_gen);
	struct coord_mds_doc d;
	char host[64];
	uint16_t port;
	int ret;

	client_coord_renew(s);
	ret = coord_mds_active_get(s->coord, 1, &d);
	if (!ret && net_parse_addr(d.addr, host, sizeof(host), &port))
		ret = -EBADMSG;
	pthread_mutex_lock(&nc->lock);
	if (ret == 0 || ret == -ENOENT)
		nc->zk_seen = seen;
	if (ret == -ENOENT && nc->have_active)
		active_forget(nc);
	if (ret == 0) {
		if (!nc->have_active || strcmp(host, nc->host) || port != nc->port ||
		    d.epoch != nc->epoch) {
			if (nc->epoch && d.epoch != nc->epoch)
				log_info("mds %s at %s (epoch %llu) is the active now",
					 d.name, d.addr, (unsigned long long)d.epoch);
			active_forget(nc);
			snprintf(nc->host, sizeof(nc->host), "%s", host);
			nc->port = port;
			nc->epoch = d.epoch;
			nc->have_active = 1;
		}
	}
	pthread_mutex_unlock(&nc->lock);
	return ret;
}

/* Is the active of generation @gen still the active? Re-reads it when
 * the ZooKeeper watch fired since the last read; 0: yes (or ZooKeeper
 * could not tell), -ESTALE: no. */
static int active_still(struct sdfs *s, struct nsclient *nc, uint64_t gen)
{
	unsigned now = atomic_load(&s->mds_gen);
	uint64_t cur;
	int moved;

	pthread_mutex_lock(&nc->lock);
	moved = now != nc->zk_seen;
	if (moved)
		nc->zk_seen = now;      /* one thread reads; the rest see gen */
	cur = nc->gen;
	pthread_mutex_unlock(&nc->lock);
	if (moved && cur == gen) {
		refresh_active(s, nc);
		pthread_mutex_lock(&nc->lock);
		cur = nc->gen;
		pthread_mutex_unlock(&nc->lock);
	}
	return cur == gen ? 0 : -ESTALE;
}

/* A connection to the active: *@gen tells which active it was for,
 * *@fresh whether it was connected just now (not an idle one). */
static int conn_get(struct sdfs *s, struct nsclient *nc, int64_t deadline,
		    uint64_t *gen, int *fresh, struct auth_sess *sess)
{
	char host[64];
	uint16_t port;
	int fd, ret;

	pthread_mutex_lock(&nc->lock);
	while (nc->nidle > 0) {
		nc->nidle--;
		/* not one the mds closed meanwhile (idle_timeout_ms): each
		 * would cost an attempt and a backoff */
		if (nc->idle_gen[nc->nidle] == nc->gen && !net_idle_dead(nc->idle[nc->nidle])) {
			*gen = nc->gen;
			*fresh = 0;
			fd = nc->idle[nc->nidle];
			*sess = nc->idle_sess[nc->nidle];
			pthread_mutex_unlock(&nc->lock);
			return fd;
		}
		close(nc->idle[nc->nidle]);
	}
	int have = nc->have_active;
	pthread_mutex_unlock(&nc->lock);
	if (!have) {
		ret = refresh_active(s, nc);
		if (ret)
			return ret;
	}
	pthread_mutex_lock(&nc->lock);
	have = nc->have_active;         /* another thread may have seen it go */
	snprintf(host, sizeof(host), "%s", nc->host);
	port = nc->port;
	*gen = nc->gen;
	pthread_mutex_unlock(&nc->lock);
	if (!have)
		return -ENOENT;
	int64_t left = deadline - net_now_ms();
	fd = net_connect(host, port, (int)(left < 1000 ? (left > 0 ? left : 1) : 1000));
	*fresh = 1;
	if (fd < 0)
		return fd;
	left = deadline - net_now_ms();
	ret = client_auth(s, fd, (int)(left < AUTH_TIMEOUT_MS ? (left > 0 ? left : 1)
				       : AUTH_TIMEOUT_MS), sess);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

static void conn_put(struct nsclient *nc, int fd, uint64_t gen,
		     const struct auth_sess *sess)
{
	pthread_mutex_lock(&nc->lock);
	if (gen == nc->gen && nc->nidle < NS_IDLE_MAX) {
		nc->idle[nc->nidle] = fd;
		nc->idle_sess[nc->nidle] = *sess;
		nc->idle_gen[nc->nidle++] = gen;
		fd = -1;
	}
	pthread_mutex_unlock(&nc->lock);
	if (fd >= 0)
		close(fd);
}

/* The active is suspect: forget it (the next call re-reads it). After
 * @err a timeout or a refusal, its idle connections go too: they lead
 * to the same process, and an attempt on each would wait NS_ATTEMPT_MS
 * in turn (a pool of up to 32 made every call to a hung active fail at
 * the handle's timeout for as long as it hung). A closed connection
 * (the mds ended it) says nothing about the others. */
static void active_stale(struct nsclient *nc, uint64_t gen, int err)
{
	pthread_mutex_lock(&nc->lock);
	if (gen == nc->gen) {
		if (err == -ETIMEDOUT || err == -ESHUTDOWN || err == -ESTALE)
			active_forget(nc);
		else
			nc->have_active = 0;
	}
	pthread_mutex_unlock(&nc->lock);
}

/* What an attempt needs to notice that its active was deposed. */
struct attempt {
	struct sdfs *s;
	struct nsclient *nc;
	uint64_t gen;
	int64_t deadline;
	int sent;                       /* the whole request went out */
};

/* net_io_full's wait in an attempt: until its deadline, in slices,
 * giving up when its active was deposed. */
static int attempt_wait(void *arg, int fd, short events, size_t done)
{
	struct attempt *at = arg;

	(void)done;
	if (at->deadline <= net_now_ms())
		return -ETIMEDOUT;
	if (active_still(at->s, at->nc, at->gen))
		return -ESTALE;         /* deposed: it will not answer */
	return net_poll(fd, events, at->deadline, NS_SLICE_MS);
}

static int io_all(struct attempt *at, int fd, void *buf, size_t len, int writing)
{
	struct iovec iov = { buf, len };

	return net_io_full(fd, &iov, 1, writing, attempt_wait, at);
}

/* One exchange on @fd (tagged in session @sess). 0 with the reply, or
 * a transport -errno. */
static int exchange(struct attempt *at, int fd, struct auth_sess *sess,
		    const uint8_t *msg, size_t msg_len, uint64_t req_id,
		    struct sdfs_hdr *reply, uint8_t **rep)
{
	uint8_t h[SDFS_HDR_SIZE], tag[AUTH_TAG_BYTES];
	int ret;

	*rep = NULL;
	if (sess->on)
		auth_tag(sess, msg, msg + SDFS_HDR_SIZE, msg_len - SDFS_HDR_SIZE, tag);
	ret = io_all(at, fd, (void *)msg, msg_len, 1);
	if (!ret && sess->on)
		ret = io_all(at, fd, tag, sizeof(tag), 1);
	if (ret)
		return ret;
	at->sent = 1;
	ret = io_all(at, fd, h, sizeof(h), 0);
	if (ret)
		return ret;
	ret = proto_hdr_decode(h, NS_REPLY_MAX, reply);
	if (ret)
		return -EPROTO;
	if (!(reply->flags & SDFS_F_REPLY) || reply->req_id != req_id)
		return -EPROTO;
	if (reply->payload_len) {
		*rep = malloc(reply->payload_len);
		if (!*rep)
			return -ENOMEM;
		ret = io_all(at, fd, *rep, reply->payload_len, 0);
		if (ret) {
			free(*rep);
			*rep = NULL;
			return ret;
		}
	}
	if (sess->on) {
		ret = io_all(at, fd, tag, sizeof(tag), 0);
		if (!ret && auth_check(sess, h, *rep, reply->payload_len, tag)) {
			log_every(LOG_EVERY_MS, LOG_WARNING, "mds: a reply failed its MAC; "
				  "dropping the connection");
			ret = -EPROTO;
		}
	}
	if (!ret && reply->payload_len)
		ret = auth_payload_check(sess, reply, *rep);
	if (ret) {
		free(*rep);
		*rep = NULL;
		return ret;
	}
	return 0;
}

/* No active: wait up to @ms for the watch on mds/active to fire (it was
 * armed by the read that found none), without asking ZooKeeper. */
static void wait_moved(struct sdfs *s, struct nsclient *nc, int ms)
{
	unsigned seen;

	pthread_mutex_lock(&nc->lock);
	seen = nc->zk_seen;             /* as of the read that found none */
	pthread_mutex_unlock(&nc->lock);

	for (int waited = 0; waited < ms && atomic_load(&s->mds_gen) == seen;
	     waited += NS_POLL_MS)
		usleep(NS_POLL_MS * 1000);
}

/*
 * Go on after a failed attempt? Before @deadline always. After it only
 * if an mds process took our connection, answered, or held the request
 * without refusing it within the last @timeout_ms (at @reached_ms):
 * the request may have reached an active that hangs, or one is taking
 * over, and only an active can tell whether it was applied. Not when
 * every connection was refused (the mds is dead: the request never
 * arrived), nor with @strict, nor past @hard.
 */
static int may_retry(int64_t deadline, int64_t hard, int timeout_ms, int strict,
		     int64_t reached_ms)
{
	int64_t now = net_now_ms();

	if (now < deadline)
		return 1;
	if (strict || now >= hard)
		return 0;
	return reached_ms && now - reached_ms < timeout_ms;
}

/* Ops that change nothing at the mds: the rest make sdfs_ns_sync work. */
static int changes_nothing(unsigned op)
{
	switch (op) {
	case SDFS_OP_NS_LOOKUP: case SDFS_OP_NS_GETATTR: case SDFS_OP_NS_READLINK:
	case SDFS_OP_NS_READDIR: case SDFS_OP_NS_STATFS: case SDFS_OP_NS_GETXATTR:
	case SDFS_OP_NS_LISTXATTR: case SDFS_OP_NS_INFO: case SDFS_OP_NS_VOL_INFO:
	case SDFS_OP_NS_VOL_SNAPLIST: case SDFS_OP_NS_VOL_TREE: case SDFS_OP_NS_LOCK_GET:
	case SDFS_OP_NS_OBJCAP: case SDFS_OP_NS_SYNC: case SDFS_OP_NS_OPEN:
		return 1;
	}
	return 0;
}

int nsclient_call(struct sdfs *s, unsigned op, struct sdfs_ns_req *req,
		  const char *name, const char *name2, const void *data,
		  struct sdfs_hdr *reply, uint8_t **rep, uint32_t *rep_len,
		  int timeout_ms)
{
	struct nsclient *nc = get_nc(s);
	int strict = timeout_ms > 0;
	int tmo = strict ? timeout_ms : s->timeout_ms;
	int64_t start = net_now_ms();
	int64_t deadline = start + tmo;
	int64_t hard = strict ? deadline : start + (int64_t)tmo * NSCLIENT_HARD_FACTOR;
	size_t plen, msg_len;
	struct sdfs_hdr h = { 0 };
	uint8_t *msg;
	int ret = -ETIMEDOUT, backoff = NS_BACKOFF_MIN_MS, sent = 0, tries = 0;
	int64_t reached_ms = 0;         /* an mds took, answered or held it */

	if (!nc)
		return -ENOMEM;
	pthread_mutex_lock(&nc->lock);
	req->client_id = nc->client_id;
	req->seq = ++nc->seq;
	pthread_mutex_unlock(&nc->lock);

	caller_fill(req);
	plen = proto_ns_req_len(req);
	msg_len = SDFS_HDR_SIZE + plen;
	msg = malloc(msg_len);
	if (!msg)
		return -ENOMEM;
	proto_ns_req_encode(req, msg + SDFS_HDR_SIZE);
	uint8_t *p = msg + SDFS_HDR_SIZE + SDFS_NS_REQ_SIZE;
	if (req->name_len)
		memcpy(p, name, req->name_len);
	p += req->name_len;
	if (req->name2_len)
		memcpy(p, name2, req->name2_len);
	p += req->name2_len;
	if (req->data_len)
		memcpy(p, data, req->data_len);
	proto_ns_groups_encode(req, msg + SDFS_HDR_SIZE);
	h.opcode = (uint8_t)op;
	h.req_id = client_req_id(s);
	h.oid = req->ino;
	h.payload_len = (uint32_t)plen;

	for (;;) {
		struct attempt at = { .s = s, .nc = nc };
		struct auth_sess sess;
		int64_t lim = strict ? deadline : hard;
		int fresh = 0;
		int fd = conn_get(s, nc, lim, &at.gen, &fresh, &sess);

		if (fd == -EACCES || fd == -EPROTONOSUPPORT) {
			free(msg);      /* refused: another try cannot help */
			return fd;
		}
		if (fd < 0) {
			ret = fd;
			if (fd != -ENOENT)
				active_stale(nc, at.gen, fd);
			if (fd == -ETIMEDOUT)   /* not refused: hung, or cut off */
				reached_ms = net_now_ms();
			goto retry;     /* no active yet, or unreachable */
		}
		if (fresh)
			reached_ms = net_now_ms();
		net_set_nonblock(fd, 1);
		int64_t now = net_now_ms();
		/* a request under way is not cut short by the handle's
		 * timeout, only by the attempt's bound */
		at.deadline = now + NS_ATTEMPT_MS < lim ? now + NS_ATTEMPT_MS : lim;
		tries++;
		/* per attempt: the connection's session decides the checksum */
		auth_hdr_encode(&sess, &h, msg + SDFS_HDR_SIZE, msg);
		ret = exchange(&at, fd, &sess, msg, msg_len, h.req_id, reply, rep);
		sent |= at.sent;
		/* an mds answered, or held the request without refusing it
		 * (a hung or deposed one: its successor must be asked) */
		if (!ret || ret == -ETIMEDOUT || ret == -ESTALE)
			reached_ms = net_now_ms();
		if (ret) {
			close(fd);
			active_stale(nc, at.gen, ret);
			goto retry;
		}
		if (reply->result == SDFS_RES_SHUTDOWN) {
			/* a standby, or an active that lost ZooKeeper */
			free(*rep);
			*rep = NULL;
			close(fd);
			active_stale(nc, at.gen, -ESHUTDOWN);
			ret = -ESHUTDOWN;
			goto retry;
		}
		conn_put(nc, fd, at.gen, &sess);
		ret = proto_ns_result(reply);
		if (ret) {
			free(*rep);
			*rep = NULL;
		}
		*rep_len = reply->payload_len;
		free(msg);
		/* after the answer: a sync that sees 0 came before it (a
		 * durable SETATTR was that sync) */
		if (!changes_nothing(op) &&
		    !(op == SDFS_OP_NS_SETATTR && (req->flags & SDFS_NS_DURABLE)))
			atomic_store(&s->ns_changed, 1);
		if (tries > 1)
			log_debug("%s: answered at try %d after %lld ms", proto_op_name(op),
				  tries, (long long)(net_now_ms() - start));
		return ret;
retry:
		if (!may_retry(deadline, hard, tmo, strict, reached_ms))
			break;
		{
			int64_t left = (strict ? deadline : hard) - net_now_ms();
			int ms = ret == -ESTALE ? 0 : backoff;

			if (left <= 0)
				break;
			if (ret == -ENOENT)
				wait_moved(s, nc, (int)(left < NS_NONE_WAIT_MS ? left : NS_NONE_WAIT_MS));
			else if (ms)
				usleep((useconds_t)(ms < left ? ms : left) * 1000);
			backoff = backoff * 2 < NS_BACKOFF_MAX_MS ? backoff * 2 : NS_BACKOFF_MAX_MS;
		}
	}
	free(msg);
	if (sent && !changes_nothing(op))
		atomic_store(&s->ns_changed, 1);        /* it may have happened */
	if (strict)
		log_debug("%s: giving up: %s", proto_op_name(op), strerror(-ret));
	else
		log_warn("%s: no answer from an active mds in %lld ms and %d tries "
			 "(%s): %s", proto_op_name(op), (long long)(net_now_ms() - start),
			 tries, sent ? "it may have been applied" : "never sent",
			 strerror(-ret));
	if (ret == -ENOENT)
		return -EHOSTDOWN;      /* no mds is active */
	return ret == -ESHUTDOWN || ret == -ECONNREFUSED || ret == -ECONNRESET ||
	       ret == -ESTALE ? -ETIMEDOUT : ret;
}
