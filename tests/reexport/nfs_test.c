/*
 * nfs_test.c - re-exporting an sdfs mount over NFSv3 and NFSv4 with
 * nfs-ganesha (FSAL_VFS), checked with libnfs-utils (nfs-ls, nfs-cat,
 * nfs-cp) and rx-nfs (rx_nfs.c: handles, rename, unlink, mkdir, pwrite,
 * truncate).
 * Writes go over NFSv3 (libnfs 4.0 sends no NFSv4 WRITE), the rest over
 * NFSv4. The gateway and its rpcbind run in namespaces of their own
 * (rx.h). docs/reexport.md has the configuration and why. Skipped when
 * ganesha.nfsd, rpcbind or nfs-ls is missing.
 */
#include "tests/reexport/rx.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static struct tcluster *tc;
static struct rx_gw gw;

static void setup(void)
{
	if (!rx_have("ganesha.nfsd") || !rx_have("rpcbind") || !rx_have("nfs-ls") ||
	    !rx_have("nfs-cat") || !rx_have("nfs-cp"))
		cr_skip_test("needs ganesha.nfsd (nfs-ganesha, nfs-ganesha-vfs), rpcbind "
			     "and nfs-ls/nfs-cat/nfs-cp (libnfs-utils)");
	tc = rx_start();
	rx_nfs_start(tc, &gw);
}

static void teardown(void)
{
	rx_gw_stop(&gw);
	tcluster_stop(tc);
	tc = NULL;
}

TestSuite(nfs, .init = setup, .fini = teardown, .timeout = 900);

static const char *rx_nfs_bin(void)
{
	const char *b = getenv("RX_NFS");

	cr_assert(b && *b, "RX_NFS is not set (run through meson test)");
	return b;
}

/* rx-nfs @op URL(@path) [@arg]; its exit status, output into *@out. */
static int rx_nfs(const char *op, const char *path, const char *arg, char **out)
{
	char url[PATH_MAX + 128];

	rx_nfs_url(&gw, path, url);
	return rx_nfs_run(&gw, out, rx_nfs_bin(), op, url, arg, NULL);
}

/* nfs-ls of @dir: its output (malloc'd); fails unless it succeeded. */
static char *nfs_ls(const char *dir)
{
	char url[PATH_MAX + 128], *out;
	int st = rx_nfs_run(&gw, &out, "nfs-ls", rx_nfs_url(&gw, dir, url), NULL);

	cr_assert_eq(st, 0, "nfs-ls %s: status %d: %s", url, st, out);
	return out;
}

