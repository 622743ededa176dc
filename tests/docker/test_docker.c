/* SPDX-License-Identifier: MIT */
/*
 * The Docker backend through its vtable, against a real dockerd (tests/docker/run.sh provides
 * one and the image, in $CORDON_DOCKER_TEST_IMAGE): one container across several execs, so
 * what a timeout leaves inside it can be counted.
 */
#define _GNU_SOURCE
#include "backends/backend.h"
#include "backends/docker/agent.h"
#include "backends/docker/docker.h"
#include "backends/http.h"
#include "backends/orphan.h"
#include "runtime/capture.h"
#include "runtime/profile.h"
#include "tests/lib/testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct cordon_profile *prof;
static char *wd;
static void *h;

static int api(const char *method, const char *path, const char *body, json_t **ret);

static int dopen(const struct cordon_profile *p, const char *dir, int fd, void **ret,
		 cordon_error *e)
{
	const struct cordon_open o = { .profile = p, .workdir = dir, .workdir_fd = fd };

	return backend_docker.open(&o, ret, e);
}

/* The profile and a root-owned workdir (0700), without a container. */
static void setup_profile(void)
{
	cordon_error e;
	const char *img = getenv("CORDON_DOCKER_TEST_IMAGE");

	cr_assert_not_null(img, "CORDON_DOCKER_TEST_IMAGE is not set (run tests/docker/run.sh)");
	cr_assert_eq(cordon_profile_new(&prof, &e), 0);
	prof->docker_image = strdup(img);
	/* run.sh runs the suite twice: through the agent, and through Docker's exec API. */
	prof->docker_agent = !getenv("CORDON_DOCKER_TEST_API");
	free(prof->timeout_text);
	prof->timeout_text = strdup("1");
	prof->timeout = 1;
	wd = tu_tmpdir();
}

static void setup(void)
{
	cordon_error e;

	setup_profile();
	/*
	 * A root-owned workdir runs its commands as nobody, who could not enter this one (0700):
	 * the workdir is nobody's, as cordon makes its own temp workdirs for the Docker backend.
	 */
	cr_assert_eq(chown(wd, 65534, 65534), 0);
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
}

static void teardown(void)
{
	docker_test_before_start = NULL;
	docker_test_before_check = NULL;
	docker_test_cgroup_dropped = NULL;
	backend_docker.close(h);
	h = NULL;
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(prof);
}

/* cmd through the backend: exec's own return (0, or -1 with *e). temp: the workdir is
 * cordon's own temp workdir (as cordon_run says when no workdir was given); cancel: the
 * caller's cancel flag, or NULL. */
static int try_run_with(const char *cmd, bool temp, volatile int *cancel, struct cordon_result *r,
			cordon_error *e)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	char *envp[] = { "PATH=/bin:/usr/bin", NULL };
	struct cordon_exec x = { .argv = argv,
				 .envp = envp,
				 .workdir = wd,
				 .workdir_fd = -1,
				 .workdir_is_temp = temp,
				 .profile = prof,
				 .stdin_fd = -1,
				 .cancel = cancel };

	*r = (struct cordon_result){ 0 };
	return backend_docker.exec(h, &x, r, e);
}

static int try_run_in(const char *cmd, bool temp, struct cordon_result *r, cordon_error *e)
{
	return try_run_with(cmd, temp, NULL, r, e);
}

static int try_run(const char *cmd, struct cordon_result *r, cordon_error *e)
{
	return try_run_in(cmd, false, r, e);
}

static void run(const char *cmd, struct cordon_result *r)
{
	cordon_error e;

	cr_assert_eq(try_run(cmd, r, &e), 0, "%s", e.msg);
}

TestSuite(docker, .init = setup, .fini = teardown, .timeout = 60);

Test(docker, output_and_exit_code)
{
	struct cordon_result r;

	run("echo out; echo err >&2; exit 3", &r);
	cr_assert_str_eq(r.output, "out\nerr\n[exit code: 3]");
	cr_assert_eq(r.exit_code, 3);
	cr_assert_eq(r.stdout_bytes, 4);
	cr_assert_eq(r.stderr_bytes, 4);
	cordon_result_free(&r);
}

Test(docker, workdir_is_the_bind_mount)
{
	struct cordon_result r;
	char path[4096];
	FILE *f;

	run("pwd; echo data > made-inside", &r);
	cr_assert_str_eq(r.output, "/workspace");
	cordon_result_free(&r);
	snprintf(path, sizeof(path), "%s/made-inside", wd);
	f = fopen(path, "r");
	cr_assert_not_null(f, "the file written in /workspace is not in the host workdir");
	fclose(f);
}

/* The timeout kills the group, a setsid escapee and a double fork; the container stays. */
Test(docker, timeout_kills_the_tree_and_keeps_the_container)
{
	struct cordon_result r;

	run("echo state > /tmp/kept; sleep 31 & setsid sh -c 'sleep 32' & "
	    "(sh -c 'sleep 33 &') ; sleep 34",
	    &r);
	cr_assert(r.timed_out);
	cr_assert_eq(r.exit_code, 124);
	cr_assert_str_eq(r.output, "Execution timed out after 1s\n[exit code: 124]");
	cordon_result_free(&r);
	/* Nothing of it is left: count the sleeps by their argument in the container. */
	prof->timeout = 10;
	run("n=0; for p in /proc/[0-9]*; do case \"$(cat $p/cmdline 2>/dev/null | tr '\\0' ' ')\" "
	    "in *'sleep 3'[1-4]*) n=$((n+1));; esac; done; echo $n; cat /tmp/kept",
	    &r);
	cr_assert_str_eq(r.output, "0\nstate", "left: %s", r.output);
	cordon_result_free(&r);
}

Test(docker, output_cap_keeps_exact_counts)
{
	struct cordon_result r;

	prof->max_output = 5;
	prof->timeout = 30;
	run("head -c 3000000 /dev/zero | tr '\\0' x; echo e >&2", &r);
	cr_assert_eq(r.stdout_bytes, 3000000);
	cr_assert_eq(r.stderr_bytes, 2);
	cr_assert(r.truncated);
	/* strip() drops the final newline before the count */
	cr_assert_str_eq(r.output, "xxxxx\n[truncated: showing first 5 of 3000001 chars]");
	cordon_result_free(&r);
}

/*
 * Past 4 MiB, a stream has a reader thread of its own (runtime/relay.h): stdout and stderr
 * flood at once here, and the counts stay exact.
 */
Test(docker, flood_keeps_exact_counts)
{
	struct cordon_result r;

	prof->max_output = 5;
	prof->timeout = 30;
	run("head -c 6000000 /dev/zero | tr '\\0' e >&2 & "
	    "head -c 20000000 /dev/zero | tr '\\0' x; wait; head -c 1000 /dev/zero | tr '\\0' y",
	    &r);
	cr_assert_eq(r.stdout_bytes, 20001000);
	cr_assert_eq(r.stderr_bytes, 6000000);
	/* stdout, then stderr */
	cr_assert_str_eq(r.output, "xxxxx\n[truncated: showing first 5 of 26001000 chars]");
	cordon_result_free(&r);
}

/*
 * A flood, then a background job that keeps stdout open and never writes: the run ends after
 * the drain time, as without a flood, not when the job does (the reader thread is cancelled,
 * or this test runs into its suite's timeout).
 */
Test(docker, flood_then_a_job_holding_stdout)
{
	struct cordon_result r;

	prof->timeout = 30;
	run("head -c 8000000 /dev/zero; sleep 300 & echo done >&2", &r);
	cr_assert_not(r.timed_out);
	cr_assert_eq(r.exit_code, 0);
	cr_assert_eq(r.stdout_bytes, 8000000);
	cordon_result_free(&r);
}

Test(docker, isolation_holds)
{
	struct cordon_result r;

	run("grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status; "
	    "touch /etc/x 2>/dev/null || echo ro; ls /sys/class/net; "
	    "nc -w 1 10.0.0.1 80 </dev/null 2>/dev/null || echo nonet",
	    &r);
	cr_assert_str_eq(r.output, "CapEff:\t0000000000000000\nNoNewPrivs:\t1\nro\nlo\nnonet");
	cordon_result_free(&r);
}

Test(docker, signal_death_is_128_plus_n)
{
	struct cordon_result r;

	run("kill -TERM $$", &r);
	cr_assert_eq(r.exit_code, 143);
	cr_assert_str_eq(r.output, "[exit code: 143]");
	cordon_result_free(&r);
}

static volatile int cancel_flag;

