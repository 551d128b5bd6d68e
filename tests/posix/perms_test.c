/*
 * perms_test.c - posix_perms: what an unprivileged user may and may
 * not do (EACCES, EPERM): creating in and searching directories,
 * reading and writing files, chmod/chown/utimes of others' files,
 * sticky directories, access(2), and root's overrides.
 *
 * Each user operation runs in a child process that switched to
 * USER_UID or OTHER_UID (posix.h AS_USER), with the test's dir as cwd.
 */
#include <stdio.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tests/posix/posix.h"

POSIX_SUITE(perms);

#define U(call)  AS_USER(USER_UID, USER_GID, call)
#define O(call)  AS_USER(OTHER_UID, OTHER_GID, call)

static void make(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	put_str(path, "secret");
	ASSERT_OK(chown(path, uid, gid));
	xchmod(path, mode);
}

/* ---- directories ---- */

Test(perms, a_user_cannot_create_in_a_root_owned_0755_dir)
{
	xmkdir("d", 0755);
	put_str("src", "");
	xchmod("src", 0666);
	cr_assert_eq(U(open("d/f", O_WRONLY | O_CREAT, 0644)), EACCES);
	cr_assert_eq(U(mkdir("d/sub", 0755)), EACCES);
	cr_assert_eq(U(mknod("d/p", S_IFIFO | 0644, 0)), EACCES);
	cr_assert_eq(U(symlink("x", "d/l")), EACCES);
	cr_assert_eq(U(link("src", "d/hard")), EACCES);
	cr_assert_eq(U(rename("src", "d/moved")), EACCES);
	cr_assert(!exists("d/f") && !exists("d/sub") && !exists("d/p") && !exists("d/l") &&
		  !exists("d/hard") && !exists("d/moved"));
}

Test(perms, a_user_cannot_remove_from_a_root_owned_0755_dir)
{
	xmkdir("d", 0755);
	make("d/f", 0666, USER_UID, USER_GID);
	xmkdir("d/sub", 0777);
	cr_assert_eq(U(unlink("d/f")), EACCES, "owning the file is not enough");
	cr_assert_eq(U(rmdir("d/sub")), EACCES);
	cr_assert_eq(U(rename("d/f", "d/g")), EACCES);
	cr_assert(exists("d/f") && exists("d/sub"));
}

Test(perms, a_user_can_create_and_remove_in_a_0777_dir)
{
	xmkdir("pub", 0777);
	cr_assert_eq(U(open("pub/f", O_WRONLY | O_CREAT, 0644)), 0);
	cr_assert_eq(U(rename("pub/f", "pub/g")), 0);
	cr_assert_eq(U(unlink("pub/g")), 0);
	cr_assert(!exists("pub/g"));
}

Test(perms, a_user_without_search_permission_cannot_look_inside)
{
	xmkdir("d", 0700);
	make("d/f", 0644, 0, 0);
	cr_assert_eq(U(open("d/f", O_RDONLY)), EACCES);
	cr_assert_eq(U(access("d/f", F_OK)), EACCES);
	cr_assert_eq(U(chdir("d")), EACCES);
	xchmod("d", 0711);
	cr_assert_eq(U(open("d/f", O_RDONLY)), 0, "search without read is enough");
}

Test(perms, a_user_without_read_permission_cannot_list_a_dir)
{
	xmkdir("d", 0711);
	cr_assert_eq(U(open("d", O_RDONLY | O_DIRECTORY)), EACCES);
}

Test(perms, a_user_needs_write_permission_on_both_dirs_to_rename)
{
	xmkdir("from", 0777);
	xmkdir("to", 0755);
	cr_assert_eq(U(open("from/f", O_WRONLY | O_CREAT, 0644)), 0);
	cr_assert_eq(U(rename("from/f", "to/f")), EACCES);
	xchmod("to", 0777);
	cr_assert_eq(U(rename("from/f", "to/f")), 0);
}

Test(perms, moving_a_directory_needs_write_permission_on_it)
{
	xmkdir("a", 0777);
	xmkdir("b", 0777);
	xmkdir("a/sub", 0755);  /* root's: its ".." cannot change for a user */
	cr_assert_eq(U(rename("a/sub", "b/sub")), EACCES);
	cr_assert(exists("a/sub"));
}

/* ---- files ---- */

Test(perms, a_user_cannot_read_a_0600_root_file)
{
	make("f", 0600, 0, 0);
	cr_assert_eq(U(open("f", O_RDONLY)), EACCES);
	cr_assert_eq(U(open("f", O_WRONLY)), EACCES);
	cr_assert_eq(U(truncate("f", 0)), EACCES);
	cr_assert_eq(sx("f").stx_size, 6);
}

