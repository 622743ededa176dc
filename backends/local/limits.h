/* SPDX-License-Identifier: MIT */
/* rlimits from the profile. Never raises a hard limit (root lacks CAP_SYS_RESOURCE here). */
#pragma once

#include <cordon/cordon.h>

/* In the child: apply cpu_time, file_size, open_files, core 0, memory as RLIMIT_AS when
 * `memory_in_cgroup` is false, and pids as RLIMIT_NPROC when `pids_by_nproc` (no cgroup, and
 * a user namespace of the run's own). Each limit is min(profile, current hard). Returns 0 or
 * -errno. */
int limits_apply(const struct cordon_profile *p, bool memory_in_cgroup, bool pids_by_nproc);
