/* SPDX-License-Identifier: MIT */
/*
 * cordond's internal interfaces. The daemon is a thin front end over libcordon: HTTP (libmicrohttpd,
 * one thread per connection) → authorised caller → decoded body → cordon_run() as the caller →
 * JSON reply. Everything here is internal to runtime/daemon/.
 */
#pragma once

#include <cordon/cordon.h>

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DAEMON_DEFAULT_SOCKET "/run/cordon/cordon.sock"
#define DAEMON_GROUP "cordon"

/* Limits and timeouts; every one has a command-line option (cordond --help). */
struct daemon_config {
	const char *socket_path;
	const char *group;
	unsigned max_runs;		   /* runs in flight, all callers */
	unsigned max_runs_per_caller;	   /* runs in flight per uid */
	unsigned max_sessions_per_caller;  /* live sessions per uid */
	unsigned max_connections;	   /* open connections, all callers */
	unsigned max_conns_per_caller;	   /* open connections per uid */
	size_t max_body;		   /* JSON request bodies, bytes */
	size_t max_file;		   /* file uploads, bytes */
	size_t max_bodies;		   /* request bodies held at once, all connections, bytes */
	size_t max_bodies_per_caller;	   /* request bodies held at once per uid, bytes */
	unsigned request_timeout;	   /* seconds to send a complete request; idle keep-alive */
	double session_idle;		   /* seconds before an unused session is torn down */
	double runner_idle;		   /* the runner pool's memory of the load (runners.c) */
	double grace;			   /* seconds SIGTERM waits for in-flight runs */
	int64_t max_output_cap;		   /* the largest max_output a request may ask for */
	unsigned long nofile_soft;	   /* RLIMIT_NOFILE's soft limit as cordond was started */
	struct cordon_list docker_images;  /* --docker-image: what a member may name (image.c) */
	struct cordon_list daytona_images; /* --daytona-image: the same for Daytona */
};

/* The variable that gives a runner the soft RLIMIT_NOFILE to restore (cordond.c, runner.c). */
#define RUNNER_NOFILE_ENV "CORDON_RUNNER_NOFILE"
/*
 * glibc's malloc for a runner (runners.c sets it, runner.c removes it from its environment at
 * start): every freed block is overwritten (perturb), and none is kept aside unwiped (tcache,
 * whose blocks perturb skips). A runner serves every caller in turn, and each sandbox is a
 * clone of it: without this, what one caller's run left in freed memory (its command, env,
 * output) was copied into the init of the next caller's run (docs/security.md).
 */
#define RUNNER_MALLOC_ENV "GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.perturb=165"

extern struct daemon_config cfg;
extern atomic_bool daemon_stopping;

/* ---- ident.c: who is calling, and acting as them ---- */

struct caller {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t *groups; /* the passwd entry's groups (getgrouplist), the primary gid first */
	int ngroups;
	char *name; /* NULL when the uid has no passwd entry */
	char *home;
	bool authorised;
};

/* Read SO_PEERCRED of a connected Unix socket, resolve the groups and decide authorisation. */
int ident_from_socket(int fd, gid_t cordon_gid, bool have_group, struct caller *ret,
		      cordon_error *e);
void caller_free(struct caller *c);
/*
 * Run fn(arg) on this thread with the file-system identity (fsuid, fsgid, supplementary groups)
 * of the caller, so that every path lookup, open, mkdir and unlink is checked by the kernel as
 * the caller's own would be. Returns fn's value, or -1 with *e when the switch failed.
 */
int ident_as_caller(const struct caller *c, int (*fn)(void *arg, cordon_error *e), void *arg,
		    cordon_error *e);
/* Open (creating it with parents if missing) a workdir as the caller; check the caller may read,
 * write and search it; return the fd and its canonical path. local: for the local sandbox,
 * which refuses some directories (backend_local_workdir_ok), refused here first. */
int ident_open_workdir(const struct caller *c, const char *path, bool local, int *ret_fd,
		       char **ret_path, cordon_error *e);
/* A fresh /tmp/cordon-XXXXXX owned by the caller (mode 0700). */
int ident_mktemp(const struct caller *c, const char *prefix, char **ret_path, cordon_error *e);
/* Remove a directory tree as the caller. */
int ident_rmtree(const struct caller *c, const char *path, cordon_error *e);

/* ---- image.c: the images a member may name ---- */

/*
 * ref in the form two spellings of the same image share (registry/repository:tag, Docker Hub's
 * docker.io/library/ filled in, :latest when there is neither tag nor digest; an ID as
 * sha256:HEX). -1 with *e ("'REF' is not an image reference") when ref is not one.
 */
