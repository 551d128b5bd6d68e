/*
 * rpc.c - see rpc.h. Each call is a small state machine driven by
 * poll(): connect, send header and payload, receive header, receive
 * payload. Calls never share a connection while in flight.
 */
#include "common/rpc.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "common/net.h"
#include "common/proto.h"

#define POOL_IDLE_PER_NODE 64     /* >= a mount's request threads */

enum { ST_INIT, ST_CONNECTING, ST_SENDING, ST_RECV_HDR, ST_RECV_PAYLOAD, ST_DONE };

struct pool_entry {
	char host[CMAP_MAX_HOST];
	uint16_t port;
	int nfd;
	int fds[POOL_IDLE_PER_NODE];
};

struct pool {
	pthread_mutex_t lock;
	size_t n, cap;
	struct pool_entry *e;
};

int pool_new(struct pool **out)
{
	struct pool *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		for (int j = 0; j < p->e[i].nfd; j++)
			close(p->e[i].fds[j]);
	free(p->e);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static struct pool_entry *pool_find(struct pool *p, const struct cmap_node *nd, int create)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].port == nd->port && !strcmp(p->e[i].host, nd->host))
			return &p->e[i];
	if (!create)
		return NULL;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct pool_entry *e = realloc(p->e, cap * sizeof(*e));

		if (!e)
			return NULL;
		p->e = e;
		p->cap = cap;
	}
	struct pool_entry *e = &p->e[p->n++];
	memset(e, 0, sizeof(*e));
	strcpy(e->host, nd->host);
	e->port = nd->port;
	return e;
}

static int pool_take(struct pool *p, const struct cmap_node *nd)
{
	int fd = -1;

	pthread_mutex_lock(&p->lock);
	struct pool_entry *e = pool_find(p, nd, 0);
	/* those the daemon closed meanwhile (idle) go: each would cost a try */
	while (e && e->nfd && fd < 0) {
		fd = e->fds[--e->nfd];
		if (net_idle_dead(fd)) {
			close(fd);
			fd = -1;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return fd;
}

static void pool_give(struct pool *p, const struct cmap_node *nd, int fd)
{
	pthread_mutex_lock(&p->lock);
	struct pool_entry *e = pool_find(p, nd, 1);
	if (e && e->nfd < POOL_IDLE_PER_NODE) {
		e->fds[e->nfd++] = fd;
		fd = -1;
	}
	pthread_mutex_unlock(&p->lock);
	if (fd >= 0)
		close(fd);
}

static void call_fail(struct rpc_call *c, int err)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->ret = err;
	c->state = ST_DONE;
}

/* Start (or restart) a call: a pooled connection, else a new one. */
static void call_start(struct pool *p, struct rpc_call *c, uint64_t id)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	c->done = 0;
	c->req.req_id = id;
	proto_hdr_encode(&c->req, c->payload, c->hbuf);
	c->fd = c->retried ? -1 : pool_take(p, c->node);
	if (c->fd >= 0) {
		c->reused = 1;
		c->state = ST_SENDING;
		return;
	}
	c->reused = 0;
	sa.sin_port = htons(c->node->port);
	if (inet_pton(AF_INET, c->node->host, &sa.sin_addr) != 1) {
		/* Not a literal: resolve with a blocking connect. */
		c->fd = net_connect(c->node->host, c->node->port, 2000);
		if (c->fd < 0)
			call_fail(c, c->fd);
		else
			c->state = ST_SENDING;
		return;
	}
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		call_fail(c, -errno);
		return;
	}
	net_tune(c->fd);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		c->state = ST_SENDING;
	else if (errno == EINPROGRESS)
		c->state = ST_CONNECTING;
	else
		call_fail(c, -errno);
}

/* A transport error: on a reused connection with no reply yet, the
 * daemon may have restarted since it was pooled; try once afresh. */
static void call_error(struct pool *p, struct rpc_call *c, int err, uint64_t id)
{
	if (c->reused && !c->retried && c->state <= ST_RECV_HDR &&
	    !(c->state == ST_RECV_HDR && c->done > 0)) {
		close(c->fd);
		c->fd = -1;
		c->retried = 1;
		call_start(p, c, id);
		return;
	}
	call_fail(c, err);
}

