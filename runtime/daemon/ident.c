/* SPDX-License-Identifier: MIT */
/*
 * Who is calling, and acting on the file system as them.
 *
 * cordond is root; its callers are not. Every path a caller names (a workdir, a session file)
 * is opened with the caller's own file-system identity, so that the kernel makes the same
 * permission decision it would make for the caller's own process: no access(2) on a path (whose
 * answer is stale the moment it is given), no root bypassing a 0700 parent directory. The open
 * yields an fd, and from then on the daemon works from that fd.
 */
#define _GNU_SOURCE
#include "runtime/daemon/daemon.h"
#include "backends/backend.h"
#include "policy/policy.h"
#include "runtime/asuser.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_GROUPS 1024

void caller_free(struct caller *c)
{
	free(c->groups);
	free(c->name);
	free(c->home);
	c->groups = NULL;
	c->name = c->home = NULL;
	c->ngroups = 0;
}

static bool has_group(const struct caller *c, gid_t g)
{
	if (c->gid == g)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == g)
			return true;
	return false;
}

/*
 * Identities resolved a moment ago, reused: the passwd lookup and the user's groups are about a
 * quarter of a millisecond of every connection (NSS reads and parses the files, and asks
 * systemd's module too). An entry serves only while /etc/passwd, /etc/group and
 * /etc/nsswitch.conf are still the files it was read from (so `gpasswd -d alice cordon`
 * applies to alice's next connection, exactly as without the cache), and for at most
 * IDENT_TTL seconds, which bounds what another NSS source (LDAP through sssd, systemd's
 * dynamic users) could change unseen; those keep caches of their own far longer than that.
 */
#define IDENT_CACHE 16
#define IDENT_TTL 1.0

static const char *const ident_files[] = { "/etc/passwd", "/etc/group", "/etc/nsswitch.conf" };

struct file_sig {
	bool present;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

struct ident_entry {
	bool used;
	uid_t uid;
	gid_t gid;
	double at;
	struct file_sig sig[3];
	struct caller c; /* name, home, groups */
};

static pthread_mutex_t ident_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ident_entry ident_cache[IDENT_CACHE];
static unsigned ident_next;

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void file_sigs(struct file_sig sig[3])
{
	for (int i = 0; i < 3; i++) {
		struct stat st;

		memset(&sig[i], 0, sizeof(sig[i]));
		if (stat(ident_files[i], &st) == 0)
			sig[i] = (struct file_sig){ true,	st.st_dev,  st.st_ino,
						    st.st_size, st.st_mtim, st.st_ctim };
	}
}

static bool sigs_equal(const struct file_sig a[3], const struct file_sig b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i].present != b[i].present || a[i].dev != b[i].dev || a[i].ino != b[i].ino ||
		    a[i].size != b[i].size || a[i].mtime.tv_sec != b[i].mtime.tv_sec ||
		    a[i].mtime.tv_nsec != b[i].mtime.tv_nsec ||
		    a[i].ctime.tv_sec != b[i].ctime.tv_sec ||
		    a[i].ctime.tv_nsec != b[i].ctime.tv_nsec)
			return false;
	return true;
}

/* dst's name, home and groups: copies of src's. */
static int caller_copy(struct caller *dst, const struct caller *src)
{
	dst->ngroups = src->ngroups;
	dst->name = src->name ? strdup(src->name) : NULL;
	dst->home = src->home ? strdup(src->home) : NULL;
	dst->groups = malloc((size_t)(src->ngroups ? src->ngroups : 1) * sizeof(gid_t));
	if ((src->name && !dst->name) || (src->home && !dst->home) || !dst->groups) {
		caller_free(dst);
		return -1;
	}
	memcpy(dst->groups, src->groups, (size_t)src->ngroups * sizeof(gid_t));
	return 0;
}

static bool ident_lookup(struct caller *c, const struct file_sig sig[3], double now)
{
	bool hit = false;

	pthread_mutex_lock(&ident_lock);
	for (int i = 0; i < IDENT_CACHE && !hit; i++) {
		const struct ident_entry *x = &ident_cache[i];

		if (x->used && x->uid == c->uid && now - x->at < IDENT_TTL && now >= x->at &&
		    sigs_equal(x->sig, sig)) {
			hit = caller_copy(c, &x->c) == 0;
			c->gid = x->gid;
		}
	}
	pthread_mutex_unlock(&ident_lock);
	return hit;
}

