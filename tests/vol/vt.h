/*
 * vt.h - what the volume-file tests share (docs/volumes.md): the
 * cluster they all run on (3 blockd, copies 3, 2 mds, a mount), making
 * a volume file, I/O through the mount with plain syscalls, patterns
 * that say where a byte came from, reading a volume or a snapshot
 * through libsdfs, running a command with a deadline, listing the
 * objects each block daemon holds, and a second mount of the same
 * cluster.
 *
 * Every helper fails the test (cr_assert) on anything unexpected unless
 * it documents a return value. Waits are polled checks with deadlines.
 */
#ifndef SDFS_TESTS_VOL_VT_H
#define SDFS_TESTS_VOL_VT_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/cluster/fixture.h"

#define VT_WAIT_MS 30000        /* default deadline of the polled waits */
#define VT_CMD_MS 180000        /* no external command may take longer */

/* The cluster every volume test uses: 3 blockd, copies 3, 2 mds, mount. */
struct tcluster *vt_start(void);

/* DIR/mnt/@name into @buf (PATH_MAX + 64 bytes), returned. */
const char *vt_path(struct tcluster *tc, const char *name, char *buf);

/* A new volume file /@name (the mount's @name) of @size bytes, objects
 * of @obj_size (0: the cluster's), the cluster's copies; its stat into
 * @st (NULL ok). Returns its inode number. */
uint64_t vt_create(struct tcluster *tc, const char *name, uint64_t size,
		   uint32_t obj_size, struct sdfs_stat *st);
/* /@name's inode number through libsdfs (fails the test if absent). */
uint64_t vt_ino(struct tcluster *tc, const char *name);
/* The live state of @ino (sdfs_vol_info). */
void vt_info(struct tcluster *tc, uint64_t ino, const char *snap,
	     struct sdfs_vol_info *vi);

/* open(2) of the mount's @name, retrying ENOENT until a deadline (the
 * mount caches negative entries for its entry timeout). -1 with errno
 * set on any other failure. */
int vt_open(struct tcluster *tc, const char *name, int flags);
/* The same, failing the test unless it opened. */
int vt_xopen(struct tcluster *tc, const char *name, int flags);

/* pwrite/pread all of [off, off+len) or fail the test saying @what. */
void vt_pwrite(int fd, const void *buf, size_t len, uint64_t off, const char *what);
void vt_pread(int fd, void *buf, size_t len, uint64_t off, const char *what);
void vt_fsync(int fd, const char *what);

/* A 4096-aligned buffer of @len bytes (free with free()). */
void *vt_alloc(size_t len);

/* Fill @buf with pattern @tag as it is at offsets [off, off+len): each
 * byte depends on the tag and its absolute offset, so a byte read back
 * says which pattern and which place it came from. tag 0 is zeros. */
void vt_fill(void *buf, size_t len, uint64_t off, uint64_t tag);
/* Apply pattern @tag at [off, off+len) to the model @model. */
void vt_model_write(uint8_t *model, uint64_t off, size_t len, uint64_t tag);

/* Compare @got with @want (@len bytes that sit at volume offset @base);
 * on a difference fail the test naming @what, the first and last
 * differing offsets, the chunk of @chunk bytes, and the bytes. */
void vt_assert_same(const void *got, const void *want, size_t len, uint64_t base,
		    uint32_t chunk, const char *what);

/* Write pattern @tag at [off, off+len) through the volume handle @v
 * (asserting success) and into @model. */
void vt_vol_put(struct sdfs_vol *v, uint8_t *model, uint64_t off, size_t len, uint64_t tag);
/* [off, off+len) of @v reads as @model there (chunks of @chunk bytes,
 * for the message). */
void vt_vol_check(struct sdfs_vol *v, const uint8_t *model, uint64_t off, size_t len,
		  uint32_t chunk, const char *what);
/* The strip files of EC object @oid on every block daemon's disk of
 * @tc: those with data into *@data (their bytes into *@bytes if not
 * NULL); returns those of a header only (tombstones). */
size_t vt_strips(struct tcluster *tc, uint64_t oid, size_t *data, uint64_t *bytes);

/* The whole content [0, @len) of the live state of @ino (a read-only
 * handle) or of its snapshot @snap, through libsdfs, into @buf. */
void vt_read_vol(struct tcluster *tc, uint64_t ino, const char *snap, void *buf,
		 size_t len);
/* The content [0, @len) of the mount's @name into @buf, through a new
 * descriptor (O_DIRECT if @direct, with an aligned bounce buffer). */
void vt_read_file(struct tcluster *tc, const char *name, void *buf, size_t len,
		  int direct);

/*
 * Run @argv (stdin /dev/null, stdout+stderr captured into *@out,
 * malloc'd, NULL to discard) with every other descriptor closed. Its
 * exit status, 128 + signal if killed; still running after @timeout_ms
 * it is SIGKILLed and the test fails.
 */
