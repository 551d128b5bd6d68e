/*
 * cmd_vol.c - sdfs vol create|info|resize|clone|tree|convert, and the
 * table that also routes import and export (vol_stream.c).
 *
 * Volume files (docs/volumes.md) are named by their sdfs path; "PATH@SNAP"
 * names a snapshot where one is meant (vol_cli.c). New volume files
 * belong to the caller's uid and gid, with mode 0644 (a clone: its
 * source's permissions).
 * Not here: snapshots (cmd_snap.c), moving bytes (vol_stream.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/policy.h"
#include "tools/progress.h"
#include "tools/vol_cli.h"

#define VOL_MODE 0644
#define CONVERT_TMP_FMT ".%.*s.sdfs-convert-%ld"

/* SIZE of a volume: a size, and more than 0; else says so and 2. */
static int parse_size_arg(const char *what, const char *path, const char *v,
			  uint64_t *size)
{
	if (cli_parse_size(v, size))
		return cli_bad("%s: SIZE must be a size like 10G or 512M, not '%s'", what, v);
	if (*size == 0)
		return cli_bad("%s %s: size must be > 0", what, path);
	return 0;
}

/* An EC volume's chunks with data (*@held) and sealed ones, by its
 * index (the live state or @t's snapshot); -1 if it cannot be read. */
static int64_t sealed_chunks(struct sdfs *s, const struct vol_target *t, int64_t *held)
{
	struct sdfs_vol_info vi;
	struct sdfs_vol *v;
	int64_t n = 0;

	*held = 0;
	if (t->snap[0] ? sdfs_vol_open_snap(s, t->st.ino, t->snap, &v) :
	    sdfs_vol_open(s, t->st.ino, 0, NULL, &v))
		return -1;
	sdfs_vol_get_info(v, &vi);
	for (uint64_t c = 0; vi.obj_size && c * vi.obj_size < vi.size; c++) {
		*held += sdfs_vol_chunk_owner(v, c) != 0;
		n += sdfs_vol_chunk_sealed(v, c);
	}
	sdfs_vol_close(v);
	return n;
}

static void info_json(struct sdfs *s, const char *path, const struct vol_target *t,
		      const struct sdfs_vol_info *vi, unsigned copies, size_t nsnaps,
		      int64_t objects)
{
	char when[32], pol[32];

	printf("{\"path\": ");
	cli_json_str(stdout, path);
	printf(", \"snapshot\": ");
	if (t && t->snap[0])
		cli_json_str(stdout, t->snap);
	else
		printf("null");
	printf(", \"state\": \"%s\", \"vid\": %" PRIu64 ", \"family\": %" PRIu64
	       ", \"parent\": %" PRIu64 ", \"ino\": %" PRIu64 ", \"size\": %" PRIu64
	       ", \"obj_size\": %" PRIu32 ", \"copies\": %u, \"copies_set\": %u"
	       ", \"policy\": \"%s\", \"snapshots\": %zu", vol_cli_state(vi->state),
	       vi->vid, vi->family, vi->parent, vi->ino, vi->size, vi->obj_size, copies,
	       policy_copies(vi->copies), policy_str(vi->copies, pol, sizeof(pol)), nsnaps);
	if (objects >= 0)
		printf(", \"objects\": %" PRId64, objects);
	if (t && policy_is_ec(vi->copies)) {
		int64_t held, sealed = sealed_chunks(s, t, &held);

		if (sealed >= 0)
			printf(", \"chunks_written\": %" PRId64 ", \"chunks_sealed\": %" PRId64,
			       held, sealed);
	}
	printf(", \"ctime_ns\": %" PRId64 ", \"created\": \"%s\"}\n", vi->ctime_ns,
	       cli_time(vi->ctime_ns, when, sizeof(when)));
}

