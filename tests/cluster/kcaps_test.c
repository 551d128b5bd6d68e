/*
 * kcaps_test.c - key caps enforced by the mds, end to end (issue 15,
 * docs/security.md "Capabilities"): keys made with `sdfs auth add`,
 * used by libsdfs handles, the CLI and mount.sdfs, each through a
 * config naming that key's keyring. A read-only
 * key changes nothing; a key restricted to /a lists and reads nothing
 * of /b through the mount, the CLI or guessed inode numbers, and ".."
 * from its root stays there; root_squash makes root's creates
 * 65534-owned. mount.sdfs learns its key's caps: a read-only key
 * mounts read-only, a key whose path= is no directory or that the
 * cluster refuses does not mount.
 *
 * Needs the whole of issue 15 merged: the handshake that gives the mds
 * the connection's key (wire), keys in ZooKeeper (zkauth), `sdfs auth`
 * (admincli) and the caller's ids on the wire (perm). Without them it
 * fails at the first `auth add` or the first refused write.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"

#define ROOT 1
#define ANON 65534u

static struct tcluster *tc;
static struct sdfs *adm;                /* the admin key's handle */
static struct sdfs *handles[4];         /* opened as other keys, closed in down */
static pid_t mount_pid;

static void up(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .mds = 1 });
	adm = tcluster_client(tc);
	memset(handles, 0, sizeof(handles));
	mount_pid = 0;
}

static void down(void)
{
	if (mount_pid > 0) {
		char mnt[PATH_MAX];

		snprintf(mnt, sizeof(mnt), "%s/kmnt", tcluster_dir(tc));
		if (fork() == 0) {
			execl("/usr/bin/fusermount3", "fusermount3", "-u", "-z", mnt,
			      (char *)NULL);
			_exit(127);
		}
		wait(NULL);
		for (int64_t end = tnow_ms() + 10000; tnow_ms() < end;) {
			if (waitpid(mount_pid, NULL, WNOHANG) == mount_pid)
				break;
			tsleep_ms(20);
		}
		kill(mount_pid, SIGKILL);       /* the pid we forked; reaped above if gone */
		waitpid(mount_pid, NULL, WNOHANG);
	}
	for (size_t i = 0; i < sizeof(handles) / sizeof(handles[0]); i++)
		sdfs_close(handles[i]);
	tcluster_stop(tc);
}

TestSuite(kcaps, .init = up, .fini = down, .timeout = 300);

/* ---- keys ---- */

/* `sdfs auth add NAME --caps CAPS -o DIR/NAME.keyring`, and a config
 * DIR/NAME.conf naming that keyring (the cluster's config with its
 * keyring line replaced); the config's path into @conf. */
static void key_add(const char *name, const char *caps, char *conf, size_t len)
{
	char keyring[PATH_MAX], line[1024], *err = NULL;
	FILE *in, *out;
	int st;

	snprintf(keyring, sizeof(keyring), "%s/%s.keyring", tcluster_dir(tc), name);
	st = tcluster_sdfs(tc, NULL, &err, "auth add %s --caps %s -o %s", name, caps,
			   keyring);
	cr_assert_eq(st, 0, "auth add %s --caps %s: exit %d: %s", name, caps, st, err);
	free(err);
	snprintf(conf, len, "%s/%s.conf", tcluster_dir(tc), name);
	in = fopen(tcluster_conf(tc), "r");
	out = fopen(conf, "w");
	cr_assert(in && out, "config copy: %s", strerror(errno));
	while (fgets(line, sizeof(line), in))
		if (strncmp(line, "keyring", 7) != 0)
			fputs(line, out);
	fprintf(out, "keyring = %s\n", keyring);
	fclose(in);
	fclose(out);
}

/* A libsdfs handle on config @conf (key_add's). */
static struct sdfs *open_as(const char *conf)
{
	char err[256] = "";
	struct sdfs *s;
	size_t i;

	cr_assert_eq(sdfs_open(conf, &s, err, sizeof(err)), 0, "open %s: %s", conf, err);
	for (i = 0; i < sizeof(handles) / sizeof(handles[0]) && handles[i]; i++)
		;
	cr_assert_lt(i, sizeof(handles) / sizeof(handles[0]));
	handles[i] = s;
	return s;
}

