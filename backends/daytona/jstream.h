/* SPDX-License-Identifier: MIT */
/*
 * An incremental reader of the toolbox's execute answer, {"exitCode": N, "result": "..."}
 * (keys in any order, others ignored), fed in chunks of any size. The daemon does not bound
 * "result" (shared/reference/docker-daytona.md B4): its decoded bytes go straight to a sink as
 * they arrive, so memory stays constant however large the output is, and nothing but the
 * object's structure is ever buffered.
 *
 * "exitCode" wins over "code" (older daemons), as in Daytona's SDKs; a null result is empty.
 * \u escapes become UTF-8; an unpaired surrogate becomes U+FFFD.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef void (*jstream_sink)(void *arg, const char *buf, size_t n);

struct jstream {
	jstream_sink sink;
	void *arg;
	int state;
	int key;      /* which known key the value being read belongs to */
	char tok[40]; /* the key or number being read */
	unsigned toklen;
	bool tok_long;	/* the key was longer than tok: not one we know */
	unsigned depth; /* nesting of a skipped value */
	bool skip_str;	/* inside a string of a skipped value */
	bool skip_esc;	/* after a backslash in it */
	unsigned hex;	/* \uXXXX digits read */
	unsigned cu;	/* the code unit being read */
	unsigned high;	/* a pending high surrogate, or 0 */
	bool have_exit, have_code, have_result;
	long long exit_code, code;
	const char *error; /* set when the text is not such an object */
	char out[4096];	   /* decoded bytes waiting for the sink */
	size_t outlen;
};

void jstream_init(struct jstream *j, jstream_sink sink, void *arg);
/* Feed n more bytes; -1 (and j->error) when they cannot be part of the expected object. */
int jstream_feed(struct jstream *j, const char *buf, size_t n);
/* The end of the body: -1 when the object is incomplete. */
int jstream_end(struct jstream *j);
/* The exit code ("exitCode", else "code"); false when the answer had neither. */
bool jstream_exit_code(const struct jstream *j, long long *ret);
