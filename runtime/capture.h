/* SPDX-License-Identifier: MIT */
/*
 * Streaming, bounded output capture and AG2's result string.
 *
 * A capture takes one stream's bytes as they arrive (any chunking) and keeps only what the
 * final result can show: memory is O(max_output) however much the command writes. Bytes are
 * decoded as UTF-8 with U+FFFD for invalid sequences (Python's errors="replace" rules), CRLF and
 * lone CR become LF (universal newlines), and every code point is counted so that the
 * "[truncated: showing first N of T chars]" total is exact.
 */
#pragma once

#include <cordon/cordon.h>

struct capture;

int capture_new(int64_t max_output, struct capture **ret, cordon_error *e);
void capture_free(struct capture *c);
/* Feed raw bytes. Never blocks, never grows past the bound. */
void capture_feed(struct capture *c, const void *buf, size_t n);
/* End of stream: flush a pending partial UTF-8 sequence or CR. Idempotent. Call it before
 * capture_text() and output_compose(): until then a trailing partial sequence is left out. */
void capture_end(struct capture *c);
/* Raw bytes fed so far (stdout_bytes / stderr_bytes). */
uint64_t capture_bytes(const struct capture *c);
/* Code points decoded so far, after newline translation. */
uint64_t capture_chars(const struct capture *c);
/* Bytes the capture has allocated (struct and kept text): at most 8 * max_output + a constant. */
size_t capture_memory(const struct capture *c);
/* The stream's decoded text, at most max_output code points (JSON "stdout"/"stderr"). */
int capture_text(const struct capture *c, char **ret, size_t *ret_len, cordon_error *e);

/*
 * AG2's result string (ag2-behaviour.md §2, §3.3): strip(stdout + stderr), truncate to
 * max_output code points with the truncation note, then the "[exit code: N]" suffix when
 * exit_code != 0. *ret_truncated tells whether the note was added. max_output must not exceed
 * the captures' own; ret_len and ret_truncated may be NULL.
 */
int output_compose(const struct capture *out, const struct capture *err, int64_t max_output,
		   int exit_code, char **ret, size_t *ret_len, bool *ret_truncated,
		   cordon_error *e);

/* AG2's _format (§2) on an already-final text: text, text + "\n[exit code: N]", or the bare
 * suffix when text is empty. */
int output_format(const char *text, size_t len, int exit_code, char **ret, size_t *ret_len,
		  cordon_error *e);

/* n bytes of possibly invalid UTF-8 (a path, a command) as valid UTF-8, with the same U+FFFD
 * rules as the capture but no newline translation. *ret is NUL-terminated. */
int capture_utf8_repair(const char *s, size_t n, char **ret, size_t *ret_len, cordon_error *e);

/* "Command timed out after {t}s\n[exit code: 124]" (word "Command"), or with "Execution"
 * for Docker; {t} is Python's str() of the number the timeout's text denotes, as AG2 prints it
 * ("1.50" → "1.5", "2" → "2", "2.0" → "2.0"; pynum_decimal_str), any other text as it is. */
int output_timeout(const char *word, const char *timeout_text, char **ret, size_t *ret_len,
		   cordon_error *e);

/*
 * A finished command's output fields of r, from its two ended captures, the same for every
 * backend: byte counts, the stdout/stderr texts, and AG2's result string. Timed out: exit
 * code and status 124 and the timeout text (word as for output_timeout); otherwise the
 * composed output for r->exit_code, which the caller has set (with r->status and r->signal).
 */
int capture_fill_result(const struct capture *out, const struct capture *err,
			const struct cordon_profile *p, bool timed_out, const char *word,
			struct cordon_result *r, cordon_error *e);
