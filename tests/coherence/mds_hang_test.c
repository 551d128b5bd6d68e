/*
 * mds_hang_test.c - a hung active mds (SIGSTOP) costs a client one
 * failover, not an error (docs/mds.md "Failover and fencing", "Clients
 * and failover").
 *
 * - mount: after a burst of 16 threads' lookups (the mount keeps their
 *   connections to the active idle: a busy mount's pool), two threads
 *   make, stat, rename, unlink and list files in a
 *   loop while the active is SIGSTOPped for HANG_MS and then resumed,
 *   one on the fixture's mount (timeout_ms 10 s), one on a second mount
 *   with timeout_ms=SHORT_MS, shorter than a failover takes: a request
 *   the stopped mds may have got must not fail while another mds takes
 *   over (EIO only after a whole timeout without any active). No
 *   operation may fail; afterwards every directory holds exactly what
 *   the threads' models say (nothing acknowledged lost, nothing that
 *   failed made). A mkdir sent on a raw connection to the stopped mds
 *   is neither answered with success nor made when it resumes, and it
 *   steps down: the one that took over stays the active.
 * - libsdfs and the CLI: a handle (timeout SHORT_MS) that talked to the
 *   active before it stopped (a burst too) makes and lists directories through the
 *   hang, and `sdfs fs mkdir` / `sdfs fs ls` (the same timeout) run
 *   meanwhile succeed.
 * - the reply cache across a failover: a mkdir sent again with the same
 *   (client id, seq) to the next active gets the first reply.
 * The longest stall per operation is printed, never asserted. Without
 * the fix (a failed attempt left the handle's other idle connections
 * to the hung mds in its pool; the last attempt was cut at the handle's
 * timeout) the first two cases fail: EIO at 10 s on the default mount,
 * at 3 s on the short one and in libsdfs, and a create that returned
 * EIO had been made.
 */
#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"
#include "tests/vol/vt.h"
#include "common/proto.h"
#include "common/sdfs_proto.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HANG_MS 20000
#define BEFORE_MS 2000
#define AFTER_MS 4000
#define WAIT_MS 30000
#define WORKERS 2
#define MAX_FILES 20000
#define SHORT_MS 3000           /* < a failover: ~2 s session + takeover */

static struct tcluster *tc;

static void setup(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .copies = 3, .mds = 2,
						      .mount = 1 });
}

static void teardown(void)
{
	tcluster_stop(tc);
	tc = NULL;
}

TestSuite(mds_hang, .init = setup, .fini = teardown, .timeout = 300);

enum op { OP_CREATE, OP_STAT, OP_RENAME, OP_UNLINK, OP_READDIR, OP_N };
static const char *const op_name[OP_N] = {
	"create", "stat", "rename", "unlink", "readdir",
};

/* 0: absent, 1: f<i>, 2: r<i>; a failed create is remembered apart */
struct worker {
	int id;
	char dir[PATH_MAX + 32];
	uint8_t state[MAX_FILES];
	uint8_t create_failed[MAX_FILES];
	unsigned n;
	unsigned count[OP_N], failed[OP_N];
	int64_t max_ms[OP_N];
	char first_err[256];
};

static atomic_int stop;

static void note(struct worker *w, enum op op, int64_t t0, int ok, const char *what)
{
	int64_t ms = tnow_ms() - t0;

	w->count[op]++;
	if (ms > w->max_ms[op])
		w->max_ms[op] = ms;
	if (!ok) {
		w->failed[op]++;
		if (!w->first_err[0])
			snprintf(w->first_err, sizeof(w->first_err), "%s %s: %s",
				 op_name[op], what, strerror(errno));
	}
}

static const char *wpath(struct worker *w, char c, unsigned i)
{
	static _Thread_local char b[PATH_MAX + 64];

	snprintf(b, sizeof(b), "%s/%c%u", w->dir, c, i);
	return b;
}

