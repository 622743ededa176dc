"""AG2's sandbox environments (`autogen.beta.tools.sandbox`), backed by cordond sessions.

    from autogen.beta.tools import SandboxShellTool
    from cordon import CordonEnvironment
    shell = SandboxShellTool(CordonEnvironment())

AG2 asks of an environment `open(context=None)`, an async context manager that yields a
sandbox; of the sandbox: `workdir`, `host_workdir`, `supported_languages`, `async exec(argv, *,
env=None, timeout=None)` returning an `ExecResult(output, exit_code)`, `stream`, `put_file`,
`get_file`, `remove_file` and `aclose`. This module provides all of it. When AG2 is importable
its own types are used (`_ag2.py`): `ExecResult` is AG2's, the environment is an AG2
`SingletonFactory` (so AG2 reports and filters against the real host workdir, as for its own
`LocalEnvironment`) and the sandbox an AG2 `LocalSandbox` (AG2's `run_sync` calls its
`exec_sync`). Without AG2 nothing here needs it.

Like AG2's environments, one sandbox (one cordond session, a persistent workdir) is created on
first use and reused by every open(), so files persist between tool calls; aclose() tears it
down. `copy.deepcopy` returns the environment itself, as AG2's Docker and Daytona environments
do (AG2's Agent deep-copies its tools).
"""

import ast
import asyncio
import atexit
import contextlib
import errno
import os
import posixpath
import re
import shutil
import stat
import tempfile
import threading
import weakref
from pathlib import Path, PurePosixPath
from typing import Any, AsyncIterator, Dict, Mapping, Optional, Sequence, Tuple, Union

from ._ag2 import ExecResult, LocalSandbox, SingletonFactory
from .client import Cordon, CordonError, CordonSessionGone, Session

# Variables cordond sets to the identity the command really runs as (the caller, or for root
# the workdir's owner or nobody): the caller's own values are not passed over them.
_IDENTITY_VARS = ("USER", "LOGNAME", "HOME")


def _sendable(s: str) -> bool:
    """Whether an inherited variable's name or value can go to cordond: JSON carries UTF-8
    text, so neither bytes that are not UTF-8 (os.environ's surrogate escapes) nor NUL."""
    if "\0" in s:
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class CordonPathError(CordonError, ValueError):
    """A file path that is absolute or escapes the sandbox's workdir: a ValueError, with AG2's
    LocalSandbox wording, and a CordonError (status 400)."""

    def __init__(self, message: str):
        CordonError.__init__(self, 400, message)
        self.args = (message,)

    def __str__(self) -> str:
        return self.message


# cordon's result for an exec that failed (backends/local/local.c): AG2's LocalSandbox makes
# it of FileNotFoundError only; subprocess's other OSErrors escape.
_EXEC_FAILED = re.compile(r"Command not found: \[Errno (\d+)\] ([^:\n]+): ('.*'|\".*\")", re.S)


def _unformat(result: Mapping[str, Any], refusal_exit_code: int) -> Any:
    """cordond's `output` is AG2's *formatted* string; a Sandbox returns the raw output and the
    exit code, and AG2's adapter formats. Undo the `[exit code: N]` suffix (AG2 section 2).

    A refusal by cordon's own policy is returned with `refusal_exit_code` (0 by default), so
    that AG2's adapter shows it bare, exactly as it shows its own refusals."""
    out: str = result["output"]
    code = int(result["exit_code"])
    if result.get("refused") is not None:
        return ExecResult(result["refused"], refusal_exit_code)
    if code != 0:
        suffix = f"[exit code: {code}]"
        if out == suffix:
            out = ""
        elif out.endswith("\n" + suffix):
            out = out[: -len(suffix) - 1]
    if code == 127 and not result.get("stdout_bytes") and not result.get("stderr_bytes"):
        # No output, so this text is cordon's, not the command's.
        m = _EXEC_FAILED.fullmatch(out)
        if m and int(m.group(1)) != errno.ENOENT:
            raise OSError(int(m.group(1)), m.group(2), ast.literal_eval(m.group(3)))
    return ExecResult(out, code)


