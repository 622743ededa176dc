/* SPDX-License-Identifier: MIT */
/*
 * The HTTP side of cordond: libmicrohttpd with one thread per connection (a run blocks its
 * connection's thread for as long as the command runs, and nobody else's), authorisation,
 * bounded bodies, routing, and the handlers of SPEC §7.
 *
 * Every request is hostile until proven otherwise. In order: the caller's kernel credentials
 * (SO_PEERCRED, taken when the connection was accepted) decide 403 before anything else is
 * looked at; then the route (404/405); then the declared body size (413) before a byte of body
 * is read; then the JSON body, field by field (400 naming the field); then the concurrency
 * limits (429); only then does anything run, as the caller.
 */
#define _GNU_SOURCE
#include "runtime/daemon/daemon.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"
#include "runtime/profile.h"
#include "runtime/result.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn *conns;
static unsigned runs_in_flight;
static gid_t cordon_gid;
static bool have_group;

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Per-request state (MHD's con_cls). */
struct req {
	struct conn *cn; /* its connection, which outlives it */
	/*
	 * Who is asking, resolved for this request (the connection's peer, its passwd entry and
	 * groups now): what it may do and the identity it acts with. Every request is authorised,
	 * not only a connection's first, so a member taken out of group cordon (or another group)
	 * is refused (or acts without it) on the connections they keep open too.
	 */
	struct caller caller;
	bool ident_ok;
	struct route route;
	int status; /* an error decided before the body was read */
	cordon_error err;
	const char *allow;
	char *body;
	size_t len, cap, limit;
	bool too_big;
	size_t discarded;
	/*
	 * A run's teardown, done once its answer is sent (on_completed): the sandbox's reaping
	 * and cgroup (libcordon), and a temp workdir made as the caller.
	 */
	struct runner *runner;
	struct cordon_teardown *teardown;
	char *temp_workdir;
	int temp_hold; /* fsutil_temp_hold of temp_workdir: a killed cordond's are swept */
	bool last;     /* the client's last request on its connection (Connection: close) */
};

/* ---- replies ---- */

static enum MHD_Result send_buf(struct MHD_Connection *c, int status, char *buf, size_t len,
				const char *type, const char *allow)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const struct conn *cn = ci ? ci->socket_context : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(buf);
		return MHD_NO;
	}
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (cn && cn->close_after)
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	if (status == 429 || status == 503)
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (allow)
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	metrics_http(status);
	return ret;
}

/* Takes s (a JSON document, malloc'd): sent with a newline, as every reply of cordond. */
static enum MHD_Result send_json_text(struct MHD_Connection *c, int status, char *s,
				      const char *allow)
{
	char *line;
	size_t n;

	if (!s)
		return MHD_NO;
	n = strlen(s);
	line = realloc(s, n + 2);
	if (!line) {
		free(s);
		return MHD_NO;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	return send_buf(c, status, line, n + 1, "application/json", allow);
}

/* Takes the reference to j. */
static enum MHD_Result send_json_allow(struct MHD_Connection *c, int status, json_t *j,
				       const char *allow)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(j);
	return send_json_text(c, status, s, allow);
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, json_t *j)
{
	return send_json_allow(c, status, j, NULL);
}

static enum MHD_Result send_error_allow(struct MHD_Connection *c, int status, const char *msg,
					const char *allow)
{
	if (status == 429)
		atomic_fetch_add(&metrics.rejected, 1);
	if (status == 403)
		atomic_fetch_add(&metrics.forbidden, 1);
	/* "{s:s}" fails on a message that is not UTF-8 (a client's text cut at a byte count),
	 * and the client then got no answer at all (found by tests/fuzz/fuzz_request.c). */
	return send_json_allow(c, status, json_pack("{s:o}", "error", result_json_text(msg)),
			       allow);
}

/* e's cause decides between status and a 503 (job_error_status: a shortage of cordond's). */
static enum MHD_Result send_error(struct MHD_Connection *c, int status, const cordon_error *e)
{
	cordon_error copy = *e;
	char buf[512];

	status = job_error_status(status, &copy);
	return send_error_allow(c, status, cordon_err_str(&copy, buf, sizeof(buf)), NULL);
}

static enum MHD_Result send_msg(struct MHD_Connection *c, int status, const char *msg)
{
	return send_error_allow(c, status, msg, NULL);
}

/* ---- concurrency ---- */

/*
 * Request bodies held in memory. Uploads are up to --max-file each, and one caller may hold
 * --max-connections-per-caller of them, so they are bounded as the connections are: all
 * together at most cfg.max_bodies; all callers but root together at most that less an eighth,
 * kept for root; and one caller (root aside) at most cfg.max_bodies_per_caller, so that one
 * member's uploads can neither take the whole of it from the other members nor any of it from
 * root (four 64 MiB uploads of one member used to leave everyone else 503s, for as long as it
 * kept renewing them). Counted under conns_lock, per connection: a caller's share is what its
 * connections hold together.
 */
static size_t bodies_all, bodies_members;

static size_t bodies_reserve(void)
{
	return cfg.max_bodies / 8;
}

static bool is_root(const struct conn *cn)
{
	return cn->ident_ok && cn->caller.uid == 0;
}

/* n more bytes for a request body of cn's: 0, or -1 with *e naming the bound it would pass. */
static int bodies_take(struct conn *cn, size_t n, cordon_error *e)
{
	bool root = is_root(cn);

	pthread_mutex_lock(&conns_lock);
	if (!root) {
		size_t mine = 0, cap = cfg.max_bodies - bodies_reserve();

		for (const struct conn *o = conns; o; o = o->next)
			if (o->ident_ok && o->caller.uid == cn->caller.uid)
				mine += o->body_held;
		if (n > cfg.max_bodies_per_caller || mine > cfg.max_bodies_per_caller - n) {
			pthread_mutex_unlock(&conns_lock);
			return cordon_err(
				e, 0,
				"busy: your request bodies in memory would pass %zu bytes "
				"(--max-bodies-per-caller); try again",
				cfg.max_bodies_per_caller);
		}
		if (n > cap || bodies_members > cap - n) {
			pthread_mutex_unlock(&conns_lock);
			return cordon_err(e, 0,
					  "busy: the request bodies in memory would pass %zu bytes "
					  "(--max-bodies, less %zu kept for root); try again",
					  cap, bodies_reserve());
		}
	}
	if (n > cfg.max_bodies || bodies_all > cfg.max_bodies - n) {
		pthread_mutex_unlock(&conns_lock);
		return cordon_err(e, 0,
				  "busy: the request bodies in memory would pass %zu bytes "
				  "(--max-bodies); try again",
				  cfg.max_bodies);
	}
	bodies_all += n;
	if (!root)
		bodies_members += n;
	cn->body_held += n;
	pthread_mutex_unlock(&conns_lock);
	return 0;
}

