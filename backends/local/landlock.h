/* SPDX-License-Identifier: MIT */
/* Landlock: a second wall behind the mounts (ABI-negotiated; absent kernels degrade). */
#pragma once

#include <cordon/cordon.h>

/* The kernel's Landlock ABI version, 0 when unavailable (probe with landlock_create_ruleset). */
int landlock_abi(void);
/*
 * In the child, after pivot_root: allow read+execute beneath each of ro[] and read+write beneath
 * each of rw[] (NULL-terminated lists of paths in the new root), deny everything else the ABI
 * can express. Async-signal-safe (only syscalls). Returns 0 or -errno.
 */
int landlock_apply(const char *const *ro, const char *const *rw, int abi);
