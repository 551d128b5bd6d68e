/*
 * main.c - mount.sdfs: options, mounting, the session loop.
 *
 *   mount.sdfs [-f] [-d] [-o OPTS] CLUSTER MOUNTPOINT
 *
 * Also run by mount(8) as /sbin/mount.fuse.sdfs for `mount -t fuse.sdfs
 * CLUSTER /mnt` and fstab lines (docs/mount.md). Connects first (so a
 * bad cluster, or a key that may not mount, is reported to the caller;
 * a read-only key mounts read-only), mounts, goes to the background
 * unless -f, and serves requests from many threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/sdfs_proto.h"
#include "common/version.h"
#include "fs/fs.h"

struct fs *the_fs;

const struct fuse_lowlevel_ops fs_ops;

static void usage(FILE *f)
{
	fprintf(f,
"usage: mount.sdfs [-f] [-d] [-o OPTIONS] CLUSTER MOUNTPOINT\n"
"Mount the sdfs filesystem of cluster CLUSTER at MOUNTPOINT.\n"
"\n"
"  -f                 stay in the foreground (logs to stderr)\n"
"  -d                 foreground with FUSE debug output\n"
"  -o OPTIONS         comma-separated; sdfs's own:\n"
"     conf=FILE           cluster config (default $SDFS_CONF, then %s)\n"
"     keyring=FILE        the mount's key (default $SDFS_KEYRING, then the\n"
"                         config's keyring =; docs/operations.md \"Keys\")\n"
"     attr_timeout=S      attribute cache time in seconds (default 1.0)\n"
"     entry_timeout=S     name cache time in seconds (default 1.0)\n"
"     timeout_ms=N        an operation the cluster cannot answer fails\n"
"                         with EIO after N ms (default: the config's\n"
"                         timeout_ms, 10000)\n"
"     readahead_kb=N      the mount's read_ahead_kb (default 1024)\n"
"     times_ms=N          an fsync that changed no size leaves the mtime\n"
"                         to a write-back N ms later (default 1000; 0:\n"
"                         every fsync pushes it durably)\n"
"     threads=N           request threads at most (default 64)\n"
"     vol_wait            opening a volume file for writing that another\n"
"                         mount writes waits for it (up to timeout_ms)\n"
"                         instead of failing with EBUSY\n"
"     vol_lazy            take a volume file's writer lock at its first\n"
"                         write, not at open, waiting for the holder\n"
"                         (QEMU live migration targets; docs/volumes.md)\n"
"     noacl               no POSIX ACLs: the kernel checks the mode bits\n"
"                         only, and applies the umask itself\n"
"     log=FILE            where the background daemon logs (default: none)\n"
"     loglevel=LEVEL      err, warn, info, debug (default info)\n"
"  any other -o option goes to FUSE and the kernel (ro, allow_other,\n"
"  noatime, ...); sdfs adds default_permissions, fsname=sdfs:<cluster\n"
"  uuid>, subtype=sdfs, max_read=1048576, and allow_other when root.\n"
"  -V, --version      print the version and exit\n"
"  -h, --help         this help\n", CONF_DEFAULT_PATH);
}

struct args {
	const char *cluster, *mnt, *conf, *log, *keyring;
	int foreground, debug;
	char fuse_opts[4096];
};

static int opt_double(const char *v, double *out)
{
	char *e;

	*out = strtod(v, &e);
	return *e || *out < 0 || *out > 86400 ? -1 : 0;
}

static int opt_uint(const char *v, unsigned max, unsigned *out)
{
	char *e;
	unsigned long x = strtoul(v, &e, 10);

	if (*e || e == v || x > max)
		return -1;
	*out = (unsigned)x;
	return 0;
}

/* One -o list: ours into fs->o / a, the rest appended for FUSE. */
static int parse_o(struct fs *fs, struct args *a, char *list)
{
	for (char *save, *o = strtok_r(list, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(o, '=');
		const char *v = eq ? eq + 1 : "";
		unsigned u;

		if (eq)
			*eq = '\0';
		if (!strcmp(o, "conf")) {
			a->conf = strdup(v);
		} else if (!strcmp(o, "keyring")) {
			/* absolute: the background daemon runs from / */
			a->keyring = *v ? realpath(v, NULL) : NULL;
			if (!a->keyring) {
				fprintf(stderr, "mount.sdfs: keyring=%s: %s\n", v,
					*v ? strerror(errno) : "needs a file");
				return -1;
			}
		} else if (!strcmp(o, "log")) {
			a->log = strdup(v);
		} else if (!strcmp(o, "loglevel")) {
			int l = log_level_parse(v);
			if (l < 0)
				goto bad;
			log_level = l;
		} else if (!strcmp(o, "attr_timeout")) {
			if (opt_double(v, &fs->o.attr_timeout))
				goto bad;
		} else if (!strcmp(o, "entry_timeout")) {
			if (opt_double(v, &fs->o.entry_timeout))
				goto bad;
		} else if (!strcmp(o, "timeout_ms")) {
			if (opt_uint(v, 3600000, &u) || u < 100)
				goto bad;
			fs->o.timeout_ms = (int)u;
		} else if (!strcmp(o, "readahead_kb")) {
			if (opt_uint(v, 1 << 20, &fs->o.readahead_kb))
				goto bad;
		} else if (!strcmp(o, "times_ms")) {
			if (opt_uint(v, 3600000, &fs->o.times_ms))
				goto bad;
		} else if (!strcmp(o, "noacl")) {
			fs->o.noacl = 1;
		} else if (!strcmp(o, "vol_wait")) {
			volf_wait = 1;  /* a busy volume: wait, not EBUSY */
		} else if (!strcmp(o, "vol_lazy")) {
			volf_lazy = 1;  /* lock at the first write (migration) */
		} else if (!strcmp(o, "threads")) {
			if (opt_uint(v, 1024, &fs->o.threads) || fs->o.threads < 2)
				goto bad;
		} else if (!strcmp(o, "defaults") || !strcmp(o, "auto") ||
			   !strcmp(o, "noauto") || !strcmp(o, "_netdev") ||
			   !strcmp(o, "nofail") || !strcmp(o, "user") ||
			   !strcmp(o, "users") || !strcmp(o, "nouser") ||
			   !strncmp(o, "x-", 2) || !strcmp(o, "rw")) {
			/* mount(8)'s and fstab's own words */
		} else {
			size_t l = strlen(a->fuse_opts);

			if (!strcmp(o, "noatime"))
				fs->o.noatime = 1;      /* and the kernel's too */

			snprintf(a->fuse_opts + l, sizeof(a->fuse_opts) - l, ",%s%s%s",
				 o, eq ? "=" : "", eq ? v : "");
		}
		continue;
bad:
		fprintf(stderr, "mount.sdfs: bad option '%s%s%s'\n", o, eq ? "=" : "", v);
		return -1;
	}
	return 0;
}

static int parse_args(struct fs *fs, struct args *a, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];

		if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(s, "-V") || !strcmp(s, "--version")) {
			printf("mount.sdfs %s\n", SDFS_VERSION);
			exit(0);
		} else if (!strcmp(s, "-f")) {
			a->foreground = 1;
		} else if (!strcmp(s, "-d")) {
			a->foreground = a->debug = 1;
		} else if (!strcmp(s, "-n") || !strcmp(s, "-s") || !strcmp(s, "-v")) {
			/* from mount(8): no mtab, sloppy, verbose */
		} else if (!strncmp(s, "-o", 2)) {
			char *list = s[2] ? strdup(s + 2) : (i + 1 < argc ? strdup(argv[++i]) : NULL);

			if (!list || parse_o(fs, a, list))
				return -1;
			free(list);
		} else if (s[0] == '-') {
			fprintf(stderr, "mount.sdfs: unknown option '%s'\n", s);
			return -1;
		} else if (!a->cluster) {
			a->cluster = s;
		} else if (!a->mnt) {
			a->mnt = s;
		} else {
			fprintf(stderr, "mount.sdfs: unexpected argument '%s'\n", s);
			return -1;
		}
	}
	if (!a->cluster || !a->mnt) {
		usage(stderr);
		return -1;
	}
	if (!conf_name_ok(a->cluster)) {
		fprintf(stderr, "mount.sdfs: bad cluster name '%s'\n", a->cluster);
		return -1;
	}
	return 0;
}