static void bodies_give(struct conn *cn, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&conns_lock);
	bodies_all -= n;
	if (!is_root(cn))
		bodies_members -= n;
	cn->body_held -= n;
	pthread_mutex_unlock(&conns_lock);
}

/* Claim a run slot for this connection: 0, or 429 with *e. */
static int slot_acquire(struct conn *cn, cordon_error *e)
{
	unsigned mine = 0;

	pthread_mutex_lock(&conns_lock);
	if (runs_in_flight >= cfg.max_runs) {
		pthread_mutex_unlock(&conns_lock);
		return cordon_err(e, 0, "runs: %u runs in flight, the daemon's limit",
				  cfg.max_runs);
	}
	for (struct conn *o = conns; o; o = o->next)
		if (o->in_run && o->caller.uid == cn->caller.uid)
			mine++;
	if (mine >= cfg.max_runs_per_caller) {
		pthread_mutex_unlock(&conns_lock);
		return cordon_err(e, 0, "runs: %u runs in flight, the limit per caller",
				  cfg.max_runs_per_caller);
	}
	runs_in_flight++;
	cn->in_run = true;
	cn->cancel = 0;
	pthread_mutex_unlock(&conns_lock);
	atomic_fetch_add(&metrics.in_flight, 1);
	return 0;
}

static void slot_release(struct conn *cn)
{
	pthread_mutex_lock(&conns_lock);
	runs_in_flight--;
	cn->in_run = false;
	pthread_mutex_unlock(&conns_lock);
	atomic_fetch_sub(&metrics.in_flight, 1);
}

void http_cancel_all(void)
{
	pthread_mutex_lock(&conns_lock);
	for (struct conn *o = conns; o; o = o->next)
		if (o->in_run && !o->cancel) {
			o->cancel = SIGTERM;
			atomic_fetch_add(&metrics.cancelled, 1);
		}
	pthread_mutex_unlock(&conns_lock);
}

unsigned http_runs_in_flight(void);
unsigned http_runs_in_flight(void)
{
	unsigned n;

	pthread_mutex_lock(&conns_lock);
	n = runs_in_flight;
	pthread_mutex_unlock(&conns_lock);
	return n;
}

void http_watch_once(int timeout_ms)
{
	double now = now_s();

	pthread_mutex_lock(&conns_lock);
	for (struct conn *o = conns; o; o = o->next) {
		if (o->in_run && !o->cancel) {
			/*
			 * POLLHUP: the client closed its end entirely (it was killed, or gave up).
			 * A half-close (shutdown(SHUT_WR) after sending the request) is not a
			 * disconnect: the client still waits for the answer.
			 */
			struct pollfd pfd = { .fd = o->fd, .events = 0 };

			if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR))) {
				o->cancel = SIGTERM;
				atomic_fetch_add(&metrics.cancelled, 1);
			}
		} else if (!o->request_complete && o->fd >= 0 &&
			   now - o->request_started > cfg.request_timeout) {
			/*
			 * Slowloris: MHD's own timeout is for idleness, and a client dribbling a
			 * byte now and then is never idle. A request must be complete within the
			 * request timeout; shutdown() on our dup of the socket makes MHD's next
			 * read see EOF, and MHD closes the connection itself (a close() here
			 * could race with MHD reusing the fd number).
			 */
			(void)shutdown(o->fd, SHUT_RDWR);
			o->request_complete = true;
		}
	}
	pthread_mutex_unlock(&conns_lock);
	if (timeout_ms > 0)
		(void)poll(NULL, 0, timeout_ms);
}

/* ---- the run ---- */

/* AG2: an empty argv gives ExecResult("", 2) in every backend. */
static json_t *empty_argv_result(const char *backend)
{
	return json_pack("{s:s,s:s,s:s,s:i,s:n,s:b,s:n,s:b,s:i,s:i,s:f,s:f,s:n,s:b,s:s,s:n}",
			 "output", "[exit code: 2]", "stdout", "", "stderr", "", "exit_code", 2,
			 "signal", "timed_out", 0, "refused", "truncated", 0, "stdout_bytes", 0,
			 "stderr_bytes", 0, "duration_ms", 0.0, "cpu_ms", 0.0, "peak_memory_bytes",
			 "oom_killed", 0, "backend", backend, "workdir");
}

/* The end of a run after its answer: reap the sandbox, remove the temp workdir. */
static void finish_teardown(const struct conn *cn, struct cordon_teardown *td, char *temp_workdir,
			    int hold)
{
	cordon_error e;
	char buf[512];

	if (cordon_teardown_finish(td, &e) < 0)
		daemon_log("tearing down a run: %s", cordon_err_str(&e, buf, sizeof(buf)));
	if (temp_workdir && ident_rmtree(&cn->caller, temp_workdir, &e) < 0)
		daemon_log("removing %s: %s", temp_workdir, cordon_err_str(&e, buf, sizeof(buf)));
	fsutil_temp_release(hold, false);
	free(temp_workdir);
}

/*
 * Who a root caller's command really runs as (backends/local/sandbox.c, prep_identity): the
 * workdir's owner when that is not root, else nobody (65534). HOME, USER and LOGNAME then name
 * that identity (job.c), not root's: the command sees who it is, as AG2's subprocess does. An
 * identity without a passwd entry leaves them unset.
 */
