/*
 * attrs_test.c - posix_attrs: stat, chmod, chown, truncate, the umask,
 * setgid directories, and the setuid/setgid bits that writes, truncates
 * and chown clear.
 */
#include <stdlib.h>
#include <unistd.h>

#include "tests/posix/posix.h"

POSIX_SUITE(attrs);

static void make(const char *path, mode_t mode)
{
	put_str(path, "contents");
	xchmod(path, mode);
}

/* ---- stat, chmod, chown ---- */

Test(attrs, stat_and_fstat_agree_on_a_new_file)
{
	struct stat a, b;
	int fd;

	make("f", 0644);
	fd = ASSERT_OK(open("f", O_RDONLY));
	ASSERT_OK(stat("f", &a));
	ASSERT_OK(fstat(fd, &b));
	close(fd);
	cr_assert_eq(a.st_ino, b.st_ino);
	cr_assert_eq(a.st_dev, b.st_dev);
	cr_assert_eq(a.st_mode, b.st_mode);
	cr_assert_eq(a.st_size, 8);
	cr_assert_eq(b.st_size, 8);
	cr_assert_eq(a.st_nlink, 1);
	cr_assert_gt(a.st_blksize, 0);
}

Test(attrs, inode_numbers_differ_between_files)
{
	put_str("a", "");
	put_str("b", "");
	xmkdir("d", 0755);
	cr_assert_neq(sx("a").stx_ino, sx("b").stx_ino);
	cr_assert_neq(sx("a").stx_ino, sx("d").stx_ino);
}

Test(attrs, chmod_sets_exactly_the_permission_bits)
{
	static const mode_t modes[] = { 0, 0644, 0777, 0400, 04755, 02755, 01777, 07777, 0111 };

	make("f", 0644);
	xmkdir("d", 0755);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		xchmod("f", modes[i]);
		cr_assert_eq(sx("f").stx_mode, S_IFREG | modes[i], "chmod %o gave %o", modes[i],
			     sx("f").stx_mode);
		xchmod("d", modes[i]);
		cr_assert_eq(sx("d").stx_mode, S_IFDIR | modes[i], "chmod dir %o gave %o",
			     modes[i], sx("d").stx_mode);
	}
}

Test(attrs, fchmod_through_an_open_fd_changes_the_file)
{
	int fd;

	make("f", 0644);
	fd = ASSERT_OK(open("f", O_RDONLY));
	ASSERT_OK(fchmod(fd, 0600));
	cr_assert_eq(sx("f").stx_mode & 07777, 0600);
	close(fd);
}

Test(attrs, chmod_of_a_symlink_changes_its_target)
{
	make("f", 0644);
	ASSERT_OK(symlink("f", "l"));
	xchmod("l", 0600);
	cr_assert_eq(sx("f").stx_mode & 07777, 0600);
	cr_assert(S_ISLNK(sx("l").stx_mode));
}

Test(attrs, chown_by_root_changes_owner_and_group)
{
	make("f", 0644);
	ASSERT_OK(chown("f", USER_UID, USER_GID));
	cr_assert_eq(sx("f").stx_uid, USER_UID);
	cr_assert_eq(sx("f").stx_gid, USER_GID);
	ASSERT_OK(chown("f", -1, SHARED_GID));
	cr_assert_eq(sx("f").stx_uid, USER_UID, "uid -1 leaves the owner");
	cr_assert_eq(sx("f").stx_gid, SHARED_GID);
	ASSERT_OK(chown("f", OTHER_UID, -1));
	cr_assert_eq(sx("f").stx_uid, OTHER_UID);
	cr_assert_eq(sx("f").stx_gid, SHARED_GID, "gid -1 leaves the group");
}

Test(attrs, lchown_changes_the_symlink_itself)
{
	make("f", 0644);
	ASSERT_OK(symlink("f", "l"));
	ASSERT_OK(lchown("l", USER_UID, USER_GID));
	cr_assert_eq(sx("l").stx_uid, USER_UID);
	cr_assert_eq(sx("f").stx_uid, 0, "lchown reached the target");
}

Test(attrs, chown_clears_setuid_and_group_executable_setgid)
{
	make("f", 06755);
	ASSERT_OK(chown("f", USER_UID, USER_GID));
	cr_assert_eq(sx("f").stx_mode & 07777, 0755, "mode after chown: %o",
		     sx("f").stx_mode & 07777);
}

Test(attrs, chown_keeps_setgid_without_group_exec)
{
	/* setgid without group exec marks mandatory locking, not privilege */
	make("f", 02644);
	ASSERT_OK(chown("f", USER_UID, -1));
	cr_assert_eq(sx("f").stx_mode & 07777, 02644, "mode after chown: %o",
		     sx("f").stx_mode & 07777);
}

