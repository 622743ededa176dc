/* SPDX-License-Identifier: MIT */
/*
 * Profiles (SPEC §4): INI files read with libinih, a table of keys in the style of nspawn's
 * gperf settings table, a lookup path, and a printer whose output loads back to an equal
 * profile.
 *
 * How a file is read:
 *
 *   1. Our own line reader feeds libinih (ini_parse_stream). Debian's libinih reads into a
 *      fixed 200-byte buffer and silently splits longer lines into several "lines", so a long
 *      value would turn into garbage keys. The reader therefore measures every line itself and
 *      stops with "line too long"; it also rejects NUL bytes and control characters, caps the
 *      file size, strips a UTF-8 BOM and leading blanks (so libinih never sees a continuation
 *      line: an indented `key = value` is just a key, not a continuation of the previous value)
 *      and checks section headers, which libinih would otherwise accept silently when empty.
 *   2. The handler only validates section and key names and collects (key, value, line)
 *      entries: the `include` of a file must be applied *below* every other key of that file,
 *      wherever it appears in the file.
 *   3. The included profile (if any) is loaded into the same struct first, recursively, then
 *      this file's entries are applied in order through the table's parsers.
 *
 * Errors name `file:line` and, for a value, `[section] key`. Lexical, syntax and name errors
 * come out in line order; value errors come after them (they are checked in the second step).
 *
 * List keys (SPEC §4: a repeated key appends, an empty value is an empty list, an absent key is
 * "no list"), across include:
 *   - the first occurrence of a list key in a file *replaces* what the included profile had, so
 *     a child profile states its list rather than silently widening its parent's;
 *   - later occurrences in the same file append;
 *   - an empty value (`allowed =`) resets the list to an empty but set list, wherever it is
 *     (systemd's "empty assignment resets the list").
 * To extend an included list, repeat its items (`cordon profile show` prints them).
 * docs/compat.md ("Profiles and command line") says the same for users.
 *
 * Round trip: inih cannot represent every string. It strips leading and trailing blanks, cuts
 * a value at a ';' that follows a blank (an inline comment), reads `key = ;x` as an empty value
 * and has a 199-byte line limit. profile_check_value() rejects such values: at load time (where
 * the only ones that can reach it are a value starting with ';' and a value too long to be
 * printed back with " = ") and in cordon_profile_format() (for values set by a front end), so
 * whatever loads or prints always loads back unchanged.
 */
#define _GNU_SOURCE
#include "runtime/profile.h"
#include "policy/policy.h"
#include "runtime/cleanup.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* libinih's line buffer is INI_MAX_LINE (200) bytes including the terminating NUL. */
#define PROFILE_MAX_LINE 199
/* No sane profile is bigger; a bigger file is a mistake (or /dev/zero behind a symlink). */
#define PROFILE_MAX_SIZE (1024 * 1024)
/* Nested includes: a chain of at most this many includes below the top file. */
#define PROFILE_MAX_DEPTH 16
/* A timeout above this is a typo; it also keeps seconds * 1e9 inside an int64 of ns. */
#define TIMEOUT_MAX 1e9
#define TIMEOUT_MAX_TEXT "1000000000"
/* The longest timeout text accepted: more digits than a double holds are a mistake. */
#define TIMEOUT_MAX_LEN 32
/* Values are quoted in messages up to this many bytes (a command-line value may be huge). */
#define CLIP 64

#define CLIP_ARGS(s)                                                                               \
	(int)(strlen(s) > CLIP ? CLIP : strlen(s)), (s), (strlen(s) > CLIP ? "..." : "")

/* ASCII classes: names and numbers must not depend on the caller's locale (a Latin-1 locale
 * would make isalnum() accept 0xe9). */
static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c)
{
	return is_alpha(c) || is_digit(c);
}

static const char *const sections[] = { "profile", "policy", "limits",
					"sandbox", "docker", "daytona" };

/* Facilities a profile may `require` (consumed by the local backend). */
static const char *const facilities[] = { "userns",   "pidns", "netns",	  "ipcns",    "utsns",
					  "cgroupns", "mntns", "seccomp", "landlock", "cgroup" };

/* ------------------------------------------------------------------------------------------ */
/* Scalar parsers (also used by the command line through profile.h)                          */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!is_digit(*s))
			return false;
	return true;
}

/* An integer: digits only (no sign, no blanks, no exponent), at most max. */
static int parse_uint(const char *s, uint64_t max, uint64_t *ret, cordon_error *e)
{
	uint64_t v = 0;

	if (!all_digits(s)) {
		if (s[0] == '-' && all_digits(s + 1))
			return cordon_err(e, 0, "invalid integer '%.*s%s' (must be >= 0)",
					  CLIP_ARGS(s));
		return cordon_err(e, 0, "invalid integer '%.*s%s'", CLIP_ARGS(s));
	}
	for (const char *p = s; *p; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (max - d) / 10)
			return cordon_err(e, 0, "integer '%.*s%s' is out of range", CLIP_ARGS(s));
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

int profile_parse_count(const char *s, int64_t *ret, cordon_error *e)
{
	uint64_t v;

	if (parse_uint(s, INT64_MAX, &v, e) < 0)
		return -1;
	*ret = (int64_t)v;
	return 0;
}

int profile_parse_size(const char *s, uint64_t *ret, cordon_error *e)
{
	static const struct {
		char c;
		unsigned shift;
	} units[] = { { 'K', 10 }, { 'M', 20 }, { 'G', 30 }, { 'T', 40 } };
	_cleanup_free_ char *num = NULL;
	size_t len = strlen(s);
	unsigned shift = 0;
	uint64_t v;

	if (len > 1 && !is_digit(s[len - 1])) {
		for (size_t i = 0; i < ARRAY_SIZE(units); i++)
			if (toupper((unsigned char)s[len - 1]) == units[i].c)
				shift = units[i].shift;
		if (!shift)
			return cordon_err(e, 0,
					  "invalid size '%.*s%s' (expected bytes or K, M, G, T)",
					  CLIP_ARGS(s));
		len--;
	}
	num = strndup(s, len);
	if (!num)
		return cordon_err(e, ENOMEM, "out of memory");
	if (!all_digits(num))
		return cordon_err(e, 0, "invalid size '%.*s%s' (expected bytes or K, M, G, T)",
				  CLIP_ARGS(s));
	if (parse_uint(num, UINT64_MAX >> shift, &v, NULL) < 0)
		return cordon_err(e, 0, "size '%.*s%s' is out of range", CLIP_ARGS(s));
	*ret = v << shift;
	return 0;
}

/*
 * Plain decimal notation only ("60", "1.5"): the text is printed back verbatim in AG2's
 * "Command timed out after {t}s", so forms Python would print differently (1e3, .5, +1, 0x10,
 * inf) are refused rather than echoed.
 */
int profile_parse_seconds(const char *s, double *ret, cordon_error *e)
{
	const char *p = s;
	double v;

	if (*p == '-' && is_digit(p[1]))
		return cordon_err(e, 0, "invalid number '%.*s%s' (must be > 0)", CLIP_ARGS(s));
	while (is_digit(*p))
		p++;
	if (p != s && *p == '.' && is_digit(p[1]))
		for (p++; is_digit(*p);)
			p++;
	if (p == s || *p || strlen(s) > TIMEOUT_MAX_LEN)
		return cordon_err(e, 0, "invalid number '%.*s%s'", CLIP_ARGS(s));
	errno = 0;
	v = strtod(s, NULL);
	if (errno || !isfinite(v))
		return cordon_err(e, 0, "invalid number '%.*s%s'", CLIP_ARGS(s));
	if (v <= 0)
		return cordon_err(e, 0, "invalid number '%s' (must be > 0)", s);
	if (v > TIMEOUT_MAX)
		return cordon_err(e, 0, "number '%s' is out of range (max %s)", s,
				  TIMEOUT_MAX_TEXT);
	*ret = v;
	return 0;
}

int profile_parse_bool(const char *s, bool *ret, cordon_error *e)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return cordon_err(e, 0, "invalid boolean '%.*s%s' (expected true or false)", CLIP_ARGS(s));
}

