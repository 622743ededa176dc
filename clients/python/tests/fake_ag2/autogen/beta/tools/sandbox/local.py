"""Stand-in for AG2's sandbox/local.py: only the class, for isinstance (ag2-behaviour.md
section 5; AG2's ShellAdapter.run_sync calls a LocalSandbox's exec_sync directly)."""

from .base import SandboxBase


class LocalSandbox(SandboxBase):
    pass
