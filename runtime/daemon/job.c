/* SPDX-License-Identifier: MIT */
/*
 * One run of a request, as cordond does it wherever it happens: in a runner (runner.c, the
 * usual place) or, without one, in cordond itself. What comes in is checked already: the body
 * parsed, the caller authorised and resolved, the workdir opened as the caller, a run slot
 * taken. What is done here: the profile as the request sees it, the command the policy judges,
 * and the run, which leaves its teardown for after the answer (cordon_request.teardown).
 */
#define _GNU_SOURCE
#include "runtime/daemon/daemon.h"
#include "runtime/profile.h"
#include "runtime/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_kv(struct cordon_list *l, const char *k, const char *v, cordon_error *e)
{
	_cleanup_free_ char *kv = NULL;

	if (asprintf(&kv, "%s=%s", k, v) < 0) {
		kv = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	return cordon_list_add(l, kv, e);
}

static int append_list(struct cordon_list *dst, const struct cordon_list *src, cordon_error *e)
{
	if (!src->set)
		return 0;
	dst->set = true;
	for (size_t i = 0; i < src->n; i++)
		if (cordon_list_add(dst, src->v[i], e) < 0)
			return -1;
	return 0;
}

/* The profile as this request sees it: the named profile, then the body's settings. */
static int request_profile(const struct run_body *b, const struct job *j,
			   struct cordon_profile **ret, int *status, cordon_error *e)
{
	struct cordon_profile *p = NULL;
	const char *key;
	json_t *v;

	*status = 400;
	if (cordon_profile_load(j->profile, &p, e) < 0)
		return cordon_err_prefix(e, "profile");
	/*
	 * The run's backend is its session's, whatever its profile names; without a session,
	 * the body's, else the profile's, as for a session's creation and a direct run. One that
	 * is not local, without a container or sandbox to run in, is not the local path's:
	 * cordond runs it in a one-shot session instead (JOB_NOT_LOCAL, http.c).
	 */
	const char *backend = j->backend_name ? j->backend_name
			      : b->backend    ? b->backend
					      : p->backend;

	if (strcmp(backend, "local") && !j->backend_handle && !j->open_backend) {
		cordon_err(e, 0, "profile: uses backend '%s'", backend);
		cordon_profile_free(p);
		*status = JOB_NOT_LOCAL;
		return -1;
	}
	if (strcmp(p->backend, backend)) {
		free(p->backend);
		if (!(p->backend = strdup(backend)))
			goto oom;
	}
	*status = 500;
	if (append_list(&p->allowed, &b->allowed, e) < 0 ||
	    append_list(&p->blocked, &b->blocked, e) < 0 ||
	    append_list(&p->ignore, &b->ignore, e) < 0)
		goto fail;
	if (b->readonly >= 0)
		p->readonly = b->readonly;
	if (b->mode >= 0)
		p->mode = (enum cordon_mode)b->mode;
	if (b->network >= 0)
		profile_set_network(p, (enum cordon_network)b->network);
	if (b->has_max_output)
		p->max_output = b->max_output;
	if (b->has_timeout) {
		char *t = strdup(b->timeout_text);

		if (!t)
			goto oom;
		free(p->timeout_text);
		p->timeout_text = t;
		p->timeout = b->timeout;
	}
	/*
	 * The daemon's environment is not the caller's: HOME, USER and LOGNAME are those of the
	 * identity the command runs as, from its passwd entry (the caller's own; for root, the
	 * workdir's owner or nobody: http.c), and the request's env comes last so it can
	 * override them.
	 */
	if (j->home && add_kv(&p->env, "HOME", j->home, e) < 0)
		goto fail;
	if (j->name &&
	    (add_kv(&p->env, "USER", j->name, e) < 0 || add_kv(&p->env, "LOGNAME", j->name, e) < 0))
		goto fail;
	if (b->env)
		json_object_foreach(b->env, key, v)
		{
			if (add_kv(&p->env, key, json_string_value(v), e) < 0)
				goto fail;
		}
	*ret = p;
	return 0;
oom:
	cordon_err(e, ENOMEM, "out of memory");
fail:
	cordon_profile_free(p);
	return -1;
}

bool job_shortage(int err)
{
	switch (err) {
	case EMFILE: /* cordond's (or the runner's) RLIMIT_NOFILE */
	case ENFILE: /* the system's file table */
	case ENOMEM:
	case EAGAIN: /* fork, clone, pthread_create: no process or thread to be had */
		return true;
	default:
		return false;
	}
}

int job_error_status(int status, cordon_error *e)
{
	char what[sizeof(e->msg)], buf[sizeof(e->msg) + 64];

	if (!job_shortage(e->code))
		return status;
	(void)snprintf(what, sizeof(what), "%s", e->msg);
	(void)snprintf(buf, sizeof(buf), "%s: %s", what, strerror(e->code));
	cordon_err(e, 0, "busy: %s; try again", buf);
	return 503;
}

int job_run(const struct job *j, struct cordon_result *res, struct cordon_teardown **td,
	    int *status, cordon_error *e)
{
	const struct run_body *b = j->body;
	struct cordon_profile *p = NULL;
	_cleanup_free_ char *joined = NULL;
	const char *command;
	char *const *argv = NULL;
	int rc;

	*td = NULL;
	if (request_profile(b, j, &p, status, e) < 0)
		return -1;
	/*
	 * argv: run without a shell, as AG2's Sandbox.exec(argv) does, but let the policy judge
	 * the command AG2 would have judged: the script of ["sh", "-c", X], else the argv joined
	 * with shell quoting. libcordon checks `command` and runs `argv` when both are given.
	 */
	if (b->command) {
		command = b->command;
	} else if (b->argc == 3 && !strcmp(b->argv[0], "sh") && !strcmp(b->argv[1], "-c") &&
		   b->argv[2][strspn(b->argv[2], " \t\n")] != '\0') {
		command = b->argv[2];
	} else {
		joined = body_shlex_join(b->argv);
		if (!joined) {
			cordon_profile_free(p);
			*status = 500;
			return cordon_err(e, ENOMEM, "out of memory");
		}
		command = joined;
		argv = (char *const *)b->argv;
	}

	struct cordon_request req = {
		.command = command,
		.argv = argv,
		.profile = p,
		.workdir = j->workdir,
		/*
		 * The directory opened (and access-checked) as the caller: the sandbox mounts
		 * exactly it, whatever the path names by then (a symlink swapped in after the
		 * check cannot redirect root's mount). NULL workdir (root, no workdir): -1.
		 */
		.workdir_fd = j->workdir_fd,
		.keep = b->keep,
		.stdin_fd = -1,
		/* Root's own runs are what a direct `cordon run` as root would be. */
		.run_as = j->uid != 0,
		.uid = j->uid,
		.gid = j->gid,
		.groups = j->groups,
		.ngroups = j->ngroups,
		.set_umask = b->has_umask,
		.umask = (mode_t)b->umask,
		.cancel = j->cancel,
		.teardown = td,
	};
	/* A Docker or Daytona session: its container or sandbox (p->backend names it). */
	req.backend_handle = j->backend_handle;
	req.open_backend = j->open_backend;
	req.open_backend_arg = j->open_backend_arg;
	rc = cordon_run(&req, res, e);
	cordon_profile_free(p);
	if (rc < 0) {
		*status = 500;
		return cordon_err_prefix(e, "run");
	}
	return 0;
}
