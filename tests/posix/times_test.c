/*
 * times_test.c - posix_times: which of atime, mtime and ctime each
 * operation moves, on the inode and on its directories, and utimensat
 * with nanoseconds, UTIME_NOW and UTIME_OMIT.
 *
 * Attributes are read with statx(AT_STATX_FORCE_SYNC) (posix.h sx), so
 * the kernel's 1 s attribute cache cannot hide a change; tick() lets
 * the clock move before the operation, so "moved" is new > old and
 * "kept" is new == old.
 */
#include <stdio.h>
#include <sys/mman.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "tests/posix/posix.h"

POSIX_SUITE(times);

struct t3 {
	int64_t a, m, c;
};

static struct t3 times_of(struct statx st)
{
	return (struct t3){ ts_ns(st.stx_atime), ts_ns(st.stx_mtime), ts_ns(st.stx_ctime) };
}

static struct t3 t_path(const char *path)
{
	return times_of(sx(path));
}

static struct t3 t_fd(int fd)
{
	return times_of(sx_fd(fd));
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

#define MOVED(what, old, new) \
	cr_assert_gt((new), (old), "%s did not move: %lld -> %lld", what, \
		     (long long)(old), (long long)(new))
#define KEPT(what, old, new) \
	cr_assert_eq((new), (old), "%s moved: %lld -> %lld", what, \
		     (long long)(old), (long long)(new))

/* ---- creating and removing names ---- */

Test(times, a_new_file_has_the_current_time_in_all_three)
{
	int64_t before = now_ns(), after;
	struct t3 t;

	put_str("f", "");
	after = now_ns();
	t = t_path("f");
	/* a second of slack for coarse filesystem clocks; catches units */
	cr_assert(t.m >= before - 1000000000ll && t.m <= after + 1000000000ll,
		  "mtime %lld outside [%lld, %lld]", (long long)t.m, (long long)before,
		  (long long)after);
	cr_assert(t.c >= before - 1000000000ll && t.c <= after + 1000000000ll, "ctime %lld",
		  (long long)t.c);
	cr_assert(t.a >= before - 1000000000ll && t.a <= after + 1000000000ll, "atime %lld",
		  (long long)t.a);
}

Test(times, create_moves_the_parents_mtime_and_ctime)
{
	struct t3 p0 = t_path("."), p1;

	tick();
	put_str("f", "");
	p1 = t_path(".");
	MOVED("parent mtime", p0.m, p1.m);
	MOVED("parent ctime", p0.c, p1.c);
	cr_assert_geq(t_path("f").m, p1.m - 1000000000ll);
}

Test(times, mkdir_and_rmdir_move_the_parents_mtime_and_ctime)
{
	struct t3 p0 = t_path("."), p1, p2;

	tick();
	ASSERT_OK(mkdir("d", 0755));
	p1 = t_path(".");
	MOVED("parent mtime after mkdir", p0.m, p1.m);
	MOVED("parent ctime after mkdir", p0.c, p1.c);
	tick();
	ASSERT_OK(rmdir("d"));
	p2 = t_path(".");
	MOVED("parent mtime after rmdir", p1.m, p2.m);
	MOVED("parent ctime after rmdir", p1.c, p2.c);
}

Test(times, symlink_and_mknod_move_the_parents_mtime)
{
	struct t3 p0 = t_path("."), p1, p2;

	tick();
	ASSERT_OK(symlink("x", "l"));
	p1 = t_path(".");
	MOVED("parent mtime after symlink", p0.m, p1.m);
	tick();
	ASSERT_OK(mkfifo("p", 0644));
	p2 = t_path(".");
	MOVED("parent mtime after mkfifo", p1.m, p2.m);
}

Test(times, unlink_moves_the_dirs_times_and_the_remaining_links_ctime)
{
	struct t3 p0, f0, p1, f1;

	put_str("f", "x");
	ASSERT_OK(link("f", "g"));
	p0 = t_path(".");
	f0 = t_path("g");
	tick();
	ASSERT_OK(unlink("f"));
	p1 = t_path(".");
	f1 = t_path("g");
	MOVED("dir mtime", p0.m, p1.m);
	MOVED("dir ctime", p0.c, p1.c);
	MOVED("ctime of the other link", f0.c, f1.c);
	KEPT("mtime of the other link", f0.m, f1.m);
}

Test(times, link_moves_the_inodes_ctime_and_the_dirs_mtime)
{
	struct t3 f0, p0, f1, p1;

	xmkdir("d", 0755);
	put_str("f", "x");
	f0 = t_path("f");
	p0 = t_path("d");
	tick();
	ASSERT_OK(link("f", "d/g"));
	f1 = t_path("f");
	p1 = t_path("d");
	MOVED("inode ctime", f0.c, f1.c);
	KEPT("inode mtime", f0.m, f1.m);
	MOVED("new dir mtime", p0.m, p1.m);
	MOVED("new dir ctime", p0.c, p1.c);
}

/* ---- rename ---- */

Test(times, rename_across_dirs_moves_the_inodes_ctime_and_both_dirs_mtime)
{
	struct t3 a0, b0, f0, a1, b1, f1;

	xmkdir("a", 0755);
	xmkdir("b", 0755);
	put_str("a/f", "x");
	a0 = t_path("a");
	b0 = t_path("b");
	f0 = t_path("a/f");
	tick();
	ASSERT_OK(rename("a/f", "b/f"));
	a1 = t_path("a");
	b1 = t_path("b");
	f1 = t_path("b/f");
	MOVED("old dir mtime", a0.m, a1.m);
	MOVED("old dir ctime", a0.c, a1.c);
	MOVED("new dir mtime", b0.m, b1.m);
	MOVED("new dir ctime", b0.c, b1.c);
	MOVED("moved inode ctime", f0.c, f1.c);
	KEPT("moved inode mtime", f0.m, f1.m);
}

Test(times, rename_in_one_dir_moves_its_mtime_and_the_inodes_ctime)
{
	struct t3 p0, f0, p1, f1;

	put_str("f", "x");
	p0 = t_path(".");
	f0 = t_path("f");
	tick();
	ASSERT_OK(rename("f", "g"));
	p1 = t_path(".");
	f1 = t_path("g");
	MOVED("dir mtime", p0.m, p1.m);
	MOVED("inode ctime", f0.c, f1.c);
	KEPT("inode mtime", f0.m, f1.m);
}

Test(times, rename_over_a_name_moves_the_replaced_inodes_ctime)
{
	struct t3 v0, v1;

	put_str("victim", "old");
	ASSERT_OK(link("victim", "keep"));
	put_str("src", "new");
	v0 = t_path("keep");
	tick();
	ASSERT_OK(rename("src", "victim"));
	v1 = t_path("keep");
	MOVED("replaced inode ctime", v0.c, v1.c);
	KEPT("replaced inode mtime", v0.m, v1.m);
	cr_assert_eq(sx("keep").stx_nlink, 1);
}

Test(times, renaming_a_directory_moves_its_ctime)
{
	struct t3 d0, d1;

	xmkdir("a", 0755);
	xmkdir("b", 0755);
	xmkdir("a/d", 0755);
	d0 = t_path("a/d");
	tick();
	ASSERT_OK(rename("a/d", "b/d"));
	d1 = t_path("b/d");
	MOVED("moved dir ctime", d0.c, d1.c);
}

/* ---- data ---- */

Test(times, write_moves_mtime_and_ctime_before_close)
{
	int fd = ASSERT_OK(open("f", O_RDWR | O_CREAT, 0644));
	struct t3 t0 = t_fd(fd), t1;

	tick();
	cr_assert_eq(ASSERT_OK(write(fd, "data", 4)), 4);
	t1 = t_fd(fd);
	MOVED("mtime seen through the open fd", t0.m, t1.m);
	MOVED("ctime seen through the open fd", t0.c, t1.c);
	close(fd);
}

Test(times, write_moves_mtime_and_ctime_as_seen_after_close)
{
	int fd;
	struct t3 t0, t1;

	put_str("f", "old");
	t0 = t_path("f");
	tick();
	fd = ASSERT_OK(open("f", O_WRONLY));
	cr_assert_eq(ASSERT_OK(pwrite(fd, "new", 3, 0)), 3);
	ASSERT_OK(close(fd));
	t1 = t_path("f");
	MOVED("mtime", t0.m, t1.m);
	MOVED("ctime", t0.c, t1.c);
}

Test(times, overwriting_in_place_moves_mtime)
{
	int fd;
	struct t3 t0, t1;

	put_str("f", "0123456789");
	t0 = t_path("f");
	tick();
	fd = ASSERT_OK(open("f", O_WRONLY));
	cr_assert_eq(ASSERT_OK(pwrite(fd, "ab", 2, 3)), 2);   /* the size stays */
	ASSERT_OK(fsync(fd));
	t1 = t_fd(fd);
	close(fd);
	MOVED("mtime", t0.m, t1.m);
	MOVED("ctime", t0.c, t1.c);
}

Test(times, writing_a_file_keeps_its_directorys_times)
{
	int fd;
	struct t3 p0, p1;

	put_str("f", "old");
	p0 = t_path(".");
	tick();
	fd = ASSERT_OK(open("f", O_WRONLY | O_APPEND));
	cr_assert_eq(ASSERT_OK(write(fd, "more", 4)), 4);
	ASSERT_OK(close(fd));
	p1 = t_path(".");
	KEPT("dir mtime", p0.m, p1.m);
	KEPT("dir ctime", p0.c, p1.c);
}

Test(times, read_keeps_mtime_and_ctime)
{
	char buf[16];
	int fd;
	struct t3 t0, t1;

	put_str("f", "data");
	t0 = t_path("f");
	tick();
	fd = ASSERT_OK(open("f", O_RDONLY));
	cr_assert_eq(ASSERT_OK(read(fd, buf, sizeof(buf))), 4);
	close(fd);
	t1 = t_path("f");
	KEPT("mtime", t0.m, t1.m);
	KEPT("ctime", t0.c, t1.c);
}

Test(times, read_moves_an_atime_older_than_mtime)
{
	/* relatime (the default) still updates an atime that is not newer
	 * than mtime; POSIX asks for it on every read */
	struct timespec t[2] = { { 1000000, 0 }, { 0, UTIME_OMIT } };
	char buf[16];
	int fd;
	struct t3 t1;

	put_str("f", "data");
	ASSERT_OK(utimensat(AT_FDCWD, "f", t, 0));
	fd = ASSERT_OK(open("f", O_RDONLY));
	cr_assert_eq(ASSERT_OK(read(fd, buf, sizeof(buf))), 4);
	close(fd);
	t1 = t_path("f");
	MOVED("atime after a read", 1000000000000000ll, t1.a);
}

Test(times, ftruncate_moves_mtime_and_ctime)
{
	int fd;
	struct t3 t0, t1;

	put_str("f", "0123456789");
	fd = ASSERT_OK(open("f", O_RDWR));
	t0 = t_fd(fd);
	tick();
	ASSERT_OK(ftruncate(fd, 3));
	t1 = t_fd(fd);
	close(fd);
	MOVED("mtime", t0.m, t1.m);
	MOVED("ctime", t0.c, t1.c);
}

Test(times, truncate_by_path_to_a_larger_size_moves_mtime_and_ctime)
{
	struct t3 t0, t1;

	put_str("f", "0123456789");
	t0 = t_path("f");
	tick();
	ASSERT_OK(truncate("f", 100000));
	t1 = t_path("f");
	MOVED("mtime", t0.m, t1.m);
	MOVED("ctime", t0.c, t1.c);
}

Test(times, open_with_o_trunc_moves_mtime_and_ctime)
{
	struct t3 t0, t1;

	put_str("f", "0123456789");
	t0 = t_path("f");
	tick();
	ASSERT_OK(close(ASSERT_OK(open("f", O_WRONLY | O_TRUNC))));
	t1 = t_path("f");
	MOVED("mtime", t0.m, t1.m);
	MOVED("ctime", t0.c, t1.c);
}

Test(times, msync_of_a_shared_mapping_moves_mtime)
{
	int fd;
	char *p;
	struct t3 t0, t1;

	put_str("f", "0123456789");
	fd = ASSERT_OK(open("f", O_RDWR));
	t0 = t_fd(fd);
	tick();
	p = mmap(NULL, 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert(p != MAP_FAILED, "mmap: %s", errname(errno));
	p[0] = 'X';
	ASSERT_OK(msync(p, 10, MS_SYNC));
	munmap(p, 10);
	ASSERT_OK(close(fd));
	t1 = t_path("f");
	MOVED("mtime", t0.m, t1.m);
	MOVED("ctime", t0.c, t1.c);
}

Test(times, punch_hole_moves_mtime_and_ctime)
{
	char buf[8192] = { 1 };
	int fd;
	struct t3 t0, t1;

	put("f", buf, sizeof(buf));
	t0 = t_path("f");
	tick();
	fd = ASSERT_OK(open("f", O_RDWR));
	ASSERT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096));
	ASSERT_OK(close(fd));
	t1 = t_path("f");
	MOVED("mtime", t0.m, t1.m);
	MOVED("ctime", t0.c, t1.c);
}

