/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filter: a table of rules (one place, readable, reviewable) compiled with
 * libseccomp once in the parent; the child only loads the ready BPF program, last, right
 * before execve (after no_new_privs), so no allocation happens after fork.
 */
#pragma once

#include <cordon/cordon.h>
#include <linux/filter.h>

/* Compile the filter for this profile. *ret is malloc'd (free with seccomp_prog_free). */
int seccomp_prog_compile(const struct cordon_profile *p, struct sock_fprog **ret, cordon_error *e);
void seccomp_prog_free(struct sock_fprog *prog);
/* In the child: load it. Async-signal-safe. Returns 0 or -errno. */
int seccomp_prog_load(const struct sock_fprog *prog);
/* For `cordon doctor` and docs: the rule table as text lines "name action". */
int seccomp_describe(char ***ret_lines, cordon_error *e);
