/*
 * server.c - the mds's connections: a thread per client connection,
 * reading one request at a time and answering it (mds.h).
 *
 * Any malformed frame (bad magic or checksum, a payload over the cap)
 * closes the connection; a well-framed request with a bad body gets an
 * error reply and the connection stays. Nothing a client sends can
 * change state unless it decodes exactly.
 *
 * What a peer can make us hold is bounded (conf.h): a request's buffer
 * grows as its bytes arrive; a frame whose first byte came must be
 * whole within frame_timeout_ms, and a reply must be taken within as
 * long (a deadline on each send); a connection that sends no request for
 * idle_timeout_ms is closed (libclient opens another, nsclient.c), an
 * invalidation channel excepted; beyond max_conns, new connections are
 * closed as soon as accepted.
 *
 * Authentication (m->auth, common/auth.h): a connection's first frames
 * are the handshake (auth_server_run); a peer that fails it, or sends
 * anything else first, gets SDFS_RES_AUTH and is closed, with a log
 * line naming its address (and key) at most every AUTH_LOG_MS. Then
 * every frame carries its tag; one that fails it closes the
 * connection. On an invalidation channel the tx direction passes to
 * lease.c with the fd (its writers hold the subscription's lock).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sodium.h>

#include "common/auth.h"
#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"
#include "mds/caller.h"
#include "mds/kcaps.h"
#include "mds/lease.h"
#include "mds/mds.h"
#include "mds/ns.h"

#define REQ_MAX (SDFS_NS_REQ_SIZE + 2 * SDFS_NAME_MAX + SDFS_XATTR_SIZE_MAX + 4096)
static_assert(SDFS_NS_REQ_SIZE + SDFS_NS_CHUNKS_HDR + 8 * SDFS_NS_CHUNKS_MAX <= REQ_MAX,
	      "a full chunk report fits a request");

#define BUF_MIN 4096                   /* a request buffer's first size */
#define AUTH_LOG_MS 3000                /* refusals: a log line at most this often */

struct conn {
	struct mds *m;
	int fd;
	uint8_t *buf;                   /* the request; grows to REQ_MAX */
	size_t cap;
	char peer[64];                  /* ip:port */
	struct auth_sess sess;          /* on: frames carry tags */
	struct auth_ident who;          /* the peer's key (m->auth) */
	uint8_t key_used[AUTH_KEY_BYTES];       /* ... as it proved it */
};

/* Wait until @fd is readable, at most until @deadline (monotonic ms;
 * 0: for ever). 0 or -ETIMEDOUT / -errno. */
