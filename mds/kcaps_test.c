/*
 * kcaps_test.c - mds/kcaps.c on a real namespace (LevelDB over objects
 * kept in memory, the ns_*.c code of sdfs-mds) run through ns_exec as
 * keys with each cap: read-only keys change nothing; a key restricted
 * to /a sees /a as its root, lists and reads nothing of /b, reaches
 * nothing by guessed inode numbers, and ".." from its root stays
 * there; links and renames across the boundary fail; a renamed subtree
 * is gone for the key; back-links are built for an older database;
 * root_squash and uid maps set the owners of creates; admin-only ops.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/proto.h"
#include "mds/caller.h"
#include "mds/kcaps.h"
#include "mds/lease.h"
#include "mds/ns_int.h"
#include "mds/vol.h"

/* ---- objects in memory ---- */

#define OBJ_SIZE (256u << 10)

struct mobj {
	uint64_t oid, len;
	uint8_t *buf;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct mobj *objs;
static size_t nobjs;

static struct mobj *find(uint64_t oid)
{
	for (size_t i = 0; i < nobjs; i++)
		if (objs[i].oid == oid && objs[i].buf)
			return &objs[i];
	return NULL;
}

static int m_write(void *ctx, uint64_t oid, uint64_t off, const void *buf, size_t len)
{
	struct mobj *o;

	(void)ctx;
	if (off + len > OBJ_SIZE)
		return -EINVAL;
	pthread_mutex_lock(&mu);
	o = find(oid);
	if (!o) {
		objs = realloc(objs, (nobjs + 1) * sizeof(*objs));
		o = &objs[nobjs++];
		*o = (struct mobj){ .oid = oid, .buf = calloc(1, OBJ_SIZE) };
	}
	memcpy(o->buf + off, buf, len);
	if (off + len > o->len)
		o->len = off + len;
	pthread_mutex_unlock(&mu);
	return 0;
}

static ssize_t m_read(void *ctx, uint64_t oid, uint64_t off, void *buf, size_t len)
{
	struct mobj *o;
	ssize_t n = 0;

	(void)ctx;
	pthread_mutex_lock(&mu);
	o = find(oid);
	if (!o) {
		n = -ENOENT;
	} else if (off < o->len) {
		n = (ssize_t)(o->len - off < len ? o->len - off : len);
		memcpy(buf, o->buf + off, (size_t)n);
	}
	pthread_mutex_unlock(&mu);
	return n;
}

static int m_length(void *ctx, uint64_t oid, uint64_t *len)
{
	struct mobj *o;

	(void)ctx;
	pthread_mutex_lock(&mu);
	o = find(oid);
	if (o)
		*len = o->len;
	pthread_mutex_unlock(&mu);
	return o ? 0 : -ENOENT;
}

static int m_remove(void *ctx, uint64_t oid)
{
	struct mobj *o;

	(void)ctx;
	pthread_mutex_lock(&mu);
	o = find(oid);
	if (o) {
		free(o->buf);
		o->buf = NULL;
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

/* ---- a namespace as ns_open makes one, without volumes, locks,
 * opens and purge (no cluster behind it) ---- */

static struct ns *ns;
static uint64_t seq, client = 7;

static void ns_up(void)
{
	struct objenv_store st = { .write = m_write, .read = m_read,
		.length = m_length, .remove = m_remove, .obj_size = OBJ_SIZE };
	struct kvbatch *b;
	struct inode root = { 0 };
	uint8_t v[8];
	char err[256] = "";

	ns = calloc(1, sizeof(*ns));
	ns->epoch = 1;
	strcpy(ns->name, "mds.test");
	ns->obj_size = 1u << 20;
	for (int i = 0; i < NS_LOCKS; i++)
		pthread_mutex_init(&ns->locks[i], NULL);
	pthread_mutex_init(&ns->rename_lock, NULL);
	pthread_mutex_init(&ns->ino_lock, NULL);
	pthread_mutex_init(&ns->statfs_lock, NULL);
	pthread_mutex_init(&ns->cache_lock, NULL);
	cr_assert_eq(replycache_init(ns), 0);
	cr_assert_eq(leases_new(&ns->leases), 0);
	cr_assert_eq(kvdb_open(&st, NULL, &ns->db, err, sizeof(err)), 0, "%s", err);
	/* make_root's */
	b = kvbatch_new();
	root.a.ino = SDFS_ROOT_INO;
	root.a.gen = 1;
	root.a.mode = S_IFDIR | 0755;
	root.a.nlink = 2;
	root.a.parent = SDFS_ROOT_INO;
	root.next_seq = NS_FIRST_COOKIE;
	inode_put(b, &root);
	le64_put(v, NS_INO_BATCH);
	kvbatch_put(b, "Mino_next", 9, v, 8);
	cr_assert_eq(ns_commit(ns, b), 0);
	kvbatch_free(b);
	ns->ino_next = SDFS_ROOT_INO + 1;
	ns->ino_limit = NS_INO_BATCH;
	cr_assert_eq(kcaps_open(ns), 0);
}

static void ns_down(void)
{
	kvdb_close(ns->db);
	replycache_free(ns);
	leases_free(ns->leases);
	free(ns);
	for (size_t i = 0; i < nobjs; i++)
		free(objs[i].buf);
	free(objs);
	objs = NULL;
	nobjs = 0;
}

TestSuite(kcaps, .init = ns_up, .fini = ns_down, .timeout = 60);

/* ---- keys and requests ---- */

static struct auth_ident key(const char *caps)
{
	struct auth_ident k;
	char err[256];

	memset(&k, 0, sizeof(k));
	strcpy(k.name, "client.t");
	cr_assert_eq(auth_caps_parse(caps, &k.caps, err, sizeof(err)), 0, "%s: %s",
		     caps, err);
	return k;
}

/* Run @op as @k (NULL: no key); the reply's payload into @out. */
static int run(const struct auth_ident *k, unsigned op, uint64_t ino, uint64_t ino2,
	       const char *name, const char *name2, uint32_t mode, uint32_t uid,
	       struct ns_reply *out)
{
	struct sdfs_ns_req r = { .client_id = client, .seq = ++seq, .ino = ino, .ino2 = ino2,
				 .mode = mode, .uid = uid, .gid = uid };
	struct ns_caller who;
	struct ns_reply rep;
	int ret;

	r.name_len = name ? (uint16_t)strlen(name) : 0;
	r.name2_len = name2 ? (uint16_t)strlen(name2) : 0;
	if (op == SDFS_OP_NS_READDIR)
		r.flags = SDFS_NS_PLUS;
	caller_make(k, uid, uid, NULL, 0, &who);
	ret = ns_exec(ns, &who, op, &r, name ? name : "", name2 ? name2 : "",
		      NULL, &rep);
	if (out)
		*out = rep;
	else
		free(rep.data);
	return ret;
}

static int attr_of(const struct auth_ident *k, unsigned op, uint64_t ino,
		   const char *name, uint32_t mode, uint32_t uid, struct sdfs_attr *a)
{
	struct ns_reply rep;
	int ret = run(k, op, ino, 0, name, NULL, mode, uid, &rep);

	if (!ret) {
		cr_assert_eq(proto_attr_decode(rep.data, rep.len, a), 0);
		free(rep.data);
	}
	return ret;
}

static uint64_t mk(const struct auth_ident *k, uint64_t dir, const char *name, int is_dir)
{
	struct sdfs_attr a;
	int ret = attr_of(k, is_dir ? SDFS_OP_NS_MKDIR : SDFS_OP_NS_MKNOD, dir, name,
			  is_dir ? 0755 : (S_IFREG | 0644), 0, &a);

	cr_assert_eq(ret, 0, "create %s: %s", name, strerror(-ret));
	return a.ino;
}

static int getattr(const struct auth_ident *k, uint64_t ino, struct sdfs_attr *a)
{
	return attr_of(k, SDFS_OP_NS_GETATTR, ino, NULL, 0, 0, a);
}

static int lookup(const struct auth_ident *k, uint64_t dir, const char *name,
		  struct sdfs_attr *a)
{
	return attr_of(k, SDFS_OP_NS_LOOKUP, dir, name, 0, 0, a);
}

/* READDIR(PLUS) of @dir as @k: the names, ","-joined, into @names. */
static int list(const struct auth_ident *k, uint64_t dir, char *names, size_t len,
		struct sdfs_attr *first)
{
	struct ns_reply rep;
	size_t off = 0;
	int ret = run(k, SDFS_OP_NS_READDIR, dir, 0, NULL, NULL, 0, 0, &rep);

	names[0] = '\0';
	if (ret)
		return ret;
	while (off < rep.len) {
		struct sdfs_dirent d;
		struct sdfs_attr a;
		const char *name;
		ssize_t n = proto_dirent_decode(rep.data + off, rep.len - off, 1, &d,
						&name, &a);

		cr_assert_gt(n, 0);
		if (off == 0 && first)
			*first = a;
		snprintf(names + strlen(names), len - strlen(names), "%s%.*s",
			 off ? "," : "", (int)d.name_len, name);
		off += (size_t)n;
	}
	free(rep.data);
	return 0;
}

/* /a/sub/f, /a/g, /b/secret, /b/dir; their inodes */
static uint64_t a, sub, f, g, bdir, secret, bsub;

static void tree(void)
{
	a = mk(NULL, SDFS_ROOT_INO, "a", 1);
	sub = mk(NULL, a, "sub", 1);
	f = mk(NULL, sub, "f", 0);
	g = mk(NULL, a, "g", 0);
	bdir = mk(NULL, SDFS_ROOT_INO, "b", 1);
	secret = mk(NULL, bdir, "secret", 0);
	bsub = mk(NULL, bdir, "dir", 1);
}

/* ---- read-only ---- */

Test(kcaps, a_read_only_key_changes_nothing_and_reads_everything)
{
	struct auth_ident ro = key("ro");
	struct sdfs_attr at;
	char names[256];

	tree();
	cr_assert_eq(run(&ro, SDFS_OP_NS_MKDIR, a, 0, "x", NULL, 0755, 0, NULL), -EROFS);
	cr_assert_eq(run(&ro, SDFS_OP_NS_MKNOD, a, 0, "x", NULL, S_IFREG | 0644, 0, NULL),
		     -EROFS);
	cr_assert_eq(run(&ro, SDFS_OP_NS_SYMLINK, a, 0, "x", NULL, 0, 0, NULL), -EROFS);
	cr_assert_eq(run(&ro, SDFS_OP_NS_UNLINK, a, 0, "g", NULL, 0, 0, NULL), -EROFS);
	cr_assert_eq(run(&ro, SDFS_OP_NS_RMDIR, a, 0, "sub", NULL, 0, 0, NULL), -EROFS);
	cr_assert_eq(run(&ro, SDFS_OP_NS_RENAME, a, a, "g", "h", 0, 0, NULL), -EROFS);
	cr_assert_eq(run(&ro, SDFS_OP_NS_LINK, g, a, NULL, "h", 0, 0, NULL), -EROFS);
	cr_assert_eq(run(&ro, SDFS_OP_NS_SETATTR, g, 0, NULL, NULL, 0, 0, NULL), -EROFS);
	cr_assert_eq(run(&ro, SDFS_OP_NS_SETXATTR, g, 0, "user.x", NULL, 0, 0, NULL), -EROFS);
	cr_assert_eq(run(&ro, SDFS_OP_NS_RMXATTR, g, 0, "user.x", NULL, 0, 0, NULL), -EROFS);
	for (unsigned op = SDFS_OP_NS_VOL_CREATE; op <= SDFS_OP_NS_VOL_CLONE; op++)
		if (op != SDFS_OP_NS_VOL_INFO && op != SDFS_OP_NS_VOL_SNAPLIST)
			cr_assert_eq(run(&ro, op, g, a, "s", "t", 0, 0, NULL), -EROFS,
				     "op 0x%x", op);
	/* nothing happened */
	cr_assert_eq(list(NULL, a, names, sizeof(names), NULL), 0);
	cr_assert_str_eq(names, "sub,g");
	/* and reading works */
	cr_assert_eq(lookup(&ro, a, "g", &at), 0);
	cr_assert_eq(at.ino, g);
	cr_assert_eq(list(&ro, SDFS_ROOT_INO, names, sizeof(names), NULL), 0);
	cr_assert_str_eq(names, "a,b");
	cr_assert(!kcaps_may_write(&(struct ns_caller){ .key = &ro }));
	cr_assert(kcaps_may_write(&(struct ns_caller){ .key = NULL }));
}

Test(kcaps, a_read_only_key_may_still_lock)
{
	struct auth_ident ro = key("ro");
	struct sdfs_ns_req r = { .client_id = 7, .seq = 1, .ino = SDFS_ROOT_INO };
	struct ns_caller who;
	struct kcaps_req kr;

	caller_make(&ro, 0, 0, NULL, 0, &who);
	for (unsigned op = SDFS_OP_NS_LOCK_SET; op <= SDFS_OP_NS_LOCK_RELEASE; op++)
		cr_assert_eq(kcaps_enter(ns, &who, op, &r, "", &kr), 0, "op 0x%x", op);
	cr_assert_eq(kcaps_enter(ns, &who, SDFS_OP_NS_OPEN, &r, "", &kr), 0);
}

/* ---- a path-restricted key ---- */

Test(kcaps, a_path_key_sees_its_subtree_as_the_root)
{
	struct auth_ident k = key("rw,path=/a");
	struct sdfs_attr at, first;
	char names[256];

	tree();
	cr_assert_eq(getattr(&k, SDFS_ROOT_INO, &at), 0);
	cr_assert_eq(at.ino, SDFS_ROOT_INO, "the root is shown as the root");
	cr_assert_eq(at.parent, SDFS_ROOT_INO);
	cr_assert_eq(at.nlink, 3, "/a's attributes (2 + sub)");
	cr_assert_eq(list(&k, SDFS_ROOT_INO, names, sizeof(names), &first), 0);
	cr_assert_str_eq(names, "sub,g", "the root lists /a");
	cr_assert_eq(first.ino, sub);
	cr_assert_eq(first.parent, SDFS_ROOT_INO, "sub's parent is the key's root");
	cr_assert_eq(lookup(&k, SDFS_ROOT_INO, "sub", &at), 0);
	cr_assert_eq(at.ino, sub);
	cr_assert_eq(at.parent, SDFS_ROOT_INO);
	cr_assert_eq(lookup(&k, SDFS_ROOT_INO, "b", &at), -ENOENT);
	cr_assert_eq(lookup(&k, SDFS_ROOT_INO, "a", &at), -ENOENT);
	/* ".." stays inside */
	cr_assert_eq(lookup(&k, SDFS_ROOT_INO, "..", &at), 0);
	cr_assert_eq(at.ino, SDFS_ROOT_INO);
	cr_assert_eq(lookup(&k, sub, "..", &at), 0);
	cr_assert_eq(at.ino, SDFS_ROOT_INO);
	cr_assert_eq(lookup(&k, SDFS_ROOT_INO, ".", &at), 0);
	cr_assert_eq(at.ino, SDFS_ROOT_INO);
	/* creates land in /a */
	uint64_t n = mk(&k, SDFS_ROOT_INO, "new", 1);
	cr_assert_eq(lookup(NULL, a, "new", &at), 0);
	cr_assert_eq(at.ino, n);
	cr_assert_eq(getattr(&k, n, &at), 0);
	cr_assert_eq(at.parent, SDFS_ROOT_INO);
	/* an unrestricted key still sees the real tree */
	cr_assert_eq(list(NULL, SDFS_ROOT_INO, names, sizeof(names), NULL), 0);
	cr_assert_str_eq(names, "a,b");
}

Test(kcaps, a_path_key_reaches_nothing_outside_even_by_inode_number)
{
	struct auth_ident k = key("rw,path=/a");
	struct sdfs_attr at;
	struct ns_reply rep;
	char names[256];
	int seen = 0;

	tree();
	cr_assert_eq(getattr(&k, secret, &at), -ENOENT);
	cr_assert_eq(getattr(&k, bdir, &at), -ENOENT);
	cr_assert_eq(getattr(&k, bsub, &at), -ENOENT);
	cr_assert_eq(list(&k, bdir, names, sizeof(names), NULL), -ENOENT);
	cr_assert_eq(lookup(&k, bdir, "secret", &at), -ENOENT);
	cr_assert_eq(lookup(&k, bsub, "..", &at), -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_READLINK, secret, 0, NULL, NULL, 0, 0, NULL),
		     -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_GETXATTR, secret, 0, "user.x", NULL, 0, 0, NULL),
		     -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_LISTXATTR, secret, 0, NULL, NULL, 0, 0, NULL),
		     -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_SETATTR, secret, 0, NULL, NULL, 0, 0, NULL),
		     -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_UNLINK, bdir, 0, "secret", NULL, 0, 0, NULL),
		     -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_MKNOD, bdir, 0, "x", NULL, S_IFREG | 0644, 0,
			 NULL), -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_LOCK_GET, secret, 0, NULL, NULL, 0, 0, NULL),
		     -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_VOL_INFO, secret, 0, NULL, NULL, 0, 0, NULL),
		     -ENOENT);
	/* every inode number there is: only /a's reach anything */
	for (uint64_t i = 0; i < ns->ino_next + 16; i++) {
		int ret = getattr(&k, i, &at);

		if (ret == 0) {
			cr_assert(at.ino == SDFS_ROOT_INO || at.ino == sub ||
				  at.ino == f || at.ino == g, "ino %" PRIu64 " reached", i);
			cr_assert(at.ino != SDFS_ROOT_INO || i == a || i == SDFS_ROOT_INO);
			seen++;
		} else {
			cr_assert_eq(ret, -ENOENT);
		}
	}
	cr_assert_eq(seen, 5, "1 and a (both shown as 1), sub, f, g");
	/* nothing moves or links across the boundary */
	cr_assert_eq(run(&k, SDFS_OP_NS_RENAME, SDFS_ROOT_INO, bdir, "g", "g", 0, 0, NULL),
		     -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_RENAME, bdir, SDFS_ROOT_INO, "secret", "s", 0, 0,
			 NULL), -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_LINK, g, bdir, NULL, "g2", 0, 0, NULL), -ENOENT);
	cr_assert_eq(run(&k, SDFS_OP_NS_LINK, secret, SDFS_ROOT_INO, NULL, "s", 0, 0, NULL),
		     -ENOENT);
	cr_assert_eq(list(NULL, bdir, names, sizeof(names), NULL), 0);
	cr_assert_str_eq(names, "secret,dir");
	/* inside, renames and links work */
	cr_assert_eq(run(&k, SDFS_OP_NS_RENAME, SDFS_ROOT_INO, sub, "g", "g", 0, 0, NULL), 0);
	cr_assert_eq(run(&k, SDFS_OP_NS_LINK, g, SDFS_ROOT_INO, NULL, "g2", 0, 0, &rep), 0);
	free(rep.data);
	cr_assert_eq(getattr(&k, g, &at), 0);
	cr_assert_eq(at.nlink, 2);
}

