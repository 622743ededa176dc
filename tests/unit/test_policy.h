/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the policy unit tests (tests/unit/test_policy_*.c). Every expected value
 * in these tables was produced by running AG2's filter code (as quoted in
 * shared/reference/ag2-behaviour.md and the upstream sources it cites) under Python 3.11.
 */
#pragma once

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "policy/policy.h"
#include "runtime/cleanup.h"

/* A list literal for a table row: NULL is "no list" (Python None), L0 is []. */
#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define L0 ((const char *const[]){ NULL })

static inline void tp_list(struct cordon_list *l, const char *const *items)
{
	cordon_error e;

	memset(l, 0, sizeof(*l));
	if (!items)
		return;
	l->set = true;
	for (size_t k = 0; items[k]; k++)
		cr_assert_eq(cordon_list_add(l, items[k], &e), 0);
}

static inline void tp_profile_free(struct cordon_profile *p)
{
	cordon_list_free(&p->allowed);
	cordon_list_free(&p->blocked);
	cordon_list_free(&p->ignore);
	cordon_list_free(&p->allowed_commands);
	cordon_list_free(&p->denied_commands);
	cordon_list_free(&p->allowed_paths);
	cordon_list_free(&p->dangerous_patterns);
}

/* Run one decision and compare with the expected message (NULL: allowed). */
static inline void tp_expect(const struct cordon_profile *p, const char *command,
			     const char *workdir, policy_resolve_fn resolve, const char *home,
			     const char *want, int row)
{
	cordon_error e = { 0 };
	char *deny = (char *)"unset";
	int r;

	r = policy_check_ex(p, command, workdir, resolve, home, &deny, &e);
	cr_assert_eq(r, 0, "row %d: policy_check failed: %s", row, e.msg);
	if (want)
		cr_expect(deny && !strcmp(deny, want), "row %d: %s\n  got  [%s]\n  want [%s]", row,
			  command, deny ? deny : "(allowed)", want);
	else
		cr_expect(deny == NULL, "row %d: %s\n  got  [%s]\n  want allowed", row, command,
			  deny);
	free(deny);
}
