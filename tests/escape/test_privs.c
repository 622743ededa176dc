/* SPDX-License-Identifier: MIT */
/*
 * Class 4, privilege escalation through the runtime (CVE-2016-8659, CVE-2020-5291,
 * CVE-2026-41163, CVE-2022-27650...): identity, capabilities, no_new_privs, setuid binaries.
 * Class 5, the seccomp wall: each refused syscall tried for real by the static helper, and the
 * kernel interfaces a sandbox must not expose (/proc/sys, sysrq, /sys, devices, modules).
 */
#define _GNU_SOURCE
#include "tests/escape/escape.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

/* A setuid-root copy of bash made by the host's root does not elevate inside. */
static void put_setuid_bash(struct esc *e)
{
	char *p = esc_wpath(e, "sbash");

	esc_copy("/usr/bin/bash", p, 0755);
	cr_assert(chown(p, 0, 0) == 0 && chmod(p, 04755) == 0);
	free(p);
}

ESC_CASE(escape_privs, no_new_privs)
{
	struct tu_run r;

	esc_run(&r, NULL, "grep NoNewPrivs /proc/self/status");
	cr_expect(strstr(r.out, "NoNewPrivs:\t1"), "no_new_privs is not set:\n%s", r.out);
	tu_run_free(&r);
}

