"""pytest plugin (-p cordon_swap): run AG2's own shell/sandbox tests with cordon's environment
in place of AG2's LocalEnvironment and cordon's sandbox in place of its LocalSandbox. Every
module of AG2 that holds AG2's LocalEnvironment (the public re-exports, and the tool's default
`SandboxShellTool()`) gets cordon's instead, before the test modules import it; LocalSandbox is
replaced only where the tests import it from (`autogen.beta.tools[.sandbox]`), since AG2's own
code uses the name for isinstance checks that cordon's sandbox passes as a subclass. The cordond to use is $CORDON_SOCKET; the profile
$CORDON_AG2_PROFILE (tests/ag2/run.sh makes one that adds this Python read-only)."""

import os
import sys

import autogen.beta.tools  # noqa: F401  (loads the modules to patch)
import autogen.beta.tools.sandbox.local as _local

from cordon import CordonLocalEnvironment, CordonLocalSandbox

_ORIGINAL = _local.LocalEnvironment
_PUBLIC = ("autogen.beta.tools", "autogen.beta.tools.sandbox")


class LocalEnvironment(CordonLocalEnvironment):
    """AG2's LocalEnvironment(path=None, *, cleanup=None, timeout=60, max_output=100_000,
    env_vars=None, languages=("python", "bash")), in cordon."""

    def __init__(self, path=None, **kw):
        kw.setdefault("profile", os.environ.get("CORDON_AG2_PROFILE", "ag2-compat"))
        super().__init__(path, **kw)


class LocalSandbox(CordonLocalSandbox):
    """AG2's LocalSandbox(path=None, *, cleanup=None, timeout=60, ...), in cordon."""

    def __init__(self, path=None, **kw):
        kw.setdefault("profile", os.environ.get("CORDON_AG2_PROFILE", "ag2-compat"))
        super().__init__(path, **kw)


def _swap() -> int:
    n = 0
    for name, mod in list(sys.modules.items()):
        if name.startswith("autogen") and getattr(mod, "LocalEnvironment", None) is _ORIGINAL:
            setattr(mod, "LocalEnvironment", LocalEnvironment)
            n += 1
    for name in _PUBLIC:
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "LocalSandbox", None) is _local.LocalSandbox:
            setattr(mod, "LocalSandbox", LocalSandbox)
    return n


def pytest_configure(config):
    n = _swap()
    if n == 0:
        raise RuntimeError("cordon_swap: AG2's LocalEnvironment was not found in any module")


def pytest_report_header(config):
    return f"cordon_swap: AG2's LocalEnvironment -> cordon ({os.environ.get('CORDON_SOCKET')})"
