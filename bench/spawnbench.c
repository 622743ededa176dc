/* SPDX-License-Identifier: MIT */
/*
 * spawnbench: time N runs of a command (fork → exec → wait), after W warm-up runs, and print
 * the median, mean and p90 in milliseconds on one line. All three standard fds are /dev/null.
 *   spawnbench [--ns] [--go] [--gap MS] N W cmd [args...]
 * --ns: clone3 into new mount, PID, network, IPC, UTS and cgroup namespaces instead of fork (as
 * root): the floor of any sandbox start, which issue 15 measures cordond's runs against.
 * --go: after the warm-up, print "ready" and wait for a line on stdin before the timed runs, so
 * that several instances start them together; the result line then also has t0= and t1=, the
 * CLOCK_MONOTONIC milliseconds at which the timed runs began and ended (bench/daemon_load.py).
 * --gap MS: sleep MS milliseconds before each run (not timed), as an agent's commands come.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int use_ns, use_go;
static double gap_ms;

static pid_t spawn(void)
{
	struct clone_args ca = { .exit_signal = SIGCHLD };

	if (!use_ns)
		return fork();
	ca.flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
		   CLONE_NEWCGROUP;
	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

/* One run; returns its duration, or a negative value when the command failed. */
static double one(char **cmd)
{
	double start;

	if (gap_ms > 0) {
		long us = (long)(gap_ms * 1000);
		struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

		nanosleep(&ts, NULL);
	}
	start = clock_ms();
	int status;
	pid_t pid = spawn();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null < 0)
			_exit(126);
		for (int fd = 0; fd < 3; fd++)
			dup2(null, fd);
		execvp(cmd[0], cmd);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return clock_ms() - start;
}

int main(int argc, char **argv)
{
	int n, warm, bad = 0;
	double *t, sum = 0, t0, t1;

	for (; argc > 1 && !strncmp(argv[1], "--", 2); argv++, argc--) {
		if (!strcmp(argv[1], "--ns"))
			use_ns = 1;
		else if (!strcmp(argv[1], "--go"))
			use_go = 1;
		else if (!strcmp(argv[1], "--gap") && argc > 2)
			gap_ms = atof((++argv)[1]), argc--;
		else
			break;
	}
	if (argc < 4) {
		fprintf(stderr,
			"usage: spawnbench [--ns] [--go] [--gap MS] N WARMUP cmd [args...]\n");
		return 2;
	}
	n = atoi(argv[1]);
	warm = atoi(argv[2]);
	if (n <= 0 || warm < 0) {
		fprintf(stderr, "spawnbench: N must be > 0 and WARMUP >= 0\n");
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 2;
	for (int i = 0; i < warm; i++)
		if (one(argv + 3) < 0)
			bad++;
	if (use_go) {
		char line[16];

		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	t0 = clock_ms();
	for (int i = 0; i < n; i++) {
		t[i] = one(argv + 3);
		if (t[i] < 0) {
			bad++;
			t[i] = 0;
		}
		sum += t[i];
	}
	t1 = clock_ms();
	qsort(t, (size_t)n, sizeof(*t), by_value);
	printf("median=%.3f mean=%.3f p90=%.3f failed=%d", t[n / 2], sum / n, t[n * 9 / 10], bad);
	if (use_go)
		printf(" t0=%.3f t1=%.3f", t0, t1);
	printf("\n");
	free(t);
	return bad ? 1 : 0;
}
