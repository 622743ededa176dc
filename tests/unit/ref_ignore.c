/* SPDX-License-Identifier: MIT */
/*
 * The oracle for tests/unit/test_policy_ignore.c: policy/ignore.c as it was at 946f8ee,
 * before the patterns were compiled once per check. Every token is matched against every
 * pattern, each compiled again by pyfnmatch(): the straightforward reading of check_ignore,
 * whose cost is the product of tokens and patterns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"
#include "tests/unit/ref_ignore.h"

static bool ignore_is_glob(const char *pattern)
{
	return strpbrk(pattern, "*?[") != NULL;
}

/* One pattern against one resolved path; 1 = deny, 0 = no, -1 = error. */
static int ignore_match(const char *pattern, const char *rel, const char *name, cordon_error *e)
{
	size_t plen = strlen(pattern);
	int r;

	if (ignore_is_glob(pattern)) {
		r = pyfnmatch(rel, pattern, e);
		if (r != 0)
			return r;
		if (!strncmp(pattern, "**/", 3)) {
			r = pyfnmatch(name, pattern + 3, e);
			if (r != 0)
				return r;
		}
		return pyfnmatch(name, pattern, e);
	}
	/* A plain pattern: the basename at any depth, or the relative path, or a directory
	 * prefix of it. No anchoring and no trailing-slash rule: "/secrets" and "secrets/"
	 * never match anything, unlike gitignore. */
	return !strcmp(name, pattern) || !strcmp(rel, pattern) ||
	       (!strncmp(rel, pattern, plen) && rel[plen] == '/');
}

/* Check one token: 0 with *ret_deny set or not, -1 on error. */
static int ignore_token(const char *token, const char *workdir, const char *base,
			const struct cordon_list *patterns, policy_resolve_fn resolve,
			char **ret_deny, cordon_error *e)
{
	_cleanup_free_ char *abs = NULL, *resolved = NULL, *rel = NULL, *name = NULL;
	int r;

	r = resolve(workdir, token, &abs, e);
	if (r < 0)
		return -1;
	if (r > 0)
		return 0; /* Python's resolve() raised (a symlink loop): the token is skipped */
	if (pypath_pure(abs, &resolved, e) < 0)
		return -1;

	/* Containment comes first and holds whatever the patterns are, even for ignore=[]. */
	r = pypath_relative_to(resolved, base, &rel, e);
	if (r < 0)
		return -1;
	if (r > 0)
		return pystr_asprintf(ret_deny, e, "Access denied: %s", resolved);

	/* AG2 writes rel with str(...).replace("\\", "/") for Windows; on POSIX that turns a
	 * backslash in a file name into a separator, and a C port must do the same. */
	for (char *c = rel; *c; c++)
		if (*c == '\\')
			*c = '/';
	if (pypath_name(resolved, &name, e) < 0)
		return -1;
	for (size_t k = 0; k < patterns->n; k++) {
		r = ignore_match(patterns->v[k], rel, name, e);
		if (r < 0)
			return -1;
		if (r > 0)
			return pystr_asprintf(ret_deny, e, "Access denied: %s", resolved);
	}
	return 0;
}

int ref_ignore_check(const char *command, const char *workdir, const struct cordon_list *patterns,
		     policy_resolve_fn resolve, bool wildcards, char **ret_deny, cordon_error *e)
{
	_cleanup_free_ char *base_abs = NULL, *base = NULL;
	char **tokens = NULL;
	const char *err;
	char *deny = NULL;
	int r;

	/* shlex first; on its ValueError (an open quote, a trailing backslash) AG2 falls back
	 * to str.split(), so quotes then stay in the tokens. */
	r = policy_split(command, &tokens, &err, e);
	if (r < 0)
		return -1;
	if (r > 0 && pystr_split(command, &tokens, e) < 0)
		return -1;

	/* The workdir goes through the same resolver: workdir.resolve() on the host,
	 * normpath(workdir) for a PurePosixPath. */
	r = resolve(workdir, ".", &base_abs, e);
	if (r > 0)
		r = cordon_err(e, ELOOP, "cannot resolve the working directory '%s'", workdir);
	if (r < 0 || pypath_pure(base_abs, &base, e) < 0)
		goto fail;

	for (size_t k = 0; tokens[k] && !deny; k++) {
		/* Restricted mode: a program run without a shell sees no glob expansion, but a
		 * Windows runtime would expand it, so such a token is refused outright. */
		if (wildcards && strpbrk(tokens[k], "*?[{")) {
			_cleanup_free_ char *q = NULL;

			if (pyrepr(tokens[k], &q, e) < 0 ||
			    pystr_asprintf(&deny, e,
					   "Access denied (wildcard arguments are not supported "
					   "with ignore): %s",
					   q) < 0)
				goto fail;
			break;
		}
		if (ignore_token(tokens[k], workdir, base, patterns, resolve, &deny, e) < 0)
			goto fail;
	}
	policy_strv_free(tokens);
	*ret_deny = deny;
	return 0;
fail:
	policy_strv_free(tokens);
	free(deny);
	return -1;
}
