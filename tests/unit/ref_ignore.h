/* SPDX-License-Identifier: MIT */
/* The former ignore_check(), an oracle for the tests (ref_ignore.c). */
#pragma once

#include "policy/internal.h"

int ref_ignore_check(const char *command, const char *workdir, const struct cordon_list *patterns,
		     policy_resolve_fn resolve, bool wildcards, char **ret_deny, cordon_error *e);