int vt_run(char *const argv[], char **out, int timeout_ms);
/* vt_run, with the command line, its exit status and output logged
 * (cr_log_info); the output also into *@out if @out (malloc'd). */
int vt_run_logged(char *const argv[], char **out);
/* fork+exec @argv in the background the same way (output to @log_path,
 * appended); its pid. */
pid_t vt_spawn(char *const argv[], const char *log_path);
/* Wait up to @timeout_ms for child @pid; its status as vt_run, or -1 if
 * still running. */
int vt_wait_child(pid_t pid, int timeout_ms);

/* `sdfs -c DIR/sdfs.conf @args...` ($SDFS_BIN; @args NULL-terminated)
 * with its stdout into the file @out_path (binary: a raw export) and
 * stderr into *@err (malloc'd; NULL to discard). Its exit status. */
int vt_sdfs_to_file(struct tcluster *tc, const char *out_path, char **err,
		    const char *const args[]);
/* The whole file @path into *@buf (malloc'd); its length. */
size_t vt_slurp(const char *path, uint8_t **buf);

/* ---- what the block daemons hold ----
 * Every node of the cluster map, asked for its whole object list
 * (OBJ_LIST with SDFS_F_EPOCHS, page by page, over its own connection):
 * the oids of its live copies for which @want (NULL: all) is true,
 * tombstones left out. Fails the test unless every node of the map is
 * up and answers. */
#define VT_MAX_NODES 16
struct vt_node_objs {
	uint32_t node_id;
	size_t n;
	uint64_t *oids;         /* ascending; malloc'd */
};
/* Fills @out[0..returned); free with vt_node_objs_free. */
size_t vt_node_objects(struct tcluster *tc, int (*want)(uint64_t oid),
		       struct vt_node_objs out[VT_MAX_NODES]);
void vt_node_objs_free(struct vt_node_objs *o, size_t n);

/* An admin ZooKeeper session of the test's cluster: credentials of the
 * keyring its config names (dev up's admin keyring, DIR/keyring), none
 * on a cluster formatted --auth none (its nodes are open). Close it
 * with coord_close. */
struct coord *vt_coord(struct tcluster *tc);

/* ---- a process that outlives a test killed by a timeout ----
 * On EOF of its pipe (the test process died) it unmounts @unmount (NULL:
 * nothing) and stops @pid (SIGCONT, SIGTERM, then SIGKILL after ~10 s),
 * only that pid. vt_watchdog_stop: the test ended normally; the watchdog
 * exits doing nothing. */
struct vt_watchdog {
	pid_t pid;
	int fd;
};
void vt_watchdog_start(struct vt_watchdog *w, pid_t pid, const char *unmount);
void vt_watchdog_stop(struct vt_watchdog *w);

/* ---- a second mount of the test's cluster ----
 * mount.sdfs -f ($MOUNT_SDFS) at @path (made if missing), as this
 * process's child. A watchdog process unmounts it and kills that pid if
 * the test process dies before vt_mount2_stop (a criterion timeout). */
struct vt_mount2 {
	char path[4096];
	pid_t pid;
	struct vt_watchdog wd;
};
/* Mounted and answering when this returns. @extra: more -o options or NULL. */
void vt_mount2_start(struct tcluster *tc, struct vt_mount2 *m, const char *path,
		     const char *extra);
/* fusermount3 -u (lazily if busy), then wait for its daemon to exit
 * (SIGTERM, then SIGKILL, to that pid only). Safe to call twice. */
void vt_mount2_stop(struct vt_mount2 *m);
/* Is something mounted at @path? */
int vt_is_mounted(const char *path);

/* ---- QEMU's machine protocol (QMP) on a unix socket ----
 * One command, one answer; every wait is bounded (VT_QMP_MS) and fails
 * the test. */
#define VT_QMP_MS 60000
struct vt_qmp {
	int fd;
	size_t len;
	char buf[65536];
};
/* Connect to the socket @path of a QEMU just started (retried until it
 * is there) and leave capabilities negotiation. */
void vt_qmp_open(struct vt_qmp *q, const char *path);
void vt_qmp_close(struct vt_qmp *q);
/* Send @cmd (one JSON object); its answer line (events skipped) into
 * @out. A QMP error fails the test. */
void vt_qmp_cmd(struct vt_qmp *q, const char *cmd, char *out, size_t cap);
/* Quit that QEMU (its answer or its closing the socket, whichever
 * comes), and close @q. */
void vt_qmp_quit(struct vt_qmp *q);
/* The "status" value of command @exec's answer (query-status,
 * query-migrate) into @status. */
void vt_qmp_status(struct vt_qmp *q, const char *exec, char *status, size_t cap);
/* Migrate the VM of @src to the URI @uri (its destination started with
 * -incoming @uri), unthrottled; wait until it completed; its ms. */
int64_t vt_qmp_migrate(struct vt_qmp *src, const char *uri);
#endif
