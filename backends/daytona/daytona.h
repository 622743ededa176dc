/* SPDX-License-Identifier: MIT */
#pragma once

#include "backends/backend.h"

/* In cordon-remote and cordond only (backends/backend.c). */
extern const struct cordon_backend_ops backend_daytona;

/*
 * Create the sandbox of a handle that open() returned, if not done yet, and wait until it is
 * started (exec and the files calls do it on first use). cordond calls it when a session opens
 * so that bad credentials or a broken snapshot fail the session's creation, not its first run.
 */
int daytona_ensure(void *h, volatile int *cancel, cordon_error *e);

/* Remove a file of the remote workdir (rel as for put_file); ENOENT when there is none. */
int daytona_delete_file(void *h, const char *rel, cordon_error *e);

/*
 * Take DAYTONA_API_KEY (or systemd's credential daytona-api-key), DAYTONA_API_URL and
 * DAYTONA_TARGET from the environment now, for every later open(): cordond calls it before it
 * clears its environment. Without it, open() reads the environment itself (the CLI).
 */
int daytona_capture_env(cordon_error *e);

/* The remote workdir of a handle ("/workspace" unless the profile says otherwise). */
const char *daytona_workdir(const void *h);

/*
 * Delete the sandboxes this machine's cordon processes created and left, after a SIGKILLed
 * cordon (`cordon gc`): those that carry this machine's label and that orphan_judge proves
 * orphans (made on an earlier boot, or on this boot in this pid namespace by a process that is
 * gone). *ret_skipped counts this machine's sandboxes that cannot be proven either way from
 * here (another pid namespace, labels cordon did not write), which are left alone.
 */
int daytona_gc(const struct cordon_profile *p, unsigned *ret_removed, unsigned *ret_skipped,
	       cordon_error *e);
