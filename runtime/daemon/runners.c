/* SPDX-License-Identifier: MIT */
/*
 * cordond's runners (runner.c): `cordon __cordond-runner` processes, each serving one run at a
 * time on its socketpair. One thread of ours starts them, because a runner's PR_SET_PDEATHSIG
 * fires when the thread that created it ends, and connection threads end with their
 * connection; it keeps one spare ready, so that a request normally finds an idle runner
 * waiting. Runners are reused; one that breaks the protocol, dies or takes too long is killed
 * and replaced. With no runner binary (or one that can no longer be run: no longer trusted,
 * or refused by execve), runs happen in cordond itself, as before runners existed. A runner
 * that cannot be started for a shortage that passes (no fd, memory or process to be had) is
 * tried again, 10 ms to a second apart, while requests wait for one, and get a 503 if none
 * comes (docs/daemon.md, "When no runner can be started").
 *
 * The pool follows the load. A runner is busy from the moment a run takes it until the end of
 * that run's teardown (after the answer), so a client sending run after run keeps two or
 * three busy, and 8 such clients up to about 16. As many idle runners are kept as were busy
 * at once in the last cfg.runner_idle to 2 * cfg.runner_idle seconds (--runner-idle; at least
 * RUNNERS_IDLE_MIN, at most the run limit): with a fixed small number, a load above it
 * started a runner for one run in five and discarded as many (bench/DAEMON.md). Once the load
 * is gone, runners_trim() lets the extra ones go, a few each second.
 */
#define _GNU_SOURCE
#include "runtime/daemon/daemon.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNNERS_IDLE_MIN 4
#define RUNNERS_SPARE 1
/* How many idle runners beyond the recent load go at each runners_trim(). */
#define RUNNERS_TRIM_STEP 2
/* How long a request waits for a runner to start before it runs in cordond itself. */
#define RUNNER_WAIT_S 5
/* How long the teardown of a finished run may take before its runner is killed. */
#define RUNNER_DONE_S 60
/* While a run is in progress, how often the cancel flag is looked at. */
#define RUNNER_POLL_MS 20
/* After a runner failed to start, the next try: 10 ms later, doubling up to a second. */
#define RUNNER_RETRY_MIN_MS 10
#define RUNNER_RETRY_MAX_MS 1000

extern char **environ;

