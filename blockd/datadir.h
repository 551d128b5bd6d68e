/*
 * datadir.h - small state files in a blockd data directory (node_id,
 * cluster_uuid, clean_epoch), written durably: a temporary file,
 * fsync, rename, fsync of the directory. Thread-safe for distinct names.
 */
#ifndef SDFS_BLOCKD_DATADIR_H
#define SDFS_BLOCKD_DATADIR_H
#include <stddef.h>
#include <stdint.h>

/* Read @dir/@name (at most @len - 1 bytes, NUL-terminated). -ENOENT... */
int datadir_read(const char *dir, const char *name, char *buf, size_t len);
/* Replace @dir/@name with @text, durably. */
int datadir_write(const char *dir, const char *name, const char *text);
/* The same for a file holding one decimal number and a newline.
 * read: -ENOENT, or -EBADMSG if it is not exactly that. */
int datadir_read_u64(const char *dir, const char *name, uint64_t *v);
int datadir_write_u64(const char *dir, const char *name, uint64_t v);
#endif
