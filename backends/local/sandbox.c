/* SPDX-License-Identifier: MIT */
/*
 * The namespace sandbox behind proc.h: the parent side. It prepares everything the child will
 * need (identity, the checked ro_bind list, what to hide in the workdir, the environment's
 * PATH, the seccomp program, the run's cgroup), clones the child into new namespaces, attaches
 * the child to the cgroup while the child builds its root, and reads the child's report
 * until the command's execve closes it. Then it kills, reaps and accounts the run.
 *
 * The handshake (crun's and nsjail's idiom):
 *   report  socketpair(SOCK_SEQPACKET | SOCK_CLOEXEC). The child sends {step, errno, detail}
 *           on a failure (and timestamps with CORDON_TRACE_SETUP=1); the parent reads until
 *           EOF. EOF with no error means execve succeeded: the last holder of the child's end
 *           is the command, and close-on-exec closed it.
 *   go      a stream socketpair with two gates: the first lets the child build its root,
 *           the second, sent once the parent has made the run's cgroup and moved the child
 *           into it (meanwhile), lets it go on to the command; as root, it also carries the
 *           run's network namespace, which the parent made meanwhile too (SCM_RIGHTS). A dead
 *           parent reads as EOF.
 *   status  a pipe from the sandbox's init: the command's exact wait status.
 * Setup errors thus travel as data and are never printed into the command's output.
 */
#define _GNU_SOURCE
#include "backends/backend.h"
#include "backends/local/cgroup.h"
#include "backends/local/doctor.h"
#include "backends/local/cpus.h"
#include "runtime/asuser.h"
#include "runtime/fsutil.h"
#include "backends/local/idmap.h"
#include "backends/local/landlock.h"
#include "backends/local/prebuilt.h"
#include "backends/local/proc.h"
#include "backends/local/sandbox.h"
#include "backends/local/stage.h"
#include "backends/local/seccomp.h"
#include "backends/local/setid.h"
#include "backends/local/shfast.h"
#include "policy/policy.h"
#include "runtime/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* glibc's execvp() default when the environment has no PATH. */
#define SB_DEFAULT_PATH "/bin:/usr/bin"

struct local_proc {
	pid_t pid; /* the sandbox's init, our direct child */
	int pidfd;
	int status_fd; /* read end: the command's wait status from init */
	struct cgroup_run *cg;
	bool reaped;
	int wstatus;
	struct rusage ru;
	bool have_status; /* the command's status, already read from status_fd */
	int status;
	/* Placeholders of absent masked names (hide.c), removed once the sandbox is gone. */
	int wd_fd;
	struct sb_placeholder *ph;
	size_t nph;
	/* CORDON_TRACE_SETUP: the teardown's steps are traced too, on the start's clock. */
	bool trace;
	double t0;
};

static const char *const step_names[SB_STEP__MAX] = {
	[SB_STEP_NONE] = "setup",
	[SB_STEP_START] = "started",
	[SB_STEP_GATE] = "gate",
	[SB_STEP_NETNS] = "enter the network namespace",
	[SB_STEP_GATE2] = "second gate",
	[SB_STEP_CGROUP_JOIN] = "join the run's cgroup",
	[SB_STEP_USERNS] = "user namespace map",
	[SB_STEP_PRIVATE] = "make mounts private",
	[SB_STEP_OPEN_WORKDIR] = "open workdir",
	[SB_STEP_RO_BIND] = "ro_bind",
	[SB_STEP_DEV_NODE] = "bind device",
	[SB_STEP_NEW_TMPFS] = "mount tmpfs",
	[SB_STEP_PROC] = "mount /proc",
	[SB_STEP_PIVOT] = "pivot_root",
	[SB_STEP_ROOT_LAYOUT] = "mount ro_bind",
	[SB_STEP_TMP] = "mount /tmp",
	[SB_STEP_DEV] = "mount /dev",
	[SB_STEP_PROC_MASK] = "mask /proc",
	[SB_STEP_WORKDIR] = "bind workdir",
	[SB_STEP_HIDE] = "hide",
	[SB_STEP_PROTECT] = "protect a privileged program",
	[SB_STEP_ROOT_RO] = "remount / read-only",
	[SB_STEP_CHDIR] = "chdir workdir",
	[SB_STEP_HOSTNAME] = "sethostname",
	[SB_STEP_LOOPBACK] = "bring up lo",
	[SB_STEP_CGROUPNS] = "cgroup namespace",
	[SB_STEP_RLIMITS] = "rlimits",
	[SB_STEP_CAPS] = "drop capabilities",
	[SB_STEP_IDENTITY] = "set identity",
	[SB_STEP_NO_NEW_PRIVS] = "no_new_privs",
	[SB_STEP_LANDLOCK] = "landlock",
	[SB_STEP_SECCOMP] = "seccomp",
	[SB_STEP_FORK] = "fork command",
	[SB_STEP_STDIO] = "stdio",
	[SB_STEP_EXEC] = "exec",
};

