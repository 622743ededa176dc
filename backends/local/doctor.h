/* SPDX-License-Identifier: MIT */
/*
 * `cordon doctor`: which kernel facilities this host offers to this process, and what the local
 * sandbox will use, with the reason for any degradation. The probes that change the caller's
 * state (unshare, mounts) run in forked children.
 */
#pragma once

#include <cordon/cordon.h>

/* A multi-line report ("facility: status; use ..." per line). *ret_text is malloc'd. */
/* workdir: the directory whose file system is tested for idmapped mounts (NULL: the cwd). */
int doctor_report(const char *workdir, char **ret_text, cordon_error *e);
/*
 * The sysctl set to 0 that keeps ordinary users from making user namespaces (Debian's
 * kernel.unprivileged_userns_clone, user.max_user_namespaces), or NULL.
 */
const char *doctor_userns_knob_off(void);
