/* SPDX-License-Identifier: MIT */
/*
 * The local backend's relay loop: start the command (proc.h), read its stdout and stderr into
 * bounded captures until both reach EOF, enforce the wall-clock timeout and cancellation, then
 * turn what happened into AG2's result. The processes themselves (plain fork or the namespace
 * sandbox) are proc.h's business.
 */
#define _GNU_SOURCE
#include "backends/backend.h"
#include "backends/local/cgroup.h"
#include "backends/local/proc.h"
#include "policy/policy.h"
#include "runtime/capture.h"
#include "runtime/cleanup.h"
#include "runtime/relay.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Big pipes (RELAY_PIPE_SIZE) and big reads: the relay must run near pipe speed (bench/). */
/* While cancellation is possible, poll wakes at least this often to look at the flag. */
#define CANCEL_POLL_MS 20

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int local_open(const struct cordon_open *o, void **ret_h, cordon_error *e)
{
	*ret_h = NULL; /* stateless: every exec is a fresh sandbox */
	return 0;
}

static void local_close(void *h)
{
}

/* What is left of the drain that ends at drain_end, in ms for relay_thread_finish. */
static int drain_left(double drain_end)
{
	double left = drain_end - now_ms();

	return left > 0 ? (int)left + 1 : 0;
}

static int make_pipe(int fds[2], cordon_error *e)
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return cordon_err(e, errno, "pipe");
	/* Best effort: a larger pipe halves the context switches of a flood. */
	(void)fcntl(fds[0], F_SETPIPE_SZ, RELAY_PIPE_SIZE);
	(void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
	return 0;
}

