/*
 * order_test.c - several clients writing the same objects at once never
 * leave their replicas different (DESIGN.md §5, blockd/order.h).
 *
 * Each client has its own libsdfs handle (its own connections, as two
 * machines would) and overwrites random, overlapping ranges of a few
 * shared objects with its own byte, now and then replacing or removing
 * a whole object. Sent to every replica by each client, two such writes
 * could land in one order on one replica and in the other order on
 * another; ordered by the object's primary they cannot. Afterwards every
 * object has the same size and checksum on every replica (or is gone
 * from all), and reads back as bytes some client wrote.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/oid.h"
#include "tests/cluster/fixture.h"

#define NBLOCKD 3
#define NCLIENTS 4
#define NOBJ 2
#define SPAN (256u << 10)       /* bytes of each object the clients write */
#define RUN_MS 2500

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = NBLOCKD, .copies = 3 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(order, .init = up, .fini = down, .timeout = 180);

/*
 * The clients go in rounds: all start together (a barrier), each
 * writes, replaces or removes the same objects, then the main thread
 * compares the replicas before the next round. A race that landed in
 * two orders shows at the end of its round, before later writes could
 * cover it.
 */
struct race {
	pthread_barrier_t go, done;
	int64_t until;
	atomic_int stop;
	unsigned rounds;
};

struct racer {
	pthread_t th;
	struct race *race;
	struct sdfs *s;
	unsigned who;
	unsigned ops, errors;
	int last_err;
};

static uint64_t obj(unsigned i)
{
	return oid_make(OID_KIND_FILE, 4242, i);
}

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	unsigned seed = 977u * (r->who + 1);
	char *buf = malloc(SPAN);

	memset(buf, 'A' + (int)r->who, SPAN);
	for (;;) {
		pthread_barrier_wait(&r->race->go);
		if (atomic_load(&r->race->stop))
			break;
		for (unsigned o = 0; o < NOBJ; o++) {
			unsigned pick = (unsigned)rand_r(&seed) % 100;
			uint64_t off = ((unsigned)rand_r(&seed) % 4) * 4096;
			size_t len = SPAN / 4 + ((unsigned)rand_r(&seed) % 4) * 4096;
			int ret;

			if (pick < 4)
				ret = sdfs_obj_remove(r->s, obj(o));
			else if (pick < 10)
				ret = sdfs_obj_put(r->s, obj(o), buf, off + len);
			else
				ret = sdfs_obj_write(r->s, obj(o), buf, len, off);
			if (ret && ret != -ENOENT) {
				r->errors++;
				r->last_err = ret;
			}
			r->ops++;
		}
		pthread_barrier_wait(&r->race->done);
	}
	free(buf);
	return NULL;
}

static void check_replicas(void);

static void race(int64_t run_ms, void (*meanwhile)(struct race *))
{
	struct racer r[NCLIENTS];
	struct race rc = { .until = tnow_ms() + run_ms };
	char err[256];
	unsigned ops = 0;

	pthread_barrier_init(&rc.go, NULL, NCLIENTS + 1);
	pthread_barrier_init(&rc.done, NULL, NCLIENTS + 1);
	for (unsigned i = 0; i < NCLIENTS; i++) {
		r[i] = (struct racer){ .who = i, .race = &rc };
		cr_assert_eq(sdfs_open(tcluster_conf(tc), &r[i].s, err, sizeof(err)), 0,
			     "client %u: %s", i, err);
		sdfs_set_timeout(r[i].s, 30000);
	}
	for (unsigned i = 0; i < NCLIENTS; i++)
		cr_assert_eq(pthread_create(&r[i].th, NULL, racer_main, &r[i]), 0);
	while (tnow_ms() < rc.until) {
		pthread_barrier_wait(&rc.go);
		pthread_barrier_wait(&rc.done);
		rc.rounds++;
		if (meanwhile)
			meanwhile(&rc);
		check_replicas();
	}
	atomic_store(&rc.stop, 1);
	pthread_barrier_wait(&rc.go);
	for (unsigned i = 0; i < NCLIENTS; i++) {
		pthread_join(r[i].th, NULL);
		sdfs_close(r[i].s);
		ops += r[i].ops;
		cr_expect_eq(r[i].errors, 0, "client %u: %u of %u calls failed, last: %s", i,
			     r[i].errors, r[i].ops, strerror(-r[i].last_err));
	}
	pthread_barrier_destroy(&rc.go);
	pthread_barrier_destroy(&rc.done);
	cr_assert(rc.rounds >= 20, "only %u rounds in %" PRId64 " ms", rc.rounds, run_ms);
	cr_log_info("%u rounds, %u calls from %u clients on %u objects", rc.rounds, ops,
		    NCLIENTS, NOBJ);
}

