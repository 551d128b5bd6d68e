/*
 * dev_netns.h - `sdfs dev up --netns`: each daemon of a dev cluster in a
 * network namespace of its own, joined by veth pairs to one bridge, so
 * that a test can cut, drop or slow one daemon's link as on a real
 * network (tests/fault, docs/faults.md).
 *
 *   bridge sdb<ID>             10.77.K.1/24 in this (the host's)
 *                              namespace: the CLI, the tests and the
 *                              FUSE mounts' users reach every daemon
 *   namespace sdfs-<ID>-NAME   one per daemon (zk or zk.1..zk.5, blockd.N,
 *                              mds.N, mnt, mnt2...): lo, and eth0 = 10.77.K.H/24, the
 *                              peer of veth sv<ID>-<H> on the bridge
 *   netem delay D ms           on each eth0 (so D each way between two
 *                              daemons) when the kernel has sch_netem
 *
 * ID is 4 hex digits of a hash of DIR, K the first 10.77.K.0/24 that no
 * interface here uses. Everything made is recorded under DIR
 * (DIR/netns.conf, DIR/run/NAME.netns: the namespace and its address)
 * so that dev_netns_destroy removes exactly that, also after a crash.
 * Runs `ip` and `tc` (iproute2); needs root. Not thread-safe (dev's
 * single thread).
 */
#ifndef SDFS_TOOLS_DEV_NETNS_H
#define SDFS_TOOLS_DEV_NETNS_H
#include <stddef.h>

struct dev_net {
	char id[8];             /* 4 hex digits */
	unsigned subnet;        /* K of 10.77.K.0/24 */
	unsigned delay_ms;      /* asked for; applied only if netem */
	int netem;              /* the kernel has sch_netem */
};

/* DIR/netns.conf into @n: 0, or -ENOENT when DIR is not a netns cluster. */
int dev_netns_load(const char *dir, struct dev_net *n);
/* Make the bridge (after dev_netns_destroy of what an earlier run may
 * have left) and write DIR/netns.conf. 0, or -errno with a reason in @err. */
int dev_netns_create(const char *dir, unsigned delay_ms, struct dev_net *n,
		     char *err, size_t errlen);
/* Make @name's namespace and link; its address ("10.77.K.H") into @addr.
 * 0, or -errno with a reason in @err (-EINVAL: a name without a host
 * number). */
int dev_netns_add(const char *dir, const struct dev_net *n, const char *name,
		  char *addr, size_t len, char *err, size_t errlen);
/* In a child about to exec @name: join its namespace if it has one.
 * 0 (also: none), or -errno. */
int dev_netns_enter(const char *dir, const char *name);
/* Remove every namespace and link of DIR's cluster (found by their
 * names, so also ones a crash left unrecorded), the bridge, the records
 * (DIR/netns.conf, DIR/run/NAME.netns). Quiet; what `ip` says goes to DIR/log/netns.log. */
void dev_netns_destroy(const char *dir);
#endif
