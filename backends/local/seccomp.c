/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filter of the local sandbox.
 *
 * Shape: default ALLOW, and a deny list. A default-deny allow list (Docker's profile) is
 * stronger against syscalls that do not exist yet, but an agent's shell runs arbitrary
 * toolchains (compilers, language runtimes, package managers) whose syscall needs we cannot
 * enumerate; a missing entry there is a confusing failure, while a deny list fails only for
 * what we chose to take away. Everything taken away is in `rules[]` below, one line each with
 * the reason, and nowhere else: `cordon doctor` and docs/security.md print that table.
 *
 * Life cycle: the table is compiled with libseccomp into a classic BPF program at build time
 * (tools/seccomp-gen.c writes it into build/gen/seccomp_prebuilt.inc, compiled into this
 * file), because compiling it at run time costs more than a millisecond of every start, on
 * the critical path (libseccomp probes the kernel, builds and optimises its tree). The table
 * is the same for every profile, so the program is a constant; tests/unit/test_seccomp.c
 * checks that it is byte for byte what libseccomp compiles from the table on the machine the
 * tests run on. A build without the generated file compiles at run time instead. The child
 * loads the ready program as the very last step before execve, after no_new_privs, so
 * nothing the sandbox setup itself needs (mount, pivot_root, unshare...) is refused.
 */
#define _GNU_SOURCE
#include "backends/local/seccomp.h"

#include "runtime/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* What a matching rule does. */
enum sc_action {
	SC_EPERM,  /* the call fails with EPERM, as if the caller lacked the privilege */
	SC_ENOSYS, /* the call fails with ENOSYS, as if the kernel were too old */
	SC_NOOP,   /* the call returns 0 and does nothing (SECCOMP_RET_ERRNO with errno 0) */
};

/*
 * One comparison of a syscall argument. SC_ANY_BIT, SC_ONE_OF and SC_NOT_PERSONA_OK are
 * shorthands that expand into several libseccomp rules (libseccomp ORs rules of one syscall
 * and refuses two comparisons of the same argument within one rule, so "any of these bits"
 * and "none of these values" must be spelled as several rules).
 */
enum sc_op {
	SC_NONE = 0,	   /* no condition */
	SC_EQ,		   /* arg == a */
	SC_NE,		   /* arg != a */
	SC_GE,		   /* arg >= a (64-bit, unsigned) */
	SC_MASKED_EQ,	   /* (arg & a) == b */
	SC_ANY_BIT,	   /* (arg & bit) == bit for any bit set in a */
	SC_ONE_OF,	   /* arg == i for any i < 64 whose bit is set in a */
	SC_NOT_PERSONA_OK, /* arg is neither PER_LINUX (0) nor the 0xffffffff query */
};

struct sc_cond {
	enum sc_op op;
	unsigned arg;
	uint64_t a;
	uint64_t b;
};

struct sc_rule {
	const char *name;
	int nr;		       /* x86_64 number, for syscalls newer than libseccomp; 0: none */
	enum sc_action action; /* when every condition holds */
	struct sc_cond c[3];   /* c[0] may expand; c[1] and c[2] must be plain comparisons */
	const char *why;
};

#define BIT(n) (1ULL << (n))
/* Table helpers: a comparison of argument n, and a masked one. */
#define ARG(n, o, v)                                                                               \
	{                                                                                          \
		.op = (o), .arg = (n), .a = (v)                                                    \
	}
#define ARG_MASKED(n, m, v)                                                                        \
	{                                                                                          \
		.op = SC_MASKED_EQ, .arg = (n), .a = (m), .b = (v)                                 \
	}

/* Namespace creation flags refused to clone() and unshare(). */
#define NS_FLAGS_CLONE                                                                             \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |             \
	 CLONE_NEWPID | CLONE_NEWNET)
/* CLONE_NEWTIME shares its value with the exit-signal byte of clone(), so only unshare(). */
#define NS_FLAGS_UNSHARE (NS_FLAGS_CLONE | CLONE_NEWTIME)

/*
 * Address families socket() refuses below AF_NETLINK (16): the ones between AF_INET (2) and
 * AF_INET6 (10), and 11..15 (AF_ROSE, AF_DECnet, AF_NETBEUI, AF_SECURITY, AF_KEY). Everything
 * from 17 (AF_PACKET) up is refused by a >= rule.
 */
#define EXOTIC_LOW_FAMILIES                                                                        \
	(BIT(3) | BIT(4) | BIT(5) | BIT(6) | BIT(7) | BIT(8) | BIT(9) | BIT(11) | BIT(12) |        \
	 BIT(13) | BIT(14) | BIT(15))

#define NETLINK_ROUTE_PROTO 0

/* The mode bits no file made inside may carry (see the setuid rules in the table). */
#define SETID_BITS (S_ISUID | S_ISGID)
/* open(2)'s flags that make the kernel use the mode argument (O_TMPFILE includes it). */
#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