Test(kcaps, a_file_linked_from_inside_is_reachable_and_its_names_follow_it)
{
	struct auth_ident k = key("path=/a");
	struct sdfs_attr at;

	tree();
	/* an admin links /b/secret into /a: reachable through that name */
	cr_assert_eq(run(NULL, SDFS_OP_NS_LINK, secret, a, NULL, "shared", 0, 0, NULL), 0);
	cr_assert_eq(getattr(&k, secret, &at), 0);
	cr_assert_eq(run(NULL, SDFS_OP_NS_UNLINK, a, 0, "shared", NULL, 0, 0, NULL), 0);
	cr_assert_eq(getattr(&k, secret, &at), -ENOENT, "its name inside went");
	/* an admin moves /a/g out, and /b/dir in */
	cr_assert_eq(run(NULL, SDFS_OP_NS_RENAME, a, bdir, "g", "g", 0, 0, NULL), 0);
	cr_assert_eq(getattr(&k, g, &at), -ENOENT);
	cr_assert_eq(run(NULL, SDFS_OP_NS_RENAME, bdir, sub, "dir", "d", 0, 0, NULL), 0);
	cr_assert_eq(getattr(&k, bsub, &at), 0);
	/* a file renamed over: the survivor's name, not the victim's */
	cr_assert_eq(run(NULL, SDFS_OP_NS_RENAME, bdir, a, "g", "f2", 0, 0, NULL), 0);
	cr_assert_eq(getattr(&k, g, &at), 0);
}

