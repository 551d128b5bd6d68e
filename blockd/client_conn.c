/*
 * client_conn.c - connections from libclient (and tools) to blockd:
 * reading frames, checking them, and writing replies.
 *
 * Reading, accepting and closing run on the loop thread only. A frame
 * that fails its checks (magic, header or payload checksum, version,
 * lengths) is logged and its connection dropped; other connections are
 * unaffected. Requests on one connection run concurrently and may be
 * answered out of order (req_id matches them up). A connection holds
 * one reference for the loop and one per request in flight, so a reply
 * for a connection closed meanwhile is dropped safely.
 *
 * Replies may be queued from any thread: an I/O worker answers its own
 * request (workq's finish), writing to the socket itself when nothing
 * is queued before it, which saves a wake-up of the loop thread per
 * request. conn.lock orders the writers; a worker never closes a
 * connection (a failed write stays queued with EPOLLOUT armed, and the
 * loop thread finds the error and closes it).
 *
 * What a peer can make us hold is bounded (conf.h): a frame's payload
 * buffer grows as its bytes arrive (at most twice what came), never to
 * what the header announces; a sweep on the loop thread closes a
 * connection whose frame, once begun, is not whole within
 * frame_timeout_ms, one whose queued replies do not move for as long,
 * and one with nothing under way for idle_timeout_ms (libclient's pool
 * replaces a pooled connection found closed, common/rpc.h). Beyond
 * max_conns, new connections are closed as soon as accepted.
 *
 * Authentication (bd->auth, common/auth.h): a new connection must
 * first complete the handshake, frames of the normal framing handled
 * here on the loop thread. A proof for a name the key table lacks waits
 * while the coord worker reads that key from ZooKeeper (keydb_fetch: a
 * key added a moment ago, before the watch's reload); the connection
 * reads nothing meanwhile. Anything else before it gets SDFS_RES_AUTH
 * and the connection closes, with a log line naming the peer's address
 * (and key, when it said one) at most every AUTH_LOG_MS. After it,
 * every frame carries its tag: a frame that fails it closes the
 * connection; replies are tagged under conn.lock, in the order they go
 * on the wire.
 *
 * The cluster listener (bd->cluster_fd, sdfs.conf cluster_addr) serves
 * the same requests, to block daemons only: a key without the daemon
 * cap that completes the handshake there gets a refusal in place of
 * the handshake's last answer, naming the public address, and is
 * closed (logged with its address and key).
 */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include "blockd/blockd.h"
#include "common/auth.h"
#include "common/log.h"
#include "common/objcap.h"
#include "common/net.h"
#include "common/proto.h"

#define CONN_MAX_INFLIGHT 64
#define CONN_PAYLOAD_MIN (16 * 1024)    /* first buffer of a frame's payload */
#define CONN_SWEEP_MS 1000              /* at most; less for short timeouts */
#define AUTH_LOG_MS 3000                /* refusals: a log line at most this often */

struct out_msg {
	struct out_msg *next;
	uint8_t hdr[SDFS_HDR_SIZE];
	uint8_t *payload;
	size_t plen;            /* payload bytes */
	size_t len;             /* header + payload + tag */
	size_t sent;
	uint8_t tag[AUTH_TAG_BYTES];
};

struct conn {
	struct blockd *bd;
	int fd;
	atomic_int refs;
	char peer[64];
	struct conn *next, *prev;       /* all open ones: loop thread only */

	atomic_uint inflight;   /* requests not yet answered */
	pthread_mutex_t lock;   /* the fields below it up to the read state */
	int closed;             /* fd closed: no more writes or epoll changes;
				   set on the loop thread only */
	int put_loop_ref;       /* closed: conn_unlock drops the loop's ref */
	uint32_t events;        /* as last given to epoll */
	struct out_msg *out_head, **out_tail;
	int64_t sent_ms;        /* last write progress, or when queued */
	struct auth_sess sess;  /* tx under lock; rx on the loop thread */

	/* read state: loop thread only */
	uint8_t hdr_buf[SDFS_HDR_SIZE];
	size_t hdr_got;
	struct sdfs_hdr hdr;    /* decoded, valid while payload arrives */
	uint8_t *payload;
	size_t payload_got;
	size_t payload_cap;     /* allocated; grows to hdr.payload_len */
	int64_t frame_ms;       /* when the frame's first byte came */
	int64_t io_ms;          /* last byte read or written */

