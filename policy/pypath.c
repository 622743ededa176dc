/* SPDX-License-Identifier: MIT */
/*
 * posixpath and pathlib.PurePosixPath of Python 3.11, as far as AG2's filters use them.
 *
 * Two path models coexist in AG2 and give different answers on the same string:
 *   - posixpath.normpath() collapses "a/.." lexically and keeps a leading "//" (POSIX leaves
 *     its meaning to the implementation), but turns "///" into "/";
 *   - pathlib keeps ".." as a component, drops "." and empty ones, and also keeps "//".
 * relative_to() and match() are component-wise on the pathlib form, which is why an absolute
 * path such as "/ws/../etc" is "under" "/ws" for ShellExecutor (a documented AG2 weakness).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"

bool pypath_isabs(const char *path)
{
	return path[0] == '/';
}

int pypath_join(const char *a, const char *b, char **ret, cordon_error *e)
{
	size_t la = strlen(a);

	if (b[0] == '/' || la == 0)
		return pystr_asprintf(ret, e, "%s", b);
	return pystr_asprintf(ret, e, "%s%s%s", a, a[la - 1] == '/' ? "" : "/", b);
}

int pypath_normpath(const char *path, char **ret, cordon_error *e)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_free_ const char **comps = NULL;
	struct pystr_buf b = { 0 };
	size_t n = 0, slashes = 0;
	char *save = NULL, *c;

	if (!path[0])
		return pystr_asprintf(ret, e, ".");
	if (path[0] == '/')
		slashes = (path[1] == '/' && path[2] != '/') ? 2 : 1;
	copy = strdup(path);
	comps = calloc(strlen(path) + 1, sizeof(*comps));
	if (!copy || !comps)
		return cordon_err(e, ENOMEM, "out of memory");
	for (c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		/* ".." pops a real component; it is kept at the start of a relative path
		 * and after another kept ".."; it vanishes at the root of an absolute one. */
		if (strcmp(c, "..") || (!slashes && n == 0) ||
		    (n > 0 && !strcmp(comps[n - 1], "..")))
			comps[n++] = c;
		else if (n > 0)
			n--;
	}
	if (pystr_buf_add(&b, "//", slashes, e) < 0)
		goto fail;
	for (size_t k = 0; k < n; k++)
		if ((k > 0 && pystr_buf_add(&b, "/", 1, e) < 0) ||
		    pystr_buf_add(&b, comps[k], strlen(comps[k]), e) < 0)
			goto fail;
	if (b.len == 0 && pystr_buf_add(&b, ".", 1, e) < 0)
		goto fail;
	*ret = b.s;
	return 0;
fail:
	free(b.s);
	return -1;
}

int policy_resolve_lexical(const char *workdir, const char *token, char **ret_abs, cordon_error *e)
{
	_cleanup_free_ char *joined = NULL;

	if (pypath_join(workdir, token, &joined, e) < 0)
		return -1;
	return pypath_normpath(joined, ret_abs, e);
}

/* A parsed PurePosixPath: its root ("", "/" or "//") and its parts after the root. */
struct pypath {
	const char *root;
	char **parts;
	size_t n;
	char *buf;
};

static void pypath_done(struct pypath *p)
{
	free(p->parts);
	free(p->buf);
}

static int pypath_parse(const char *path, struct pypath *ret, cordon_error *e)
{
	struct pypath p = { .root = "" };
	char *save = NULL, *c;

	/* _PosixFlavour.splitroot: exactly two slashes are a root of their own. */
	if (path[0] == '/')
		p.root = (path[1] == '/' && path[2] != '/') ? "//" : "/";
	p.buf = strdup(path);
	p.parts = calloc(strlen(path) + 1, sizeof(*p.parts));
	if (!p.buf || !p.parts) {
		pypath_done(&p);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	for (c = strtok_r(p.buf, "/", &save); c; c = strtok_r(NULL, "/", &save))
		if (strcmp(c, "."))
			p.parts[p.n++] = c;
	*ret = p;
	return 0;
}

static int pypath_format(const char *root, char *const *parts, size_t n, char **ret,
			 cordon_error *e)
{
	struct pystr_buf b = { 0 };

	if (pystr_buf_add(&b, root, strlen(root), e) < 0)
		goto fail;
	for (size_t k = 0; k < n; k++)
		if ((k > 0 && pystr_buf_add(&b, "/", 1, e) < 0) ||
		    pystr_buf_add(&b, parts[k], strlen(parts[k]), e) < 0)
			goto fail;
	if (b.len == 0 && pystr_buf_add(&b, ".", 1, e) < 0)
		goto fail;
	*ret = b.s;
	return 0;
fail:
	free(b.s);
	return -1;
}

int pypath_pure(const char *path, char **ret, cordon_error *e)
{
	struct pypath p;
	int r;

	if (pypath_parse(path, &p, e) < 0)
		return -1;
	r = pypath_format(p.root, p.parts, p.n, ret, e);
	pypath_done(&p);
	return r;
}

int pypath_name(const char *path, char **ret, cordon_error *e)
{
	struct pypath p;
	int r;

	if (pypath_parse(path, &p, e) < 0)
		return -1;
	r = pystr_asprintf(ret, e, "%s", p.n ? p.parts[p.n - 1] : "");
	pypath_done(&p);
	return r;
}

int pypath_relative_to(const char *path, const char *base, char **ret_rel, cordon_error *e)
{
	struct pypath p, b;
	int r = 1;

	if (pypath_parse(path, &p, e) < 0)
		return -1;
	if (pypath_parse(base, &b, e) < 0) {
		pypath_done(&p);
		return -1;
	}
	/* The roots compare as one component, then the parts one by one. */
	if (strcmp(p.root, b.root) || b.n > p.n)
		goto out;
	for (size_t k = 0; k < b.n; k++)
		if (strcmp(p.parts[k], b.parts[k]))
			goto out;
	r = pypath_format("", p.parts + b.n, p.n - b.n, ret_rel, e);
out:
	pypath_done(&p);
	pypath_done(&b);
	return r;
}

int pypath_match(const char *path, const char *pattern, cordon_error *e)
{
	struct pypath p, pat;
	size_t np, npat;
	int r = 0;

	if (pypath_parse(pattern, &pat, e) < 0)
		return -1;
	if (!pat.root[0] && pat.n == 0) {
		pypath_done(&pat);
		return 2; /* ValueError("empty pattern") */
	}
	if (pypath_parse(path, &p, e) < 0) {
		pypath_done(&pat);
		return -1;
	}
	/* In Python the root is the first of the parts; an anchored pattern must match the
	 * whole path, a relative one matches from the right. */
	np = p.n + (p.root[0] ? 1 : 0);
	npat = pat.n + (pat.root[0] ? 1 : 0);
	if (pat.root[0]) {
		if (strcmp(pat.root, p.root) || npat != np)
			goto out;
	} else if (npat > np) {
		goto out;
	}
	for (size_t k = 1; k <= pat.n && k <= p.n; k++) {
		int m = pyfnmatch(p.parts[p.n - k], pat.parts[pat.n - k], e);

		if (m <= 0) {
			r = m;
			goto out;
		}
	}
	/* A relative pattern as long as an absolute path ends with a match against the root
	 * component "/" itself, which fnmatch compares literally. */
	if (!pat.root[0] && npat == np && p.root[0]) {
		r = pyfnmatch(p.root, pat.parts[0], e);
		goto out;
	}
	r = 1;
out:
	pypath_done(&p);
	pypath_done(&pat);
	return r;
}
