/* SPDX-License-Identifier: MIT */
/*
 * Landlock, for real: a forked child restricts itself to a temp tree (a read-only part and a
 * writable part) plus the system directories needed to exec, then checks what it can still
 * reach. Under CI=true (or CORDON_REQUIRE_ALL=1) a kernel without Landlock is a failure.
 */
#define _GNU_SOURCE
#include "backends/local/landlock.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static bool strict_ci(void)
{
	const char *ci = getenv("CI"), *all = getenv("CORDON_REQUIRE_ALL");

	return (ci && strcmp(ci, "true") == 0) || (all && strcmp(all, "1") == 0);
}

static int need_abi(int min)
{
	int abi = landlock_abi();

	if (abi < min) {
		cr_assert_not(strict_ci(), "Landlock ABI %d < %d, and CI requires it", abi, min);
		cr_skip_test("Landlock ABI %d < %d on this kernel", abi, min);
	}
	return abi;
}

static char *child_msg;
static char tree[64];
static char path_ro[128], path_rw[128], file_ro[160];

static void child_fail(int line, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(child_msg, 4096, "line %d: ", line);

	va_start(ap, fmt);
	vsnprintf(child_msg + k, 4096 - (size_t)k, fmt, ap);
	va_end(ap);
	_exit(1);
}

#define EXPECT_ERRNO(call, want)                                                                   \
	do {                                                                                       \
		errno = 0;                                                                         \
		long _r = (long)(call);                                                            \
		if (_r >= 0 || errno != (want))                                                    \
			child_fail(__LINE__, "%s: r=%ld errno=%d (%s), want %s", #call, _r, errno, \
				   strerror(errno), #want);                                        \
	} while (0)

#define EXPECT_OK(call)                                                                            \
	do {                                                                                       \
		errno = 0;                                                                         \
		long _r = (long)(call);                                                            \
		if (_r < 0)                                                                        \
			child_fail(__LINE__, "%s: errno=%d (%s)", #call, errno, strerror(errno));  \
	} while (0)

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void setup(void)
{
	child_msg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(child_msg, MAP_FAILED);
	child_msg[0] = 0;
	snprintf(tree, sizeof(tree), "/tmp/cordon-ll-XXXXXX");
	cr_assert_not_null(mkdtemp(tree));
	snprintf(path_ro, sizeof(path_ro), "%s/ro", tree);
	snprintf(path_rw, sizeof(path_rw), "%s/rw", tree);
	snprintf(file_ro, sizeof(file_ro), "%s/ro/data", tree);
	cr_assert_eq(mkdir(path_ro, 0755), 0);
	cr_assert_eq(mkdir(path_rw, 0755), 0);
	write_file(file_ro, "data\n");
}

static void teardown(void)
{
	char cmd[256];

	int rc;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	rc = system(cmd);
	(void)rc;
}

/* Fork; the child applies the sandbox's view and runs fn. Returns the wait status. */
static int run_restricted(int abi, void (*fn)(int abi))
{
	int st = 0;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		const char *ro[] = { "/usr", "/lib",  "/lib64",
				     "/bin", path_ro, "/cordon-does-not-exist",
				     NULL };
		const char *rw[] = { path_rw, "/dev/null", "/nonexistent/dir", NULL };
		int r = landlock_apply(ro, rw, abi);

		if (r < 0)
			child_fail(__LINE__, "landlock_apply: %s", strerror(-r));
		fn(abi);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static void assert_child_ok(int st)
{
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (status %#x): %s", st,
		  child_msg);
}

static void outside_denied(int abi)
{
	char buf[128];

	EXPECT_ERRNO(open("/etc/hostname", O_RDONLY | O_CLOEXEC), EACCES);
	EXPECT_ERRNO(open("/etc/passwd", O_RDONLY | O_CLOEXEC), EACCES);
	EXPECT_ERRNO(open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), EACCES);
	EXPECT_ERRNO(open("/tmp/cordon-ll-outside", O_WRONLY | O_CREAT | O_CLOEXEC, 0644), EACCES);
	EXPECT_ERRNO(mkdir("/tmp/cordon-ll-outside-dir", 0755), EACCES);
	snprintf(buf, sizeof(buf), "%s/top-level", tree);
	EXPECT_ERRNO(open(buf, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), EACCES);
	(void)abi;
}

static void rw_allowed(int abi)
{
	char a[192], b[192], d[192];
	int fd;

	snprintf(a, sizeof(a), "%s/new", path_rw);
	snprintf(b, sizeof(b), "%s/renamed", path_rw);
	snprintf(d, sizeof(d), "%s/sub", path_rw);
	fd = open(a, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		child_fail(__LINE__, "create in rw: %s", strerror(errno));
	EXPECT_OK(write(fd, "hello\n", 6));
	close(fd);
	EXPECT_OK(truncate(a, 2));
	EXPECT_OK(rename(a, b));
	EXPECT_OK(mkdir(d, 0755));
	EXPECT_OK(rmdir(d));
	EXPECT_OK(symlink("renamed", a));
	EXPECT_OK(unlink(a));
	EXPECT_OK(unlink(b));
	/* A rule on a single file (a device): read and write, nothing else. */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		child_fail(__LINE__, "open /dev/null rw: %s", strerror(errno));
	EXPECT_OK(write(fd, "x", 1));
	close(fd);
	EXPECT_ERRNO(open("/dev/zero", O_RDONLY | O_CLOEXEC), EACCES);
	(void)abi;
}

static void ro_is_read_only(int abi)
{
	char buf[16], other[192];
	int fd;

	fd = open(file_ro, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf)) != 5)
		child_fail(__LINE__, "read in ro: %s", strerror(errno));
	close(fd);
	EXPECT_OK(opendir(path_ro) ? 0 : -1);
	EXPECT_ERRNO(open(file_ro, O_WRONLY | O_CLOEXEC), EACCES);
	EXPECT_ERRNO(open(file_ro, O_RDWR | O_APPEND | O_CLOEXEC), EACCES);
	snprintf(other, sizeof(other), "%s/new", path_ro);
	EXPECT_ERRNO(open(other, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), EACCES);
	EXPECT_ERRNO(mkdir(other, 0755), EACCES);
	EXPECT_ERRNO(unlink(file_ro), EACCES);
	EXPECT_ERRNO(symlink("data", other), EACCES);
	EXPECT_ERRNO(mkfifo(other, 0644), EACCES);
	if (abi >= 3)
		EXPECT_ERRNO(truncate(file_ro, 0), EACCES);
	/* Moving a read-only file into the writable tree removes it from ro: refused. */
	snprintf(other, sizeof(other), "%s/stolen", path_rw);
	if (rename(file_ro, other) == 0)
		child_fail(__LINE__, "rename out of ro succeeded");
	if (errno != EACCES && errno != EXDEV)
		child_fail(__LINE__, "rename out of ro: %s", strerror(errno));
}

static void exec_from_ro(int abi)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		char *argv[] = { "true", NULL };

		execv("/usr/bin/true", argv);
		_exit(99);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		child_fail(__LINE__, "exec /usr/bin/true under Landlock: status %#x", st);
	(void)abi;
}