/* How many entries readdir shows in @w's dir; -1 with errno on error. */
static long count_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	long n = 0;

	if (!d)
		return -1;
	errno = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	int err = errno;
	closedir(d);
	errno = err;
	return err ? -1 : n;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct stat st;

	while (!atomic_load(&stop) && w->n < MAX_FILES) {
		unsigned i = w->n++;
		int64_t t0 = tnow_ms();
		int fd = open(wpath(w, 'f', i), O_CREAT | O_EXCL | O_WRONLY, 0644);

		note(w, OP_CREATE, t0, fd >= 0, wpath(w, 'f', i));
		if (fd < 0) {
			w->create_failed[i] = 1;
			continue;
		}
		close(fd);
		w->state[i] = 1;
		t0 = tnow_ms();
		note(w, OP_STAT, t0, stat(wpath(w, 'f', i), &st) == 0, wpath(w, 'f', i));
		if (i % 3 == 0) {
			char from[PATH_MAX + 64];

			snprintf(from, sizeof(from), "%s", wpath(w, 'f', i));
			t0 = tnow_ms();
			int ok = rename(from, wpath(w, 'r', i)) == 0;
			note(w, OP_RENAME, t0, ok, from);
			if (ok)
				w->state[i] = 2;
		} else if (i % 3 == 1) {
			t0 = tnow_ms();
			int ok = unlink(wpath(w, 'f', i)) == 0;
			note(w, OP_UNLINK, t0, ok, wpath(w, 'f', i));
			if (ok)
				w->state[i] = 0;
		}
		if (i % 4 == 0) {
			t0 = tnow_ms();
			note(w, OP_READDIR, t0, count_dir(w->dir) >= 0, w->dir);
		}
	}
	return NULL;
}

/* The directory holds exactly what @w's model says; a create that
 * failed must not have been made. Returns the number of mismatches. */
static unsigned check_worker(struct worker *w)
{
	unsigned bad = 0, made_anyway = 0;
	struct stat st;

	for (unsigned i = 0; i < w->n; i++) {
		int f = stat(wpath(w, 'f', i), &st) == 0;
		int r = stat(wpath(w, 'r', i), &st) == 0;
		int want_f = w->state[i] == 1, want_r = w->state[i] == 2;

		if (w->create_failed[i] && (f || r)) {
			made_anyway++;
			cr_log_error("worker %d: create of f%u failed but the file exists",
				     w->id, i);
			continue;
		}
		if (f != want_f || r != want_r) {
			bad++;
			cr_log_error("worker %d: file %u: f%u %s, r%u %s; expected %s",
				     w->id, i, i, f ? "exists" : "absent", i,
				     r ? "exists" : "absent",
				     want_f ? "f" : want_r ? "r" : "none");
		}
	}
	return bad + made_anyway;
}

/*
 * BURST threads look up missing names in @dir for BURST_MS: the mount
 * opens that many connections to the active at once, and keeps them
 * idle afterwards (a busy mount's pool). Each one left to a hung active
 * must not cost a call its timeout.
 */
#define BURST 16
#define BURST_MS 1000

struct burst {
	const char *dir;
	int k;
};

static void *burst_main(void *arg)
{
	struct burst *b = arg;
	int64_t end = tnow_ms() + BURST_MS;
	char p[PATH_MAX + 64];
	struct stat st;

	for (unsigned i = 0; tnow_ms() < end; i++) {
		snprintf(p, sizeof(p), "%s/missing-%d-%u", b->dir, b->k, i);
		stat(p, &st);
	}
	return NULL;
}

static void burst(const char *dir)
{
	struct burst b[BURST];
	pthread_t th[BURST];

	for (int k = 0; k < BURST; k++) {
		b[k] = (struct burst){ .dir = dir, .k = k };
		cr_assert_eq(pthread_create(&th[k], NULL, burst_main, &b[k]), 0);
	}
	for (int k = 0; k < BURST; k++)
		pthread_join(th[k], NULL);
}