def _workdir_path(path: Union[str, "os.PathLike[str]"], host: Optional[Path]) -> str:
    """AG2's LocalSandbox rule for put_file/get_file/remove_file paths: absolute paths are
    refused, and so is anything that resolves (symlinks followed) outside the workdir. A
    relative path that stays inside is normalised (`a/../b` is `b`), as AG2 accepts it."""
    p = PurePosixPath(os.fspath(path))
    if p.is_absolute():
        raise CordonPathError(f"Absolute paths are not allowed in put_file/get_file: {p}")
    norm = posixpath.normpath(str(p))
    if norm == ".." or norm.startswith("../"):
        raise CordonPathError(f"Path escapes sandbox workdir: {p}")
    p = PurePosixPath(norm)
    if host is not None:
        resolved = (host / Path(*p.parts)).resolve()
        if not resolved.is_relative_to(host.resolve()):
            raise CordonPathError(f"Path escapes sandbox workdir: {p}")
    elif ".." in p.parts:
        raise CordonPathError(f"Path escapes sandbox workdir: {p}")
    return str(p)


def _daemon_path_error(e: CordonError, p: str, host: Optional[Path] = None) -> Exception:
    """cordond's refusal of a path, as the exception AG2's LocalSandbox raises for it."""
    m = e.message
    if e.status == 414 or (e.status == 400 and m.startswith("path: too long")):
        return OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), p)
    if e.status != 400 or not m.startswith("path:"):
        return e
    # cordond's own containment check (outside the workdir): AG2's words.
    if ("leads outside" in m or "'..' is not allowed" in m or "absolute paths" in m):
        return CordonPathError(f"Path escapes sandbox workdir: {p}")
    if "is a directory" in m or "Is a directory" in m or (
        "is not a regular file" in m and host is not None and (host / p).is_dir()
    ):
        return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), p)
    if "Not a directory" in m:
        return NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), p)
    if "control characters" in m or m.startswith("path: empty") or "components" in m:
        return ValueError(m)
    return e


def _drop_session(socket: str, session_id: str, pid: int) -> None:
    """A sandbox's session when the sandbox was dropped unclosed (weakref.finalize): deleted on
    a connection of its own, since the garbage collector may run this in the middle of another
    request of the same thread. Best effort, as at exit. Only in the process that made the
    session: a child after fork() that exits runs the finalizers too."""
    if os.getpid() != pid:
        return
    try:
        c = Cordon(socket)
        try:
            c.request("DELETE", f"/v1/sessions/{session_id}")
        finally:
            c.close()
    except Exception:
        pass