static int vol_create(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	const char *path = a->pos[0];
	char name[CLI_NAME_MAX + 1];
	struct sdfs_vol_info vi;
	struct sdfs_stat dir, st;
	uint64_t size;
	unsigned copies = 0;
	uint32_t obj_size = 0;
	int ret;

	if (a->val[0] && a->val[3])
		return cli_usage("sdfs vol create: --copies or --policy, not both");
	if ((ret = parse_size_arg("vol create", path, a->pos[1], &size)) ||
	    (a->val[0] && (ret = vol_cli_copies_arg(a->val[0], &copies))) ||
	    (a->val[3] && (ret = cli_policy_arg("vol create --policy", a->val[3], &copies))) ||
	    (a->val[1] && (ret = vol_cli_obj_size_arg(a->val[1], &obj_size))))
		return ret;
	if (!cli_path_ok("vol create", path))
		return 2;
	if (vol_cli_size_fits(s, "vol create", path, size, obj_size))
		return 1;
	if (copies && (ret = cli_copies_fit(s, "--copies", copies, !!a->val[2])))
		return ret;
	ret = cli_split_path(s, path, &dir, name);
	if (!ret && !name[0])
		ret = -EEXIST;
	if (!ret)
		ret = sdfs_vol_create(s, dir.ino, name, VOL_MODE, getuid(), getgid(), size,
				      copies, obj_size, &st);
	if (ret)
		return vol_cli_fail(s, "vol create", NULL, path, ret);
	if (cli->json) {
		ret = sdfs_vol_info(s, st.ino, NULL, &vi);
		if (ret)
			return vol_cli_fail(s, "vol create", NULL, path, ret);
		info_json(s, path, NULL, &vi, vol_cli_copies(s, vi.copies), 0, 0);
	}
	return 0;
}

/* Objects owned by @vid per the family tree; -1 if it cannot be read. */
static int64_t owned_objects(struct sdfs *s, uint64_t ino, uint64_t vid)
{
	struct sdfs_vol_info *m;
	int64_t objects = -1;
	size_t n;

	if (sdfs_vol_tree(s, ino, &m, &n))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (m[i].vid == vid)
			objects = (int64_t)m[i].objects;
	free(m);
	return objects;
}

static int vol_info(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	struct sdfs_vol_info vi, *snaps;
	struct vol_target t;
	size_t nsnaps = 0;
	int64_t objects;
	unsigned copies;
	char b1[32], b2[32], when[32];
	int ret;

	ret = vol_cli_target(s, "vol info", a->pos[0], VOL_T_SNAP | VOL_T_VOLUME, &t);
	if (ret)
		return ret;
	ret = sdfs_vol_info(s, t.st.ino, t.snap[0] ? t.snap : NULL, &vi);
	if (!ret)
		ret = sdfs_vol_snap_list(s, t.st.ino, &snaps, &nsnaps);
	if (ret)
		return vol_cli_fail(s, "vol info", &t, NULL, ret);
	free(snaps);
	objects = owned_objects(s, t.st.ino, vi.vid);
	copies = vol_cli_copies(s, vi.copies);
	if (cli->json) {
		info_json(s, t.path, &t, &vi, copies, nsnaps, objects);
		return 0;
	}
	printf("path       %s\n", t.path);
	if (t.snap[0])
		printf("snapshot   %s\n", t.snap);
	printf("state      %s\nvid        %" PRIu64 "\n", vol_cli_state(vi.state), vi.vid);
	printf("size       %s (%" PRIu64 " bytes)\n", cli_human(vi.size, b1, sizeof(b1)),
	       vi.size);
	if (objects >= 0)
		printf("objects    %" PRId64 " owned (%s)\n", objects,
		       cli_human((uint64_t)objects * vi.obj_size, b2, sizeof(b2)));
	printf("obj_size   %s\n", cli_human(vi.obj_size, b1, sizeof(b1)));
	printf("copies     %u%s\n", copies, vi.copies ? "" : " (the cluster's)");
	if (policy_is_ec(vi.copies)) {
		int64_t held, sealed = sealed_chunks(s, &t, &held);

		printf("policy     ec=%u+%u (chunks not written for a while are sealed "
		       "as stripes; %u copies while written)\n", policy_ec_k(vi.copies),
		       policy_ec_m(vi.copies), copies);
		if (sealed >= 0)
			printf("sealed     %" PRId64 " of %" PRId64 " chunks with data\n", sealed,
			       held);
	}
	printf("snapshots  %zu\n", nsnaps);
	printf("family     %" PRIu64 "\n", vi.family);
	if (vi.parent)
		printf("parent     %" PRIu64 "\n", vi.parent);
	printf("created    %s\n", cli_time(vi.ctime_ns, when, sizeof(when)));
	return 0;
}

