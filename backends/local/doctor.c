/* SPDX-License-Identifier: MIT */
/*
 * `cordon doctor` data for the local backend. Each namespace and mount facility is probed the
 * way the sandbox uses it, in a forked child (so the caller's own namespaces and mounts are
 * never touched): as root directly, as an ordinary user inside a new user namespace, which is
 * what the sandbox itself does. Nothing here is cached; a report costs a few forks.
 */
#define _GNU_SOURCE
#include "backends/local/doctor.h"
#include "backends/local/cgroup.h"
#include "backends/local/idmap.h"
#include "backends/local/landlock.h"
#include "backends/backend.h"
#include "backends/local/sandbox.h"
#include "runtime/cleanup.h"
#include "runtime/strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum probe { P_UNSHARE, P_IDMAP, P_FSOPEN };

/* A file system's usual name, from statfs's magic number (the common ones). */
static const char *fs_name(unsigned long magic)
{
	switch (magic) {
	case EXT4_SUPER_MAGIC:
		return "ext4";
	case TMPFS_MAGIC:
		return "tmpfs";
	case OVERLAYFS_SUPER_MAGIC:
		return "overlayfs";
	case BTRFS_SUPER_MAGIC:
		return "btrfs";
	case XFS_SUPER_MAGIC:
		return "xfs";
	case NFS_SUPER_MAGIC:
		return "nfs";
	default:
		return "another file system";
	}
}

/*
 * Run one probe in a child; returns 0 when it worked, else the errno it failed with. An
 * unprivileged caller probes from inside a new user namespace, as the sandbox would.
 */
static int probe(enum probe what, int flag)
{
	int pfd[2], err = EIO;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return errno;
	pid = fork();
	if (pid < 0) {
		err = errno;
		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	if (pid == 0) {
		int r = 0, uflag = geteuid() != 0 ? CLONE_NEWUSER : 0;

		close(pfd[0]);
		switch (what) {
		case P_UNSHARE:
			r = unshare(flag | uflag) < 0 ? errno : 0;
			break;
		case P_FSOPEN: {
			int fs;

			if (unshare(CLONE_NEWNS | uflag) < 0) {
				r = errno;
				break;
			}
			fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
			r = fs < 0 ? errno : 0;
			break;
		}
		case P_IDMAP: {
			struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP,
						.userns_fd = INT_MAX - 1 };
			int t;

			if (unshare(CLONE_NEWNS | uflag) < 0) {
				r = errno;
				break;
			}
			t = (int)syscall(SYS_open_tree, AT_FDCWD, "/",
					 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
			if (t < 0) {
				r = errno;
				break;
			}
			/*
			 * A kernel that knows MOUNT_ATTR_IDMAP goes on to look up the user
			 * namespace fd (EBADF for one that is not open); one that does not
			 * rejects the attribute (EINVAL).
			 */
			if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
				r = errno == EBADF ? 0 : errno;
			break;
		}
		}
		(void)!write(pfd[1], &r, sizeof(r));
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &err, sizeof(err)) != (ssize_t)sizeof(err))
		err = EIO;
	close(pfd[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return err;
}

static bool seccomp_ok(int *ret_err)
{
	unsigned int action = SECCOMP_RET_ERRNO;

	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0) {
		*ret_err = errno;
		return false;
	}
	action = SECCOMP_RET_KILL_PROCESS;
	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0) {
		*ret_err = errno;
		return false;
	}
	return true;
}

static void read_line(const char *path, char *buf, size_t n)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (f && fgets(buf, (int)n, f))
		buf[strcspn(buf, "\n")] = '\0';
}

/* v1 controllers with a hierarchy, from /proc/cgroups ("name hierarchy num enabled"). */
static void v1_controllers(char *out, size_t n)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/cgroups", "re");
	char line[256], name[64];
	int hier, num, enabled;

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' ||
		    sscanf(line, "%63s %d %d %d", name, &hier, &num, &enabled) != 4)
			continue;
		if (hier == 0 || !enabled)
			continue;
		if (out[0])
			strncat(out, " ", n - strlen(out) - 1);
		strncat(out, name, n - strlen(out) - 1);
	}
}

/*
 * The sysctl, set to 0, that keeps ordinary users from making user namespaces, or NULL:
 * Debian's kernel.unprivileged_userns_clone (clone3 says EPERM) or user.max_user_namespaces
 * (ENOSPC). An ordinary caller's run needs one, so its error names the setting.
 */
