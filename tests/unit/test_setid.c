/* SPDX-License-Identifier: MIT */
/*
 * backends/local/setid.c: the walk that finds the privileged programs of an idmapped workdir
 * (setuid, setgid, file capabilities) and its device nodes, sockets and FIFOs, every name of
 * them at any depth, and nothing else; and
 * that refuses a workdir past its bounds rather than return part of the list. And the same
 * scan done by the hide walk (hide.c, HIDE_SETID) when the profile has globs: the same list
 * and the same bounds as the two walks it replaces.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "backends/local/setid.h"
#include "runtime/cleanup.h"
#include "tests/lib/testutil.h"

static void make_file(const char *dir, const char *rel, mode_t mode)
{
	char p[4096];
	int fd;

	(void)snprintf(p, sizeof(p), "%s/%s", dir, rel);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "create %s: %s", p, strerror(errno));
	cr_assert_eq(fchmod(fd, mode), 0, "chmod %s", p);
	(void)close(fd);
}

static void make_dir(const char *dir, const char *rel)
{
	char p[4096];

	(void)snprintf(p, sizeof(p), "%s/%s", dir, rel);
	cr_assert_eq(mkdir(p, 0755), 0, "mkdir %s: %s", p, strerror(errno));
}

static bool set_caps(const char *wd, const char *rel);

/* A 0755 program with cap_net_raw in its security.capability (skips the test without root). */
static void make_cap_program(const char *dir, const char *rel)
{
	make_file(dir, rel, 0755);
	if (!set_caps(dir, rel))
		cr_skip_test("setxattr security.capability: %s (needs root)", strerror(errno));
}

static bool listed(const struct sb_hide_list *l, const char *rel)
{
	for (size_t i = 0; i < l->nro; i++)
		if (strcmp(l->ro[i].rel, rel) == 0)
			return true;
	return false;
}

static int scan(const char *dir, struct sb_hide_list *out, cordon_error *e)
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), r;

	cr_assert_geq(fd, 0);
	r = setid_scan(fd, out, e);
	(void)close(fd);
	return r;
}

Test(setid, finds_privileged_programs_and_nothing_else)
{
	char *wd = tu_tmpdir(), p[4096], *q;
	struct sb_hide_list l = { 0 };
	cordon_error e = { 0 };
	struct stat st;

	make_dir(wd, "usr");
	make_dir(wd, "usr/bin");
	make_dir(wd, "deep");
	make_dir(wd, "deep/er");
	make_file(wd, "usr/bin/su", 04755);
	make_file(wd, "usr/bin/chage", 02755);
	make_file(wd, "deep/er/locked", 02644); /* setgid without group execute: still listed */
	make_cap_program(wd, "usr/bin/ping");
	make_file(wd, "usr/bin/ls", 0755);
	make_file(wd, "plain", 0644);
	/* a second name of the setuid one, and a symlink to it (not followed) */
	(void)snprintf(p, sizeof(p), "%s/usr/bin/su", wd);
	cr_assert_eq(asprintf(&q, "%s/deep/su-link", wd) > 0, true);
	cr_assert_eq(link(p, q), 0);
	free(q);
	cr_assert_eq(asprintf(&q, "%s/sym", wd) > 0, true);
	cr_assert_eq(symlink("usr/bin/su", q), 0);
	free(q);

	(void)snprintf(p, sizeof(p), "%s/deep/fifo", wd);
	cr_assert_eq(mkfifo(p, 0600), 0);
	(void)snprintf(p, sizeof(p), "%s/deep/er/null", wd);
	cr_assert_eq(mknod(p, S_IFCHR | 0600, makedev(1, 3)), 0, "mknod: %s", strerror(errno));
	(void)snprintf(p, sizeof(p), "%s/usr/bin/su", wd);

	cr_assert_eq(scan(wd, &l, &e), 0, "%s", e.msg);
	cr_expect_eq(l.nro, 7, "%zu listed", l.nro);
	cr_expect(listed(&l, "deep/fifo"));
	cr_expect(listed(&l, "deep/er/null"));
	cr_expect(listed(&l, "usr/bin/su"));
	cr_expect(listed(&l, "usr/bin/chage"));
	cr_expect(listed(&l, "usr/bin/ping"));
	cr_expect(listed(&l, "deep/er/locked"));
	cr_expect(listed(&l, "deep/su-link"));
	cr_expect(!listed(&l, "sym") && !listed(&l, "usr/bin/ls") && !listed(&l, "plain"));
	cr_assert_eq(stat(p, &st), 0);
	for (size_t i = 0; i < l.nro; i++)
		if (strcmp(l.ro[i].rel, "usr/bin/su") == 0)
			cr_expect(l.ro[i].dev == st.st_dev && l.ro[i].ino == st.st_ino);
	hide_list_free(&l);
	tu_rmtree(wd);
	free(wd);
}