static int vol_resize(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	const char *path = a->pos[0];
	struct vol_target t;
	struct sdfs_vol *v;
	uint64_t size, old;
	char b1[32], b2[32];
	int ret;

	if ((ret = parse_size_arg("vol resize", path, a->pos[1], &size)))
		return ret;
	ret = vol_cli_target(s, "vol resize", path, VOL_T_VOLUME, &t);
	if (ret)
		return ret;
	if (vol_cli_size_fits(s, "vol resize", path, size, t.st.obj_size))
		return 1;
	ret = sdfs_vol_open(s, t.st.ino, SDFS_VOL_WRITE | SDFS_VOL_GRACE, NULL, &v);
	if (ret)
		return vol_cli_fail(s, "vol resize", &t, NULL, ret);
	old = sdfs_vol_size(v);
	if (size < old && !a->val[0]) {
		sdfs_vol_close(v);
		return cli_fail("vol resize %s: refusing to shrink it from %s to %s without "
				"--shrink (its data past the new size is freed)", path,
				cli_human(old, b1, sizeof(b1)), cli_human(size, b2, sizeof(b2)));
	}
	ret = size == old ? 0 : sdfs_vol_resize(v, size);
	if (ret >= 0)
		ret = sdfs_vol_flush(v);
	sdfs_vol_close(v);
	if (ret < 0)
		return vol_cli_fail(s, "vol resize", &t, NULL, ret);
	if (cli->json) {
		printf("{\"path\": ");
		cli_json_str(stdout, path);
		printf(", \"old_size\": %" PRIu64 ", \"size\": %" PRIu64 "}\n", old, size);
	}
	return 0;
}

static int vol_clone(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	const char *newpath = a->pos[1];
	char name[CLI_NAME_MAX + 1];
	struct sdfs_stat dir, st;
	struct sdfs_vol_info vi;
	struct vol_target t;
	int ret;

	ret = vol_cli_target(s, "vol clone", a->pos[0], VOL_T_SNAP | VOL_T_VOLUME, &t);
	if (ret)
		return ret;
	if (!t.snap[0])
		return cli_fail("vol clone %s: name a snapshot to clone: %s@SNAP (see sdfs "
				"snap list %s)", t.path, t.path, t.path);
	if (!cli_path_ok("vol clone", newpath))
		return 2;
	ret = cli_split_path(s, newpath, &dir, name);
	if (!ret && !name[0])
		ret = -EEXIST;
	if (ret)
		return vol_cli_fail(s, "vol clone", NULL, newpath, ret);
	ret = sdfs_vol_clone(s, t.st.ino, t.snap, dir.ino, name, t.st.mode & 07777,
			     getuid(), getgid(), &st);
	if (ret == -EEXIST)
		return vol_cli_fail(s, "vol clone", NULL, newpath, ret);
	if (ret)
		return vol_cli_fail(s, "vol clone", &t, NULL, ret);
	if (cli->json) {
		ret = sdfs_vol_info(s, st.ino, NULL, &vi);
		if (ret)
			return vol_cli_fail(s, "vol clone", NULL, newpath, ret);
		info_json(s, newpath, NULL, &vi, vol_cli_copies(s, vi.copies), 0, 0);
	}
	return 0;
}

/* ---- vol tree ---- */

struct tree_row {
	const struct sdfs_vol_info *m;
	int depth;
	char prefix[256];       /* "|   `-- " */
	char label[VOL_CLI_PATH_MAX + 80];
};

