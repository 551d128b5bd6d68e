/*
 * mds_failover_test.c - the standby mds takes over without losing or
 * repeating anything a client was told happened:
 *
 *   - SIGKILL of the active while four clients create, rename and
 *     unlink: no call fails (a delay only), every acknowledged change
 *     is there exactly once, and the killed mds returns as a standby;
 *   - a zombie: the active SIGSTOPped until its ZooKeeper session
 *     expires, a client goes on with the new active, then the old one
 *     resumes: it steps down (re-executing itself as a standby) and
 *     changes nothing.
 *
 * 3 blockd, 2 mds. The workload's choices derive from a logged seed
 * (SDFS_TEST_SEED=... repeats them; the timing of the kill does not).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/proto.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"

#define ROOT 1
#define NWORKERS 4
#define CLIENT_TIMEOUT_MS 20000
#define KILL_AFTER_MS 2000
#define RUN_MS 6000
#define AFTER_KILL_OPS 40       /* successful ops after the kill, at least */
#define AFTER_KILL_MAX_MS 30000
#define FAILOVER_BOUND_MS 15000 /* generous: a bound, not a benchmark */
#define MAX_NAMES 8192
#define MAX_OPS 200000          /* per worker */
#define TAKEOVER_MS 10000
#define STEP_DOWN_MS 10000

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = 3, .mds = 2 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(mds_failover, .init = up, .fini = down, .timeout = 180);

/* A libsdfs handle of its own, with the long timeout. */
static struct sdfs *open_client(void)
{
	char err[256] = "";
	struct sdfs *s;
	int ret = sdfs_open(tcluster_conf(tc), &s, err, sizeof(err));

	cr_assert_eq(ret, 0, "sdfs_open: %s", err);
	sdfs_set_timeout(s, CLIENT_TIMEOUT_MS);
	return s;
}

/* ---- what a directory holds ---- */

struct names {
	char (*v)[32];
	size_t n;
};

static void names_add(struct names *m, const char *name)
{
	if (m->n < MAX_NAMES)
		snprintf(m->v[m->n++], sizeof(m->v[0]), "%s", name);
}

