"""CordonEnvironment: AG2's SandboxFactory protocol, backed by a cordond session.

AG2 (`autogen.beta.tools.sandbox`) asks of a factory only `open(context=None)`, an async context
manager that yields a sandbox; of the sandbox: `workdir`, `host_workdir`, `async exec(argv, *,
env=None, timeout=None)` returning an object with `.output` and `.exit_code`, `put_file`,
`remove_file` and `aclose`. This module provides exactly that without importing AG2, so

    SandboxShellTool(CordonEnvironment(profile="default"))

works unchanged. Like AG2's Docker and Daytona environments, one sandbox (here: one cordond
session, a persistent workdir) is created on first use and reused by every open(), so files
persist between tool calls; aclose() tears it down.
"""

import asyncio
import atexit
import contextlib
import threading
import weakref
from pathlib import Path, PurePosixPath
from typing import Any, AsyncIterator, Dict, Mapping, Optional, Sequence, Union

from .client import Cordon, CordonError, Session


class ExecResult:
    """AG2's ExecResult(output, exit_code): 0 success, 124 timeout, 127 not found."""

    __slots__ = ("output", "exit_code")

    def __init__(self, output: str, exit_code: int):
        self.output = output
        self.exit_code = exit_code

    def __repr__(self) -> str:
        return f"ExecResult(output={self.output!r}, exit_code={self.exit_code!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ExecResult)
            and self.output == other.output
            and self.exit_code == other.exit_code
        )

    def __iter__(self):  # output, code = await sandbox.exec(...)
        return iter((self.output, self.exit_code))


def _unformat(result: Mapping[str, Any]) -> ExecResult:
    """cordond's `output` is AG2's *formatted* string; a Sandbox returns the raw output and the
    exit code, and the adapter formats. Undo the `[exit code: N]` suffix (AG2 section 2)."""
    out: str = result["output"]
    code = int(result["exit_code"])
    if result.get("refused") is not None:
        return ExecResult(out, code)
    if code != 0:
        suffix = f"[exit code: {code}]"
        if out == suffix:
            out = ""
        elif out.endswith("\n" + suffix):
            out = out[: -len(suffix) - 1]
    return ExecResult(out, code)


def _check_rel(path: Union[str, "PurePosixPath"], what: str) -> str:
    p = str(path)
    if p.startswith("/"):
        # AG2's LocalSandbox message, so tools that match on it keep working.
        raise ValueError(f"Absolute paths are not allowed in {what}: {p}")
    return p


