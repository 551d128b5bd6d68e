/*
 * rx_nfs.c - the few NFS operations the re-export tests need that
 * libnfs-utils 4.0 (nfs-ls, nfs-cat, nfs-cp) has no command for: print
 * a file's NFS file handle, rename, unlink, mkdir, rmdir.
 *
 *   rx-nfs fh URL            the handle of URL's file, in hex, one line
 *   rx-nfs rename URL NEW    NEW: a path inside the same export
 *   rx-nfs unlink URL | mkdir URL | rmdir URL
 *
 * URL is a libnfs URL (nfs://127.0.0.1/sdfs/dir/file?version=4&nfsport=N).
 * libnfs comes from libnfs.so.13 (Debian libnfs13, which libnfs-utils
 * pulls in) through dlopen: CI installs no libnfs-dev, so there are no
 * headers; the prototypes below are libnfs 4.0's (SONAME 13). Exit 0 on
 * success, 1 with a message on stderr otherwise, 77 when libnfs.so.13
 * cannot be loaded.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
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

static struct {
	struct nfs_context *(*init_context)(void);
	void (*destroy_context)(struct nfs_context *);
	struct nfs_url *(*parse_url_full)(struct nfs_context *, const char *);
	void (*destroy_url)(struct nfs_url *);
	int (*mount)(struct nfs_context *, const char *, const char *);
	int (*open)(struct nfs_context *, const char *, int, struct nfsfh **);
	int (*close)(struct nfs_context *, struct nfsfh *);
	struct nfs_fh *(*get_fh)(struct nfsfh *);
	int (*rename)(struct nfs_context *, const char *, const char *);
	int (*unlink)(struct nfs_context *, const char *);
	int (*mkdir)(struct nfs_context *, const char *);
	int (*rmdir)(struct nfs_context *, const char *);
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
	SYM(destroy_url); SYM(mount); SYM(open); SYM(close); SYM(get_fh);
	SYM(rename); SYM(unlink); SYM(mkdir); SYM(rmdir); SYM(get_error);
#undef SYM
	return 0;
}

int main(int argc, char **argv)
{
	struct nfs_context *ctx;
	struct nfs_url *url;
	struct nfsfh *fh;
	const char *op = argc > 2 ? argv[1] : "";
	int ret = -1;

	if (argc < 3 || (!strcmp(op, "rename") && argc != 4)) {
		fprintf(stderr, "usage: rx-nfs fh|unlink|mkdir|rmdir URL | rename URL NEW\n");
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
