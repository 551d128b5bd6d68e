/*
 * loop.h - the daemons' event loop: epoll over file descriptors, timers,
 * and calls posted from other threads.
 *
 * One thread (the one in loop_run) owns the loop and everything the
 * callbacks touch; callbacks must not block. Other threads talk to it
 * only through loop_post() and loop_stop(), which are thread-safe.
 * Not here: blocking work (workq.h).
 */
#ifndef SDFS_COMMON_LOOP_H
#define SDFS_COMMON_LOOP_H
#include <stdint.h>

struct loop;

typedef void (*loop_fd_fn)(int fd, uint32_t events, void *arg);
typedef void (*loop_call_fn)(void *arg);

/* A call posted from any thread, run on the loop thread. The caller
 * embeds it and keeps it alive until fn runs. */
struct loop_call {
	loop_call_fn fn;
	void *arg;
	struct loop_call *next;         /* loop's own */
};

int loop_new(struct loop **out);
void loop_free(struct loop *l);

/* Watch @fd for @events (EPOLLIN/EPOLLOUT...). Loop thread only. */
int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *arg);
int loop_mod_fd(struct loop *l, int fd, uint32_t events);
void loop_del_fd(struct loop *l, int fd);

/* Call @fn every @period_ms on the loop thread; returns a timer id > 0
 * or -errno. Loop thread only. */
int loop_add_timer(struct loop *l, int period_ms, loop_call_fn fn, void *arg);

/* Queue @c to run on the loop thread. Any thread; never blocks. */
void loop_post(struct loop *l, struct loop_call *c);

/* Run until loop_stop(); returns 0. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);         /* any thread */
int loop_is_loop_thread(const struct loop *l);
#endif
