/*
 * rpc.c - see rpc.h. Each call is a small state machine driven by
 * poll(): connect, send header and payload, receive header, receive
 * payload. Calls never share a connection while in flight.
 *
 * With authentication (the cluster's auth required, common/auth.h) a
 * new connection first runs the handshake as more states of the same
 * machine (ST_AUTH), so a slow or dead node delays only its own call;
 * then every request and reply carries its tag. A pooled connection
 * keeps its session (the frame counters go on where they were).
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
#include <sodium.h>
#include <stddef.h>

#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"

#define POOL_IDLE_PER_NODE 64     /* >= a mount's request threads */
/* A connection pooled this recently is taken without asking the kernel
 * whether the daemon closed it (one recv per call saved): a daemon
 * closes idle ones only after idle_timeout_ms (conf.h, seconds), and
 * one that died meanwhile costs its call a fresh connection, not a
 * try (call_error). */
#define POOL_FRESH_MS 1000

enum { ST_INIT, ST_CONNECTING, ST_AUTH, ST_SENDING, ST_RECV_HDR, ST_RECV_PAYLOAD,
       ST_DONE };

struct pooled {
	int fd;
	int64_t since_ms;               /* pooled at, net_now_ms */
	struct auth_sess sess;
};

struct pool_entry {
	char host[CMAP_MAX_HOST];
	uint16_t port;
	int nfd;
	struct pooled c[POOL_IDLE_PER_NODE];
};

struct pool {
	pthread_mutex_t lock;
	size_t n, cap;
	struct pool_entry *e;
	int auth, have_cred;            /* pool_set_auth */
	struct auth_cred cred;
	struct auth_keyfile *kf;        /* pool_set_keyfile: before cred */
};

/* A handshake under way on a call's new connection. */
struct rpc_auth {
	struct auth_client ac;
	int recv, round;                /* receiving; 0: HELLO, 1: PROOF */
	size_t len, done;
	struct sdfs_hdr h;
	uint8_t buf[AUTH_FRAME_MAX];
};

static pthread_mutex_t def_lock = PTHREAD_MUTEX_INITIALIZER;
static int def_auth, def_have;
static struct auth_cred def_cred;

void rpc_set_default_auth(int on, const struct auth_cred *cred)
{
	pthread_mutex_lock(&def_lock);
	def_auth = on;
	def_have = cred != NULL;
	if (cred)
		def_cred = *cred;
	pthread_mutex_unlock(&def_lock);
}

void pool_set_auth(struct pool *p, int on, const struct auth_cred *cred)
{
	pthread_mutex_lock(&p->lock);
	p->auth = on;
	p->have_cred = cred != NULL;
	if (cred)
		p->cred = *cred;
	pthread_mutex_unlock(&p->lock);
}

void pool_set_keyfile(struct pool *p, struct auth_keyfile *kf)
{
	pthread_mutex_lock(&p->lock);
	p->kf = kf;
	pthread_mutex_unlock(&p->lock);
}

