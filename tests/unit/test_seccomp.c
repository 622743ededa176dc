/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filter, for real: a forked child sets no_new_privs, loads the compiled program
 * and tries every refused call, checking the exact errno (EPERM from the filter, not EINVAL or
 * EBADF from the kernel, which would mean the call got through), that ordinary calls still
 * work, and that non-native ABIs kill the process.
 */
#define _GNU_SOURCE
#include "backends/local/seccomp.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ptrace.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x80
#endif

/* A page shared with the child, where it writes why it failed. */
static char *child_msg;

static void child_fail(int line, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(child_msg, 4096, "line %d: ", line);

	va_start(ap, fmt);
	vsnprintf(child_msg + k, 4096 - (size_t)k, fmt, ap);
	va_end(ap);
	_exit(1);
}

/* In the child: `call` must fail with errno `want`. */
#define EXPECT_ERRNO(call, want)                                                                   \
	do {                                                                                       \
		errno = 0;                                                                         \
		long _r = (long)(call);                                                            \
		if (_r != -1 || errno != (want))                                                   \
			child_fail(__LINE__, "%s: r=%ld errno=%d (%s), want %s", #call, _r, errno, \
				   strerror(errno), #want);                                        \
	} while (0)

/* In the child: `call` must succeed (>= 0). */
#define EXPECT_OK(call)                                                                            \
	do {                                                                                       \
		errno = 0;                                                                         \
		long _r = (long)(call);                                                            \
		if (_r < 0)                                                                        \
			child_fail(__LINE__, "%s: r=%ld errno=%d (%s)", #call, _r, errno,          \
				   strerror(errno));                                               \
	} while (0)

/* Anything but EPERM: the filter let it through (the kernel may still refuse). */
#define EXPECT_NOT_EPERM(call)                                                                     \
	do {                                                                                       \
		errno = 0;                                                                         \
		long _r = (long)(call);                                                            \
		if (_r < 0 && errno == EPERM)                                                      \
			child_fail(__LINE__, "%s: EPERM, want allowed", #call);                    \
		if (_r >= 0 && _r > 2)                                                             \
			close((int)_r);                                                            \
	} while (0)

static struct sock_fprog *compile(void)
{
	struct sock_fprog *prog = NULL;
	cordon_error e = { 0 };

	cr_assert_eq(seccomp_prog_compile(NULL, &prog, &e), 0, "compile: %s", e.msg);
	cr_assert_not_null(prog);
	cr_assert_gt(prog->len, 10);
	return prog;
}

/* Fork; the child sets no_new_privs, loads prog and runs fn. Returns the wait status. */
/* In a child: load `first` (when not NULL), then `prog`, then run fn. */
static int run_filtered_after(struct sock_fprog *first, struct sock_fprog *prog, void (*fn)(void))
{
	int st = 0;
	pid_t pid;

	child_msg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(child_msg, MAP_FAILED);
	child_msg[0] = 0;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int r;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			child_fail(__LINE__, "no_new_privs: %s", strerror(errno));
		r = first ? seccomp_prog_load(first) : 0;
		if (r < 0)
			child_fail(__LINE__, "seccomp_prog_load (first): %s", strerror(-r));
		r = seccomp_prog_load(prog);
		if (r < 0)
			child_fail(__LINE__, "seccomp_prog_load: %s", strerror(-r));
		fn();
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static int run_filtered(struct sock_fprog *prog, void (*fn)(void))
{
	return run_filtered_after(NULL, prog, fn);
}

static void assert_child_ok(int st)
{
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (status %#x): %s", st,
		  child_msg);
}

static void denied_process_access(void)
{
	char buf[8];
	struct iovec l = { buf, sizeof(buf) }, r = { buf, sizeof(buf) };

	EXPECT_ERRNO(ptrace(PTRACE_TRACEME, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_ptrace, PTRACE_ATTACH, getppid(), 0, 0), EPERM);
	EXPECT_ERRNO(process_vm_readv(getpid(), &l, 1, &r, 1, 0), EPERM);
	EXPECT_ERRNO(process_vm_writev(getpid(), &l, 1, &r, 1, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_pidfd_getfd, -1, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_kcmp, getpid(), getpid(), 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_process_madvise, -1, NULL, 0, 0, 0), EPERM);
}

static void denied_kernel_surface(void)
{
	char params[128] = { 0 };

	EXPECT_ERRNO(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_add_key, "user", "cordon", "x", 1, -3), EPERM);
	EXPECT_ERRNO(syscall(SYS_request_key, "user", "cordon", NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_userfaultfd, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_io_uring_setup, 1, params), EPERM);
	EXPECT_ERRNO(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_io_uring_register, -1, 0, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_modify_ldt, 0, params, sizeof(params)), EPERM);
	EXPECT_ERRNO(syscall(SYS_open_by_handle_at, -1, NULL, 0), EPERM);
}

static void denied_mounts(void)
{
	EXPECT_ERRNO(mount("none", "/tmp", "tmpfs", 0, NULL), EPERM);
	EXPECT_ERRNO(umount2("/proc", MNT_DETACH), EPERM);
	EXPECT_ERRNO(syscall(SYS_pivot_root, "/", "/"), EPERM);
	EXPECT_ERRNO(syscall(SYS_move_mount, -1, "", -1, "", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_open_tree, -1, "/", 0), EPERM);
	EXPECT_ERRNO(syscall(467 /* open_tree_attr */, -1, "/", 0, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_fsopen, "tmpfs", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_fsmount, -1, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_fspick, -1, "/", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_mount_setattr, -1, "/", 0, NULL, 0), EPERM);
}

static void denied_machine(void)
{
	/* Harmless arguments: without the filter each fails with another errno (or, for acct
	 * of a missing file, ENOENT), never reboots or loads anything. */
	EXPECT_ERRNO(syscall(SYS_kexec_load, 0, 0, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_kexec_file_load, -1, -1, 0, "", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_init_module, NULL, 0, ""), EPERM);
	EXPECT_ERRNO(syscall(SYS_finit_module, -1, "", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_delete_module, "cordon_no_such_module", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_swapon, "/cordon/none", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_swapoff, "/cordon/none"), EPERM);
	EXPECT_ERRNO(syscall(SYS_reboot, 0, 0, 0, NULL), EPERM); /* bad magic: EINVAL unfiltered */
	EXPECT_ERRNO(syscall(SYS_acct, "/cordon/none"), EPERM);
	EXPECT_ERRNO(syscall(SYS_quotactl, 0, NULL, 0, NULL), EPERM);
	EXPECT_ERRNO(syscall(SYS_iopl, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_ioperm, 0, 0, 0), EPERM);
}

static void *thread_fn(void *arg)
{
	return arg;
}

static void denied_namespaces(void)
{
	pthread_t t;
	pid_t pid;
	int st;

	EXPECT_ERRNO(unshare(CLONE_NEWUSER), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWNS), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWNET), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWPID), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWIPC), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWUTS), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWCGROUP), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWTIME), EPERM);
	EXPECT_ERRNO(unshare(CLONE_FILES | CLONE_NEWUSER), EPERM);
	EXPECT_OK(unshare(CLONE_FILES)); /* not a namespace: allowed */
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, NULL, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, NULL, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone3, NULL, 0), ENOSYS);
	EXPECT_ERRNO(setns(-1, 0), EPERM);
	EXPECT_ERRNO(setns(-1, CLONE_NEWUSER), EPERM);

	/* fork and threads keep working: glibc falls back from clone3 to clone. */
	pid = fork();
	if (pid == 0)
		_exit(7);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
		child_fail(__LINE__, "fork under the filter: %s", strerror(errno));
	if (pthread_create(&t, NULL, thread_fn, NULL) != 0 || pthread_join(t, NULL) != 0)
		child_fail(__LINE__, "pthread_create under the filter");
	/* posix_spawn (what system() and most runtimes use) also tries clone3 first. */
	{
		char *argv[] = { "true", NULL };
		int r = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ);

		if (r != 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			child_fail(__LINE__, "posix_spawn under the filter: %s", strerror(r));
	}
}

