/* SPDX-License-Identifier: MIT */
/*
 * Python str, shlex, fnmatch, posixpath and pathlib semantics (policy/pystr.c, shlex.c,
 * pyfnmatch.c, pypath.c). Expected values are Python 3.11's own results: repr(),
 * str.strip() (as byte offsets into the UTF-8), shlex.split(), fnmatch.fnmatchcase(),
 * posixpath.normpath(), PurePosixPath.relative_to()/.name/.match().
 */
#include "test_policy.h"

static const struct {
	const char *in, *want;
} repr_rows[] = {
	{ "", "''" },
	{ "plain", "'plain'" },
	{ "it's", "\"it's\"" },
	{ "say \"hi\"", "'say \"hi\"'" },
	{ "it's \"both\"", "'it\\'s \"both\"'" },
	{ "back\\slash", "'back\\\\slash'" },
	{ "tab\there", "'tab\\there'" },
	{ "nl\nx", "'nl\\nx'" },
	{ "lone\rcr", "'lone\\rcr'" },
	{ "del\177", "'del\\x7f'" },
	{ "nel\302\205", "'nel\\x85'" },
	{ "nbsp\302\240", "'nbsp\\xa0'" },
	{ "soft\302\255hyphen", "'soft\\xadhyphen'" },
	{ "zw\342\200\213sp", "'zw\\u200bsp'" },
	{ "emoji\360\237\230\200", "'emoji\360\237\230\200'" },
	{ "pua\356\200\200", "'pua\\ue000'" },
	{ "caf\303\251", "'caf\303\251'" },
	{ "\344\270\255\346\226\207", "'\344\270\255\346\226\207'" },
	{ "ls\343\200\200", "'ls\\u3000'" },
	{ "bell\007", "'bell\\x07'" },
	{ "esc\033", "'esc\\x1b'" },
	{ "\342\200\250", "'\\u2028'" },
	{ "\363\240\200\201", "'\\U000e0001'" },
	{ "\364\217\277\277", "'\\U0010ffff'" },
	{ "\315\270", "'\\u0378'" },
	{ "bad\377byte", "'bad\\udcffbyte'" },
	{ "'", "\"'\"" },
	{ "\"", "'\"'" },
	{ "'\"", "'\\'\"'" },
	{ "\\'", "\"\\\\'\"" },
	{ "\314\201", "'\314\201'" },
	{ "\357\273\277", "'\\ufeff'" },
	{ "\034\035\036\037", "'\\x1c\\x1d\\x1e\\x1f'" },
	{ "\341\240\216", "'\\u180e'" },
	{ "\360\237\207\272\360\237\207\270", "'\360\237\207\272\360\237\207\270'" },
};

Test(policy_pystr, repr)
{
	for (size_t k = 0; k < ARRAY_SIZE(repr_rows); k++) {
		cordon_error e;
		char *got = NULL;

		cr_assert_eq(pyrepr(repr_rows[k].in, &got, &e), 0);
		cr_expect_str_eq(got, repr_rows[k].want, "row %zu", k);
		free(got);
	}
}

static const struct {
	const char *in;
	size_t start, end;
} strip_rows[] = {
	{ "", 0, 0 },
	{ "  a  ", 2, 3 },
	{ "\ta\n", 1, 2 },
	{ "\302\240a\343\200\200", 2, 3 },
	{ "\034 a \037", 2, 3 },
	{ "\302\205a\302\205", 2, 3 },
	{ "\342\200\213a\342\200\213", 0, 7 },
	{ "\342\200\203 a b \342\200\251", 4, 7 },
	{ "\013\014a\r", 2, 3 },
	{ "   ", 0, 0 },
	{ "\302\240", 0, 0 },
	{ "a", 0, 1 },
	{ "\341\240\216a", 0, 4 },
};

