/* SPDX-License-Identifier: MIT */
/*
 * Root's privileged programs and special files in an idmapped workdir.
 *
 * A root-owned workdir under a root caller is idmapped (idmap.c): inside, root's files are the
 * command's own, which is what lets it work there. The files it creates stay plain (seccomp.c
 * refuses every mode with a setuid or setgid bit; file capabilities need CAP_SETFCAP), but
 * files root put there before may be privileged already: an extracted root file system, a
 * `cp -a` of /usr/bin, a package unpacked as root. Owning one, the command may open it for
 * writing, and the kernel clears the setuid and setgid bits and the file capability on
 * write(2), truncate and fallocate, but not on a write through a shared mapping (found in
 * review: a setuid-root program, a setgid one and one with cap_net_raw all kept their privilege
 * with the command's bytes in them). The result would be a privileged program of the command's
 * on the host.
 *
 * Root's device nodes, sockets and FIFOs there are the command's too: useless inside (nodev;
 * the listener is elsewhere), but a chmod 0666 of an extracted root file system's dev/sda is a
 * chmod on the host, where that path has no nodev (found in review: a world-writable device
 * node, socket and FIFO).
 *
 * So before such a run the workdir is walked for every regular file with a setuid or setgid
 * bit or a security.capability attribute, and every device node, socket and FIFO (whoever
 * owns it: a group- or world-writable one is as exposed), and the child binds each onto itself
 * read-only (mounts.c): it stays readable and runnable inside (nosuid), and cannot be opened
 * for writing or chmod'ed (EROFS), renamed or removed (EBUSY), or linked to a name of another
 * mount (EXDEV). The directories on the way to each are pinned too (hide_pin_protected): the
 * command owns them as well, and moving one back and forth while another run's scan walks the
 * workdir made that scan miss the file (found in review). Nothing else can make one: the
 * filter keeps the bits from being set, mknod needs CAP_MKNOD, and a file made meanwhile by
 * root on the host is root's act.
 *
 * The walk reads each directory once and stats its files (getxattr only for regular files with
 * an execute bit): about 1 us a file on the reference VM, paid only by a root caller's run in a
 * root-owned workdir that is not read-only; a big workdir is walked on two threads (below). It
 * has the hide walk's bounds, and a workdir past one is refused, never run with a program left
 * unprotected. When the profile's ignore patterns or glob masks make the hide walk read the
 * workdir anyway, that walk makes the same checks (hide.c: HIDE_SETID, with setid_privileged
 * below) and lists the same files, and this one is not run: the workdir is read once.
 */
#define _GNU_SOURCE
#include "backends/local/setid.h"

#include "runtime/cleanup.h"
#include "runtime/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

struct level {
	DIR *d;
	size_t rel_len; /* of the directory's path in rel, "" at the top */
};

/*
 * Whether the file has a security.capability attribute, read through /proc/self/fd (there is
 * no getxattr relative to a directory fd before Linux 6.13). Only an answer that says "none"
 * is taken for none: no such attribute (ENODATA), none on this file system (ENOTSUP), or the
 * name gone meanwhile (nothing left to protect there). Any other failure protects the file
 * (found in red team: a walk in a process without a /proc of its own, a chroot or a container
 * with /proc masked, had every lookup fail with ENOENT and left a cap_net_raw program of
 * root's writable to the command).
 */
static bool has_file_caps(int dfd, const char *name)
{
	char path[PATH_MAX + 32];
	struct stat st;
	ssize_t n;

	if ((size_t)snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name) >= sizeof(path))
		return true; /* cannot tell: protect it */
	n = lgetxattr(path, "security.capability", NULL, 0);
	if (n >= 0)
		return n > 0;
	if (errno == ENODATA || errno == ENOTSUP)
		return false;
	if (errno == ENOENT && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return false;
	return true; /* cannot tell: protect it */
}

/*
 * A file the command must not change: a privileged program (its content), or a device node,
 * socket or FIFO (its mode: a chmod 0666 of root's dev/sda is a chmod on the host, where its
 * path has no nodev).
 */
bool setid_privileged(int dfd, const char *name, const struct stat *st)
{
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) || S_ISSOCK(st->st_mode) ||
	    S_ISFIFO(st->st_mode))
		return true;
	if (!S_ISREG(st->st_mode))
		return false;
	if (st->st_mode & (S_ISUID | S_ISGID))
		return true;
	return (st->st_mode & 0111) && has_file_caps(dfd, name);
}

static int record(struct sb_hide_list *out, const char *rel, const struct stat *st, cordon_error *e)
{
	if (array_grow(&out->ro, out->nro, &out->rocap, 8, e) < 0)
		return -1;
	out->ro[out->nro] = (struct sb_hide){
		.rel = strdup(rel), .dev = st->st_dev, .ino = st->st_ino, .dir = false
	};
	if (!out->ro[out->nro].rel)
		return cordon_err(e, ENOMEM, "out of memory");
	out->nro++;
	return 0;
}