static void call_step(struct pool *p, struct rpc_call *c, short revents, uint64_t id)
{
	ssize_t n;

	if (c->state == ST_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			call_fail(c, -err);
			return;
		}
		c->state = ST_SENDING;
	}
	if (c->state == ST_SENDING) {
		size_t total = SDFS_HDR_SIZE + c->req.payload_len;
		struct iovec iov[2];
		int cnt = 0;

		if (c->done < SDFS_HDR_SIZE)
			iov[cnt++] = (struct iovec){ c->hbuf + c->done, SDFS_HDR_SIZE - c->done };
		if (c->req.payload_len) {
			size_t off = c->done > SDFS_HDR_SIZE ? c->done - SDFS_HDR_SIZE : 0;

			iov[cnt++] = (struct iovec){ (uint8_t *)c->payload + off,
						     c->req.payload_len - off };
		}
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = cnt };
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				call_error(p, c, -errno, id);
			return;
		}
		c->done += n;
		if (c->done < total)
			return;
		c->state = ST_RECV_HDR;
		c->done = 0;
		return;         /* wait for POLLIN */
	}
	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	if (c->state == ST_RECV_HDR) {
		n = recv(c->fd, c->hbuf + c->done, SDFS_HDR_SIZE - c->done, 0);
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			call_error(p, c, n == 0 ? -ECONNRESET : -errno, id);
			return;
		}
		c->done += n;
		if (c->done < SDFS_HDR_SIZE)
			return;
		int ret = proto_hdr_decode(c->hbuf, SDFS_MAX_PAYLOAD, &c->reply);
		if (ret == -EPROTONOSUPPORT) {
			call_fail(c, -EPROTONOSUPPORT);
			return;
		}
		if (ret || !(c->reply.flags & SDFS_F_REPLY) ||
		    c->reply.req_id != c->req.req_id ||
		    (c->rbuf && c->reply.payload_len > c->rbuf_len)) {
			call_fail(c, -EPROTO);
			return;
		}
		c->done = 0;
		if (c->reply.payload_len) {
			c->rdst = c->rbuf;
			if (!c->rdst) {
				c->rpayload = malloc(c->reply.payload_len);
				c->rdst = c->rpayload;
				if (!c->rdst) {
					call_fail(c, -ENOMEM);
					return;
				}
			}
		}
		c->state = ST_RECV_PAYLOAD;
		if (c->reply.payload_len == 0)
			goto complete;
		return;
	}
	if (c->state == ST_RECV_PAYLOAD) {
		n = recv(c->fd, c->rdst + c->done, c->reply.payload_len - c->done, 0);
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			call_fail(c, n == 0 ? -ECONNRESET : -errno);
			return;
		}
		c->done += n;
		if (c->done < c->reply.payload_len)
			return;
	}
complete:
	if (proto_payload_check(&c->reply, c->rdst) != 0) {
		call_fail(c, -EPROTO);
		return;
	}
	pool_give(p, c->node, c->fd);
	c->fd = -1;
	c->ret = 0;
	c->state = ST_DONE;
}

/* The calls in flight and what poll() waits for on each. */
struct pollset {
	size_t n;
	struct pollfd pfd[RPC_MAX_CALLS];
	size_t idx[RPC_MAX_CALLS];      /* pfd[k] is calls[idx[k]] */
};

/* Collect the calls of @calls[0..@n) still in flight into @ps. */
static void pollset_fill(struct pollset *ps, const struct rpc_call *calls, size_t n)
{
	ps->n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct rpc_call *c = &calls[i];
		struct pollfd *pfd = &ps->pfd[ps->n];

		if (c->state == ST_DONE)
			continue;
		pfd->fd = c->fd;
		pfd->events = c->state == ST_CONNECTING || c->state == ST_SENDING
			? POLLOUT : POLLIN;
		pfd->revents = 0;
		ps->idx[ps->n++] = i;
	}
}

/* End every call in @ps with @err. */
static void pollset_fail(const struct pollset *ps, struct rpc_call *calls, int err)
{
	for (size_t k = 0; k < ps->n; k++)
		call_fail(&calls[ps->idx[k]], err);
}

/* Wait up to @wait_ms for the calls in @ps and move each that is ready
 * a step. A poll() failure fails them all: -1 then, else 0. */