Test(times, copy_file_range_moves_the_destinations_mtime_only)
{
	int in, out;
	loff_t oi = 0, oo = 0;
	struct t3 s0, d0, s1, d1;

	put_str("src", "0123456789");
	put_str("dst", "");
	s0 = t_path("src");
	d0 = t_path("dst");
	tick();
	in = ASSERT_OK(open("src", O_RDONLY));
	out = ASSERT_OK(open("dst", O_WRONLY));
	cr_assert_eq(ASSERT_OK(copy_file_range(in, &oi, out, &oo, 10, 0)), 10);
	ASSERT_OK(close(in));
	ASSERT_OK(close(out));
	s1 = t_path("src");
	d1 = t_path("dst");
	MOVED("destination mtime", d0.m, d1.m);
	MOVED("destination ctime", d0.c, d1.c);
	KEPT("source mtime", s0.m, s1.m);
	KEPT("source ctime", s0.c, s1.c);
}

/* ---- attributes ---- */

Test(times, chmod_moves_only_ctime)
{
	struct t3 t0, t1;

	put_str("f", "x");
	t0 = t_path("f");
	tick();
	xchmod("f", 0600);
	t1 = t_path("f");
	MOVED("ctime", t0.c, t1.c);
	KEPT("mtime", t0.m, t1.m);
	KEPT("atime", t0.a, t1.a);
}

