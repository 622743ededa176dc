/* SPDX-License-Identifier: MIT */
/*
 * AG2's result string pieces (_format, the timeout message), UTF-8 repair, and the JSON form of
 * a result (SPEC §5). Expected strings come from Python 3.11: AG2's _format, its timeout
 * f-string, bytes.decode("utf-8", "replace") and json.dumps(..., ensure_ascii=False), whose
 * separators jansson's default (non-compact) output matches.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "runtime/capture.h"
#include "runtime/cleanup.h"

struct bytes {
	const char *s;
	size_t n;
};

#define B(lit)                                                                                     \
	{                                                                                          \
		lit, sizeof(lit) - 1                                                               \
	}

static bool same(const char *s, size_t n, struct bytes want)
{
	return n == want.n && memcmp(s, want.s, n) == 0;
}

static const struct format_row {
	struct bytes text;
	int code;
	struct bytes want;
} format_rows[] = {
	{ B(""), 0, B("") },
	{ B("x"), 0, B("x") },
	{ B("x"), 1, B("x\n[exit code: 1]") },
	{ B(""), 1, B("[exit code: 1]") },
	{ B(""), -9, B("[exit code: -9]") },
	{ B("x"), -9, B("x\n[exit code: -9]") },
	{ B("\nabc"), 0, B("\nabc") },
	{ B("\n[truncated: showing first 0 of 3 chars]"), 1,
	  B("\n[truncated: showing first 0 of 3 chars]\n[exit code: 1]") },
	{ B("a\000b"), 2, B("a\000b\n[exit code: 2]") },
	{ B("x"), 255, B("x\n[exit code: 255]") },
	{ B("x"), INT_MIN, B("x\n[exit code: -2147483648]") },
	{ B("x"), INT_MAX, B("x\n[exit code: 2147483647]") },
	{ B("x"), 124, B("x\n[exit code: 124]") },
	{ B("\n"), 3, B("\n\n[exit code: 3]") },
	{ B("h\303\251llo"), -15, B("h\303\251llo\n[exit code: -15]") },
	{ B("[exit code: 1]"), 1, B("[exit code: 1]\n[exit code: 1]") },
};

Test(format, exit_suffix)
{
	for (size_t k = 0; k < ARRAY_SIZE(format_rows); k++) {
		const struct format_row *r = &format_rows[k];
		_cleanup_free_ char *s = NULL;
		cordon_error e;
		size_t n;

		cr_assert_eq(output_format(r->text.s, r->text.n, r->code, &s, &n, &e), 0);
		cr_expect(same(s, n, r->want), "row %zu: got [%.*s]", k, (int)n, s);
		cr_expect_eq(s[n], '\0', "row %zu: not NUL-terminated", k);
	}
}

static const struct timeout_row {
	const char *word, *timeout, *want;
} timeout_rows[] = {
	{ "Command", "1", "Command timed out after 1s\n[exit code: 124]" },
	{ "Command", "1.0", "Command timed out after 1.0s\n[exit code: 124]" },
	{ "Command", "0.5", "Command timed out after 0.5s\n[exit code: 124]" },
	{ "Execution", "60", "Execution timed out after 60s\n[exit code: 124]" },
	/*
	 * {t} is Python's str() of the number AG2 would be given (docs/compat.md, "Timeout
	 * text"): an int for digits alone, else a float, printed as repr(float) prints it.
	 */
	{ "Command", "1.50", "Command timed out after 1.5s\n[exit code: 124]" },
	{ "Command", "2", "Command timed out after 2s\n[exit code: 124]" },
	{ "Command", "2.0", "Command timed out after 2.0s\n[exit code: 124]" },
	{ "Command", "2.000", "Command timed out after 2.0s\n[exit code: 124]" },
	{ "Command", "0.25", "Command timed out after 0.25s\n[exit code: 124]" },
	{ "Command", "10.125", "Command timed out after 10.125s\n[exit code: 124]" },
	{ "Execution", "10.125", "Execution timed out after 10.125s\n[exit code: 124]" },
	{ "Command", "007", "Command timed out after 7s\n[exit code: 124]" },
	{ "Command", "00.50", "Command timed out after 0.5s\n[exit code: 124]" },
	{ "Command", "0.1000000000000000055511151231257827",
	  "Command timed out after 0.1s\n[exit code: 124]" },
	{ "Command", "0.00001", "Command timed out after 1e-05s\n[exit code: 124]" },
	{ "Command", "0.0001", "Command timed out after 0.0001s\n[exit code: 124]" },
	{ "Command", "1000000000.0", "Command timed out after 1000000000.0s\n[exit code: 124]" },
	{ "Command", "1000000000", "Command timed out after 1000000000s\n[exit code: 124]" },
	/* Not plain decimal (the daemon's str() of a JSON real already is Python's): as is. */
	{ "Command", "1e-05", "Command timed out after 1e-05s\n[exit code: 124]" },
	{ "Command", "", "Command timed out after s\n[exit code: 124]" },
};