struct tree {
	const struct sdfs_vol_info *m;
	size_t n;
	char *done;             /* member i placed */
	struct tree_row *rows;
	size_t nrows;
	uint64_t ino;           /* the file asked about */
	const char *path;
};

static int by_vid(const void *a, const void *b)
{
	const struct sdfs_vol_info *x = a, *y = b;

	return x->vid < y->vid ? -1 : x->vid > y->vid;
}

static void tree_label(const struct tree *tr, const struct sdfs_vol_info *m,
		       char *buf, size_t len)
{
	switch (m->state) {
	case SDFS_VOL_LIVE:
		if (m->ino == tr->ino)
			snprintf(buf, len, "%s", tr->path);
		else
			snprintf(buf, len, "clone (ino %" PRIu64 ")", m->ino);
		break;
	case SDFS_VOL_SNAP:
		if (m->ino == tr->ino)
			snprintf(buf, len, "@%s", m->name);
		else
			snprintf(buf, len, "@%s of ino %" PRIu64, m->name, m->ino);
		break;
	case SDFS_VOL_DELETED:
		snprintf(buf, len, "(deleted, reclaim pending)");
		break;
	default:
		snprintf(buf, len, "(%s)", vol_cli_state(m->state));
	}
}

/* Member @i and its descendants, depth first; @lead is what the rows
 * below draw for the levels above ("|   " or "    " each). */
static void tree_walk(struct tree *tr, size_t i, int depth, const char *lead, int last)
{
	struct tree_row *r = &tr->rows[tr->nrows++];
	char sub[256];
	size_t nkids = 0, seen = 0;

	tr->done[i] = 1;
	r->m = &tr->m[i];
	r->depth = depth;
	if (depth == 0) {
		r->prefix[0] = '\0';
		sub[0] = '\0';
	} else {
		snprintf(r->prefix, sizeof(r->prefix), "%s%s", lead, last ? "`-- " : "|-- ");
		snprintf(sub, sizeof(sub), "%s%s", lead, last ? "    " : "|   ");
	}
	tree_label(tr, r->m, r->label, sizeof(r->label));
	for (size_t k = 0; k < tr->n; k++)
		nkids += !tr->done[k] && tr->m[k].parent == r->m->vid;
	for (size_t k = 0; k < tr->n; k++) {
		if (tr->done[k] || tr->m[k].parent != r->m->vid)
			continue;
		seen++;
		tree_walk(tr, k, depth + 1, sub, seen == nkids);
	}
}

static int is_member(const struct tree *tr, uint64_t vid)
{
	for (size_t k = 0; k < tr->n; k++)
		if (tr->m[k].vid == vid)
			return 1;
	return 0;
}

