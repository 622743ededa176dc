/* SPDX-License-Identifier: MIT */
/* Profile loading (libinih), lookup path, units and the `profile show` printer. */
#pragma once

#include <cordon/cordon.h>

/* Parse a size with an optional K/M/G/T suffix (powers of 1024): "1G", "256M", "4096". */
int profile_parse_size(const char *s, uint64_t *ret, cordon_error *e);
/* Parse a decimal number of seconds > 0 ("60", "1.5"); rejects inf, nan, 0, negatives. */
int profile_parse_seconds(const char *s, double *ret, cordon_error *e);
/* Parse an integer >= 0 that fits int64 ("100000"); rejects "1e99", "-5", "abc". */
int profile_parse_count(const char *s, int64_t *ret, cordon_error *e);
/* Parse a boolean: true/false/yes/no/on/off/1/0. */
int profile_parse_bool(const char *s, bool *ret, cordon_error *e);
/* Find NAME on the lookup path; *ret_path is malloc'd. */
int profile_find(const char *name, char **ret_path, cordon_error *e);
/* List every profile on the lookup path: one "name\tpath\tdescription" per entry. */
int profile_list(char ***ret_lines, cordon_error *e);
