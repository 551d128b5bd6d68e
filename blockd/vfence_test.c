/*
 * vfence_test.c - unit tests for vfence.c: per-vid fences only rise,
 * a frozen vid lets only the mds's own token through, an unsynced table
 * refuses everything, and a raise waits for the mutations of its vid
 * that passed the old fence (not for other vids').
 * vfence_load needs ZooKeeper: the cluster test vol_fence covers it.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "blockd/vfence.h"
#include "common/sdfs_proto.h"

static struct vfence *vf;

static void open_synced(void)
{
	cr_assert_eq(vfence_open(&vf), 0);
	vfence_set_synced(vf, 1);
}

static void close_it(void)
{
	vfence_close(vf);
}

TestSuite(vfence, .init = open_synced, .fini = close_it);

/* begin + end at once: the outcome of a mutation of @vid with @token. */
static int try_mutate(uint64_t vid, uint32_t token)
{
	int ret = vfence_mutate_begin(vf, vid, token);

	if (ret == 0)
		vfence_mutate_end(vf, vid);
	return ret;
}

Test(vfence, fences_start_at_zero_and_only_rise)
{
	cr_assert_eq(vfence_get(vf, 7), 0);
	cr_assert_eq(vfence_count(vf), 0);
	cr_assert_eq(vfence_raise(vf, 7, 5), 0);
	cr_assert_eq(vfence_get(vf, 7), 5);
	cr_assert_eq(vfence_raise(vf, 7, 3), 0);
	cr_assert_eq(vfence_get(vf, 7), 5, "a lower token leaves it");
	cr_assert_eq(vfence_raise(vf, 7, 6), 0);
	cr_assert_eq(vfence_get(vf, 7), 6);
	cr_assert_eq(vfence_count(vf), 1);
	cr_assert_eq(vfence_get(vf, 8), 0, "per vid");
}

Test(vfence, many_vids)
{
	for (uint64_t vid = 1; vid <= 5000; vid++)
		cr_assert_eq(vfence_raise(vf, vid, (uint32_t)vid * 2), 0);
	cr_assert_eq(vfence_count(vf), 5000);
	for (uint64_t vid = 1; vid <= 5000; vid++)
		cr_assert_eq(vfence_get(vf, vid), vid * 2, "vid %lu", (unsigned long)vid);
}

Test(vfence, tokens_below_the_fence_are_refused)
{
	cr_assert_eq(try_mutate(3, 0), 0, "no fence: anything passes");
	cr_assert_eq(vfence_raise(vf, 3, 4), 0);
	cr_assert_eq(try_mutate(3, 0), -EPERM);
	cr_assert_eq(try_mutate(3, 3), -EPERM);
	cr_assert_eq(try_mutate(3, 4), 0);
	cr_assert_eq(try_mutate(3, 9), 0, "above passes");
	cr_assert_eq(vfence_get(vf, 3), 4, "and does not move the fence");
	cr_assert_eq(try_mutate(4, 1), 0, "another vid");
}

Test(vfence, a_frozen_vid_takes_only_the_frozen_token)
{
	cr_assert_eq(vfence_raise(vf, 9, 2), 0);
	cr_assert_eq(vfence_raise(vf, 9, SDFS_TOKEN_FROZEN), 0);
	cr_assert_eq(vfence_get(vf, 9), SDFS_TOKEN_FROZEN);
	cr_assert_eq(try_mutate(9, 2), -EROFS, "the writer: read-only now");
	cr_assert_eq(try_mutate(9, 1), -EROFS, "frozen says more than fenced");
	cr_assert_eq(try_mutate(9, SDFS_TOKEN_FROZEN - 1), -EROFS);
	cr_assert_eq(try_mutate(9, SDFS_TOKEN_FROZEN), 0, "the mds copying the index");
	cr_assert_eq(vfence_raise(vf, 9, 3), 0);
	cr_assert_eq(vfence_get(vf, 9), SDFS_TOKEN_FROZEN, "frozen for good");
	/* The mds's token passes any fence that is not frozen. */
	cr_assert_eq(try_mutate(10, SDFS_TOKEN_FROZEN), 0);
}

/* A write split by a freeze is finished only by a token that passed the
 * fence the vid had before (never by a zombie's older one), and only
 * with the completion mark. */
Test(vfence, a_split_write_is_finished_by_the_writers_token_only)
{
	cr_assert_eq(vfence_raise(vf, 5, 7), 0);
	cr_assert_eq(vfence_raise(vf, 5, SDFS_TOKEN_FROZEN), 0);
	cr_assert_eq(try_mutate(5, 7), -EROFS, "unmarked: frozen");
	cr_assert_eq(vfence_mutate_begin_ex(vf, 5, 7, 1), 0);
	vfence_mutate_end(vf, 5);
	cr_assert_eq(vfence_mutate_begin_ex(vf, 5, 6, 1), -EROFS, "a zombie's token");
	cr_assert_eq(vfence_mutate_begin_ex(vf, 5, 0, 1), -EROFS, "no token");
	/* A vid that had no fence: any writer token. */
	cr_assert_eq(vfence_raise(vf, 6, SDFS_TOKEN_FROZEN), 0);
	cr_assert_eq(vfence_mutate_begin_ex(vf, 6, 1, 1), 0);
	vfence_mutate_end(vf, 6);
}

