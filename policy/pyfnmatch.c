/* SPDX-License-Identifier: MIT */
/*
 * fnmatch.fnmatchcase() of Python 3.11, on code points.
 *
 * glibc's fnmatch(3) with FNM_NOESCAPE is close but not equal: it negates "[^a]" (Python
 * reads a literal '^'), knows "[[:alpha:]]" and collating elements, counts bytes in the C
 * locale, and orders ranges by collation. Python's own rules come from fnmatch.translate():
 *   - '*' matches any run of characters, '/' and newlines included; '?' any one;
 *   - "[...]" is a set, "[!...]" its complement; a ']' right after "[" or "[!" is a member;
 *     a '[' with no closing ']' is a literal '[';
 *   - inside a set, '-' between two characters is a range; a range whose ends are reversed
 *     ("z-a") is dropped together with its ends; a '-' first or last is a member;
 *   - the backslash is an ordinary character everywhere.
 * Sets are compiled here into a list of inclusive ranges, then a two-pointer matcher with
 * backtracking on the last '*' decides, as a regex engine would for these patterns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"

static uint32_t *pyfn_decode(const char *s, size_t *ret_n)
{
	size_t len = strlen(s), i = 0, n = 0;
	uint32_t *v = malloc((len + 1) * sizeof(*v));

	if (!v)
		return NULL;
	while (i < len)
		v[n++] = pystr_next(s, len, &i);
	*ret_n = n;
	return v;
}

/*
 * The set between pat[i] (after '[') and pat[j] (its ']'), as translate() builds it. Ranges
 * go to pool (which has room for j - i of them).
 */
static size_t pyfn_set(const uint32_t *pat, size_t i, size_t j, bool *ret_negate,
		       struct pyfn_range *pool)
{
	/* chunk k is pat[cs[k] .. ce[k]) with deletions applied as a list of code points */
	_cleanup_free_ uint32_t *buf = NULL;
	_cleanup_free_ size_t *cs = NULL, *cl = NULL;
	size_t nchunks = 0, nranges = 0, k;
	bool negate = false;

	buf = malloc((j - i + 1) * sizeof(*buf));
	cs = malloc((j - i + 2) * sizeof(*cs));
	cl = malloc((j - i + 2) * sizeof(*cl));
	if (!buf || !cs || !cl)
		return (size_t)-1;
	memcpy(buf, pat + i, (j - i) * sizeof(*buf));

	/* No '-': every character is a member (the first may be the '!'). */
	bool dash = false;
	for (k = i; k < j; k++)
		dash |= pat[k] == '-';
	if (!dash) {
		cs[0] = 0;
		cl[0] = j - i;
		nchunks = 1;
	} else {
		/* Split at each '-' found from k on; after a split the search resumes two
		 * characters past it, so "a-b-c" is the range a-b, then '-' and 'c'. */
		size_t start = i, s = i + (pat[i] == '!' ? 2 : 1);

		for (;;) {
			size_t d = s;

			while (d < j && pat[d] != '-')
				d++;
			if (s >= j || d >= j)
				break;
			cs[nchunks] = start - i;
			cl[nchunks++] = d - start;
			start = d + 1;
			s = d + 3;
		}
		if (start < j) {
			cs[nchunks] = start - i;
			cl[nchunks++] = j - start;
		} else {
			/* A trailing '-' joins the last chunk as a member. */
			cl[nchunks - 1]++;
		}
		/* Drop reversed ranges right to left, merging the two chunks around them. The
		 * merged chunk is rebuilt in place in buf: chunk k-1 minus its last character,
		 * then chunk k minus its first. */
		for (k = nchunks - 1; k > 0; k--) {
			uint32_t last = buf[cs[k - 1] + cl[k - 1] - 1], first = buf[cs[k]];

			if (last > first) {
				size_t at = cs[k - 1] + cl[k - 1] - 1;

				memmove(buf + at, buf + cs[k] + 1, (cl[k] - 1) * sizeof(*buf));
				cl[k - 1] = cl[k - 1] - 1 + cl[k] - 1;
				memmove(cs + k, cs + k + 1, (nchunks - k - 1) * sizeof(*cs));
				memmove(cl + k, cl + k + 1, (nchunks - k - 1) * sizeof(*cl));
				nchunks--;
			}
		}
	}

