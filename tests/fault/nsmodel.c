/*
 * nsmodel.c - see nsmodel.h.
 */
#include "tests/fault/nsmodel.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"

#define NSM_MAX_DIRS 6

void nsm_init(struct nsm *m)
{
	memset(m, 0, sizeof(*m));
}

void nsm_free(struct nsm *m)
{
	free(m->v);
	nsm_init(m);
}

static void reserve(struct nsm *m, size_t n)
{
	if (n <= m->cap)
		return;
	m->cap = n < 64 ? 64 : n * 2;
	m->v = realloc(m->v, m->cap * sizeof(*m->v));
	if (!m->v)
		abort();
}

void nsm_copy(struct nsm *dst, const struct nsm *src)
{
	reserve(dst, src->n);
	if (src->n)
		memcpy(dst->v, src->v, src->n * sizeof(*src->v));
	dst->n = src->n;
	dst->seq = src->seq;
}

/* Index of @path, or where it would go (*found false). */
static size_t find(const struct nsm *m, const char *path, bool *found)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(m->v[mid].path, path);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

bool nsm_has(const struct nsm *m, const char *path)
{
	bool found;

	find(m, path, &found);
	return found;
}

static void add(struct nsm *m, const char *path, bool dir)
{
	bool found;
	size_t i = find(m, path, &found);

	if (found) {
		m->v[i].dir = dir;
		return;
	}
	reserve(m, m->n + 1);
	memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(*m->v));
	snprintf(m->v[i].path, NSM_PATH, "%s", path);
	m->v[i].dir = dir;
	m->n++;
}

static void del(struct nsm *m, const char *path)
{
	bool found;
	size_t i = find(m, path, &found);

	if (!found)
		return;
	memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(*m->v));
	m->n--;
}

static bool is_under(const char *path, const char *dir)
{
	size_t l = strlen(dir);

	return strncmp(path, dir, l) == 0 && path[l] == '/';
}

void nsm_apply(struct nsm *m, const struct nsm_op *op)
{
	switch (op->kind) {
	case NSM_CREATE:
	case NSM_MKDIR:
		add(m, op->a, op->kind == NSM_MKDIR);
		break;
	case NSM_UNLINK:
	case NSM_RMDIR:
		del(m, op->a);
		break;
	case NSM_RENAME: {
		bool found;
		size_t i = find(m, op->a, &found);
		bool dir = found && m->v[i].dir;

		del(m, op->a);
		add(m, op->b, dir);
		if (!dir)
			break;
		/* Move what is under it: collect first, the array shifts. */
		size_t n = 0;
		struct nsm_ent *moved = calloc(m->n + 1, sizeof(*moved));

		if (!moved)
			abort();
		for (size_t k = 0; k < m->n; k++)
			if (is_under(m->v[k].path, op->a))
				moved[n++] = m->v[k];
		for (size_t k = 0; k < n; k++) {
			char to[NSM_PATH * 2];

			del(m, moved[k].path);
			snprintf(to, sizeof(to), "%s%s", op->b,
				 moved[k].path + strlen(op->a));
			add(m, to, moved[k].dir);
		}
		free(moved);
		break;
	}
	}
}

/* A random entry of @m that is a file (@dir false) or a directory. */
static const char *pick(const struct nsm *m, uint64_t *rng, bool dir,
			bool empty_only)
{
	size_t n = 0, want;

	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].dir == dir)
			n++;
	if (n == 0)
		return NULL;
	want = trand(rng) % n;
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].dir != dir || want--)
			continue;
		if (empty_only && i + 1 < m->n && is_under(m->v[i + 1].path, m->v[i].path))
			return NULL;
		return m->v[i].path;
	}
	return NULL;
}

static size_t ndirs(const struct nsm *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		n += m->v[i].dir;
	return n;
}

/* A fresh file name in a random parent (the root or a directory). */
static void fresh_file(struct nsm *m, uint64_t *rng, char *out)
{
	const char *parent = trand(rng) % 3 ? pick(m, rng, true, false) : NULL;

	if (parent)
		snprintf(out, NSM_PATH, "%s/f%" PRIu64, parent, m->seq++);
	else
		snprintf(out, NSM_PATH, "f%" PRIu64, m->seq++);
}