Test(kcaps, a_renamed_or_removed_subtree_is_gone_for_its_key)
{
	struct auth_ident k = key("path=/a/sub");
	struct sdfs_attr at;

	tree();
	cr_assert_eq(lookup(&k, SDFS_ROOT_INO, "f", &at), 0);
	cr_assert_eq(run(NULL, SDFS_OP_NS_RENAME, a, SDFS_ROOT_INO, "sub", "moved", 0, 0,
			 NULL), 0);
	cr_assert_eq(getattr(&k, SDFS_ROOT_INO, &at), -ENOENT);
	cr_assert_eq(getattr(&k, f, &at), -ENOENT);
	/* a new /a/sub is what the key sees now */
	uint64_t again = mk(NULL, a, "sub", 1);
	cr_assert_eq(getattr(&k, SDFS_ROOT_INO, &at), 0);
	cr_assert_eq(at.ino, SDFS_ROOT_INO);
	cr_assert_eq(lookup(&k, SDFS_ROOT_INO, "f", &at), -ENOENT);
	cr_assert_eq(getattr(&k, again, &at), 0);
	cr_assert_eq(at.ino, SDFS_ROOT_INO, "its real number is shown as the root");
	/* a path through a file is no subtree */
	struct auth_ident kf = key("path=/a/g");
	cr_assert_eq(getattr(&kf, SDFS_ROOT_INO, &at), -ENOENT);
}

