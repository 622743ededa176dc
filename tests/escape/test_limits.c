/* SPDX-License-Identifier: MIT */
/*
 * Class 6, containment and resource exhaustion: fork bomb, memory bomb, /tmp fill, file fill,
 * output flood, and processes that try to outlive the run (setsid, double fork, signal-proof,
 * environment-less daemons), through the timeout and through cordon's own death.
 *
 * Every bomb is bounded even without a sandbox (the helper stops at a count or a size, its
 * children die with it, dd stops at 1 GiB) so that a regression fails the test instead of
 * taking the machine down; the unbounded shell fork bomb only runs once the bounded one was
 * contained.
 */
#define _GNU_SOURCE
#include "tests/escape/escape.h"
#include <cordon/cordon.h>

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static json_t *parse_json(const struct tu_run *r)
{
	json_error_t err;
	json_t *j = json_loadb(r->out, r->out_len, 0, &err);

	cr_expect(j && json_is_object(j), "no JSON result (%s): %.300s", err.text, r->out);
	return j;
}

ESC_CASE(escape_limits, fork_bomb)
{
	static const char *const t5[] = { "-t", "5", NULL };
	struct esc_opts o = { .args = t5 };
	struct tu_run r;
	const char *p;
	long n = -1;
	pid_t pid;
	int st, lock = esc_heavy_lock();

	esc_put_helper(e);
	/* bounded first: 4000 processes is far above the profile's pids limit (256) */
	esc_run(&r, &o, "./h forkbomb 4000");
	p = strstr(r.out, "forkbomb: blocked");
	if (p)
		sscanf(p, "forkbomb: blocked %*s after %ld", &n);
	/*
	 * The unbounded bomb runs only when the bounded one stopped near the profile's limit:
	 * a fork failing for another reason (a busy machine) must not let it loose.
	 */
	if (n < 0 || n > 1024) {
		esc_heavy_unlock(lock);
		cr_assert_fail("the bounded fork bomb was not stopped by a pids limit (%ld "
			       "processes); not running the real one:\n%s",
			       n, r.out);
	}
	cr_expect(r.ms < 15000, "the run did not end (%.0f ms)", r.ms);
	tu_run_free(&r);
	/*
	 * The real one, kept alive by its shell: the run ends at the timeout (or by an error), and
	 * takes every process of the bomb along.
	 */
	esc_run(&r, &o, "b(){ b|b& }; b; sleep 30");
	esc_heavy_unlock(lock);
	cr_expect(r.status != 0, "the fork bomb's run reports success: %d %s", r.status, r.out);
	cr_expect(r.ms < 15000, "the fork bomb's run did not end (%.0f ms)", r.ms);
	cr_expect_eq(esc_wait_gone(e, 1000), 0, "fork bomb processes survived the run");
	tu_run_free(&r);
	/* and the machine still forks */
	pid = fork();
	if (pid == 0)
		_exit(0);
	cr_expect(pid > 0 && waitpid(pid, &st, 0) == pid, "the host cannot fork any more");
}

ESC_CASE(escape_limits, memory_bomb)
{
	static const char *const args[] = { "-t", "20", "--format", "json", NULL };
	struct esc_opts o = { .args = args };
	struct tu_run r;
	int lock = esc_heavy_lock();
	json_t *j, *oom, *peak;

	esc_put_helper(e);
	esc_run(&r, &o, "./h membomb 8192");
	esc_heavy_unlock(lock);
	esc_expect_no_escape(&r, "8 GiB allocated");
	j = parse_json(&r);
	if (j) {
		oom = json_object_get(j, "oom_killed");
		peak = json_object_get(j, "peak_memory_bytes");
		cr_expect(json_is_true(oom) || strstr(r.out, "blocked ENOMEM"),
			  "neither OOM-killed nor ENOMEM: %.500s", r.out);
		cr_expect(!json_is_integer(peak) ||
				  json_integer_value(peak) <= (json_int_t)3 * 512 * 1024 * 1024,
			  "peak memory %lld is above the limit",
			  (long long)json_integer_value(peak));
		json_decref(j);
	}
	tu_run_free(&r);
}

static unsigned long long tmp_free(void)
{
	struct statvfs s;

	cr_assert(statvfs("/tmp", &s) == 0);
	return (unsigned long long)s.f_bavail * s.f_frsize;
}

