/* SPDX-License-Identifier: MIT */
/*
 * cordon's side of the in-container agent (agent.h): the socket it connects to, and running a
 * command through it with the output relayed over two pipes straight into the captures.
 *
 * Security notes, step by step:
 * - The socket lives in dir/d/s where dir is a fresh mkdtemp directory (0700): no other host
 *   user can reach it. dir/d (0711) is what the container sees, bind-mounted read-only at
 *   /.cordon, so that the container's user (any uid) can reach the socket (0666) inside it.
 *   dir/d is held open: the socket is made and removed through it, and before a restart
 *   (dockerd resolves the path again) the path must still name it (a /tmp cleaner may have
 *   removed it, and another user made their own).
 * - The first connection is accepted only from a process in the container's cgroup, and the
 *   socket file is removed right after: nothing can connect later.
 * - What the agent sends is read as fixed 8-byte messages without ever accepting file
 *   descriptors (recv() with no control buffer: the kernel drops any it sends). A wrong
 *   message or a silent agent ends in a deadline, never in unbounded memory or a hang.
 * - The pipes' write ends go to the agent; cordon keeps only the read ends.
 */
#define _GNU_SOURCE
#include "backends/docker/agent.h"
#include "backends/docker/usage.h"
#include "runtime/capture.h"
#include "runtime/fsutil.h"
#include "runtime/relay.h"
#include "runtime/cleanup.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANCEL_POLL_MS 20
/* How long a killed command may take to be reported dead before the container is restarted. */
#define KILL_WAIT_MS 2000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* poll(2)'s timeout for what is left of a wait: a timeout of weeks (up to 1e9 s) would
 * overflow the int, and an endless poll would never look at the cancel flag again. */
static int poll_ms(double left)
{
	return left <= 0 ? 0 : left < INT_MAX - 1 ? (int)left + 1 : INT_MAX;
}

/* ---- which binary ---- */

/* Statically linked: no PT_INTERP (the image has its own libc, or none). */
static bool elf_static(int fd)
{
	Elf64_Ehdr eh;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 128)
		return false;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return false;
		if (ph.p_type == PT_INTERP)
			return false;
	}
	return true;
}

/*
 * Root's, no one else may write it, and nobody but root can change what its path names
 * (fsutil_path_root_controlled: a sticky directory of root's, /tmp, is fine, since others
 * cannot rename what is in it).
 */
static bool root_only(const char *path)
{
	struct stat st;
	cordon_error e;

	return fsutil_path_root_controlled(path, &st, &e) == 0 && S_ISREG(st.st_mode) &&
	       st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

static char *usable(const char *path)
{
	char real[PATH_MAX];
	_cleanup_close_ int fd = -1;

	if (!realpath(path, real))
		return NULL;
	if (geteuid() == 0 && !root_only(real))
		return NULL;
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !elf_static(fd))
		return NULL;
	return strdup(real);
}

char *agent_binary(void)
{
	char self[PATH_MAX], other[PATH_MAX + 16];
	const char *env = getenv("CORDON_DOCKER_AGENT");
	ssize_t n;
	char *r, *slash;

	/* Programs other than cordon and cordond that use the backend: tests, benchmarks. */
	if (env && *env)
		return usable(env);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = '\0';
	r = usable(self);
	if (r)
		return r;
	/* cordond (dynamic): the CLI next to it (a build tree), else where make install puts
	 * it, as its runners do (runtime/daemon/runners.c). */
	slash = strrchr(self, '/');
	if (slash) {
		*slash = '\0';
		(void)snprintf(other, sizeof(other), "%s/cordon", self);
		r = usable(other);
		if (r)
			return r;
	}
	(void)snprintf(other, sizeof(other), "%s/cordon", CORDON_BINDIR);
	return usable(other);
}

/* ---- the socket ---- */

