/* SPDX-License-Identifier: MIT */
/*
 * Host-mode resolution for the ignore filter, reproducing Python 3.11's Path.resolve().
 *
 * This is deliberately not realpath(3): glibc's fails on a missing component, while Python's
 * non-strict realpath keeps the missing tail as written; glibc gives up after 40 links,
 * Python follows any chain and only detects loops by memoising the links it has seen; and
 * ".." is applied to the path resolved so far, i.e. after a symlink to its target. The
 * algorithm is posixpath._joinrealpath() step for step, so a refusal message names the same
 * path AG2's would. It does I/O (lstat, readlink, stat), which is why it lives in runtime/
 * and is handed to the pure policy code as a function pointer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <search.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy.h"
#include "runtime/cleanup.h"
#include "runtime/grow.h"
#include "runtime/resolve.h"

/* Python's recursion limit (1000 frames) ends a long chain of links with RecursionError,
 * which check_ignore's `except Exception` turns into a skipped token. The exact depth
 * depends on the caller's stack; this is the same order of magnitude. */
#define RESOLVE_MAX_DEPTH 960

/*
 * The cost of a resolution must stay linear in the token: a command (untrusted) can name a
 * path of half a million components, and the previous command can have planted as many
 * symlinks for it to cross, all before the command's timeout starts. So the path is one
 * growing buffer that components are appended to and ".." cuts back (Python builds a new
 * string each time, which is quadratic here), and the links already seen are kept in a
 * balanced tree (tsearch: red-black in glibc), not a list searched from the start.
 */
struct resolve_memo {
	char *key;
	char *val; /* NULL: being resolved */
	struct resolve_stats *st;
};

struct resolve_ctx {
	char *path; /* the path resolved so far, NUL-terminated at path[len] */
	size_t len, cap;
	void *memo; /* tsearch root of struct resolve_memo */
	struct resolve_stats *st;
	cordon_error *e;
};

/*
 * The work the resolutions of one policy check may do (resolve_budget_begin): bytes of token
 * and link targets parsed and of path built, plus RESOLVE_LSTAT_COST a component looked up.
 * Each token's resolution is linear, but the previous command can plant chains of 960 links
 * with 4 KB targets, and then a two-byte token costs megabytes; a cordond body holds half a
 * million tokens. Past the budget the check fails (the command is refused, exit 125), which
 * Python, following every chain, never does: no command an agent writes comes near it.
 * Thread-local: a check runs on one thread.
 */
#define RESOLVE_LSTAT_COST 64
static __thread bool budget_on;
static __thread uint64_t budget_left, budget_total;

void resolve_budget_begin(uint64_t units)
{
	budget_on = true;
	budget_left = budget_total = units;
}

void resolve_budget_end(void)
{
	budget_on = false;
}

static int resolve_spend(struct resolve_ctx *c, uint64_t units)
{
	if (!budget_on)
		return 0;
	if (units > budget_left) {
		budget_left = 0;
		return cordon_err(
			c->e, 0,
			"the command's paths take too much work to resolve for the ignore "
			"check (links in the workdir; over %llu units): refused",
			(unsigned long long)budget_total);
	}
	budget_left -= units;
	return 0;
}

static int resolve_memo_cmp(const void *a, const void *b)
{
	const struct resolve_memo *x = a, *y = b;

	if (x->st)
		x->st->compared++;
	return strcmp(x->key, y->key);
}

static void resolve_memo_free(void *p)
{
	struct resolve_memo *m = p;

	free(m->key);
	free(m->val);
	free(m);
}

/* path[len..) = s[0..n) */
static int resolve_add(struct resolve_ctx *c, const char *s, size_t n)
{
	if (n > SIZE_MAX / 2 - c->len)
		return cordon_err(c->e, ENOMEM, "out of memory");
	if (resolve_spend(c, n) < 0)
		return -1;
	while (c->len + n + 1 > c->cap)
		if (array_grow(&c->path, c->cap, &c->cap, 256, c->e) < 0)
			return -1;
	memcpy(c->path + c->len, s, n);
	c->len += n;
	c->path[c->len] = '\0';
	if (c->st)
		c->st->copied += n;
	return 0;
}

static int resolve_set(struct resolve_ctx *c, const char *s)
{
	c->len = 0;
	return resolve_add(c, s, strlen(s));
}

static void resolve_cut(struct resolve_ctx *c, size_t len)
{
	c->len = len;
	c->path[len] = '\0';
}

/* path = posixpath.join(path, b), in place: an absolute b replaces it. */
static int resolve_append(struct resolve_ctx *c, const char *b, size_t n)
{
	if (b[0] == '/')
		c->len = 0;
	else if (c->len > 0 && c->path[c->len - 1] != '/' && resolve_add(c, "/", 1) < 0)
		return -1;
	return resolve_add(c, b, n);
}

/* posixpath.join(a, b) as a new string, for the few joins outside the component loop. */
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

/*
 * ".." on the path resolved so far: path = posixpath.split(path)[0] (the head, without its
 * trailing slashes unless it is all slashes), or join(head, "../..") when the tail is itself
 * "..", or ".." for an empty path. Lexical: after a link, it applies to the link's target.
 */
