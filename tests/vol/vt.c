/*
 * vt.c - see vt.h.
 */
#include "tests/vol/vt.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/coord.h"
#include "common/keys.h"
#include "common/proto.h"
#include "tests/cluster/wire.h"

struct tcluster *vt_start(void)
{
	return tcluster_start(&(struct tcluster_opts){
		.blockd = 3, .copies = 3, .mds = 2, .mount = 1 });
}

const char *vt_path(struct tcluster *tc, const char *name, char *buf)
{
	snprintf(buf, PATH_MAX + 64, "%s/%s", tcluster_mnt(tc), name);
	return buf;
}

uint64_t vt_create(struct tcluster *tc, const char *name, uint64_t size,
		   uint32_t obj_size, struct sdfs_stat *out)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_stat root, st;
	int ret;

	/* the mount shows the namespace's root */
	ret = sdfs_ns_resolve(s, "/", 1, &root);
	cr_assert_eq(ret, 0, "resolve /: %s", strerror(-ret));
	ret = sdfs_vol_create(s, root.ino, name, 0644, getuid(), getgid(), size, 0,
			      obj_size, &st);
	cr_assert_eq(ret, 0, "sdfs_vol_create %s (%" PRIu64 " bytes, objects of %u): %s",
		     name, size, obj_size, strerror(-ret));
	cr_assert_eq(st.layout, SDFS_LAYOUT_VOLUME, "%s: layout %u after sdfs_vol_create",
		     name, st.layout);
	if (out)
		*out = st;
	return st.ino;
}

uint64_t vt_ino(struct tcluster *tc, const char *name)
{
	struct sdfs_stat st;
	char path[PATH_MAX + 8];
	int ret;

	snprintf(path, sizeof(path), "/%s", name);
	ret = sdfs_ns_resolve(tcluster_client(tc), path, 1, &st);
	cr_assert_eq(ret, 0, "resolve %s: %s", path, strerror(-ret));
	return st.ino;
}

void vt_info(struct tcluster *tc, uint64_t ino, const char *snap, struct sdfs_vol_info *vi)
{
	int ret = sdfs_vol_info(tcluster_client(tc), ino, snap, vi);

	cr_assert_eq(ret, 0, "sdfs_vol_info ino=%" PRIu64 " snap=%s: %s", ino,
		     snap ? snap : "(live)", strerror(-ret));
}

int vt_open(struct tcluster *tc, const char *name, int flags)
{
	char path[PATH_MAX + 64];
	int64_t end = tnow_ms() + 5000;
	int fd;

	vt_path(tc, name, path);
	while ((fd = open(path, flags | O_CLOEXEC, 0644)) < 0 && errno == ENOENT &&
	       tnow_ms() < end)
		tsleep_ms(50);
	return fd;
}

int vt_xopen(struct tcluster *tc, const char *name, int flags)
{
	int fd = vt_open(tc, name, flags);

	cr_assert(fd >= 0, "open %s/%s (flags 0%o): %s", tcluster_mnt(tc), name, flags,
		  strerror(errno));
	return fd;
}

void vt_pwrite(int fd, const void *buf, size_t len, uint64_t off, const char *what)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
				   (off_t)(off + done));

		cr_assert(n > 0, "%s: pwrite of %zu bytes at %" PRIu64 ": %s", what,
			  len - done, off + done, n < 0 ? strerror(errno) : "wrote 0");
		done += (size_t)n;
	}
}

void vt_pread(int fd, void *buf, size_t len, uint64_t off, const char *what)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		cr_assert(n > 0, "%s: pread of %zu bytes at %" PRIu64 ": %s", what,
			  len - done, off + done, n < 0 ? strerror(errno) : "end of file");
		done += (size_t)n;
	}
}

void vt_fsync(int fd, const char *what)
{
	cr_assert_eq(fsync(fd), 0, "%s: fsync: %s", what, strerror(errno));
}