ESC_CASE(escape_privs, capabilities_empty)
{
	static const char *const sets[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
	struct tu_run r;

	put_setuid_bash(e);
	esc_run(&r, NULL,
		"grep ^Cap /proc/self/status; ./sbash -p -c 'grep ^Cap /proc/self/status' "
		"2>/dev/null; true");
	for (size_t i = 0; i < 5; i++) {
		char line[64];

		snprintf(line, sizeof(line), "%s:\t0000000000000000", sets[i]);
		cr_expect(strstr(r.out, line), "%s is not empty:\n%s", sets[i], r.out);
	}
	/* and no set is non-empty anywhere, the setuid bash's included */
	for (const char *l = r.out; (l = strstr(l, "Cap")); l++) {
		const char *tab = strchr(l, '\t');

		cr_expect(tab && !strncmp(tab + 1, "0000000000000000", 16),
			  "a capability set is not empty: %.40s", l);
	}
	tu_run_free(&r);
}

ESC_CASE(escape_privs, seccomp_filter_on)
{
	struct tu_run r;

	esc_run(&r, NULL, "grep -E '^Seccomp:' /proc/self/status");
	cr_expect(strstr(r.out, "Seccomp:\t2"), "no seccomp filter:\n%s", r.out);
	tu_run_free(&r);
}

/* Never host uid 0; as an ordinary user, that user; no root group. */
ESC_CASE(escape_privs, identity)
{
	struct tu_run r;
	unsigned uid = 0, gid = 0;
	const char *p;

	esc_run(&r, NULL, "echo \"uid=$(id -u) gid=$(id -g) groups=$(id -G) .\"");
	p = strstr(r.out, "uid=");
	cr_assert(p && sscanf(p, "uid=%u gid=%u", &uid, &gid) == 2, "no id output: %s", r.out);
	if (e->who == ESC_USER)
		cr_expect(uid == e->uid, "runs as uid %u, not the calling user's %u", uid,
			  (unsigned)e->uid);
	else
		cr_expect(uid != 0, "the command runs as root");
	cr_expect(gid != 0 && !strstr(r.out, " 0 ") && !strstr(r.out, "groups=0"),
		  "the command has the root group: %s", r.out);
	tu_run_free(&r);
}

ESC_CASE(escape_privs, setuid_shell)
{
	struct tu_run r;
	char target[128];

	put_setuid_bash(e);
	snprintf(target, sizeof(target), "/etc/cordon-esc-suid-%s", e->tag);
	esc_on_teardown("rm -f '%s'", target);
	esc_run(&r, NULL,
		"echo \"euid=$(./sbash -p -c 'id -u')\"; ./sbash -p -c 'cat /etc/shadow; "
		"echo pwned > %s'; true",
		target);
	esc_expect_absent(&r, "euid=0", "the setuid copy of bash gave euid 0");
	esc_expect_absent(&r, esc_shadow_needle(), "/etc/shadow through setuid bash");
	cr_expect(!esc_exists(target), "setuid bash wrote %s", target);
	tu_run_free(&r);
}

/*
 * Files the run leaves in its workdir can never carry a setuid or setgid bit. As root with a
 * root-owned workdir the workdir is idmapped, so what the command creates is root's on the
 * host: a `chmod u+s` there would leave a setuid-root program for the next host user. Every
 * call that takes a mode is tried (the helper), and the usual tools; then the host's view of
 * the workdir is checked. Also: the command's files belong to the runner on the host, and a
 * third user's file in the workdir stays as unwritable as its mode says.
 */
ESC_CASE(escape_privs, setid_bits_in_workdir)
{
	struct tu_run r;
	char *other = esc_wpath(e, "other"), *made = esc_wpath(e, "made"), *out;
	struct stat st;

	esc_put_helper(e);
	esc_write(other, "theirs\n", 0644, 4243, 4243);
	esc_run(&r, NULL,
		"echo x > made; cp made s_cp; chmod u+s s_cp; chmod g+s s_cp; chmod 4755 s_cp; "
		"install -m 4755 made s_install; mkdir -m 2775 s_mkdir_m; cp -p /usr/bin/passwd "
		"s_passwd; echo owned >> other; ./h setid; ls -ln; true");
	esc_expect_no_escape(&r, "setuid/setgid bits");
	cr_expect(strstr(r.out, "setid_done") || strstr(r.out, "open: blocked"),
		  "the helper did not run:\n%s\n%s", r.out, r.err);
	cr_assert(stat(made, &st) == 0, "the command could not create a file in its workdir:\n%s",
		  r.err);
	cr_expect_eq(st.st_uid, e->uid, "a file it made is owned by %u on the host, not %u",
		     (unsigned)st.st_uid, (unsigned)e->uid);
	{
		struct tu_run h;

		/* On the host, as root: any file with a setuid or setgid bit in the workdir. */
		esc_host_sh(&h, "find '%s' -perm /6000 -printf '%%m %%u %%p\\n'", e->wd);
		cr_expect(h.out[0] == '\0', "setuid/setgid files left in the workdir:\n%s", h.out);
		tu_run_free(&h);
	}
	out = esc_read(other, NULL);
	cr_expect(out && strcmp(out, "theirs\n") == 0, "a third user's 0644 file was written: %s",
		  out ? out : "(unreadable)");
	free(out);
	free(other);
	free(made);
	tu_run_free(&r);
}

/*
 * The two cases below run their attack twice: with the default profile (its masks are literal
 * names: the privileged files are found by setid.c's own walk), and with ignore globs, which
 * make the hide walk find them in the same walk (hide.c, HIDE_SETID). Their files are at the
 * top, two levels down, and below a directory the globs hide whole (covered then, but bound
 * read-only all the same: the run must still set up), in a workdir of 2,400 more files in 30
 * top-level directories, which is enough for that walk to take a second thread. The commands
 * name the deeper ones by a shell glob, not by path: a path below an ignored directory in the
 * command line is refused by the policy check before anything runs, and under the globs that
 * directory is covered in the sandbox, where the glob finds nothing.
 */
static const char *const glob_args[] = { "--ignore", "*.o", "--ignore", "build", NULL };
static const char *const setid_dirs[] = { "", "sub/deep/", "build/bin/" };
#define N_SETID_RUNS 2
#define N_SETID_PATHS (3 * sizeof(setid_dirs) / sizeof(setid_dirs[0]))

static void setid_tree(struct esc *e)
{
	static const char *const dirs[] = { "sub", "sub/deep", "build", "build/bin" };
	char rel[64];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char *p = esc_wpath(e, dirs[i]);

		cr_assert(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
		free(p);
	}
	for (int d = 0; d < 30; d++) {
		char *p;

		snprintf(rel, sizeof(rel), "t%02d", d);
		p = esc_wpath(e, rel);
		cr_assert(mkdir(p, 0755) == 0);
		free(p);
		for (int f = 0; f < 80; f++) {
			snprintf(rel, sizeof(rel), "t%02d/f%02d.%s", d, f, f % 8 ? "c" : "o");
			p = esc_wpath(e, rel);
			esc_write(p, "", 0644, 0, 0);
			free(p);
		}
	}
}

/* names[i] in each of setid_dirs: path k of N_SETID_PATHS (malloc'd, workdir-relative). */
static char *setid_rel(const char *const *names, size_t k)
{
	char *rel;

	cr_assert(asprintf(&rel, "%s%s", setid_dirs[k / 3], names[k % 3]) > 0);
	return rel;
}

/*
 * Root's privileged programs already in the workdir: a setuid-root copy, a setgid one and one
 * with a file capability (cap_net_raw), all root's, as an extracted root file system or
 * `cp -a` of /usr/bin leaves them. In a root-owned workdir under a root caller the idmapped
 * mount makes root's files the command's own, and the kernel clears the bits (and the
 * capability) on write(2), truncate and fallocate, but not on a write through a shared
 * mapping: each program must end either unchanged or without its privilege (found in review:
 * all three kept it with the command's bytes in them: a setuid-root program of the command's
 * on the host). An ordinary user's run cannot open root's files for writing at all.
 */
ESC_CASE(escape_privs, setid_program_rewritten_through_mapping)
{
	static const char *const names[] = { "p_setuid", "p_setgid", "p_caps" };
	/* struct vfs_cap_data, revision 2, effective: cap_net_raw (13) permitted */
	static const uint32_t caps[5] = { 0x02000001, 1u << 13, 0, 0, 0 };
	const struct esc_opts globbed = { .args = glob_args };
	char marker[40];

	snprintf(marker, sizeof(marker), "ESC_%s", e->tag);
	esc_put_helper(e);
	setid_tree(e);
	for (size_t k = 0; k < N_SETID_PATHS; k++) {
		char *rel = setid_rel(names, k), *p = esc_wpath(e, rel);

		esc_copy("/usr/bin/true", p, 0755);
		cr_assert(chown(p, 0, 0) == 0);
		if (k % 3 == 0)
			cr_assert(chmod(p, 04755) == 0);
		else if (k % 3 == 1)
			cr_assert(chmod(p, 02755) == 0);
		else
			cr_assert(setxattr(p, "security.capability", caps, sizeof(caps), 0) == 0,
				  "setxattr security.capability: %s", strerror(errno));
		free(p);
		free(rel);
	}
	for (int run = 0; run < N_SETID_RUNS; run++) {
		struct tu_run r;

		esc_run(&r, run ? &globbed : NULL,
			"for p in p_* */*/p_*; do ./h mmapwrite $p %s; done; true", marker);
		cr_expect(strstr(r.out, "mmapwrite"), "the helper did not run:\n%s\n%s", r.out,
			  r.err);
		for (size_t k = 0; k < N_SETID_PATHS; k++) {
			char *rel = setid_rel(names, k), *p = esc_wpath(e, rel);
			char *data = esc_read(p, NULL);
			bool changed = data && !strncmp(data, marker, strlen(marker));
			bool privileged = false;
			struct stat st;

			cr_assert(stat(p, &st) == 0);
			if (k % 3 < 2)
				privileged = (st.st_mode & (S_ISUID | S_ISGID)) != 0;
			else
				privileged = getxattr(p, "security.capability", NULL, 0) > 0;
			cr_expect(!(changed && privileged),
				  "%s (%s): rewritten by the command and still privileged (mode "
				  "%o)\n%s",
				  rel, run ? "ignore globs" : "default profile", st.st_mode & 07777,
				  r.out);
			free(data);
			free(p);
			free(rel);
		}
		tu_run_free(&r);
	}
}

/* A socket file at path, its listener gone (a socket inode is what matters here). */
static void make_socket_file(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0 && strlen(path) < sizeof(a.sun_path));
	strcpy(a.sun_path, path);
	cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind %s: %s", path,
		  strerror(errno));
	close(fd);
}

