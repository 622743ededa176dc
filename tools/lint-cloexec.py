#!/usr/bin/env python3
"""Every file descriptor cordon makes is close-on-exec from its birth.

cordond is multi-threaded and starts processes (its runners, the sandboxes, the Docker agent):
a descriptor made without O_CLOEXEC by one thread, in the instant before another thread's
fork and exec, is inherited by that program. The sandbox marks every descriptor but its three
close-on-exec before the command's execve (close_range), which is the backstop; this check
keeps the rule itself, so no inherited descriptor depends on the backstop alone.

For each call below in the C sources given, the flag that makes the new descriptor
close-on-exec must appear among the call's arguments (a call may span lines); recvmsg()
needs MSG_CMSG_CLOEXEC, for the descriptors SCM_RIGHTS brings. dup(), dup2(), F_DUPFD,
mkstemp(), tmpfile(), creat() and openpty() are refused outright (each names its close-on-exec
twin), fcntl(F_SETFD) must set FD_CLOEXEC (not clear it: ~FD_CLOEXEC), ioctl(FIONCLEX) is
refused, and fopen(), freopen() and popen() need "e" in their mode. Through syscall(2) the same
rules hold, whether the call is named SYS_x or __NR_x: a refused call is refused there too.
A call that must make an inheritable descriptor says so on its line: /* lint: inherit */; so
does a wrapper that passes its caller's flags on (/* lint: wrapper */), whose callers are
checked by its name (sys_openat2, sys_open_tree).

Prints one line per offence (file:line: what) and exits 1 if there is any; 0 otherwise.
"""
import re
import sys

NEEDS = {
    "open": "O_CLOEXEC",
    "openat": "O_CLOEXEC",
    "sys_openat2": "O_CLOEXEC",
    "sys_open_tree": "OPEN_TREE_CLOEXEC",
    "pipe2": "O_CLOEXEC",
    "socket": "SOCK_CLOEXEC",
    "socketpair": "SOCK_CLOEXEC",
    "accept4": "SOCK_CLOEXEC",
    # Descriptors passed over a socket (SCM_RIGHTS) arrive inheritable without this flag.
    "recvmsg": "MSG_CMSG_CLOEXEC",
    "recvmmsg": "MSG_CMSG_CLOEXEC",
    "dup3": "O_CLOEXEC",
    "mkostemp": "O_CLOEXEC",
    "mkostemps": "O_CLOEXEC",
    "posix_openpt": "O_CLOEXEC",
    "fanotify_init": "FAN_CLOEXEC",
    "memfd_create": "MFD_CLOEXEC",
    "eventfd": "EFD_CLOEXEC",
    "signalfd": "SFD_CLOEXEC",
    "timerfd_create": "TFD_CLOEXEC",
    "epoll_create1": "EPOLL_CLOEXEC",
    "inotify_init1": "IN_CLOEXEC",
    "open_tree": "OPEN_TREE_CLOEXEC",
    "fsopen": "FSOPEN_CLOEXEC",
    "fsmount": "FSMOUNT_CLOEXEC",
    "fspick": "FSPICK_CLOEXEC",
    "open_by_handle_at": "O_CLOEXEC",
    "userfaultfd": "O_CLOEXEC",
    "perf_event_open": "PERF_FLAG_FD_CLOEXEC",
}
BANNED = {
    "dup": "dup() makes an inheritable copy: fcntl(fd, F_DUPFD_CLOEXEC, 0)",
    "dup2": "dup2() makes an inheritable copy: dup3(old, new, O_CLOEXEC), or a child's stdio marked /* lint: inherit */",
    "mkstemp": "mkstemp() makes an inheritable file: mkostemp(tmpl, O_CLOEXEC)",
    "mkstemps": "mkstemps() makes an inheritable file: mkostemps(tmpl, n, O_CLOEXEC)",
    "tmpfile": "tmpfile() makes an inheritable file: open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC)",
    "creat": "creat() makes an inheritable file: open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC)",
    "openpty": "openpty() makes inheritable ends: posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)",
    "pipe": "pipe() makes inheritable ends: pipe2(fds, O_CLOEXEC)",
    "accept": "accept() makes an inheritable socket: accept4(..., SOCK_CLOEXEC)",
    "epoll_create": "epoll_create(): epoll_create1(EPOLL_CLOEXEC)",
    "inotify_init": "inotify_init(): inotify_init1(IN_CLOEXEC)",
}
# The same calls made through syscall(2): its first argument names them, as SYS_x or __NR_x;
# some have a kernel name of their own (the flags-taking eventfd2 and signalfd4).
SYSCALL_NEEDS = {k: v for k, v in NEEDS.items() if not k.startswith("sys_")}
SYSCALL_NEEDS.update({"eventfd2": "EFD_CLOEXEC", "signalfd4": "SFD_CLOEXEC"})
SYSCALLS = {pre + k: v for k, v in SYSCALL_NEEDS.items() for pre in ("SYS_", "__NR_")}
# The refused ones there (SYS_eventfd and SYS_signalfd take no flags at all).
BANNED_SYSCALLS = dict(BANNED, eventfd="eventfd (the syscall) takes no flags: SYS_eventfd2 with EFD_CLOEXEC",
                       signalfd="signalfd (the syscall) takes no flags: SYS_signalfd4 with SFD_CLOEXEC")
