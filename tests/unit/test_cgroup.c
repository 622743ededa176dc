/* SPDX-License-Identifier: MIT */
/*
 * The per-run cgroup, for real (as root; v1 controllers on this hybrid host, v2 where it is
 * delegated): limits that stop a memory bomb and a fork loop, accounting, the kill of
 * detached processes, and no directory left behind. Under CI=true (or CORDON_REQUIRE_ALL=1) a
 * host without a usable cgroup is a failure, not a skip.
 */
#define _GNU_SOURCE
#include "backends/local/cgroup.h"
#include "backends/local/proc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static bool strict_ci(void)
{
	const char *ci = getenv("CI"), *all = getenv("CORDON_REQUIRE_ALL");

	return (ci && strcmp(ci, "true") == 0) || (all && strcmp(all, "1") == 0);
}

/*
 * Runs a test created and has not destroyed yet: a failed assertion ends the test early, and
 * the suite's fini still removes them, so a failing test leaves no cgroup on the host.
 */
static struct cgroup_run *live[8];

static void track(struct cgroup_run *cg)
{
	for (size_t i = 0; i < 8; i++) {
		if (!live[i]) {
			live[i] = cg;
			return;
		}
	}
}

static void destroy(struct cgroup_run *cg)
{
	for (size_t i = 0; i < 8; i++)
		if (live[i] == cg)
			live[i] = NULL;
	cgroup_run_destroy(cg);
}

static void destroy_leftovers(void)
{
	for (size_t i = 0; i < 8; i++)
		destroy(live[i]);
}

TestSuite(cgroup, .fini = destroy_leftovers);

static struct cgroup_run *create_or_skip(const struct cordon_profile *p)
{
	struct cgroup_run *cg = NULL;
	cordon_error e = { 0 };
	char why[512];

	cr_assert_eq(cgroup_run_create(p, &cg, &e), 0, "create: %s (%s)", e.msg, strerror(e.code));
	if (!cg) {
		cgroup_detect(why, sizeof(why));
		cr_assert_not(strict_ci(), "no cgroup, and CI requires one: %s", why);
		cr_skip_test("no usable cgroup: %s", why);
	}
	track(cg);
	return cg;
}

/* Every directory of the run, copied (the run frees its own on destroy). */
static size_t run_paths(const struct cgroup_run *cg, char paths[][512])
{
	size_t n = 0;

	for (const char *p; (p = cgroup_run_path(cg, n)) && n < 4; n++)
		snprintf(paths[n], 512, "%s", p);
	return n;
}

/* The run's directory is gone, and its parent's listing does not show it. */
static void assert_removed(const char *path)
{
	char parent[512];
	const char *name = strrchr(path, '/') + 1;
	DIR *d;
	struct dirent *de;

	cr_assert_eq(access(path, F_OK), -1, "%s still exists", path);
	cr_assert_eq(errno, ENOENT);
	snprintf(parent, sizeof(parent), "%.*s", (int)(name - 1 - path), path);
	d = opendir(parent);
	if (!d) /* the `cordon` parent itself was removed: fine */
		return;
	while ((de = readdir(d)))
		cr_assert_neq(strcmp(de->d_name, name), 0, "%s listed in %s", name, parent);
	closedir(d);
}

/* A child that waits until it is in the cgroup before running fn. */
static pid_t spawn_in(struct cgroup_run *cg, void (*fn)(void))
{
	int go[2];
	cordon_error e = { 0 };
	pid_t pid;
	char c = 0;

	cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(99);
		fn();
		_exit(0);
	}
	close(go[0]);
	cr_assert_eq(cgroup_run_attach(cg, pid, &e), 0, "attach: %s", e.msg);
	cr_assert_eq(write(go[1], &c, 1), 1);
	close(go[1]);
	return pid;
}

