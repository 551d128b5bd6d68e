/*
 * coord_acl.c - ZooKeeper digest ACLs on sdfs nodes (coord.h,
 * docs/zookeeper.md "Security"): the session's credentials, the ACL of
 * each place, finding out whether a cluster is secured, securing it.
 *
 * A digest id is "user:" + base64(sha1("user:password")) (ZooKeeper's
 * DigestAuthenticationProvider); SHA-1 comes from OpenSSL's libcrypto
 * (libsodium has none). Only ids are ever written into ACLs, never a
 * password. A client learns sdfs-admin's id from the base node's data,
 * "sdfs-acl 1\nadmin <id>\n" (written by the admin that secures the
 * cluster): ZooKeeper shows digest ids in an ACL only to sessions with
 * ADMIN on the node ("sdfs-admin:x" to others).
 */
#include "common/coord.h"

#include <errno.h>
#include <openssl/evp.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "common/coord_int.h"
#include "common/log.h"

#define ADMIN_USER  "sdfs-admin"
#define CLIENT_USER "sdfs-client"

int coord_cred_from_keyring(const struct keyring *kr, struct coord_cred *cr)
{
	memset(cr, 0, sizeof(*cr));
	if (kr->has_secret) {
		cr->has_secret = 1;
		memcpy(cr->secret, kr->secret, AUTH_KEY_BYTES);
		return 0;
	}
	if (!kr->zk_pw[0])
		return -ENOKEY;
	snprintf(cr->zk_pw, sizeof(cr->zk_pw), "%s", kr->zk_pw);
	return 0;
}

