"""Stand-in for AG2's sandbox/factory.py (ag2-behaviour.md section 5)."""

from typing import Protocol, runtime_checkable


@runtime_checkable
class SandboxFactory(Protocol):
    def open(self, context=None): ...


class SingletonFactory:
    def __init__(self, sandbox) -> None:
        self._sandbox = sandbox

    @property
    def sandbox(self):
        return self._sandbox
