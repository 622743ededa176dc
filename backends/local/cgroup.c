/* SPDX-License-Identifier: MIT */
/*
 * One cgroup per run.
 *
 * What it is for: rlimits bound each process; a cgroup bounds the run. The memory limit
 * counts every process of the run together (and the tmpfs pages of its /tmp), the pids
 * limit stops a fork bomb however it forks, CPU time, peak memory and OOM kills are read
 * from the cgroup after the run, and the kill at the end reaches every process that is in it,
 * whatever it did to escape its process group or session (setsid, double fork).
 *
 * Where it goes: a directory `cordon/<run>` under the cgroup this process is in, so that
 * the limits an administrator put on cordon itself (systemd's MemoryMax= on cordond, a
 * container's limits) also bound what it runs; the hierarchy's root only when that is not
 * possible and we are root. Each run gets a unique name (pid, counter, random), so
 * concurrent runs, in threads of the daemon or in several processes, never share one.
 *
 * cgroup v2 where its memory and pids controllers are ours to use: in the root cgroup (as
 * root), or below a delegated cgroup (systemd Delegate=yes: the parent of our own cgroup is
 * delegated, and our own, which holds processes, cannot have controlled children itself: the
 * "no internal processes" rule). Otherwise the v1 memory, pids and cpuacct hierarchies, as on
 * hybrid hosts where the controllers are bound to v1 and the v2 tree has none; the v1 freezer
 * too, when it is there, for a kill that a fork loop cannot outrun.
 *
 * No cgroup (an unprivileged user on a v1 host, a container without delegation): the run
 * goes on without one unless the profile requires it; the caller then uses RLIMIT_AS and
 * wait4's rusage, and the pid namespace for the kill.
 *
 * Never left behind: every error path removes what it created, and destroy kills, waits
 * for the cgroup to empty, and removes the run's directories. The empty `cordon` parent
 * stays, as systemd's slices and Docker's `docker` group stay: creating and removing it in
 * every hierarchy for every run cost a measurable part of a start, and two runs racing to
 * remove and re-create it had to retry. What a SIGKILLed cordon could not remove, the next
 * run in the same place removes (cg_reap), or the process that started it, when it knows it
 * died (cgroup_reap_dead: cordond for its runners).
 */
#define _GNU_SOURCE
#include "backends/local/cgroup.h"

#include "backends/local/proc.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* The v1 controllers we use, in the order they are attached. */
enum { V1_MEMORY, V1_PIDS, V1_CPUACCT, V1_FREEZER, V1_N };
static const char *const v1_names[V1_N] = { "memory", "pids", "cpuacct", "freezer" };

#define CG_PARENT "cordon"
/* How long destroy waits for the cgroup to empty before giving up on a stuck process. */
#define CG_EMPTY_TIMEOUT_MS 3000

/* One directory of the run: the v2 cgroup, or the run's directory in one v1 hierarchy. */
struct cg_dir {
	char *parent; /* <base>/cordon */
	char *path;   /* <base>/cordon/<name> */
	int fd;	      /* O_DIRECTORY of path */
	int hid;      /* v1 hierarchy id (first field of /proc/self/cgroup) */
};

struct cgroup_run {
	enum cgroup_mode mode;
	char name[80];
	struct cg_dir d[V1_N];
	size_t nd;
	int idx[V1_N]; /* v1: which d[] holds each controller, -1 when absent; v2: all 0 */
};

/* ------------------------------------------------------------------------------------------ */
/* Small file helpers (cgroupfs files are small and read whole)                               */

static ssize_t cg_read_at(int dfd, const char *file, char *buf, size_t n)
{
	_cleanup_close_ int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < n) {
		ssize_t k = read(fd, buf + got, n - 1 - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	buf[got] = 0;
	return (ssize_t)got;
}

static int cg_write_at(int dfd, const char *file, const char *text)
{
	_cleanup_close_ int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);
	ssize_t k;

	if (fd < 0)
		return -errno;
	do
		k = write(fd, text, len);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	return (size_t)k == len ? 0 : -EIO;
}

static int cg_write_u64_at(int dfd, const char *file, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return cg_write_at(dfd, file, buf);
}

/* The number after `key ` in a "key value" per line file (cpu.stat, memory.events...). */
static int cg_read_key_at(int dfd, const char *file, const char *key, uint64_t *ret)
{
	char buf[4096];
	size_t klen = strlen(key);
	ssize_t n = cg_read_at(dfd, file, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	for (char *line = buf; *line;) {
		char *nl = strchr(line, '\n');

		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			*ret = strtoull(line + klen + 1, NULL, 10);
			return 0;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return -ENOENT;
}

static int cg_read_u64_at(int dfd, const char *file, uint64_t *ret)
{
	char buf[64];
	ssize_t n = cg_read_at(dfd, file, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (!isdigit((unsigned char)buf[0]))
		return -EINVAL;
	*ret = strtoull(buf, NULL, 10);
	return 0;
}

/* Is `word` an element of `list` (separated by any of `seps`)? */
static bool cg_has_word(const char *list, const char *word, const char *seps)
{
	size_t w = strlen(word);

	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, seps);

		if (k == w && strncmp(p, word, w) == 0)
			return true;
		p += k;
		p += strspn(p, seps);
	}
	return false;
}

static void cg_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long cg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* ------------------------------------------------------------------------------------------ */
/* Where the hierarchies are, and where we are in them                                        */

struct cg_mount {
	char *point; /* mount point */
	char *root;  /* the hierarchy's directory mounted there ("/" usually) */
	char *super; /* super options: the v1 controllers */
	bool v2;
};

struct cg_self {
	int hid;
	char *ctrls; /* "memory", "cpu,cpuacct", "" for v2 */
	char *path;
};

struct cg_host {
	struct cg_mount *m;
	size_t nm;
	struct cg_self *s;
	size_t ns;
};

static void cg_host_free(struct cg_host *h)
{
	for (size_t i = 0; i < h->nm; i++) {
		free(h->m[i].point);
		free(h->m[i].root);
		free(h->m[i].super);
	}
	for (size_t i = 0; i < h->ns; i++) {
		free(h->s[i].ctrls);
		free(h->s[i].path);
	}
	free(h->m);
	free(h->s);
	memset(h, 0, sizeof(*h));
}

static int cg_host_read(struct cg_host *h, char *why, size_t whyn)
{
	_cleanup_fclose_ FILE *mi = fopen("/proc/self/mountinfo", "re");
	_cleanup_fclose_ FILE *cg = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!mi) {
		snprintf(why, whyn, "cannot read /proc/self/mountinfo: %s", strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, mi) > 0) {
		/* id parent maj:min root point opts [optional...] - fstype source super */
		char *f[6] = { 0 }, *save = NULL, *tok, *dash, *fstype, *super;
		struct cg_mount *nm;
		int i = 0;

		dash = strstr(line, " - ");
		if (!dash)
			continue;
		*dash = 0;
		fstype = strtok_r(dash + 3, " \n", &save);
		(void)strtok_r(NULL, " \n", &save); /* source */
		super = strtok_r(NULL, " \n", &save);
		if (!fstype || (strcmp(fstype, "cgroup") != 0 && strcmp(fstype, "cgroup2") != 0))
			continue;
		save = NULL;
		for (tok = strtok_r(line, " ", &save); tok && i < 6;
		     tok = strtok_r(NULL, " ", &save))
			f[i++] = tok;
		if (i < 5)
			continue;
		nm = realloc(h->m, (h->nm + 1) * sizeof(*h->m));
		if (!nm)
			return -1;
		h->m = nm;
		fsutil_unescape_mountinfo(f[3]);
		fsutil_unescape_mountinfo(f[4]);
		h->m[h->nm] = (struct cg_mount){ .point = strdup(f[4]),
						 .root = strdup(f[3]),
						 .super = strdup(super ? super : ""),
						 .v2 = strcmp(fstype, "cgroup2") == 0 };
		h->nm++;
		if (!h->m[h->nm - 1].point || !h->m[h->nm - 1].root || !h->m[h->nm - 1].super)
			return -1;
	}

	cg = fopen("/proc/self/cgroup", "re");
	if (!cg) {
		snprintf(why, whyn, "cannot read /proc/self/cgroup: %s", strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, cg) > 0) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *nl;
		struct cg_self *ns;

		if (!c2)
			continue;
		*c1 = *c2 = 0;
		nl = strchr(c2 + 1, '\n');
		if (nl)
			*nl = 0;
		ns = realloc(h->s, (h->ns + 1) * sizeof(*h->s));
		if (!ns)
			return -1;
		h->s = ns;
		h->s[h->ns] = (struct cg_self){ .hid = atoi(line),
						.ctrls = strdup(c1 + 1),
						.path = strdup(c2 + 1) };
		h->ns++;
		if (!h->s[h->ns - 1].ctrls || !h->s[h->ns - 1].path)
			return -1;
	}
	return 0;
}

