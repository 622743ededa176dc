/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the output capture (runtime/capture.c) and the result it builds
 * (output_compose, capture_fill_result, cordon_result_to_json in runtime/result.c).
 *
 * Input: byte 0 picks max_output, byte 1 the exit code, byte 2 bit 0 a timeout; then records
 * [ctl][len][len bytes]: ctl bit 0 is the stream (stdout, stderr), ctl >> 1 how many times
 * the bytes are fed in a row (so a small input makes a long line), each time in one piece.
 *
 * Beyond crashes it checks what the capture promises, against a naive reference that holds
 * everything: AG2's strip(decode(out) + decode(err))[:max] with the truncation note, the
 * per-stream texts (the first max code points), the byte and code point counts, the memory
 * bound, valid UTF-8 everywhere, and a JSON reply that parses back to the same output.
 */
#define _GNU_SOURCE
#include "tests/fuzz/fuzz.h"
#include "policy/policy.h"
#include "runtime/capture.h"
#include "runtime/profile.h"
#include "runtime/pynum.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* A decoded, newline-translated stream: code points, as the reference sees it. */
struct cps {
	uint32_t *v;
	size_t n, cap;
};

static void cps_add(struct cps *c, uint32_t cp)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		CHECK(c->v);
	}
	c->v[c->n++] = cp;
}

/* Decode valid UTF-8 (as capture_utf8_repair leaves it); NUL is a character like any other. */
static uint32_t u8_next(const unsigned char *s, size_t n, size_t *i)
{
	unsigned char b = s[*i];
	uint32_t cp;
	size_t k;

	if (b < 0x80) {
		(*i)++;
		return b;
	}
	k = b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
	cp = b & (0x3f >> k);
	CHECK(*i + k < n + 1);
	for (size_t j = 1; j <= k; j++) {
		CHECK((s[*i + j] & 0xc0) == 0x80);
		cp = cp << 6 | (s[*i + j] & 0x3f);
	}
	*i += k + 1;
	return cp;
}

/* The reference decode: Python's errors="replace" (the repair), then universal newlines. */
static void reference_decode(const unsigned char *raw, size_t n, struct cps *ret)
{
	char *fixed = NULL;
	size_t len, i = 0;
	bool cr = false;

	CHECK(capture_utf8_repair((const char *)raw, n, &fixed, &len, NULL) == 0);
	while (i < len) {
		uint32_t cp = u8_next((const unsigned char *)fixed, len, &i);

		if (cp == '\n' && cr) {
			cr = false;
			continue;
		}
		cr = cp == '\r';
		cps_add(ret, cr ? '\n' : cp);
	}
	free(fixed);
}

