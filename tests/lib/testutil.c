/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "tests/lib/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char *tu_cordon(void)
{
	const char *b = getenv("CORDON_BIN");

	return b && *b ? b : "build/cordon";
}

size_t tu_rand(uint64_t *s, size_t n)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (size_t)((*s * 0x2545f4914f6cdd1dULL) >> 33) % n;
}

bool tu_ci(void)
{
	const char *ci = getenv("CI"), *all = getenv("CORDON_REQUIRE_ALL");

	return (ci && !strcmp(ci, "true")) || (all && !strcmp(all, "1"));
}

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = (*cap ? *cap : 4096);

		while (nc < *len + n + 1)
			nc *= 2;
		*buf = realloc(*buf, nc);
		cr_assert(*buf, "out of memory");
		*cap = nc;
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void tu_exec(struct tu_run *r, const char *stdin_data, char *const env[], char *const argv[])
{
	int in[2], out[2], err[2], st;
	size_t oc = 0, ec = 0, in_len = stdin_data ? strlen(stdin_data) : 0, in_off = 0;
	double t0 = now_ms();
	pid_t pid;

	memset(r, 0, sizeof(*r));
	cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 &&
		  pipe2(err, O_CLOEXEC) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		for (size_t i = 0; env && env[i]; i++)
			putenv(env[i]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (!stdin_data) {
		close(in[1]);
		in[1] = -1;
	} else {
		fcntl(in[1], F_SETFL, O_NONBLOCK);
	}
	signal(SIGPIPE, SIG_IGN);
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	oc = ec = 1;
	for (int open_fds = 2; open_fds > 0 || in[1] >= 0;) {
		struct pollfd p[3] = { { out[0], POLLIN, 0 },
				       { err[0], POLLIN, 0 },
				       { in[1], POLLOUT, 0 } };
		char buf[65536];

		if (poll(p, 3, -1) < 0) {
			cr_assert(errno == EINTR);
			continue;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			n = read(p[i].fd, buf, sizeof(buf));
			if (n > 0) {
				if (i == 0)
					append(&r->out, &r->out_len, &oc, buf, (size_t)n);
				else
					append(&r->err, &r->err_len, &ec, buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(p[i].fd);
				if (i == 0)
					out[0] = -1;
				else
					err[0] = -1;
				open_fds--;
			}
		}
		if (in[1] >= 0 && p[2].revents) {
			ssize_t n = write(in[1], stdin_data + in_off, in_len - in_off);

			if (n > 0)
				in_off += (size_t)n;
			if (n < 0 || in_off == in_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
		if (open_fds == 0 && in[1] >= 0) {
			close(in[1]);
			in[1] = -1;
		}
	}
	cr_assert(waitpid(pid, &st, 0) == pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->ms = now_ms() - t0;
}

/* Each run gets its own $TMPDIR, so that a temp workdir left behind is seen even when
 * tests run in parallel. */
void tu_cordon_run(struct tu_run *r, const char *const args[])
{
	const char *argv[64];
	char *tmp = tu_tmpdir(), *env;
	size_t n = 0;
	DIR *d;
	struct dirent *de;
	int left = 0;

	argv[n++] = tu_cordon();
	for (size_t i = 0; args[i]; i++) {
		cr_assert(n < 63);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	cr_assert(asprintf(&env, "TMPDIR=%s", tmp) > 0);
	tu_exec(r, NULL, (char *[]){ env, NULL }, (char *const *)argv);
	d = opendir(tmp);
	cr_assert(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			left++;
	closedir(d);
	r->leaked = left;
	tu_rmtree(tmp);
	free(tmp);
	free(env);
}

void tu_run_free(struct tu_run *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

char *tu_tmpdir(void)
{
	char *t = strdup("/tmp/cordon-test-XXXXXX");

	cr_assert(t && mkdtemp(t), "mkdtemp");
	return t;
}

void tu_rmtree(const char *path)
{
	char *cmd;

	if (!path || strncmp(path, "/tmp/", 5) != 0)
		return;
	cr_assert(asprintf(&cmd, "rm -rf '%s'", path) > 0);
	(void)!system(cmd);
	free(cmd);
}

void tu_write_file(const char *dir, const char *name, const char *content)
{
	char *p;
	FILE *f;

	cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
	f = fopen(p, "w");
	cr_assert(f, "fopen %s", p);
	fputs(content, f);
	fclose(f);
	free(p);
}

void tu_cmdline(pid_t pid, char *buf, size_t n)
{
	char path[64];
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	k = read(fd, buf, n - 1);
	close(fd);
	for (ssize_t i = 0; i < k; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[k > 0 ? k : 0] = '\0';
}

void tu_each_proc(bool (*fn)(pid_t pid, const char *cmdline, void *arg), void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool more = true;

	cr_assert(d);
	while (more && (de = readdir(d))) {
		char buf[4096];
		pid_t pid;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		pid = (pid_t)atoi(de->d_name);
		tu_cmdline(pid, buf, sizeof(buf));
		if (buf[0])
			more = fn(pid, buf, arg);
	}
	closedir(d);
}

int tu_count_cordon_tmp(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *de;
	int n = 0;

	cr_assert(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "cordon-", 7) && strncmp(de->d_name, "cordon-test-", 12))
			n++;
	closedir(d);
	return n;
}

int tu_run_cgroups(pid_t pid, char *first, size_t n)
{
	char cmd[160], line[PATH_MAX];
	int count = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "find /sys/fs/cgroup -mindepth 2 -type d -name 'cordon-%d-*' 2>/dev/null",
		 (int)pid);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (count++ == 0 && first)
			snprintf(first, n, "%s", line);
	}
	pclose(f);
	return count;
}

static double tu_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void tu_exit_and_delete(int pidfd, int in, const char *name, int timeout_ms, double *ret_exit,
			double *ret_del)
{
	double end = tu_mono_ms() + timeout_ms;

	*ret_exit = *ret_del = 0;
	while ((!*ret_del || !*ret_exit) && tu_mono_ms() < end) {
		struct pollfd pfd[2] = { { .fd = in, .events = POLLIN },
					 { .fd = pidfd, .events = POLLIN } };

		if (poll(pfd, 2, 100) <= 0)
			continue;
		if (pfd[1].revents && !*ret_exit)
			*ret_exit = tu_mono_ms();
		if (pfd[0].revents) {
			char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
			ssize_t n = read(in, buf, sizeof(buf));

			for (ssize_t off = 0; n > 0 && off < n;) {
				const struct inotify_event *ev = (const void *)(buf + off);

				if (ev->len && !strcmp(ev->name, name) && !*ret_del)
					*ret_del = tu_mono_ms();
				off += (ssize_t)(sizeof(*ev) + ev->len);
			}
		}
	}
}

bool tu_fail_nofollow_stats(int err)
{
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	bool ok = f &&
		  seccomp_rule_add(f, SCMP_ACT_ERRNO(err), SCMP_SYS(newfstatat), 1,
				   SCMP_A3(SCMP_CMP_EQ, AT_SYMLINK_NOFOLLOW)) == 0 &&
		  seccomp_load(f) == 0;

	seccomp_release(f);
	return ok;
}
