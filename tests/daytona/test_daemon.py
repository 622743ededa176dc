"""cordond's Daytona sessions and the Python client's CordonEnvironment(backend="daytona"),
against the fake behind Prism (tests/daytona/run.sh builds the environment: daytona_env.py).
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

from daytona_env import API, CORDON, FAKE, KEY, TOOLBOX, fake_config, fake_faults, fake_reset, fake_state

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python"))
sys.path.insert(0, str(ROOT / "clients" / "python" / "tests"))

from cordon import Cordon, CordonEnvironment, CordonError  # noqa: E402
from test_cordon import Daemon  # noqa: E402


def start_daemon(*args: str, **env: str) -> Daemon:
    """A cordond (with args) and this Daytona environment (it keeps it, then clears its own)."""
    saved = {k: os.environ.get(k) for k in ("DAYTONA_API_KEY", "DAYTONA_API_URL", "DAYTONA_TARGET",
                                             "CORDON_PROFILE_PATH")}
    try:
        for k in saved:
            os.environ.pop(k, None)
        os.environ.update(env)
        return Daemon(*args)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class DaytonaSessions(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.daemon = start_daemon(DAYTONA_API_KEY=KEY, DAYTONA_API_URL=API)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.daemon.stop()

    def tearDown(self) -> None:
        self.assertEqual(fake_state()["live"], 0, "a sandbox was left behind")

    def test_environment_runs_in_one_sandbox_with_cwd_env_and_files(self) -> None:
        before = len(fake_state()["sandboxes"])
        with CordonEnvironment(backend="daytona", socket=self.daemon.socket) as env:
            sb = env.sandbox
            self.assertEqual(str(sb.workdir), "/workspace")
            self.assertIsNone(sb.host_workdir)
            r = sb.exec_sync(["sh", "-c", "echo one > a.txt; echo $GREETING"], env={"GREETING": "hi"})
            self.assertEqual((r.output, r.exit_code), ("hi", 0))
            # the same sandbox: the file of the first run is there
            r = sb.exec_sync(["cat", "a.txt"])
            self.assertEqual((r.output, r.exit_code), ("one", 0))
            # (text: Prism's proxy re-encodes a multipart body as UTF-8; bytes: below)
            sb.put_file_sync("sub/b.txt", b"some text\n")
            self.assertEqual(sb.get_file_sync("sub/b.txt"), b"some text\n")
            r = sb.exec_sync(["sh", "-c", "wc -c < sub/b.txt"])
            self.assertEqual(r.output.strip(), "10")
            sb.remove_file_sync("sub/b.txt")
            with self.assertRaises(Exception):
                sb.get_file_sync("sub/b.txt")
            r = sb.exec_sync(["sh", "-c", "exit 3"])
            self.assertEqual(r.exit_code, 3)
            st = fake_state()
            self.assertEqual(len(st["sandboxes"]) - before, 1, "one sandbox for the session")
            self.assertEqual(st["live"], 1)
            # what cordond sent: cwd = the workdir, the env, and never the key
            ex = [q for q in st["requests"] if q["path"].endswith("/process/execute")]
            self.assertTrue(ex)
            self.assertEqual(ex[-1]["json"]["cwd"], "/workspace")
            first = next(q for q in ex if "GREETING" in q["json"].get("envs", {}))
            self.assertEqual(first["json"]["envs"]["GREETING"], "hi")
            for q in ex:
                self.assertNotIn(KEY, json.dumps(q["json"]))
        self.assertEqual(fake_state()["live"], 0)

    def test_binary_files_round_trip(self) -> None:
        # The toolbox directly (Prism's proxy would re-encode the bytes), the API through Prism.
        fake_config(toolbox_url=FAKE + "/toolbox")
        try:
            data = bytes(range(256)) * 64
            with CordonEnvironment(backend="daytona", socket=self.daemon.socket) as env:
                sb = env.sandbox
                sb.put_file_sync("bin/all.dat", data)
                self.assertEqual(sb.get_file_sync("bin/all.dat"), data)
                r = sb.exec_sync(["sh", "-c", "wc -c < bin/all.dat"])
                self.assertEqual(r.output.strip(), str(len(data)))
        finally:
            fake_config(toolbox_url=TOOLBOX)

    def test_session_http_api(self) -> None:
        c = Cordon(self.daemon.socket)
        s = c.session(backend="daytona")
        try:
            self.assertEqual(s.backend, "daytona")
            self.assertEqual(s.workdir, "/workspace")
            out = s.run_json("echo hello; echo oops >&2; exit 2")
            self.assertEqual(out["backend"], "daytona")
            self.assertEqual(out["exit_code"], 2)
            self.assertEqual(out["output"], "hello\noops\n[exit code: 2]")
            to = s.run_json("sleep 30", timeout=1)
            self.assertTrue(to["timed_out"])
            self.assertEqual(to["exit_code"], 124)
            self.assertEqual(to["output"], "Execution timed out after 1s\n[exit code: 124]")
            # a path out of the workdir is refused before any request
            with self.assertRaises(CordonError):
                s.put_file("../x", b"x")
        finally:
            s.close()
        self.assertEqual(fake_state()["live"], 0)


MEMBER = "cordon-tm"  # the integration tests' member of group cordon
# An interpreter the member may run (a pyenv under /root is not), as clients/python's tests pick.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def ensure_member() -> None:
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root to create the member")
    subprocess.run(["flock", "/tmp/cordon-test-users.lock", "sh", "-c",
                    "getent group cordon >/dev/null || groupadd -r cordon; "
                    "id %s >/dev/null 2>&1 || useradd -M -N -s /bin/sh -G cordon %s" % (MEMBER, MEMBER)],
                   check=True, capture_output=True)


def raw_run(sock_path: str, body: dict) -> socket.socket:
    """POST /v1/run on a connection of its own, the answer left unread: close it to go away."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/run HTTP/1.1\r\nHost: cordond\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
    return s


