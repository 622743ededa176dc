/* SPDX-License-Identifier: MIT */
/*
 * Starting work on another CPU than the caller's (the sandbox's child in sandbox.c, the hide
 * walk's second thread in hide.c). A task made by clone or pthread_create is put on its
 * creator's CPU often enough on the reference VM (its scheduler packs vCPUs), where it waits
 * until the creator blocks: the two then take turns instead of overlapping. Moving the new
 * task away before it first runs lets both run at once. Includers define _GNU_SOURCE.
 *
 * The sandbox's child is moved only when another CPU is likely free (cpus_one_free): a task
 * pinned to a CPU that runs something else waits for that CPU's time slice instead.
 * Measured on the reference VM (2026-11-26) with one vCPU busy running a nice 10 program:
 * `cordon run -- true` took 4.7 to 7.5 ms with its child moved there, 4.0 to 4.2 ms without
 * the move (bwrap 3.6 to 3.9 ms; docs/security.md). The hide walk's second thread is moved
 * whatever the load (hide.c says why).
 */
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

/* The calling thread's CPUs, in *all; false when it has fewer than two (none to move to). */
static inline bool cpus_mine(cpu_set_t *all)
{
	return sched_getaffinity(0, sizeof(*all), all) == 0 && CPU_COUNT(all) > 1;
}

/*
 * Whether a CPU of *all other than the caller's is likely free, given /proc/loadavg's text:
 * the kernel's count of runnable tasks now, the caller included (the fourth field's "running"
 * of "running/total"), is below the number of CPUs in *all. The count is the whole machine's,
 * so a CPU set smaller than the machine may be called busy when it is not: that only costs
 * the overlap. Text it cannot read: free, as before the check.
 */
static inline bool cpus_free_in(const char *loadavg, const cpu_set_t *all)
{
	const char *p = loadavg;
	char *end;
	int spaces = 0;
	long running;

	/* "0.52 0.58 0.59 1/245 12345" */
	for (; *p && spaces < 3; p++)
		spaces += *p == ' ';
	running = strtol(p, &end, 10);
	if (spaces < 3 || end == p || *end != '/' || running <= 0)
		return true;
	return running < CPU_COUNT(all);
}

/* cpus_free_in() of the machine's /proc/loadavg now. */
static inline bool cpus_one_free(const cpu_set_t *all)
{
	char buf[128];
	int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	return cpus_free_in(buf, all);
}

/* *all without the CPU the caller runs on now, in *away; false when that leaves none. */
static inline bool cpus_away(const cpu_set_t *all, cpu_set_t *away)
{
	int cpu = sched_getcpu();

	*away = *all;
	if (cpu >= 0 && cpu < CPU_SETSIZE)
		CPU_CLR(cpu, away);
	return CPU_COUNT(away) > 0;
}