void nsm_next(struct nsm *m, uint64_t *rng, struct nsm_op *op)
{
	memset(op, 0, sizeof(*op));
	for (;;) {
		unsigned r = (unsigned)(trand(rng) % 100);
		const char *p;

		if (r < 35 || m->n == 0) {
			op->kind = NSM_CREATE;
			fresh_file(m, rng, op->a);
			return;
		}
		if (r < 43) {
			if (ndirs(m) >= NSM_MAX_DIRS)
				continue;
			op->kind = NSM_MKDIR;
			snprintf(op->a, NSM_PATH, "d%" PRIu64, m->seq++);
			return;
		}
		if (r < 70) {           /* a file: to a fresh name or over one */
			p = pick(m, rng, false, false);
			if (!p)
				continue;
			op->kind = NSM_RENAME;
			snprintf(op->a, NSM_PATH, "%s", p);
			p = trand(rng) % 5 ? NULL : pick(m, rng, false, false);
			if (p && strcmp(p, op->a))
				snprintf(op->b, NSM_PATH, "%s", p);
			else
				fresh_file(m, rng, op->b);
			return;
		}
		if (r < 75) {           /* a directory, with what is in it */
			p = pick(m, rng, true, false);
			if (!p)
				continue;
			op->kind = NSM_RENAME;
			snprintf(op->a, NSM_PATH, "%s", p);
			snprintf(op->b, NSM_PATH, "d%" PRIu64, m->seq++);
			return;
		}
		if (r < 93) {
			p = pick(m, rng, false, false);
			if (!p)
				continue;
			op->kind = NSM_UNLINK;
			snprintf(op->a, NSM_PATH, "%s", p);
			return;
		}
		p = pick(m, rng, true, true);
		if (!p)
			continue;
		op->kind = NSM_RMDIR;
		snprintf(op->a, NSM_PATH, "%s", p);
		return;
	}
}

bool nsm_equal(const struct nsm *a, const struct nsm *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i].path, b->v[i].path) || a->v[i].dir != b->v[i].dir)
			return false;
	return true;
}

void nsm_diff(const struct nsm *want, const struct nsm *got, char *buf,
	      size_t len)
{
	size_t i = 0, j = 0, used = 0, shown = 0;

	buf[0] = '\0';
	while ((i < want->n || j < got->n) && shown < 8 && used + 64 < len) {
		int c = i == want->n ? 1 : j == got->n ? -1
			: strcmp(want->v[i].path, got->v[j].path);

		if (c == 0 && want->v[i].dir == got->v[j].dir) {
			i++;
			j++;
			continue;
		}
		if (c == 0) {
			used += snprintf(buf + used, len - used, " %s is a %s",
					 got->v[j].path, got->v[j].dir ? "dir" : "file");
			i++;
			j++;
		} else if (c < 0) {
			used += snprintf(buf + used, len - used, " missing %s",
					 want->v[i++].path);
		} else {
			used += snprintf(buf + used, len - used, " extra %s",
					 got->v[j++].path);
		}
		shown++;
	}
	if (!shown)
		snprintf(buf, len, " (none)");
}

const char *nsm_op_str(const struct nsm_op *op, char *buf, size_t len)
{
	static const char *names[] = { "create", "mkdir", "rename", "unlink", "rmdir" };

	if (op->kind == NSM_RENAME)
		snprintf(buf, len, "rename %s %s", op->a, op->b);
	else
		snprintf(buf, len, "%s %s", names[op->kind], op->a);
	return buf;
}