static void *cancel_soon(void *arg)
{
	(void)arg;
	usleep(500 * 1000);
	cancel_flag = SIGTERM;
	return NULL;
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * cordond's cancel flag (the client went away, cordond is stopping) is set by another thread:
 * no signal interrupts the run's wait, which looks at the flag every 20 ms. With a timeout
 * past 2^31 ms (24.8 days; a profile may say up to 1e9 s) the wait's length overflowed an int
 * and became an endless poll: the cancel went unseen until the command ended.
 */
Test(docker, a_cancel_ends_a_run_whose_timeout_is_weeks)
{
	struct cordon_result r;
	cordon_error e;
	pthread_t t;
	double t0;

	free(prof->timeout_text);
	prof->timeout_text = strdup("3000000");
	prof->timeout = 3e6;
	cancel_flag = 0;
	cr_assert_eq(pthread_create(&t, NULL, cancel_soon, NULL), 0);
	t0 = mono_ms();
	cr_assert_eq(try_run_with("sleep 10", false, &cancel_flag, &r, &e), 0, "%s", e.msg);
	pthread_join(t, NULL);
	cr_assert_lt(mono_ms() - t0, 5000, "the cancel was seen after %.0f ms", mono_ms() - t0);
	cr_assert_eq(r.exit_code, -15, "%s", r.output);
	cordon_result_free(&r);
}

/* GET /containers/{id}/json (id: a name or an id's prefix), parsed. */
static json_t *inspect_container(const char *id)
{
	struct http_response hr = { 0 };
	char *sock = NULL, path[256];
	cordon_error e;
	json_t *j;

	cr_assert_eq(docker_socket_path(&sock, &e), 0, "%s", e.msg);
	snprintf(path, sizeof(path), "/containers/%s/json", id);
	cr_assert_eq(http_request(sock, "GET", path, NULL, NULL, 0, 10000, NULL, &hr, &e), 0, "%s",
		     e.msg);
	cr_assert_eq(hr.status, 200, "inspect %s: HTTP %d", id, hr.status);
	j = json_loadb(hr.body, hr.body_len, 0, NULL);
	cr_assert_not_null(j);
	http_response_free(&hr);
	free(sock);
	return j;
}

/*
 * The container's own stdout and stderr, its init's (/proc/1/fd/1 and 2: docker-init runs as
 * the commands' user), go nowhere. With Docker's default log driver they went to a file under
 * /var/lib/docker that grew without bound: past the output cap, the workdir and every limit
 * (found in review: 300 MB in 3 s, and a session's background job could go on for ever).
 * In a workdir of root's (0777, its commands as nobody), on a path only root can change: its
 * container has docker-init, whose fds the commands can open (elsewhere its pid 1 is the
 * agent's non-dumpable copy, whose fds they cannot: docker_wd::*_not_the_owners_to_look_into).
 */
Test(docker, the_containers_own_output_is_not_kept)
{
	struct cordon_result r;
	const char *log;
	struct stat st;
	cordon_error e;
	json_t *j;

	backend_docker.close(h);
	h = NULL;
	cr_assert_eq(chown(wd, 0, 0), 0);
	cr_assert_eq(chmod(wd, 0777), 0);
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	prof->timeout = 30;
	run("head -c 4000000 /dev/zero >/proc/1/fd/1; head -c 4000000 /dev/zero >/proc/1/fd/2; "
	    "hostname",
	    &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.output);
	j = inspect_container(r.output);
	cordon_result_free(&r);
	log = json_string_value(json_object_get(j, "LogPath"));
	/* dockerd copies into the log asynchronously: give it time to show. */
	for (int i = 0; log && *log && i < 20; i++) {
		if (stat(log, &st) == 0 && st.st_size > 0)
			break;
		usleep(50 * 1000);
	}
	cr_assert(!log || !*log || stat(log, &st) < 0 || st.st_size == 0,
		  "the command's writes to the container's stdout were kept in %s (%lld bytes)",
		  log, (long long)st.st_size);
	json_decref(j);
}

/* busybox time's "user\t0m 0.30s" and "sys\t0m 0.01s" lines: the child's CPU in ms. */
static double time_cpu_ms(const char *out)
{
	double total = 0;
	const char *keys[] = { "user\t", "sys\t" };

	for (size_t i = 0; i < 2; i++) {
		const char *p = strstr(out, keys[i]);
		int min = 0;
		double s = 0;

		cr_assert_not_null(p, "no '%s' line in: %s", keys[i], out);
		cr_assert_eq(sscanf(p + strlen(keys[i]), "%dm %lfs", &min, &s), 2, "%s", p);
		total += (min * 60 + s) * 1e3;
	}
	return total;
}

/* cpu_ms is the exec's CPU time: what the kernel charged to its busy loop (as `time` reports
 * it, in 10 ms steps), plus the little that runc and the shells take, not the container's. */
Test(docker, usage_cpu_ms_is_the_execs)
{
	struct cordon_result r;
	double burnt;

	prof->timeout = 30;
	run("time sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'", &r);
	burnt = time_cpu_ms(r.output);
	cr_assert_gt(burnt, 50, "the loop burnt too little to tell: %s", r.output);
	cr_assert(r.cpu_ms >= burnt - 20 && r.cpu_ms <= burnt + 100,
		  "cpu_ms %.1f for a loop that burnt %.0f ms", r.cpu_ms, burnt);
	cordon_result_free(&r);
	/* The next exec starts from zero again. */
	run("true", &r);
	cr_assert(r.cpu_ms > 0 && r.cpu_ms < burnt / 2, "cpu_ms %.1f for true", r.cpu_ms);
	cordon_result_free(&r);
}

/* peak_memory_bytes: dd's 64 MiB buffer, then a small command's own peak (reset per exec). */
Test(docker, usage_peak_memory_is_the_execs)
{
	struct cordon_result r;

	run("dd if=/dev/zero of=/dev/null bs=67108864 count=1 2>/dev/null", &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.output);
	cr_assert_geq(r.peak_memory_bytes, 64ll << 20);
	cr_assert_lt(r.peak_memory_bytes, 96ll << 20);
	cr_assert_not(r.oom_killed);
	cordon_result_free(&r);
	run("true", &r);
	cr_assert_gt(r.peak_memory_bytes, 0);
	cr_assert_lt(r.peak_memory_bytes, 32ll << 20, "the previous exec's peak: %lld",
		     (long long)r.peak_memory_bytes);
	cordon_result_free(&r);
}

/* A container of its own with a 32 MiB limit. */
static void open_small(void **ret)
{
	cordon_error e;

	setup();
	backend_docker.close(h);
	prof->docker_memory = 32u << 20;
	cr_assert_eq(dopen(prof, wd, -1, ret, &e), 0, "%s", e.msg);
}

/* oom_killed: the memory limit's OOM kill (exit 137), not any SIGKILL (also 137). */
Test(docker_oom, usage_oom_killed, .fini = teardown, .timeout = 60)
{
	struct cordon_result r;

	open_small(&h);
	prof->timeout = 30;
	run("dd if=/dev/zero of=/dev/null bs=67108864 count=1", &r);
	cr_assert_eq(r.exit_code, 137, "%s", r.output);
	cr_assert(r.oom_killed);
	cordon_result_free(&r);
	run("kill -KILL $$", &r);
	cr_assert_eq(r.exit_code, 137, "%s", r.output);
	cr_assert_not(r.oom_killed, "a plain SIGKILL reported as an OOM kill");
	cordon_result_free(&r);
	run("echo fine", &r);
	cr_assert_str_eq(r.output, "fine");
	cr_assert_not(r.oom_killed, "an earlier exec's OOM kill reported again");
	cordon_result_free(&r);
}

/* Which way the commands run: under the agent (its child) or by Docker's exec API (parent
 * outside the container: $PPID 0); either way no socket is left to connect to. */
Test(docker, runs_through_the_agent_or_the_api)
{
	struct cordon_result r;

	run("case \"$(tr '\\0' ' ' 2>/dev/null </proc/$PPID/cmdline)\" in "
	    "*__docker-agent*) echo agent;; *) echo api;; esac; ls -A /.cordon 2>/dev/null | wc -l",
	    &r);
	cr_assert_str_eq(r.output, prof->docker_agent ? "agent\n0" : "api\n0");
	cordon_result_free(&r);
}

/* ---- the agent only (run.sh runs these once) ---- */

static void setup_agent(void)
{
	setup();
	cr_assert(prof->docker_agent);
}

TestSuite(agent, .init = setup_agent, .fini = teardown, .timeout = 60);

/*
 * Through the agent the command reopens its stdout and stderr by a path, as shells and build
 * tools do (`> /dev/stdout`, `> /dev/stderr`, /proc/self/fd/N): the pipes are cordon's, made as
 * root, and the command is nobody here. Docker's exec API cannot do it (its pipes are
 * containerd's), so the agent suite only.
 */
Test(agent, the_command_reopens_its_stdout_by_path)
{
	struct cordon_result r;

	run("id -u; echo out > /dev/stdout; echo fd > /proc/self/fd/1; echo err > /dev/stderr", &r);
	cr_assert_str_eq(r.output, "65534\nout\nfd\nerr", "%s", r.output);
	cr_assert_eq(r.exit_code, 0);
	cordon_result_free(&r);
}

/* An agent that cannot kill the timed-out command (stopped by it) gets its container
 * restarted: the command is gone, /tmp with it, and the next command runs through the agent
 * again. */
Test(agent, stopped_agent_restarts_the_container)
{
	struct cordon_result r;

	run("echo state > /tmp/kept; kill -STOP $PPID; sleep 30", &r);
	cr_assert(r.timed_out);
	cr_assert_str_eq(r.output, "Execution timed out after 1s\n[exit code: 124]");
	cordon_result_free(&r);
	prof->timeout = 10;
	run("cat /tmp/kept 2>/dev/null || echo restarted; tr '\\0' ' ' </proc/$PPID/cmdline", &r);
	cr_assert_str_eq(r.output, "restarted\n/.cordon-agent __docker-agent /.cordon/s", "%s",
			 r.output);
	cordon_result_free(&r);
}

struct bg {
	struct cordon_result r;
	const char *cmd;
};

static void *bg_run(void *arg)
{
	struct bg *b = arg;

	run(b->cmd, &b->r);
	return NULL;
}

/* Two commands at once in one container: the second, while the first holds the agent, goes
 * through Docker's exec API. */
Test(agent, a_busy_agent_leaves_the_next_command_to_the_api)
{
	struct bg b = { .cmd = "touch started; sleep 2; echo first" };
	struct cordon_result r;
	char path[4096];
	pthread_t t;

	prof->timeout = 30;
	snprintf(path, sizeof(path), "%s/started", wd);
	cr_assert_eq(pthread_create(&t, NULL, bg_run, &b), 0);
	for (int i = 0; i < 2000 && access(path, F_OK) < 0; i++)
		usleep(10 * 1000);
	cr_assert_eq(access(path, F_OK), 0, "the first command did not start");
	run("echo $PPID", &r);
	cr_assert_str_eq(r.output, "0", "the second command did not go through the exec API");
	cordon_result_free(&r);
	pthread_join(t, NULL);
	cr_assert_str_eq(b.r.output, "first");
	cordon_result_free(&b.r);
}

/* A command that kills the agent ends the container, as killing `sleep infinity` did: that
 * command reports 137, and the next one does not run (an error, or Docker's exit 126 for an
 * exec in a stopped container), and nothing hangs. */
Test(agent, killing_the_agent_ends_the_container)
{
	struct cordon_result r;
	cordon_error e;

	prof->timeout = 30;
	run("kill -KILL $PPID; sleep 20", &r);
	cr_assert_eq(r.exit_code, 137, "%s", r.output);
	cr_assert_not(r.timed_out);
	cordon_result_free(&r);
	if (try_run("echo never-printed", &r, &e) < 0) {
		cr_assert_not_null(strstr(e.msg, "docker: "), "%s", e.msg);
		cr_assert_null(strchr(e.msg, '\n'));
	} else {
		cr_assert_eq(r.exit_code, 126, "%s", r.output);
		cr_assert_null(strstr(r.output, "never-printed"));
		cordon_result_free(&r);
	}
}

/*
 * A restart (here: the agent stopped, at the timeout) replaces the container's cgroup handle
 * that the usage fields are read from, while a command of another thread (cordond runs a
 * session's requests at once; this one goes through the exec API, the agent being held) may
 * be reading it. The hook runs that other command right when the old handle is dropped: it
 * must get its own usage, and not read a freed handle (before, it did: cpu_ms 0, and two
 * restarts at once freed it twice).
 */
static struct cordon_result dropped_r;

static void *dropped_run(void *arg)
{
	(void)arg;
	prof->timeout = 10;
	run("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", &dropped_r);
	return NULL;
}

static void run_when_dropped(void)
{
	pthread_t t;

	docker_test_cgroup_dropped = NULL;
	cr_assert_eq(pthread_create(&t, NULL, dropped_run, NULL), 0);
	pthread_join(t, NULL);
}

Test(agent, a_command_during_a_restart_reads_a_live_cgroup)
{
	struct cordon_result r;

	docker_test_cgroup_dropped = run_when_dropped;
	run("kill -STOP $PPID; sleep 30", &r);
	cr_assert(r.timed_out);
	cordon_result_free(&r);
	cr_assert_null(docker_test_cgroup_dropped, "no restart");
	cr_assert_eq(dropped_r.exit_code, 0, "%s", dropped_r.output);
	cr_assert_gt(dropped_r.cpu_ms, 0, "the usage was read from a freed cgroup handle");
	cordon_result_free(&dropped_r);
}

/* ---- the workdir the container gets, and who runs in it ---- */

/* Containers labelled cordon.session, as dockerd lists them. */
static int count_containers(void)
{
	struct http_response r = { 0 };
	char *sock = NULL;
	cordon_error e;
	json_t *j;
	int n;

	cr_assert_eq(docker_socket_path(&sock, &e), 0, "%s", e.msg);
	cr_assert_eq(http_request(sock, "GET",
				  "/containers/json?all=1&filters="
				  "%7B%22label%22%3A%5B%22cordon.session%22%5D%7D",
				  NULL, NULL, 0, 10000, NULL, &r, &e),
		     0, "%s", e.msg);
	cr_assert_eq(r.status, 200);
	j = json_loadb(r.body, r.body_len, 0, NULL);
	n = json_is_array(j) ? (int)json_array_size(j) : -1;
	json_decref(j);
	http_response_free(&r);
	free(sock);
	return n;
}

/*
 * The caller's race, made deterministic: the hook runs just before dockerd starts the
 * container (and resolves the workdir's path again), and exchanges the workdir with another
 * directory (renameat2 RENAME_EXCHANGE), once.
 */
static char swap_a[4096], swap_b[4096];

static void exchange(void)
{
	docker_test_before_start = NULL;
	cr_assert_eq(renameat2(AT_FDCWD, swap_a, AT_FDCWD, swap_b, RENAME_EXCHANGE), 0, "%s",
		     strerror(errno));
}

static void swap_at_start(const char *a, const char *b)
{
	snprintf(swap_a, sizeof(swap_a), "%s", a);
	snprintf(swap_b, sizeof(swap_b), "%s", b);
	docker_test_before_start = exchange;
}

/* dir/name, made with mode and owner; dir's own mode 0700 keeps it from other users. */
static void make_dir(char *buf, size_t n, const char *dir, const char *name, mode_t mode, uid_t uid,
		     gid_t gid)
{
	snprintf(buf, n, "%s/%s", dir, name);
	cr_assert_eq(mkdir(buf, mode), 0, "%s: %s", buf, strerror(errno));
	cr_assert_eq(chown(buf, uid, gid), 0);
	cr_assert_eq(chmod(buf, mode), 0);
}

/* Each test opens its own container, after arranging its workdir. */
TestSuite(docker_wd, .init = setup_profile, .fini = teardown, .timeout = 60);

/*
 * A caller's workdir exchanged, between the check and the start, with a directory it cannot
 * reach (under root's 0700 one): the container would have that directory read-write. The
 * open fails with one line, and no container is left.
 */
Test(docker_wd, a_workdir_swapped_before_the_start_is_refused)
{
	char *hidden = tu_tmpdir(), victim[4096];
	struct cordon_result r;
	cordon_error e;
	int before = count_containers(), rc;

	make_dir(victim, sizeof(victim), hidden, "victim", 0755, 0, 0);
	tu_write_file(victim, "secret", "root's");
	cr_assert_eq(chown(wd, 1000, 1000), 0);
	swap_at_start(wd, victim);
	rc = dopen(prof, wd, -1, &h, &e);
	if (rc == 0) {
		run("cat secret", &r);
		cr_assert_fail("the container has the directory swapped in: cat secret: %s",
			       r.output);
	}
	cr_assert_not_null(strstr(e.msg, "docker: workdir '"), "%s", e.msg);
	cr_assert_not_null(strstr(e.msg, "' was replaced while the container started: its "
					 "/workspace is another directory (the container is "
					 "removed)"),
			   "%s", e.msg);
	cr_assert_null(strchr(e.msg, '\n'));
	cr_assert_eq(count_containers(), before, "a container was left");
	tu_rmtree(hidden);
	free(hidden);
}

/* Whether uid:gid (no other group) can open /proc/pid/root, as the owner could from the host. */
static bool proc_root_open_as(pid_t pid, uid_t uid, gid_t gid)
{
	pid_t c = fork();
	int st;

	cr_assert_geq(c, 0);
	if (c == 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/root/", (int)pid);
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(2);
		_exit(open(path, O_PATH | O_DIRECTORY | O_CLOEXEC) >= 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(c, &st, 0), c);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) < 2, "status %d", st);
	return WEXITSTATUS(st) == 0;
}

