/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's file system, built in the child (already in its own mount namespace) from an
 * empty tmpfs, with the new mount API (open_tree, fsopen/fsmount, move_mount, mount_setattr).
 *
 * Why the new mount API: every source is taken as a file descriptor (a detached copy of a
 * mount tree) and every target is reached through a file descriptor or a path inside our own
 * fresh tmpfs. Nothing is ever mounted by re-walking a string that a hostile workdir could
 * change between a check and the mount (the class of runc's CVE-2025-31133 and firejail's
 * CVE-2017-5180): the workdir is opened once with RESOLVE_NO_SYMLINKS and checked against the
 * inode the parent saw, and every hidden path is resolved beneath that fd.
 *
 * The order is forced by three kernel rules:
 *  1. Sources on the host (ro_bind paths, the workdir, /dev/null...) must be cloned while the
 *     host's tree is still our root, i.e. before pivot_root.
 *  2. A new proc instance may only be created (fsmount) while a fully visible proc is mounted
 *     in our mount namespace ("mount_too_revealing"; it matters in a user namespace), so proc is
 *     created before the old root goes away and attached after.
 *  3. pivot_root needs the new root to be a mount point; we attach the empty tmpfs on the host's
 *     /tmp (inside our private namespace only), chdir into it and pivot_root(".", "."), which
 *     stacks the old root on top of the new one, so umount2(".", MNT_DETACH) removes it.
 * After the pivot, the detached trees are attached at their paths in the new root, the masks
 * go on top, and the root and /dev tmpfs are made read-only.
 *
 * Only system calls and the pure helpers of sandbox.h run here (we are after clone).
 */
#define _GNU_SOURCE
#include "backends/local/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* <sys/mount.h> of glibc 2.36 clashes with <linux/mount.h>; declare the two calls we need. */
extern int mount(const char *src, const char *target, const char *type, unsigned long flags,
		 const void *data);
extern int umount2(const char *target, int flags);
#ifndef MS_REC
#define MS_REC 16384
#endif
#ifndef MS_PRIVATE
#define MS_PRIVATE (1 << 18)
#endif
#ifndef MNT_DETACH
#define MNT_DETACH 2
#endif

static int sys_open_tree(int dfd, const char *path, unsigned int flags)
{
	return (int)syscall(SYS_open_tree, dfd, path, flags); /* lint: wrapper */
}

static int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to,
			  unsigned int flags)
{
	return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static int sys_mount_setattr(int dfd, const char *path, unsigned int flags, uint64_t set)
{
	struct mount_attr a = { .attr_set = set };

	return (int)syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof(a));
}

