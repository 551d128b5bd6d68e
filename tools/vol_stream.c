/*
 * vol_stream.c - sdfs vol import|export: a volume's bytes to and from
 * a raw image on stdin/stdout, and diff streams between two snapshots
 * (the format: vol_diff.c).
 *
 * Thin both ways: import skips all-zero pieces of the image (a piece is
 * one chunk, obj_size bytes at a chunk boundary) and export does not
 * read never-written chunks; a regular file as stdout stays sparse.
 * Not here: the diff stream's bytes (vol_diff.c), naming volumes
 * (vol_cli.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/progress.h"
#include "tools/vol_cli.h"
#include "tools/vol_diff.h"

/* Where export writes: stdout, kept sparse if it is a regular file. */
struct sink {
	int fd;
	int sparse;             /* regular file, not O_APPEND: seek over holes */
	off_t base;             /* its offset when we started */
	uint64_t old_size;      /* its size then: holes below it are written */
	uint64_t pos;           /* bytes of the volume emitted so far */
	const char *zeros;      /* obj_size zero bytes */
};

static void sink_init(struct sink *k, int fd, const char *zeros)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	memset(k, 0, sizeof(*k));
	k->fd = fd;
	k->zeros = zeros;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fl >= 0 && !(fl & O_APPEND)) {
		k->base = lseek(fd, 0, SEEK_CUR);
		k->sparse = k->base >= 0;
		k->old_size = (uint64_t)st.st_size;
	}
}

static int sink_data(struct sink *k, const void *buf, size_t len)
{
	int ret = cli_write_all(k->fd, buf, len);

	if (!ret)
		k->pos += len;
	return ret;
}

/* @len zero bytes: a seek where the file has nothing yet, else zeros. */
static int sink_zero(struct sink *k, size_t len)
{
	if (k->sparse && (uint64_t)k->base + k->pos >= k->old_size) {
		if (lseek(k->fd, (off_t)len, SEEK_CUR) < 0)
			return -errno;
		k->pos += len;
		return 0;
	}
	return sink_data(k, k->zeros, len);
}

/* A seek past the end makes no bytes: the size comes from a truncate. */
static int sink_finish(struct sink *k)
{
	struct stat st;
	uint64_t end = (uint64_t)k->base + k->pos;

	if (!k->sparse || fstat(k->fd, &st) || (uint64_t)st.st_size >= end)
		return 0;
	return ftruncate(k->fd, (off_t)end) ? -errno : 0;
}

static int export_full(struct sdfs *s, const struct vol_target *t, struct sdfs_vol *v)
{
	struct sdfs_vol_info vi;
	struct progress p;
	struct sink k;
	uint64_t size = sdfs_vol_size(v);
	char *buf, *zeros;
	int ret = 0;

	sdfs_vol_get_info(v, &vi);
	buf = malloc(vi.obj_size);
	zeros = calloc(1, vi.obj_size);
	if (!buf || !zeros) {
		free(buf);
		free(zeros);
		return cli_fail("vol export %s: out of memory", t->arg);
	}
	sink_init(&k, 1, zeros);
	progress_init(&p, "export", size);
	for (uint64_t i = 0, off = 0; off < size; i++, off += vi.obj_size) {
		size_t len = size - off < vi.obj_size ? (size_t)(size - off) : vi.obj_size;
		ssize_t n = 0;

		if (sdfs_vol_chunk_owner(v, i)) {
			n = sdfs_vol_pread(v, buf, len, off);
			if (n < 0) {
				progress_abort(&p);
				ret = vol_cli_fail(s, "vol export", t, NULL, (int)n);
				goto out;
			}
			memset(buf + n, 0, len - (size_t)n);
		}
		if (n && !cli_is_zero(buf, len))
			ret = sink_data(&k, buf, len);
		else
			ret = sink_zero(&k, len);
		if (ret) {
			progress_abort(&p);
			ret = cli_fail("vol export %s: write output: %s", t->arg, strerror(-ret));
			goto out;
		}
		progress_show(&p, off + len);
	}
	ret = sink_finish(&k);
	if (ret) {
		progress_abort(&p);
		ret = cli_fail("vol export %s: write output: %s", t->arg, strerror(-ret));
		goto out;
	}
	progress_end(&p, size);
out:
	free(buf);
	free(zeros);
	return ret;
}