/*
 * The directory of our cgroup in the hierarchy mounted at m: the mount shows the hierarchy
 * from m->root down, and /proc/self/cgroup gives our path from the hierarchy's root (as seen
 * from our cgroup namespace). When the mount does not contain our cgroup (a container that
 * mounted only its own subtree, with a cgroup namespace rooted elsewhere), use the mount
 * point itself: that is the closest directory we can see.
 */
static char *cg_self_dir(const struct cg_mount *m, const char *path)
{
	const char *rel = path;
	size_t rl = strlen(m->root);
	char *out;

	if (strcmp(m->root, "/") != 0) {
		if (strncmp(path, m->root, rl) == 0 && (path[rl] == '/' || path[rl] == 0))
			rel = path + rl;
		else
			rel = "";
	}
	while (*rel == '/')
		rel++;
	if (asprintf(&out, "%s%s%s", m->point, *rel ? "/" : "", rel) < 0)
		return NULL;
	return out;
}

/* Where the runs of one mode go. */
struct cg_plan {
	enum cgroup_mode mode;
	/* v2: the cgroup under which `cordon/` is made, and whether we must switch memory and
	 * pids on in its subtree_control (the root cgroup, which may hold processes). */
	char *v2_base;
	bool v2_enable_base;
	/* v1: our directory in the hierarchy of each controller (NULL when not mounted). */
	char *v1_base[V1_N];
	int v1_hid[V1_N];
};

static void cg_plan_free(struct cg_plan *pl)
{
	free(pl->v2_base);
	for (int i = 0; i < V1_N; i++)
		free(pl->v1_base[i]);
	memset(pl, 0, sizeof(*pl));
}

static bool cg_writable(const char *dir)
{
	return faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) == 0;
}

/* The controllers listed in <dir>/<file> include memory and pids. */
static bool cg_v2_has(const char *dir, const char *file)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[512];

	if (dfd < 0 || cg_read_at(dfd, file, buf, sizeof(buf)) < 0)
		return false;
	return cg_has_word(buf, "memory", " \n") && cg_has_word(buf, "pids", " \n");
}

/*
 * Is dir the hierarchy's real root, exempt from the "no internal processes" rule? Only the
 * root has no cgroup.type. The root of a cgroup namespace (a container's /sys/fs/cgroup)
 * looks like a root but is not: enabling controllers there fails with EBUSY while it holds
 * processes, so it must not be planned as a base.
 */
static bool cg_v2_real_root(const char *dir)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return dfd >= 0 && faccessat(dfd, "cgroup.type", F_OK, 0) < 0 && errno == ENOENT;
}

/*
 * Was `dir` delegated to us? systemd (>= 251) marks delegated cgroups with a
 * trusted.delegate (root) or user.delegate xattr, and hands a delegated subtree to an
 * unprivileged service by chowning it.
 */
