/*
 * log.c - see log.h. One mutex keeps lines from interleaving on stderr.
 */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int log_level = LOG_INFO;

static log_sink_fn sink;
static void *sink_arg;
static const char *ident = "sdfs";
static pthread_mutex_t stderr_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
	[LOG_ERR] = "err", [LOG_WARNING] = "warn", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_set_sink(log_sink_fn fn, void *arg)
{
	sink = fn;
	sink_arg = arg;
}

void log_set_ident(const char *s)
{
	ident = s;
}

int log_level_parse(const char *s)
{
	for (int i = LOG_ERR; i <= LOG_DEBUG; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	if (strcmp(s, "warning") == 0 || strcmp(s, "error") == 0)
		return s[0] == 'w' ? LOG_WARNING : LOG_ERR;
	return -1;
}

static void emit(int level, const char *func, int line, const char *msg);

void log_write(int level, const char *func, int line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	emit(level, func, line, msg);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void log_every_write(struct log_every *st, int interval_ms, int level,
		     const char *func, int line, const char *fmt, ...)
{
	int64_t now = mono_ms(), next = atomic_load(&st->next_ms);
	char msg[1024];
	unsigned held;
	va_list ap;

	/* One thread wins the slot; the others count themselves. The
	 * first call finds 0, which any monotonic clock has passed. */
	if (now < next || !atomic_compare_exchange_strong(&st->next_ms, &next,
							  now + interval_ms)) {
		atomic_fetch_add(&st->held, 1);
		return;
	}
	held = atomic_exchange(&st->held, 0);
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (held && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, " (%u more since)", held);
	emit(level, func, line, msg);
}

static void emit(int level, const char *func, int line, const char *msg)
{
	if (level < LOG_EMERG || level > LOG_DEBUG)
		level = LOG_ERR;
	if (sink) {
		sink(level, msg, sink_arg);
		return;
	}

	struct timespec ts;
	struct tm tm;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	pthread_mutex_lock(&stderr_lock);
	fprintf(stderr, "%s.%03ld %s %s %s:%d: %s\n", when, ts.tv_nsec / 1000000,
		ident, level_names[level], func, line, msg);
	pthread_mutex_unlock(&stderr_lock);
}