/*
 * A file capability the walk cannot read is protected, not taken for absent: the check went
 * through /proc/self/fd, and where the walking process has no /proc of its own (a chroot, a
 * container with /proc masked, a mount namespace without one) every lgetxattr failed with
 * ENOENT, was read as "no capability", and a cap_net_raw program of root's was left writable
 * to the command (red team).
 */
/*
 * setid_scan of wd in a child readied by prepare() first (exit 3 when it cannot be), judged
 * there by judge(): the child's exit status.
 */
static int scan_in_child(const char *wd, bool (*prepare)(void),
			 int (*judge)(int r, const struct sb_hide_list *l, const cordon_error *e))
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sb_hide_list l = { 0 };
		cordon_error e = { 0 };
		int fd = open(wd, O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (fd < 0 || !prepare())
			_exit(3);
		_exit(judge(setid_scan(fd, &l, &e), &l, &e));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "status %d", status);
	return WEXITSTATUS(status);
}

/* This process alone: a mount namespace of its own, without /proc. */
static bool without_proc(void)
{
	return unshare(CLONE_NEWNS) == 0 &&
	       mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	       umount2("/proc", MNT_DETACH) == 0 && access("/proc/self/fd", F_OK) < 0;
}

static int ping_protected(int r, const struct sb_hide_list *l, const cordon_error *e)
{
	(void)e;
	if (r < 0)
		return 0; /* refused: fails closed too */
	/* (ls, whose attributes cannot be read either, is protected too) */
	return listed(l, "ping") && !listed(l, "plain") ? 0 : 1;
}

Test(setid, a_file_capability_is_found_without_proc)
{
	char *wd = tu_tmpdir();
	int st;

	make_cap_program(wd, "ping");
	make_file(wd, "ls", 0755);
	make_file(wd, "plain", 0644);
	st = scan_in_child(wd, without_proc, ping_protected);
	if (st == 3)
		cr_skip_test("cannot make a mount namespace without /proc");
	cr_expect_eq(st, 0, "the capability program was not protected without /proc");
	tu_rmtree(wd);
	free(wd);
}

/*
 * A file the walk cannot stat (an I/O error, memory: anything but its removal meanwhile) fails
 * the scan: it was passed by as if gone, and a setuid program behind such a failure was left
 * writable to the command (red team). The failure is made by a seccomp filter in a child:
 * EIO for every fstatat that does not follow symlinks, the walk's stat of an entry.
 */
static bool stats_fail(void)
{
	return tu_fail_nofollow_stats(EIO);
}

static int scan_failed(int r, const struct sb_hide_list *l, const cordon_error *e)
{
	(void)l;
	if (r == 0)
		return 1; /* passed by */
	return strstr(e->msg, "stat") ? 0 : 2;
}

Test(setid, a_file_that_cannot_be_stated_fails_the_scan)
{
	char *wd = tu_tmpdir();
	int st;

	make_dir(wd, "sub");
	/* one at the top (setid_scan's own loop), one below (walk_dir) */
	for (const char *const *n = (const char *const[]){ "su", "sub/su", NULL }; *n; n++)
		make_file(wd, *n, 04755);
	st = scan_in_child(wd, stats_fail, scan_failed);
	cr_assert_neq(st, 3, "no seccomp filter");
	cr_expect_eq(st, 0, "a scan whose stat failed %s",
		     st == 1 ? "passed" : "said another thing");
	tu_rmtree(wd);
	free(wd);
}

/*
 * hide_pin_protected: every directory on the way to a protected file, once, with its inode, among
 * the pins the hide scan made already (not twice), sorted parents first; a top-level file needs
 * none. (A run could otherwise move a protected file's directory while another run's scan
 * walks the workdir: escape_privs::setid_program_moved_during_a_scan.)
 */
