"""Stand-in for AG2's sandbox/base.py (ag2-behaviour.md section 5)."""

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(slots=True)
class ExecResult:
    output: str
    exit_code: int


class SandboxBase(ABC):
    @property
    @abstractmethod
    def workdir(self): ...

    @property
    @abstractmethod
    def host_workdir(self): ...

    @abstractmethod
    async def exec(self, argv, *, env=None, timeout=None): ...