ESC_CASE(escape_limits, tmp_fill)
{
	static const char *const t[] = { "-t", "30", NULL };
	struct esc_opts o = { .args = t };
	struct tu_run r;
	char host[128];
	unsigned long long before, after;
	int lock = esc_heavy_lock();

	snprintf(host, sizeof(host), "/tmp/fill-%s", e->tag);
	esc_on_teardown("rm -f '%s'", host);
	before = tmp_free();
	esc_run(&r, &o, "dd if=/dev/zero of=/tmp/fill-%s bs=1M count=1024 2>&1; df -k /tmp",
		e->tag);
	after = tmp_free();
	esc_heavy_unlock(lock);
	cr_expect(strstr(r.out, "No space left on device"),
		  "/tmp took 1 GiB without running out of space:\n%s", r.out);
	cr_expect(after + (512ULL << 20) > before, "the host's /tmp lost %llu MiB",
		  (before - after) >> 20);
	cr_expect(!esc_exists(host), "the fill landed in the host's /tmp");
	tu_run_free(&r);
}

ESC_CASE(escape_limits, file_fill)
{
	static const char *const t[] = { "-t", "30", NULL };
	struct esc_opts o = { .args = t };
	struct tu_run r;
	struct stat st;
	char *big = esc_wpath(e, "big");

	/* sparse: seek to 1023 MiB and write 2 MiB; the second MiB crosses file_size = 1G */
	esc_run(&r, &o, "dd if=/dev/zero of=big bs=1M seek=1023 count=2 2>&1; ls -l big");
	if (stat(big, &st) != 0)
		st.st_size = 0;
	cr_expect(st.st_size > (1023LL << 20), "the file was not written at all:\n%s", r.out);
	cr_expect(st.st_size <= (1LL << 30), "a %lld-byte file passed the 1 GiB file_size limit",
		  (long long)st.st_size);
	free(big);
	tu_run_free(&r);
}

ESC_CASE(escape_limits, output_flood)
{
	static const char *const args[] = { "-t", "30", "--format", "json", NULL };
	struct esc_opts o = { .args = args };
	struct tu_run r;
	json_t *j;

	esc_run(&r, &o, "head -c 100000000 /dev/zero | tr '\\0' a");
	j = parse_json(&r);
	if (j) {
		json_t *n = json_object_get(j, "stdout_bytes"), *out = json_object_get(j, "stdout");

		cr_expect(json_is_integer(n) && json_integer_value(n) == 100000000,
			  "stdout_bytes is not 100000000");
		cr_expect(json_is_true(json_object_get(j, "truncated")), "not marked truncated");
		cr_expect(json_is_string(out) && json_string_length(out) <= 100000 * 4,
			  "stdout holds more than the cap");
		json_decref(j);
	}
	cr_expect(e->control || e->last_maxrss_kb < 64 * 1024,
		  "cordon's RSS reached %ld KiB for 100 MB of output", e->last_maxrss_kb);
	tu_run_free(&r);
}

/* ---- processes that try to outlive the run ------------------------------------------------- */

static void daemon_case(struct esc *e, const char *cmd)
{
	struct tu_run r;

	esc_run(&r, NULL, "%s", cmd);
	cr_expect(strstr(r.out, "started"), "the daemon was not started:\n%s", r.out);
	cr_expect(r.ms < 5000, "the run waited for its daemon (%.0f ms)", r.ms);
	cr_expect_eq(esc_wait_gone(e, 300), 0, "a daemon outlived the run");
	tu_run_free(&r);
}

ESC_CASE(escape_daemons, setsid_daemon)
{
	daemon_case(e, "setsid sh -c 'sleep 30; :' >/dev/null 2>&1 </dev/null & sleep 0.1; "
		       "echo started");
}

ESC_CASE(escape_daemons, double_fork_signal_proof)
{
	daemon_case(e,
		    "(sh -c 'trap \"\" HUP TERM INT; sleep 30; :' >/dev/null 2>&1 </dev/null &); "
		    "(nohup setsid sleep 31 >/dev/null 2>&1 </dev/null &); sleep 0.1; "
		    "echo started");
}

/* A daemon without the run's environment or cwd: detected by what it does, not its name. */
ESC_CASE(escape_daemons, heartbeat_without_trace)
{
	char *beat = esc_wpath(e, "beat");
	struct stat a, b;
	struct tu_run r;

	esc_run(&r, NULL,
		"setsid env -i /bin/sh -c 'cd /; while :; do echo x >> %s; sleep 0.05; done' "
		">/dev/null 2>&1 </dev/null & sleep 0.3; echo started",
		beat);
	cr_expect(strstr(r.out, "started"), "not started:\n%s", r.out);
	usleep(100000);
	if (stat(beat, &a) == 0) {
		usleep(400000);
		cr_expect(stat(beat, &b) == 0 && b.st_size == a.st_size,
			  "a daemon still writes the workdir after the run");
	}
	free(beat);
	tu_run_free(&r);
}