static void make_special(const char *wd, const char *rel, mode_t type);

Test(setid, the_directories_of_protected_files_are_pinned)
{
	static const char *const want[] = { "a", "a/b", "a/b/c", "dev", "usr", "usr/bin" };
	char *wd = tu_tmpdir(), p[4096];
	struct sb_hide_list l = { 0 };
	cordon_error e = { 0 };
	struct stat st;
	int fd;

	make_dir(wd, "usr");
	make_dir(wd, "usr/bin");
	make_dir(wd, "usr/lib");
	make_dir(wd, "dev");
	make_dir(wd, "a");
	make_dir(wd, "a/b");
	make_dir(wd, "a/b/c");
	make_file(wd, "su", 04755);
	make_file(wd, "usr/bin/su", 04755);
	make_file(wd, "usr/bin/chage", 02755);
	make_file(wd, "usr/lib/plain", 0755);
	make_file(wd, "a/b/c/su", 04755);
	make_special(wd, "dev/fifo", S_IFIFO);
	cr_assert_eq(scan(wd, &l, &e), 0, "%s", e.msg);
	cr_assert_eq(l.nro, 5, "%zu listed", l.nro);
	/* A pin of the hide scan's (on the way to a hidden name) is not made twice. */
	(void)snprintf(p, sizeof(p), "%s/usr", wd);
	cr_assert_eq(stat(p, &st), 0);
	l.pin = calloc(1, sizeof(*l.pin));
	cr_assert(l.pin);
	l.pin[0] = (struct sb_hide){
		.rel = strdup("usr"), .dev = st.st_dev, .ino = st.st_ino, .dir = true
	};
	l.npin = l.pincap = 1;
	fd = open(wd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(hide_pin_protected(fd, &l, &e), 0, "%s", e.msg);
	(void)close(fd);
	cr_assert_eq(l.npin, ARRAY_SIZE(want), "%zu pinned", l.npin);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		cr_expect_str_eq(l.pin[i].rel, want[i], "pin %zu", i);
		(void)snprintf(p, sizeof(p), "%s/%s", wd, want[i]);
		cr_assert_eq(stat(p, &st), 0);
		cr_expect(l.pin[i].dir && l.pin[i].dev == st.st_dev && l.pin[i].ino == st.st_ino,
			  "%s: another inode", want[i]);
	}
	hide_list_free(&l);
	tu_rmtree(wd);
	free(wd);
}

Test(setid, deeper_than_the_bound_is_refused)
{
	char *wd = tu_tmpdir(), rel[4096] = "";
	struct sb_hide_list l = { 0 };
	cordon_error e = { 0 };
	size_t n = 0;

	for (int i = 0; i <= HIDE_MAX_DEPTH; i++) {
		n += (size_t)snprintf(rel + n, sizeof(rel) - n, "%sd", i ? "/" : "");
		make_dir(wd, rel);
	}
	cr_assert_eq(scan(wd, &l, &e), -1, "a tree past the depth bound was walked");
	cr_expect(strstr(e.msg, "too big"), "%s", e.msg);
	cr_expect_eq(l.nro, 0);
	hide_list_free(&l);
	tu_rmtree(wd);
	free(wd);
}

Test(setid, an_empty_workdir_lists_nothing)
{
	char *wd = tu_tmpdir();
	struct sb_hide_list l = { 0 };
	cordon_error e = { 0 };

	cr_assert_eq(scan(wd, &l, &e), 0, "%s", e.msg);
	cr_expect_eq(l.nro, 0);
	hide_list_free(&l);
	tu_rmtree(wd);
	free(wd);
}

/* 40 top-level directories of 80 files: past SETID_SHARE_AFTER, shared with a second thread. */
static char *big_tree(void)
{
	char *wd = tu_tmpdir(), rel[64];

	for (int d = 0; d < 40; d++) {
		(void)snprintf(rel, sizeof(rel), "d%02d", d);
		make_dir(wd, rel);
		for (int f = 0; f < 80; f++) {
			(void)snprintf(rel, sizeof(rel), "d%02d/f%02d", d, f);
			make_file(wd, rel, 0644);
		}
	}
	return wd;
}