class CordonSandbox(LocalSandbox):
    """One cordond session, as an AG2 Sandbox (async) with sync twins for plain scripts.

    The session is made on first use (a run or a file), as AG2's LocalSandbox makes its workdir
    on first use: code that makes sandboxes and never uses or closes them (AG2's own tests make
    dozens) holds no session. A sandbox dropped without close() has its session deleted when it
    is garbage-collected, so unclosed sandboxes do not pile up against cordond's per-caller
    session limit."""

    def __init__(self, environment: "CordonEnvironment", session: Optional[Session] = None):
        self._env = environment
        self._session_obj = session
        self._finalizer: Optional[Any] = None
        self._closed = False
        if session is not None:
            self._watch(session)

    def _watch(self, session: Session) -> None:
        self._finalizer = weakref.finalize(
            self, _drop_session, session.client.socket, session.id, session.pid
        )
        # A caller that keeps the Session (sandbox.session) keeps its sandbox, and so the
        # session itself, alive: the finalizer runs only when neither is reachable.
        session._sandbox = self  # type: ignore[attr-defined]

    @property
    def _session(self) -> Session:
        s = self._session_obj
        if s is None:
            self._check_open()
            with self._env._lock:
                s = self._session_obj
                if s is None:
                    s = self._session_obj = self._env._new_session()
                    self._watch(s)
        return s

    def __deepcopy__(self, memo: Dict[int, Any]) -> "CordonSandbox":
        return self

    # ---- the protocol ----

    @property
    def workdir(self) -> PurePosixPath:
        if self._session_obj is None:
            local = self._env._local_workdir()
            if local is not None:
                return PurePosixPath(local)
        return PurePosixPath(self._session.workdir)

    @property
    def host_workdir(self) -> Optional[Path]:
        # The local backend's session workdir is a directory on this host (cordond runs here);
        # a container backend's is inside the container unless cordond names a host side.
        if self._session_obj is None:
            local = self._env._local_workdir()
            if local is not None:
                return Path(local)
        host = self._session.host_workdir
        return Path(host) if host else None

    @property
    def supported_languages(self) -> Tuple[str, ...]:
        return self._env.languages

    @property
    def session(self) -> Session:
        return self._session

    async def __aenter__(self) -> "CordonSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self._env._sandbox_name} has been closed.")

    def exec_sync(
        self,
        argv: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> Any:
        self._check_open()
        argv = list(argv)
        if not argv:
            return ExecResult("", 2)
        merged: Dict[str, str] = {}
        if self._env.inherits_env():
            # AG2 hands the command {**os.environ, **extra}; cordond cannot see the caller's
            # environment, so the client sends it (minus the identity variables cordond sets).
            merged.update(
                (k, v)
                for k, v in os.environ.items()
                if k not in _IDENTITY_VARS and _sendable(k) and _sendable(v)
            )
        # subprocess takes path-like objects and bytes too (os.fsencode's TypeError else).
        for extra in (self._env.env_vars or {}, env or {}):
            merged.update((os.fsdecode(k), os.fsdecode(v)) for k, v in extra.items())
        argv = [os.fsdecode(a) for a in argv]
        # What AG2's subprocess.run refuses (and AG2 lets escape), in its order.
        if any("=" in k for k in merged):
            raise ValueError("illegal environment variable name")
        if any("\0" in s for s in argv) or any("\0" in k or "\0" in v for k, v in merged.items()):
            raise ValueError("embedded null byte")
        t = timeout if timeout is not None else self._env.timeout
        if t is not None and t <= 0:
            # AG2 checks only the constructor's timeout; a per-call one <= 0 reaches
            # subprocess.run, which times out at once. cordond refuses it, so the result is
            # made here, and nothing runs.
            what = "Execution" if self._env.backend in ("docker", "daytona") else "Command"
            return ExecResult(f"{what} timed out after {t}s", 124)
        kw: Dict[str, Any] = {}
        if merged:
            kw["env"] = merged
        if t is not None:
            kw["timeout"] = t
        if self._env.max_output is not None:
            kw["max_output"] = self._env.max_output
        return _unformat(self._session.run_json(argv, **kw), self._env.refusal_exit_code)

    async def exec(
        self,
        argv: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> Any:
        return await asyncio.to_thread(self.exec_sync, argv, env=env, timeout=timeout)

    async def stream(
        self,
        argv: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> AsyncIterator[bytes]:
        """AG2's Sandbox.stream: cordond answers once a run is over, so the whole output is
        yielded once at the end (AG2's SandboxBase default for backends without streaming)."""
        result = await self.exec(argv, env=env, timeout=timeout)
        if result.output:
            yield result.output.encode()

    def put_file_sync(self, path: Union[str, PurePosixPath], content: Union[bytes, str]) -> None:
        self._check_open()
        p = _workdir_path(path, self.host_workdir)
        try:
            self._session.put_file(p, content)
        except CordonError as e:
            raise _daemon_path_error(e, p, self.host_workdir) from e

    async def put_file(self, path: Union[str, PurePosixPath], content: Union[bytes, str]) -> None:
        await asyncio.to_thread(self.put_file_sync, path, content)

    def get_file_sync(self, path: Union[str, PurePosixPath]) -> bytes:
        self._check_open()
        p = _workdir_path(path, self.host_workdir)
        try:
            return self._session.get_file(p)
        except CordonError as e:
            if e.status == 404 and not isinstance(e, CordonSessionGone):
                # As AG2's LocalSandbox (Path.read_bytes) reports a missing file.
                raise FileNotFoundError(2, "No such file or directory", p) from e
            raise _daemon_path_error(e, p, self.host_workdir) from e

    async def get_file(self, path: Union[str, PurePosixPath]) -> bytes:
        return await asyncio.to_thread(self.get_file_sync, path)

    def remove_file_sync(self, path: Union[str, PurePosixPath]) -> None:
        self._check_open()
        p = _workdir_path(path, self.host_workdir)
        try:
            self._session.remove_file(p, missing_ok=True)
        except CordonError as e:
            raise _daemon_path_error(e, p, self.host_workdir) from e

    async def remove_file(self, path: Union[str, PurePosixPath]) -> None:
        await asyncio.to_thread(self.remove_file_sync, path)

    def close(self) -> None:
        """Delete the session (idempotent); with `cleanup`, remove the workdir too."""
        if self._closed:
            return
        self._closed = True
        self._env._forget(self)
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._session_obj is not None:
            self._session_obj.close()
        self._env._cleanup_workdir()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # ---- convenience: a shell command, AG2's formatted string ----

    def run(self, command: str, **kw: Any) -> str:
        self._check_open()
        return self._session.run(command, **kw)


class CordonEnvironment(SingletonFactory):
    """AG2 sandbox environment over cordond.

    profile      cordond profile name (`cordon profiles`), "default" when None
    backend      "local" (default: the profile's), or "docker" / "daytona" where cordond
                 serves them; `image` is passed to a container backend (a member may
                 name only the profile's image or one cordond allows: --docker-image)
    workdir      a host directory for the session (created if missing, kept afterwards unless
                 cleanup=True); None: a fresh temporary directory that aclose() removes
    socket       cordond's socket; None: $CORDON_SOCKET or /run/cordon/cordon.sock
    env_vars     variables merged into every exec (per-call env wins)
    inherit_env  send this process's environment with every exec, as AG2 hands its commands
                 os.environ; None: only when the profile sets `env_inherit` (ag2-compat),
                 since the other profiles scrub the environment on purpose. A variable whose
                 name or value is not valid UTF-8 (os.environ's surrogate escapes) or holds a
                 NUL cannot go in cordond's JSON: it is skipped
    timeout      per-command default in seconds (> 0); None: the profile's
    max_output   output cap in characters; None: the profile's
    languages    what `supported_languages` reports (AG2's code tool reads it)
    refusal_exit_code  the exit code a refusal by cordon's own policy comes back with from
                 exec: 0 (default) makes AG2's adapter show it bare, as its own refusals
    temp_prefix  with workdir=None: make the temporary workdir here, with this prefix (as AG2's
                 "ag2_sandbox_"), instead of letting cordond make one
    client       a Cordon client to share; None: one of its own, on `socket`, closed with it
    """

    # A closed sandbox is replaced by a new one (a new session) at the next open(), as AG2's
    # Docker and Daytona factories replace theirs. CordonLocalEnvironment is AG2's
    # LocalEnvironment instead: one sandbox for good, closed once closed.
    _reopens = True
    _sandbox_name = "CordonSandbox"  # in "... has been closed."

    def __init__(
        self,
        profile: Optional[str] = None,
        *,
        backend: Optional[str] = None,
        image: Optional[str] = None,
        workdir: Optional[Union[str, "os.PathLike[str]"]] = None,
        cleanup: Optional[bool] = None,
        socket: Optional[str] = None,
        env_vars: Optional[Mapping[str, str]] = None,
        inherit_env: Optional[bool] = None,
        timeout: Optional[float] = None,
        max_output: Optional[int] = None,
        languages: Sequence[str] = ("python", "bash"),
        refusal_exit_code: int = 0,
        temp_prefix: Optional[str] = None,
        client: Optional[Cordon] = None,
    ):
        if timeout is not None and not timeout > 0:
            raise ValueError("`timeout` must be > 0 seconds.")
        self.profile = profile or "default"
        self.backend = backend
        self.image = image
        self._workdir = str(Path(workdir).resolve()) if workdir is not None else None
        self.cleanup = cleanup if cleanup is not None else workdir is None
        # With a temp_prefix, a workdir=None session gets a directory this process makes with
        # tempfile.mkdtemp(prefix=...), as AG2's LocalSandbox does ("ag2_sandbox_"); without
        # one, cordond makes and removes a temporary workdir of its own.
        self.temp_prefix = temp_prefix
        self._made_workdir = False
        self._done = False  # closed for good (not _reopens): nothing is made again
        self._workdir_pid = os.getpid()
        self._temp_finalizer: Optional[Any] = None
        self.client = client or Cordon(socket)
        if client is None:
            # Its own client's connections close when the environment is dropped unclosed.
            weakref.finalize(self, self.client.close)
        self.env_vars = dict(env_vars) if env_vars else None
        self.inherit_env = inherit_env
        self.timeout = timeout
        self.max_output = max_output
        self.languages = tuple(languages)
        self.refusal_exit_code = refusal_exit_code
        self._sandbox: Optional[CordonSandbox] = None
        self._lock = threading.Lock()
        # Best effort, as AG2's environments do: a forgotten session is deleted at exit.
        atexit.register(_close_at_exit, weakref.ref(self))

    def __deepcopy__(self, memo: Dict[int, Any]) -> "CordonEnvironment":
        # AG2's Agent deep-copies every tool; one environment is one sandbox, shared.
        return self

    def inherits_env(self) -> bool:
        if self.inherit_env is None:
            self.inherit_env = self.client.profile_inherits_env(self.profile)
        return self.inherit_env

    @property
    def sandbox(self) -> CordonSandbox:
        """The environment's sandbox (AG2's SingletonFactory.sandbox); its cordond session is
        made on first use."""
        with self._lock:
            if self._sandbox is None:
                self._sandbox = CordonSandbox(self)
            return self._sandbox

    def _ensure_workdir(self) -> None:
        # The temporary workdir this process makes (temp_prefix), as AG2's LocalSandbox makes
        # "ag2_sandbox_*" on first use; removed at close, or when the environment is dropped.
        if self._workdir is None and self.temp_prefix is not None:
            self._workdir = tempfile.mkdtemp(prefix=self.temp_prefix)
            self._made_workdir = True
            if self.cleanup:
                self._workdir_pid = os.getpid()
                self._temp_finalizer = weakref.finalize(
                    self, _rmtree_in, self._workdir_pid, self._workdir
                )

    def _local_workdir(self) -> Optional[str]:
        """A local environment's workdir before any session exists (its host directory, the
        same path inside the sandbox), made if missing as AG2's LocalSandbox makes it; None
        when only a session can tell (another backend, or cordond's own temp workdir)."""
        if self.backend != "local":
            return None
        with self._lock:
            if self._done:
                return self._workdir
            self._ensure_workdir()
            if self._workdir is None:
                return None
            os.makedirs(self._workdir, exist_ok=True)
            return self._workdir

    def _new_session(self) -> Session:
        self._ensure_workdir()
        try:
            return self.client.session(
                profile=self.profile, workdir=self._workdir, backend=self.backend, image=self.image
            )
        except BaseException:
            if self._made_workdir:
                self._drop_temp()
                self._workdir, self._made_workdir = None, False
            raise

    def _drop_temp(self) -> None:
        if self._temp_finalizer is not None:
            self._temp_finalizer.detach()
            self._temp_finalizer = None
        _remove_tree(self._workdir)

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[CordonSandbox]:
        sb = await asyncio.to_thread(lambda: self.sandbox)
        # Not closed on exit: the factory keeps its sandbox across opens (files persist).
        yield sb

    def open(self, context: Any = None) -> Any:
        """AG2's SandboxFactory.open(context=None): an async context manager yielding the
        sandbox. `context` (AG2's Variable resolution) is accepted and unused."""
        return self._open()

    @property
    def workdir(self) -> Union[Path, PurePosixPath]:
        """What AG2's ShellAdapter shows for this environment: the host `Path` of a local
        session (`.exists()` works), else the sandbox-side `PurePosixPath`."""
        sb = self.sandbox
        host = sb.host_workdir
        return host if host is not None else sb.workdir

    @property
    def host_workdir(self) -> Optional[Path]:
        return self.sandbox.host_workdir

    def _forget(self, sb: CordonSandbox) -> None:
        with self._lock:
            if self._sandbox is sb and self._reopens:
                self._sandbox = None

    def close(self) -> None:
        if self._reopens:
            with self._lock:
                sb, self._sandbox = self._sandbox, None
        else:
            sb = self.sandbox  # closed even if never used, as AG2's
        if sb is not None:
            sb.close()
        self.client.close()

    def _cleanup_workdir(self) -> None:
        if self.cleanup and self._workdir is not None:
            self._drop_temp()
            if self._made_workdir and self._reopens:
                self._workdir = None
        if not self._reopens:
            self._done = True

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> "CordonEnvironment":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> "CordonEnvironment":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # ---- sync conveniences ----

    def run(self, command: str, **kw: Any) -> str:
        """Run a shell command in the session; AG2's formatted result string."""
        return self.sandbox.run(command, **kw)

    def exec_sync(self, argv: Sequence[str], **kw: Any) -> Any:
        return self.sandbox.exec_sync(argv, **kw)


class CordonLocalEnvironment(CordonEnvironment):
    """AG2's `LocalEnvironment(path=None, *, cleanup=None, timeout=60, max_output=100_000,
    env_vars=None, languages=("python", "bash"))`, run in cordon's local sandbox: the same
    arguments (`path` first), plus cordon's `profile` (default "ag2-compat": the caller's
    environment and the host network, as AG2's subprocess has them, still sandboxed) and
    `socket`. Once closed it stays closed, as AG2's: open() yields the closed sandbox, whose
    exec, put_file and remove_file raise RuntimeError("LocalSandbox has been closed.")."""

    _reopens = False
    _sandbox_name = "LocalSandbox"

    def __init__(
        self,
        path: Optional[Union[str, "os.PathLike[str]"]] = None,
        *,
        cleanup: Optional[bool] = None,
        timeout: float = 60,
        max_output: int = 100_000,
        env_vars: Optional[Mapping[str, str]] = None,
        languages: Sequence[str] = ("python", "bash"),
        profile: str = "ag2-compat",
        **kw: Any,
    ):
        kw.setdefault("temp_prefix", "ag2_sandbox_")
        super().__init__(
            profile,
            backend="local",
            workdir=path,
            cleanup=cleanup,
            timeout=timeout,
            max_output=max_output,
            env_vars=env_vars,
            languages=languages,
            **kw,
        )


class CordonLocalSandbox(CordonSandbox):
    """AG2's `LocalSandbox(path=None, *, cleanup=None, timeout=60, max_output=100_000,
    env_vars=None, languages=("python", "bash"))`, run in cordon's local sandbox: a sandbox made
    directly, without a factory (its workdir and cordond session are made on first use, as
    AG2's workdir is). Same extra keywords as CordonLocalEnvironment (`profile`, `socket`, ...)."""

    def __init__(self, path: Optional[Union[str, "os.PathLike[str]"]] = None, **kw: Any):
        env = CordonLocalEnvironment(path, **kw)
        super().__init__(env)
        with env._lock:
            env._sandbox = self

    def close(self) -> None:
        super().close()
        self._env.client.close()  # the environment is this sandbox's own


def _rmtree_in(pid: int, path: str) -> None:
    """A temporary workdir, removed only by the process that made it (not a forked child)."""
    if os.getpid() == pid:
        _remove_tree(path)


def _remove_tree(path: str) -> None:
    """shutil.rmtree(path, ignore_errors=True), but as root a directory of another user's is
    emptied with that user's rights (their uid, its group, no other groups), in a child
    process, and only then removed by root, if the name still names it. Whoever owns the
    workdir decides what is in it: another user's tree moved in (a 0777 directory of theirs,
    with their files below it) would be deleted by root's walk, where its owner could not
    delete them (found in red team; cordond does the same for its own temp workdirs:
    fsutil_rmtree_owned). Best effort, as rmtree's ignore_errors: what stays, stays."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if os.geteuid() != 0 or st.st_uid == 0 or not stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        held = os.fstat(fd)
        pid = os.fork()
        if pid == 0:
            # The child: the owner's rights only, then the walk from the directory's fd (the
            # owner may have no search right on the directories above it).
            code = 1
            try:
                os.setgroups([])
                os.setresgid(held.st_gid, held.st_gid, held.st_gid)
                os.setresuid(held.st_uid, held.st_uid, held.st_uid)
                os.fchdir(fd)
                shutil.rmtree(".", ignore_errors=True)
                code = 0
            finally:
                os._exit(code)
        os.waitpid(pid, 0)
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            os.rmdir(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def _close_at_exit(ref: "weakref.ReferenceType[CordonEnvironment]") -> None:
    env = ref()
    if env is None:
        return
    # A child after fork() that exits runs the atexit handlers too: the parent's session and
    # temporary workdir are the parent's, still in use.
    sb = env._sandbox
    session = sb._session_obj if sb is not None else None
    if session is not None and session.pid != os.getpid():
        return
    if env._made_workdir and env._workdir_pid != os.getpid():
        return
    try:
        env.close()
    except Exception:
        pass