	/* authentication: loop thread only; ident fixed once authed */
	int authed;             /* handshake done, or none needed */
	int cluster;            /* came to the cluster listener */
	int64_t born_ms;        /* accepted: the handshake is due within
				   frame_timeout_ms */
	struct auth_server as;
	struct auth_ident who;
	int key_wait;           /* a proof waits for its key's read */
	int key_read;           /* that read was made (once a connection) */
};

const struct auth_ident *client_conn_ident(const struct conn *c)
{
	return c->authed && c->bd->auth ? &c->who : NULL;
}

static struct conn *conns;      /* loop thread only */

static void conn_io(int fd, uint32_t events, void *arg);

void client_conn_get(struct conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void client_conn_put(struct conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1) {
		while (c->out_head) {
			struct out_msg *m = c->out_head;

			c->out_head = m->next;
			free(m->payload);
			free(m);
		}
		free(c->payload);
		pthread_mutex_destroy(&c->lock);
		free(c);
	}
}

/* Loop thread, c->lock held; conn_unlock drops the loop's reference. */
static void conn_close_locked(struct conn *c, const char *why)
{
	if (c->closed)
		return;
	if (why)
		log_warn("peer=%s: %s; dropping connection", c->peer, why);
	else
		log_debug("peer=%s: closed", c->peer);
	c->closed = 1;
	c->put_loop_ref = 1;
	c->bd->conns--;
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	loop_del_fd(c->bd->loop, c->fd);
	close(c->fd);
}

/* Unlock; if the connection was closed meanwhile, drop the loop's
 * reference (@c may be gone afterwards unless the caller holds one). */
static void conn_unlock(struct conn *c)
{
	int put = c->put_loop_ref;

	c->put_loop_ref = 0;
	pthread_mutex_unlock(&c->lock);
	if (put)
		client_conn_put(c);
}

/* Loop thread. */
static void conn_close(struct conn *c, const char *why)
{
	pthread_mutex_lock(&c->lock);
	conn_close_locked(c, why);
	conn_unlock(c);
}

/* c->lock held. */
static void conn_set_events(struct conn *c)
{
	uint32_t ev = 0;

	if (atomic_load(&c->inflight) < CONN_MAX_INFLIGHT)
		ev |= EPOLLIN;
	if (c->out_head)
		ev |= EPOLLOUT;
	if (ev != c->events && !c->closed) {
		c->events = ev;
		loop_mod_fd(c->bd->loop, c->fd, ev);
	}
}

/* Write what we can, c->lock held. A write error closes the connection
 * on the loop thread (@on_loop; returns -1); elsewhere the message stays
 * queued and EPOLLOUT brings the loop thread to find the error. */
static int conn_flush(struct conn *c, bool on_loop)
{
	while (c->out_head && !c->closed) {
		struct out_msg *m = c->out_head;
		struct iovec iov[3];
		int iovcnt = 0;
		size_t hdr_left = m->sent < SDFS_HDR_SIZE ? SDFS_HDR_SIZE - m->sent : 0;
		size_t pend = SDFS_HDR_SIZE + m->plen;

		if (hdr_left)
			iov[iovcnt++] = (struct iovec){ m->hdr + m->sent, hdr_left };
		if (m->plen && m->sent < pend) {
			size_t poff = m->sent > SDFS_HDR_SIZE ? m->sent - SDFS_HDR_SIZE : 0;

			iov[iovcnt++] = (struct iovec){ m->payload + poff, m->plen - poff };
		}
		if (m->len > pend) {
			size_t toff = m->sent > pend ? m->sent - pend : 0;

			iov[iovcnt++] = (struct iovec){ m->tag + toff, m->len - pend - toff };
		}
		ssize_t n = writev(c->fd, iov, iovcnt);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR || !on_loop)
				break;
			conn_close_locked(c, strerror(errno));
			return -1;
		}
		m->sent += n;
		c->sent_ms = c->io_ms = net_now_ms();
		if (m->sent < m->len)
			break;
		c->out_head = m->next;
		if (!c->out_head)
			c->out_tail = &c->out_head;
		free(m->payload);
		free(m);
	}
	conn_set_events(c);
	return 0;
}

