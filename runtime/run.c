/* SPDX-License-Identifier: MIT */
/*
 * cordon_run(): the front door. Prepare the workdir, ask the policy, build the command's argv
 * and environment, hand it to the backend, clean up. Nothing here prints.
 */
#define _GNU_SOURCE
#include <cordon/cordon.h>

#include "backends/backend.h"
#include "policy/policy.h"
#include "runtime/capture.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"
#include "runtime/asuser.h"
#include "runtime/resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The policy check of a command on the host, its path resolutions within one budget
 * (runtime/resolve.h: a planted chain of links must not turn a long command into hours).
 */
static int policy_check_host(const struct cordon_profile *p, const char *command,
			     const char *workdir, char **ret_deny, cordon_error *e)
{
	int r;

	/*
	 * A remote backend's (docker, daytona) paths are judged lexically against /workspace,
	 * whatever its real workdir, as AG2 does (PurePosixPath("/workspace"): docs/compat.md).
	 * Found in review: they were resolved on the host, so `cat /workspace/x` was refused
	 * and refusals named host paths.
	 */
	if (p->backend && strcmp(p->backend, "local") != 0)
		return policy_check_ex(p, command, "/workspace", policy_resolve_lexical,
				       getenv("HOME"), ret_deny, e);
	resolve_budget_begin(RESOLVE_CHECK_BUDGET);
	r = policy_check_ex(p, command, workdir, resolve_host, getenv("HOME"), ret_deny, e);
	resolve_budget_end();
	return r;
}

struct policy_args {
	const struct cordon_profile *p;
	const char *command, *workdir;
	char **ret_deny;
};

static int policy_check_fn(void *arg, cordon_error *e)
{
	struct policy_args *a = arg;

	return policy_check_host(a->p, a->command, a->workdir, a->ret_deny, e);
}

/*
 * The policy check of a run on someone's behalf (run_as: cordond's member) is made with their
 * file-system identity: the paths the command names are resolved (lstat, readlink) with the
 * caller's rights, as their own direct run would resolve them. As root, a refusal named the
 * target of any symlink, in directories the caller may not search, and of /proc/<pid>/fd/N of
 * any process (found in review).
 */
static int policy_check_request(const struct cordon_request *rq, const char *workdir,
				char **ret_deny, cordon_error *e)
{
	struct policy_args a = { rq->profile, rq->command, workdir, ret_deny };

	if (!rq->run_as)
		return policy_check_fn(&a, e);
	return asuser_call(rq->uid, rq->gid, rq->groups, rq->ngroups, policy_check_fn, &a, e);
}

extern char **environ;

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* The variables a scrubbed environment keeps from the caller's (SPEC §4 env_inherit). */
static const char *const kept_vars[] = { "PATH", "HOME", "LANG", "TERM" };

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static void strv_freep(char ***v)
{
	strv_free(*v);
}

/* Set KEY=VALUE in the vector, replacing an existing KEY. */
static int env_set(char ***envp, size_t *n, const char *kv, cordon_error *e)
{
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) : strlen(kv);
	char *dup = strdup(kv);
	char **v;

	if (!dup)
		return cordon_err(e, ENOMEM, "out of memory");
	for (size_t i = 0; i < *n; i++)
		if (!strncmp((*envp)[i], kv, klen) && (*envp)[i][klen] == '=') {
			free((*envp)[i]);
			(*envp)[i] = dup;
			return 0;
		}
	v = realloc(*envp, (*n + 2) * sizeof(*v));
	if (!v) {
		free(dup);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	v[(*n)++] = dup;
	v[*n] = NULL;
	*envp = v;
	return 0;
}

/*
 * AG2 hands the whole environment to the command ({**os.environ, **extra}). cordon passes only
 * PATH, HOME, LANG and TERM plus the profile's env unless env_inherit is set: API keys in the
 * caller's environment are the first thing a prompt-injected agent would print.
 */
