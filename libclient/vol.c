/* vol.c - see client.h (being written) */
typedef int sdfs_vol_unused;
