/* SPDX-License-Identifier: MIT */
/*
 * The plain local runner: fork, new session, exec. No isolation; it exists so that `cordon run`
 * works end to end while the namespace sandbox (which implements the same proc.h) is built.
 * It already kills the whole process group on timeout, which AG2 does not.
 */
#define _GNU_SOURCE
#include "backends/local/proc.h"
#include "runtime/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct local_proc {
	pid_t pid;
	int pidfd;
	bool reaped;
};

extern char **environ;

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void child_fail(int fd, int err)
{
	(void)!write(fd, &err, sizeof(err));
	_exit(127);
}

int local_proc_start(const struct local_spec *s, struct local_proc **ret, cordon_error *e)
{
	_cleanup_close_ int rep_r = -1, rep_w = -1, pidfd = -1;
	int pipefd[2], err = 0;
	ssize_t n;
	pid_t pid;
	struct local_proc *p;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return cordon_err(e, errno, "plain: report pipe");
	rep_r = pipefd[0];
	rep_w = pipefd[1];

	pid = fork();
	if (pid < 0)
		return cordon_err(e, errno, "plain: fork");
	if (pid == 0) {
		int in = s->stdin_fd;

		/* A new session: no controlling terminal, and a process group the timeout kills. */
		if (setsid() < 0)
			child_fail(rep_w, errno);
		if (in < 0) {
			in = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (in < 0)
				child_fail(rep_w, errno);
		}
		if (dup2(in, 0) < 0 || dup2(s->stdout_fd, 1) < 0 || dup2(s->stderr_fd, 2) < 0)
			child_fail(rep_w, errno);
		if (chdir(s->workdir) < 0)
			child_fail(rep_w, errno);
		/* execvp searches the PATH of the *new* environment, as AG2's LocalSandbox does. */
		environ = (char **)s->envp;
		execvp(s->argv[0], s->argv);
		child_fail(rep_w, -errno); /* negative: execve itself failed */
	}
	closep(&rep_w);
	rep_w = -1;

	pidfd = pidfd_open_(pid);
	n = read(rep_r, &err, sizeof(err));
	if (n == sizeof(err)) {
		(void)waitpid(pid, NULL, 0);
		if (err < 0) {
			cordon_err(e, -err, "exec %s", s->argv[0]);
			return LOCAL_PROC_EXEC_FAILED;
		}
		return cordon_err(e, err, "plain: child setup");
	}
	if (pidfd < 0) {
		(void)kill(-pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
		return cordon_err(e, errno, "plain: pidfd_open");
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		(void)kill(-pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	p->pid = pid;
	p->pidfd = TAKE_FD(pidfd);
	*ret = p;
	return 0;
}

int local_proc_pidfd(const struct local_proc *p)
{
	return p->pidfd;
}

void local_proc_kill(struct local_proc *p)
{
	if (!p)
		return;
	/* The session's process group: the shell and every child that did not setsid() away. */
	(void)kill(-p->pid, SIGKILL);
	if (!p->reaped)
		(void)syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
}

int local_proc_wait(struct local_proc *p, int *ret_wstatus, struct local_usage *ret_usage,
		    cordon_error *e)
{
	struct rusage ru = { 0 };
	int st;
	pid_t r;

	do
		r = wait4(p->pid, &st, 0, &ru);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return cordon_err(e, errno, "plain: wait");
	p->reaped = true;
	/* The shell is gone; its background jobs go with it (AG2 leaves them running). */
	(void)kill(-p->pid, SIGKILL);
	*ret_wstatus = st;
	if (ret_usage) {
		ret_usage->cpu_ms = ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 +
				    ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
		ret_usage->peak_memory_bytes = (int64_t)ru.ru_maxrss * 1024;
		ret_usage->oom_killed = false;
	}
	return 0;
}

void local_proc_free(struct local_proc *p)
{
	if (!p)
		return;
	if (!p->reaped) {
		local_proc_kill(p);
		(void)waitpid(p->pid, NULL, 0);
	}
	closep(&p->pidfd);
	free(p);
}
