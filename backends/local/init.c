/* SPDX-License-Identifier: MIT */
/*
 * The child side of the sandbox, from clone3() to execve(): wait at the gate, build the file
 * system (mounts.c), confine itself, then become the sandbox's pid 1: fork the command, reap
 * every process of the namespace, and exit with the command's status when the command exits.
 *
 * Why a pid-1 init of our own rather than the command as pid 1:
 *  - the kernel kills every process of a pid namespace when its init exits, so "the command
 *    exited" becomes "everything the command started is dead", setsid and double-forked
 *    daemons included, without chasing them (prior-art §d3: only a pid namespace or a cgroup
 *    kill gets them all);
 *  - a shell as pid 1 would ignore SIGTERM/SIGINT sent from inside (pid 1 gets no default
 *    actions) and would leave zombies of re-parented orphans;
 *  - init reports the command's exact wait status to the parent over a pipe, so a shell killed
 *    by signal n still reads as "killed by n" (pid 1 itself cannot die of a signal it sends).
 * init is confined exactly like the command (same uid, no capabilities, no_new_privs, Landlock,
 * seccomp) and non-dumpable for its whole life (it never execs), so the command can neither
 * ptrace it nor open its /proc/1/{mem,exe,environ}.
 *
 * After clone only async-signal-safe calls are made: raw system calls (setresuid & co through
 * syscall(2), because glibc's wrappers would try to broadcast the change to threads that only
 * exist in the parent), a vfork-style clone() for the command, and the pure helpers of
 * sandbox.h.
 */
#define _GNU_SOURCE
#include "backends/local/cgroup.h"
#include "backends/local/cpus.h"
#include "backends/local/landlock.h"
#include "backends/local/limits.h"
#include "backends/local/sandbox.h"
#include "backends/local/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static volatile pid_t sb_cmd_pid;
/* Set by the command's process (it shares our memory) when it exec'd without sh. */
static volatile sig_atomic_t sb_cmd_direct;
/* The stack the command's process runs on between clone and execve (see sb_child_main). */
static char sb_cmd_stack[64 * 1024] __attribute__((aligned(64)));

size_t sb_strlcpy(char *dst, const char *src, size_t n)
{
	size_t len = strlen(src);

	if (n) {
		size_t k = len < n - 1 ? len : n - 1;

		memcpy(dst, src, k);
		dst[k] = '\0';
	}
	return len;
}

size_t sb_strlcat(char *dst, const char *src, size_t n)
{
	size_t d = strnlen(dst, n);

	if (d == n)
		return d + strlen(src);
	return d + sb_strlcpy(dst + d, src, n - d);
}

void sb_fail_set(struct sb_msg *m, int step, int err, const char *detail)
{
	m->kind = SB_MSG_ERROR;
	m->step = step;
	m->err = err;
	sb_strlcpy(m->detail, detail ? detail : "", sizeof(m->detail));
}

void sb_trace(const struct sb_plan *pl, int step)
{
	struct sb_msg m = { .kind = SB_MSG_TRACE, .step = step };
	struct timespec ts;

	if (!pl->trace)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	m.t_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	(void)send(pl->report_fd, &m, sizeof(m), MSG_NOSIGNAL);
}

/* Report a failure to the parent and die; 125 is "cordon failed, nothing ran". */
static __attribute__((noreturn)) void die(const struct sb_plan *pl, struct sb_msg *m, int code)
{
	(void)send(pl->report_fd, m, sizeof(*m), MSG_NOSIGNAL);
	_exit(code);
}

static __attribute__((noreturn)) void die_step(const struct sb_plan *pl, int step, int err,
					       const char *detail)
{
	struct sb_msg m = { 0 };

	sb_fail_set(&m, step, err, detail);
	die(pl, &m, 125);
}