static int build_env(const struct cordon_profile *p, char ***ret, cordon_error *e)
{
	_cleanup_(strv_freep) char **envp = calloc(1, sizeof(char *));
	size_t n = 0;

	if (!envp)
		return cordon_err(e, ENOMEM, "out of memory");
	if (p->env_inherit) {
		for (char **v = environ; v && *v; v++)
			if (strchr(*v, '=') && env_set(&envp, &n, *v, e) < 0)
				return -1;
	} else {
		for (size_t i = 0; i < ARRAY_SIZE(kept_vars); i++) {
			const char *val = getenv(kept_vars[i]);
			_cleanup_free_ char *kv = NULL;

			if (!val && strcmp(kept_vars[i], "PATH") == 0)
				val = DEFAULT_PATH;
			if (!val)
				continue;
			if (asprintf(&kv, "%s=%s", kept_vars[i], val) < 0) {
				kv = NULL;
				return cordon_err(e, ENOMEM, "out of memory");
			}
			if (env_set(&envp, &n, kv, e) < 0)
				return -1;
		}
	}
	for (size_t i = 0; i < p->env.n; i++)
		if (env_set(&envp, &n, p->env.v[i], e) < 0)
			return -1;
	*ret = TAKE_PTR(envp);
	return 0;
}

/*
 * The workdir as AG2 treats it: Path(path).resolve(), created with parents. The result must
 * be a directory cordon can use; anything else is a setup error, before anything runs.
 * Without create (cordon check), every check but the making is done, with the same errors:
 * a missing workdir is the path the run would make (whether making it would work, a
 * read-only file system say, only making it tells).
 */
/* A directory the local sandbox builds itself is refused before anything is made for it. */
static int local_workdir_ok(const char *abs, const char *given, cordon_error *e)
{
	if (backend_local_workdir_ok(abs))
		return 0;
	return strcmp(abs, given) == 0
		       ? cordon_err(e, 0, "workdir '%s': " BACKEND_LOCAL_WORKDIR_RULE, given)
		       : cordon_err(e, EINVAL,
				    "workdir '%s' is '%s', which " BACKEND_LOCAL_WORKDIR_RULE,
				    given, abs);
}

/*
 * local: the run is the local sandbox's, which builds /, /tmp, /proc and /dev itself: such a
 * workdir is refused before anything is made (it was made, then refused by the sandbox).
 */
static int prepare_workdir(const char *given, bool create, bool local, char **ret, int *ret_fd,
			   cordon_error *e)
{
	_cleanup_free_ char *abs = NULL;
	_cleanup_close_ int fd = -1;
	char cwd[PATH_MAX];
	struct stat st;
	bool exists;
	int r;

	*ret_fd = -1;
	if (!*given)
		return cordon_err(e, 0, "workdir: empty path");
	if (!getcwd(cwd, sizeof(cwd)))
		return cordon_err(e, errno, "workdir: getcwd");
	if (geteuid() == 0) {
		/*
		 * As root: no symlink on the way (fsutil_walk_nofollow), made if missing. Without
		 * symlinks, Path.resolve() is the normalised path itself: no second walk, and
		 * nothing left to make.
		 */
		_cleanup_free_ char *joined = NULL;

		if (given[0] == '/' ? !(joined = strdup(given))
				    : asprintf(&joined, "%s/%s", cwd, given) < 0) {
			joined = NULL;
			return cordon_err(e, ENOMEM, "out of memory");
		}
		if (pypath_normpath(joined, &abs, e) < 0)
			return -1;
		if (local && local_workdir_ok(abs, given, e) < 0)
			return -1;
		if (fsutil_walk_nofollow(abs, create, &fd, e) < 0)
			return cordon_err_prefix(e, "workdir");
		/*
		 * The directory walked to is the one the run gets (the sandbox mounts it): the
		 * path is not walked again, by anyone.
		 */
		if (fd >= 0) {
			if (faccessat(fd, "", R_OK | W_OK | X_OK, AT_EMPTY_PATH) < 0)
				return cordon_err(e, errno, "workdir '%s'", given);
			*ret = TAKE_PTR(abs);
			*ret_fd = TAKE_FD(fd);
			return 0;
		}
	} else {
		r = resolve_host(cwd, given, &abs, e);
		if (r < 0)
			return -1;
		if (r > 0)
			return cordon_err(e, ELOOP, "workdir '%s'", given);
		if (local && local_workdir_ok(abs, given, e) < 0)
			return -1;
	}
	exists = stat(abs, &st) == 0;
	if (exists && !S_ISDIR(st.st_mode))
		return cordon_err(e, ENOTDIR, "workdir '%s'", given);
	if (!exists && errno != ENOENT)
		return cordon_err(e, errno, "workdir '%s'", given);
	if (!exists && create && fsutil_mkdir_p(abs, e) < 0)
		return cordon_err_prefix(e, "workdir");
	if ((exists || create) && access(abs, R_OK | W_OK | X_OK) < 0)
		return cordon_err(e, errno, "workdir '%s'", given);
	*ret = TAKE_PTR(abs);
	return 0;
}

