/* tools/lint-cloexec.py must find each of the 8 offences here (make lint checks that it does). */
int f(void)
{
	struct open_how how = { .flags = O_PATH, .resolve = 0 };
	int a = open("/x", O_RDONLY), b = dup(a), p[2];
	pipe(p);
	FILE *f = fopen("/y", "r");
	int t = syscall(SYS_open_tree, a, "", OPEN_TREE_CLONE);
	int s = socket(AF_UNIX, SOCK_STREAM, 0); /* "O_CLOEXEC" in a comment does not count */
	int ok = openat(a, "z", O_RDONLY | O_CLOEXEC);
	int k = fcntl(a, F_DUPFD, 0);
	int i = socket(AF_UNIX, SOCK_STREAM, 0); /* lint: inherit */
	return 0;
}