struct runner {
	int fd;
	pid_t pid;
	/*
	 * The runner's TMPDIR, where the temp workdirs of root's runs are made: whatever a runner
	 * killed mid-run leaves there goes with it (runner_discard).
	 */
	char tmp[64];
	int tmp_hold; /* fsutil_temp_hold: a killed cordond's runner dirs are swept at start */
	struct runner *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * Two conditions, so that each event wakes only whom it concerns (the thundering herd of one
 * shared condition woke the spawner three times a run): the spawner waits on spawn_cv,
 * requests waiting for a runner on avail_cv.
 */
static pthread_cond_t spawn_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t avail_cv = PTHREAD_COND_INITIALIZER;
static struct runner *idle;
static unsigned n_idle, n_waiting;
/* The spawner's last attempts failed (a shortage, it tries again): why, for the 503s. */
static bool spawn_failing;
static cordon_error spawn_err;
/* Runners taken for a run and not yet back (their run, then its teardown); the most at once. */
static unsigned n_busy, busy_peak, busy_peak_before;
static double window_start;
static bool enabled, stopping, spawner_started;
static char exe[PATH_MAX]; /* for messages, and the runners' argv[0] */
/*
 * The binary itself, opened once and checked through this fd: every runner is that file (exec'd
 * as /proc/self/fd/N), whatever the path names later, a package upgrade or a swap included.
 */
static int exe_fd = -1;
static pthread_t spawner;
/*
 * Runners killed whose leftovers (cgroups, TMPDIR) could not all be removed yet, for want of an
 * fd to list them with (EMFILE): kept as unreaped zombies, so that their pids, which name
 * their cgroups, cannot be anyone else's, and tried again at each runners_trim(), once a second.
 */
static pthread_mutex_t dead_lock = PTHREAD_MUTEX_INITIALIZER;
static struct runner *dead_list;

/* With lock held: wake the spawner if it has a runner to start. */
static void poke_spawner(void)
{
	if (n_idle < RUNNERS_SPARE || n_idle < n_waiting)
		pthread_cond_signal(&spawn_cv);
}

/* With lock held: r is idle now; one waiting request may take it. */
static void add_idle(struct runner *r)
{
	r->next = idle;
	idle = r;
	n_idle++;
	atomic_store(&metrics.runners_idle, (long)n_idle);
	if (n_waiting)
		pthread_cond_signal(&avail_cv);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CLOCK_MONOTONIC, ms from now (for pthread_cond_clockwait). */
static struct timespec mono_after_ms(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static bool mono_reached(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* How many idle runners to keep: the most that were busy at once lately. With lock held. */
static unsigned idle_cap(void)
{
	unsigned cap = busy_peak > busy_peak_before ? busy_peak : busy_peak_before;

	if (cap > cfg.max_runs)
		cap = cfg.max_runs;
	return cap < RUNNERS_IDLE_MIN ? RUNNERS_IDLE_MIN : cap;
}

/*
 * r is dead (killed), not yet reaped: remove the cgroups named after it (what it had staged,
 * or a run it was killed in) and its TMPDIR, then reap and free it. false with *e: not all of
 * it could be removed for a shortage (no fd to list a cgroup or a directory with), try again
 * later; r is left as it was. final: there is no later (cordond stops): what is left is logged.
 */
static bool runner_bury(struct runner *r, bool final, cordon_error *e)
{
	char buf[512];

	if (cordon_reap_after(r->pid) < 0) {
		cordon_err(e, errno, "runner %d: its cgroups", (int)r->pid);
		if (!final)
			return false;
		daemon_log("%s", cordon_err_str(e, buf, sizeof(buf)));
	}
	if (r->tmp[0] && fsutil_rmtree(r->tmp, e) < 0) {
		if (!final && job_shortage(e->code))
			return false;
		daemon_log("removing %s: %s", r->tmp, cordon_err_str(e, buf, sizeof(buf)));
	}
	fsutil_temp_release(r->tmp_hold, false);
	while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(r);
	return true;
}

/* Try again to bury the runners that could not be (final: for the last time). */
static void bury_dead(bool final)
{
	struct runner *list, *left = NULL;

	pthread_mutex_lock(&dead_lock);
	list = TAKE_PTR(dead_list);
	pthread_mutex_unlock(&dead_lock);
	while (list) {
		struct runner *r = list;
		cordon_error e;

		list = r->next;
		if (!runner_bury(r, final, &e)) {
			r->next = left;
			left = r;
		}
	}
	pthread_mutex_lock(&dead_lock);
	while (left) {
		struct runner *r = left;

		left = r->next;
		r->next = dead_list;
		dead_list = r;
	}
	pthread_mutex_unlock(&dead_lock);
}

static void runner_discard(struct runner *r)
{
	cordon_error e;
	char buf[512];

	if (!r)
		return;
	(void)close(r->fd); /* EOF: an idle runner exits by itself */
	(void)kill(r->pid, SIGKILL);
	/* Dead but not reaped (WNOWAIT): its pid cannot be anyone else's yet (runner_bury). */
	{
		siginfo_t si;

		while (waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
			;
	}
	if (runner_bury(r, false, &e))
		return;
	daemon_log("%s: cannot be removed now; trying again each second",
		   cordon_err_str(&e, buf, sizeof(buf)));
	pthread_mutex_lock(&dead_lock);
	r->next = dead_list;
	dead_list = r;
	pthread_mutex_unlock(&dead_lock);
}

/*
 * Is the file behind fd one cordond may run as root: a regular, executable file of root's that
 * no one else can write? Checked on the file, not a path.
 */
static bool trusted(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH)) && (st.st_mode & S_IXUSR);
}

/* An execve error that trying again cannot cure: the runner binary itself will not run. */
static bool exec_err_permanent(int err)
{
	switch (err) {
	case ENOENT:
	case EACCES:
	case EPERM:
	case ENOEXEC:
	case ELOOP:
	case ENOTDIR:
	case EISDIR:
	case ENAMETOOLONG:
	case ELIBBAD:
	case EBADF:
		return true;
	default:
		return false;
	}
}

/*
 * Start a runner. NULL with *e when it cannot be, and *ret_permanent true when trying again is
 * pointless: the binary can no longer be run (no longer trusted, or execve refuses it), rather
 * than a shortage that passes (no fd, memory or process to be had, /tmp full). Nothing of a
 * failed start is left.
 */
static struct runner *runner_spawn(bool *ret_permanent, cordon_error *e)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = { exe, "__cordond-runner", NULL };
	struct runner *r = NULL;
	char self_path[64];
	_cleanup_free_ char **envp = NULL;
	char tmpdir_env[80], nofile_env[64];
	size_t n = 0;
	int sv[2] = { -1, -1 }, err;

	*ret_permanent = false;
	/*
	 * Checked again at every start: the file exe_fd holds may have been made writable by
	 * others (or someone else's) since cordond opened it, and a runner runs as root.
	 */
	if (!trusted(exe_fd)) {
		*ret_permanent = true;
		cordon_err(e, 0, "%s is no longer an executable of root's that only root may write",
			   exe);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		cordon_err(e, ENOMEM, "out of memory");
		return NULL;
	}
	r->fd = r->tmp_hold = -1;
	snprintf(r->tmp, sizeof(r->tmp), "/tmp/cordond-runner-XXXXXX");
	if (!mkdtemp(r->tmp)) {
		cordon_err(e, errno, "mkdtemp %s", r->tmp);
		r->tmp[0] = '\0';
		goto fail;
	}
	/* 0711: the runs' workdirs inside are reached by path; the list of them is root's. */
	if (chmod(r->tmp, 0711) < 0) {
		cordon_err(e, errno, "chmod %s", r->tmp);
		goto fail;
	}
	/*
	 * Held from now on (a killed cordond's runner dirs are swept at start): one that cannot
	 * be is a failed start, not a runner whose directory a killed cordond would leave.
	 */
	r->tmp_hold = fsutil_temp_hold(r->tmp, e);
	if (r->tmp_hold < 0)
		goto fail;
	/* cordond's environment (sanitized), and the runner's own TMPDIR. */
	while (environ[n])
		n++;
	envp = calloc(n + 4, sizeof(char *));
	if (!envp) {
		cordon_err(e, ENOMEM, "out of memory");
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		cordon_err(e, errno, "socketpair");
		goto fail;
	}
	n = 0;
	for (char **v = environ; *v; v++)
		if (strncmp(*v, "TMPDIR=", 7) != 0 && strncmp(*v, "GLIBC_TUNABLES=", 15) != 0)
			envp[n++] = *v;
	snprintf(tmpdir_env, sizeof(tmpdir_env), "TMPDIR=%s", r->tmp);
	envp[n++] = tmpdir_env;
	/* Freed memory wiped: no caller's data is left for the next caller's sandbox to copy. */
	envp[n++] = (char *)RUNNER_MALLOC_ENV;
	/* The soft RLIMIT_NOFILE cordond was started with, for the runner to restore. */
	snprintf(nofile_env, sizeof(nofile_env), RUNNER_NOFILE_ENV "=%lu", cfg.nofile_soft);
	if (cfg.nofile_soft)
		envp[n] = nofile_env;
	snprintf(self_path, sizeof(self_path), "/proc/self/fd/%d", exe_fd);
	/* dup2 onto 3 clears close-on-exec there; every other fd of cordond is CLOEXEC. */
	err = posix_spawn_file_actions_init(&fa);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	if (!err)
		err = posix_spawn(&r->pid, self_path, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	closep(&sv[1]);
	if (err) {
		*ret_permanent = exec_err_permanent(err);
		cordon_err(e, err, "start %s", exe);
		goto fail;
	}
	r->fd = sv[0];
	return r;
fail:
	closep(&sv[0]);
	closep(&sv[1]);
	fsutil_temp_release(r->tmp_hold, false);
	if (r->tmp[0])
		(void)rmdir(r->tmp);
	free(r);
	return NULL;
}

static void *spawner_main(void *arg)
{
	unsigned failed = 0; /* attempts in a row that failed: the streak going on */
	long delay_ms = 0;
	struct timespec retry_at = { 0 };

	(void)arg;
	pthread_mutex_lock(&lock);
	while (!stopping) {
		struct runner *r;
		cordon_error e = { 0 };
		bool permanent;
		char buf[512];
		const char *why;

		if (n_idle >= RUNNERS_SPARE && n_idle >= n_waiting) {
			pthread_cond_wait(&spawn_cv, &lock);
			continue;
		}
		/* After a failure, the next try waits its turn: a request's poke does not hurry it. */
		if (failed && !mono_reached(&retry_at)) {
			(void)pthread_cond_clockwait(&spawn_cv, &lock, CLOCK_MONOTONIC, &retry_at);
			continue;
		}
		pthread_mutex_unlock(&lock);
		r = runner_spawn(&permanent, &e);
		pthread_mutex_lock(&lock);
		why = cordon_err_str(&e, buf, sizeof(buf));
		if (!r && permanent) {
			daemon_log("cannot start a runner: %s; from now on "
				   "runs go on in cordond itself",
				   why);
			enabled = false;
			spawn_failing = false;
			pthread_cond_broadcast(&avail_cv);
			break;
		}
		if (!r) {
			/*
			 * A shortage (EMFILE, ENOMEM, EAGAIN...) passes: try again, 10 ms later,
			 * then twice as long each time up to a second, for as long as it lasts.
			 * Logged once a streak; every attempt is counted in /metrics.
			 */
			atomic_fetch_add(&metrics.runner_spawn_failures, 1);
			if (failed++ == 0)
				daemon_log("cannot start a runner (%s): trying again, "
					   "at most a second apart, until one starts",
					   why);
			spawn_failing = true;
			spawn_err = e;
			delay_ms = delay_ms ? delay_ms * 2 : RUNNER_RETRY_MIN_MS;
			if (delay_ms > RUNNER_RETRY_MAX_MS)
				delay_ms = RUNNER_RETRY_MAX_MS;
			retry_at = mono_after_ms(delay_ms);
			continue;
		}
		if (failed) {
			daemon_log("a runner started again, after %u failed attempts", failed);
			failed = 0;
			delay_ms = 0;
			spawn_failing = false;
		}
		atomic_fetch_add(&metrics.runners_started, 1);
		add_idle(r);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

/*
 * Open path as the runner binary if it is trusted as much as cordond itself (trusted()). The
 * fd, or -1.
 */
static int open_trusted(const char *path)
{
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (trusted(fd))
		return fd;
	(void)close(fd);
	return -1;
}

void runners_start(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	/* `cordon` next to cordond (the build tree), else where make install puts it. */
	exe[0] = '\0';
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash && (size_t)(slash - self) + sizeof("/cordon") <= sizeof(exe)) {
			memcpy(exe, self, (size_t)(slash - self));
			memcpy(exe + (slash - self), "/cordon", sizeof("/cordon"));
		}
	}
	if (exe[0])
		exe_fd = open_trusted(exe);
	if (exe_fd < 0) {
		(void)snprintf(exe, sizeof(exe), "%s/cordon", CORDON_BINDIR);
		exe_fd = open_trusted(exe);
	}
	if (exe_fd < 0) {
		daemon_log("no runner (cordon, owned by root, next to cordond or in %s): runs go "
			   "on in cordond itself",
			   CORDON_BINDIR);
		return;
	}
	pthread_mutex_lock(&lock);
	enabled = true;
	pthread_mutex_unlock(&lock);
	if (pthread_create(&spawner, NULL, spawner_main, NULL) != 0) {
		daemon_log("cannot start the runner thread: runs go on in cordond itself");
		enabled = false;
		return;
	}
	spawner_started = true;
}

void runners_stop(void)
{
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_broadcast(&spawn_cv);
	pthread_cond_broadcast(&avail_cv);
	pthread_mutex_unlock(&lock);
	if (spawner_started)
		pthread_join(spawner, NULL);
	spawner_started = false;
	pthread_mutex_lock(&lock);
	while (idle) {
		struct runner *r = idle;

		idle = r->next;
		n_idle--;
		runner_discard(r);
	}
	pthread_mutex_unlock(&lock);
	bury_dead(true);
}

/*
 * 0 with *ret: an idle runner, or NULL when runs go on in cordond itself (runners are off: no
 * runner binary, or one that can no longer be run). -1 with *e: runners are on, but none came
 * free within RUNNER_WAIT_S (none could be started: the spawner's last reason is given).
 */
static int runner_take(struct runner **ret, cordon_error *e)
{
	struct runner *r = NULL;
	struct timespec deadline = mono_after_ms(RUNNER_WAIT_S * 1000L);
	char buf[512];
	int rc = 0;

	pthread_mutex_lock(&lock);
	n_waiting++;
	if (enabled && !stopping && !idle) {
		atomic_fetch_add(&metrics.runner_waits, 1);
		poke_spawner();
	}
	while (enabled && !stopping && !idle)
		if (pthread_cond_clockwait(&avail_cv, &lock, CLOCK_MONOTONIC, &deadline) ==
		    ETIMEDOUT)
			break;
	n_waiting--;
	if (enabled && !stopping && idle) {
		r = idle;
		idle = r->next;
		n_idle--;
		atomic_store(&metrics.runners_idle, (long)n_idle);
		r->next = NULL;
		if (++n_busy > busy_peak)
			busy_peak = n_busy;
		poke_spawner(); /* it keeps a spare ready */
	} else if (stopping) {
		rc = cordon_err(e, 0, "cordond is stopping");
	} else if (enabled && spawn_failing) {
		rc = cordon_err(e, 0, "busy: no runner could be started in %d s (%s); try again",
				RUNNER_WAIT_S, cordon_err_str(&spawn_err, buf, sizeof(buf)));
	} else if (enabled) {
		rc = cordon_err(e, 0, "busy: no runner came free in %d s; try again",
				RUNNER_WAIT_S);
	}
	pthread_mutex_unlock(&lock);
	*ret = r;
	return rc;
}

/* A runner taken by runner_take is discarded (it died, or failed). */
static void runner_lost(struct runner *r)
{
	pthread_mutex_lock(&lock);
	n_busy--;
	pthread_mutex_unlock(&lock);
	runner_discard(r);
}

int runner_get(struct runner **ret, cordon_error *e)
{
	unsigned tries;

	/*
	 * An idle runner says nothing: anything to read on its socket is its EOF (it died, or was
	 * killed). Not that one, then: the next, or a new one. Every idle one may be dead (killed
	 * together); past them, a few new ones that die at once are enough.
	 */
	pthread_mutex_lock(&lock);
	tries = n_idle + 3;
	pthread_mutex_unlock(&lock);
	for (unsigned i = 0; i < tries; i++) {
		struct runner *r;
		struct pollfd pfd;

		if (runner_take(&r, e) < 0)
			return -1;
		if (!r)
			break;
		pfd = (struct pollfd){ .fd = r->fd, .events = POLLIN };
		if (poll(&pfd, 1, 0) == 0) {
			*ret = r;
			return 0;
		}
		daemon_log("runner %d: gone while idle; replaced", (int)r->pid);
		runner_lost(r);
		if (i + 1 == tries)
			return cordon_err(e, 0, "busy: the runners taken had died; try again");
	}
	*ret = NULL;
	return 0;
}

/* Wait until fd is readable; the cancel flag, when given, is passed on to the runner once. */
static int wait_readable(const struct runner *r, volatile int *cancel, double limit_s)
{
	bool told = false;
	double waited = 0;

	for (;;) {
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
		int k = poll(&pfd, 1, RUNNER_POLL_MS);

		if (k < 0 && errno != EINTR)
			return -1;
		if (k > 0)
			return 0;
		if (cancel && *cancel && !told) {
			/* Our own unreaped child: its pid cannot have been reused. */
			(void)kill(r->pid, SIGUSR1);
			told = true;
		}
		waited += RUNNER_POLL_MS / 1000.0;
		if (limit_s > 0 && waited > limit_s)
			return errno = ETIMEDOUT, -1;
	}
}

/*
 * Should the runner pre-build its next sandbox after this run (docs/daemon.md, "Pre-built
 * sandboxes")? Only while there are idle CPUs to do it on: with more runs in flight than
 * CPUs, a sandbox built ahead is work moved, not saved, and its bookkeeping (a clone that
 * shares the runner's pages for longer, one more process's exit) costs throughput.
 */
static bool prebuild_now(void)
{
	static long cpus;

	if (cpus <= 0) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		if (cpus <= 0)
			cpus = 1;
	}
	return atomic_load(&metrics.in_flight) <= cpus;
}

int runner_run(struct runner *r, const struct job *j, bool session, const char *body, size_t n,
	       int *ret_status, char **ret_json, bool *ret_refused, bool *ret_timed_out,
	       cordon_error *e)
{
	_cleanup_free_ char *hs = NULL, *rh = NULL;
	json_t *groups = json_array(), *h;
	bool ok = groups != NULL;
	json_t *reply = NULL;
	json_error_t je;
	char *payload = NULL;
	size_t pn = 0;
	int status, k;

	/* The caller's groups, which a member's run has (docs/security.md). */
	for (size_t i = 0; ok && i < j->ngroups; i++)
		ok = json_array_append_new(groups, json_integer((json_int_t)j->groups[i])) == 0;
	h = ok ? json_pack("{s:s,s:b,s:I,s:I,s:O,s:I,s:s*,s:s*,s:s*,s:b}", "profile", j->profile,
			   "session", session, "uid", (json_int_t)j->uid, "gid", (json_int_t)j->gid,
			   "groups", groups, "cap", (json_int_t)cfg.max_output_cap, "name", j->name,
			   "home", j->home, "workdir", j->workdir, "prebuild", prebuild_now())
	       : NULL;
	json_decref(groups);
	hs = h ? json_dumps(h, JSON_COMPACT) : NULL;
	json_decref(h);
	if (!hs) {
		runner_lost(r);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (frame_send(r->fd, hs, body, n, j->workdir_fd) < 0)
		goto broken;
	if (wait_readable(r, j->cancel, 0) < 0)
		goto broken;
	k = frame_recv(r->fd, &rh, &payload, &pn, NULL);
	if (k <= 0)
		goto broken;
	reply = json_loads(rh, 0, &je);
	if (!reply || !json_is_integer(json_object_get(reply, "status")))
		goto broken;
	status = (int)json_integer_value(json_object_get(reply, "status"));
	*ret_status = status;
	if (status == 200) {
		*ret_json = strndup(payload, pn);
		*ret_refused = json_is_true(json_object_get(reply, "refused"));
		*ret_timed_out = json_is_true(json_object_get(reply, "timed_out"));
		if (!*ret_json)
			*ret_status = 500, cordon_err(e, ENOMEM, "out of memory");
	} else {
		const char *msg = json_string_value(json_object_get(reply, "error"));

		cordon_err(e, 0, "%s", msg ? msg : "the runner failed");
	}
	json_decref(reply);
	return 0;
broken:
	json_decref(reply);
	daemon_log("runner %d: %s", (int)r->pid,
		   errno ? strerror(errno) : "broke the protocol or died");
	runner_lost(r);
	return cordon_err(e, EPROTO, "run: the runner failed");
}

void runner_put(struct runner *r)
{
	_cleanup_free_ char *rh = NULL;
	char *payload;
	size_t pn;
	bool keep;

	if (!r)
		return;
	/* "done": the run's sandbox, cgroup and temp workdir are gone. */
	if (wait_readable(r, NULL, RUNNER_DONE_S) < 0 ||
	    frame_recv(r->fd, &rh, &payload, &pn, NULL) <= 0 || strcmp(rh, "{\"done\":true}")) {
		daemon_log("runner %d: no end of its run's teardown; killed", (int)r->pid);
		runner_lost(r);
		return;
	}
	pthread_mutex_lock(&lock);
	n_busy--;
	keep = enabled && !stopping && n_idle < idle_cap();
	if (keep)
		add_idle(r);
	pthread_mutex_unlock(&lock);
	if (!keep)
		runner_discard(r);
}

void runners_trim(void)
{
	double now = mono_s();

	bury_dead(false);
	pthread_mutex_lock(&lock);
	if (now - window_start >= cfg.runner_idle) {
		busy_peak_before = busy_peak;
		busy_peak = n_busy;
		window_start = now;
	}
	/* Runners off (their binary can no longer be run): the idle ones go too. */
	for (int k = 0; k < RUNNERS_TRIM_STEP && n_idle > (enabled ? idle_cap() : 0) && idle; k++) {
		struct runner **last = &idle, *r;

		/* The one idle longest: runner_take takes the newest. */
		while ((*last)->next)
			last = &(*last)->next;
		r = *last;
		*last = NULL;
		n_idle--;
		atomic_store(&metrics.runners_idle, (long)n_idle);
		pthread_mutex_unlock(&lock);
		runner_discard(r);
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
}
