/* SPDX-License-Identifier: MIT */
/*
 * shlex.split(s) of Python 3.11: posix=True, whitespace_split=True, no comment characters.
 *
 * This is a state machine transcribed from shlex.read_token(), not a shell parser: the
 * point is to find the same tokens, and the same two errors, that AG2 finds. Three details
 * matter for the policy and differ from a shell:
 *   - only " \t\r\n" separate words (\v, \f and Unicode spaces are word characters);
 *   - inside double quotes a backslash escapes only '"' and '\' and is kept otherwise;
 *   - an empty quoted word ('' or "") is a token of its own.
 * Every special character is ASCII, so working on UTF-8 bytes gives the same tokens as
 * working on code points.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"

static bool shlex_isspace(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int policy_split(const char *command, char ***ret_argv, const char **ret_err, cordon_error *e)
{
	struct pystr_buf tok = { 0 };
	char **v = NULL;
	size_t n = 0;
	/* ' ' between tokens, 'a' in a word, '\'' or '"' in quotes, '\\' after a backslash. */
	char state = ' ', escaped_state = 'a';
	bool quoted = false;
	const char *err = NULL;
	const char *p = command;

	v = calloc(1, sizeof(*v));
	if (!v)
		return cordon_err(e, ENOMEM, "out of memory");

	for (;;) {
		char c = *p;
		bool end_token = false, eof = c == '\0';

		if (!eof)
			p++;
		switch (state) {
		case ' ':
		case 'a':
			if (eof) {
				end_token = true;
			} else if (shlex_isspace(c)) {
				if (state == 'a' || quoted)
					end_token = true;
				state = ' ';
			} else if (c == '\\') {
				escaped_state = 'a';
				state = '\\';
			} else if (c == '\'' || c == '"') {
				state = c;
			} else {
				state = 'a';
				if (pystr_buf_add(&tok, &c, 1, e) < 0)
					goto fail;
			}
			break;
		case '\'':
		case '"':
			quoted = true;
			if (eof) {
				err = "No closing quotation";
				goto syntax;
			}
			if (c == state) {
				state = 'a';
			} else if (c == '\\' && state == '"') {
				escaped_state = state;
				state = '\\';
			} else if (pystr_buf_add(&tok, &c, 1, e) < 0) {
				goto fail;
			}
			break;
		case '\\':
			if (eof) {
				err = "No escaped character";
				goto syntax;
			}
			/* In double quotes, "\x" keeps its backslash unless x is '"' or '\'. */
			if (escaped_state == '"' && c != '\\' && c != '"' &&
			    pystr_buf_add(&tok, "\\", 1, e) < 0)
				goto fail;
			if (pystr_buf_add(&tok, &c, 1, e) < 0)
				goto fail;
			state = escaped_state;
			break;
		}
		if (end_token && (tok.len > 0 || quoted)) {
			char **t = realloc(v, (n + 2) * sizeof(*t));

			if (!t)
				goto oom;
			v = t;
			v[n++] = tok.s ? tok.s : strdup("");
			v[n] = NULL;
			if (!v[n - 1])
				goto oom;
			tok = (struct pystr_buf){ 0 };
			quoted = false;
		}
		if (eof)
			break;
	}
	free(tok.s);
	*ret_argv = v;
	*ret_err = NULL;
	return 0;

syntax:
	free(tok.s);
	policy_strv_free(v);
	*ret_err = err;
	return 1;
oom:
	cordon_err(e, ENOMEM, "out of memory");
fail:
	free(tok.s);
	policy_strv_free(v);
	return -1;
}