static void personalities(void)
{
	EXPECT_OK(personality(0xffffffff));
	EXPECT_OK(personality(PER_LINUX));
	EXPECT_ERRNO(personality(ADDR_NO_RANDOMIZE), EPERM);
	EXPECT_ERRNO(personality(READ_IMPLIES_EXEC), EPERM);
	EXPECT_ERRNO(personality(MMAP_PAGE_ZERO), EPERM);
	EXPECT_ERRNO(personality(PER_LINUX32), EPERM);
	EXPECT_ERRNO(personality(1), EPERM);
	EXPECT_ERRNO(personality(0x80000000), EPERM);
	EXPECT_ERRNO(personality(0xfffffffe), EPERM);
	EXPECT_ERRNO(personality(0x7fffffff), EPERM);
	EXPECT_ERRNO(syscall(SYS_personality, 0x100000000UL), EPERM);
	EXPECT_ERRNO(syscall(SYS_personality, 0x1ffffffffUL), EPERM);
	/* still PER_LINUX after all this */
	if (personality(0xffffffff) != PER_LINUX)
		child_fail(__LINE__, "personality changed");
}

static void terminal_ioctls(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	char c = 'x';
	struct winsize ws;
	int ldisc = 0;

	if (fd < 0)
		child_fail(__LINE__, "open /dev/null");
	/* /dev/null is not a tty: unfiltered these are ENOTTY, so EPERM is the filter's. */
	EXPECT_ERRNO(ioctl(fd, TIOCSTI, &c), EPERM);
	EXPECT_ERRNO(ioctl(fd, TIOCLINUX, &c), EPERM);
	EXPECT_ERRNO(ioctl(fd, TIOCSETD, &ldisc), EPERM);
	/* The CVE-2019-10063 form: junk in the upper 32 bits, still TIOCSTI for the kernel. */
	EXPECT_ERRNO(syscall(SYS_ioctl, fd, 0x100005412UL, &c), EPERM);
	EXPECT_ERRNO(syscall(SYS_ioctl, fd, 0xffffffff00005412UL, &c), EPERM);
	EXPECT_ERRNO(syscall(SYS_ioctl, fd, 0x10000541cUL, &c), EPERM);
	/* Other ioctls pass the filter. */
	EXPECT_ERRNO(ioctl(fd, TIOCGWINSZ, &ws), ENOTTY);
	EXPECT_ERRNO(ioctl(fd, FIONREAD, &ldisc), ENOTTY);
	close(fd);
}