static int too_big(cordon_error *e)
{
	return cordon_err(e, 0,
			  "the workdir is too big to search for setuid, setgid and file-capability "
			  "programs (more than %d entries, or %d directory levels), which the "
			  "command would own in a root-owned workdir: refused rather than run with "
			  "one of them writable; give the workdir to another user, or run with "
			  "--readonly",
			  HIDE_MAX_ENTRIES, HIDE_MAX_DEPTH);
}

/*
 * The walk is shared with a second thread once it has seen SETID_SHARE_AFTER entries and has
 * top-level subdirectories left: each thread takes the next one not taken (stat per file is
 * most of the walk, about 1 us each here, and a thread costs ~0.1 ms to start, so only a big
 * workdir is worth one). The entry bound counts both threads' entries together.
 */
#define SETID_SHARE_AFTER 2048

struct scan {
	int top;     /* the workdir, O_RDONLY */
	char **dirs; /* its subdirectories, to walk */
	size_t ndirs;
	size_t next;	/* the next of dirs to take (atomic) */
	size_t entries; /* entries seen, both threads (atomic) */
	bool stop;	/* a thread failed or hit a bound: both end (atomic) */
};

struct walker {
	struct scan *s;
	struct sb_hide_list found; /* ro, nro, rocap only */
	cordon_error e;
	int rc;
};

/* w's error is in w->e: both threads end. */
static int fail(struct walker *w, int rc)
{
	w->rc = rc;
	__atomic_store_n(&w->s->stop, true, __ATOMIC_RELAXED);
	return rc;
}

/* One more entry of the bound; false (and w failed) past it. */
static bool count(struct walker *w)
{
	if (__atomic_add_fetch(&w->s->entries, 1, __ATOMIC_RELAXED) <= HIDE_MAX_ENTRIES)
		return true;
	fail(w, too_big(&w->e));
	return false;
}

/* Walk the top-level subdirectory `top` (depth 1) and all below it. */
static int walk_dir(struct walker *w, const char *top)
{
	struct level stack[HIDE_MAX_DEPTH + 1];
	size_t depth = 1;
	char rel[PATH_MAX];
	size_t tlen = strlen(top);
	int fd, rc = 0;

	if (tlen >= sizeof(rel))
		return fail(w, too_big(&w->e));
	memcpy(rel, top, tlen + 1);
	fd = openat(w->s->top, top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !(stack[1].d = fdopendir(fd))) {
		if (fd >= 0)
			(void)close(fd);
		if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
			return 0; /* replaced meanwhile */
		return fail(w, cordon_err(&w->e, errno, "setuid scan: open '%s'", top));
	}
	stack[1].rel_len = tlen;
	while (rc == 0) {
		struct level *cur = &stack[depth];
		struct dirent *de;
		struct stat st;
		size_t nlen, len;
		int dfd;

		if (__atomic_load_n(&w->s->stop, __ATOMIC_RELAXED)) {
			rc = -1;
			break;
		}
		errno = 0;
		de = readdir(cur->d);
		if (!de) {
			if (errno) {
				rc = fail(w,
					  cordon_err(&w->e, errno, "setuid scan: read '%s'", rel));
				break;
			}
			closedir(cur->d);
			cur->d = NULL;
			if (depth == 1)
				break;
			depth--;
			rel[stack[depth].rel_len] = '\0';
			continue;
		}
		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (!count(w)) {
			rc = -1;
			break;
		}
		if (de->d_type == DT_LNK)
			continue;
		dfd = dirfd(cur->d);
		/* A directory needs no stat: opening it (no symlink followed) is the check. */
		st.st_mode = S_IFDIR;
		if (de->d_type != DT_DIR &&
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* gone meanwhile: nothing to protect */
			/* Anything else says nothing of it: not passed by (red team). */
			rc = fail(w, cordon_err(&w->e, errno, "setuid scan: stat '%s/%s'", rel,
						de->d_name));
			break;
		}
		nlen = strlen(de->d_name);
		len = cur->rel_len + 1 + nlen;
		if (len >= sizeof(rel)) {
			rc = fail(w, too_big(&w->e));
			break;
		}
		rel[cur->rel_len] = '/';
		memcpy(rel + cur->rel_len + 1, de->d_name, nlen + 1);
		if (S_ISDIR(st.st_mode)) {
			int sub;

			if (depth + 1 > HIDE_MAX_DEPTH) {
				rc = fail(w, too_big(&w->e));
				break;
			}
			sub = openat(dfd, de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0 || !(stack[depth + 1].d = fdopendir(sub))) {
				if (sub >= 0)
					(void)close(sub);
				if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) {
					rel[cur->rel_len] = '\0';
					continue; /* replaced meanwhile */
				}
				rc = fail(w,
					  cordon_err(&w->e, errno, "setuid scan: open '%s'", rel));
				break;
			}
			stack[++depth].rel_len = len;
			continue;
		}
		if (setid_privileged(dfd, de->d_name, &st) &&
		    record(&w->found, rel, &st, &w->e) < 0)
			rc = fail(w, -1);
		rel[cur->rel_len] = '\0';
	}
	for (size_t i = 1; i <= depth; i++)
		if (stack[i].d)
			closedir(stack[i].d);
	return rc;
}

