/* SPDX-License-Identifier: MIT */
/*
 * The Docker backend's exec start and output relay, through its vtable (as cordond's docker
 * sessions use it): `docker_bench IMAGE N MB` opens one container, runs `true` N times and
 * prints the median exec time in ms, then relays MB megabytes of output once (`dd bs=1M`) and prints the throughput in MB/s; through the agent
 * (CORDON_DOCKER_AGENT names the binary) and through Docker's exec API ([docker] agent =
 * false). bench/docker.sh compares these with the docker CLI. `docker_bench IMAGE N MB relay`:
 * only the relay through the agent (after N execs that warm the container up), for the
 * script's relay rounds; with PRODUCER, the relay's command is `PRODUCER MB` instead of dd
 * (bench/zpump.c, which does not copy what it writes).
 */
#define _GNU_SOURCE
#include "backends/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run(void *h, struct cordon_profile *p, const char *cmd, const char *wd, double *ms)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	char *envp[] = { "PATH=/bin:/usr/bin", NULL };
	struct cordon_exec x = { .argv = argv,
				 .envp = envp,
				 .workdir = wd,
				 .workdir_fd = -1,
				 .profile = p,
				 .stdin_fd = -1 };
	struct cordon_result r = { 0 };
	cordon_error e;
	double t0 = now_ms();

	if (backend_docker.exec(h, &x, &r, &e) < 0) {
		fprintf(stderr, "docker_bench: %s\n", e.msg);
		return -1;
	}
	*ms = now_ms() - t0;
	if (r.exit_code != 0) {
		fprintf(stderr, "docker_bench: '%s' exited %d\n", cmd, r.exit_code);
		cordon_result_free(&r);
		return -1;
	}
	cordon_result_free(&r);
	return 0;
}

/* One container, N execs of `true` and one relay: *ret_ms the median exec, *ret_mbs MB/s. */
static int measure(struct cordon_profile *p, const char *wd, int n, int mb, const char *producer,
		   double *ret_ms, double *ret_mbs)
{
	cordon_error e;
	char cmd[256];
	double *t = calloc((size_t)n, sizeof(*t)), relay;
	void *h;
	int rc = -1;

	if (!t)
		return -1;
	if (backend_docker.open(
		    &(struct cordon_open){ .profile = p, .workdir = wd, .workdir_fd = -1 }, &h,
		    &e) < 0) {
		fprintf(stderr, "docker_bench: %s\n", e.msg);
		free(t);
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (run(h, p, "true", wd, &t[i]) < 0)
			goto out;
	qsort(t, (size_t)n, sizeof(*t), cmp);
	if (producer)
		snprintf(cmd, sizeof(cmd), "%s %d", producer, mb);
	else
		snprintf(cmd, sizeof(cmd), "dd if=/dev/zero bs=1048576 count=%d 2>/dev/null", mb);
	if (run(h, p, cmd, wd, &relay) < 0)
		goto out;
	*ret_ms = t[n / 2];
	*ret_mbs = mb / (relay / 1e3);
	rc = 0;
out:
	backend_docker.close(h);
	free(t);
	return rc;
}

int main(int argc, char **argv)
{
	struct cordon_profile *p;
	cordon_error e;
	char wd[] = "/tmp/cordon-bench-XXXXXX";
	int n, mb, rc = 1;
	double ms, mbs, api_ms, api_mbs;

	bool relay_only = (argc == 5 || argc == 6) && strcmp(argv[4], "relay") == 0;
	const char *producer = argc == 6 ? argv[5] : NULL;

	if ((argc != 4 && !relay_only) || (n = atoi(argv[2])) < 1 || (mb = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: docker_bench IMAGE N MB [relay [PRODUCER]]\n");
		return 2;
	}
	/* A workdir of a user's (nobody's here): a root-owned 0700 one is closed to the
	 * commands, which never run as root (docs/docker.md, "Which user"). */
	if (!mkdtemp(wd) || (geteuid() == 0 && chown(wd, 65534, 65534) < 0) ||
	    cordon_profile_new(&p, &e) < 0)
		return 1;
	p->docker_image = strdup(argv[1]);
	p->timeout = 600;
	if (measure(p, wd, n, mb, producer, &ms, &mbs) < 0)
		goto out;
	if (relay_only) {
		/* One more relay round for bench/docker.sh, through the agent. */
		printf("relay_mbs=%.1f\n", mbs);
		rc = 0;
		goto out;
	}
	p->docker_agent = false;
	if (measure(p, wd, n, mb, NULL, &api_ms, &api_mbs) < 0)
		goto out;
	printf("exec_ms=%.2f relay_mbs=%.1f api_exec_ms=%.2f api_relay_mbs=%.1f\n", ms, mbs, api_ms,
	       api_mbs);
	rc = 0;
out:
	cordon_profile_free(p);
	rmdir(wd);
	return rc;
}
