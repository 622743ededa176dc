/* SPDX-License-Identifier: MIT */
/*
 * Pre-built sandboxes: the parent's side (the child's is sb_prebuilt_main, init.c).
 *
 * A cordond runner makes one run at a time, and between two runs it has nothing to do. So
 * after each run it clones the next run's sandbox and lets it build everything that depends
 * on the profile only (mounts_base: the private tree, the read-only system binds, /dev, /tmp,
 * /proc and its masks, pivot_root; the staged network namespace entered, the staged cgroup
 * joined), from the mount plan of the run it just made. When the next request comes and its
 * plan has the same mounts (the same ro_bind list as found on the host now, tmp_size,
 * network), the run's plan is deep-copied into a shared mapping the sandbox has had since its
 * clone (the "arena": a memfd mapped before clone3, so at the same address on both sides) and
 * one message on the gate carries the rest: the run's stdio and workdir tree (SCM_RIGHTS) and
 * the cgroup's kind. The child then attaches the workdir, hides, makes / read-only, and goes
 * on exactly as a sandbox built on demand: cgroup namespace, rlimits, identity, no_new_privs,
 * Landlock, seccomp, the command.
 *
 * The rules (docs/daemon.md): a pre-built sandbox serves one run, never more; until its
 * request comes it runs nothing but cordon's code, as root in its new namespaces, so nothing
 * of an earlier run can be in it; one whose mounts differ from the request's, that is older
 * than PREBUILT_MAX_AGE_MS, or that died is killed and the run is built as usual; it dies with
 * its maker (PR_SET_PDEATHSIG), and cordon_unstage() kills it. Only root makes them (no user
 * namespace to set up in advance), and only a process that asked (cordon_stage_prebuild): the
 * CLI makes one run and exits.
 */
#define _GNU_SOURCE
#include "backends/local/prebuilt.h"
#include "backends/local/cgroup.h"
#include "backends/local/idmap.h"
#include "backends/local/stage.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The arena's size: sparse (a memfd), so only the pages a plan writes cost memory. */
#define ARENA_SIZE (8ull << 20)
/* A pre-built sandbox older than this is not used: its root is a copy of a minute-old host. */
#define PREBUILT_MAX_AGE_MS 60000.0

/* The mounts a sandbox was built for: what must match for a run to take it. */
struct pb_key {
	struct sb_bind *binds;
	size_t nbinds;
	char tmp_size[32];
	char shm_size[32];
	bool netns;
};

struct prebuilt {
	pid_t pid;
	int pidfd, report_fd, go_fd, status_fd;
	struct cgroup_run *cg;
	void *arena;
	struct pb_key key;
	double built_ms;
};

/* One process, one run at a time: no lock (cordon_stage_prebuild's contract). */
static bool enabled;
static bool noting; /* ever enabled: the runs' mounts are noted, for when it is again */
static struct pb_key last;
static struct prebuilt *pb;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

bool prebuilt_enabled(void)
{
	return enabled;
}

void cordon_stage_prebuild(bool on)
{
	prebuilt_enable(on);
}

static void key_free(struct pb_key *k)
{
	for (size_t i = 0; i < k->nbinds; i++) {
		free((char *)k->binds[i].path);
		free(k->binds[i].link);
	}
	free(k->binds);
	*k = (struct pb_key){ 0 };
}

