/* SPDX-License-Identifier: MIT */
#pragma once

#include "backends/local/sandbox.h"

/*
 * The privileged programs and special files of an idmapped workdir (setid.c): every regular
 * file below wd_fd with a setuid or setgid bit or a file capability, and every device node,
 * socket and FIFO, each as {relative path, dev, ino}, appended to out->ro (the child binds
 * each onto itself read-only). Bounded like the hide walk
 * (HIDE_MAX_DEPTH, HIDE_MAX_ENTRIES); a workdir past a bound is an error, never a partial list.
 */
int setid_scan(int wd_fd, struct sb_hide_list *out, cordon_error *e);