/* Take top-level subdirectories until none is left (or a thread failed). */
static int walk_dirs(struct walker *w, bool *share)
{
	for (;;) {
		size_t i = __atomic_fetch_add(&w->s->next, 1, __ATOMIC_RELAXED);

		if (i >= w->s->ndirs)
			return 0;
		if (walk_dir(w, w->s->dirs[i]) < 0)
			return -1;
		/* The caller starts the second thread when this says so (once). */
		if (share && *share == false &&
		    __atomic_load_n(&w->s->entries, __ATOMIC_RELAXED) > SETID_SHARE_AFTER &&
		    __atomic_load_n(&w->s->next, __ATOMIC_RELAXED) + 1 < w->s->ndirs) {
			*share = true;
			return 1;
		}
	}
}

static void *second(void *arg)
{
	(void)walk_dirs(arg, NULL);
	return NULL;
}

/* Move what `from` found to the end of out. */
static int merge(struct sb_hide_list *out, struct sb_hide_list *from, cordon_error *e)
{
	for (size_t i = 0; i < from->nro; i++) {
		if (array_grow(&out->ro, out->nro, &out->rocap, 8, e) < 0)
			return -1;
		out->ro[out->nro++] = from->ro[i];
		from->ro[i].rel = NULL;
	}
	return 0;
}

static void found_free(struct sb_hide_list *l)
{
	for (size_t i = 0; i < l->nro; i++)
		free(l->ro[i].rel);
	free(l->ro);
}

int setid_scan(int wd_fd, struct sb_hide_list *out, cordon_error *e)
{
	struct scan s = { .top = -1 };
	struct walker me = { .s = &s }, other = { .s = &s };
	pthread_t t;
	bool share = false, started = false;
	size_t dcap = 0;
	DIR *d = NULL;
	int rc = 0, r;

	s.top = openat(wd_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s.top < 0)
		return cordon_err(e, errno, "setuid scan: open the workdir");
	r = fcntl(s.top, F_DUPFD_CLOEXEC, 0);
	if (r < 0 || !(d = fdopendir(r))) {
		if (r >= 0)
			(void)close(r);
		(void)close(s.top);
		return cordon_err(e, errno, "setuid scan: open the workdir");
	}
	/* The top level: its files here, its subdirectories into s.dirs. */
	for (struct dirent *de; rc == 0;) {
		struct stat st;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				rc = fail(&me, cordon_err(&me.e, errno, "setuid scan: read '.'"));
			break;
		}
		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (!count(&me)) {
			rc = -1;
			break;
		}
		if (de->d_type == DT_LNK)
			continue;
		st.st_mode = S_IFDIR;
		if (de->d_type != DT_DIR &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			rc = fail(&me,
				  cordon_err(&me.e, errno, "setuid scan: stat '%s'", de->d_name));
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			if (array_grow(&s.dirs, s.ndirs, &dcap, 16, &me.e) < 0 ||
			    !(s.dirs[s.ndirs] = strdup(de->d_name))) {
				rc = fail(&me, cordon_err(&me.e, ENOMEM, "out of memory"));
				break;
			}
			s.ndirs++;
		} else if (setid_privileged(dirfd(d), de->d_name, &st) &&
			   record(&me.found, de->d_name, &st, &me.e) < 0) {
			rc = fail(&me, -1);
		}
	}
	closedir(d);
	while (rc == 0) {
		r = walk_dirs(&me, started ? NULL : &share);
		if (r <= 0) {
			rc = r;
			break;
		}
		started = pthread_create(&t, NULL, second, &other) == 0;
	}
	if (started)
		(void)pthread_join(t, NULL);
	/* A thread that saw the other's failure stopped without an error of its own. */
	if (me.rc < 0 || other.rc < 0) {
		*e = me.rc < 0 ? me.e : other.e;
		rc = -1;
	} else if (rc == 0 && (merge(out, &me.found, e) < 0 || merge(out, &other.found, e) < 0)) {
		rc = -1;
	}
	found_free(&me.found);
	found_free(&other.found);
	for (size_t i = 0; i < s.ndirs; i++)
		free(s.dirs[i]);
	free(s.dirs);
	(void)close(s.top);
	return rc;
}