static void tree_print(const struct tree *tr, int json)
{
	char pol[32];
	int wl = 4, wv = 3, ws = 4, wo = 7;
	char when[32], size[32], num[32];

	if (json) {
		printf("[");
		for (size_t i = 0; i < tr->nrows; i++) {
			const struct sdfs_vol_info *m = tr->rows[i].m;

			printf("%s{\"vid\": %" PRIu64 ", \"parent\": %" PRIu64 ", \"family\": %"
			       PRIu64 ", \"ino\": %" PRIu64 ", \"state\": \"%s\", \"name\": ",
			       i ? ", " : "", m->vid, m->parent, m->family, m->ino,
			       vol_cli_state(m->state));
			if (m->state == SDFS_VOL_SNAP)
				cli_json_str(stdout, m->name);
			else
				printf("null");
			printf(", \"path\": ");
			if (m->state == SDFS_VOL_LIVE && m->ino == tr->ino)
				cli_json_str(stdout, tr->path);
			else
				printf("null");
			printf(", \"depth\": %d, \"size\": %" PRIu64 ", \"objects\": %" PRIu64
			       ", \"obj_size\": %" PRIu32 ", \"copies\": %u, \"policy\": "
			       "\"%s\", \"ctime_ns\": %" PRId64 "}", tr->rows[i].depth, m->size,
			       m->objects, m->obj_size, policy_copies(m->copies),
			       policy_str(m->copies, pol, sizeof(pol)), m->ctime_ns);
		}
		printf("]\n");
		return;
	}
	for (size_t i = 0; i < tr->nrows; i++) {
		const struct tree_row *r = &tr->rows[i];
		int w;

		w = (int)(strlen(r->prefix) + strlen(r->label));
		wl = w > wl ? w : wl;
		w = snprintf(num, sizeof(num), "%" PRIu64, r->m->vid);
		wv = w > wv ? w : wv;
		w = (int)strlen(cli_human(r->m->size, size, sizeof(size)));
		ws = w > ws ? w : ws;
		w = snprintf(num, sizeof(num), "%" PRIu64, r->m->objects);
		wo = w > wo ? w : wo;
	}
	printf("%-*s  %*s  %-8s  %*s  %*s  %s\n", wl, "TREE", wv, "VID", "STATE", ws, "SIZE",
	       wo, "OBJECTS", "CREATED");
	for (size_t i = 0; i < tr->nrows; i++) {
		const struct tree_row *r = &tr->rows[i];
		int pad = wl - (int)strlen(r->prefix);

		printf("%s%-*s  %*" PRIu64 "  %-8s  %*s  %*" PRIu64 "  %s\n", r->prefix, pad,
		       r->label, wv, r->m->vid, vol_cli_state(r->m->state), ws,
		       cli_human(r->m->size, size, sizeof(size)), wo, r->m->objects,
		       cli_time(r->m->ctime_ns, when, sizeof(when)));
	}
	/* one policy per family (its members copy the first's) */
	if (tr->nrows && policy_is_ec(tr->rows[0].m->copies))
		printf("policy %s: cold chunks sealed as stripes, %u copies while "
		       "written\n", policy_str(tr->rows[0].m->copies, pol, sizeof(pol)),
		       policy_copies(tr->rows[0].m->copies));
}

static int vol_tree(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	struct sdfs_vol_info *m;
	struct vol_target t;
	struct tree tr;
	size_t n;
	int ret;

	ret = vol_cli_target(s, "vol tree", a->pos[0], VOL_T_VOLUME, &t);
	if (ret)
		return ret;
	ret = sdfs_vol_tree(s, t.st.ino, &m, &n);
	if (ret)
		return vol_cli_fail(s, "vol tree", &t, NULL, ret);
	qsort(m, n, sizeof(*m), by_vid);
	memset(&tr, 0, sizeof(tr));
	tr.m = m;
	tr.n = n;
	tr.ino = t.st.ino;
	tr.path = t.path;
	tr.done = calloc(n + 1, 1);
	tr.rows = calloc(n + 1, sizeof(*tr.rows));
	if (!tr.done || !tr.rows) {
		ret = cli_fail("vol tree %s: out of memory", t.path);
		goto out;
	}
	/* Roots: no parent, or a parent no longer in the family list. */
	for (size_t i = 0; i < n; i++)
		if (!tr.done[i] && (!m[i].parent || !is_member(&tr, m[i].parent)))
			tree_walk(&tr, i, 0, "", 1);
	for (size_t i = 0; i < n; i++)  /* a parent loop: cannot be, but show it */
		if (!tr.done[i])
			tree_walk(&tr, i, 0, "", 1);
	tree_print(&tr, cli->json);
out:
	free(tr.done);
	free(tr.rows);
	free(m);
	return ret;
}

/* ---- vol convert ---- */

static volatile sig_atomic_t convert_stop;

static void convert_signal(int sig)
{
	(void)sig;
	convert_stop = 1;
}

