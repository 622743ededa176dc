/* SPDX-License-Identifier: MIT */
/*
 * rlimits of the sandboxed command, set in the child before exec.
 *
 * rlimits are per process and inherited, so they bound each process of the run, not the run as
 * a whole: the cgroup does the totals (memory, pids). What they add is what a cgroup cannot
 * express: a CPU-time cap per process (SIGKILL at the limit), a largest-file size (a disk fill
 * of a file ends with EFBIG/SIGXFSZ, not a full disk), an fd count, and no core dumps (a core of
 * a process that read secrets would be written into the workdir, or handed to the host's core
 * handler: see limits_apply). Without a cgroup, `memory`
 * falls back to RLIMIT_AS, a per-process address-space cap: coarser (it counts mappings, not
 * memory), and per process: it stops a one-process memory bomb, while `pids` processes may
 * each use it, and tmpfs pages count against no rlimit (docs/security.md, "What it does not
 * stop").
 *
 * Without a cgroup, `pids` falls back to RLIMIT_NPROC, but only when the run has a user
 * namespace of its own (an ordinary caller). RLIMIT_NPROC counts the processes of the real
 * uid, and since Linux 5.14 that count is kept per user namespace (ucounts): in the run's
 * namespace the uid's count is exactly the sandbox's processes (init included), not the
 * caller's other processes on the host, so a fork bomb stops at `pids` and the caller's
 * shell keeps forking. As root, the command's uid (65534 or the workdir's owner) has
 * processes outside the run, which would count too: there the cgroup is the only bound.
 *
 * The soft and hard limits are both set, to the same value, so the command cannot raise its
 * soft limit back. A hard limit is never raised: min(profile, current hard), since lowering is
 * always allowed while raising needs CAP_SYS_RESOURCE, which root lacks in this host's bounding
 * set (and which an unprivileged caller never has). Only raw system calls: async-signal-safe.
 */
#include "backends/local/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

/* Lower `resource` to `value` (soft and hard), never above the current hard limit. */
static int lim_set(int resource, uint64_t value)
{
	struct rlimit rl;

	if (getrlimit(resource, &rl) < 0)
		return -errno;
	if (rl.rlim_max != RLIM_INFINITY && value > (uint64_t)rl.rlim_max)
		value = (uint64_t)rl.rlim_max;
	if (value >= (uint64_t)RLIM_INFINITY)
		value = (uint64_t)RLIM_INFINITY - 1;
	rl.rlim_cur = (rlim_t)value;
	rl.rlim_max = (rlim_t)value;
	if (setrlimit(resource, &rl) < 0)
		return -errno;
	return 0;
}

static bool core_limit_zero(void)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_cur == 0;
}

/* No memory mapping of ours, or of what we exec, in any core (proc(5), coredump_filter). */
static int no_core_memory(void)
{
	int fd = open("/proc/self/coredump_filter", O_WRONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, "0", 1) != 1)
		r = -errno;
	(void)close(fd);
	return r;
}

/*
 * The sandbox (init, and the command, which inherits it) is the OOM killer's first choice,
 * before cordon itself: where a memory limit above the run's is hit (a MemoryMax= on
 * cordond's unit, whose cgroup now holds the runs: docs/daemon.md; a container's limit around
 * cordon run) or the host runs out, the victim is the run, not cordond, a runner or the CLI
 * that would report it. Raised to 500, as the Docker agent does its commands; a score that is
 * already higher stays (lowering it needs CAP_SYS_RESOURCE). Best effort: without a /proc of
 * its own the sandbox would not start anyway. Called while the process is still dumpable,
 * with the host's /proc (init.c, child_begin): once not, an ordinary caller's /proc/self files
 * are root's, outside its user namespace, and cannot be opened for writing.
 */
void limits_oom_first(void)
{
	char cur[16] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, cur, sizeof(cur) - 1);
	if (n > 0 && atoi(cur) < 500)
		(void)!pwrite(fd, "500", 3, 0);
	(void)close(fd);
}

struct sb_limits limits_of(const struct cordon_profile *p)
{
	if (!p)
		return (struct sb_limits){ 0 };
	return (struct sb_limits){ .cpu_time = p->cpu_time,
				   .file_size = p->file_size,
				   .open_files = p->open_files,
				   .memory = p->memory,
				   .pids = p->pids };
}

int limits_apply(const struct sb_limits *p, bool memory_in_cgroup, bool pids_by_nproc)
{
	const struct {
		int resource;
		uint64_t value; /* 0: leave as is */
	} table[] = {
		{ RLIMIT_CPU, p ? p->cpu_time : 0 },
		{ RLIMIT_FSIZE, p ? p->file_size : 0 },
		{ RLIMIT_NOFILE, p ? p->open_files : 0 },
		{ RLIMIT_AS, p && !memory_in_cgroup ? p->memory : 0 },
		{ RLIMIT_NPROC, p && pids_by_nproc ? p->pids : 0 },
	};
	int r;

	/*
	 * No core dumps, whatever the profile says: RLIMIT_CORE 1, not 0. A file core needs a
	 * page at least, and for a core_pattern that pipes to a program (systemd-coredump,
	 * apport, run as root on the host) the kernel ignores the limit except for exactly 1,
	 * which aborts the dump; the seccomp filter keeps any process from changing it
	 * (seccomp.c). A caller whose hard limit is 0 (an administrator's `hard core 0`) cannot
	 * give 1 without CAP_SYS_RESOURCE: then the core that a pipe still gets holds no memory
	 * (coredump_filter 0, kept across fork and exec; /proc is read-only to the command).
	 */
	r = lim_set(RLIMIT_CORE, 1);
	if (r < 0)
		return r;
	if (core_limit_zero())
		(void)no_core_memory();
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].value == 0)
			continue;
		r = lim_set(table[i].resource, table[i].value);
		if (r < 0)
			return r;
	}
	return 0;
}
