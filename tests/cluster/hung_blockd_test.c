/*
 * hung_blockd_test.c - a block daemon that stops answering must not
 * stall writes past the replica bound (docs/recovery.md, "Unresponsive
 * nodes"), and the node that missed them must never serve old data:
 *
 *   - hung.writes_go_on_*: one blockd SIGSTOPped for 15 s while a thread
 *     writes objects (mds-kind ones straight to every replica, raw ones
 *     through their primary) and another reads them back: no write
 *     fails, every read returns the last acknowledged content or a newer
 *     one, and after SIGCONT all three copies of every object agree;
 *   - partition.*: a blockd cut off from clients and peers (an nft rule
 *     on its port) while its ZooKeeper session stays live: a write goes
 *     on without it once a client reported it, and when the rule goes
 *     the node refuses the old epoch and never returns the old data,
 *     until it has rejoined and recovered (where nft cannot add a rule,
 *     or with SDFS_TEST_NO_NFT=1, the test reports the node itself, as
 *     a client would, and checks the same);
 *   - hung.a_primary_with_queued_writes_*: a replica SIGSTOPped while
 *     several writes of one object through its primary arrive at once
 *     (they queue for the object's stripe, each behind one waiting for
 *     the replica): every write succeeds, and the healthy primary is
 *     never reported unresponsive (it answers every one within the
 *     client's bound);
 *   - hung_mds.*: the same SIGSTOP while the mount creates files (every
 *     create is a write of the mds's database): no create fails;
 *   - zk_pause.*: the cluster's ZooKeeper SIGSTOPped for ZK_PAUSE_MS
 *     (shorter than the 2 s session) under the same writer and reader:
 *     no write fails, no read is wrong; how many block daemons let
 *     their lease lapse is printed (it depends on lease_ms: the number
 *     docs/recovery.md chose it by);
 *   - cut_off.*: a client alone cut off from every block daemon (a
 *     process of its own with another uid; an nft rule drops that uid's
 *     packets to the daemons' ports): its write fails, but it reports
 *     nobody (no replica answered: the fault is its own), every node
 *     stays up, and another client writes and reads on meanwhile
 *     (skipped without root or nft);
 *   - suspect_limit.*: a client that reaches no block daemon reports
 *     every one of them at once (three reporters racing, as a client cut
 *     off from all of them would if it did not hold back): at most
 *     copies - 1 markers are made, and another client's writes and reads
 *     go on throughout; a map write that relied on a marker fails once
 *     the marker is gone.
 *
 * The longest single stall is printed, never asserted.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/coord_suspect.h"
#include "common/oid.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"

#define NBLOCKD 3
#define COPIES 3
#define NOBJ 32
#define OBJ_LEN 8192
#define STOP_MS 15000
#define VICTIM "blockd.1"

static struct tcluster *tc;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = NBLOCKD, .copies = COPIES,
						     .out_grace_s = 300 });
}

static void up_mount(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = NBLOCKD, .copies = COPIES,
						     .out_grace_s = 300, .mds = 1,
						     .mount = 1 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(hung, .init = up, .fini = down, .timeout = 240);
TestSuite(hung_mds, .init = up_mount, .fini = down, .timeout = 240);

/* Half the objects mds-kind (written to every replica by the client),
 * half raw (through their primary, blockd/order.c). */
static uint64_t oid_of(unsigned i)
{
	return oid_make(i % 2 ? OID_KIND_MDS : OID_KIND_RAW, 0x7e57 + i, 0);
}

/* Content of version @seq of object @i: its number, then bytes from both. */
static void fill(unsigned char *buf, unsigned i, uint64_t seq)
{
	memcpy(buf, &seq, sizeof(seq));
	tfill_random(buf + sizeof(seq), OBJ_LEN - sizeof(seq), seq * 1000003u + i);
}

static int is_version(const unsigned char *buf, unsigned i, uint64_t *seq)
{
	static __thread unsigned char want[OBJ_LEN];

	memcpy(seq, buf, sizeof(*seq));
	fill(want, i, *seq);
	return memcmp(buf, want, OBJ_LEN) == 0;
}

