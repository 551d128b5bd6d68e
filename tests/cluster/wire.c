/*
 * wire.c - see wire.h.
 */
#include "tests/cluster/wire.h"

#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/conf.h"
#include "common/csum.h"
#include "common/keys.h"
#include "common/net.h"
#include "common/proto.h"

int wire_connect(const char *addr)
{
	char host[64];
	uint16_t port;
	int fd;

	cr_assert_eq(net_parse_addr(addr, host, sizeof(host), &port), 0, "bad addr %s", addr);
	fd = net_connect(host, port, 5000);
	cr_assert(fd >= 0, "connect %s: %s", addr, strerror(-fd));
	cr_assert_eq(net_set_nonblock(fd, 0), 0);
	return fd;
}

void wire_local_addr(int fd, char *buf, size_t len)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char ip[INET_ADDRSTRLEN];

	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(sa.sin_port));
}

int wire_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int wire_send_req(int fd, const struct sdfs_hdr *h, const void *payload)
{
	uint8_t wire[SDFS_HDR_SIZE];
	int ret;

	proto_hdr_encode(h, payload, wire);
	ret = wire_send(fd, wire, sizeof(wire));
	if (!ret && h->payload_len)
		ret = wire_send(fd, payload, h->payload_len);
	return ret;
}

void wire_fix_hdr_csum(uint8_t wire[SDFS_HDR_SIZE])
{
	uint32_t c = htole32((uint32_t)csum64(wire, 60));

	memcpy(wire + 60, &c, 4);
}

/* Read exactly @len bytes by the deadline; 0, -ECONNRESET on EOF, or -errno. */
static int recv_full(int fd, void *buf, size_t len, int64_t deadline)
{
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - net_now_ms();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		if (!pfd.revents)
			continue;
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int wire_recv_hdr(int fd, struct sdfs_hdr *h, int timeout_ms)
{
	uint8_t wire[SDFS_HDR_SIZE];
	int ret = recv_full(fd, wire, sizeof(wire), net_now_ms() + timeout_ms);

	if (ret)
		return ret;
	return proto_hdr_decode(wire, SDFS_MAX_PAYLOAD, h);
}

int wire_skip(int fd, size_t len, int timeout_ms)
{
	int64_t deadline = net_now_ms() + timeout_ms;
	char buf[4096];

	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);
		int ret = recv_full(fd, buf, n, deadline);

		if (ret)
			return ret;
		len -= n;
	}
	return 0;
}

int wire_recv(int fd, void *buf, size_t len, int timeout_ms)
{
	return recv_full(fd, buf, len, net_now_ms() + timeout_ms);
}

int wire_wait_closed(int fd, int timeout_ms)
{
	int64_t deadline = net_now_ms() + timeout_ms;
	char buf[4096];

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - net_now_ms();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		if (!pfd.revents)
			continue;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 0;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
	}
}

int wire_auth(int fd, const char *name, const uint8_t key[AUTH_KEY_BYTES],
	      struct auth_sess *s, char *err, size_t errlen)
{
	struct auth_cred cred = { 0 };

	snprintf(cred.name, sizeof(cred.name), "%s", name);
	memcpy(cred.key, key, AUTH_KEY_BYTES);
	memset(s, 0, sizeof(*s));
	return auth_client_run(fd, &cred, 5000, s, NULL, 0, err, errlen);
}

size_t wire_frame_auth(struct auth_sess *s, const struct sdfs_hdr *h,
		       const void *payload, uint8_t *out)
{
	auth_hdr_encode(s, h, payload, out);
	if (h->payload_len)
		memcpy(out + SDFS_HDR_SIZE, payload, h->payload_len);
	auth_tag(s, out, payload, h->payload_len, out + SDFS_HDR_SIZE + h->payload_len);
	return SDFS_HDR_SIZE + h->payload_len + AUTH_TAG_BYTES;
}

int wire_send_req_auth(int fd, struct auth_sess *s, const struct sdfs_hdr *h,
		       const void *payload)
{
	uint8_t *buf = malloc(SDFS_HDR_SIZE + h->payload_len + AUTH_TAG_BYTES);
	int ret;

	cr_assert_not_null(buf);
	ret = wire_send(fd, buf, wire_frame_auth(s, h, payload, buf));
	free(buf);
	return ret;
}

int wire_recv_reply_auth(int fd, struct auth_sess *s, struct sdfs_hdr *h,
			 void *buf, size_t cap, int timeout_ms)
{
	int64_t deadline = net_now_ms() + timeout_ms;
	uint8_t wire[SDFS_HDR_SIZE], tag[AUTH_TAG_BYTES];
	int ret = recv_full(fd, wire, sizeof(wire), deadline);

	if (ret)
		return ret;
	ret = proto_hdr_decode(wire, SDFS_MAX_PAYLOAD, h);
	if (ret)
		return ret;
	if (h->payload_len > cap)
		return -EMSGSIZE;
	ret = recv_full(fd, buf, h->payload_len, deadline);
	if (!ret)
		ret = recv_full(fd, tag, sizeof(tag), deadline);
	if (ret)
		return ret;
	if (auth_check(s, wire, buf, h->payload_len, tag))
		return -EBADMSG;
	return auth_payload_check(s, h, buf);
}

void wire_fix_csums(uint8_t *wire)
{
	uint32_t len;
	uint64_t c;

	memcpy(&len, wire + 44, 4);
	len = le32toh(len);
	c = htole64(len ? csum64(wire + SDFS_HDR_SIZE, len) : 0);
	memcpy(wire + 48, &c, 8);
	wire_fix_hdr_csum(wire);
}

void wire_conn_open(struct wire_conn *c, const char *addr, const char *conf)
{
	struct sdfs_conf cf;
	struct keyring kr;
	char err[256];
	int ret;

	memset(c, 0, sizeof(*c));
	conf_init(&cf);
	cr_assert_eq(conf_load(conf, &cf, err, sizeof(err)), 0, "%s: %s", conf, err);
	c->fd = wire_connect(addr);
	if (!cf.keyring_set)
		return;
	cr_assert_eq(keyring_load(cf.keyring, &kr, err, sizeof(err)), 0, "%s: %s",
		     cf.keyring, err);
	ret = wire_auth(c->fd, kr.name, kr.key, &c->s, err, sizeof(err));
	memset(&kr, 0, sizeof(kr));
	cr_assert_eq(ret, 0, "handshake with %s as %s: %s", addr, cf.keyring, err);
	c->auth = 1;
}

int wire_conn_send(struct wire_conn *c, const struct sdfs_hdr *h, const void *payload)
{
	if (c->auth)
		return wire_send_req_auth(c->fd, &c->s, h, payload);
	return wire_send_req(c->fd, h, payload);
}

int wire_conn_recv(struct wire_conn *c, struct sdfs_hdr *h, void *buf, size_t cap,
		   int timeout_ms)
{
	int64_t deadline = net_now_ms() + timeout_ms;
	int ret;

	if (c->auth)
		return wire_recv_reply_auth(c->fd, &c->s, h, buf, cap, timeout_ms);
	ret = wire_recv_hdr(c->fd, h, timeout_ms);
	if (ret)
		return ret;
	if (h->payload_len > cap)
		return -EMSGSIZE;
	ret = recv_full(c->fd, buf, h->payload_len, deadline);
	return ret ? ret : proto_payload_check(h, buf);
}

void wire_conn_close(struct wire_conn *c)
{
	if (c->fd > 0)
		close(c->fd);
	c->fd = -1;
	memset(&c->s, 0, sizeof(c->s));
}
