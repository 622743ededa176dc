"""CordonShellExecutor: AG2's classic ShellExecutor API (the OpenAI Responses `shell_call`
executor), each command run by cordond under a ShellExecutor-dialect profile.

    ex = CordonShellExecutor(workspace_dir="/tmp/ws")
    r = ex.run("ls -la", timeout=10)      # r.stdout, r.stderr, r.exit_code, r.timed_out
    ex.run_commands(["ls", "pwd"], timeout_ms=5000)

As AG2's: no shell (the command is split with shlex and run as argv), stdout and stderr raw and
separate, a refusal raises ValueError with AG2's message, a timeout gives timed_out=True and
exit_code=-9. The checks (allowed/denied commands, dangerous patterns, allowed paths) are the
profile's (`shell-executor` by default: AG2's defaults); other settings are given by writing a
profile with those keys (cordon-profile(5)) and naming it.
"""

from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Union

from .client import Cordon


class CmdResult:
    """AG2's ShellExecutor result: stdout, stderr, exit_code, timed_out."""

    __slots__ = ("stdout", "stderr", "exit_code", "timed_out")

    def __init__(self, stdout: str, stderr: str, exit_code: int, timed_out: bool = False):
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code
        self.timed_out = timed_out

    def __repr__(self) -> str:
        return (
            f"CmdResult(stdout={self.stdout!r}, stderr={self.stderr!r}, "
            f"exit_code={self.exit_code!r}, timed_out={self.timed_out!r})"
        )

    def __eq__(self, other: object) -> Any:
        if other.__class__ is self.__class__:
            return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class _Model:
    """What these share with AG2's pydantic models: equal when of the same class with equal
    fields, unhashable, and the same repr."""

    __slots__: Tuple[str, ...] = ()

    def __eq__(self, other: object) -> Any:
        if other.__class__ is self.__class__:
            return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"{type(self).__name__}({fields})"


class ShellCallOutcome(_Model):
    """type "exit" (exit_code an int) or "timeout" (exit_code None)."""

    __slots__ = ("type", "exit_code")

    def __init__(self, type: str, exit_code: Optional[int] = None):
        self.type = type
        self.exit_code = exit_code


class ShellCommandOutput(_Model):
    """AG2's: stdout and stderr default to "", outcome is required."""

    __slots__ = ("stdout", "stderr", "outcome")

    def __init__(self, stdout: str = "", stderr: str = "", outcome: Optional[ShellCallOutcome] = None):
        if outcome is None:
            raise TypeError("ShellCommandOutput: outcome is required")
        self.stdout = stdout
        self.stderr = stderr
        self.outcome = outcome


class CordonShellExecutor:
    """AG2's ShellExecutor(default_timeout=60.0, workspace_dir=None, allowed_paths=None,
    allowed_commands=None, denied_commands=None, enable_command_filtering=True,
    dangerous_patterns=None), plus `profile` and `socket`. The filter settings live in the
    profile: passing one here raises NotImplementedError naming the profile key to set."""

    def __init__(
        self,
        default_timeout: float = 60.0,
        workspace_dir: Optional[Union[str, Path]] = None,
        allowed_paths: Optional[Sequence[str]] = None,
        allowed_commands: Optional[Sequence[str]] = None,
        denied_commands: Optional[Sequence[str]] = None,
        enable_command_filtering: bool = True,
        dangerous_patterns: Optional[Sequence[Any]] = None,
        *,
        profile: str = "shell-executor",
        socket: Optional[str] = None,
        client: Optional[Cordon] = None,
    ):
        for value, key in (
            (allowed_paths, "allowed_paths"),
            (allowed_commands, "allowed_commands"),
            (denied_commands, "denied_commands"),
            (dangerous_patterns, "dangerous_patterns"),
        ):
            if value is not None:
                raise NotImplementedError(
                    f"{key}: set `{key}` in a cordon profile ([policy]) and pass profile=NAME"
                )
        if not enable_command_filtering:
            raise NotImplementedError(
                "enable_command_filtering: set `command_filtering = false` in a cordon profile "
                "and pass profile=NAME"
            )
        self.default_timeout = default_timeout
        if workspace_dir is None:
            self.workspace_dir = Path.cwd()
        else:
            self.workspace_dir = Path(workspace_dir).resolve()
            self.workspace_dir.mkdir(parents=True, exist_ok=True)
        self.profile = profile
        self.client = client or Cordon(socket)

    def __deepcopy__(self, memo: Any) -> "CordonShellExecutor":
        return self

    def run(self, cmd: str, timeout: Optional[float] = None) -> CmdResult:
        if not cmd.strip():
            # AG2's validation finds no word in it (shlex.split(cmd.strip()) is []); cordond
            # refuses a blank command as bad input (400), which is no ValueError.
            raise ValueError("Empty command is not allowed")
        if "\0" in cmd:
            # What AG2's Popen raises for it; cordond cannot be sent one (JSON strings here
            # hold no NUL), so before the other checks, not after them as in AG2.
            raise ValueError("embedded null byte")
        t = self.default_timeout if timeout is None else timeout
        if t <= 0:
            raise ValueError("Timeout must be positive")
        r = self.client.run_json(
            cmd, profile=self.profile, workdir=str(self.workspace_dir), timeout=t
        )
        if r.get("refused") is not None:
            raise ValueError(r["refused"])
        if r.get("timed_out"):
            return CmdResult(r.get("stdout") or "", r.get("stderr") or "", -9, True)
        return CmdResult(r.get("stdout") or "", r.get("stderr") or "", int(r["exit_code"]), False)

    def run_commands(
        self, commands: Sequence[str], timeout_ms: Optional[int] = None
    ) -> List[ShellCommandOutput]:
        """Sequentially, as AG2's does; a ValueError (refusal, bad timeout) becomes stderr with
        exit 1 and the later commands still run."""
        timeout = timeout_ms / 1000 if timeout_ms is not None else None
        out: List[ShellCommandOutput] = []
        for cmd in commands:
            try:
                r = self.run(cmd, timeout=timeout)
            except ValueError as e:
                out.append(ShellCommandOutput("", str(e), ShellCallOutcome("exit", 1)))
                continue
            if r.timed_out:
                out.append(ShellCommandOutput(r.stdout, r.stderr, ShellCallOutcome("timeout", None)))
            else:
                out.append(ShellCommandOutput(r.stdout, r.stderr, ShellCallOutcome("exit", r.exit_code)))
        return out

    def close(self) -> None:
        self.client.close()