static void root_run_identity(int wdfd, char **name, char **home)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	struct stat st;
	uid_t uid = 65534;

	if (wdfd >= 0 && fstat(wdfd, &st) == 0 && st.st_uid != 0)
		uid = st.st_uid;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return;
	*name = strdup(pw.pw_name);
	*home = strdup(pw.pw_dir);
}

/*
 * The run of the parsed body b: in session s, or in a one-shot session made for it (oneshot:
 * POST /v1/run on Docker or Daytona), or locally. Answers, except when a local run's profile
 * names Docker or Daytona (JOB_NOT_LOCAL, which only the run finds out: cordond does not load
 * the profile of every run): then nothing of it is left, and *ret_elsewhere asks for it to be
 * run again in a one-shot session.
 */
static enum MHD_Result run_parsed(struct MHD_Connection *c, struct conn *cn, struct req *rq,
				  const struct run_body *b, struct session *s, bool oneshot,
				  bool *ret_elsewhere)
{
	struct cordon_teardown *td = NULL;
	struct runner *runner = NULL;
	struct session *os = NULL;
	cordon_error e = { 0 };
	_cleanup_free_ char *workdir = NULL, *js = NULL, *run_name = NULL, *run_home = NULL;
	_cleanup_close_ int wdfd = -1;
	bool temp = false, refused = false, timed_out = false;
	int hold = -1;
	int status = 400;

	if (slot_acquire(cn, &e) < 0)
		return send_error(c, 429, &e);
	if (oneshot) {
		/*
		 * Docker or Daytona for one run: a session made for it by the same code as POST
		 * /v1/sessions (session.c: the workdir opened as the caller, a member's commands
		 * run as the member with their groups, root's as the workdir's owner or nobody),
		 * but unlisted, counted among the caller's sessions while it lives, its
		 * container or sandbox made only once the policy has allowed the command
		 * (session_oneshot_open, from cordon_run), and removed before the answer: a
		 * client that has the answer finds nothing of its run left, as after `cordon run
		 * --backend docker`. Its run is a session run in every other way. A client that
		 * goes away, or cordond's SIGTERM, cancels it as any run; its end comes all the
		 * same, and cordond's stop waits for it (the run slot is held until then).
		 */
		if (session_oneshot(&rq->caller, b, &cn->cancel, &os, &status, &e) < 0)
			goto fail;
		s = os;
	}
	if (s && !session_run_begin(s)) {
		/* Deleted since it was found: gone, as for a run that came after the DELETE. */
		s = NULL;
		status = 404;
		cordon_err(&e, 0, "id: no such session");
		goto fail;
	}

	/* The workdir, always opened or made as the caller (ident.c). */
	if (s) {
		workdir = strdup(session_workdir(s));
		if (!workdir) {
			status = 500;
			cordon_err(&e, ENOMEM, "out of memory");
			goto fail;
		}
	} else if (b->workdir) {
		if (ident_open_workdir(&rq->caller, b->workdir, true, &wdfd, &workdir, &e) < 0) {
			/* The caller's path, unless cordond is short of fds or memory (send_error). */
			status = 400;
			cordon_err_prefix(&e, "workdir");
			goto fail;
		}
	} else if (rq->caller.uid != 0) {
		_cleanup_free_ char *canon = NULL;

		if (ident_mktemp(&rq->caller, "cordon", &workdir, &e) < 0) {
			status = 500;
			cordon_err_prefix(&e, "workdir");
			goto fail;
		}
		temp = true;
		/* Held while in use (fsutil.h): if cordond is killed, its next start sweeps it. */
		{
			cordon_error he;

			hold = fsutil_temp_hold(workdir, &he);
		}
		/* Opened as the caller too: the caller owns the new entry and could swap it. */
		if (ident_open_workdir(&rq->caller, workdir, true, &wdfd, &canon, &e) < 0) {
			status = 500;
			cordon_err_prefix(&e, "workdir");
			goto fail;
		}
	}

	if (rq->caller.uid == 0)
		root_run_identity(s ? session_dirfd(s) : wdfd, &run_name, &run_home);

	struct job j = {
		.body = b,
		.profile = b->profile ? b->profile : (s ? session_profile(s) : "default"),
		.uid = rq->caller.uid,
		.gid = rq->caller.gid,
		/* A member's run has their groups, as their own processes do (docs/security.md). */
		.groups = rq->caller.groups,
		.ngroups = (size_t)rq->caller.ngroups,
		.name = rq->caller.uid == 0 ? run_name : rq->caller.name,
		.home = rq->caller.uid == 0 ? run_home : rq->caller.home,
		.workdir = workdir,
		.workdir_fd = s ? session_dirfd(s) : wdfd,
		.cancel = &cn->cancel,
		.backend_handle = s ? session_backend_handle(s) : NULL,
		.open_backend = os ? session_oneshot_open : NULL,
		.open_backend_arg = os,
		.backend_name = s ? session_backend_name(s) : NULL,
	};
	double t0 = now_s();

	/*
	 * In a runner (runners.c), or, without a runner binary, here. A Docker or Daytona
	 * session's runs are API calls on its container or sandbox, made here: the handle lives
	 * in this process. Runners on but none to be had (none could be started): 503, not a
	 * run here (docs/daemon.md, "When no runner can be started").
	 */
	if (!j.backend_handle && !j.open_backend && runner_get(&runner, &e) < 0) {
		status = 503;
		goto fail;
	}
	if (runner) {
		if (runner_run(runner, &j, s != NULL, rq->body ? rq->body : "", rq->len, &status,
			       &js, &refused, &timed_out, &e) < 0) {
			runner = NULL; /* gone */
			status = 500;
		}
		if (status != 200)
			goto fail;
	} else {
		struct cordon_result res;

		if (job_run(&j, &res, &td, &status, &e) < 0) {
			/* Its container or sandbox could not be had: as a session create says. */
			int st = os ? session_oneshot_error(os, &e) : 0;

			if (st)
				status = st;
			goto fail;
		}
		refused = res.refused != NULL;
		timed_out = res.timed_out;
		if (cordon_result_to_json(&res, &js, &e) < 0) {
			cordon_result_free(&res);
			status = 500;
			goto fail;
		}
		cordon_result_free(&res);
	}
	metrics_run((now_s() - t0) * 1e3);
	atomic_fetch_add(&metrics.runs, 1);
	if (refused)
		atomic_fetch_add(&metrics.refusals, 1);
	if (timed_out)
		atomic_fetch_add(&metrics.timeouts, 1);
	if (os) {
		/* Gone before the answer (above); a container's run leaves no teardown. */
		finish_teardown(cn, TAKE_PTR(td), NULL, -1);
		session_run_end(os);
		session_oneshot_end(TAKE_PTR(os), b->keep);
		s = NULL;
	}
	/*
	 * The result is final: answer now, tear down after (on_completed: teardown_start). The
	 * slot goes now too: the client may send its next run the moment it has this answer,
	 * and each connection holds at most one teardown while it does.
	 */
	rq->runner = TAKE_PTR(runner);
	rq->teardown = TAKE_PTR(td);
	if (temp && !b->keep) {
		rq->temp_workdir = TAKE_PTR(workdir);
		rq->temp_hold = hold;
	} else {
		fsutil_temp_release(hold, true);
	}
	hold = -1;
	temp = false;
	if (s)
		session_run_end(s);
	slot_release(cn);
	return send_json_text(c, 200, TAKE_PTR(js), NULL);
fail:
	/* (Only a run without a session: a session's backend is its own, job.c.) */
	*ret_elsewhere = status == JOB_NOT_LOCAL && !s;
	status = job_error_status(status, &e);
	if (status == 500)
		atomic_fetch_add(&metrics.errors, 1);
	runner_put(runner);
	finish_teardown(cn, td, temp && workdir ? TAKE_PTR(workdir) : NULL, hold);
	if (s)
		session_run_end(s);
	/* A failed run's temp workdir goes, as a local one's does (finish_teardown). */
	session_oneshot_end(os, false);
	slot_release(cn);
	return *ret_elsewhere ? MHD_YES : send_error(c, status, &e);
}