	/* The members: chunk k's characters, with a range between the last character of
	 * chunk k-1 and the first of chunk k. A leading '!' of the whole set negates. */
	for (k = 0; k < nchunks; k++) {
		size_t from = 0, to = cl[k];
		const uint32_t *c = buf + cs[k];

		if (k == 0 && to > 0 && c[0] == '!') {
			negate = true;
			from = 1;
		}
		if (k > 0)
			from = from > 1 ? from : 1;
		if (k + 1 < nchunks && to > from)
			to--;
		for (size_t m = from; m < to; m++)
			pool[nranges++] = (struct pyfn_range){ c[m], c[m] };
		if (k + 1 < nchunks)
			pool[nranges++] = (struct pyfn_range){ c[cl[k] - 1], buf[cs[k + 1]] };
	}
	*ret_negate = negate;
	return nranges;
}

bool pyfn_one(const struct pyfn_item *it, uint32_t c)
{
	bool in = false;

	switch (it->kind) {
	case PYFN_LIT:
		return it->c == c;
	case PYFN_ANY:
		return true;
	case PYFN_SET:
		for (size_t k = 0; k < it->nranges && !in; k++)
			in = c >= it->ranges[k].lo && c <= it->ranges[k].hi;
		return in != it->negate;
	}
	return false;
}

void pyfn_pattern_free(struct pyfn_pattern *p)
{
	free(p->items);
	free(p->pool);
	*p = (struct pyfn_pattern){ 0 };
}

int pyfn_compile(const char *pattern, struct pyfn_pattern *ret, cordon_error *e)
{
	_cleanup_free_ uint32_t *pat = NULL;
	_cleanup_free_ struct pyfn_item *items = NULL;
	_cleanup_free_ struct pyfn_range *pool = NULL;
	size_t npat, nitems = 0, npool = 0, i = 0;

	pat = pyfn_decode(pattern, &npat);
	items = pat ? calloc(npat + 1, sizeof(*items)) : NULL;
	pool = pat ? calloc(2 * npat + 2, sizeof(*pool)) : NULL;
	if (!pat || !items || !pool)
		return cordon_err(e, ENOMEM, "out of memory");

	while (i < npat) {
		uint32_t c = pat[i++];
		struct pyfn_item *it = &items[nitems];

		if (c == '*') {
			if (nitems == 0 || items[nitems - 1].kind != PYFN_STAR)
				items[nitems++].kind = PYFN_STAR;
			continue;
		}
		if (c == '?') {
			it->kind = PYFN_ANY;
			nitems++;
			continue;
		}
		if (c == '[') {
			size_t j = i, nr;

			if (j < npat && pat[j] == '!')
				j++;
			if (j < npat && pat[j] == ']')
				j++;
			while (j < npat && pat[j] != ']')
				j++;
			if (j < npat) {
				nr = pyfn_set(pat, i, j, &it->negate, pool + npool);
				if (nr == (size_t)-1)
					return cordon_err(e, ENOMEM, "out of memory");
				it->kind = PYFN_SET;
				it->ranges = pool + npool;
				it->nranges = nr;
				npool += nr;
				nitems++;
				i = j + 1;
				continue;
			}
			/* no closing ']': a literal '[' */
		}
		it->kind = PYFN_LIT;
		it->c = c;
		nitems++;
	}
	ret->items = TAKE_PTR(items);
	ret->nitems = nitems;
	ret->pool = TAKE_PTR(pool);
	return 0;
}

int pyfnmatch(const char *name, const char *pattern, cordon_error *e)
{
	_cleanup_free_ uint32_t *s = NULL;
	_cleanup_(pyfn_pattern_free) struct pyfn_pattern cp = { 0 };
	const struct pyfn_item *items;
	size_t ns, nitems, pi, si, star_pi = (size_t)-1, star_si = 0;

	if (pyfn_compile(pattern, &cp, e) < 0)
		return -1;
	s = pyfn_decode(name, &ns);
	if (!s)
		return cordon_err(e, ENOMEM, "out of memory");
	items = cp.items;
	nitems = cp.nitems;

	/* Whole-string match; on a mismatch, let the last '*' swallow one more character. */
	pi = si = 0;
	while (si < ns) {
		if (pi < nitems && items[pi].kind == PYFN_STAR) {
			star_pi = pi++;
			star_si = si;
		} else if (pi < nitems && pyfn_one(&items[pi], s[si])) {
			pi++;
			si++;
		} else if (star_pi != (size_t)-1) {
			pi = star_pi + 1;
			si = ++star_si;
		} else {
			return 0;
		}
	}
	while (pi < nitems && items[pi].kind == PYFN_STAR)
		pi++;
	return pi == nitems;
}
