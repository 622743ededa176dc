/* SPDX-License-Identifier: MIT */
/*
 * The Docker backend's in-container agent (docs/docker.md, "The agent").
 *
 * Docker's exec API costs about 35 ms per command on this host, almost all of it in dockerd,
 * containerd and runc (measured in bench/RESULTS.md), and relays every byte of output through
 * dockerd. So the container's main process is not `sleep infinity` but this agent: the static
 * cordon binary, bind-mounted read-only, run as `cordon __docker-agent SOCKET`. It connects
 * back to the cordon process that created the container over a Unix socket that cordon
 * listens on in a private directory bind-mounted read-only into the container, and from then
 * on starts each command itself: fork, setsid, exec, with the write ends of two pipes that
 * cordon created and passed over the socket as the command's stdout and stderr.
 *
 * The agent runs inside the container, with everything the container's processes have (the
 * same user, no capability, no_new_privs, seccomp, cgroup, namespaces) and nothing else; a
 * command can kill or subvert it (same uid), so cordon treats what it says as untrusted:
 * fixed-size messages, file descriptors it sends are never accepted, a deadline on every wait.
 * When the agent is not there (it could not start or connect, it died, or another command of
 * the session is using it) cordon uses Docker's exec API as before.
 *
 * The protocol, on a SOCK_STREAM socket, native byte order (both ends are on one host):
 *   cordon -> agent: struct agent_msg { AGENT_RUN, len } + len bytes: "nonce\0cwd\0" then
 *       argc NUL-terminated argv strings, then envc environment strings ("argc\0envc\0" in
 *       decimal come first); SCM_RIGHTS with the header: the stdout and stderr pipes.
 *   cordon -> agent: { AGENT_KILL, 0 }: kill the running command's process, its process
 *       group and every process whose environment holds its nonce (setsid escapees).
 *   agent -> cordon: { AGENT_EXITED, wait status } when the command's process exits, or
 *       { AGENT_FAILED, errno } when it could not be started (fork failed).
 */
#pragma once

#include <cordon/cordon.h>

#include <stddef.h>
#include <stdint.h>

/* Where the container sees the agent's binary and its socket's directory. */
#define AGENT_BIN_IN "/.cordon-agent"
#define AGENT_DIR_IN "/.cordon"
#define AGENT_SOCK_NAME "s"
/* The agent's execute-only copy in its directory (agent_host_exec_copy), beside d. */
#define AGENT_COPY_NAME "x"
/* The largest RUN message the agent takes (the exec API takes about as much: ARG_MAX). */
#define AGENT_RUN_MAX (4u << 20)

enum agent_type {
	AGENT_RUN = 1,
	AGENT_KILL = 2,
	AGENT_EXITED = 3,
	AGENT_FAILED = 4,
};

struct agent_msg {
	uint32_t type;
	uint32_t arg; /* RUN: the payload's length; EXITED: the wait status; FAILED: errno */
};

/* ---- cordon's side (agent_host.c) ---- */

struct capture;

struct agent_host {
	char *dir; /* a private directory (0700): dir/d is mounted at AGENT_DIR_IN, or NULL */
	int dfd;   /* dir/d itself (O_PATH), held: the socket is made and removed through it */
	int hold;  /* dir, flock'ed while ours (fsutil_temp_hold): swept once its holder died */
	int lfd;   /* listening on dir/d/s until the agent connects, or -1 */
	int fd;	   /* the connected agent, or -1 */
	bool busy; /* a command is running through it (__atomic_test_and_set) */
};

#define AGENT_HOST_INIT                                                                            \
	{                                                                                          \
		.dir = NULL, .dfd = -1, .hold = -1, .lfd = -1, .fd = -1, .busy = false             \
	}

/*
 * The static cordon binary to mount as the agent (malloc'd), or NULL (no agent: the exec API).
 * $CORDON_DOCKER_AGENT if set (for test and benchmark programs), else this program when it is
 * static (the CLI), else `cordon` next to this program (cordond) or in BINDIR.
 * When running as root the file and every directory above it must be root's and writable by
 * no one else: it runs in every container cordond makes.
 */
char *agent_binary(void);

/* The private directory and the listening socket (again after agent_host_listen_done). */
int agent_host_listen(struct agent_host *a, cordon_error *e);
/* The directory to bind-mount at AGENT_DIR_IN. */
const char *agent_host_mount_dir(const struct agent_host *a, char *buf, size_t n);
/*
 * Does that path still name the directory agent_host_listen made (no symlink on the way)?
 * dockerd resolves it again at every start of the container: once it was removed (a /tmp
 * cleaner), another user could have made their own there. While it is ours (root's, 0700, in
 * sticky /tmp) nobody else can change it. false with *e when it is not.
 */
bool agent_host_dir_intact(const struct agent_host *a, cordon_error *e);
/*
 * An execute-only copy of exe (mode 0111) in the agent's directory, its path in buf: a
 * process started from it is not dumpable from its execve on (the kernel's rule for a file
 * its process may not read), so the container's user cannot reach the container through its
 * /proc/PID (docker.c, "guarded"). Removed with the directory. 0, or -1 with *e.
 */
int agent_host_exec_copy(struct agent_host *a, const char *exe, char *buf, size_t n,
			 cordon_error *e);
/*
 * Wait up to timeout_ms for the agent of container id to connect; the socket file is removed
 * either way. -1 when no agent connected (or the peer is not in that container's cgroup).
 */
int agent_host_accept(struct agent_host *a, const char *id, int timeout_ms, cordon_error *e);
/* Drop the connection (the agent then kills its command and exits: the container stops). */
void agent_host_disconnect(struct agent_host *a);
/* Close everything and remove the directory. */
void agent_host_free(struct agent_host *a);
/* Remove a directory that agent_host_listen made (cordon gc, from the container's label):
 * only when it is this user's and private, and only rmdir and unlink of the names it makes,
 * through the directories opened without following symlinks: never a recursive removal. */
void agent_host_remove_dir(const char *dir);

struct agent_run {
	char *const *argv;
	char *const *envv; /* on top of the container's environment */
	const char *cwd;
	const char *nonce;
	double deadline;      /* CLOCK_MONOTONIC ms */
	volatile int *cancel; /* may be NULL */
	struct capture *out, *err;
	/* results */
	int code; /* exit code as Docker reports it: 128+n for a signal */
	bool timed_out, cancelled;
};

enum { AGENT_RAN = 0, AGENT_UNUSABLE = 1, AGENT_STUCK = 2 };

/*
 * Run one command through the agent. AGENT_RAN: r's results are set. AGENT_UNUSABLE: nothing
 * ran (no agent, busy, or it is gone): use the exec API. AGENT_STUCK: timed out or cancelled,
 * and the agent did not report the command dead in time: the caller restarts the container.
 * -1 with *e: cordon could not run it (out of memory, no pipes).
 */
int agent_host_run(struct agent_host *a, struct agent_run *r, cordon_error *e);

/* ---- the agent's side (agent.c) ---- */

/* `cordon __docker-agent SOCKET`: the agent's main, given argv from "__docker-agent" on
 * (runtime/cli/main.c). When it cannot connect it waits forever, as `sleep infinity` did. */
int docker_agent_main(int argc, char **argv);
/* `cordon __docker-init [__docker-agent SOCKET]`: a container's non-dumpable pid 1 (agent.c),
 * given argv from "__docker-init" on. */
int docker_init_main(int argc, char **argv);
/* Tests only: called in the command's child after fork, before setsid(); NULL in cordon. */
extern void (*agent_test_child_hook)(void);
