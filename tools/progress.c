/*
 * progress.c - see progress.h.
 */
#include "tools/progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "tools/cli.h"

#define PROGRESS_EVERY_MS 100
#define PROGRESS_BAR_WIDTH 20

void progress_init(struct progress *p, const char *what, uint64_t total)
{
	p->what = what;
	p->total = total;
	p->start_ms = cli_mono_ms();
	p->shown_ms = p->start_ms;     /* first draw after 100 ms: none for quick runs */
	p->tty = isatty(2);
	p->drawn = 0;
}

static const char *eta_text(uint64_t s, char *buf, size_t len)
{
	if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
	return buf;
}

static void draw(struct progress *p, uint64_t done, int64_t now)
{
	int64_t elapsed = now - p->start_ms;
	uint64_t rate = elapsed > 0 ? done * 1000 / (uint64_t)elapsed : 0;
	char d[32], t[32], r[32], e[32], bar[PROGRESS_BAR_WIDTH + 1];

	cli_human(done, d, sizeof(d));
	cli_human(rate, r, sizeof(r));
	if (!p->total) {
		fprintf(stderr, "\r\033[K%s %s  %s/s", p->what, d, r);
	} else {
		uint64_t total = done > p->total ? done : p->total;
		unsigned pct = (unsigned)(done * 100 / total);

		for (unsigned i = 0; i < PROGRESS_BAR_WIDTH; i++)
			bar[i] = i < pct * PROGRESS_BAR_WIDTH / 100 ? '#' : '.';
		bar[PROGRESS_BAR_WIDTH] = '\0';
		fprintf(stderr, "\r\033[K%s [%s] %3u%%  %s/%s  %s/s", p->what, bar, pct, d,
			cli_human(total, t, sizeof(t)), r);
		if (rate && done < total)
			fprintf(stderr, "  ETA %s",
				eta_text((total - done + rate - 1) / rate, e, sizeof(e)));
	}
	fflush(stderr);
	p->drawn = 1;
	p->shown_ms = now;
}

void progress_show(struct progress *p, uint64_t done)
{
	int64_t now;

	if (!p->tty)
		return;
	now = cli_mono_ms();
	if (now - p->shown_ms >= PROGRESS_EVERY_MS)
		draw(p, done, now);
}

void progress_end(struct progress *p, uint64_t done)
{
	if (!p->drawn)
		return;
	draw(p, done, cli_mono_ms());
	fputc('\n', stderr);
	p->drawn = 0;
}

void progress_abort(struct progress *p)
{
	if (p->drawn)
		fputc('\n', stderr);
	p->drawn = 0;
}
