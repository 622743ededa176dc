/* SPDX-License-Identifier: MIT */
/*
 * walkbench: the floor of the ignore walk (bench/run.sh). Walks DIR with getdents64 alone,
 * depth first, one directory fd at a time, and prints the milliseconds and the entries seen:
 * no stat, no matching, one thread. cordon's `prepare: hide scan` does this and the matching
 * of every name, on two threads for a big tree; what the file system takes to list the tree is
 * what no walk can go below.
 *   walkbench DIR
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long seen;

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int walk(int dfd, int depth)
{
	char buf[32768];
	long k;

	if (depth > 64)
		return -1;
	while ((k = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < k;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			int sub, r;

			off += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			seen++;
			if (d->d_type != DT_DIR)
				continue;
			sub = openat(dfd, d->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				return -1;
			r = walk(sub, depth + 1);
			close(sub);
			if (r < 0)
				return -1;
		}
	}
	return k < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	double start = now_ms();
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: walkbench DIR\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || walk(fd, 0) < 0) {
		perror(argv[1]);
		return 1;
	}
	printf("%.3f %ld\n", now_ms() - start, seen);
	return 0;
}
