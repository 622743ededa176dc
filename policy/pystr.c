/* SPDX-License-Identifier: MIT */
/*
 * Python str semantics over UTF-8 bytes: strip(), split(), isspace(), isprintable() and
 * repr(). AG2 builds its refusal messages with f"{command!r}" and strips commands with
 * str.strip(), both of which work on Unicode code points, so a byte-level C version would
 * differ on the first non-ASCII space or control character an agent sends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "policy/pyspace.h"
#include "policy/pystr-table.h"
#include "runtime/cleanup.h"

uint32_t pystr_next(const char *s, size_t len, size_t *i)
{
	const unsigned char *u = (const unsigned char *)s + *i;
	size_t left = len - *i;
	uint32_t c;
	size_t n;

	if (u[0] < 0x80) {
		*i += 1;
		return u[0];
	}
	if (u[0] >= 0xc2 && u[0] <= 0xdf) {
		n = 2;
		c = u[0] & 0x1f;
	} else if (u[0] >= 0xe0 && u[0] <= 0xef) {
		n = 3;
		c = u[0] & 0x0f;
	} else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		n = 4;
		c = u[0] & 0x07;
	} else {
		goto invalid;
	}
	if (left < n)
		goto invalid;
	for (size_t k = 1; k < n; k++) {
		if ((u[k] & 0xc0) != 0x80)
			goto invalid;
		c = (c << 6) | (u[k] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and values past U+10FFFF are not UTF-8 (Python's
	 * strict decoder rejects them too), so they take the surrogateescape path. */
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		goto invalid;
	*i += n;
	return c;
invalid:
	*i += 1;
	return 0xdc00 + u[0];
}

bool py_isspace(uint32_t c)
{
	return py_space(c);
}

bool pystr_isprintable(uint32_t c)
{
	size_t lo = 0, hi = ARRAY_SIZE(pystr_nonprintable);

	if (c < 0x80)
		return c >= 0x20 && c < 0x7f;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c < pystr_nonprintable[mid].lo)
			hi = mid;
		else if (c > pystr_nonprintable[mid].hi)
			lo = mid + 1;
		else
			return false;
	}
	return true;
}

void pystrip(const char *s, size_t len, size_t *ret_start, size_t *ret_end)
{
	size_t i = 0, start = len, end = 0;

	/* Walk forward once: the first non-space starts the result, the end of the last
	 * non-space ends it. Walking backwards through UTF-8 would need its own decoder. */
	while (i < len) {
		size_t at = i;
		uint32_t c = pystr_next(s, len, &i);

		if (py_isspace(c))
			continue;
		if (start == len)
			start = at;
		end = i;
	}
	if (start == len)
		start = end = 0;
	*ret_start = start;
	*ret_end = end;
}

int pystr_buf_add(struct pystr_buf *b, const char *s, size_t n, cordon_error *e)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *t;

		while (cap < b->len + n + 1)
			cap *= 2;
		t = realloc(b->s, cap);
		if (!t)
			return cordon_err(e, ENOMEM, "out of memory");
		b->s = t;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static int pystr_buf_vaddf(struct pystr_buf *b, cordon_error *e, const char *fmt, va_list ap)
{
	_cleanup_free_ char *t = NULL;
	int n;

	n = vasprintf(&t, fmt, ap);
	if (n < 0)
		return cordon_err(e, ENOMEM, "out of memory");
	return pystr_buf_add(b, t, (size_t)n, e);
}

int pystr_buf_addf(struct pystr_buf *b, cordon_error *e, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = pystr_buf_vaddf(b, e, fmt, ap);
	va_end(ap);
	return r;
}

int pystr_asprintf(char **ret, cordon_error *e, const char *fmt, ...)
{
	va_list ap;
	char *t;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&t, fmt, ap);
	va_end(ap);
	if (n < 0)
		return cordon_err(e, ENOMEM, "out of memory");
	*ret = t;
	return 0;
}

