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
#include <sys/stat.h>
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

/* The reference walk: every hidden rel, in a newline-separated sorted list. */
static void ref_walk(const struct cordon_profile *p, const char *root, const char *rel, char ***v,
		     size_t *n)
{
	char path[4096];
	DIR *d;
	struct dirent *de;

	(void)snprintf(path, sizeof(path), "%s%s%s", root, *rel ? "/" : "", rel);
	d = opendir(path);
	cr_assert(d, "opendir %s", path);
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

	cr_assert_eq(hide_scan(fd, wd, p, false, &got, &e), 0, "hide_scan: %s", e.msg);
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