/*
 * System calls newer than the table fail with ENOSYS, as on a kernel that does not have them
 * (a deny list alone would let every system call a newer kernel adds reach the kernel until
 * someone reviewed it). The table was reviewed against x86_64's calls up to 469, 6.17's
 * file_setattr (2026-11-26): of those past libseccomp 2.5's list, statmount, listmount and
 * the LSM attribute calls are refused below; cachestat (451), fchmodat2 (452, under the
 * setuid rule), map_shadow_stack (453), the futex2 calls (454-456), mseal (462), the
 * *xattrat calls (463-466, as the xattr calls) and file_getattr/file_setattr (468-469, as
 * their ioctls) are allowed. When a kernel adds calls, review them and raise this.
 */
#define SC_FIRST_UNREVIEWED 470

/*
 * THE TABLE. Order does not matter (libseccomp builds a decision tree per syscall). Arguments
 * the kernel declares as 32-bit (ioctl's cmd, personality, socket's family) are compared so
 * that junk in the upper 32 bits cannot slip a value past the rule: either masked to 32 bits,
 * or, for >= comparisons, any upper bit already makes the value large and refused.
 */
static const struct sc_rule rules[] = {
	/* Reading or writing another process: the classic sandbox-to-sibling escape. Inside the
	 * pid namespace the siblings are the run's own processes, but a debugger attached to a
	 * process that holds an fd or a mapping the sandbox should not use (or, with a kernel
	 * bug, to something outside) is not worth it; ptrace also had a long CVE history
	 * (CVE-2019-13272). pidfd_getfd and kcmp need the same ptrace access and copy fds or
	 * compare kernel objects of another process. */
	{ "ptrace", 0, SC_EPERM, {}, "debugging other processes (ptrace access)" },
	{ "process_vm_readv", 0, SC_EPERM, {}, "reading another process's memory" },
	{ "process_vm_writev", 0, SC_EPERM, {}, "writing another process's memory" },
	{ "process_madvise", 0, SC_EPERM, {}, "advising on another process's memory" },
	{ "pidfd_getfd", 0, SC_EPERM, {}, "stealing another process's file descriptors" },
	{ "kcmp", 0, SC_EPERM, {}, "comparing kernel objects of other processes" },

	/* Keyrings are not namespaced: a key added here is visible to the same uid's other
	 * sessions and to later runs (a cross-run channel), and keyctl has had many CVEs. */
	{ "keyctl", 0, SC_EPERM, {}, "kernel keyrings are not namespaced" },
	{ "add_key", 0, SC_EPERM, {}, "kernel keyrings are not namespaced" },
	{ "request_key", 0, SC_EPERM, {}, "kernel keyrings are not namespaced" },

	/* Large kernel attack surfaces that a shell never needs. io_uring also performs its
	 * work from kernel threads, outside of what a seccomp filter sees. */
	{ "bpf", 0, SC_EPERM, {}, "eBPF verifier and maps: kernel attack surface" },
	{ "perf_event_open", 0, SC_EPERM, {}, "perf events: kernel attack surface, side channels" },
	{ "userfaultfd", 0, SC_EPERM, {}, "stalls kernel accesses: exploit primitive for races" },
	{ "io_uring_setup", 0, SC_EPERM, {}, "io_uring bypasses seccomp, many CVEs" },
	{ "io_uring_enter", 0, SC_EPERM, {}, "io_uring bypasses seccomp, many CVEs" },
	{ "io_uring_register", 0, SC_EPERM, {}, "io_uring bypasses seccomp, many CVEs" },
	{ "syslog", 0, SC_EPERM, {}, "the kernel log leaks kernel addresses and host events" },
	{ "lookup_dcookie", 0, SC_EPERM, {}, "profiling interface, kernel attack surface" },
	{ "modify_ldt", 0, SC_EPERM, {}, "16-bit segments: old exploit vector" },
	{ "open_by_handle_at", 0, SC_EPERM, {}, "opens files by handle, bypassing mounts" },
	/* Found in review: memfd_secret maps memory the kernel itself cannot read (nothing a
	 * shell needs); fanotify, which an unprivileged caller may use since 5.13, watches the
	 * read-only binds, which are the host's own inodes: every open and exec of the host's
	 * programs and other runs' would be seen, a leak and a cross-run channel. (inotify
	 * sees the same names but file watchers need it: docs/security.md.) */
	{ "memfd_secret", 447, SC_EPERM, {}, "memory hidden from the kernel: nothing needs it" },
	{ "fanotify_init", 0, SC_EPERM, {}, "watching host files through the read-only binds" },
	{ "fanotify_mark", 0, SC_EPERM, {}, "watching host files through the read-only binds" },

	/* The mount table was set up by cordon and must stay as it is: no remounting the
	 * read-only binds read-write, no unmounting a mask to reveal what it hides. The new mount
	 * API (fsopen...) and open_tree_attr (6.15, newer than libseccomp 2.5) are the same. */
	{ "mount", 0, SC_EPERM, {}, "the mount table is fixed" },
	{ "umount2", 0, SC_EPERM, {}, "the mount table is fixed (unmasking paths)" },
	{ "pivot_root", 0, SC_EPERM, {}, "the mount table is fixed" },
	{ "move_mount", 0, SC_EPERM, {}, "the mount table is fixed" },
	{ "open_tree", 0, SC_EPERM, {}, "the mount table is fixed" },
	{ "open_tree_attr", 467, SC_EPERM, {}, "the mount table is fixed" },
	{ "fsopen", 0, SC_EPERM, {}, "the mount table is fixed" },
	/* Read-only, but new kernel code (6.8) that gives nothing /proc/self/mountinfo does not
	 * (util-linux falls back to it): refused as on an older kernel. */
	{ "statmount", 457, SC_ENOSYS, {}, "new (6.8); /proc/self/mountinfo has it" },
	{ "listmount", 458, SC_ENOSYS, {}, "new (6.8); /proc/self/mountinfo has it" },
	{ "fsconfig", 0, SC_EPERM, {}, "the mount table is fixed" },
	{ "fsmount", 0, SC_EPERM, {}, "the mount table is fixed" },
	{ "fspick", 0, SC_EPERM, {}, "the mount table is fixed" },
	{ "mount_setattr", 0, SC_EPERM, {}, "the mount table is fixed" },

	/* Namespaces. A new user namespace gives the process every capability over whatever it
	 * creates next, which opens the large part of the kernel that is only reachable with
	 * CAP_SYS_ADMIN or CAP_NET_ADMIN (netfilter, mount of odd filesystems...): most kernel
	 * LPEs of the last years start there. Without a user namespace, creating any other one
	 * needs a capability the sandbox does not have, so refusing every CLONE_NEW* costs
	 * nothing legitimate and keeps the rule simple (nested sandboxes such as bwrap or
	 * Chrome's sandbox do not work inside; run Chrome with --no-sandbox).
	 *
	 * clone3 passes its flags in a struct in memory, which seccomp cannot read: refuse it
	 * with ENOSYS, so that glibc (>= 2.34) falls back to clone(), whose flags we can check
	 * (what Docker and Flatpak do). */
	{ "clone", 0, SC_EPERM, { ARG(0, SC_ANY_BIT, NS_FLAGS_CLONE) }, "new namespaces" },
	{ "clone3", 0, SC_ENOSYS, {}, "flags unreadable by seccomp: ENOSYS makes libc use clone" },
	{ "unshare", 0, SC_EPERM, { ARG(0, SC_ANY_BIT, NS_FLAGS_UNSHARE) }, "new namespaces" },
	{ "setns", 0, SC_EPERM, {}, "joining other namespaces" },

	/* Operations on the machine itself. Most need a capability the sandbox does not have;
	 * refusing them here as well is a second wall for the day a capability leaks. */
	{ "kexec_load", 0, SC_EPERM, {}, "replacing the running kernel" },
	{ "kexec_file_load", 0, SC_EPERM, {}, "replacing the running kernel" },
	{ "init_module", 0, SC_EPERM, {}, "loading kernel modules" },
	{ "finit_module", 0, SC_EPERM, {}, "loading kernel modules" },
	{ "delete_module", 0, SC_EPERM, {}, "unloading kernel modules" },
	{ "swapon", 0, SC_EPERM, {}, "host swap configuration" },
	{ "swapoff", 0, SC_EPERM, {}, "host swap configuration" },
	{ "reboot", 0, SC_EPERM, {}, "rebooting the host" },
	{ "acct", 0, SC_EPERM, {}, "host process accounting" },
	{ "quotactl", 0, SC_EPERM, {}, "host disk quotas" },
	{ "quotactl_fd", 0, SC_EPERM, {}, "host disk quotas" },
	{ "iopl", 0, SC_EPERM, {}, "raw I/O port access" },
	{ "ioperm", 0, SC_EPERM, {}, "raw I/O port access" },
	{ "uselib", 0, SC_EPERM, {}, "obsolete a.out loader" },
	/* The LSM attribute calls (6.8): /proc/self/attr has what a program reads; new code. */
	{ "lsm_get_self_attr", 459, SC_ENOSYS, {}, "new (6.8); /proc/self/attr has it" },
	{ "lsm_set_self_attr", 460, SC_ENOSYS, {}, "new (6.8); /proc/self/attr has it" },
	{ "lsm_list_modules", 461, SC_ENOSYS, {}, "new (6.8); nothing needs it" },

	/* Setuid and setgid bits. Inside, they are inert (no_new_privs, nosuid mounts), but a file
	 * made in the workdir outlives the run on the host: under a root caller the workdir may be
	 * idmapped (docs/security.md, "Identity"), so the files the command creates there belong
	 * to root on the disk, and a `chmod u+s` of one would leave a setuid-root program for the
	 * next host user who runs it. So no call may put either bit on anything: every call that
	 * takes a mode. The kernel truncates a mode to 16 bits, and the mask has no upper bits,
	 * so junk above them changes nothing. open/openat use their mode only with O_CREAT or
	 * O_TMPFILE (the kernel ignores it otherwise, and some runtimes pass junk there), hence
	 * the second condition. openat2 carries its mode in a struct the filter cannot read: it
	 * fails with ENOSYS, as on an older kernel (glibc's open() never uses it; programs that
	 * do fall back to openat). setxattr of file capabilities needs CAP_SETFCAP, which the
	 * command never has. */
	{ "chmod", 0, SC_EPERM, { ARG(1, SC_ANY_BIT, SETID_BITS) }, "setuid/setgid bits" },
	{ "fchmod", 0, SC_EPERM, { ARG(1, SC_ANY_BIT, SETID_BITS) }, "setuid/setgid bits" },
	{ "fchmodat", 0, SC_EPERM, { ARG(2, SC_ANY_BIT, SETID_BITS) }, "setuid/setgid bits" },
	{ "fchmodat2", 452, SC_EPERM, { ARG(2, SC_ANY_BIT, SETID_BITS) }, "setuid/setgid bits" },
	{ "open",
	  0,
	  SC_EPERM,
	  { ARG(2, SC_ANY_BIT, SETID_BITS), ARG_MASKED(1, O_CREAT, O_CREAT) },
	  "setuid/setgid bits" },
	{ "open",
	  0,
	  SC_EPERM,
	  { ARG(2, SC_ANY_BIT, SETID_BITS), ARG_MASKED(1, __O_TMPFILE, __O_TMPFILE) },
	  "setuid/setgid bits" },
	{ "openat",
	  0,
	  SC_EPERM,
	  { ARG(3, SC_ANY_BIT, SETID_BITS), ARG_MASKED(2, O_CREAT, O_CREAT) },
	  "setuid/setgid bits" },
	{ "openat",
	  0,
	  SC_EPERM,
	  { ARG(3, SC_ANY_BIT, SETID_BITS), ARG_MASKED(2, __O_TMPFILE, __O_TMPFILE) },
	  "setuid/setgid bits" },
	{ "creat", 0, SC_EPERM, { ARG(1, SC_ANY_BIT, SETID_BITS) }, "setuid/setgid bits" },
	{ "mknod", 0, SC_EPERM, { ARG(1, SC_ANY_BIT, SETID_BITS) }, "setuid/setgid bits" },
	{ "mknodat", 0, SC_EPERM, { ARG(2, SC_ANY_BIT, SETID_BITS) }, "setuid/setgid bits" },
	{ "mkdir", 0, SC_EPERM, { ARG(1, SC_ANY_BIT, SETID_BITS) }, "setuid/setgid bits" },
	{ "mkdirat", 0, SC_EPERM, { ARG(2, SC_ANY_BIT, SETID_BITS) }, "setuid/setgid bits" },
	{ "openat2", 0, SC_ENOSYS, {}, "mode unreadable by seccomp: ENOSYS makes libc use openat" },

	/* Core dumps. A core_pattern that pipes to a program (systemd-coredump, apport) makes the
	 * kernel run that program as root on the host, outside every namespace and cgroup of
	 * the run, with the crashed process's memory on its stdin: code and storage of the
	 * host's, fed by the command (Debian's systemd-coredump stores the core whatever limit it
	 * is told). For a pipe the kernel ignores RLIMIT_CORE, 0 included, except for the value
	 * 1, which aborts the dump; 1 byte is also less than any core file (an ELF core needs a
	 * page). So RLIMIT_CORE is 1 (limits.c), and no process may change it: a lowering to 0
	 * would bring the pipe back. Setting it succeeds without doing anything, because
	 * sanitizers (ASan's disable_coredump, on by default) set it at start and abort when that
	 * fails; only a call that also asks for the old value (prlimit64 with both pointers),
	 * which a no-op would leave unwritten, gets EPERM. The resource is a 32-bit argument:
	 * compared masked. Found in review: a crash in the sandbox reached the host's handler. */
	{ "setrlimit",
	  0,
	  SC_NOOP,
	  { ARG_MASKED(0, 0xffffffff, RLIMIT_CORE) },
	  "core dumps stay off (RLIMIT_CORE 1)" },
	{ "prlimit64",
	  0,
	  SC_NOOP,
	  { ARG_MASKED(1, 0xffffffff, RLIMIT_CORE), ARG(2, SC_NE, 0), ARG(3, SC_EQ, 0) },
	  "core dumps stay off (RLIMIT_CORE 1)" },
	{ "prlimit64",
	  0,
	  SC_EPERM,
	  { ARG_MASKED(1, 0xffffffff, RLIMIT_CORE), ARG(2, SC_NE, 0), ARG(3, SC_NE, 0) },
	  "core dumps stay off (RLIMIT_CORE 1)" },

	/* Execution domains: PER_LINUX and the 0xffffffff query are what programs use. The
	 * other personalities switch off ASLR (ADDR_NO_RANDOMIZE), make every read mapping
	 * executable (READ_IMPLIES_EXEC) or map page zero (MMAP_PAGE_ZERO): exploit helpers. */
	{ "personality", 0, SC_EPERM, { ARG(0, SC_NOT_PERSONA_OK, 0) }, "weakening ASLR/NX" },

	/* Terminal injection: TIOCSTI pushes characters into the input queue of a terminal
	 * (CVE-2017-5226: a sandboxed program typing commands into the caller's shell) and
	 * TIOCLINUX can do the same on a virtual console. ioctl's cmd is 32-bit in the kernel,
	 * so the comparison masks the upper half: otherwise 0x100005412 passes the filter and
	 * still is TIOCSTI for the kernel (CVE-2019-10063). TIOCSETD switches line disciplines,
	 * reaching rarely used and often buggy code (n_hdlc CVE-2017-2636, n_gsm). */
	{ "ioctl", 0, SC_EPERM, { ARG_MASKED(1, 0xffffffff, TIOCSTI) }, "tty injection" },
	{ "ioctl", 0, SC_EPERM, { ARG_MASKED(1, 0xffffffff, TIOCLINUX) }, "tty injection" },
	{ "ioctl", 0, SC_EPERM, { ARG_MASKED(1, 0xffffffff, TIOCSETD) }, "line disciplines" },

	/* Sockets: AF_UNIX, AF_INET and AF_INET6 are what programs use; the network namespace
	 * decides where they reach. AF_NETLINK is kept only for NETLINK_ROUTE, which glibc's
	 * getaddrinfo(AI_ADDRCONFIG) and `ip` use (read-only without CAP_NET_ADMIN); other
	 * netlink protocols (audit, netfilter, xfrm, uevents, generic) are refused. Everything
	 * else is refused: AF_VSOCK reaches the hypervisor or other VMs past every network
	 * namespace, AF_PACKET/raw frames, AF_ALG the kernel crypto API, AF_BLUETOOTH, AF_KEY,
	 * AF_XDP... a long list of rarely used, rarely audited protocol code. */
	{ "socket",
	  0,
	  SC_EPERM,
	  { ARG(0, SC_GE, AF_NETLINK + 1) },
	  "AF_PACKET and later families" },
	{ "socket", 0, SC_EPERM, { ARG(0, SC_ONE_OF, EXOTIC_LOW_FAMILIES) }, "exotic families" },
	{ "socket",
	  0,
	  SC_EPERM,
	  { ARG(0, SC_EQ, AF_NETLINK), ARG(2, SC_NE, NETLINK_ROUTE_PROTO) },
	  "netlink other than NETLINK_ROUTE" },
	/* AF_INET and AF_INET6 with anything but the usual protocols and types: a protocol the
	 * kernel does not have built in is looked up as a module ("net-pf-2-proto-132" is
	 * SCTP), which an unprivileged socket() call makes the kernel load where modules can
	 * be loaded (SCTP, DCCP, L2TP, SMC: protocol code with a CVE history that nothing of a
	 * shell's needs, a suggestion of the sandbox review). Kept: TCP, UDP, ICMP (ping
	 * sockets) and ICMPv6 (58), by number or as 0, with SOCK_STREAM, SOCK_DGRAM and
	 * SOCK_RAW (which needs CAP_NET_RAW anyway); refused: protocols from 59 up (SCTP 132,
	 * L2TP 115, UDP-Lite 136, MPTCP 262, SMC 256, and any upper bits) and the types from
	 * SOCK_RDM (4) up (SEQPACKET is SCTP's, 6 is DCCP's; the flag bits are above 0xf). */
	{ "socket",
	  0,
	  SC_EPERM,
	  { ARG(0, SC_ONE_OF, BIT(AF_INET) | BIT(AF_INET6)), ARG(2, SC_GE, IPPROTO_ICMPV6 + 1) },
	  "IP protocols past ICMPv6: SCTP, L2TP, UDP-Lite, MPTCP, SMC (modules)" },
	{ "socket",
	  0,
	  SC_EPERM,
	  { ARG(0, SC_ONE_OF, BIT(AF_INET) | BIT(AF_INET6)), ARG_MASKED(1, 0xc, 0x4) },
	  "IP socket types 4-7: RDM, SEQPACKET (SCTP), DCCP" },
	{ "socket",
	  0,
	  SC_EPERM,
	  { ARG(0, SC_ONE_OF, BIT(AF_INET) | BIT(AF_INET6)), ARG_MASKED(1, 0x8, 0x8) },
	  "IP socket types 8-15: SOCK_PACKET and the like" },
	/* socketpair runs the family's create code before it finds that the family has no
	 * pairs (found in review: AF_VSOCK's transport, netlink audit and uevents reached that
	 * way), and only AF_UNIX has them. Junk in the upper bits is "not AF_UNIX" too. */
	{ "socketpair",
	  0,
	  SC_EPERM,
	  { ARG(0, SC_NE, AF_UNIX) },
	  "only AF_UNIX has socketpair; others run their family's code" },
};