int profile_check_value(const char *key, const char *v, cordon_error *e)
{
	size_t max = PROFILE_MAX_LINE - strlen(key) - strlen(" = ");
	const unsigned char *p;

	if (strlen(v) > max)
		return cordon_err(e, 0, "value too long (max %zu bytes for this key)", max);
	for (p = (const unsigned char *)v; *p; p++) {
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return cordon_err(e, 0, "control character 0x%02x in value", *p);
		if (*p == ';' && p > (const unsigned char *)v && isspace(p[-1]))
			return cordon_err(e, 0,
					  "value contains a blank followed by ';' "
					  "(the rest would read back as a comment)");
	}
	if (*v == ';')
		return cordon_err(e, 0, "value starts with ';' (it would read back as a comment)");
	if (*v && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[strlen(v) - 1])))
		return cordon_err(e, 0, "value starts or ends with a blank");
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* List item checks                                                                           */

static bool valid_env_name(const char *s, size_t n)
{
	if (n == 0 || !(is_alpha(s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(is_alnum(s[i]) || s[i] == '_'))
			return false;
	return true;
}

static int check_env(const char *v, cordon_error *e)
{
	const char *eq = strchr(v, '=');

	if (!eq)
		return cordon_err(e, 0, "invalid assignment '%.*s%s' (expected KEY=VALUE)",
				  CLIP_ARGS(v));
	if (!valid_env_name(v, (size_t)(eq - v)))
		return cordon_err(e, 0, "invalid variable name '%.*s'",
				  (int)(eq - v > CLIP ? CLIP : eq - v), v);
	return 0;
}

/* Components are non-empty and neither "." nor "..": a path names one thing, lexically. */
static bool clean_components(const char *s)
{
	for (;;) {
		size_t n = strcspn(s, "/");

		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!s[n])
			return true;
		s += n + 1;
	}
}

static int check_abs_path(const char *v, cordon_error *e)
{
	if (v[0] != '/' || (v[1] && !clean_components(v + 1)))
		return cordon_err(e, 0,
				  "'%.*s%s' is not an absolute path without '.', '..' or empty "
				  "components",
				  CLIP_ARGS(v));
	return 0;
}

/* A mask names a path inside the workdir: never absolute, never escaping it with "..". */
static int check_rel_path(const char *v, cordon_error *e)
{
	if (v[0] == '/' || !clean_components(v))
		return cordon_err(e, 0,
				  "'%.*s%s' is not a relative path without '.', '..' or empty "
				  "components",
				  CLIP_ARGS(v));
	return 0;
}

static int check_facility(const char *v, cordon_error *e)
{
	for (size_t i = 0; i < ARRAY_SIZE(facilities); i++)
		if (strcmp(v, facilities[i]) == 0)
			return 0;
	return cordon_err(e, 0,
			  "unknown facility '%.*s%s' (expected userns, pidns, netns, ipcns, utsns, "
			  "cgroupns, mntns, seccomp, landlock or cgroup)",
			  CLIP_ARGS(v));
}

/*
 * "REGEX => MESSAGE", split at the first " => " (a message is prose and may contain one). The
 * regex is compiled here, as the policy engine compiles it (PCRE2, UTF, caseless like AG2's
 * re.IGNORECASE), so that a typo is reported with its file:line instead of at run time.
 */
static int check_pattern(const char *v, cordon_error *e)
{
	const char *sep = strstr(v, " => ");
	_cleanup_free_ char *re = NULL;

	if (!sep || sep == v || !sep[4])
		return cordon_err(e, 0, "'%.*s%s' is not of the form 'REGEX => MESSAGE'",
				  CLIP_ARGS(v));
	re = strndup(v, (size_t)(sep - v));
	if (!re)
		return cordon_err(e, ENOMEM, "out of memory");
	/*
	 * Compiled as the policy will search it, Python's syntax translated (\uXXXX...): a raw
	 * compile refused every \u escape docs/compat.md says a pattern may use (found in review).
	 */
	return policy_check_dangerous_regex(re, e);
}

static int check_docker_user(const char *v, cordon_error *e)
{
	for (const char *p = v; *p; p++)
		if (!is_alnum(*p) && !strchr("_.:-", *p))
			return cordon_err(e, 0, "invalid user '%.*s%s' (expected USER[:GROUP])",
					  CLIP_ARGS(v));
	return 0;
}

/* A Docker network name: none, host, bridge or a user network. */
static int check_docker_network(const char *v, cordon_error *e)
{
	if (!*v)
		return cordon_err(e, 0,
				  "invalid network '' (expected none, host, bridge or a name)");
	for (const char *p = v; *p; p++)
		if (!is_alnum(*p) && !strchr("_.-", *p))
			return cordon_err(
				e, 0,
				"invalid network '%.*s%s' (expected none, host, bridge or "
				"a name)",
				CLIP_ARGS(v));
	return 0;
}

/* HOST or HOST:TARGET, both absolute and clean; TARGET may not be "/". */
static int check_docker_bind(const char *v, cordon_error *e)
{
	const char *colon = strchr(v, ':');
	_cleanup_free_ char *host = colon ? strndup(v, (size_t)(colon - v)) : strdup(v);
	const char *target = colon ? colon + 1 : host;

	if (!host)
		return cordon_err(e, ENOMEM, "out of memory");
	if (host[0] != '/' || (host[1] && !clean_components(host + 1)) || target[0] != '/' ||
	    !target[1] || !clean_components(target + 1) || strchr(target, ':'))
		return cordon_err(e, 0,
				  "invalid bind '%.*s%s' (expected HOST[:TARGET], absolute paths "
				  "without '.', '..' or empty components, TARGET not '/')",
				  CLIP_ARGS(v));
	return 0;
}

/* A Daytona label: KEY=VALUE, KEY not empty and without blanks. */
static int check_label(const char *v, cordon_error *e)
{
	const char *eq = strchr(v, '=');

	if (!eq || eq == v || strcspn(v, " \t") < (size_t)(eq - v))
		return cordon_err(e, 0,
				  "invalid label '%.*s%s' (expected KEY=VALUE, KEY not empty and "
				  "without blanks)",
				  CLIP_ARGS(v));
	return 0;
}

/* The workdir inside the container or the remote sandbox: absolute, clean, not "/". */
static int check_docker_workdir(const char *v, cordon_error *e)
{
	if (v[0] != '/' || !v[1] || !clean_components(v + 1) || strchr(v, ':'))
		return cordon_err(e, 0,
				  "invalid workdir '%.*s%s' (expected an absolute path other than "
				  "'/', without '.', '..', ':' or empty components)",
				  CLIP_ARGS(v));
	return 0;
}

static int check_url(const char *v, cordon_error *e)
{
	if ((strncmp(v, "http://", 7) != 0 || !v[7]) && (strncmp(v, "https://", 8) != 0 || !v[8]))
		return cordon_err(e, 0, "invalid URL '%.*s%s' (expected http:// or https://)",
				  CLIP_ARGS(v));
	for (const char *p = v; *p; p++)
		if (isspace((unsigned char)*p))
			return cordon_err(e, 0, "invalid URL '%.*s%s' (contains a blank)",
					  CLIP_ARGS(v));
	return 0;
}

static int check_backend(const char *v, cordon_error *e)
{
	if (strcmp(v, "local") && strcmp(v, "docker") && strcmp(v, "daytona"))
		return cordon_err(e, 0,
				  "invalid backend '%.*s%s' (expected local, docker or daytona)",
				  CLIP_ARGS(v));
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The key table                                                                              */

struct key_def;
/* first: this is the key's first occurrence in the file being applied (list override). */
typedef int (*parse_fn)(struct cordon_profile *p, const struct key_def *k, const char *v,
			bool first, cordon_error *e);
typedef int (*format_fn)(FILE *f, const struct cordon_profile *p, const struct key_def *k,
			 cordon_error *e);
typedef int (*check_fn)(const char *v, cordon_error *e);

struct key_def {
	const char *section;
	const char *key;
	parse_fn parse; /* NULL: `include`, handled by the loader */
	format_fn format;
	size_t offset;
	check_fn check; /* strings and list items; NULL: anything representable */
};

#define FIELD(p, k, type) ((type *)((char *)(p) + (k)->offset))
#define CFIELD(p, k, type) ((const type *)((const char *)(p) + (k)->offset))

static int emit(FILE *f, const struct key_def *k, const char *v, cordon_error *e)
{
	if (profile_check_value(k->key, v, e) < 0)
		return -1;
	if (k->check && *v && k->check(v, e) < 0)
		return -1;
	if (*v)
		fprintf(f, "%s = %s\n", k->key, v);
	else
		fprintf(f, "%s =\n", k->key);
	return 0;
}

static int set_string(char **field, const char *v, bool empty_is_null, cordon_error *e)
{
	char *dup = NULL;

	if (*v || !empty_is_null) {
		dup = strdup(v);
		if (!dup)
			return cordon_err(e, ENOMEM, "out of memory");
	}
	free(*field);
	*field = dup;
	return 0;
}

/* A string that is "" when empty (description). */
static int parse_str(struct cordon_profile *p, const struct key_def *k, const char *v, bool first,
		     cordon_error *e)
{
	return set_string(FIELD(p, k, char *), v, false, e);
}

/* An optional string: an empty value means "not set" (NULL). */
static int parse_opt_str(struct cordon_profile *p, const struct key_def *k, const char *v,
			 bool first, cordon_error *e)
{
	if (*v && k->check && k->check(v, e) < 0)
		return -1;
	return set_string(FIELD(p, k, char *), v, true, e);
}

static int format_str(FILE *f, const struct cordon_profile *p, const struct key_def *k,
		      cordon_error *e)
{
	const char *v = *CFIELD(p, k, char *);

	return emit(f, k, v ? v : "", e);
}

static int parse_backend(struct cordon_profile *p, const struct key_def *k, const char *v,
			 bool first, cordon_error *e)
{
	if (check_backend(v, e) < 0)
		return -1;
	return set_string(FIELD(p, k, char *), v, false, e);
}

/* Unlike an optional string, an empty backend is not "unset": it must be a valid name. */
static int format_backend(FILE *f, const struct cordon_profile *p, const struct key_def *k,
			  cordon_error *e)
{
	if (check_backend(p->backend ? p->backend : "", e) < 0)
		return -1;
	return emit(f, k, p->backend, e);
}

static int parse_mode(struct cordon_profile *p, const struct key_def *k, const char *v, bool first,
		      cordon_error *e)
{
	if (strcmp(v, "compat") == 0)
		p->mode = CORDON_MODE_COMPAT;
	else if (strcmp(v, "strict") == 0)
		p->mode = CORDON_MODE_STRICT;
	else
		return cordon_err(e, 0, "invalid mode '%.*s%s' (expected compat or strict)",
				  CLIP_ARGS(v));
	return 0;
}

static int format_mode(FILE *f, const struct cordon_profile *p, const struct key_def *k,
		       cordon_error *e)
{
	switch (p->mode) {
	case CORDON_MODE_COMPAT:
		return emit(f, k, "compat", e);
	case CORDON_MODE_STRICT:
		return emit(f, k, "strict", e);
	}
	return cordon_err(e, 0, "invalid mode %d", (int)p->mode);
}

static int parse_network(struct cordon_profile *p, const struct key_def *k, const char *v,
			 bool first, cordon_error *e)
{
	if (strcmp(v, "none") == 0)
		p->network = CORDON_NET_NONE;
	else if (strcmp(v, "host") == 0)
		p->network = CORDON_NET_HOST;
	else
		return cordon_err(e, 0, "invalid network '%.*s%s' (expected none or host)",
				  CLIP_ARGS(v));
	return 0;
}

static int format_network(FILE *f, const struct cordon_profile *p, const struct key_def *k,
			  cordon_error *e)
{
	switch (p->network) {
	case CORDON_NET_NONE:
		return emit(f, k, "none", e);
	case CORDON_NET_HOST:
		return emit(f, k, "host", e);
	}
	return cordon_err(e, 0, "invalid network %d", (int)p->network);
}

static int parse_bool(struct cordon_profile *p, const struct key_def *k, const char *v, bool first,
		      cordon_error *e)
{
	return profile_parse_bool(v, FIELD(p, k, bool), e);
}

static int format_bool(FILE *f, const struct cordon_profile *p, const struct key_def *k,
		       cordon_error *e)
{
	return emit(f, k, *CFIELD(p, k, bool) ? "true" : "false", e);
}

static int parse_list(struct cordon_profile *p, const struct key_def *k, const char *v, bool first,
		      cordon_error *e)
{
	struct cordon_list *l = FIELD(p, k, struct cordon_list);

	if (*v && k->check && k->check(v, e) < 0)
		return -1;
	/* See the top of this file: first occurrence replaces, later ones append, empty resets. */
	if (first || !*v) {
		cordon_list_clear(l);
		l->set = true;
	}
	if (*v)
		return cordon_list_add(l, v, e);
	return 0;
}

static int format_list(FILE *f, const struct cordon_profile *p, const struct key_def *k,
		       cordon_error *e)
{
	const struct cordon_list *l = CFIELD(p, k, struct cordon_list);

	if (!l->set)
		return 0;
	if (l->n == 0)
		return emit(f, k, "", e);
	for (size_t i = 0; i < l->n; i++) {
		/* An empty item would read back as a reset of the list. */
		if (!*l->v[i])
			return cordon_err(e, 0, "empty list item");
		if (emit(f, k, l->v[i], e) < 0)
			return -1;
	}
	return 0;
}

static int parse_timeout(struct cordon_profile *p, const struct key_def *k, const char *v,
			 bool first, cordon_error *e)
{
	double t;

	if (profile_parse_seconds(v, &t, e) < 0)
		return -1;
	if (set_string(&p->timeout_text, v, false, e) < 0)
		return -1;
	p->timeout = t;
	return 0;
}

/* The text as written when it still matches the number; else the shortest exact decimal. */
static int format_timeout(FILE *f, const struct cordon_profile *p, const struct key_def *k,
			  cordon_error *e)
{
	char buf[64];
	double t;

	if (p->timeout_text && profile_parse_seconds(p->timeout_text, &t, NULL) == 0 &&
	    t == p->timeout)
		return emit(f, k, p->timeout_text, e);
	for (int prec = 1; prec <= 17; prec++) {
		(void)snprintf(buf, sizeof(buf), "%.*f", prec, p->timeout);
		if (profile_parse_seconds(buf, &t, NULL) == 0 && t == p->timeout)
			return emit(f, k, buf, e);
	}
	return cordon_err(e, 0, "timeout %g cannot be written as a decimal number > 0", p->timeout);
}

static int parse_count(struct cordon_profile *p, const struct key_def *k, const char *v, bool first,
		       cordon_error *e)
{
	return profile_parse_count(v, FIELD(p, k, int64_t), e);
}

static int format_count(FILE *f, const struct cordon_profile *p, const struct key_def *k,
			cordon_error *e)
{
	char buf[32];
	int64_t v = *CFIELD(p, k, int64_t);

	if (v < 0)
		return cordon_err(e, 0, "negative value %lld", (long long)v);
	(void)snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return emit(f, k, buf, e);
}

static int parse_uint_key(struct cordon_profile *p, const struct key_def *k, const char *v,
			  bool first, cordon_error *e)
{
	return parse_uint(v, UINT64_MAX, FIELD(p, k, uint64_t), e);
}

static int format_uint(FILE *f, const struct cordon_profile *p, const struct key_def *k,
		       cordon_error *e)
{
	char buf[32];

	(void)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)*CFIELD(p, k, uint64_t));
	return emit(f, k, buf, e);
}