static size_t encode(uint32_t cp, char *s)
{
	if (cp < 0x80) {
		s[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		s[0] = (char)(0xc0 | cp >> 6);
		s[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		s[0] = (char)(0xe0 | cp >> 12);
		s[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	s[0] = (char)(0xf0 | cp >> 18);
	s[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	s[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	s[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Code points [from, to) of c as UTF-8, malloc'd (len in *ret_len). */
static char *encode_range(const struct cps *c, size_t from, size_t to, size_t *ret_len)
{
	char *s = malloc(4 * (to - from) + 1);
	size_t len = 0;

	CHECK(s);
	for (size_t i = from; i < to; i++)
		len += encode(c->v[i], s + len);
	s[len] = '\0';
	*ret_len = len;
	return s;
}

/* AG2: output = (out + err).strip(); output[:max] + note when longer; then _format. */
static char *reference_output(const struct cps *out, const struct cps *err, size_t max,
			      int exit_code, size_t *ret_len, bool *ret_truncated)
{
	struct cps all = { 0 };
	size_t a = 0, z, len;
	char *text, *full;

	for (size_t i = 0; i < out->n; i++)
		cps_add(&all, out->v[i]);
	for (size_t i = 0; i < err->n; i++)
		cps_add(&all, err->v[i]);
	z = all.n;
	while (a < z && py_isspace(all.v[a]))
		a++;
	while (z > a && py_isspace(all.v[z - 1]))
		z--;
	*ret_truncated = z - a > max;
	text = encode_range(&all, a, *ret_truncated ? a + max : z, &len);
	if (*ret_truncated) {
		char note[128];
		int k = snprintf(note, sizeof(note),
				 "\n[truncated: showing first %zu of %zu chars]", max, z - a);

		text = realloc(text, len + (size_t)k + 1);
		CHECK(text);
		memcpy(text + len, note, (size_t)k + 1);
		len += (size_t)k;
	}
	CHECK(output_format(text, len, exit_code, &full, ret_len, NULL) == 0);
	free(text);
	free(all.v);
	return full;
}

/*
 * The timeout message quotes the timeout as Python's str() of the number its text denotes: the
 * text is taken from the input (the daemon passes a request's text through), and whatever
 * pynum makes of it must read back as the same number. The first 8 bytes, as a double, check
 * Python's repr() the same way (the shortest text that reads back).
 */
static void check_timeout_text(struct cordon_profile *p, const unsigned char *d, size_t n)
{
	static const char tail[] = "s\n[exit code: 124]";
	char text[48], py[64], *msg;
	size_t len = n < sizeof(text) - 1 ? n : sizeof(text) - 1;
	double v;

	memcpy(text, d, len);
	text[len] = '\0';
	if (pynum_decimal_str(text, py, sizeof(py)))
		CHECK(strtod(py, NULL) == strtod(text, NULL));
	CHECK(output_timeout("Command", text, &msg, &len, NULL) == 0);
	CHECK(strncmp(msg, "Command timed out after ", 24) == 0 && len >= strlen(tail) &&
	      strcmp(msg + len - strlen(tail), tail) == 0);
	free(msg);
	/* Every front end takes only a decimal text (profile_parse_seconds, the daemon's
	 * get_timeout), so only such a text reaches a result's JSON. */
	if (profile_parse_seconds(text, &v, NULL) == 0) {
		free(p->timeout_text);
		p->timeout_text = strdup(text);
		CHECK(p->timeout_text);
	}
	if (n >= sizeof(v)) {
		memcpy(&v, d, sizeof(v));
		pynum_float_repr(v, py, sizeof(py));
		if (isfinite(v))
			CHECK(strtod(py, NULL) == v);
	}
}

static const int64_t max_table[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 64, 100, 1000 };

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct capture *cap[2] = { NULL, NULL };
	unsigned char *raw[2] = { NULL, NULL };
	size_t rawlen[2] = { 0, 0 }, rawcap[2] = { 0, 0 };
	struct cps ref[2] = { { 0 }, { 0 } };
	struct cordon_profile *p = NULL;
	struct cordon_result r = { 0 };
	char *want, *json;
	size_t want_len;
	bool want_trunc, timed_out;
	int64_t max;
	int exit_code;
	size_t i;

	if (size < 3)
		return 0;
	max = max_table[data[0] & 15];
	exit_code = (int)(signed char)data[1];
	timed_out = data[2] & 1;
	CHECK(capture_new(max, &cap[0], NULL) == 0);
	CHECK(capture_new(max, &cap[1], NULL) == 0);

	for (i = 3; i + 2 <= size;) {
		int s = data[i] & 1, times = data[i] >> 1;
		size_t n = data[i + 1];
		const unsigned char *chunk = data + i + 2;

		if (n > size - i - 2)
			n = size - i - 2;
		i += 2 + n;
		for (int t = 0; t <= times; t++) {
			capture_feed(cap[s], chunk, n);
			if (rawlen[s] + n > rawcap[s]) {
				rawcap[s] = 2 * (rawlen[s] + n);
				raw[s] = realloc(raw[s], rawcap[s]);
				CHECK(raw[s]);
			}
			if (n)
				memcpy(raw[s] + rawlen[s], chunk, n);
			rawlen[s] += n;
			/* The bound holds at every point, not only at the end. */
			CHECK(capture_memory(cap[s]) <= 8 * (size_t)max + 8 + 1024);
		}
	}

	for (int s = 0; s < 2; s++) {
		char *text;
		size_t len, ref_len;
		char *ref_text;

		capture_end(cap[s]);
		capture_end(cap[s]); /* idempotent */
		reference_decode(raw[s], rawlen[s], &ref[s]);
		CHECK(capture_bytes(cap[s]) == rawlen[s]);
		CHECK(capture_chars(cap[s]) == ref[s].n);
		CHECK(capture_text(cap[s], &text, &len, NULL) == 0);
		CHECK(fuzz_valid_utf8(text, len));
		ref_text = encode_range(&ref[s], 0, ref[s].n < (size_t)max ? ref[s].n : (size_t)max,
					&ref_len);
		CHECK(len == ref_len && memcmp(text, ref_text, len) == 0);
		free(text);
		free(ref_text);
	}

	/* Every max_output up to the captures' own gives AG2's string. */
	for (int64_t m = 0; m <= max; m += max > 20 ? max / 7 + 1 : 1) {
		char *got;
		size_t got_len;
		bool trunc;

		CHECK(output_compose(cap[0], cap[1], m, exit_code, &got, &got_len, &trunc, NULL) ==
		      0);
		want = reference_output(&ref[0], &ref[1], (size_t)m, exit_code, &want_len,
					&want_trunc);
		CHECK(got_len == want_len && memcmp(got, want, got_len) == 0);
		CHECK(trunc == want_trunc);
		CHECK(fuzz_valid_utf8(got, got_len));
		free(got);
		free(want);
	}
	CHECK(output_compose(cap[0], cap[1], max + 1, 0, &want, NULL, NULL, NULL) < 0);

	/* The result as every backend fills it, and its JSON form. */
	CHECK(cordon_profile_new(&p, NULL) == 0);
	p->max_output = max;
	if (timed_out)
		check_timeout_text(p, data + 3, size - 3);
	r.exit_code = exit_code;
	r.peak_memory_bytes = -1;
	CHECK(capture_fill_result(cap[0], cap[1], p, timed_out, "Command", &r, NULL) == 0);
	CHECK(cordon_result_to_json(&r, &json, NULL) == 0);
	{
		json_error_t je;
		json_t *o = json_loads(json, JSON_ALLOW_NUL, &je);
		json_t *out = json_object_get(o, "output");

		CHECK(o && json_is_string(out));
		CHECK(json_string_length(out) == r.output_len);
		CHECK(memcmp(json_string_value(out), r.output, r.output_len) == 0);
		CHECK((uint64_t)json_integer_value(json_object_get(o, "stdout_bytes")) ==
		      rawlen[0]);
		json_decref(o);
	}
	free(json);
	cordon_result_free(&r);
	cordon_profile_free(p);

	for (int s = 0; s < 2; s++) {
		capture_free(cap[s]);
		free(raw[s]);
		free(ref[s].v);
	}
	return 0;
}