int nsm_do_posix(const char *root, const struct nsm_op *op)
{
	char a[512], b[512];
	int fd, ret = 0;

	snprintf(a, sizeof(a), "%s/%s", root, op->a);
	snprintf(b, sizeof(b), "%s/%s", root, op->b);
	switch (op->kind) {
	case NSM_CREATE:
		fd = open(a, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		if (close(fd) < 0)
			return -errno;
		return 0;
	case NSM_MKDIR:
		ret = mkdir(a, 0755);
		break;
	case NSM_RENAME:
		ret = rename(a, b);
		break;
	case NSM_UNLINK:
		ret = unlink(a);
		break;
	case NSM_RMDIR:
		ret = rmdir(a);
		break;
	}
	return ret < 0 ? -errno : 0;
}

/* The directory inode holding @path under @root, and the last name. */
static int parent_of(struct sdfs *s, uint64_t root, const char *path,
		     uint64_t *dir, const char **name)
{
	const char *slash = strchr(path, '/');
	struct sdfs_stat st;
	char first[NSM_PATH];
	int ret;

	if (!slash) {
		*dir = root;
		*name = path;
		return 0;
	}
	snprintf(first, sizeof(first), "%.*s", (int)(slash - path), path);
	ret = sdfs_ns_lookup(s, root, first, &st);
	if (ret < 0)
		return ret;
	*dir = st.ino;
	*name = slash + 1;
	return 0;
}

int nsm_do_sdfs(struct sdfs *s, uint64_t root, const struct nsm_op *op)
{
	uint64_t da, db;
	const char *na, *nb;
	int ret = parent_of(s, root, op->a, &da, &na);

	if (ret < 0)
		return ret;
	switch (op->kind) {
	case NSM_CREATE:
		return sdfs_ns_mknod(s, da, na, S_IFREG | 0644, 0, 0, 0, NULL);
	case NSM_MKDIR:
		return sdfs_ns_mkdir(s, da, na, 0755, 0, 0, NULL);
	case NSM_RENAME:
		ret = parent_of(s, root, op->b, &db, &nb);
		if (ret < 0)
			return ret;
		return sdfs_ns_rename(s, da, na, db, nb, 0);
	case NSM_UNLINK:
		return sdfs_ns_unlink(s, da, na);
	case NSM_RMDIR:
		return sdfs_ns_rmdir(s, da, na);
	}
	return -EINVAL;
}

struct read_ctx {
	struct nsm *out;
	const char *prefix;
	uint64_t subdirs[64];
	char subnames[64][NSM_PATH];
	size_t nsub;
	int err;
};

static int read_one(void *arg, const char *name, uint64_t ino, uint32_t type,
		    uint64_t cookie, const struct sdfs_stat *st)
{
	struct read_ctx *c = arg;
	char path[NSM_PATH * 2];
	bool dir = (type & S_IFMT) == S_IFDIR;

	(void)cookie;
	(void)st;
	if (c->prefix)
		snprintf(path, sizeof(path), "%s/%s", c->prefix, name);
	else
		snprintf(path, sizeof(path), "%s", name);
	add(c->out, path, dir);
	if (dir && !c->prefix) {
		if (c->nsub == 64) {
			c->err = -E2BIG;
			return 1;
		}
		c->subdirs[c->nsub] = ino;
		snprintf(c->subnames[c->nsub++], NSM_PATH, "%s", name);
	}
	return 0;
}

int nsm_read(struct sdfs *s, uint64_t root, struct nsm *out)
{
	struct read_ctx *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	out->n = 0;
	c->out = out;
	ret = sdfs_ns_readdir(s, root, 0, 0, read_one, c);
	for (size_t i = 0; ret == 0 && !c->err && i < c->nsub; i++) {
		c->prefix = c->subnames[i];
		ret = sdfs_ns_readdir(s, c->subdirs[i], 0, 0, read_one, c);
	}
	if (ret == 0)
		ret = c->err;
	free(c);
	return ret;
}

int nsm_exists(struct sdfs *s, uint64_t root, const char *path)
{
	struct sdfs_stat st;
	uint64_t dir;
	const char *name;
	int ret = parent_of(s, root, path, &dir, &name);

	if (ret == 0)
		ret = sdfs_ns_lookup(s, dir, name, &st);
	if (ret == -ENOENT)
		return 0;
	return ret < 0 ? ret : 1;
}