void *vt_alloc(size_t len)
{
	void *p = NULL;

	cr_assert_eq(posix_memalign(&p, 4096, len ? len : 1), 0);
	memset(p, 0, len);
	return p;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void vt_fill(void *buf, size_t len, uint64_t off, uint64_t tag)
{
	uint8_t *p = buf;
	uint64_t w = 0, wi = UINT64_MAX;

	if (!tag) {
		memset(buf, 0, len);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		uint64_t x = off + i;

		if (x >> 3 != wi) {
			wi = x >> 3;
			w = mix(tag * 0x100000001b3ull ^ mix(wi));
		}
		p[i] = (uint8_t)(w >> ((x & 7) * 8));
	}
}

void vt_model_write(uint8_t *model, uint64_t off, size_t len, uint64_t tag)
{
	vt_fill(model + off, len, off, tag);
}

void vt_assert_same(const void *got, const void *want, size_t len, uint64_t base,
		    uint32_t chunk, const char *what)
{
	const uint8_t *g = got, *w = want;
	size_t first = SIZE_MAX, last = 0, ndiff = 0;
	int zeros = 1;

	if (!memcmp(got, want, len))
		return;
	for (size_t i = 0; i < len; i++) {
		if (g[i] == w[i])
			continue;
		if (first == SIZE_MAX)
			first = i;
		last = i;
		ndiff++;
	}
	for (size_t i = first; i <= last && zeros; i++)
		zeros = g[i] == 0;
	cr_assert_fail("%s: %zu bytes differ in [%" PRIu64 ", %" PRIu64 "] (chunks %" PRIu64
		       "..%" PRIu64 " of %u bytes)%s; at %" PRIu64 ": got %02x %02x %02x %02x, "
		       "want %02x %02x %02x %02x", what, ndiff, base + first, base + last,
		       (base + first) / chunk, (base + last) / chunk, chunk,
		       zeros ? " (read as zeros)" : "", base + first, g[first],
		       first + 1 < len ? g[first + 1] : 0, first + 2 < len ? g[first + 2] : 0,
		       first + 3 < len ? g[first + 3] : 0, w[first],
		       first + 1 < len ? w[first + 1] : 0, first + 2 < len ? w[first + 2] : 0,
		       first + 3 < len ? w[first + 3] : 0);
}

void vt_vol_put(struct sdfs_vol *v, uint8_t *model, uint64_t off, size_t len, uint64_t tag)
{
	uint8_t *b = malloc(len);
	int ret;

	cr_assert_not_null(b);
	vt_fill(b, len, off, tag);
	ret = sdfs_vol_pwrite(v, b, len, off);
	cr_assert_eq(ret, 0, "write [%" PRIu64 ", +%zu): %s", off, len, strerror(-ret));
	memcpy(model + off, b, len);
	free(b);
}

void vt_vol_check(struct sdfs_vol *v, const uint8_t *model, uint64_t off, size_t len,
		  uint32_t chunk, const char *what)
{
	uint8_t *b = malloc(len);
	ssize_t got;

	cr_assert_not_null(b);
	got = sdfs_vol_pread(v, b, len, off);
	cr_assert_eq(got, (ssize_t)len, "%s: read %zd: %s", what, got,
		     got < 0 ? strerror((int)-got) : "short");
	vt_assert_same(b, model + off, len, off, chunk, what);
	free(b);
}

#define VT_STRIP_HDR 4096       /* a strip file's header; a tombstone is no more */

size_t vt_strips(struct tcluster *tc, uint64_t oid, size_t *data, uint64_t *bytes)
{
	char pat[1024];
	size_t tomb = 0;
	glob_t g;
	int r;

	snprintf(pat, sizeof(pat), "%s/blockd.*/strip/%02x/%016" PRIx64 ".*",
		 tcluster_dir(tc), (unsigned)(oid & 0xff), oid);
	memset(&g, 0, sizeof(g));
	r = glob(pat, 0, NULL, &g);
	cr_assert(r == 0 || r == GLOB_NOMATCH, "glob %s: %d", pat, r);
	*data = 0;
	if (bytes)
		*bytes = 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct stat st;

		if (stat(g.gl_pathv[i], &st))
			continue;       /* dropped meanwhile */
		if (st.st_size <= VT_STRIP_HDR) {
			tomb++;
		} else {
			(*data)++;
			if (bytes)
				*bytes += (uint64_t)st.st_size;
		}
	}
	globfree(&g);
	return tomb;
}

