/*
 * names_test.c - posix_names: lookup, create and open flags, mkdir,
 * rmdir, unlink, symlink and readlink, mknod of every type, readdir,
 * statfs, and their error codes (ENOENT, EEXIST, ENOTDIR, EISDIR,
 * ENOTEMPTY, ENAMETOOLONG, ELOOP, EINVAL).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/posix/posix.h"

POSIX_SUITE(names);

/* ---- lookup and create ---- */

Test(names, create_makes_an_empty_regular_file_owned_by_the_caller)
{
	int fd = ASSERT_OK(open("f", O_WRONLY | O_CREAT | O_EXCL, 0640));
	struct statx st = sx_fd(fd);

	cr_assert(S_ISREG(st.stx_mode), "mode %o", st.stx_mode);
	cr_assert_eq(st.stx_mode & 07777, 0640);
	cr_assert_eq(st.stx_size, 0);
	cr_assert_eq(st.stx_nlink, 1);
	cr_assert_eq(st.stx_uid, getuid());
	cr_assert_eq(st.stx_gid, getgid());
	close(fd);
	st = sx("f");
	cr_assert(S_ISREG(st.stx_mode) && st.stx_size == 0 && st.stx_nlink == 1);
}

Test(names, lookup_finds_what_create_made_with_the_same_inode)
{
	int fd = ASSERT_OK(open("f", O_WRONLY | O_CREAT, 0644));
	struct statx a = sx_fd(fd), b = sx("f");

	cr_assert_eq(a.stx_ino, b.stx_ino);
	cr_assert_eq(sx(".").stx_ino, sx("./.").stx_ino);
	close(fd);
}

Test(names, dotdot_of_a_subdirectory_is_its_parent)
{
	xmkdir("d", 0755);
	xmkdir("d/e", 0755);
	cr_assert_eq(sx("d/e/..").stx_ino, sx("d").stx_ino);
	cr_assert_eq(sx("d/..").stx_ino, sx(".").stx_ino);
}

Test(names, open_of_a_missing_name_without_creat_is_enoent)
{
	ASSERT_ERRNO(open("missing", O_RDONLY), ENOENT);
	ASSERT_ERRNO(open("missing", O_RDWR), ENOENT);
	ASSERT_ERRNO(stat("missing", &(struct stat){ 0 }), ENOENT);
	ASSERT_ERRNO(open("nodir/f", O_RDWR | O_CREAT, 0644), ENOENT);
}

