/*
 * vol_vm_test.c - a VM boots from a volume file (docs/volumes.md,
 * "Booting a VM from a volume file"). tests/vol/vm_guest.sh builds a
 * small Linux guest from this host's Debian packages (the kernel of
 * linux-image-amd64, an initrd of busybox-static and the virtio/ext4
 * modules, an ext2 root image); qemu-img convert writes the root image
 * into the volume file vm.img through the mount; QEMU boots it with
 * both disks as
 *
 *   -drive file=MNT/vm.img,format=raw,cache=none,aio=native,if=virtio
 *
 * (/dev/vda, the root, and /dev/vdb, the volume file data.img, on
 * which the host made an ext4 filesystem). The first boot writes files
 * of assorted sizes on /dev/vdb, fsyncs each and their directory,
 * prints their sha256, then rewrites small files in a loop (printing
 * each one's sha256 after its fsync) while the test takes `sdfs snap
 * create /data.img running` and then live-migrates the VM to a QEMU on
 * a second mount (vol_lazy, as another host): the guest goes on
 * writing there, with the source QEMU still open (postmigrate), and
 * powers off without a global sync or umount; the second boot checks
 * the files (sha256sum -c) and prints the same sums, and the loop's
 * files have the sums last printed, before or after the migration. Then the host checks them a
 * third time in `sdfs vol export` of data.img (debugfs reads the files
 * out of the exported image).
 *
 * A snapshot of a running VM: `sdfs vol clone /data.img@running
 * /clone.img`, and a third boot with clone.img as /dev/vdb, with
 * discard=unmap,detect-zeroes=unmap: it mounts the filesystem
 * read-write (the journal replays: the snapshot is what a power cut
 * would have left), checks the sums, writes a 32 MiB file, and after
 * the test measured the clone (st_blocks, its objects) removes it and
 * runs fstrim. The test then checks that the clone's st_blocks, du and
 * objects dropped by the freed chunks, that `e2fsck -fn` accepts the
 * filesystem, and that `sdfs snap rollback /data.img running` makes
 * data.img the same bytes the clone had before it booted.
 *
 * The guest and the test talk through a mailbox: the 4 KiB at 24 MiB of
 * vm.img (past the root image), which the test writes through the
 * mount and the guest reads with O_DIRECT.
 *
 * The guest runs under KVM if a boot with -accel kvm reaches the
 * guest's init within PROBE_MS (on the CI machine, a nested VM, KVM
 * guests hang), else under TCG; $SDFS_VM_ACCEL=kvm|tcg skips the probe.
 * Each boot's time is printed, never asserted.
 *
 * Skipped when qemu-system-x86_64, a kernel with its modules (under
 * /var/cache/sdfs/guest-kernel or /boot), busybox or debugfs are
 * missing (tools/install-deps --tests, which tests/run runs, brings
 * them).
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

#include "common/oid.h"

#define QEMU "/usr/bin/qemu-system-x86_64"
#define QEMU_IMG "/usr/bin/qemu-img"
#define DEBUGFS "/sbin/debugfs"
#define MiB (1ull << 20)
#define BOOT_MS 300000          /* one boot under TCG on a busy 2-core host */
#define PROBE_MS 6000           /* a KVM boot of this guest: ~1 s; TCG: 5-10 s */
#define MAX_SUMS 32
#define MBOX_OFF (24 * MiB)     /* the mailbox in vm.img (vm_guest.sh) */
#define E2FSCK "/sbin/e2fsck"
#define MKE2FS "/sbin/mke2fs"

static struct tcluster *tc;
static struct vt_mount2 m2;     /* the migration's destination host */
static pid_t vm_dst;            /* the destination QEMU, 0 if none */
static pid_t vm;                /* a QEMU running, 0 if none */
static int vm_status;           /* its exit status once reaped by console_wait */
static int64_t vm_t0;           /* when it started */
static char vm_cons[PATH_MAX + 32], vm_mode[16];
static struct vt_watchdog vm_wd;
static char guest[PATH_MAX];    /* DIR/guest: what vm_guest.sh built */

static void up(void)
{
	tc = NULL;
	vm = vm_dst = 0;
	memset(&m2, 0, sizeof(m2));
	if (access(QEMU, X_OK) || access(QEMU_IMG, X_OK) || access(DEBUGFS, X_OK))
		return;
	tc = vt_start();
}

