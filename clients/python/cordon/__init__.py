"""cordon: a stdlib-only client for cordond, and AG2-compatible sandbox environments.

    from cordon import Cordon
    Cordon().run("ls")              # AG2's result string
    Cordon().run_json("ls")         # the full result (SPEC section 5) as a dict

    from ag2.tools import SandboxShellTool   # AG2 1.0; before it: autogen.beta.tools
    from cordon import CordonEnvironment, CordonLocalEnvironment
    shell = SandboxShellTool(CordonLocalEnvironment())   # as AG2's LocalEnvironment()

AG2 is not needed; when it is importable, its own ExecResult, SingletonFactory and SandboxBase
are used (cordon._ag2), so AG2's type checks see its own types.
"""

from ._ag2 import AG2 as AG2_UNAVAILABLE
from .client import Cordon, CordonError, CordonSessionGone, Session, DEFAULT_SOCKET
from .environment import (
    CordonEnvironment,
    CordonLocalEnvironment,
    CordonLocalSandbox,
    CordonPathError,
    CordonSandbox,
    ExecResult,
)
from .executor import CmdResult, CordonShellExecutor, ShellCallOutcome, ShellCommandOutput

__all__ = [
    "AG2_UNAVAILABLE",
    "Cordon",
    "CordonError",
    "CordonSessionGone",
    "CordonPathError",
    "Session",
    "CordonEnvironment",
    "CordonLocalEnvironment",
    "CordonLocalSandbox",
    "CordonSandbox",
    "CordonShellExecutor",
    "CmdResult",
    "ShellCallOutcome",
    "ShellCommandOutput",
    "ExecResult",
    "DEFAULT_SOCKET",
]
__version__ = "0.1.0"
