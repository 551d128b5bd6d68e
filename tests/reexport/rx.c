/*
 * rx.c - see rx.h.
 */
#include "tests/reexport/rx.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RX_GW_WAIT_MS 30000

struct tcluster *rx_start(void)
{
	return tcluster_start(&(struct tcluster_opts){
		.blockd = 3, .copies = 2, .mds = 2, .mount = 1 });
}

const char *rx_cluster_uuid(struct tcluster *tc, char *buf)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[16384], point[PATH_MAX], src[256];

	cr_assert(f);
	buf[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		char *dash = strstr(line, " - ");

		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    strcmp(point, tcluster_mnt(tc)) || !dash)
			continue;
		if (sscanf(dash + 3, "%*s %255s", src) == 1 && !strncmp(src, "sdfs:", 5))
			snprintf(buf, 64, "%.63s", src + 5);
	}
	fclose(f);
	cr_assert(buf[0], "no sdfs:<uuid> source for %s in mountinfo", tcluster_mnt(tc));
	return buf;
}

int rx_have(const char *prog)
{
	static const char *const dirs[] = { "/usr/bin", "/usr/sbin", "/bin", "/sbin" };
	char path[256];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], prog);
		if (access(path, X_OK) == 0)
			return 1;
	}
	return 0;
}

static const char *which(const char *prog, char *path)
{
	static const char *const dirs[] = { "/usr/bin", "/usr/sbin", "/bin", "/sbin" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, 256, "%s/%s", dirs[i], prog);
		if (access(path, X_OK) == 0)
			return path;
	}
	cr_assert_fail("%s is not installed", prog);
	return NULL;
}

/* vt_run of @pre (NULL-terminated, may be empty), then @arg0 and @ap */
static int run_va(char **out, char *const pre[], const char *arg0, va_list ap)
{
	char *argv[40], path[256];
	int argc = 0;

	for (; *pre; pre++)
		argv[argc++] = *pre;
	argv[argc++] = arg0[0] == '/' ? (char *)arg0 : (char *)which(arg0, path);
	for (char *a; (a = va_arg(ap, char *));) {
		cr_assert(argc < 39);
		argv[argc++] = a;
	}
	argv[argc] = NULL;
	return vt_run(argv, out, VT_CMD_MS);
}

int rx_run(char **out, const char *arg0, ...)
{
	char *const none[] = { NULL };
	va_list ap;
	int st;

	va_start(ap, arg0);
	st = run_va(out, none, arg0, ap);
	va_end(ap);
	return st;
}

int rx_nfs_run(const struct rx_gw *gw, char **out, const char *arg0, ...)
{
	char bin[256], net[64];
	char *const pre[] = { (char *)which("nsenter", bin), net, "--", NULL };
	va_list ap;
	int st;

	cr_assert(gw->ns_pid > 0, "the NFS gateway is not running");
	snprintf(net, sizeof(net), "--net=/proc/%d/ns/net", (int)gw->ns_pid);
	va_start(ap, arg0);
	st = run_va(out, pre, arg0, ap);
	va_end(ap);
	return st;
}

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;

	cr_assert(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind: %s",
		     strerror(errno));
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* A TCP socket in the network namespace of @ns_pid (0: this one); -1 on
 * failure. This thread enters that namespace only for the socket() call:
 * a socket stays in the namespace it was made in. */
static int socket_in(pid_t ns_pid)
{
	char path[64];
	int ns, self, fd = -1;

	if (!ns_pid)
		return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)ns_pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns >= 0 && self >= 0 && setns(ns, CLONE_NEWNET) == 0) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (setns(self, CLONE_NEWNET) != 0)
			abort();        /* the rest of the test would run in there */
	}
	if (ns >= 0)
		close(ns);
	if (self >= 0)
		close(self);
	return fd;
}