/* The CLI on config @conf (key_add's); its exit status, stdout into @out. */
#define cli_as(conf, out, fmt, ...) \
	tsdfs_run(out, NULL, "-c %s " fmt, conf, __VA_ARGS__)

/* ---- the tree ---- */

static struct sdfs_stat mkdir_as(struct sdfs *s, uint64_t dir, const char *name)
{
	struct sdfs_stat st;
	int ret = sdfs_ns_mkdir(s, dir, name, 0755, 0, 0, &st);

	cr_assert_eq(ret, 0, "mkdir %s: %s", name, strerror(-ret));
	return st;
}

/* /PATH through the CLI as admin, holding @text. */
static void put(const char *path, const char *text)
{
	char local[PATH_MAX], *err = NULL;
	FILE *f;
	int st;

	snprintf(local, sizeof(local), "%s/put.tmp", tcluster_dir(tc));
	f = fopen(local, "w");
	cr_assert(f);
	fputs(text, f);
	fclose(f);
	st = tcluster_sdfs(tc, NULL, &err, "fs put %s %s", local, path);
	cr_assert_eq(st, 0, "fs put %s: exit %d: %s", path, st, err);
	free(err);
}

/* /a/sub, /a/f ("in a\n"), /b/secret ("secret b\n") */
static uint64_t a, sub, f, b, secret;

static void tree(void)
{
	struct sdfs_stat st;

	a = mkdir_as(adm, ROOT, "a").ino;
	sub = mkdir_as(adm, a, "sub").ino;
	b = mkdir_as(adm, ROOT, "b").ino;
	put("/a/f", "in a\n");
	put("/b/secret", "secret b\n");
	cr_assert_eq(sdfs_ns_lookup(adm, a, "f", &st), 0);
	f = st.ino;
	cr_assert_eq(sdfs_ns_lookup(adm, b, "secret", &st), 0);
	secret = st.ino;
}

struct names {
	char s[1024];
};

static int add_name(void *arg, const char *name, uint64_t ino, uint32_t type,
		    uint64_t cookie, const struct sdfs_stat *st)
{
	struct names *n = arg;

	(void)ino, (void)type, (void)cookie, (void)st;
	snprintf(n->s + strlen(n->s), sizeof(n->s) - strlen(n->s), "%s%s",
		 n->s[0] ? "," : "", name);
	return 0;
}

static int list(struct sdfs *s, uint64_t dir, struct names *n)
{
	n->s[0] = '\0';
	return sdfs_ns_readdir(s, dir, 0, 0, add_name, n);
}

/* ---- read-only ---- */

Test(kcaps, a_read_only_key_cannot_write)
{
	char ro[PATH_MAX], local[PATH_MAX], *out = NULL;
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_SIZE, .size = 0 };
	struct sdfs_stat st;
	struct names n;
	struct sdfs *r;

	tree();
	key_add("client.ro", "ro", ro, sizeof(ro));
	r = open_as(ro);
	cr_assert_eq(sdfs_ns_mknod(r, a, "x", S_IFREG | 0644, 0, 0, 0, &st), -EROFS);
	cr_assert_eq(sdfs_ns_mkdir(r, a, "x", 0755, 0, 0, &st), -EROFS);
	cr_assert_eq(sdfs_ns_symlink(r, a, "x", "f", 0, 0, &st), -EROFS);
	cr_assert_eq(sdfs_ns_unlink(r, a, "f"), -EROFS);
	cr_assert_eq(sdfs_ns_rmdir(r, a, "sub"), -EROFS);
	cr_assert_eq(sdfs_ns_rename(r, a, "f", a, "g", 0), -EROFS);
	cr_assert_eq(sdfs_ns_link(r, f, a, "g", &st), -EROFS);
	cr_assert_eq(sdfs_ns_setattr(r, f, &sa, &st), -EROFS);
	cr_assert_eq(sdfs_ns_setxattr(r, f, "user.x", "1", 1, 0), -EROFS);
	/* the CLI: reads work, writes fail */
	cr_assert_eq(cli_as(ro, &out, "fs cat %s", "/a/f"), 0);
	cr_assert_str_eq(out, "in a\n");
	free(out);
	snprintf(local, sizeof(local), "%s/put.tmp", tcluster_dir(tc));
	cr_assert_neq(cli_as(ro, NULL, "fs put %s /a/f", local), 0);
	cr_assert_neq(cli_as(ro, NULL, "fs put %s /a/new", local), 0);
	cr_assert_neq(cli_as(ro, NULL, "fs rm %s", "/a/f"), 0);
	cr_assert_neq(cli_as(ro, NULL, "fs mkdir %s", "/a/d"), 0);
	/* and nothing changed */
	cr_assert_eq(list(adm, a, &n), 0);
	cr_assert_str_eq(n.s, "sub,f");
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "fs cat /a/f"), 0);
	cr_assert_str_eq(out, "in a\n");
	free(out);
}

