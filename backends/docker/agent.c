/* SPDX-License-Identifier: MIT */
/*
 * The in-container agent (agent.h): runs as the container's main process (under docker-init)
 * and starts the commands cordon sends it. Single-threaded; one command at a time.
 *
 * What it trusts: the cordon process at the other end of its socket, which created the
 * container. What it does not protect against: the commands themselves, which run as the same
 * user and may kill it (the container then stops, as it did when they killed `sleep
 * infinity`). It makes itself non-dumpable so that they cannot ptrace it or read its memory.
 */
#define _GNU_SOURCE
#include "backends/docker/agent.h"
#include "runtime/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The command being run: its pid (its process group and session), and its nonce. */
static pid_t child;
static char nonce[65];

static void idle_forever(void)
{
	for (;;)
		pause();
}

static int read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static void send_msg(int sock, uint32_t type, uint32_t arg)
{
	struct agent_msg m = { .type = type, .arg = arg };

	/* A cordon that is gone is noticed by the next read (EOF). */
	(void)send(sock, &m, sizeof(m), MSG_NOSIGNAL);
}

/*
 * Is "CORDON_EXEC_NONCE=<nonce>" one of the entries of process pid's environment? 1: yes;
 * 0: no; -1: its environment reads empty (a zombie, a kernel thread, or a process in the
 * middle of an exec, whose new environment is not set up yet: it may be ours).
 */