/* @out = "@user:" base64(sha1("@user:@pw")). 0 or -EIO. */
static int digest_id(const char *user, const char *pw, char out[COORD_DIGEST_ID_MAX])
{
	char plain[AUTH_ZK_PW_MAX + 32];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int n;

	snprintf(plain, sizeof(plain), "%s:%s", user, pw);
	if (!EVP_Digest(plain, strlen(plain), md, &mdlen, EVP_sha1(), NULL) ||
	    mdlen != 20)
		return -EIO;
	n = snprintf(out, COORD_DIGEST_ID_MAX, "%s:", user);
	sodium_bin2base64(out + n, COORD_DIGEST_ID_MAX - (size_t)n, md, mdlen,
			  sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(plain, sizeof(plain));
	return 0;
}

/* The ACL vectors of every kind from admin_id and client_id. */
static void build_acls(struct coord *c)
{
	static char digest[] = "digest", world[] = "world", anyone[] = "anyone";
	static const int client_perms[COORD_ACL_KINDS] = {
		[COORD_ACL_ROOT] = 0,
		[COORD_ACL_READ] = 1,                   /* READ */
		[COORD_ACL_ADMIN] = 0,
		[COORD_ACL_DIR] = 1 | 4 | 8,            /* READ CREATE DELETE */
		[COORD_ACL_SUSPECTS] = 1 | 2 | 4,       /* READ WRITE CREATE */
		[COORD_ACL_FENCES] = 1 | 4,             /* READ CREATE */
		[COORD_ACL_FENCE] = 1 | 2,              /* READ WRITE */
	};

	for (int k = 0; k < COORD_ACL_KINDS; k++) {
		struct ACL *a = c->acl_ents[k];
		int n = 0;

		a[n].perms = ZOO_PERM_ALL;
		a[n].id.scheme = digest;
		a[n++].id.id = c->admin_id;
		if (k == COORD_ACL_ROOT) {
			a[n].perms = ZOO_PERM_CREATE;
			a[n].id.scheme = world;
			a[n++].id.id = anyone;
		} else if (client_perms[k] && c->client_id[0]) {
			a[n].perms = client_perms[k];
			a[n].id.scheme = digest;
			a[n++].id.id = c->client_id;
		}
		c->acls[k].count = n;
		c->acls[k].data = a;
	}
}

const struct ACL_vector *coord_acl(struct coord *c, enum coord_acl_kind kind)
{
	if (!c->secured || kind >= COORD_ACL_KINDS)
		return &ZOO_OPEN_ACL_UNSAFE;
	return &c->acls[kind];
}

/* Set up the credentials of @cred (NULL: none) in @c, before the first
 * session. */
int coord_cred_init(struct coord *c, const struct coord_cred *cred)
{
	char pw[AUTH_ZK_PW_MAX], cpw[AUTH_ZK_PW_MAX];
	int ret;

	c->cred = COORD_CRED_NONE;
	if (!cred || (!cred->has_secret && !cred->zk_pw[0]))
		return 0;
	if (cred->has_secret) {
		auth_zk_password(cred->secret, 1, pw);
		auth_zk_password(cred->secret, 0, cpw);
		ret = digest_id(ADMIN_USER, pw, c->admin_id);
		if (!ret)
			ret = digest_id(CLIENT_USER, cpw, c->client_id);
		snprintf(c->zk_auth, sizeof(c->zk_auth), "%s:%s", ADMIN_USER, pw);
		c->cred = COORD_CRED_ADMIN;
	} else {
		snprintf(cpw, sizeof(cpw), "%s", cred->zk_pw);
		ret = digest_id(CLIENT_USER, cpw, c->client_id);
		snprintf(c->zk_auth, sizeof(c->zk_auth), "%s:%s", CLIENT_USER, cpw);
		c->cred = COORD_CRED_CLIENT;
	}
	sodium_memzero(pw, sizeof(pw));
	sodium_memzero(cpw, sizeof(cpw));
	build_acls(c);
	return ret;
}

/* Authenticate the current handle (before its first request). */
int coord_cred_apply(struct coord *c)
{
	int rc;

	if (c->cred == COORD_CRED_NONE)
		return 0;
	rc = zoo_add_auth(c->zh, "digest", c->zk_auth, (int)strlen(c->zk_auth),
			  NULL, NULL);
	return coord_zerr(rc);
}

int coord_ensure(struct coord *c, const char *path, enum coord_acl_kind kind)
{
	struct Stat st;
	int rc = zoo_exists(c->zh, path, 0, &st);

	if (rc == ZNONODE)
		rc = zoo_create(c->zh, path, NULL, -1, coord_acl(c, kind), 0, NULL, 0);
	return rc == ZOK || rc == ZNODEEXISTS ? 0 : coord_zerr(rc);
}

/* Does @acl name sdfs-admin? Its id goes to @id (NULL ok). */
static int acl_admin(const struct ACL_vector *acl, char *id)
{
	for (int i = 0; i < acl->count; i++) {
		const struct Id *d = &acl->data[i].id;

		if (d->scheme && d->id && !strcmp(d->scheme, "digest") &&
		    !strncmp(d->id, ADMIN_USER ":", strlen(ADMIN_USER) + 1)) {
			if (id)
				snprintf(id, COORD_DIGEST_ID_MAX, "%s", d->id);
			return 1;
		}
	}
	return 0;
}

/* The base node's data: who sdfs-admin is. */
static int base_doc(const struct coord *c, char *out, size_t len)
{
	int n = snprintf(out, len, "sdfs-acl 1\nadmin %s\n", c->admin_id);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

/* sdfs-admin's id from the base's data into c->admin_id. */
static int read_admin_id(struct coord *c)
{
	char buf[256], *p;
	int len = sizeof(buf) - 1;
	struct Stat st;
	int rc = zoo_get(c->zh, c->base, 0, buf, &len, &st);

	if (rc != ZOK)
		return coord_zerr(rc);
	buf[len < 0 ? 0 : len] = '\0';
	if (strncmp(buf, "sdfs-acl 1\n", 11) || !(p = strstr(buf, "\nadmin ")))
		return -EBADMSG;
	p += 7;
	p[strcspn(p, "\n")] = '\0';
	if (strncmp(p, ADMIN_USER ":", strlen(ADMIN_USER) + 1) ||
	    strlen(p) >= COORD_DIGEST_ID_MAX)
		return -EBADMSG;
	snprintf(c->admin_id, sizeof(c->admin_id), "%s", p);
	return 0;
}

/*
 * At open: create /sdfs and the base if missing (an admin session
 * creates them secured), else find out from the base's ACL whether the
 * cluster is secured (and, for a client, sdfs-admin's id). -EACCES if
 * we may not read the base.
 */
int coord_cred_detect(struct coord *c)
{
	struct ACL_vector acl = { 0 };
	char id[COORD_DIGEST_ID_MAX];
	struct Stat st;
	int rc, found;

	c->secured = c->cred == COORD_CRED_ADMIN;
	rc = zoo_exists(c->zh, c->base, 0, &st);
	if (rc == ZNONODE) {
		char doc[256];
		int ret = coord_ensure(c, "/sdfs", COORD_ACL_ROOT), n = -1;

		if (ret)
			return ret;
		if (c->secured)
			n = base_doc(c, doc, sizeof(doc));
		rc = zoo_create(c->zh, c->base, n > 0 ? doc : NULL, n,
				coord_acl(c, COORD_ACL_READ), 0, NULL, 0);
		if (rc == ZOK)
			return 0;
	}
	if (rc != ZOK && rc != ZNODEEXISTS)
		return coord_zerr(rc);
	rc = zoo_get_acl(c->zh, c->base, &acl, &st);
	if (rc == ZNOAUTH) {
		log_warn("zookeeper: %s is secured and our credentials (%s) may "
			"not read it: a keyring of this cluster is needed",
			c->base, c->cred == COORD_CRED_ADMIN ? "the cluster secret" :
			c->cred == COORD_CRED_CLIENT ? "a client zk password" : "none");
		return -EACCES;
	}
	if (rc != ZOK)
		return coord_zerr(rc);
	found = acl_admin(&acl, id);
	deallocate_ACL_vector(&acl);
	c->secured = 0;
	if (!found || c->cred == COORD_CRED_NONE)
		return 0;
	if (c->cred == COORD_CRED_ADMIN && strcmp(id, c->admin_id)) {
		log_err("zookeeper: %s is secured by another cluster secret", c->base);
		return -EACCES;
	}
	if (c->cred == COORD_CRED_CLIENT) {
		/* The ACL shows us "sdfs-admin:x": the id is in the data. */
		int ret = read_admin_id(c);

		if (ret) {
			log_err("zookeeper: %s is secured but does not say who "
				"sdfs-admin is (secure it again: sdfs cluster format)",
				c->base);
			return ret;
		}
		build_acls(c);
	}
	c->secured = 1;
	return 0;
}

int coord_secured(struct coord *c)
{
	return c->secured;
}

/* Set @kind's ACL on @path; absent: 0. */
static int set_acl(struct coord *c, const char *path, enum coord_acl_kind kind)
{
	int rc = zoo_set_acl(c->zh, path, -1, coord_acl(c, kind));

	if (rc == ZNONODE)
		return 0;
	if (rc != ZOK)
		log_err("zookeeper: cannot set the ACL of %s: %s", path, zerror(rc));
	return coord_zerr(rc);
}

/* Set @kind's ACL on every child of @dir; with @sub, @sub's on their
 * children too. */
static int set_acl_kids(struct coord *c, const char *dir, enum coord_acl_kind kind,
			int sub, enum coord_acl_kind sub_kind)
{
	struct String_vector kids = { 0 };
	char path[PATH_MAX_LEN * 2];
	int rc = zoo_get_children(c->zh, dir, 0, &kids), ret = 0;

	if (rc == ZNONODE)
		return 0;
	if (rc != ZOK)
		return coord_zerr(rc);
	for (int i = 0; i < kids.count && !ret; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, kids.data[i]);
		ret = set_acl(c, path, kind);
		if (!ret && sub)
			ret = set_acl_kids(c, path, sub_kind, 0, 0);
	}
	deallocate_String_vector(&kids);
	return ret;
}

static int secure_locked(struct coord *c)
{
	struct {
		const char *name;       /* under the base; "" the base */
		enum coord_acl_kind kind, kids;
		int dir, sub;           /* sub: the children's children get READ */
	} places[] = {
		{ "members", COORD_ACL_READ, COORD_ACL_READ, 1, 0 },
		{ "epochs", COORD_ACL_READ, COORD_ACL_READ, 1, 0 },
		{ "nodeids", COORD_ACL_ADMIN, COORD_ACL_ADMIN, 1, 0 },
		{ "mds", COORD_ACL_READ, COORD_ACL_READ, 1, 0 },
		{ "mds/election", COORD_ACL_READ, COORD_ACL_READ, 1, 0 },
		{ "suspects", COORD_ACL_SUSPECTS, COORD_ACL_READ, 1, 0 },
		{ "clients", COORD_ACL_DIR, COORD_ACL_READ, 1, 0 },
		{ "vols", COORD_ACL_READ, COORD_ACL_READ, 1, 0 },
		{ "vols/fence", COORD_ACL_FENCES, COORD_ACL_FENCE, 1, 0 },
		{ "vols/locks", COORD_ACL_DIR, COORD_ACL_DIR, 1, 1 },
		{ "auth", COORD_ACL_ADMIN, COORD_ACL_ADMIN, 1, 0 },
		{ "config", COORD_ACL_READ, 0, 0, 0 },
		{ "map", COORD_ACL_READ, 0, 0, 0 },
	};
	char path[PATH_MAX_LEN * 2];
	struct ACL_vector acl = { 0 };
	struct Stat st;
	int ret = 0, rc;

	c->secured = 1;
	/* /sdfs: ours to set while it is open (or ours already); a cluster
	 * of another secret that secured it first keeps it. */
	ret = coord_ensure(c, "/sdfs", COORD_ACL_ROOT);
	if (ret)
		return ret;
	rc = zoo_get_acl(c->zh, "/sdfs", &acl, &st);
	if (rc == ZOK) {
		int open = acl.count == 1 && !strcmp(acl.data[0].id.scheme, "world") &&
			   acl.data[0].perms == ZOO_PERM_ALL;
		char id[COORD_DIGEST_ID_MAX] = "";

		if (open || (acl_admin(&acl, id) && !strcmp(id, c->admin_id)))
			ret = set_acl(c, "/sdfs", COORD_ACL_ROOT);
		deallocate_ACL_vector(&acl);
	} else if (rc != ZNOAUTH) {
		ret = coord_zerr(rc);
	}
	if (!ret)
		ret = coord_ensure(c, c->base, COORD_ACL_READ);
	for (size_t i = 0; !ret && i < sizeof(places) / sizeof(places[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", c->base, places[i].name);
		if (places[i].dir)
			ret = coord_ensure(c, path, places[i].kind);
		if (!ret)
			ret = set_acl(c, path, places[i].kind);
		if (!ret && places[i].dir)
			ret = set_acl_kids(c, path, places[i].kids, places[i].sub,
					   COORD_ACL_READ);
	}
	/* mds/epoch and mds/active are mds/'s children: READ, set above. */
	if (!ret) {     /* last: the mark that the whole tree is done */
		char doc[256];
		int n = base_doc(c, doc, sizeof(doc));

		rc = n < 0 ? ZBADARGUMENTS : zoo_set(c->zh, c->base, doc, n, -1);
		ret = coord_zerr(rc);
	}
	if (!ret)
		ret = set_acl(c, c->base, COORD_ACL_READ);
	return ret;
}

int coord_secure(struct coord *c)
{
	int ret;

	if (c->cred != COORD_CRED_ADMIN)
		return -EPERM;
	pthread_rwlock_rdlock(&c->zlock);
	ret = c->zh ? secure_locked(c) : -ESHUTDOWN;
	pthread_rwlock_unlock(&c->zlock);
	return ret;
}
