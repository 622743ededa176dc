/* SPDX-License-Identifier: MIT */
/*
 * check_ignore(): AG2's ignored-path filter (reference §4.7, and §11 for restricted mode).
 *
 * Every shlex token is taken for a path, resolved against the workdir (realpath on the host,
 * normpath for remote backends: the resolver is injected), and refused when it leaves the
 * workdir or matches a pattern. It only ever sees literal tokens, so globs, variables,
 * directory reads and glued redirects pass; compat mode keeps those holes on purpose and the
 * local backend closes them by masking the ignored paths in the sandbox's mount namespace.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"

static bool ignore_is_glob(const char *pattern)
{
	return strpbrk(pattern, "*?[") != NULL;
}

/*
 * The patterns of one check, compiled once. A command can hold half a million tokens and a
 * profile thousands of patterns; compiling and matching every pattern for every token cost
 * their product (minutes for a 1 MiB request). Now the glob patterns run as two automata
 * (pyglobset), one over rel, one over name, each read once per token (a word operation per
 * character and 64 pattern states), and the plain ones are a sorted array searched by
 * bsearch, a few searches per component of rel.
 */
struct ignore_set {
	/* fnmatch(rel, p) for every glob p */
	struct pyglobset *rel_globs;
	/* fnmatch(name, p) for every glob p, and fnmatch(name, p[3:]) when p starts with two
	 * stars and a slash */
	struct pyglobset *name_globs;
	uint64_t *state;   /* room for either automaton's state */
	const char **lits; /* the plain patterns, in strcmp order */
	size_t nlits;
	const struct cordon_list *patterns;
	struct ignore_stats *st;
};

static int ignore_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void ignore_set_free(struct ignore_set *s)
{
	pyglobset_free(s->rel_globs);
	pyglobset_free(s->name_globs);
	free(s->state);
	free(s->lits);
}

static int ignore_add(struct ignore_set *s, struct pyglobset *g, const char *pattern,
		      cordon_error *e)
{
	if (s->st)
		s->st->compiled++;
	return pyglobset_add(g, pattern, e);
}

static int ignore_compile(const struct cordon_list *patterns, struct ignore_stats *st,
			  struct ignore_set *s, cordon_error *e)
{
	size_t words;

	*s = (struct ignore_set){ .patterns = patterns, .st = st };
	if (pyglobset_new(&s->rel_globs, e) < 0 || pyglobset_new(&s->name_globs, e) < 0)
		return -1;
	s->lits = calloc(patterns->n + 1, sizeof(*s->lits));
	if (!s->lits)
		return cordon_err(e, ENOMEM, "out of memory");
	for (size_t k = 0; k < patterns->n; k++) {
		const char *p = patterns->v[k];

		if (!ignore_is_glob(p)) {
			s->lits[s->nlits++] = p;
			continue;
		}
		if (ignore_add(s, s->rel_globs, p, e) < 0 || ignore_add(s, s->name_globs, p, e) < 0)
			return -1;
		if (!strncmp(p, "**/", 3) && ignore_add(s, s->name_globs, p + 3, e) < 0)
			return -1;
	}
	if (pyglobset_compile(s->rel_globs, e) < 0 || pyglobset_compile(s->name_globs, e) < 0)
		return -1;
	words = pyglobset_words(s->rel_globs);
	if (pyglobset_words(s->name_globs) > words)
		words = pyglobset_words(s->name_globs);
	s->state = calloc(words + 1, sizeof(*s->state));
	if (!s->state)
		return cordon_err(e, ENOMEM, "out of memory");
	qsort(s->lits, s->nlits, sizeof(*s->lits), ignore_cmp_str);
	return 0;
}

/* Some pattern of g matches str whole (what pyfnmatch() would say of each). */
static bool ignore_glob(const struct ignore_set *s, const struct pyglobset *g, const char *str)
{
	size_t len = strlen(str);

	if (pyglobset_words(g) == 0 || !pyglobset_may_end(g, str, len))
		return false;
	if (s->st)
		s->st->fed += len;
	pyglobset_start(g, s->state);
	pyglobset_feed(g, s->state, str, len);
	return pyglobset_accepts(g, s->state);
}

/*
 * The first plain pattern in [lo, hi) that, from byte off on, does not sort before key[0..n)
 * (upper: that sorts after every string starting with key[0..n)). The patterns in [lo, hi)
 * all start with the same off bytes, so each comparison costs at most n + 1 bytes.
 */
