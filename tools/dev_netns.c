/*
 * dev_netns.c - see dev_netns.h. Every change goes through `ip` and
 * `tc`, each call logged with its output in DIR/log/netns.log.
 */
#include "tools/dev_netns.h"

#include <dirent.h>
#include <ifaddrs.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NETNS_MAX_ARGS 24
#define NETNS_RUN "/run/netns"

/* Run the words of @fmt (split on spaces) as a command, its output
 * appended to DIR/log/netns.log; its exit status (127: not found). */
static int run(const char *dir, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int run(const char *dir, const char *fmt, ...)
{
	char line[1024], log[PATH_MAX + 32], *argv[NETNS_MAX_ARGS + 1], *save;
	int argc = 0, status = 0, fd;
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	snprintf(log, sizeof(log), "%s/log/netns.log", dir);
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0)
		dprintf(fd, "+ %s\n", line);
	for (char *w = strtok_r(line, " ", &save); w && argc < NETNS_MAX_ARGS;
	     w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0) {
		if (fd >= 0)
			close(fd);
		return 127;
	}
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDONLY);

		if (nfd >= 0)
			dup2(nfd, 0);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (fd >= 0)
		close(fd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* 4 hex digits of FNV-1a over @dir. */
static void net_id(const char *dir, char *out, size_t len)
{
	unsigned h = 2166136261u;

	for (const char *p = dir; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(out, len, "%04x", (h ^ (h >> 16)) & 0xffff);
}

/* The host number of a dev name in its /24: zk 2, zk.K 2+K (an
 * ensemble, K = 1..5), blockd.N 10+N, mds.N 50+N, mnt 70, mntN 69+N. 0 if
 * @name is none of these. */
static unsigned host_of(const char *name)
{
	char *end;
	unsigned long v;

	if (!strcmp(name, "zk"))
		return 2;
	if (!strcmp(name, "mnt"))
		return 70;
	if (!strncmp(name, "zk.", 3)) {
		v = strtoul(name + 3, &end, 10);
		return end != name + 3 && !*end && v >= 1 && v <= 5 ? 2 + (unsigned)v : 0;
	}
	if (!strncmp(name, "blockd.", 7)) {
		v = strtoul(name + 7, &end, 10);
		return end != name + 7 && !*end && v < 40 ? 10 + (unsigned)v : 0;
	}
	if (!strncmp(name, "mds.", 4)) {
		v = strtoul(name + 4, &end, 10);
		return end != name + 4 && !*end && v < 16 ? 50 + (unsigned)v : 0;
	}
	if (!strncmp(name, "mnt", 3)) {
		v = strtoul(name + 3, &end, 10);
		return end != name + 3 && !*end && v >= 2 && v < 40 ? 69 + (unsigned)v : 0;
	}
	return 0;
}

static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

int dev_netns_load(const char *dir, struct dev_net *n)
{
	char path[PATH_MAX + 32], text[256];

	snprintf(path, sizeof(path), "%s/netns.conf", dir);
	if (read_text(path, text, sizeof(text)))
		return -ENOENT;
	memset(n, 0, sizeof(*n));
	if (sscanf(text, "id %7s subnet %u delay_ms %u netem %d", n->id, &n->subnet,
		   &n->delay_ms, &n->netem) != 4)
		return -EINVAL;
	return 0;
}

/* Does an interface here have an address in 10.77.@k.0/24? */
static int subnet_used(unsigned k)
{
	struct ifaddrs *ifs;
	int used = 0;

	if (getifaddrs(&ifs) < 0)
		return 0;
	for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);

		used |= (a >> 8) == ((10u << 16) | (77u << 8) | k);
	}
	freeifaddrs(ifs);
	return used;
}

