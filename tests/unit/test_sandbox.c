/* SPDX-License-Identifier: MIT */
/*
 * The local sandbox, for real: local_proc_* run real commands (sh, ls, grep...) in the default
 * profile's sandbox and the tests look at what the command sees and at what is left on the
 * host afterwards. Run as root (the CI case), each identity-sensitive case also runs as an
 * ordinary user (`cordontest`, created if missing) in a test process that setuid()s to it.
 * Under CI=true a skip (not root, no such user) is a failure.
 */
#define _GNU_SOURCE
#include "backends/local/cpus.h"
#include "backends/local/proc.h"
#include "backends/local/sandbox.h"
#include "tests/lib/testutil.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEST_USER "cordontest"

struct sbx {
	char *out, *err;
	struct local_usage usage;
	int status; /* wait status */
	int rc;	    /* local_proc_start's return */
	cordon_error e;
};

static struct cordon_profile *load_default(void)
{
	struct cordon_profile *p = NULL;
	cordon_error e;

	cr_assert_eq(cordon_profile_load("default", &p, &e), 0, "load default: %s", e.msg);
	return p;
}

static void slurp_two(int a, int b, char **ra, char **rb)
{
	size_t la = 0, lb = 0;
	char *sa = calloc(1, 1), *sb = calloc(1, 1);
	bool oa = true, ob = true;

	while (oa || ob) {
		struct pollfd pfd[2] = { { .fd = oa ? a : -1, .events = POLLIN },
					 { .fd = ob ? b : -1, .events = POLLIN } };
		char buf[4096];

		cr_assert(poll(pfd, 2, 20000) > 0, "poll timed out");
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (!pfd[i].revents)
				continue;
			n = read(i ? b : a, buf, sizeof(buf));
			if (n <= 0) {
				if (i)
					ob = false;
				else
					oa = false;
				continue;
			}
			if (i) {
				sb = realloc(sb, lb + (size_t)n + 1);
				memcpy(sb + lb, buf, (size_t)n);
				sb[lb += (size_t)n] = '\0';
			} else {
				sa = realloc(sa, la + (size_t)n + 1);
				memcpy(sa + la, buf, (size_t)n);
				sa[la += (size_t)n] = '\0';
			}
		}
	}
	*ra = sa;
	*rb = sb;
}

static int sbx_wd_fd = -1; /* the next sbx_run passes this as local_spec.workdir_fd */

/* Run `sh -c cmd` in the sandbox; everything the command prints is collected. */
static void sbx_run(struct sbx *r, const struct cordon_profile *p, const char *wd, bool temp,
		    const char *cmd)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C", NULL };
	int o[2], e2[2];
	struct local_proc *proc = NULL;

	memset(r, 0, sizeof(*r));
	cr_assert_eq(pipe2(o, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(e2, O_CLOEXEC), 0);
	struct local_spec s = {
		.argv = argv,
		.envp = envp,
		.workdir = wd,
		.workdir_fd = sbx_wd_fd,
		.workdir_is_temp = temp,
		.stdin_fd = -1,
		.stdout_fd = o[1],
		.stderr_fd = e2[1],
		.profile = p,
	};
	r->rc = local_proc_start(&s, &proc, &r->e);
	close(o[1]);
	close(e2[1]);
	if (r->rc != 0) {
		close(o[0]);
		close(e2[0]);
		r->out = strdup("");
		r->err = strdup("");
		return;
	}
	slurp_two(o[0], e2[0], &r->out, &r->err);
	close(o[0]);
	close(e2[0]);
	cr_assert_eq(local_proc_wait(proc, &r->status, &r->usage, &r->e), 0, "wait: %s", r->e.msg);
	local_proc_free(proc);
}

static void sbx_free(struct sbx *r)
{
	free(r->out);
	free(r->err);
}

static bool ok(const struct sbx *r)
{
	return r->rc == 0 && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

static void need_root(void)
{
	if (geteuid() != 0) {
		cr_assert_not(tu_ci(), "skipped under CI: the sandbox tests need root");
		cr_skip_test("the sandbox tests run as root (and drop to " TEST_USER ")");
	}
}

/*
 * Become the unprivileged test user in this (criterion-forked) test process, and give it a
 * workdir of its own. The caller must tu_rmtree() it: root never comes back in this process,
 * and the user may remove it, since the dir and all that a run makes in it are the user's.
 */
static char *become_user(void)
{
	struct passwd *pw;
	char *wd;

	need_root();
	pw = getpwnam(TEST_USER);
	if (!pw) {
		cr_assert_eq(system("useradd -r -M -s /usr/sbin/nologin " TEST_USER
				    " >/dev/null 2>&1 || getent passwd " TEST_USER " >/dev/null"),
			     0, "useradd " TEST_USER);
		pw = getpwnam(TEST_USER);
	}
	cr_assert_not_null(pw);
	wd = tu_tmpdir();
	cr_assert_eq(chown(wd, pw->pw_uid, pw->pw_gid), 0);
	cr_assert_eq(setgroups(0, NULL), 0);
	cr_assert_eq(setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid), 0);
	cr_assert_eq(setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid), 0);
	return wd;
}

/* Host processes whose command line contains `marker`. */
/* Count host processes whose command line contains marker (anchored: starts with it). */
struct proc_match {
	const char *marker;
	bool anchored;
	int n;
};

static bool count_match(pid_t pid, const char *cmdline, void *arg)
{
	struct proc_match *m = arg;

	(void)pid;
	if (m->anchored ? strncmp(cmdline, m->marker, strlen(m->marker)) == 0
			: strstr(cmdline, m->marker) != NULL)
		m->n++;
	return true;
}

static int host_procs_matching(const char *marker, bool anchored)
{
	struct proc_match m = { marker, anchored, 0 };

	tu_each_proc(count_match, &m);
	return m.n;
}

static int host_procs_with(const char *marker)
{
	return host_procs_matching(marker, false);
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "re");
	int n = 0, c;

	cr_assert_not_null(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static const char *status_cmd =
	"id -u; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "
	"/proc/self/status";

static void check_identity(const struct sbx *r, bool want_uid_set, uid_t want)
{
	unsigned long uid;

	cr_assert(ok(r), "rc %d status %d: %s / %s", r->rc, r->status, r->e.msg, r->err);
	cr_assert_eq(sscanf(r->out, "%lu", &uid), 1, "%s", r->out);
	cr_assert_neq(uid, 0, "the command runs as uid 0");
	if (want_uid_set)
		cr_assert_eq(uid, want, "uid %lu, want %u", uid, (unsigned)want);
	cr_assert(strstr(r->out, "CapInh:\t0000000000000000"), "%s", r->out);
	cr_assert(strstr(r->out, "CapPrm:\t0000000000000000"), "%s", r->out);
	cr_assert(strstr(r->out, "CapEff:\t0000000000000000"), "%s", r->out);
	cr_assert(strstr(r->out, "CapBnd:\t0000000000000000"), "%s", r->out);
	cr_assert(strstr(r->out, "CapAmb:\t0000000000000000"), "%s", r->out);
	cr_assert(strstr(r->out, "NoNewPrivs:\t1"), "%s", r->out);
	cr_assert(strstr(r->out, "Seccomp:\t2"), "%s", r->out);
}

Test(sandbox, identity_as_root)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	/* A root-owned temp workdir: the dedicated uid, and the dir is chowned to it. */
	sbx_run(&r, p, wd, true, status_cmd);
	check_identity(&r, true, 65534);
	sbx_free(&r);
	/* A workdir owned by someone: that owner. */
	cr_assert_eq(chown(wd, 4242, 4242), 0);
	sbx_run(&r, p, wd, false, status_cmd);
	check_identity(&r, true, 4242);
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

/*
 * Root, a root-owned workdir that is not cordon's own temp dir: the command runs as 65534 and
 * sees the workdir through an idmapped mount (root on the disk is 65534 inside), so it can
 * write there, and what it creates is root's on the host. No setuid or setgid bit can be set
 * on anything (seccomp), and a third user's file stays as protected as its mode says.
 */
Test(sandbox, root_owned_workdir_is_idmapped)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd, path[512];
	struct stat st;
	FILE *f;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	cr_assert_eq(chown(wd, 0, 0), 0);
	cr_assert_eq(chmod(wd, 0700), 0);
	snprintf(path, sizeof(path), "%s/theirs", wd);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	fputs("theirs\n", f);
	fclose(f);
	cr_assert_eq(chown(path, 4243, 4243), 0);
	cr_assert_eq(chmod(path, 0644), 0);

	sbx_run(&r, p, wd, false,
		"id -u; echo made > made && mkdir dir && stat -c '%u %a' . made; "
		"chmod u+s made; chmod g+s dir; install -m 4755 made inst; mkdir -m 2775 sg; "
		"echo x >> theirs; rm -f theirs; true");
	cr_assert_eq(r.rc, 0, "%s", r.e.msg);
	cr_assert(strncmp(r.out, "65534\n65534 700\n65534 644\n", 27) == 0, "%s / %s", r.out,
		  r.err);
	cr_assert(strstr(r.err, "chmod: changing permissions of 'made': Operation not permitted"),
		  "%s", r.err);
	sbx_free(&r);

	snprintf(path, sizeof(path), "%s/made", wd);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_uid, 0, "made by the command: uid %u on the host", (unsigned)st.st_uid);
	cr_assert_eq(st.st_mode & 06000, 0, "mode %o", (unsigned)st.st_mode);
	snprintf(path, sizeof(path), "%s/dir", wd);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 06000, 0, "mode %o", (unsigned)st.st_mode);
	snprintf(path, sizeof(path), "%s/inst", wd);
	cr_assert(stat(path, &st) != 0 || (st.st_mode & 06000) == 0, "mode %o",
		  (unsigned)st.st_mode);
	snprintf(path, sizeof(path), "%s/sg", wd);
	cr_assert(stat(path, &st) != 0, "mkdir -m 2775 worked");
	snprintf(path, sizeof(path), "%s/theirs", wd);
	cr_assert_eq(stat(path, &st), 0, "a third user's file was removed");
	cr_assert_eq(st.st_size, 7, "a third user's 0644 file was written");
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