/* unicode_repr() of CPython 3.11, appended to b. */
static int pystr_repr_add(struct pystr_buf *b, const char *s, cordon_error *e)
{
	size_t len = strlen(s), i = 0;
	bool squote = memchr(s, '\'', len), dquote = memchr(s, '"', len);
	/* Double quotes only when that saves escaping: a ' and no ". */
	char q = squote && !dquote ? '"' : '\'';

	if (pystr_buf_add(b, &q, 1, e) < 0)
		return -1;
	while (i < len) {
		size_t at = i;
		uint32_t c = pystr_next(s, len, &i);
		int r;

		if (c == (uint32_t)q || c == '\\')
			r = pystr_buf_addf(b, e, "\\%c", (char)c);
		else if (c == '\t')
			r = pystr_buf_add(b, "\\t", 2, e);
		else if (c == '\n')
			r = pystr_buf_add(b, "\\n", 2, e);
		else if (c == '\r')
			r = pystr_buf_add(b, "\\r", 2, e);
		else if (c < 0x20 || c == 0x7f)
			r = pystr_buf_addf(b, e, "\\x%02x", c);
		else if (c < 0x7f || pystr_isprintable(c))
			r = pystr_buf_add(b, s + at, i - at, e); /* kept as the original bytes */
		else if (c <= 0xff)
			r = pystr_buf_addf(b, e, "\\x%02x", c);
		else if (c <= 0xffff)
			r = pystr_buf_addf(b, e, "\\u%04x", c);
		else
			r = pystr_buf_addf(b, e, "\\U%08x", c);
		if (r < 0)
			return -1;
	}
	return pystr_buf_add(b, &q, 1, e);
}

int pyrepr(const char *s, char **ret, cordon_error *e)
{
	struct pystr_buf b = { 0 };

	if (pystr_repr_add(&b, s, e) < 0) {
		free(b.s);
		return -1;
	}
	*ret = b.s;
	return 0;
}

int pystr_repr_list(const struct cordon_list *l, char **ret, cordon_error *e)
{
	struct pystr_buf b = { 0 };

	/* list.__repr__: "[" + ", ".join(map(repr, items)) + "]". */
	if (pystr_buf_add(&b, "[", 1, e) < 0)
		goto fail;
	for (size_t k = 0; k < l->n; k++) {
		if (k > 0 && pystr_buf_add(&b, ", ", 2, e) < 0)
			goto fail;
		if (pystr_repr_add(&b, l->v[k], e) < 0)
			goto fail;
	}
	if (pystr_buf_add(&b, "]", 1, e) < 0)
		goto fail;
	*ret = b.s;
	return 0;
fail:
	free(b.s);
	return -1;
}

size_t pystr_strv_len(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

void policy_strv_free(char **v)
{
	for (size_t k = 0; v && v[k]; k++)
		free(v[k]);
	free(v);
}

static int pystr_strv_push(char ***v, size_t *n, const char *s, size_t len, cordon_error *e)
{
	char **t;
	char *w;

	w = strndup(s, len);
	if (!w)
		return cordon_err(e, ENOMEM, "out of memory");
	t = realloc(*v, (*n + 2) * sizeof(*t));
	if (!t) {
		free(w);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	t[(*n)++] = w;
	t[*n] = NULL;
	*v = t;
	return 0;
}

int pystr_split(const char *s, char ***ret_words, cordon_error *e)
{
	size_t len = strlen(s), i = 0, n = 0, start = 0;
	bool in_word = false;
	char **v;

	v = calloc(1, sizeof(*v));
	if (!v)
		return cordon_err(e, ENOMEM, "out of memory");
	while (i < len) {
		size_t at = i;
		uint32_t c = pystr_next(s, len, &i);

		if (py_isspace(c)) {
			if (in_word && pystr_strv_push(&v, &n, s + start, at - start, e) < 0)
				goto fail;
			in_word = false;
		} else if (!in_word) {
			in_word = true;
			start = at;
		}
	}
	if (in_word && pystr_strv_push(&v, &n, s + start, len - start, e) < 0)
		goto fail;
	*ret_words = v;
	return 0;
fail:
	policy_strv_free(v);
	return -1;
}

bool pystr_blank(const char *s)
{
	size_t start, end;

	pystrip(s, strlen(s), &start, &end);
	return start == end;
}