static void ident_store(const struct caller *c, const struct file_sig sig[3], double now)
{
	struct ident_entry *x;

	pthread_mutex_lock(&ident_lock);
	x = &ident_cache[ident_next++ % IDENT_CACHE];
	caller_free(&x->c);
	x->used = caller_copy(&x->c, c) == 0;
	x->uid = c->uid;
	x->gid = c->gid;
	x->at = now;
	memcpy(x->sig, sig, sizeof(x->sig));
	pthread_mutex_unlock(&ident_lock);
}

/*
 * EMFILE or ENFILE when this process cannot open an fd now, else 0. glibc's NSS reports a
 * source it could not open as no entry at all (getpwuid_r: 0 and no result, errno untouched,
 * once its modules are loaded), so a "no passwd entry" is checked against this.
 */
static int fd_shortage(void)
{
	int fd = open("/", O_PATH | O_CLOEXEC);

	if (fd >= 0) {
		(void)close(fd);
		return 0;
	}
	return errno == EMFILE || errno == ENFILE ? errno : 0;
}

int ident_from_socket(int fd, gid_t cordon_gid, bool have_group, struct caller *ret,
		      cordon_error *e)
{
	struct caller c = { 0 };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct passwd pw, *pwp = NULL;
	struct file_sig sig[3];
	double now;
	char buf[4096];

	/*
	 * SO_PEERCRED is the kernel's record of the peer at connect() time: it cannot be forged by
	 * anything the client sends, unlike a uid in a header or the body.
	 */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
		return cordon_err(e, errno, "SO_PEERCRED");
	c.uid = cred.uid;
	c.gid = cred.gid;
	c.pid = cred.pid;
	/* The files' state before the lookup: a change during it makes the entry stale at once. */
	file_sigs(sig);
	now = mono_s();
	if (ident_lookup(&c, sig, now))
		goto decide;

	/*
	 * The groups come from the peer uid's passwd entry (its primary group and getgrouplist, as
	 * login would set them), resolved now, at accept time, and never from the peer process's
	 * own gid or groups: removing a user from group cordon takes effect on their next
	 * connection, whatever their old processes still carry (a primary gid of cordon from
	 * `newgrp cordon` or `sg cordon` included). The run's gid is the passwd entry's as well.
	 */
	/*
	 * A lookup that failed for want of an fd or memory (NSS opens /etc/passwd, a socket...)
	 * says nothing about the uid: an error, never "no passwd entry", which would make a
	 * member an outsider (403), cached as such.
	 */
	int pr = getpwuid_r(c.uid, &pw, buf, sizeof(buf), &pwp);

	if (pr == 0 && !pwp)
		pr = fd_shortage();
	if (pr != 0 && job_shortage(pr)) {
		caller_free(&c);
		return cordon_err(e, pr, "the passwd entry of uid %u", (unsigned)c.uid);
	}
	if (pr == 0 && pwp) {
		int n = 64;

		c.gid = pw.pw_gid;
		c.name = strdup(pw.pw_name);
		c.home = strdup(pw.pw_dir);
		if (!c.name || !c.home)
			goto oom;
		for (;;) {
			gid_t *g = realloc(c.groups, (size_t)n * sizeof(gid_t));
			int want = n;

			if (!g)
				goto oom;
			c.groups = g;
			/*
			 * getgrouplist reports no error: an NSS source it could not read (no fd
			 * left) just gives no groups, and the member would be an outsider. What
			 * that left in errno is the only sign of it (not EAGAIN: a non-blocking
			 * NSS socket may leave that behind on success).
			 */
			errno = 0;
			if (getgrouplist(pw.pw_name, c.gid, c.groups, &want) >= 0) {
				if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) {
					int err = errno;

					caller_free(&c);
					return cordon_err(e, err, "the groups of uid %u",
							  (unsigned)c.uid);
				}
				c.ngroups = want;
				break;
			}
			if (want <= n || want > MAX_GROUPS) {
				/* More groups than the kernel allows: keep the primary one only. */
				c.groups[0] = c.gid;
				c.ngroups = 1;
				break;
			}
			n = want;
		}
	} else {
		/*
		 * No passwd entry: nothing says which groups the uid has, so it is served only if it
		 * is root (below); its process's gid is then all we know.
		 */
		c.groups = malloc(sizeof(gid_t));
		if (!c.groups)
			goto oom;
		c.groups[0] = c.gid;
		c.ngroups = 1;
		c.home = strdup("/");
		if (!c.home)
			goto oom;
	}
	/*
	 * Only an answer that lets the caller in is kept for the next second. A "no entry", or a
	 * member's groups without cordon, may be a lookup cut short: glibc's NSS, with `group:
	 * files systemd`, answers getgrouplist with the primary group alone (errno ESRCH) when
	 * the files source could not open /etc/group and the next one could (found in review:
	 * 14k-56k of 200k calls under a toggling fd limit). Kept, it would shut a member out for
	 * a second; looked up again, an outsider costs only its own connection's lookup.
	 */
	if (c.name && (c.uid == 0 || (have_group && has_group(&c, cordon_gid))))
		ident_store(&c, sig, now);
