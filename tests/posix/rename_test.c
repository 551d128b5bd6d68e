/*
 * rename_test.c - posix_rename: rename of files and directories within
 * and across directories, over existing names, RENAME_NOREPLACE and
 * RENAME_EXCHANGE (renameat2), every error code, and atomicity: a
 * reader never sees the target name missing while it is replaced.
 */
#include <criterion/logging.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/posix/posix.h"

POSIX_SUITE(rename);

static int rename2(const char *from, const char *to, unsigned flags)
{
	return renameat2(AT_FDCWD, from, AT_FDCWD, to, flags);
}

/* ---- plain rename ---- */

Test(rename, a_file_moves_within_a_directory)
{
	uint64_t ino;

	put_str("a", "content");
	ino = sx("a").stx_ino;
	ASSERT_OK(rename("a", "b"));
	cr_assert(!exists("a"));
	cr_assert_eq(sx("b").stx_ino, ino);
	cr_assert_str_eq(get("b", NULL), "content");
}

Test(rename, a_file_moves_across_directories)
{
	uint64_t ino;

	xmkdir("x", 0755);
	xmkdir("y", 0755);
	put_str("x/f", "content");
	ino = sx("x/f").stx_ino;
	ASSERT_OK(rename("x/f", "y/g"));
	cr_assert(!exists("x/f"));
	cr_assert_eq(sx("y/g").stx_ino, ino);
	cr_assert_str_eq(get("y/g", NULL), "content");
}

Test(rename, a_file_replaces_an_existing_file)
{
	uint64_t ino;

	put_str("new", "new content");
	put_str("old", "old");
	ino = sx("new").stx_ino;
	ASSERT_OK(rename("new", "old"));
	cr_assert(!exists("new"));
	cr_assert_eq(sx("old").stx_ino, ino);
	cr_assert_str_eq(get("old", NULL), "new content");
	cr_assert_eq(sx("old").stx_nlink, 1);
}

Test(rename, replacing_one_of_two_links_drops_its_count)
{
	put_str("t", "target");
	ASSERT_OK(link("t", "t2"));
	put_str("src", "src");
	ASSERT_OK(rename("src", "t"));
	cr_assert_eq(sx("t2").stx_nlink, 1);
	cr_assert_str_eq(get("t2", NULL), "target");
	cr_assert_str_eq(get("t", NULL), "src");
}

Test(rename, a_directory_moves_with_its_contents)
{
	xmkdir("a", 0755);
	xmkdir("a/d", 0755);
	xmkdir("a/d/sub", 0755);
	put_str("a/d/sub/f", "deep");
	xmkdir("b", 0755);
	ASSERT_OK(rename("a/d", "b/e"));
	cr_assert_str_eq(get("b/e/sub/f", NULL), "deep");
	cr_assert_eq(sx("b/e/..").stx_ino, sx("b").stx_ino, "'..' follows the move");
	cr_assert(!exists("a/d"));
}

Test(rename, a_directory_replaces_an_empty_directory)
{
	xmkdir("d", 0755);
	put_str("d/f", "x");
	xmkdir("empty", 0755);
	ASSERT_OK(rename("d", "empty"));
	cr_assert_str_eq(get("empty/f", NULL), "x");
	cr_assert(!exists("d"));
}

Test(rename, a_directory_over_a_non_empty_one_is_enotempty)
{
	xmkdir("d", 0755);
	xmkdir("full", 0755);
	put_str("full/f", "x");
	ASSERT_ERRNO(rename("d", "full"), ENOTEMPTY);
	cr_assert(exists("d") && exists("full/f"));
}

Test(rename, a_file_over_a_directory_is_eisdir)
{
	put_str("f", "x");
	xmkdir("d", 0755);
	ASSERT_ERRNO(rename("f", "d"), EISDIR);
	cr_assert(exists("f") && S_ISDIR(sx("d").stx_mode));
}

Test(rename, a_directory_over_a_file_is_enotdir)
{
	put_str("f", "x");
	xmkdir("d", 0755);
	ASSERT_ERRNO(rename("d", "f"), ENOTDIR);
	cr_assert(S_ISREG(sx("f").stx_mode) && S_ISDIR(sx("d").stx_mode));
}