void vt_read_vol(struct tcluster *tc, uint64_t ino, const char *snap, void *buf, size_t len)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_vol *v = NULL;
	int ret = snap ? sdfs_vol_open_snap(s, ino, snap, &v) : sdfs_vol_open(s, ino, 0, NULL, &v);

	cr_assert_eq(ret, 0, "open volume ino=%" PRIu64 " %s%s: %s", ino,
		     snap ? "snapshot " : "live", snap ? snap : "", strerror(-ret));
	for (size_t done = 0; done < len;) {
		size_t want = len - done > (4u << 20) ? (4u << 20) : len - done;
		ssize_t n = sdfs_vol_pread(v, (char *)buf + done, want, done);

		cr_assert(n > 0, "sdfs_vol_pread ino=%" PRIu64 " %s at %zu: %s", ino,
			  snap ? snap : "live", done, n < 0 ? strerror((int)-n) : "end");
		done += (size_t)n;
	}
	sdfs_vol_close(v);
}

void vt_read_file(struct tcluster *tc, const char *name, void *buf, size_t len, int direct)
{
	int fd = vt_xopen(tc, name, O_RDONLY | (direct ? O_DIRECT : 0));
	size_t alen = (len + 4095) & ~(size_t)4095;
	char *b = direct ? vt_alloc(alen) : buf;
	char what[PATH_MAX + 64];

	snprintf(what, sizeof(what), "%s%s", name, direct ? " (O_DIRECT)" : "");
	if (direct) {
		/* whole aligned blocks; the last may end at end of file */
		size_t done = 0;

		while (done < len) {
			ssize_t n = pread(fd, b + done, alen - done, (off_t)done);

			cr_assert(n > 0, "%s: pread at %zu: %s", what, done,
				  n < 0 ? strerror(errno) : "end of file");
			done += (size_t)n;
		}
		memcpy(buf, b, len);
		free(b);
	} else {
		vt_pread(fd, buf, len, 0, what);
	}
	close(fd);
}

/* ---- commands ---- */

