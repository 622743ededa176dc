/* SPDX-License-Identifier: MIT */
/*
 * Starting and stopping the processes of one local run. local.c (the relay loop: pipes,
 * timeout, cancel, result) is written against this interface only, so that the implementation
 * can be a plain fork (foundation) or the full namespace sandbox without anything else changing.
 */
#pragma once

#include <cordon/cordon.h>
#include <stdbool.h>
#include <sys/types.h>

struct local_spec {
	char *const *argv; /* argv[0] is looked up on envp's PATH when it has no '/' */
	char *const *envp;
	const char *workdir;  /* absolute path of an existing directory */
	int workdir_fd;	      /* an fd of that directory (opened by the caller), or -1 */
	bool workdir_is_temp; /* cordon's own temp dir: may be chowned to the command's uid */
	bool workdir_tmpfs;   /* ...and not kept: only a tmpfs of tmp_size at that path inside */
	int stdin_fd;	      /* the command's stdin; -1 means /dev/null */
	int stdout_fd;	      /* write ends of the capture pipes */
	int stderr_fd;
	/*
	 * The three are anonymous pipes made for this run alone (local.c's capture pipes, run.c's
	 * stdin relay): as root they are given to the command's uid (sandbox.c, prep_stdio).
	 */
	bool stdio_pipes_ours;
	const struct cordon_profile *profile; /* limits, readonly, ignore, mask, network... */
	bool run_as;
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* with run_as: the supplementary groups (NULL: gid alone) */
	size_t ngroups;
	bool set_umask; /* the command's umask; else init's (cordon's caller's) */
	mode_t umask;
};

struct local_usage {
	double cpu_ms;		   /* user + system CPU of every process of the run */
	int64_t peak_memory_bytes; /* -1 when unknown */
	bool oom_killed;
};

struct local_proc;

/*
 * Start the command. On success (0) every fd of cordon except the three given is closed in the
 * command, and *ret owns the run. A setup failure is reported as -1 with *e naming the step
 * and errno, after everything already created was torn down. When everything was set up but
 * execve() of argv[0] itself failed, return LOCAL_PROC_EXEC_FAILED (1) with e->code = the
 * execve errno, *ret NULL and nothing left running: the caller turns that into AG2's
 * "Command not found: [Errno 2] No such file or directory: 'sh'" result with exit 127.
 */
#define LOCAL_PROC_EXEC_FAILED 1
int local_proc_start(const struct local_spec *s, struct local_proc **ret, cordon_error *e);
/* A pidfd that becomes readable when the command's main process (the shell) exits. */
int local_proc_pidfd(const struct local_proc *p);
/*
 * Readable when init has reported the command's end (it exits right after, and its exit, the
 * teardown of the namespaces, is the slow part), or when init is gone without reporting.
 */
int local_proc_status_fd(const struct local_proc *p);
/*
 * The command's wait status and the run's usage as init reported them, without waiting for
 * init to be gone: true when both are known now (never blocks). Then only local_proc_free()
 * is left to do; a status read here is not read again by local_proc_wait(), so call one or the
 * other. False when init has not reported (or died without doing so), or when the usage needs
 * init's reaping (no cgroup): then wait for the pidfd and use local_proc_wait().
 */
bool local_proc_reported(struct local_proc *p, int *ret_wstatus, struct local_usage *ret_usage);
/*
 * Remove the placeholders of absent masked names (hide.c) once the command's end is final:
 * every process of the run is gone or dying with SIGKILL pending (init kills them before it
 * reports), so nothing of the run can use the names any more, and the caller never sees them.
 */
void local_proc_drop_placeholders(struct local_proc *p);
/* SIGKILL every process of the run, detached and double-forked ones included. Idempotent. */
void local_proc_kill(struct local_proc *p);
/*
 * Reap the main process (blocking; call after the pidfd is readable or after kill) and kill
 * whatever else of the run is left. *ret_wstatus is a waitpid() status.
 */
int local_proc_wait(struct local_proc *p, int *ret_wstatus, struct local_usage *ret_usage,
		    cordon_error *e);
/* With CORDON_TRACE_SETUP, print a teardown step with its time since the start began. */
void local_proc_trace(const struct local_proc *p, const char *what);
/* Kill, reap and tear down whatever is left (cgroup, mounts). NULL-safe. */
void local_proc_free(struct local_proc *p);