/*
 * A workdir the caller already opened: its name is what the fd is (the caller checked it; a
 * path walked again here could name something else by now), and nothing is created. One
 * removed since it was opened (a session's, deleted under it) has no name: *ret_gone is set
 * and *ret is the name it was opened by, for AG2's answer to a missing cwd (gone_result).
 */
static int workdir_of_fd(int fd, const char *given, char **ret, bool *ret_gone, cordon_error *e)
{
	char proc[64], buf[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return cordon_err(e, errno, "workdir '%s'", given);
	if (!S_ISDIR(st.st_mode))
		return cordon_err(e, ENOTDIR, "workdir '%s'", given);
	if (st.st_nlink == 0) {
		*ret_gone = true;
		*ret = strdup(given);
		return *ret ? 0 : cordon_err(e, ENOMEM, "out of memory");
	}
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '/')
		return cordon_err(e, n < 0 ? errno : ENOENT, "workdir '%s': cannot name it", given);
	buf[n] = '\0';
	*ret = strdup(buf);
	return *ret ? 0 : cordon_err(e, ENOMEM, "out of memory");
}

/*
 * The name of a temp workdir that exists only inside the sandbox (a tmpfs there, the
 * backend's temp_workdir_inside): /tmp/cordon-XXXXXX, as mkdtemp would name one, in the
 * sandbox's own /tmp, and nothing on the host. Making (mkdir, lock, mark) and removing a
 * directory on the host for every run cost about 0.25 ms of each (issue 15); the name only
 * has to look like the usual one, since no other run shares that /tmp.
 */
static int name_inside_workdir(char **ret, cordon_error *e)
{
	static const char chars[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[6];
	char name[sizeof("/tmp/cordon-XXXXXX")] = "/tmp/cordon-";

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return cordon_err(e, errno, "workdir: getrandom");
	for (size_t i = 0; i < sizeof(rnd); i++)
		name[12 + i] = chars[rnd[i] % (sizeof(chars) - 1)];
	name[12 + sizeof(rnd)] = '\0';
	*ret = strdup(name);
	return *ret ? 0 : cordon_err(e, ENOMEM, "out of memory");
}

/* $TMPDIR/cordon-XXXXXX (mkdtemp's convention), else /tmp. */
static int make_temp_workdir(char **ret, int *ret_hold, cordon_error *e)
{
	const char *base = getenv("TMPDIR");
	_cleanup_free_ char *tmpl = NULL;

	if (!base || base[0] != '/' || strlen(base) > PATH_MAX - 32)
		base = "/tmp";
	if (asprintf(&tmpl, "%s/cordon-XXXXXX", base) < 0) {
		tmpl = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	/*
	 * First the temp workdirs of runs whose cordon was killed (SIGKILL leaves no one to
	 * remove them): marked, held by nobody, a minute old, and ours (fsutil.h: as root, also
	 * those of nobody, the identity a root run's temp workdir is given): another user's
	 * marked directory in a shared $TMPDIR is left to that user or to cordond's start.
	 */
	(void)fsutil_temp_sweep(base, "cordon-", 60, 65534);
	/*
	 * mkdtemp's name, but made already marked (sticky, fsutil_temp_hold): a cordon killed
	 * between mkdtemp's plain 0700 directory and the mark left one the sweep never removes
	 * (found in review: 17 of 400 SIGKILLed --keep runs).
	 */
	if (fsutil_mkdtemp_marked(tmpl) < 0)
		return cordon_err(e, errno, "workdir: mkdir %s", tmpl);
	*ret_hold = fsutil_temp_hold(tmpl, e);
	if (*ret_hold < 0) {
		(void)rmdir(tmpl);
		return cordon_err_prefix(e, "workdir");
	}
	{
		/* Named without symlinks (a $TMPDIR that is one): as root, the backends follow
		 * none on the way to a workdir. It is ours, made just now. */
		char *real = realpath(tmpl, NULL);

		if (real) {
			free(tmpl);
			tmpl = real;
		}
	}
	*ret = TAKE_PTR(tmpl);
	return 0;
}

/*
 * --stdin: the command gets a pipe, fed by a child of ours that reads the caller's stdin,
 * never the caller's own fd. From a terminal, the command could change it for good
 * (tcsetattr: no echo, no ^C; TIOCEXCL; O_NONBLOCK on the shared file description), which no
 * seccomp rule can fully stop (found in review). From anything (a pipe, a socket, a file), it
 * could send the fd with SCM_RIGHTS to a process of another run in a shared workdir, which
 * then reads the caller's input after the answer, or writes into a socket, or keeps a live
 * view of the file (found in red team; escape test escape_daemons/stdin_passed_to_another_run).
 * The child dies with the run (stdin_relay_end) or with us (PDEATHSIG); what it read that the
 * command did not is lost, as with any relay, and a file's offset is the relay's. Returns the
 * pipe's read end, or -1 with *e.
 */
static int stdin_relay_start(int in, pid_t *ret_pid, cordon_error *e)
{
	int p[2];
	pid_t pid, self = getpid();

	if (pipe2(p, O_CLOEXEC) < 0)
		return cordon_err(e, errno, "stdin: pipe");
	pid = fork();
	if (pid < 0) {
		int err = errno;

		(void)close(p[0]);
		(void)close(p[1]);
		return cordon_err(e, err, "stdin: fork");
	}
	if (pid == 0) {
		static char buf[65536];

		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != self)
			_exit(0); /* we died before the prctl: nobody would end the relay */
		(void)signal(SIGPIPE, SIG_DFL);
		(void)close(p[0]);
		for (;;) {
			ssize_t n = read(in, buf, sizeof(buf));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || fsutil_write_all(p[1], buf, (size_t)n) < 0)
				_exit(0);
		}
	}
	(void)close(p[1]);
	*ret_pid = pid;
	return p[0];
}