const char *sb_step_name(int step)
{
	if (step < 0 || step >= SB_STEP__MAX || !step_names[step])
		return "setup";
	return step_names[step];
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool list_has(const struct cordon_list *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

/* Everything the parent allocates for one start; freed whatever happens. */
struct prep {
	struct sb_plan pl;
	struct sb_bind *binds;
	size_t nbinds;
	struct sb_hide_list hides;
	struct sock_fprog *bpf;
	char *lookup_path;
	char **fast_argv; /* shfast: the script's words, dash's environment, "PWD=<workdir>" */
	char **fast_envp;
	char *fast_pwd_cwd;
	char workdir[PATH_MAX];
	int wd_fd;
	int wd_tree;	     /* root: the workdir's detached, flagged mount tree */
	bool idmap;	     /* root, root-owned workdir: idmap it to the command's uid */
	bool idmap_fallback; /* ...but its file system cannot be idmapped: bound as it is */
	uid_t disk_uid;	     /* with idmap: the workdir's owner on the disk */
	gid_t disk_gid;
	/* The idmap's helper process, killed but reaped only before clone (idmap.h). */
	struct idmap_helper idh;
	int rep[2], go[2], status[2];
	struct cgroup_run *cg;
	bool trace;
	double t0;
};

/* A struct prep with no fd open yet (prep_free closes what is >= 0). */
static void prep_init(struct prep *x)
{
	*x = (struct prep){ .pl.netns_fd = -1, .wd_fd = -1, .wd_tree = -1 };
	x->rep[0] = x->rep[1] = x->go[0] = x->go[1] = x->status[0] = x->status[1] = -1;
}

static void fd_close(int *fd)
{
	closep(fd);
	*fd = -1;
}

static void prep_free(struct prep *x)
{
	idmap_helper_reap(&x->idh);
	for (size_t i = 0; i < x->nbinds; i++)
		free(x->binds[i].link);
	free(x->binds);
	/* Still here: the sandbox never ran, or is gone already (reaped before prep_free). */
	hide_placeholders_remove(x->wd_fd, x->hides.ph, x->hides.nph);
	x->hides.ph = NULL;
	x->hides.nph = 0;
	hide_list_free(&x->hides);
	seccomp_prog_free(x->bpf);
	free(x->lookup_path);
	shfast_strv_free(x->fast_argv, true);
	shfast_strv_free(x->fast_envp, false);
	free(x->fast_pwd_cwd);
	closep(&x->wd_fd);
	closep(&x->wd_tree);
	closep(&x->pl.netns_fd);
	for (int i = 0; i < 2; i++) {
		closep(&x->rep[i]);
		closep(&x->go[i]);
		closep(&x->status[i]);
	}
	cgroup_run_destroy(x->cg);
}

static void trace_line(const struct prep *x, const char *what, double t)
{
	if (x->trace)
		fprintf(stderr, "cordon: setup %8.3f ms  %s\n", t - x->t0, what);
}

/*
 * On merged-/usr systems these are symlinks into /usr; on some architectures some of them do
 * not exist at all. A profile can list them all without failing on such a host.
 */
static bool optional_system_dir(const char *path)
{
	static const char *const v[] = { "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32" };

	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		if (strcmp(path, v[i]) == 0)
			return true;
	return false;
}

/* A path the sandbox builds itself, or that would replace the root. */
static bool reserved_path(const char *path)
{
	static const char *const v[] = { "/proc", "/dev", "/tmp" };

	if (strcmp(path, "/") == 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		size_t n = strlen(v[i]);

		if (strncmp(path, v[i], n) == 0 && (path[n] == '\0' || path[n] == '/'))
			return true;
	}
	return false;
}

bool backend_local_workdir_ok(const char *path)
{
	return !reserved_path(path) || strncmp(path, "/tmp/", 5) == 0;
}

static int prep_binds(struct prep *x, const struct cordon_profile *p, cordon_error *e)
{
	const struct cordon_list *l = &p->ro_bind;

	x->binds = calloc(l->n + 1, sizeof(*x->binds));
	if (!x->binds)
		return cordon_err(e, ENOMEM, "out of memory");
	for (size_t i = 0; i < l->n; i++) {
		const char *path = l->v[i];
		struct sb_bind *b = &x->binds[x->nbinds];
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./") ||
		    (strlen(path) >= 3 && strcmp(path + strlen(path) - 3, "/..") == 0))
			return cordon_err(e, EINVAL, "sandbox: ro_bind '%s': not an absolute path",
					  path);
		if (reserved_path(path))
			return cordon_err(
				e, EINVAL,
				"sandbox: ro_bind '%s': the sandbox builds this path itself", path);
		if (lstat(path, &st) < 0) {
			if (errno == ENOENT && optional_system_dir(path))
				continue;
			return cordon_err(e, errno, "sandbox: ro_bind '%s'", path);
		}
		b->path = path;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(path, target, sizeof(target) - 1);
			if (n < 0)
				return cordon_err(e, errno, "sandbox: ro_bind '%s'", path);
			target[n] = '\0';
			b->link = strdup(target);
			if (!b->link)
				return cordon_err(e, ENOMEM, "out of memory");
		}
		b->dir = S_ISDIR(st.st_mode);
		x->nbinds++;
	}
	return 0;
}

/*
 * The workdir: opened once here, following whatever symlinks the caller's path has (the
 * caller chose it), then named by its canonical path for the child, which must find the same
 * inode at that path without following any symlink.
 */
static int prep_workdir(struct prep *x, const struct local_spec *s, struct stat *ret_st,
			cordon_error *e)
{
	const char *given = s->workdir;
	char proc[64];
	ssize_t n;

	if (!given || given[0] != '/')
		return cordon_err(e, EINVAL, "sandbox: workdir '%s': not an absolute path",
				  given ? given : "");
	/*
	 * A temp workdir that exists only inside (cordon_run named it; a tmpfs is mounted at
	 * that path in the sandbox's own /tmp): nothing to open on the host. It is root's as far
	 * as identity goes: the command runs as BACKEND_NOBODY, who owns the tmpfs.
	 */
	if (s->workdir_tmpfs) {
		if (strncmp(given, "/tmp/", 5) != 0 || strchr(given + 5, '/') || given[5] == '.' ||
		    strlen(given) >= sizeof(x->workdir))
			return cordon_err(e, EINVAL, "sandbox: temp workdir '%s': not /tmp/NAME",
					  given);
		strcpy(x->workdir, given);
		*ret_st = (struct stat){ .st_mode = S_IFDIR | 0700 };
		return 0;
	}
	/*
	 * A caller that already opened (and checked) the directory passes its fd (cordond as the
	 * client, the CLI's walk as root): that fd is what gets mounted, and the path is only
	 * its name. Else the path is opened here, as root without symlinks (fsutil.h).
	 */
	x->wd_fd = fsutil_open_workdir(given, s->workdir_fd, ret_st, e);
	if (x->wd_fd < 0)
		return cordon_err_prefix(e, "sandbox");
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", x->wd_fd);
	n = readlink(proc, x->workdir, sizeof(x->workdir) - 1);
	if (n < 0)
		return cordon_err(e, errno, "sandbox: workdir '%s': readlink %s", given, proc);
	x->workdir[n] = '\0';
	if (x->workdir[0] != '/')
		return cordon_err(e, ENOENT, "sandbox: workdir '%s' is not reachable", given);
	if (!backend_local_workdir_ok(x->workdir))
		return cordon_err(e, EINVAL, "sandbox: workdir '%s': " BACKEND_LOCAL_WORKDIR_RULE,
				  x->workdir);
	return 0;
}

/*
 * Who the command runs as. Never host uid 0:
 *  - an ordinary caller: itself, through a user namespace that maps only its own uid and gid;
 *  - root with run_as (the daemon, on behalf of a client): that uid/gid, which must not be 0;
 *  - root otherwise: the workdir's owner when that is not root (files it creates stay the
 *    owner's), else nobody with the gid BACKEND_RUN_GID (backend_root_run_ids: backend.h
 *    says why not nogroup); a root-owned temp workdir of cordon's own is chowned to it so
 *    that the command can write there, and any other root-owned workdir is idmapped (see
 *    prep_workdir_tree): the command sees it as its own, and what it creates there is
 *    root's on the host, a uid the caller (root) can use.
 */
