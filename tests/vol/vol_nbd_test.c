/*
 * vol_nbd_test.c - a volume file exported over NBD by the nbdkit plugin
 * (nbd/nbdkit_sdfs.c, docs/volumes.md "NBD: volumes without a mount"),
 * with QEMU's own clients on the other end: qemu-img info, convert, map
 * and qemu-io writes, reads, discards and write-zeroes over a unix
 * socket; two qemu-io clients at once on one export (multi-conn); the
 * same bytes read through the mount afterwards; a snapshot taken while
 * exported, and the snapshot exported read-only (keyring= named); a second server
 * refused while the first writes; and a writer that takes the volume
 * over (after the server's ZooKeeper session expired under SIGSTOP)
 * fencing the server: its later writes fail and change nothing.
 *
 * nbdkit runs in the foreground (-f) as this process's child with
 * --exit-with-parent, and is stopped by its pid. Skipped when nbdkit,
 * the plugin ($NBDKIT_SDFS) or qemu-img/qemu-io is missing (CI installs
 * them: tools/install-deps --tests).
 */
#include "tests/vol/vt.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NBDKIT "/usr/bin/nbdkit"
#define QEMU_IMG "/usr/bin/qemu-img"
#define QEMU_IO "/usr/bin/qemu-io"
#define MiB (1u << 20)
#define SIZE (32 * MiB)         /* each test's volume */
#define OBJ MiB                 /* its chunks: holes of 1 MiB */

static struct tcluster *tc;

struct nbd {
	pid_t pid;
	char sock[PATH_MAX];
	char uri[PATH_MAX + 32];
	char log[PATH_MAX];
};
static struct nbd srv[2];

static void up(void)
{
	const char *so = getenv("NBDKIT_SDFS");

	tc = NULL;
	memset(srv, 0, sizeof(srv));
	if (!so || access(so, R_OK) || access(NBDKIT, X_OK) || access(QEMU_IMG, X_OK) ||
	    access(QEMU_IO, X_OK))
		return;
	tc = vt_start();
}

static void nbd_stop(struct nbd *n)
{
	if (n->pid <= 0)
		return;
	kill(n->pid, SIGCONT);
	kill(n->pid, SIGTERM);
	if (vt_wait_child(n->pid, 20000) < 0) {
		kill(n->pid, SIGKILL);
		vt_wait_child(n->pid, 20000);
	}
	n->pid = 0;
}

static void down(void)
{
	nbd_stop(&srv[0]);
	nbd_stop(&srv[1]);
	tcluster_stop(tc);
}

TestSuite(vol_nbd, .init = up, .fini = down, .timeout = 300);

static void need_nbd(void)
{
	if (!tc)
		cr_skip_test("%s, $NBDKIT_SDFS (%s), %s or %s missing (tools/install-deps "
			     "--tests)", NBDKIT, getenv("NBDKIT_SDFS") ?: "unset", QEMU_IMG,
			     QEMU_IO);
}

/*
 * nbdkit -f -U DIR/@tag.sock --exit-with-parent PLUGIN conf=DIR/sdfs.conf
 * volume=/@name @extra... ; 0 once its socket answers, else its exit
 * status (it refused to start: its log says why).
 */
static int nbd_start(struct nbd *n, const char *tag, const char *name,
		     const char *const *extra)
{
	char conf[PATH_MAX + 16], vol[300], *argv[32];
	int argc = 0, st;
	int64_t end = tnow_ms() + VT_WAIT_MS;
	struct stat sb;

	snprintf(n->sock, sizeof(n->sock), "%s/%s.sock", tcluster_dir(tc), tag);
	snprintf(n->log, sizeof(n->log), "%s/%s.log", tcluster_dir(tc), tag);
	snprintf(n->uri, sizeof(n->uri), "nbd+unix:///?socket=%s", n->sock);
	snprintf(conf, sizeof(conf), "conf=%s", tcluster_conf(tc));
	snprintf(vol, sizeof(vol), "volume=/%s", name);
	unlink(n->sock);
	argv[argc++] = NBDKIT;
	argv[argc++] = "-f";
	argv[argc++] = "--exit-with-parent";
	argv[argc++] = "-U";
	argv[argc++] = n->sock;
	argv[argc++] = getenv("NBDKIT_SDFS");
	argv[argc++] = conf;
	argv[argc++] = vol;
	for (; extra && *extra; extra++)
		argv[argc++] = (char *)*extra;
	argv[argc] = NULL;
	n->pid = vt_spawn(argv, n->log);
	/* nbdkit binds its socket (and writes a pidfile) before the plugin
	 * opens the volume (after_fork), and exits if that fails: ready
	 * once a client got an answer */
	char *info[] = { QEMU_IMG, "info", n->uri, NULL };
	for (;;) {
		if (stat(n->sock, &sb) == 0 && vt_run(info, NULL, VT_CMD_MS) == 0)
			break;
		st = vt_wait_child(n->pid, 50);
		if (st >= 0) {
			n->pid = 0;
			return st;
		}
		cr_assert(tnow_ms() < end, "nbdkit did not answer on %s in %d ms", n->sock,
			  VT_WAIT_MS);
	}
	cr_log_info("nbdkit %s: pid %d, %s", name, (int)n->pid, n->uri);
	return 0;
}

