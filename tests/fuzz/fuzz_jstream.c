/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the Daytona toolbox's streamed execute answer
 * (backends/daytona/jstream.c), which a remote server controls entirely.
 *
 * Input: 4 bytes choose the chunk sizes (cycled: 1 + byte), then the body. The body is fed
 * whole and in those chunks; the two must agree (success or the same error, the bytes sent to
 * the sink, the exit code). And when jansson accepts the body as the object the reader expects
 * (an integer exit code, a string or null result, no duplicate keys), the reader must accept it
 * too and decode the same result and exit code.
 */
#define _GNU_SOURCE
#include "tests/fuzz/fuzz.h"
#include "backends/daytona/jstream.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

struct sink {
	char *p;
	size_t n;
};

static void collect(void *arg, const char *buf, size_t n)
{
	struct sink *s = arg;

	CHECK(n > 0);
	s->p = realloc(s->p, s->n + n + 1);
	CHECK(s->p);
	memcpy(s->p + s->n, buf, n);
	s->n += n;
}

struct outcome {
	int rc;
	struct sink out;
	bool have_exit;
	long long exit_code;
	const char *error;
};

static void run(const char *body, size_t n, const unsigned char *sizes, struct outcome *o)
{
	struct jstream j;
	size_t at = 0, k = 0;

	memset(o, 0, sizeof(*o));
	jstream_init(&j, collect, &o->out);
	o->rc = 0;
	while (at < n && o->rc == 0) {
		size_t len = sizes ? 1 + (size_t)sizes[k++ % 4] : n;

		if (len > n - at)
			len = n - at;
		o->rc = jstream_feed(&j, body + at, len);
		at += len;
	}
	if (o->rc == 0)
		o->rc = jstream_end(&j);
	if (o->rc == 0)
		o->have_exit = jstream_exit_code(&j, &o->exit_code);
	o->error = j.error;
}

/* The exit code and result jansson finds, when the body is an answer the reader must take. */
static bool expected(const char *body, size_t n, struct outcome *ret)
{
	json_error_t je;
	json_t *o;
	json_t *ex, *code, *res;
	bool ok;

	/*
	 * JSON has no raw NUL byte anywhere (in a string it is escaped, \u0000), and the reader
	 * refuses one; jansson takes one right after a number as the number's end, so that
	 * {"code":-2<NUL>} loads as {"code":-2} (found by fuzz_jstream, jansson 2.14). It is no
	 * oracle for such a body.
	 */
	if (memchr(body, 0, n))
		return false;
	o = json_loadb(body, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!o)
		return false;
	ex = json_object_get(o, "exitCode");
	code = json_object_get(o, "code");
	res = json_object_get(o, "result");
	ok = json_is_object(o) && (!ex || json_is_integer(ex)) &&
	     (!code || json_is_integer(code)) && (!res || json_is_string(res) || json_is_null(res));
	if (ok) {
		memset(ret, 0, sizeof(*ret));
		ret->have_exit = ex || code;
		ret->exit_code = json_integer_value(ex ? ex : code);
		if (json_is_string(res)) {
			ret->out.n = json_string_length(res);
			ret->out.p = malloc(ret->out.n + 1);
			CHECK(ret->out.p);
			memcpy(ret->out.p, json_string_value(res), ret->out.n);
		}
	}
	json_decref(o);
	return ok;
}

static bool same(const struct outcome *a, const struct outcome *b)
{
	return a->rc == b->rc && a->out.n == b->out.n &&
	       (!a->out.n || memcmp(a->out.p, b->out.p, a->out.n) == 0) &&
	       a->have_exit == b->have_exit && (!a->have_exit || a->exit_code == b->exit_code);
}

/*
 * Fed whole or in chunks, the reader decides the same way at the same byte. On an error the
 * sink may have had more or less of the result (each feed flushes what it decoded, and a
 * failing feed does not), so one output is then a prefix of the other.
 */
static bool same_chunked(const struct outcome *a, const struct outcome *b)
{
	size_t n = a->out.n < b->out.n ? a->out.n : b->out.n;

	if (a->rc == 0 || b->rc == 0)
		return same(a, b);
	return a->error && b->error && strcmp(a->error, b->error) == 0 &&
	       (!n || memcmp(a->out.p, b->out.p, n) == 0);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct outcome whole, chunked, want = { 0 };
	const char *body = (const char *)data + 4;
	size_t n;

	if (size < 4)
		return 0;
	n = size - 4;
	run(body, n, NULL, &whole);
	run(body, n, data, &chunked);
	CHECK(same_chunked(&whole, &chunked));
	/* 64 levels is the reader's own limit on what it skips; jansson allows more. */
	if (expected(body, n, &want) &&
	    !(whole.error && strcmp(whole.error, "value nested too deep") == 0)) {
		if (!same(&whole, &want)) {
			fprintf(stderr,
				"jstream rc %d exit %d/%lld result %zu bytes; jansson exit %d/%lld "
				"result %zu bytes\n",
				whole.rc, whole.have_exit, whole.exit_code, whole.out.n,
				want.have_exit, want.exit_code, want.out.n);
			CHECK(!"jstream disagrees with jansson");
		}
	}
	free(want.out.p);
	free(whole.out.p);
	free(chunked.out.p);
	return 0;
}
