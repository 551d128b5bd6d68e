/*
 * links_test.c - posix_links: hard links and link counts of files and
 * directories (2 + subdirectories), link's error codes, EXDEV.
 */
#include <stdio.h>
#include <unistd.h>

#include "tests/posix/posix.h"

POSIX_SUITE(links);

static unsigned nlink(const char *path)
{
	return sx(path).stx_nlink;
}

Test(links, link_adds_a_name_for_the_same_inode)
{
	put_str("f", "shared");
	ASSERT_OK(link("f", "g"));
	cr_assert_eq(sx("f").stx_ino, sx("g").stx_ino);
	cr_assert_eq(nlink("f"), 2);
	cr_assert_eq(nlink("g"), 2);
	cr_assert_str_eq(get("g", NULL), "shared");
}

Test(links, a_write_through_one_link_reads_through_the_other)
{
	int fd;

	put_str("f", "before");
	ASSERT_OK(link("f", "g"));
	fd = ASSERT_OK(open("g", O_WRONLY | O_TRUNC));
	cr_assert_eq(ASSERT_OK(write(fd, "after!!", 7)), 7);
	close(fd);
	cr_assert_str_eq(get("f", NULL), "after!!");
	cr_assert_eq(sx("f").stx_size, 7);
}

Test(links, links_in_other_directories_count_too)
{
	char name[32];

	xmkdir("a", 0755);
	xmkdir("b", 0755);
	put_str("a/f", "x");
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "b/l%d", i);
		ASSERT_OK(link("a/f", name));
	}
	cr_assert_eq(nlink("a/f"), 11);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "b/l%d", i);
		ASSERT_OK(unlink(name));
		cr_assert_eq(nlink("a/f"), 10u - i);
	}
}

Test(links, unlinking_one_link_keeps_the_data_under_the_other)
{
	put_str("f", "survives");
	ASSERT_OK(link("f", "g"));
	ASSERT_OK(unlink("f"));
	cr_assert_eq(nlink("g"), 1);
	cr_assert_str_eq(get("g", NULL), "survives");
}

Test(links, attribute_changes_show_through_every_link)
{
	put_str("f", "x");
	ASSERT_OK(link("f", "g"));
	xchmod("f", 0600);
	ASSERT_OK(chown("g", USER_UID, USER_GID));
	cr_assert_eq(sx("g").stx_mode & 07777, 0600);
	cr_assert_eq(sx("f").stx_uid, USER_UID);
}

Test(links, link_to_an_existing_name_is_eexist)
{
	put_str("f", "x");
	put_str("g", "y");
	xmkdir("d", 0755);
	ASSERT_ERRNO(link("f", "g"), EEXIST);
	ASSERT_ERRNO(link("f", "d"), EEXIST);
	ASSERT_ERRNO(link("f", "f"), EEXIST);
	cr_assert_str_eq(get("g", NULL), "y");
	cr_assert_eq(nlink("f"), 1);
}

Test(links, link_of_a_directory_is_eperm)
{
	xmkdir("d", 0755);
	ASSERT_ERRNO(link("d", "e"), EPERM);
	cr_assert_eq(nlink("d"), 2);
}

Test(links, link_errors_for_missing_and_non_directory_paths)
{
	put_str("f", "x");
	ASSERT_ERRNO(link("missing", "g"), ENOENT);
	ASSERT_ERRNO(link("f", "nodir/g"), ENOENT);
	ASSERT_ERRNO(link("f", "f/g"), ENOTDIR);
	ASSERT_ERRNO(link("f/x", "g"), ENOTDIR);
}

Test(links, link_of_a_symlink_links_the_symlink_itself)
{
	put_str("f", "x");
	ASSERT_OK(symlink("f", "l"));
	ASSERT_OK(linkat(AT_FDCWD, "l", AT_FDCWD, "l2", 0));
	cr_assert(S_ISLNK(sx("l2").stx_mode));
	cr_assert_eq(sx("l2").stx_ino, sx("l").stx_ino);
	cr_assert_eq(nlink("l"), 2);
	ASSERT_OK(linkat(AT_FDCWD, "l", AT_FDCWD, "f2", AT_SYMLINK_FOLLOW));
	cr_assert_eq(sx("f2").stx_ino, sx("f").stx_ino);
}