static void nbd_xstart(struct nbd *n, const char *tag, const char *name,
		       const char *const *extra)
{
	int st = nbd_start(n, tag, name, extra);
	uint8_t *log = NULL;

	if (st) {
		vt_slurp(n->log, &log);
		cr_assert_fail("nbdkit for /%s exited %d:\n%s", name, st, log);
	}
}

/* qemu-io -f raw -c @cmds[0] -c ... URI: its exit status, 0 only if no
 * command failed (a pattern mismatch says "failed" with exit 0 too);
 * output into *@out if @out. */
static int qio_opt(const struct nbd *n, int ro, char **out, const char *const *cmds)
{
	char *argv[64], *o = NULL;
	int argc = 0, st;

	argv[argc++] = QEMU_IO;
	if (ro)
		argv[argc++] = "-r";
	argv[argc++] = "-f";
	argv[argc++] = "raw";
	for (; *cmds; cmds++) {
		argv[argc++] = "-c";
		argv[argc++] = (char *)*cmds;
	}
	argv[argc++] = (char *)n->uri;
	argv[argc] = NULL;
	st = vt_run_logged(argv, &o);
	if (st == 0 && (strstr(o, "failed") || strstr(o, "error")))
		st = 1;
	if (out)
		*out = o;
	else
		free(o);
	return st;
}

#define qio(n, out, cmds) qio_opt(n, 0, out, cmds)

#define QIO_OPT_OK(n, ro, ...) do {                                             \
	const char *c_[] = { __VA_ARGS__, NULL };                               \
	char *o_ = NULL;                                                        \
	cr_assert_eq(qio_opt(n, ro, &o_, c_), 0, "qemu-io %s: %s", c_[0], o_);  \
	free(o_);                                                               \
} while (0)
#define QIO_OK(n, ...) QIO_OPT_OK(n, 0, __VA_ARGS__)
/* qemu-io -r: a read-only export refuses a read-write open */
#define QIO_RO_OK(n, ...) QIO_OPT_OK(n, 1, __VA_ARGS__)

/* The model of what qemu-io's `write -P @byte @off @len` wrote. */
static void model_fill(uint8_t *model, uint64_t off, uint64_t len, int byte)
{
	memset(model + off, byte, len);
}

/* The volume through a fresh mount descriptor (O_DIRECT) and through
 * libsdfs must equal @model. */
static void check_all(const char *name, const uint8_t *model, const char *when)
{
	uint8_t *got = vt_alloc(SIZE);
	char what[256];

	snprintf(what, sizeof(what), "/%s through the mount %s", name, when);
	vt_read_file(tc, name, got, SIZE, 1);
	vt_assert_same(got, model, SIZE, 0, OBJ, what);
	snprintf(what, sizeof(what), "/%s through libsdfs %s", name, when);
	vt_read_vol(tc, vt_ino(tc, name), NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, what);
	free(got);
}