Test(vfence, unsynced_refuses_every_mutation)
{
	cr_assert_eq(vfence_raise(vf, 5, 1), 0);
	vfence_set_synced(vf, 0);
	cr_assert_not(vfence_is_synced(vf));
	cr_assert_eq(try_mutate(5, 1), -ESHUTDOWN);
	cr_assert_eq(try_mutate(6, SDFS_TOKEN_FROZEN), -ESHUTDOWN);
	/* A raise still counts meanwhile (VOL_FENCE during a reload). */
	cr_assert_eq(vfence_raise(vf, 5, 2), 0);
	vfence_set_synced(vf, 1);
	cr_assert_eq(try_mutate(5, 1), -EPERM);
	cr_assert_eq(try_mutate(5, 2), 0);
}

Test(vfence, a_new_table_is_unsynced)
{
	struct vfence *f;

	cr_assert_eq(vfence_open(&f), 0);
	cr_assert_not(vfence_is_synced(f));
	cr_assert_eq(vfence_mutate_begin(f, 1, 1), -ESHUTDOWN);
	vfence_close(f);
	vfence_close(NULL);
}

/* ---- a raise and the mutations around it ---- */

enum act { ACT_RAISE, ACT_MUTATE };

struct actor {
	pthread_t th;
	enum act act;
	uint64_t vid;
	uint32_t token;
	atomic_int started, done;
	int ret;
};

static void *act(void *arg)
{
	struct actor *a = arg;

	atomic_store(&a->started, 1);
	a->ret = a->act == ACT_RAISE ? vfence_raise(vf, a->vid, a->token)
				     : try_mutate(a->vid, a->token);
	atomic_store(&a->done, 1);
	return NULL;
}

/* Start @a and give it time to block, if it is going to. */
static void start(struct actor *a)
{
	cr_assert_eq(pthread_create(&a->th, NULL, act, a), 0);
	while (!atomic_load(&a->started))
		usleep(1000);
	usleep(100 * 1000);
}

Test(vfence, a_raise_waits_for_the_vids_mutation_in_progress)
{
	struct actor raise = { .act = ACT_RAISE, .vid = 1, .token = 2 };
	struct actor late = { .act = ACT_MUTATE, .vid = 1, .token = 1 };

	cr_assert_eq(vfence_raise(vf, 1, 1), 0);
	/* A token-1 write of vid 1 passed the fence and is writing. */
	cr_assert_eq(vfence_mutate_begin(vf, 1, 1), 0);
	start(&raise);
	cr_assert_not(atomic_load(&raise.done), "the raise must wait for it");
	/* One more arrives meanwhile: it queues behind the raise (writers
	 * first) and then meets the new fence. */
	start(&late);
	cr_assert_not(atomic_load(&late.done), "queued behind the raise");

	vfence_mutate_end(vf, 1);
	pthread_join(raise.th, NULL);
	pthread_join(late.th, NULL);
	cr_assert_eq(raise.ret, 0);
	cr_assert_eq(vfence_get(vf, 1), 2);
	cr_assert_eq(late.ret, -EPERM, "a mutation queued behind a raise is fenced");
}

Test(vfence, a_raise_to_the_current_fence_does_not_wait)
{
	struct actor again = { .act = ACT_RAISE, .vid = 1, .token = 3 };

	cr_assert_eq(vfence_raise(vf, 1, 3), 0);
	cr_assert_eq(vfence_mutate_begin(vf, 1, 3), 0);
	start(&again);
	cr_assert(atomic_load(&again.done), "nothing to wait for: no change");
	pthread_join(again.th, NULL);
	vfence_mutate_end(vf, 1);
}

/* A raise of another vid on another stripe goes ahead; 64 stripes, so
 * among vids 2..200 one is on another stripe than vid 1: try them all
 * until one did not wait. */
Test(vfence, a_raise_does_not_wait_for_other_vids)
{
	int any_free = 0;

	cr_assert_eq(vfence_mutate_begin(vf, 1, 0), 0);
	for (uint64_t vid = 2; vid < 200 && !any_free; vid++) {
		struct actor other = { .act = ACT_RAISE, .vid = vid, .token = 1 };

		cr_assert_eq(pthread_create(&other.th, NULL, act, &other), 0);
		for (int i = 0; i < 50 && !atomic_load(&other.done); i++)
			usleep(1000);
		any_free = atomic_load(&other.done);
		if (!any_free) {
			vfence_mutate_end(vf, 1);       /* let it through */
			pthread_join(other.th, NULL);
			cr_assert_eq(vfence_mutate_begin(vf, 1, 0), 0);
		} else {
			pthread_join(other.th, NULL);
		}
	}
	vfence_mutate_end(vf, 1);
	cr_assert(any_free, "every vid waited for vid 1's mutation");
}