static bool cg_v2_marked_delegated(const char *dir)
{
	static const char *const names[] = { "trusted.delegate", "user.delegate" };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char v[8] = "";
		ssize_t n = getxattr(dir, names[i], v, sizeof(v) - 1);

		/* A boolean, as systemd writes and reads it ("1"); it removes it when not. */
		if (n > 0 && (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true")))
			return true;
	}
	return false;
}

/*
 * As root: is dir, and every cgroup above it up to the mount point mnt, root's alone (owned by
 * root, not group- or other-writable, nor its cgroup.procs)? On v2 whoever may write the
 * cgroup.procs of two cgroups' common ancestor moves any process between them, root's
 * included: the kernel checks no uid (v1 does). A cgroup delegated to a user is theirs
 * (systemd chowns it, and its cgroup.procs, to them, and marks it: trusted.delegate for a
 * system unit with User=, user.delegate in that user's own manager, which they may set on any
 * cgroup of theirs), and so is everything below it. Root's runs made there were in that
 * user's hands: a root `cordon run` from a shell in their subtree (sudo in their terminal), or
 * a cordond started by hand there, followed their mark, and they could move a run's processes
 * out of its cgroup into one of theirs, away from its memory and pids limits and from the
 * cgroup kill at its end (found in red team, on a real v2 kernel: tests/cgroupv2).
 */
static bool cg_v2_root_only(const char *dir, const char *mnt)
{
	_cleanup_free_ char *p = strdup(dir);
	size_t ml = strlen(mnt);

	if (!p || strncmp(p, mnt, ml) != 0 || (p[ml] != '/' && p[ml] != 0))
		return false;
	for (;;) {
		_cleanup_close_ int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct stat d, procs;
		char *slash;

		if (dfd < 0 || fstat(dfd, &d) < 0 || fstatat(dfd, "cgroup.procs", &procs, 0) < 0 ||
		    d.st_uid != 0 || (d.st_mode & 022) || procs.st_uid != 0 ||
		    (procs.st_mode & 022))
			return false;
		if (strlen(p) <= ml)
			return true;
		slash = strrchr(p, '/');
		if (!slash || (size_t)(slash - p) < ml)
			return false;
		*slash = 0;
	}
}

/*
 * Was dir delegated to us? Marked so, or (not root) ours; as root, marked and root's alone
 * (cg_v2_root_only): another user's mark says the cgroup is delegated to them, not to root.
 */
static bool cg_v2_delegated(const char *dir, const char *mnt)
{
	struct stat st;

	if (geteuid() == 0)
		return cg_v2_marked_delegated(dir) && cg_v2_root_only(dir, mnt);
	if (cg_v2_marked_delegated(dir))
		return true;
	return stat(dir, &st) == 0 && st.st_uid == geteuid();
}

/* The cgroup v2 mount and our entry in it, or false. */
static bool cg_v2_self(const struct cg_host *h, const struct cg_mount **ret_m,
		       const struct cg_self **ret_s)
{
	*ret_m = NULL;
	*ret_s = NULL;
	for (size_t i = 0; i < h->nm && !*ret_m; i++)
		if (h->m[i].v2)
			*ret_m = &h->m[i];
	for (size_t i = 0; i < h->ns && !*ret_s; i++)
		if (h->s[i].hid == 0 && h->s[i].ctrls[0] == 0)
			*ret_s = &h->s[i];
	return *ret_m && *ret_s;
}

#define CG_SUPERVISOR "supervisor"

static int cg_v2_enable(const char *dir, cordon_error *e);

/*
 * systemd (< 254, or a unit without DelegateSubgroup=) starts a Delegate=yes service in the
 * unit's cgroup itself. That cgroup then holds the service, and by v2's "no internal
 * processes" rule cannot give its children memory and pids: cg_plan_v2 found no delegated
 * parent and made the runs at the hierarchy's root, outside the unit (its MemoryMax= and
 * TasksMax=, `systemctl status`, its stop). So, as DelegateSubgroup=supervisor does: move the
 * whole process into a leaf child, then turn memory and pids on in the unit's cgroup, which is
 * now the delegated parent cg_plan_v2 looks for. Only a cgroup marked delegated by its manager
 * (the xattr; not merely writable: root can write anywhere) that offers memory and pids, and,
 * as root, one that no other user has a hand in (cg_v2_root_only: not a user's subtree).
 */
int cgroup_claim_delegation(cordon_error *e)
{
	_cleanup_(cg_host_free) struct cg_host h = { 0 };
	_cleanup_free_ char *own = NULL;
	_cleanup_close_ int dfd = -1, leaf = -1;
	const struct cg_mount *m;
	const struct cg_self *s;
	char why[256] = "", pid[32];
	int r;

	if (cg_host_read(&h, why, sizeof(why)) < 0)
		return cordon_err(e, errno ? errno : EIO, "cgroup: %s",
				  why[0] ? why : "cannot read the host's cgroups");
	if (!cg_v2_self(&h, &m, &s))
		return 0;
	own = cg_self_dir(m, s->path);
	if (!own)
		return cordon_err(e, ENOMEM, "out of memory");
	if (strcmp(own, m->point) == 0 || !cg_v2_marked_delegated(own) ||
	    (geteuid() == 0 && !cg_v2_root_only(own, m->point)) ||
	    !cg_v2_has(own, "cgroup.controllers"))
		return 0;
	dfd = open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return cordon_err(e, errno, "cgroup: open %s", own);
	if (mkdirat(dfd, CG_SUPERVISOR, 0755) < 0 && errno != EEXIST)
		return cordon_err(e, errno, "cgroup: make %s/" CG_SUPERVISOR, own);
	leaf = openat(dfd, CG_SUPERVISOR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (leaf < 0)
		return cordon_err(e, errno, "cgroup: open %s/" CG_SUPERVISOR, own);
	(void)snprintf(pid, sizeof(pid), "%d", (int)getpid());
	r = cg_write_at(leaf, "cgroup.procs", pid);
	if (r < 0)
		return cordon_err(e, -r, "cgroup: move cordond into %s/" CG_SUPERVISOR, own);
	r = cg_v2_enable(own, e);
	if (r > 0)
		return cordon_err(e, ENOENT, "cgroup: %s vanished", own);
	return r < 0 ? -1 : 1;
}

static int cg_plan_v2(const struct cg_host *h, struct cg_plan *pl, char *why, size_t whyn)
{
	const struct cg_mount *m;
	const struct cg_self *s;
	_cleanup_free_ char *own = NULL, *parent = NULL;
	bool own_is_root;

	if (!cg_v2_self(h, &m, &s)) {
		snprintf(why, whyn, "v2: %s",
			 !m ? "no cgroup2 mount" : "not in a cgroup2 hierarchy");
		return -1;
	}
	own = cg_self_dir(m, s->path);
	if (!own)
		return -1;
	own_is_root = strcmp(own, m->point) == 0;

	/* The root cgroup may hold processes and have controlled children at once. */
	if (own_is_root && cg_v2_real_root(own) && cg_v2_has(own, "cgroup.controllers") &&
	    cg_writable(own)) {
		pl->v2_base = TAKE_PTR(own);
		pl->v2_enable_base = true;
		return 0;
	}
	/* A delegated parent with memory and pids on for its children (us and our sibling). */
	if (!own_is_root) {
		char *slash;

		parent = strdup(own);
		if (!parent)
			return -1;
		slash = strrchr(parent, '/');
		if (slash && (size_t)(slash - parent) >= strlen(m->point)) {
			*slash = 0;
			if (cg_v2_has(parent, "cgroup.subtree_control") &&
			    cg_v2_delegated(parent, m->point) && cg_writable(parent)) {
				pl->v2_base = TAKE_PTR(parent);
				return 0;
			}
		}
	}
	/* As root, the hierarchy's root. */
	if (geteuid() == 0 && !own_is_root && cg_v2_real_root(m->point) &&
	    cg_v2_has(m->point, "cgroup.controllers") && cg_writable(m->point)) {
		pl->v2_base = strdup(m->point);
		pl->v2_enable_base = true;
		return pl->v2_base ? 0 : -1;
	}
	if (!cg_v2_real_root(m->point))
		snprintf(why, whyn,
			 "v2: %s is a cgroup namespace root holding processes, memory and pids "
			 "not delegated below it",
			 m->point);
	else if (!cg_v2_has(m->point, "cgroup.controllers"))
		snprintf(why, whyn,
			 "v2: %s offers no memory and pids controllers (bound to v1: hybrid host)",
			 m->point);
	else
		snprintf(why, whyn,
			 "v2: memory and pids not delegated to %s (run cordond with Delegate=yes "
			 "and DelegateSubgroup=, or as root)",
			 own ? own : s->path);
	return -1;
}

static int cg_plan_v1(const struct cg_host *h, struct cg_plan *pl, char *why, size_t whyn)
{
	for (int c = 0; c < V1_N; c++) {
		const struct cg_mount *m = NULL;
		const struct cg_self *s = NULL;

		pl->v1_hid[c] = -1;
		for (size_t i = 0; i < h->nm && !m; i++)
			if (!h->m[i].v2 && cg_has_word(h->m[i].super, v1_names[c], ","))
				m = &h->m[i];
		for (size_t i = 0; i < h->ns && !s; i++)
			if (h->s[i].hid > 0 && cg_has_word(h->s[i].ctrls, v1_names[c], ","))
				s = &h->s[i];
		if (!m || !s) {
			if (c == V1_FREEZER)
				continue; /* optional: the kill loop works without it */
			snprintf(why, whyn, "v1: no %s hierarchy mounted", v1_names[c]);
			return -1;
		}
		pl->v1_base[c] = cg_self_dir(m, s->path);
		if (!pl->v1_base[c])
			return -1;
		pl->v1_hid[c] = s->hid;
		/* Our own cgroup first; as root, the hierarchy's root if ours is read-only. */
		if (!cg_writable(pl->v1_base[c])) {
			if (geteuid() == 0 && cg_writable(m->point)) {
				free(pl->v1_base[c]);
				pl->v1_base[c] = strdup(m->point);
				if (!pl->v1_base[c])
					return -1;
			} else if (c == V1_FREEZER) {
				free(pl->v1_base[c]);
				pl->v1_base[c] = NULL;
				pl->v1_hid[c] = -1;
			} else {
				snprintf(why, whyn, "v1: %s is not writable by uid %d",
					 pl->v1_base[c], (int)geteuid());
				return -1;
			}
		}
	}
	return 0;
}

/* Decide the mode and where its directories go; `why` says why not when NONE. */
static enum cgroup_mode cg_plan(struct cg_plan *pl, char *why, size_t whyn)
{
	struct cg_host h = { 0 };
	char why2[256] = "", why1[256] = "";

	memset(pl, 0, sizeof(*pl));
	if (cg_host_read(&h, why, whyn) < 0) {
		if (!why[0])
			snprintf(why, whyn, "out of memory reading the cgroup layout");
		cg_host_free(&h);
		return CGROUP_NONE;
	}
	if (cg_plan_v2(&h, pl, why2, sizeof(why2)) == 0) {
		pl->mode = CGROUP_V2;
		snprintf(why, whyn, "v2 under %s/" CG_PARENT, pl->v2_base);
	} else if (cg_plan_v1(&h, pl, why1, sizeof(why1)) == 0) {
		pl->mode = CGROUP_V1;
		snprintf(why, whyn, "v1 (memory, pids, cpuacct%s) under %s/" CG_PARENT "; %s",
			 pl->v1_base[V1_FREEZER] ? ", freezer" : "", pl->v1_base[V1_MEMORY], why2);
	} else {
		pl->mode = CGROUP_NONE;
		snprintf(why, whyn, "%s; %s", why2[0] ? why2 : "v2: unusable",
			 why1[0] ? why1 : "v1: unusable");
	}
	cg_host_free(&h);
	if (pl->mode == CGROUP_NONE)
		cg_plan_free(pl);
	return pl->mode;
}

enum cgroup_mode cgroup_detect(char *reason, size_t n)
{
	struct cg_plan pl;
	char buf[512] = "";
	enum cgroup_mode mode = cg_plan(&pl, buf, sizeof(buf));

	cg_plan_free(&pl);
	if (reason && n)
		snprintf(reason, n, "%s", buf);
	return mode;
}

/* ------------------------------------------------------------------------------------------ */
/* Killing, waiting, removing                                                                 */

/*
 * Is the process that `pidfd` pins still in this run? /proc/<pid>/cgroup lists, per
 * hierarchy, the path of its cgroup, which ends in our unique run name when it is ours. If
 * the pid was reused before pidfd_open, the pidfd pins the newcomer, whose cgroup is not
 * ours; if it is reused after, the pidfd still pins the original (then dead) process and the
 * signal goes nowhere. Either way no unrelated process is ever signalled.
 */
static bool cg_pid_is_ours(const struct cgroup_run *cg, pid_t pid)
{
	char path[64], buf[4096], needle[sizeof(cg->name) + 2], sub[sizeof(cg->name) + 2];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = cg_read_at(fd, "cgroup", buf, sizeof(buf));
	if (n <= 0)
		return false;
	snprintf(needle, sizeof(needle), "/%s\n", cg->name);
	snprintf(sub, sizeof(sub), "/%s/", cg->name);
	return strstr(buf, needle) || strstr(buf, sub);
}

static void cg_kill_pid(const struct cgroup_run *cg, pid_t pid)
{
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (pidfd < 0) {
		/* Before 5.3 there are no pidfds: a plain kill, with its small reuse window. */
		if (errno == ENOSYS)
			(void)kill(pid, SIGKILL);
		return;
	}
	if (cg_pid_is_ours(cg, pid))
		(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

/* The pids listed in <dir>/cgroup.procs, sorted (malloc'd; NULL and 0 when none). */
static size_t cg_read_pids(int dfd, pid_t **ret)
{
	_cleanup_close_ int fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	_cleanup_fclose_ FILE *f = NULL;
	pid_t *v = NULL;
	size_t n = 0, cap = 0;
	char line[32];

	*ret = NULL;
	if (fd < 0)
		return 0;
	f = fdopen(TAKE_FD(fd), "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		pid_t pid = (pid_t)atoi(line);

		if (pid <= 0)
			continue;
		if (n == cap) {
			pid_t *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		v[n++] = pid;
	}
	*ret = v;
	return n;
}

static int cg_pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/*
 * SIGKILL every process listed in <dir>/cgroup.procs except those in skip[] (sorted).
 * `frozen`: the listed processes are frozen, so none can exit and free its pid before our
 * kill(): the plain, fast kill is exact. Otherwise each is checked through a pidfd.
 * Returns the sorted list of the pids listed (the caller frees it) and their number.
 */
static size_t cg_kill_listed(const struct cgroup_run *cg, int dfd, const pid_t *skip, size_t nskip,
			     bool frozen, pid_t **ret)
{
	pid_t *v;
	size_t n = cg_read_pids(dfd, &v);

	for (size_t i = 0; i < n; i++) {
		if (nskip && bsearch(&v[i], skip, nskip, sizeof(*skip), cg_pid_cmp))
			continue;
		if (frozen)
			(void)kill(v[i], SIGKILL);
		else
			cg_kill_pid(cg, v[i]);
	}
	if (ret) {
		qsort(v, n, sizeof(*v), cg_pid_cmp);
		*ret = v;
	} else {
		free(v);
	}
	return n;
}

static int cg_kill_round(const struct cgroup_run *cg)
{
	size_t n = 0;

	for (size_t i = 0; i < cg->nd; i++)
		n += cg_kill_listed(cg, cg->d[i].fd, NULL, 0, false, NULL);
	return (int)n;
}

static bool cg_dir_empty(const struct cgroup_run *cg, const struct cg_dir *d)
{
	char buf[64];
	uint64_t populated = 1;

	if (cg->mode == CGROUP_V2 &&
	    cg_read_key_at(d->fd, "cgroup.events", "populated", &populated) == 0)
		return populated == 0;
	/* v1: no cgroup.events; an empty cgroup.procs (a short read is enough to tell). */
	return cg_read_at(d->fd, "cgroup.procs", buf, sizeof(buf)) <= 0 || buf[0] == 0;
}

static bool cg_empty(const struct cgroup_run *cg)
{
	for (size_t i = 0; i < cg->nd; i++)
		if (cg->d[i].fd >= 0 && !cg_dir_empty(cg, &cg->d[i]))
			return false;
	return true;
}

/*
 * v1 has no cgroup.kill: list and kill. The freezer makes it exact and fast: frozen tasks
 * neither fork (no child appears after our read) nor exit (no pid is freed and reused before
 * our kill), and stop using the CPU at once, which matters under a fork bomb that would
 * otherwise starve us. SIGKILL takes effect at thaw. A freeze/thaw pair costs ~10 ms of RCU
 * grace periods here, so it is done only when the cgroup has processes (destroy checks first).
 *
 * Without a freezer (or when freezing does not complete in 50 ms: a task stuck in the
 * kernel), each listed process is checked through a pidfd (cg_pid_is_ours), so pid reuse
 * cannot make us kill an outsider, and the rounds repeat until the cgroup is empty: a
 * killed process forks no more, and the pids limit bounds each round.
 */
static void cg_kill_v1(struct cgroup_run *cg)
{
	int fz = cg->idx[V1_FREEZER];
	_cleanup_free_ pid_t *done = NULL;
	size_t ndone = 0;
	bool frozen = false;
	char st[32] = "";

	if (fz >= 0 && cg_write_at(cg->d[fz].fd, "freezer.state", "FROZEN") == 0) {
		for (int i = 0; i < 50 && !frozen; i++) {
			if (cg_read_at(cg->d[fz].fd, "freezer.state", st, sizeof(st)) > 0 &&
			    strncmp(st, "FROZEN", 6) == 0)
				frozen = true;
			else
				cg_sleep_ms(1);
		}
		ndone = cg_kill_listed(cg, cg->d[fz].fd, NULL, 0, frozen, &done);
	}
	/* The other hierarchies list the same processes, unless an attach failed halfway. */
	for (size_t i = 0; i < cg->nd; i++)
		if ((int)i != fz)
			(void)cg_kill_listed(cg, cg->d[i].fd, done, ndone, false, NULL);
	if (fz >= 0)
		(void)cg_write_at(cg->d[fz].fd, "freezer.state", "THAWED");
}

void cgroup_run_kill(struct cgroup_run *cg)
{
	if (!cg || cg->nd == 0)
		return;
	if (cg->mode == CGROUP_V2) {
		/* cgroup.kill (5.14): the kernel kills every process, new forks included. */
		if (cg_write_at(cg->d[0].fd, "cgroup.kill", "1") == 0)
			return;
		(void)cg_write_at(cg->d[0].fd, "cgroup.freeze", "1");
		(void)cg_kill_round(cg);
		(void)cg_write_at(cg->d[0].fd, "cgroup.freeze", "0");
		return;
	}
	cg_kill_v1(cg);
}

/*
 * Remove what was created: the run's directories, then `cordon/` if no other run uses it.
 * rmdir says EBUSY while exited processes of the run are not yet reaped (their zombies still
 * count, though cgroup.procs no longer lists them; after a fork bomb the orphans wait for
 * init): retry until `deadline`.
 */
static void cg_remove_dirs(struct cgroup_run *cg, long deadline)
{
	for (size_t i = 0; i < cg->nd; i++) {
		struct cg_dir *d = &cg->d[i];
		long wait = 1;

		if (d->fd >= 0) {
			(void)close(d->fd);
			d->fd = -1;
		}
		while (d->path && rmdir(d->path) < 0 && errno == EBUSY && cg_now_ms() < deadline) {
			cg_sleep_ms(wait);
			if (wait < 16)
				wait *= 2;
		}
		free(d->path);
		free(d->parent);
		d->path = d->parent = NULL;
	}
	cg->nd = 0;
}

void cgroup_run_destroy(struct cgroup_run *cg)
{
	long start, wait = 1;

	if (!cg)
		return;
	start = cg_now_ms();
	/*
	 * The common case: the run is over and its cgroups are empty, so removing each is all
	 * there is to do (rmdir refuses a cgroup with a process in it: EBUSY). At the first that
	 * is not empty, the others are emptied first (kill), then removed.
	 */
	for (size_t i = 0; i < cg->nd; i++) {
		struct cg_dir *d = &cg->d[i];

		if (!d->path)
			continue;
		if (rmdir(d->path) < 0) {
			if (errno == EBUSY)
				break;
			continue; /* gone already, or not ours to remove: cg_remove_dirs tries again */
		}
		if (d->fd >= 0)
			(void)close(d->fd);
		d->fd = -1;
		free(d->path);
		free(d->parent);
		d->path = d->parent = NULL;
	}
	/* Then: no kill at all when what is left is empty. */
	while (cg->nd > 0 && !cg_empty(cg)) {
		long elapsed = cg_now_ms() - start;

		if (elapsed >= CG_EMPTY_TIMEOUT_MS)
			break;
		cgroup_run_kill(cg);
		if (cg_empty(cg))
			break;
		cg_sleep_ms(wait);
		if (wait < 16)
			wait *= 2;
	}
	cg_remove_dirs(cg, start + CG_EMPTY_TIMEOUT_MS);
	free(cg);
}

/* ------------------------------------------------------------------------------------------ */
/* Creating                                                                                   */

static struct cgroup_run *cg_new(enum cgroup_mode mode)
{
	static unsigned long counter;
	struct cgroup_run *cg = calloc(1, sizeof(*cg));
	uint32_t rnd = 0;

	if (!cg)
		return NULL;
	cg->mode = mode;
	for (int i = 0; i < V1_N; i++) {
		cg->idx[i] = -1;
		cg->d[i].fd = -1;
	}
	/* Unique across processes (pid), threads of one (counter), and pid reuse (random). */
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (uint32_t)cg_now_ms() ^ (uint32_t)(uintptr_t)cg;
	snprintf(cg->name, sizeof(cg->name), "cordon-%d-%lu-%08x", (int)getpid(),
		 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED), rnd);
	return cg;
}

/*
 * v2: turn on memory and pids for the children of dir, as far as dir offers them. Returns 0,
 * 1 when dir vanished (a concurrent destroy removed it: the caller retries), or -1 with *e.
 */
static int cg_v2_enable(const char *dir, cordon_error *e)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	static const char *const want[] = { "memory", "pids" };
	char avail[512], on[512];
	ssize_t k;

	if (dfd < 0 && errno == ENOENT)
		return 1;
	if (dfd < 0)
		return cordon_err(e, errno, "cgroup: open %s", dir);
	k = cg_read_at(dfd, "cgroup.controllers", avail, sizeof(avail));
	if (k >= 0)
		k = cg_read_at(dfd, "cgroup.subtree_control", on, sizeof(on));
	if (k == -ENOENT)
		return 1;
	if (k < 0)
		return cordon_err(e, (int)-k, "cgroup: read controllers of %s", dir);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		char cmd[16];
		int r;

		if (!cg_has_word(avail, want[i], " \n") || cg_has_word(on, want[i], " \n"))
			continue;
		snprintf(cmd, sizeof(cmd), "+%s", want[i]);
		r = cg_write_at(dfd, "cgroup.subtree_control", cmd);
		if (r == -ENOENT || r == -ENODEV)
			return 1;
		if (r < 0)
			return cordon_err(e, -r, "cgroup: enable %s in %s/cgroup.subtree_control",
					  want[i], dir);
	}
	return 0;
}

/*
 * Remove run directories that a cordon killed before its destroy (SIGKILL, OOM, power cut of
 * a daemon) left in `parent`: named cordon-<pid>-..., their creator gone, empty, and older
 * than a minute (the age keeps us off a live run whose creator lives in another pid
 * namespace, between its create and its attach). Best effort: errors are ignored.
 */
#define CG_STALE_AGE_S 60

/*
 * dead > 0: only the directories of that process, which the caller knows is dead, any age.
 * Returns how many of the directories it looked at are left (not empty yet).
 */
static int cg_reap(const char *parent, bool v2, pid_t dead, time_t min_age)
{
	int left = 0, failed = 0;

	_cleanup_closedir_ DIR *d = opendir(parent);
	struct dirent *de;
	time_t now = time(NULL);

	/*
	 * A parent that cannot be listed (no fd left: EMFILE) is not one with nothing to reap:
	 * -1, so that the caller tries again later rather than forget the dead creator's cgroups.
	 */
	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(d))) {
		struct cgroup_run probe = { .mode = v2 ? CGROUP_V2 : CGROUP_V1 };
		struct cg_dir cd = { .fd = -1 };
		struct stat st;
		char *end;
		long pid;

		if (strncmp(de->d_name, "cordon-", 7) != 0)
			continue;
		pid = strtol(de->d_name + 7, &end, 10);
		if (pid <= 0 || *end != '-' || pid == (long)getpid() ||
		    (dead > 0 && pid != (long)dead))
			continue;
		if (dead <= 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || (dead <= 0 && now - st.st_mtime < min_age))
			continue;
		cd.fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cd.fd < 0) {
			if (errno != ENOENT)
				failed = errno;
			continue;
		}
		if (!cg_dir_empty(&probe, &cd) ||
		    (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT))
			left++;
		(void)close(cd.fd);
	}
	if (failed) {
		errno = failed;
		return -1;
	}
	return left;
}