static void sockets(void)
{
	EXPECT_ERRNO(socket(AF_VSOCK, SOCK_STREAM, 0), EPERM);
	EXPECT_ERRNO(socket(AF_PACKET, SOCK_RAW, 0), EPERM);
	EXPECT_ERRNO(socket(AF_ALG, SOCK_SEQPACKET, 0), EPERM);
	EXPECT_ERRNO(socket(AF_BLUETOOTH, SOCK_STREAM, 0), EPERM);
	EXPECT_ERRNO(socket(AF_KEY, SOCK_RAW, 2), EPERM);
	EXPECT_ERRNO(socket(AF_APPLETALK, SOCK_DGRAM, 0), EPERM);
	EXPECT_ERRNO(socket(AF_X25, SOCK_SEQPACKET, 0), EPERM);
	EXPECT_ERRNO(socket(AF_XDP, SOCK_RAW, 0), EPERM);
	EXPECT_ERRNO(socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT), EPERM);
	EXPECT_ERRNO(socket(AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT), EPERM);
	EXPECT_ERRNO(socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC), EPERM);
	/* Junk in the upper half of a 32-bit family: the kernel would see AF_VSOCK. */
	EXPECT_ERRNO(syscall(SYS_socket, 0x100000000UL | AF_VSOCK, SOCK_STREAM, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_socket, (unsigned long)-1, SOCK_STREAM, 0), EPERM);

	/* IP protocols and types that are modules where modules load (SCTP, DCCP, L2TP...). */
	EXPECT_ERRNO(socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP), EPERM);
	EXPECT_ERRNO(socket(AF_INET6, SOCK_SEQPACKET, 0), EPERM);
	EXPECT_ERRNO(socket(AF_INET, SOCK_DCCP, IPPROTO_DCCP), EPERM);
	EXPECT_ERRNO(socket(AF_INET, SOCK_DGRAM, 115 /* IPPROTO_L2TP */), EPERM);
	EXPECT_ERRNO(socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE), EPERM);
	EXPECT_ERRNO(socket(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */), EPERM);
	EXPECT_ERRNO(socket(AF_INET, SOCK_PACKET, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0x100000000UL | IPPROTO_TCP), EPERM);
	EXPECT_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
	EXPECT_OK(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP));
	EXPECT_NOT_EPERM(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP));
	EXPECT_NOT_EPERM(socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMPV6));

	EXPECT_OK(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	EXPECT_OK(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	EXPECT_OK(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	EXPECT_NOT_EPERM(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
	EXPECT_OK(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
}

/* In a fresh directory: no call may create or chmod anything with a setuid/setgid bit. */
static void setid_modes(void)
{
	struct {
		uint64_t flags, mode, resolve;
	} how = { .flags = O_CREAT | O_WRONLY, .mode = 0644 };
	char dir[] = "/tmp/cordon-seccomp-XXXXXX";
	int fd;

	if (!mkdtemp(dir) || chdir(dir) < 0)
		child_fail(__LINE__, "mkdtemp: %s", strerror(errno));
	EXPECT_ERRNO(syscall(SYS_open, "a", O_CREAT | O_WRONLY, 04755), EPERM);
	EXPECT_ERRNO(syscall(SYS_open, "a", O_CREAT | O_WRONLY, 0xffffffff00002644UL), EPERM);
	EXPECT_ERRNO(syscall(SYS_openat, AT_FDCWD, "a", O_CREAT | O_WRONLY, 02755), EPERM);
	EXPECT_ERRNO(syscall(SYS_open, ".", O_TMPFILE | O_WRONLY, 04700), EPERM);
	EXPECT_ERRNO(syscall(SYS_creat, "a", 06755), EPERM);
	EXPECT_ERRNO(syscall(SYS_mkdir, "d", 02775), EPERM);
	EXPECT_ERRNO(syscall(SYS_mkdirat, AT_FDCWD, "d", 04775), EPERM);
	EXPECT_ERRNO(syscall(SYS_mknod, "n", S_IFIFO | 04644, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_mknodat, AT_FDCWD, "n", S_IFREG | 02644, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_openat2, AT_FDCWD, "b", &how, sizeof(how)), ENOSYS);
	/* What programs do every day still works. */
	fd = (int)syscall(SYS_open, "a", O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
	EXPECT_OK(fd);
	EXPECT_OK(syscall(SYS_open, "a", O_RDONLY | O_CLOEXEC, 04755)); /* mode ignored */
	EXPECT_OK(syscall(SYS_mkdir, "d", 01777));			/* sticky is fine */
	EXPECT_OK(syscall(SYS_chmod, "a", 0700));
	EXPECT_OK(syscall(SYS_fchmod, fd, 0755));
	EXPECT_ERRNO(syscall(SYS_chmod, "a", 04755), EPERM);
	EXPECT_ERRNO(syscall(SYS_chmod, "a", 0xffff000000002755UL), EPERM);
	EXPECT_ERRNO(syscall(SYS_fchmod, fd, 02755), EPERM);
	EXPECT_ERRNO(syscall(SYS_fchmodat, AT_FDCWD, "a", 06755), EPERM);
	EXPECT_ERRNO(syscall(452 /* fchmodat2 */, AT_FDCWD, "a", 04755, 0), EPERM);
	EXPECT_OK(syscall(452 /* fchmodat2 */, AT_FDCWD, "a", 0644, 0));
	(void)unlink("a");
	(void)rmdir("d");
	(void)rmdir(dir);
}

static void allowed_basics(void)
{
	int p[2];

	EXPECT_OK(getpid());
	EXPECT_OK(pipe2(p, O_CLOEXEC));
	EXPECT_OK(open("/dev/null", O_RDONLY | O_CLOEXEC));
	EXPECT_OK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
}

/* The program compiled into the library at build time is what libseccomp compiles from the
 * table here and now: a stale or foreign prebuilt program would fail this. */
Test(seccomp, prebuilt_program_is_the_table)
{
	struct sock_fprog *pre = NULL, *now = NULL;
	cordon_error e = { 0 };

	cr_assert(seccomp_prog_prebuilt(), "the library was built without the prebuilt program");
	cr_assert_eq(seccomp_prog_compile(NULL, &pre, &e), 0, "%s", e.msg);
	cr_assert_eq(seccomp_prog_build(NULL, &now, &e), 0, "%s", e.msg);
	cr_assert_eq(pre->len, now->len, "prebuilt %u instructions, libseccomp %u", pre->len,
		     now->len);
	cr_assert_eq(memcmp(pre->filter, now->filter, now->len * sizeof(*now->filter)), 0,
		     "the prebuilt program differs from libseccomp's");
	seccomp_prog_free(pre);
	seccomp_prog_free(now);
}

Test(seccomp, compiles_and_describes)
{
	struct sock_fprog *prog = compile();
	char **lines = NULL;
	cordon_error e = { 0 };
	bool ptrace_seen = false, tiocsti_seen = false;
	size_t n = 0;

	cr_assert_leq(prog->len, 4096);
	seccomp_prog_free(prog);
	seccomp_prog_free(NULL);

	cr_assert_eq(seccomp_describe(&lines, &e), 0, "%s", e.msg);
	for (; lines[n]; n++) {
		if (strncmp(lines[n], "ptrace EPERM", 12) == 0)
			ptrace_seen = true;
		if (strstr(lines[n], "ioctl EPERM arg1 & 0xffffffff == 0x5412"))
			tiocsti_seen = true;
		free(lines[n]);
	}
	free(lines);
	cr_assert_gt(n, 40);
	cr_assert(ptrace_seen);
	cr_assert(tiocsti_seen);
}

Test(seccomp, load_rejects_bad_program)
{
	struct sock_fprog empty = { 0 };

	cr_assert_eq(seccomp_prog_load(NULL), -EINVAL);
	cr_assert_eq(seccomp_prog_load(&empty), -EINVAL);
}

Test(seccomp, denies_process_access)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, denied_process_access));
	seccomp_prog_free(prog);
}

Test(seccomp, denies_kernel_attack_surface)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, denied_kernel_surface));
	seccomp_prog_free(prog);
}