static void stdin_relay_end(pid_t pid, int fd)
{
	if (fd >= 0)
		(void)close(fd);
	if (pid > 0) {
		(void)kill(pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
	}
}

static int validate_request(const struct cordon_request *rq, cordon_error *e)
{
	if (!rq->profile)
		return cordon_err(e, 0, "no profile");
	if (!rq->command && !rq->argv)
		return cordon_err(e, 0, "no command");
	if (rq->command && rq->command[strspn(rq->command, " \t\n")] == '\0')
		return cordon_err(e, 0, "empty command");
	if (rq->argv && !rq->argv[0])
		return cordon_err(e, 0, "empty argv");
	/*
	 * The policy judges `command` only: an argv alone ran with no check at all, whatever the
	 * profile's lists (red team). cordond gives both (the script of sh -c, else the argv
	 * joined with shell quoting).
	 */
	if (rq->argv && !rq->command)
		return cordon_err(e, 0, "argv without the command the policy judges");
	if (!backend_lookup(rq->profile->backend))
		return cordon_err(e, 0, "unknown backend '%s'", rq->profile->backend);
	return 0;
}

int cordon_check(const struct cordon_request *rq, char **ret_refusal, cordon_error *e)
{
	_cleanup_free_ char *wd = NULL;
	_cleanup_close_ int wd_fd = -1;
	char cwd[PATH_MAX];
	int r;

	if (validate_request(rq, e) < 0)
		return -1;
	/*
	 * Judge relative tokens against the directory the run would use, checked as the run
	 * checks it (a workdir the run refuses is refused here with the same error); create
	 * nothing.
	 */
	if (rq->workdir)
		return prepare_workdir(rq->workdir, false,
				       backend_lookup(rq->profile->backend) == &backend_local, &wd,
				       &wd_fd, e) < 0
			       ? -1
			       : policy_check_request(rq, wd, ret_refusal, e);
	if (!getcwd(cwd, sizeof(cwd)))
		return cordon_err(e, errno, "getcwd");
	r = resolve_host(cwd, "/tmp/cordon-check", &wd, e);
	if (r < 0)
		return -1;
	if (r > 0)
		return cordon_err(e, ELOOP, "workdir '/tmp/cordon-check'");
	return policy_check_request(rq, wd, ret_refusal, e);
}

static int set_str(char **dst, const char *s, cordon_error *e)
{
	*dst = strdup(s ? s : "");
	return *dst ? 0 : cordon_err(e, ENOMEM, "out of memory");
}

struct cordon_teardown {
	const struct cordon_backend_ops *ops;
	void *pending; /* the backend's: its processes, not yet reaped */
	char *workdir; /* a temp workdir to remove, or NULL */
	int hold;      /* its fsutil_temp_hold fd, or -1 */
};

int cordon_teardown_finish(struct cordon_teardown *t, cordon_error *e)
{
	int rc = 0;

	if (!t)
		return 0;
	/* The sandbox first: nothing of the run may still write while its workdir goes. */
	if (t->pending)
		t->ops->finish(t->pending);
	/* Given to nobody (Docker), it is nobody's to empty (fsutil_rmtree_owned). */
	if (t->workdir && fsutil_rmtree_owned(t->workdir, e) < 0)
		rc = -1;
	fsutil_temp_release(t->hold, false);
	free(t->workdir);
	free(t);
	return rc;
}

/*
 * What is left of a run that gave a result: handed to the caller when it asked for that
 * (rq->teardown) and this much memory can be had, else done now. True when handed over.
 */
static bool hand_over_teardown(const struct cordon_request *rq,
			       const struct cordon_backend_ops *ops, void **pending,
			       const char *temp_workdir, int *hold)
{
	struct cordon_teardown *t;

	if (!rq->teardown || (!*pending && !temp_workdir))
		return false;
	t = calloc(1, sizeof(*t));
	if (!t)
		return false;
	if (temp_workdir && !(t->workdir = strdup(temp_workdir))) {
		free(t);
		return false;
	}
	t->ops = ops;
	t->pending = TAKE_PTR(*pending);
	t->hold = temp_workdir ? *hold : -1;
	if (temp_workdir)
		*hold = -1;
	*rq->teardown = t;
	return true;
}

/*
 * AG2's LocalSandbox when its workdir is gone: subprocess.run(cwd=<its Path>) raises
 * FileNotFoundError, and the result is "Command not found: " + str(exc) with exit 127, the
 * Path shown as Python 3.11 shows it (ag2-behaviour.md §3.5).
 */
static int gone_result(const char *workdir, struct cordon_result *r, cordon_error *e)
{
	_cleanup_free_ char *text = NULL, *quoted = NULL;
	int len;

	if (pyrepr(workdir, &quoted, e) < 0)
		return -1;
	len = asprintf(&text, "Command not found: [Errno %d] %s: PosixPath(%s)", ENOENT,
		       strerror(ENOENT), quoted);
	if (len < 0) {
		text = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	r->exit_code = r->status = 127;
	if (output_format(text, (size_t)len, 127, &r->output, &r->output_len, e) < 0 ||
	    set_str(&r->stdout_text, "", e) < 0 || set_str(&r->stderr_text, "", e) < 0)
		return -1;
	return 0;
}

static int refusal_result(char *msg, struct cordon_result *r, cordon_error *e)
{
	r->output_len = strlen(msg);
	r->refused = msg;
	r->exit_code = CORDON_EXIT_REFUSED;
	r->status = CORDON_EXIT_REFUSED;
	if (set_str(&r->output, msg, e) < 0 || set_str(&r->stdout_text, "", e) < 0 ||
	    set_str(&r->stderr_text, "", e) < 0)
		return -1;
	return 0;
}

int cordon_run(const struct cordon_request *rq, struct cordon_result *ret, cordon_error *e)
{
	const struct cordon_profile *p = rq->profile;
	const struct cordon_backend_ops *ops;
	struct cordon_result r = { .peak_memory_bytes = -1 };
	_cleanup_free_ char *workdir = NULL, *deny = NULL;
	_cleanup_(strv_freep) char **envp = NULL;
	char **split = NULL;
	char *shell_argv[] = { "sh", "-c", (char *)rq->command, NULL };
	char *const *argv = rq->argv ? rq->argv : shell_argv;
	bool temp = !rq->workdir, inside = false, gone = false;
	void *h = NULL, *pending = NULL;
	int rc = -1, hold = -1, relay_fd = -1;
	_cleanup_close_ int wd_fd = -1; /* the workdir as prepare_workdir walked to it */
	pid_t relay_pid = 0;

	if (rq->teardown)
		*rq->teardown = NULL;
	if (validate_request(rq, e) < 0)
		return -1;
	ops = backend_lookup(p->backend);
	inside = temp && !rq->keep && ops->temp_workdir_inside;
	if (inside		  ? name_inside_workdir(&workdir, e)
	    : temp		  ? make_temp_workdir(&workdir, &hold, e)
	    : rq->workdir_fd >= 0 ? workdir_of_fd(rq->workdir_fd, rq->workdir, &workdir, &gone, e)
				  : prepare_workdir(rq->workdir, true, ops == &backend_local,
						    &workdir, &wd_fd, e))
		return -1;
	/* From here, `temp` means a temp directory on the host, to remove. */
	if (inside)
		temp = false;

	if (set_str(&r.backend, ops->name, e) < 0 || set_str(&r.workdir, workdir, e) < 0)
		goto out;
	if (rq->command) {
		if (policy_check_request(rq, workdir, &deny, e) < 0)
			goto out;
		if (deny) {
			rc = refusal_result(TAKE_PTR(deny), &r, e);
			goto out;
		}
		if (policy_uses_argv(p)) {
			const char *why = NULL;
			int s = policy_split(rq->command, &split, &why, e);

			if (s < 0)
				goto out;
			if (s > 0) { /* the policy refuses unsplittable commands before this */
				cordon_err(e, 0, "cannot split command: %s", why);
				goto out;
			}
			argv = split;
		}
	}
	/* The local backend runs in the directory itself; a container's is its own mount. */
	if (gone && !rq->backend_handle && !rq->open_backend) {
		rc = gone_result(workdir, &r, e);
		goto out;
	}
	if (build_env(p, &envp, e) < 0)
		goto out;
	if (!argv[0]) {
		/* AG2: an empty argv gives ExecResult("", 2) in every backend. */
		r.exit_code = r.status = 2;
		if (set_str(&r.output, "[exit code: 2]", e) < 0 ||
		    set_str(&r.stdout_text, "", e) < 0 || set_str(&r.stderr_text, "", e) < 0)
			goto out;
		r.output_len = strlen(r.output);
		rc = 0;
		goto out;
	}
	if (rq->pass_stdin && (relay_fd = stdin_relay_start(rq->stdin_fd, &relay_pid, e)) < 0)
		goto out;

	struct cordon_exec x = {
		.argv = argv,
		.envp = envp,
		.workdir = workdir,
		.workdir_fd = temp || inside	    ? -1
			      : rq->workdir_fd >= 0 ? rq->workdir_fd
						    : wd_fd,
		.workdir_is_temp = temp || inside,
		.workdir_tmpfs = inside,
		.profile = p,
		.stdin_fd = relay_fd,
		.run_as = rq->run_as,
		.set_umask = rq->set_umask,
		.umask = rq->umask,
		.uid = rq->uid,
		.gid = rq->gid,
		.groups = rq->groups,
		.ngroups = rq->ngroups,
		.cancel = rq->cancel,
		.ret_pending = rq->teardown ? &pending : NULL,
	};
	if (rq->backend_handle || rq->open_backend) {
		void *bh = rq->backend_handle;

		if (!bh && rq->open_backend(rq->open_backend_arg, &bh, e) < 0)
			goto out;
		rc = ops->exec(bh, &x, &r, e);
	} else {
		/* A signal to cordon cuts a hung Engine API call short (backends/http.c). */
		const struct cordon_open o = {
			.profile = p,
			.workdir = workdir,
			.workdir_fd = x.workdir_fd,
			.cancel = rq->cancel,
			.workdir_is_temp = x.workdir_is_temp,
		};

		if (ops->open(&o, &h, e) < 0)
			goto out;
		rc = ops->exec(h, &x, &r, e);
		ops->close(h);
	}
out:
	stdin_relay_end(relay_pid, relay_fd);
	policy_strv_free(split);
	if (rc == 0 &&
	    hand_over_teardown(rq, ops, &pending, temp && !rq->keep ? workdir : NULL, &hold))
		temp = false; /* the caller's now */
	if (pending)
		ops->finish(pending);
	if (temp && !rq->keep) {
		cordon_error e2;

		/*
		 * A removal that fails (fsutil_rmtree removes any depth, so only something like
		 * a mount in the tree makes it fail) never costs the run its result, nor hides
		 * the run's own error: what is left is swept by a later run (cordon_sweep_temp).
		 * A temp workdir given to nobody (Docker) is removed with nobody's rights: any
		 * process of nobody's may have moved another user's tree into it (red team).
		 */
		(void)fsutil_rmtree_owned(workdir, &e2);
	}
	/* A kept temp workdir loses its mark: no sweep may take it. */
	fsutil_temp_release(hold, rq->keep);
	if (rc < 0) {
		cordon_result_free(&r);
		return -1;
	}
	*ret = r;
	return 0;
}
