/* SPDX-License-Identifier: MIT */
/*
 * The usage fields of a Docker exec (cpu_ms, peak_memory_bytes, oom_killed), from the
 * container's cgroup on this host, read before and after the exec. The daemon is local (the
 * workdir is bind-mounted), so its cgroups are ours to read; the Engine API's stats call is
 * no substitute (it has no OOM-kill count on cgroup v1, cannot reset the peak, and took
 * about 1 s per call on Docker 20.10 here). docs/docker.md says what each field means.
 */
#pragma once

#include <cordon/cordon.h>

#include <sys/types.h>

struct docker_cg;

/* What docker_cg_begin() saw, for docker_cg_end(). */
struct docker_cg_mark {
	bool ok;	    /* begin() read the counters */
	bool peak_reset;    /* the peak was reset to the current usage: the end value is ours */
	uint64_t cpu_ns;    /* CPU time of the cgroup so far */
	uint64_t oom_kills; /* OOM kills in the cgroup so far */
	uint64_t peak;	    /* the peak before the exec (when it could not be reset) */
	int peak_fd;	    /* v2: the memory.peak fd that was reset, or -1 */
};

/*
 * The cgroup directories of process pid (the container's init, a host pid), accepted only when
 * their path names the container id (so a recycled pid cannot point elsewhere). -1 with *e
 * when they cannot be found or opened: the caller then reports no usage.
 */
int docker_cg_open(pid_t pid, const char *id, struct docker_cg **ret, cordon_error *e);
void docker_cg_free(struct docker_cg *c); /* NULL-safe */

/* Is process pid in the cgroup of container id (its memory or unified hierarchy's)? */
bool docker_cg_pid_in(pid_t pid, const char *id);

/* Before an exec: note the counters, reset the peak when the cgroup lets us. NULL-safe. */
void docker_cg_begin(struct docker_cg *c, struct docker_cg_mark *m);
/*
 * After it: fill r->cpu_ms (the cgroup's CPU time since begin), r->peak_memory_bytes (the
 * peak since begin, or -1 when it cannot be told apart from an earlier one), r->oom_killed
 * (an OOM kill in the cgroup since begin). Leaves r's fields as they are when begin() failed.
 * Closes what begin() opened. NULL-safe.
 */
void docker_cg_end(struct docker_cg *c, struct docker_cg_mark *m, struct cordon_result *r);
