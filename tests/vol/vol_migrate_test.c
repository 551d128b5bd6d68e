/*
 * vol_migrate_test.c - QEMU live migration of a VM whose disk is a
 * volume file, between two mounts of one cluster as two hosts (both
 * vol_lazy; docs/volumes.md "Migration").
 *
 * The VM has no guest: a PC with 32 MiB, never started (-S), its disk a
 * virtio-blk device (a drive with a device takes QEMU's image locks;
 * one without takes none). QEMU's monitor command `qemu-io` does the writes a
 * guest would, on the source before the migration and on the
 * destination after it, while the source QEMU keeps the image open
 * (inactive, "postmigrate"), as it does until its manager quits it.
 * Checked:
 * - the destination QEMU opens the image while the source writes it,
 *   and the migration completes;
 * - the destination's first write after the switch-over succeeds with
 *   the source still open (sdfs hands the writer lock over; it waited
 *   for the source's close before);
 * - QEMU's own image locking (locking=on) works across the two mounts
 *   as on a local file: a second writer on either host is refused with
 *   QEMU's "Failed to get ... lock" while a QEMU has the image;
 * - every byte written on either side reads back afterwards.
 *
 * Skipped when qemu-system-x86_64 or qemu-io is missing (tools/
 * install-deps --tests installs them). Every QEMU is killed at teardown
 * by its pid.
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
#include <sys/wait.h>
#include <unistd.h>

#define QEMU_SYS "/usr/bin/qemu-system-x86_64"
#define QEMU_IO "/usr/bin/qemu-io"
#define OBJ (1u << 20)
#define SIZE (8u << 20)
#define MiB (1u << 20)
#define KiB 1024u

static struct tcluster *tc;
static struct vt_mount2 ma, mb;
static pid_t qpid[2];
static struct vt_watchdog qwd[2];       /* a criterion timeout kills them too */

static void up(void)
{
	memset(&ma, 0, sizeof(ma));
	memset(&mb, 0, sizeof(mb));
	qpid[0] = qpid[1] = 0;
	memset(qwd, 0, sizeof(qwd));
	tc = vt_start();
}

static void down(void)
{
	for (int i = 0; i < 2; i++) {
		if (qpid[i] > 0) {
			kill(qpid[i], SIGKILL);
			waitpid(qpid[i], NULL, 0);
		}
		vt_watchdog_stop(&qwd[i]);
	}
	vt_mount2_stop(&mb);
	vt_mount2_stop(&ma);
	tcluster_stop(tc);
}

TestSuite(vol_migrate, .init = up, .fini = down, .timeout = 600);

/* What QEMU printed to its log from offset @from on (malloc'd). */
static char *log_since(const char *log, size_t from)
{
	uint8_t *all = NULL;
	size_t n = vt_slurp(log, &all);
	char *s = strndup(n > from ? (char *)all + from : "", n > from ? n - from : 0);

	free(all);
	cr_assert(s);
	return s;
}

/* QEMU's monitor command `qemu-io d0 "@io"`: its output (on QEMU's
 * stdout) must hold @want and no failure. */
static void qemu_io_hmp(struct vt_qmp *q, const char *log, const char *who, const char *io,
			const char *want)
{
	char cmd[512], out[8192], *said;
	int64_t t0 = tnow_ms(), ms;
	uint8_t *old = NULL;
	size_t from = vt_slurp(log, &old);

	free(old);
	snprintf(cmd, sizeof(cmd), "{\"execute\":\"human-monitor-command\",\"arguments\":"
		 "{\"command-line\":\"qemu-io d0 \\\"%s\\\"\"}}", io);
	vt_qmp_cmd(q, cmd, out, sizeof(out));
	ms = tnow_ms() - t0;
	for (int64_t end = tnow_ms() + VT_WAIT_MS;; tsleep_ms(20)) {
		said = log_since(log, from);
		if (strstr(said, want) || strstr(said, "failed") || tnow_ms() > end)
			break;
		free(said);
	}
	cr_assert(strstr(said, want) && !strstr(said, "failed"),
		  "%s: qemu-io \"%s\": %s%s", who, io, said, out);
	cr_log_info("%s: qemu-io \"%s\": %" PRId64 " ms", who, io, ms);
	free(said);
}