Test(kcaps, an_older_database_gets_its_back_links_at_open)
{
	struct auth_ident k = key("path=/a");
	struct kvbatch *b = kvbatch_new();
	struct kviter *it;
	struct sdfs_attr at;
	size_t removed = 0;

	tree();
	/* as a database made before back-links: none, and no mark */
	it = kvdb_iter(ns->db);
	for (kviter_seek(it, "B", 1); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const char *key_ = kviter_key(it, &klen);

		if (key_[0] != 'B')
			break;
		kvbatch_del(b, key_, klen);
		removed++;
	}
	kviter_free(it);
	kvbatch_del(b, "Mbacklinks", 10);
	cr_assert_eq(ns_commit(ns, b), 0);
	kvbatch_free(b);
	cr_assert_eq(removed, 7, "one per name");
	cr_assert_eq(getattr(&k, f, &at), -ENOENT, "without them no file is inside");
	cr_assert_eq(kcaps_open(ns), 0);
	cr_assert_eq(getattr(&k, f, &at), 0);
	cr_assert_eq(getattr(&k, g, &at), 0);
	cr_assert_eq(getattr(&k, secret, &at), -ENOENT);
}

/* Object capabilities (helper objcap's NS_OBJCAP, 0x42; flag 0x1: arg
 * is a vid): only for what is inside, and a read-only key may ask. */
