/*
 * lease.h - what each subscribed client may have cached, and telling it
 * before a change that makes it stale is acknowledged
 * (docs/consistency.md, "Pushed invalidations").
 *
 * A client subscribes (NS_SUBSCRIBE) on a connection of its own, saying
 * how long it caches what it is told (cache_ms). From then on every
 * reply that gives it an inode's attributes or says what a name in a
 * directory is grants it a lease on that item until now + cache_ms
 * (+ a margin): an inode lease, an entry lease (directory, name), or a
 * listing lease (the whole directory: readdirplus). Grants are made
 * before the state is read, so a change committed after the read finds
 * the lease.
 *
 * A mutation notes, while it builds its batch, every inode record it
 * writes and every name it adds or removes (lease_note_*: thread-local,
 * between lease_collect_begin and lease_collect_end). Once the batch is
 * durable, lease_collect_end takes the leases other clients hold on
 * those items, sends each client one NS_NOTIFY with its items, and waits
 * until each answered — or until its leases ended, when it cannot be
 * reached: then it no longer caches them either. Only then is the
 * mutation acknowledged. The client that made the change is not told:
 * its kernel updates its own cache from the reply, and it keeps its
 * leases.
 *
 * Nothing here survives the process: a new active starts with no
 * leases, which is safe because it serves its first request more than
 * a cache time after the old active answered its last (a deposed active
 * stops answering when its ZooKeeper lease lapses, half a session
 * before a standby can be elected; docs/consistency.md).
 *
 * Thread-safe; clients never subscribed cost a lookup per grant.
 */
#ifndef SDFS_MDS_LEASE_H
#define SDFS_MDS_LEASE_H
#include <stddef.h>
#include <stdint.h>

#include "common/sdfs_proto.h"

struct leases;
struct lease_sub;

int leases_new(struct leases **out);
void leases_free(struct leases *l);     /* no subscription may be left */

/* @fd (owned by the caller, open until lease_unsubscribe) becomes
 * @client's channel; a client that subscribes again replaces its old
 * channel. @tx (NULL: none): the connection's session, borrowed until
 * lease_unsubscribe; notifications are tagged with its tx direction
 * under the subscription's lock, nothing else may send on @fd meanwhile.
 * NULL on ENOMEM. */
struct auth_sess;
struct lease_sub *lease_subscribe(struct leases *l, uint64_t client, uint32_t cache_ms,
				  int fd, struct auth_sess *tx);
/* The client sees inode @root as SDFS_ROOT_INO (its key's path=
 * subtree, mds/kcaps.h): notifications name it so. 0: none. */
void lease_sub_root(struct lease_sub *sub, uint64_t root);
/* The client answered the notification numbered @seq on channel @fd. */
void lease_acked(struct lease_sub *sub, int fd, uint64_t seq);
/* The channel @fd is gone (closed after this; a newer channel of the
 * client is left alone). The client's leases stay until they end. */
void lease_unsubscribe(struct lease_sub *sub, int fd);

/* Grants to @client (no-op unless it is subscribed). lease_grant_inode
 * returns 1 if @client now holds a lease on @ino (SDFS_ATTR_F_LEASED),
 * else 0. */
int lease_grant_inode(struct leases *l, uint64_t client, uint64_t ino);
void lease_grant_entry(struct leases *l, uint64_t client, uint64_t parent,
		       const char *name, size_t nlen);
/* 1 if @client now holds a lease on @dir's names. */
int lease_grant_listing(struct leases *l, uint64_t client, uint64_t dir);

/* The changes of one operation on this thread. */
void lease_collect_begin(void);
void lease_note_inode(uint64_t ino);
/* What this operation changed of the noted @ino is its atime alone (a
 * read's update): the clients told get SDFS_NOTE_F_ATIME. */
void lease_note_atime_only(uint64_t ino);
void lease_note_entry(uint64_t parent, const char *name, size_t nlen);
/* The operation of @requester ended; if it @committed, push what it
 * changed to the other clients holding leases and wait (above). */
void lease_collect_end(struct leases *l, uint64_t requester, int committed);

/* Send @client one item now (SDFS_NOTE_LOCK: a wake-up) if it has a
 * channel; never waits, and a client without one is not told. */
void lease_hint(struct leases *l, uint64_t client, const struct sdfs_note *iv);

/* Counters for mds info / logs. */
struct lease_stats {
	uint64_t subs, leases, pushes, push_items, push_timeouts, hints;
};
void lease_stats(struct leases *l, struct lease_stats *st);
#endif
