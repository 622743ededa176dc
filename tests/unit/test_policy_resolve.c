/* SPDX-License-Identifier: MIT */
/*
 * Host-mode resolution (runtime/resolve.c) through real symlinks, and compat/strict ignore
 * checks on top of it. The tree below is built in a fresh temp dir; "@" in the expected
 * values stands for that dir. Expectations are (Path(w) / token).resolve() and AG2's
 * check_ignore under Python 3.11 on the same tree (NULL: resolve() raised, token skipped).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/resolve.h"
#include "test_policy.h"

static char res_root[PATH_MAX];
static char res_w[PATH_MAX + 8];

static const char *const res_links[][2] = {
	{ "link_out", "../outside" },
	{ "link_env", ".env" },
	{ "loop1", "loop2" },
	{ "loop2", "loop1" },
	{ "abs", "/etc" },
	{ "chain", "chain1" },
	{ "chain1", "chain2" },
	{ "chain2", "sub" },
	{ "self", "self" },
	{ "rel_up", "sub/../../outside" },
	{ "dangling", "nowhere/x" },
	{ "sub/up", ".." },
};

static void res_setup(void)
{
	char tmpl[] = "/tmp/cordon-policy-XXXXXX", path[PATH_MAX * 2];
	int fd;

	cr_assert_not_null(mkdtemp(tmpl));
	/* The expected paths are resolved ones: /tmp itself may be a symlink. */
	cr_assert_not_null(realpath(tmpl, res_root));
	snprintf(res_w, sizeof(res_w), "%s/w", res_root);
	snprintf(path, sizeof(path), "%s/sub", res_w);
	cr_assert_eq(mkdir(res_w, 0700), 0);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/outside", res_root);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.env", res_w);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/sub/f", res_w);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	for (size_t k = 0; k < ARRAY_SIZE(res_links); k++) {
		snprintf(path, sizeof(path), "%s/%s", res_w, res_links[k][0]);
		cr_assert_eq(symlink(res_links[k][1], path), 0, "%s", path);
	}
}

static int res_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void res_teardown(void)
{
	if (res_root[0])
		(void)nftw(res_root, res_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Expand "@" to the temp root. */
static char *res_expand(const char *s)
{
	static char buf[PATH_MAX * 2];
	const char *at;

	if (!s)
		return NULL;
	at = strchr(s, '@');
	if (!at)
		return (char *)s;
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - s), s, res_root, at + 1);
	return buf;
}

static const struct {
	const char *token, *want;
} resolve_rows[] = {
	{ "x", "@/w/x" },
	{ "sub/../x", "@/w/x" },
	{ "link_out", "@/outside" },
	{ "link_out/f", "@/outside/f" },
	{ "link_env", "@/w/.env" },
	{ "loop1", NULL },
	{ "loop1/x", NULL },
	{ "abs", "/etc" },
	{ "abs/..", "/" },
	{ "link_out/..", "@" },
	{ "/abs/path", "/abs/path" },
	{ "~", "@/w/~" },
	{ "", "@/w" },
	{ ".", "@/w" },
	{ "nonexist/../../x", "@/x" },
	{ "//etc", "/etc" },
	{ "chain", "@/w/sub" },
	{ "chain/f", "@/w/sub/f" },
	{ "self", NULL },
	{ "rel_up", "@/outside" },
	{ "dangling", "@/w/nowhere/x" },
	{ "dangling/..", "@/w/nowhere" },
	{ "sub/up", "@/w" },
	{ "sub/up/sub/up/.env", "@/w/.env" },
	{ "..", "@" },
	{ "link_out//f/", "@/outside/f" },
	{ "sub/f/..", "@/w/sub" },
	{ "sub/f/x", "@/w/sub/f/x" },
};

