"""Tests of the Python client against a real cordond on a temporary socket.

Run from the repository root: python3 -m unittest discover -s clients/python/tests -t clients/python
They need build/cordond (make); without it they skip, except under CI=true where that fails.
"""

import asyncio
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "clients" / "python"))

from cordon import Cordon, CordonEnvironment, CordonError, ExecResult  # noqa: E402

CORDOND = Path(os.environ.get("CORDOND_BIN") or ROOT / "build" / "cordond")
CI = os.environ.get("CI") == "true" or os.environ.get("CORDON_REQUIRE_ALL") == "1"
MEMBER, OUTSIDER = "cordon-pm", "cordon-pn"
# Another user must be able to run it (a pyenv under /root is not reachable for them).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def _need(cond: bool, why: str) -> None:
    if cond:
        return
    if CI:
        raise AssertionError(f"missing under CI: {why}")
    raise unittest.SkipTest(why)


def _ensure_users() -> None:
    """Group cordon, a member and a non-member, created idempotently (under a lock: suites run
    in parallel)."""
    script = (
        "getent group cordon >/dev/null || groupadd -r cordon; "
        f"id {MEMBER} >/dev/null 2>&1 || useradd -M -N -s /bin/sh -G cordon {MEMBER}; "
        f"id {OUTSIDER} >/dev/null 2>&1 || useradd -M -N -s /bin/sh {OUTSIDER}"
    )
    subprocess.run(["flock", "/tmp/cordon-test-users.lock", "sh", "-c", script], check=True)


def _give_to_nobody(path: str) -> None:
    """Root's commands run as the workdir's owner, or nobody in a root-owned one (SPEC section
    6): a workdir root's commands should write to is given to nobody."""
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)


def ag2_format(output: str, exit_code: int) -> str:
    """AG2's _format (ag2-behaviour.md section 2)."""
    if exit_code == 0:
        return output
    return f"{output}\n[exit code: {exit_code}]" if output else f"[exit code: {exit_code}]"