/* The extended attributes of @from onto @to. */
static int copy_xattrs(struct sdfs *s, uint64_t from, uint64_t to)
{
	ssize_t len = sdfs_ns_listxattr(s, from, NULL, 0);
	char *names, *val = NULL;
	int ret = 0;

	if (len == -EOPNOTSUPP || len == 0)
		return 0;
	if (len < 0)
		return (int)len;
	names = malloc((size_t)len);
	if (!names)
		return -ENOMEM;
	len = sdfs_ns_listxattr(s, from, names, (size_t)len);
	for (ssize_t off = 0; len > 0 && off < len && !ret; off += strlen(names + off) + 1) {
		ssize_t vlen = sdfs_ns_getxattr(s, from, names + off, NULL, 0);

		if (vlen == -ENODATA)
			continue;       /* removed meanwhile */
		if (vlen < 0) {
			ret = (int)vlen;
			break;
		}
		free(val);
		val = malloc((size_t)vlen + 1);
		if (!val) {
			ret = -ENOMEM;
			break;
		}
		vlen = sdfs_ns_getxattr(s, from, names + off, val, (size_t)vlen);
		ret = vlen < 0 ? (int)vlen :
		      sdfs_ns_setxattr(s, to, names + off, val, (size_t)vlen, 0);
	}
	if (len < 0)
		ret = (int)len;
	free(val);
	free(names);
	return ret;
}

/* Copy the data of plain file @st into volume @ino, skipping zero pieces. */
static int convert_copy(struct sdfs *s, const struct sdfs_stat *st, uint64_t ino,
			uint64_t *written)
{
	struct sdfs_vol_info vi;
	struct progress p;
	struct sdfs_vol *v;
	char *buf;
	int ret;

	ret = sdfs_vol_open(s, ino, SDFS_VOL_WRITE | SDFS_VOL_GRACE, NULL, &v);
	if (ret)
		return ret;
	sdfs_vol_get_info(v, &vi);
	buf = malloc(vi.obj_size);
	if (!buf) {
		sdfs_vol_close(v);
		return -ENOMEM;
	}
	progress_init(&p, "convert", st->size);
	*written = 0;
	for (uint64_t off = 0; off < st->size && !ret; ) {
		size_t len = st->size - off < vi.obj_size ? (size_t)(st->size - off) : vi.obj_size;
		ssize_t n = sdfs_file_pread(s, st, buf, len, off);

		if (convert_stop)
			ret = -EINTR;
		else if (n < 0)
			ret = (int)n;
		else if (n == 0)
			ret = -ESTALE;  /* shorter than its size said: changed */
		else if (!cli_is_zero(buf, (size_t)n) &&
			 (ret = sdfs_vol_pwrite(v, buf, (size_t)n, off)) >= 0)
			*written += (uint64_t)n;
		if (ret > 0)
			ret = 0;
		if (n > 0)
			off += (uint64_t)n;
		progress_show(&p, off);
	}
	if (!ret)
		ret = sdfs_vol_flush(v);
	if (ret < 0) {
		progress_abort(&p);
	} else {
		progress_end(&p, st->size);
		ret = 0;
	}
	sdfs_vol_close(v);
	free(buf);
	return ret;
}

