/*
 * fence_test.c - unit tests for fence.c: the fence only rises, is on
 * disk before it takes effect, and a raise waits for the mutations that
 * passed the old fence and turns away those queued behind it.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blockd/datadir.h"
#include "blockd/fence.h"

static char dir[64];

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sdfs-fence-test.XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
}

static void rm_tmp(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, FENCE_FILE);
	unlink(path);
	rmdir(dir);
}

TestSuite(fence, .init = mkdir_tmp, .fini = rm_tmp);

static struct fence *open_synced(void)
{
	struct fence *f;

	cr_assert_eq(fence_open(dir, &f), 0);
	fence_set_synced(f, 1);
	return f;
}

static uint64_t on_disk(void)
{
	uint64_t v = 0;

	cr_assert_eq(datadir_read_u64(dir, FENCE_FILE, &v), 0);
	return v;
}

Test(fence, starts_at_zero_and_unsynced)
{
	struct fence *f;

	cr_assert_eq(fence_open(dir, &f), 0);
	cr_assert_eq(fence_get(f), 0);
	cr_assert_not(fence_is_synced(f));
	cr_assert_eq(fence_mutate_begin(f, 0), -ESHUTDOWN, "unsynced refuses");
	fence_set_synced(f, 1);
	cr_assert_eq(fence_mutate_begin(f, 0), 0);
	fence_mutate_end(f);
	fence_close(f);
}

Test(fence, raise_persists_and_never_lowers)
{
	struct fence *f = open_synced();
	uint64_t now = 0;

	cr_assert_eq(fence_raise(f, 5, "test", &now), 0);
	cr_assert_eq(now, 5);
	cr_assert_eq(on_disk(), 5);
	cr_assert_eq(fence_raise(f, 3, "test", &now), 0);
	cr_assert_eq(now, 5, "a lower epoch leaves it");
	cr_assert_eq(on_disk(), 5);
	cr_assert_eq(fence_raise(f, 0, "query", &now), 0);
	cr_assert_eq(now, 5);
	cr_assert_eq(fence_raise(f, UINT32_MAX, "test", NULL), 0);
	cr_assert_eq(fence_get(f), UINT32_MAX);
	fence_close(f);

	cr_assert_eq(fence_open(dir, &f), 0);
	cr_assert_eq(fence_get(f), UINT32_MAX, "loaded from the data dir");
	fence_close(f);
}

Test(fence, refuses_tokens_below_it)
{
	struct fence *f = open_synced();

	cr_assert_eq(fence_raise(f, 7, "test", NULL), 0);
	cr_assert_eq(fence_mutate_begin(f, 0), -EPERM);
	cr_assert_eq(fence_mutate_begin(f, 6), -EPERM);
	cr_assert_eq(fence_mutate_begin(f, 7), 0);
	fence_mutate_end(f);
	cr_assert_eq(fence_mutate_begin(f, 8), 0);
	fence_mutate_end(f);
	fence_set_synced(f, 0);
	cr_assert_eq(fence_mutate_begin(f, 8), -ESHUTDOWN);
	fence_close(f);
}

Test(fence, malformed_file_is_refused)
{
	struct fence *f;

	cr_assert_eq(datadir_write(dir, FENCE_FILE, "12abc\n"), 0);
	cr_assert_eq(fence_open(dir, &f), -EBADMSG);
	cr_assert_eq(datadir_write(dir, FENCE_FILE, ""), 0);
	cr_assert_eq(fence_open(dir, &f), -EBADMSG);
}

Test(fence, failed_persist_leaves_it_unchanged)
{
	struct fence *f = open_synced();
	char gone[96];
	uint64_t now = 0;

	cr_assert_eq(fence_raise(f, 2, "test", NULL), 0);
	/* The data dir disappears: the raise cannot be made durable. */
	snprintf(gone, sizeof(gone), "%s.gone", dir);
	cr_assert_eq(rename(dir, gone), 0);
	cr_assert_lt(fence_raise(f, 9, "test", &now), 0);
	cr_assert_eq(now, 2);
	cr_assert_eq(fence_get(f), 2);
	cr_assert_eq(fence_mutate_begin(f, 3), 0, "still the old fence");
	fence_mutate_end(f);
	cr_assert_eq(rename(gone, dir), 0);
	fence_close(f);
}

/* ---- a raise and the mutations around it ---- */

struct racer {
	struct fence *f;
	uint32_t token;
	atomic_int started, done;
	int ret;
};

static void *raise_thread(void *arg)
{
	struct racer *x = arg;

	atomic_store(&x->started, 1);
	x->ret = fence_raise(x->f, x->token, "test", NULL);
	atomic_store(&x->done, 1);
	return NULL;
}

static void *mutate_thread(void *arg)
{
	struct racer *x = arg;

	atomic_store(&x->started, 1);
	x->ret = fence_mutate_begin(x->f, x->token);
	if (x->ret == 0)
		fence_mutate_end(x->f);
	atomic_store(&x->done, 1);
	return NULL;
}

static void wait_started(struct racer *x)
{
	while (!atomic_load(&x->started))
		usleep(1000);
	usleep(100 * 1000);     /* and has blocked, if it is going to */
}

Test(fence, raise_waits_for_mutations_in_progress_and_refuses_queued_ones)
{
	struct fence *f = open_synced();
	struct racer raiser = { .f = f, .token = 2 }, late = { .f = f, .token = 1 };
	pthread_t t1, t2;

	cr_assert_eq(fence_raise(f, 1, "test", NULL), 0);
	/* A mutation with token 1 passed the fence and is writing. */
	cr_assert_eq(fence_mutate_begin(f, 1), 0);

	cr_assert_eq(pthread_create(&t1, NULL, raise_thread, &raiser), 0);
	wait_started(&raiser);
	cr_assert_not(atomic_load(&raiser.done), "the raise must wait for it");

	/* Another token-1 mutation arrives while the raise waits: it must
	 * not slip in before the raise (writers first), and after it the
	 * fence turns it away. */
	cr_assert_eq(pthread_create(&t2, NULL, mutate_thread, &late), 0);
	wait_started(&late);
	cr_assert_not(atomic_load(&late.done), "queued behind the raise");

	fence_mutate_end(f);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	cr_assert_eq(raiser.ret, 0);
	cr_assert_eq(fence_get(f), 2);
	cr_assert_eq(late.ret, -EPERM, "a mutation queued behind a raise is fenced");
	fence_close(f);
}
