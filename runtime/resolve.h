/* SPDX-License-Identifier: MIT */
/*
 * The host-mode path resolver injected into the policy engine (policy_resolve_fn).
 */
#pragma once

#include <cordon/cordon.h>

/*
 * (Path(workdir) / token).resolve() of Python 3.11: non-strict os.path.realpath(), then a
 * stat() that turns a symlink loop into an error. Returns 0 with *ret_abs (malloc'd), 1 when
 * Python would raise (a symlink loop, an unreadable link, too deep a chain: the token is
 * skipped), -1 with *e on ENOMEM.
 */
int resolve_host(const char *workdir, const char *token, char **ret_abs, cordon_error *e);

/*
 * The work one resolution did, for the unit tests (tests/unit/test_policy_resolve.c), which
 * check that it grows linearly with the token, not with its square.
 */
struct resolve_stats {
	size_t copied;	 /* bytes written into the path being built */
	size_t compared; /* key comparisons in the memo of links seen */
	size_t memo;	 /* links memoised */
};

/*
 * A budget for the resolutions of one policy check on this thread (units: bytes parsed and
 * built, 64 a component looked up): past it resolve_host fails (-1) until
 * resolve_budget_end(). RESOLVE_CHECK_BUDGET is what run.c gives a check.
 */
#define RESOLVE_CHECK_BUDGET (256ull << 20)
void resolve_budget_begin(uint64_t units);
void resolve_budget_end(void);

/* resolve_host(), adding to *st (which may be NULL) what it did. */
int resolve_host_stats(const char *workdir, const char *token, char **ret_abs,
		       struct resolve_stats *st, cordon_error *e);
