"""The AG2 drop-in (issue 14): each difference AG2's own tests found, checked against a real
cordond. Where AG2's types matter and AG2 is not importable, a stand-in of AG2's types
(tests/fake_ag2, built from shared/reference/ag2-behaviour.md) is put on the path of a child
Python, so the code path taken when AG2 is importable is tested too.

Run from the repository root: python3 -m unittest discover -s clients/python/tests -t clients/python
"""

import asyncio
import copy
import errno
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path, PurePosixPath

from tests.test_cordon import PYTHON, ROOT, DaemonCase, Daemon, _give_to_nobody, _need, ag2_format

from cordon import (  # noqa: E402
    Cordon,
    CordonEnvironment,
    CordonError,
    CordonLocalEnvironment,
    CordonLocalSandbox,
    CordonShellExecutor,
    ExecResult,
)
from cordon import _ag2  # noqa: E402

FAKE_AG2 = Path(__file__).resolve().parent / "fake_ag2"
FAKE_AG2_1 = Path(__file__).resolve().parent / "fake_ag2_1"  # AG2 1.0's layout, over FAKE_AG2
CLIENT = ROOT / "clients" / "python"


def _run(coro):
    return asyncio.run(coro)


class TestDropIn(DaemonCase):
    def env(self, **kw) -> CordonEnvironment:
        e = CordonEnvironment(socket=self.daemon.socket, **kw)
        self.addCleanup(e.close)
        return e

    def test_deepcopy_returns_self(self) -> None:
        # AG2's Agent deep-copies its tools: before the fix, "cannot pickle '_thread._local'".
        env = self.env()
        tool_like = {"environment": env, "name": "run_shell_command"}
        self.assertIs(copy.deepcopy(tool_like)["environment"], env)
        sb = env.sandbox  # with a live session and an open connection too
        self.assertEqual(env.run("echo hi"), "hi")
        self.assertIs(copy.deepcopy(env), env)
        self.assertIs(copy.deepcopy(sb), sb)
        self.assertIs(copy.deepcopy(env.client), env.client)

    def test_exec_result_semantics(self) -> None:
        if _ag2.AG2 is None:
            self.skipTest("AG2 importable: ExecResult is AG2's own (tested by the AG2 target)")
        self.assertEqual(ExecResult("a", 0), ExecResult(output="a", exit_code=0))
        self.assertNotEqual(ExecResult("a", 0), ExecResult("a", 1))
        self.assertNotEqual(ExecResult("a", 0), ("a", 0))  # a dataclass is not a tuple

        class Other:
            output, exit_code = "a", 0

        self.assertNotEqual(ExecResult("a", 0), Other())
        with self.assertRaises(TypeError):
            hash(ExecResult("a", 0))
        self.assertEqual(repr(ExecResult("a", 0)), "ExecResult(output='a', exit_code=0)")
        with self.assertRaises(TypeError):
            iter(ExecResult("a", 0))  # AG2's is not iterable either
        with self.assertRaises(AttributeError):
            ExecResult("a", 0).extra = 1  # slots

    def test_languages_stream_get_file(self) -> None:
        env = self.env(languages=("python", "bash", "javascript"))
        sb = env.sandbox
        self.assertEqual(sb.supported_languages, ("python", "bash", "javascript"))
        self.assertEqual(self.env().sandbox.supported_languages, ("python", "bash"))

        async def go():
            chunks = [c async for c in sb.stream(["sh", "-c", "echo out; echo err >&2"])]
            self.assertEqual(b"".join(chunks), b"out\nerr")
            self.assertEqual([c async for c in sb.stream(["true"])], [])
            await sb.put_file(PurePosixPath("d/f.bin"), b"\x00\xff")
            self.assertEqual(await sb.get_file(PurePosixPath("d/f.bin")), b"\x00\xff")
            with self.assertRaises(FileNotFoundError):
                await sb.get_file("missing")

        _run(go())

    def test_path_escape_is_value_error(self) -> None:
        env = self.env()
        sb = env.sandbox
        os.symlink("/etc", os.path.join(sb.host_workdir, "out"))

        async def go():
            for op in (
                lambda p: sb.put_file(p, b"x"),
                lambda p: sb.get_file(p),
                lambda p: sb.remove_file(p),
            ):
                for path in ("../x", "a/../../x", "out/passwd"):
                    with self.subTest(path=path):
                        with self.assertRaises(ValueError) as cm:
                            await op(PurePosixPath(path))
                        self.assertEqual(str(cm.exception), f"Path escapes sandbox workdir: {path}")
                        self.assertIsInstance(cm.exception, CordonError)
                with self.assertRaises(ValueError) as cm:
                    await op(PurePosixPath("/etc/x"))
                self.assertEqual(
                    str(cm.exception), "Absolute paths are not allowed in put_file/get_file: /etc/x"
                )

        _run(go())

    def test_refusal_is_shown_bare(self) -> None:
        """cordon's own policy refusal reaches the model exactly as AG2's own refusals: the
        message, no `[exit code: 126]` after it."""
        env = self.env(profile="readonly")

        async def adapter_run(command):
            async with env.open(None) as sandbox:
                r = await sandbox.exec(["sh", "-c", command], env=None, timeout=None)
            return ag2_format(r.output, r.exit_code)

        self.assertEqual(_run(adapter_run("touch x")), "Command not allowed: 'touch x'")
        self.assertEqual(_run(adapter_run("ls nope")).endswith("[exit code: 2]"), True)
        env126 = self.env(profile="readonly", refusal_exit_code=126)
        self.assertEqual(env126.exec_sync(["sh", "-c", "touch x"]),
                         ExecResult("Command not allowed: 'touch x'", 126))

    def test_caller_environment_in_compat_profiles(self) -> None:
        os.environ["CORDON_PY_MARK"] = "from-the-caller"
        self.addCleanup(os.environ.pop, "CORDON_PY_MARK", None)
        compat = self.env(profile="ag2-compat")
        self.assertTrue(compat.inherits_env())
        self.assertEqual(compat.run("true"), "")
        self.assertEqual(compat.exec_sync(["sh", "-c", "echo $CORDON_PY_MARK"]),
                         ExecResult("from-the-caller", 0))
        # Per-call env and env_vars still win over the inherited environment.
        compat2 = self.env(profile="ag2-compat", env_vars={"CORDON_PY_MARK": "env_vars"})
        self.assertEqual(compat2.exec_sync(["sh", "-c", "echo $CORDON_PY_MARK"]).output, "env_vars")
        self.assertEqual(
            compat2.exec_sync(["sh", "-c", "echo $CORDON_PY_MARK"], env={"CORDON_PY_MARK": "call"}).output,
            "call",
        )
        # The hardened default scrubs the environment on purpose: nothing is sent.
        default = self.env()
        self.assertFalse(default.inherits_env())
        self.assertEqual(default.exec_sync(["sh", "-c", "echo x$CORDON_PY_MARK"]).output, "x")
        self.assertTrue(self.env(profile="default", inherit_env=True).inherits_env())

    def test_unsendable_inherited_variables_are_skipped(self) -> None:
        """An inherited variable that is not UTF-8 cannot go in JSON: it is skipped, the rest
        is sent. Found in review: the whole exec failed."""
        os.environ["CORDON_PY_BAD"] = "a\udcffb"  # the bytes a, 0xff, b
        os.environ["CORDON_PY_GOOD"] = "fine"
        self.addCleanup(os.environ.pop, "CORDON_PY_BAD", None)
        self.addCleanup(os.environ.pop, "CORDON_PY_GOOD", None)
        compat = self.env(profile="ag2-compat")
        self.assertEqual(
            compat.exec_sync(["sh", "-c", "echo ${CORDON_PY_BAD-unset} $CORDON_PY_GOOD"]),
            ExecResult("unset fine", 0))

    def test_lost_session_is_not_a_missing_file(self) -> None:
        """A session gone from cordond (restarted, expired, deleted) is a CordonError saying
        so: found in review, get_file said FileNotFoundError and remove_file swallowed it."""
        env = self.env()
        sb = env.sandbox
        sb.put_file_sync("f", b"x")
        with self.assertRaises(FileNotFoundError):  # a missing file is still one
            sb.get_file_sync("nope")
        sb.remove_file_sync("nope")
        self.client.request("DELETE", f"/v1/sessions/{sb.session.id}")
        for call in (lambda: sb.get_file_sync("f"), lambda: sb.remove_file_sync("f"),
                     lambda: sb.session.remove_file("f"), lambda: sb.exec_sync(["true"])):
            with self.assertRaises(CordonError) as cm:
                call()
            self.assertNotIsInstance(cm.exception, FileNotFoundError)
            self.assertIn("is gone (cordond restarted", str(cm.exception))

    def test_daemon_path_errors(self) -> None:
        """Each of cordond's path refusals as AG2's LocalSandbox raises it: found in review,
        every one read "Path escapes sandbox workdir"; a path that stays inside is
        normalised, as AG2 accepts it."""
        import errno

        sb = self.env().sandbox
        sb.put_file_sync("a/../b", b"x")
        self.assertEqual(sb.get_file_sync("b"), b"x")
        self.assertEqual(sb.get_file_sync("./c/../b"), b"x")
        with self.assertRaisesRegex(ValueError, "Path escapes sandbox workdir"):
            sb.get_file_sync("a/../../b")
        sb.exec_sync(["mkdir", "d"])
        with self.assertRaises(IsADirectoryError):
            sb.get_file_sync("d")
        with self.assertRaises(IsADirectoryError):
            sb.remove_file_sync("d")
        with self.assertRaises(ValueError) as cm:
            sb.get_file_sync("x\ny")
        self.assertIn("control characters", str(cm.exception))
        self.assertNotIn("escapes", str(cm.exception))
        with self.assertRaises(OSError) as cm:
            sb.get_file_sync("x" * 5000)
        self.assertEqual(cm.exception.errno, errno.ENAMETOOLONG)

    def test_identity_variables_name_who_runs(self) -> None:
        """USER, LOGNAME and HOME are those of the identity the command runs as (for root:
        the workdir's owner, or nobody), in every profile, whatever the caller's say."""
        os.environ["USER"] = os.environ["LOGNAME"] = "someone-else"
        for profile in ("default", "ag2-compat"):
            with self.subTest(profile=profile):
                env = self.env(profile=profile)
                got = env.exec_sync(["sh", "-c", 'echo "$USER $LOGNAME $HOME"; id -un']).output
                vars_line, who = got.split("\n")
                home = pwd.getpwnam(who).pw_dir
                self.assertEqual(vars_line, f"{who} {who} {home}")
                if os.geteuid() == 0:
                    self.assertEqual(who, "nobody")

    def test_backend_and_image_are_passed_through(self) -> None:
        """backend= and image= reach cordond's POST /v1/sessions as they are."""

        class Capture(Cordon):
            def session(self, **kw):
                self.kw = kw
                raise CordonError(400, "captured")

        cap = Capture(self.daemon.socket)
        env = CordonEnvironment(backend="docker", image="busybox", client=cap)
        self.addCleanup(env.close)
        sb = env.sandbox  # the session is made on first use, not with the sandbox
        self.assertFalse(hasattr(cap, "kw"))
        with self.assertRaises(CordonError):
            sb.session
        self.assertEqual((cap.kw["backend"], cap.kw["image"]), ("docker", "busybox"))
        # And the client puts them in the body: a backend cordond does not know is a 400.
        with self.assertRaises(CordonError) as cm:
            self.env(backend="no-such-backend").sandbox.session
        self.assertEqual(cm.exception.status, 400)
        self.assertTrue(cm.exception.message.startswith("backend"), cm.exception.message)

    def _sessions(self) -> int:
        for line in self.client.request("GET", "/metrics", raw=True).decode().splitlines():
            if line.startswith("cordond_sessions "):
                return int(float(line.split()[1]))
        raise AssertionError("no cordond_sessions in /metrics")

    def test_unused_sandboxes_hold_no_session(self) -> None:
        # AG2's own tests make dozens of sandboxes and environments and never close them;
        # before sessions were made on first use, the 33rd got cordond's 429 (32 per caller).
        base = self._sessions()
        d = tempfile.mkdtemp(prefix="cordon-py-lazy-")
        _give_to_nobody(d)
        self.addCleanup(shutil.rmtree, d, True)
        kept = []
        for i in range(40):
            sb = CordonLocalSandbox(os.path.join(d, str(i)), socket=self.daemon.socket)
            kept.append(sb)
            # Its workdir is made and reported without a session, as AG2's LocalSandbox does.
            self.assertEqual(sb.host_workdir, Path(d, str(i)))
            self.assertTrue(sb.host_workdir.is_dir())
            self.assertEqual(sb.workdir, PurePosixPath(d, str(i)))
        temp = CordonLocalEnvironment(socket=self.daemon.socket)
        kept.append(temp)
        self.assertTrue(temp.workdir.name.startswith("ag2_sandbox_") and temp.workdir.is_dir())
        self.assertEqual(self._sessions(), base)
        # First use makes the session, in that same directory.
        self.assertEqual(_run(kept[7].exec(["sh", "-c", "pwd; echo x > f"])).output, os.path.join(d, "7"))
        self.assertEqual(self._sessions(), base + 1)
        self.assertEqual(Path(d, "7", "f").read_text(), "x\n")
        for sb in kept:
            _run(sb.aclose())
        self.assertEqual(self._sessions(), base)
        self.assertFalse(temp.workdir.exists() if temp._workdir else False)

    def test_dropped_sandbox_session_is_deleted(self) -> None:
        # A sandbox dropped without close() has its session deleted when it is collected,
        # not at exit: unclosed sandboxes do not pile up against the per-caller limit.
        import gc

        base = self._sessions()
        sb = CordonLocalSandbox(socket=self.daemon.socket)
        self.assertEqual(_run(sb.exec(["true"])).exit_code, 0)
        sid, wd = sb.session.id, sb.host_workdir
        self.assertEqual(self._sessions(), base + 1)
        self.assertEqual(self.client.request("GET", f"/v1/sessions/{sid}")["id"], sid)
        del sb
        gc.collect()
        with self.assertRaises(CordonError) as cm:
            self.client.request("GET", f"/v1/sessions/{sid}")
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(self._sessions(), base)
        # Its temporary workdir (made here, "ag2_sandbox_*") goes with the environment.
        self.assertTrue(wd.name.startswith("ag2_sandbox_"))
        self.assertFalse(wd.exists())
        # A caller that kept only the Session keeps the sandbox's session alive.
        s = CordonLocalSandbox(socket=self.daemon.socket).session
        gc.collect()
        self.assertEqual(s.run("echo still"), "still")
        sid = s.id
        del s
        gc.collect()
        with self.assertRaises(CordonError) as cm:
            self.client.request("GET", f"/v1/sessions/{sid}")
        self.assertEqual(cm.exception.status, 404)

    def test_forked_child_leaves_sessions_alone(self) -> None:
        """A child after fork() that exits does not delete its parent's sessions nor remove
        its temporary workdir (atexit, weakref.finalize): found in review, it did."""
        import atexit

        env = CordonLocalEnvironment(socket=self.daemon.socket)
        self.addCleanup(env.close)
        env.run("true")
        sid, wd = env.sandbox.session.id, env.host_workdir
        dropped = CordonLocalSandbox(socket=self.daemon.socket)  # collected only at exit
        self.addCleanup(dropped.close)
        dropped.run("true")
        sid2 = dropped.session.id
        pid = os.fork()
        if pid == 0:
            try:
                atexit._run_exitfuncs()  # what the child's exit runs (finalizers included)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        for s in (sid, sid2):
            self.assertEqual(self.client.request("GET", f"/v1/sessions/{s}")["id"], s)
        self.assertTrue(wd.is_dir())
        self.assertEqual(env.run("echo alive"), "alive")

    def test_local_environment_like_ag2s(self) -> None:
        d = tempfile.mkdtemp(prefix="cordon-py-local-")
        _give_to_nobody(d)
        self.addCleanup(shutil.rmtree, d, True)
        env = CordonLocalEnvironment(d, socket=self.daemon.socket, timeout=5)
        self.assertEqual(env.profile, "ag2-compat")
        self.assertEqual(env.host_workdir, Path(d))
        self.assertIsInstance(env.workdir, Path)
        self.assertTrue(env.workdir.exists())
        self.assertEqual(env.run("pwd"), d)
        env.close()
        self.assertTrue(os.path.isdir(d))  # an explicit path is kept (cleanup=None)
        env = CordonLocalEnvironment(d, socket=self.daemon.socket, cleanup=True)
        env.run("true")
        env.close()
        self.assertFalse(os.path.exists(d))  # unless cleanup=True
        with self.assertRaises(ValueError):
            CordonLocalEnvironment(timeout=0)

    def test_removed_workdir_is_ag2s_127(self) -> None:
        """AG2's LocalSandbox with its workdir gone: ExecResult("Command not found: " +
        str(FileNotFoundError), 127), the Path as Python shows it (ag2-behaviour.md 3.5). It was
        a CordonError (cordond's 500)."""

        async def go():
            env = CordonLocalEnvironment(socket=self.daemon.socket)
            self.addCleanup(env.close)
            wd = env.host_workdir
            self.assertEqual(await env.sandbox.exec(["sh", "-c", "echo hi"]), ExecResult("hi", 0))
            shutil.rmtree(wd)
            self.assertEqual(
                await env.sandbox.exec(["sh", "-c", "echo hi"]),
                ExecResult(f"Command not found: [Errno 2] No such file or directory: {wd!r}", 127),
            )

        _run(go())

    def test_closed_local_environment_stays_closed(self) -> None:
        """AG2's LocalEnvironment is a SingletonFactory over one LocalSandbox: after aclose(),
        open() yields that sandbox again and exec, put_file and remove_file raise
        RuntimeError("LocalSandbox has been closed."); its workdir is not made again. cordon's
        made a new sandbox (a new session and temp workdir) and said "CordonSandbox"."""
        closed = "LocalSandbox has been closed."

        async def go():
            env = CordonLocalEnvironment(socket=self.daemon.socket)
            self.addCleanup(env.close)
            sb = env.sandbox
            wd = env.workdir
            self.assertEqual(await sb.exec(["true"]), ExecResult("", 0))
            await env.aclose()
            self.assertFalse(wd.exists())
            async with env.open() as again:
                self.assertIs(again, sb)
                for op in (
                    lambda: again.exec(["sh", "-c", "echo x"]),
                    lambda: again.put_file(PurePosixPath("f"), b"x"),
                    lambda: again.remove_file(PurePosixPath("f")),
                ):
                    with self.assertRaises(RuntimeError) as cm:
                        await op()
                    self.assertEqual(str(cm.exception), closed)
            self.assertIs(env.sandbox, sb)
            self.assertEqual(env.workdir, wd)
            self.assertFalse(wd.exists())
            await env.aclose()  # idempotent

            unused = CordonLocalEnvironment(socket=self.daemon.socket)
            self.addCleanup(unused.close)
            await unused.aclose()
            with self.assertRaises(RuntimeError) as cm:
                await unused.sandbox.exec(["true"])
            self.assertEqual(str(cm.exception), closed)

            direct = CordonLocalSandbox(socket=self.daemon.socket)
            self.addCleanup(direct.close)
            dwd = direct.workdir
            await direct.aclose()
            self.assertEqual(direct.workdir, dwd)
            self.assertFalse(os.path.exists(str(dwd)))
            with self.assertRaises(RuntimeError) as cm:
                await direct.exec(["true"])
            self.assertEqual(str(cm.exception), closed)

        _run(go())

    def test_per_call_timeout_not_positive_times_out(self) -> None:
        """AG2's LocalSandbox checks only the constructor's timeout: a per-call timeout <= 0
        (ShellAdapter(..., timeout=0), exec(timeout=0)) goes to subprocess.run, which times
        out at once: ExecResult("Command timed out after {timeout}s", 124), the value as
        Python prints it. cordond refuses such a timeout (400), which the client raised."""

        async def go():
            env = CordonLocalEnvironment(socket=self.daemon.socket)
            self.addCleanup(env.close)
            for t in (0, -1, 0.0, -0.5):
                with self.subTest(timeout=t):
                    self.assertEqual(
                        await env.sandbox.exec(["sh", "-c", "touch ran"], timeout=t),
                        ExecResult(f"Command timed out after {t}s", 124),
                    )
            self.assertFalse((env.host_workdir / "ran").exists())
            self.assertEqual(env.sandbox.exec_sync(["true"], timeout=0).exit_code, 124)

        _run(go())

    def test_unrunnable_argv_and_env_are_value_errors(self) -> None:
        """AG2's LocalSandbox hands argv and env to subprocess, which raises ValueError for a
        NUL byte ("embedded null byte") or an environment name with "=" ("illegal environment
        variable name"), and AG2 lets it escape. cordond's 400 was raised as a CordonError."""

        async def go():
            env = CordonLocalEnvironment(socket=self.daemon.socket)
            self.addCleanup(env.close)
            sb = env.sandbox
            for argv, kw, want in (
                (["sh", "-c", "echo a\0b"], {}, "embedded null byte"),
                (["sh", "-c", "echo ok"], {"env": {"A": "x\0"}}, "embedded null byte"),
                (["sh", "-c", "echo ok"], {"env": {"A\0": "x"}}, "embedded null byte"),
                (["sh", "-c", "echo ok"], {"env": {"A=B": "x"}}, "illegal environment variable name"),
                (["sh", "-c", "echo ok"], {"env": {"A=B": "x"}, "timeout": 0}, "illegal environment variable name"),
            ):
                with self.subTest(argv=argv, kw=kw):
                    with self.assertRaises(ValueError) as cm:
                        await sb.exec(argv, **kw)
                    self.assertEqual(str(cm.exception), want)
            self.assertEqual(await sb.exec(["sh", "-c", "echo ok"]), ExecResult("ok", 0))

        _run(go())

    def test_exec_errors_other_than_not_found_raise(self) -> None:
        """AG2's LocalSandbox turns only FileNotFoundError into ExecResult("Command not found:
        ...", 127); any other OSError of subprocess escapes: PermissionError for a file that is
        not executable, NotADirectoryError, OSError(ENOEXEC). cordon returned them as 127
        results."""

        async def go():
            env = CordonLocalEnvironment(socket=self.daemon.socket)
            self.addCleanup(env.close)
            sb = env.sandbox
            wd = env.host_workdir
            (wd / "plain").write_text("echo hi\n")
            (wd / "junk").write_bytes(b"\x7fELF not really")
            os.chmod(wd / "junk", 0o755)
            for argv, cls, err in (
                ([str(wd / "plain")], PermissionError, errno.EACCES),
                (["plain/x"], NotADirectoryError, errno.ENOTDIR),
                ([str(wd / "junk")], OSError, errno.ENOEXEC),
                (["sh", "-c", "echo hi"], NotADirectoryError, errno.ENOTDIR),
            ):
                with self.subTest(argv=argv):
                    kw = {"env": {"PATH": "/etc/passwd"}} if argv[0] == "sh" else {}
                    with self.assertRaises(cls) as cm:
                        await sb.exec(argv, **kw)
                    self.assertEqual(cm.exception.errno, err)
                    self.assertEqual(str(cm.exception), str(OSError(err, os.strerror(err), argv[0])))
            # Not found is still a result, and so is a program that prints the same words.
            self.assertEqual(
                await sb.exec(["no-such-program-xyz"]),
                ExecResult("Command not found: [Errno 2] No such file or directory: 'no-such-program-xyz'", 127),
            )
            said = "Command not found: [Errno 13] Permission denied: 'x'"
            self.assertEqual(await sb.exec(["sh", "-c", f'echo "{said}"; exit 127']), ExecResult(said, 127))

        _run(go())

    def test_argv_and_env_take_what_subprocess_takes(self) -> None:
        """AG2's LocalSandbox hands argv and env to subprocess, which takes path-like objects
        and bytes as well as str (and raises TypeError, with os.fsencode's words, for
        anything else). cordon's client could not send them to cordond."""

        async def go():
            env = CordonLocalEnvironment(socket=self.daemon.socket)
            self.addCleanup(env.close)
            sb = env.sandbox
            self.assertEqual(await sb.exec(["echo", PurePosixPath("/x/y")]), ExecResult("/x/y", 0))
            self.assertEqual(await sb.exec([Path("/bin/echo"), b"b"]), ExecResult("b", 0))
            self.assertEqual(
                await sb.exec(["sh", "-c", "echo $A$B"], env={"A": Path("/x"), b"B": b"y"}),
                ExecResult("/xy", 0),
            )
            with self.assertRaises(TypeError) as cm:
                await sb.exec(["sh", "-c", "echo $A"], env={"A": 1})
            self.assertEqual(str(cm.exception), "expected str, bytes or os.PathLike object, not int")

        _run(go())

    def test_local_sandbox_like_ag2s(self) -> None:
        """CordonLocalSandbox is made as AG2's LocalSandbox: a temp workdir named ag2_sandbox_*
        (removed by aclose) or the given path (created, kept), usable at once."""

        async def go():
            sb = CordonLocalSandbox(socket=self.daemon.socket, timeout=0.5, languages=("python",))
            wd = sb.host_workdir
            self.assertTrue(wd.name.startswith("ag2_sandbox_"), wd)
            self.assertTrue(wd.exists())
            self.assertEqual(sb.workdir, PurePosixPath(wd.as_posix()))
            self.assertEqual(sb.supported_languages, ("python",))
            self.assertEqual(await sb.exec(["sh", "-c", "echo hello && echo world"]),
                             ExecResult("hello\nworld", 0))
            r = await sb.exec(["sleep", "5"])
            self.assertEqual((r.exit_code, "timed out" in r.output.lower()), (124, True))
            self.assertEqual((await sb.exec(["this-command-does-not-exist-xyz"])).exit_code, 127)
            with self.assertRaises(TypeError):
                await sb.exec(["echo", "x"], shell=True)
            async with sb as same:
                self.assertIs(same, sb)
            with self.assertRaisesRegex(RuntimeError, "closed"):
                await sb.exec(["echo", "hi"])
            await sb.aclose()
            self.assertFalse(wd.exists())

            d = Path(tempfile.mkdtemp(prefix="cordon-py-lsb-"))
            self.addCleanup(shutil.rmtree, d, True)
            nested = d / "deep" / "nested"
            sb = CordonLocalSandbox(nested, socket=self.daemon.socket)
            self.assertEqual(sb.host_workdir, nested.resolve())
            await sb.put_file(PurePosixPath("sub/x.txt"), b"x")
            self.assertEqual((nested / "sub" / "x.txt").read_bytes(), b"x")
            await sb.aclose()
            self.assertTrue(nested.exists())

        _run(go())

    def test_with_ag2_types(self) -> None:
        """The path taken when AG2 is importable, with AG2's types (a stand-in when AG2 is
        absent): AG2's ExecResult, a SingletonFactory whose host workdir AG2's adapter reports
        (a Path that exists), bare refusals through the adapter. In the older layout
        (autogen.beta) and in AG2 1.0's (ag2), which the client tries first."""
        self._with_ag2_types("autogen.beta.tools", [FAKE_AG2])
        self._with_ag2_types("ag2.tools", [FAKE_AG2_1, FAKE_AG2])

    def _with_ag2_types(self, pkg: str, fakes: list) -> None:
        script = r"""
import asyncio, copy, importlib, json, sys
from pathlib import Path
pkg = sys.argv[2]
ExecResult = importlib.import_module(pkg + ".sandbox.base").ExecResult
SandboxBase = importlib.import_module(pkg + ".sandbox.base").SandboxBase
SingletonFactory = importlib.import_module(pkg + ".sandbox.factory").SingletonFactory
ShellAdapter = importlib.import_module(pkg + ".sandbox.adapter").ShellAdapter
LocalSandbox = importlib.import_module(pkg + ".sandbox.local").LocalSandbox
import cordon
from cordon import _ag2
out = {"ag2": cordon.AG2_UNAVAILABLE, "package": _ag2.AG2_PACKAGE}
env = cordon.CordonEnvironment(socket=sys.argv[1])
ro = cordon.CordonEnvironment(socket=sys.argv[1], profile="readonly")
async def go():
    a = ShellAdapter(env)
    out["workdir_is_path"] = isinstance(a.workdir, Path)
    out["workdir_exists"] = a.workdir.exists()
    out["workdir_is_session"] = str(a.workdir) == env.sandbox.session.workdir
    out["factory"] = isinstance(env, SingletonFactory)
    out["sandbox_base"] = isinstance(env.sandbox, SandboxBase) and isinstance(env.sandbox, LocalSandbox)
    out["run_sync_in_loop"] = a.run_sync("echo sync")
    out["execresult_is_ag2s"] = cordon.ExecResult is ExecResult
    out["exec_eq"] = (await env.sandbox.exec(["echo", "hi"])) == ExecResult("hi", 0)
    out["run"] = await a.run("echo hi; exit 3")
    out["refusal"] = await ShellAdapter(ro).run("touch x")
    out["deepcopy"] = copy.deepcopy(env) is env
asyncio.run(go())
env.close(); ro.close()
print(json.dumps(out))
"""
        if _ag2.AG2 is None and _ag2.AG2_PACKAGE != pkg:
            return  # real AG2 of the other layout is installed: its own test covers it
        pp = ":".join(map(str, fakes + [CLIENT])) if _ag2.AG2 is not None else str(CLIENT)
        r = subprocess.run(
            [sys.executable, "-c", script, self.daemon.socket, pkg],
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, PYTHONPATH=pp),
        )
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(
            out,
            {
                "ag2": None,
                "package": pkg,
                "workdir_is_path": True,
                "workdir_exists": True,
                "workdir_is_session": True,
                "factory": True,
                "sandbox_base": True,
                "run_sync_in_loop": "sync",
                "execresult_is_ag2s": True,
                "exec_eq": True,
                "run": "hi\n[exit code: 3]",
                "refusal": "Command not allowed: 'touch x'",
                "deepcopy": True,
            },
        )