static enum MHD_Result handle_run(struct MHD_Connection *c, struct conn *cn, struct req *rq,
				  struct session *s)
{
	struct run_body b;
	cordon_error e = { 0 };
	enum MHD_Result ret;
	bool elsewhere = false;

	if (body_parse(s ? BODY_SESSION_RUN : BODY_RUN, rq->body ? rq->body : "", rq->len,
		       cfg.max_output_cap, &b, &e) < 0)
		return send_error(c, 400, &e);
	if (b.profile_digest) {
		/*
		 * The client's profile of that name is not cordond's (a CORDON_PROFILE_PATH of
		 * its own): not a run under another profile than the one it meant. `cordon run
		 * --via auto` then runs it directly.
		 */
		struct cordon_profile *mine = NULL;
		char d[17] = "";
		cordon_error pe;

		if (cordon_profile_load(b.profile ? b.profile : "default", &mine, &pe) == 0)
			(void)profile_digest(mine, d, &pe);
		cordon_profile_free(mine);
		if (strcmp(d, b.profile_digest) != 0) {
			cordon_err(&e, 0,
				   "profile: '%s' is not the same profile for cordond as for the "
				   "client (a CORDON_PROFILE_PATH of the client's); --via direct "
				   "runs the client's",
				   b.profile ? b.profile : "default");
			run_body_free(&b);
			return send_error(c, 409, &e);
		}
	}
	if (b.argv && b.argc == 0) {
		const char *backend = s ? session_backend_name(s) : b.backend ? b.backend : "local";

		ret = send_json(c, 200, empty_argv_result(backend));
		run_body_free(&b);
		atomic_fetch_add(&metrics.runs, 1);
		return ret;
	}
	/*
	 * "backend": "docker" or "daytona" runs in a one-shot session (run_parsed); so does a
	 * run whose profile names one of them, once the local path has found that out.
	 */
	ret = run_parsed(c, cn, rq, &b, s, !s && b.backend && strcmp(b.backend, "local"),
			 &elsewhere);
	if (elsewhere) {
		elsewhere = false;
		ret = run_parsed(c, cn, rq, &b, NULL, true, &elsewhere);
	}
	run_body_free(&b);
	return ret;
}

/* ---- other endpoints ---- */

static enum MHD_Result handle_profiles(struct MHD_Connection *c)
{
	char **lines = NULL;
	cordon_error e = { 0 };
	json_t *arr = json_array();

	if (!arr)
		return MHD_NO;
	if (profile_list(&lines, &e) < 0) {
		json_decref(arr);
		return send_error(c, 500, &e);
	}
	for (char **l = lines; l && *l; l++) {
		char *name = *l, *path = strchr(name, '\t'), *desc = NULL;

		if (path) {
			*path++ = '\0';
			desc = strchr(path, '\t');
			if (desc)
				*desc++ = '\0';
		}
		(void)json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "name", name, "path",
							   path ? path : "", "description",
							   desc ? desc : ""));
		free(*l);
	}
	free(lines);
	return send_json(c, 200, json_pack("{s:o}", "profiles", arr));
}

/*
 * A download: size bytes of the regular file fd, read as they are sent. Not
 * MHD_create_response_from_fd64: the file is the session's, so its owner (or a command of the
 * session) may shorten it while it is sent, and libmicrohttpd 0.9.75 then neither ends the
 * answer nor the connection, but retries the short file on a CPU for as long as the client
 * stays (found in review: one member's 128 connections took every CPU). Here a short read
 * ends the answer with an error, which closes the connection: the client gets fewer bytes than
 * the Content-Length and then EOF, HTTP's way of saying the body was cut. A file that grew is
 * sent up to the size it had (libmicrohttpd asks for no more).
 */
static ssize_t file_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	int fd = (int)(intptr_t)cls;
	ssize_t n;

	if (pos > (uint64_t)INT64_MAX)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	do
		n = pread(fd, buf, max, (off_t)pos);
	while (n < 0 && errno == EINTR);
	return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void file_close(void *cls)
{
	(void)close((int)(intptr_t)cls);
}