/*
 * The daemon opens a client's workdir as the client and passes the fd: the sandbox must mount
 * that directory, not whatever the path names by the time it is set up (a symlink swapped in
 * after the check). Here the path names another directory outright.
 */
static void fd_over_path(bool as_user)
{
	struct cordon_profile *p = load_default();
	char *a = as_user ? become_user() : tu_tmpdir(), *b = tu_tmpdir(), want[600];
	struct sbx r;

	tu_write_file(a, "which", "A\n");
	if (as_user)
		cr_assert_eq(chmod(b, 0777), 0);
	tu_write_file(b, "which", "B\n");
	sbx_wd_fd = open(a, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(sbx_wd_fd, 0);
	sbx_run(&r, p, b, false, "pwd; cat which");
	close(sbx_wd_fd);
	sbx_wd_fd = -1;
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	snprintf(want, sizeof(want), "%s\nA\n", a);
	cr_assert_str_eq(r.out, want);
	sbx_free(&r);
	tu_rmtree(a);
	tu_rmtree(b);
	free(a);
	free(b);
	cordon_profile_free(p);
}

Test(sandbox, workdir_fd_wins_over_path)
{
	need_root();
	fd_over_path(false);
}

Test(sandbox, workdir_fd_wins_over_path_as_user)
{
	fd_over_path(true);
}

/*
 * An ordinary user gets no cgroup on this host: `pids` is then RLIMIT_NPROC, which Linux
 * (5.14+) counts per user namespace, so only the run's own processes count. The caller's
 * processes outside (20 of them here, more than the limit) must neither count nor be hurt.
 */
Test(sandbox, pids_limit_without_cgroup_as_user)
{
	char *wd = become_user();
	struct cordon_profile *p = load_default();
	pid_t host[20];
	struct sbx r;
	int n = -1;

	for (size_t i = 0; i < 20; i++) {
		host[i] = fork();
		cr_assert_geq(host[i], 0);
		if (host[i] == 0) {
			pause();
			_exit(0);
		}
	}
	p->pids = 16;
	/* Builtins only once the bomb ran: an exec would need a fork too. */
	sbx_run(&r, p, wd, false,
		"(i=0; while [ $i -lt 60 ]; do sleep 2 & i=$((i+1)); echo $i > /tmp/n; done) "
		"2>/dev/null; read n < /tmp/n; echo started $n");
	cr_assert_eq(r.rc, 0, "%s", r.e.msg);
	cr_assert_eq(sscanf(r.out, "started %d", &n), 1, "%s / %s", r.out, r.err);
	cr_expect(n >= 8 && n < 16, "%d sleeps started under pids = 16", n);
	for (size_t i = 0; i < 20; i++) {
		cr_expect_eq(kill(host[i], 0), 0, "a host process of the caller died");
		kill(host[i], SIGKILL);
		waitpid(host[i], NULL, 0);
	}
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, identity_as_user)
{
	char *wd = become_user();
	struct cordon_profile *p = load_default();
	struct sbx r;

	sbx_run(&r, p, wd, false, status_cmd);
	check_identity(&r, true, getuid());
	sbx_free(&r);
	/* Files it creates in the workdir are the caller's on the host. */
	sbx_run(&r, p, wd, false, "echo hi > made && cat made");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	{
		char path[512];
		struct stat st;

		snprintf(path, sizeof(path), "%s/made", wd);
		cr_assert_eq(stat(path, &st), 0);
		cr_assert_eq(st.st_uid, getuid());
	}
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, small_root)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd;

	need_root();
	p = load_default();
	wd = tu_tmpdir(); /* under /tmp, so the workdir adds no top-level entry */
	sbx_run(&r, p, wd, true, "ls -A / | tr '\\n' ' '");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, access("/lib64", F_OK) == 0
					? "bin dev etc lib lib64 proc sbin tmp usr "
					: "bin dev etc lib proc sbin tmp usr ");
	sbx_free(&r);
	sbx_run(&r, p, wd, true, "ls -A /dev | tr '\\n' ' '");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, "fd full null random shm stderr stdin stdout urandom zero ");
	sbx_free(&r);
	/* no /sys, no tty, the host name is ours */
	sbx_run(&r, p, wd, true, "test ! -e /sys && test ! -e /dev/tty && hostname");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, "cordon\n");
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, proc_is_the_sandboxes)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	sbx_run(&r, p, wd, true, "ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	/* init, sh, ls, grep (and tr): nothing of the host's hundreds of processes */
	{
		int n = 0, max = 0, v;
		char *s = r.out, *end;

		while ((v = (int)strtol(s, &end, 10)), end != s) {
			n++;
			max = v > max ? v : max;
			s = end;
		}
		cr_assert(n >= 2 && n <= 6 && max <= 10, "pids: %s", r.out);
		cr_assert(strncmp(r.out, "1 ", 2) == 0, "pids: %s", r.out);
	}
	sbx_free(&r);
	/* The host's kernel knobs are read-only or masked. */
	sbx_run(&r, p, wd, true,
		"test -s /proc/kcore && echo KCORE; head -c1 /proc/kallsyms | grep -q . && echo "
		"SYMS; "
		"echo 1 > /proc/sys/vm/drop_caches 2>/dev/null && echo SYS; "
		"echo b > /proc/sysrq-trigger 2>/dev/null && echo SYSRQ; "
		"test -r /proc/sys/kernel/ostype && echo readable");
	cr_assert_str_eq(r.out, "readable\n", "%s", r.out);
	sbx_free(&r);
	/*
	 * Every masked entry the host has is a mode-0000 mount (EACCES, even for entries the
	 * sandbox uid could read on the host: key-users, iomem, ioports); the read-only ones
	 * refuse writes with EROFS (the 0666 PSI files included). Run as an ordinary user too:
	 * there the sandbox has a user namespace, and its proc is mounted differently.
	 */
	for (int pass = 0; pass < 2; pass++) {
		static const char *const masked[] = {
			"kcore",       "kallsyms",	"kpagecount", "kpageflags", "kpagecgroup",
			"vmallocinfo", "iomem",		"ioports",    "slabinfo",   "pagetypeinfo",
			"kmsg",	       "keys",		"key-users",  "timer_list", "timer_stats",
			"sched_debug", "latency_stats", "acpi",	      "asound",	    "scsi",
			"mtrr",	       "dma",		"driver",
		};
		char cmd[4096] = "", path[64];
		char *uwd = NULL;
		pid_t pid;
		int st;
		size_t k = 0;

		for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
			struct stat hst;

			snprintf(path, sizeof(path), "/proc/%s", masked[i]);
			if (stat(path, &hst) != 0)
				continue; /* this kernel has no such entry */
			k += (size_t)snprintf(cmd + k, sizeof(cmd) - k,
					      "[ \"$(stat -c %%a %s)\" = 0 ] || echo MODE %s; "
					      "cat %s >/dev/null 2>&1 && echo READ %s; ",
					      path, masked[i], path, masked[i]);
		}
		snprintf(cmd + k, sizeof(cmd) - k,
			 "for f in /proc/pressure/cpu /proc/sys/kernel/hostname; do "
			 "[ -e $f ] || continue; (echo x > $f) 2>&1 | grep -q 'Read-only' || "
			 "echo WRITABLE $f; done; echo done");
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			if (pass == 1)
				uwd = become_user();
			sbx_run(&r, p, uwd ? uwd : wd, !uwd, cmd);
			/* uwd is this child's, made as the user: the parent never learns its name */
			tu_rmtree(uwd);
			if (!ok(&r) || strcmp(r.out, "done\n") != 0) {
				fprintf(stderr, "pass %d: %s / %s / %s\n", pass, r.out, r.err,
					r.e.msg);
				_exit(1);
			}
			_exit(0);
		}
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pass %d failed (see stderr)",
			  pass);
	}
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

