/*
 * loop.c - see loop.h. Posted calls are a locked singly linked list
 * drained on an eventfd wakeup; timers are timerfds.
 */
#include "common/loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/log.h"

#define LOOP_MAX_FDS 65536

struct loop_watch {
	loop_fd_fn fn;
	void *arg;
	loop_call_fn timer_fn;          /* set for timers: fd is a timerfd */
};

struct loop {
	int epfd;
	int wakefd;
	atomic_int stop;
	pthread_t owner;
	int running;
	pthread_mutex_t lock;           /* protects posted */
	struct loop_call *posted, **posted_tail;
	struct loop_watch *watch;       /* indexed by fd */
};

int loop_new(struct loop **out)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->watch = calloc(LOOP_MAX_FDS, sizeof(*l->watch));
	if (!l->watch)
		goto out_free;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		goto out_free;
	l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->wakefd < 0)
		goto out_close_ep;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = l->wakefd };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) < 0)
		goto out_close_wake;
	pthread_mutex_init(&l->lock, NULL);
	l->posted_tail = &l->posted;
	*out = l;
	return 0;
out_close_wake:
	close(l->wakefd);
out_close_ep:
	close(l->epfd);
out_free:
	free(l->watch);
	free(l);
	return -ENOMEM;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	close(l->wakefd);
	close(l->epfd);
	pthread_mutex_destroy(&l->lock);
	free(l->watch);
	free(l);
}

int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *arg)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	if (fd < 0 || fd >= LOOP_MAX_FDS)
		return -EMFILE;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	l->watch[fd] = (struct loop_watch){ .fn = fn, .arg = arg };
	return 0;
}

int loop_mod_fd(struct loop *l, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void loop_del_fd(struct loop *l, int fd)
{
	if (fd < 0 || fd >= LOOP_MAX_FDS)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	memset(&l->watch[fd], 0, sizeof(l->watch[fd]));
}

int loop_add_timer(struct loop *l, int period_ms, loop_call_fn fn, void *arg)
{
	struct itimerspec its = {
		.it_interval = { period_ms / 1000, (period_ms % 1000) * 1000000L },
		.it_value = { period_ms / 1000, (period_ms % 1000) * 1000000L },
	};
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	if (timerfd_settime(fd, 0, &its, NULL) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = loop_add_fd(l, fd, EPOLLIN, NULL, arg);
	if (ret) {
		close(fd);
		return ret;
	}
	l->watch[fd].timer_fn = fn;
	return fd;
}

void loop_post(struct loop *l, struct loop_call *c)
{
	uint64_t one = 1;

	int first;

	c->next = NULL;
	pthread_mutex_lock(&l->lock);
	first = !l->posted;
	*l->posted_tail = c;
	l->posted_tail = &c->next;
	pthread_mutex_unlock(&l->lock);
	/* Only the first of a batch wakes the loop: the others are taken
	 * with it (run_posted reads the eventfd before it takes the list,
	 * so a call posted after the take finds the list empty). */
	if (first && write(l->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_err("eventfd write: %s", strerror(errno));
}

static void run_posted(struct loop *l)
{
	uint64_t n;
	struct loop_call *c;

	if (read(l->wakefd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_err("eventfd read: %s", strerror(errno));
	pthread_mutex_lock(&l->lock);
	c = l->posted;
	l->posted = NULL;
	l->posted_tail = &l->posted;
	pthread_mutex_unlock(&l->lock);
	while (c) {
		struct loop_call *next = c->next;  /* fn may free c */

		c->fn(c->arg);
		c = next;
	}
}

int loop_run(struct loop *l)
{
	struct epoll_event evs[256];

	l->owner = pthread_self();
	l->running = 1;
	while (!atomic_load(&l->stop)) {
		int n = epoll_wait(l->epfd, evs, 256, 1000);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_err("epoll_wait: %s", strerror(errno));
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == l->wakefd) {
				run_posted(l);
				continue;
			}
			struct loop_watch w = l->watch[fd];
			if (w.timer_fn) {
				uint64_t ticks;

				if (read(fd, &ticks, sizeof(ticks)) == sizeof(ticks))
					w.timer_fn(w.arg);
			} else if (w.fn) {
				w.fn(fd, evs[i].events, w.arg);
			}
		}
	}
	l->running = 0;
	return 0;
}

void loop_stop(struct loop *l)
{
	uint64_t one = 1;

	atomic_store(&l->stop, 1);
	if (write(l->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_err("eventfd write: %s", strerror(errno));
}

int loop_is_loop_thread(const struct loop *l)
{
	return !l->running || pthread_equal(l->owner, pthread_self());
}
