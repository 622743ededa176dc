/* SPDX-License-Identifier: MIT */
/* The escape suite's harness (see escape.h). */
#define _GNU_SOURCE
#include "tests/escape/escape.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CORDON_SRCDIR
#define CORDON_SRCDIR "."
#endif

static struct esc esc_state;

static bool under(const char *path, const char *dir);
struct esc *esc_cur;

#define MAX_TEARDOWN 32
static char *teardown_cmds[MAX_TEARDOWN];
static int n_teardown;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void esc_on_teardown(const char *fmt, ...)
{
	va_list ap;
	char *cmd;

	cr_assert(n_teardown < MAX_TEARDOWN);
	va_start(ap, fmt);
	cr_assert(vasprintf(&cmd, fmt, ap) > 0);
	va_end(ap);
	teardown_cmds[n_teardown++] = cmd;
}

/* ---- files --------------------------------------------------------------------------------- */

void esc_write(const char *path, const char *content, mode_t mode, uid_t uid, gid_t gid)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);

	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert(write(fd, content, strlen(content)) == (ssize_t)strlen(content));
	cr_assert(fchmod(fd, mode) == 0 && fchown(fd, uid, gid) == 0, "chmod/chown %s", path);
	close(fd);
}

char *esc_read(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0, cap = 4096;
	char *buf;
	ssize_t k;

	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	cr_assert(buf);
	while ((k = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)k;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			cr_assert(buf);
		}
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

bool esc_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

char *esc_wpath(const struct esc *e, const char *name)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s", e->wd, name) > 0);
	return p;
}

char *esc_spath(const struct esc *e, const char *name)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s", e->scratch, name) > 0);
	return p;
}

void esc_own(const struct esc *e, const char *path)
{
	if (e->uid)
		cr_assert(lchown(path, e->uid, e->gid) == 0, "chown %s", path);
}

void esc_copy(const char *from, const char *to, mode_t mode)
{
	size_t len;
	char *data = esc_read(from, &len);
	int fd;

	cr_assert(data, "read %s: %s", from, strerror(errno));
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	cr_assert(fd >= 0, "create %s: %s", to, strerror(errno));
	cr_assert(write(fd, data, len) == (ssize_t)len);
	cr_assert(fchmod(fd, mode) == 0);
	close(fd);
	free(data);
}

/* ---- the helper program -------------------------------------------------------------------- */

const char *esc_helper_path(void)
{
	static char path[PATH_MAX + 32];
	const char *src = CORDON_SRCDIR "/tests/escape/helper/esc-helper.c";
	char self[PATH_MAX], *cmd;
	struct stat ss, hs;
	ssize_t n;
	int lock;

	if (path[0])
		return path;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	cr_assert(n > 0);
	self[n] = '\0';
	*strrchr(self, '/') = '\0';
	snprintf(path, sizeof(path), "%s/escape-helper", self);
	lock = open(src, O_RDONLY | O_CLOEXEC);
	cr_assert(lock >= 0, "helper source %s: %s", src, strerror(errno));
	flock(lock, LOCK_EX);
	cr_assert(fstat(lock, &ss) == 0);
	if (stat(path, &hs) != 0 || hs.st_mtime < ss.st_mtime) {
		/* Static, so that it runs in the sandbox's view whatever libraries it shows. */
		cr_assert(asprintf(&cmd, "cc -static -O1 -o '%s.tmp' '%s' && mv -f '%s.tmp' '%s'",
				   path, src, path, path) > 0);
		cr_assert(system(cmd) == 0, "cannot build the helper: %s", cmd);
		free(cmd);
	}
	flock(lock, LOCK_UN);
	close(lock);
	return path;
}

void esc_put_helper(struct esc *e)
{
	char *to = esc_wpath(e, "h");

	esc_copy(esc_helper_path(), to, 0755);
	esc_own(e, to);
	free(to);
}

/* ---- setup / teardown ---------------------------------------------------------------------- */

/*
 * Remove a test dir. An attack that worked without a sandbox may have left a mount in it (a
 * bind of / under the workdir would make `rm -rf` delete the host): detach every mount below
 * it first, deepest first, and never cross a filesystem boundary.
 */