/* Every object's copies all present, and equal (size and checksum). */
static void assert_converged(const char *when)
{
	struct sdfs *s = tcluster_client(tc);
	int64_t deadline = tnow_ms() + TCLUSTER_WAIT_MS;

	for (unsigned i = 0; i < NOBJ; i++) {
		struct sdfs_replica r[COPIES];
		size_t n = 0;
		int same = 0;

		while (!same) {
			cr_assert_eq(sdfs_obj_locate(s, oid_of(i), r, COPIES, &n), 0);
			cr_assert_eq(n, COPIES);
			same = 1;
			for (size_t k = 0; k < n; k++)
				same &= r[k].result == 0 && r[k].size == r[0].size &&
					r[k].csum == r[0].csum;
			if (!same && tnow_ms() > deadline)
				cr_assert_fail("%s: object %u: copies differ (node %u: %d %" PRIx64
					       ", node %u: %d %" PRIx64 ", node %u: %d %" PRIx64 ")",
					       when, i, r[0].node_id, r[0].result, r[0].csum,
					       r[1].node_id, r[1].result, r[1].csum, r[2].node_id,
					       r[2].result, r[2].csum);
			if (!same)
				tsleep_ms(200);
		}
	}
}

/* ---- hung: a SIGSTOPped blockd under writes and reads ---- */

struct load {
	struct sdfs *s;
	pthread_mutex_t mu;
	uint64_t acked[NOBJ], inflight[NOBJ];
	atomic_int stop;
	/* writer */
	unsigned writes, write_fails;
	int first_err;
	int64_t max_stall_ms;
	/* reader */
	unsigned reads, read_errs, bad_reads;
	char bad[256];
};

