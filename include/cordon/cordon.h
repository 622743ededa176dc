/* SPDX-License-Identifier: MIT */
/*
 * cordon.h: the one public header of libcordon.
 *
 * libcordon turns (profile, command, workdir) into a result: the policy engine decides whether
 * the command may start, a backend runs it, and the output is captured, bounded and formatted
 * exactly as AG2's shell tools format it. Front ends (the CLI, the daemon, the tests) do the
 * printing; the library never prints.
 *
 * Conventions: an action returns 0, or -1 with *e filled; a `ret_` output is written only on
 * success; every struct owned by the caller has a matching *_free() that is NULL-safe.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CORDON_PUBLIC __attribute__((visibility("default")))
#define CORDON_VERSION "0.1.0"

/* Exit statuses of `cordon run` (SPEC §2), after timeout(1) and docker run. */
enum {
	CORDON_EXIT_TIMEOUT = 124,
	CORDON_EXIT_FAILURE = 125, /* cordon itself failed; nothing ran */
	CORDON_EXIT_REFUSED = 126, /* the policy refused the command */
};

/*
 * The one error type. Fixed size and allocation-free, so a forked child can fill it and send it
 * to the parent as plain bytes. `code` is an errno value, or 0 when the error is not a system
 * error (a bad value, a policy problem).
 */
typedef struct cordon_error {
	int code;
	char msg[256];
} cordon_error;