/* Wait for the parent's byte; returns it. */
static char gate(const struct sb_plan *pl)
{
	ssize_t n;
	char c = 0;

	do
		n = read(pl->go_fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(125); /* the parent is gone or gave up: nobody to report to */
	return c;
}

/*
 * The caller's CPUs back (sandbox.c, "spread"), before anything of the command's runs. Should
 * the caller's set no longer be allowed (a cpuset changed meanwhile), every CPU the kernel
 * allows; the command is never left on the CPUs the parent moved us to.
 */
static void spread_end(const struct sb_plan *pl)
{
	cpu_set_t cpus;

	if (!pl->spread)
		return;
	memcpy(&cpus, pl->cpus, sizeof(cpus));
	if (sched_setaffinity(0, sizeof(cpus), &cpus) == 0)
		return;
	memset(&cpus, 0xff, sizeof(cpus));
	if (sched_setaffinity(0, sizeof(cpus), &cpus) < 0)
		die_step(pl, SB_STEP_GATE2, errno, "sched_setaffinity");
}

/*
 * A gate with fds (sandbox.c: sb_gate_join): its byte, the network namespace the parent made
 * meanwhile (*ret_netns, -1 if none), and the `tasks` files of the run's v1 cgroups, which we
 * join here, ourselves and single-threaded: moving oneself skips the global lock a move by
 * pid takes (cgroup.h: cgroup_run_task_fds). Nothing of the command's has run yet. step: the
 * gate's name in traces and errors.
 */
static char gate_join(const struct sb_plan *pl, int step, int *ret_netns)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE((1 + CGROUP_MAX_DIRS) * sizeof(int))];
	} u;
	char msg[3] = { 0 };
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	int fds[1 + CGROUP_MAX_DIRS], nfds = 0, k = 0;
	struct cmsghdr *cm;
	ssize_t n;

	*ret_netns = -1;
	do
		n = recvmsg(pl->go_fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(msg))
		_exit(125);
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len <= CMSG_LEN(sizeof(fds)) && nfds == 0) {
			nfds = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds, CMSG_DATA(cm), (size_t)nfds * sizeof(int));
		}
	if ((mh.msg_flags & MSG_CTRUNC) || msg[1] < 0 || msg[1] > CGROUP_MAX_DIRS || msg[2] > 1 ||
	    nfds != msg[1] + msg[2])
		die_step(pl, step, EPROTO, "a malformed gate message");
	sb_trace(pl, step);
	if (msg[2])
		*ret_netns = fds[k++];
	for (; k < nfds; k++) {
		if (write(fds[k], "0", 1) != 1)
			die_step(pl, SB_STEP_CGROUP_JOIN, errno, "tasks");
		(void)close(fds[k]);
	}
	if (msg[1] > 0)
		sb_trace(pl, SB_STEP_CGROUP_JOIN);
	return msg[0];
}

static int write_proc_self(const char *name, const char *text)
{
	char path[64] = "/proc/self/";
	int fd, saved;
	ssize_t n, len = (ssize_t)strlen(text);

	sb_strlcat(path, name, sizeof(path));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, text, (size_t)len);
	saved = errno;
	(void)close(fd);
	errno = saved;
	return n == len ? 0 : -1;
}

/*
 * The user namespace maps exactly one uid and one gid, the caller's own, to themselves: the
 * command is the caller inside and out, and the files it creates belong to the caller. The
 * child writes the maps itself (as bubblewrap does unprivileged) rather than the parent
 * through /proc/<pid>: an unprivileged process may map its own ids into a namespace it owns,
 * and this works even when the caller is non-dumpable (a process that changed its uid is,
 * and then its children's /proc files belong to root). For the few system calls the writes
 * take we must be dumpable ourselves; we were cloned from cordon, so that exposes nothing
 * cordon's own uid could not already read. setgroups is denied first: the kernel requires it
 * for an unprivileged gid_map, and it stops the command from dropping a group that a file's
 * permissions deny.
 */
static void map_ids(const struct sb_plan *pl)
{
	(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (write_proc_self("setgroups", "deny") < 0)
		die_step(pl, SB_STEP_USERNS, errno, "setgroups");
	if (write_proc_self("uid_map", pl->uid_map) < 0)
		die_step(pl, SB_STEP_USERNS, errno, "uid_map");
	if (write_proc_self("gid_map", pl->gid_map) < 0)
		die_step(pl, SB_STEP_USERNS, errno, "gid_map");
}

/* `lo` up in our new network namespace: the agent's own local servers work, nothing else. */
int sb_loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int s, r, saved;

	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	sb_strlcpy(ifr.ifr_name, "lo", sizeof(ifr.ifr_name));
	ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
	r = ioctl(s, SIOCSIFFLAGS, &ifr);
	saved = errno;
	(void)close(s);
	errno = saved;
	return r;
}

