/* SPDX-License-Identifier: MIT */
/*
 * Output capture (runtime/capture.c): AG2's result string from two streams fed in arbitrary
 * chunks. Every expected value in the table was produced by Python 3.11 reproducing AG2:
 * bytes.decode("utf-8", "replace") (where AG2 itself would raise, see docs/compat.md), then
 * "\r\n" -> "\n" and "\r" -> "\n", then (out + err).strip(), truncation and _format.
 *
 * Each row is checked with the whole stream in one feed, one byte per feed, and split in two at
 * every byte boundary of either stream: the result must not depend on how reads fall.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/capture.h"
#include "runtime/cleanup.h"

struct bytes {
	const char *s;
	size_t n;
};

/* A string literal that may hold NUL bytes, with its length. */
#define B(lit)                                                                                     \
	{                                                                                          \
		lit, sizeof(lit) - 1                                                               \
	}

struct row {
	const char *name;
	struct bytes out, err;
	int64_t max;
	int code;
	struct bytes want;		 /* the result string */
	bool truncated;			 /* the truncation note was added */
	struct bytes want_out, want_err; /* capture_text(): decoded, first max code points */
	uint64_t out_chars, err_chars;	 /* capture_chars() */
};

static const struct row rows[] = {
	/* Generated rows: expectations from Python 3.11 reproducing AG2. */
	{ "plain", B("hi\n"), B(""), 100000, 0, B("hi"), false, B("hi\n"), B(""), 3, 0 },
	{ "concat, no separator", B("out"), B("err"), 100000, 0, B("outerr"), false, B("out"),
	  B("err"), 3, 3 },
	{ "exit 1 with output", B("x\n"), B(""), 100000, 1, B("x\n[exit code: 1]"), false, B("x\n"),
	  B(""), 2, 0 },
	{ "exit 2, empty", B(""), B(""), 100000, 2, B("[exit code: 2]"), false, B(""), B(""), 0,
	  0 },
	{ "exit -9, empty", B(""), B(""), 100000, -9, B("[exit code: -9]"), false, B(""), B(""), 0,
	  0 },
	{ "exit -15 with output", B("killed\n"), B(""), 100000, -15, B("killed\n[exit code: -15]"),
	  false, B("killed\n"), B(""), 7, 0 },
	{ "exit 127 stderr only", B(""), B("sh: 1: nope: not found\n"), 100000, 127,
	  B("sh: 1: nope: not found\n[exit code: 127]"), false, B(""),
	  B("sh: 1: nope: not found\n"), 0, 23 },
	{ "exit 255", B("a"), B("b"), 100000, 255, B("ab\n[exit code: 255]"), false, B("a"), B("b"),
	  1, 1 },
	{ "both empty", B(""), B(""), 100000, 0, B(""), false, B(""), B(""), 0, 0 },
	{ "whitespace only", B("  \n\t"), B(""), 100000, 0, B(""), false, B("  \n\t"), B(""), 4,
	  0 },
	{ "whitespace only, exit 3", B("  \n\t"), B(""), 100000, 3, B("[exit code: 3]"), false,
	  B("  \n\t"), B(""), 4, 0 },
	{ "stdout whitespace, stderr content", B(" \n "), B("  err  \n"), 100000, 0, B("err"),
	  false, B(" \n "), B("  err  \n"), 3, 8 },
	{ "stderr leading ws kept after stdout", B("out"), B("  \n err\n"), 100000, 0,
	  B("out  \n err"), false, B("out"), B("  \n err\n"), 3, 8 },
	{ "stdout trailing ws kept before stderr", B("out \n"), B("err"), 100000, 0, B("out \nerr"),
	  false, B("out \n"), B("err"), 5, 3 },
	{ "both whitespace only", B("\n"), B("\n"), 100000, 0, B(""), false, B("\n"), B("\n"), 1,
	  1 },
	{ "stdout whitespace, stderr whitespace, exit 1", B(" "), B("\t\n"), 100000, 1,
	  B("[exit code: 1]"), false, B(" "), B("\t\n"), 1, 2 },
	{ "inner whitespace kept", B("a  b\n\n\nc\n"), B(""), 100000, 0, B("a  b\n\n\nc"), false,
	  B("a  b\n\n\nc\n"), B(""), 9, 0 },
	{ "CRLF", B("a\015\nb\015\n"), B(""), 100000, 0, B("a\nb"), false, B("a\nb\n"), B(""), 4,
	  0 },
	{ "lone CR", B("a\015b\015"), B(""), 100000, 0, B("a\nb"), false, B("a\nb\n"), B(""), 4,
	  0 },
	{ "CR CRLF", B("a\015\015\nb"), B(""), 100000, 0, B("a\n\nb"), false, B("a\n\nb"), B(""), 4,
	  0 },
	{ "LF CR", B("a\n\015b"), B(""), 100000, 0, B("a\n\nb"), false, B("a\n\nb"), B(""), 4, 0 },
	{ "CRLF only", B("\015\n\015\n"), B("x"), 100000, 0, B("x"), false, B("\n\n"), B("x"), 2,
	  1 },
	{ "CR ends stdout, LF starts stderr", B("a\015"), B("\nb"), 100000, 0, B("a\n\nb"), false,
	  B("a\n"), B("\nb"), 2, 2 },
	{ "progress bar CRs", B("10%\01550%\015100%\n"), B(""), 100000, 0, B("10%\n50%\n100%"),
	  false, B("10%\n50%\n100%\n"), B(""), 13, 0 },
	{ "invalid lone FF", B("a\377b"), B(""), 100000, 0, B("a\357\277\275b"), false,
	  B("a\357\277\275b"), B(""), 3, 0 },
	{ "stray continuation", B("\200\200"), B(""), 100000, 0, B("\357\277\275\357\277\275"),
	  false, B("\357\277\275\357\277\275"), B(""), 2, 0 },
	{ "truncated E2 82 at end", B("x\342\202"), B(""), 100000, 0, B("x\357\277\275"), false,
	  B("x\357\277\275"), B(""), 2, 0 },
	{ "truncated E2 82 then ASCII", B("\342\202x"), B(""), 100000, 0, B("\357\277\275x"), false,
	  B("\357\277\275x"), B(""), 2, 0 },
	{ "F0 80: two replacements", B("\360\200"), B(""), 100000, 0, B("\357\277\275\357\277\275"),
	  false, B("\357\277\275\357\277\275"), B(""), 2, 0 },
	{ "surrogate ED A0 80: three", B("\355\240\200"), B(""), 100000, 0,
	  B("\357\277\275\357\277\275\357\277\275"), false,
	  B("\357\277\275\357\277\275\357\277\275"), B(""), 3, 0 },
	{ "overlong C0 AF", B("\300\257"), B(""), 100000, 0, B("\357\277\275\357\277\275"), false,
	  B("\357\277\275\357\277\275"), B(""), 2, 0 },
	{ "overlong E0 80 AF", B("\340\200\257"), B(""), 100000, 0,
	  B("\357\277\275\357\277\275\357\277\275"), false,
	  B("\357\277\275\357\277\275\357\277\275"), B(""), 3, 0 },
	{ "above U+10FFFF", B("\364\220\200\200"), B(""), 100000, 0,
	  B("\357\277\275\357\277\275\357\277\275\357\277\275"), false,
	  B("\357\277\275\357\277\275\357\277\275\357\277\275"), B(""), 4, 0 },
	{ "truncated 4-byte at end", B("ok \360\237\230"), B(""), 100000, 0, B("ok \357\277\275"),
	  false, B("ok \357\277\275"), B(""), 4, 0 },
	{ "F5 and FF", B("\365\377"), B(""), 100000, 0, B("\357\277\275\357\277\275"), false,
	  B("\357\277\275\357\277\275"), B(""), 2, 0 },
	{ "valid emoji and U+10FFFF", B("\360\237\230\200 \364\217\277\277"), B(""), 100000, 0,
	  B("\360\237\230\200 \364\217\277\277"), false, B("\360\237\230\200 \364\217\277\277"),
	  B(""), 3, 0 },
	{ "invalid in stderr, exit 1", B(""), B("err\376\n"), 100000, 1,
	  B("err\357\277\275\n[exit code: 1]"), false, B(""), B("err\357\277\275\n"), 0, 5 },
	{ "partial sequence at end of stdout is not completed by stderr", B("\342\202"), B("\254"),
	  100000, 0, B("\357\277\275\357\277\275"), false, B("\357\277\275"), B("\357\277\275"), 1,
	  1 },
	{ "NBSP and U+3000 stripped", B("\302\240hi\343\200\200"), B(""), 100000, 0, B("hi"), false,
	  B("\302\240hi\343\200\200"), B(""), 4, 0 },
	{ "ZWSP is not whitespace", B("\342\200\213hi\342\200\213"), B(""), 100000, 0,
	  B("\342\200\213hi\342\200\213"), false, B("\342\200\213hi\342\200\213"), B(""), 4, 0 },
	{ "x1c-x1f stripped", B("\034hi\037"), B(""), 100000, 0, B("hi"), false, B("\034hi\037"),
	  B(""), 4, 0 },
	{ "NEL stripped", B("\302\205hi\302\205"), B(""), 100000, 0, B("hi"), false,
	  B("\302\205hi\302\205"), B(""), 4, 0 },
	{ "U+1680 U+2000 U+200A", B("\341\232\200\342\200\200a\342\200\212"), B(""), 100000, 0,
	  B("a"), false, B("\341\232\200\342\200\200a\342\200\212"), B(""), 4, 0 },
	{ "U+2028 U+2029 U+202F U+205F", B("\342\200\250\342\200\257b\342\201\237\342\200\251"),
	  B(""), 100000, 0, B("b"), false, B("\342\200\250\342\200\257b\342\201\237\342\200\251"),
	  B(""), 5, 0 },
	{ "vertical tab and form feed", B("\013\014c\014\013"), B(""), 100000, 0, B("c"), false,
	  B("\013\014c\014\013"), B(""), 5, 0 },
	{ "NBSP only stdout, stderr content", B("\302\240\302\240"), B("\343\200\200e\343\200\200"),
	  100000, 0, B("e"), false, B("\302\240\302\240"), B("\343\200\200e\343\200\200"), 2, 3 },
	{ "NUL inside", B("a\000b"), B(""), 100000, 0, B("a\000b"), false, B("a\000b"), B(""), 3,
	  0 },
	{ "NUL alone is content", B("\000"), B(""), 100000, 0, B("\000"), false, B("\000"), B(""),
	  1, 0 },
	{ "NUL between spaces", B("  \000  "), B(""), 100000, 0, B("\000"), false, B("  \000  "),
	  B(""), 5, 0 },
	{ "max 0 with content", B("abc"), B(""), 0, 0,
	  B("\n[truncated: showing first 0 of 3 chars]"), true, B(""), B(""), 3, 0 },
	{ "max 0 empty", B(""), B(""), 0, 0, B(""), false, B(""), B(""), 0, 0 },
	{ "max 0 whitespace only", B(" \n "), B(""), 0, 0, B(""), false, B(""), B(""), 3, 0 },
	{ "max 0 with exit 1", B("abc"), B(""), 0, 1,
	  B("\n[truncated: showing first 0 of 3 chars]\n[exit code: 1]"), true, B(""), B(""), 3,
	  0 },
	{ "max 0, stderr only", B(""), B(" e "), 0, 0,
	  B("\n[truncated: showing first 0 of 1 chars]"), true, B(""), B(""), 0, 3 },
	{ "max 1", B("abc"), B(""), 1, 0, B("a\n[truncated: showing first 1 of 3 chars]"), true,
	  B("a"), B(""), 3, 0 },
	{ "max 2 (length - 1)", B("abc"), B(""), 2, 0,
	  B("ab\n[truncated: showing first 2 of 3 chars]"), true, B("ab"), B(""), 3, 0 },
	{ "max 3 (exact)", B("abc"), B(""), 3, 0, B("abc"), false, B("abc"), B(""), 3, 0 },
	{ "max 4 (length + 1)", B("abc"), B(""), 4, 0, B("abc"), false, B("abc"), B(""), 3, 0 },
	{ "max exact after strip", B("  abc  "), B(""), 3, 0, B("abc"), false, B("  a"), B(""), 7,
	  0 },
	{ "truncated prefix not re-stripped", B("ab cd"), B(""), 3, 0,
	  B("ab \n[truncated: showing first 3 of 5 chars]"), true, B("ab "), B(""), 5, 0 },
	{ "truncated prefix ends with newline", B("ab\ncd"), B(""), 3, 0,
	  B("ab\n\n[truncated: showing first 3 of 5 chars]"), true, B("ab\n"), B(""), 5, 0 },
	{ "truncation spans stdout into stderr", B("abc"), B("  def"), 5, 0,
	  B("abc  \n[truncated: showing first 5 of 8 chars]"), true, B("abc"), B("  def"), 3, 5 },
	{ "truncation inside stderr leading ws", B("a"), B("     b"), 3, 0,
	  B("a  \n[truncated: showing first 3 of 7 chars]"), true, B("a"), B("   "), 1, 6 },
	{ "stdout whitespace longer than max", B("          "), B("x"), 3, 0, B("x"), false,
	  B("   "), B("x"), 10, 1 },
	{ "stderr whitespace longer than max after stdout", B("x"), B("          "), 3, 0, B("x"),
	  false, B("x"), B("   "), 1, 10 },
	{ "stderr whitespace longer than max, then text", B("x"), B("          y"), 3, 0,
	  B("x  \n[truncated: showing first 3 of 12 chars]"), true, B("x"), B("   "), 1, 11 },
	{ "multibyte truncation",
	  B("\346\227\245\346\234\254\350\252\236\343\203\206\343\202\255\343\202\271\343\203\210"),
	  B(""), 3, 0,
	  B("\346\227\245\346\234\254\350\252\236\n[truncated: showing first 3 of 7 chars]"), true,
	  B("\346\227\245\346\234\254\350\252\236"), B(""), 7, 0 },
	{ "replacement chars truncated", B("\377\376\375"), B(""), 2, 0,
	  B("\357\277\275\357\277\275\n[truncated: showing first 2 of 3 chars]"), true,
	  B("\357\277\275\357\277\275"), B(""), 3, 0 },
	{ "truncated with exit code", B("0123456789"), B(""), 4, 1,
	  B("0123\n[truncated: showing first 4 of 10 chars]\n[exit code: 1]"), true, B("0123"),
	  B(""), 10, 0 },
	{ "truncated, negative exit", B("0123456789"), B(""), 4, -9,
	  B("0123\n[truncated: showing first 4 of 10 chars]\n[exit code: -9]"), true, B("0123"),
	  B(""), 10, 0 },
	{ "long, trailing ws not counted",
	  B("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxx                                                  "),
	  B(""), 100, 0,
	  B("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxx\n[truncated: showing first 100 of 200 chars]"),
	  true,
	  B("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxx"),
	  B(""), 250, 0 },
	{ "long leading ws then text",
	  B("                                                                                      "
	    "                                                                                      "
	    "                                                                                      "
	    "                                          yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"),
	  B(""), 20, 0, B("yyyyyyyyyyyyyyyyyyyy\n[truncated: showing first 20 of 40 chars]"), true,
	  B("                    "), B(""), 340, 0 },
	{ "long CRLF lines",
	  B("line\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline"
	    "\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\n"
	    "line\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline"
	    "\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\nline\015\n"
	    "line\015\nline\015\nline\015\nline\015\nline\015\nline\015\n"),
	  B("err\015\nerr\015\nerr\015\nerr\015\nerr\015\n"), 150, 2,
	  B("line\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nli"
	    "ne\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline"
	    "\nline\n\n[truncated: showing first 150 of 219 chars]\n[exit code: 2]"),
	  true,
	  B("line\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nli"
	    "ne\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline\nline"
	    "\nline\n"),
	  B("err\nerr\nerr\nerr\nerr\n"), 200, 20 },
	{ "mixed scripts", B("h\303\251llo w\303\266rld\015\n"), B("\342\232\240 warn\n"), 100000,
	  1, B("h\303\251llo w\303\266rld\n\342\232\240 warn\n[exit code: 1]"), false,
	  B("h\303\251llo w\303\266rld\n"), B("\342\232\240 warn\n"), 12, 7 },
	{ "mixed scripts truncated", B("h\303\251llo w\303\266rld\015\n"), B("\342\232\240 warn\n"),
	  13, 1,
	  B("h\303\251llo w\303\266rld\n\342\232\240\n[truncated: showing first 13 of 18 "
	    "chars]\n[exit code: 1]"),
	  true, B("h\303\251llo w\303\266rld\n"), B("\342\232\240 warn\n"), 12, 7 },
	{ "stdout only newline, stderr text, max 1", B("\n"), B("ab"), 1, 0,
	  B("a\n[truncated: showing first 1 of 2 chars]"), true, B("\n"), B("a"), 1, 2 },
	{ "total equals max after both strips", B(" ab"), B("cd "), 4, 0, B("abcd"), false,
	  B(" ab"), B("cd "), 3, 3 },
	{ "total max+1 across streams", B(" ab"), B("cde "), 4, 0,
	  B("abcd\n[truncated: showing first 4 of 5 chars]"), true, B(" ab"), B("cde "), 3, 4 },
};