/* dir/d, opened without following any symlink on the way (O_PATH). */
static int open_sub(const char *dir)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	char p[PATH_MAX];

	if ((size_t)snprintf(p, sizeof(p), "%s/d", dir) >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return (int)syscall(SYS_openat2, AT_FDCWD, p, &how, sizeof(how));
}

int agent_host_listen(struct agent_host *a, cordon_error *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (!a->dir) {
		/*
		 * In /tmp, never $TMPDIR: in a sticky directory nobody else can rename or replace
		 * ours, and nothing inside it (0700) is reachable by others, so the paths below
		 * (bind, chmod, dockerd's mount source) cannot be swapped under us. dockerd must
		 * see it too: a private /tmp makes the container fail to start, and the exec API
		 * is used instead.
		 */
		char *d = strdup("/tmp/cordon-agent-XXXXXX");

		if (!d)
			return cordon_err(e, ENOMEM, "out of memory");
		/*
		 * Marked and held as a temp workdir is (fsutil.h): a cordon killed before it made
		 * the container (or before a container of its could name it to `cordon gc`) left
		 * the directory, the agent's 3 MB copy included, for good; now the next run's
		 * sweep, or cordond's start, removes it once nobody holds it.
		 */
		if (fsutil_mkdtemp_marked(d) < 0) {
			int err = errno;

			free(d);
			return cordon_err(e, err, "docker: agent directory");
		}
		a->dir = d;
		a->hold = fsutil_temp_hold(a->dir, e);
		if (a->hold < 0)
			return cordon_err_prefix(e, "docker: agent directory");
		/* What the container sees: searchable by its user (any uid), not listable. */
		if (asprintf(&d, "%s/d", a->dir) < 0)
			return cordon_err(e, ENOMEM, "out of memory");
		if (mkdir(d, 0700) < 0 || chmod(d, 0711) < 0) {
			int err = errno;

			free(d);
			return cordon_err(e, err, "docker: agent directory");
		}
		free(d);
		a->dfd = open_sub(a->dir);
		if (a->dfd < 0)
			return cordon_err(e, errno, "docker: agent directory");
	}
	/*
	 * The socket is made, chmod'ed and removed through the directory held, never by its path
	 * again: once that path was removed (a /tmp cleaner), another user could have made their
	 * own directory there, and root would act in it (a symlink swapped in for the socket
	 * between bind and chmod would have made any file 0666).
	 */
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/" AGENT_SOCK_NAME,
			     a->dfd) >= sizeof(sa.sun_path))
		return cordon_err(e, ENAMETOOLONG, "docker: agent socket path");
	(void)unlinkat(a->dfd, AGENT_SOCK_NAME, 0);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    fchmodat(a->dfd, AGENT_SOCK_NAME, 0666, 0) < 0 || listen(fd, 1) < 0)
		return cordon_err(e, errno, "docker: agent socket");
	if (a->lfd >= 0)
		close(a->lfd);
	a->lfd = TAKE_FD(fd);
	return 0;
}

const char *agent_host_mount_dir(const struct agent_host *a, char *buf, size_t n)
{
	if (!a->dir || (size_t)snprintf(buf, n, "%s/d", a->dir) >= n)
		return NULL;
	return buf;
}

