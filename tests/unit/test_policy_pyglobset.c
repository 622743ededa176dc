/* SPDX-License-Identifier: MIT */
/*
 * policy/pyglobset.c: many fnmatch patterns as one automaton. pyfnmatch() is the reference
 * (its own table of Python 3.11 results is in test_policy_pystr.c): the set must say "some
 * pattern matches" exactly when pyfnmatch says so for one of its patterns, on every string.
 */
#include "test_policy.h"

static struct pyglobset *set_of(const char *const *pats)
{
	struct pyglobset *s = NULL;
	cordon_error e;

	cr_assert_eq(pyglobset_new(&s, &e), 0);
	for (size_t i = 0; pats[i]; i++)
		cr_assert_eq(pyglobset_add(s, pats[i], &e), 0);
	cr_assert_eq(pyglobset_compile(s, &e), 0);
	return s;
}

static int any_match(const char *const *pats, const char *str)
{
	cordon_error e;

	for (size_t i = 0; pats[i]; i++) {
		int r = pyfnmatch(str, pats[i], &e);

		cr_assert_geq(r, 0);
		if (r)
			return 1;
	}
	return 0;
}

Test(policy_pyglobset, single_patterns_agree_with_pyfnmatch)
{
	static const char *const pats[] = {
		"a",
		"*",
		"a?b",
		"[!x]",
		"[^a]",
		"[]]",
		"[!]]",
		"[",
		"[a",
		"[a-]",
		"[-a]",
		"[a-c]",
		"[c-a]",
		"[\\]",
		"\\",
		"[!c-a]",
		"*b",
		"**",
		"*a*b",
		"a*c*",
		"a[!b]c",
		"?",
		"[\303\240-\303\252]",
		"[&&]",
		"[a-b-c]",
		"[a!]",
		"[!]",
		"*.pem",
		"[z-ab]",
		"[--0]",
		"",
		"**/x",
		"a*",
		"*a",
		"*.*",
		"?*?",
		"[!a-z]*",
		NULL,
	};
	static const char *const strs[] = {
		"",	"a",   "b",    "x",	 "^",	 "]",	  "[",	 "[a",	      "-",
		"\\",	"ab",  "aaab", "abc",	 "ac",	 "a/c",	  "a/b", "\303\251",  "&",
		"~",	"|",   "c",    "!",	 "[!]",	 "x.pem", "/",	 "a\nb",      ".env",
		"**/x", "d/x", "\377", "a\377b", "\303", "aa.b",  "zz",	 "a.pem.bak", NULL,
	};
	cordon_error e;

	for (size_t i = 0; pats[i]; i++) {
		const char *one[] = { pats[i], NULL };
		struct pyglobset *s = set_of(one);

		for (size_t j = 0; strs[j]; j++)
			cr_expect_eq(pyglobset_match(s, strs[j], &e),
				     pyfnmatch(strs[j], pats[i], &e), "pattern '%s' on '%s'",
				     pats[i], strs[j]);
		pyglobset_free(s);
	}
}

/* A small deterministic generator, so a failure names a reproducible case. */
static uint32_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint32_t)(*x >> 16);
}

static void gen(uint64_t *x, char *buf, size_t max, const char *const *alphabet, size_t na)
{
	size_t len = rnd(x) % max, at = 0;

	for (size_t k = 0; k < len; k++) {
		const char *a = alphabet[rnd(x) % na];
		size_t n = strlen(a);

		if (at + n + 1 >= 64)
			break;
		memcpy(buf + at, a, n);
		at += n;
	}
	buf[at] = '\0';
}

/*
 * 400 random sets of 1..max_np patterns, 50 random strings each, against pyfnmatch. Pattern
 * and string characters: the metacharacters, '/', a non-ASCII letter and an invalid byte
 * (surrogateescape on both sides); strings also use 'c', which no pattern has. With
 * no_final_star the patterns lose their trailing stars. Returns how many strings
 * pyglobset_may_end ruled out by their last byte.
 */
