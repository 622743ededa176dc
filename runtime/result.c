/* SPDX-License-Identifier: MIT */
/* struct cordon_result: freeing it, and its JSON form (SPEC §5). */
#include <cordon/cordon.h>

#include "runtime/capture.h"
#include "runtime/cleanup.h"
#include "runtime/result.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

void cordon_result_free(struct cordon_result *r)
{
	if (!r)
		return;
	free(r->output);
	free(r->stdout_text);
	free(r->stderr_text);
	free(r->refused);
	free(r->backend);
	free(r->workdir);
	memset(r, 0, sizeof(*r));
	/* "unknown", so that a freed result reused as a fresh one does not claim 0 bytes */
	r->peak_memory_bytes = -1;
}

/*
 * An output field. The capture guarantees valid UTF-8, but the text may hold NUL bytes (a
 * command can print them), hence the length. A result that never got its text is "" so that
 * clients can rely on the field being a string.
 */
static json_t *text(const char *s, size_t len)
{
	return s ? json_stringn(s, len) : json_string("");
}

/*
 * A C string that did not come through the capture: a workdir path, a refusal quoting the
 * command, a backend name, an error message. Paths and commands are bytes, not necessarily
 * UTF-8, and one bad byte must not turn a whole reply into an error, so invalid sequences
 * become U+FFFD with the capture's rules.
 */
json_t *result_json_text(const char *s)
{
	_cleanup_free_ char *fixed = NULL;
	size_t len;
	json_t *j;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j;
	if (capture_utf8_repair(s, strlen(s), &fixed, &len, NULL) < 0)
		return NULL;
	return json_stringn(fixed, len);
}

/*
 * Milliseconds with microsecond resolution: more digits would be noise. jansson cannot encode
 * NaN or infinity, and neither can JSON, so those are null.
 */
static json_t *ms(double v)
{
	if (!isfinite(v))
		return json_null();
	return json_real(round(v * 1000.0) / 1000.0);
}

/* JSON integers are int64 in jansson; byte counts cannot reach that, but do not wrap if so. */
static json_t *count(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

int cordon_result_to_json(const struct cordon_result *r, char **ret_json, cordon_error *e)
{
	json_t *o = json_object();
	char *s;
	int bad = 0;

	if (!o)
		return cordon_err(e, ENOMEM, "out of memory");
	/*
	 * Key order is part of the format (SPEC §5). json_object_set_new() with a NULL value
	 * (allocation or encoding failure) returns -1, so every failure lands in `bad`.
	 */
	bad |= json_object_set_new(o, "output", text(r->output, r->output_len));
	bad |= json_object_set_new(o, "stdout", text(r->stdout_text, r->stdout_len));
	bad |= json_object_set_new(o, "stderr", text(r->stderr_text, r->stderr_len));
	bad |= json_object_set_new(o, "exit_code", json_integer(r->exit_code));
	bad |= json_object_set_new(o, "signal", r->signal ? json_integer(r->signal) : json_null());
	bad |= json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
	bad |= json_object_set_new(o, "refused", result_json_text(r->refused));
	bad |= json_object_set_new(o, "truncated", json_boolean(r->truncated));
	bad |= json_object_set_new(o, "stdout_bytes", count(r->stdout_bytes));
	bad |= json_object_set_new(o, "stderr_bytes", count(r->stderr_bytes));
	bad |= json_object_set_new(o, "duration_ms", ms(r->duration_ms));
	bad |= json_object_set_new(o, "cpu_ms", ms(r->cpu_ms));
	bad |= json_object_set_new(o, "peak_memory_bytes",
				   r->peak_memory_bytes >= 0 ? json_integer(r->peak_memory_bytes)
							     : json_null());
	bad |= json_object_set_new(o, "oom_killed", json_boolean(r->oom_killed));
	bad |= json_object_set_new(o, "backend", result_json_text(r->backend));
	bad |= json_object_set_new(o, "workdir", result_json_text(r->workdir));
	if (bad) {
		json_decref(o);
		return cordon_err(e, EINVAL, "result: cannot encode as JSON (invalid UTF-8?)");
	}
	/*
	 * Default separators (", " and ": ") and no indentation give the one-line form of the
	 * SPEC's example; no JSON_ENSURE_ASCII, so text stays readable UTF-8. 15 significant
	 * digits print 4.1 as 4.1 rather than 4.0999999999999996.
	 */
	s = json_dumps(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	json_decref(o);
	if (!s)
		return cordon_err(e, ENOMEM, "result: JSON encoding failed");
	*ret_json = s;
	return 0;
}