/*
 * Root's special files already in the workdir: a device node (an extracted root file system's
 * dev/sda or dev/mem; here /dev/null's numbers), a socket and a FIFO, all 0600 root's. Useless
 * inside (nodev, and the listener is elsewhere), but in a root-owned workdir the idmapped mount
 * makes them the command's own, and a chmod 0666 there is a chmod on the host, where the path
 * has no nodev: a world-writable disk for every local user (found in review: all three became
 * 0666). Their modes must stay as root left them.
 */
ESC_CASE(escape_privs, root_special_files_keep_their_mode)
{
	static const char *const names[] = { "dev_node", "sock", "fifo" };
	const struct esc_opts globbed = { .args = glob_args };
	const char *all = "dev_node sock fifo */*/dev_node */*/sock */*/fifo";

	setid_tree(e);
	for (size_t k = 0; k < N_SETID_PATHS; k++) {
		char *rel = setid_rel(names, k), *p = esc_wpath(e, rel);

		if (k % 3 == 0)
			cr_assert(mknod(p, S_IFCHR | 0600, makedev(1, 3)) == 0, "mknod: %s",
				  strerror(errno));
		else if (k % 3 == 1)
			make_socket_file(p);
		else
			cr_assert(mkfifo(p, 0600) == 0);
		cr_assert(chown(p, 0, 0) == 0 && chmod(p, 0600) == 0);
		free(p);
		free(rel);
	}
	for (int run = 0; run < N_SETID_RUNS; run++) {
		struct tu_run r;

		esc_run(&r, run ? &globbed : NULL, "chmod 0666 %s; ls -l %s; true", all, all);
		for (size_t k = 0; k < N_SETID_PATHS; k++) {
			char *rel = setid_rel(names, k), *p = esc_wpath(e, rel);
			struct stat st;

			cr_assert(lstat(p, &st) == 0);
			cr_expect_eq(st.st_mode & 07777, 0600,
				     "%s (%s): root's 0600 file is %o on the host now\n%s", rel,
				     run ? "ignore globs" : "default profile", st.st_mode & 07777,
				     r.out);
			free(p);
			free(rel);
		}
		tu_run_free(&r);
	}
}