/*
 * A workdir on a path its owner can change (theirs, in sticky /tmp): dockerd could be made to
 * mount another directory, which only check_workdir, after the start, finds. Until then the
 * container's processes must not be the owner's to look into: its pid 1 and the agent are the
 * agent's execute-only copy, not dumpable, so /proc/PID/root is closed to the owner (found in
 * red team: docker-init was open, and a member who swapped their workdir's path read a
 * directory below another user's 0700 one through it before the container was removed).
 * The same without the agent (the exec API suite): the copy idles as pid 1.
 */
Test(docker_wd, a_guarded_containers_init_is_not_the_owners_to_look_into)
{
	struct cordon_result r;
	cordon_error e;
	json_t *j, *pid;
	char path[64];
	FILE *f;
	int child = 0;

	cr_assert_eq(chown(wd, 1000, 1000), 0);
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("hostname", &r);
	j = inspect_container(r.output);
	cordon_result_free(&r);
	pid = json_object_get(json_object_get(j, "State"), "Pid");
	cr_assert(json_is_integer(pid) && json_integer_value(pid) > 0);
	cr_assert_not(proc_root_open_as((pid_t)json_integer_value(pid), 1000, 1000),
		      "the owner can open the container's pid 1's /proc/PID/root");
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)json_integer_value(pid),
		 (int)json_integer_value(pid));
	f = fopen(path, "re");
	if (f && fscanf(f, "%d", &child) == 1)
		cr_assert_not(proc_root_open_as(child, 1000, 1000),
			      "the owner can open the agent's /proc/PID/root");
	cr_assert_eq(child != 0, prof->docker_agent, "pid 1's child: %d", child);
	if (f)
		fclose(f);
	json_decref(j);
}

/*
 * Root's run in a root-owned workdir exchanged, before the start, with a user's directory:
 * the user was decided from the first (root's: nobody), the container would get the user's.
 * Before the fix, the container ran as root in the user's directory.
 */
Test(docker_wd, a_root_workdir_swapped_for_a_users_is_refused)
{
	char *hidden = tu_tmpdir(), users[4096];
	struct cordon_result r;
	cordon_error e;
	int before = count_containers(), rc;

	make_dir(users, sizeof(users), hidden, "users", 0755, 1000, 1000);
	cr_assert_eq(chmod(wd, 0755), 0);
	swap_at_start(wd, users);
	rc = dopen(prof, wd, -1, &h, &e);
	if (rc == 0) {
		run("id -u; touch made; ls -ln made", &r);
		cr_assert_fail("the container has the user's directory: %s", r.output);
	}
	cr_assert_not_null(strstr(e.msg, "was replaced while the container started"), "%s", e.msg);
	cr_assert_eq(count_containers(), before, "a container was left");
	tu_rmtree(hidden);
	free(hidden);
}

