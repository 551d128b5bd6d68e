/*
 * rx_nfs.c - the few NFS operations the re-export tests need that
 * libnfs-utils 4.0 (nfs-ls, nfs-cat, nfs-cp) has no command for: print
 * a file's NFS file handle, rename, unlink, mkdir, rmdir, write into an
 * existing file at an offset and truncate it (nfs-cp only creates new
 * files), and stat a file (GETATTR: nfs-ls shows a listing's
 * attributes).
 *
 *   rx-nfs fh URL            the handle of URL's file, in hex, one line
 *   rx-nfs stat URL          "size N" of URL's file, one line
 *   rx-nfs rename URL NEW    NEW: a path inside the same export
 *   rx-nfs unlink URL | mkdir URL | rmdir URL
 *   rx-nfs pwrite URL OFFSET FILE   the local FILE's bytes into URL's
 *                            existing file at OFFSET (no truncation)
 *   rx-nfs truncate URL LEN  set URL's file's size to LEN
 *
 * URL is a libnfs URL (nfs://127.0.0.1/sdfs/dir/file?version=4&nfsport=N).
 * libnfs comes from libnfs.so.13 (Debian libnfs13, which libnfs-utils
 * pulls in) through dlopen: CI installs no libnfs-dev, so there are no
 * headers; the prototypes below are libnfs 4.0's (SONAME 13). Exit 0 on
 * success, 1 with a message on stderr otherwise, 77 when libnfs.so.13
 * cannot be loaded.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nfs_context;
struct nfsfh;
struct nfs_url {        /* libnfs 4.0 include/nfsc/libnfs.h */
	char *server;
	char *path;
	char *file;
};
struct nfs_fh {
	int len;
	char *val;
};
struct nfs_stat_64 {    /* libnfs 4.0 include/nfsc/libnfs.h */
	uint64_t nfs_dev, nfs_ino, nfs_mode, nfs_nlink, nfs_uid, nfs_gid, nfs_rdev;
	uint64_t nfs_size, nfs_blksize, nfs_blocks, nfs_atime, nfs_mtime, nfs_ctime;
	uint64_t nfs_atime_nsec, nfs_mtime_nsec, nfs_ctime_nsec, nfs_used;
};

static struct {
	struct nfs_context *(*init_context)(void);
	void (*destroy_context)(struct nfs_context *);
	struct nfs_url *(*parse_url_full)(struct nfs_context *, const char *);
	void (*destroy_url)(struct nfs_url *);
	int (*mount)(struct nfs_context *, const char *, const char *);
	int (*open)(struct nfs_context *, const char *, int, struct nfsfh **);
	int (*close)(struct nfs_context *, struct nfsfh *);
	struct nfs_fh *(*get_fh)(struct nfsfh *);
	/* bytes written or -errno; libnfs 5 swapped the arguments */
	int (*pwrite)(struct nfs_context *, struct nfsfh *, uint64_t offset,
		      uint64_t count, char *buf);
	int (*rename)(struct nfs_context *, const char *, const char *);
	int (*unlink)(struct nfs_context *, const char *);
	int (*mkdir)(struct nfs_context *, const char *);
	int (*rmdir)(struct nfs_context *, const char *);
	int (*truncate)(struct nfs_context *, const char *, uint64_t len);
	int (*stat64)(struct nfs_context *, const char *, struct nfs_stat_64 *);
	char *(*get_error)(struct nfs_context *);
} nfs;

static int load(void)
{
	void *h = dlopen("libnfs.so.13", RTLD_NOW);

	if (!h) {
		fprintf(stderr, "rx-nfs: %s\n", dlerror());
		return -1;
	}
#define SYM(f) do { \
		*(void **)&nfs.f = dlsym(h, "nfs_" #f); \
		if (!nfs.f) { \
			fprintf(stderr, "rx-nfs: libnfs.so.13 has no nfs_" #f "\n"); \
			return -1; \
		} \
	} while (0)
	SYM(init_context); SYM(destroy_context); SYM(parse_url_full);
	SYM(destroy_url); SYM(mount); SYM(open); SYM(close); SYM(get_fh); SYM(pwrite);
	SYM(rename); SYM(unlink); SYM(mkdir); SYM(rmdir); SYM(truncate); SYM(stat64);
	SYM(get_error);
#undef SYM
	return 0;
}

/* The local file @path into *@buf (malloc'd); its length, or -1. */
static long slurp(const char *path, char **buf)
{
	FILE *f = fopen(path, "rb");
	long len = -1;

	*buf = NULL;
	if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (*buf = malloc(len ? len : 1)) &&
	    fread(*buf, 1, len, f) == (size_t)len) {
		fclose(f);
		return len;
	}
	perror(path);
	free(*buf);
	if (f)
		fclose(f);
	return -1;
}