Test(seccomp, denies_mount_family)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, denied_mounts));
	seccomp_prog_free(prog);
}

Test(seccomp, denies_machine_operations)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, denied_machine));
	seccomp_prog_free(prog);
}

Test(seccomp, denies_namespaces_keeps_fork_and_threads)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, denied_namespaces));
	seccomp_prog_free(prog);
}

Test(seccomp, personality_only_linux_and_query)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, personalities));
	seccomp_prog_free(prog);
}

Test(seccomp, tiocsti_and_tioclinux_masked)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, terminal_ioctls));
	seccomp_prog_free(prog);
}

Test(seccomp, socket_families)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, sockets));
	seccomp_prog_free(prog);
}

Test(seccomp, setuid_setgid_modes_refused)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, setid_modes));
	seccomp_prog_free(prog);
}

/*
 * RLIMIT_CORE stays as cordon set it (1: no core, piped or not): setting it does nothing and
 * says it worked (sanitizers abort when it fails), reading it works, a set that also asks for
 * the old value is refused, and junk in the upper half of the resource changes nothing.
 */
static void core_limit_fixed(void)
{
	struct rlimit before, now, zero = { 0, 0 }, old;

	EXPECT_OK(getrlimit(RLIMIT_CORE, &before));
	EXPECT_OK(setrlimit(RLIMIT_CORE, &zero));
	EXPECT_OK(syscall(SYS_setrlimit, RLIMIT_CORE, &zero));
	EXPECT_OK(syscall(SYS_prlimit64, 0, RLIMIT_CORE, &zero, NULL));
	EXPECT_OK(syscall(SYS_prlimit64, 0, 0x100000000UL | RLIMIT_CORE, &zero, NULL));
	EXPECT_ERRNO(syscall(SYS_prlimit64, 0, RLIMIT_CORE, &zero, &old), EPERM);
	EXPECT_OK(syscall(SYS_prlimit64, 0, RLIMIT_CORE, NULL, &now));
	if (now.rlim_cur != before.rlim_cur || now.rlim_max != before.rlim_max)
		child_fail(__LINE__, "RLIMIT_CORE changed: %lu/%lu -> %lu/%lu",
			   (unsigned long)before.rlim_cur, (unsigned long)before.rlim_max,
			   (unsigned long)now.rlim_cur, (unsigned long)now.rlim_max);
	/* Other limits are still the process's own to lower. */
	EXPECT_OK(getrlimit(RLIMIT_NOFILE, &now));
	now.rlim_cur = now.rlim_cur > 64 ? 64 : now.rlim_cur;
	EXPECT_OK(setrlimit(RLIMIT_NOFILE, &now));
	EXPECT_OK(getrlimit(RLIMIT_NOFILE, &old));
	if (old.rlim_cur != now.rlim_cur)
		child_fail(__LINE__, "RLIMIT_NOFILE was not lowered");
}

