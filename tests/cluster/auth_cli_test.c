/*
 * auth_cli_test.c - the cluster's keys through the sdfs command (issue
 * 15, docs/operations.md "Keys"): auth add/ls/get/rm/rotate round trips
 * with --json; keyring files written mode 0600; a keyring without the
 * admin caps refused by auth and by format, with one line naming it;
 * and a rotation of a mount's key with the mount up that loses nothing
 * (the mount keeps working within the grace and after it, when it
 * reconnects with the new keyring, and after a restart on it).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"
#include "tests/cluster/tjson.h"

static struct tcluster *tc;

static void up0(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 0 });
}

static void up_mount(void)
{
	tc = tcluster_start(&(struct tcluster_opts){ .blockd = 3, .copies = 2,
						     .mds = 1, .mount = 1 });
}

static void down(void)
{
	tcluster_stop(tc);
}

TestSuite(auth_cli, .init = up0, .fini = down, .timeout = 120);
TestSuite(auth_rotate, .init = up_mount, .fini = down, .timeout = 300);

/* Run the CLI on the cluster; it must succeed. Returns its stdout. */
static char *ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *ok(const char *fmt, ...)
{
	char cmd[4096], *out, *err;
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = tcluster_sdfs(tc, &out, &err, "%s", cmd);
	cr_assert_eq(st, 0, "sdfs %s: exit %d: %s", cmd, st, err);
	free(err);
	return out;
}

/* It must fail with exit status @want (1: failed, 2: a bad command
 * line) and one line on stderr mentioning @mention (and, with --json,
 * {"error": ...} on stdout). */
static void fails(int want, const char *mention, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fails(int want, const char *mention, const char *fmt, ...)
{
	char cmd[4096], *out, *err;
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = tcluster_sdfs(tc, &out, &err, "%s", cmd);
	cr_assert_eq(st, want, "sdfs %s: exit %d, not %d: %s", cmd, st, want, err);
	cr_assert_eq(tcount_lines(err), 1, "sdfs %s: stderr is not one line: %s", cmd, err);
	cr_assert(strstr(err, mention), "sdfs %s: the error should say '%s': %s", cmd,
		  mention, err);
	if (strstr(cmd, "--json"))
		cr_assert(tjson_valid(out) && strstr(out, "\"error\""),
			  "sdfs %s: no JSON error: %s", cmd, out);
	else
		cr_assert_str_empty(out, "sdfs %s: printed on stdout: %s", cmd, out);
	cr_log_info("sdfs %s: %s", cmd, err);
	free(out);
	free(err);
}

/* The entry of @name in `auth ls --json`: 1 (its caps into @caps, its
 * rotation deadline into *@until, -1 for null) or 0 if absent. */
static int ls_entry(const char *name, char *caps, size_t len, int64_t *until)
{
	char *out = ok("--json auth ls"), n[128];
	const char *p = out;
	int found = 0;

	cr_assert(tjson_valid(out), "auth ls --json: %s", out);
	while (tjson_str(p, "name", n, sizeof(n), &p) == 0) {
		if (strcmp(n, name))
			continue;
		found = 1;
		cr_assert_eq(tjson_str(p, "caps", caps, len, NULL), 0, "%s", out);
		if (tjson_int(p, "rotating_until_ms", until, NULL))
			*until = -1;
		break;
	}
	free(out);
	return found;
}

/* @path's mode bits (and that it is a regular file). */
static unsigned file_mode(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	cr_assert(S_ISREG(st.st_mode), "%s is not a file", path);
	return st.st_mode & 07777;
}

/* "key = BASE64" of the keyring file @path into @key. */
static void keyring_key(const char *path, char *key, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "r");
	int found = 0;

	cr_assert(f, "%s: %s", path, strerror(errno));
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");

		if (strncmp(p, "key", 3) || !strchr(p, '='))
			continue;
		p = strchr(p, '=') + 1;
		p += strspn(p, " \t");
		p[strcspn(p, " \t\n")] = '\0';
		snprintf(key, len, "%s", p);
		found = 1;
	}
	fclose(f);
	cr_assert(found, "%s has no key line", path);
}

static int file_has(const char *path, const char *needle)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