static int prep_identity(struct prep *x, const struct local_spec *s, const struct stat *wd,
			 cordon_error *e)
{
	uid_t euid = geteuid();
	gid_t egid = getegid();

	if (euid != 0) {
		if (s->run_as && (s->uid != euid || s->gid != egid))
			return cordon_err(e, EPERM, "sandbox: run as %u:%u needs root",
					  (unsigned)s->uid, (unsigned)s->gid);
		x->pl.userns = true;
		x->pl.uid = euid;
		x->pl.gid = egid;
		(void)snprintf(x->pl.uid_map, sizeof(x->pl.uid_map), "%u %u 1\n", (unsigned)euid,
			       (unsigned)euid);
		(void)snprintf(x->pl.gid_map, sizeof(x->pl.gid_map), "%u %u 1\n", (unsigned)egid,
			       (unsigned)egid);
		return 0;
	}
	if (s->run_as) {
		if (s->uid == 0)
			return cordon_err(e, EPERM, "sandbox: refusing to run a command as uid 0");
		if (s->ngroups > NGROUPS_MAX)
			return cordon_err(e, EINVAL, "sandbox: %zu supplementary groups",
					  s->ngroups);
		x->pl.uid = s->uid;
		x->pl.gid = s->gid;
		/* The caller's groups, as the caller's own processes have them (cordond). */
		x->pl.groups = s->ngroups ? s->groups : NULL;
		x->pl.ngroups = s->ngroups;
	} else if (backend_root_run_ids(wd->st_uid, wd->st_gid, &x->pl.uid, &x->pl.gid)) {
		if (s->workdir_tmpfs) {
			/* nothing on the host: the tmpfs inside is made the command's */
		} else if (s->workdir_is_temp) {
			if (fchownat(x->wd_fd, "", x->pl.uid, x->pl.gid, AT_EMPTY_PATH) < 0)
				return cordon_err(e, errno, "sandbox: chown temp workdir '%s'",
						  x->workdir);
		} else {
			x->idmap = true;
			x->disk_uid = wd->st_uid;
			x->disk_gid = wd->st_gid;
		}
	}
	return 0;
}

/*
 * As root, the workdir's mount tree is cloned here, from the fd opened above, rather than by
 * the child: the child's mount namespace is a copy, where an fd of ours cannot be cloned
 * (open_tree refuses mounts of another namespace), so it would have to find the directory
 * again by its path. A detached tree is not in any namespace until the child attaches it, so
 * nothing appears in the host's mount table. An unprivileged caller cannot clone mounts of
 * the host's namespace at all; its child re-opens the path and checks the inode (mounts.c).
 *
 * The flags, recursively (a submount must not stay writable or setuid-capable): nosuid and
 * nodev always, read-only under `readonly`, and for a root-owned workdir an idmapping of the
 * owner's on-disk uid/gid to the command's (idmap.c). The idmapping makes files the command
 * creates root's on the host; nosuid keeps their setuid bits inert inside, and the seccomp
 * filter refuses every call that would set a setuid or setgid bit (seccomp.c), so none can
 * become a setuid-root program for a host user later.
 */