/*
 * Capabilities and identity, in this order:
 *  1. securebits: NOROOT (uid 0 would get no capabilities on exec) and no ambient raise,
 *     both locked; needs CAP_SETPCAP, so before anything is dropped.
 *  2. the bounding set, one capability at a time until the kernel says EINVAL (no need to
 *     know cap_last_cap); also needs CAP_SETPCAP. Nothing exec'd later can regain them, even
 *     through file capabilities.
 *  3. the ambient set cleared (it would otherwise survive execve of a non-root program).
 *  4. as root: groups, then gid, then uid, all to the run's identity (uid last: after it we
 *     could no longer change the others). The switch to a non-zero uid clears the permitted
 *     and effective sets. In a user namespace the uid is already the caller's own.
 *  5. capset() with all three sets empty: the inheritable set survives setresuid otherwise
 *     (CVE-2022-27650 was exactly a non-empty inheritable set), and in a user namespace this
 *     is what removes the namespace's full set.
 *  6. capget() to verify: a kernel or a seccomp policy that silently ignored a step must not
 *     let the command start with privileges.
 */
static void drop_privileges(const struct sb_plan *pl)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 } };

	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
					     SECBIT_NO_CAP_AMBIENT_RAISE |
					     SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
		die_step(pl, SB_STEP_CAPS, errno, "securebits");
	for (int c = 0;; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL && c > 0)
			break;
		die_step(pl, SB_STEP_CAPS, errno, "bounding set");
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		die_step(pl, SB_STEP_CAPS, errno, "ambient set");
	if (!pl->userns) {
		gid_t g = pl->gid;

		/* A run_as caller's groups (cordond's member), else the run's gid alone. */
		if (pl->groups ? syscall(SYS_setgroups, pl->ngroups, pl->groups) < 0
			       : syscall(SYS_setgroups, 1, &g) < 0)
			die_step(pl, SB_STEP_IDENTITY, errno, "setgroups");
		if (syscall(SYS_setresgid, pl->gid, pl->gid, pl->gid) < 0)
			die_step(pl, SB_STEP_IDENTITY, errno, "setresgid");
		if (syscall(SYS_setresuid, pl->uid, pl->uid, pl->uid) < 0)
			die_step(pl, SB_STEP_IDENTITY, errno, "setresuid");
	}
	if (syscall(SYS_getuid) == 0 || syscall(SYS_geteuid) == 0)
		die_step(pl, SB_STEP_IDENTITY, EPERM, "still uid 0");
	if (syscall(SYS_capset, &hdr, data) < 0)
		die_step(pl, SB_STEP_CAPS, errno, "capset");
	if (syscall(SYS_capget, &hdr, data) < 0)
		die_step(pl, SB_STEP_CAPS, errno, "capget");
	if (data[0].effective | data[0].permitted | data[0].inheritable | data[1].effective |
	    data[1].permitted | data[1].inheritable)
		die_step(pl, SB_STEP_CAPS, EPERM, "capabilities left");
	/* Back to non-dumpable: a credential change may have reset it. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/*
 * execvp() without its allocations: PATH comes from the command's environment (sandbox.c).
 * Two ways to go on after a failed execve:
 *  - glibc's (the fast path's program): stop at any error but EACCES, ENOENT, ENOTDIR and
 *    the like, report EACCES if one was seen, else ENOENT. Whatever fails, dash runs the
 *    script after all and decides (init.c falls back to it), so this only has to be cheap;
 *  - Python's (the command's own argv[0], as AG2's subprocess.run looks it up: CPython's
 *    _posixsubprocess child_exec): try every entry whatever the error, and report the first
 *    error that is neither ENOENT nor ENOTDIR, else the last entry's. So a `sh` on PATH that
 *    cannot be run (ENOEXEC) is passed over for the next one, and PATH=/etc/passwd reports
 *    ENOTDIR (NotADirectoryError), where glibc would stop, or say ENOENT.
 */
