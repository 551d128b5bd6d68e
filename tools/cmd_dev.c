/*
 * cmd_dev.c - sdfs dev: a whole cluster on this machine, on loopback,
 * for trying sdfs out and for tests.
 *
 * Everything lives under one directory:
 *   DIR/sdfs.conf        how clients reach it (SDFS_CONF=DIR/sdfs.conf);
 *                        its keyring = DIR/keyring
 *   DIR/keyring          the admin key client.admin (cluster format)
 *   DIR/keys/KEY.keyring each daemon's and mount's own key: blockd.N and
 *                        mds.N (caps daemon), client.mountN (caps rw,
 *                        the mount mnt is N = 1, mntN is N); with
 *                        --auth none neither these nor DIR/keyring
 *   DIR/zk/              the private ZooKeeper server's config and data;
 *   DIR/zk.K/            with --zk-servers N, server K's of N (K = 1..N)
 *   DIR/blockd.N/        block daemon N's data directory (dev add: one more)
 *   (mds.N)              metadata server N: no local state, its database
 *                        lives in objects on the block daemons
 *   DIR/mnt              the filesystem, mounted by mount.sdfs (dev name mnt);
 *   DIR/mnt2 ... mntN    with --mounts N, more mounts of it, each its own
 *                        mount.sdfs (dev names mnt2 ... mntN)
 *   DIR/log/NAME.log     each daemon's output
 *   DIR/run/NAME.pid     its pid; DIR/run/NAME.cmd its command line
 *   DIR/netns.conf,      with --netns: the bridge's subnet, and each
 *   DIR/run/NAME.netns   daemon's network namespace and address
 *                        (dev_netns.h)
 * Daemons are stopped by the pids recorded here, never by name.
 *
 * With --cluster-net, block daemon N also listens on the cluster
 * address 127.0.1.(N+1) (--cluster-listen, on its public port), a
 * loopback address of its own, and its peers connect there; clients
 * keep 127.0.0.1 (docs/config.md cluster_addr). dev add follows what
 * blockd.0 was started with.
 *
 * The block daemons and the mds read ZooKeeper's address and the
 * cluster name from DIR/sdfs.conf (--conf), not from their command
 * line: `dev up` on an existing dir may have to move ZooKeeper to
 * another port, and every daemon recorded under DIR/run (added block
 * daemons, more mds, mounts) then starts again with the current one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/coord_auth.h"
#include "tools/cli.h"
#include "tools/dev_netns.h"
#include "tools/keyadm.h"

#define DEV_MAX_ARGS 32
#define DEV_MDS_MAX 8
#define DEV_MDS_WAIT_MS 30000
#define DEV_MOUNT_WAIT_MS 30000
#define DEV_MOUNTS_MAX 4        /* --mounts: DIR/mnt, DIR/mnt2 ... DIR/mnt4 */
#define ZK_JAR "/usr/share/java/zookeeper.jar"

struct dev {
	char dir[PATH_MAX];
	char conf[PATH_MAX + 32];       /* DIR/sdfs.conf */
	char zk[256];           /* ZooKeeper hosts */
	char cluster[64];
	int external_zk;        /* --zk given: no private server */
	unsigned zk_servers;    /* else how many: 1 (zk), 3 or 5 (zk.1...) */
	int netns;              /* --netns: each daemon in its own namespace */
	struct dev_net net;     /* then: the bridge's subnet... (dev_netns.h) */
	int auth;               /* keys (not --auth none) */
	char keyring[PATH_MAX + 32];    /* DIR/keyring: the admin key */
	struct keyadm *ka;      /* an admin session while keys are made */
	char sets[1024];        /* --set lines ("key = value\n"...), kept
				   in sdfs.conf after DEV_SET_MARK */
};

#define DEV_SET_MARK "# dev up --set\n"

#define DEV_ZK_NETNS_PORT 2181          /* --netns: every daemon has its */
#define DEV_BLOCKD_NETNS_PORT 7000      /* own address, so fixed ports */
#define DEV_MDS_NETNS_PORT 7100

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* --cluster-net: block daemon @idx's cluster address (on its public
 * port @port), "127.0.1.(idx+1):PORT" into @buf. 0, or -1 past .254. */
static int cluster_listen(int idx, int port, char *buf, size_t len)
{
	if (idx < 0 || idx > 253)
		return -1;
	snprintf(buf, len, "127.0.1.%d:%d", idx + 1, port);
	return 0;
}

/* Can @port (0: any) be bound on loopback now? The port, or -1. */
static int try_port(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), got = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		got = ntohs(sa.sin_port);
	close(fd);
	return got;
}

/* Can @port be bound again by a server that sets SO_REUSEADDR (Java's
 * ZooKeeper does): one whose old connections wait in TIME_WAIT is fine. */