static int prep_workdir_tree(struct prep *x, bool readonly, cordon_error *e)
{
	_cleanup_close_ int userns = -1;
	/*
	 * MS_PRIVATE: a clone of a shared mount would join its peer group, and the covers the
	 * child mounts on hidden paths would then propagate to the host's namespace. (The child
	 * makes its own copy of the tree private for the same reason, but this tree is not in it.)
	 */
	struct mount_attr a = {
		.attr_set =
			MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (readonly ? MOUNT_ATTR_RDONLY : 0),
		.propagation = MS_PRIVATE,
	};

	x->wd_tree =
		(int)syscall(SYS_open_tree, x->wd_fd, "",
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (x->wd_tree < 0)
		return cordon_err(e, errno, "sandbox: bind workdir '%s'", x->workdir);
	if (x->idmap) {
		if (idmap_userns_start(x->disk_uid, x->pl.uid, x->disk_gid, x->pl.gid, &x->idh,
				       &userns, e) < 0)
			return cordon_err_prefix(e, "sandbox: workdir");
		a.attr_set |= MOUNT_ATTR_IDMAP;
		a.userns_fd = (uint64_t)userns;
	}
	if (syscall(SYS_mount_setattr, x->wd_tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a,
		    sizeof(a)) < 0) {
		/*
		 * A file system that cannot be idmapped (overlayfs here, as /tmp is in many
		 * containers): the workdir is bound as it is, and the command (uid 65534) has the
		 * access other users have there: it reads what is world-readable and writes where
		 * the permissions let everyone write (docs/security.md, "Identity"). Never root.
		 */
		if (!x->idmap || !idmap_unsupported(errno))
			return cordon_err(e, errno, "sandbox: %s workdir '%s'",
					  x->idmap ? "idmap" : "flag", x->workdir);
		x->idmap = false;
		x->idmap_fallback = true;
		a.attr_set &= ~(uint64_t)MOUNT_ATTR_IDMAP;
		a.userns_fd = 0;
		if (syscall(SYS_mount_setattr, x->wd_tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a,
			    sizeof(a)) < 0)
			return cordon_err(e, errno, "sandbox: flag workdir '%s'", x->workdir);
	}
	return 0;
}

static const char *env_path(char *const *envp)
{
	for (; envp && *envp; envp++)
		if (strncmp(*envp, "PATH=", 5) == 0)
			return *envp + 5;
	return SB_DEFAULT_PATH;
}

static bool under(const char *path, size_t len, const char *top)
{
	size_t n = strlen(top);

	if (n == 1 && top[0] == '/')
		return true;
	return len >= n && strncmp(path, top, n) == 0 && (len == n || path[n] == '/');
}

/*
 * The PATH the child searches for argv[0]: the command's own PATH without the directories
 * that cannot exist in the sandbox (nothing outside the ro_binds, the workdir, /tmp, /dev and
 * /proc does). A caller's PATH full of ~/.cargo/bin, pyenv shims and the like would otherwise
 * cost one failing execve each (about 50 us apiece here). The search order and the outcome
 * are the same: a dropped entry could only have failed with ENOENT. Python's lookup reports
 * the last entry's error when no other came first (init.c, exec_lookup), so a dropped last
 * entry is stood in for by one that fails with ENOENT.
 *
 * absolute_only (strict mode and the ShellExecutor dialect, whose argv[0] is the policy's word
 * and is looked up here, not by sh): relative entries (".", "", "bin") are dropped too. They
 * name the working directory, the agent's own workdir, so with "." in the caller's PATH an
 * allowed `ls` ran the `./ls` a previous command left there (red team). Go's exec.LookPath
 * refuses such results the same way since 1.19 (ErrDot). A name with a slash is exec'd as it
 * is, and the policy judged that word.
 */
static int prep_lookup_path(struct prep *x, const char *path, bool absolute_only, cordon_error *e)
{
	size_t n = strlen(path), k = 0, kept = 0;
	const char *p = path;
	bool last_dropped = false;

	x->lookup_path = malloc(n + sizeof(":/nonexistent"));
	if (!x->lookup_path)
		return cordon_err(e, ENOMEM, "out of memory");
	for (;;) {
		const char *end = strchrnul(p, ':');
		size_t len = (size_t)(end - p);
		bool relative = len == 0 || p[0] != '/';
		bool keep = relative ? !absolute_only
				     : under(p, len, x->workdir) || under(p, len, "/tmp") ||
					       under(p, len, "/dev") || under(p, len, "/proc");

		for (size_t i = 0; !keep && !relative && i < x->nbinds; i++)
			keep = under(p, len, x->binds[i].path);
		if (keep) {
			/* not `if (k)`: a first entry that is empty ("." for sh) would vanish */
			if (kept++)
				x->lookup_path[k++] = ':';
			memcpy(x->lookup_path + k, p, len);
			k += len;
		}
		last_dropped = !keep;
		if (!*end)
			break;
		p = end + 1;
	}
	x->lookup_path[k] = '\0';
	/* Nothing left: keep an impossible entry rather than an empty PATH (which means "."). */
	if (kept == 0)
		strcpy(x->lookup_path, "/nonexistent");
	else if (last_dropped)
		strcpy(x->lookup_path + k, ":/nonexistent");
	return 0;
}

/*
 * Would `sh`, looked up in the sandbox's PATH, be dash? Only entries under a read-only bind
 * show the sandbox the same files the parent sees here; an entry anywhere else before dash is
 * found makes the answer unknown, so no: a relative one, and the workdir (where hidden paths
 * are over-mounted), /tmp, /dev and /proc (built by the sandbox), even under a bind of "/".
 */
static bool sh_is_dash(const struct prep *x)
{
	const char *p = x->lookup_path;

	for (;;) {
		const char *end = strchrnul(p, ':');
		size_t len = (size_t)(end - p);
		char path[PATH_MAX], real[PATH_MAX];
		bool bound = false;

		for (size_t i = 0; !bound && len && p[0] == '/' && i < x->nbinds; i++)
			bound = under(p, len, x->binds[i].path);
		if (!bound || len + 4 > sizeof(path) || under(p, len, x->workdir) ||
		    under(p, len, "/tmp") || under(p, len, "/dev") || under(p, len, "/proc"))
			return false;
		memcpy(path, p, len);
		memcpy(path + len, "/sh", 4);
		if (access(path, X_OK) == 0) {
			const char *base;

			if (!realpath(path, real))
				return false;
			base = strrchr(real, '/');
			return base && strcmp(base, "/dash") == 0;
		}
		if (!*end)
			return false;
		p = end + 1;
	}
}

/* The simple-command fast path (shfast.h), when argv is `sh -c SCRIPT` and it applies. */
static int prep_fast(struct prep *x, const struct local_spec *s, cordon_error *e)
{
	char *const *a = s->argv;
	const char *pwd_env = NULL;
	size_t pwd = 0;
	int r;

	if (!a[0] || !a[1] || !a[2] || a[3] || strcmp(a[0], "sh") != 0 || strcmp(a[1], "-c") != 0)
		return 0;
	r = shfast_words(a[2], &x->fast_argv);
	if (r <= 0)
		return r < 0 ? cordon_err(e, ENOMEM, "out of memory") : 0;
	if (!sh_is_dash(x)) {
		shfast_strv_free(TAKE_PTR(x->fast_argv), true);
		return 0;
	}
	r = shfast_env(s->envp, &x->fast_envp, &pwd, &pwd_env);
	if (r > 0 && asprintf(&x->fast_pwd_cwd, "PWD=%s", x->workdir) < 0) {
		x->fast_pwd_cwd = NULL;
		r = -1;
	}
	if (r <= 0) {
		shfast_strv_free(TAKE_PTR(x->fast_argv), true);
		shfast_strv_free(TAKE_PTR(x->fast_envp), false);
		return r < 0 ? cordon_err(e, ENOMEM, "out of memory") : 0;
	}
	x->pl.fast_argv = x->fast_argv;
	x->pl.fast_envp = x->fast_envp;
	x->pl.fast_pwd = pwd;
	x->pl.fast_pwd_env = pwd_env;
	x->pl.fast_pwd_cwd = x->fast_pwd_cwd;
	trace_line(x, "prepare: a simple command: exec'd without sh", now_ms());
	return 0;
}

static int fmt_size(char *buf, size_t n, uint64_t bytes, uint64_t dflt)
{
	if (bytes == 0)
		bytes = dflt;
	return snprintf(buf, n, "%llu", (unsigned long long)bytes) >= (int)n ? -1 : 0;
}

/*
 * Each hidden name is a mount inside the sandbox, and the kernel allows fs.mount-max mounts in
 * a mount namespace (100,000 by default), the host's that clone3 copies included. Past that the
 * child's mount would fail with ENOSPC halfway through its covers: say so before clone.
 * HIDE_MOUNT_MARGIN leaves room for the host's mounts and the sandbox's own.
 */
#define HIDE_MOUNT_MARGIN 2000

/* Tests only: fs.mount-max instead of the kernel's (0: read it). */
unsigned long sb_test_mount_max;

/* fs.mount-max, read once per process (cordond's threads may race to store the same value). */
static unsigned long mount_max(void)
{
	static unsigned long cached;
	unsigned long max = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (!max) {
		char buf[32] = "";
		_cleanup_close_ int fd = open("/proc/sys/fs/mount-max", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

		if (n <= 0)
			return 0;
		buf[n] = '\0';
		max = strtoul(buf, NULL, 10);
		__atomic_store_n(&cached, max, __ATOMIC_RELAXED);
	}
	return max;
}

static int check_mount_max(const struct sb_hide_list *h, cordon_error *e)
{
	unsigned long max = sb_test_mount_max ? sb_test_mount_max : mount_max();
	size_t need = h->n + h->npin + h->nro + HIDE_MOUNT_MARGIN;

	if (!max)
		return 0; /* unknown: the child's mounts say it if it comes to that */
	if (need <= max)
		return 0;
	return cordon_err(e, 0,
			  "too many names to hide in the workdir: %zu, and this kernel allows %lu "
			  "mounts in a namespace (fs.mount-max); ignore their directories whole "
			  "instead",
			  h->n + h->npin + h->nro, max);
}

struct scan_args {
	struct prep *x;
	const struct cordon_profile *p;
	unsigned flags;
};

static int scan_fn(void *arg, cordon_error *e)
{
	struct scan_args *a = arg;

	return hide_scan(a->x->wd_fd, a->x->workdir, a->p, a->flags, &a->x->hides, e);
}

/*
 * What to hide in the workdir, found as the command's user would find it. A run on someone's
 * behalf (run_as: cordond's member) is scanned with their file-system identity
 * (runtime/asuser.c), as their own direct run is: as root the walk went into other users'
 * directories the caller may not read (a shared 1777 workdir holds them), and each name it
 * hid there, and every directory on its way, became a mount point in the sandbox, listed in
 * its /proc/self/mountinfo (found in review). The placeholders it makes are then the
 * caller's, as in a direct run.
 */
static int scan_hides(struct prep *x, const struct local_spec *s, bool setid, cordon_error *e)
{
	struct scan_args a = { x, s->profile,
			       (policy_workdir_readonly(s->profile) ? 0 : HIDE_PLACEHOLDERS) |
				       (setid ? HIDE_SETID : 0) };

	if (!s->run_as)
		return scan_fn(&a, e);
	return asuser_call(s->uid, s->gid, s->groups, s->ngroups, scan_fn, &a, e);
}

/*
 * As root, the run's stdio pipes (cordon's own, made for this run: local.c, run.c) are given to
 * the command's uid. A pipe belongs to its maker with mode 0600, and reopening one by a path
 * (`echo x > /dev/stdout`, `>/dev/stderr`, `cat /dev/stdin`, /proc/self/fd/N: shells and
 * build tools do all of these) checks that mode: a root-owned pipe was "Permission denied" to
 * the command, uid 65534 or cordond's member, where the same command ran as an ordinary
 * caller's own (whose pipes are its own) worked (found in red team). The pipe is reached by a
 * path only through /proc/<pid>/fd of a process holding it, which needs ptrace access to that
 * process: cordon, init (root's, not dumpable) and the command; so the owner now adds the
 * command's uid and nobody else. Only anonymous pipes (pipefs): never a FIFO or file of a
 * caller's. In a user namespace the pipes are the caller's already, as is the command.
 */
static int prep_stdio(const struct prep *x, const struct local_spec *s, cordon_error *e)
{
	const int fds[] = { s->stdin_fd, s->stdout_fd, s->stderr_fd };

	if (x->pl.userns || !s->stdio_pipes_ours)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		struct statfs sfs;
		struct stat st;

		if (fds[i] < 0)
			continue;
		if (fstat(fds[i], &st) < 0 || fstatfs(fds[i], &sfs) < 0)
			return cordon_err(e, errno, "sandbox: stdio fd %d", fds[i]);
		if (!S_ISFIFO(st.st_mode) || sfs.f_type != PIPEFS_MAGIC || st.st_uid != geteuid())
			continue;
		if (fchown(fds[i], x->pl.uid, x->pl.gid) < 0)
			return cordon_err(e, errno, "sandbox: give the stdio pipe to %u",
					  (unsigned)x->pl.uid);
	}
	return 0;
}

static int prepare(struct prep *x, const struct local_spec *s, cordon_error *e)
{
	const struct cordon_profile *p = s->profile;
	struct sb_plan *pl = &x->pl;
	struct stat wd;
	bool setid, hide, both;
	size_t k = 0;

	if (!p)
		return cordon_err(e, EINVAL, "sandbox: no profile");
	if (!s->argv || !s->argv[0])
		return cordon_err(e, EINVAL, "sandbox: empty argv");
	if (prep_workdir(x, s, &wd, e) < 0 || prep_identity(x, s, &wd, e) < 0 ||
	    prep_stdio(x, s, e) < 0 ||
	    (!x->pl.userns && !s->workdir_tmpfs &&
	     prep_workdir_tree(x, policy_workdir_readonly(p), e) < 0) ||
	    prep_binds(x, p, e) < 0)
		return -1;
	trace_line(x,
		   x->idmap_fallback ? "prepare: workdir (its file system cannot be idmapped: "
				       "bound as it is), identity, ro_bind"
				     : "prepare: workdir, identity, ro_bind",
		   now_ms());
	/*
	 * An idmapped workdir makes root's files the command's own: its privileged programs are
	 * bound read-only, or the command could rewrite one through a shared mapping, which keeps
	 * the bit (setid.c). Not under readonly (nothing is writable there) nor for a workdir that
	 * is not idmapped (the command then owns only its own files, or the caller's).
	 */
	setid = x->idmap && !policy_workdir_readonly(p);
	/* A fresh temp workdir that becomes a tmpfs inside holds nothing to hide. */
	hide = hide_wanted(p) && !s->workdir_tmpfs;
	/*
	 * When hiding walks the workdir, that walk does the setuid scan's checks too, and the
	 * workdir is read once (hide.c: HIDE_SETID). It runs as root then: an idmapped workdir
	 * is a root caller's own run, never one on another user's behalf (prep_identity), and a
	 * directory it could not read would fail it (open_failed), not be passed by.
	 */
	both = setid && hide && hide_walks(p);
	if (hide) {
		if (scan_hides(x, s, both, e) < 0)
			return cordon_err_prefix(e, "sandbox: hide");
		if (x->trace) {
			char what[160], ro[48] = "";

			if (both)
				(void)snprintf(ro, sizeof(ro), "%zu protected, ", x->hides.nro);
			(void)snprintf(what, sizeof(what),
				       "prepare: %s (%zu hidden, %s%zu seen%s%s)",
				       both ? "hide and setuid scan" : "hide scan", x->hides.n, ro,
				       x->hides.visited, x->hides.truncated ? ", bounded" : "",
				       x->hides.threads > 1 ? ", 2 threads" : "");
			trace_line(x, what, now_ms());
		}
	}
	if (setid && !both) {
		if (setid_scan(x->wd_fd, &x->hides, e) < 0)
			return cordon_err_prefix(e, "sandbox");
		trace_line(x, "prepare: setuid scan", now_ms());
	}
	/*
	 * The directories on the way to each of them are pinned, as those on the way to a hidden
	 * name are: a run that could move them (they are its own too) could move one back and
	 * forth while another run's scan walks the workdir, which would then miss the program and
	 * leave it that run's command to rewrite (found in review).
	 */
	if (setid && hide_pin_protected(x->wd_fd, &x->hides, e) < 0)
		return cordon_err_prefix(e, "sandbox");
	if ((x->hides.n || x->hides.npin || x->hides.nro) && check_mount_max(&x->hides, e) < 0)
		return cordon_err_prefix(e, "sandbox: hide");
	/*
	 * Everything that allocates much happens before clone, on purpose: after clone every page
	 * the parent writes is a copy-on-write fault, and on a VM each one costs a TLB-shootdown
	 * IPI (measured: compiling the seccomp program after clone made a start 40% slower). The
	 * cgroup is the exception (see local_proc_start).
	 */
	if (seccomp_prog_compile(p, &x->bpf, e) < 0)
		return cordon_err_prefix(e, "sandbox: seccomp");
	/* Dead by now (killed before the hide scan): no wait, and no zombie in the clone. */
	idmap_helper_reap(&x->idh);
	trace_line(x, "prepare: seccomp compiled", now_ms());
	pl->landlock_abi = landlock_abi();
	if (pl->landlock_abi == 0 && list_has(&p->require, "landlock"))
		return cordon_err(e, EOPNOTSUPP, "sandbox: landlock is required but unavailable");

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, x->rep) < 0)
		return cordon_err(e, errno, "sandbox: socketpair");
	/*
	 * The gate is a stream socket rather than a pipe so that the parent's writes can use
	 * MSG_NOSIGNAL: a child that died during setup must give us an error, not a SIGPIPE.
	 */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, x->go) < 0 ||
	    pipe2(x->status, O_CLOEXEC) < 0)
		return cordon_err(e, errno, "sandbox: pipe");
	if (fcntl(x->status[0], F_SETFL, O_NONBLOCK) < 0)
		return cordon_err(e, errno, "sandbox: status pipe");

	pl->report_fd = x->rep[1];
	pl->go_fd = x->go[0];
	pl->status_fd = x->status[1];
	pl->stdin_fd = s->stdin_fd;
	pl->stdout_fd = s->stdout_fd;
	pl->stderr_fd = s->stderr_fd;
	pl->workdir = x->workdir;
	pl->wd_dev = wd.st_dev;
	pl->wd_ino = wd.st_ino;
	pl->wd_tree_fd = x->wd_tree;
	pl->readonly = policy_workdir_readonly(p);
	pl->workdir_tmpfs = s->workdir_tmpfs;
	pl->binds = x->binds;
	pl->nbinds = x->nbinds;
	pl->hides = x->hides.v;
	pl->nhides = x->hides.n;
	pl->pins = x->hides.pin;
	pl->npins = x->hides.npin;
	pl->ro_files = x->hides.ro;
	pl->nro_files = x->hides.nro;
	if (fmt_size(pl->tmp_size, sizeof(pl->tmp_size), p->tmp_size, 256ull << 20) < 0 ||
	    fmt_size(pl->shm_size, sizeof(pl->shm_size), p->tmp_size, 256ull << 20) < 0)
		return cordon_err(e, EINVAL, "sandbox: tmp_size");
	pl->netns = p->network != CORDON_NET_HOST;
	pl->trace = x->trace;
	pl->argv = s->argv;
	pl->envp = s->envp;
	pl->cmd_umask = s->set_umask ? (int)(s->umask & 0777) : -1;
	if (prep_lookup_path(x, env_path(s->envp), policy_uses_argv(p), e) < 0)
		return -1;
	pl->path_env = x->lookup_path;
	if (prep_fast(x, s, e) < 0)
		return -1;
	pl->limits = limits_of(p);
	pl->bpf = x->bpf;
	/*
	 * Landlock: everything of the new root may be read and executed (the mounts already made
	 * it the whole view), but only the workdir (unless read-only), /tmp and /dev (its tmpfs
	 * is read-only; /dev/null and /dev/shm are what is written there) may be written.
	 */
	pl->ll_ro[0] = "/";
	pl->ll_ro[1] = NULL;
	if (!policy_workdir_readonly(p))
		pl->ll_rw[k++] = x->workdir;
	pl->ll_rw[k++] = "/tmp";
	pl->ll_rw[k++] = "/dev";
	pl->ll_rw[k] = NULL;
	return 0;
}