decide:
	c.authorised = c.uid == 0 || (c.name && have_group && has_group(&c, cordon_gid));
	*ret = c;
	return 0;
oom:
	caller_free(&c);
	return cordon_err(e, ENOMEM, "out of memory");
}

int ident_as_caller(const struct caller *c, int (*fn)(void *arg, cordon_error *e), void *arg,
		    cordon_error *e)
{
	return asuser_call(c->uid, c->gid, c->groups, (size_t)c->ngroups, fn, arg, e);
}

struct workdir_args {
	const char *path;
	int fd;
	char *canon;
	bool nofollow; /* root's: no symlink at all on the way (fsutil_walk_nofollow) */
};

/*
 * A caller's path is resolved without /proc magic links (/proc/<pid>/cwd, /root, /fd/N and
 * the like): such a link jumps to its target without the permission checks of the directories
 * above it, and /proc/self would be the daemon itself. Ordinary symlinks are followed, with
 * the caller's own rights.
 */
static int open_nomagic(int dfd, const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)flags | O_CLOEXEC,
				.resolve = RESOLVE_NO_MAGICLINKS };

	return (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
}

static int path_err(cordon_error *e, int err, const char *path)
{
	if (err == ELOOP)
		return cordon_err(e, err, "'%s': a /proc magic link or a symlink loop on the way",
				  path);
	return cordon_err(e, err, "'%s'", path);
}

/* mkdir -p, one component at a time, each resolved as open_nomagic does. */
static int mkdir_parents(const char *path, cordon_error *e)
{
	char buf[PATH_MAX];
	_cleanup_close_ int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char *comp, *save = NULL;

	if (dfd < 0)
		return cordon_err(e, errno, "open /");
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return cordon_err(e, ENAMETOOLONG, "'%s'", path);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int fd = open_nomagic(dfd, comp, O_PATH | O_DIRECTORY);

		if (fd < 0 && errno == ENOENT) {
			if (mkdirat(dfd, comp, 0755) < 0 && errno != EEXIST)
				return cordon_err(e, errno, "mkdir '%s' in '%s'", comp, path);
			fd = open_nomagic(dfd, comp, O_PATH | O_DIRECTORY);
		}
		if (fd < 0)
			return path_err(e, errno, path);
		(void)close(dfd);
		dfd = fd;
	}
	return 0;
}

static int open_workdir_fn(void *arg, cordon_error *e)
{
	struct workdir_args *a = arg;
	_cleanup_close_ int fd = -1;
	char proc[64], buf[PATH_MAX];
	ssize_t n;

	if (a->nofollow) {
		struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
					.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };

		fd = (int)syscall(SYS_openat2, AT_FDCWD, a->path, &how, sizeof(how));
		if (fd < 0 && errno == ELOOP)
			return cordon_err(
				e, 0,
				"'%s': a symlink on the way, which a workdir of root's may "
				"not pass through; give the real path",
				a->path);
	} else {
		fd = open_nomagic(AT_FDCWD, a->path, O_RDONLY | O_DIRECTORY);
	}
	if (fd < 0 && errno == ENOENT && !a->nofollow) {
		/* Created if missing (SPEC §2), by the caller, so it is theirs. */
		if (mkdir_parents(a->path, e) < 0)
			return -1;
		fd = open_nomagic(AT_FDCWD, a->path, O_RDONLY | O_DIRECTORY);
	}
	if (fd < 0)
		return path_err(e, errno, a->path);
	/*
	 * The caller must be able to read, write and search it: the check is made on the open
	 * directory with the caller's effective file-system identity (AT_EACCESS), never on a
	 * path that could be swapped after the check.
	 */
	if (syscall(SYS_faccessat2, fd, "", R_OK | W_OK | X_OK, AT_EACCESS | AT_EMPTY_PATH) < 0)
		return cordon_err(e, errno, "'%s'", a->path);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '/')
		return cordon_err(e, n < 0 ? errno : ENOENT, "'%s': cannot name it", a->path);
	buf[n] = '\0';
	a->canon = strdup(buf);
	if (!a->canon)
		return cordon_err(e, ENOMEM, "out of memory");
	a->fd = TAKE_FD(fd);
	return 0;
}