/* A big workdir, walked on two threads: nothing is missed, whichever thread found it. */
Test(setid, a_big_workdir_is_walked_whole)
{
	char *wd = big_tree(), p[4096];
	struct sb_hide_list l = { 0 };
	cordon_error e = { 0 };

	make_file(wd, "d00/f00", 04755);
	make_file(wd, "d20/f05", 02755);
	make_file(wd, "d39/f79", 04711);
	make_file(wd, "top-su", 04755);
	(void)snprintf(p, sizeof(p), "%s/d38/fifo", wd);
	cr_assert_eq(mkfifo(p, 0600), 0);
	cr_assert_eq(scan(wd, &l, &e), 0, "%s", e.msg);
	cr_expect_eq(l.nro, 5, "%zu listed", l.nro);
	cr_expect(listed(&l, "d00/f00") && listed(&l, "d20/f05") && listed(&l, "d39/f79"));
	cr_expect(listed(&l, "top-su") && listed(&l, "d38/fifo"));
	hide_list_free(&l);
	tu_rmtree(wd);
	free(wd);
}

/* The depth bound past the point where the walk is shared: refused, whichever thread hit it. */
Test(setid, a_bound_hit_late_in_a_big_workdir_is_refused)
{
	char *wd = big_tree(), rel[4096] = "d39";
	struct sb_hide_list l = { 0 };
	cordon_error e = { 0 };
	size_t n = strlen(rel);

	make_file(wd, "d00/f00", 04755);
	for (int i = 0; i < HIDE_MAX_DEPTH; i++) {
		n += (size_t)snprintf(rel + n, sizeof(rel) - n, "/d");
		make_dir(wd, rel);
	}
	cr_assert_eq(scan(wd, &l, &e), -1, "a tree past the depth bound was walked");
	cr_expect(strstr(e.msg, "too big"), "%s", e.msg);
	cr_expect_eq(l.nro, 0, "a partial list: %zu", l.nro);
	hide_list_free(&l);
	tu_rmtree(wd);
	free(wd);
}

/*
 * The hide walk with HIDE_SETID (hide.c) against the two walks it replaces, hide_scan alone and
 * then setid_scan: the same names hidden and pinned, in the same order, and the same files
 * listed in ro, at the top level, in subdirectories, below directories the walk hides whole
 * (walked for the setid checks alone: hide.c, walk_entry) and among hidden files; on one thread
 * and on two (the tree is past the 2,048 entries that make a second thread worth it), with the
 * same ro list whichever thread found what.
 */
static void make_special(const char *wd, const char *rel, mode_t type)
{
	char p[4096];

	(void)snprintf(p, sizeof(p), "%s/%s", wd, rel);
	if (type == S_IFIFO) {
		cr_assert_eq(mkfifo(p, 0600), 0, "mkfifo %s: %s", p, strerror(errno));
	} else if (type == S_IFSOCK) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		cr_assert(fd >= 0 && strlen(p) < sizeof(a.sun_path), "socket path %s", p);
		strcpy(a.sun_path, p);
		cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind %s: %s", p,
			     strerror(errno));
		(void)close(fd);
	} else {
		cr_assert_eq(mknod(p, type | 0600, makedev(1, 3)), 0, "mknod %s: %s", p,
			     strerror(errno));
	}
}

static void make_link(const char *wd, const char *from, const char *to, bool sym)
{
	char a[4096], b[4096];

	(void)snprintf(a, sizeof(a), "%s/%s", wd, from);
	(void)snprintf(b, sizeof(b), "%s/%s", wd, to);
	cr_assert_eq(sym ? symlink(from, b) : link(a, b), 0, "link %s: %s", b, strerror(errno));
}

static bool set_caps(const char *wd, const char *rel)
{
	/* struct vfs_cap_data, revision 2, effective: cap_net_raw permitted */
	static const uint32_t caps[5] = { 0x02000001, 1u << 13, 0, 0, 0 };
	char p[4096];

	(void)snprintf(p, sizeof(p), "%s/%s", wd, rel);
	return setxattr(p, "security.capability", caps, sizeof(caps), 0) == 0;
}

/*
 * The privileged files and special files of the tree below (on top of big_tree), and which
 * of them the walk hides (below a hidden directory, or hidden by name).
 */
