/*
 * nbdkit_sdfs.c - an nbdkit plugin exporting one sdfs volume file over
 * NBD (docs/volumes.md "NBD: volumes without a mount"):
 *
 *   nbdkit sdfs volume=/vms/vm1.img [conf=FILE] [keyring=FILE]
 *               [snap=NAME] [readonly=BOOL] [wait=BOOL]
 *
 * QEMU, qemu-img and qemu-nbd then reach the volume through libsdfs
 * without a mount. The plugin holds one sdfs handle and ONE open volume
 * for the whole server, opened after nbdkit forked (libsdfs starts
 * threads) and closed at cleanup: the volume's writer lock and fencing
 * token belong to that one open, and every NBD connection shares it
 * (thread model PARALLEL; libsdfs takes I/O from any number of threads
 * on one volume handle). Because sdfs_vol_flush makes every write the
 * handle acknowledged durable, whichever connection sent it, a flush on
 * one connection covers all of them, also one that starts while another
 * runs (libsdfs runs one at a time): multi-conn is advertised.
 *
 * Not here: the volume's data path, lock and fencing (libclient/vol*.c).
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "common/conf.h"
#include "libclient/sdfs.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static const char *conf_file;           /* NULL: $SDFS_CONF, /etc/sdfs/sdfs.conf */
static const char *keyring;             /* NULL: $SDFS_KEYRING, the config's */
static const char *volume;              /* the volume file's path */
static const char *snap;                /* export this snapshot (read-only) */
static int readonly;                    /* open without the writer lock */
static int wait_lock;                   /* wait for the writer lock */

static struct sdfs *fs;
static struct sdfs_vol *vol;
static uint32_t chunk;                  /* the volume's object size */

/* libsdfs's last informational message while the volume is opened
 * (after_fork: one thread): a refusal names the holder there. */
static int opening;
static char open_msg[256];

static void log_nbdkit(int level, const char *msg, void *arg)
{
	(void)arg;
	if (opening && level <= LOG_INFO)
		snprintf(open_msg, sizeof(open_msg), "%s", msg);
	if (level <= LOG_ERR)
		nbdkit_error("%s", msg);
	else
		nbdkit_debug("%s", msg);
}

static int sdfs_config(const char *key, const char *value)
{
	int b;

	/* files relative to where nbdkit started: it changes to / when it
	 * goes into the background */
	if (!strcmp(key, "conf")) {
		free((char *)conf_file);
		conf_file = nbdkit_absolute_path(value);
		if (!conf_file)
			return -1;
	} else if (!strcmp(key, "keyring") || !strcmp(key, "key")) {
		free((char *)keyring);
		keyring = nbdkit_absolute_path(value);
		if (!keyring)
			return -1;
	} else if (!strcmp(key, "volume")) {
		if (value[0] != '/') {
			nbdkit_error("volume=%s: a path in the sdfs namespace, starting with /",
				     value);
			return -1;
		}
		volume = value;
	} else if (!strcmp(key, "snap")) {
		if (!*value || strlen(value) > SDFS_VOL_SNAP_NAME_MAX) {
			nbdkit_error("snap=%s: not a snapshot name", value);
			return -1;
		}
		snap = value;
	} else if (!strcmp(key, "readonly") || !strcmp(key, "wait")) {
		b = nbdkit_parse_bool(value);
		if (b == -1)
			return -1;
		*(key[0] == 'r' ? &readonly : &wait_lock) = b;
	} else {
		nbdkit_error("unknown parameter '%s' (nbdkit sdfs --help)", key);
		return -1;
	}
	return 0;
}

static int sdfs_config_complete(void)
{
	if (!volume) {
		nbdkit_error("volume=PATH is required");
		return -1;
	}
	return 0;
}

/* sdfs_open, or with @keyring the config's cluster as that key (as the
 * CLI's --keyring does). */
static int connect_cluster(struct sdfs **out)
{
	struct sdfs_conf c;
	char err[512] = "";
	int ret;

	if (!keyring) {
		ret = sdfs_open(conf_file, out, err, sizeof(err));
	} else {
		conf_init(&c);
		ret = conf_load(conf_path(conf_file), &c, err, sizeof(err));
		if (!ret)
			ret = sdfs_connect_keyring(c.zk, c.cluster, c.timeout_ms, keyring, out,
						   err, sizeof(err));
		if (!ret)
			sdfs_set_conf(*out, &c);
	}
	if (ret)
		nbdkit_error("%s", err[0] ? err : strerror(-ret));
	return ret;
}

