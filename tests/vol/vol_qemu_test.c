/*
 * vol_qemu_test.c - QEMU's own tools on volume files through the mount
 * (docs/volumes.md: QEMU opens the image with cache=none and aio=native):
 * a qcow2 image made by qemu-img inside a volume file, written and read
 * back by qemu-io and passing qemu-img check; a raw volume file with
 * O_DIRECT and native AIO, threads, discard; and snapshots taken while
 * qemu-io writes a qcow2 image, each of which qemu-img check accepts
 * (crash consistent: leaked clusters are fine, corruption is not).
 *
 * Skipped when /usr/bin/qemu-img is missing (CI installs qemu-utils).
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

#define QEMU_IMG "/usr/bin/qemu-img"
#define QEMU_IO "/usr/bin/qemu-io"
#define GiB (1ull << 30)
#define MiB (1u << 20)

static struct tcluster *tc;
static pid_t bg;

static void up(void)
{
	bg = 0;
	tc = NULL;
	if (access(QEMU_IMG, X_OK) || access(QEMU_IO, X_OK))
		return;
	tc = vt_start();
}

static void down(void)
{
	if (bg > 0) {
		kill(bg, SIGKILL);
		waitpid(bg, NULL, 0);
	}
	tcluster_stop(tc);
}

TestSuite(vol_qemu, .init = up, .fini = down, .timeout = 600);

static void need_qemu(void)
{
	if (!tc)
		cr_skip_test("%s or %s missing (apt-get install qemu-utils)", QEMU_IMG, QEMU_IO);
}

/* qemu-io @opts... -c @cmds[0] -c ... @path: must succeed. */
static void qemu_io(const char *path, const char *const *opts, const char *const *cmds)
{
	char *argv[256];
	int argc = 0;
	char *out = NULL;

	argv[argc++] = QEMU_IO;
	for (; *opts; opts++)
		argv[argc++] = (char *)*opts;
	for (; *cmds; cmds++) {
		cr_assert(argc < 250);
		argv[argc++] = "-c";
		argv[argc++] = (char *)*cmds;
	}
	argv[argc++] = (char *)path;
	argv[argc] = NULL;
	int st = vt_run_logged(argv, &out);
	/* a failed command (a pattern mismatch) with exit 0 fails too */
	cr_assert(st == 0 && !strstr(out, "failed"), "qemu-io on %s: exit %d:\n%.3000s",
		  path, st, out);
	free(out);
}

/* qemu-img check -f qcow2 @path: 0 (clean) or, with @leaks_ok, 3
 * (leaked clusters only: what a crash may leave). */
static void qcow2_check(const char *path, int leaks_ok)
{
	char *argv[] = { QEMU_IMG, "check", "-f", "qcow2", (char *)path, NULL };
	char *out = NULL;
	int st = vt_run_logged(argv, &out);

	cr_assert(st == 0 || (leaks_ok && st == 3), "qemu-img check %s: exit %d%s:\n%.3000s",
		  path, st, st == 2 ? " (corrupt)" : "", out);
	free(out);
}

static void qcow2_create(const char *path, const char *size)
{
	char *argv[] = { QEMU_IMG, "create", "-f", "qcow2", (char *)path, (char *)size, NULL };
	char *out = NULL;
	int st = vt_run_logged(argv, &out);

	cr_assert_eq(st, 0, "qemu-img create -f qcow2 %s %s: exit %d:\n%s", path, size, st,
		     out);
	free(out);
}

/* /@name is still a volume file (qemu-img did not replace it). */
static void still_volume(const char *name)
{
	struct sdfs_stat st;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "/%s", name);
	cr_assert_eq(sdfs_ns_resolve(tcluster_client(tc), p, 1, &st), 0);
	cr_assert_eq(st.layout, SDFS_LAYOUT_VOLUME, "%s: layout %u, no longer a volume file",
		     name, st.layout);
}