/* How one stream is cut into feeds. */
enum cut { CUT_NONE, CUT_BYTES, CUT_AT };

static void feed(struct capture *c, struct bytes b, enum cut how, size_t at)
{
	switch (how) {
	case CUT_NONE:
		capture_feed(c, b.s, b.n);
		break;
	case CUT_BYTES:
		for (size_t i = 0; i < b.n; i++)
			capture_feed(c, b.s + i, 1);
		break;
	case CUT_AT:
		capture_feed(c, b.s, at);
		capture_feed(c, b.s + at, b.n - at);
		break;
	}
}

static bool same(const char *s, size_t n, struct bytes want)
{
	return n == want.n && memcmp(s, want.s, n) == 0;
}

static void check_row(const struct row *r, enum cut out_how, size_t out_at, enum cut err_how,
		      size_t err_at)
{
	struct capture *out = NULL, *err = NULL;
	_cleanup_free_ char *s = NULL, *so = NULL, *se = NULL;
	size_t n = 0, no = 0, ne = 0;
	bool truncated = !r->truncated;
	cordon_error e;

	cr_assert_eq(capture_new(r->max, &out, &e), 0);
	cr_assert_eq(capture_new(r->max, &err, &e), 0);
	feed(out, r->out, out_how, out_at);
	feed(err, r->err, err_how, err_at);
	capture_end(out);
	capture_end(err);
	cr_assert_eq(output_compose(out, err, r->max, r->code, &s, &n, &truncated, &e), 0, "%s: %s",
		     r->name, e.msg);
	cr_assert_eq(capture_text(out, &so, &no, &e), 0);
	cr_assert_eq(capture_text(err, &se, &ne, &e), 0);

	cr_expect(same(s, n, r->want), "row '%s' (cut %d@%zu / %d@%zu): got [%.*s] (%zu bytes)",
		  r->name, out_how, out_at, err_how, err_at, (int)n, s, n);
	cr_expect_eq(s[n], '\0', "row '%s': result not NUL-terminated", r->name);
	cr_expect_eq(truncated, r->truncated, "row '%s': truncated", r->name);
	cr_expect(same(so, no, r->want_out), "row '%s': stdout text [%.*s]", r->name, (int)no, so);
	cr_expect(same(se, ne, r->want_err), "row '%s': stderr text [%.*s]", r->name, (int)ne, se);
	cr_expect_eq(capture_bytes(out), r->out.n, "row '%s'", r->name);
	cr_expect_eq(capture_bytes(err), r->err.n, "row '%s'", r->name);
	cr_expect_eq(capture_chars(out), r->out_chars, "row '%s': stdout chars", r->name);
	cr_expect_eq(capture_chars(err), r->err_chars, "row '%s': stderr chars", r->name);
	capture_free(out);
	capture_free(err);
}