/* Non-native ABIs (x32, i386) are not in the filter: their calls take the bad-arch action. */
static const uint32_t BADARCH_ACTION = SCMP_ACT_KILL_PROCESS;

static uint32_t sc_action_value(enum sc_action a)
{
	return a == SC_ENOSYS ? SCMP_ACT_ERRNO(ENOSYS)
	       : a == SC_NOOP ? SCMP_ACT_ERRNO(0)
			      : SCMP_ACT_ERRNO(EPERM);
}

static const char *sc_action_name(enum sc_action a)
{
	return a == SC_ENOSYS ? "ENOSYS" : a == SC_NOOP ? "NOOP" : "EPERM";
}

static int sc_resolve(const struct sc_rule *r)
{
	int nr = seccomp_syscall_resolve_name(r->name);

	if (nr == __NR_SCMP_ERROR && r->nr > 0) {
#ifdef __x86_64__
		nr = r->nr;
#endif
	}
	return nr;
}

static struct scmp_arg_cmp sc_plain(const struct sc_cond *c)
{
	switch (c->op) {
	case SC_EQ:
		return SCMP_CMP(c->arg, SCMP_CMP_EQ, c->a);
	case SC_NE:
		return SCMP_CMP(c->arg, SCMP_CMP_NE, c->a);
	case SC_GE:
		return SCMP_CMP(c->arg, SCMP_CMP_GE, c->a);
	case SC_MASKED_EQ:
	default:
		return SCMP_CMP(c->arg, SCMP_CMP_MASKED_EQ, c->a, c->b);
	}
}

