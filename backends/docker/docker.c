/* SPDX-License-Identifier: MIT */
/*
 * The Docker backend: one hardened container per open() (a run, or a cordond session), each
 * command an exec in it, over the Engine API on the daemon's Unix socket (backends/http.h).
 * Pitfalls and the verified call sequence: shared/reference/docker-daytona.md part A;
 * user-facing behaviour and differences from AG2's DockerEnvironment: docs/docker.md.
 */
#define _GNU_SOURCE
#include "backends/docker/docker.h"
#include "backends/backend.h"
#include "backends/docker/agent.h"
#include "backends/docker/usage.h"
#include "backends/http.h"
#include "backends/orphan.h"
#include "runtime/capture.h"
#include "runtime/cleanup.h"
#include "runtime/relay.h"
#include "runtime/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_SOCK "/var/run/docker.sock"
#define DEFAULT_WORKDIR "/workspace"
/* API versions: Mounts, Init and PidsLimit need 1.25; Docker 29 refuses below 1.44. */
#define API_MIN_MAJOR 1
#define API_MIN_MINOR 25
#define API_MAX_MINOR 47
#define CALL_TIMEOUT_MS 60000
#define CANCEL_POLL_MS 20
/* How long a killed exec may take to be reported stopped before the container is restarted. */
#define KILL_WAIT_MS 2000
/* How long the agent may take to connect once its container started (it takes a few ms). */
#define AGENT_CONNECT_MS 3000

void (*docker_test_before_start)(void);
void (*docker_test_before_check)(void);
void (*docker_test_cgroup_dropped)(void);

