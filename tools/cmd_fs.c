/*
 * cmd_fs.c - sdfs fs ls|stat|mkdir|rm|mv|ln|put|cat: the namespace the
 * active sdfs-mds serves, used without a mount (scripts, tests).
 *
 * Paths are absolute paths inside sdfs ("/a/b"), resolved by
 * sdfs_ns_resolve: symlinks met on the way are followed. A symlink as
 * the last component is followed by ls, cat and put, and taken as
 * itself by stat, rm, mv and ln, as their local namesakes do. New
 * entries belong to the caller's uid and gid, with 0777 (directories)
 * or 0666 (files) less the umask.
 * Not here: permission checks (the mds makes none; a mount does them),
 * splitting data onto objects (libclient/fileio.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/policy.h"
#include "tools/cli.h"

#define FS_CAT_PIECE (1u << 20)
#define FS_NAME_MAX 255                 /* sdfs.h: names up to 255 bytes */
#define FS_RENAME_NOREPLACE 1u          /* linux/fs.h values, as sdfs.h says */
#define FS_RENAME_EXCHANGE 2u
#define FS_PROGRESS_EVERY_MS 100
#define FS_BAR_WIDTH 20

/* A command's words: the options it knows, then its positional ones. */
struct fs_args {
	int flag[2];            /* flag[i]: option i of the command was given */
	char *pos[2];
	int npos;
};

struct fs_cmd {
	const char *name;
	const char *flags[3];   /* "-l", "--noreplace"...; NULL-terminated */
	int min, max;           /* positional arguments */
	const char *usage;
	int (*fn)(struct cli *cli, struct sdfs *s, const struct fs_args *a);
};

/* A directory's entries, collected by sdfs_ns_readdir. */
struct fs_ent {
	char *name;
	struct sdfs_stat st;    /* without plus: only ino and the type bits */
	char *target;           /* ls -l: a symlink's target */
};

struct fs_list {
	struct fs_ent *v;
	size_t n, cap;
	int err;
};

static uint32_t caller_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return (uint32_t)m;
}

/* "sdfs: fs OP PATH: reason"; a timeout says whether an mds is active. */
static int fs_fail(struct sdfs *s, const char *op, const char *path, int err)
{
	struct sdfs_mds_status ms;

	if (err == -EHOSTDOWN)
		return cli_fail("fs %s %s: no active mds (see sdfs mds status)", op, path);
	if (err == -ETIMEDOUT && sdfs_mds_status(s, &ms) == 0) {
		int active = ms.has_active;

		free(ms.list);
		if (!active)
			return cli_fail("fs %s %s: no active mds (see sdfs mds status)",
					op, path);
	}
	return cli_fail("fs %s %s: %s", op, path, strerror(-err));
}

static int fs_fail2(struct sdfs *s, const char *op, const char *a, const char *b,
		    int err)
{
	char both[8192];

	snprintf(both, sizeof(both), "%s %s", a, b);
	return fs_fail(s, op, both, err);
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFCHR: return "char";
	case S_IFBLK: return "block";
	default: return "unknown";
	}
}

/* "drwxr-xr-x", as ls -l writes it. */
static void mode_string(uint32_t m, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	const char *t = "-dlpscb";
	static const uint32_t types[] = { S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO,
					  S_IFSOCK, S_IFCHR, S_IFBLK };

	out[0] = '?';
	for (int i = 0; i < 7; i++)
		if ((m & S_IFMT) == types[i])
			out[0] = t[i];
	for (int i = 0; i < 9; i++)
		out[1 + i] = m & (0400u >> i) ? rwx[i] : '-';
	if (m & S_ISUID)
		out[3] = out[3] == 'x' ? 's' : 'S';
	if (m & S_ISGID)
		out[6] = out[6] == 'x' ? 's' : 'S';
	if (m & S_ISVTX)
		out[9] = out[9] == 'x' ? 't' : 'T';
	out[10] = '\0';
}

/* ISO-8601 local time with nanoseconds: "2026-11-21T22:01:13.123456789+01:00". */
static const char *iso_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	long frac = (long)(ns % 1000000000);
	char date[24], off[8];
	struct tm tm;

	if (frac < 0) {
		frac += 1000000000;
		t--;
	}
	localtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(off, sizeof(off), "%z", &tm);
	snprintf(buf, len, "%s.%09ld%.3s:%s", date, frac, off, off + 3);
	return buf;
}

/* Is @path an absolute sdfs path? Says why not if not (exit status 2). */
static int path_ok(const char *op, const char *path)
{
	if (path[0] == '/')
		return 1;
	cli_bad("fs %s %s: not an sdfs path (they start with /)", op, path);
	return 0;
}