Test(capture, table)
{
	cr_assert_geq(ARRAY_SIZE(rows), 60);
	for (size_t k = 0; k < ARRAY_SIZE(rows); k++) {
		const struct row *r = &rows[k];

		check_row(r, CUT_NONE, 0, CUT_NONE, 0);
		check_row(r, CUT_BYTES, 0, CUT_BYTES, 0);
		for (size_t i = 0; i <= r->out.n; i++)
			check_row(r, CUT_AT, i, CUT_NONE, 0);
		for (size_t i = 0; i <= r->err.n; i++)
			check_row(r, CUT_NONE, 0, CUT_AT, i);
	}
}

/* Compose out/err fed as given; the result string, or NULL with the test failed. */
static char *compose_cuts(const char *o, size_t on, const size_t *ocuts, size_t nocuts,
			  const char *er, size_t en, int64_t max, int code, size_t *ret_n)
{
	struct capture *out = NULL, *err = NULL;
	cordon_error e;
	size_t prev = 0;
	char *s = NULL;

	cr_assert_eq(capture_new(max, &out, &e), 0);
	cr_assert_eq(capture_new(max, &err, &e), 0);
	for (size_t k = 0; k <= nocuts; k++) {
		size_t at = k < nocuts ? ocuts[k] : on;

		capture_feed(out, o + prev, at - prev);
		prev = at;
	}
	capture_feed(err, er, en);
	capture_end(out);
	capture_end(err);
	cr_assert_eq(output_compose(out, err, max, code, &s, ret_n, NULL, &e), 0, "%s", e.msg);
	capture_free(out);
	capture_free(err);
	return s;
}

