/*
 * log_test.c - unit tests for log.c's rate limit (log_every): the first
 * message goes out, repeats within the interval are only counted, and
 * the next message written says how many were held back.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

static char last[1100];
static int nlines;

static void sink(int level, const char *msg, void *arg)
{
	(void)level; (void)arg;
	snprintf(last, sizeof(last), "%s", msg);
	nlines++;
}

static void setup(void)
{
	log_set_sink(sink, NULL);
	nlines = 0;
	last[0] = '\0';
}

TestSuite(log_every, .init = setup);

Test(log_every, first_then_once_per_interval)
{
	for (int i = 0; i < 1000; i++)
		log_every(3600 * 1000, LOG_WARNING, "try %d failed", i);
	cr_assert_eq(nlines, 1);
	cr_assert_str_eq(last, "try 0 failed");
}

Test(log_every, says_how_many_were_held_back)
{
	struct log_every st = { 0 };
	struct timespec ts = { 0, 30 * 1000000 };

	for (int i = 0; i < 5; i++)
		log_every_r(&st, 20, LOG_WARNING, "try %d", i);
	cr_assert_eq(nlines, 1);
	nanosleep(&ts, NULL);           /* past the 20 ms interval */
	log_every_r(&st, 20, LOG_WARNING, "try %d", 5);
	cr_assert_eq(nlines, 2);
	cr_assert_str_eq(last, "try 5 (4 more since)");
}

Test(log_every, call_sites_are_separate)
{
	for (int i = 0; i < 10; i++) {
		log_every(3600 * 1000, LOG_WARNING, "a");
		log_every(3600 * 1000, LOG_WARNING, "b");
	}
	cr_assert_eq(nlines, 2);
}

Test(log_every, below_the_level_is_not_counted)
{
	struct log_every st = { 0 };

	log_level = LOG_INFO;
	log_every_r(&st, 3600 * 1000, LOG_DEBUG, "quiet");
	cr_assert_eq(nlines, 0);
	log_every_r(&st, 3600 * 1000, LOG_WARNING, "loud");
	cr_assert_str_eq(last, "loud");
}
