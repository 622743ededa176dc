/* SPDX-License-Identifier: MIT */
/* rlimits, for real: a forked child applies a profile's limits and runs into them. */
#define _GNU_SOURCE
#include "backends/local/limits.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *child_msg;

static void child_fail(int line, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(child_msg, 4096, "line %d: ", line);

	va_start(ap, fmt);
	vsnprintf(child_msg + k, 4096 - (size_t)k, fmt, ap);
	va_end(ap);
	_exit(1);
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			child_fail(__LINE__, __VA_ARGS__);                                         \
	} while (0)

static struct cordon_profile prof;
static bool in_cgroup;
static bool nproc; /* pids as RLIMIT_NPROC (no cgroup, own user namespace) */
static char tmpfile_path[64];

static void apply_or_fail(void)
{
	struct sb_limits l = limits_of(&prof);
	int r = limits_apply(&l, in_cgroup, nproc);

	CHECK(r == 0, "limits_apply: %s", strerror(-r));
}

static int run_child(void (*fn)(void))
{
	int st = 0;
	pid_t pid;

	child_msg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(child_msg, MAP_FAILED);
	child_msg[0] = 0;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static void assert_child_ok(int st)
{
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (status %#x): %s", st,
		  child_msg);
}

static void setup(void)
{
	int fd;

	memset(&prof, 0, sizeof(prof));
	in_cgroup = false;
	nproc = false;
	snprintf(tmpfile_path, sizeof(tmpfile_path), "/tmp/cordon-limits-XXXXXX");
	fd = mkstemp(tmpfile_path);
	cr_assert_geq(fd, 0);
	close(fd);
}

static void teardown(void)
{
	unlink(tmpfile_path);
}

static void big_write(void)
{
	static char buf[16384];
	int fd;
	ssize_t n;

	apply_or_fail();
	fd = open(tmpfile_path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	CHECK(fd >= 0, "open: %s", strerror(errno));
	n = write(fd, buf, sizeof(buf)); /* stops at the limit: a short write */
	CHECK(n == 4096, "first write returned %zd, want 4096", n);
	n = write(fd, buf, sizeof(buf)); /* at the limit: EFBIG (SIGXFSZ ignored) or killed */
	CHECK(n == -1 && errno == EFBIG, "second write returned %zd (%s)", n, strerror(errno));
	_exit(0);
}

static void big_write_ignoring_sigxfsz(void)
{
	signal(SIGXFSZ, SIG_IGN);
	big_write();
}

Test(limits, file_size_stops_a_big_write_with_efbig, .init = setup, .fini = teardown)
{
	struct stat st;

	prof.file_size = 4096;
	assert_child_ok(run_child(big_write_ignoring_sigxfsz));
	cr_assert_eq(stat(tmpfile_path, &st), 0);
	cr_assert_eq(st.st_size, 4096);
}

Test(limits, file_size_default_action_is_sigxfsz, .init = setup, .fini = teardown)
{
	int st;

	prof.file_size = 4096;
	st = run_child(big_write);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGXFSZ, "status %#x: %s", st, child_msg);
}

static void check_limits(void)
{
	struct rlimit rl;

	apply_or_fail();
	/* 1, not 0: the one value that also stops a core_pattern pipe (limits.c) */
	CHECK(getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_cur == 1 && rl.rlim_max == 1,
	      "core %lu/%lu, not 1/1", (unsigned long)rl.rlim_cur, (unsigned long)rl.rlim_max);
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur == 16 && rl.rlim_max == 16,
	      "nofile %lu/%lu", (unsigned long)rl.rlim_cur, (unsigned long)rl.rlim_max);
	CHECK(getrlimit(RLIMIT_CPU, &rl) == 0 && rl.rlim_cur == 30 && rl.rlim_max == 30,
	      "cpu %lu/%lu", (unsigned long)rl.rlim_cur, (unsigned long)rl.rlim_max);
	CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur == 1 << 20 && rl.rlim_max == 1 << 20,
	      "fsize");
	CHECK(getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur == 256ULL << 20, "as %lu",
	      (unsigned long)rl.rlim_cur);
	/* The soft limit cannot be raised back above the hard one. */
	rl.rlim_cur = 17;
	rl.rlim_max = 17;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == -1 && errno == EPERM, "raised nofile back");
	/* More fds than allowed: EMFILE. */
	for (int i = 0; i < 20; i++) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		CHECK(fd < 16, "fd %d under open_files = 16", fd);
		if (fd < 0) {
			CHECK(errno == EMFILE, "open: %s", strerror(errno));
			return;
		}
	}
	child_fail(__LINE__, "20 opens under open_files = 16");
}