static void exec_lookup(const struct sb_plan *pl, char *const argv[], char *const envp[],
			bool python)
{
	const char *file = argv[0], *p = pl->path_env;
	char buf[PATH_MAX];
	bool eacces = false;
	int first = 0; /* python: the first error that is neither ENOENT nor ENOTDIR */

	if (!file || (!*file && !python)) {
		errno = ENOENT;
		return;
	}
	if (strchr(file, '/')) {
		execve(file, argv, envp);
		return;
	}
	for (;;) {
		const char *end = strchrnul(p, ':');
		size_t dl = (size_t)(end - p);

		if (dl + strlen(file) + 2 < sizeof(buf)) {
			if (dl == 0) {
				buf[0] = '\0';
			} else {
				memcpy(buf, p, dl);
				buf[dl] = '/';
				buf[dl + 1] = '\0';
			}
			sb_strlcat(buf, file, sizeof(buf));
			execve(buf, argv, envp);
		} else {
			errno = ENAMETOOLONG; /* what execve would have said */
		}
		if (python) {
			if (!first && errno != ENOENT && errno != ENOTDIR)
				first = errno;
		} else {
			switch (errno) {
			case EACCES:
				eacces = true;
				break;
			case ENOENT:
			case ENOTDIR:
			case ESTALE:
			case ENODEV:
			case ETIMEDOUT:
			case ENAMETOOLONG:
				break;
			default:
				return;
			}
		}
		if (!*end)
			break;
		p = end + 1;
	}
	if (python)
		errno = first ? first : errno;
	else
		errno = eacces ? EACCES : ENOENT;
}

static int move_fd(int from, int to)
{
	/* The command's stdio: inherited on purpose. */
	if (from == to)
		return fcntl(to, F_SETFD, 0); /* lint: inherit */
	return dup2(from, to);		      /* lint: inherit */
}

/* The command: stdio, no fd of cordon's, exec. */
static __attribute__((noreturn)) void run_command(const struct sb_plan *pl)
{
	int in = pl->stdin_fd;

	if (in < 0) {
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (in < 0)
			die_step(pl, SB_STEP_STDIO, errno, "/dev/null");
	}
	if (move_fd(in, 0) < 0 || move_fd(pl->stdout_fd, 1) < 0 || move_fd(pl->stderr_fd, 2) < 0)
		die_step(pl, SB_STEP_STDIO, errno, "dup2");
	/*
	 * Every other fd is close-on-exec from here: cordon's own (sockets, the cgroup dirfd, a
	 * relay pipe of another run in the daemon) can never reach the command (CVE-2024-21626 was
	 * a leaked directory fd). CLOEXEC rather than closing, so that the report socket still
	 * works if execve fails; its EOF at exec is what tells the parent the command started.
	 */
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		die_step(pl, SB_STEP_STDIO, errno, "close_range");
	/* cordond's client's umask (the runner's own is cordond's 022). */
	if (pl->cmd_umask >= 0)
		(void)umask((mode_t)pl->cmd_umask);
	if (pl->fast_argv) {
		/* dash keeps an inherited PWD only when it names the current directory. */
		const char *pwd = pl->fast_pwd_env;
		struct stat a, b;

		if (!pwd || pwd[4] != '/' || stat(pwd + 4, &a) < 0 || stat(".", &b) < 0 ||
		    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
			pwd = pl->fast_pwd_cwd;
		pl->fast_envp[pl->fast_pwd] = (char *)pwd;
		/* init reads this once we have exec'd (CLONE_VFORK): it then answers for dash. */
		sb_cmd_direct = 1;
		exec_lookup(pl, pl->fast_argv, pl->fast_envp, false);
		/* Any failure: dash itself, so its message and status are the real ones. */
		sb_cmd_direct = 0;
	}
	exec_lookup(pl, pl->argv, pl->envp, true);
	die_step(pl, SB_STEP_EXEC, errno, pl->argv[0]);
}

static int command_entry(void *arg)
{
	run_command(arg);
}

static void forward_signal(int sig)
{
	pid_t pid = sb_cmd_pid;

	if (pid > 0)
		(void)kill(pid, sig);
}

/* The 64-bit hex mask after "name:\t" in /proc/self/status's text; false if absent. */
static bool status_mask(const char *text, const char *name, uint64_t *ret)
{
	size_t n = strlen(name);
	const char *p = text;
	uint64_t v = 0;
	int digits = 0;

	for (; (p = strstr(p, name)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == ':')
			break;
	if (!p)
		return false;
	for (p += n + 1; *p == '\t' || *p == ' '; p++)
		;
	for (; digits < 16; p++, digits++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
						 : -1;

		if (d < 0)
			break;
		v = v << 4 | (uint64_t)d;
	}
	*ret = v;
	return digits == 16;
}

static void signals_reset(void)
{
	/*
	 * The kernel's struct sigaction, for the raw call: glibc's sigaction() refuses signals
	 * 32 and 33, which it keeps for itself, yet a caller may have them ignored (criterion's
	 * workers do), and an ignored signal survives exec.
	 */
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} dfl = { .handler = SIG_DFL };
	uint64_t ign = 0, cgt = 0, which = ~0ULL;
	char text[4096];
	sigset_t none;
	ssize_t n = -1;
	int fd;

	/*
	 * cordon may ignore SIGPIPE, catch SIGINT (or block signals): neither init nor the
	 * command may inherit that. Only the signals whose disposition is not the default need
	 * a call (SigIgn and SigCgt of /proc/self/status, our new proc): one or a few, not 64.
	 * Without that file, every signal.
	 */
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		(void)close(fd);
	}
	if (n > 0) {
		text[n] = '\0';
		if (status_mask(text, "SigIgn", &ign) && status_mask(text, "SigCgt", &cgt))
			which = ign | cgt;
	}
	for (int s = 1; s <= 64; s++)
		if ((which & (1ULL << (s - 1))) && s != SIGKILL && s != SIGSTOP)
			(void)syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof(dfl.mask));
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * What dash prints when its foreground command dies of a signal (jobs.c, sprint_status): the
 * signal's description as strsignal gives it in the C locale, cut to 31 characters,
 * " (core dumped)" when there is a core, and a newline; nothing for SIGINT and SIGPIPE.
 */