/*
 * Three feeds, cut at every pair of byte boundaries, for inputs where a cut can land inside a
 * UTF-8 sequence, between CR and LF, inside an invalid sequence, or where the kept prefix fills
 * up mid-sequence (small max) so that the counting-only path takes over at the cut.
 */
Test(capture, every_pair_of_cuts)
{
	static const struct bytes inputs[] = {
		B("a\r\nb\rc\r\r\n\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \r"),
		B("\xe2\x82\xf0\x80\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80\xf0\x9f\x98"),
		B(" \xc2\xa0\r\n\xe3\x80\x80x\xe2\x80\x83\r\ny\xc2\x85 \r"),
		B("0123456789abcdef\r\n0123456789abcdef\xe2\x82\xac"
		  "0123456789abcdef  \r\n"),
	};
	static const int64_t maxes[] = { 0, 1, 3, 7, 100 };

	for (size_t k = 0; k < ARRAY_SIZE(inputs); k++) {
		for (size_t m = 0; m < ARRAY_SIZE(maxes); m++) {
			const struct bytes *in = &inputs[k];
			_cleanup_free_ char *want = NULL;
			size_t wn;

			want = compose_cuts(in->s, in->n, NULL, 0, "!", 1, maxes[m], 1, &wn);
			for (size_t i = 0; i <= in->n; i++) {
				for (size_t j = i; j <= in->n; j++) {
					size_t cuts[2] = { i, j }, n;
					_cleanup_free_ char *got = NULL;

					got = compose_cuts(in->s, in->n, cuts, 2, "!", 1, maxes[m],
							   1, &n);
					cr_assert(n == wn && memcmp(got, want, n) == 0,
						  "input %zu max %" PRId64 " cuts %zu,%zu: [%.*s] "
						  "vs [%.*s]",
						  k, maxes[m], i, j, (int)n, got, (int)wn, want);
				}
			}
		}
	}
}

