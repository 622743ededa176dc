/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for cordond's request parser and JSON body decoder (runtime/daemon/body.c).
 * Input: "METHOD URL\n" then the body. The first line goes to route_parse() (and a file path to
 * route_check_file_path()); the body to body_parse() in each of its three kinds; a decoded argv
 * to the shlex joiner and a decoded timeout to the float printer. Every error message must
 * encode as cordond sends it.
 */
#define _GNU_SOURCE
#include "tests/fuzz/fuzz.h"
#include "runtime/daemon/daemon.h"
#include "runtime/pynum.h"
#include "runtime/result.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/*
 * cordond answers a refused request with {"error": msg} (runtime/daemon/http.c). The message
 * may quote the client's bytes cut anywhere (jansson's "invalid escape near '...'", a key
 * clipped at 64 bytes): encoded as "{s:s}" it failed, and the client got no answer at all.
 * The daemon's encoding must take every message.
 */
static void check_error_json(const cordon_error *e)
{
	json_t *j = json_pack("{s:o}", "error", result_json_text(e->msg));

	CHECK(j);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const unsigned char *nl = memchr(data, '\n', size);
	size_t head = nl ? (size_t)(nl - data) : size;
	char *line = malloc(head + 1), *sp;
	const char *body = nl ? (const char *)nl + 1 : "";
	size_t blen = nl ? size - head - 1 : 0;

	if (!line)
		return 0;
	memcpy(line, data, head);
	line[head] = '\0';
	sp = strchr(line, ' ');
	if (sp) {
		struct route r;
		const char *allow;
		cordon_error e;

		*sp = '\0';
		if (route_parse(line, sp + 1, &r, &allow, &e) < 0)
			check_error_json(&e);
	}
	{
		cordon_error e;

		if (route_check_file_path(line, &e) < 0)
			check_error_json(&e);
	}
	free(line);

	for (int k = BODY_RUN; k <= BODY_SESSION; k++) {
		struct run_body b;
		cordon_error e;

		if (body_parse((enum body_kind)k, body, blen, 1 << 20, &b, &e) < 0) {
			check_error_json(&e);
		} else {
			if (b.argv) {
				char *j = body_shlex_join(b.argv);

				free(j);
			}
			if (b.has_timeout) {
				char buf[64];

				pynum_float_repr(b.timeout, buf, sizeof(buf));
			}
			if (b.profile)
				(void)body_valid_profile_name(b.profile);
			run_body_free(&b);
		}
	}
	return 0;
}