/* ---- a new key ---- */

/*
 * `sdfs auth add` returns, and a client with the new key connects at
 * once: the mds reads a key it misses from ZooKeeper instead of
 * refusing it until its watch's reload brings it (a CI failure: "key
 * client.pa: unknown key", 100 ms after the add), and so do the
 * block daemons (client_conn.c). Several rounds, each racing a fresh
 * reload.
 */
Test(kcaps, a_key_works_the_moment_auth_add_returns)
{
	for (int i = 0; i < 8; i++) {
		char name[32], conf[PATH_MAX], err[256] = "";
		struct sdfs_stat st;
		struct sdfs *s;
		int ret;

		snprintf(name, sizeof(name), "client.new%d", i);
		key_add(name, "rw", conf, sizeof(conf));
		cr_assert_eq(sdfs_open(conf, &s, err, sizeof(err)), 0, "open %s: %s", conf, err);
		/* the mds first; then the block daemons, a few ms later */
		ret = sdfs_ns_create(s, ROOT, name, 0644, 0, 0, &st);
		if (!ret)
			ret = sdfs_file_pwrite(s, &st, name, strlen(name), 0, 0);
		sdfs_close(s);
		cr_assert_eq(ret, 0, "round %d: %s right after its auth add: %s", i, name,
			     strerror(-ret));
	}
}

/* ---- a path-restricted key ---- */

Test(kcaps, a_path_key_reaches_nothing_outside_its_subtree)
{
	char pa[PATH_MAX], *out = NULL;
	struct sdfs_stat st;
	struct names n;
	struct sdfs *p;
	uint64_t max_ino;
	int seen = 0;

	tree();
	key_add("client.pa", "rw,path=/a", pa, sizeof(pa));
	p = open_as(pa);
	/* its root is /a */
	cr_assert_eq(list(p, ROOT, &n), 0);
	cr_assert_str_eq(n.s, "sub,f");
	cr_assert_eq(sdfs_ns_lookup(p, ROOT, "b", &st), -ENOENT);
	cr_assert_eq(sdfs_ns_lookup(p, ROOT, "..", &st), 0);
	cr_assert_eq(st.ino, ROOT, "'..' of its root is its root");
	cr_assert_eq(sdfs_ns_lookup(p, sub, "..", &st), 0);
	cr_assert_eq(st.ino, ROOT);
	/* /b by its inode numbers */
	cr_assert_eq(sdfs_ns_getattr(p, b, &st), -ENOENT);
	cr_assert_eq(sdfs_ns_getattr(p, secret, &st), -ENOENT);
	cr_assert_eq(list(p, b, &n), -ENOENT);
	cr_assert_eq(sdfs_ns_lookup(p, b, "secret", &st), -ENOENT);
	cr_assert_eq(sdfs_ns_readlink(p, secret, n.s, sizeof(n.s)), -ENOENT);
	cr_assert_eq(sdfs_ns_link(p, secret, ROOT, "stolen", &st), -ENOENT);
	cr_assert_eq(sdfs_ns_rename(p, ROOT, "f", b, "f", 0), -ENOENT);
	/* every inode number up to well past the last one */
	max_ino = secret > f ? secret : f;
	for (uint64_t i = 0; i <= max_ino + 64; i++) {
		int ret = sdfs_ns_getattr(p, i, &st);

		if (ret == 0) {
			cr_assert(st.ino == ROOT || st.ino == sub || st.ino == f,
				  "guessed inode %" PRIu64 " reached %" PRIu64, i, st.ino);
			seen++;
		} else {
			cr_assert_eq(ret, -ENOENT, "getattr %" PRIu64 ": %s", i, strerror(-ret));
		}
	}
	cr_assert_eq(seen, 4, "1 and /a's own number (both its root), sub, f");
	/* the CLI */
	cr_assert_eq(cli_as(pa, &out, "fs ls %s", "/"), 0);
	cr_assert_str_eq(out, "f\nsub\n", "fs ls / lists /a");
	free(out);
	cr_assert_eq(cli_as(pa, &out, "fs cat %s", "/f"), 0);
	cr_assert_str_eq(out, "in a\n");
	free(out);
	cr_assert_neq(cli_as(pa, NULL, "fs cat %s", "/b/secret"), 0);
	cr_assert_neq(cli_as(pa, NULL, "fs ls %s", "/b"), 0);
	cr_assert_neq(cli_as(pa, NULL, "fs cat %s", "/../b/secret"), 0);
	/* its creates land in /a */
	mkdir_as(p, ROOT, "made");
	cr_assert_eq(sdfs_ns_lookup(adm, a, "made", &st), 0);
}