static void check_writes(const struct cordon_profile *p, const char *wd, bool temp)
{
	struct sbx r;

	sbx_run(&r, p, wd, temp,
		"for f in /x /usr/x /etc/x /dev/x /proc/x /bin/x; do "
		"  touch $f 2>/dev/null && echo WROTE $f; done; "
		"touch /tmp/ok ./ok && echo fine");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, "fine\n");
	sbx_free(&r);
}

Test(sandbox, writes_only_workdir_and_tmp)
{
	struct cordon_profile *p;
	char *wd;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	check_writes(p, wd, true);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, writes_only_workdir_and_tmp_as_user)
{
	char *wd = become_user();
	struct cordon_profile *p = load_default();

	check_writes(p, wd, false);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, readonly_workdir)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd;

	need_root();
	p = load_default();
	p->readonly = true;
	wd = tu_tmpdir();
	tu_write_file(wd, "data", "x\n");
	sbx_run(&r, p, wd, true,
		"cat data; touch new 2>/dev/null && echo WROTE; "
		"echo y >> data 2>/dev/null && echo APPENDED; touch /tmp/t && echo tmp");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, "x\ntmp\n");
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

static void check_hidden(const struct cordon_profile *p, const char *wd, bool temp)
{
	struct sbx r;

	sbx_run(&r, p, wd, temp,
		"cat .env; cat .e*; f=.e; cat ${f}nv; grep -r SECRET . ; cat sub/deep/id.key; "
		"cat notes.txt; cat alias; cat conf/real.cfg; ls sub/deep; echo done");
	cr_assert_eq(r.rc, 0, "%s", r.e.msg);
	cr_assert_null(strstr(r.out, "SECRET"), "leaked: %s", r.out);
	cr_assert(strstr(r.out, "done"), "%s %s", r.out, r.err);
	cr_assert(strstr(r.out, "visible.txt"), "%s", r.out);
	sbx_free(&r);
}

static void make_secrets(const char *wd)
{
	char a[512], b[512];

	tu_write_file(wd, ".env", "SECRET=1\n");
	snprintf(a, sizeof(a), "%s/sub", wd);
	mkdir(a, 0755);
	snprintf(a, sizeof(a), "%s/sub/deep", wd);
	mkdir(a, 0755);
	tu_write_file(a, "id.key", "SECRET key\n");
	tu_write_file(a, "visible.txt", "fine\n");
	/* a hard link to the ignored .env under another name */
	snprintf(a, sizeof(a), "%s/.env", wd);
	snprintf(b, sizeof(b), "%s/notes.txt", wd);
	cr_assert_eq(link(a, b), 0);
	/* an ignored symlink whose target, inside the workdir, is not itself ignored */
	snprintf(a, sizeof(a), "%s/conf", wd);
	mkdir(a, 0755);
	tu_write_file(a, "real.cfg", "SECRET cfg\n");
	snprintf(b, sizeof(b), "%s/alias", wd);
	cr_assert_eq(symlink("conf/real.cfg", b), 0);
}

static void add(struct cordon_list *l, const char *s)
{
	cordon_error e;

	cr_assert_eq(cordon_list_add(l, s, &e), 0);
}

Test(sandbox, ignored_and_masked_hidden)
{
	struct cordon_profile *p;
	char *wd;

	need_root();
	p = load_default(); /* masks .env */
	add(&p->ignore, "*.key");
	add(&p->ignore, "alias");
	wd = tu_tmpdir();
	make_secrets(wd);
	check_hidden(p, wd, true);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

/*
 * The covers' source (an empty file and directory, and their mode-0 twins for /proc) lives
 * beneath the /dev/shm mount point (mounts.c): the command finds /dev/shm empty and every
 * cover read-only, nosuid, nodev and noexec, and cannot reach the source's files.
 */
Test(sandbox, mask_source_out_of_reach)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd;

	need_root();
	p = load_default(); /* masks .env */
	wd = tu_tmpdir();
	tu_write_file(wd, ".env", "SECRET=1\n");
	sbx_run(&r, p, wd, false,
		"ls -A /dev/shm | wc -l; ls -A /dev; "
		"grep ' /dev/shm ' /proc/self/mountinfo | cut -d' ' -f4; "
		"grep '/.env ' /proc/self/mountinfo | cut -d' ' -f6; "
		"cat .env; : > /dev/shm/f && echo shm-writable");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out,
			 "0\nfd\nfull\nnull\nrandom\nshm\nstderr\nstdin\nstdout\nurandom\nzero\n"
			 "/\nro,nosuid,nodev,noexec,relatime\nshm-writable\n");
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

/*
 * Whatever cordon ignores or blocks (SIGPIPE, a nohup's SIGHUP, a real-time signal, and 32,
 * one of glibc's own, which criterion's workers ignore) reaches the command as the default:
 * init resets exactly the dispositions that are not (init.c: signals_reset reads them from
 * /proc/self/status) and clears the blocked mask.
 */
Test(sandbox, command_gets_default_signals)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old[3];
	int which[3] = { SIGPIPE, SIGHUP, SIGRTMIN + 5 };
	struct cordon_profile *p;
	sigset_t block, was;
	struct sbx r;
	char *wd;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sigaction(which[i], &ign, &old[i]), 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	cr_assert_eq(sigprocmask(SIG_BLOCK, &block, &was), 0);
	/* 32: through the raw call (glibc's sigaction refuses it); restored below. */
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} ign32 = { .handler = SIG_IGN }, old32;
	cr_assert_eq(syscall(SYS_rt_sigaction, 32, &ign32, &old32, sizeof(ign32.mask)), 0);
	sbx_run(&r, p, wd, true, "grep -E '^Sig(Blk|Ign):' /proc/self/status");
	syscall(SYS_rt_sigaction, 32, &old32, NULL, sizeof(old32.mask));
	sigprocmask(SIG_SETMASK, &was, NULL);
	for (int i = 0; i < 3; i++)
		sigaction(which[i], &old[i], NULL);
	tu_rmtree(wd);
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, ignored_and_masked_hidden_as_user)
{
	char *wd = become_user();
	struct cordon_profile *p = load_default();

	add(&p->ignore, "*.key");
	add(&p->ignore, "alias");
	make_secrets(wd);
	check_hidden(p, wd, false);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

static void check_daemon_dies(bool as_user)
{
	char *wd = as_user ? become_user() : (need_root(), tu_tmpdir());
	struct cordon_profile *p = load_default();
	char marker[64], cmd[256];
	struct sbx r;

	snprintf(marker, sizeof(marker), "%d.%ld", getpid() % 1000, (long)time(NULL) % 100000);
	snprintf(cmd, sizeof(cmd),
		 "setsid sh -c 'sleep 3%s' </dev/null >/dev/null 2>&1 & "
		 "(sh -c 'sleep 4%s' & ) </dev/null >/dev/null 2>&1; sleep 0.2; echo started",
		 marker, marker);
	sbx_run(&r, p, wd, !as_user, cmd);
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, "started\n");
	snprintf(cmd, sizeof(cmd), "sleep 3%s", marker);
	cr_assert_eq(host_procs_with(cmd), 0, "a setsid daemon survived the run");
	snprintf(cmd, sizeof(cmd), "sleep 4%s", marker);
	cr_assert_eq(host_procs_with(cmd), 0, "a double-forked daemon survived the run");
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, daemons_die_with_the_command)
{
	check_daemon_dies(false);
}

Test(sandbox, daemons_die_with_the_command_as_user)
{
	check_daemon_dies(true);
}