static void vm_reap(void)
{
	if (vm <= 0)
		return;
	kill(vm, SIGKILL);
	waitpid(vm, NULL, 0);
	vt_watchdog_stop(&vm_wd);
	vm = 0;
}

static void down(void)
{
	vm_reap();
	if (vm_dst > 0) {
		kill(vm_dst, SIGKILL);
		waitpid(vm_dst, NULL, 0);
	}
	vt_mount2_stop(&m2);
	tcluster_stop(tc);
}

TestSuite(vol_vm, .init = up, .fini = down, .timeout = 900);

/* Run @argv, logging its output; fail the test unless it exits 0. */
static void run_ok(char **argv, const char *what)
{
	char *out = NULL;
	int st = vt_run(argv, &out, VT_CMD_MS);

	cr_log_info("%s: exit %d\n%.3000s", what, st, out);
	cr_assert_eq(st, 0, "%s: exit %d:\n%.3000s", what, st, out);
	free(out);
}

/* The guest from tests/vol/vm_guest.sh ($VM_GUEST) into DIR/guest;
 * skips the test if the host lacks what it needs (exit 77). */
static void build_guest(void)
{
	const char *script = getenv("VM_GUEST");
	char *out = NULL;

	cr_assert(script && *script, "VM_GUEST is not set (run through meson test)");
	snprintf(guest, sizeof(guest), "%s/guest", tcluster_dir(tc));
	cr_assert(mkdir(guest, 0755) == 0 || errno == EEXIST, "%s: %s", guest, strerror(errno));
	char *argv[] = { "/bin/sh", (char *)script, guest, NULL };
	int st = vt_run(argv, &out, VT_CMD_MS);

	if (st == 77)
		cr_skip_test("%s", out);
	cr_assert_eq(st, 0, "vm_guest.sh %s: exit %d:\n%s", guest, st, out);
	free(out);
}

/* The guest's console @path (NULL if absent), NUL-terminated. */
static char *console(const char *path)
{
	uint8_t *buf;
	struct stat sb;

	if (stat(path, &sb))
		return NULL;
	vt_slurp(path, &buf);
	buf[sb.st_size] = 0;
	for (off_t i = 0; i < sb.st_size; i++)          /* printable for the logs */
		if (buf[i] == 0)
			buf[i] = ' ';
	return (char *)buf;
}

/*
 * Spawn QEMU with @accel ("kvm" or "tcg"), kernel argument
 * sdfsvm=@mode, @mnt's vm.img and volume file @disk (its drive options
 * plus @disk_opts, NULL: none) as its virtio disks, its console into
 * @cons; with QMP on the socket @qmp and -incoming @incoming when not
 * NULL. Its pid; QEMU's own output goes to DIR/log/qemu-@tag.log.
 */
static pid_t vm_spawn(const char *accel, const char *mode, const char *mnt, const char *disk,
		      const char *disk_opts, const char *cons, const char *qmp,
		      const char *incoming, const char *tag)
{
	char kernel[PATH_MAX + 16], initrd[PATH_MAX + 16], serial[PATH_MAX + 64];
	char log[PATH_MAX + 32], append[256], qmpopt[PATH_MAX + 64];
	char vda[PATH_MAX + 128], vdb[PATH_MAX + 256];
	const char *argv[40];
	int n = 0;

	snprintf(kernel, sizeof(kernel), "%s/kernel", guest);
	snprintf(initrd, sizeof(initrd), "%s/initrd", guest);
	snprintf(serial, sizeof(serial), "file:%s", cons);
	snprintf(log, sizeof(log), "%s/log/qemu-%s.log", tcluster_dir(tc), tag);
	snprintf(append, sizeof(append),
		 "console=ttyS0 root=/dev/vda ro panic=-1 quiet no_timer_check sdfsvm=%s", mode);
	snprintf(vda, sizeof(vda), "file=%s/vm.img,format=raw,cache=none,aio=native,if=virtio",
		 mnt);
	snprintf(vdb, sizeof(vdb), "file=%s/%s,format=raw,cache=none,aio=native,if=virtio%s%s",
		 mnt, disk, disk_opts ? "," : "", disk_opts ? disk_opts : "");
	unlink(cons);
	for (const char *const *a = (const char *const[]){ QEMU, "-accel", accel, "-machine",
			"pc", "-m", "256", "-smp", "1", "-nodefaults", "-no-user-config",
			"-display", "none", "-no-reboot", "-serial", serial, "-kernel", kernel,
			"-initrd", initrd, "-append", append, "-drive", vda, "-drive", vdb,
			NULL }; *a; a++)
		argv[n++] = *a;
	if (qmp) {
		snprintf(qmpopt, sizeof(qmpopt), "unix:%s,server=on,wait=off", qmp);
		argv[n++] = "-qmp";
		argv[n++] = qmpopt;
	}
	if (incoming) {
		argv[n++] = "-incoming";
		argv[n++] = incoming;
	}
	argv[n] = NULL;
	cr_log_info("%s %s: -drive %s -drive %s%s%s", incoming ? "incoming" : "boot", mode,
		    vda, vdb, incoming ? " -incoming " : "", incoming ? incoming : "");
	return vt_spawn((char *const *)argv, log);
}