static pid_t start(char *const argv[], int out_fd)
{
	pid_t pid = fork();

	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDONLY);

		if (nfd < 0 || dup2(nfd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
			_exit(127);
		close_range(3, ~0u, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int decode_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int vt_wait_child(pid_t pid, int timeout_ms)
{
	int status;

	for (int64_t end = tnow_ms() + timeout_ms;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			return decode_status(status);
		cr_assert(w == 0 || errno == EINTR, "waitpid %d: %s", (int)pid, strerror(errno));
		if (tnow_ms() > end)
			return -1;
		tsleep_ms(10);
	}
}

int vt_run(char *const argv[], char **out, int timeout_ms)
{
	int ofd = memfd_create("out", MFD_CLOEXEC), st;
	pid_t pid;

	cr_assert(ofd >= 0, "memfd_create: %s", strerror(errno));
	pid = start(argv, ofd);
	st = vt_wait_child(pid, timeout_ms);
	if (st < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	off_t len = lseek(ofd, 0, SEEK_END);
	char *s = calloc(1, (size_t)len + 1);

	cr_assert(s);
	cr_assert_eq(pread(ofd, s, (size_t)len, 0), (ssize_t)len);
	close(ofd);
	cr_assert(st >= 0, "%s %s: still running after %d ms; killed. Output:\n%s", argv[0],
		  argv[1] ? argv[1] : "", timeout_ms, s);
	if (out)
		*out = s;
	else
		free(s);
	return st;
}

pid_t vt_spawn(char *const argv[], const char *log_path)
{
	int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	pid_t pid;

	cr_assert(fd >= 0, "%s: %s", log_path, strerror(errno));
	pid = start(argv, fd);
	close(fd);
	return pid;
}

int vt_sdfs_to_file(struct tcluster *tc, const char *out_path, char **err,
		    const char *const args[])
{
	const char *bin = getenv("SDFS_BIN");
	char *argv[64];
	int argc = 0, efd, ofd, st;
	pid_t pid;

	cr_assert(bin && *bin, "SDFS_BIN is not set (run through meson test)");
	argv[argc++] = (char *)bin;
	argv[argc++] = "-c";
	argv[argc++] = (char *)tcluster_conf(tc);
	for (; *args; args++) {
		cr_assert(argc < 62);
		argv[argc++] = (char *)*args;
	}
	argv[argc] = NULL;
	ofd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(ofd >= 0, "%s: %s", out_path, strerror(errno));
	efd = memfd_create("err", MFD_CLOEXEC);
	cr_assert(efd >= 0);
	pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDONLY);

		if (nfd < 0 || dup2(nfd, 0) < 0 || dup2(ofd, 1) < 0 || dup2(efd, 2) < 0)
			_exit(127);
		close_range(3, ~0u, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	close(ofd);
	st = vt_wait_child(pid, VT_CMD_MS);
	if (st < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	off_t len = lseek(efd, 0, SEEK_END);
	char *e = calloc(1, (size_t)len + 1);

	cr_assert(e);
	cr_assert_eq(pread(efd, e, (size_t)len, 0), (ssize_t)len);
	close(efd);
	cr_assert(st >= 0, "sdfs %s %s: still running after %d ms: %s", argv[3],
		  argv[4] ? argv[4] : "", VT_CMD_MS, e);
	if (err)
		*err = e;
	else
		free(e);
	return st;
}

size_t vt_slurp(const char *path, uint8_t **buf)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(fstat(fd, &st), 0);
	*buf = malloc((size_t)st.st_size + 1);
	cr_assert(*buf);
	vt_pread(fd, *buf, (size_t)st.st_size, 0, path);
	close(fd);
	return (size_t)st.st_size;
}

/* ---- what the block daemons hold ---- */

#define LIST_PAGE 4096u

/* One node's live objects passing @want into @o, page by page, over a
 * connection as the cluster's admin key (OBJ_LIST is for admin and
 * daemon keys only). */
static void list_node(struct tcluster *tc, const char *addr, int (*want)(uint64_t oid),
		      struct vt_node_objs *o)
{
	uint8_t *page = malloc((size_t)LIST_PAGE * SDFS_LIST_ENT_SIZE);
	struct sdfs_list_ent *ents = malloc(LIST_PAGE * sizeof(*ents));
	struct wire_conn c;
	uint64_t after = 0, req = 1;
	size_t cap = 0;
	int more = 1;

	cr_assert(page && ents);
	wire_conn_open(&c, addr, tcluster_conf(tc));
	for (int first = 1; more; first = 0) {
		struct sdfs_hdr h = { .opcode = SDFS_OP_OBJ_LIST, .req_id = req++,
				      .flags = SDFS_F_EPOCHS | (first ? SDFS_F_FIRST : 0),
				      .offset = after, .length = LIST_PAGE };
		int ret = wire_conn_send(&c, &h, NULL);

		cr_assert_eq(ret, 0, "node %u (%s): OBJ_LIST: send: %s", o->node_id, addr,
			     strerror(-ret));
		ret = wire_conn_recv(&c, &h, page, (size_t)LIST_PAGE * SDFS_LIST_ENT_SIZE,
				     VT_WAIT_MS);
		cr_assert_eq(ret, 0, "node %u (%s): OBJ_LIST: reply: %s", o->node_id, addr,
			     strerror(-ret));
		cr_assert_eq(h.result, SDFS_RES_OK, "node %u (%s): OBJ_LIST: %s", o->node_id,
			     addr, strerror(-proto_res_to_errno(h.result)));
		cr_assert(h.payload_len % SDFS_LIST_ENT_SIZE == 0,
			  "node %u (%s): OBJ_LIST: %u payload bytes", o->node_id, addr,
			  h.payload_len);
		size_t k = h.payload_len / SDFS_LIST_ENT_SIZE;

		proto_list_ent_decode(page, k, ents);
		for (size_t i = 0; i < k; i++) {
			if (ents[i].size == SDFS_SIZE_TOMBSTONE || (want && !want(ents[i].oid)))
				continue;
			if (o->n == cap) {
				cap = cap ? 2 * cap : 256;
				o->oids = realloc(o->oids, cap * sizeof(*o->oids));
				cr_assert(o->oids);
			}
			o->oids[o->n++] = ents[i].oid;
		}
		more = (h.flags & SDFS_F_MORE) && k;
		if (k)
			after = ents[k - 1].oid;
	}
	wire_conn_close(&c);
	free(page);
	free(ents);
}

struct coord *vt_coord(struct tcluster *tc)
{
	struct coord_cred cred = { 0 };
	struct sdfs_conf conf;
	struct keyring kr;
	struct coord *c;
	char err[256];
	int ret;

	conf_init(&conf);
	cr_assert_eq(conf_load(tcluster_conf(tc), &conf, err, sizeof(err)), 0, "%s", err);
	if (conf.keyring_set) {
		cr_assert_eq(keyring_load(conf.keyring, &kr, err, sizeof(err)), 0, "%s: %s",
			     conf.keyring, err);
		cr_assert_eq(coord_cred_from_keyring(&kr, &cred), 0, "%s: no credentials",
			     conf.keyring);
		memset(&kr, 0, sizeof(kr));
	}
	ret = coord_open_cred(conf.zk, conf.cluster, conf.keyring_set ? &cred : NULL, 4000,
			      10000, NULL, NULL, &c);
	memset(&cred, 0, sizeof(cred));
	cr_assert_eq(ret, 0, "ZooKeeper session of %s: %s", conf.cluster, strerror(-ret));
	return c;
}

size_t vt_node_objects(struct tcluster *tc, int (*want)(uint64_t oid),
		       struct vt_node_objs out[VT_MAX_NODES])
{
	struct sdfs_node_status *nodes = NULL;
	size_t n = 0;
	int ret = sdfs_node_list(tcluster_client(tc), &nodes, &n);

	cr_assert_eq(ret, 0, "sdfs_node_list: %s", strerror(-ret));
	cr_assert(n >= 1 && n <= VT_MAX_NODES, "%zu nodes in the map", n);
	for (size_t i = 0; i < n; i++) {
		cr_assert(!strcmp(nodes[i].state, "up"), "node %u (%s) is %s: its objects "
			  "cannot be listed", nodes[i].node_id, nodes[i].addr, nodes[i].state);
		memset(&out[i], 0, sizeof(out[i]));
		out[i].node_id = nodes[i].node_id;
		list_node(tc, nodes[i].addr, want, &out[i]);
	}
	free(nodes);
	return n;
}

void vt_node_objs_free(struct vt_node_objs *o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(o[i].oids);
		o[i].oids = NULL;
		o[i].n = 0;
	}
}

/* ---- a second mount ---- */

int vt_is_mounted(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[16384], point[PATH_MAX];
	int found = 0;

	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 && !strcmp(point, path))
			found = 1;
	fclose(f);
	return found;
}

static void cluster_name(struct tcluster *tc, char *name, size_t len)
{
	FILE *f = fopen(tcluster_conf(tc), "r");
	char line[512], fmt[32];

	cr_assert(f, "%s: %s", tcluster_conf(tc), strerror(errno));
	name[0] = '\0';
	snprintf(fmt, sizeof(fmt), "cluster = %%%zus", len - 1);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, name) == 1)
			break;
	fclose(f);
	cr_assert(name[0], "no cluster name in %s", tcluster_conf(tc));
}