static int parse_size(struct cordon_profile *p, const struct key_def *k, const char *v, bool first,
		      cordon_error *e)
{
	return profile_parse_size(v, FIELD(p, k, uint64_t), e);
}

/* The largest unit that divides the value exactly, so "1G" prints as it was written. */
static int format_size(FILE *f, const struct cordon_profile *p, const struct key_def *k,
		       cordon_error *e)
{
	static const char units[] = "TGMK";
	uint64_t v = *CFIELD(p, k, uint64_t);
	char buf[32];

	(void)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	for (unsigned i = 0; v && i < 4; i++) {
		unsigned shift = 40 - 10 * i;

		if ((v & ((UINT64_C(1) << shift) - 1)) == 0) {
			(void)snprintf(buf, sizeof(buf), "%llu%c", (unsigned long long)(v >> shift),
				       units[i]);
			break;
		}
	}
	return emit(f, k, buf, e);
}

#define P(f) offsetof(struct cordon_profile, f)
/* clang-format off */
#define STR(sec, key, f)       { sec, key, parse_str, format_str, P(f), NULL }
#define OPT(sec, key, f, chk)  { sec, key, parse_opt_str, format_str, P(f), chk }
#define LIST(sec, key, f, chk) { sec, key, parse_list, format_list, P(f), chk }
#define BOOL(sec, key, f)      { sec, key, parse_bool, format_bool, P(f), NULL }
#define SIZE(sec, key, f)      { sec, key, parse_size, format_size, P(f), NULL }
#define UINT(sec, key, f)      { sec, key, parse_uint_key, format_uint, P(f), NULL }
/* clang-format on */

