"""pytest plugin (-p cordon_swap): run AG2's own shell/sandbox tests with cordon's environment
in place of AG2's LocalEnvironment and cordon's sandbox in place of its LocalSandbox.

AG2's sandbox package is `ag2.tools.sandbox` in AG2 1.0 and `autogen.beta.tools.sandbox`
before; whichever imports is the one patched (cordon._ag2 picks it the same way). Every module
of AG2 that holds AG2's LocalEnvironment (the public re-exports, and the tool's default
`SandboxShellTool()`) gets cordon's instead, before the test modules import it. LocalSandbox is
replaced where the tests import it from (the package, its `sandbox` subpackage and
`sandbox.local`): AG2's own modules bound the name when they were imported, so their isinstance
checks still see AG2's class, which cordon's sandbox passes as a subclass. The cordond to use is
$CORDON_SOCKET; the profile $CORDON_AG2_PROFILE (tests/ag2/run.sh makes one that adds this
Python read-only)."""

import importlib
import os
import sys

from cordon import CordonLocalEnvironment, CordonLocalSandbox
from cordon._ag2 import AG2, AG2_PACKAGE

if AG2_PACKAGE is None:
    raise ImportError(f"cordon_swap: AG2 does not import: {AG2}")

importlib.import_module(AG2_PACKAGE)  # loads the modules to patch
_local = importlib.import_module(AG2_PACKAGE + ".sandbox.local")
_sandbox = importlib.import_module(AG2_PACKAGE + ".sandbox")
_ORIGINAL_ENV = _sandbox.LocalEnvironment
_ORIGINAL_SANDBOX = _local.LocalSandbox
_ROOT = AG2_PACKAGE.split(".")[0]
_PUBLIC = (AG2_PACKAGE, AG2_PACKAGE + ".sandbox", AG2_PACKAGE + ".sandbox.local")


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
        if (name == _ROOT or name.startswith(_ROOT + ".")) and getattr(
            mod, "LocalEnvironment", None
        ) is _ORIGINAL_ENV:
            setattr(mod, "LocalEnvironment", LocalEnvironment)
            n += 1
    for name in _PUBLIC:
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "LocalSandbox", None) is _ORIGINAL_SANDBOX:
            setattr(mod, "LocalSandbox", LocalSandbox)
    return n


def pytest_configure(config):
    n = _swap()
    if n == 0:
        raise RuntimeError("cordon_swap: AG2's LocalEnvironment was not found in any module")


def pytest_report_header(config):
    return (
        f"cordon_swap: {AG2_PACKAGE}: LocalEnvironment and LocalSandbox -> cordon "
        f"({os.environ.get('CORDON_SOCKET')})"
    )
