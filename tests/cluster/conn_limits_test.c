/*
 * conn_limits_test.c - what a peer can make a daemon hold is bounded
 * (issue 14; conf.h frame_timeout_ms, idle_timeout_ms, max_conns):
 *
 *   - stalled_frames_blockd / _mds: NCONNS connections each send a
 *     header announcing a large payload (the object size, 4 MiB, to a
 *     blockd; 60000 bytes to an mds), a few bytes of it, and stall. The
 *     daemon's VmRSS grows by far less than NCONNS times the announced
 *     size, and every connection is closed by the daemon once the frame
 *     timeout has passed; the daemon still answers. The daemons run with
 *     MALLOC_PERTURB_, so a buffer allocated in full from a header is
 *     also touched in full, as the bytes a real peer sends would touch
 *     it (the old blockd grew by ~420 MB here);
 *   - idle_and_max_conns: a connection that sends nothing is closed
 *     after the idle timeout, and a libsdfs client whose pooled
 *     connections (to block daemons and the mds) were closed that way
 *     goes on without an error, and without spending an attempt on a
 *     closed one (nsclient's "answered at try N" line); beyond max_conns
 *     new connections are closed at once, with a log line at most every
 *     10 s.
 *
 * Every daemon is restarted with a config file that sets the limits
 * short (dev up starts them with --zk only, which reads no file).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/proto.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"

#define ROOT 1
#define NCONNS 100
#define FRAME_TIMEOUT_MS 2000
#define IDLE_TIMEOUT_MS 3000
#define MAX_CONNS 150
#define BLOCKD_ANNOUNCE (4u << 20)      /* the object size: the largest frame */
#define MDS_ANNOUNCE 60000u             /* under the mds's request cap */
#define CLOSE_WAIT_MS 30000             /* a bound, well over the timeouts */

static struct tcluster *tc;
static uint32_t req_ids = 1;

static const char *const daemons[] = {
	"blockd.0", "blockd.1", "blockd.2", "mds.0", "mds.1",
};
#define NDAEMONS (sizeof(daemons) / sizeof(daemons[0]))

/* Append "-c CONF" to @name's recorded command line (NUL-separated). */
static void add_conf_arg(const char *name)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/run/%s.cmd", tcluster_dir(tc), name);
	fd = open(path, O_WRONLY | O_APPEND);
	cr_assert(fd >= 0, "open %s", path);
	cr_assert_eq(write(fd, "-c", 3), 3);
	const char *conf = tcluster_conf(tc);
	cr_assert_eq(write(fd, conf, strlen(conf) + 1), (ssize_t)strlen(conf) + 1);
	close(fd);
}

static void up(void)
{
	/* Inherited by the daemons dev starts: malloc fills what it hands
	 * out, so an allocation counts in VmRSS in full. */
	setenv("MALLOC_PERTURB_", "165", 1);
	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = 3, .mds = 2 });

	FILE *f = fopen(tcluster_conf(tc), "a");
	cr_assert(f);
	fprintf(f, "frame_timeout_ms = %d\nidle_timeout_ms = %d\nmax_conns = %d\n",
		FRAME_TIMEOUT_MS, IDLE_TIMEOUT_MS, MAX_CONNS);
	fclose(f);
	for (size_t i = 0; i < NDAEMONS; i++) {
		add_conf_arg(daemons[i]);
		cr_assert_eq(tcluster_kill(tc, daemons[i]), 0);
		cr_assert_eq(tcluster_restart(tc, daemons[i]), 0);
	}
	cr_assert_eq(tcluster_wait_mds(tc, 2, TCLUSTER_WAIT_MS), 0);
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(conn_limits, .init = up, .fini = down, .timeout = 240);