def wait_for(cond, timeout: float = 20) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def running() -> int:
    return sum(s["running"] for s in fake_state()["sandboxes"])


class DaytonaOneShot(unittest.TestCase):
    """POST /v1/run {"backend": "daytona"}: a one-shot session (docs/daemon.md, "One-shot runs on
    Docker or Daytona"): a sandbox created for the run, the command executed in it, the sandbox
    deleted before the answer; none for a command the policy refuses."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.profiles = tempfile.mkdtemp(prefix="cordon-test-dprof.")
        os.chmod(cls.profiles, 0o755)
        with open(os.path.join(cls.profiles, "dt.conf"), "w") as f:
            f.write("[profile]\ninclude = default\n[sandbox]\nbackend = daytona\n")
        cls.daemon = start_daemon(DAYTONA_API_KEY=KEY, DAYTONA_API_URL=API, CORDON_PROFILE_PATH=cls.profiles)
        cls.client = Cordon(cls.daemon.socket)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.daemon.stop()
        shutil.rmtree(cls.profiles, ignore_errors=True)

    def setUp(self) -> None:
        fake_reset()

    def tearDown(self) -> None:
        st = fake_state()
        self.assertEqual(st["live"], 0, "a sandbox was left behind")
        self.assertEqual(running(), 0, "a command still runs in the fake")

    def lifecycle(self) -> tuple:
        """The sandbox the run made (exactly one) and the requests about it, in order."""
        st = fake_state()
        self.assertEqual(len(st["sandboxes"]), 1, "one sandbox for the run")
        sid = st["sandboxes"][0]["id"]
        reqs = [(q["method"], q["path"], q["json"]) for q in st["requests"]]
        return sid, reqs

    def assertMadeRunDeleted(self, command: str) -> dict:
        sid, reqs = self.lifecycle()
        kinds = [m for m, p, _ in reqs if (m, p) == ("POST", "/sandbox")
                 or p.endswith("/process/execute") or (m, p) == ("DELETE", "/sandbox/" + sid)]
        self.assertEqual(kinds, ["POST", "POST", "DELETE"], reqs)
        ex = [j for _, p, j in reqs if p.endswith("/process/execute")][0]
        self.assertIn(command, ex["command"])
        self.assertEqual(ex["cwd"], "/workspace")
        self.assertEqual(fake_state()["live"], 0, "deleted before the answer")
        return ex

    def test_root_run(self) -> None:
        r = self.client.run_json("echo hello; echo oops >&2; exit 2", backend="daytona", env={"GREETING": "hi"})
        self.assertEqual(r["output"], "hello\noops\n[exit code: 2]")
        # (the toolbox gives one stream: stderr is in stdout, as in `cordon run --backend daytona`)
        self.assertEqual((r["backend"], r["exit_code"], r["stdout"]), ("daytona", 2, "hello\noops\n"))
        ex = self.assertMadeRunDeleted("echo hello")
        self.assertEqual(ex["envs"]["GREETING"], "hi")
        self.assertNotIn(KEY, json.dumps(ex))

    def test_member_run(self) -> None:
        ensure_member()
        code = ("import json, sys; sys.path.insert(0, sys.argv[2]); from cordon import Cordon; "
                "print(json.dumps(Cordon(sys.argv[1]).run_json('echo $((6 * 7))', backend='daytona')))")
        p = subprocess.run(["setpriv", "--reuid=" + MEMBER, "--regid=users", "--init-groups", PYTHON, "-c",
                            code, self.daemon.socket,
                            # tests/run-all.sh stages the client when the tree is closed to
                            # other users (a clone in /root, 0700).
                            os.environ.get("CORDON_PYTHONPATH", str(ROOT / "clients" / "python"))],
                           capture_output=True, text=True, timeout=60, cwd="/")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = json.loads(p.stdout)
        self.assertEqual((r["output"], r["backend"], r["exit_code"]), ("42", "daytona", 0))
        self.assertMadeRunDeleted("echo $((6 * 7))")

    def test_profile_that_names_daytona(self) -> None:
        r = self.client.run_json("echo from-profile", profile="dt")
        self.assertEqual((r["output"], r["backend"]), ("from-profile", "daytona"))
        self.assertMadeRunDeleted("echo from-profile")

    def test_timeout(self) -> None:
        r = self.client.run_json("sleep 30", backend="daytona", timeout=1)
        self.assertEqual(r["output"], "Execution timed out after 1s\n[exit code: 124]")
        self.assertTrue(r["timed_out"])
        self.assertMadeRunDeleted("sleep 30")

    def test_refused_command_makes_no_sandbox(self) -> None:
        r = self.client.run_json("rm -rf x", backend="daytona", blocked=["rm"])
        self.assertEqual((r["output"], r["exit_code"], r["backend"]), ("Command not allowed: 'rm -rf x'", 126, "daytona"))
        st = fake_state()
        self.assertEqual(st["sandboxes"], [])
        self.assertEqual(st["requests"], [])

    def test_same_result_as_the_cli(self) -> None:
        cmd = "echo same; echo err >&2; exit 3"
        a = self.client.run_json(cmd, backend="daytona")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DAYTONA_")}
        env.update(DAYTONA_API_KEY=KEY, DAYTONA_API_URL=API, CORDON_SOCKET="/nonexistent/cordon.sock")
        p = subprocess.run([CORDON, "run", "--backend", "daytona", "--format", "json", "--", cmd], env=env,
                           capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
        b = json.loads(p.stdout)
        self.assertEqual(list(a), list(b))
        for k in ("output", "stdout", "stderr", "exit_code", "signal", "timed_out", "refused", "truncated",
                  "stdout_bytes", "stderr_bytes", "backend", "workdir"):
            self.assertEqual(a[k], b[k], k)

    def test_counted_against_the_session_limit(self) -> None:
        d = start_daemon("--max-sessions-per-caller", "1", DAYTONA_API_KEY=KEY, DAYTONA_API_URL=API)
        try:
            c = Cordon(d.socket)
            with c.session(backend="daytona"):
                with self.assertRaises(CordonError) as cm:
                    c.run_json("true", backend="daytona")
                self.assertEqual(cm.exception.status, 429)
                self.assertIn("sessions: limit of 1 per caller reached (a docker or daytona run holds one",
                              cm.exception.message)
            # the session gone, the run has room, and takes it only while it runs
            self.assertEqual(c.run("echo room", backend="daytona"), "room")
            with c.session(backend="daytona"):
                pass
            c.close()
        finally:
            d.stop()

    def test_client_gone_mid_run(self) -> None:
        s = raw_run(self.daemon.socket, {"command": "sleep 30", "backend": "daytona"})
        try:
            self.assertTrue(wait_for(lambda: running() == 1), "the command did not start")
        finally:
            s.close()
        self.assertTrue(wait_for(lambda: fake_state()["live"] == 0 and running() == 0), fake_state()["sandboxes"])
        sid, reqs = self.lifecycle()
        self.assertIn(("DELETE", "/sandbox/" + sid), [(m, p) for m, p, _ in reqs])

    def test_client_gone_during_the_create(self) -> None:
        # The create reaches the fake, which makes the sandbox 1.5 s later; the client goes
        # away meanwhile. Daytona makes it whether anyone waits for the answer or not: before,
        # cordond gave up on the create at once and looked its session label up, found
        # nothing yet, and the sandbox lived on, counted by no limit, until its auto-stop.
        fake_faults({"method": "POST", "path": "^/sandbox$", "delay": 1.5, "times": 1})
        s = raw_run(self.daemon.socket, {"command": "echo never", "backend": "daytona"})
        try:
            self.assertTrue(wait_for(lambda: any(q["method"] == "POST" and q["path"] == "/sandbox"
                                                 for q in fake_state()["requests"])),
                            "the create did not come")
        finally:
            s.close()
        time.sleep(2.5)  # the fake's create done, and cordond's answer to it
        self.assertTrue(wait_for(lambda: fake_state()["live"] == 0, 10), fake_state()["sandboxes"])
        self.assertEqual(running(), 0)
        self.assertNotIn("never", json.dumps(fake_state()["requests"]), "the command ran")

    def test_cordond_stopped_mid_run(self) -> None:
        d = start_daemon("--grace", "1", DAYTONA_API_KEY=KEY, DAYTONA_API_URL=API)
        answer = []
        try:
            s = raw_run(d.socket, {"command": "sleep 30", "backend": "daytona"})
            t = threading.Thread(target=lambda: answer.append(s.makefile("rb").read()))
            t.start()
            self.assertTrue(wait_for(lambda: running() == 1), "the command did not start")
        finally:
            self.assertEqual(d.stop(), 0)
        t.join(30)
        s.close()
        body = answer[0].split(b"\r\n\r\n", 1)[1]
        self.assertEqual(json.loads(body)["output"], "[exit code: -15]")
        self.assertEqual(fake_state()["live"], 0)


class DaytonaSessionErrors(unittest.TestCase):
    def test_wrong_key_is_one_line_and_never_echoed(self) -> None:
        d = start_daemon(DAYTONA_API_KEY="dtn_wrong_key_123", DAYTONA_API_URL=API)
        try:
            with self.assertRaises(CordonError) as cm:
                Cordon(d.socket).session(backend="daytona")
            msg = str(cm.exception)
            self.assertIn("authentication failed", msg)
            self.assertNotIn("dtn_wrong_key_123", msg)
            self.assertNotIn("dtn_wrong_key_123", d.logtext())
        finally:
            d.stop()
        self.assertEqual(fake_state()["live"], 0)

    def test_no_key_configured_is_refused(self) -> None:
        d = start_daemon(DAYTONA_API_URL=API)
        try:
            with self.assertRaises(CordonError) as cm:
                Cordon(d.socket).session(backend="daytona")
            self.assertIn("DAYTONA_API_KEY is not set", str(cm.exception))
        finally:
            d.stop()

    def test_commands_never_see_the_key(self) -> None:
        # a profile that inherits cordond's environment: the key was taken out of it at start
        d = start_daemon(DAYTONA_API_KEY=KEY, DAYTONA_API_URL=API)
        try:
            out = Cordon(d.socket).run_json("env", profile="ag2-compat")
            self.assertNotIn(KEY, out["output"])
            self.assertNotIn("DAYTONA", out["output"])
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
