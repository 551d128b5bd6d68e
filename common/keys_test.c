/* keys_test.c - caps text, id mapping, keyring files, keydb (keys.h, keydb.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/keydb.h"
#include "common/keys.h"

Test(keys, names)
{
	cr_expect(auth_name_ok("client.admin"));
	cr_expect(auth_name_ok("blockd.3"));
	cr_expect(!auth_name_ok(""));
	cr_expect(!auth_name_ok("a/b"));
	cr_expect(!auth_name_ok("a b"));
	cr_expect(!auth_name_ok("x]"));
	char longname[80];
	memset(longname, 'a', 64);
	longname[64] = 0;
	cr_expect(!auth_name_ok(longname));
	longname[63] = 0;
	cr_expect(auth_name_ok(longname));
}

Test(keys, caps_roundtrip)
{
	struct auth_caps c, d;
	char err[256], txt[AUTH_CAPS_STR_MAX], txt2[AUTH_CAPS_STR_MAX];

	cr_assert_eq(auth_caps_parse("ro, path=/projects//a/./b/,root_squash,anonuid=7,"
				     "uidmap=1000:5000:10,gidmap=0:100", &c, err,
				     sizeof(err)), 0, "%s", err);
	cr_expect(c.flags & AUTH_CAP_RO);
	cr_expect(c.flags & AUTH_CAP_ROOT_SQUASH);
	cr_expect_str_eq(c.path, "/projects/a/b");
	cr_expect_eq(c.anon_uid, 7);
	cr_expect_eq(c.anon_gid, AUTH_ANON_ID);
	cr_assert_eq(auth_caps_format(&c, txt, sizeof(txt)), 0);
	cr_assert_eq(auth_caps_parse(txt, &d, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(auth_caps_format(&d, txt2, sizeof(txt2)), 0);
	cr_expect_str_eq(txt, txt2);
	cr_expect_eq(memcmp(&c, &d, sizeof(c)), 0);

	cr_assert_eq(auth_caps_parse("", &c, err, sizeof(err)), 0);
	cr_expect_eq(c.flags, 0);
	cr_expect_str_eq(c.path, "/");
	cr_assert_eq(auth_caps_format(&c, txt, sizeof(txt)), 0);
	cr_expect_str_eq(txt, "rw");
}

Test(keys, caps_bad)
{
	struct auth_caps c;
	char err[256];
	const char *bad[] = { "bogus", "path=relative", "path=/a/../b", "ro,rw",
			      "anonuid=-1", "anonuid=99999999999", "uidmap=1",
			      "uidmap=1:2:0", "uidmap=4294967295:1:2", "admin=1" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		cr_expect_eq(auth_caps_parse(bad[i], &c, err, sizeof(err)), -EINVAL,
			     "%s accepted", bad[i]);
		cr_expect(err[0], "%s: no reason", bad[i]);
	}
	cr_expect_eq(auth_caps_parse("uidmap=1:1,uidmap=2:2,uidmap=3:3,uidmap=4:4,"
				     "uidmap=5:5,uidmap=6:6,uidmap=7:7,uidmap=8:8,"
				     "uidmap=9:9", &c, err, sizeof(err)), -EINVAL);
}

Test(keys, id_mapping)
{
	struct auth_caps c;

	cr_assert_eq(auth_caps_parse("uidmap=1000:5000:10", &c, NULL, 0), 0);
	cr_expect_eq(auth_caps_uid(&c, 1000), 5000);
	cr_expect_eq(auth_caps_uid(&c, 1009), 5009);
	cr_expect_eq(auth_caps_uid(&c, 1010), 1010);
	cr_expect_eq(auth_caps_uid(&c, 0), 0);
	cr_expect_eq(auth_caps_gid(&c, 1000), 1000);
	cr_assert_eq(auth_caps_parse("root_squash", &c, NULL, 0), 0);
	cr_expect_eq(auth_caps_uid(&c, 0), AUTH_ANON_ID);
	cr_expect_eq(auth_caps_gid(&c, 0), AUTH_ANON_ID);
	cr_expect_eq(auth_caps_uid(&c, 1), 1);
	cr_assert_eq(auth_caps_parse("all_squash,anonuid=42,anongid=43", &c, NULL, 0), 0);
	cr_expect_eq(auth_caps_uid(&c, 1000), 42);
	cr_expect_eq(auth_caps_gid(&c, 5), 43);
	cr_expect(!auth_caps_privileged(&c));
	cr_assert_eq(auth_caps_parse("daemon", &c, NULL, 0), 0);
	cr_expect(auth_caps_privileged(&c));
}

Test(keys, keyring_files)
{
	char dir[] = "/tmp/sdfs-keys.XXXXXX", path[256], err[256];
	struct keyring kr = { 0 }, back;
	struct stat st;
	FILE *f;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keyring", dir);
	strcpy(kr.name, "client.alice");
	auth_random_key(kr.key);
	strcpy(kr.caps, "rw,path=/a");
	kr.has_secret = 1;
	auth_random_key(kr.secret);
	auth_zk_password(kr.secret, 0, kr.zk_pw);
	cr_assert_eq(keyring_save(path, &kr), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(keyring_load(path, &back, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(back.name, kr.name);
	cr_expect_eq(memcmp(back.key, kr.key, sizeof(kr.key)), 0);
	cr_expect_eq(memcmp(back.secret, kr.secret, sizeof(kr.secret)), 0);
	cr_expect(back.has_secret);
	cr_expect_str_eq(back.caps, kr.caps);
	cr_expect_str_eq(back.zk_pw, kr.zk_pw);

	const char *bad[] = { "key = AAAA\n", "[client.x]\n", "[client.x]\nkey = short\n",
			      "[a]\nkey=" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n[b]\n",
			      "[bad name]\n", "[x]\nnovalue\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = fopen(path, "w");
		cr_assert(f);
		fputs(bad[i], f);
		fclose(f);
		err[0] = 0;
		cr_expect_lt(keyring_load(path, &back, err, sizeof(err)), 0, "case %zu", i);
		cr_expect(err[0]);
	}
	unlink(path);
	cr_expect_eq(keyring_load(path, &back, err, sizeof(err)), -ENOENT);
	rmdir(dir);
}

Test(keys, derive)
{
	uint8_t s[AUTH_KEY_BYTES], a[AUTH_KEY_BYTES], b[AUTH_KEY_BYTES];
	char pa[AUTH_ZK_PW_MAX], pc[AUTH_ZK_PW_MAX];

	auth_random_key(s);
	auth_derive(s, AUTH_DERIVE_DB, a);
	auth_derive(s, AUTH_DERIVE_OBJCAP, b);
	cr_expect_neq(memcmp(a, b, sizeof(a)), 0);
	auth_derive(s, AUTH_DERIVE_DB, b);
	cr_expect_eq(memcmp(a, b, sizeof(a)), 0);
	auth_zk_password(s, 1, pa);
	auth_zk_password(s, 0, pc);
	cr_expect_str_neq(pa, pc);
	cr_expect_eq(strlen(pa), AUTH_KEY_B64_LEN - 1);
}

Test(keydb, put_get_rotate)
{
	struct keydb *db;
	struct keydb_ent e = { 0 }, got;
	uint8_t old[AUTH_KEY_BYTES];

	cr_assert_eq(keydb_new(&db), 0);
	for (int i = 99; i >= 0; i--) {
		snprintf(e.name, sizeof(e.name), "client.%02d", i);
		auth_random_key(e.key);
		cr_assert_eq(keydb_put(db, &e), 0);
	}
	cr_expect_eq(keydb_count(db), 100);
	cr_assert_eq(keydb_get(db, "client.42", &got), 0);
	cr_expect_str_eq(got.name, "client.42");
	cr_expect_eq(keydb_get(db, "client.100", &got), -ENOENT);
	uint64_t v = keydb_version(db);
	memcpy(old, got.key, sizeof(old));
	cr_expect(keydb_valid(db, "client.42", old, 1000));
	memcpy(got.prev_key, old, sizeof(old));
	got.prev_until_ms = 5000;
	auth_random_key(got.key);
	cr_assert_eq(keydb_put(db, &got), 0);
	cr_expect_gt(keydb_version(db), v);
	cr_expect_eq(keydb_count(db), 100);
	cr_expect(keydb_valid(db, "client.42", old, 4999));
	cr_expect(!keydb_valid(db, "client.42", old, 5000));
	cr_expect(keydb_valid(db, "client.42", got.key, 99999));
	cr_assert_eq(keydb_remove(db, "client.42"), 0);
	cr_expect(!keydb_valid(db, "client.42", got.key, 0));
	cr_expect_eq(keydb_count(db), 99);
	cr_assert_eq(keydb_replace(db, &e, 1), 0);
	cr_expect_eq(keydb_count(db), 1);
	cr_expect_eq(keydb_get(db, e.name, &got), 0);
	cr_assert_eq(keydb_replace(db, NULL, 0), 0);
	cr_expect_eq(keydb_count(db), 0);
	keydb_free(db);
}