Test(format, timeout_message)
{
	for (size_t k = 0; k < ARRAY_SIZE(timeout_rows); k++) {
		const struct timeout_row *r = &timeout_rows[k];
		_cleanup_free_ char *s = NULL;
		cordon_error e;
		size_t n;

		cr_assert_eq(output_timeout(r->word, r->timeout, &s, &n, &e), 0);
		cr_expect_str_eq(s, r->want, "row %zu", k);
		cr_expect_eq(n, strlen(r->want), "row %zu", k);
	}
}

Test(format, timeout_bad_input)
{
	char *s = (char *)0x1;
	cordon_error e = { 0 };

	cr_expect_eq(output_timeout("Command", NULL, &s, NULL, &e), -1);
	cr_expect_eq(e.code, EINVAL);
	cr_expect_str_eq(e.msg, "timeout message without a word or a timeout");
	cr_expect_eq(output_timeout(NULL, "1", &s, NULL, &e), -1);
	cr_expect_eq(s, (char *)0x1, "ret written on failure");
}

static const struct repair_row {
	struct bytes in, want;
} repair_rows[] = {
	{ B("ok"), B("ok") },
	{ B(""), B("") },
	{ B("\377"), B("\357\277\275") },
	{ B("a\342\202"), B("a\357\277\275") },
	{ B("\360\200"), B("\357\277\275\357\277\275") },
	{ B("\355\240\200"), B("\357\277\275\357\277\275\357\277\275") },
	{ B("a\000b"), B("a\000b") },
	{ B("\015\n\015"), B("\015\n\015") }, /* no newline translation here */
	{ B("\303\251\303"), B("\303\251\357\277\275") },
	{ B("/tmp/\376\375x"), B("/tmp/\357\277\275\357\277\275x") },
};

Test(format, utf8_repair)
{
	for (size_t k = 0; k < ARRAY_SIZE(repair_rows); k++) {
		const struct repair_row *r = &repair_rows[k];
		_cleanup_free_ char *s = NULL;
		cordon_error e;
		size_t n;

		cr_assert_eq(capture_utf8_repair(r->in.s, r->in.n, &s, &n, &e), 0);
		cr_expect(same(s, n, r->want), "row %zu: got [%.*s]", k, (int)n, s);
		cr_expect_eq(s[n], '\0', "row %zu: not NUL-terminated", k);
	}
}

