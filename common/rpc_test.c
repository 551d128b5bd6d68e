/*
 * rpc_test.c - rpc_run_hedged against small loopback servers: one that
 * never answers (listening, never accepting: a SIGSTOPped daemon looks
 * the same from outside), and ones that answer every request with a
 * fixed result and payload.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/proto.h"
#include "common/rpc.h"

struct server {
	int fd;
	uint16_t port;
	enum sdfs_res res;
	char payload[8];
	pthread_t th;
	int running;
	volatile int once;      /* close each connection after one answer */
};

static int listen_any(uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 16), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static int read_full(int fd, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* Answer every request on every connection with srv->res. */
static void *serve(void *arg)
{
	struct server *srv = arg;
	int c;

	while ((c = accept(srv->fd, NULL, NULL)) >= 0) {
		uint8_t buf[SDFS_HDR_SIZE];
		struct sdfs_hdr req, rep;

		while (read_full(c, buf, sizeof(buf)) == 0 &&
		       proto_hdr_decode(buf, SDFS_MAX_PAYLOAD, &req) == 0) {
			proto_reply_init(&rep, &req, srv->res);
			rep.payload_len = srv->res == SDFS_RES_OK ? sizeof(srv->payload) : 0;
			proto_hdr_encode(&rep, srv->payload, buf);
			if (write(c, buf, sizeof(buf)) != sizeof(buf) ||
			    (rep.payload_len && write(c, srv->payload, rep.payload_len) !=
			     (ssize_t)rep.payload_len))
				break;
			if (srv->once)
				break;
		}
		close(c);
	}
	return NULL;
}

static void server_start(struct server *srv, enum sdfs_res res, const char *payload)
{
	memset(srv, 0, sizeof(*srv));
	srv->fd = listen_any(&srv->port);
	srv->res = res;
	strncpy(srv->payload, payload, sizeof(srv->payload));
	if (res != (enum sdfs_res)-1) {
		cr_assert_eq(pthread_create(&srv->th, NULL, serve, srv), 0);
		srv->running = 1;
	}
}

static void server_stop(struct server *srv)
{
	shutdown(srv->fd, SHUT_RDWR);
	close(srv->fd);
	if (srv->running)
		pthread_join(srv->th, NULL);
}

#define SILENT ((enum sdfs_res)-1)      /* listens, never accepts */

static struct pool *pool;
static struct server srv[3];
static struct cmap_node node[3];

static uint64_t req_id(void *arg)
{
	static uint64_t id = 1;

	(void)arg;
	return __atomic_fetch_add(&id, 1, __ATOMIC_RELAXED);
}

static int accept_ok(const struct rpc_call *c)
{
	return rpc_result(c) == 0;
}

static void setup3(enum sdfs_res a, enum sdfs_res b, enum sdfs_res c)
{
	enum sdfs_res res[3] = { a, b, c };

	cr_assert_eq(pool_new(&pool), 0);
	for (int i = 0; i < 3; i++) {
		char p[8];

		snprintf(p, sizeof(p), "node%d", i);
		server_start(&srv[i], res[i], p);
		node[i] = (struct cmap_node){ .node_id = (uint32_t)i + 1, .port = srv[i].port };
		strcpy(node[i].host, "127.0.0.1");
	}
}

static void teardown3(void)
{
	pool_free(pool);
	for (int i = 0; i < 3; i++)
		server_stop(&srv[i]);
}

static int run(struct rpc_call *calls, int timeout_ms, int hedge_ms)
{
	memset(calls, 0, 3 * sizeof(*calls));
	for (int i = 0; i < 3; i++) {
		calls[i].node = &node[i];
		calls[i].req.opcode = SDFS_OP_OBJ_READ;
		calls[i].req.oid = 42;
	}
	return rpc_run_hedged(pool, calls, 3, timeout_ms, hedge_ms, accept_ok, req_id, NULL);
}

TestSuite(rpc_hedged, .fini = teardown3, .timeout = 30);

Test(rpc_hedged, a_silent_node_is_passed_over_and_dropped)
{
	struct rpc_call calls[3];

	setup3(SILENT, SDFS_RES_OK, SDFS_RES_OK);
	/* 20 s: without the hedge this would be -1, long after the test's
	 * own timeout */
	int won = run(calls, 20000, 100);

	cr_assert_eq(won, 1);
	cr_assert_eq(calls[0].ret, -ETIMEDOUT, "the silent call is dropped");
	cr_assert_eq(rpc_result(&calls[1]), 0);
	cr_assert_eq(calls[1].reply.payload_len, 8);
	cr_assert_eq(memcmp(calls[1].rpayload, "node1", 6), 0);
	cr_assert_eq(calls[2].ret, -ECANCELED, "never asked");
	rpc_calls_free(calls, 3);
}

Test(rpc_hedged, a_refusal_asks_the_next_at_once_and_is_kept)
{
	struct rpc_call calls[3];

	setup3(SDFS_RES_UNAVAIL, SDFS_RES_OK, SDFS_RES_OK);
	/* a hedge longer than the test: only a refusal may start calls[1] */
	int won = run(calls, 20000, 60000);

	cr_assert_eq(won, 1);
	cr_assert_eq(rpc_result(&calls[0]), -ENODATA);
	cr_assert_eq(calls[2].ret, -ECANCELED);
	rpc_calls_free(calls, 3);
}

Test(rpc_hedged, a_silent_then_refusing_node_go_on_to_the_third)
{
	struct rpc_call calls[3];

	setup3(SILENT, SDFS_RES_UNAVAIL, SDFS_RES_OK);
	int won = run(calls, 20000, 100);

	cr_assert_eq(won, 2);
	cr_assert_eq(calls[0].ret, -ETIMEDOUT);
	cr_assert_eq(rpc_result(&calls[1]), -ENODATA);
	cr_assert_eq(memcmp(calls[2].rpayload, "node2", 6), 0);
	rpc_calls_free(calls, 3);
}

Test(rpc_hedged, nobody_answers_every_call_was_tried)
{
	struct rpc_call calls[3];

	setup3(SILENT, SILENT, SILENT);
	int won = run(calls, 500, 100);

	cr_assert_eq(won, -1);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(calls[i].ret, -ETIMEDOUT, "call %d", i);
	rpc_calls_free(calls, 3);
}

Test(rpc_hedged, the_first_answer_ends_the_run)
{
	struct rpc_call calls[3];

	setup3(SDFS_RES_OK, SDFS_RES_OK, SDFS_RES_OK);
	int won = run(calls, 20000, 100);

	cr_assert_eq(won, 0);
	cr_assert_eq(calls[1].ret, -ECANCELED);
	cr_assert_eq(calls[2].ret, -ECANCELED);
	rpc_calls_free(calls, 3);
}

/* A daemon that closed a pooled connection (restarted, or idle) a
 * moment after answering on it: the pool hands that connection out
 * again without asking the kernel first (rpc.c POOL_FRESH_MS), and the
 * call goes on over a new one, without an error. */
Test(rpc_hedged, a_pooled_connection_the_node_closed_is_replaced)
{
	struct rpc_call call;
	int retried = 0;

	setup3(SDFS_RES_OK, SDFS_RES_OK, SDFS_RES_OK);
	srv[0].once = 1;
	for (int i = 0; i < 5; i++) {
		memset(&call, 0, sizeof(call));
		call.node = &node[0];
		call.req.opcode = SDFS_OP_OBJ_READ;
		call.req.oid = 42;
		rpc_run(pool, &call, 1, 5000, req_id, NULL);
		cr_assert_eq(rpc_result(&call), 0, "call %d: %s", i, strerror(-rpc_result(&call)));
		cr_assert_eq(call.reply.payload_len, 8);
		cr_assert_eq(memcmp(call.rpayload, "node0", 6), 0);
		/* retried: the pooled connection failed, a new one answered
		 * (or, after a stall of a second, the idle check dropped it
		 * first: not asserted, timing is the machine's) */
		retried += call.retried;
		rpc_calls_free(&call, 1);
		usleep(20 * 1000);      /* the close has arrived */
	}
	cr_log_info("%d of 4 calls went on over a new connection after the "
		    "pooled one failed", retried);
}