/* The reference: o fed one byte at a time (the byte-wise decoder only), er whole. */
static char *compose_bytewise(const char *o, size_t on, const char *er, size_t en, int64_t max,
			      size_t *ret_n)
{
	struct capture *out = NULL, *err = NULL;
	cordon_error e;
	char *s = NULL;

	cr_assert_eq(capture_new(max, &out, &e), 0);
	cr_assert_eq(capture_new(max, &err, &e), 0);
	for (size_t i = 0; i < on; i++)
		capture_feed(out, o + i, 1);
	capture_feed(err, er, en);
	capture_end(out);
	capture_end(err);
	cr_assert_eq(capture_bytes(out), on);
	cr_assert_eq(output_compose(out, err, max, 0, &s, ret_n, NULL, &e), 0, "%s", e.msg);
	capture_free(out);
	capture_free(err);
	return s;
}

/* A small deterministic generator, so that a failure can be replayed. */
static uint32_t rng_next(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*state >> 33);
}

/*
 * Random streams built from tricky pieces, fed whole, byte by byte and in random chunks: the
 * three must agree. Long ASCII pieces make the 8- and 32-byte counting paths run, with chunk
 * and piece boundaries falling anywhere in their words.
 */
Test(capture, random_chunkings_agree)
{
	static const struct bytes pieces[] = {
		B("a"),
		B(" "),
		B("\n"),
		B("\r"),
		B("\r\n"),
		B("\t"),
		B("\0"),
		B("\xc2\xa0"),
		B("\xe3\x80\x80"),
		B("\xe2\x80\x83"),
		B("\xff"),
		B("\x80"),
		B("\xe2\x82"),
		B("\xf0\x80"),
		B("\xed\xa0\x80"),
		B("\xf0\x9f\x98\x80"),
		B("\xf0\x9f\x98"),
		B("\xc3\xa9"),
		B("0123456789abcdefghijklmnopqrstuvwxyzABCDEF"),
		B("                                        "),
		B("word word word word word word word \n"),
	};
	static const int64_t maxes[] = { 0, 1, 5, 64, 1000 };
	uint64_t state = 42;
	char buf[4096];

	for (int iter = 0; iter < 400; iter++) {
		_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
		size_t n = 0, na, nb, nc, prev = 0;
		int64_t max = maxes[rng_next(&state) % ARRAY_SIZE(maxes)];
		size_t cuts[64], ncuts = 0;

		while (n < sizeof(buf) - 64 && rng_next(&state) % 200) {
			const struct bytes *p = &pieces[rng_next(&state) % ARRAY_SIZE(pieces)];

			memcpy(buf + n, p->s, p->n);
			n += p->n;
		}
		while (ncuts < ARRAY_SIZE(cuts) && n) {
			size_t at = prev + rng_next(&state) % 97;

			if (at > n)
				break;
			cuts[ncuts++] = prev = at;
		}
		a = compose_cuts(buf, n, NULL, 0, "x\r", 2, max, 0, &na);
		c = compose_cuts(buf, n, cuts, ncuts, "x\r", 2, max, 0, &nc);
		b = compose_bytewise(buf, n, "x\r", 2, max, &nb);
		cr_assert(na == nb && memcmp(a, b, na) == 0, "iteration %d: whole vs bytes", iter);
		cr_assert(na == nc && memcmp(a, c, na) == 0, "iteration %d: whole vs chunks", iter);
	}
}