static int export_diff(struct sdfs *s, const struct vol_target *t, const char *from_snap)
{
	struct vol_target a = *t;
	struct sdfs_vol *va = NULL, *vb = NULL;
	struct progress p;
	char err[512];
	int ret, out_err;

	snprintf(a.snap, sizeof(a.snap), "%s", from_snap);
	ret = vol_cli_open(s, &a, 0, &va);
	if (ret)
		return vol_cli_fail(s, "vol export", &a, NULL, ret);
	ret = vol_cli_open(s, t, 0, &vb);
	if (ret) {
		sdfs_vol_close(va);
		return vol_cli_fail(s, "vol export", t, NULL, ret);
	}
	progress_init(&p, "export", sdfs_vol_size(vb));
	ret = vol_diff_write(va, vb, 1, &p, NULL, NULL, &out_err, err, sizeof(err));
	if (ret) {
		progress_abort(&p);
		ret = cli_fail("vol export %s: %s", t->arg, err);
	}
	sdfs_vol_close(va);
	sdfs_vol_close(vb);
	return ret;
}

int vol_stream_export(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	const char *path = a->pos[0], *snap = a->val[0], *from = a->val[1];
	struct vol_target t;
	struct sdfs_vol *vol;
	int ret;

	(void)cli;
	cli_stdout_is_data();
	if ((snap && !vol_cli_snap_ok("vol export --snap", snap)) ||
	    (from && !vol_cli_snap_ok("vol export --from-snap", from)))
		return 2;
	ret = vol_cli_target(s, "vol export", path, VOL_T_SNAP | VOL_T_VOLUME, &t);
	if (ret)
		return ret;
	if (snap && t.snap[0] && strcmp(snap, t.snap))
		return cli_bad("vol export %s: two snapshots named (@%s and --snap %s)",
			       path, t.snap, snap);
	if (snap)
		snprintf(t.snap, sizeof(t.snap), "%s", snap);
	if (from && !t.snap[0])
		return cli_bad("vol export %s: --from-snap needs --snap (a diff is "
			       "between two snapshots)", path);
	if (isatty(1))
		return cli_fail("vol export %s: stdout is a terminal (redirect it to a "
				"file or a pipe)", path);
	if (from)
		return export_diff(s, &t, from);
	ret = vol_cli_open(s, &t, 0, &vol);
	if (ret)
		return vol_cli_fail(s, "vol export", &t, NULL, ret);
	ret = export_full(s, &t, vol);
	sdfs_vol_close(vol);
	return ret;
}

/* What import learned about stdin. */
struct source {
	int sized;              /* a regular file: its size is known */
	uint64_t size;          /* bytes from the current offset to its end */
	off_t start;            /* the offset (regular files) */
};

static void source_init(struct source *src)
{
	struct stat st;

	memset(src, 0, sizeof(*src));
	src->start = -1;
	if (fstat(0, &st) || !S_ISREG(st.st_mode))
		return;
	src->start = lseek(0, 0, SEEK_CUR);
	if (src->start < 0 || (uint64_t)src->start > (uint64_t)st.st_size)
		return;
	src->sized = 1;
	src->size = (uint64_t)st.st_size - (uint64_t)src->start;
}

/* The options of a new volume, and what import did. */
struct import_opts {
	uint64_t size;          /* --size; 0: none */
	unsigned copies;        /* --copies; 0: the cluster's */
	uint32_t obj_size;      /* --obj-size; 0: the cluster's */
};