static int wait_status(pid_t pid)
{
	int st = 0;

	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

Test(cgroup, detect_reports_a_mode)
{
	char why[512] = "";
	enum cgroup_mode m = cgroup_detect(why, sizeof(why));

	cr_log_info("cgroup mode %d: %s", (int)m, why);
	cr_assert_neq(why[0], 0, "no reason given");
	if (m == CGROUP_NONE) {
		cr_assert_not(strict_ci(), "no cgroup, and CI requires one: %s", why);
		cr_skip_test("no cgroup: %s", why);
	}
	cgroup_detect(NULL, 0); /* a NULL reason is fine */
}

Test(cgroup, create_sets_limits_and_destroy_leaves_nothing)
{
	struct cordon_profile p = { .memory = 64 << 20, .pids = 16 };
	struct cgroup_run *cg = create_or_skip(&p);
	char paths[4][512];
	size_t n = run_paths(cg, paths);
	struct local_usage u;
	cordon_error e = { 0 };

	cr_assert_geq(n, 1);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		cr_assert_eq(stat(paths[i], &st), 0, "%s", paths[i]);
		cr_assert(S_ISDIR(st.st_mode));
		cr_assert(strstr(paths[i], "/cordon/cordon-"), "%s", paths[i]);
	}
	if (cgroup_run_mode(cg) == CGROUP_V2)
		cr_assert_geq(cgroup_run_dirfd(cg), 0);
	else
		cr_assert_eq(cgroup_run_dirfd(cg), -1);
	cr_assert_eq(cgroup_run_usage(cg, &u, &e), 0, "%s", e.msg);
	cr_assert_not(u.oom_killed);
	destroy(cg);
	for (size_t i = 0; i < n; i++)
		assert_removed(paths[i]);
}

static void memory_bomb(void)
{
	for (size_t mb = 0; mb < 1024; mb++) {
		char *p = malloc(1 << 20);

		if (!p)
			_exit(3);
		memset(p, (int)mb, 1 << 20);
	}
	_exit(0); /* 1 GiB touched under a 32 MiB limit: must not get here */
}

Test(cgroup, memory_bomb_is_oom_killed_and_reported, .timeout = 60)
{
	struct cordon_profile p = { .memory = 32 << 20 };
	struct cgroup_run *cg = create_or_skip(&p);
	struct local_usage u;
	cordon_error e = { 0 };
	int st = wait_status(spawn_in(cg, memory_bomb));

	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	cr_assert_eq(cgroup_run_usage(cg, &u, &e), 0, "%s", e.msg);
	cr_assert(u.oom_killed, "oom_killed not reported");
	cr_assert_geq(u.peak_memory_bytes, 24 << 20, "peak %lld", (long long)u.peak_memory_bytes);
	cr_assert_leq(u.peak_memory_bytes, 40 << 20, "peak %lld over the limit",
		      (long long)u.peak_memory_bytes);
	destroy(cg);
}

static void touch_64m(void)
{
	volatile char *p = malloc(64 << 20);

	if (!p)
		_exit(3);
	/* volatile: the compiler may not drop stores to memory nobody reads */
	for (size_t i = 0; i < (64 << 20); i += 4096)
		p[i] = 1;
	_exit(p[4096 * 100] == 1 ? 0 : 4);
}

Test(cgroup, peak_memory_at_least_what_was_touched)
{
	struct cordon_profile p = { .memory = 512 << 20 };
	struct cgroup_run *cg = create_or_skip(&p);
	struct local_usage u;
	cordon_error e = { 0 };
	int st = wait_status(spawn_in(cg, touch_64m));

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	cr_assert_eq(cgroup_run_usage(cg, &u, &e), 0, "%s", e.msg);
	cr_assert_geq(u.peak_memory_bytes, 64 << 20, "peak %lld", (long long)u.peak_memory_bytes);
	cr_assert_not(u.oom_killed);
	destroy(cg);
}

static void fork_loop(void)
{
	int n = 0;

	for (;;) {
		pid_t pid = fork();

		if (pid == 0) {
			pause();
			_exit(0);
		}
		if (pid < 0)
			_exit(errno == EAGAIN ? 100 + n : 1);
		if (++n > 50)
			_exit(2);
	}
}

Test(cgroup, pids_limit_stops_a_fork_loop)
{
	struct cordon_profile p = { .pids = 8 };
	struct cgroup_run *cg = create_or_skip(&p);
	char paths[4][512];
	size_t n = run_paths(cg, paths);
	int st = wait_status(spawn_in(cg, fork_loop));

	/* The loop itself is one of the 8: it gets 7 children, then EAGAIN. */
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 100 + 7, "status %#x (forks %d)", st,
		  WEXITSTATUS(st) - 100);
	/* Its 7 paused children are orphans inside the cgroup: destroy must kill them. */
	destroy(cg);
	for (size_t i = 0; i < n; i++)
		assert_removed(paths[i]);
}

static void fork_bomb(void)
{
	for (;;)
		(void)fork(); /* every child forks too; EAGAIN at the pids limit */
}

