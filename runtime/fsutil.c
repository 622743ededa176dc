/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "runtime/fsutil.h"
#include "runtime/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
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
 * rm -rf of a tree a hostile command may have shaped, at any depth, without recursion (a tree
 * of 100,000 levels is a few lines of shell) and without one fd per level (the open-file limit
 * would be the depth limit). The walk keeps the path from the top as a stack of {name, dev,
 * ino}: it goes down by openat(O_NOFOLLOW) into the first subdirectory left, and back up by
 * openat(".."), checking that ".." is the directory it came from (a rename that moved the
 * subtree elsewhere stops the walk: nothing outside the tree is ever touched). The top levels
 * keep their directory stream open, so a wide directory near the top is read once; a level
 * deeper than that is read again from its start after each subdirectory (deep trees are
 * narrow). Directories on another file system (a mount) and those that cannot be opened are
 * left, and make their parents' removal fail, which the caller hears about.
 */
#define RMTREE_OPEN_LEVELS 32

struct rm_level {
	char *name; /* in the parent; NULL at the top */
	dev_t dev;
	ino_t ino;
	DIR *d; /* open stream, or NULL (reopened when needed) */
};

struct rm_skip {
	dev_t dev;
	ino_t ino;
};

static bool rm_skipped(const struct rm_skip *v, size_t n, const struct stat *st)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].dev == st->st_dev && v[i].ino == st->st_ino)
			return true;
	return false;
}

/* Empty the directory open at top (which is ours to empty); -1 with *e when something stays. */
static int rmtree_fd(int top, dev_t dev, cordon_error *e)
{
	struct rm_level *lv = NULL;
	struct rm_skip *skip = NULL;
	size_t depth = 0, cap = 0, nskip = 0, capskip = 0;
	int fd = -1, rc = 0;
	struct stat st;

	if (fstat(top, &st) < 0)
		return cordon_err(e, errno, "remove: stat");
	fd = dup(top);
	if (fd < 0)
		return cordon_err(e, errno, "remove: dup");
	lv = calloc(16, sizeof(*lv));
	if (!lv) {
		(void)close(fd);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	cap = 16;
	lv[0] = (struct rm_level){ NULL, st.st_dev, st.st_ino, NULL };
	depth = 1;

	for (;;) {
		struct rm_level *cur = &lv[depth - 1];
		struct dirent *de;
		bool down = false;

		if (!cur->d) {
			int dfd = dup(fd);

			if (dfd < 0 || !(cur->d = fdopendir(dfd))) {
				if (dfd >= 0)
					(void)close(dfd);
				rc = cordon_err(e, errno, "remove: opendir");
				break;
			}
			rewinddir(cur->d);
		}
		while (!down && (de = readdir(cur->d))) {
			struct stat sub;
			int sfd;

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (fstatat(fd, de->d_name, &sub, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (!S_ISDIR(sub.st_mode)) {
				(void)unlinkat(fd, de->d_name, 0);
				continue;
			}
			/* Never cross into another file system (a mount the command made). */
			if (sub.st_dev != dev || rm_skipped(skip, nskip, &sub))
				continue;
			if (unlinkat(fd, de->d_name, AT_REMOVEDIR) == 0)
				continue; /* empty already */
			sfd = openat(fd, de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sfd < 0)
				continue;
			if (depth == cap) {
				struct rm_level *n = reallocarray(lv, cap * 2, sizeof(*lv));

				if (!n) {
					(void)close(sfd);
					rc = cordon_err(e, ENOMEM, "out of memory");
					goto out;
				}
				lv = n;
				cap *= 2;
				cur = &lv[depth - 1];
			}
			lv[depth] = (struct rm_level){ strdup(de->d_name), sub.st_dev, sub.st_ino,
						       NULL };
			if (!lv[depth].name) {
				(void)close(sfd);
				rc = cordon_err(e, ENOMEM, "out of memory");
				goto out;
			}
			/* A directory the command made unwritable must still go away. */
			(void)fchmod(sfd, 0700);
			/* Deep levels do not keep their stream while below them. */
			if (depth > RMTREE_OPEN_LEVELS) {
				closedir(cur->d);
				cur->d = NULL;
			}
			(void)close(fd);
			fd = sfd;
			depth++;
			down = true;
		}
		if (down)
			continue;
		/* This level is as empty as it gets: up, and remove it there. */
		if (depth == 1)
			break;
		{
			struct rm_level *up = &lv[depth - 2];
			int pfd = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct stat pst;

			if (pfd < 0 || fstat(pfd, &pst) < 0 || pst.st_dev != up->dev ||
			    pst.st_ino != up->ino) {
				if (pfd >= 0)
					(void)close(pfd);
				rc = cordon_err(e, EXDEV,
						"remove: the tree moved while it was removed");
				goto out;
			}
			if (unlinkat(pfd, cur->name, AT_REMOVEDIR) < 0) {
				/* Left (a mount inside, say): do not go into it again. */
				if (nskip == capskip) {
					size_t nc = capskip ? 2 * capskip : 8;
					struct rm_skip *v = reallocarray(skip, nc, sizeof(*v));

					if (!v) {
						(void)close(pfd);
						rc = cordon_err(e, ENOMEM, "out of memory");
						goto out;
					}
					skip = v;
					capskip = nc;
				}
				skip[nskip++] = (struct rm_skip){ cur->dev, cur->ino };
			}
			if (cur->d)
				closedir(cur->d);
			free(cur->name);
			depth--;
			(void)close(fd);
			fd = pfd;
		}
	}
out:
	for (size_t i = 0; i < depth; i++) {
		if (lv[i].d)
			closedir(lv[i].d);
		free(lv[i].name);
	}
	free(lv);
	free(skip);
	if (fd >= 0)
		(void)close(fd);
	return rc;
}

int fsutil_rmtree(const char *path, cordon_error *e)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return cordon_err(e, errno, "remove '%s'", path);
	}
	if (fstat(fd, &st) < 0)
		return cordon_err(e, errno, "remove '%s'", path);
	(void)fchmod(fd, 0700);
	if (rmtree_fd(fd, st.st_dev, e) < 0)
		return -1;
	if (rmdir(path) < 0 && errno != ENOENT)
		return cordon_err(e, errno, "remove '%s'", path);
	return 0;
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
		struct stat st;
		cordon_error e;

		if (strncmp(de->d_name, prefix, plen) != 0 ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || !(st.st_mode & S_ISVTX) ||
		    !sweep_owner(st.st_uid, also) || now - st.st_mtime < (time_t)min_age)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* Held: its owner is alive. Not held: we hold it now, while we remove it. */
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", base, de->d_name) >= sizeof(path))
			continue;
		if (fsutil_rmtree(path, &e) == 0)
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