Test(times, chown_moves_only_ctime)
{
	struct t3 t0, t1;

	put_str("f", "x");
	t0 = t_path("f");
	tick();
	ASSERT_OK(chown("f", USER_UID, USER_GID));
	t1 = t_path("f");
	MOVED("ctime", t0.c, t1.c);
	KEPT("mtime", t0.m, t1.m);
	KEPT("atime", t0.a, t1.a);
}

Test(times, setxattr_and_removexattr_move_only_ctime)
{
	struct t3 t0, t1, t2;

	put_str("f", "x");
	t0 = t_path("f");
	tick();
	ASSERT_OK(setxattr("f", "user.t", "v", 1, 0));
	t1 = t_path("f");
	MOVED("ctime after setxattr", t0.c, t1.c);
	KEPT("mtime after setxattr", t0.m, t1.m);
	tick();
	ASSERT_OK(removexattr("f", "user.t"));
	t2 = t_path("f");
	MOVED("ctime after removexattr", t1.c, t2.c);
	KEPT("mtime after removexattr", t1.m, t2.m);
}

Test(times, utimensat_sets_times_to_the_nanosecond_and_moves_ctime)
{
	struct timespec t[2] = { { 1000000000, 123456789 }, { 1500000000, 987654321 } };
	struct t3 t0, t1;

	put_str("f", "x");
	t0 = t_path("f");
	tick();
	ASSERT_OK(utimensat(AT_FDCWD, "f", t, 0));
	t1 = t_path("f");
	cr_assert_eq(t1.a, 1000000000123456789ll, "atime %lld", (long long)t1.a);
	cr_assert_eq(t1.m, 1500000000987654321ll, "mtime %lld", (long long)t1.m);
	MOVED("ctime", t0.c, t1.c);
}