ESC_CASE(escape_daemons, timeout_kills_tree)
{
	static const char *const t1[] = { "-t", "1", NULL };
	struct esc_opts o = { .args = t1 };
	struct tu_run r;

	esc_run(&r, &o,
		"setsid sleep 30 & (trap '' TERM; sleep 30) & (sleep 32 &); "
		"setsid sh -c 'trap \"\" TERM HUP; sleep 33' & sleep 30");
	cr_expect_eq(r.status, 124, "status %d, not the timeout's", r.status);
	cr_expect(e->last_exit_ms < 4000, "cordon took %.0f ms to end a 1 s run", e->last_exit_ms);
	cr_expect_eq(esc_wait_gone(e, 300), 0, "processes survived the timeout");
	tu_run_free(&r);
}

/*
 * A run that gives its output away: the write ends of its stdout and stderr pipes, sent with
 * SCM_RIGHTS over a socket in the workdir to a process of another run in the same workdir (a
 * session's parallel commands, two `cordon run -w` in one directory). Its command then exits
 * at once; the other run holds the pipes open and writes into them 3 s later. The run must
 * end with its command (and a drain of 2 s), not with the other run (found in review: cordon
 * read until EOF, so it ended when the holder died, past its own timeout after a flood, and
 * at its timeout without one, and it reported what the other run wrote after its end as its
 * own output).
 */
static void give_output_away(struct esc *e, const char *flood)
{
	static const char *const tb[] = {
		"-t", "8", "--max-output", "200", "--format", "json", NULL
	};
	struct esc_opts ob = { .args = tb };
	char late[64];
	struct tu_run r;

	snprintf(late, sizeof(late), "LATE_%s", e->tag);
	esc_run(&r, &ob, "./h fdpass give s %s", flood);
	cr_expect(strstr(r.out, "gave stdout") || strstr(r.err, "gave stdout"),
		  "the output was not passed:\n%.300s\n%.300s", r.out, r.err);
	cr_expect(e->last_exit_ms < 4000,
		  "with %s bytes out, the run ended %.0f ms after its start, not with its command",
		  flood, e->last_exit_ms);
	cr_expect(r.ms - e->last_exit_ms < 1000,
		  "with %s bytes out, its output went on %.0f ms after the run's end", flood,
		  r.ms - e->last_exit_ms);
	/* The holder writes to both: a flood's stdout keeps only its start, stderr all of it. */
	esc_expect_absent(&r, late, "another run wrote into the run's output after its end");
	if (!e->control) {
		json_t *j = parse_json(&r);

		if (j) {
			cr_expect_eq(json_integer_value(json_object_get(j, "stdout_bytes")),
				     atol(flood), "stdout has bytes the command did not write");
			json_decref(j);
		}
	}
	tu_run_free(&r);
}

ESC_CASE(escape_daemons, output_passed_to_another_run)
{
	static const char *const ta[] = { "-t", "30", NULL };
	struct esc_opts oa = { .args = ta, .kill_after = 40 };
	char *sock = esc_wpath(e, "s");
	struct esc_job holder;
	struct tu_run ra;
	int waited = 0;

	esc_put_helper(e);
	esc_start(&holder, &oa, "./h fdpass hold s 3000 LATE_%s", e->tag);
	while (!esc_exists(sock) && waited++ < 1000)
		usleep(10000);
	cr_assert(esc_exists(sock), "the holder never listened");
	give_output_away(e, "0");	/* cordon's poll loop reads it */
	give_output_away(e, "6000000"); /* a flood: a reader thread of its own */
	kill(holder.pid, SIGTERM);
	esc_finish(&holder, &ra, NULL, NULL);
	cr_expect(strstr(ra.out, "got 2 fds"), "the holder got nothing:\n%.500s", ra.out);
	free(sock);
	tu_run_free(&ra);
}

/*
 * A run that gives its stdin away (`--stdin` from a pipe): the read end, sent with SCM_RIGHTS
 * to a process of another run in the same workdir, which reads it. The run ends; what the
 * caller writes into its pipe afterwards is no longer the run's, and must still be there for
 * the caller's next reader (found in red team: cordon handed the command the caller's own fd,
 * so the other run read the caller's input after the answer; a socket as stdin could be
 * written too). Only a terminal went through a relay of cordon's.
 */
