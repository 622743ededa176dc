/* SPDX-License-Identifier: MIT */
/*
 * check_ignore's patterns compiled once per check (policy/ignore.c): the same decisions as
 * check_ignore's own rule, one pattern at a time (ref_rule below, asked of every decision
 * through ignore_stats.ref) on random patterns and tokens, and a cost that grows with the
 * tokens plus the patterns, not their product.
 */
#include <stdio.h>

#include "test_policy.h"
#include "tests/lib/testutil.h"

/* Fixed seed: a failure replays. */
static uint64_t ig_rng = 0x2545f4914f6cdd1dULL;

static size_t ig_rand(size_t n)
{
	return tu_rand(&ig_rng, n);
}

static void ig_rand_str(char *buf, size_t size, const char *const *parts, size_t nparts, size_t max)
{
	size_t n = ig_rand(max + 1), len = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < n && len + 16 < size; k++)
		len += (size_t)snprintf(buf + len, size - len, "%s", parts[ig_rand(nparts)]);
}

/*
 * check_ignore's rule for one resolved path, pattern after pattern, each compiled again by
 * pyfnmatch() (the straightforward reading of AG2's loop): a glob denies when it matches rel,
 * or name, or (after a leading two stars and a slash) name with the rest; a plain pattern is
 * the name at any depth, or rel, or a directory prefix of rel.
 */
static int ref_rule(const struct cordon_list *patterns, const char *rel, const char *name,
		    cordon_error *e)
{
	for (size_t k = 0; k < patterns->n; k++) {
		const char *p = patterns->v[k];
		size_t plen = strlen(p);
		int r = 0;

		if (strpbrk(p, "*?[")) {
			r = pyfnmatch(rel, p, e);
			if (r == 0 && !strncmp(p, "**/", 3))
				r = pyfnmatch(name, p + 3, e);
			if (r == 0)
				r = pyfnmatch(name, p, e);
		} else {
			r = !strcmp(name, p) || !strcmp(rel, p) ||
			    (!strncmp(rel, p, plen) && rel[plen] == '/');
		}
		if (r != 0)
			return r;
	}
	return 0;
}

/* The check of command, with every decision it makes also asked of ref_rule: none differs. */
static void ig_compare(const char *command, const char *workdir, const struct cordon_list *pats,
		       bool wildcards, size_t *checked)
{
	struct ignore_stats st = { .ref = ref_rule };
	cordon_error e = { 0 };
	char *got = NULL;

	cr_assert_eq(ignore_check_stats(command, workdir, pats, policy_resolve_lexical, wildcards,
					&got, &st, &e),
		     0, "%s", e.msg);
	cr_expect_eq(st.differed, 0, "[%s] with %zu patterns (first [%s]): %zu of %zu differ",
		     command, pats->n, pats->n ? pats->v[0] : "", st.differed, st.checked);
	*checked += st.checked;
	free(got);
}

/*
 * Random glob and plain patterns (sets, ranges, a leading "**" and slash, backslashes, slashes at either end,
 * non-ASCII and invalid UTF-8) against random tokens, each token checked alone so that every
 * pattern is exercised, then all of them in one command.
 */
Test(policy_ignore, same_as_one_pattern_at_a_time)
{
	static const char *const pat_parts[] = { "a",	     "b",    "ab",	  "*",	 "**",
						 "?",	     "[ab]", "[!a]",	  "[a-", "]",
						 "/",	     "**/",  ".",	  "\\",	 "x",
						 "\xc3\xa9", "\xff", "[\xc3\xa9]" };
	static const char *const tok_parts[] = {
		"a", "b",	 "ab",	 "x",	 ".", "..",   "/",
		"/", "\xc3\xa9", "\xff", "a\\b", "w", "[ab]", "?"
	};
	static const char *const workdirs[] = { "/w", "/w/a", "/", "/w/x\\y" };

	size_t checked = 0;

	for (int round = 0; round < 400; round++) {
		struct cordon_list pats = { .set = true };
		const char *wd = workdirs[ig_rand(ARRAY_SIZE(workdirs))];
		char all[8192] = "cat", buf[256];
		cordon_error e;

		for (size_t n = 1 + ig_rand(4), k = 0; k < n; k++) {
			size_t len;

			ig_rand_str(buf, sizeof(buf), pat_parts, ARRAY_SIZE(pat_parts), 4);
			if (ig_rand(4) == 0) { /* a leading "**" and slash */
				len = strlen(buf);
				memmove(buf + 3, buf, len + 1);
				memcpy(buf, "**/", 3);
			}
			cr_assert_eq(cordon_list_add(&pats, buf, &e), 0);
		}
		for (int k = 0; k < 30; k++) {
			char cmd[512], tok[256];

			ig_rand_str(tok, sizeof(tok), tok_parts, ARRAY_SIZE(tok_parts), 5);
			if (ig_rand(5) == 0) /* sometimes the pattern itself, as a path */
				snprintf(tok, sizeof(tok), "%s", pats.v[ig_rand(pats.n)]);
			if (strchr(tok, '\''))
				continue;
			snprintf(cmd, sizeof(cmd), "cat '%s'", tok);
			ig_compare(cmd, wd, &pats, false, &checked);
			if (strlen(all) + strlen(tok) + 4 < sizeof(all))
				strcat(strcat(strcat(all, " '"), tok), "'");
		}
		ig_compare(all, wd, &pats, false, &checked);
		ig_compare(all, wd, &pats, true, &checked);
		cordon_list_free(&pats);
	}
	cr_assert_gt(checked, 8000, "only %zu decisions compared", checked);
}