Test(links, a_file_unlinked_while_linked_elsewhere_stays_listed_there)
{
	xmkdir("d", 0755);
	put_str("f", "x");
	ASSERT_OK(link("f", "d/f"));
	ASSERT_OK(unlink("f"));
	cr_assert(exists("d/f"));
	cr_assert_eq(nlink("d/f"), 1);
}

Test(links, link_to_another_filesystem_is_exdev)
{
	const char *other = "/dev/shm";
	char path[256];

	if (sx(".").stx_dev_major == sx(other).stx_dev_major &&
	    sx(".").stx_dev_minor == sx(other).stx_dev_minor)
		other = "/tmp";
	cr_assert(sx(".").stx_dev_minor != sx(other).stx_dev_minor ||
		  sx(".").stx_dev_major != sx(other).stx_dev_major,
		  "no other filesystem to link to");
	put_str("f", "x");
	snprintf(path, sizeof(path), "%s/sdfs-posix-exdev-%d", other, (int)getpid());
	ASSERT_ERRNO(link("f", path), EXDEV);
}

/* ---- directories: 2 + subdirectories ---- */

Test(links, a_directorys_nlink_is_two_plus_its_subdirectories)
{
	xmkdir("d", 0755);
	cr_assert_eq(nlink("d"), 2);
	xmkdir("d/a", 0755);
	xmkdir("d/b", 0755);
	xmkdir("d/c", 0755);
	put_str("d/file", "");
	ASSERT_OK(symlink("a", "d/link"));
	ASSERT_OK(mkfifo("d/fifo", 0644));
	cr_assert_eq(nlink("d"), 5, "files, symlinks and fifos do not count");
	ASSERT_OK(rmdir("d/b"));
	cr_assert_eq(nlink("d"), 4);
}

Test(links, moving_a_subdirectory_moves_its_link_between_parents)
{
	xmkdir("a", 0755);
	xmkdir("b", 0755);
	xmkdir("a/sub", 0755);
	cr_assert_eq(nlink("a"), 3);
	cr_assert_eq(nlink("b"), 2);
	ASSERT_OK(rename("a/sub", "b/sub"));
	cr_assert_eq(nlink("a"), 2);
	cr_assert_eq(nlink("b"), 3);
	cr_assert_eq(nlink("b/sub"), 2);
	cr_assert_eq(sx("b/sub/..").stx_ino, sx("b").stx_ino);
}

Test(links, replacing_a_subdirectory_by_rename_keeps_the_count)
{
	xmkdir("a", 0755);
	xmkdir("a/x", 0755);
	xmkdir("a/y", 0755);
	cr_assert_eq(nlink("a"), 4);
	ASSERT_OK(rename("a/x", "a/y"));
	cr_assert_eq(nlink("a"), 3);
	xmkdir("b", 0755);
	xmkdir("b/z", 0755);
	ASSERT_OK(rename("b/z", "a/y"));
	cr_assert_eq(nlink("a"), 3);
	cr_assert_eq(nlink("b"), 2);
}

Test(links, the_count_of_the_test_dir_itself_follows_mkdir_and_rmdir)
{
	unsigned n0 = nlink(".");

	xmkdir("d1", 0755);
	xmkdir("d2", 0755);
	cr_assert_eq(nlink("."), n0 + 2);
	ASSERT_OK(rmdir("d1"));
	ASSERT_OK(rmdir("d2"));
	cr_assert_eq(nlink("."), n0);
}

Test(links, a_removed_directory_has_no_links_through_an_open_fd)
{
	int fd;

	xmkdir("d", 0755);
	fd = ASSERT_OK(open("d", O_RDONLY | O_DIRECTORY));
	ASSERT_OK(rmdir("d"));
	cr_assert_eq(sx_fd(fd).stx_nlink, 0, "nlink of a removed directory");
	ASSERT_ERRNO(openat(fd, "new", O_WRONLY | O_CREAT, 0644), ENOENT);
	close(fd);
}
