/*
 * cmd_auth.c - sdfs auth add|ls|get|rm|rotate: the cluster's keys
 * (docs/operations.md "Keys"). Every subcommand needs an admin keyring
 * (keyadm.h): the entries in ZooKeeper open only with the cluster
 * secret it carries.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/coord_auth.h"
#include "tools/keyadm.h"

/* The table's header and one row per key. */
static void row_head(void)
{
	printf("%-24s %-19s %s\n", "NAME", "ROTATING-UNTIL", "CAPS");
}

static void caps_text(const struct keydb_ent *e, char *buf, size_t len)
{
	if (auth_caps_format(&e->caps, buf, len))
		snprintf(buf, len, "?");
}

static void row_text(const struct keydb_ent *e, int64_t now_ms)
{
	char caps[AUTH_CAPS_STR_MAX], until[32] = "-";

	caps_text(e, caps, sizeof(caps));
	if (e->prev_until_ms > now_ms)
		cli_time(e->prev_until_ms * 1000000, until, sizeof(until));
	printf("%-24s %-19s %s\n", e->name, until, caps);
}

/* {"name": ..., "caps": ..., "rotating_until_ms": N|null, "gen": N,
 * "keyring": @file (if not NULL)} */
static void row_json(const struct keydb_ent *e, int64_t now_ms, const char *file)
{
	char caps[AUTH_CAPS_STR_MAX];

	caps_text(e, caps, sizeof(caps));
	printf("{\"name\": ");
	cli_json_str(stdout, e->name);
	printf(", \"caps\": ");
	cli_json_str(stdout, caps);
	if (e->prev_until_ms > now_ms)
		printf(", \"rotating_until_ms\": %" PRId64, e->prev_until_ms);
	else
		printf(", \"rotating_until_ms\": null");
	printf(", \"gen\": %" PRIu64, e->gen);
	if (file) {
		printf(", \"keyring\": ");
		cli_json_str(stdout, file);
	}
	printf("}");
}

/* One entry as the result: its row, or with @file where its keyring
 * went. */
static void show_one(const struct cli *cli, const struct keydb_ent *e, const char *file)
{
	int64_t now = keyadm_now_ms();

	if (cli->json) {
		row_json(e, now, file);
		printf("\n");
		return;
	}
	row_head();
	row_text(e, now);
	if (file)
		printf("keyring written to %s\n", file);
}

static int name_arg(const char *what, const char *name)
{
	if (!auth_name_ok(name))
		return cli_bad("%s: bad key name '%s' (want [A-Za-z0-9._-], 1..%u "
			       "characters, e.g. client.alice)", what, name, AUTH_NAME_MAX);
	return 0;
}

/* Write @e's keyring to @file (mode 0600). 0 or cli_fail's 1. */
static int write_keyring(struct keyadm *ka, const struct keydb_ent *e, const char *file,
			 const char *what)
{
	struct keyring kr;
	int ret;

	keyadm_keyring_of(e, ka->kr.secret, &kr);
	ret = keyring_save(file, &kr);
	memset(&kr, 0, sizeof(kr));
	if (ret)
		return cli_fail("%s: cannot write %s: %s", what, file, strerror(-ret));
	return 0;
}

/* @e's keyring text on stdout (auth get without -o). */
static int print_keyring(struct keyadm *ka, const struct keydb_ent *e)
{
	char dir[] = "/tmp/sdfs-auth.XXXXXX", file[64], buf[8192];
	ssize_t n;
	int fd, ret;

	if (!mkdtemp(dir))
		return cli_fail("auth get: cannot make a temporary dir: %s", strerror(errno));
	snprintf(file, sizeof(file), "%s/keyring", dir);
	ret = write_keyring(ka, e, file, "auth get");
	if (!ret) {
		fd = open(file, O_RDONLY);
		n = fd < 0 ? -1 : cli_read_full(fd, buf, sizeof(buf));
		if (fd >= 0)
			close(fd);
		if (n < 0) {
			ret = cli_fail("auth get: cannot read %s back", file);
		} else {
			cli_stdout_is_data();
			cli_write_all(1, buf, (size_t)n);
		}
		memset(buf, 0, sizeof(buf));
	}
	unlink(file);
	rmdir(dir);
	return ret;
}

