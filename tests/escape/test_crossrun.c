/* SPDX-License-Identifier: MIT */
/*
 * Class 7, cross-run leaks and covert channels (isolate's list): /tmp and other shared
 * writable places, SysV IPC, kernel keyrings. Run 1 leaves something, run 2 (a fresh cordon
 * run with its own temp workdir) looks for it, and the host must not have it either.
 */
#define _GNU_SOURCE
#include "tests/escape/escape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

ESC_CASE(escape_crossrun, tmp_and_shared_dirs)
{
	struct esc_opts o = { .no_workdir = true };
	struct tu_run r1, r2;
	static const char *const dirs[] = { "/tmp", "/dev/shm", "/var/tmp", "/run/lock" };

	for (size_t i = 0; i < 4; i++)
		esc_on_teardown("rm -f '%s/esc-x-%s'", dirs[i], e->tag);
	esc_run(&r1, &o,
		"for d in /tmp /dev/shm /var/tmp /run/lock; do echo %s > $d/esc-x-%s; done "
		"2>/dev/null; cat /tmp/esc-x-%s",
		e->secret, e->tag, e->tag);
	cr_expect(strstr(r1.out, e->secret), "run 1 could not write its own /tmp:\n%s", r1.out);
	esc_run(&r2, &o,
		"cat /tmp/esc-x-* /dev/shm/esc-x-* /var/tmp/esc-x-* /run/lock/esc-x-* "
		"2>/dev/null; ls -a /tmp; true");
	esc_expect_absent(&r2, e->secret, "run 2 read run 1's file");
	for (size_t i = 0; i < 4; i++) {
		char p[128];

		snprintf(p, sizeof(p), "%s/esc-x-%s", dirs[i], e->tag);
		cr_expect(!esc_exists(p), "run 1's %s is on the host", p);
	}
	tu_run_free(&r1);
	tu_run_free(&r2);
}

/* A key and a segment size unique to this test. */
static key_t tag_key(const struct esc *e)
{
	return (key_t)(strtoul(e->tag + 3 + 4, NULL, 16) & 0x7fffffff) | 0x10000000;
}

static int host_shm_of_size(size_t size)
{
	char *s = esc_read("/proc/sysvipc/shm", NULL), *line, *save = NULL;
	int n = 0;

	cr_assert(s);
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long sz;

		if (sscanf(line, "%*d %*d %*o %lu", &sz) == 1 && sz == size)
			n++;
	}
	free(s);
	return n;
}

ESC_CASE(escape_crossrun, sysv_ipc)
{
	key_t key = tag_key(e);
	size_t size = 40960 + (size_t)(key & 0xfff);
	struct tu_run r1, r2;
	char hex[32];
	int before = host_shm_of_size(size), id;

	esc_on_teardown("ipcs -m | awk '$5 == %zu {print $2}' | xargs -r -n1 ipcrm -m", size);
	esc_put_helper(e);
	esc_run(&r1, NULL, "ipcmk -M %zu; ./h sysv create %#x; ipcs", size, (unsigned)key);
	cr_expect(strstr(r1.out, "Shared memory id"), "run 1 could not use SysV IPC:\n%s", r1.out);
	esc_run(&r2, NULL, "ipcs; ./h sysv find %#x", (unsigned)key);
	snprintf(hex, sizeof(hex), "0x%08x", (unsigned)key);
	esc_expect_no_escape(&r2, "run 2 sees run 1's IPC objects");
	esc_expect_absent(&r2, hex, "run 2 lists run 1's key");
	cr_expect_eq(host_shm_of_size(size), before, "run 1's segment is in the host's IPC");
	/* the keyed objects, on the host */
	if ((id = shmget(key, 0, 0)) >= 0) {
		cr_expect_fail("run 1's shm segment is on the host");
		shmctl(id, IPC_RMID, NULL);
	}
	if ((id = msgget(key, 0)) >= 0) {
		cr_expect_fail("run 1's message queue is on the host");
		msgctl(id, IPC_RMID, NULL);
	}
	if ((id = semget(key, 0, 0)) >= 0) {
		cr_expect_fail("run 1's semaphores are on the host");
		semctl(id, 0, IPC_RMID);
	}
	tu_run_free(&r1);
	tu_run_free(&r2);
}

ESC_CASE(escape_crossrun, keyrings)
{
	struct tu_run r1, r2, h;

	esc_put_helper(e);
	esc_run(&r1, NULL, "./h keys add %s", e->tag);
	esc_run(&r2, NULL, "./h keys find %s; cat /proc/keys; true", e->tag);
	esc_expect_no_escape(&r1, "run 1 added a key");
	esc_expect_no_escape(&r2, "run 2 found run 1's key");
	esc_expect_absent(&r2, e->tag, "run 2 lists run 1's key");
	esc_host_sh(&h, "./h keys find %s", e->tag);
	esc_expect_no_escape(&h, "run 1's key is in the host's keyrings");
	tu_run_free(&r1);
	tu_run_free(&r2);
	tu_run_free(&h);
}
