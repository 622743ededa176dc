/* SPDX-License-Identifier: MIT */
/* rlimits from the profile. Never raises a hard limit (root lacks CAP_SYS_RESOURCE here). */
#pragma once

#include <cordon/cordon.h>

/* In the child: apply cpu_time, file_size, open_files, core 0, and memory as RLIMIT_AS when
 * `memory_in_cgroup` is false. Each limit is min(profile, current hard). Returns 0 or -errno. */
int limits_apply(const struct cordon_profile *p, bool memory_in_cgroup);
