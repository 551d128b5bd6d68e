/*
 * net_test.c - the full reads and writes with a deadline (net.h) over
 * socketpairs: short transfers, would-block waits, the deadline, the
 * peer's close, a caller's own wait.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/net.h"

static int sp[2];

static void up(void)
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	cr_assert_eq(net_set_nonblock(sp[0], 1), 0);
	cr_assert_eq(net_set_nonblock(sp[1], 1), 0);
}

static void down(void)
{
	close(sp[0]);
	if (sp[1] >= 0)
		close(sp[1]);
}

TestSuite(net, .init = up, .fini = down);

/* Writes "0123456789" a byte every 5 ms to sp[1], then closes it if
 * *@arg says so. */
static void *dribble(void *arg)
{
	for (int i = 0; i < 10; i++) {
		char c = (char)('0' + i);

		usleep(5000);
		cr_assert_eq(net_write_full(sp[1], &c, 1, 0), 0);
	}
	if (*(int *)arg) {
		close(sp[1]);
		sp[1] = -1;
	}
	return NULL;
}

Test(net, read_full_gathers_short_reads)
{
	pthread_t t;
	int close_after = 0;
	char buf[11] = "";

	pthread_create(&t, NULL, dribble, &close_after);
	cr_assert_eq(net_read_full(sp[0], buf, 10, net_now_ms() + 5000), 0);
	pthread_join(t, NULL);
	cr_assert_str_eq(buf, "0123456789");
}

Test(net, read_full_times_out_at_the_deadline)
{
	char buf[4];
	int64_t t0 = net_now_ms();

	cr_assert_eq(write(sp[1], "ab", 2), 2);
	cr_assert_eq(net_read_full(sp[0], buf, sizeof(buf), t0 + 50), -ETIMEDOUT);
	cr_assert_geq(net_now_ms() - t0, 50);
}

Test(net, read_full_says_reset_when_the_peer_closes_early)
{
	pthread_t t;
	int close_after = 1;
	char buf[16];

	pthread_create(&t, NULL, dribble, &close_after);
	cr_assert_eq(net_read_full(sp[0], buf, sizeof(buf), net_now_ms() + 5000),
		     -ECONNRESET);
	pthread_join(t, NULL);
	cr_assert_eq(net_read_full(sp[0], buf, 0, 0), 0, "nothing to read: done");
}

/* Reads and sums what arrives on sp[1] until EOF, slowly. */
static void *drain(void *arg)
{
	size_t *got = arg;
	char buf[4096];

	for (;;) {
		struct pollfd p = { .fd = sp[1], .events = POLLIN };
		ssize_t n;

		poll(&p, 1, 1000);
		n = read(sp[1], buf, sizeof(buf));
		if (n == 0)
			break;
		if (n > 0)
			*got += (size_t)n;
	}
	return NULL;
}

Test(net, writev_full_writes_more_than_the_socket_holds)
{
	size_t len = 4u << 20, got = 0;
	char *a = malloc(len), b[3] = "xyz";
	struct iovec iov[3] = { { a, len }, { b, 0 }, { b, sizeof(b) } };
	pthread_t t;

	cr_assert(a);
	memset(a, 'a', len);
	pthread_create(&t, NULL, drain, &got);
	cr_assert_eq(net_writev_full(sp[0], iov, 3, net_now_ms() + 10000), 0);
	shutdown(sp[0], SHUT_WR);
	pthread_join(t, NULL);
	cr_assert_eq(got, len + sizeof(b));
	free(a);
}

Test(net, write_full_to_a_closed_peer_is_epipe)
{
	close(sp[1]);
	sp[1] = -1;
	cr_assert_eq(net_write_full(sp[0], "x", 1, net_now_ms() + 1000), -EPIPE);
}

/* A caller's wait: gives up with -ECANCELED once something came. */
static int cancel_after_first(void *arg, int fd, short events, size_t done)
{
	size_t *seen = arg;

	*seen = done;
	if (done)
		return -ECANCELED;
	return net_poll(fd, events, 0, 10);
}

Test(net, io_full_leaves_the_wait_to_the_caller)
{
	size_t seen = 99;
	char buf[8];
	struct iovec iov = { buf, sizeof(buf) };

	cr_assert_eq(write(sp[1], "abc", 3), 3);
	cr_assert_eq(net_io_full(sp[0], &iov, 1, 0, cancel_after_first, &seen),
		     -ECANCELED);
	cr_assert_eq(seen, 3);
	cr_assert(memcmp(buf, "abc", 3) == 0);
}

Test(net, poll_waits_a_slice_and_knows_a_passed_deadline)
{
	int64_t t0 = net_now_ms();

	cr_assert_eq(net_poll(sp[0], POLLIN, t0 + 10000, 20), 0, "the slice ends it");
	cr_assert_lt(net_now_ms() - t0, 10000);
	cr_assert_eq(net_poll(sp[0], POLLIN, t0 - 1, 20), -ETIMEDOUT);
}