class TestShellExecutor(DaemonCase):
    def setUp(self) -> None:
        self.ws = tempfile.mkdtemp(prefix="cordon-py-ws-")
        _give_to_nobody(self.ws)
        self.addCleanup(shutil.rmtree, self.ws, True)
        self.ex = CordonShellExecutor(workspace_dir=self.ws, socket=self.daemon.socket)
        self.addCleanup(self.ex.close)

    def test_run(self) -> None:
        r = self.ex.run("echo 'a  b' c")
        self.assertEqual((r.stdout, r.stderr, r.exit_code, r.timed_out), ("a  b c\n", "", 0, False))
        r = self.ex.run("sh -c 'echo out; echo err >&2; exit 3'")
        self.assertEqual((r.stdout, r.stderr, r.exit_code, r.timed_out), ("out\n", "err\n", 3, False))
        r = self.ex.run("echo $HOME; echo a > b")  # no shell: metacharacters are arguments
        self.assertEqual(r.stdout, "$HOME; echo a > b\n")
        r = self.ex.run("pwd")
        self.assertEqual(r.stdout, self.ws + "\n")

    def test_timeout(self) -> None:
        r = self.ex.run("sleep 5", timeout=1)
        self.assertEqual((r.exit_code, r.timed_out), (-9, True))
        with self.assertRaises(ValueError) as cm:
            self.ex.run("true", timeout=0)
        self.assertEqual(str(cm.exception), "Timeout must be positive")

    def test_refusal_raises(self) -> None:
        with self.assertRaises(ValueError) as cm:
            self.ex.run("rm -rf /")
        self.assertEqual(
            str(cm.exception),
            "Potentially dangerous command detected: Deletion of root filesystem (rm -rf /) is not allowed.",
        )

    def test_run_commands(self) -> None:
        outs = self.ex.run_commands(["echo one", "rm -rf /", "sleep 5", "sh -c 'exit 4'"], timeout_ms=1000)
        self.assertEqual([o.stdout for o in outs], ["one\n", "", "", ""])
        self.assertEqual([(o.outcome.type, o.outcome.exit_code) for o in outs],
                         [("exit", 0), ("exit", 1), ("timeout", None), ("exit", 4)])
        self.assertTrue(outs[1].stderr.startswith("Potentially dangerous command detected"))
        outs = self.ex.run_commands(["true"], timeout_ms=0)
        self.assertEqual((outs[0].stderr, outs[0].outcome.exit_code), ("Timeout must be positive", 1))

    def test_blank_command_is_refused_as_ag2s(self) -> None:
        """AG2's _validate_command: no shlex word gives ValueError("Empty command is not
        allowed"), which run_commands turns into stderr with exit 1 and goes on. cordond's 400
        for a blank command escaped as a CordonError and ended run_commands."""
        for cmd in ("", "   ", "\n\t", " \u3000 "):
            with self.subTest(cmd=cmd):
                with self.assertRaises(ValueError) as cm:
                    self.ex.run(cmd)
                self.assertEqual(str(cm.exception), "Empty command is not allowed")
        outs = self.ex.run_commands(["  ", "echo hi"])
        self.assertEqual(
            [(o.stdout, o.stderr, o.outcome.type, o.outcome.exit_code) for o in outs],
            [("", "Empty command is not allowed", "exit", 1), ("hi\n", "", "exit", 0)],
        )

    def test_timeout_not_positive_runs_nothing(self) -> None:
        """timeout <= 0 raises "Timeout must be positive" before the command is checked or
        sent (docs/compat.md: AG2 checks the command first, but getting its refusal would
        mean sending cordond a run that another rule must stop); nothing runs."""
        for cmd, t in (("touch ran", 0), ("  touch ran x; y | z", -0.5), ("rm -rf /", 0)):
            with self.subTest(cmd=cmd, timeout=t):
                with self.assertRaises(ValueError) as cm:
                    self.ex.run(cmd, timeout=t)
                self.assertEqual(str(cm.exception), "Timeout must be positive")
        outs = self.ex.run_commands(["touch ran"], timeout_ms=0)
        self.assertEqual([(o.stderr, o.outcome.exit_code) for o in outs], [("Timeout must be positive", 1)])
        self.assertFalse(os.path.exists(os.path.join(self.ws, "ran")))

    def test_outputs_compare_by_value(self) -> None:
        """AG2's ShellCallOutcome and ShellCommandOutput are pydantic models: equal when their
        fields are, unhashable, made by keyword with stdout and stderr defaulting to "".
        cordon's compared by identity, so no result was equal to an expected one."""
        from cordon import ShellCallOutcome, ShellCommandOutput

        self.assertEqual(ShellCallOutcome(type="exit", exit_code=1), ShellCallOutcome(type="exit", exit_code=1))
        self.assertNotEqual(ShellCallOutcome(type="exit", exit_code=1), ShellCallOutcome(type="exit", exit_code=2))
        self.assertNotEqual(ShellCallOutcome(type="timeout"), ("timeout", None))
        self.assertIsNone(ShellCallOutcome(type="timeout").exit_code)
        with self.assertRaises(TypeError):
            hash(ShellCallOutcome(type="exit", exit_code=0))
        self.assertEqual(
            ShellCommandOutput(outcome=ShellCallOutcome(type="timeout")),
            ShellCommandOutput(stdout="", stderr="", outcome=ShellCallOutcome(type="timeout")),
        )
        with self.assertRaises(TypeError):
            hash(ShellCommandOutput(outcome=ShellCallOutcome(type="timeout")))
        self.assertEqual(
            self.ex.run_commands(["echo hi", "rm -rf /"]),
            [
                ShellCommandOutput(stdout="hi\n", stderr="", outcome=ShellCallOutcome(type="exit", exit_code=0)),
                ShellCommandOutput(
                    stderr="Potentially dangerous command detected: Deletion of root filesystem "
                    "(rm -rf /) is not allowed.",
                    outcome=ShellCallOutcome(type="exit", exit_code=1),
                ),
            ],
        )

    def test_nul_byte_is_a_value_error(self) -> None:
        """AG2's ShellExecutor passes the split command to Popen, which raises ValueError
        ("embedded null byte") for a NUL; run_commands reports it and goes on. cordond's 400
        escaped as a CordonError."""
        with self.assertRaises(ValueError) as cm:
            self.ex.run("echo a\0b")
        self.assertEqual(str(cm.exception), "embedded null byte")
        outs = self.ex.run_commands(["echo a\0b", "echo hi"])
        self.assertEqual(
            [(o.stdout, o.stderr, o.outcome.exit_code) for o in outs],
            [("", "embedded null byte", 1), ("hi\n", "", 0)],
        )

    def test_settings_need_a_profile(self) -> None:
        with self.assertRaises(NotImplementedError) as cm:
            CordonShellExecutor(allowed_commands=["ls"], socket=self.daemon.socket)
        self.assertIn("allowed_commands", str(cm.exception))