static void names_del(struct names *m, size_t i)
{
	memcpy(m->v[i], m->v[--m->n], sizeof(m->v[0]));
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int collect_fn(void *arg, const char *name, uint64_t ino, uint32_t type,
		      uint64_t cookie, const struct sdfs_stat *st)
{
	(void)ino, (void)type, (void)cookie, (void)st;
	names_add(arg, name);
	return 0;
}

/* The listing of @dir must be exactly @want (order aside). */
static void assert_listing(struct sdfs *s, uint64_t dir, struct names *want,
			   const char *what)
{
	struct names got = { .v = calloc(MAX_NAMES, sizeof(got.v[0])) };
	int ret;

	cr_assert(got.v);
	ret = sdfs_ns_readdir(s, dir, 0, 0, collect_fn, &got);
	cr_assert_eq(ret, 0, "%s: readdir: %s", what, strerror(-ret));
	qsort(got.v, got.n, sizeof(got.v[0]), cmp_name);
	qsort(want->v, want->n, sizeof(want->v[0]), cmp_name);
	for (size_t i = 0, j = 0; i < got.n || j < want->n;) {
		int c = i == got.n ? 1 : j == want->n ? -1 : strcmp(got.v[i], want->v[j]);

		cr_assert_eq(c, 0, "%s: %s %s", what, c < 0 ? "unexpected entry" :
			     "missing entry", c < 0 ? got.v[i] : want->v[j]);
		i++;
		j++;
	}
	cr_assert_eq(got.n, want->n);
	free(got.v);
}

/* ---- SIGKILL under load ---- */

struct worker {
	int idx;
	struct sdfs *s;
	uint64_t dir;
	uint64_t rng;
	struct names model;     /* what the directory holds, as acknowledged */
	unsigned next;          /* numbers for new names */
	atomic_uint ops;        /* done_ms[0, ops) are written */
	unsigned creates, renames, unlinks;
	int64_t *done_ms;       /* completion time of each op */
	uint64_t *inos;         /* inode numbers of the creates */
	unsigned ninos;
	int err;                /* the first failure; the worker then stops */
	char err_what[96];
	int64_t err_after_ms;
	pthread_t th;
};

static atomic_int stop_workers;

/* One op on the worker's directory, mirrored into its model. */
static int worker_op(struct worker *w)
{
	unsigned r = (unsigned)(trand(&w->rng) % 10);
	char name[32], to[32];
	int ret;

	if (w->model.n == 0 || r < 6 || w->model.n >= MAX_NAMES - 1) {
		struct sdfs_stat st;

		snprintf(name, sizeof(name), "f%u", w->next++);
		ret = sdfs_ns_mknod(w->s, w->dir, name, S_IFREG | 0644, 0, 0, 0, &st);
		if (!ret) {
			names_add(&w->model, name);
			w->creates++;
			w->inos[w->ninos++] = st.ino;
		}
		snprintf(w->err_what, sizeof(w->err_what), "create %s", name);
		return ret;
	}
	size_t i = (size_t)(trand(&w->rng) % w->model.n);
	snprintf(name, sizeof(name), "%s", w->model.v[i]);
	if (r < 8) {
		snprintf(to, sizeof(to), "r%u", w->next++);
		ret = sdfs_ns_rename(w->s, w->dir, name, w->dir, to, 0);
		if (!ret) {
			snprintf(w->model.v[i], sizeof(w->model.v[0]), "%s", to);
			w->renames++;
		}
		snprintf(w->err_what, sizeof(w->err_what), "rename %s %s", name, to);
		return ret;
	}
	ret = sdfs_ns_unlink(w->s, w->dir, name);
	if (!ret) {
		names_del(&w->model, i);
		w->unlinks++;
	}
	snprintf(w->err_what, sizeof(w->err_what), "unlink %s", name);
	return ret;
}

/* No asserts: not the test's thread; the test checks err afterwards. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (unsigned n = 0; !atomic_load(&stop_workers) && n < MAX_OPS; n++) {
		int64_t t0 = tnow_ms();
		int ret = worker_op(w);

		if (ret) {
			w->err = ret;
			w->err_after_ms = tnow_ms() - t0;
			break;
		}
		w->done_ms[n] = tnow_ms();
		atomic_store(&w->ops, n + 1);
	}
	return NULL;
}

/* Successful ops completed after @t (ms), over all workers. */
static unsigned ops_after(struct worker *w, int64_t t)
{
	unsigned n = 0;

	for (int k = 0; k < NWORKERS; k++) {
		unsigned ops = atomic_load(&w[k].ops);

		for (unsigned i = ops; i > 0 && w[k].done_ms[i - 1] > t; i--)
			n++;
	}
	return n;
}

/*
 * When did @pid die? `sdfs dev kill` returns only once the pid is gone
 * (reaped), which can be long after the SIGKILL: this thread notes the
 * moment the process turned into a zombie, polling every millisecond.
 */
struct death_watch {
	pid_t pid;
	atomic_int stop;
	_Atomic int64_t dead_ms;        /* 0 until seen dead */
	pthread_t th;
};

static int is_dead(pid_t pid)
{
	char path[64], buf[512], *paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

static void *watch_main(void *arg)
{
	struct death_watch *dw = arg;

	while (!atomic_load(&dw->stop)) {
		if (is_dead(dw->pid)) {
			atomic_store(&dw->dead_ms, tnow_ms());
			break;
		}
		tsleep_ms(1);
	}
	return NULL;
}

Test(mds_failover, sigkill_of_the_active_loses_and_repeats_nothing)
{
	struct worker w[NWORKERS];
	char victim[32], next[32];
	struct sdfs_mds_status ms;
	uint64_t seed = tseed("workload");
	int64_t t_start, t_kill, t_killed, t_dead, first_after = -1, stall = 0;
	struct death_watch dw = { 0 };
	unsigned across = 0;    /* ops sent before the kill, answered after */
	int kret;

	memset(w, 0, sizeof(w));
	atomic_store(&stop_workers, 0);
	for (int k = 0; k < NWORKERS; k++) {
		char dname[16];
		struct sdfs_stat st;

		w[k].idx = k;
		w[k].s = open_client();
		w[k].rng = seed + 0x1000193ull * (uint64_t)(k + 1);
		w[k].model.v = calloc(MAX_NAMES, sizeof(w[k].model.v[0]));
		w[k].done_ms = calloc(MAX_OPS, sizeof(int64_t));
		w[k].inos = calloc(MAX_OPS, sizeof(uint64_t));
		cr_assert(w[k].model.v && w[k].done_ms && w[k].inos);
		snprintf(dname, sizeof(dname), "w%d", k);
		cr_assert_eq(sdfs_ns_mkdir(w[k].s, ROOT, dname, 0755, 0, 0, &st), 0);
		w[k].dir = st.ino;
	}
	cr_assert_eq(tcluster_active_mds(tc, victim, sizeof(victim)), 0);
	t_start = tnow_ms();
	for (int k = 0; k < NWORKERS; k++)
		cr_assert_eq(pthread_create(&w[k].th, NULL, worker_main, &w[k]), 0);

	tsleep_ms(KILL_AFTER_MS);       /* pacing: let the load run first */
	unsigned before = ops_after(w, 0);
	dw.pid = tcluster_pid(tc, victim);
	cr_assert_gt(dw.pid, 0);
	cr_assert_eq(pthread_create(&dw.th, NULL, watch_main, &dw), 0);
	t_kill = tnow_ms();
	kret = tcluster_kill(tc, victim);
	t_killed = tnow_ms();
	atomic_store(&dw.stop, 1);
	pthread_join(dw.th, NULL);
	t_dead = atomic_load(&dw.dead_ms);
	if (!t_dead)
		t_dead = t_killed;
	/* Run on until enough ops went through the new active, and for the
	 * planned time at least; bounded. */
	while (tnow_ms() < t_start + RUN_MS ||
	       (ops_after(w, t_dead) < AFTER_KILL_OPS &&
		tnow_ms() < t_dead + AFTER_KILL_MAX_MS)) {
		int failed = 0;

		for (int k = 0; k < NWORKERS; k++)
			failed |= w[k].err != 0;
		if (failed || kret)
			break;
		tsleep_ms(20);
	}
	atomic_store(&stop_workers, 1);
	for (int k = 0; k < NWORKERS; k++)
		pthread_join(w[k].th, NULL);

	/* Failover time: the kill -> the first op completed once the victim
	 * was dead (so through the new active); and the longest pause of
	 * any worker. */
	for (int k = 0; k < NWORKERS; k++) {
		for (unsigned i = 0; i < w[k].ops; i++) {
			int64_t t = w[k].done_ms[i], prev = i ? w[k].done_ms[i - 1] : t_start;

			if (t > t_dead && (first_after < 0 || t < first_after))
				first_after = t;
			if (t - prev > stall)
				stall = t - prev;
			across += prev < t_dead && t > t_dead;
		}
		cr_log_info("worker %d: %u ops (%u creates, %u renames, %u unlinks), %zu "
			    "names now", k, w[k].ops, w[k].creates, w[k].renames, w[k].unlinks,
			    w[k].model.n);
	}
	cr_assert_eq(kret, 0, "could not kill %s", victim);
	for (int k = 0; k < NWORKERS; k++)
		cr_assert_eq(w[k].err, 0, "worker %d: %s failed after %" PRId64 " ms: %s "
			     "(%u ops done; kill at +%" PRId64 " ms)", k, w[k].err_what,
			     w[k].err_after_ms, strerror(-w[k].err), w[k].ops,
			     t_kill - t_start);
	cr_assert_geq(first_after, 0, "no operation completed after the kill");
	cr_log_info("failover: %s SIGKILLed after %u ops (dead %" PRId64 " ms after `dev "
		    "kill` started, which took %" PRId64 " ms); first op through the new "
		    "active %" PRId64 " ms after the kill; longest pause of a worker %" PRId64
		    " ms; %u ops after the kill, %u of them sent before it", victim, before,
		    t_dead - t_kill, t_killed - t_kill, first_after - t_kill, stall,
		    ops_after(w, t_dead), across);
	/* The new active hands out inode numbers none of the old one's. */
	size_t nall = 0;
	uint64_t *all = calloc(NWORKERS * (size_t)MAX_OPS, sizeof(uint64_t));
	cr_assert(all);
	for (int k = 0; k < NWORKERS; k++)
		for (unsigned i = 0; i < w[k].ninos; i++)
			all[nall++] = w[k].inos[i];
	qsort(all, nall, sizeof(all[0]), cmp_u64);
	for (size_t i = 1; i < nall; i++)
		cr_assert_neq(all[i], all[i - 1], "inode %" PRIu64 " was handed out twice",
			      all[i]);
	free(all);
	cr_assert_lt(first_after - t_kill, FAILOVER_BOUND_MS,
		     "failover took %" PRId64 " ms", first_after - t_kill);
	cr_assert_geq(ops_after(w, t_dead), AFTER_KILL_OPS);

	/* Every acknowledged change is there, and only once. */
	cr_assert_eq(tcluster_wait_active_mds(tc, victim, next, sizeof(next), 1000), 0,
		     "%s is still the active", victim);
	for (int k = 0; k < NWORKERS; k++) {
		char what[64];

		snprintf(what, sizeof(what), "worker %d's directory", k);
		assert_listing(w[k].s, w[k].dir, &w[k].model, what);
	}

	/* The killed mds comes back as a standby. */
	cr_assert_eq(tcluster_restart(tc, victim), 0, "%s did not come back", victim);
	cr_assert_eq(tcluster_wait_mds(tc, 2, TCLUSTER_WAIT_MS), 0,
		     "2 mds with one active not listed");
	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &ms), 0);
	unsigned actives = 0;
	for (size_t i = 0; i < ms.n; i++) {
		actives += ms.list[i].active != 0;
		cr_log_info("mds %s at %s%s", ms.list[i].name, ms.list[i].addr,
			    ms.list[i].active ? " (active)" : "");
	}
	cr_assert_eq(ms.n, 2);
	cr_assert_eq(actives, 1);
	cr_assert_str_eq(ms.active, next, "the restarted %s took over from %s", victim, next);
	free(ms.list);
	/* and the namespace still works through the new active */
	for (int k = 0; k < NWORKERS; k++) {
		char what[64];

		snprintf(what, sizeof(what), "worker %d's directory after the restart", k);
		assert_listing(tcluster_client(tc), w[k].dir, &w[k].model, what);
		sdfs_close(w[k].s);
		free(w[k].model.v);
		free(w[k].done_ms);
		free(w[k].inos);
	}
}