Test(vol_qemu, qcow2_image_in_a_volume_file)
{
	char path[PATH_MAX + 64];

	need_qemu();
	vt_create(tc, "disk.qcow2", GiB, 0, NULL);
	vt_path(tc, "disk.qcow2", path);
	qcow2_create(path, "1G");
	still_volume("disk.qcow2");
	qemu_io(path, (const char *[]){ "-f", "qcow2", "-t", "none", NULL },
		(const char *[]){ "write -P 0xab 0 4M", "write -P 0xcd 100M 1M",
				  "write -P 0xef 1023M 1M", "flush", NULL });
	qcow2_check(path, 0);
	qemu_io(path, (const char *[]){ "-f", "qcow2", "-t", "none", NULL },
		(const char *[]){ "read -P 0xab 0 4M", "read -P 0xcd 100M 1M",
				  "read -P 0xef 1023M 1M", "read -P 0 4M 1M", NULL });
	/* through the page cache too (cache=writeback), after a new open */
	qemu_io(path, (const char *[]){ "-f", "qcow2", NULL },
		(const char *[]){ "read -P 0xab 0 4M", "write -P 0x12 200M 64k",
				  "read -P 0x12 200M 64k", NULL });
	qcow2_check(path, 0);
	qemu_io(path, (const char *[]){ "-f", "qcow2", "-n", "-i", "native", NULL },
		(const char *[]){ "read -P 0x12 200M 64k", "read -P 0xcd 100M 1M", NULL });
}

Test(vol_qemu, raw_volume_direct_native_aio)
{
	char path[PATH_MAX + 64];
	uint8_t *got = vt_alloc(4 * MiB), *want = vt_alloc(4 * MiB);

	need_qemu();
	vt_create(tc, "disk.raw", 64 * MiB, 0, NULL);
	vt_path(tc, "disk.raw", path);
	qemu_io(path, (const char *[]){ "-f", "raw", "-n", "-i", "native", NULL },
		(const char *[]){ "write -P 0x5a 0 1M", "aio_write -P 0x33 1M 1M",
				  "aio_write -P 0x44 2M 512k", "aio_write -P 0x45 2560k 512k",
				  "aio_flush", "flush", "read -P 0x5a 0 1M",
				  "read -P 0x33 1M 1M", "read -P 0x44 2M 512k",
				  "read -P 0x45 2560k 512k", NULL });
	qemu_io(path, (const char *[]){ "-f", "raw", "--cache=none", "--aio=threads", NULL },
		(const char *[]){ "writev -P 0x77 40M 64k 64k 128k", "flush",
				  "readv -P 0x77 40M 256k", "read -P 0x33 1M 1M", NULL });
	/* a discard (punch) reads as zeros */
	qemu_io(path, (const char *[]){ "-f", "raw", "-n", "-i", "native", "-d", "unmap", NULL },
		(const char *[]){ "discard 2M 1M", "read -P 0 2M 1M", "read -P 0x33 1M 1M",
				  NULL });
	/* what QEMU wrote is what the file holds, through the mount and
	 * through libsdfs */
	memset(want, 0x5a, MiB);
	memset(want + MiB, 0x33, MiB);
	memset(want + 2 * MiB, 0, 2 * MiB);
	vt_read_file(tc, "disk.raw", got, 4 * MiB, 1);
	vt_assert_same(got, want, 4 * MiB, 0, MiB, "disk.raw through the mount");
	vt_read_vol(tc, vt_ino(tc, "disk.raw"), NULL, got, 4 * MiB);
	vt_assert_same(got, want, 4 * MiB, 0, MiB, "disk.raw through libsdfs");
	free(got);
	free(want);
}