int ident_open_workdir(const struct caller *c, const char *path, bool local, int *ret_fd,
		       char **ret_path, cordon_error *e)
{
	struct workdir_args a = { .path = path, .fd = -1, .nofollow = c->uid == 0 };
	_cleanup_free_ char *lex = NULL;

	if (path[0] != '/')
		return cordon_err(e, 0, "must be an absolute path");
	if (strlen(path) >= PATH_MAX)
		return cordon_err(e, ENAMETOOLONG, "too long");
	if (pypath_normpath(path, &lex, e) < 0)
		return -1;
	/*
	 * A directory the local sandbox builds itself (/tmp, /dev...) is the caller's mistake,
	 * a 400 before anything is made for it (it was a 500 from the sandbox, after mkdir -p,
	 * and a session whose every run failed): the path as written first, then the directory
	 * it names once opened (a symlink into /dev/shm).
	 */
	if (local && !backend_local_workdir_ok(lex))
		return cordon_err(e, 0, "'%s': " BACKEND_LOCAL_WORKDIR_RULE, path);
	/*
	 * As root, as `cordon run` as root does (docs/security.md, "The workdir"): a symlink an
	 * earlier run planted would make this a workdir anywhere. Checked and made (if missing)
	 * here; open_workdir_fn opens it again without following any.
	 */
	if (a.nofollow) {
		if (fsutil_walk_nofollow(lex, true, NULL, e) < 0)
			return -1;
		a.path = lex;
	}
	if (ident_as_caller(c, open_workdir_fn, &a, e) < 0)
		return -1;
	if (local && !backend_local_workdir_ok(a.canon)) {
		cordon_err(e, 0, "'%s' is '%s', which " BACKEND_LOCAL_WORKDIR_RULE, path, a.canon);
		(void)close(a.fd);
		free(a.canon);
		return -1;
	}
	/*
	 * What it names goes in cordond's JSON (the runner's request, the session's answer),
	 * which cannot carry a path that is not UTF-8 (a symlink to such a directory): the
	 * caller's mistake, said as such; it was "busy: out of memory; try again" (503), and
	 * the runner that could not be sent the run was thrown away (found in red team).
	 */
	if (!body_is_text(a.canon)) {
		cordon_err(e, 0,
			   "'%s' names a directory whose path is not UTF-8, which cordond's JSON "
			   "cannot carry",
			   path);
		(void)close(a.fd);
		free(a.canon);
		return -1;
	}
	*ret_fd = a.fd;
	*ret_path = a.canon;
	return 0;
}

struct mktemp_args {
	const char *prefix;
	char *path;
};

static int mktemp_fn(void *arg, cordon_error *e)
{
	struct mktemp_args *a = arg;
	char tmpl[PATH_MAX];

	snprintf(tmpl, sizeof(tmpl), "/tmp/%s-XXXXXX", a->prefix);
	if (!mkdtemp(tmpl))
		return cordon_err(e, errno, "mkdtemp %s", tmpl);
	a->path = strdup(tmpl);
	if (!a->path) {
		(void)rmdir(tmpl);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	return 0;
}

int ident_mktemp(const struct caller *c, const char *prefix, char **ret_path, cordon_error *e)
{
	struct mktemp_args a = { .prefix = prefix };

	if (ident_as_caller(c, mktemp_fn, &a, e) < 0)
		return -1;
	*ret_path = a.path;
	return 0;
}

static int rmtree_fn(void *arg, cordon_error *e)
{
	return fsutil_rmtree(arg, e);
}

int ident_rmtree(const struct caller *c, const char *path, cordon_error *e)
{
	/* As the caller: whatever the command planted in its workdir, the kernel checks every
	 * unlink as if the caller had typed rm -rf. */
	return ident_as_caller(c, rmtree_fn, (void *)path, e);
}