class Daemon:
    def __init__(self, *args: str):
        self.dir = tempfile.mkdtemp(prefix="cordond-py-")
        os.chmod(self.dir, 0o755)
        self.socket = os.path.join(self.dir, "s")
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.proc = subprocess.Popen(
            [str(CORDOND), "--socket", self.socket, *args],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.socket)
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.02)
        self.stop()
        raise AssertionError("cordond did not start: " + self.logtext())

    def logtext(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return self.proc.returncode


class DaemonCase(unittest.TestCase):
    daemon: Daemon

    @classmethod
    def setUpClass(cls) -> None:
        _need(CORDOND.is_file() and os.access(CORDOND, os.X_OK), f"{CORDOND} not built (make)")
        cls.daemon = Daemon()
        cls.client = Cordon(cls.daemon.socket)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        rc = cls.daemon.stop()
        assert rc == 0, f"cordond exited {rc}"


class TestCordon(DaemonCase):
    def test_health_and_profiles(self) -> None:
        h = self.client.health()
        self.assertEqual(h["status"], "ok")
        names = [p["name"] for p in self.client.profiles()]
        self.assertIn("default", names)

    def test_run_gives_ag2_string(self) -> None:
        self.assertEqual(self.client.run("echo hi"), "hi")
        self.assertEqual(self.client.run("exit 3"), "[exit code: 3]")
        self.assertEqual(self.client.run("printf out; printf err >&2; exit 2"), "outerr\n[exit code: 2]")
        self.assertEqual(self.client.run("printf '  padded \\r\\n'"), "padded")

    def test_run_json(self) -> None:
        r = self.client.run_json("echo hi; echo err >&2")
        for k in ("output", "stdout", "stderr", "exit_code", "signal", "timed_out", "refused",
                  "truncated", "stdout_bytes", "stderr_bytes", "duration_ms", "backend", "workdir"):
            self.assertIn(k, r)
        self.assertEqual(r["stdout"], "hi\n")
        self.assertEqual(r["stderr"], "err\n")
        self.assertEqual(r["exit_code"], 0)
        self.assertFalse(r["timed_out"])

    def test_timeout_as_written(self) -> None:
        self.assertEqual(self.client.run("sleep 5", timeout=1), "Command timed out after 1s\n[exit code: 124]")
        self.assertEqual(self.client.run("sleep 5", timeout=0.5), "Command timed out after 0.5s\n[exit code: 124]")
        self.assertEqual(self.client.run("sleep 5", timeout=1.0), "Command timed out after 1.0s\n[exit code: 124]")

    def test_max_output_and_env(self) -> None:
        self.assertEqual(self.client.run("echo abcdef", max_output=3), "abc\n[truncated: showing first 3 of 6 chars]")
        self.assertEqual(self.client.run("echo $FOO", env={"FOO": "bar"}), "bar")

    def test_argv(self) -> None:
        self.assertEqual(self.client.run(["echo", "a  b", "c"]), "a  b c")
        self.assertEqual(self.client.run(["sh", "-c", "echo $0"]), "sh")
        self.assertEqual(self.client.run([]), "[exit code: 2]")

    def test_refusal(self) -> None:
        r = self.client.run_json("rm -rf x", blocked=["rm"])
        self.assertEqual(r["output"], "Command not allowed: 'rm -rf x'")
        self.assertEqual(r["refused"], r["output"])

    def test_backend_is_passed_on(self) -> None:
        # cordond's one-shot Docker and Daytona runs (tests/docker, tests/daytona run them): a
        # refused command and an empty argv need no container or sandbox, and name the backend.
        r = self.client.run_json("rm -rf x", backend="docker", blocked=["rm"])
        self.assertEqual((r["refused"], r["backend"]), ("Command not allowed: 'rm -rf x'", "docker"))
        r = self.client.run_json([], backend="daytona")
        self.assertEqual((r["output"], r["backend"]), ("[exit code: 2]", "daytona"))

    def test_workdir(self) -> None:
        d = tempfile.mkdtemp(prefix="cordon-py-wd-")
        _give_to_nobody(d)
        try:
            self.assertEqual(self.client.run("pwd", workdir=d), d)
            self.client.run("echo x > made", workdir=d)
            self.assertTrue(os.path.exists(os.path.join(d, "made")))
        finally:
            shutil.rmtree(d)

    def test_umask_is_ours(self) -> None:
        """The command's files get this process's umask, as in a direct run (through cordond
        they got its 022 before)."""
        d = tempfile.mkdtemp(prefix="cordon-py-um-")
        self.addCleanup(shutil.rmtree, d, True)
        _give_to_nobody(d)
        old = os.umask(0o077)
        try:
            self.client.run("touch a", workdir=d)
            self.client.run("touch b", workdir=d, umask=0o027)
        finally:
            os.umask(old)
        self.assertEqual(os.stat(os.path.join(d, "a")).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(os.path.join(d, "b")).st_mode & 0o777, 0o640)

    def test_errors(self) -> None:
        with self.assertRaises(TypeError):
            self.client.run("ls", timout=3)
        cases = [
            ({"command": "ls", "profile": "../../etc/passwd"}, "profile"),
            ({"command": "ls", "profile": "no-such-profile"}, "profile"),
            ({"command": "ls", "timeout": -1}, "timeout"),
            ({"command": "ls", "timeout": "abc"}, "timeout"),
            ({"command": "ls", "max_output": -1}, "max_output"),
            ({"command": "ls", "workdir": "relative"}, "workdir"),
            ({"command": 5}, "command"),
            ({"command": "ls", "extra": 1}, "extra"),
            ({"command": "ls", "argv": ["ls"]}, "argv"),
            ({}, "command"),
        ]
        for body, field in cases:
            with self.subTest(body=body):
                with self.assertRaises(CordonError) as cm:
                    self.client.request("POST", "/v1/run", body)
                self.assertEqual(cm.exception.status, 400)
                self.assertTrue(cm.exception.message.startswith(field + ":"), cm.exception.message)
        with self.assertRaises(CordonError) as cm:
            self.client.request("GET", "/v1/nope")
        self.assertEqual(cm.exception.status, 404)

    def test_unreachable(self) -> None:
        with self.assertRaises(CordonError) as cm:
            Cordon("/nonexistent/cordon.sock").run("ls")
        self.assertEqual(cm.exception.status, 0)

    def test_metrics(self) -> None:
        self.client.run("true")
        m = self.client.metrics()
        self.assertIn("# TYPE cordond_runs_total counter", m)
        self.assertIn("cordond_run_duration_seconds_bucket{le=\"+Inf\"}", m)

    def test_session_files(self) -> None:
        with self.client.session() as s:
            s.put_file("dir/a.txt", b"hello")
            self.assertEqual(s.run("cat dir/a.txt"), "hello")
            s.run("echo made > b.txt")
            self.assertEqual(s.get_file("b.txt"), b"made\n")
            self.assertEqual(s.run("pwd"), s.workdir)
            s.remove_file("dir/a.txt")
            s.remove_file("dir/a.txt")  # missing is fine, as AG2's unlink(missing_ok=True)
            with self.assertRaises(CordonError) as cm:
                s.get_file("../../etc/passwd")
            self.assertEqual(cm.exception.status, 400)
            with self.assertRaises(TypeError):
                s.run("ls", workdir="/")
            with self.assertRaises(CordonError) as cm:
                self.client.request("POST", f"/v1/sessions/{s.id}/run", {"command": "ls", "workdir": "/"})
            self.assertEqual((cm.exception.status, cm.exception.message),
                             (400, "workdir: fixed when the session was created"))
            wd = s.workdir
        self.assertFalse(os.path.exists(wd))


class TestEnvironment(DaemonCase):
    def test_protocol_async(self) -> None:
        async def go() -> None:
            env = CordonEnvironment(profile="default", socket=self.daemon.socket)
            async with env.open() as sb:
                self.assertIsInstance(sb.workdir, PurePosixPath)
                self.assertEqual(str(sb.host_workdir), str(sb.workdir))
                self.assertEqual(await sb.exec(["sh", "-c", "echo hi"]), ExecResult("hi", 0))
                self.assertEqual(await sb.exec(["sh", "-c", "exit 3"]), ExecResult("", 3))
                self.assertEqual(await sb.exec(["sh", "-c", "echo no; exit 4"]), ExecResult("no", 4))
                self.assertEqual(await sb.exec([]), ExecResult("", 2))
                r = await sb.exec(["sh", "-c", "sleep 5"], timeout=1)
                self.assertEqual((r.output, r.exit_code), ("Command timed out after 1s", 124))
                self.assertEqual((await sb.exec(["sh", "-c", "echo $A$B"], env={"A": "1"})).output, "1")
                await sb.put_file("f.txt", b"data")
                with self.assertRaises(ValueError):
                    await sb.put_file("/etc/x", b"no")
                wd = sb.host_workdir
            # The factory keeps its sandbox across opens: files persist.
            async with env.open() as sb2:
                self.assertIs(sb2, sb)
                self.assertEqual((await sb2.exec(["cat", "f.txt"])).output, "data")
                await sb2.remove_file("f.txt")
                await sb2.remove_file("f.txt")
                self.assertEqual((await sb2.exec(["ls"])).output, "")
            await env.aclose()
            with self.assertRaises(RuntimeError):
                await sb.exec(["true"])
            self.assertFalse(wd.exists())

        asyncio.run(go())

    def test_like_shell_adapter(self) -> None:
        """What AG2's ShellAdapter does per tool call: open, exec sh -c, _format."""

        async def adapter_run(factory, command):
            async with factory.open(None) as sandbox:
                r = await sandbox.exec(["sh", "-c", command], env=None, timeout=None)
            return ag2_format(r.output, r.exit_code)

        async def go() -> None:
            env = CordonEnvironment(socket=self.daemon.socket, env_vars={"GREETING": "hello"})
            try:
                for cmd in ("echo hi", "exit 7", "printf a; printf b >&2; exit 1", "echo $GREETING"):
                    got = await adapter_run(env, cmd)
                    want = self.client.run(cmd, env={"GREETING": "hello"})
                    self.assertEqual(got, want, cmd)
                # Sequential calls on one event loop, files persisting between them.
                await adapter_run(env, "echo 1 > n")
                self.assertEqual(await adapter_run(env, "cat n"), "1")
            finally:
                await env.aclose()

        asyncio.run(go())

    def test_sync_use_and_explicit_workdir(self) -> None:
        d = tempfile.mkdtemp(prefix="cordon-py-env-")
        _give_to_nobody(d)
        try:
            with CordonEnvironment(socket=self.daemon.socket, workdir=d, timeout=5) as env:
                self.assertEqual(env.run("pwd"), d)
                self.assertEqual(env.exec_sync(["sh", "-c", "echo x > kept"]), ExecResult("", 0))
                self.assertEqual(env.workdir, PurePosixPath(d))
            # An explicit workdir is the user's: kept, with its files.
            self.assertTrue(os.path.exists(os.path.join(d, "kept")))
        finally:
            shutil.rmtree(d)
        with self.assertRaises(ValueError):
            CordonEnvironment(timeout=0)


    def test_root_cleanup_empties_another_users_workdir_with_their_rights(self) -> None:
        """cleanup=True as root, on a member's workdir: the member decides what is in it, and
        another user's 0777 directory they moved in, with that user's files below it, was
        deleted by root's rmtree (found in red team). Now emptied with the member's rights:
        what the member could not delete stays; what was theirs goes."""
        import pwd

        _need(os.geteuid() == 0, "root (the removal as the workdir's owner)")
        _ensure_users()
        pm, pn = pwd.getpwnam(MEMBER), pwd.getpwnam(OUTSIDER)
        base = tempfile.mkdtemp(prefix="cordon-py-rm-")
        self.addCleanup(shutil.rmtree, base, True)
        os.chmod(base, 0o755)
        wd, shared = os.path.join(base, "wd"), os.path.join(base, "shared")
        os.mkdir(wd)
        os.chown(wd, pm.pw_uid, pm.pw_gid)
        # The other user's: a 0777 directory (anyone may move it), their files below.
        theirs = os.path.join(shared, "theirs")
        os.makedirs(os.path.join(theirs, "keep"))
        with open(os.path.join(theirs, "keep", "f"), "w") as f:
            f.write("not the member's")
        for d in (shared, theirs):
            os.chmod(d, 0o777)
        for d, _, files in os.walk(shared):
            for x in [d] + [os.path.join(d, n) for n in files]:
                os.chown(x, pn.pw_uid, pn.pw_gid)
        env = CordonEnvironment(socket=self.daemon.socket, workdir=wd, cleanup=True)
        try:
            self.assertEqual(env.exec_sync(["sh", "-c", "id -un; echo x > mine"]),
                             ExecResult(MEMBER, 0))
            subprocess.run(["setpriv", f"--reuid={pm.pw_uid}", f"--regid={pm.pw_gid}",
                            "--clear-groups", "mv", theirs, wd], check=True)
        finally:
            env.close()
        self.assertTrue(os.path.exists(os.path.join(wd, "theirs", "keep", "f")))
        self.assertFalse(os.path.exists(os.path.join(wd, "mine")))
        # A workdir of its own (root's) still goes whole.
        d = tempfile.mkdtemp(prefix="cordon-py-rm-")
        _give_to_nobody(d)
        env = CordonEnvironment(socket=self.daemon.socket, workdir=d, cleanup=True)
        env.exec_sync(["sh", "-c", "mkdir -p a/b && echo x > a/b/c"])
        env.close()
        self.assertFalse(os.path.exists(d))


class TestAuthorisation(DaemonCase):
    def _as(self, user: str, code: str) -> subprocess.CompletedProcess:
        # tests/run-all.sh stages the client when the tree is closed to other users.
        env = dict(os.environ, PYTHONPATH=os.environ.get(
            "CORDON_PYTHONPATH", str(ROOT / "clients" / "python")))
        return subprocess.run(
            ["runuser", "-u", user, "--", PYTHON, "-c", code],
            capture_output=True, text=True, env=env, timeout=60,
        )

    def test_member_and_outsider(self) -> None:
        _need(os.geteuid() == 0, "needs root to create users and switch to them")
        _ensure_users()
        # The daemon resolves groups per connection, so users made after its start count.
        code = (
            "import json; from cordon import Cordon, CordonError\n"
            f"c = Cordon({self.daemon.socket!r})\n"
            "try:\n"
            "    print(json.dumps({'ok': c.run_json('id -un')}))\n"
            "except CordonError as e:\n"
            "    print(json.dumps({'status': e.status, 'message': e.message}))\n"
        )
        r = self._as(MEMBER, code)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertIn("ok", out, out)
        # A non-member cannot even connect to the 0660 root:cordon socket...
        r = self._as(OUTSIDER, code)
        self.assertEqual(json.loads(r.stdout)["status"], 0, r.stdout)
        # ...and with the file mode opened up, SO_PEERCRED still says no.
        os.chmod(self.daemon.socket, 0o666)
        try:
            r = self._as(OUTSIDER, code)
            out = json.loads(r.stdout)
            self.assertEqual(out["status"], 403, out)
            self.assertIn("not authorised", out["message"])
        finally:
            os.chmod(self.daemon.socket, 0o660)


class FakeServer:
    """A Unix socket server that answers each request with the next of the given raw answers:
    bytes (the connection stays open), (bytes, "close") (closed after it), or None (closed
    without an answer). It records the requests."""

    def __init__(self, answers):
        import threading
        self.dir = tempfile.mkdtemp(prefix="cordon-py-fake-")
        self.path = os.path.join(self.dir, "s")
        self.answers = list(answers)
        self.requests = []
        self.connections = 0
        self.srv = socket.socket(socket.AF_UNIX)
        self.srv.bind(self.path)
        self.srv.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _read_request(self, c):
        buf = b""
        while b"\r\n\r\n" not in buf:
            try:
                d = c.recv(65536)
            except ConnectionResetError:  # the client closed with an answer unread
                return None
            if not d:
                return None
            buf += d
        head, _, body = buf.partition(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        while len(body) < n:
            body += c.recv(65536)
        return head.decode() + "\n\n" + body.decode()

    def _serve(self):
        while self.answers:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            self.connections += 1
            with c:
                while self.answers:
                    req = self._read_request(c)
                    if req is None:
                        break
                    self.requests.append(req)
                    a = self.answers.pop(0)
                    if a is None:
                        break
                    if isinstance(a, tuple):
                        c.sendall(a[0])
                        break
                    c.sendall(a)

    def close(self):
        self.srv.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class TestHttp(unittest.TestCase):
    """The client's own HTTP/1.1 (cordon/client.py, _UnixConnection), against a fake server."""

    def fake(self, *answers):
        f = FakeServer(answers)
        self.addCleanup(f.close)
        return f, Cordon(f.path, timeout=5)

    def test_content_length_keep_alive(self):
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"status\":1}"
        f, c = self.fake(ok, ok)
        self.assertEqual(c.health(), {"status": 1})
        self.assertEqual(c.request("POST", "/v1/run", {"command": "x"}), {"status": 1})
        self.assertEqual(f.connections, 1)
        self.assertTrue(f.requests[0].startswith("GET /v1/health HTTP/1.1\r\n"), f.requests[0])
        self.assertIn("\r\nContent-Length: 16\n", f.requests[1])
        self.assertTrue(f.requests[1].endswith('{"command": "x"}'), f.requests[1])
        c.close()

    def test_listener_of_another_uid_gets_nothing(self):
        """A socket neither root nor we listen on (CORDON_SOCKET kept by sudo or a service)
        gets no request: found in review; the client sent it before."""
        _need(os.geteuid() == 0, "needs root (a listener of another uid)")
        d = tempfile.mkdtemp(prefix="cordon-py-other-")
        self.addCleanup(shutil.rmtree, d, True)
        os.chmod(d, 0o777)
        path = os.path.join(d, "s")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # nobody's listener: reports what it was sent
            try:
                os.close(r)
                os.setgid(65534)
                os.setuid(65534)
                srv = socket.socket(socket.AF_UNIX)
                srv.bind(path)
                srv.listen(4)
                os.write(w, b"L")
                c, _ = srv.accept()
                os.write(w, c.recv(4096))
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(os.read(r, 1), b"L")
        with self.assertRaises(CordonError) as cm:
            Cordon(path, timeout=5).run("echo hi", env={"TOKEN": "hunter2"})
        self.assertIn("neither root nor you", str(cm.exception))
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        got = os.read(r, 4096)
        os.close(r)
        self.assertNotIn(b"hunter2", got)
        self.assertNotIn(b"echo hi", got)

    def test_a_post_is_never_sent_twice(self):
        """A kept-alive connection that ends with no answer after a POST was read: the run
        may have happened, so the client says so rather than sending it again (found in
        review: `rm -rf important` went twice). A GET is retried on a fresh connection."""
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"status\":1}"
        f, c = self.fake(ok, None, ok)
        self.assertEqual(c.health(), {"status": 1})
        with self.assertRaises(CordonError):
            c.request("POST", "/v1/run", {"command": "rm -rf important"})
        self.assertEqual(len(f.requests), 2, f.requests)
        c.close()
        f2, c2 = self.fake(ok, None, ok)
        self.assertEqual(c2.health(), {"status": 1})
        self.assertEqual(c2.health(), {"status": 1})  # the GET again, on a new connection
        self.assertEqual(f2.connections, 2)
        c2.close()

    def test_chunked(self):
        f, c = self.fake(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"4\r\n{\"a\"\r\n3;x=y\r\n: 1\r\n1\r\n}\r\n0\r\nTrailer: t\r\n\r\n")
        self.assertEqual(c.health(), {"a": 1})
        c.close()

    def test_close_delimited_and_connection_close(self):
        f, c = self.fake((b"HTTP/1.1 200 OK\r\n\r\n{\"b\": 2}", "close"),
                         (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
                          "close"),
                         (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", "close"))
        self.assertEqual(c.health(), {"b": 2})
        self.assertEqual(c.health(), {})
        self.assertEqual(c.health(), {})
        self.assertEqual(f.connections, 3)  # a new connection after each closing answer
        c.close()

    def test_error_status(self):
        body = b'{"error":"command: missing"}\n'
        f, c = self.fake(b"HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\n\r\n" % len(body)
                         + body)
        with self.assertRaises(CordonError) as cm:
            c.run("x")
        self.assertEqual((cm.exception.status, cm.exception.message), (400, "command: missing"))
        c.close()

    def test_stale_keep_alive_is_retried_once(self):
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
        # The server closes the kept connection without answering (its idle timeout).
        f, c = self.fake(ok, None, ok)
        self.assertEqual(c.health(), {})
        self.assertEqual(c.health(), {})
        self.assertEqual(f.connections, 2)
        self.assertEqual(len(f.requests), 3)
        c.close()

    def test_no_retry_on_a_fresh_connection_or_a_partial_answer(self):
        f, c = self.fake(None)
        with self.assertRaises(CordonError) as cm:
            c.health()
        self.assertEqual(cm.exception.status, 0)
        self.assertIn("closed connection without response", cm.exception.message)
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
        f, c = self.fake(ok, (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{\"a\"", "close"),
                         ok)
        self.assertEqual(c.health(), {})
        with self.assertRaises(CordonError) as cm:
            c.health()
        self.assertIn("in the middle of an answer", cm.exception.message)
        self.assertEqual(len(f.requests), 2)  # not sent again: it was served
        c.close()

    def test_not_http(self):
        f, c = self.fake(b"SSH-2.0-OpenSSH\r\n\r\n")
        with self.assertRaises(CordonError) as cm:
            c.health()
        self.assertIn("not an HTTP answer", cm.exception.message)
        c.close()

    def test_interrupted_exchange_drops_the_connection(self):
        """A request interrupted during the exchange (KeyboardInterrupt, or a ValueError from a
        malformed answer) leaves its answer unread: found in review, the connection was kept
        and the next call returned the previous call's answer."""
        from cordon import client as cl
        one = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"n\":1}"
        two = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"n\":2}"
        f, c = self.fake(one, two)
        real = cl._UnixConnection._more
        calls = []

        def interrupted(conn):
            if not calls:  # ^C once the answer is there, unread
                calls.append(1)
                select.select([conn.sock], [], [], 5)
                raise KeyboardInterrupt
            return real(conn)

        cl._UnixConnection._more = interrupted
        try:
            with self.assertRaises(KeyboardInterrupt):
                c.health()
        finally:
            cl._UnixConnection._more = real
        self.assertEqual(c.health(), {"n": 2})
        self.assertEqual(f.connections, 2)
        c.close()
        bad = b"HTTP/1.1 200 OK\r\nContent-Length: 7x\r\n\r\n{\"n\":1}"
        f, c = self.fake(bad, two)
        with self.assertRaises(CordonError) as cm:  # a malformed answer is cordond's failure
            c.health()
        self.assertIn("malformed answer", str(cm.exception))
        self.assertEqual(c.health(), {"n": 2})
        c.close()

    def test_forked_child_opens_its_own_connection(self):
        """A child after fork() never uses its parent's connection: found in review, the
        child sent on the parent's socket and their answers got mixed."""
        one = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"n\":1}"
        two = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"n\":2}"
        f, c = self.fake(one, two)
        self.assertEqual(c.health(), {"n": 1})
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                os.write(w, json.dumps(c.health()).encode())
            except BaseException as e:
                os.write(w, repr(e).encode())
            finally:
                os._exit(0)
        os.close(w)
        c.close()  # the server serves one connection at a time: the child's comes next
        got = b""
        while True:
            d = os.read(r, 4096)
            if not d:
                break
            got += d
        os.close(r)
        os.waitpid(pid, 0)
        self.assertEqual(got, b'{"n": 2}')
        self.assertEqual(f.connections, 2)

    def test_finished_threads_connections_are_closed(self):
        """A thread's connection is closed when the thread is gone: found in review, every
        thread's was kept for ever (a thread-per-request host hit cordond's 128 connections
        per caller, then even close() got 429)."""
        import gc
        import threading
        import warnings

        d = tempfile.mkdtemp(prefix="cordon-py-fake-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "s")
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(path)
        srv.listen(64)
        self.addCleanup(srv.close)
        ended = []
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"

        def serve(conn):
            with conn:
                while True:
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        ended.append(1)
                        return
                    conn.sendall(ok)

        def accept():
            while True:
                try:
                    conn, _ = srv.accept()
                except OSError:
                    return
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        c = Cordon(path, timeout=5)
        got = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(10):
                t = threading.Thread(target=lambda: got.append(c.health()))
                t.start()
                t.join()
            gc.collect()
        self.assertEqual(got, [{}] * 10)
        deadline = time.time() + 5
        while len(ended) < 10 and time.time() < deadline:
            time.sleep(0.01)
        self.assertEqual(len(ended), 10)  # each closed by the client once its thread ended
        self.assertEqual([w for w in caught if issubclass(w.category, ResourceWarning)], [])
        self.assertEqual(c.health(), {})  # this thread's, still alive until close()
        c.close()
        deadline = time.time() + 5
        while len(ended) < 11 and time.time() < deadline:
            time.sleep(0.01)
        self.assertEqual(len(ended), 11)

    def test_malformed_answers_are_cordon_errors(self):
        """Not JSON, or not UTF-8: a CordonError, as every failure of cordond's (found in
        review: a raw JSONDecodeError or UnicodeDecodeError reached the caller)."""
        for body in (b"not json", b"\xff\xfe"):
            ans = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            f, c = self.fake(ans)
            with self.assertRaises(CordonError) as cm:
                c.health()
            self.assertIn("malformed answer", str(cm.exception))
            c.close()

    def test_answers_of_the_wrong_shape_are_cordon_errors(self):
        """A length that is not digits, or an answer without the fields the client reads (of
        their types): a CordonError, never a short read that leaves the rest of the answer for
        the next request, a KeyError or TypeError, or a session id put into the next request's
        path as it came (found in red team)."""
        from cordon.client import Session

        def ans(body, head=b""):
            return b"HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)

        session = ans(b'{"id": "ab12", "workdir": "/tmp/w", "backend": "docker"}')
        cases = [
            ("health", [b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n{}{}"]),
            ("health", [b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}"]),
            ("health", [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"-1\r\n{}\r\n0\r\n\r\n"]),
            ("health", [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"0x2\r\n{}\r\n0\r\n\r\n"]),
            ("health", [ans(b"[]")]),
            ("run", [ans(b"[1, 2]")]),
            ("run", [ans(b"null")]),
            ("run", [ans(b'{"exit_code": 0}')]),
            ("run", [ans(b'{"output": "x", "exit_code": "0"}')]),
            ("run", [ans(b'{"output": "x", "exit_code": true}')]),
            ("session", [ans(b'{"workdir": "/tmp/w"}')]),
            ("session", [ans(b'{"id": "../../v1/run", "workdir": "/tmp/w"}')]),
            ("session", [ans(b'{"id": ["a"], "workdir": "/tmp/w"}')]),
            ("profiles", [ans(b'{"profiles": 3}')]),
            ("profiles", [ans(b'{"profiles": [null]}')]),
            ("exec", [session, ans(b'{"output": "o"}')]),
            ("exec", [session, ans(b'{"output": "o", "exit_code": "zz"}')]),
        ]
        for what, answers in cases:
            f, c = self.fake(*answers)
            with self.subTest(what=what, answer=answers[-1]):
                with self.assertRaises(CordonError) as cm:
                    if what == "health":
                        c.health()
                    elif what == "run":
                        c.run("true")
                    elif what == "session":
                        c.session().run("true")
                    elif what == "profiles":
                        c.profiles()
                    else:
                        env = CordonEnvironment(backend="docker", client=c, inherit_env=False)
                        env.sandbox.exec_sync(["true"])
                self.assertIn("malformed answer", str(cm.exception))
                self.assertFalse(any("/v1/run/run" in r for r in f.requests), f.requests)
            c.close()
        # The well-formed ones still go through.
        f, c = self.fake(session, ans(b'{"output": "o", "exit_code": 0}'))
        s = c.session()
        self.assertIsInstance(s, Session)
        self.assertEqual(s.run("true"), "o")
        c.close()

    def test_bad_path(self):
        f, c = self.fake()
        with self.assertRaises(ValueError):
            c.request("GET", "/v1/a b")


if __name__ == "__main__":
    unittest.main()
