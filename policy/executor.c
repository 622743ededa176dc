/* SPDX-License-Identifier: MIT */
/*
 * The ShellExecutor dialect: AG2's ShellExecutor._validate_command (reference §8, f27c3be6c).
 *
 * Order: shlex syntax, empty argv, allowed_commands, denied_commands (exact base names),
 * dangerous regexes over the raw command, then allowed_paths over the paths a regex finds in
 * the command. Messages are ValueError texts, returned bare. Lists in messages are Python's
 * repr of a list, e.g. "['ls', 'cat']".
 *
 * Python's re and PCRE2 differ in a few places that matter for these patterns; the pattern
 * text is translated before compiling (see executor_translate) so that "\s" means what
 * str.isspace() means and "\Z" means the end of the string.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <errno.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"

struct executor_rule {
	const char *regex;
	const char *message;
};

/* ShellExecutor.DEFAULT_DANGEROUS_PATTERNS, in order. */
static const struct executor_rule executor_defaults[] = {
	{ "\\brm\\s+-rf\\s+/\\s*$", "Deletion of root filesystem (rm -rf /) is not allowed." },
	{ "\\brm\\s+-rf\\s+/\\s+", "Deletion starting from root (rm -rf / ...) is not allowed." },
	{ "\\brm\\s+-rf\\s+~\\s*$",
	  "Deletion of entire home directory (rm -rf ~) is not allowed." },
	{ "\\brm\\s+-rf\\s+~\\s+", "Deletion starting from home (rm -rf ~ ...) is not allowed." },
	{ "\\brm\\s+-rf\\s+/(?:etc|usr|bin|sbin|lib|lib64|boot|root|sys|proc|dev)\\b",
	  "Deletion of critical system directories is not allowed." },
	{ ">\\s*/dev/sd[a-z][0-9]*\\s*$", "Direct disk block device overwrite is not allowed." },
	{ ">\\s*/dev/hd[a-z][0-9]*\\s*$", "Direct disk block device overwrite is not allowed." },
	{ ">\\s*/dev/nvme\\d+n\\d+p\\d+\\s*$", "Direct NVMe disk overwrite is not allowed." },
	/*
	 * AG2 spells this one \bdd\b.*\bof=/dev/(?:sd|hd|nvme) and searched as it is, every
	 * "dd" of a line is a start from which ".*" runs to the line's end and back: quadratic
	 * ("dd " 8,000 times took 1.8 s, a 1 MiB command would take most of an hour, before its
	 * timeout starts). A line matches that iff its first "dd" word has such an "of=" after
	 * it, and that is what this spelling searches, once per line (a unit test compares the
	 * two on random commands).
	 */
	{ "(?m)^(?>.*?\\bdd\\b).*\\bof=/dev/(?:sd|hd|nvme)",
	  "Writing to disk devices with dd is not allowed." },
	{ ":\\(\\)\\s*\\{\\s*:\\s*\\|\\s*:\\s*&\\s*\\}\\s*;", "Fork bombs are not allowed." },
	{ "\\bmkfs\\.(?:ext[234]|xfs|btrfs|ntfs|vfat|fat)\\s+/dev/",
	  "Formatting filesystems is not allowed." },
	{ "\\bformat\\s+[A-Z]:\\s*$", "Formatting Windows drives is not allowed." },
	{ "\\bformat\\s+[A-Z]:\\s+/", "Formatting Windows drives is not allowed." },
	{ "\\bdel\\s+/[sS]\\s+C:\\\\Windows",
	  "Deletion of Windows system directory is not allowed." },
	{ "\\bdel\\s+/[sS]\\s+C:\\\\Program\\s+Files",
	  "Deletion of Windows Program Files is not allowed." },
	{ "\\brmdir\\s+/[sS]\\s+C:\\\\Windows",
	  "Deletion of Windows system directory is not allowed." },
	{ "\\brm\\s+-rf\\s+/\\*\\s*$", "Mass deletion of root directory contents is not allowed." },
	{ "\\brm\\s+-rf\\s+~\\*\\s*$", "Mass deletion of home directory contents is not allowed." },
	{ ">\\s*/etc/(?:passwd|shadow|hosts|fstab)",
	  "Overwriting critical system files is not allowed." },
	{ ">\\s*/boot/", "Overwriting boot files is not allowed." },
};