/*
 * mkdir <base>/cordon, then <base>/cordon/<name>. Another run's destroy may remove `cordon/`
 * between our two mkdirs (it removes it when it looks unused): retry on ENOENT.
 */
static int cg_make_dir(struct cgroup_run *cg, struct cg_dir *d, const char *base, bool v2,
		       cordon_error *e)
{
	if (asprintf(&d->parent, "%s/" CG_PARENT, base) < 0) {
		d->parent = NULL;
		return cordon_err(e, ENOMEM, "cgroup: path");
	}
	if (asprintf(&d->path, "%s/%s", d->parent, cg->name) < 0) {
		d->path = NULL;
		return cordon_err(e, ENOMEM, "cgroup: path");
	}
	for (int attempt = 0;; attempt++) {
		int r = 0;

		if (mkdir(d->parent, 0755) < 0 && errno != EEXIST)
			return cordon_err(e, errno, "cgroup: create %s", d->parent);
		/*
		 * cgroupfs counts a directory's subdirectories in its link count (2 + n): with
		 * none, there is nothing stale to look for, and the common run skips the scan.
		 */
		if (attempt == 0) {
			struct stat pst;

			if (stat(d->parent, &pst) < 0 || pst.st_nlink > 2)
				(void)cg_reap(d->parent, v2, 0, CG_STALE_AGE_S);
		}
		if (v2) {
			r = cg_v2_enable(d->parent, e);
			if (r < 0)
				return -1;
		}
		if (r == 0 && mkdir(d->path, 0755) == 0)
			break;
		if (r == 0 && errno != ENOENT) {
			int err = errno;

			/* Our own directory: never adopt one that exists (it is not ours). */
			free(d->path);
			d->path = NULL;
			return cordon_err(e, err, "cgroup: create %s/%s", d->parent, cg->name);
		}
		if (attempt >= 5)
			return cordon_err(e, ENOENT, "cgroup: create %s", d->path);
	}
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->fd < 0)
		return cordon_err(e, errno, "cgroup: open %s", d->path);
	return 0;
}