void client_conn_reply(struct conn *c, struct sdfs_hdr *h, uint8_t *payload)
{
	struct blockd *bd = c->bd;
	bool on_loop = loop_is_loop_thread(bd->loop);
	struct out_msg *m = NULL;

	if (h->result != SDFS_RES_OK)
		atomic_fetch_add(&bd->errors, 1);
	h->epoch = (uint32_t)member_epoch(bd);
	m = malloc(sizeof(*m));
	if (m) {
		/* sess.on does not change once requests are served */
		auth_hdr_encode(&c->sess, h, payload, m->hdr);
		m->next = NULL;
		m->payload = payload;
		m->plen = h->payload_len;
		m->len = SDFS_HDR_SIZE + h->payload_len;
		m->sent = 0;
	}
	pthread_mutex_lock(&c->lock);
	if (atomic_load(&c->inflight))
		atomic_fetch_sub(&c->inflight, 1);
	if (c->closed || !m) {
		/* No memory for the reply: the peer's call times out and
		 * retries on a new connection. */
		if (!c->closed)
			log_warn("peer=%s: out of memory for a reply", c->peer);
		free(m);
		free(payload);
		conn_set_events(c);
		conn_unlock(c);
		return;
	}
	if (c->sess.on) {
		/* here, under the lock: tags follow the order on the wire */
		auth_tag(&c->sess, m->hdr, payload, m->plen, m->tag);
		m->len += AUTH_TAG_BYTES;
	}
	*c->out_tail = m;
	c->out_tail = &m->next;
	if (c->out_head == m) {
		c->sent_ms = net_now_ms();      /* the stall clock starts now */
		conn_flush(c, on_loop);
	}
	else
		conn_set_events(c);
	conn_unlock(c);
}

/* Write a small frame now (a handshake answer, nothing else queued).
 * 0, or -1 when it did not all go (the caller closes). */
static int conn_write_now(struct conn *c, const uint8_t *buf, size_t len)
{
	ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n == (ssize_t)len)
		return 0;
	log_debug("peer=%s: handshake answer: %s", c->peer, n < 0 ? strerror(errno)
		  : "short write");
	return -1;
}

/* A handshake frame before authentication: answer it; a refusal closes. */
static void conn_auth_frame(struct conn *c, const struct sdfs_hdr *h,
			    const uint8_t *payload)
{
	uint8_t out[AUTH_FRAME_MAX];
	char why[256];
	size_t len = 0;
	int ret;

	why[0] = '\0';
	ret = auth_server_step(&c->as, h, payload, out, &len, &c->sess, &c->who,
			       why, sizeof(why));
	if (ret < 0) {
		log_every(AUTH_LOG_MS, LOG_WARNING, "peer=%s: authentication refused: "
			  "%s; closing", c->peer, why);
		conn_write_now(c, out, len);
		conn_close(c, NULL);
		return;
	}
	if (ret == 1 && c->cluster && !(c->who.caps.flags & AUTH_CAP_DAEMON)) {
		char reason[AUTH_REASON_MAX + 1];

		snprintf(reason, sizeof(reason), "key %s is not a daemon key: the "
			 "cluster address takes block daemons only; clients use %s:%u",
			 c->who.name, c->bd->host, c->bd->port);
		log_every(AUTH_LOG_MS, LOG_WARNING, "peer=%s key=%s: refused on the "
			  "cluster address: not a daemon key; closing", c->peer,
			  c->who.name);
		len = auth_refusal(h, reason, out);
		conn_write_now(c, out, len);
		conn_close(c, NULL);
		return;
	}
	if (conn_write_now(c, out, len)) {
		conn_close(c, NULL);
		return;
	}
	if (ret == 1) {
		c->authed = 1;
		log_debug("peer=%s: authenticated as %s", c->peer, c->who.name);
	}
}

/* A proof waiting for its key's read (key_read_later). */
struct key_job {
	struct work work;
	struct conn *c;
	struct sdfs_hdr h;
	uint8_t *payload;
};

