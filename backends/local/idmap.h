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
 * (close it when done: nothing is cached across runs).
 */
int idmap_userns_open(uid_t disk_uid, uid_t run_uid, gid_t disk_gid, gid_t run_gid, int *ret_fd,
		      cordon_error *e);
/*
 * Whether the file system of the directory open at dirfd takes an idmapped mount: the real
 * test (a detached clone of its mount, idmapped, then dropped), as root. 0 when it does, else
 * the errno of the refusal (EINVAL: the file system cannot; overlayfs on this kernel, say).
 */
int idmap_probe_dir(int dirfd);
/* Errors of mount_setattr(MOUNT_ATTR_IDMAP) that mean "not on this file system". */
bool idmap_unsupported(int err);