/* Fail the creation: remove whatever was made, keep the error. */
static int cg_fail(struct cgroup_run *cg)
{
	cg_remove_dirs(cg, cg_now_ms() + CG_EMPTY_TIMEOUT_MS);
	free(cg);
	return -1;
}

static int cg_set(int dfd, const char *dir, const char *file, uint64_t v, cordon_error *e)
{
	int r = cg_write_u64_at(dfd, file, v);

	if (r < 0)
		return cordon_err(e, -r, "cgroup: set %s/%s to %llu", dir, file,
				  (unsigned long long)v);
	return 0;
}

/* The profile's limits, on a run's fresh directories. -1 with *e; the caller destroys cg. */
static int cg_limit(struct cgroup_run *cg, const struct cordon_profile *p, cordon_error *e)
{
	int r;

	if (!p)
		return 0;
	if (cg->mode == CGROUP_V2) {
		const struct cg_dir *d = &cg->d[0];

		if (p->memory) {
			if (cg_set(d->fd, d->path, "memory.max", p->memory, e) < 0)
				return -1;
			/*
			 * Swap would let the run hold memory.max in RAM plus as much again in
			 * swap, and turn a memory bomb into a host slowed down by swapping. No
			 * swap file on the host, or no swap accounting: the file is absent,
			 * nothing to do.
			 */
			r = cg_write_at(d->fd, "memory.swap.max", "0");
			if (r < 0 && r != -ENOENT)
				return cordon_err(e, -r, "cgroup: set %s/memory.swap.max", d->path);
		}
		if (p->pids && cg_set(d->fd, d->path, "pids.max", p->pids, e) < 0)
			return -1;
		return 0;
	}
	if (p->memory) {
		const struct cg_dir *m = &cg->d[cg->idx[V1_MEMORY]];

		if (cg_set(m->fd, m->path, "memory.limit_in_bytes", p->memory, e) < 0)
			return -1;
		/*
		 * memory+swap: the same value, so that no swap can be used on top (see v2).
		 * Absent when the kernel does not account swap (swapaccount=0).
		 */
		r = cg_write_u64_at(m->fd, "memory.memsw.limit_in_bytes", p->memory);
		if (r < 0 && r != -ENOENT)
			return cordon_err(e, -r, "cgroup: set %s/memory.memsw.limit_in_bytes",
					  m->path);
	}
	if (p->pids) {
		const struct cg_dir *d = &cg->d[cg->idx[V1_PIDS]];

		if (cg_set(d->fd, d->path, "pids.max", p->pids, e) < 0)
			return -1;
	}
	return 0;
}