/*
 * A privileged program moved during another run's scan. Run B, started first, has root's
 * setuid program p1/d/su bound read-only, but not the directories on its way: its command
 * moves d back and forth between p1 and p2 (./h flip, a millisecond apart). A run started
 * meanwhile may walk p1 while d is in p2, and p2 once d is back in p1: it never sees su, and
 * its command owns su through the idmap and rewrites it through a shared mapping, which
 * keeps the bit (found in review: 7 runs of 30 wrote su with `mv` in a loop, with the
 * default profile; most others failed their setup, having found su moved since the scan).
 * Every directory on the way to a protected file is pinned (EBUSY), as those on the way to a
 * hidden name are: B can move neither, and no run's scan can miss su. The race itself is not
 * certain to be won in 24 runs, so the move is checked too: refused in a root-owned workdir (EXDEV: d is on the pin of p1).
 * (The user variant owns p1 and d there, but cannot open root's su for writing.)
 */
ESC_CASE(escape_privs, setid_program_moved_during_a_scan)
{
	const struct esc_opts globbed = { .args = glob_args,
					  .kill_after = 60,
					  .allow_setup_error = true };
	const struct esc_opts plain = { .kill_after = 60, .allow_setup_error = true };
	char *su = esc_wpath(e, "p1/d/su"), *stop = esc_wpath(e, "stop");
	char *moved = esc_wpath(e, "p2/d/su"), marker[40];
	struct esc_job b;
	struct tu_run rb;
	int writes = 0;

	snprintf(marker, sizeof(marker), "ESC_%s", e->tag);
	esc_put_helper(e);
	setid_tree(e);
	for (size_t i = 0; i < 3; i++) {
		char *p = esc_wpath(e, (const char *[]){ "p1", "p1/d", "p2" }[i]);

		cr_assert(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
		free(p);
	}
	esc_copy("/usr/bin/true", su, 0755);
	cr_assert(chown(su, 0, 0) == 0 && chmod(su, 04755) == 0);
	esc_start(&b, &plain, "echo > bstarted; ./h flip p1/d p2/d stop 1000; echo B-done");
	for (int i = 0; i < 3000; i++) {
		char *s = esc_wpath(e, "bstarted");
		bool up = esc_exists(s);

		free(s);
		if (up)
			break;
		usleep(10000);
	}
	for (int run = 0; run < 24; run++) {
		struct tu_run r;

		esc_run(&r, run % 2 ? &globbed : &plain,
			"for p in p1/d/su p2/d/su; do [ -e $p ] && ./h mmapwrite $p %s; done; true",
			marker);
		if (strstr(r.out, ": written"))
			writes++;
		tu_run_free(&r);
	}
	esc_write(stop, "", 0644, e->uid, e->gid);
	esc_finish(&b, &rb, NULL, NULL);
	cr_expect(strstr(rb.out, "B-done"), "the mover did not run: %s %s", rb.out, rb.err);
	/* What makes the race: in a root-owned workdir the command owns p1 and d there. */
	if (e->uid == 0)
		cr_expect(strstr(rb.out, "flip: 0 moves, then flip: blocked "),
			  "a run moved the directory of a protected program: %s", rb.out);
	for (int k = 0; k < 2; k++) {
		const char *p = k ? moved : su;
		char *data = esc_read(p, NULL);
		struct stat st;

		if (data && stat(p, &st) == 0)
			cr_expect(strncmp(data, marker, strlen(marker)) != 0 ||
					  !(st.st_mode & (S_ISUID | S_ISGID)),
				  "%s: rewritten by a run's command (%d of 24 runs) and still "
				  "setuid (mode %o)",
				  p, writes, st.st_mode & 07777);
		free(data);
	}
	tu_run_free(&rb);
	free(moved);
	free(stop);
	free(su);
}

/*
 * Core dumps off and the hard limit too. dash's ulimit counts 512-byte blocks: the limit is 1
 * byte (the one value that also stops a core_pattern pipe: core_dump_pipe_helper below).
 */
ESC_CASE(escape_privs, core_dumps_off)
{
	struct tu_run r;

	esc_run(&r, NULL, "echo \"soft=$(ulimit -c) hard=$(ulimit -H -c)\"");
	cr_expect(strstr(r.out, "soft=0 hard=0"), "core dumps are possible: %s", r.out);
	tu_run_free(&r);
}

/*
 * A crash reaches the host's core handler. A core_pattern that pipes ("|/usr/lib/systemd/
 * systemd-coredump ...", apport) is run by the kernel as root on the host, outside every
 * namespace and cgroup of the run, with the crashed process's memory on its stdin, and
 * RLIMIT_CORE = 0 does not stop it: for a pipe the kernel ignores the limit unless it is
 * exactly 1 (fs/coredump.c). systemd-coredump then stores the core on the host's disk (Debian
 * patches it to ignore the limit it is told), apport writes /var/crash. The case installs a
 * pipe pattern of its own for the length of two runs (a helper that notes the crashed
 * program's name and discards the core; the old pattern is put back at once, and in the
 * teardown), and crashes a program of a unique name in the sandbox: once as it is, once after
 * lowering its own limit to 0. The helper must not have seen it (found in review: it saw both).
 */
ESC_CASE(escape_privs, core_dump_pipe_helper)
{
	char *helper = esc_spath(e, "core-helper"), *seen = esc_spath(e, "core-seen");
	char *saved = esc_spath(e, "core-pattern-saved"), *old = NULL, pattern[256], name[32];
	char *crasher;
	struct tu_run r1, r2;
	int lock, fd;
	char *script;

	snprintf(name, sizeof(name), "escc%.8s", e->tag + 3);
	crasher = esc_wpath(e, name);
	esc_put_helper(e);
	esc_copy(esc_helper_path(), crasher, 0755);
	esc_own(e, crasher);
	cr_assert(asprintf(&script, "#!/bin/sh\necho \"$1 limit=$2\" >> '%s'\ncat > /dev/null\n",
			   seen) > 0);
	esc_write(helper, script, 0755, 0, 0);
	snprintf(pattern, sizeof(pattern), "|%s %%e %%c\n", helper);
	cr_assert(strlen(pattern) < 128, "core_pattern too long: %s", pattern);

	lock = esc_heavy_lock(); /* one pattern at a time: it is the whole machine's */
	old = esc_read("/proc/sys/kernel/core_pattern", NULL);
	cr_assert(old && *old, "cannot read kernel.core_pattern");
	esc_write(saved, old, 0600, 0, 0);
	esc_on_teardown("cat '%s' > /proc/sys/kernel/core_pattern", saved);
	fd = open("/proc/sys/kernel/core_pattern", O_WRONLY | O_CLOEXEC);
	cr_assert(fd >= 0 && write(fd, pattern, strlen(pattern)) == (ssize_t)strlen(pattern),
		  "cannot set kernel.core_pattern");
	close(fd);
	esc_run(&r1, NULL, "./%s crash", name);
	esc_run(&r2, NULL, "./%s crash lower", name);
	fd = open("/proc/sys/kernel/core_pattern", O_WRONLY | O_CLOEXEC);
	cr_assert(fd >= 0 && write(fd, old, strlen(old)) == (ssize_t)strlen(old),
		  "cannot restore kernel.core_pattern");
	close(fd);
	esc_heavy_unlock(lock);

	cr_expect(strstr(r1.out, "crash: core limit"), "the crasher did not run:\n%s", r1.out);
	cr_expect(strstr(r2.out, "crash: core limit"), "the crasher did not run:\n%s", r2.out);
	{
		/* the kernel runs the helper before the crashed process is reaped: it has run */
		char *got = esc_read(seen, NULL);

		cr_expect(!got || !strstr(got, name),
			  "the host's core handler ran for a crash in the sandbox:\n%s\n%s\n%s",
			  got, r1.out, r2.out);
		free(got);
	}
	free(script);
	free(old);
	free(helper);
	free(seen);
	free(saved);
	free(crasher);
	tu_run_free(&r1);
	tu_run_free(&r2);
}

static void helper_case(struct esc *e, const char *cmd, const char *what)
{
	struct tu_run r;

	esc_put_helper(e);
	esc_run(&r, NULL, "%s", cmd);
	esc_expect_no_escape(&r, what);
	cr_expect(strstr(r.out, ": blocked") || strstr(r.out, ": ESCAPED"),
		  "%s: the helper did not run:\n%s\n%s", what, r.out, r.err);
	tu_run_free(&r);
}

ESC_CASE(escape_syscalls, ptrace_sibling)
{
	struct tu_run r;

	helper_case(e, "sleep 30 & ./h ptrace $!; kill $!", "ptrace");
	/* strace is on the host: its trace of execve must not appear */
	esc_run(&r, NULL, "strace -f true 2>&1 | head -20; true");
	esc_expect_absent(&r, "execve(", "strace traced a process");
	tu_run_free(&r);
}

ESC_CASE(escape_syscalls, process_vm_and_pidfd_getfd)
{
	helper_case(e, "./h vm", "process_vm_readv/writev, pidfd_getfd");
}

ESC_CASE(escape_syscalls, keyctl)
{
	struct tu_run r;
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "./h keys add %s", e->tag);
	helper_case(e, cmd, "keyctl/add_key/request_key");
	/* nothing reached the runner's keyrings on the host */
	esc_host_sh(&r, "./h keys find %s", e->tag);
	esc_expect_no_escape(&r, "a key reached the host's keyrings");
	tu_run_free(&r);
}