/*
 * A flood of plain ASCII turns on the 64-byte path (capture.flood, SSE2): it must count exactly
 * what the byte-wise decoder counts whatever comes next, a CR, a CRLF, a multi-byte or invalid
 * sequence, at many offsets of a 64-byte block, in chunks of several sizes above the 4 KiB
 * that turns it on. Compared with the same bytes fed one at a time.
 */
Test(capture, plain_flood_path_agrees)
{
	static const struct bytes specials[] = {
		B("\r"),       B("\r\n"),	  B("\n"),
		B("\xc3\xa9"), B("\xe2\x82\xac"), B("\xf0\x9f\x98\x80"),
		B("\xff"),     B("\x80"),	  B("\xe2\x82"),
		B(" \t "),
	};
	static const size_t chunks[] = { 5000, 8191, 8192, 8193, 12288, 65536 };
	static char buf[96 * 1024];
	uint64_t state = 7;

	/* Every special right after the first plain chunk, with every chunk size. */
	for (int iter = 0; iter < 120; iter++) {
		_cleanup_free_ char *a = NULL, *b = NULL;
		size_t n = 0, na, nb, cuts[64], ncuts = 0;
		size_t chunk = chunks[(size_t)iter / ARRAY_SIZE(specials) % ARRAY_SIZE(chunks)];
		int64_t max = iter % 3 == 0 ? 5 : 1000;

		/* A plain run long enough to turn the path on, then plain runs and specials. */
		memset(buf, 'a' + iter % 26, 9000);
		n = 9000;
		for (bool first = true; n < sizeof(buf) - 9256; first = false) {
			/* Odd iterations: short runs. Even ones: runs longer than some chunks, so the
			 * path turns on and off again and again. The first special, right where the
			 * path is on, goes through all of them in turn. */
			size_t run = rng_next(&state) % (iter % 2 ? 200 : 9000);
			const struct bytes *sp =
				&specials[first ? (size_t)iter % ARRAY_SIZE(specials)
						: rng_next(&state) % ARRAY_SIZE(specials)];

			memset(buf + n, 'x', run);
			n += run;
			memcpy(buf + n, sp->s, sp->n);
			n += sp->n;
		}
		for (size_t at = chunk; at < n && ncuts < ARRAY_SIZE(cuts); at += chunk)
			cuts[ncuts++] = at;
		a = compose_cuts(buf, n, cuts, ncuts, "", 0, max, 0, &na);
		b = compose_bytewise(buf, n, "", 0, max, &nb);
		cr_assert(na == nb && memcmp(a, b, na) == 0,
			  "iteration %d (chunks of %zu): %.*s vs %.*s", iter, chunk,
			  (int)(na > 120 ? 120 : na), a, (int)(nb > 120 ? 120 : nb), b);
	}
}