int cgroup_run_create_v2_at(const struct cordon_profile *p, const char *base, bool enable_base,
			    struct cgroup_run **ret, cordon_error *e)
{
	struct cgroup_run *cg = cg_new(CGROUP_V2);
	struct cg_dir *d;
	int r;

	if (!cg)
		return cordon_err(e, ENOMEM, "cgroup: allocate");
	if (enable_base) {
		r = cg_v2_enable(base, e);
		if (r != 0) {
			if (r > 0)
				cordon_err(e, ENOENT, "cgroup: %s vanished", base);
			return cg_fail(cg);
		}
	}
	d = &cg->d[0];
	cg->nd = 1;
	for (int i = 0; i < V1_N; i++)
		cg->idx[i] = 0;
	if (cg_make_dir(cg, d, base, true, e) < 0 || cg_limit(cg, p, e) < 0)
		return cg_fail(cg);
	*ret = cg;
	return 0;
}

static int cg_create_v1(const struct cordon_profile *p, const struct cg_plan *pl,
			struct cgroup_run **ret, cordon_error *e)
{
	struct cgroup_run *cg = cg_new(CGROUP_V1);

	if (!cg)
		return cordon_err(e, ENOMEM, "cgroup: allocate");
	for (int c = 0; c < V1_N; c++) {
		if (!pl->v1_base[c])
			continue;
		/* Co-mounted controllers (cpu,cpuacct; sometimes more) share one directory. */
		for (size_t i = 0; i < cg->nd; i++)
			if (cg->d[i].hid == pl->v1_hid[c])
				cg->idx[c] = (int)i;
		if (cg->idx[c] >= 0)
			continue;
		cg->d[cg->nd].hid = pl->v1_hid[c];
		cg->idx[c] = (int)cg->nd;
		cg->nd++;
		if (cg_make_dir(cg, &cg->d[cg->nd - 1], pl->v1_base[c], false, e) < 0)
			return cg_fail(cg);
	}
	if (cg_limit(cg, p, e) < 0)
		return cg_fail(cg);
	*ret = cg;
	return 0;
}

