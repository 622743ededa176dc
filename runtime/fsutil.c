/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "runtime/fsutil.h"
#include "runtime/asuser.h"
#include "runtime/grow.h"
#include "runtime/cleanup.h"

#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

int fsutil_mkdir_p(const char *path, cordon_error *e)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return cordon_err(e, ENAMETOOLONG, "mkdir '%s'", path);
	memcpy(buf, path, len + 1);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return cordon_err(e, errno, "mkdir '%s'", buf);
		*s = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return cordon_err(e, errno, "mkdir '%s'", buf);
	return 0;
}

/*
 * As root, a workdir path may not pass through a symlink: a command run in a directory above
 * (an earlier workdir) could have planted it, and as root cordon would then bind, create in,
 * and run the command as the owner of (or idmapped root in) whatever it points to. path is
 * absolute and normalised (no "." or ".."); missing directories are made (0755) one at a
 * time with mkdirat, each component opened O_NOFOLLOW from its parent's fd, so a component
 * swapped for a symlink meanwhile is refused too. Without create, the walk stops at the first
 * missing component: there is nothing below it to check.
 */
int fsutil_walk_nofollow(const char *path, bool create, int *ret_fd, cordon_error *e)
{
	_cleanup_close_ int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (path[0] != '/' || len >= sizeof(buf))
		return cordon_err(e, ENAMETOOLONG, "'%s'", path);
	if (dfd < 0)
		return cordon_err(e, errno, "open /");
	memcpy(buf, path, len + 1);
	for (char *s = buf + 1, *end; *s; s = end) {
		struct stat st;
		int fd;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		end = strchrnul(s, '/');
		if (*end)
			*end++ = '\0';
		if (fstatat(dfd, s, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				return cordon_err(e, errno, "'%s'", path);
			if (!create) {
				if (ret_fd)
					*ret_fd = -1;
				return 0;
			}
			if (mkdirat(dfd, s, 0755) < 0 && errno != EEXIST)
				return cordon_err(e, errno, "mkdir '%s' in '%s'", s, path);
		} else if (S_ISLNK(st.st_mode)) {
			return cordon_err(
				e, 0,
				"'%s': '%.*s' is a symlink, and cordon as root follows none on "
				"the way to a workdir (a command run above could have planted "
				"it); give the real path",
				path, (int)(s - buf + strlen(s)), path);
		}
		fd = openat(dfd, s, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return cordon_err(e, errno == ELOOP ? ENOTDIR : errno, "'%s'", path);
		(void)close(dfd);
		dfd = fd;
	}
	if (ret_fd)
		*ret_fd = TAKE_FD(dfd);
	return 0;
}

int fsutil_open_workdir(const char *path, int given_fd, struct stat *ret_st, cordon_error *e)
{
	_cleanup_close_ int fd = -1;

	if (given_fd >= 0) {
		fd = fcntl(given_fd, F_DUPFD_CLOEXEC, 3);
	} else if (geteuid() == 0) {
		struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
					.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };

		fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
		if (fd < 0 && errno == ELOOP)
			return cordon_err(
				e, 0,
				"workdir '%s': a symlink on the way, which cordon as root "
				"does not follow; give the real path",
				path);
	} else {
		fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0 || fstat(fd, ret_st) < 0)
		return cordon_err(e, errno, "workdir '%s'", path);
	if (!S_ISDIR(ret_st->st_mode))
		return cordon_err(e, ENOTDIR, "workdir '%s'", path);
	return TAKE_FD(fd);
}

/*
 * rm -rf of a tree a hostile command may have shaped, at any depth, without recursion (a tree
 * of 100,000 levels is a few lines of shell) and without one fd per level (the open-file limit
 * would be the depth limit). The walk keeps the path from the top as a stack of {name, dev,
 * ino}: it goes down by openat(O_NOFOLLOW) into the next subdirectory left, and back up by
 * openat(".."), checking that ".." is the directory it came from (a rename that moved the
 * subtree elsewhere stops the walk: nothing outside the tree is ever touched). The top levels
 * keep their directory stream open, so a wide directory near the top is read once. A level
 * deeper than that is read once, whole, when the walk comes to it: its files go at once and
 * the names of its subdirectories are kept, to go into one after another (reading it again
 * from the start after each one, as this did until 2026-11-25, cost ext4 a hash of a buffer's
 * worth of names each time: 0.5 ms a subdirectory at 2,000 of them, a level any command can
 * make). The tree is the command's leftovers, no longer changing: one read sees it all.
 * Directories on another file system (a mount) and those that cannot be opened are left, and
 * make their parents' removal fail, which the caller hears about.
 */
#define RMTREE_OPEN_LEVELS 32

struct rm_level {
	char *name; /* in the parent; NULL at the top */
	dev_t dev;
	ino_t ino;
	DIR *d;		/* a top level's open stream, or NULL (opened when needed) */
	char **subdirs; /* a deep level's subdirectories to go into, read once (NULL: not yet) */
	size_t nsub, next;
};

struct rm_skip {
	dev_t dev;
	ino_t ino;
};

struct rm_walk {
	struct rm_level *lv;
	size_t depth, cap;
	struct rm_skip *skip;
	size_t nskip, capskip;
	dev_t dev;
	int fd; /* the directory of lv[depth - 1] */
};

static bool rm_skipped(const struct rm_walk *w, const struct stat *st)
{
	for (size_t i = 0; i < w->nskip; i++)
		if (w->skip[i].dev == st->st_dev && w->skip[i].ino == st->st_ino)
			return true;
	return false;
}

static void rm_level_free(struct rm_level *l)
{
	if (l->d)
		closedir(l->d);
	for (size_t i = 0; i < l->nsub; i++)
		free(l->subdirs[i]);
	free(l->subdirs);
	free(l->name);
	*l = (struct rm_level){ 0 };
}

/*
 * One entry of the current directory: a file is unlinked, an empty directory removed; a
 * directory to empty first is opened (*ret_fd, its stat in *ret_st: 1). 0: nothing to go into.
 */
static int rm_entry(struct rm_walk *w, const char *name, int *ret_fd, struct stat *ret_st)
{
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (fstatat(w->fd, name, ret_st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (!S_ISDIR(ret_st->st_mode)) {
		(void)unlinkat(w->fd, name, 0);
		return 0;
	}
	/* Never cross into another file system (a mount the command made). */
	if (ret_st->st_dev != w->dev || rm_skipped(w, ret_st))
		return 0;
	if (unlinkat(w->fd, name, AT_REMOVEDIR) == 0)
		return 0; /* empty already */
	*ret_fd = openat(w->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return *ret_fd >= 0 ? 1 : 0;
}

/* A stream of the current directory, from its start. */
static DIR *rm_opendir(const struct rm_walk *w)
{
	int dfd = fcntl(w->fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);

	if (!d && dfd >= 0)
		(void)close(dfd);
	if (d)
		rewinddir(d);
	return d;
}

/*
 * The next subdirectory of the current level to go into: *ret_name, *ret_fd and *ret_st (1),
 * or 0 when the level is as empty as it gets; -1 with *e.
 */
static int rm_next(struct rm_walk *w, const char **ret_name, int *ret_fd, struct stat *ret_st,
		   cordon_error *e)
{
	struct rm_level *cur = &w->lv[w->depth - 1];
	struct dirent *de;

	if (w->depth - 1 < RMTREE_OPEN_LEVELS) {
		if (!cur->d && !(cur->d = rm_opendir(w)))
			return cordon_err(e, errno, "remove: opendir");
		while ((de = readdir(cur->d)))
			if (rm_entry(w, de->d_name, ret_fd, ret_st) == 1) {
				*ret_name = de->d_name;
				return 1;
			}
		return 0;
	}
	if (!cur->subdirs) {
		DIR *d = rm_opendir(w);
		size_t cap = 0;

		if (!d)
			return cordon_err(e, errno, "remove: opendir");
		while ((de = readdir(d))) {
			struct stat st;

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (fstatat(w->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (!S_ISDIR(st.st_mode)) {
				(void)unlinkat(w->fd, de->d_name, 0);
				continue;
			}
			if (array_grow(&cur->subdirs, cur->nsub, &cap, 16, e) < 0) {
				closedir(d);
				return -1;
			}
			cur->subdirs[cur->nsub] = strdup(de->d_name);
			if (!cur->subdirs[cur->nsub]) {
				closedir(d);
				return cordon_err(e, ENOMEM, "out of memory");
			}
			cur->nsub++;
		}
		closedir(d);
		if (!cur->subdirs && !(cur->subdirs = calloc(1, sizeof(*cur->subdirs))))
			return cordon_err(e, ENOMEM, "out of memory");
	}
	while (cur->next < cur->nsub) {
		const char *name = cur->subdirs[cur->next++];

		if (rm_entry(w, name, ret_fd, ret_st) == 1) {
			*ret_name = name;
			return 1;
		}
	}
	return 0;
}

/* Back up from the current level to its parent, removing it there (or noting it is left). */
static int rm_up(struct rm_walk *w, cordon_error *e)
{
	struct rm_level *cur = &w->lv[w->depth - 1], *up = &w->lv[w->depth - 2];
	int pfd = openat(w->fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat pst;

	if (pfd < 0 || fstat(pfd, &pst) < 0 || pst.st_dev != up->dev || pst.st_ino != up->ino) {
		if (pfd >= 0)
			(void)close(pfd);
		return cordon_err(e, EXDEV, "remove: the tree moved while it was removed");
	}
	if (unlinkat(pfd, cur->name, AT_REMOVEDIR) < 0) {
		/* Left (a mount inside, say): do not go into it again. */
		if (array_grow(&w->skip, w->nskip, &w->capskip, 8, e) < 0) {
			(void)close(pfd);
			return -1;
		}
		w->skip[w->nskip++] = (struct rm_skip){ cur->dev, cur->ino };
	}
	rm_level_free(cur);
	w->depth--;
	(void)close(w->fd);
	w->fd = pfd;
	return 0;
}

/* Empty the directory open at top (which is ours to empty); -1 with *e when something stays. */
static int rmtree_fd(int top, dev_t dev, cordon_error *e)
{
	struct rm_walk w = { .dev = dev, .fd = -1 };
	struct stat st;
	int rc = 0;

	if (fstat(top, &st) < 0)
		return cordon_err(e, errno, "remove: stat");
	w.fd = fcntl(top, F_DUPFD_CLOEXEC, 0);
	if (w.fd < 0)
		return cordon_err(e, errno, "remove: dup");
	if (array_grow(&w.lv, 0, &w.cap, 16, e) < 0) {
		(void)close(w.fd);
		return -1;
	}
	w.lv[0] = (struct rm_level){ .dev = st.st_dev, .ino = st.st_ino };
	w.depth = 1;

	for (;;) {
		const char *name = NULL;
		struct stat sub;
		int sfd = -1, r = rm_next(&w, &name, &sfd, &sub, e);

		if (r < 0) {
			rc = -1;
			break;
		}
		if (r == 0) {
			/* This level is as empty as it gets: up, and remove it there. */
			if (w.depth == 1)
				break;
			if (rm_up(&w, e) < 0) {
				rc = -1;
				break;
			}
			continue;
		}
		if (array_grow(&w.lv, w.depth, &w.cap, 16, e) < 0) {
			(void)close(sfd);
			rc = -1;
			break;
		}
		w.lv[w.depth] = (struct rm_level){ .name = strdup(name),
						   .dev = sub.st_dev,
						   .ino = sub.st_ino };
		if (!w.lv[w.depth].name) {
			(void)close(sfd);
			rc = cordon_err(e, ENOMEM, "out of memory");
			break;
		}
		/* A directory the command made unwritable must still go away. */
		(void)fchmod(sfd, 0700);
		(void)close(w.fd);
		w.fd = sfd;
		w.depth++;
	}
	for (size_t i = 0; i < w.depth; i++)
		rm_level_free(&w.lv[i]);
	free(w.lv);
	free(w.skip);
	if (w.fd >= 0)
		(void)close(w.fd);
	return rc;
}

/*
 * The walk takes fds; an empty directory (a temp workdir made for a request that then failed,
 * a runner's unused TMPDIR) needs none to go. Without an fd to spare (EMFILE, ENFILE) or the
 * memory for the walk, rmdir it by name: the failure is reported only if it was not empty.
 */
static int rmtree_short(const char *path, cordon_error *e)
{
	if (e->code != EMFILE && e->code != ENFILE && e->code != ENOMEM)
		return -1;
	if (rmdir(path) == 0 || errno == ENOENT)
		return 0;
	return -1;
}

int fsutil_rmtree(const char *path, cordon_error *e)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		cordon_err(e, errno, "remove '%s'", path);
		return rmtree_short(path, e);
	}
	if (fstat(fd, &st) < 0)
		return cordon_err(e, errno, "remove '%s'", path);
	(void)fchmod(fd, 0700);
	if (rmtree_fd(fd, st.st_dev, e) < 0)
		return rmtree_short(path, e);
	if (rmdir(path) < 0 && errno != ENOENT)
		return cordon_err(e, errno, "remove '%s'", path);
	return 0;
}

int fsutil_mkdtemp_marked(char *tmpl)
{
	static const char chars[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	size_t n = strlen(tmpl);

	if (n < 6 || strcmp(tmpl + n - 6, "XXXXXX")) {
		errno = EINVAL;
		return -1;
	}
	for (int tries = 0; tries < 100; tries++) {
		unsigned char r[6];

		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return -1;
		for (size_t i = 0; i < 6; i++)
			tmpl[n - 6 + i] = chars[r[i] % (sizeof(chars) - 1)];
		if (mkdir(tmpl, 01700) == 0)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

int fsutil_temp_hold(const char *dir, cordon_error *e)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return cordon_err(e, errno, "hold '%s'", dir);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &st) < 0 ||
	    fchmod(fd, (st.st_mode & 07777) | S_ISVTX) < 0) {
		int err = errno;

		(void)close(fd);
		return cordon_err(e, err, "hold '%s'", dir);
	}
	return fd;
}

void fsutil_temp_release(int fd, bool kept)
{
	struct stat st;

	if (fd < 0)
		return;
	if (kept && fstat(fd, &st) == 0)
		(void)fchmod(fd, st.st_mode & 07777 & ~S_ISVTX);
	(void)close(fd);
}

static bool sweep_owner(uid_t uid, uid_t also)
{
	if (uid == geteuid())
		return true;
	return geteuid() == 0 && (also == FSUTIL_ANY_OWNER || uid == also);
}

struct sweep_empty {
	int fd; /* the directory, opened (and held) by the sweep */
	dev_t dev;
};

/* Empty the directory open at a->fd, as its owner (asuser_call): through the fd, so that the
 * owner needs no search right on the directory it is in (root's 0700 $TMPDIR). */
static int sweep_empty_fn(void *arg, cordon_error *e)
{
	const struct sweep_empty *a = arg;

	(void)fchmod(a->fd, 0700);
	return rmtree_fd(a->fd, a->dev, e);
}

/*
 * Another user's directory name in dirfd, open at fd (held: its stat): emptied with that
 * user's rights (their uid and the directory's group), then the empty directory removed by
 * root, if the name still names it. Whoever owns a directory decides what is in it, another
 * user's tree moved in included (a 0777 directory of theirs), and root's walk deleted what
 * its owner could not (found in red team: cordond's start swept a member's own /tmp/cordon-x,
 * 1777, and another user's files under it; root's cordon run did the same with one of
 * nobody's, swept or its own temp workdir given to nobody).
 */
static int remove_as_owner(int dirfd, const char *name, int fd, const struct stat *held,
			   cordon_error *e)
{
	struct sweep_empty a = { .fd = fd, .dev = held->st_dev };
	struct stat now;

	if (asuser_call(held->st_uid, held->st_gid, NULL, 0, sweep_empty_fn, &a, e) < 0)
		return -1;
	if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != held->st_dev ||
	    now.st_ino != held->st_ino)
		return cordon_err(e, 0, "remove '%s': it was moved", name);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
		return cordon_err(e, errno, "remove '%s'", name);
	return 0;
}

int fsutil_rmtree_owned(const char *path, cordon_error *e)
{
	_cleanup_close_ int up = -1, fd = -1;
	_cleanup_free_ char *parent = NULL;
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (geteuid() != 0 || !slash || !slash[1])
		return fsutil_rmtree(path, e);
	parent = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	if (!parent)
		return cordon_err(e, ENOMEM, "out of memory");
	up = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (up < 0)
		return errno == ENOENT ? 0 : cordon_err(e, errno, "remove '%s'", path);
	fd = openat(up, slash + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : cordon_err(e, errno, "remove '%s'", path);
	if (fstat(fd, &st) < 0)
		return cordon_err(e, errno, "remove '%s'", path);
	if (st.st_uid == 0)
		return fsutil_rmtree(path, e);
	return remove_as_owner(up, slash + 1, fd, &st, e);
}

int fsutil_temp_sweep(const char *base, const char *prefix, unsigned min_age, uid_t also)
{
	_cleanup_closedir_ DIR *d = opendir(base);
	size_t plen = strlen(prefix);
	time_t now = time(NULL);
	struct dirent *de;
	int removed = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		_cleanup_close_ int fd = -1;
		char path[PATH_MAX];
		struct stat st, held;
		cordon_error e;

		if (strncmp(de->d_name, prefix, plen) != 0 ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || !(st.st_mode & S_ISVTX) ||
		    !sweep_owner(st.st_uid, also) || now - st.st_mtime < (time_t)min_age)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/*
		 * Held: its owner is alive. Not held: we hold it now, while we remove it. The one
		 * looked at above, not another its owner renamed to that name since (another user's
		 * directory moved in would be emptied with that user's rights).
		 */
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &held) < 0 ||
		    held.st_dev != st.st_dev || held.st_ino != st.st_ino)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", base, de->d_name) >= sizeof(path))
			continue;
		/* Another user's (cordond's start, in /tmp; nobody's, in root's run): as them. */
		if (geteuid() == 0 && st.st_uid != 0
			    ? remove_as_owner(dirfd(d), de->d_name, fd, &held, &e) == 0
			    : fsutil_rmtree(path, &e) == 0)
			removed++;
	}
	return removed;
}

int fsutil_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

void fsutil_unescape_mountinfo(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

void fsutil_attach_fds(struct msghdr *mh, void *buf, size_t buflen, const int *fds, size_t n)
{
	struct cmsghdr *c;

	memset(buf, 0, buflen);
	mh->msg_control = buf;
	mh->msg_controllen = CMSG_SPACE(n * sizeof(int));
	c = CMSG_FIRSTHDR(mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
}

/*
 * Whether only root can change what path names: walked from / without following anything (a
 * symlink on the way or at its end is refused), every directory on the way is such that no
 * one else may rename or replace the next entry in it (root's and writable by no one else, or
 * root's and sticky with that entry root's). 0 with *ret_st the entry it names; -1 with *e: why not (code 0), or what
 * could not be opened (code errno).
 */
int fsutil_path_root_controlled(const char *path, struct stat *ret_st, cordon_error *e)
{
	_cleanup_close_ int at = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char buf[PATH_MAX], *comp, *save = NULL;
	struct stat up, st;

	if (at < 0 || fstat(at, &up) < 0)
		return cordon_err(e, errno, "'/'");
	if (path[0] != '/' || strlen(path) >= sizeof(buf))
		return cordon_err(e, EINVAL, "'%s'", path);
	strcpy(buf, path);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int n = (int)(comp - buf + (ptrdiff_t)strlen(comp)), next;
		/* The directory comp is in: path up to comp, "/" for the first. */
		int dn = comp - buf > 1 ? (int)(comp - buf - 1) : 1;

		if (!S_ISDIR(up.st_mode))
			return cordon_err(e, ENOTDIR, "'%.*s'", dn, path);
		next = openat(at, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return cordon_err(e, errno, "'%.*s'", n, path);
		(void)close(at);
		at = next;
		if (fstat(at, &st) < 0)
			return cordon_err(e, errno, "'%.*s'", n, path);
		if (S_ISLNK(st.st_mode))
			return cordon_err(e, 0, "'%.*s' is a symlink", n, path);
		if (up.st_uid != 0)
			return cordon_err(e, 0, "'%.*s' is uid %u's, not root's", dn, path,
					  (unsigned)up.st_uid);
		if ((up.st_mode & (S_IWGRP | S_IWOTH)) && (up.st_mode & S_ISVTX) && st.st_uid != 0)
			return cordon_err(e, 0, "'%.*s' is uid %u's, in sticky '%.*s'", n, path,
					  (unsigned)st.st_uid, dn, path);
		if ((up.st_mode & (S_IWGRP | S_IWOTH)) && !(up.st_mode & S_ISVTX))
			return cordon_err(e, 0,
					  "'%.*s' is writable by others than root (mode %04o)", dn,
					  path, (unsigned)(up.st_mode & 07777));
		up = st;
	}
	*ret_st = up;
	return 0;
}