/* After nbdkit forked into the background (or not, with -f): libsdfs's
 * threads must start in the process that serves. */
static int sdfs_after_fork(void)
{
	struct sdfs_vol_info vi;
	struct sdfs_stat st;
	char desc[128], host[64];
	unsigned flags;
	int ret;

	sdfs_set_log(log_nbdkit, NULL, LOG_INFO);
	if (connect_cluster(&fs))
		return -1;
	ret = sdfs_ns_resolve(fs, volume, 1, &st);
	if (ret) {
		nbdkit_error("%s: %s", volume, strerror(-ret));
		return -1;
	}
	opening = 1;
	if (snap) {
		ret = sdfs_vol_open_snap(fs, st.ino, snap, &vol);
	} else {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "?");
		host[sizeof(host) - 1] = '\0';
		snprintf(desc, sizeof(desc), "host=%s pid=%d nbdkit", host, (int)getpid());
		flags = readonly ? 0 : SDFS_VOL_WRITE |
			(wait_lock ? SDFS_VOL_WAIT : SDFS_VOL_GRACE);
		ret = sdfs_vol_open(fs, st.ino, flags, desc, &vol);
	}
	opening = 0;
	if (ret == -EBUSY) {
		nbdkit_error("%s: %s (%s; readonly=true to read, wait=true to wait)",
			     volume, strerror(-ret),
			     open_msg[0] ? open_msg : "another writer holds it");
		return -1;
	}
	if (ret) {
		nbdkit_error("%s%s%s: %s%s", volume, snap ? "@" : "", snap ? snap : "",
			     strerror(-ret), ret == -EMEDIUMTYPE ? " (not a volume file)" : "");
		return -1;
	}
	sdfs_vol_get_info(vol, &vi);
	chunk = vi.obj_size;
	nbdkit_debug("sdfs: %s vid %llu, %llu bytes, %u-byte chunks, %s", volume,
		     (unsigned long long)vi.vid, (unsigned long long)vi.size, vi.obj_size,
		     snap ? "snapshot" : readonly ? "read-only" : "writer");
	return 0;
}

static void sdfs_unload(void)
{
	free((char *)conf_file);
	free((char *)keyring);
}

static void sdfs_cleanup(void)
{
	sdfs_vol_close(vol);    /* flushes, lets the writer lock go */
	vol = NULL;
	sdfs_close(fs);
	fs = NULL;
}

/* Every connection shares the one volume: the handle is a token. */
static void *sdfs_nbd_open(int ro)
{
	static int one;

	(void)ro;
	if (!vol) {
		nbdkit_error("the volume is not open");
		return NULL;
	}
	return &one;
}

/* -errno of libsdfs to the NBD error nbdkit sends: EPERM (fenced),
 * ENOSPC, ENOMEM as they are; anything else (a timeout, an unreachable
 * cluster) is EIO, which NBD clients treat as an I/O error rather than
 * as a bad request (nbdkit would send EINVAL for errnos NBD lacks). */
static int fail(const char *what, int ret)
{
	int e = -ret;

	nbdkit_error("%s: %s", what, strerror(e));
	if (e == EDQUOT)
		e = ENOSPC;
	else if (e != EPERM && e != ENOSPC && e != ENOMEM && e != EROFS)
		e = EIO;
	nbdkit_set_error(e);
	return -1;
}

static int64_t sdfs_get_size(void *h)
{
	(void)h;
	return (int64_t)sdfs_vol_size(vol);
}

static int sdfs_can_write(void *h)
{
	(void)h;
	return !readonly && !snap;
}

static int sdfs_can_yes(void *h)
{
	(void)h;
	return 1;
}

static int sdfs_can_fua(void *h)
{
	(void)h;
	return NBDKIT_FUA_NATIVE;       /* a write with FUA: write, then flush */
}