static const char *const PRIVILEGED[] = {
	"top-su",	  "top-fifo",	      "d00/f00",	 "d20/f05",
	"d05/ping",	  "d38/fifo",	      "d10/null",	 "d11/sock",
	"d12/blk",	  "d07/su.key",	      "build/bin/su",	 "build/dev/null",
	"d15/build/sgid", "d15/build/x/fifo", "d30/sub/link-su", "build/bin/link-d00",
};

static void make_privileged_tree(const char *wd)
{
	make_file(wd, "top-su", 04755);
	make_special(wd, "top-fifo", S_IFIFO);
	make_file(wd, "d00/f00", 04755);
	make_file(wd, "d20/f05", 02755);
	make_file(wd, "d05/ping", 0755);
	if (!set_caps(wd, "d05/ping"))
		cr_skip_test("setxattr security.capability: %s (needs root)", strerror(errno));
	make_special(wd, "d38/fifo", S_IFIFO);
	make_special(wd, "d10/null", S_IFCHR);
	make_special(wd, "d11/sock", S_IFSOCK);
	make_special(wd, "d12/blk", S_IFBLK);
	/* Hidden by name (*.key): still listed, as setid_scan lists it. */
	make_file(wd, "d07/su.key", 04755);
	/* Below directories hidden whole: at the top level and deeper. */
	make_dir(wd, "build");
	make_dir(wd, "build/bin");
	make_dir(wd, "build/dev");
	make_file(wd, "build/bin/su", 04711);
	make_special(wd, "build/dev/null", S_IFCHR);
	make_dir(wd, "d15/build");
	make_dir(wd, "d15/build/x");
	make_file(wd, "d15/build/sgid", 02711);
	make_special(wd, "d15/build/x/fifo", S_IFIFO);
	make_file(wd, "d15/build/x/plain", 0755);
	/* Other names: a hard link listed under each name, a symlink never. */
	make_dir(wd, "d30/sub");
	make_link(wd, "top-su", "d30/sub/link-su", false);
	make_link(wd, "d00/f00", "build/bin/link-d00", false);
	make_link(wd, "top-su", "d31/sym-su", true);
	make_file(wd, "d31/f00.key", 0644);
}

static struct cordon_profile *merged_profile(void)
{
	struct cordon_profile *p = NULL;
	cordon_error e;

	cr_assert_eq(cordon_profile_load("default", &p, &e), 0, "%s", e.msg);
	cordon_list_free(&p->mask);
	cordon_list_free(&p->ignore);
	cr_assert_eq(cordon_list_add(&p->ignore, "*.key", &e), 0);
	cr_assert_eq(cordon_list_add(&p->ignore, "build", &e), 0);
	cr_assert_eq(cordon_list_add(&p->mask, "d2?/f1?", &e), 0);
	cr_assert_eq(cordon_list_add(&p->mask, "d01/f03", &e), 0);
	return p;
}

static int cmp_ro(const void *a, const void *b)
{
	return strcmp(((const struct sb_hide *)a)->rel, ((const struct sb_hide *)b)->rel);
}

/* a and b (of n entries each) the same, in that order. */
static void expect_same_entries(const struct sb_hide *a, const struct sb_hide *b, size_t n,
				const char *what)
{
	for (size_t i = 0; i < n; i++) {
		cr_assert_str_eq(b[i].rel, a[i].rel, "%s: entry %zu", what, i);
		cr_expect(a[i].dev == b[i].dev && a[i].ino == b[i].ino && a[i].dir == b[i].dir,
			  "%s: %s differs", what, a[i].rel);
	}
}

/* A sorted copy of l's ro list (setid_scan's order depends on its threads). */
static struct sb_hide *sorted_ro(const struct sb_hide_list *l)
{
	struct sb_hide *v = calloc(l->nro + 1, sizeof(*v));

	cr_assert(v);
	memcpy(v, l->ro, l->nro * sizeof(*v));
	qsort(v, l->nro, sizeof(*v), cmp_ro);
	return v;
}

/* Every entry below dir, as a walk counts them. */
static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	cr_assert(d, "opendir %s", dir);
	while ((de = readdir(d))) {
		char p[4096];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		(void)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR)
			n += count_entries(p);
	}
	closedir(d);
	return n;
}