static int wait_readable(int fd, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline ? deadline - net_now_ms() : -1;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r;

		if (deadline && left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/*
 * A frame's header: the first byte may take @idle_ms (0: for ever; then
 * -ETIME when it did not come), the rest, and then the payload, are due
 * frame_timeout_ms after it. *@deadline gets that instant.
 */
static int read_hdr(struct conn *c, uint8_t *hb, int idle_ms, int64_t *deadline)
{
	int ret = wait_readable(c->fd, idle_ms ? net_now_ms() + idle_ms : 0);

	if (ret)
		return ret == -ETIMEDOUT ? -ETIME : ret;
	*deadline = net_now_ms() + c->m->conf.frame_timeout_ms;
	return net_read_full(c->fd, hb, SDFS_HDR_SIZE, *deadline);
}

/* The payload into c->buf, grown as bytes arrive (never to what the
 * header announced before they do): the buffer is filled, then doubled. */
static int read_payload(struct conn *c, size_t len, int64_t deadline)
{
	size_t done = 0;

	while (done < len) {
		if (done == c->cap) {
			size_t cap = c->cap * 2 < len ? c->cap * 2 : len;
			uint8_t *p = realloc(c->buf, cap);

			if (!p)
				return -ENOMEM;
			c->buf = p;
			c->cap = cap;
		}
		size_t end = c->cap < len ? c->cap : len;
		int ret = net_read_full(c->fd, c->buf + done, end - done, deadline);

		if (ret)
			return ret;
		done = end;
	}
	return 0;
}

/* A frame's tag (after its payload), checked: 0, or < 0 to close. */
static int read_tag(struct conn *c, const uint8_t *hb, const uint8_t *payload,
		    size_t len, int64_t deadline)
{
	uint8_t tag[AUTH_TAG_BYTES];
	int ret;

	if (!c->sess.on)
		return 0;
	ret = net_read_full(c->fd, tag, sizeof(tag), deadline);
	if (ret)
		return ret;
	if (auth_check(&c->sess, hb, payload, len, tag)) {
		log_every(AUTH_LOG_MS, LOG_WARNING, "peer=%s key=%s: a frame failed its "
			  "MAC (altered, replayed or injected); closing the connection",
			  c->peer, c->who.name);
		return -EBADMSG;
	}
	return 0;
}

/* Say why a frame timed out, at most every 10 s for all connections. */
static int frame_late(struct conn *c, int ret)
{
	if (ret == -ETIMEDOUT)
		log_every(LOG_EVERY_MS, LOG_WARNING, "connection: frame not whole "
			  "within %d ms; closing it", c->m->conf.frame_timeout_ms);
	return ret;
}

static int is_ns_op(unsigned op)
{
	return (op >= SDFS_OP_NS_LOOKUP && op <= SDFS_OP_NS_SUBSCRIBE) ||
	       op == SDFS_OP_NS_OPEN || op == SDFS_OP_NS_OBJCAP ||
	       op == SDFS_OP_NS_SYNC;
}

static int send_reply(struct conn *c, const struct sdfs_hdr *req, int err,
		      const struct ns_reply *rep)
{
	struct sdfs_hdr h;
	uint8_t hb[SDFS_HDR_SIZE];
	enum sdfs_res res = SDFS_RES_OK;

	if (err == -ESHUTDOWN)
		res = SDFS_RES_SHUTDOWN;
	else if (err == -EPROTO)
		res = SDFS_RES_BAD_MSG;
	else if (err == -EOPNOTSUPP && !is_ns_op(req->opcode))
		res = SDFS_RES_UNKNOWN_OP;
	else if (err)
		res = SDFS_RES_ERRNO;
	proto_reply_init(&h, req, res);
	if (res == SDFS_RES_ERRNO)
		h.length = (uint32_t)-err;
	else if (rep)
		h.length = rep->hdr_length;
	if (!err && rep && rep->more)
		h.flags |= SDFS_F_MORE;
	h.payload_len = !err && rep ? rep->len : 0;
	auth_hdr_encode(&c->sess, &h, h.payload_len ? rep->data : NULL, hb);
	/* The last check before acknowledging: a deposed mds says nothing. */
	if (res != SDFS_RES_SHUTDOWN && !mds_may_reply(c->m))
		return -ESHUTDOWN;
	int64_t deadline = net_now_ms() + c->m->conf.frame_timeout_ms;

	if (c->sess.on)
		return auth_send_raw(c->fd, &c->sess, hb, h.payload_len ? rep->data : NULL,
				     h.payload_len, deadline);
	/* one send for header and payload (small replies are one packet) */
	struct iovec iov[2] = { { hb, sizeof(hb) }, { h.payload_len ? rep->data : NULL,
						      h.payload_len } };
	return net_writev_full(c->fd, iov, h.payload_len ? 2 : 1, deadline);
}

/*
 * NS_SUBSCRIBE (lease.h): answer, then the connection is the client's
 * invalidation channel: the mds sends NS_NOTIFY on it from the threads
 * of the operations that need it, and this thread reads the answers
 * until the connection ends. Returns < 0 (close it).
 */
static int serve_subscription(struct conn *c, const struct sdfs_hdr *h,
			      const struct sdfs_ns_req *req, const struct ns_caller *who)
{
	struct leases *l = ns_leases(c->m->ns);
	struct lease_sub *sub;
	uint8_t hb[SDFS_HDR_SIZE];
	struct sdfs_hdr a;
	int ret;

	if (req->client_id == 0 || req->arg > UINT32_MAX)
		return send_reply(c, h, -EINVAL, NULL);
	/* durably, before the first lease: the next active must know */
	ret = ns_note_cache_ms(c->m->ns, (uint32_t)req->arg);
	if (ret)
		return send_reply(c, h, ret == -EPERM ? -ESHUTDOWN : ret, NULL);
	/* The answer goes first: nothing may be sent before it. */
	ret = send_reply(c, h, 0, NULL);
	if (ret)
		return ret;
	sub = lease_subscribe(l, req->client_id, (uint32_t)req->arg, c->fd,
			      c->sess.on ? &c->sess : NULL);
	if (!sub)
		return -ENOMEM;
	lease_sub_root(sub, kcaps_root(c->m->ns, who));
	for (;;) {
		int64_t dl;

		/* quiet by nature: no idle timeout, only the frame's */
		ret = frame_late(c, read_hdr(c, hb, 0, &dl));
		if (ret)
			break;
		ret = proto_hdr_decode(hb, 0, &a);
		if (!ret && (!(a.flags & SDFS_F_REPLY) || a.opcode != SDFS_OP_NS_NOTIFY))
			ret = -EPROTO;
		if (!ret)
			ret = read_tag(c, hb, NULL, 0, dl);     /* rx: ours alone */
		if (ret) {
			log_warn("client=%016" PRIx64 ": bad message on its invalidation "
				 "channel; closing it", req->client_id);
			break;
		}
		lease_acked(sub, c->fd, a.req_id);
	}
	lease_unsubscribe(sub, c->fd);
	return ret ? ret : -ECONNRESET;
}

/* One request; returns < 0 to close the connection. */
static int serve_one(struct conn *c)
{
	struct mds *m = c->m;
	uint8_t hb[SDFS_HDR_SIZE], *payload_buf;
	struct sdfs_hdr h;
	struct sdfs_ns_req req;
	struct ns_reply rep = { 0 };
	int64_t deadline;
	int ret;

	ret = frame_late(c, read_hdr(c, hb, m->conf.idle_timeout_ms, &deadline));
	if (ret == -ETIME)
		log_debug("connection: idle for %d ms; closing it",
			  m->conf.idle_timeout_ms);
	if (ret)
		return ret;
	ret = proto_hdr_decode(hb, REQ_MAX, &h);
	if (ret == -EPROTONOSUPPORT) {
		struct sdfs_hdr r;

		proto_reply_init(&r, &h, SDFS_RES_BAD_VERSION);
		proto_hdr_encode(&r, NULL, hb);
		net_write_full(c->fd, hb, sizeof(hb), net_now_ms() + m->conf.frame_timeout_ms);
		return -EPROTO;
	}
	if (ret) {
		log_debug("connection: bad header (%s); closing", strerror(-ret));
		return ret;
	}
	if (h.flags & SDFS_F_REPLY)
		return -EPROTO;
	ret = frame_late(c, read_payload(c, h.payload_len, deadline));
	if (!ret)
		ret = frame_late(c, read_tag(c, hb, c->buf, h.payload_len, deadline));
	if (ret)
		return ret;
	if (c->sess.on && !auth_still_valid(m->keydb, c->who.name, c->key_used)) {
		log_warn("peer=%s key=%s: the key was removed or rotated past its "
			 "grace; closing the connection", c->peer, c->who.name);
		return -EACCES;
	}
	payload_buf = c->buf;
	if (auth_payload_check(&c->sess, &h, payload_buf)) {
		log_debug("connection: payload checksum mismatch; closing");
		return -EPROTO;
	}
	if (!is_ns_op(h.opcode))
		return send_reply(c, &h, -EOPNOTSUPP, NULL);
	if (!mds_may_reply(m) || !m->ns)
		return send_reply(c, &h, -ESHUTDOWN, NULL);
	if (proto_ns_req_decode(payload_buf, h.payload_len, &req))
		return send_reply(c, &h, -EPROTO, NULL);
	struct ns_caller who;

	caller_make(m->auth ? &c->who : NULL, req.cuid, req.cgid, req.groups, req.ngroups,
		    &who);
	if (h.opcode == SDFS_OP_NS_SUBSCRIBE)
		return serve_subscription(c, &h, &req, &who);
	const char *name = (const char *)payload_buf + SDFS_NS_REQ_SIZE;
	const char *name2 = name + req.name_len;
	const uint8_t *data = (const uint8_t *)name2 + req.name2_len;

	ret = ns_exec(m->ns, &who, h.opcode, &req, name, name2, data, &rep);
	if (ns_failed(m->ns)) {
		/* fenced or I/O: this mds is done; main.c steps down */
		atomic_store(&m->serving, 0);
		free(rep.data);
		return -ESHUTDOWN;
	}
	ret = send_reply(c, &h, ret, &rep);
	free(rep.data);
	return ret;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	int ms = c->m->conf.frame_timeout_ms;
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 };

	net_set_nonblock(c->fd, 0);
	net_tune(c->fd);
	/* a reply (or an invalidation, lease.c) the peer does not take */
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	c->cap = BUF_MIN;
	c->buf = malloc(c->cap);
	if (c->buf && c->m->auth) {
		char why[256] = "";
		int ret = auth_server_run(c->fd, c->m->keydb, ms, &c->sess, &c->who,
					  c->key_used, why, sizeof(why));

		if (ret) {
			log_every(AUTH_LOG_MS, LOG_WARNING, "peer=%s: authentication "
				  "refused: %s; closing", c->peer, why);
			goto out;
		}
		log_debug("peer=%s: authenticated as %s", c->peer, c->who.name);
	}
	while (c->buf && serve_one(c) == 0)
		;
out:
	sodium_memzero(&c->sess, sizeof(c->sess));
	free(c->buf);
	close(c->fd);
	atomic_fetch_sub(&c->m->conns, 1);
	free(c);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct mds *m = arg;

	net_set_nonblock(m->listen_fd, 0);
	for (;;) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(m->listen_fd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC);
		struct conn *c;
		pthread_t t;
		pthread_attr_t attr;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
			    errno == ENFILE || errno == ENOMEM) {
				if (errno != EINTR && errno != ECONNABORTED)
					usleep(100 * 1000);
				continue;
			}
			log_err("accept: %s", strerror(errno));
			return NULL;
		}
		if (atomic_load(&m->conns) >= (uint_fast64_t)m->conf.max_conns) {
			log_every(LOG_EVERY_MS, LOG_WARNING, "%" PRIuFAST64 " connections "
				  "open (max_conns): refusing new ones",
				  (uint_fast64_t)atomic_load(&m->conns));
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->m = m;
		c->fd = fd;
		if (sa.sin_family == AF_INET) {
			char ip[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
			snprintf(c->peer, sizeof(c->peer), "%s:%u", ip, ntohs(sa.sin_port));
		} else {
			snprintf(c->peer, sizeof(c->peer), "fd%d", fd);
		}
		atomic_fetch_add(&m->conns, 1);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 << 10);
		if (pthread_create(&t, &attr, conn_main, c)) {
			atomic_fetch_sub(&m->conns, 1);
			close(fd);
			free(c);
		}
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

int server_start(struct mds *m)
{
	pthread_t t;
	int ret = pthread_create(&t, NULL, accept_main, m);

	if (ret)
		return -ret;
	pthread_detach(t);
	return 0;
}
