/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "runtime/fsutil.h"
#include "runtime/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
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

/* Empty the directory open at dfd (which we own), recursing at most `depth` levels. */
static int rmtree_fd(int dfd, dev_t dev, int depth, cordon_error *e)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int fd;

	if (depth <= 0)
		return cordon_err(e, ELOOP, "remove: directory tree too deep");
	fd = dup(dfd);
	if (fd < 0)
		return cordon_err(e, errno, "remove: dup");
	d = fdopendir(fd);
	if (!d) {
		(void)close(fd);
		return cordon_err(e, errno, "remove: opendir");
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = -1;

			/* Never cross into another file system (a mount the command made). */
			if (st.st_dev != dev)
				continue;
			sub = openat(dfd, de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue;
			/* A directory the command made unwritable must still go away. */
			(void)fchmod(sub, 0700);
			if (rmtree_fd(sub, dev, depth - 1, e) < 0)
				return -1;
			(void)unlinkat(dfd, de->d_name, AT_REMOVEDIR);
		} else {
			(void)unlinkat(dfd, de->d_name, 0);
		}
	}
	return 0;
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
	if (rmtree_fd(fd, st.st_dev, 256, e) < 0)
		return -1;
	if (rmdir(path) < 0 && errno != ENOENT)
		return cordon_err(e, errno, "remove '%s'", path);
	return 0;
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