static void key_read_fn(struct work *w)
{
	struct key_job *j = (struct key_job *)w;
	struct keydb_ent e;

	keydb_fetch(j->c->bd->keydb, j->c->as.name, &e);
	sodium_memzero(&e, sizeof(e));
}

static void key_read_done(struct work *w)
{
	struct key_job *j = (struct key_job *)w;
	struct conn *c = j->c;

	c->key_wait = 0;
	if (!c->closed)
		conn_auth_frame(c, &j->h, j->payload);
	free(j->payload);
	free(j);
	client_conn_put(c);
}

/* The proof @h (@payload) of a name the table lacks: read the key on
 * the coord worker first, then answer (1: taken, @payload with it).
 * Once a connection; 0: answer now. */
static int key_read_later(struct conn *c, const struct sdfs_hdr *h, uint8_t *payload)
{
	struct keydb_ent e;
	struct key_job *j;
	int known;

	if (h->opcode != SDFS_OP_AUTH_PROOF || c->as.state != AUTH_S_PROOF ||
	    c->key_read || !c->bd->keydb)
		return 0;
	known = keydb_get(c->bd->keydb, c->as.name, &e) == 0;
	sodium_memzero(&e, sizeof(e));
	if (known || !(j = calloc(1, sizeof(*j))))
		return 0;
	c->key_read = c->key_wait = 1;
	j->c = c;
	j->h = *h;
	j->payload = payload;
	j->work.fn = key_read_fn;
	j->work.done = key_read_done;
	client_conn_get(c);
	workq_push(c->bd->coord_q, &j->work);
	return 1;
}

/* A frame is complete: check its tag and payload and hand it on. */
static void conn_frame(struct conn *c)
{
	struct sdfs_hdr h = c->hdr;
	uint8_t *payload = c->payload;

	c->payload = NULL;
	c->hdr_got = 0;
	c->payload_got = 0;
	c->payload_cap = 0;
	if (c->sess.on && auth_check(&c->sess, c->hdr_buf, payload, h.payload_len,
				     payload + h.payload_len)) {
		free(payload);
		log_every(AUTH_LOG_MS, LOG_WARNING, "peer=%s key=%s: a frame failed its "
			  "MAC (altered, replayed or injected); dropping the connection",
			  c->peer, c->who.name);
		conn_close(c, NULL);
		return;
	}
	if (auth_payload_check(&c->sess, &h, payload) != 0) {
		free(payload);
		conn_close(c, "payload checksum mismatch");
		return;
	}
	if (c->key_wait) {
		free(payload);
		conn_close(c, "a frame before the handshake's answer");
		return;
	}
	if (!c->authed) {
		if (key_read_later(c, &h, payload))
			return;
		conn_auth_frame(c, &h, payload);
		free(payload);
		return;
	}
	if (h.flags & SDFS_F_REPLY) {
		free(payload);
		conn_close(c, "unexpected reply frame");
		return;
	}
	c->bd->requests++;
	atomic_fetch_add(&c->inflight, 1);
	ops_dispatch(c->bd, c, &h, payload);
}

/* Bytes that follow the header: the payload, and its tag in a session. */
static size_t conn_frame_rest(const struct conn *c)
{
	return c->hdr.payload_len + (c->sess.on ? AUTH_TAG_BYTES : 0);
}

static int conn_read_header(struct conn *c)
{
	/* a whole object's write may carry a cap in front (objcap.h), and
	 * so may a STRIP_PUT of one strip as long as the object (k = 1)
	 * after its sdfs_strip */
	uint32_t max = c->bd->cfg.obj_size + SDFS_STRIP_SIZE + OBJCAP_WIRE_SIZE;
	int ret;

	if (max < 8 * SDFS_MAX_LIST)
		max = 8 * SDFS_MAX_LIST;
	ret = proto_hdr_decode(c->hdr_buf, max, &c->hdr);
	if (!ret && !c->authed && !auth_is_handshake(&c->hdr)) {
		/* refused unread: no payload of a stranger is held */
		conn_auth_frame(c, &c->hdr, NULL);
		return -1;
	}
	if (ret == -EPROTONOSUPPORT) {
		struct sdfs_hdr r;
		uint8_t wire[SDFS_HDR_SIZE];

		/* Tell the peer why, then drop it: what follows cannot be parsed. */
		proto_reply_init(&r, &c->hdr, SDFS_RES_BAD_VERSION);
		proto_hdr_encode(&r, NULL, wire);
		if (write(c->fd, wire, sizeof(wire)) < 0)
			log_debug("peer=%s: write: %s", c->peer, strerror(errno));
		char why[96];

		snprintf(why, sizeof(why), "speaks protocol %u.x, not %u.x",
			 c->hdr.major, SDFS_PROTO_MAJOR);
		conn_close(c, why);
		return -1;
	}
	if (ret) {
		char why[96];

		snprintf(why, sizeof(why), "bad header (%s)",
			 ret == -EMSGSIZE ? "payload too large" : "magic, checksum or flags");
		conn_close(c, why);
		return -1;
	}
	return 0;
}