static int vol_convert(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	const char *path = a->pos[0];
	char name[CLI_NAME_MAX + 1], tmp[CLI_NAME_MAX + 1];
	struct sdfs_stat dir, st, now, vst;
	struct sigaction sa = { .sa_handler = convert_signal }, old_int, old_term;
	uint64_t written = 0;
	uint32_t obj_size;
	int ret, max;

	if (!cli_path_ok("vol convert", path))
		return 2;
	ret = cli_split_path(s, path, &dir, name);
	if (!ret && !name[0])
		ret = -EISDIR;
	if (!ret)
		ret = sdfs_ns_lookup(s, dir.ino, name, &st);
	if (ret)
		return vol_cli_fail(s, "vol convert", NULL, path, ret);
	if (S_ISDIR(st.mode))
		return cli_fail("vol convert %s: is a directory (convert the files in it)", path);
	if (S_ISLNK(st.mode))
		return cli_fail("vol convert %s: is a symbolic link (convert the file it "
				"points to)", path);
	if (!S_ISREG(st.mode))
		return cli_fail("vol convert %s: not a regular file", path);
	if (st.layout == SDFS_LAYOUT_VOLUME)
		return cli_fail("vol convert %s: is a volume file already", path);
	if (st.layout != SDFS_LAYOUT_FILE)
		return cli_fail("vol convert %s: unknown layout %u", path, st.layout);
	if (st.nlink > 1)
		return cli_fail("vol convert %s: has %" PRIu32 " hard links (the new file "
				"would replace only this one; remove the others first)", path,
				st.nlink);
	/* The file's object size if a volume can use it, else the cluster's. */
	obj_size = st.obj_size;
	if (obj_size < 4096 || (obj_size & (obj_size - 1)) || obj_size > sdfs_obj_size(s))
		obj_size = 0;
	if (vol_cli_size_fits(s, "vol convert", path, st.size, obj_size))
		return 1;
	max = CLI_NAME_MAX - (int)strlen(".sdfs-convert-") - 1 - 20;
	snprintf(tmp, sizeof(tmp), CONVERT_TMP_FMT, max, name, (long)getpid());

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	ret = sdfs_vol_create(s, dir.ino, tmp, 0600, st.uid, st.gid, st.size, st.copies,
			      obj_size, &vst);
	if (ret) {
		ret = vol_cli_fail(s, "vol convert", NULL, path, ret);
		goto out_signals;
	}
	ret = convert_copy(s, &st, vst.ino, &written);
	if (!ret)
		ret = copy_xattrs(s, st.ino, vst.ino);
	/* A writer during the copy (through a mount) would be lost by the
	 * rename: compare what the copy started from. */
	if (!ret && (ret = sdfs_ns_getattr(s, st.ino, &now)) == 0 &&
	    (now.size != st.size || now.mtime_ns != st.mtime_ns || now.nlink != st.nlink))
		ret = -ESTALE;
	if (!ret) {
		struct sdfs_setattr set = {
			.mask = SDFS_SETATTR_MODE | SDFS_SETATTR_UID | SDFS_SETATTR_GID |
				SDFS_SETATTR_ATIME | SDFS_SETATTR_MTIME,
			.mode = st.mode & 07777, .uid = st.uid, .gid = st.gid,
			.atime_ns = st.atime_ns, .mtime_ns = st.mtime_ns,
		};

		ret = sdfs_ns_setattr(s, vst.ino, &set, NULL);
	}
	if (!ret)
		ret = sdfs_ns_rename(s, dir.ino, tmp, dir.ino, name, 0);
	if (ret) {
		sdfs_ns_unlink(s, dir.ino, tmp);
		if (ret == -ESTALE)
			ret = cli_fail("vol convert %s: it changed while being converted; "
				       "nothing was changed (stop its writers and retry)", path);
		else if (ret == -EINTR)
			ret = cli_fail("vol convert %s: interrupted; nothing was changed", path);
		else
			ret = vol_cli_fail(s, "vol convert", NULL, path, ret);
		goto out_signals;
	}
	if (cli->json) {
		printf("{\"path\": ");
		cli_json_str(stdout, path);
		printf(", \"ino\": %" PRIu64 ", \"size\": %" PRIu64 ", \"written\": %" PRIu64
		       "}\n", vst.ino, st.size, written);
	}
out_signals:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return ret;
}

struct seal_bar {
	struct progress p;
	uint32_t obj_size;
};

/* chunks looked at -> bytes of the volume gone through */
static void seal_progress(void *arg, uint64_t done, uint64_t total)
{
	struct seal_bar *b = arg;

	(void)total;
	progress_show(&b->p, done * b->obj_size);
}

/* Seal every replicated chunk of the live state now (an erasure-coded
 * volume; docs/ec.md "EC volumes"). */