static void *writer(void *arg)
{
	struct load *ld = arg;
	static unsigned char buf[OBJ_LEN];
	uint64_t seq = 0;

	for (unsigned i = 0; !atomic_load(&ld->stop); i = (i + 1) % NOBJ) {
		int64_t t0;
		int r;

		seq++;
		fill(buf, i, seq);
		pthread_mutex_lock(&ld->mu);
		ld->inflight[i] = seq;
		pthread_mutex_unlock(&ld->mu);
		t0 = tnow_ms();
		r = sdfs_obj_write(ld->s, oid_of(i), buf, OBJ_LEN, 0);
		pthread_mutex_lock(&ld->mu);
		if (tnow_ms() - t0 > ld->max_stall_ms)
			ld->max_stall_ms = tnow_ms() - t0;
		ld->writes++;
		if (r) {
			ld->write_fails++;
			if (!ld->first_err)
				ld->first_err = r;
		} else {
			ld->acked[i] = seq;
		}
		pthread_mutex_unlock(&ld->mu);
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct load *ld = arg;
	static unsigned char buf[OBJ_LEN];

	for (unsigned i = 0; !atomic_load(&ld->stop); i = (i + 7) % NOBJ) {
		uint64_t lo, hi, seq = 0;
		ssize_t got;

		pthread_mutex_lock(&ld->mu);
		lo = ld->acked[i];
		pthread_mutex_unlock(&ld->mu);
		if (!lo) {
			tsleep_ms(5);
			continue;
		}
		got = sdfs_obj_read(ld->s, oid_of(i), buf, OBJ_LEN, 0);
		pthread_mutex_lock(&ld->mu);
		hi = ld->inflight[i];
		ld->reads++;
		if (got < 0) {
			/* Bounding reads is another change's: count, go on. */
			ld->read_errs++;
		} else if (got != OBJ_LEN || !is_version(buf, i, &seq) || seq < lo || seq > hi) {
			if (!ld->bad_reads++)
				snprintf(ld->bad, sizeof(ld->bad), "object %u: read %zd bytes, "
					 "version %" PRIu64 ", acknowledged %" PRIu64 ", newest "
					 "sent %" PRIu64, i, got, seq, lo, hi);
		}
		pthread_mutex_unlock(&ld->mu);
	}
	return NULL;
}

Test(hung, writes_go_on_while_a_blockd_is_stopped)
{
	static struct load ld;
	static unsigned char buf[OBJ_LEN];
	pthread_t w, r;
	uint64_t epoch;

	ld.s = tcluster_client(tc);
	pthread_mutex_init(&ld.mu, NULL);
	cr_assert_eq(pthread_create(&w, NULL, writer, &ld), 0);
	cr_assert_eq(pthread_create(&r, NULL, reader, &ld), 0);
	tsleep_ms(2000);        /* pacing: some load before the stop */
	epoch = tcluster_epoch(tc);
	cr_assert_eq(tcluster_signal(tc, VICTIM, SIGSTOP), 0);
	tsleep_ms(STOP_MS);     /* the scenario: stopped this long */
	cr_assert_eq(tcluster_signal(tc, VICTIM, SIGCONT), 0);
	tsleep_ms(2000);
	atomic_store(&ld.stop, 1);
	pthread_join(w, NULL);
	pthread_join(r, NULL);

	cr_log_info("max stall %.1f s over %u writes (%u failed); %u reads, %u failed, "
		    "%u wrong; epoch %" PRIu64 " -> %" PRIu64, ld.max_stall_ms / 1000.0,
		    ld.writes, ld.write_fails, ld.reads, ld.read_errs, ld.bad_reads, epoch,
		    tcluster_epoch(tc));
	printf("hung.writes_go_on: max stall %.1f s\n", ld.max_stall_ms / 1000.0);
	cr_assert_eq(ld.write_fails, 0, "%u writes failed, the first with %s",
		     ld.write_fails, strerror(-ld.first_err));
	cr_assert_eq(ld.bad_reads, 0, "%u reads returned the wrong version: %s",
		     ld.bad_reads, ld.bad);
	cr_assert_gt(tcluster_epoch(tc), epoch, "the map never changed");

	cr_assert_eq(tcluster_wait_nodes_up(tc, NBLOCKD, 60000), 0);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	for (unsigned i = 0; i < NOBJ; i++) {
		uint64_t seq;

		cr_assert_eq(sdfs_obj_read(ld.s, oid_of(i), buf, OBJ_LEN, 0), OBJ_LEN);
		cr_assert(is_version(buf, i, &seq) && seq == ld.acked[i],
			  "object %u reads version %" PRIu64 ", last acknowledged %" PRIu64,
			  i, seq, ld.acked[i]);
	}
	assert_converged("after SIGCONT");
}

/* ---- hung: writes queued on a primary behind a hung replica ---- */

#define NQUEUED 4

struct queued {
	struct sdfs *s;
	uint64_t oid;
	unsigned k;
	int ret;
};

static void *queued_writer(void *arg)
{
	struct queued *q = arg;
	unsigned char buf[OBJ_LEN];

	fill(buf, q->k, 1);
	q->ret = sdfs_obj_write(q->s, q->oid, buf, OBJ_LEN, (uint64_t)q->k * OBJ_LEN);
	return NULL;
}

Test(hung, a_primary_with_queued_writes_is_not_reported)
{
	struct sdfs *s = tcluster_client(tc);
	uint64_t oid = oid_make(OID_KIND_RAW, 0x9a11, 0);
	static unsigned char buf[OBJ_LEN];
	struct sdfs_replica r[COPIES];
	struct queued q[NQUEUED];
	pthread_t t[NQUEUED];
	char primary[32], victim[32];
	size_t n = 0;

	fill(buf, 0, 1);
	cr_assert_eq(sdfs_obj_write(s, oid, buf, OBJ_LEN, 0), 0);
	cr_assert_eq(sdfs_obj_locate(s, oid, r, COPIES, &n), 0);
	cr_assert_eq(n, COPIES);
	/* placement order: the first up holder is the primary */
	cr_assert(tcluster_node_name(tc, r[0].node_id, primary, sizeof(primary)));
	cr_assert(tcluster_node_name(tc, r[1].node_id, victim, sizeof(victim)));
	cr_assert_eq(tcluster_signal(tc, victim, SIGSTOP), 0);
	for (unsigned k = 0; k < NQUEUED; k++) {
		q[k] = (struct queued){ .s = s, .oid = oid, .k = k };
		cr_assert_eq(pthread_create(&t[k], NULL, queued_writer, &q[k]), 0);
	}
	for (unsigned k = 0; k < NQUEUED; k++)
		pthread_join(t[k], NULL);
	cr_assert_eq(tcluster_signal(tc, victim, SIGCONT), 0);

	char *line = tcluster_log_line(tc, primary, "reported unresponsive; serving nothing", 0);

	cr_log_info("%s (primary) with %s (replica) stopped: %u writes of one object "
		    "at once; primary reported: %s", primary, victim, NQUEUED,
		    line ? line : "no");
	for (unsigned k = 0; k < NQUEUED; k++)
		cr_expect_eq(q[k].ret, 0, "write %u: %s", k, strerror(-q[k].ret));
	cr_expect_null(line, "the healthy primary %s was reported: %s", primary, line);
	free(line);
}

/* ---- partition: a node clients cannot reach, ZooKeeper can ---- */

static char nft_table[64];

static int nft(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int nft(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void unblock(void)
{
	if (nft_table[0])
		nft("nft delete table inet %s 2>/dev/null", nft_table);
	nft_table[0] = '\0';
}

/* Drop every packet to @port (the node's clients and peers); 0 or not. */
static int block_port(unsigned port)
{
	snprintf(nft_table, sizeof(nft_table), "sdfs_test_%d", (int)getpid());
	if (nft("nft add table inet %s 2>/dev/null && nft add chain inet %s input "
		"'{ type filter hook input priority 0; }' && nft add rule inet %s input "
		"tcp dport %u drop", nft_table, nft_table, nft_table, port) != 0) {
		unblock();
		return -1;
	}
	return 0;
}

/* Without nft: report @name the way a client does (its marker), so the
 * rest of the test still runs the path after the report. */
static void report_directly(const char *name, uint64_t epoch)
{
	struct sdfs_conf conf;
	struct coord *c;
	char err[256];

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(coord_open(conf.zk, conf.cluster, 2000, 10000, NULL, NULL, &c), 0);
	cr_assert_eq(coord_suspect_report(c, tcluster_node_id(tc, name), epoch,
					  "test:hung_blockd", COPIES), 0);
	coord_close(c);
}

static void partition_fini(void)
{
	unblock();
	tcluster_stop(tc);
}

TestSuite(partition, .init = up, .fini = partition_fini, .timeout = 240);

/* One OBJ_READ of object @i from the node at @addr in @epoch: the
 * reply's result; on SDFS_RES_OK the content goes to @buf. */
static int read_from(const char *addr, unsigned i, uint32_t epoch, unsigned char *buf)
{
	static uint64_t req_id = 1;
	struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_READ, .oid = oid_of(i),
			      .length = OBJ_LEN, .epoch = epoch, .req_id = req_id++ }, rh;
	int fd = wire_connect(addr), res;

	cr_assert_eq(wire_send_req(fd, &h, NULL), 0);
	cr_assert_eq(wire_recv_hdr(fd, &rh, 10000), 0, "no answer from %s", addr);
	res = (int)rh.result;
	if (res == SDFS_RES_OK) {
		cr_assert_eq(rh.payload_len, OBJ_LEN);
		cr_assert_eq(wire_recv(fd, buf, OBJ_LEN, 10000), 0);
	} else if (rh.payload_len) {
		cr_assert_eq(wire_skip(fd, rh.payload_len, 10000), 0);
	}
	close(fd);
	return res;
}

Test(partition, a_node_cut_off_from_clients_never_serves_what_it_missed)
{
	struct sdfs *s = tcluster_client(tc);
	static unsigned char buf[OBJ_LEN];
	char addr[80], *colon;
	uint64_t e1, e2, seq;
	int64_t max_stall = 0;
	unsigned refused = 0;

	for (unsigned i = 0; i < NOBJ; i++) {
		fill(buf, i, 1);
		cr_assert_eq(sdfs_obj_write(s, oid_of(i), buf, OBJ_LEN, 0), 0);
	}
	e1 = tcluster_epoch(tc);
	tcluster_node_addr(tc, VICTIM, addr, sizeof(addr));
	colon = strrchr(addr, ':');
	cr_assert(colon);
	if (!getenv("SDFS_TEST_NO_NFT") && block_port((unsigned)atoi(colon + 1)) == 0) {
		cr_log_info("%s (%s) cut off from clients and peers; its ZooKeeper "
			    "session stays", VICTIM, addr);
	} else {
		cr_log_info("no nft rule here (not root, no nf_tables, or "
			    "SDFS_TEST_NO_NFT): reporting %s directly", VICTIM);
		report_directly(VICTIM, e1);
		/* Reachable, it would take the writes before it saw the
		 * marker: write once the map has dropped it. */
		cr_assert_eq(tcluster_wait_epoch_above(tc, e1, TCLUSTER_WAIT_MS), 0);
	}

	/* Version 2 of everything: acknowledged without the cut-off node. */
	for (unsigned i = 0; i < NOBJ; i++) {
		int64_t t0 = tnow_ms();
		int r;

		fill(buf, i, 2);
		r = sdfs_obj_write(s, oid_of(i), buf, OBJ_LEN, 0);
		if (tnow_ms() - t0 > max_stall)
			max_stall = tnow_ms() - t0;
		cr_assert_eq(r, 0, "object %u: write with %s cut off: %s", i, VICTIM,
			     strerror(-r));
	}
	printf("partition: max stall %.1f s\n", max_stall / 1000.0);
	cr_log_info("partition: max stall %.1f s", max_stall / 1000.0);
	e2 = tcluster_epoch(tc);
	cr_assert_gt(e2, e1, "the map never dropped %s", VICTIM);
	cr_assert_eq(tcluster_wait_state(tc, VICTIM, "down", 5000), 0,
		     "%s is not down in epoch %" PRIu64 " (its session is live)", VICTIM, e2);
	char *line = tcluster_log_line(tc, VICTIM, "reported unresponsive", 10000);
	cr_assert(line, "%s never saw its marker", VICTIM);
	free(line);

	/* The rule goes: the node answers again, but holds version 1 only. */
	unblock();
	for (unsigned i = 0; i < NOBJ; i++) {
		int res = read_from(addr, i, (uint32_t)e1, buf);

		cr_assert_neq(res, SDFS_RES_OK, "object %u: %s served epoch %" PRIu64
			      " after epoch %" PRIu64 " was written without it", i, VICTIM,
			      e1, e2);
		res = read_from(addr, i, (uint32_t)tcluster_epoch(tc), buf);
		if (res != SDFS_RES_OK) {
			refused++;
			continue;
		}
		cr_assert(is_version(buf, i, &seq) && seq == 2,
			  "object %u: %s served version %" PRIu64 ", the acknowledged one "
			  "is 2", i, VICTIM, seq);
	}
	cr_log_info("%u of %u reads at the current epoch refused while %s rejoins",
		    refused, NOBJ, VICTIM);

	/* It comes back up, and its copies are current. */
	cr_assert_eq(tcluster_wait_state(tc, VICTIM, "up", 90000), 0);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	for (unsigned i = 0; i < NOBJ; i++) {
		int64_t deadline = tnow_ms() + TCLUSTER_WAIT_MS;
		int res;

		while ((res = read_from(addr, i, (uint32_t)tcluster_epoch(tc), buf)) !=
		       SDFS_RES_OK && tnow_ms() < deadline)
			tsleep_ms(200);
		cr_assert_eq(res, SDFS_RES_OK, "object %u: %s still refuses", i, VICTIM);
		cr_assert(is_version(buf, i, &seq) && seq == 2,
			  "object %u: %s serves version %" PRIu64 " after rejoining", i,
			  VICTIM, seq);
	}
	assert_converged("after the partition");
}

/* ---- zk_pause: a short ZooKeeper stall under load ---- */

#define ZK_PAUSE_MS 1200

static void up_private_zk(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = NBLOCKD, .copies = COPIES,
						     .out_grace_s = 300, .private_zk = 1 });
}