int image_normalize(const char *ref, char **ret, cordon_error *e);
/*
 * What a member who asked for image `asked` gets: profile_image (the profile's, may be NULL)
 * or the entry of allowed that names the same image, as written there; NULL: not allowed.
 */
const char *image_for_member(const char *asked, const char *profile_image,
			     const struct cordon_list *allowed);

/* ---- body.c: request routing and JSON body decoding (pure; the fuzz target) ---- */

enum route_kind {
	ROUTE_HEALTH,
	ROUTE_RUN,
	ROUTE_PROFILES,
	ROUTE_METRICS,
	ROUTE_SESSIONS,	    /* POST /v1/sessions */
	ROUTE_SESSION,	    /* GET, DELETE /v1/sessions/{id} */
	ROUTE_SESSION_RUN,  /* POST /v1/sessions/{id}/run */
	ROUTE_SESSION_FILE, /* PUT, GET, DELETE /v1/sessions/{id}/files/{path} */
};

#define SESSION_ID_LEN 32

struct route {
	enum route_kind kind;
	char id[SESSION_ID_LEN + 1];
	const char *path; /* inside url: the file path of ROUTE_SESSION_FILE */
	bool has_body;	  /* the method takes a body */
};

/*
 * Map (method, decoded url) to a route. Returns 0, or an HTTP status (404, 405, 400) with *e
 * naming what is wrong; *ret_allow is the Allow header for a 405.
 */
int route_parse(const char *method, const char *url, struct route *ret, const char **ret_allow,
		cordon_error *e);
/* Check a session file path: relative, no "..", no empty or control characters. 0 or -1. */
int route_check_file_path(const char *path, cordon_error *e);

/* The decoded body of POST /v1/run, /v1/sessions/{id}/run and POST /v1/sessions. */
struct run_body {
	json_t *root; /* owns every string below */
	const char *command;
	const char **argv; /* NULL-terminated; NULL when absent */
	size_t argc;
	const char *profile;
	/*
	 * profile_digest() of the profile the client's own lookup of `profile` found (with a
	 * CORDON_PROFILE_PATH of its own): the run is refused (409) when cordond's differs,
	 * rather than run silently under a profile the client did not mean.
	 */
	const char *profile_digest;
	const char *workdir;
	const char *backend;
	const char *image; /* POST /v1/sessions with backend docker: the container image */
	json_t *env;	   /* borrowed object of string values, or NULL */
	bool has_timeout;
	double timeout;
	char timeout_text[64];
	bool has_max_output;
	int64_t max_output;
	struct cordon_list allowed, blocked, ignore;
	int readonly; /* -1: the profile's */
	int mode;     /* -1: the profile's */
	int network;  /* -1: the profile's */
	bool keep;
	bool has_umask; /* "umask": the client's, for the command (else cordond's 022) */
	unsigned umask;
};

/* What one field of a request body may hold (body.c); the CLI checks before sending. */
#define BODY_MAX_ITEM 65536   /* an env value, an allowed/blocked/ignore pattern */
#define BODY_MAX_ENV_NAME 256 /* an env name */

enum body_kind {
	BODY_RUN,	  /* /v1/run */
	BODY_SESSION_RUN, /* /v1/sessions/{id}/run: no profile, backend or workdir */
	BODY_SESSION,	  /* POST /v1/sessions: backend, profile, workdir only */
};

/* Decode and validate; -1 with e->msg = "field: why" (always a 400). */
int body_parse(enum body_kind kind, const char *buf, size_t n, int64_t max_output_cap,
	       struct run_body *ret, cordon_error *e);
void run_body_free(struct run_body *b);
/* A profile name the daemon accepts (names only: a path would let a caller load any file). */
bool body_valid_profile_name(const char *s);
/* Whether s is valid UTF-8, as a JSON string must be (jansson's own check). */
bool body_is_text(const char *s);
/* shlex.join: the command AG2 would have judged for an argv. */
char *body_shlex_join(const char *const *argv);

/* ---- job.c: one run of a request (in a runner, or in cordond itself) ---- */