/*
 * Spread. After clone3 the parent makes the run's network namespace and cgroup while the child
 * builds its root (below); but on the reference VM the new child was put on the parent's vCPU
 * and the two took turns there (`perf stat`: 0.94 CPUs busy over a run, against 2 to use).
 * With another CPU of the caller's to go to, the parent moves the child there before it first
 * runs; the child puts the caller's CPUs back at its second gate (init.c), before anything of
 * the command's runs, so the command has exactly the CPUs cordon was given
 * (sandbox/command_keeps_the_callers_cpus). Measured: 0.2 to 0.3 ms off a 3.5 ms start.
 */
_Static_assert(sizeof(((struct sb_plan *)0)->cpus) == sizeof(cpu_set_t), "sb_plan.cpus");

static void spread_prepare(struct sb_plan *pl)
{
	cpu_set_t all;

	pl->spread = cpus_mine(&all) && cpus_one_free(&all);
	if (pl->spread)
		memcpy(pl->cpus, &all, sizeof(all));
}

static void spread_child(const struct sb_plan *pl, pid_t pid)
{
	cpu_set_t all, away;

	if (!pl->spread)
		return;
	memcpy(&all, pl->cpus, sizeof(all));
	if (cpus_away(&all, &away))
		(void)sched_setaffinity(pid, sizeof(away), &away);
}