static int auth_add(struct cli *cli, struct keyadm *ka)
{
	const char *name = NULL, *caps_s = "rw", *file = NULL, *v;
	struct keydb_ent e;
	struct auth_caps caps;
	char why[256];
	int ret;

	for (int i = 0; i < cli->argc; i++) {
		if ((v = cli_opt(cli->argc, cli->argv, &i, "--caps")))
			caps_s = v;
		else if ((v = cli_opt(cli->argc, cli->argv, &i, "-o")))
			file = v;
		else if (cli->argv[i][0] != '-' && !name)
			name = cli->argv[i];
		else
			return cli_usage("sdfs auth add NAME [--caps CAPS] [-o FILE]");
	}
	if (!name)
		return cli_usage("sdfs auth add NAME [--caps CAPS] [-o FILE]");
	if ((ret = name_arg("auth add", name)))
		return ret;
	if (auth_caps_parse(caps_s, &caps, why, sizeof(why)))
		return cli_bad("auth add: --caps %s: %s", caps_s, why);
	ret = coord_auth_get(ka->coord, ka->kr.secret, name, &e);
	if (ret == 0)
		return cli_fail("auth add: %s exists (sdfs auth get %s, or rotate it)",
				name, name);
	if (ret != -ENOENT && ret != -EBADMSG)
		return cli_fail("auth add: cannot read %s: %s", name, strerror(-ret));
	keyadm_new_ent(name, &caps, &e);
	ret = coord_auth_put(ka->coord, ka->kr.secret, &e);
	if (ret)
		return cli_fail("auth add: cannot store %s: %s", name, strerror(-ret));
	if (file && (ret = write_keyring(ka, &e, file, "auth add")))
		return ret;
	show_one(cli, &e, file);
	return 0;
}

static int auth_ls(struct cli *cli, struct keyadm *ka)
{
	struct keydb_ent *ents;
	size_t n;
	int64_t now = keyadm_now_ms();
	int ret;

	if (cli->argc)
		return cli_usage("sdfs auth ls [--json]");
	ret = coord_auth_list(ka->coord, ka->kr.secret, &ents, &n);
	if (ret)
		return cli_fail("auth ls: %s", strerror(-ret));
	if (cli->json) {
		printf("[");
		for (size_t i = 0; i < n; i++) {
			printf("%s", i ? ", " : "");
			row_json(&ents[i], now, NULL);
		}
		printf("]\n");
	} else {
		row_head();
		for (size_t i = 0; i < n; i++)
			row_text(&ents[i], now);
	}
	memset(ents, 0, n * sizeof(*ents));
	free(ents);
	return 0;
}

/* The entry of the one NAME argument of @what (with -o FILE and, for
 * rotate, --grace S). 0, or the exit status. */
static int get_ent(struct cli *cli, struct keyadm *ka, const char *what,
		   const char *usage, const char **file, uint64_t *grace_s,
		   struct keydb_ent *e)
{
	const char *name = NULL, *v;
	int ret;

	for (int i = 0; i < cli->argc; i++) {
		if (file && (v = cli_opt(cli->argc, cli->argv, &i, "-o"))) {
			*file = v;
		} else if (grace_s && (v = cli_opt(cli->argc, cli->argv, &i, "--grace"))) {
			if (cli_parse_u64(v, grace_s) || *grace_s > 86400 * 30)
				return cli_bad("--grace must be 0..2592000 seconds, not '%s'", v);
		} else if (cli->argv[i][0] != '-' && !name) {
			name = cli->argv[i];
		} else {
			return cli_usage(usage);
		}
	}
	if (!name)
		return cli_usage(usage);
	if ((ret = name_arg(what, name)))
		return ret;
	ret = coord_auth_get(ka->coord, ka->kr.secret, name, e);
	if (ret == -ENOENT)
		return cli_fail("%s: no key %s (see sdfs auth ls)", what, name);
	if (ret == -EBADMSG)
		return cli_fail("%s: the entry of %s does not open with this cluster's "
				"secret", what, name);
	if (ret)
		return cli_fail("%s: cannot read %s: %s", what, name, strerror(-ret));
	return 0;
}