int agent_host_exec_copy(struct agent_host *a, const char *exe, char *buf, size_t n,
			 cordon_error *e)
{
	_cleanup_close_ int in = -1, dir = -1, out = -1;
	struct statvfs vfs;
	struct stat st;
	off_t left;

	if (!a->dir || (size_t)snprintf(buf, n, "%s/" AGENT_COPY_NAME, a->dir) >= n)
		return cordon_err(e, ENAMETOOLONG, "docker: the agent's copy");
	if (!agent_host_dir_intact(a, e))
		return -1;
	dir = open(a->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	in = open(exe, O_RDONLY | O_CLOEXEC);
	if (dir < 0 || in < 0 || fstat(in, &st) < 0)
		return cordon_err(e, errno, "docker: the agent's copy of %s", exe);
	if (fstatvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC))
		return cordon_err(
			e, 0,
			"docker: %s is mounted noexec: the execute-only copy of the agent "
			"cannot be run from it",
			a->dir);
	(void)unlinkat(dir, AGENT_COPY_NAME, 0);
	out = openat(dir, AGENT_COPY_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     0700);
	if (out < 0)
		return cordon_err(e, errno, "docker: the agent's copy %s", buf);
	for (left = st.st_size; left > 0;) {
		ssize_t k = sendfile(out, in, NULL, (size_t)(left < (1 << 30) ? left : (1 << 30)));

		if (k <= 0)
			return cordon_err(e, k < 0 ? errno : EIO, "docker: the agent's copy %s",
					  buf);
		left -= k;
	}
	/* Runnable by any uid, readable by none: its process is never dumpable (agent.h). */
	if (fchmod(out, 0111) < 0)
		return cordon_err(e, errno, "docker: the agent's copy %s", buf);
	return 0;
}

bool agent_host_dir_intact(const struct agent_host *a, cordon_error *e)
{
	_cleanup_close_ int fd = a->dir ? open_sub(a->dir) : -1;
	struct stat now, held;

	if (fd >= 0 && a->dfd >= 0 && fstat(fd, &now) == 0 && fstat(a->dfd, &held) == 0 &&
	    now.st_dev == held.st_dev && now.st_ino == held.st_ino)
		return true;
	cordon_err(e, 0,
		   "docker: the agent's directory %s was removed or replaced while its container "
		   "ran (a /tmp cleaner?): the container cannot be started again (it is removed)",
		   a->dir ? a->dir : "?");
	return false;
}

static void remove_socket(const struct agent_host *a)
{
	if (a->dfd >= 0)
		(void)unlinkat(a->dfd, AGENT_SOCK_NAME, 0);
}

int agent_host_accept(struct agent_host *a, const char *id, int timeout_ms, cordon_error *e)
{
	struct pollfd p = { .fd = a->lfd, .events = POLLIN };
	double end = now_ms() + timeout_ms;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	int fd = -1, rc = -1;

	if (a->lfd < 0)
		return cordon_err(e, EINVAL, "docker: the agent socket is not listening");
	for (;;) {
		double left = end - now_ms();
		int n;

		if (left <= 0) {
			cordon_err(e, ETIMEDOUT, "docker: the agent did not connect");
			goto out;
		}
		n = poll(&p, 1, (int)left + 1);
		if (n < 0 && errno != EINTR) {
			cordon_err(e, errno, "docker: poll the agent socket");
			goto out;
		}
		if (n > 0)
			break;
	}
	fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		cordon_err(e, errno, "docker: accept the agent");
		goto out;
	}
	/* Only the container's own process (only it and this user can reach the socket anyway). */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 ||
	    !docker_cg_pid_in(cred.pid, id)) {
		cordon_err(e, EPERM, "docker: the agent's peer is not in the container");
		close(fd);
		goto out;
	}
	if (a->fd >= 0)
		close(a->fd);
	a->fd = fd;
	rc = 0;
out:
	remove_socket(a);
	close(a->lfd);
	a->lfd = -1;
	return rc;
}

void agent_host_disconnect(struct agent_host *a)
{
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
}

void agent_host_remove_dir(const char *dir)
{
	const char *base = strrchr(dir, '/');
	_cleanup_close_ int xfd = -1, dfd = -1;
	struct stat st;

	if (dir[0] != '/' || !base || strncmp(base + 1, "cordon-agent-", 13) || strstr(dir, "/.."))
		return;
	/* One that agent_host_listen made (this user's, 0700), not one another user made under
	 * that name once it was gone. */
	xfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (xfd < 0 || fstat(xfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077))
		return;
	dfd = openat(xfd, "d", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0)
		(void)unlinkat(dfd, AGENT_SOCK_NAME, 0);
	(void)unlinkat(xfd, "d", AT_REMOVEDIR);
	(void)unlinkat(xfd, AGENT_COPY_NAME, 0);
	(void)rmdir(dir);
}