/* Is every thread of @pid stopped (state T in /proc/PID/task/N/stat)? */
static int all_stopped(pid_t pid)
{
	char path[64];
	struct dirent *e;
	int n = 0, stopped = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	cr_assert(d, "%s: %s", path, strerror(errno));
	while ((e = readdir(d))) {
		char sp[400], buf[512], *rp;
		ssize_t len;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(sp, sizeof(sp), "%s/%s/stat", path, e->d_name);
		fd = open(sp, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;       /* the thread just exited */
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		rp = strrchr(buf, ')');
		n++;
		if (rp && rp[1] == ' ' && rp[2] == 'T')
			stopped++;
	}
	closedir(d);
	return n > 0 && stopped == n;
}

/* SIGSTOP @name and wait until all its threads are stopped: the group
 * stop spreads from the thread that takes the signal to the others only
 * when that thread runs, so until then the others still serve (on a
 * loaded machine, long enough to take a request sent after kill()). */
static void stop_and_wait(const char *name)
{
	pid_t pid = tcluster_pid(tc, name);
	int64_t end = tnow_ms() + WAIT_MS;

	cr_assert_eq(tcluster_signal(tc, name, SIGSTOP), 0);
	while (!all_stopped(pid)) {
		cr_assert(tnow_ms() < end, "%s (pid %d) is not stopped %d ms after SIGSTOP",
			  name, (int)pid, WAIT_MS);
		tsleep_ms(1);
	}
}

/* NS_MKDIR "zombie" in the root on @c, with a client id of its own. */
static void zombie_send(struct wire_conn *c)
{
	struct sdfs_ns_req r = { .ino = SDFS_ROOT_INO, .mode = 040755,
				 .client_id = 0x5a0b1e5a0b1e, .seq = 1,
				 .name_len = 6 };
	uint8_t pl[SDFS_NS_REQ_SIZE + 6];
	struct sdfs_hdr h = { .opcode = SDFS_OP_NS_MKDIR, .req_id = 77,
			      .oid = SDFS_ROOT_INO, .payload_len = sizeof(pl) };

	proto_ns_req_encode(&r, pl);
	memcpy(pl + SDFS_NS_REQ_SIZE, "zombie", 6);
	cr_assert_eq(wire_conn_send(c, &h, pl), 0);
}

/* The stopped mds's answer to zombie_send once resumed: its result
 * code, or -1 if it closed the connection or said nothing. */
static int zombie_reply(struct wire_conn *c)
{
	uint8_t buf[4096];
	struct sdfs_hdr h;
	int ret = wire_conn_recv(c, &h, buf, sizeof(buf), 5000);

	wire_conn_close(c);
	if (ret) {
		cr_log_info("resumed mds: no answer to the mkdir (%s)", strerror(-ret));
		return -1;
	}
	cr_log_info("resumed mds answered the mkdir with result %u", (unsigned)h.result);
	return h.result;
}

Test(mds_hang, mount_ops_go_on_through_a_stopped_active)
{
	static struct worker w[WORKERS];
	static struct vt_mount2 mb;
	pthread_t th[WORKERS];
	char old[64], now[64], after[64], opts[64], p[PATH_MAX];
	struct sdfs_mds_status ms;
	unsigned failed = 0, bad = 0;

	snprintf(p, sizeof(p), "%s/mntb", tcluster_dir(tc));
	snprintf(opts, sizeof(opts), "timeout_ms=%d", SHORT_MS);
	vt_mount2_start(tc, &mb, p, opts);
	for (int k = 0; k < WORKERS; k++) {
		w[k].id = k;
		snprintf(w[k].dir, sizeof(w[k].dir), "%s/w%d",
			 k == 0 ? tcluster_mnt(tc) : mb.path, k);
		cr_assert_eq(mkdir(w[k].dir, 0755), 0, "%s: %s", w[k].dir, strerror(errno));
	}
	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &ms), 0);
	cr_assert(ms.has_active && ms.reachable);
	snprintf(old, sizeof(old), "%s", ms.active);
	/* authenticated as the admin key now, while the mds answers */
	struct wire_conn zc;
	wire_conn_open(&zc, ms.addr, tcluster_conf(tc));
	free(ms.list);
	for (int k = 0; k < WORKERS; k++)
		burst(w[k].dir);
	atomic_store(&stop, 0);
	for (int k = 0; k < WORKERS; k++)
		cr_assert_eq(pthread_create(&th[k], NULL, worker_main, &w[k]), 0);
	tsleep_ms(BEFORE_MS);

	int64_t t0 = tnow_ms();
	stop_and_wait(old);
	/* a mutation only the stopped mds gets: it must never be made */
	zombie_send(&zc);
	int took = tcluster_wait_active_mds(tc, old, now, sizeof(now), WAIT_MS);
	int64_t took_ms = tnow_ms() - t0;
	if (tnow_ms() - t0 < HANG_MS)
		tsleep_ms((int)(HANG_MS - (tnow_ms() - t0)));
	cr_assert_eq(tcluster_signal(tc, old, SIGCONT), 0);
	int zr = zombie_reply(&zc);
	tsleep_ms(AFTER_MS);
	atomic_store(&stop, 1);
	for (int k = 0; k < WORKERS; k++)
		pthread_join(th[k], NULL);
	cr_assert_eq(took, 0, "no mds took over from the stopped %s", old);
	cr_log_info("%s stopped; %s active after %" PRId64 " ms", old, now, took_ms);

	for (int op = 0; op < OP_N; op++) {
		unsigned c = 0, f = 0;
		int64_t mx = 0;

		for (int k = 0; k < WORKERS; k++) {
			c += w[k].count[op];
			f += w[k].failed[op];
			if (w[k].max_ms[op] > mx)
				mx = w[k].max_ms[op];
		}
		cr_log_info("%-8s %6u ops, %u failed, max stall %.1f s", op_name[op], c, f,
			    (double)mx / 1000);
		failed += f;
	}
	for (int k = 0; k < WORKERS; k++) {
		if (w[k].first_err[0])
			cr_log_error("worker %d: first error: %s", k, w[k].first_err);
		bad += check_worker(&w[k]);
	}
	struct stat zst;
	char zpath[PATH_MAX + 16];
	snprintf(zpath, sizeof(zpath), "%s/zombie", tcluster_mnt(tc));
	int zmade = stat(zpath, &zst) == 0;
	vt_mount2_stop(&mb);
	cr_assert_eq(bad, 0, "%u files differ from what the operations' results say", bad);
	cr_assert_neq(zr, SDFS_RES_OK, "the resumed %s answered a mkdir with success", old);
	cr_assert_eq(zmade, 0, "the resumed %s made a directory after it was deposed", old);
	cr_assert_eq(failed, 0, "%u operations failed while %s was stopped", failed, old);

	/* The resumed mds stepped down: the successor is still the active,
	 * and both are running (the old one as a standby again). */
	cr_assert_eq(tcluster_wait_mds(tc, 2, WAIT_MS), 0);
	cr_assert_eq(tcluster_active_mds(tc, after, sizeof(after)), 0);
	cr_assert_str_eq(after, now, "the resumed %s is the active again", old);
	char *line = tcluster_log_line(tc, old, "stepping down", WAIT_MS);
	cr_assert(line, "the resumed %s did not step down", old);
	cr_log_info("%s after SIGCONT: %s", old, line);
	free(line);
}