static void dash_signal_line(int fd, int sig, bool core)
{
	char line[64], num[12];
	const char *d = sigdescr_np(sig);
	size_t n = 0, k = 0;

	if (sig == SIGINT || sig == SIGPIPE)
		return;
	if (d) {
		n = sb_strlcpy(line, d, 32);
	} else {
		unsigned v;

		if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
			n = sb_strlcpy(line, "Real-time signal ", sizeof(line));
			v = (unsigned)(sig - SIGRTMIN);
		} else {
			n = sb_strlcpy(line, "Unknown signal ", sizeof(line));
			v = (unsigned)sig;
		}
		do
			num[k++] = (char)('0' + v % 10);
		while ((v /= 10) != 0);
		while (k)
			line[n++] = num[--k];
		line[n] = '\0';
	}
	if (n > 31)
		n = 31;
	line[n] = '\0';
	if (core)
		n = sb_strlcat(line, " (core dumped)", sizeof(line));
	line[n++] = '\n';
	(void)!write(fd, line, n);
}

/* Close every fd but a and b (either may be -1). */
static void close_all_but(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;
	unsigned from = 0;

	if (lo == hi)
		lo = -1;
	if (lo >= 0) {
		if (lo > 0)
			(void)syscall(SYS_close_range, 0, (unsigned int)lo - 1, 0);
		from = (unsigned int)lo + 1;
	}
	if (hi >= 0) {
		if ((unsigned int)hi > from)
			(void)syscall(SYS_close_range, from, (unsigned int)hi - 1, 0);
		from = (unsigned int)hi + 1;
	}
	(void)syscall(SYS_close_range, from, ~0U, 0);
}

static __attribute__((noreturn)) void init_loop(const struct sb_plan *pl, pid_t cmd, int err_fd)
{
	int st, code;
	pid_t r;

	for (;;) {
		r = waitpid(-1, &st, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			_exit(125); /* ECHILD: cannot happen while the command is unreaped */
		}
		if (r != cmd)
			continue; /* an orphan re-parented to us: reaped, forgotten */
		/* Exec'd without sh: report a signal death as dash would have (shfast.c). */
		if (err_fd >= 0 && WIFSIGNALED(st)) {
			dash_signal_line(err_fd, WTERMSIG(st), WCOREDUMP(st));
			st = (128 + WTERMSIG(st)) << 8;
		}
		if (err_fd >= 0)
			(void)close(err_fd);
		/*
		 * The run is over: SIGKILL every other process of the namespace now (we are its
		 * pid 1, so -1 means exactly them), and reap them all, before reporting. Our exit
		 * would do both, but only after the slow teardown of our namespaces, and the
		 * parent may answer and remove the placeholders of absent masked names as soon as
		 * it has the status (cordon_request.teardown). A process with SIGKILL pending is
		 * not done yet: it finishes the system call it is in (a path lookup waiting for
		 * the disk, say) before it dies, and a mkdir of `.bashrc` that looked the name up
		 * after its placeholder went would make it on the host. So nothing of the run may
		 * exist any more, not even dying: every process of the namespace is our child or
		 * becomes one when its parent dies, and ECHILD means none is left. (A fork racing
		 * the kill is refused by the kernel: a task with a fatal signal pending cannot
		 * add a child.)
		 */
		if (getpid() == 1) {
			(void)kill(-1, SIGKILL);
			while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
				;
		}
		/* The exact status for the parent; our own exit code is a fallback. */
		(void)!write(pl->status_fd, &st, sizeof(st));
		code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		_exit(code);
	}
}