static int sc_add(scmp_filter_ctx ctx, const struct sc_rule *r, int nr, struct scmp_arg_cmp *cmp,
		  unsigned n, cordon_error *e)
{
	int rc = seccomp_rule_add_exact_array(ctx, sc_action_value(r->action), nr, n, cmp);

	if (rc < 0)
		return cordon_err(e, -rc, "seccomp: add rule for %s", r->name);
	return 0;
}

/* Add one table line, expanding the shorthand conditions into several libseccomp rules. */
static int sc_add_rule(scmp_filter_ctx ctx, const struct sc_rule *r, cordon_error *e)
{
	struct scmp_arg_cmp cmp[ARRAY_SIZE(r->c)];
	const struct sc_cond *c0 = &r->c[0];
	unsigned n = 0, extra = 0;
	int nr = sc_resolve(r);

	if (nr == __NR_SCMP_ERROR)
		return cordon_err(e, ENOSYS, "seccomp: unknown syscall %s", r->name);
	/* The plain comparisons after the first, in cmp[1...]. */
	for (size_t i = 1; i < ARRAY_SIZE(r->c) && r->c[i].op != SC_NONE; i++)
		cmp[++extra] = sc_plain(&r->c[i]);

	switch (c0->op) {
	case SC_NONE:
		return sc_add(ctx, r, nr, NULL, 0, e);
	case SC_ANY_BIT:
		for (unsigned b = 0; b < 64; b++) {
			if (!(c0->a & BIT(b)))
				continue;
			cmp[0] = SCMP_CMP(c0->arg, SCMP_CMP_MASKED_EQ, BIT(b), BIT(b));
			if (sc_add(ctx, r, nr, cmp, 1 + extra, e) < 0)
				return -1;
		}
		return 0;
	case SC_ONE_OF:
		for (unsigned v = 0; v < 64; v++) {
			if (!(c0->a & BIT(v)))
				continue;
			cmp[0] = SCMP_CMP(c0->arg, SCMP_CMP_EQ, (uint64_t)v);
			if (sc_add(ctx, r, nr, cmp, 1 + extra, e) < 0)
				return -1;
		}
		return 0;
	case SC_NOT_PERSONA_OK:
		/*
		 * "arg is neither 0 nor 0xffffffff" without two comparisons on one argument:
		 * any bit above 31 set (the kernel would truncate it: refuse the ambiguity), or,
		 * within the low 32 bits, some bit i set while bit i+1 (cyclically) is clear.
		 * A 32-bit value has such a "10" pair exactly when it is neither all zeros nor
		 * all ones, so these 33 rules refuse precisely everything but the two values.
		 */
		cmp[0] = SCMP_CMP(c0->arg, SCMP_CMP_GE, 0x100000000ULL);
		if (sc_add(ctx, r, nr, cmp, 1 + extra, e) < 0)
			return -1;
		for (unsigned b = 0; b < 32; b++) {
			uint64_t lo = BIT(b), hi = BIT((b + 1) % 32);

			cmp[0] = SCMP_CMP(c0->arg, SCMP_CMP_MASKED_EQ, lo | hi, lo);
			if (sc_add(ctx, r, nr, cmp, 1 + extra, e) < 0)
				return -1;
		}
		return 0;
	default:
		cmp[n++] = sc_plain(c0);
		return sc_add(ctx, r, nr, cmp, n + extra, e);
	}
}