static void lazy_unmount(const char *path)
{
	char *argv[] = { "/usr/bin/fusermount3", "-u", "-z", (char *)path, NULL };
	pid_t pid = fork();

	if (pid == 0) {
		int nfd = open("/dev/null", O_RDWR);

		if (nfd >= 0) {
			dup2(nfd, 0);
			dup2(nfd, 1);
			dup2(nfd, 2);
		}
		close_range(3, ~0u, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

void vt_watchdog_start(struct vt_watchdog *w, pid_t pid, const char *unmount)
{
	int p[2];

	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	w->pid = fork();
	cr_assert(w->pid >= 0, "fork: %s", strerror(errno));
	if (w->pid == 0) {
		char c;
		ssize_t n;

		setsid();
		if (dup2(p[0], 3) < 0)
			_exit(1);
		close_range(4, ~0u, 0);
		while ((n = read(3, &c, 1)) < 0 && errno == EINTR)
			;
		if (n == 1)
			_exit(0);
		if (unmount)
			lazy_unmount(unmount);
		kill(pid, SIGCONT);
		kill(pid, SIGTERM);
		for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
			usleep(50000);
		kill(pid, SIGKILL);
		_exit(0);
	}
	close(p[0]);
	w->fd = p[1];
}

void vt_watchdog_stop(struct vt_watchdog *w)
{
	if (w->pid <= 0)
		return;
	if (write(w->fd, "x", 1) != 1) {
		cr_log_warn("watchdog %d: %s", (int)w->pid, strerror(errno));
		kill(w->pid, SIGKILL);
	}
	close(w->fd);
	waitpid(w->pid, NULL, 0);
	w->pid = 0;
}

void vt_mount2_start(struct tcluster *tc, struct vt_mount2 *m, const char *path,
		     const char *extra)
{
	char cluster[128], opts[PATH_MAX + 512], log[PATH_MAX + 64];
	char *argv[] = { NULL, "-f", "-o", opts, cluster, m->path, NULL };
	const char *bin = getenv("MOUNT_SDFS");

	cr_assert(bin && *bin, "MOUNT_SDFS is not set (run through meson test)");
	memset(m, 0, sizeof(*m));
	snprintf(m->path, sizeof(m->path), "%s", path);
	cr_assert(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path,
		  strerror(errno));
	cluster_name(tc, cluster, sizeof(cluster));
	snprintf(opts, sizeof(opts), "conf=%s%s%s", tcluster_conf(tc), extra ? "," : "",
		 extra ? extra : "");
	/* log/<the mount point's name>.log: mnt2.log, mnt3.log... */
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	snprintf(log, sizeof(log), "%s/log/%s.log", tcluster_dir(tc), base);
	argv[0] = (char *)bin;
	m->pid = vt_spawn(argv, log);
	vt_watchdog_start(&m->wd, m->pid, m->path);
	for (int64_t end = tnow_ms() + VT_WAIT_MS;;) {
		struct stat st;

		if (vt_is_mounted(m->path) && stat(m->path, &st) == 0)
			break;
		int status = vt_wait_child(m->pid, 0);
		if (status >= 0)
			m->pid = 0;     /* reaped: nothing to stop */
		cr_assert(status < 0, "mount.sdfs -f %s %s exited (%d) before mounting; see %s",
			  cluster, m->path, status, log);
		cr_assert(tnow_ms() < end, "%s not mounted within %d ms; see %s", m->path,
			  VT_WAIT_MS, log);
		tsleep_ms(20);
	}
	cr_log_info("second mount at %s: mount.sdfs pid %d (log %s)", m->path, (int)m->pid,
		    log);
}

void vt_mount2_stop(struct vt_mount2 *m)
{
	if (m->pid > 0) {
		char *argv[] = { "/usr/bin/fusermount3", "-u", m->path, NULL };
		char *out = NULL;

		kill(m->pid, SIGCONT);
		if (vt_is_mounted(m->path) && vt_run(argv, &out, 60000) != 0) {
			cr_log_warn("fusermount3 -u %s: %s; unmounting lazily", m->path, out);
			lazy_unmount(m->path);
		}
		free(out);
		if (vt_wait_child(m->pid, 10000) < 0) {
			kill(m->pid, SIGTERM);
			if (vt_wait_child(m->pid, 5000) < 0) {
				kill(m->pid, SIGKILL);
				waitpid(m->pid, NULL, 0);
			}
		}
		m->pid = 0;
	}
	if (m->path[0] && vt_is_mounted(m->path))
		lazy_unmount(m->path);
	vt_watchdog_stop(&m->wd);
}

/* ---- QMP ---- */

/* The next line from @q (without '\n') into @line, waiting until
 * @deadline; the test fails on a timeout or a closed monitor. */
static void qmp_line(struct vt_qmp *q, char *line, size_t cap, int64_t deadline)
{
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);

		if (nl) {
			size_t n = (size_t)(nl - q->buf);

			snprintf(line, cap, "%.*s", (int)n, q->buf);
			memmove(q->buf, nl + 1, q->len - n - 1);
			q->len -= n + 1;
			return;
		}
		cr_assert(q->len < sizeof(q->buf) - 1, "QMP: a line longer than %zu bytes",
			  sizeof(q->buf));
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		int left = (int)(deadline - tnow_ms());

		cr_assert(left > 0 && poll(&p, 1, left) == 1, "QMP: no answer in %d ms",
			  VT_QMP_MS);
		ssize_t got = read(q->fd, q->buf + q->len, sizeof(q->buf) - 1 - q->len);

		cr_assert(got > 0, "QMP: the monitor closed (%s)",
			  got < 0 ? strerror(errno) : "EOF");
		q->len += (size_t)got;
	}
}

/* @cmd and its newline in one send, without SIGPIPE: QEMU may close
 * the socket as soon as it has a whole command (quit). */
static int qmp_send(struct vt_qmp *q, const char *cmd)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);

	cr_assert(n > 0 && (size_t)n < sizeof(line), "QMP: command too long: %s", cmd);
	return send(q->fd, line, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -errno;
}

