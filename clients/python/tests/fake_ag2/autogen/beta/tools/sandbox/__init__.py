"""A small stand-in for AG2's `autogen.beta.tools.sandbox`, used by cordon's tests only when
real AG2 cannot be imported (it needs pydantic 2 and other packages this machine lacks).

It reproduces the parts of AG2's behaviour cordon's client depends on, as described in
shared/reference/ag2-behaviour.md sections 2 and 5 (not AG2's code): ExecResult is a slots
dataclass, SandboxFactory a runtime-checkable protocol with `open`, SingletonFactory a class
whose `sandbox` AG2's ShellAdapter unwraps, and the adapter's workdir choice and _format.
"""