/* A volume has a size: an empty image (0 bytes on stdin) makes none,
 * and it would shrink one that exists to nothing. */
#define EMPTY_IMAGE "the image on stdin is empty (0 bytes); nothing was imported"

/* Copy stdin into @v from offset 0: all-zero pieces are skipped, or
 * punched where the volume had data (@fresh: it has none), and pieces
 * the volume holds already are skipped too, so that an image imported
 * again over a snapshotted volume shares its unchanged chunks with the
 * snapshot. The bytes read into *@done, written into *@written. An
 * empty stdin fails before anything is written. */
static int import_copy(struct sdfs *s, const struct vol_target *t, struct sdfs_vol *v,
		       int fresh, uint64_t total, uint64_t *done, uint64_t *written)
{
	struct sdfs_vol_info vi;
	struct progress p;
	uint64_t off = 0;
	char *buf, *cur;
	int ret = 0;

	sdfs_vol_get_info(v, &vi);
	buf = malloc(vi.obj_size);
	cur = fresh ? NULL : malloc(vi.obj_size);
	if (!buf || (!fresh && !cur)) {
		free(buf);
		return cli_fail("vol import %s: out of memory", t->path);
	}
	progress_init(&p, "import", total);
	*written = 0;
	for (;;) {
		ssize_t n = cli_read_full(0, buf, vi.obj_size);

		if (n < 0) {
			progress_abort(&p);
			ret = cli_fail("vol import %s: read stdin: %s", t->path, strerror((int)-n));
			break;
		}
		if (n == 0 && off == 0) {
			progress_abort(&p);
			ret = cli_fail("vol import %s: %s", t->path, EMPTY_IMAGE);
			break;
		}
		if (n == 0)
			break;
		int held = !fresh && sdfs_vol_chunk_owner(v, off / vi.obj_size);
		if (held && !cli_is_zero(buf, (size_t)n)) {
			ssize_t got = sdfs_vol_pread(v, cur, (size_t)n, off);

			if (got < 0)
				ret = (int)got;
			else if (got == n && !memcmp(cur, buf, (size_t)n))
				held = -1;      /* the same bytes: leave it */
		}
		if (ret < 0 || held < 0) {
			/* an error, or nothing to do */
		} else if (!cli_is_zero(buf, (size_t)n)) {
			ret = sdfs_vol_pwrite(v, buf, (size_t)n, off);
			*written += (uint64_t)n;
		} else if (held) {
			ret = sdfs_vol_punch(v, off, (uint64_t)n);
		}
		if (ret < 0) {
			progress_abort(&p);
			ret = vol_cli_fail(s, "vol import", t, NULL, ret);
			break;
		}
		ret = 0;
		off += (uint64_t)n;
		progress_show(&p, off);
		if ((size_t)n < vi.obj_size)
			break;
	}
	if (!ret)
		progress_end(&p, off);
	*done = off;
	free(buf);
	free(cur);
	return ret;
}