/* A live fork bomb (every process forking in a loop): destroy still empties and removes it. */
Test(cgroup, destroy_ends_a_live_fork_bomb, .timeout = 30)
{
	struct cordon_profile p = { .pids = 64 };
	struct cgroup_run *cg = create_or_skip(&p);
	char paths[4][512];
	size_t n = run_paths(cg, paths);
	pid_t pid = spawn_in(cg, fork_bomb);
	int st;

	usleep(200000); /* let it reach the limit */
	destroy(cg);
	for (size_t i = 0; i < n; i++)
		assert_removed(paths[i]);
	st = wait_status(pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
}

static void burn_300ms(void)
{
	struct timespec t0, t;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x++;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 300);
}

Test(cgroup, cpu_time_accounted)
{
	struct cgroup_run *cg = create_or_skip(NULL);
	struct local_usage u;
	cordon_error e = { 0 };
	int st = wait_status(spawn_in(cg, burn_300ms));

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(cgroup_run_usage(cg, &u, &e), 0, "%s", e.msg);
	cr_assert_geq(u.cpu_ms, 250.0, "cpu_ms %.1f", u.cpu_ms);
	cr_assert_lt(u.cpu_ms, 5000.0, "cpu_ms %.1f", u.cpu_ms);
	destroy(cg);
}

/* Shared with the children: the pids of the detached daemons. */
static pid_t *daemons;

static void start_daemons(void)
{
	for (int i = 0; i < 3; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			/* The classic escape from a process-group kill: new session, double
			 * fork, parent gone. */
			setsid();
			pid = fork();
			if (pid == 0) {
				daemons[i] = getpid();
				for (;;)
					pause();
			}
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	while (!daemons[0] || !daemons[1] || !daemons[2])
		usleep(1000);
	pause();
}

/* Wait (at most 2 s) until the process behind pidfd has exited, whoever reaps it. */
static void assert_exits(int pidfd, pid_t pid)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

	cr_assert_eq(poll(&pfd, 1, 2000), 1, "daemon %d still alive after the kill", (int)pid);
	close(pidfd);
}

Test(cgroup, kill_reaches_setsid_double_forked_daemons)
{
	struct cgroup_run *cg = create_or_skip(NULL);
	int pidfd[3];
	pid_t pid;
	int st;

	daemons = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(daemons, MAP_FAILED);
	pid = spawn_in(cg, start_daemons);
	while (!daemons[0] || !daemons[1] || !daemons[2])
		usleep(1000);
	/* pidfds pin the daemons: no pid reuse can fool the check below. */
	for (int i = 0; i < 3; i++) {
		pidfd[i] = (int)syscall(SYS_pidfd_open, daemons[i], 0);
		cr_assert_geq(pidfd[i], 0, "pidfd_open %d: %s", (int)daemons[i], strerror(errno));
	}

	cgroup_run_kill(cg);
	st = wait_status(pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	for (int i = 0; i < 3; i++)
		assert_exits(pidfd[i], daemons[i]);
	destroy(cg);
}

static void sleep_forever(void)
{
	for (;;)
		pause();
}

Test(cgroup, destroy_with_live_processes_removes_everything)
{
	struct cordon_profile p = { .memory = 64 << 20, .pids = 16 };
	struct cgroup_run *cg = create_or_skip(&p);
	char paths[4][512];
	size_t n = run_paths(cg, paths);
	pid_t a = spawn_in(cg, sleep_forever), b = spawn_in(cg, sleep_forever);
	int st;

	destroy(cg); /* no kill, no reap before: destroy does it all */
	for (size_t i = 0; i < n; i++)
		assert_removed(paths[i]);
	st = wait_status(a);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	st = wait_status(b);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
}

static void *churn(void *arg)
{
	struct cordon_profile p = { .pids = 4 };

	for (int i = 0; i < 25; i++) {
		struct cgroup_run *cg = NULL;
		cordon_error e = { 0 };

		if (cgroup_run_create(&p, &cg, &e) < 0 || !cg)
			return strdup(e.msg);
		cgroup_run_destroy(cg);
	}
	return arg;
}

Test(cgroup, concurrent_runs_race_on_the_parent_without_failing)
{
	pthread_t t[4];
	struct cgroup_run *cg = create_or_skip(NULL);

	destroy(cg);
	/* Each destroy tries to remove `cordon/` while others create in it. */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, churn, NULL), 0);
	for (int i = 0; i < 4; i++) {
		void *r;

		cr_assert_eq(pthread_join(t[i], &r), 0);
		cr_assert_null(r, "thread %d: %s", i, (char *)r);
	}
}

