/* SPDX-License-Identifier: MIT */
/* A growing, NUL-terminated text buffer for reports (doctor, metrics). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
	char *s; /* NULL until the first append */
	size_t len, cap;
	bool oom; /* an allocation failed: later appends do nothing */
};

/* printf-append; on failure sets b->oom and leaves the text as it was. */
void strbuf_addf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text (malloc'd, owned by the caller) or NULL after an allocation failure; b is reset. */
char *strbuf_steal(struct strbuf *b, size_t *ret_len);