static pid_t clone_child(struct prep *x, int *ret_pidfd, cordon_error *e)
{
	struct clone_args ca = { 0 };
	pid_t pid;

	/*
	 * New mount, pid, IPC and UTS namespaces always; network unless the profile shares the
	 * host's; user when we are not root. The cgroup namespace is entered by the child after
	 * the second gate, once it is in the run's cgroup, so that it is rooted there.
	 *
	 * Not CLONE_INTO_CGROUP (v2 only, and rarely ours on hybrid hosts): moving a process into
	 * a cgroup (a cgroup.procs write waits for an RCU grace period) takes a millisecond or
	 * more, so the parent does it while the child builds its root, and the second gate holds
	 * the child until it is in. No code of the command can run outside the cgroup either way.
	 */
	ca.flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
	if (x->pl.netns && x->pl.netns_fd < 0 && !x->pl.netns_at_gate2)
		ca.flags |= CLONE_NEWNET;
	if (x->pl.userns)
		ca.flags |= CLONE_NEWUSER;
	ca.pidfd = (uint64_t)(uintptr_t)ret_pidfd;
	ca.exit_signal = SIGCHLD;
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		int err = errno;
		const char *knob = x->pl.userns && (err == EPERM || err == ENOSPC || err == EACCES)
					   ? doctor_userns_knob_off()
					   : NULL;

		/* The reason is the setting, not the errno: the line ends with the remedy. */
		if (knob)
			return cordon_err(
				e, 0,
				"sandbox: this host does not let ordinary users make user "
				"namespaces (%s = 0): run it through cordond (group cordon) "
				"or as root",
				knob);
		return cordon_err(e, err, "sandbox: clone3");
	}
	if (pid == 0) {
		/* The parent's ends: a copy of the gate's write end would hide the parent's death. */
		(void)close(x->go[1]);
		(void)close(x->rep[0]);
		(void)close(x->status[0]);
		sb_child_main(&x->pl);
	}
	return pid;
}

/*
 * On the wire: c, how many cgroup `tasks` fds and whether a network namespace come with it;
 * the fds by SCM_RIGHTS, the namespace first.
 */
static int send_gate(int sock, char c, int netns, const int *cg_fds, int ncg)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE((1 + CGROUP_MAX_DIRS) * sizeof(int))];
	} u = { 0 };
	char msg[3] = { c, (char)ncg, netns >= 0 };
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[1 + CGROUP_MAX_DIRS];
	size_t n = 0;

	if (netns >= 0)
		fds[n++] = netns;
	for (int i = 0; i < ncg; i++)
		fds[n++] = cg_fds[i];
	if (n > 0)
		fsutil_attach_fds(&mh, u.buf, sizeof(u.buf), fds, n);
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(msg) ? 0 : -1;
}

int sb_gate_join(int sock, char c, int netns, struct cgroup_run *cg, pid_t pid, bool *ret_self,
		 cordon_error *e)
{
	int cg_fds[CGROUP_MAX_DIRS], ncg = 0, sent;

	/* v1: the child joins itself (cgroup.h: cgroup_run_task_fds); v2: we move it by pid. */
	if (cg) {
		ncg = cgroup_run_task_fds(cg, cg_fds, CGROUP_MAX_DIRS, e);
		if (ncg < 0 || (ncg == 0 && cgroup_run_attach(cg, pid, e) < 0))
			return -1;
	}
	if (ret_self)
		*ret_self = ncg > 0;
	sent = send_gate(sock, c, netns, cg_fds, ncg);
	if (sent < 0)
		cordon_err(e, errno, "gate");
	for (int i = 0; i < ncg; i++)
		(void)close(cg_fds[i]);
	return sent;
}

