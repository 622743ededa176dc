/* SPDX-License-Identifier: MIT */
/*
 * backends/local/setid.c: the walk that finds the privileged programs of an idmapped workdir
 * (setuid, setgid, file capabilities) and its device nodes, sockets and FIFOs, every name of
 * them at any depth, and nothing else; and
 * that refuses a workdir past its bounds rather than return part of the list.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "backends/local/setid.h"
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
	/* struct vfs_cap_data, revision 2, effective: cap_net_raw permitted */
	static const uint32_t caps[5] = { 0x02000001, 1u << 13, 0, 0, 0 };
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
	make_file(wd, "usr/bin/ping", 0755);
	make_file(wd, "usr/bin/ls", 0755);
	make_file(wd, "plain", 0644);
	(void)snprintf(p, sizeof(p), "%s/usr/bin/ping", wd);
	if (setxattr(p, "security.capability", caps, sizeof(caps), 0) < 0)
		cr_skip_test("setxattr security.capability: %s (needs root)", strerror(errno));
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