ESC_CASE(escape_syscalls, bpf)
{
	helper_case(e, "./h bpf", "bpf");
}

ESC_CASE(escape_syscalls, io_uring)
{
	helper_case(e, "./h io_uring", "io_uring");
}

ESC_CASE(escape_syscalls, userfaultfd)
{
	helper_case(e, "./h userfaultfd", "userfaultfd");
}

ESC_CASE(escape_syscalls, perf_event_open)
{
	helper_case(e, "./h perf", "perf_event_open");
}

/*
 * fanotify watches the read-only binds, which are the host's own inodes (every open and exec
 * of the host's programs, and other runs', with names), and memfd_secret maps memory the
 * kernel cannot read: neither is anything a shell needs (found in review; both were allowed).
 */
ESC_CASE(escape_syscalls, fanotify_and_memfd_secret)
{
	helper_case(e, "./h watch", "fanotify_init, memfd_secret");
}

ESC_CASE(escape_syscalls, nested_user_namespaces)
{
	struct tu_run r;

	helper_case(e, "./h userns", "unshare/clone/clone3 of namespaces");
	esc_run(&r, NULL,
		"unshare -U true && echo ESCAPED-U; unshare -r id && echo ESCAPED-R; "
		"unshare -Urm true && echo ESCAPED-URM; unshare -n true && echo ESCAPED-N; true");
	esc_expect_no_escape(&r, "unshare(1)");
	tu_run_free(&r);
}

