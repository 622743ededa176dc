/* SPDX-License-Identifier: MIT */
/*
 * Strict mode: AG2's restricted mode (reference §11; filter.py 640c13b3, adapter/shell.py
 * 51d5fe6d). The command is split with shlex and executed as that argv without a shell, so
 * what is checked is exactly what runs: nothing can expand or chain after the check. The
 * string checks below exist to give the agent a clear refusal instead of "cat: '>': No such
 * file", not because they are the boundary.
 */
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"

/* READONLY_COMMANDS of restricted mode: programs with no option that writes a file or runs
 * another program. find (-exec), file (-C), env, sort (-o), uniq and git are left out. */
static const char *const strict_readonly[] = {
	"cat", "head", "tail", "ls",	"grep", "egrep", "fgrep",    "wc",  "du",
	"df",  "diff", "stat", "which", "pwd",	"echo",	 "printenv", "cut", NULL,
};

const char *const *strict_readonly_commands(void)
{
	return strict_readonly;
}

bool strict_has_operator(const char *command)
{
	_cleanup_free_ char *kept = NULL;
	size_t n = 0;
	char quote = 0;

	/* filter._unquoted(): drop quoted text and backslash-escaped characters, then look
	 * for the operators in what is left. In double quotes a backslash hides the next
	 * character, even a closing quote; in single quotes it is literal. */
	kept = malloc(strlen(command) + 1);
	if (!kept)
		return true; /* fail closed; callers only use this as a refusal reason */
	for (const char *c = command; *c; c++) {
		if (quote) {
			if (*c == quote)
				quote = 0;
			else if (*c == '\\' && quote == '"' && c[1])
				c++;
		} else if (*c == '\'' || *c == '"') {
			quote = *c;
		} else if (*c == '\\') {
			if (c[1])
				c++;
		} else {
			kept[n++] = *c;
		}
	}
	kept[n] = '\0';
	/* ">", ">>", "<", "|", ";", "&", "&&", "||", "\n", "\r", "`", "$(" */
	return strpbrk(kept, "><|;&\n\r`") || strstr(kept, "$(");
}

static bool strict_any_argv(const struct cordon_list *l, const char *const *fallback,
			    char *const *argv)
{
	if (l) {
		/*
		 * A blank pattern has no words, and AG2's matches_argv would match every argv with
		 * it: `--allow ''` (an unset shell variable) would allow everything, readonly
		 * included, the opposite of compat mode. Here it matches nothing, in either list,
		 * as in compat mode (found in review).
		 */
		for (size_t k = 0; k < l->n; k++)
			if (!pystr_blank(l->v[k]) && match_argv(l->v[k], argv))
				return true;
		return false;
	}
	for (size_t k = 0; fallback[k]; k++)
		if (match_argv(fallback[k], argv))
			return true;
	return false;
}

static int strict_refuse(char **ret_deny, const char *what, const char *command, cordon_error *e)
{
	_cleanup_free_ char *q = NULL;

	if (pyrepr(command, &q, e) < 0)
		return -1;
	return pystr_asprintf(ret_deny, e, "Command not allowed%s: %s", what, q);
}

int strict_check(const struct cordon_profile *p, const char *command, const char *workdir,
		 policy_resolve_fn resolve, char **ret_deny, cordon_error *e)
{
	char **argv = NULL;
	const char *err;
	int r;

	*ret_deny = NULL;
	r = policy_split(command, &argv, &err, e);
	if (r < 0)
		return -1;
	if (r > 0)
		return strict_refuse(ret_deny, " (unbalanced quotes)", command, e);

	/* readonly gives the allow-list only when none is given; allowed=[] refuses all. */
	if ((p->allowed.set || p->readonly) &&
	    !strict_any_argv(p->allowed.set ? &p->allowed : NULL, strict_readonly, argv)) {
		r = strict_refuse(ret_deny, "", command, e);
		goto out;
	}
	if (strict_has_operator(command)) {
		r = strict_refuse(ret_deny, " (shell syntax is not available in restricted mode)",
				  command, e);
		goto out;
	}
	if (p->blocked.set && argv[0]) {
		_cleanup_free_ char *base = NULL;
		char *saved = argv[0];

		/* The program by its base name, so "rm" also stops "/bin/rm"; the rest of the
		 * argv word for word, so "rm -rf" does not stop "rm -fr". */
		if (pypath_name(saved, &base, e) < 0) {
			r = -1;
			goto out;
		}
		argv[0] = base;
		bool hit = strict_any_argv(&p->blocked, NULL, argv);
		argv[0] = saved;
		if (hit) {
			r = strict_refuse(ret_deny, "", command, e);
			goto out;
		}
	}
	r = 0;
	if (p->ignore.set)
		r = ignore_check(command, workdir, &p->ignore, resolve, true, ret_deny, e);
out:
	policy_strv_free(argv);
	return r;
}
