/* SPDX-License-Identifier: MIT */
/*
 * What the libFuzzer targets share: CHECK(), an invariant that aborts (libFuzzer then keeps the
 * input, and tests/fuzz/driver.c fails the replay in `make check`), and a UTF-8 validity test.
 */
#pragma once

#include "runtime/capture.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #c);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* Strictly valid UTF-8 (no overlong form, no surrogate, <= U+10FFFF): what the capture's
 * repair leaves unchanged. */
static inline bool fuzz_valid_utf8(const char *s, size_t n)
{
	char *fixed = NULL;
	size_t len;
	bool same;

	CHECK(capture_utf8_repair(s, n, &fixed, &len, NULL) == 0);
	same = len == n && memcmp(fixed, s, n) == 0;
	free(fixed);
	return same;
}