class CordonSandbox:
    """One cordond session, as an AG2 Sandbox (async) with sync twins for plain scripts."""

    def __init__(self, environment: "CordonEnvironment", session: Session):
        self._env = environment
        self._session = session
        self._closed = False

    # ---- the protocol ----

    @property
    def workdir(self) -> PurePosixPath:
        return PurePosixPath(self._session.workdir)

    @property
    def host_workdir(self) -> Optional[Path]:
        # cordond runs on this host and the session workdir is a host directory.
        return Path(self._session.workdir)

    @property
    def session(self) -> Session:
        return self._session

    async def __aenter__(self) -> "CordonSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("CordonSandbox has been closed.")

    def exec_sync(
        self,
        argv: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> ExecResult:
        self._check_open()
        argv = list(argv)
        if not argv:
            return ExecResult("", 2)
        merged: Dict[str, str] = dict(self._env.env_vars or {})
        merged.update(env or {})
        t = timeout if timeout is not None else self._env.timeout
        kw: Dict[str, Any] = {}
        if merged:
            kw["env"] = merged
        if t is not None:
            kw["timeout"] = t
        if self._env.max_output is not None:
            kw["max_output"] = self._env.max_output
        return _unformat(self._session.run_json(argv, **kw))

    async def exec(
        self,
        argv: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> ExecResult:
        return await asyncio.to_thread(self.exec_sync, argv, env=env, timeout=timeout)

    def put_file_sync(self, path: Union[str, PurePosixPath], content: Union[bytes, str]) -> None:
        self._check_open()
        p = _check_rel(path, "put_file/get_file")
        try:
            self._session.put_file(p, content)
        except CordonError as e:
            if e.status == 400 and "outside" in e.message:
                raise ValueError(f"Path escapes sandbox workdir: {p}") from e
            raise

    async def put_file(self, path: Union[str, PurePosixPath], content: Union[bytes, str]) -> None:
        await asyncio.to_thread(self.put_file_sync, path, content)

    def get_file_sync(self, path: Union[str, PurePosixPath]) -> bytes:
        self._check_open()
        return self._session.get_file(_check_rel(path, "put_file/get_file"))

    async def get_file(self, path: Union[str, PurePosixPath]) -> bytes:
        return await asyncio.to_thread(self.get_file_sync, path)

    def remove_file_sync(self, path: Union[str, PurePosixPath]) -> None:
        self._check_open()
        self._session.remove_file(_check_rel(path, "remove_file"), missing_ok=True)

    async def remove_file(self, path: Union[str, PurePosixPath]) -> None:
        await asyncio.to_thread(self.remove_file_sync, path)

    def close(self) -> None:
        """Delete the session (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._env._forget(self)
        self._session.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # ---- convenience: a shell command, AG2's formatted string ----

    def run(self, command: str, **kw: Any) -> str:
        self._check_open()
        return self._session.run(command, **kw)


class CordonEnvironment:
    """AG2 SandboxFactory over cordond.

    profile      cordond profile name (`cordon profiles`), "default" when None
    workdir      a host directory for the session (created if missing, kept afterwards); None:
                 a fresh temporary directory that aclose() removes
    socket       cordond's socket; None: $CORDON_SOCKET or /run/cordon/cordon.sock
    env_vars     variables merged into every exec (per-call env wins)
    timeout      per-command default in seconds (> 0); None: the profile's
    max_output   output cap in characters; None: the profile's
    """

    def __init__(
        self,
        profile: Optional[str] = None,
        *,
        workdir: Optional[Union[str, Path]] = None,
        socket: Optional[str] = None,
        env_vars: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
        max_output: Optional[int] = None,
        client: Optional[Cordon] = None,
    ):
        if timeout is not None and not timeout > 0:
            raise ValueError("`timeout` must be > 0 seconds.")
        self.profile = profile or "default"
        self._workdir = str(Path(workdir).resolve()) if workdir is not None else None
        self.client = client or Cordon(socket)
        self.env_vars = dict(env_vars) if env_vars else None
        self.timeout = timeout
        self.max_output = max_output
        self._sandbox: Optional[CordonSandbox] = None
        self._lock = threading.Lock()
        # Best effort, as AG2's environments do: a forgotten session is deleted at exit.
        atexit.register(_close_at_exit, weakref.ref(self))

    def sandbox(self) -> CordonSandbox:
        """The environment's sandbox, creating the cordond session on first use (sync)."""
        with self._lock:
            if self._sandbox is None:
                s = self.client.session(profile=self.profile, workdir=self._workdir)
                self._sandbox = CordonSandbox(self, s)
            return self._sandbox

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[CordonSandbox]:
        sb = await asyncio.to_thread(self.sandbox)
        # Not closed on exit: the factory keeps its sandbox across opens (files persist).
        yield sb

    def open(self, context: Any = None) -> Any:
        """AG2's SandboxFactory.open(context=None): an async context manager yielding the
        sandbox. `context` (AG2's Variable resolution) is accepted and unused."""
        return self._open()

    @property
    def workdir(self) -> PurePosixPath:
        return self.sandbox().workdir

    @property
    def host_workdir(self) -> Optional[Path]:
        return self.sandbox().host_workdir

    def _forget(self, sb: CordonSandbox) -> None:
        with self._lock:
            if self._sandbox is sb:
                self._sandbox = None

    def close(self) -> None:
        with self._lock:
            sb, self._sandbox = self._sandbox, None
        if sb is not None:
            sb.close()
        self.client.close()

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
        return self.sandbox().run(command, **kw)

    def exec_sync(self, argv: Sequence[str], **kw: Any) -> ExecResult:
        return self.sandbox().exec_sync(argv, **kw)


def _close_at_exit(ref: "weakref.ReferenceType[CordonEnvironment]") -> None:
    env = ref()
    if env is None:
        return
    try:
        env.close()
    except Exception:
        pass