static int port_reusable(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, ok;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || port <= 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/*
 * A port for a daemon to listen on, below the kernel's ephemeral range
 * (ip_local_port_range): a port from that range may be taken by any
 * outgoing connection while its daemon is down, and a restarted daemon
 * could then not listen again ("Address already in use"). Random
 * within [10000, the range's start); the kernel's pick if none is free.
 */
/* Ports this process handed out: the daemons it starts bind them only
 * later, so "free now" does not mean "not given to another daemon of
 * this dev up" (two block daemons once got one port: "Address already
 * in use"). */
static int handed[512];
static size_t nhanded;

static int handed_out(int port)
{
	for (size_t i = 0; i < nhanded; i++)
		if (handed[i] == port)
			return 1;
	return 0;
}

static int hand_out(int port)
{
	if (port > 0 && nhanded < sizeof(handed) / sizeof(handed[0]))
		handed[nhanded++] = port;
	return port;
}

static int free_port(void)
{
	static unsigned seed;
	int low = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%d %d", &low, &hi) != 2)
			low = 32768;
		fclose(f);
	}
	if (!seed)
		seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	for (int i = 0; low > 10100 && i < 200; i++) {
		int port = 10000 + (int)(rand_r(&seed) % (unsigned)(low - 10000));

		if (!handed_out(port) && try_port(port) == port)
			return hand_out(port);
	}
	for (int i = 0; i < 200; i++) {
		int port = try_port(0);

		if (port > 0 && !handed_out(port))
			return hand_out(port);
	}
	return -1;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

/* A sibling binary: next to this sdfs, in the build tree, or on PATH. */
static int find_binary(const char *name, const char *subdir, char *out, size_t len)
{
	char self[PATH_MAX / 2];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(out, len, "%s/%s", self, name);
			if (access(out, X_OK) == 0)
				return 0;
			snprintf(out, len, "%s/../%s/%s", self, subdir, name);
			if (access(out, X_OK) == 0)
				return 0;
		}
	}
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/sbin:/usr/bin");
	for (char *save, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", d, name);
		if (access(out, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static void run_path(const struct dev *d, const char *name, const char *ext,
		     char *out, size_t len)
{
	snprintf(out, len, "%s/run/%s.%s", d->dir, name, ext);
}

static pid_t read_pid(const struct dev *d, const char *name)
{
	char path[PATH_MAX + 64], buf[32];

	run_path(d, name, "pid", path, sizeof(path));
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	long v = strtol(buf, NULL, 10);
	return v > 0 ? (pid_t)v : -1;
}

/* Is the recorded pid alive and still running the command we started? */
static int is_running(const struct dev *d, const char *name, pid_t *pidp)
{
	char path[PATH_MAX + 64], cmd[4096], proc[4096];
	pid_t pid = read_pid(d, name);
	int n;

	if (pidp)
		*pidp = pid;
	if (pid <= 0 || kill(pid, 0) != 0)
		return 0;
	run_path(d, name, "cmd", path, sizeof(path));
	if (read_file(path, cmd, sizeof(cmd)) <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = read_file(path, proc, sizeof(proc));
	if (n <= 0)
		return 0;
	/* A zombie child of ours has an empty cmdline; the same first word
	 * means the pid was not reused by something else. */
	return strcmp(cmd, proc) == 0;
}

/* Start @argv in the background with output to DIR/log/@name.log. */
static int spawn(const struct dev *d, const char *name, char *const argv[])
{
	char path[PATH_MAX + 64], logp[PATH_MAX + 64], buf[4096];
	size_t off = 0;
	pid_t pid;

	for (int i = 0; argv[i]; i++) {
		size_t l = strlen(argv[i]) + 1;

		if (off + l >= sizeof(buf))
			return -E2BIG;
		memcpy(buf + off, argv[i], l);
		off += l;
	}
	run_path(d, name, "cmd", path, sizeof(path));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, off) != (ssize_t)off) {
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	snprintf(logp, sizeof(logp), "%s/log/%s.log", d->dir, name);
	/* The child reports a failed exec through @sync; a successful one
	 * closes it (O_CLOEXEC). */
	int sync[2], err = 0;
	if (pipe2(sync, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(sync[0]);
		close(sync[1]);
		return err;
	}
	if (pid == 0) {
		int lfd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0644);
		int nfd = open("/dev/null", O_RDONLY);

		close(sync[0]);
		setsid();
		err = dev_netns_enter(d->dir, name);
		if (err) {
			dprintf(lfd, "sdfs dev: cannot enter %s's network namespace: %s\n",
				name, strerror(-err));
			err = -err;
			if (write(sync[1], &err, sizeof(err)) < 0)
				_exit(127);
			_exit(127);
		}
		if (lfd >= 0 && nfd >= 0) {
			dup2(nfd, 0);
			dup2(lfd, 1);
			dup2(lfd, 2);
			execv(argv[0], argv);
		}
		err = errno;
		dprintf(2, "sdfs dev: exec %s: %s\n", argv[0], strerror(err));
		if (write(sync[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(sync[1]);
	/* Return only once the daemon runs its own command line: a dev
	 * status, kill or down right after us must recognize it. */
	ssize_t r;
	do
		r = read(sync[0], &err, sizeof(err));
	while (r < 0 && errno == EINTR);
	close(sync[0]);
	if (r > 0) {
		waitpid(pid, NULL, 0);
		return -(err ? err : EIO);
	}
	run_path(d, name, "pid", path, sizeof(path));
	snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	return write_file(path, buf);
}

/*
 * A listen address to use again, "@host:PORT" (into @buf): in its own
 * namespace (@host not loopback) the port recorded in @addr; on
 * loopback that port if it can still be bound there, else a new one.
 */
static char *listen_again(const char *host, const char *addr, char *buf, size_t len)
{
	const char *colon = strrchr(addr, ':');
	int port = colon ? atoi(colon + 1) : 0;
	int loop = !strcmp(host, "127.0.0.1");

	if (loop && (port <= 0 || strncmp(addr, "127.0.0.1:", 10) || handed_out(port) ||
		     try_port(port) != port))
		port = free_port();
	else if (loop)
		hand_out(port);
	snprintf(buf, len, "%s:%d", host, port);
	return buf;
}

/*
 * The address @name listens on: 127.0.0.1, or with --netns its own
 * namespace's, which is made now if it is not there (dev up again, dev
 * start after a dev down). 0, or 1 after saying what failed.
 */
static int daemon_host(const struct dev *d, const char *name, char *host, size_t len)
{
	char path[PATH_MAX + 64], text[256], ns[128], addr[64], err[512];
	int ret;

	if (!d->netns) {
		snprintf(host, len, "127.0.0.1");
		return 0;
	}
	run_path(d, name, "netns", path, sizeof(path));
	if (read_file(path, text, sizeof(text)) > 0 &&
	    sscanf(text, "%127s %63s", ns, addr) == 2) {
		snprintf(path, sizeof(path), "/run/netns/%s", ns);
		if (access(path, F_OK) == 0) {
			snprintf(host, len, "%s", addr);
			return 0;
		}
	}
	ret = dev_netns_add(d->dir, &d->net, name, host, len, err, sizeof(err));
	if (ret)
		return cli_fail("%s", err);
	return 0;
}

/*
 * The command line to start @name with again, from the one recorded
 * (@cmd, @n bytes, NUL-separated) into @argv. A block daemon or an mds
 * gets --conf DIR/sdfs.conf in place of whatever --zk, --cluster or
 * --conf it had (a dir from an older sdfs recorded the address itself),
 * and keeps its --listen port if still free (else a new one, written
 * into @listen). ZooKeeper and the mounts start as recorded.
 */
static void again_argv(const struct dev *d, const char *name, char *cmd, int n,
		       const char *host, char *argv[], char *listen, size_t llen)
{
	int daemon = !strncmp(name, "blockd.", 7) || !strncmp(name, "mds.", 4);
	char *words[DEV_MAX_ARGS];
	int nw = 0, argc = 0;

	for (int off = 0; off < n && nw < DEV_MAX_ARGS; off += (int)strlen(cmd + off) + 1)
		words[nw++] = cmd + off;
	for (int i = 0; i < nw && argc < DEV_MAX_ARGS - 2; i++) {
		int has_value = i + 1 < nw;

		if (daemon && i > 0 && has_value && (!strcmp(words[i], "--zk") ||
		    !strcmp(words[i], "--cluster") || !strcmp(words[i], "--conf"))) {
			i++;
			continue;
		}
		argv[argc++] = words[i];
		if (daemon && has_value && !strcmp(words[i], "--listen"))
			argv[argc++] = listen_again(host, words[++i], listen, llen);
	}
	if (daemon) {
		argv[argc++] = "--conf";
		argv[argc++] = (char *)d->conf;
	}
	argv[argc] = NULL;
}

/* Start @name again from its recorded command line (again_argv), in
 * its namespace with --netns. */
static int respawn(const struct dev *d, const char *name)
{
	char path[PATH_MAX + 64], cmd[4096], listen[96], host[64];
	char *argv[DEV_MAX_ARGS + 1];
	int n;

	run_path(d, name, "cmd", path, sizeof(path));
	n = read_file(path, cmd, sizeof(cmd));
	if (n <= 0)
		return -ENOENT;
	if (daemon_host(d, name, host, sizeof(host)))
		return -EIO;
	again_argv(d, name, cmd, n, host, argv, listen, sizeof(listen));
	return spawn(d, name, argv);
}

static void reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* Gone, or a zombie that init has not reaped yet? */
static int pid_gone(pid_t pid)
{
	char path[64], st[512];

	if (kill(pid, 0) != 0)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file(path, st, sizeof(st)) <= 0)
		return 1;
	char *paren = strrchr(st, ')');
	return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

/* SIGTERM every daemon in @names at once, wait up to @wait_ms for all of
 * them, SIGKILL what is left. Returns how many were running. */
static int stop_daemons(const struct dev *d, char names[][64], int n, int wait_ms)
{
	pid_t pids[64];
	int running = 0;

	for (int i = 0; i < n && i < 64; i++) {
		pids[i] = -1;
		/* Ours: still running what we recorded, or a child of this very
		 * process that has not reached exec yet (dev up failing). */
		if (is_running(d, names[i], &pids[i]) ||
		    (pids[i] > 0 && waitpid(pids[i], NULL, WNOHANG) == 0)) {
			kill(pids[i], SIGTERM);
			running++;
		} else {
			pids[i] = -1;
		}
	}
	for (int64_t end = now_ms() + wait_ms; now_ms() < end;) {
		int alive = 0;

		reap();
		for (int i = 0; i < n && i < 64; i++)
			alive += pids[i] > 0 && !pid_gone(pids[i]);
		if (!alive)
			break;
		sleep_ms(20);
	}
	for (int i = 0; i < n && i < 64; i++) {
		char path[PATH_MAX + 64];

		if (pids[i] > 0 && kill(pids[i], 0) == 0)
			kill(pids[i], SIGKILL);
		run_path(d, names[i], "pid", path, sizeof(path));
		unlink(path);
	}
	reap();
	return running;
}

static int dev_init(struct dev *d, const char *dir, int create)
{
	char sub[PATH_MAX + 16];

	if (!dir)
		return cli_bad("--dir DIR is required");
	if (create && mkdir(dir, 0755) < 0 && errno != EEXIST)
		return cli_fail("%s: %s", dir, strerror(errno));
	if (!realpath(dir, d->dir))
		return cli_fail("%s: %s", dir, strerror(errno));
	if (strlen(d->dir) > PATH_MAX - 128)
		return cli_fail("%s: path too long", dir);
	snprintf(d->conf, sizeof(d->conf), "%s/sdfs.conf", d->dir);
	snprintf(d->keyring, sizeof(d->keyring), "%s/keyring", d->dir);
	d->auth = access(d->keyring, F_OK) == 0;
	d->netns = dev_netns_load(d->dir, &d->net) == 0;
	if (create) {
		snprintf(sub, sizeof(sub), "%s/log", d->dir);
		mkdir(sub, 0755);
		snprintf(sub, sizeof(sub), "%s/run", d->dir);
		mkdir(sub, 0755);
	}
	return 0;
}

/* Names of the daemons recorded under DIR/run, sorted; zk last. */
static int list_daemons(const struct dev *d, char names[][64], int max)
{
	char path[PATH_MAX + 16];
	DIR *dir;
	struct dirent *e;
	int n = 0, zk = 0;

	snprintf(path, sizeof(path), "%s/run", d->dir);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((e = readdir(dir)) && n < max) {
		size_t l = strlen(e->d_name);

		if (l < 5 || l >= 64 + 4 || strcmp(e->d_name + l - 4, ".cmd"))
			continue;
		if (!strncmp(e->d_name, "zk.cmd", 6)) {
			zk = 1;
			continue;
		}
		memcpy(names[n], e->d_name, l - 4);
		names[n++][l - 4] = '\0';
	}
	closedir(dir);
	qsort(names, n, 64, (int (*)(const void *, const void *))strcmp);
	if (zk && n < max)
		strcpy(names[n++], "zk");
	return n;
}

/*
 * The private ZooKeeper: one server "zk" (DIR/zk/), or with
 * --zk-servers N an ensemble of N (3 or 5), "zk.1" ... "zk.N", each with
 * its own DIR/zk.K/ (zoo.cfg, myid, data), client port and quorum and
 * election ports; DIR/sdfs.conf's zk lists them all.
 */
#define DEV_ZK_MAX 5
#define DEV_ZK_NETNS_QUORUM 2888        /* --netns: each server its address */
#define DEV_ZK_NETNS_ELECTION 3888

struct zk_server {
	char name[16];          /* zk, zk.K */
	char host[64];
	int port, quorum, election;     /* client, peer, leader election */
};

static void zk_name(unsigned n, unsigned k, char *out, size_t len)
{
	if (n == 1)
		snprintf(out, len, "zk");
	else
		snprintf(out, len, "zk.%u", k);
}

/* Is @name the private ZooKeeper server (zk) or one of an ensemble (zk.K)? */
static int is_zk_name(const char *name)
{
	char *end;

	if (!strcmp(name, "zk"))
		return 1;
	if (strncmp(name, "zk.", 3))
		return 0;
	unsigned long k = strtoul(name + 3, &end, 10);
	return end != name + 3 && !*end && k >= 1 && k <= DEV_ZK_MAX;
}

/* How many servers an earlier dev up in DIR ran (run/zk.cmd: 1, else the
 * highest K of run/zk.K.cmd); 0 if none. */
static unsigned zk_recorded(const struct dev *d)
{
	char path[PATH_MAX + 64], name[16];
	unsigned n = 0;

	run_path(d, "zk", "cmd", path, sizeof(path));
	if (access(path, F_OK) == 0)
		return 1;
	for (unsigned k = 1; k <= DEV_ZK_MAX; k++) {
		snprintf(name, sizeof(name), "zk.%u", k);
		run_path(d, name, "cmd", path, sizeof(path));
		if (access(path, F_OK) == 0)
			n = k;
	}
	return n;
}

/* The value of "@key=" in a zoo.cfg's @text, or 0. */
static int cfg_int(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == '=')
			return atoi(p + kl + 1);
	return 0;
}

/*
 * The ports of @z (server @k of @n) on loopback: those of its earlier
 * zoo.cfg if each can still be bound, else new ones. Keeping them spares
 * everyone else (a shell's SDFS_CONF) a surprise; the daemons read the
 * address from sdfs.conf either way. @taken: ports given to the servers
 * before this one.
 */
static int zk_ports(const struct dev *d, unsigned n, unsigned k, struct zk_server *z,
		    const int *taken, int ntaken)
{
	char cfg[PATH_MAX + 32], text[4096], key[16];
	int want[3] = { 0 }, *out[3] = { &z->port, &z->quorum, &z->election };

	snprintf(cfg, sizeof(cfg), "%s/%s/zoo.cfg", d->dir, z->name);
	if (read_file(cfg, text, sizeof(text)) > 0) {
		want[0] = cfg_int(text, "clientPort");
		snprintf(key, sizeof(key), "server.%u", k);
		const char *p = strstr(text, key);
		if (p && (p = strchr(p, ':')))
			sscanf(p, ":%d:%d", &want[1], &want[2]);
	}
	for (int i = 0; i < (n == 1 ? 1 : 3); i++) {
		int port = want[i], tries = 0;

		for (;;) {
			int dup = port <= 0;

			for (int j = 0; j < ntaken && !dup; j++)
				dup = taken[j] == port;
			for (int j = 0; j < i && !dup; j++)
				dup = *out[j] == port;
			if (!dup && port == want[i] && handed_out(port))
				dup = 1;
			if (!dup && (port == want[i] ? port_reusable(port) :
				     try_port(port) == port))
				break;
			if (++tries > 50)
				return -EADDRINUSE;
			port = free_port();
		}
		if (port == want[i])
			hand_out(port);
		*out[i] = port;
	}
	return 0;
}

/* DIR/@name/zoo.cfg (and myid for an ensemble) for server @k of @zs. */
static int zk_write_cfg(const struct dev *d, const struct zk_server *zs, unsigned n,
			unsigned k)
{
	const struct zk_server *z = &zs[k - 1];
	char cfgdir[PATH_MAX + 512], path[PATH_MAX + 528], text[PATH_MAX + 1536];
	int off, ret;

	snprintf(cfgdir, sizeof(cfgdir), "%s/%s", d->dir, z->name);
	mkdir(cfgdir, 0755);
	off = snprintf(text, sizeof(text),
		       "# written by sdfs dev up\ntickTime=500\ninitLimit=10\nsyncLimit=%d\n"
		       "dataDir=%s\nclientPort=%d\nclientPortAddress=%s\n"
		       "maxClientCnxns=0\nadmin.enableServer=false\n"
		       "minSessionTimeout=1000\nmaxSessionTimeout=20000\n"
		       "# a local test server: no fsync per change, so a loaded disk\n"
		       "# cannot stall sessions into expiring\nforceSync=no\n",
		       n == 1 ? 5 : 2, cfgdir, z->port, z->host);
	if (n > 1) {
		/* syncLimit 2 ticks: a follower gives up on a leader that
		 * went silent after 1 s and a new one is elected */
		off += snprintf(text + off, sizeof(text) - off,
				"# tests find the leader with srvr (tests/fault)\n"
				"4lw.commands.whitelist=srvr,ruok,mntr\n");
		for (unsigned i = 0; i < n; i++)
			off += snprintf(text + off, sizeof(text) - off, "server.%u=%s:%d:%d\n",
					i + 1, zs[i].host, zs[i].quorum, zs[i].election);
		snprintf(path, sizeof(path), "%s/myid", cfgdir);
		char id[16];
		snprintf(id, sizeof(id), "%u\n", k);
		if ((ret = write_file(path, id)))
			return cli_fail("%s: %s", path, strerror(-ret));
	}
	snprintf(path, sizeof(path), "%s/zoo.cfg", cfgdir);
	if ((ret = write_file(path, text)))
		return cli_fail("%s: %s", path, strerror(-ret));
	return 0;
}

/* Start the @n ZooKeeper servers; d->zk lists their client addresses. */
static int start_zk(struct dev *d, unsigned n)
{
	char java[PATH_MAX], logdir[PATH_MAX + 32], cfg[PATH_MAX + 528];
	struct zk_server zs[DEV_ZK_MAX];
	int taken[3 * DEV_ZK_MAX], ntaken = 0, ret, off = 0;

	if (access(ZK_JAR, R_OK) != 0)
		return cli_fail("%s not found (apt-get install zookeeper)", ZK_JAR);
	if (find_binary("java", "-", java, sizeof(java)))
		return cli_fail("java not found (apt-get install default-jre-headless)");
	for (unsigned k = 1; k <= n; k++) {
		struct zk_server *z = &zs[k - 1];

		zk_name(n, k, z->name, sizeof(z->name));
		if (daemon_host(d, z->name, z->host, sizeof(z->host)))
			return 1;
		if (d->netns) {
			z->port = DEV_ZK_NETNS_PORT;
			z->quorum = DEV_ZK_NETNS_QUORUM;
			z->election = DEV_ZK_NETNS_ELECTION;
		} else if (zk_ports(d, n, k, z, taken, ntaken)) {
			return cli_fail("no free port for ZooKeeper");
		} else {
			taken[ntaken++] = z->port;
			taken[ntaken++] = z->quorum;
			taken[ntaken++] = z->election;
		}
	}
	for (unsigned k = 1; k <= n; k++)
		if (zk_write_cfg(d, zs, n, k))
			return 1;
	snprintf(logdir, sizeof(logdir), "-Dzookeeper.log.dir=%s/log", d->dir);
	d->zk[0] = '\0';
	for (unsigned k = 1; k <= n; k++) {
		struct zk_server *z = &zs[k - 1];

		snprintf(cfg, sizeof(cfg), "%s/%s/zoo.cfg", d->dir, z->name);
		char *argv[] = {
			java, "-Xmx256m", "-XX:+UseSerialGC",
			"-Dzookeeper.admin.enableServer=false", logdir,
			"-Dzookeeper.root.logger=WARN,CONSOLE",
			"-cp", "/etc/zookeeper/conf:" ZK_JAR,
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg, NULL,
		};
		ret = spawn(d, z->name, argv);
		if (ret)
			return cli_fail("cannot start ZooKeeper %s: %s", z->name, strerror(-ret));
		off += snprintf(d->zk + off, sizeof(d->zk) - off, "%s%s:%d", k > 1 ? "," : "",
				z->host, z->port);
	}
	return 0;
}

/* Connect, retrying while ZooKeeper starts. */
static struct sdfs *connect_wait(const struct dev *d, int timeout_ms)
{
	char err[512] = "";
	int64_t end = now_ms() + timeout_ms;

	for (;;) {
		struct sdfs *s;

		/* sdfs.conf: ZooKeeper, and the admin keyring once there is one */
		if (sdfs_open(d->conf, &s, err, sizeof(err)) == 0)
			return s;
		if (now_ms() > end)
			break;
		sleep_ms(200);
	}
	cli_fail("%s (see %s/log/%s.log)", err, d->dir, d->zk_servers > 1 ? "zk.1" : "zk");
	return NULL;
}

/* Has our child @name exited? (is_running would also say no for a child
 * that has not reached exec yet.) */
static int has_exited(const struct dev *d, const char *name)
{
	pid_t pid = read_pid(d, name);

	return pid <= 0 || waitpid(pid, NULL, WNOHANG) == pid || kill(pid, 0) != 0;
}

/* Wait until the @want block daemons @names are up and answer with the
 * current epoch; -ESRCH at once if one of them has exited. */
static int wait_nodes(const struct dev *d, struct sdfs *s, char names[][64],
		      unsigned want, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;

	while (now_ms() < end) {
		for (unsigned i = 0; i < want; i++) {
			const char *name = names[i];

			if (has_exited(d, name)) {
				cli_fail("%s exited during start-up (see %s/log/%s.log)",
					 name, d->dir, name);
				return -ESRCH;
			}
		}
		struct sdfs_cluster_info info;
		struct sdfs_node_status *nodes;
		size_t n;
		unsigned ready = 0;

		if (sdfs_cluster_info(s, &info) == 0 && info.nodes_up >= want &&
		    sdfs_node_list(s, &nodes, &n) == 0) {
			for (size_t i = 0; i < n; i++)
				ready += nodes[i].reachable && nodes[i].epoch == info.epoch;
			free(nodes);
			if (ready >= want)
				return 0;
		}
		sleep_ms(100);
	}
	return -ETIMEDOUT;
}

/*
 * After start-up each node runs a first recovery pass (quick on a new
 * cluster, longer after a restart with data): wait for it, so that a
 * cluster dev up returned is healthy. Not fatal: the daemons are up.
 */
static void wait_healthy(const struct dev *d, struct sdfs *s, int timeout_ms)
{
	struct sdfs_health h = { .reason = "no answer" };

	for (int64_t end = now_ms() + timeout_ms; now_ms() < end; sleep_ms(100)) {
		if (sdfs_cluster_health(s, &h) == 0 &&
		    (h.healthy || !strncmp(h.reason, "fewer nodes", 11)))
			break;
	}
	if (!h.healthy)
		fprintf(stderr, "sdfs: warning: cluster not healthy yet: %s (see sdfs "
			"cluster status, %s/log/)\n", h.reason, d->dir);
}

/* Is @name among the running mds (in the election)? */
static int mds_listed(struct sdfs *s, const char *name)
{
	struct sdfs_mds_status st;
	int found = 0;

	if (sdfs_mds_status(s, &st))
		return 0;
	for (size_t i = 0; i < st.n; i++)
		found |= !strcmp(st.list[i].name, name);
	free(st.list);
	return found;
}

/*
 * Keys (docs/operations.md "Keys"): the key of dev daemon @name.
 * blockd.N and mds.N are keys of their own names; the mount mnt is
 * client.mount1, mntN client.mountN.
 */
static void dev_key_name(const char *name, char *out, size_t len)
{
	if (!strcmp(name, "mnt"))
		snprintf(out, len, "client.mount1");
	else if (!strncmp(name, "mnt", 3))
		snprintf(out, len, "client.mount%s", name + 3);
	else
		snprintf(out, len, "%s", name);
}

/* DIR/keys/KEY.keyring: daemon @name's keyring file. */
static void dev_key_path(const struct dev *d, const char *name, char *out, size_t len)
{
	char key[AUTH_NAME_MAX + 1];

	dev_key_name(name, key, sizeof(key));
	snprintf(out, len, "%s/keys/%s.keyring", d->dir, key);
}

/* An admin session (d->ka) for dev_key, with DIR/keyring. 0, or 1
 * after saying why. Nothing with --auth none. */
static int dev_keys_open(struct dev *d)
{
	struct cli c = { .conf = d->conf, .keyring = d->keyring };

	if (!d->auth || d->ka)
		return 0;
	d->ka = calloc(1, sizeof(*d->ka));
	if (!d->ka)
		return cli_fail("out of memory");
	if (keyadm_open(&c, "dev", d->ka)) {
		free(d->ka);
		d->ka = NULL;
		return 1;
	}
	return 0;
}

static void dev_keys_close(struct dev *d)
{
	if (d->ka) {
		keyadm_close(d->ka);
		free(d->ka);
		d->ka = NULL;
	}
}

/*
 * Daemon @name's key, in DIR/keys (keyadm_ensure: the one there is kept
 * while the cluster has it): caps daemon, or rw for a mount. 0, or 1
 * after saying why. Nothing with --auth none.
 */
static int dev_key(struct dev *d, const char *name)
{
	char key[AUTH_NAME_MAX + 1], path[PATH_MAX + 96], err[512];

	if (!d->auth)
		return 0;
	if (dev_keys_open(d))
		return 1;
	snprintf(path, sizeof(path), "%s/keys", d->dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return cli_fail("%s: %s", path, strerror(errno));
	dev_key_name(name, key, sizeof(key));
	dev_key_path(d, name, path, sizeof(path));
	if (keyadm_ensure(d->ka, key, strncmp(name, "mnt", 3) ? "daemon" : "rw", path,
			  err, sizeof(err)))
		return cli_fail("key %s: %s", key, err);
	return 0;
}

/* "--keyring DIR/keys/KEY.keyring" for daemon @name into @argv at *@argc
 * (@path: its storage). Nothing with --auth none. */
static void dev_key_args(const struct dev *d, const char *name, char *argv[], int *argc,
			 char *path, size_t len)
{
	if (!d->auth)
		return;
	dev_key_path(d, name, path, len);
	argv[(*argc)++] = "--keyring";
	argv[(*argc)++] = path;
}

/* DIR/sdfs.conf: ZooKeeper, the cluster, and the admin keyring once
 * there is one. */
static int dev_write_conf(const struct dev *d)
{
	char text[PATH_MAX + 2048];
	int ret;

	snprintf(text, sizeof(text), "# written by sdfs dev up\nzk = %s\ncluster = %s\n%s%s%s%s%s",
		 d->zk, d->cluster, d->auth ? "keyring = " : "", d->auth ? d->keyring : "",
		 d->auth ? "\n" : "", d->sets[0] ? DEV_SET_MARK : "", d->sets);
	if ((ret = write_file(d->conf, text)))
		cli_fail("%s: %s", d->conf, strerror(-ret));
	return ret;
}

/* --set KEY=VALUE: one more sdfs.conf line for every process of the
 * cluster. 0, or 1 after saying why. */
static int dev_add_set(struct dev *d, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t used = strlen(d->sets);
	int n;

	if (!eq || eq == kv || !eq[1] || strpbrk(kv, "\n#"))
		return cli_bad("--set wants KEY=VALUE, not '%s'", kv);
	n = snprintf(d->sets + used, sizeof(d->sets) - used, "%.*s = %s\n", (int)(eq - kv),
		     kv, eq + 1);
	if (n < 0 || (size_t)n >= sizeof(d->sets) - used)
		return cli_bad("too many --set");
	return 0;
}

/* Without --set: the lines an earlier dev up --set wrote to @conf. */
static void dev_keep_sets(struct dev *d)
{
	char old[8192];
	const char *mark;

	if (d->sets[0] || read_file(d->conf, old, sizeof(old)) <= 0 ||
	    !(mark = strstr(old, DEV_SET_MARK)))
		return;
	snprintf(d->sets, sizeof(d->sets), "%s", mark + strlen(DEV_SET_MARK));
}

/* Format a new dev cluster: with keys (DIR/keyring, keyadm_format_new)
 * unless --auth none. 0, or 1 after saying why. */
static int dev_format(struct dev *d, unsigned copies, uint32_t obj_size,
		      uint32_t grace_ms)
{
	struct cli c = { .conf = d->conf, .keyring = d->keyring };
	struct cluster_config cfg;
	struct keyadm ka;
	char err[512];
	int ret;

	if (keyadm_conf(&c, &ka))
		return 1;
	keyadm_cluster_config(&cfg, copies, obj_size, grace_ms, d->auth);
	if (d->auth) {
		ret = keyadm_format_new(&ka, &cfg, 0, err, sizeof(err));
	} else {
		if (keyadm_connect(&ka, "format"))
			return 1;
		ret = coord_format(ka.coord, &cfg, 0);
		snprintf(err, sizeof(err), "%s", strerror(-ret));
	}
	keyadm_close(&ka);
	if (ret)
		return cli_fail("format: %s", err);
	return 0;
}

/*
 * Start @n sdfs-mds named mds.0, mds.1... and wait until one is active
 * and answers; its name goes into @active. mds.0 joins the election
 * before the others start, so it is the one that becomes active.
 */
static int start_mds(struct dev *d, struct sdfs *s, char *bin, unsigned n,
		     char *active, size_t len)
{
	int64_t end = now_ms() + DEV_MDS_WAIT_MS;
	int ret;

	for (unsigned i = 0; i < n; i++) {
		char name[32], listen[96], host[64];
		int port = d->netns ? DEV_MDS_NETNS_PORT : free_port();

		if (port <= 0) {
			cli_fail("no free port for mds.%u", i);
			return -EADDRINUSE;
		}
		snprintf(name, sizeof(name), "mds.%u", i);
		if (daemon_host(d, name, host, sizeof(host)))
			return -EIO;
		snprintf(listen, sizeof(listen), "%s:%d", host, port);
		if (dev_key(d, name))
			return -EACCES;
		char kpath[PATH_MAX + 96];
		char *argv[12] = { bin, "--name", name, "--listen", listen, "--conf",
				   d->conf };
		int argc = 7;
		dev_key_args(d, name, argv, &argc, kpath, sizeof(kpath));
		argv[argc] = NULL;
		ret = spawn(d, name, argv);
		if (ret) {
			cli_fail("cannot start %s: %s", name, strerror(-ret));
			return ret;
		}
		while (i == 0 && n > 1 && !mds_listed(s, name) && now_ms() < end &&
		       !has_exited(d, name))
			sleep_ms(50);
	}
	while (now_ms() < end) {
		struct sdfs_mds_status st;

		for (unsigned i = 0; i < n; i++) {
			char name[32];

			snprintf(name, sizeof(name), "mds.%u", i);
			if (has_exited(d, name)) {
				cli_fail("%s exited during start-up (see %s/log/%s.log)",
					 name, d->dir, name);
				return -ESRCH;
			}
		}
		if (sdfs_mds_status(s, &st) == 0) {
			int ready = st.has_active && st.reachable;

			if (ready)
				snprintf(active, len, "%s", st.active);
			free(st.list);
			if (ready)
				return 0;
		}
		sleep_ms(100);
	}
	cli_fail("no mds became active within %d s (see %s/log/mds.0.log)",
		 DEV_MDS_WAIT_MS / 1000, d->dir);
	return -ETIMEDOUT;
}

/*
 * The FUSE mounts: mount i (0-based) is the dev daemon "mnt" (i == 0) or
 * "mnt<i+1>" at DIR/<name>, each its own mount.sdfs. mount.sdfs runs
 * with -f under spawn(), so the recorded pid is the daemon itself (no
 * daemonizing fork to chase); it is ready once DIR/<name> is in
 * /proc/self/mountinfo and a stat of it reaches the new filesystem.
 */
static void mnt_name(unsigned i, char *out, size_t len)
{
	if (i == 0)
		snprintf(out, len, "mnt");
	else
		snprintf(out, len, "mnt%u", i + 1);
}

/* Is @name one of the mounts' dev names (mnt, mnt2 ... mnt<MAX>)? */
static int is_mnt_name(const char *name)
{
	char m[16];

	for (unsigned i = 0; i < DEV_MOUNTS_MAX; i++) {
		mnt_name(i, m, sizeof(m));
		if (!strcmp(name, m))
			return 1;
	}
	return 0;
}

static void mnt_path(const struct dev *d, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", d->dir, name);
}

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *o = s;

	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

/* Is something mounted at @path (a realpath)? */
static int is_mounted(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[16384], point[PATH_MAX];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
			continue;
		unescape_octal(point);
		found = !strcmp(point, path);
	}
	fclose(f);
	return found;
}

/* `fusermount3 -u [-z] DIR/@name`: its exit status. Quiet: output to
 * /dev/null. Without fusermount3, umount2 (works for root). */
static int fusermount_u(const struct dev *d, const char *name, int lazy, int quiet)
{
	char bin[PATH_MAX], mnt[PATH_MAX + 32];
	int status = 0;
	pid_t pid;

	mnt_path(d, name, mnt, sizeof(mnt));
	if (find_binary("fusermount3", "-", bin, sizeof(bin)))
		return umount2(mnt, lazy ? MNT_DETACH : 0) < 0 ? 1 : 0;
	char *argv[] = { bin, "-u", lazy ? "-z" : mnt, lazy ? mnt : NULL, NULL };
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDWR);

		if (nfd >= 0) {
			dup2(nfd, 0);
			if (quiet) {
				dup2(nfd, 1);
				dup2(nfd, 2);
			}
		}
		execv(bin, argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/*
 * Unmount DIR/@name if mounted: cleanly, else (busy: a shell's cwd or an
 * open file in it) lazily, which detaches it now and lets it go when
 * they leave. @lazy: straight to -z (the daemon is dead). 0 once
 * nothing is mounted there.
 */
static int dev_unmount(const struct dev *d, const char *name, int lazy)
{
	char mnt[PATH_MAX + 32];

	mnt_path(d, name, mnt, sizeof(mnt));
	/* a loop: a mount may have been stacked on an older one */
	for (int i = 0; i < 8 && is_mounted(mnt); i++) {
		if (!lazy && fusermount_u(d, name, 0, 1) == 0)
			continue;
		if (fusermount_u(d, name, 1, 0))
			break;
	}
	return is_mounted(mnt) ? -EBUSY : 0;
}

/* dev_unmount of every mount there may be (mnt ... mnt<MAX>), warning
 * about each one still mounted; how many are. */
static int dev_unmount_all(const struct dev *d, int lazy, int warn)
{
	int busy = 0;

	for (unsigned i = 0; i < DEV_MOUNTS_MAX; i++) {
		char name[16];

		mnt_name(i, name, sizeof(name));
		if (dev_unmount(d, name, lazy)) {
			busy++;
			if (warn)
				fprintf(stderr, "sdfs: warning: %s/%s is still mounted\n",
					d->dir, name);
		}
	}
	return busy;
}

/* The last line mount.sdfs wrote to DIR/log/@name.log, for an error. */
static const char *mnt_last_log(const struct dev *d, const char *name, char *buf,
				size_t len)
{
	char path[PATH_MAX + 32];
	int fd, n;

	snprintf(path, sizeof(path), "%s/log/%s.log", d->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	buf[0] = '\0';
	if (fd < 0)
		return buf;
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)len - 1 ? size - (off_t)len + 1 : 0;
	n = (int)pread(fd, buf, len - 1, from);
	close(fd);
	if (n <= 0)
		return buf;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	char *nl = strrchr(buf, '\n');
	return nl ? nl + 1 : buf;
}

/* Wait until DIR/@name is mounted and answers: a stat of it shows
 * another device than DIR's. Says why not and returns -ESRCH if
 * mount.sdfs exited, -ETIMEDOUT after @timeout_ms. */
static int wait_mounted(const struct dev *d, const char *name, int timeout_ms)
{
	char mnt[PATH_MAX + 32], log[1024];
	struct stat dst, st;
	int mounted = 0, err = 0;

	mnt_path(d, name, mnt, sizeof(mnt));
	if (stat(d->dir, &dst) < 0)
		return -errno;
	for (int64_t end = now_ms() + timeout_ms; now_ms() < end; sleep_ms(20)) {
		if (has_exited(d, name)) {
			cli_fail("mount.sdfs exited: %s (see %s/log/%s.log)",
				 mnt_last_log(d, name, log, sizeof(log)), d->dir, name);
			return -ESRCH;
		}
		/* a stat the cluster cannot answer takes the mount's timeout */
		mounted = is_mounted(mnt);
		if (!mounted)
			continue;
		if (stat(mnt, &st) < 0)
			err = errno;
		else if (st.st_dev != dst.st_dev)
			return 0;
	}
	if (mounted && err)
		cli_fail("%s is mounted but does not answer: %s (see %s/log/)", mnt,
			 strerror(err), d->dir);
	else
		cli_fail("%s was not mounted within %d s (see %s/log/%s.log)", mnt,
			 timeout_ms / 1000, d->dir, name);
	return -ETIMEDOUT;
}

/* mount.sdfs -f CLUSTER DIR/@name -o conf=DIR/sdfs.conf,log=DIR/log/@name.log
 * as the daemon @name; returns once it answers. */
static int start_mount(struct dev *d, char *bin, const char *name)
{
	char mnt[PATH_MAX + 32], opts[3 * PATH_MAX + 256];
	int ret;

	mnt_path(d, name, mnt, sizeof(mnt));
	if (strchr(d->dir, ',')) {
		cli_fail("%s: a ',' in the path cannot go into mount options", d->dir);
		return -EINVAL;
	}
	if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
		ret = -errno;
		cli_fail("%s: %s", mnt, strerror(errno));
		return ret;
	}
	/* left over from a killed mount.sdfs: ENOTCONN until unmounted */
	if (dev_unmount(d, name, 1)) {
		cli_fail("%s: still mounted and busy (fusermount3 -u -z failed)", mnt);
		return -EBUSY;
	}
	char host[64];
	if (daemon_host(d, name, host, sizeof(host)))
		return -EIO;
	char kpath[PATH_MAX + 96] = "";
	if (dev_key(d, name))
		return -EACCES;
	if (d->auth)
		dev_key_path(d, name, kpath, sizeof(kpath));
	snprintf(opts, sizeof(opts), "conf=%s/sdfs.conf,log=%s/log/%s.log%s%s", d->dir,
		 d->dir, name, d->auth ? ",keyring=" : "", kpath);
	char *argv[] = { bin, "-f", d->cluster, mnt, "-o", opts, NULL };
	ret = spawn(d, name, argv);
	if (ret) {
		cli_fail("cannot start mount.sdfs for %s: %s", name, strerror(-ret));
		return ret;
	}
	return wait_mounted(d, name, DEV_MOUNT_WAIT_MS);
}

/* How many mounts an earlier dev up in this dir recorded (DIR/run/mnt.cmd,
 * mnt2.cmd ...). */
static unsigned recorded_mounts(const struct dev *d)
{
	unsigned n = 0;

	for (unsigned i = 0; i < DEV_MOUNTS_MAX; i++) {
		char name[16], path[PATH_MAX + 64];

		mnt_name(i, name, sizeof(name));
		run_path(d, name, "cmd", path, sizeof(path));
		if (access(path, F_OK) == 0)
			n = i + 1;
	}
	return n;
}

/*
 * Start again each daemon @prefix<N> recorded under DIR/run with N >=
 * @from (dev add's block daemons, more mds than this dev up asks for),
 * from its command line (again_argv: the current sdfs.conf); their
 * names are appended to @names (*@n of them already). 0, or 1 after
 * saying what failed.
 */
static int start_recorded(struct dev *d, const char *prefix, unsigned from,
			  char names[][64], unsigned *n)
{
	char rec[64][64];
	int nr = list_daemons(d, rec, 64);
	size_t pl = strlen(prefix);

	for (int i = 0; i < nr && *n < 64; i++) {
		char *end;
		unsigned long idx;

		if (strncmp(rec[i], prefix, pl))
			continue;
		idx = strtoul(rec[i] + pl, &end, 10);
		if (end == rec[i] + pl || *end || idx < from)
			continue;
		if (dev_key(d, rec[i]))
			return 1;
		int ret = respawn(d, rec[i]);
		if (ret) {
			cli_fail("cannot start %s again: %s", rec[i], strerror(-ret));
			return 1;
		}
		memcpy(names[(*n)++], rec[i], 64);
	}
	return 0;
}

static int dev_up(struct cli *cli)
{
	const char *dir = NULL, *v;
	uint64_t nblockd = 3, copies = 0, obj_size = 4 << 20, grace_s = 30, rec_mbps = 0;
	uint64_t scrub_mbps = 0;
	uint64_t nmds = UINT64_MAX, nmounts = 1;
	struct dev d = { 0 };
	char blockd_bin[PATH_MAX], mds_bin[PATH_MAX], mnt_bin[PATH_MAX], names[64][64];
	char active[32] = "", mnt[DEV_MOUNTS_MAX][PATH_MAX + 32];
	int ret, no_mount = 0, mounts_set = 0, force = 0;
	uint64_t delay_ms = 1, zk_servers = 0;
	int netns = 0, want_auth = 1, cluster_net = 0;

	strcpy(d.cluster, "dev");
	for (int i = 0; i < cli->argc; i++) {
		if ((v = cli_opt(cli->argc, cli->argv, &i, "--dir")))
			dir = v;
		else if (!strcmp(cli->argv[i], "--no-mount"))
			no_mount = 1;
		else if (!strcmp(cli->argv[i], "--netns"))
			netns = 1;
		else if (!strcmp(cli->argv[i], "--cluster-net"))
			cluster_net = 1;
		else if (!strcmp(cli->argv[i], "--force"))
			force = 1;
		else if ((v = cli_opt(cli->argc, cli->argv, &i, "--netns-delay-ms"))) {
			if (cli_parse_u64(v, &delay_ms) || delay_ms > 10000)
				return cli_bad("--netns-delay-ms must be 0..10000");
		}
		else if ((v = cli_opt(cli->argc, cli->argv, &i, "--mounts"))) {
			mounts_set = 1;
			if (cli_parse_u64(v, &nmounts) || nmounts > DEV_MOUNTS_MAX)
				return cli_bad("--mounts must be 0..%d (0: no mount)",
					       DEV_MOUNTS_MAX);
		}
		else if ((v = cli_opt(cli->argc, cli->argv, &i, "--blockd"))) {
			if (cli_parse_u64(v, &nblockd) || nblockd > 32)
				return cli_bad("--blockd must be 0..32 (0: only ZooKeeper)");
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--mds"))) {
			if (cli_parse_u64(v, &nmds) || nmds > DEV_MDS_MAX)
				return cli_bad("--mds must be 0..%d", DEV_MDS_MAX);
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--copies"))) {
			if (cli_parse_u64(v, &copies) || copies < 1 || copies > 16)
				return cli_bad("--copies must be 1..16");
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--obj-size"))) {
			if (cli_parse_size(v, &obj_size))
				return cli_bad("bad --obj-size '%s'", v);
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--out-grace"))) {
			if (cli_parse_u64(v, &grace_s) || grace_s < 1 || grace_s > 86400)
				return cli_bad("--out-grace must be 1..86400 seconds");
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--recovery-mbps"))) {
			if (cli_parse_u64(v, &rec_mbps) || rec_mbps < 1 || rec_mbps > 100000)
				return cli_bad("--recovery-mbps must be 1..100000");
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--set"))) {
			if (dev_add_set(&d, v))
				return 2;
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--scrub-mbps"))) {
			if (cli_parse_u64(v, &scrub_mbps) || scrub_mbps < 1 ||
			    scrub_mbps > 100000)
				return cli_bad("--scrub-mbps must be 1..100000");
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--zk-servers"))) {
			if (cli_parse_u64(v, &zk_servers) ||
			    (zk_servers != 1 && zk_servers != 3 && zk_servers != 5))
				return cli_bad("--zk-servers must be 1, 3 or 5");
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--zk"))) {
			snprintf(d.zk, sizeof(d.zk), "%s", v);
			d.external_zk = 1;
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--cluster"))) {
			snprintf(d.cluster, sizeof(d.cluster), "%s", v);
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--auth"))) {
			if (strcmp(v, "none") && strcmp(v, "keys"))
				return cli_bad("--auth must be keys or none, not '%s'", v);
			want_auth = !strcmp(v, "keys");
		} else {
			return cli_usage("sdfs dev up --dir DIR [--blockd N] [--mds N] "
					 "[--mounts N | --no-mount] [--copies N [--force]] "
					 "[--obj-size SIZE] "
					 "[--out-grace S] [--recovery-mbps N] "
					 "[--scrub-mbps N] "
					 "[--netns [--netns-delay-ms MS]] [--zk-servers N] "
					 "[--zk HOSTS --cluster NAME] [--auth none] "
					 "[--cluster-net]");
		}
	}
	/* The mds keeps its database in objects: no block daemons, no mds. */
	if (nmds == UINT64_MAX)
		nmds = nblockd ? 2 : 0;
	if (nmds && !nblockd)
		return cli_bad("--mds needs block daemons (its database lives in "
			       "objects): use --blockd 1 or more, or --mds 0");
	/* More copies than block daemons could never be placed: the
	 * cluster would only ever be degraded (docs/operations.md). */
	if (copies && nblockd && copies > nblockd && !force)
		return cli_bad("--copies %" PRIu64 " needs at least %" PRIu64 " block daemons "
			       "(--blockd %" PRIu64 "); add --force to run degraded",
			       copies, copies, nblockd);
	if (!copies)
		copies = nblockd == 0 ? 3 : nblockd < 3 ? nblockd : 3;
	if (netns && d.external_zk)
		return cli_bad("--netns starts its own ZooKeeper in a namespace: no --zk");
	if (netns && cluster_net)
		return cli_bad("--cluster-net is for loopback: not with --netns");
	if (zk_servers && d.external_zk)
		return cli_bad("--zk-servers starts ZooKeeper servers: no --zk");
	if ((ret = dev_init(&d, dir, 1)))
		return ret;
	dev_keep_sets(&d);
	/* Again in a dir: as many servers as it had. Another count would be
	 * another ensemble, without the cluster's map and config. */
	unsigned zk_had = zk_recorded(&d);
	if (!d.external_zk && zk_had && zk_servers && zk_servers != zk_had)
		return cli_bad("%s ran %u ZooKeeper server%s: --zk-servers %" PRIu64
			       " needs a new dir (its data is the cluster's map)", d.dir,
			       zk_had, zk_had == 1 ? "" : "s", zk_servers);
	d.zk_servers = d.external_zk ? 0 : zk_servers ? (unsigned)zk_servers :
		       zk_had ? zk_had : 1;
	d.netns = netns;        /* not what an earlier run left (dev_init) */
	/* The filesystem needs an mds to serve it. Again in a dir that had
	 * more mounts: as many as it had, unless told how many. */
	if (!mounts_set && !no_mount && nmds)
		nmounts = nmounts > recorded_mounts(&d) ? nmounts : recorded_mounts(&d);
	unsigned mounts = no_mount || nmds == 0 ? 0 : (unsigned)nmounts;
	int mount = mounts > 0;
	for (unsigned i = 0; i < DEV_MOUNTS_MAX; i++) {
		char name[16];

		mnt_name(i, name, sizeof(name));
		mnt_path(&d, name, mnt[i], sizeof(mnt[i]));
	}
	int nd = list_daemons(&d, names, 64);
	for (int i = 0; i < nd; i++)
		if (is_running(&d, names[i], NULL))
			return cli_fail("%s: %s is already running (sdfs dev down --dir %s)",
					d.dir, names[i], d.dir);
	if (find_binary("sdfs-blockd", "blockd", blockd_bin, sizeof(blockd_bin)))
		return cli_fail("sdfs-blockd not found next to sdfs or on PATH");
	if (nmds && find_binary("sdfs-mds", "mds", mds_bin, sizeof(mds_bin)))
		return cli_fail("sdfs-mds not found next to sdfs or on PATH");
	if (mount && find_binary("mount.sdfs", "fs", mnt_bin, sizeof(mnt_bin)) &&
	    find_binary("mount.sdfs", "sbin", mnt_bin, sizeof(mnt_bin)))
		return cli_fail("mount.sdfs not found next to sdfs or on PATH "
				"(or use --no-mount)");
	for (unsigned i = mounts; i < DEV_MOUNTS_MAX; i++) {
		/* no mount left over from an earlier dev up in this dir */
		char path[PATH_MAX + 64], name[16];

		mnt_name(i, name, sizeof(name));
		run_path(&d, name, "cmd", path, sizeof(path));
		unlink(path);
		run_path(&d, name, "pid", path, sizeof(path));
		unlink(path);
	}
	/* what an earlier --netns run (or a crash of one) left */
	dev_netns_destroy(d.dir);
	if (d.netns) {
		char err[512];

		if (dev_netns_create(d.dir, (unsigned)delay_ms, &d.net, err, sizeof(err)))
			return cli_fail("--netns: %s", err);
		if (delay_ms && !d.net.netem)
			fprintf(stderr, "sdfs: warning: --netns: this kernel has no sch_netem "
				"(tc netem): the links have no delay\n");
	}
	if (!d.external_zk && (ret = start_zk(&d, d.zk_servers))) {
		dev_netns_destroy(d.dir);
		return ret;
	}
	/* before any daemon: they read it (--conf); keyring = DIR/keyring
	 * once the cluster has keys (DIR/keyring exists: dev_init) */
	if (dev_write_conf(&d))
		goto fail;

	struct sdfs *s = connect_wait(&d, 30000);
	if (!s)
		goto fail;
	struct sdfs_cluster_info info;
	if (sdfs_cluster_info(s, &info) == -ENOENT) {
		/* a new cluster: new keys (what DIR/keys holds is remade) */
		d.auth = want_auth;
		if (!d.auth)
			unlink(d.keyring);
		if (dev_format(&d, (unsigned)copies, (uint32_t)obj_size,
			       (uint32_t)(grace_s * 1000)))
			goto fail_close;
		/* the CLI, mounts and this handle use the admin keyring */
		sdfs_close(s);
		if (dev_write_conf(&d) || !(s = connect_wait(&d, 30000)))
			goto fail;
	} else if (!want_auth && d.auth) {
		fprintf(stderr, "sdfs: note: %s's cluster has keys: --auth none applies "
			"to a new cluster only\n", d.dir);
	}
	char bnames[64][64];
	unsigned nb = 0;
	for (unsigned i = 0; i < nblockd; i++) {
		char *name = bnames[nb++], ddir[PATH_MAX + 32], listen[96], zone[16], mbps[24];
		char smbps[24];
		char host[64], clisten[96];
		int port = d.netns ? DEV_BLOCKD_NETNS_PORT : free_port();

		snprintf(name, 64, "blockd.%u", i);
		snprintf(ddir, sizeof(ddir), "%s/%s", d.dir, name);
		if (daemon_host(&d, name, host, sizeof(host)))
			goto fail_close;
		snprintf(listen, sizeof(listen), "%s:%d", host, port);
		snprintf(zone, sizeof(zone), "%u", i);
		snprintf(mbps, sizeof(mbps), "%" PRIu64, rec_mbps);
		snprintf(smbps, sizeof(smbps), "%" PRIu64, scrub_mbps);
		if (dev_key(&d, name))
			goto fail_close;
		char kpath[PATH_MAX + 96];
		char *argv[24] = { blockd_bin, "--dir", ddir, "--listen", listen,
				   "--conf", d.conf, "--zone", zone };
		int argc = 9;
		dev_key_args(&d, name, argv, &argc, kpath, sizeof(kpath));
		if (rec_mbps) {
			argv[argc++] = "--recovery-mbps";
			argv[argc++] = mbps;
		}
		if (scrub_mbps) {
			argv[argc++] = "--scrub-mbps";
			argv[argc++] = smbps;
		}
		if (cluster_net && cluster_listen((int)i, port, clisten, sizeof(clisten)) == 0) {
			argv[argc++] = "--cluster-listen";
			argv[argc++] = clisten;
		}
		argv[argc] = NULL;
		ret = spawn(&d, name, argv);
		if (ret) {
			cli_fail("cannot start %s: %s", name, strerror(-ret));
			goto fail_close;
		}
	}
	/* the ones dev add started in this dir before */
	if (start_recorded(&d, "blockd.", (unsigned)nblockd, bnames, &nb))
		goto fail_close;
	const char *conf = d.conf;
	if (nb) {
		ret = wait_nodes(&d, s, bnames, nb, 60000);
		if (ret == -ETIMEDOUT)
			cli_fail("block daemons did not come up within 60 s (see %s/log/)",
				 d.dir);
		if (ret)
			goto fail_close;
	}
	if (nmds && start_mds(&d, s, mds_bin, (unsigned)nmds, active, sizeof(active)))
		goto fail_close;
	char mnames[64][64];
	unsigned nm = 0;
	if (start_recorded(&d, "mds.", (unsigned)nmds, mnames, &nm))
		goto fail_close;
	if (nb)
		wait_healthy(&d, s, 30000);
	for (unsigned i = 0; i < mounts; i++) {
		char name[16];

		mnt_name(i, name, sizeof(name));
		if (start_mount(&d, mnt_bin, name))
			goto fail_close;
	}
	sdfs_cluster_info(s, &info);
	sdfs_close(s);
	dev_keys_close(&d);
	if (cli->json) {
		printf("{\"dir\": ");
		cli_json_str(stdout, d.dir);
		printf(", \"conf\": ");
		cli_json_str(stdout, conf);
		printf(", \"keyring\": ");
		if (d.auth)
			cli_json_str(stdout, d.keyring);
		else
			printf("null");
		printf(", \"zk\": \"%s\", \"cluster\": \"%s\", \"blockd\": %" PRIu64
		       ", \"mds\": %" PRIu64 ", \"active_mds\": ", d.zk, d.cluster,
		       (uint64_t)nb, nmds + nm);
		if (nmds)
			cli_json_str(stdout, active);
		else
			printf("null");
		printf(", \"mnt\": ");
		if (mount)
			cli_json_str(stdout, mnt[0]);
		else
			printf("null");
		printf(", \"mnts\": [");
		for (unsigned i = 0; i < mounts; i++) {
			printf("%s", i ? ", " : "");
			cli_json_str(stdout, mnt[i]);
		}
		printf("]");
		printf(", \"copies\": %u, \"epoch\": %" PRIu64 "}\n", info.copies,
		       info.epoch);
	} else {
		char mds[64] = "";

		if (nmds)
			snprintf(mds, sizeof(mds), ", %" PRIu64 " mds (active %s)",
				 nmds + nm, active);
		printf("sdfs dev cluster '%s' is up: ZooKeeper %s, %" PRIu64
		       " blockd%s, copies=%u, epoch %" PRIu64 "\n", d.cluster, d.zk,
		       (uint64_t)nb, mds, info.copies, info.epoch);
		char self[PATH_MAX / 2];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n <= 0)
			n = snprintf(self, sizeof(self), "sdfs");
		self[n] = '\0';
		if (mount)
			printf("  mounted at %s: cd there\n", mnt[0]);
		for (unsigned i = 1; i < mounts; i++)
			printf("  mounted again at %s (a second client)\n", mnt[i]);
		printf("  export SDFS_CONF=%s\n  %s cluster status\n", conf, self);
		if (nmds)
			printf("  %s fs ls -l /\n", self);
		printf("  %s dev down --dir %s\n", self, d.dir);
	}
	return 0;
fail_close:
	sdfs_close(s);
fail:
	dev_keys_close(&d);
	dev_unmount_all(&d, 0, 0);
	nd = list_daemons(&d, names, 64);
	stop_daemons(&d, names, nd, 3000);
	dev_netns_destroy(d.dir);
	return 1;
}

static int dev_down(struct dev *d, struct cli *cli)
{
	char names[64][64], group[4][64][64];
	int n = list_daemons(d, names, 64), ng[4] = { 0 }, stopped = 0;

	/* The mounts first (unmounted, their daemons then exit by
	 * themselves), the mds (they write to the block daemons), then the
	 * block daemons, then ZooKeeper; each group all at once. */
	for (int i = 0; i < n; i++) {
		int g = is_mnt_name(names[i]) ? 0 : !strncmp(names[i], "mds.", 4) ? 1 :
			!is_zk_name(names[i]) ? 2 : 3;

		memcpy(group[g][ng[g]++], names[i], 64);
	}
	dev_unmount_all(d, 0, 1);
	for (int g = 0; g < 4; g++)
		if (ng[g])
			stopped += stop_daemons(d, group[g], ng[g], 10000);
	/* with --netns: the namespaces, veths and the bridge */
	dev_netns_destroy(d->dir);
	if (!cli->json)
		printf("stopped %d daemon%s under %s\n", stopped, stopped == 1 ? "" : "s",
		       d->dir);
	else
		printf("{\"stopped\": %d}\n", stopped);
	return 0;
}

static int dev_status(struct dev *d, struct cli *cli)
{
	char names[64][64];
	int n = list_daemons(d, names, 64);

	if (cli->json)
		printf("[");
	else
		printf("%-12s %-8s %s\n", "NAME", "PID", "STATE");
	for (int i = 0; i < n; i++) {
		pid_t pid;
		int up = is_running(d, names[i], &pid);

		if (cli->json)
			printf("%s{\"name\": \"%s\", \"pid\": %d, \"running\": %s}",
			       i ? ", " : "", names[i], up ? (int)pid : 0,
			       up ? "true" : "false");
		else if (up)
			printf("%-12s %-8d running\n", names[i], (int)pid);
		else
			printf("%-12s %-8s stopped\n", names[i], "-");
	}
	if (cli->json)
		printf("]\n");
	return 0;
}

static int dev_kill(struct dev *d, const char *name)
{
	pid_t pid;

	if (!is_running(d, name, &pid))
		return cli_fail("%s is not running", name);
	if (kill(pid, SIGKILL) < 0)
		return cli_fail("kill %s (pid %d): %s", name, (int)pid, strerror(errno));
	/* Reaped by init (we are not its parent); wait until it is gone. */
	for (int64_t end = now_ms() + 5000; now_ms() < end && !pid_gone(pid);)
		sleep_ms(20);
	/* A FUSE mount whose daemon died answers ENOTCONN until unmounted. */
	if (is_mnt_name(name) && dev_unmount(d, name, 1))
		return cli_fail("%s/%s: fusermount3 -u -z failed", d->dir, name);
	return 0;
}

static int dev_start(struct dev *d, const char *name)
{
	int ret;

	if (is_running(d, name, NULL))
		return cli_fail("%s is already running", name);
	if (is_mnt_name(name) && dev_unmount(d, name, 1))
		return cli_fail("%s/%s: still mounted and busy", d->dir, name);
	ret = respawn(d, name);
	if (ret == -ENOENT)
		return cli_fail("no daemon named %s under %s", name, d->dir);
	if (ret)
		return cli_fail("cannot start %s: %s", name, strerror(-ret));
	if (is_mnt_name(name) && wait_mounted(d, name, DEV_MOUNT_WAIT_MS))
		return 1;
	return 0;
}

/* "key = value" from a dev sdfs.conf, into @out. -ENOENT if missing. */
static int conf_value(const char *text, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *v = p;

		if (strncmp(v, key, kl))
			continue;
		v += kl;
		v += strspn(v, " \t");
		if (*v++ != '=')
			continue;
		v += strspn(v, " \t");
		size_t n = strcspn(v, " \t\r\n#");
		if (n == 0 || n >= len)
			return -EINVAL;
		memcpy(out, v, n);
		out[n] = '\0';
		return 0;
	}
	return -ENOENT;
}

/* ZooKeeper hosts and cluster name of the dev cluster in DIR: from
 * DIR/sdfs.conf (which the daemons read), else, in a dir of an older
 * sdfs, from blockd.0's command line. */
static int dev_find_cluster(struct dev *d)
{
	char path[PATH_MAX + 64], buf[4096];
	int n;

	if (read_file(d->conf, buf, sizeof(buf)) > 0 &&
	    !conf_value(buf, "zk", d->zk, sizeof(d->zk)) &&
	    !conf_value(buf, "cluster", d->cluster, sizeof(d->cluster)))
		return 0;
	d->zk[0] = d->cluster[0] = '\0';
	run_path(d, "blockd.0", "cmd", path, sizeof(path));
	n = read_file(path, buf, sizeof(buf));
	/* NUL-separated arguments, as spawn() recorded them */
	for (int off = 0; n > 0 && off < n;) {
		const char *arg = buf + off;

		off += (int)strlen(arg) + 1;
		if (off >= n)
			break;
		if (!strcmp(arg, "--zk"))
			snprintf(d->zk, sizeof(d->zk), "%s", buf + off);
		else if (!strcmp(arg, "--cluster"))
			snprintf(d->cluster, sizeof(d->cluster), "%s", buf + off);
	}
	return d->zk[0] && d->cluster[0] ? 0 : -ENOENT;
}

/* The lowest N with neither DIR/run/blockd.N.cmd nor DIR/blockd.N. */
static int dev_next_index(const struct dev *d)
{
	for (int i = 0; i < 1000; i++) {
		char name[32], path[PATH_MAX + 64];
		struct stat st;

		snprintf(name, sizeof(name), "blockd.%d", i);
		run_path(d, name, "cmd", path, sizeof(path));
		if (stat(path, &st) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", d->dir, name);
		if (stat(path, &st) == 0)
			continue;
		return i;
	}
	return -ENOSPC;
}

/* The node id @name's blockd stored in its data dir (0: not yet). */
static uint32_t dev_node_id(const struct dev *d, const char *name)
{
	char path[PATH_MAX + 64], buf[32];

	snprintf(path, sizeof(path), "%s/%s/node_id", d->dir, name);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	unsigned long v = strtoul(buf, NULL, 10);
	return v <= UINT32_MAX ? (uint32_t)v : 0;
}

/* Wait until @name has a node id, is up in the map and answers with the
 * map's epoch; *@st is then its status. */
static int wait_added(const struct dev *d, struct sdfs *s, const char *name,
		      int timeout_ms, struct sdfs_node_status *st, uint64_t *epoch)
{
	for (int64_t end = now_ms() + timeout_ms; now_ms() < end; sleep_ms(100)) {
		struct sdfs_cluster_info info;
		struct sdfs_node_status *nodes;
		uint32_t id;
		size_t n;
		int ready = 0;

		if (has_exited(d, name)) {
			cli_fail("%s exited during start-up (see %s/log/%s.log)", name,
				 d->dir, name);
			return -ESRCH;
		}
		id = dev_node_id(d, name);
		if (!id || sdfs_cluster_info(s, &info) || sdfs_node_list(s, &nodes, &n))
			continue;
		for (size_t i = 0; i < n; i++)
			if (nodes[i].node_id == id && !strcmp(nodes[i].state, "up") &&
			    nodes[i].reachable && nodes[i].epoch == info.epoch) {
				*st = nodes[i];
				*epoch = info.epoch;
				ready = 1;
			}
		free(nodes);
		if (ready)
			return 0;
	}
	cli_fail("%s did not come up within %d s (see %s/log/%s.log)", name,
		 timeout_ms / 1000, d->dir, name);
	return -ETIMEDOUT;
}

static int dev_add(struct cli *cli)
{
	const char *dir = NULL, *v, *usage = "sdfs dev add --dir DIR [--zone N] [--weight W]";
	char blockd_bin[PATH_MAX], name[32], ddir[PATH_MAX + 32], listen[96];
	char zone[24], weight[24] = "", host[64], clisten[96], cmd[4096], path[PATH_MAX + 64];
	uint64_t zone_v = UINT64_MAX, weight_v = 0;
	struct sdfs_node_status st;
	struct dev d = { 0 };
	uint64_t epoch;
	int ret, idx, port;

	for (int i = 0; i < cli->argc; i++) {
		if ((v = cli_opt(cli->argc, cli->argv, &i, "--dir"))) {
			dir = v;
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--zone"))) {
			if (cli_parse_u64(v, &zone_v) || zone_v > UINT32_MAX)
				return cli_bad("bad --zone '%s'", v);
		} else if ((v = cli_opt(cli->argc, cli->argv, &i, "--weight"))) {
			if (cli_parse_u64(v, &weight_v) || weight_v == 0 || weight_v > UINT32_MAX)
				return cli_bad("bad --weight '%s'", v);
		} else {
			return cli_usage(usage);
		}
	}
	if ((ret = dev_init(&d, dir, 0)))
		return ret;
	if (dev_find_cluster(&d))
		return cli_fail("%s: no dev cluster here (no run/blockd.0.cmd or sdfs.conf; "
				"start one with sdfs dev up)", d.dir);
	if (find_binary("sdfs-blockd", "blockd", blockd_bin, sizeof(blockd_bin)))
		return cli_fail("sdfs-blockd not found next to sdfs or on PATH");
	idx = dev_next_index(&d);
	port = d.netns ? DEV_BLOCKD_NETNS_PORT : free_port();
	if (idx < 0 || port <= 0)
		return cli_fail("no free %s", idx < 0 ? "blockd index" : "port");
	snprintf(name, sizeof(name), "blockd.%d", idx);
	snprintf(ddir, sizeof(ddir), "%s/%s", d.dir, name);
	if (daemon_host(&d, name, host, sizeof(host)))
		return 1;
	snprintf(listen, sizeof(listen), "%s:%d", host, port);
	snprintf(zone, sizeof(zone), "%" PRIu64, zone_v == UINT64_MAX ? (uint64_t)idx : zone_v);
	if (weight_v)
		snprintf(weight, sizeof(weight), "%" PRIu64, weight_v);

	struct sdfs *s = connect_wait(&d, 10000);
	if (!s)
		return 1;
	struct sdfs_cluster_info info;
	ret = sdfs_cluster_info(s, &info);
	if (ret) {
		sdfs_close(s);
		return cli_fail("cluster '%s' at %s: %s", d.cluster, d.zk,
				ret == -ENOENT ? "not formatted" : strerror(-ret));
	}
	char kpath[PATH_MAX + 96];
	char *argv[16] = { blockd_bin, "--dir", ddir, "--listen", listen, "--conf", d.conf,
			   "--zone", zone };
	int argc = 9;
	ret = dev_key(&d, name);
	dev_keys_close(&d);
	if (ret) {
		sdfs_close(s);
		return 1;
	}
	dev_key_args(&d, name, argv, &argc, kpath, sizeof(kpath));
	if (weight_v) {
		argv[argc++] = "--weight";
		argv[argc++] = weight;
	}
	/* a cluster network, if blockd.0 has one (dev up --cluster-net) */
	run_path(&d, "blockd.0", "cmd", path, sizeof(path));
	int n = read_file(path, cmd, sizeof(cmd));
	if (n > 0 && memmem(cmd, (size_t)n, "--cluster-listen", 17) &&
	    cluster_listen(idx, port, clisten, sizeof(clisten)) == 0) {
		argv[argc++] = "--cluster-listen";
		argv[argc++] = clisten;
	}
	argv[argc] = NULL;
	ret = spawn(&d, name, argv);
	if (ret) {
		sdfs_close(s);
		return cli_fail("cannot start %s: %s", name, strerror(-ret));
	}
	ret = wait_added(&d, s, name, 60000, &st, &epoch);
	sdfs_close(s);
	if (ret) {
		char names[1][64];

		snprintf(names[0], sizeof(names[0]), "%s", name);
		stop_daemons(&d, names, 1, 3000);
		return 1;
	}
	if (cli->json) {
		printf("{\"name\": \"%s\", \"node_id\": %" PRIu32 ", \"addr\": \"%s\", "
		       "\"zone\": %" PRIu32 ", \"weight\": %" PRIu32 ", \"epoch\": %" PRIu64
		       "}\n", name, st.node_id, st.addr, st.zone, st.weight, epoch);
	} else {
		printf("%s (node %" PRIu32 " at %s, zone %" PRIu32 ", weight %" PRIu32
		       ") is up at epoch %" PRIu64 "\n", name, st.node_id, st.addr,
		       st.zone, st.weight, epoch);
	}
	return 0;
}

int cmd_dev(struct cli *cli)
{
	const char *usage = "sdfs dev up|add|down|status|kill|start --dir DIR [NAME] "
			    "(NAME: blockd.N, mds.N, zk or zk.K, mnt, mnt2...)";
	const char *dir = NULL, *name = NULL, *v;
	struct dev d = { 0 };
	int ret;

	if (cli->argc < 1)
		return cli_usage(usage);
	const char *sub = cli->argv[0];
	cli->argc--;
	cli->argv++;
	if (!strcmp(sub, "up"))
		return dev_up(cli);
	if (!strcmp(sub, "add"))
		return dev_add(cli);
	if (strcmp(sub, "down") && strcmp(sub, "status") && strcmp(sub, "kill") &&
	    strcmp(sub, "start"))
		return cli_unknown("dev", sub);
	for (int i = 0; i < cli->argc; i++) {
		if ((v = cli_opt(cli->argc, cli->argv, &i, "--dir")))
			dir = v;
		else if (!name && cli->argv[i][0] != '-')
			name = cli->argv[i];
		else
			return cli_usage(usage);
	}
	if ((ret = dev_init(&d, dir, 0)))
		return ret;
	if (!strcmp(sub, "down"))
		return dev_down(&d, cli);
	if (!strcmp(sub, "status"))
		return dev_status(&d, cli);
	if (!name || strchr(name, '/'))
		return cli_usage(usage);
	if (!strcmp(sub, "kill"))
		return dev_kill(&d, name);
	return dev_start(&d, name);
}