/* In SPEC §4's order, which is also the order `profile show` prints. */
static const struct key_def keys[] = {
	STR("profile", "description", description),
	{ "profile", "include", NULL, NULL, 0, NULL },

	{ "policy", "mode", parse_mode, format_mode, P(mode), NULL },
	BOOL("policy", "readonly", readonly),
	LIST("policy", "allowed", allowed, NULL),
	LIST("policy", "blocked", blocked, NULL),
	LIST("policy", "ignore", ignore, NULL),
	LIST("policy", "allowed_commands", allowed_commands, NULL),
	LIST("policy", "denied_commands", denied_commands, NULL),
	LIST("policy", "allowed_paths", allowed_paths, NULL),
	LIST("policy", "dangerous_patterns", dangerous_patterns, check_pattern),
	BOOL("policy", "command_filtering", command_filtering),

	{ "limits", "timeout", parse_timeout, format_timeout, P(timeout), NULL },
	{ "limits", "max_output", parse_count, format_count, P(max_output), NULL },
	SIZE("limits", "memory", memory),
	UINT("limits", "pids", pids),
	UINT("limits", "cpu_time", cpu_time),
	SIZE("limits", "file_size", file_size),
	UINT("limits", "open_files", open_files),
	SIZE("limits", "tmp_size", tmp_size),

	{ "sandbox", "backend", parse_backend, format_backend, P(backend), check_backend },
	{ "sandbox", "network", parse_network, format_network, P(network), NULL },
	LIST("sandbox", "env", env, check_env),
	BOOL("sandbox", "env_inherit", env_inherit),
	LIST("sandbox", "ro_bind", ro_bind, check_abs_path),
	LIST("sandbox", "mask", mask, check_rel_path),
	LIST("sandbox", "require", require, check_facility),

	OPT("docker", "image", docker_image, NULL),
	SIZE("docker", "memory", docker_memory),
	{ "docker", "cpu_quota", parse_count, format_count, P(docker_cpu_quota), NULL },
	OPT("docker", "user", docker_user, check_docker_user),
	UINT("docker", "pids", docker_pids),
	OPT("docker", "network", docker_network, check_docker_network),
	LIST("docker", "ro_bind", docker_ro_bind, check_docker_bind),
	OPT("docker", "workdir", docker_workdir, check_docker_workdir),
	BOOL("docker", "agent", docker_agent),

	OPT("daytona", "api_url", daytona_api_url, check_url),
	OPT("daytona", "target", daytona_target, NULL),
	OPT("daytona", "snapshot", daytona_snapshot, NULL),
	OPT("daytona", "image", daytona_image, NULL),
	UINT("daytona", "cpu", daytona_cpu),
	UINT("daytona", "memory", daytona_memory),
	UINT("daytona", "disk", daytona_disk),
	UINT("daytona", "auto_stop", daytona_auto_stop),
	LIST("daytona", "labels", daytona_labels, check_label),
	OPT("daytona", "workdir", daytona_workdir, check_docker_workdir),
	UINT("daytona", "start_timeout", daytona_start_timeout),
};

