/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for profile files (runtime/profile.c: libinih through our line reader,
 * sizes, durations, counts, lists, include, the value checks).
 *
 * Input: the profile text; a form feed (which a profile cannot hold) splits off a second file
 * it may include as "./202" (itself is "./201"). Both live in memfds at fixed descriptors and
 * are loaded as /proc/self/fd/N paths, so nothing is written to any file system. Includes by
 * name find the source tree's profiles (CORDON_PROFILE_PATH is pointed at them).
 *
 * Checks beyond crashes: a profile that loads prints (cordon_profile_format) as text that
 * loads back to a profile that prints the same (the promise of `cordon profile show`), and
 * the size/seconds/count/bool parsers accept or refuse every line's value without harm.
 * FUZZ_DEBUG=1 in the environment prints why an input did not load (for writing seeds).
 */
#define _GNU_SOURCE
#include "tests/fuzz/fuzz.h"
#include "runtime/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

enum { FD_MAIN = 201, FD_INC = 202, FD_AGAIN = 203 };

/* A memfd at descriptor `at` holding buf (an empty file when n is 0). */
static void put(int at, const void *buf, size_t n)
{
	int fd = memfd_create("fuzz-profile", MFD_CLOEXEC);

	CHECK(fd >= 0);
	CHECK(dup2(fd, at) == at);
	close(fd);
	CHECK(ftruncate(at, 0) == 0);
	CHECK(pwrite(at, buf, n, 0) == (ssize_t)n);
}

/* The value parsers on each line's text after '=' (they see any string from the file). */
static void parse_values(const char *text, size_t n)
{
	const char *p = text, *end = text + n;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eq = memchr(p, '=', (size_t)((nl ? nl : end) - p));

		if (eq) {
			char *v = strndup(eq + 1, (size_t)((nl ? nl : end) - eq - 1));
			uint64_t sz;
			double secs;
			int64_t cnt;
			bool b;
			cordon_error e;

			CHECK(v);
			if (profile_parse_seconds(v, &secs, &e) == 0)
				CHECK(secs > 0 && secs <= 1e300);
			if (profile_parse_count(v, &cnt, &e) == 0)
				CHECK(cnt >= 0);
			(void)profile_parse_size(v, &sz, &e);
			(void)profile_parse_bool(v, &b, &e);
			(void)profile_check_value("allowed", v, &e);
			free(v);
		}
		p = nl ? nl + 1 : end;
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static bool once;
	struct cordon_profile *p = NULL, *again = NULL;
	const unsigned char *ff = memchr(data, '\f', size);
	size_t main_len = ff ? (size_t)(ff - data) : size;
	char *text = NULL, *text2 = NULL, digest[17];
	cordon_error e;

	if (!once) {
		/* Includes by name: the shipped profiles only, not whatever /etc holds. */
		setenv("CORDON_PROFILE_PATH", CORDON_SRCDIR "/profiles", 1);
		once = true;
	}
	put(FD_MAIN, data, main_len);
	put(FD_INC, ff ? ff + 1 : data, ff ? size - main_len - 1 : 0);
	parse_values((const char *)data, size);

	if (cordon_profile_load("/proc/self/fd/201", &p, &e) != 0 && getenv("FUZZ_DEBUG"))
		fprintf(stderr, "%s\n", e.msg);
	if (p) {
		CHECK(p->description && p->timeout_text && p->backend);
		CHECK(p->timeout > 0 && p->max_output >= 0);
		CHECK(cordon_profile_format(p, &text, NULL) == 0);
		CHECK(profile_digest(p, digest, NULL) == 0);
		put(FD_AGAIN, text, strlen(text));
		if (cordon_profile_load("/proc/self/fd/203", &again, &e) != 0) {
			fprintf(stderr, "profile show output does not load back: %s\n%s", e.msg,
				text);
			abort();
		}
		CHECK(cordon_profile_format(again, &text2, NULL) == 0);
		if (strcmp(text, text2) != 0) {
			fprintf(stderr, "profile show output changes on reload:\n%s---\n%s", text,
				text2);
			abort();
		}
	}
	free(text);
	free(text2);
	cordon_profile_free(p);
	cordon_profile_free(again);
	close(FD_MAIN);
	close(FD_INC);
	close(FD_AGAIN);
	return 0;
}
