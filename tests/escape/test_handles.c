/* SPDX-License-Identifier: MIT */
/*
 * Class 2, leaked host handles (CVE-2024-21626 "Leaky Vessels", CVE-2019-5736), and the
 * process/namespace view those attacks rely on.
 *
 * The caller of cordon leaks fds into it on purpose (a directory fd on the host's /, a file fd
 * on a secret outside the workdir, an O_PATH fd on a host dir), as a careless parent would.
 */
#define _GNU_SOURCE
#include "tests/escape/escape.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* In cordon's child, before it execs cordon: fds 7, 8, 9 without close-on-exec. */
static void leak_fds(void)
{
	struct esc *e = esc_cur;
	char path[4200];
	int fd;

	fd = open("/", O_RDONLY | O_DIRECTORY);
	dup2(fd, 7);
	snprintf(path, sizeof(path), "%s/secret", e->scratch);
	fd = open(path, O_RDONLY);
	dup2(fd, 8);
	fd = open(e->scratch, O_PATH | O_DIRECTORY);
	dup2(fd, 9);
}

static void put_outside_secret(struct esc *e)
{
	char *p = esc_spath(e, "secret");

	esc_write(p, e->secret, 0644, 0, 0);
	free(p);
}

/* The command sees exactly fds 0, 1, 2 (and the one `ls` opens to read the directory). */
ESC_CASE(escape_handles, only_fds_012)
{
	struct esc_opts o = { .pre_exec = leak_fds };
	struct tu_run r;

	put_outside_secret(e);
	esc_run(&r, &o, "ls /proc/self/fd");
	cr_expect_str_eq(r.out, "0\n1\n2\n3\n", "fds other than 0 1 2 are open:\n%s", r.out);
	tu_run_free(&r);
	esc_put_helper(e);
	esc_run(&r, &o, "./h fds");
	esc_expect_no_escape(&r, "leaked fd");
	tu_run_free(&r);
}

/* cwd=/proc/self/fd/N and reading through leaked fds reaches nothing of the host. */
ESC_CASE(escape_handles, proc_self_fd_cwd)
{
	struct esc_opts o = { .pre_exec = leak_fds };
	struct tu_run r;

	put_outside_secret(e);
	esc_host_root_marker(e);
	esc_run(&r, &o,
		"for n in 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 "
		"29 30 31 32 33 34 35 36 37 38 39 40; do "
		"(cd /proc/self/fd/$n 2>/dev/null && cat cordon-esc-root-* secret; "
		"cd /proc/self/fd/$n/.. 2>/dev/null && cat cordon-esc-root-* secret); "
		"cat /proc/self/fd/$n/secret; test -f /proc/self/fd/$n && "
		"{ cat /proc/self/fd/$n; eval \"cat <&$n\"; }; "
		"done 2>/dev/null; true");
	esc_expect_absent(&r, e->secret, "reading through a leaked fd");
	tu_run_free(&r);
}

/* /proc/PID/root and /proc/PID/cwd of every visible process lead nowhere outside. */
ESC_CASE(escape_handles, proc_root_cwd_walk)
{
	struct tu_run r;

	put_outside_secret(e);
	esc_host_root_marker(e);
	esc_run(&r, NULL,
		"for p in /proc/[0-9]* /proc/self /proc/thread-self; do "
		"cat $p/root/cordon-esc-root-* $p/cwd/../../../../../../cordon-esc-root-* "
		"$p/root%s/secret; done 2>/dev/null; true",
		e->scratch);
	esc_expect_absent(&r, e->secret, "/proc/*/root walk");
	tu_run_free(&r);
}

/*
 * CVE-2019-5736: keep O_PATH handles on /proc/PID/exe of every visible process running a
 * binary named cordon*, wait for them to exit, reopen for writing and overwrite. cordon runs
 * from a private copy here, whose bytes must be unchanged afterwards.
 */
ESC_CASE(escape_handles, runtime_exe_overwrite)
{
	char *copy, *orig, *after, *log, *logp;
	size_t olen, alen;
	struct tu_run r;
	pid_t pids[8];

	copy = esc_spath(e, e->control ? "cordon-as-sh" : "cordon");
	if (e->control) {
		/* Control: a "runtime" that is a shell named cordon*, so the attack has a target. */
		esc_copy("/bin/dash", copy, 0755);
		e->control_shell = copy;
		e->bin = strdup(copy);
	} else if (strcmp(copy, e->bin) != 0) {
		esc_copy(e->bin, copy, 0755);
		free(e->bin);
		e->bin = copy;
		copy = NULL;
	}
	orig = e->bin ? esc_read(e->bin, &olen) : NULL;
	esc_put_helper(e);
	esc_run(&r, NULL,
		"./h exe exe.log %s/; cat exe.log; "
		"for f in /proc/self/exe; do "
		"(printf '#!ESCAPED' > $f) 2>/dev/null && echo \"ESCAPED: wrote $f\"; done; true",
		e->scratch);
	/* The attacking daemon acts once cordon has exited: give it time to (fail to) act. */
	for (int i = 0; i < 150 && esc_survivors(e, pids, 8) > 0; i++)
		usleep(20000);
	esc_expect_no_escape(&r, "/proc/self/exe");
	logp = esc_wpath(e, "exe.log");
	log = esc_read(logp, NULL);
	cr_expect(!log || !strstr(log, "ESCAPED"), "the exe attack succeeded:\n%s", log);
	if (orig) {
		after = esc_read(e->bin, &alen);
		cr_expect(after && alen == olen && !memcmp(orig, after, olen),
			  "cordon's binary %s was modified from inside the sandbox", e->bin);
		free(after);
	}
	free(orig);
	free(log);
	free(logp);
	if (copy != e->bin)
		free(copy);
	tu_run_free(&r);
}

