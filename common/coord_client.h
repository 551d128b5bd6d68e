/*
 * coord_client.h - live lock holders in ZooKeeper: one ephemeral node
 * per client identity, clients/<id> (16 hex digits) under the cluster's
 * base. A client creates its node before its first lock request
 * (libclient/lock.c); the active mds drops every lock of an id whose
 * node is gone (mds/lock.c), so locks die with the session that made
 * them. Same threading rules as coord.h (blocking; any thread).
 */
#ifndef SDFS_COMMON_COORD_CLIENT_H
#define SDFS_COMMON_COORD_CLIENT_H
#include <stddef.h>
#include <stdint.h>

#include "common/coord.h"

/* Create clients/<@id> (ephemeral, holding @desc, may be NULL) in the
 * current session. Existing already (a retried create of ours): 0. */
int coord_client_register(struct coord *c, uint64_t id, const char *desc);
/* Delete clients/<@id> (absent: 0). */
int coord_client_unregister(struct coord *c, uint64_t id);
/* The ids with a node, sorted; free *@out with free(). No directory
 * yet: 0 ids. Names that are not 16 hex digits are skipped. */
int coord_client_list(struct coord *c, uint64_t **out, size_t *n);
/* Is @id among the @n sorted @ids coord_client_list gave? Pure. */
int coord_client_listed(const uint64_t *ids, size_t n, uint64_t id);
#endif