/* Every replica of every object alike; the bytes all some client's. */
static void check_replicas(void)
{
	struct sdfs *s = tcluster_client(tc);
	char *got = malloc(SPAN);

	for (unsigned o = 0; o < NOBJ; o++) {
		struct sdfs_replica rep[NBLOCKD];
		size_t n = 0, nup = 0;

		/* A node that just came back may still be catching up with the
		 * map ("not yet": EAGAIN, ESTALE, ENODATA): ask again. */
		for (int64_t end = tnow_ms() + TCLUSTER_WAIT_MS;; tsleep_ms(50)) {
			int busy = 0;

			cr_assert_eq(sdfs_obj_locate(s, obj(o), rep, NBLOCKD, &n), 0);
			cr_assert_eq(n, NBLOCKD, "object %u placed on %zu nodes", o, n);
			nup = 0;        /* the up ones, to the front */
			for (size_t i = 0; i < n; i++)
				if (!strcmp(rep[i].state, "up")) {
					rep[nup++] = rep[i];
					busy |= rep[i].result == -EAGAIN ||
						rep[i].result == -ESTALE ||
						rep[i].result == -ENODATA;
				}
			if (!busy || tnow_ms() > end)
				break;
		}
		cr_assert(nup >= 2, "object %u: %zu replicas up", o, nup);
		for (size_t i = 0; i < nup; i++) {
			cr_assert(rep[i].result == 0 || rep[i].result == -ENOENT,
				  "object %u on node %u: %s", o, rep[i].node_id,
				  strerror(-rep[i].result));
			cr_assert(rep[i].result == rep[0].result &&
				  (rep[i].result || (rep[i].size == rep[0].size &&
						     rep[i].csum == rep[0].csum)),
				  "object %u diverges: node %u has %s %" PRIu64 " bytes csum %016"
				  PRIx64 ", node %u %s %" PRIu64 " bytes csum %016" PRIx64, o,
				  rep[0].node_id, rep[0].result ? "nothing," : "", rep[0].size,
				  rep[0].csum, rep[i].node_id, rep[i].result ? "nothing," : "",
				  rep[i].size, rep[i].csum);
		}
		ssize_t len = sdfs_obj_read(s, obj(o), got, SPAN, 0);

		cr_assert(len >= 0 || len == -ENOENT, "read object %u: %s", o,
			  strerror((int)-len));
		for (ssize_t i = 0; i < len; i++)
			cr_assert(got[i] == 0 || (got[i] >= 'A' && got[i] < 'A' + NCLIENTS),
				  "object %u byte %zd is 0x%02x, written by no client", o, i,
				  (unsigned char)got[i]);
	}
	free(got);
}

Test(order, racing_clients_leave_equal_replicas)
{
	race(RUN_MS, NULL);
	check_replicas();
}

/* The primary of some objects dies mid-race and comes back: clients go
 * on through the next primary (the checks between rounds while it is
 * down compare the up replicas), and once recovery settled all copies
 * are alike again. */
static void kill_and_restart(struct race *rc)
{
	if (rc->rounds == 10) {
		cr_assert_eq(tcluster_kill(tc, "blockd.0"), 0);
		cr_assert_eq(tcluster_wait_state(tc, "blockd.0", "down", TCLUSTER_WAIT_MS), 0);
	}
	if (rc->rounds == 20)
		cr_assert_eq(tcluster_restart(tc, "blockd.0"), 0, "blockd.0 did not come back");
}

Test(order, racing_clients_through_a_blockd_kill)
{
	race(2 * RUN_MS, kill_and_restart);
	cr_assert_eq(tcluster_wait_healthy(tc, 120), 0, "the cluster never healed");
	check_replicas();
}