/* Where @path's last component starts and ends, trailing slashes
 * left out; start == end for "/". */
static void last_component(const char *path, size_t *start, size_t *end)
{
	size_t e = strlen(path), b;

	while (e > 1 && path[e - 1] == '/')
		e--;
	for (b = e; b > 0 && path[b - 1] != '/'; b--)
		;
	*start = b;
	*end = e;
}

/* The last component of @path into @name ("" for "/"). */
static int base_name(const char *path, char name[FS_NAME_MAX + 1])
{
	size_t start, end;

	last_component(path, &start, &end);
	if (end - start > FS_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, path + start, end - start);
	name[end - start] = '\0';
	return 0;
}

/* @path's parent directory, resolved (symlinks followed), into *@dir
 * and its last component into @name ("" for the root itself). */
static int split_path(struct sdfs *s, const char *path, struct sdfs_stat *dir,
		      char name[FS_NAME_MAX + 1])
{
	size_t start, end;
	char *parent;
	int ret = base_name(path, name);

	if (ret)
		return ret;
	last_component(path, &start, &end);
	parent = strndup(path, start);
	if (!parent)
		return -ENOMEM;
	ret = sdfs_ns_resolve(s, parent, 1, dir);
	free(parent);
	if (!ret && !S_ISDIR(dir->mode))
		ret = -ENOTDIR;
	return ret;
}

/* Where a new entry for @path goes: like split_path, except that an
 * existing directory at @path (mv, ln without flags, like their local
 * namesakes) means "into it", under the last component of @src. */
static int dest_path(struct sdfs *s, const char *path, const char *src, int into,
		     struct sdfs_stat *dir, char name[FS_NAME_MAX + 1])
{
	struct sdfs_stat st;

	if (into && sdfs_ns_resolve(s, path, 1, &st) == 0 && S_ISDIR(st.mode)) {
		int ret = base_name(src, name);

		if (ret)
			return ret;
		if (!name[0])
			return -EEXIST;
		*dir = st;
		return 0;
	}
	return split_path(s, path, dir, name);
}

static int list_add(void *arg, const char *name, uint64_t ino, uint32_t type,
		    uint64_t cookie, const struct sdfs_stat *st)
{
	struct fs_list *l = arg;
	struct fs_ent *e;

	(void)cookie;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct fs_ent *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->err = -ENOMEM;
			return 1;
		}
		l->v = v;
		l->cap = cap;
	}
	e = &l->v[l->n];
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name) {
		l->err = -ENOMEM;
		return 1;
	}
	if (st) {
		e->st = *st;
	} else {
		e->st.ino = ino;
		e->st.mode = type;      /* the S_IFMT bits */
	}
	l->n++;
	return 0;
}

static void list_free(struct fs_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].target);
	}
	free(l->v);
}

static int list_dir(struct sdfs *s, uint64_t dir, int plus, struct fs_list *l)
{
	int ret;

	memset(l, 0, sizeof(*l));
	ret = sdfs_ns_readdir(s, dir, 0, plus, list_add, l);
	if (!ret)
		ret = l->err;
	if (ret)
		list_free(l);
	return ret;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct fs_ent *)a)->name, ((const struct fs_ent *)b)->name);
}