Test(vol_qemu, snapshots_of_a_qcow2_image_under_writes)
{
	enum { NWRITES = 1200, NSNAPS = 3 };
	struct sdfs *s;
	char path[PATH_MAX + 64], log[PATH_MAX + 64], name[32];
	static char cmds[NWRITES + NWRITES / 20 + 1][48];
	static char *argv[2 * (NWRITES + NWRITES / 20) + 16];
	static uint8_t final_pat[8192];         /* 64 KiB cluster -> last pattern */
	int argc = 0, ncmd = 0, taken = 0;
	struct sdfs_stat root;
	uint64_t ino;

	need_qemu();
	s = tcluster_client(tc);        /* tc is NULL without qemu */
	ino = vt_create(tc, "vm.qcow2", GiB, 0, NULL);
	vt_path(tc, "vm.qcow2", path);
	qcow2_create(path, "1G");

	/* one qemu-io process: 64 KiB writes all over the first 512 MiB
	 * (new clusters: L2 and refcount updates), a flush every 20 */
	argv[argc++] = QEMU_IO;
	argv[argc++] = "-f";
	argv[argc++] = "qcow2";
	argv[argc++] = "-t";
	argv[argc++] = "none";
	argv[argc++] = "-i";
	argv[argc++] = "native";
	memset(final_pat, 0, sizeof(final_pat));
	for (int i = 0; i < NWRITES; i++) {
		unsigned cl = (unsigned)(((uint64_t)i * 7919) % 8192);
		unsigned pat = 1 + (unsigned)i % 254;

		snprintf(cmds[ncmd], sizeof(cmds[0]), "write -q -P 0x%02x %uk 64k", pat, cl * 64);
		argv[argc++] = "-c";
		argv[argc++] = cmds[ncmd++];
		final_pat[cl] = (uint8_t)pat;
		if (i % 20 == 19) {
			snprintf(cmds[ncmd], sizeof(cmds[0]), "flush");
			argv[argc++] = "-c";
			argv[argc++] = cmds[ncmd++];
		}
	}
	argv[argc++] = path;
	argv[argc] = NULL;
	snprintf(log, sizeof(log), "%s/log/qemu-io.log", tcluster_dir(tc));
	bg = vt_spawn(argv, log);

	/* snapshots while it writes (crash consistent) */
	int st = -1;    /* qemu-io's exit status once reaped */
	struct stat sb0, sb;

	/* until qemu-io has allocated clusters (the image grew) */
	cr_assert_eq(stat(path, &sb0), 0);
	for (int64_t end = tnow_ms() + VT_CMD_MS;; tsleep_ms(20)) {
		cr_assert_eq(stat(path, &sb), 0);
		if (sb.st_size > sb0.st_size || (st = vt_wait_child(bg, 0)) >= 0)
			break;
		cr_assert(tnow_ms() < end, "qemu-io wrote nothing in %d ms", VT_CMD_MS);
	}
	for (; taken < NSNAPS; taken++) {
		struct sdfs_vol_info vi;

		snprintf(name, sizeof(name), "live%d", taken);
		int ret = sdfs_vol_snap_create(s, ino, name, &vi);
		cr_assert_eq(ret, 0, "snapshot %s while qemu-io writes: %s", name, strerror(-ret));
		if (st < 0)
			st = vt_wait_child(bg, 0);
		cr_log_info("snapshot %s taken; qemu-io %s", name,
			    st < 0 ? "still writing" : "had finished");
		tsleep_ms(700);
	}
	if (st < 0)
		st = vt_wait_child(bg, VT_CMD_MS);
	cr_assert(st >= 0, "qemu-io still writing after %d ms (see %s)", VT_CMD_MS, log);
	bg = 0;
	cr_assert_eq(st, 0, "qemu-io writing under snapshots: exit %d (see %s)", st, log);
	qcow2_check(path, 0);

	/* every snapshot is an image qemu-img check accepts: as a clone
	 * through the mount, and read-only in .snap */
	cr_assert_eq(sdfs_ns_resolve(s, "/", 1, &root), 0);
	for (int i = 0; i < taken; i++) {
		char clone[128], cpath[PATH_MAX + 64];
		struct sdfs_stat cst;

		snprintf(name, sizeof(name), "live%d", i);
		snprintf(clone, sizeof(clone), "from-%s.qcow2", name);
		int ret = sdfs_vol_clone(s, ino, name, root.ino, clone, 0644, getuid(), getgid(),
					 &cst);
		cr_assert_eq(ret, 0, "clone vm.qcow2@%s: %s", name, strerror(-ret));
		qcow2_check(vt_path(tc, clone, cpath), 1);
		snprintf(clone, sizeof(clone), ".snap/vm.qcow2@%s", name);
		qcow2_check(vt_path(tc, clone, cpath), 1);
	}

	/* the final image holds every cluster's last write (reads in
	 * batches of 120 commands) */
	char (*rcmds)[48] = calloc(8192, sizeof(*rcmds));
	const char **rc = calloc(8192 + 1, sizeof(*rc));
	int nr = 0;

	cr_assert(rcmds && rc);
	for (unsigned cl = 0; cl < 8192; cl++)
		if (final_pat[cl])
			snprintf(rcmds[nr++], sizeof(rcmds[0]), "read -q -P 0x%02x %uk 64k",
				 final_pat[cl], cl * 64);
	for (int b = 0; b < nr; b += 120) {
		int n = nr - b < 120 ? nr - b : 120;

		for (int i = 0; i < n; i++)
			rc[i] = rcmds[b + i];
		rc[n] = NULL;
		qemu_io(path, (const char *[]){ "-f", "qcow2", "-t", "none", "-r", NULL }, rc);
	}
	free(rcmds);
	free(rc);
}