/* "--listen" of @name's recorded command line into @addr. */
static void listen_addr(const char *name, char *addr, size_t len)
{
	char path[4096], cmd[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/run/%s.cmd", tcluster_dir(tc), name);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	cr_assert(n > 0);
	cmd[n] = '\0';
	for (ssize_t off = 0; off < n; off += (ssize_t)strlen(cmd + off) + 1)
		if (!strcmp(cmd + off, "--listen") && off + 9 < n) {
			snprintf(addr, len, "%s", cmd + off + 9);
			return;
		}
	cr_assert_fail("no --listen in %s", path);
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	cr_assert(f, "no %s", path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	cr_assert(kb > 0);
	return kb;
}

/* A header for @op announcing @len payload bytes (payload checksum
 * flagged, so nothing about it is known before it is whole). */
static void stall_header(uint8_t wire[SDFS_HDR_SIZE], uint8_t op, uint32_t len)
{
	struct sdfs_hdr h = { .opcode = op, .req_id = req_ids++,
			      .epoch = (uint32_t)tcluster_epoch(tc), .oid = 7,
			      .flags = op == SDFS_OP_OBJ_WRITE ? SDFS_F_CREATE : 0 };
	uint32_t le = htole32(len);

	proto_hdr_encode(&h, NULL, wire);
	memcpy(wire + 44, &le, 4);
	wire[48] = 1;
	wire_fix_hdr_csum(wire);
}

/* NODE_INFO (blockd) on a fresh connection: the daemon still serves. */
static void assert_blockd_answers(const char *addr)
{
	struct sdfs_hdr h = { .opcode = SDFS_OP_NODE_INFO, .req_id = req_ids++ }, r;
	int fd = wire_connect(addr);

	cr_assert_eq(wire_send_req(fd, &h, NULL), 0);
	cr_assert_eq(wire_recv_hdr(fd, &r, CLOSE_WAIT_MS), 0, "no answer");
	cr_assert_eq(r.result, SDFS_RES_OK, "result %u", r.result);
	close(fd);
}

/*
 * Open NCONNS connections to @name, each sending a header announcing
 * @announce bytes of @op plus 16 of them, and stall. Returns the
 * largest VmRSS growth seen (kB) while they were open; asserts that the
 * daemon closed every one.
 */
static long stall_many(const char *name, uint8_t op, uint32_t announce)
{
	pid_t pid = tcluster_pid(tc, name);
	uint8_t frame[SDFS_HDR_SIZE + 16] = { 0 };
	int fds[NCONNS];
	char addr[96];
	long rss0, peak;

	listen_addr(name, addr, sizeof(addr));
	rss0 = rss_kb(pid);
	for (int i = 0; i < NCONNS; i++) {
		stall_header(frame, op, announce);
		fds[i] = wire_connect(addr);
		cr_assert_eq(wire_send(fds[i], frame, sizeof(frame)), 0);
	}
	/* Watch VmRSS until the daemon closed them all (or the bound). */
	int64_t t0 = tnow_ms();
	int open_left = NCONNS;
	peak = rss_kb(pid);
	for (int i = 0; i < NCONNS; i++) {
		int ret;

		while ((ret = wire_wait_closed(fds[i], 100)) == -ETIMEDOUT &&
		       tnow_ms() - t0 < CLOSE_WAIT_MS) {
			long r = rss_kb(pid);

			peak = r > peak ? r : peak;
		}
		open_left -= ret == 0;
		close(fds[i]);
	}
	long grew = peak - rss0;
	cr_log_info("%s: %d stalled frames of %u bytes: VmRSS %ld kB before, "
		    "+%ld kB at most; all closed after %.1f s (frame timeout %d ms)",
		    name, NCONNS, announce, rss0, grew,
		    (double)(tnow_ms() - t0) / 1000, FRAME_TIMEOUT_MS);
	cr_assert_eq(open_left, 0, "%d of %d stalled connections still open after "
		     "%d ms", open_left, NCONNS, CLOSE_WAIT_MS);
	cr_assert_eq(tcluster_pid(tc, name), pid, "%s restarted", name);
	return grew;
}

Test(conn_limits, stalled_frames_blockd)
{
	char addr[96];
	long grew = stall_many("blockd.0", SDFS_OP_OBJ_WRITE, BLOCKD_ANNOUNCE);

	/* an eighth of what the headers announced: far less */
	cr_expect_lt(grew, (long)NCONNS * (BLOCKD_ANNOUNCE / 1024) / 8,
		     "blockd.0 grew by %ld kB for %d stalled frames", grew, NCONNS);
	listen_addr("blockd.0", addr, sizeof(addr));
	assert_blockd_answers(addr);
}

Test(conn_limits, stalled_frames_mds)
{
	char active[32];
	long grew = stall_many("mds.0", SDFS_OP_NS_LOOKUP, MDS_ANNOUNCE);

	/* The mds serves each connection on a thread of its own: under
	 * AddressSanitizer each thread's stack and shadow outweigh a
	 * 60000-byte frame, so only the closing is checked there. */
	if (getenv("SDFS_SAN_DIR"))
		cr_log_info("sanitizer build: mds.0's VmRSS not compared");
	else
		cr_expect_lt(grew, (long)NCONNS * (MDS_ANNOUNCE / 1024) / 2,
			     "mds.0 grew by %ld kB for %d stalled frames", grew, NCONNS);
	cr_assert_eq(tcluster_wait_active_mds(tc, NULL, active, sizeof(active),
					      TCLUSTER_WAIT_MS), 0);
}

/* mkdir @dir, and write then read back an object through libsdfs. */
static void client_round(const char *dir)
{
	struct sdfs *s = tcluster_client(tc);
	char buf[4096], got[4096];
	struct sdfs_stat st;
	int ret;

	memset(buf, dir[0], sizeof(buf));
	ret = sdfs_ns_mkdir(s, ROOT, dir, 0755, 0, 0, &st);
	cr_assert_eq(ret, 0, "mkdir %s: %s", dir, strerror(-ret));
	ret = sdfs_obj_write(s, 0x1234, buf, sizeof(buf), 0);
	cr_assert_eq(ret, 0, "object write: %s", strerror(-ret));
	ssize_t n = sdfs_obj_read(s, 0x1234, got, sizeof(got), 0);
	cr_assert_eq(n, (ssize_t)sizeof(got), "object read: %zd", n);
	cr_assert_eq(memcmp(buf, got, sizeof(buf)), 0);
}

/* Lines of log/@name.log (NULL: this process's libsdfs log) with @needle. */
static unsigned log_count(const char *name, const char *needle)
{
	char path[4096], *line = NULL;
	size_t cap = 0;
	unsigned n = 0;
	FILE *f;

	if (name)
		snprintf(path, sizeof(path), "%s/log/%s.log", tcluster_dir(tc), name);
	else
		snprintf(path, sizeof(path), "%s/client.log", tcluster_dir(tc));
	f = fopen(path, "r");
	cr_assert(f);
	while (getline(&line, &cap, f) > 0)
		n += strstr(line, needle) != NULL;
	free(line);
	fclose(f);
	return n;
}

Test(conn_limits, idle_and_max_conns)
{
	char addr[96];
	int fd, ret;

	/* pooled connections to block daemons and to the active mds */
	client_round("before_idle");
	listen_addr("blockd.0", addr, sizeof(addr));
	fd = wire_connect(addr);
	/* opened after the client's: closed after them too */
	ret = wire_wait_closed(fd, CLOSE_WAIT_MS);
	cr_assert_eq(ret, 0, "an idle connection is still open after %d ms "
		     "(idle timeout %d ms): %s", CLOSE_WAIT_MS, IDLE_TIMEOUT_MS,
		     strerror(-ret));
	close(fd);
	/* The pooled connections the daemons closed are not tried first
	 * (nsclient.c says at debug when a call needed another try). */
	log_level = LOG_DEBUG;
	client_round("after_idle");
	log_level = LOG_INFO;
	unsigned retried = log_count(NULL, "answered at try");
	cr_expect_eq(retried, 0, "%u namespace calls after the idle timeout were "
		     "answered only at a later try", retried);

	/* That round's pooled connections are idle now: let the idle
	 * timeout close them before the count (one opened after them is
	 * closed after them), or one closing midway frees a slot and the
	 * count comes out short (seen once in the slower sanitizer build). */
	fd = wire_connect(addr);
	cr_assert_eq(wire_wait_closed(fd, CLOSE_WAIT_MS), 0);
	close(fd);

	/* max_conns: the daemon already has a few of its own. Each
	 * connection asks at once, so one that was let in has its answer
	 * queued before an idle timeout could close it. */
	static int fds[MAX_CONNS + 50];
	int closed = 0;

	for (int i = 0; i < MAX_CONNS + 50; i++) {
		struct sdfs_hdr h = { .opcode = SDFS_OP_NODE_INFO, .req_id = req_ids++ };

		fds[i] = wire_connect(addr);
		wire_send_req(fds[i], &h, NULL);        /* may find it closed */
	}
	for (int i = 0; i < MAX_CONNS + 50; i++) {
		struct sdfs_hdr r;

		closed += wire_recv_hdr(fds[i], &r, CLOSE_WAIT_MS) != 0;
		close(fds[i]);
	}
	unsigned lines = log_count("blockd.0", "(max_conns)");

	cr_log_info("max_conns %d: %d of %d connections refused, %u log lines",
		    MAX_CONNS, closed, MAX_CONNS + 50, lines);
	cr_expect_geq(closed, 50, "only %d connections refused", closed);
	cr_expect_leq(closed, 50 + 10, "%d connections refused", closed);
	cr_expect(lines >= 1 && lines <= 2, "%u log lines about max_conns", lines);
	assert_blockd_answers(addr);
}