BANNED_SYSCALLS = {pre + k: v for k, v in BANNED_SYSCALLS.items() for pre in ("SYS_", "__NR_")}
MODE_E = {"fopen", "freopen", "popen"}
CALL = re.compile(r"(?<![\w.>])(" + "|".join(sorted(set(NEEDS) | set(BANNED) | MODE_E | {"fcntl", "ioctl", "syscall"},
                                                    key=len, reverse=True)) + r")\s*\(")
# openat2's flags travel in a struct open_how: each initialised one must say O_CLOEXEC.
HOW = re.compile(r"struct\s+open_how\s+\w+\s*=\s*\{")


def strip(src):
    """The source with comments and string literals blanked (lengths and newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def args_of(text, start):
    """The text between the '(' at start and its matching ')'."""
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:j]
    return text[start + 1:]


def check(path):
    src = open(path, encoding="utf-8").read()
    code = strip(src)
    lines = src.split("\n")
    bad = []
    for m in CALL.finditer(code):
        name = m.group(1)
        line = code.count("\n", 0, m.start()) + 1
        if re.search(r"lint: (inherit|wrapper)", lines[line - 1]):
            continue
        # A declaration or definition of a function of that name is not a call.
        before = code[max(0, code.rfind("\n", 0, m.start())):m.start()]
        if re.search(r"\b(int|static|ssize_t|FILE|long)\s*\**\s*$", before):
            continue
        args = args_of(code, m.end() - 1)
        raw = args_of(src, m.end() - 1)
        if name in BANNED:
            bad.append(f"{path}:{line}: {BANNED[name]}")
        elif name == "syscall":
            first = args.split(",")[0].strip()
            if first in BANNED_SYSCALLS:
                bad.append(f"{path}:{line}: syscall({first}): {BANNED_SYSCALLS[first]}")
            elif first in SYSCALLS and SYSCALLS[first] not in args:
                bad.append(f"{path}:{line}: syscall({first}) without {SYSCALLS[first]}")
        elif name == "fcntl":
            if re.search(r"\bF_DUPFD\b", args):
                bad.append(f"{path}:{line}: F_DUPFD makes an inheritable copy: F_DUPFD_CLOEXEC")
            elif re.search(r"\bF_SETFD\b", args) and (
                    not re.search(r"\bFD_CLOEXEC\b", args) or re.search(r"~\s*\(?\s*FD_CLOEXEC\b", args)):
                bad.append(f"{path}:{line}: F_SETFD without FD_CLOEXEC makes the descriptor inheritable")
        elif name == "ioctl":
            if re.search(r"\bFIONCLEX\b", args):
                bad.append(f"{path}:{line}: ioctl(FIONCLEX) makes the descriptor inheritable")
        elif name in MODE_E:
            # The mode is the last argument but for freopen's (its middle one).
            mode = re.search(r",\s*\"([^\"]*)\"\s*(,[^,]*)?$" if name == "freopen"
                             else r",\s*\"([^\"]*)\"\s*$", raw)
            if not mode or "e" not in mode.group(1):
                bad.append(f"{path}:{line}: {name}() without \"e\" in its mode")
        elif NEEDS[name] not in args:
            bad.append(f"{path}:{line}: {name}() without {NEEDS[name]}")
    for m in HOW.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        end = code.find("}", m.end())
        if "O_CLOEXEC" not in code[m.end():end] and not re.search(r"lint: (inherit|wrapper)", lines[line - 1]):
            bad.append(f"{path}:{line}: struct open_how without O_CLOEXEC in its flags")
    return bad


def main(paths):
    bad = []
    for p in paths:
        bad += check(p)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
