/* vol_ns.c - see client.h (being written) */
typedef int sdfs_vol_ns_unused;