ESC_CASE(escape_syscalls, setns)
{
	helper_case(e, "./h setns", "setns");
}

ESC_CASE(escape_syscalls, mount_command)
{
	struct tu_run r;
	char *info_before = esc_read("/proc/self/mountinfo", NULL), *info_after;

	esc_on_teardown("umount -l /tmp/cordon-esc-mnt-%s 2>/dev/null; "
			"rmdir /tmp/cordon-esc-mnt-%s 2>/dev/null",
			e->tag, e->tag);
	esc_run(&r, NULL,
		"mkdir -p /tmp/cordon-esc-mnt-%s m; "
		"mount -t tmpfs x /tmp/cordon-esc-mnt-%s && echo ESCAPED-TMPFS; "
		"mount -t tmpfs x m && echo ESCAPED-WD; mount -o remount,rw /usr && "
		"echo ESCAPED-REMOUNT; mount -t proc proc m && echo ESCAPED-PROC; true",
		e->tag, e->tag);
	esc_expect_no_escape(&r, "mount(8)");
	info_after = esc_read("/proc/self/mountinfo", NULL);
	cr_expect(!strstr(info_after, e->tag) && !strstr(info_after, e->wd),
		  "a mount of the run appeared on the host");
	free(info_before);
	free(info_after);
	tu_run_free(&r);
}

