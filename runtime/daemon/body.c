/* SPDX-License-Identifier: MIT */
/*
 * Request routing and JSON body decoding: pure functions of their input (no I/O, no globals),
 * which is what makes them the fuzz target (tests/fuzz/). Every rejection names the field; every
 * field has a type, a range and a length, and anything not listed is an error, so a typo in a
 * client ("timout") is a 400 and not a silently ignored limit.
 */
#define _GNU_SOURCE
#include "runtime/daemon/daemon.h"
#include "runtime/cleanup.h"
#include "runtime/pynum.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TIMEOUT 86400.0 /* a day; longer runs belong to a scheduler */
#define MAX_STR 1048576	    /* any one string field */
#define MAX_ARGV 4096
#define MAX_LIST 4096
#define MAX_PROFILE_NAME 128

/* ---- routing ---- */

static bool is_hex_id(const char *s, size_t n)
{
	if (n != SESSION_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static int method_is(const char *m, const char *want)
{
	return strcmp(m, want) == 0;
}

/* 405 unless method is one of the allowed ones ("GET, DELETE"). */
static int allow(const char *method, const char *allowed, const char **ret_allow, cordon_error *e)
{
	_cleanup_free_ char *copy = strdup(allowed);
	char *save = NULL;

	if (!copy)
		return 500;
	for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
		if (method_is(method, t))
			return 0;
	*ret_allow = allowed;
	cordon_err(e, 0, "method: %s is not allowed here (allowed: %s)", method, allowed);
	return 405;
}

int route_check_file_path(const char *path, cordon_error *e)
{
	const char *p = path;

	if (!*path)
		return cordon_err(e, 0, "path: empty");
	if (path[0] == '/')
		return cordon_err(e, 0, "path: absolute paths are not allowed");
	if (strlen(path) > 4096)
		return cordon_err(e, 0, "path: too long");
	for (const unsigned char *q = (const unsigned char *)path; *q; q++)
		if (*q < 0x20 || *q == 0x7f)
			return cordon_err(e, 0, "path: control characters are not allowed");
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 0)
			return cordon_err(e, 0, "path: empty component");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return cordon_err(e, 0, "path: '..' is not allowed");
		if (n == 1 && p[0] == '.')
			return cordon_err(e, 0, "path: '.' components are not allowed");
		p += n;
		if (*p == '/')
			p++;
		if (!*p && p[-1] == '/')
			return cordon_err(e, 0, "path: trailing '/'");
	}
	return 0;
}

int route_parse(const char *method, const char *url, struct route *ret, const char **ret_allow,
		cordon_error *e)
{
	struct route r = { 0 };
	const char *rest, *slash;
	int s;

	*ret_allow = NULL;
	if (!strcmp(url, "/v1/health")) {
		r.kind = ROUTE_HEALTH;
		if ((s = allow(method, "GET, HEAD", ret_allow, e)))
			return s;
	} else if (!strcmp(url, "/v1/run")) {
		r.kind = ROUTE_RUN;
		r.has_body = true;
		if ((s = allow(method, "POST", ret_allow, e)))
			return s;
	} else if (!strcmp(url, "/v1/profiles")) {
		r.kind = ROUTE_PROFILES;
		if ((s = allow(method, "GET, HEAD", ret_allow, e)))
			return s;
	} else if (!strcmp(url, "/metrics")) {
		r.kind = ROUTE_METRICS;
		if ((s = allow(method, "GET, HEAD", ret_allow, e)))
			return s;
	} else if (!strcmp(url, "/v1/sessions")) {
		r.kind = ROUTE_SESSIONS;
		r.has_body = true;
		if ((s = allow(method, "POST", ret_allow, e)))
			return s;
	} else if (!strncmp(url, "/v1/sessions/", 13)) {
		rest = url + 13;
		slash = strchr(rest, '/');
		if (!is_hex_id(rest, slash ? (size_t)(slash - rest) : strlen(rest))) {
			cordon_err(e, 0, "id: no such session");
			return 404;
		}
		memcpy(r.id, rest, SESSION_ID_LEN);
		r.id[SESSION_ID_LEN] = '\0';
		if (!slash) {
			r.kind = ROUTE_SESSION;
			if ((s = allow(method, "GET, HEAD, DELETE", ret_allow, e)))
				return s;
		} else if (!strcmp(slash, "/run")) {
			r.kind = ROUTE_SESSION_RUN;
			r.has_body = true;
			if ((s = allow(method, "POST", ret_allow, e)))
				return s;
		} else if (!strncmp(slash, "/files/", 7)) {
			r.kind = ROUTE_SESSION_FILE;
			r.path = slash + 7;
			if ((s = allow(method, "GET, HEAD, PUT, DELETE", ret_allow, e)))
				return s;
			r.has_body = method_is(method, "PUT");
			if (route_check_file_path(r.path, e) < 0)
				return 400;
		} else {
			cordon_err(e, 0, "url: no such endpoint");
			return 404;
		}
	} else {
		cordon_err(e, 0, "url: no such endpoint");
		return 404;
	}
	*ret = r;
	return 0;
}