/*
 * The child's start, up to its root built: all of it for a run (with_workdir), all but the
 * workdir for a pre-built sandbox, whose run is not known yet (mounts_base).
 */
static void child_begin(const struct sb_plan *pl, bool with_workdir, struct sb_mounts *f)
{
	struct sb_msg m = { 0 };
	mode_t old_umask;

	sb_trace(pl, SB_STEP_START);
	/*
	 * Die with cordon, even when cordon is SIGKILLed. The kernel sends PDEATHSIG from outside
	 * our pid namespace, which is one of the few signals a namespace init cannot ignore; init's
	 * death then takes the whole namespace with it. The parent may already have died between
	 * clone and this prctl: the gate catches that, because a dead parent's end of the gate
	 * pipe reads as EOF instead of the go byte (getppid() is no help: it is 0 for a pid-ns
	 * init).
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		die_step(pl, SB_STEP_GATE, errno, "PR_SET_PDEATHSIG");
	/*
	 * The first gate: the parent is alive and has our pid. A dead parent reads as EOF.
	 */
	gate(pl);
	sb_trace(pl, SB_STEP_GATE);
	/*
	 * A staged network namespace (stage.c) instead of a new one from clone3: entered first,
	 * before anything else is set up, so the rest is as with clone3(CLONE_NEWNET). Its lo is
	 * up already. Our copy of the fd goes: nothing of the command's may hold it.
	 */
	if (pl->netns_fd >= 0) {
		if (setns(pl->netns_fd, CLONE_NEWNET) < 0)
			die_step(pl, SB_STEP_NETNS, errno, "setns");
		(void)close(pl->netns_fd);
		sb_trace(pl, SB_STEP_NETNS);
	}

	if (pl->userns)
		map_ids(pl);
	limits_oom_first();

	/*
	 * Non-dumpable from here until exec (and init for ever): no ptrace attach, no
	 * /proc/<pid>/mem or environ from another process of the same uid, no core dump.
	 */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	old_umask = umask(0); /* modes of /tmp, /dev/shm and the masks exactly as written */
	if (mounts_base(pl, with_workdir, f, &m) < 0)
		die(pl, &m, 125);
	(void)umask(old_umask);

	if (sethostname("cordon", 6) < 0)
		die_step(pl, SB_STEP_HOSTNAME, errno, "cordon");
	if (pl->netns && pl->netns_fd < 0 && !pl->netns_at_gate2) {
		if (sb_loopback_up() < 0)
			die_step(pl, SB_STEP_LOOPBACK, errno, "lo");
		sb_trace(pl, SB_STEP_LOOPBACK);
	}
}

/* The rest of the root: the workdir, its hides, / read-only (mounts_finish). */
static void child_workdir(const struct sb_plan *pl, bool have_workdir, struct sb_mounts *f)
{
	struct sb_msg m = { 0 };
	mode_t old_umask = umask(0);

	if (mounts_finish(pl, have_workdir, f, &m) < 0)
		die(pl, &m, 125);
	(void)umask(old_umask);
}

static __attribute__((noreturn)) void child_run(const struct sb_plan *pl, bool mem_cg, int netns);

void sb_child_main(const struct sb_plan *pl)
{
	struct sb_mounts f;
	bool mem_cg;
	int netns;

	mounts_init(&f);
	child_begin(pl, true, &f);
	child_workdir(pl, true, &f);

	/*
	 * The second gate: the parent makes the run's cgroup (and network namespace) while we
	 * build the root; we join the cgroup at the gate (v1; on v2 the parent has moved us by
	 * then). Nothing of the command's may run before that is done. The byte says whether the
	 * cgroup bounds memory.
	 */
	mem_cg = gate_join(pl, SB_STEP_GATE2, &netns) == 'c';
	spread_end(pl);
	child_run(pl, mem_cg, netns);
}

