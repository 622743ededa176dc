/* SPDX-License-Identifier: MIT */
/*
 * pipebench: the "bare pipe" baseline of the output relay. Runs `sh -c SCRIPT` with its
 * stdout on a pipe and reads everything, discarding it: the same pipe size (1 MiB) and read
 * size (256 KiB) as cordon's relay, no sandbox and no accounting. Prints the seconds and the
 * bytes read on one line. The ratio of this to `cordon run -- SCRIPT` (whose stdout goes to
 * /dev/null) is the relay's cost: its start, its scan of every byte (AG2's result needs code
 * point and whitespace counts) and its capture.
 *   pipebench [--bounce | --discard] SCRIPT
 * --bounce: read the way cordon's relay does (runtime/relay.h: splice into a private pipe,
 * then read that), to show what the method gains on its own, without cordon.
 * --discard: move the pipe's pages to /dev/null with splice(2), never copying them: the
 * writer's own ceiling, what no reader that looks at the bytes can beat (bench/docker.sh).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[256 * 1024];
	struct timespec a, b;
	long long total = 0;
	int fds[2], status;
	pid_t pid;
	ssize_t n;

	bool bounce = argc == 3 && strcmp(argv[1], "--bounce") == 0;
	bool discard = argc == 3 && strcmp(argv[1], "--discard") == 0;
	int q[2] = { -1, -1 }, null = -1;

	if (argc != 2 && !bounce && !discard) {
		fprintf(stderr, "usage: pipebench [--bounce | --discard] SCRIPT\n");
		return 2;
	}
	if (discard) {
		argv++;
		null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null < 0)
			return 1;
	}
	if (bounce) {
		argv++;
		if (pipe2(q, O_CLOEXEC) < 0)
			return 1;
		(void)fcntl(q[0], F_SETPIPE_SZ, 1 << 20);
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return 1;
	(void)fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		dup2(fds[1], 1);
		execl("/bin/sh", "sh", "-c", argv[1], (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (discard && (n = splice(fds[0], NULL, null, NULL, 1 << 20, 0)) > 0)
		total += n;
	if (discard && n < 0)
		return 1; /* a ceiling from part of the bytes would read as a slow writer */
	if (!bounce && !discard) {
		while ((n = read(fds[0], buf, sizeof(buf))) > 0)
			total += n;
	}
	while (bounce && (n = splice(fds[0], NULL, q[1], NULL, 1 << 20, 0)) > 0) {
		for (ssize_t k; n > 0; n -= k) {
			k = read(q[0], buf, sizeof(buf) < (size_t)n ? sizeof(buf) : (size_t)n);
			if (k <= 0)
				return 1;
			total += k;
		}
	}
	waitpid(pid, &status, 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.6f %lld\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
	       total);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