/* Read the report until EOF; *ret_err set when the child reported a failure. */
static int read_report(struct prep *x, struct sb_msg *ret_err)
{
	struct sb_msg m;
	ssize_t n;

	ret_err->kind = 0;
	for (;;) {
		n = recv(x->rep[0], &m, sizeof(m), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -1 : 0;
		if ((size_t)n != sizeof(m))
			continue;
		m.detail[sizeof(m.detail) - 1] = '\0';
		if (m.kind == SB_MSG_TRACE && x->trace) {
			char what[128];

			(void)snprintf(what, sizeof(what), "child: %s", sb_step_name(m.step));
			trace_line(x, what, m.t_ns / 1e6);
		} else if (m.kind == SB_MSG_ERROR && ret_err->kind == 0) {
			*ret_err = m;
		}
	}
}

static void child_error(cordon_error *e, const struct sb_msg *m)
{
	if ((m->step == SB_STEP_HIDE || m->step == SB_STEP_PROTECT) &&
	    (m->err == ENOENT || m->err == ENOTDIR || m->err == ESTALE || m->err == ELOOP))
		cordon_err(e, 0,
			   "sandbox: %s '%s': moved, removed or replaced since the workdir was "
			   "scanned (by a concurrent run or process?); nothing ran, try again",
			   sb_step_name(m->step), m->detail);
	else if (m->detail[0])
		cordon_err(e, m->err, "sandbox: %s '%s'", sb_step_name(m->step), m->detail);
	else
		cordon_err(e, m->err, "sandbox: %s", sb_step_name(m->step));
}

static void reap(pid_t pid, int *ret_st, struct rusage *ru)
{
	int st = 0;

	while (wait4(pid, &st, 0, ru) < 0 && errno == EINTR)
		;
	if (ret_st)
		*ret_st = st;
}

int local_proc_start(const struct local_spec *s, struct local_proc **ret, cordon_error *e)
{
	struct prep x;
	_cleanup_close_ int pidfd = -1, late_netns = -1;
	struct local_proc *p = NULL;
	struct sb_msg err;
	const char *tr = getenv("CORDON_TRACE_SETUP");
	bool self_join = false;
	int rc = -1;
	pid_t pid;

	prep_init(&x);
	x.trace = tr && *tr && strcmp(tr, "0") != 0;
	x.t0 = now_ms();
	if (prepare(&x, s, e) < 0)
		goto out;
	prebuilt_note(&x.pl);

	/* A sandbox pre-built for these mounts (prebuilt.c): it only needs the plan. */
	{
		struct prebuilt_run pr;
		int r = prebuilt_start(&x.pl, s->profile, &pr, e);

		if (r < 0)
			goto out;
		if (r > 0) {
			pid = pr.pid;
			pidfd = pr.pidfd;
			fd_close(&x.rep[0]);
			fd_close(&x.rep[1]);
			fd_close(&x.go[0]);
			fd_close(&x.go[1]);
			fd_close(&x.status[0]);
			fd_close(&x.status[1]);
			fd_close(&x.wd_tree);
			x.rep[0] = pr.report_fd;
			x.go[1] = pr.go_fd;
			x.status[0] = pr.status_fd;
			x.cg = pr.cg;
			if (x.trace) {
				char what[96];

				(void)snprintf(what, sizeof(what),
					       "pre-built sandbox taken (built %.1f ms before)",
					       pr.age_ms);
				trace_line(&x, what, now_ms());
			}
			goto started;
		}
	}

	/*
	 * As root, a network namespace staged ahead (stage.c) saves making one in clone3; with
	 * none staged, we make it after clone, while the child builds its root (below).
	 */
	if (x.pl.netns && !x.pl.userns)
		x.pl.netns_fd = stage_take_netns();
	x.pl.netns_at_gate2 = x.pl.netns && !x.pl.userns && x.pl.netns_fd < 0;

	spread_prepare(&x.pl);
	pid = clone_child(&x, &pidfd, e);
	if (pid < 0)
		goto out;
	spread_child(&x.pl, pid);
	trace_line(&x, "clone3", now_ms());
	/* The child's ends (closep does not reset the variable: prep_free must not close twice). */
	fd_close(&x.rep[1]);
	fd_close(&x.go[0]);
	fd_close(&x.status[1]);
	/* The child holds its own copy of the workdir's tree until it attaches it. */
	fd_close(&x.wd_tree);

	/* The first gate: the child may build its root. */
	if (send(x.go[1], "g", 1, MSG_NOSIGNAL) != 1) {
		cordon_err(e, errno, "sandbox: gate");
		goto out_kill;
	}
	/*
	 * Meanwhile, on the other CPU than the child's: the run's network namespace and cgroup,
	 * then the child into the cgroup (that write sleeps for an RCU grace period). The child
	 * needs neither before its second gate, and building its root takes longer than all
	 * three (CORDON_TRACE_SETUP shows both sides), so none of them is on the start's path
	 * any more: 0.5 ms of the 0.55 ms they took before clone. Making them after clone costs
	 * the parent a copy-on-write fault per page it writes, about 0.1 ms, off that path too.
	 */
	if (x.pl.netns_at_gate2) {
		late_netns = stage_new_netns(e);
		if (late_netns < 0) {
			cordon_err_prefix(e, "sandbox: network namespace");
			goto out_kill_report;
		}
		trace_line(&x, "parent: network namespace made", now_ms());
	}
	if (stage_take_cgroup(s->profile, &x.cg, e) < 0) {
		/* backends/local/cgroup.c's messages start with "cgroup: " themselves. */
		cordon_err_prefix(e, "sandbox");
		goto out_kill_report;
	}
	/* 'c': memory is limited by the cgroup; 'n': no cgroup, RLIMIT_AS instead. */
	if (sb_gate_join(x.go[1], x.cg ? 'c' : 'n', late_netns, x.cg, pid, &self_join, e) < 0) {
		cordon_err_prefix(e, "sandbox");
		goto out_kill_report;
	}
	trace_line(&x,
		   !x.cg       ? "parent: no cgroup"
		   : self_join ? "parent: cgroup made, the child joins it"
			       : "parent: child attached to its cgroup",
		   now_ms());
	closep(&late_netns);
	late_netns = -1;
	/*
	 * x.go[1] stays open until the report is read: the child watches it for a hang-up to
	 * notice our death in the one window PR_SET_PDEATHSIG does not cover (see init.c).
	 */

started:
	if (read_report(&x, &err) < 0) {
		cordon_err(e, errno, "sandbox: read report");
		err.kind = -1;
	}
	trace_line(&x, err.kind ? "failed" : "exec", now_ms());
	if (err.kind == SB_MSG_ERROR && err.step == SB_STEP_EXEC) {
		/* Everything worked but execve: init reaps the command (127) and exits. */
		reap(pid, NULL, NULL);
		cordon_err(e, err.err, "exec %s", s->argv[0]);
		rc = LOCAL_PROC_EXEC_FAILED;
		goto out;
	}
	if (err.kind != 0) {
		(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		reap(pid, NULL, NULL);
		if (err.kind == SB_MSG_ERROR)
			child_error(e, &err);
		goto out;
	}

	p = calloc(1, sizeof(*p));
	if (!p) {
		cordon_err(e, ENOMEM, "out of memory");
		(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		reap(pid, NULL, NULL);
		goto out;
	}
	p->pid = pid;
	p->pidfd = TAKE_FD(pidfd);
	p->status_fd = TAKE_FD(x.status[0]);
	p->cg = TAKE_PTR(x.cg);
	p->wd_fd = -1;
	p->trace = x.trace;
	p->t0 = x.t0;
	if (x.hides.nph) {
		p->wd_fd = fcntl(x.wd_fd, F_DUPFD_CLOEXEC, 3);
		p->ph = TAKE_PTR(x.hides.ph);
		p->nph = x.hides.nph;
		x.hides.nph = 0;
	}
	*ret = p;
	rc = 0;
	goto out;
out_kill_report:
	/* The child may have failed first (and closed the gate): its error says more. */
	(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	if (read_report(&x, &err) == 0 && err.kind == SB_MSG_ERROR)
		child_error(e, &err);
	reap(pid, NULL, NULL);
	goto out;
out_kill:
	(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	reap(pid, NULL, NULL);
out:
	prep_free(&x);
	return rc;
}

int cordon_prebuild_from(const struct cordon_profile *p, cordon_error *e)
{
	struct prep x;
	int rc = -1;

	if (geteuid() != 0 || !prebuilt_enabled() || !p)
		return 0;
	prep_init(&x);
	if (prep_binds(&x, p, e) < 0)
		goto out;
	if (fmt_size(x.pl.tmp_size, sizeof(x.pl.tmp_size), p->tmp_size, 256ull << 20) < 0 ||
	    fmt_size(x.pl.shm_size, sizeof(x.pl.shm_size), p->tmp_size, 256ull << 20) < 0) {
		cordon_err(e, EINVAL, "sandbox: tmp_size");
		goto out;
	}
	x.pl.binds = x.binds;
	x.pl.nbinds = x.nbinds;
	x.pl.netns = p->network != CORDON_NET_HOST;
	prebuilt_note(&x.pl);
	rc = 0;
out:
	prep_free(&x);
	return rc;
}

void local_proc_trace(const struct local_proc *p, const char *what)
{
	if (p && p->trace)
		fprintf(stderr, "cordon: setup %8.3f ms  %s\n", now_ms() - p->t0, what);
}

int local_proc_pidfd(const struct local_proc *p)
{
	return p->pidfd;
}

int local_proc_status_fd(const struct local_proc *p)
{
	return p->status_fd;
}

bool local_proc_reported(struct local_proc *p, int *ret_wstatus, struct local_usage *ret_usage)
{
	struct pollfd pfd = { .fd = p->status_fd, .events = POLLIN };
	struct local_usage u = { .peak_memory_bytes = -1 };
	cordon_error e;
	int st;

	/* Without a cgroup the usage is init's rusage, which only its reaping gives. */
	if (p->reaped || !p->cg || poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLIN))
		return false;
	if (p->have_status || read(p->status_fd, &st, sizeof(st)) != (ssize_t)sizeof(st))
		return false;
	p->have_status = true;
	p->status = st;
	if (cgroup_run_usage(p->cg, &u, &e) < 0)
		return false;
	*ret_wstatus = st;
	*ret_usage = u;
	return true;
}

static bool init_exited(const struct local_proc *p)
{
	siginfo_t si = { 0 };

	if (p->reaped)
		return true;
	if (waitid(P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return false;
	return si.si_pid != 0;
}

void local_proc_kill(struct local_proc *p)
{
	if (!p || init_exited(p))
		return; /* init is gone, and with it every process of its pid namespace */
	/*
	 * SIGKILL to the namespace's init, from outside the namespace, is one init cannot
	 * ignore; its death makes the kernel kill every other process of the namespace. The
	 * cgroup kill is the second wall (and covers the window before init's death is done).
	 */
	(void)syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
	if (p->cg)
		cgroup_run_kill(p->cg);
}

int local_proc_wait(struct local_proc *p, int *ret_wstatus, struct local_usage *ret_usage,
		    cordon_error *e)
{
	int st = 0;
	ssize_t n;

	if (!p->reaped) {
		reap(p->pid, &p->wstatus, &p->ru);
		p->reaped = true;
	}
	/* The command's own status, when init lived to report it. */
	if (p->have_status) {
		*ret_wstatus = p->status;
	} else {
		n = read(p->status_fd, &st, sizeof(st));
		*ret_wstatus = n == (ssize_t)sizeof(st) ? st : p->wstatus;
	}
	if (ret_usage) {
		struct local_usage u = { .peak_memory_bytes = -1 };
		cordon_error e2;

		if (!p->cg || cgroup_run_usage(p->cg, &u, &e2) < 0) {
			u.cpu_ms = p->ru.ru_utime.tv_sec * 1e3 + p->ru.ru_utime.tv_usec / 1e3 +
				   p->ru.ru_stime.tv_sec * 1e3 + p->ru.ru_stime.tv_usec / 1e3;
			u.peak_memory_bytes = (int64_t)p->ru.ru_maxrss * 1024;
			u.oom_killed = false;
		}
		*ret_usage = u;
	}
	(void)e;
	return 0;
}

void local_proc_drop_placeholders(struct local_proc *p)
{
	if (!p)
		return;
	hide_placeholders_remove(p->wd_fd, p->ph, p->nph);
	p->ph = NULL;
	p->nph = 0;
	closep(&p->wd_fd);
}

void local_proc_free(struct local_proc *p)
{
	if (!p)
		return;
	if (!p->reaped) {
		/*
		 * init that reported the command's end has SIGKILLed the rest of its namespace and
		 * is exiting: wait for it, no more. The kill (and on cgroup v1 the freeze-and-kill
		 * of the cgroup, milliseconds) is for a run cut short.
		 */
		if (!p->have_status)
			local_proc_kill(p);
		reap(p->pid, &p->wstatus, &p->ru);
		p->reaped = true;
		local_proc_trace(p, "teardown: sandbox reaped");
	}
	cgroup_run_destroy(p->cg);
	local_proc_trace(p, "teardown: cgroup removed");
	/* The sandbox is gone: its mounts over the placeholders with it. */
	local_proc_drop_placeholders(p);
	closep(&p->pidfd);
	closep(&p->status_fd);
	free(p);
}
