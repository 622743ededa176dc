/* SPDX-License-Identifier: MIT */
/*
 * backends/local/hide.c: the walk that finds what ignore patterns and masks hide. It matches
 * every pattern at once (policy/pyglobset.c, a sorted list for plain patterns); the
 * reference is the rule one pattern at a time: hide_match_ignore() for each ignore pattern
 * and pyfnmatch(rel, mask) for each glob mask, applied top down (a hidden directory is not
 * walked into). Both must hide exactly the same names in the same tree.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "backends/local/sandbox.h"
#include "policy/internal.h"
#include "runtime/cleanup.h"
#include "tests/lib/testutil.h"

/* Names the tree is made of and the patterns are made from: dots, dashes, a non-ASCII name. */
static const char *const NAMES[] = { "a",	    ".env",  "b.key",	"secret.txt",
				     "src",	    "build", "x-1.log", "\303\251t\303\251",
				     "node_modules" };

static void make_tree(const char *dir, int depth, uint64_t *x)
{
	for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++) {
		char p[4096];

		*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
		if ((*x >> 33) % 3 == 0)
			continue;
		(void)snprintf(p, sizeof(p), "%s/%s", dir, NAMES[i]);
		if (depth < 3 && (*x >> 40) % 2 == 0) {
			cr_assert_eq(mkdir(p, 0755), 0, "mkdir %s", p);
			make_tree(p, depth + 1, x);
		} else {
			int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

			cr_assert_geq(fd, 0, "create %s", p);
			(void)close(fd);
		}
	}
}

static bool ref_hidden(const struct cordon_profile *p, const char *rel, const char *name)
{
	cordon_error e;

	for (size_t i = 0; i < p->ignore.n; i++) {
		int r = hide_match_ignore(p->ignore.v[i], rel, name, &e);

		cr_assert_geq(r, 0);
		if (r)
			return true;
	}
	for (size_t i = 0; i < p->mask.n; i++)
		if (strpbrk(p->mask.v[i], "*?[") && pyfnmatch(rel, p->mask.v[i], &e) > 0)
			return true;
	return false;
}

/* root/rel ("" for root itself), open for readdir. */
static DIR *opendir_rel(const char *root, const char *rel)
{
	char path[4096];
	DIR *d;

	(void)snprintf(path, sizeof(path), "%s%s%s", root, *rel ? "/" : "", rel);
	d = opendir(path);
	cr_assert(d, "opendir %s", path);
	return d;
}