Test(names, open_creat_excl_of_an_existing_name_is_eexist)
{
	put_str("f", "x");
	xmkdir("d", 0755);
	ASSERT_ERRNO(open("f", O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	ASSERT_ERRNO(open("d", O_RDONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	cr_assert_eq(sx("f").stx_size, 1, "O_EXCL failure must not truncate");
}

Test(names, open_creat_excl_does_not_follow_a_dangling_symlink)
{
	ASSERT_OK(symlink("target", "link"));
	ASSERT_ERRNO(open("link", O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	cr_assert(!exists("target"), "O_EXCL created the symlink's target");
}

Test(names, open_creat_through_a_dangling_symlink_creates_its_target)
{
	int fd;

	ASSERT_OK(symlink("target", "link"));
	fd = ASSERT_OK(open("link", O_WRONLY | O_CREAT, 0644));
	close(fd);
	cr_assert(S_ISREG(sx("target").stx_mode));
	cr_assert(S_ISLNK(sx("link").stx_mode));
}

Test(names, open_creat_of_an_existing_file_opens_it_unchanged)
{
	int fd;

	put_str("f", "hello");
	fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0600));
	cr_assert_eq(sx_fd(fd).stx_size, 5);
	cr_assert_eq(sx_fd(fd).stx_mode & 07777, 0644, "O_CREAT must not change the mode");
	close(fd);
}

Test(names, open_of_a_directory_for_writing_is_eisdir)
{
	xmkdir("d", 0755);
	ASSERT_ERRNO(open("d", O_WRONLY), EISDIR);
	ASSERT_ERRNO(open("d", O_RDWR), EISDIR);
	ASSERT_ERRNO(open("d", O_WRONLY | O_CREAT, 0644), EISDIR);
	ASSERT_OK(close(ASSERT_OK(open("d", O_RDONLY | O_DIRECTORY))));
}

Test(names, read_of_a_directory_fd_is_eisdir)
{
	char c;
	int fd;

	xmkdir("d", 0755);
	fd = ASSERT_OK(open("d", O_RDONLY));
	ASSERT_ERRNO(read(fd, &c, 1), EISDIR);
	close(fd);
}

Test(names, a_file_in_the_middle_of_a_path_is_enotdir)
{
	put_str("f", "x");
	ASSERT_ERRNO(open("f/x", O_RDONLY), ENOTDIR);
	ASSERT_ERRNO(open("f/x", O_WRONLY | O_CREAT, 0644), ENOTDIR);
	ASSERT_ERRNO(mkdir("f/x", 0755), ENOTDIR);
	ASSERT_ERRNO(stat("f/", &(struct stat){ 0 }), ENOTDIR);
	ASSERT_ERRNO(open("f", O_RDONLY | O_DIRECTORY), ENOTDIR);
	ASSERT_ERRNO(unlink("f/x"), ENOTDIR);
}

Test(names, a_255_byte_name_works_everywhere)
{
	const char *n = long_name(255);
	char path[300];

	put_str(n, "x");
	cr_assert_eq(sx(n).stx_size, 1);
	snprintf(path, sizeof(path), "d/%s", n);
	xmkdir("d", 0755);
	ASSERT_OK(rename(n, path));
	ASSERT_OK(link(path, n));
	ASSERT_OK(unlink(path));
	ASSERT_OK(unlink(n));
	ASSERT_OK(mkdir(n, 0755));
	ASSERT_OK(rmdir(n));
	ASSERT_OK(symlink("t", n));
	ASSERT_OK(unlink(n));
}

Test(names, a_256_byte_name_is_enametoolong_everywhere)
{
	char n[300];

	snprintf(n, sizeof(n), "%s", long_name(256));
	put_str("f", "x");
	ASSERT_ERRNO(open(n, O_WRONLY | O_CREAT, 0644), ENAMETOOLONG);
	ASSERT_ERRNO(open(n, O_RDONLY), ENAMETOOLONG);
	ASSERT_ERRNO(stat(n, &(struct stat){ 0 }), ENAMETOOLONG);
	ASSERT_ERRNO(mkdir(n, 0755), ENAMETOOLONG);
	ASSERT_ERRNO(mknod(n, S_IFIFO | 0644, 0), ENAMETOOLONG);
	ASSERT_ERRNO(symlink("f", n), ENAMETOOLONG);
	ASSERT_ERRNO(link("f", n), ENAMETOOLONG);
	ASSERT_ERRNO(rename("f", n), ENAMETOOLONG);
	ASSERT_ERRNO(unlink(n), ENAMETOOLONG);
	ASSERT_ERRNO(rmdir(n), ENAMETOOLONG);
	cr_assert(exists("f"));
}

Test(names, names_may_hold_any_byte_but_slash_and_nul)
{
	static const char *const names[] = {
		"with space", "new\nline", "tab\there", "\xc3\xa9t\xc3\xa9", "\x80\xff\x01",
		"...", "-dash", ".hidden", "a:b;c*d?e", "CASE", "case",
	};
	size_t n = sizeof(names) / sizeof(names[0]);
	struct dirent *e;
	int found = 0;
	DIR *d;

	for (size_t i = 0; i < n; i++)
		put_str(names[i], names[i]);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(get(names[i], NULL), names[i], "name %zu", i);
	cr_assert_neq(sx("CASE").stx_ino, sx("case").stx_ino, "names are case sensitive");
	d = opendir(".");
	cr_assert(d);
	while ((e = readdir(d)))
		for (size_t i = 0; i < n; i++)
			found += strcmp(e->d_name, names[i]) == 0;
	closedir(d);
	cr_assert_eq(found, (int)n, "readdir returned %d of %zu names byte for byte", found, n);
}

Test(names, o_excl_lets_exactly_one_of_many_creators_win)
{
	enum { KIDS = 8, ROUNDS = 20 };
	char name[32];

	for (int r = 0; r < ROUNDS; r++) {
		pid_t kids[KIDS];
		int wins = 0;

		snprintf(name, sizeof(name), "race%d", r);
		for (int k = 0; k < KIDS; k++) {
			kids[k] = fork();
			cr_assert(kids[k] >= 0);
			if (kids[k] == 0) {
				int fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);

				_exit(fd >= 0 ? 0 : errno == EEXIST ? 1 : 2);
			}
		}
		for (int k = 0; k < KIDS; k++) {
			int st = posix_child_wait(kids[k]);

			cr_assert_neq(st, 2, "a creator failed with something other than EEXIST");
			wins += st == 0;
		}
		cr_assert_eq(wins, 1, "round %d: %d creators won", r, wins);
	}
}

Test(names, mkdir_lets_exactly_one_of_many_creators_win)
{
	enum { KIDS = 8 };
	pid_t kids[KIDS];
	int wins = 0;

	for (int k = 0; k < KIDS; k++) {
		kids[k] = fork();
		cr_assert(kids[k] >= 0);
		if (kids[k] == 0)
			_exit(mkdir("d", 0755) == 0 ? 0 : errno == EEXIST ? 1 : 2);
	}
	for (int k = 0; k < KIDS; k++) {
		int st = posix_child_wait(kids[k]);

		cr_assert_neq(st, 2, "a mkdir failed with something other than EEXIST");
		wins += st == 0;
	}
	cr_assert_eq(wins, 1, "%d mkdirs won", wins);
	cr_assert_eq(sx(".").stx_nlink, 3);
}

Test(names, files_created_by_parallel_processes_all_land)
{
	enum { KIDS = 4, EACH = 100 };
	pid_t kids[KIDS];
	struct dirent *e;
	int n = 0;
	DIR *d;

	xmkdir("d", 0755);
	for (int k = 0; k < KIDS; k++) {
		kids[k] = fork();
		cr_assert(kids[k] >= 0);
		if (kids[k] == 0) {
			char name[32];

			for (int i = 0; i < EACH; i++) {
				int fd;

				snprintf(name, sizeof(name), "d/k%d-%d", k, i);
				fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
				if (fd < 0 || close(fd))
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < KIDS; k++)
		cr_assert_eq(posix_child_wait(kids[k]), 0, "creator %d failed", k);
	d = opendir("d");
	cr_assert(d);
	while ((e = readdir(d)))
		n += e->d_name[0] == 'k';
	closedir(d);
	cr_assert_eq(n, KIDS * EACH);
}

/* ---- mkdir, rmdir ---- */

Test(names, mkdir_makes_an_empty_directory_with_two_links)
{
	struct statx st;
	DIR *d;
	struct dirent *e;
	int n = 0;

	ASSERT_OK(mkdir("d", 0750));
	st = sx("d");
	cr_assert(S_ISDIR(st.stx_mode));
	cr_assert_eq(st.stx_mode & 07777, 0750);
	cr_assert_eq(st.stx_nlink, 2);
	cr_assert_eq(st.stx_uid, getuid());
	d = opendir("d");
	cr_assert(d);
	while ((e = readdir(d))) {
		cr_assert(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."),
			  "a new directory lists '%s'", e->d_name);
		n++;
	}
	closedir(d);
	cr_assert_eq(n, 2, "a new directory lists exactly . and ..");
}

Test(names, mkdir_of_an_existing_name_is_eexist)
{
	xmkdir("d", 0755);
	put_str("f", "x");
	ASSERT_OK(symlink("nowhere", "l"));
	ASSERT_ERRNO(mkdir("d", 0755), EEXIST);
	ASSERT_ERRNO(mkdir("f", 0755), EEXIST);
	ASSERT_ERRNO(mkdir("l", 0755), EEXIST);
	ASSERT_ERRNO(mkdir(".", 0755), EEXIST);
	ASSERT_ERRNO(mkdir("..", 0755), EEXIST);
}

Test(names, mkdir_in_a_missing_directory_is_enoent)
{
	ASSERT_ERRNO(mkdir("no/d", 0755), ENOENT);
}

Test(names, rmdir_removes_an_empty_directory)
{
	xmkdir("d", 0755);
	ASSERT_OK(rmdir("d"));
	cr_assert(!exists("d"));
	ASSERT_ERRNO(rmdir("d"), ENOENT);
}

Test(names, rmdir_of_a_non_empty_directory_is_enotempty)
{
	xmkdir("d", 0755);
	xmkdir("e", 0755);
	put_str("d/f", "x");
	xmkdir("e/sub", 0755);
	ASSERT_ERRNO(rmdir("d"), ENOTEMPTY);
	ASSERT_ERRNO(rmdir("e"), ENOTEMPTY);
	ASSERT_OK(unlink("d/f"));
	ASSERT_OK(rmdir("d"));
}

Test(names, rmdir_of_a_file_or_symlink_is_enotdir)
{
	put_str("f", "x");
	xmkdir("d", 0755);
	ASSERT_OK(symlink("d", "l"));
	ASSERT_ERRNO(rmdir("f"), ENOTDIR);
	ASSERT_ERRNO(rmdir("l"), ENOTDIR);
	cr_assert(exists("d") && exists("l"));
}

Test(names, rmdir_of_dot_is_einval_and_of_dotdot_is_enotempty)
{
	xmkdir("d", 0755);
	ASSERT_ERRNO(rmdir("d/."), EINVAL);
	ASSERT_ERRNO(rmdir("d/.."), ENOTEMPTY);
	cr_assert(exists("d"));
}

/* ---- unlink ---- */

Test(names, unlink_removes_the_name)
{
	put_str("f", "x");
	ASSERT_OK(unlink("f"));
	cr_assert(!exists("f"));
	ASSERT_ERRNO(unlink("f"), ENOENT);
	ASSERT_ERRNO(open("f", O_RDONLY), ENOENT);
}

Test(names, unlink_of_a_directory_is_eisdir)
{
	xmkdir("d", 0755);
	ASSERT_ERRNO(unlink("d"), EISDIR);
	cr_assert(exists("d"));
}

Test(names, unlink_of_a_symlink_removes_the_link_not_its_target)
{
	put_str("f", "data");
	ASSERT_OK(symlink("f", "l"));
	ASSERT_OK(unlink("l"));
	cr_assert(!exists("l"));
	cr_assert_eq(sx("f").stx_size, 4);
}

Test(names, an_unlinked_open_file_keeps_its_attributes)
{
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0640));
	struct statx st;

	cr_assert_eq(ASSERT_OK(write(fd, "0123456789", 10)), 10);
	ASSERT_OK(unlink("f"));
	cr_assert(!exists("f"));
	st = sx_fd(fd);
	cr_assert_eq(st.stx_nlink, 0, "nlink of an unlinked open file");
	cr_assert_eq(st.stx_size, 10);
	cr_assert_eq(st.stx_mode, S_IFREG | 0640);
	ASSERT_OK(fchmod(fd, 0600));
	cr_assert_eq(sx_fd(fd).stx_mode, S_IFREG | 0600);
	ASSERT_OK(close(fd));
}

/* Past the attribute cache (1 s on sdfs) and any background freeing of
 * unlinked files' data: the file lives until its last close. */
#define UNLINKED_WAIT_MS 2500

Test(names, an_unlinked_open_file_keeps_its_data_until_the_last_close)
{
	char buf[8192], back[8192];
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	tfill_random(buf, sizeof(buf), 1);
	pwrite_all(fd, buf, sizeof(buf), 0);
	ASSERT_OK(fsync(fd));
	ASSERT_OK(unlink("f"));
	tsleep_ms(UNLINKED_WAIT_MS);
	pread_all(fd, back, sizeof(back), 0);
	cr_assert_arr_eq(back, buf, sizeof(buf), "data of an unlinked open file");
	pwrite_all(fd, buf, sizeof(buf), sizeof(buf));
	ASSERT_OK(fsync(fd));
	cr_assert_eq(sx_fd(fd).stx_size, 2 * sizeof(buf));
	pread_all(fd, back, sizeof(back), sizeof(buf));
	cr_assert_arr_eq(back, buf, sizeof(buf));
	ASSERT_OK(close(fd));
}

/* ---- symlinks ---- */

Test(names, symlink_stores_its_target_for_readlink)
{
	char buf[256];
	ssize_t n;

	ASSERT_OK(symlink("some/where/../else", "l"));
	n = ASSERT_OK(readlink("l", buf, sizeof(buf)));
	cr_assert_eq(n, 18);
	cr_assert(memcmp(buf, "some/where/../else", 18) == 0);
	cr_assert(S_ISLNK(sx("l").stx_mode));
	cr_assert_eq(sx("l").stx_size, 18, "a symlink's size is its target's length");
}

Test(names, readlink_into_a_short_buffer_truncates)
{
	char buf[4];

	ASSERT_OK(symlink("abcdefgh", "l"));
	cr_assert_eq(ASSERT_OK(readlink("l", buf, sizeof(buf))), 4);
	cr_assert(memcmp(buf, "abcd", 4) == 0);
}

Test(names, a_4095_byte_symlink_target_round_trips)
{
	char *target = malloc(4096), *back = malloc(4200);

	for (int i = 0; i < 4095; i++)
		target[i] = i % 64 == 63 ? '/' : 'a' + i % 26;
	target[4095] = '\0';
	ASSERT_OK(symlink(target, "l"));
	cr_assert_eq(ASSERT_OK(readlink("l", back, 4200)), 4095);
	cr_assert(memcmp(back, target, 4095) == 0);
	free(target);
	free(back);
}

Test(names, an_absolute_symlink_into_the_mount_is_followed)
{
	char target[PATH_MAX];

	put_str("f", "absolute");
	snprintf(target, sizeof(target), "%s/f", posix_dir());
	ASSERT_OK(symlink(target, "l"));
	cr_assert_str_eq(get("l", NULL), "absolute");
}

Test(names, a_symlink_is_followed_to_its_target)
{
	xmkdir("d", 0755);
	put_str("d/f", "through");
	ASSERT_OK(symlink("d", "ld"));
	ASSERT_OK(symlink("ld/f", "lf"));
	cr_assert_str_eq(get("lf", NULL), "through");
	cr_assert_str_eq(get("ld/f", NULL), "through");
	cr_assert_eq(sx("d/f").stx_ino, sx("ld/f").stx_ino);
}

Test(names, symlink_over_an_existing_name_is_eexist)
{
	put_str("f", "x");
	ASSERT_OK(symlink("a", "l"));
	ASSERT_ERRNO(symlink("b", "f"), EEXIST);
	ASSERT_ERRNO(symlink("b", "l"), EEXIST);
}

Test(names, readlink_of_a_non_symlink_is_einval)
{
	char buf[16];

	put_str("f", "x");
	xmkdir("d", 0755);
	ASSERT_ERRNO(readlink("f", buf, sizeof(buf)), EINVAL);
	ASSERT_ERRNO(readlink("d", buf, sizeof(buf)), EINVAL);
	ASSERT_ERRNO(readlink("missing", buf, sizeof(buf)), ENOENT);
}

Test(names, a_symlink_loop_is_eloop)
{
	ASSERT_OK(symlink("b", "a"));
	ASSERT_OK(symlink("a", "b"));
	ASSERT_OK(symlink("self", "self"));
	ASSERT_ERRNO(open("a", O_RDONLY), ELOOP);
	ASSERT_ERRNO(open("self", O_RDWR | O_CREAT, 0644), ELOOP);
	ASSERT_ERRNO(stat("a", &(struct stat){ 0 }), ELOOP);
	ASSERT_ERRNO(mkdir("a/x", 0755), ELOOP);
	cr_assert(S_ISLNK(sx("a").stx_mode), "lstat does not follow");
}

Test(names, open_nofollow_of_a_symlink_is_eloop)
{
	put_str("f", "x");
	ASSERT_OK(symlink("f", "l"));
	ASSERT_ERRNO(open("l", O_RDONLY | O_NOFOLLOW), ELOOP);
	ASSERT_OK(close(ASSERT_OK(open("f", O_RDONLY | O_NOFOLLOW))));
}

Test(names, a_dangling_symlink_is_enoent_to_follow_but_lstat_sees_it)
{
	ASSERT_OK(symlink("nothing", "l"));
	ASSERT_ERRNO(open("l", O_RDONLY), ENOENT);
	ASSERT_ERRNO(stat("l", &(struct stat){ 0 }), ENOENT);
	cr_assert(S_ISLNK(sx("l").stx_mode));
}

/* ---- mknod ---- */

Test(names, mkfifo_makes_a_fifo_that_passes_data)
{
	char buf[8] = { 0 };
	int fd;

	ASSERT_OK(mkfifo("p", 0644));
	cr_assert(S_ISFIFO(sx("p").stx_mode));
	cr_assert_eq(sx("p").stx_mode & 07777, 0644);
	fd = ASSERT_OK(open("p", O_RDWR));
	cr_assert_eq(ASSERT_OK(write(fd, "pipe", 4)), 4);
	cr_assert_eq(ASSERT_OK(read(fd, buf, sizeof(buf))), 4);
	cr_assert_str_eq(buf, "pipe");
	close(fd);
}

Test(names, mknod_makes_a_regular_file)
{
	ASSERT_OK(mknod("f", S_IFREG | 0600, 0));
	cr_assert(S_ISREG(sx("f").stx_mode));
	cr_assert_eq(sx("f").stx_size, 0);
	put_str("f", "ok");
	cr_assert_str_eq(get("f", NULL), "ok");
}

Test(names, bind_makes_a_unix_socket_that_accepts_connections)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX, .sun_path = "sock" };
	int srv = ASSERT_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	int cli = ASSERT_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	int conn;
	char c = 0;

	ASSERT_OK(bind(srv, (struct sockaddr *)&a, sizeof(a)));
	ASSERT_OK(listen(srv, 1));
	cr_assert(S_ISSOCK(sx("sock").stx_mode), "mode %o", sx("sock").stx_mode);
	ASSERT_OK(connect(cli, (struct sockaddr *)&a, sizeof(a)));
	conn = ASSERT_OK(accept(srv, NULL, NULL));
	cr_assert_eq(ASSERT_OK(write(cli, "s", 1)), 1);
	cr_assert_eq(ASSERT_OK(read(conn, &c, 1)), 1);
	cr_assert_eq(c, 's');
	close(conn);
	close(cli);
	close(srv);
	ASSERT_OK(unlink("sock"));
}

Test(names, mknod_of_devices_as_root_keeps_type_and_rdev)
{
	struct statx st;

	ASSERT_OK(mknod("c", S_IFCHR | 0600, makedev(1, 3)));
	ASSERT_OK(mknod("b", S_IFBLK | 0640, makedev(7, 300)));
	st = sx("c");
	cr_assert(S_ISCHR(st.stx_mode));
	cr_assert_eq(st.stx_mode & 07777, 0600);
	cr_assert_eq(st.stx_rdev_major, 1);
	cr_assert_eq(st.stx_rdev_minor, 3);
	st = sx("b");
	cr_assert(S_ISBLK(st.stx_mode));
	cr_assert_eq(st.stx_rdev_major, 7);
	cr_assert_eq(st.stx_rdev_minor, 300);
	cr_assert_eq(st.stx_size, 0);
}

Test(names, mknod_keeps_the_largest_device_numbers)
{
	ASSERT_OK(mknod("c", S_IFCHR | 0600, makedev(4095, 1048575)));
	cr_assert_eq(sx("c").stx_rdev_major, 4095);
	cr_assert_eq(sx("c").stx_rdev_minor, 1048575);
}

Test(names, mknod_over_an_existing_name_is_eexist)
{
	put_str("f", "x");
	ASSERT_ERRNO(mknod("f", S_IFIFO | 0644, 0), EEXIST);
	ASSERT_ERRNO(mknod("f", S_IFCHR | 0644, makedev(1, 3)), EEXIST);
	ASSERT_ERRNO(mkfifo(".", 0644), EEXIST);
}

Test(names, mknod_by_a_user_of_a_device_is_eperm)
{
	xmkdir("pub", 0777);
	cr_assert_eq(AS_USER(USER_UID, USER_GID, mknod("pub/c", S_IFCHR | 0600,
						       makedev(1, 3))), EPERM);
	cr_assert_eq(AS_USER(USER_UID, USER_GID, mknod("pub/p", S_IFIFO | 0600, 0)), 0,
		     "a user may make a fifo");
	cr_assert_eq(sx("pub/p").stx_uid, USER_UID);
}

/* ---- readdir ---- */

static int name_index(const char *name)
{
	int i;

	return sscanf(name, "e%d", &i) == 1 ? i : -1;
}

Test(names, readdir_lists_every_entry_once_with_its_type)
{
	enum { N = 400 };
	static unsigned char seen[N];
	char name[32];
	struct dirent *e;
	int dots = 0;
	DIR *d;

	xmkdir("d", 0755);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "d/e%d", i);
		if (i % 3 == 0)
			xmkdir(name, 0755);
		else if (i % 3 == 1)
			put_str(name, "");
		else
			ASSERT_OK(symlink("x", name));
	}
	d = opendir("d");
	cr_assert(d);
	while ((errno = 0, e = readdir(d))) {
		int i = name_index(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) {
			cr_assert_eq(e->d_type, DT_DIR);
			dots++;
			continue;
		}
		cr_assert(i >= 0 && i < N, "unexpected entry '%s'", e->d_name);
		cr_assert_eq(seen[i], 0, "'%s' listed twice", e->d_name);
		seen[i] = 1;
		cr_assert_eq(e->d_type, i % 3 == 0 ? DT_DIR : i % 3 == 1 ? DT_REG : DT_LNK,
			     "'%s' type %d", e->d_name, e->d_type);
		if (i % 10 == 0) {
			char path[NAME_MAX + 8];

			snprintf(path, sizeof(path), "d/%s", e->d_name);
			cr_assert_eq(e->d_ino, sx(path).stx_ino, "d_ino of '%s'", e->d_name);
		}
	}
	cr_assert_eq(errno, 0, "readdir: %s", errname(errno));
	closedir(d);
	cr_assert_eq(dots, 2);
	for (int i = 0; i < N; i++)
		cr_assert(seen[i], "e%d not listed", i);
}