static void rmtree(const char *dir)
{
	for (int round = 0; round < 8; round++) {
		char *info = esc_read("/proc/self/mountinfo", NULL), *line, *save = NULL;
		bool any = false;

		cr_assert(info);
		for (line = strtok_r(info, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char mp[PATH_MAX];

			if (sscanf(line, "%*d %*d %*s %*s %4095s", mp) == 1 && under(mp, dir)) {
				umount2(mp, MNT_DETACH);
				any = true;
			}
		}
		free(info);
		if (!any)
			break;
	}
	if (!strncmp(dir, "/tmp/cordon-test-", 17)) {
		char *cmd;

		cr_assert(asprintf(&cmd, "rm -rf --one-file-system '%s'", dir) > 0);
		(void)!system(cmd);
		free(cmd);
	}
}

static void ensure_user(void)
{
	int lock;

	if (getpwnam(ESC_USER_NAME))
		return;
	/* Two test processes may get here at once: serialise on a file both can open. */
	lock = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	cr_assert(lock >= 0);
	flock(lock, LOCK_EX);
	if (!getpwnam(ESC_USER_NAME))
		cr_assert(system("useradd -m " ESC_USER_NAME " >/dev/null 2>&1") == 0,
			  "useradd " ESC_USER_NAME);
	flock(lock, LOCK_UN);
	close(lock);
}

/* Whether "others" may reach and run path (every parent dir o+x, the file o+rx). */
static bool others_can_run(const char *path)
{
	char buf[PATH_MAX], *slash;
	struct stat st;

	if (stat(path, &st) != 0 || (st.st_mode & 05) != 05)
		return false;
	snprintf(buf, sizeof(buf), "%s", path);
	while ((slash = strrchr(buf, '/')) && slash != buf) {
		*slash = '\0';
		if (stat(buf, &st) != 0 || !(st.st_mode & 01))
			return false;
	}
	return true;
}

static void setup(enum esc_who who)
{
	struct esc *e = &esc_state;
	const char *c = getenv("CORDON_ESC_CONTROL");
	unsigned char rnd[6];
	char wd[] = "/tmp/cordon-test-esc-XXXXXX", sc[] = "/tmp/cordon-test-escx-XXXXXX";

	memset(e, 0, sizeof(*e));
	esc_cur = e;
	e->who = who;
	e->control = c && !strcmp(c, "1");
	cr_assert(getuid() == 0, "the escape suite runs as root (it also runs cordon as a user)");
	cr_assert(getrandom(rnd, sizeof(rnd), 0) == (ssize_t)sizeof(rnd));
	snprintf(e->tag, sizeof(e->tag), "esc%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
		 rnd[3], rnd[4], rnd[5]);
	snprintf(e->secret, sizeof(e->secret), "SECRET_%.24s", e->tag);
	cr_assert(mkdtemp(wd) && mkdtemp(sc));
	e->wd = strdup(wd);
	e->scratch = strdup(sc);
	cr_assert(chmod(wd, 0755) == 0 && chmod(sc, 0755) == 0);
	{
		char tmp[sizeof(sc) + 8];

		snprintf(tmp, sizeof(tmp), "%s/tmp", sc);
		cr_assert(mkdir(tmp, 0700) == 0);
	}
	snprintf(e->home, sizeof(e->home), "/root");
	if (who == ESC_USER) {
		struct passwd *pw;

		ensure_user();
		pw = getpwnam(ESC_USER_NAME);
		cr_assert(pw);
		e->uid = pw->pw_uid;
		e->gid = pw->pw_gid;
		snprintf(e->home, sizeof(e->home), "%s", pw->pw_dir);
		cr_assert(chown(wd, e->uid, e->gid) == 0);
		{
			char tmp[sizeof(sc) + 8];

			snprintf(tmp, sizeof(tmp), "%s/tmp", sc);
			cr_assert(chown(tmp, e->uid, e->gid) == 0);
		}
	}
	if (!e->control) {
		char *bin = realpath(tu_cordon(), NULL);

		cr_assert(bin, "no cordon binary at %s: run `make` first", tu_cordon());
		e->bin = bin;
		if (who == ESC_USER && !others_can_run(bin)) {
			/* The user cannot reach the build tree: run a copy it can. */
			e->bin = esc_spath(e, "cordon");
			esc_copy(bin, e->bin, 0755);
			free(bin);
		}
	}
}

void esc_setup_root(void)
{
	setup(ESC_ROOT);
}

void esc_setup_user(void)
{
	setup(ESC_USER);
}

void esc_teardown(void)
{
	struct esc *e = esc_cur;
	int left;

	if (!e)
		return;
	/* No process of the run may outlive it: every one carries ESC_TAG=<tag>. */
	left = esc_wait_gone(e, 500);
	cr_expect_eq(left, 0, "%d process(es) tagged %s outlived the run (now killed)", left,
		     e->tag);
	for (int i = n_teardown - 1; i >= 0; i--) {
		(void)!system(teardown_cmds[i]);
		free(teardown_cmds[i]);
	}
	n_teardown = 0;
	rmtree(e->wd);
	rmtree(e->scratch);
	free(e->wd);
	free(e->scratch);
	free(e->bin);
	esc_cur = NULL;
}

/* ---- running ------------------------------------------------------------------------------- */

static void vstart(struct esc_job *j, const struct esc_opts *o, const char *fmt, va_list ap)
{
	static const struct esc_opts none;
	struct esc *e = esc_cur;
	const char *argv[64], *envp[32];
	char *cmd, *tagenv, *home, *user, *logname, *tmpdir, *sock, *profile_path;
	int out[2], err[2], in[2] = { -1, -1 };
	size_t n = 0, m = 0;
	pid_t pid;

	if (!o)
		o = &none;
	memset(j, 0, sizeof(*j));
	cr_assert(vasprintf(&cmd, fmt, ap) > 0);
	cr_assert(asprintf(&tagenv, "ESC_TAG=%s", e->tag) > 0);
	cr_assert(asprintf(&home, "HOME=%s", e->home) > 0);
	cr_assert(asprintf(&user, "USER=%s", e->uid ? ESC_USER_NAME : "root") > 0);
	cr_assert(asprintf(&logname, "LOGNAME=%s", e->uid ? ESC_USER_NAME : "root") > 0);
	/* cordon's own temp dirs go to a private $TMPDIR, checked for leftovers after each run */
	cr_assert(asprintf(&tmpdir, "TMPDIR=%s/tmp", e->scratch) > 0);
	/* the direct path: never a cordond that happens to run here (unless the suite says so) */
	cr_assert(asprintf(&sock, "CORDON_SOCKET=%s",
			   getenv("CORDON_SOCKET") ? getenv("CORDON_SOCKET")
						   : "/nonexistent/cordon.sock") > 0);
	cr_assert(asprintf(&profile_path, "CORDON_PROFILE_PATH=%s",
			   getenv("CORDON_PROFILE_PATH") ? getenv("CORDON_PROFILE_PATH")
							 : CORDON_SRCDIR "/profiles") > 0);
	if (e->control) {
		argv[n++] = e->control_shell ? e->control_shell : "/bin/sh";
		argv[n++] = "-c";
		argv[n++] = cmd;
		envp[m++] = tagenv;
	} else {
		argv[n++] = e->bin;
		argv[n++] = "run";
		if (!o->no_workdir) {
			argv[n++] = "-w";
			argv[n++] = e->wd;
		}
		argv[n++] = "-e";
		argv[n++] = tagenv;
		for (size_t i = 0; o->args && o->args[i]; i++) {
			cr_assert(n < 58);
			argv[n++] = o->args[i];
		}
		argv[n++] = "--";
		argv[n++] = cmd;
	}
	argv[n] = NULL;
	envp[m++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	envp[m++] = "LANG=C.UTF-8";
	/* tests/run-all.sh stages the profiles when the tree is not reachable by other users. */
	envp[m++] = profile_path;
	envp[m++] = home;
	envp[m++] = user;
	envp[m++] = logname;
	envp[m++] = tmpdir;
	envp[m++] = sock;
	for (size_t i = 0; o->env && o->env[i]; i++) {
		cr_assert(m < 30);
		envp[m++] = o->env[i];
	}
	envp[m] = NULL;

	cr_assert(pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0);
	if (o->stdin_data)
		cr_assert(pipe2(in, O_CLOEXEC) == 0);
	fflush(NULL);
	j->t0 = now_ms();
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		if (o->ctty) {
			/* A terminal session, as when an agent's caller runs in a shell. */
			setsid();
			if (ioctl(o->pty_slave, TIOCSCTTY, 0) != 0)
				_exit(121);
			dup2(o->pty_slave, 0);
		} else {
			setpgid(0, 0);
			dup2(in[0] >= 0 ? in[0] : o->stdin_fd > 0 ? o->stdin_fd : nul, 0);
		}
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (o->pre_exec)
			o->pre_exec();
		if (e->uid) {
			if (setgroups(0, NULL) != 0 || setgid(e->gid) != 0 || setuid(e->uid) != 0)
				_exit(122);
			if (setuid(0) == 0)
				_exit(123);
		}
		if (chdir(e->wd) != 0)
			_exit(124);
		signal(SIGPIPE, SIG_DFL);
		execve(argv[0], (char *const *)argv, (char *const *)envp);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	if (in[0] >= 0) {
		close(in[0]);
		j->in = in[1];
		j->in_data = o->stdin_data;
		fcntl(in[1], F_SETFL, O_NONBLOCK);
	} else {
		j->in = -1;
	}
	j->pid = pid;
	j->out = out[0];
	j->err = err[0];
	j->kill_after = o->kill_after > 0 ? o->kill_after : 40;
	free(cmd);
	free(tagenv);
	free(home);
	free(user);
	free(logname);
	free(tmpdir);
	free(sock);
	free(profile_path);
}

void esc_start(struct esc_job *j, const struct esc_opts *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vstart(j, o, fmt, ap);
	va_end(ap);
}

static void append(char **buf, size_t *len, const char *data, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	cr_assert(*buf);
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

void esc_finish(struct esc_job *j, struct tu_run *r, void (*on_tick)(struct esc_job *, void *),
		void *arg)
{
	struct esc *e = esc_cur;
	int fds[2] = { j->out, j->err }, st = 0;
	bool exited = false, killed = false;
	double exit_at = 0;
	struct rusage ru;

	memset(r, 0, sizeof(*r));
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		struct pollfd p[3] = { { fds[0], POLLIN, 0 },
				       { fds[1], POLLIN, 0 },
				       { j->in, POLLOUT, 0 } };
		double t = now_ms();

		if (fds[0] < 0 && fds[1] < 0 && exited)
			break;
		/* Output pipes held open by an escaped process must not hang the suite. */
		if (exited && t - exit_at > 2000)
			break;
		if (!exited && !killed && t - j->t0 > j->kill_after * 1000) {
			kill(-j->pid, SIGKILL);
			kill(j->pid, SIGKILL);
			killed = true;
		}
		if (poll(p, 3, 10) < 0 && errno != EINTR)
			cr_assert_fail("poll: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			char buf[65536];
			ssize_t k;

			if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			k = read(fds[i], buf, sizeof(buf));
			if (k > 0) {
				if (i == 0)
					append(&r->out, &r->out_len, buf, (size_t)k);
				else
					append(&r->err, &r->err_len, buf, (size_t)k);
			} else if (k == 0 || errno != EINTR) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
		if (j->in >= 0 && p[2].revents) {
			size_t left = strlen(j->in_data) - j->in_off;
			ssize_t k = left ? write(j->in, j->in_data + j->in_off, left) : 0;

			if (k > 0)
				j->in_off += (size_t)k;
			if (k < 0 || j->in_off == strlen(j->in_data)) {
				close(j->in);
				j->in = -1;
			}
		}
		if (!exited && wait4(j->pid, &st, WNOHANG, &ru) == j->pid) {
			exited = true;
			exit_at = now_ms();
			e->last_maxrss_kb = ru.ru_maxrss;
			e->last_exit_ms = exit_at - j->t0;
		}
		if (on_tick && !exited)
			on_tick(j, arg);
	}
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (j->in >= 0)
		close(j->in);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->ms = now_ms() - j->t0;
	cr_expect(!killed, "the run did not end within %.0fs: the harness killed it",
		  j->kill_after);
}

void esc_host_sh(struct tu_run *r, const char *fmt, ...)
{
	struct esc *e = esc_cur;
	bool control = e->control;
	struct esc_job j;
	va_list ap;

	e->control = true;
	va_start(ap, fmt);
	vstart(&j, NULL, fmt, ap);
	va_end(ap);
	e->control = control;
	esc_finish(&j, r, NULL, NULL);
}

void esc_run(struct tu_run *r, const struct esc_opts *o, const char *fmt, ...)
{
	struct esc_job j;
	va_list ap;

	va_start(ap, fmt);
	vstart(&j, o, fmt, ap);
	va_end(ap);
	esc_finish(&j, r, NULL, NULL);
	if (!esc_cur->control && !(o && o->allow_setup_error))
		cr_expect(r->status != 125, "cordon itself failed, so the attack never ran: %s",
			  r->err);
	if (!esc_cur->control) {
		/* nothing of cordon's may be left in its $TMPDIR after a run that ended */
		char tmp[4200];
		DIR *d;
		struct dirent *de;
		int left = 0;

		snprintf(tmp, sizeof(tmp), "%s/tmp", esc_cur->scratch);
		d = opendir(tmp);
		cr_assert(d);
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				left++;
		closedir(d);
		cr_expect_eq(left, 0, "cordon left %d temp entr%s in its TMPDIR %s", left,
			     left == 1 ? "y" : "ies", tmp);
	}
	cr_log_info("[%s %s] status %d in %.0f ms\nstdout: %.2000s\nstderr: %.500s",
		    esc_cur->who == ESC_ROOT ? "root" : "user", esc_cur->tag, r->status, r->ms,
		    r->out, r->err);
}

/* ---- processes ----------------------------------------------------------------------------- */

static bool file_has(const char *path, const char *needle)
{
	size_t len;
	char *s = esc_read(path, &len);
	bool found;

	if (!s)
		return false;
	found = memmem(s, len, needle, strlen(needle)) != NULL;
	free(s);
	return found;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

int esc_survivors(const struct esc *e, pid_t *pids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	cr_assert(d);
	while ((de = readdir(d))) {
		char path[300], cwd[PATH_MAX];
		pid_t pid = atoi(de->d_name);
		ssize_t k;
		bool hit;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
		hit = file_has(path, e->tag) || file_has(path, e->wd);
		if (!hit) {
			snprintf(path, sizeof(path), "/proc/%d/environ", pid);
			hit = file_has(path, e->tag);
		}
		if (!hit) {
			snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
			k = readlink(path, cwd, sizeof(cwd) - 1);
			if (k > 0) {
				cwd[k] = '\0';
				hit = under(cwd, e->wd) || under(cwd, e->scratch);
			}
		}
		if (!hit)
			continue;
		if (pids && n < max)
			pids[n] = pid;
		n++;
	}
	closedir(d);
	return n;
}

int esc_wait_gone(const struct esc *e, int ms)
{
	double t0 = now_ms();
	pid_t pids[256];
	int n;

	while ((n = esc_survivors(e, NULL, 0)) > 0 && now_ms() - t0 < ms)
		usleep(10000);
	if (n == 0)
		return 0;
	/* Clean up what escaped, so that the machine stays usable. */
	for (int round = 0; round < 50; round++) {
		int k = esc_survivors(e, pids, 256);

		if (k == 0)
			break;
		for (int i = 0; i < k && i < 256; i++)
			kill(pids[i], SIGKILL);
		usleep(20000);
	}
	return n;
}

/* ---- shared checks ------------------------------------------------------------------------- */

void esc_expect_absent(const struct tu_run *r, const char *needle, const char *what)
{
	cr_expect(!memmem(r->out, r->out_len, needle, strlen(needle)) &&
			  !memmem(r->err, r->err_len, needle, strlen(needle)),
		  "%s: '%s' appeared in the output:\n%.3000s\nstderr: %.1000s", what, needle,
		  r->out, r->err);
}

void esc_expect_no_escape(const struct tu_run *r, const char *what)
{
	esc_expect_absent(r, "ESCAPED", what);
}

const char *esc_shadow_needle(void)
{
	static char line[512];
	char *s;

	if (line[0])
		return line;
	s = esc_read("/etc/shadow", NULL);
	cr_assert(s && *s, "cannot read /etc/shadow");
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(s, "\n"), s);
	free(s);
	return line;
}

const char *esc_host_root_marker(struct esc *e)
{
	static char path[128];

	snprintf(path, sizeof(path), "/cordon-esc-root-%s", e->tag);
	esc_write(path, e->secret, 0644, 0, 0);
	esc_on_teardown("rm -f '%s'", path);
	return path;
}

int esc_heavy_lock(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	cr_assert(fd >= 0);
	flock(fd, LOCK_EX);
	return fd;
}

void esc_heavy_unlock(int fd)
{
	flock(fd, LOCK_UN);
	close(fd);
}