static const struct key_def *key_lookup(const char *section, const char *key)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].key, key) == 0)
			return &keys[i];
	return NULL;
}

static bool section_known(const char *s, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(sections); i++)
		if (strlen(sections[i]) == n && strncmp(sections[i], s, n) == 0)
			return true;
	return false;
}

/* ------------------------------------------------------------------------------------------ */
/* Profile objects                                                                            */

void profile_set_network(struct cordon_profile *p, enum cordon_network n)
{
	p->network = n;
	free(p->docker_network);
	p->docker_network = NULL;
}

int cordon_profile_new(struct cordon_profile **ret, cordon_error *e)
{
	struct cordon_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return cordon_err(e, ENOMEM, "out of memory");
	p->mode = CORDON_MODE_COMPAT;
	p->command_filtering = true;
	p->timeout = 60;
	p->max_output = 100000;
	p->memory = UINT64_C(1) << 30;
	p->pids = 256;
	p->cpu_time = 600;
	p->file_size = UINT64_C(1) << 30;
	p->open_files = 1024;
	p->tmp_size = UINT64_C(256) << 20;
	p->network = CORDON_NET_NONE;
	p->docker_agent = true;
	p->description = strdup("");
	p->timeout_text = strdup("60");
	p->backend = strdup("local");
	if (!p->description || !p->timeout_text || !p->backend) {
		cordon_profile_free(p);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	*ret = p;
	return 0;
}

void cordon_profile_free(struct cordon_profile *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->path);
	free(p->timeout_text);
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const struct key_def *k = &keys[i];

		if (k->parse == parse_list)
			cordon_list_free(FIELD(p, k, struct cordon_list));
		else if (k->parse == parse_str || k->parse == parse_opt_str ||
			 k->parse == parse_backend)
			free(*FIELD(p, k, char *));
	}
	free(p);
}

static void profile_freep(struct cordon_profile **p)
{
	cordon_profile_free(*p);
}

int cordon_profile_format(const struct cordon_profile *p, char **ret_text, cordon_error *e)
{
	_cleanup_free_ char *buf = NULL;
	const char *section = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return cordon_err(e, errno, "open_memstream");
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const struct key_def *k = &keys[i];

		if (!k->format)
			continue; /* include: the text is already resolved */
		if (section != k->section) {
			fprintf(f, "%s[%s]\n", section ? "\n" : "", k->section);
			section = k->section;
		}
		if (k->format(f, p, k, e) < 0) {
			char ctx[64];

			(void)fclose(f);
			(void)snprintf(ctx, sizeof(ctx), "[%s] %s", k->section, k->key);
			return cordon_err_prefix(e, ctx);
		}
	}
	if (fclose(f) != 0)
		return cordon_err(e, ENOMEM, "out of memory");
	*ret_text = TAKE_PTR(buf);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading one file                                                                           */

struct entry {
	const struct key_def *k;
	char *value;
	unsigned line;
};

struct parse_state {
	const char *path;
	FILE *f;
	unsigned line; /* the line last handed to libinih */
	size_t total;  /* bytes read so far */
	bool failed;   /* *e holds the first error, at err_line */
	unsigned err_line;
	cordon_error *e;
	struct entry *v;
	size_t n;
};