Test(sandbox, kill_is_fast_and_total)
{
	char *argv[] = { "sh", "-c", "setsid sleep 71.5 & sleep 72.5", NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct cordon_profile *p;
	struct local_proc *proc;
	struct local_usage u;
	struct timespec t0, t1;
	cordon_error e;
	char *wd;
	int st;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	struct local_spec s = { .argv = argv,
				.envp = envp,
				.workdir = wd,
				.workdir_fd = -1,
				.workdir_is_temp = true,
				.stdin_fd = -1,
				.stdout_fd = 2,
				.stderr_fd = 2,
				.profile = p };
	cr_assert_eq(local_proc_start(&s, &proc, &e), 0, "%s", e.msg);
	/* Wait for the settled tree: the detached sleep and the foreground sleep (dash execs
	 * the last command, so the shell itself becomes "sleep 72.5"). Counting the shell's
	 * own command line instead races with its fork and exec. */
	for (int i = 0; i < 150 && (host_procs_matching("sleep 71.5", true) < 1 ||
				    host_procs_matching("sleep 72.5", true) < 1);
	     i++)
		usleep(20 * 1000);
	cr_assert_eq(host_procs_matching("sleep 71.5", true), 1);
	cr_assert_eq(host_procs_matching("sleep 72.5", true), 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	local_proc_kill(proc);
	local_proc_kill(proc); /* idempotent */
	cr_assert_eq(local_proc_wait(proc, &st, &u, &e), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %d", st);
	cr_assert_lt((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 100);
	cr_assert_eq(host_procs_with("sleep 71.5"), 0);
	cr_assert_eq(host_procs_with("sleep 72.5"), 0);
	local_proc_free(proc);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, dies_with_cordon)
{
	struct cordon_profile *p;
	char *wd;
	pid_t pid;
	int st, started;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char *argv[] = { "sh", "-c", "setsid sleep 73.25 & sleep 74.25", NULL };
		char *envp[] = { "PATH=/usr/bin:/bin", NULL };
		struct local_spec s = { .argv = argv,
					.envp = envp,
					.workdir = wd,
					.workdir_fd = -1,
					.stdin_fd = -1,
					.stdout_fd = 2,
					.stderr_fd = 2,
					.profile = p,
					.workdir_is_temp = true };
		struct local_proc *proc;
		cordon_error e;

		if (local_proc_start(&s, &proc, &e) != 0)
			_exit(3);
		pause();
		_exit(0);
	}
	for (int i = 0; i < 150 && (host_procs_matching("sleep 73.25", true) < 1 ||
				    host_procs_matching("sleep 74.25", true) < 1);
	     i++)
		usleep(20 * 1000);
	started =
		host_procs_matching("sleep 73.25", true) + host_procs_matching("sleep 74.25", true);
	/* cordon is SIGKILLed: no cleanup code of its own runs. */
	kill(pid, SIGKILL);
	{
		siginfo_t si;

		cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	}
	cr_assert_geq(started, 2, "the sandbox did not start");
	/*
	 * Whoever started it (cordond, for a runner) removes its run's cgroup once the run's
	 * processes, which die with it, are gone: cordon_reap_after waits for that.
	 */
	cordon_reap_after(pid);
	cr_assert_eq(tu_run_cgroups(pid, NULL, 0), 0, "the killed cordon's run cgroup is left");
	waitpid(pid, &st, 0);
	for (int i = 0; i < 50 && host_procs_with("sleep 73.25") + host_procs_with("sleep 74.25");
	     i++)
		usleep(10 * 1000);
	cr_assert_eq(host_procs_with("sleep 73.25"), 0);
	cr_assert_eq(host_procs_with("sleep 74.25"), 0);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, nothing_left_behind)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd;
	int before, after;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	before = count_lines("/proc/self/mountinfo");
	for (int i = 0; i < 3; i++) {
		sbx_run(&r, p, wd, true, "true");
		cr_assert(ok(&r), "%s", r.e.msg);
		sbx_free(&r);
	}
	after = count_lines("/proc/self/mountinfo");
	cr_assert_eq(before, after, "mounts left on the host: %d -> %d", before, after);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, no_fd_leaks)
{
	struct cordon_profile *p;
	struct sbx r;
	int leak, leak_cloexec;
	char *wd;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	/* fds of cordon's own, inheritable or not, must not reach the command */
	leak = open("/etc/hostname", O_RDONLY);
	leak_cloexec = open("/", O_PATH | O_CLOEXEC);
	cr_assert_geq(leak, 0);
	sbx_run(&r, p, wd, true, "ls /proc/self/fd | tr '\\n' ' '");
	cr_assert_str_eq(r.out, "0 1 2 3 ");
	sbx_free(&r);
	close(leak);
	close(leak_cloexec);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, network_none_has_only_lo)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	sbx_run(&r, p, wd, true,
		"tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; "
		"grep -c '' /proc/net/unix");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	/* only lo; and no Unix socket of the host (only the header line) */
	cr_assert_str_eq(r.out, "lo\n1\n");
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

static char *my_cpus_allowed(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[512], *r = NULL;

	cr_assert_not_null(f);
	while (!r && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Cpus_allowed_list:", 18))
			r = strdup(line);
	fclose(f);
	cr_assert_not_null(r);
	return r;
}

/*
 * The parent moves the sandbox's child off its own CPU while the child builds the root
 * (sandbox.c, "spread"); the child must put the caller's CPUs back before the command: with
 * two CPUs the command would otherwise be left on one. As cordon was given all of them, and
 * under a narrower set (taskset -c N), as root and as a user (in a user namespace). On one
 * CPU nothing is spread, and the command must still have that CPU.
 */
static void check_cpus_kept(const char *wd, bool temp)
{
	struct cordon_profile *p = load_default();
	cpu_set_t all, one;
	char *want;
	struct sbx r;

	cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	for (int k = 0; k < 2; k++) {
		if (k == 1) {
			/* the highest CPU cordon may use, alone */
			CPU_ZERO(&one);
			for (int c = CPU_SETSIZE - 1; c >= 0; c--)
				if (CPU_ISSET(c, &all)) {
					CPU_SET(c, &one);
					break;
				}
			cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
		}
		want = my_cpus_allowed();
		for (int i = 0; i < 5; i++) {
			sbx_run(&r, p, wd, temp, "grep ^Cpus_allowed_list: /proc/self/status");
			cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
			cr_assert_str_eq(r.out, want, "run %d with %s", i, want);
			sbx_free(&r);
		}
		free(want);
	}
	cr_assert_eq(sched_setaffinity(0, sizeof(all), &all), 0);
	cordon_profile_free(p);
}

Test(sandbox, command_keeps_the_callers_cpus)
{
	char *wd;

	need_root();
	wd = tu_tmpdir();
	check_cpus_kept(wd, true);
	tu_rmtree(wd);
	free(wd);
}

Test(sandbox, command_keeps_the_callers_cpus_as_user)
{
	char *wd;

	wd = become_user();
	check_cpus_kept(wd, false);
	tu_rmtree(wd);
	free(wd);
}

/*
 * The spread (and the hide walk's second thread) goes to another CPU only when one is likely
 * free: /proc/loadavg's count of runnable tasks, the caller included, below the CPUs cordon
 * may use (cpus.h: a task moved to a busy CPU waits for its time slice). Text that cannot be
 * read keeps the spread, as before the check.
 */
Test(sandbox, spread_only_to_a_free_cpu)
{
	cpu_set_t two, four;

	CPU_ZERO(&two);
	CPU_SET(0, &two);
	CPU_SET(1, &two);
	four = two;
	CPU_SET(2, &four);
	CPU_SET(3, &four);
	cr_assert(cpus_free_in("0.00 0.01 0.05 1/245 12345\n", &two), "only we run");
	cr_assert_not(cpus_free_in("1.94 1.07 1.39 2/110 8951\n", &two), "one other runs");
	cr_assert_not(cpus_free_in("9.00 9.00 9.00 17/300 1\n", &two));
	cr_assert(cpus_free_in("1.94 1.07 1.39 2/110 8951\n", &four), "two of four busy");
	cr_assert_not(cpus_free_in("3.00 3.00 3.00 4/110 8951\n", &four));
	cr_assert(cpus_free_in("3.00 3.00 3.00 3/110 8951\n", &four));
	/* unreadable: as before */
	cr_assert(cpus_free_in("", &two));
	cr_assert(cpus_free_in("1.0 1.0 1.0", &two));
	cr_assert(cpus_free_in("1.0 1.0 1.0 x/2 3", &two));
	cr_assert(cpus_free_in("1.0 1.0 1.0 5 3", &two));
	/* The machine's own count: with a spinner for each CPU of ours, none is free. */
	{
		cpu_set_t mine;
		pid_t kids[CPU_SETSIZE];
		int n = 0;
		bool free_now;

		cr_assert_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
		while (n < CPU_COUNT(&mine)) {
			pid_t k = fork();

			cr_assert_geq(k, 0);
			if (k == 0)
				for (;;)
					;
			kids[n++] = k;
		}
		free_now = cpus_one_free(&mine);
		for (int i = 0; i < n; i++) {
			(void)kill(kids[i], SIGKILL);
			(void)waitpid(kids[i], NULL, 0);
		}
		cr_assert_not(free_now, "%d spinners, and still a free CPU", n);
	}
}

/*
 * The run is the OOM killer's first choice, not cordon: the command's oom_score_adj is 500,
 * the caller's unchanged (a memory limit above the run's, cordond's unit's MemoryMax= now that
 * its cgroup holds the runs, must not make cordond the victim). As an ordinary user too, whose
 * /proc/self files are root's once the sandbox is not dumpable.
 */
static void check_oom_first(const char *wd, bool temp)
{
	struct cordon_profile *p = load_default();
	char before[16] = "", after[16] = "";
	struct sbx r;
	FILE *f;

	f = fopen("/proc/self/oom_score_adj", "re");
	cr_assert(f && fgets(before, sizeof(before), f));
	fclose(f);
	sbx_run(&r, p, wd, temp, "cat /proc/self/oom_score_adj /proc/1/oom_score_adj");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, "500\n500\n", "the command's and init's: %s", r.out);
	sbx_free(&r);
	f = fopen("/proc/self/oom_score_adj", "re");
	cr_assert(f && fgets(after, sizeof(after), f));
	fclose(f);
	cr_assert_str_eq(after, before, "the caller's own score changed");
	cordon_profile_free(p);
}

Test(sandbox, the_run_is_the_oom_killers_first_choice)
{
	char *wd;

	need_root();
	wd = tu_tmpdir();
	check_oom_first(wd, true);
	tu_rmtree(wd);
	free(wd);
}

/*
 * Where the kernel has no Landlock (or lsm= leaves it out), nothing kept the command from
 * writing its /proc/self files: without CAP_SYS_RESOURCE (not in this host's bounding set, nor
 * in cordond.service's CapabilityBoundingSet) the 500 is not pinned, and the command lowered
 * it back to 0, level with cordond (found in red team). /proc is read-only to the command
 * now, Landlock or not. Landlock's absence is made here as cordon detects it: its syscall
 * answers ENOSYS (criterion runs each test in a process of its own).
 */
Test(sandbox, the_run_cannot_lower_its_oom_score_without_landlock)
{
	struct cordon_profile *p;
	scmp_filter_ctx ctx;
	struct sbx r;
	char *wd;

	need_root();
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	cr_assert(ctx);
	cr_assert_eq(
		seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(landlock_create_ruleset), 0),
		0);
	cr_assert_eq(seccomp_load(ctx), 0);
	seccomp_release(ctx);
	cr_assert_eq(syscall(SYS_landlock_create_ruleset, NULL, 0, 1), -1);
	p = load_default();
	wd = tu_tmpdir();
	sbx_run(&r, p, wd, true,
		"echo 0 > /proc/self/oom_score_adj; echo 1 > /proc/self/coredump_filter; "
		"cat /proc/self/oom_score_adj /proc/self/coredump_filter");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, "500\n00000033\n", "the command changed its own: %s", r.out);
	sbx_free(&r);
	cordon_profile_free(p);
	tu_rmtree(wd);
	free(wd);
}

