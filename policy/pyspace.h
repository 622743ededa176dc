/* SPDX-License-Identifier: MIT */
/*
 * Python's whitespace (Py_UNICODE_ISSPACE, what str.strip() and str.split() use): bidi classes
 * WS, B and S, and category Zs. Note the ASCII information separators U+001C..U+001F, which C's
 * isspace() does not know. Inline, because the output capture asks it of every code point.
 * Checked against python3 over every code point (tests/unit/test_policy_pystr.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

static inline bool py_space(uint32_t cp)
{
	if (cp <= 0x20)
		return (cp >= 0x09 && cp <= 0x0d) || cp >= 0x1c;
	if (cp < 0x85)
		return false;
	switch (cp) {
	case 0x85:
	case 0xa0:
	case 0x1680:
	case 0x2028:
	case 0x2029:
	case 0x202f:
	case 0x205f:
	case 0x3000:
		return true;
	default:
		return cp >= 0x2000 && cp <= 0x200a;
	}
}