Test(vol_nbd, qemu_clients_read_write_trim_zero_map)
{
	uint8_t *model = calloc(1, SIZE), *src;
	char path[PATH_MAX], *argv[16], *out = NULL;
	int st, fd;

	need_nbd();
	vt_create(tc, "vm.img", SIZE, OBJ, NULL);
	nbd_xstart(&srv[0], "nbd", "vm.img", NULL);

	/* qemu-img info: a raw disk of the volume's size */
	argv[0] = QEMU_IMG; argv[1] = "info"; argv[2] = "--output=json";
	argv[3] = srv[0].uri; argv[4] = NULL;
	cr_assert_eq(vt_run_logged(argv, &out), 0, "qemu-img info: %s", out);
	cr_assert(strstr(out, "\"virtual-size\": 33554432"), "qemu-img info: %s", out);
	free(out);

	/* qemu-img convert of a local raw image into the export (-n: the
	 * export is there), then qemu-img compare */
	snprintf(path, sizeof(path), "%s/src.raw", tcluster_dir(tc));
	src = malloc(4 * MiB);
	tfill_random(src, 4 * MiB, tseed("vol_nbd convert"));
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, src, 4 * MiB), (ssize_t)(4 * MiB));
	cr_assert_eq(ftruncate(fd, SIZE), 0);
	close(fd);
	memcpy(model, src, 4 * MiB);
	argv[0] = QEMU_IMG; argv[1] = "convert"; argv[2] = "-n"; argv[3] = "-f";
	argv[4] = "raw"; argv[5] = "-O"; argv[6] = "raw"; argv[7] = path;
	argv[8] = srv[0].uri; argv[9] = NULL;
	cr_assert_eq(vt_run_logged(argv, NULL), 0, "qemu-img convert into the export");
	argv[0] = QEMU_IMG; argv[1] = "compare"; argv[2] = "-f"; argv[3] = "raw";
	argv[4] = "-F"; argv[5] = "raw"; argv[6] = path; argv[7] = srv[0].uri;
	argv[8] = NULL;
	cr_assert_eq(vt_run_logged(argv, NULL), 0, "qemu-img compare: the export differs");

	/* patterns, FUA, flush */
	QIO_OK(&srv[0], "write -P 0xab 8M 1M", "write -f -P 0xcd 9M 3M",
	       "write -P 0xef 20M 4M", "flush",
	       "read -P 0xab 8M 1M", "read -P 0xcd 9M 3M", "read -P 0xef 20M 4M");
	model_fill(model, 8 * MiB, MiB, 0xab);
	model_fill(model, 9 * MiB, 3 * MiB, 0xcd);
	model_fill(model, 20 * MiB, 4 * MiB, 0xef);
	/* discard: [10M, 12M) whole chunks become holes, a partial one zeros;
	 * write-zeroes with unmap punches [21M, 22M); without unmap (NO_HOLE)
	 * zeros are written: [23M, 24M) stays data */
	QIO_OK(&srv[0], "discard 10M 2M", "discard 8M 64k", "write -z -u 21M 1M",
	       "write -z 23M 1M", "flush",
	       "read -P 0 10M 2M", "read -P 0 8M 64k", "read -P 0xab 8454144 960k",
	       "read -P 0 21M 1M", "read -P 0 23M 1M", "read -P 0xef 20M 1M");
	model_fill(model, 10 * MiB, 2 * MiB, 0);
	model_fill(model, 8 * MiB, 64 << 10, 0);
	model_fill(model, 21 * MiB, MiB, 0);
	model_fill(model, 23 * MiB, MiB, 0);

	/* the -drive form of docs/volumes.md (file.driver=nbd) */
	char opts[PATH_MAX + 128];
	snprintf(opts, sizeof(opts),
		 "driver=raw,file.driver=nbd,file.server.type=unix,file.server.path=%s",
		 srv[0].sock);
	argv[0] = QEMU_IO; argv[1] = "--image-opts"; argv[2] = "-c";
	argv[3] = "read -P 0xab 8454144 960k"; argv[4] = "-c"; argv[5] = "read -P 0 23M 1M";
	argv[6] = opts; argv[7] = NULL;
	cr_assert_eq(vt_run_logged(argv, &out), 0, "qemu-io --image-opts %s: %s", opts, out);
	cr_assert(!strstr(out, "failed"), "qemu-io --image-opts %s: %s", opts, out);
	free(out);

	/* qemu-img map: data where chunks were written, holes elsewhere */
	argv[0] = QEMU_IMG; argv[1] = "map"; argv[2] = "--output=json"; argv[3] = "-f";
	argv[4] = "raw"; argv[5] = srv[0].uri; argv[6] = NULL;
	cr_assert_eq(vt_run_logged(argv, &out), 0, "qemu-img map: %s", out);
	static const char *const want[] = {
		"\"start\": 0, \"length\": 4194304, \"depth\": 0, \"present\": true, \"zero\": false, \"data\": true",
		"\"start\": 4194304, \"length\": 4194304, \"depth\": 0, \"present\": true, \"zero\": true, \"data\": false",
		"\"start\": 8388608, \"length\": 2097152, \"depth\": 0, \"present\": true, \"zero\": false, \"data\": true",
		"\"start\": 10485760, \"length\": 10485760, \"depth\": 0, \"present\": true, \"zero\": true, \"data\": false",
		"\"start\": 20971520, \"length\": 1048576, \"depth\": 0, \"present\": true, \"zero\": false, \"data\": true",
		"\"start\": 22020096, \"length\": 1048576, \"depth\": 0, \"present\": true, \"zero\": true, \"data\": false",
		"\"start\": 23068672, \"length\": 2097152, \"depth\": 0, \"present\": true, \"zero\": false, \"data\": true",
		"\"start\": 25165824, \"length\": 8388608, \"depth\": 0, \"present\": true, \"zero\": true, \"data\": false",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(strstr(out, want[i]), "qemu-img map lacks {%s}:\n%s", want[i], out);
	free(out);

	/* stopping the server closes the volume: the mount may write it */
	nbd_stop(&srv[0]);
	check_all("vm.img", model, "after the NBD server stopped");
	fd = vt_xopen(tc, "vm.img", O_RDWR);
	close(fd);
	(void)st;
	free(src);
	free(model);
}