static void entries_free(struct parse_state *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].value);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static void state_fail(struct parse_state *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void state_fail(struct parse_state *s, int code, const char *fmt, ...)
{
	char msg[sizeof(s->e->msg)];
	va_list ap;

	if (s->failed)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	(void)cordon_err(s->e, code, "%s:%u: %s", s->path, s->line, msg);
	s->failed = true;
	s->err_line = s->line;
}

/* libinih's fgets-like reader: one line per call, checked (see the top of the file). */
static char *read_line(char *str, int num, void *stream)
{
	struct parse_state *s = stream;
	size_t max = num - 1 < PROFILE_MAX_LINE ? (size_t)(num - 1) : PROFILE_MAX_LINE;
	char buf[PROFILE_MAX_LINE + 1];
	size_t n = 0, start = 0;
	bool any = false;
	int c;

	if (s->failed || num < 2)
		return NULL;
	s->line++;
	while ((c = getc_unlocked(s->f)) != EOF) {
		any = true;
		if (++s->total > PROFILE_MAX_SIZE) {
			state_fail(s, 0, "profile too large (max %d bytes)", PROFILE_MAX_SIZE);
			return NULL;
		}
		if (c == '\n')
			break;
		/* Room for max bytes plus a '\r' of a CRLF ending; stop reading a huge line at once. */
		if (n == max + 1) {
			state_fail(s, 0, "line too long (max %zu bytes)", max);
			return NULL;
		}
		buf[n++] = (char)c;
	}
	if (ferror(s->f)) {
		state_fail(s, errno, "read error");
		return NULL;
	}
	if (!any) {
		s->line--;
		return NULL;
	}
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (n > max) {
		state_fail(s, 0, "line too long (max %zu bytes)", max);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)buf[i];

		if (b == 0) {
			state_fail(s, 0, "NUL byte in profile");
			return NULL;
		}
		if ((b < 0x20 && b != '\t') || b == 0x7f) {
			state_fail(s, 0, "control character 0x%02x", b);
			return NULL;
		}
	}
	if (s->line == 1 && n >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		start = 3;
	while (start < n && (buf[start] == ' ' || buf[start] == '\t'))
		start++;
	if (start < n && buf[start] == '[') {
		const char *name = buf + start + 1;
		const char *end = memchr(name, ']', n - start - 1);

		/* Without ']' libinih reports the syntax error itself. */
		if (end) {
			const char *rest = end + 1;

			while (rest < buf + n && (*rest == ' ' || *rest == '\t'))
				rest++;
			if (rest < buf + n && *rest != ';' && *rest != '#') {
				state_fail(s, 0, "unexpected text after section header");
				return NULL;
			}
			if (!section_known(name, (size_t)(end - name))) {
				state_fail(s, 0, "unknown section [%.*s]",
					   (int)(end - name > CLIP ? CLIP : end - name), name);
				return NULL;
			}
		}
	}
	memcpy(str, buf + start, n - start);
	str[n - start] = '\0';
	return str;
}

static int collect(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *s = user;
	const struct key_def *k;
	struct entry *v;
	cordon_error e2;

	if (s->failed)
		return 0;
	if (!*section) {
		state_fail(s, 0, "key '%s' outside of any section", name);
		return 0;
	}
	k = key_lookup(section, name);
	if (!k) {
		if (!section_known(section, strlen(section)))
			state_fail(s, 0, "unknown section [%s]", section);
		else
			state_fail(s, 0, "unknown key '%s' in [%s]", name, section);
		return 0;
	}
	if (profile_check_value(k->key, value, &e2) < 0) {
		state_fail(s, 0, "[%s] %s: %s", section, name, e2.msg);
		return 0;
	}
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v) {
		state_fail(s, ENOMEM, "out of memory");
		return 0;
	}
	s->v = v;
	v[s->n].k = k;
	v[s->n].line = s->line;
	v[s->n].value = strdup(value);
	if (!v[s->n].value) {
		state_fail(s, ENOMEM, "out of memory");
		return 0;
	}
	s->n++;
	return 1;
}