Test(rename, a_directory_into_its_own_subdirectory_is_einval)
{
	xmkdir("a", 0755);
	xmkdir("a/b", 0755);
	xmkdir("a/b/c", 0755);
	ASSERT_ERRNO(rename("a", "a/b/c/a"), EINVAL);
	ASSERT_ERRNO(rename("a", "a/x"), EINVAL);
	ASSERT_ERRNO(rename2("a", "a/b/c", RENAME_EXCHANGE), EINVAL);
	cr_assert(exists("a/b/c"));
}

Test(rename, a_missing_source_is_enoent)
{
	xmkdir("d", 0755);
	ASSERT_ERRNO(rename("missing", "x"), ENOENT);
	ASSERT_ERRNO(rename("missing/x", "y"), ENOENT);
	put_str("f", "x");
	ASSERT_ERRNO(rename("f", "nodir/f"), ENOENT);
	cr_assert(exists("f"));
}

Test(rename, a_file_in_the_path_is_enotdir)
{
	put_str("f", "x");
	put_str("g", "x");
	ASSERT_ERRNO(rename("f/x", "y"), ENOTDIR);
	ASSERT_ERRNO(rename("g", "f/y"), ENOTDIR);
}

Test(rename, dot_and_dotdot_cannot_be_renamed)
{
	xmkdir("d", 0755);
	errno = 0;
	cr_assert(rename("d/.", "e") == -1 && (errno == EINVAL || errno == EBUSY),
		  "rename of '.': %s", errname(errno));
	errno = 0;
	cr_assert(rename("d/..", "e") == -1 && (errno == EINVAL || errno == EBUSY ||
						 errno == ENOTEMPTY),
		  "rename of '..': %s", errname(errno));
	cr_assert(!exists("e"));
}

Test(rename, two_links_to_one_inode_rename_is_a_no_op)
{
	put_str("a", "x");
	ASSERT_OK(link("a", "b"));
	ASSERT_OK(rename("a", "b"));
	cr_assert(exists("a") && exists("b"), "both names stay");
	cr_assert_eq(sx("a").stx_nlink, 2);
}

Test(rename, a_name_to_itself_is_a_no_op)
{
	put_str("a", "x");
	ASSERT_OK(rename("a", "a"));
	cr_assert_str_eq(get("a", NULL), "x");
}

Test(rename, a_symlink_is_renamed_not_its_target)
{
	put_str("f", "x");
	ASSERT_OK(symlink("f", "l"));
	ASSERT_OK(rename("l", "m"));
	cr_assert(S_ISLNK(sx("m").stx_mode));
	cr_assert(exists("f") && !exists("l"));
}

Test(rename, to_another_filesystem_is_exdev)
{
	const char *other = "/dev/shm";
	char path[256];

	if (sx(".").stx_dev_major == sx(other).stx_dev_major &&
	    sx(".").stx_dev_minor == sx(other).stx_dev_minor)
		other = "/tmp";
	put_str("f", "x");
	snprintf(path, sizeof(path), "%s/sdfs-posix-exdev-%d", other, (int)getpid());
	ASSERT_ERRNO(rename("f", path), EXDEV);
	cr_assert(exists("f"));
}

Test(rename, of_many_renames_of_one_name_exactly_one_wins)
{
	enum { KIDS = 6, ROUNDS = 10 };

	for (int r = 0; r < ROUNDS; r++) {
		pid_t kids[KIDS];
		int wins = 0, found = 0;
		char name[32];

		put_str("src", "x");
		for (int k = 0; k < KIDS; k++) {
			kids[k] = fork();
			cr_assert(kids[k] >= 0);
			if (kids[k] == 0) {
				snprintf(name, sizeof(name), "r%d-%d", r, k);
				_exit(rename("src", name) == 0 ? 0 : errno == ENOENT ? 1 : 2);
			}
		}
		for (int k = 0; k < KIDS; k++) {
			int st = posix_child_wait(kids[k]);

			cr_assert_neq(st, 2, "a rename failed with something other than ENOENT");
			wins += st == 0;
			snprintf(name, sizeof(name), "r%d-%d", r, k);
			found += exists(name);
		}
		cr_assert_eq(wins, 1, "round %d: %d renames won", r, wins);
		cr_assert_eq(found, 1, "round %d: %d names exist", r, found);
		cr_assert(!exists("src"));
	}
}

/* ---- renameat2 flags ---- */