static int import_raw(struct cli *cli, struct sdfs *s, const char *path,
		      const struct import_opts *o)
{
	char name[CLI_NAME_MAX + 1] = "";
	struct sdfs_stat dir = { 0 };
	struct vol_target t;
	struct source src;
	struct sdfs_vol *v;
	uint64_t old_size, done = 0, written = 0, final;
	int created = 0, ret;

	if (!cli_path_ok("vol import", path))
		return 2;
	if (isatty(0))
		return cli_fail("vol import %s: stdin is a terminal (redirect an image "
				"into it)", path);
	source_init(&src);
	if (src.sized && src.size == 0)
		return cli_fail("vol import %s: %s", path, EMPTY_IMAGE);
	memset(&t, 0, sizeof(t));
	t.arg = path;
	snprintf(t.path, sizeof(t.path), "%s", path);
	ret = sdfs_ns_resolve(s, path, 1, &t.st);
	if (ret == -ENOENT) {
		uint64_t size = src.size > o->size ? src.size : o->size;

		if (vol_cli_size_fits(s, "vol import", path, size, o->obj_size))
			return 1;
		ret = cli_split_path(s, path, &dir, name);
		if (!ret && !name[0])
			ret = -EISDIR;
		if (!ret)
			ret = sdfs_vol_create(s, dir.ino, name, 0644, getuid(), getgid(), size,
					      o->copies, o->obj_size, &t.st);
		created = !ret;
	} else if (!ret) {
		ret = vol_cli_target(s, "vol import", path, VOL_T_VOLUME, &t);
		if (ret)
			return ret;
		if (o->copies || o->obj_size)
			return cli_fail("vol import %s: exists already; --copies and "
					"--obj-size are for a new volume", path);
	}
	if (ret)
		return vol_cli_fail(s, "vol import", NULL, path, ret);
	ret = sdfs_vol_open(s, t.st.ino, SDFS_VOL_WRITE, NULL, &v);
	if (ret) {
		ret = vol_cli_fail(s, "vol import", &t, NULL, ret);
		goto out_remove;
	}
	old_size = sdfs_vol_size(v);
	ret = import_copy(s, &t, v, created, src.sized ? src.size : o->size, &done, &written);
	if (ret)
		goto out_close;
	/* The volume is the image now: nothing of its old bytes past the
	 * image's end, and --size if that is more. */
	final = done > o->size ? done : o->size;
	if (!created && old_size > done) {
		uint64_t end = old_size < final ? old_size : final;

		ret = end > done ? sdfs_vol_punch(v, done, end - done) : 0;
	}
	if (ret >= 0 && sdfs_vol_size(v) != final)
		ret = sdfs_vol_resize(v, final);
	if (ret >= 0)
		ret = sdfs_vol_flush(v);
	if (ret < 0) {
		ret = vol_cli_fail(s, "vol import", &t, NULL, ret);
		goto out_close;
	}
	sdfs_vol_close(v);
	if (cli->json) {
		printf("{\"path\": ");
		cli_json_str(stdout, path);
		printf(", \"ino\": %" PRIu64 ", \"size\": %" PRIu64 ", \"read\": %" PRIu64
		       ", \"written\": %" PRIu64 ", \"created\": %s}\n", t.st.ino, final, done,
		       written, created ? "true" : "false");
	}
	return 0;
out_close:
	sdfs_vol_close(v);
out_remove:
	/* A volume this import made is removed with its partial data. */
	if (created)
		sdfs_ns_unlink(s, dir.ino, name);
	return ret;
}

