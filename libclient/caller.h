/*
 * caller.h - who this thread's namespace calls act as (sdfs.h
 * sdfs_set_caller): nsclient.c puts it into every request.
 */
#ifndef SDFS_LIBCLIENT_CALLER_H
#define SDFS_LIBCLIENT_CALLER_H
#include "common/sdfs_proto.h"

/* Fill @r's cuid, cgid, ngroups and groups: the thread's caller if one
 * is set, else the process's own ids. */
void caller_fill(struct sdfs_ns_req *r);
#endif