TestSuite(zk_pause, .init = up_private_zk, .fini = down, .timeout = 240);

Test(zk_pause, writes_go_on_through_a_short_zookeeper_stall)
{
	static const char *const names[NBLOCKD] = { "blockd.0", "blockd.1", "blockd.2" };
	static struct load ld;
	pthread_t w, r;
	unsigned lapsed = 0;

	ld.s = tcluster_client(tc);
	pthread_mutex_init(&ld.mu, NULL);
	cr_assert_eq(pthread_create(&w, NULL, writer, &ld), 0);
	cr_assert_eq(pthread_create(&r, NULL, reader, &ld), 0);
	tsleep_ms(2000);        /* pacing: some load before the pause */
	cr_assert_eq(tcluster_signal(tc, "zk", SIGSTOP), 0);
	tsleep_ms(ZK_PAUSE_MS);
	cr_assert_eq(tcluster_signal(tc, "zk", SIGCONT), 0);
	tsleep_ms(3000);
	atomic_store(&ld.stop, 1);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	for (unsigned k = 0; k < NBLOCKD; k++) {
		char *line = tcluster_log_line(tc, names[k], "no ZooKeeper answer", 0);

		lapsed += line != NULL;
		free(line);
	}
	cr_log_info("ZooKeeper stopped %d ms: %u of %u blockd let their lease lapse; "
		    "max stall %.1f s over %u writes (%u failed); %u reads, %u failed, "
		    "%u wrong", ZK_PAUSE_MS, lapsed, NBLOCKD, ld.max_stall_ms / 1000.0,
		    ld.writes, ld.write_fails, ld.reads, ld.read_errs, ld.bad_reads);
	printf("zk_pause: %u of %u blockd lapsed, max stall %.1f s\n", lapsed, NBLOCKD,
	       ld.max_stall_ms / 1000.0);
	cr_assert_eq(ld.write_fails, 0, "%u writes failed, the first with %s",
		     ld.write_fails, strerror(-ld.first_err));
	cr_assert_eq(ld.bad_reads, 0, "%u reads returned the wrong version: %s",
		     ld.bad_reads, ld.bad);
	cr_assert_eq(tcluster_wait_nodes_up(tc, NBLOCKD, 60000), 0);
}