/* Plain patterns that share long prefixes with each other and with the path. */
Test(policy_ignore, plain_prefixes)
{
	static const char *const pats[] = { "a",   "a/b", "a/b/c/d", "a/bc", "a!",	 "a/b/",
					    "a//", "/a",  "b/c",     "a\\b", "a/b/c/d/e" };
	static const char *const toks[] = { "a",	 "a/b",	  "a/bc/d",    "a/b/c",
					    "a/b/c/d/x", "a!/x",  "b/c/d",     "ab/c",
					    "a\\b/c",	 "c/a/b", "x/a/b/c/d", "a/b!",
					    "a/b/c/d/e", "a/b/cd" };
	size_t checked = 0;

	for (size_t p = 0; p < ARRAY_SIZE(pats); p++) {
		struct cordon_list l = { .set = true };
		cordon_error e;

		cr_assert_eq(cordon_list_add(&l, pats[p], &e), 0);
		for (size_t q = 0; q < ARRAY_SIZE(pats); q++)
			if (q != p && ig_rand(2))
				cr_assert_eq(cordon_list_add(&l, pats[q], &e), 0);
		for (size_t t = 0; t < ARRAY_SIZE(toks); t++) {
			char cmd[256];

			snprintf(cmd, sizeof(cmd), "cat '%s'", toks[t]);
			ig_compare(cmd, "/w", &l, false, &checked);
		}
		cordon_list_free(&l);
	}
	cr_assert_geq(checked, ARRAY_SIZE(pats) * ARRAY_SIZE(toks), "%zu decisions compared",
		      checked);
}

/*
 * 4096 glob and 4096 plain patterns, 100,000 tokens: each pattern is compiled once, a plain
 * one is looked up in about log2(4096) comparisons per component, and the automata read each
 * rel and name once. Matching every pattern against every token, as before, took minutes.
 */
Test(policy_ignore, many_patterns_many_tokens)
{
	const size_t npat = 4096, ntok = 100 * 1000;
	struct cordon_list pats = { .set = true };
	struct ignore_stats st = { 0 };
	_cleanup_free_ char *cmd = malloc(ntok * 24 + 64);
	char buf[64], *p = cmd, *deny = NULL;
	size_t fed_max = 0;
	cordon_error e;

	cr_assert_not_null(cmd);
	for (size_t k = 0; k < npat; k++) {
		snprintf(buf, sizeof(buf), "*.k%zu", k);
		cr_assert_eq(cordon_list_add(&pats, buf, &e), 0);
		snprintf(buf, sizeof(buf), "d%zu/secret", k);
		cr_assert_eq(cordon_list_add(&pats, buf, &e), 0);
	}
	p += sprintf(p, "cat");
	for (size_t k = 0; k < ntok; k++) {
		int n = sprintf(p, " d%zu/f%zu", k % npat, k);

		fed_max += 2 * (size_t)n; /* rel and name, each shorter than the token */
		p += n;
	}
	sprintf(p, " d4095/secret/x.k7");
	cr_assert_eq(
		ignore_check_stats(cmd, "/w", &pats, policy_resolve_lexical, false, &deny, &st, &e),
		0, "%s", e.msg);
	cr_expect_str_eq(deny ? deny : "(allowed)", "Access denied: /w/d4095/secret/x.k7");
	cr_expect_eq(st.compiled, 2 * npat, "compiled %zu", st.compiled);
	/* per token: the name and two components of rel, a few bsearches of 13 steps each */
	cr_expect_leq(st.compared, (ntok + 1) * 6 * 14, "compared %zu", st.compared);
	cr_expect_leq(st.fed, fed_max + 64, "fed %zu", st.fed);
	free(deny);
	cordon_list_free(&pats);
}