int pool_new(struct pool **out)
{
	struct pool *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_lock(&def_lock);
	p->auth = def_auth;
	p->have_cred = def_have;
	p->cred = def_cred;
	pthread_mutex_unlock(&def_lock);
	*out = p;
	return 0;
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		for (int j = 0; j < p->e[i].nfd; j++)
			close(p->e[i].c[j].fd);
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

/* An idle connection to @nd with its session into *@sess; -1: none. */
static int pool_take(struct pool *p, const struct cmap_node *nd, struct auth_sess *sess)
{
	int64_t now = net_now_ms();
	int fd = -1;

	pthread_mutex_lock(&p->lock);
	struct pool_entry *e = pool_find(p, nd, 0);
	/* those the daemon closed meanwhile (idle) go: each would cost a
	 * try; so do plain ones once authentication is on. The last one
	 * pooled is taken first: the one most likely still fresh. */
	while (e && e->nfd && fd < 0) {
		struct pooled *pc = &e->c[--e->nfd];

		fd = pc->fd;
		*sess = pc->sess;
		if ((p->auth && !sess->on) ||
		    (now - pc->since_ms >= POOL_FRESH_MS && net_idle_dead(fd))) {
			close(fd);
			fd = -1;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return fd;
}

static void pool_give(struct pool *p, const struct cmap_node *nd, int fd,
		      const struct auth_sess *sess)
{
	int64_t now = net_now_ms();

	pthread_mutex_lock(&p->lock);
	struct pool_entry *e = pool_find(p, nd, 1);
	if (e && e->nfd < POOL_IDLE_PER_NODE) {
		e->c[e->nfd].fd = fd;
		e->c[e->nfd].since_ms = now;
		e->c[e->nfd++].sess = *sess;
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
	free(c->auth);
	c->auth = NULL;
}

/* The connection is ours and ready: tag the request (its session), send. */
static void call_ready(struct rpc_call *c)
{
	/* encoded now that the connection, tagged or not, is known */
	auth_hdr_encode(&c->sess, &c->req, c->payload, c->hbuf);
	if (c->sess.on)
		auth_tag(&c->sess, c->hbuf, c->payload, c->req.payload_len, c->tag);
	c->state = ST_SENDING;
}

/* A new connection is up: the handshake first if the pool wants one. */
static void call_connected(struct pool *p, struct rpc_call *c)
{
	struct auth_keyfile *kf;
	struct auth_cred cred;
	int on, have;

	pthread_mutex_lock(&p->lock);
	on = p->auth;
	have = p->have_cred;
	cred = p->cred;
	kf = p->kf;
	pthread_mutex_unlock(&p->lock);
	if (on && kf) {
		auth_keyfile_cred(kf, &cred);   /* a rotated key, if it was */
		have = 1;
	}
	memset(&c->sess, 0, sizeof(c->sess));
	if (!on) {
		call_ready(c);
		return;
	}
	if (!have) {
		log_every(LOG_EVERY_MS, LOG_WARNING, "node %s:%u: the cluster requires "
			  "authentication and this process has no key (keyring =, "
			  "docs/config.md)", c->node->host, c->node->port);
		call_fail(c, -EACCES);
		return;
	}
	c->auth = malloc(sizeof(*c->auth));
	if (!c->auth) {
		call_fail(c, -ENOMEM);
		return;
	}
	memset(c->auth, 0, offsetof(struct rpc_auth, buf));
	c->auth->len = auth_client_hello(&c->auth->ac, &cred, c->req.req_id, c->auth->buf);
	sodium_memzero(&cred, sizeof(cred));
	c->state = ST_AUTH;
}

static void auth_fail(struct rpc_call *c, int err, const char *why)
{
	log_every(LOG_EVERY_MS, LOG_WARNING, "node %s:%u: authentication: %s",
		  c->node->host, c->node->port, why);
	call_fail(c, err);
}

/* Move the handshake on @c as far as the socket lets it. */
static void auth_step(struct rpc_call *c)
{
	struct rpc_auth *a = c->auth;
	char err[256];
	ssize_t n;
	int ret;

	for (;;) {
		if (!a->recv) {
			n = send(c->fd, a->buf + a->done, a->len - a->done, MSG_NOSIGNAL);
			if (n < 0) {
				if (errno != EAGAIN && errno != EINTR)
					call_fail(c, -errno);
				return;
			}
			a->done += (size_t)n;
			if (a->done < a->len)
				return;
			a->recv = 1;
			a->done = 0;
			a->len = SDFS_HDR_SIZE;
		}
		n = recv(c->fd, a->buf + a->done, a->len - a->done, 0);
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			call_fail(c, n == 0 ? -ECONNRESET : -errno);
			return;
		}
		a->done += (size_t)n;
		if (a->done < a->len)
			continue;
		if (a->len == SDFS_HDR_SIZE) {
			ret = proto_hdr_decode(a->buf, AUTH_FRAME_MAX - SDFS_HDR_SIZE, &a->h);
			if (ret == -EPROTONOSUPPORT) {
				snprintf(err, sizeof(err), "peer speaks protocol %u.x, "
					 "not %u.x", a->h.major, SDFS_PROTO_MAJOR);
				auth_fail(c, ret, err);
				return;
			}
			if (ret) {
				auth_fail(c, -EPROTO, "malformed handshake frame");
				return;
			}
			if (a->h.payload_len) {
				a->len += a->h.payload_len;
				continue;
			}
		}
		if (proto_payload_check(&a->h, a->buf + SDFS_HDR_SIZE)) {
			auth_fail(c, -EPROTO, "handshake frame checksum mismatch");
			return;
		}
		if (a->round == 0) {
			uint8_t out[AUTH_FRAME_MAX];
			size_t len;

			ret = auth_client_challenge(&a->ac, &a->h, a->buf + SDFS_HDR_SIZE,
						    out, &len, err, sizeof(err));
			if (ret) {
				auth_fail(c, ret, err);
				return;
			}
			memcpy(a->buf, out, len);
			a->len = len;
			a->done = 0;
			a->recv = 0;
			a->round = 1;
			continue;
		}
		ret = auth_client_done(&a->ac, &a->h, a->buf + SDFS_HDR_SIZE, &c->sess,
				       NULL, 0, err, sizeof(err));
		if (ret) {
			auth_fail(c, ret, err);
			return;
		}
		free(c->auth);
		c->auth = NULL;
		call_ready(c);
		return;
	}
}

static void call_step(struct pool *p, struct rpc_call *c, short revents, uint64_t id);

/* Start (or restart) a call: a pooled connection, else a new one. */
static void call_start(struct pool *p, struct rpc_call *c, uint64_t id)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	c->done = 0;
	c->req.req_id = id;
	c->fd = c->retried ? -1 : pool_take(p, c->node, &c->sess);
	if (c->fd >= 0) {
		c->reused = 1;
		call_ready(c);
		/* an idle socket takes a request at once: send it now,
		 * not after a poll() that would only say so */
		call_step(p, c, 0, id);
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
			call_connected(p, c);
		return;
	}
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		call_fail(c, -errno);
		return;
	}
	net_tune(c->fd);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		call_connected(p, c);
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
		call_connected(p, c);
		if (c->state == ST_DONE)
			return;
	}
	if (c->state == ST_AUTH) {
		auth_step(c);
		if (c->state != ST_SENDING)
			return;
	}
	if (c->state == ST_SENDING) {
		size_t plen = c->req.payload_len, tlen = c->sess.on ? AUTH_TAG_BYTES : 0;
		size_t total = SDFS_HDR_SIZE + plen + tlen;
		struct iovec iov[3];
		int cnt = 0;

		if (c->done < SDFS_HDR_SIZE)
			iov[cnt++] = (struct iovec){ c->hbuf + c->done, SDFS_HDR_SIZE - c->done };
		if (plen && c->done < SDFS_HDR_SIZE + plen) {
			size_t off = c->done > SDFS_HDR_SIZE ? c->done - SDFS_HDR_SIZE : 0;

			iov[cnt++] = (struct iovec){ (uint8_t *)c->payload + off, plen - off };
		}
		if (tlen) {
			size_t off = c->done > SDFS_HDR_SIZE + plen
				? c->done - SDFS_HDR_SIZE - plen : 0;

			iov[cnt++] = (struct iovec){ c->tag + off, tlen - off };
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
		/* With a session, up to a tag's worth of what follows the
		 * header in the same read: the whole of a reply without a
		 * payload (a write's, a flush's) in one syscall. Nothing
		 * but this reply comes on the connection while it is ours. */
		struct iovec hiov[2] = {
			{ c->hbuf + c->done, SDFS_HDR_SIZE - c->done },
			{ c->rtag, AUTH_TAG_BYTES },
		};

		n = readv(c->fd, hiov, c->sess.on ? 2 : 1);
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			call_error(p, c, n == 0 ? -ECONNRESET : -errno, id);
			return;
		}
		c->done += n;
		if (c->done < SDFS_HDR_SIZE)
			return;
		size_t extra = c->done - SDFS_HDR_SIZE;
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
		if (extra) {    /* read past the header: the payload's first
				   bytes, then the tag's */
			size_t inpl = extra < c->reply.payload_len ? extra : c->reply.payload_len;

			if (inpl)
				memcpy(c->rdst, c->rtag, inpl);
			memmove(c->rtag, c->rtag + inpl, extra - inpl);
			c->done = extra;
		}
		c->state = ST_RECV_PAYLOAD;
	}
	if (c->state == ST_RECV_PAYLOAD) {
		/* the payload and its tag in one read where they are there */
		size_t plen = c->reply.payload_len;
		size_t tlen = c->sess.on ? AUTH_TAG_BYTES : 0;

		if (c->done < plen + tlen) {
			struct iovec iov[2];
			int cnt = 0;

			if (c->done < plen)
				iov[cnt++] = (struct iovec){ c->rdst + c->done, plen - c->done };
			if (tlen) {
				size_t t = c->done > plen ? c->done - plen : 0;

				iov[cnt++] = (struct iovec){ c->rtag + t, tlen - t };
			}
			n = readv(c->fd, iov, cnt);
			if (n <= 0) {
				if (n < 0 && (errno == EAGAIN || errno == EINTR))
					return;
				call_fail(c, n == 0 ? -ECONNRESET : -errno);
				return;
			}
			c->done += n;
			if (c->done < plen + tlen)
				return;
		}
	}
	if (c->sess.on) {
		if (auth_check(&c->sess, c->hbuf, c->rdst, c->reply.payload_len, c->rtag)) {
			log_every(LOG_EVERY_MS, LOG_WARNING, "node %s:%u: a reply failed "
				  "its MAC; dropping the connection", c->node->host,
				  c->node->port);
			call_fail(c, -EPROTO);
			return;
		}
	}
	if (auth_payload_check(&c->sess, &c->reply, c->rdst) != 0) {
		call_fail(c, -EPROTO);
		return;
	}
	pool_give(p, c->node, c->fd, &c->sess);
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
		pfd->events = c->state == ST_CONNECTING || c->state == ST_SENDING ||
			      (c->state == ST_AUTH && !c->auth->recv) ? POLLOUT : POLLIN;
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
	c->auth = NULL;
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

void rpc_call_init(struct rpc_call *c, const struct cmap_node *node, unsigned op,
		   uint64_t oid, uint64_t epoch, const void *payload, uint32_t plen)
{
	memset(c, 0, sizeof(*c));
	c->node = node;
	c->req.opcode = (uint8_t)op;
	c->req.oid = oid;
	c->req.epoch = (uint32_t)epoch;
	c->req.payload_len = plen;
	c->payload = payload;
}

void rpc_calls_free(struct rpc_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(calls[i].rpayload);
		calls[i].rpayload = NULL;
		free(calls[i].auth);
		calls[i].auth = NULL;
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