/* The reference walk: every hidden rel, in a newline-separated sorted list. */
static void ref_walk(const struct cordon_profile *p, const char *root, const char *rel, char ***v,
		     size_t *n)
{
	DIR *d = opendir_rel(root, rel);
	struct dirent *de;

	while ((de = readdir(d))) {
		char r[4096];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		(void)snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (ref_hidden(p, r, de->d_name)) {
			*v = reallocarray(*v, *n + 1, sizeof(**v));
			(*v)[(*n)++] = strdup(r);
		} else if (de->d_type == DT_DIR) {
			ref_walk(p, root, r, v, n);
		}
	}
	closedir(d);
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add(struct cordon_list *l, const char *s)
{
	cordon_error e;

	cr_assert_eq(cordon_list_add(l, s, &e), 0);
}

static void check_same(struct cordon_profile *p, const char *wd)
{
	_cleanup_close_ int fd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct sb_hide_list got = { 0 };
	char **want = NULL, **have;
	size_t nwant = 0;
	cordon_error e;

	cr_assert_eq(hide_scan(fd, wd, p, 0, &got, &e), 0, "hide_scan: %s", e.msg);
	ref_walk(p, wd, "", &want, &nwant);
	have = calloc(got.n + 1, sizeof(*have));
	for (size_t i = 0; i < got.n; i++)
		have[i] = got.v[i].rel;
	qsort(want, nwant, sizeof(*want), cmp);
	qsort(have, got.n, sizeof(*have), cmp);
	cr_expect_eq(got.n, nwant, "hidden: %zu by the walk, %zu by the reference", got.n, nwant);
	for (size_t i = 0; i < got.n && i < nwant; i++)
		cr_expect_str_eq(have[i], want[i], "entry %zu", i);
	for (size_t i = 0; i < nwant; i++)
		free(want[i]);
	free(want);
	free(have);
	hide_list_free(&got);
}

Test(hide, many_patterns_hide_what_each_pattern_would)
{
	static const char *const ignores[] = {
		"*.key",   "**/build", "secret*",  "src/*.log", ".env",		"a/src",
		"[!a]",	   "*/a/*",    "x-?.log",  "\303\251*", "nothing-here", "node_modules",
		"*.nope1", "*.nope2",  "**/*.txt", "a",
	};
	char *wd = tu_tmpdir();
	uint64_t x = 42;

	make_tree(wd, 0, &x);
	/* Each prefix of the pattern list, so patterns are tested alone and together. */
	for (size_t k = 1; k <= sizeof(ignores) / sizeof(ignores[0]); k++) {
		struct cordon_profile *p = NULL;
		cordon_error e;

		cr_assert_eq(cordon_profile_load("default", &p, &e), 0, "%s", e.msg);
		cordon_list_free(&p->mask);
		for (size_t i = 0; i < k; i++)
			add(&p->ignore, ignores[k - 1 - i]);
		add(&p->mask, "src/*/b.key");
		add(&p->mask, "*/\303\251t\303\251");
		check_same(p, wd);
		cordon_profile_free(p);
	}
	tu_rmtree(wd);
	free(wd);
}

/*
 * The placeholders of absent literal masks (hide.c: placeholder), parent side: what a scan
 * makes in the workdir, what a concurrent scan takes over, and what removal leaves.
 */
static struct cordon_profile *mask_profile(const char *const *masks, size_t n)
{
	struct cordon_profile *p = NULL;
	cordon_error e;

	cr_assert_eq(cordon_profile_load("default", &p, &e), 0, "%s", e.msg);
	cordon_list_free(&p->mask);
	cordon_list_free(&p->ignore);
	for (size_t i = 0; i < n; i++)
		add(&p->mask, masks[i]);
	return p;
}

static void scan(int fd, const char *wd, const struct cordon_profile *p, struct sb_hide_list *l)
{
	cordon_error e;

	*l = (struct sb_hide_list){ 0 };
	cr_assert_eq(hide_scan(fd, wd, p, HIDE_PLACEHOLDERS, l, &e), 0, "hide_scan: %s", e.msg);
}

/* What the run does once its sandbox is gone. */
static void drop(int fd, struct sb_hide_list *l)
{
	hide_placeholders_remove(fd, l->ph, l->nph);
	l->ph = NULL;
	l->nph = 0;
	hide_list_free(l);
}

static bool exists_at(const char *wd, const char *rel, struct stat *st)
{
	char p[4096];
	struct stat ignored;

	(void)snprintf(p, sizeof(p), "%s/%s", wd, rel);
	return lstat(p, st ? st : &ignored) == 0;
}

static const char *const ABSENT[] = { ".bashrc", ".vscode", ".mcp.json", ".git/hooks",
				      ".git/config" };
#define NABSENT (sizeof(ABSENT) / sizeof(ABSENT[0]))

/*
 * Every absent name a scan makes is a hard link of one inode (one inode allocation per run,
 * not one per name), empty, read-only and marked, hidden by the scan, and held: each name
 * appears complete. Removal leaves nothing behind, not even an unnamed file.
 */
/*
 * The depth bound prunes: a directory too deep is not walked into, and the walk goes on
 * elsewhere. Ten chains deeper than the bound and ten matching files beside them, in
 * whatever order the file system lists them: every file is hidden, and the scan says it was
 * bounded. (A walk that stopped at its first chain too deep would miss some.)
 */
/*
 * A matching name the walk cannot stat (an I/O error, memory: anything but its removal or a
 * directory it may not search) fails the scan: it was passed by unhidden (red team). The
 * failure: EIO from a seccomp filter in a child for every fstatat that does not follow
 * symlinks, the walk's stat of an entry.
 */
Test(hide, a_match_that_cannot_be_stated_fails_the_scan)
{
	struct cordon_profile *p = NULL;
	char *wd = tu_tmpdir();
	cordon_error e;
	pid_t pid;
	int fd, status;

	tu_write_file(wd, "server.pem", "");
	cr_assert_eq(cordon_profile_load("default", &p, &e), 0, "%s", e.msg);
	cordon_list_free(&p->mask);
	add(&p->ignore, "*.pem");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sb_hide_list got = { 0 };

		fd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || !tu_fail_nofollow_stats(EIO))
			_exit(3);
		if (hide_scan(fd, wd, p, 0, &got, &e) == 0)
			_exit(got.n ? 2 : 1); /* 1: passed by, unhidden */
		_exit(strstr(e.msg, "stat") ? 0 : 2);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 3, "no seccomp filter (%d)", status);
	cr_expect_eq(WEXITSTATUS(status), 0, "a scan whose stat of a match failed %s",
		     WEXITSTATUS(status) == 1 ? "left it unhidden" : "said another thing");
	cordon_profile_free(p);
	tu_rmtree(wd);
	free(wd);
}

Test(hide, too_deep_is_pruned_not_the_end_of_the_walk)
{
	struct cordon_profile *p = NULL;
	char *wd = tu_tmpdir(), path[4096];
	cordon_error e;
	int fd;

	for (int i = 0; i < 10; i++) {
		int n = snprintf(path, sizeof(path), "%s/chain%d", wd, i);

		for (int d = 0; d < HIDE_MAX_DEPTH + 4; d++) {
			cr_assert_eq(mkdir(path, 0755), 0, "%s", path);
			n += snprintf(path + n, sizeof(path) - (size_t)n, "/d");
		}
		snprintf(path, sizeof(path), "%s/dir%d", wd, i);
		cr_assert_eq(mkdir(path, 0755), 0);
		snprintf(path, sizeof(path), "%s/dir%d/secret%d.pem", wd, i, i);
		fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		cr_assert_geq(fd, 0);
		close(fd);
	}
	cr_assert_eq(cordon_profile_load("default", &p, &e), 0, "%s", e.msg);
	cordon_list_free(&p->mask);
	add(&p->ignore, "*.pem");
	fd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* hide_scan's own choice, the serial walk, and the top level shared by two threads. */
	for (int threads = 0; threads <= 2; threads++) {
		struct sb_hide_list got = { 0 };

		cr_assert_eq(hide_scan_threads(fd, wd, p, 0, threads, &got, &e), 0, "hide_scan: %s",
			     e.msg);
		cr_expect_eq(got.threads, threads == 2 ? 2 : 1, "threads %d: walked on %u", threads,
			     got.threads);
		cr_expect(got.truncated,
			  "threads %d: the chains deeper than the bound were not "
			  "noticed",
			  threads);
		cr_expect_eq(got.n, 10, "threads %d: %zu of the 10 files hidden", threads, got.n);
		hide_list_free(&got);
	}
	close(fd);
	cordon_profile_free(p);
	tu_rmtree(wd);
	free(wd);
}