static int port_answers(pid_t ns_pid, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket_in(ns_pid), ok;

	if (fd < 0)
		return 0;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

static char *log_tail(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t end;
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return buf;
	end = lseek(fd, 0, SEEK_END);
	n = pread(fd, buf, sizeof(buf) - 1, end > 4000 ? end - 4000 : 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

/* fork+exec in a session of its own: smbd's parent signals its whole
 * process group when it exits, which must not be the test's. */
static pid_t spawn_session(char *const argv[], const char *log_path)
{
	int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	pid_t pid;

	cr_assert(fd >= 0, "%s: %s", log_path, strerror(errno));
	pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDONLY);

		setsid();
		if (nfd < 0 || dup2(nfd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		close_range(3, ~0u, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd);
	return pid;
}

static void gw_spawn(struct rx_gw *gw, char *const argv[], const char *what)
{
	gw->pid = spawn_session(argv, gw->log);
	vt_watchdog_start(&gw->wd, gw->pid, NULL);
	for (int64_t end = tnow_ms() + RX_GW_WAIT_MS;;) {
		if (port_answers(gw->ns_pid, gw->port))
			break;
		int st = vt_wait_child(gw->pid, 0);

		if (st >= 0) {
			gw->pid = 0;
			rx_gw_stop(gw);
			cr_assert_fail("%s exited with status %d before it listened on "
				       "port %d; its log ends:\n%s", what, st, gw->port,
				       log_tail(gw->log));
		}
		if (tnow_ms() > end) {
			rx_gw_stop(gw);
			cr_assert_fail("%s does not listen on port %d after %d ms; its log "
				       "ends:\n%s", what, gw->port, RX_GW_WAIT_MS,
				       log_tail(gw->log));
		}
		tsleep_ms(50);
	}
	cr_log_info("%s: pid %d, 127.0.0.1:%d, log %s", what, (int)gw->pid, gw->port,
		    gw->log);
}

static void write_conf(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	cr_assert(f, "%s: %s", path, strerror(errno));
	cr_assert(fputs(text, f) >= 0 && fclose(f) == 0, "%s: write", path);
}

static void mkdirs(const char *base, const char *const names[])
{
	char p[4400];

	cr_assert(mkdir(base, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", base,
		  strerror(errno));
	for (; *names; names++) {
		snprintf(p, sizeof(p), "%s/%s", base, *names);
		cr_assert(mkdir(p, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", p,
			  strerror(errno));
	}
}

/* In a child about to exec rpcbind: new network and mount namespaces,
 * lo up, and a private /run for rpcbind's socket and lock file (ganesha
 * registers through that socket, which must not be a system rpcbind's).
 * A failure is written to the log and ends the child. */
static void ns_enter_new(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	const char *what;
	int fd;

	what = "unshare(CLONE_NEWNET | CLONE_NEWNS)";
	if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0)
		goto fail;
	/* nothing mounted in here may reach the test's namespace */
	what = "make / a slave mount";
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		goto fail;
	what = "mount a tmpfs on /run";
	if (mount("rx-run", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		goto fail;
	what = "bring lo up";
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		goto fail;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		goto fail;
	close(fd);
	return;
fail:
	dprintf(2, "rx: %s: %s\n", what, strerror(errno));
	_exit(126);
}

/* rpcbind -f in new namespaces (ns_enter_new) as gw->ns_pid; returns
 * once it answers on port 111 in there. */
static void ns_start(struct rx_gw *gw)
{
	char bin[256], log[4300];
	char *argv[] = { (char *)which("rpcbind", bin), "-f", NULL };
	int fd;

	snprintf(log, sizeof(log), "%s/rpcbind.log", gw->dir);
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	cr_assert(fd >= 0, "%s: %s", log, strerror(errno));
	gw->ns_pid = fork();
	cr_assert(gw->ns_pid >= 0, "fork: %s", strerror(errno));
	if (gw->ns_pid == 0) {
		int nfd = open("/dev/null", O_RDONLY);

		setsid();
		if (nfd < 0 || dup2(nfd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		close_range(3, ~0u, 0);
		ns_enter_new();
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd);
	vt_watchdog_start(&gw->ns_wd, gw->ns_pid, NULL);
	for (int64_t end = tnow_ms() + RX_GW_WAIT_MS; !port_answers(gw->ns_pid, 111);) {
		int st = vt_wait_child(gw->ns_pid, 0);

		if (st >= 0 || tnow_ms() > end) {
			if (st >= 0)
				gw->ns_pid = 0;
			rx_gw_stop(gw);
			cr_assert_fail("rpcbind %s port 111 in its namespace (status %d); "
				       "%s ends:\n%s", st >= 0 ? "exited before it listened on" :
				       "does not listen on", st, log, log_tail(log));
		}
		tsleep_ms(20);
	}
	cr_log_info("rpcbind: pid %d, in new network and mount namespaces", (int)gw->ns_pid);
}

void rx_nfs_start(struct tcluster *tc, struct rx_gw *gw)
{
	static const char *const sub[] = { "recovery", NULL };
	char uuid[64], hex[40], conf[16384], pidf[4300], bin[256], nsbin[256];
	char net[64], mnt[64];
	/* nsenter execs ganesha.nfsd: gw->pid is ganesha's */
	char *argv[] = { (char *)which("nsenter", nsbin), net, mnt, "--",
			 (char *)which("ganesha.nfsd", bin), "-F", "-f", gw->conf,
			 "-L", gw->log, "-p", pidf, "-N", "NIV_EVENT", NULL };
	size_t h = 0;

	memset(gw, 0, sizeof(*gw));
	gw->port = RX_NFS_PORT;
	snprintf(gw->dir, sizeof(gw->dir), "%s/ganesha", tcluster_dir(tc));
	snprintf(gw->conf, sizeof(gw->conf), "%s/ganesha.conf", gw->dir);
	snprintf(gw->log, sizeof(gw->log), "%s/ganesha.log", gw->dir);
	snprintf(pidf, sizeof(pidf), "%s/ganesha.pid", gw->dir);
	mkdirs(gw->dir, sub);
	/* Filesystem_id: the cluster uuid's first 16 hex digits, as two
	 * 32-bit halves, so every gateway of this cluster reports the same */
	rx_cluster_uuid(tc, uuid);
	for (const char *p = uuid; *p && h < 16; p++)
		if (*p != '-')
			hex[h++] = *p;
	hex[h] = '\0';
	cr_assert_eq(h, 16, "uuid %s", uuid);
	unsigned long fsid_minor = strtoul(hex + 8, NULL, 16), fsid_major;

	hex[8] = '\0';
	fsid_major = strtoul(hex, NULL, 16);
	/* No Bind_addr (in this namespace every address is on lo anyway):
	 * with one, ganesha 4.3 exits here with "No IP address found for
	 * 127.0.0.1 because:Name or service not known", getaddrinfo's answer
	 * to an AF_INET6 lookup with AI_ADDRCONFIG when ::1 is the only IPv6
	 * address (docs/reexport.md, "Bind_addr"). Dir_Chunk = 0: listings
	 * are read through the mount, not served from ganesha's cached
	 * entries, whose files may be gone (docs/reexport.md, "Dir_Chunk"). */
	snprintf(conf, sizeof(conf),
		 "# written by tests/reexport (docs/reexport.md)\n"
		 "NFS_CORE_PARAM {\n"
		 "\tNFS_Port = %d;\n"
		 "\tMNT_Port = %d;\n"
		 "\tProtocols = 3, 4;\n"
		 "\tMount_Path_Pseudo = true;\n"
		 "\tEnable_NLM = false;\n"
		 "\tEnable_RQUOTA = false;\n"
		 "\tEnable_UDP = false;\n"
		 "}\n"
		 "NFS_KRB5 { Active_krb5 = false; }\n"
		 "NFSV4 {\n"
		 "\tRecoveryBackend = fs;\n"
		 "\tRecoveryRoot = %s/recovery;\n"
		 "\tGraceless = true;\n"
		 "\tOnly_Numeric_Owners = true;\n"
		 "}\n"
		 "EXPORT {\n"
		 "\tExport_Id = 1;\n"
		 "\tPath = %s;\n"
		 "\tPseudo = /sdfs;\n"
		 "\tProtocols = 3, 4;\n"
		 "\tTransports = TCP;\n"
		 "\tAccess_Type = RW;\n"
		 "\tSquash = No_Root_Squash;\n"
		 "\tSecType = sys;\n"
		 "\tFilesystem_id = %lu.%lu;\n"
		 "\tAttr_Expiration_Time = %d;\n"
		 "\tFSAL { Name = VFS; }\n"
		 "}\n"
		 "MDCACHE { Dir_Chunk = 0; }\n"
		 "LOG { Default_Log_Level = EVENT; Components { FSAL = INFO; } }\n",
		 gw->port, RX_MNT_PORT, gw->dir, tcluster_mnt(tc), fsid_major, fsid_minor,
		 RX_GW_ATTR_S);
	write_conf(gw->conf, conf);
	gw->smb = 0;
	ns_start(gw);
	snprintf(net, sizeof(net), "--net=/proc/%d/ns/net", (int)gw->ns_pid);
	snprintf(mnt, sizeof(mnt), "--mount=/proc/%d/ns/mnt", (int)gw->ns_pid);
	gw_spawn(gw, argv, "ganesha.nfsd");
	/* the port answers before the exports do: poll nfs-ls of the root,
	 * over NFSv4 and NFSv3 */
	for (int64_t t0 = tnow_ms(), end = t0 + RX_GW_WAIT_MS;;) {
		char url[PATH_MAX + 128], *out;
		int st = rx_nfs_run(gw, &out, "nfs-ls", rx_nfs_url(gw, "", url), NULL);

		if (st == 0) {
			free(out);
			st = rx_nfs_run(gw, &out, "nfs-ls", rx_nfs3_url(gw, "", url), NULL);
		}
		if (st == 0) {
			free(out);
			cr_log_info("ganesha.nfsd serves the export %" PRId64 " ms after "
				    "listening", tnow_ms() - t0);
			break;
		}
		if (tnow_ms() > end || vt_wait_child(gw->pid, 0) >= 0) {
			rx_gw_stop(gw);
			cr_assert_fail("nfs-ls %s fails %d ms after ganesha.nfsd listened: "
				       "%s; its log ends:\n%s", url, RX_GW_WAIT_MS, out,
				       log_tail(gw->log));
		}
		free(out);
		tsleep_ms(200);
	}
}

void rx_smb_start(struct tcluster *tc, struct rx_gw *gw)
{
	static const char *const sub[] = { "private", "lock", "state", "cache", "pid",
					   "ncalrpc", "log", NULL };
	static char conf[65536];
	char bin[256];
	char *argv[] = { NULL, "--foreground", "--no-process-group", "--debug-stdout",
			 "-s", gw->conf, NULL };
	const char *d = gw->dir;

	if (!gw->port) {
		memset(gw, 0, sizeof(*gw));
		gw->port = free_port();
	}
	snprintf(gw->dir, sizeof(gw->dir), "%s/samba", tcluster_dir(tc));
	snprintf(gw->conf, sizeof(gw->conf), "%s/smb.conf", gw->dir);
	snprintf(gw->log, sizeof(gw->log), "%s/smbd.out", gw->dir);
	mkdirs(gw->dir, sub);
	snprintf(conf, sizeof(conf),
		 "# written by tests/reexport (docs/reexport.md)\n"
		 "[global]\n"
		 "\tserver role = standalone server\n"
		 "\tworkgroup = SDFS\n"
		 "\tnetbios name = SDFSTEST\n"
		 "\tinterfaces = 127.0.0.1\n"
		 "\tbind interfaces only = yes\n"
		 "\tsmb ports = %d\n"
		 "\tdisable netbios = yes\n"
		 "\tprivate dir = %s/private\n"
		 "\tlock directory = %s/lock\n"
		 "\tstate directory = %s/state\n"
		 "\tcache directory = %s/cache\n"
		 "\tpid directory = %s/pid\n"
		 "\tncalrpc dir = %s/ncalrpc\n"
		 "\tlog file = %s/log/smbd.log\n"
		 "\tpassdb backend = tdbsam:%s/private/passdb.tdb\n"
		 "\tmap to guest = bad user\n"
		 "\tguest account = root\n"
		 "\tload printers = no\n"
		 "\tprinting = bsd\n"
		 "\tprintcap name = /dev/null\n"
		 "\tdisable spoolss = yes\n"
		 "\tkernel oplocks = no\n"
		 "\tkernel share modes = no\n"
		 "\tposix locking = yes\n"
		 /* allow SMB1 (the default minimum is SMB2_02): smbclient's
		  * `lock` needs SMB1 UNIX extensions; other clients still
		  * negotiate SMB2/3 */
		 "\tserver min protocol = NT1\n"
		 "[sdfs]\n"
		 "\tpath = %s\n"
		 "\tread only = no\n"
		 "\tguest ok = yes\n"
		 "\tguest only = yes\n"
		 "\tvfs objects = fileid\n"
		 "\tfileid:algorithm = fsname\n"
		 "\tstore dos attributes = yes\n"
		 "\tea support = yes\n"
		 "\tstrict locking = yes\n",
		 gw->port, d, d, d, d, d, d, d, d, tcluster_mnt(tc));
	write_conf(gw->conf, conf);
	argv[0] = (char *)which("smbd", bin);
	gw->smb = 1;
	gw_spawn(gw, argv, "smbd");
}

static void stop_child(pid_t *pid, struct vt_watchdog *wd, const char *what)
{
	if (*pid > 0) {
		kill(*pid, SIGTERM);
		if (vt_wait_child(*pid, 20000) < 0) {
			cr_log_warn("%s pid %d still runs 20 s after SIGTERM: SIGKILL", what,
				    (int)*pid);
			kill(*pid, SIGKILL);
			waitpid(*pid, NULL, 0);
		}
		*pid = 0;
	}
	vt_watchdog_stop(wd);
}

void rx_gw_stop(struct rx_gw *gw)
{
	stop_child(&gw->pid, &gw->wd, gw->smb ? "smbd" : "ganesha.nfsd");
	/* after ganesha, which unregisters from it as it ends */
	stop_child(&gw->ns_pid, &gw->ns_wd, "rpcbind");
}

const char *rx_nfs_url(const struct rx_gw *gw, const char *path, char *buf)
{
	snprintf(buf, PATH_MAX + 128, "nfs://127.0.0.1/sdfs/%s?version=4&nfsport=%d",
		 path, gw->port);
	return buf;
}

const char *rx_nfs3_url(const struct rx_gw *gw, const char *path, char *buf)
{
	snprintf(buf, PATH_MAX + 128,
		 "nfs://127.0.0.1/sdfs/%s?version=3&nfsport=%d&mountport=%d", path,
		 gw->port, RX_MNT_PORT);
	return buf;
}

void rx_make_files(struct tcluster *tc, const char *dir, unsigned n)
{
	char path[PATH_MAX + 64];
	int dfd;

	vt_path(tc, dir, path);
	cr_assert(mkdir(path, 0755) == 0, "mkdir %s: %s", path, strerror(errno));
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(dfd >= 0, "%s: %s", path, strerror(errno));
	for (unsigned i = 0; i < n; i++) {
		char name[16];
		int fd;

		snprintf(name, sizeof(name), "f%05u", i);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		cr_assert(fd >= 0, "create %s/%s: %s", path, name, strerror(errno));
		close(fd);
	}
	close(dfd);
}

void rx_write_file(const char *path, size_t len, uint64_t seed)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	char *buf = malloc(len ? len : 1);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert(buf);
	tfill_random(buf, len, seed);
	vt_pwrite(fd, buf, len, 0, path);
	cr_assert_eq(close(fd), 0, "close %s: %s", path, strerror(errno));
	free(buf);
}

void rx_check_file(const char *path, size_t len, uint64_t seed, const char *what)
{
	char *want = malloc(len ? len : 1);

	cr_assert(want);
	tfill_random(want, len, seed);
	rx_check_bytes(path, want, len, what);
	free(want);
}

void rx_check_bytes(const char *path, const void *want, size_t len, const char *what)
{
	uint8_t *got;
	size_t n = vt_slurp(path, &got);

	cr_assert_eq(n, len, "%s: %s has %zu bytes, want %zu", what, path, n, len);
	vt_assert_same(got, want, len, 0, 4096, what);
	free(got);
}