static int nonce_of(long pid)
{
	char path[64], needle[96];
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int fd = -1;
	size_t n = 0, cap = 0, nl;

	(void)snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
	nl = (size_t)snprintf(needle, sizeof(needle), "CORDON_EXEC_NONCE=%s", nonce);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* The whole environment: a process may have moved the entry past any fixed prefix. */
	for (;;) {
		ssize_t r;

		if (n + 65536 > cap) {
			char *p;

			if (cap >= (64u << 20))
				break;
			p = realloc(buf, cap = cap ? 2 * cap : 65536);
			if (!p)
				break;
			buf = p;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	for (size_t i = 0; i < n;) {
		size_t l = strnlen(buf + i, n - i);

		if (l == nl && !memcmp(buf + i, needle, nl))
			return 1;
		i += l + 1;
	}
	return n == 0 ? -1 : 0;
}

/*
 * A process whose environment read empty: one that may be in the middle of an exec, that is
 * neither a zombie nor a kernel thread (/proc/PID/stat: state Z, flags PF_KTHREAD).
 */
static bool may_be_execing(long pid)
{
	char path[64], buf[1024], state;
	_cleanup_close_ int fd = -1;
	unsigned long flags = 0;
	const char *p;
	ssize_t n;

	(void)snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* after the command name, which may hold anything */
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return false;
	return state != 'Z' && state != 'X' && !(flags & 0x00200000 /* PF_KTHREAD */);
}

void (*agent_test_child_hook)(void);

/*
 * Kill the command: the child itself, its process group, then every process that still
 * carries its nonce (what left the group with setsid), then the group again (what forked
 * meanwhile). The child first: a kill that comes before it has called setsid() finds no
 * group -child yet, nor the nonce in its environment (that is set by the exec), and the
 * command would go on; its pid cannot be another process's while we have not reaped it. An
 * escapee that both left the group and dropped the nonce survives: docs/docker.md says so.
 */
static void kill_command(void)
{
	pid_t self = getpid();

	if (child <= 0)
		return;
	(void)kill(child, SIGKILL);
	(void)kill(-child, SIGKILL);
	/*
	 * Sweeps 5 ms apart until three in a row kill nothing and find no process in the middle
	 * of an exec (at most 200: a second). Such a process (`setsid sleep`, having just left
	 * the group) shows an empty environment until the new program's is set up, which on a
	 * loaded machine (page faults waiting for reclaim) can take a while, and a single sweep
	 * would pass it by.
	 */
	for (int pass = 0, quiet = 0; pass < 200 && quiet < 3; pass++) {
		_cleanup_closedir_ DIR *d = opendir("/proc");
		struct dirent *de;
		bool busy = false;

		if (pass)
			(void)usleep(5 * 1000);
		while (d && (de = readdir(d))) {
			char *end;
			long pid = strtol(de->d_name, &end, 10);
			int r;

			if (*end || pid <= 1 || pid == self)
				continue;
			r = nonce_of(pid);
			if (r > 0 && kill((pid_t)pid, SIGKILL) == 0)
				busy = true;
			else if (r < 0 && may_be_execing(pid))
				busy = true;
		}
		(void)kill(-child, SIGKILL);
		quiet = busy ? 0 : quiet + 1;
	}
}

/* The environment of the command: the container's (ours), with the request's on top, as
 * Docker's exec does (ReplaceOrAppendEnvValues). */
static char **merge_env(char **req, size_t nreq)
{
	size_t nbase = 0, k = 0;
	char **out;

	while (environ && environ[nbase])
		nbase++;
	out = calloc(nbase + nreq + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < nbase; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t kl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		bool replaced = false;

		for (size_t j = 0; j < nreq && !replaced; j++)
			replaced = !strncmp(req[j], environ[i], kl) && req[j][kl] == '=';
		if (!replaced)
			out[k++] = environ[i];
	}
	for (size_t j = 0; j < nreq; j++)
		out[k++] = req[j];
	return out;
}

/* The child: a session of its own, the pipes as stdout and stderr, then exec. */
static void __attribute__((noreturn))
start_child(int out, int err, const char *cwd, char **argv, char **envp)
{
	sigset_t none;
	int fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (agent_test_child_hook)
		agent_test_child_hook();
	(void)setsid();
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* The command's stdio, inherited on purpose. */
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) /* lint: inherit */
		_exit(126);
	/* If the memory limit is hit, the OOM killer should pick the command, not the agent
	 * (whose death stops the container). Raising is allowed without privilege. */
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "500", 3);
		close(fd);
	}
	if (chdir(cwd) < 0) {
		dprintf(2, "cordon: cannot enter %s: %s\n", cwd, strerror(errno));
		_exit(126);
	}
	environ = envp;
	execvp(argv[0], argv);
	dprintf(2, "%s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/*
 * Parse a RUN payload ("argc\0envc\0nonce\0cwd\0argv...envp...") and start the command. The
 * payload comes from cordon; it is still checked so that a bug cannot make us read past it.
 */
static int run(char *p, size_t n, int out, int err)
{
	char *s[4], *end;
	size_t at = 0;
	unsigned long argc, envc;
	_cleanup_free_ char **argv = NULL, **req = NULL, **envp = NULL;

	if (!n || p[n - 1])
		return EPROTO;
	for (int i = 0; i < 4; i++) {
		if (at >= n)
			return EPROTO;
		s[i] = p + at;
		at += strlen(s[i]) + 1;
	}
	argc = strtoul(s[0], &end, 10);
	if (*end || !argc || argc > n)
		return EPROTO;
	envc = strtoul(s[1], &end, 10);
	if (*end || envc > n || strlen(s[2]) >= sizeof(nonce))
		return EPROTO;
	argv = calloc(argc + 1, sizeof(*argv));
	req = calloc(envc + 1, sizeof(*req));
	if (!argv || !req)
		return ENOMEM;
	for (size_t i = 0; i < argc + envc; i++) {
		if (at >= n)
			return EPROTO;
		if (i < argc)
			argv[i] = p + at;
		else
			req[i - argc] = p + at;
		at += strlen(p + at) + 1;
	}
	if (at != n)
		return EPROTO;
	envp = merge_env(req, envc);
	if (!envp)
		return ENOMEM;
	strcpy(nonce, s[2]);
	child = fork();
	if (child < 0) {
		child = 0;
		return errno;
	}
	if (child == 0)
		start_child(out, err, s[3], argv, envp);
	return 0;
}

/* One message from cordon. -1: cordon is gone (or broke the protocol). */
static int serve(int sock)
{
	struct agent_msg m;
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	int fds[2] = { -1, -1 }, nfds = 0, rc = -1;
	_cleanup_free_ char *payload = NULL;
	ssize_t r;

	do
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfds < 2)
				fds[nfds++] = fd;
			else
				close(fd);
		}
	}
	if ((size_t)r < sizeof(m) && read_full(sock, (char *)&m + r, sizeof(m) - (size_t)r) < 0)
		goto out;
	switch (m.type) {
	case AGENT_RUN: {
		int err;

		if (m.arg > AGENT_RUN_MAX || nfds != 2)
			goto out;
		payload = malloc(m.arg ? m.arg : 1);
		if (!payload || read_full(sock, payload, m.arg) < 0)
			goto out;
		err = child > 0 ? EBUSY : run(payload, m.arg, fds[0], fds[1]);
		if (err)
			send_msg(sock, AGENT_FAILED, (uint32_t)err);
		rc = 0;
		break;
	}
	case AGENT_KILL:
		kill_command();
		rc = 0;
		break;
	default:
		break;
	}
out:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return rc;
}

int docker_agent_main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigset_t chld;
	int sock, sfd;

	/* Not ptrace-able or readable (/proc/PID/mem, environ) by the commands, same uid. */
	(void)prctl(PR_SET_DUMPABLE, 0);
	/* argv: "__docker-agent" SOCKET */
	if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path))
		idle_forever();
	strcpy(sa.sun_path, argv[1]);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* No cordon to serve (a container restarted after its socket was removed): be the
	 * `sleep infinity` that keeps the container up for Docker's exec API. */
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		idle_forever();
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return 1;
	for (;;) {
		struct pollfd p[2] = { { .fd = sock, .events = POLLIN },
				       { .fd = sfd, .events = POLLIN } };

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[1].revents) {
			struct signalfd_siginfo si;
			int st;
			pid_t w;

			while (read(sfd, &si, sizeof(si)) > 0)
				;
			while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
				if (w != child)
					continue;
				child = 0;
				send_msg(sock, AGENT_EXITED, (uint32_t)st);
			}
		}
		if (p[0].revents && serve(sock) < 0) {
			/* cordon is gone: so is its command. Exiting stops the container. */
			kill_command();
			return 0;
		}
	}
}

/*
 * `cordon __docker-init [__docker-agent SOCKET]`: the container's pid 1 where its workdir's
 * path is not root's alone (docker.c, "guarded"), in place of docker-init. It is started from
 * an execute-only copy of this binary, so that the kernel makes it non-dumpable from its
 * execve on (a file its process may not read), before any code of ours runs: the container's
 * user on the host cannot open its /proc/PID/root, cwd or fd, which is what the workdir check
 * needs until it has found the directory dockerd mounted to be the one cordon opened (found in
 * red team: docker-init, dumpable, let a member read through /proc/PID/root a directory a swap
 * of the workdir's path had made dockerd mount, before the check removed the container). With
 * arguments it starts the agent as its child, by the same copy (so non-dumpable too), and
 * exits with it, as docker-init did; without, it idles, as `sleep infinity` did. Either way it
 * reaps what is re-parented to it, and passes the signals it gets on to the agent.
 */
int docker_init_main(int argc, char **argv)
{
	sigset_t all, old;
	pid_t agent = 0;

	(void)prctl(PR_SET_DUMPABLE, 0);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	if (argc > 1) {
		char *args[] = { (char *)AGENT_BIN_IN, argv[1], argc > 2 ? argv[2] : NULL, NULL };

		agent = fork();
		if (agent < 0)
			return 1;
		if (agent == 0) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			execve(AGENT_BIN_IN, args, environ);
			_exit(127);
		}
	}
	for (;;) {
		siginfo_t si;
		pid_t w;
		int st;

		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (agent > 0 && w == agent)
				_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		if (sigwaitinfo(&all, &si) < 0 || si.si_signo == SIGCHLD)
			continue;
		if (agent > 0)
			(void)kill(agent, si.si_signo);
	}
}