/* The QMP socket of the guest boot_start starts when set. */
static char vm_qmp[PATH_MAX + 32];

/*
 * Start the guest on the test's mount (vm_spawn) as the one boot_wait
 * and console_wait follow.
 */
static void boot_start(const char *accel, const char *mode, const char *disk,
		       const char *disk_opts)
{
	char tag[64];

	vm_t0 = tnow_ms();
	snprintf(vm_mode, sizeof(vm_mode), "%s", mode);
	snprintf(vm_cons, sizeof(vm_cons), "%s/console-%s-%s.log", guest, mode, accel);
	snprintf(tag, sizeof(tag), "%s-%s", mode, accel);
	vm = vm_spawn(accel, mode, tcluster_mnt(tc), disk, disk_opts, vm_cons,
		      vm_qmp[0] ? vm_qmp : NULL, NULL, tag);
	vm_status = -1;
	vt_watchdog_start(&vm_wd, vm, NULL);    /* a criterion timeout kills it */
}

/* Wait until the guest's console has @what: 1; 0 if QEMU exited first
 * (its status in vm_status) or at @timeout_ms. */
static int console_wait(const char *what, int timeout_ms)
{
	for (int64_t end = tnow_ms() + timeout_ms; tnow_ms() < end;) {
		char *con = console(vm_cons);
		int found = con && strstr(con, what);

		free(con);
		if (found)
			return 1;
		if (vm <= 0)
			return 0;
		vm_status = vt_wait_child(vm, 100);
		if (vm_status >= 0) {
			vt_watchdog_stop(&vm_wd);
			vm = 0;
		}
	}
	return 0;
}

/* @word into the mailbox the guest polls (MBOX_OFF of vm.img). */
static void mailbox(const char *word)
{
	char *buf = vt_alloc(4096);
	int fd = vt_xopen(tc, "vm.img", O_RDWR | O_DIRECT);

	memset(buf, 0, 4096);
	memcpy(buf, word, strlen(word));
	vt_pwrite(fd, buf, 4096, MBOX_OFF, "mailbox");
	vt_fsync(fd, "mailbox");
	close(fd);
	free(buf);
	if (vm > 0)
		cr_log_info("mailbox: %s (%.1f s into the boot)", word,
			    (tnow_ms() - vm_t0) / 1000.0);
}

/* Wait for the guest started by boot_start to power off, or @timeout_ms
 * from its start. Its console into *@con (malloc'd). Returns QEMU's
 * exit status, -1 if it was killed at the deadline. */
static int boot_wait(int timeout_ms, char **con)
{
	int st = vm_status;

	if (vm > 0) {
		int64_t left = vm_t0 + timeout_ms - tnow_ms();

		st = vt_wait_child(vm, left > 0 ? (int)left : 0);
		if (st >= 0) {
			vt_watchdog_stop(&vm_wd);
			vm = 0;
		} else {
			vm_reap();
		}
	}
	*con = console(vm_cons);
	if (!*con)
		*con = strdup("");
	char la[64] = "?";
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (!fgets(la, sizeof(la), f))
			snprintf(la, sizeof(la), "?");
		la[strcspn(la, "\n")] = 0;
		fclose(f);
	}
	cr_log_info("boot %s: %.1f s, QEMU %s (loadavg %s)", vm_mode,
		    (tnow_ms() - vm_t0) / 1000.0, st < 0 ? "killed at the deadline" : "exited",
		    la);
	return st;
}