/* ---- values ---- */

bool body_is_text(const char *s)
{
	json_t *t = json_string(s);

	json_decref(t);
	return t != NULL;
}

bool body_valid_profile_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > MAX_PROFILE_NAME || s[0] == '.' || s[0] == '-')
		return false;
	if (n >= 5 && !strcmp(s + n - 5, ".conf"))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

static bool shlex_safe(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("_@%+=:,./-", *s)))
			return false;
	return true;
}

char *body_shlex_join(const char *const *argv)
{
	size_t len = 1;
	char *s, *q;

	for (size_t i = 0; argv[i]; i++) {
		len += 3;
		for (const char *p = argv[i]; *p; p++)
			len += *p == '\'' ? 5 : 1;
		len += 2;
	}
	s = malloc(len);
	if (!s)
		return NULL;
	q = s;
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			*q++ = ' ';
		/* Python's shlex.quote: safe words as they are, others in single quotes. */
		if (shlex_safe(argv[i])) {
			q = stpcpy(q, argv[i]);
			continue;
		}
		*q++ = '\'';
		for (const char *p = argv[i]; *p; p++) {
			if (*p == '\'')
				q = stpcpy(q, "'\"'\"'");
			else
				*q++ = *p;
		}
		*q++ = '\'';
	}
	*q = '\0';
	return s;
}

/* ---- body ---- */

/* A string field: present, a string, no NUL, bounded. */
static int get_string(json_t *v, const char *field, size_t max, const char **ret, cordon_error *e)
{
	size_t n;

	if (!json_is_string(v))
		return cordon_err(e, 0, "%s: expected a string", field);
	n = json_string_length(v);
	if (n != strlen(json_string_value(v)))
		return cordon_err(e, 0, "%s: contains a NUL byte", field);
	if (n > max)
		return cordon_err(e, 0, "%s: longer than %zu bytes", field, max);
	*ret = json_string_value(v);
	return 0;
}

static int get_list(json_t *v, const char *field, struct cordon_list *l, cordon_error *e)
{
	size_t i;
	json_t *item;

	if (!json_is_array(v))
		return cordon_err(e, 0, "%s: expected an array of strings", field);
	if (json_array_size(v) > MAX_LIST)
		return cordon_err(e, 0, "%s: more than %d items", field, MAX_LIST);
	l->set = true; /* [] is AG2's empty list, not "no list" */
	json_array_foreach(v, i, item)
	{
		const char *s;
		char name[64];

		snprintf(name, sizeof(name), "%s[%zu]", field, i);
		if (get_string(item, name, BODY_MAX_ITEM, &s, e) < 0)
			return -1;
		if (cordon_list_add(l, s, e) < 0)
			return -1;
	}
	return 0;
}

/*
 * Any name an environment can hold: not empty, no '=' (and no NUL: JSON strings here have
 * none). AG2's subprocess passes a caller's whole environment, bash's exported functions
 * (BASH_FUNC_which%%) and names such as A.B included; refusing them made every exec of an
 * ag2-compat environment fail on hosts that export one (found in review).
 */
static bool valid_env_name(const char *s)
{
	return *s && !strchr(s, '=');
}