/* Room for more of the payload: the buffer doubles as bytes arrive, up
 * to what the header announced (a stalled frame holds what came). */
static int conn_payload_room(struct conn *c)
{
	size_t want = conn_frame_rest(c), cap = c->payload_cap;
	uint8_t *p;

	if (c->payload_got < cap)
		return 0;
	cap = cap ? cap * 2 : CONN_PAYLOAD_MIN;
	if (cap > want)
		cap = want;
	p = realloc(c->payload, cap);
	if (!p) {
		conn_close(c, "out of memory");
		return -1;
	}
	c->payload = p;
	c->payload_cap = cap;
	return 0;
}

static void conn_read(struct conn *c)
{
	while (!c->closed && atomic_load(&c->inflight) < CONN_MAX_INFLIGHT) {
		ssize_t n;

		if (c->hdr_got < SDFS_HDR_SIZE) {
			n = read(c->fd, c->hdr_buf + c->hdr_got, SDFS_HDR_SIZE - c->hdr_got);
		} else {
			if (conn_payload_room(c))
				return;
			n = read(c->fd, c->payload + c->payload_got,
				 c->payload_cap - c->payload_got);
		}
		if (n == 0) {
			if (c->hdr_got)
				conn_close(c, "truncated frame");
			else
				conn_close(c, NULL);
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			/* a reset is the peer's way to close, not news */
			conn_close(c, errno == ECONNRESET ? NULL : strerror(errno));
			return;
		}
		c->io_ms = net_now_ms();
		if (c->hdr_got < SDFS_HDR_SIZE) {
			if (c->hdr_got == 0)
				c->frame_ms = c->io_ms;
			c->hdr_got += n;
			if (c->hdr_got < SDFS_HDR_SIZE)
				continue;
			if (conn_read_header(c))
				return;
		} else {
			c->payload_got += n;
		}
		if (c->payload_got == conn_frame_rest(c))
			conn_frame(c);
	}
}

static void conn_io(int fd, uint32_t events, void *arg)
{
	struct conn *c = arg;
	(void)fd;

	client_conn_get(c);
	if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN))
		conn_close(c, NULL);
	if (!c->closed && (events & EPOLLOUT)) {
		pthread_mutex_lock(&c->lock);
		conn_flush(c, true);
		conn_unlock(c);
	}
	if (!c->closed && (events & EPOLLIN))
		conn_read(c);
	if (!c->closed) {
		pthread_mutex_lock(&c->lock);
		conn_set_events(c);
		conn_unlock(c);
	}
	client_conn_put(c);
}

