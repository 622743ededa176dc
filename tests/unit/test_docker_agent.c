/* SPDX-License-Identifier: MIT */
/*
 * The Docker backend's agent protocol without Docker (backends/docker/agent*.c):
 * - cordon's side against fake agents that misbehave (an fd sent back, a wrong message,
 *   silence, a close, a failed start): it must stay bounded and never take a descriptor;
 * - the real agent (docker_agent_main, forked here on the host) running commands: output,
 *   exit codes, the environment on top of its own, a missing cwd, and the timeout kill of a
 *   process group with a setsid escapee.
 */
#define _GNU_SOURCE
#include "backends/docker/agent.h"
#include "runtime/capture.h"
#include "runtime/fsutil.h"
#include "tests/lib/testutil.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* ---- fake agents ---- */

enum fake_kind {
	FAKE_OUTPUT_EXIT3, /* writes to both pipes, exits 3 */
	FAKE_SIGKILLED,	   /* reports a SIGKILL death */
	FAKE_SENDS_FD,	   /* sends a descriptor with its EXITED */
	FAKE_GARBAGE,	   /* an unknown message type */
	FAKE_SILENT,	   /* never answers, not even to KILL */
	FAKE_CLOSES,	   /* closes the socket */
	FAKE_FAILED,	   /* could not start the command */
};

struct fake {
	int fd;
	enum fake_kind kind;
	char payload[4096];
	size_t payload_len;
	bool got_kill;
};