Test(kcaps, object_caps_only_for_files_and_volumes_inside)
{
	struct auth_ident k = key("path=/a"), ro = key("ro");
	struct sdfs_ns_req r = { .client_id = 7, .seq = 1 };
	struct vol_rec in = { .vid = 6, .family = 6, .state = SDFS_VS_LIVE, .obj_size = 1 << 20 };
	struct vol_rec out = in;
	struct kvbatch *b = kvbatch_new();
	struct ns_caller who;
	struct kcaps_req kr;

	tree();
	in.ino = g;
	out.vid = out.family = 5;
	out.ino = secret;
	vol_rec_put(b, &in);
	vol_rec_put(b, &out);
	cr_assert_eq(ns_commit(ns, b), 0);
	kvbatch_free(b);
	caller_make(&k, 0, 0, NULL, 0, &who);
	r.ino = g;
	cr_assert_eq(kcaps_enter(ns, &who, 0x42, &r, "", &kr), 0);
	r.ino = secret;
	cr_assert_eq(kcaps_enter(ns, &who, 0x42, &r, "", &kr), -ENOENT);
	r.ino = 0;
	r.flags = 0x1;
	r.arg = 6;
	cr_assert_eq(kcaps_enter(ns, &who, 0x42, &r, "", &kr), 0);
	r.arg = 5;
	cr_assert_eq(kcaps_enter(ns, &who, 0x42, &r, "", &kr), -ENOENT);
	r.arg = 99;
	cr_assert_eq(kcaps_enter(ns, &who, 0x42, &r, "", &kr), -ENOENT);
	caller_make(&ro, 0, 0, NULL, 0, &who);
	cr_assert_eq(kcaps_enter(ns, &who, 0x42, &r, "", &kr), 0);
}