Test(perms, a_user_cannot_write_a_0644_root_file)
{
	make("f", 0644, 0, 0);
	cr_assert_eq(U(open("f", O_RDONLY)), 0);
	cr_assert_eq(U(open("f", O_WRONLY)), EACCES);
	cr_assert_eq(U(open("f", O_RDWR | O_TRUNC)), EACCES);
	cr_assert_eq(U(open("f", O_WRONLY | O_APPEND)), EACCES);
	cr_assert_str_eq(get("f", NULL), "secret");
}

Test(perms, group_and_other_bits_apply_to_the_right_users)
{
	make("f", 0640, 0, USER_GID);
	cr_assert_eq(U(open("f", O_RDONLY)), 0, "group read");
	cr_assert_eq(O(open("f", O_RDONLY)), EACCES, "no other read");
	cr_assert_eq(U(open("f", O_WRONLY)), EACCES, "no group write");
	make("g", 0066, USER_UID, 0);
	cr_assert_eq(U(open("g", O_RDONLY)), EACCES, "owner bits win over other bits");
}

Test(perms, a_user_cannot_exec_a_file_without_x)
{
	char *argv[] = { "prog", NULL };

	make("prog", 0644, 0, 0);
	cr_assert_eq(U(execv("prog", argv)), EACCES);
}

Test(perms, root_reads_and_writes_a_0000_file)
{
	int fd;

	make("f", 0000, USER_UID, USER_GID);
	fd = ASSERT_OK(open("f", O_RDWR));
	cr_assert_eq(ASSERT_OK(write(fd, "R", 1)), 1);
	close(fd);
	cr_assert_str_eq(get("f", NULL), "Recret");
}

Test(perms, opening_an_existing_file_with_o_creat_needs_no_dir_write_permission)
{
	xmkdir("d", 0755);
	make("d/f", 0666, 0, 0);
	cr_assert_eq(U(open("d/f", O_WRONLY | O_CREAT, 0644)), 0);
	cr_assert_eq(U(open("d/f", O_WRONLY | O_CREAT | O_EXCL, 0644)), EEXIST);
}

/* As the user: create pub/mine, take all its permissions away through
 * the open fd, then write and read through that fd. */
static int use_fd_after_fchmod_0(void)
{
	char back[8];
	int fd = open("pub/mine", O_RDWR | O_CREAT, 0600);

	if (fd < 0 || fchmod(fd, 0) || write(fd, "still", 5) != 5 ||
	    pread(fd, back, 5, 0) != 5)
		return -1;
	return close(fd);
}

Test(perms, an_open_fd_keeps_its_access_after_chmod)
{
	xmkdir("pub", 0777);
	cr_assert_eq(U(use_fd_after_fchmod_0()), 0);
	cr_assert_eq(sx("pub/mine").stx_size, 5);
	cr_assert_eq(sx("pub/mine").stx_mode & 07777, 0);
	cr_assert_eq(U(open("pub/mine", O_RDONLY)), EACCES, "a new open is checked");
}

/* ---- metadata of others' files ---- */

Test(perms, a_user_cannot_chmod_someone_elses_file)
{
	make("f", 0666, OTHER_UID, OTHER_GID);
	cr_assert_eq(U(chmod("f", 0777)), EPERM);
	cr_assert_eq(sx("f").stx_mode & 07777, 0666);
}

Test(perms, a_user_can_chmod_his_own_file)
{
	make("f", 0644, USER_UID, USER_GID);
	cr_assert_eq(U(chmod("f", 0600)), 0);
	cr_assert_eq(sx("f").stx_mode & 07777, 0600);
}

Test(perms, chmod_setgid_by_a_non_member_drops_the_bit)
{
	make("f", 0644, USER_UID, SHARED_GID);
	cr_assert_eq(U(chmod("f", 02755)), 0);
	cr_assert_eq(sx("f").stx_mode & 07777, 0755, "mode %o", sx("f").stx_mode & 07777);
}

Test(perms, a_user_cannot_give_his_file_away)
{
	make("f", 0644, USER_UID, USER_GID);
	cr_assert_eq(U(chown("f", OTHER_UID, -1)), EPERM);
	cr_assert_eq(U(chown("f", -1, SHARED_GID)), EPERM, "not a member of that group");
	cr_assert_eq(U(chown("f", USER_UID, USER_GID)), 0, "a no-op chown is allowed");
	cr_assert_eq(sx("f").stx_uid, USER_UID);
	cr_assert_eq(sx("f").stx_gid, USER_GID);
}

Test(perms, a_user_cannot_chown_someone_elses_file)
{
	make("f", 0666, OTHER_UID, OTHER_GID);
	cr_assert_eq(U(chown("f", USER_UID, USER_GID)), EPERM);
	cr_assert_eq(sx("f").stx_uid, OTHER_UID);
}

