/* SPDX-License-Identifier: MIT */
/*
 * runtime/fsutil.c: fsutil_rmtree removes what a hostile command left in a temp workdir, at
 * any depth and width, without following a symlink out or crossing into a mount.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/fsutil.h"
#include "tests/lib/testutil.h"

static void touch_at(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0, "create %s: %s", name, strerror(errno));
	(void)close(fd);
}

/* dfd/name made, with a file "f" in it; its fd. */
static int mkdir_with_file(int dfd, const char *name)
{
	int sub;

	cr_assert_eq(mkdirat(dfd, name, 0755), 0, "mkdir %s", name);
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(sub, 0);
	touch_at(sub, "f");
	return sub;
}

Test(fsutil, rmtree_any_depth)
{
	char *top = tu_tmpdir(), path[4200];
	int fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cordon_error e;

	/* 3000 levels, a file at each, and some directories made unreadable and unwritable. */
	for (int i = 0; i < 3000; i++) {
		int sub;

		cr_assert_eq(mkdirat(fd, "d", 0755), 0, "level %d", i);
		touch_at(fd, "f");
		sub = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(sub, 0);
		if (i % 500 == 7)
			(void)fchmod(fd, 0);
		(void)close(fd);
		fd = sub;
	}
	(void)close(fd);
	cr_assert_eq(fsutil_rmtree(top, &e), 0, "rmtree: %s", e.msg);
	snprintf(path, sizeof(path), "%s", top);
	cr_expect(access(path, F_OK) != 0, "%s is still there", top);
	free(top);
}

Test(fsutil, rmtree_wide_and_symlinks_out)
{
	char *top = tu_tmpdir(), *outside = tu_tmpdir(), p[512];
	int fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cordon_error e;

	tu_write_file(outside, "keep", "x");
	for (int i = 0; i < 2000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "w%d", i);
		(void)close(mkdir_with_file(fd, name));
	}
	cr_assert_eq(symlinkat(outside, fd, "out"), 0);
	snprintf(p, sizeof(p), "%s/keep", outside);
	cr_assert_eq(symlinkat(p, fd, "out-file"), 0);
	(void)close(fd);
	cr_assert_eq(fsutil_rmtree(top, &e), 0, "rmtree: %s", e.msg);
	cr_expect(access(top, F_OK) != 0);
	cr_expect(access(p, F_OK) == 0, "followed a symlink out");
	tu_rmtree(outside);
	free(outside);
	free(top);
}

/*
 * A wide level deeper than the levels that keep their stream (32): read once, whole, and each
 * of its subdirectories gone into in turn, with files, unwritable directories, a symlink out
 * and a tree below each; and a mount at that depth is left and reported.
 */
Test(fsutil, rmtree_wide_level_deep_down)
{
	char *top = tu_tmpdir(), *outside = tu_tmpdir(), p[512], deep[4096];
	int fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t len;
	cordon_error e;

	tu_write_file(outside, "keep", "x");
	snprintf(deep, sizeof(deep), "%s", top);
	for (int i = 0; i < 40; i++) {
		int sub;

		cr_assert_eq(mkdirat(fd, "d", 0755), 0);
		sub = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		(void)close(fd);
		fd = sub;
		strcat(deep, "/d");
	}
	for (int i = 0; i < 300; i++) {
		char name[32];
		int sub;

		snprintf(name, sizeof(name), "w%d", i);
		sub = mkdir_with_file(fd, name);
		cr_assert_eq(mkdirat(sub, "x", 0755), 0);
		if (i % 7 == 0)
			(void)fchmod(sub, 0);
		(void)close(sub);
		touch_at(fd, name + 1);
	}
	cr_assert_eq(symlinkat(outside, fd, "out"), 0);
	(void)close(fd);
	if (geteuid() == 0) {
		len = strlen(deep);
		snprintf(deep + len, sizeof(deep) - len, "/w150/mnt");
		cr_assert_eq(mkdir(deep, 0755), 0);
		cr_assert_eq(mount("none", deep, "tmpfs", 0, "size=1M"), 0, "mount: %s",
			     strerror(errno));
		cr_expect_eq(fsutil_rmtree(top, &e), -1, "a tree with a mount in it was 'removed'");
		cr_expect(access(deep, F_OK) == 0, "the mount point went");
		cr_assert_eq(umount(deep), 0);
	}
	cr_assert_eq(fsutil_rmtree(top, &e), 0, "rmtree: %s", e.msg);
	cr_expect(access(top, F_OK) != 0, "%s is still there", top);
	snprintf(p, sizeof(p), "%s/keep", outside);
	cr_expect(access(p, F_OK) == 0, "followed a symlink out");
	tu_rmtree(outside);
	free(outside);
	free(top);
}

