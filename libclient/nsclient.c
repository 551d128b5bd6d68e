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
 * mutation with its first result) until the handle's timeout.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/coord_mds.h"
#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"
#include "libclient/client.h"

#define NS_IDLE_MAX 32
#define NS_REPLY_MAX (1u << 20)
/* One attempt waits this long for its reply, then the call re-reads the
 * active and sends again: an active that hangs (SIGSTOP, a partition)
 * never answers nor closes, and a retry is safe (reply cache). */
#define NS_ATTEMPT_MS 3000

struct nsclient {
	pthread_mutex_t lock;
	uint64_t client_id;
	uint64_t seq;
	int have_active;
	char host[64];
	uint16_t port;
	uint64_t gen;                   /* bumps when the active changes */
	int idle[NS_IDLE_MAX];
	uint64_t idle_gen[NS_IDLE_MAX];
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

/* Read the active from ZooKeeper. */
static int refresh_active(struct sdfs *s, struct nsclient *nc)
{
	struct coord_mds_doc d;
	char host[64];
	uint16_t port;
	int ret;

	client_coord_renew(s);
	ret = coord_mds_active_get(s->coord, 0, &d);
	if (ret)
		return ret;
	if (net_parse_addr(d.addr, host, sizeof(host), &port))
		return -EBADMSG;
	pthread_mutex_lock(&nc->lock);
	if (!nc->have_active || strcmp(host, nc->host) || port != nc->port) {
		snprintf(nc->host, sizeof(nc->host), "%s", host);
		nc->port = port;
		nc->have_active = 1;
		nc->gen++;
		for (int i = 0; i < nc->nidle; i++)
			close(nc->idle[i]);
		nc->nidle = 0;
	}
	pthread_mutex_unlock(&nc->lock);
	return 0;
}

/* A connection to the active: *@gen tells which active it was for. */
static int conn_get(struct sdfs *s, struct nsclient *nc, int64_t deadline,
		    uint64_t *gen)
{
	char host[64];
	uint16_t port;
	int fd, ret;

	pthread_mutex_lock(&nc->lock);
	while (nc->nidle > 0) {
		nc->nidle--;
		if (nc->idle_gen[nc->nidle] == nc->gen) {
			*gen = nc->gen;
			fd = nc->idle[nc->nidle];
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
	snprintf(host, sizeof(host), "%s", nc->host);
	port = nc->port;
	*gen = nc->gen;
	pthread_mutex_unlock(&nc->lock);
	int64_t left = deadline - net_now_ms();
	fd = net_connect(host, port, (int)(left < 1000 ? (left > 0 ? left : 1) : 1000));
	return fd;
}

static void conn_put(struct nsclient *nc, int fd, uint64_t gen)
{
	pthread_mutex_lock(&nc->lock);
	if (gen == nc->gen && nc->nidle < NS_IDLE_MAX) {
		nc->idle[nc->nidle] = fd;
		nc->idle_gen[nc->nidle++] = gen;
		fd = -1;
	}
	pthread_mutex_unlock(&nc->lock);
	if (fd >= 0)
		close(fd);
}

/* The active is suspect: forget it (the next call re-reads it). */
static void active_stale(struct nsclient *nc, uint64_t gen)
{
	pthread_mutex_lock(&nc->lock);
	if (gen == nc->gen)
		nc->have_active = 0;
	pthread_mutex_unlock(&nc->lock);
}

static int io_all(int fd, void *buf, size_t len, int writing, int64_t deadline)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = writing ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL)
				    : recv(fd, (char *)buf + done, len - done, 0);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		int64_t left = deadline - net_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* One exchange on @fd. 0 with the reply, or a transport -errno. */
static int exchange(int fd, const uint8_t *msg, size_t msg_len, uint64_t req_id,
		    int64_t deadline, struct sdfs_hdr *reply, uint8_t **rep)
{
	uint8_t h[SDFS_HDR_SIZE];
	int ret;

	*rep = NULL;
	ret = io_all(fd, (void *)msg, msg_len, 1, deadline);
	if (ret)
		return ret;
	ret = io_all(fd, h, sizeof(h), 0, deadline);
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
		ret = io_all(fd, *rep, reply->payload_len, 0, deadline);
		if (!ret)
			ret = proto_payload_check(reply, *rep);
		if (ret) {
			free(*rep);
			*rep = NULL;
			return ret == -EPROTO ? -EPROTO : ret;
		}
	}
	return 0;
}

int nsclient_call(struct sdfs *s, unsigned op, struct sdfs_ns_req *req,
		  const char *name, const char *name2, const void *data,
		  struct sdfs_hdr *reply, uint8_t **rep, uint32_t *rep_len,
		  int timeout_ms)
{
	struct nsclient *nc = get_nc(s);
	int64_t deadline = net_now_ms() + (timeout_ms > 0 ? timeout_ms : s->timeout_ms);
	size_t plen, msg_len;
	struct sdfs_hdr h = { 0 };
	uint8_t *msg;
	int ret = -ETIMEDOUT, backoff = 20;

	if (!nc)
		return -ENOMEM;
	pthread_mutex_lock(&nc->lock);
	req->client_id = nc->client_id;
	req->seq = ++nc->seq;
	pthread_mutex_unlock(&nc->lock);

	plen = SDFS_NS_REQ_SIZE + req->name_len + req->name2_len + req->data_len;
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
	h.opcode = (uint8_t)op;
	h.req_id = client_req_id(s);
	h.oid = req->ino;
	h.payload_len = (uint32_t)plen;
	proto_hdr_encode(&h, msg + SDFS_HDR_SIZE, msg);

	while (net_now_ms() < deadline) {
		uint64_t gen = 0;
		int fd = conn_get(s, nc, deadline, &gen);

		if (fd < 0) {
			ret = fd;
			if (fd != -ENOENT)
				active_stale(nc, gen);
			goto retry;     /* no active yet, or unreachable */
		}
		net_set_nonblock(fd, 1);
		int64_t now = net_now_ms();
		int64_t adl = now + NS_ATTEMPT_MS < deadline ? now + NS_ATTEMPT_MS : deadline;
		ret = exchange(fd, msg, msg_len, h.req_id, adl, reply, rep);
		if (ret) {
			close(fd);
			active_stale(nc, gen);
			goto retry;
		}
		if (reply->result == SDFS_RES_SHUTDOWN) {
			/* a standby, or an active that lost ZooKeeper */
			free(*rep);
			*rep = NULL;
			close(fd);
			active_stale(nc, gen);
			ret = -ESHUTDOWN;
			goto retry;
		}
		conn_put(nc, fd, gen);
		ret = proto_ns_result(reply);
		if (ret) {
			free(*rep);
			*rep = NULL;
		}
		*rep_len = reply->payload_len;
		free(msg);
		return ret;
retry:
		{
			int64_t left = deadline - net_now_ms();

			if (left <= 0)
				break;
			usleep((useconds_t)(backoff < left ? backoff : left) * 1000);
			backoff = backoff < 50 ? backoff * 2 : 50;
		}
	}
	free(msg);
	log_debug("%s: giving up: %s", proto_op_name(op), strerror(-ret));
	if (ret == -ENOENT)
		return -EHOSTDOWN;      /* no mds is active */
	return ret == -ESHUTDOWN || ret == -ECONNREFUSED || ret == -ECONNRESET ?
	       -ETIMEDOUT : ret;
}
