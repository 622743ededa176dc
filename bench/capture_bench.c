/* SPDX-License-Identifier: MIT */
/*
 * capture_bench: how fast the output capture counts what it does not keep.
 *
 * cordon must relay a command's output at nearly the speed of a bare pipe, so once the kept
 * prefix (max_output) is full, the capture must only count, at several GB/s. This feeds 1 GiB of
 * zeros and 1 GiB of mixed text (mostly ASCII with some CRLF and multi-byte UTF-8) in 64 KiB
 * chunks, as the relay loop would, and prints GB/s for each. Not a test: numbers depend on the
 * machine.
 *
 *   cc -std=gnu11 -O2 -Iinclude -I. bench/capture_bench.c runtime/capture.c runtime/error.c \
 *      -o build/capture_bench && build/capture_bench [MiB]
 */
#include "runtime/capture.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK (64 * 1024)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Best of three runs: the machine may be busy, and the best run is the code's own speed. */
static int run(const char *name, const unsigned char *chunk, uint64_t total)
{
	struct capture *c = NULL;
	cordon_error e;
	double dt = 0;
	char *out;

	for (int i = 0; i < 3; i++) {
		double t0;

		capture_free(c);
		if (capture_new(100000, &c, &e) < 0) {
			fprintf(stderr, "capture_new: %s\n", e.msg);
			return -1;
		}
		t0 = now();
		for (uint64_t done = 0; done < total; done += CHUNK)
			capture_feed(c, chunk, CHUNK);
		capture_end(c);
		t0 = now() - t0;
		if (i == 0 || t0 < dt)
			dt = t0;
	}
	/* Compose the result too, so the work cannot be optimised away and is checked. */
	if (output_compose(c, c, 100000, 0, &out, NULL, NULL, &e) < 0) {
		fprintf(stderr, "output_compose: %s\n", e.msg);
		capture_free(c);
		return -1;
	}
	printf("%-6s %6.2f GB/s  (%" PRIu64 " bytes, %" PRIu64 " chars, %.3f s, %zu bytes held)\n",
	       name, (double)total / dt / 1e9, capture_bytes(c), capture_chars(c), dt,
	       capture_memory(c));
	free(out);
	capture_free(c);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const words[] = { "build ",	"ok ", "passed\n", "héllo ", "wörld\r\n",
					     "ERROR: ", "→ ",  "0x7f3a ",  "\t",     "日本語 " };
	uint64_t total = (argc > 1 ? strtoull(argv[1], NULL, 10) : 1024) * 1024 * 1024;
	static unsigned char zeros[CHUNK], text[CHUNK];
	size_t n = 0;
	unsigned seed = 1;

	/* Mixed text: pseudo-random words, ~4% of bytes non-ASCII, a CRLF every few lines. */
	while (n < CHUNK) {
		const char *w;
		size_t len;

		seed = seed * 1103515245 + 12345;
		w = words[(seed >> 16) % (sizeof(words) / sizeof(words[0]))];
		if ((seed >> 8) % 4 && (unsigned char)w[1] >= 0x80)
			w = words[0]; /* keep non-ASCII rarer than the word list would */
		len = strlen(w);
		if (len > CHUNK - n)
			len = CHUNK - n;
		memcpy(text + n, w, len);
		n += len;
	}
	if (run("zeros", zeros, total) < 0 || run("text", text, total) < 0)
		return 1;
	return 0;
}