/*
 * 100 MB of mostly-ASCII text with CRLF and multi-byte characters, in 64 KiB reads that cut
 * CRLFs and sequences: the counters stay exact, the result is the Python one (checked with
 * python3 on the same bytes), and the capture never holds more than its bound.
 */
Test(capture, hundred_megabytes_bounded, .timeout = 120)
{
	static const char unit[] = "abc\r\n\xc3\xa9\xe2\x82\xac "; /* 11 bytes, 7 chars */
	const size_t units = 95325, repeat = 100, chunk = 65536, max = 1000;
	_cleanup_free_ char *data = NULL, *s = NULL, *want = NULL;
	size_t len = units * (sizeof(unit) - 1), n, mem = 0;
	struct capture *out = NULL, *err = NULL;
	cordon_error e;
	bool truncated;
	FILE *f;
	size_t wn;

	data = malloc(len);
	cr_assert_not_null(data);
	for (size_t i = 0; i < units; i++)
		memcpy(data + i * (sizeof(unit) - 1), unit, sizeof(unit) - 1);
	cr_assert_eq(capture_new((int64_t)max, &out, &e), 0);
	cr_assert_eq(capture_new((int64_t)max, &err, &e), 0);
	for (size_t r = 0; r < repeat; r++) {
		/* Restart the 64 KiB grid at each repeat too: cuts land at varying offsets. */
		for (size_t off = 0; off < len; off += chunk)
			capture_feed(out, data + off, len - off < chunk ? len - off : chunk);
		if (r == 0)
			mem = capture_memory(out);
		cr_assert_leq(capture_memory(out), 8 * max + 512, "capture holds %zu bytes",
			      capture_memory(out));
	}
	cr_expect_eq(capture_memory(out), mem, "the capture grew after the first pass");
	capture_end(out);
	capture_end(err);
	cr_expect_eq(capture_bytes(out), (uint64_t)104857500);
	cr_expect_eq(capture_chars(out), (uint64_t)66727500);
	cr_assert_eq(output_compose(out, err, (int64_t)max, 0, &s, &n, &truncated, &e), 0);
	cr_expect(truncated);

	/* The first 1000 code points of "abc\né€ " repeated, then the note. */
	f = open_memstream(&want, &wn);
	cr_assert_not_null(f);
	for (int i = 0; i < 142; i++)
		fputs("abc\n\xc3\xa9\xe2\x82\xac ", f);
	fputs("abc\n\xc3\xa9\xe2\x82\xac", f); /* 142 * 7 + 6 = 1000 */
	fputs("\n[truncated: showing first 1000 of 66727499 chars]", f);
	fclose(f);
	cr_expect(n == wn && memcmp(s, want, n) == 0, "got [%.*s]", (int)(n > 200 ? 200 : n), s);
	capture_free(out);
	capture_free(err);
}

/*
 * A stream that is whitespace for 20 MB (NBSP and CRs included, so the byte-wise path runs
 * too) and then has one character: only max code points of the whitespace are kept, and the
 * result is just that character.
 */