Test(auth_cli, add_ls_get_rotate_rm_round_trip)
{
	char caps[256], file[PATH_MAX], key1[128], key2[128], name[128], *out;
	int64_t until, gen1, gen2;

	/* dev up made the admin key; its keyring is the config's */
	cr_assert(ls_entry("client.admin", caps, sizeof(caps), &until));
	cr_assert(strstr(caps, "admin"), "client.admin's caps: %s", caps);

	out = ok("--json auth add client.alice --caps ro,path=/projects/a,root_squash");
	cr_assert(tjson_valid(out), "auth add --json: %s", out);
	cr_assert_eq(tjson_str(out, "name", name, sizeof(name), NULL), 0, "%s", out);
	cr_assert_str_eq(name, "client.alice");
	cr_assert_eq(tjson_int(out, "gen", &gen1, NULL), 0, "%s", out);
	free(out);
	cr_assert(ls_entry("client.alice", caps, sizeof(caps), &until),
		  "auth ls does not list client.alice");
	cr_assert(strstr(caps, "ro") && strstr(caps, "path=/projects/a") &&
		  strstr(caps, "root_squash"), "client.alice's caps: %s", caps);
	cr_assert_eq(until, -1, "a new key is not rotating");
	/* the default caps: rw */
	free(ok("auth add client.bob"));
	cr_assert(ls_entry("client.bob", caps, sizeof(caps), &until));
	cr_assert(strstr(caps, "rw"), "client.bob's caps: %s", caps);
	fails(1, "exists", "auth add client.bob");
	fails(2, "--caps", "auth add client.carol --caps nonsense");
	cr_assert(!ls_entry("client.carol", caps, sizeof(caps), &until),
		  "a refused add stored a key");

	/* get -o: mode 0600 even over a file that was readable by all */
	snprintf(file, sizeof(file), "%s/alice.keyring", tcluster_dir(tc));
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0);
	close(fd);
	chmod(file, 0644);
	out = ok("--json auth get client.alice -o %s", file);
	cr_assert(tjson_valid(out), "auth get --json: %s", out);
	free(out);
	cr_assert_eq(file_mode(file), 0600, "auth get -o wrote mode %o", file_mode(file));
	cr_assert(file_has(file, "[client.alice]"), "no [client.alice] section");
	cr_assert(file_has(file, "zk ="), "a client keyring needs its zk password");
	cr_assert(!file_has(file, "secret"), "a client keyring holds the cluster secret");
	keyring_key(file, key1, sizeof(key1));
	/* without -o: the same keyring on stdout */
	out = ok("auth get client.alice");
	cr_assert(strstr(out, key1), "auth get to stdout: %s", out);
	free(out);

	/* rotate: a new key; the old one has a deadline */
	out = ok("--json auth rotate client.alice --grace 120 -o %s", file);
	cr_assert(tjson_valid(out), "auth rotate --json: %s", out);
	cr_assert_eq(tjson_int(out, "rotating_until_ms", &until, NULL), 0,
		     "no deadline after rotate: %s", out);
	cr_assert_gt(until, 0);
	cr_assert_eq(tjson_int(out, "gen", &gen2, NULL), 0, "%s", out);
	cr_assert_gt(gen2, gen1, "rotate did not change the entry's generation");
	free(out);
	cr_assert_eq(file_mode(file), 0600);
	keyring_key(file, key2, sizeof(key2));
	cr_assert_str_neq(key1, key2, "rotate kept the key");
	cr_assert(ls_entry("client.alice", caps, sizeof(caps), &until));
	cr_assert_gt(until, 0, "auth ls shows no rotation deadline");
	out = ok("auth ls");
	cr_assert(strstr(out, "ROTATING-UNTIL") && strstr(out, "client.alice"), "%s", out);
	free(out);

	/* rm */
	out = ok("--json auth rm client.alice");
	cr_assert(tjson_valid(out), "auth rm --json: %s", out);
	free(out);
	cr_assert(!ls_entry("client.alice", caps, sizeof(caps), &until),
		  "auth rm left client.alice");
	fails(1, "no key client.alice", "auth get client.alice");
	fails(1, "no key client.alice", "--json auth rm client.alice");
	/* the admin cannot cut the branch it sits on */
	fails(1, "client.admin", "auth rm client.admin");
	cr_assert(ls_entry("client.admin", caps, sizeof(caps), &until));

	/* an admin keyring carries the secret; rotating one's own key (no
	 * grace) rewrites the keyring in use, which goes on working */
	char admin[PATH_MAX];
	snprintf(admin, sizeof(admin), "%s/keyring", tcluster_dir(tc));
	keyring_key(admin, key1, sizeof(key1));
	snprintf(file, sizeof(file), "%s/admin-copy.keyring", tcluster_dir(tc));
	free(ok("auth get client.admin -o %s", file));
	cr_assert(file_has(file, "secret"), "an admin keyring without the secret");
	free(ok("auth rotate client.admin --grace 0"));
	keyring_key(admin, key2, sizeof(key2));
	cr_assert_str_neq(key1, key2, "rotating client.admin left its keyring alone");
	cr_assert_eq(file_mode(admin), 0600);
	cr_assert(ls_entry("client.admin", caps, sizeof(caps), &until),
		  "the rotated admin keyring no longer works");
	fails(1, "rotated", "--keyring %s auth ls", file);
}

