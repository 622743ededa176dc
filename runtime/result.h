/* SPDX-License-Identifier: MIT */
/* The JSON side of results and replies (runtime/result.c), beyond cordon.h's. */
#pragma once

#include <jansson.h>

/*
 * A JSON string of s, which need not be valid UTF-8 (a path, a quoted command, an error
 * message cut at a byte count): invalid sequences become U+FFFD with the capture's rules, so
 * that one bad byte cannot make a whole reply fail to encode. NULL s gives JSON null; NULL
 * only when out of memory.
 */
json_t *result_json_text(const char *s);