static int auth_get(struct cli *cli, struct keyadm *ka)
{
	const char *file = NULL;
	struct keydb_ent e;
	int ret;

	ret = get_ent(cli, ka, "auth get", "sdfs auth get NAME [-o FILE]", &file, NULL, &e);
	if (ret)
		return ret;
	if (!file)
		ret = print_keyring(ka, &e);
	else if (!(ret = write_keyring(ka, &e, file, "auth get")))
		show_one(cli, &e, file);
	memset(&e, 0, sizeof(e));
	return ret;
}

static int auth_rm(struct cli *cli, struct keyadm *ka)
{
	struct keydb_ent e;
	int ret;

	ret = get_ent(cli, ka, "auth rm", "sdfs auth rm NAME", NULL, NULL, &e);
	if (ret)
		return ret;
	if (!strcmp(e.name, ka->kr.name))
		return cli_fail("auth rm: %s is the key of this keyring (%s): remove it "
				"with another admin key", e.name, ka->path);
	ret = coord_auth_del(ka->coord, e.name);
	if (ret && ret != -ENOENT)
		return cli_fail("auth rm: %s: %s", e.name, strerror(-ret));
	if (cli->json) {
		printf("{\"name\": ");
		cli_json_str(stdout, e.name);
		printf(", \"removed\": true}\n");
	} else {
		printf("removed %s: connections with its key are refused now\n", e.name);
	}
	return 0;
}

/*
 * A new key for NAME; the one it replaces stays valid until the grace
 * ends, so a client can get its new keyring and reconnect meanwhile.
 * Rotating this keyring's own key rewrites this keyring too (unless
 * -o names another file): its holder would lose its access otherwise.
 */
static int auth_rotate(struct cli *cli, struct keyadm *ka)
{
	const char *file = NULL;
	uint64_t grace_s = KEYADM_GRACE_S;
	struct keydb_ent e;
	int ret;

	ret = get_ent(cli, ka, "auth rotate", "sdfs auth rotate NAME [--grace S] [-o FILE]",
		      &file, &grace_s, &e);
	if (ret)
		return ret;
	memcpy(e.prev_key, e.key, AUTH_KEY_BYTES);
	e.prev_until_ms = grace_s ? keyadm_now_ms() + (int64_t)grace_s * 1000 : 0;
	auth_random_key(e.key);
	e.gen++;
	if (!file && !strcmp(e.name, ka->kr.name))
		file = ka->path;
	/* The new keyring first: a failed write leaves the old key alone. */
	if (file) {
		char tmp[PATH_MAX + 8];

		snprintf(tmp, sizeof(tmp), "%s.new", file);
		if ((ret = write_keyring(ka, &e, tmp, "auth rotate")))
			return ret;
		ret = coord_auth_put(ka->coord, ka->kr.secret, &e);
		if (ret) {
			unlink(tmp);
			return cli_fail("auth rotate: cannot store %s: %s", e.name,
					strerror(-ret));
		}
		if (rename(tmp, file))
			return cli_fail("auth rotate: %s is rotated, but its keyring stays in "
					"%s: cannot rename it to %s: %s", e.name, tmp, file,
					strerror(errno));
	} else {
		ret = coord_auth_put(ka->coord, ka->kr.secret, &e);
		if (ret)
			return cli_fail("auth rotate: cannot store %s: %s", e.name,
					strerror(-ret));
	}
	show_one(cli, &e, file);
	if (!cli->json && !file)
		printf("get the new keyring with: sdfs auth get %s -o FILE\n", e.name);
	memset(&e, 0, sizeof(e));
	return 0;
}

int cmd_auth(struct cli *cli)
{
	static const struct {
		const char *name;
		int (*fn)(struct cli *cli, struct keyadm *ka);
	} subs[] = {
		{ "add", auth_add }, { "ls", auth_ls }, { "list", auth_ls },
		{ "get", auth_get }, { "rm", auth_rm }, { "rotate", auth_rotate },
	};
	struct keyadm ka;
	int ret, k = -1;

	if (cli->argc < 1)
		return cli_usage("sdfs auth add|ls|get|rm|rotate ...");
	const char *sub = cli->argv[0];
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (!strcmp(sub, subs[i].name))
			k = (int)i;
	if (k < 0)
		return cli_unknown("auth", sub);
	cli->argc--;
	cli->argv++;
	if ((ret = keyadm_open(cli, "auth", &ka)))
		return ret;
	ret = subs[k].fn(cli, &ka);
	keyadm_close(&ka);
	return ret;
}