Test(seccomp, core_limit_cannot_change)
{
	struct sock_fprog *prog = compile();
	struct rlimit one = { 1, 1 };

	/* as the sandbox's limits leave it (limits.c); the parent is the test process */
	cr_assert_eq(setrlimit(RLIMIT_CORE, &one), 0);
	assert_child_ok(run_filtered(prog, core_limit_fixed));
	seccomp_prog_free(prog);
}

Test(seccomp, ordinary_calls_allowed)
{
	struct sock_fprog *prog = compile();

	assert_child_ok(run_filtered(prog, allowed_basics));
	seccomp_prog_free(prog);
}

/*
 * System calls newer than the table. Refused by name (statmount, listmount, the LSM attribute
 * calls): the kernel here has them, and without the filter they fail with EFAULT or EINVAL
 * on these arguments, not ENOSYS. Reviewed and allowed: they must reach the kernel.
 */
static void newer_calls(void)
{
	EXPECT_ERRNO(syscall(457 /* statmount */, NULL, NULL, 0, 0), ENOSYS);
	EXPECT_ERRNO(syscall(458 /* listmount */, NULL, NULL, 0, 0), ENOSYS);
	EXPECT_ERRNO(syscall(459 /* lsm_get_self_attr */, 0, NULL, NULL, 0), ENOSYS);
	EXPECT_ERRNO(syscall(460 /* lsm_set_self_attr */, 0, NULL, 0, 0), ENOSYS);
	EXPECT_ERRNO(syscall(461 /* lsm_list_modules */, NULL, NULL, 0), ENOSYS);
	EXPECT_ERRNO(syscall(451 /* cachestat */, -1, NULL, NULL, 0), EBADF);
	EXPECT_ERRNO(syscall(462 /* mseal */, 1, 4096, 0), EINVAL);
	EXPECT_ERRNO(syscall(468 /* file_getattr */, -1, "", NULL, 0, 0), EINVAL);
	EXPECT_ERRNO(syscall(469 /* file_setattr */, -1, "", NULL, 0, 0), EINVAL);
}

