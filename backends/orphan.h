/* SPDX-License-Identifier: MIT */
/*
 * Which of cordon's Docker containers and Daytona sandboxes `cordon gc` may remove: those it
 * can prove are orphans. A pid means something only on one boot of one machine, in one pid
 * namespace, and neither service is seen from one only: a Daytona organisation is shared by
 * every machine that has its key, a dockerd by every container given its socket
 * (docker-outside-of-docker) and by cordond and the CLI, which need not share a pid
 * namespace. So each container or sandbox carries, besides its owner's pid and start time,
 * labels that say on which machine, which boot and which pid namespace that pid was taken
 * (docs/daytona.md, "Cleanup"; docs/docker.md, "Leftovers").
 */
#pragma once

#include <stdbool.h>
#include <time.h>

/*
 * The labels cordon writes on each of its sandboxes and containers (docs/daytona.md, "What a
 * run does"; docs/docker.md, "What a run does"). cordon.host: Daytona's only.
 */
#define ORPHAN_LABEL_SESSION "cordon.session" /* 32 hex: the run's or cordond session's */
#define ORPHAN_LABEL_HOST "cordon.host"	      /* the hostname, for people; gc does not use it */
#define ORPHAN_LABEL_OWNER "cordon.owner"     /* <pid>:<start time> of the cordon that made it */
#define ORPHAN_LABEL_MACHINE "cordon.machine" /* 32 hex, or "host-" + 32 hex (no machine-id) */
#define ORPHAN_LABEL_BOOT "cordon.boot"	      /* 32 hex */
#define ORPHAN_LABEL_PIDNS "cordon.pidns"     /* <pid ns inode>[-<time ns inode>] */

/* A label value's room: "host-" + 32 hex, two 20-digit inodes and a '-', with a NUL. */
#define ORPHAN_VALUE_MAX 48

/* This process, as its sandboxes' labels describe it and as gc compares them. */
struct orphan_self {
	char host[65];
	char owner[ORPHAN_VALUE_MAX];
	char machine[ORPHAN_VALUE_MAX];
	bool machine_from_id; /* machine comes from /etc/machine-id (else from the hostname) */
	char boot[33];	      /* "" when the boot id cannot be read: the label is left out */
	char pidns[ORPHAN_VALUE_MAX]; /* "" when /proc is not this pid namespace's: left out */
	time_t boot_start;	      /* when this boot began, wall clock */
	/* This /proc hides processes this one may not trace (hidepid): a pid not found there
	 * may run all the same. */
	bool pids_hidden;
};

/* Read what this process is (cannot fail: what cannot be read is left empty, as said above). */
void orphan_self_read(struct orphan_self *ret);

/*
 * The cordon.machine value from a machine-id file (machine-id(5): 32 hex digits and a
 * newline), or, when the file is missing or malformed, from the hostname, prefixed "host-".
 * True when it came from the file.
 */
bool orphan_machine_label(const char *machine_id_path, const char *hostname,
			  char ret[ORPHAN_VALUE_MAX]);
/* The cordon.boot value from a boot id file (a UUID); false, and "" in ret, when there is none. */
bool orphan_boot_label(const char *boot_id_path, char ret[33]);

/* The labels of one sandbox or container of the list (NULL: absent), and when it was made. */
struct orphan_labels {
	const char *session, *owner, *machine, *boot, *pidns;
	/* The service's clock (Daytona's createdAt, Docker's Created); NULL: unknown. */
	const time_t *created;
};

enum orphan_verdict {
	/*
	 * Another machine's (or no machine label): Daytona's gc does not count it (another
	 * machine's sandbox in a shared organisation); Docker's keeps and counts it (its cordon
	 * saw another machine id, in a container of this host, or was an older cordon).
	 */
	ORPHAN_NOT_OURS,
	ORPHAN_ALIVE,	/* its cordon still runs here */
	ORPHAN_GONE,	/* provably an orphan of this machine: to delete */
	ORPHAN_UNKNOWN, /* this machine's, but not provably an orphan from here: kept */
};

enum orphan_verdict orphan_judge(const struct orphan_self *self, const struct orphan_labels *l);

/* An ISO 8601 UTC time as Daytona writes createdAt ("2024-10-01T12:00:00.000Z", or +hh:mm). */
bool orphan_parse_time(const char *s, time_t *ret);