Test(policy_pystr, strip)
{
	for (size_t k = 0; k < ARRAY_SIZE(strip_rows); k++) {
		size_t s, t;

		pystrip(strip_rows[k].in, strlen(strip_rows[k].in), &s, &t);
		cr_expect(s == strip_rows[k].start && t == strip_rows[k].end,
			  "row %zu: got [%zu, %zu) want [%zu, %zu)", k, s, t, strip_rows[k].start,
			  strip_rows[k].end);
	}
}

Test(policy_pystr, isspace_and_isprintable)
{
	cr_assert(py_isspace(0x1c) && py_isspace(0x85) && py_isspace(0xa0) && py_isspace(0x3000));
	cr_assert_not(py_isspace(0x200b) || py_isspace(0x180e) || py_isspace(0xfeff));
	cr_assert(pystr_isprintable(0xe9) && pystr_isprintable(0x1f600));
	cr_assert_not(pystr_isprintable(0xe000) || pystr_isprintable(0x85) ||
		      pystr_isprintable(0x10ffff) || pystr_isprintable(0x7f));
}

static const struct {
	const char *in, *err;
	const char *const *argv;
} shlex_rows[] = {
	{ "", NULL, L0 },
	{ "a b", NULL, L("a", "b") },
	{ "  a   b  ", NULL, L("a", "b") },
	{ "a\tb\nc\rd", NULL, L("a", "b", "c", "d") },
	{ "a\013b", NULL, L("a\013b") },
	{ "a\302\240b", NULL, L("a\302\240b") },
	{ "'a b'", NULL, L("a b") },
	{ "\"a b\"", NULL, L("a b") },
	{ "a'b'c", NULL, L("abc") },
	{ "''", NULL, L("") },
	{ "\"\"", NULL, L("") },
	{ "a ''", NULL, L("a", "") },
	{ "'' b", NULL, L("", "b") },
	{ "\"a\\\"b\"", NULL, L("a\"b") },
	{ "\"a\\b\"", NULL, L("a\\b") },
	{ "\"a\\\\b\"", NULL, L("a\\b") },
	{ "'a\\b'", NULL, L("a\\b") },
	{ "a\\ b", NULL, L("a b") },
	{ "a\\", "No escaped character", NULL },
	{ "'a", "No closing quotation", NULL },
	{ "\"a", "No closing quotation", NULL },
	{ "a\\'", NULL, L("a'") },
	{ "\"\\$x\"", NULL, L("\\$x") },
	{ "a#b # c", NULL, L("a#b", "#", "c") },
	{ "x=1;y", NULL, L("x=1;y") },
	{ "\\\\", NULL, L("\\") },
	{ "\"a\\", "No escaped character", NULL },
	{ "'it'\"'\"'s'", NULL, L("it's") },
	{ "a&&b", NULL, L("a&&b") },
	{ "caf\303\251 \344\270\255", NULL, L("caf\303\251", "\344\270\255") },
};

Test(policy_pystr, shlex_split)
{
	for (size_t k = 0; k < ARRAY_SIZE(shlex_rows); k++) {
		cordon_error e;
		const char *err = NULL;
		char **argv = NULL;
		int r = policy_split(shlex_rows[k].in, &argv, &err, &e);

		if (shlex_rows[k].err) {
			cr_expect_eq(r, 1, "row %zu", k);
			cr_expect_str_eq(err ? err : "", shlex_rows[k].err, "row %zu", k);
			continue;
		}
		cr_assert_eq(r, 0, "row %zu: %s", k, err);
		size_t n = 0;
		for (; argv[n] && shlex_rows[k].argv[n]; n++)
			cr_expect_str_eq(argv[n], shlex_rows[k].argv[n], "row %zu word %zu", k, n);
		cr_expect(!argv[n] && !shlex_rows[k].argv[n], "row %zu: word count", k);
		policy_strv_free(argv);
	}
}

Test(policy_pystr, str_split_fallback)
{
	cordon_error e;
	char **v = NULL;

	cr_assert_eq(pystr_split("\u00a0 a\tb\x1c'c \u3000", &v, &e), 0);
	cr_assert_eq(pystr_strv_len(v), 3);
	cr_assert_str_eq(v[0], "a");
	cr_assert_str_eq(v[1], "b");
	cr_assert_str_eq(v[2], "'c");
	policy_strv_free(v);
}

