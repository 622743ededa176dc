/* SPDX-License-Identifier: MIT */
/* File-system helpers for cordon's own directories (never the command's). */
#pragma once

#include <cordon/cordon.h>

/* mkdir -p with mode 0755 for missing components. */
int fsutil_mkdir_p(const char *path, cordon_error *e);
/*
 * Remove `path` and everything under it without following symlinks and without leaving the
 * file system it is on: a command may have planted symlinks or mount points in its workdir.
 */
int fsutil_rmtree(const char *path, cordon_error *e);
/* write(2) until everything is written or a real error (EINTR is retried); 0 or -1/errno. */
int fsutil_write_all(int fd, const void *buf, size_t n);