static void on_accept(int lfd, uint32_t events, void *arg)
{
	struct blockd *bd = arg;
	(void)events;

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_every(LOG_EVERY_MS, LOG_WARNING, "accept: %s",
					  strerror(errno));
			return;
		}
		if (bd->conns >= (unsigned)bd->conf.max_conns) {
			log_every(LOG_EVERY_MS, LOG_WARNING, "%u connections open "
				  "(max_conns): refusing new ones", bd->conns);
			close(fd);
			continue;
		}
		struct conn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->bd = bd;
		c->fd = fd;
		atomic_init(&c->refs, 1);
		pthread_mutex_init(&c->lock, NULL);
		c->out_tail = &c->out_head;
		c->events = EPOLLIN;
		c->authed = !bd->auth;
		c->cluster = lfd == bd->cluster_fd;
		auth_server_init(&c->as, bd->keydb);
		c->born_ms = net_now_ms();
		net_tune(fd);
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
			unsigned char *a = (unsigned char *)&sin->sin_addr;

			snprintf(c->peer, sizeof(c->peer), "%u.%u.%u.%u:%u", a[0], a[1],
				 a[2], a[3], ntohs(sin->sin_port));
		} else {
			snprintf(c->peer, sizeof(c->peer), "fd%d", fd);
		}
		if (loop_add_fd(bd->loop, fd, EPOLLIN, conn_io, c) < 0) {
			close(fd);
			pthread_mutex_destroy(&c->lock);
			free(c);
			continue;
		}
		bd->conns++;
		c->io_ms = c->sent_ms = net_now_ms();
		c->next = conns;
		if (conns)
			conns->prev = c;
		conns = c;
		log_debug("peer=%s: connected", c->peer);
	}
}

/* Why @c should be closed now, or NULL. Loop thread, c->lock held. */
static const char *conn_overdue(struct blockd *bd, struct conn *c, int64_t now,
				char *why, size_t len)
{
	int frame_ms = bd->conf.frame_timeout_ms;
	unsigned inflight = atomic_load(&c->inflight);

	if (c->hdr_got) {
		/* Not reading (too many in flight) is our doing, not the
		 * peer's: the clock starts again when reading does. */
		if (inflight >= CONN_MAX_INFLIGHT)
			c->frame_ms = now;
		else if (now - c->frame_ms > frame_ms) {
			snprintf(why, len, "frame not whole within %d ms (%zu of %zu "
				 "bytes)", frame_ms, c->hdr_got < SDFS_HDR_SIZE ?
				 c->hdr_got : SDFS_HDR_SIZE + c->payload_got,
				 SDFS_HDR_SIZE + (c->hdr_got < SDFS_HDR_SIZE ? 0 :
				 conn_frame_rest(c)));
			return why;
		}
	}
	if (!c->authed && now - c->born_ms > frame_ms) {
		snprintf(why, len, "no authentication within %d ms", frame_ms);
		return why;
	}
	if (c->sess.on && !auth_still_valid(bd->keydb, c->who.name, c->as.key_used)) {
		snprintf(why, len, "key %s was removed or rotated past its grace",
			 c->who.name);
		return why;
	}
	if (c->out_head && now - c->sent_ms > frame_ms) {
		snprintf(why, len, "replies unread for %d ms", frame_ms);
		return why;
	}
	if (!c->hdr_got && !inflight && !c->out_head &&
	    now - c->io_ms > bd->conf.idle_timeout_ms) {
		uint8_t b;

		/* a request that came just now is not idleness */
		if (recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
			return NULL;
		return "";      /* idle: a debug line, not a warning */
	}
	return NULL;
}

static void conn_sweep(void *arg)
{
	struct blockd *bd = arg;
	int64_t now = net_now_ms();
	struct conn *c, *next;
	char buf[128];

	for (c = conns; c; c = next) {
		const char *why;

		next = c->next;
		pthread_mutex_lock(&c->lock);
		why = conn_overdue(bd, c, now, buf, sizeof(buf));
		if (why && *why)
			log_every(LOG_EVERY_MS, LOG_WARNING, "peer=%s: %s; dropping "
				  "connection", c->peer, why);
		else if (why)
			log_debug("peer=%s: idle for %d ms; closing", c->peer,
				  bd->conf.idle_timeout_ms);
		if (why)
			conn_close_locked(c, NULL);
		conn_unlock(c);
	}
}

int client_conn_start(struct blockd *bd)
{
	int period = bd->conf.frame_timeout_ms / 4, ret;

	if (period > CONN_SWEEP_MS)
		period = CONN_SWEEP_MS;
	if (period < 50)
		period = 50;
	ret = loop_add_timer(bd->loop, period, conn_sweep, bd);
	if (ret < 0)
		return ret;
	ret = loop_add_fd(bd->loop, bd->listen_fd, EPOLLIN, on_accept, bd);
	if (ret >= 0 && bd->cluster_fd >= 0)
		ret = loop_add_fd(bd->loop, bd->cluster_fd, EPOLLIN, on_accept, bd);
	return ret;
}