static void seccomp_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

/* libseccomp 2.5 can only export to an fd; 2.6 added an in-memory export. */
static int sc_export(scmp_filter_ctx ctx, struct sock_fprog **ret, cordon_error *e)
{
	_cleanup_free_ struct sock_fprog *prog = NULL;
	size_t len;
	int rc;

#if SCMP_VER_MAJOR > 2 || (SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR >= 6)
	len = 0;
	rc = seccomp_export_bpf_mem(ctx, NULL, &len);
	if (rc < 0)
		return cordon_err(e, -rc, "seccomp: export size");
	if (len == 0 || len % sizeof(struct sock_filter) != 0)
		return cordon_err(e, EINVAL, "seccomp: exported program of %zu bytes", len);
	prog = malloc(sizeof(*prog) + len);
	if (!prog)
		return cordon_err(e, ENOMEM, "seccomp: program");
	prog->filter = (struct sock_filter *)(prog + 1);
	rc = seccomp_export_bpf_mem(ctx, prog->filter, &len);
	if (rc < 0)
		return cordon_err(e, -rc, "seccomp: export");
#else
	_cleanup_close_ int fd = memfd_create("cordon-seccomp", MFD_CLOEXEC);
	struct stat st;
	size_t got = 0;

	if (fd < 0)
		return cordon_err(e, errno, "seccomp: memfd for export");
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		return cordon_err(e, -rc, "seccomp: export");
	if (fstat(fd, &st) < 0)
		return cordon_err(e, errno, "seccomp: stat exported program");
	len = (size_t)st.st_size;
	if (len == 0 || len % sizeof(struct sock_filter) != 0)
		return cordon_err(e, EINVAL, "seccomp: exported program of %zu bytes", len);
	prog = malloc(sizeof(*prog) + len);
	if (!prog)
		return cordon_err(e, ENOMEM, "seccomp: program");
	prog->filter = (struct sock_filter *)(prog + 1);
	while (got < len) {
		ssize_t k = pread(fd, (char *)prog->filter + got, len - got, (off_t)got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return cordon_err(e, k < 0 ? errno : EIO, "seccomp: read exported program");
		got += (size_t)k;
	}
#endif
	if (len / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return cordon_err(e, E2BIG, "seccomp: program of %zu instructions",
				  len / sizeof(struct sock_filter));
	prog->len = (unsigned short)(len / sizeof(struct sock_filter));
	*ret = TAKE_PTR(prog);
	return 0;
}

/*
 * "nr >= SC_FIRST_UNREVIEWED: ENOSYS", which libseccomp cannot say (its rules name single
 * calls), as a prefix of our own in front of its program. For the native ABI with a number
 * below the x32 bit, a number past the table returns ENOSYS; everything else (another ABI,
 * x32, the table's calls) falls through to libseccomp's program, which starts over with its
 * own checks and is left exactly as it made it: nothing in it jumps into the prefix, and the
 * prefix jumps only to its own return or to the program's first instruction.
 */
static int sc_prefix_unreviewed(struct sock_fprog **progp, cordon_error *e)
{
#ifdef __x86_64__
	static const struct sock_filter pre[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 4), /* else: program */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 2, 0), /* x32: program */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, SC_FIRST_UNREVIEWED, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		/* the program */
	};
	struct sock_fprog *old = *progp, *prog;
	size_t n = ARRAY_SIZE(pre) + old->len;

	prog = n <= BPF_MAXINSNS ? malloc(sizeof(*prog) + n * sizeof(struct sock_filter)) : NULL;
	if (!prog) {
		free(TAKE_PTR(*progp));
		return n > BPF_MAXINSNS
			       ? cordon_err(e, E2BIG, "seccomp: program of %zu instructions", n)
			       : cordon_err(e, ENOMEM, "seccomp: program");
	}
	prog->filter = (struct sock_filter *)(prog + 1);
	memcpy(prog->filter, pre, sizeof(pre));
	memcpy(prog->filter + ARRAY_SIZE(pre), old->filter, old->len * sizeof(*old->filter));
	prog->len = (unsigned short)n;
	free(old);
	*progp = prog;
#else
	(void)progp;
	(void)e;
#endif
	return 0;
}

