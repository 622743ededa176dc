/* SPDX-License-Identifier: MIT */
#include "backends/daytona/jstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum {
	S_START,      /* before '{' */
	S_KEY_OR_END, /* after '{': a key or '}' */
	S_KEY_START,  /* after ',': a key */
	S_KEY,	      /* inside a key */
	S_KEY_ESC,    /* after a backslash in a key */
	S_COLON,
	S_VALUE,  /* before a value */
	S_RESULT, /* inside the result string */
	S_RESULT_ESC,
	S_RESULT_HEX,
	S_NUMBER, /* an exit code */
	S_SKIP,	  /* a value we do not use */
	S_AFTER,  /* after a value: ',' or '}' */
	S_DONE,
	S_ERROR,
};

enum { K_OTHER, K_RESULT, K_EXIT, K_CODE };

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void jstream_init(struct jstream *j, jstream_sink sink, void *arg)
{
	memset(j, 0, sizeof(*j));
	j->sink = sink;
	j->arg = arg;
}

static void flush(struct jstream *j)
{
	if (j->outlen)
		j->sink(j->arg, j->out, j->outlen);
	j->outlen = 0;
}

static void emit(struct jstream *j, const char *s, size_t n)
{
	if (n > sizeof(j->out) - j->outlen) {
		flush(j);
		if (n >= sizeof(j->out)) {
			j->sink(j->arg, s, n);
			return;
		}
	}
	memcpy(j->out + j->outlen, s, n);
	j->outlen += n;
}

static void emit_cp(struct jstream *j, unsigned cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	emit(j, b, n);
}

/* A pending high surrogate that no low one follows. */
static void drop_high(struct jstream *j)
{
	if (j->high) {
		emit_cp(j, 0xfffd);
		j->high = 0;
	}
}

static int fail(struct jstream *j, const char *why)
{
	j->state = S_ERROR;
	j->error = why;
	return -1;
}

/* A whole code unit of \uXXXX. */
static void code_unit(struct jstream *j, unsigned cu)
{
	if (cu >= 0xd800 && cu < 0xdc00) {
		drop_high(j);
		j->high = cu;
	} else if (cu >= 0xdc00 && cu < 0xe000) {
		if (j->high)
			emit_cp(j, 0x10000 + ((j->high - 0xd800) << 10) + (cu - 0xdc00));
		else
			emit_cp(j, 0xfffd);
		j->high = 0;
	} else {
		drop_high(j);
		emit_cp(j, cu);
	}
}

static int end_number(struct jstream *j)
{
	char *end;
	long long v;

	j->tok[j->toklen] = '\0';
	errno = 0;
	v = strtoll(j->tok, &end, 10);
	if (errno || end == j->tok || *end)
		return fail(j, "exit code is not an integer");
	if (j->key == K_EXIT) {
		j->exit_code = v;
		j->have_exit = true;
	} else {
		j->code = v;
		j->have_code = true;
	}
	j->state = S_AFTER;
	return 0;
}

/* One byte of a value that is skipped (any JSON value; a scalar ends at , } or blank). */
static int skip_byte(struct jstream *j, char c, bool *reprocess)
{
	if (j->skip_str) {
		if (j->skip_esc)
			j->skip_esc = false;
		else if (c == '\\')
			j->skip_esc = true;
		else if (c == '"') {
			j->skip_str = false;
			if (!j->depth)
				j->state = S_AFTER;
		}
		return 0;
	}
	if (c == '"') {
		j->skip_str = true;
	} else if (c == '{' || c == '[') {
		if (++j->depth > 64)
			return fail(j, "value nested too deep");
	} else if (c == '}' || c == ']') {
		if (!j->depth) {
			/* the end of the enclosing object, right after a scalar */
			j->state = S_AFTER;
			*reprocess = true;
			return 0;
		}
		if (--j->depth == 0)
			j->state = S_AFTER;
	} else if (!j->depth && (c == ',' || is_ws(c))) {
		j->state = S_AFTER;
		*reprocess = true;
	}
	return 0;
}