/*
 * [docker] ro_bind as root: dockerd resolves its source as root at each start, so a source
 * another user can change (below their directory, or one others may write) was theirs to
 * point at any directory of the host, mounted into every container of the profile (red team).
 * Refused before any container, one line naming the path and why; so is a symlink, which
 * dockerd followed. A root-controlled one is mounted (run.sh: "[docker] ro_bind is read-only").
 */
static void expect_ro_bind_refused(const char *bind, const char *want)
{
	int before = count_containers(), rc;
	struct cordon_result r;
	cordon_error e;

	cordon_list_free(&prof->docker_ro_bind);
	cr_assert_eq(cordon_list_add(&prof->docker_ro_bind, bind, &e), 0);
	cr_assert_eq(chown(wd, 65534, 65534), 0);
	rc = dopen(prof, wd, -1, &h, &e);
	if (rc == 0) {
		run("ls /data", &r);
		cr_assert_fail("%s was mounted: ls /data: %s", bind, r.output);
	}
	cr_assert_str_eq(e.msg, want);
	cr_assert_eq(e.code, 0);
	cr_assert_eq(count_containers(), before, "a container was left");
}

/* DIR/NAME (mode, uid:uid) with a directory data in it, that data the bind: refused, why. */
static void expect_data_below_refused(const char *dir, const char *name, mode_t mode, uid_t uid,
				      const char *why)
{
	char parent[512], bind[1024], want[2048];

	make_dir(parent, sizeof(parent), dir, name, mode, uid, uid);
	snprintf(bind, sizeof(bind), "%s/data", parent);
	cr_assert_eq(mkdir(bind, 0755), 0);
	snprintf(want, sizeof(want),
		 "docker: [docker] ro_bind '%s' is not root's alone to name: '%s' %s", bind, parent,
		 why);
	strcat(bind, ":/data");
	expect_ro_bind_refused(bind, want);
}

Test(docker_wd, a_ro_bind_others_can_change_is_refused)
{
	char *dir = tu_tmpdir(), link[512], secret[512], bind[1024], want[2048];

	/* Below a user's own directory: they can rename it and put a symlink in its place. */
	expect_data_below_refused(dir, "users", 0755, 1000, "is uid 1000's, not root's");
	/* Below root's directory that others may write (not sticky). */
	expect_data_below_refused(dir, "open", 0777, 0,
				  "is writable by others than root (mode 0777)");
	/* A symlink (root's, in root's directory): dockerd followed it to root's 0700 one. */
	make_dir(secret, sizeof(secret), dir, "secret", 0700, 0, 0);
	tu_write_file(secret, "key", "root's");
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(symlink(secret, link), 0);
	snprintf(bind, sizeof(bind), "%s:/data", link);
	snprintf(want, sizeof(want),
		 "docker: [docker] ro_bind '%s' is not root's alone to name: '%s' is a symlink",
		 link, link);
	expect_ro_bind_refused(bind, want);
	tu_rmtree(dir);
	free(dir);
}

/*
 * cordond's way (open with workdir_fd): the directory is the fd it opened as the client, whatever
 * the path names by the time dockerd resolves it; here the path names another one from the
 * start.
 */
Test(docker_wd, open_at_requires_the_fds_directory)
{
	char *other = tu_tmpdir();
	struct cordon_result r;
	cordon_error e;
	int before = count_containers(), fd, rc;

	cr_assert_eq(chown(wd, 65534, 65534), 0);
	cr_assert_eq(chown(other, 65534, 65534), 0);
	fd = open(wd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	rc = dopen(prof, other, fd, &h, &e);
	if (rc == 0) {
		run("touch made-in-other; echo ran", &r);
		cr_assert_fail("the path's directory was mounted, not the fd's: %s", r.output);
	}
	cr_assert_not_null(strstr(e.msg, "was replaced while the container started"), "%s", e.msg);
	cr_assert_eq(count_containers(), before, "a container was left");
	/* The fd's own path: that one is mounted. */
	cr_assert_eq(dopen(prof, wd, fd, &h, &e), 0, "%s", e.msg);
	run("touch made; echo ran", &r);
	cr_assert_str_eq(r.output, "ran");
	cordon_result_free(&r);
	close(fd);
	tu_rmtree(other);
	free(other);
}

/*
 * A root-owned workdir: its commands run as nobody, never root (who needs no capability to
 * chmod u+s its own files): what they make is nobody's, no setuid-root file can appear.
 */
Test(docker_wd, a_root_owned_workdir_runs_as_nobody)
{
	struct cordon_result r;
	cordon_error e;
	struct stat st;
	char path[4096];

	cr_assert_eq(chmod(wd, 0777), 0); /* root's, writable by everyone */
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("id -u; id -g; cp /bin/busybox su; chmod 4755 su; ls -l su | cut -c1-10", &r);
	/* gid 65533, not nogroup's: the host's nobody processes cannot ptrace it (docker.c) */
	cr_assert_str_eq(r.output, "65534\n65533\n-rwsr-xr-x", "%s", r.output);
	cordon_result_free(&r);
	snprintf(path, sizeof(path), "%s/su", wd);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_uid, 65534, "a setuid file of uid %u", (unsigned)st.st_uid);
}

/*
 * SPEC §2: --network (and [sandbox] network) is the container's network mode when the
 * profile's [docker] network does not name one. It was ignored: `cordon run -b docker
 * --network host` and the shipped `network` profile ran with no network at all.
 */
Test(docker_wd, the_sandbox_network_is_the_containers_unless_docker_names_one)
{
	struct cordon_result r;
	cordon_error e;

	cr_assert_eq(chown(wd, 65534, 65534), 0);
	prof->network = CORDON_NET_HOST;
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("ls /sys/class/net | grep -vx lo || echo only lo", &r);
	cr_expect_str_neq(r.output, "only lo", "network = host: the container has only lo");
	cordon_result_free(&r);
	backend_docker.close(h);
	h = NULL;

	/* [docker] network wins over [sandbox] network. */
	prof->docker_network = strdup("none");
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("ls /sys/class/net", &r);
	cr_expect_str_eq(r.output, "lo");
	cordon_result_free(&r);
	backend_docker.close(h);
	h = NULL;

	/* A network the run asks for (--network host, a cordond body's) wins over both. */
	profile_set_network(prof, CORDON_NET_HOST);
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("ls /sys/class/net | grep -vx lo || echo only lo", &r);
	cr_expect_str_neq(r.output, "only lo", "--network host over [docker] network = none");
	cordon_result_free(&r);
}

/* The trade-off (docs/docker.md, "Which user"): where nobody may not write, nothing is
 * written. */
Test(docker_wd, a_root_owned_workdir_nobody_cannot_write_stays_unwritten)
{
	struct cordon_result r;
	cordon_error e;
	char path[4096];

	cr_assert_eq(chmod(wd, 0755), 0);
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("touch x", &r);
	cr_assert_eq(r.exit_code, 1, "%s", r.output);
	cordon_result_free(&r);
	snprintf(path, sizeof(path), "%s/x", wd);
	cr_assert_neq(access(path, F_OK), 0);
}

/* [docker] user set explicitly is used as given: root, if the admin says so. */
Test(docker_wd, an_explicit_user_is_used_as_given)
{
	struct cordon_result r;
	cordon_error e;

	prof->docker_user = strdup("0:0");
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("id -u", &r);
	cr_assert_str_eq(r.output, "0");
	cordon_result_free(&r);
}

/*
 * cordond's member (its commands run as the member, [docker] user set by the session) has its
 * supplementary groups in the container too: a group can deny, so a file `rw----r--` of one of
 * them stays closed, as on the host (without them it was read as "other").
 */
Test(docker_wd, the_callers_groups_are_the_commands)
{
	const gid_t groups[] = { 65534, 4242 };
	struct cordon_result r;
	cordon_error e;
	char path[512];

	cr_assert_eq(chown(wd, 65534, 65534), 0);
	snprintf(path, sizeof(path), "%s/deny", wd);
	tu_write_file(wd, "deny", "secret");
	cr_assert_eq(chown(path, 0, 4242), 0);
	cr_assert_eq(chmod(path, 0604), 0);
	prof->docker_user = strdup("65534:65534");
	const struct cordon_open o = {
		.profile = prof, .workdir = wd, .workdir_fd = -1, .groups = groups, .ngroups = 2
	};
	cr_assert_eq(backend_docker.open(&o, &h, &e), 0, "%s", e.msg);
	run("id -G; cat deny 2>/dev/null || echo denied", &r);
	cr_assert_str_eq(r.output, "65534 4242\ndenied");
	cordon_result_free(&r);
}

/*
 * The profile's [limits] cpu_time, file_size and open_files bound each process as with the
 * local backend (soft and hard: a command cannot raise them), and no core dump is made: core
 * 1 byte, as the local backend sets it (a file core needs a page; a core_pattern piping to a
 * host program, run as root, ignores every limit but exactly 1). Before, all were Docker's
 * defaults (here: unlimited CPU and file size, 20000 files, core raisable to unlimited).
 */
Test(docker_wd, the_profiles_limits_bound_each_process)
{
	struct cordon_result r;
	cordon_error e;

	prof->cpu_time = 7;
	prof->file_size = 3u << 20;
	prof->open_files = 77;
	cr_assert_eq(chown(wd, 65534, 65534), 0);
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("grep -E '^Max (cpu time|file size|open files|core file size) ' /proc/self/limits | "
	    "tr -s ' ' | sed 's/ $//'; trap '' XFSZ; head -c 4194304 /dev/zero >big 2>/dev/null; "
	    "wc -c <big",
	    &r);
	cr_assert_str_eq(r.output,
			 "Max cpu time 7 7 seconds\n"
			 "Max file size 3145728 3145728 bytes\n"
			 "Max core file size 1 1 bytes\n"
			 "Max open files 77 77 files\n"
			 "3145728",
			 "%s", r.output);
	cordon_result_free(&r);
}

