/* SPDX-License-Identifier: MIT */
/*
 * Landlock: the second wall behind the mount namespace.
 *
 * The mounts already decide what the sandbox can see: a root built from an empty tmpfs with
 * read-only binds, the workdir and /tmp writable. Landlock restates that decision in a
 * different kernel subsystem (an LSM checked on every path walk, independent of the mount
 * table), so that one mistake in the mount setup, or a kernel bug that lets a process reach
 * another mount, does not give access to the host's files: a file outside the listed
 * hierarchies cannot be opened at all, and nothing outside the rw list can be written,
 * created, removed, renamed or truncated.
 *
 * It also scopes two IPC channels that the network namespace does not cover (ABI 6):
 * connecting to abstract Unix sockets created outside the sandbox (with network=host, the
 * host's @/tmp/.X11-unix/X0, container runtimes, D-Bus...) and sending signals to processes
 * outside it.
 *
 * Everything here runs in the forked child, so it uses only raw syscalls and the stack: no
 * malloc, no stdio, no locks (async-signal-safe).
 */
#define _GNU_SOURCE
#include "backends/local/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Rights newer than Debian 12's <linux/landlock.h> (ABI 2); values are kernel ABI. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* The newest ABI whose rights this file knows; a newer kernel is used at this level. */
#define LL_ABI_KNOWN 7

/* struct landlock_ruleset_attr as of ABI 6; older kernels are given a shorter prefix. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;	     /* ABI 6 */
};

/* The ABI 1 file-system rights. */
#define LL_FS_ABI1                                                                                 \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |                              \
	 LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |                          \
	 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |                              \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |                              \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |                            \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)

/* What a read-only hierarchy keeps: read files, list directories, execute programs. */
#define LL_FS_RO                                                                                   \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* The rights the kernel accepts on a rule whose anchor is not a directory. */
#define LL_FS_FILE                                                                                 \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |                              \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV)

int landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	/* ENOSYS: not built in; EOPNOTSUPP: built in but not enabled at boot (lsm=). */
	return abi > 0 ? (int)abi : 0;
}

/*
 * Every right the ABI can express is "handled", i.e. denied unless a rule grants it. A right
 * the kernel does not know cannot be handled (the kernel would reject the ruleset), so an
 * older kernel enforces less: ABI 1 cannot stop cross-directory renames and links (REFER is
 * then always denied, which is stricter, not weaker), ABI < 3 cannot stop truncate(2) of files
 * outside the rw list, ABI < 5 cannot stop ioctls on device files.
 */
static uint64_t ll_handled_fs(int abi)
{
	uint64_t fs = LL_FS_ABI1;

	if (abi >= 2)
		fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return fs;
}

static int ll_close_keep_errno(int fd, int err)
{
	(void)close(fd);
	return err;
}

/* Grant `access` beneath `path`; a path that does not exist is skipped, not an error. */
static int ll_add_path(int ruleset, const char *path, uint64_t access)
{
	struct landlock_path_beneath_attr pb;
	struct stat st;
	int fd, err = 0;

	/* O_PATH: we need the inode, not its content; follows symlinks (/lib -> usr/lib). */
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return -errno;
	}
	if (fstat(fd, &st) < 0)
		return ll_close_keep_errno(fd, -errno);
	if (!S_ISDIR(st.st_mode))
		access &= LL_FS_FILE;
	pb.allowed_access = access;
	pb.parent_fd = fd;
	if (access &&
	    syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		err = -errno;
	return ll_close_keep_errno(fd, err);
}

int landlock_apply(const char *const *ro, const char *const *rw, int abi)
{
	struct ll_ruleset_attr attr = { 0 };
	size_t attr_size;
	uint64_t all;
	int ruleset, r;

	if (abi < 1)
		return -EOPNOTSUPP;
	if (abi > LL_ABI_KNOWN)
		abi = LL_ABI_KNOWN;

	all = ll_handled_fs(abi);
	attr.handled_access_fs = all;
	attr_size = sizeof(attr.handled_access_fs);
	/*
	 * Network rights (ABI 4) are left unhandled: the network namespace already decides
	 * where sockets reach, and handling them would need a port list we do not have.
	 */
	if (abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		attr_size = sizeof(attr);
	}

	ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (ruleset < 0)
		return -errno;

	for (; ro && *ro; ro++) {
		r = ll_add_path(ruleset, *ro, LL_FS_RO & all);
		if (r < 0)
			return ll_close_keep_errno(ruleset, r);
	}
	/* rw hierarchies get every handled right: create, remove, rename within, truncate. */
	for (; rw && *rw; rw++) {
		r = ll_add_path(ruleset, *rw, all);
		if (r < 0)
			return ll_close_keep_errno(ruleset, r);
	}

	/*
	 * Without CAP_SYS_ADMIN the kernel insists on no_new_privs, so that a restricted
	 * process cannot exec a setuid program and have it act under the restrictions with
	 * more privilege (the confused-deputy case). The sandbox sets no_new_privs before
	 * seccomp anyway; setting it here too does not change what follows.
	 */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return ll_close_keep_errno(ruleset, -errno);
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		return ll_close_keep_errno(ruleset, -errno);
	return ll_close_keep_errno(ruleset, 0);
}