static size_t ignore_bound(const struct ignore_set *s, size_t lo, size_t hi, size_t off,
			   const char *key, size_t n, bool upper)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(s->lits[mid] + off, key, n);

		if (s->st)
			s->st->compared++;
		if (c < 0 || (upper && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* name == p for some plain pattern p. */
static bool ignore_lit_name(const struct ignore_set *s, const char *name)
{
	size_t k = ignore_bound(s, 0, s->nlits, 0, name, strlen(name), false);

	return k < s->nlits && !strcmp(s->lits[k], name);
}

/*
 * rel == p or rel.startswith(p + "/") for some plain pattern p: p is rel cut at a '/' or at
 * its end. The patterns that start with rel up to a '/' are a range of the sorted array,
 * narrowed one component at a time; the shortest of a range, its first, is the one that may
 * equal that much of rel.
 */
static bool ignore_lit_rel(const struct ignore_set *s, const char *rel)
{
	size_t lo = 0, hi = s->nlits, off = 0, len = strlen(rel);

	for (;;) {
		const char *slash = memchr(rel + off, '/', len - off);
		size_t end = slash ? (size_t)(slash - rel) : len;

		lo = ignore_bound(s, lo, hi, off, rel + off, end - off, false);
		hi = ignore_bound(s, lo, hi, off, rel + off, end - off, true);
		if (lo == hi)
			return false;
		if (s->lits[lo][end] == '\0')
			return true;
		if (!slash)
			return false;
		lo = ignore_bound(s, lo, hi, end, "/", 1, false);
		hi = ignore_bound(s, lo, hi, end, "/", 1, true);
		off = end + 1;
	}
}

/*
 * Whether a pattern denies the path. A glob p (any of "*?[") denies when fnmatch(rel, p), or
 * p starts with two stars and a slash and fnmatch(name, p[3:]), or fnmatch(name, p). A plain pattern: the
 * basename at any depth, or the relative path, or a directory prefix of it. No anchoring and
 * no trailing-slash rule: "/secrets" and "secrets/" never match anything, unlike gitignore.
 */
static bool ignore_match(const struct ignore_set *s, const char *rel, const char *name)
{
	return ignore_lit_name(s, name) || ignore_lit_rel(s, rel) ||
	       ignore_glob(s, s->rel_globs, rel) || ignore_glob(s, s->name_globs, name);
}

/* Check one token: 0 with *ret_deny set or not, -1 on error. */
static int ignore_token(const char *token, const char *workdir, const char *base,
			const struct ignore_set *set, policy_resolve_fn resolve, char **ret_deny,
			cordon_error *e)
{
	_cleanup_free_ char *abs = NULL, *resolved = NULL, *rel = NULL, *name = NULL;
	bool deny;
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
	deny = ignore_match(set, rel, name);
	if (set->st && set->st->ref) {
		r = set->st->ref(set->patterns, rel, name, e);
		if (r < 0)
			return -1;
		set->st->checked++;
		set->st->differed += (r > 0) != deny;
	}
	if (deny)
		return pystr_asprintf(ret_deny, e, "Access denied: %s", resolved);
	return 0;
}

int ignore_check_stats(const char *command, const char *workdir, const struct cordon_list *patterns,
		       policy_resolve_fn resolve, bool wildcards, char **ret_deny,
		       struct ignore_stats *st, cordon_error *e)
{
	_cleanup_free_ char *base_abs = NULL, *base = NULL;
	struct ignore_set set = { 0 };
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
	if (ignore_compile(patterns, st, &set, e) < 0)
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
		if (ignore_token(tokens[k], workdir, base, &set, resolve, &deny, e) < 0)
			goto fail;
	}
	ignore_set_free(&set);
	policy_strv_free(tokens);
	*ret_deny = deny;
	return 0;
fail:
	ignore_set_free(&set);
	policy_strv_free(tokens);
	free(deny);
	return -1;
}

int ignore_check(const char *command, const char *workdir, const struct cordon_list *patterns,
		 policy_resolve_fn resolve, bool wildcards, char **ret_deny, cordon_error *e)
{
	return ignore_check_stats(command, workdir, patterns, resolve, wildcards, ret_deny, NULL,
				  e);
}
