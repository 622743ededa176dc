"""cordon: a stdlib-only client for cordond, and an AG2-compatible sandbox environment.

    from cordon import Cordon
    Cordon().run("ls")              # AG2's result string
    Cordon().run_json("ls")         # the full result (SPEC section 5) as a dict

    from autogen.beta.tools import SandboxShellTool
    from cordon import CordonEnvironment
    shell = SandboxShellTool(CordonEnvironment(profile="default"))

Nothing here imports AG2: CordonEnvironment satisfies its SandboxFactory protocol by duck typing.
"""

from .client import Cordon, CordonError, Session, DEFAULT_SOCKET
from .environment import CordonEnvironment, CordonSandbox, ExecResult

__all__ = [
    "Cordon",
    "CordonError",
    "Session",
    "CordonEnvironment",
    "CordonSandbox",
    "ExecResult",
    "DEFAULT_SOCKET",
]
__version__ = "0.1.0"