Test(times, utimensat_accepts_times_before_1970_and_after_2038)
{
	struct timespec t[2] = { { -1000000, 5 }, { 4102444800ll, 1 } };   /* 2100-01-01 */
	struct t3 t1;

	put_str("f", "x");
	ASSERT_OK(utimensat(AT_FDCWD, "f", t, 0));
	t1 = t_path("f");
	cr_assert_eq(t1.a, -1000000ll * 1000000000ll + 5, "atime %lld", (long long)t1.a);
	cr_assert_eq(t1.m, 4102444800ll * 1000000000ll + 1, "mtime %lld", (long long)t1.m);
}

Test(times, utime_omit_keeps_that_time)
{
	struct timespec only_m[2] = { { 0, UTIME_OMIT }, { 1700000000, 42 } };
	struct timespec only_a[2] = { { 1600000000, 7 }, { 0, UTIME_OMIT } };
	struct t3 t0, t1, t2;

	put_str("f", "x");
	t0 = t_path("f");
	ASSERT_OK(utimensat(AT_FDCWD, "f", only_m, 0));
	t1 = t_path("f");
	KEPT("atime", t0.a, t1.a);
	cr_assert_eq(t1.m, 1700000000000000042ll);
	ASSERT_OK(utimensat(AT_FDCWD, "f", only_a, 0));
	t2 = t_path("f");
	cr_assert_eq(t2.a, 1600000000000000007ll);
	KEPT("mtime", t1.m, t2.m);
}