int jstream_feed(struct jstream *j, const char *buf, size_t n)
{
	size_t i = 0;

	while (i < n) {
		char c = buf[i];
		bool reprocess = false;

		switch (j->state) {
		case S_START:
			if (c == '{')
				j->state = S_KEY_OR_END;
			else if (!is_ws(c))
				return fail(j, "not a JSON object");
			break;
		case S_KEY_OR_END:
		case S_KEY_START:
			if (c == '"') {
				j->state = S_KEY;
				j->toklen = 0;
				j->tok_long = false;
			} else if (c == '}' && j->state == S_KEY_OR_END) {
				j->state = S_DONE;
			} else if (!is_ws(c)) {
				return fail(j, "expected a key");
			}
			break;
		case S_KEY:
			if (c == '"') {
				j->tok[j->toklen] = '\0';
				j->key = j->tok_long		       ? K_OTHER
					 : !strcmp(j->tok, "result")   ? K_RESULT
					 : !strcmp(j->tok, "exitCode") ? K_EXIT
					 : !strcmp(j->tok, "code")     ? K_CODE
								       : K_OTHER;
				j->state = S_COLON;
			} else {
				if (c == '\\')
					j->state = S_KEY_ESC;
				if (j->toklen < sizeof(j->tok) - 1)
					j->tok[j->toklen++] = c;
				else
					j->tok_long = true;
			}
			break;
		case S_KEY_ESC:
			/* A key with an escape is none of ours (they hold none): keep it unmatched. */
			j->tok_long = true;
			j->state = S_KEY;
			break;
		case S_COLON:
			if (c == ':')
				j->state = S_VALUE;
			else if (!is_ws(c))
				return fail(j, "expected ':'");
			break;
		case S_VALUE:
			if (is_ws(c))
				break;
			if (j->key == K_RESULT && c == '"') {
				j->have_result = true;
				j->state = S_RESULT;
			} else if ((j->key == K_EXIT || j->key == K_CODE) &&
				   (c == '-' || (c >= '0' && c <= '9'))) {
				j->toklen = 0;
				j->tok[j->toklen++] = c;
				j->state = S_NUMBER;
			} else if (j->key == K_RESULT && c != 'n') {
				return fail(j, "result is not a string");
			} else {
				/* null, or a key we do not use */
				j->depth = 0;
				j->skip_str = j->skip_esc = false;
				j->state = S_SKIP;
				reprocess = true;
			}
			break;
		case S_RESULT: {
			/* The bulk of the answer: copy runs of plain bytes at once. */
			size_t k = i;

			while (k < n && buf[k] != '"' && buf[k] != '\\')
				k++;
			if (k > i) {
				drop_high(j);
				emit(j, buf + i, k - i);
				i = k;
				continue;
			}
			if (c == '"') {
				drop_high(j);
				j->state = S_AFTER;
			} else {
				j->state = S_RESULT_ESC;
			}
			break;
		}
		case S_RESULT_ESC: {
			const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
			const char *p = c ? strchr(from, c) : NULL;

			if (c == 'u') {
				j->hex = 0;
				j->cu = 0;
				j->state = S_RESULT_HEX;
				break;
			}
			if (!p)
				return fail(j, "invalid escape in result");
			drop_high(j);
			emit(j, to + (p - from), 1);
			j->state = S_RESULT;
			break;
		}
		case S_RESULT_HEX: {
			unsigned d;

			if (c >= '0' && c <= '9')
				d = (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				d = (unsigned)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				d = (unsigned)(c - 'A' + 10);
			else
				return fail(j, "invalid \\u escape in result");
			j->cu = j->cu << 4 | d;
			if (++j->hex == 4) {
				code_unit(j, j->cu);
				j->state = S_RESULT;
			}
			break;
		}
		case S_NUMBER:
			if ((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' ||
			    c == '+' || c == '-') {
				if (j->toklen >= sizeof(j->tok) - 1)
					return fail(j, "exit code too long");
				j->tok[j->toklen++] = c;
				break;
			}
			if (end_number(j) < 0)
				return -1;
			reprocess = true;
			break;
		case S_SKIP:
			if (skip_byte(j, c, &reprocess) < 0)
				return -1;
			break;
		case S_AFTER:
			if (c == ',')
				j->state = S_KEY_START;
			else if (c == '}')
				j->state = S_DONE;
			else if (!is_ws(c))
				return fail(j, "expected ',' or '}'");
			break;
		case S_DONE:
			if (!is_ws(c))
				return fail(j, "text after the object");
			break;
		default:
			return -1;
		}
		if (!reprocess)
			i++;
	}
	flush(j);
	return 0;
}

int jstream_end(struct jstream *j)
{
	if (j->state == S_ERROR)
		return -1;
	flush(j);
	if (j->state != S_DONE)
		return fail(j, "the answer ended inside its object");
	return 0;
}

bool jstream_exit_code(const struct jstream *j, long long *ret)
{
	if (j->have_exit)
		*ret = j->exit_code;
	else if (j->have_code)
		*ret = j->code;
	else
		return false;
	return true;
}