void agent_host_free(struct agent_host *a)
{
	cordon_error e;

	agent_host_disconnect(a);
	if (a->lfd >= 0)
		close(a->lfd);
	a->lfd = -1;
	remove_socket(a);
	/* By its path only while that is still ours (root's, 0700: nobody else can change it),
	 * or when the listen that made it failed before holding it. */
	if (a->dir && (a->dfd < 0 || agent_host_dir_intact(a, &e))) {
		char p[PATH_MAX];

		if ((size_t)snprintf(p, sizeof(p), "%s/d", a->dir) < sizeof(p))
			(void)rmdir(p);
		if ((size_t)snprintf(p, sizeof(p), "%s/" AGENT_COPY_NAME, a->dir) < sizeof(p))
			(void)unlink(p);
		(void)rmdir(a->dir);
	}
	if (a->dfd >= 0)
		close(a->dfd);
	a->dfd = -1;
	fsutil_temp_release(a->hold, false);
	a->hold = -1;
	free(a->dir);
	a->dir = NULL;
}

/* ---- running a command ---- */

/* RUN's payload (agent.c parses it); NULL with errno E2BIG past AGENT_RUN_MAX. The message
 * header comes first, so that one buffer is sent. */
static char *run_message(const struct agent_run *r, size_t *ret_len)
{
	size_t argc = 0, envc = 0, len = 0;
	char head[48];
	int hl;
	char *buf, *p;

	while (r->argv[argc])
		len += strlen(r->argv[argc++]) + 1;
	while (r->envv && r->envv[envc])
		len += strlen(r->envv[envc++]) + 1;
	hl = snprintf(head, sizeof(head), "%zu%c%zu%c", argc, 0, envc, 0);
	len += (size_t)hl + strlen(r->nonce) + 1 + strlen(r->cwd) + 1;
	if (len > AGENT_RUN_MAX) {
		errno = E2BIG;
		return NULL;
	}
	buf = malloc(sizeof(struct agent_msg) + len);
	if (!buf)
		return NULL;
	memcpy(buf, &(struct agent_msg){ .type = AGENT_RUN, .arg = (uint32_t)len },
	       sizeof(struct agent_msg));
	p = buf + sizeof(struct agent_msg);
	memcpy(p, head, (size_t)hl);
	p += hl;
	p = stpcpy(p, r->nonce) + 1;
	p = stpcpy(p, r->cwd) + 1;
	for (size_t i = 0; i < argc; i++)
		p = stpcpy(p, r->argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		p = stpcpy(p, r->envv[i]) + 1;
	*ret_len = sizeof(struct agent_msg) + len;
	return buf;
}

static int wait_out(int fd, double end)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	double left = end - now_ms();

	if (left <= 0)
		return -1;
	return poll(&p, 1, (int)left + 1) < 0 && errno != EINTR ? -1 : 0;
}

/* The message, with the two pipes' write ends on its first byte. */
static int send_run(int fd, const char *msg, size_t len, int out_w, int err_w)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[2] = { out_w, err_w };
	/* An agent that does not read is stuck: give up well before any command's deadline. */
	double end = now_ms() + 5000;
	size_t sent = 0;

	fsutil_attach_fds(&mh, u.buf, sizeof(u.buf), fds, 2);
	while (sent < len) {
		ssize_t n = sent ? send(fd, msg + sent, len - sent, MSG_NOSIGNAL)
				 : sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (wait_out(fd, end) < 0)
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		sent += (size_t)n;
	}
	return 0;
}

/* Read what is there, at most a few buffers (a fast writer must not keep us from the
 * deadline); false at EOF or on an error (the pipe is then done). */
