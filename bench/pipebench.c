/* SPDX-License-Identifier: MIT */
/*
 * pipebench: the "bare pipe" baseline of the output relay. Runs `sh -c SCRIPT` with its
 * stdout on a pipe and reads everything, discarding it, the way cordon's relay does: the same
 * pipe size (1 MiB) and read size (256 KiB), no sandbox and no accounting. Prints the
 * seconds and the bytes read on one line. The ratio of this to `cordon run -- SCRIPT` (whose
 * stdout goes to /dev/null) is the relay's cost: its start, its scan of every byte (AG2's
 * result needs code point and whitespace counts) and its capture.
 *   pipebench SCRIPT
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

	if (argc != 2) {
		fprintf(stderr, "usage: pipebench SCRIPT\n");
		return 2;
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
	while ((n = read(fds[0], buf, sizeof(buf))) > 0)
		total += n;
	waitpid(pid, &status, 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.6f %lld\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
	       total);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