static int random_sets_agree(uint64_t x, size_t max_np, bool no_final_star)
{
	static const char *const palpha[] = { "a", "b", "*", "?",	 "[",	 "]",
					      "!", "-", "/", "\303\251", "\377", "." };
	static const char *const salpha[] = { "a", "b",	       "/",    "-", "]",
					      "!", "\303\251", "\377", ".", "c" };
	cordon_error e;
	int filtered = 0;

	for (int round = 0; round < 400; round++) {
		char pbuf[100][64];
		const char *pats[101];
		size_t np = 1 + rnd(&x) % max_np;

		for (size_t i = 0; i < np; i++) {
			size_t n;

			gen(&x, pbuf[i], 8, palpha, ARRAY_SIZE(palpha));
			n = strlen(pbuf[i]);
			while (no_final_star && n > 0 && pbuf[i][n - 1] == '*')
				pbuf[i][--n] = '\0';
			pats[i] = pbuf[i];
		}
		pats[np] = NULL;
		struct pyglobset *s = set_of(pats);
		for (int k = 0; k < 50; k++) {
			char str[64];

			gen(&x, str, 10, salpha, ARRAY_SIZE(salpha));
			filtered += !pyglobset_may_end(s, str, strlen(str));
			cr_assert_eq(pyglobset_match(s, str, &e), any_match(pats, str),
				     "round %d, %zu patterns (first '%s'), string '%s'", round, np,
				     pats[0], str);
		}
		pyglobset_free(s);
	}
	return filtered;
}

Test(policy_pyglobset, random_sets_agree_with_pyfnmatch)
{
	random_sets_agree(0x9e3779b97f4a7c15ULL, 100, false);
}

/*
 * Sets where no pattern ends with '*', so that pyglobset_may_end rules strings out by their
 * last byte before the automaton runs: still the same answers as pyfnmatch.
 */
Test(policy_pyglobset, last_byte_filter_agrees_with_pyfnmatch)
{
	int filtered = random_sets_agree(0x2545f4914f6cdd1dULL, 20, true);

	/* The filter did rule strings out (else this test tests nothing of it). */
	cr_assert_gt(filtered, 1000, "only %d strings ruled out by their last byte", filtered);
}

Test(policy_pyglobset, fed_in_pieces_and_dead_states)
{
	const char *pats[] = { "src/*.key", "build", NULL };
	struct pyglobset *s = set_of(pats);
	uint64_t st[1], dir[1];

	cr_assert_eq(pyglobset_words(s), 1);
	pyglobset_start(s, dir);
	pyglobset_feed(s, dir, "src/", 4);
	memcpy(st, dir, sizeof(st));
	pyglobset_feed(s, st, "a.key", 5);
	cr_expect(pyglobset_accepts(s, st));
	memcpy(st, dir, sizeof(st));
	pyglobset_feed(s, st, "a.txt", 5);
	cr_expect_not(pyglobset_accepts(s, st));
	cr_expect_not(pyglobset_dead(s, st), "src/*.key can still match src/a.txt...");

	pyglobset_start(s, dir);
	pyglobset_feed(s, dir, "doc/", 4);
	cr_expect(pyglobset_dead(s, dir), "nothing under doc/ can match either pattern");
	pyglobset_free(s);
}

Test(policy_pyglobset, empty_set_matches_nothing)
{
	const char *none[] = { NULL };
	struct pyglobset *s = set_of(none);
	cordon_error e;

	cr_expect_eq(pyglobset_words(s), 0);
	cr_expect_eq(pyglobset_match(s, "", &e), 0);
	cr_expect_eq(pyglobset_match(s, "a", &e), 0);
	pyglobset_free(s);
}

Test(policy_pyglobset, many_states_span_words)
{
	/* 40 patterns of 5 states each: 200 states over 4 words, with matches in each. */
	char buf[40][16];
	const char *pats[41];
	cordon_error e;

	for (int i = 0; i < 40; i++) {
		(void)snprintf(buf[i], sizeof(buf[i]), "*.x%02d", i);
		pats[i] = buf[i];
	}
	pats[40] = NULL;
	struct pyglobset *s = set_of(pats);
	cr_assert_eq(pyglobset_words(s), 4);
	for (int i = 0; i < 40; i++) {
		char name[32];

		(void)snprintf(name, sizeof(name), "dir/file.x%02d", i);
		cr_expect_eq(pyglobset_match(s, name, &e), 1, "%s", name);
		(void)snprintf(name, sizeof(name), "file.x%02dy", i);
		cr_expect_eq(pyglobset_match(s, name, &e), 0, "%s", name);
	}
	pyglobset_free(s);
}
