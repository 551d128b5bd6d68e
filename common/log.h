/*
 * log.h - leveled logging for daemons, tools and libclient.
 *
 * Messages go to a sink: stderr with a timestamp by default, or a
 * function set with log_set_sink() (libclient never writes to stderr on
 * its own: programs linking libsdfs choose where messages go).
 * The level is checked before the message is formatted.
 * Thread-safe: log_write() may be called from any thread.
 */
#ifndef SDFS_COMMON_LOG_H
#define SDFS_COMMON_LOG_H
#include <syslog.h>

extern int log_level;           /* LOG_ERR .. LOG_DEBUG; default LOG_INFO */

typedef void (*log_sink_fn)(int level, const char *msg, void *arg);

/* Send messages to @fn (NULL: back to stderr). Call before threads start. */
void log_set_sink(log_sink_fn fn, void *arg);
/* Prefix every stderr line with @ident (e.g. "blockd.1"); borrowed, keep it alive. */
void log_set_ident(const char *ident);
/* Parse "err|warn|info|debug"; returns the level or -1. */
int log_level_parse(const char *s);

void log_write(int level, const char *func, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define sdfs_log(lvl, ...) do { if ((lvl) <= log_level) \
	log_write((lvl), __func__, __LINE__, __VA_ARGS__); } while (0)
#define log_err(...)   sdfs_log(LOG_ERR, __VA_ARGS__)      /* an operator must act */
#define log_warn(...)  sdfs_log(LOG_WARNING, __VA_ARGS__)  /* degraded, handled */
#define log_info(...)  sdfs_log(LOG_INFO, __VA_ARGS__)     /* state changes */
#define log_debug(...) sdfs_log(LOG_DEBUG, __VA_ARGS__)    /* per request */

/* Log at LOG_CRIT and abort: for states that cannot happen, never for input. */
#define sdfs_assert(cond) do { if (!(cond)) { \
	log_write(LOG_CRIT, __func__, __LINE__, "assertion failed: %s", #cond); \
	abort(); } } while (0)
#endif