struct lister {
	struct sdfs *s;
	uint64_t dir;
	unsigned n, failed;
	int64_t max_mkdir_ms, max_ls_ms;
	int first_err;
};

static int count_ent(void *arg, const char *name, uint64_t ino, uint32_t type,
		     uint64_t cookie, const struct sdfs_stat *st)
{
	(void)name; (void)ino; (void)type; (void)cookie; (void)st;
	(*(unsigned *)arg)++;
	return 0;
}

/* One mkdir and one readdir through the handle. */
static void lib_round(struct lister *l)
{
	char name[32];
	unsigned n = 0;
	int64_t t0 = tnow_ms();
	int ret;

	snprintf(name, sizeof(name), "d%u", l->n);
	ret = sdfs_ns_mkdir(l->s, l->dir, name, 0755, 0, 0, NULL);
	if (tnow_ms() - t0 > l->max_mkdir_ms)
		l->max_mkdir_ms = tnow_ms() - t0;
	if (ret) {
		l->failed++;
		if (!l->first_err)
			l->first_err = ret;
		cr_log_error("sdfs_ns_mkdir %s: %s", name, strerror(-ret));
	} else {
		l->n++;
	}
	t0 = tnow_ms();
	ret = sdfs_ns_readdir(l->s, l->dir, 0, 0, count_ent, &n);
	if (tnow_ms() - t0 > l->max_ls_ms)
		l->max_ls_ms = tnow_ms() - t0;
	if (ret) {
		l->failed++;
		if (!l->first_err)
			l->first_err = ret;
		cr_log_error("sdfs_ns_readdir: %s", strerror(-ret));
	} else if (n != l->n) {
		l->failed++;
		cr_log_error("readdir shows %u entries, %u were made", n, l->n);
	}
}