Test(hide, absent_masks_share_one_placeholder_inode)
{
	struct cordon_profile *p = mask_profile(ABSENT, NABSENT);
	char *wd = tu_tmpdir(), git[4096], mark[4];
	_cleanup_close_ int fd = -1;
	struct sb_hide_list l;
	struct stat first, st;

	(void)snprintf(git, sizeof(git), "%s/.git", wd);
	cr_assert_eq(mkdir(git, 0755), 0);
	fd = open(wd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	scan(fd, wd, p, &l);
	cr_assert_eq(l.nph, NABSENT, "placeholders: %zu", l.nph);
	cr_expect_eq(l.n, NABSENT, "hidden: %zu", l.n);
	cr_assert(exists_at(wd, ABSENT[0], &first));
	for (size_t i = 0; i < NABSENT; i++) {
		char path[4096];

		cr_assert(exists_at(wd, ABSENT[i], &st), "%s was not made", ABSENT[i]);
		cr_expect(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0444 && st.st_size == 0,
			  "%s: mode %o size %lld", ABSENT[i], st.st_mode, (long long)st.st_size);
		cr_expect(st.st_dev == first.st_dev && st.st_ino == first.st_ino,
			  "%s is an inode of its own", ABSENT[i]);
		(void)snprintf(path, sizeof(path), "%s/%s", wd, ABSENT[i]);
		cr_expect_eq(lgetxattr(path, "user.cordon.placeholder", mark, sizeof(mark)), 1,
			     "%s is not marked", ABSENT[i]);
	}
	cr_expect_eq(first.st_nlink, NABSENT, "links: %ju", (uintmax_t)first.st_nlink);
	drop(fd, &l);
	for (size_t i = 0; i < NABSENT; i++)
		cr_expect(!exists_at(wd, ABSENT[i], NULL), "%s left after the run", ABSENT[i]);
	cr_expect(exists_at(wd, ".git", &st) && S_ISDIR(st.st_mode), ".git was touched");
	cordon_profile_free(p);
	tu_rmtree(wd);
	free(wd);
}

/*
 * A second scan in the workdir takes the first's placeholders over (masks them as found,
 * holds them): the first's removal then leaves them, the second's removes them. Taking them
 * over walks nothing: a placeholder's other names are placeholders, not hard links to a
 * secret (hide_one's second pass is for those).
 */
Test(hide, concurrent_scan_takes_over_and_last_removes)
{
	struct cordon_profile *p = mask_profile(ABSENT, 3);
	char *wd = tu_tmpdir();
	_cleanup_close_ int fd = -1;
	struct sb_hide_list a, b;
	struct stat st;

	fd = open(wd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	scan(fd, wd, p, &a);
	cr_assert_eq(a.nph, 3);
	scan(fd, wd, p, &b);
	cr_expect_eq(b.nph, 3, "the second scan holds %zu names", b.nph);
	cr_expect_eq(b.n, 3, "the second scan hides %zu names", b.n);
	cr_expect_eq(b.visited, 0, "taking placeholders over walked %zu entries", b.visited);
	for (size_t i = 0; i < b.nph; i++)
		cr_expect(b.ph[i].dev == a.ph[0].dev && b.ph[i].ino == a.ph[0].ino,
			  "%s: the second scan made its own", b.ph[i].rel);
	drop(fd, &a);
	for (size_t i = 0; i < 3; i++)
		cr_expect(exists_at(wd, ABSENT[i], &st), "%s removed while another run masks it",
			  ABSENT[i]);
	drop(fd, &b);
	for (size_t i = 0; i < 3; i++)
		cr_expect(!exists_at(wd, ABSENT[i], NULL), "%s left after both runs", ABSENT[i]);
	cordon_profile_free(p);
	tu_rmtree(wd);
	free(wd);
}

/*
 * A run that masks fewer names, ending last, removes its own; the names only the first run
 * masked stay until the next run that masks them, which takes them over and removes them
 * (as it does after a cordon that was SIGKILLed: its lock is gone with it).
 */
Test(hide, leftover_placeholders_removed_by_the_next_run)
{
	struct cordon_profile *all = mask_profile(ABSENT, 3), *one = mask_profile(ABSENT, 1);
	char *wd = tu_tmpdir();
	_cleanup_close_ int fd = -1;
	struct sb_hide_list a, b, c;

	fd = open(wd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	scan(fd, wd, all, &a);
	scan(fd, wd, one, &b);
	cr_assert_eq(b.nph, 1);
	drop(fd, &a);
	drop(fd, &b);
	cr_expect(!exists_at(wd, ABSENT[0], NULL), "%s left", ABSENT[0]);
	cr_expect(exists_at(wd, ABSENT[1], NULL), "%s: removed by a run that does not mask it",
		  ABSENT[1]);
	/* A killed cordon: its fds, and with them its lock, are gone; its names are not. */
	scan(fd, wd, all, &a);
	hide_list_free(&a);
	scan(fd, wd, all, &c);
	cr_expect_eq(c.nph, 3, "the next run holds %zu names", c.nph);
	drop(fd, &c);
	for (size_t i = 0; i < 3; i++)
		cr_expect(!exists_at(wd, ABSENT[i], NULL), "%s left after the next run", ABSENT[i]);
	cordon_profile_free(all);
	cordon_profile_free(one);
	tu_rmtree(wd);
	free(wd);
}

/*
 * The walk on two threads (hide.c: walk_shared) against the serial walk: the same list, in
 * the same order (the mounts are made in it), with the same bounds. The tree has forty
 * top-level directories (so that the second thread takes some), matches at the top level and
 * in many of them, a matching directory hidden whole, a hidden file with hard links in
 * another subdirectory and at the top level (the second pass), a hidden symlink whose target
 * is in another subdirectory, and a chain deeper than the depth bound.
 */
static void touch(const char *wd, const char *rel)
{
	char p[4096];
	int fd;

	(void)snprintf(p, sizeof(p), "%s/%s", wd, rel);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "create %s", p);
	(void)close(fd);
}

static void mkdirs(const char *wd, const char *rel)
{
	char p[4096];

	(void)snprintf(p, sizeof(p), "%s/%s", wd, rel);
	cr_assert_eq(mkdir(p, 0755), 0, "mkdir %s", p);
}

static void make_wide_tree(const char *wd)
{
	char rel[256], to[256], p[4096], chain[512] = "d07";

	for (int d = 0; d < 40; d++) {
		(void)snprintf(rel, sizeof(rel), "d%02d", d);
		mkdirs(wd, rel);
		(void)snprintf(rel, sizeof(rel), "d%02d/sub", d);
		mkdirs(wd, rel);
		for (int f = 0; f < 30; f++) {
			(void)snprintf(rel, sizeof(rel), "d%02d/f%02d.txt", d, f);
			touch(wd, rel);
			(void)snprintf(rel, sizeof(rel), "d%02d/sub/g%02d.c", d, f);
			touch(wd, rel);
		}
		if (d % 3 == 0) {
			(void)snprintf(rel, sizeof(rel), "d%02d/sub/id%02d.key", d, d);
			touch(wd, rel);
		}
		if (d % 5 == 1) {
			(void)snprintf(rel, sizeof(rel), "d%02d/build", d);
			mkdirs(wd, rel);
			(void)snprintf(rel, sizeof(rel), "d%02d/build/out.o", d);
			touch(wd, rel);
		}
	}
	touch(wd, "top.key");
	touch(wd, "secret-top.txt");
	mkdirs(wd, "build");
	touch(wd, "build/x.o");
	/* d03/sub/secret.pem, hidden, has two more names that no pattern matches. */
	touch(wd, "d03/sub/secret.pem");
	(void)snprintf(p, sizeof(p), "%s/d03/sub/secret.pem", wd);
	(void)snprintf(to, sizeof(to), "%s/d31/sub/notes.txt", wd);
	cr_assert_eq(link(p, to), 0);
	(void)snprintf(to, sizeof(to), "%s/zz-copy.txt", wd);
	cr_assert_eq(link(p, to), 0);
	/* alias.key -> top.key: top.key is hidden twice over (a match, a symlink's target). */
	(void)snprintf(p, sizeof(p), "%s/alias.key", wd);
	cr_assert_eq(symlink("top.key", p), 0);
	/* d09/sub/a.key and d27/b.key: two hidden names of one inode, with a third one. */
	touch(wd, "d09/sub/a.key");
	(void)snprintf(p, sizeof(p), "%s/d09/sub/a.key", wd);
	(void)snprintf(to, sizeof(to), "%s/d27/b.key", wd);
	cr_assert_eq(link(p, to), 0);
	(void)snprintf(to, sizeof(to), "%s/d33/third.txt", wd);
	cr_assert_eq(link(p, to), 0);
	/* d12/token.key -> ../d25/f00.txt: both hidden. */
	(void)snprintf(p, sizeof(p), "%s/d12/token.key", wd);
	cr_assert_eq(symlink("../d25/f00.txt", p), 0);
	for (int i = 0; i < HIDE_MAX_DEPTH + 2; i++) {
		strcat(chain, "/c");
		mkdirs(wd, chain);
	}
	strcat(chain, "/deep.key");
	touch(wd, chain);
}

static void expect_same_list(const struct sb_hide_list *a, const struct sb_hide_list *b,
			     const char *what)
{
	cr_expect_eq(a->truncated, b->truncated, "%s: truncated %d, serially %d", what,
		     b->truncated, a->truncated);
	cr_expect_eq(a->visited, b->visited, "%s: %zu seen, serially %zu", what, b->visited,
		     a->visited);
	cr_assert_eq(a->n, b->n, "%s: %zu hidden, serially %zu", what, b->n, a->n);
	for (size_t i = 0; i < a->n; i++) {
		cr_assert_str_eq(b->v[i].rel, a->v[i].rel, "%s: entry %zu", what, i);
		cr_expect(b->v[i].dev == a->v[i].dev && b->v[i].ino == a->v[i].ino &&
				  b->v[i].dir == a->v[i].dir,
			  "%s: entry %zu (%s) differs", what, i, a->v[i].rel);
	}
}

static struct cordon_profile *wide_profile(void)
{
	static const char *const ignores[] = { "*.key", "**/build", "secret*", "*.pem" };
	struct cordon_profile *p = NULL;
	cordon_error e;

	cr_assert_eq(cordon_profile_load("default", &p, &e), 0, "%s", e.msg);
	cordon_list_free(&p->mask);
	cordon_list_free(&p->ignore);
	for (size_t i = 0; i < ARRAY_SIZE(ignores); i++)
		add(&p->ignore, ignores[i]);
	add(&p->mask, "d1*/sub/g07.c");
	add(&p->mask, "d20/f05.txt");
	return p;
}

/*
 * The fixture of the tests of the walk's threads: the profile above, a fresh workdir and an
 * fd of it (the tests fill the workdir after it is opened: the walk reads it at scan time).
 */
static struct cordon_profile *p;
static char *wd;
static int fd = -1;

static void wide_setup(void)
{
	p = wide_profile();
	wd = tu_tmpdir();
	fd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s", wd);
}

static void wide_teardown(void)
{
	closep(&fd);
	cordon_profile_free(p);
	tu_rmtree(wd);
	free(wd);
}

Test(hide, shared_walk_is_the_serial_walk, .init = wide_setup, .fini = wide_teardown)
{
	struct sb_hide_list serial = { 0 };
	cordon_error e;
	cpu_set_t cpus;
	bool linked = false;

	make_wide_tree(wd);
	cr_assert_eq(hide_scan_threads(fd, wd, p, 0, 1, &serial, &e), 0, "%s", e.msg);
	cr_assert_eq(serial.threads, 1);
	cr_assert(serial.truncated, "the chain deeper than the bound was not noticed");
	cr_assert_gt(serial.n, 25, "only %zu hidden", serial.n);
	for (size_t i = 0; i < serial.n; i++)
		linked = linked || strcmp(serial.v[i].rel, "d31/sub/notes.txt") == 0;
	cr_assert(linked, "the other names of a hidden file were not hidden");
	/* Each name once, however many ways it is hidden. */
	for (size_t i = 0; i < serial.n; i++)
		for (size_t j = i + 1; j < serial.n; j++)
			cr_assert_str_neq(serial.v[i].rel, serial.v[j].rel, "hidden twice");
	linked = false;
	for (size_t i = 0; i < serial.n; i++)
		linked = linked || strcmp(serial.v[i].rel, "d33/third.txt") == 0;
	cr_assert(linked, "the third name of an inode hidden under two was not hidden");
	cr_assert_eq(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	/*
	 * Forced (2) and hide_scan's own choice (0: the tree is big enough, if there are two
	 * CPUs to run on), many times over: which thread takes which directory changes from
	 * run to run.
	 */
	for (int round = 0; round < 20; round++) {
		struct sb_hide_list got = { 0 };
		int threads = round % 2 ? 0 : 2;
		char what[64];

		(void)snprintf(what, sizeof(what), "round %d, threads %d", round, threads);
		cr_assert_eq(hide_scan_threads(fd, wd, p, 0, threads, &got, &e), 0, "%s", e.msg);
		/* Forced, the second thread takes a directory at least; on its own, maybe none. */
		if (threads == 2)
			cr_expect_eq(got.threads, 2, "%s: walked on %u thread(s)", what,
				     got.threads);
		else
			cr_expect(got.threads == 1 || CPU_COUNT(&cpus) > 1, "%s", what);
		expect_same_list(&serial, &got, what);
		hide_list_free(&got);
	}
	hide_list_free(&serial);
}

/* A few top-level directories and little in them: hide_scan walks it on one thread. */
Test(hide, small_tree_is_walked_on_one_thread, .init = wide_setup, .fini = wide_teardown)
{
	struct sb_hide_list got = { 0 };
	cordon_error e;

	mkdirs(wd, "a");
	mkdirs(wd, "b");
	mkdirs(wd, "c");
	touch(wd, "b/x.key");
	cr_assert_eq(hide_scan(fd, wd, p, 0, &got, &e), 0, "%s", e.msg);
	cr_expect_eq(got.threads, 1, "walked on %u threads", got.threads);
	cr_expect_eq(got.n, 1);
	hide_list_free(&got);
}

/*
 * Every directory on the way to a hidden name is pinned (the command cannot rename it away),
 * parents first, each once; a name below a hidden directory is dropped (the directory's
 * cover hides it; re-resolving it through that cover would find nothing and fail the run).
 */
Test(hide, parents_of_hidden_names_are_pinned, .init = wide_setup, .fini = wide_teardown)
{
	static const char *const want_hidden[] = { "a/b/c/k.key", "config/server.pem", "link.pem",
						   "secrets", "top.pem" };
	static const char *const want_pins[] = { "a", "a/b", "a/b/c", "config" };
	struct sb_hide_list got = { 0 };
	char path[4096];
	cordon_error e;

	mkdirs(wd, "config");
	touch(wd, "config/server.pem");
	mkdirs(wd, "a");
	mkdirs(wd, "a/b");
	mkdirs(wd, "a/b/c");
	touch(wd, "a/b/c/k.key");
	touch(wd, "a/b/plain.txt");
	mkdirs(wd, "secrets");
	touch(wd, "secrets/real.txt");
	touch(wd, "top.pem");
	(void)snprintf(path, sizeof(path), "%s/link.pem", wd);
	cr_assert_eq(symlink("secrets/real.txt", path), 0);
	cr_assert_eq(hide_scan(fd, wd, p, 0, &got, &e), 0, "%s", e.msg);
	cr_expect_eq(got.n, ARRAY_SIZE(want_hidden), "%zu hidden", got.n);
	for (size_t i = 0; i < ARRAY_SIZE(want_hidden); i++) {
		bool in = false;

		for (size_t j = 0; j < got.n; j++)
			in = in || strcmp(got.v[j].rel, want_hidden[i]) == 0;
		cr_expect(in, "%s is not hidden", want_hidden[i]);
	}
	for (size_t j = 0; j < got.n; j++)
		cr_expect_neq(strcmp(got.v[j].rel, "secrets/real.txt"), 0,
			      "a name below a hidden directory is in the list");
	cr_assert_eq(got.npin, ARRAY_SIZE(want_pins), "%zu pinned", got.npin);
	for (size_t i = 0; i < got.npin; i++)
		cr_expect_str_eq(got.pin[i].rel, want_pins[i], "pin %zu", i);
	hide_list_free(&got);
}

/*
 * An ignore pattern written as a path (`secrets/`, `./secrets`, `/secrets`, `secrets//`,
 * `secrets/.`, the workdir's absolute path before it, `./keys/` and a glob) hides what its plain
 * form does: under AG2's rule as written it matched nothing, and nothing said so.
 */
Test(hide, ignore_patterns_written_as_paths, .init = wide_setup, .fini = wide_teardown)
{
	char abs[4200];
	const char *const pats[] = { "secrets/",  "./secrets", "/secrets",    "secrets//",
				     "secrets/.", abs,	       "./keys/*.key" };
	const char *const want[] = { "secrets", "secrets", "secrets",	"secrets",
				     "secrets", "secrets", "keys/b.key" };
	cordon_error e;

	(void)snprintf(abs, sizeof(abs), "%s/secrets", wd);
	mkdirs(wd, "secrets");
	touch(wd, "secrets/a");
	mkdirs(wd, "keys");
	touch(wd, "keys/b.key");
	cordon_list_free(&p->mask);
	for (size_t i = 0; i < ARRAY_SIZE(pats); i++) {
		struct sb_hide_list got = { 0 };

		cordon_list_free(&p->ignore);
		add(&p->ignore, pats[i]);
		cr_assert_eq(hide_scan(fd, wd, p, 0, &got, &e), 0, "%s", e.msg);
		cr_expect(got.n == 1 && strcmp(got.v[0].rel, want[i]) == 0,
			  "'%s': %zu hidden, the first '%s'", pats[i], got.n,
			  got.n ? got.v[0].rel : "");
		hide_list_free(&got);
	}
}

/*
 * A workdir past the walk's bounds is refused, not run with names left visible (the command
 * can put its workdir there: a million empty files, a deep chain), and the placeholders the
 * scan made are gone with the refusal.
 */
Test(hide, past_the_bound_is_refused, .init = wide_setup, .fini = wide_teardown)
{
	struct sb_hide_list got = { 0 };
	char rel[64], path[4096];
	cordon_error e;

	add(&p->mask, ".bashrc");
	for (int i = 0; i < 50; i++) {
		(void)snprintf(rel, sizeof(rel), "f%02d.txt", i);
		touch(wd, rel);
	}
	touch(wd, "z.pem");
	(void)snprintf(path, sizeof(path), "%s/.bashrc", wd);
	hide_test_max_entries = 20;
	cr_expect_eq(hide_scan(fd, wd, p, HIDE_PLACEHOLDERS, &got, &e), -1,
		     "a bounded walk was accepted");
	hide_test_max_entries = 0;
	cr_expect(strstr(e.msg, "too big"), "%s", e.msg);
	cr_expect_eq(got.n, 0);
	cr_expect_eq(access(path, F_OK), -1, "the refused scan left its placeholder");
	/* Within the bound, the same workdir is scanned (and the placeholder made). */
	cr_assert_eq(hide_scan(fd, wd, p, HIDE_PLACEHOLDERS, &got, &e), 0, "%s", e.msg);
	cr_expect(!got.truncated);
	cr_expect_eq(access(path, F_OK), 0, "no placeholder made");
	hide_placeholders_remove(fd, got.ph, got.nph);
	got.ph = NULL;
	got.nph = 0;
	hide_list_free(&got);
}

static size_t count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	size_t n = 0;

	cr_assert(d, "opendir %s", path);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * The second thread fails (as ENOMEM would make it): the scan fails with its error, the
 * thread is gone, no fd is left open, and the placeholders the scan made are removed.
 */
Test(hide, a_failing_second_thread_fails_the_scan_and_leaks_nothing, .init = wide_setup,
     .fini = wide_teardown)
{
	struct sb_hide_list got = { 0 };
	size_t fds, tasks, entries;
	cordon_error e;

	make_wide_tree(wd);
	add(&p->mask, ".absent-mask");
	entries = count_dir(wd);
	fds = count_dir("/proc/self/fd");
	tasks = count_dir("/proc/self/task");
	hide_test_worker_fails = true;
	cr_expect_eq(hide_scan_threads(fd, wd, p, HIDE_PLACEHOLDERS, 2, &got, &e), -1);
	hide_test_worker_fails = false;
	cr_expect_eq(e.code, ENOMEM, "error %d: %s", e.code, e.msg);
	cr_expect_eq(count_dir("/proc/self/fd"), fds, "an fd was left open");
	cr_expect_eq(count_dir("/proc/self/task"), tasks, "a thread was left");
	cr_expect_eq(count_dir(wd), entries, "a placeholder was left in the workdir");
	cr_expect_eq(got.n, 0);
	/* And the next scan works. */
	cr_assert_eq(hide_scan_threads(fd, wd, p, 0, 2, &got, &e), 0, "%s", e.msg);
	cr_expect_eq(got.threads, 2);
	hide_list_free(&got);
}

static size_t vm_size(void)
{
	char line[256];
	size_t kb = 0;
	FILE *f = fopen("/proc/self/status", "re");

	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %zu kB", &kb) == 1)
			break;
	fclose(f);
	cr_assert_gt(kb, 0);
	return kb * 1024;
}

/*
 * No second thread (pthread_create fails: here its stack does not fit under RLIMIT_AS): the
 * calling thread walks everything, silently, with the serial walk's result.
 */
Test(hide, no_second_thread_falls_back_to_one, .init = wide_setup, .fini = wide_teardown)
{
	struct sb_hide_list serial = { 0 }, got = { 0 };
	pthread_attr_t attr;
	struct rlimit old, lim;
	int r;
	cordon_error e;

	make_wide_tree(wd);
	cr_assert_eq(hide_scan_threads(fd, wd, p, 0, 1, &serial, &e), 0, "%s", e.msg);
	/* Every new thread's stack: 64 MiB, of which the limit leaves 16 MiB. */
	cr_assert_eq(pthread_attr_init(&attr), 0);
	cr_assert_eq(pthread_attr_setstacksize(&attr, 64 << 20), 0);
	cr_assert_eq(pthread_setattr_default_np(&attr), 0);
	cr_assert_eq(getrlimit(RLIMIT_AS, &old), 0);
	lim = old;
	lim.rlim_cur = vm_size() + (16 << 20);
	cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
	r = hide_scan_threads(fd, wd, p, 0, 2, &got, &e);
	cr_assert_eq(setrlimit(RLIMIT_AS, &old), 0);
	cr_assert_eq(r, 0, "%s", e.msg);
	cr_expect_eq(got.threads, 1, "a thread was made under the limit");
	expect_same_list(&serial, &got, "no thread");
	hide_list_free(&got);
	hide_list_free(&serial);
}

/*
 * The entry bound covers exactly the first entries in walk order (getdents order, each
 * directory's subtree right after its name), whichever way the walk runs: here a bound of N
 * must hide exactly the *.key files among the first N entries, as a plain readdir walk in
 * the same order counts them. The tree has files after each subdirectory, in the same
 * directory read, so a walk that charged a whole directory read to the bound before going
 * into its subdirectories (and so never looked at the rest of it) hides fewer.
 */
struct bound_ref {
	char rel[64][512];
	size_t n, seen, max;
};

static void bound_walk(const char *rel, struct bound_ref *ref)
{
	DIR *d = opendir_rel(wd, rel);
	struct dirent *de;

	while ((de = readdir(d)) && ref->seen <= ref->max) {
		char sub[512];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++ref->seen > ref->max)
			break;
		cr_assert_lt(strlen(rel) + strlen(de->d_name) + 2, sizeof(ref->rel[0]));
		(void)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (de->d_type == DT_DIR)
			bound_walk(sub, ref);
		else if (strstr(de->d_name, ".key") && ref->n < 64)
			(void)snprintf(ref->rel[ref->n++], sizeof(ref->rel[0]), "%s", sub);
	}
	closedir(d);
}

Test(hide, entry_bound_covers_the_first_entries_in_walk_order, .init = wide_setup,
     .fini = wide_teardown)
{
	char rel[256];
	cordon_error e;
	size_t bounded = 0;

	for (int d = 0; d < 4; d++) {
		(void)snprintf(rel, sizeof(rel), "t%d", d);
		mkdirs(wd, rel);
		for (int s = 0; s < 2; s++) {
			(void)snprintf(rel, sizeof(rel), "t%d/s%d", d, s);
			mkdirs(wd, rel);
			for (int f = 0; f < 12; f++) {
				(void)snprintf(rel, sizeof(rel), "t%d/s%d/f%02d.txt", d, s, f);
				touch(wd, rel);
			}
		}
		for (int f = 0; f < 12; f++) {
			(void)snprintf(rel, sizeof(rel), "t%d/%s%02d.%s", d, f % 3 ? "f" : "k", f,
				       f % 3 ? "txt" : "key");
			touch(wd, rel);
		}
	}
	for (size_t max = 5; max < 160; max += 6) {
		struct bound_ref ref = { .max = max };

		bound_walk("", &ref);
		bounded += ref.seen > max;
		for (int threads = 0; threads <= 2; threads++) {
			struct sb_hide_list got = { 0 };
			size_t hits = 0;

			hide_test_max_entries = max;
			cr_assert_eq(hide_scan_threads(fd, wd, p, 0, threads, &got, &e), 0, "%s",
				     e.msg);
			hide_test_max_entries = 0;
			cr_expect_eq(got.truncated, ref.seen > max, "bound %zu, threads %d", max,
				     threads);
			cr_expect_eq(got.visited, ref.seen, "bound %zu, threads %d", max, threads);
			cr_expect_eq(got.n, ref.n,
				     "bound %zu, threads %d: %zu hidden, %zu expected", max,
				     threads, got.n, ref.n);
			for (size_t i = 0; i < ref.n; i++)
				for (size_t j = 0; j < got.n; j++)
					hits += strcmp(got.v[j].rel, ref.rel[i]) == 0;
			cr_expect_eq(hits, ref.n, "bound %zu, threads %d: %zu of %zu hidden", max,
				     threads, hits, ref.n);
			hide_list_free(&got);
		}
	}
	cr_assert_gt(bounded, 20, "the bound was reached only %zu times", bounded);
}

/*
 * A top level too wide to record (more than 4,096 subdirectories and matches: a shared walk
 * records them before it walks the subdirectories) is walked on one thread, with the serial walk's result.
 */
Test(hide, too_wide_a_top_level_is_walked_on_one_thread, .init = wide_setup, .fini = wide_teardown)
{
	struct sb_hide_list serial = { 0 }, got = { 0 };
	char rel[64];
	cordon_error e;

	for (int i = 0; i < 4200; i++) {
		(void)snprintf(rel, sizeof(rel), i % 100 ? "n%04d" : "n%04d.key", i);
		if (i % 100)
			mkdirs(wd, rel);
		else
			touch(wd, rel);
	}
	touch(wd, "n0005/inner.key");
	cr_assert_eq(hide_scan_threads(fd, wd, p, 0, 1, &serial, &e), 0, "%s", e.msg);
	cr_assert_eq(serial.n, 43, "%zu hidden", serial.n);
	cr_assert_eq(hide_scan_threads(fd, wd, p, 0, 2, &got, &e), 0, "%s", e.msg);
	cr_expect_eq(got.threads, 1, "walked on %u threads", got.threads);
	expect_same_list(&serial, &got, "wide");
	hide_list_free(&got);
	hide_list_free(&serial);
}

/*
 * The hard-link pass does not go into a directory the first pass hid whole: its entries would
 * spend the entry bound before the other names of a hidden file, which would stay visible.
 * a.key has a second name in each of twenty directories, some of them read after the hidden
 * node_modules, whose 300 files are more than the bound here.
 */
Test(hide, link_pass_skips_what_the_first_pass_hid_whole, .init = wide_setup, .fini = wide_teardown)
{
	char rel[64], from[4096], to[4096];
	cordon_error e;

	add(&p->ignore, "node_modules");
	touch(wd, "a.key");
	mkdirs(wd, "node_modules");
	for (int i = 0; i < 300; i++) {
		(void)snprintf(rel, sizeof(rel), "node_modules/m%03d.js", i);
		touch(wd, rel);
	}
	(void)snprintf(from, sizeof(from), "%s/a.key", wd);
	for (int i = 0; i < 20; i++) {
		(void)snprintf(rel, sizeof(rel), "z%02d", i);
		mkdirs(wd, rel);
		(void)snprintf(to, sizeof(to), "%s/z%02d/copy.txt", wd, i);
		cr_assert_eq(link(from, to), 0);
	}
	for (int threads = 0; threads <= 2; threads++) {
		struct sb_hide_list got = { 0 };
		size_t copies = 0;

		hide_test_max_entries = 200;
		cr_assert_eq(hide_scan_threads(fd, wd, p, 0, threads, &got, &e), 0, "%s", e.msg);
		hide_test_max_entries = 0;
		for (size_t i = 0; i < got.n; i++)
			copies += strstr(got.v[i].rel, "/copy.txt") != NULL;
		cr_expect_eq(copies, 20, "threads %d: %zu of 20 other names hidden", threads,
			     copies);
		cr_expect(!got.truncated, "threads %d: the bound was reached", threads);
		hide_list_free(&got);
	}
}

/*
 * Following hidden symlinks to their targets has a time budget (a planted chain costs the
 * kernel about a millisecond a link): past it the scan fails, and the run is refused rather
 * than started with targets left unhidden. Here the budget is 1 ns, so the first symlink
 * spends it; with the usual one, the same scan hides the link and its target.
 */
Test(hide, symlinks_past_their_budget_fail_the_scan, .init = wide_setup, .fini = wide_teardown)
{
	struct sb_hide_list got = { 0 };
	char link[4096];
	cordon_error e = { 0 };
	int r;

	touch(wd, "real.txt");
	(void)snprintf(link, sizeof(link), "%s/alias.key", wd);
	cr_assert_eq(symlink("real.txt", link), 0);
	hide_test_symlink_budget_ns = 1;
	r = hide_scan_threads(fd, wd, p, 0, 1, &got, &e);
	hide_test_symlink_budget_ns = 0;
	cr_assert_eq(r, -1);
	cr_assert(strstr(e.msg, "symlinks take too long to resolve (1 followed"), "%s", e.msg);
	cr_assert_eq(hide_scan_threads(fd, wd, p, 0, 1, &got, &e), 0, "%s", e.msg);
	cr_assert_eq(got.n, 2);
	cr_expect_str_eq(got.v[0].rel, "alias.key");
	cr_expect_str_eq(got.v[1].rel, "real.txt");
	hide_list_free(&got);
}