Test(cgroup, names_are_unique)
{
	struct cgroup_run *a = create_or_skip(NULL), *b = create_or_skip(NULL);

	cr_assert_str_neq(cgroup_run_path(a, 0), cgroup_run_path(b, 0));
	destroy(a);
	destroy(b);
}

Test(cgroup, bad_calls_are_errors)
{
	struct cgroup_run *cg;
	struct local_usage u;
	cordon_error e = { 0 };

	cgroup_run_destroy(NULL);
	cgroup_run_kill(NULL);
	cr_assert_eq(cgroup_run_dirfd(NULL), -1);
	cr_assert_null(cgroup_run_path(NULL, 0));
	cr_assert_eq(cgroup_run_mode(NULL), CGROUP_NONE);
	cr_assert_eq(cgroup_run_attach(NULL, getpid(), &e), -1);
	cr_assert_eq(cgroup_run_usage(NULL, &u, &e), -1);

	cg = create_or_skip(NULL);
	/* A pid that does not exist: the step and the errno are named. */
	cr_assert_eq(cgroup_run_attach(cg, 0x3ffffff0, &e), -1);
	cr_assert_eq(e.code, ESRCH, "%s: %s", e.msg, strerror(e.code));
	cr_assert(strstr(e.msg, "cgroup: attach"), "%s", e.msg);
	destroy(cg);
}

/* A directory `cordon/<name>` in the parent of each of the run's directories. */
static void make_fake(const struct cgroup_run *cg, const char *name, time_t age_s)
{
	for (size_t i = 0; cgroup_run_path(cg, i); i++) {
		char path[600];
		const char *run = cgroup_run_path(cg, i);
		struct timeval tv[2];

		snprintf(path, sizeof(path), "%.*s/%s", (int)(strrchr(run, '/') - run), run, name);
		cr_assert_eq(mkdir(path, 0755), 0, "%s: %s", path, strerror(errno));
		gettimeofday(&tv[0], NULL);
		tv[0].tv_sec -= age_s;
		tv[1] = tv[0];
		cr_assert_eq(utimes(path, tv), 0, "%s: %s", path, strerror(errno));
	}
}

/* Is `name` in the parent of every directory of the run? Removes it when asked. */
static bool fake_exists(const struct cgroup_run *cg, const char *name, bool remove)
{
	bool all = true;

	for (size_t i = 0; cgroup_run_path(cg, i); i++) {
		char path[600];
		const char *run = cgroup_run_path(cg, i);

		snprintf(path, sizeof(path), "%.*s/%s", (int)(strrchr(run, '/') - run), run, name);
		if (access(path, F_OK) != 0)
			all = false;
		else if (remove)
			rmdir(path);
	}
	return all;
}

/* A cordon SIGKILLed before its destroy leaves empty run directories: the next run reaps them. */
Test(cgroup, stale_runs_of_dead_creators_are_reaped)
{
	struct cgroup_run *a = create_or_skip(NULL), *b;
	char dead[64], young[64], alive[64];
	bool reaped, young_kept, alive_kept;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	wait_status(pid); /* a pid that no longer exists */
	snprintf(dead, sizeof(dead), "cordon-%d-1-0badc0de", (int)pid);
	snprintf(young, sizeof(young), "cordon-%d-2-0badc0de", (int)pid);
	snprintf(alive, sizeof(alive), "cordon-1-3-0badc0de"); /* pid 1 lives */
	make_fake(a, dead, 3600);
	make_fake(a, young, 5);
	make_fake(a, alive, 3600);

	b = create_or_skip(NULL);
	/* Look, and remove the fakes, before asserting: a failure leaves nothing either. */
	reaped = !fake_exists(a, dead, true);
	young_kept = fake_exists(a, young, true);
	alive_kept = fake_exists(a, alive, true);
	destroy(a);
	destroy(b);
	cr_assert(reaped, "stale run of a dead creator not reaped");
	cr_assert(young_kept, "a young run was reaped");
	cr_assert(alive_kept, "a run of a live creator was reaped");
}