Test(sandbox, the_run_is_the_oom_killers_first_choice_as_user)
{
	char *wd = become_user();

	check_oom_first(wd, false);
	tu_rmtree(wd);
	free(wd);
}

/*
 * Root's run: the stdio pipes cordon made for it become the command's (it runs as 65534 here),
 * so that it can reopen them by /dev/stdout or /proc/self/fd (they were root's 0600 pipes:
 * "Permission denied", found in red team); a caller's named FIFO given as stdout stays as it
 * was, the flag or not: only anonymous pipes are ever given away.
 */
Test(sandbox, the_runs_own_pipes_are_the_commands_a_callers_fifo_is_not)
{
	char *argv[] = { "sh", "-c", "echo by-path > /proc/self/fd/1 && echo ok", NULL };
	struct cordon_profile *p;
	struct local_proc *proc = NULL;
	struct stat st;
	char *wd, *fifo, buf[64] = "";
	int o[2], fd, status = 0;
	struct local_usage u;
	cordon_error e;
	ssize_t n;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	cr_assert_eq(pipe2(o, O_CLOEXEC), 0);
	struct local_spec s = { .argv = argv,
				.workdir = wd,
				.workdir_fd = -1,
				.workdir_is_temp = true,
				.stdin_fd = -1,
				.stdout_fd = o[1],
				.stderr_fd = o[1],
				.stdio_pipes_ours = true,
				.profile = p };
	cr_assert_eq(local_proc_start(&s, &proc, &e), 0, "%s", e.msg);
	close(o[1]);
	cr_assert_eq(fstat(o[0], &st), 0);
	cr_expect_eq(st.st_uid, 65534, "the pipe is %u's", (unsigned)st.st_uid);
	n = read(o[0], buf, sizeof(buf) - 1);
	cr_assert_eq(local_proc_wait(proc, &status, &u, &e), 0, "%s", e.msg);
	local_proc_free(proc);
	proc = NULL;
	close(o[0]);
	cr_expect(n > 0 && strstr(buf, "by-path\n") == buf, "got '%s'", buf);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%d", status);

	/* A FIFO in the file system (say `cordon run ... > fifo` of a library caller's). */
	cr_assert(asprintf(&fifo, "%s/fifo", wd) > 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	fd = open(fifo, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	s.stdout_fd = s.stderr_fd = fd;
	cr_assert_eq(local_proc_start(&s, &proc, &e), 0, "%s", e.msg);
	cr_assert_eq(local_proc_wait(proc, &status, &u, &e), 0, "%s", e.msg);
	local_proc_free(proc);
	close(fd);
	cr_assert_eq(stat(fifo, &st), 0);
	cr_expect_eq(st.st_uid, 0, "the caller's FIFO was given to %u", (unsigned)st.st_uid);
	free(fifo);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, signal_and_exit_status)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	sbx_run(&r, p, wd, true, "exit 7");
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 7, "%d", r.status);
	sbx_free(&r);
	sbx_run(&r, p, wd, true, "kill -TERM $$");
	cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGTERM, "%d", r.status);
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, setup_errors_name_the_step)
{
	char *argv[] = { "/nonexistent/cmd", NULL };
	struct cordon_profile *p;
	struct sbx r;
	struct local_proc *proc = NULL;
	cordon_error e;
	char *wd;
	int before;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	before = count_lines("/proc/self/mountinfo");
	add(&p->ro_bind, "/nonexistent-cordon-bind");
	sbx_run(&r, p, wd, true, "echo ran");
	cr_assert_eq(r.rc, -1);
	cr_assert_eq(r.e.code, ENOENT);
	cr_assert(strstr(r.e.msg, "ro_bind") && strstr(r.e.msg, "/nonexistent-cordon-bind"), "%s",
		  r.e.msg);
	cr_assert_str_eq(r.out, "");
	sbx_free(&r);
	cordon_profile_free(p);

	/* execve failing is not a setup error: the caller reports AG2's "Command not found". */
	p = load_default();
	struct local_spec s = { .argv = argv,
				.envp = NULL,
				.workdir = wd,
				.workdir_fd = -1,
				.stdin_fd = -1,
				.stdout_fd = 2,
				.stderr_fd = 2,
				.profile = p,
				.workdir_is_temp = true };
	cr_assert_eq(local_proc_start(&s, &proc, &e), LOCAL_PROC_EXEC_FAILED);
	cr_assert_eq(e.code, ENOENT);
	cr_assert_null(proc);
	cr_assert_eq(count_lines("/proc/self/mountinfo"), before);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, usage_and_oom_from_the_cgroup)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd;

	need_root();
	p = load_default();
	p->memory = 64 << 20;
	wd = tu_tmpdir();
	/* tail keeps a line without a newline in memory: the run's cgroup kills it */
	sbx_run(&r, p, wd, true, "head -c 200M /dev/zero | tail | wc -c");
	cr_assert_eq(r.rc, 0, "%s", r.e.msg);
	cr_assert(r.usage.oom_killed, "the OOM kill was not reported (%s)", r.err);
	cr_assert(r.usage.peak_memory_bytes > (32 << 20) &&
			  r.usage.peak_memory_bytes <= (int64_t)(64 << 20) + (1 << 20),
		  "peak %lld", (long long)r.usage.peak_memory_bytes);
	cr_assert_gt(r.usage.cpu_ms, 0);
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

static bool count_not_killed(pid_t pid, const char *cmdline, void *arg)
{
	struct proc_match *m = arg;
	char path[64], buf[1024], *p;
	unsigned long long flags = 0;
	bool killed = false;
	size_t k;
	FILE *f;

	if (strncmp(cmdline, m->marker, strlen(m->marker)) != 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true; /* gone */
	k = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[k] = '\0';
	/* After "(comm)": state ppid pgrp session tty_nr tpgid flags */
	p = strrchr(buf, ')');
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %llu", &flags) == 1 &&
	    (flags & 0x4 /* PF_EXITING */))
		killed = true;
	if (p && (p[2] == 'Z' || p[2] == 'X'))
		killed = true;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f) {
		char line[256];
		unsigned long long mask;

		while (fgets(line, sizeof(line), f))
			if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
			     sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
			    (mask & (1ULL << (SIGKILL - 1))))
				killed = true;
		fclose(f);
	} else {
		killed = true; /* gone */
	}
	m->n += !killed;
	return true;
}

