/* SPDX-License-Identifier: MIT */
/*
 * A runner: `cordon __cordond-runner`, started by cordond (runners.c) with a socketpair on
 * fd 3, runs requests one at a time (job.c) and answers each with two frames (frame.c): the
 * result as soon as it is final, then "done" once the run is torn down.
 *
 * Why a separate process: every sandbox is a clone of the process that starts it, and its
 * init stays a copy of that process for the whole run. Cloned from cordond (threads,
 * libmicrohttpd and the TLS libraries it brings, everything every connection touched), each
 * start copied far more mappings than from this small static process, and every page cordond
 * then wrote during the run was a copy-on-write fault, about 15 us each on the reference VM.
 * bench/DAEMON.md has the figures.
 *
 * A runner trusts its socket and nothing else: it is cordond's child, gets its requests from
 * it (already checked there: the caller authorised and resolved, the body parsed, the workdir
 * opened as the caller) and runs as root, as cordond does. Started by hand, by anyone, it only
 * has its starter's own privileges. It dies with cordond (PR_SET_PDEATHSIG) and at EOF.
 * SIGUSR1 cancels the run in progress (the client went away, or cordond is stopping).
 */
#define _GNU_SOURCE
#include "runtime/daemon/daemon.h"
#include "runtime/cleanup.h"
#include "runtime/result.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int runner_cancel;
/*
 * The TMPDIR cordond gave us, private to this runner: root's runs make their temp workdirs
 * there, and cordond removes it with whatever is left in it when this runner goes (killed
 * mid-run, say). A run asked to keep its temp workdir makes it in /tmp instead.
 */
static char *private_tmp;
/* CORDON_PREBUILD=0 in our environment: no sandbox is pre-built (docs/daemon.md). */
static bool prebuild_allowed;

/* The run is reported as terminated by SIGTERM, as a `cordon run` given one reports it. */
static void on_cancel(int sig)
{
	(void)sig;
	runner_cancel = SIGTERM;
}

static void runner_log(const cordon_error *e)
{
	char buf[512];

	fprintf(stderr, "cordon runner: %s\n", cordon_err_str(e, buf, sizeof(buf)));
}

/*
 * What the next run needs, made now (cordon_stage_next); a failure only costs it speed, and is
 * logged once (a host where it fails fails every time: a container without CAP_SYS_ADMIN).
 */
static void stage(cordon_error *e)
{
	static bool logged;

	if (cordon_stage_next(e) < 0 && !logged) {
		logged = true;
		runner_log(e);
	}
}

/* The first answer: the status, and the result (200) or the error. -1: the socket is gone. */
static int answer(int fd, int status, const struct cordon_result *res, const char *json,
		  const cordon_error *e)
{
	char buf[512];
	json_t *h = status == 200
			    ? json_pack("{s:i,s:b,s:b}", "status", 200, "refused",
					res->refused != NULL, "timed_out", res->timed_out)
			    : json_pack("{s:i,s:o}", "status", status, "error",
					result_json_text(cordon_err_str(e, buf, sizeof(buf))));
	char *hs = h ? json_dumps(h, JSON_COMPACT) : NULL;
	int r = hs ? frame_send(fd, hs, json, json ? strlen(json) : 0, -1) : -1;

	free(hs);
	json_decref(h);
	return r;
}

/* The caller's groups from the request's header: absent (none), or an array of gids. */
static int unpack_groups(json_t *a, gid_t **ret, size_t *ret_n)
{
	size_t i, n = a ? json_array_size(a) : 0;
	gid_t *g;
	json_t *v;

	if (!a)
		return 0;
	if (!json_is_array(a) || n > NGROUPS_MAX)
		return -1;
	g = calloc(n ? n : 1, sizeof(*g));
	if (!g)
		return -1;
	json_array_foreach(a, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= (json_int_t)(gid_t)-1) {
			free(g);
			return -1;
		}
		g[i] = (gid_t)json_integer_value(v);
	}
	*ret = g;
	*ret_n = n;
	return 0;
}

