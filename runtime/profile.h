/* SPDX-License-Identifier: MIT */
/*
 * Profile loading (libinih), lookup path, units and the `profile show` printer.
 *
 * In a loaded profile, description, timeout_text and backend are never NULL; the optional
 * [docker] and [daytona] strings (image, user, api_url, target, snapshot) are NULL when unset
 * (an empty value in the file means unset).
 */
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
/*
 * A digest of the resolved profile (its cordon_profile_format text, FNV-1a 64, 16 hex digits):
 * the CLI and cordond compare theirs when the CLI's lookup could differ from the daemon's.
 * Not a security hash: the client is the one party that could pick a collision, for nothing.
 */
/*
 * The network a run asks for (the command line's --network, a cordond body's "network"): it
 * wins over the profile's, [docker] network included, which it clears (the command line wins,
 * SPEC section 2; --network is Docker's network mode too).
 */
void profile_set_network(struct cordon_profile *p, enum cordon_network n);

int profile_digest(const struct cordon_profile *p, char out[17], cordon_error *e);
/* List every profile on the lookup path: one "name\tpath\tdescription" per entry. */
int profile_list(char ***ret_lines, cordon_error *e);
/*
 * Can v be written as the value of `key = v` and read back unchanged by libinih? No leading or
 * trailing blank, no blank followed by ';' (an inline comment), no leading ';', no control
 * character, and short enough for the 199-byte line. Front ends check command-line values with
 * it so that `profile show` always round-trips.
 */
int profile_check_value(const char *key, const char *v, cordon_error *e);
/* A --profile value is a path when it contains '/' or ends in ".conf". */
bool profile_name_is_path(const char *s);
/* A profile name: [A-Za-z0-9_.-]+, not starting with '.'. */
bool profile_name_valid(const char *s);
/* The lookup path: $CORDON_PROFILE_PATH's entries, CORDON_SYSCONFDIR/cordon/profiles, then
 * CORDON_SRCDIR/profiles. NULL-terminated, free with profile_strv_free(). */
int profile_dirs(char ***ret, cordon_error *e);
/* Free a NULL-terminated string vector (profile_list's and profile_dirs' results). NULL-safe. */
void profile_strv_free(char **v);