Test(policy_resolve, host_realpath, .init = res_setup, .fini = res_teardown)
{
	for (size_t k = 0; k < ARRAY_SIZE(resolve_rows); k++) {
		cordon_error e;
		char *got = NULL;
		const char *want = res_expand(resolve_rows[k].want);
		int r = resolve_host(res_w, resolve_rows[k].token, &got, &e);

		if (!want) {
			cr_expect_eq(r, 1, "row %zu (%s): want skipped, got %d %s", k,
				     resolve_rows[k].token, r, got ? got : "");
		} else {
			cr_expect_eq(r, 0, "row %zu (%s)", k, resolve_rows[k].token);
			cr_expect_str_eq(got ? got : "(none)", want, "row %zu (%s)", k,
					 resolve_rows[k].token);
		}
		free(got);
	}
}

static const struct {
	const char *ignore, *command, *want;
} host_compat_rows[] = {
	{ ".env", "cat link_env", "Access denied: @/w/.env" },
	{ ".env", "cat link_out/x", "Access denied: @/outside/x" },
	{ ".env", "cat loop1", NULL },
	{ ".env", "cat loop1 .env", "Access denied: @/w/.env" },
	{ "w", "ls .", "Access denied: @/w" },
	{ ".env", "cat sub/../.env", "Access denied: @/w/.env" },
	{ NULL, "cat link_out/..", "Access denied: @" },
	{ ".env", "cat sub/up/.env", "Access denied: @/w/.env" },
	{ "sub", "cat chain/f", "Access denied: @/w/sub/f" },
	{ NULL, "cat dangling", NULL },
	{ NULL, "cat abs", "Access denied: /etc" },
	{ ".env", "cat self", NULL },
	{ "outside", "ls rel_up", "Access denied: @/outside" },
	{ ".env", "cat ~/.env", "Access denied: @/w/~/.env" },
	{ NULL, "ls", NULL },
	{ ".env", "ls -la link_env", "Access denied: @/w/.env" },
};

static const struct {
	const char *ignore, *command, *want;
} host_strict_rows[] = {
	{ ".env", "cat link_env", "Access denied: @/w/.env" },
	{ ".env", "cat loop1", NULL },
	{ ".env", "cat link*",
	  "Access denied (wildcard arguments are not supported with ignore): 'link*'" },
};

static void res_run(enum cordon_mode mode, const char *ignore, const char *command,
		    const char *want, int row)
{
	struct cordon_profile p = { .mode = mode, .command_filtering = true };
	char *w = strdup(res_expand(want) ? res_expand(want) : "");

	tp_list(&p.ignore, ignore ? L(ignore) : L0);
	tp_expect(&p, command, res_w, resolve_host, NULL, want ? w : NULL, row);
	free(w);
	tp_profile_free(&p);
}

Test(policy_resolve, host_ignore, .init = res_setup, .fini = res_teardown)
{
	for (size_t k = 0; k < ARRAY_SIZE(host_compat_rows); k++)
		res_run(CORDON_MODE_COMPAT, host_compat_rows[k].ignore, host_compat_rows[k].command,
			host_compat_rows[k].want, (int)k);
	for (size_t k = 0; k < ARRAY_SIZE(host_strict_rows); k++)
		res_run(CORDON_MODE_STRICT, host_strict_rows[k].ignore, host_strict_rows[k].command,
			host_strict_rows[k].want, (int)k);
}

/* A chain longer than glibc's 40 links still resolves, as in Python. */
Test(policy_resolve, long_chain, .init = res_setup, .fini = res_teardown)
{
	char path[PATH_MAX * 2], target[64];
	cordon_error e;
	char *got = NULL;

	for (int k = 0; k < 60; k++) {
		snprintf(path, sizeof(path), "%s/c%d", res_w, k);
		snprintf(target, sizeof(target), k == 59 ? "sub" : "c%d", k + 1);
		cr_assert_eq(symlink(target, path), 0);
	}
	cr_assert_eq(resolve_host(res_w, "c0/f", &got, &e), 0);
	snprintf(path, sizeof(path), "%s/sub/f", res_w);
	cr_expect_str_eq(got, path);
	free(got);
}
