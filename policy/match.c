/* SPDX-License-Identifier: MIT */
/*
 * AG2's command matching (filter.matches, filter.matches_argv) and compat mode's shell
 * operator test. Both are string tests, not parsers, and compat mode reproduces their holes
 * on purpose: the kernel layer, not this file, is what stops `echo a & touch pwned`.
 */
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"

bool match_prefix_in(const char *pattern, const char *command, size_t start, size_t end)
{
	size_t plen = strlen(pattern);

	if (end - start < plen || memcmp(command + start, pattern, plen))
		return false;
	return start + plen == end || command[start + plen] == ' ';
}

bool match_prefix(const char *pattern, const char *command)
{
	size_t start, end;

	/* The command is stripped of Python (Unicode) whitespace, the pattern is not: "rm "
	 * then needs two spaces after rm. Only a plain ' ' ends the prefix, not a tab. */
	pystrip(command, strlen(command), &start, &end);
	return match_prefix_in(pattern, command, start, end);
}

bool match_has_operator(const char *command)
{
	/* 217a43f8e / cec8d4d1b: a raw substring test. Quotes are not looked at ("echo 'a > b'"
	 * is refused, so is "ls 2>&1") and a single '&', '<', newline and CR are not in the
	 * list. The list is AG2's, kept whole although ">" and "|" imply ">>" and "||". */
	static const char *const ops[] = { ">", ">>", "|", ";", "&&", "||", "`", "$(" };

	for (size_t k = 0; k < ARRAY_SIZE(ops); k++)
		if (strstr(command, ops[k]))
			return true;
	return false;
}

bool match_argv(const char *pattern, char *const *argv)
{
	size_t n = 0, len = strlen(pattern), i = 0, start = 0;
	bool in_word = false, ok = true;

	/* pattern.split() compared word for word with argv[:len(words)], so argv must be at
	 * least as long as the pattern. Words are compared in place to stay allocation-free. */
	while (ok) {
		size_t at = i;
		bool space = true;

		if (i < len)
			space = py_isspace(pystr_next(pattern, len, &i));
		if (!space && !in_word) {
			in_word = true;
			start = at;
		} else if (space && in_word) {
			in_word = false;
			ok = argv[n] && strlen(argv[n]) == at - start &&
			     !memcmp(argv[n], pattern + start, at - start);
			n++;
		}
		if (at >= len)
			break;
	}
	return ok;
}