static int import_diff(struct cli *cli, struct sdfs *s, const char *path)
{
	struct vol_diff_hdr h;
	struct vol_target t;
	struct sdfs_vol_info vi;
	struct sdfs_vol *v;
	struct progress p;
	struct source src;
	uint64_t records = 0, size;
	char err[512], a[32], b[32];
	int ret, vol_err = 0;

	ret = vol_cli_target(s, "vol import --diff", path, VOL_T_VOLUME, &t);
	if (ret)
		return ret;
	if (isatty(0))
		return cli_fail("vol import --diff %s: stdin is a terminal (redirect a "
				"diff stream into it)", path);
	source_init(&src);
	ret = vol_diff_read_hdr(0, &h, err, sizeof(err));
	if (ret)
		return cli_fail("vol import --diff %s: %s", path, err);
	ret = sdfs_vol_open(s, t.st.ino, SDFS_VOL_WRITE, NULL, &v);
	if (ret)
		return vol_cli_fail(s, "vol import --diff", &t, NULL, ret);
	sdfs_vol_get_info(v, &vi);
	size = sdfs_vol_size(v);
	if (vi.obj_size != h.obj_size) {
		ret = cli_fail("vol import --diff %s: the diff is in chunks of %s, the "
			       "volume's objects are %s", path,
			       cli_human(h.obj_size, a, sizeof(a)),
			       cli_human(vi.obj_size, b, sizeof(b)));
		goto out;
	}
	/* A copy of A, or one the diff was applied to before (in part). */
	if (size != h.from_size && size != h.to_size) {
		ret = cli_fail("vol import --diff %s: the volume has %" PRIu64 " bytes; the "
			       "diff goes from snapshot '%s' (%" PRIu64 " bytes) to '%s' (%"
			       PRIu64 " bytes): apply it to a copy of '%s'", path, size,
			       h.from_name, h.from_size, h.to_name, h.to_size, h.from_name);
		goto out;
	}
	/* From a file, check the whole stream before changing anything;
	 * from a pipe, each record is checked before it is applied. */
	if (src.sized) {
		progress_init(&p, "verify", h.to_size);
		ret = vol_diff_apply(0, &h, NULL, &p, NULL, &vol_err, err, sizeof(err));
		if (!ret && lseek(0, src.start + VOL_DIFF_HDR_SIZE, SEEK_SET) < 0) {
			ret = -errno;
			snprintf(err, sizeof(err), "seek stdin: %s", strerror(errno));
		}
		progress_end(&p, h.to_size);
		if (ret) {
			ret = cli_fail("vol import --diff %s: %s", path, err);
			goto out;
		}
	}
	if (h.to_size != size) {
		ret = sdfs_vol_resize(v, h.to_size);
		if (ret < 0) {
			ret = vol_cli_fail(s, "vol import --diff", &t, NULL, ret);
			goto out;
		}
	}
	progress_init(&p, "apply", h.to_size);
	ret = vol_diff_apply(0, &h, v, &p, &records, &vol_err, err, sizeof(err));
	if (ret && !vol_err) {
		progress_abort(&p);
		if (records)    /* from a pipe: the records before it are in */
			ret = cli_fail("vol import --diff %s: %s (%" PRIu64 " records were "
				       "applied before it; apply an intact diff again)",
				       path, err, records);
		else
			ret = cli_fail("vol import --diff %s: %s", path, err);
		goto out;
	}
	if (!ret)
		ret = sdfs_vol_flush(v);
	if (ret < 0) {
		progress_abort(&p);
		ret = vol_cli_fail(s, "vol import --diff", &t, NULL, ret);
		goto out;
	}
	progress_end(&p, h.to_size);
	if (cli->json) {
		printf("{\"path\": ");
		cli_json_str(stdout, path);
		printf(", \"from\": ");
		cli_json_str(stdout, h.from_name);
		printf(", \"to\": ");
		cli_json_str(stdout, h.to_name);
		printf(", \"size\": %" PRIu64 ", \"records\": %" PRIu64 "}\n", h.to_size,
		       records);
	}
	ret = 0;
out:
	sdfs_vol_close(v);
	return ret;
}

int vol_stream_import(struct cli *cli, struct sdfs *s, const struct vol_args *a)
{
	struct import_opts o = { 0 };
	const char *path = a->pos[0];
	int ret;

	if (a->val[0] && cli_parse_size(a->val[0], &o.size))
		return cli_bad("--size must be a size like 10G or 512M, not '%s'", a->val[0]);
	if (a->val[1] && (ret = vol_cli_copies_arg(a->val[1], &o.copies)))
		return ret;
	if (a->val[2] && (ret = vol_cli_obj_size_arg(a->val[2], &o.obj_size)))
		return ret;
	if (a->val[3] && (a->val[0] || a->val[1] || a->val[2]))
		return cli_bad("vol import --diff: --size, --copies and --obj-size do not "
			       "apply to a diff");
	if (o.copies && (ret = cli_copies_fit(s, "--copies", o.copies, !!a->val[4])))
		return ret;
	return a->val[3] ? import_diff(cli, s, path) : import_raw(cli, s, path, &o);
}