/* Takes fd (closed on failure too). */
static struct MHD_Response *file_response(int fd, uint64_t size)
{
	struct MHD_Response *r = MHD_create_response_from_callback(
		size, 64 * 1024, file_read, (void *)(intptr_t)fd, file_close);

	if (!r)
		(void)close(fd);
	return r;
}

static enum MHD_Result handle_session(struct MHD_Connection *c, struct conn *cn, struct req *rq,
				      const char *method)
{
	struct route *r = &rq->route;
	cordon_error e = { 0 };
	struct session *s;
	int st;

	if (r->kind == ROUTE_SESSIONS) {
		struct run_body b;
		json_t *j = NULL;

		if (body_parse(BODY_SESSION, rq->len ? rq->body : "{}", rq->len ? rq->len : 2,
			       cfg.max_output_cap, &b, &e) < 0)
			return send_error(c, 400, &e);
		if (sessions_create(&rq->caller, &b, &j, &st, &e) < 0) {
			run_body_free(&b);
			return send_error(c, st, &e);
		}
		run_body_free(&b);
		return send_json(c, 201, j);
	}
	if (r->kind == ROUTE_SESSION && !strcmp(method, "DELETE")) {
		st = session_delete(&rq->caller, r->id, &e);
		if (st)
			return send_error(c, st, &e);
		return send_json(c, 200, json_pack("{s:s,s:b}", "id", r->id, "deleted", 1));
	}
	s = session_get(&rq->caller, r->id);
	if (!s)
		return send_msg(c, 404, "id: no such session");
	enum MHD_Result ret;

	if (r->kind == ROUTE_SESSION) {
		ret = send_json(c, 200, session_json(s));
	} else if (r->kind == ROUTE_SESSION_RUN) {
		ret = handle_run(c, cn, rq, s);
	} else if (!strcmp(method, "PUT")) {
		st = session_put_file(&rq->caller, s, r->path, rq->body ? rq->body : "", rq->len,
				      &e);
		/* The path is the URL's bytes, percent-decoded, and need not be UTF-8 ("{s:s}"
		 * refused it: the file was written and the client got no answer). */
		ret = st ? send_error(c, st, &e)
			 : send_json(c, 200,
				     json_pack("{s:o,s:I}", "path", result_json_text(r->path),
					       "bytes", (json_int_t)rq->len));
	} else if (!strcmp(method, "DELETE")) {
		st = session_delete_file(&rq->caller, s, r->path, &e);
		ret = st ? send_error(c, st, &e)
			 : send_json(c, 200,
				     json_pack("{s:o,s:b}", "path", result_json_text(r->path),
					       "deleted", 1));
	} else {
		int fd = -1;
		uint64_t size = 0;
		struct MHD_Response *resp;

		st = session_get_file(&rq->caller, s, r->path, &fd, &size, &e);
		if (st) {
			ret = send_error(c, st, &e);
		} else {
			/* Streamed from fd, which the response owns: a large file is never in memory. */
			resp = file_response(fd, size);
			if (!resp) {
				ret = MHD_NO;
			} else {
				(void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
							      "application/octet-stream");
				ret = MHD_queue_response(c, 200, resp);
				MHD_destroy_response(resp);
				metrics_http(200);
			}
		}
	}
	session_put(s);
	return ret;
}

static enum MHD_Result dispatch(struct MHD_Connection *c, struct conn *cn, struct req *rq,
				const char *method)
{
	switch (rq->route.kind) {
	case ROUTE_HEALTH:
		return send_json(c, 200,
				 json_pack("{s:s,s:s}", "status", "ok", "version", CORDON_VERSION));
	case ROUTE_METRICS: {
		size_t n = 0;
		char *m = metrics_render(&n);

		if (!m)
			return MHD_NO;
		return send_buf(c, 200, m, n, "text/plain; version=0.0.4; charset=utf-8", NULL);
	}
	case ROUTE_PROFILES:
		return handle_profiles(c);
	case ROUTE_RUN:
		return handle_run(c, cn, rq, NULL);
	default:
		return handle_session(c, cn, rq, method);
	}
}

/* ---- MHD callbacks ---- */

static unsigned conns_of(uid_t uid)
{
	unsigned n = 0;

	for (struct conn *o = conns; o; o = o->next)
		if (o->ident_ok && !o->refused && o->caller.uid == uid)
			n++;
	return n;
}

/*
 * Connection limits at accept, before a byte is read: a caller (root aside) may hold at most
 * max_conns_per_caller connections, and all callers but root together at most
 * max_connections less a reserve, so that idle or slow connections of one caller can neither
 * crowd out the others nor root's health checks. Over a limit, the connection gets a 429 at
 * once and is shut down (libmicrohttpd then sees EOF and frees its slot). Called with
 * conns_lock held, before cn is in the list.
 */
static unsigned conn_reserve(void)
{
	unsigned r = cfg.max_connections / 8;

	return r < 1 ? 1 : r;
}

static bool conn_over_limit(const struct conn *cn, cordon_error *e)
{
	unsigned mine = 0, others = 0, cap;

	if (!cn->ident_ok || cn->caller.uid == 0)
		return false;
	for (const struct conn *o = conns; o; o = o->next) {
		if (!o->ident_ok || o->refused || o->caller.uid == 0)
			continue;
		others++;
		if (o->caller.uid == cn->caller.uid)
			mine++;
	}
	if (mine >= cfg.max_conns_per_caller) {
		cordon_err(e, 0, "connections: more than %u from one caller",
			   cfg.max_conns_per_caller);
		return true;
	}
	cap = cfg.max_connections > conn_reserve() ? cfg.max_connections - conn_reserve() : 0;
	if (others >= cap) {
		cordon_err(e, 0, "connections: %u open, the daemon's limit (%u are kept for root)",
			   others, conn_reserve());
		return true;
	}
	return false;
}

