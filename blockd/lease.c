/*
 * lease.c - the serving lease of lease.h.
 */
#include "blockd/lease.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blockd/suspect.h"
#include "common/coord_suspect.h"
#include "common/log.h"
#include "common/net.h"

#define HOLD_FIRST_MS 5000
#define HOLD_MAX_MS 60000
#define HOLD_MEMORY_MS 60000    /* reported again within this: hold longer */
#define MAX_IN_FLIGHT 8         /* checks unanswered (ZooKeeper away): send no more */

struct lease {
	struct coord *coord;
	uint32_t node_id;
	int lease_ms;
	atomic_int in_flight;
	pthread_t thread;
	int started;

	pthread_mutex_t mu;             /* guards what follows */
	pthread_cond_t cond;            /* CLOCK_MONOTONIC; stop */
	int stop;
	struct lease_view view;
	int64_t newest_start;           /* of the newest check that came back */
	unsigned lapses;
	int64_t cleared_ms;             /* when we last removed our marker */
	/* the lease thread's own */
	int marker_event;               /* a marker is being held */
	int acked;
	int64_t hold_ms, hold_until;
	int serving_logged;             /* 1: serving, 0: told the log we stopped */
};

struct probe {
	struct lease *l;
	int64_t start;
};

static void on_check(void *arg, int err, int marked, int32_t map_version)
{
	struct probe *p = arg;
	struct lease *l = p->l;
	int64_t now = net_now_ms();

	pthread_mutex_lock(&l->mu);
	if (!err && p->start > l->newest_start) {
		l->newest_start = p->start;
		if (marked) {
			l->view.marked = 1;
			l->view.start_ms = 0;
		} else {
			/* A gap (ran out, or marked) since the last good one:
			 * say so, before serving again. The first ever is none. */
			if (l->view.marked ||
			    (l->view.start_ms && now - l->view.start_ms >= l->lease_ms))
				l->lapses++;
			l->view.marked = 0;
			l->view.start_ms = p->start;
		}
		l->view.map_version = map_version;
	}
	pthread_mutex_unlock(&l->mu);
	atomic_fetch_sub(&l->in_flight, 1);
	free(p);
}

static void send_check(struct lease *l)
{
	struct probe *p = malloc(sizeof(*p));
	int ret;

	if (!p)
		return;
	if (atomic_load(&l->in_flight) >= MAX_IN_FLIGHT) {
		free(p);
		return;
	}
	p->l = l;
	p->start = net_now_ms();
	atomic_fetch_add(&l->in_flight, 1);
	ret = coord_lease_check(l->coord, l->node_id, on_check, p);
	if (ret) {
		atomic_fetch_sub(&l->in_flight, 1);
		log_debug("node=%" PRIu32 ": lease check not sent: %s", l->node_id,
			  strerror(-ret));
		free(p);
	}
}

/* The lease thread, after each check sent: act on our marker. */
static void marker_work(struct lease *l, int64_t now)
{
	int64_t cleared, newest;
	int marked;

	pthread_mutex_lock(&l->mu);
	marked = l->view.marked;
	cleared = l->cleared_ms;
	newest = l->newest_start;
	pthread_mutex_unlock(&l->mu);
	if (!marked) {
		l->marker_event = 0;
		return;
	}
	if (!l->marker_event) {
		if (cleared && newest <= cleared)
			return;         /* seen before we removed it */
		l->hold_ms = cleared && now - cleared < HOLD_MEMORY_MS && l->hold_ms
			     ? (l->hold_ms * 2 > HOLD_MAX_MS ? HOLD_MAX_MS : l->hold_ms * 2)
			     : HOLD_FIRST_MS;
		l->hold_until = now + l->hold_ms;
		l->marker_event = 1;
		l->acked = 0;
		log_warn("node=%" PRIu32 ": reported unresponsive; serving nothing, "
			 "back in %" PRId64 " s", l->node_id, l->hold_ms / 1000);
	}
	if (!l->acked) {
		int ret = coord_suspect_ack(l->coord, l->node_id);

		l->acked = ret == 0 || ret == -ENOENT;
	}
	if (now >= l->hold_until && coord_suspect_clear(l->coord, l->node_id) == 0) {
		pthread_mutex_lock(&l->mu);
		l->cleared_ms = net_now_ms();
		pthread_mutex_unlock(&l->mu);
		l->marker_event = 0;
		log_info("node=%" PRIu32 ": held the unresponsive mark %" PRId64
			 " s; removed it, rejoining", l->node_id, l->hold_ms / 1000);
	}
}

/* Tell the log once when serving stops or comes back. */
static void log_state(struct lease *l, int64_t now)
{
	struct lease_view v;
	int serving;

	pthread_mutex_lock(&l->mu);
	v = l->view;
	pthread_mutex_unlock(&l->mu);
	serving = lease_decide(&v, now, l->lease_ms, v.map_version, 0) == SDFS_RES_OK;
	if (serving == l->serving_logged)
		return;
	if (!serving && !v.marked)
		log_warn("node=%" PRIu32 ": no ZooKeeper answer for %d ms; serving "
			 "nothing until one comes", l->node_id, l->lease_ms);
	else if (serving)
		log_info("node=%" PRIu32 ": lease valid; serving", l->node_id);
	l->serving_logged = serving;
}

static void *lease_thread(void *arg)
{
	struct lease *l = arg;
	int period = l->lease_ms / 4 > 10 ? l->lease_ms / 4 : 10;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		struct timespec ts;
		int64_t now;

		pthread_mutex_unlock(&l->mu);
		send_check(l);
		now = net_now_ms();
		marker_work(l, now);
		log_state(l, now);
		pthread_mutex_lock(&l->mu);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)period * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		while (!l->stop && pthread_cond_timedwait(&l->cond, &l->mu, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int lease_new(struct coord *c, uint32_t node_id, int lease_ms, struct lease **out)
{
	struct lease *l = calloc(1, sizeof(*l));
	pthread_condattr_t ca;
	int ret;

	if (!l)
		return -ENOMEM;
	l->coord = c;
	l->node_id = node_id;
	l->lease_ms = lease_ms;
	l->view.map_version = -1;
	l->serving_logged = 0;  /* not serving until the first check: said once it does */
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = -pthread_create(&l->thread, NULL, lease_thread, l);
	if (ret) {
		pthread_cond_destroy(&l->cond);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return ret;
	}
	l->started = 1;
	*out = l;
	return 0;
}

void lease_stop(struct lease *l)
{
	if (!l || !l->started)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	l->started = 0;
}

void lease_free(struct lease *l)
{
	if (!l)
		return;
	lease_stop(l);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

enum sdfs_res lease_admit(struct lease *l, int32_t installed_version, int has_epoch)
{
	struct lease_view v;

	pthread_mutex_lock(&l->mu);
	v = l->view;
	pthread_mutex_unlock(&l->mu);
	return lease_decide(&v, net_now_ms(), l->lease_ms, installed_version, has_epoch);
}

unsigned lease_lapses(struct lease *l)
{
	unsigned n;

	pthread_mutex_lock(&l->mu);
	n = l->lapses;
	pthread_mutex_unlock(&l->mu);
	return n;
}