Test(fsutil, rmtree_leaves_mounts_and_says_so)
{
	char *top = tu_tmpdir(), m[512], f[600];
	cordon_error e;

	if (geteuid() != 0)
		cr_skip_test("needs root to mount");
	snprintf(m, sizeof(m), "%s/a/mnt", top);
	cr_assert_eq(fsutil_mkdir_p(m, &e), 0);
	cr_assert_eq(mount("none", m, "tmpfs", 0, "size=1M"), 0, "mount: %s", strerror(errno));
	snprintf(f, sizeof(f), "%s/inside", m);
	touch_at(AT_FDCWD, f);
	cr_expect_eq(fsutil_rmtree(top, &e), -1, "a tree with a mount in it was 'removed'");
	cr_expect(access(f, F_OK) == 0, "removed a file of another file system");
	cr_assert_eq(umount(m), 0);
	cr_expect_eq(fsutil_rmtree(top, &e), 0, "rmtree after umount: %s", e.msg);
	cr_expect(access(top, F_OK) != 0);
	free(top);
}

Test(fsutil, unescape_mountinfo)
{
	char a[] = "/a\\040b\\011c\\012d\\134e", b[] = "/plain", c[] = "/x\\08\\4y\\";

	fsutil_unescape_mountinfo(a);
	cr_assert_str_eq(a, "/a b\tc\nd\\e");
	fsutil_unescape_mountinfo(b);
	cr_assert_str_eq(b, "/plain");
	/* not an escape: left as it is */
	fsutil_unescape_mountinfo(c);
	cr_assert_str_eq(c, "/x\\08\\4y\\");
}

/*
 * A temp dir is marked from its first instant: one whose maker died before holding it (a
 * SIGKILL between mkdtemp and the mark) is still the sweep's to remove, and one held is not
 * (found in review: mkdtemp's plain 0700 directories were left for ever).
 */
