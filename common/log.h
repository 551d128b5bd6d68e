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
#include <stdatomic.h>
#include <stdint.h>
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

/*
 * Rate-limited logging, for anything a retry loop that may go on for
 * ever says: the first message is written, then at most one per
 * @interval_ms, which ends with "(N more since)" when N were held back
 * meanwhile. A held-back message is dropped (only counted); the count
 * appears with the next one written.
 *
 * log_every(interval_ms, level, fmt, ...) keeps its state in a static
 * of the call site: one limit per line of code, whatever it says.
 * log_every_r(&state, ...) takes a caller's state instead (zero it
 * before first use), e.g. one per peer. Thread-safe; the state needs no
 * destructor.
 */
struct log_every {
	atomic_int_fast64_t next_ms;    /* monotonic ms: next line allowed */
	atomic_uint held;               /* held back since the last line */
};

void log_every_write(struct log_every *st, int interval_ms, int level,
		     const char *func, int line, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

#define log_every_r(st, interval_ms, lvl, ...) do { if ((lvl) <= log_level) \
	log_every_write((st), (interval_ms), (lvl), __func__, __LINE__, \
			__VA_ARGS__); } while (0)
#define log_every(interval_ms, lvl, ...) do { \
	static struct log_every log_every_site_; \
	log_every_r(&log_every_site_, (interval_ms), (lvl), __VA_ARGS__); \
	} while (0)
#define LOG_EVERY_MS 10000      /* the usual interval of a retry loop's lines */

/* Log at LOG_CRIT and abort: for states that cannot happen, never for input. */
#define sdfs_assert(cond) do { if (!(cond)) { \
	log_write(LOG_CRIT, __func__, __LINE__, "assertion failed: %s", #cond); \
	abort(); } } while (0)
#endif