/* mountinfo's field @f with its octal escapes (\040: space) undone. */
static void mountinfo_unescape(const char *f, char *out, size_t len)
{
	size_t n = 0;

	for (; *f && n + 1 < len; n++) {
		if (f[0] == '\\' && f[1] >= '0' && f[1] <= '3' && f[2] >= '0' && f[2] <= '7' &&
		    f[3] >= '0' && f[3] <= '7') {
			out[n] = (char)((f[1] - '0') << 6 | (f[2] - '0') << 3 | (f[3] - '0'));
			f += 4;
		} else {
			out[n] = *f++;
		}
	}
	out[n] = '\0';
}

/* @mnt as mountinfo names it: its real path. A FUSE mount whose daemon
 * died cannot be resolved (ENOTCONN): then its parent's real path and
 * its last name. -errno if neither works (the mount itself will say). */
static int mnt_real_path(const char *mnt, char *real, size_t len)
{
	char dir[PATH_MAX], buf[PATH_MAX];
	const char *base;
	size_t n = strlen(mnt);

	if (realpath(mnt, buf)) {
		snprintf(real, len, "%s", buf);
		return 0;
	}
	if (errno != ENOTCONN)
		return -errno;
	while (n > 1 && mnt[n - 1] == '/')
		n--;
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, mnt, n);
	dir[n] = '\0';
	base = strrchr(dir, '/');
	if (!base) {
		base = dir;
		if (!getcwd(buf, sizeof(buf)))
			return -errno;
	} else {
		dir[base - dir] = '\0';
		base++;
		if (!realpath(dir[0] ? dir : "/", buf))
			return -errno;
	}
	if (snprintf(real, len, "%s%s%s", buf, strcmp(buf, "/") ? "/" : "", base) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * Is a FUSE filesystem mounted at @mnt already (the topmost mount
 * there)? Its type ("fuse.sdfs") into @type and 1 if so, else 0.
 * Mounting over it would hide the first mount and leave its daemon
 * serving nobody: mount.sdfs refuses instead. A check, not a lock: two
 * mount.sdfs started at the same moment can both pass it.
 */
static int mnt_has_fuse(const char *mnt, char *type, size_t len)
{
	char real[PATH_MAX], line[16384], field[PATH_MAX], point[PATH_MAX], t[256];
	int found = 0;
	FILE *f;

	if (mnt_real_path(mnt, real, sizeof(real)) ||
	    !(f = fopen("/proc/self/mountinfo", "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", field) != 1 ||
		    sscanf(sep + 3, "%255s", t) != 1)
			continue;
		mountinfo_unescape(field, point, sizeof(point));
		if (strcmp(point, real))
			continue;
		/* the last line for a point is the mount on top */
		found = !strcmp(t, "fuse") || !strncmp(t, "fuse.", 5) ||
			!strcmp(t, "fuseblk");
		snprintf(type, len, "%s", t);
	}
	fclose(f);
	return found;
}

static int connect_cluster(struct fs *fs, const struct args *a, char *uuid, size_t len)
{
	struct sdfs_conf c;
	struct sdfs_cluster_info ci;
	char err[256];
	int ret;

	conf_init(&c);
	if (conf_load(conf_path(a->conf), &c, err, sizeof(err))) {
		fprintf(stderr, "mount.sdfs: %s\n", err);
		return -EINVAL;
	}
	if (!fs->o.timeout_ms)          /* not given with -o: the config's */
		fs->o.timeout_ms = c.timeout_ms;
	/* the key: -o keyring=, else $SDFS_KEYRING, else the config's
	 * keyring = (its default file only if it exists) */
	const char *env = getenv("SDFS_KEYRING"), *keyring = a->keyring;

	if (!keyring && env && *env)
		keyring = env;
	else if (!keyring && (c.keyring_set || access(c.keyring, F_OK) == 0))
		keyring = c.keyring;
	ret = sdfs_connect_keyring(c.zk, a->cluster, fs->o.timeout_ms, keyring, &fs->s,
				   err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mount.sdfs: cluster %s: %s\n", a->cluster, err);
		return ret;
	}
	sdfs_set_conf(fs->s, &c);     /* timeouts, ec_seal_after_s */
	ret = sdfs_cluster_info(fs->s, &ci);
	if (ret) {
		fprintf(stderr, "mount.sdfs: cluster %s: %s\n", a->cluster,
			ret == -ENOENT ? "not formatted" : strerror(-ret));
		sdfs_close(fs->s);
		fs->s = NULL;
		return ret;
	}
	snprintf(uuid, len, "%s", ci.uuid);
	return 0;
}

/* Has -o @opt (a word without value) gone to FUSE already? */
static int fuse_has(const struct args *a, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = a->fuse_opts; (p = strstr(p, opt)); p += n)
		if (p > a->fuse_opts && p[-1] == ',' && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

/*
 * What the mount's key may do, asked on the first connection
 * (sdfs_key_caps; docs/mount.md "Keys"): a read-only key mounts
 * read-only (-o ro added; @why, for the log, says so); a key whose
 * path= is no directory of the cluster, or that the cluster refuses,
 * fails the mount (-1, said on stderr in one line). A cluster without
 * keys, or an mds that does not answer, teaches nothing: the mount goes
 * on as asked (the latter with a warning).
 */
#define KEY_SETTLE_MS 5000

static int key_check(struct fs *fs, struct args *a, char *why, size_t whylen)
{
	char name[AUTH_NAME_MAX + 1], text[AUTH_CAPS_STR_MAX], err[256];
	struct auth_caps caps;
	struct sdfs_stat st;
	int ret;

	why[0] = '\0';
	/* A key made a moment ago (sdfs dev up, auth add) reaches the
	 * daemons through a ZooKeeper watch: a refusal is final only after
	 * KEY_SETTLE_MS. */
	for (int waited = 0;; waited += 200) {
		ret = sdfs_key_caps(fs->s, name, sizeof(name), text, sizeof(text));
		if (ret != -EACCES || waited >= KEY_SETTLE_MS)
			break;
		usleep(200 * 1000);
	}
	if (ret == -ENOENT)
		return 0;
	if (ret == -EACCES) {
		fprintf(stderr, "mount.sdfs: key %s: cluster %s refused it (not known "
			"to the cluster, or not this key: sdfs auth ls)\n", name,
			a->cluster);
		return -1;
	}
	if (ret) {
		fprintf(stderr, "mount.sdfs: key %s: cannot learn what it may do "
			"(mds: %s); mounting as asked\n", name, strerror(-ret));
		return 0;
	}
	if (auth_caps_parse(text, &caps, err, sizeof(err))) {
		fprintf(stderr, "mount.sdfs: key %s: caps '%s' from the mds: %s; "
			"mounting as asked\n", name, text, err);
		return 0;
	}
	if (caps.path[0] && strcmp(caps.path, "/")) {
		/* the mds resolves path= on each request: ENOENT when it is
		 * missing or no directory */
		ret = sdfs_ns_getattr(fs->s, SDFS_ROOT_INO, &st);
		if (ret == -ENOENT || (!ret && !S_ISDIR(st.mode))) {
			fprintf(stderr, "mount.sdfs: key %s: path=%s is not a directory "
				"in cluster %s (missing, or not a directory)\n", name,
				caps.path, a->cluster);
			return -1;
		}
	}
	if ((caps.flags & AUTH_CAP_RO) && !fuse_has(a, "ro")) {
		size_t l = strlen(a->fuse_opts);

		snprintf(a->fuse_opts + l, sizeof(a->fuse_opts) - l, ",ro");
		snprintf(why, whylen, "key %s is read-only (caps %s): mounting "
			 "read-only", name, text);
	}
	return 0;
}

static const char *mnt_point;

static void raise_readahead(const char *mnt, unsigned kb);

/* The kernel sets the bdi's read-ahead from our INIT reply, after this
 * callback returns: raise it from a thread a moment later. */
static void *readahead_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10; i++) {
		usleep(100 * 1000);
		raise_readahead(mnt_point, the_fs->o.readahead_kb);
	}
	return NULL;
}

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	pthread_t t;

	(void)userdata;
	if (mnt_point && the_fs->o.readahead_kb &&
	    pthread_create(&t, NULL, readahead_main, NULL) == 0)
		pthread_detach(t);
	conn->max_write = 1u << 20;
	conn->max_read = 1u << 20;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* the kernel clears setuid/setgid on write and chown itself */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* locks are the mds's (ops_lock.c); libfuse wants these already
	 * because getlk/setlk and flock exist: say so explicitly */
	if (conn->capable & FUSE_CAP_POSIX_LOCKS)
		conn->want |= FUSE_CAP_POSIX_LOCKS;
	if (conn->capable & FUSE_CAP_FLOCK_LOCKS)
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	/* POSIX ACLs (docs/acl.md): the kernel enforces them and hands the
	 * mds the creator's umask (DONT_MASK: the mode arrives unmasked),
	 * which applies it, or a directory's default ACL instead. */
	if (!the_fs->o.noacl && (conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
}

/* The mount's bdi: read_ahead_kb from our own line in mountinfo (a
 * stat of the mount point would be a request to ourselves). */
static void raise_readahead(const char *mnt, unsigned kb)
{
	char real[PATH_MAX], line[4096], path[128];
	FILE *f;

	if (!kb || !realpath(mnt, real) || !(f = fopen("/proc/self/mountinfo", "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned id, parent, maj, min;
		char root[PATH_MAX], point[PATH_MAX];

		if (sscanf(line, "%u %u %u:%u %4095s %4095s", &id, &parent, &maj, &min,
			   root, point) != 6 || strcmp(point, real))
			continue;
		if (!strstr(line, "fuse.sdfs"))
			continue;
		snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
		FILE *b = fopen(path, "w");
		if (b) {
			fprintf(b, "%u\n", kb);
			if (fclose(b))
				log_warn("%s: %s", path, strerror(errno));
		}
	}
	fclose(f);
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = fs_init,
	.lookup = fs_op_lookup,
	.forget = fs_op_forget,
	.forget_multi = fs_op_forget_multi,
	.getattr = fs_op_getattr,
	.setattr = fs_op_setattr,
	.readlink = fs_op_readlink,
	.mknod = fs_op_mknod,
	.mkdir = fs_op_mkdir,
	.unlink = fs_op_unlink,
	.rmdir = fs_op_rmdir,
	.symlink = fs_op_symlink,
	.rename = fs_op_rename,
	.link = fs_op_link,
	.open = fs_op_open,
	.read = fs_op_read,
	.write = fs_op_write,
	.flush = fs_op_flush,
	.release = fs_op_release,
	.fsync = fs_op_fsync,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.readdirplus = fs_op_readdirplus,
	.releasedir = fs_op_releasedir,
	.fsyncdir = fs_op_fsyncdir,
	.statfs = fs_op_statfs,
	.setxattr = fs_op_setxattr,
	.getxattr = fs_op_getxattr,
	.listxattr = fs_op_listxattr,
	.removexattr = fs_op_removexattr,
	.access = fs_op_access,
	.create = fs_op_create,
	.fallocate = fs_op_fallocate,
	.lseek = fs_op_lseek,
	.copy_file_range = fs_op_copy_file_range,
};

static struct fuse_lowlevel_ops fs_ops_all;    /* fs_ops + snapdir.c's + locks */

int main(int argc, char **argv)
{
	static struct fs fs = { .o = { .attr_timeout = 1.0, .entry_timeout = 1.0,
				       .readahead_kb = 1024, .threads = 64,
				       .times_ms = 1000,
				       .timeout_ms = 0 } };
	struct args a = { 0 };
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc;
	char uuid[64], opts[8192], type[256], ro_why[AUTH_CAPS_STR_MAX + 128];
	int ret;

	the_fs = &fs;
	log_set_ident("mount.sdfs");
	if (parse_args(&fs, &a, argc, argv))
		return 2;
	if (mnt_has_fuse(a.mnt, type, sizeof(type))) {
		if (!strcmp(type, "fuse.sdfs"))
			fprintf(stderr, "mount.sdfs: %s: sdfs is mounted there already "
				"(unmount it first)\n", a.mnt);
		else
			fprintf(stderr, "mount.sdfs: %s: a FUSE filesystem (%s) is mounted "
				"there already (unmount it first)\n", a.mnt, type);
		return 1;
	}
	/* A first connection, to report a bad cluster here; the daemon
	 * connects again after going to the background (threads do not
	 * survive fork). The caller reads one line of reason, not the
	 * ZooKeeper library's retries (loglevel=debug still shows them). */
	int level = log_level;
	if (level < LOG_DEBUG)
		log_level = LOG_ERR;
	ret = connect_cluster(&fs, &a, uuid, sizeof(uuid));
	if (!ret && key_check(&fs, &a, ro_why, sizeof(ro_why))) {
		sdfs_close(fs.s);
		ret = -1;
	}
	log_level = level;
	if (ret)
		return 1;
	if (ro_why[0])
		log_info("%s", ro_why);
	sdfs_close(fs.s);
	fs.s = NULL;
	if (fnode_table_init(&fs)) {
		fprintf(stderr, "mount.sdfs: out of memory\n");
		return 1;
	}
	snprintf(opts, sizeof(opts), "fsname=sdfs:%s,subtype=sdfs,default_permissions,"
		 "max_read=1048576%s%s", uuid, geteuid() == 0 ? ",allow_other" : "",
		 a.fuse_opts);
	if (fuse_opt_add_arg(&fargs, argv[0]) || fuse_opt_add_arg(&fargs, "-o") ||
	    fuse_opt_add_arg(&fargs, opts) || (a.debug && fuse_opt_add_arg(&fargs, "-d"))) {
		fprintf(stderr, "mount.sdfs: out of memory\n");
		return 1;
	}
	fs_ops_all = fs_ops;
	snapdir_ops(&fs_ops_all);
	fs_lock_ops(&fs_ops_all);       /* locks (ops_lock.c): after snapdir's */
	fs.se = fuse_session_new(&fargs, &fs_ops_all, sizeof(fs_ops_all), &fs);
	if (!fs.se)
		return 1;       /* libfuse said why */
	if (fuse_set_signal_handlers(fs.se) || fuse_session_mount(fs.se, a.mnt)) {
		fuse_session_destroy(fs.se);
		return 1;
	}
	if (fuse_daemonize(a.foreground)) {
		fuse_session_unmount(fs.se);
		return 1;
	}
	if (!a.foreground && a.log) {
		int fd = open(a.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
	}
	if (connect_cluster(&fs, &a, uuid, sizeof(uuid))) {
		log_err("cannot connect to cluster %s; unmounting", a.cluster);
		fuse_session_unmount(fs.se);
		return 1;
	}
	log_info("mounted cluster %s at %s%s%s", a.cluster, a.mnt,
		 ro_why[0] ? "; " : "", ro_why);
	if ((ret = inval_start(&fs)) != 0)
		log_warn("no pushed invalidations (%s): caches expire by their "
			 "timeouts only", strerror(-ret));
	mnt_point = a.mnt;
	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 1);
	fuse_loop_cfg_set_max_threads(lc, fs.o.threads);
	ret = fuse_session_loop_mt(fs.se, lc);
	fuse_loop_cfg_destroy(lc);
	timesback_stop();       /* mtimes still queued: pushed now */
	/* No notify call may start once unmounting closes the device fd;
	 * one blocked in the kernel ends when it does (then join). The
	 * subscription itself ends in sdfs_close: its callback is a no-op
	 * from here on. */
	inval_quiesce(&fs);
	fuse_session_unmount(fs.se);
	inval_stop(&fs);
	fuse_remove_signal_handlers(fs.se);
	fuse_session_destroy(fs.se);
	log_info("unmounted %s", a.mnt);
	sdfs_close(fs.s);
	fuse_opt_free_args(&fargs);
	return ret ? 1 : 0;
}