/*
 * Is every host process whose command line starts with marker dead or dying: gone, a zombie,
 * exiting (PF_EXITING in /proc/<pid>/stat) or with a SIGKILL pending? Returns how many were
 * found still running with none of that.
 */
static int procs_not_killed(const char *marker)
{
	struct proc_match m = { marker, true, 0 };

	tu_each_proc(count_not_killed, &m);
	return m.n;
}

/* Directories of this process's run cgroups (cordon-<pid>-...) anywhere under /sys/fs/cgroup. */
static int own_run_cgroups(void)
{
	return tu_run_cgroups(getpid(), NULL, 0);
}

/*
 * A request's argv runs without a shell, and the policy judges its command: an argv with no
 * command ran with no check at all (red team: blocked = rm did not stop argv rm).
 */
Test(sandbox, argv_without_command_is_not_run_unchecked)
{
	char *argv[] = { "rm", "-f", "x", NULL };
	struct cordon_profile *p;
	struct cordon_result r;
	cordon_error e = { 0 };

	need_root();
	p = load_default();
	add(&p->blocked, "rm");
	p->blocked.set = true;
	struct cordon_request rq = { .argv = argv, .profile = p, .workdir_fd = -1, .stdin_fd = -1 };

	cr_assert_eq(cordon_run(&rq, &r, &e), -1, "argv rm ran under blocked = rm");
	cr_assert(strstr(e.msg, "argv without the command"), "%s", e.msg);
	cordon_profile_free(p);
}

/*
 * cordon_request.teardown (cordond): cordon_run gives the result as soon as init has reported
 * the command's end, when every other process of the run has already been sent SIGKILL; init's
 * own exit (the namespaces' teardown), the cgroup and the temp workdir are left for
 * cordon_teardown_finish. The result is the same as without it.
 */
Test(sandbox, result_before_teardown)
{
	static const char *const cmds[] = {
		"setsid sleep 74.5 >/dev/null 2>&1 & sleep 75.5 >/dev/null 2>&1 & "
		"sleep 0.3; echo out; echo err >&2; exit 3",
		"echo x; kill -9 $$",
		"sleep 76.5 & echo bg",
	};
	static const int want_exit[] = { 3, -9, 0 };
	static const char *const want_output[] = { "out\nerr\n[exit code: 3]", "x\n[exit code: -9]",
						   "bg" };
	struct cordon_profile *p;

	need_root();
	p = load_default();
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct cordon_teardown *td = (void *)1;
		struct cordon_result r, plain;
		struct stat st;
		cordon_error e;
		struct cordon_request rq = { .command = cmds[i],
					     .profile = p,
					     .workdir_fd = -1,
					     .stdin_fd = -1,
					     .teardown = &td };

		/*
		 * When the pidfd and the status are both ready at once (this process was not
		 * scheduled while init exited: a loaded machine), there is nothing left to hand
		 * over and the run is torn down before cordon_run returns. Try again then: the
		 * hand-over must happen in one of a few runs.
		 */
		for (int attempt = 0;; attempt++) {
			cr_assert_eq(cordon_run(&rq, &r, &e), 0, "%s", e.msg);
			if (attempt == 4 || own_run_cgroups() > 0)
				break;
			if (td != (void *)1)
				cr_assert_eq(cordon_teardown_finish(td, &e), 0, "%s", e.msg);
			cordon_result_free(&r);
			td = (void *)1;
		}
		cr_assert_eq(procs_not_killed("sleep 74.5"), 0, "a process of the run still runs");
		cr_assert_eq(procs_not_killed("sleep 75.5"), 0, "a process of the run still runs");
		cr_assert_eq(procs_not_killed("sleep 76.5"), 0, "a process of the run still runs");
		cr_assert_eq(r.exit_code, want_exit[i], "%s: exit %d", cmds[i], r.exit_code);
		cr_assert_str_eq(r.output, want_output[i]);
		cr_assert_not_null(td, "%s: no teardown left", cmds[i]);
		cr_assert_neq(td, (void *)1);
		/*
		 * Left to do, really: the cgroup is still there. (The temp workdir is only
		 * inside the sandbox: never on the host.)
		 */
		cr_assert_eq(stat(r.workdir, &st), -1, "%s is on the host", r.workdir);
		cr_assert_geq(own_run_cgroups(), 1);
		cr_assert_eq(cordon_teardown_finish(td, &e), 0, "%s", e.msg);
		cr_assert_eq(stat(r.workdir, &st), -1);
		cr_assert_eq(errno, ENOENT);
		cr_assert_eq(own_run_cgroups(), 0);
		cr_assert_eq(host_procs_with("sleep 74.5") + host_procs_with("sleep 75.5") +
				     host_procs_with("sleep 76.5"),
			     0);

		/* The same run without a teardown to leave: the same result. */
		rq.teardown = NULL;
		cr_assert_eq(cordon_run(&rq, &plain, &e), 0, "%s", e.msg);
		cr_assert_eq(plain.exit_code, r.exit_code);
		cr_assert_str_eq(plain.output, r.output);
		cr_assert_eq(stat(plain.workdir, &st), -1);
		cordon_result_free(&plain);
		cordon_result_free(&r);
	}
	cr_assert_eq(cordon_teardown_finish(NULL, NULL), 0);
	cordon_profile_free(p);
}

/* ------------------------------------------------------------------------------------------ */
/* Staging (stage.c): a network namespace and a cgroup made ahead, each for one run only      */

/*
 * The namespaces of a kind ("net", "user") this process holds an fd to, not counting its
 * own: their inode numbers, up to n of them; returns how many.
 */
static size_t held_ns(const char *kind, unsigned long *v, size_t n)
{
	char self[64] = "", own[64], link[64], path[64], prefix[16];
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	size_t k = 0;
	ssize_t len;

	cr_assert_not_null(d);
	snprintf(own, sizeof(own), "/proc/self/ns/%s", kind);
	snprintf(prefix, sizeof(prefix), "%s:[", kind);
	cr_assert_gt(readlink(own, self, sizeof(self) - 1), 0);
	while ((de = readdir(d))) {
		if (strlen(de->d_name) > 16)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%.16s", de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (strncmp(link, prefix, strlen(prefix)) == 0 && strcmp(link, self) != 0 && k < n)
			v[k++] = strtoul(link + strlen(prefix), NULL, 10);
	}
	closedir(d);
	return k;
}

/* The inode of a network namespace this process holds an fd to (not its own); 0 when none. */
static unsigned long held_netns(void)
{
	unsigned long v[2] = { 0 };

	cr_assert_leq(held_ns("net", v, 2), 1, "two network namespaces held");
	return v[0];
}

static const char *netns_cmd =
	"readlink /proc/self/ns/net; "
	"tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; "
	"grep -c '127.0.0.1' /proc/net/fib_trie; ls /proc/self/fd | tr '\\n' ' '";