Test(rename, noreplace_refuses_an_existing_target_with_eexist)
{
	put_str("a", "a");
	put_str("b", "b");
	xmkdir("d", 0755);
	ASSERT_ERRNO(rename2("a", "b", RENAME_NOREPLACE), EEXIST);
	ASSERT_ERRNO(rename2("d", "b", RENAME_NOREPLACE), EEXIST);
	cr_assert_str_eq(get("a", NULL), "a");
	cr_assert_str_eq(get("b", NULL), "b");
}

Test(rename, noreplace_moves_to_a_free_name)
{
	put_str("a", "a");
	ASSERT_OK(rename2("a", "c", RENAME_NOREPLACE));
	cr_assert(!exists("a"));
	cr_assert_str_eq(get("c", NULL), "a");
}

Test(rename, exchange_swaps_two_files)
{
	uint64_t ia, ib;

	put_str("a", "A");
	put_str("b", "B");
	ia = sx("a").stx_ino;
	ib = sx("b").stx_ino;
	ASSERT_OK(rename2("a", "b", RENAME_EXCHANGE));
	cr_assert_eq(sx("a").stx_ino, ib);
	cr_assert_eq(sx("b").stx_ino, ia);
	cr_assert_str_eq(get("a", NULL), "B");
	cr_assert_str_eq(get("b", NULL), "A");
}

Test(rename, exchange_swaps_a_file_and_a_directory_across_dirs)
{
	xmkdir("x", 0755);
	xmkdir("y", 0755);
	put_str("x/f", "file");
	xmkdir("y/d", 0755);
	put_str("y/d/inner", "in");
	ASSERT_OK(rename2("x/f", "y/d", RENAME_EXCHANGE));
	cr_assert(S_ISDIR(sx("x/f").stx_mode));
	cr_assert(S_ISREG(sx("y/d").stx_mode));
	cr_assert_str_eq(get("x/f/inner", NULL), "in");
	cr_assert_str_eq(get("y/d", NULL), "file");
	cr_assert_eq(sx("x").stx_nlink, 3, "x gained the subdirectory");
	cr_assert_eq(sx("y").stx_nlink, 2, "y lost it");
	cr_assert_eq(sx("x/f/..").stx_ino, sx("x").stx_ino);
}

Test(rename, exchange_of_two_directories_across_parents_fixes_both_dotdots)
{
	xmkdir("x", 0755);
	xmkdir("y", 0755);
	xmkdir("x/a", 0755);
	xmkdir("y/b", 0755);
	put_str("x/a/in_a", "");
	put_str("y/b/in_b", "");
	ASSERT_OK(rename2("x/a", "y/b", RENAME_EXCHANGE));
	cr_assert(exists("x/a/in_b") && exists("y/b/in_a"));
	cr_assert_eq(sx("x/a/..").stx_ino, sx("x").stx_ino);
	cr_assert_eq(sx("y/b/..").stx_ino, sx("y").stx_ino);
	cr_assert_eq(sx("x").stx_nlink, 3);
	cr_assert_eq(sx("y").stx_nlink, 3);
}

Test(rename, exchange_with_a_missing_name_is_enoent)
{
	put_str("a", "A");
	ASSERT_ERRNO(rename2("a", "missing", RENAME_EXCHANGE), ENOENT);
	ASSERT_ERRNO(rename2("missing", "a", RENAME_EXCHANGE), ENOENT);
	cr_assert(exists("a") && !exists("missing"));
}

Test(rename, noreplace_with_exchange_is_einval)
{
	put_str("a", "A");
	put_str("b", "B");
	ASSERT_ERRNO(rename2("a", "b", RENAME_NOREPLACE | RENAME_EXCHANGE), EINVAL);
	ASSERT_ERRNO(rename2("a", "c", 1u << 7), EINVAL);
	cr_assert_str_eq(get("a", NULL), "A");
	cr_assert(!exists("c"));
}

/* ---- open files and atomicity ---- */

Test(rename, an_open_file_keeps_working_after_its_rename)
{
	int fd = ASSERT_OK(open("a", O_RDWR | O_CREAT, 0644));
	char buf[8] = { 0 };

	cr_assert_eq(ASSERT_OK(write(fd, "abc", 3)), 3);
	ASSERT_OK(rename("a", "b"));
	cr_assert_eq(ASSERT_OK(write(fd, "def", 3)), 3);
	cr_assert_eq(ASSERT_OK(pread(fd, buf, 6, 0)), 6);
	cr_assert_str_eq(buf, "abcdef");
	close(fd);
	cr_assert_str_eq(get("b", NULL), "abcdef");
}

