/* SPDX-License-Identifier: MIT */
/*
 * The user namespace that idmaps a root-owned workdir for a root caller (docs/security.md,
 * "Identity"). An idmapped mount shows each file's on-disk owner through a user namespace's
 * maps: with "0 65534 1", a file root owns on the disk is seen, inside, as owned by 65534 (the
 * command's uid), and what 65534 creates there is written to the disk as root's. Every other
 * id is unmapped: its files show as the overflow id and only their "other" permission bits
 * apply, so a third user's files in the workdir stay exactly as protected as they are.
 *
 * The kernel only takes such a namespace as an fd (mount_setattr's userns_fd), and the only
 * way to get one is a process that lives in it. So: a helper clone()d into a new user
 * namespace, sharing our memory (CLONE_VM: no page-table copy and no copy-on-write faults,
 * which cost a TLB-shootdown IPI each on this VM), that only sleeps on a pipe. We write its
 * maps from here (root holds CAP_SETUID/CAP_SETGID over the namespace's parent, so any
 * mapping is allowed), open /proc/<pid>/ns/user, and kill it. The namespace lives on as long
 * as that fd (and, once mounted, the mount) holds it. Nothing is cached across runs: each run
 * gets its own namespace and its own maps.
 */
#define _GNU_SOURCE
#include "backends/local/idmap.h"

#include "runtime/cleanup.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The helper shares our memory with the other threads of cordon (the daemon runs many), so it
 * only makes raw system calls on its own stack: no libc state, no errno (it would be the
 * creating thread's), no locks. It blocks every signal it can (a terminal's SIGINT to our
 * process group must not run cordon's handler on this stack), drops its copy of the pipe's
 * write end, and sleeps until the read returns: EOF once we close our end, or our death.
 * We SIGKILL it as well, which needs no cooperation.
 */
static int helper_main(void *arg)
{
	const struct idmap_helper *a = arg;
	uint64_t all = ~0ULL;
	char c;

	(void)syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof(all));
	(void)syscall(SYS_close, a->wfd);
	(void)syscall(SYS_read, a->rfd, &c, 1);
	(void)syscall(SYS_exit, 0);
	return 0;
}

static int write_map(pid_t pid, const char *file, unsigned from, unsigned to, cordon_error *e)
{
	_cleanup_close_ int fd = -1;
	char path[64], line[64];
	int n;

	(void)snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	n = snprintf(line, sizeof(line), "%u %u 1\n", from, to);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return cordon_err(e, errno, "idmap: open %s", path);
	if (write(fd, line, (size_t)n) != n)
		return cordon_err(e, errno, "idmap: write %s", path);
	return 0;
}

bool idmap_unsupported(int err)
{
	return err == EINVAL || err == EOPNOTSUPP || err == ENOSYS || err == EPERM;
}

int idmap_probe_dir(int dirfd)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP };
	_cleanup_close_ int tree = -1, userns = -1;
	cordon_error e;

	tree = (int)syscall(SYS_open_tree, dirfd, "",
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree < 0)
		return errno;
	if (idmap_userns_open(0, 65534, 0, 65534, &userns, &e) < 0)
		return e.code ? e.code : EIO;
	a.userns_fd = (uint64_t)userns;
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
		return errno;
	return 0;
}

/*
 * The last namespace made, kept for the next run of the same mapping by a process that makes
 * many runs (idmap_cache). It is only a mapping: no process is in it (its helper is killed),
 * nothing but this fd and the idmapped mounts made with it refer to it, and a mount idmapped
 * with it maps exactly as one idmapped with a fresh namespace of the same maps would. Making
 * one costs a clone, two map writes and a wake-up (0.3 to 0.6 ms on the reference VM).
 */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static bool cache_on;
static struct {
	int fd; /* -1: none */
	uid_t disk_uid, run_uid;
	gid_t disk_gid, run_gid;
} cached = { .fd = -1 };