/* The libsdfs counterpart of burst(): BURST threads of lookups. */
static void *lib_burst_main(void *arg)
{
	struct lister *l = arg;
	int64_t end = tnow_ms() + BURST_MS;
	struct sdfs_stat st;

	for (unsigned i = 0; tnow_ms() < end; i++) {
		char name[32];

		snprintf(name, sizeof(name), "missing-%u", i);
		sdfs_ns_lookup(l->s, l->dir, name, &st);
	}
	return NULL;
}

/* `sdfs fs mkdir` and `sdfs fs ls` in a loop, on a thread of its own
 * so that the first runs while the stopped mds is still published. */
struct cli_loop {
	const char *conf;
	int64_t until;
	unsigned n, failed;
	int64_t max_ms;
};

static void *cli_main(void *arg)
{
	struct cli_loop *c = arg;

	while (tnow_ms() < c->until) {
		char *out = NULL, *err = NULL;
		int64_t c0 = tnow_ms();
		int rc = tsdfs_run(&out, &err, "-c %s fs mkdir /cli%u", c->conf, c->n);

		if (rc) {
			c->failed++;
			cr_log_error("sdfs fs mkdir /cli%u: exit %d: %s", c->n, rc,
				     err ? err : "");
		}
		free(out);
		free(err);
		out = err = NULL;
		rc = tsdfs_run(&out, &err, "-c %s fs ls /", c->conf);
		if (rc || !out || !strstr(out, "lib")) {
			c->failed++;
			cr_log_error("sdfs fs ls /: exit %d: %s", rc, err ? err : "");
		}
		free(out);
		free(err);
		if (tnow_ms() - c0 > c->max_ms)
			c->max_ms = tnow_ms() - c0;
		c->n++;
		tsleep_ms(300);
	}
	return NULL;
}

Test(mds_hang, libsdfs_and_cli_go_on_through_a_stopped_active)
{
	struct lister l = { 0 };
	struct cli_loop cl = { 0 };
	struct sdfs_stat st;
	char old[64], conf[PATH_MAX];
	pthread_t th;
	int64_t t0;
	FILE *f;

	cr_assert_eq(sdfs_open(tcluster_conf(tc), &l.s, NULL, 0), 0);
	sdfs_set_timeout(l.s, SHORT_MS);
	/* the CLI's config: the cluster's, with the short timeout */
	snprintf(conf, sizeof(conf), "%s/short.conf", tcluster_dir(tc));
	f = fopen(conf, "w");
	cr_assert(f);
	FILE *in = fopen(tcluster_conf(tc), "r");
	cr_assert(in);
	for (int c; (c = fgetc(in)) != EOF;)
		fputc(c, f);
	fclose(in);
	fprintf(f, "timeout_ms = %d\n", SHORT_MS);
	fclose(f);

	cr_assert_eq(sdfs_ns_mkdir(l.s, SDFS_ROOT_INO, "lib", 0755, 0, 0, &st), 0);
	l.dir = st.ino;
	pthread_t bt[BURST];
	for (int k = 0; k < BURST; k++)
		cr_assert_eq(pthread_create(&bt[k], NULL, lib_burst_main, &l), 0);
	for (int k = 0; k < BURST; k++)
		pthread_join(bt[k], NULL);
	lib_round(&l);          /* the handle knows the active now */
	cr_assert_eq(tcluster_active_mds(tc, old, sizeof(old)), 0);
	cr_assert_eq(tcluster_signal(tc, old, SIGSTOP), 0);
	t0 = tnow_ms();
	cl.conf = conf;
	cl.until = t0 + HANG_MS;
	cr_assert_eq(pthread_create(&th, NULL, cli_main, &cl), 0);
	while (tnow_ms() - t0 < HANG_MS)
		lib_round(&l);
	pthread_join(th, NULL);
	cr_assert_eq(tcluster_signal(tc, old, SIGCONT), 0);
	lib_round(&l);
	cr_log_info("libsdfs: %u mkdir rounds, max stall mkdir %.1f s, readdir %.1f s; "
		    "CLI: %u mkdir+ls, max %.1f s", l.n, (double)l.max_mkdir_ms / 1000,
		    (double)l.max_ls_ms / 1000, cl.n, (double)cl.max_ms / 1000);
	sdfs_close(l.s);
	cr_assert_eq(l.failed, 0, "%u libsdfs calls failed (first: %s)", l.failed,
		     strerror(-l.first_err));
	cr_assert_eq(cl.failed, 0, "%u CLI commands failed", cl.failed);
}

