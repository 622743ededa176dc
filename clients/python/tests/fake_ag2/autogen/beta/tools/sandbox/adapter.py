"""Stand-in for what AG2's ShellAdapter does with a sandbox (ag2-behaviour.md sections 2 and
4.7): which workdir it reports and filters against, how it runs a command and formats it."""

from pathlib import PurePosixPath

import asyncio

from .factory import SandboxFactory, SingletonFactory
from .local import LocalSandbox


class ShellAdapter:
    def __init__(self, sandbox, *, env=None, timeout=None) -> None:
        self._sandbox = sandbox
        self._env = env
        self._timeout = timeout

    @property
    def workdir(self):
        sb = self._sandbox
        if isinstance(sb, SingletonFactory):
            sb = sb.sandbox
        if isinstance(sb, SandboxFactory):
            return PurePosixPath("/workspace")
        host = sb.host_workdir
        return host if host is not None else sb.workdir

    async def run(self, command: str) -> str:
        argv = ["sh", "-c", command]
        if isinstance(self._sandbox, SandboxFactory):
            async with self._sandbox.open(None) as sb:
                r = await sb.exec(argv, env=self._env, timeout=self._timeout)
        else:
            r = await self._sandbox.exec(argv, env=self._env, timeout=self._timeout)
        return _format(r)


    def run_sync(self, command: str) -> str:
        sb = self._sandbox
        if isinstance(sb, SingletonFactory):
            sb = sb.sandbox
        if isinstance(sb, LocalSandbox):
            return _format(sb.exec_sync(["sh", "-c", command], env=self._env, timeout=self._timeout))
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(command))
        raise RuntimeError("run_sync() cannot be invoked from inside an active event loop")


def _format(r) -> str:
    if r.exit_code != 0:
        suffix = f"[exit code: {r.exit_code}]"
        return f"{r.output}\n{suffix}" if r.output else suffix
    return r.output