static int sys_openat2(int dfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct open_how how = { .flags = flags, .resolve = resolve }; /* lint: wrapper */

	return (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		(void)close(*fd);
	*fd = -1;
}

/* A fresh detached tmpfs (or proc when size is NULL and fstype is "proc"). */
static int new_fs(const char *fstype, const char *size, const char *mode, uint64_t attrs)
{
	int fs, mnt, saved;

	fs = (int)syscall(SYS_fsopen, fstype, FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	if ((size && syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size, 0) < 0) ||
	    (mode && syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", mode, 0) < 0) ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		saved = errno;
		(void)close(fs);
		errno = saved;
		return -1;
	}
	mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, (unsigned int)attrs);
	saved = errno;
	(void)close(fs);
	errno = saved;
	return mnt;
}

/*
 * mkdir -p of an absolute path in the new root (only our tmpfs and read-only binds are there).
 * An existing component is fine: a path below a ro_bind already exists in the bound tree, and
 * mkdir reports EEXIST before EROFS. With `file`, the last component is an empty file (the
 * mount point of a file bind).
 */
static int make_path(const char *path, bool file)
{
	char buf[PATH_MAX];
	size_t len = sb_strlcpy(buf, path, sizeof(buf));
	struct stat st;

	if (len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (size_t i = 1; i <= len; i++) {
		bool last = i == len;
		char c = buf[i];

		if (!last && c != '/')
			continue;
		buf[i] = '\0';
		if (last && file) {
			int fd = open(buf, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);

			if (fd >= 0)
				(void)close(fd);
			else if (errno != EEXIST && errno != EROFS)
				return -1;
		} else if (mkdir(buf, 0755) < 0 && errno != EEXIST) {
			/* On a read-only bind the directory may already be there. */
			if (stat(buf, &st) < 0 || !S_ISDIR(st.st_mode))
				return -1;
		}
		buf[i] = c;
	}
	return 0;
}

/* The parent directory part of an absolute path, into buf ("/" for "/x"). */
static void dirname_of(const char *path, char *buf, size_t n)
{
	size_t len = sb_strlcpy(buf, path, n), i;

	if (len >= n)
		len = n - 1;
	for (i = len; i > 0 && buf[i] != '/'; i--)
		;
	buf[i > 0 ? i : 1] = '\0';
}

/*
 * /proc entries that reveal or change the host (what OCI runtimes call readonlyPaths and
 * maskedPaths, and more). The proc instance is our pid namespace's, so the process list is the
 * sandbox's own; these entries however describe or drive the whole machine. Most are also
 * root-only or read-only to the unprivileged uid the command runs as, so this is a second
 * wall, not the first; those that are not (key-users, iomem, ioports and the 0666 pressure
 * files) are why it matters. Entries this kernel does not have are skipped.
 *
 * Read-only: sys (sysctls), sysrq-trigger (reboot, crash, OOM-kill the host), irq (affinity),
 * bus and fs (device and file-system tunables), pressure (PSI files are 0666: a trigger is a
 * host-wide monitor any process could register).
 * Masked (an empty, mode 0000 file or directory: opening fails with EACCES): kernel memory and
 * addresses (kcore, kallsyms, kpage*, vmallocinfo, iomem, ioports, slabinfo, pagetypeinfo),
 * the kernel log (kmsg), keyrings of every user (keys, key-users), timers and scheduler state
 * of the host (timer_list, timer_stats, sched_debug, latency_stats), and hardware (acpi,
 * asound, scsi, mtrr, dma, driver).
 */
static const char *const proc_readonly[] = {
	"sys", "sysrq-trigger", "irq", "bus", "fs", "pressure"
};
static const char *const proc_masked[] = {
	"kcore",     "kallsyms",   "kpagecount",  "kpageflags",	  "kpagecgroup",   "vmallocinfo",
	"iomem",     "ioports",	   "slabinfo",	  "pagetypeinfo", "kmsg",	   "keys",
	"key-users", "timer_list", "timer_stats", "sched_debug",  "latency_stats", "acpi",
	"asound",    "scsi",	   "mtrr",	  "dma",	  "driver",
};

static int proc_harden(int proc_mnt, int mask_mnt, struct sb_msg *m)
{
	struct stat st;

	for (size_t i = 0; i < sizeof(proc_readonly) / sizeof(proc_readonly[0]); i++) {
		int t = sys_open_tree(proc_mnt, proc_readonly[i],
				      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);

		if (t < 0) {
			if (errno == ENOENT)
				continue;
			sb_fail_set(m, SB_STEP_PROC_MASK, errno, proc_readonly[i]);
			return -1;
		}
		if (sys_mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE,
				      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					      MOUNT_ATTR_NOEXEC) < 0 ||
		    sys_move_mount(t, "", proc_mnt, proc_readonly[i], MOVE_MOUNT_F_EMPTY_PATH) <
			    0) {
			sb_fail_set(m, SB_STEP_PROC_MASK, errno, proc_readonly[i]);
			close_fd(&t);
			return -1;
		}
		close_fd(&t);
	}
	for (size_t i = 0; i < sizeof(proc_masked) / sizeof(proc_masked[0]); i++) {
		int t;

		if (fstatat(proc_mnt, proc_masked[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		t = sys_open_tree(mask_mnt, S_ISDIR(st.st_mode) ? "D" : "F",
				  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (t < 0 ||
		    sys_move_mount(t, "", proc_mnt, proc_masked[i], MOVE_MOUNT_F_EMPTY_PATH) < 0) {
			sb_fail_set(m, SB_STEP_PROC_MASK, errno, proc_masked[i]);
			close_fd(&t);
			return -1;
		}
		close_fd(&t);
	}
	return 0;
}

/*
 * Hide the workdir entries the parent found (ignore globs, mask entries). Each name is resolved
 * beneath the workdir's mount fd with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: a component
 * swapped for a symlink since the parent's walk fails the lookup instead of leading elsewhere,
 * and the final inode must be the one the parent matched, so a rename race cannot make us
 * cover something else and leave the secret visible. Either case fails the setup (fail closed),
 * and so does a name that is gone: it may have been moved (a directory on its way renamed by a
 * concurrent run before that run pinned it, or by the host) rather than removed.
 *
 * The cover is an empty file or directory on a read-only, nosuid, nodev, noexec tmpfs: the
 * command reads nothing there, cannot write, chmod or create (EROFS), and cannot unmount it
 * (no capability, and seccomp denies the mount family). A symlink is covered too: its own
 * name then reads as an empty file.
 */
/* What cover() mounts on a workdir path. */
enum cover_kind {
	COVER_HIDE,	/* a clone of the mask source's empty file or directory */
	COVER_PIN,	/* a recursive clone of the directory itself, as it is */
	COVER_READONLY, /* a clone of the file itself, read-only (a privileged program) */
};

/*
 * Cover one workdir path: re-resolve it (no symlink on the way), check it is the inode the
 * parent saw, and mount over it what `kind` says. A name that is gone fails it.
 */
static int cover(int wd_tree, const struct sb_hide *h, int mask_mnt, enum cover_kind kind,
		 struct sb_msg *m)
{
	int step = kind == COVER_READONLY ? SB_STEP_PROTECT : SB_STEP_HIDE;
	struct stat st;
	int t, src;

	t = sys_openat2(wd_tree, h->rel,
			O_PATH | O_NOFOLLOW | O_CLOEXEC | (kind == COVER_PIN ? O_DIRECTORY : 0),
			RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (t < 0) {
		sb_fail_set(m, step, errno, h->rel);
		return -1;
	}
	if (fstat(t, &st) < 0 || st.st_dev != h->dev || st.st_ino != h->ino) {
		sb_fail_set(m, step, ESTALE, h->rel);
		close_fd(&t);
		return -1;
	}
	if (kind == COVER_PIN)
		src = sys_open_tree(
			t, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	else if (kind == COVER_READONLY)
		src = sys_open_tree(t, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	else
		src = sys_open_tree(mask_mnt, S_ISDIR(st.st_mode) ? "d" : "f",
				    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (src < 0 ||
	    (kind == COVER_READONLY &&
	     sys_mount_setattr(src, "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY) < 0) ||
	    sys_move_mount(src, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		sb_fail_set(m, step, errno, h->rel);
		close_fd(&src);
		close_fd(&t);
		return -1;
	}
	close_fd(&src);
	close_fd(&t);
	return 0;
}

static int hide_all(const struct sb_plan *pl, int wd_tree, int mask_mnt, struct sb_msg *m)
{
	for (size_t i = 0; i < pl->nhides; i++)
		if (cover(wd_tree, &pl->hides[i], mask_mnt, COVER_HIDE, m) < 0)
			return -1;
	return 0;
}

/*
 * The directories on the way to the mask entries (`.git` for `.git/hooks`), each bound onto
 * itself before anything is hidden: a mount point cannot be renamed or removed in the
 * namespace that sees it (EBUSY), so the command cannot move `.git` aside and make a new one
 * holding hooks or a config the masks no longer cover. The bind is a recursive clone of the
 * directory (its flags and anything mounted below it come along) and stays writable. Same
 * checks as hide_all: no symlink on the way, the inode the parent saw.
 */
static int pin_all(const struct sb_plan *pl, int wd_tree, struct sb_msg *m)
{
	for (size_t i = 0; i < pl->npins; i++)
		if (cover(wd_tree, &pl->pins[i], -1, COVER_PIN, m) < 0)
			return -1;
	return 0;
}

/*
 * The privileged programs of an idmapped workdir (setid.c), each bound onto itself read-only:
 * the command, which owns root's files there, could otherwise rewrite one through a shared
 * mapping, which keeps its setuid or setgid bit or its file capability. Readable and runnable
 * (nosuid) as before; opening it for writing fails with EROFS, renaming or removing it with
 * EBUSY, linking it elsewhere with EXDEV. Same checks as hide_all.
 */
static int protect_all(const struct sb_plan *pl, int wd_tree, struct sb_msg *m)
{
	for (size_t i = 0; i < pl->nro_files; i++)
		if (cover(wd_tree, &pl->ro_files[i], -1, COVER_READONLY, m) < 0)
			return -1;
	return 0;
}

static const char *const dev_nodes[SB_N_DEV] = { "null", "zero", "full", "random", "urandom" };
#define N_DEV SB_N_DEV

static void mnt_fds_close(struct sb_mounts *f, size_t nbinds)
{
	for (size_t i = 0; i < nbinds && i < SB_MAX_BINDS; i++)
		close_fd(&f->bind[i]);
	for (size_t i = 0; i < N_DEV; i++)
		close_fd(&f->dev[i]);
	close_fd(&f->wd);
	close_fd(&f->wd_tree);
	close_fd(&f->root);
	close_fd(&f->tmp);
	close_fd(&f->dev_mnt);
	close_fd(&f->shm);
	close_fd(&f->proc);
	close_fd(&f->mask);
}

/*
 * The workdir. As root, the parent cloned and flagged its tree from the fd it opened
 * (sandbox.c, prep_workdir_tree): nothing to look up here. In a user namespace it could not,
 * so we look the directory up again: our mount namespace is a copy made at clone time, where
 * the parent's fd cannot be cloned (open_tree refuses another namespace's mounts). The parent
 * passed the canonical path; no symlink is allowed on the way (a swapped component fails with
 * ELOOP), and the inode must be the parent's (anything renamed into place fails with ESTALE).
 */
static int workdir_tree(const struct sb_plan *pl, struct sb_mounts *f, struct sb_msg *m)
{
	struct stat st;

	if (pl->wd_tree_fd >= 0) {
		f->wd_tree = pl->wd_tree_fd;
		return 0;
	}
	f->wd = sys_openat2(AT_FDCWD, pl->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC,
			    RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (f->wd < 0) {
		sb_fail_set(m, SB_STEP_OPEN_WORKDIR, errno, pl->workdir);
		return -1;
	}
	if (fstat(f->wd, &st) < 0 || st.st_dev != pl->wd_dev || st.st_ino != pl->wd_ino) {
		sb_fail_set(m, SB_STEP_OPEN_WORKDIR, ESTALE, pl->workdir);
		return -1;
	}
	/*
	 * AT_RECURSIVE: mounts below the workdir come along (and in a user namespace a
	 * non-recursive clone of a tree with locked submounts is refused anyway). nosuid and nodev
	 * always; read-only under --readonly. mount_setattr only adds flags here, so the locked
	 * flags of an unprivileged caller's mounts are never an obstacle.
	 */
	f->wd_tree = sys_open_tree(
		f->wd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (f->wd_tree < 0 ||
	    sys_mount_setattr(f->wd_tree, "", AT_EMPTY_PATH | AT_RECURSIVE,
			      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				      (pl->readonly ? MOUNT_ATTR_RDONLY : 0)) < 0) {
		sb_fail_set(m, SB_STEP_OPEN_WORKDIR, errno, pl->workdir);
		return -1;
	}
	return 0;
}

/*
 * The workdir's tree, held by f->wd_tree until layout_workdir attaches it. In a user namespace
 * this looks the host's path up, so it must come before pivot_root; as root it only takes the
 * parent's tree (or makes the tmpfs), which a pre-built sandbox does after its request came.
 */
static int collect_workdir(const struct sb_plan *pl, struct sb_mounts *f, struct sb_msg *m)
{
	if (pl->workdir_tmpfs) {
		/*
		 * A temp workdir that nobody keeps is a tmpfs of tmp_size inside, the command's
		 * own: what it writes is bounded (ENOSPC at the limit, in memory the run's cgroup
		 * counts) and never reaches the host's disk, whose root-reserved blocks a run could
		 * otherwise fill. The host directory is not bound at all (its mount point is made
		 * in the sandbox's own /tmp): a clone of it, dropped unattached, would cost an RCU
		 * grace period (issue 15).
		 */
		f->wd_tree =
			new_fs("tmpfs", pl->tmp_size, "0700", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
		if (f->wd_tree < 0 ||
		    fchownat(f->wd_tree, "", pl->uid, pl->gid, AT_EMPTY_PATH) < 0 ||
		    (pl->readonly &&
		     sys_mount_setattr(f->wd_tree, "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY) < 0)) {
			sb_fail_set(m, SB_STEP_NEW_TMPFS, errno, pl->workdir);
			return -1;
		}
	} else if (workdir_tree(pl, f, m) < 0) {
		return -1;
	}
	sb_trace(pl, SB_STEP_OPEN_WORKDIR);
	return 0;
}

/* Phase 1, on the host's tree: clone every source and create every new file system. */
static int collect(const struct sb_plan *pl, struct sb_mounts *f, struct sb_msg *m)
{
	struct stat st;
	char dev_path[32];
	int fd;

	/* ro_bind: read-only, nosuid, nodev, recursively (a submount must not stay writable). */
	for (size_t i = 0; i < pl->nbinds; i++) {
		const struct sb_bind *b = &pl->binds[i];

		if (b->link)
			continue;
		f->bind[i] = sys_open_tree(AT_FDCWD, b->path,
					   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
						   AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT);
		if (f->bind[i] < 0 ||
		    sys_mount_setattr(f->bind[i], "", AT_EMPTY_PATH | AT_RECURSIVE,
				      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) <
			    0) {
			sb_fail_set(m, SB_STEP_RO_BIND, errno, b->path);
			return -1;
		}
	}
	sb_trace(pl, SB_STEP_RO_BIND);

	/*
	 * The five harmless character devices, bound one by one from the host's /dev. These are
	 * the only mounts without nodev; each is a single inode, so nothing else becomes openable.
	 */
	for (size_t i = 0; i < N_DEV; i++) {
		errno = 0;
		sb_strlcpy(dev_path, "/dev/", sizeof(dev_path));
		sb_strlcat(dev_path, dev_nodes[i], sizeof(dev_path));
		f->dev[i] = sys_open_tree(AT_FDCWD, dev_path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (f->dev[i] < 0 || fstat(f->dev[i], &st) < 0 || !S_ISCHR(st.st_mode) ||
		    sys_mount_setattr(f->dev[i], "", AT_EMPTY_PATH,
				      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC) < 0) {
			sb_fail_set(m, SB_STEP_DEV_NODE, errno ? errno : ENODEV, dev_path);
			return -1;
		}
	}
	sb_trace(pl, SB_STEP_DEV_NODE);

	/*
	 * New file systems. The root is tiny (it only holds mount points and symlinks) and becomes
	 * read-only once laid out. /tmp and /dev/shm are the only writable places besides the
	 * workdir, each size-limited so a disk fill ends at its limit (ENOSPC) in RAM we chose.
	 */
	errno = 0;
	f->root = new_fs("tmpfs", "1m", "0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (f->root < 0) {
		sb_fail_set(m, SB_STEP_NEW_TMPFS, errno, "/");
		return -1;
	}
	f->tmp = new_fs("tmpfs", pl->tmp_size, "1777", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (f->tmp < 0) {
		sb_fail_set(m, SB_STEP_NEW_TMPFS, errno, "/tmp");
		return -1;
	}
	f->dev_mnt = new_fs("tmpfs", "64k", "0755",
			    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (f->dev_mnt < 0) {
		sb_fail_set(m, SB_STEP_NEW_TMPFS, errno, "/dev");
		return -1;
	}
	f->shm = new_fs("tmpfs", pl->shm_size, "1777",
			MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (f->shm < 0) {
		sb_fail_set(m, SB_STEP_NEW_TMPFS, errno, "/dev/shm");
		return -1;
	}
	/*
	 * The mask source: an empty file "f" (0444) and an empty directory "d" (0555) for the
	 * workdir's hidden paths, and their inaccessible twins "F" and "D" (0000) for /proc.
	 * Every cover is a clone of one of them, so covering a thousand paths costs no
	 * superblock at all. They live in /dev's tmpfs, in the directory /dev/shm is mounted on,
	 * so nothing in the sandbox can see them (beneath a mount point), and the clones, all
	 * taken after /dev is made read-only (layout), are read-only, nosuid, nodev and noexec
	 * like it. (A tmpfs of their own would never be attached: dropping it at the end is an
	 * unmount, which waits for an RCU grace period.) In the workdir, empty and readable
	 * rather than inaccessible: a hidden secret reads as nothing, and a hidden .git/config,
	 * .bashrc or .vscode still works as an empty one (git, shells and editors do not fail
	 * on it). In /proc, where nothing depends on them, opening kcore or kpageflags simply
	 * fails. f->mask is an O_PATH fd of that directory, which still reaches them once
	 * /dev/shm is mounted over it.
	 */
	if (mkdirat(f->dev_mnt, "shm", 01777) < 0)
		goto mask_fail;
	f->mask = openat(f->dev_mnt, "shm", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (f->mask < 0)
		goto mask_fail;
	fd = openat(f->mask, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0 || close(fd) < 0 || mkdirat(f->mask, "d", 0555) < 0)
		goto mask_fail;
	fd = openat(f->mask, "F", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
	if (fd < 0 || close(fd) < 0 || mkdirat(f->mask, "D", 0) < 0) {
mask_fail:
		sb_fail_set(m, SB_STEP_NEW_TMPFS, errno, "mask");
		return -1;
	}
	sb_trace(pl, SB_STEP_NEW_TMPFS);

	/* proc of our pid namespace; see rule 2 at the top for why it is created this early. */
	f->proc = new_fs("proc", NULL, NULL,
			 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (f->proc < 0) {
		sb_fail_set(m, SB_STEP_PROC, errno, "/proc");
		return -1;
	}
	sb_trace(pl, SB_STEP_PROC);
	return 0;
}

static int pivot(const struct sb_plan *pl, struct sb_mounts *f, struct sb_msg *m)
{
	static const char *const bases[] = { "/tmp", "/mnt", "/" };
	int r = -1;

	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]) && r < 0; i++)
		r = sys_move_mount(f->root, "", AT_FDCWD, bases[i], MOVE_MOUNT_F_EMPTY_PATH);
	/*
	 * pivot_root(".", "."): the old root ends up stacked on ".", and the detach removes it
	 * and every host mount below it from our namespace. From here on only the trees we cloned
	 * (held by fds) remain reachable; the host's tree is gone for good, including for the
	 * command's `..` and for /proc/self/root tricks.
	 */
	if (r < 0 || fchdir(f->root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
		sb_fail_set(m, SB_STEP_PIVOT, errno, "/");
		return -1;
	}
	sb_trace(pl, SB_STEP_PIVOT);
	return 0;
}

static int attach(int tree, const char *path, bool file, int step, struct sb_msg *m)
{
	if (make_path(path, file) < 0 ||
	    sys_move_mount(tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		sb_fail_set(m, step, errno, path);
		return -1;
	}
	return 0;
}

static int layout(const struct sb_plan *pl, struct sb_mounts *f, struct sb_msg *m)
{
	char parent[PATH_MAX];

	for (size_t i = 0; i < pl->nbinds; i++) {
		const struct sb_bind *b = &pl->binds[i];

		if (b->link) {
			/* Merged /usr: /bin -> usr/bin is recreated, not bound. */
			dirname_of(b->path, parent, sizeof(parent));
			if (make_path(parent, false) < 0 ||
			    (symlink(b->link, b->path) < 0 && errno != EEXIST)) {
				sb_fail_set(m, SB_STEP_ROOT_LAYOUT, errno, b->path);
				return -1;
			}
		} else if (attach(f->bind[i], b->path, !b->dir, SB_STEP_ROOT_LAYOUT, m) < 0) {
			return -1;
		}
	}
	sb_trace(pl, SB_STEP_ROOT_LAYOUT);

	if (attach(f->tmp, "/tmp", false, SB_STEP_TMP, m) < 0)
		return -1;
	sb_trace(pl, SB_STEP_TMP);

	/* /dev: the five nodes, the fd symlinks, /dev/shm; no tty, no pts, no /dev/mem... */
	if (attach(f->dev_mnt, "/dev", false, SB_STEP_DEV, m) < 0)
		return -1;
	for (size_t i = 0; i < N_DEV; i++) {
		int fd = openat(f->dev_mnt, dev_nodes[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0666);

		if (fd < 0 || close(fd) < 0 ||
		    sys_move_mount(f->dev[i], "", f->dev_mnt, dev_nodes[i],
				   MOVE_MOUNT_F_EMPTY_PATH) < 0) {
			sb_fail_set(m, SB_STEP_DEV, errno, dev_nodes[i]);
			return -1;
		}
	}
	if (symlinkat("/proc/self/fd", f->dev_mnt, "fd") < 0 ||
	    symlinkat("/proc/self/fd/0", f->dev_mnt, "stdin") < 0 ||
	    symlinkat("/proc/self/fd/1", f->dev_mnt, "stdout") < 0 ||
	    symlinkat("/proc/self/fd/2", f->dev_mnt, "stderr") < 0 ||
	    sys_move_mount(f->shm, "", f->dev_mnt, "shm", MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		sb_fail_set(m, SB_STEP_DEV, errno, "/dev");
		return -1;
	}
	/* Non-recursive: /dev/shm and the device binds are separate mounts and keep their flags. */
	if (sys_mount_setattr(f->dev_mnt, "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY) < 0) {
		sb_fail_set(m, SB_STEP_DEV, errno, "/dev");
		return -1;
	}
	sb_trace(pl, SB_STEP_DEV);

	if (attach(f->proc, "/proc", false, SB_STEP_PROC, m) < 0 ||
	    proc_harden(f->proc, f->mask, m) < 0)
		return -1;
	sb_trace(pl, SB_STEP_PROC_MASK);

	return 0;
}

static int layout_workdir(const struct sb_plan *pl, struct sb_mounts *f, struct sb_msg *m)
{
	/*
	 * The workdir last: it may live below /tmp (cordon's temp dirs do) or below a ro_bind,
	 * and must then sit on top of them. Its hidden entries go on top of it.
	 */
	if (attach(f->wd_tree, pl->workdir, false, SB_STEP_WORKDIR, m) < 0)
		return -1;
	sb_trace(pl, SB_STEP_WORKDIR);
	if (pin_all(pl, f->wd_tree, m) < 0 || protect_all(pl, f->wd_tree, m) < 0 ||
	    hide_all(pl, f->wd_tree, f->mask, m) < 0)
		return -1;
	sb_trace(pl, SB_STEP_HIDE);

	/*
	 * The root tmpfs read-only, non-recursively: the command cannot create files at / (or
	 * turn / into a scratch area Landlock would then have to police).
	 */
	if (sys_mount_setattr(AT_FDCWD, "/", 0, MOUNT_ATTR_RDONLY) < 0) {
		sb_fail_set(m, SB_STEP_ROOT_RO, errno, "/");
		return -1;
	}
	sb_trace(pl, SB_STEP_ROOT_RO);
	if (chdir(pl->workdir) < 0) {
		sb_fail_set(m, SB_STEP_CHDIR, errno, pl->workdir);
		return -1;
	}
	return 0;
}

void mounts_init(struct sb_mounts *f)
{
	for (size_t i = 0; i < SB_MAX_BINDS; i++)
		f->bind[i] = -1;
	for (size_t i = 0; i < N_DEV; i++)
		f->dev[i] = -1;
	f->wd = f->wd_tree = f->root = f->tmp = f->dev_mnt = f->shm = f->proc = f->mask = -1;
}

int mounts_base(const struct sb_plan *pl, bool with_workdir, struct sb_mounts *f, struct sb_msg *m)
{
	int r;

	if (pl->nbinds > SB_MAX_BINDS) {
		sb_fail_set(m, SB_STEP_RO_BIND, E2BIG, "too many ro_bind entries");
		return -1;
	}
	/*
	 * Nothing we mount may propagate back to the host's mount namespace (or to any peer):
	 * make the whole copied tree private before the first mount.
	 */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		sb_fail_set(m, SB_STEP_PRIVATE, errno, "/");
		return -1;
	}
	sb_trace(pl, SB_STEP_PRIVATE);
	r = with_workdir ? collect_workdir(pl, f, m) : 0;
	if (r == 0)
		r = collect(pl, f, m);
	if (r == 0)
		r = pivot(pl, f, m);
	if (r == 0)
		r = layout(pl, f, m);
	if (r < 0)
		mnt_fds_close(f, pl->nbinds);
	return r;
}

/*
 * /proc read-only to the command, as Landlock has it where the kernel has Landlock (its rules
 * grant writes below the workdir, /tmp and /dev only). Without Landlock the command could
 * write its own /proc/self files: oom_score_adj back down from the 500 limits_oom_first gave
 * it (without CAP_SYS_RESOURCE, which root lacks in cordond's unit, nothing pins it), level
 * with cordond again; coredump_filter. Last, after the rlimits (limits_apply writes
 * coredump_filter), and while we may still change a mount. Non-recursive: the read-only and
 * masked entries below it are mounts of their own.
 */
int mounts_proc_readonly(void)
{
	return sys_mount_setattr(AT_FDCWD, "/proc", 0, MOUNT_ATTR_RDONLY);
}

int mounts_finish(const struct sb_plan *pl, bool have_workdir, struct sb_mounts *f,
		  struct sb_msg *m)
{
	int r = 0;

	if (pl->nbinds > SB_MAX_BINDS) {
		sb_fail_set(m, SB_STEP_RO_BIND, E2BIG, "too many ro_bind entries");
		r = -1;
	}
	if (r == 0 && !have_workdir) {
		/* Only as root: a user namespace's workdir is looked up on the host's tree. */
		if (pl->wd_tree_fd < 0 && !pl->workdir_tmpfs) {
			sb_fail_set(m, SB_STEP_OPEN_WORKDIR, EINVAL, pl->workdir);
			r = -1;
		} else {
			r = collect_workdir(pl, f, m);
		}
	}
	if (r == 0)
		r = layout_workdir(pl, f, m);
	/* init keeps running after this: drop our references to the trees (they stay mounted). */
	mnt_fds_close(f, pl->nbinds);
	return r;
}

int mounts_apply(const struct sb_plan *pl, struct sb_msg *m)
{
	struct sb_mounts f;

	mounts_init(&f);
	if (mounts_base(pl, true, &f, m) < 0)
		return -1;
	return mounts_finish(pl, true, &f, m);
}