static int get_env(json_t *v, struct run_body *b, cordon_error *e)
{
	const char *key;
	json_t *val;

	if (!json_is_object(v))
		return cordon_err(e, 0, "env: expected an object of strings");
	if (json_object_size(v) > MAX_LIST)
		return cordon_err(e, 0, "env: more than %d variables", MAX_LIST);
	json_object_foreach(v, key, val)
	{
		char name[300];
		const char *s;

		if (!valid_env_name(key) || strlen(key) > BODY_MAX_ENV_NAME)
			return cordon_err(e, 0, "env: invalid variable name '%.64s'", key);
		snprintf(name, sizeof(name), "env.%s", key);
		if (get_string(val, name, BODY_MAX_ITEM, &s, e) < 0)
			return -1;
	}
	b->env = v;
	return 0;
}

static int get_timeout(json_t *v, struct run_body *b, cordon_error *e)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i <= 0 || i > (json_int_t)MAX_TIMEOUT)
			return cordon_err(e, 0, "timeout: must be > 0 and at most %g seconds",
					  MAX_TIMEOUT);
		b->timeout = (double)i;
		snprintf(b->timeout_text, sizeof(b->timeout_text), "%lld", (long long)i);
	} else if (json_is_real(v)) {
		double d = json_real_value(v);

		if (!(d > 0) || d > MAX_TIMEOUT)
			return cordon_err(e, 0, "timeout: must be > 0 and at most %g seconds",
					  MAX_TIMEOUT);
		b->timeout = d;
		/* AG2 prints Python's str() of the float: 1.0 → "1.0s". */
		pynum_float_repr(d, b->timeout_text, sizeof(b->timeout_text));
	} else if (json_is_string(v)) {
		/* The text as the user wrote it ("1.50"), which the CLI forwards verbatim. */
		const char *s = json_string_value(v);
		char *end = NULL;
		double d;

		size_t n = strspn(s, "0123456789");

		/* As `cordon run -t` and a profile take it: digits, optionally '.' and digits. */
		if (s[n] == '.' && n > 0)
			n += 1 + strspn(s + n + 1, "0123456789");
		if (json_string_length(v) != strlen(s) || n == 0 || s[n] || s[n - 1] == '.' ||
		    strlen(s) >= sizeof(b->timeout_text))
			return cordon_err(e, 0, "timeout: expected a decimal number of seconds");
		errno = 0;
		d = strtod(s, &end);
		if (errno || *end || !(d > 0) || d > MAX_TIMEOUT)
			return cordon_err(e, 0, "timeout: must be > 0 and at most %g seconds",
					  MAX_TIMEOUT);
		b->timeout = d;
		snprintf(b->timeout_text, sizeof(b->timeout_text), "%s", s);
	} else {
		return cordon_err(e, 0, "timeout: expected a number of seconds");
	}
	b->has_timeout = true;
	return 0;
}

static int get_bool(json_t *v, const char *field, int *ret, cordon_error *e)
{
	if (!json_is_boolean(v))
		return cordon_err(e, 0, "%s: expected true or false", field);
	*ret = json_is_true(v);
	return 0;
}

/* Which fields each kind of body takes. */
static bool field_allowed(enum body_kind kind, const char *key)
{
	static const char *const run_fields[] = {
		"command", "argv",     "env",	      "timeout", "max_output", "allowed", "blocked",
		"ignore",  "readonly", "policy_mode", "network", "umask",      NULL,
	};
	static const char *const run_only[] = { "profile", "profile_digest", "workdir",
						"backend", "keep",	     NULL };
	static const char *const session_fields[] = { "profile", "workdir", "backend", "image",
						      NULL };

	if (kind == BODY_SESSION) {
		for (size_t i = 0; session_fields[i]; i++)
			if (!strcmp(key, session_fields[i]))
				return true;
		return false;
	}
	for (size_t i = 0; run_fields[i]; i++)
		if (!strcmp(key, run_fields[i]))
			return true;
	if (kind == BODY_RUN)
		for (size_t i = 0; run_only[i]; i++)
			if (!strcmp(key, run_only[i]))
				return true;
	return false;
}

