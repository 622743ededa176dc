/* SPDX-License-Identifier: MIT */
/*
 * The namespace sandbox's internals, shared by sandbox.c (the parent: plan, clone, handshake,
 * kill, wait), mounts.c (the new root), hide.c (what to mask in the workdir) and init.c (the
 * child: pid 1 of the sandbox, then the command). Not an interface for anything else: local.c
 * sees only proc.h.
 *
 * The split follows one rule: everything that allocates, formats, reads the profile or walks a
 * directory happens in the parent, before clone, and ends up in a `struct sb_plan` that the
 * child only reads. After clone the child calls nothing but system calls and the few pure
 * helpers at the end of this header, so that a lock held by another thread of cordon (malloc's,
 * stdio's) at the moment of clone can never deadlock it.
 */
#pragma once

#include "backends/local/limits.h"

#include <cordon/cordon.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Setup steps, in the order the child runs them. The names are what an error message shows. */
enum sb_step {
	SB_STEP_NONE = 0,
	SB_STEP_START,
	SB_STEP_GATE,
	SB_STEP_NETNS,
	SB_STEP_GATE2,
	SB_STEP_CGROUP_JOIN,
	SB_STEP_USERNS,
	SB_STEP_PRIVATE,
	SB_STEP_OPEN_WORKDIR,
	SB_STEP_RO_BIND,
	SB_STEP_DEV_NODE,
	SB_STEP_NEW_TMPFS,
	SB_STEP_PROC,
	SB_STEP_PIVOT,
	SB_STEP_ROOT_LAYOUT,
	SB_STEP_TMP,
	SB_STEP_DEV,
	SB_STEP_PROC_MASK,
	SB_STEP_WORKDIR,
	SB_STEP_HIDE,
	SB_STEP_PROTECT,
	SB_STEP_ROOT_RO,
	SB_STEP_CHDIR,
	SB_STEP_HOSTNAME,
	SB_STEP_LOOPBACK,
	SB_STEP_CGROUPNS,
	SB_STEP_RLIMITS,
	SB_STEP_CAPS,
	SB_STEP_IDENTITY,
	SB_STEP_NO_NEW_PRIVS,
	SB_STEP_LANDLOCK,
	SB_STEP_SECCOMP,
	SB_STEP_FORK,
	SB_STEP_STDIO,
	SB_STEP_EXEC,
	SB_STEP__MAX
};

const char *sb_step_name(int step);

/* One message on the report socket (SOCK_SEQPACKET: one message, one read). */
enum { SB_MSG_ERROR = 1, SB_MSG_TRACE = 2 };
struct sb_msg {
	int kind;
	int step;
	int err;	  /* errno of the failed call */
	uint64_t t_ns;	  /* CLOCK_MONOTONIC when the step ended (trace) */
	char detail[200]; /* the path or item the step was working on */
};

/* A profile ro_bind entry, checked in the parent. */
struct sb_bind {
	const char *path; /* absolute; the same path on the host and inside */
	char *link;	  /* non-NULL: a symlink on the host; recreate it with this target */
	bool dir;	  /* mount point kind: directory or file */
};

/* A workdir entry to hide, found by hide.c. */
struct sb_hide {
	char *rel; /* relative to the workdir, no leading '/', never "." */
	dev_t dev; /* what the parent saw; the child refuses anything else at that name */
	ino_t ino;
	bool dir;
};

/*
 * A literal mask entry that did not exist: an empty file made in its place before the run, so
 * that it can be masked (a mount needs a target) and the command cannot create the name; it is
 * removed once the sandbox is gone, if it is still that file.
 */
struct sb_placeholder {
	char *rel;
	dev_t dev;
	ino_t ino;
	/*
	 * Open with a shared flock for the whole run, on the placeholders this run made and on
	 * those of concurrent runs in the same workdir it found (marked with HIDE_MARK_XATTR):
	 * a run removes one only when it can take the lock exclusively, i.e. when no other run
	 * still masks it (unlinking a mount point on the host would unmask it in their sandboxes).
	 */
	int fd;
};

/*
 * The bounds of the workdir walk for `ignore` patterns and glob masks (hide.c): directory
 * levels below the workdir, and entries. A workdir past either is refused (hide_scan).
 */
#define HIDE_MAX_DEPTH 64
#define HIDE_MAX_ENTRIES 1000000

struct sb_hide_list {
	struct sb_hide *v;
	size_t n, cap;
	bool truncated; /* the walk hit its depth or entry bound */
	size_t visited;
	unsigned threads; /* that walked the workdir: 1, or 2 when a second one walked part of it */
	struct sb_placeholder *ph;
	size_t nph;
	/*
	 * The directories on the way to each literal mask entry (`.git` for `.git/hooks`): each
	 * is bound onto itself in the sandbox, so the command cannot rename or remove it (EBUSY)
	 * and put a directory of its own, holding the masked names, in its place.
	 */
	struct sb_hide *pin;
	size_t npin, pincap;
	/*
	 * Privileged programs (setuid, setgid, file capabilities) of an idmapped workdir, which
	 * the command would own: each bound onto itself read-only (setid.c).
	 */
	struct sb_hide *ro;
	size_t nro, rocap;
};