/*
 * A test image of its own, made from the suite's: `sh -c script` run in a container of it
 * (none when NULL), then committed as repo:<random tag> with `changes` (URL-encoded Dockerfile
 * instructions, "" for none). Returns the name (the caller removes the image and frees it).
 */
static char *derived_image(const char *repo, const char *script, const char *changes)
{
	const char *img = getenv("CORDON_DOCKER_TEST_IMAGE");
	char body[768], path[512], tag[17], *id, *image;
	json_t *j, *cmd;

	backend_random_hex(tag, 8);
	cmd = script ? json_pack("[s, s, s]", "sh", "-c", script) : json_pack("[s]", "true");
	j = json_pack("{s:s, s:o}", "Image", img, "Cmd", cmd);
	cr_assert_not_null(j);
	char *text = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	cr_assert(text && strlen(text) < sizeof(body));
	strcpy(body, text);
	free(text);
	cr_assert_eq(api("POST", "/containers/create", body, &j), 201);
	id = strdup(json_string_value(json_object_get(j, "Id")));
	json_decref(j);
	if (script) {
		snprintf(path, sizeof(path), "/containers/%s/start", id);
		cr_assert_eq(api("POST", path, NULL, NULL), 204);
		snprintf(path, sizeof(path), "/containers/%s/wait", id);
		cr_assert_eq(api("POST", path, NULL, NULL), 200);
	}
	snprintf(path, sizeof(path), "/commit?container=%s&repo=%s&tag=%s%s%s", id, repo, tag,
		 *changes ? "&changes=" : "", changes);
	cr_assert_eq(api("POST", path, NULL, NULL), 201);
	snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", id);
	(void)api("DELETE", path, NULL, NULL);
	free(id);
	cr_assert(asprintf(&image, "%s:%s", repo, tag) > 0);
	return image;
}

/*
 * A [docker] user given by name is the image's /etc/passwd's to resolve: an image where it is
 * uid 0 is refused (one line, no container left), unless the profile says 0 or root.
 */
Test(docker_wd, a_named_user_that_is_root_in_the_image_is_refused)
{
	char path[384], *image;
	struct cordon_result r;
	cordon_error e;
	int before = count_containers(), rc;

	image = derived_image("cordon-test/rootname",
			      "mkdir -p /etc && echo builder:x:0:0::/:/bin/sh >/etc/passwd && "
			      "echo builder:x:0: >/etc/group",
			      "");
	free(prof->docker_image);
	prof->docker_image = strdup(image);
	prof->docker_user = strdup("builder");
	cr_assert_eq(chown(wd, 65534, 65534), 0);
	rc = dopen(prof, wd, -1, &h, &e);
	cr_expect_eq(rc, -1, "a named user that is uid 0 was run");
	if (rc == 0) {
		run("id -u", &r);
		cordon_result_free(&r);
		backend_docker.close(h);
		h = NULL;
	} else {
		cr_expect(strstr(e.msg, "is root (uid 0) in image"), "%s", e.msg);
	}
	cr_expect_eq(count_containers(), before, "a container was left");
	/* Root on purpose is the admin's to ask for. */
	free(prof->docker_user);
	prof->docker_user = strdup("0:0");
	cr_expect_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	backend_docker.close(h);
	h = NULL;
	snprintf(path, sizeof(path), "/images/%s?force=1", image);
	(void)api("DELETE", path, NULL, NULL);
	free(image);
}

/*
 * An image's HEALTHCHECK would run the image's code in the container between the commands, as
 * their user, in their workdir: it is turned off (Healthcheck NONE).
 */
Test(docker_wd, an_images_health_check_does_not_run)
{
	char path[384], hc[600], *image;
	struct cordon_result r;
	cordon_error e;

	image = derived_image("cordon-test/health", NULL,
			      "HEALTHCHECK%20--interval%3D1s%20CMD%20touch%20/workspace/hc");
	free(prof->docker_image);
	prof->docker_image = strdup(image);
	cr_assert_eq(chown(wd, 65534, 65534), 0);
	free(prof->timeout_text);
	prof->timeout_text = strdup("10");
	prof->timeout = 10;
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("sleep 2.5; echo ran", &r);
	cr_expect_str_eq(r.output, "ran");
	cordon_result_free(&r);
	snprintf(hc, sizeof(hc), "%s/hc", wd);
	backend_docker.close(h);
	h = NULL;
	snprintf(path, sizeof(path), "/images/%s?force=1", image);
	(void)api("DELETE", path, NULL, NULL);
	free(image);
	cr_expect(access(hc, F_OK) != 0, "the image's health check ran in the container");
}

/*
 * An image's declared volumes (VOLUME in its Dockerfile) were anonymous volumes: writable
 * directories on the host's disk (/var/lib/docker/volumes) past the read-only root, /tmp's
 * size and the memory limit, for a whole session. They are tmpfs now, sized as /tmp.
 */
Test(docker_wd, an_images_volumes_are_not_the_hosts_disk)
{
	char path[256], *image;
	struct cordon_result r;
	cordon_error e;
	json_t *j, *m;
	size_t i;
	int volumes = 0;

	/* The image: the test image with a directory everyone may write to, declared a volume. */
	image = derived_image("cordon-test/volume", "mkdir -m 1777 /data", "VOLUME%20/data");
	free(prof->docker_image);
	prof->docker_image = strdup(image);
	prof->tmp_size = 8u << 20;
	cr_assert_eq(chown(wd, 65534, 65534), 0);
	if (dopen(prof, wd, -1, &h, &e) == 0) {
		run("head -c 16000000 /dev/zero >/data/x 2>/dev/null; wc -c </data/x; hostname",
		    &r);
		j = inspect_container(strchr(r.output, '\n') + 1);
		json_array_foreach(json_object_get(j, "Mounts"), i, m) volumes +=
			!strcmp(json_string_value(json_object_get(m, "Type")), "volume");
		json_decref(j);
	}
	snprintf(path, sizeof(path), "/images/%s?force=1", image);
	backend_docker.close(h);
	h = NULL;
	(void)api("DELETE", path, NULL, NULL);
	free(image);
	cr_assert_eq(volumes, 0, "the image's volume is a directory on the host's disk");
	cr_assert(!strncmp(r.output, "8388608\n", 8), "%s", r.output);
	cordon_result_free(&r);
}

/* A user's workdir whose group is root's: the user, with group nogroup (a setgid file of
 * group root would be the same hole as a setuid-root one). */
Test(docker_wd, a_users_workdir_of_group_root_runs_as_nogroup)
{
	struct cordon_result r;
	cordon_error e;

	cr_assert_eq(chown(wd, 1000, 0), 0);
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("id -u; id -g", &r);
	cr_assert_str_eq(r.output, "1000\n65534");
	cordon_result_free(&r);
}

/* cordon's own temp workdir (root's, 0700, as mkdtemp makes it) is made nobody's, so that
 * its commands can use it. */
Test(docker_wd, cordons_temp_workdir_is_made_nobodys)
{
	struct cordon_result r;
	cordon_error e;
	struct stat st;

	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	cr_assert_eq(try_run_in("id -u; touch made && echo wrote", true, &r, &e), 0, "%s", e.msg);
	cr_assert_str_eq(r.output, "65534\nwrote");
	cordon_result_free(&r);
	cr_assert_eq(stat(wd, &st), 0);
	cr_assert_eq(st.st_uid, 65534);
}

/*
 * dockerd gone when the container is removed (here: DOCKER_HOST is a symlink to its socket,
 * removed before close): one warning line names the container and what removes it.
 */
