/* SPDX-License-Identifier: MIT */
/*
 * A Docker exec's usage from its container's cgroup (usage.h). cgroup v1 (memory and cpuacct,
 * as on this Debian 12 host with Docker 20.10) and v2 (Docker 29 hosts).
 *
 * Per exec, not per container: CPU and OOM kills are counter deltas; the peak is reset before
 * the exec where the kernel allows it (v1: writing 0 to memory.max_usage_in_bytes, root only;
 * v2: writing to memory.peak resets it for that file descriptor, kernel 6.12 and later). Where
 * it cannot be reset, the peak is the exec's only when it went above the earlier one.
 */
#define _GNU_SOURCE
#include "backends/docker/usage.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct docker_cg {
	int mem_fd; /* the memory controller's directory of the container */
	bool mem_v2;
	int cpu_fd; /* cpuacct (v1) or the unified directory (v2) */
	bool cpu_v2;
};

void docker_cg_free(struct docker_cg *c)
{
	if (!c)
		return;
	if (c->mem_fd >= 0)
		close(c->mem_fd);
	if (c->cpu_fd >= 0)
		close(c->cpu_fd);
	free(c);
}

/* Is word one of the comma-separated entries of list? */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);

		if (l == n && !strncmp(p, word, n))
			return true;
		p = c ? c + 1 : NULL;
	}
	return false;
}

/*
 * The directory where the hierarchy holding ctrl (a v1 controller, or NULL for the v2 one)
 * shows cgroup path: its mount point plus path below the mount's root. NULL when no such
 * mount shows it.
 */
static char *mounted_dir(const char *ctrl, const char *path)
{
	_cleanup_fclose_ FILE *mi = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!mi)
		return NULL;
	while (getline(&line, &cap, mi) > 0) {
		/* id parent maj:min root point opts [optional...] - fstype source super */
		char *f[5] = { 0 }, *save = NULL, *tok, *dash = strstr(line, " - ");
		char *fstype, *super, *out;
		const char *rel = path;
		size_t rl;
		int i = 0;

		if (!dash)
			continue;
		*dash = 0;
		fstype = strtok_r(dash + 3, " \n", &save);
		(void)strtok_r(NULL, " \n", &save);
		super = strtok_r(NULL, " \n", &save);
		if (!fstype || !super || strcmp(fstype, ctrl ? "cgroup" : "cgroup2") ||
		    (ctrl && !has_word(super, ctrl)))
			continue;
		save = NULL;
		for (tok = strtok_r(line, " ", &save); tok && i < 5;
		     tok = strtok_r(NULL, " ", &save))
			f[i++] = tok;
		if (i < 5)
			continue;
		fsutil_unescape_mountinfo(f[3]);
		fsutil_unescape_mountinfo(f[4]);
		rl = strlen(f[3]);
		if (strcmp(f[3], "/")) {
			if (strncmp(path, f[3], rl) || (path[rl] != '/' && path[rl]))
				continue; /* this mount shows another part of the hierarchy */
			rel = path + rl;
		}
		while (*rel == '/')
			rel++;
		if (asprintf(&out, "%s/%s", f[4], rel) < 0)
			return NULL;
		return out;
	}
	return NULL;
}

/* pid's cgroup path for ctrl (NULL: v2) if its last component names id (malloc'd), else NULL. */
static char *pid_cgroup(pid_t pid, const char *ctrl, const char *id)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	char path[64];
	size_t cap = 0;

	(void)snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (getline(&line, &cap, f) > 0) {
		/* hierarchy-id:controllers:path */
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *nl;
		const char *base;

		if (!c2)
			continue;
		*c1 = *c2 = 0;
		nl = strchr(c2 + 1, '\n');
		if (nl)
			*nl = 0;
		if (ctrl ? !has_word(c1 + 1, ctrl) : (strcmp(line, "0") || c1[1]))
			continue;
		/* The last component names the container: /docker/<id> (cgroupfs driver),
		 * /system.slice/docker-<id>.scope (systemd driver). */
		base = strrchr(c2 + 1, '/');
		return base && strstr(base, id) ? strdup(c2 + 1) : NULL;
	}
	return NULL;
}