/* ---- hung_mds: creates through the mount while a blockd is stopped ---- */

struct creates {
	const char *mnt;
	atomic_int stop;
	unsigned made, fails;
	int first_errno;
	int64_t max_stall_ms;
};

static void *creator(void *arg)
{
	struct creates *c = arg;
	char path[4096];

	while (!atomic_load(&c->stop)) {
		int64_t t0 = tnow_ms();
		int fd;

		snprintf(path, sizeof(path), "%s/f%u", c->mnt, c->made + c->fails);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd >= 0 && close(fd) == 0) {
			c->made++;
		} else {
			if (!c->fails++)
				c->first_errno = errno;
		}
		if (tnow_ms() - t0 > c->max_stall_ms)
			c->max_stall_ms = tnow_ms() - t0;
	}
	return NULL;
}

Test(hung_mds, creates_go_on_while_a_blockd_is_stopped)
{
	static struct creates c;
	char path[4096];
	struct stat st;
	pthread_t t;

	c.mnt = tcluster_mnt(tc);
	cr_assert_eq(pthread_create(&t, NULL, creator, &c), 0);
	tsleep_ms(2000);        /* pacing: some creates before the stop */
	cr_assert_eq(tcluster_signal(tc, VICTIM, SIGSTOP), 0);
	tsleep_ms(STOP_MS);
	cr_assert_eq(tcluster_signal(tc, VICTIM, SIGCONT), 0);
	tsleep_ms(2000);
	atomic_store(&c.stop, 1);
	pthread_join(t, NULL);

	printf("hung_mds.creates: max stall %.1f s\n", c.max_stall_ms / 1000.0);
	cr_log_info("max stall %.1f s over %u creates (%u failed)",
		    c.max_stall_ms / 1000.0, c.made, c.fails);
	cr_assert_eq(c.fails, 0, "%u creates failed, the first with %s", c.fails,
		     strerror(c.first_errno));
	for (unsigned i = 0; i < c.made; i++) {
		snprintf(path, sizeof(path), "%s/f%u", c.mnt, i);
		cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	}
	cr_assert_eq(tcluster_wait_nodes_up(tc, NBLOCKD, 60000), 0);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
}

