/* tools/lint-cloexec.py must find each of the 23 offences here (make lint checks that it does). */
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
	struct msghdr mh = { 0 };
	ssize_t r = recvmsg(s, &mh, 0); /* SCM_RIGHTS fds arrive inheritable */
	ssize_t r2 = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	int d2 = dup2(a, 5), d3 = dup3(a, 6, 0), d4 = dup3(a, 7, O_CLOEXEC);
	char tmpl[] = "/tmp/xXXXXXX";
	int m = mkstemp(tmpl), c = creat("/c", 0600);
	FILE *tf = tmpfile();
	fcntl(a, F_SETFD, 0);
	fcntl(a, F_SETFD, FD_CLOEXEC);
	int fl = fcntl(a, F_GETFD);
	fcntl(a, F_SETFD, fl & ~FD_CLOEXEC); /* names the flag, to clear it */
	fcntl(a, F_SETFD, fl | FD_CLOEXEC);
	ioctl(a, FIONCLEX);
	ioctl(a, FIOCLEX);
	FILE *pp = popen("ls", "r"), *pe = popen("ls", "re");
	FILE *fr = freopen("/z", "w", stdout), *fe = freopen("/z", "we", stdout);
	syscall(SYS_pipe, p);
	syscall(__NR_memfd_create, "m", 0);
	syscall(__NR_memfd_create, "m", MFD_CLOEXEC);
	syscall(SYS_eventfd2, 0, 0);
	syscall(SYS_eventfd2, 0, EFD_CLOEXEC);
	int fp = fspick(a, "", 0);
	return 0;
}