Test(sandbox, staged_netns_serves_one_run)
{
	struct cordon_profile *p;
	struct sbx r;
	cordon_error e;
	char want[128], *wd;
	unsigned long staged;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	staged = held_netns();
	cr_assert_neq(staged, 0, "nothing staged");
	/* The run is in exactly that namespace, with lo up (127.0.0.1 routed), and no fd of it. */
	sbx_run(&r, p, wd, true, netns_cmd);
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	snprintf(want, sizeof(want), "net:[%lu]\nlo\n", staged);
	cr_assert(strncmp(r.out, want, strlen(want)) == 0, "%s", r.out);
	cr_assert_neq(atoi(r.out + strlen(want)), 0, "lo is down: %s", r.out);
	cr_assert(strstr(r.out, "\n0 1 2 3 ") != NULL, "fds: %s", r.out);
	sbx_free(&r);
	/*
	 * Taken: we hold no reference to it any more, so it cannot serve another run (it went
	 * with the run's last process; its inode number may be reused, so that is not compared).
	 * The next run, with nothing staged, makes its own, lo up as well.
	 */
	cr_assert_eq(held_netns(), 0);
	sbx_run(&r, p, wd, true, netns_cmd);
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert(strstr(r.out, "\nlo\n") && atoi(strstr(r.out, "\nlo\n") + 4) != 0, "%s", r.out);
	sbx_free(&r);
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	cr_assert_neq(held_netns(), 0);
	/* network "host" takes none: it stays for a run that wants one. */
	p->network = CORDON_NET_HOST;
	staged = held_netns();
	sbx_run(&r, p, wd, true, "readlink /proc/self/ns/net");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	sbx_free(&r);
	cr_assert_eq(held_netns(), staged);
	cordon_unstage();
	cr_assert_eq(held_netns(), 0);
	cr_assert_eq(tu_run_cgroups(getpid(), NULL, 0), 0);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

/*
 * As root with nothing staged, the parent makes the run's network namespace while the child
 * builds its root and hands it over at the second gate (sandbox.c): the command is in a
 * namespace of its own (not the host's), lo up, with no fd of it, and the parent keeps none.
 */
Test(sandbox, netns_made_meanwhile_is_the_runs_own)
{
	struct cordon_profile *p;
	struct sbx r;
	char host[64] = "", *wd;
	ssize_t k;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	cordon_unstage();
	k = readlink("/proc/self/ns/net", host, sizeof(host) - 1);
	cr_assert_gt(k, 0);
	for (int i = 0; i < 2; i++) {
		sbx_run(&r, p, wd, true, netns_cmd);
		cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
		cr_assert(strncmp(r.out, "net:[", 5) == 0 &&
				  strncmp(r.out, host, strlen(host)) != 0,
			  "the host's network namespace: %s", r.out);
		cr_assert(strstr(r.out, "]\nlo\n") && atoi(strstr(r.out, "]\nlo\n") + 5) != 0,
			  "only lo, up: %s", r.out);
		cr_assert(strstr(r.out, "\n0 1 2 3 ") != NULL, "fds: %s", r.out);
		sbx_free(&r);
		cr_assert_eq(held_netns(), 0, "the parent kept the run's network namespace");
	}
	/* Still our own namespace (the parent made the run's one in a thread of ours). */
	{
		char now[64] = "";

		cr_assert_gt(readlink("/proc/self/ns/net", now, sizeof(now) - 1), 0);
		cr_assert_str_eq(now, host);
	}
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, staged_cgroup_gets_the_runs_limits)
{
	struct cordon_profile *p;
	struct sbx r;
	cordon_error e;
	char staged[PATH_MAX], *wd;

	need_root();
	p = load_default();
	p->memory = 64 << 20;
	wd = tu_tmpdir();
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	if (tu_run_cgroups(getpid(), staged, sizeof(staged)) == 0)
		TU_SKIP("no cgroup on this host");
	/* The staged cgroup is the run's (it is gone with the run) and bounds it as the profile says. */
	sbx_run(&r, p, wd, true, "head -c 200M /dev/zero | tail | wc -c");
	cr_assert_eq(r.rc, 0, "%s", r.e.msg);
	cr_assert(r.usage.oom_killed, "the staged cgroup did not get the memory limit (%s)", r.err);
	sbx_free(&r);
	cr_assert_eq(tu_run_cgroups(getpid(), NULL, 0), 0, "%s was not the run's cgroup", staged);
	/* One removed while it waited (an administrator): the run makes its own. */
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	cr_assert_gt(tu_run_cgroups(getpid(), staged, sizeof(staged)), 0);
	{
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof(cmd),
			 /* other runs' cgroups may come and go meanwhile: not an error */
			 "find /sys/fs/cgroup -ignore_readdir_race -mindepth 2 -depth -type d "
			 "-name '%s' -exec rmdir {} +",
			 strrchr(staged, '/') + 1);
		cr_assert_eq(system(cmd), 0);
	}
	cr_assert_eq(tu_run_cgroups(getpid(), NULL, 0), 0);
	sbx_run(&r, p, wd, true, "head -c 200M /dev/zero | tail | wc -c");
	cr_assert_eq(r.rc, 0, "%s", r.e.msg);
	cr_assert(r.usage.oom_killed, "no limit after the staged cgroup vanished (%s)", r.err);
	sbx_free(&r);
	cr_assert_eq(tu_run_cgroups(getpid(), NULL, 0), 0);
	cordon_unstage();
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

/* A process that staged and was SIGKILLed: its starter removes what it left (cordond, runners). */
Test(sandbox, reap_after_a_killed_stager)
{
	cordon_error e;
	siginfo_t si;
	int ready[2], mine;
	char c;
	pid_t pid;

	need_root();
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || cordon_stage_next(&e) < 0)
			_exit(1);
		(void)!write(ready[1], "r", 1);
		pause(); /* until killed */
		_exit(2);
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "the child could not stage");
	close(ready[0]);
	if (tu_run_cgroups(pid, NULL, 0) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		TU_SKIP("no cgroup on this host");
	}
	/* A live process's cgroups are left alone, and so is everything for bad pids. */
	mine = tu_run_cgroups(pid, NULL, 0);
	cordon_reap_after(pid);
	cordon_reap_after(0);
	cordon_reap_after(-1);
	cr_assert_eq(tu_run_cgroups(pid, NULL, 0), mine, "a live process's staged cgroup removed");
	/* Staging twice stages once; unstaging twice is a no-op. */
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	mine = tu_run_cgroups(getpid(), NULL, 0);
	cr_assert_gt(mine, 0);
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	cr_assert_eq(tu_run_cgroups(getpid(), NULL, 0), mine, "staged twice, not once");
	cordon_unstage();
	cordon_unstage();
	cr_assert_eq(tu_run_cgroups(getpid(), NULL, 0), 0);
	/* Killed, not yet reaped: what it staged goes. */
	kill(pid, SIGKILL);
	cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	cordon_reap_after(pid);
	cr_assert_eq(tu_run_cgroups(pid, NULL, 0), 0, "the killed process's staged cgroup is left");
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
}

/* ------------------------------------------------------------------------------------------ */
/* Pre-built sandboxes (prebuilt.c): made ahead by a runner, one run each                     */

/* Our one child process (the pre-built sandbox's init); 0 when we have none. */
static pid_t only_child(void)
{
	char path[64], buf[256];
	pid_t pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)syscall(SYS_gettid));
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	if (fgets(buf, sizeof(buf), f)) {
		char *end;

		pid = (pid_t)strtol(buf, &end, 10);
		end += strspn(end, " \n");
		cr_assert(*end == '\0', "more than one child: %s", buf);
	}
	fclose(f);
	return pid;
}

static void ns_of(pid_t pid, const char *ns, char *buf, size_t n)
{
	char path[64];
	ssize_t k;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	k = readlink(path, buf, n - 1);
	cr_assert_gt(k, 0, "%s: %s", path, strerror(errno));
	buf[k] = '\0';
}

/* What a run shows of its sandbox: the same whichever way the sandbox was made. */
static const char *probe_cmd =
	"id; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "
	"/proc/self/status; "
	"hostname; pwd; ls -a / /tmp /dev; cat /proc/self/cgroup; ulimit -c; "
	"grep -c . /proc/self/mountinfo; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; "
	"echo made > made.txt; touch /tmp/leftover; ls /proc/self/fd | tr '\\n' ' '; "
	"(touch /x || echo ro) 2>/dev/null";

