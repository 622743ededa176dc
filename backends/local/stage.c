/* SPDX-License-Identifier: MIT */
/*
 * Staging: what the next run will need, made before it is asked for.
 *
 * A process that makes one run at a time and then waits (cordond's runners) can make, while it
 * waits, two things every start otherwise makes on its critical path: the run's network
 * namespace (creating one and bringing its lo up is ~0.5 ms here: new namespace in clone3, then
 * the SIOCSIFFLAGS in the child) and the run's cgroup directories (a mkdir per v1 hierarchy,
 * ~0.3 ms). The next start takes them instead of making them (bench/DAEMON.md has the figures).
 *
 * Rules that keep this a pure speed-up:
 *  - Each staged thing is fresh and used by one run only. Taking it clears it here; the run
 *    owns it from then on and disposes of it as it would of its own (the netns goes with the
 *    sandbox's last process, the cgroup with the run's teardown). Nothing is ever reused.
 *  - A staged netns was never entered by anything but us for the one ioctl that brought lo up:
 *    no socket, route, process or interface of it outlives its creation. It is owned by the
 *    initial user namespace, exactly as one made by clone3(CLONE_NEWNET) as root is.
 *  - A staged cgroup has no limits yet: the run's profile decides them when it is taken
 *    (cgroup_run_adopt), and one that vanished in between is dropped for a new one.
 *  - Only as root, where the sandbox uses no user namespace: a netns owned by the initial user
 *    namespace could not be entered (or configured) from inside one.
 *  - What a run does not take (a profile with network "host", a host without cgroups) stays
 *    staged for the next run; cordon_unstage() removes what is left.
 */
#define _GNU_SOURCE
#include "backends/local/cgroup.h"
#include "backends/local/proc.h"
#include "backends/local/prebuilt.h"
#include "backends/local/sandbox.h"
#include "backends/local/stage.h"
#include "runtime/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long cordon_reap_after waits for a killed run's processes to be gone. */
#define REAP_WAIT_MS 2000

static pthread_mutex_t stage_lock = PTHREAD_MUTEX_INITIALIZER;
static int staged_netns = -1;
static struct cgroup_run *staged_cg;

/*
 * A new network namespace with lo up, as an fd; the calling thread is back in its own
 * namespace when this returns. Not being able to go back would leave the thread in the wrong
 * network namespace for everything it does later: that aborts (a runner is replaced by cordond).
 */
int stage_new_netns(cordon_error *e)
{
	_cleanup_close_ int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int fd, err = 0;

	if (home < 0)
		return cordon_err(e, errno, "stage: open /proc/thread-self/ns/net");
	if (unshare(CLONE_NEWNET) < 0)
		return cordon_err(e, errno, "stage: new network namespace");
	fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		err = errno;
	else if (sb_loopback_up() < 0)
		err = errno;
	if (setns(home, CLONE_NEWNET) < 0)
		abort();
	if (err) {
		if (fd >= 0)
			(void)close(fd);
		return cordon_err(e, err, "stage: bring up lo in a new network namespace");
	}
	return fd;
}

static int stage_fill(cordon_error *e)
{
	struct cgroup_run *cg = NULL;
	int r = 0, fd;

	pthread_mutex_lock(&stage_lock);
	if (staged_netns < 0) {
		fd = stage_new_netns(e);
		if (fd < 0)
			r = -1;
		else
			staged_netns = fd;
	}
	if (r == 0 && !staged_cg) {
		if (cgroup_run_stage(&cg, e) < 0)
			r = -1;
		else
			staged_cg = cg; /* NULL: the host has no cgroup for us; nothing to stage */
	}
	pthread_mutex_unlock(&stage_lock);
	return r;
}

int cordon_stage_next(cordon_error *e)
{
	if (geteuid() != 0)
		return 0;
	if (stage_fill(e) < 0)
		return -1;
	/*
	 * A process that asked for them (cordon_stage_prebuild): the next run's sandbox, built
	 * with what was just staged, which is then staged again for a run the pre-built sandbox
	 * does not fit.
	 */
	if (!prebuilt_enabled())
		return 0;
	if (prebuilt_make(e) < 0)
		return cordon_err_prefix(e, "stage: pre-built sandbox");
	return stage_fill(e);
}

struct cgroup_run *stage_take_cgroup_staged(void)
{
	struct cgroup_run *cg;

	pthread_mutex_lock(&stage_lock);
	cg = TAKE_PTR(staged_cg);
	pthread_mutex_unlock(&stage_lock);
	return cg;
}

void cordon_unstage(void)
{
	prebuilt_drop();
	pthread_mutex_lock(&stage_lock);
	closep(&staged_netns);
	staged_netns = -1;
	cgroup_run_destroy(staged_cg);
	staged_cg = NULL;
	pthread_mutex_unlock(&stage_lock);
}

/*
 * Is pid a zombie, or gone (1)? A live process's cgroups are its own business (0). -1 (errno):
 * cannot tell now (no fd left to read /proc with).
 */
static int dead(pid_t pid)
{
	char path[32], buf[512], *p;
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? 1 : -1;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold anything, so the state follows the last ')'. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

void cordon_reap_stale(unsigned min_age_s)
{
	struct timespec ts = { 0, 50 * 1000000L };

	/* Runs of a killed creator die with it, but not at once: up to REAP_WAIT_MS. */
	for (long waited_ms = 0; cgroup_reap_stale(0, min_age_s) > 0 && waited_ms < REAP_WAIT_MS;
	     waited_ms += 50)
		(void)nanosleep(&ts, NULL);
}

void cordon_remove_cgroup_parents(void)
{
	cgroup_remove_parents();
}

int cordon_reap_after(pid_t pid)
{
	struct timespec ts = { 0, 0 };
	long waited_ms = 0, step_ms = 1;
	int r;

	if (pid <= 0 || (r = dead(pid)) == 0)
		return 0;
	if (r < 0)
		return -1;
	/*
	 * A run the process was killed in dies with it (its init has PR_SET_PDEATHSIG, and the pid
	 * namespace goes with init), but not at once: give its cgroup up to REAP_WAIT_MS to empty.
	 */
	while ((r = cgroup_reap_dead(pid)) > 0 && waited_ms < REAP_WAIT_MS) {
		ts.tv_nsec = step_ms * 1000000L;
		(void)nanosleep(&ts, NULL);
		waited_ms += step_ms;
		if (step_ms < 64)
			step_ms *= 2;
	}
	return r < 0 ? -1 : 0;
}

int stage_take_netns(void)
{
	int fd;

	pthread_mutex_lock(&stage_lock);
	fd = staged_netns;
	staged_netns = -1;
	pthread_mutex_unlock(&stage_lock);
	return fd;
}

int stage_take_cgroup(const struct cordon_profile *p, struct cgroup_run **ret, cordon_error *e)
{
	struct cgroup_run *cg;

	pthread_mutex_lock(&stage_lock);
	cg = staged_cg;
	staged_cg = NULL;
	pthread_mutex_unlock(&stage_lock);
	if (cg) {
		cordon_error ignored = { 0 };

		if (cgroup_run_adopt(cg, p, &ignored) == 0) {
			*ret = cg;
			return 0;
		}
		/* Gone, or the host changed: a cgroup made the usual way says what is wrong. */
		cgroup_run_destroy(cg);
	}
	return cgroup_run_create(p, ret, e);
}
