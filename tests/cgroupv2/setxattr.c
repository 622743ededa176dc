/* setxattr PATH NAME VALUE: busybox has no setfattr; the cgroup v2 machine marks a cgroup
 * delegated (trusted.delegate) with it, as systemd does for Delegate=yes. */
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: setxattr PATH NAME VALUE\n");
		return 2;
	}
	if (setxattr(argv[1], argv[2], argv[3], strlen(argv[3]), 0) < 0) {
		perror("setxattr");
		return 1;
	}
	return 0;
}