static int resolve_parent(struct resolve_ctx *c)
{
	const char *slash;
	size_t i, h;
	bool dotdot;

	if (c->len == 0)
		return resolve_set(c, "..");
	slash = memrchr(c->path, '/', c->len);
	i = slash ? (size_t)(slash - c->path) + 1 : 0;
	h = i;
	while (h > 0 && c->path[h - 1] == '/')
		h--;
	if (h == 0)
		h = i; /* "/" or "//" stays as it is */
	dotdot = c->len - i == 2 && c->path[i] == '.' && c->path[i + 1] == '.';
	resolve_cut(c, h);
	return dotdot ? resolve_append(c, "../..", 5) : 0;
}

/* Stopped at a loop: path = join(path, rest), the rest left as written; returns 2. */
static int resolve_loop(struct resolve_ctx *c, const char *rest)
{
	if (!rest)
		rest = "";
	return resolve_append(c, rest, strlen(rest)) < 0 ? -1 : 2;
}

/*
 * _joinrealpath(path, rest): c->path is replaced by the result. Returns 0 (ok), 2 (stopped at
 * a loop: the rest is appended unresolved, as in Python), 1 (Python raises), -1 with c->e.
 */
static int resolve_join_real(struct resolve_ctx *c, const char *rest_in, int depth)
{
	_cleanup_free_ char *rest_buf = NULL;
	char *rest;

	if (depth > RESOLVE_MAX_DEPTH)
		return 1;
	if (resolve_spend(c, strlen(rest_in)) < 0)
		return -1;
	if (rest_in[0] == '/') {
		if (resolve_set(c, "/") < 0)
			return -1;
		rest_in++;
	}
	rest_buf = strdup(rest_in);
	if (!rest_buf)
		return cordon_err(c->e, ENOMEM, "out of memory");
	rest = rest_buf;

	while (rest && *rest) {
		char *name = rest, *slash = strchr(rest, '/');
		size_t before = c->len;
		struct resolve_memo probe, *m, **node;
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
			if (resolve_parent(c) < 0)
				return -1;
			continue;
		}
		/* newpath = join(path, name), built in place: path[0..before) stays the path. */
		if (resolve_append(c, name, strlen(name)) < 0)
			return -1;
		/* Non-strict: a component that cannot be lstat'ed is simply not a link. */
		if (resolve_spend(c, RESOLVE_LSTAT_COST) < 0)
			return -1;
		if (lstat(c->path, &st) < 0 || !S_ISLNK(st.st_mode))
			continue;

		probe = (struct resolve_memo){ .key = c->path, .st = c->st };
		node = tfind(&probe, &c->memo, resolve_memo_cmp);
		if (node) {
			m = *node;
			if (m->val) {
				if (resolve_set(c, m->val) < 0)
					return -1;
				continue;
			}
			/* A link met again while resolving itself: a loop. Python returns
			 * join(newpath, rest) and lets the final stat() report ELOOP. */
			return resolve_loop(c, rest);
		}
		m = calloc(1, sizeof(*m));
		if (!m)
			return cordon_err(c->e, ENOMEM, "out of memory");
		m->st = c->st;
		m->key = strdup(c->path);
		if (!m->key || !tsearch(m, &c->memo, resolve_memo_cmp)) {
			resolve_memo_free(m);
			return cordon_err(c->e, ENOMEM, "out of memory");
		}
		if (c->st)
			c->st->memo++;

		_cleanup_free_ char *target = NULL;
		ssize_t n;
		size_t cap = 256;

		for (;;) {
			free(target);
			target = malloc(cap);
			if (!target)
				return cordon_err(c->e, ENOMEM, "out of memory");
			n = readlink(m->key, target, cap);
			if (n < 0)
				return 1; /* os.readlink() raised: resolve() raises */
			if ((size_t)n < cap)
				break;
			cap *= 2;
		}
		target[n] = '\0';

		/* The target is resolved from the link's directory: path as it was. */
		resolve_cut(c, before);
		int r = resolve_join_real(c, target, depth + 1);

		if (r < 0 || r == 1)
			return r;
		if (r == 2)
			return resolve_loop(c, rest);
		m->val = strdup(c->path);
		if (!m->val)
			return cordon_err(c->e, ENOMEM, "out of memory");
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

int resolve_host_stats(const char *workdir, const char *token, char **ret_abs,
		       struct resolve_stats *st, cordon_error *e)
{
	_cleanup_free_ char *joined = NULL, *path = NULL, *abs = NULL;
	struct resolve_ctx c = { .st = st, .e = e };
	struct stat sb;
	int r;

	/* Path(workdir) / token: an absolute token replaces the workdir; "~" is a name. */
	_cleanup_free_ char *raw = resolve_join(workdir, token);

	joined = raw ? resolve_pure(raw) : NULL;
	if (!joined)
		return cordon_err(e, ENOMEM, "out of memory");
	r = resolve_set(&c, "");
	if (r == 0)
		r = resolve_join_real(&c, joined, 0);
	tdestroy(c.memo, resolve_memo_free);
	path = c.path;
	if (r < 0)
		return -1;
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
	if (stat(abs, &sb) < 0 && errno == ELOOP)
		return 1;
	*ret_abs = TAKE_PTR(abs);
	return 0;
}

int resolve_host(const char *workdir, const char *token, char **ret_abs, cordon_error *e)
{
	return resolve_host_stats(workdir, token, ret_abs, NULL, e);
}