Test(rename, a_replaced_file_stays_readable_through_an_open_fd)
{
	char buf[65536], back[65536];
	int fd;

	tfill_random(buf, sizeof(buf), 7);
	put("old", buf, sizeof(buf));
	put_str("new", "replacement");
	fd = ASSERT_OK(open("old", O_RDONLY));
	ASSERT_OK(rename("new", "old"));
	pread_all(fd, back, sizeof(back), 0);
	cr_assert_arr_eq(back, buf, sizeof(buf), "the replaced file's data changed");
	cr_assert_eq(sx_fd(fd).stx_size, sizeof(buf));
	/* past the attribute cache and any background freeing of data */
	tsleep_ms(2500);
	memset(back, 0, sizeof(back));
	pread_all(fd, back, sizeof(back), 0);
	cr_assert_arr_eq(back, buf, sizeof(buf), "the replaced file's data went away");
	close(fd);
	cr_assert_str_eq(get("old", NULL), "replacement");
}

#define VERSION_LEN 4096
#define RACE_MS 2000

struct race {
	atomic_int stop;
	int version;            /* the writer's, read after join */
	long reads;
	char fail[256];
};

/* Each version fills VERSION_LEN bytes with one letter and its number. */
static void version_fill(char *buf, int v)
{
	memset(buf, 'a' + v % 26, VERSION_LEN);
	snprintf(buf, 16, "v%08d", v);
	buf[9] = 'a' + v % 26;
}

static void *race_writer(void *arg)
{
	struct race *r = arg;
	char buf[VERSION_LEN];

	while (!atomic_load(&r->stop)) {
		int fd;

		version_fill(buf, ++r->version);
		fd = open("tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, buf, VERSION_LEN) != VERSION_LEN || close(fd) ||
		    rename("tmp", "target")) {
			snprintf(r->fail, sizeof(r->fail), "writer v%d: %s", r->version,
				 errname(errno));
			atomic_store(&r->stop, 1);
		}
	}
	return NULL;
}

static void *race_reader(void *arg)
{
	struct race *r = arg;
	char buf[VERSION_LEN + 1], want[VERSION_LEN];

	while (!atomic_load(&r->stop)) {
		int fd = open("target", O_RDONLY), v;
		ssize_t n;

		if (fd < 0) {
			snprintf(r->fail, sizeof(r->fail), "open of the target failed: %s",
				 errname(errno));
			break;
		}
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n != VERSION_LEN || sscanf(buf, "v%08d", &v) != 1) {
			snprintf(r->fail, sizeof(r->fail), "read %zd bytes: %s (%.10s)", n,
				 n < 0 ? errname(errno) : "not a whole version", buf);
			break;
		}
		version_fill(want, v);
		if (memcmp(buf, want, VERSION_LEN)) {
			snprintf(r->fail, sizeof(r->fail), "version %d is torn", v);
			break;
		}
		r->reads++;
	}
	atomic_store(&r->stop, 1);
	return NULL;
}

Test(rename, a_reader_never_misses_a_file_replaced_by_rename)
{
	struct race w = { 0 }, rd = { 0 };
	char buf[VERSION_LEN];
	pthread_t tw, tr;
	int64_t end;

	version_fill(buf, 0);
	put("target", buf, VERSION_LEN);
	cr_assert_eq(pthread_create(&tw, NULL, race_writer, &w), 0);
	cr_assert_eq(pthread_create(&tr, NULL, race_reader, &rd), 0);
	end = tnow_ms() + RACE_MS;
	while (tnow_ms() < end && !atomic_load(&w.stop) && !atomic_load(&rd.stop))
		tsleep_ms(10);
	atomic_store(&w.stop, 1);
	atomic_store(&rd.stop, 1);
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	cr_assert_str_empty(w.fail, "%s", w.fail);
	cr_assert_str_empty(rd.fail, "after %ld good reads and %d versions: %s", rd.reads,
			    w.version, rd.fail);
	cr_assert_gt(w.version, 10, "only %d renames in %d ms", w.version, RACE_MS);
	cr_log_info("%d renames, %ld reads", w.version, rd.reads);
}