static int sdfs_pread(void *h, void *buf, uint32_t count, uint64_t off, uint32_t flags)
{
	ssize_t n;

	(void)h;
	(void)flags;
	while (count) {
		n = sdfs_vol_pread(vol, buf, count, off);
		if (n < 0)
			return fail("read", (int)n);
		if (n == 0) {   /* past the end (the volume shrank): zeros */
			memset(buf, 0, count);
			break;
		}
		buf = (char *)buf + n;
		count -= (uint32_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * A flush returns once every write acknowledged before it is durable,
 * whichever connection (or worker thread) sent it, also while another
 * flush runs (sdfs_vol_flush waits for it): what multi-conn promises.
 */
static int sdfs_flush(void *h, uint32_t flags)
{
	int ret;

	(void)h;
	(void)flags;
	ret = sdfs_vol_flush(vol);
	return ret ? fail("flush", ret) : 0;
}

static int sdfs_pwrite(void *h, const void *buf, uint32_t count, uint64_t off,
		       uint32_t flags)
{
	int ret = sdfs_vol_pwrite(vol, buf, count, off);

	if (ret)
		return fail("write", ret);
	return flags & NBDKIT_FLAG_FUA ? sdfs_flush(h, 0) : 0;
}

static int sdfs_trim(void *h, uint32_t count, uint64_t off, uint32_t flags)
{
	int ret = sdfs_vol_punch(vol, off, count);

	if (ret)
		return fail("trim", ret);
	return flags & NBDKIT_FLAG_FUA ? sdfs_flush(h, 0) : 0;
}

/*
 * Zeros: a punch reads back as zeros and unallocates whole chunks, so
 * it serves a write-zeroes that may trim. One that must stay allocated
 * (NBD_CMD_FLAG_NO_HOLE) is refused with ENOTSUP: nbdkit then writes
 * zeros itself, or answers ENOTSUP to a fast-zero request.
 */
static int sdfs_zero(void *h, uint32_t count, uint64_t off, uint32_t flags)
{
	if (!(flags & NBDKIT_FLAG_MAY_TRIM)) {
		nbdkit_set_error(ENOTSUP);
		return -1;
	}
	return sdfs_trim(h, count, off, flags);
}

/* Data or hole by chunk, as lseek SEEK_DATA/SEEK_HOLE on the mount:
 * a chunk no state ever wrote reads as zeros without I/O. */
static int sdfs_extents(void *h, uint32_t count, uint64_t off, uint32_t flags,
			struct nbdkit_extents *ex)
{
	uint64_t end = off + count, size = sdfs_vol_size(vol), pos = off, next;
	uint32_t type;

	(void)h;
	if (end > size)
		end = size;
	while (pos < end) {
		type = sdfs_vol_chunk_owner(vol, pos / chunk) ? 0 :
			NBDKIT_EXTENT_HOLE | NBDKIT_EXTENT_ZERO;
		next = (pos / chunk + 1) * chunk;
		if (next > size)
			next = size;
		if (nbdkit_add_extent(ex, pos, next - pos, type) == -1)
			return -1;
		pos = next;
		if (flags & NBDKIT_FLAG_REQ_ONE)
			break;  /* nbdkit merges the first run of one type */
	}
	return 0;
}

static struct nbdkit_plugin plugin = {
	.name = "sdfs",
	.longname = "sdfs volume file",
	.description = "Export an sdfs volume file over NBD without a mount",
	.config = sdfs_config,
	.config_complete = sdfs_config_complete,
	.config_help =
		"volume=PATH      (required) the volume file, a path in the namespace\n"
		"conf=FILE        the client config (default $SDFS_CONF, /etc/sdfs/sdfs.conf)\n"
		"keyring=FILE     connect with this key (default $SDFS_KEYRING, the config's)\n"
		"snap=NAME        export snapshot NAME of the volume (read-only)\n"
		"readonly=BOOL    open without the writer lock (the live state, read-only)\n"
		"wait=BOOL        wait for another writer's lock instead of failing (EBUSY)",
	.magic_config_key = "volume",
	.after_fork = sdfs_after_fork,
	.cleanup = sdfs_cleanup,
	.unload = sdfs_unload,
	.open = sdfs_nbd_open,
	.get_size = sdfs_get_size,
	.can_write = sdfs_can_write,
	.can_flush = sdfs_can_yes,
	.can_trim = sdfs_can_write,
	.can_zero = sdfs_can_write,
	.can_fast_zero = sdfs_can_write,
	.can_fua = sdfs_can_fua,
	.can_multi_conn = sdfs_can_yes,
	.can_extents = sdfs_can_yes,
	.pread = sdfs_pread,
	.pwrite = sdfs_pwrite,
	.flush = sdfs_flush,
	.trim = sdfs_trim,
	.zero = sdfs_zero,
	.extents = sdfs_extents,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