/* cordon's own environment (API keys...) is not the command's. */
ESC_CASE(escape_handles, environment_not_inherited)
{
	char *k1, *k2;
	struct tu_run r;

	cr_assert(asprintf(&k1, "AWS_SECRET_ACCESS_KEY=%s", e->secret) > 0);
	cr_assert(asprintf(&k2, "CORDON_ESC_SECRET=%s", e->secret) > 0);
	const char *env[] = { k1, k2, NULL };
	struct esc_opts o = { .env = env };

	esc_run(&r, &o,
		"env; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null; "
		"true");
	esc_expect_absent(&r, e->secret, "cordon's environment");
	tu_run_free(&r);
	free(k1);
	free(k2);
}

/* A host process the runner owns, named hst<tag>, that the run must neither see nor kill. */
static pid_t host_process(struct esc *e, char *name, size_t len)
{
	pid_t pid;

	snprintf(name, len, "hst%s", e->tag + 3);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (e->uid && (setgid(e->gid) != 0 || setuid(e->uid) != 0))
			_exit(1);
		execl("/bin/sleep", name, "60", (char *)NULL);
		_exit(1);
	}
	usleep(20000);
	return pid;
}

ESC_CASE(escape_handles, host_process_hidden)
{
	char name[32];
	pid_t pid = host_process(e, name, sizeof(name));
	struct tu_run r;

	/*
	 * Print only a verdict, never other processes' command lines. The name is assembled at
	 * run time so that the command's own cmdline does not contain it.
	 */
	esc_run(&r, NULL,
		"n=hs; n=${n}t%s; for p in /proc/[0-9]*; do grep -qa $n $p/cmdline 2>/dev/null && "
		"echo \"ESCAPED-SEEN ${p#/proc/}\"; done; "
		"grep -qa $n /proc/%d/cmdline 2>/dev/null && echo ESCAPED-PID; true",
		name + 3, (int)pid);
	esc_expect_no_escape(&r, "a host process is visible");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	tu_run_free(&r);
}

ESC_CASE(escape_handles, host_process_kill)
{
	char name[32], stat[64], *s;
	pid_t pid = host_process(e, name, sizeof(name));
	struct tu_run r;

	esc_run(&r, NULL, "kill -STOP %d; kill -9 %d; kill -9 -%d; true", (int)pid, (int)pid,
		(int)pid);
	snprintf(stat, sizeof(stat), "/proc/%d/stat", (int)pid);
	s = esc_read(stat, NULL);
	cr_expect(waitpid(pid, NULL, WNOHANG) == 0 && s && !strstr(s, ") T ") && !strstr(s, ") Z "),
		  "the run signalled a host process: %s", s ? s : "(gone)");
	free(s);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	tu_run_free(&r);
}

/* Two runs at once: the second sees nothing of the first and cannot kill it. */
ESC_CASE(escape_handles, concurrent_runs_isolated)
{
	struct esc_job a;
	struct tu_run ra, rb;
	char *started = esc_wpath(e, "started-a");
	char marker[40];

	snprintf(marker, sizeof(marker), "RUNA_%s", e->tag);
	esc_start(&a, NULL, "export ESC_A=%s; echo $$ > started-a; sleep 2; echo A-done", marker);
	for (int i = 0; i < 500 && !esc_exists(started); i++)
		usleep(10000);
	cr_expect(esc_exists(started), "run A did not start");
	esc_run(&rb, NULL,
		"for p in /proc/[0-9]*; do "
		"if grep -qa ESC_A=RUNA_ $p/environ 2>/dev/null; then "
		"echo FOUND-A $p; kill -9 ${p#/proc/}; fi; done; true");
	esc_finish(&a, &ra, NULL, NULL);
	esc_expect_absent(&rb, "FOUND-A", "run B sees run A");
	cr_expect(strstr(ra.out, "A-done") && ra.status == 0, "run A was disturbed: %d %s",
		  ra.status, ra.out);
	tu_run_free(&ra);
	tu_run_free(&rb);
	free(started);
}

/* mnt, net, pid, ipc, uts, cgroup (and user, for a user) namespaces differ from the host's. */
ESC_CASE(escape_handles, namespaces_private)
{
	static const char *const kinds[] = { "mnt", "net", "pid", "ipc", "uts", "cgroup", "user" };
	size_t nkinds = e->who == ESC_USER ? 7 : 6;
	struct tu_run r;

	esc_run(&r, NULL,
		"for n in mnt net pid ipc uts cgroup user; do readlink /proc/self/ns/$n; "
		"done");
	for (size_t i = 0; i < nkinds; i++) {
		char path[64], host[128];
		ssize_t k;

		snprintf(path, sizeof(path), "/proc/self/ns/%s", kinds[i]);
		k = readlink(path, host, sizeof(host) - 1);
		cr_assert(k > 0);
		host[k] = '\0';
		cr_expect(!strstr(r.out, host), "the run shares the host's %s namespace (%s)",
			  kinds[i], host);
	}
	tu_run_free(&r);
}