static int vol_seal(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	const char *path = a->pos[0];
	struct sdfs_vol_seal_stat st;
	struct sdfs_vol_info vi;
	struct vol_target t;
	struct seal_bar bar;
	struct sdfs_vol *v;
	char b1[32];
	int64_t t0;
	int ret;

	ret = vol_cli_target(s, "vol seal", path, VOL_T_VOLUME, &t);
	if (ret)
		return ret;
	if (!policy_is_ec(t.st.copies))
		return cli_fail("vol seal %s: not an erasure-coded volume (vol create "
				"--policy ec=K+M)", path);
	ret = sdfs_vol_open(s, t.st.ino, SDFS_VOL_WRITE | SDFS_VOL_GRACE, NULL, &v);
	if (ret)
		return vol_cli_fail(s, "vol seal", &t, NULL, ret);
	sdfs_vol_get_info(v, &vi);
	bar.obj_size = vi.obj_size;
	progress_init(&bar.p, "seal", vi.size);
	t0 = cli_mono_ms();
	ret = sdfs_vol_seal(v, seal_progress, &bar, &st);
	sdfs_vol_close(v);
	if (ret) {
		progress_abort(&bar.p);
		if (ret == -ENODEV)
			return cli_fail("vol seal %s: the cluster cannot place %u+%u strips "
					"(fewer nodes or zones than k+m); nothing more sealed",
					path, policy_ec_k(vi.copies), policy_ec_m(vi.copies));
		return vol_cli_fail(s, "vol seal", &t, NULL, ret);
	}
	progress_end(&bar.p, vi.size);
	t0 = cli_mono_ms() - t0;
	if (cli->json) {
		printf("{\"path\": ");
		cli_json_str(stdout, path);
		printf(", \"chunks\": %" PRIu64 ", \"sealed\": %" PRIu64 ", \"skipped\": %"
		       PRIu64 ", \"bytes\": %" PRIu64 ", \"ms\": %" PRId64 "}\n", st.chunks,
		       st.sealed, st.skipped, st.bytes, t0);
	} else {
		printf("%s: %" PRIu64 " chunk%s sealed (%s) in %.1f s", path, st.sealed,
		       st.sealed == 1 ? "" : "s", cli_human(st.bytes, b1, sizeof(b1)),
		       (double)t0 / 1000);
		if (st.skipped)
			printf(", %" PRIu64 " being written skipped", st.skipped);
		printf("\n");
	}
	return 0;
}

static const struct vol_cmd vol_cmds[] = {
	{ "create", { "--copies=", "--obj-size=", "--force", "--policy=", NULL }, 2, 2,
	  "sdfs vol create PATH SIZE [--copies N|--policy copies=N|ec=K+M [--force]] "
	  "[--obj-size SIZE] "
	  "[--json]",
	  vol_create },
	{ "info", { NULL }, 1, 1, "sdfs vol info PATH[@SNAP] [--json]", vol_info },
	{ "import", { "--size=", "--copies=", "--obj-size=", "--diff", "--force", NULL }, 1, 1,
	  "sdfs vol import [--diff] PATH [--size SIZE] [--copies N [--force]] [--obj-size SIZE] "
	  "< IMAGE|DIFF", vol_stream_import },
	{ "export", { "--snap=", "--from-snap=", NULL }, 1, 1,
	  "sdfs vol export PATH[@SNAP] [--snap SNAP] [--from-snap A] > OUT",
	  vol_stream_export },
	{ "convert", { NULL }, 1, 1, "sdfs vol convert PATH", vol_convert },
	{ "resize", { "--shrink", NULL }, 2, 2, "sdfs vol resize PATH SIZE [--shrink]",
	  vol_resize },
	{ "clone", { NULL }, 2, 2, "sdfs vol clone PATH@SNAP NEWPATH", vol_clone },
	{ "tree", { NULL }, 1, 1, "sdfs vol tree PATH [--json]", vol_tree },
	{ "seal", { NULL }, 1, 1, "sdfs vol seal PATH [--json]", vol_seal },
};

int cmd_vol(struct cli *cli)
{
	return vol_cli_run(cli, "vol", "sdfs vol create|info|import|export|convert|"
			   "resize|clone|tree|seal ...", vol_cmds,
			   sizeof(vol_cmds) / sizeof(vol_cmds[0]));
}