Test(sandbox, prebuilt_serves_one_run_the_same_as_on_demand)
{
	struct cordon_profile *p;
	struct sbx a, b;
	cordon_error e;
	char pidns[64], mine[64], netns[64], file[PATH_MAX], *wd;
	pid_t pb;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	/* Built on demand (nothing noted yet, so nothing pre-built). */
	cordon_stage_prebuild(true);
	cr_assert_eq(only_child(), 0);
	sbx_run(&a, p, wd, false, probe_cmd);
	cr_assert(ok(&a), "%s %s", a.e.msg, a.err);
	snprintf(file, sizeof(file), "%s/made.txt", wd);
	cr_assert_eq(unlink(file), 0, "the on-demand run did not write its workdir");
	/* Staging now pre-builds one for the mounts of that run: our only child. */
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	pb = only_child();
	cr_assert_gt(pb, 0, "nothing pre-built");
	ns_of(pb, "pid_for_children", pidns, sizeof(pidns));
	ns_of(getpid(), "pid", mine, sizeof(mine));
	cr_assert_str_neq(pidns, mine);
	/* It enters its network namespace once it has passed its gates: give it the time. */
	ns_of(getpid(), "net", mine, sizeof(mine));
	for (int i = 0; i < 500; i++) {
		ns_of(pb, "net", netns, sizeof(netns));
		if (strcmp(netns, mine) != 0)
			break;
		usleep(10000);
	}
	cr_assert_str_neq(netns, mine, "the pre-built sandbox is in the host's network namespace");
	/* The next run is that sandbox (its pid namespace and network namespace)... */
	{
		char cmd[1024];

		snprintf(cmd, sizeof(cmd), "readlink /proc/self/ns/pid /proc/self/ns/net; %s",
			 probe_cmd);
		sbx_run(&b, p, wd, false, cmd);
	}
	cr_assert(ok(&b), "%s %s", b.e.msg, b.err);
	{
		size_t n = strlen(pidns) + 1 + strlen(netns) + 1;
		char want[160];

		snprintf(want, sizeof(want), "%s\n%s\n", strstr(pidns, "pid:["), netns);
		cr_assert(strncmp(b.out, want, strlen(want)) == 0,
			  "not the pre-built sandbox: %.*s vs %s", (int)n, b.out, want);
		/* ...and shows exactly what the one built on demand showed. */
		cr_assert_str_eq(b.out + strlen(want), a.out);
	}
	cr_assert_str_eq(b.err, a.err);
	cr_assert_eq(unlink(file), 0, "the pre-built run did not write its workdir");
	/* It served one run: nothing is left of it, and nothing new until staging again. */
	cr_assert_eq(only_child(), 0);
	cr_assert_eq(kill(pb, 0), -1);
	sbx_free(&a);
	sbx_free(&b);
	cordon_unstage();
	cr_assert_eq(tu_run_cgroups(getpid(), NULL, 0), 0);
	cordon_stage_prebuild(false);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

Test(sandbox, prebuilt_not_taken_by_other_mounts)
{
	struct cordon_profile *p;
	struct sbx r;
	cordon_error e;
	char pidns[64], *wd;
	pid_t pb;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	cordon_stage_prebuild(true);
	sbx_run(&r, p, wd, false, "true");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	sbx_free(&r);
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	pb = only_child();
	cr_assert_gt(pb, 0, "nothing pre-built");
	ns_of(pb, "pid_for_children", pidns, sizeof(pidns));
	/* Another /tmp size: the pre-built one is killed, and the run built as usual. */
	p->tmp_size = 8 << 20;
	sbx_run(&r, p, wd, false, "readlink /proc/self/ns/pid; df -k /tmp | tail -1");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert(strncmp(r.out, strstr(pidns, "pid:["), strlen(strstr(pidns, "pid:["))) != 0,
		  "a sandbox pre-built for other mounts was taken: %s", r.out);
	cr_assert(strstr(r.out, " 8192 ") != NULL, "not the run's /tmp: %s", r.out);
	sbx_free(&r);
	cr_assert_eq(only_child(), 0);
	cr_assert_eq(kill(pb, 0), -1, "the unfit pre-built sandbox lives on");
	/* The next one is built for the new mounts, and taken by them. */
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	pb = only_child();
	cr_assert_gt(pb, 0, "nothing pre-built");
	ns_of(pb, "pid_for_children", pidns, sizeof(pidns));
	sbx_run(&r, p, wd, false, "readlink /proc/self/ns/pid; df -k /tmp | tail -1");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert(strncmp(r.out, strstr(pidns, "pid:["), strlen(strstr(pidns, "pid:["))) == 0,
		  "the fitting pre-built sandbox was not taken: %s", r.out);
	cr_assert(strstr(r.out, " 8192 ") != NULL, "not the run's /tmp: %s", r.out);
	sbx_free(&r);
	/* Unstaging kills a waiting one and removes its cgroup. */
	cr_assert_eq(cordon_stage_next(&e), 0, "%s", e.msg);
	pb = only_child();
	cr_assert_gt(pb, 0);
	cordon_unstage();
	cr_assert_eq(only_child(), 0);
	cr_assert_eq(kill(pb, 0), -1);
	cr_assert_eq(tu_run_cgroups(getpid(), NULL, 0), 0);
	cordon_stage_prebuild(false);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

/* Its maker SIGKILLed: the pre-built sandbox dies too (PR_SET_PDEATHSIG), leaving nothing. */
Test(sandbox, prebuilt_dies_with_its_maker)
{
	struct cordon_profile *p;
	int ready[2];
	pid_t maker, pb = 0;
	siginfo_t si;
	char *wd;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	maker = fork();
	cr_assert_geq(maker, 0);
	if (maker == 0) {
		struct sbx r;
		cordon_error e;

		cordon_stage_prebuild(true);
		sbx_run(&r, p, wd, false, "true");
		if (!ok(&r) || cordon_stage_next(&e) < 0)
			_exit(1);
		pb = only_child();
		(void)!write(ready[1], &pb, sizeof(pb));
		pause();
		_exit(2);
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &pb, sizeof(pb)), (ssize_t)sizeof(pb), "the maker failed");
	close(ready[0]);
	cr_assert_gt(pb, 0);
	cr_assert_eq(kill(pb, 0), 0);
	kill(maker, SIGKILL);
	cr_assert_eq(waitid(P_PID, (id_t)maker, &si, WEXITED | WNOWAIT), 0);
	cordon_reap_after(maker); /* waits for its processes, removes its cgroups */
	for (int i = 0; i < 200 && kill(pb, 0) == 0; i++)
		usleep(10000);
	cr_assert_eq(kill(pb, 0), -1, "the pre-built sandbox outlived its maker");
	cr_assert_eq(tu_run_cgroups(maker, NULL, 0), 0);
	cr_assert_eq(waitpid(maker, NULL, 0), maker);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

/*
 * A process that makes many runs (cordon_stage_prebuild) keeps the workdir's idmapping for the
 * next run of the same ids: one user namespace, held, reused, and the mapping as with a fresh
 * one (65534 inside, root's on the host). Another mapping gets its own. The CLI keeps none.
 */
Test(sandbox, idmap_kept_for_the_next_run_of_a_runner)
{
	struct cordon_profile *p;
	unsigned long ns[4], first;
	struct sbx r;
	char *wd, path[512];
	struct stat st;

	need_root();
	p = load_default();
	wd = tu_tmpdir();
	cr_assert_eq(chown(wd, 0, 0), 0);
	sbx_run(&r, p, wd, false, "id -u");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	sbx_free(&r);
	cr_assert_eq(held_ns("user", ns, 4), 0, "a run without the cache kept its idmapping");

	cordon_stage_prebuild(true);
	for (int i = 0; i < 3; i++) {
		sbx_run(&r, p, wd, false, "id -u; echo x > f; stat -c %u f; rm f");
		cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
		cr_assert_str_eq(r.out, "65534\n65534\n");
		sbx_free(&r);
		cr_assert_eq(held_ns("user", ns, 4), 1);
		if (i == 0)
			first = ns[0];
		cr_assert_eq(ns[0], first, "run %d made a new idmapping", i);
		cordon_unstage(); /* no pre-built sandbox in the way: each run builds its own */
	}
	/* Created through the reused mapping: root's on the host. */
	sbx_run(&r, p, wd, false, "echo y > g");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	sbx_free(&r);
	snprintf(path, sizeof(path), "%s/g", wd);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_uid, 0);
	cr_assert_eq(unlink(path), 0);
	/* The workdir's owner on the disk changes: another mapping, another namespace. */
	cr_assert_eq(chown(wd, 0, 4244), 0);
	sbx_run(&r, p, wd, false, "stat -c %g .");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	/* The disk's group of the workdir is the command's gid inside (backend.h, BACKEND_RUN_GID). */
	cr_assert_str_eq(r.out, "65533\n");
	sbx_free(&r);
	cr_assert_eq(held_ns("user", ns, 4), 1);
	cr_assert_neq(ns[0], first, "another mapping reused the first one's namespace");
	cordon_unstage();
	cordon_stage_prebuild(false);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}

/*
 * More names to hide than the kernel allows mounts in a namespace (fs.mount-max, made small
 * here): the run is refused before clone with a line that says so, instead of the child's
 * cover mount failing halfway with ENOSPC. The same workdir runs under the real limit.
 */
Test(sandbox, too_many_names_to_hide_is_refused_before_clone)
{
	struct cordon_profile *p;
	struct sbx r;
	char *wd, name[32];

	need_root();
	p = load_default();
	add(&p->ignore, "*.key");
	wd = tu_tmpdir();
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "k%02d.key", i);
		tu_write_file(wd, name, "SECRET\n");
	}
	sb_test_mount_max = 2030;
	sbx_run(&r, p, wd, false, "echo ran");
	sb_test_mount_max = 0;
	cr_assert_neq(r.rc, 0, "ran: %s", r.out);
	cr_assert(strstr(r.e.msg, "too many names to hide in the workdir"), "%s", r.e.msg);
	cr_assert(strstr(r.e.msg, "allows 2030 mounts"), "%s", r.e.msg);
	sbx_free(&r);
	sbx_run(&r, p, wd, false, "cat k07.key; echo ran");
	cr_assert(ok(&r), "%s %s", r.e.msg, r.err);
	cr_assert_str_eq(r.out, "ran\n");
	sbx_free(&r);
	tu_rmtree(wd);
	free(wd);
	cordon_profile_free(p);
}