int seccomp_prog_build(const struct cordon_profile *p, struct sock_fprog **ret, cordon_error *e)
{
	__attribute__((cleanup(seccomp_releasep))) scmp_filter_ctx ctx = NULL;
	int rc;

	(void)p; /* one table for every profile today; the hook for per-profile additions */

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return cordon_err(e, ENOMEM, "seccomp: init");

	/*
	 * Only the native ABI is in the filter. A process can still enter the kernel through
	 * the i386 (int 0x80) and x32 (syscall number | 0x40000000) ABIs, where every syscall
	 * has another number and our rules would not apply: kill the process instead
	 * (firejail's block-secondary, systemd's SystemCallArchitectures=native). For x32,
	 * which shares AUDIT_ARCH_X86_64, libseccomp emits its own "nr >= 0x40000000" check
	 * that takes this same action; tests/unit/test_seccomp.c checks that it does.
	 */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, BADARCH_ACTION);
	if (rc < 0)
		return cordon_err(e, -rc, "seccomp: set bad-arch action");
	/* We load the program ourselves; the caller has set no_new_privs already. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (rc < 0)
		return cordon_err(e, -rc, "seccomp: clear NNP attribute");
	/*
	 * A binary search on the syscall number rather than one comparison after the other.
	 * Loading the filter is where this counts: the kernel runs the program once for every
	 * syscall number to fill its cache of always-allowed calls (seccomp_cache_prepare), with
	 * interrupts off, on the start's path. With the linear chain that took about 0.1 ms;
	 * each syscall of the command is decided in fewer steps too.
	 */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0)
		return cordon_err(e, -rc, "seccomp: binary tree optimization");

	for (size_t i = 0; i < ARRAY_SIZE(rules); i++)
		if (sc_add_rule(ctx, &rules[i], e) < 0)
			return -1;

	if (sc_export(ctx, ret, e) < 0)
		return -1;
	return sc_prefix_unreviewed(ret, e);
}

