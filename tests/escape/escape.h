/* SPDX-License-Identifier: MIT */
/*
 * The escape suite's harness: every case runs a real attack through `build/cordon run` (default
 * profile) twice, once with cordon started by root and once by an ordinary user
 * (`cordon-esc`), and checks that the attack failed and that the host is untouched.
 *
 * CORDON_ESC_CONTROL=1 runs the same attacks with plain `sh -c` instead of cordon (same uid,
 * same workdir): every case must then FAIL, which shows that each attack is real and that its
 * check would catch a regression. tests/escape/README.md lists the cases.
 */
#pragma once

#include "tests/lib/testutil.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define ESC_USER_NAME "cordon-esc"

enum esc_who { ESC_ROOT, ESC_USER };

struct esc {
	enum esc_who who;
	bool control;	 /* CORDON_ESC_CONTROL=1: attacks run without cordon */
	char tag[24];	 /* unique to this test process: "esc" + hex */
	char secret[40]; /* "SECRET_" + tag: content that must never be seen */
	char *wd;	 /* the workdir passed with -w, owned by the runner */
	char *scratch;	 /* a host dir outside the workdir (secrets, sockets, links) */
	char *bin;	 /* absolute path of the cordon binary */
	uid_t uid;	 /* who runs cordon: 0, or the ordinary user */
	gid_t gid;
	char home[128];		   /* the runner's $HOME on the host */
	const char *control_shell; /* under control: the shell to run instead of /bin/sh */
	long last_maxrss_kb;
	double last_exit_ms; /* when cordon exited, relative to its start */
};

/* The state of the running test (one test per process under criterion). */
extern struct esc *esc_cur;

void esc_setup_root(void);
void esc_setup_user(void);
void esc_teardown(void);

/* Every case is two criterion tests: NAME_root and NAME_user. */
#define ESC_CASE(suite, name)                                                                      \
	static void name##_body(struct esc *e);                                                    \
	Test(suite, name##_root, .init = esc_setup_root, .fini = esc_teardown, .timeout = 120)     \
	{                                                                                          \
		name##_body(esc_cur);                                                              \
	}                                                                                          \
	Test(suite, name##_user, .init = esc_setup_user, .fini = esc_teardown, .timeout = 120)     \
	{                                                                                          \
		name##_body(esc_cur);                                                              \
	}                                                                                          \
	static void name##_body(struct esc *e)

struct esc_opts {
	const char *const *args; /* cordon options before "--" (NULL-terminated), or NULL */
	const char *const *env;	 /* extra "K=V" for cordon's own environment, or NULL */
	bool no_workdir;	 /* no -w: cordon makes (and removes) its temp workdir */
	bool ctty;		 /* cordon runs in a new session whose ctty is esc pty slave */
	int pty_slave;		 /* with ctty: the slave fd (also cordon's stdin) */
	void (*pre_exec)(void);	 /* in the child before privileges are dropped */
	double kill_after;	 /* harness safety net in seconds (default 40) */
	const char *stdin_data;	 /* fed to cordon's stdin (NULL: /dev/null unless ctty) */
	int stdin_fd;		 /* > 0: cordon's stdin, the case's own (instead of stdin_data) */
	bool allow_setup_error;	 /* exit 125 (cordon refused to set up) is an acceptable end */
};

/* A started run. */
struct esc_job {
	pid_t pid;
	int out, err;
	double t0;
	double kill_after;
	int in;
	const char *in_data;
	size_t in_off;
};

/*
 * Run `cordon run [-w wd] -e ESC_TAG=tag [args] -- CMD` (or `sh -c CMD` under control). An
 * attack "fails" trivially when nothing runs at all, so exit 125 (cordon's own failure) fails
 * the test unless the options allow it.
 */
void esc_run(struct tu_run *r, const struct esc_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void esc_start(struct esc_job *j, const struct esc_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Collect a started run. on_tick (may be NULL) is called about every 10 ms while it runs. */
void esc_finish(struct esc_job *j, struct tu_run *r, void (*on_tick)(struct esc_job *, void *),
		void *arg);

/* The static helper program copied into the workdir as ./h (mode 0755, runner-owned). */
void esc_put_helper(struct esc *e);
/* Path of the built helper on the host (built on first use). */
const char *esc_helper_path(void);

/* Files on the host. */
void esc_write(const char *path, const char *content, mode_t mode, uid_t uid, gid_t gid);
char *esc_read(const char *path, size_t *len); /* NULL if unreadable */
bool esc_exists(const char *path);
void esc_copy(const char *from, const char *to, mode_t mode);
/* A path under the workdir / the scratch dir (malloc'd). */
char *esc_wpath(const struct esc *e, const char *name);
char *esc_spath(const struct esc *e, const char *name);
/* Chown to the runner (no-op for root). */
void esc_own(const struct esc *e, const char *path);

/* Teardown actions run as root, in reverse order (shell commands). */
void esc_on_teardown(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Run `sh -c CMD` on the host as the runner (root or the user), in the workdir: no cordon. */
void esc_host_sh(struct tu_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Processes of this test's runs still alive on the host: those with the tag or the workdir's
 * path in their cmdline, the tag in their environ (every run gets ESC_TAG=<tag>), or whose cwd
 * is in the workdir or scratch dir (daemons that cleared their environment). Excludes this
 * process; call it when no cordon of this test is running (cordon's argv names the workdir).
 */
int esc_survivors(const struct esc *e, pid_t *pids, int max);
/* Wait up to ms for no survivor to be left; returns how many were left (then killed). */
int esc_wait_gone(const struct esc *e, int ms);

/* Assertions shared by many cases. */
void esc_expect_absent(const struct tu_run *r, const char *needle, const char *what);
void esc_expect_no_escape(const struct tu_run *r, const char *what);

/* The first line of /etc/shadow (what must never be read), never empty. */
const char *esc_shadow_needle(void);
/* Create "/cordon-esc-root-<tag>" on the host (content: the secret); returns its path. */
const char *esc_host_root_marker(struct esc *e);

/* Flock on the test binary: serialises the heavy cases (memory, disk) across processes. */
int esc_heavy_lock(void);
void esc_heavy_unlock(int fd);
