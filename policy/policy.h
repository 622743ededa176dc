/* SPDX-License-Identifier: MIT */
/*
 * The policy engine: pure decision code (no I/O, no logging, no global state). It decides
 * whether a command may start, reproducing AG2's filters byte for byte
 * (shared/reference/ag2-behaviour.md §4, §8, §11). Anything that touches the file system (the
 * host-mode path resolver) is injected by the caller.
 */
#pragma once

#include <cordon/cordon.h>

/*
 * Resolve `token` against `workdir` into an absolute, normalised path (*ret_abs, malloc'd).
 * Return 0 on success; 1 when the token must be skipped (Python's resolve() raised);
 * -1 with *e on a real error (out of memory).
 */
typedef int (*policy_resolve_fn)(const char *workdir, const char *token, char **ret_abs,
				 cordon_error *e);

/* posixpath.normpath() (pure; the host resolver uses it too). */
int pypath_normpath(const char *path, char **ret, cordon_error *e);
/* Lexical resolution, for remote backends: normpath(join(workdir, token)). Pure. */
int policy_resolve_lexical(const char *workdir, const char *token, char **ret_abs, cordon_error *e);

/*
 * Decide. *ret_deny is NULL when the command may run, else the exact refusal message AG2 would
 * return (e.g. "Command not allowed: 'rm -rf /'"). `workdir` is the directory the ignore check
 * resolves against (already resolved by the caller in host mode).
 */
int policy_check(const struct cordon_profile *p, const char *command, const char *workdir,
		 policy_resolve_fn resolve, char **ret_deny, cordon_error *e);

/*
 * policy_check() with the home directory used by the ShellExecutor dialect to expand a "~" or
 * "~/..." path as os.path.expanduser() would (the caller reads $HOME: policy/ reads nothing).
 * home NULL, and any "~user" path, cannot be expanded purely and the path is refused.
 * resolve NULL means policy_resolve_lexical.
 */
int policy_check_ex(const struct cordon_profile *p, const char *command, const char *workdir,
		    policy_resolve_fn resolve, const char *home, char **ret_deny, cordon_error *e);

/* The READONLY_COMMANDS list `readonly` supplies in that mode (29 in compat, 17 in strict),
 * NULL-terminated, static. */
const char *const *policy_readonly_commands(enum cordon_mode mode);

/*
 * Whether the sandbox mounts the workdir read-only: under `readonly`, when the read-only command
 * list is the allow-list in force. An explicit `allowed` wins over `readonly` in AG2 (its own
 * test_readonly_overridden_by_explicit_allowed writes a file), in both modes, so the workdir
 * is then writable as well.
 */
bool policy_workdir_readonly(const struct cordon_profile *p);

/* Check one "REGEX => MESSAGE" item of dangerous_patterns. */
int policy_validate_dangerous_pattern(const char *item, cordon_error *e);

/*
 * Check the REGEX of a dangerous_patterns item as it will be searched (Python's syntax
 * translated: \uXXXX and the like), for the profile loader: "invalid regex '...': ..." if not.
 */
int policy_check_dangerous_regex(const char *regex, cordon_error *e);

/*
 * True when the profile executes the command as an argv without `sh` (strict mode and the
 * ShellExecutor dialect); the argv is then policy_split()'s result.
 */
bool policy_uses_argv(const struct cordon_profile *p);
bool policy_is_executor_dialect(const struct cordon_profile *p);

/* POSIX shlex.split (no comments). On a shlex error returns 1 and sets *ret_err (static text
 * such as "No closing quotation"); 0 with *ret_argv (NULL-terminated, malloc'd) on success. */
int policy_split(const char *command, char ***ret_argv, const char **ret_err, cordon_error *e);
void policy_strv_free(char **v);

/* Python's repr() of a UTF-8 string. An invalid byte is shown as "\udcXX", the way Python
 * shows a byte it decoded with surrogateescape (as it does for argv). */
int pyrepr(const char *s, char **ret, cordon_error *e);
/* Python str.strip(): returns [*ret_start, *ret_end) inside s (no allocation). */
void pystrip(const char *s, size_t len, size_t *ret_start, size_t *ret_end);
/* Nothing but Python (Unicode) whitespace, or empty: str.split() gives no word. */
bool pystr_blank(const char *s);
/* Is code point c whitespace by Python's str.isspace()? */
bool py_isspace(uint32_t c);