static void conn_refuse(int fd, const cordon_error *err)
{
	char body[400], msg[600];
	json_t *j = json_pack("{s:o}", "error", result_json_text(err->msg));
	char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
	int n;

	(void)snprintf(body, sizeof(body), "%s\n", js ? js : "{\"error\":\"connections\"}");
	free(js);
	json_decref(j);
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
		     "Retry-After: 1\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
		     strlen(body), body);
	if (n > 0)
		(void)send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)shutdown(fd, SHUT_RDWR);
}

/* Does the request carry a body (a non-zero Content-Length, or chunked)? */
static bool request_has_body(struct MHD_Connection *c, const char *content_length)
{
	if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return true;
	return content_length && strtoull(content_length, NULL, 10) > 0;
}

/*
 * The request head is bounded by cordond, with a JSON error naming what is too long: the
 * target at CORDOND_MAX_TARGET bytes (414), any one header or all of them together at
 * CORDOND_MAX_HEADERS (431). libmicrohttpd's pool (CORDOND_HEAD_POOL) is larger, so that only
 * a head beyond it meets libmicrohttpd's own, non-JSON, 431.
 */
#define CORDOND_MAX_TARGET 4096
#define CORDOND_MAX_HEADERS 16384
#define CORDOND_HEAD_POOL 65536

struct head_size {
	size_t total;
	size_t largest;
	char name[64];
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct head_size *h = cls;
	size_t n = (key ? strlen(key) : 0) + (value ? strlen(value) : 0) + 4; /* ": " CRLF */

	(void)kind;
	h->total += n;
	if (n > h->largest) {
		h->largest = n;
		(void)snprintf(h->name, sizeof(h->name), "%s", key ? key : "");
	}
	return MHD_YES;
}

/* 0, or 414/431 with *e naming the part of the head that is too long. */
static int check_head(struct MHD_Connection *c, const char *url, cordon_error *e)
{
	struct head_size q = { 0 }, h = { 0 };

	/* The target is the path and its query arguments (libmicrohttpd splits them off). */
	(void)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, count_header, &q);
	if (strlen(url) + q.total > CORDOND_MAX_TARGET) {
		cordon_err(e, 0, "path: longer than %d bytes", CORDOND_MAX_TARGET);
		return 414;
	}
	(void)MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &h);
	if (h.total > CORDOND_MAX_HEADERS) {
		cordon_err(e, 0, "headers: larger than %d bytes (the largest is '%s')",
			   CORDOND_MAX_HEADERS, h.name);
		return 431;
	}
	return 0;
}

/*
 * A run's teardown after its answer (the runner's "done": the sandbox reaped, its cgroup and
 * temp workdir removed, the next run staged; then a temp workdir made here as the caller), in
 * a thread of its own, so that the connection can read its next request at once: a client
 * sending run after run no longer waits for the teardown of the last one (about 1.5 ms here),
 * and its next run goes to another idle runner meanwhile. Bounded as before: a connection has
 * at most one teardown going on while it reads and runs its next request (the one before is
 * waited for when the next is started, and when the connection closes, before its slot
 * among the caller's connections is given up). A connection's last request (Connection:
 * close, as `cordon run --via daemon` sends) has no next one to speed up: its teardown is done
 * here, before the close, so such a client that reads to EOF finds nothing of its run left.
 * Only a run goes on meanwhile: any other request waits for it first (on_request), so a
 * session's files or its deletion right after a run see that run over entirely. When no
 * thread can be made, it is done here too.
 */
struct teardown {
	pthread_t thread;
	const struct conn *cn; /* outlives this: it waits for it before it is freed */
	struct runner *runner;
	struct cordon_teardown *td;
	char *temp_workdir;
	int hold;
};

static void teardown_do(struct teardown *t)
{
	/* The runner's teardown first: nothing of the run is left when its workdir goes. */
	runner_put(TAKE_PTR(t->runner));
	finish_teardown(t->cn, TAKE_PTR(t->td), TAKE_PTR(t->temp_workdir), t->hold);
	t->hold = -1;
}

static void *teardown_main(void *arg)
{
	teardown_do(arg);
	return NULL;
}

static void teardown_wait(struct conn *cn)
{
	struct teardown *t = TAKE_PTR(cn->teardown);

	if (!t)
		return;
	(void)pthread_join(t->thread, NULL);
	free(t);
}

static void teardown_start(struct conn *cn, struct req *rq)
{
	struct teardown *t;
	pthread_attr_t attr;
	bool started = false;

	if (!rq->runner && !rq->teardown && !rq->temp_workdir) {
		fsutil_temp_release(rq->temp_hold, false);
		rq->temp_hold = -1;
		return;
	}
	teardown_wait(cn);
	t = rq->last ? NULL : calloc(1, sizeof(*t));
	if (!t) {
		struct teardown here = { .cn = cn, .hold = rq->temp_hold };

		here.runner = TAKE_PTR(rq->runner);
		here.td = TAKE_PTR(rq->teardown);
		here.temp_workdir = TAKE_PTR(rq->temp_workdir);
		rq->temp_hold = -1;
		teardown_do(&here);
		return;
	}
	*t = (struct teardown){ .cn = cn,
				.runner = TAKE_PTR(rq->runner),
				.td = TAKE_PTR(rq->teardown),
				.temp_workdir = TAKE_PTR(rq->temp_workdir),
				.hold = rq->temp_hold };
	rq->temp_hold = -1;
	if (pthread_attr_init(&attr) == 0) {
		(void)pthread_attr_setstacksize(&attr, 256 * 1024);
		started = pthread_create(&t->thread, &attr, teardown_main, t) == 0;
		(void)pthread_attr_destroy(&attr);
	}
	if (!started) {
		teardown_do(t);
		free(t);
		return;
	}
	cn->teardown = t;
}

/* Does a comma-separated header value hold token (any case, spaces around it ignored)? */
static bool has_token(const char *v, const char *token)
{
	size_t n = strlen(token);

	while (v && *v) {
		size_t k;

		v += strspn(v, " \t,");
		k = strcspn(v, ",");
		while (k > 0 && (v[k - 1] == ' ' || v[k - 1] == '\t'))
			k--;
		if (k == n && !strncasecmp(v, token, n))
			return true;
		v = strchr(v, ',');
	}
	return false;
}

