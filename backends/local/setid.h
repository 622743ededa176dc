/* SPDX-License-Identifier: MIT */
#pragma once

#include "backends/local/sandbox.h"

#include <sys/stat.h>

/*
 * The privileged programs and special files of an idmapped workdir (setid.c): every regular
 * file below wd_fd with a setuid or setgid bit or a file capability, and every device node,
 * socket and FIFO, each as {relative path, dev, ino}, appended to out->ro (the child binds
 * each onto itself read-only). Bounded like the hide walk
 * (HIDE_MAX_DEPTH, HIDE_MAX_ENTRIES); a workdir past a bound is an error, never a partial list.
 * When the profile also needs the hide walk (hide_walks), hide_scan(HIDE_SETID) finds the
 * same in that walk instead, and this one is not run.
 */
int setid_scan(int wd_fd, struct sb_hide_list *out, cordon_error *e);

/*
 * Whether the entry `name` of the directory dfd, lstat'ed as st (not a directory), is one the
 * command must not change: what setid_scan lists, and the hide walk with HIDE_SETID too.
 */
bool setid_privileged(int dfd, const char *name, const struct stat *st);
