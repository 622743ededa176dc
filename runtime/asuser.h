/* SPDX-License-Identifier: MIT */
/*
 * Acting on the file system as another user, on this thread only: root's cordond and its
 * runners open, create and resolve the paths a caller names with the caller's own rights.
 */
#pragma once

#include <cordon/cordon.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Run fn(arg, e) on this thread with the file-system identity uid, gid and supplementary groups
 * (fsuid, fsgid, setgroups; groups NULL or ngroups 0: gid alone) and, for a uid other than 0,
 * no effective capability, so that every path lookup, open, mkdir and unlink is checked by the
 * kernel as that user's own would be; then restore this thread's identity (a thread that
 * cannot be restored aborts the process: it must not go on as someone else; its parent-death
 * signal, which the switch clears, is set again). Returns fn's
 * value, or -1 with *e when the switch failed. Not root: fn runs as this process already is.
 */
int asuser_call(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups,
		int (*fn)(void *arg, cordon_error *e), void *arg, cordon_error *e);