void prebuilt_enable(bool on)
{
	enabled = on;
	if (on) {
		noting = true;
		/* Such a process makes many runs: the workdir's idmapping is kept too (idmap.h). */
		idmap_cache(true);
	} else {
		prebuilt_drop();
	}
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool key_fits(const struct pb_key *k, const struct sb_plan *pl)
{
	if (pl->userns || k->nbinds != pl->nbinds || k->netns != pl->netns ||
	    strcmp(k->tmp_size, pl->tmp_size) != 0 || strcmp(k->shm_size, pl->shm_size) != 0)
		return false;
	for (size_t i = 0; i < k->nbinds; i++)
		if (!str_eq(k->binds[i].path, pl->binds[i].path) ||
		    !str_eq(k->binds[i].link, pl->binds[i].link) ||
		    k->binds[i].dir != pl->binds[i].dir)
			return false;
	return true;
}

/* The key of pl's mounts, copied. */
static int key_of(struct pb_key *k, const struct sb_plan *pl)
{
	*k = (struct pb_key){ 0 };
	k->binds = calloc(pl->nbinds + 1, sizeof(*k->binds));
	if (!k->binds)
		return -1;
	for (size_t i = 0; i < pl->nbinds; i++) {
		k->nbinds++;
		k->binds[i].path = strdup(pl->binds[i].path);
		k->binds[i].link = pl->binds[i].link ? strdup(pl->binds[i].link) : NULL;
		k->binds[i].dir = pl->binds[i].dir;
		if (!k->binds[i].path || (pl->binds[i].link && !k->binds[i].link)) {
			key_free(k);
			return -1;
		}
	}
	memcpy(k->tmp_size, pl->tmp_size, sizeof(k->tmp_size));
	memcpy(k->shm_size, pl->shm_size, sizeof(k->shm_size));
	k->netns = pl->netns;
	return 0;
}

/* The plan a sandbox is pre-built from: k's mounts and nothing else. */
static void key_plan(const struct pb_key *k, struct sb_plan *pl)
{
	pl->binds = k->binds;
	pl->nbinds = k->nbinds;
	memcpy(pl->tmp_size, k->tmp_size, sizeof(pl->tmp_size));
	memcpy(pl->shm_size, k->shm_size, sizeof(pl->shm_size));
	pl->netns = k->netns;
}

void prebuilt_note(const struct sb_plan *pl)
{
	struct pb_key k;

	if (!noting || pl->userns || (last.binds && key_fits(&last, pl)))
		return;
	if (key_of(&k, pl) < 0)
		return;
	key_free(&last);
	last = k;
}

static bool pb_dead(const struct prebuilt *b)
{
	siginfo_t si = { 0 };

	if (waitid(P_PIDFD, (id_t)b->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return true;
	return si.si_pid != 0;
}

static void pb_free(struct prebuilt *b)
{
	if (!b)
		return;
	if (b->arena)
		(void)munmap(b->arena, ARENA_SIZE);
	closep(&b->pidfd);
	closep(&b->report_fd);
	closep(&b->go_fd);
	closep(&b->status_fd);
	cgroup_run_destroy(b->cg);
	key_free(&b->key);
	free(b);
}

/* Kill it (its namespace goes with its init), reap it, remove its cgroup. */
static void pb_destroy(struct prebuilt *b)
{
	int st;

	if (!b)
		return;
	if (b->pid > 0) {
		(void)syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
		while (waitpid(b->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	pb_free(b);
}

void prebuilt_drop(void)
{
	pb_destroy(TAKE_PTR(pb));
}

int prebuilt_make(cordon_error *e)
{
	_cleanup_close_ int memfd = -1, netns = -1;
	struct prebuilt *b = NULL;
	struct sb_plan base = { .netns_fd = -1, .wd_tree_fd = -1, .stdin_fd = -1 };
	struct clone_args ca = { 0 };
	int rep[2] = { -1, -1 }, go[2] = { -1, -1 }, status[2] = { -1, -1 };
	int pidfd = -1, r = -1;
	pid_t pid;

	if (!enabled || pb || !last.binds || geteuid() != 0)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return cordon_err(e, ENOMEM, "out of memory");
	b->pidfd = b->report_fd = b->go_fd = b->status_fd = -1;
	key_plan(&last, &base);
	if (key_of(&b->key, &base) < 0) {
		cordon_err(e, ENOMEM, "out of memory");
		goto fail;
	}
	key_plan(&b->key, &base);
	if (base.netns) {
		netns = stage_take_netns();
		if (netns < 0)
			netns = stage_new_netns(e);
		if (netns < 0)
			goto fail;
		base.netns_fd = netns;
	}
	memfd = memfd_create("cordon-plan", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, (off_t)ARENA_SIZE) < 0) {
		cordon_err(e, errno, "prebuild: memfd");
		goto fail;
	}
	b->arena = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (b->arena == MAP_FAILED) {
		b->arena = NULL;
		cordon_err(e, errno, "prebuild: mmap");
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rep) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0 ||
	    pipe2(status, O_CLOEXEC) < 0 || fcntl(status[0], F_SETFL, O_NONBLOCK) < 0) {
		cordon_err(e, errno, "prebuild: socketpair");
		goto fail;
	}
	base.report_fd = rep[1];
	base.go_fd = go[0];
	base.status_fd = status[1];

	/* As clone_child (sandbox.c), with the staged network namespace entered by the child. */
	ca.flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
	ca.exit_signal = SIGCHLD;
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		cordon_err(e, errno, "prebuild: clone3");
		goto fail;
	}
	if (pid == 0) {
		(void)close(go[1]);
		(void)close(rep[0]);
		(void)close(status[0]);
		sb_prebuilt_main(&base, b->arena, ARENA_SIZE);
	}
	b->pid = pid;
	b->pidfd = pidfd;
	b->report_fd = TAKE_FD(rep[0]);
	b->go_fd = TAKE_FD(go[1]);
	b->status_fd = TAKE_FD(status[0]);
	b->cg = stage_take_cgroup_staged();
	if (!b->cg && cgroup_run_stage(&b->cg, e) < 0)
		goto fail;
	/*
	 * No cgroup for us on this host: nothing is pre-built. Whether a run may go without one
	 * is its profile's to say (require = cgroup), which the run built on demand asks.
	 */
	if (!b->cg) {
		r = 0;
		goto fail;
	}
	/* Its cgroup first: it joins it itself (v1; cgroup.h says why), or we move it (v2). */
	if (sb_gate_join(b->go_fd, 'j', -1, b->cg, pid, NULL, e) < 0) {
		cordon_err_prefix(e, "prebuild");
		goto fail;
	}
	/* The first gate: it may build its root (it holds the network namespace's fd). */
	if (send(b->go_fd, "g", 1, MSG_NOSIGNAL) != 1) {
		cordon_err(e, errno, "prebuild: gate");
		goto fail;
	}
	b->built_ms = now_ms();
	pb = TAKE_PTR(b);
	r = 0;
fail:
	for (int i = 0; i < 2; i++) {
		closep(&rep[i]);
		closep(&go[i]);
		closep(&status[i]);
	}
	pb_destroy(b);
	return r;
}

/* ---------------------------------------------------------------------------------------- */
/* The run's plan, deep-copied into the arena                                              */

struct arena {
	char *base;
	size_t size, used;
	bool full;
};

static void *ar_alloc(struct arena *a, size_t n)
{
	size_t off = (a->used + 15) & ~(size_t)15;

	if (a->full || off > a->size || n > a->size - off) {
		a->full = true;
		return NULL;
	}
	a->used = off + n;
	return a->base + off;
}

static char *ar_str(struct arena *a, const char *s)
{
	size_t n;
	char *d;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	d = ar_alloc(a, n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static char **ar_strv(struct arena *a, char *const *v)
{
	size_t n = 0;
	char **d;

	if (!v)
		return NULL;
	while (v[n])
		n++;
	d = ar_alloc(a, (n + 1) * sizeof(*d));
	if (!d)
		return NULL;
	for (size_t i = 0; i < n; i++)
		d[i] = ar_str(a, v[i]);
	d[n] = NULL;
	return d;
}

static struct sb_hide *ar_hides(struct arena *a, const struct sb_hide *v, size_t n)
{
	struct sb_hide *d;

	if (!v || !n)
		return NULL;
	d = ar_alloc(a, n * sizeof(*d));
	if (!d)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		d[i] = v[i];
		d[i].rel = ar_str(a, v[i].rel);
	}
	return d;
}

/* *pl, everything it points to included, at the arena's start; false when it does not fit. */
static bool plan_copy(struct arena *a, const struct sb_plan *pl)
{
	struct sb_plan *d = ar_alloc(a, sizeof(*d));
	struct sb_bind *binds;
	struct sock_fprog *bpf = NULL;

	if (!d)
		return false;
	*d = *pl;
	d->workdir = ar_str(a, pl->workdir);
	if (pl->groups) {
		gid_t *g = ar_alloc(a, pl->ngroups * sizeof(*g));

		if (g)
			memcpy(g, pl->groups, pl->ngroups * sizeof(*g));
		d->groups = g;
	}
	binds = pl->nbinds ? ar_alloc(a, pl->nbinds * sizeof(*binds)) : NULL;
	for (size_t i = 0; binds && i < pl->nbinds; i++) {
		binds[i] = pl->binds[i];
		binds[i].path = ar_str(a, pl->binds[i].path);
		binds[i].link = ar_str(a, pl->binds[i].link);
	}
	d->binds = binds;
	d->hides = ar_hides(a, pl->hides, pl->nhides);
	d->pins = ar_hides(a, pl->pins, pl->npins);
	d->ro_files = ar_hides(a, pl->ro_files, pl->nro_files);
	d->argv = ar_strv(a, pl->argv);
	d->envp = ar_strv(a, pl->envp);
	d->path_env = ar_str(a, pl->path_env);
	d->fast_argv = ar_strv(a, pl->fast_argv);
	d->fast_envp = ar_strv(a, pl->fast_envp);
	d->fast_pwd_env = ar_str(a, pl->fast_pwd_env);
	d->fast_pwd_cwd = ar_str(a, pl->fast_pwd_cwd);
	if (pl->bpf) {
		bpf = ar_alloc(a, sizeof(*bpf));
		if (bpf) {
			bpf->len = pl->bpf->len;
			bpf->filter = ar_alloc(a, pl->bpf->len * sizeof(*bpf->filter));
			if (bpf->filter)
				memcpy(bpf->filter, pl->bpf->filter,
				       pl->bpf->len * sizeof(*bpf->filter));
		}
	}
	d->bpf = bpf;
	for (size_t i = 0; i < ARRAY_SIZE(d->ll_ro); i++)
		d->ll_ro[i] = ar_str(a, pl->ll_ro[i]);
	for (size_t i = 0; i < ARRAY_SIZE(d->ll_rw); i++)
		d->ll_rw[i] = ar_str(a, pl->ll_rw[i]);
	return !a->full;
}

int prebuilt_start(const struct sb_plan *pl, const struct cordon_profile *p,
		   struct prebuilt_run *ret, cordon_error *e)
{
	struct prebuilt *b = TAKE_PTR(pb);
	struct arena a;
	struct sb_request rq = { .magic = SB_REQUEST_MAGIC };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SB_REQ_MAX_FDS * sizeof(int))];
	} u = { 0 };
	struct iovec iov = { .iov_base = &rq, .iov_len = sizeof(rq) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[SB_REQ_MAX_FDS];
	size_t nfds = 0;
	double age;

	if (!b)
		return 0;
	age = now_ms() - b->built_ms;
	if (!key_fits(&b->key, pl) || age > PREBUILT_MAX_AGE_MS || pb_dead(b)) {
		pb_destroy(b);
		return 0;
	}
	a = (struct arena){ .base = b->arena, .size = ARENA_SIZE };
	if (!plan_copy(&a, pl)) {
		pb_destroy(b); /* a plan beyond the arena (megabytes of argv): built as usual */
		return 0;
	}
	/* Its cgroup gone meanwhile (an administrator): built as usual, which says what is wrong. */
	if (!b->cg || cgroup_run_adopt(b->cg, p, e) < 0) {
		pb_destroy(b);
		return 0;
	}
	if (pl->stdin_fd >= 0) {
		rq.fds |= SB_REQ_STDIN;
		fds[nfds++] = pl->stdin_fd;
	}
	rq.fds |= SB_REQ_STDOUT | SB_REQ_STDERR;
	fds[nfds++] = pl->stdout_fd;
	fds[nfds++] = pl->stderr_fd;
	if (pl->wd_tree_fd >= 0) {
		rq.fds |= SB_REQ_WD_TREE;
		fds[nfds++] = pl->wd_tree_fd;
	}
	rq.plan_size = a.used;
	rq.mem_cg = 'c';
	fsutil_attach_fds(&mh, u.buf, sizeof(u.buf), fds, nfds);
	/* Nothing sent: it died since the check above. Built as usual. */
	if (sendmsg(b->go_fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(rq)) {
		pb_destroy(b);
		return 0;
	}
	/* The child has its own mapping of the plan: ours is done with. */
	(void)munmap(b->arena, ARENA_SIZE);
	b->arena = NULL;
	*ret = (struct prebuilt_run){ .pid = b->pid,
				      .pidfd = TAKE_FD(b->pidfd),
				      .report_fd = TAKE_FD(b->report_fd),
				      .go_fd = TAKE_FD(b->go_fd),
				      .status_fd = TAKE_FD(b->status_fd),
				      .cg = TAKE_PTR(b->cg),
				      .age_ms = age };
	b->pid = 0;
	pb_free(b);
	return 1;
}
