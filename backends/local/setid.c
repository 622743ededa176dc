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
 * mount (EXDEV). Nothing else can make one: the filter keeps the bits from being set, mknod
 * needs CAP_MKNOD, and a file made meanwhile by root on the host is root's act.
 *
 * The walk reads each directory once and stats its files (getxattr only for regular files with
 * an execute bit): about 1 us a file on the reference VM, paid only by a root caller's run in a
 * root-owned workdir that is not read-only. It has the hide walk's bounds, and a workdir past
 * one is refused, never run with a program left unprotected.
 */
#define _GNU_SOURCE
#include "backends/local/setid.h"

#include "runtime/cleanup.h"
#include "runtime/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

static bool has_file_caps(int dfd, const char *name)
{
	char path[PATH_MAX + 32];

	if ((size_t)snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name) >= sizeof(path))
		return true; /* cannot tell: protect it */
	return lgetxattr(path, "security.capability", NULL, 0) > 0;
}

/*
 * A file the command must not change: a privileged program (its content), or a device node,
 * socket or FIFO (its mode: a chmod 0666 of root's dev/sda is a chmod on the host, where its
 * path has no nodev).
 */
static bool privileged(int dfd, const char *name, const struct stat *st)
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

int setid_scan(int wd_fd, struct sb_hide_list *out, cordon_error *e)
{
	struct level stack[HIDE_MAX_DEPTH + 1];
	size_t depth = 0, entries = 0;
	char rel[PATH_MAX] = "";
	int fd, rc = 0;

	fd = openat(wd_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(stack[0].d = fdopendir(fd))) {
		if (fd >= 0)
			(void)close(fd);
		return cordon_err(e, errno, "setuid scan: open the workdir");
	}
	stack[0].rel_len = 0;
	while (rc == 0) {
		struct level *cur = &stack[depth];
		struct dirent *de;
		struct stat st;
		size_t nlen, len;
		int dfd;

		errno = 0;
		de = readdir(cur->d);
		if (!de) {
			if (errno) {
				rc = cordon_err(e, errno, "setuid scan: read '%s'",
						rel[0] ? rel : ".");
				break;
			}
			closedir(cur->d);
			cur->d = NULL;
			if (depth == 0)
				break;
			depth--;
			rel[stack[depth].rel_len] = '\0';
			continue;
		}
		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (++entries > HIDE_MAX_ENTRIES) {
			rc = too_big(e);
			break;
		}
		if (de->d_type == DT_LNK)
			continue;
		dfd = dirfd(cur->d);
		/* A directory needs no stat: opening it (no symlink followed) is the check. */
		st.st_mode = S_IFDIR;
		if (de->d_type != DT_DIR && fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile: nothing to protect */
		nlen = strlen(de->d_name);
		len = cur->rel_len + (cur->rel_len ? 1 : 0) + nlen;
		if (len >= sizeof(rel)) {
			rc = too_big(e);
			break;
		}
		if (cur->rel_len)
			rel[cur->rel_len] = '/';
		memcpy(rel + cur->rel_len + (cur->rel_len ? 1 : 0), de->d_name, nlen + 1);
		if (S_ISDIR(st.st_mode)) {
			int sub;

			if (depth + 1 > HIDE_MAX_DEPTH) {
				rc = too_big(e);
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
				rc = cordon_err(e, errno, "setuid scan: open '%s'", rel);
				break;
			}
			stack[++depth].rel_len = len;
			continue;
		}
		if (privileged(dfd, de->d_name, &st))
			rc = record(out, rel, &st, e);
		rel[cur->rel_len] = '\0';
	}
	for (size_t i = 0; i <= depth; i++)
		if (stack[i].d)
			closedir(stack[i].d);
	return rc;
}
