/* SPDX-License-Identifier: MIT */
/*
 * The oracle for tests/unit/test_policy_resolve.c: runtime/resolve.c as it was at 946f8ee, before
 * the path became one growing buffer and the memo of links a tree. It is the straightforward port of posixpath._joinrealpath(), a new string per component and
 * a list searched linearly, so quadratic in the token; the tests compare the two on random
 * trees and tokens, on inputs small enough for this one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy.h"
#include "runtime/cleanup.h"
#include "tests/unit/ref_resolve.h"

/* Python's recursion limit (1000 frames) ends a long chain of links with RecursionError,
 * which check_ignore's `except Exception` turns into a skipped token. The exact depth
 * depends on the caller's stack; this is the same order of magnitude. */
#define RESOLVE_MAX_DEPTH 960

struct resolve_seen {
	char **key;
	char **val; /* NULL: being resolved */
	size_t n;
};

static char *resolve_join(const char *a, const char *b)
{
	size_t la = strlen(a);
	char *r;

	if (b[0] == '/' || la == 0)
		return strdup(b);
	if (asprintf(&r, "%s%s%s", a, a[la - 1] == '/' ? "" : "/", b) < 0)
		return NULL;
	return r;
}

/* posixpath.split(path)[0] and [1]: head without trailing slashes unless all slashes. */
static int resolve_split(const char *path, char **ret_head, char **ret_tail)
{
	const char *slash = strrchr(path, '/');
	size_t i = slash ? (size_t)(slash - path) + 1 : 0, h = i;
	char *head, *tail;

	while (h > 0 && path[h - 1] == '/')
		h--;
	if (h == 0)
		h = i; /* "/" or "//" stays as it is */
	head = strndup(path, h);
	tail = strdup(path + i);
	if (!head || !tail) {
		free(head);
		free(tail);
		return -1;
	}
	*ret_head = head;
	*ret_tail = tail;
	return 0;
}

/* The value memoised for newpath, or (char *)-1 when not seen yet. */
static char *resolve_seen_get(const struct resolve_seen *s, const char *key, size_t *ret_k)
{
	for (size_t k = 0; k < s->n; k++)
		if (!strcmp(s->key[k], key)) {
			*ret_k = k;
			return s->val[k];
		}
	return (char *)-1;
}

static int resolve_seen_add(struct resolve_seen *s, const char *key)
{
	char **k = realloc(s->key, (s->n + 1) * sizeof(*k));
	char **v;

	if (!k)
		return -1;
	s->key = k;
	v = realloc(s->val, (s->n + 1) * sizeof(*v));
	if (!v)
		return -1;
	s->val = v;
	s->key[s->n] = strdup(key);
	if (!s->key[s->n])
		return -1;
	s->val[s->n++] = NULL;
	return 0;
}

/*
 * _joinrealpath(path, rest): *path is replaced by the result. Returns 0 (ok), 2 (stopped at
 * a loop: the rest is appended unresolved, as in Python), 1 (Python raises), -1 ENOMEM.
 */
static int resolve_join_real(char **path, const char *rest_in, struct resolve_seen *seen, int depth)
{
	_cleanup_free_ char *rest_buf = NULL;
	char *rest;

	if (depth > RESOLVE_MAX_DEPTH)
		return 1;
	if (rest_in[0] == '/') {
		free(*path);
		*path = strdup("/");
		if (!*path)
			return -1;
		rest_in++;
	}
	rest_buf = strdup(rest_in);
	if (!rest_buf)
		return -1;
	rest = rest_buf;

	while (rest && *rest) {
		char *name = rest, *slash = strchr(rest, '/');
		_cleanup_free_ char *newpath = NULL;
		struct stat st;

		if (slash) {
			*slash = '\0';
			rest = slash + 1;
		} else {
			rest = NULL;
		}
		if (!name[0] || !strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			/* Lexical, on the path resolved so far: after a link, its target. */
			if ((*path)[0]) {
				_cleanup_free_ char *head = NULL, *tail = NULL;

				if (resolve_split(*path, &head, &tail) < 0)
					return -1;
				free(*path);
				if (!strcmp(tail, "..")) {
					*path = resolve_join(head, "../..");
				} else {
					*path = TAKE_PTR(head);
				}
			} else {
				free(*path);
				*path = strdup("..");
			}
			if (!*path)
				return -1;
			continue;
		}
		newpath = resolve_join(*path, name);
		if (!newpath)
			return -1;
		/* Non-strict: a component that cannot be lstat'ed is simply not a link. */
		if (lstat(newpath, &st) < 0 || !S_ISLNK(st.st_mode)) {
			free(*path);
			*path = TAKE_PTR(newpath);
			continue;
		}

		size_t k;
		char *known = resolve_seen_get(seen, newpath, &k);

		if (known != (char *)-1) {
			if (known) {
				free(*path);
				*path = strdup(known);
				if (!*path)
					return -1;
				continue;
			}
			/* A link met again while resolving itself: a loop. Python returns
			 * join(newpath, rest) and lets the final stat() report ELOOP. */
			free(*path);
			*path = resolve_join(newpath, rest ? rest : "");
			return *path ? 2 : -1;
		}
		if (resolve_seen_add(seen, newpath) < 0)
			return -1;
		k = seen->n - 1;

		_cleanup_free_ char *target = NULL;
		ssize_t n;
		size_t cap = 256;

		for (;;) {
			free(target);
			target = malloc(cap);
			if (!target)
				return -1;
			n = readlink(newpath, target, cap);
			if (n < 0)
				return 1; /* os.readlink() raised: resolve() raises */
			if ((size_t)n < cap)
				break;
			cap *= 2;
		}
		target[n] = '\0';

		int r = resolve_join_real(path, target, seen, depth + 1);

		if (r < 0 || r == 1)
			return r;
		if (r == 2) {
			char *j = resolve_join(*path, rest ? rest : "");

			free(*path);
			*path = j;
			return j ? 2 : -1;
		}
		seen->val[k] = strdup(*path);
		if (!seen->val[k])
			return -1;
	}
	return 0;
}

