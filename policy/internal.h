/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the policy/ modules and by their unit tests; not part of the engine's
 * interface (policy.h). Each group is prefixed with the file that defines it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

/* --- pystr.c: Python str semantics over UTF-8 -------------------------------------------- */

/*
 * Decode the code point at s[*i] (len bytes in all) and advance *i. An invalid byte decodes
 * as U+DC80..U+DCFF, the lone surrogate Python's surrogateescape would produce (that is what
 * a Python program sees for such bytes in argv), and advances by one byte.
 */
uint32_t pystr_next(const char *s, size_t len, size_t *i);
/* Python's str.isprintable() for one code point. */
bool pystr_isprintable(uint32_t c);
/* Python's str.split() with no argument: runs of whitespace separate; no empty words. */
int pystr_split(const char *s, char ***ret_words, cordon_error *e);
/* Number of items in a NULL-terminated vector. */
size_t pystr_strv_len(char *const *v);
/* Python's repr() of a list of str: "['ls', 'cat']". */
int pystr_repr_list(const struct cordon_list *l, char **ret, cordon_error *e);
/* Growable string buffer: every append returns 0, or -1 with *e on ENOMEM. */
struct pystr_buf {
	char *s;
	size_t len, cap;
};
int pystr_buf_add(struct pystr_buf *b, const char *s, size_t n, cordon_error *e);
int pystr_buf_addf(struct pystr_buf *b, cordon_error *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Format into a fresh malloc'd string. */
int pystr_asprintf(char **ret, cordon_error *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* --- pypath.c: posixpath and pathlib.PurePosixPath ----------------------------------------- */

/* posixpath.join(a, b) for two arguments. */
int pypath_join(const char *a, const char *b, char **ret, cordon_error *e);
/* str(PurePosixPath(path)): "//" root kept, "." and empty parts and trailing '/' dropped. */
int pypath_pure(const char *path, char **ret, cordon_error *e);
/*
 * PurePosixPath(path).relative_to(base) as a string ("." for equal paths). Returns 0 with
 * *ret_rel, 1 when path is not under base (Python's ValueError), -1 on ENOMEM.
 */
int pypath_relative_to(const char *path, const char *base, char **ret_rel, cordon_error *e);
/* PurePosixPath(path).name, malloc'd ("" for "/" or "."). */
int pypath_name(const char *path, char **ret, cordon_error *e);
/* PurePosixPath(path).match(pattern) of Python 3.11. 1 = match, 0 = no match,
 * 2 = Python raises ValueError("empty pattern"), -1 on ENOMEM. */
int pypath_match(const char *path, const char *pattern, cordon_error *e);
bool pypath_isabs(const char *path);

/* --- pyfnmatch.c: fnmatch.fnmatchcase() of Python 3.11 ------------------------------------- */

/* 1 = match, 0 = no match, -1 on ENOMEM. */
int pyfnmatch(const char *name, const char *pattern, cordon_error *e);

/* A pattern compiled into items: literals, '?', sets (inclusive code-point ranges) and '*'
 * (a run of stars is one item). */
enum { PYFN_LIT, PYFN_ANY, PYFN_STAR, PYFN_SET };
struct pyfn_range {
	uint32_t lo, hi;
};
struct pyfn_item {
	int kind;
	uint32_t c;		   /* PYFN_LIT */
	bool negate;		   /* PYFN_SET */
	struct pyfn_range *ranges; /* PYFN_SET, into the pattern's pool */
	size_t nranges;
};
struct pyfn_pattern {
	struct pyfn_item *items;
	size_t nitems;
	struct pyfn_range *pool;
};
int pyfn_compile(const char *pattern, struct pyfn_pattern *ret, cordon_error *e);
void pyfn_pattern_free(struct pyfn_pattern *p);
/* Whether one non-star item accepts code point c. */
bool pyfn_one(const struct pyfn_item *it, uint32_t c);

/* --- pyglobset.c: many fnmatch patterns matched at once ------------------------------------ */

/*
 * A set of Python fnmatch patterns run as one automaton: each pattern is a chain of states
 * (one per non-star item, a '*' a self-loop), and all chains advance together as one bit
 * vector, a word operation per 64 states and input character (the bit-parallel Shift-And
 * method). Whether any pattern matches a string costs the same for 1 pattern or 100 of the
 * usual length. Input is fed in pieces (a directory's state is kept for its entries) and
 * decoded as pystr_next does, so it agrees with pyfnmatch() on every string, invalid UTF-8
 * included (tests/unit/test_policy_pyglobset.c compares them).
 */
struct pyglobset;
int pyglobset_new(struct pyglobset **ret, cordon_error *e);
int pyglobset_add(struct pyglobset *s, const char *pattern, cordon_error *e);
/* After the last add: builds the tables. */
int pyglobset_compile(struct pyglobset *s, cordon_error *e);
void pyglobset_free(struct pyglobset *s);
/* Number of 64-bit words of a state vector (0 for an empty set). */
size_t pyglobset_words(const struct pyglobset *s);
void pyglobset_start(const struct pyglobset *s, uint64_t *state);
/* Advance state over len bytes of UTF-8 (pieces must split at character boundaries). */
void pyglobset_feed(const struct pyglobset *s, uint64_t *state, const char *str, size_t len);
/*
 * Whether a string ending with str[0..len) (its last byte, really) can match any pattern:
 * false only when its last byte is ASCII and no pattern's last item accepts it (and none ends
 * with '*'). A cheap test before feeding a whole string; pyglobset_match applies it.
 */
bool pyglobset_may_end(const struct pyglobset *s, const char *str, size_t len);
/* Some pattern matches exactly what was fed. */
bool pyglobset_accepts(const struct pyglobset *s, const uint64_t *state);
/* No pattern can match anything that starts with what was fed. */
bool pyglobset_dead(const struct pyglobset *s, const uint64_t *state);
/* Whether any pattern matches str whole: 1, 0, or -1 on ENOMEM. */
int pyglobset_match(const struct pyglobset *s, const char *str, cordon_error *e);

/* --- match.c: AG2's prefix matching and shell-operator test -------------------------------- */

/* filter.matches(pattern, command): prefix of the stripped command, then end or ' '. */
bool match_prefix(const char *pattern, const char *command);
/* match_prefix() on a command already stripped to [start, end) (pystrip): stripped once for
 * every pattern, so a long command costs its length once, not once a pattern. */
bool match_prefix_in(const char *pattern, const char *command, size_t start, size_t end);
/* filter.contains_shell_operator() of 217a43f8e/cec8d4d1b: a raw substring test. */
bool match_has_operator(const char *command);
/* filter.matches_argv(): argv starts with pattern.split(). */
bool match_argv(const char *pattern, char *const *argv);

/* --- ignore.c: check_ignore ---------------------------------------------------------------- */

/*
 * check_ignore(command, workdir, patterns). `wildcards` adds restricted mode's refusal of
 * tokens holding any of "*?[{". *ret_deny is NULL or the message.
 */
int ignore_check(const char *command, const char *workdir, const struct cordon_list *patterns,
		 policy_resolve_fn resolve, bool wildcards, char **ret_deny, cordon_error *e);
/*
 * The work one check did, for the unit tests (tests/unit/test_policy_ignore.c), which check
 * that it grows with the tokens plus the patterns, not with their product.
 */
struct ignore_stats {
	size_t compiled; /* patterns added to the automata */
	size_t compared; /* comparisons with plain patterns */
	size_t fed;	 /* bytes run through the automata */
	/*
	 * Tests: a rule each decision (rel, name) is also asked of, one pattern at a time (1:
	 * deny, 0: no, -1: error); checked counts them, differed the answers that differ.
	 */
	int (*ref)(const struct cordon_list *patterns, const char *rel, const char *name,
		   cordon_error *e);
	size_t checked, differed;
};
/* ignore_check(), adding to *st (which may be NULL) what it did. */
int ignore_check_stats(const char *command, const char *workdir, const struct cordon_list *patterns,
		       policy_resolve_fn resolve, bool wildcards, char **ret_deny,
		       struct ignore_stats *st, cordon_error *e);

/* --- strict.c: restricted mode (§11) -------------------------------------------------------- */

int strict_check(const struct cordon_profile *p, const char *command, const char *workdir,
		 policy_resolve_fn resolve, char **ret_deny, cordon_error *e);
/* contains_shell_operator() of restricted mode: quote-aware, with '<', '&', '\n', '\r'. */
bool strict_has_operator(const char *command);
/* Restricted mode's READONLY_COMMANDS (17 entries), NULL-terminated. */
const char *const *strict_readonly_commands(void);

/* --- executor.c: ShellExecutor._validate_command (§8) --------------------------------------- */

int executor_check(const struct cordon_profile *p, const char *command, const char *workdir,
		   policy_resolve_fn resolve, const char *home, char **ret_deny, cordon_error *e);