/* Open a profile file: a regular file (a FIFO or a device would block or never end). */
static int open_profile(const char *path, int *ret_fd, struct stat *ret_st, cordon_error *e)
{
	_cleanup_close_ int fd = -1;

	/* No O_NOFOLLOW: profiles in /etc may well be symlinks. O_NONBLOCK so that opening a
	 * FIFO does not hang before fstat() can refuse it; it is harmless on a regular file. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return cordon_err(e, errno, "cannot open profile '%s'", path);
	if (fstat(fd, ret_st) < 0)
		return cordon_err(e, errno, "cannot stat profile '%s'", path);
	if (!S_ISREG(ret_st->st_mode))
		return cordon_err(e, 0, "profile '%s' is not a regular file", path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* The files being loaded, innermost first: include loops are found by device and inode. */
struct chain {
	const struct chain *up;
	dev_t dev;
	ino_t ino;
	unsigned depth;
};

static int load_file(struct cordon_profile *p, const char *path, int fd, const struct chain *chain,
		     cordon_error *e);

/* An include names a profile (looked up) or a path, relative to the including file. */
static int include_resolve(const char *from, const char *value, char **ret, cordon_error *e)
{
	const char *slash;
	char *r;

	if (value[0] == '/' || (!strchr(value, '/') && !profile_name_is_path(value)))
		return profile_find(value, ret, e);
	slash = strrchr(from, '/');
	if (!slash)
		r = strdup(value);
	else if (asprintf(&r, "%.*s/%s", (int)(slash - from), from, value) < 0)
		r = NULL;
	if (!r)
		return cordon_err(e, ENOMEM, "out of memory");
	*ret = r;
	return 0;
}

static int apply_include(struct cordon_profile *p, const char *path, const struct entry *inc,
			 const struct chain *chain, cordon_error *e)
{
	_cleanup_free_ char *incpath = NULL;
	struct chain here;
	struct stat st;
	int fd;

	if (chain->depth >= PROFILE_MAX_DEPTH)
		return cordon_err(e, 0, "%s:%u: includes nested too deeply (max %d)", path,
				  inc->line, PROFILE_MAX_DEPTH);
	if (include_resolve(path, inc->value, &incpath, e) < 0 ||
	    open_profile(incpath, &fd, &st, e) < 0) {
		char ctx[sizeof(e->msg)];

		(void)snprintf(ctx, sizeof(ctx), "%s:%u: include", path, inc->line);
		return cordon_err_prefix(e, ctx);
	}
	for (const struct chain *c = chain; c; c = c->up)
		if (c->dev == st.st_dev && c->ino == st.st_ino) {
			(void)close(fd);
			return cordon_err(e, 0, "%s:%u: include loop: '%s' is already being loaded",
					  path, inc->line, incpath);
		}
	here = (struct chain){
		.up = chain, .dev = st.st_dev, .ino = st.st_ino, .depth = chain->depth + 1
	};
	return load_file(p, incpath, fd, &here, e);
}

/* Parse the file on fd (taken over) and apply it, its include first, on top of *p. */
static int load_file(struct cordon_profile *p, const char *path, int fd, const struct chain *chain,
		     cordon_error *e)
{
	struct parse_state s = { .path = path, .e = e };
	bool seen[ARRAY_SIZE(keys)] = { false };
	const struct entry *inc = NULL;
	int r, ret = -1;

	s.f = fdopen(fd, "r");
	if (!s.f) {
		(void)close(fd);
		return cordon_err(e, errno, "cannot read profile '%s'", path);
	}
	r = ini_parse_stream(read_line, &s, collect, &s);
	(void)fclose(s.f);
	if (r > 0 && (!s.failed || (unsigned)r < s.err_line)) {
		(void)cordon_err(e, 0, "%s:%d: syntax error (expected [section] or key = value)",
				 path, r);
		goto out;
	}
	if (s.failed)
		goto out;
	if (r < 0) {
		(void)cordon_err(e, ENOMEM, "%s: cannot parse (error %d)", path, r);
		goto out;
	}

	for (size_t i = 0; i < s.n; i++) {
		if (s.v[i].k->parse)
			continue;
		if (inc) {
			(void)cordon_err(e, 0, "%s:%u: include given more than once", path,
					 s.v[i].line);
			goto out;
		}
		inc = &s.v[i];
	}
	/* `include =` (empty) means none, as in SPEC §4's example. */
	if (inc && *inc->value && apply_include(p, path, inc, chain, e) < 0)
		goto out;

	for (size_t i = 0; i < s.n; i++) {
		const struct key_def *k = s.v[i].k;
		size_t idx = (size_t)(k - keys);

		if (!k->parse)
			continue;
		if (k->parse(p, k, s.v[i].value, !seen[idx], e) < 0) {
			char ctx[sizeof(e->msg)];

			(void)snprintf(ctx, sizeof(ctx), "%s:%u: [%s] %s", path, s.v[i].line,
				       k->section, k->key);
			(void)cordon_err_prefix(e, ctx);
			goto out;
		}
		seen[idx] = true;
	}
	ret = 0;
out:
	entries_free(&s);
	return ret;
}

static int load_path(const char *name, const char *path, struct cordon_profile **ret,
		     cordon_error *e)
{
	__attribute__((cleanup(profile_freep))) struct cordon_profile *p = NULL;
	struct chain root = { 0 };
	struct stat st;
	int fd;

	if (open_profile(path, &fd, &st, e) < 0)
		return -1;
	if (cordon_profile_new(&p, e) < 0) {
		(void)close(fd);
		return -1;
	}
	root.dev = st.st_dev;
	root.ino = st.st_ino;
	if (load_file(p, path, fd, &root, e) < 0)
		return -1;
	p->name = strdup(name);
	p->path = strdup(path);
	if (!p->name || !p->path)
		return cordon_err(e, ENOMEM, "out of memory");
	*ret = TAKE_PTR(p);
	return 0;
}

int cordon_profile_load(const char *name_or_path, struct cordon_profile **ret, cordon_error *e)
{
	_cleanup_free_ char *path = NULL;

	if (profile_find(name_or_path, &path, e) < 0)
		return -1;
	return load_path(name_or_path, path, ret, e);
}

/* ------------------------------------------------------------------------------------------ */
/* The lookup path                                                                            */

bool profile_name_is_path(const char *s)
{
	size_t n = strlen(s);

	return strchr(s, '/') || (n >= 5 && strcmp(s + n - 5, ".conf") == 0);
}

bool profile_name_valid(const char *s)
{
	if (!*s || *s == '.' || strlen(s) > 200)
		return false;
	for (; *s; s++)
		if (!is_alnum(*s) && !strchr("_.-", *s))
			return false;
	return true;
}

void profile_strv_free(char **v)
{
	if (!v)
		return;
	for (char **i = v; *i; i++)
		free(*i);
	free(v);
}

static void strvp_free(char ***v)
{
	profile_strv_free(*v);
}

static int strv_push(char ***v, size_t *n, char *s, cordon_error *e)
{
	char **nv;

	if (!s)
		return cordon_err(e, ENOMEM, "out of memory");
	nv = realloc(*v, (*n + 2) * sizeof(*nv));
	if (!nv) {
		free(s);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	nv[(*n)++] = s;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}

int profile_dirs(char ***ret, cordon_error *e)
{
	__attribute__((cleanup(strvp_free))) char **v = NULL;
	const char *env = getenv("CORDON_PROFILE_PATH");
	size_t n = 0;

	for (const char *p = env; p && *p;) {
		size_t len = strcspn(p, ":");

		/* Empty components (a leading, trailing or doubled ':') name nothing. */
		if (len && strv_push(&v, &n, strndup(p, len), e) < 0)
			return -1;
		p += len;
		if (*p == ':')
			p++;
	}
	/* SPEC §4: /etc/cordon/profiles always; an install under another prefix (make install
	 * PREFIX=/usr/local) also finds the profiles it installed next to it. */
	if (strv_push(&v, &n, strdup("/etc/cordon/profiles"), e) < 0)
		return -1;
	if (strcmp(CORDON_SYSCONFDIR, "/etc") != 0 &&
	    strv_push(&v, &n, strdup(CORDON_SYSCONFDIR "/cordon/profiles"), e) < 0)
		return -1;
	/*
	 * The source tree's profiles, for a cordon built there (make, make check, make demo).
	 * Empty in a package (debian/rules: DEV_PROFILES=): a package built in a scratch
	 * directory would look in a directory that is gone on the target machine and that
	 * anyone could make there (profile_trusted refuses one that is not theirs or root's).
	 */
	if (CORDON_DEV_PROFILES[0] && strv_push(&v, &n, strdup(CORDON_DEV_PROFILES), e) < 0)
		return -1;
	*ret = TAKE_PTR(v);
	return 0;
}

/*
 * A profile found on the search path must be the caller's or root's, writable by nobody else,
 * in a directory that is too (ssh's StrictModes rule): a profile decides the sandbox (its
 * binds, masks, network), so a file another user could write, replace or plant would let that
 * user weaken the caller's sandbox, root's and cordond's above all.
 */
static bool owner_ok(const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & 022);
}

static int profile_trusted(const char *path, cordon_error *e)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return 0;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if (lstat(dir[0] ? dir : "/", &st) < 0 || !owner_ok(&st))
		return cordon_err(e, 0,
				  "profile '%s': its directory is neither yours nor root's, or "
				  "others can write it; cordon reads only profiles you or root "
				  "control",
				  path);
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || !owner_ok(&st))
		return cordon_err(e, 0,
				  "profile '%s': not a regular file of yours or root's that only "
				  "its owner can write; cordon reads only profiles you or root "
				  "control",
				  path);
	return 0;
}