static const struct {
	const char *name, *pattern;
	bool match;
} fnmatch_rows[] = {
	{ "a", "a", true },	    { "a/b", "*", true },
	{ "a/b", "a?b", true },	    { ".env", "*", true },
	{ "x", "[!x]", false },	    { "^", "[^a]", true },
	{ "b", "[^a]", false },	    { "]", "[]]", true },
	{ "a", "[!]]", true },	    { "[", "[", true },
	{ "[a", "[a", true },	    { "-", "[a-]", true },
	{ "-", "[-a]", true },	    { "b", "[a-c]", true },
	{ "b", "[c-a]", false },    { "c", "[c-a]", false },
	{ "-", "[c-a]", false },    { "\\", "[\\]", true },
	{ "\\", "\\", true },	    { "a\\b", "a\\b", true },
	{ "x", "[!c-a]", true },    { "ab", "*b", true },
	{ "ab", "**", true },	    { "", "*", true },
	{ "a\nb", "a?b", true },    { "a\nb", "a*", true },
	{ "aaab", "*a*b", true },   { "abc", "a*c*", true },
	{ "ac", "a[!b]c", false },  { "a/c", "a[!b]c", true },
	{ "\303\251", "?", true },  { "\303\251", "[\303\240-\303\252]", true },
	{ "B", "[a-z]", false },    { "&", "[&&]", true },
	{ "~", "[~~]", true },	    { "|", "[a||]", true },
	{ "b", "[a-b-c]", true },   { "-", "[a-b-c]", true },
	{ "c", "[a-b-c]", true },   { "!", "[a!]", true },
	{ "a", "[!]", false },	    { "[!]", "[!]", true },
	{ "x.pem", "*.pem", true }, { "b", "[z-ab]", true },
	{ "a", "[z-ab]", false },   { "-", "[--0]", true },
	{ "/", "[--0]", true },
};

Test(policy_pystr, fnmatch)
{
	for (size_t k = 0; k < ARRAY_SIZE(fnmatch_rows); k++) {
		cordon_error e;

		cr_expect_eq(pyfnmatch(fnmatch_rows[k].name, fnmatch_rows[k].pattern, &e),
			     fnmatch_rows[k].match, "row %zu: %s ~ %s", k, fnmatch_rows[k].name,
			     fnmatch_rows[k].pattern);
	}
}

static const struct {
	const char *in, *want;
} normpath_rows[] = {
	{ "", "." },
	{ ".", "." },
	{ "/", "/" },
	{ "//", "//" },
	{ "///", "/" },
	{ "////a", "/a" },
	{ "//a", "//a" },
	{ "a/..", "." },
	{ "a/../..", ".." },
	{ "/..", "/" },
	{ "/a/./b/", "/a/b" },
	{ "a//b", "a/b" },
	{ "../a", "../a" },
	{ "/a/b/../../..", "/" },
	{ "//a/../b", "//b" },
	{ "./", "." },
	{ "a/.../b", "a/.../b" },
	{ "~/x", "~/x" },
	{ "/w/..;", "/w/..;" },
};

Test(policy_pystr, normpath_and_lexical_resolve)
{
	cordon_error e;
	char *got = NULL;

	for (size_t k = 0; k < ARRAY_SIZE(normpath_rows); k++) {
		cr_assert_eq(pypath_normpath(normpath_rows[k].in, &got, &e), 0);
		cr_expect_str_eq(got, normpath_rows[k].want, "row %zu: %s", k, normpath_rows[k].in);
		free(got);
	}
	/* normpath(join(workdir, token)): an absolute token replaces the workdir. */
	cr_assert_eq(policy_resolve_lexical("/workspace", "a/../../etc", &got, &e), 0);
	cr_expect_str_eq(got, "/etc");
	free(got);
	cr_assert_eq(policy_resolve_lexical("/workspace", "//x/./y", &got, &e), 0);
	cr_expect_str_eq(got, "//x/y");
	free(got);
	cr_assert_eq(policy_resolve_lexical("/workspace/", "~", &got, &e), 0);
	cr_expect_str_eq(got, "/workspace/~");
	free(got);
}