Test(capture, long_leading_whitespace_bounded, .timeout = 60)
{
	static const char unit[] = "  \t\r\n \xc2\xa0\r\r\n\x0b"; /* 12 bytes, 9 chars */
	const size_t units = 1747627;				  /* ~20 MB */
	struct capture *out = NULL, *err = NULL;
	_cleanup_free_ char *s = NULL, *t = NULL;
	cordon_error e;
	size_t n, tn;
	bool truncated;

	cr_assert_eq(capture_new(10, &out, &e), 0);
	cr_assert_eq(capture_new(10, &err, &e), 0);
	for (size_t i = 0; i < units; i++)
		capture_feed(out, unit, sizeof(unit) - 1);
	capture_feed(out, "x", 1);
	for (size_t i = 0; i < 1000; i++)
		capture_feed(out, unit, sizeof(unit) - 1);
	capture_feed(err, " \n", 2);
	capture_end(out);
	capture_end(err);
	cr_expect_leq(capture_memory(out), 8 * 10 + 512);
	cr_expect_eq(capture_chars(out), (uint64_t)(units + 1000) * 9 + 1);
	cr_assert_eq(output_compose(out, err, 10, 0, &s, &n, &truncated, &e), 0);
	cr_expect(n == 1 && s[0] == 'x', "got [%.*s]", (int)n, s);
	cr_expect_not(truncated);
	cr_assert_eq(capture_text(out, &t, &tn, &e), 0);
	cr_expect(tn == 11 && memcmp(t, "  \t\n \xc2\xa0\n\n\x0b ", 11) == 0, "text [%.*s]",
		  (int)tn, t);
	capture_free(out);
	capture_free(err);
}

/* A short output holds a small buffer, not the whole bound. */
Test(capture, small_output_small_memory)
{
	struct capture *c = NULL;
	cordon_error e;

	cr_assert_eq(capture_new(100000, &c, &e), 0);
	capture_feed(c, "hi\n", 3);
	capture_end(c);
	cr_expect_leq(capture_memory(c), 1024);
	capture_free(c);
}

/* Before capture_end() a pending partial sequence is not part of the text; after, one U+FFFD. */
Test(capture, end_flushes_partial_sequence)
{
	_cleanup_free_ char *before = NULL, *after = NULL, *again = NULL;
	struct capture *c = NULL;
	size_t nb, na, ng;
	cordon_error e;

	cr_assert_eq(capture_new(100, &c, &e), 0);
	capture_feed(c, "ok\xe2\x82", 4);
	cr_assert_eq(capture_text(c, &before, &nb, &e), 0);
	cr_expect(nb == 2 && memcmp(before, "ok", 2) == 0);
	capture_end(c);
	capture_end(c); /* idempotent */
	cr_assert_eq(capture_text(c, &after, &na, &e), 0);
	cr_expect(na == 5 && memcmp(after, "ok\xef\xbf\xbd", 5) == 0);
	cr_expect_eq(capture_chars(c), 3);
	cr_assert_eq(capture_text(c, &again, &ng, &e), 0);
	cr_expect(ng == na && memcmp(again, after, na) == 0);
	capture_free(c);
}

Test(capture, bad_input)
{
	struct capture *c = (struct capture *)0x1, *d = NULL;
	char *s = (char *)0x1;
	cordon_error e = { 0 };
	bool t = true;

	/* Negative max_output: AG2 slices from the end; cordon refuses (docs/compat.md). */
	cr_expect_eq(capture_new(-1, &c, &e), -1);
	cr_expect_eq(e.code, EINVAL);
	cr_expect_str_eq(e.msg, "max_output must be >= 0, not -1");
	cr_expect_eq(c, (struct capture *)0x1, "ret written on failure");
	cr_expect_eq(capture_new(INT64_MAX, &c, &e), -1);
	cr_expect_eq(e.code, EINVAL);
	cr_expect_eq(c, (struct capture *)0x1, "ret written on failure");

	/* A compose asking for more than the captures kept cannot be exact. */
	cr_assert_eq(capture_new(5, &c, &e), 0);
	cr_assert_eq(capture_new(10, &d, &e), 0);
	capture_end(c);
	capture_end(d);
	cr_expect_eq(output_compose(c, d, 6, 0, &s, NULL, &t, &e), -1);
	cr_expect_eq(e.code, EINVAL);
	cr_expect_str_eq(e.msg, "max_output 6 exceeds what was captured");
	cr_expect_eq(output_compose(c, d, -1, 0, &s, NULL, &t, &e), -1);
	cr_expect_eq(e.code, EINVAL);
	cr_expect_eq(s, (char *)0x1, "ret written on failure");
	cr_expect(t, "ret_truncated written on failure");
	/* A smaller max than captured is fine. */
	cr_expect_eq(output_compose(c, d, 4, 0, &s, NULL, NULL, &e), 0);
	cr_expect_str_eq(s, "");
	free(s);
	capture_free(c);
	capture_free(d);
	capture_free(NULL);
}