/* ---- suspect_limit: reports never stop every holder ---- */

TestSuite(suspect_limit, .init = up, .fini = down, .timeout = 240);

static struct coord *test_coord(void)
{
	struct sdfs_conf conf;
	struct coord *c;
	char err[256];

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(coord_open(conf.zk, conf.cluster, 2000, 10000, NULL, NULL, &c), 0);
	return c;
}

struct reporter {
	struct coord *c;
	uint32_t node_id;
	uint64_t epoch;
	atomic_int *go;
	int ret;
};

static void *report_one(void *arg)
{
	struct reporter *r = arg;

	while (!atomic_load(r->go))
		;
	r->ret = coord_suspect_report(r->c, r->node_id, r->epoch, "test:cut_off", COPIES);
	return NULL;
}

Test(suspect_limit, a_client_reporting_every_node_stops_at_most_copies_minus_one)
{
	static const char *const names[NBLOCKD] = { "blockd.0", "blockd.1", "blockd.2" };
	struct sdfs *s = tcluster_client(tc);
	static unsigned char buf[OBJ_LEN];
	struct reporter r[NBLOCKD];
	pthread_t t[NBLOCKD];
	struct coord_suspect *sus;
	atomic_int go = 0;
	unsigned made = 0, refused = 0;
	size_t nsus;
	uint64_t e1, seq;

	for (unsigned i = 0; i < NOBJ; i++) {
		fill(buf, i, 1);
		cr_assert_eq(sdfs_obj_write(s, oid_of(i), buf, OBJ_LEN, 0), 0);
	}
	e1 = tcluster_epoch(tc);
	/* Each its own session, all at once: the limit must hold across
	 * reporters that read the same (empty) list. */
	for (unsigned k = 0; k < NBLOCKD; k++) {
		r[k] = (struct reporter){ .c = test_coord(), .epoch = e1, .go = &go,
					  .node_id = tcluster_node_id(tc, names[k]) };
		cr_assert_eq(pthread_create(&t[k], NULL, report_one, &r[k]), 0);
	}
	atomic_store(&go, 1);
	for (unsigned k = 0; k < NBLOCKD; k++) {
		pthread_join(t[k], NULL);
		if (r[k].ret == 0)
			made++;
		else
			cr_assert_eq(r[k].ret, -EBUSY, "report of %s: %s", names[k],
				     strerror(-r[k].ret));
		refused += r[k].ret == -EBUSY;
	}
	cr_assert_eq(coord_suspects_get(r[0].c, 0, &sus, &nsus, NULL), 0);
	free(sus);
	cr_log_info("%u reports made, %u refused; %zu markers", made, refused, nsus);
	cr_assert_leq(nsus, COPIES - 1, "%zu markers: every holder stopped serving", nsus);
	cr_assert_leq(made, COPIES - 1);
	for (unsigned k = 0; k < NBLOCKD; k++)
		coord_close(r[k].c);
	/* Those reported stop serving and go down in the map. */
	for (unsigned k = 0; k < NBLOCKD; k++)
		if (r[k].ret == 0)
			cr_assert_eq(tcluster_wait_state(tc, names[k], "down", 30000), 0,
				     "%s reported but never down", names[k]);
	cr_assert_gt(tcluster_epoch(tc), e1);

	/* Another client writes and reads on, on the node left serving. */
	for (unsigned i = 0; i < NOBJ; i++) {
		int ret;

		fill(buf, i, 2);
		ret = sdfs_obj_write(s, oid_of(i), buf, OBJ_LEN, 0);
		cr_assert_eq(ret, 0, "object %u: write while %u nodes are reported: %s",
			     i, made, strerror(-ret));
		ret = sdfs_obj_read(s, oid_of(i), buf, OBJ_LEN, 0);
		cr_assert_eq(ret, OBJ_LEN, "object %u: read while %u nodes are reported: %s",
			     i, made, strerror(-ret));
		cr_assert(is_version(buf, i, &seq) && seq == 2,
			  "object %u: read version %" PRIu64 " after writing 2", i, seq);
	}
	/* The reported ones come back after their hold. */
	cr_assert_eq(tcluster_wait_nodes_up(tc, NBLOCKD, 90000), 0);
	cr_assert_eq(tcluster_wait_healthy(tc, 60), 0);
	assert_converged("after the reports");
}