Test(docker_wd, close_warns_about_a_container_it_could_not_remove)
{
	char *dir = tu_tmpdir(), *sock = NULL, link[4096], host[4200], errf[4096], buf[1024] = "";
	const char *old = getenv("DOCKER_HOST");
	char *saved_host = old ? strdup(old) : NULL;
	struct http_response hr = { 0 };
	struct cordon_result r;
	cordon_error e;
	int before = count_containers(), fd, saved;
	ssize_t n;
	char name[64], *p, del[128];

	cr_assert_eq(docker_socket_path(&sock, &e), 0, "%s", e.msg);
	snprintf(link, sizeof(link), "%s/docker.sock", dir);
	cr_assert_eq(symlink(sock, link), 0);
	snprintf(host, sizeof(host), "unix://%s", link);
	setenv("DOCKER_HOST", host, 1);
	cr_assert_eq(chown(wd, 65534, 65534), 0);
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("echo hi", &r);
	cordon_result_free(&r);
	cr_assert_eq(unlink(link), 0);

	snprintf(errf, sizeof(errf), "%s/stderr", dir);
	fd = open(errf, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	backend_docker.close(h);
	h = NULL;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (saved_host)
		setenv("DOCKER_HOST", saved_host, 1);
	else
		unsetenv("DOCKER_HOST");
	buf[n > 0 ? n : 0] = '\0';

	/* Remove it here, by the name the line gives. */
	p = strstr(buf, "container cordon-");
	if (p && sscanf(p, "container %63s", name) == 1) {
		snprintf(del, sizeof(del), "/containers/%s?force=1&v=1", name);
		cr_assert_eq(http_request(sock, "DELETE", del, NULL, NULL, 0, 30000, NULL, &hr, &e),
			     0);
		http_response_free(&hr);
	}
	cr_assert_not_null(p, "no warning: [%s]", buf);
	cr_assert_not_null(strstr(buf, "cordon: warning: container cordon-"), "%s", buf);
	cr_assert_not_null(strstr(buf, "was not removed (docker: no Docker daemon at "), "%s", buf);
	cr_assert_not_null(strstr(buf, "; 'cordon gc --backend docker' removes it once this "
				       "process has exited\n"),
			   "%s", buf);
	cr_assert_eq(strchr(buf, '\n') - buf, (long)strlen(buf) - 1, "not one line: %s", buf);
	cr_assert_eq(count_containers(), before);
	free(saved_host);
	free(sock);
	tu_rmtree(dir);
	free(dir);
}

/*
 * A proxy between cordon and dockerd's socket that sets the caller's cancel flag during a
 * container create (a client of cordond gone, cordond's SIGTERM, a SIGINT to cordon) and holds
 * it up for longer than cordon looks at the flag: before dockerd has the request (early: so
 * that dockerd makes the container after cordon has given up on it), or once dockerd has
 * answered it (the container exists, its id not yet cordon's). Each connection is relayed by a
 * thread of its own, as dockerd serves them: cordon's next call is not held up behind it.
 */
struct hold_proxy {
	int lfd;
	const char *upstream;
	volatile int *cancel;
	bool early;
	int relays;    /* running (atomic) */
	char name[64]; /* the container the create asked for */
};

struct hold_relay {
	struct hold_proxy *p;
	int c;
};

static void *hold_proxy_relay(void *arg)
{
	struct hold_relay *hr = arg;
	struct hold_proxy *p = hr->p;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int c = hr->c, u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool create = false;
	static char bufs[16][65536];
	static int next;
	char *buf = bufs[__atomic_fetch_add(&next, 1, __ATOMIC_SEQ_CST) % 16];

	free(hr);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p->upstream);
	if (u < 0 || connect(u, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto out;
	for (bool client = true;;) {
		struct pollfd fds[2] = { { .fd = client ? c : -1, .events = POLLIN },
					 { .fd = u, .events = POLLIN } };
		ssize_t n;

		if (poll(fds, 2, 30000) <= 0)
			break;
		if (fds[0].revents) {
			char *q;

			n = read(c, buf, 65535);
			/* cordon gone: dockerd's answer is still waited for, as dockerd works on */
			if (n <= 0 && create) {
				client = false;
				continue;
			}
			if (n <= 0)
				break;
			buf[n] = '\0';
			q = memmem(buf, (size_t)n, "/containers/create?name=", 24);
			if (q && !create) {
				create = true;
				sscanf(q + 24, "%63[a-z0-9-]", p->name);
				if (p->early) {
					*p->cancel = 1;
					usleep(400 * 1000); /* past http.c's CANCEL_POLL_MS */
				}
			}
			if (send(u, buf, (size_t)n, MSG_NOSIGNAL) != n)
				break;
		}
		if (fds[1].revents) {
			n = read(u, buf, 65536);
			if (n <= 0)
				break;
			if (create && !p->early) {
				*p->cancel = 1;
				usleep(400 * 1000);
			}
			if (send(c, buf, (size_t)n, MSG_NOSIGNAL) != n)
				break;
		}
	}
out:
	if (u >= 0)
		close(u);
	close(c);
	__atomic_fetch_sub(&p->relays, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *hold_proxy_main(void *arg)
{
	struct hold_proxy *p = arg;
	int c;

	while ((c = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		struct hold_relay *hr = malloc(sizeof(*hr));
		pthread_t t;

		cr_assert_not_null(hr);
		*hr = (struct hold_relay){ p, c };
		__atomic_fetch_add(&p->relays, 1, __ATOMIC_SEQ_CST);
		cr_assert_eq(pthread_create(&t, NULL, hold_proxy_relay, hr), 0);
		pthread_detach(t);
	}
	return NULL;
}

/*
 * An open whose cancel flag is set during its container's create (early: before dockerd has
 * the request): it fails, and no container is left.
 */
static void open_cancelled_in_create(bool early)
{
	char *dir = tu_tmpdir(), *sock = NULL, host[4200], path[160];
	const char *old = getenv("DOCKER_HOST");
	char *saved_host = old ? strdup(old) : NULL;
	volatile int cancel = 0;
	struct hold_proxy p = { .cancel = &cancel, .early = early };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const struct cordon_open o = {
		.profile = prof, .workdir = wd, .workdir_fd = -1, .cancel = &cancel
	};
	pthread_t t;
	cordon_error e;
	int rc, status;

	cr_assert_eq(docker_socket_path(&sock, &e), 0, "%s", e.msg);
	p.upstream = sock;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/p.sock", dir);
	p.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(p.lfd, 0);
	cr_assert_eq(bind(p.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	cr_assert_eq(listen(p.lfd, 8), 0);
	cr_assert_eq(pthread_create(&t, NULL, hold_proxy_main, &p), 0);
	snprintf(host, sizeof(host), "unix://%s", sa.sun_path);
	setenv("DOCKER_HOST", host, 1);
	cr_assert_eq(chown(wd, 65534, 65534), 0);

	rc = backend_docker.open(&o, &h, &e);

	(void)shutdown(p.lfd, SHUT_RDWR);
	pthread_join(t, NULL);
	close(p.lfd);
	/* Every relay done: dockerd has had all there was to have. */
	for (int i = 0; i < 500 && __atomic_load_n(&p.relays, __ATOMIC_SEQ_CST); i++)
		usleep(10 * 1000);
	if (saved_host)
		setenv("DOCKER_HOST", saved_host, 1);
	else
		unsetenv("DOCKER_HOST");
	free(saved_host);
	if (rc == 0)
		backend_docker.close(h);
	h = NULL;
	cr_assert(cancel);
	cr_assert_not_null(strstr(p.name, "cordon-"), "no create went through [%s]", p.name);
	snprintf(path, sizeof(path), "/containers/%s/json", p.name);
	status = api("GET", path, NULL, NULL);
	if (status != 404) {
		snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", p.name);
		(void)api("DELETE", path, NULL, NULL);
	}
	cr_assert_eq(status, 404, "the container %s was left", p.name);
	cr_assert_neq(rc, 0, "the open went on after its cancel");
	cr_assert_str_eq(e.msg, "docker: interrupted while the container was created");
	free(sock);
	tu_rmtree(dir);
	free(dir);
}

/*
 * A create cut short: dockerd makes the container all the same, whether or not anyone waits
 * for its answer. Before, the open gave up on it at once, without its id: the container stayed
 * (created, never started), no session's, its owner (cordond) alive, so gc kept it too; a
 * member of group cordon who dropped POST /v1/run's connection at that moment left one each
 * time, past every limit. Removing it by its name at once would not do: dockerd had not made
 * it yet (early).
 */
Test(docker_wd, a_cancel_during_the_create_leaves_no_container)
{
	open_cancelled_in_create(true);
}

Test(docker_wd, a_cancel_once_the_container_is_made_leaves_no_container)
{
	open_cancelled_in_create(false);
}

/*
 * The agent's directory removed from /tmp while its container runs (a /tmp cleaner: many
 * systems age /tmp with systemd-tmpfiles) and its name taken by another user, whose own d is
 * in it: at a restart, dockerd resolves the mount's path again. Before, it mounted that user's
 * directory at /.cordon, and the new agent connected to the socket that user put there (who
 * could then run commands in the container, as its user, in its workdir); cordon, as root,
 * also unlinked, made and chmod'ed its socket by that path, in that user's directory.
 */
static char taken_dir[64];
static int taken_fd = -1;

/* The other user's move, just before the start: its own socket where cordon's was. */
static void take_the_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	docker_test_before_start = NULL;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/d/s", taken_dir);
	(void)unlink(sa.sun_path);
	taken_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert_geq(taken_fd, 0);
	cr_assert_eq(bind(taken_fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	cr_assert_eq(chmod(sa.sun_path, 0666), 0);
	cr_assert_eq(listen(taken_fd, 4), 0);
}

Test(agent, an_agent_directory_taken_over_is_not_mounted_again)
{
	struct pollfd p = { .events = POLLIN };
	struct cordon_result r;
	char sub[80];
	cordon_error e;
	json_t *j;
	int rc, before = count_containers(), conn;

	run("hostname", &r);
	j = inspect_container(r.output);
	cordon_result_free(&r);
	snprintf(taken_dir, sizeof(taken_dir), "%.40s",
		 json_string_value(
			 json_object_get(json_object_get(json_object_get(j, "Config"), "Labels"),
					 "cordon.agent_dir")));
	json_decref(j);
	cr_assert_not_null(strstr(taken_dir, "/tmp/cordon-agent-"), "[%s]", taken_dir);
	/* The cleaner, then the other user (uid 1000). */
	tu_rmtree(taken_dir);
	cr_assert_eq(mkdir(taken_dir, 0755), 0);
	cr_assert_eq(chown(taken_dir, 1000, 1000), 0);
	snprintf(sub, sizeof(sub), "%s/d", taken_dir);
	cr_assert_eq(mkdir(sub, 0777), 0);
	cr_assert_eq(chown(sub, 1000, 1000), 0);
	cr_assert_eq(chmod(sub, 0777), 0);
	docker_test_before_start = take_the_socket;
	rc = try_run("kill -STOP $PPID; sleep 30", &r, &e);
	if (rc == 0)
		cordon_result_free(&r);
	conn = -1;
	if (taken_fd >= 0) {
		p.fd = taken_fd;
		if (poll(&p, 1, 1500) == 1)
			conn = accept4(taken_fd, NULL, NULL, SOCK_CLOEXEC);
	}
	if (conn >= 0)
		close(conn);
	if (taken_fd >= 0)
		close(taken_fd);
	taken_fd = -1;
	tu_rmtree(taken_dir);
	cr_assert_lt(conn, 0,
		     "the restarted container's agent connected to the other user's socket");
	cr_assert_neq(rc, 0, "the restart went on with another user's directory");
	cr_assert_not_null(strstr(e.msg, "agent's directory"), "%s", e.msg);
	cr_assert_null(strchr(e.msg, '\n'));
	cr_assert_eq(count_containers(), before - 1, "the container was left");
}

/*
 * A timed-out command stops its agent: the container is restarted, and the hook exchanges the
 * workdir just before that start. The container is removed, this exec and the next fail.
 */
Test(agent, a_workdir_swapped_before_a_restart_ends_the_container)
{
	char *hidden = tu_tmpdir(), victim[4096];
	struct cordon_result r;
	cordon_error e;
	int before = count_containers();

	make_dir(victim, sizeof(victim), hidden, "victim", 0755, 0, 0);
	tu_write_file(victim, "secret", "root's");
	swap_at_start(wd, victim);
	if (try_run("kill -STOP $PPID; sleep 30", &r, &e) == 0) {
		cordon_result_free(&r);
		prof->timeout = 10;
		run("cat secret", &r);
		cr_assert_fail("the restarted container has the directory swapped in: %s",
			       r.output);
	}
	cr_assert_not_null(strstr(e.msg, "was replaced while the container restarted: its "
					 "/workspace is another directory (the container is "
					 "removed)"),
			   "%s", e.msg);
	cr_assert_neq(try_run("cat secret", &r, &e), 0);
	cr_assert_not_null(strstr(e.msg, "was replaced while the container restarted"), "%s",
			   e.msg);
	cr_assert_eq(count_containers(), before - 1, "the container was left");
	tu_rmtree(hidden);
	free(hidden);
}

/*
 * The same restart, with another command of the session (cordond runs a session's requests
 * at once) started through the exec API, the agent being held, in the moment between the
 * start and the check: it must not run in a container that has the swapped directory (it
 * read it, and its process, the owner's and dumpable, was theirs to look into through
 * /proc/PID/root; found in red team). It runs once the check is done, or fails with it.
 */
static struct cordon_result unchecked_r;
static cordon_error unchecked_e;
static int unchecked_rc = -2;

static void *unchecked_run(void *arg)
{
	(void)arg;
	unchecked_rc = try_run("cat secret; echo x > planted", &unchecked_r, &unchecked_e);
	return NULL;
}

static pthread_t unchecked_t;

static void run_before_check(void)
{
	docker_test_before_check = NULL;
	prof->timeout = 10;
	cr_assert_eq(pthread_create(&unchecked_t, NULL, unchecked_run, NULL), 0);
	/* Its time to run, while the check waits (not joined: it may wait for the check). */
	for (int i = 0; i < 300 && unchecked_rc == -2; i++)
		usleep(10 * 1000);
}

Test(agent, no_command_runs_in_a_restarted_container_before_its_check)
{
	char *hidden = tu_tmpdir(), victim[4096], planted[4200];
	struct cordon_result r;
	cordon_error e;

	make_dir(victim, sizeof(victim), hidden, "victim", 0777, 0, 0);
	tu_write_file(victim, "secret", "root's");
	snprintf(planted, sizeof(planted), "%s/planted", victim);
	swap_at_start(wd, victim);
	docker_test_before_check = run_before_check;
	if (try_run("kill -STOP $PPID; sleep 30", &r, &e) == 0)
		cordon_result_free(&r);
	cr_assert_null(docker_test_before_check, "no restart");
	pthread_join(unchecked_t, NULL);
	if (unchecked_rc == 0) {
		cr_assert_null(strstr(unchecked_r.output, "root's"),
			       "a command read the unchecked container's workdir: %s",
			       unchecked_r.output);
		cordon_result_free(&unchecked_r);
	} else {
		cr_assert_not_null(strstr(unchecked_e.msg, "was replaced while the container "
							   "restarted"),
				   "%s", unchecked_e.msg);
	}
	cr_assert_neq(access(planted, F_OK), 0,
		      "a command wrote into the directory swapped in, before the check");
	tu_rmtree(hidden);
	free(hidden);
}

/*
 * cordon's own temp workdir, root's at the open, is given to nobody at the first command
 * (docker_wd/cordons_temp_workdir_is_made_nobodys): from then on nobody can swap its path
 * (theirs, in sticky /tmp), which dockerd resolves again at a restart. So its container is
 * guarded from the open: at the restart, before the check, its init is not nobody's to look
 * into (before: docker-init, dumpable, ran as nobody; found in red team).
 */
static char restart_id[64];
static int restart_init_open = -1;

static void look_before_check(void)
{
	json_t *j = inspect_container(restart_id);
	json_t *pid = json_object_get(json_object_get(j, "State"), "Pid");

	docker_test_before_check = NULL;
	cr_assert(json_is_integer(pid) && json_integer_value(pid) > 0);
	restart_init_open = proc_root_open_as((pid_t)json_integer_value(pid), 65534, 65534);
	json_decref(j);
}

Test(agent, a_temp_workdir_given_to_nobody_is_guarded_from_the_open)
{
	const struct cordon_open o = {
		.profile = prof, .workdir = wd, .workdir_fd = -1, .workdir_is_temp = true
	};
	struct cordon_result r;
	cordon_error e;
	struct stat st;

	backend_docker.close(h);
	h = NULL;
	cr_assert_eq(chown(wd, 0, 0), 0); /* root's, as cordon_run makes it */
	cr_assert_eq(backend_docker.open(&o, &h, &e), 0, "%s", e.msg);
	cr_assert_eq(try_run_in("hostname", true, &r, &e), 0, "%s", e.msg);
	snprintf(restart_id, sizeof(restart_id), "%s", r.output);
	cordon_result_free(&r);
	cr_assert_eq(stat(wd, &st), 0);
	cr_assert_eq(st.st_uid, 65534, "the temp workdir was not given to nobody");
	docker_test_before_check = look_before_check;
	if (try_run_in("kill -STOP $PPID; sleep 30", true, &r, &e) == 0)
		cordon_result_free(&r);
	cr_assert_null(docker_test_before_check, "no restart");
	cr_assert_eq(restart_init_open, 0,
		     "at the restart, before the check, the container's init was nobody's to "
		     "look into");
}

/* ---- the agent in this process, no container (run once) ---- */

static void slow_start(void)
{
	usleep(500 * 1000);
}

/*
 * A kill that comes before the command's child has called setsid() (the hook holds it there
 * for 0.5 s): the group -child does not exist yet, the nonce is not in its environment yet,
 * and only a kill of the child itself stops it. Else the command (sleep 5) runs on, and the
 * agent does not report it dead within the 2 s after which cordon restarts the container.
 */
Test(agent_proc, a_kill_before_setsid_kills_the_command, .timeout = 30)
{
	char *dir = tu_tmpdir(), nonce[33], noncevar[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct agent_host a = AGENT_HOST_INIT;
	struct capture *out = NULL, *err = NULL;
	char *argv[] = { "sleep", "5", NULL };
	char *envv[] = { noncevar, NULL };
	volatile int cancel = 1;
	cordon_error e;
	double t0;
	int lfd, st, rc;
	pid_t pid;

	backend_random_hex(nonce, 16);
	snprintf(noncevar, sizeof(noncevar), "CORDON_EXEC_NONCE=%s", nonce);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(lfd, 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(lfd, 1), 0);
	agent_test_child_hook = slow_start;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char *aargv[] = { "__docker-agent", sa.sun_path, NULL };

		_exit(docker_agent_main(2, aargv));
	}
	a.fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	cr_assert_geq(a.fd, 0);
	close(lfd);
	cr_assert_eq(capture_new(1000, &out, &e), 0);
	cr_assert_eq(capture_new(1000, &err, &e), 0);
	struct agent_run ar = { .argv = argv,
				.envv = envv,
				.cwd = "/",
				.nonce = nonce,
				.deadline = mono_ms() + 30000,
				.cancel = &cancel,
				.out = out,
				.err = err };
	t0 = mono_ms();
	rc = agent_host_run(&a, &ar, &e);
	cr_assert_eq(rc, AGENT_RAN, "the command outlived the kill (rc %d: stuck after %.0f ms)",
		     rc, mono_ms() - t0);
	cr_assert(ar.cancelled);
	cr_assert_eq(ar.code, 137);
	cr_assert_lt(mono_ms() - t0, 1500);
	agent_host_disconnect(&a); /* the agent exits */
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	capture_free(out);
	capture_free(err);
	tu_rmtree(dir);
	free(dir);
}

/* ---- cordon gc (run once) ---- */

/* An API call of the test's own: its status, and its body parsed into *ret (may be NULL). */
static int api(const char *method, const char *path, const char *body, json_t **ret)
{
	struct http_response hr = { 0 };
	char *sock = NULL;
	cordon_error e;
	int status;

	cr_assert_eq(docker_socket_path(&sock, &e), 0, "%s", e.msg);
	cr_assert_eq(http_request(sock, method, path, body ? "application/json" : NULL, body,
				  body ? strlen(body) : 0, 30000, NULL, &hr, &e),
		     0, "%s %s: %s", method, path, e.msg);
	status = hr.status;
	if (ret)
		*ret = json_loadb(hr.body ? hr.body : "", hr.body_len, 0, NULL);
	http_response_free(&hr);
	free(sock);
	return status;
}

/*
 * cordon gc, and cordond's start-up sweep, remove cordon's own orphans only. A container that
 * merely carries cordon's labels is someone else's: every container of an image made with
 * `docker commit` from a cordon container carries them (an image's labels are its
 * containers'), as does one of an image whose author set them. Before, such a container was
 * force-removed with its anonymous volumes (`v=1`): its data was lost.
 */
Test(gc, a_container_that_only_carries_the_labels_is_kept, .timeout = 60)
{
	const char *img = getenv("CORDON_DOCKER_TEST_IMAGE");
	char session[33], name[64], body[512], path[160];
	unsigned removed = 0, kept = 0;
	cordon_error e;
	int status;

	cr_assert_not_null(img, "CORDON_DOCKER_TEST_IMAGE is not set (run tests/docker/run.sh)");
	backend_random_hex(session, 16);
	snprintf(name, sizeof(name), "cordon-test-notours-%.8s", session);
	snprintf(body, sizeof(body),
		 "{\"Image\": \"%s\", \"Cmd\": [\"true\"], \"Volumes\": {\"/data\": {}}, "
		 "\"Labels\": {\"cordon.session\": \"%s\", \"cordon.owner\": \"1:1\"}}",
		 img, session);
	snprintf(path, sizeof(path), "/containers/create?name=%s", name);
	cr_assert_eq(api("POST", path, body, NULL), 201);
	cr_assert_eq(docker_gc(&removed, &kept, &e), 0, "%s", e.msg);
	snprintf(path, sizeof(path), "/containers/%s/json", name);
	status = api("GET", path, NULL, NULL);
	snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", name);
	(void)api("DELETE", path, NULL, NULL);
	cr_assert_eq(status, 200, "cordon gc removed a container that is not cordon's (%s)", name);
}

/*
 * A container named as cordon names its own (cordon- and the first 16 characters of its
 * cordon.session label), never started, with these labels (taken); its name into ret.
 */
static void cordon_like(json_t *labels, char ret[32])
{
	const char *img = getenv("CORDON_DOCKER_TEST_IMAGE");
	const char *session = json_string_value(json_object_get(labels, "cordon.session"));
	json_t *body =
		json_pack("{s:s, s:[s], s:o}", "Image", img, "Cmd", "true", "Labels", labels);
	char path[384], *text;

	cr_assert_not_null(img, "CORDON_DOCKER_TEST_IMAGE is not set (run tests/docker/run.sh)");
	cr_assert(body && session);
	snprintf(ret, 32, "cordon-%.16s", session);
	snprintf(path, sizeof(path), "/containers/create?name=%s", ret);
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	cr_assert_eq(api("POST", path, text, NULL), 201, "%s", text);
	free(text);
}

/* The labels cordon writes, as this process would write them, for this owner. */
static json_t *labels_of(const struct orphan_self *me, const char *owner)
{
	char session[33];

	backend_random_hex(session, 16);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "cordon.session", session,
			 "cordon.owner", owner, "cordon.machine", me->machine, "cordon.boot",
			 me->boot, "cordon.pidns", me->pidns, "cordon.agent_dir", "");
}

/* l with key set to value, or removed (NULL). */
static json_t *with(json_t *l, const char *key, const char *value)
{
	cr_assert_not_null(l);
	if (value)
		cr_assert_eq(json_object_set_new(l, key, json_string(value)), 0);
	else
		cr_assert_eq(json_object_del(l, key), 0);
	return l;
}

static bool container_exists(const char *name)
{
	char path[384];

	snprintf(path, sizeof(path), "/containers/%s/json", name);
	return api("GET", path, NULL, NULL) == 200;
}

/*
 * gc removes only a container it can prove an orphan, as Daytona's gc does (backends/orphan.h):
 * a pid means something only on one boot, in one pid namespace, and a dockerd's socket may be
 * given to containers of this host (docker-outside-of-docker), or cordond and a CLI may run in
 * different pid namespaces. Found in review: gc looked each owner's pid up here, wherever it
 * was taken, and force-removed the live containers of a cordon in another pid namespace. The
 * rest of cordon's are kept and counted; a live owner's are kept and not counted.
 */
Test(gc, only_a_provable_orphan_is_removed, .timeout = 60)
{
	const char *dead = "999999999:1"; /* above any pid_max */
	struct orphan_self me;
	unsigned removed0, kept0, removed, kept, want_kept = 0;
	cordon_error e;
	char alive[64], machine[ORPHAN_VALUE_MAX], boot[33];

	orphan_self_read(&me);
	cr_assert(me.boot[0] && me.pidns[0], "boot '%s', pid namespace '%s'", me.boot, me.pidns);
	/* Another machine's label and another boot's: this one's with its first digit changed. */
	strcpy(machine, me.machine);
	machine[0] = machine[0] == 'a' ? 'b' : 'a';
	strcpy(boot, me.boot);
	boot[0] = boot[0] == 'a' ? 'b' : 'a';
	cr_assert_eq(backend_owner_of(getpid(), alive, sizeof(alive)), 0);
	/* What other runs left before: not this test's to count. */
	cr_assert_eq(docker_gc(&removed0, &kept0, &e), 0, "%s", e.msg);

	struct {
		const char *what;
		json_t *labels;
		bool removed, counted;
	} cases[] = {
		{ "this boot and pid namespace, the owner gone", labels_of(&me, dead), true,
		  false },
		{ "this boot and pid namespace, the owner alive", labels_of(&me, alive), false,
		  false },
		{ "another pid namespace (a cordon in a container given dockerd's socket)",
		  with(labels_of(&me, dead), "cordon.pidns", "1-1"), false, true },
		{ "a pid namespace its cordon could not read",
		  with(labels_of(&me, dead), "cordon.pidns", ""), false, true },
		{ "no pid namespace label", with(labels_of(&me, dead), "cordon.pidns", NULL), false,
		  true },
		{ "another machine id (a container's own)",
		  with(labels_of(&me, dead), "cordon.machine", machine), false, true },
		/* Docker's Created is now, after this boot began: another system of this id. */
		{ "another boot, made after this one began",
		  with(labels_of(&me, dead), "cordon.boot", boot), false, true },
		{ "an owner that is not pid:start",
		  with(labels_of(&me, dead), "cordon.owner", "garbage"), false, true },
		{ "an older cordon's (cordon.session and cordon.owner only)",
		  with(with(with(labels_of(&me, dead), "cordon.machine", NULL), "cordon.boot",
			    NULL),
		       "cordon.pidns", NULL),
		  false, true },
	};
	const size_t n = sizeof(cases) / sizeof(cases[0]);
	char name[sizeof(cases) / sizeof(cases[0])][32];

	for (size_t i = 0; i < n; i++) {
		cordon_like(cases[i].labels, name[i]);
		want_kept += cases[i].counted;
	}
	cr_expect_eq(docker_gc(&removed, &kept, &e), 0, "%s", e.msg);
	for (size_t i = 0; i < n; i++) {
		char path[384];
		bool there = container_exists(name[i]);

		cr_expect_eq(!there, cases[i].removed, "%s: %s", cases[i].what,
			     there ? "kept" : "removed");
		snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", name[i]);
		(void)api("DELETE", path, NULL, NULL);
	}
	cr_expect_eq(removed, 1, "removed %u", removed);
	cr_expect_eq(kept, kept0 + want_kept, "kept %u, %u before", kept, kept0);
}

/*
 * The labels gc reads are cordon's, always set at create: an image's labels are its
 * containers' unless set, so an image labelled cordon.boot, cordon.pidns or cordon.machine
 * must not speak for the container. Their values are the Daytona backend's (the same
 * orphan_self_read: systemd's app-specific ids of the machine and boot ids, the pid and time
 * namespaces' inodes).
 */
Test(gc, a_containers_labels_say_where_its_owners_pid_was_taken, .init = setup_profile,
     .fini = teardown, .timeout = 60)
{
	struct orphan_self me;
	struct cordon_result r;
	struct stat pid_st, time_st;
	char path[384], pidns[64], *image;
	json_t *j, *l;
	cordon_error e;

	image = derived_image("cordon-test/labels", NULL,
			      "LABEL%20cordon.machine%3Dforged%20cordon.boot%3Dforged%20"
			      "cordon.pidns%3Dforged%20cordon.owner%3D1%3A1%20"
			      "cordon.agent_dir%3D%2Ftmp%2Fforged");
	free(prof->docker_image);
	prof->docker_image = strdup(image);
	cr_assert_eq(chown(wd, 65534, 65534), 0);
	cr_assert_eq(dopen(prof, wd, -1, &h, &e), 0, "%s", e.msg);
	run("hostname", &r); /* the container's id, cut to 12 */
	snprintf(path, sizeof(path), "/containers/%s/json", r.output);
	cordon_result_free(&r);
	cr_assert_eq(api("GET", path, NULL, &j), 200);
	l = json_object_get(json_object_get(j, "Config"), "Labels");
	orphan_self_read(&me);
	cr_assert_eq(stat("/proc/self/ns/pid", &pid_st), 0);
	if (stat("/proc/self/ns/time", &time_st) == 0)
		snprintf(pidns, sizeof(pidns), "%llu-%llu", (unsigned long long)pid_st.st_ino,
			 (unsigned long long)time_st.st_ino);
	else
		snprintf(pidns, sizeof(pidns), "%llu", (unsigned long long)pid_st.st_ino);
	cr_expect_str_eq(json_string_value(json_object_get(l, "cordon.machine")), me.machine);
	cr_expect_str_eq(json_string_value(json_object_get(l, "cordon.boot")), me.boot);
	cr_expect_eq(strlen(me.boot), 32);
	cr_expect_str_eq(json_string_value(json_object_get(l, "cordon.pidns")), pidns);
	cr_expect_str_eq(json_string_value(json_object_get(l, "cordon.owner")), me.owner);
	cr_expect_neq(
		strcmp(json_string_value(json_object_get(l, "cordon.agent_dir")), "/tmp/forged"),
		0);
	json_decref(j);
	backend_docker.close(h);
	h = NULL;
	snprintf(path, sizeof(path), "/images/%s?force=1", image);
	(void)api("DELETE", path, NULL, NULL);
	free(image);
}