/* Connection: close, or HTTP/1.0 without keep-alive: the client sends nothing more. */
static bool is_last_request(struct MHD_Connection *c, const char *version)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONNECTION);

	if (has_token(v, "close"))
		return true;
	return version && !strcmp(version, MHD_HTTP_VERSION_1_0) && !has_token(v, "keep-alive");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *cn = ci ? ci->socket_context : NULL;
	struct req *rq = *con_cls;

	if (!cn || cn->refused)
		return MHD_NO; /* answered (429) at accept */
	if (!rq) {
		const char *cl;
		unsigned mine;

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->temp_hold = -1;
		rq->last = is_last_request(c, version);
		rq->cn = cn;
		*con_cls = rq;
		/* The peer as it is now (ident.c caches it while the group database is unchanged). */
		if (!cn->ident_ok)
			cordon_err(&rq->err, cn->ident_errno,
				   "cannot identify the caller (when it connected)");
		else if (ident_from_socket(cn->fd, cordon_gid, have_group, &rq->caller, &rq->err) ==
			 0)
			rq->ident_ok = true;
		else
			cordon_err_prefix(&rq->err, "cannot identify the caller");
		/* Authorisation first: an unauthorised caller learns nothing else. */
		if (!rq->ident_ok) {
			/* A shortage of cordond's (no fd for our dup, or for NSS) is a 503. */
			rq->status = job_error_status(500, &rq->err);
		} else if (!rq->caller.authorised) {
			rq->status = 403;
			cordon_err(
				&rq->err, 0,
				"not authorised: uid %u is neither root nor a member of group %s",
				(unsigned)rq->caller.uid, cfg.group);
		} else if (atomic_load(&daemon_stopping)) {
			rq->status = 503;
			cordon_err(&rq->err, 0, "cordond is stopping");
		} else if (cn->url_nul) {
			rq->status = 400;
			cordon_err(&rq->err, 0, "path: contains a NUL byte");
		} else if ((rq->status = check_head(c, url, &rq->err)) != 0) {
			/* 414 or 431, decided */
		} else {
			rq->status = route_parse(method, url, &rq->route, &rq->allow, &rq->err);
		}
		/*
		 * Only a run goes on while the connection's last run is still being torn down: a
		 * session's file or its deletion right after a run sees that run over entirely
		 * (its sandbox reaped), as when the teardown came before the next request.
		 */
		if (rq->status ||
		    (rq->route.kind != ROUTE_RUN && rq->route.kind != ROUTE_SESSION_RUN))
			teardown_wait(cn);
		if (!rq->status) {
			pthread_mutex_lock(&conns_lock);
			mine = conns_of(cn->caller.uid);
			pthread_mutex_unlock(&conns_lock);
			if (mine > cfg.max_conns_per_caller) {
				rq->status = 429;
				cordon_err(&rq->err, 0, "connections: more than %u from one caller",
					   cfg.max_conns_per_caller);
			}
		}
		rq->limit = rq->route.kind == ROUTE_SESSION_FILE ? cfg.max_file : cfg.max_body;
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (!rq->status && cl) {
			char *end = NULL;
			unsigned long long n;

			errno = 0;
			n = strtoull(cl, &end, 10);
			/* Refuse before reading a byte of it. */
			if (errno || *end || n > rq->limit) {
				rq->status = 413;
				cordon_err(&rq->err, 0, "body: larger than %zu bytes", rq->limit);
			}
		}
		/*
		 * An error decided now is sent now only when there is no body to wait for, or
		 * the body is the problem (413). Otherwise the (bounded) body is read and thrown
		 * away first: many HTTP clients cannot read an answer while still sending, and
		 * would see a broken pipe instead of the 403 or 404.
		 */
		if (rq->status && (rq->status == 413 || !request_has_body(c, cl))) {
			pthread_mutex_lock(&conns_lock);
			cn->request_complete = true;
			cn->linger = rq->status == 413;
			pthread_mutex_unlock(&conns_lock);
			return send_error_allow(c, rq->status, rq->err.msg, rq->allow);
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (rq->status) {
			/* The body of a request already refused: counted, not kept. */
			rq->discarded += n;
			if (rq->discarded > rq->limit)
				rq->too_big = true;
			return rq->discarded > 4 * rq->limit + 65536 ? MHD_NO : MHD_YES;
		}
		if (rq->too_big || rq->len + n > rq->limit) {
			/* Chunked, so no Content-Length to refuse early: discard, then 413 —
			 * but not forever. */
			rq->too_big = true;
			rq->discarded += n;
			return rq->discarded > 4 * rq->limit + 65536 ? MHD_NO : MHD_YES;
		}
		if (rq->len + n + 1 > rq->cap) {
			size_t nc = rq->cap ? rq->cap : 4096;
			char *nb;

			while (nc < rq->len + n + 1)
				nc *= 2;
			if (bodies_take(cn, nc - rq->cap, &rq->err) < 0) {
				/* Too much held at once (bodies_take): thrown away, then 503. */
				bodies_give(cn, rq->cap);
				free(rq->body);
				rq->body = NULL;
				rq->cap = rq->len = 0;
				rq->status = 503;
				rq->discarded += n;
				return MHD_YES;
			}
			nb = realloc(rq->body, nc);
			if (!nb) {
				bodies_give(cn, nc - rq->cap);
				return MHD_NO;
			}
			rq->body = nb;
			rq->cap = nc;
		}
		memcpy(rq->body + rq->len, upload_data, n);
		rq->len += n;
		rq->body[rq->len] = '\0';
		return MHD_YES;
	}
	pthread_mutex_lock(&conns_lock);
	cn->request_complete = true;
	pthread_mutex_unlock(&conns_lock);
	if (rq->status && !rq->too_big)
		return send_error_allow(c, rq->status, rq->err.msg, rq->allow);
	if (rq->too_big) {
		cordon_error e;

		cordon_err(&e, 0, "body: larger than %zu bytes", rq->limit);
		return send_error(c, 413, &e);
	}
	return dispatch(c, cn, rq, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *rq = *con_cls;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *cn = ci ? ci->socket_context : NULL;

	if (rq) {
		if (cn) {
			teardown_start(cn, rq);
		} else {
			/* Cannot happen (the socket context outlives its requests). */
			cordon_error e;

			runner_put(TAKE_PTR(rq->runner));
			(void)cordon_teardown_finish(TAKE_PTR(rq->teardown), &e);
			fsutil_temp_release(rq->temp_hold, false);
			free(rq->temp_workdir);
		}
		bodies_give(rq->cn, rq->cap);
		caller_free(&rq->caller);
		free(rq->body);
		free(rq);
		*con_cls = NULL;
	}
	if (cn) {
		/* Keep-alive: the next request has its own deadline, counted from now. */
		pthread_mutex_lock(&conns_lock);
		cn->request_started = now_s();
		cn->request_complete = false;
		pthread_mutex_unlock(&conns_lock);
	}
}

/*
 * The lingering close (what nginx and Apache do after an early error). A request refused
 * before its body was read (413 on its Content-Length) gets its answer at once, and then
 * libmicrohttpd closes the connection; a client still sending the body would see EPIPE on
 * its next write and, like most HTTP clients, never read the answer. So our dup of the socket
 * outlives MHD's close: a small thread keeps reading and throwing away what the client sends,
 * until it closes its end, for at most LINGER_SECONDS and LINGER_BYTES, then closes. Bounded
 * overall too (LINGER_MAX at once): past that a connection is closed at once, as before.
 */
#define LINGER_SECONDS 5.0
#define LINGER_BYTES (256ull << 20)
#define LINGER_MAX 32
static atomic_uint lingering;

static void *linger_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	double end = now_s() + LINGER_SECONDS;
	unsigned long long got = 0;
	char buf[65536];

	for (;;) {
		double left = end - now_s();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (left <= 0 || got > LINGER_BYTES)
			break;
		if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			break;
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		got += (unsigned long long)n;
	}
	(void)close(fd);
	atomic_fetch_sub(&lingering, 1);
	return NULL;
}