Test(suspect_limit, a_map_write_fails_once_a_marker_it_relied_on_is_gone)
{
	const uint32_t ghost = 4000;    /* no such node: no daemon acts on it */
	struct coord *c = test_coord();
	struct coord_suspect *sus, check = { 0 };
	struct cmap *cur, *next, *now;
	int32_t lv;
	size_t nsus;

	cr_assert_eq(coord_suspect_report(c, ghost, tcluster_epoch(tc), "test", COPIES), 0);
	cr_assert_eq(coord_suspects_get(c, 0, &sus, &nsus, &lv), 0);
	for (size_t i = 0; i < nsus; i++)
		if (sus[i].node_id == ghost)
			check = sus[i];
	free(sus);
	cr_assert_eq(check.node_id, ghost);
	cr_assert_eq(coord_map_get(c, 0, &cur), 0);
	cr_assert_eq(cmap_new(cur->epoch + 1, cur->nodes, cur->n, &next), 0);
	/* The node acks (it stopped serving) after the reconciler read. */
	cr_assert_eq(coord_suspect_ack(c, ghost), 0);
	cr_assert_eq(coord_map_cas_checked(c, cur, next, lv, &check, 1), -EAGAIN,
		     "the marker changed (acked) since it was read");
	/* Read again; then the node removes its marker (its hold ended)
	 * while the reconciler is about to write. */
	cr_assert_eq(coord_suspects_get(c, 0, &sus, &nsus, &lv), 0);
	for (size_t i = 0; i < nsus; i++)
		if (sus[i].node_id == ghost)
			check = sus[i];
	free(sus);
	cr_assert_eq(coord_suspect_clear(c, ghost), 0);
	cr_assert_eq(coord_map_cas_checked(c, cur, next, lv, &check, 1), -EAGAIN,
		     "the map was written without the marker it relied on");
	/* Reported again meanwhile: a new marker, but back at the version
	 * read, so only the list's version tells it from the old one. */
	cr_assert_eq(coord_suspect_report(c, ghost, tcluster_epoch(tc), "test", COPIES), 0);
	cr_assert_eq(coord_suspect_ack(c, ghost), 0);
	cr_assert_eq(coord_map_cas_checked(c, cur, next, lv, &check, 1), -EAGAIN,
		     "the map was written on a marker deleted and made again");
	cr_assert_eq(coord_map_get(c, 0, &now), 0);
	cr_assert_eq(now->zversion, cur->zversion, "the map moved");
	cmap_free(now);
	/* What was read still there: written. */
	cr_assert_eq(coord_suspects_get(c, 0, &sus, &nsus, &lv), 0);
	for (size_t i = 0; i < nsus; i++)
		if (sus[i].node_id == ghost)
			check = sus[i];
	free(sus);
	cr_assert_eq(coord_map_cas_checked(c, cur, next, lv, &check, 1), 0);
	cr_assert_eq(coord_suspect_clear(c, ghost), 0);
	cmap_free(next);
	cmap_free(cur);
	coord_close(c);
}

/* ---- cut_off: a client that reaches no block daemon ---- */