/*
 * One request, answered and torn down; -1 when the socket is gone (the runner then exits).
 * *ret_prebuild: whether cordond asked for the next sandbox to be pre-built.
 */
static int serve_one(int fd, const char *header, const char *body, size_t n, int *wd_fdp,
		     bool *ret_prebuild)
{
	int wd_fd = *wd_fdp;
	json_error_t je;
	json_t *h = json_loads(header, 0, &je);
	struct run_body b;
	struct cordon_result res;
	struct cordon_teardown *td = NULL;
	cordon_error e = { 0 };
	_cleanup_free_ char *js = NULL;
	_cleanup_free_ gid_t *groups = NULL;
	const char *profile = NULL, *name = NULL, *home = NULL, *workdir = NULL;
	json_int_t uid = -1, gid = -1, cap = 0;
	json_t *ga = NULL;
	size_t ngroups = 0;
	int session = 0, prebuild = 1, status = 400, r;
	bool parsed = false, ran = false;

	if (!h ||
	    json_unpack_ex(h, &je, 0, "{s:s,s:b,s:I,s:I,s?o,s:I,s?s,s?s,s?s,s?b}", "profile",
			   &profile, "session", &session, "uid", &uid, "gid", &gid, "groups", &ga,
			   "cap", &cap, "name", &name, "home", &home, "workdir", &workdir,
			   "prebuild", &prebuild) < 0 ||
	    uid < 0 || gid < 0 || (workdir != NULL) != (wd_fd >= 0) ||
	    unpack_groups(ga, &groups, &ngroups) < 0) {
		status = 500;
		cordon_err(&e, EPROTO, "runner: a malformed request from cordond");
		goto reply;
	}
	if (body_parse(session ? BODY_SESSION_RUN : BODY_RUN, body, n, cap, &b, &e) < 0)
		goto reply; /* cordond parsed it already: cannot happen, but a 400 if it does */
	parsed = true;
	if (private_tmp && !b.keep)
		(void)setenv("TMPDIR", private_tmp, 1);
	else
		(void)unsetenv("TMPDIR");

	struct job j = {
		.body = &b,
		.profile = b.profile ? b.profile : profile,
		.uid = (uid_t)uid,
		.gid = (gid_t)gid,
		.groups = groups,
		.ngroups = ngroups,
		.name = name,
		.home = home,
		.workdir = workdir,
		.workdir_fd = wd_fd,
		.cancel = &runner_cancel,
		/* A runner's runs are local: a session's (always local here) or not. */
		.backend_name = session ? "local" : NULL,
	};
	if (job_run(&j, &res, &td, &status, &e) < 0)
		goto reply;
	ran = true;
	status = 200;
	if (cordon_result_to_json(&res, &js, &e) < 0)
		status = 500;
reply:
	/* A shortage here (fds, memory, processes) is the server's, not the request's: 503. */
	if (status != 200)
		status = job_error_status(status, &e);
	r = answer(fd, status, ran ? &res : NULL, status == 200 ? js : NULL, &e);
	if (ran)
		cordon_result_free(&res);
	if (parsed)
		run_body_free(&b);
	json_decref(h);
	/* After the answer: the sandbox's exit, its cgroup, the temp workdir; then "done". */
	if (cordon_teardown_finish(td, &e) < 0)
		runner_log(&e);
	/*
	 * This run's workdir is done with: closed before the next sandbox is pre-built, whose
	 * init would otherwise inherit it and hold the caller's directory (and its file system:
	 * umount EBUSY) for as long as it waits, for another caller's run (found in review).
	 */
	if (*wd_fdp >= 0) {
		(void)close(*wd_fdp);
		*wd_fdp = -1;
	}
	*ret_prebuild = prebuild;
	return r < 0 ? -1 : 0;
}

