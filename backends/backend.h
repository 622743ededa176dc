/* SPDX-License-Identifier: MIT */
/*
 * One vtable for every place a command can run (local, docker, daytona). The policy front in
 * runtime/run.c decides first; a backend only ever sees commands that may start. A non-zero exit
 * is a successful exec: exec() fails (-1) only when the backend itself could not run anything.
 */
#pragma once

#include <sys/types.h>

#include <cordon/cordon.h>

struct cordon_exec {
	char *const *argv; /* what to run: {"sh", "-c", cmd} or a policy-split argv */
	char *const *envp; /* the complete environment of the command */
	const char *workdir;
	int workdir_fd;	      /* -1, or an fd of workdir opened by the caller (mounted as is) */
	bool workdir_is_temp; /* cordon's own temp dir (it may chown it) */
	/*
	 * A temp dir nobody keeps, of a backend with temp_workdir_inside: the sandbox works in a
	 * tmpfs at that path, and nothing of it exists on the host.
	 */
	bool workdir_tmpfs;
	const struct cordon_profile *profile;
	int stdin_fd; /* -1: /dev/null */
	bool run_as;  /* run as uid/gid (daemon callers) */
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* with run_as: the supplementary groups (NULL: gid alone) */
	size_t ngroups;
	bool set_umask; /* the command's umask (the daemon's client's); else inherited */
	mode_t umask;
	/*
	 * Non-zero: kill the run now. The value is the signal the run is then reported as
	 * terminated by (backend_cancelled): the one cordon got (SIGINT, SIGTERM, SIGHUP), or
	 * SIGTERM from cordond (stopping, or its client gone).
	 */
	volatile int *cancel;
	/*
	 * NULL, or where exec may leave its processes' teardown when the result is final before
	 * they are gone (set to NULL when it does not); the caller passes it to finish().
	 */
	void **ret_pending;
};

/* What a backend's open() is given. */
struct cordon_open {
	const struct cordon_profile *profile;
	const char *workdir;
	/*
	 * -1, or the workdir as the caller opened and checked it (cordond opens a client's as the
	 * client): the backend must work in that directory, not in whatever the path names by
	 * the time it looks.
	 */
	int workdir_fd;
	/* NULL, or non-zero: give up waiting now (SIGINT/SIGTERM to cordon); only during open */
	volatile int *cancel;
	/*
	 * The supplementary groups the commands must have (ngroups 0: the backend's own rule):
	 * cordond's member's, whose commands a container runs as that member (docs/docker.md).
	 */
	const gid_t *groups;
	size_t ngroups;
	/*
	 * The workdir is cordon's own temp workdir (cordon_exec's workdir_is_temp, as the
	 * commands will say): the Docker backend gives a root-owned one to nobody at the first
	 * command, and guards its container from the open (docs/docker.md, "The workdir").
	 */
	bool workdir_is_temp;
};

struct cordon_backend_ops {
	const char *name;
	/*
	 * A temp workdir nobody keeps exists only inside the sandbox (a tmpfs at its path): no
	 * directory is made on the host for it (cordon_run).
	 */
	bool temp_workdir_inside;
	int (*open)(const struct cordon_open *o, void **ret_h, cordon_error *e);
	/* Fill r's output, exit, signal, timing and usage fields. */
	int (*exec)(void *h, const struct cordon_exec *x, struct cordon_result *r, cordon_error *e);
	int (*put_file)(void *h, const char *rel, const void *buf, size_t n, cordon_error *e);
	int (*get_file)(void *h, const char *rel, void **ret_buf, size_t *ret_n, cordon_error *e);
	void (*close)(void *h); /* NULL-safe, cannot fail */
	/* Tear down what exec left in *ret_pending (blocking). NULL-safe, cannot fail. */
	void (*finish)(void *pending);
};

/* NULL when no backend has that name. */
const struct cordon_backend_ops *backend_lookup(const char *name);

extern const struct cordon_backend_ops backend_local;
extern const struct cordon_backend_ops backend_docker;

/*
 * May the local sandbox have this canonical path as its workdir? Not /, /tmp, /proc, /dev
 * nor anything below the last two: it builds those itself. Below /tmp is any directory.
 */
bool backend_local_workdir_ok(const char *path);
#define BACKEND_LOCAL_WORKDIR_RULE "cannot be /, /tmp, or in /proc or /dev"

/*
 * The caller's PATH and HOME describe the host, not a container or a remote sandbox: there,
 * the image's PATH and the sandbox user's HOME apply unless the profile's env sets them.
 * True for a KEY=VALUE of the envp that such a backend must not pass on.
 */
bool backend_host_only_var(const struct cordon_profile *p, const char *kv);

/*
 * The run was cut short by x->cancel before the command ended: r says it was terminated by
 * that signal (exit_code -sig as AG2 reports a command killed by a signal, signal sig, status
 * 128 + sig), whatever the backend saw of its end (the SIGKILL it sent, Docker's 137, no
 * answer from Daytona), so that every backend's result and cordon's exit status agree
 * (docs/compat.md, "Signals to cordon"). Before capture_fill_result, which composes the text.
 */
void backend_cancelled(struct cordon_result *r, int sig);

/*
 * Who root's command runs as when root gives no run_as, by the workdir's owner (local and
 * Docker backends alike; docs/security.md, "Identity"): a workdir of someone else's, that
 * owner (what the command makes stays theirs) with its group, or BACKEND_NOBODY's group when
 * the group is root's; a root-owned one, BACKEND_NOBODY, the kernel's overflow id and
 * Debian's nobody, which owns nothing that matters on the host.
 *
 * Never nobody:nogroup, but BACKEND_RUN_GID: the kernel lets a process with the same real,
 * effective and saved uid and gid ptrace a dumpable process and open its /proc/<pid>/root and
 * fd (__ptrace_may_access), and a command is dumpable once it has exec'd. With nogroup, every
 * host process of nobody's could attach to a root run's command and write the root-owned
 * workdir it sees through its idmapped mount. No host process runs as 65534:65533; the uid
 * stays nobody (`whoami`). 65533 fits every archive format's group field and is outside the
 * ranges useradd and groupadd give out.
 *
 * True when the workdir is root's (the command then runs as nobody in it).
 */
#define BACKEND_NOBODY 65534
#define BACKEND_RUN_GID 65533
bool backend_root_run_ids(uid_t owner, gid_t group, uid_t *ret_uid, gid_t *ret_gid);

/* "<pid>:<starttime>" of a process: an owner label that gc checks for liveness. */
int backend_owner_of(pid_t pid, char *buf, size_t n);
/* 2 * bytes hex digits of randomness (bytes <= 32) and a NUL into buf. */
void backend_random_hex(char *buf, size_t bytes);