/* In a child that is nobody: no writable cgroup on a root-owned hierarchy. */
Test(cgroup, unprivileged_degrades_unless_required)
{
	int *res = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *msg = (char *)(res + 4);
	pid_t pid;
	int st;

	if (geteuid() != 0) {
		cr_assert_not(strict_ci(), "needs root to switch to nobody");
		cr_skip_test("needs root to switch to nobody");
	}
	pid = fork();
	if (pid == 0) {
		struct cordon_profile p = { .memory = 1 << 20 };
		struct cgroup_run *cg = (void *)1;
		cordon_error e = { 0 };
		char *req[] = { "seccomp", "cgroup", NULL };

		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		res[0] = cgroup_detect(NULL, 0);
		res[1] = cgroup_run_create(&p, &cg, &e);
		res[2] = cg == NULL;
		p.require.v = req;
		p.require.n = 2;
		p.require.set = true;
		res[3] = cgroup_run_create(&p, &cg, &e);
		snprintf(msg, 1024, "%s", e.msg);
		_exit(0);
	}
	st = wait_status(pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	if (res[0] != CGROUP_NONE)
		cr_skip_test("nobody has a delegated cgroup on this host (mode %d)", res[0]);
	cr_assert_eq(res[1], 0);
	cr_assert(res[2], "*ret not NULL without a cgroup");
	cr_assert_eq(res[3], -1, "require = cgroup did not fail");
	cr_assert(strstr(msg, "cgroup: required"), "%s", msg);
}

/* The cgroup2 mount point, or NULL. */
static char *v2_mount(void)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char dev[256], dir[512], type[64];
	char *out = NULL;

	if (!f)
		return NULL;
	while (!out && fscanf(f, "%255s %511s %63s %*s %*d %*d", dev, dir, type) == 3)
		if (strcmp(type, "cgroup2") == 0)
			out = strdup(dir);
	fclose(f);
	return out;
}

static pid_t clone_into(int cgfd)
{
	struct clone_args args = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = (uint64_t)cgfd,
	};

	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/*
 * The v2 code on whatever cgroup2 tree the host has (on this hybrid host: the unified tree,
 * which has no controllers, so no limits, but cgroup.kill, cpu.stat, CLONE_INTO_CGROUP).
 */
