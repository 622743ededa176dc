/* SPDX-License-Identifier: MIT */
/* The incremental reader of the Daytona toolbox's execute answer (backends/daytona/jstream.c). */
#include "backends/daytona/jstream.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	char *p;
	size_t n;
};

static void sink(void *arg, const char *s, size_t n)
{
	struct buf *b = arg;

	b->p = realloc(b->p, b->n + n + 1);
	cr_assert_not_null(b->p);
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

/* Parse text fed in pieces of `step` bytes; the decoded result in *out. */
static int parse(const char *text, size_t len, size_t step, struct buf *out, long long *code,
		 bool *have_code)
{
	struct jstream j;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	sink(out, "", 0);
	jstream_init(&j, sink, out);
	for (size_t i = 0; i < len && rc == 0; i += step)
		rc = jstream_feed(&j, text + i, len - i < step ? len - i : step);
	if (rc == 0)
		rc = jstream_end(&j);
	*have_code = jstream_exit_code(&j, code);
	return rc;
}

static void expect(const char *text, const char *result, size_t result_len, long long code)
{
	size_t len = strlen(text);

	/* Every chunking, down to one byte at a time, gives the same answer. */
	for (size_t step = 1; step <= len; step++) {
		struct buf out;
		long long c = -99;
		bool have = false;

		cr_assert_eq(parse(text, len, step, &out, &c, &have), 0, "%s (step %zu)", text,
			     step);
		cr_assert(have, "%s: no exit code", text);
		cr_assert_eq(c, code, "%s (step %zu): code %lld", text, step, c);
		cr_assert_eq(out.n, result_len, "%s (step %zu): %zu bytes", text, step, out.n);
		cr_assert(memcmp(out.p, result, result_len) == 0, "%s (step %zu): '%s'", text, step,
			  out.p);
		free(out.p);
	}
}

static void expect_error(const char *text)
{
	size_t len = strlen(text);

	for (size_t step = 1; step <= len; step++) {
		struct buf out;
		long long c;
		bool have;

		cr_assert_eq(parse(text, len, step, &out, &c, &have), -1, "%s (step %zu) parsed",
			     text, step);
		free(out.p);
	}
}

Test(jstream, plain)
{
	expect("{\"exitCode\":0,\"result\":\"hi\\n\"}", "hi\n", 3, 0);
	expect("{\"result\":\"out\",\"exitCode\":7}", "out", 3, 7);
	expect(" { \"exitCode\" : -1 , \"result\" : \"\" } \n", "", 0, -1);
}

Test(jstream, escapes)
{
	expect("{\"exitCode\":0,\"result\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"}",
	       "a\"b\\c/d\b\f\n\r\t", 12, 0);
	/* \u escapes: ASCII, NUL, 2- and 3-byte UTF-8, a surrogate pair (U+1F600). */
	expect("{\"exitCode\":0,\"result\":\"\\u0041\\u0000\\u00e9\\u20AC\\ud83d\\ude00\"}",
	       "A\0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 11, 0);
	/* Raw UTF-8 passes through as it is. */
	expect("{\"exitCode\":0,\"result\":\"\xc3\xa9t\xc3\xa9\"}", "\xc3\xa9t\xc3\xa9", 5, 0);
}

Test(jstream, lone_surrogates_become_replacement)
{
	/* high then a plain char; a low alone; high then high then low */
	expect("{\"exitCode\":0,\"result\":\"\\ud83dx\"}", "\xef\xbf\xbdx", 4, 0);
	expect("{\"exitCode\":0,\"result\":\"\\ude00\"}", "\xef\xbf\xbd", 3, 0);
	expect("{\"exitCode\":0,\"result\":\"\\ud83d\\ud83d\\ude00\"}",
	       "\xef\xbf\xbd\xf0\x9f\x98\x80", 7, 0);
	/* high at the end of the string */
	expect("{\"exitCode\":0,\"result\":\"a\\ud83d\"}", "a\xef\xbf\xbd", 4, 0);
}

Test(jstream, other_keys_are_skipped)
{
	expect("{\"x\":{\"result\":\"no\",\"a\":[1,{\"b\":\"}\"}]},\"result\":\"yes\",\"y\":true,"
	       "\"z\":null,\"w\":\"q\\\"\",\"exitCode\":3,\"n\":-1.5e3}",
	       "yes", 3, 3);
	/* a key with an escape is not "result" even when it decodes to it */
	expect("{\"res\\u0075lt\":\"no\",\"result\":\"ok\",\"exitCode\":0}", "ok", 2, 0);
	/* a long key */
	expect("{\"resultresultresultresultresultresultresultresult\":\"no\",\"exitCode\":1}", "",
	       0, 1);
}

Test(jstream, code_is_the_fallback)
{
	expect("{\"code\":5,\"result\":\"r\"}", "r", 1, 5);
	expect("{\"code\":5,\"exitCode\":6,\"result\":\"r\"}", "r", 1, 6);
	expect("{\"exitCode\":6,\"code\":5}", "", 0, 6);
	/* null result and null exit code with a code */
	expect("{\"exitCode\":null,\"code\":2,\"result\":null}", "", 0, 2);
}

Test(jstream, no_exit_code)
{
	struct buf out;
	long long c;
	bool have = true;
	const char *t = "{\"result\":\"x\"}";

	cr_assert_eq(parse(t, strlen(t), 3, &out, &c, &have), 0);
	cr_assert_not(have);
	free(out.p);
}

Test(jstream, malformed)
{
	expect_error("");
	expect_error("[]");
	expect_error("{\"result\":\"x\"");
	expect_error("{\"result\":5,\"exitCode\":0}");
	expect_error("{\"result\":\"\\x\",\"exitCode\":0}");
	expect_error("{\"result\":\"\\u12g4\",\"exitCode\":0}");
	expect_error("{\"exitCode\":1.5,\"result\":\"\"}");
	expect_error("{\"exitCode\":99999999999999999999999,\"result\":\"\"}");
	expect_error("{\"exitCode\":0 \"result\":\"\"}");
	expect_error("{\"exitCode\":0} x");
	expect_error("{\"exitCode\" 0}");
	expect_error("{exitCode:0}");
}

Test(jstream, large_result_in_one_piece_is_passed_through)
{
	size_t n = 1 << 20;
	char *text = malloc(n + 64);
	struct buf out;
	long long c;
	bool have;
	size_t len;

	cr_assert_not_null(text);
	len = (size_t)sprintf(text, "{\"exitCode\":0,\"result\":\"");
	memset(text + len, 'a', n);
	len += n;
	len += (size_t)sprintf(text + len, "\"}");
	cr_assert_eq(parse(text, len, len, &out, &c, &have), 0);
	cr_assert_eq(out.n, n);
	cr_assert_eq(out.p[0], 'a');
	cr_assert_eq(out.p[n - 1], 'a');
	free(out.p);
	free(text);
}