Test(limits, sets_soft_and_hard, .init = setup, .fini = teardown)
{
	prof.open_files = 16;
	prof.cpu_time = 30;
	prof.file_size = 1 << 20;
	prof.memory = 256ULL << 20;
	assert_child_ok(run_child(check_limits));
}

static void memory_as(void)
{
	void *p;

	apply_or_fail();
	p = mmap(NULL, 512ULL << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (in_cgroup)
		CHECK(p != MAP_FAILED, "512 MiB mapping refused though memory is in the cgroup");
	else
		CHECK(p == MAP_FAILED && errno == ENOMEM, "512 MiB mapping under a 256 MiB AS");
}

Test(limits, memory_is_rlimit_as_without_cgroup, .init = setup, .fini = teardown)
{
	prof.memory = 256ULL << 20;
	assert_child_ok(run_child(memory_as));
}

Test(limits, memory_left_to_the_cgroup, .init = setup, .fini = teardown)
{
	prof.memory = 256ULL << 20;
	in_cgroup = true;
	assert_child_ok(run_child(memory_as));
}

static void never_raises_hard(void)
{
	struct rlimit rl = { 100, 100 };

	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "lower nofile");
	apply_or_fail(); /* asks for 1000: gets the hard 100, no error */
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur == 100 && rl.rlim_max == 100,
	      "nofile %lu/%lu", (unsigned long)rl.rlim_cur, (unsigned long)rl.rlim_max);
}

Test(limits, never_raises_a_hard_limit, .init = setup, .fini = teardown)
{
	prof.open_files = 1000;
	assert_child_ok(run_child(never_raises_hard));
}

static struct rlimit before[RLIM_NLIMITS];

static void zero_means_unchanged(void)
{
	int res[] = { RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_AS };

	apply_or_fail();
	for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++) {
		struct rlimit rl;

		CHECK(getrlimit(res[i], &rl) == 0, "getrlimit");
		CHECK(rl.rlim_cur == before[res[i]].rlim_cur &&
			      rl.rlim_max == before[res[i]].rlim_max,
		      "limit %d changed though the profile says 0", res[i]);
	}
}

Test(limits, zero_means_unlimited, .init = setup, .fini = teardown)
{
	for (int r = 0; r < RLIM_NLIMITS; r++)
		getrlimit(r, &before[r]);
	assert_child_ok(run_child(zero_means_unchanged));
	cr_assert_eq(limits_apply(NULL, false, true), 0); /* no limits: only core 1 */
}

/*
 * A hard core limit of 0 cannot be raised to 1 without CAP_SYS_RESOURCE: the core that a
 * core_pattern pipe would still get then carries no memory (coredump_filter 0).
 */
static void core_hard_zero(void)
{
	struct rlimit zero = { 0, 0 }, rl;
	char buf[16] = "";
	ssize_t n;
	int fd;

	CHECK(setrlimit(RLIMIT_CORE, &zero) == 0, "setrlimit: %s", strerror(errno));
	apply_or_fail();
	CHECK(getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_max == 0, "the hard limit was raised");
	fd = open("/proc/self/coredump_filter", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "open coredump_filter: %s", strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n > 0 && strtoul(buf, NULL, 16) == 0, "coredump_filter is %s", buf);
}

Test(limits, core_hard_zero_dumps_no_memory, .init = setup, .fini = teardown)
{
	assert_child_ok(run_child(core_hard_zero));
}

static void burn_cpu(void)
{
	volatile unsigned long x = 0;

	apply_or_fail();
	for (;;)
		x++;
}

Test(limits, cpu_time_kills_a_busy_loop, .init = setup, .fini = teardown, .timeout = 20)
{
	int st;

	prof.cpu_time = 1;
	st = run_child(burn_cpu);
	cr_assert(WIFSIGNALED(st) && (WTERMSIG(st) == SIGKILL || WTERMSIG(st) == SIGXCPU),
		  "status %#x: %s", st, child_msg);
}
