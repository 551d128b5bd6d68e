/*
 * store.h - the MDS database's objects on the cluster: an objenv_store
 * whose calls are libsdfs object calls. Writes are durable on every
 * replica before they return (the log's: in every replica's memory,
 * made durable by a flush) and carry the handle's fence token, so a
 * deposed mds gets -EPERM from every fenced blockd.
 */
#ifndef SDFS_MDS_STORE_H
#define SDFS_MDS_STORE_H
#include <stddef.h>

#include "mds/objenv.h"

struct sdfs;

/* Fill @st to use @s (which must outlive the database). */
void store_init(struct objenv_store *st, struct sdfs *s);
/*
 * The last object call of this process's store that failed within the
 * last 30 s (an older one was retried past), as one line
 * ("database write of object 0100000000300000 failed: Connection timed
 * out") into @buf; returns its errno (EPERM: refused by a fence), or 0
 * and leaves @buf alone if none failed. Any thread.
 */
int store_last_error(char *buf, size_t len);
#endif