static int read_target(struct sdfs *s, uint64_t ino, char **out)
{
	char buf[4096];
	ssize_t n = sdfs_ns_readlink(s, ino, buf, sizeof(buf) - 1);

	if (n < 0)
		return (int)n;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	buf[n] = '\0';
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

static void ls_json(const struct fs_list *l)
{
	printf("[");
	for (size_t i = 0; i < l->n; i++) {
		const struct sdfs_stat *st = &l->v[i].st;

		printf("%s{\"name\": ", i ? ", " : "");
		cli_json_str(stdout, l->v[i].name);
		printf(", \"ino\": %" PRIu64 ", \"type\": \"%s\", \"mode\": %" PRIu32
		       ", \"perms\": \"%04" PRIo32 "\", \"nlink\": %" PRIu32
		       ", \"uid\": %" PRIu32 ", \"gid\": %" PRIu32 ", \"size\": %" PRIu64
		       ", \"mtime_ns\": %" PRId64, st->ino, type_name(st->mode),
		       st->mode & 07777, st->mode & 07777, st->nlink, st->uid, st->gid,
		       st->size, st->mtime_ns);
		if (l->v[i].target) {
			printf(", \"target\": ");
			cli_json_str(stdout, l->v[i].target);
		}
		printf("}");
	}
	printf("]\n");
}

/* "size" column: bytes, or "major, minor" for devices. */
static void size_text(const struct sdfs_stat *st, char *buf, size_t len)
{
	if (S_ISCHR(st->mode) || S_ISBLK(st->mode))
		snprintf(buf, len, "%u, %u", major(st->rdev), minor(st->rdev));
	else
		snprintf(buf, len, "%" PRIu64, st->size);
}

static int num_width(uint64_t v)
{
	int w = 1;

	while (v >= 10) {
		v /= 10;
		w++;
	}
	return w;
}

static void ls_long(const struct fs_list *l)
{
	int wl = 1, wu = 1, wg = 1, ws = 1;
	char sz[48];

	for (size_t i = 0; i < l->n; i++) {
		const struct sdfs_stat *st = &l->v[i].st;
		int w;

		wl = (w = num_width(st->nlink)) > wl ? w : wl;
		wu = (w = num_width(st->uid)) > wu ? w : wu;
		wg = (w = num_width(st->gid)) > wg ? w : wg;
		size_text(st, sz, sizeof(sz));
		ws = (w = (int)strlen(sz)) > ws ? w : ws;
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct sdfs_stat *st = &l->v[i].st;
		time_t t = (time_t)(st->mtime_ns / 1000000000);
		char mode[11], when[32];
		struct tm tm;

		mode_string(st->mode, mode);
		size_text(st, sz, sizeof(sz));
		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
		printf("%s %*" PRIu32 " %*" PRIu32 " %*" PRIu32 " %*s %s %s", mode, wl,
		       st->nlink, wu, st->uid, wg, st->gid, ws, sz, when, l->v[i].name);
		if (l->v[i].target)
			printf(" -> %s", l->v[i].target);
		printf("\n");
	}
}

static int fs_ls(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	const char *path = a->pos[0];
	int lng = a->flag[0], ret;
	struct sdfs_stat st, target;
	struct fs_list l;

	if (!path_ok("ls", path))
		return 2;
	/* Like ls: a symlink is listed as itself with -l, else followed
	 * (a dangling one is listed as itself). */
	ret = sdfs_ns_resolve(s, path, 0, &st);
	if (!ret && S_ISLNK(st.mode) && !lng && sdfs_ns_resolve(s, path, 1, &target) == 0)
		st = target;
	if (ret)
		return fs_fail(s, "ls", path, ret);
	if (S_ISDIR(st.mode)) {
		ret = list_dir(s, st.ino, 1, &l);
		if (ret)
			return fs_fail(s, "ls", path, ret);
		qsort(l.v, l.n, sizeof(*l.v), by_name);
	} else {
		struct sdfs_stat one = st;

		memset(&l, 0, sizeof(l));
		if (list_add(&l, path, one.ino, one.mode, 0, &one))
			return fs_fail(s, "ls", path, l.err);
	}
	for (size_t i = 0; i < l.n && (lng || cli->json); i++) {
		if (!S_ISLNK(l.v[i].st.mode))
			continue;
		ret = read_target(s, l.v[i].st.ino, &l.v[i].target);
		if (ret && ret != -ENOENT) {    /* ENOENT: removed meanwhile */
			list_free(&l);
			return fs_fail(s, "ls", path, ret);
		}
	}
	if (cli->json)
		ls_json(&l);
	else if (lng)
		ls_long(&l);
	else
		for (size_t i = 0; i < l.n; i++)
			printf("%s\n", l.v[i].name);
	list_free(&l);
	return 0;
}

static int fs_stat(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	const char *path = a->pos[0];
	char at[64], mt[64], ct[64], pol[32], *target = NULL;
	struct sdfs_stat st;
	int ret;

	if (!path_ok("stat", path))
		return 2;
	ret = sdfs_ns_resolve(s, path, 0, &st);
	if (!ret && S_ISLNK(st.mode))
		ret = read_target(s, st.ino, &target);
	if (ret)
		return fs_fail(s, "stat", path, ret);
	iso_time(st.atime_ns, at, sizeof(at));
	iso_time(st.mtime_ns, mt, sizeof(mt));
	iso_time(st.ctime_ns, ct, sizeof(ct));
	if (cli->json) {
		printf("{\"path\": ");
		cli_json_str(stdout, path);
		printf(", \"ino\": %" PRIu64 ", \"gen\": %" PRIu64 ", \"type\": \"%s\""
		       ", \"mode\": %" PRIu32 ", \"perms\": \"%04" PRIo32 "\""
		       ", \"nlink\": %" PRIu32 ", \"uid\": %" PRIu32 ", \"gid\": %" PRIu32
		       ", \"rdev\": %" PRIu32 ", \"size\": %" PRIu64 ", \"blocks\": %" PRIu64,
		       st.ino, st.gen, type_name(st.mode), st.mode & 07777, st.mode & 07777,
		       st.nlink, st.uid, st.gid, st.rdev, st.size, st.blocks);
		printf(", \"atime\": \"%s\", \"mtime\": \"%s\", \"ctime\": \"%s\""
		       ", \"atime_ns\": %" PRId64 ", \"mtime_ns\": %" PRId64
		       ", \"ctime_ns\": %" PRId64 ", \"parent\": %" PRIu64
		       ", \"layout\": %u, \"obj_size\": %" PRIu32 ", \"copies\": %u",
		       at, mt, ct, st.atime_ns, st.mtime_ns, st.ctime_ns, st.parent,
		       st.layout, st.obj_size, policy_copies(st.copies));
		printf(", \"policy\": \"%s\"", policy_str(st.copies, pol, sizeof(pol)));
		if (S_ISREG(st.mode) && policy_is_ec(st.copies))
			printf(", \"sealed\": %s", policy_is_sealed(st.copies) ? "true" : "false");
		if (target) {
			printf(", \"target\": ");
			cli_json_str(stdout, target);
		}
		printf("}\n");
	} else {
		printf("path      %s\n", path);
		if (target)
			printf("target    %s\n", target);
		printf("type      %s\nino       %" PRIu64 "\ngen       %" PRIu64
		       "\nmode      %04" PRIo32 "\nnlink     %" PRIu32 "\nuid       %" PRIu32
		       "\ngid       %" PRIu32 "\nrdev      %" PRIu32 "\nsize      %" PRIu64
		       "\nblocks    %" PRIu64 "\n", type_name(st.mode), st.ino, st.gen,
		       st.mode & 07777, st.nlink, st.uid, st.gid, st.rdev, st.size,
		       st.blocks);
		printf("atime     %s\nmtime     %s\nctime     %s\nparent    %" PRIu64
		       "\nlayout    %u%s\nobj_size  %" PRIu32 "\ncopies    %u%s\n", at, mt,
		       ct, st.parent, st.layout, st.layout == 1 ? " (data in objects)" : "",
		       st.obj_size, policy_copies(st.copies), st.copies ? "" : " (the cluster's)");
		if (S_ISDIR(st.mode) && policy_is_ec(st.copies))
			printf("policy    ec=%u+%u for volumes made in it, and files (%u copies "
			       "while written, sealed when cold)\n",
			       policy_ec_k(st.copies), policy_ec_m(st.copies),
			       policy_copies(st.copies));
		else if (S_ISDIR(st.mode))
			printf("policy    copies %u%s for what is made in it\n", st.copies,
			       st.copies ? "" : " (the cluster's)");
		else if (policy_is_ec(st.copies))
			printf("policy    ec=%u+%u%s\n", policy_ec_k(st.copies),
			       policy_ec_m(st.copies),
			       S_ISREG(st.mode) ? (policy_is_sealed(st.copies) ?
						   " (sealed: stripes)" :
						   " (replicated: m+1 copies)") : "");
	}
	free(target);
	return 0;
}

/* mkdir -p: each missing component in turn; directories that exist
 * (or symlinks to one) are passed through. */
static int mkdir_parents(struct sdfs *s, const char *path, uint32_t mode)
{
	struct sdfs_stat cur, next;
	char *prefix = strdup(path), name[FS_NAME_MAX + 1];
	size_t i = 0;
	int ret;

	if (!prefix)
		return -ENOMEM;
	ret = sdfs_ns_resolve(s, "/", 1, &cur);
	while (!ret) {
		while (path[i] == '/')
			i++;
		if (!path[i])
			break;
		size_t n = strcspn(path + i, "/");
		if (n > FS_NAME_MAX) {
			ret = -ENAMETOOLONG;
			break;
		}
		memcpy(name, path + i, n);
		name[n] = '\0';
		i += n;
		memcpy(prefix, path, i);
		prefix[i] = '\0';
		ret = sdfs_ns_resolve(s, prefix, 1, &next);
		if (ret == -ENOENT) {
			ret = sdfs_ns_mkdir(s, cur.ino, name, mode, getuid(), getgid(), &next);
			if (ret == -EEXIST)     /* made by someone else meanwhile */
				ret = sdfs_ns_resolve(s, prefix, 1, &next);
		}
		if (!ret && !S_ISDIR(next.mode))
			ret = path[i + strspn(path + i, "/")] ? -ENOTDIR : -EEXIST;
		cur = next;
	}
	free(prefix);
	return ret;
}

static int fs_mkdir(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	const char *path = a->pos[0];
	uint32_t mode = 0777 & ~caller_umask();
	char name[FS_NAME_MAX + 1];
	struct sdfs_stat dir;
	int ret;

	(void)cli;
	if (!path_ok("mkdir", path))
		return 2;
	if (a->flag[0]) {
		ret = mkdir_parents(s, path, mode);
	} else {
		ret = split_path(s, path, &dir, name);
		if (!ret)
			ret = name[0] ? sdfs_ns_mkdir(s, dir.ino, name, mode, getuid(),
						      getgid(), NULL) : -EEXIST;
	}
	return ret ? fs_fail(s, "mkdir", path, ret) : 0;
}

/* Remove @name (of type @type) from @dir; a directory with all it holds
 * if @recursive. @path names it for the error: on failure *@failed is
 * the path of what could not be removed (malloc'd). */
static int rm_entry(struct sdfs *s, uint64_t dir, const char *name, const char *path,
		    uint32_t type, int recursive, char **failed)
{
	struct sdfs_stat st;
	struct fs_list l;
	int ret = 0;

	if (!S_ISDIR(type)) {
		ret = sdfs_ns_unlink(s, dir, name);
		goto out;
	}
	if (recursive) {
		ret = sdfs_ns_lookup(s, dir, name, &st);
		if (!ret)
			ret = list_dir(s, st.ino, 0, &l);
		if (ret)
			goto out;
		for (size_t i = 0; i < l.n && !ret; i++) {
			size_t len = strlen(path) + strlen(l.v[i].name) + 2;
			char *sub = malloc(len);

			if (!sub) {
				ret = -ENOMEM;
				break;
			}
			snprintf(sub, len, "%s%s%s", path,
				 path[strlen(path) - 1] == '/' ? "" : "/", l.v[i].name);
			ret = rm_entry(s, st.ino, l.v[i].name, sub, l.v[i].st.mode, 1, failed);
			free(sub);
		}
		list_free(&l);
		if (ret)
			return ret;     /* *failed is set already */
	}
	ret = sdfs_ns_rmdir(s, dir, name);
out:
	if (ret)
		*failed = strdup(path);
	return ret;
}

/* A directory's redundancy policy for what is made in it from now on
 * (docs/policy.md). */
static int fs_setpolicy(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	const char *path = a->pos[0], *pol = a->pos[1];
	struct sdfs_stat st;
	unsigned copies;
	char pb[32];
	int ret;

	if (!path_ok("setpolicy", path))
		return 2;
	if ((ret = cli_policy_arg("fs setpolicy", pol, &copies)) ||
	    (copies && (ret = cli_copies_fit(s, "copies", copies, a->flag[0]))))
		return ret;
	ret = sdfs_ns_resolve(s, path, 1, &st);
	if (!ret && !S_ISDIR(st.mode))
		ret = -ENOTDIR;
	if (!ret)
		ret = sdfs_ns_setpolicy(s, st.ino, copies, &st);
	if (ret == -EPERM)
		return cli_fail("fs setpolicy %s: only root may set a policy", path);
	if (ret == -EINVAL)
		return cli_fail("fs setpolicy %s: refused (an mds before protocol 2.4 "
				"has no policies)", path);
	if (ret)
		return fs_fail(s, "setpolicy", path, ret);
	if (cli->json) {
		printf("{\"path\": ");
		cli_json_str(stdout, path);
		printf(", \"copies\": %u, \"policy\": \"%s\"}\n", policy_copies(st.copies),
		       policy_str(st.copies, pb, sizeof(pb)));
	} else if (policy_is_ec(st.copies)) {
		printf("%s: ec=%u+%u for volumes made in it from now on, and files (%u "
		       "copies while written, sealed when cold)\n", path, policy_ec_k(st.copies), policy_ec_m(st.copies),
		       policy_copies(st.copies));
	} else {
		printf("%s: copies %u%s for what is made in it from now on\n", path,
		       st.copies, st.copies ? "" : " (the cluster's)");
	}
	return 0;
}

/* Every namespace change acknowledged so far: durable (syncfs(2) does
 * not reach a FUSE daemon; docs/consistency.md "What is durable when"). */
static int fs_sync(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	int ret = sdfs_ns_sync_all(s);

	(void)cli;
	(void)a;
	return ret ? fs_fail(s, "sync", "/", ret) : 0;
}

static int fs_rm(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	const char *path = a->pos[0];
	char name[FS_NAME_MAX + 1], *failed = NULL;
	struct sdfs_stat dir, st;
	int ret;

	(void)cli;
	if (!path_ok("rm", path))
		return 2;
	ret = split_path(s, path, &dir, name);
	if (!ret && !name[0])
		return cli_fail("fs rm %s: refusing to remove the root", path);
	if (!ret && (!strcmp(name, ".") || !strcmp(name, "..")))
		return cli_fail("fs rm %s: refusing to remove '.' or '..'", path);
	if (!ret)
		ret = sdfs_ns_lookup(s, dir.ino, name, &st);
	if (ret)
		return fs_fail(s, "rm", path, ret);
	ret = rm_entry(s, dir.ino, name, path, st.mode, a->flag[0], &failed);
	if (ret) {
		ret = fs_fail(s, "rm", failed ? failed : path, ret);
		free(failed);
		return ret;
	}
	return 0;
}

static int fs_mv(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	const char *src = a->pos[0], *dst = a->pos[1];
	char sname[FS_NAME_MAX + 1], dname[FS_NAME_MAX + 1];
	unsigned flags = a->flag[0] ? FS_RENAME_NOREPLACE :
			 a->flag[1] ? FS_RENAME_EXCHANGE : 0;
	struct sdfs_stat sdir, ddir;
	int ret;

	(void)cli;
	if (a->flag[0] && a->flag[1])
		return cli_usage("sdfs fs mv [--noreplace|--exchange] SRC DST");
	if (!path_ok("mv", src) || !path_ok("mv", dst))
		return 2;
	ret = split_path(s, src, &sdir, sname);
	if (!ret && !sname[0])
		ret = -EBUSY;
	if (!ret)
		ret = dest_path(s, dst, src, flags == 0, &ddir, dname);
	if (!ret && !dname[0])
		ret = -EBUSY;
	if (!ret)
		ret = sdfs_ns_rename(s, sdir.ino, sname, ddir.ino, dname, flags);
	return ret ? fs_fail2(s, "mv", src, dst, ret) : 0;
}

static int fs_ln(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	const char *src = a->pos[0], *path = a->pos[1];
	char name[FS_NAME_MAX + 1];
	struct sdfs_stat dir, st;
	int ret;

	(void)cli;
	if (!path_ok("ln", path) || (!a->flag[0] && !path_ok("ln", src)))
		return 2;
	ret = dest_path(s, path, src, 1, &dir, name);
	if (!ret && !name[0])
		ret = -EEXIST;
	if (!ret && a->flag[0])
		ret = sdfs_ns_symlink(s, dir.ino, name, src, getuid(), getgid(), NULL);
	else if (!ret && !(ret = sdfs_ns_resolve(s, src, 0, &st)))
		ret = sdfs_ns_link(s, st.ino, dir.ino, name, NULL);
	return ret ? fs_fail2(s, a->flag[0] ? "ln -s" : "ln", src, path, ret) : 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "put [#########...........]  45%  2.0 MiB/4.5 MiB  12.3 MiB/s" on
 * stderr, redrawn in place; @total 0: unknown (stdin). */
static void put_progress(uint64_t done, uint64_t total, int64_t elapsed_ms)
{
	char d[32], t[32], r[32], bar[FS_BAR_WIDTH + 1];
	uint64_t rate = elapsed_ms > 0 ? done * 1000 / (uint64_t)elapsed_ms : 0;

	cli_human(done, d, sizeof(d));
	cli_human(rate, r, sizeof(r));
	if (!total) {
		fprintf(stderr, "\r\033[Kput %s  %s/s", d, r);
		return;
	}
	unsigned pct = (unsigned)(done * 100 / total);
	for (unsigned i = 0; i < FS_BAR_WIDTH; i++)
		bar[i] = i < pct * FS_BAR_WIDTH / 100 ? '#' : '.';
	bar[FS_BAR_WIDTH] = '\0';
	fprintf(stderr, "\r\033[Kput [%s] %3u%%  %s/%s  %s/s", bar, pct, d,
		cli_human(total, t, sizeof(t)), r);
}

/* The regular file put writes to, empty: @path truncated if it is one,
 * made if missing, or @local's name inside @path if that is a directory. */
static int put_target(struct sdfs *s, const char *path, const char *local,
		      struct sdfs_stat *st)
{
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_SIZE, .size = 0 };
	char name[FS_NAME_MAX + 1];
	struct sdfs_stat dir;
	int ret;

	ret = sdfs_ns_resolve(s, path, 1, st);
	if (!ret && S_ISDIR(st->mode)) {
		dir = *st;
		ret = strcmp(local, "-") ? base_name(local, name) : -EISDIR;
		if (!ret)
			ret = sdfs_ns_lookup(s, dir.ino, name, st);
		if (!ret && S_ISLNK(st->mode))
			ret = -EEXIST;  /* keep it simple: no link in the target */
	} else if (ret == -ENOENT) {
		ret = split_path(s, path, &dir, name);
		if (!ret)
			ret = -ENOENT;
	}
	if (ret == -ENOENT) {
		ret = sdfs_ns_mknod(s, dir.ino, name, S_IFREG | (0666 & ~caller_umask()),
				    0, getuid(), getgid(), st);
		if (ret == -EEXIST)     /* made meanwhile: truncate it below */
			ret = sdfs_ns_lookup(s, dir.ino, name, st);
		else
			return ret;
	}
	if (ret)
		return ret;
	if (S_ISDIR(st->mode))
		return -EISDIR;
	if (!S_ISREG(st->mode))
		return -EINVAL;
	ret = sdfs_ns_access(s, st->ino, W_OK, st);     /* an open for writing */
	if (ret)
		return ret;
	return st->size ? sdfs_ns_setattr(s, st->ino, &sa, st) : 0;
}

/* Set the size, telling the mds the chunks written (all of them up to
 * the size: the mds counts the file's space from them). */
static int put_size(struct sdfs *s, struct sdfs_stat *st, const struct sdfs_setattr *sa)
{
	uint64_t n = (sa->size + st->obj_size - 1) / st->obj_size, done = 0;
	uint64_t *chunks = malloc(SDFS_CHUNKS_MAX * sizeof(*chunks));
	struct sdfs_setattr none = { 0 };
	int ret = 0;

	if (!chunks)
		return -ENOMEM;
	/* the size first: the mds counts no chunk past the size it has */
	ret = sdfs_ns_setattr_chunks(s, st->ino, sa, NULL, 0, st);
	while (!ret && done < n) {
		size_t cnt = n - done < SDFS_CHUNKS_MAX ? (size_t)(n - done) : SDFS_CHUNKS_MAX;

		for (size_t i = 0; i < cnt; i++)
			chunks[i] = done + i;
		ret = sdfs_ns_setattr_chunks(s, st->ino, &none, chunks, cnt, st);
		done += cnt;
	}
	free(chunks);
	return ret;
}

static int fs_put(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	const char *local = a->pos[0], *path = a->pos[1];
	int fd = 0, tty = isatty(2), ret;
	uint64_t off = 0, total = 0;
	struct sdfs_setattr sa = { .mask = SDFS_SETATTR_SIZE };
	struct sdfs_stat st;
	struct stat lst;
	char *buf = NULL;
	int64_t start = mono_ms(), shown = 0;

	if (!path_ok("put", path))
		return 2;
	if (strcmp(local, "-")) {
		fd = open(local, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return cli_fail("fs put %s: %s", local, strerror(errno));
	}
	if (fstat(fd, &lst))
		memset(&lst, 0, sizeof(lst));
	if (S_ISDIR(lst.st_mode)) {
		close(fd);
		return cli_fail("fs put %s: %s", local, strerror(EISDIR));
	}
	if (S_ISREG(lst.st_mode))
		total = (uint64_t)lst.st_size;
	ret = put_target(s, path, local, &st);
	if (ret) {
		if (fd)
			close(fd);
		return ret == -EINVAL ? cli_fail("fs put %s: not a regular file", path)
				      : fs_fail(s, "put", path, ret);
	}
	if (st.layout != 1 || !st.obj_size || !(buf = malloc(st.obj_size))) {
		if (fd)
			close(fd);
		return cli_fail("fs put %s: %s", path, buf ? "no data layout" : "out of memory");
	}
	for (;;) {
		ssize_t n = cli_read_full(fd, buf, st.obj_size);

		if (n < 0) {
			if (tty && shown)
				fputc('\n', stderr);
			ret = cli_fail("fs put %s: read %s: %s", path, local, strerror((int)-n));
			goto out;
		}
		if (n == 0)
			break;
		ret = sdfs_file_pwrite(s, &st, buf, (size_t)n, off, 0);
		if (ret) {
			if (tty && shown)
				fputc('\n', stderr);
			ret = fs_fail(s, "put", path, ret);
			goto out;
		}
		off += (uint64_t)n;
		if (tty && mono_ms() - shown >= FS_PROGRESS_EVERY_MS) {
			put_progress(off, total > off ? total : off, mono_ms() - start);
			shown = mono_ms();
		}
	}
	sa.size = off;
	ret = put_size(s, &st, &sa);
	if (tty && shown) {
		put_progress(off, total > off ? total : off, mono_ms() - start);
		fputc('\n', stderr);
	}
	if (ret) {
		ret = fs_fail(s, "put", path, ret);
		goto out;
	}
	if (cli->json) {
		printf("{\"path\": ");
		cli_json_str(stdout, path);
		printf(", \"ino\": %" PRIu64 ", \"size\": %" PRIu64 "}\n", st.ino, st.size);
	}
out:
	free(buf);
	if (fd)
		close(fd);
	return ret;
}

static int fs_cat(struct cli *cli, struct sdfs *s, const struct fs_args *a)
{
	const char *path = a->pos[0];
	struct sdfs_stat st;
	char *buf;
	int ret;

	(void)cli;
	cli_stdout_is_data();
	if (!path_ok("cat", path))
		return 2;
	ret = sdfs_ns_resolve(s, path, 1, &st);
	if (!ret && S_ISDIR(st.mode))
		ret = -EISDIR;
	if (!ret)       /* an open for reading: the mds checks it */
		ret = sdfs_ns_access(s, st.ino, R_OK, &st);
	if (ret)
		return fs_fail(s, "cat", path, ret);
	if (!S_ISREG(st.mode))
		return cli_fail("fs cat %s: not a regular file", path);
	buf = malloc(FS_CAT_PIECE);
	if (!buf)
		return cli_fail("out of memory");
	for (uint64_t off = 0; off < st.size;) {
		ssize_t n = sdfs_file_pread(s, &st, buf, FS_CAT_PIECE, off);

		if (n <= 0) {
			free(buf);
			return n ? fs_fail(s, "cat", path, (int)n) : 0;
		}
		ret = cli_write_all(1, buf, (size_t)n);
		if (ret) {
			free(buf);
			return cli_fail("fs cat %s: write output: %s", path, strerror(-ret));
		}
		off += (uint64_t)n;
	}
	free(buf);
	return 0;
}

static const struct fs_cmd fs_cmds[] = {
	{ "ls", { "-l", NULL }, 1, 1, "sdfs fs ls [-l] [--json] PATH", fs_ls },
	{ "stat", { NULL }, 1, 1, "sdfs fs stat [--json] PATH", fs_stat },
	{ "mkdir", { "-p", NULL }, 1, 1, "sdfs fs mkdir [-p] PATH", fs_mkdir },
	{ "rm", { "-r", NULL }, 1, 1, "sdfs fs rm [-r] PATH", fs_rm },
	{ "mv", { "--noreplace", "--exchange", NULL }, 2, 2,
	  "sdfs fs mv [--noreplace|--exchange] SRC DST", fs_mv },
	{ "ln", { "-s", NULL }, 2, 2, "sdfs fs ln [-s] TARGET PATH", fs_ln },
	{ "put", { NULL }, 2, 2, "sdfs fs put LOCAL PATH  (LOCAL '-': stdin)", fs_put },
	{ "cat", { NULL }, 1, 1, "sdfs fs cat PATH", fs_cat },
	{ "sync", { NULL }, 0, 0, "sdfs fs sync", fs_sync },
	{ "setpolicy", { "--force", NULL }, 2, 2,
	  "sdfs fs setpolicy [--json] [--force] DIR copies=N|ec=K+M|default",
	  fs_setpolicy },
};

/* Options (known to @c) anywhere before "--"; "-" is an argument. */
static int fs_parse(const struct fs_cmd *c, int argc, char **argv, struct fs_args *a)
{
	int opts = 1;

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < argc; i++) {
		const char *w = argv[i];
		int k = -1;

		if (opts && !strcmp(w, "--")) {
			opts = 0;
			continue;
		}
		if (opts && w[0] == '-' && w[1]) {
			for (int j = 0; c->flags[j]; j++)
				if (!strcmp(w, c->flags[j]))
					k = j;
			if (k < 0)
				return -1;
			a->flag[k] = 1;
			continue;
		}
		if (a->npos == c->max)
			return -1;
		a->pos[a->npos++] = argv[i];
	}
	return a->npos < c->min ? -1 : 0;
}

int cmd_fs(struct cli *cli)
{
	const struct fs_cmd *c = NULL;
	struct fs_args a;
	struct sdfs *s;
	int ret;

	if (cli->argc < 1)
		return cli_usage("sdfs fs ls|stat|mkdir|rm|mv|ln|put|cat|sync|setpolicy ...");
	for (size_t i = 0; i < sizeof(fs_cmds) / sizeof(fs_cmds[0]); i++)
		if (!strcmp(cli->argv[0], fs_cmds[i].name))
			c = &fs_cmds[i];
	if (!c)
		return cli_unknown("fs", cli->argv[0]);
	if (fs_parse(c, cli->argc - 1, cli->argv + 1, &a))
		return cli_usage(c->usage);
	s = cli_open(cli);
	if (!s)
		return 1;
	ret = c->fn(cli, s, &a);
	sdfs_close(s);
	return ret;
}
