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
#include "tests/lib/testutil.h"

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

/* --- Linear cost, and the same results as the former resolver ------------------------------ */

/* A 1 MiB token of half a million components: with a new string per component (the former
 * resolver) this copied ~250 GB; now each byte of the result is written about once. */
Test(policy_resolve, long_token_linear, .init = res_setup, .fini = res_teardown)
{
	size_t n = 500 * 1000, wl = strlen(res_w);
	_cleanup_free_ char *tok = malloc(2 * n), *want = malloc(wl + 2 * n + 1);
	struct resolve_stats st = { 0 };
	cordon_error e;
	char *got = NULL;

	cr_assert(tok && want);
	for (size_t k = 0; k < n; k++)
		memcpy(tok + 2 * k, "x/", 2);
	tok[2 * n - 1] = '\0';
	snprintf(want, wl + 2 * n + 1, "%s/%s", res_w, tok);
	cr_assert_eq(resolve_host_stats(res_w, tok, &got, &st, &e), 0, "%s", e.msg);
	cr_expect_str_eq(got, want);
	cr_expect_leq(st.copied, 2 * strlen(want), "copied %zu bytes for a %zu-byte result",
		      st.copied, strlen(want));
	cr_expect_eq(st.memo, 0);
	free(got);
}

/* The tree of links seen is searched in O(log n): 20,000 links "s<k> -> ." crossed in one
 * token (a list searched from the start made 2*10^8 comparisons). */
Test(policy_resolve, many_links_logarithmic, .init = res_setup, .fini = res_teardown)
{
	const size_t n = 20000;
	_cleanup_free_ char *tok = malloc(n * 8);
	char path[PATH_MAX * 2], *p = tok;
	struct resolve_stats st = { 0 };
	cordon_error e;
	char *got = NULL;

	cr_assert_not_null(tok);
	for (size_t k = 0; k < n; k++) {
		snprintf(path, sizeof(path), "%s/s%zu", res_w, k);
		cr_assert_eq(symlink(".", path), 0);
		p += sprintf(p, k ? "/s%zu" : "s%zu", k);
	}
	/* and back through all of them once more: every one a hit in the memo */
	cr_assert_eq(resolve_host_stats(res_w, tok, &got, &st, &e), 0, "%s", e.msg);
	cr_expect_str_eq(got, res_w);
	cr_expect_eq(st.memo, n);
	/* log2(20000) < 15: a red-black tree's search path is at most twice that */
	cr_expect_leq(st.compared, n * 2 * 32, "%zu comparisons for %zu links", st.compared, n);
	cr_expect_leq(st.copied, n * (strlen(res_w) + 16));
	free(got);
}

/* Fixed seed, so that a failure can be replayed. */
static uint64_t res_rng = 0x9e3779b97f4a7c15u;

static size_t res_rand(size_t n)
{
	return tu_rand(&res_rng, n);
}

/* A random path of 0..max components from names that exist in the random tree, ".", "..",
 * empty ones (doubled slashes), sometimes absolute into the temp root. */
static void res_rand_path(char *buf, size_t size, size_t max)
{
	static const char *const parts[] = { "a",  "b", "c",  "l0", "l1", "l2",	  "l3", "l4",
					     "l5", ".", "..", "",   "x",  "a\\b", "..." };
	size_t n = res_rand(max + 1), len = 0;

	buf[0] = '\0';
	if (res_rand(6) == 0)
		len = (size_t)snprintf(buf, size, "%s%s", res_root, res_rand(2) ? "/w" : "");
	else if (res_rand(12) == 0)
		len = (size_t)snprintf(buf, size, "/");
	for (size_t k = 0; k < n && len + 8 < size; k++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s",
					(k || len) && buf[len - 1] != '/' ? "/" : "",
					parts[res_rand(ARRAY_SIZE(parts))]);
	if (res_rand(8) == 0 && len + 2 < size)
		strcat(buf, "/");
}

/*
 * The pairs (workdir, token) of a test, resolved by Python 3.11 itself at the end:
 * (Path(workdir) / token).resolve(), the very call resolve_host() reproduces, or an exception
 * (resolve_host's 1). python3 runs in the test's cwd, as the relative workdirs need.
 */
