/* SPDX-License-Identifier: MIT */
/*
 * Starting work on another CPU than the caller's (the sandbox's child in sandbox.c, the hide
 * walk's second thread in hide.c). A task made by clone or pthread_create is put on its
 * creator's CPU often enough on the reference VM (its scheduler packs vCPUs), where it waits
 * until the creator blocks: the two then take turns instead of overlapping. Moving the new
 * task away before it first runs lets both run at once. Includers define _GNU_SOURCE.
 */
#pragma once

#include <sched.h>
#include <stdbool.h>

/* The calling thread's CPUs, in *all; false when it has fewer than two (none to move to). */
static inline bool cpus_mine(cpu_set_t *all)
{
	return sched_getaffinity(0, sizeof(*all), all) == 0 && CPU_COUNT(all) > 1;
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