def _covers(tree: str, path: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


class TestInterpreterProfile(unittest.TestCase):
    """An interpreter outside the read-only system trees (a pyenv or venv under a home) is
    made visible by a profile that adds it with ro_bind (docs/ag2.md)."""

    def test_ro_bind_interpreter(self) -> None:
        exe = Path(sys.executable).resolve()
        if any(str(exe).startswith(p + "/") for p in ("/usr", "/bin", "/lib")):
            self.skipTest(f"{exe} is inside the system trees already")
        pdir = tempfile.mkdtemp(prefix="cordon-test-prof-")
        self.addCleanup(shutil.rmtree, pdir, True)
        r = subprocess.run([sys.executable, "-m", "cordon.profile"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(CLIENT)), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(
            any(line.startswith("ro_bind = ") and _covers(line[10:], os.path.realpath(sys.prefix))
                for line in r.stdout.splitlines()), r.stdout)
        Path(pdir, "mypython.conf").write_text(r.stdout)
        # env_inherit is followed through include, by name and by relative path.
        Path(pdir, "bypath.conf").write_text("[profile]\ninclude = mypython.conf\n")
        Path(pdir, "scrubbed.conf").write_text(
            "[profile]\ninclude = mypython\n[sandbox]\nenv_inherit = false\n"
        )
        os.chmod(pdir, 0o755)
        old = os.environ.get("CORDON_PROFILE_PATH")
        os.environ["CORDON_PROFILE_PATH"] = pdir
        try:
            from tests.test_cordon import CORDOND

            _need(CORDOND.is_file(), f"{CORDOND} not built (make)")
            daemon = Daemon()
        finally:
            if old is None:
                os.environ.pop("CORDON_PROFILE_PATH")
            else:
                os.environ["CORDON_PROFILE_PATH"] = old
        daemon_client = Cordon(daemon.socket)
        self.addCleanup(daemon_client.close)
        try:
            code = ["sh", "-c", f"{exe} -c 'print(6*7)'"]
            # `python` as the caller's PATH finds it (a venv's bin, a pyenv shim) runs too.
            which = shutil.which("python")
            on_path = ["sh", "-c", "python -c 'print(6*7)'"]
            with CordonEnvironment("ag2-compat", socket=daemon.socket) as env:
                self.assertEqual(env.exec_sync(code).exit_code, 127)
            with CordonEnvironment("mypython", socket=daemon.socket) as env:
                self.assertEqual(env.exec_sync(code), ExecResult("42", 0))
                self.assertTrue(env.inherits_env())
                if which is not None:
                    self.assertEqual(env.exec_sync(on_path), ExecResult("42", 0), which)
            for name, inherits in (("mypython", True), ("bypath", True), ("scrubbed", False),
                                   ("default", False), ("no-such", False)):
                with self.subTest(profile=name):
                    self.assertIs(daemon_client.profile_inherits_env(name), inherits)
        finally:
            self.assertEqual(daemon.stop(), 0)


class TestProfileText(unittest.TestCase):
    def test_profile_text(self) -> None:
        from cordon.profile import main, profile_text, python_trees

        t = profile_text("default", ["/opt/x"], python=False)
        self.assertEqual(
            t.splitlines()[:4], ["[profile]", f"description = default plus {sys.executable} read-only",
                                 "include = default", "[sandbox]"])
        self.assertIn("ro_bind = /usr\n", t)
        self.assertTrue(t.endswith("ro_bind = /opt/x\n"), t)
        for tree in python_trees():  # python=False: this Python's trees are not added
            self.assertNotIn(f"ro_bind = {tree}\n", t)
            self.assertIn(f"ro_bind = {tree}\n", profile_text())
        with self.assertRaises(ValueError):
            profile_text(extra=["relative"])
        self.assertEqual(main(["--no-python", "relative"]), 2)

    def test_pyenv_root(self) -> None:
        """A pyenv Python gets the whole pyenv root (its shims are what `python` on PATH runs),
        any other prefix itself."""
        from cordon.profile import _pyenv_root

        d = tempfile.mkdtemp(prefix="cordon-py-pyenv-")
        self.addCleanup(shutil.rmtree, d, True)
        os.makedirs(os.path.join(d, "pyenv", "versions", "3.11.7"))
        os.makedirs(os.path.join(d, "venv", "versions", "x"))
        self.assertIsNone(_pyenv_root(os.path.join(d, "pyenv", "versions", "3.11.7")))
        os.makedirs(os.path.join(d, "pyenv", "shims"))
        self.assertEqual(_pyenv_root(os.path.join(d, "pyenv", "versions", "3.11.7")),
                         os.path.join(d, "pyenv"))
        self.assertIsNone(_pyenv_root(os.path.join(d, "venv", "versions", "x")))
        self.assertIsNone(_pyenv_root("/usr"))


class TestPackage(unittest.TestCase):
    def test_pip_install(self) -> None:
        """`pip install ./clients/python` works offline (setuptools, no build isolation) and
        gives `import cordon`."""
        # Debian's python3 with python3-pip, -setuptools and -wheel (make deps installs them);
        # another python3 works too when it has the three.
        py = PYTHON
        probe = subprocess.run([py, "-c", "import setuptools, wheel, pip"], capture_output=True)
        _need(probe.returncode == 0, f"{py}: setuptools, wheel and pip are not all importable (make deps)")
        target = tempfile.mkdtemp(prefix="cordon-py-pip-")
        self.addCleanup(shutil.rmtree, target, True)
        build = tempfile.mkdtemp(prefix="cordon-py-src-")
        self.addCleanup(shutil.rmtree, build, True)
        # A copy: setuptools writes build/ and *.egg-info next to the sources.
        src = os.path.join(build, "python")
        shutil.copytree(CLIENT, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
        r = subprocess.run(
            [py, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation",
             "--no-deps", "--disable-pip-version-check", "--target", target, src],
            capture_output=True, text=True, timeout=300,
        )
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run(
            [py, "-I", "-c",
             "import sys; sys.path.insert(0, sys.argv[1]); import cordon; print(cordon.__file__, cordon.__version__)",
             target],
            capture_output=True, text=True, cwd="/", timeout=60,
        )
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith(os.path.join(target, "cordon", "__init__.py")), r.stdout)


if __name__ == "__main__":
    unittest.main()