/* Open the directory of pid's cgroup for ctrl (NULL: v2), if its path names id. */
static int open_dir(pid_t pid, const char *ctrl, const char *id)
{
	_cleanup_free_ char *path = pid_cgroup(pid, ctrl, id), *dir = NULL;

	if (!path || !(dir = mounted_dir(ctrl, path)))
		return -1;
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

bool docker_cg_pid_in(pid_t pid, const char *id)
{
	_cleanup_free_ char *v1 = NULL, *v2 = NULL;

	if (pid <= 0 || strlen(id) < 12)
		return false;
	v1 = pid_cgroup(pid, "memory", id);
	if (v1)
		return true;
	v2 = pid_cgroup(pid, NULL, id);
	return v2 != NULL;
}

static bool has_file(int dfd, const char *name)
{
	return faccessat(dfd, name, F_OK, 0) == 0;
}

int docker_cg_open(pid_t pid, const char *id, struct docker_cg **ret, cordon_error *e)
{
	struct docker_cg *c;

	if (pid <= 0 || strlen(id) < 12)
		return cordon_err(e, EINVAL, "docker: no container process to account");
	c = calloc(1, sizeof(*c));
	if (!c)
		return cordon_err(e, ENOMEM, "out of memory");
	/* v1 controllers where they are mounted (hybrid hosts), else the unified hierarchy. */
	c->mem_fd = open_dir(pid, "memory", id);
	if (c->mem_fd < 0) {
		c->mem_fd = open_dir(pid, NULL, id);
		c->mem_v2 = true;
		if (c->mem_fd >= 0 && !has_file(c->mem_fd, "memory.current")) {
			close(c->mem_fd);
			c->mem_fd = -1;
		}
	}
	c->cpu_fd = open_dir(pid, "cpuacct", id);
	if (c->cpu_fd < 0) {
		c->cpu_fd = open_dir(pid, NULL, id);
		c->cpu_v2 = true;
	}
	if (c->mem_fd < 0 || c->cpu_fd < 0) {
		docker_cg_free(c);
		return cordon_err(e, ENOENT, "docker: the container's cgroup is not visible here");
	}
	*ret = c;
	return 0;
}

static int read_at(int dfd, const char *file, char *buf, size_t n)
{
	_cleanup_close_ int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -1;
	r = read(fd, buf, n - 1);
	if (r < 0)
		return -1;
	buf[r] = 0;
	return 0;
}

static int read_u64(int dfd, const char *file, uint64_t *ret)
{
	char buf[64], *end;

	if (read_at(dfd, file, buf, sizeof(buf)) < 0)
		return -1;
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	return errno || end == buf ? -1 : 0;
}

/* The value of "key N" lines (cpu.stat, memory.events, memory.oom_control). */
static int read_key(int dfd, const char *file, const char *key, uint64_t *ret)
{
	char buf[4096];
	size_t kl = strlen(key);

	if (read_at(dfd, file, buf, sizeof(buf)) < 0)
		return -1;
	for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return sscanf(l + kl + 1, "%" SCNu64, ret) == 1 ? 0 : -1;
	return -1;
}

static int cpu_ns(const struct docker_cg *c, uint64_t *ret)
{
	uint64_t us;

	if (!c->cpu_v2)
		return read_u64(c->cpu_fd, "cpuacct.usage", ret);
	if (read_key(c->cpu_fd, "cpu.stat", "usage_usec", &us) < 0)
		return -1;
	*ret = us * 1000;
	return 0;
}

/* OOM kills so far: "oom_kill N" in memory.oom_control (v1, kernel 4.13+) or memory.events. */
static int oom_kills(const struct docker_cg *c, uint64_t *ret)
{
	return read_key(c->mem_fd, c->mem_v2 ? "memory.events" : "memory.oom_control", "oom_kill",
			ret);
}

void docker_cg_begin(struct docker_cg *c, struct docker_cg_mark *m)
{
	*m = (struct docker_cg_mark){ .peak_fd = -1 };
	if (!c || cpu_ns(c, &m->cpu_ns) < 0 || oom_kills(c, &m->oom_kills) < 0)
		return;
	if (!c->mem_v2) {
		_cleanup_close_ int fd =
			openat(c->mem_fd, "memory.max_usage_in_bytes", O_WRONLY | O_CLOEXEC);

		m->peak_reset = fd >= 0 && write(fd, "0", 1) == 1;
		if (!m->peak_reset &&
		    read_u64(c->mem_fd, "memory.max_usage_in_bytes", &m->peak) < 0)
			return;
	} else {
		/* memory.peak is missing before kernel 5.19, and read-only before 6.12. */
		m->peak_fd = openat(c->mem_fd, "memory.peak", O_RDWR | O_CLOEXEC);
		if (m->peak_fd >= 0)
			m->peak_reset = write(m->peak_fd, "reset\n", 6) == 6;
		if (!m->peak_reset && read_u64(c->mem_fd, "memory.peak", &m->peak) < 0)
			m->peak = UINT64_MAX; /* no peak to compare with */
	}
	m->ok = true;
}

void docker_cg_end(struct docker_cg *c, struct docker_cg_mark *m, struct cordon_result *r)
{
	uint64_t v;

	if (!c || !m->ok)
		goto out;
	if (cpu_ns(c, &v) == 0 && v >= m->cpu_ns)
		r->cpu_ms = (double)(v - m->cpu_ns) / 1e6;
	if (oom_kills(c, &v) == 0)
		r->oom_killed = v > m->oom_kills;
	r->peak_memory_bytes = -1;
	if (m->peak_reset && m->peak_fd >= 0) {
		char buf[64];
		ssize_t n = pread(m->peak_fd, buf, sizeof(buf) - 1, 0);

		if (n > 0) {
			buf[n] = 0;
			v = strtoull(buf, NULL, 10);
			r->peak_memory_bytes = (int64_t)v;
		}
	} else if (read_u64(c->mem_fd, c->mem_v2 ? "memory.peak" : "memory.max_usage_in_bytes",
			    &v) == 0 &&
		   (m->peak_reset || (m->peak != UINT64_MAX && v > m->peak))) {
		/* Reset: the peak since begin. Otherwise only a new high is this exec's. */
		r->peak_memory_bytes = (int64_t)v;
	}
out:
	if (m->peak_fd >= 0)
		close(m->peak_fd);
	m->peak_fd = -1;
}
