"""cordond's Daytona sessions and the Python client's CordonEnvironment(backend="daytona"),
against the fake behind Prism (tests/daytona/run.sh builds the environment: daytona_env.py).
"""

import json
import os
import sys
import unittest
from pathlib import Path

from daytona_env import API, FAKE, KEY, TOOLBOX, fake_config, fake_state

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python"))
sys.path.insert(0, str(ROOT / "clients" / "python" / "tests"))

from cordon import Cordon, CordonEnvironment, CordonError  # noqa: E402
from test_cordon import Daemon  # noqa: E402


def start_daemon(**env: str) -> Daemon:
    """A cordond with this Daytona environment (it keeps it, then clears its own)."""
    saved = {k: os.environ.get(k) for k in ("DAYTONA_API_KEY", "DAYTONA_API_URL", "DAYTONA_TARGET")}
    try:
        for k in saved:
            os.environ.pop(k, None)
        os.environ.update(env)
        return Daemon()
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