#ifdef CORDON_SECCOMP_PREBUILT
/* static const struct sock_filter seccomp_prebuilt[] = { ... }; */
#include CORDON_SECCOMP_PREBUILT

bool seccomp_prog_prebuilt(void)
{
	return true;
}

int seccomp_prog_compile(const struct cordon_profile *p, struct sock_fprog **ret, cordon_error *e)
{
	struct sock_fprog *prog;

	(void)p; /* a profile that changed the table would have to be built at run time */
	_Static_assert(ARRAY_SIZE(seccomp_prebuilt) <= BPF_MAXINSNS, "seccomp program too long");
	prog = malloc(sizeof(*prog) + sizeof(seccomp_prebuilt));
	if (!prog)
		return cordon_err(e, ENOMEM, "seccomp: program");
	prog->filter = (struct sock_filter *)(prog + 1);
	memcpy(prog->filter, seccomp_prebuilt, sizeof(seccomp_prebuilt));
	prog->len = (unsigned short)ARRAY_SIZE(seccomp_prebuilt);
	*ret = prog;
	return 0;
}
#else
bool seccomp_prog_prebuilt(void)
{
	return false;
}

int seccomp_prog_compile(const struct cordon_profile *p, struct sock_fprog **ret, cordon_error *e)
{
	return seccomp_prog_build(p, ret, e);
}
#endif