/* ---- pushed invalidations ---- */

static void *mkdir_x(void *arg)
{
	(void)arg;
	cr_assert_eq(run(NULL, SDFS_OP_NS_MKDIR, a, 0, "x", NULL, 0755, 0, NULL), 0);
	return NULL;
}

Test(kcaps, invalidations_name_the_subtree_root_as_the_root)
{
	struct auth_ident k = key("path=/a");
	struct ns_caller who;
	struct lease_sub *sub;
	struct sdfs_attr at;
	struct sdfs_hdr h;
	uint8_t hb[SDFS_HDR_SIZE], pl[4096];
	pthread_t t;
	size_t off = 0;
	int sv[2], root_told = 0;

	tree();
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	caller_make(&k, 0, 0, NULL, 0, &who);
	sub = lease_subscribe(ns->leases, 9, 3000, sv[0], NULL);
	cr_assert_not_null(sub);
	lease_sub_root(sub, kcaps_root(ns, &who));
	client = 9;             /* it caches its root's attributes */
	cr_assert_eq(getattr(&k, SDFS_ROOT_INO, &at), 0);
	client = 7;             /* someone else makes /a/x */
	pthread_create(&t, NULL, mkdir_x, NULL);
	cr_assert_eq(read(sv[1], hb, sizeof(hb)), (ssize_t)sizeof(hb));
	cr_assert_eq(proto_hdr_decode(hb, sizeof(pl), &h), 0);
	cr_assert_eq(h.opcode, SDFS_OP_NS_NOTIFY);
	cr_assert_eq(read(sv[1], pl, h.payload_len), (ssize_t)h.payload_len);
	while (off < h.payload_len) {
		struct sdfs_note iv;
		ssize_t n = proto_note_decode(pl + off, h.payload_len - off, &iv);

		cr_assert_gt(n, 0);
		cr_assert_neq(iv.ino, a, "the key's root by its real number");
		root_told |= iv.kind == SDFS_NOTE_INODE && iv.ino == SDFS_ROOT_INO;
		off += (size_t)n;
	}
	cr_assert(root_told, "its root's attributes changed");
	lease_acked(sub, sv[0], h.req_id);
	pthread_join(t, NULL);
	lease_unsubscribe(sub, sv[0]);
	close(sv[0]);
	close(sv[1]);
}