Test(landlock, abi_detected)
{
	int abi = landlock_abi();

	if (abi == 0) {
		cr_assert_not(strict_ci(), "no Landlock, and CI requires it");
		cr_skip_test("no Landlock on this kernel");
	}
	cr_assert_geq(abi, 1);
}

Test(landlock, refuses_without_abi)
{
	const char *none[] = { NULL };

	cr_assert_eq(landlock_apply(none, none, 0), -EOPNOTSUPP);
	cr_assert_eq(landlock_apply(none, none, -1), -EOPNOTSUPP);
}

Test(landlock, outside_paths_denied, .init = setup, .fini = teardown)
{
	assert_child_ok(run_restricted(need_abi(1), outside_denied));
}

Test(landlock, rw_paths_writable, .init = setup, .fini = teardown)
{
	assert_child_ok(run_restricted(need_abi(1), rw_allowed));
}

Test(landlock, ro_paths_read_only, .init = setup, .fini = teardown)
{
	assert_child_ok(run_restricted(need_abi(1), ro_is_read_only));
	cr_assert_eq(access(file_ro, F_OK), 0, "the ro file must still be there");
}

Test(landlock, exec_from_ro_paths, .init = setup, .fini = teardown)
{
	assert_child_ok(run_restricted(need_abi(1), exec_from_ro));
}

static int abstract_listener;
static char abstract_name[64];

static void scoped_ipc(int abi)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len =
		(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(abstract_name));
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memcpy(sa.sun_path + 1, abstract_name, strlen(abstract_name));
	if (fd < 0)
		child_fail(__LINE__, "socket: %s", strerror(errno));
	/* The host's abstract socket is out of the domain's scope. */
	EXPECT_ERRNO(connect(fd, (struct sockaddr *)&sa, len), EPERM);
	close(fd);
	/* Signals to processes outside (here the test runner) are refused... */
	EXPECT_ERRNO(kill(getppid(), 0), EPERM);
	/* ...but the sandbox can signal itself and its own children. */
	EXPECT_OK(kill(getpid(), 0));
	(void)abi;
}

Test(landlock, scopes_abstract_sockets_and_signals, .init = setup, .fini = teardown)
{
	int abi = need_abi(6);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int probe, st;

	snprintf(abstract_name, sizeof(abstract_name), "cordon-ll-test-%d", (int)getpid());
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(abstract_name));
	memcpy(sa.sun_path + 1, abstract_name, strlen(abstract_name));
	abstract_listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(abstract_listener, 0);
	cr_assert_eq(bind(abstract_listener, (struct sockaddr *)&sa, len), 0);
	cr_assert_eq(listen(abstract_listener, 4), 0);

	/* Control: without Landlock the connection works, so EPERM below is Landlock's. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(connect(probe, (struct sockaddr *)&sa, len), 0, "%s", strerror(errno));
	close(probe);

	st = run_restricted(abi, scoped_ipc);
	close(abstract_listener);
	assert_child_ok(st);
}
