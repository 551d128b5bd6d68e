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
 * (/dev/vda, the root, and /dev/vdb, the volume file data.img). The
 * first boot makes an ext2 filesystem on /dev/vdb, writes files of
 * assorted sizes, fsyncs each and their directory, prints their sha256
 * and powers off without a global sync; the second boot checks them
 * (sha256sum -c) and prints the same sums. Then the host checks them a
 * third time in `sdfs vol export` of data.img (debugfs reads the files
 * out of the exported image).
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
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define QEMU "/usr/bin/qemu-system-x86_64"
#define QEMU_IMG "/usr/bin/qemu-img"
#define DEBUGFS "/sbin/debugfs"
#define MiB (1ull << 20)
#define BOOT_MS 300000          /* one boot under TCG on a busy 2-core host */
#define PROBE_MS 6000           /* a KVM boot of this guest: ~1 s; TCG: 5-10 s */
#define MAX_SUMS 32

static struct tcluster *tc;
static pid_t vm;                /* a QEMU running, 0 if none */
static struct vt_watchdog vm_wd;
static char guest[PATH_MAX];    /* DIR/guest: what vm_guest.sh built */

static void up(void)
{
	tc = NULL;
	vm = 0;
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
 * Boot the guest with @accel ("kvm" or "tcg"), kernel argument
 * sdfsvm=@mode, vm.img and data.img as its virtio disks, until QEMU
 * exits (the guest powers off) or @timeout_ms. Its console into *@con
 * (malloc'd). Returns QEMU's exit status, -1 if it was killed at the
 * deadline.
 */
static int boot(const char *accel, const char *mode, int timeout_ms, char **con)
{
	char kernel[PATH_MAX + 16], initrd[PATH_MAX + 16], serial[PATH_MAX + 64];
	char cons[PATH_MAX + 32], log[PATH_MAX + 32], append[256];
	char vda[PATH_MAX + 128], vdb[PATH_MAX + 128], p[PATH_MAX + 64];
	int64_t t0 = tnow_ms();
	int st;

	snprintf(kernel, sizeof(kernel), "%s/kernel", guest);
	snprintf(initrd, sizeof(initrd), "%s/initrd", guest);
	snprintf(cons, sizeof(cons), "%s/console-%s-%s.log", guest, mode, accel);
	snprintf(serial, sizeof(serial), "file:%s", cons);
	snprintf(log, sizeof(log), "%s/log/qemu-%s-%s.log", tcluster_dir(tc), mode, accel);
	snprintf(append, sizeof(append),
		 "console=ttyS0 root=/dev/vda ro panic=-1 quiet sdfsvm=%s", mode);
	snprintf(vda, sizeof(vda), "file=%s,format=raw,cache=none,aio=native,if=virtio",
		 vt_path(tc, "vm.img", p));
	snprintf(vdb, sizeof(vdb), "file=%s,format=raw,cache=none,aio=native,if=virtio",
		 vt_path(tc, "data.img", p));
	unlink(cons);
	char *argv[] = { QEMU, "-accel", (char *)accel, "-machine", "pc", "-m", "256",
			 "-smp", "1", "-nodefaults", "-no-user-config", "-display", "none",
			 "-no-reboot", "-serial", serial, "-kernel", kernel, "-initrd", initrd,
			 "-append", append, "-drive", vda, "-drive", vdb, NULL };

	vm = vt_spawn(argv, log);
	vt_watchdog_start(&vm_wd, vm, NULL);    /* a criterion timeout kills it */
	st = vt_wait_child(vm, timeout_ms);
	if (st >= 0) {
		vt_watchdog_stop(&vm_wd);
		vm = 0;
	} else {
		vm_reap();
	}
	*con = console(cons);
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
	cr_log_info("boot %s under %s: %.1f s, QEMU %s (loadavg %s)", mode, accel,
		    (tnow_ms() - t0) / 1000.0, st < 0 ? "killed at the deadline" : "exited", la);
	return st;
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

Test(vol_vm, boots_from_a_volume_file_and_keeps_fsynced_files)
{
	char img[PATH_MAX + 32], p[PATH_MAX + 64], exp[PATH_MAX + 32], sh[PATH_MAX * 3];
	char wrote[MAX_SUMS][128], read[MAX_SUMS][128];
	char *con = NULL;
	const char *accel;
	int nw, nr, st;

	if (!tc)
		cr_skip_test("%s, %s or %s missing (tools/install-deps --tests: "
			     "qemu-system-x86, qemu-utils, e2fsprogs)", QEMU, QEMU_IMG, DEBUGFS);
	build_guest();

	/* the root image into the volume file, as QEMU's tools would */
	vt_create(tc, "vm.img", 32 * MiB, 0, NULL);
	vt_create(tc, "data.img", 64 * MiB, 0, NULL);
	snprintf(img, sizeof(img), "%s/root.img", guest);
	char *conv[] = { QEMU_IMG, "convert", "-n", "-t", "none", "-f", "raw", "-O", "raw",
			 img, (char *)vt_path(tc, "vm.img", p), NULL };
	run_ok(conv, "qemu-img convert root.img into vm.img");

	accel = pick_accel();

	/* first boot: mkfs, write, fsync, power off */
	st = boot(accel, "write", BOOT_MS, &con);
	cr_log_info("console of the first boot:\n%s", con);
	cr_assert(st >= 0, "first boot (%s): still running after %d ms; console:\n%s", accel,
		  BOOT_MS, con);
	cr_assert(strstr(con, "SDFSVM WROTE") && !strstr(con, "SDFSVM FAIL"),
		  "first boot (%s): QEMU exit %d, no SDFSVM WROTE; console:\n%s", accel, st, con);
	cr_assert_eq(st, 0, "first boot: QEMU exit %d", st);
	nw = sums_of(con, wrote);
	cr_assert_geq(nw, 5, "first boot printed %d sums:\n%s", nw, con);
	free(con);

	/* second boot: the files are there, with their sums */
	st = boot(accel, "verify", BOOT_MS, &con);
	cr_log_info("console of the second boot:\n%s", con);
	cr_assert(st >= 0, "second boot (%s): still running after %d ms; console:\n%s", accel,
		  BOOT_MS, con);
	cr_assert(strstr(con, "SDFSVM PASS") && !strstr(con, "SDFSVM FAIL"),
		  "second boot (%s): QEMU exit %d, no SDFSVM PASS; console:\n%s", accel, st,
		  con);
	cr_assert_eq(st, 0, "second boot: QEMU exit %d", st);
	nr = sums_of(con, read);
	cr_assert_eq(nr, nw, "the first boot wrote %d files, the second read %d", nw, nr);
	for (int i = 0; i < nw; i++)
		cr_assert_str_eq(read[i], wrote[i], "file %d: written %s, read %s", i, wrote[i],
				 read[i]);
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
}