/* Everything the child needs, prepared by the parent. Read-only after clone. */
struct sb_plan {
	int cmd_umask; /* the command's umask, or -1: init's own (cordon's caller's) */
	/* identity */
	bool userns; /* the caller is not root: a user namespace maps its own uid */
	uid_t uid;   /* the command's uid/gid, as seen inside */
	gid_t gid;
	/*
	 * As root: the command's supplementary groups, a run_as caller's (the daemon's member);
	 * NULL: gid alone. Ignored in a user namespace, where setgroups is denied.
	 */
	const gid_t *groups;
	size_t ngroups;
	char uid_map[32]; /* userns: "uid uid 1\n", written by the child itself */
	char gid_map[32];

	/* fds (all O_CLOEXEC in the parent) */
	int report_fd; /* child's end of the report socketpair */
	int go_fd;     /* read end of the gate pipe */
	int status_fd; /* init writes the command's wait status here */
	int stdin_fd;  /* -1: /dev/null inside */
	int stdout_fd;
	int stderr_fd;

	/* the workdir: canonical host path, and the inode the parent opened */
	const char *workdir;
	dev_t wd_dev;
	ino_t wd_ino;
	bool readonly;
	bool workdir_tmpfs; /* mount a tmpfs of tmp_size on the workdir (a temp one nobody keeps) */
	/*
	 * As root: the workdir's detached mount tree, cloned from the parent's fd and flagged
	 * (nosuid, nodev, read-only, idmapped) by the parent; the child only attaches it.
	 * -1 in a user namespace: the child clones the workdir itself (see mounts.c).
	 */
	int wd_tree_fd;

	/* the new root */
	const struct sb_bind *binds;
	size_t nbinds;
	const struct sb_hide *hides;
	size_t nhides;
	const struct sb_hide *pins; /* bound onto themselves before the hides (sb_hide_list) */
	size_t npins;
	const struct sb_hide *ro_files; /* bound onto themselves read-only (setid.c) */
	size_t nro_files;
	char tmp_size[32];
	char shm_size[32];

	bool netns;
	int netns_fd; /* a staged network namespace (stage.c) to enter instead of a new one; -1 */
	/*
	 * As root with nothing staged: clone3 makes no network namespace; the parent makes one
	 * (lo up) while the child builds its root and hands it over with the second gate.
	 */
	bool netns_at_gate2;
	bool trace;
	/*
	 * The parent moved the child off its own CPU after clone3 (sandbox.c, "spread"); the
	 * child puts back `cpus`, the caller's CPUs (a cpu_set_t), at the second gate, before
	 * anything of the command's can run.
	 */
	bool spread;
	unsigned long cpus[1024 / (8 * sizeof(unsigned long))];

	/* exec */
	char *const *argv;
	char *const *envp;
	const char *path_env; /* PATH of envp (or the default), for the lookup of argv[0] */
	/*
	 * The simple-command fast path (shfast.h): argv is {"sh", "-c", SCRIPT} and these are
	 * SCRIPT's words and dash's environment for them, tried first. NULL: no fast path.
	 */
	char *const *fast_argv;
	char **fast_envp;	  /* its PWD slot is filled by the command's process */
	size_t fast_pwd;	  /* index of that slot */
	const char *fast_pwd_env; /* the inherited "PWD=...", kept when it names the workdir */
	const char *fast_pwd_cwd; /* "PWD=<workdir>" otherwise */

	/* confinement */
	struct sb_limits limits;
	const struct sock_fprog *bpf;
	int landlock_abi;
	const char *ll_ro[4];
	const char *ll_rw[6];
};

/* What hide_scan does besides finding the names to hide (flags, or'ed). */
enum {
	/* Make absent literal masks (hide.c: placeholder); not under a read-only workdir. */
	HIDE_PLACEHOLDERS = 1 << 0,
	/*
	 * Also list in ret->ro what setid_scan would (setid.c: an idmapped workdir's privileged
	 * programs and special files), in the same walk of the workdir when the profile needs
	 * one (hide_walks), with setid_scan's bounds; by setid_scan itself when it does not.
	 */
	HIDE_SETID = 1 << 1,
};

/* hide.c: find what profile->ignore and profile->mask hide in the workdir (parent side). */
int hide_scan(int wd_fd, const char *workdir, const struct cordon_profile *p, unsigned flags,
	      struct sb_hide_list *ret, cordon_error *e);
/*
 * hide_scan with the walk's threads chosen: 1, the serial walk (the reference the tests
 * compare with); 2, the top-level subdirectories shared with a second thread whenever there
 * are two (tests); 0, what hide_scan does: shared once what is left looks worth a thread.
 * The result is the same (hide.c: walk_shared).
 */
int hide_scan_threads(int wd_fd, const char *workdir, const struct cordon_profile *p,
		      unsigned flags, int threads, struct sb_hide_list *ret, cordon_error *e);