/* The SPEC §5 example, byte for byte as Python's json.dumps prints it. */
Test(format, json_spec_example)
{
	struct cordon_result r = {
		.output = strdup("hi"),
		.output_len = 2,
		.stdout_text = strdup("hi\n"),
		.stdout_len = 3,
		.stderr_text = strdup(""),
		.stdout_bytes = 3,
		.duration_ms = 4.1,
		.cpu_ms = 1.2,
		.peak_memory_bytes = 1318912,
		.backend = strdup("local"),
		.workdir = strdup("/tmp/cordon-XXXX"),
	};
	_cleanup_free_ char *js = NULL;
	cordon_error e;

	cr_assert_eq(cordon_result_to_json(&r, &js, &e), 0, "%s", e.msg);
	cr_expect_str_eq(js, "{\"output\": \"hi\", \"stdout\": \"hi\\n\", \"stderr\": \"\", "
			     "\"exit_code\": 0, \"signal\": null, \"timed_out\": false, "
			     "\"refused\": null, \"truncated\": false, \"stdout_bytes\": 3, "
			     "\"stderr_bytes\": 0, \"duration_ms\": 4.1, \"cpu_ms\": 1.2, "
			     "\"peak_memory_bytes\": 1318912, \"oom_killed\": false, "
			     "\"backend\": \"local\", \"workdir\": \"/tmp/cordon-XXXX\"}");
	cordon_result_free(&r);
}

/* NUL bytes, escapes, UTF-8 kept as is, nulls, a byte count above 2^32. */
Test(format, json_nul_escapes_nulls)
{
	static const char out[] = "a\0b\n[exit code: -9]", so[] = "a\0b", se[] = "\303\251\t\"\\";
	struct cordon_result r = {
		.output = malloc(sizeof(out)),
		.output_len = sizeof(out) - 1,
		.stdout_text = malloc(sizeof(so)),
		.stdout_len = sizeof(so) - 1,
		.stderr_text = strdup(se),
		.stderr_len = sizeof(se) - 1,
		.exit_code = -9,
		.signal = 9,
		.timed_out = true,
		.refused = strdup("Command not allowed: 'rm'"),
		.truncated = true,
		.stdout_bytes = 5000000000ull,
		.stderr_bytes = 7,
		.duration_ms = 1000.0,
		.cpu_ms = 0.0,
		.peak_memory_bytes = -1,
		.oom_killed = true,
		.backend = strdup("docker"),
	};
	_cleanup_free_ char *js = NULL;
	cordon_error e;

	memcpy(r.output, out, sizeof(out));
	memcpy(r.stdout_text, so, sizeof(so));
	cr_assert_eq(cordon_result_to_json(&r, &js, &e), 0, "%s", e.msg);
	cr_expect_str_eq(
		js,
		"{\"output\": \"a\\u0000b\\n[exit code: -9]\", \"stdout\": \"a\\u0000b\", "
		"\"stderr\": \"\303\251\\t\\\"\\\\\", \"exit_code\": -9, \"signal\": 9, "
		"\"timed_out\": true, \"refused\": \"Command not allowed: 'rm'\", \"truncated\": "
		"true, \"stdout_bytes\": 5000000000, \"stderr_bytes\": 7, \"duration_ms\": 1000.0, "
		"\"cpu_ms\": 0.0, \"peak_memory_bytes\": null, \"oom_killed\": true, \"backend\": "
		"\"docker\", \"workdir\": null}");
	cordon_result_free(&r);
}