static const struct {
	const char *path, *base, *rel;
} relto_rows[] = {
	{ "/w/a", "/w", "a" },	     { "/w", "/w", "." },     { "/w2", "/w", NULL },
	{ "/w/../x", "/w", "../x" }, { "//w/a", "/w", NULL }, { "/w/a", "//w", NULL },
	{ "/a/b", "/", "a/b" },	     { "/", "/", "." },	      { "/w/./a/", "/w", "a" },
};

static const struct {
	const char *path, *name;
} name_rows[] = {
	{ "/", "" },	{ "/a/b", "b" },  { "a/b/", "b" }, { "a/.", "a" }, { ".", "" },
	{ "..", ".." }, { "a/..", ".." }, { "", "" },	   { "//", "" },   { "x\\y", "x\\y" },
};

static const struct {
	const char *path, *pattern;
	int match;
} match_rows[] = {
	{ "/a/b.txt", "*.txt", 1 },
	{ "/a/b.txt", "a/*.txt", 1 },
	{ "/a/b.txt", "/a/*.txt", 1 },
	{ "/a/b.txt", "/*.txt", 0 },
	{ "a/b", "/a/b", 0 },
	{ "/a/b", "x/a/b", 0 },
	{ "/a/b", "*/a/b", 1 },
	{ "/a/b", "/*/b", 1 },
	{ "/a", "**", 1 },
	{ "/a/b", "b/", 1 },
	{ "/a/b", "./b", 1 },
	{ "/a", "", 2 },
	{ "/a", "/", 0 },
	{ "//a/b", "//a/*", 1 },
	{ "/a/b", "//a/*", 0 },
	{ "/a/b", "a//b", 1 },
};

Test(policy_pystr, pathlib)
{
	cordon_error e;
	char *got = NULL;

	for (size_t k = 0; k < ARRAY_SIZE(relto_rows); k++) {
		int r = pypath_relative_to(relto_rows[k].path, relto_rows[k].base, &got, &e);

		if (!relto_rows[k].rel) {
			cr_expect_eq(r, 1, "relto row %zu", k);
			continue;
		}
		cr_assert_eq(r, 0, "relto row %zu", k);
		cr_expect_str_eq(got, relto_rows[k].rel, "relto row %zu", k);
		free(got);
	}
	for (size_t k = 0; k < ARRAY_SIZE(name_rows); k++) {
		cr_assert_eq(pypath_name(name_rows[k].path, &got, &e), 0);
		cr_expect_str_eq(got, name_rows[k].name, "name row %zu", k);
		free(got);
	}
	for (size_t k = 0; k < ARRAY_SIZE(match_rows); k++)
		cr_expect_eq(pypath_match(match_rows[k].path, match_rows[k].pattern, &e),
			     match_rows[k].match, "match row %zu: %s ~ %s", k, match_rows[k].path,
			     match_rows[k].pattern);
}

/* Every code point against python3's own str.isspace() (what strip() and split() use). */
Test(policy_pystr, isspace_is_pythons_for_every_code_point)
{
	FILE *f = popen("python3 -c 'import sys; print(\" \".join(str(c) for c in "
			"range(0x110000) if chr(c).isspace()))'",
			"r");
	bool want[0x3001] = { false };
	unsigned long c;
	int n = 0;

	cr_assert_not_null(f);
	while (fscanf(f, "%lu", &c) == 1) {
		cr_assert_lt(c, 0x3001, "python3 says U+%04lX is space", c);
		want[c] = true;
		n++;
	}
	cr_assert_eq(pclose(f), 0);
	cr_assert_gt(n, 20);
	for (uint32_t cp = 0; cp < 0x110000; cp++)
		cr_assert_eq(py_isspace(cp), cp < 0x3001 && want[cp], "U+%04X", cp);
}