/* Read what is there; returns false at EOF (or on a hard error). */
static bool drain(struct relay_src *src, struct capture *c, char *buf)
{
	for (;;) {
		ssize_t n = relay_src_read(src, buf, RELAY_BUF_SIZE);

		if (n > 0) {
			capture_feed(c, buf, (size_t)n);
			if ((size_t)n < RELAY_BUF_SIZE)
				return true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		return false;
	}
}

/* AG2: "Command not found: [Errno 2] No such file or directory: 'sh'" with exit 127. */
static int exec_failed_result(const struct cordon_exec *x, int err, struct cordon_result *r,
			      cordon_error *e)
{
	_cleanup_free_ char *text = NULL, *name = NULL;
	int len;

	/* OSError's text quotes the name with repr(): 'r\\nm', "it's" (found in review). */
	if (pyrepr(x->argv[0], &name, e) < 0)
		return -1;
	len = asprintf(&text, "Command not found: [Errno %d] %s: %s", err, strerror(err), name);
	if (len < 0) {
		text = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (output_format(text, (size_t)len, 127, &r->output, &r->output_len, e) < 0)
		return -1;
	r->exit_code = 127;
	r->status = 127;
	r->stdout_text = strdup("");
	r->stderr_text = strdup("");
	if (!r->stdout_text || !r->stderr_text)
		return cordon_err(e, ENOMEM, "out of memory");
	return 0;
}

static int local_exec(void *h, const struct cordon_exec *x, struct cordon_result *r,
		      cordon_error *e)
{
	const struct cordon_profile *p = x->profile;
	struct capture *cap_out = NULL, *cap_err = NULL;
	struct local_proc *proc = NULL;
	struct local_usage usage = { .peak_memory_bytes = -1 };
	struct relay_thread out_thread = { 0 }, err_thread = { 0 };
	_cleanup_close_ int out_r = -1, out_w = -1, err_r = -1, err_w = -1;
	/*
	 * Read through runtime/relay.h: a flood's bounce pipe, then its reader thread. EOF is
	 * how reading normally ends: the run's processes hold the write ends, and the poll loop
	 * makes sure they are all gone (the command's end, the timeout and cancellation all kill
	 * the run). But EOF is not waited for past RELAY_DRAIN_MS after that: a write end can leave the
	 * run (SCM_RIGHTS over a socket in a workdir that another run shares: found in review),
	 * and its holder would then decide when this run ends, past its timeout, and what it
	 * reports as the command's output.
	 */
	_cleanup_(relay_src_free) struct relay_src src_out = RELAY_SRC_NONE,
						   src_err = RELAY_SRC_NONE;
	_cleanup_(relay_buf_freep) char *buf = NULL;
	int fds[2], rc = -1, wstatus = 0, cancelled = 0;
	bool out_open = true, err_open = true, exited = false, timed_out = false;
	/* May the result go before init is gone (x->ret_pending), and has init reported? */
	bool early = x->ret_pending != NULL, reported = false;
	double start = now_ms(), deadline = start + p->timeout * 1e3, drain_end = 0;

	if (make_pipe(fds, e) < 0)
		return -1;
	out_r = fds[0], out_w = fds[1];
	if (make_pipe(fds, e) < 0)
		return -1;
	err_r = fds[0], err_w = fds[1];
	relay_src_init_lazy(&src_out, out_r);
	relay_src_init_lazy(&src_err, err_r);
	buf = relay_buf_new();
	if (!buf)
		return cordon_err(e, ENOMEM, "out of memory");
	if (capture_new(p->max_output, &cap_out, e) < 0 ||
	    capture_new(p->max_output, &cap_err, e) < 0)
		goto out;

	struct local_spec spec = {
		.argv = x->argv,
		.envp = x->envp,
		.workdir = x->workdir,
		.workdir_fd = x->workdir_fd,
		.workdir_is_temp = x->workdir_is_temp,
		.workdir_tmpfs = x->workdir_tmpfs,
		.stdin_fd = x->stdin_fd,
		.stdout_fd = out_w,
		.stderr_fd = err_w,
		.stdio_pipes_ours = true,
		.profile = p,
		.run_as = x->run_as,
		.set_umask = x->set_umask,
		.umask = x->umask,
		.uid = x->uid,
		.gid = x->gid,
		.groups = x->groups,
		.ngroups = x->ngroups,
	};
	rc = local_proc_start(&spec, &proc, e);
	if (rc == LOCAL_PROC_EXEC_FAILED) {
		rc = exec_failed_result(x, e->code, r, e);
		goto out;
	}
	if (rc < 0)
		goto out;
	rc = -1;
	/* Only the run's processes get the write ends: EOF normally means every writer is gone. */
	closep(&out_w), out_w = -1;
	closep(&err_w), err_w = -1;

	while (out_open || err_open || !exited) {
		struct pollfd pfd[4];
		int nfds = 0, timeout_ms, ix_out = -1, ix_err = -1, ix_pid = -1, ix_st = -1;
		double left = deadline - now_ms();

		if (x->cancel && *x->cancel) {
			/* A command that already ended by itself keeps its own result. */
			if (!exited)
				cancelled = *x->cancel;
			local_proc_kill(proc);
			break;
		}
		if (left <= 0) {
			/* A command that already exited is not a timeout, even if an escaped
			 * writer kept the pipes open until now. */
			timed_out = !exited;
			local_proc_kill(proc);
			break;
		}
		/* Over, but a pipe is still open: held outside the run, so not waited for. */
		if (exited && now_ms() >= drain_end)
			break;
		if (out_open)
			ix_out = nfds,
			pfd[nfds++] = (struct pollfd){ .fd = out_r, .events = POLLIN };
		if (err_open)
			ix_err = nfds,
			pfd[nfds++] = (struct pollfd){ .fd = err_r, .events = POLLIN };
		if (!exited)
			ix_pid = nfds, pfd[nfds++] = (struct pollfd){ .fd = local_proc_pidfd(proc),
								      .events = POLLIN };
		if (!exited && early)
			ix_st = nfds,
			pfd[nfds++] = (struct pollfd){ .fd = local_proc_status_fd(proc),
						       .events = POLLIN };
		/* A timeout may be up to 1e9 s: past INT_MAX ms the conversion is undefined. */
		timeout_ms = left + 1 > INT_MAX ? INT_MAX : (int)(left + 1);
		if (exited && drain_end - now_ms() < left)
			timeout_ms = (int)(drain_end - now_ms()) + 1;
		if (x->cancel && timeout_ms > CANCEL_POLL_MS)
			timeout_ms = CANCEL_POLL_MS;
		if (poll(pfd, (nfds_t)nfds, timeout_ms) < 0) {
			if (errno == EINTR)
				continue;
			cordon_err(e, errno, "poll");
			goto out;
		}
		/* A flood gets a reader of its own (runtime/relay.h), out of this loop. */
		if (ix_out >= 0 && pfd[ix_out].revents) {
			out_open = drain(&src_out, cap_out, buf);
			if (out_open && relay_flood_to_thread(&out_thread, &src_out, cap_out))
				out_open = false;
		}
		if (ix_err >= 0 && pfd[ix_err].revents) {
			err_open = drain(&src_err, cap_err, buf);
			if (err_open && relay_flood_to_thread(&err_thread, &src_err, cap_err))
				err_open = false;
		}
		if (ix_st >= 0 && pfd[ix_st].revents && !(pfd[ix_pid].revents)) {
			/*
			 * init reported the command's end and is exiting now, which kills whatever
			 * else is in its pid namespace: the same end as the pidfd's below, minus the
			 * wait for the namespaces' teardown, which the caller does after answering.
			 */
			reported = local_proc_reported(proc, &wstatus, &usage);
			exited = reported;
			early = reported;
		}
		if (ix_pid >= 0 && pfd[ix_pid].revents) {
			/*
			 * The shell is done. Whatever it left behind (background jobs holding the
			 * pipes) dies now, so a finished command is never reported as a timeout.
			 */
			exited = true;
			local_proc_kill(proc);
		}
		if (exited && drain_end == 0)
			drain_end = now_ms() + RELAY_DRAIN_MS;
	}
	local_proc_trace(proc, reported ? "teardown: the command's end reported"
					: "teardown: the command's end");
	/* Killed: collect what is already in the pipes, without waiting for more. */
	if (out_open)
		(void)drain(&src_out, cap_out, buf);
	if (err_open)
		(void)drain(&src_err, cap_err, buf);
	/*
	 * The floods' readers: their EOF comes with the run's last process, killed by now, unless
	 * a write end left the run; then they stop at the end of the drain.
	 */
	if (drain_end == 0)
		drain_end = now_ms() + RELAY_DRAIN_MS; /* killed: its processes die meanwhile */
	relay_thread_finish(&out_thread, drain_left(drain_end));
	relay_thread_finish(&err_thread, drain_left(drain_end));
	capture_end(cap_out);
	capture_end(cap_err);

	if (!reported && local_proc_wait(proc, &wstatus, &usage, e) < 0)
		goto out;
	local_proc_drop_placeholders(proc);
	local_proc_trace(proc, "teardown: placeholders removed");

	r->duration_ms = now_ms() - start;
	r->cpu_ms = usage.cpu_ms;
	r->peak_memory_bytes = usage.peak_memory_bytes;
	r->oom_killed = usage.oom_killed;
	if (cancelled) {
		backend_cancelled(r, cancelled);
	} else if (!timed_out && WIFSIGNALED(wstatus)) {
		/* Python's returncode: a shell killed by signal n gives -n. */
		r->signal = WTERMSIG(wstatus);
		r->exit_code = -r->signal;
		r->status = 128 + r->signal;
	} else if (!timed_out) {
		r->exit_code = WEXITSTATUS(wstatus);
		r->status = r->exit_code;
	}
	if (capture_fill_result(cap_out, cap_err, p, timed_out, "Command", r, e) < 0)
		goto out;
	rc = 0;
	if (reported) {
		*x->ret_pending = proc;
		proc = NULL;
	}
out:
	if (out_thread.running || err_thread.running) {
		/* An error after the hand-over: the run must end for the readers to see EOF. */
		local_proc_kill(proc);
		drain_end = now_ms() + RELAY_DRAIN_MS;
		relay_thread_finish(&out_thread, drain_left(drain_end));
		relay_thread_finish(&err_thread, drain_left(drain_end));
	}
	local_proc_free(proc);
	capture_free(cap_out);
	capture_free(cap_err);
	return rc;
}

void cordon_cache_host_layout(void)
{
	cgroup_cache_plans();
}

int cordon_claim_cgroup_delegation(cordon_error *e)
{
	return cgroup_claim_delegation(e);
}

static void local_finish(void *pending)
{
	local_proc_free(pending);
}

const struct cordon_backend_ops backend_local = {
	.name = "local",
	.temp_workdir_inside = true,
	.open = local_open,
	.exec = local_exec,
	.close = local_close,
	.finish = local_finish,
};