static bool cg_required(const struct cordon_profile *p)
{
	if (!p || !p->require.v)
		return false;
	for (size_t i = 0; i < p->require.n; i++)
		if (strcmp(p->require.v[i], "cgroup") == 0)
			return true;
	return false;
}

/*
 * A long-lived process (cordond: cgroup_cache_plans) plans once: reading mountinfo and
 * /proc/self/cgroup and probing the hierarchies is about 0.2 ms of every run. The cached plan
 * is dropped, and the layout read again, as soon as creating a run's cgroup with it fails. Only
 * a usable plan is kept: a host without cgroups is asked again each time.
 */
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static bool plan_caching;
static struct cg_plan plan_cache; /* mode CGROUP_NONE: nothing cached */

void cgroup_cache_plans(void)
{
	pthread_mutex_lock(&plan_lock);
	plan_caching = true;
	pthread_mutex_unlock(&plan_lock);
}

static int cg_plan_copy(struct cg_plan *dst, const struct cg_plan *src)
{
	*dst = *src;
	dst->v2_base = NULL;
	for (int i = 0; i < V1_N; i++)
		dst->v1_base[i] = NULL;
	if (src->v2_base && !(dst->v2_base = strdup(src->v2_base)))
		goto oom;
	for (int i = 0; i < V1_N; i++)
		if (src->v1_base[i] && !(dst->v1_base[i] = strdup(src->v1_base[i])))
			goto oom;
	return 0;
oom:
	cg_plan_free(dst);
	return -1;
}

/* cg_plan, or (may_reuse) a copy of the cached plan (*ret_cached). */
static enum cgroup_mode cg_plan_reuse(struct cg_plan *pl, bool may_reuse, bool *ret_cached,
				      char *why, size_t whyn)
{
	enum cgroup_mode mode;

	*ret_cached = false;
	pthread_mutex_lock(&plan_lock);
	if (may_reuse && plan_caching && plan_cache.mode != CGROUP_NONE &&
	    cg_plan_copy(pl, &plan_cache) == 0)
		*ret_cached = true;
	pthread_mutex_unlock(&plan_lock);
	if (*ret_cached)
		return pl->mode;
	mode = cg_plan(pl, why, whyn);
	pthread_mutex_lock(&plan_lock);
	if (plan_caching && mode != CGROUP_NONE && plan_cache.mode == CGROUP_NONE)
		(void)cg_plan_copy(&plan_cache, pl);
	pthread_mutex_unlock(&plan_lock);
	return mode;
}

static void cg_plan_forget(void)
{
	pthread_mutex_lock(&plan_lock);
	cg_plan_free(&plan_cache);
	pthread_mutex_unlock(&plan_lock);
}

static int cg_create(const struct cordon_profile *p, bool may_reuse, struct cgroup_run **ret,
		     cordon_error *e)
{
	struct cg_plan pl;
	char why[512] = "";
	bool cached;
	int r;

	switch (cg_plan_reuse(&pl, may_reuse, &cached, why, sizeof(why))) {
	case CGROUP_V2:
		r = cgroup_run_create_v2_at(p, pl.v2_base, pl.v2_enable_base, ret, e);
		break;
	case CGROUP_V1:
		r = cg_create_v1(p, &pl, ret, e);
		break;
	case CGROUP_NONE:
	default:
		if (cg_required(p))
			return cordon_err(e, EOPNOTSUPP, "cgroup: required by the profile but %s",
					  why);
		*ret = NULL;
		return 0;
	}
	cg_plan_free(&pl);
	if (r < 0 && cached) {
		/* The host may have changed under the cached plan: plan again, once. */
		cg_plan_forget();
		return cg_create(p, false, ret, e);
	}
	return r;
}

int cgroup_run_create(const struct cordon_profile *p, struct cgroup_run **ret, cordon_error *e)
{
	return cg_create(p, true, ret, e);
}

int cgroup_reap_dead(pid_t pid)
{
	return cgroup_reap_stale(pid, 0);
}

/*
 * fn(parent, v2, arg) for the `cordon/` parent of each hierarchy in use; the sum of its results,
 * or -1 (errno from the last failure) when fn failed for any of them.
 */