Test(cgroup, v2_clone_into_accounting_kill_destroy)
{
	char *mnt = v2_mount();
	struct cordon_profile none = { 0 };
	struct cgroup_run *cg = NULL;
	struct local_usage u;
	cordon_error e = { 0 };
	char path[512], want[600], buf[600] = "", file[64];
	pid_t pid;
	int st, fd, done[2];
	ssize_t k;

	if (!mnt) {
		cr_assert_not(strict_ci(), "no cgroup2 mount");
		cr_skip_test("no cgroup2 mount");
	}
	if (geteuid() != 0 || access(mnt, W_OK) != 0) {
		cr_assert_not(strict_ci(), "%s not writable", mnt);
		cr_skip_test("%s not writable", mnt);
	}
	cr_assert_eq(cgroup_run_create_v2_at(&none, mnt, false, &cg, &e), 0, "%s", e.msg);
	track(cg);
	cr_assert_eq(cgroup_run_mode(cg), CGROUP_V2);
	snprintf(path, sizeof(path), "%s", cgroup_run_path(cg, 0));
	cr_assert_geq(cgroup_run_dirfd(cg), 0);

	cr_assert_eq(pipe2(done, O_CLOEXEC), 0);
	pid = clone_into(cgroup_run_dirfd(cg));
	cr_assert_geq(pid, 0, "clone3: %s", strerror(errno));
	if (pid == 0) {
		burn_300ms();
		if (write(done[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(done[1]);
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	cr_assert_gt(k, 0);
	snprintf(want, sizeof(want), "0::%s\n", path + strlen(mnt));
	cr_assert(strstr(buf, want), "child not in %s: %s", want, buf);

	/* The child burns 300 ms of CPU, says so, then pauses. */
	cr_assert_eq(read(done[0], buf, 1), 1);
	close(done[0]);
	cr_assert_eq(cgroup_run_usage(cg, &u, &e), 0, "%s", e.msg);
	cr_assert_geq(u.cpu_ms, 200.0, "cpu_ms %.1f", u.cpu_ms);

	cgroup_run_kill(cg); /* cgroup.kill */
	st = wait_status(pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	destroy(cg);
	assert_removed(path);
	free(mnt);
}

/* A limit the tree cannot enforce is an error, and the failed creation leaves nothing. */
Test(cgroup, v2_limit_without_controller_fails_clean)
{
	char *mnt = v2_mount();
	struct cordon_profile p = { .pids = 5 };
	struct cgroup_run *cg = NULL;
	cordon_error e = { 0 };
	char buf[64], parent[600];
	DIR *d;
	struct dirent *de;

	if (!mnt) {
		cr_assert_not(strict_ci(), "no cgroup2 mount");
		cr_skip_test("no cgroup2 mount");
	}
	if (geteuid() != 0 || access(mnt, W_OK) != 0) {
		cr_assert_not(strict_ci(), "%s not writable", mnt);
		cr_skip_test("%s not writable", mnt);
	}
	snprintf(parent, sizeof(parent), "%s/cordon", mnt);
	{
		int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int r = fd >= 0 ? openat(fd, "cgroup.controllers", O_RDONLY | O_CLOEXEC) : -1;
		ssize_t k = r >= 0 ? read(r, buf, sizeof(buf) - 1) : -1;

		buf[k > 0 ? k : 0] = 0;
		if (r >= 0)
			close(r);
		if (fd >= 0)
			close(fd);
		if (strstr(buf, "pids"))
			cr_skip_test("this cgroup2 tree has pids: nothing to test here");
	}
	cr_assert_eq(cgroup_run_create_v2_at(&p, mnt, false, &cg, &e), -1);
	cr_assert(strstr(e.msg, "pids.max"), "%s", e.msg);
	d = opendir(parent);
	if (d) {
		while ((de = readdir(d)))
			cr_assert_eq(strncmp(de->d_name, "cordon-", 7) == 0 &&
					     strstr(de->d_name, "-") &&
					     atoi(de->d_name + 7) == (int)getpid(),
				     false, "left behind: %s", de->d_name);
		closedir(d);
	}
	free(mnt);
}

/* Write our pid into the cgroup directory dir (every thread of this test process moves). */
static void move_self(const char *dir)
{
	char path[600], pid[32];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, pid, strlen(pid)), (ssize_t)strlen(pid), "%s: %s", path,
		     strerror(errno));
	close(fd);
}

/*
 * cordond keeps the cgroup layout between runs (cgroup_cache_plans). When the host changes
 * under it (here: the cgroup the daemon was in is gone), the next run must not fail: the cached
 * plan is dropped and the layout read again.
 */
Test(cgroup, cached_layout_is_read_again_when_stale)
{
	struct cordon_profile p = { .memory = 64 << 20, .pids = 16 };
	struct cgroup_run *cg = create_or_skip(&p);
	char base[4][512], tmp[4][512], paths[4][512];
	size_t n = run_paths(cg, paths);

	destroy(cg);
	if (geteuid() != 0) {
		cr_assert_not(strict_ci(), "needs root to make cgroups");
		cr_skip_test("needs root to make cgroups");
	}
	/* Our own cgroup in each hierarchy: the run's path minus "/cordon/<run>". */
	for (size_t i = 0; i < n; i++) {
		char *cut;

		snprintf(base[i], sizeof(base[i]), "%s", paths[i]);
		cut = strstr(base[i], "/cordon/cordon-");
		cr_assert_not_null(cut, "%s", paths[i]);
		*cut = '\0';
		snprintf(tmp[i], sizeof(tmp[i]), "%s/cordon-test-stale-%d", base[i], (int)getpid());
		cr_assert_eq(mkdir(tmp[i], 0755), 0, "%s: %s", tmp[i], strerror(errno));
		move_self(tmp[i]);
	}
	/* Cache a plan made in the temporary cgroup... */
	cgroup_cache_plans();
	cg = create_or_skip(&p);
	run_paths(cg, paths);
	cr_assert(strstr(paths[0], "/cordon-test-stale-"), "%s", paths[0]);
	destroy(cg);
	/* ...then leave it and remove it: the cached plan now names directories that are gone. */
	for (size_t i = 0; i < n; i++) {
		char sub[600];

		move_self(base[i]);
		snprintf(sub, sizeof(sub), "%s/cordon", tmp[i]);
		(void)rmdir(sub);
		cr_assert_eq(rmdir(tmp[i]), 0, "%s: %s", tmp[i], strerror(errno));
	}
	cg = create_or_skip(&p);
	n = run_paths(cg, paths);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		cr_assert_null(strstr(paths[i], "/cordon-test-stale-"), "%s", paths[i]);
		cr_assert_eq(stat(paths[i], &st), 0, "%s", paths[i]);
	}
	destroy(cg);
}