Test(setid, the_hide_walk_finds_what_setid_scan_finds)
{
	char *wd = big_tree();
	struct cordon_profile *p;
	struct sb_hide_list hides = { 0 }, setid = { 0 }, serial = { 0 };
	_cleanup_free_ struct sb_hide *want = NULL;
	cordon_error e = { 0 };
	size_t entries;
	int fd;

	make_privileged_tree(wd);
	p = merged_profile();
	entries = count_entries(wd);
	fd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	/* The two walks as they were. */
	cr_assert_eq(hide_scan_threads(fd, wd, p, 0, 1, &hides, &e), 0, "%s", e.msg);
	cr_assert_eq(setid_scan(fd, &setid, &e), 0, "%s", e.msg);
	cr_assert_eq(setid.nro, ARRAY_SIZE(PRIVILEGED), "setid_scan listed %zu", setid.nro);
	for (size_t i = 0; i < ARRAY_SIZE(PRIVILEGED); i++)
		cr_expect(listed(&setid, PRIVILEGED[i]), "setid_scan missed %s", PRIVILEGED[i]);
	cr_assert_gt(hides.n, 40, "%zu hidden", hides.n);
	want = sorted_ro(&setid);
	/* One walk for both: serially (the reference order), then forced on two threads. */
	cr_assert_eq(hide_scan_threads(fd, wd, p, HIDE_SETID, 1, &serial, &e), 0, "%s", e.msg);
	for (int round = 0; round < 12; round++) {
		struct sb_hide_list got = { 0 };
		_cleanup_free_ struct sb_hide *have = NULL;
		int threads = round == 0 ? 1 : round % 2 ? 2 : 0;
		char what[64];

		(void)snprintf(what, sizeof(what), "round %d, threads %d", round, threads);
		cr_assert_eq(hide_scan_threads(fd, wd, p, HIDE_SETID, threads, &got, &e), 0,
			     "%s: %s", what, e.msg);
		if (threads == 2)
			cr_expect_eq(got.threads, 2, "%s: walked on %u thread(s)", what,
				     got.threads);
		cr_expect(!got.truncated, "%s: bounded", what);
		/* Every entry counts towards the bound, those below hidden directories too. */
		cr_expect_eq(got.visited, entries, "%s: %zu seen of %zu", what, got.visited,
			     entries);
		/* The names hidden and pinned: the hide walk's own, in its order. */
		cr_assert_eq(got.n, hides.n, "%s: %zu hidden, alone %zu", what, got.n, hides.n);
		expect_same_entries(hides.v, got.v, hides.n, what);
		cr_assert_eq(got.npin, hides.npin, "%s: %zu pinned, alone %zu", what, got.npin,
			     hides.npin);
		expect_same_entries(hides.pin, got.pin, hides.npin, what);
		/* The files protected: setid_scan's, and in the serial walk's order every time. */
		cr_assert_eq(got.nro, setid.nro, "%s: %zu listed, setid_scan %zu", what, got.nro,
			     setid.nro);
		expect_same_entries(serial.ro, got.ro, serial.nro, what);
		have = sorted_ro(&got);
		expect_same_entries(want, have, setid.nro, what);
		hide_list_free(&got);
	}
	hide_list_free(&serial);
	hide_list_free(&hides);
	hide_list_free(&setid);
	(void)close(fd);
	cordon_profile_free(p);
	tu_rmtree(wd);
	free(wd);
}

/*
 * HIDE_SETID with a profile that needs no walk (literal masks only): setid_scan's list all
 * the same, found by setid_scan itself.
 */
Test(setid, hide_setid_without_a_walk_is_setid_scan)
{
	char *wd = tu_tmpdir();
	struct cordon_profile *p = NULL;
	struct sb_hide_list got = { 0 };
	cordon_error e = { 0 };
	int fd;

	make_dir(wd, "bin");
	make_file(wd, "bin/su", 04755);
	make_special(wd, "fifo", S_IFIFO);
	cr_assert_eq(cordon_profile_load("default", &p, &e), 0, "%s", e.msg);
	cr_assert(!hide_walks(p), "the default profile walks the workdir");
	fd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(hide_scan_threads(fd, wd, p, HIDE_SETID, 0, &got, &e), 0, "%s", e.msg);
	cr_expect_eq(got.nro, 2, "%zu listed", got.nro);
	cr_expect(listed(&got, "bin/su") && listed(&got, "fifo"));
	hide_list_free(&got);
	(void)close(fd);
	cordon_profile_free(p);
	tu_rmtree(wd);
	free(wd);
}