/* Parse the reply back with jansson: every key, in order, with its type and value. */
Test(format, json_round_trip)
{
	static const char *const keys[] = { "output",
					    "stdout",
					    "stderr",
					    "exit_code",
					    "signal",
					    "timed_out",
					    "refused",
					    "truncated",
					    "stdout_bytes",
					    "stderr_bytes",
					    "duration_ms",
					    "cpu_ms",
					    "peak_memory_bytes",
					    "oom_killed",
					    "backend",
					    "workdir" };
	static const char out[] = "x\0y \342\234\223";
	struct cordon_result r = {
		.output = malloc(sizeof(out)),
		.output_len = sizeof(out) - 1,
		.exit_code = 3,
		.duration_ms = 12.3456789,
		.cpu_ms = 0.5,
		.peak_memory_bytes = 0,
		.backend = strdup("local"),
		.workdir = strdup("/w"),
	};
	_cleanup_free_ char *js = NULL;
	json_error_t jerr;
	cordon_error e;
	json_t *o, *v;
	void *it;
	size_t k = 0;

	memcpy(r.output, out, sizeof(out));
	cr_assert_eq(cordon_result_to_json(&r, &js, &e), 0, "%s", e.msg);
	cr_expect_null(strchr(js, '\n'), "one line");
	o = json_loads(js, JSON_ALLOW_NUL, &jerr);
	cr_assert_not_null(o, "%s", jerr.text);
	for (it = json_object_iter(o); it; it = json_object_iter_next(o, it), k++) {
		cr_assert_lt(k, ARRAY_SIZE(keys));
		cr_expect_str_eq(json_object_iter_key(it), keys[k]);
	}
	cr_expect_eq(k, ARRAY_SIZE(keys));
	v = json_object_get(o, "output");
	cr_expect(json_string_length(v) == sizeof(out) - 1 &&
		  memcmp(json_string_value(v), out, sizeof(out) - 1) == 0);
	cr_expect_str_eq(json_string_value(json_object_get(o, "stdout")), "");
	cr_expect_eq(json_integer_value(json_object_get(o, "exit_code")), 3);
	cr_expect(json_is_null(json_object_get(o, "signal")));
	cr_expect(json_is_false(json_object_get(o, "timed_out")));
	cr_expect(json_is_null(json_object_get(o, "refused")));
	cr_expect(json_is_real(json_object_get(o, "duration_ms")));
	cr_expect_float_eq(json_real_value(json_object_get(o, "duration_ms")), 12.346, 1e-9);
	cr_expect(json_is_integer(json_object_get(o, "peak_memory_bytes")));
	cr_expect_eq(json_integer_value(json_object_get(o, "peak_memory_bytes")), 0);
	cr_expect_str_eq(json_string_value(json_object_get(o, "workdir")), "/w");
	json_decref(o);
	cordon_result_free(&r);
}

/*
 * Strings that did not come through the capture may be any bytes: a workdir path, a refusal
 * quoting the command. They are repaired, not a reason to fail the whole reply. Times JSON
 * cannot hold are null.
 */
Test(format, json_repairs_and_non_finite)
{
	struct cordon_result r = {
		.refused = strdup("Command not allowed: '\377'"),
		.workdir = strdup("/tmp/\376x"),
		.duration_ms = NAN,
		.cpu_ms = INFINITY,
		.peak_memory_bytes = -1,
	};
	_cleanup_free_ char *js = NULL;
	cordon_error e;

	cr_assert_eq(cordon_result_to_json(&r, &js, &e), 0, "%s", e.msg);
	cr_expect_str_eq(js,
			 "{\"output\": \"\", \"stdout\": \"\", \"stderr\": \"\", "
			 "\"exit_code\": 0, \"signal\": null, \"timed_out\": false, "
			 "\"refused\": \"Command not allowed: '\357\277\275'\", "
			 "\"truncated\": false, \"stdout_bytes\": 0, \"stderr_bytes\": 0, "
			 "\"duration_ms\": null, \"cpu_ms\": null, \"peak_memory_bytes\": null, "
			 "\"oom_killed\": false, \"backend\": null, "
			 "\"workdir\": \"/tmp/\357\277\275x\"}");
	cordon_result_free(&r);
}

Test(format, result_free)
{
	struct cordon_result r = {
		.output = strdup("x"),
		.stdout_text = strdup("x"),
		.refused = strdup("no"),
		.exit_code = 5,
		.truncated = true,
	};

	cordon_result_free(NULL);
	cordon_result_free(&r);
	cr_expect_null(r.output);
	cr_expect_null(r.stdout_text);
	cr_expect_null(r.refused);
	cr_expect_eq(r.exit_code, 0);
	cr_expect_not(r.truncated);
	cr_expect_eq(r.peak_memory_bytes, -1);
	cordon_result_free(&r); /* twice is harmless */
}