void vt_qmp_cmd(struct vt_qmp *q, const char *cmd, char *out, size_t cap)
{
	int64_t deadline = tnow_ms() + VT_QMP_MS;
	int ret = qmp_send(q, cmd);

	cr_assert_eq(ret, 0, "QMP: send %s: %s", cmd, strerror(-ret));
	do
		qmp_line(q, out, cap, deadline);
	while (strstr(out, "\"event\"") && !strstr(out, "\"return\""));
	cr_assert(!strstr(out, "\"error\""), "QMP %s: %s", cmd, out);
}

void vt_qmp_quit(struct vt_qmp *q)
{
	/* QEMU answers and closes, or closes first: both are fine */
	if (qmp_send(q, "{\"execute\":\"quit\"}") == 0) {
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		char buf[4096];

		while (poll(&p, 1, VT_QMP_MS) == 1 && read(q->fd, buf, sizeof(buf)) > 0)
			;
	}
	vt_qmp_close(q);
}

void vt_qmp_open(struct vt_qmp *q, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int64_t deadline = tnow_ms() + VT_QMP_MS;
	char line[4096];

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	q->len = 0;
	for (;;) {
		q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		cr_assert(q->fd >= 0);
		if (!connect(q->fd, (struct sockaddr *)&a, sizeof(a)))
			break;
		close(q->fd);
		cr_assert(tnow_ms() < deadline, "QMP: cannot connect to %s: %s", path,
			  strerror(errno));
		tsleep_ms(50);
	}
	qmp_line(q, line, sizeof(line), deadline);      /* the greeting */
	cr_assert(strstr(line, "\"QMP\""), "QMP greeting: %s", line);
	vt_qmp_cmd(q, "{\"execute\":\"qmp_capabilities\"}", line, sizeof(line));
}

