/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filter: a table of rules (one place, readable, reviewable) compiled with
 * libseccomp at build time; the child only loads the ready BPF program, last, right before
 * execve (after no_new_privs), so no allocation happens after fork.
 */
#pragma once

#include <cordon/cordon.h>
#include <linux/filter.h>
#include <stdbool.h>

/* The filter for this profile: the program compiled at build time when there is one, else
 * compiled now. *ret is malloc'd (free with seccomp_prog_free). */
int seccomp_prog_compile(const struct cordon_profile *p, struct sock_fprog **ret, cordon_error *e);
/* Compile the table with libseccomp now (the build-time generator, and the test that checks
 * the prebuilt program against it). */
int seccomp_prog_build(const struct cordon_profile *p, struct sock_fprog **ret, cordon_error *e);
/* Was this library built with the prebuilt program? */
bool seccomp_prog_prebuilt(void);
void seccomp_prog_free(struct sock_fprog *prog);
/* In the child: load it. Async-signal-safe. Returns 0 or -errno. */
int seccomp_prog_load(const struct sock_fprog *prog);
/* For `cordon doctor` and docs: the rule table as text lines "name action". */
int seccomp_describe(char ***ret_lines, cordon_error *e);
