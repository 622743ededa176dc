/* SPDX-License-Identifier: MIT */
#include "backends/backend.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static const struct cordon_backend_ops *const backends[] = {
	&backend_local,
	&backend_docker,
};

/*
 * The Daytona backend needs libcurl, which the static CLI cannot link (docs/daytona.md): it is
 * in cordon-remote and cordond only, and this weak reference is NULL elsewhere.
 */
extern const struct cordon_backend_ops backend_daytona __attribute__((weak));

const struct cordon_backend_ops *backend_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	if (&backend_daytona && strcmp(name, "daytona") == 0)
		return &backend_daytona;
	return NULL;
}

void backend_cancelled(struct cordon_result *r, int sig)
{
	/* Not a signal number (no caller sets one): the run was killed, which is SIGKILL. */
	if (sig <= 0 || sig >= 65)
		sig = SIGKILL;
	r->signal = sig;
	r->exit_code = -sig;
	r->status = 128 + sig;
}

bool backend_host_only_var(const struct cordon_profile *p, const char *kv)
{
	const char *names[] = { "PATH=", "HOME=" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strncmp(kv, names[i], strlen(names[i])))
			continue;
		for (size_t j = 0; j < p->env.n; j++)
			if (!strncmp(p->env.v[j], names[i], strlen(names[i])))
				return false;
		return true;
	}
	return false;
}

bool backend_root_run_ids(uid_t owner, gid_t group, uid_t *ret_uid, gid_t *ret_gid)
{
	if (owner == 0) {
		*ret_uid = BACKEND_NOBODY;
		*ret_gid = BACKEND_RUN_GID;
		return true;
	}
	*ret_uid = owner;
	*ret_gid = group != 0 ? group : BACKEND_NOBODY;
	/* nobody's own workdir (cordond's session for root): not nogroup either */
	if (owner == BACKEND_NOBODY && *ret_gid == BACKEND_NOBODY)
		*ret_gid = BACKEND_RUN_GID;
	return false;
}

int backend_owner_of(pid_t pid, char *buf, size_t n)
{
	char path[64], stat[1024];
	unsigned long long start = 0;
	FILE *f;
	char *p;

	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(stat, sizeof(stat), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(stat, ')');
	/* Field 22 (starttime) is the 20th after the ')'. */
	for (int i = 0; p && i < 20; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return -1;
	(void)snprintf(buf, n, "%d:%llu", (int)pid, start);
	return 0;
}

void backend_random_hex(char *buf, size_t bytes)
{
	unsigned char rnd[32];

	if (bytes > sizeof(rnd))
		bytes = sizeof(rnd);
	if (getrandom(rnd, bytes, 0) != (ssize_t)bytes) {
		struct timespec ts;

		/* never in practice: still unique enough */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < bytes; i++)
			rnd[i] = (unsigned char)(rand() ^ getpid() ^ ts.tv_nsec);
	}
	for (size_t i = 0; i < bytes; i++)
		(void)sprintf(buf + 2 * i, "%02x", rnd[i]);
}