/* NS_MKDIR @name in the root as (@client, @seq) on a new connection to
 * @addr (as the cluster's admin key): the reply's result, the errno of
 * an ERRNO result into *@err and the new inode into *@ino (when OK). */
static int raw_mkdir(const char *addr, uint64_t client, uint64_t seq, const char *name,
		     int *err, uint64_t *ino)
{
	uint8_t rep[4096];
	struct sdfs_ns_req r = { .ino = SDFS_ROOT_INO, .mode = 040755, .client_id = client,
				 .seq = seq, .name_len = (uint16_t)strlen(name) };
	uint8_t pl[SDFS_NS_REQ_SIZE + 64];
	struct sdfs_hdr h = { .opcode = SDFS_OP_NS_MKDIR, .req_id = seq,
			      .oid = SDFS_ROOT_INO,
			      .payload_len = (uint32_t)(SDFS_NS_REQ_SIZE + r.name_len) };
	struct sdfs_hdr reply;
	struct wire_conn c;
	int ret;

	wire_conn_open(&c, addr, tcluster_conf(tc));
	proto_ns_req_encode(&r, pl);
	memcpy(pl + SDFS_NS_REQ_SIZE, name, r.name_len);
	cr_assert_eq(wire_conn_send(&c, &h, pl), 0);
	ret = wire_conn_recv(&c, &reply, rep, sizeof(rep), 10000);
	cr_assert_eq(ret, 0, "no reply from %s: %s", addr, strerror(-ret));
	*err = reply.result == SDFS_RES_ERRNO ? (int)reply.length : 0;
	*ino = 0;
	if (reply.payload_len) {
		struct sdfs_attr a;

		if (reply.result == SDFS_RES_OK &&
		    proto_attr_decode(rep, reply.payload_len, &a) == 0)
			*ino = a.ino;
	}
	wire_conn_close(&c);
	return reply.result;
}

/*
 * The answer to a mutation the old active made but whose reply the
 * client never got comes from the reply cache of the next active (the
 * record is in the same database batch as the change): the same (client
 * id, seq) sent again after the failover gets the first reply, not
 * EEXIST; a new seq does get EEXIST.
 */
Test(mds_hang, a_retry_after_the_failover_gets_the_first_reply)
{
	struct sdfs_mds_status ms;
	const uint64_t client = 0x7e57c0ffee;
	char old[64], now[64], addr[80];
	uint64_t ino, ino2;
	int err;

	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &ms), 0);
	cr_assert(ms.has_active && ms.reachable);
	snprintf(old, sizeof(old), "%s", ms.active);
	snprintf(addr, sizeof(addr), "%s", ms.addr);
	free(ms.list);
	cr_assert_eq(raw_mkdir(addr, client, 1, "once", &err, &ino), SDFS_RES_OK,
		     "mkdir: errno %d", err);
	cr_assert_eq(tcluster_signal(tc, old, SIGSTOP), 0);
	cr_assert_eq(tcluster_wait_active_mds(tc, old, now, sizeof(now), WAIT_MS), 0);
	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &ms), 0);
	snprintf(addr, sizeof(addr), "%s", ms.addr);
	free(ms.list);

	int res = raw_mkdir(addr, client, 1, "once", &err, &ino2);
	cr_assert_eq(res, SDFS_RES_OK, "%s answered the retried mkdir with result %d "
		     "(errno %d) instead of the first reply", now, res, err);
	cr_assert_eq(ino2, ino, "the retry's reply names inode %" PRIu64 ", the first %"
		     PRIu64, ino2, ino);
	res = raw_mkdir(addr, client, 2, "once", &err, &ino2);
	cr_assert_eq(res, SDFS_RES_ERRNO);
	cr_assert_eq(err, EEXIST, "a new seq: errno %d", err);
	cr_assert_eq(tcluster_signal(tc, old, SIGCONT), 0);
	cr_log_info("mkdir (client, 1) made ino %" PRIu64 " on %s; resent to %s after "
		    "the failover: the same reply", ino, old, now);
}