/* All @len bytes of @buf into @fh at @off; 0 or -errno. */
static int pwrite_all(struct nfs_context *ctx, struct nfsfh *fh, uint64_t off,
		      char *buf, long len)
{
	for (long done = 0; done < len;) {
		int n = nfs.pwrite(ctx, fh, off + done, len - done, buf + done);

		if (n <= 0)
			return n < 0 ? n : -EIO;        /* no progress */
		done += n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct nfs_context *ctx;
	struct nfs_url *url;
	struct nfsfh *fh;
	const char *op = argc > 2 ? argv[1] : "";
	int ret = -1;

	if (argc < 3 || ((!strcmp(op, "rename") || !strcmp(op, "truncate")) && argc != 4) ||
	    (!strcmp(op, "pwrite") && argc != 5)) {
		fprintf(stderr, "usage: rx-nfs fh|stat|unlink|mkdir|rmdir URL | rename URL NEW"
			" | pwrite URL OFFSET FILE | truncate URL LEN\n");
		return 2;
	}
	if (load() < 0)
		return 77;
	ctx = nfs.init_context();
	if (!ctx) {
		fprintf(stderr, "rx-nfs: nfs_init_context failed\n");
		return 1;
	}
	url = nfs.parse_url_full(ctx, argv[2]);
	if (!url) {
		fprintf(stderr, "rx-nfs: %s: %s\n", argv[2], nfs.get_error(ctx));
		goto out_ctx;
	}
	if (nfs.mount(ctx, url->server, url->path) != 0) {
		fprintf(stderr, "rx-nfs: mount %s:%s: %s\n", url->server, url->path,
			nfs.get_error(ctx));
		goto out_url;
	}
	if (!strcmp(op, "fh")) {
		ret = nfs.open(ctx, url->file, O_RDONLY, &fh);
		if (ret == 0) {
			struct nfs_fh *h = nfs.get_fh(fh);

			for (int i = 0; i < h->len; i++)
				printf("%02x", (unsigned char)h->val[i]);
			printf("\n");
			nfs.close(ctx, fh);
		}
	} else if (!strcmp(op, "stat")) {
		struct nfs_stat_64 st;

		ret = nfs.stat64(ctx, url->file, &st);
		if (ret == 0)
			printf("size %llu\n", (unsigned long long)st.nfs_size);
	} else if (!strcmp(op, "pwrite")) {
		char *buf;
		long len = slurp(argv[4], &buf);

		if (len < 0)
			goto out_url;
		ret = nfs.open(ctx, url->file, O_WRONLY, &fh);
		if (ret == 0) {
			ret = pwrite_all(ctx, fh, strtoull(argv[3], NULL, 10), buf, len);
			if (nfs.close(ctx, fh) != 0 && ret == 0)
				ret = -1;
		}
		free(buf);
	} else if (!strcmp(op, "truncate")) {
		ret = nfs.truncate(ctx, url->file, strtoull(argv[3], NULL, 10));
	} else if (!strcmp(op, "rename")) {
		ret = nfs.rename(ctx, url->file, argv[3]);
	} else if (!strcmp(op, "unlink")) {
		ret = nfs.unlink(ctx, url->file);
	} else if (!strcmp(op, "mkdir")) {
		ret = nfs.mkdir(ctx, url->file);
	} else if (!strcmp(op, "rmdir")) {
		ret = nfs.rmdir(ctx, url->file);
	} else {
		fprintf(stderr, "rx-nfs: unknown operation %s\n", op);
		goto out_url;
	}
	if (ret != 0)
		fprintf(stderr, "rx-nfs: %s %s: %s\n", op, url->file, nfs.get_error(ctx));
out_url:
	nfs.destroy_url(url);
out_ctx:
	nfs.destroy_context(ctx);
	return ret == 0 ? 0 : 1;
}