/*
 * A pre-built sandbox (sandbox.c, "Pre-built sandboxes"): the root without the workdir, made
 * ahead; then the run's plan, which the parent writes into `arena` (shared with us since our
 * clone) once its request has come, and a message on the gate that names what else comes with
 * it: the cgroup's kind ('c' or 'n'), and the run's stdio and workdir tree (SCM_RIGHTS).
 */
void sb_prebuilt_main(const struct sb_plan *base, void *arena, size_t arena_size)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SB_REQ_MAX_FDS * sizeof(int))];
	} u;
	struct sb_request rq = { 0 };
	struct iovec iov = { .iov_base = &rq, .iov_len = sizeof(rq) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	int fds[SB_REQ_MAX_FDS], nfds = 0, k = 0, netns;
	struct sb_plan *pl = arena;
	struct sb_mounts f;
	struct cmsghdr *cm;
	ssize_t n;

	mounts_init(&f);
	/* Our cgroup, which the parent made for the run to come: joined before anything else. */
	if (gate_join(base, SB_STEP_CGROUP_JOIN, &netns) != 'j' || netns >= 0)
		die_step(base, SB_STEP_CGROUP_JOIN, EPROTO, "no cgroup to join");
	child_begin(base, false, &f);
	do
		n = recvmsg(base->go_fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(rq))
		_exit(125); /* the parent is gone, or dropped us unused */
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len <= CMSG_LEN(sizeof(fds)) && nfds == 0) {
			nfds = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds, CMSG_DATA(cm), (size_t)nfds * sizeof(int));
		}
	if (rq.magic != SB_REQUEST_MAGIC || rq.plan_size > arena_size ||
	    rq.plan_size < sizeof(*pl) || __builtin_popcount(rq.fds) != nfds)
		die_step(base, SB_STEP_GATE2, EPROTO,
			 "a malformed request for a pre-built sandbox");
	/* Ours, not the plan's: the sockets and pipe made with us, the fds that came just now. */
	pl->report_fd = base->report_fd;
	pl->go_fd = base->go_fd;
	pl->status_fd = base->status_fd;
	pl->netns_fd = -1;
	pl->netns_at_gate2 = false;
	pl->netns = base->netns;
	pl->userns = false;
	pl->stdin_fd = rq.fds & SB_REQ_STDIN ? fds[k++] : -1;
	pl->stdout_fd = rq.fds & SB_REQ_STDOUT ? fds[k++] : -1;
	pl->stderr_fd = rq.fds & SB_REQ_STDERR ? fds[k++] : -1;
	pl->wd_tree_fd = rq.fds & SB_REQ_WD_TREE ? fds[k++] : -1;
	if (pl->stdout_fd < 0 || pl->stderr_fd < 0)
		die_step(base, SB_STEP_GATE2, EPROTO, "a request without stdout or stderr");
	sb_trace(pl, SB_STEP_GATE);
	child_workdir(pl, false, &f);
	sb_trace(pl, SB_STEP_GATE2);
	child_run(pl, rq.mem_cg == 'c', -1);
}

