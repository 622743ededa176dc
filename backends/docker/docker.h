/* SPDX-License-Identifier: MIT */
/*
 * The Docker backend's entry points beyond the vtable: where the daemon is, its API version
 * (cordon doctor), and removing the containers of cordon processes that are gone (cordon gc,
 * cordond at start).
 */
#pragma once

#include <cordon/cordon.h>

/* The image of a profile without [docker] image: AG2's DockerEnvironment default. */
#define DOCKER_DEFAULT_IMAGE "python:3.12-slim"

/* The daemon's Unix socket: DOCKER_HOST=unix://PATH, else /var/run/docker.sock. Other
 * schemes (tcp://, ssh://) are an error: a remote daemon cannot bind-mount the workdir. */
int docker_socket_path(char **ret, cordon_error *e);

/* Ping the daemon: *ret_version is the API version cordon will use ("1.41"), *ret_server the
 * daemon's own ("Docker/20.10.24+dfsg1 (linux)" or NULL). */
int docker_probe(char **ret_version, char **ret_server, cordon_error *e);

/*
 * Remove the containers of cordon's (labelled cordon.session and named cordon- and that
 * label's first 16 characters: the labels alone may be an image's) that orphan_judge proves
 * orphans (backends/orphan.h: made on an earlier boot of this machine before this boot began,
 * or on this boot in this pid namespace by an owner, label cordon.owner, that is gone), and
 * their agent's directories (label cordon.agent_dir). *ret_removed counts them; *ret_kept
 * counts the others of cordon's whose owner cannot be proven alive or gone from here (another
 * pid namespace or machine id, an older cordon's labels, labels cordon did not write).
 */
int docker_gc(unsigned *ret_removed, unsigned *ret_kept, cordon_error *e);

/*
 * Tests only: called just before every container start (the open's, and a restart's), where
 * dockerd resolves the workdir's path again; NULL in the programs.
 */
extern void (*docker_test_before_start)(void);

/*
 * Tests only: called in a restart just after the container started again, before its workdir
 * is checked; NULL in the programs.
 */
extern void (*docker_test_before_check)(void);

/* Tests only: called in a restart just after the container's old cgroup handle was dropped
 * (the usage fields'), while another thread's exec may be reading it; NULL in the programs. */
extern void (*docker_test_cgroup_dropped)(void);
