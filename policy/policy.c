/* SPDX-License-Identifier: MIT */
/*
 * policy_check(): the front door of the policy engine. It picks the dialect and returns the
 * refusal message AG2 would return, byte for byte, or NULL.
 *
 *   - ShellExecutor dialect, when any of its four lists is given (reference §8);
 *   - then strict mode (restricted mode, §11) or compat mode (ShellAdapter._filter, §4).
 *
 * A profile that sets both the ShellExecutor keys and ShellAdapter keys gets both checks, in
 * that order: no AG2 object combines them, and running both can only refuse more.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"

/* READONLY_COMMANDS of 217a43f8e and cec8d4d1b, in AG2's order. Several of them write files
 * or run programs (env, find -exec, sort -o, git branch, ...): compat mode keeps the list as
 * it is and relies on the read-only workdir mount for the guarantee. */
static const char *const policy_readonly_compat[] = {
	"cat",	   "head",     "tail",	     "ls",	 "ll",	       "la",   "grep", "egrep",
	"fgrep",   "find",     "wc",	     "du",	 "df",	       "diff", "stat", "file",
	"which",   "pwd",      "echo",	     "env",	 "printenv",   "sort", "uniq", "cut",
	"git log", "git diff", "git status", "git show", "git branch", NULL,
};

bool policy_workdir_readonly(const struct cordon_profile *p)
{
	return p->readonly && !p->allowed.set;
}

const char *const *policy_readonly_commands(enum cordon_mode mode)
{
	return mode == CORDON_MODE_STRICT ? strict_readonly_commands() : policy_readonly_compat;
}

bool policy_is_executor_dialect(const struct cordon_profile *p)
{
	return p->allowed_commands.set || p->denied_commands.set || p->allowed_paths.set ||
	       p->dangerous_patterns.set;
}

bool policy_uses_argv(const struct cordon_profile *p)
{
	return p->mode == CORDON_MODE_STRICT || policy_is_executor_dialect(p);
}

static int policy_refuse(char **ret_deny, const char *what, const char *command, cordon_error *e)
{
	_cleanup_free_ char *q = NULL;

	if (pyrepr(command, &q, e) < 0)
		return -1;
	return pystr_asprintf(ret_deny, e, "Command not allowed%s: %s", what, q);
}

/* ShellAdapter._filter of cec8d4d1b (≡ LocalShellEnvironment.run of 217a43f8e). */
static int policy_compat(const struct cordon_profile *p, const char *command, const char *workdir,
			 policy_resolve_fn resolve, char **ret_deny, cordon_error *e)
{
	size_t s0, s1;

	*ret_deny = NULL;
	pystrip(command, strlen(command), &s0, &s1); /* once, for every pattern below */

	/* 1. The allow-list: an explicit `allowed` always wins; readonly only supplies one
	 * when none is given. The operator test runs only here, so `blocked` and `ignore`
	 * never trigger it, and the plain refusal beats the operator one. */
	if (p->allowed.set || p->readonly) {
		bool hit = false;

		if (p->allowed.set) {
			for (size_t k = 0; k < p->allowed.n && !hit; k++)
				hit = match_prefix_in(p->allowed.v[k], command, s0, s1);
		} else {
			for (size_t k = 0; policy_readonly_compat[k] && !hit; k++)
				hit = match_prefix_in(policy_readonly_compat[k], command, s0, s1);
		}
		if (!hit)
			return policy_refuse(ret_deny, "", command, e);
		if (match_has_operator(command))
			return policy_refuse(
				ret_deny, " (shell operators are not permitted in restricted mode)",
				command, e);
	}
	/* 2. The block-list: the same prefix test, so "rm -fr" and "/bin/rm" pass "rm -rf". */
	if (p->blocked.set)
		for (size_t k = 0; k < p->blocked.n; k++)
			if (match_prefix_in(p->blocked.v[k], command, s0, s1))
				return policy_refuse(ret_deny, "", command, e);
	/* 3. Ignored paths, literal tokens only. */
	if (p->ignore.set)
		return ignore_check(command, workdir, &p->ignore, resolve, false, ret_deny, e);
	return 0;
}

int policy_check_ex(const struct cordon_profile *p, const char *command, const char *workdir,
		    policy_resolve_fn resolve, const char *home, char **ret_deny, cordon_error *e)
{
	char *deny = NULL;
	int r;

	if (!command)
		return cordon_err(e, EINVAL, "policy: no command");
	/* Only the path checks need a workdir; refusing to guess one keeps a caller's bug
	 * from turning into a containment check against the wrong directory. */
	if (!workdir && (p->ignore.set || p->allowed_paths.n > 0))
		return cordon_err(e, EINVAL, "policy: ignore and allowed_paths need a workdir");
	if (!resolve)
		resolve = policy_resolve_lexical;
	if (policy_is_executor_dialect(p)) {
		r = executor_check(p, command, workdir, resolve, home, &deny, e);
		if (r < 0)
			return -1;
		if (deny) {
			*ret_deny = deny;
			return 0;
		}
	}
	if (p->mode == CORDON_MODE_STRICT)
		r = strict_check(p, command, workdir, resolve, &deny, e);
	else
		r = policy_compat(p, command, workdir, resolve, &deny, e);
	if (r < 0)
		return -1;
	*ret_deny = deny;
	return 0;
}

int policy_check(const struct cordon_profile *p, const char *command, const char *workdir,
		 policy_resolve_fn resolve, char **ret_deny, cordon_error *e)
{
	return policy_check_ex(p, command, workdir, resolve, NULL, ret_deny, e);
}