/*
 * Before "done": cordond hands us the next run only once we are ready for it. The next
 * sandbox is pre-built only when cordond says there are idle CPUs for it (prebuild). Called
 * once nothing of the run just served is held any more (its request, its answer: freed, and
 * so wiped, RUNNER_MALLOC_ENV): the pre-built sandbox, a clone of us, serves the next caller.
 */
static int stage_and_done(int fd, bool prebuild)
{
	cordon_error e = { 0 };

	cordon_stage_prebuild(prebuild_allowed && prebuild);
	stage(&e);
	return frame_send(fd, "{\"done\":true}", NULL, 0, -1);
}

/*
 * cordond raised its soft RLIMIT_NOFILE to the hard limit (cordond.c, raise_nofile): set back
 * the one it was started with, before any sandbox is cloned from us, so that commands keep
 * the limit a direct run gives them. The variable goes, so no command sees it.
 */
static int restore_nofile(void)
{
	const char *v = getenv(RUNNER_NOFILE_ENV);
	unsigned long long soft;
	struct rlimit rl;
	char *end;

	if (!v)
		return 0;
	errno = 0;
	soft = strtoull(v, &end, 10);
	if (errno || end == v || *end || getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	if (soft < rl.rlim_cur) {
		rl.rlim_cur = (rlim_t)soft;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return -1;
	}
	return unsetenv(RUNNER_NOFILE_ENV);
}

int runner_main(int fd)
{
	struct sigaction sa = { .sa_handler = on_cancel };

	/* Die with cordond; and if it is gone already, now. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
		return 1;
	/* Nothing but stdio and our socket: whatever else cordond was started with stays there. */
	if (fd != 3 || syscall(SYS_close_range, 4U, ~0U, 0U) < 0)
		return 1;
	if (restore_nofile() < 0)
		return 1;
	/* Read by glibc at our start (RUNNER_MALLOC_ENV); not for the commands (env_inherit). */
	(void)unsetenv("GLIBC_TUNABLES");
	(void)signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		return 1;
	if (getenv("TMPDIR"))
		private_tmp = strdup(getenv("TMPDIR"));
	/* Many runs from one process, as in cordond: the cgroup layout is read once. */
	cordon_cache_host_layout();
	/*
	 * One run at a time, from one thread: the next run's sandbox is pre-built while we wait
	 * (docs/daemon.md, "Pre-built sandboxes"). CORDON_PREBUILD=0 turns that off (make bench
	 * measures both).
	 */
	{
		const char *pb = getenv("CORDON_PREBUILD");

		struct cordon_profile *p = NULL;
		cordon_error e = { 0 };

		prebuild_allowed = !pb || strcmp(pb, "0") != 0;
		cordon_stage_prebuild(prebuild_allowed);
		/* The first one for the default profile's mounts: most runs use it. */
		if (prebuild_allowed && cordon_profile_load("default", &p, &e) == 0)
			(void)cordon_prebuild_from(p, &e);
		cordon_profile_free(p);
	}
	{
		cordon_error e = { 0 };

		stage(&e);
	}
	for (;;) {
		char *header = NULL, *payload = NULL;
		size_t n = 0;
		int wd_fd = -1, r;
		bool prebuild = true;

		r = frame_recv(fd, &header, &payload, &n, &wd_fd);
		if (r <= 0) {
			cordon_unstage();
			return r == 0 ? 0 : 1; /* EOF: cordond is done with us */
		}
		runner_cancel = 0;
		r = serve_one(fd, header, payload, n, &wd_fd, &prebuild);
		/* The request (payload is in the same block) goes before the next run is staged. */
		free(header);
		if (wd_fd >= 0)
			(void)close(wd_fd);
		if (r == 0)
			r = stage_and_done(fd, prebuild);
		if (r < 0) {
			cordon_unstage();
			return 1;
		}
	}
}