/* Hand fd to a lingering thread; closes it at once when that is not possible. */
static void linger_close(int fd)
{
	pthread_attr_t attr;
	pthread_t t;
	bool started = false;

	if (atomic_fetch_add(&lingering, 1) < LINGER_MAX && pthread_attr_init(&attr) == 0) {
		(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		(void)pthread_attr_setstacksize(&attr, 128 * 1024);
		started = pthread_create(&t, &attr, linger_main, (void *)(intptr_t)fd) == 0;
		(void)pthread_attr_destroy(&attr);
	}
	if (!started) {
		atomic_fetch_sub(&lingering, 1);
		(void)close(fd);
	}
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct conn *cn;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		cordon_error e;

		cn = calloc(1, sizeof(*cn));
		if (!cn)
			return;
		cn->fd = -1;
		cn->request_started = now_s();
		/*
		 * Our own dup of the socket: the watcher polls it for a hang-up and shuts it down
		 * on a deadline without racing MHD's close() of the original number.
		 */
		if (ci)
			cn->fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 3);
		if (cn->fd < 0)
			cn->ident_errno = ci ? errno : 0;
		else if (ident_from_socket(cn->fd, cordon_gid, have_group, &cn->caller, &e) == 0)
			cn->ident_ok = true;
		else
			cn->ident_errno = e.code;
		/*
		 * Not identified for want of an fd or memory: every request on it would fail, so
		 * its one answer (a 503) closes it, and the client's retry comes on a new one.
		 */
		cn->close_after = !cn->ident_ok && job_shortage(cn->ident_errno);
		pthread_mutex_lock(&conns_lock);
		cn->refused = conn_over_limit(cn, &e);
		cn->next = conns;
		if (conns)
			conns->prev = cn;
		conns = cn;
		pthread_mutex_unlock(&conns_lock);
		*socket_context = cn;
		if (cn->refused) {
			atomic_fetch_add(&metrics.rejected, 1);
			conn_refuse(cn->fd, &e);
		}
		return;
	}
	cn = *socket_context;
	if (!cn)
		return;
	/* Its last run's teardown is over before the connection stops counting as the caller's. */
	teardown_wait(cn);
	pthread_mutex_lock(&conns_lock);
	if (cn->prev)
		cn->prev->next = cn->next;
	else
		conns = cn->next;
	if (cn->next)
		cn->next->prev = cn->prev;
	pthread_mutex_unlock(&conns_lock);
	if (cn->fd >= 0 && cn->linger)
		linger_close(cn->fd);
	else if (cn->fd >= 0)
		(void)close(cn->fd);
	caller_free(&cn->caller);
	free(cn);
	*socket_context = NULL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* %XX decoding that remembers a %00: a C string cannot carry it to the handler. */
static size_t on_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	char *w = s;

	for (char *r = s; *r;) {
		int hi, lo;

		if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0) {
			char ch = (char)(hi * 16 + lo);

			if (ch == '\0') {
				const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
					c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

				if (ci && ci->socket_context)
					((struct conn *)ci->socket_context)->url_nul = true;
				ch = '\x01';
			}
			*w++ = ch;
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	daemon_log("http: %s", buf);
}

struct MHD_Daemon *http_start(int listen_fd, cordon_error *e)
{
	struct MHD_Daemon *d;
	struct group gr, *grp = NULL;
	char buf[4096];

	if (getgrnam_r(cfg.group, &gr, buf, sizeof(buf), &grp) == 0 && grp) {
		cordon_gid = grp->gr_gid;
		have_group = true;
	} else {
		daemon_log("group '%s' does not exist: only root is authorised", cfg.group);
	}
	d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			MHD_USE_ITC | MHD_USE_ERROR_LOG,
		0, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
		MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_CONNECTION_LIMIT,
		cfg.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, cfg.request_timeout,
		/* Above cordond's own head limits: see check_head. */
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CORDOND_HEAD_POOL,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, NULL, MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, NULL,
		MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
	if (!d)
		return cordon_err(e, errno, "cannot start the HTTP server"), NULL;
	return d;
}
