"""AG2's own types, when AG2 is importable; stand-ins with the same behaviour otherwise.

cordon never needs AG2. When AG2's sandbox package imports (`ag2.tools.sandbox` in AG2 1.0,
`autogen.beta.tools.sandbox` before; AG2 with its real dependencies), cordon's environments
are built on AG2's own classes, so that AG2's code that checks types sees what it expects:

- `ExecResult` is AG2's (a slots dataclass): `==` and `isinstance` against AG2's type hold;
- a local cordon environment is an AG2 `SingletonFactory`, so that AG2's `ShellAdapter` reports
  the sandbox's real host workdir (a `Path`: `.exists()` works) in the tool description and
  resolves `ignore` against it, as it does for AG2's `LocalEnvironment`;
- the sandbox is an AG2 `LocalSandbox` (a `SandboxBase`): it runs on this host, and the older
  AG2's synchronous `ShellAdapter.run_sync` calls its `exec_sync` directly, also from inside a
  running event loop, as it does for AG2's own local sandbox. None of LocalSandbox's own code
  runs: cordon's sandbox defines every method (and never calls its __init__).

Set CORDON_NO_AG2=1 to use the stand-ins even when AG2 is installed.
"""

import os
from typing import Any, Optional

AG2: Optional[str] = None  # the reason AG2 is not used, or None when it is
# Where AG2's sandbox package lives: `ag2.tools.sandbox` since AG2 1.0 (the former beta
# promoted to the `ag2` package), `autogen.beta.tools.sandbox` before. The first that imports.
AG2_PACKAGES = ("ag2.tools", "autogen.beta.tools")
AG2_PACKAGE: Optional[str] = None  # the one in use


def _import_ag2() -> Any:
    import importlib

    if os.environ.get("CORDON_NO_AG2") == "1":
        raise ImportError("CORDON_NO_AG2=1")
    errors = []
    for pkg in AG2_PACKAGES:
        try:
            base = importlib.import_module(pkg + ".sandbox.base")
            factory = importlib.import_module(pkg + ".sandbox.factory")
            local = importlib.import_module(pkg + ".sandbox.local")
            return pkg, base.ExecResult, base.SandboxBase, factory.SingletonFactory, local.LocalSandbox
        except Exception as exc:  # ImportError, or AG2 present but its dependencies are not
            errors.append(f"{pkg}: {type(exc).__name__}: {exc}")
    raise ImportError("; ".join(errors))


try:
    (AG2_PACKAGE, _AG2ExecResult, _AG2SandboxBase, _AG2SingletonFactory,
     _AG2LocalSandbox) = _import_ag2()
except ImportError as exc:
    AG2 = str(exc)
    _AG2ExecResult = _AG2SandboxBase = _AG2SingletonFactory = _AG2LocalSandbox = None


class _ExecResult:
    """AG2's ExecResult(output, exit_code): 0 success, 124 timeout, 127 not found.

    Behaves as AG2's `@dataclass(slots=True)`: positional or keyword construction, field-wise
    `==` with instances of exactly this class only (anything else is NotImplemented), unhashable,
    the same repr."""

    __slots__ = ("output", "exit_code")
    __match_args__ = ("output", "exit_code")

    def __init__(self, output: str, exit_code: int):
        self.output = output
        self.exit_code = exit_code

    def __repr__(self) -> str:
        return f"ExecResult(output={self.output!r}, exit_code={self.exit_code!r})"

    def __eq__(self, other: object) -> Any:
        if other.__class__ is self.__class__:
            return (self.output, self.exit_code) == (other.output, other.exit_code)  # type: ignore[attr-defined]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


_ExecResult.__name__ = _ExecResult.__qualname__ = "ExecResult"

ExecResult: Any = _AG2ExecResult if _AG2ExecResult is not None else _ExecResult
SandboxBase: Any = _AG2SandboxBase if _AG2SandboxBase is not None else object
LocalSandbox: Any = _AG2LocalSandbox if _AG2LocalSandbox is not None else SandboxBase
SingletonFactory: Any = _AG2SingletonFactory if _AG2SingletonFactory is not None else object