/* ---- a zombie active ---- */

static void create(struct sdfs *s, uint64_t dir, const char *name, struct names *model)
{
	int64_t t0 = tnow_ms();
	int ret = sdfs_ns_mknod(s, dir, name, S_IFREG | 0644, 0, 0, 0, NULL);

	cr_assert_eq(ret, 0, "create %s: %s (after %" PRId64 " ms)", name, strerror(-ret),
		     tnow_ms() - t0);
	names_add(model, name);
}

/* A raw NS_MKNOD of @name in @dir to @addr, not waiting for a reply;
 * returns the connection. */
static int zombie_send_create(const char *addr, uint64_t dir, const char *name)
{
	struct sdfs_ns_req q = { .client_id = 0x20b1e, .seq = 1, .ino = dir,
				 .mode = S_IFREG | 0644, .name_len = (uint16_t)strlen(name) };
	uint8_t payload[SDFS_NS_REQ_SIZE + 64];
	struct sdfs_hdr h = { .opcode = SDFS_OP_NS_MKNOD, .req_id = 77, .oid = dir,
			      .payload_len = SDFS_NS_REQ_SIZE + q.name_len };
	int fd = wire_connect(addr);

	proto_ns_req_encode(&q, payload);
	memcpy(payload + SDFS_NS_REQ_SIZE, name, q.name_len);
	cr_assert_eq(wire_send_req(fd, &h, payload), 0);
	return fd;
}