Test(attrs, chown_of_a_directory_keeps_its_setgid_bit)
{
	xmkdir("d", 02775);
	ASSERT_OK(chown("d", USER_UID, USER_GID));
	cr_assert_eq(sx("d").stx_mode & 07777, 02775);
}

/* ---- writes and truncates clear setuid/setgid ---- */

Test(attrs, write_by_a_non_owner_clears_setuid_and_setgid)
{
	make("f", 06777);
	cr_assert_eq(AS_USER(USER_UID, USER_GID, ({
		int fd_ = open("f", O_WRONLY);
		fd_ < 0 ? -1 : (int)write(fd_, "x", 1);
	})), 0);
	cr_assert_eq(sx("f").stx_mode & 07777, 0777, "mode after a user's write: %o",
		     sx("f").stx_mode & 07777);
}

Test(attrs, write_by_root_keeps_setuid)
{
	int fd;

	make("f", 04755);
	fd = ASSERT_OK(open("f", O_WRONLY));
	cr_assert_eq(ASSERT_OK(write(fd, "x", 1)), 1);
	close(fd);
	cr_assert_eq(sx("f").stx_mode & 07777, 04755, "CAP_FSETID keeps the bit");
}

Test(attrs, truncate_by_a_non_owner_clears_setuid)
{
	make("f", 04777);
	cr_assert_eq(AS_USER(USER_UID, USER_GID, truncate("f", 2)), 0);
	cr_assert_eq(sx("f").stx_size, 2);
	cr_assert_eq(sx("f").stx_mode & 07777, 0777, "mode after a user's truncate: %o",
		     sx("f").stx_mode & 07777);
}

/* ---- umask and setgid directories ---- */

Test(attrs, umask_is_applied_on_create_mkdir_and_mknod)
{
	int fd;

	umask(027);
	fd = ASSERT_OK(open("f", O_WRONLY | O_CREAT, 0777));
	close(fd);
	ASSERT_OK(mkdir("d", 0777));
	ASSERT_OK(mkfifo("p", 0666));
	umask(0);
	ASSERT_OK(close(ASSERT_OK(open("g", O_WRONLY | O_CREAT, 0777))));
	umask(022);
	cr_assert_eq(sx("f").stx_mode & 07777, 0750);
	cr_assert_eq(sx("d").stx_mode & 07777, 0750);
	cr_assert_eq(sx("p").stx_mode & 07777, 0640);
	cr_assert_eq(sx("g").stx_mode & 07777, 0777);
}

Test(attrs, new_files_take_the_callers_ids)
{
	xmkdir("pub", 0777);
	cr_assert_eq(AS_USER(USER_UID, USER_GID, open("pub/f", O_WRONLY | O_CREAT, 0644)), 0);
	cr_assert_eq(AS_USER(USER_UID, USER_GID, mkdir("pub/d", 0755)), 0);
	cr_assert_eq(AS_USER(USER_UID, USER_GID, symlink("f", "pub/l")), 0);
	cr_assert_eq(sx("pub/f").stx_uid, USER_UID);
	cr_assert_eq(sx("pub/f").stx_gid, USER_GID);
	cr_assert_eq(sx("pub/d").stx_uid, USER_UID);
	cr_assert_eq(sx("pub/d").stx_gid, USER_GID);
	cr_assert_eq(sx("pub/l").stx_uid, USER_UID);
}

Test(attrs, a_setgid_directory_passes_its_group_and_the_bit_to_subdirs)
{
	xmkdir("g", 0777);
	ASSERT_OK(chown("g", 0, SHARED_GID));
	xchmod("g", 02777);
	put_str("g/rootfile", "");
	ASSERT_OK(mkdir("g/sub", 0755));
	cr_assert_eq(AS_USER(USER_UID, USER_GID, open("g/userfile", O_WRONLY | O_CREAT, 0644)), 0);
	cr_assert_eq(AS_USER(USER_UID, USER_GID, mkdir("g/usersub", 0755)), 0);
	cr_assert_eq(sx("g/rootfile").stx_gid, SHARED_GID);
	cr_assert_eq(sx("g/sub").stx_gid, SHARED_GID);
	cr_assert(sx("g/sub").stx_mode & S_ISGID, "a subdir of a setgid dir is setgid");
	cr_assert_eq(sx("g/userfile").stx_gid, SHARED_GID);
	cr_assert_eq(sx("g/userfile").stx_uid, USER_UID);
	cr_assert_eq(sx("g/usersub").stx_gid, SHARED_GID);
	cr_assert(sx("g/usersub").stx_mode & S_ISGID);
	cr_assert(!(sx("g/rootfile").stx_mode & S_ISGID), "files do not get the bit");
}