static void fake_send(int fd, uint32_t type, uint32_t arg, int pass_fd)
{
	struct agent_msg m = { .type = type, .arg = arg };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (pass_fd >= 0)
		fsutil_attach_fds(&mh, u.buf, sizeof(u.buf), &pass_fd, 1);
	(void)sendmsg(fd, &mh, MSG_NOSIGNAL);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	struct agent_msg m;
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	int fds[2] = { -1, -1 };
	struct cmsghdr *c;
	size_t got = 0;

	if (recvmsg(f->fd, &mh, MSG_WAITALL) != (ssize_t)sizeof(m) || m.type != AGENT_RUN)
		return NULL;
	c = CMSG_FIRSTHDR(&mh);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(fds, CMSG_DATA(c), sizeof(fds));
	while (got < m.arg && got < sizeof(f->payload)) {
		ssize_t n = read(f->fd, f->payload + got, m.arg - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	f->payload_len = got;
	switch (f->kind) {
	case FAKE_OUTPUT_EXIT3:
		(void)!write(fds[0], "out\n", 4);
		(void)!write(fds[1], "err\n", 4);
		close(fds[0]);
		close(fds[1]);
		fake_send(f->fd, AGENT_EXITED, 3 << 8, -1);
		break;
	case FAKE_SIGKILLED:
		close(fds[0]);
		close(fds[1]);
		fake_send(f->fd, AGENT_EXITED, SIGKILL, -1);
		break;
	case FAKE_SENDS_FD: {
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

		close(fds[0]);
		close(fds[1]);
		fake_send(f->fd, AGENT_EXITED, 0, devnull);
		close(devnull);
		break;
	}
	case FAKE_GARBAGE:
		fake_send(f->fd, 77, 0, -1);
		/* keeps the pipes open: cordon must not wait for them */
		sleep(1);
		close(fds[0]);
		close(fds[1]);
		break;
	case FAKE_SILENT:
		if (read(f->fd, &m, sizeof(m)) == (ssize_t)sizeof(m) && m.type == AGENT_KILL)
			f->got_kill = true;
		/* no answer; the socket stays open until the test closes it */
		(void)!read(f->fd, &m, sizeof(m));
		close(fds[0]);
		close(fds[1]);
		break;
	case FAKE_CLOSES:
		shutdown(f->fd, SHUT_RDWR);
		close(fds[0]);
		close(fds[1]);
		break;
	case FAKE_FAILED:
		close(fds[0]);
		close(fds[1]);
		fake_send(f->fd, AGENT_FAILED, EAGAIN, -1);
		break;
	}
	return NULL;
}

struct harness {
	struct agent_host a;
	struct fake f;
	pthread_t t;
	struct capture *out, *err;
	struct agent_run r;
	char *argv[4];
	char *envv[3];
	bool joined;
};

static void harness_start(struct harness *h, enum fake_kind kind, double timeout_ms)
{
	int sv[2];
	cordon_error e;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	h->a = (struct agent_host)AGENT_HOST_INIT;
	h->a.fd = sv[0];
	h->joined = false;
	h->f = (struct fake){ .fd = sv[1], .kind = kind };
	cr_assert_eq(capture_new(1000, &h->out, &e), 0);
	cr_assert_eq(capture_new(1000, &h->err, &e), 0);
	h->argv[0] = "sh";
	h->argv[1] = "-c";
	h->argv[2] = "echo hi";
	h->argv[3] = NULL;
	h->envv[0] = "A=1";
	h->envv[1] = "CORDON_EXEC_NONCE=abc";
	h->envv[2] = NULL;
	h->r = (struct agent_run){ .argv = h->argv,
				   .envv = h->envv,
				   .cwd = "/work",
				   .nonce = "abc",
				   .deadline = now_ms() + timeout_ms,
				   .out = h->out,
				   .err = h->err };
	cr_assert_eq(pthread_create(&h->t, NULL, fake_main, &h->f), 0);
}

static void harness_join(struct harness *h)
{
	if (!h->joined)
		pthread_join(h->t, NULL);
	h->joined = true;
}

static void harness_end(struct harness *h)
{
	agent_host_free(&h->a); /* ends a silent fake's last read */
	harness_join(h);
	close(h->f.fd);
	capture_free(h->out);
	capture_free(h->err);
}

static char *text(struct capture *c)
{
	char *s;
	size_t n;
	cordon_error e;

	capture_end(c);
	cr_assert_eq(capture_text(c, &s, &n, &e), 0);
	return s;
}

Test(docker_agent, run_message_is_what_the_agent_parses)
{
	struct harness h;
	cordon_error e;
	static const char want[] = "3\0"
				   "2\0"
				   "abc\0"
				   "/work\0"
				   "sh\0-c\0echo hi\0"
				   "A=1\0CORDON_EXEC_NONCE=abc";

	harness_start(&h, FAKE_OUTPUT_EXIT3, 5000);
	cr_assert_eq(agent_host_run(&h.a, &h.r, &e), AGENT_RAN, "%s", e.msg);
	harness_end(&h);
	cr_assert_eq(h.f.payload_len, sizeof(want));
	cr_assert(!memcmp(h.f.payload, want, sizeof(want)));
}

Test(docker_agent, output_through_the_pipes_and_the_exit_code)
{
	struct harness h;
	cordon_error e;
	char *o, *er;

	harness_start(&h, FAKE_OUTPUT_EXIT3, 5000);
	cr_assert_eq(agent_host_run(&h.a, &h.r, &e), AGENT_RAN, "%s", e.msg);
	cr_assert_eq(h.r.code, 3);
	cr_assert_not(h.r.timed_out);
	o = text(h.out);
	er = text(h.err);
	cr_assert_str_eq(o, "out\n");
	cr_assert_str_eq(er, "err\n");
	free(o);
	free(er);
	harness_end(&h);
}

Test(docker_agent, a_signal_death_is_128_plus_n)
{
	struct harness h;
	cordon_error e;

	harness_start(&h, FAKE_SIGKILLED, 5000);
	cr_assert_eq(agent_host_run(&h.a, &h.r, &e), AGENT_RAN, "%s", e.msg);
	cr_assert_eq(h.r.code, 137);
	harness_end(&h);
}

/* A descriptor the agent sends is never installed in cordon. */
Test(docker_agent, descriptors_from_the_agent_are_dropped)
{
	struct harness h;
	cordon_error e;
	int before;

	harness_start(&h, FAKE_SENDS_FD, 5000);
	before = count_fds();
	cr_assert_eq(agent_host_run(&h.a, &h.r, &e), AGENT_RAN, "%s", e.msg);
	cr_assert_eq(h.r.code, 0);
	harness_join(&h); /* the fake closed its own copy */
	cr_assert_eq(count_fds(), before, "cordon holds a descriptor the agent sent");
	harness_end(&h);
}

/* Not a message an agent sends: the agent is dropped and the container is to be restarted,
 * without waiting for the pipes it still holds. */
Test(docker_agent, a_wrong_message_drops_the_agent)
{
	struct harness h;
	cordon_error e;
	double t0 = now_ms();

	harness_start(&h, FAKE_GARBAGE, 5000);
	cr_assert_eq(agent_host_run(&h.a, &h.r, &e), AGENT_STUCK);
	cr_assert_lt(now_ms() - t0, 900);
	cr_assert_eq(h.r.code, 137);
	cr_assert_eq(h.a.fd, -1);
	harness_end(&h);
}

/* Silent after the timeout's KILL: given up after the kill wait, not hung. */
Test(docker_agent, a_silent_agent_is_given_up)
{
	struct harness h;
	cordon_error e;

	harness_start(&h, FAKE_SILENT, 100);
	cr_assert_eq(agent_host_run(&h.a, &h.r, &e), AGENT_STUCK);
	cr_assert(h.r.timed_out);
	cr_assert_eq(h.a.fd, -1);
	harness_end(&h);
	cr_assert(h.f.got_kill, "the agent was not told to kill");
}

/* The agent gone mid-run: its container is going down with the command (exit 137). */
Test(docker_agent, a_closed_agent_ends_the_run)
{
	struct harness h;
	cordon_error e;

	harness_start(&h, FAKE_CLOSES, 5000);
	cr_assert_eq(agent_host_run(&h.a, &h.r, &e), AGENT_RAN, "%s", e.msg);
	cr_assert_eq(h.r.code, 137);
	cr_assert_eq(h.a.fd, -1);
	harness_end(&h);
}

Test(docker_agent, a_failed_start_is_126_with_the_reason)
{
	struct harness h;
	cordon_error e;
	char *er;

	harness_start(&h, FAKE_FAILED, 5000);
	cr_assert_eq(agent_host_run(&h.a, &h.r, &e), AGENT_RAN, "%s", e.msg);
	cr_assert_eq(h.r.code, 126);
	er = text(h.err);
	cr_assert_str_eq(er,
			 "cordon: cannot start the command: Resource temporarily unavailable\n");
	free(er);
	harness_end(&h);
}

Test(docker_agent, no_agent_is_unusable)
{
	struct agent_host a = AGENT_HOST_INIT;
	struct agent_run r = { 0 };
	cordon_error e;

	cr_assert_eq(agent_host_run(&a, &r, &e), AGENT_UNUSABLE);
}

/* ---- the real agent, forked on the host ---- */

struct real {
	char *dir;
	pid_t pid;
	struct agent_host a;
};

static void real_start(struct real *r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l, c;

	r->dir = tu_tmpdir();
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", r->dir);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(l >= 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(l, 1), 0);
	r->pid = fork();
	cr_assert(r->pid >= 0);
	if (r->pid == 0) {
		char *argv[] = { "__docker-agent", sa.sun_path, NULL };

		setenv("AGENT_OWN", "from-the-container", 1);
		setenv("A", "overridden", 1);
		_exit(docker_agent_main(2, argv));
	}
	c = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	cr_assert(c >= 0);
	close(l);
	r->a = (struct agent_host)AGENT_HOST_INIT;
	r->a.fd = c;
}

static void real_end(struct real *r)
{
	int st;

	agent_host_free(&r->a); /* the agent sees EOF and exits */
	cr_assert_eq(waitpid(r->pid, &st, 0), r->pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "agent status %d", st);
	tu_rmtree(r->dir);
	free(r->dir);
}

/* Each test its own nonce: the agent's sweep looks at every process of the host here. */
static int real_run(struct real *r, const char *nonce, const char *cmd, const char *cwd,
		    double timeout_ms, char **out, char **err)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	char var[64];
	char *envv[] = { "A=1", var, NULL };
	struct capture *co, *ce;
	cordon_error e;
	struct agent_run ar;

	snprintf(var, sizeof(var), "CORDON_EXEC_NONCE=%s", nonce);
	cr_assert_eq(capture_new(100000, &co, &e), 0);
	cr_assert_eq(capture_new(100000, &ce, &e), 0);
	ar = (struct agent_run){ .argv = argv,
				 .envv = envv,
				 .cwd = cwd,
				 .nonce = nonce,
				 .deadline = now_ms() + timeout_ms,
				 .out = co,
				 .err = ce };
	cr_assert_eq(agent_host_run(&r->a, &ar, &e), AGENT_RAN, "%s", e.msg);
	*out = text(co);
	*err = text(ce);
	capture_free(co);
	capture_free(ce);
	return ar.timed_out ? -1 : ar.code;
}

Test(docker_agent, real_agent_runs_commands)
{
	struct real r;
	char *o, *e;

	real_start(&r);
	cr_assert_eq(real_run(&r, "run1", "echo out; echo err >&2; echo $A $AGENT_OWN; pwd; exit 5",
			      "/tmp", 5000, &o, &e),
		     5);
	cr_assert_str_eq(o, "out\n1 from-the-container\n/tmp\n");
	cr_assert_str_eq(e, "err\n");
	free(o);
	free(e);
	cr_assert_eq(real_run(&r, "run2", "kill -TERM $$", "/", 5000, &o, &e), 143);
	free(o);
	free(e);
	cr_assert_eq(real_run(&r, "run3", "true", "/nonexistent-dir", 5000, &o, &e), 126);
	cr_assert_str_eq(e, "cordon: cannot enter /nonexistent-dir: No such file or directory\n");
	free(o);
	free(e);
	real_end(&r);
}

/*
 * One of the command's sleeps, by its whole command line ("sleep 48 ", or the setsid program
 * before its exec): a substring matched other tests' processes running beside this one, such
 * as sandbox/daemons_die_with_the_command's "sleep 4<pid%1000>.<time>" (pid 487: "sleep
 * 4487..."), and failed this test in CI runs where the pids fell that way.
 */
static bool find_sleep(pid_t pid, const char *cmdline, void *arg)
{
	static const char *const mine[] = { "sleep 47 ", "sleep 48 ", "sleep 49 ",
					    "setsid sleep 48 " };

	(void)pid;
	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (!strcmp(cmdline, mine[i]))
			*(bool *)arg = true;
	return !*(bool *)arg;
}

/* The timeout: the group and the setsid escapee (found by its nonce) are killed. */
Test(docker_agent, real_agent_kills_the_tree)
{
	struct real r;
	char *o, *e;
	bool left = false;

	real_start(&r);
	cr_assert_eq(
		real_run(&r, "kill1", "sleep 47 & setsid sleep 48 & sleep 49", "/", 300, &o, &e),
		-1);
	free(o);
	free(e);
	/* SIGKILL is asynchronous for the escapees: give them a moment to go (3 s: the unit
	 * suite's fork and memory bombs may be running beside this test). */
	for (int i = 0; i < 150; i++) {
		left = false;
		tu_each_proc(find_sleep, &left);
		if (!left)
			break;
		usleep(20 * 1000);
	}
	cr_assert_not(left, "a sleep of the timed-out command is still running");
	/* and the agent serves the next one */
	cr_assert_eq(real_run(&r, "kill2", "echo next", "/", 5000, &o, &e), 0);
	cr_assert_str_eq(o, "next\n");
	free(o);
	free(e);
	real_end(&r);
}

/* A writer that never stops does not keep cordon from its deadline (the test's own timeout
 * would end a hang). */
Test(docker_agent, real_agent_times_out_a_fast_writer, .timeout = 20)
{
	struct real r;
	char *o, *e;

	real_start(&r);
	cr_assert_eq(real_run(&r, "yes1", "yes", "/", 300, &o, &e), -1);
	cr_assert(!strncmp(o, "y\ny\n", 4));
	free(o);
	free(e);
	real_end(&r);
}

/* ---- which binary is mounted ---- */

static char *agent_with(const char *path)
{
	char *r;

	setenv("CORDON_DOCKER_AGENT", path, 1);
	r = agent_binary();
	unsetenv("CORDON_DOCKER_AGENT");
	return r;
}

/* Static, and (as root) root's with no one else able to change it or a directory above it:
 * it runs in every container cordond makes. */
Test(docker_agent, which_binary_is_mounted)
{
	char *dir = tu_tmpdir(), bin[4096], cmd[8192], *r;

	snprintf(bin, sizeof(bin), "%s/cordon", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", tu_cordon(), bin);
	cr_assert_eq(system(cmd), 0);
	r = agent_with(bin);
	cr_assert_not_null(r, "the static cordon in a private directory is refused");
	cr_assert_str_eq(r, bin);
	free(r);
	cr_assert_null(agent_with("/bin/ls"), "a dynamic binary is accepted");
	cr_assert_null(agent_with("/nonexistent/cordon"));
	if (geteuid() == 0) {
		cr_assert_eq(chmod(bin, 0775), 0);
		cr_assert_null(agent_with(bin), "a group-writable binary is accepted");
		cr_assert_eq(chmod(bin, 0755), 0);
		cr_assert_eq(chmod(dir, 0777), 0);
		cr_assert_null(agent_with(bin),
			       "a binary in a world-writable directory is accepted");
		cr_assert_eq(chmod(dir, 01777), 0);
		r = agent_with(bin);
		cr_assert_not_null(r, "a sticky directory of root's is refused");
		free(r);
		cr_assert_eq(chmod(dir, 0700), 0);
		cr_assert_eq(chown(bin, 65534, 65534), 0);
		cr_assert_null(agent_with(bin), "a binary of another user's is accepted");
	}
	tu_rmtree(dir);
	free(dir);
}