int profile_find(const char *name, char **ret_path, cordon_error *e)
{
	__attribute__((cleanup(strvp_free))) char **dirs = NULL;
	_cleanup_free_ char *searched = NULL;
	size_t slen = 0;
	FILE *f;

	if (profile_name_is_path(name)) {
		char *r = strdup(name);

		if (!r)
			return cordon_err(e, ENOMEM, "out of memory");
		*ret_path = r;
		return 0;
	}
	if (!profile_name_valid(name))
		return cordon_err(e, 0,
				  "invalid profile name '%.*s%s' (expected letters, digits, '_', "
				  "'.', '-', not starting with '.')",
				  CLIP_ARGS(name));
	if (profile_dirs(&dirs, e) < 0)
		return -1;
	for (char **d = dirs; *d; d++) {
		_cleanup_free_ char *cand = NULL;
		struct stat st;

		if (asprintf(&cand, "%s/%s.conf", *d, name) < 0)
			return cordon_err(e, ENOMEM, "out of memory");
		if (stat(cand, &st) == 0) {
			if (profile_trusted(cand, e) < 0)
				return -1;
			*ret_path = TAKE_PTR(cand);
			return 0;
		}
		/* A directory that is missing or unreadable holds nothing for us; anything else
		 * (EACCES on the file, ELOOP) is reported rather than silently skipped, or a
		 * profile further down the path would be used instead of the intended one. */
		if (errno != ENOENT && errno != ENOTDIR)
			return cordon_err(e, errno, "cannot access '%s'", cand);
	}
	f = open_memstream(&searched, &slen);
	if (!f)
		return cordon_err(e, errno, "open_memstream");
	for (char **d = dirs; *d; d++)
		fprintf(f, "%s%s", d == dirs ? "" : ", ", *d);
	if (fclose(f) != 0)
		return cordon_err(e, ENOMEM, "out of memory");
	return cordon_err(e, 0, "profile '%s' not found (searched: %s)", name, searched);
}

struct found {
	char *name;
	char *path;
};

static int found_cmp(const void *a, const void *b)
{
	return strcmp(((const struct found *)a)->name, ((const struct found *)b)->name);
}

int profile_list(char ***ret_lines, cordon_error *e)
{
	__attribute__((cleanup(strvp_free))) char **dirs = NULL;
	__attribute__((cleanup(strvp_free))) char **lines = NULL;
	struct found *fv = NULL;
	size_t nf = 0, nl = 0;
	int ret = -1;

	if (profile_dirs(&dirs, e) < 0)
		return -1;
	for (char **d = dirs; *d; d++) {
		_cleanup_closedir_ DIR *dir = opendir(*d);
		struct dirent *de;

		if (!dir) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			(void)cordon_err(e, errno, "cannot read directory '%s'", *d);
			goto out;
		}
		while ((de = readdir(dir))) {
			size_t len = strlen(de->d_name);
			_cleanup_free_ char *name = NULL, *path = NULL;
			struct found *nfv;
			struct stat st;
			bool dup = false;

			if (len <= 5 || strcmp(de->d_name + len - 5, ".conf") != 0)
				continue;
			name = strndup(de->d_name, len - 5);
			if (!name) {
				(void)cordon_err(e, ENOMEM, "out of memory");
				goto out;
			}
			if (!profile_name_valid(name))
				continue;
			for (size_t i = 0; i < nf && !dup; i++)
				dup = strcmp(fv[i].name, name) == 0;
			if (dup)
				continue; /* the first directory on the path wins, as in lookup */
			if (asprintf(&path, "%s/%s", *d, de->d_name) < 0) {
				path = NULL;
				(void)cordon_err(e, ENOMEM, "out of memory");
				goto out;
			}
			if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
				continue;
			nfv = realloc(fv, (nf + 1) * sizeof(*fv));
			if (!nfv) {
				(void)cordon_err(e, ENOMEM, "out of memory");
				goto out;
			}
			fv = nfv;
			fv[nf].name = TAKE_PTR(name);
			fv[nf].path = TAKE_PTR(path);
			nf++;
		}
	}
	qsort(fv, nf, sizeof(*fv), found_cmp);

	lines = calloc(1, sizeof(*lines));
	if (!lines) {
		(void)cordon_err(e, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nf; i++) {
		__attribute__((cleanup(profile_freep))) struct cordon_profile *p = NULL;
		cordon_error le;
		const char *desc;
		char *line;
		char ebuf[sizeof(le.msg) + 64], msg[sizeof(le.msg) + 48];

		/* One broken profile must not hide the others: show why it is broken instead. */
		if (load_path(fv[i].name, fv[i].path, &p, &le) < 0) {
			(void)snprintf(ebuf, sizeof(ebuf), "(invalid: %s)",
				       cordon_err_str(&le, msg, sizeof(msg)));
			desc = ebuf;
		} else {
			desc = p->description;
		}
		if (asprintf(&line, "%s\t%s\t%s", fv[i].name, fv[i].path, desc) < 0)
			line = NULL;
		if (strv_push(&lines, &nl, line, e) < 0)
			goto out;
		/* Tabs separate the fields; a description may hold one. */
		for (char *c = line + strlen(fv[i].name) + strlen(fv[i].path) + 2; *c; c++)
			if (*c == '\t')
				*c = ' ';
	}
	*ret_lines = TAKE_PTR(lines);
	ret = 0;
out:
	for (size_t i = 0; i < nf; i++) {
		free(fv[i].name);
		free(fv[i].path);
	}
	free(fv);
	return ret;
}

int profile_digest(const struct cordon_profile *p, char out[17], cordon_error *e)
{
	_cleanup_free_ char *text = NULL;
	uint64_t h = 0xcbf29ce484222325ull;

	if (cordon_profile_format(p, &text, e) < 0)
		return -1;
	for (const unsigned char *c = (const unsigned char *)text; *c; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	(void)snprintf(out, 17, "%016llx", (unsigned long long)h);
	return 0;
}