/* A keyring without admin caps: auth and format say so and change
 * nothing. */
Test(auth_cli, non_admin_keyring_is_refused)
{
	char file[PATH_MAX], caps[256], uuid1[64], uuid2[64], *out;
	int64_t until;

	snprintf(file, sizeof(file), "%s/x.keyring", tcluster_dir(tc));
	free(ok("auth add client.x --caps rw -o %s", file));
	cr_assert_eq(file_mode(file), 0600);
	fails(1, "needs an admin key (this keyring is client.x)",
	      "--keyring %s auth ls", file);
	fails(1, "needs an admin key (this keyring is client.x)",
	      "--keyring %s --json auth add client.y", file);
	fails(1, "needs an admin key (this keyring is client.x)",
	      "--keyring %s auth rotate client.admin", file);
	fails(1, "needs an admin key (this keyring is client.x)",
	      "--keyring %s auth rm client.admin", file);
	cr_assert(!ls_entry("client.y", caps, sizeof(caps), &until),
		  "a refused add stored a key");

	out = ok("--json cluster status");
	cr_assert_eq(tjson_str(out, "uuid", uuid1, sizeof(uuid1), NULL), 0, "%s", out);
	free(out);
	fails(1, "needs an admin key (this keyring is client.x)",
	      "--keyring %s cluster format --copies 1 --force", file);
	out = ok("--json cluster status");
	cr_assert_eq(tjson_str(out, "uuid", uuid2, sizeof(uuid2), NULL), 0, "%s", out);
	free(out);
	cr_assert_str_eq(uuid1, uuid2, "a refused format changed the cluster");
	/* the admin's reformat keeps the keys (and its keyring) */
	free(ok("cluster format --copies 1 --force"));
	cr_assert(ls_entry("client.x", caps, sizeof(caps), &until),
		  "a reformat by the admin dropped the keys");
}

/* @len bytes of pattern @seed written to @path through the mount. */
static void put(const char *path, size_t len, unsigned seed)
{
	char *buf = malloc(len);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert(buf && fd >= 0, "%s: %s", path, strerror(errno));
	tfill_random(buf, len, seed);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len, "write %s: %s", path,
		     strerror(errno));
	cr_assert_eq(fsync(fd), 0, "fsync %s: %s", path, strerror(errno));
	cr_assert_eq(close(fd), 0);
	free(buf);
}

/* Is @path, read through the mount, what put(@path, @len, @seed) wrote? */
static void check(const char *path, size_t len, unsigned seed)
{
	char *want = malloc(len), *got = malloc(len + 1);
	int fd = open(path, O_RDONLY);
	ssize_t n;

	cr_assert(want && got && fd >= 0, "%s: %s", path, strerror(errno));
	tfill_random(want, len, seed);
	n = read(fd, got, len + 1);
	close(fd);
	cr_assert_eq(n, (ssize_t)len, "%s: read %zd bytes, not %zu", path, n, len);
	cr_assert(!memcmp(want, got, len), "%s: other bytes than written", path);
	free(want);
	free(got);
}