/* mount.sdfs CLUSTER DIR/kmnt -f -o conf=@conf (key_add's) in the
 * background, its stderr to DIR/kmnt.err; returns 1 once DIR/kmnt is a
 * different filesystem, or 0 once mount.sdfs exited (its status into
 * *@status). */
static int mount_try(const char *conf, char *mnt, size_t len, int *status)
{
	const char *bin = getenv("MOUNT_SDFS");
	char opts[PATH_MAX + 64], cluster[64] = "", line[512], errf[PATH_MAX];
	struct stat parent, m;
	FILE *cf = fopen(tcluster_conf(tc), "r");

	cr_assert(bin && *bin, "MOUNT_SDFS is not set (run through meson test)");
	cr_assert(cf);
	while (fgets(line, sizeof(line), cf))
		if (sscanf(line, "cluster = %63s", cluster) == 1)
			break;
	fclose(cf);
	snprintf(mnt, len, "%s/kmnt", tcluster_dir(tc));
	cr_assert(mkdir(mnt, 0755) == 0 || errno == EEXIST);
	cr_assert_eq(stat(tcluster_dir(tc), &parent), 0);
	snprintf(opts, sizeof(opts), "conf=%s", conf);
	snprintf(errf, sizeof(errf), "%s/kmnt.err", tcluster_dir(tc));
	mount_pid = fork();
	cr_assert(mount_pid >= 0);
	if (mount_pid == 0) {
		int nfd = open("/dev/null", O_RDWR);
		int efd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(nfd, 0);
		dup2(efd, 2);
		execl(bin, bin, cluster, mnt, "-f", "-o", opts, (char *)NULL);
		_exit(127);
	}
	for (int64_t end = tnow_ms() + TCLUSTER_WAIT_MS; tnow_ms() < end; tsleep_ms(50)) {
		if (waitpid(mount_pid, status, WNOHANG) == mount_pid) {
			mount_pid = 0;
			return 0;
		}
		if (stat(mnt, &m) == 0 && m.st_dev != parent.st_dev)
			return 1;
	}
	cr_assert_fail("%s not mounted in %d ms, and mount.sdfs still runs", mnt,
		       TCLUSTER_WAIT_MS);
	return 0;
}

static void mount_as(const char *conf, char *mnt, size_t len)
{
	int status;

	cr_assert(mount_try(conf, mnt, len, &status), "mount.sdfs exited: status %d",
		  status);
}

/* mount.sdfs with @conf fails: exits non-zero having said one line
 * holding @want1 and @want2 on stderr, the line into @line. */