struct res_pairs {
	char (*wd)[PATH_MAX * 2];
	char (*tok)[512];
	size_t n, cap;
};

static void res_pair_add(struct res_pairs *p, const char *wd, const char *tok)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 256;
		p->wd = realloc(p->wd, p->cap * sizeof(*p->wd));
		p->tok = realloc(p->tok, p->cap * sizeof(*p->tok));
		cr_assert(p->wd && p->tok);
	}
	snprintf(p->wd[p->n], sizeof(p->wd[0]), "%s", wd);
	snprintf(p->tok[p->n], sizeof(p->tok[0]), "%s", tok);
	p->n++;
}

static const char res_python[] =
	"import pathlib, sys\n"
	"d = open(sys.argv[1], 'rb').read().split(b'\\0')\n"
	"out = []\n"
	"for i in range(0, len(d) - 1, 2):\n"
	"    wd, tok = (x.decode('utf-8', 'surrogateescape') for x in d[i:i + 2])\n"
	"    try:\n"
	"        r = str((pathlib.Path(wd) / tok).resolve())\n"
	"        out.append(b'0' + r.encode('utf-8', 'surrogateescape'))\n"
	"    except Exception:\n"
	"        out.append(b'1')\n"
	"sys.stdout.buffer.write(b'\\0'.join(out) + b'\\0')\n";

/* Every pair through resolve_host and through Python: the same path, or both an error. */
static void res_compare_all(const struct res_pairs *p)
{
	char in[64] = "/tmp/cordon-resolve-XXXXXX", cmd[256], *out = NULL, *at;
	size_t len = 0, cap = 0, errors = 0;
	int fd = mkstemp(in);
	FILE *py;

	cr_assert_geq(fd, 0);
	for (size_t k = 0; k < p->n; k++) {
		cr_assert_eq(write(fd, p->wd[k], strlen(p->wd[k]) + 1),
			     (ssize_t)strlen(p->wd[k]) + 1);
		cr_assert_eq(write(fd, p->tok[k], strlen(p->tok[k]) + 1),
			     (ssize_t)strlen(p->tok[k]) + 1);
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "python3 -c \"$CORDON_RES_PY\" %s", in);
	cr_assert_eq(setenv("CORDON_RES_PY", res_python, 1), 0);
	py = popen(cmd, "r");
	cr_assert(py, "python3: %s", strerror(errno));
	for (;;) {
		if (len + 65536 > cap) {
			cap = cap ? 2 * cap : 1 << 20;
			out = realloc(out, cap);
			cr_assert(out);
		}
		size_t got = fread(out + len, 1, cap - len, py);

		if (got == 0)
			break;
		len += got;
	}
	cr_assert_eq(pclose(py), 0, "python3 failed");
	unlink(in);
	at = out;
	for (size_t k = 0; k < p->n; k++) {
		cordon_error e = { 0 };
		char *got = NULL;
		int r = resolve_host(p->wd[k], p->tok[k], &got, &e);

		cr_assert(at < out + len, "python3 answered %zu of %zu", k, p->n);
		cr_assert_neq(r, -1, "%s", e.msg);
		if (*at == '1') {
			cr_expect_eq(r, 1, "[%s] [%s]: Python raises, cordon gave [%s]", p->wd[k],
				     p->tok[k], got ? got : "");
			errors++;
		} else {
			cr_expect_eq(r, 0, "[%s] [%s]: cordon refused, Python gave [%s]", p->wd[k],
				     p->tok[k], at + 1);
			if (r == 0)
				cr_expect_str_eq(got, at + 1, "[%s] [%s]", p->wd[k], p->tok[k]);
		}
		at += strlen(at) + 1;
		free(got);
	}
	cr_expect_gt(errors, 0, "no symlink loop among %zu pairs", p->n);
	free(out);
}

/*
 * Random trees of directories and links (to each other, up, absolute, dangling, in loops)
 * and random tokens: the resolver gives what Python 3.11's Path.resolve() gives, byte for
 * byte. The workdir is also taken relative (from the cwd) and through a link.
 */