Test(seccomp, newer_calls_reviewed)
{
	struct sock_fprog *prog = compile();
	int st = 0;
	pid_t pid;

	/* The same calls without the filter: what the kernel says to them (skip if it lacks
	 * them: the ENOSYS expected above would then prove nothing). */
	child_msg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid = fork();
	if (pid == 0) {
		for (long nr = 457; nr <= 469; nr++)
			if (syscall(nr, 0, 0, 0, 0, 0) < 0 && errno == ENOSYS)
				_exit(2);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		cr_skip_test("this kernel lacks a system call numbered 457 to 469 (before 6.17)");
	assert_child_ok(run_filtered(prog, newer_calls));
	seccomp_prog_free(prog);
}

/*
 * A number past the table gets ENOSYS from the filter itself, not only from a kernel that has
 * no such call (which says ENOSYS too): a probe filter loaded first answers EXDEV to every
 * number from 470 up, and the kernel takes the errno of the most recently loaded filter that
 * answers ERRNO, cordon's. Without the cut-off, cordon's filter allows the call and the
 * probe's EXDEV comes back. A kernel that one day has call 470 changes nothing here.
 */
static void unreviewed_calls(void)
{
	EXPECT_ERRNO(syscall(470, 0, 0, 0), ENOSYS);
	EXPECT_ERRNO(syscall(511, 0, 0, 0), ENOSYS);
	EXPECT_ERRNO(syscall(100000, 0, 0, 0), ENOSYS);
	EXPECT_ERRNO(syscall(0x3fffffff, 0, 0, 0), ENOSYS);
	EXPECT_OK(getpid());
}

static void probe_alone(void)
{
	EXPECT_ERRNO(syscall(470, 0, 0, 0), EXDEV);
}

Test(seccomp, calls_past_the_table_fail_with_enosys)
{
	struct sock_filter probe[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 470, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EXDEV),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog pp = { .len = sizeof(probe) / sizeof(probe[0]), .filter = probe };
	struct sock_fprog *prog = compile();

	/* the probe alone answers EXDEV, so the check can tell the two apart */
	assert_child_ok(run_filtered_after(NULL, &pp, probe_alone));
	assert_child_ok(run_filtered_after(&pp, prog, unreviewed_calls));
	seccomp_prog_free(prog);
}

static void x32_getpid(void)
{
	syscall(0x40000000 | SYS_getpid);
	child_fail(__LINE__, "x32 getpid returned (errno %d)", errno);
}

Test(seccomp, x32_abi_killed)
{
	struct sock_fprog *prog = compile();
	int st = run_filtered(prog, x32_getpid);

	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,
		  "x32 syscall not killed by SIGSYS (status %#x): %s", st, child_msg);
	seccomp_prog_free(prog);
}

static void i386_getpid(void)
{
	int ret;

	/* int 0x80 enters the i386 ABI (getpid is 20 there). */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
	child_fail(__LINE__, "i386 getpid returned %d", ret);
}

Test(seccomp, i386_abi_killed)
{
	struct sock_fprog *prog = compile();
	int st, st0 = 0;
	pid_t pid;

	/* Where the kernel has no ia32 emulation, int 0x80 faults (SIGSEGV) without any
	 * filter: then there is no i386 ABI to close, and the filtered child must die all the
	 * same. Where it has it, only SIGSYS (the bad-arch kill) is right. */
	child_msg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid = fork();
	if (pid == 0) {
		int ret;

		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
		_exit(ret > 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &st0, 0), pid);

	st = run_filtered(prog, i386_getpid);
	if (WIFEXITED(st0) && WEXITSTATUS(st0) == 0)
		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,
			  "i386 syscall not killed by SIGSYS (status %#x): %s", st, child_msg);
	else
		cr_assert(WIFSIGNALED(st), "i386 syscall survived (status %#x): %s", st, child_msg);
	seccomp_prog_free(prog);
}
