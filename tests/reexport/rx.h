/*
 * rx.h - what the re-export tests share (docs/reexport.md): a cluster
 * with a mount, an NFS gateway (nfs-ganesha, FSAL_VFS) or an SMB server
 * (smbd) on that mount as this process's child, with a private config
 * in the cluster's temp dir. smbd listens on 127.0.0.1 at a free port.
 * ganesha serves NFSv3 and NFSv4, and NFSv3 needs rpcbind, so ganesha
 * runs in network and mount namespaces of its own, together with a
 * private rpcbind (which holds them: they end with it), at fixed
 * ports; NFS clients run in that network namespace (rx_nfs_run).
 *
 * A gateway is stopped by its pid (SIGTERM, then SIGKILL) and waited
 * for; a watchdog process does the same if the test process dies first
 * (a criterion timeout). Every helper fails the test on anything
 * unexpected unless it documents a return value.
 */
#ifndef SDFS_TESTS_REEXPORT_RX_H
#define SDFS_TESTS_REEXPORT_RX_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/vol/vt.h"

#define RX_BIG_DIR 10000        /* entries of the big directory tests */
/* ganesha's Attr_Expiration_Time (s): how long it serves attributes from
 * its own cache, which no invalidation reaches (docs/reexport.md) */
#define RX_GW_ATTR_S 1

/* The cluster every re-export test uses: 3 blockd, 2 mds, a mount. */
struct tcluster *rx_start(void);

/* The mount's source "sdfs:<uuid>" -> "<uuid>" into @buf (64 bytes). */
const char *rx_cluster_uuid(struct tcluster *tc, char *buf);

/* ganesha's ports inside its own network namespace, where no other
 * program listens: NFS (v3 and v4) and MOUNT (v3) */
#define RX_NFS_PORT 2049
#define RX_MNT_PORT 20048

struct rx_gw {
	char dir[4096];         /* DIR/ganesha or DIR/samba */
	char conf[4200];
	char log[4200];
	int port;
	pid_t pid;
	struct vt_watchdog wd;
	int smb;                /* 1: smbd, 0: ganesha.nfsd */
	pid_t ns_pid;           /* ganesha: rpcbind, in the namespaces it holds */
	struct vt_watchdog ns_wd;
};

/* Is @prog an executable on $PATH (/usr/bin, /usr/sbin, /bin, /sbin)? */
int rx_have(const char *prog);

/* rpcbind -f in new network and mount namespaces (lo up, a tmpfs on
 * /run for rpcbind's socket and lock), then ganesha.nfsd -F in both,
 * exporting the mount as /sdfs over NFSv3 and NFSv4 at RX_NFS_PORT and
 * RX_MNT_PORT. Returns once nfs-ls of the export works. A restart
 * (after rx_gw_stop) makes new namespaces, which see the mount as it
 * is then (a remount made after they were made would not show). */
void rx_nfs_start(struct tcluster *tc, struct rx_gw *gw);
/* smbd --foreground sharing the mount as [sdfs]. */
void rx_smb_start(struct tcluster *tc, struct rx_gw *gw);
/* Stop by pid (bounded), reap, end the watchdog; for ganesha then its
 * rpcbind, which ends the namespaces. Safe to call twice. */
void rx_gw_stop(struct rx_gw *gw);

/* "nfs://127.0.0.1/sdfs/@path?version=4&nfsport=PORT" into @buf (PATH_MAX+128). */
const char *rx_nfs_url(const struct rx_gw *gw, const char *path, char *buf);
/* The same over NFSv3: "...?version=3&nfsport=PORT&mountport=MNT" (libnfs
 * then asks no portmapper). */
const char *rx_nfs3_url(const struct rx_gw *gw, const char *path, char *buf);

/* Run @argv with a deadline (vt_run); output into *@out (NULL ok). */
int rx_run(char **out, const char *arg0, ...);
/* The same in @gw's network namespace (nsenter --net), where its NFS
 * ports are: every NFS client (nfs-ls, nfs-cp, rx-nfs) runs this way. */
int rx_nfs_run(const struct rx_gw *gw, char **out, const char *arg0, ...);

/* @n files f00000..f(n-1) in the mount's directory @dir (made). */
void rx_make_files(struct tcluster *tc, const char *dir, unsigned n);
/* Write @len bytes of seed @seed into @path (a local or mount path). */
void rx_write_file(const char *path, size_t len, uint64_t seed);
/* Fail unless @path holds exactly @len bytes of seed @seed. */
void rx_check_file(const char *path, size_t len, uint64_t seed, const char *what);
/* Fail unless @path holds exactly the @len bytes at @want. */
void rx_check_bytes(const char *path, const void *want, size_t len, const char *what);
#endif