/* Does the nfs-ls listing @ls show the name @name (last word of a line)? */
static int ls_has(const char *ls, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = ls; (p = strstr(p, name)); p += n)
		if (p > ls && p[-1] == ' ' && (p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

/* Poll nfs-ls of @dir until @name is (@want 1) or is not (0) listed. */
static void wait_listed(const char *dir, const char *name, int want)
{
	for (int64_t t0 = tnow_ms(), end = t0 + VT_WAIT_MS;;) {
		char *ls = nfs_ls(dir);
		int has = ls_has(ls, name);

		if (has == want) {
			cr_log_info("nfs-ls %s%s %s %s after %" PRId64 " ms", *dir ? dir : "/",
				    *dir ? "/" : "", want ? "shows" : "no longer shows", name,
				    tnow_ms() - t0);
			free(ls);
			return;
		}
		cr_assert(tnow_ms() < end, "nfs-ls %s %s %s after %d ms:\n%s", dir,
			  want ? "does not show" : "still shows", name, VT_WAIT_MS, ls);
		free(ls);
		tsleep_ms(200);
	}
}

/* nfs-cp over NFSv3 of @local into the export's @name; fails unless
 * it succeeded */
static void nfs3_cp_in(const char *local, const char *name)
{
	char url[PATH_MAX + 128], *out;
	int st = rx_nfs_run(&gw, &out, "nfs-cp", local, rx_nfs3_url(&gw, name, url), NULL);

	cr_assert_eq(st, 0, "nfs-cp %s %s: status %d: %s", local, url, st, out);
	free(out);
}

/* nfs-cp of the export's @name to @local (replaced: nfs-cp does not
 * open an existing local file), over NFSv3 (@v3) or NFSv4 */
static void nfs_cp_out(const char *name, const char *local, int v3)
{
	char url[PATH_MAX + 128], *out;
	int st;

	cr_assert(unlink(local) == 0 || errno == ENOENT, "unlink %s: %s", local,
		  strerror(errno));
	st = rx_nfs_run(&gw, &out, "nfs-cp", v3 ? rx_nfs3_url(&gw, name, url) :
			    rx_nfs_url(&gw, name, url), local, NULL);
	cr_assert_eq(st, 0, "nfs-cp %s %s: status %d: %s", url, local, st, out);
	free(out);
}

/* rx-nfs pwrite over NFSv3: @len bytes of seed @seed at @off of @name */
static void nfs3_pwrite(const char *name, uint64_t off, size_t len, uint64_t seed)
{
	char url[PATH_MAX + 128], local[PATH_MAX], offs[24], *out;
	int st;

	snprintf(local, sizeof(local), "%s/local.patch", tcluster_dir(tc));
	rx_write_file(local, len, seed);
	snprintf(offs, sizeof(offs), "%" PRIu64, off);
	st = rx_nfs_run(&gw, &out, rx_nfs_bin(), "pwrite", rx_nfs3_url(&gw, name, url),
			offs, local, NULL);
	cr_assert_eq(st, 0, "rx-nfs pwrite %s %s (%zu bytes): status %d: %s", url, offs,
		     len, st, out);
	free(out);
}

Test(nfs, read_through_nfs)
{
	char back[PATH_MAX], url[PATH_MAX + 128], mnt[PATH_MAX + 64];
	uint64_t seed = tseed("nfs read");
	size_t len = (3u << 20) + 12345;
	char *out;
	int st;

	/* written on the mount, read through NFS byte-identical */
	snprintf(back, sizeof(back), "%s/local.back", tcluster_dir(tc));
	rx_write_file(vt_path(tc, "viaMount", mnt), len, seed);
	st = rx_nfs_run(&gw, &out, "nfs-cp", rx_nfs_url(&gw, "viaMount", url), back, NULL);
	cr_assert_eq(st, 0, "nfs-cp %s %s: status %d: %s", url, back, st, out);
	free(out);
	rx_check_file(back, len, seed, "written on the mount, nfs-cp out");

	/* nfs-cat of a small file prints it */
	FILE *f = fopen(vt_path(tc, "small", mnt), "we");
	cr_assert(f);
	fputs("hello through ganesha\n", f);
	cr_assert_eq(fclose(f), 0);
	st = rx_nfs_run(&gw, &out, "nfs-cat", rx_nfs_url(&gw, "small", url), NULL);
	cr_assert_eq(st, 0, "nfs-cat %s: status %d: %s", url, st, out);
	cr_assert_str_eq(out, "hello through ganesha\n");
	free(out);
}

/*
 * Writes through the gateway, over NFSv3 (libnfs 4.0 sends no NFSv4
 * WRITE, docs/reexport.md): nfs-cp in, nfs-cp back out byte-identical
 * (over NFSv3 and NFSv4), and the mount has the same bytes; then an
 * unaligned overwrite inside the file, an append (rx-nfs pwrite: nfs-cp
 * only creates new files) and a truncation (rx-nfs truncate), each
 * checked on the mount and through NFS.
 */
Test(nfs, write_through_nfs)
{
	char local[PATH_MAX], back[PATH_MAX], mnt[PATH_MAX + 64];
	size_t len = (3u << 20) + 12345, patch_off = 1000003, patch_len = 200001;
	size_t add_len = 70001, short_len = 1100007;
	uint64_t seed = tseed("nfs write"), patch_seed = tseed("nfs overwrite");
	uint64_t add_seed = tseed("nfs append");
	char *want = malloc(len + add_len), url[PATH_MAX + 128], lens[24], *out;
	int st;

	cr_assert(want);
	snprintf(local, sizeof(local), "%s/local.in", tcluster_dir(tc));
	snprintf(back, sizeof(back), "%s/local.back", tcluster_dir(tc));
	rx_write_file(local, len, seed);
	nfs3_cp_in(local, "viaNFS");
	nfs_cp_out("viaNFS", back, 1);
	rx_check_file(back, len, seed, "nfs-cp in, nfs-cp out (NFSv3)");
	nfs_cp_out("viaNFS", back, 0);
	rx_check_file(back, len, seed, "nfs-cp in (NFSv3), nfs-cp out (NFSv4)");
	rx_check_file(vt_path(tc, "viaNFS", mnt), len, seed, "nfs-cp in, read on the mount");

	/* overwrite in place, at an offset and length aligned to nothing */
	tfill_random(want, len, seed);
	tfill_random(want + patch_off, patch_len, patch_seed);
	nfs3_pwrite("viaNFS", patch_off, patch_len, patch_seed);
	rx_check_bytes(vt_path(tc, "viaNFS", mnt), want, len,
		       "overwritten in place through NFS, read on the mount");
	/* append: a write at the end */
	tfill_random(want + len, add_len, add_seed);
	nfs3_pwrite("viaNFS", len, add_len, add_seed);
	rx_check_bytes(vt_path(tc, "viaNFS", mnt), want, len + add_len,
		       "appended through NFS, read on the mount");
	nfs_cp_out("viaNFS", back, 1);
	rx_check_bytes(back, want, len + add_len, "overwritten and appended, nfs-cp out");

	/* truncated through NFS (SETATTR size) inside the overwritten part */
	snprintf(lens, sizeof(lens), "%zu", short_len);
	st = rx_nfs_run(&gw, &out, rx_nfs_bin(), "truncate", rx_nfs3_url(&gw, "viaNFS", url),
			lens, NULL);
	cr_assert_eq(st, 0, "rx-nfs truncate %s %s: status %d: %s", url, lens, st, out);
	free(out);
	rx_check_bytes(vt_path(tc, "viaNFS", mnt), want, short_len,
		       "truncated through NFS, read on the mount");
	nfs_cp_out("viaNFS", back, 1);
	rx_check_bytes(back, want, short_len, "truncated through NFS, nfs-cp out");
	free(want);
}

Test(nfs, namespace)
{
	char mnt[PATH_MAX + 64], mnt2[PATH_MAX + 64], *out;
	struct stat st;
	int ret;

	/* through NFS: mkdir, rename, unlink; seen on the mount */
	rx_write_file(vt_path(tc, "a", mnt), 4096, 1);
	ret = rx_nfs("mkdir", "dir1", NULL, &out);
	cr_assert_eq(ret, 0, "rx-nfs mkdir dir1: %s", out);
	free(out);
	ret = rx_nfs("rename", "a", "/dir1/b", &out);
	cr_assert_eq(ret, 0, "rx-nfs rename a /dir1/b: %s", out);
	free(out);
	rx_check_file(vt_path(tc, "dir1/b", mnt), 4096, 1, "renamed through NFS");
	cr_assert(stat(vt_path(tc, "a", mnt), &st) < 0 && errno == ENOENT,
		  "a still on the mount after the rename through NFS");
	ret = rx_nfs("unlink", "dir1/b", NULL, &out);
	cr_assert_eq(ret, 0, "rx-nfs unlink dir1/b: %s", out);
	free(out);
	cr_assert(stat(vt_path(tc, "dir1/b", mnt), &st) < 0 && errno == ENOENT,
		  "dir1/b still on the mount after unlink through NFS");
	ret = rx_nfs("rmdir", "dir1", NULL, &out);
	cr_assert_eq(ret, 0, "rx-nfs rmdir dir1: %s", out);
	free(out);

	/* on the mount: create, rename, unlink; seen through NFS */
	rx_write_file(vt_path(tc, "c", mnt), 100, 2);
	wait_listed("", "c", 1);
	cr_assert_eq(rename(vt_path(tc, "c", mnt), vt_path(tc, "d", mnt2)), 0, "rename: %s",
		     strerror(errno));
	wait_listed("", "d", 1);
	wait_listed("", "c", 0);
	cr_assert_eq(unlink(vt_path(tc, "d", mnt)), 0);
	wait_listed("", "d", 0);
}

Test(nfs, big_dir)
{
	char *ls;
	int64_t t0;
	size_t n = 0;

	t0 = tnow_ms();
	rx_make_files(tc, "big", RX_BIG_DIR);
	cr_log_info("created %d files on the mount in %" PRId64 " ms", RX_BIG_DIR,
		    tnow_ms() - t0);
	t0 = tnow_ms();
	ls = nfs_ls("big");
	cr_log_info("nfs-ls of %d entries through ganesha: %" PRId64 " ms", RX_BIG_DIR,
		    tnow_ms() - t0);
	/* every name exactly once: lines end in f%05u */
	char *seen = calloc(RX_BIG_DIR, 1);
	cr_assert(seen);
	for (char *line = strtok(ls, "\n"); line; line = strtok(NULL, "\n")) {
		char *name = strrchr(line, ' ');
		unsigned i;
		char end;

		name = name ? name + 1 : line;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		cr_assert(sscanf(name, "f%5u%c", &i, &end) == 1 && i < RX_BIG_DIR,
			  "unexpected entry '%s'", line);
		cr_assert(!seen[i], "%s listed twice", name);
		seen[i] = 1;
		n++;
	}
	cr_assert_eq(n, RX_BIG_DIR, "nfs-ls listed %zu names, want %d", n, RX_BIG_DIR);
	free(seen);
	free(ls);

	/* again once ganesha's attributes expired: it revalidates each
	 * entry (a getattr through the mount) */
	tsleep_ms(RX_GW_ATTR_S * 1000 + 500);
	t0 = tnow_ms();
	ls = nfs_ls("big");
	cr_log_info("nfs-ls of %d entries again after %d s: %" PRId64 " ms", RX_BIG_DIR,
		    RX_GW_ATTR_S, tnow_ms() - t0);
	free(ls);
}

/* The size nfs-ls shows for @name in @dir (its column before the name);
 * -1 if not listed. */
static long long listed_size(const char *dir, const char *name)
{
	char *ls = nfs_ls(dir);
	long long size = -1;

	for (char *line = strtok(ls, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' ');

		if (!sp || strcmp(sp + 1, name))
			continue;
		*sp = '\0';
		while (sp > line && sp[-1] == ' ')
			*--sp = '\0';
		sp = strrchr(line, ' ');
		size = strtoll(sp ? sp + 1 : line, NULL, 10);
		break;
	}
	free(ls);
	return size;
}

/* The size of @path through a GETATTR (rx-nfs stat). */
static long long stat_size(const char *path)
{
	char *out;
	long long size = -1;
	int st = rx_nfs("stat", path, NULL, &out);

	cr_assert_eq(st, 0, "rx-nfs stat %s: status %d: %s", path, st, out);
	cr_assert_eq(sscanf(out, "size %lld", &size), 1, "rx-nfs stat %s printed '%s'",
		     path, out);
	free(out);
	return size;
}

/*
 * The gateway's staleness bound (docs/reexport.md): ganesha serves
 * attributes from its own cache for Attr_Expiration_Time, and no sdfs
 * invalidation reaches that cache. A size changed on the mount after
 * ganesha cached the file must show through a GETATTR within that time
 * (plus the clock's second and load slack); the time is logged. A
 * listing reads the directory through the mount (Dir_Chunk = 0): it
 * shows a new size at once, while a GETATTR still has the cached one.
 */
Test(nfs, attr_staleness_bounded)
{
	char mnt[PATH_MAX + 64];
	int64_t t0, ms;
	long long size;

	rx_write_file(vt_path(tc, "grow", mnt), 10, 3);
	cr_assert_eq(stat_size("grow"), 10);            /* now in ganesha's cache */
	rx_write_file(vt_path(tc, "grow", mnt), 5000, 4);
	t0 = tnow_ms();
	size = stat_size("grow");
	cr_log_info("first GETATTR after the change shows size %lld (%s)", size,
		    size == 5000 ? "fresh" : "ganesha's cached attributes");
	while ((size = stat_size("grow")) != 5000) {
		cr_assert(tnow_ms() - t0 < RX_GW_ATTR_S * 1000 + 4000,
			  "GETATTR still shows size %lld %" PRId64 " ms after the change "
			  "(Attr_Expiration_Time %d s)", size, tnow_ms() - t0, RX_GW_ATTR_S);
		tsleep_ms(50);
	}
	ms = tnow_ms() - t0;
	cr_log_info("the new size shows through GETATTR %" PRId64 " ms after the change "
		    "(bound: Attr_Expiration_Time %d s)", ms, RX_GW_ATTR_S);

	/* a listing: at once */
	rx_write_file(vt_path(tc, "grow", mnt), 7000, 5);
	size = stat_size("grow");
	cr_log_info("GETATTR right after a new change: size %lld (%s)", size,
		    size == 7000 ? "fresh" : "cached");
	cr_assert_eq(listed_size("", "grow"), 7000, "a listing shows an old size");
}

/* The handle of @path through the gateway (hex, malloc'd). */
static char *handle_of(const char *path)
{
	char *out;
	int st = rx_nfs("fh", path, NULL, &out);

	cr_assert_eq(st, 0, "rx-nfs fh %s: status %d: %s", path, st, out);
	if (strchr(out, '\n'))
		*strchr(out, '\n') = '\0';
	cr_assert(strlen(out) > 8, "rx-nfs fh %s printed '%s'", path, out);
	return out;
}

static void check_content(const char *path, const char *want)
{
	char url[PATH_MAX + 128], *out;
	int st = rx_nfs_run(&gw, &out, "nfs-cat", rx_nfs_url(&gw, path, url), NULL);

	cr_assert_eq(st, 0, "nfs-cat %s: status %d: %s", url, st, out);
	cr_assert_str_eq(out, want, "nfs-cat %s", url);
	free(out);
}

/*
 * The handles a gateway gives for two files are the same
 * after a restart of the gateway, and after a restart of the mount
 * under it. libnfs-utils prints no handles, so rx-nfs reads them
 * (nfs_get_fh). ganesha's VFS handle holds the fsid of the local file
 * system, which for a FUSE mount is its anonymous st_dev (FUSE reports
 * no f_fsid): when the remount gets another st_dev, only the FUSE part
 * of the handle (nodeid + generation) can stay, and the test checks
 * that part and says so (docs/reexport.md, "Limits").
 */
Test(nfs, handles_stable)
{
	char mnt[PATH_MAX + 64], *f0, *d0, *f1, *d1;
	struct stat st0, st1;
	FILE *f;

	/* d0/d1: a file at the root (libnfs opens no directories) */
	cr_assert_eq(mkdir(vt_path(tc, "hd", mnt), 0755), 0);
	f = fopen(vt_path(tc, "hd/file", mnt), "we");
	cr_assert(f);
	fputs("stable\n", f);
	cr_assert_eq(fclose(f), 0);
	f = fopen(vt_path(tc, "top", mnt), "we");
	cr_assert(f);
	cr_assert_eq(fclose(f), 0);
	f0 = handle_of("hd/file");
	d0 = handle_of("top");
	cr_log_info("handles: hd/file %s, top %s", f0, d0);
	cr_assert_eq(stat(tcluster_mnt(tc), &st0), 0);

	/* gateway restart */
	rx_gw_stop(&gw);
	rx_nfs_start(tc, &gw);
	f1 = handle_of("hd/file");
	d1 = handle_of("top");
	cr_assert_str_eq(f1, f0, "hd/file's handle changed across a gateway restart");
	cr_assert_str_eq(d1, d0, "top's handle changed across a gateway restart");
	check_content("hd/file", "stable\n");
	free(f1);
	free(d1);

	/* mount restart (SIGKILL, mount again), then the gateway on it */
	rx_gw_stop(&gw);
	cr_assert_eq(tcluster_kill(tc, "mnt"), 0);
	cr_assert_eq(tcluster_restart(tc, "mnt"), 0);
	cr_assert_eq(stat(tcluster_mnt(tc), &st1), 0);
	rx_nfs_start(tc, &gw);
	f1 = handle_of("hd/file");
	d1 = handle_of("top");
	if (st1.st_dev == st0.st_dev) {
		cr_assert_str_eq(f1, f0, "hd/file's handle changed across a mount restart");
		cr_assert_str_eq(d1, d0, "top's handle changed across a mount restart");
	} else {
		/* the FUSE handle is the last 12 bytes (fuse_encode_fh:
		 * nodeid hi, lo, generation) */
		cr_log_warn("the remount got st_dev %u:%u (was %u:%u): ganesha's handles "
			    "change with it; comparing the FUSE part only",
			    major(st1.st_dev), minor(st1.st_dev), major(st0.st_dev),
			    minor(st0.st_dev));
		cr_assert_eq(strlen(f1), strlen(f0));
		cr_assert_str_eq(f1 + strlen(f1) - 24, f0 + strlen(f0) - 24,
				 "hd/file's nodeid+generation changed across a mount restart");
		cr_assert_str_eq(d1 + strlen(d1) - 24, d0 + strlen(d0) - 24,
				 "top's nodeid+generation changed across a mount restart");
	}
	check_content("hd/file", "stable\n");
	free(f0);
	free(d0);
	free(f1);
	free(d1);
}

/*
 * A listing of a directory from which a file was removed on the mount,
 * while ganesha still held the directory's attributes (fresh) but not
 * the file's (expired): with ganesha's chunked directory cache, the
 * READDIR served the cached entry, revalidated its attributes by
 * opening its handle (ESTALE: the file is gone, as on any local file
 * system) and failed whole with NFS4ERR_STALE, for up to
 * Attr_Expiration_Time + 1 s (what nfs::namespace hit in CI). The
 * gateway reads listings through the mount (Dir_Chunk = 0,
 * docs/reexport.md): the listing works and no longer shows the file.
 * The steps put ganesha in that state: the root's attributes refreshed
 * by the lookup of another directory (nfs-ls of sub/), after the file's
 * expired (time(2) seconds, so > 2 s).
 */
Test(nfs, listing_after_removal_on_mount)
{
	char mnt[PATH_MAX + 64], *ls;

	cr_assert_eq(mkdir(vt_path(tc, "sub", mnt), 0755), 0);
	rx_write_file(vt_path(tc, "x", mnt), 100, 5);
	wait_listed("", "x", 1);
	tsleep_ms(RX_GW_ATTR_S * 1000 + 1100);  /* the root's attributes expire */
	ls = nfs_ls("");                /* ... and are read again: x listed */
	cr_assert(ls_has(ls, "x"), "nfs-ls does not show x:\n%s", ls);
	free(ls);
	tsleep_ms(RX_GW_ATTR_S * 1000 + 1100);  /* the root's and x's expire */
	free(nfs_ls("sub"));            /* the root's are read again, x's not */
	cr_assert_eq(unlink(vt_path(tc, "x", mnt)), 0);
	ls = nfs_ls("");                /* fails the test on NFS4ERR_STALE */
	cr_log_info("nfs-ls right after the removal on the mount %s x",
		    ls_has(ls, "x") ? "still shows" : "no longer shows");
	free(ls);
	wait_listed("", "x", 0);
}