/* Two qemu-io clients at once, each writing its half in 64 KiB pieces,
 * then a third reads everything: one open volume serves them all. */
Test(vol_nbd, two_connections_share_one_writer)
{
	uint8_t *model = calloc(1, SIZE);
	char cmds[2][8][64], *argv[2][32];
	pid_t pid[2];
	int st;

	need_nbd();
	vt_create(tc, "mc.img", SIZE, OBJ, NULL);
	nbd_xstart(&srv[0], "nbd", "mc.img", NULL);
	for (int c = 0; c < 2; c++) {
		int argc = 0;

		argv[c][argc++] = QEMU_IO;
		argv[c][argc++] = "-f";
		argv[c][argc++] = "raw";
		/* client c: byte 0x11*(c+1) over [c*16M + k*2M, +1M) for k < 8,
		 * interleaved in time with the other */
		for (int k = 0; k < 8; k++) {
			uint64_t off = (uint64_t)c * 16 * MiB + (uint64_t)k * 2 * MiB;

			snprintf(cmds[c][k], sizeof(cmds[c][k]), "aio_write -P 0x%x %" PRIu64 " 1M",
				 0x11 * (c + 1), off);
			argv[c][argc++] = "-c";
			argv[c][argc++] = cmds[c][k];
			model_fill(model, off, MiB, 0x11 * (c + 1));
		}
		argv[c][argc++] = "-c";
		argv[c][argc++] = "aio_flush";
		argv[c][argc++] = srv[0].uri;
		argv[c][argc] = NULL;
	}
	char log[PATH_MAX];
	snprintf(log, sizeof(log), "%s/qemu-io.log", tcluster_dir(tc));
	pid[0] = vt_spawn(argv[0], log);
	pid[1] = vt_spawn(argv[1], log);
	for (int c = 0; c < 2; c++) {
		st = vt_wait_child(pid[c], VT_CMD_MS);
		cr_assert_eq(st, 0, "qemu-io client %d: exit %d (%s)", c, st, log);
	}
	/* a third connection reads both halves */
	QIO_OK(&srv[0], "read -P 0x11 0 1M", "read -P 0x11 14M 1M", "read -P 0 15M 1M",
	       "read -P 0x22 16M 1M", "read -P 0x22 30M 1M", "read -P 0 31M 1M");
	nbd_stop(&srv[0]);
	check_all("mc.img", model, "after two NBD clients wrote it");
	free(model);
}

/* `sdfs snap create` while the server writes: the snapshot holds what
 * was written before, the server carries on in the new live state; the
 * snapshot exported read-only (snap=) reads as taken and refuses writes. */