/* A VM without a guest whose drive d0 (a virtio disk) is @image; QMP
 * on @qmp_path. */
static pid_t qemu_start(const char *image, const char *qmp_path, const char *incoming,
			const char *log)
{
	char drive[PATH_MAX + 128], qmp[PATH_MAX + 64];
	const char *argv[24];
	int n = 0;

	snprintf(drive, sizeof(drive), "file=%s,format=raw,if=none,id=d0,cache=none,"
		 "aio=native,file.locking=on", image);
	snprintf(qmp, sizeof(qmp), "unix:%s,server=on,wait=off", qmp_path);
	argv[n++] = QEMU_SYS;
	argv[n++] = "-machine";
	argv[n++] = "pc";
	argv[n++] = "-accel";
	argv[n++] = "tcg";
	argv[n++] = "-m";
	argv[n++] = "32";
	argv[n++] = "-nodefaults";
	argv[n++] = "-display";
	argv[n++] = "none";
	argv[n++] = "-S";
	argv[n++] = "-drive";
	argv[n++] = drive;
	argv[n++] = "-device";
	argv[n++] = "virtio-blk-pci,drive=d0";
	argv[n++] = "-qmp";
	argv[n++] = qmp;
	if (incoming) {
		argv[n++] = "-incoming";
		argv[n++] = incoming;
	}
	argv[n] = NULL;
	return vt_spawn((char *const *)argv, log);
}

/* A second writer (qemu-io, read-write) of @image must be refused by
 * QEMU's image locking. */
static void second_writer_refused(const char *image, const char *where)
{
	char *out = NULL;
	char *const argv[] = { QEMU_IO, "-f", "raw", "-t", "none", "-c", "read 0 4k",
			       (char *)image, NULL };
	int st = vt_run(argv, &out, VT_CMD_MS);

	cr_assert(st != 0 && out && strstr(out, "Failed to get") && strstr(out, "lock"),
		  "qemu-io read-write of the image on %s while a QEMU has it: exit %d, "
		  "expected QEMU's lock refusal:\n%.2000s", where, st, out ? out : "");
	cr_log_info("second writer on %s refused: %.*s", where,
		    (int)strcspn(strstr(out, "Failed to get"), "\n"), strstr(out, "Failed to get"));
	free(out);
}

static void pattern_model(uint8_t *model, uint64_t off, size_t len, int byte)
{
	memset(model + off, byte, len);
}