/*
 * str(PurePosixPath(path)): repeated slashes and "." components dropped, a root of exactly
 * two slashes kept. Path(workdir) / token is built this way before realpath() sees it, and
 * it matters: with "a//b", realpath's loop fallback join(link, "/b") would restart at "/".
 */
static char *resolve_pure(const char *path)
{
	size_t n = strlen(path), len = 0, i = 0;
	char *out = malloc(n + 2);

	if (!out)
		return NULL;
	if (path[0] == '/') {
		size_t slashes = (path[1] == '/' && path[2] != '/') ? 2 : 1;

		memcpy(out, "//", slashes);
		len = slashes;
	}
	while (i < n) {
		size_t start, end;

		while (i < n && path[i] == '/')
			i++;
		start = i;
		while (i < n && path[i] != '/')
			i++;
		end = i;
		if (end == start || (end - start == 1 && path[start] == '.'))
			continue;
		if (len > 0 && out[len - 1] != '/')
			out[len++] = '/';
		memcpy(out + len, path + start, end - start);
		len += end - start;
	}
	if (len == 0)
		out[len++] = '.';
	out[len] = '\0';
	return out;
}

int ref_resolve_host(const char *workdir, const char *token, char **ret_abs, cordon_error *e)
{
	_cleanup_free_ char *joined = NULL, *path = NULL, *abs = NULL;
	struct resolve_seen seen = { 0 };
	struct stat st;
	int r;

	/* Path(workdir) / token: an absolute token replaces the workdir; "~" is a name. */
	_cleanup_free_ char *raw = resolve_join(workdir, token);

	joined = raw ? resolve_pure(raw) : NULL;
	path = strdup("");
	if (!joined || !path)
		return cordon_err(e, ENOMEM, "out of memory");
	r = resolve_join_real(&path, joined, &seen, 0);
	for (size_t k = 0; k < seen.n; k++) {
		free(seen.key[k]);
		free(seen.val[k]);
	}
	free(seen.key);
	free(seen.val);
	if (r < 0)
		return cordon_err(e, ENOMEM, "out of memory");
	if (r == 1)
		return 1;

	/* abspath(): a relative result (a relative workdir) is taken from the cwd. */
	if (path[0] != '/') {
		_cleanup_free_ char *cwd = getcwd(NULL, 0), *j = NULL;

		if (!cwd)
			return 1; /* os.getcwd() raised */
		j = resolve_join(cwd, path);
		if (!j)
			return cordon_err(e, ENOMEM, "out of memory");
		free(path);
		path = TAKE_PTR(j);
	}
	/* posixpath.normpath(), for the final abspath(). */
	if (pypath_normpath(path, &abs, e) < 0)
		return -1;
	/* Path.resolve() stats the result so a loop left unresolved by realpath() raises
	 * RuntimeError("Symlink loop ..."); any other stat error is ignored. */
	if (stat(abs, &st) < 0 && errno == ELOOP)
		return 1;
	*ret_abs = TAKE_PTR(abs);
	return 0;
}
