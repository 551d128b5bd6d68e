/*
 * net.c - see net.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t net_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void net_time_in(clockid_t clock, int64_t ms, struct timespec *ts)
{
	clock_gettime(clock, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

int net_poll(int fd, short events, int64_t deadline_ms, int slice_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left = deadline_ms ? deadline_ms - net_now_ms() : -1;

	if (deadline_ms && left <= 0)
		return -ETIMEDOUT;
	if (slice_ms >= 0 && (left < 0 || left > slice_ms))
		left = slice_ms;
	if (poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

int net_io_full(int fd, struct iovec *iov, int cnt, int writing, net_wait_fn wait,
		void *arg)
{
	size_t done = 0;

	while (cnt > 0 && !iov->iov_len) {
		iov++;
		cnt--;
	}
	while (cnt > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
		ssize_t n = writing ? sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT)
				    : recvmsg(fd, &mh, MSG_DONTWAIT);

		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			int ret;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			ret = wait(arg, fd, writing ? POLLOUT : POLLIN, done);
			if (ret)
				return ret;
			continue;
		}
		done += (size_t)n;
		while (cnt > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* net_io_full's wait for a plain deadline (*@arg). */
static int wait_deadline(void *arg, int fd, short events, size_t done)
{
	(void)done;
	return net_poll(fd, events, *(const int64_t *)arg, -1);
}

int net_writev_full(int fd, struct iovec *iov, int cnt, int64_t deadline_ms)
{
	return net_io_full(fd, iov, cnt, 1, wait_deadline, &deadline_ms);
}

int net_read_full(int fd, void *buf, size_t len, int64_t deadline_ms)
{
	struct iovec iov = { buf, len };

	return net_io_full(fd, &iov, 1, 0, wait_deadline, &deadline_ms);
}

int net_write_full(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
	struct iovec iov = { (void *)buf, len };

	return net_io_full(fd, &iov, 1, 1, wait_deadline, &deadline_ms);
}

int net_idle_dead(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

int net_parse_addr(const char *s, char *host, size_t hostlen, uint16_t *port)
{
	const char *colon = strrchr(s, ':');
	char *end;

	if (!colon || colon == s || (size_t)(colon - s) >= hostlen)
		return -EINVAL;
	if (colon[1] < '0' || colon[1] > '9')
		return -EINVAL;        /* strtoul would take spaces and signs */
	errno = 0;
	unsigned long p = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || p > 65535)
		return -EINVAL;
	memcpy(host, s, colon - s);
	host[colon - s] = '\0';
	*port = (uint16_t)p;
	return 0;
}

static int resolve(const char *host, uint16_t port, struct sockaddr_in *sa)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
		return 0;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return -EHOSTUNREACH;
	sa->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

int net_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

void net_tune(int fd)
{
	int one = 1, buf = 4 << 20;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

int net_listen(const char *host, uint16_t port, uint16_t *bound_port)
{
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	int fd, one = 1, ret;

	ret = resolve(host, port, &sa);
	if (ret)
		return ret;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 512) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (bound_port)
		*bound_port = ntohs(sa.sin_port);
	return fd;
}

int net_connect(const char *host, uint16_t port, int timeout_ms)
{
	struct sockaddr_in sa;
	int fd, ret, err = 0;
	socklen_t errlen = sizeof(err);

	ret = resolve(host, port, &sa);
	if (ret)
		return ret;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EINPROGRESS) {
			ret = -errno;
			goto out_close;
		}
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		ret = poll(&p, 1, timeout_ms);
		if (ret == 0) {
			ret = -ETIMEDOUT;
			goto out_close;
		}
		if (ret < 0) {
			ret = -errno;
			goto out_close;
		}
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errlen);
		if (err) {
			ret = -err;
			goto out_close;
		}
	}
	net_tune(fd);
	return fd;
out_close:
	close(fd);
	return ret;
}