/* A chain of n directories below wd/top ("top" itself the first). */
static void make_chain(const char *wd, const char *top, int n)
{
	char rel[4096];
	size_t len = (size_t)snprintf(rel, sizeof(rel), "%s", top);

	make_dir(wd, rel);
	for (int i = 1; i < n; i++) {
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/d");
		make_dir(wd, rel);
	}
}

/*
 * One walk refuses what either walk refused, and nothing else: a chain HIDE_MAX_DEPTH levels
 * deep below a directory the walk hides is within setid_scan's bound (and below the hide
 * walk's notice), one level more is past it; a chain HIDE_MAX_DEPTH deep that is not hidden
 * is past the hide walk's bound; and entries below a hidden directory count towards the
 * entry bound, as setid_scan counted them. Nothing is listed when the scan is refused.
 */
Test(setid, the_hide_walk_has_setid_scans_bounds)
{
	static const struct {
		const char *top;
		int levels;
		bool hide_refuses, setid_refuses;
	} cases[] = {
		{ "build", HIDE_MAX_DEPTH, false, false },
		{ "build", HIDE_MAX_DEPTH + 1, false, true },
		{ "plain", HIDE_MAX_DEPTH, true, false },
	};
	struct cordon_profile *p = merged_profile();

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *wd = tu_tmpdir();
		struct sb_hide_list got = { 0 };
		bool refused = cases[i].hide_refuses || cases[i].setid_refuses;
		cordon_error e = { 0 };
		int fd, r;

		make_chain(wd, cases[i].top, cases[i].levels);
		make_file(wd, "su", 04755);
		fd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(fd, 0);
		/* The two walks alone, to show what each one refuses. */
		r = hide_scan(fd, wd, p, 0, &got, &e);
		cr_expect_eq(r < 0, cases[i].hide_refuses, "case %zu: hide_scan %d: %s", i, r,
			     e.msg);
		hide_list_free(&got);
		r = setid_scan(fd, &got, &e);
		cr_expect_eq(r < 0, cases[i].setid_refuses, "case %zu: setid_scan %d: %s", i, r,
			     e.msg);
		hide_list_free(&got);
		for (int threads = 1; threads <= 2; threads++) {
			e = (cordon_error){ 0 };
			r = hide_scan_threads(fd, wd, p, HIDE_SETID, threads, &got, &e);
			cr_assert_eq(r, 0, "case %zu: %s", i, e.msg);
			cr_expect_eq(got.truncated, refused, "case %zu, threads %d", i, threads);
			hide_list_free(&got);
		}
		r = hide_scan(fd, wd, p, HIDE_SETID, &got, &e);
		cr_expect_eq(r < 0, refused, "case %zu: %d: %s", i, r, e.msg);
		if (refused)
			cr_expect(strstr(e.msg, "too big") && strstr(e.msg, "setuid"), "%s", e.msg);
		else
			cr_expect_eq(got.nro, 1, "case %zu: %zu listed", i, got.nro);
		hide_list_free(&got);
		(void)close(fd);
		tu_rmtree(wd);
		free(wd);
	}
	/* The entry bound: 300 entries, 200 of them below a hidden directory. */
	{
		char *wd = tu_tmpdir(), rel[64];
		struct sb_hide_list got = { 0 };
		cordon_error e = { 0 };
		int fd, r;

		make_dir(wd, "build");
		for (int i = 0; i < 300; i++) {
			(void)snprintf(rel, sizeof(rel), i < 200 ? "build/f%03d" : "f%03d", i);
			make_file(wd, rel, 0644);
		}
		fd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(fd, 0);
		hide_test_max_entries = 250;
		r = hide_scan(fd, wd, p, 0, &got, &e);
		cr_expect_eq(r, 0, "the hide walk alone: %s", e.msg);
		hide_list_free(&got);
		r = hide_scan(fd, wd, p, HIDE_SETID, &got, &e);
		hide_test_max_entries = 0;
		cr_expect_eq(r, -1, "entries below a hidden directory were not counted");
		cr_expect_eq(got.nro, 0);
		(void)close(fd);
		tu_rmtree(wd);
		free(wd);
	}
	cordon_profile_free(p);
}