void seccomp_prog_free(struct sock_fprog *prog)
{
	free(prog); /* the instructions live in the same allocation */
}

int seccomp_prog_load(const struct sock_fprog *prog)
{
	/*
	 * The raw syscall, not seccomp_load(): no allocation, nothing but the kernel call, so it
	 * is safe after fork in a multi-threaded parent. No TSYNC: the child is single-threaded.
	 * The kernel refuses (EACCES) unless no_new_privs is set or we hold CAP_SYS_ADMIN; the
	 * caller sets no_new_privs first, so the filter can never be shed by exec'ing a setuid
	 * binary.
	 */
	if (!prog || !prog->filter || prog->len == 0)
		return -EINVAL;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
		return -errno;
	return 0;
}

static int sc_format_cond(char *buf, size_t n, const struct sc_cond *c)
{
	switch (c->op) {
	case SC_EQ:
		return snprintf(buf, n, "arg%u == %#llx", c->arg, (unsigned long long)c->a);
	case SC_NE:
		return snprintf(buf, n, "arg%u != %#llx", c->arg, (unsigned long long)c->a);
	case SC_GE:
		return snprintf(buf, n, "arg%u >= %llu", c->arg, (unsigned long long)c->a);
	case SC_MASKED_EQ:
		return snprintf(buf, n, "arg%u & %#llx == %#llx", c->arg, (unsigned long long)c->a,
				(unsigned long long)c->b);
	case SC_ANY_BIT:
		return snprintf(buf, n, "arg%u has any of %#llx", c->arg, (unsigned long long)c->a);
	case SC_ONE_OF: {
		int k = snprintf(buf, n, "arg%u in {", c->arg);
		bool first = true;

		for (unsigned v = 0; v < 64 && k > 0 && (size_t)k < n; v++) {
			if (!(c->a & BIT(v)))
				continue;
			k += snprintf(buf + k, n - (size_t)k, first ? "%u" : ",%u", v);
			first = false;
		}
		if (k > 0 && (size_t)k < n)
			k += snprintf(buf + k, n - (size_t)k, "}");
		return k;
	}
	case SC_NOT_PERSONA_OK:
		return snprintf(buf, n, "arg%u not in {0, 0xffffffff}", c->arg);
	case SC_NONE:
	default:
		return snprintf(buf, n, "always");
	}
}

int seccomp_describe(char ***ret_lines, cordon_error *e)
{
#ifdef __x86_64__
	size_t n = ARRAY_SIZE(rules) + 2; /* the bad-ABI line and the cut-off's */
#else
	size_t n = ARRAY_SIZE(rules) + 1;
#endif
	char **lines = calloc(n + 1, sizeof(*lines));

	if (!lines)
		return cordon_err(e, ENOMEM, "seccomp: describe");
	for (size_t i = 0; i < ARRAY_SIZE(rules); i++) {
		const struct sc_rule *r = &rules[i];
		char c0[160], c1[160] = "";

		sc_format_cond(c0, sizeof(c0), &r->c[0]);
		for (size_t j = 1; j < ARRAY_SIZE(r->c) && r->c[j].op != SC_NONE; j++) {
			size_t k = strlen(c1);

			if (sizeof(c1) - k < 8)
				break;
			memcpy(c1 + k, " && ", 5);
			k += 4;
			sc_format_cond(c1 + k, sizeof(c1) - k, &r->c[j]);
		}
		if (asprintf(&lines[i], "%s %s %s%s (%s)", r->name, sc_action_name(r->action), c0,
			     c1, r->why) < 0) {
			lines[i] = NULL;
			goto fail;
		}
	}
	if (asprintf(&lines[ARRAY_SIZE(rules)], "* KILL_PROCESS non-native ABIs (x32, i386)") < 0) {
		lines[ARRAY_SIZE(rules)] = NULL;
		goto fail;
	}
#ifdef __x86_64__
	if (asprintf(&lines[n - 1], "* ENOSYS nr >= %d (newer than this table)",
		     SC_FIRST_UNREVIEWED) < 0) {
		lines[n - 1] = NULL;
		goto fail;
	}
#endif
	*ret_lines = lines;
	return 0;
fail:
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	return cordon_err(e, ENOMEM, "seccomp: describe");
}
