/* SPDX-License-Identifier: MIT */
/*
 * The user namespace behind an idmapped mount of the workdir (root caller, root-owned workdir):
 * built in the parent, before clone, and handed to the child as an fd for mount_setattr().
 */
#pragma once

#include <cordon/cordon.h>
#include <stdbool.h>
#include <sys/types.h>

/*
 * A user namespace whose maps are "disk_uid run_uid 1" and "disk_gid run_gid 1": on a mount
 * idmapped with it, files owned by disk_uid:disk_gid on the disk are seen (and created) as
 * run_uid:run_gid; every other id is unmapped. *ret_fd is an O_CLOEXEC fd of the namespace
 * (close it when done).
 */
int idmap_userns_open(uid_t disk_uid, uid_t run_uid, gid_t disk_gid, gid_t run_gid, int *ret_fd,
		      cordon_error *e);

/*
 * The same, without waiting for the helper process that held the namespace to be gone: it is
 * killed, and idmap_helper_reap() reaps it later (the sandbox's start does other work
 * meanwhile; waiting for a process to die is a wake-up across CPUs, ~50 us on a VM). The
 * helper runs on h's stack and shares our memory: h must stay where it is until reaped.
 */
struct idmap_helper {
	char stack[8192] __attribute__((aligned(64)));
	int rfd, wfd; /* the helper's pipe ends, as numbers: it reads them when it runs */
	pid_t pid;    /* 0: none to reap */
};
int idmap_userns_start(uid_t disk_uid, uid_t run_uid, gid_t disk_gid, gid_t run_gid,
		       struct idmap_helper *h, int *ret_fd, cordon_error *e);
void idmap_helper_reap(struct idmap_helper *h);
/*
 * For a process that makes many runs (a cordond runner, with cordon_stage_prebuild): keep the
 * last namespace made and hand out a duplicate of it for the same four ids, instead of making
 * a new one each run. false: stop, and drop it.
 */
void idmap_cache(bool on);
/*
 * Whether the file system of the directory open at dirfd takes an idmapped mount: the real
 * test (a detached clone of its mount, idmapped, then dropped), as root. 0 when it does, else
 * the errno of the refusal (EINVAL: the file system cannot; overlayfs on this kernel, say).
 */
int idmap_probe_dir(int dirfd);
/* Errors of mount_setattr(MOUNT_ATTR_IDMAP) that mean "not on this file system". */
bool idmap_unsupported(int err);