Test(policy_resolve, same_as_pythons_resolve, .init = res_setup, .fini = res_teardown)
{
	static const char *const links[] = { "l0", "l1", "l2", "l3", "l4", "l5" };
	static const char *const dirs[] = { "a", "a/b", "a/b/c", "b", "c", "c/a" };
	char path[PATH_MAX * 2], target[512], tok[512];
	struct res_pairs pairs = { 0 };

	cr_assert_eq(chdir(res_root), 0);
	for (int round = 0; round < 40; round++) {
		char sub[64];

		snprintf(sub, sizeof(sub), "t%d", round);
		snprintf(path, sizeof(path), "%s/w/%s", res_root, sub);
		cr_assert_eq(mkdir(path, 0700), 0);
		for (size_t k = 0; k < ARRAY_SIZE(dirs); k++) {
			snprintf(path, sizeof(path), "%s/w/%s/%s", res_root, sub, dirs[k]);
			cr_assert_eq(mkdir(path, 0700), 0);
		}
		for (size_t k = 0; k < ARRAY_SIZE(links); k++) {
			const char *where = res_rand(3) ? "" : dirs[res_rand(ARRAY_SIZE(dirs))];

			res_rand_path(target, sizeof(target), 4);
			snprintf(path, sizeof(path), "%s/w/%s/%s%s%s", res_root, sub, where,
				 where[0] ? "/" : "", links[k]);
			cr_assert_eq(symlink(target[0] ? target : ".", path), 0, "%s", path);
		}
		for (int k = 0; k < 150; k++) {
			char wd[PATH_MAX * 2];

			res_rand_path(tok, sizeof(tok), 7);
			switch (res_rand(4)) {
			case 0: /* relative to the cwd, the temp root */
				snprintf(wd, sizeof(wd), "w/%s", sub);
				break;
			case 1: /* through a link, or a loop */
				snprintf(wd, sizeof(wd), "%s/w/%s/%s", res_root, sub,
					 links[res_rand(ARRAY_SIZE(links))]);
				break;
			default:
				snprintf(wd, sizeof(wd), "%s/w/%s", res_root, sub);
			}
			res_pair_add(&pairs, wd, tok);
		}
	}
	res_compare_all(&pairs);
	free(pairs.wd);
	free(pairs.tok);
}

/*
 * The budget of one check's resolutions: a planted chain of links with long targets costs a
 * two-byte token thousands of units, and past the budget resolve_host fails (E2BIG), which
 * refuses the command (exit 125); without a budget (or once it ends) the same token resolves.
 */
Test(policy_resolve, chain_past_the_checks_budget, .init = res_setup, .fini = res_teardown)
{
	char path[PATH_MAX * 2], target[PATH_MAX], *got = NULL;
	cordon_error e = { 0 };
	int r = 0, n = 0;

	/* c0 -> ./././.../c1 -> ... -> c20 -> a directory */
	snprintf(path, sizeof(path), "%s/d", res_w);
	cr_assert_eq(mkdir(path, 0700), 0);
	for (int k = 20; k >= 0; k--) {
		size_t len = 0;

		while (len < 2000)
			len += (size_t)snprintf(target + len, sizeof(target) - len, "./");
		snprintf(target + len, sizeof(target) - len, k == 20 ? "d" : "c%d", k + 1);
		snprintf(path, sizeof(path), "%s/c%d", res_w, k);
		cr_assert_eq(symlink(target, path), 0);
	}
	cr_assert_eq(resolve_host(res_w, "c0", &got, &e), 0, "%s", e.msg);
	free(got);
	resolve_budget_begin(1000000);
	while (n < 1000 && (r = resolve_host(res_w, "c0", &got, &e)) == 0) {
		free(got);
		n++;
	}
	resolve_budget_end();
	cr_assert_eq(r, -1, "%d resolutions within the budget", n);
	cr_expect(n > 5 && n < 100, "%d resolutions within the budget", n);
	cr_expect(strstr(e.msg, "take too much work to resolve"), "%s", e.msg);
	cr_assert_eq(resolve_host(res_w, "c0", &got, &e), 0, "after the check: %s", e.msg);
	free(got);
}
