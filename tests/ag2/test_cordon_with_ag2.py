"""cordon's environments used the way AG2's documentation uses its own, with real AG2: an Agent
whose SandboxShellTool runs on CordonEnvironment() (cordon's hardened default profile, not the
ag2-compat one the swapped-in tests use) and a scripted model (AG2's TestConfig). Run by
tests/ag2/run.sh after AG2's own tests; needs AG2 1.0 (the `ag2` package) and a cordond at
$CORDON_SOCKET. The Docker test runs when $CORDON_AG2_DOCKER_IMAGE names a local image (run.sh
deselects it otherwise)."""

import json
import os
from pathlib import Path

import pytest

from ag2 import Agent, MemoryStream
from ag2.events import ModelResponse, ToolCallEvent, ToolCallsEvent, ToolResultEvent
from ag2.testing import TestConfig
from ag2.tools import SandboxShellTool
from ag2.tools.sandbox import ExecResult

from cordon import CordonEnvironment, CordonLocalEnvironment


def _config(*commands: str) -> TestConfig:
    calls = [
        ModelResponse(
            tool_calls=ToolCallsEvent(
                [ToolCallEvent(arguments=json.dumps({"command": c}), name="run_shell_command")]
            )
        )
        for c in commands
    ]
    return TestConfig(*calls, "done")


async def _tool_results(env, *commands: str, **tool_kw) -> list:
    results: list = []
    stream = MemoryStream()
    stream.where(ToolResultEvent).subscribe(
        lambda e: results.append("".join(str(getattr(p, "content", p)) for p in e.result.parts))
    )
    agent = Agent("a", config=_config(*commands), tools=[SandboxShellTool(env, **tool_kw)])
    reply = await agent.ask("run it", stream=stream)
    assert await reply.content() == "done"
    return results


@pytest.fixture
def env(tmp_path: Path):
    e = CordonEnvironment(workdir=tmp_path)
    yield e
    e.close()


@pytest.mark.asyncio
async def test_agent_tool_runs_confined(env, tmp_path: Path) -> None:
    # The Agent deep-copies its tools (before cordon's environments allowed it: "cannot
    # pickle '_thread._local' object"); the command runs as nobody, under seccomp and
    # no_new_privs, in the given workdir, with no network but loopback.
    (r,) = await _tool_results(
        env, "id -u; grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status; pwd; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
    )
    lines = r.split("\n")
    assert lines[0] == str(65534 if os.geteuid() == 0 else os.geteuid()), r
    assert "Seccomp:\t2" in lines and "NoNewPrivs:\t1" in lines, r
    assert str(tmp_path) in lines, r
    assert lines[-1] == "lo", r


@pytest.mark.asyncio
async def test_files_persist_between_tool_calls(env, tmp_path: Path) -> None:
    r = await _tool_results(env, "echo 41 > n", "echo $(( $(cat n) + 1 ))")
    assert r == ["", "42"], r
    assert (tmp_path / "n").read_text() == "41\n"


@pytest.mark.asyncio
async def test_exit_code_and_timeout_as_ag2_shows_them(tmp_path: Path) -> None:
    e = CordonEnvironment(workdir=tmp_path, timeout=1)
    try:
        r = await _tool_results(e, "echo out; exit 3", "sleep 5; echo late")
    finally:
        e.close()
    assert r[0] == "out\n[exit code: 3]", r
    assert r[1].endswith("[exit code: 124]") and "late" not in r[1], r


@pytest.mark.asyncio
async def test_masked_secret_stays_hidden(env, tmp_path: Path) -> None:
    # The default profile masks .env and .ssh whatever AG2's own filters say.
    (tmp_path / ".env").write_text("API_KEY=secret\n")
    (r,) = await _tool_results(env, "cat .env; echo end")
    assert "secret" not in r and r.endswith("end"), r


@pytest.mark.asyncio
async def test_ag2_filters_apply_on_top(env, tmp_path: Path) -> None:
    # AG2's own allowed/blocked filters still run first, in the adapter, as for its backends.
    out = tmp_path / "x"
    (r,) = await _tool_results(env, f"touch {out}", blocked=["touch"])
    assert r.startswith("Command not allowed"), r
    assert not out.exists()


@pytest.mark.asyncio
async def test_sandbox_protocol_types(tmp_path: Path) -> None:
    e = CordonLocalEnvironment(tmp_path)
    try:
        async with e.open() as sb:
            res = await sb.exec(["sh", "-c", "printf hi"])
            assert isinstance(res, ExecResult) and res == ExecResult("hi", 0)
            await sb.put_file(Path("d/f.txt"), b"data")
            assert (tmp_path / "d" / "f.txt").read_bytes() == b"data"
            with pytest.raises(ValueError):
                await sb.put_file(Path("../escape"), b"x")
    finally:
        await e.aclose()


@pytest.mark.asyncio
async def test_docker_backend_in_an_agent(tmp_path: Path) -> None:
    # AG2's DockerEnvironment replaced by cordon's Docker backend: one hardened container for
    # the environment, the host workdir at /workspace, files persisting between tool calls,
    # and the container removed when the environment closes.
    image = os.environ["CORDON_AG2_DOCKER_IMAGE"]
    e = CordonEnvironment(backend="docker", image=image, workdir=tmp_path)
    try:
        r = await _tool_results(
            e,
            "echo hi > f; pwd; grep -E '^CapEff:' /proc/self/status; test -x /bin/busybox && echo busybox",
            "cat f; touch /etc/x 2>/dev/null || echo read-only root",
        )
    finally:
        await e.aclose()
    assert r[0] == "/workspace\nCapEff:\t0000000000000000\nbusybox", r
    assert r[1] == "hi\nread-only root", r
    assert (tmp_path / "f").read_text() == "hi\n"