Test(times, utime_now_sets_the_current_time)
{
	struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	int64_t before, after;
	struct t3 t1;

	put_str("f", "x");
	ASSERT_OK(utimensat(AT_FDCWD, "f", old, 0));
	before = now_ns();
	ASSERT_OK(utimensat(AT_FDCWD, "f", now, 0));
	after = now_ns();
	t1 = t_path("f");
	cr_assert(t1.m >= before - 100000000 && t1.m <= after + 100000000,
		  "mtime %lld not in [%lld, %lld]", (long long)t1.m, (long long)before,
		  (long long)after);
	cr_assert(t1.a >= before - 100000000 && t1.a <= after + 100000000,
		  "atime %lld not in [%lld, %lld]", (long long)t1.a, (long long)before,
		  (long long)after);
}

Test(times, futimens_sets_times_through_an_open_fd)
{
	struct timespec t[2] = { { 1234567890, 1 }, { 1234567890, 2 } };
	int fd;

	put_str("f", "x");
	fd = ASSERT_OK(open("f", O_RDONLY));
	ASSERT_OK(futimens(fd, t));
	cr_assert_eq(t_fd(fd).m, 1234567890000000002ll);
	close(fd);
	cr_assert_eq(t_path("f").a, 1234567890000000001ll);
}

Test(times, utimensat_nofollow_sets_the_symlinks_own_times)
{
	struct timespec t[2] = { { 1111111111, 0 }, { 1111111111, 0 } };
	struct t3 f0;

	put_str("f", "x");
	ASSERT_OK(symlink("f", "l"));
	f0 = t_path("f");
	ASSERT_OK(utimensat(AT_FDCWD, "l", t, AT_SYMLINK_NOFOLLOW));
	cr_assert_eq(t_path("l").m, 1111111111000000000ll);
	KEPT("target mtime", f0.m, t_path("f").m);
}