static int pollset_step(struct pollset *ps, struct pool *p, struct rpc_call *calls,
			int wait_ms, uint64_t (*req_id)(void *), void *arg)
{
	int r = poll(ps->pfd, ps->n, wait_ms);

	if (r < 0 && errno != EINTR) {
		pollset_fail(ps, calls, -errno);
		return -1;
	}
	for (size_t k = 0; r > 0 && k < ps->n; k++)
		if (ps->pfd[k].revents)
			call_step(p, &calls[ps->idx[k]], ps->pfd[k].revents, req_id(arg));
	return 0;
}

/* Make @c a call not yet started, its outcome @ret for now. */
static void call_reset(struct rpc_call *c, int state, int ret)
{
	c->fd = -1;
	c->state = state;
	c->retried = 0;
	c->rpayload = NULL;
	c->ret = ret;
}

void rpc_run(struct pool *p, struct rpc_call *calls, size_t n, int timeout_ms,
	     uint64_t (*req_id)(void *), void *arg)
{
	struct pollset ps;
	int64_t deadline = net_now_ms() + timeout_ms;

	if (n > RPC_MAX_CALLS) {
		for (size_t i = 0; i < n; i++)
			calls[i].ret = -E2BIG, calls[i].state = ST_DONE;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		call_reset(&calls[i], ST_INIT, -EINPROGRESS);
		call_start(p, &calls[i], req_id(arg));
	}
	for (;;) {
		pollset_fill(&ps, calls, n);
		if (ps.n == 0)
			return;
		int64_t left = deadline - net_now_ms();
		if (left <= 0) {
			pollset_fail(&ps, calls, -ETIMEDOUT);
			return;
		}
		if (pollset_step(&ps, p, calls, (int)left, req_id, arg))
			return;
	}
}

int rpc_run_hedged(struct pool *p, struct rpc_call *calls, size_t n, int timeout_ms,
		   int hedge_ms, int (*accept)(const struct rpc_call *),
		   uint64_t (*req_id)(void *), void *arg)
{
	struct pollset ps;
	size_t started = 0;
	int64_t start_ms[RPC_MAX_CALLS];
	int64_t now = net_now_ms(), deadline = now + timeout_ms;
	int won = -1;

	if (n > RPC_MAX_CALLS)
		n = RPC_MAX_CALLS;
	for (size_t i = 0; i < n; i++)
		call_reset(&calls[i], ST_DONE, -ECANCELED);
	for (;;) {
		/* The next one starts once every call in flight is late. */
		int64_t next_at = now;

		now = net_now_ms();
		for (size_t i = 0; i < started && won < 0; i++)
			if (calls[i].state == ST_DONE && accept(&calls[i]))
				won = (int)i;
		for (size_t i = 0; i < started; i++)
			if (calls[i].state != ST_DONE && start_ms[i] + hedge_ms > next_at)
				next_at = start_ms[i] + hedge_ms;
		if (won < 0 && started < n && now >= next_at && now < deadline) {
			struct rpc_call *c = &calls[started];

			start_ms[started++] = now;
			c->state = ST_INIT;
			c->ret = -EINPROGRESS;
			call_start(p, c, req_id(arg));
			if (c->state == ST_DONE && !accept(c))
				continue;       /* failed at once: the next now */
			if (c->state == ST_DONE)
				won = (int)started - 1; /* ended at once, accepted */
			next_at = now + hedge_ms;
		}
		pollset_fill(&ps, calls, started);
		if (won >= 0 || (ps.n == 0 && (started == n || now >= deadline))) {
			pollset_fail(&ps, calls, -ETIMEDOUT);
			return won;
		}
		if (ps.n == 0)
			continue;       /* start the next one */
		int64_t left = deadline - now, wait = left;
		if (started < n && next_at - now < wait)
			wait = next_at > now ? next_at - now : 0;
		if (left <= 0) {
			pollset_fail(&ps, calls, -ETIMEDOUT);
			return -1;
		}
		if (pollset_step(&ps, p, calls, (int)wait, req_id, arg))
			return -1;
	}
}

void rpc_calls_free(struct rpc_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(calls[i].rpayload);
		calls[i].rpayload = NULL;
	}
}

int rpc_result(const struct rpc_call *c)
{
	return c->ret ? c->ret : proto_res_to_errno(c->reply.result);
}

int rpc_is_transport(int err)
{
	return err == -ETIMEDOUT || err == -ECONNREFUSED || err == -ECONNRESET ||
	       err == -EPIPE || err == -EPROTO || err == -EHOSTUNREACH ||
	       err == -ENETUNREACH || err == -ESHUTDOWN || err == -EINPROGRESS;
}