Test(names, readdir_while_unlinking_what_it_listed_returns_the_rest_once)
{
	enum { N = 600 };
	static unsigned char seen[N];
	char name[32];
	struct dirent *e;
	int fd, listed = 0;
	DIR *d;

	xmkdir("d", 0755);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "d/e%d", i);
		put_str(name, "");
	}
	d = opendir("d");
	cr_assert(d);
	fd = dirfd(d);
	/* rm -r's pattern: remove each entry right after reading it */
	while ((errno = 0, e = readdir(d))) {
		int i = name_index(e->d_name);

		if (i < 0)
			continue;
		cr_assert(i < N && !seen[i], "'%s' unexpected or listed twice", e->d_name);
		seen[i] = 1;
		listed++;
		ASSERT_OK(unlinkat(fd, e->d_name, 0));
	}
	cr_assert_eq(errno, 0, "readdir: %s", errname(errno));
	closedir(d);
	cr_assert_eq(listed, N, "listed %d of %d entries", listed, N);
	ASSERT_OK(rmdir("d"));
}

Test(names, seekdir_to_a_telldir_position_resumes_the_listing)
{
	enum { N = 300 };
	char name[32];
	static char first[N + 2][NAME_MAX + 1], again[N + 2][NAME_MAX + 1];
	int n1 = 0, n2 = 0, at = 0;
	struct dirent *e;
	long pos = -1;
	DIR *d;

	xmkdir("d", 0755);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "d/e%d", i);
		put_str(name, "");
	}
	d = opendir("d");
	cr_assert(d);
	while ((e = readdir(d))) {
		if (n1 == N / 2) {
			pos = telldir(d);
			at = n1 + 1;     /* the entry just read is before it */
		}
		cr_assert(n1 < N + 2, "the listing does not end");
		snprintf(first[n1++], sizeof(first[0]), "%s", e->d_name);
	}
	cr_assert(pos >= 0);
	seekdir(d, pos);
	while ((e = readdir(d))) {
		cr_assert(n2 < N + 2, "the resumed listing does not end");
		snprintf(again[n2++], sizeof(again[0]), "%s", e->d_name);
	}
	closedir(d);
	cr_assert_eq(n2, n1 - at, "resumed with %d entries, expected %d", n2, n1 - at);
	for (int i = 0; i < n2; i++)
		cr_assert_str_eq(again[i], first[at + i]);
}