/* Boot with data.img as /dev/vdb until the guest powers off (boot_wait). */
static int boot(const char *accel, const char *mode, int timeout_ms, char **con)
{
	boot_start(accel, mode, "data.img", NULL);
	cr_log_info("boot %s under %s", mode, accel);
	return boot_wait(timeout_ms, con);
}

/* Does a KVM guest run here? A boot to the guest's init (sdfsvm=probe)
 * within PROBE_MS says so. */
static const char *pick_accel(void)
{
	const char *env = getenv("SDFS_VM_ACCEL");
	char *con = NULL;
	int fd;

	if (env && (!strcmp(env, "kvm") || !strcmp(env, "tcg")))
		return env;
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return "tcg";
	close(fd);
	int st = boot("kvm", "probe", PROBE_MS, &con);
	int ok = st == 0 && strstr(con, "SDFSVM BOOTED");

	cr_log_info("KVM probe: %s\n%.2000s", ok ? "works" : "no guest boot, using TCG", con);
	free(con);
	return ok ? "kvm" : "tcg";
}

/* The "SDFSVM SUM <sha256>  <name>" lines of @con, sorted as printed,
 * into @sums; their count. */
static int sums_of(const char *con, char sums[MAX_SUMS][128])
{
	int n = 0;

	for (const char *p = con; (p = strstr(p, "SDFSVM SUM ")); p++) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		cr_assert(n < MAX_SUMS);
		len -= 11;
		while (len && (p[11 + len - 1] == '\r' || p[11 + len - 1] == ' '))
			len--;
		snprintf(sums[n++], 128, "%.*s", (int)len, p + 11);
	}
	return n;
}

/* `sdfs @args...`, failing the test unless it exits 0; its stdout
 * (malloc'd, NUL-terminated), logged with its time under @what (NULL:
 * not logged). */
static char *sdfs_ok(const char *const args[], const char *what)
{
	char out_path[PATH_MAX + 32], *err = NULL;
	uint8_t *buf;
	int64_t t0 = tnow_ms();
	int st;

	snprintf(out_path, sizeof(out_path), "%s/sdfs.out", guest);
	st = vt_sdfs_to_file(tc, out_path, &err, args);
	cr_assert_eq(st, 0, "%s: exit %d: %s", what ? what : args[0], st, err);
	size_t len = vt_slurp(out_path, &buf);

	buf[len] = 0;
	if (what)
		cr_log_info("%s: %.1f s\n%.2000s", what, (tnow_ms() - t0) / 1000.0, (char *)buf);
	free(err);
	unlink(out_path);
	return (char *)buf;
}

static uint64_t want_vid;
static int of_vid(uint64_t oid)
{
	return oid_is_vdata(oid) && oid_owner(oid) == want_vid;
}

/* The space the mount's @name takes: st_blocks in bytes (and du -B1,
 * which must agree), and the data objects of its live state the block
 * daemons hold (every copy). */
static uint64_t space_of(const char *name, uint64_t *objects)
{
	char p[PATH_MAX + 64], *out = NULL;
	struct sdfs_vol_info vi;
	struct vt_node_objs no[VT_MAX_NODES];
	struct stat sb;
	unsigned long long du = 0;
	size_t nn;

	vt_path(tc, name, p);
	char *argv[] = { "/usr/bin/du", "-B1", p, NULL };

	cr_assert_eq(vt_run(argv, &out, VT_CMD_MS), 0, "du %s: %s", p, out);
	cr_assert_eq(sscanf(out, "%llu", &du), 1, "du said %s", out);
	free(out);
	cr_assert_eq(stat(p, &sb), 0, "stat %s: %s", p, strerror(errno));
	cr_assert_eq((uint64_t)sb.st_blocks * 512, du, "%s: st_blocks %llu, du %llu", name,
		     (unsigned long long)sb.st_blocks, du);
	vt_info(tc, vt_ino(tc, name), NULL, &vi);
	want_vid = vi.vid;
	nn = vt_node_objects(tc, of_vid, no);
	*objects = 0;
	for (size_t i = 0; i < nn; i++)
		*objects += no[i].n;
	vt_node_objs_free(no, nn);
	return du;
}

/* `sdfs cluster status --json`'s replica count: every copy of every
 * object the block daemons hold, and their tombstones until a recovery
 * pass drops them (seconds after a removal; docs/recovery.md). */
