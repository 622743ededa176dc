/* SPDX-License-Identifier: MIT */
/*
 * The simple-command fast path of `sh -c SCRIPT` (docs/compat.md, "No shell for a simple
 * command"). When SCRIPT is one simple command that dash would run by exec'ing a program with
 * the script's words as its argv, the sandbox execs that program itself, with the environment
 * dash would have given it, and init reports a signal death the way dash does: the observable
 * result is the same, without the 2-3 ms an exec of dash costs on a VM. Anything else, and any
 * failure of the direct exec, runs `sh -c SCRIPT` exactly as before.
 *
 * Parent side only: these allocate.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Is word one that dash runs itself (a builtin or a reserved word)? */
bool shfast_is_builtin(const char *word);

/*
 * The words of script when it is one simple command made only of plain characters, whose
 * first word is neither an assignment nor a dash builtin or reserved word: 1 and *ret_argv (a
 * NULL-terminated, malloc'd vector; free with shfast_strv_free), 0 when it is not, -1 when
 * out of memory.
 */
int shfast_words(const char *script, char ***ret_argv);

/*
 * The environment dash 0.5 exports to a command, from the environment it was started with:
 * only entries with a valid name, in dash's variable-table order, duplicates resolved to the
 * last value, IFS reset to its default, and PWD always present. Where PWD goes is returned in
 * *ret_pwd: its final value depends on the view inside the sandbox (dash keeps an inherited
 * PWD only when it names the current directory), so the caller fills that slot in the child.
 * *ret_pwd_env is the inherited PWD entry ("PWD=..."), or NULL.
 *
 * 1 and *ret_env (free with shfast_strv_free; the strings are the caller's, except none), 0
 * when envp is one we do not model (no PATH; OPTIND, LINENO, PPID or HISTSIZE set, which dash
 * validates or rewrites), -1 when out of memory.
 */
int shfast_env(char *const envp[], char ***ret_env, size_t *ret_pwd, const char **ret_pwd_env);

/* Free a vector from shfast_words (its strings too) or shfast_env (the vector only). */
void shfast_strv_free(char **v, bool strings);