ESC_CASE(escape_syscalls, mount_api)
{
	helper_case(e, "mkdir -p m; ./h mount m", "mount, fsopen, open_tree, fspick, pivot_root");
}

ESC_CASE(escape_syscalls, kernel_modules_kexec)
{
	helper_case(e, "./h modules", "init_module, finit_module, delete_module, kexec");
}

/* A non-native ABI must kill the process (SIGSYS, shell status 159), never run the call. */
ESC_CASE(escape_syscalls, x32_abi)
{
	struct tu_run r;

	esc_put_helper(e);
	esc_run(&r, NULL, "./h abi x32; echo \"status=$?\"");
	esc_expect_no_escape(&r, "x32 syscall");
	cr_expect(strstr(r.out, "status=159"), "an x32 syscall did not kill the process:\n%s",
		  r.out);
	tu_run_free(&r);
}

/* int $0x80 (i386): killed by the filter, or faulting where the kernel lacks ia32 emulation. */
ESC_CASE(escape_syscalls, i386_abi)
{
	struct tu_run r;

	esc_put_helper(e);
	esc_run(&r, NULL, "./h abi i386; echo \"status=$?\"");
	esc_expect_no_escape(&r, "i386 syscall");
	cr_expect(strstr(r.out, "status=159") || strstr(r.out, "status=139"),
		  "an i386 syscall was not stopped:\n%s", r.out);
	tu_run_free(&r);
}

ESC_CASE(escape_syscalls, personality)
{
	struct tu_run r;

	helper_case(e, "./h personality", "personality");
	esc_run(&r, NULL,
		"setarch x86_64 -R true && echo ESCAPED-SETARCH; "
		"setarch i386 true && echo ESCAPED-LINUX32; true");
	esc_expect_no_escape(&r, "setarch");
	tu_run_free(&r);
}

/* ---- kernel interfaces --------------------------------------------------------------------- */

ESC_CASE(escape_kernel, proc_sys_write)
{
	struct utsname before, after;
	struct tu_run r;
	int lock = esc_heavy_lock(); /* the variants must not see each other's changes */

	cr_assert(uname(&before) == 0);
	esc_run(&r, NULL,
		"echo esc-%s > /proc/sys/kernel/domainname && echo ESCAPED-DOMAINNAME; "
		"echo esc-%s > /proc/sys/kernel/hostname && echo ESCAPED-HOSTNAME; "
		"echo 1 > /proc/sys/vm/drop_caches && echo ESCAPED-DROPCACHES; "
		"sysctl -w kernel.domainname=x >/dev/null 2>&1 && echo ESCAPED-SYSCTL; "
		"echo h > /proc/sysrq-trigger 2>/dev/null && echo ESCAPED-SYSRQ; true",
		e->tag + 3, e->tag + 3);
	cr_assert(uname(&after) == 0);
	esc_expect_no_escape(&r, "/proc/sys");
	cr_expect(!strcmp(before.nodename, after.nodename) &&
			  !strcmp(before.domainname, after.domainname),
		  "the host's hostname/domainname changed");
	/* put the host back if it was not protected */
	if (strcmp(before.nodename, after.nodename))
		(void)!sethostname(before.nodename, strlen(before.nodename));
	if (strcmp(before.domainname, after.domainname))
		(void)!setdomainname(before.domainname, strlen(before.domainname));
	esc_heavy_unlock(lock);
	tu_run_free(&r);
}

