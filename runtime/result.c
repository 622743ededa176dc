/* SPDX-License-Identifier: MIT */
/* struct cordon_result: freeing it, and its JSON form (SPEC §5). */
#define _GNU_SOURCE
#include <cordon/cordon.h>

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
	r->peak_memory_bytes = -1;
}

/* A string that may hold NUL bytes (the command's output can); NULL gives JSON null. */
static json_t *str_or_null(const char *s, size_t len)
{
	return s ? json_stringn(s, len) : json_null();
}

/* Milliseconds with microsecond resolution: more digits would be noise. */
static json_t *ms(double v)
{
	return json_real(round(v * 1000.0) / 1000.0);
}

int cordon_result_to_json(const struct cordon_result *r, char **ret_json, cordon_error *e)
{
	json_t *o = json_object();
	char *s;
	int bad = 0;

	if (!o)
		return cordon_err(e, ENOMEM, "out of memory");
	/* Key order is part of the format (SPEC §5); json_object_set_new keeps insertion order
	 * with JSON_PRESERVE_ORDER. */
	bad |= json_object_set_new(o, "output", str_or_null(r->output, r->output_len));
	bad |= json_object_set_new(o, "stdout", str_or_null(r->stdout_text, r->stdout_len));
	bad |= json_object_set_new(o, "stderr", str_or_null(r->stderr_text, r->stderr_len));
	bad |= json_object_set_new(o, "exit_code", json_integer(r->exit_code));
	bad |= json_object_set_new(o, "signal", r->signal ? json_integer(r->signal) : json_null());
	bad |= json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
	bad |= json_object_set_new(o, "refused",
				   r->refused ? json_string(r->refused) : json_null());
	bad |= json_object_set_new(o, "truncated", json_boolean(r->truncated));
	bad |= json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)r->stdout_bytes));
	bad |= json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)r->stderr_bytes));
	bad |= json_object_set_new(o, "duration_ms", ms(r->duration_ms));
	bad |= json_object_set_new(o, "cpu_ms", ms(r->cpu_ms));
	bad |= json_object_set_new(o, "peak_memory_bytes",
				   r->peak_memory_bytes >= 0 ? json_integer(r->peak_memory_bytes)
							     : json_null());
	bad |= json_object_set_new(o, "oom_killed", json_boolean(r->oom_killed));
	bad |= json_object_set_new(o, "backend",
				   r->backend ? json_string(r->backend) : json_null());
	bad |= json_object_set_new(o, "workdir",
				   r->workdir ? json_string(r->workdir) : json_null());
	if (bad) {
		json_decref(o);
		return cordon_err(e, EINVAL, "result: cannot encode as JSON (invalid UTF-8?)");
	}
	s = json_dumps(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	json_decref(o);
	if (!s)
		return cordon_err(e, ENOMEM, "result: JSON encoding failed");
	*ret_json = s;
	return 0;
}