static void child_run(const struct sb_plan *pl, bool mem_cg, int netns)
{
	static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	pid_t pid;
	int r, err_fd;

	/*
	 * The network namespace the parent made meanwhile (lo up): entered before anything of
	 * the command's can exist. None given when one is due: refuse to go on in the host's.
	 */
	if (pl->netns_at_gate2) {
		if (netns < 0)
			die_step(pl, SB_STEP_NETNS, EPROTO,
				 "no network namespace at the second gate");
		if (setns(netns, CLONE_NEWNET) < 0)
			die_step(pl, SB_STEP_NETNS, errno, "setns");
		sb_trace(pl, SB_STEP_NETNS);
	}
	if (netns >= 0)
		(void)close(netns);

	/*
	 * A cgroup namespace rooted at the cgroup we are now in (the run's), so
	 * /proc/self/cgroup shows "/" and nothing of the host's hierarchy.
	 */
	if (unshare(CLONE_NEWCGROUP) < 0)
		die_step(pl, SB_STEP_CGROUPNS, errno, "unshare");
	sb_trace(pl, SB_STEP_CGROUPNS);

	/*
	 * rlimits only lower limits, so they need no privilege; init carries them too. No cgroup
	 * (an ordinary user on a host that delegates none): in our own user namespace
	 * RLIMIT_NPROC counts only this run's processes, so it stands in for the pids limit.
	 */
	r = limits_apply(&pl->limits, mem_cg, !mem_cg && pl->userns);
	if (r < 0)
		die_step(pl, SB_STEP_RLIMITS, -r, "setrlimit");
	sb_trace(pl, SB_STEP_RLIMITS);
	if (mounts_proc_readonly() < 0)
		die_step(pl, SB_STEP_PROC_MASK, errno, "/proc read-only");

	drop_privileges(pl);
	/*
	 * Changing uid or gid clears the parent-death signal (the kernel's rule for credential
	 * changes), so arm it again, then make sure the parent did not die in between: it keeps
	 * its end of the gate open until our exec, so a hang-up there means it is gone.
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		die_step(pl, SB_STEP_IDENTITY, errno, "PR_SET_PDEATHSIG");
	{
		struct pollfd pfd = { .fd = pl->go_fd, .events = POLLIN };

		if (poll(&pfd, 1, 0) != 0)
			_exit(125);
		(void)close(pl->go_fd);
	}
	sb_trace(pl, SB_STEP_IDENTITY);

	/*
	 * A new session: no controlling terminal, so TIOCSTI into cordon's terminal is refused by
	 * the kernel (bubblewrap CVE-2017-5226) before seccomp even sees it.
	 */
	if (setsid() < 0)
		die_step(pl, SB_STEP_IDENTITY, errno, "setsid");

	/*
	 * no_new_privs: setuid/setgid bits and file capabilities are inert from here on (a
	 * setuid copy of a shell stays our uid), and it is what allows an unprivileged process to
	 * load seccomp and Landlock.
	 */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die_step(pl, SB_STEP_NO_NEW_PRIVS, errno, "prctl");

	/* Landlock after pivot_root: its rules name paths of the new root. */
	if (pl->landlock_abi > 0) {
		r = landlock_apply(pl->ll_ro, pl->ll_rw, pl->landlock_abi);
		if (r < 0)
			die_step(pl, SB_STEP_LANDLOCK, -r, "landlock_restrict_self");
		sb_trace(pl, SB_STEP_LANDLOCK);
	}

	signals_reset();

	/*
	 * seccomp last: every call above (mounts, setresuid, prctl) may be in its deny list.
	 * What remains after it is fork, wait, dup2, close_range and execve.
	 */
	r = seccomp_prog_load(pl->bpf);
	if (r < 0)
		die_step(pl, SB_STEP_SECCOMP, -r, "seccomp");
	sb_trace(pl, SB_STEP_SECCOMP);

	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		struct sigaction sa = { .sa_handler = forward_signal };

		(void)sigaction(forwarded[i], &sa, NULL);
	}
	/*
	 * The command's process, vfork-style (posix_spawn's trick): CLONE_VM shares init's
	 * memory instead of copying its page tables, CLONE_VFORK suspends init until the child
	 * has exec'd (or died), and the child runs on its own static stack so it never touches
	 * init's frames. On this kind of VM a fork plus its copy-on-write faults costs about half
	 * a millisecond; this costs almost nothing. Until execve the child only makes system
	 * calls; its failure report goes straight to the parent on the report socket.
	 */
	pid = clone(command_entry, sb_cmd_stack + sizeof(sb_cmd_stack),
		    CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)pl);
	if (pid < 0)
		die_step(pl, SB_STEP_FORK, errno, "clone");
	sb_cmd_pid = pid;

	/*
	 * init keeps only the status pipe: the command's stdio (so the relay sees EOF when the
	 * command's side closes), the report socket (its EOF is the command's exec) and cordon's
	 * own stdio are closed here. A command exec'd without sh keeps its stderr open in init
	 * too, where dash would have written about a signal death (the relay's EOF then comes
	 * when init exits, right after the command, as it came when sh exited).
	 */
	err_fd = sb_cmd_direct ? pl->stderr_fd : -1;
	close_all_but(pl->status_fd, err_fd);
	init_loop(pl, pid, err_fd);
}