/* Copy the file @from to @to (mode 0600). */
static void copy_file(const char *from, const char *to)
{
	char buf[8192];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	cr_assert(in >= 0 && out >= 0, "%s -> %s: %s", from, to, strerror(errno));
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/*
 * auth rotate of a mount's key with the mount up: it keeps working
 * within the grace (its connections proved the old key), and after the
 * grace, when it connects again (the mds and a block daemon restarted),
 * with the new keyring (auth rotate -o wrote it where the mount reads
 * it); a restart on the new keyring reads everything back. Every file
 * written and acknowledged reads back whole. The old key, in a copy of
 * the keyring, works within the grace and is refused after it.
 */
Test(auth_rotate, a_mount_keeps_working_across_its_key_rotation)
{
	char keyring[PATH_MAX], old[PATH_MAX], path[PATH_MAX + 64], key1[128], key2[128];
	char caps[256], *out, *err;
	int st;
	const char *mnt = tcluster_mnt(tc);
	int64_t until;
	unsigned n = 0;

	snprintf(keyring, sizeof(keyring), "%s/keys/client.mount1.keyring",
		 tcluster_dir(tc));
	cr_assert(ls_entry("client.mount1", caps, sizeof(caps), &until),
		  "dev up made no key for its mount");
	keyring_key(keyring, key1, sizeof(key1));
	snprintf(old, sizeof(old), "%s/old-mount1.keyring", tcluster_dir(tc));
	copy_file(keyring, old);
	for (; n < 4; n++) {
		snprintf(path, sizeof(path), "%s/f%u", mnt, n);
		put(path, 256 << 10, n);
	}

	free(ok("auth rotate client.mount1 --grace 5 -o %s", keyring));
	keyring_key(keyring, key2, sizeof(key2));
	cr_assert_str_neq(key1, key2);
	cr_assert_eq(file_mode(keyring), 0600);
	/* within the grace the old key still opens the namespace */
	free(ok("--keyring %s fs ls /", old));
	for (; n < 8; n++) {
		snprintf(path, sizeof(path), "%s/f%u", mnt, n);
		put(path, 256 << 10, n);
	}
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%u", mnt, i);
		check(path, 256 << 10, i);
	}
	/* past the grace (auth ls shows no deadline any more) the old key
	 * opens nothing */
	while (ls_entry("client.mount1", caps, sizeof(caps), &until) && until > 0)
		tsleep_ms(500);
	st = tcluster_sdfs(tc, &out, &err, "--keyring %s fs ls /", old);
	cr_assert_neq(st, 0, "the old key still works after the grace: %s", out);
	cr_log_info("the old key after the grace: exit %d: %s", st, err);
	free(out);
	free(err);
	free(ok("--keyring %s fs ls /", keyring));
	/* the mount's connections to these two go: it connects again, with
	 * the new keyring (whether or not the daemons already closed what
	 * the old key opened) */
	cr_assert_eq(tcluster_term(tc, "mds.0"), 0);
	cr_assert_eq(tcluster_restart(tc, "mds.0"), 0, "mds.0 did not start again");
	cr_assert_eq(tcluster_wait_mds(tc, 1, TCLUSTER_WAIT_MS), 0, "no active mds");
	cr_assert_eq(tcluster_term(tc, "blockd.0"), 0);
	cr_assert_eq(tcluster_restart(tc, "blockd.0"), 0, "blockd.0 did not start again");
	for (; n < 12; n++) {
		snprintf(path, sizeof(path), "%s/f%u", mnt, n);
		put(path, 256 << 10, n);
	}
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%u", mnt, i);
		check(path, 256 << 10, i);
	}
	/* a new mount.sdfs on the new keyring */
	cr_assert_eq(tcluster_kill(tc, "mnt"), 0);
	cr_assert_eq(tcluster_restart(tc, "mnt"), 0, "the mount did not start again");
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%u", mnt, i);
		check(path, 256 << 10, i);
	}
	cr_log_info("%u files written across the rotation of client.mount1, all read "
		    "back", n);
}