void vt_qmp_close(struct vt_qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
}

void vt_qmp_status(struct vt_qmp *q, const char *exec, char *status, size_t cap)
{
	char cmd[128], out[8192], *s;

	snprintf(cmd, sizeof(cmd), "{\"execute\":\"%s\"}", exec);
	vt_qmp_cmd(q, cmd, out, sizeof(out));
	s = strstr(out, "\"status\": \"");
	cr_assert(s, "%s: no status in %s", exec, out);
	s += strlen("\"status\": \"");
	snprintf(status, cap, "%.*s", (int)strcspn(s, "\""), s);
}

int64_t vt_qmp_migrate(struct vt_qmp *src, const char *uri)
{
	char cmd[PATH_MAX + 128], out[8192], st[64];
	int64_t t0 = tnow_ms();

	/* QEMU 7.2 caps a migration at 32 MiB/s by default */
	vt_qmp_cmd(src, "{\"execute\":\"migrate-set-parameters\",\"arguments\":"
		   "{\"max-bandwidth\":10737418240}}", out, sizeof(out));
	snprintf(cmd, sizeof(cmd), "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"%s\"}}",
		 uri);
	vt_qmp_cmd(src, cmd, out, sizeof(out));
	for (;;) {
		vt_qmp_status(src, "query-migrate", st, sizeof(st));
		if (!strcmp(st, "completed"))
			break;
		cr_assert(strcmp(st, "failed") && strcmp(st, "cancelled"), "migration %s", st);
		cr_assert(tnow_ms() - t0 < VT_QMP_MS, "migration still %s after %d ms", st,
			  VT_QMP_MS);
		tsleep_ms(50);
	}
	return tnow_ms() - t0;
}

int vt_run_logged(char *const argv[], char **out)
{
	char *o = NULL;
	int st = vt_run(argv, &o, VT_CMD_MS);
	char line[1024];
	size_t off = 0;

	for (int i = 0; argv[i] && off + 2 < sizeof(line); i++)
		off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s", i ? " " : "",
					argv[i]);
	cr_log_info("%s%s: exit %d\n%.4000s", line, off + 2 >= sizeof(line) ? "..." : "",
		    st, o);
	if (out)
		*out = o;
	else
		free(o);
	return st;
}