Test(fsutil, temp_dirs_are_marked_from_the_start)
{
	char *base = tu_tmpdir(), a[4200], b[4200];
	struct stat st;
	int hold;

	snprintf(a, sizeof(a), "%s/cordon-XXXXXX", base);
	snprintf(b, sizeof(b), "%s/cordon-XXXXXX", base);
	cr_assert_eq(fsutil_mkdtemp_marked(a), 0, "%s", strerror(errno));
	cr_assert_eq(fsutil_mkdtemp_marked(b), 0, "%s", strerror(errno));
	cr_assert_str_neq(a, b);
	cr_assert_eq(stat(a, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 01700, "mode %o", st.st_mode & 07777);
	/* a: its maker died before holding it; b: held. Both old enough (min_age 0). */
	hold = fsutil_temp_hold(b, &(cordon_error){ 0 });
	cr_assert_geq(hold, 0);
	(void)fsutil_temp_sweep(base, "cordon-", 0, 65534);
	cr_expect_neq(access(a, F_OK), 0, "the unheld marked dir was left");
	cr_expect_eq(access(b, F_OK), 0, "the held dir was swept");
	fsutil_temp_release(hold, false);
	tu_rmtree(base);
	free(base);
}

/* dir/name, made with mode and owner. */
static void mkdir_as(char *buf, size_t n, const char *dir, const char *name, mode_t mode, uid_t uid)
{
	snprintf(buf, n, "%s/%s", dir, name);
	cr_assert_eq(mkdir(buf, mode), 0, "%s: %s", buf, strerror(errno));
	cr_assert_eq(chown(buf, uid, 100), 0);
	cr_assert_eq(chmod(buf, mode), 0);
}

/* dir/name, a file of uid's; its path in buf. */
static void touch_as(char *buf, size_t n, const char *dir, const char *name, uid_t uid)
{
	int fd;

	snprintf(buf, n, "%s/%s", dir, name);
	fd = open(buf, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", buf, strerror(errno));
	cr_assert_eq(fchown(fd, uid, 100), 0);
	(void)close(fd);
}

/*
 * A marked dir of owner's, 1777, holding a 0777 directory of user 2000's with 2000's file
 * deeper down, and owner's own marked dir with owner's file: the sweep (also: the owner it
 * sweeps besides root's) must remove the latter and leave 2000's file.
 */
static void sweep_keeps_a_moved_in_tree(uid_t owner, uid_t also)
{
	char *base, evil[4200], bdir[4200], priv[4200], secret[4300], mine[4200], f[4300];

	base = tu_tmpdir();
	cr_assert_eq(chmod(base, 01777), 0); /* as /tmp */
	mkdir_as(evil, sizeof(evil), base, "cordon-evil", 01777, owner);
	mkdir_as(bdir, sizeof(bdir), evil, "bdir", 0777, 2000);
	mkdir_as(priv, sizeof(priv), bdir, "private", 0755, 2000);
	touch_as(secret, sizeof(secret), priv, "secret", 2000);
	mkdir_as(mine, sizeof(mine), base, "cordon-mine", 01700, owner);
	touch_as(f, sizeof(f), mine, "f", owner);

	(void)fsutil_temp_sweep(base, "cordon-", 0, also);

	cr_expect_eq(access(secret, F_OK), 0, "root's sweep removed another user's file");
	cr_expect_neq(access(mine, F_OK), 0, "the owner's own marked dir was left");
	tu_rmtree(base);
	free(base);
}

/*
 * cordond's start sweeps every user's marked temp dir in /tmp: as that user, not as root. A
 * member may make /tmp/cordon-x 1777 themselves, and move into it a directory of another
 * user's that they may write to (a 0777 one, in a directory they may write to), with that
 * user's files deeper down, which they cannot delete. Before, root's sweep deleted them all
 * (found in red team).
 */
Test(fsutil, a_sweep_removes_a_users_dir_with_that_users_rights)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to make other users' files");
	sweep_keeps_a_moved_in_tree(1000, FSUTIL_ANY_OWNER);
}

/*
 * Root's cordon run sweeps its $TMPDIR for its own marked temp dirs and for nobody's (the
 * owner a root run's temp workdir is given): nobody's with nobody's rights too. Any process of
 * nobody's (a root run's own command among them) may make $TMPDIR/cordon-x 1777 and move
 * another user's 0777 directory into it, as above; root's walk deleted that user's files,
 * which nobody could not (found in red team).
 */
Test(fsutil, a_root_sweep_removes_nobodys_dir_with_nobodys_rights)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to make other users' files");
	sweep_keeps_a_moved_in_tree(65534, 65534);
}

/*
 * Root's removal of its temp workdir once given to nobody (Docker): with nobody's rights, as
 * the sweep's (tests/docker/run.sh has the run end to end); root's own, with root's.
 */
Test(fsutil, rmtree_owned_removes_another_users_dir_with_their_rights)
{
	char *base, evil[4200], bdir[4200], priv[4200], secret[4300], mine[4200], f[4300];
	char sub[4300], rootdir[4200];

	if (geteuid() != 0)
		cr_skip_test("needs root to make other users' files");
	base = tu_tmpdir(); /* 0700, root's: nobody cannot search it, and need not */
	mkdir_as(evil, sizeof(evil), base, "cordon-evil", 01700, 65534);
	mkdir_as(bdir, sizeof(bdir), evil, "bdir", 0777, 2000);
	mkdir_as(priv, sizeof(priv), bdir, "private", 0755, 2000);
	touch_as(secret, sizeof(secret), priv, "secret", 2000);
	mkdir_as(mine, sizeof(mine), base, "cordon-mine", 01700, 65534);
	mkdir_as(sub, sizeof(sub), mine, "sub", 0500, 65534);
	touch_as(f, sizeof(f), mine, "f", 65534);
	mkdir_as(rootdir, sizeof(rootdir), base, "cordon-root", 0700, 0);

	cr_expect_neq(fsutil_rmtree_owned(evil, &(cordon_error){ 0 }), 0);
	cr_expect_eq(access(secret, F_OK), 0, "root's removal deleted another user's file");
	cr_expect_eq(fsutil_rmtree_owned(mine, &(cordon_error){ 0 }), 0);
	cr_expect_neq(access(mine, F_OK), 0, "nobody's own dir was left");
	cr_expect_eq(fsutil_rmtree_owned(rootdir, &(cordon_error){ 0 }), 0);
	cr_expect_neq(access(rootdir, F_OK), 0, "root's own dir was left");
	cr_expect_eq(fsutil_rmtree_owned(rootdir, &(cordon_error){ 0 }), 0, "gone already: 0");
	tu_rmtree(base);
	free(base);
}