static bool relay(struct relay_src *src, char *buf, struct capture *c)
{
	for (int i = 0; i < 4;) {
		ssize_t n = relay_src_read(src, buf, RELAY_BUF_SIZE);

		if (n > 0) {
			capture_feed(c, buf, (size_t)n);
			if ((size_t)n < RELAY_BUF_SIZE)
				return true;
			i++;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN;
	}
	return true;
}

static int exit_code(uint32_t st)
{
	int s = (int)st;

	if (WIFEXITED(s))
		return WEXITSTATUS(s);
	if (WIFSIGNALED(s))
		return 128 + WTERMSIG(s);
	return 125;
}

int agent_host_run(struct agent_host *a, struct agent_run *r, cordon_error *e)
{
	_cleanup_free_ char *msg = NULL;
	_cleanup_(relay_buf_freep) char *buf = NULL;
	_cleanup_close_ int out_r = -1, out_w = -1, err_r = -1, err_w = -1;
	/* Through bounce pipes (runtime/relay.h): the command's copies and ours overlap. */
	_cleanup_(relay_src_free) struct relay_src src_out = RELAY_SRC_NONE,
						   src_err = RELAY_SRC_NONE;
	/* A flood gets a reader of its own (runtime/relay.h), stopped on every return. */
	_cleanup_(relay_thread_stop) struct relay_thread out_thread = { .running = false },
							 err_thread = { .running = false };
	struct agent_msg m;
	size_t len = 0, have = 0;
	bool exited = false, killing = false;
	double kill_end = 0, drain_end = 0;
	int pp[2];

	r->code = 0;
	r->timed_out = r->cancelled = false;
	if (a->fd < 0)
		return AGENT_UNUSABLE;
	msg = run_message(r, &len);
	if (!msg)
		return errno == E2BIG ? AGENT_UNUSABLE : cordon_err(e, ENOMEM, "out of memory");
	buf = relay_buf_new();
	if (!buf)
		return cordon_err(e, ENOMEM, "out of memory");
	if (pipe2(pp, O_CLOEXEC) < 0)
		return cordon_err(e, errno, "docker: pipe");
	out_r = pp[0], out_w = pp[1];
	if (pipe2(pp, O_CLOEXEC) < 0)
		return cordon_err(e, errno, "docker: pipe");
	err_r = pp[0], err_w = pp[1];
	/*
	 * Writable by the container's user, whoever that is (a name only the image resolves,
	 * or an id dockerd remaps): a pipe is its maker's, 0600, and reopening one by a path
	 * (`echo x > /dev/stdout`, `> /dev/stderr`, /proc/self/fd/1) checks that mode, so as
	 * root's these were "Permission denied" to the command (red team). Only a process with
	 * ptrace access to a holder reaches a pipe by a path: cordon, the agent and the command.
	 * The local backend gives its pipes to the command's uid instead (sandbox.c, prep_stdio).
	 */
	if (fchmod(out_w, 0622) < 0 || fchmod(err_w, 0622) < 0)
		return cordon_err(e, errno, "docker: pipe mode");
	(void)fcntl(out_r, F_SETPIPE_SZ, RELAY_PIPE_SIZE);
	(void)fcntl(err_r, F_SETPIPE_SZ, RELAY_PIPE_SIZE);
	if (fcntl(out_r, F_SETFL, O_NONBLOCK) < 0 || fcntl(err_r, F_SETFL, O_NONBLOCK) < 0)
		return cordon_err(e, errno, "docker: pipe");
	relay_src_init_lazy(&src_out, out_r);
	relay_src_init_lazy(&src_err, err_r);
	if (send_run(a->fd, msg, len, out_w, err_w) < 0) {
		/* Gone, or stuck: the exec API may still work (when the container runs). */
		agent_host_disconnect(a);
		return AGENT_UNUSABLE;
	}
	closep(&out_w), out_w = -1;
	closep(&err_w), err_w = -1;

	for (;;) {
		struct pollfd p[3];
		int np = 0, io = -1, ie = -1, ia = -1, tmo;
		double now = now_ms(), wake;

		if (exited &&
		    (((out_r < 0 || out_thread.running) && (err_r < 0 || err_thread.running)) ||
		     now >= drain_end))
			break;
		if (!exited && !killing) {
			if (r->cancel && *r->cancel)
				r->cancelled = true;
			else if (now >= r->deadline)
				r->timed_out = true;
			if (r->cancelled || r->timed_out) {
				struct agent_msg k = { .type = AGENT_KILL };

				killing = true;
				kill_end = now + KILL_WAIT_MS;
				if (send(a->fd, &k, sizeof(k), MSG_NOSIGNAL) !=
				    (ssize_t)sizeof(k)) {
					agent_host_disconnect(a);
					r->code = 137;
					return AGENT_STUCK;
				}
			}
		}
		if (killing && !exited && now >= kill_end) {
			agent_host_disconnect(a);
			r->code = 137;
			return AGENT_STUCK;
		}
		wake = exited ? drain_end : killing ? kill_end : r->deadline;
		tmo = poll_ms(wake - now);
		if (r->cancel && !killing && tmo > CANCEL_POLL_MS)
			tmo = CANCEL_POLL_MS;
		if (out_r >= 0 && !out_thread.running) {
			io = np;
			p[np++] = (struct pollfd){ .fd = out_r, .events = POLLIN };
		}
		if (err_r >= 0 && !err_thread.running) {
			ie = np;
			p[np++] = (struct pollfd){ .fd = err_r, .events = POLLIN };
		}
		if (!exited) {
			ia = np;
			p[np++] = (struct pollfd){ .fd = a->fd, .events = POLLIN };
		}
		if (poll(p, (nfds_t)np, tmo) < 0) {
			if (errno == EINTR)
				continue;
			return cordon_err(e, errno, "docker: poll");
		}
		if (io >= 0 && p[io].revents) {
			if (!relay(&src_out, buf, r->out))
				closep(&out_r), out_r = -1;
			else
				(void)relay_flood_to_thread(&out_thread, &src_out, r->out);
		}
		if (ie >= 0 && p[ie].revents) {
			if (!relay(&src_err, buf, r->err))
				closep(&err_r), err_r = -1;
			else
				(void)relay_flood_to_thread(&err_thread, &src_err, r->err);
		}
		if (ia < 0 || !p[ia].revents)
			continue;
		/* No control buffer: file descriptors the agent might send are dropped. */
		ssize_t n = recv(a->fd, (char *)&m + have, sizeof(m) - have, 0);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			/* The agent is gone, and with it the container (docker-init exits when
			 * its child does): its processes are being killed. */
			agent_host_disconnect(a);
			exited = true;
			r->code = 137;
			drain_end = now_ms() + (killing ? 0 : RELAY_DRAIN_MS);
			continue;
		}
		have += (size_t)n;
		if (have < sizeof(m))
			continue;
		have = 0;
		if (m.type == AGENT_EXITED) {
			r->code = exit_code(m.arg);
		} else if (m.type == AGENT_FAILED) {
			char line[160];
			int k = snprintf(line, sizeof(line),
					 "cordon: cannot start the command: %s\n",
					 strerror((int)(m.arg < 4096 ? m.arg : EIO)));

			capture_feed(r->err, line, (size_t)k);
			r->code = 126; /* as Docker's exec reports a failed start */
		} else {
			/* Not what an agent says: whatever it is, the container is restarted. */
			agent_host_disconnect(a);
			r->code = 137;
			return AGENT_STUCK;
		}
		exited = true;
		drain_end = now_ms() + (killing ? 0 : RELAY_DRAIN_MS);
	}
	/* The readers' EOF: every writer gone, which a process left behind may delay. */
	relay_thread_finish(&out_thread, exited ? (int)(drain_end - now_ms()) : 0);
	relay_thread_finish(&err_thread, exited ? (int)(drain_end - now_ms()) : 0);
	return AGENT_RAN;
}