static void mount_fails(const char *conf, const char *want1, const char *want2,
			char *line, size_t len)
{
	char mnt[PATH_MAX], errf[PATH_MAX];
	int status = 0;
	FILE *ef;

	cr_assert_not(mount_try(conf, mnt, sizeof(mnt), &status),
		      "%s mounted (with %s)", mnt, conf);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0,
		  "mount.sdfs: status %d", status);
	snprintf(errf, sizeof(errf), "%s/kmnt.err", tcluster_dir(tc));
	ef = fopen(errf, "r");
	cr_assert(ef);
	line[0] = '\0';
	while (fgets(line, (int)len, ef) && !(strstr(line, want1) && strstr(line, want2)))
		line[0] = '\0';
	fclose(ef);
	cr_assert(line[0], "mount.sdfs said no line with '%s' and '%s' (%s)", want1,
		  want2, errf);
	line[strcspn(line, "\n")] = '\0';
	cr_log_info("%s", line);
}

Test(kcaps, a_path_keys_mount_shows_only_its_subtree)
{
	char pa[PATH_MAX], mnt[PATH_MAX], path[PATH_MAX + 32], buf[64];
	struct dirent *e;
	struct names n = { "" };
	struct stat st;
	DIR *d;
	int fd;

	tree();
	key_add("client.pm", "rw,path=/a", pa, sizeof(pa));
	mount_as(pa, mnt, sizeof(mnt));
	d = opendir(mnt);
	cr_assert(d, "opendir %s: %s", mnt, strerror(errno));
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			snprintf(n.s + strlen(n.s), sizeof(n.s) - strlen(n.s), "%s%s",
				 n.s[0] ? "," : "", e->d_name);
	closedir(d);
	cr_assert_str_eq(n.s, "sub,f", "the mount's root lists /a");
	snprintf(path, sizeof(path), "%s/f", mnt);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(read(fd, buf, sizeof(buf)), 5);
	close(fd);
	cr_assert(memcmp(buf, "in a\n", 5) == 0);
	snprintf(path, sizeof(path), "%s/b/secret", mnt);
	cr_assert_eq(open(path, O_RDONLY), -1);
	cr_assert_eq(errno, ENOENT);
	snprintf(path, sizeof(path), "%s/sub/../f", mnt);
	cr_assert_eq(stat(path, &st), 0, "sub/.. is the mount's root");
	/* a write through it lands in /a */
	snprintf(path, sizeof(path), "%s/w", mnt);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, "w\n", 2), 2);
	cr_assert_eq(close(fd), 0);
	struct sdfs_stat ss;
	cr_assert_eq(sdfs_ns_lookup(adm, a, "w", &ss), 0);
	cr_assert_eq(sdfs_ns_lookup(adm, ROOT, "w", &ss), -ENOENT);
	/* the create's reply brought /a's new attributes as the key sees
	 * them (its root, ino 1): the mount shows the mds's mtime */
	snprintf(path, sizeof(path), "%s/d2", mnt);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_eq(stat(mnt, &st), 0);
	cr_assert_eq(sdfs_ns_getattr(adm, a, &ss), 0);
	cr_assert_eq(st.st_ino, 1u);
	cr_assert_eq(st.st_nlink, ss.nlink);
	cr_assert_eq((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
		     ss.mtime_ns, "the mount's root shows /a's mtime");
}

/* ---- what the mount learns of its key ---- */

/* Are @mnt's mount options (mountinfo's) "ro,..."? */
static int mount_opts_ro(const char *mnt)
{
	char line[4096], point[PATH_MAX], opts[1024];
	int ro = -1;
	FILE *mi = fopen("/proc/self/mountinfo", "r");

	cr_assert(mi);
	while (fgets(line, sizeof(line), mi))
		if (sscanf(line, "%*s %*s %*s %*s %4095s %1023s", point, opts) == 2 &&
		    !strcmp(point, mnt))
			ro = !strcmp(opts, "ro") || !strncmp(opts, "ro,", 3);
	fclose(mi);
	cr_assert_neq(ro, -1, "%s is not in mountinfo", mnt);
	return ro;
}

/* Did the mount.sdfs of mount_try say @text on stderr (so far)? */
static int err_has(const char *text)
{
	char errf[PATH_MAX], line[1024];
	int found = 0;
	FILE *ef;

	snprintf(errf, sizeof(errf), "%s/kmnt.err", tcluster_dir(tc));
	ef = fopen(errf, "r");
	cr_assert(ef);
	while (fgets(line, sizeof(line), ef))
		if (strstr(line, text)) {
			cr_log_info("%s", line);
			found = 1;
		}
	fclose(ef);
	return found;
}

