/* SPDX-License-Identifier: MIT */
/* rlimits from the profile. Never raises a hard limit (root lacks CAP_SYS_RESOURCE here). */
#pragma once

#include <cordon/cordon.h>
#include <stdbool.h>
#include <stdint.h>

/* The profile's per-process limits, as numbers: the child reads these, never the profile (a
 * pre-built sandbox gets them in its plan, after its clone; sandbox.h). 0: unlimited. */
struct sb_limits {
	uint64_t cpu_time, file_size, open_files, memory, pids;
};

/* The limits of p (all 0 when p is NULL). */
struct sb_limits limits_of(const struct cordon_profile *p);

/* In the child: apply cpu_time, file_size, open_files, core 0, memory as RLIMIT_AS when
 * `memory_in_cgroup` is false, and pids as RLIMIT_NPROC when `pids_by_nproc` (no cgroup, and
 * a user namespace of the run's own). Each limit is min(profile, current hard). Returns 0 or
 * -errno. */
int limits_apply(const struct sb_limits *l, bool memory_in_cgroup, bool pids_by_nproc);
/* The sandbox is the OOM killer's first choice, before cordon: oom_score_adj 500 (limits.c). */
void limits_oom_first(void);