struct job {
	const struct run_body *body;
	const char *profile; /* the body's, the session's, or "default" */
	uid_t uid;	     /* the caller */
	gid_t gid;
	const gid_t *groups; /* the caller's groups (struct caller), which a member's run has */
	size_t ngroups;
	const char *name; /* NULL when the uid has no passwd entry */
	const char *home;
	const char *workdir; /* NULL: a temp dir of libcordon's own (root callers) */
	int workdir_fd;	     /* the workdir, opened as the caller; -1 with workdir NULL */
	volatile int *cancel;
	void *backend_handle; /* a Docker or Daytona session's handle (session_backend_handle), or NULL */
	/* Or, for a one-shot session (session_oneshot), how to open it once the policy allows. */
	int (*open_backend)(void *arg, void **ret_h, cordon_error *e);
	void *open_backend_arg;
	/* A session's backend ("local", "docker", "daytona"); NULL without a session */
	const char *backend_name;
};

/*
 * job_run's status for a run without a session whose body or profile names Docker or
 * Daytona, which the local path cannot serve: cordond then runs it in a one-shot session
 * (http.c). Never sent to a client.
 */
#define JOB_NOT_LOCAL 421

/*
 * The profile the request sees, the command the policy judges, and the run. 0 with *res and
 * *td (what is left to tear down, cordon_request.teardown); -1 with *status (400: the
 * request's profile is the problem; 500: cordon failed) and *e.
 */
int job_run(const struct job *j, struct cordon_result *res, struct cordon_teardown **td,
	    int *status, cordon_error *e);
/*
 * Is err a shortage on the server's side (no fd, memory, process or thread to be had: EMFILE,
 * ENFILE, ENOMEM, EAGAIN) rather than anything the request did?
 */
bool job_shortage(int err);
/*
 * The HTTP status of a failed request: status, unless e's cause is a shortage (job_shortage),
 * which is no fault of the request's and passes: then 503 (with Retry-After), and *e becomes
 * one line naming it, "busy: <what failed>: <the shortage>; try again" (code 0).
 */
int job_error_status(int status, cordon_error *e);

/* ---- frame.c: cordond <-> runner messages ---- */

/* Far above any request (bodies are bounded by cfg.max_body) or result (max_output_cap). */
#define FRAME_MAX (256u << 20)

/* header: one line of JSON; payload: n bytes (may be NULL when n is 0); pass_fd: -1 or an fd. */
int frame_send(int fd, const char *header, const char *payload, size_t n, int pass_fd);
/*
 * 1 with *ret_header (malloc'd; free it, and only it), *ret_payload and *ret_n (inside the same
 * allocation) and, when the frame brought one and ret_fd is not NULL, *ret_fd; 0 at EOF; -1.
 */
int frame_recv(int fd, char **ret_header, char **ret_payload, size_t *ret_n, int *ret_fd);

/* ---- runner.c: `cordon __cordond-runner`, serving cordond on fd (3) ---- */

int runner_main(int fd);

/* ---- runners.c: cordond's pool of runners ---- */

struct runner;

/* Find the runner binary and start the pool; runs stay in cordond when there is none. */
void runners_start(void);
void runners_stop(void);
/*
 * 0 with *ret: an idle runner, or NULL when runs happen in cordond itself (no runner binary, or
 * one that can no longer be run). -1 with *e (a 503): runners are on, but none could be had
 * within a few seconds (none could be started, for a shortage: the spawner keeps trying).
 */
int runner_get(struct runner **ret, cordon_error *e);
/*
 * Hand j (and the request body) to r and wait for the result. 0: *ret_status is the HTTP
 * status; with 200, *ret_json is the result (one line, malloc'd) and *ret_refused,
 * *ret_timed_out say what it was; otherwise *e says why. A non-zero *j->cancel is passed on.
 * -1 with *e: the runner failed; it is gone, and nothing of the run is left.
 */
int runner_run(struct runner *r, const struct job *j, bool session, const char *body, size_t n,
	       int *ret_status, char **ret_json, bool *ret_refused, bool *ret_timed_out,
	       cordon_error *e);
/* After the answer: wait until r has torn its run down, then keep it for the next (NULL-safe). */
void runner_put(struct runner *r);
/*
 * Once a second: let idle runners beyond what the recent load needed go, a few at a time, and
 * remove what dead runners left that could not be removed before (no fd to spare, say).
 */
void runners_trim(void);

/* ---- session.c ---- */

struct session;

int sessions_create(const struct caller *c, const struct run_body *b, json_t **ret, int *status,
		    cordon_error *e);