static uint64_t replicas(void)
{
	char *out = sdfs_ok((const char *[]){ "cluster", "status", "--json", NULL }, NULL);
	char *p = strstr(out, "\"replicas\":");
	unsigned long long n = 0;

	cr_assert(p && sscanf(p + 11, " %llu", &n) == 1, "cluster status: %s", out);
	free(out);
	return n;
}

/* What the block daemons' object stores take on disk (du -B1 of their
 * obj directories). */
static uint64_t store_bytes(void)
{
	char sh[PATH_MAX * 2], *out = NULL;
	unsigned long long n = 0;

	snprintf(sh, sizeof(sh), "du -s -B1 -c %s/blockd.*/obj | tail -n 1", tcluster_dir(tc));
	char *argv[] = { "/bin/sh", "-c", sh, NULL };

	cr_assert_eq(vt_run(argv, &out, VT_CMD_MS), 0, "%s: %s", sh, out);
	cr_assert_eq(sscanf(out, "%llu", &n), 1, "du said %s", out);
	free(out);
	return n;
}

/* sha256sum of the mount's @name into @sum (65 bytes). */
static void sha_of(const char *name, char *sum)
{
	char p[PATH_MAX + 64], *out = NULL;
	char *argv[] = { "/usr/bin/sha256sum", (char *)vt_path(tc, name, p), NULL };

	cr_assert_eq(vt_run(argv, &out, VT_CMD_MS), 0, "sha256sum %s: %s", p, out);
	snprintf(sum, 65, "%.64s", out);
	cr_log_info("sha256 of %s: %s", name, sum);
	free(out);
}

/* The last "SDFSVM @tag <sha256>  g<k>" line per file g<k> of @con
 * into @sums[k] ("" if none). */
#define GFILES 8
static void gsums_of(const char *con, const char *tag, char sums[GFILES][65])
{
	char needle[32];

	snprintf(needle, sizeof(needle), "SDFSVM %s ", tag);
	for (int k = 0; k < GFILES; k++)
		sums[k][0] = 0;
	for (const char *p = con; (p = strstr(p, needle)); p++) {
		const char *h = p + strlen(needle), *g = strstr(h, "  g");
		int k;

		if (g && g - h == 64 && sscanf(g + 3, "%d", &k) == 1 && k >= 0 && k < GFILES)
			snprintf(sums[k], 65, "%.64s", h);
	}
}

/*
 * Live migration of the guest the first boot runs (QMP on @src_qmp) to a
 * QEMU on a second mount, vol_lazy (the destination host), while it
 * rewrites and fsyncs files: the migration completes, the source stays
 * open (postmigrate), the guest writes on the destination, then the
 * mailbox ends its loop and it powers off there; the source QEMU is
 * quit last. The destination's console (malloc'd).
 */
static char *migrate_guest(const char *accel, const char *src_qmp)
{
	char mnt2[PATH_MAX + 16], dcons[PATH_MAX + 32], dqmp[PATH_MAX + 32];
	char uri[PATH_MAX + 64], st[64], *con = NULL;
	struct vt_watchdog dst_wd;
	struct vt_qmp src, dst;
	int64_t t0, ms;
	int n = 0, dst_st;

	snprintf(mnt2, sizeof(mnt2), "%s/mnt2", tcluster_dir(tc));
	vt_mount2_start(tc, &m2, mnt2, "vol_lazy");
	snprintf(dcons, sizeof(dcons), "%s/console-write-dst.log", guest);
	snprintf(dqmp, sizeof(dqmp), "%s/dst.qmp", guest);
	snprintf(uri, sizeof(uri), "unix:%s/mig.sock", guest);
	vm_dst = vm_spawn(accel, "write", mnt2, "data.img", NULL, dcons, dqmp, uri, "write-dst");
	vt_watchdog_start(&dst_wd, vm_dst, NULL);
	vt_qmp_open(&src, src_qmp);
	vt_qmp_open(&dst, dqmp);
	ms = vt_qmp_migrate(&src, uri);
	vt_qmp_status(&src, "query-status", st, sizeof(st));
	cr_log_info("migrated to mount 2 in %" PRId64 " ms (%.1f s into the boot); the "
		    "source: %s", ms, (tnow_ms() - vm_t0) / 1000.0, st);
	cr_assert_str_eq(st, "postmigrate", "the source QEMU after the migration");
	/* the guest goes on writing and fsyncing on the destination, the
	 * source still open */
	for (t0 = tnow_ms(); n < 3; tsleep_ms(100)) {
		free(con);
		con = console(dcons);
		n = 0;
		for (const char *p = con; p && (p = strstr(p, "SDFSVM G ")); p++)
			n++;
		cr_assert(n >= 3 || vt_wait_child(vm_dst, 0) < 0,
			  "the destination QEMU exited; its console:\n%s", con ? con : "");
		cr_assert(tnow_ms() - t0 < BOOT_MS, "%d fsynced writes on the destination in "
			  "%d ms; its console:\n%s", n, BOOT_MS, con ? con : "");
	}
	cr_log_info("the guest fsynced %d writes on the destination in %.1f s", n,
		    (tnow_ms() - t0) / 1000.0);
	free(con);
	mailbox("SNAP");
	dst_st = vt_wait_child(vm_dst, BOOT_MS);
	if (dst_st >= 0) {
		vt_watchdog_stop(&dst_wd);
		vm_dst = 0;
	}
	con = console(dcons);
	cr_assert_eq(dst_st, 0, "the destination QEMU: exit %d; its console:\n%s", dst_st,
		     con ? con : "");
	vt_qmp_quit(&src);
	vt_qmp_close(&dst);
	vt_mount2_stop(&m2);
	return con ? con : strdup("");
}