Test(mds_failover, stopped_active_steps_down_when_resumed_and_changes_nothing)
{
	struct sdfs *s = open_client();
	struct names model = { .v = calloc(MAX_NAMES, sizeof(model.v[0])) };
	struct sdfs_mds_status ms;
	struct sdfs_stat st;
	char old[32], next[32], name[32], old_addr[80];
	uint64_t dir, epoch;
	pid_t pid;
	int64_t t0;
	int ret;

	cr_assert(model.v);
	/* This client talks to the active before it stops. */
	cr_assert_eq(sdfs_ns_mkdir(s, ROOT, "z", 0755, 0, 0, &st), 0);
	dir = st.ino;
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "a%d", i);
		create(s, dir, name, &model);
	}
	cr_assert_eq(tcluster_active_mds(tc, old, sizeof(old)), 0);
	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &ms), 0);
	epoch = ms.epoch;
	snprintf(old_addr, sizeof(old_addr), "%s", ms.addr);
	free(ms.list);
	pid = tcluster_pid(tc, old);
	cr_assert_gt(pid, 0);

	cr_assert_eq(tcluster_signal(tc, old, SIGSTOP), 0);
	t0 = tnow_ms();
	ret = tcluster_wait_active_mds(tc, old, next, sizeof(next), TAKEOVER_MS);
	cr_assert_eq(ret, 0, "no other mds became active within %d ms of stopping %s",
		     TAKEOVER_MS, old);
	cr_log_info("%s stopped; %s active after %" PRId64 " ms", old, next, tnow_ms() - t0);
	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &ms), 0);
	cr_assert_gt(ms.epoch, epoch, "the new active did not bump the MDS epoch");
	free(ms.list);

	/* The same client goes on, with the new active. */
	t0 = tnow_ms();
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "b%d", i);
		create(s, dir, name, &model);
	}
	cr_log_info("10 creates through the new active: %" PRId64 " ms", tnow_ms() - t0);
	ret = sdfs_ns_rename(s, dir, "a0", dir, "c0", 0);
	cr_assert_eq(ret, 0, "rename: %s", strerror(-ret));
	snprintf(model.v[0], sizeof(model.v[0]), "c0");
	ret = sdfs_ns_unlink(s, dir, "a1");
	cr_assert_eq(ret, 0, "unlink: %s", strerror(-ret));
	names_del(&model, 1);
	ret = sdfs_ns_mkdir(s, dir, "d", 0755, 0, 0, NULL);
	cr_assert_eq(ret, 0, "mkdir: %s", strerror(-ret));
	names_add(&model, "d");
	assert_listing(s, dir, &model, "before the old active resumes");

	/* A create waits in the stopped one's socket for when it resumes
	 * (the kernel still accepts connections for it). */
	int zfd = zombie_send_create(old_addr, dir, "zombie");

	/* Resumed, the old active steps down and comes back a standby. */
	cr_assert_eq(tcluster_signal(tc, old, SIGCONT), 0);
	t0 = tnow_ms();
	char *line = tcluster_log_line(tc, old, "stepping down", STEP_DOWN_MS);
	cr_assert(line, "%s logged no \"stepping down\" within %d ms of SIGCONT", old,
		  STEP_DOWN_MS);
	cr_log_info("%s after %" PRId64 " ms: %s", old, tnow_ms() - t0, line);
	free(line);
	/* What became of the create it had waiting: never acknowledged
	 * (and, below, never applied). A write it tried was fenced. */
	struct sdfs_hdr r;
	ret = wire_recv_hdr(zfd, &r, STEP_DOWN_MS);
	cr_assert(ret != 0 || r.result != SDFS_RES_OK,
		  "the deposed %s acknowledged a create", old);
	cr_log_info("the create sent to the stopped %s: %s", old,
		    ret ? strerror(-ret) : r.result == SDFS_RES_ERRNO ? strerror((int)r.length)
		    : strerror(-proto_res_to_errno(r.result)));
	close(zfd);
	line = tcluster_log_line(tc, old, "fenced", 0);
	cr_log_info("%s: %s", old, line ? line : "never wrote after it was deposed");
	free(line);
	ret = tcluster_wait_mds(tc, 2, STEP_DOWN_MS);
	cr_assert_eq(ret, 0, "2 mds with one active not listed within %d ms", STEP_DOWN_MS);
	cr_assert_eq(tcluster_pid(tc, old), pid);
	cr_assert(tcluster_running(tc, old), "%s (pid %d) is not running", old, (int)pid);
	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &ms), 0);
	cr_assert_eq(ms.n, 2);
	cr_assert_str_eq(ms.active, next, "%s is no longer the active", next);
	cr_assert(ms.reachable);
	free(ms.list);

	/* Exactly what the client made, seen through either handle. */
	assert_listing(s, dir, &model, "after the old active resumed");
	assert_listing(tcluster_client(tc), dir, &model, "through another handle");
	create(s, dir, "after", &model);
	assert_listing(s, dir, &model, "after one more create");
	sdfs_close(s);
	free(model.v);
}