Test(perms, a_user_cannot_set_times_on_someone_elses_file)
{
	struct timespec t[2] = { { 1000, 0 }, { 2000, 0 } };

	make("f", 0666, OTHER_UID, OTHER_GID);
	make("ro", 0644, OTHER_UID, OTHER_GID);
	cr_assert_eq(U(utimensat(AT_FDCWD, "f", t, 0)), EPERM, "explicit times need ownership");
	cr_assert_eq(U(utimensat(AT_FDCWD, "ro", NULL, 0)), EACCES,
		     "'now' needs ownership or write permission");
	cr_assert_eq(U(utimensat(AT_FDCWD, "f", NULL, 0)), 0, "'now' with write permission");
	cr_assert_neq(ts_ns(sx("f").stx_mtime), 2000000000000ll);
}

Test(perms, the_owner_sets_any_times_on_his_file)
{
	struct timespec t[2] = { { 1000, 5 }, { 2000, 7 } };

	make("f", 0444, USER_UID, USER_GID);
	cr_assert_eq(U(utimensat(AT_FDCWD, "f", t, 0)), 0);
	cr_assert_eq(ts_ns(sx("f").stx_mtime), 2000000000007ll);
	cr_assert_eq(ts_ns(sx("f").stx_atime), 1000000000005ll);
}

/* ---- sticky directories ---- */

Test(perms, a_sticky_dir_protects_files_from_other_users)
{
	xmkdir("t", 01777);
	cr_assert_eq(U(open("t/mine", O_WRONLY | O_CREAT, 0666)), 0);
	put_str("t/roots", "");
	xchmod("t/roots", 0666);
	cr_assert_eq(O(unlink("t/mine")), EPERM);
	cr_assert_eq(O(rename("t/mine", "t/taken")), EPERM);
	cr_assert_eq(O(unlink("t/roots")), EPERM);
	cr_assert_eq(O(open("t/theirs", O_WRONLY | O_CREAT, 0644)), 0, "creating is allowed");
	cr_assert(exists("t/mine") && exists("t/roots"));
	cr_assert_eq(U(unlink("t/mine")), 0, "the owner may");
	cr_assert_eq(O(unlink("t/theirs")), 0);
}

Test(perms, the_owner_of_a_sticky_dir_may_remove_any_file_in_it)
{
	xmkdir("t", 01777);
	ASSERT_OK(chown("t", USER_UID, USER_GID));
	cr_assert_eq(O(open("t/theirs", O_WRONLY | O_CREAT, 0644)), 0);
	cr_assert_eq(U(unlink("t/theirs")), 0);
	cr_assert(!exists("t/theirs"));
}

Test(perms, a_sticky_dir_protects_against_rename_over)
{
	xmkdir("t", 01777);
	cr_assert_eq(U(open("t/mine", O_WRONLY | O_CREAT, 0666)), 0);
	cr_assert_eq(O(open("t/theirs", O_WRONLY | O_CREAT, 0666)), 0);
	cr_assert_eq(O(rename("t/theirs", "t/mine")), EPERM);
	cr_assert_eq(sx("t/mine").stx_uid, USER_UID);
}

/* ---- access ---- */

Test(perms, access_answers_for_the_real_user)
{
	make("f", 0604, 0, 0);
	make("x", 0755, 0, 0);
	cr_assert_eq(U(access("f", F_OK)), 0);
	cr_assert_eq(U(access("f", R_OK)), 0);
	cr_assert_eq(U(access("f", W_OK)), EACCES);
	cr_assert_eq(U(access("f", X_OK)), EACCES);
	cr_assert_eq(U(access("x", R_OK | X_OK)), 0);
	xchmod("f", 0600);
	cr_assert_eq(U(access("f", R_OK)), EACCES);
}

/* ---- xattrs ---- */

Test(perms, user_xattrs_need_file_permissions)
{
	make("ro", 0644, 0, 0);
	make("priv", 0600, 0, 0);
	ASSERT_OK(setxattr("priv", "user.k", "v", 1, 0));
	cr_assert_eq(U(setxattr("ro", "user.k", "v", 1, 0)), EACCES);
	cr_assert_eq(U(getxattr("priv", "user.k", NULL, 0)), EACCES);
	cr_assert_eq(U(removexattr("priv", "user.k")), EACCES);
	make("mine", 0600, USER_UID, USER_GID);
	cr_assert_eq(U(setxattr("mine", "user.k", "v", 1, 0)), 0);
}

Test(perms, trusted_xattrs_are_for_root_only)
{
	make("f", 0666, USER_UID, USER_GID);
	cr_assert_eq(U(setxattr("f", "trusted.k", "v", 1, 0)), EPERM);
	ASSERT_OK(setxattr("f", "trusted.k", "v", 1, 0));
	cr_assert_eq(U(getxattr("f", "trusted.k", NULL, 0)), ENODATA,
		     "trusted xattrs are invisible to users");
}