/* Fail unless @con has @want and no SDFSVM FAIL, and QEMU exited 0. */
static void boot_ok(int st, const char *con, const char *want, const char *what)
{
	cr_log_info("console of the %s boot:\n%s", what, con);
	cr_assert(st >= 0, "%s boot: still running after %d ms; console:\n%s", what, BOOT_MS,
		  con);
	cr_assert(strstr(con, want) && !strstr(con, "SDFSVM FAIL"),
		  "%s boot: QEMU exit %d, no %s; console:\n%s", what, st, want, con);
	cr_assert_eq(st, 0, "%s boot: QEMU exit %d", what, st);
}

Test(vol_vm, boots_from_a_volume_file_and_keeps_fsynced_files)
{
	char img[PATH_MAX + 32], p[PATH_MAX + 64], exp[PATH_MAX + 32], sh[PATH_MAX * 3];
	char wrote[MAX_SUMS][128], read[MAX_SUMS][128], sum_snap[65], sum_rb[65];
	char gw[GFILES][65], gr[GFILES][65];
	char *con = NULL;
	const char *accel;
	int nw, nr, st;

	if (!tc || access(E2FSCK, X_OK) || access(MKE2FS, X_OK))
		cr_skip_test("%s, %s, %s, %s or %s missing (tools/install-deps --tests: "
			     "qemu-system-x86, qemu-utils, e2fsprogs)", QEMU, QEMU_IMG, DEBUGFS,
			     E2FSCK, MKE2FS);
	build_guest();

	/* the root image into the volume file, as QEMU's tools would; an
	 * ext4 filesystem (with its journal) on the data disk */
	vt_create(tc, "vm.img", 32 * MiB, 0, NULL);
	vt_create(tc, "data.img", 64 * MiB, 0, NULL);
	snprintf(img, sizeof(img), "%s/root.img", guest);
	char *conv[] = { QEMU_IMG, "convert", "-n", "-t", "none", "-f", "raw", "-O", "raw",
			 img, (char *)vt_path(tc, "vm.img", p), NULL };
	run_ok(conv, "qemu-img convert root.img into vm.img");
	char *mkfs[] = { MKE2FS, "-q", "-F", "-t", "ext4", "-b", "4096", "-L", "sdfsvm", "-E",
			 "lazy_itable_init=0,lazy_journal_init=0",
			 (char *)vt_path(tc, "data.img", p), NULL };
	run_ok(mkfs, "mke2fs -t ext4 data.img");

	accel = pick_accel();

	/* first boot: write, fsync; a snapshot while it rewrites files,
	 * then a live migration to another mount, where it goes on */
	char src_qmp[PATH_MAX + 32];

	snprintf(src_qmp, sizeof(src_qmp), "%s/src.qmp", guest);
	snprintf(vm_qmp, sizeof(vm_qmp), "%s", src_qmp);
	boot_start(accel, "write", "data.img", NULL);
	vm_qmp[0] = 0;
	cr_log_info("boot write under %s", accel);
	char *dcon = NULL;

	if (console_wait("SDFSVM LOOP", BOOT_MS)) {
		tsleep_ms(1000);        /* a few writes into the loop */
		free(sdfs_ok((const char *[]){ "snap", "create", "/data.img", "running", NULL },
			     "sdfs snap create /data.img running (the guest writing)"));
		dcon = migrate_guest(accel, src_qmp);
	}
	st = boot_wait(BOOT_MS, &con);
	if (dcon) {             /* one console: the source's, then the destination's */
		char *all = malloc(strlen(con) + strlen(dcon) + 1);

		cr_assert(all);
		strcpy(all, con);
		strcat(all, dcon);
		free(con);
		free(dcon);
		con = all;
	}
	boot_ok(st, con, "SDFSVM LOOPED", "first");
	nw = sums_of(con, wrote);
	cr_assert_geq(nw, 5, "first boot printed %d sums:\n%s", nw, con);
	gsums_of(con, "G", gw);
	free(con);

	/* second boot: the files are there, with their sums */
	st = boot(accel, "verify", BOOT_MS, &con);
	boot_ok(st, con, "SDFSVM PASS", "second");
	nr = sums_of(con, read);
	cr_assert_eq(nr, nw, "the first boot wrote %d files, the second read %d", nw, nr);
	for (int i = 0; i < nw; i++)
		cr_assert_str_eq(read[i], wrote[i], "file %d: written %s, read %s", i, wrote[i],
				 read[i]);
	/* the files rewritten in the loop, on both hosts: as last fsynced */
	gsums_of(con, "GSUM", gr);
	int ng = 0;

	for (int k = 0; k < GFILES; k++) {
		cr_assert_str_eq(gr[k], gw[k], "g%d: last fsynced with sha256 %s, read %s", k,
				 gw[k], gr[k]);
		ng += gw[k][0] != 0;
	}
	cr_log_info("%d loop files read back as last fsynced (some on each host)", ng);
	cr_assert_geq(ng, 1, "no loop file was written");
	free(con);

	/* what the cluster holds: data.img exported through libsdfs, its
	 * files read out by debugfs and checked against SUMS */
	snprintf(exp, sizeof(exp), "%s/data.raw", guest);
	st = vt_sdfs_to_file(tc, exp, &con, (const char *[]){ "vol", "export", "/data.img",
							     NULL });
	cr_assert_eq(st, 0, "sdfs vol export /data.img: exit %d: %s", st, con);
	free(con);
	snprintf(sh, sizeof(sh),
		 "set -e; img=%s; d=%s/files; rm -rf $d; mkdir $d; cd $d; "
		 "%s -R 'dump /SUMS SUMS' $img 2>/dev/null; test -s SUMS; "
		 "for f in $(cut -d' ' -f3 SUMS); do %s -R \"dump /$f $f\" $img 2>/dev/null; done; "
		 "sha256sum -c SUMS", exp, guest, DEBUGFS, DEBUGFS);
	char *chk[] = { "/bin/sh", "-c", sh, NULL };
	run_ok(chk, "files read by debugfs out of `sdfs vol export /data.img`: sha256sum -c SUMS");
	unlink(exp);

	/* third boot: a clone of the snapshot of the running guest, with
	 * discard: it mounts (journal replay), has the fsynced files, and
	 * what it frees and trims leaves the clone's space */
	free(sdfs_ok((const char *[]){ "vol", "clone", "/data.img@running", "/clone.img", NULL },
		     "sdfs vol clone /data.img@running /clone.img"));
	sha_of("clone.img", sum_snap);
	/* taken while mounted: its journal wants recovery, as after a crash */
	char *dump[] = { "/sbin/dumpe2fs", "-h", (char *)vt_path(tc, "clone.img", p), NULL };
	char *out = NULL;

	cr_assert_eq(vt_run(dump, &out, VT_CMD_MS), 0, "dumpe2fs -h clone.img: %s", out);
	char *feat = strstr(out, "Filesystem features:");

	cr_log_info("dumpe2fs -h clone.img: %.200s", feat ? feat : out);
	cr_assert(feat && strstr(feat, "needs_recovery"),
		  "the snapshot of the mounted filesystem has no needs_recovery:\n%s", out);
	free(out);
	uint64_t b0, o0, b1 = 0, o1 = 0, b2, o2;
	uint64_t s1 = 0, s2, r1 = 0, r2;

	b0 = space_of("clone.img", &o0);
	mailbox("");
	boot_start(accel, "trim", "clone.img", "discard=unmap,detect-zeroes=unmap");
	cr_log_info("boot trim under %s", accel);
	if (console_wait("SDFSVM FILLED", BOOT_MS)) {
		b1 = space_of("clone.img", &o1);
		s1 = store_bytes();
		r1 = replicas();
		mailbox("MEAS");
	}
	st = boot_wait(BOOT_MS, &con);
	boot_ok(st, con, "SDFSVM PASS", "third (the clone)");
	nr = sums_of(con, read);
	cr_assert_eq(nr, 2 * nw, "the first boot wrote %d files, the clone's checks read %d", nw,
		     nr);
	for (int i = 0; i < nr; i++)
		cr_assert_str_eq(read[i], wrote[i % nw],
				 "file %d: written %s, read in the clone %s", i % nw, wrote[i % nw],
				 read[i]);
	const char *trim = strstr(con, "SDFSVM TRIM ");

	cr_assert(trim, "no fstrim line");
	free(con);
	b2 = space_of("clone.img", &o2);
	s2 = store_bytes();
	cr_log_info("the clone: %" PRIu64 " B (%" PRIu64 " object copies) before its boot, %"
		    PRIu64 " B (%" PRIu64 " copies) with the 32 MiB file, %" PRIu64 " B (%"
		    PRIu64 " copies) after rm and fstrim; the block daemons' stores %" PRIu64
		    " B -> %" PRIu64 " B", b0, o0, b1, o1, b2, o2, s1, s2);
	cr_assert_geq(b1, b0 + 28 * MiB, "32 MiB written, the clone grew %" PRIu64 " B",
		      b1 - b0);
	cr_assert_leq(b2 + 16 * MiB, b1, "rm + fstrim: the clone went from %" PRIu64 " B to %"
		      PRIu64 " B", b1, b2);
	cr_assert_leq(o2 + 4 * 3, o1, "rm + fstrim: object copies %" PRIu64 " -> %" PRIu64, o1,
		      o2);
	cr_assert_eq(o1, b1 / (4 * MiB) * 3, "%" PRIu64 " object copies for %" PRIu64 " B", o1,
		     b1);
	cr_assert_eq(o2, b2 / (4 * MiB) * 3, "%" PRIu64 " object copies for %" PRIu64 " B", o2,
		     b2);
	cr_assert_leq(s2 + 3 * 12 * MiB, s1, "rm + fstrim: the stores went from %" PRIu64
		      " B to %" PRIu64 " B", s1, s2);
	/* cluster status counts the freed copies' tombstones until the
	 * block daemons' next recovery pass drops them */
	int64_t t0 = tnow_ms();

	while ((r2 = replicas()) + (o1 - o2) > r1 && tnow_ms() < t0 + VT_WAIT_MS)
		tsleep_ms(500);
	cr_log_info("cluster status replicas: %" PRIu64 " with the 32 MiB file, %" PRIu64
		    " %.1f s after rm and fstrim", r1, r2, (tnow_ms() - t0) / 1000.0);
	cr_assert_leq(r2 + (o1 - o2), r1, "cluster status: %" PRIu64 " replicas with the "
		      "32 MiB file, %" PRIu64 " after %" PRIu64 " copies were freed", r1, r2,
		      o1 - o2);
	char *map[] = { QEMU_IMG, "map", "-f", "raw", (char *)vt_path(tc, "clone.img", p), NULL };

	run_ok(map, "qemu-img map clone.img");
	char *fsck[] = { E2FSCK, "-fn", (char *)vt_path(tc, "clone.img", p), NULL };

	run_ok(fsck, "e2fsck -fn clone.img (after its boot)");

	/* rollback, the guest stopped: data.img is the snapshot again */
	free(sdfs_ok((const char *[]){ "snap", "rollback", "/data.img", "running", NULL },
		     "sdfs snap rollback /data.img running"));
	sha_of("data.img", sum_rb);
	cr_assert_str_eq(sum_rb, sum_snap, "data.img rolled back: sha256 %s, the snapshot's %s",
			 sum_rb, sum_snap);
}