Test(vol_nbd, snapshot_while_exported)
{
	uint8_t *model = calloc(1, SIZE), *got = vt_alloc(SIZE);
	char *err = NULL;
	char kr[PATH_MAX + 16];
	/* the config's own keyring, named: the plugin's keyring= path */
	snprintf(kr, sizeof(kr), "keyring=%s/keyring", tcluster_dir(tc));
	const char *snapargs[] = { "snap=s1", kr, NULL };
	const char *wr[] = { "write -P 0x99 0 64k", NULL };
	int st;

	need_nbd();
	vt_create(tc, "sn.img", SIZE, OBJ, NULL);
	nbd_xstart(&srv[0], "nbd", "sn.img", NULL);
	QIO_OK(&srv[0], "write -P 0x5a 0 2M", "write -P 0x5b 16M 1M", "flush");
	st = tcluster_sdfs(tc, NULL, &err, "snap create /sn.img s1");
	cr_assert_eq(st, 0, "sdfs snap create while exported: exit %d: %s", st, err);
	free(err);
	QIO_OK(&srv[0], "write -P 0x6a 1M 2M", "flush", "read -P 0x5a 0 1M",
	       "read -P 0x6a 1M 2M", "read -P 0x5b 16M 1M");

	/* the snapshot as taken, through libsdfs and through its own export */
	model_fill(model, 0, 2 * MiB, 0x5a);
	model_fill(model, 16 * MiB, MiB, 0x5b);
	vt_read_vol(tc, vt_ino(tc, "sn.img"), "s1", got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, "snapshot s1 taken while exported");
	nbd_xstart(&srv[1], "snap", "sn.img", snapargs);
	QIO_RO_OK(&srv[1], "read -P 0x5a 0 2M", "read -P 0x5b 16M 1M", "read -P 0 3M 13M");
	cr_assert_neq(qio(&srv[1], NULL, wr), 0, "a write into the snapshot's export worked");
	nbd_stop(&srv[1]);

	/* the live state: the later write on top */
	nbd_stop(&srv[0]);
	model_fill(model, MiB, 2 * MiB, 0x6a);
	check_all("sn.img", model, "after a snapshot while exported");
	free(got);
	free(model);
}

/*
 * One writer: a second server is refused (EBUSY) while the first holds
 * the volume; a readonly=true one is not. The first is SIGSTOPped until
 * its ZooKeeper session expired, the mount opens the volume for writing
 * (a new token fences the block daemons) and writes; the first server,
 * resumed, must fail writes (EPERM from the fence) and change nothing.
 */
Test(vol_nbd, takeover_fences_the_server)
{
	uint8_t *model = calloc(1, SIZE), *buf = vt_alloc(MiB);
	const char *ro[] = { "readonly=true", NULL };
	const char *late[] = { "write -P 0x77 0 1M", NULL };
	uint8_t *log = NULL;
	int64_t t0, end;
	int st, fd;

	need_nbd();
	vt_create(tc, "f.img", SIZE, OBJ, NULL);
	nbd_xstart(&srv[0], "nbd", "f.img", NULL);
	QIO_OK(&srv[0], "write -P 0x31 0 2M", "flush");
	model_fill(model, 0, 2 * MiB, 0x31);

	/* a second writer is refused, naming the holder; a reader is not */
	st = nbd_start(&srv[1], "nbd2", "f.img", NULL);
	vt_slurp(srv[1].log, &log);
	cr_assert_neq(st, 0, "a second nbdkit opened /f.img for writing");
	cr_assert(strstr((char *)log, "Device or resource busy") &&
		  strstr((char *)log, "nbdkit"),
		  "second nbdkit: no EBUSY naming the holder (nbdkit):\n%s", log);
	cr_log_info("the second nbdkit (exit %d) said:\n%s", st, log);
	free(log);
	nbd_xstart(&srv[1], "nbd2", "f.img", ro);
	QIO_RO_OK(&srv[1], "read -P 0x31 0 2M");
	nbd_stop(&srv[1]);

	/* the server stops answering ZooKeeper; the mount takes over */
	cr_assert_eq(kill(srv[0].pid, SIGSTOP), 0);
	t0 = tnow_ms();
	end = t0 + VT_WAIT_MS;
	while ((fd = vt_open(tc, "f.img", O_RDWR | O_DIRECT)) < 0) {
		cr_assert_eq(errno, EBUSY, "mount: open(O_RDWR): %s", strerror(errno));
		cr_assert(tnow_ms() < end, "the stopped server's lock not free in %d ms",
			  VT_WAIT_MS);
		tsleep_ms(100);
	}
	cr_log_info("the mount took /f.img over %" PRId64 " ms after SIGSTOP", tnow_ms() - t0);
	vt_fill(buf, MiB, MiB, 7);
	vt_pwrite(fd, buf, MiB, MiB, "the mount's write after the takeover");
	vt_fsync(fd, "the mount's fsync after the takeover");
	memcpy(model + MiB, buf, MiB);
	close(fd);

	/* the fenced server resumes: its writes fail */
	cr_assert_eq(kill(srv[0].pid, SIGCONT), 0);
	char *out = NULL;
	st = qio(&srv[0], &out, late);
	cr_assert_neq(st, 0, "the fenced server acknowledged a write:\n%s", out);
	cr_log_info("fenced server's write: %s", out);
	free(out);
	nbd_stop(&srv[0]);
	check_all("f.img", model, "after the fenced server tried to write");
	free(buf);
	free(model);
}
