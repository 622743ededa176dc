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