static void cut_off_fini(void)
{
	unblock();
	tcluster_stop(tc);
}

TestSuite(cut_off, .init = up, .fini = cut_off_fini, .timeout = 240);

#define CUT_UID 65534           /* nobody: the cut-off client's sockets */

/* The cut-off client: a process of its own, as CUT_UID, so that an nft
 * rule on its uid cuts it alone off. Waits for a byte on @go, writes
 * object 1 once, sends the result on @res. */
static void cut_off_client(const struct sdfs_conf *conf, int go, int res)
{
	static unsigned char buf[OBJ_LEN];
	struct sdfs *s;
	char c, err[256];
	int r;

	if (setgid(CUT_UID) || setuid(CUT_UID))
		_exit(2);
	r = sdfs_connect(conf->zk, conf->cluster, 6000, &s, err, sizeof(err));
	if (r == 0) {
		if (read(go, &c, 1) != 1)
			_exit(3);
		fill(buf, 1, 100);
		r = sdfs_obj_write(s, oid_of(1), buf, OBJ_LEN, 0);
		sdfs_close(s);
	}
	if (write(res, &r, sizeof(r)) != sizeof(r))
		_exit(4);
	_exit(0);
}

Test(cut_off, a_client_that_reaches_no_block_daemon_reports_none)
{
	static const char *const names[NBLOCKD] = { "blockd.0", "blockd.1", "blockd.2" };
	static unsigned char buf[OBJ_LEN];
	unsigned port[NBLOCKD], writes = 0;
	struct coord_suspect *sus;
	struct sdfs_conf conf;
	struct sdfs *s;
	struct coord *c;
	int go[2], res[2], r = 0, status;
	char err[256];
	size_t nsus;
	uint64_t seq;
	pid_t pid;

	if (geteuid() != 0 || system("nft list tables >/dev/null 2>&1") != 0)
		cr_skip_test("needs root and nft");
	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(res), 0);
	/* Before this process makes any thread (the test's client). */
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		cut_off_client(&conf, go[0], res[1]);
	for (unsigned k = 0; k < NBLOCKD; k++) {
		char addr[80], *colon;

		tcluster_node_addr(tc, names[k], addr, sizeof(addr));
		colon = strrchr(addr, ':');
		cr_assert(colon);
		port[k] = (unsigned)atoi(colon + 1);
	}
	snprintf(nft_table, sizeof(nft_table), "sdfs_test_%d", (int)getpid());
	cr_assert_eq(nft("nft add table inet %s && nft add chain inet %s output "
			 "'{ type filter hook output priority 0; }' && nft add rule inet %s "
			 "output meta skuid %u tcp dport '{ %u, %u, %u }' drop", nft_table,
			 nft_table, nft_table, CUT_UID, port[0], port[1], port[2]), 0);
	cr_assert_eq(write(go[1], "g", 1), 1);

	/* Meanwhile another client writes and reads on. */
	s = tcluster_client(tc);
	for (int64_t end = tnow_ms() + 8000; tnow_ms() < end; writes++) {
		unsigned i = writes % NOBJ;

		fill(buf, i, writes + 1);
		r = sdfs_obj_write(s, oid_of(i), buf, OBJ_LEN, 0);
		cr_assert_eq(r, 0, "object %u: write while a client is cut off: %s", i,
			     strerror(-r));
		cr_assert_eq(sdfs_obj_read(s, oid_of(i), buf, OBJ_LEN, 0), OBJ_LEN);
		cr_assert(is_version(buf, i, &seq) && seq == writes + 1);
	}
	cr_assert_eq(read(res[0], &r, sizeof(r)), (ssize_t)sizeof(r));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "client status %d", status);
	cr_log_info("cut-off client's write: %s; %u writes by the other meanwhile",
		    strerror(-r), writes);
	cr_assert_neq(r, 0, "a write succeeded with no block daemon reachable");

	c = test_coord();
	cr_assert_eq(coord_suspects_get(c, 0, &sus, &nsus, NULL), 0);
	free(sus);
	coord_close(c);
	cr_assert_eq(nsus, 0, "the cut-off client reported %zu nodes", nsus);
	cr_assert_eq(tcluster_wait_nodes_up(tc, NBLOCKD, 1000), 0);
	/* A marker made early is gone after its 5 s hold: the nodes' logs
	 * keep that they saw one. */
	for (unsigned k = 0; k < NBLOCKD; k++) {
		char *line = tcluster_log_line(tc, names[k], "reported unresponsive", 0);

		cr_assert_null(line, "%s saw a marker: %s", names[k], line);
	}
	unblock();
}