/*
 * Every directory on the way to each file of l->ro (setid.c's protected files), added to
 * l->pin (each once, sorted: parents first), so that the child binds each onto itself
 * (mounts.c: pin_all) and the command cannot rename one (EBUSY, EXDEV). Without them a run
 * could move a protected file's directory back and forth while another run's scan walks the
 * workdir, which then misses the file and leaves it the command's to rewrite
 * (docs/security.md). A directory gone since the scan is left out: the file below it then
 * fails the setup.
 */
int hide_pin_protected(int wd_fd, struct sb_hide_list *l, cordon_error *e);
/* Tests only: the walk's second thread fails (ENOMEM) as it starts; the entry bound (0: 100,000). */
extern bool hide_test_worker_fails;
extern size_t hide_test_max_entries;
/* Tests only: fs.mount-max as sandbox.c's check before clone reads it (0: the kernel's). */
extern unsigned long sb_test_mount_max;
/* Tests only: the time following hidden symlinks may take (0: one second). */
extern uint64_t hide_test_symlink_budget_ns;
/* Remove the placeholders (after the sandbox is gone) and free them. */
void hide_placeholders_remove(int wd_fd, struct sb_placeholder *v, size_t n);
void hide_list_free(struct sb_hide_list *l);
/* True when the profile hides anything at all (no walk otherwise). */
bool hide_wanted(const struct cordon_profile *p);
/* True when hiding takes a walk of the workdir: an ignore pattern, or a glob mask. */
bool hide_walks(const struct cordon_profile *p);
/* The matching rule of AG2's check_ignore (ag2-behaviour.md §4.7) for one path. */
int hide_match_ignore(const char *pattern, const char *rel, const char *name, cordon_error *e);

/* mounts.c: in the child, build the new root and pivot into it. Returns 0 or -1 with *m. */
int mounts_apply(const struct sb_plan *pl, struct sb_msg *m);

/*
 * The same in two halves, with the mount fds held in between: a pre-built sandbox (sandbox.c)
 * does the first before its run is known, the second once its request has come.
 *  mounts_base: everything that depends on the profile only (the private tree, the ro_binds,
 *               /dev, /tmp, /proc and its masks, pivot_root); with_workdir: the workdir's
 *               tree is taken too (a user namespace must, before pivot_root).
 *  mounts_finish: the workdir (taken now unless have_workdir), its pins and hides, the root
 *               read-only, chdir. Closes every fd of *f, whatever happens.
 */
#define SB_MAX_BINDS 64
#define SB_N_DEV 5
struct sb_mounts {
	int bind[SB_MAX_BINDS];
	int dev[SB_N_DEV];
	int wd, wd_tree, root, tmp, dev_mnt, shm, proc, mask;
};
void mounts_init(struct sb_mounts *f);
int mounts_base(const struct sb_plan *pl, bool with_workdir, struct sb_mounts *f, struct sb_msg *m);
int mounts_finish(const struct sb_plan *pl, bool have_workdir, struct sb_mounts *f,
		  struct sb_msg *m);
int mounts_proc_readonly(void);

/*
 * The gate message that lets sandbox pid go on (init.c: gate_join reads it): its byte c, and
 * the fds that come with it: the run's network namespace (netns >= 0), and when cg is not
 * NULL the `tasks` files of its v1 cgroups, which the sandbox joins itself (cgroup.h:
 * cgroup_run_task_fds); a v2 cgroup we join pid to here. *ret_self (optional): whether the
 * sandbox joins itself. 0, or -1 with *e.
 */
struct cgroup_run;
int sb_gate_join(int sock, char c, int netns, struct cgroup_run *cg, pid_t pid, bool *ret_self,
		 cordon_error *e);

/* init.c: the child, from clone to exec. Never returns. */
__attribute__((noreturn)) void sb_child_main(const struct sb_plan *pl);

/*
 * A pre-built sandbox's child (init.c): base is the plan it was built from (its profile's
 * mounts, its sockets); the run's plan comes later, deep-copied by the parent into `arena`, a
 * shared mapping both have at the same address, and announced by one sb_request on the gate.
 */
#define SB_REQUEST_MAGIC 0x636f7264u /* "cord" */
enum { SB_REQ_STDIN = 1, SB_REQ_STDOUT = 2, SB_REQ_STDERR = 4, SB_REQ_WD_TREE = 8 };
#define SB_REQ_MAX_FDS 4
struct sb_request {
	uint32_t magic;
	uint32_t fds;	    /* SB_REQ_*: which fds come with it, in that order */
	uint64_t plan_size; /* bytes of the arena the plan uses; the plan is at its start */
	char mem_cg;	    /* 'c': the run's cgroup bounds memory; 'n': no cgroup */
};
__attribute__((noreturn)) void sb_prebuilt_main(const struct sb_plan *base, void *arena,
						size_t arena_size);

/* Child-side helpers (async-signal-safe). */
void sb_fail_set(struct sb_msg *m, int step, int err, const char *detail);
void sb_trace(const struct sb_plan *pl, int step);
/* Bring `lo` up in the calling thread's network namespace (also stage.c, parent side). */
int sb_loopback_up(void);
size_t sb_strlcpy(char *dst, const char *src, size_t n);
size_t sb_strlcat(char *dst, const char *src, size_t n);