ESC_CASE(escape_daemons, stdin_passed_to_another_run)
{
	static const char *const ta[] = { "-t", "30", NULL };
	static const char *const tb[] = { "-t", "8", "--stdin", NULL };
	struct esc_opts oa = { .args = ta, .kill_after = 40 };
	struct esc_opts ob = { .args = tb };
	char *sock = esc_wpath(e, "s");
	char late[64], got[256] = "";
	struct esc_job holder;
	struct tu_run ra, rb;
	int p[2], waited = 0;
	ssize_t n = -1;

	snprintf(late, sizeof(late), "LATE_%s\n", e->tag);
	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	esc_put_helper(e);
	esc_start(&holder, &oa, "./h fdpass steal s 3000");
	while (!esc_exists(sock) && waited++ < 1000)
		usleep(10000);
	cr_assert(esc_exists(sock), "the holder never listened");
	ob.stdin_fd = p[0];
	esc_run(&rb, &ob, "./h fdpass give s 0 stdin");
	cr_expect(strstr(rb.out, "gave stdin") || strstr(rb.err, "gave stdin"),
		  "stdin was not passed:\n%.300s\n%.300s", rb.out, rb.err);
	/* The run has answered: the caller's input from now on is the caller's. */
	cr_assert(write(p[1], late, strlen(late)) == (ssize_t)strlen(late));
	usleep(500000);
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	n = read(p[0], got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	close(p[1]);
	kill(holder.pid, SIGTERM);
	esc_finish(&holder, &ra, NULL, NULL);
	cr_expect(strstr(ra.out, "got 1 fds"), "the holder got nothing:\n%.500s", ra.out);
	cr_expect(!strstr(ra.out, late),
		  "another run read the caller's input after the run's end:\n%.500s", ra.out);
	cr_expect(!strcmp(got, late), "the caller's input was taken: it read '%s' (%zd)", got, n);
	close(p[0]);
	free(sock);
	tu_run_free(&ra);
	tu_run_free(&rb);
}

struct kill_at_start {
	const char *started;
	int sig;
	double sent_ms;
	double t0;
	bool gave_up;
};

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void kill_when_started(struct esc_job *j, void *arg)
{
	struct kill_at_start *k = arg;

	if (k->sent_ms == 0 && esc_exists(k->started)) {
		usleep(50000);
		kill(j->pid, k->sig);
		k->sent_ms = mono_ms() - k->t0;
	} else if (k->sent_ms == 0 && !k->gave_up && mono_ms() - k->t0 > 10000) {
		/* it never started: do not wait for its 30 s sleep */
		kill(j->pid, SIGKILL);
		k->gave_up = true;
	}
}

static void cordon_dies(struct esc *e, int sig)
{
	struct kill_at_start k = { .sig = sig };
	struct esc_job j;
	struct tu_run r;
	char *started = esc_wpath(e, "started");

	k.started = started;
	k.t0 = mono_ms();
	esc_start(&j, NULL,
		  "setsid sleep 30 & (sleep 31 &); (trap '' TERM INT HUP; sleep 32) & "
		  "touch started; sleep 30");
	esc_finish(&j, &r, kill_when_started, &k);
	cr_assert(k.sent_ms > 0, "the run never started:\n%s\n%s", r.out, r.err);
	if (sig == SIGKILL)
		cr_expect_eq(r.status, 137, "cordon was not the one killed (status %d)", r.status);
	cr_expect(e->last_exit_ms + (j.t0 - k.t0) - k.sent_ms < 2000,
		  "cordon took too long to end after the signal");
	cr_expect_eq(esc_wait_gone(e, 300), 0, "the run's processes outlived cordon (signal %d)",
		     sig);
	if (sig == SIGKILL) {
		/*
		 * A SIGKILLed cordon cannot remove its run's cgroup; its starter can (cordond does
		 * for its runners), and otherwise the next run there does a minute later.
		 */
		cordon_reap_after(j.pid);
		cr_expect_eq(tu_run_cgroups(j.pid, NULL, 0), 0,
			     "the killed cordon's cgroup is left");
	}
	free(started);
	tu_run_free(&r);
}

ESC_CASE(escape_daemons, cordon_sigkilled)
{
	cordon_dies(e, SIGKILL);
}

ESC_CASE(escape_daemons, cordon_sigterm)
{
	cordon_dies(e, SIGTERM);
}

ESC_CASE(escape_daemons, cordon_sigint)
{
	cordon_dies(e, SIGINT);
}