static int cg_each_parent(int (*fn)(const char *parent, bool v2, void *arg), void *arg)
{
	struct cg_plan pl;
	char why[256], *parent;
	bool cached;
	int sum = 0, failed = 0, r;

	switch (cg_plan_reuse(&pl, true, &cached, why, sizeof(why))) {
	case CGROUP_V2:
		if (asprintf(&parent, "%s/" CG_PARENT, pl.v2_base) < 0) {
			failed = ENOMEM;
		} else {
			r = fn(parent, true, arg);
			if (r < 0)
				failed = errno;
			else
				sum += r;
			free(parent);
		}
		break;
	case CGROUP_V1:
		for (int c = 0; c < V1_N; c++) {
			if (!pl.v1_base[c])
				continue;
			if (asprintf(&parent, "%s/" CG_PARENT, pl.v1_base[c]) < 0) {
				failed = ENOMEM;
				continue;
			}
			r = fn(parent, false, arg);
			if (r < 0)
				failed = errno;
			else
				sum += r;
			free(parent);
		}
		break;
	default:
		break;
	}
	cg_plan_free(&pl);
	if (failed) {
		errno = failed;
		return -1;
	}
	return sum;
}

struct reap_args {
	pid_t pid;
	unsigned min_age;
};

static int reap_parent(const char *parent, bool v2, void *arg)
{
	const struct reap_args *a = arg;

	return cg_reap(parent, v2, a->pid, (time_t)a->min_age);
}

int cgroup_reap_stale(pid_t pid, unsigned min_age)
{
	struct reap_args a = { pid, min_age };

	return cg_each_parent(reap_parent, &a);
}

static int remove_parent(const char *parent, bool v2, void *arg)
{
	(void)rmdir(parent);
	return 0;
}

/*
 * The `cordon/` parents are kept between runs (a run need not make them). A stopping cordond
 * removes those it used, when empty (rmdir fails on one that still has a run's cgroup, which
 * is left as it is): on cgroup v1, controllers systemd does not delegate (freezer, or cpuacct
 * mounted apart from cpu) place them outside the service's cgroup, where nothing else would.
 */
void cgroup_remove_parents(void)
{
	(void)cg_each_parent(remove_parent, NULL);
}

int cgroup_run_stage(struct cgroup_run **ret, cordon_error *e)
{
	return cg_create(NULL, true, ret, e);
}

int cgroup_run_adopt(struct cgroup_run *cg, const struct cordon_profile *p, cordon_error *e)
{
	struct stat st;

	/* Still there? Someone may have removed it while it waited (an administrator). */
	for (size_t i = 0; i < cg->nd; i++)
		if (fstatat(cg->d[i].fd, "cgroup.procs", &st, 0) < 0)
			return cordon_err(e, errno, "cgroup: %s is gone", cg->d[i].path);
	return cg_limit(cg, p, e);
}

/* ------------------------------------------------------------------------------------------ */
/* Using                                                                                      */

int cgroup_run_dirfd(const struct cgroup_run *cg)
{
	return cg && cg->mode == CGROUP_V2 && cg->nd == 1 ? cg->d[0].fd : -1;
}

const char *cgroup_run_path(const struct cgroup_run *cg, size_t i)
{
	return cg && i < cg->nd ? cg->d[i].path : NULL;
}

enum cgroup_mode cgroup_run_mode(const struct cgroup_run *cg)
{
	return cg ? cg->mode : CGROUP_NONE;
}

int cgroup_run_attach(struct cgroup_run *cg, pid_t pid, cordon_error *e)
{
	char buf[32];

	if (!cg)
		return cordon_err(e, EINVAL, "cgroup: attach without a cgroup");
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	/* v1: memory and pids first, so the limits hold before anything else can happen. */
	for (size_t i = 0; i < cg->nd; i++) {
		int r = cg_write_at(cg->d[i].fd, "cgroup.procs", buf);

		if (r < 0)
			return cordon_err(e, -r, "cgroup: attach %d to %s", (int)pid,
					  cg->d[i].path);
	}
	return 0;
}

int cgroup_run_task_fds(const struct cgroup_run *cg, int *fds, size_t max, cordon_error *e)
{
	size_t n = 0;

	if (!cg)
		return cordon_err(e, EINVAL, "cgroup: join without a cgroup");
	if (cg->mode != CGROUP_V1)
		return 0;
	if (cg->nd > max)
		return cordon_err(e, E2BIG, "cgroup: %zu hierarchies", cg->nd);
	for (; n < cg->nd; n++) {
		fds[n] = openat(cg->d[n].fd, "tasks", O_WRONLY | O_CLOEXEC);
		if (fds[n] < 0) {
			int err = errno;
			size_t bad = n;

			while (n > 0)
				(void)close(fds[--n]);
			return cordon_err(e, err, "cgroup: open %s/tasks", cg->d[bad].path);
		}
	}
	return (int)n;
}

int cgroup_run_usage(struct cgroup_run *cg, struct local_usage *u, cordon_error *e)
{
	uint64_t v = 0;
	int r;

	if (!cg || !u)
		return cordon_err(e, EINVAL, "cgroup: usage without a cgroup");
	u->peak_memory_bytes = -1;
	u->oom_killed = false;
	u->cpu_ms = 0;

	if (cg->mode == CGROUP_V2) {
		int fd = cg->d[0].fd;

		r = cg_read_key_at(fd, "cpu.stat", "usage_usec", &v);
		if (r < 0)
			return cordon_err(e, -r, "cgroup: read %s/cpu.stat", cg->d[0].path);
		u->cpu_ms = (double)v / 1000.0;
		/* memory.peak: kernel >= 5.19, and only with the memory controller. */
		if (cg_read_u64_at(fd, "memory.peak", &v) == 0)
			u->peak_memory_bytes = (int64_t)v;
		if (cg_read_key_at(fd, "memory.events", "oom_kill", &v) == 0)
			u->oom_killed = v > 0;
		return 0;
	}

	{
		const struct cg_dir *c = &cg->d[cg->idx[V1_CPUACCT]];
		const struct cg_dir *m = &cg->d[cg->idx[V1_MEMORY]];

		r = cg_read_u64_at(c->fd, "cpuacct.usage", &v); /* nanoseconds */
		if (r < 0)
			return cordon_err(e, -r, "cgroup: read %s/cpuacct.usage", c->path);
		u->cpu_ms = (double)v / 1e6;
		r = cg_read_u64_at(m->fd, "memory.max_usage_in_bytes", &v);
		if (r < 0)
			return cordon_err(e, -r, "cgroup: read %s/memory.max_usage_in_bytes",
					  m->path);
		u->peak_memory_bytes = (int64_t)v;
		/* "oom_kill N" in memory.oom_control since 4.13. */
		if (cg_read_key_at(m->fd, "memory.oom_control", "oom_kill", &v) == 0)
			u->oom_killed = v > 0;
	}
	return 0;
}