/* ---- owners ---- */

/* A directory anyone may create in (1777), made without a key. */
static uint64_t pub(void)
{
	struct sdfs_attr at;

	cr_assert_eq(attr_of(NULL, SDFS_OP_NS_MKDIR, SDFS_ROOT_INO, "pub", 01777, 0, &at), 0);
	return at.ino;
}

Test(kcaps, root_squash_makes_roots_creates_anonymous)
{
	struct auth_ident k = key("rw,root_squash");
	struct sdfs_attr at;
	uint64_t dir = pub();

	int ret = attr_of(&k, SDFS_OP_NS_MKNOD, dir, "f", S_IFREG | 0644, 0, &at);
	cr_assert_eq(ret, 0, "%s", strerror(-ret));
	cr_assert_eq(at.uid, AUTH_ANON_ID);
	cr_assert_eq(at.gid, AUTH_ANON_ID);
	cr_assert_eq(attr_of(&k, SDFS_OP_NS_MKDIR, dir, "d", 0755, 0, &at), 0);
	cr_assert_eq(at.uid, AUTH_ANON_ID);
	cr_assert_eq(attr_of(&k, SDFS_OP_NS_MKNOD, dir, "u", S_IFREG | 0644, 1000, &at), 0);
	cr_assert_eq(at.uid, 1000, "others are not squashed");
	/* without the cap root stays root */
	struct auth_ident plain = key("rw");
	cr_assert_eq(attr_of(&plain, SDFS_OP_NS_MKNOD, dir, "r", S_IFREG | 0644, 0, &at), 0);
	cr_assert_eq(at.uid, 0);
}