/* Python's \s (str.isspace()) as the inside of a PCRE2 class. PCRE2's own \s lacks
 * \x1c-\x1f and has U+180E, so it is spelled out. */
#define EXECUTOR_SPACE                                                                             \
	"\\t-\\r\\x1c-\\x20\\x85\\xa0\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"      \
	"\\x{205f}\\x{3000}"

/*
 * Python's re.IGNORECASE takes i, I, U+0130 (capital I with dot) and U+0131 (dotless i) for
 * one letter (sre's lower() maps U+0130 to i, and its table of equivalences pairs i with
 * U+0131); PCRE2's caseless matching (Unicode case folding) keeps the last two apart. No
 * other literal differs: every cased code point against its case variants, Python 3.11 and
 * PCRE2 10.42 compared. So `rm -rf /b\u0131n` was refused by
 * AG2's rule 5 and passed here (found in red team). The subject and the pattern's literals
 * outside classes write the two as a plain 'i', which PCRE2 then matches caselessly as Python
 * does; a class that holds either gets an 'i' (executor_class).
 */
static bool executor_dotted_i(const char *s)
{
	return (unsigned char)s[0] == 0xc4 &&
	       ((unsigned char)s[1] == 0xb0 || (unsigned char)s[1] == 0xb1);
}

/* The subject with each U+0130 and U+0131 written 'i' (1 byte for 2), malloc'd. */
static char *executor_fold_i(const char *s)
{
	size_t len = strlen(s);
	char *out = malloc(len + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (executor_dotted_i(s + i)) {
			*o++ = 'i';
			i++;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/*
 * A class of the pattern (executor_translate): does it hold U+0130 or U+0131, as a member or
 * inside a range? The subject writes both as 'i' (executor_fold_i), so such a class gets an
 * 'i' of its own: Python's re.IGNORECASE takes i for either (sre adds i to [ā-ž], which holds
 * U+0131), while the range keeps its real ends ([ı-ž] must not take j).
 */
struct executor_class {
	int64_t prev;  /* the last member's code point, -1 after a class escape (\d, \s...) */
	bool range;    /* a '-' after prev: the next member ends a range */
	bool dotted_i; /* U+0130 or U+0131 is in the class */
};

static void executor_class_member(struct executor_class *k, int64_t cp)
{
	if (k->range && k->prev >= 0 && cp >= 0)
		k->dotted_i |= k->prev <= 0x131 && cp >= 0x130;
	else
		k->dotted_i |= cp == 0x130 || cp == 0x131;
	k->range = false;
	k->prev = cp;
}

/* The code point a one-character escape stands for in a class (\n, \\, \]...), or -1. */
static int64_t executor_escape_cp(char n)
{
	static const char from[] = "abfnrtv", to[] = "\a\b\f\n\r\t\v";
	const char *p = strchr(from, n);

	if (n && p)
		return (unsigned char)to[p - from];
	if (isalnum((unsigned char)n))
		return -1; /* \d, \w, \s, \x.., octal...: not a single known character here */
	return (unsigned char)n;
}

/*
 * Rewrite a Python regex into PCRE2 syntax with the same meaning for what AG2's patterns use:
 * \s and \S (outside and, for \s, inside classes), \Z (end of subject: PCRE2's \z) and the
 * \uXXXX / \UXXXXXXXX escapes PCRE2 does not have. U+0130 and U+0131 (literal or \u) become
 * 'i' outside classes; a class that holds either, as a member or in a range, gets an 'i' too
 * (executor_class; the subject has them as 'i': executor_fold_i). Everything else is passed
 * through.
 */
static int executor_translate(const char *py, char **ret, cordon_error *e)
{
	struct pystr_buf b = { 0 };
	struct executor_class k = { 0 };
	bool in_class = false;
	size_t class_start = 0, len = strlen(py);

	for (size_t i = 0; i < len; i++) {
		char c = py[i];
		int r = 0;

		if (c == '\\' && i + 1 < len) {
			char n = py[++i];

			if (n == 's' && in_class) {
				r = pystr_buf_add(&b, EXECUTOR_SPACE, strlen(EXECUTOR_SPACE), e);
				executor_class_member(&k, -1);
			} else if (n == 's' || n == 'S') {
				r = pystr_buf_addf(&b, e, "[%s%s]", n == 'S' ? "^" : "",
						   EXECUTOR_SPACE);
			} else if (n == 'Z' && !in_class) {
				r = pystr_buf_add(&b, "\\z", 2, e);
			} else if ((n == 'u' || n == 'U') && i + (n == 'u' ? 4 : 8) < len) {
				size_t w = n == 'u' ? 4 : 8;
				char hex[9] = { 0 }, *end;
				unsigned long cp;

				memcpy(hex, py + i + 1, w);
				cp = strtoul(hex, &end, 16);
				if (!in_class && *end == '\0' && (cp == 0x130 || cp == 0x131))
					r = pystr_buf_add(&b, "i", 1, e);
				else
					r = pystr_buf_addf(&b, e, "\\x{%.*s}", (int)w, py + i + 1);
				if (in_class)
					executor_class_member(&k, *end == '\0' ? (int64_t)cp : -1);
				i += w;
			} else if (n == 'x' && in_class && i + 2 < len &&
				   isxdigit((unsigned char)py[i + 1]) &&
				   isxdigit((unsigned char)py[i + 2])) {
				char hex[3] = { py[i + 1], py[i + 2], 0 };

				r = pystr_buf_addf(&b, e, "\\x%s", hex);
				executor_class_member(&k, strtol(hex, NULL, 16));
				i += 2;
			} else {
				char two[2] = { '\\', n };

				r = pystr_buf_add(&b, two, 2, e);
				if (in_class)
					executor_class_member(&k, executor_escape_cp(n));
			}
		} else if (!in_class && executor_dotted_i(py + i)) {
			r = pystr_buf_add(&b, "i", 1, e);
			i++;
		} else if (!in_class && c == '[') {
			in_class = true;
			k = (struct executor_class){ .prev = -1 };
			class_start = i + 1;
			if (i + 1 < len && py[i + 1] == '^')
				class_start++;
			r = pystr_buf_add(&b, &c, 1, e);
		} else if (in_class && c == ']' && i != class_start) {
			/* A ']' right after "[" or "[^" is a member, not the end of the class. */
			in_class = false;
			r = k.dotted_i ? pystr_buf_add(&b, "i]", 2, e)
				       : pystr_buf_add(&b, "]", 1, e);
		} else if (in_class && c == '-' && i != class_start && k.prev >= 0 && !k.range) {
			k.range = true;
			r = pystr_buf_add(&b, "-", 1, e);
		} else if (in_class) {
			size_t at = i;
			uint32_t cp = pystr_next(py, len, &at);

			/* Invalid UTF-8 reads as U+DC80..U+DCFF (pystr_next): a byte, no letter. */
			executor_class_member(&k, cp);
			r = pystr_buf_add(&b, py + i, at - i, e);
			i = at - 1;
		} else {
			r = pystr_buf_add(&b, &c, 1, e);
		}
		if (r < 0) {
			free(b.s);
			return -1;
		}
	}
	if (!b.s && pystr_buf_add(&b, "", 0, e) < 0)
		return -1;
	*ret = b.s;
	return 0;
}

/*
 * A Python regex compiled as the rules are searched: translated (executor_translate), caseless,
 * Unicode, '\n' the only newline. NULL with *ret_err and *ret_off (in *ret_pcre, the PCRE2
 * form) when PCRE2 refuses it; NULL with *ret_err 0 and *e set on ENOMEM.
 */
static pcre2_code *executor_compile(const char *regex, char **ret_pcre, int *ret_err,
				    PCRE2_SIZE *ret_off, cordon_error *e)
{
	pcre2_compile_context *cc;
	pcre2_code *code;

	*ret_err = 0;
	*ret_off = 0;
	if (executor_translate(regex, ret_pcre, e) < 0)
		return NULL;
	cc = pcre2_compile_context_create(NULL);
	if (!cc) {
		cordon_err(e, ENOMEM, "out of memory");
		return NULL;
	}
	/* '$' and '.' treat only '\n' as a newline, as Python's re does. */
	pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
	code = pcre2_compile((PCRE2_SPTR)*ret_pcre, PCRE2_ZERO_TERMINATED,
			     PCRE2_CASELESS | PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
			     ret_err, ret_off, cc);
	pcre2_compile_context_free(cc);
	return code;
}

int policy_check_dangerous_regex(const char *regex, cordon_error *e)
{
	_cleanup_free_ char *pcre = NULL;
	PCRE2_UCHAR msg[120];
	PCRE2_SIZE off;
	int err;
	pcre2_code *code = executor_compile(regex, &pcre, &err, &off, e);

	if (code) {
		pcre2_code_free(code);
		return 0;
	}
	if (!err)
		return -1;
	(void)pcre2_get_error_message(err, msg, sizeof(msg));
	/*
	 * One line: each form clipped to 64 bytes. The offset is the PCRE2 form's, which is
	 * named when it is not the regex as written.
	 */
#define EXECUTOR_CLIP(s) (int)(strlen(s) > 64 ? 64 : strlen(s)), (s), (strlen(s) > 64 ? "..." : "")
	if (strcmp(pcre, regex) == 0)
		return cordon_err(e, 0, "invalid regex '%.*s%s': %s at offset %zu",
				  EXECUTOR_CLIP(regex), (char *)msg, (size_t)off);
	return cordon_err(e, 0,
			  "invalid regex '%.*s%s': %s at offset %zu of its PCRE2 form '%.*s%s'",
			  EXECUTOR_CLIP(regex), (char *)msg, (size_t)off, EXECUTOR_CLIP(pcre));
#undef EXECUTOR_CLIP
}

/* re.search(regex, subject, re.IGNORECASE): 1 match, 0 none, -1 bad regex or ENOMEM. */
static int executor_search(const char *regex, const char *subject, cordon_error *e)
{
	_cleanup_free_ char *pcre = NULL, *folded = NULL;
	pcre2_match_data *md;
	pcre2_code *code;
	PCRE2_SIZE off;
	int err, r;

	code = executor_compile(regex, &pcre, &err, &off, e);
	if (!code) {
		PCRE2_UCHAR msg[120];

		if (!err)
			return -1;
		(void)pcre2_get_error_message(err, msg, sizeof(msg));
		return cordon_err(e, 0, "dangerous_patterns: bad regex '%s' at offset %zu: %s",
				  regex, (size_t)off, (char *)msg);
	}
	md = pcre2_match_data_create_from_pattern(code, NULL);
	if (!md) {
		pcre2_code_free(code);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	folded = executor_fold_i(subject);
	r = folded ? pcre2_match(code, (PCRE2_SPTR)folded, strlen(folded), 0, 0, md, NULL) : 0;
	pcre2_match_data_free(md);
	pcre2_code_free(code);
	if (!folded)
		return cordon_err(e, ENOMEM, "out of memory");
	if (r >= 0)
		return 1;
	if (r == PCRE2_ERROR_NOMATCH)
		return 0;
	/* A match limit or the like: refuse rather than let the command through. */
	return cordon_err(e, 0, "dangerous_patterns: regex '%s' failed to run (%d)", regex, r);
}

/* Split a profile item "REGEX => MESSAGE" at its first " => " (a message cannot escape the
 * separator, a regex can spell it differently, e.g. " =[>]"). */
static int executor_parse_rule(const char *item, char **ret_regex, const char **ret_message,
			       cordon_error *e)
{
	const char *sep = strstr(item, " => ");

	if (!sep)
		return cordon_err(e, EINVAL, "dangerous_patterns: '%s' is not 'REGEX => MESSAGE'",
				  item);
	*ret_regex = strndup(item, (size_t)(sep - item));
	if (!*ret_regex)
		return cordon_err(e, ENOMEM, "out of memory");
	*ret_message = sep + 4;
	return 0;
}

int policy_validate_dangerous_pattern(const char *item, cordon_error *e)
{
	_cleanup_free_ char *regex = NULL;
	const char *message;

	if (executor_parse_rule(item, &regex, &message, e) < 0)
		return -1;
	/* The profile loader's own check (runtime/profile.c), not a search of its own. */
	return policy_check_dangerous_regex(regex, e);
}

/* 1 when a rule matched (*ret_deny set), 0 when none did, -1 on error. */
static int executor_dangerous(const struct cordon_profile *p, const char *command, char **ret_deny,
			      cordon_error *e)
{
	/* An empty list is falsy in Python: `dangerous_patterns or DEFAULT...`. */
	size_t n =
		p->dangerous_patterns.n ? p->dangerous_patterns.n : ARRAY_SIZE(executor_defaults);

	for (size_t k = 0; k < n; k++) {
		_cleanup_free_ char *own = NULL;
		const char *regex, *message;
		int r;

		if (p->dangerous_patterns.n) {
			if (executor_parse_rule(p->dangerous_patterns.v[k], &own, &message, e) < 0)
				return -1;
			regex = own;
		} else {
			regex = executor_defaults[k].regex;
			message = executor_defaults[k].message;
		}
		r = executor_search(regex, command, e);
		if (r < 0)
			return -1;
		if (r > 0)
			return pystr_asprintf(ret_deny, e,
					      "Potentially dangerous command detected: %s",
					      message) < 0
				       ? -1
				       : 1;
	}
	return 0;
}

/* os.path.expanduser(): "~" and "~/x" from home; "~user" would need the user database, which
 * pure code cannot read, so it yields NULL and the caller refuses the path. */
static int executor_expanduser(const char *path, const char *home, char **ret, cordon_error *e)
{
	size_t hl;

	*ret = NULL;
	if (path[1] != '\0' && path[1] != '/')
		return 0;
	if (!home)
		return 0;
	hl = strlen(home);
	while (hl > 0 && home[hl - 1] == '/')
		hl--;
	if (hl == 0 && path[1] == '\0')
		return pystr_asprintf(ret, e, "/");
	return pystr_asprintf(ret, e, "%.*s%s", (int)hl, home, path + 1);
}

/* ShellExecutor._validate_path(); 1 allowed, 0 not, 2 "empty pattern", -1 error. */
static int executor_validate_path(const struct cordon_profile *p, const char *path,
				  const char *workspace, policy_resolve_fn resolve, cordon_error *e)
{
	_cleanup_free_ char *abs = NULL, *pure = NULL, *rel = NULL;
	int r;

	/* A relative path is resolve()d against the workspace; an absolute one is not, so
	 * "/ws/../etc/passwd" is lexically under "/ws" (an AG2 weakness kept in compat). */
	if (pypath_isabs(path)) {
		r = pypath_pure(path, &pure, e);
	} else {
		r = resolve(workspace, path, &abs, e);
		if (r > 0)
			return 0; /* Python raises out of resolve(); refuse instead */
		if (r == 0)
			r = pypath_pure(abs, &pure, e);
	}
	if (r < 0)
		return -1;
	r = pypath_relative_to(pure, workspace, &rel, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	for (size_t k = 0; k < p->allowed_paths.n; k++) {
		_cleanup_free_ char *joined = NULL;
		const char *pattern = p->allowed_paths.v[k];

		r = pypath_match(pure, pattern, e);
		if (r != 0)
			return r;
		if (pypath_join(workspace, pattern, &joined, e) < 0)
			return -1;
		r = pypath_match(joined, pure, e);
		if (r != 0)
			return r;
	}
	return 0;
}

/* The start of re.findall(r"(?:^|\s)((?:[/~]|\.\./|[A-Za-z]:)[^\s]*)", cmd)'s group. */
static bool executor_path_start(const char *s)
{
	return s[0] == '/' || s[0] == '~' || !strncmp(s, "../", 3) ||
	       (((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z') && s[1] == ':');
}

static int executor_paths(const struct cordon_profile *p, const char *command, const char *workdir,
			  policy_resolve_fn resolve, const char *home, char **ret_deny,
			  cordon_error *e)
{
	_cleanup_free_ char *workspace = NULL;
	size_t len = strlen(command), pos = 0;

	for (size_t k = 0; k < p->allowed_paths.n; k++)
		if (!strcmp(p->allowed_paths.v[k], "**"))
			return 0;
	if (pypath_pure(workdir, &workspace, e) < 0)
		return -1;

	while (pos < len) {
		size_t start = pos, end, next = pos;
		uint32_t c = pystr_next(command, len, &next);

		/* The group starts at 0 (the '^' branch) or right after one whitespace. */
		if (!(pos == 0 && executor_path_start(command))) {
			if (!py_isspace(c) || !executor_path_start(command + next)) {
				pos = next;
				continue;
			}
			start = next;
		}
		end = start;
		while (end < len) {
			size_t at = end;

			if (py_isspace(pystr_next(command, len, &end))) {
				end = at;
				break;
			}
		}
		pos = end;

		_cleanup_free_ char *match = NULL, *expanded = NULL;
		int r = 0;

		match = strndup(command + start, end - start);
		if (!match)
			return cordon_err(e, ENOMEM, "out of memory");
		if (match[0] == '~' && executor_expanduser(match, home, &expanded, e) < 0)
			return -1;
		if (match[0] != '~' || expanded)
			r = executor_validate_path(p, expanded ? expanded : match, workspace,
						   resolve, e);
		if (r < 0)
			return -1;
		if (r == 2)
			return pystr_asprintf(ret_deny, e, "empty pattern");
		if (r == 0) {
			_cleanup_free_ char *list = NULL;

			if (pystr_repr_list(&p->allowed_paths, &list, e) < 0)
				return -1;
			return pystr_asprintf(
				ret_deny, e,
				"Access to path '%s' is not allowed. Allowed paths: %s", match,
				list);
		}
	}
	return 0;
}

int executor_check(const struct cordon_profile *p, const char *command, const char *workdir,
		   policy_resolve_fn resolve, const char *home, char **ret_deny, cordon_error *e)
{
	_cleanup_free_ char *stripped = NULL;
	char **argv = NULL;
	const char *err, *name;
	size_t start, end;
	int r;

	*ret_deny = NULL;
	pystrip(command, strlen(command), &start, &end);
	stripped = strndup(command + start, end - start);
	if (!stripped)
		return cordon_err(e, ENOMEM, "out of memory");
	r = policy_split(stripped, &argv, &err, e);
	if (r < 0)
		return -1;
	if (r > 0)
		return pystr_asprintf(ret_deny, e, "Invalid command syntax: %s", err);
	if (!argv[0]) {
		r = pystr_asprintf(ret_deny, e, "Empty command is not allowed");
		goto out;
	}
	name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	if (p->allowed_commands.set) {
		bool found = false;

		for (size_t k = 0; k < p->allowed_commands.n && !found; k++)
			found = !strcmp(p->allowed_commands.v[k], name);
		if (!found) {
			_cleanup_free_ char *list = NULL;

			r = pystr_repr_list(&p->allowed_commands, &list, e);
			if (r == 0)
				r = pystr_asprintf(
					ret_deny, e,
					"Command '%s' is not in the allowed commands list: %s",
					name, list);
			goto out;
		}
	}
	for (size_t k = 0; k < p->denied_commands.n; k++)
		if (!strcmp(p->denied_commands.v[k], name)) {
			r = pystr_asprintf(ret_deny, e,
					   "Command '%s' is in the denied commands list", name);
			goto out;
		}
	if (p->command_filtering) {
		r = executor_dangerous(p, command, ret_deny, e);
		if (r != 0) {
			r = r < 0 ? -1 : 0;
			goto out;
		}
	}
	r = 0;
	if (p->allowed_paths.n > 0)
		r = executor_paths(p, command, workdir, resolve, home, ret_deny, e);
out:
	policy_strv_free(argv);
	return r;
}
