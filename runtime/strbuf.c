/* SPDX-License-Identifier: MIT */
#include "runtime/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_addf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->s && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		/* Grow to fit with room to spare, then format again. */
		size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)n;
		char *s = realloc(b->s, cap);

		if (!s) {
			b->oom = true;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
}

char *strbuf_steal(struct strbuf *b, size_t *ret_len)
{
	char *s = b->oom ? NULL : b->s;

	if (b->oom)
		free(b->s);
	else if (!s)
		s = strdup("");
	if (s && ret_len)
		*ret_len = b->len;
	memset(b, 0, sizeof(*b));
	return s;
}