const char *doctor_userns_knob_off(void)
{
	static const struct {
		const char *file, *name;
	} knobs[] = {
		{ "/proc/sys/kernel/unprivileged_userns_clone",
		  "kernel.unprivileged_userns_clone" },
		{ "/proc/sys/user/max_user_namespaces", "user.max_user_namespaces" },
	};

	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		_cleanup_fclose_ FILE *f = fopen(knobs[i].file, "re");
		long v;

		if (f && fscanf(f, "%ld", &v) == 1 && v == 0)
			return knobs[i].name;
	}
	return NULL;
}

/*
 * Processes of this pid namespace (not a sandbox's: those have their own) whose real uid and
 * gid are those root's runs give the command, 65534 and BACKEND_RUN_GID: the kernel would let
 * them ptrace a run's command and open its /proc/<pid>/root (backend.h says why the gid is
 * not nogroup's). -1 when /proc cannot be read.
 */
static int host_nobody_count(void)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct stat self, other;
	struct dirent *de;
	int n = 0;

	if (!d || stat("/proc/self/ns/pid", &self) < 0)
		return -1;
	while ((de = readdir(d))) {
		char path[300], text[2048];
		unsigned uid = 0, gid = 0;
		const char *u, *g;
		ssize_t len;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%s/ns/pid", de->d_name);
		if (stat(path, &other) < 0 || other.st_ino != self.st_ino ||
		    other.st_dev != self.st_dev)
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, text, sizeof(text) - 1);
		(void)close(fd);
		if (len <= 0)
			continue;
		text[len] = '\0';
		u = strstr(text, "\nUid:\t");
		g = strstr(text, "\nGid:\t");
		if (u && g && sscanf(u + 6, "%u", &uid) == 1 && sscanf(g + 6, "%u", &gid) == 1 &&
		    uid == 65534 && gid == BACKEND_RUN_GID)
			n++;
	}
	return n;
}