static int decode_field(enum body_kind kind, const char *key, json_t *v, int64_t max_output_cap,
			struct run_body *b, cordon_error *e)
{
	if (!field_allowed(kind, key)) {
		if (kind == BODY_SESSION_RUN &&
		    (!strcmp(key, "profile") || !strcmp(key, "workdir") || !strcmp(key, "backend")))
			return cordon_err(e, 0, "%s: fixed when the session was created", key);
		return cordon_err(e, 0, "%.64s: unknown field", key);
	}
	if (!strcmp(key, "command")) {
		if (get_string(v, "command", MAX_STR, &b->command, e) < 0)
			return -1;
		if (b->command[strspn(b->command, " \t\n")] == '\0')
			return cordon_err(e, 0, "command: empty");
	} else if (!strcmp(key, "argv")) {
		size_t i;
		json_t *item;

		if (!json_is_array(v))
			return cordon_err(e, 0, "argv: expected an array of strings");
		if (json_array_size(v) > MAX_ARGV)
			return cordon_err(e, 0, "argv: more than %d words", MAX_ARGV);
		b->argv = calloc(json_array_size(v) + 1, sizeof(char *));
		if (!b->argv)
			return cordon_err(e, ENOMEM, "out of memory");
		json_array_foreach(v, i, item)
		{
			char name[32];

			snprintf(name, sizeof(name), "argv[%zu]", i);
			if (get_string(item, name, MAX_STR, &b->argv[i], e) < 0)
				return -1;
		}
		b->argc = json_array_size(v);
	} else if (!strcmp(key, "profile")) {
		if (get_string(v, "profile", MAX_PROFILE_NAME + 64, &b->profile, e) < 0)
			return -1;
		if (!body_valid_profile_name(b->profile))
			return cordon_err(
				e, 0,
				"profile: '%.64s' is not a profile name (letters, digits, "
				"'-', '_', '.'; no paths)",
				b->profile);
	} else if (!strcmp(key, "profile_digest")) {
		if (get_string(v, "profile_digest", 16, &b->profile_digest, e) < 0)
			return -1;
		if (strlen(b->profile_digest) != 16 ||
		    strspn(b->profile_digest, "0123456789abcdef") != 16)
			return cordon_err(e, 0, "profile_digest: expected 16 hex digits");
	} else if (!strcmp(key, "workdir")) {
		if (get_string(v, "workdir", 4095, &b->workdir, e) < 0)
			return -1;
		if (b->workdir[0] != '/')
			return cordon_err(e, 0, "workdir: must be an absolute path");
	} else if (!strcmp(key, "backend")) {
		if (get_string(v, "backend", 64, &b->backend, e) < 0)
			return -1;
		if (strcmp(b->backend, "local") && strcmp(b->backend, "docker") &&
		    strcmp(b->backend, "daytona"))
			return cordon_err(
				e, 0,
				"backend: unknown backend '%s' (expected local, docker or "
				"daytona)",
				b->backend);
	} else if (!strcmp(key, "image")) {
		if (get_string(v, "image", 255, &b->image, e) < 0)
			return -1;
		if (!b->image[0])
			return cordon_err(e, 0, "image: empty");
		for (const char *p = b->image; *p; p++)
			if (!isalnum((unsigned char)*p) && !strchr("_.:/@-", *p))
				return cordon_err(e, 0, "image: '%.64s' is not an image reference",
						  b->image);
	} else if (!strcmp(key, "env")) {
		return get_env(v, b, e);
	} else if (!strcmp(key, "timeout")) {
		return get_timeout(v, b, e);
	} else if (!strcmp(key, "max_output")) {
		if (!json_is_integer(v))
			return cordon_err(e, 0, "max_output: expected an integer");
		if (json_integer_value(v) < 0 || json_integer_value(v) > max_output_cap)
			return cordon_err(e, 0, "max_output: must be between 0 and %lld",
					  (long long)max_output_cap);
		b->max_output = json_integer_value(v);
		b->has_max_output = true;
	} else if (!strcmp(key, "allowed")) {
		return get_list(v, "allowed", &b->allowed, e);
	} else if (!strcmp(key, "blocked")) {
		return get_list(v, "blocked", &b->blocked, e);
	} else if (!strcmp(key, "ignore")) {
		return get_list(v, "ignore", &b->ignore, e);
	} else if (!strcmp(key, "readonly")) {
		return get_bool(v, "readonly", &b->readonly, e);
	} else if (!strcmp(key, "umask")) {
		/* The client's umask, so that what its command creates has the modes a direct
		 * run's would (cordond's own is 022). */
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 0777)
			return cordon_err(e, 0, "umask: expected an integer from 0 to 511 (0777)");
		b->has_umask = true;
		b->umask = (unsigned)json_integer_value(v);
	} else if (!strcmp(key, "keep")) {
		int k = 0;

		if (get_bool(v, "keep", &k, e) < 0)
			return -1;
		b->keep = k;
	} else if (!strcmp(key, "policy_mode")) {
		const char *s;

		if (get_string(v, "policy_mode", 16, &s, e) < 0)
			return -1;
		if (!strcmp(s, "compat"))
			b->mode = CORDON_MODE_COMPAT;
		else if (!strcmp(s, "strict"))
			b->mode = CORDON_MODE_STRICT;
		else
			return cordon_err(e, 0, "policy_mode: expected \"compat\" or \"strict\"");
	} else if (!strcmp(key, "network")) {
		const char *s;

		if (get_string(v, "network", 16, &s, e) < 0)
			return -1;
		if (!strcmp(s, "none"))
			b->network = CORDON_NET_NONE;
		else if (!strcmp(s, "host"))
			b->network = CORDON_NET_HOST;
		else
			return cordon_err(e, 0, "network: expected \"none\" or \"host\"");
	}
	return 0;
}

