/* SPDX-License-Identifier: MIT */
/* File-system helpers for cordon's own directories (never the command's). */
#pragma once

#include <cordon/cordon.h>

#include <stdbool.h>
#include <sys/stat.h>

/* mkdir -p with mode 0755 for missing components. */
int fsutil_mkdir_p(const char *path, cordon_error *e);
/*
 * As root, the walk to a workdir: no symlink on the way (fsutil.c says why). create: missing
 * directories are made (0755); else a missing component ends the walk with success (what
 * follows it would be made: `cordon check` judges the path the run would make).
 * ret_fd (may be NULL): the directory walked to (O_PATH), -1 when the walk ended early.
 */
int fsutil_walk_nofollow(const char *path, bool create, int *ret_fd, cordon_error *e);
/*
 * The workdir a backend works in, as an O_PATH directory fd (*ret_st its stat): a dup of
 * given_fd when the caller opened and checked it (cordond as the client, the CLI's walk as
 * root), else path opened here, as root without following any symlink on the way (the path
 * was resolved already: one there now was swapped in since). -1 with *e otherwise.
 */
int fsutil_open_workdir(const char *path, int given_fd, struct stat *ret_st, cordon_error *e);
/*
 * mkdtemp (tmpl ends in XXXXXX), but the directory is made 01700: marked as a removable temp dir
 * (fsutil_temp_hold) from its first instant, so one whose maker dies before holding it is still
 * the sweep's to remove. 0, or -1 with errno.
 */
int fsutil_mkdtemp_marked(char *tmpl);
/*
 * Remove `path` and everything under it without following symlinks and without leaving the
 * file system it is on: a command may have planted symlinks or mount points in its workdir.
 * An empty directory goes even with no fd to spare (EMFILE): a failed request leaves none.
 */
int fsutil_rmtree(const char *path, cordon_error *e);
/*
 * The same, but as root a directory of another user's is emptied with that user's rights
 * (their uid, its group), and then removed if its name still names it: a temp workdir given to
 * nobody is nobody's to fill, another user's tree moved in included, which root would delete.
 */
int fsutil_rmtree_owned(const char *path, cordon_error *e);
/*
 * Temp directories that outlive a killed owner. A temp dir in use is *held*: its owner keeps
 * an fd with an flock on it (fsutil_temp_hold), which the kernel drops when the owner dies
 * however it dies, and its sticky bit is set, the mark of a removable temp dir (a kept one,
 * `--keep`, loses it: fsutil_temp_release(fd, true)). fsutil_temp_sweep removes the marked
 * directories base/prefix* that nobody holds and that were not modified for min_age seconds
 * (the age covers the moment between mkdtemp and the flock), skipping those it may not
 * remove. Both are best effort; the sweep returns how many it removed. Whose: a directory
 * the caller's euid owns, or one `also` owns when the caller is root (a root run's temp
 * workdir belongs to the run's identity, nobody); FSUTIL_ANY_OWNER: root takes every user's
 * (cordond's start). As root, each one not root's is removed with its owner's rights, never
 * root's (nobody's too: any process of nobody's can make one). Another user's
 * marked directory is never a run's to walk and delete.
 */
#define FSUTIL_ANY_OWNER ((uid_t)-1)
int fsutil_temp_hold(const char *dir, cordon_error *e);
void fsutil_temp_release(int fd, bool kept);
int fsutil_temp_sweep(const char *base, const char *prefix, unsigned min_age, uid_t also);
/* write(2) until everything is written or a real error (EINTR is retried); 0 or -1/errno. */
int fsutil_write_all(int fd, const void *buf, size_t n);
/*
 * Attach fds[0..n) to mh as one SCM_RIGHTS control message kept in buf, which holds at least
 * CMSG_SPACE(n * sizeof(int)) bytes aligned for struct cmsghdr.
 */
struct msghdr;
void fsutil_attach_fds(struct msghdr *mh, void *buf, size_t buflen, const int *fds, size_t n);
/* A field of /proc/self/mountinfo in place: the kernel escapes space, tab, newline and
 * backslash as \ooo. */
void fsutil_unescape_mountinfo(char *s);
/*
 * Whether only root can change what path names: walked from / without following anything (a
 * symlink on the way or at its end is refused), every directory on the way is such that no
 * one else may rename or replace the next entry in it (root's and writable by no one else, or
 * root's and sticky with that entry root's). Where another user can swap an entry on the way,
 * they choose what the path names when root later resolves it (dockerd, a bind's source at
 * every start of a container; the agent binary every container runs). 0 with *ret_st the entry it names; -1 with *e: why not (code 0), or what
 * could not be opened (code errno).
 */
int fsutil_path_root_controlled(const char *path, struct stat *ret_st, cordon_error *e);