ESC_CASE(escape_kernel, proc_kernel_memory_and_log)
{
	struct tu_run r;

	esc_run(&r, NULL,
		"head -c 4 /proc/kcore | tail -c 3 | grep -q ELF && echo ESCAPED-KCORE; "
		"dmesg 2>/dev/null | grep -qm1 . && echo ESCAPED-DMESG; "
		"timeout 1 head -n 1 /dev/kmsg 2>/dev/null | grep -q . && echo ESCAPED-KMSG; "
		"head -c 1 /proc/kpageflags >/dev/null 2>&1 && echo ESCAPED-KPAGEFLAGS; "
		"grep -v '^0000000000000000' /proc/kallsyms 2>/dev/null | grep -qm1 . && "
		"echo ESCAPED-KALLSYMS; "
		"for f in kpagecount kpagecgroup vmallocinfo iomem ioports slabinfo pagetypeinfo "
		"kmsg keys key-users timer_list timer_stats sched_debug latency_stats; do "
		"test -e /proc/$f && head -c 1 /proc/$f >/dev/null 2>&1 && echo ESCAPED-PROC-$f; "
		"done; for f in cpu io memory; do test -e /proc/pressure/$f && "
		"(echo 'some 150000 1000000' > /proc/pressure/$f) 2>/dev/null && "
		"echo ESCAPED-PSI-TRIGGER; done; true");
	esc_expect_no_escape(&r, "kernel memory or log");
	tu_run_free(&r);
}

/* No /sys (uevent_helper, cgroup release_agent, ...) and a cgroup namespace. */
ESC_CASE(escape_kernel, sys_and_cgroups)
{
	struct tu_run r;

	esc_run(&r, NULL,
		"test -e /sys/kernel && echo ESCAPED-SYS; test -e /sys/fs/cgroup && "
		"echo ESCAPED-CGROUPFS; echo /x > /sys/kernel/uevent_helper 2>/dev/null && "
		"echo ESCAPED-UEVENT; grep -v ':/$' /proc/self/cgroup | sed 's/^/ESCAPED-CGROUP "
		"/'; "
		"true");
	esc_expect_no_escape(&r, "/sys or the host's cgroup paths");
	tu_run_free(&r);
}

ESC_CASE(escape_kernel, minimal_dev)
{
	struct tu_run r;

	esc_run(&r, NULL,
		"for d in vda vdb sda nvme0n1 mem kmem port kmsg tty0 tty1 ttyS0 console loop0 "
		"loop-control fuse btrfs-control autofs hwrng net/tun vsock vhost-vsock "
		"vhost-net userfaultfd kvm dri cpu/0/msr mapper/control uinput rtc0 watchdog; do "
		"test -e /dev/$d && echo \"ESCAPED-DEV $d\"; done; true");
	esc_expect_no_escape(&r, "a host device node is present");
	tu_run_free(&r);
}

/* Device nodes made inside give nothing: no CAP_MKNOD, and a nodev workdir. */
ESC_CASE(escape_kernel, mknod_devices)
{
	struct stat st;
	struct tu_run r;

	cr_assert(stat("/", &st) == 0);
	esc_run(&r, NULL,
		"mknod kmsg c 1 11; timeout 1 head -n 1 kmsg 2>/dev/null | grep -q . && "
		"echo ESCAPED-KMSG; mknod blk b %u %u; head -c 512 blk 2>/dev/null | wc -c | "
		"grep -qv '^0$' && echo ESCAPED-BLOCKDEV; mknod mem c 1 1; head -c 16 mem "
		"2>/dev/null | wc -c | grep -qv '^0$' && echo ESCAPED-DEVMEM; true",
		major(st.st_dev), minor(st.st_dev));
	esc_expect_no_escape(&r, "mknod");
	tu_run_free(&r);
}