void run_body_free(struct run_body *b)
{
	json_decref(b->root);
	free(b->argv);
	cordon_list_free(&b->allowed);
	cordon_list_free(&b->blocked);
	cordon_list_free(&b->ignore);
	memset(b, 0, sizeof(*b));
}

/* The "key" whose value ends near pos: scan back to the ':' and the string before it. */
static bool key_before(const char *buf, size_t n, size_t pos, char *key, size_t keysz)
{
	size_t i = pos < n ? pos : n, end, start;

	while (i > 0 && buf[i - 1] != ':' && buf[i - 1] != '{' && buf[i - 1] != ',')
		i--;
	if (i == 0 || buf[i - 1] != ':')
		return false;
	i--;
	while (i > 0 && (buf[i - 1] == ' ' || buf[i - 1] == '\t' || buf[i - 1] == '\n' ||
			 buf[i - 1] == '\r'))
		i--;
	if (i == 0 || buf[i - 1] != '"')
		return false;
	end = --i;
	while (i > 0 && buf[i - 1] != '"')
		i--;
	if (i == 0)
		return false;
	start = i;
	if (end - start == 0 || end - start >= keysz)
		return false;
	for (size_t k = start; k < end; k++)
		if ((unsigned char)buf[k] < 0x20 || buf[k] == '\\' || (unsigned char)buf[k] >= 0x7f)
			return false;
	memcpy(key, buf + start, end - start);
	key[end - start] = '\0';
	return true;
}

int body_parse(enum body_kind kind, const char *buf, size_t n, int64_t max_output_cap,
	       struct run_body *ret, cordon_error *e)
{
	struct run_body b = { .readonly = -1, .mode = -1, .network = -1 };
	json_error_t je;
	const char *key;
	json_t *v;

	/*
	 * JSON_ALLOW_NUL so that a "\u0000" inside a value reaches get_string(), which names the
	 * field; duplicates are refused because two parsers (ours, a proxy's) could pick different
	 * ones. jansson refuses invalid UTF-8 and bounds the nesting depth itself.
	 */
	b.root = json_loadb(buf, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!b.root) {
		char name[65];

		/* A number jansson cannot hold: name the field it was the value of. */
		if ((strstr(je.text, "too big") || strstr(je.text, "overflow")) &&
		    key_before(buf, n, (size_t)je.position, name, sizeof(name)))
			return cordon_err(e, 0, "%s: number out of range", name);
		return cordon_err(e, 0, "body: invalid JSON: %s (line %d, column %d)", je.text,
				  je.line, je.column);
	}
	if (!json_is_object(b.root)) {
		json_decref(b.root);
		return cordon_err(e, 0, "body: expected a JSON object");
	}
	json_object_foreach(b.root, key, v)
	{
		if (decode_field(kind, key, v, max_output_cap, &b, e) < 0)
			goto fail;
	}
	if (kind != BODY_SESSION) {
		if (b.command && b.argv) {
			cordon_err(e, 0, "argv: give either command or argv, not both");
			goto fail;
		}
		if (!b.command && !b.argv) {
			cordon_err(e, 0, "command: missing (or give argv)");
			goto fail;
		}
	}
	*ret = b;
	return 0;
fail:
	run_body_free(&b);
	return -1;
}