/* Fill *e with a formatted message and errno-style code; always returns -1. */
CORDON_PUBLIC int cordon_err(cordon_error *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prepend "ctx: " to e->msg (truncating if needed); returns -1. */
CORDON_PUBLIC int cordon_err_prefix(cordon_error *e, const char *ctx);
/* Render "msg: strerror(code)" (or just msg when code is 0) into buf. */
CORDON_PUBLIC const char *cordon_err_str(const cordon_error *e, char *buf, size_t n);

/*
 * A list that may be absent. AG2 distinguishes `None` (no list: no check) from `[]` (an empty
 * list: `allowed=[]` refuses everything), so `set` carries that bit separately from `n`.
 * `v` is NULL-terminated whenever it is non-NULL.
 */
struct cordon_list {
	char **v;
	size_t n;
	bool set;
};

CORDON_PUBLIC int cordon_list_add(struct cordon_list *l, const char *s, cordon_error *e);
CORDON_PUBLIC void cordon_list_clear(struct cordon_list *l); /* frees items; keeps `set` */
CORDON_PUBLIC void cordon_list_free(struct cordon_list *l);  /* frees items; set = false */
CORDON_PUBLIC int cordon_list_copy(struct cordon_list *dst, const struct cordon_list *src,
				   cordon_error *e);

enum cordon_mode {
	CORDON_MODE_COMPAT = 0, /* AG2 ShellAdapter filter, byte for byte */
	CORDON_MODE_STRICT,	/* AG2 restricted mode: quote-aware, argv exec without sh */
};

enum cordon_network {
	CORDON_NET_NONE = 0,
	CORDON_NET_HOST,
};

/*
 * A fully resolved profile (SPEC §4). Sizes are bytes, 0 meaning "no limit"; times are seconds.
 * Strings are owned by the profile and freed by cordon_profile_free().
 */
struct cordon_profile {
	char *name; /* the name or path it was loaded as */
	char *path; /* the file it was read from (NULL for a built-in default) */
	char *description;

	/* [policy] */
	enum cordon_mode mode;
	bool readonly;
	struct cordon_list allowed;
	struct cordon_list blocked;
	struct cordon_list ignore;
	/* ShellExecutor dialect (AG2 §8): switched on when any of these four is set. */
	struct cordon_list allowed_commands;
	struct cordon_list denied_commands;
	struct cordon_list allowed_paths;
	struct cordon_list dangerous_patterns; /* "REGEX => MESSAGE" items */
	bool command_filtering;		       /* enable_command_filtering, default true */

	/* [limits] */
	/* The timeout as the user wrote it ("1", "1.50"); the timeout message prints Python's
	 * str() of the int or float it denotes, as AG2 does ("1", "1.5"). */
	char *timeout_text;
	double timeout;	    /* seconds, > 0 */
	int64_t max_output; /* characters (code points), >= 0 */
	uint64_t memory;
	uint64_t pids;
	uint64_t cpu_time; /* seconds */
	uint64_t file_size;
	uint64_t open_files;
	uint64_t tmp_size;

	/* [sandbox] */
	char *backend; /* "local", "docker", "daytona" */
	enum cordon_network network;
	struct cordon_list env; /* KEY=VALUE */
	bool env_inherit;
	struct cordon_list ro_bind;
	struct cordon_list mask;
	struct cordon_list require; /* facilities whose absence is an error (issue 4) */

	/* [docker] */
	char *docker_image;
	uint64_t docker_memory;
	int64_t docker_cpu_quota;
	char *docker_user;
	uint64_t docker_pids;
	char *docker_network;		   /* NULL: the run's network (none or host) */
	struct cordon_list docker_ro_bind; /* HOST[:TARGET], mounted read-only */
	char *docker_workdir;		   /* NULL: "/workspace" */
	bool docker_agent;		   /* commands through the in-container agent */

	/* [daytona] */
	char *daytona_api_url;
	char *daytona_target;
	char *daytona_snapshot;
	char *daytona_image;
	uint64_t daytona_cpu;		   /* vCPUs; 0: Daytona's default */
	uint64_t daytona_memory;	   /* GiB; 0: Daytona's default */
	uint64_t daytona_disk;		   /* GiB; 0: Daytona's default */
	uint64_t daytona_auto_stop;	   /* minutes idle before stop; 0: never */
	struct cordon_list daytona_labels; /* KEY=VALUE labels of the sandbox */
	char *daytona_workdir;		   /* NULL: "/workspace" */
	uint64_t daytona_start_timeout;	   /* seconds to wait for "started"; 0: 60 */
};

/* A profile holding the built-in defaults (no lists, timeout 60, max_output 100000, ...). */
CORDON_PUBLIC int cordon_profile_new(struct cordon_profile **ret, cordon_error *e);
/*
 * Load NAME (looked up in $CORDON_PROFILE_PATH, /etc/cordon/profiles, then the build tree's
 * profiles/) or a PATH (anything containing '/' or ending in ".conf").
 */
CORDON_PUBLIC int cordon_profile_load(const char *name_or_path, struct cordon_profile **ret,
				      cordon_error *e);
/* Print the resolved profile in profile syntax; the text loads back to an equal profile. */
CORDON_PUBLIC int cordon_profile_format(const struct cordon_profile *p, char **ret_text,
					cordon_error *e);
CORDON_PUBLIC void cordon_profile_free(struct cordon_profile *p);

/* One run. The profile already carries the command line's overrides. */
struct cordon_teardown;

struct cordon_request {
	const char *command; /* the shell command (words joined by single spaces) */
	char *const *argv;   /* run this without a shell (daemon); command is still required:
			      * it is what the policy judges */
	const struct cordon_profile *profile;
	const char *workdir; /* NULL: a fresh temp dir, removed afterwards unless keep */
	/*
	 * -1, or an fd of `workdir` that the caller opened (and checked) itself: the sandbox then
	 * mounts this directory, not whatever the path names by the time it is set up (the
	 * daemon opens a client's workdir as the client). Not closed by cordon_run.
	 */
	int workdir_fd;
	bool keep;	 /* keep the temp workdir */
	bool pass_stdin; /* the command reads cordon's stdin (default /dev/null) */
	int stdin_fd;	 /* with pass_stdin: the fd to give it (default 0) */
	uid_t uid;	 /* run as this identity when run_as is set (daemon) */
	gid_t gid;
	bool run_as;
	/*
	 * With run_as: the command's supplementary groups (the daemon: its caller's, from the
	 * group database); none given (NULL), the gid alone.
	 */
	const gid_t *groups;
	size_t ngroups;
	/* The command's umask, when set (the daemon: its client's); else it inherits cordon's. */
	bool set_umask;
	mode_t umask;
	/*
	 * Set to a signal number (from a signal handler) to kill the run: the result then says
	 * the run was terminated by that signal (exit_code -n, signal n, status 128 + n), with
	 * the output so far, whatever the backend.
	 */
	volatile int *cancel;
	/*
	 * NULL, or where to leave the run's teardown: cordon_run then returns as soon as the
	 * result is final (the command has exited, its output is read, everything of it is
	 * killed) and stores here what is left to do (reaping the sandbox, whose namespaces take
	 * about a millisecond to go, removing its cgroup and the temp workdir), or NULL when
	 * nothing is. The caller must pass it to cordon_teardown_finish() (cordond does, after
	 * sending the answer).
	 */
	struct cordon_teardown **teardown;
	/*
	 * NULL, or a handle the profile's backend already opened (cordond's Docker sessions: one
	 * container for all their runs): used instead of open() and close().
	 */
	void *backend_handle;
	/*
	 * With backend_handle NULL: NULL, or how to get such a handle, called only once the
	 * policy has allowed the run (cordond's one-shot Docker and Daytona runs: no container or
	 * sandbox is made for a command the policy refuses, as in a direct run). 0 with *ret_h,
	 * which stays the caller's (cordon_run does not close it); -1 with *e, and nothing ran.
	 */
	int (*open_backend)(void *arg, void **ret_h, cordon_error *e);
	void *open_backend_arg;
};

/* The outcome of a run (SPEC §5). */
struct cordon_result {
	char *output;	   /* AG2's result string (no trailing newline) */
	char *stdout_text; /* at most max_output code points each, decoded */
	char *stderr_text;
	size_t stdout_len; /* byte lengths of the above (they may hold NUL) */
	size_t stderr_len;
	size_t output_len;
	int exit_code; /* as AG2 reports it: -n for a shell killed by signal n */
	int signal;    /* the signal that killed the shell, or 0 */
	bool timed_out;
	char *refused; /* the refusal message, or NULL */
	bool truncated;
	uint64_t stdout_bytes; /* everything the command wrote */
	uint64_t stderr_bytes;
	double duration_ms;
	double cpu_ms;
	int64_t peak_memory_bytes; /* -1 when unknown */
	bool oom_killed;
	char *backend;
	char *workdir;
	int status; /* cordon run's exit status: the command's, 128+n, 124 or 126 */
};

/*
 * Decide, then run. Returns 0 when a result was produced (a refusal, a timeout and a failing
 * command are results); -1 with *e when cordon itself failed and nothing ran (exit 125).
 */
CORDON_PUBLIC int cordon_run(const struct cordon_request *rq, struct cordon_result *ret,
			     cordon_error *e);
/*
 * Finish what cordon_run left in *rq->teardown: wait for the sandbox to be gone, remove its
 * cgroup and the temp workdir. Blocks; NULL-safe; frees t. -1 with *e only when the temp
 * workdir could not be removed (everything else is done regardless).
 */
CORDON_PUBLIC int cordon_teardown_finish(struct cordon_teardown *t, cordon_error *e);
/*
 * For a process that makes many runs (cordond): keep what is learnt about the host between
 * runs (the cgroup layout) instead of reading it again for each, and read it again only when it
 * no longer works. Call once, early; a one-run process (cordon run) gains nothing from it.
 */
CORDON_PUBLIC void cordon_cache_host_layout(void);
/*
 * For cordond at start, before any thread or child: when its own cgroup v2 was delegated to it
 * (systemd's Delegate=yes marks it trusted.delegate) but holds it, move it into a leaf child
 * `supervisor` and turn memory and pids on for the cgroup's children, as systemd's
 * DelegateSubgroup=supervisor (254+) would have: the runs' cgroups are then made below the
 * unit, bound by its limits, not at the hierarchy's root. 1 when moved, 0 when there was
 * nothing to do (not v2, not delegated, already in a leaf), -1 with *e.
 */
CORDON_PUBLIC int cordon_claim_cgroup_delegation(cordon_error *e);
/*
 * For a process that makes one run at a time and waits in between (cordond's runners): make
 * now, while nothing waits on it, what the next run would otherwise make at its start (as
 * root: a new network namespace with lo up, and the run's empty cgroup). The next cordon_run
 * takes them; each serves one run only and is never reused. Idempotent; 0, or -1 with *e (the
 * next run then makes its own). cordon_unstage() removes what is staged (call it before exit).
 */
CORDON_PUBLIC int cordon_stage_next(cordon_error *e);
CORDON_PUBLIC void cordon_unstage(void);
/*
 * For a process that makes runs one at a time from one thread (a cordond runner): from now
 * on cordon_stage_next() also pre-builds the next run's sandbox from the last run's mounts
 * (its clone, namespaces, cgroup and root but the workdir), which the next cordon_run takes
 * when its mounts are the same (docs/daemon.md, "Pre-built sandboxes"). false: stop, and
 * kill the one that waits. Root only (elsewhere nothing is pre-built).
 */
CORDON_PUBLIC void cordon_stage_prebuild(bool on);
/*
 * The first sandbox to pre-build, before any run has been made: one for p's mounts (a runner
 * calls it at start with the default profile). 0, or -1 with *e (p's ro_bind list does not
 * check out); nothing happens when pre-building is off or we are not root.
 */
CORDON_PUBLIC int cordon_prebuild_from(const struct cordon_profile *p, cordon_error *e);
/*
 * pid, a process that made runs for us (a runner), died without cordon_unstage(), SIGKILLed:
 * remove the cgroups it left (what it staged, a run it could not tear down), waiting up to 2 s
 * for a killed run's processes to be gone. Call it while pid is still an unreaped zombie, so
 * that no other process can have that pid. A pid that is not dead (or is 0 or negative) is
 * left alone. 0; -1 (errno) when its cgroups could not be looked at (no fd left: EMFILE): keep
 * pid unreaped and call it again later.
 */
CORDON_PUBLIC int cordon_reap_after(pid_t pid);
/*
 * The run cgroups of every creator that is gone (a SIGKILLed cordon or cordond and its
 * runners), at least min_age_s seconds old and empty, waiting up to 2 s for them to empty.
 * cordond calls it at start; a run does the same for its own parent with a minute's age.
 */
CORDON_PUBLIC void cordon_reap_stale(unsigned min_age_s);
/* A stopping cordond: remove the empty `cordon` parent cgroups it used (cgroup.c). */
CORDON_PUBLIC void cordon_remove_cgroup_parents(void);
/*
 * Policy decision only: *ret_refusal is NULL (allowed) or the message. rq->workdir is checked
 * as cordon_run checks it (a workdir it refuses is -1 with the same *e) but never made.
 */
CORDON_PUBLIC int cordon_check(const struct cordon_request *rq, char **ret_refusal,
			       cordon_error *e);
CORDON_PUBLIC void cordon_result_free(struct cordon_result *r);
/* The JSON object of SPEC §5, one line, no trailing newline. */
CORDON_PUBLIC int cordon_result_to_json(const struct cordon_result *r, char **ret_json,
					cordon_error *e);
