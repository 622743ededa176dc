/* SPDX-License-Identifier: MIT */
/*
 * Replays fuzz inputs without libFuzzer (built with gcc by `make tests`): each argument is a file
 * or a directory of files, fed one by one to LLVMFuzzerTestOneInput(). A crash fails the run;
 * tests/integration/test_daemon.c runs it on tests/fuzz/corpus/ in `make check`.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rbe");
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		perror(path);
		return -1;
	}
	do {
		if (len == cap) {
			unsigned char *nb = realloc(buf, cap = cap ? cap * 2 : 65536);

			if (!nb) {
				fclose(f);
				free(buf);
				return -1;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	LLVMFuzzerTestOneInput(buf ? buf : (const unsigned char *)"", len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *de;

			if (!d) {
				perror(argv[i]);
				return 1;
			}
			while ((de = readdir(d))) {
				char p[4096];

				if (de->d_name[0] == '.')
					continue;
				snprintf(p, sizeof(p), "%s/%s", argv[i], de->d_name);
				if (run_file(p) < 0)
					return 1;
				count++;
			}
			closedir(d);
		} else {
			if (run_file(argv[i]) < 0)
				return 1;
			count++;
		}
	}
	printf("%d inputs, no crash\n", count);
	return 0;
}