struct docker {
	char *sock;
	char api[16]; /* "/v1.41" */
	char *id;     /* the container */
	char *name;   /* its name, cordon-<session>; without id, a create whose answer was lost */
	char *workdir_in;
	/*
	 * The workdir that must be the container's: the path is only what dockerd is given, the
	 * fd (O_PATH) is the directory that was checked, held for the container's life so that
	 * its inode cannot be freed and reused; wd_st is its identity (check_workdir).
	 */
	char *workdir;
	int wd_fd;
	struct stat wd_st;
	/* The commands run as nobody because the workdir is root's: cordon's own temp one is
	 * then made nobody's at the first exec (as the local backend does). */
	bool chown_temp;
	/* The container had another directory than the workdir: reported, never retried. */
	bool replaced;
	/* The image made a named [docker] user root: reported, never retried. */
	bool root_by_name;
	/*
	 * The workdir's path is not root's alone (workdir_root_controlled): its pid 1 is the
	 * agent's execute-only copy, never docker-init or the image's `sleep` (docker_open).
	 */
	bool guarded;
	/* Guarded without the agent ([docker] agent = false, or it failed): its copy idles. */
	bool idle_init;
	/* A restart mounted another directory: the container is gone, every exec fails with
	 * broken_e (set before broken, read after it). */
	bool broken;
	cordon_error broken_e;
	/* Its cgroup, for the usage fields; NULL: not visible here. A restart replaces it while
	 * other threads' execs may read it (cordond runs a session's requests at once): both
	 * under cg_lock. */
	struct docker_cg *cg;
	pthread_mutex_t cg_lock;
	/*
	 * No command may start in a container whose workdir is not checked yet: a restart holds
	 * it for writing from its kill to its check and its agent's connection
	 * (restart_container), a command through the
	 * exec API for reading from its create until its process runs (exec_launched). Else another
	 * request's command of the session, started through the API while a restart waited for
	 * its check, ran in a container that had the directory a swap of the path put there, as
	 * the owner's dumpable process (found in red team).
	 */
	pthread_rwlock_t start_lock;
	struct agent_host agent; /* the in-container agent (agent.h), when it connected */
	/*
	 * While open() runs, its caller's cancel flag: a SIGINT or SIGTERM to cordon then cuts a
	 * hung dockerd's call short. NULL otherwise: an exec watches its own flag where waiting
	 * is the command's (agent_exec, api_exec), and the calls that clean up after a cancel
	 * (kill, restart, remove) must not be cut short by it.
	 */
	volatile int *cancel;
	/* The commands' supplementary groups (the container's GroupAdd); NULL: none added. */
	gid_t *groups;
	size_t ngroups;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* poll(2)'s timeout for what is left of a wait: a timeout of weeks (up to 1e9 s) would
 * overflow the int, and an endless poll would never look at the cancel flag again. */
static int poll_ms(double left)
{
	return left <= 0 ? 0 : left < INT_MAX - 1 ? (int)left + 1 : INT_MAX;
}

int docker_socket_path(char **ret, cordon_error *e)
{
	const char *h = getenv("DOCKER_HOST");

	if (!h || !*h)
		h = "unix://" DEFAULT_SOCK;
	if (strncmp(h, "unix://", 7) != 0 || h[7] != '/')
		return cordon_err(
			e, 0,
			"docker: DOCKER_HOST '%s' is not supported (only unix:///PATH: the "
			"workdir is bind-mounted, so the daemon must be local)",
			h);
	*ret = strdup(h + 7);
	return *ret ? 0 : cordon_err(e, ENOMEM, "out of memory");
}

/* A transport error as one line naming the cause. */
static int conn_error(const char *sock, cordon_error *e)
{
	int code = e->code;

	if (code == ENOENT || code == ECONNREFUSED)
		return cordon_err(e, 0, "docker: no Docker daemon at %s (%s): is dockerd running?",
				  sock, strerror(code));
	if (code == EACCES || code == EPERM)
		return cordon_err(e, 0,
				  "docker: permission denied on %s (root or the docker group is "
				  "needed)",
				  sock);
	return cordon_err_prefix(e, "docker");
}

/* The daemon's error text: {"message": ...} or a plain-text body. */
static int api_error(const char *what, const struct http_response *r, cordon_error *e)
{
	json_t *j = json_loadb(r->body ? r->body : "", r->body_len, 0, NULL);
	const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
	int len = (int)(r->body_len > 200 ? 200 : r->body_len);

	if (msg)
		cordon_err(e, 0, "docker: %s: %s (HTTP %d)", what, msg, r->status);
	else
		cordon_err(e, 0, "docker: %s: %.*s (HTTP %d)", what, len, r->body ? r->body : "",
			   r->status);
	json_decref(j);
	/* One line: the daemon's messages have no newline, but a plain-text body might. */
	for (char *p = e->msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return -1;
}

/* One API call; the path is prefixed with the negotiated version. body is JSON or NULL. */
static int call(struct docker *d, const char *method, const char *path, json_t *body,
		struct http_response *r, cordon_error *e)
{
	_cleanup_free_ char *full = NULL, *text = NULL;

	if (asprintf(&full, "%s%s", d->api, path) < 0) {
		full = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (body && !(text = json_dumps(body, JSON_COMPACT)))
		return cordon_err(e, ENOMEM, "out of memory");
	if (http_request(d->sock, method, full, text ? "application/json" : NULL, text,
			 text ? strlen(text) : 0, CALL_TIMEOUT_MS, d->cancel, r, e) < 0)
		return conn_error(d->sock, e);
	return 0;
}

/* Negotiate: min(daemon's, ours), and at least 1.25. */
static int negotiate(const char *sock, volatile int *cancel, char api[16], char **ret_server,
		     cordon_error *e)
{
	struct http_response r = { 0 };
	unsigned maj = 0, min = 0;
	int rc = -1;

	if (http_request(sock, "GET", "/_ping", NULL, NULL, 0, 10000, cancel, &r, e) < 0)
		return conn_error(sock, e);
	if (r.status != 200) {
		api_error("ping", &r, e);
		goto out;
	}
	if (!r.api_version || sscanf(r.api_version, "%u.%u", &maj, &min) != 2) {
		cordon_err(e, 0, "docker: the daemon at %s sent no API version", sock);
		goto out;
	}
	if (maj > API_MIN_MAJOR || min > API_MAX_MINOR)
		maj = API_MIN_MAJOR, min = API_MAX_MINOR;
	if (maj < API_MIN_MAJOR || min < API_MIN_MINOR) {
		cordon_err(e, 0, "docker: the daemon's API %s is older than 1.%d", r.api_version,
			   API_MIN_MINOR);
		goto out;
	}
	(void)snprintf(api, 16, "/v%u.%u", maj, min);
	if (ret_server)
		*ret_server = NULL;
	rc = 0;
out:
	http_response_free(&r);
	return rc;
}

int docker_probe(char **ret_version, char **ret_server, cordon_error *e)
{
	_cleanup_free_ char *sock = NULL;
	struct http_response r = { 0 };
	char api[16];

	if (docker_socket_path(&sock, e) < 0 || negotiate(sock, NULL, api, NULL, e) < 0)
		return -1;
	*ret_version = strdup(api + 2);
	*ret_server = NULL;
	if (http_request(sock, "GET", "/version", NULL, NULL, 0, 10000, NULL, &r, e) == 0) {
		json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
		const char *v = j ? json_string_value(json_object_get(j, "Version")) : NULL;

		if (v)
			*ret_server = strdup(v);
		json_decref(j);
		http_response_free(&r);
	}
	return *ret_version ? 0 : cordon_err(e, ENOMEM, "out of memory");
}

static int add_mount(json_t *mounts, const char *type, const char *src, const char *dst, bool ro)
{
	json_t *m = json_pack("{s:s, s:s, s:b}", "Type", type, "Target", dst, "ReadOnly", ro);

	if (!m)
		return -1;
	if (src)
		json_object_set_new(m, "Source", json_string(src));
	return json_array_append_new(mounts, m);
}

/*
 * HostConfig.Ulimits, as the local backend's rlimits (backends/local/limits.c): the profile's
 * cpu_time, file_size and open_files per process, soft and hard (a command cannot raise them
 * without CAP_SYS_RESOURCE), 0 leaving Docker's; and core 1 byte, not 0: a file core needs a
 * page, and for a core_pattern that pipes to a host program the kernel ignores every limit
 * but exactly 1, which aborts the dump (a command can still lower it to 0: docs/docker.md).
 */
static int add_ulimits(json_t *hc, const struct cordon_profile *p)
{
	const struct {
		const char *name;
		uint64_t value;
	} l[] = { { "core", 1 },
		  { "cpu", p->cpu_time },
		  { "fsize", p->file_size },
		  { "nofile", p->open_files } };
	json_t *a = json_array();

	if (!a || json_object_set_new(hc, "Ulimits", a) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
		json_int_t v = l[i].value > INT64_MAX ? INT64_MAX : (json_int_t)l[i].value;

		if (l[i].value &&
		    json_array_append_new(a, json_pack("{s:s, s:I, s:I}", "Name", l[i].name, "Soft",
						       v, "Hard", v)) < 0)
			return -1;
	}
	return 0;
}

/*
 * The container: hardened (docs/docker.md), its main process `sleep infinity`, or with
 * agent_exe the agent (agent.h), bind-mounted read-only with its socket's directory.
 */
static json_t *create_body(const struct cordon_profile *p, const char *workdir,
			   const char *workdir_in, const char *session,
			   const struct orphan_self *self, const char *user, const char *agent_exe,
			   const char *agent_dir, const char *agent_label, bool guarded)
{
	/* [docker] network names a Docker network; else the run's (--network, [sandbox]). */
	const char *net = p->docker_network		  ? p->docker_network
			  : p->network == CORDON_NET_HOST ? "host"
							  : "none";
	uint64_t mem = p->docker_memory ? p->docker_memory : p->memory;
	uint64_t pids = p->docker_pids ? p->docker_pids : p->pids;
	json_t *body, *hc, *mounts;

	mounts = json_array();
	if (!mounts || add_mount(mounts, "bind", workdir, workdir_in, p->readonly) < 0) {
		json_decref(mounts);
		return NULL;
	}
	for (size_t i = 0; i < p->docker_ro_bind.n; i++) {
		const char *b = p->docker_ro_bind.v[i], *colon = strchr(b, ':');
		_cleanup_free_ char *host = colon ? strndup(b, (size_t)(colon - b)) : strdup(b);

		if (!host || add_mount(mounts, "bind", host, colon ? colon + 1 : b, true) < 0) {
			json_decref(mounts);
			return NULL;
		}
	}
	if (agent_exe &&
	    (add_mount(mounts, "bind", agent_exe, AGENT_BIN_IN, true) < 0 ||
	     (agent_dir && add_mount(mounts, "bind", agent_dir, AGENT_DIR_IN, true) < 0))) {
		json_decref(mounts);
		return NULL;
	}
	{
		json_t *tmp = json_pack("{s:s, s:s, s:b, s:{s:I, s:i}}", "Type", "tmpfs", "Target",
					"/tmp", "ReadOnly", false, "TmpfsOptions", "SizeBytes",
					(json_int_t)(p->tmp_size ? p->tmp_size : 256u << 20),
					"Mode", 01777);

		if (!tmp || json_array_append_new(mounts, tmp) < 0) {
			json_decref(mounts);
			return NULL;
		}
	}
	/*
	 * LogConfig none: the container's own stdout and stderr are its init's, which runs as the
	 * commands' user, so they can write to them (/proc/1/fd/1). cordon reads none of it (the
	 * commands' output comes through their pipes or exec streams), and a log driver kept it
	 * on the host's disk without bound: json-file wrote 40 MB for 8 MB of NULs.
	 */
	hc = json_pack("{s:s, s:b, s:o, s:[s], s:[s], s:b, s:b, s:{s:s, s:{}}}", "NetworkMode", net,
		       "ReadonlyRootfs", true, "Mounts", mounts, "CapDrop", "ALL", "SecurityOpt",
		       "no-new-privileges", "Init", !guarded, "AutoRemove", false, "LogConfig",
		       "Type", "none", "Config");
	if (!hc)
		return NULL;
	if (mem) {
		json_object_set_new(hc, "Memory", json_integer((json_int_t)mem));
		json_object_set_new(hc, "MemorySwap", json_integer((json_int_t)mem));
	}
	if (pids)
		json_object_set_new(hc, "PidsLimit", json_integer((json_int_t)pids));
	if (add_ulimits(hc, p) < 0) {
		json_decref(hc);
		return NULL;
	}
	if (p->docker_cpu_quota > 0)
		json_object_set_new(hc, "CpuQuota", json_integer(p->docker_cpu_quota));
	/*
	 * Every label gc reads, always, even empty: the image's labels are the container's unless
	 * set here, so an image could otherwise give a container the cordon.boot or cordon.pidns
	 * that this process could not read, or a cordon.agent_dir to remove. What gc needs to
	 * prove a container an orphan (orphan.h): a boot or pid namespace that cannot be read is
	 * "", and gc then keeps the container.
	 */
	body = json_pack("{s:s, s:[s], s:[s], s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s}, s:b, s:b, "
			 "s:b, s:b, s:o}",
			 "Image", p->docker_image ? p->docker_image : DOCKER_DEFAULT_IMAGE,
			 "Entrypoint", "sleep", "Cmd", "infinity", "WorkingDir", workdir_in,
			 "Labels", ORPHAN_LABEL_SESSION, session, ORPHAN_LABEL_OWNER, self->owner,
			 ORPHAN_LABEL_MACHINE, self->machine, ORPHAN_LABEL_BOOT, self->boot,
			 ORPHAN_LABEL_PIDNS, self->pidns, "cordon.agent_dir", "", "AttachStdout",
			 false, "AttachStderr", false, "Tty", false, "NetworkDisabled",
			 !strcmp(net, "none"), "HostConfig", hc);
	if (body && user)
		json_object_set_new(body, "User", json_string(user));
	/*
	 * No health check: an image's HEALTHCHECK would run the image's code in the container
	 * between the commands, as their user, in their workdir (suggested by the Docker review;
	 * AG2's DockerEnvironment has none to keep either).
	 */
	if (body &&
	    json_object_set_new(body, "Healthcheck", json_pack("{s:[s]}", "Test", "NONE")) < 0) {
		json_decref(body);
		body = NULL;
	}
	if (body && agent_exe) {
		/* cordon gc removes the directory of a container whose cordon is gone. */
		/*
		 * Guarded: the agent's copy is pid 1, the agent's parent (agent.c), or without
		 * the agent's directory (no agent: the exec API) all there is, idle.
		 */
		json_t *cmd = !guarded ? json_pack("[s, s]", "__docker-agent",
						   AGENT_DIR_IN "/" AGENT_SOCK_NAME)
			      : agent_dir
				      ? json_pack("[s, s, s]", "__docker-init", "__docker-agent",
						  AGENT_DIR_IN "/" AGENT_SOCK_NAME)
				      : json_pack("[s]", "__docker-init");

		if (json_object_set_new(body, "Entrypoint", json_pack("[s]", AGENT_BIN_IN)) < 0 ||
		    json_object_set_new(body, "Cmd", cmd) < 0 ||
		    json_object_set_new(json_object_get(body, "Labels"), "cordon.agent_dir",
					json_string(agent_label)) < 0) {
			json_decref(body);
			return NULL;
		}
	}
	return body;
}

/* DELETE the container (gone already is fine). -1 with *e when it may still be there. */
static int remove_container(const char *sock, const char *api, const char *id, cordon_error *e)
{
	struct http_response r = { 0 };
	_cleanup_free_ char *path = NULL;
	int rc;

	if (asprintf(&path, "%s/containers/%s?force=1&v=1", api, id) < 0) {
		path = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	rc = http_request(sock, "DELETE", path, NULL, NULL, 0, CALL_TIMEOUT_MS, NULL, &r, e);
	if (rc < 0)
		conn_error(sock, e);
	else if (r.status / 100 != 2 && r.status != 404)
		rc = api_error("remove container", &r, e);
	http_response_free(&r);
	return rc;
}

static void docker_free(struct docker *d)
{
	if (!d)
		return;
	free(d->sock);
	free(d->id);
	free(d->name);
	free(d->workdir_in);
	free(d->workdir);
	free(d->groups);
	if (d->wd_fd >= 0)
		(void)close(d->wd_fd);
	docker_cg_free(d->cg);
	pthread_mutex_destroy(&d->cg_lock);
	pthread_rwlock_destroy(&d->start_lock);
	agent_host_free(&d->agent);
	free(d);
}

static void docker_close(void *h)
{
	struct docker *d = h;
	cordon_error e;

	if (d)
		agent_host_disconnect(&d->agent);
	/*
	 * close() cannot fail, but a container left behind (dockerd gone or failing) must not go
	 * unnoticed: one line says which, and what removes it (gc takes a container whose owner,
	 * this process, is gone; cordond does at its next start).
	 */
	if (d && (d->id || d->name) &&
	    remove_container(d->sock, d->api, d->id ? d->id : d->name, &e) < 0) {
		char buf[320];

		fprintf(stderr,
			"cordon: warning: container %s (%.12s) was not removed (%s); 'cordon gc "
			"--backend docker' removes it once this process has exited\n",
			d->name ? d->name : "?", d->id ? d->id : "id unknown",
			cordon_err_str(&e, buf, sizeof(buf)));
	}
	docker_free(d); /* and the agent's directory, once its container is gone */
}

static int start_container(struct docker *d, cordon_error *e)
{
	struct http_response r = { 0 };
	_cleanup_free_ char *path = NULL;
	int rc = 0;

	if (docker_test_before_start)
		docker_test_before_start();
	if (asprintf(&path, "/containers/%s/start", d->id) < 0) {
		path = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (call(d, "POST", path, NULL, &r, e) < 0)
		return -1;
	if (r.status != 204 && r.status != 304)
		rc = api_error("start container", &r, e);
	http_response_free(&r);
	return rc;
}

/* The host pid of the container's init (State.Pid), 0 when it has none or cannot be asked. */
static pid_t init_pid(struct docker *d)
{
	struct http_response r = { 0 };
	_cleanup_free_ char *path = NULL;
	cordon_error e;
	json_t *j = NULL;
	json_int_t pid;

	if (asprintf(&path, "/containers/%s/json", d->id) < 0) {
		path = NULL;
		return 0;
	}
	if (call(d, "GET", path, NULL, &r, &e) < 0)
		return 0;
	if (r.status == 200)
		j = json_loadb(r.body, r.body_len, 0, NULL);
	pid = json_integer_value(json_object_get(json_object_get(j, "State"), "Pid"));
	json_decref(j);
	http_response_free(&r);
	return pid > 0 && pid < INT32_MAX ? (pid_t)pid : 0;
}

/*
 * Find the container's cgroup for the usage fields: its init's host pid leads to it. Best
 * effort: without it (a daemon in another pid or cgroup namespace than ours) the usage fields
 * stay unknown.
 */
static void locate_cgroup(struct docker *d, pid_t pid)
{
	struct docker_cg *cg = NULL, *old;
	cordon_error e;

	if (pid > 0)
		(void)docker_cg_open(pid, d->id, &cg, &e);
	pthread_mutex_lock(&d->cg_lock);
	old = d->cg;
	d->cg = cg;
	pthread_mutex_unlock(&d->cg_lock);
	docker_cg_free(old);
	if (docker_test_cgroup_dropped)
		docker_test_cgroup_dropped();
}

/* The usage marks of an exec, under cg_lock (locate_cgroup). */
static void cg_begin(struct docker *d, struct docker_cg_mark *m)
{
	pthread_mutex_lock(&d->cg_lock);
	docker_cg_begin(d->cg, m);
	pthread_mutex_unlock(&d->cg_lock);
}

static void cg_end(struct docker *d, struct docker_cg_mark *m, struct cordon_result *r)
{
	pthread_mutex_lock(&d->cg_lock);
	docker_cg_end(d->cg, m, r);
	pthread_mutex_unlock(&d->cg_lock);
}

/*
 * Is the container's workdir the directory cordon checked (d->wd_fd)? dockerd is given only
 * its path, and resolves it again at every start, following symlinks: a caller who swaps the
 * path meanwhile (a symlink, or renameat2 RENAME_EXCHANGE of two directories) would otherwise
 * get any directory of the host mounted read-write, and the user chosen from one directory's
 * owner would run in another. So after each start, what the container has at workdir_in is
 * looked at from the inside: the init's /proc/PID/root is the container's root in its own
 * mount namespace, and workdir_in is resolved in it (RESOLVE_IN_ROOT: the image's symlinks
 * stay inside). Its (st_dev, st_ino) must be the held directory's; the fd held keeps that
 * inode from being reused. The pid comes from inspect and is asked again once its /proc
 * directory is open: still the init then, so that fd is the init's and no recycled pid's.
 *
 * Only root can look into another user's process (/proc/PID/root needs ptrace access): as
 * root (the CLI as root, cordond) a check that cannot be made fails the open. A member of
 * group docker, not root, can have dockerd mount any directory anyway; there the check is
 * made when the container's user is its own, and skipped when /proc refuses it.
 * 1: mismatch (*e says so), -1: could not check (*e), 0: it is the workdir.
 */
static int check_workdir(struct docker *d, pid_t pid, const char *when, cordon_error *e)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int proc = -1, root = -1, wd = -1;
	char path[64];
	struct stat st;

	if (pid <= 0)
		return cordon_err(e, 0, "docker: cannot check the container's %s: it has no init",
				  d->workdir_in);
	(void)snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	proc = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proc < 0 || init_pid(d) != pid)
		return cordon_err(e, proc < 0 ? errno : ESRCH,
				  "docker: cannot check the container's %s: its init %d",
				  d->workdir_in, (int)pid);
	root = openat(proc, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root >= 0)
		wd = (int)syscall(SYS_openat2, root, d->workdir_in, &how, sizeof(how));
	if (wd < 0 || fstat(wd, &st) < 0) {
		if (geteuid() != 0 && (errno == EACCES || errno == EPERM))
			return 0;
		return cordon_err(e, errno, "docker: cannot check the container's %s",
				  d->workdir_in);
	}
	if (st.st_dev != d->wd_st.st_dev || st.st_ino != d->wd_st.st_ino) {
		cordon_err(e, 0,
			   "docker: workdir '%s' was replaced while the container %s: its %s is "
			   "another directory (the container is removed)",
			   d->workdir, when, d->workdir_in);
		return 1;
	}
	return 0;
}

/*
 * The workdir to mount, opened once: the directory whose owner decides the user and which
 * check_workdir() compares the container's with: dirfd when the caller opened and checked
 * it, else the path, as the local sandbox opens it (fsutil_open_workdir).
 */
static int open_workdir(struct docker *d, const char *workdir, int dirfd, cordon_error *e)
{
	if (!(d->workdir = strdup(workdir)))
		return cordon_err(e, ENOMEM, "out of memory");
	d->wd_fd = fsutil_open_workdir(workdir, dirfd, &d->wd_st, e);
	return d->wd_fd < 0 ? cordon_err_prefix(e, "docker") : 0;
}

/*
 * Whether only root can change what the workdir's path names (fsutil_path_root_controlled), and the
 * path ends at the directory held. The container's check (check_workdir) comes after the
 * start: where another user can swap a directory on the way, dockerd can be made to mount one
 * they could not reach (below a 0700 directory of someone else's), and until the check
 * removes the container its processes were theirs to look into (docker_open).
 */
static bool workdir_root_controlled(const struct docker *d)
{
	struct stat st;
	cordon_error e;

	return fsutil_path_root_controlled(d->workdir, &st, &e) == 0 &&
	       st.st_dev == d->wd_st.st_dev && st.st_ino == d->wd_st.st_ino;
}

/*
 * cordon's own temp workdir, root's now: create_container runs its commands as nobody, and
 * docker_exec gives it to nobody at the first command; from then on nobody can swap its path
 * (theirs, in sticky /tmp), which dockerd resolves again at a restart. Guarded from the open,
 * then, as if nobody's already (found in red team: docker-init, dumpable and nobody's, was
 * nobody's to look into at a restart, before the check).
 */
static bool temp_given_to_nobody(const struct cordon_open *o, const struct docker *d)
{
	return o->workdir_is_temp && d->wd_st.st_uid == 0 && !o->profile->docker_user;
}

/*
 * As root, every [docker] ro_bind source must be root's alone to change (fsutil_path_root_controlled):
 * dockerd resolves it as root at each start of the container, so one below a directory
 * another user can write let that user swap in a symlink and have any directory of the host
 * mounted, read-only, into every container of the profile (red team). Unlike the workdir,
 * which is checked after the start, a bind has no fd to compare with: refused before the
 * create, one line naming the path and why. (Not as root: the caller's own Docker access
 * mounts what they could mount anyway.)
 */
static int check_ro_binds(const struct cordon_profile *p, cordon_error *e)
{
	for (size_t i = 0; i < p->docker_ro_bind.n; i++) {
		const char *b = p->docker_ro_bind.v[i], *colon = strchr(b, ':');
		_cleanup_free_ char *host = colon ? strndup(b, (size_t)(colon - b)) : strdup(b);
		char ctx[PATH_MAX + 64];
		struct stat st;

		if (!host)
			return cordon_err(e, ENOMEM, "out of memory");
		if (fsutil_path_root_controlled(host, &st, e) == 0)
			continue;
		if (e->code)
			(void)snprintf(ctx, sizeof(ctx), "docker: [docker] ro_bind");
		else
			(void)snprintf(ctx, sizeof(ctx),
				       "docker: [docker] ro_bind '%s' is not root's alone to name",
				       host);
		return cordon_err_prefix(e, ctx);
	}
	return 0;
}

/*
 * HostConfig.GroupAdd: the commands' supplementary groups. A member's runs through cordond
 * have the member's groups, as on the host: a group can deny (a file `rw----r--` of group G is
 * closed to G's members), so leaving one out would open such a file to them.
 */
static int add_groups(json_t *hc, const struct docker *d)
{
	json_t *a = json_array();

	if (!hc || !a || json_object_set_new(hc, "GroupAdd", a) < 0)
		return -1;
	for (size_t i = 0; i < d->ngroups; i++) {
		char g[16];

		(void)snprintf(g, sizeof(g), "%u", (unsigned)d->groups[i]);
		if (json_array_append_new(a, json_string(g)) < 0)
			return -1;
	}
	return 0;
}

/* s percent-encoded for a URL path: an image reference may hold anything the CLI is given. */
static char *path_escape(const char *s)
{
	char *out = malloc(3 * strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~:/@", *p))
			*o++ = (char)*p;
		else
			o += sprintf(o, "%%%02X", *p);
	}
	*o = '\0';
	return out;
}

/*
 * An image's declared volumes (Config.Volumes) would be anonymous volumes: directories on the
 * host's disk, writable past the read-only root, /tmp's size and the memory limit. Each is a
 * tmpfs instead, sized and made as /tmp (what the image has there is not copied in). A path
 * that is already one of the container's mounts (the workdir, /tmp...) needs nothing. An
 * image that cannot be inspected is left to create, which says why.
 */
static int cover_image_volumes(struct docker *d, const char *image, json_t *mounts, uint64_t size,
			       cordon_error *e)
{
	struct http_response r = { 0 };
	_cleanup_free_ char *name = path_escape(image), *path = NULL;
	json_t *j = NULL, *v;
	const char *target;
	int rc = -1;

	if (!name || asprintf(&path, "/images/%s/json", name) < 0) {
		path = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (call(d, "GET", path, NULL, &r, e) < 0)
		return -1;
	if (r.status == 404) {
		rc = 0;
		goto out;
	}
	if (r.status != 200) {
		api_error("inspect image", &r, e);
		goto out;
	}
	j = json_loadb(r.body, r.body_len, 0, NULL);
	json_object_foreach(json_object_get(json_object_get(j, "Config"), "Volumes"), target, v)
	{
		size_t i;
		json_t *m;
		bool mounted = false;

		json_array_foreach(mounts, i, m) mounted =
			mounted || !strcmp(target, json_string_value(json_object_get(m, "Target")));
		if (mounted)
			continue;
		if (json_array_append_new(mounts, json_pack("{s:s, s:s, s:b, s:{s:I, s:i}}", "Type",
							    "tmpfs", "Target", target, "ReadOnly",
							    false, "TmpfsOptions", "SizeBytes",
							    (json_int_t)size, "Mode", 01777)) < 0) {
			cordon_err(e, ENOMEM, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(j);
	http_response_free(&r);
	return rc;
}

/* Create the container (d->id); with agent_exe, the agent is its main process. */
static int create_container(struct docker *d, const struct cordon_profile *p, const char *agent_exe,
			    cordon_error *e)
{
	struct http_response r = { 0 };
	struct orphan_self self;
	char session[33], name[48], user[32], mdir[4096], copy[4096];
	_cleanup_free_ char *path = NULL;
	json_t *body = NULL, *j = NULL;
	volatile int *cancel;
	int rc = -1, called;

	backend_random_hex(session, 16);
	orphan_self_read(&self); /* the owner, and where its pid means something */
	(void)snprintf(name, sizeof(name), "cordon-%.16s", session);
	/*
	 * Who the commands run as, without [docker] user: never uid 0. A root process in the
	 * container needs no capability to chmod u+s a file it owns, so as root it would leave
	 * setuid-root programs in the workdir for any host user who reaches it (a root-owned
	 * group would make setgid-root ones). So: the workdir's owner (what the command makes is
	 * the owner's), and in a root-owned workdir nobody with gid 65533, as the local backend
	 * does (backend_root_run_ids); there the command can write only what is writable for
	 * everyone (docs/docker.md, "Which user"). The owner is the held directory's (open_workdir), the one
	 * check_workdir() requires the container to have: a path stat()ed here could be
	 * another directory than the one dockerd mounts.
	 */
	d->chown_temp = false;
	if (p->docker_user) {
		user[0] = '\0'; /* as given: an admin's choice (docs/docker.md) */
	} else {
		uid_t uid;
		gid_t gid;

		d->chown_temp = backend_root_run_ids(d->wd_st.st_uid, d->wd_st.st_gid, &uid, &gid);
		(void)snprintf(user, sizeof(user), "%u:%u", (unsigned)uid, (unsigned)gid);
	}
	if (agent_exe && !agent_host_mount_dir(&d->agent, mdir, sizeof(mdir)))
		agent_exe = NULL;
	if (d->guarded) {
		if (!agent_exe)
			return cordon_err(e, 0, "docker: the agent's directory is missing");
		if (agent_host_exec_copy(&d->agent, agent_exe, copy, sizeof(copy), e) < 0)
			return -1;
		agent_exe = copy;
	}
	body = create_body(p, d->workdir, d->workdir_in, session, &self,
			   p->docker_user ? p->docker_user : user, agent_exe,
			   agent_exe && !d->idle_init ? mdir : NULL, d->agent.dir, d->guarded);
	if (body && d->ngroups && add_groups(json_object_get(body, "HostConfig"), d) < 0) {
		json_decref(body);
		body = NULL;
	}
	if (body &&
	    cover_image_volumes(d, p->docker_image ? p->docker_image : DOCKER_DEFAULT_IMAGE,
				json_object_get(json_object_get(body, "HostConfig"), "Mounts"),
				p->tmp_size ? p->tmp_size : 256u << 20, e) < 0)
		goto out;
	if (!body || asprintf(&path, "/containers/create?name=%s", name) < 0) {
		path = NULL;
		cordon_err(e, ENOMEM, "out of memory");
		goto out;
	}
	/*
	 * Not cut short by the caller's cancel flag: dockerd makes the container whether anyone
	 * waits for its answer or not (it does not stop when the connection closes), and
	 * without the answer's id it was left behind, created and never started, its owner
	 * alive, so that gc kept it (found in red team: a member of group cordon who dropped
	 * POST /v1/run's connection during the create left one each time, counted by no
	 * limit). Removing it by name at once does not do: until dockerd has made it, the name
	 * finds nothing. So the create is waited for (at most CALL_TIMEOUT_MS) and the flag
	 * looked at after it; a cancel then removes the container (docker_close).
	 */
	cancel = TAKE_PTR(d->cancel);
	called = call(d, "POST", path, body, &r, e);
	d->cancel = cancel;
	if (called < 0) {
		/* Its answer lost all the same (no answer within CALL_TIMEOUT_MS): dockerd may
		 * make it yet. By its name, then, as well as that can be done (docker_close). */
		free(d->name);
		d->name = strdup(name);
		goto out;
	}
	if (r.status == 404 && r.body && strstr(r.body, "No such image")) {
		/* Never pull: a missing image is the user's to fetch. (Other 404s: a missing
		 * network, for one.) */
		const char *img = p->docker_image ? p->docker_image : DOCKER_DEFAULT_IMAGE;

		cordon_err(e, 0,
			   "docker: image '%s' is not present (cordon never pulls: run 'docker "
			   "pull %s' first)",
			   img, img);
		goto out;
	}
	if (r.status != 201) {
		api_error("create container", &r, e);
		goto out;
	}
	j = json_loadb(r.body, r.body_len, 0, NULL);
	if (!j || !json_string_value(json_object_get(j, "Id"))) {
		cordon_err(e, 0, "docker: create container: no Id in the answer");
		goto out;
	}
	free(d->name);
	d->id = strdup(json_string_value(json_object_get(j, "Id")));
	d->name = strdup(name);
	rc = d->id && d->name ? 0 : cordon_err(e, ENOMEM, "out of memory");
	if (rc == 0 && d->cancel && *d->cancel)
		rc = cordon_err(e, EINTR, "docker: interrupted while the container was created");
out:
	json_decref(j);
	json_decref(body);
	http_response_free(&r);
	return rc;
}

/*
 * Create and start the container, check that it has the workdir; with agent_exe, until its
 * agent has connected. *ret_pid: its init.
 */
/* Did the admin ask for root ([docker] user 0 or root, with any group)? */
static bool root_on_purpose(const char *user)
{
	size_t n = strcspn(user, ":");

	return (n == 1 && user[0] == '0') || (n == 4 && !strncmp(user, "root", 4));
}

/* The effective uid pid runs as on the host (/proc/pid/status), or -1. */
static long effective_uid(pid_t pid)
{
	char path[64], line[256];
	long real, eff = -1;
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %ld %ld", &real, &eff) == 2)
			break;
	fclose(f);
	return eff;
}

/*
 * A [docker] user given by name is looked up in the image's /etc/passwd, which the image's
 * author wrote: `user = builder` may be uid 0 there (found in the Docker review). The
 * container's init runs as that user: root is refused unless the profile says 0 or root.
 * Unknown (no init to look at) is let through: the commands then run as Docker decided.
 */
static int check_named_user(const struct cordon_profile *p, pid_t pid, cordon_error *e)
{
	if (!p->docker_user || root_on_purpose(p->docker_user) || pid <= 0 ||
	    effective_uid(pid) != 0)
		return 0;
	return cordon_err(e, 0,
			  "docker: [docker] user '%s' is root (uid 0) in image '%s' (its "
			  "/etc/passwd says so): refused; write user = 0 to run the commands as "
			  "root on purpose (docs/docker.md, \"Which user\")",
			  p->docker_user, p->docker_image ? p->docker_image : DOCKER_DEFAULT_IMAGE);
}

static int open_container(struct docker *d, const struct cordon_profile *p, const char *agent_exe,
			  pid_t *ret_pid, cordon_error *e)
{
	pid_t pid;
	int r;

	if (agent_exe && agent_host_listen(&d->agent, e) < 0)
		return -1;
	if (create_container(d, p, agent_exe, e) < 0 || start_container(d, e) < 0)
		return -1;
	/*
	 * Before the agent is accepted: nothing may run in a container that has another
	 * directory; docker_open removes it. A check that could not be made (a container whose
	 * agent exited at once has no init left to look into) may be made again, without the
	 * agent.
	 */
	pid = init_pid(d);
	r = check_workdir(d, pid, "started", e);
	if (r != 0) {
		d->replaced = r > 0;
		return -1;
	}
	if (check_named_user(p, pid, e) < 0) {
		d->root_by_name = true;
		return -1;
	}
	if (agent_exe && !d->idle_init &&
	    agent_host_accept(&d->agent, d->id, AGENT_CONNECT_MS, e) < 0)
		return -1;
	*ret_pid = pid;
	return 0;
}

/*
 * With o->workdir_fd (cordond opens a client's workdir as the client; the CLI as root walks it
 * without symlinks): that directory is the one the container must have. dockerd is given the
 * path; what it mounted is checked to be that directory, at the start and at every restart.
 */
static int docker_open(const struct cordon_open *o, void **ret_h, cordon_error *e)
{
	const struct cordon_profile *p = o->profile;
	const char *workdir = o->workdir;
	struct docker *d = calloc(1, sizeof(*d));
	_cleanup_free_ char *agent_exe = NULL;
	pid_t pid = 0;
	int rc = -1;

	if (!d)
		return cordon_err(e, ENOMEM, "out of memory");
	d->agent = (struct agent_host)AGENT_HOST_INIT;
	d->wd_fd = -1;
	pthread_mutex_init(&d->cg_lock, NULL);
	pthread_rwlock_init(&d->start_lock, NULL);
	d->cancel = o->cancel;
	if (o->ngroups) {
		d->groups = malloc(o->ngroups * sizeof(gid_t));
		if (!d->groups) {
			cordon_err(e, ENOMEM, "out of memory");
			goto out;
		}
		memcpy(d->groups, o->groups, o->ngroups * sizeof(gid_t));
		d->ngroups = o->ngroups;
	}
	if (geteuid() == 0 && check_ro_binds(p, e) < 0)
		goto out;
	if (open_workdir(d, workdir, o->workdir_fd, e) < 0)
		goto out;
	if (docker_socket_path(&d->sock, e) < 0 ||
	    negotiate(d->sock, d->cancel, d->api, NULL, e) < 0)
		goto out;
	d->workdir_in = strdup(p->docker_workdir ? p->docker_workdir : DEFAULT_WORKDIR);
	if (!d->workdir_in) {
		cordon_err(e, ENOMEM, "out of memory");
		goto out;
	}
	/*
	 * As root, a workdir whose path someone else can swap (a member's, through cordond; a
	 * user's, given to cordon run as root): dockerd may mount another directory than the one
	 * opened, and the check that finds it can only come once the container has started. Its
	 * processes until then must not be the workdir owner's to look into: docker-init and the
	 * image's `sleep` are dumpable, and a member read a directory below someone else's 0700
	 * home through /proc/PID/root of one of them, winning the swap in about one run of ten
	 * (red team). So its pid 1 is the agent's execute-only copy (agent.c, docker_init_main),
	 * the agent's parent, or idle where the commands go through the exec API; without a
	 * static cordon binary to copy there is no container.
	 */
	d->guarded = geteuid() == 0 && (!workdir_root_controlled(d) || temp_given_to_nobody(o, d));
	if (p->docker_agent || d->guarded)
		agent_exe = agent_binary();
	d->idle_init = d->guarded && !p->docker_agent;
	if (d->guarded && !agent_exe) {
		cordon_err(e, 0,
			   "docker: workdir '%s' is on a path others than root may change, which "
			   "takes a static cordon binary (the agent's) to be run safely, and there "
			   "is none to use (cordon doctor): not run",
			   d->workdir);
		goto out;
	}
	if (open_container(d, p, agent_exe, &pid, e) < 0) {
		if (!agent_exe || d->idle_init || d->replaced || d->root_by_name ||
		    (d->cancel && *d->cancel))
			goto out;
		/*
		 * Again without the agent, in case it is what failed (an image of another
		 * architecture, a daemon that cannot see the agent's directory): Docker's exec
		 * API then runs the commands. A failure that is not the agent's (a missing
		 * image) fails again, with its own message.
		 */
		if (d->id || d->name) {
			cordon_error e2;

			/* docker_close tries again, and says so when it cannot either. */
			if (remove_container(d->sock, d->api, d->id ? d->id : d->name, &e2) < 0)
				goto out;
		}
		free(d->id);
		d->id = NULL;
		free(d->name);
		d->name = NULL;
		/* Guarded: its copy stays pid 1, idle (the agent's directory holds it). */
		if (d->guarded) {
			d->idle_init = true;
		} else {
			agent_host_free(&d->agent);
			free(agent_exe);
			agent_exe = NULL;
		}
		if (open_container(d, p, agent_exe, &pid, e) < 0)
			goto out;
	}
	locate_cgroup(d, pid);
	d->cancel = NULL; /* the caller's flag may not outlive this call */
	*ret_h = TAKE_PTR(d);
	rc = 0;
out:
	if (d)
		d->cancel = NULL;
	docker_close(d); /* removes a container that was created but could not start */
	return rc;
}

/* Docker's stream framing: [stream u8][0 0 0][len u32 BE] then len bytes, across any chunks. */
struct demux {
	unsigned char hdr[8];
	unsigned hlen;
	uint32_t left;
	int stream;
};

static void demux_feed(struct demux *m, const char *buf, size_t n, struct capture *out,
		       struct capture *err)
{
	while (n) {
		if (m->left == 0) {
			m->hdr[m->hlen++] = (unsigned char)*buf++;
			n--;
			if (m->hlen == 8) {
				m->stream = m->hdr[0];
				m->left = (uint32_t)m->hdr[4] << 24 | (uint32_t)m->hdr[5] << 16 |
					  (uint32_t)m->hdr[6] << 8 | m->hdr[7];
				m->hlen = 0;
			}
			continue;
		}
		size_t k = n < m->left ? n : m->left;

		capture_feed(m->stream == 2 ? err : out, buf, k);
		buf += k;
		n -= k;
		m->left -= (uint32_t)k;
	}
}

/* Create an exec; *ret_id is its id. */
static int exec_create(struct docker *d, json_t *cmd, json_t *env, bool attach, char **ret_id,
		       cordon_error *e)
{
	struct http_response r = { 0 };
	_cleanup_free_ char *path = NULL;
	json_t *body, *j = NULL;
	int rc = -1;

	body = json_pack("{s:O, s:b, s:b, s:b, s:s}", "Cmd", cmd, "AttachStdout", attach,
			 "AttachStderr", attach, "Tty", false, "WorkingDir", d->workdir_in);
	if (!body || asprintf(&path, "/containers/%s/exec", d->id) < 0) {
		path = NULL;
		json_decref(body);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (env)
		json_object_set(body, "Env", env);
	if (call(d, "POST", path, body, &r, e) < 0)
		goto out;
	if (r.status != 201) {
		api_error("exec", &r, e);
		goto out;
	}
	j = json_loadb(r.body, r.body_len, 0, NULL);
	if (!j || !json_string_value(json_object_get(j, "Id"))) {
		cordon_err(e, 0, "docker: exec: no Id in the answer");
		goto out;
	}
	*ret_id = strdup(json_string_value(json_object_get(j, "Id")));
	rc = *ret_id ? 0 : cordon_err(e, ENOMEM, "out of memory");
out:
	json_decref(j);
	json_decref(body);
	http_response_free(&r);
	return rc;
}

/* Running and ExitCode of an exec. */
static int exec_inspect(struct docker *d, const char *id, bool *running, int *code, cordon_error *e)
{
	struct http_response r = { 0 };
	_cleanup_free_ char *path = NULL;
	json_t *j = NULL;
	int rc = -1;

	if (asprintf(&path, "/exec/%s/json", id) < 0) {
		path = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (call(d, "GET", path, NULL, &r, e) < 0)
		return -1;
	if (r.status != 200) {
		api_error("inspect exec", &r, e);
		goto out;
	}
	j = json_loadb(r.body, r.body_len, 0, NULL);
	if (!j) {
		cordon_err(e, 0, "docker: inspect exec: malformed answer");
		goto out;
	}
	*running = json_is_true(json_object_get(j, "Running"));
	*code = (int)json_integer_value(json_object_get(j, "ExitCode"));
	rc = 0;
out:
	json_decref(j);
	http_response_free(&r);
	return rc;
}

/*
 * Wait until exec id's process has started (its Pid, Running or ExitCode in the exec's
 * inspect): dockerd answers an attached start (101) before it makes the process, which a
 * restart meanwhile would have put in the new container, before that one's check. 0, or -1
 * with *e (a wait past until, or dockerd's error).
 */
static int exec_launched(struct docker *d, const char *id, double until, cordon_error *e)
{
	_cleanup_free_ char *path = NULL;

	if (asprintf(&path, "/exec/%s/json", id) < 0) {
		path = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	for (;;) {
		struct http_response r = { 0 };
		json_t *j;
		bool started;

		if (call(d, "GET", path, NULL, &r, e) < 0)
			return -1;
		if (r.status != 200) {
			api_error("inspect exec", &r, e);
			http_response_free(&r);
			return -1;
		}
		j = json_loadb(r.body, r.body_len, 0, NULL);
		http_response_free(&r);
		if (!j)
			return cordon_err(e, 0, "docker: inspect exec: malformed answer");
		started = json_is_true(json_object_get(j, "Running")) ||
			  json_integer_value(json_object_get(j, "Pid")) > 0 ||
			  json_is_integer(json_object_get(j, "ExitCode"));
		json_decref(j);
		if (started)
			return 0;
		if (now_ms() >= until)
			return cordon_err(e, ETIMEDOUT, "docker: the exec's process did not start");
		usleep(2 * 1000);
	}
}

/* A restart found what must not run: the container goes, and every later exec fails with *e. */
static void break_container(struct docker *d, const cordon_error *e)
{
	cordon_error e2;

	d->broken_e = *e;
	__atomic_store_n(&d->broken, true, __ATOMIC_RELEASE);
	(void)remove_container(d->sock, d->api, d->id, &e2);
}

/*
 * Kill the container and start it again, for a command that could not be killed otherwise:
 * every process in it dies; the bind-mounted workdir stays, /tmp does not. Its agent connects
 * again (holding: the caller holds the agent; else it is left alone when another thread uses
 * it: that thread sees the agent go and reports exit 137).
 */
static void restart_container(struct docker *d, bool holding)
{
	struct http_response r = { 0 };
	_cleanup_free_ char *path = NULL;
	cordon_error e;
	bool agent = d->agent.dir && !d->idle_init &&
		     (holding || !__atomic_test_and_set(&d->agent.busy, __ATOMIC_ACQUIRE));
	bool locked = true;
	pid_t pid;

	pthread_rwlock_wrlock(&d->start_lock);
	if (agent) {
		agent_host_disconnect(&d->agent);
		/* Without a socket to connect to, the new agent idles: the exec API works. */
		(void)agent_host_listen(&d->agent, &e);
	}
	if (asprintf(&path, "/containers/%s/kill?signal=KILL", d->id) >= 0 &&
	    call(d, "POST", path, NULL, &r, &e) == 0)
		http_response_free(&r);
	/*
	 * dockerd resolves the agent directory's path again at the start: it must still be ours
	 * (once removed, by a /tmp cleaner, it may be another user's, who would then get the new
	 * agent's connection), else the container goes, and so does every later exec.
	 */
	if (d->agent.dir && !agent_host_dir_intact(&d->agent, &e)) {
		break_container(d, &e);
	} else if (start_container(d, &e) == 0) {
		/*
		 * dockerd resolved the workdir's path again: the container must still have the
		 * same directory (check_workdir), else it goes, and so does every later exec.
		 */
		if (docker_test_before_check)
			docker_test_before_check();
		pid = init_pid(d);
		if (check_workdir(d, pid, "restarted", &e) != 0) {
			break_container(d, &e);
		} else {
			/*
			 * Checked: the commands may start again (another request's may wait),
			 * once the new agent has connected: a command started before could take
			 * its socket, and be taken for the agent.
			 */
			if (agent && d->agent.lfd >= 0)
				(void)agent_host_accept(&d->agent, d->id, AGENT_CONNECT_MS, &e);
			pthread_rwlock_unlock(&d->start_lock);
			locked = false;
			locate_cgroup(d, pid); /* a new init, and new cgroup directories */
		}
	}
	if (locked)
		pthread_rwlock_unlock(&d->start_lock);
	if (agent && !holding)
		__atomic_clear(&d->agent.busy, __ATOMIC_RELEASE);
}

/*
 * Kill the exec's process group (its pid file) and every process carrying its nonce (setsid
 * escapees), from a second, detached exec (docker-daytona.md A4). If the exec still runs after
 * that, kill and restart the container: the workdir is a bind mount and survives.
 */
static void kill_exec(struct docker *d, const char *eid, const char *nonce)
{
	static const char script[] =
		"pg=$(cat /dev/shm/cordon-$1.pid 2>/dev/null) && kill -KILL -\"$pg\" 2>/dev/null\n"
		"for p in /proc/[0-9]*; do n=${p#/proc/}; [ \"$n\" = $$ ] && continue\n"
		"  grep -q \"CORDON_EXEC_NONCE=$1\" \"$p/environ\" 2>/dev/null && "
		"kill -KILL \"$n\" 2>/dev/null; done\n"
		"rm -f /dev/shm/cordon-$1.pid; true";
	struct http_response r = { 0 };
	_cleanup_free_ char *kid = NULL, *path = NULL;
	json_t *cmd = json_pack("[s, s, s, s, s]", "sh", "-c", script, "sh", nonce);
	json_t *det = json_pack("{s:b, s:b}", "Detach", true, "Tty", false);
	cordon_error e;
	bool running = true;
	int code;

	/* Its own process too only in a checked container (start_lock); a detached start is
	 * answered once the process runs. */
	pthread_rwlock_rdlock(&d->start_lock);
	if (cmd && det && !__atomic_load_n(&d->broken, __ATOMIC_ACQUIRE) &&
	    exec_create(d, cmd, NULL, false, &kid, &e) == 0 &&
	    asprintf(&path, "/exec/%s/start", kid) >= 0) {
		if (call(d, "POST", path, det, &r, &e) == 0)
			http_response_free(&r);
	}
	pthread_rwlock_unlock(&d->start_lock);
	json_decref(cmd);
	json_decref(det);
	for (double end = now_ms() + KILL_WAIT_MS; now_ms() < end;) {
		if (exec_inspect(d, eid, &running, &code, &e) < 0 || !running)
			break;
		usleep(50 * 1000);
	}
	if (running)
		restart_container(d, false);
}

/* What one command's run gives, whichever way it ran. */
struct exec_state {
	const char *nonce;
	char *const *envv; /* the command's environment (on top of the container's) */
	double deadline;
	struct capture *out, *err;
	struct docker_cg_mark mark;
	int code;
	bool timed_out, cancelled;
};

/*
 * The command through Docker's exec API: exec create, exec start read as a stream until
 * dockerd closes it, exec inspect for the exit code (docker-daytona.md A2). -1 with *e when
 * nothing could be run.
 */
static int api_exec(struct docker *d, const struct cordon_exec *x, struct exec_state *s,
		    cordon_error *e)
{
	struct http_response resp = { 0 };
	struct demux m = { 0 };
	_cleanup_free_ char *eid = NULL, *pending = NULL, *pidcmd = NULL;
	_cleanup_(relay_buf_freep) char *buf = NULL;
	_cleanup_close_ int fd = -1;
	size_t npending = 0;
	json_t *cmd = NULL, *env = NULL, *start = NULL;
	bool running = false, locked = false;
	int rc = -1;

	/*
	 * The exec's shell is its session and group leader, and becomes the command: its pid is
	 * the group to kill. It first removes the pid files of execs that are gone (a shell that
	 * stayed to remove its own would print "Terminated" when the command dies by a signal).
	 */
	if (asprintf(&pidcmd,
		     "for g in /dev/shm/cordon-*.pid; do read p <\"$g\" && [ -e /proc/\"$p\" ] || "
		     "rm -f \"$g\"; done 2>/dev/null; echo $$ >/dev/shm/cordon-%s.pid; exec \"$@\"",
		     s->nonce) < 0) {
		pidcmd = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	cmd = json_pack("[s, s, s, s]", "sh", "-c", pidcmd, "sh");
	env = json_array();
	start = json_pack("{s:b, s:b}", "Detach", false, "Tty", false);
	buf = relay_buf_new();
	if (!cmd || !env || !start || !buf) {
		cordon_err(e, ENOMEM, "out of memory");
		goto out;
	}
	for (char *const *a = x->argv; *a; a++)
		json_array_append_new(cmd, json_string(*a));
	for (char *const *v = s->envv; *v; v++)
		json_array_append_new(env, json_string(*v));
	/* Not while a restart waits for its check (start_lock), nor in a container it removed. */
	pthread_rwlock_rdlock(&d->start_lock);
	locked = true;
	if (__atomic_load_n(&d->broken, __ATOMIC_ACQUIRE)) {
		*e = d->broken_e;
		goto out;
	}
	if (exec_create(d, cmd, env, true, &eid, e) < 0)
		goto out;
	{
		_cleanup_free_ char *full = NULL, *text = json_dumps(start, JSON_COMPACT);

		if (!text || asprintf(&full, "%s/exec/%s/start", d->api, eid) < 0) {
			full = NULL;
			cordon_err(e, ENOMEM, "out of memory");
			goto out;
		}
		cg_begin(d, &s->mark);
		if (http_stream_open(d->sock, "POST", full, "application/json", text, strlen(text),
				     NULL, CALL_TIMEOUT_MS, NULL, &resp, &fd, &pending, &npending,
				     e) < 0) {
			conn_error(d->sock, e);
			goto out;
		}
		if (resp.status != 200 && resp.status != 101) {
			api_error("start exec", &resp, e);
			goto out;
		}
		if (exec_launched(d, eid, now_ms() + CALL_TIMEOUT_MS, e) < 0)
			goto out;
	}
	pthread_rwlock_unlock(&d->start_lock);
	locked = false;
	demux_feed(&m, pending, npending, s->out, s->err);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = s->deadline - now_ms();
		int tmo;
		ssize_t n;

		if (x->cancel && *x->cancel) {
			s->cancelled = true;
			break;
		}
		if (left <= 0) {
			s->timed_out = true;
			break;
		}
		tmo = poll_ms(left);
		if (x->cancel && tmo > CANCEL_POLL_MS)
			tmo = CANCEL_POLL_MS;
		if (poll(&pfd, 1, tmo) < 0) {
			if (errno == EINTR)
				continue;
			cordon_err(e, errno, "poll");
			goto out;
		}
		if (!pfd.revents)
			continue;
		n = recv(fd, buf, RELAY_BUF_SIZE, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break; /* EOF: dockerd closes the stream once the exec is done */
		demux_feed(&m, buf, (size_t)n, s->out, s->err);
	}
	closep(&fd), fd = -1;
	if (s->timed_out || s->cancelled)
		kill_exec(d, eid, s->nonce);
	if (exec_inspect(d, eid, &running, &s->code, e) < 0 && !s->timed_out && !s->cancelled)
		goto out;
	rc = 0;
out:
	if (locked)
		pthread_rwlock_unlock(&d->start_lock);
	json_decref(cmd);
	json_decref(env);
	json_decref(start);
	http_response_free(&resp);
	return rc;
}

/*
 * The command through the agent (agent.h), when there is one and no other command of this
 * container is using it. 1: it could not be used, nothing ran.
 */
static int agent_exec(struct docker *d, const struct cordon_exec *x, struct exec_state *s,
		      cordon_error *e)
{
	struct agent_run ar = { .argv = x->argv,
				.envv = s->envv,
				.cwd = d->workdir_in,
				.nonce = s->nonce,
				.deadline = s->deadline,
				.cancel = x->cancel,
				.out = s->out,
				.err = s->err };
	int rc;

	if (d->agent.fd < 0 || __atomic_test_and_set(&d->agent.busy, __ATOMIC_ACQUIRE))
		return 1;
	cg_begin(d, &s->mark);
	rc = agent_host_run(&d->agent, &ar, e);
	if (rc == AGENT_STUCK)
		restart_container(d, true);
	__atomic_clear(&d->agent.busy, __ATOMIC_RELEASE);
	if (rc == AGENT_UNUSABLE) {
		closep(&s->mark.peak_fd);
		s->mark = (struct docker_cg_mark){ .peak_fd = -1 };
		return 1;
	}
	if (rc < 0)
		return -1;
	s->code = ar.code;
	s->timed_out = ar.timed_out;
	s->cancelled = ar.cancelled;
	return 0;
}

static int docker_exec(void *h, const struct cordon_exec *x, struct cordon_result *r,
		       cordon_error *e)
{
	struct docker *d = h;
	const struct cordon_profile *p = x->profile;
	_cleanup_free_ char *noncevar = NULL;
	_cleanup_free_ char **envv = NULL;
	char nonce[33];
	struct exec_state s = { .nonce = nonce, .mark = { .peak_fd = -1 } };
	size_t n = 0, k = 0;
	int rc = -1, ran;
	double t0 = now_ms();

	if (x->ret_pending)
		*x->ret_pending = NULL;
	if (__atomic_load_n(&d->broken, __ATOMIC_ACQUIRE)) {
		*e = d->broken_e;
		return -1;
	}
	/*
	 * cordon's own temp workdir, root's (mkdtemp as root): the commands run as nobody there
	 * (create_container), so it is made nobody's, as the local backend does. Only that one:
	 * the directory held, under the name this run was given.
	 */
	if (x->workdir_is_temp && d->chown_temp && x->workdir && !strcmp(x->workdir, d->workdir)) {
		if (fchownat(d->wd_fd, "", BACKEND_NOBODY, BACKEND_RUN_GID, AT_EMPTY_PATH) < 0)
			return cordon_err(e, errno, "docker: chown temp workdir '%s'", d->workdir);
		d->chown_temp = false;
	} else if (d->chown_temp && !(d->wd_st.st_mode & S_IXOTH)) {
		/* A given root-owned workdir that nobody cannot even enter: say why, up front,
		 * rather than a 126 from the command's chdir. */
		return cordon_err(
			e, 0,
			"docker: workdir '%s' is root's and closed to others, and its "
			"commands run as nobody (65534), never as root: give it to a user "
			"(chown), open it (chmod o+rwx), or set [docker] user (docs/docker.md, "
			"\"Which user\")",
			d->workdir);
	}
	s.deadline = t0 + p->timeout * 1e3;
	backend_random_hex(nonce, 16);
	if (asprintf(&noncevar, "CORDON_EXEC_NONCE=%s", nonce) < 0) {
		noncevar = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	for (char *const *v = x->envp; v && *v; v++)
		n++;
	envv = calloc(n + 2, sizeof(*envv));
	if (!envv)
		return cordon_err(e, ENOMEM, "out of memory");
	for (char *const *v = x->envp; v && *v; v++)
		if (!backend_host_only_var(p, *v))
			envv[k++] = *v;
	envv[k] = noncevar;
	s.envv = envv;
	if (capture_new(p->max_output, &s.out, e) < 0 || capture_new(p->max_output, &s.err, e) < 0)
		goto out;
	ran = agent_exec(d, x, &s, e);
	if (ran < 0 || (ran > 0 && api_exec(d, x, &s, e) < 0))
		goto out;
	/* Its timeout restarted the container, which then had another directory (gone now). */
	if (__atomic_load_n(&d->broken, __ATOMIC_ACQUIRE)) {
		*e = d->broken_e;
		goto out;
	}
	capture_end(s.out);
	capture_end(s.err);

	r->duration_ms = now_ms() - t0;
	r->peak_memory_bytes = -1;
	cg_end(d, &s.mark, r);
	/* Docker reports a signal death as 128+n, as AG2's DockerEnvironment does; a run cut
	 * short by a signal to cordon is reported as every backend reports it. */
	if (s.cancelled && !s.timed_out)
		backend_cancelled(r, *x->cancel);
	else
		r->exit_code = r->status = s.code;
	/* AG2's DockerEnvironment says "Execution", not "Command". */
	if (capture_fill_result(s.out, s.err, p, s.timed_out, "Execution", r, e) < 0)
		goto out;
	rc = 0;
out:
	capture_free(s.out);
	capture_free(s.err);
	closep(&s.mark.peak_fd);
	return rc;
}

int docker_gc(unsigned *ret_removed, unsigned *ret_kept, cordon_error *e)
{
	struct docker d = { 0 };
	struct http_response r = { 0 };
	struct orphan_self self;
	json_t *j = NULL;
	size_t i;
	json_t *c;
	int rc = -1;

	*ret_removed = *ret_kept = 0;
	orphan_self_read(&self);
	if (!self.boot[0])
		return cordon_err(
			e, 0,
			"docker: gc: this boot's id cannot be read "
			"(/proc/sys/kernel/random/boot_id): no container can be proven an "
			"orphan");
	if (docker_socket_path(&d.sock, e) < 0)
		return -1;
	if (negotiate(d.sock, NULL, d.api, NULL, e) < 0)
		goto out;
	/* filters={"label":["cordon.session"]}, URL-encoded */
	if (call(&d, "GET",
		 "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22cordon.session%22%5D%7D",
		 NULL, &r, e) < 0)
		goto out;
	if (r.status != 200) {
		api_error("list containers", &r, e);
		goto out;
	}
	j = json_loadb(r.body, r.body_len, 0, NULL);
	if (!json_is_array(j)) {
		cordon_err(e, 0, "docker: list containers: malformed answer");
		goto out;
	}
	json_array_foreach(j, i, c)
	{
		const char *id = json_string_value(json_object_get(c, "Id"));
		json_t *labels = json_object_get(c, "Labels"), *cr = json_object_get(c, "Created");
		const char *session =
			json_string_value(json_object_get(labels, ORPHAN_LABEL_SESSION));
		const char *adir = json_string_value(json_object_get(labels, "cordon.agent_dir"));
		const char *cname =
			json_string_value(json_array_get(json_object_get(c, "Names"), 0));
		/* Created: a Unix time, dockerd's clock (gc's rule 1: before this boot began) */
		const time_t created = json_is_integer(cr) ? (time_t)json_integer_value(cr) : 0;
		const struct orphan_labels lab = {
			.session = session,
			.owner = json_string_value(json_object_get(labels, ORPHAN_LABEL_OWNER)),
			.machine = json_string_value(json_object_get(labels, ORPHAN_LABEL_MACHINE)),
			.boot = json_string_value(json_object_get(labels, ORPHAN_LABEL_BOOT)),
			.pidns = json_string_value(json_object_get(labels, ORPHAN_LABEL_PIDNS)),
			.created = created > 0 ? &created : NULL,
		};
		char name[48];
		cordon_error e2;

		if (!id || !session)
			continue;
		/*
		 * cordon's own: named after its session (create_container). The labels alone are
		 * not enough: an image's labels are its containers', so every container of an
		 * image committed from a cordon container carries them, and was force-removed
		 * here with its volumes.
		 */
		(void)snprintf(name, sizeof(name), "/cordon-%.16s", session);
		if (strlen(session) != 32 || !cname || strcmp(cname, name))
			continue;
		/*
		 * Only one it can prove an orphan (found in review: the owner's pid was looked up
		 * here whatever pid namespace and boot it was taken in, so a gc in a container
		 * given dockerd's socket, or cordond and a CLI in different pid namespaces,
		 * force-removed each other's live containers, and a pid reused after a reboot was
		 * judged against the wrong process). A container of cordon's on this dockerd may
		 * have been made by a cordon that sees another machine id (one in a container),
		 * in another pid namespace, or by an older cordon without these labels: all kept
		 * and counted, as what cannot be proven orphans from here.
		 */
		switch (orphan_judge(&self, &lab)) {
		case ORPHAN_ALIVE:
			continue;
		case ORPHAN_NOT_OURS:
		case ORPHAN_UNKNOWN:
			(*ret_kept)++;
			continue;
		case ORPHAN_GONE:
			break;
		}
		if (remove_container(d.sock, d.api, id, &e2) == 0) {
			(*ret_removed)++;
			if (adir && *adir)
				agent_host_remove_dir(adir);
		}
	}
	rc = 0;
out:
	json_decref(j);
	http_response_free(&r);
	free(d.sock);
	return rc;
}

const struct cordon_backend_ops backend_docker = {
	.name = "docker",
	.open = docker_open,
	.exec = docker_exec,
	.close = docker_close,
};