Test(attrs, a_file_made_setgid_in_a_foreign_group_loses_the_bit)
{
	xmkdir("g", 0777);
	ASSERT_OK(chown("g", 0, SHARED_GID));
	xchmod("g", 02777);
	umask(0);
	cr_assert_eq(AS_USER(USER_UID, USER_GID, open("g/f", O_WRONLY | O_CREAT, 02755)), 0);
	umask(022);
	cr_assert_eq(sx("g/f").stx_gid, SHARED_GID);
	cr_assert_eq(sx("g/f").stx_mode & 07777, 0755,
		     "user not in the group kept setgid: %o", sx("g/f").stx_mode & 07777);
}

Test(attrs, without_setgid_a_directory_gives_the_callers_group)
{
	xmkdir("d", 0777);
	ASSERT_OK(chown("d", 0, SHARED_GID));
	cr_assert_eq(AS_USER(USER_UID, USER_GID, open("d/f", O_WRONLY | O_CREAT, 0644)), 0);
	cr_assert_eq(sx("d/f").stx_gid, USER_GID);
}

/* ---- truncate ---- */

Test(attrs, truncate_shrinks_and_grows_with_zeros)
{
	char buf[10000], back[20000];
	int fd;

	tfill_random(buf, sizeof(buf), 2);
	put("f", buf, sizeof(buf));
	ASSERT_OK(truncate("f", 5000));
	cr_assert_eq(sx("f").stx_size, 5000);
	ASSERT_OK(truncate("f", 20000));
	cr_assert_eq(sx("f").stx_size, 20000);
	fd = ASSERT_OK(open("f", O_RDONLY));
	pread_all(fd, back, sizeof(back), 0);
	close(fd);
	cr_assert_arr_eq(back, buf, 5000);
	for (size_t i = 5000; i < sizeof(back); i++)
		cr_assert_eq(back[i], 0, "byte %zu after shrink+grow is %d", i, back[i]);
}

Test(attrs, truncate_across_object_boundaries_keeps_the_head)
{
	enum { MB = 1 << 20 };
	char *buf = malloc(13 * MB), *back = malloc(13 * MB);
	int fd;

	tfill_random(buf, 13 * MB, 3);
	fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	pwrite_all(fd, buf, 13 * MB, 0);
	ASSERT_OK(ftruncate(fd, 5 * MB + 12345));
	cr_assert_eq(sx_fd(fd).stx_size, 5 * MB + 12345);
	ASSERT_OK(ftruncate(fd, 13 * MB));
	pread_all(fd, back, 13 * MB, 0);
	close(fd);
	cr_assert_arr_eq(back, buf, 5 * MB + 12345);
	for (size_t i = 5 * MB + 12345; i < 13 * MB; i++)
		if (back[i])
			cr_assert_fail("byte %zu past the truncate is %d, not 0", i, back[i]);
	free(buf);
	free(back);
}

Test(attrs, ftruncate_of_a_read_only_fd_is_einval)
{
	int fd;

	make("f", 0644);
	fd = ASSERT_OK(open("f", O_RDONLY));
	ASSERT_ERRNO(ftruncate(fd, 0), EINVAL);
	close(fd);
	cr_assert_eq(sx("f").stx_size, 8);
}

Test(attrs, truncate_errors)
{
	make("f", 0644);
	xmkdir("d", 0755);
	ASSERT_ERRNO(truncate("d", 0), EISDIR);
	ASSERT_ERRNO(truncate("missing", 0), ENOENT);
	ASSERT_ERRNO(truncate("f", -1), EINVAL);
	ASSERT_ERRNO(truncate("f/x", 0), ENOTDIR);
}

Test(attrs, o_trunc_empties_a_file_and_keeps_its_inode)
{
	int fd;
	uint64_t ino;

	make("f", 0644);
	ino = sx("f").stx_ino;
	fd = ASSERT_OK(open("f", O_WRONLY | O_TRUNC));
	cr_assert_eq(sx_fd(fd).stx_size, 0);
	cr_assert_eq(ASSERT_OK(write(fd, "ab", 2)), 2);
	close(fd);
	cr_assert_eq(sx("f").stx_ino, ino);
	cr_assert_str_eq(get("f", NULL), "ab");
}

Test(attrs, st_blocks_grows_with_written_data)
{
	char buf[65536];
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));

	tfill_random(buf, sizeof(buf), 4);
	pwrite_all(fd, buf, sizeof(buf), 0);
	ASSERT_OK(fsync(fd));
	close(fd);
	cr_assert_geq(sx("f").stx_blocks * 512, 65536, "st_blocks %llu for 64 KiB of data",
		      (unsigned long long)sx("f").stx_blocks);
}
