/* SPDX-License-Identifier: MIT */
/*
 * The raw system calls, not glibc's wrappers: glibc makes setgroups() and the set*id() family
 * process-wide (it signals every thread to follow, as POSIX wants), while the kernel's own calls
 * change only the calling thread's credentials, which is exactly what one request needs.
 * setfsuid() to a non-zero uid also clears CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER and
 * the other file capabilities from the thread's effective set, and restoring fsuid 0 brings them
 * back (capabilities(7)), so in between this thread really is the user for the file system.
 */
#define _GNU_SOURCE
#include "runtime/asuser.h"
#include "runtime/cleanup.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int thread_setgroups(size_t n, const gid_t *g)
{
	return (int)syscall(SYS_setgroups, n, g);
}

static uid_t thread_setfsuid(uid_t u)
{
	return (uid_t)syscall(SYS_setfsuid, u);
}

static gid_t thread_setfsgid(gid_t g)
{
	return (gid_t)syscall(SYS_setfsgid, g);
}

/* A thread stuck with someone's identity must not go on (serve the next request, say). */
static _Noreturn void die(void)
{
	static const char msg[] = "cordon: cannot restore this thread's identity; aborting\n";

	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	abort();
}

struct saved_ids {
	uid_t fsuid;
	gid_t fsgid;
	gid_t *groups;
	int ngroups;
};

static void restore_ids(const struct saved_ids *s)
{
	/* setfsuid() reports the old value, never an error: read back to be sure it took. */
	(void)thread_setfsuid(s->fsuid);
	(void)thread_setfsgid(s->fsgid);
	if (thread_setfsuid((uid_t)-1) != s->fsuid || thread_setfsgid((gid_t)-1) != s->fsgid ||
	    thread_setgroups((size_t)s->ngroups, s->groups) < 0)
		die();
}

/*
 * The thread's effective capabilities, set and restored on this thread only (capset(2) with
 * pid 0 is per-thread, like the fs ids above). setfsuid() clears only the file capabilities;
 * CAP_SYS_PTRACE, for one, would still let the thread follow /proc/<pid>/cwd of a process the
 * user may not trace. While acting as the user the thread holds none.
 */
static int thread_caps(struct __user_cap_data_struct data[2], bool set)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };

	return (int)syscall(set ? SYS_capset : SYS_capget, &h, data);
}

static void restore_caps(const struct __user_cap_data_struct saved[2])
{
	struct __user_cap_data_struct d[2];

	memcpy(d, saved, sizeof(d));
	if (thread_caps(d, true) < 0)
		die();
}

/*
 * Any change of the fs ids clears the thread's parent-death signal (prctl(2)): a runner, which
 * must die with cordond, switched for a policy check or a hide scan and no longer did (found
 * in testing: a member's run outlived a SIGKILLed cordond). Armed again once this thread is
 * itself, and if the parent died meanwhile, the signal it would have had is taken now.
 */
static void rearm_pdeathsig(int sig, pid_t parent)
{
	if (!sig)
		return;
	if (prctl(PR_SET_PDEATHSIG, sig) < 0)
		die();
	if (getppid() != parent)
		(void)kill(getpid(), sig);
}

int asuser_call(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups,
		int (*fn)(void *arg, cordon_error *e), void *arg, cordon_error *e)
{
	struct __user_cap_data_struct saved[2], none[2];
	_cleanup_free_ gid_t *own = NULL;
	struct saved_ids ids;
	int n, r, pdeath = 0;
	pid_t parent = getppid();

	if (geteuid() != 0) {
		/* Unprivileged (tests, development): already only itself. */
		return fn(arg, e);
	}
	if (prctl(PR_GET_PDEATHSIG, &pdeath) < 0)
		return cordon_err(e, errno, "PR_GET_PDEATHSIG");
	/* This thread's own groups, to come back to (cordond and its runners have none). */
	n = (int)syscall(SYS_getgroups, 0, NULL);
	own = malloc((size_t)(n > 0 ? n : 1) * sizeof(gid_t));
	if (n < 0 || !own || (n > 0 && (int)syscall(SYS_getgroups, n, own) != n))
		return cordon_err(e, n < 0 ? errno : ENOMEM, "getgroups");
	ids = (struct saved_ids){ .fsuid = thread_setfsuid((uid_t)-1),
				  .fsgid = thread_setfsgid((gid_t)-1),
				  .groups = own,
				  .ngroups = n };
	/* Groups first, then gid, then uid: each step needs the privilege the next drops. */
	if (groups && ngroups ? thread_setgroups(ngroups, groups) < 0
			      : thread_setgroups(1, &gid) < 0) {
		int err = errno;

		restore_ids(&ids);
		rearm_pdeathsig(pdeath, parent);
		return cordon_err(e, err, "setgroups");
	}
	(void)thread_setfsgid(gid);
	(void)thread_setfsuid(uid);
	if (thread_setfsgid((gid_t)-1) != gid || thread_setfsuid((uid_t)-1) != uid) {
		restore_ids(&ids);
		rearm_pdeathsig(pdeath, parent);
		return cordon_err(e, EPERM, "cannot take the file-system identity of uid %u",
				  (unsigned)uid);
	}
	if (uid != 0) {
		/* No capability the user lacks: the effective set empty, the permitted kept. */
		if (thread_caps(saved, false) < 0) {
			int err = errno;

			restore_ids(&ids);
			rearm_pdeathsig(pdeath, parent);
			return cordon_err(e, err, "capget");
		}
		memcpy(none, saved, sizeof(none));
		none[0].effective = none[1].effective = 0;
		if (thread_caps(none, true) < 0) {
			int err = errno;

			restore_ids(&ids);
			rearm_pdeathsig(pdeath, parent);
			return cordon_err(e, err, "capset");
		}
	}
	r = fn(arg, e);
	if (uid != 0)
		restore_caps(saved);
	restore_ids(&ids);
	rearm_pdeathsig(pdeath, parent);
	return r;
}