int dev_netns_create(const char *dir, unsigned delay_ms, struct dev_net *n,
		     char *err, size_t errlen)
{
	char path[PATH_MAX + 32], text[256], br[16], a[16], b[16];

	dev_netns_destroy(dir);
	memset(n, 0, sizeof(*n));
	net_id(dir, n->id, sizeof(n->id));
	n->delay_ms = delay_ms;
	for (unsigned k = 1; k < 255 && !n->subnet; k++)
		if (!subnet_used(k))
			n->subnet = k;
	if (!n->subnet) {
		snprintf(err, errlen, "no free 10.77.K.0/24 subnet");
		return -EADDRINUSE;
	}
	snprintf(br, sizeof(br), "sdb%s", n->id);
	if (run(dir, "ip link add %s type bridge", br) ||
	    run(dir, "ip addr add 10.77.%u.1/24 dev %s", n->subnet, br) ||
	    run(dir, "ip link set %s up", br)) {
		snprintf(err, errlen, "cannot make bridge %s (ip link; see %s/log/netns.log)",
			 br, dir);
		dev_netns_destroy(dir);
		return -EIO;
	}
	/* Does the kernel have sch_netem? Try it on a throwaway veth pair. */
	snprintf(a, sizeof(a), "sv%s-pa", n->id);
	snprintf(b, sizeof(b), "sv%s-pb", n->id);
	if (run(dir, "ip link add %s type veth peer name %s", a, b) == 0) {
		n->netem = run(dir, "tc qdisc add dev %s root netem delay 1ms", a) == 0;
		run(dir, "ip link del %s", a);
	}
	snprintf(path, sizeof(path), "%s/netns.conf", dir);
	snprintf(text, sizeof(text), "id %s subnet %u delay_ms %u netem %d\n", n->id,
		 n->subnet, n->delay_ms, n->netem);
	FILE *f = fopen(path, "we");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		dev_netns_destroy(dir);
		return -EIO;
	}
	return 0;
}

int dev_netns_add(const char *dir, const struct dev_net *n, const char *name,
		  char *addr, size_t len, char *err, size_t errlen)
{
	char ns[96], veth[16], path[PATH_MAX + 96];
	unsigned h = host_of(name);
	FILE *f;

	if (!h) {
		snprintf(err, errlen, "%s: no address for it in --netns", name);
		return -EINVAL;
	}
	snprintf(ns, sizeof(ns), "sdfs-%s-%s", n->id, name);
	snprintf(veth, sizeof(veth), "sv%s-%u", n->id, h);
	run(dir, "ip netns del %s", ns);        /* left over */
	if (run(dir, "ip netns add %s", ns) ||
	    run(dir, "ip -n %s link set lo up", ns) ||
	    run(dir, "ip link add %s type veth peer name eth0 netns %s", veth, ns) ||
	    run(dir, "ip link set %s master sdb%s up", veth, n->id) ||
	    run(dir, "ip -n %s addr add 10.77.%u.%u/24 dev eth0", ns, n->subnet, h) ||
	    run(dir, "ip -n %s link set eth0 up", ns)) {
		snprintf(err, errlen, "cannot make namespace %s (see %s/log/netns.log)",
			 ns, dir);
		run(dir, "ip netns del %s", ns);
		return -EIO;
	}
	if (n->netem && n->delay_ms &&
	    run(dir, "tc -n %s qdisc add dev eth0 root netem delay %ums", ns, n->delay_ms)) {
		snprintf(err, errlen, "tc netem on %s failed (see %s/log/netns.log)", ns, dir);
		run(dir, "ip netns del %s", ns);
		return -EIO;
	}
	snprintf(addr, len, "10.77.%u.%u", n->subnet, h);
	snprintf(path, sizeof(path), "%s/run/%s.netns", dir, name);
	f = fopen(path, "we");
	if (!f || fprintf(f, "%s %s\n", ns, addr) < 0 || fclose(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		run(dir, "ip netns del %s", ns);
		return -EIO;
	}
	return 0;
}

int dev_netns_enter(const char *dir, const char *name)
{
	char path[PATH_MAX + 96], text[256], ns[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/run/%s.netns", dir, name);
	if (read_text(path, text, sizeof(text)))
		return 0;
	if (sscanf(text, "%127s", ns) != 1)
		return -EINVAL;
	snprintf(path, sizeof(path), NETNS_RUN "/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (setns(fd, CLONE_NEWNET) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

void dev_netns_destroy(const char *dir)
{
	char id[8], prefix[16], path[PATH_MAX + 32];
	struct dirent *e;
	DIR *d;

	net_id(dir, id, sizeof(id));
	snprintf(prefix, sizeof(prefix), "sdfs-%s-", id);
	/* By the names' prefix, not only the records: a crash between
	 * `ip netns add` and the record leaves one unrecorded. */
	d = opendir(NETNS_RUN);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			run(dir, "ip netns del %s", e->d_name);
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "/sys/class/net/sdb%s", id);
	if (access(path, F_OK) == 0)
		run(dir, "ip link del sdb%s", id);
	d = opendir("/sys/class/net");
	snprintf(prefix, sizeof(prefix), "sv%s-", id);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			run(dir, "ip link del %s", e->d_name);
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "%s/netns.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/run", dir);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (l > 6 && !strcmp(e->d_name + l - 6, ".netns")) {
			snprintf(path, sizeof(path), "%s/run/%s", dir, e->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
}