Test(kcaps, a_read_only_keys_mount_is_read_only)
{
	char ro[PATH_MAX], mnt[PATH_MAX], path[PATH_MAX + 32], buf[64];
	struct statvfs sv;
	int fd;

	tree();
	key_add("client.rom", "ro", ro, sizeof(ro));
	mount_as(ro, mnt, sizeof(mnt));
	cr_assert_eq(statvfs(mnt, &sv), 0, "statvfs %s: %s", mnt, strerror(errno));
	cr_assert(sv.f_flag & ST_RDONLY, "a read-only key's mount is read-only");
	cr_assert(mount_opts_ro(mnt), "mount shows ro");
	cr_assert(err_has("key client.rom is read-only (caps ro)"),
		  "mount.sdfs says why");
	snprintf(path, sizeof(path), "%s/a/new", mnt);
	cr_assert_eq(open(path, O_WRONLY | O_CREAT, 0644), -1);
	cr_assert_eq(errno, EROFS, "create: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/a/f", mnt);
	cr_assert_eq(open(path, O_WRONLY), -1);
	cr_assert_eq(errno, EROFS, "open for writing: %s", strerror(errno));
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(read(fd, buf, sizeof(buf)), 5, "reads work");
	close(fd);
}

Test(kcaps, a_key_whose_path_is_no_directory_does_not_mount)
{
	char conf[PATH_MAX], line[1024];

	tree();
	key_add("client.pmiss", "rw,path=/missing", conf, sizeof(conf));
	mount_fails(conf, "client.pmiss", "path=/missing", line, sizeof(line));
	key_add("client.pfile", "rw,path=/a/f", conf, sizeof(conf));
	mount_fails(conf, "client.pfile", "path=/a/f", line, sizeof(line));
	/* a key the cluster no longer knows */
	key_add("client.gone", "rw", conf, sizeof(conf));
	cr_assert_eq(tcluster_sdfs(tc, NULL, NULL, "auth rm client.gone"), 0);
	mount_fails(conf, "client.gone", "refused", line, sizeof(line));
}

/* ---- squash ---- */

Test(kcaps, root_squash_makes_roots_creates_anonymous)
{
	char sq[PATH_MAX], local[PATH_MAX], *out = NULL;
	struct sdfs_stat st;
	struct sdfs *q;

	cr_assert_eq(geteuid(), 0, "run as root: the creates must claim uid 0");
	key_add("client.sq", "rw,root_squash", sq, sizeof(sq));
	q = open_as(sq);
	/* squashed root is nobody: it creates where anyone may */
	cr_assert_eq(sdfs_ns_mkdir(adm, ROOT, "pub", 01777, 0, 0, &st), 0);
	uint64_t pub = st.ino;
	cr_assert_eq(sdfs_ns_mknod(q, ROOT, "r", S_IFREG | 0644, 0, 0, 0, &st), -EACCES,
		     "squashed root may not create in root's 0755 /");
	cr_assert_eq(sdfs_ns_mknod(q, pub, "r", S_IFREG | 0644, 0, 0, 0, &st), 0);
	cr_assert_eq(st.uid, ANON);
	cr_assert_eq(st.gid, ANON);
	cr_assert_eq(sdfs_ns_getattr(adm, st.ino, &st), 0);
	cr_assert_eq(st.uid, ANON, "stored as 65534");
	/* the CLI as that key */
	snprintf(local, sizeof(local), "%s/put.tmp", tcluster_dir(tc));
	FILE *fp = fopen(local, "w");
	cr_assert(fp);
	fputs("x\n", fp);
	fclose(fp);
	cr_assert_eq(cli_as(sq, NULL, "fs put %s /pub/cli", local), 0);
	cr_assert_eq(sdfs_ns_lookup(adm, pub, "cli", &st), 0);
	cr_assert_eq(st.uid, ANON);
	cr_assert_eq(st.gid, ANON);
	/* the admin key is not squashed */
	cr_assert_eq(tcluster_sdfs(tc, &out, NULL, "fs put %s /pub/adm", local), 0);
	free(out);
	cr_assert_eq(sdfs_ns_lookup(adm, pub, "adm", &st), 0);
	cr_assert_eq(st.uid, 0);
}
