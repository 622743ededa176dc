/* SPDX-License-Identifier: MIT */
/* Helpers shared by the criterion suites: run build/cordon, temp dirs, CI-aware skips. */
#pragma once

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tu_run {
	char *out; /* NUL-terminated; may contain NULs before out_len */
	size_t out_len;
	char *err;
	size_t err_len;
	int status; /* exit status, or 128+n for a signal */
	double ms;  /* wall time */
	int leaked; /* entries left in the run's private $TMPDIR (tu_cordon_run only) */
};

/* Path of the built CLI: $CORDON_BIN, else build/cordon (tests run from the repo root). */
const char *tu_cordon(void);
/*
 * Run argv (argv[0] is the program; NULL-terminated), feeding stdin_data (NULL: /dev/null),
 * capturing stdout and stderr fully. Extra environment entries "K=V" (NULL-terminated, may be
 * NULL) are added to the current environment.
 */
void tu_exec(struct tu_run *r, const char *stdin_data, char *const env[], char *const argv[]);
/* Run build/cordon with these arguments (NULL-terminated, without "cordon"). */
void tu_cordon_run(struct tu_run *r, const char *const args[]);
void tu_run_free(struct tu_run *r);
/* mkdtemp under /tmp; tu_rmtree removes it. */
char *tu_tmpdir(void);
void tu_rmtree(const char *path);
void tu_write_file(const char *dir, const char *name, const char *content);
/* Number of entries in /tmp named cordon-* (to check that runs leave none behind). */
int tu_count_cordon_tmp(void);
/* /proc/<pid>/cmdline with its NULs as spaces; "" when the process is gone or a zombie. */
void tu_cmdline(pid_t pid, char *buf, size_t n);
/*
 * fn(pid, command line, arg) for every process of the host that has a command line (zombies
 * have none); stops when fn returns false.
 */
void tu_each_proc(bool (*fn)(pid_t pid, const char *cmdline, void *arg), void *arg);
/*
 * The run cgroup directories named after pid (cordon-<pid>-...), in every hierarchy; the path of
 * the first into first (optional, n bytes).
 */
int tu_run_cgroups(pid_t pid, char *first, size_t n);
/*
 * Which comes first: the end of the process pidfd refers to, or the removal of name from the
 * directory the inotify fd in watches (IN_DELETE)? Waits up to timeout_ms for both; each time
 * (CLOCK_MONOTONIC, ms) into *ret_exit and *ret_del, 0 for what did not come.
 */
void tu_exit_and_delete(int pidfd, int in, const char *name, int timeout_ms, double *ret_exit,
			double *ret_del);
/*
 * From now on, in the calling process (a child the test forked), every fstatat that does not
 * follow symlinks (a walk's stat of an entry) fails with err: a seccomp filter. false when it
 * could not be installed.
 */
bool tu_fail_nofollow_stats(int err);
/* Under CI=true or CORDON_REQUIRE_ALL=1 a skip is a failure. */
bool tu_ci(void);
/* A number below n from the generator state *s (xorshift64*: a fixed seed replays a failure). */
size_t tu_rand(uint64_t *s, size_t n);

#define TU_SKIP(...)                                                                               \
	do {                                                                                       \
		if (tu_ci())                                                                       \
			cr_assert_fail("skipped under CI: " __VA_ARGS__);                          \
		else                                                                               \
			cr_skip_test(__VA_ARGS__);                                                 \
	} while (0)
