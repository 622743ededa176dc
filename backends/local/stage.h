/* SPDX-License-Identifier: MIT */
/*
 * Staging (stage.c): a network namespace and a cgroup made ahead of the next run, by a process
 * that runs one command at a time (cordon_stage_next). Each is taken by one run only.
 */
#pragma once

#include <cordon/cordon.h>

struct cgroup_run;

/*
 * A new network namespace with lo up, as an fd (root only); the calling thread stays in its
 * own. What staging makes ahead, made now.
 */
int stage_new_netns(cordon_error *e);
/* The staged network namespace (lo up), now the caller's; -1 when none is staged. */
int stage_take_netns(void);
/*
 * The run's cgroup: the staged one with the profile's limits when there is one and it is still
 * usable, else one made now (cgroup_run_create, with its rules and errors).
 */
int stage_take_cgroup(const struct cordon_profile *p, struct cgroup_run **ret, cordon_error *e);
/* The staged cgroup as it is (no limits), now the caller's; NULL when none is staged. */
struct cgroup_run *stage_take_cgroup_staged(void);