Test(kcaps, uid_maps_store_the_servers_ids_and_show_the_clients)
{
	struct auth_ident k = key("rw,uidmap=1000:5000:10");
	struct sdfs_attr at;
	uint64_t dir = pub();

	cr_assert_eq(attr_of(&k, SDFS_OP_NS_MKNOD, dir, "f", S_IFREG | 0644, 1001, &at), 0);
	cr_assert_eq(at.uid, 1001, "the client sees its own id");
	uint64_t ino = at.ino;
	cr_assert_eq(getattr(NULL, ino, &at), 0);
	cr_assert_eq(at.uid, 5001, "stored as the server's");
	cr_assert_eq(getattr(&k, ino, &at), 0);
	cr_assert_eq(at.uid, 1001);
}

/* ---- admin ---- */

Test(kcaps, admin_only_ops_refuse_other_keys)
{
	struct auth_ident plain = key("rw"), adm = key("admin");
	struct sdfs_ns_req r = { .client_id = 7, .seq = 1 };
	struct ns_caller who;
	struct kcaps_req kr;

	caller_make(&plain, 0, 0, NULL, 0, &who);
	cr_assert_eq(kcaps_enter(ns, &who, SDFS_OP_NS_VOL_RECLAIM, &r, "", &kr), -EPERM);
	cr_assert_eq(kcaps_enter(ns, &who, SDFS_OP_NS_INFO, &r, "", &kr), 0);
	cr_assert_eq(kcaps_enter(ns, &who, SDFS_OP_NS_STATFS, &r, "", &kr), 0);
	caller_make(&adm, 0, 0, NULL, 0, &who);
	cr_assert_eq(kcaps_enter(ns, &who, SDFS_OP_NS_VOL_RECLAIM, &r, "", &kr), 0);
	caller_make(NULL, 0, 0, NULL, 0, &who);
	cr_assert_eq(kcaps_enter(ns, &who, SDFS_OP_NS_VOL_RECLAIM, &r, "", &kr), 0);
	/* an op kcaps does not know is refused to a restricted key */
	struct auth_ident pk = key("path=/a");
	caller_make(&pk, 0, 0, NULL, 0, &who);
	cr_assert_eq(kcaps_enter(ns, &who, 0x7f, &r, "", &kr), -EOPNOTSUPP);
}

/* ---- what it costs ---- */

static double per_op_us(const struct auth_ident *k, uint64_t ino, int n)
{
	struct timespec t0, t1;
	struct sdfs_attr at;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++)
		cr_assert_eq(getattr(k, ino, &at), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n / 1e3;
}

Test(kcaps, cost_of_the_subtree_check_is_printed)
{
	struct auth_ident k = key("path=/a");
	uint64_t dir = SDFS_ROOT_INO, file;
	char name[8];

	/* /a/d1/.../d8/file: a path key checks 9 parents for the file */
	dir = mk(NULL, dir, "a", 1);
	for (int i = 1; i <= 8; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		dir = mk(NULL, dir, name, 1);
	}
	file = mk(NULL, dir, "file", 0);
	per_op_us(NULL, file, 2000);    /* warm the cache */
	double plain = per_op_us(NULL, file, 20000);
	double path = per_op_us(&k, file, 20000);

	cr_log_info("getattr of a file 9 directories deep: %.2f us without a "
		    "path cap, %.2f us with path=/a", plain, path);
	printf("kcaps cost: getattr 9 deep: %.2f us plain, %.2f us with path=/a\n",
	       plain, path);

	/* building back-links for an older database: 5000 names more */
	struct kvbatch *b = kvbatch_new();
	struct kviter *it;
	struct timespec t0, t1;
	int n = 0;

	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		mk(NULL, dir, name, 0);
	}
	it = kvdb_iter(ns->db);
	for (kviter_seek(it, "B", 1); kviter_valid(it); kviter_next(it)) {
		size_t klen;
		const char *k = kviter_key(it, &klen);

		if (k[0] != 'B')
			break;
		kvbatch_del(b, k, klen);
		n++;
	}
	kviter_free(it);
	kvbatch_del(b, "Mbacklinks", 10);
	cr_assert_eq(ns_commit(ns, b), 0);
	kvbatch_free(b);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(kcaps_open(ns), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	printf("kcaps cost: back-links for %d names built at open in %.1f ms\n", n, ms);
	cr_assert_eq(getattr(&k, file, &(struct sdfs_attr){ 0 }), 0);
}
