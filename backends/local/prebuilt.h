/* SPDX-License-Identifier: MIT */
/*
 * Pre-built sandboxes (prebuilt.c): in a process that makes runs one at a time (a cordond
 * runner, after cordon_stage_prebuild(true)), the next run's sandbox is cloned and given its
 * root, all but the workdir, before the run is known; the run then only sends its plan.
 */
#pragma once

#include "backends/local/sandbox.h"

#include <cordon/cordon.h>

struct cgroup_run;

/* What a run that took the pre-built sandbox gets: the parent's ends, as clone_child's. */
struct prebuilt_run {
	pid_t pid;
	int pidfd;
	int report_fd; /* the parent's end of the report socket */
	int go_fd;     /* the parent's end of the gate */
	int status_fd; /* the status pipe's read end (non-blocking) */
	struct cgroup_run *cg;
	double age_ms; /* since it was built */
};

bool prebuilt_enabled(void);
void prebuilt_enable(bool on);
/* The mount plan of a run just started: the next one is pre-built from it. */
void prebuilt_note(const struct sb_plan *pl);
/* Build the next sandbox from the last plan noted, if there is none yet. */
int prebuilt_make(cordon_error *e);
/*
 * Start pl in the pre-built sandbox when there is one and it was built for pl's mounts (else
 * it is dropped): its cgroup gets p's limits, pl is copied into its arena, and the request
 * goes with pl's stdio and workdir tree. 1: *ret is the run's; 0: none fits (or it died, or
 * its cgroup is gone meanwhile): build one as usual.
 */
int prebuilt_start(const struct sb_plan *pl, const struct cordon_profile *p,
		   struct prebuilt_run *ret, cordon_error *e);
/* Kill and remove the pre-built sandbox, if any. */
void prebuilt_drop(void);