void idmap_cache(bool on)
{
	pthread_mutex_lock(&cache_lock);
	cache_on = on;
	if (!on && cached.fd >= 0) {
		(void)close(cached.fd);
		cached.fd = -1;
	}
	pthread_mutex_unlock(&cache_lock);
}

/* A duplicate of the cached namespace for this mapping; -1 when there is none. */
static int cache_get(uid_t disk_uid, uid_t run_uid, gid_t disk_gid, gid_t run_gid)
{
	int fd = -1;

	pthread_mutex_lock(&cache_lock);
	if (cache_on && cached.fd >= 0 && cached.disk_uid == disk_uid &&
	    cached.run_uid == run_uid && cached.disk_gid == disk_gid && cached.run_gid == run_gid)
		fd = fcntl(cached.fd, F_DUPFD_CLOEXEC, 3);
	pthread_mutex_unlock(&cache_lock);
	return fd;
}

static void cache_put(int fd, uid_t disk_uid, uid_t run_uid, gid_t disk_gid, gid_t run_gid)
{
	pthread_mutex_lock(&cache_lock);
	if (cache_on) {
		int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		if (dup >= 0) {
			if (cached.fd >= 0)
				(void)close(cached.fd);
			cached.fd = dup;
			cached.disk_uid = disk_uid;
			cached.run_uid = run_uid;
			cached.disk_gid = disk_gid;
			cached.run_gid = run_gid;
		}
	}
	pthread_mutex_unlock(&cache_lock);
}

int idmap_userns_start(uid_t disk_uid, uid_t run_uid, gid_t disk_gid, gid_t run_gid,
		       struct idmap_helper *h, int *ret_fd, cordon_error *e)
{
	int pfd[2], fd = -1, rc = -1;
	char path[64];
	pid_t pid;

	h->pid = 0;
	fd = cache_get(disk_uid, run_uid, disk_gid, run_gid);
	if (fd >= 0) {
		*ret_fd = fd;
		return 0;
	}
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return cordon_err(e, errno, "idmap: pipe");
	h->rfd = pfd[0]; /* read end: EOF when we are done (or dead) */
	h->wfd = pfd[1]; /* its copy of the write end, closed first */
	pid = clone(helper_main, h->stack + sizeof(h->stack), CLONE_NEWUSER | CLONE_VM | SIGCHLD,
		    h);
	if (pid < 0) {
		cordon_err(e, errno, "idmap: clone a user namespace");
		goto out;
	}
	h->pid = pid;
	if (write_map(pid, "uid_map", (unsigned)disk_uid, (unsigned)run_uid, e) < 0 ||
	    write_map(pid, "gid_map", (unsigned)disk_gid, (unsigned)run_gid, e) < 0)
		goto out_kill;
	(void)snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cordon_err(e, errno, "idmap: open %s", path);
		goto out_kill;
	}
	rc = 0;
out_kill:
	(void)kill(pid, SIGKILL);
out:
	/* The helper has its own copy of the fd table: closing ours does not close its ends. */
	(void)close(pfd[0]);
	(void)close(pfd[1]);
	if (rc == 0) {
		cache_put(fd, disk_uid, run_uid, disk_gid, run_gid);
		*ret_fd = fd;
	}
	return rc;
}

void idmap_helper_reap(struct idmap_helper *h)
{
	if (!h || h->pid <= 0)
		return;
	while (waitpid(h->pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	h->pid = 0;
}

int idmap_userns_open(uid_t disk_uid, uid_t run_uid, gid_t disk_gid, gid_t run_gid, int *ret_fd,
		      cordon_error *e)
{
	struct idmap_helper h;
	int rc = idmap_userns_start(disk_uid, run_uid, disk_gid, run_gid, &h, ret_fd, e);

	/* The helper's stack lives in this frame: it is reaped before we return. */
	idmap_helper_reap(&h);
	return rc;
}