/* Look up a live session owned by the caller; NULL if none (404). Takes a reference. */
struct session *session_get(const struct caller *c, const char *id);
void session_put(struct session *s);
const char *session_workdir(const struct session *s);
/* The session's workdir, held open since it was created (opened as its owner). */
int session_dirfd(const struct session *s);
const char *session_profile(const struct session *s);
/* The session's open Docker container (backend docker), or NULL (local). */
void *session_backend_handle(const struct session *s);
/* The backend of session_backend_handle: "docker", "daytona", or "local" (no handle). */
const char *session_backend_name(const struct session *s);
json_t *session_json(const struct session *s);
/* 0, 404 or 409 (runs in progress). */
int session_delete(const struct caller *c, const char *id, cordon_error *e);
/*
 * A one-shot session for a run of POST /v1/run on Docker or Daytona (session.c): made for c
 * and b as a session is, but unlisted, counted among c's sessions until it ends, and with its
 * container or sandbox not yet opened: session_oneshot_open does that (cordon_request's
 * open_backend, called once the policy has allowed the run), cut short by *cancel. 0 with
 * *ret, or -1 with *status and *e.
 */
int session_oneshot(const struct caller *c, const struct run_body *b, volatile int *cancel,
		    struct session **ret, int *status, cordon_error *e);
int session_oneshot_open(void *s, void **ret_h, cordon_error *e);
/* A failed session_oneshot_open's status (as a session create's would be) and error, or 0. */
int session_oneshot_error(const struct session *s, cordon_error *e);
/* Remove its container or sandbox and its temp workdir (unless keep), and free it (NULL-safe). */
void session_oneshot_end(struct session *s, bool keep);
/*
 * Count a run in the session, which a DELETE then refuses (409): false when a DELETE has taken
 * the session since it was found (session_get), and no run may start in it then.
 */
bool session_run_begin(struct session *s);
void session_run_end(struct session *s);
/* Files: returns an HTTP status; GET gives an fd and its size. */
int session_put_file(const struct caller *c, struct session *s, const char *path, const void *buf,
		     size_t n, cordon_error *e);
int session_get_file(const struct caller *c, struct session *s, const char *path, int *ret_fd,
		     uint64_t *ret_size, cordon_error *e);
int session_delete_file(const struct caller *c, struct session *s, const char *path,
			cordon_error *e);
/* Tear down sessions idle for longer than cfg.session_idle. */
void sessions_expire(void);
/* At shutdown: forget every session, leaving their workdirs in place. */
void sessions_shutdown(void);
unsigned sessions_count(void);

/* ---- metrics.c ---- */

struct metrics {
	atomic_ulong runs;	/* results produced */
	atomic_ulong refusals;	/* of which the policy refused */
	atomic_ulong timeouts;	/* of which timed out */
	atomic_ulong errors;	/* cordon itself failed (500) */
	atomic_ulong cancelled; /* killed because the client went away or at shutdown */
	atomic_ulong rejected;	/* 429s */
	atomic_ulong forbidden; /* 403s */
	atomic_long in_flight;
	atomic_ulong http[16]; /* by status, see metrics.c */
	atomic_ulong hist[16]; /* run duration buckets */
	atomic_ulong dur_sum_us;
	atomic_ulong runners_started;	    /* runners.c: processes started */
	atomic_ulong runner_waits;	    /* runs that found no idle runner and waited for one */
	atomic_ulong runner_spawn_failures; /* attempts to start a runner that failed */
	atomic_long runners_idle;	    /* idle runners now */
};

extern struct metrics metrics;
void metrics_http(int status);
void metrics_run(double ms);
char *metrics_render(size_t *ret_len);

/* ---- http.c ---- */

struct teardown;

/* Per-connection state, the MHD socket context. */
struct conn {
	struct conn *next, *prev;
	int fd; /* our dup of the connection's socket: poll for HUP, shutdown on timeout */
	struct caller caller;
	bool ident_ok;
	int ident_errno;  /* why not ident_ok: our dup of the socket or ident_from_socket failed */
	bool close_after; /* not identified for a shortage (job_shortage): answer once, close */
	double request_started; /* monotonic seconds; reset for every request */
	bool request_complete;
	bool in_run;
	volatile int cancel; /* its run's cordon_request.cancel (SIGTERM: kill the run) */
	bool url_nul;	     /* the URL held %00 */
	bool linger;	     /* answered before its body was read: drain it before closing */
	bool refused;	     /* over a connection limit at accept: answered 429 and shut down */
	size_t body_held;    /* bytes of request bodies held for it (http.c, under its lock) */
	struct teardown *teardown; /* the last run's, going on after its answer (http.c) */
};

struct MHD_Daemon *http_start(int listen_fd, cordon_error *e);
/* Watch connections: cancel runs of clients that went away, drop slow requests. */
void http_watch_once(int timeout_ms);
/* Set the cancel flag of every run in flight (the SIGTERM grace time is over). */
void http_cancel_all(void);
double now_s(void);
void daemon_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
