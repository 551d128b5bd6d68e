/*
 * rpc.h - requests to block daemons, several in parallel, from one
 * calling thread.
 *
 * rpc_run() sends every call's request and waits for every reply (or
 * the deadline) with poll(), so a write to three replicas costs one
 * round trip, not three. Connections are pooled per node and reused;
 * a pooled connection that turns out dead is replaced once,
 * transparently. Thread-safe: many threads may run calls at once.
 * Used by libclient (client -> blockd) and by blockd itself (recovery,
 * blockd -> blockd); blocking, so daemons call it from worker threads.
 */
#ifndef SDFS_COMMON_RPC_H
#define SDFS_COMMON_RPC_H
#include <stddef.h>
#include <stdint.h>

#include "common/auth.h"
#include "common/cmap.h"
#include "common/sdfs_proto.h"

struct pool;

/* A new pool takes the process's default authentication (below). */
int pool_new(struct pool **out);
void pool_free(struct pool *p);         /* closes idle connections */
/*
 * Authenticate new connections of @p (common/auth.h) with @cred
 * (copied; NULL: none held) when @on (the cluster's auth is required);
 * pooled connections keep their session. With @on and no @cred, calls
 * fail with -EACCES. Any thread; connections made before stay as they
 * are.
 */
void pool_set_auth(struct pool *p, int on, const struct auth_cred *cred);
/* Take the key from @kf (borrowed until pool_free; NULL: none) at each
 * new connection, in place of pool_set_auth's @cred. */
void pool_set_keyfile(struct pool *p, struct auth_keyfile *kf);
/* The default for pools made afterwards (a daemon's own key, set once
 * at start-up before its pools are made). */
void rpc_set_default_auth(int on, const struct auth_cred *cred);

struct rpc_call {
	/* in */
	const struct cmap_node *node;   /* borrowed for the call */
	struct sdfs_hdr req;            /* opcode, flags, oid, offset, length, epoch */
	const void *payload;            /* req.payload_len bytes, borrowed */
	void *rbuf;                     /* reply payload goes here if set... */
	size_t rbuf_len;                /* ...and must fit, else -EPROTO */

	/* out */
	int ret;                        /* 0: a reply arrived; -errno: transport */
	struct sdfs_hdr reply;          /* valid when ret == 0 */
	uint8_t *rpayload;              /* malloc'd reply payload when rbuf unset */

	/* rpc.c's own */
	int fd, state, reused, retried;
	size_t done;
	uint8_t hbuf[SDFS_HDR_SIZE];
	uint8_t *rdst;
	struct auth_sess sess;          /* the connection's, while it is ours */
	uint8_t tag[AUTH_TAG_BYTES];    /* the request's */
	uint8_t rtag[AUTH_TAG_BYTES];   /* the reply's */
	struct rpc_auth *auth;          /* a handshake under way (malloc'd) */
};

#define RPC_MAX_CALLS 64    /* calls in one rpc_run; more get -E2BIG */

/*
 * Run @n calls in parallel until each has a reply or failed, or
 * @timeout_ms passed (those still waiting get -ETIMEDOUT). Each call
 * has a connection of its own, also several to one node. @req_id
 * numbers the calls' requests. Each call's ret and reply say how it
 * went; free rpayload with free() (rpc_calls_free does it).
 */
void rpc_run(struct pool *p, struct rpc_call *calls, size_t n, int timeout_ms,
	     uint64_t (*req_id)(void *), void *arg);
/*
 * A hedged run, for reads that any one of several nodes can answer:
 * calls[0] starts at once; calls[i + 1] starts as soon as every call
 * still in flight has been for @hedge_ms (none at all: at once, when the
 * ones before failed without @accept taking their outcome). A late call
 * goes on waiting for its reply too. Returns the index of the first finished call that
 * @accept(call) returns nonzero for, at once: the calls still in flight
 * are dropped (ret -ETIMEDOUT, their connections closed). Returns -1
 * when none was accepted by @timeout_ms: every started call has its
 * outcome (-ETIMEDOUT for those without). Calls never started have ret
 * -ECANCELED; calls past RPC_MAX_CALLS are not touched. Free with
 * rpc_calls_free either way.
 */
int rpc_run_hedged(struct pool *p, struct rpc_call *calls, size_t n, int timeout_ms,
		   int hedge_ms, int (*accept)(const struct rpc_call *),
		   uint64_t (*req_id)(void *), void *arg);
void rpc_calls_free(struct rpc_call *calls, size_t n);
/* @c zeroed, then a request @op of @oid in @epoch to @node with
 * @plen bytes of @payload (borrowed); the other fields as the caller
 * sets them after. */
void rpc_call_init(struct rpc_call *c, const struct cmap_node *node, unsigned op,
		   uint64_t oid, uint64_t epoch, const void *payload, uint32_t plen);
/* The call's outcome as one errno: transport error or reply result. */
int rpc_result(const struct rpc_call *c);
/* Does @err (an rpc_result) say the node could not be reached or
 * answered nothing usable — worth retrying on a fresh map? */
int rpc_is_transport(int err);
#endif