Test(vol_migrate, qemu_migrates_between_lazy_mounts_while_the_source_stays_open)
{
	char pa[PATH_MAX + 16], pb[PATH_MAX + 16], img_a[PATH_MAX + 32], img_b[PATH_MAX + 32];
	char qa[PATH_MAX + 32], qb[PATH_MAX + 32], mig[PATH_MAX + 64], uri[PATH_MAX + 128];
	char loga[PATH_MAX + 32], logb[PATH_MAX + 32], st[64], out[8192];
	uint8_t *model = vt_alloc(SIZE), *got = vt_alloc(SIZE);
	struct vt_qmp src, dst;
	const char *dir;

	if (access(QEMU_SYS, X_OK) || access(QEMU_IO, X_OK))
		cr_skip_test("%s or %s missing (tools/install-deps --tests)", QEMU_SYS, QEMU_IO);
	memset(model, 0, SIZE);
	vt_create(tc, "vm.img", SIZE, OBJ, NULL);
	dir = tcluster_dir(tc);
	snprintf(pa, sizeof(pa), "%s/mnta", dir);
	snprintf(pb, sizeof(pb), "%s/mntb", dir);
	vt_mount2_start(tc, &ma, pa, "vol_lazy");
	vt_mount2_start(tc, &mb, pb, "vol_lazy");
	snprintf(img_a, sizeof(img_a), "%s/vm.img", pa);
	snprintf(img_b, sizeof(img_b), "%s/vm.img", pb);
	snprintf(qa, sizeof(qa), "%s/qa.qmp", dir);
	snprintf(qb, sizeof(qb), "%s/qb.qmp", dir);
	snprintf(mig, sizeof(mig), "%s/mig.sock", dir);
	snprintf(uri, sizeof(uri), "unix:%s", mig);
	snprintf(loga, sizeof(loga), "%s/log/qemu-a.log", dir);
	snprintf(logb, sizeof(logb), "%s/log/qemu-b.log", dir);

	/* host A runs the VM; it writes */
	qpid[0] = qemu_start(img_a, qa, NULL, loga);
	vt_watchdog_start(&qwd[0], qpid[0], NULL);
	vt_qmp_open(&src, qa);
	qemu_io_hmp(&src, loga, "source", "write -P 0x11 0 1M", "wrote");
	pattern_model(model, 0, MiB, 0x11);
	qemu_io_hmp(&src, loga, "source", "write -P 0x12 3M 1M", "wrote");
	pattern_model(model, 3 * MiB, MiB, 0x12);
	second_writer_refused(img_b, "host B");

	/* host B waits for it */
	qpid[1] = qemu_start(img_b, qb, uri, logb);
	vt_watchdog_start(&qwd[1], qpid[1], NULL);
	vt_qmp_open(&dst, qb);
	qemu_io_hmp(&src, loga, "source", "write -P 0x13 1M 64k", "wrote");
	pattern_model(model, MiB, 64 * KiB, 0x13);

	/* migrate */
	cr_log_info("migration completed in %" PRId64 " ms", vt_qmp_migrate(&src, uri));
	vt_qmp_status(&src, "query-status", st, sizeof(st));
	cr_assert_str_eq(st, "postmigrate", "source after the migration");

	/* the destination runs and writes, the source QEMU still open */
	vt_qmp_cmd(&dst, "{\"execute\":\"cont\"}", out, sizeof(out));
	qemu_io_hmp(&dst, logb, "destination", "write -P 0x21 2M 1M", "wrote");
	pattern_model(model, 2 * MiB, MiB, 0x21);
	qemu_io_hmp(&dst, logb, "destination", "write -P 0x22 512k 64k", "wrote");
	pattern_model(model, 512 * KiB, 64 * KiB, 0x22);
	qemu_io_hmp(&dst, logb, "destination", "read -P 0x11 0 64k", "read");
	qemu_io_hmp(&dst, logb, "destination", "read -P 0x13 1M 64k", "read");
	qemu_io_hmp(&dst, logb, "destination", "flush", "");   /* prints nothing */
	vt_qmp_status(&src, "query-status", st, sizeof(st));
	cr_assert_str_eq(st, "postmigrate", "source while the destination writes");
	second_writer_refused(img_a, "host A (the source's)");

	/* the manager quits the source, later the destination */
	vt_qmp_quit(&src);
	cr_assert_eq(vt_wait_child(qpid[0], VT_WAIT_MS), 0, "source QEMU's exit");
	qpid[0] = 0;
	vt_watchdog_stop(&qwd[0]);     /* before the pid can be reused */
	qemu_io_hmp(&dst, logb, "destination", "write -P 0x23 6M 1M", "wrote");
	pattern_model(model, 6 * MiB, MiB, 0x23);
	vt_qmp_quit(&dst);
	cr_assert_eq(vt_wait_child(qpid[1], VT_WAIT_MS), 0, "destination QEMU's exit");
	qpid[1] = 0;
	vt_watchdog_stop(&qwd[1]);

	vt_read_vol(tc, vt_ino(tc, "vm.img"), NULL, got, SIZE);
	vt_assert_same(got, model, SIZE, 0, OBJ, "vm.img after the migration");
	free(model);
	free(got);
}