/* ---- statfs ---- */

Test(names, statfs_reports_consistent_sizes_and_the_name_limit)
{
	struct statvfs v;

	ASSERT_OK(statvfs(".", &v));
	cr_assert_eq(v.f_namemax, 255);
	cr_assert_gt(v.f_bsize, 0);
	cr_assert_gt(v.f_frsize, 0);
	cr_assert_gt(v.f_blocks, 0);
	cr_assert_leq(v.f_bfree, v.f_blocks);
	cr_assert_leq(v.f_bavail, v.f_bfree);
	cr_assert_gt(v.f_files, 0);
	cr_assert_leq(v.f_ffree, v.f_files);
	put_str("f", "x");
	struct statvfs w;
	int fd = ASSERT_OK(open("f", O_RDONLY));
	ASSERT_OK(fstatvfs(fd, &w));
	close(fd);
	cr_assert_eq(w.f_fsid, v.f_fsid);
	cr_assert_eq(w.f_blocks, v.f_blocks);
}

/* ---- access ---- */

Test(names, access_reports_existence_and_roots_exec_bit)
{
	put_str("f", "x");
	xchmod("f", 0644);
	put_str("x", "x");
	xchmod("x", 0100);
	ASSERT_OK(access("f", F_OK));
	ASSERT_OK(access("f", R_OK | W_OK));
	ASSERT_ERRNO(access("f", X_OK), EACCES);
	ASSERT_OK(access("x", X_OK));
	ASSERT_ERRNO(access("missing", F_OK), ENOENT);
	ASSERT_ERRNO(access("f/x", F_OK), ENOTDIR);
	ASSERT_ERRNO(access("f", 0x40), EINVAL);
}
