/* SPDX-License-Identifier: MIT */
/*
 * zpump: a producer of output that is not itself the bottleneck of a relay (bench/docker.sh).
 *   zpump MB [--write]
 * writes MB MiB of NUL bytes (what `dd if=/dev/zero` writes) to stdout, 1 MiB at a time.
 * When stdout is a pipe, the pages of one 1 MiB buffer are handed to the pipe with vmsplice(2),
 * not copied into it: the writer then costs almost nothing, and what a benchmark measures is
 * the reader, the relay under test. (`dd` copies every byte twice, from /dev/zero and into
 * the pipe, and on the reference VM that made dd, not the relay, the limit: bench/RESULTS.md.)
 * The buffer is never written after it is filled, so the pages in flight never change.
 * --write, or a stdout that is not a pipe: plain write(2), one copy per byte.
 * Exits 0 when every byte was taken, 1 otherwise (a reader that went away included).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define CHUNK (1 << 20)

static char buf[CHUNK] __attribute__((aligned(4096)));

static bool put(const char *p, size_t n, bool splice_ok)
{
	while (n > 0) {
		struct iovec v = { .iov_base = (void *)p, .iov_len = n };
		ssize_t w =
			splice_ok ? vmsplice(STDOUT_FILENO, &v, 1, 0) : write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

int main(int argc, char **argv)
{
	bool use_write = argc == 3 && strcmp(argv[2], "--write") == 0;
	char *end;
	long mb;

	if ((argc != 2 && !use_write) || (mb = strtol(argv[1], &end, 10)) < 1 || *end) {
		fprintf(stderr, "usage: zpump MB [--write]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_DFL);
	/* vmsplice refuses anything but a pipe (EBADF): probe with an empty vector first. */
	bool splice_ok =
		!use_write && vmsplice(STDOUT_FILENO, &(struct iovec){ buf, 0 }, 1, 0) == 0;

	for (long i = 0; i < mb; i++)
		if (!put(buf, sizeof(buf), splice_ok))
			return 1;
	return 0;
}