int doctor_report(const char *workdir, char **ret_text, cordon_error *e)
{
	static const struct {
		const char *name;
		int flag;
	} ns[] = {
		{ "mount namespace", CLONE_NEWNS },    { "pid namespace", CLONE_NEWPID },
		{ "network namespace", CLONE_NEWNET }, { "ipc namespace", CLONE_NEWIPC },
		{ "uts namespace", CLONE_NEWUTS },     { "cgroup namespace", CLONE_NEWCGROUP },
	};
	struct strbuf b = { 0 };
	bool root = geteuid() == 0, all_ns = true;
	char reason[256] = "", v2c[512] = "", v1c[512] = "";
	int err, abi;
	enum cgroup_mode cg;
	const char *knob;

	strbuf_addf(&b, "local sandbox (running as %s)\n",
		    root ? "root: the command runs as an unprivileged uid"
			 : "an ordinary user: a user namespace maps your own uid");

	/* user namespace: required for an ordinary user, not used by root */
	err = root ? probe(P_UNSHARE, CLONE_NEWUSER) : probe(P_UNSHARE, 0);
	if (!root && err && (knob = doctor_userns_knob_off()))
		strbuf_addf(&b, "  user namespace:     off (%s = 0); use: REQUIRED, missing\n",
			    knob);
	else
		strbuf_addf(&b, "  user namespace:     %s; use: %s\n", err ? strerror(err) : "yes",
			    root  ? "no (root needs none)"
			    : err ? "REQUIRED, missing"
				  : "yes");
	if (!root && err)
		all_ns = false;
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		err = probe(P_UNSHARE, ns[i].flag);
		strbuf_addf(&b, "  %-19s %s; use: %s\n", ns[i].name, err ? strerror(err) : "yes",
			    err ? "REQUIRED, missing" : "yes");
		if (err)
			all_ns = false;
	}
	err = probe(P_FSOPEN, 0);
	strbuf_addf(&b, "  new mount API:      %s; use: %s\n", err ? strerror(err) : "yes",
		    err ? "REQUIRED, missing (kernel >= 5.2)"
			: "yes (fd-based binds, race-free masks)");
	if (err)
		all_ns = false;

	if (seccomp_ok(&err))
		strbuf_addf(
			&b,
			"  seccomp:            yes (filter mode); use: yes (deny list, EPERM)\n");
	else {
		strbuf_addf(&b, "  seccomp:            %s; use: REQUIRED, missing\n",
			    strerror(err));
		all_ns = false;
	}

	abi = landlock_abi();
	if (abi > 0)
		strbuf_addf(&b,
			    "  Landlock:           ABI %d; use: yes (read the view, write workdir, "
			    "/tmp "
			    "and /dev)\n",
			    abi);
	else
		strbuf_addf(
			&b,
			"  Landlock:           no; use: no (the mount namespace is the only file "
			"wall; a profile with require = landlock refuses to run)\n");

	cg = cgroup_detect(reason, sizeof(reason));
	read_line("/sys/fs/cgroup/cgroup.controllers", v2c, sizeof(v2c));
	if (!v2c[0])
		read_line("/sys/fs/cgroup/unified/cgroup.controllers", v2c, sizeof(v2c));
	v1_controllers(v1c, sizeof(v1c));
	strbuf_addf(&b, "  cgroup v2:          %s%s%s\n",
		    v2c[0] ? "controllers: " : "no controllers", v2c, "");
	strbuf_addf(&b, "  cgroup v1:          %s%s\n", v1c[0] ? "controllers: " : "none", v1c);
	switch (cg) {
	case CGROUP_V2:
		strbuf_addf(
			&b,
			"  cgroup use:         v2 (memory, pids, CPU, peak memory, OOM, kill)\n");
		break;
	case CGROUP_V1:
		strbuf_addf(&b, "  cgroup use:         v1 memory/pids/cpuacct (%s)\n",
			    reason[0] ? reason : "no usable v2 controllers");
		break;
	default:
		strbuf_addf(&b,
			    "  cgroup use:         none (%s): RLIMIT_AS and wait4 rusage instead, "
			    "the pid namespace kills the run; memory is bounded per process, not "
			    "per run (require = cgroup refuses such runs)\n",
			    reason[0] ? reason : "unavailable");
		break;
	}

	/*
	 * Only root's runs idmap a workdir, and only root can probe the kernel for it: probed from
	 * an ordinary caller's user namespace it said "kernel Invalid argument" on a kernel that
	 * has them.
	 */
	if (geteuid() != 0)
		strbuf_addf(&b,
			    "  idmapped mounts:    not probed (only root's runs use them); use: "
			    "no (an ordinary caller's command runs as itself)\n");
	else {
		err = probe(P_IDMAP, 0);
		strbuf_addf(
			&b,
			"  idmapped mounts:    kernel %s; use: for a root-owned workdir (its "
			"files stay root's on the host; setuid/setgid bits refused by seccomp)\n",
			err ? strerror(err) : "yes");
	}
	if (geteuid() == 0) {
		/* The real test, on the workdir's own file system: the kernel's answer alone said
		 * "yes" for an overlayfs /tmp that then refused the mount. */
		const char *dir = workdir ? workdir : ".";
		_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct statfs sfs;
		int werr = dfd < 0 ? errno : idmap_probe_dir(dfd);
		char name[32];

		if (dfd >= 0 && fstatfs(dfd, &sfs) == 0)
			(void)snprintf(name, sizeof(name), "%s",
				       fs_name((unsigned long)sfs.f_type));
		else
			(void)snprintf(name, sizeof(name), "?");
		if (werr == 0)
			strbuf_addf(&b, "  workdir file system: %s (%s): idmapped mounts work\n",
				    name, dir);
		else
			strbuf_addf(&b,
				    "  workdir file system: %s (%s): no idmapped mount (%s): a "
				    "root-owned workdir there is bound as it is, with the access "
				    "other users have\n",
				    name, dir, strerror(werr));
	}

	if (geteuid() == 0) {
		int n = host_nobody_count();

		if (n > 0)
			strbuf_addf(
				&b,
				"  run ids:            root's runs are 65534:%d; %d process%s of "
				"this host run%s as that too: %s can ptrace a run's command and "
				"write its workdir (docs/security.md); give %s a user of %s own\n",
				BACKEND_RUN_GID, n, n == 1 ? "" : "es", n == 1 ? "s" : "",
				n == 1 ? "it" : "they", n == 1 ? "it" : "them",
				n == 1 ? "its" : "their");
		else if (n == 0)
			strbuf_addf(&b,
				    "  run ids:            root's runs are 65534:%d (nobody, not "
				    "nogroup); no host process has both\n",
				    BACKEND_RUN_GID);
	}
	strbuf_addf(&b, "  verdict:            %s\n",
		    all_ns ? "full isolation available"
			   : "the local sandbox cannot run here (a required facility is missing)");
	*ret_text = strbuf_steal(&b, NULL);
	return *ret_text ? 0 : cordon_err(e, ENOMEM, "out of memory");
}
